//! Mixed workloads: gang jobs with and without deadlines and DAG jobs in one trace, on a
//! cluster of several GPU types.
//!
//! - [`JobExtras`]: what a job carries beyond [`TraceJob`](crate::trace::TraceJob) — its job
//!   model (row of the throughput table: its speed on each GPU type) and, for a DAG job, its
//!   [`DagJob`].
//! - [`DagJobsSpec`] / [`make_dag_jobs`]: `--dag-jobs FRACTION[:TASKS_LO:TASKS_HI]` turns a
//!   seeded share of any trace's jobs into generated DAG jobs ([`generate`]).
//! - [`format`](mod@format): the mixed workload file (JSON lines), which can carry all of it
//!   (the bundled sample is [`crate::sample`]).

pub mod dag_job;
pub mod format;
pub mod generate;
pub mod hints;

pub use dag_job::{
    DagEdge, DagJob, DagJobError, DagProgress, DagTask, JobDag, MAX_DAG_EDGES, MAX_DAG_TASKS,
};
pub use generate::{DagJobsSpec, make_dag_jobs};

use gantry_core::SeededRng;
use std::sync::Arc;

/// Per-job additions to a trace, indexed like its jobs. Empty vectors mean "none": every job
/// of model 0 and no DAG jobs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobExtras {
    /// Job model of each gang job (row of the throughput table).
    pub model: Vec<u16>,
    /// The DAG of each DAG job.
    pub dag: Vec<Option<Arc<DagJob>>>,
    /// Each job's batch-system terms (preemption class, time limit; `--job-terms`); empty:
    /// every job checkpointing under the simulator's preemption mode, no time limit.
    pub terms: Vec<crate::trace::terms::JobTerms>,
}

impl JobExtras {
    /// The model of job `i` (0 when not given).
    pub fn model_of(&self, i: usize) -> usize {
        self.model.get(i).map_or(0, |&m| usize::from(m))
    }

    /// The DAG of job `i`, if it is a DAG job.
    pub fn dag_of(&self, i: usize) -> Option<&Arc<DagJob>> {
        self.dag.get(i).and_then(Option::as_ref)
    }

    /// The batch-system terms of job `i`, if the workload has them.
    pub fn terms_of(&self, i: usize) -> Option<crate::trace::terms::JobTerms> {
        self.terms.get(i).copied()
    }

    /// Number of DAG jobs.
    pub fn dag_jobs(&self) -> usize {
        self.dag.iter().flatten().count()
    }

    /// Extends both vectors to `jobs` entries (model 0, no DAG).
    pub fn fit(&mut self, jobs: usize) {
        self.model.resize(jobs, 0);
        self.dag.resize(jobs, None);
    }
}

/// Gives every job whose model is not `given` (missing from `given` counts as not given) a
/// seeded uniform draw among `models` job models, as Gavel draws job types for the Philly
/// traces. One draw per job whatever `given` says, so naming one job's model does not change
/// the others'. O(n).
pub fn assign_models(
    extras: &mut JobExtras,
    jobs: usize,
    given: &[bool],
    models: usize,
    seed: u64,
) {
    let mut rng = SeededRng::new(seed ^ 0x6D0D_E15A);
    extras.fit(jobs);
    for (i, m) in extras.model.iter_mut().enumerate() {
        let draw = rng.below(models.clamp(1, usize::from(u16::MAX)) as u32) as u16;
        if !given.get(i).copied().unwrap_or(false) {
            *m = draw;
        }
    }
}
