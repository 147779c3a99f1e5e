//! Hydra's deadline cases (`hydra-pai-deadline/{20_ddl,30_ddl}.csv`, from the Hydra
//! repository `iscas-system/Hydra`, built from the Alibaba PAI 2020 trace):
//! `<index>,job_name,norm_job_submit_time,ddl,A100,V100,GTX2080Ti`.
//!
//! Units and meaning (from the trace's `SOURCE.md` and checked on the files):
//! - Times are seconds. `norm_job_submit_time` is 0 for every row (one batch arrival).
//! - `ddl` is an **absolute** deadline in seconds, or `inf` for a job without one.
//!   20 % of the 5,000 jobs have one in `20_ddl.csv` (985), 30 % in `30_ddl.csv` (1,473).
//! - `A100`, `V100`, `GTX2080Ti` are the job's run time in seconds on each GPU type. Only one
//!   of them is measured (on the job's recorded PAI GPU); the other two are synthesized with
//!   random speed ratios.
//!
//! **Reference GPU type: A100 by default** ([`HydraGpu`]). gantry's cluster is homogeneous, so
//! each job gets one duration. The generator drew `ddl = submit + U(1.2, 3.0) × runtime` on
//! the job's *recorded* GPU type; A100 is the fastest column (median 3,286 s against V100
//! 5,660 s and GTX2080Ti 8,324 s), so with it `ddl / duration ≥ 1.2` for every deadline job —
//! every deadline is achievable on an idle cluster. With V100, 78 (20 %) / 132 (30 %)
//! deadlines fall below the job's own run time; with GTX2080Ti, 335 / 461.
//!
//! **GPU count: 1 per job.** Hydra's `cases/preprocess.ipynb` keeps only single-instance tasks
//! with `plan_gpu = 100` (one whole GPU); the files carry no GPU column.

use super::loaded::{RowOutcome, read_rows, to_ms};
use super::{Loaded, TraceError, TraceJob, column, read_file};
use std::path::Path;

/// Which GPU type's run-time column becomes the job's duration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HydraGpu {
    /// The `A100` column (the fastest; the documented default).
    #[default]
    A100,
    /// The `V100` column.
    V100,
    /// The `GTX2080Ti` column (the slowest).
    Gtx2080Ti,
}

impl HydraGpu {
    /// The CSV column holding this type's run times.
    pub fn column(self) -> &'static str {
        match self {
            HydraGpu::A100 => "A100",
            HydraGpu::V100 => "V100",
            HydraGpu::Gtx2080Ti => "GTX2080Ti",
        }
    }
}

/// The jobs of a Hydra file with A100 durations, the first `limit` kept.
pub fn load(path: &Path, limit: Option<usize>) -> Result<Loaded, TraceError> {
    load_with(path, limit, HydraGpu::default())
}

/// [`load`] with durations from `gpu`'s column.
pub fn load_with(path: &Path, limit: Option<usize>, gpu: HydraGpu) -> Result<Loaded, TraceError> {
    let text = read_file(path)?;
    parse_with(&text, &path.display().to_string(), limit, gpu)
}

/// Parses Hydra CSV text with A100 durations; `file` names it in errors. O(n log n).
pub fn parse(text: &str, file: &str, limit: Option<usize>) -> Result<Loaded, TraceError> {
    parse_with(text, file, limit, HydraGpu::default())
}

/// Column indices.
struct Columns {
    name: usize,
    submit: usize,
    deadline: usize,
    duration: usize,
}

/// [`parse`] with durations from `gpu`'s column.
pub fn parse_with(
    text: &str,
    file: &str,
    limit: Option<usize>,
    gpu: HydraGpu,
) -> Result<Loaded, TraceError> {
    let duration_field = gpu.column();
    read_rows(
        text,
        file,
        limit,
        |h| {
            Ok(Columns {
                name: column(h, file, "job_name")?,
                submit: column(h, file, "norm_job_submit_time")?,
                deadline: column(h, file, "ddl")?,
                duration: column(h, file, duration_field)?,
            })
        },
        |c, row| {
            let name = row.text(c.name, "job_name")?.to_string();
            let submit_s = row.non_negative(c.submit, "norm_job_submit_time")?;
            let duration_s = row.non_negative(c.duration, duration_field)?;
            let deadline_ms = match row.text(c.deadline, "ddl")? {
                "inf" => None,
                _ => Some(to_ms(row.non_negative(c.deadline, "ddl")?, 1000.0)),
            };
            let job = TraceJob {
                id: 0,
                submit_ms: to_ms(submit_s, 1000.0),
                duration_ms: to_ms(duration_s, 1000.0),
                gpus: 1,
                deadline_ms,
                gradient_mb: 0,
                source_line: row.line,
            };
            Ok(RowOutcome::Job(job, name))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = ",job_name,norm_job_submit_time,ddl,A100,V100,GTX2080Ti\n";

    #[test]
    fn inf_means_no_deadline_and_the_gpu_type_picks_the_duration() {
        let text = format!(
            "{HEADER}0,aa,0,inf,1020.0,1540.0,2595.0\n1,bb,0,32383.0,6609.0,10856.0,14600.0\n"
        );
        let loaded = parse(&text, "t.csv", None).unwrap();
        assert_eq!(loaded.source_ids, ["aa", "bb"]);
        assert_eq!(
            loaded
                .jobs
                .iter()
                .map(|j| (j.duration_ms, j.deadline_ms, j.gpus))
                .collect::<Vec<_>>(),
            [(1_020_000, None, 1), (6_609_000, Some(32_383_000), 1)]
        );
        let v100 = parse_with(&text, "t.csv", None, HydraGpu::V100).unwrap();
        assert_eq!(v100.jobs[1].duration_ms, 10_856_000);
        let slow = parse_with(&text, "t.csv", None, HydraGpu::Gtx2080Ti).unwrap();
        assert_eq!(slow.jobs[0].duration_ms, 2_595_000);
    }

    #[test]
    fn malformed_rows_name_file_line_and_field() {
        let cases = [
            (
                "0,a,0,inf,abc,1,1\n",
                "t.csv:2: A100: \"abc\" is not a number",
            ),
            ("0,a,0,inf,-5,1,1\n", "t.csv:2: A100: \"-5\" is negative"),
            (
                "0,a,0,never,5,1,1\n",
                "t.csv:2: ddl: \"never\" is not a number",
            ),
            ("0,a,0,-inf,5,1,1\n", "t.csv:2: ddl: \"-inf\" is not finite"),
            (
                "0,a,x,inf,5,1,1\n",
                "t.csv:2: norm_job_submit_time: \"x\" is not a number",
            ),
            ("0,a,0,inf\n", "t.csv:2: A100: missing column"),
        ];
        crate::trace::test_support::check_malformed(parse, HEADER, &cases);
        crate::trace::test_support::check_missing_column(
            parse,
            ",job_name,norm_job_submit_time,ddl\n",
            "A100",
        );
    }

    /// Counts from SOURCE.md: 5,000 jobs; 985 / 1,473 with deadlines.
    #[test]
    fn real_files_have_the_documented_deadline_fractions() {
        let Some(dir) = crate::test_support::shared("traces/hydra-pai-deadline") else {
            return;
        };
        for (name, with_deadline, below_v100) in
            [("20_ddl.csv", 985, 78), ("30_ddl.csv", 1_473, 132)]
        {
            let loaded = load(&dir.join(name), None).unwrap();
            assert_eq!(loaded.jobs.len(), 5_000, "{name}");
            assert!(loaded.skipped.is_empty());
            let deadlines: Vec<_> = loaded
                .jobs
                .iter()
                .filter(|j| j.deadline_ms.is_some())
                .collect();
            assert_eq!(deadlines.len(), with_deadline, "{name}");
            assert!(loaded.jobs.iter().all(|j| j.submit_ms == 0 && j.gpus == 1));
            // On the A100 column every deadline leaves at least 1.2× the run time.
            for job in &deadlines {
                let ratio = job.deadline_ms.unwrap() as f64 / job.duration_ms as f64;
                assert!(ratio >= 1.199, "{name}: {ratio}");
            }
            let v100 = load_with(&dir.join(name), None, HydraGpu::V100).unwrap();
            let infeasible = v100
                .jobs
                .iter()
                .filter(|j| j.deadline_ms.is_some_and(|d| d < j.duration_ms))
                .count();
            assert_eq!(infeasible, below_v100, "{name}");
        }
    }
}
