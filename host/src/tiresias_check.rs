//! The Tiresias cross-check (`gantry tiresias-check`): gantry against the Tiresias
//! simulator's own results (the peer anchor in `../shared/anchors/tiresias/`: `inputs/`,
//! `perjob/*.job.csv.gz`, `results.md`).
//!
//! For every (input, cluster, Tiresias policy) with a per-job anchor it runs gantry twice on
//! the same jobs, at ideal speed with no periodic ticks:
//! - the **compat** order (`fifo`, or a `tiresias-*` copy, which also folds each second's
//!   events into one pass) and counts the jobs whose first start and end equal Tiresias's,
//!   second for second;
//! - gantry's **own** order for the same idea (`fifo`, `las-time`, `las`, `srtf`,
//!   `srtf-gpu`), scheduling after every event.
//!
//! Each row carries both average JCTs, Tiresias's, and the wall times: Tiresias's from
//! `results.md` (CPython 2.7, whole process), gantry's measured around [`simulate`].

use crate::cluster::ClusterSpec;
use crate::registry::{OrderKind, PlacerKind};
use crate::sim::{SimConfig, SimError, SimOutput, SpeedModel, simulate};
use crate::trace::{self, TraceError, TraceJob};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A Tiresias policy the check covers, with gantry's two counterparts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Tiresias's `--schedule` name.
    pub tiresias: &'static str,
    /// The order that copies it.
    pub compat: OrderKind,
    /// gantry's own order for the same idea.
    pub own: OrderKind,
}

/// The policies checked: FIFO, 1D and 2D LAS, SRTF and SRTF by GPU·time.
pub const POLICIES: [Policy; 5] = [
    Policy {
        tiresias: "fifo",
        compat: OrderKind::Fifo,
        own: OrderKind::Fifo,
    },
    Policy {
        tiresias: "dlas",
        compat: OrderKind::TiresiasDlas,
        own: OrderKind::LasTime,
    },
    Policy {
        tiresias: "dlas-gpu",
        compat: OrderKind::TiresiasDlasGpu,
        own: OrderKind::Las,
    },
    Policy {
        tiresias: "shortest",
        compat: OrderKind::TiresiasShortest,
        own: OrderKind::Srtf,
    },
    Policy {
        tiresias: "shortest-gpu",
        compat: OrderKind::TiresiasShortestGpu,
        own: OrderKind::SrtfGpu,
    },
];

/// One input of the anchor on one cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Input {
    /// The anchor's tag prefix (`p2k_`, `tinya_` …) and our name for it.
    pub tag: &'static str,
    /// The trace file under `inputs/`.
    pub trace: &'static str,
    /// The spec file's stem (`n64g8`); only `perjob` names and `results.md` use it.
    pub spec: &'static str,
    /// The same cluster for gantry.
    pub cluster: ClusterSpec,
    /// Whether the `perjob` file name carries `_SPEC` (the Philly slices do).
    pub spec_in_tag: bool,
    /// The section of `results.md` that holds its wall times (`None`: not timed there).
    pub results_section: Option<&'static str>,
}

const fn cluster(racks: u16, machines_per_rack: u16, gpus_per_machine: u16) -> ClusterSpec {
    ClusterSpec {
        racks,
        machines_per_rack,
        gpus_per_machine,
    }
}

/// The tiny hand-made traces (seconds to run).
pub const TINY: [Input; 3] = [
    Input {
        tag: "tinya",
        trace: "tiny_a.csv",
        spec: "n1g8",
        cluster: cluster(1, 1, 8),
        spec_in_tag: false,
        results_section: None,
    },
    Input {
        tag: "tinyb",
        trace: "tiny_b.csv",
        spec: "n1g4",
        cluster: cluster(1, 1, 4),
        spec_in_tag: false,
        results_section: None,
    },
    Input {
        tag: "tinyc",
        trace: "tiny_c.csv",
        spec: "n1g1",
        cluster: cluster(1, 1, 1),
        spec_in_tag: false,
        results_section: None,
    },
];

/// The 2,000-job Philly slice on the contended (512 GPUs) and the large (2,048) cluster.
pub const PHILLY_2K: [Input; 2] = [
    Input {
        tag: "p2k",
        trace: "philly_first2000.csv",
        spec: "n64g8",
        cluster: cluster(2, 32, 8),
        spec_in_tag: true,
        results_section: Some("Philly first 2000 jobs, n64g8"),
    },
    Input {
        tag: "p2k",
        trace: "philly_first2000.csv",
        spec: "n256g8",
        cluster: cluster(8, 32, 8),
        spec_in_tag: true,
        results_section: Some("Philly first 2000 jobs, n256g8"),
    },
];

/// The 10,000-job Philly slice on both clusters (about a minute per policy in release).
pub const PHILLY_10K: [Input; 2] = [
    Input {
        tag: "p10k",
        trace: "philly_first10000.csv",
        spec: "n64g8",
        cluster: cluster(2, 32, 8),
        spec_in_tag: true,
        results_section: Some("Philly first 10000 jobs, n64g8"),
    },
    Input {
        tag: "p10k",
        trace: "philly_first10000.csv",
        spec: "n256g8",
        cluster: cluster(8, 32, 8),
        spec_in_tag: true,
        results_section: Some("Philly first 10000 jobs, n256g8"),
    },
];

/// What Tiresias did to one job (seconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnchorJob {
    /// First start.
    pub start_s: u64,
    /// Completion.
    pub end_s: u64,
    /// Submission.
    pub submit_s: u64,
}

/// One row of the cross-check table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// Tiresias's policy name.
    pub policy: String,
    /// Input tag (`p2k`, `tinya` …).
    pub input: String,
    /// Tiresias spec name (`n64g8` …).
    pub cluster: String,
    /// Jobs in the input.
    pub jobs: usize,
    /// Tiresias's average JCT over its `job.csv`, s.
    pub tiresias_avg_jct_s: f64,
    /// The compat order's name.
    pub compat_order: String,
    /// Its average JCT, s.
    pub compat_avg_jct_s: f64,
    /// Jobs whose first start and end equal Tiresias's.
    pub identical: usize,
    /// Jobs Tiresias completed.
    pub total: usize,
    /// Preemptions in the compat run.
    pub compat_preemptions: u64,
    /// gantry's own order.
    pub own_order: String,
    /// Its average JCT, s.
    pub own_avg_jct_s: f64,
    /// Preemptions in the own run.
    pub own_preemptions: u64,
    /// Tiresias's wall time from `results.md`, s.
    pub tiresias_wall_s: Option<f64>,
    /// The compat run's wall time, s.
    pub compat_wall_s: f64,
    /// The own run's wall time, s.
    pub own_wall_s: f64,
    /// Up to five compat jobs that differ: `id: start/end theirs vs ours`.
    pub first_differences: Vec<String>,
}

/// Why the check could not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// An input could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A simulation failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A per-job anchor file could not be read or parsed.
    #[error("{path}: {problem}")]
    Anchor {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        problem: String,
    },
}

fn anchor_error(path: &Path, problem: impl std::fmt::Display) -> CheckError {
    CheckError::Anchor {
        path: path.to_path_buf(),
        problem: problem.to_string(),
    }
}

/// The per-job anchor file of `policy` on `input`.
pub fn perjob_path(anchors: &Path, input: &Input, policy: &str) -> PathBuf {
    let name = if input.spec_in_tag {
        format!("{}_{policy}_count_{}.job.csv.gz", input.tag, input.spec)
    } else {
        format!("{}_{policy}_count.job.csv.gz", input.tag)
    };
    anchors.join("perjob").join(name)
}

/// Reads a Tiresias `job.csv.gz` (gunzipped with `flate2`): job_id → its result.
pub fn read_perjob(path: &Path) -> Result<HashMap<String, AnchorJob>, CheckError> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| anchor_error(path, e))?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .map_err(|e| anchor_error(path, format!("gunzip: {e}")))?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| anchor_error(path, e))?.clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| anchor_error(path, format!("no column {name}")))
    };
    let (id, submit, start, end) = (
        col("job_id")?,
        col("submit_time")?,
        col("start_time")?,
        col("end_time")?,
    );
    let mut jobs = HashMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| anchor_error(path, e))?;
        let number = |i: usize| -> Result<u64, CheckError> {
            let text = record.get(i).unwrap_or("");
            text.parse()
                .map_err(|_| anchor_error(path, format!("{text:?} is not a number")))
        };
        let job = AnchorJob {
            submit_s: number(submit)?,
            start_s: number(start)?,
            end_s: number(end)?,
        };
        jobs.insert(record.get(id).unwrap_or("").to_string(), job);
    }
    Ok(jobs)
}

/// Tiresias's wall time for `policy` (placement `count`) in the `results.md` table whose
/// `###` heading starts with `section`.
pub fn results_wall_s(results_md: &str, section: &str, policy: &str) -> Option<f64> {
    let mut in_section = false;
    let mut wall_col = None;
    for line in results_md.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            in_section = heading.starts_with(section);
            wall_col = None;
            continue;
        }
        if !in_section || !line.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if let Some(col) = cells.iter().position(|c| *c == "wall (s)") {
            wall_col = Some(col);
            continue;
        }
        if cells.get(1) == Some(&policy) && cells.get(2) == Some(&"count") {
            return cells.get(wall_col?)?.replace(',', "").parse().ok();
        }
    }
    None
}

/// The settings every check run uses: ideal speed (progress never depends on placement, as
/// in Tiresias), no periodic ticks (orders tick at their review times), no restart cost.
pub fn sim_config() -> SimConfig {
    SimConfig {
        tick_ms: 0,
        restart_overhead_ms: 0,
        seed: 0,
        speed_model: SpeedModel::Ideal,
        faults: None,
        ..SimConfig::default()
    }
}

fn timed_run(
    jobs: &[TraceJob],
    cluster: ClusterSpec,
    order: OrderKind,
) -> Result<(SimOutput, f64), SimError> {
    let started = Instant::now();
    let out = simulate(jobs, cluster, order, PlacerKind::FirstFit, &sim_config())?;
    Ok((out, started.elapsed().as_secs_f64()))
}

fn avg_jct_s(out: &SimOutput) -> f64 {
    let finished: Vec<u64> = out
        .jobs
        .iter()
        .filter_map(|j| j.finish_ms.map(|f| f - j.submit_ms))
        .collect();
    finished.iter().sum::<u64>() as f64 / finished.len().max(1) as f64 / 1000.0
}

fn preemptions(out: &SimOutput) -> u64 {
    out.jobs.iter().map(|j| u64::from(j.preemptions)).sum()
}

/// Runs one (input, policy) pair. Skips pairs without an anchor file (`Ok(None)`).
pub fn check_one(
    anchors: &Path,
    input: &Input,
    policy: &Policy,
    results_md: &str,
) -> Result<Option<Row>, CheckError> {
    let path = perjob_path(anchors, input, policy.tiresias);
    if !path.exists() {
        return Ok(None);
    }
    let theirs = read_perjob(&path)?;
    let loaded = trace::tiresias::load(&anchors.join("inputs").join(input.trace), None)?;
    let (compat, compat_wall_s) = timed_run(&loaded.jobs, input.cluster, policy.compat)?;
    let (own, own_wall_s) = timed_run(&loaded.jobs, input.cluster, policy.own)?;
    let mut identical = 0;
    let mut first_differences = Vec::new();
    for (record, id) in compat.jobs.iter().zip(&loaded.source_ids) {
        let Some(t) = theirs.get(id.as_str()) else {
            continue;
        };
        let ours = (
            record.first_start_ms.map(|s| s / 1000),
            record.finish_ms.map(|f| f / 1000),
        );
        if ours == (Some(t.start_s), Some(t.end_s)) {
            identical += 1;
        } else if first_differences.len() < 5 {
            first_differences.push(format!(
                "job {id}: start/end {}/{} vs {:?}/{:?}",
                t.start_s, t.end_s, ours.0, ours.1
            ));
        }
    }
    let their_jct: u64 = theirs.values().map(|t| t.end_s - t.submit_s).sum();
    Ok(Some(Row {
        policy: policy.tiresias.to_string(),
        input: input.tag.to_string(),
        cluster: input.spec.to_string(),
        jobs: loaded.jobs.len(),
        tiresias_avg_jct_s: their_jct as f64 / theirs.len().max(1) as f64,
        compat_order: compat.order.to_string(),
        compat_avg_jct_s: avg_jct_s(&compat),
        identical,
        total: theirs.len(),
        compat_preemptions: preemptions(&compat),
        own_order: own.order.to_string(),
        own_avg_jct_s: avg_jct_s(&own),
        own_preemptions: preemptions(&own),
        tiresias_wall_s: input
            .results_section
            .and_then(|s| results_wall_s(results_md, s, policy.tiresias)),
        compat_wall_s,
        own_wall_s,
        first_differences,
    }))
}

/// Runs every policy on every input, one at a time (so the wall times are not shared).
pub fn check(anchors: &Path, inputs: &[Input]) -> Result<Vec<Row>, CheckError> {
    let results_md = std::fs::read_to_string(anchors.join("results.md")).unwrap_or_default();
    let mut rows = Vec::new();
    for input in inputs {
        for policy in &POLICIES {
            if let Some(row) = check_one(anchors, input, policy, &results_md)? {
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

/// The rows as a markdown table.
pub fn table(rows: &[Row]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    t.set_header([
        "policy",
        "input",
        "cluster",
        "Tiresias avg JCT (s)",
        "compat order",
        "compat avg JCT (s)",
        "identical jobs",
        "gantry order",
        "gantry avg JCT (s)",
        "preempts T/compat/gantry",
        "wall Tiresias (s)",
        "wall compat (s)",
        "wall gantry (s)",
    ]);
    let secs = |s: f64| format!("{s:.3}");
    for r in rows {
        t.add_row([
            r.policy.clone(),
            r.input.clone(),
            r.cluster.clone(),
            format!("{:.2}", r.tiresias_avg_jct_s),
            r.compat_order.clone(),
            format!("{:.2}", r.compat_avg_jct_s),
            format!("{}/{}", r.identical, r.total),
            r.own_order.clone(),
            format!("{:.2}", r.own_avg_jct_s),
            format!("{}/{}", r.compat_preemptions, r.own_preemptions),
            r.tiresias_wall_s.map_or("-".into(), |s| format!("{s:.2}")),
            secs(r.compat_wall_s),
            secs(r.own_wall_s),
        ]);
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_time_is_read_from_the_right_section_and_row() {
        let md = "### Philly first 2000 jobs, n64g8.csv (512 GPUs)\n\n\
            | policy | scheme | done/in | wall (s) |\n|---|---|---|---|\n\
            | fifo | yarn | 1/1 | 9.99 |\n| fifo | count | 1/1 | 1.93 |\n\
            ### Philly first 2000 jobs, n256g8.csv\n| policy | scheme | wall (s) |\n\
            | fifo | count | 1,631.5 |\n";
        assert_eq!(
            results_wall_s(md, "Philly first 2000 jobs, n64g8", "fifo"),
            Some(1.93)
        );
        assert_eq!(
            results_wall_s(md, "Philly first 2000 jobs, n256g8", "fifo"),
            Some(1631.5)
        );
        assert_eq!(
            results_wall_s(md, "Philly first 2000 jobs, n64g8", "dlas"),
            None
        );
    }

    #[test]
    fn perjob_names_follow_the_anchor() {
        let p = perjob_path(Path::new("a"), &PHILLY_2K[0], "dlas-gpu");
        assert_eq!(p, Path::new("a/perjob/p2k_dlas-gpu_count_n64g8.job.csv.gz"));
        let p = perjob_path(Path::new("a"), &TINY[1], "fifo");
        assert_eq!(p, Path::new("a/perjob/tinyb_fifo_count.job.csv.gz"));
    }
}
