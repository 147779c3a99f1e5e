//! The mixed workload file (`--format mixed`): JSON lines, one job per line, that can carry
//! everything a mixed workload has — deadlines, job models and DAGs.
//!
//! ```text
//! {"submit_s":0,"duration_s":1825,"gpus":1,"model":"A3C"}
//! {"submit_s":17,"duration_s":4058,"gpus":4,"deadline_s":12000,"model":"LM (batch size 20)"}
//! {"submit_s":40,"duration_s":900,"gpus":2,"dag":{"tasks":[{"work_s":600,"model":"A3C"},{"work_s":1200,"model":"CycleGAN"}],"edges":[[0,1,512.5]]}}
//! ```
//!
//! - `submit_s` (≥ 0), `duration_s` (≥ 0: the run time on the reference GPU, ideally
//!   packed), `gpus` (≥ 1): as in every trace;
//! - `deadline_s` (optional): absolute, on the `submit_s` clock;
//! - `model` (optional): a job type of the throughput table (default: a seeded draw);
//! - `dag` (optional): `tasks` (`work_s` on one reference GPU, ≥ 0; `model`) and `edges`
//!   (`[from, to, data_mb]`, task indexes from 0). A DAG job's `duration_s` is what
//!   deadlines and oracles read; it runs for its plan's makespan.
//!
//! Blank lines and lines starting with `#` are skipped. Unknown keys are errors (a typo does
//! not silently drop a field); every error names the file, the line and the field path
//! (`w.jsonl:7: dag.tasks[2].work_s: -5 is not a finite work ≥ 0`). Jobs are sorted by submit
//! time (ties by line) and rebased so the first arrives at 0, like every trace loader.

use super::JobExtras;
use super::dag_job::{DagEdge, DagJob, DagTask};
use crate::cluster::Throughputs;
use crate::trace::loaded::{check_span, duration_problem};
use crate::trace::{TraceError, TraceJob};
use std::fmt::Write as _;
use std::sync::Arc;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JobLine {
    submit_s: f64,
    duration_s: f64,
    gpus: u16,
    #[serde(default)]
    deadline_s: Option<f64>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    dag: Option<DagLine>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DagLine {
    tasks: Vec<TaskLine>,
    #[serde(default)]
    edges: Vec<(u32, u32, f64)>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskLine {
    work_s: f64,
    model: String,
}

/// A loaded mixed workload.
#[derive(Clone, Debug, Default)]
pub struct MixedJobs {
    /// The jobs, sorted and rebased.
    pub jobs: Vec<TraceJob>,
    /// Their models (0 where not given) and DAGs, by job index.
    pub extras: JobExtras,
    /// Which jobs named their model (the others get a seeded draw).
    pub models_given: Vec<bool>,
}

fn seconds_to_ms(s: f64) -> u64 {
    (s * 1000.0).round() as u64
}

/// Parses a mixed workload; `file` labels errors, `table` resolves model names.
pub fn parse(
    text: &str,
    file: &str,
    table: &Throughputs,
    limit: Option<usize>,
) -> Result<MixedJobs, TraceError> {
    let mut rows: Vec<(TraceJob, Option<u16>, Option<Arc<DagJob>>)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let error = |field: &str, problem: String| TraceError::Field {
            file: file.to_string(),
            line,
            field: field.to_string(),
            problem,
        };
        let mut de = serde_json::Deserializer::from_str(trimmed);
        let job: JobLine = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { "job".to_string() } else { path };
            error(&field, e.into_inner().to_string())
        })?;
        let model = |field: &str, name: &str| -> Result<u16, TraceError> {
            table
                .models
                .iter()
                .position(|m| m == name)
                .map(|m| m as u16)
                .ok_or_else(|| {
                    error(
                        field,
                        format!(
                            "job model {name:?} has no throughput entry in {}",
                            table.file
                        ),
                    )
                })
        };
        for (field, value) in [("submit_s", job.submit_s), ("duration_s", job.duration_s)] {
            if !value.is_finite() || value < 0.0 {
                return Err(error(field, format!("{value} is not a finite time ≥ 0")));
            }
        }
        if let Some(problem) = duration_problem(seconds_to_ms(job.duration_s)) {
            return Err(error("duration_s", problem));
        }
        if job.gpus == 0 {
            return Err(error("gpus", "0 GPUs; a job needs at least one".into()));
        }
        let deadline_ms = match job.deadline_s {
            None => None,
            Some(d) if d.is_finite() && d >= job.submit_s => Some(seconds_to_ms(d)),
            Some(d) => {
                return Err(error(
                    "deadline_s",
                    format!(
                        "{d} is not a finite time at or after submit_s {}",
                        job.submit_s
                    ),
                ));
            }
        };
        let job_model = job
            .model
            .as_deref()
            .map(|m| model("model", m))
            .transpose()?;
        let dag = match job.dag {
            None => None,
            Some(d) => {
                let mut tasks = Vec::with_capacity(d.tasks.len());
                for (t, task) in d.tasks.iter().enumerate() {
                    tasks.push(DagTask {
                        work_ms: task.work_s * 1000.0,
                        model: model(&format!("dag.tasks[{t}].model"), &task.model)?,
                    });
                }
                let edges = d
                    .edges
                    .iter()
                    .map(|&(from, to, data_mb)| DagEdge { from, to, data_mb })
                    .collect();
                let dag = DagJob::new(tasks, edges, table.models.len())
                    .map_err(|e| error(&e.field, e.problem))?;
                Some(Arc::new(dag))
            }
        };
        rows.push((
            TraceJob {
                id: 0,
                submit_ms: seconds_to_ms(job.submit_s),
                duration_ms: seconds_to_ms(job.duration_s),
                gpus: job.gpus,
                deadline_ms,
                gradient_mb: 0,
                source_line: line,
            },
            job_model,
            dag,
        ));
    }
    rows.sort_by_key(|(j, _, _)| (j.submit_ms, j.source_line));
    if let Some(n) = limit {
        rows.truncate(n);
    }
    let first = rows.first().map_or(0, |(j, _, _)| j.submit_ms);
    let mut out = MixedJobs::default();
    for (i, (mut job, model, dag)) in rows.into_iter().enumerate() {
        job.id = i as u32;
        job.submit_ms -= first;
        job.deadline_ms = job.deadline_ms.map(|d| d - first);
        out.jobs.push(job);
        out.extras.model.push(model.unwrap_or(0));
        out.models_given.push(model.is_some());
        out.extras.dag.push(dag);
    }
    check_span(&out.jobs, file, "submit_s")?;
    Ok(out)
}

/// Writes jobs in the mixed format (times at ms precision, data at 0.1 MB), the inverse of
/// [`parse`] up to that rounding. O(size).
pub fn write(jobs: &[TraceJob], extras: &JobExtras, table: &Throughputs) -> String {
    let name = |m: usize| {
        serde_json::to_string(&table.models[m.min(table.models.len() - 1)]).unwrap_or_default()
    };
    let mut s = String::new();
    for (i, j) in jobs.iter().enumerate() {
        let _ = write!(
            s,
            "{{\"submit_s\":{},\"duration_s\":{},\"gpus\":{}",
            seconds(j.submit_ms as f64),
            seconds(j.duration_ms as f64),
            j.gpus
        );
        if let Some(d) = j.deadline_ms {
            let _ = write!(s, ",\"deadline_s\":{}", seconds(d as f64));
        }
        match extras.dag_of(i) {
            None => {
                let _ = write!(s, ",\"model\":{}", name(extras.model_of(i)));
            }
            Some(dag) => {
                s.push_str(",\"dag\":{\"tasks\":[");
                for (t, task) in dag.tasks().iter().enumerate() {
                    let sep = if t == 0 { "" } else { "," };
                    let _ = write!(
                        s,
                        "{sep}{{\"work_s\":{},\"model\":{}}}",
                        seconds(task.work_ms),
                        name(usize::from(task.model))
                    );
                }
                s.push_str("],\"edges\":[");
                for (e, edge) in dag.edges().iter().enumerate() {
                    let sep = if e == 0 { "" } else { "," };
                    let _ = write!(
                        s,
                        "{sep}[{},{},{}]",
                        edge.from,
                        edge.to,
                        (edge.data_mb * 10.0).round() / 10.0
                    );
                }
                s.push_str("]}");
            }
        }
        s.push_str("}\n");
    }
    s
}

/// Milliseconds as seconds with at most three decimals, no trailing zeros.
fn seconds(ms: f64) -> String {
    let ms = ms.round();
    if ms % 1000.0 == 0.0 {
        format!("{}", ms / 1000.0)
    } else {
        let text = format!("{:.3}", ms / 1000.0);
        text.trim_end_matches('0').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<MixedJobs, String> {
        parse(text, "w.jsonl", &Throughputs::gavel(), None).map_err(|e| e.to_string())
    }

    const GOOD: &str = r#"# a comment
{"submit_s":17,"duration_s":4058,"gpus":4,"deadline_s":12000,"model":"LM (batch size 20)"}
{"submit_s":5,"duration_s":1825.5,"gpus":1}
{"submit_s":40,"duration_s":900,"gpus":2,"dag":{"tasks":[{"work_s":600,"model":"A3C"},{"work_s":1200,"model":"CycleGAN"}],"edges":[[0,1,512.5]]}}
"#;

    #[test]
    fn loads_sorted_rebased_and_round_trips() {
        let w = load(GOOD).unwrap();
        assert_eq!(w.jobs.len(), 3);
        assert_eq!(w.jobs[0].duration_ms, 1_825_500);
        assert_eq!((w.jobs[0].source_line, w.jobs[0].submit_ms), (3, 0));
        assert_eq!(w.jobs[1].deadline_ms, Some(11_995_000));
        assert_eq!(w.models_given, [false, true, false]);
        let dag = w.extras.dag_of(2).unwrap();
        assert_eq!(dag.tasks().len(), 2);
        assert_eq!(dag.edges()[0].data_mb, 512.5);
        let table = Throughputs::gavel();
        let text = write(&w.jobs, &w.extras, &table);
        let again = parse(&text, "x", &table, None).unwrap();
        assert_eq!(again.jobs, {
            let mut j = w.jobs.clone();
            for (i, job) in j.iter_mut().enumerate() {
                job.source_line = i + 1;
            }
            j
        });
        assert_eq!(again.extras.dag, w.extras.dag);
        assert_eq!(write(&again.jobs, &again.extras, &table), text);
    }

    #[test]
    fn bad_lines_name_file_line_and_field() {
        let dag = |tasks: &str, edges: &str| {
            format!(
                "{{\"submit_s\":1,\"duration_s\":9,\"gpus\":2,\"dag\":{{\"tasks\":[{tasks}],\"edges\":[{edges}]}}}}"
            )
        };
        let a = r#"{"work_s":5,"model":"A3C"}"#;
        let neg = r#"{"work_s":-5,"model":"A3C"}"#;
        let cases = [
            (
                r#"{"submit_s":1,"duration_s":9}"#.to_string(),
                "w.jsonl:1: job: missing field `gpus`",
            ),
            (
                r#"{"submit_s":1,"duration_s":9,"gpus":"two"}"#.to_string(),
                "w.jsonl:1: gpus: invalid type",
            ),
            (
                r#"{"submit_s":1,"duration_s":9,"gpus":1,"deadlnie_s":5}"#.to_string(),
                "w.jsonl:1: deadlnie_s: unknown field",
            ),
            (
                r#"{"submit_s":-1,"duration_s":9,"gpus":1}"#.to_string(),
                "w.jsonl:1: submit_s: -1 is not a finite time",
            ),
            (
                r#"{"submit_s":5,"duration_s":9,"gpus":1,"deadline_s":2}"#.to_string(),
                "w.jsonl:1: deadline_s:",
            ),
            (
                r#"{"submit_s":1,"duration_s":1e12,"gpus":1}"#.to_string(),
                "w.jsonl:1: duration_s: 1000000000000 s is longer than 1000000000 s",
            ),
            (
                r#"{"submit_s":5,"duration_s":9,"gpus":1,"model":"GPT-9"}"#.to_string(),
                "w.jsonl:1: model: job model \"GPT-9\" has no throughput entry",
            ),
            (
                dag(&format!("{a},{neg}"), ""),
                "w.jsonl:1: dag.tasks[1].work_s: -5 is not a finite work ≥ 0",
            ),
            (
                dag(&format!("{a},{a}"), "[0,1,1],[1,0,1]"),
                "w.jsonl:1: dag.edges: the DAG has a cycle",
            ),
            (dag(a, "[0,3,1]"), "w.jsonl:1: dag.edges[0]: unknown task 3"),
            (
                dag(r#"{"work_s":5}"#, ""),
                "w.jsonl:1: dag.tasks[0]: missing field `model`",
            ),
        ];
        for (text, want) in cases {
            let err = load(&format!("{text}\n")).unwrap_err();
            assert!(err.starts_with(want), "want {want:?}\n got {err:?}");
        }
        let err = load(&format!(
            "{}\n\n{}\n",
            GOOD.lines().nth(1).unwrap(),
            dag(a, "[0,0,1]")
        ))
        .unwrap_err();
        assert!(
            err.starts_with("w.jsonl:3: dag.edges[0]: self-edge"),
            "{err}"
        );
    }
}
