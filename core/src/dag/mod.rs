//! DAG planning on heterogeneous GPUs (the WORL-RTGS part of gantry): a fixed-capacity
//! [`Dag`], GPU [`Platform`]s, the list-scheduling [`Evaluator`] with its makespan
//! [`LowerBound`], and planners behind one trait, [`DagPlanner`]: the list schedulers
//! [`Heft`], [`Peft`], [`Cpop`], [`HeftLookahead`] and [`Ippts`] (all on one insertion-based
//! partial schedule, `slots`), [`Woa`] (with a [`PlanAdvisor`] hook for learned plan
//! proposals) and the [`RandomPlanner`] baseline.
//!
//! Everything is allocation-free and deterministic for a seed; capacities are const
//! generics. Large instances (10,000 tasks) are tens of MiB: keep them in a `Box` on the host.

pub mod cpop;
pub mod eval;
pub mod gpus;
pub mod graph;
pub mod heft;
pub mod incremental;
pub mod ippts;
pub mod local_search;
pub mod lookahead;
pub mod observation;
pub mod peft;
pub mod planner;
mod slots;
pub mod woa;

pub use cpop::Cpop;
pub use eval::{Evaluator, LowerBound, Plan, PlanError};
pub use gpus::{Bandwidth, CostTable, GpuPool, Platform, PlatformError};
pub use graph::{Dag, DagError, Edge, TaskId};
pub use heft::{Heft, HeftAdvisor, upward_rank_order};
pub use incremental::{IncrementalSchedule, Move};
pub use ippts::Ippts;
pub use local_search::{LocalSearch, LocalSearchConfig, LocalSearchStats};
pub use lookahead::{HeftLookahead, LookaheadConfig};
pub use observation::{ListState, OBS_LAYOUT_VERSION, OBS_WIDTH};
pub use peft::Peft;
pub use planner::{
    AdvisorContext, Chain, DagPlanner, NoAdvisor, PlanAdvisor, RandomPlanner, SeedPlans,
};
pub use woa::{Decoding, Woa, WoaConfig};

/// Test helpers shared by the DAG modules' tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::{Bandwidth, CostTable, Dag, Evaluator, Plan, Platform, TaskId};
    use crate::SeededRng;

    /// Fig. 2 of Topcuoglu, Hariri, Wu 2002: computation cost of T0..T9 on P0..P2.
    pub(crate) const TOPCUOGLU_COST: [[f64; 3]; 10] = [
        [14.0, 16.0, 9.0],
        [13.0, 19.0, 18.0],
        [11.0, 13.0, 19.0],
        [13.0, 8.0, 17.0],
        [12.0, 13.0, 10.0],
        [13.0, 16.0, 9.0],
        [7.0, 15.0, 11.0],
        [5.0, 11.0, 14.0],
        [18.0, 12.0, 20.0],
        [21.0, 7.0, 16.0],
    ];

    /// Fig. 2's edges (from, to, communication cost), 1-based n1..n10 shifted to 0-based.
    pub(crate) const TOPCUOGLU_EDGES: [(u32, u32, f64); 15] = [
        (0, 1, 18.0),
        (0, 2, 12.0),
        (0, 3, 9.0),
        (0, 4, 11.0),
        (0, 5, 14.0),
        (1, 7, 19.0),
        (1, 8, 16.0),
        (2, 6, 23.0),
        (3, 7, 27.0),
        (3, 8, 23.0),
        (4, 8, 13.0),
        (5, 7, 15.0),
        (6, 9, 17.0),
        (7, 9, 11.0),
        (8, 9, 13.0),
    ];

    /// A DAG and cost table from `cost[task][gpu]` and `(from, to, transfer)` edges at unit
    /// bandwidth (the HEFT paper's convention: data is the transfer time).
    pub(crate) fn cost_table_problem<const K: usize>(
        cost: &[[f64; K]],
        edges: &[(u32, u32, f64)],
    ) -> (Dag<16, 32>, CostTable<16, K, K>) {
        let mut dag = Dag::new();
        let mut table = CostTable::new(Bandwidth::PerMs(1.0));
        for (t, row) in cost.iter().enumerate() {
            dag.add_task(0.0).unwrap();
            for (g, &c) in row.iter().enumerate() {
                table.set_run_ms(t, g, c).unwrap();
            }
        }
        for g in 0..K {
            table.add_gpu(g).unwrap();
        }
        for &(a, b, c) in edges {
            dag.add_edge(TaskId(a), TaskId(b), c).unwrap();
        }
        dag.seal().unwrap();
        (dag, table)
    }

    /// The HEFT paper's example (10 tasks, 3 processors).
    pub(crate) fn topcuoglu_example() -> (Dag<16, 32>, CostTable<16, 3, 3>) {
        cost_table_problem(&TOPCUOGLU_COST, &TOPCUOGLU_EDGES)
    }

    /// The 6-task, 2-processor example of the IPPTS authors' code (`dags/n=6q=2`), 0-based:
    /// a chain 0 → 1 → 2 → {3, 4} → 5, every transfer 1.
    pub(crate) fn ippts_example() -> (Dag<16, 32>, CostTable<16, 2, 2>) {
        let cost = [
            [20.0, 10.0],
            [5.0, 10.0],
            [10.0, 5.0],
            [5.0, 10.0],
            [10.0, 5.0],
            [5.0, 10.0],
        ];
        let edges = [
            (0, 1, 1.0),
            (1, 2, 1.0),
            (2, 3, 1.0),
            (2, 4, 1.0),
            (3, 5, 1.0),
            (4, 5, 1.0),
        ];
        cost_table_problem(&cost, &edges)
    }

    /// Evaluate `plan` and check it is valid and no later than the planner's own makespan.
    pub(crate) fn evaluated_within<const T: usize, const E: usize>(
        dag: &Dag<T, E>,
        platform: &impl Platform,
        plan: &Plan<T>,
        own_ms: f64,
    ) -> f64 {
        let mut ev: Evaluator<T, 16> = Evaluator::new();
        let ms = ev.evaluate(dag, platform, plan).unwrap();
        assert!(ms <= own_ms + 1e-9, "{ms} > {own_ms}");
        assert!(ev.lower_bound(dag, platform).unwrap().ms() <= ms + 1e-9);
        ms
    }

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
