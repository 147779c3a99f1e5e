//! Standard Task Graph Set files (Tobita & Kasahara 2002; `../shared/traces/stg-heft-dags/stg/`).
//!
//! Format (whitespace separated): line 1 = N; then N + 2 task lines
//! `id processing_time num_preds pred_id…`, task 0 a zero-cost entry and task N+1 a zero-cost
//! exit; anything after (lines starting with `#`) is ignored. Every task line becomes a DAG
//! task (the dummies included, with work 0) with `work_ms = processing_time`; edges come from
//! the predecessor lists with data 0 (STG has no communication costs).

use super::error::{At, DagLoadError, file_name, read};
use super::{HostDag, HostPlatform, LoadOptions, Problem, build_pool};
use gantry_core::dag::TaskId;
use std::path::Path;

/// Load an `.stg` file into a [`Problem`] (must run on the big stack; use [`super::load`]).
pub(crate) fn load(path: &Path, options: &LoadOptions) -> Result<Problem, DagLoadError> {
    let file = file_name(path);
    let text = read(path)?;
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let (first, head) = lines.next().ok_or_else(|| {
        At {
            file: &file,
            line: 1,
        }
        .err("N", "empty file")
    })?;
    let n: usize = At {
        file: &file,
        line: first,
    }
    .num("N", head)?;
    let total = n + 2;
    let mut dag = Box::new(HostDag::new());
    let mut preds: Vec<(usize, Vec<u32>)> = Vec::with_capacity(total.min(1 << 16));
    for expected in 0..total {
        let (line, l) = lines
            .next()
            .filter(|(_, l)| !l.starts_with('#'))
            .ok_or_else(|| {
                At {
                    file: &file,
                    line: first,
                }
                .err(
                    "N",
                    format!("{n} tasks announced, only {expected} task lines"),
                )
            })?;
        let at = At { file: &file, line };
        let mut tok = l.split_whitespace();
        let mut next = |field: &str| tok.next().ok_or_else(|| at.err(field, "missing"));
        let id: usize = at.num("task_id", next("task_id")?)?;
        if id != expected {
            return Err(at.err("task_id", format!("{id}, expected {expected}")));
        }
        let work: f64 = at.num("processing_time", next("processing_time")?)?;
        let count: usize = at.num("num_preds", next("num_preds")?)?;
        let mut list = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            list.push(at.num::<u32>("pred_id", next("pred_id")?)?);
        }
        if tok.next().is_some() {
            return Err(at.err(
                "pred_id",
                format!("more than num_preds = {count} predecessors"),
            ));
        }
        dag.add_task(work)
            .map_err(|e| at.err("processing_time", e))?;
        preds.push((line, list));
    }
    for (t, (line, list)) in preds.iter().enumerate() {
        let at = At {
            file: &file,
            line: *line,
        };
        for &p in list {
            dag.add_edge(TaskId(p), TaskId(t as u32), 0.0)
                .map_err(|e| at.err("pred_id", e))?;
        }
    }
    dag.seal().map_err(|e| {
        At {
            file: &file,
            line: first,
        }
        .err("dag", e)
    })?;
    let platform = HostPlatform::Pool(build_pool(options, None)?);
    Ok(Problem {
        name: file,
        dag,
        platform,
        time_unit: "file units",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::Format;
    use std::path::PathBuf;

    /// `text` as the file `name` in a new temporary folder, removed when the guard drops.
    fn write(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join(name);
        std::fs::write(&f, text).unwrap();
        (dir, f)
    }

    #[test]
    fn loads_the_stg_set() {
        let Some(dir) = crate::test_support::shared("traces/stg-heft-dags/stg") else {
            return;
        };
        let options = LoadOptions::new(Format::Stg);
        let p = crate::dag::load(&dir.join("rand0000.stg"), &options).unwrap();
        assert_eq!(p.dag.task_count(), 52);
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            crate::dag::load(&f, &options).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// Data-driven: (file text, expected error).
    #[test]
    fn bad_files_are_located() {
        let cases = [
            (
                "1\n0 0 0\n1 5 1 0\n",
                "x.stg:1: N: 1 tasks announced, only 2 task lines",
            ),
            (
                "1\n0 0 0\n2 5 1 0\n2 0 1 1\n",
                "x.stg:3: task_id: 2, expected 1",
            ),
            (
                "1\n0 0 0\n1 5 1 7\n2 0 1 1\n",
                "x.stg:3: pred_id: unknown task 7",
            ),
            (
                "1\n0 0 0\n1 5 1 2\n2 0 1 1\n",
                "x.stg:1: dag: the DAG has a cycle through or before task 1",
            ),
            (
                "1\n0 0 0\n1 q 1 0\n2 0 1 1\n",
                "x.stg:3: processing_time: \"q\" is not a number",
            ),
        ];
        for (text, want) in cases {
            let (_dir, file) = write("x.stg", text);
            let err = crate::dag::load(&file, &LoadOptions::new(Format::Stg)).unwrap_err();
            assert_eq!(err.to_string(), want);
        }
    }
}
