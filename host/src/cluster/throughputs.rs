//! Measured per-model throughputs on each GPU type: how much faster or slower a job runs on a
//! P100 or a K80 than on the reference V100.
//!
//! The bundled table (`host/data/gavel_throughputs.csv`, MIT, see `host/data/ATTRIBUTION.md`)
//! holds Gavel's isolated single-GPU throughputs (steps/s; Narayanan et al., OSDI'20,
//! `scheduler/simulation_throughputs.json`, entries `(job_type, 1)` → `"null"`) for 26 job
//! types on V100, P100 and K80. A job of type `m` runs on a GPU of type `t` at relative speed
//! `thr[m][t] / thr[m][reference]`, the reference being the first column (V100): trace
//! durations are taken as V100 durations, as Gavel does when it turns Philly durations into
//! step counts. Ratios range from 0.09 (ResNet-18 on a K80) to 2.3 (Recommendation on a
//! P100).

use crate::jobs::TraceError;
use std::path::Path;

/// The bundled table's CSV text.
pub const GAVEL_CSV: &str = include_str!("../../data/gavel_throughputs.csv");
/// The bundled table's file name in messages.
pub const GAVEL_FILE: &str = "gavel_throughputs.csv";

/// Throughputs per job type (rows) and GPU type (columns).
#[derive(Clone, Debug, PartialEq)]
pub struct Throughputs {
    /// The file it came from, for messages.
    pub file: String,
    /// GPU type names, in column order; the first is the reference.
    pub gpu_types: Vec<String>,
    /// Job type names, in row order.
    pub models: Vec<String>,
    /// `steps_per_s[model][gpu_type]`, every value finite and > 0.
    steps_per_s: Vec<Vec<f64>>,
}

impl Throughputs {
    /// The bundled Gavel table.
    pub fn gavel() -> Self {
        // The bundled file is checked by a test; a parse failure here is a build defect.
        Self::parse(GAVEL_CSV, GAVEL_FILE).unwrap_or_else(|e| panic!("bundled table: {e}"))
    }

    /// Reads a table from a file: header `job_type,<type>,<type>,…`, one row per job type,
    /// steps/s > 0 in every cell.
    pub fn load(path: &Path) -> Result<Self, TraceError> {
        let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses the CSV text; `file` names it in errors (`file:line: field: problem`).
    pub fn parse(text: &str, file: &str) -> Result<Self, TraceError> {
        let error = |line: usize, field: &str, problem: String| TraceError::Field {
            file: file.to_string(),
            line,
            field: field.to_string(),
            problem,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((_, header)) = lines.next() else {
            return Err(error(1, "header", "the file is empty".into()));
        };
        let columns: Vec<&str> = header.split(',').map(str::trim).collect();
        if columns.first() != Some(&"job_type") || columns.len() < 2 {
            return Err(error(
                1,
                "header",
                format!("expected job_type,<gpu type>,…, got {header:?}"),
            ));
        }
        let gpu_types: Vec<String> = columns[1..].iter().map(|s| s.to_string()).collect();
        if let Some(empty) = gpu_types.iter().position(String::is_empty) {
            return Err(error(
                1,
                "header",
                format!("column {} has no name", empty + 2),
            ));
        }
        let (mut models, mut steps_per_s) = (Vec::new(), Vec::new());
        for (i, line) in lines {
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            if cells.len() != columns.len() {
                return Err(error(
                    i + 1,
                    "row",
                    format!("{} cells, the header has {}", cells.len(), columns.len()),
                ));
            }
            let mut row = Vec::with_capacity(gpu_types.len());
            for (cell, gpu_type) in cells[1..].iter().zip(&gpu_types) {
                match cell.parse::<f64>() {
                    Ok(v) if v.is_finite() && v > 0.0 => row.push(v),
                    _ => {
                        return Err(error(
                            i + 1,
                            gpu_type,
                            format!("{cell:?} is not a throughput > 0"),
                        ));
                    }
                }
            }
            if models.iter().any(|m| m == cells[0]) {
                return Err(error(
                    i + 1,
                    "job_type",
                    format!("{:?} appears twice", cells[0]),
                ));
            }
            models.push(cells[0].to_string());
            steps_per_s.push(row);
        }
        if models.is_empty() {
            return Err(error(2, "row", "no job types".into()));
        }
        Ok(Self {
            file: file.to_string(),
            gpu_types,
            models,
            steps_per_s,
        })
    }

    /// The column of GPU type `name` (case-insensitive), if the table has one.
    pub fn type_index(&self, name: &str) -> Option<usize> {
        self.gpu_types
            .iter()
            .position(|t| t.eq_ignore_ascii_case(name))
    }

    /// Relative speed of job type `model` on GPU type `gpu_type` (1.0 on the reference
    /// type). Out-of-range indices give 1.0. O(1).
    pub fn speed(&self, model: usize, gpu_type: usize) -> f64 {
        match self.steps_per_s.get(model) {
            Some(row) => row.get(gpu_type).map_or(1.0, |&v| v / row[0]),
            None => 1.0,
        }
    }

    /// The geometric mean over job types of [`speed`](Self::speed) on `gpu_type`: the one
    /// number per type the core's topology (and so the placement observation) carries.
    /// O(models).
    pub fn mean_speed(&self, gpu_type: usize) -> f64 {
        let logs: f64 = (0..self.models.len())
            .map(|m| libm::log(self.speed(m, gpu_type)))
            .sum();
        libm::exp(logs / self.models.len().max(1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_table_parses_with_gavel_ratios() {
        let t = Throughputs::gavel();
        assert_eq!(t.gpu_types, ["v100", "p100", "k80"]);
        assert_eq!(t.models.len(), 26);
        let resnet18 = t
            .models
            .iter()
            .position(|m| m == "ResNet-18 (batch size 256)")
            .unwrap();
        // 0.8855799947494726 / 10.300256501360458 steps/s.
        assert!((t.speed(resnet18, 2) - 0.085_976).abs() < 1e-5);
        assert_eq!(t.speed(resnet18, 0), 1.0);
        assert_eq!(t.type_index("K80"), Some(2));
        assert!((t.mean_speed(2) - 0.2972).abs() < 1e-3);
        assert!((t.mean_speed(1) - 0.9430).abs() < 1e-3);
    }

    #[test]
    fn bad_tables_name_line_and_field() {
        let cases = [
            ("", "t.csv:1: header: the file is empty"),
            ("model,v100\n", "t.csv:1: header: expected job_type"),
            (
                "job_type,v100,k80\nA,1,0\n",
                "t.csv:2: k80: \"0\" is not a throughput > 0",
            ),
            (
                "job_type,v100\nA,1\nB,x\n",
                "t.csv:3: v100: \"x\" is not a throughput",
            ),
            ("job_type,v100\nA,1,2\n", "t.csv:2: row: 3 cells"),
            (
                "job_type,v100\nA,1\nA,2\n",
                "t.csv:3: job_type: \"A\" appears twice",
            ),
            ("job_type,v100\n", "t.csv:2: row: no job types"),
        ];
        for (text, want) in cases {
            let err = Throughputs::parse(text, "t.csv").unwrap_err().to_string();
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }
}
