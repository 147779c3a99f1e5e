//! CPOP — Critical-Path-on-a-Processor (Topcuoglu, Hariri, Wu, IEEE TPDS 13(3), 2002, §4.2).
//!
//! 1. **Priority** `rank_u(i) + rank_d(i)`: HEFT's upward rank plus the downward rank
//!    `rank_d(i) = max_{p ∈ pred(i)} (rank_d(p) + w̄_p + c̄_pi)`, `rank_d(entry) = 0` (their
//!    Eq. 8), mean run and transfer times as in HEFT.
//! 2. **Critical path**: `|CP|` = the highest entry priority; from that entry follow the
//!    successor of highest priority (ties: lowest id) to an exit. Those tasks have priority
//!    `|CP|` (the paper's "priority = |CP|" test without a float equality).
//! 3. **Critical-path processor** `p_CP` = the GPU minimising the summed run time of the CP
//!    tasks (ties: lowest index).
//! 4. A ready list by priority (ties: lowest id); a CP task goes to `p_CP`, any other task to
//!    the GPU of earliest finish time; both with insertion, as in HEFT.
//!
//! The paper's example (its Fig. 2) gives makespan 86 (tested).
//! Cost: O(T·P + E + T·P·(fan-in + tasks per GPU) + T log T); memory `73·T + 4·P` bytes.

use super::eval::{Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;
use super::heft::upward_rank_order;
use super::planner::DagPlanner;
use super::slots::{ReadyList, SlotSchedule};

/// CPOP with scratch for `T` tasks and `P` GPUs. Reuse across calls.
#[derive(Clone, Debug)]
pub struct Cpop<const T: usize, const P: usize> {
    tasks: usize,
    cp_gpu: usize,
    rank_u: [f64; T],
    rank_d: [f64; T],
    priority: [f64; T],
    on_cp: [bool; T],
    order: [u32; T],
    pos: [u32; T],
    ready: ReadyList<T>,
    schedule: SlotSchedule<T, P>,
}

impl<const T: usize, const P: usize> Default for Cpop<T, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize, const P: usize> Cpop<T, P> {
    /// Fresh scratch.
    pub const fn new() -> Self {
        Self {
            tasks: 0,
            cp_gpu: 0,
            rank_u: [0.0; T],
            rank_d: [0.0; T],
            priority: [0.0; T],
            on_cp: [false; T],
            order: [0; T],
            pos: [0; T],
            ready: ReadyList::new(),
            schedule: SlotSchedule::new(),
        }
    }

    /// `rank_u + rank_d` of the last run, by task id. O(1).
    pub fn priorities(&self) -> &[f64] {
        &self.priority[..self.tasks]
    }

    /// Whether each task is on the critical path (last run). O(1).
    pub fn critical_path(&self) -> &[bool] {
        &self.on_cp[..self.tasks]
    }

    /// The critical-path processor of the last run. O(1).
    pub fn critical_path_gpu(&self) -> usize {
        self.cp_gpu
    }

    /// CPOP's own makespan of the last run (insertion-based). O(1).
    pub fn makespan_ms(&self) -> f64 {
        self.schedule.makespan_ms()
    }

    /// Run CPOP and keep the schedule in this scratch (see the module doc for the cost).
    pub fn schedule<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> Result<f64, PlanError> {
        let (n, p) = check_sizes::<T, P, T, E>(dag, platform)?;
        self.tasks = n;
        upward_rank_order(
            dag,
            platform,
            &mut self.rank_u,
            &mut self.order,
            &mut self.pos,
        )?;
        self.downward_ranks(dag, platform);
        for t in 0..n {
            self.priority[t] = self.rank_u[t] + self.rank_d[t];
        }
        self.mark_critical_path(dag);
        self.cp_gpu = self.critical_path_processor(dag, platform);
        self.schedule.reset(n, p);
        self.ready.reset(dag, &self.priority[..n]);
        while let Some(task) = self.ready.pop(&self.priority[..n]) {
            let t = task as usize;
            let (g, slot) = if self.on_cp[t] {
                let g = self.cp_gpu;
                (g, self.schedule.earliest_slot(dag, platform, t, g))
            } else {
                self.schedule.best_eft(dag, platform, t)
            };
            self.schedule.place(t, g, slot);
            self.ready.release(dag, t, &self.priority[..n]);
        }
        Ok(self.schedule.makespan_ms())
    }

    /// `rank_d` in topological order (module doc). O(T·P + E).
    fn downward_ranks<const E: usize>(&mut self, dag: &Dag<T, E>, platform: &impl Platform) {
        let multi_gpu = platform.gpu_count() > 1;
        let bandwidth = platform.bandwidth();
        let works = dag.works_ms();
        for &task in dag.topo_order() {
            let t = task as usize;
            let (srcs, edges) = dag.preds(t);
            let mut rank = 0.0f64;
            for (&s, &e) in srcs.iter().zip(edges) {
                let s = s as usize;
                let comm = if multi_gpu {
                    bandwidth.transfer_ms(dag.edge_data(e))
                } else {
                    0.0
                };
                rank = rank.max(self.rank_d[s] + platform.mean_run_ms(s, works[s]) + comm);
            }
            self.rank_d[t] = rank;
        }
    }

    /// Mark the critical path: from the entry task of highest priority, follow the successor
    /// of highest priority (ties: lowest id) to an exit. O(T + E).
    fn mark_critical_path<const E: usize>(&mut self, dag: &Dag<T, E>) {
        let n = self.tasks;
        self.on_cp[..n].fill(false);
        let higher = |a: usize, b: Option<usize>, pr: &[f64]| match b {
            None => true,
            Some(b) => pr[a] > pr[b] || (pr[a] == pr[b] && a < b),
        };
        let mut entry = None;
        for t in (0..n).filter(|&t| dag.fan_in(t) == 0) {
            if higher(t, entry, &self.priority) {
                entry = Some(t);
            }
        }
        let mut cur = entry;
        // A path visits each task at most once: at most n steps.
        for _ in 0..n {
            let Some(t) = cur else { break };
            self.on_cp[t] = true;
            let mut next = None;
            for &s in dag.succs(t).0 {
                if higher(s as usize, next, &self.priority) {
                    next = Some(s as usize);
                }
            }
            cur = next;
        }
    }

    /// The GPU with the least summed run time of the critical-path tasks (ties: lowest).
    /// O(T·P).
    fn critical_path_processor<const E: usize>(
        &self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> usize {
        let works = dag.works_ms();
        let mut best = (0usize, f64::INFINITY);
        for g in 0..platform.gpu_count() {
            let total: f64 = (0..self.tasks)
                .filter(|&t| self.on_cp[t])
                .map(|t| platform.run_ms(t, works[t], g))
                .sum();
            if total < best.1 {
                best = (g, total);
            }
        }
        best.0
    }

    /// The last schedule as a [`Plan`] (GPUs, tasks by start time). O(T log T).
    pub fn write_plan(&self, out: &mut Plan<T>) -> Result<(), PlanError> {
        self.schedule.write_plan(out)
    }
}

impl<const T: usize, const E: usize, const P: usize> DagPlanner<T, E> for Cpop<T, P> {
    fn name(&self) -> &'static str {
        "cpop"
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::test_support::{evaluated_within, topcuoglu_example};

    /// Topcuoglu et al. 2002, Fig. 2 and §4.2: |CP| = rank_u(n1) = 108; the critical path is
    /// n1 → n2 → n9 → n10 (0-based 0, 1, 8, 9); its summed costs are 14+13+18+21 = 66 on P1,
    /// 16+19+12+7 = 54 on P2 and 9+18+20+16 = 63 on P3, so the CP processor is P2 (index 1);
    /// makespan 86 (their Fig. 3b).
    #[test]
    fn golden_topcuoglu_2002_makespan_86() {
        let (dag, table) = topcuoglu_example();
        let mut cpop: Cpop<16, 3> = Cpop::new();
        let ms = cpop.schedule(&dag, &table).unwrap();
        assert!((cpop.priorities()[0] - 108.0).abs() < 1e-9);
        let on_cp: [bool; 10] = core::array::from_fn(|t| cpop.critical_path()[t]);
        let mut want = [false; 10];
        for t in [0, 1, 8, 9] {
            want[t] = true;
        }
        assert_eq!(on_cp, want);
        assert_eq!(cpop.critical_path_gpu(), 1);
        assert_eq!(ms, 86.0);
        let mut plan = Plan::new();
        cpop.write_plan(&mut plan).unwrap();
        for t in [0, 1, 8, 9] {
            assert_eq!(plan.gpus()[t], 1, "CP task {t} on the CP processor");
        }
        evaluated_within(&dag, &table, &plan, ms);
    }
}
