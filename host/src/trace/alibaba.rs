//! Alibaba's GPU cluster trace of 2023 (`alibaba/clusterdata`, `cluster-trace-gpu-v2023`,
//! `openb_pod_list_*.csv`; Weng et al., "Beware of Fragmentation", ATC'23):
//! `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//! deletion_time,scheduled_time`, times in seconds.
//!
//! - **Submit** is `creation_time`; **duration** is `deletion_time − scheduled_time`, or
//!   `deletion_time − creation_time` when `scheduled_time` is empty (the trace's `Pending`
//!   pods, 861 GPU pods in `openb_pod_list_default.csv`: their duration is then the time
//!   they stayed in the trace).
//! - Rows with `num_gpu = 0` (1,088 of 8,152 in the default file) are CPU pods: returned as
//!   [`Skipped`](super::Skipped) rows, like Chronus's 0-GPU rows. So are rows whose end is not
//!   usable: an empty `deletion_time`, or one not after the start (the job would run 0 s).
//! - **Fractional GPUs become whole GPUs.** `gpu_milli` is the share of one GPU a `num_gpu =
//!   1` pod asks for (GPU sharing, e.g. 460 = 0.46 GPU); gantry places whole GPUs (the
//!   core's GPU owner is one job), so such a pod gets one whole GPU. `gpu_milli` is checked
//!   (a whole number ≤ 1000) and otherwise not used; the count of GPUs is `num_gpu`.
//! - **`gpu_spec` is read and not used**: [`TraceJob`] has no GPU-type constraint, so a pod
//!   restricted to some GPU types (`V100M16|V100M32`; empty in the default file, set on 33 %
//!   of the GPU pods of `openb_pod_list_gpuspec33.csv`) may run on any GPU.
//! - `cpu_milli`, `memory_mib`, `qos` and `pod_phase` are not used (the core schedules GPUs).

use super::loaded::{RowOutcome, gpu_count, read_rows, to_ms};
use super::{Loaded, TraceError, TraceJob, column, read_file};
use std::path::Path;

/// Milliseconds per trace time unit (one second).
pub const MS_PER_UNIT: f64 = 1_000.0;

/// The largest `gpu_milli`: one whole GPU.
const FULL_GPU_MILLI: u64 = 1_000;

/// The GPU pods of an Alibaba v2023 pod list, sorted by submit time, the first `limit` kept.
pub fn load(path: &Path, limit: Option<usize>) -> Result<Loaded, TraceError> {
    let text = read_file(path)?;
    parse(&text, &path.display().to_string(), limit)
}

/// Column indices.
struct Columns {
    name: usize,
    gpus: usize,
    gpu_milli: usize,
    gpu_spec: usize,
    creation: usize,
    deletion: usize,
    scheduled: usize,
}

/// An optional time column: empty text is `None`, else a whole number of seconds.
fn optional_seconds(
    row: &super::Row<'_>,
    col: usize,
    field: &str,
) -> Result<Option<u64>, TraceError> {
    if row.text(col, field)?.is_empty() {
        return Ok(None);
    }
    row.unsigned(col, field).map(Some)
}

/// Parses pod-list CSV text; `file` names it in errors. O(n log n).
pub fn parse(text: &str, file: &str, limit: Option<usize>) -> Result<Loaded, TraceError> {
    read_rows(
        text,
        file,
        limit,
        |h| {
            Ok(Columns {
                name: column(h, file, "name")?,
                gpus: column(h, file, "num_gpu")?,
                gpu_milli: column(h, file, "gpu_milli")?,
                gpu_spec: column(h, file, "gpu_spec")?,
                creation: column(h, file, "creation_time")?,
                deletion: column(h, file, "deletion_time")?,
                scheduled: column(h, file, "scheduled_time")?,
            })
        },
        |c, row| {
            let name = row.text(c.name, "name")?.to_string();
            if name.is_empty() {
                return Err(row.error("name", "empty"));
            }
            let gpus = gpu_count(row, c.gpus, "num_gpu")?;
            let milli = row.unsigned(c.gpu_milli, "gpu_milli")?;
            if milli > FULL_GPU_MILLI {
                return Err(row.error(
                    "gpu_milli",
                    format!("{milli} is more than one GPU ({FULL_GPU_MILLI})"),
                ));
            }
            // Read so a short row is reported; not used (see the module docs).
            row.text(c.gpu_spec, "gpu_spec")?;
            let creation = row.unsigned(c.creation, "creation_time")?;
            let deletion = optional_seconds(row, c.deletion, "deletion_time")?;
            let scheduled = optional_seconds(row, c.scheduled, "scheduled_time")?;
            if gpus == 0 {
                return Ok(RowOutcome::Skip {
                    field: "num_gpu",
                    problem: "asks for 0 GPUs (a CPU pod)".into(),
                });
            }
            let start = scheduled.unwrap_or(creation);
            let Some(end) = deletion else {
                return Ok(RowOutcome::Skip {
                    field: "deletion_time",
                    problem: "empty: the pod has no end".into(),
                });
            };
            if end <= start {
                return Ok(RowOutcome::Skip {
                    field: "deletion_time",
                    problem: format!("{end} is not after the start {start}"),
                });
            }
            let job = TraceJob {
                id: 0,
                submit_ms: to_ms(creation as f64, MS_PER_UNIT),
                duration_ms: to_ms((end - start) as f64, MS_PER_UNIT),
                gpus,
                deadline_ms: None,
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

    const HEADER: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";

    #[test]
    fn gpu_pods_whole_gpus_and_skipped_rows() {
        let text = format!(
            "{HEADER}\
             p0,12000,16384,1,1000,,LS,Running,100,700,160\n\
             p1,6000,12288,1,460,V100M16|V100M32,LS,Running,40,100,40\n\
             p2,8000,1024,0,0,,BE,Running,50,90,50\n\
             p3,8000,1024,8,1000,,LS,Pending,70,1070,\n\
             p4,8000,1024,2,1000,,LS,Failed,80,80,80\n\
             p5,8000,1024,4,1000,,LS,Running,90,,90\n"
        );
        let loaded = parse(&text, "t.csv", None).unwrap();
        assert_eq!(loaded.source_ids, ["p1", "p3", "p0"]);
        let got: Vec<_> = loaded
            .jobs
            .iter()
            .map(|j| (j.submit_ms, j.duration_ms, j.gpus, j.source_line))
            .collect();
        // p1: 0.46 GPU → one whole GPU; p3: no scheduled time → from creation;
        // p0: runs from scheduled 160 to 700.
        assert_eq!(
            got,
            [
                (0, 60_000, 1, 3),
                (30_000, 1_000_000, 8, 5),
                (60_000, 540_000, 1, 2)
            ]
        );
        assert!(loaded.jobs.iter().all(|j| j.deadline_ms.is_none()));
        let skipped: Vec<String> = loaded.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            skipped,
            [
                "t.csv:4: num_gpu: asks for 0 GPUs (a CPU pod)",
                "t.csv:6: deletion_time: 80 is not after the start 80",
                "t.csv:7: deletion_time: empty: the pod has no end",
            ]
        );
    }

    #[test]
    fn malformed_rows_name_file_line_and_field() {
        let cases = [
            (
                "p0,1,1,1,1000,,LS,Running,abc,700,160\n",
                "t.csv:2: creation_time: \"abc\" is not a number",
            ),
            (
                "p0,1,1,1,1500,,LS,Running,100,700,160\n",
                "t.csv:2: gpu_milli: 1500 is more than one GPU (1000)",
            ),
            (
                "p0,1,1,-1,1000,,LS,Running,100,700,160\n",
                "t.csv:2: num_gpu: \"-1\" is negative",
            ),
            (
                "p0,1,1,1,1000,,LS,Running,100,7.5,\n",
                "t.csv:2: deletion_time: 7.5 is not a whole number",
            ),
            (
                ",1,1,1,1000,,LS,Running,100,700,160\n",
                "t.csv:2: name: empty",
            ),
            (
                "p0,1,1,1,1000,,LS,Running,100,700\n",
                "t.csv:2: scheduled_time: missing column",
            ),
            // A CPU pod is skipped only once the rest of it reads.
            (
                "p0,1,1,0,0,,LS,Running,100,x,160\n",
                "t.csv:2: deletion_time: \"x\"",
            ),
        ];
        crate::trace::test_support::check_malformed(parse, HEADER, &cases);
        crate::trace::test_support::check_missing_column(
            parse,
            "name,num_gpu,gpu_milli,gpu_spec,creation_time,scheduled_time\n",
            "deletion_time",
        );
    }

    /// Counts from the file itself (SOURCE.md: 8,152 pods, 1,088 with 0 GPUs; GPU counts
    /// 1: 6,989, 2: 16, 4: 15, 8: 44).
    #[test]
    fn real_default_pod_list() {
        let Some(dir) = crate::test_support::shared("traces/alibaba-gpu-v2023") else {
            return;
        };
        let loaded = load(&dir.join("openb_pod_list_default.csv"), None).unwrap();
        assert_eq!(loaded.skipped_for("num_gpu"), 1_088);
        assert_eq!(loaded.jobs.len() + loaded.skipped.len(), 8_152);
        // One GPU pod ends when it starts; 861 Pending pods run from creation.
        assert_eq!(loaded.skipped_for("deletion_time"), 1);
        assert_eq!(loaded.jobs.len(), 7_063);
        let by_gpus = |n: u16| loaded.jobs.iter().filter(|j| j.gpus == n).count();
        assert_eq!(by_gpus(2) + by_gpus(4) + by_gpus(8), 16 + 15 + 44);
        // openb-pod-0000: created at 0, scheduled at 0, deleted at 12,537,496 s.
        assert_eq!(loaded.source_ids[0], "openb-pod-0000");
        assert_eq!(loaded.jobs[0].duration_ms, 12_537_496_000);
        assert!(loaded.jobs.iter().all(|j| j.duration_ms > 0));
    }
}
