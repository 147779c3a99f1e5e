//! The input files of the Tiresias simulator (Gu et al., "Tiresias", NSDI'19;
//! `SymbioticLab/Tiresias`, `simulator/run_sim.py`), so gantry can replay exactly what the
//! peer anchor in `../shared/anchors/tiresias/` ran.
//!
//! **Job trace** — `job_id,num_gpu,submit_time,iterations,model_name,duration,interval`
//! (header order free; the simulator reads it with `csv.DictReader`):
//! - `submit_time`: whole seconds, clock starting at 0. Tiresias converts a field to int only
//!   if it is all digits, so only whole numbers are accepted here too.
//! - `duration`: seconds of service at full allocation, read as `int(float(x))`: fractions are
//!   **truncated** to whole seconds here as there, so per-job results can match exactly.
//! - `num_gpu`: the gang size. `job_id` is only echoed to Tiresias's output and is kept in
//!   [`Loaded::source_ids`](super::Loaded). `iterations`, `model_name`, `interval` do not
//!   change any Tiresias scheduling result and are not read.
//! - Jobs are stably sorted by `submit_time`, ties in file order — the same order as
//!   [`finish_jobs`](super::finish_jobs)' `(submit, line)` sort, so gantry's ids equal
//!   Tiresias's internal `job_idx`.
//!
//! **Cluster spec** — `num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node`
//! and one data line. It maps onto gantry's [`ClusterSpec`] as switch → rack, node → machine,
//! `num_gpu_p_node` → GPUs per machine. CPUs and memory are kept in [`TiresiasCluster`] but
//! have no gantry counterpart: only Tiresias's `yarn` placement reads them, and its
//! `dlas*`/`gittins` policies and the `count` scheme the anchor runs use count GPUs alone.

use super::loaded::{RowOutcome, gpu_count, read_rows, to_ms};
use super::{LineCounter, Loaded, Row, TraceError, TraceJob, column, csv_reader, read_file};
use crate::cluster::ClusterSpec;
use std::path::Path;

/// The jobs of a Tiresias trace, sorted as Tiresias sorts them, the first `limit` kept.
pub fn load(path: &Path, limit: Option<usize>) -> Result<Loaded, TraceError> {
    let text = read_file(path)?;
    parse(&text, &path.display().to_string(), limit)
}

/// Column indices.
struct Columns {
    id: usize,
    gpus: usize,
    submit: usize,
    duration: usize,
}

/// Parses Tiresias trace CSV text; `file` names it in errors. O(n log n).
pub fn parse(text: &str, file: &str, limit: Option<usize>) -> Result<Loaded, TraceError> {
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
            })
        },
        |c, row| {
            let id = row.text(c.id, "job_id")?.to_string();
            let gpus = gpu_count(row, c.gpus, "num_gpu")?;
            let submit_s = row.unsigned(c.submit, "submit_time")?;
            // int(float(x)) in run_sim.py: truncate toward zero.
            let duration_s = row.non_negative(c.duration, "duration")?.trunc();
            if gpus == 0 {
                return Ok(RowOutcome::Skip {
                    field: "num_gpu",
                    problem: "asks for 0 GPUs".into(),
                });
            }
            let job = TraceJob {
                id: 0,
                submit_ms: submit_s.saturating_mul(1000),
                duration_ms: to_ms(duration_s, 1000.0),
                gpus,
                deadline_ms: None,
                gradient_mb: 0,
                source_line: row.line,
            };
            Ok(RowOutcome::Job(job, id))
        },
    )
}

/// A Tiresias cluster spec file, field by field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiresiasCluster {
    /// `num_switch`: becomes gantry's racks.
    pub switches: u16,
    /// `num_node_p_switch`: becomes machines per rack.
    pub nodes_per_switch: u16,
    /// `num_gpu_p_node`: becomes GPUs per machine.
    pub gpus_per_node: u16,
    /// `num_cpu_p_node`: used only by Tiresias's `yarn` placement; no gantry counterpart.
    pub cpus_per_node: u32,
    /// `mem_p_node` (GB): used only by Tiresias's `yarn` placement; no gantry counterpart.
    pub mem_gb_per_node: u32,
}

impl TiresiasCluster {
    /// gantry's cluster of the same shape (switch → rack, node → machine).
    pub fn spec(&self) -> ClusterSpec {
        ClusterSpec {
            racks: self.switches,
            machines_per_rack: self.nodes_per_switch,
            gpus_per_machine: self.gpus_per_node,
        }
    }
}

/// Reads a Tiresias cluster spec file (`n64g8.csv` …).
pub fn load_cluster(path: &Path) -> Result<TiresiasCluster, TraceError> {
    let text = read_file(path)?;
    parse_cluster(&text, &path.display().to_string())
}

/// Parses a cluster spec: a header and exactly one data line (blank lines ignored); every
/// count must be a positive integer. O(text).
pub fn parse_cluster(text: &str, file: &str) -> Result<TiresiasCluster, TraceError> {
    let field_error = |line: usize, field: &str, problem: String| TraceError::Field {
        file: file.into(),
        line,
        field: field.into(),
        problem,
    };
    let mut reader = csv_reader(text);
    let headers = reader
        .headers()
        .map_err(|e| field_error(1, "header", e.to_string()))?
        .clone();
    let names = [
        "num_switch",
        "num_node_p_switch",
        "num_gpu_p_node",
        "num_cpu_p_node",
        "mem_p_node",
    ];
    let mut cols = [0; 5];
    for (col, name) in cols.iter_mut().zip(names) {
        *col = column(&headers, file, name)?;
    }
    let mut lines = LineCounter::new(text);
    let mut found = None;
    for result in reader.records() {
        let record = result.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            field_error(line, "row", e.to_string())
        })?;
        let line = lines.line_of(&record);
        if record.iter().all(str::is_empty) {
            continue;
        }
        if found.is_some() {
            return Err(field_error(
                line,
                "row",
                "expected exactly one data line".into(),
            ));
        }
        let row = Row {
            file,
            line,
            record: &record,
        };
        let mut values = [0u32; 5];
        for ((value, col), name) in values.iter_mut().zip(cols).zip(names) {
            let n = row.unsigned(col, name)?;
            *value = match u32::try_from(n) {
                Ok(0) => return Err(row.error(name, "must be positive")),
                Ok(v) => v,
                Err(_) => return Err(row.error(name, format!("{n} is too large"))),
            };
        }
        let small = |i: usize| {
            u16::try_from(values[i])
                .map_err(|_| row.error(names[i], format!("{} is too large", values[i])))
        };
        found = Some(TiresiasCluster {
            switches: small(0)?,
            nodes_per_switch: small(1)?,
            gpus_per_node: small(2)?,
            cpus_per_node: values[3],
            mem_gb_per_node: values[4],
        });
    }
    found.ok_or_else(|| field_error(1, "row", "no data line".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n";
    const SPEC_HEADER: &str =
        "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n";

    #[test]
    fn seconds_stable_order_truncated_durations_and_original_ids() {
        let text = format!(
            "{HEADER}7,8,0,2000,resnet50,2000,100\n9,2,100,3,resnet50,300.9,0\n8,1,100,3,vgg19,5,0\n3,0,5,1,a,1,0\n"
        );
        let loaded = parse(&text, "t.csv", None).unwrap();
        assert_eq!(loaded.source_ids, ["7", "9", "8"]);
        assert_eq!(
            loaded
                .jobs
                .iter()
                .map(|j| (j.id, j.gpus, j.submit_ms, j.duration_ms, j.deadline_ms))
                .collect::<Vec<_>>(),
            [
                (0, 8, 0, 2_000_000, None),
                (1, 2, 100_000, 300_000, None),
                (2, 1, 100_000, 5_000, None)
            ]
        );
        assert_eq!(loaded.skipped_for("num_gpu"), 1);
    }

    #[test]
    fn malformed_rows_name_file_line_and_field() {
        let cases = [
            (
                "0,1,0,1,m,abc,0\n",
                "t.csv:2: duration: \"abc\" is not a number",
            ),
            ("0,1,0,1,m,-1,0\n", "t.csv:2: duration: \"-1\" is negative"),
            (
                "0,1,12.5,1,m,1,0\n",
                "t.csv:2: submit_time: 12.5 is not a whole number",
            ),
            (
                "0,1,-5,1,m,1,0\n",
                "t.csv:2: submit_time: \"-5\" is negative",
            ),
            ("0,x,0,1,m,1,0\n", "t.csv:2: num_gpu: \"x\" is not a number"),
            ("0,1,0\n", "t.csv:2: duration: missing column"),
        ];
        crate::trace::test_support::check_malformed(parse, HEADER, &cases);
    }

    #[test]
    fn cluster_spec_maps_switch_node_gpu_to_rack_machine_gpu() {
        let cluster = parse_cluster(&format!("{SPEC_HEADER}2,32,8,64,256"), "n64g8.csv").unwrap();
        assert_eq!(cluster.spec().to_string(), "2x32x8");
        assert_eq!(cluster.spec().gpus(), 512);
        assert_eq!((cluster.cpus_per_node, cluster.mem_gb_per_node), (64, 256));
        let cases = [
            (
                "2,32,8,64,256\n1,1,1,1,1\n",
                "s.csv:3: row: expected exactly one data line",
            ),
            ("0,32,8,64,256\n", "s.csv:2: num_switch: must be positive"),
            (
                "2,70000,8,64,256\n",
                "s.csv:2: num_node_p_switch: 70000 is too large",
            ),
            (
                "2,32,x,64,256\n",
                "s.csv:2: num_gpu_p_node: \"x\" is not a number",
            ),
            ("2,32,8\n", "s.csv:2: num_cpu_p_node: missing column"),
            ("\n", "s.csv:1: row: no data line"),
        ];
        for (body, want) in cases {
            let err = parse_cluster(&format!("{SPEC_HEADER}{body}"), "s.csv")
                .unwrap_err()
                .to_string();
            assert_eq!(err, want);
        }
        let err = parse_cluster("num_switch\n1\n", "s.csv")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "s.csv:1: header: missing column `num_node_p_switch`");
    }

    /// Slice facts from the anchor's FORMAT.md §6 and the spec table of §2.
    #[test]
    fn real_anchor_inputs_match_format_md() {
        let Some(inputs) = crate::test_support::shared("anchors/tiresias/inputs") else {
            return;
        };
        /// (GPUs, jobs) pairs of a slice.
        type GpuMix = &'static [(u16, usize)];
        // (file, jobs, total duration s, last submit s, GPU mix)
        let slices: [(&str, usize, u64, u64, GpuMix); 2] = [
            (
                "philly_first2000.csv",
                2_000,
                115_628_260,
                1_879_842,
                &[(1, 1_879), (2, 25), (4, 29), (8, 51), (16, 16)],
            ),
            (
                "philly_first10000.csv",
                10_000,
                224_407_089,
                2_641_037,
                &[(1, 9_268), (2, 208), (4, 215), (8, 270), (16, 25), (32, 14)],
            ),
        ];
        for (name, n, total_s, last_submit_s, mix) in slices {
            let loaded = load(&inputs.join(name), None).unwrap();
            assert_eq!(loaded.jobs.len(), n, "{name}");
            let total_ms: u64 = loaded.jobs.iter().map(|j| j.duration_ms).sum();
            assert_eq!(total_ms, total_s * 1000, "{name}");
            assert_eq!(loaded.jobs.last().unwrap().submit_ms, last_submit_s * 1000);
            for &(gpus, count) in mix {
                assert_eq!(loaded.jobs.iter().filter(|j| j.gpus == gpus).count(), count);
            }
            // Tiresias's job_idx = gantry's id = the file's job_id in these files.
            for (job, id) in loaded.jobs.iter().zip(&loaded.source_ids) {
                assert_eq!(id, &job.id.to_string());
            }
        }
        let specs = [
            ("n64g8.csv", "2x32x8"),
            ("n4g4.csv", "1x4x4"),
            ("n1g8.csv", "1x1x8"),
            ("n1g1.csv", "1x1x1"),
        ];
        for (name, want) in specs {
            let cluster = load_cluster(&inputs.join(name)).unwrap();
            assert_eq!(cluster.spec().to_string(), want, "{name}");
        }
        if let Some(upstream) = crate::test_support::shared("traces/tiresias") {
            let jobs = load(&upstream.join("60_job.csv"), None).unwrap();
            assert_eq!(jobs.jobs.len(), 60);
            let total_ms: u64 = jobs.jobs.iter().map(|j| j.duration_ms).sum();
            assert_eq!(total_ms, 10_705_000);
            let specs = [
                ("n256g8.csv", 2_048),
                ("n32g4.csv", 128),
                ("n160g8.csv", 1_280),
                ("cluster_spec.csv", 64),
            ];
            for (name, gpus) in specs {
                assert_eq!(
                    load_cluster(&upstream.join(name)).unwrap().spec().gpus(),
                    gpus,
                    "{name}"
                );
            }
        }
    }
}
