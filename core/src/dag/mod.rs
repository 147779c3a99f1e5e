//! DAG planning on heterogeneous GPUs (the WORL-RTGS part of gantry): a fixed-capacity
//! [`Dag`], GPU [`Platform`]s, the list-scheduling [`Evaluator`] with its makespan
//! [`LowerBound`], and planners behind one trait, [`DagPlanner`]: [`Heft`], [`Woa`] (with a
//! [`PlanAdvisor`] hook for learned plan proposals) and the [`RandomPlanner`] baseline.
//!
//! Everything is allocation-free and deterministic for a seed; capacities are const
//! generics. Large instances (10,000 tasks) are tens of MiB: keep them in a `Box` on the host.

pub mod eval;
pub mod gpus;
pub mod graph;
pub mod heft;
pub mod observation;
pub mod planner;
pub mod woa;

pub use eval::{Evaluator, LowerBound, Plan, PlanError};
pub use gpus::{Bandwidth, CostTable, GpuPool, Platform, PlatformError};
pub use graph::{Dag, DagError, Edge, TaskId};
pub use heft::{Heft, HeftAdvisor, upward_rank_order};
pub use observation::{ListState, OBS_LAYOUT_VERSION, OBS_WIDTH};
pub use planner::{AdvisorContext, DagPlanner, NoAdvisor, PlanAdvisor, RandomPlanner};
pub use woa::{Decoding, Woa, WoaConfig};

/// Test helpers shared by the DAG modules' tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::{Dag, TaskId};
    use crate::SeededRng;

    /// Work and data ranges of [`random_dag`]: task work `base_work + U{0..work_span}` ms,
    /// edge data `U{0..data_span}`.
    pub(crate) struct RandomDagShape {
        pub base_work: f64,
        pub work_span: u32,
        pub data_span: u32,
    }

    /// A seeded random DAG of `n` tasks where task j draws `min(degree, j)` predecessors
    /// among the earlier tasks (duplicates possible), sealed.
    pub(crate) fn random_dag<const T: usize, const E: usize>(
        seed: u64,
        n: usize,
        degree: u32,
        shape: RandomDagShape,
    ) -> Dag<T, E> {
        let mut rng = SeededRng::new(seed);
        let mut dag = Dag::new();
        for _ in 0..n {
            dag.add_task(shape.base_work + rng.below(shape.work_span) as f64)
                .unwrap();
        }
        for j in 1..n {
            for _ in 0..degree.min(j as u32) {
                let i = rng.below(j as u32);
                dag.add_edge(
                    TaskId(i),
                    TaskId(j as u32),
                    rng.below(shape.data_span) as f64,
                )
                .unwrap();
            }
        }
        dag.seal().unwrap();
        dag
    }
}
