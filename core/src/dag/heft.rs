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

const NIL: u32 = u32::MAX;

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
    makespan_ms: f64,
    rank: [f64; T],
    order: [u32; T],
    pos: [u32; T],
    start: [f64; T],
    finish: [f64; T],
    gpu: [u16; T],
    next: [u32; T],
    head: [u32; P],
}

impl<const T: usize, const P: usize> Default for Heft<T, P> {
    fn default() -> Self {
        Self::new()
    }
}

/// Where a task would run on one GPU: start, finish, and the list node it goes after.
#[derive(Clone, Copy)]
struct Slot {
    start: f64,
    finish: f64,
    after: u32,
}

impl<const T: usize, const P: usize> Heft<T, P> {
    /// Fresh scratch.
    pub const fn new() -> Self {
        Self {
            len: 0,
            makespan_ms: 0.0,
            rank: [0.0; T],
            order: [0; T],
            pos: [0; T],
            start: [0.0; T],
            finish: [0.0; T],
            gpu: [0; T],
            next: [NIL; T],
            head: [NIL; P],
        }
    }

    /// Upward ranks of the last run, indexed by task id. O(1).
    pub fn ranks(&self) -> &[f64] {
        &self.rank[..self.len]
    }

    /// HEFT's own start times (insertion-based) of the last run. O(1).
    pub fn start_ms(&self) -> &[f64] {
        &self.start[..self.len]
    }

    /// HEFT's own finish times of the last run. O(1).
    pub fn finish_ms(&self) -> &[f64] {
        &self.finish[..self.len]
    }

    /// HEFT's own makespan of the last run (the paper's number). O(1).
    pub fn makespan_ms(&self) -> f64 {
        self.makespan_ms
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
        self.head[..p].fill(NIL);
        self.makespan_ms = 0.0;
        for i in 0..n {
            let t = self.order[i] as usize;
            let mut best: Option<(usize, Slot)> = None;
            for g in 0..p {
                let slot = self.earliest_slot(dag, platform, t, g);
                if best.is_none_or(|(_, b)| slot.finish < b.finish) {
                    best = Some((g, slot));
                }
            }
            if let Some((g, slot)) = best {
                self.place(t, g, slot);
            }
        }
        self.len = n;
        Ok(self.makespan_ms)
    }

    /// Earliest insertion slot for task `t` on GPU `g`. O(fan-in + tasks on g).
    fn earliest_slot<const E: usize>(
        &self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
        g: usize,
    ) -> Slot {
        let (srcs, edges) = dag.preds(t);
        let mut ready = 0.0f64;
        for (&s, &e) in srcs.iter().zip(edges) {
            let s = s as usize;
            let from = usize::from(self.gpu[s]);
            ready = ready.max(self.finish[s] + platform.transfer_ms(dag.edge_data(e), from, g));
        }
        let run = platform.run_ms(t, dag.works_ms()[t], g);
        let mut prev_end = 0.0f64;
        let mut after = NIL;
        let mut cur = self.head[g];
        while cur != NIL {
            let c = cur as usize;
            let candidate = ready.max(prev_end);
            if candidate + run <= self.start[c] {
                return Slot {
                    start: candidate,
                    finish: candidate + run,
                    after,
                };
            }
            prev_end = self.finish[c];
            after = cur;
            cur = self.next[c];
        }
        let start = ready.max(prev_end);
        Slot {
            start,
            finish: start + run,
            after,
        }
    }

    /// Record task `t` on GPU `g` in `slot`, linking it into g's start-ordered list. O(1).
    fn place(&mut self, t: usize, g: usize, slot: Slot) {
        self.start[t] = slot.start;
        self.finish[t] = slot.finish;
        self.gpu[t] = g as u16;
        if slot.after == NIL {
            self.next[t] = self.head[g];
            self.head[g] = t as u32;
        } else {
            let a = slot.after as usize;
            self.next[t] = self.next[a];
            self.next[a] = t as u32;
        }
        self.makespan_ms = self.makespan_ms.max(slot.finish);
    }

    /// Turn the last schedule into a [`Plan`]: HEFT's GPUs, tasks by start time (ties by
    /// rank position). O(T log T).
    pub fn write_plan(&self, out: &mut Plan<T>) -> Result<(), PlanError> {
        let n = self.len;
        out.reset(n)?;
        let (gpus, order) = out.parts_mut();
        gpus.copy_from_slice(&self.gpu[..n]);
        order.copy_from_slice(&self.order[..n]);
        order.sort_unstable_by(|&a, &b| {
            self.start[a as usize]
                .total_cmp(&self.start[b as usize])
                .then(self.pos[a as usize].cmp(&self.pos[b as usize]))
        });
        Ok(())
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

    /// Fig. 2 of Topcuoglu, Hariri, Wu 2002: computation cost of T0..T9 on P0..P2.
    const COST: [[f64; 3]; 10] = [
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
    const EDGES: [(u32, u32, f64); 15] = [
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

    fn paper_example() -> (Dag<16, 32>, CostTable<16, 3, 3>) {
        let mut dag = Dag::new();
        let mut table = CostTable::new(Bandwidth::PerMs(1.0));
        for (t, row) in COST.iter().enumerate() {
            dag.add_task(0.0).unwrap();
            for (g, &c) in row.iter().enumerate() {
                table.set_run_ms(t, g, c).unwrap();
            }
        }
        for g in 0..3 {
            table.add_gpu(g).unwrap();
        }
        for &(a, b, c) in &EDGES {
            dag.add_edge(TaskId(a), TaskId(b), c).unwrap();
        }
        dag.seal().unwrap();
        (dag, table)
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
