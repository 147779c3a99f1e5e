//! A DAG job: tasks with work and a job model each, edges with data, checked once when it is
//! built (no cycle, no negative work, no edge to a missing task) so the simulator can plan it
//! without meeting bad input.

use gantry_core::dag::{Dag, DagError, TaskId};

/// Most tasks one DAG job may have.
pub const MAX_DAG_TASKS: usize = 128;
/// Most edges one DAG job may have.
pub const MAX_DAG_EDGES: usize = 1024;

/// The core DAG type a job's (remaining) tasks are planned as.
pub type JobDag = Dag<MAX_DAG_TASKS, MAX_DAG_EDGES>;

/// One task of a DAG job.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DagTask {
    /// Work on one reference GPU (V100), ms.
    pub work_ms: f64,
    /// Job model (row of the throughput table) the task trains or serves: its speed per GPU
    /// type.
    pub model: u16,
}

/// One data dependency: `to` starts after `from` finished and its output arrived.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DagEdge {
    /// Producer task index.
    pub from: u32,
    /// Consumer task index.
    pub to: u32,
    /// Data moved, MB (transfer ms = MB × the link's ms/MB, 0 on the same GPU).
    pub data_mb: f64,
}

/// A validated DAG job.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DagJob {
    tasks: Vec<DagTask>,
    edges: Vec<DagEdge>,
}

/// What is wrong with a DAG job, and where (`field` is a path such as `dag.tasks[3].work_s`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct DagJobError {
    /// The offending field.
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

fn bad(field: String, problem: impl Into<String>) -> DagJobError {
    DagJobError {
        field,
        problem: problem.into(),
    }
}

impl DagJob {
    /// Checks and builds a DAG job: 1..=[`MAX_DAG_TASKS`] tasks with finite work ≥ 0, at most
    /// [`MAX_DAG_EDGES`] edges between existing distinct tasks with finite data ≥ 0, no cycle.
    /// `models` is the number of job models the throughput table has. O(T + E).
    pub fn new(
        tasks: Vec<DagTask>,
        edges: Vec<DagEdge>,
        models: usize,
    ) -> Result<Self, DagJobError> {
        if tasks.is_empty() || tasks.len() > MAX_DAG_TASKS {
            return Err(bad(
                "dag.tasks".into(),
                format!("{} tasks; need 1..={MAX_DAG_TASKS}", tasks.len()),
            ));
        }
        if edges.len() > MAX_DAG_EDGES {
            return Err(bad(
                "dag.edges".into(),
                format!("{} edges; at most {MAX_DAG_EDGES}", edges.len()),
            ));
        }
        for (i, t) in tasks.iter().enumerate() {
            if !t.work_ms.is_finite() || t.work_ms < 0.0 {
                return Err(bad(
                    format!("dag.tasks[{i}].work_s"),
                    format!("{} is not a finite work ≥ 0", t.work_ms / 1000.0),
                ));
            }
            if usize::from(t.model) >= models.max(1) {
                return Err(bad(
                    format!("dag.tasks[{i}].model"),
                    format!("model {} is not in the throughput table", t.model),
                ));
            }
        }
        let job = Self { tasks, edges };
        let mut dag = Box::new(JobDag::new());
        job.build(&DagProgress::default(), &mut dag)
            .map_err(|(i, e)| match (i, e) {
                (Some(i), e) => bad(format!("dag.edges[{i}]"), e.to_string()),
                (None, DagError::Cycle(t)) => bad(
                    "dag.edges".into(),
                    format!("the DAG has a cycle (through or before task {})", t.0),
                ),
                (None, e) => bad("dag".into(), e.to_string()),
            })?;
        Ok(job)
    }

    /// The tasks.
    pub fn tasks(&self) -> &[DagTask] {
        &self.tasks
    }

    /// The edges.
    pub fn edges(&self) -> &[DagEdge] {
        &self.edges
    }

    /// Total work over all tasks, ms on one reference GPU.
    pub fn total_work_ms(&self) -> f64 {
        self.tasks.iter().map(|t| t.work_ms).sum()
    }

    /// Builds the sealed core DAG of the tasks `progress` has not finished, each with the
    /// work it has left (indexes renumbered in order; an empty progress is a fresh job).
    /// Edges from a finished task are dropped: its output already sits in shared storage. On
    /// error, the index of the offending edge, if one. O(T + E).
    pub fn build(
        &self,
        progress: &DagProgress,
        out: &mut JobDag,
    ) -> Result<Vec<u32>, (Option<usize>, DagError)> {
        out.clear();
        let mut index = vec![u32::MAX; self.tasks.len()];
        let mut kept = Vec::with_capacity(self.tasks.len());
        for (i, t) in self.tasks.iter().enumerate() {
            if progress.is_done(i) {
                continue;
            }
            let work = progress.left_ms(i).unwrap_or(t.work_ms);
            let id = out.add_task(work).map_err(|e| (None, e))?;
            index[i] = id.0;
            kept.push(i as u32);
        }
        for (i, e) in self.edges.iter().enumerate() {
            let (from, to) = (e.from as usize, e.to as usize);
            if from >= self.tasks.len() || to >= self.tasks.len() {
                let missing = if from >= self.tasks.len() {
                    e.from
                } else {
                    e.to
                };
                return Err((Some(i), DagError::UnknownTask(TaskId(missing))));
            }
            if index[from] == u32::MAX || index[to] == u32::MAX {
                continue;
            }
            out.add_edge(TaskId(index[from]), TaskId(index[to]), e.data_mb)
                .map_err(|err| (Some(i), err))?;
        }
        out.seal().map_err(|e| (None, e))?;
        Ok(kept)
    }
}

/// What earlier runs of a DAG job achieved: finished tasks, and the reference work left of
/// tasks a preemption interrupted. Like a gang job, an interrupted task keeps its progress
/// (the simulator's jobs checkpoint continuously); a task that had not started keeps all of
/// its work. Empty = a fresh job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DagProgress {
    left_ms: Vec<Option<f64>>,
    done: Vec<bool>,
}

impl DagProgress {
    /// Whether task `i` has finished.
    pub fn is_done(&self, i: usize) -> bool {
        self.done.get(i).copied().unwrap_or(false)
    }

    /// Reference work left of task `i` if a run interrupted it, else `None` (all of it).
    pub fn left_ms(&self, i: usize) -> Option<f64> {
        self.left_ms.get(i).copied().flatten()
    }

    /// Finished tasks.
    pub fn finished(&self) -> usize {
        self.done.iter().filter(|&&d| d).count()
    }

    /// Credits one task of a run stopped `elapsed_ms` after it began making progress: the
    /// task (of `tasks`, with `work_ms` left at the run's start) ran on its GPU from
    /// `start_ms` to `finish_ms` at a constant pace. O(1) amortised.
    pub fn credit(
        &mut self,
        tasks: usize,
        task: usize,
        work_ms: f64,
        span: (f64, f64),
        elapsed_ms: f64,
    ) {
        self.left_ms.resize(tasks, None);
        self.done.resize(tasks, false);
        let (start_ms, finish_ms) = span;
        if task >= tasks || elapsed_ms <= start_ms {
            return;
        }
        if elapsed_ms >= finish_ms {
            self.done[task] = true;
            self.left_ms[task] = Some(0.0);
        } else {
            let share_left = (finish_ms - elapsed_ms) / (finish_ms - start_ms);
            self.left_ms[task] = Some(work_ms * share_left);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(work_ms: f64) -> DagTask {
        DagTask { work_ms, model: 0 }
    }

    fn edge(from: u32, to: u32) -> DagEdge {
        DagEdge {
            from,
            to,
            data_mb: 1.0,
        }
    }

    #[test]
    fn builds_the_remaining_sub_dag() {
        let job = DagJob::new(
            vec![task(1.0), task(2.0), task(3.0), task(4.0)],
            vec![edge(0, 1), edge(0, 2), edge(1, 3), edge(2, 3)],
            1,
        )
        .unwrap();
        assert_eq!(job.total_work_ms(), 10.0);
        let mut dag = Box::new(JobDag::new());
        let mut progress = DagProgress::default();
        // A run stopped at 5 ms: task 0 (0..1) done, task 2 (2..6) three quarters done,
        // task 1 (1..3) done, task 3 (6..10) not started.
        for (task, work, span) in [
            (0, 1.0, (0.0, 1.0)),
            (1, 2.0, (1.0, 3.0)),
            (2, 3.0, (2.0, 6.0)),
            (3, 4.0, (6.0, 10.0)),
        ] {
            progress.credit(4, task, work, span, 5.0);
        }
        assert_eq!(progress.finished(), 2);
        let kept = job.build(&progress, &mut dag).unwrap();
        assert_eq!(kept, [2, 3]);
        assert_eq!(dag.task_count(), 2);
        assert_eq!(dag.edge_count(), 1);
        assert_eq!(dag.works_ms(), [0.75, 4.0]);
    }

    #[test]
    fn bad_jobs_name_the_field() {
        let cases: [(Vec<DagTask>, Vec<DagEdge>, &str); 6] = [
            (vec![], vec![], "dag.tasks: 0 tasks"),
            (
                vec![task(1.0), task(-2.0)],
                vec![],
                "dag.tasks[1].work_s: -0.002 is not a finite work",
            ),
            (
                vec![task(1.0), task(f64::NAN)],
                vec![],
                "dag.tasks[1].work_s",
            ),
            (
                vec![task(1.0), task(1.0)],
                vec![edge(0, 1), edge(1, 0)],
                "dag.edges: the DAG has a cycle",
            ),
            (
                vec![task(1.0)],
                vec![edge(0, 5)],
                "dag.edges[0]: unknown task 5",
            ),
            (vec![task(1.0)], vec![edge(0, 0)], "dag.edges[0]: self-edge"),
        ];
        for (tasks, edges, want) in cases {
            let err = DagJob::new(tasks, edges, 1).unwrap_err().to_string();
            assert!(err.starts_with(want), "want {want:?}, got {err:?}");
        }
        let err = DagJob::new(
            vec![DagTask {
                work_ms: 1.0,
                model: 3,
            }],
            vec![],
            2,
        )
        .unwrap_err();
        assert_eq!(err.field, "dag.tasks[0].model");
    }
}
