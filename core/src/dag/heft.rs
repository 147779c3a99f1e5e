//! HEFT — Heterogeneous Earliest Finish Time (Topcuoglu, Hariri, Wu, IEEE TPDS 13(3), 2002).
//!
//! 1. **Upward rank** (their Eq. 7), in reverse topological order:
//!    `rank_u(i) = w̄_i + max_{j ∈ succ(i)} (c̄_ij + rank_u(j))`, where `w̄_i` is the mean run
//!    time of task i over all GPUs and `c̄_ij` the mean transfer time of edge (i, j) between two
//!    different GPUs (`data / bandwidth`; 0 with one GPU or infinite bandwidth).
//! 2. Tasks in **decreasing rank**; ties by topological position (Kahn order, which is by task
//!    id among tasks ready together). With zero-cost tasks two tasks on one chain can share a
//!    rank; the topological tie-break keeps the list a valid precedence order where a pure
//!    task-id tie-break would not.
//! 3. Each task goes to the GPU giving the **earliest finish time**, with **insertion**: the
//!    task may fill an idle gap between two already scheduled tasks if it fits after its data
//!    is ready. Ties: the lowest GPU index.
//!
//! # From a HEFT schedule to a [`Plan`]
//! Assignment = HEFT's GPUs; order = tasks by HEFT start time, ties by rank position. Each
//! GPU then runs its tasks in HEFT's start order, and by induction every task starts in the
//! [`Evaluator`](super::Evaluator) no later than in HEFT (its GPU is free and its inputs are
//! there by HEFT's start time), so `evaluate(plan) ≤` HEFT's makespan (tested).
//!
//! Cost: O(T·P·(fan-in + tasks per GPU)) time for the EFT search (gap scan per GPU), O(T log
//! T) for the sorts; memory `37·T + 4·P` bytes.

use super::eval::{Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;
use super::planner::{AdvisorContext, DagPlanner, PlanAdvisor};
use super::slots::SlotSchedule;

/// HEFT's upward ranks and the priority list they give. Writes `rank[t]`, fills `order` with
/// tasks in decreasing rank (ties by topological position) and `pos[t]` with each task's
/// position in that list. Shared by HEFT and WOA. O(T·P + E + T log T).
pub fn upward_rank_order<const T: usize, const E: usize>(
    dag: &Dag<T, E>,
    platform: &impl Platform,
    rank: &mut [f64],
    order: &mut [u32],
    pos: &mut [u32],
) -> Result<(), PlanError> {
    dag.require_sealed()?;
    let n = dag.task_count();
    if rank.len() < n || order.len() < n || pos.len() < n {
        return Err(PlanError::TooManyTasks {
            capacity: rank.len().min(order.len()).min(pos.len()),
        });
    }
    let multi_gpu = platform.gpu_count() > 1;
    let bandwidth = platform.bandwidth();
    let works = dag.works_ms();
    for &task in dag.topo_order().iter().rev() {
        let t = task as usize;
        let (dsts, edges) = dag.succs(t);
        let mut tail = 0.0f64;
        for (&d, &e) in dsts.iter().zip(edges) {
            let comm = if multi_gpu {
                bandwidth.transfer_ms(dag.edge_data(e))
            } else {
                0.0
            };
            tail = tail.max(comm + rank[d as usize]);
        }
        rank[t] = platform.mean_run_ms(t, works[t]) + tail;
    }
    for (i, &task) in dag.topo_order().iter().enumerate() {
        pos[task as usize] = i as u32;
    }
    let order = &mut order[..n];
    order.copy_from_slice(dag.topo_order());
    order.sort_unstable_by(|&a, &b| {
        rank[b as usize]
            .total_cmp(&rank[a as usize])
            .then(pos[a as usize].cmp(&pos[b as usize]))
    });
    for (i, &task) in order.iter().enumerate() {
        pos[task as usize] = i as u32;
    }
    Ok(())
}

/// HEFT with its scratch for up to `T` tasks and `P` GPUs. Reuse across calls.
#[derive(Clone, Debug)]
pub struct Heft<const T: usize, const P: usize> {
    len: usize,
    rank: [f64; T],
    order: [u32; T],
    pos: [u32; T],
    schedule: SlotSchedule<T, P>,
}

impl<const T: usize, const P: usize> Default for Heft<T, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize, const P: usize> Heft<T, P> {
    /// Fresh scratch.
    pub const fn new() -> Self {
        Self {
            len: 0,
            rank: [0.0; T],
            order: [0; T],
            pos: [0; T],
            schedule: SlotSchedule::new(),
        }
    }

    /// Upward ranks of the last run, indexed by task id. O(1).
    pub fn ranks(&self) -> &[f64] {
        &self.rank[..self.len]
    }

    /// HEFT's own start times (insertion-based) of the last run. O(1).
    pub fn start_ms(&self) -> &[f64] {
        &self.schedule.start_ms()[..self.len]
    }

    /// HEFT's own finish times of the last run. O(1).
    pub fn finish_ms(&self) -> &[f64] {
        &self.schedule.finish_ms()[..self.len]
    }

    /// HEFT's own makespan of the last run (the paper's number). O(1).
    pub fn makespan_ms(&self) -> f64 {
        self.schedule.makespan_ms()
    }

    /// Run HEFT and keep the schedule in this scratch (see the module doc for the cost).
    pub fn schedule<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> Result<f64, PlanError> {
        let (n, p) = check_sizes::<T, P, T, E>(dag, platform)?;
        self.len = 0;
        upward_rank_order(
            dag,
            platform,
            &mut self.rank,
            &mut self.order,
            &mut self.pos,
        )?;
        self.schedule.reset(n, p);
        for i in 0..n {
            let t = self.order[i] as usize;
            let (g, slot) = self.schedule.best_eft(dag, platform, t);
            self.schedule.place(t, g, slot);
        }
        self.len = n;
        Ok(self.schedule.makespan_ms())
    }

    /// Turn the last schedule into a [`Plan`]: HEFT's GPUs, tasks by start time (ties by
    /// rank position, the placement sequence). O(T log T).
    pub fn write_plan(&self, out: &mut Plan<T>) -> Result<(), PlanError> {
        self.schedule.write_plan(out)
    }
}

impl<const T: usize, const E: usize, const P: usize> DagPlanner<T, E> for Heft<T, P> {
    fn name(&self) -> &'static str {
        "heft"
    }

    fn plan<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        out: &mut Plan<T>,
    ) -> Result<(), PlanError> {
        self.schedule(dag, platform)?;
        self.write_plan(out)
    }
}

/// A [`PlanAdvisor`] that proposes the HEFT plan once, for whale 0 at initialisation: WOA
/// then starts from HEFT and can only improve on it.
#[derive(Clone, Debug)]
pub struct HeftAdvisor<const T: usize, const P: usize> {
    heft: Heft<T, P>,
}

impl<const T: usize, const P: usize> Default for HeftAdvisor<T, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize, const P: usize> HeftAdvisor<T, P> {
    /// Fresh scratch.
    pub const fn new() -> Self {
        Self { heft: Heft::new() }
    }
}

impl<const T: usize, const E: usize, const P: usize> PlanAdvisor<T, E> for HeftAdvisor<T, P> {
    fn name(&self) -> &'static str {
        "heft"
    }

    fn propose<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        ctx: AdvisorContext,
        out: &mut Plan<T>,
    ) -> bool {
        ctx.iteration == 0 && ctx.whale == 0 && self.heft.plan(dag, platform, out).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{Bandwidth, CostTable, Evaluator, GpuPool, TaskId};

    fn paper_example() -> (Dag<16, 32>, CostTable<16, 3, 3>) {
        crate::dag::test_support::topcuoglu_example()
    }

    #[test]
    fn golden_topcuoglu_2002_makespan_80_and_upward_ranks() {
        let (dag, table) = paper_example();
        let mut heft: Heft<16, 3> = Heft::new();
        let makespan = heft.schedule(&dag, &table).unwrap();
        assert_eq!(makespan, 80.0);
        let want = [
            108.0, 77.0, 80.0, 80.0, 69.0, 63.33, 42.67, 35.67, 44.33, 14.67,
        ];
        for (t, (&got, &w)) in heft.ranks().iter().zip(&want).enumerate() {
            assert!((got - w).abs() < 0.01, "rank of T{t}: {got} vs {w}");
        }
        // The paper's Fig. 3: n10 (T9) runs 73..80 on P2 (index 1).
        assert_eq!(heft.start_ms()[9], 73.0);
        let mut plan = Plan::new();
        heft.write_plan(&mut plan).unwrap();
        assert_eq!(plan.gpus()[9], 1);
        let mut ev: Evaluator<16, 3> = Evaluator::new();
        let evaluated = ev.evaluate(&dag, &table, &plan).unwrap();
        assert!(evaluated <= makespan, "{evaluated} > {makespan}");
        let lb = ev.lower_bound(&dag, &table).unwrap();
        assert!(lb.ms() <= evaluated);
    }

    #[test]
    fn evaluated_heft_plan_never_exceeds_heft_makespan_on_random_dags() {
        let mut rng = crate::SeededRng::new(42);
        for case in 0..30 {
            let mut dag: Dag<64, 512> = Dag::new();
            let n = 10 + rng.below(50) as usize;
            for _ in 0..n {
                dag.add_task(1.0 + rng.below(20) as f64).unwrap();
            }
            for j in 1..n {
                for _ in 0..rng.below(4) {
                    let i = rng.below(j as u32);
                    dag.add_edge(TaskId(i), TaskId(j as u32), rng.below(10) as f64)
                        .unwrap();
                }
            }
            dag.seal().unwrap();
            let mut pool: GpuPool<8> = GpuPool::new(Bandwidth::PerMs(2.0));
            for _ in 0..(1 + rng.below(6)) {
                pool.add_gpu(0.5 + rng.unit_f64()).unwrap();
            }
            let mut heft: Heft<64, 8> = Heft::new();
            let mut plan = Plan::new();
            heft.plan(&dag, &pool, &mut plan).unwrap();
            let mut ev: Evaluator<64, 8> = Evaluator::new();
            let evaluated = ev.evaluate(&dag, &pool, &plan).unwrap();
            assert!(
                evaluated <= heft.makespan_ms() + 1e-9,
                "case {case}: {evaluated} > {}",
                heft.makespan_ms()
            );
            assert!(ev.lower_bound(&dag, &pool).unwrap().ms() <= evaluated + 1e-9);
        }
    }
}
