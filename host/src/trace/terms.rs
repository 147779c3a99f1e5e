//! Per-job terms a batch system adds to a trace (`--job-terms FILE`): whether a job may be
//! preempted and its time limit. They let the simulator run a workload under the semantics
//! `gantry slurm` runs it under on a Slurm partition (`scripts/slurm-bench.sh` writes one
//! such file per mix), so simulated and measured figures can be compared:
//!
//! - a job is [`PreemptionClass::Checkpointing`] only when its submission says so
//!   (`--requeue` and the site's checkpoint marker); every other job is
//!   [`PreemptionClass::Never`] and runs to completion once started;
//! - Slurm's deadline rule: a job whose time limit, counted from now, ends after its deadline
//!   is cancelled instead of started. A job with a deadline `D` and a limit `L` therefore
//!   has to be running by `D − L`; the simulator cancels it then if it is not (waiting, or
//!   preempted and waiting again), and the job counts as a missed deadline.
//!
//! The file is CSV with the header `preemption,time_limit_s` and one row per trace job, in
//! the trace's job order (by submission time, the order gantry numbers jobs):
//! `preemption` is `checkpointing` or `never`, `time_limit_s` a whole number of seconds or
//! empty (no limit). Rows past the trace's last job are ignored (`--limit`); fewer rows than
//! jobs is an error, so no job silently falls back to the default class.

use crate::jobs::TraceError;
use gantry_core::PreemptionClass;
use std::path::Path;

/// What the batch system says about one job beyond the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobTerms {
    /// Whether the job may be preempted: `Checkpointing` jobs lose what the simulator's
    /// preemption mode says, `Never` jobs are never preempted for priority.
    pub preemption: PreemptionClass,
    /// The job's time limit, ms (Slurm's `--time`): with a deadline, the job must be running
    /// by `deadline − limit` or it is cancelled (Slurm's deadline rule).
    pub time_limit_ms: Option<u64>,
}

impl JobTerms {
    /// The latest time the job may (re)start under Slurm's deadline rule, ms: `deadline −
    /// limit` (at least 0). `None` when the job lacks a deadline or a limit.
    pub fn start_by_ms(&self, deadline_ms: Option<u64>) -> Option<u64> {
        Some(deadline_ms?.saturating_sub(self.time_limit_ms?))
    }
}

/// Reads a terms file for a trace of `jobs` jobs.
pub fn load(path: &Path, jobs: usize) -> Result<Vec<JobTerms>, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, &path.display().to_string(), jobs)
}

/// Parses a terms file (`file` names it in errors) for a trace of `jobs` jobs.
pub fn parse(text: &str, file: &str, jobs: usize) -> Result<Vec<JobTerms>, TraceError> {
    let field_error = |line: usize, field: &str, problem: String| TraceError::Field {
        file: file.to_string(),
        line,
        field: field.to_string(),
        problem,
    };
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = match lines.next() {
        Some((_, h)) => h.split(',').map(str::trim).collect(),
        None => Vec::new(),
    };
    for column in ["preemption", "time_limit_s"] {
        if !header.contains(&column) {
            return Err(TraceError::MissingColumn {
                file: file.to_string(),
                column: column.to_string(),
            });
        }
    }
    let col = |name: &str| header.iter().position(|&h| h == name).unwrap_or(0);
    let (class_col, limit_col) = (col("preemption"), col("time_limit_s"));
    let mut terms = Vec::with_capacity(jobs);
    for (i, line) in lines {
        if terms.len() == jobs {
            break;
        }
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let cell = |c: usize| cells.get(c).copied().unwrap_or("");
        let preemption = match cell(class_col) {
            "checkpointing" => PreemptionClass::Checkpointing,
            "never" => PreemptionClass::Never,
            other => {
                return Err(field_error(
                    line_no,
                    "preemption",
                    format!("`{other}` is neither `checkpointing` nor `never`"),
                ));
            }
        };
        let time_limit_ms = match cell(limit_col) {
            "" => None,
            s => {
                let secs: u64 = s.parse().map_err(|_| {
                    field_error(
                        line_no,
                        "time_limit_s",
                        format!("`{s}` is not a whole number of seconds"),
                    )
                })?;
                Some(secs.saturating_mul(1000))
            }
        };
        terms.push(JobTerms {
            preemption,
            time_limit_ms,
        });
    }
    if terms.len() < jobs {
        return Err(field_error(
            text.lines().count().max(1),
            "preemption",
            format!("{} rows for a trace of {jobs} jobs", terms.len()),
        ));
    }
    Ok(terms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_classes_and_limits_in_trace_order() {
        let text = "preemption,time_limit_s\ncheckpointing,120\nnever,\nnever,60\n";
        let terms = parse(text, "t.csv", 2).unwrap();
        assert_eq!(
            terms,
            vec![
                JobTerms {
                    preemption: PreemptionClass::Checkpointing,
                    time_limit_ms: Some(120_000)
                },
                JobTerms {
                    preemption: PreemptionClass::Never,
                    time_limit_ms: None
                },
            ]
        );
        assert_eq!(terms[0].start_by_ms(Some(200_000)), Some(80_000));
        assert_eq!(terms[0].start_by_ms(Some(100_000)), Some(0));
        assert_eq!(terms[1].start_by_ms(Some(200_000)), None);
    }

    #[test]
    fn names_the_line_and_column_of_a_bad_row() {
        let err = parse("preemption,time_limit_s\nsometimes,5\n", "t.csv", 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv:2: preemption: `sometimes` is neither `checkpointing` nor `never`"
        );
        let err = parse("preemption,time_limit_s\nnever,1.5\n", "t.csv", 1).unwrap_err();
        assert!(
            err.to_string().starts_with("t.csv:2: time_limit_s:"),
            "{err}"
        );
        let err = parse("preemption\nnever\n", "t.csv", 1).unwrap_err();
        assert!(err.to_string().contains("time_limit_s"), "{err}");
        let err = parse("preemption,time_limit_s\nnever,5\n", "t.csv", 2).unwrap_err();
        assert!(
            err.to_string().contains("1 rows for a trace of 2 jobs"),
            "{err}"
        );
    }
}
