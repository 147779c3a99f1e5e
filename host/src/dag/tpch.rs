//! Decima's TPC-H DAGs (`../shared/traces/decima-tpch/tpch_<size>.json`, see SOURCE.md there).
//!
//! One DAG task per Spark **stage** (node); its work is the stage's total task time:
//! `work_ms = num_tasks × mean(all recorded task durations of the node)`, the mean taken over
//! every executor-count key of both `first_wave` and `rest_wave` (Decima measured the same
//! tasks at several executor counts; the mean is the least arbitrary single figure). Edges are
//! the file's `[parent, child]` pairs, data 0 (Decima records no data sizes).
//!
//! By default all 22 queries are loaded as one batch (a disjoint union, queries in numeric
//! order, nodes in file order), so the makespan is that of the whole batch; `query` picks one.
//! The JSON is one line, so errors give line 1 and the JSON path of the bad field.

use super::error::{At, DagLoadError, file_name, read};
use super::{HostDag, HostPlatform, LoadOptions, Problem, build_pool};
use gantry_core::dag::TaskId;
use serde_json::Value;
use std::path::Path;

/// Work of one node (see the module doc), or a problem description.
fn node_work_ms(node: &Value) -> Result<f64, String> {
    let num_tasks = node
        .get("num_tasks")
        .and_then(Value::as_u64)
        .ok_or("num_tasks: missing or not an integer")?;
    let (mut sum, mut count) = (0.0f64, 0usize);
    for wave in ["first_wave", "rest_wave"] {
        let Some(map) = node.get(wave).and_then(Value::as_object) else {
            return Err(format!("{wave}: missing or not an object"));
        };
        for (key, list) in map {
            let list = list
                .as_array()
                .ok_or_else(|| format!("{wave}.{key}: not an array"))?;
            for d in list {
                let d = d
                    .as_f64()
                    .filter(|d| d.is_finite() && *d >= 0.0)
                    .ok_or_else(|| format!("{wave}.{key}: {d} is not a duration"))?;
                sum += d;
                count += 1;
            }
        }
    }
    if count == 0 {
        return if num_tasks == 0 {
            Ok(0.0)
        } else {
            Err("no task durations".into())
        };
    }
    Ok(num_tasks as f64 * sum / count as f64)
}

/// Load a TPC-H file into a [`Problem`] (must run on the big stack; use [`super::load`]).
pub(crate) fn load(path: &Path, options: &LoadOptions) -> Result<Problem, DagLoadError> {
    let file = file_name(path);
    let text = read(path)?;
    let root: Value = serde_json::from_str(&text).map_err(|e| {
        At {
            file: &file,
            line: e.line(),
        }
        .err("json", e)
    })?;
    let at = At {
        file: &file,
        line: 1,
    };
    let queries = root
        .as_object()
        .ok_or_else(|| at.err("$", "not an object"))?;
    let mut keys: Vec<(u32, &String)> = queries
        .keys()
        .map(|k| {
            k.parse()
                .map(|q| (q, k))
                .map_err(|_| at.err(k, "query key is not a number"))
        })
        .collect::<Result<_, _>>()?;
    keys.sort();
    if let Some(q) = options.query {
        keys.retain(|(k, _)| *k == q);
        if keys.is_empty() {
            return Err(at.err("query", format!("no query {q} in the file")));
        }
    }
    let mut dag = Box::new(HostDag::new());
    for (_, key) in keys {
        let query = &queries[key.as_str()];
        let base = dag.task_count() as u32;
        let nodes = query
            .get("nodes")
            .and_then(Value::as_array)
            .ok_or_else(|| at.err(&format!("{key}.nodes"), "missing or not an array"))?;
        for (i, node) in nodes.iter().enumerate() {
            let field = format!("{key}.nodes[{i}]");
            let work = node_work_ms(node).map_err(|p| at.err(&field, p))?;
            dag.add_task(work).map_err(|e| at.err(&field, e))?;
        }
        let edges = query
            .get("edges")
            .and_then(Value::as_array)
            .ok_or_else(|| at.err(&format!("{key}.edges"), "missing or not an array"))?;
        for (i, e) in edges.iter().enumerate() {
            let field = format!("{key}.edges[{i}]");
            let pair = e
                .as_array()
                .filter(|p| p.len() == 2)
                .and_then(|p| Some((p[0].as_u64()?, p[1].as_u64()?)))
                .ok_or_else(|| at.err(&field, format!("{e} is not a [parent, child] pair")))?;
            if pair.0 >= nodes.len() as u64 || pair.1 >= nodes.len() as u64 {
                return Err(at.err(&field, format!("node index out of 0..{}", nodes.len())));
            }
            dag.add_edge(
                TaskId(base + pair.0 as u32),
                TaskId(base + pair.1 as u32),
                0.0,
            )
            .map_err(|e| at.err(&field, e))?;
        }
    }
    dag.seal().map_err(|e| at.err("dag", e))?;
    let platform = HostPlatform::Pool(build_pool(options, None)?);
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
    use crate::dag::Format;

    #[test]
    fn loads_all_queries_as_one_batch() {
        let Some(f) = crate::test_support::shared("traces/decima-tpch/tpch_2g.json") else {
            return;
        };
        let mut options = LoadOptions::new(Format::Tpch);
        options.speeds = crate::dag::GpuSpeeds::Uniform;
        let p = crate::dag::load(&f, &options).unwrap();
        // summary.csv: 202 stages per size.
        assert_eq!(p.dag.task_count(), 202);
        options.query = Some(2);
        let p = crate::dag::load(&f, &options).unwrap();
        assert_eq!((p.dag.task_count(), p.dag.edge_count()), (18, 19));
    }

    #[test]
    fn bad_json_is_located() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let f = dir.join("t.json");
        std::fs::write(&f, r#"{"1":{"nodes":[{"num_tasks":2,"first_wave":{"2":[1,"x"]},"rest_wave":{}}],"edges":[]}}"#).unwrap();
        let err = crate::dag::load(&f, &LoadOptions::new(Format::Tpch)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t.json:1: 1.nodes[0]: first_wave.2: \"x\" is not a duration"
        );
        std::fs::write(&f, "{\n\"1\": [}").unwrap();
        let err = crate::dag::load(&f, &LoadOptions::new(Format::Tpch)).unwrap_err();
        assert!(err.to_string().starts_with("t.json:2: json:"), "{err}");
    }
}
