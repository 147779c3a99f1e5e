//! `--plot DIR` on `gantry simulate` and `gantry compare`: SVG charts of the runs (plotters'
//! SVG backend; text stays text, so the files are small and searchable).
//!
//! - `jct_cdf.svg`: the JCT distribution of each scheduler (log time axis);
//! - `deadline_miss.svg`: each scheduler's deadline miss rate (horizontal bars, value on each);
//! - `utilisation_queue.svg`: GPU utilisation and queue length over time (time-weighted means
//!   over 240 bins), one line per scheduler;
//! - `dag_gantt.svg`: one DAG job of the first run (the largest that ran without restart, or
//!   else the largest), its tasks on its GPUs, each bar labelled with its task.
//!
//! Every chart has a title, axis names with units and a legend or direct labels.

mod charts;
mod gantt;

use crate::metrics::Metrics;
use crate::sim::SimOutput;
use std::path::{Path, PathBuf};

pub use gantt::dag_job_to_chart;

/// Chart size, pixels.
pub const SIZE_PX: (u32, u32) = (1000, 600);

/// Colours of the schedulers' lines and bars (Tableau 10), in row order.
pub const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

/// Why a chart could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The output folder could not be made.
    #[error("{path}: {source}")]
    Dir {
        /// The folder.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// plotters could not draw or write a file.
    #[error("cannot draw {path}: {message}")]
    Draw {
        /// Output file.
        path: String,
        /// plotters' error.
        message: String,
    },
}

/// One run to chart: its label, metrics and output.
pub struct Series<'a> {
    /// Legend label.
    pub label: String,
    /// Its metrics.
    pub metrics: &'a Metrics,
    /// Its simulation.
    pub output: &'a SimOutput,
}

/// Writes every chart into `dir` (created if missing); returns the files written. The
/// Gantt chart is left out when no run has a DAG job.
pub fn write_all(
    dir: &Path,
    runs: &[Series<'_>],
    cluster_gpus: usize,
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Dir {
        path: dir.display().to_string(),
        source,
    })?;
    let mut written = Vec::new();
    let path = dir.join("jct_cdf.svg");
    charts::jct_cdf(&path, runs)?;
    written.push(path);
    let path = dir.join("deadline_miss.svg");
    charts::deadline_miss(&path, runs)?;
    written.push(path);
    let path = dir.join("utilisation_queue.svg");
    charts::utilisation_queue(&path, runs, cluster_gpus)?;
    written.push(path);
    if let Some(first) = runs.first() {
        let path = dir.join("dag_gantt.svg");
        if gantt::dag_job_to_chart(&path, first)? {
            written.push(path);
        }
    }
    Ok(written)
}

/// A plotters error as a [`PlotError`] for `path`.
fn draw_err(path: &Path, e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Time axis unit for a span: (name, ms per unit).
fn time_unit(span_ms: f64) -> (&'static str, f64) {
    if span_ms < 1.2e5 {
        ("s", 1e3)
    } else if span_ms < 1.08e7 {
        ("min", 6e4)
    } else {
        ("h", 3.6e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_units() {
        assert_eq!(time_unit(5e4).0, "s");
        assert_eq!(time_unit(5e5).0, "min");
        assert_eq!(time_unit(5e7).0, "h");
    }
}
