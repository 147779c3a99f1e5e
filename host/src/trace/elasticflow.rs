//! Microsoft ITP traces as ElasticFlow ships them (`microsoft-itp-elasticflow/elasticflow/
//! cluster01..10.csv`, `195job.csv`; Gu et al., "ElasticFlow", ASPLOS'23):
//! `job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration`.
//!
//! Units and meaning (from the trace's `SOURCE.md` and checked on the files):
//! - `submission_time`: seconds since the start of collection; `duration`: seconds (the real
//!   ITP run time); `num_gpu`: the gang size (1…64).
//! - `deadline`: **absolute**, seconds on the same clock as `submission_time`. ElasticFlow's
//!   generator (`trace_generator/generate_trace_from_itp.py`) draws it as
//!   `submit + U(0.5, 1.5) × duration`; on all eleven files `(deadline − submit) / duration`
//!   lies in [0.4994, 1.4999] (the low end is rounding to whole seconds), so some deadlines
//!   are infeasible even on an idle cluster — by design of the generator.
//! - There is no best-effort class: every job of these files has a deadline. The
//!   `model_name`, `num_iteration` and `batch_size` columns are synthetic and unused here.
//!
//! The `deadline` column is optional (and an empty cell means no deadline), so the raw ITP files (`raw/cluster*.csv`:
//! `job_id,submission_time,duration,num_gpu`) load too, with no deadlines. Rows asking for 0
//! GPUs are [`Skipped`](super::Skipped), not errors.

use super::loaded::{RowOutcome, gpu_count, read_rows, to_ms};
use super::{Loaded, TraceError, TraceJob, column, read_file};
use std::path::Path;

/// The jobs of an ElasticFlow/ITP file, sorted by submit time, the first `limit` kept.
pub fn load(path: &Path, limit: Option<usize>) -> Result<Loaded, TraceError> {
    let text = read_file(path)?;
    parse(&text, &path.display().to_string(), limit)
}

/// Column indices; `deadline` is absent in the raw ITP files.
struct Columns {
    id: usize,
    submit: usize,
    duration: usize,
    gpus: usize,
    deadline: Option<usize>,
}

/// Parses ElasticFlow/ITP CSV text; `file` names it in errors. O(n log n).
pub fn parse(text: &str, file: &str, limit: Option<usize>) -> Result<Loaded, TraceError> {
    read_rows(
        text,
        file,
        limit,
        |h| {
            Ok(Columns {
                id: column(h, file, "job_id")?,
                submit: column(h, file, "submission_time")?,
                duration: column(h, file, "duration")?,
                gpus: column(h, file, "num_gpu")?,
                deadline: column(h, file, "deadline").ok(),
            })
        },
        |c, row| {
            let id = row.text(c.id, "job_id")?.to_string();
            let submit_s = row.non_negative(c.submit, "submission_time")?;
            let duration_s = row.non_negative(c.duration, "duration")?;
            let gpus = gpu_count(row, c.gpus, "num_gpu")?;
            // An empty `deadline` cell: a job without one (mixes written by
            // scripts/slurm-bench.py have both kinds).
            let deadline_ms = match c.deadline {
                Some(col)
                    if row
                        .text(col, "deadline")
                        .is_ok_and(|t| !t.trim().is_empty()) =>
                {
                    Some(to_ms(row.non_negative(col, "deadline")?, 1000.0))
                }
                _ => None,
            };
            if gpus == 0 {
                return Ok(RowOutcome::Skip {
                    field: "num_gpu",
                    problem: "asks for 0 GPUs".into(),
                });
            }
            let job = TraceJob {
                id: 0,
                submit_ms: to_ms(submit_s, 1000.0),
                duration_ms: to_ms(duration_s, 1000.0),
                gpus,
                deadline_ms,
                gradient_mb: 0,
                source_line: row.line,
            };
            Ok(RowOutcome::Job(job, id))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n";

    #[test]
    fn seconds_absolute_deadlines_sorted_and_rebased() {
        let text = format!(
            "{HEADER}a,100,5,bert,160,64,2,40\nb,50,5,vgg16,90,64,1,30\nc,70,5,gpt2,80,64,0,10\n"
        );
        let loaded = parse(&text, "t.csv", None).unwrap();
        assert_eq!(loaded.source_ids, ["b", "a"]);
        let b = &loaded.jobs[0];
        assert_eq!(
            (b.id, b.submit_ms, b.duration_ms, b.gpus, b.deadline_ms),
            (0, 0, 30_000, 1, Some(40_000))
        );
        let a = &loaded.jobs[1];
        assert_eq!(
            (a.submit_ms, a.deadline_ms, a.source_line),
            (50_000, Some(110_000), 2)
        );
        assert_eq!(loaded.skipped.len(), 1);
        assert_eq!(
            loaded.skipped[0].to_string(),
            "t.csv:4: num_gpu: asks for 0 GPUs"
        );
    }

    #[test]
    fn raw_itp_files_load_without_deadlines() {
        let text = "job_id,submission_time,duration,num_gpu\nx,5,604,16\n";
        let loaded = parse(text, "raw.csv", None).unwrap();
        assert_eq!(loaded.jobs.len(), 1);
        assert_eq!(loaded.jobs[0].deadline_ms, None);
        assert_eq!(loaded.jobs[0].duration_ms, 604_000);
    }

    #[test]
    fn malformed_rows_name_file_line_and_field() {
        let cases = [
            (
                "a,1,5,bert,9,64,1,abc\n",
                "t.csv:2: duration: \"abc\" is not a number",
            ),
            (
                "a,1,5,bert,9,64,1,-3\n",
                "t.csv:2: duration: \"-3\" is negative",
            ),
            (
                "a,x,5,bert,9,64,1,3\n",
                "t.csv:2: submission_time: \"x\" is not a number",
            ),
            (
                "a,1,5,bert,soon,64,1,3\n",
                "t.csv:2: deadline: \"soon\" is not a number",
            ),
            (
                "a,1,5,bert,9,64,1.5,3\n",
                "t.csv:2: num_gpu: 1.5 is not a whole number",
            ),
            (
                "a,1,5,bert,9,64,70000,3\n",
                "t.csv:2: num_gpu: 70000 is too large",
            ),
            ("a,1,5,bert,9\n", "t.csv:2: duration: missing column"),
        ];
        crate::trace::test_support::check_malformed(parse, HEADER, &cases);
        crate::trace::test_support::check_missing_column(
            parse,
            "job_id,submission_time,num_gpu\n",
            "duration",
        );
    }

    /// Row counts from SOURCE.md; every job has a deadline within U(0.5, 1.5) × duration.
    #[test]
    fn real_files_load_with_documented_counts_and_deadline_ratios() {
        let Some(dir) = crate::test_support::shared("traces/microsoft-itp-elasticflow/elasticflow")
        else {
            return;
        };
        let expected = [
            ("cluster01.csv", 1_595),
            ("cluster02.csv", 5_778),
            ("cluster03.csv", 3_011),
            ("cluster04.csv", 15_802),
            ("cluster05.csv", 3_629),
            ("cluster06.csv", 2_396),
            ("cluster07.csv", 12_699),
            ("cluster08.csv", 13_047),
            ("cluster09.csv", 11_134),
            ("cluster10.csv", 260),
            ("195job.csv", 195),
        ];
        let mut total = 0;
        for (name, rows) in expected {
            let loaded = load(&dir.join(name), None).unwrap();
            assert_eq!(loaded.jobs.len(), rows, "{name}");
            assert!(loaded.skipped.is_empty(), "{name}");
            for job in &loaded.jobs {
                let deadline = job
                    .deadline_ms
                    .expect("every ElasticFlow job has a deadline");
                let ratio = (deadline - job.submit_ms) as f64 / job.duration_ms as f64;
                assert!((0.49..=1.51).contains(&ratio), "{name}: ratio {ratio}");
            }
            total += rows;
        }
        assert_eq!(total, 69_351 + 195);
        // Units: cluster10's first row is submit 2,266,647 s, duration 604 s, 16 GPUs.
        let c10 = load(&dir.join("cluster10.csv"), Some(1)).unwrap();
        assert_eq!(
            (
                c10.jobs[0].submit_ms,
                c10.jobs[0].duration_ms,
                c10.jobs[0].gpus
            ),
            (0, 604_000, 16)
        );
        assert_eq!(
            c10.jobs[0].deadline_ms,
            Some((2_267_101 - 2_266_647) * 1000)
        );
    }
}
