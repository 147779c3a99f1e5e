//! What every workload input yields, below the loaders that produce it: a job
//! ([`TraceJob`]), the input formats gantry reads ([`TraceFormat`]) and the error of reading
//! any input ([`TraceError`]: the file, the line, the field and the problem). The cluster
//! files, the throughput table and the mixed format report their problems with it too.

use std::path::PathBuf;

/// The trace formats gantry reads (`--format`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// Pollux's `philly.csv`: `timestamp,duration,num_gpus,gpu_time,cluster`.
    Philly,
    /// Microsoft ITP / ElasticFlow (seconds, absolute deadlines).
    Elasticflow,
    /// Chronus MIX1/MIX2/SLO (minutes; 0-GPU rows reported and left out).
    Chronus,
    /// Hydra PAI deadline sets (A100 durations, 1 GPU per job).
    Hydra,
    /// The Tiresias simulator's input (`job_id,num_gpu,submit_time,…`).
    Tiresias,
    /// gantry's mixed workload, JSON lines with job models and DAG jobs
    /// (`gantry::mixed::format`; loaded through `gantry::workload`, which resolves models).
    Mixed,
}

/// One job of a trace, in the simulator's units.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TraceJob {
    /// Id, unique within the trace (the row's order after sorting).
    pub id: u32,
    /// Submission time, ms from the first job of the trace.
    pub submit_ms: u64,
    /// Run time on an ideally packed placement, ms (the trace's recorded duration).
    pub duration_ms: u64,
    /// GPUs requested (a gang).
    pub gpus: u16,
    /// Absolute deadline, ms on the same clock as `submit_ms`, if the job has one.
    pub deadline_ms: Option<u64>,
    /// Gradient size in MB, when the trace names the model (0 = unknown).
    pub gradient_mb: u32,
    /// The 1-based line of the input file this job came from.
    pub source_line: usize,
}

/// Where in which file a trace went wrong.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A row is malformed.
    #[error("{file}:{line}: {field}: {problem}")]
    Field {
        /// The file (as given).
        file: String,
        /// 1-based line number.
        line: usize,
        /// The column name.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// The header lacks a required column.
    #[error("{file}:1: header: missing column `{column}`")]
    MissingColumn {
        /// The file.
        file: String,
        /// The column.
        column: String,
    },
    /// The header lacks a column of the format asked for (`--format`); `matching` names the
    /// formats whose header it is.
    #[error(
        "{file}:1: header: missing column `{column}` of --format {}; {}",
        format_name(*.format),
        hint(.matching)
    )]
    WrongFormat {
        /// The file.
        file: String,
        /// The missing column.
        column: String,
        /// The format asked for.
        format: TraceFormat,
        /// Formats whose header matches the file's.
        matching: Vec<TraceFormat>,
    },
}

/// A format's `--format` name.
fn format_name(format: TraceFormat) -> String {
    crate::cli::value_name(&format)
}

fn hint(matching: &[TraceFormat]) -> String {
    if matching.is_empty() {
        return "no format gantry reads has this header".to_string();
    }
    let names: Vec<String> = matching
        .iter()
        .map(|&f| format!("--format {}", format_name(f)))
        .collect();
    format!("the header matches {}", names.join(" or "))
}
