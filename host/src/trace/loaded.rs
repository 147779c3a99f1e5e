//! What the deadline-trace loaders return: the jobs, the trace's own id of each job, and the
//! rows that were well-formed but unusable (e.g. a job asking for 0 GPUs), reported instead
//! of aborting the load.
//!
//! The split between *rejected* and *malformed* input: a row that cannot be read (missing
//! column, non-numeric field, negative duration) is a [`super::TraceError`] and stops the
//! load, because the file is not what the loader thinks it is; a row that reads fine but
//! describes a job the simulator cannot run is a [`Skipped`] entry and the load goes on.

use super::{LineCounter, Row, TraceError, TraceJob, csv_reader, finish_jobs};
use std::fmt;

/// One input row a loader left out, located like a [`super::TraceError::Field`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// The file (as given to the loader).
    pub file: String,
    /// 1-based line number of the row.
    pub line: usize,
    /// The column that made the row unusable.
    pub field: String,
    /// Why the row was left out.
    pub problem: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.file, self.line, self.field, self.problem
        )
    }
}

/// A loaded trace: the jobs (sorted, rebased and renumbered by [`finish_jobs`]), the
/// trace's own id for each of them, and every row of the file that was left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Loaded {
    /// The jobs, in submit order, ids `0..n`.
    pub jobs: Vec<TraceJob>,
    /// `source_ids[i]` is the trace's own id (its `job_id` / `job_name` column) of
    /// `jobs[i]`, so per-job results can be matched against another simulator's output.
    pub source_ids: Vec<String>,
    /// Rows left out, in file order, over the whole file (independent of `limit`).
    pub skipped: Vec<Skipped>,
}

impl Loaded {
    /// Sorts `rows` like [`finish_jobs`] (by submit, then file line), keeps the first
    /// `limit`, and keeps each job's source id beside it. O(n log n).
    pub(crate) fn finish(
        mut rows: Vec<(TraceJob, String)>,
        skipped: Vec<Skipped>,
        limit: Option<usize>,
    ) -> Self {
        rows.sort_by_key(|(j, _)| (j.submit_ms, j.source_line));
        if let Some(n) = limit {
            rows.truncate(n);
        }
        let (jobs, source_ids): (Vec<_>, Vec<_>) = rows.into_iter().unzip();
        // Already in (submit, line) order, so finish_jobs only rebases and renumbers.
        let jobs = finish_jobs(jobs, None);
        Self {
            jobs,
            source_ids,
            skipped,
        }
    }

    /// How many rows were left out for `field` (e.g. `"num_gpu"`).
    pub fn skipped_for(&self, field: &str) -> usize {
        self.skipped.iter().filter(|s| s.field == field).count()
    }
}

/// What a loader makes of one well-formed row.
pub(crate) enum RowOutcome {
    /// A job, with the trace's own id for it.
    Job(TraceJob, String),
    /// A row left out: the column at fault and why.
    Skip {
        /// The column.
        field: &'static str,
        /// Why.
        problem: String,
    },
}

/// The shared loop of the CSV loaders: reads the header, lets `columns` find the columns it
/// needs, then hands every non-blank record to `row` with its line number, collecting jobs
/// and skipped rows; stops at the first malformed row. O(n log n) in the rows (the sort).
pub(crate) fn read_rows<C>(
    text: &str,
    file: &str,
    limit: Option<usize>,
    columns: impl FnOnce(&csv::StringRecord) -> Result<C, TraceError>,
    mut row: impl FnMut(&C, &Row<'_>) -> Result<RowOutcome, TraceError>,
) -> Result<Loaded, TraceError> {
    let mut reader = csv_reader(text);
    let headers = reader
        .headers()
        .map_err(|e| TraceError::Field {
            file: file.into(),
            line: 1,
            field: "header".into(),
            problem: e.to_string(),
        })?
        .clone();
    let cols = columns(&headers)?;
    let mut lines = LineCounter::new(text);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for result in reader.records() {
        let record = result.map_err(|e| TraceError::Field {
            file: file.into(),
            line: e.position().map_or(0, |p| p.line() as usize),
            field: "row".into(),
            problem: e.to_string(),
        })?;
        let line = lines.line_of(&record);
        if record.iter().all(str::is_empty) {
            continue;
        }
        let view = Row {
            file,
            line,
            record: &record,
        };
        match row(&cols, &view)? {
            RowOutcome::Job(job, id) => {
                if let Some(problem) = duration_problem(job.duration_ms) {
                    return Err(view.error("duration", problem));
                }
                rows.push((job, id));
            }
            RowOutcome::Skip { field, problem } => skipped.push(Skipped {
                file: file.to_string(),
                line,
                field: field.to_string(),
                problem,
            }),
        }
    }
    let loaded = Loaded::finish(rows, skipped, limit);
    check_span(&loaded.jobs, file, "submit time")?;
    Ok(loaded)
}

/// The longest job a trace may describe: 10⁹ s, about 31.7 years (the longest job of the
/// traces gantry is measured on runs 617 days). A longer one is a unit mistake (milliseconds
/// read as seconds) or a corrupt row, and a simulation would tick through all of it.
pub const MAX_JOB_DURATION_MS: u64 = 1_000_000_000_000;

/// The longest span of submit times a trace may have, from its first job's to its last:
/// 10⁹ s, as [`MAX_JOB_DURATION_MS`]. A simulation steps through the whole span (GPU faults
/// are drawn for all of it), so a stray date centuries out would stall it.
pub const MAX_TRACE_SPAN_MS: u64 = MAX_JOB_DURATION_MS;

/// An error at the first of `jobs` (rebased: the first submitted at 0) submitted more than
/// [`MAX_TRACE_SPAN_MS`] after the first job, naming its row's `field`.
pub(crate) fn check_span(jobs: &[TraceJob], file: &str, field: &str) -> Result<(), TraceError> {
    match jobs.iter().find(|j| j.submit_ms > MAX_TRACE_SPAN_MS) {
        None => Ok(()),
        Some(job) => Err(TraceError::Field {
            file: file.to_string(),
            line: job.source_line,
            field: field.to_string(),
            problem: format!(
                "{} s after the first job's, more than {} s (about 31.7 years) from first to \
                 last submission",
                job.submit_ms / 1000,
                MAX_TRACE_SPAN_MS / 1000
            ),
        }),
    }
}

/// Why a job of `duration_ms` is refused, if it is over [`MAX_JOB_DURATION_MS`].
pub(crate) fn duration_problem(duration_ms: u64) -> Option<String> {
    (duration_ms > MAX_JOB_DURATION_MS).then(|| {
        // A value too large for u64 ms was saturated on the way in: no figure to show.
        let value = match duration_ms {
            u64::MAX => "the duration".to_string(),
            ms => format!("{} s", ms / 1000),
        };
        format!(
            "{value} is longer than {} s (about 31.7 years), the longest job gantry takes; \
             is the column in seconds?",
            MAX_JOB_DURATION_MS / 1000
        )
    })
}

/// A GPU count that fits the simulator's `u16`; 0 is not an error here (callers skip it).
pub(crate) fn gpu_count(row: &Row<'_>, col: usize, field: &str) -> Result<u16, TraceError> {
    let gpus = row.unsigned(col, field)?;
    u16::try_from(gpus).map_err(|_| row.error(field, format!("{gpus} is too large")))
}

/// Seconds (or any unit given as ms per unit) to whole ms, saturating. `value` is finite and
/// non-negative (checked by [`Row::non_negative`]).
pub(crate) fn to_ms(value: f64, ms_per_unit: f64) -> u64 {
    // `as` saturates for out-of-range floats; the product of two finite values is finite
    // or +inf, both of which saturate to u64::MAX at worst.
    (value * ms_per_unit).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(submit_ms: u64, line: usize) -> TraceJob {
        TraceJob {
            id: 9,
            submit_ms,
            duration_ms: 1,
            gpus: 1,
            deadline_ms: Some(submit_ms + 10),
            gradient_mb: 0,
            source_line: line,
        }
    }

    #[test]
    fn finish_keeps_ids_beside_their_jobs() {
        let rows = vec![
            (job(50, 2), "b".to_string()),
            (job(20, 3), "c".to_string()),
            (job(20, 4), "d".to_string()),
        ];
        let loaded = Loaded::finish(rows, Vec::new(), Some(2));
        assert_eq!(loaded.source_ids, ["c", "d"]);
        assert_eq!(
            loaded
                .jobs
                .iter()
                .map(|j| (j.id, j.submit_ms, j.deadline_ms))
                .collect::<Vec<_>>(),
            [(0, 0, Some(10)), (1, 0, Some(10))]
        );
    }

    #[test]
    fn skipped_prints_like_a_field_error() {
        let s = Skipped {
            file: "t.csv".into(),
            line: 7,
            field: "num_gpu".into(),
            problem: "0 GPUs".into(),
        };
        assert_eq!(s.to_string(), "t.csv:7: num_gpu: 0 GPUs");
    }

    /// A duration over the bound stops the load at its row, in every CSV format (they share
    /// `read_rows`); one at the bound loads.
    #[test]
    fn a_duration_over_31_years_is_an_error_at_its_row() {
        let header = "timestamp,duration,num_gpus,gpu_time,cluster\n";
        let row = |secs: &str| format!("2017-10-09 07:01:55,{secs},1,1.0,c\n");
        let at_bound = format!("{header}{}", row("1000000000"));
        assert_eq!(
            crate::trace::philly::parse(&at_bound, "t.csv", None).unwrap()[0].duration_ms,
            MAX_JOB_DURATION_MS
        );
        for (secs, shown) in [("1000000001", "1000000001 s"), ("3e20", "the duration")] {
            let text = format!("{header}{}{}", row("5"), row(secs));
            let err = crate::trace::philly::parse(&text, "t.csv", None).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "t.csv:3: duration: {shown} is longer than 1000000000 s (about 31.7 \
                     years), the longest job gantry takes; is the column in seconds?"
                )
            );
        }
    }

    /// Submit times spanning more than the bound stop the load at the late row.
    #[test]
    fn submissions_over_31_years_apart_are_an_error_at_the_late_row() {
        let header = "timestamp,duration,num_gpus,gpu_time,cluster\n";
        let text = format!(
            "{header}2017-10-09 07:01:55,5,1,1,c\n9999-12-31 23:59:59,5,1,1,c\n\
             2040-01-01 00:00:00,5,1,1,c\n"
        );
        let err = crate::trace::philly::parse(&text, "t.csv", None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.csv:3: submit time: 251894768284 s after the first job's, more than 1000000000 s \
             (about 31.7 years) from first to last submission"
        );
        let text = format!("{header}2017-10-09 07:01:55,5,1,1,c\n2040-01-01 00:00:00,5,1,1,c\n");
        assert_eq!(
            crate::trace::philly::parse(&text, "t.csv", None)
                .unwrap()
                .len(),
            2
        );
    }
}
