//! Chronus's Philly-derived deadline traces (`chronus-philly-deadline/trace_job_Philly_
//! {MIX1,MIX2,SLO}.csv`; Gao et al., "Chronus", SoCC'21):
//! `job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,
//! expect_time_list,expect_value_list,best_effort,job_type`.
//!
//! **Time unit: minutes.** The trace does not say so; the evidence, from the Chronus artifact
//! (`S-Lab-System-Group/ChronusArtifact`, `code/alg/scheduler/time_aware_with_lease.py`):
//! its simulator sets `hour_metric = 60` and computes the hour of day as
//! `lease_index * lease_term_interval // 60 % 24` — 60 clock units per hour, i.e. the
//! clock (and `submit_time`, `duration`, `expect_time_list`, all compared on it) counts
//! minutes. The data agree: `submit_time` spans 1…20,151 (14 days in minutes, a plausible
//! Philly window; 5.6 hours in seconds would be 1.5 Philly jobs/s), median `duration` is 60
//! (one hour) and the maximum 4,317 (3 days).
//!
//! Deadlines: `expect_time_list` is **relative** to `submit_time` — the artifact computes
//! `expect_time + job.submit_time` — and is a `-`-separated list for `soft` jobs (one
//! deadline per utility level in `expect_value_list`, tightest first). gantry has one
//! deadline per job; [`SoftDeadline`] picks which (default: the first, the one the artifact's
//! `parse_job_file` stores as `expect_time`). `best_effort = 1` jobs get no deadline (their
//! `expect_time_list` holds a placeholder equal to `submit_time`).
//!
//! Rows with `num_gpu = 0` (184 in MIX1, 194 in MIX2, 205 in SLO) are not jobs the simulator
//! can run: they are returned as [`Skipped`](super::Skipped) rows, as the artifact's own
//! loader skips them (`if info_dict['num_gpu'] == "0": continue`).

use super::loaded::{RowOutcome, gpu_count, read_rows, to_ms};
use super::{Loaded, Row, TraceError, TraceJob, column, read_file};
use std::path::Path;

/// Milliseconds per Chronus time unit (one minute).
pub const MS_PER_UNIT: f64 = 60_000.0;

/// Which level of a `soft` job's deadline list becomes its deadline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SoftDeadline {
    /// The first (tightest, full-utility) deadline, as Chronus's own loader uses.
    #[default]
    First,
    /// The last (loosest) deadline, after which the job earns nothing.
    Last,
}

/// Loader options (one config struct rather than flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChronusOptions {
    /// Which deadline a multi-level (`soft`) job gets.
    pub soft_deadline: SoftDeadline,
}

/// The jobs of a Chronus file with default options, sorted by submit time, the first
/// `limit` kept.
pub fn load(path: &Path, limit: Option<usize>) -> Result<Loaded, TraceError> {
    load_with(path, limit, ChronusOptions::default())
}

/// [`load`] with explicit options.
pub fn load_with(
    path: &Path,
    limit: Option<usize>,
    options: ChronusOptions,
) -> Result<Loaded, TraceError> {
    let text = read_file(path)?;
    parse_with(&text, &path.display().to_string(), limit, options)
}

/// Parses Chronus CSV text with default options; `file` names it in errors. O(n log n).
pub fn parse(text: &str, file: &str, limit: Option<usize>) -> Result<Loaded, TraceError> {
    parse_with(text, file, limit, ChronusOptions::default())
}

/// Column indices.
struct Columns {
    id: usize,
    gpus: usize,
    submit: usize,
    duration: usize,
    expect: usize,
    best_effort: usize,
}

/// [`parse`] with explicit options.
pub fn parse_with(
    text: &str,
    file: &str,
    limit: Option<usize>,
    options: ChronusOptions,
) -> Result<Loaded, TraceError> {
    read_rows(
        text,
        file,
        limit,
        |h| {
            Ok(Columns {
                id: column(h, file, "job_id")?,
                gpus: column(h, file, "num_gpu")?,
                submit: column(h, file, "submit_time")?,
                duration: column(h, file, "duration")?,
                expect: column(h, file, "expect_time_list")?,
                best_effort: column(h, file, "best_effort")?,
            })
        },
        |c, row| {
            let id = row.text(c.id, "job_id")?.to_string();
            let gpus = gpu_count(row, c.gpus, "num_gpu")?;
            let submit = row.non_negative(c.submit, "submit_time")?;
            let duration = row.non_negative(c.duration, "duration")?;
            let relative = expect_time(row, c.expect, options.soft_deadline)?;
            let best_effort = match row.unsigned(c.best_effort, "best_effort")? {
                0 => false,
                1 => true,
                other => return Err(row.error("best_effort", format!("{other} is not 0 or 1"))),
            };
            if gpus == 0 {
                return Ok(RowOutcome::Skip {
                    field: "num_gpu",
                    problem: "asks for 0 GPUs".into(),
                });
            }
            let submit_ms = to_ms(submit, MS_PER_UNIT);
            let deadline_ms =
                (!best_effort).then(|| submit_ms.saturating_add(to_ms(relative, MS_PER_UNIT)));
            let job = TraceJob {
                id: 0,
                submit_ms,
                duration_ms: to_ms(duration, MS_PER_UNIT),
                gpus,
                deadline_ms,
                gradient_mb: 0,
                source_line: row.line,
            };
            Ok(RowOutcome::Job(job, id))
        },
    )
}

/// The chosen relative deadline of `expect_time_list` (`159-189-229-289` or `1105`), in
/// trace units. O(levels).
fn expect_time(row: &Row<'_>, col: usize, pick: SoftDeadline) -> Result<f64, TraceError> {
    const FIELD: &str = "expect_time_list";
    let text = row.text(col, FIELD)?;
    let mut chosen = None;
    for part in text.split('-') {
        let value: f64 = part
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| {
                row.error(
                    FIELD,
                    format!("{text:?}: {part:?} is not a non-negative number"),
                )
            })?;
        match (pick, chosen) {
            (SoftDeadline::First, Some(_)) => {}
            _ => chosen = Some(value),
        }
    }
    chosen.ok_or_else(|| row.error(FIELD, "empty"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,best_effort,job_type\n";

    #[test]
    fn minutes_relative_deadlines_best_effort_and_soft_levels() {
        let text = format!(
            "{HEADER}\
             0,vc,1,10,5,vgg16,7,1,11,10,0,strict\n\
             1,vc,4,12,5,alexnet,3,1,12,10,1,best\n\
             2,vc,1,5,5,alexnet,2,1,4-6-9,10-8-5,0,soft\n\
             3,vc,0,6,5,alexnet,2,1,4,10,0,strict\n"
        );
        let loaded = parse(&text, "t.csv", None).unwrap();
        assert_eq!(loaded.source_ids, ["2", "0", "1"]);
        let soft = &loaded.jobs[0];
        assert_eq!(
            (soft.submit_ms, soft.duration_ms, soft.deadline_ms),
            (0, 120_000, Some(240_000))
        );
        let strict = &loaded.jobs[1];
        assert_eq!(
            (strict.submit_ms, strict.deadline_ms, strict.gpus),
            (300_000, Some(300_000 + 660_000), 1)
        );
        assert_eq!(loaded.jobs[2].deadline_ms, None);
        assert_eq!(loaded.skipped_for("num_gpu"), 1);
        assert_eq!(loaded.skipped[0].line, 5);

        let last = ChronusOptions {
            soft_deadline: SoftDeadline::Last,
        };
        let loaded = parse_with(&text, "t.csv", None, last).unwrap();
        assert_eq!(loaded.jobs[0].deadline_ms, Some(540_000));
    }

    #[test]
    fn malformed_rows_name_file_line_and_field() {
        let cases = [
            (
                "0,vc,1,10,5,m,abc,1,11,10,0,strict\n",
                "t.csv:2: duration: \"abc\" is not a number",
            ),
            (
                "0,vc,1,10,5,m,-7,1,11,10,0,strict\n",
                "t.csv:2: duration: \"-7\" is negative",
            ),
            (
                "0,vc,one,10,5,m,7,1,11,10,0,strict\n",
                "t.csv:2: num_gpu: \"one\" is not a number",
            ),
            (
                "0,vc,1,10,5,m,7,1,4--6,10,0,soft\n",
                "t.csv:2: expect_time_list: \"4--6\": \"\" is not",
            ),
            (
                "0,vc,1,10,5,m,7,1,x,10,0,strict\n",
                "t.csv:2: expect_time_list: \"x\"",
            ),
            (
                "0,vc,1,10,5,m,7,1,11,10,2,strict\n",
                "t.csv:2: best_effort: 2 is not 0 or 1",
            ),
            (
                "0,vc,1,10,5,m,7,1\n",
                "t.csv:2: expect_time_list: missing column",
            ),
            // A zero-GPU row is skipped only once the rest of it reads.
            (
                "0,vc,0,10,5,m,bad,1,11,10,0,strict\n",
                "t.csv:2: duration: \"bad\"",
            ),
        ];
        crate::trace::test_support::check_malformed(parse, HEADER, &cases);
        crate::trace::test_support::check_missing_column(
            parse,
            "job_id,num_gpu,submit_time,duration\n",
            "expect_time_list",
        );
    }

    /// Counts from the files themselves (SOURCE.md: 30,940 rows each, "~190" with 0 GPUs).
    #[test]
    fn real_files_report_zero_gpu_rows_and_deadline_mix() {
        let Some(dir) = crate::test_support::shared("traces/chronus-philly-deadline") else {
            return;
        };
        // (file, zero-GPU rows, best-effort rows among the rest); best-effort rows in the
        // whole files: 9,216 / 3,139 / 0 (SOURCE.md).
        let expected = [("MIX1", 184, 9_156), ("MIX2", 194, 3_125), ("SLO", 205, 0)];
        for (mix, zero_gpu, best_effort) in expected {
            let path = dir.join(format!("trace_job_Philly_{mix}.csv"));
            let loaded = load(&path, None).unwrap();
            assert_eq!(loaded.skipped.len(), zero_gpu, "{mix}");
            assert_eq!(loaded.skipped_for("num_gpu"), zero_gpu, "{mix}");
            assert_eq!(loaded.jobs.len() + zero_gpu, 30_940, "{mix}");
            let no_deadline = loaded
                .jobs
                .iter()
                .filter(|j| j.deadline_ms.is_none())
                .count();
            assert_eq!(no_deadline, best_effort, "{mix}");
            assert!(loaded.jobs.iter().all(|j| j.gpus > 0));
            // Minutes: the trace spans 1..20,151 min = 14 days.
            let span_ms = loaded.jobs.last().unwrap().submit_ms;
            assert_eq!(span_ms, (20_151 - 1) * 60_000, "{mix}");
        }
        // MIX1 row 0: submit 8555, duration 747, expect 1105 → deadline 8555 + 1105 min.
        let loaded = load(&dir.join("trace_job_Philly_MIX1.csv"), None).unwrap();
        let i = loaded.source_ids.iter().position(|id| id == "0").unwrap();
        let origin_min = 1;
        let job = &loaded.jobs[i];
        assert_eq!(job.submit_ms, (8_555 - origin_min) * 60_000);
        assert_eq!(job.duration_ms, 747 * 60_000);
        assert_eq!(job.deadline_ms, Some((8_555 + 1_105 - origin_min) * 60_000));
    }
}
