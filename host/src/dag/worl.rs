//! WORL-RTGS input slices (Alibaba cluster-trace-v2018 `batch_instance` rows; see
//! `../shared/traces/worl-rtgs-alibaba/SOURCE.md`).
//!
//! # Tasks
//! `instanceN.csv` → the first N rows (N from the file name, or `--tasks`; capped at the rows
//! present: `instance10000.csv` has 9,790). One row = one DAG task with
//! `work_ms = (end_time − start_time) · 1000` (seconds in the trace), in reference-GPU ms.
//!
//! # Edges
//! 1. **From v2018 `task_name`** where it encodes dependencies: `M5_3_4` (any letter prefix)
//!    is task 5 of its job depending on tasks 3 and 4. Rows are grouped by (job, task number);
//!    row j of a dependent group gets one edge from row `j mod len` of each dependency group
//!    present in the slice (one edge per dependency, not all-to-all: an instance needs its
//!    share of the upstream output, and all-to-all would be quadratic). Edge data 0.
//! 2. **Otherwise synthetic, fan-in D** (`--degree`; the paper uses 1, 3 and 100): row j gets
//!    `min(D, j)` distinct predecessors drawn uniformly from rows `0..j` with a [`SeededRng`]
//!    (Floyd's sampling), sorted. Acyclic by construction; edge data 0.
//!
//! Each real slice holds the instances of ONE task of one job (e.g. `M5_4` in
//! instance1000.csv), whose dependency (task 4) is not in the slice, so every real slice
//! takes rule 2. Rule 1 is kept for slices that do span several tasks.
//!
//! # GPUs (`GPU.csv`)
//! 50 rows of v2018 `machine_usage` (`machine_id, time_stamp, cpu_util_percent`). Mapping:
//! machine m's free share `f_m = (100 − util_m) / 100` is its capacity for our tasks, and
//! `speed_m = f_m / mean(f)` so that the mean speed is 1.0 and work stays in reference ms
//! (utilisations 58–85 % give speeds 0.54–1.52, a 2.8× spread). GPU g uses row
//! `g mod 50`: 500 GPUs are ten copies of the 50 machines (the paper's 500-GPU cluster is not
//! published; replication keeps the same speed distribution).

use super::error::{At, DagLoadError, file_name, read};
use super::{HostDag, LoadOptions, Problem, build_pool};
use gantry_core::SeededRng;
use gantry_core::dag::TaskId;
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// One parsed slice row.
#[derive(Clone, Debug, PartialEq)]
pub struct WorlRow {
    /// v2018 job name.
    pub job: String,
    /// Parsed v2018 task name: (task number, dependency numbers), if structured.
    pub task: Option<(u32, Vec<u32>)>,
    /// Instance duration in ms.
    pub work_ms: f64,
    /// 1-based line.
    pub line: usize,
}

/// Parse a v2018 task name: `M5_3_4` → (5, [3, 4]); `task_…`, `MergeTask` and other
/// unstructured names → `None`.
pub fn parse_task_name(name: &str) -> Option<(u32, Vec<u32>)> {
    let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    if digits.len() == name.len() || digits.is_empty() {
        return None;
    }
    let mut parts = digits.split('_');
    let me = parts.next()?.parse().ok()?;
    let deps = parts
        .map(|p| p.parse().ok())
        .collect::<Option<Vec<u32>>>()?;
    Some((me, deps))
}

/// Read the rows of an `instanceN.csv`. O(rows).
pub fn read_rows(path: &Path) -> Result<Vec<WorlRow>, DagLoadError> {
    let text = read(path)?;
    let file = file_name(path);
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("");
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let col = |name: &str| {
        cols.iter().position(|c| *c == name).ok_or_else(|| {
            At {
                file: &file,
                line: 1,
            }
            .err("header", format!("missing column `{name}`"))
        })
    };
    let (c_task, c_job, c_start, c_end) = (
        col("task_name")?,
        col("job_name")?,
        col("start_time")?,
        col("end_time")?,
    );
    let mut rows = Vec::new();
    for (i, line) in lines.enumerate() {
        let at = At {
            file: &file,
            line: i + 2,
        };
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let get = |c: usize, name: &str| {
            fields
                .get(c)
                .copied()
                .ok_or_else(|| at.err(name, "missing field"))
        };
        let start: f64 = at.num("start_time", get(c_start, "start_time")?)?;
        let end: f64 = at.num("end_time", get(c_end, "end_time")?)?;
        if !(start.is_finite() && end.is_finite()) || end < start {
            return Err(at.err("end_time", format!("{end} is before start_time {start}")));
        }
        rows.push(WorlRow {
            job: get(c_job, "job_name")?.trim().to_string(),
            task: parse_task_name(get(c_task, "task_name")?.trim()),
            work_ms: (end - start) * 1000.0,
            line: i + 2,
        });
    }
    Ok(rows)
}

/// N from `instanceN.csv`.
fn n_from_name(path: &Path) -> Option<usize> {
    let stem = path.file_stem()?.to_str()?;
    stem.strip_prefix("instance")?.parse().ok()
}

/// Edges from structured task names (rule 1 of the module doc), as (from row, to row).
pub fn name_edges(rows: &[WorlRow]) -> Vec<(u32, u32)> {
    let mut groups: BTreeMap<(&str, u32), Vec<u32>> = BTreeMap::new();
    for (r, row) in rows.iter().enumerate() {
        if let Some((me, _)) = &row.task {
            groups
                .entry((row.job.as_str(), *me))
                .or_default()
                .push(r as u32);
        }
    }
    let mut edges = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let Some((me, deps)) = &row.task else {
            continue;
        };
        let Some(mine) = groups.get(&(row.job.as_str(), *me)) else {
            continue;
        };
        let j = mine.iter().position(|&x| x == r as u32).unwrap_or(0);
        for d in deps {
            if d == me {
                continue;
            }
            if let Some(up) = groups.get(&(row.job.as_str(), *d)) {
                edges.push((up[j % up.len()], r as u32));
            }
        }
    }
    edges
}

/// Synthetic edges of fan-in `degree` (rule 2 of the module doc), as (from, to).
pub fn synthetic_edges(tasks: usize, degree: u32, seed: u64) -> Vec<(u32, u32)> {
    let mut rng = SeededRng::new(seed);
    let mut edges = Vec::new();
    let mut chosen = HashSet::new();
    let mut sorted = Vec::new();
    for j in 1..tasks as u32 {
        let k = degree.min(j);
        chosen.clear();
        // Floyd: a uniform k-subset of 0..j.
        for m in (j - k)..j {
            let t = rng.below(m + 1);
            if !chosen.insert(t) {
                chosen.insert(m);
            }
        }
        sorted.clear();
        sorted.extend(chosen.iter().copied());
        sorted.sort_unstable();
        edges.extend(sorted.iter().map(|&i| (i, j)));
    }
    edges
}

/// GPU speeds from a WORL `GPU.csv` (mapping in the module doc). O(rows).
pub fn load_gpu_speeds(path: &Path) -> Result<Vec<f64>, DagLoadError> {
    let text = read(path)?;
    let file = file_name(path);
    let mut lines = text.lines();
    let cols: Vec<&str> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .collect();
    let c_util = cols
        .iter()
        .position(|c| *c == "cpu_util_percent")
        .ok_or_else(|| {
            At {
                file: &file,
                line: 1,
            }
            .err("header", "missing column `cpu_util_percent`")
        })?;
    let mut free = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = At {
            file: &file,
            line: i + 2,
        };
        let field = line
            .split(',')
            .nth(c_util)
            .ok_or_else(|| at.err("cpu_util_percent", "missing field"))?;
        let util: f64 = at.num("cpu_util_percent", field)?;
        if !(0.0..100.0).contains(&util) {
            return Err(at.err("cpu_util_percent", format!("{util} is not in [0, 100)")));
        }
        free.push((100.0 - util) / 100.0);
    }
    if free.is_empty() {
        return Err(At {
            file: &file,
            line: 1,
        }
        .err("rows", "no machine rows"));
    }
    let mean = free.iter().sum::<f64>() / free.len() as f64;
    Ok(free.iter().map(|f| f / mean).collect())
}

/// Load a slice into a [`Problem`] (must run on the big stack; use [`super::load`]).
pub(crate) fn load(path: &Path, options: &LoadOptions) -> Result<Problem, DagLoadError> {
    let file = file_name(path);
    let mut rows = read_rows(path)?;
    let want = options
        .tasks
        .or_else(|| n_from_name(path))
        .unwrap_or(rows.len());
    rows.truncate(want);
    let mut dag = Box::new(HostDag::new());
    for row in &rows {
        let at = At {
            file: &file,
            line: row.line,
        };
        dag.add_task(row.work_ms).map_err(|e| at.err("task", e))?;
    }
    let mut edges = name_edges(&rows);
    if edges.is_empty() {
        edges = synthetic_edges(rows.len(), options.degree, options.seed);
    }
    for (a, b) in edges {
        let line = rows.get(b as usize).map_or(0, |r| r.line);
        dag.add_edge(TaskId(a), TaskId(b), 0.0)
            .map_err(|e| At { file: &file, line }.err("edge", e))?;
    }
    dag.seal().map_err(|e| {
        At {
            file: &file,
            line: 1,
        }
        .err("dag", e)
    })?;
    let platform = super::HostPlatform::Pool(build_pool(options, path.parent())?);
    Ok(Problem {
        name: file,
        dag,
        platform,
        time_unit: "ms",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{Format, HostPlatform};
    use gantry_core::dag::Platform;
    use std::path::PathBuf;

    fn traces() -> Option<PathBuf> {
        crate::test_support::shared("traces/worl-rtgs-alibaba")
    }

    #[test]
    fn task_names() {
        type Parsed = Option<(u32, Vec<u32>)>;
        let cases: &[(&str, Parsed)] = &[
            ("M5_3_4", Some((5, vec![3, 4]))),
            ("R2_1", Some((2, vec![1]))),
            ("M1", Some((1, vec![]))),
            ("task_LTg0MTUwNTA5Mjg4MDkwNjIzMA==", None),
            ("MergeTask", None),
            ("M2_x", None),
        ];
        for (name, want) in cases {
            assert_eq!(&parse_task_name(name), want, "{name}");
        }
    }

    #[test]
    fn name_edges_link_instances_of_dependent_tasks() {
        let row = |job: &str, name: &str| WorlRow {
            job: job.into(),
            task: parse_task_name(name),
            work_ms: 1.0,
            line: 0,
        };
        let rows = vec![
            row("j", "M1"),
            row("j", "M1"),
            row("j", "R2_1"),
            row("j", "R2_1"),
            row("j", "R2_1"),
            row("k", "R2_1"),
        ];
        assert_eq!(name_edges(&rows), vec![(0, 2), (1, 3), (0, 4)]);
    }

    #[test]
    fn synthetic_edges_have_the_fan_in_and_are_seeded() {
        let e = synthetic_edges(200, 3, 7);
        assert_eq!(e, synthetic_edges(200, 3, 7));
        assert_eq!(e.len(), 1 + 2 + 3 * 197);
        assert!(e.iter().all(|&(a, b)| a < b));
        let mut per: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (a, b) in e {
            per.entry(b).or_default().push(a);
        }
        assert!(per.values().all(|v| v.windows(2).all(|w| w[0] < w[1])));
    }

    #[test]
    fn loads_real_slices_and_gpu_speeds() {
        let Some(dir) = traces() else { return };
        let speeds = load_gpu_speeds(&dir.join("GPU.csv")).unwrap();
        assert_eq!(speeds.len(), 50);
        let mean = speeds.iter().sum::<f64>() / 50.0;
        assert!((mean - 1.0).abs() < 1e-9);
        let mut options = LoadOptions::new(Format::Worl);
        options.gpus = 500;
        options.degree = 3;
        let p = crate::dag::load(&dir.join("instance100.csv"), &options).unwrap();
        assert_eq!(p.dag.task_count(), 100);
        assert_eq!(p.dag.edge_count(), 1 + 2 + 3 * 97);
        let HostPlatform::Pool(pool) = &p.platform else {
            panic!("pool")
        };
        assert_eq!(pool.gpu_count(), 500);
        assert_eq!(pool.speeds()[0], pool.speeds()[50]);
        // instance10000 has 9,790 rows; fan-in 100 fits the edge capacity.
        options.degree = 100;
        let p = crate::dag::load(&dir.join("instance10000.csv"), &options).unwrap();
        assert_eq!(p.dag.task_count(), 9790);
        assert_eq!(
            p.dag.edge_count(),
            9789 * 100 - (1..100).map(|k| 100 - k).sum::<usize>()
        );
    }

    #[test]
    fn bad_row_is_located() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let f = dir.join("instance3.csv");
        std::fs::write(
            &f,
            ",instance_name,task_name,job_name,start_time,end_time\n0,i,M1,j,10,20\n1,i,M1,j,10,abc\n",
        )
        .unwrap();
        let err = crate::dag::load(&f, &LoadOptions::new(Format::Worl)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "instance3.csv:3: end_time: \"abc\" is not a number"
        );
    }
}
