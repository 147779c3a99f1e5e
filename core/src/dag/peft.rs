//! PEFT — Predict Earliest Finish Time (Arabnejad & Barbosa, IEEE TPDS 25(3):682–694, 2014).
//!
//! 1. **Optimistic cost table** (their Eq. 6), in reverse topological order, `OCT(exit, ·) = 0`:
//!    `OCT(t_i, p_k) = max_{t_j ∈ succ(t_i)} min_{p_w} [OCT(t_j, p_w) + w(t_j, p_w) + c̄_ij]`,
//!    with `c̄_ij = 0` when `p_w = p_k`, else the mean transfer time of the edge (`data /
//!    bandwidth`, as HEFT's rank; 0 on one GPU). "Optimistic": GPU availability is ignored.
//!    The inner minimum is `min(X_k, min_w X_w + c̄_ij)` with `X_w = OCT(t_j, p_w) + w(t_j,
//!    p_w)` (the best other GPU pays the transfer, GPU k itself does not), so the table costs
//!    O(E·P) instead of the paper's O(E·P²).
//! 2. **Priority** `rank_oct(t_i)` = mean of OCT over the GPUs (their Eq. 7). A ready list:
//!    at each step the ready task with the highest `rank_oct` (ties: lowest id).
//! 3. **Processor** minimising `O_EFT(t_i, p_j) = EFT(t_i, p_j) + OCT(t_i, p_j)` (their Eq.
//!    8), EFT with insertion as in HEFT (ties: lowest GPU).
//!
//! The table is `tasks × GPUs` cells in storage `S` (`T·P` cannot be a const generic on
//! stable Rust): an inline `[f64; C]` ([`Peft::new`]) or any buffer the caller owns
//! ([`Peft::with_table`]); a table too small is refused with `TooManyTasks`.
//! Cost: O(E·P + T·P·(fan-in + tasks per GPU) + T log T); memory `8·cells + 49·T + 4·P` bytes.

use super::eval::{Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;
use super::planner::DagPlanner;
use super::slots::{ReadyList, SlotSchedule};

/// Fill `table[t·p + k]` with PEFT's optimistic cost table of `dag` on `platform` (module
/// doc), using `best` (one cell per task) as scratch for `min_w X_w`. O(E·P + T·P).
pub(crate) fn optimistic_cost_table<const T: usize, const E: usize>(
    dag: &Dag<T, E>,
    platform: &impl Platform,
    table: &mut [f64],
    best: &mut [f64],
) {
    let p = platform.gpu_count();
    let works = dag.works_ms();
    let multi_gpu = p > 1;
    let bandwidth = platform.bandwidth();
    for &task in dag.topo_order().iter().rev() {
        let i = task as usize;
        let row = i * p;
        table[row..row + p].fill(0.0);
        let (succs, edges) = dag.succs(i);
        for (&j, &e) in succs.iter().zip(edges) {
            let j = j as usize;
            let comm = if multi_gpu {
                bandwidth.transfer_ms(dag.edge_data(e))
            } else {
                0.0
            };
            for k in 0..p {
                let own = table[j * p + k] + platform.run_ms(j, works[j], k);
                let cell = own.min(best[j] + comm);
                table[row + k] = table[row + k].max(cell);
            }
        }
        best[i] = (0..p)
            .map(|k| table[row + k] + platform.run_ms(i, works[i], k))
            .fold(f64::INFINITY, f64::min);
    }
}

/// PEFT with scratch for `T` tasks, `P` GPUs and its cost table in `S`. Reuse across calls.
#[derive(Clone, Debug)]
pub struct Peft<const T: usize, const P: usize, S> {
    tasks: usize,
    gpus: usize,
    oct: S,
    rank: [f64; T],
    best: [f64; T],
    ready: ReadyList<T>,
    schedule: SlotSchedule<T, P>,
}

impl<const T: usize, const P: usize, const C: usize> Default for Peft<T, P, [f64; C]> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize, const P: usize, const C: usize> Peft<T, P, [f64; C]> {
    /// Fresh scratch with an inline table of `C` cells.
    pub const fn new() -> Self {
        Self::with_table([0.0; C])
    }
}

impl<const T: usize, const P: usize, S: AsRef<[f64]> + AsMut<[f64]>> Peft<T, P, S> {
    /// Fresh scratch around the caller's table storage (≥ tasks × GPUs cells; the host passes
    /// a buffer sized to the problem, firmware an array).
    pub const fn with_table(table: S) -> Self {
        Self {
            tasks: 0,
            gpus: 0,
            oct: table,
            rank: [0.0; T],
            best: [0.0; T],
            ready: ReadyList::new(),
            schedule: SlotSchedule::new(),
        }
    }

    /// `rank_oct` of the last run, by task id. O(1).
    pub fn ranks(&self) -> &[f64] {
        &self.rank[..self.tasks]
    }

    /// `OCT(task, gpu)` of the last run (0 outside the problem). O(1).
    pub fn oct_ms(&self, task: usize, gpu: usize) -> f64 {
        if task >= self.tasks || gpu >= self.gpus {
            return 0.0;
        }
        self.oct.as_ref()[task * self.gpus + gpu]
    }

    /// PEFT's own makespan of the last run (insertion-based). O(1).
    pub fn makespan_ms(&self) -> f64 {
        self.schedule.makespan_ms()
    }

    /// Run PEFT and keep the schedule in this scratch (see the module doc for the cost).
    pub fn schedule<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> Result<f64, PlanError> {
        let (n, p) = check_sizes::<T, P, T, E>(dag, platform)?;
        let cells = self.oct.as_ref().len();
        if n.saturating_mul(p) > cells {
            return Err(PlanError::TooManyTasks {
                capacity: cells / p,
            });
        }
        (self.tasks, self.gpus) = (n, p);
        optimistic_cost_table(dag, platform, self.oct.as_mut(), &mut self.best);
        for t in 0..n {
            self.rank[t] = self.oct.as_ref()[t * p..(t + 1) * p].iter().sum::<f64>() / p as f64;
        }
        self.schedule.reset(n, p);
        self.ready.reset(dag, &self.rank[..n]);
        while let Some(task) = self.ready.pop(&self.rank[..n]) {
            let t = task as usize;
            let mut best: Option<(f64, usize, super::slots::Slot)> = None;
            self.schedule.ready_all(dag, platform, t);
            for g in 0..p {
                let slot = self.schedule.prepared_slot(dag, platform, t, g);
                let o_eft = slot.finish + self.oct.as_ref()[t * p + g];
                if best.is_none_or(|(b, _, _)| o_eft < b) {
                    best = Some((o_eft, g, slot));
                }
            }
            if let Some((_, g, slot)) = best {
                self.schedule.place(t, g, slot);
            }
            self.ready.release(dag, t, &self.rank[..n]);
        }
        Ok(self.schedule.makespan_ms())
    }

    /// The last schedule as a [`Plan`] (GPUs, tasks by start time). O(T log T).
    pub fn write_plan(&self, out: &mut Plan<T>) -> Result<(), PlanError> {
        self.schedule.write_plan(out)
    }
}

impl<const T: usize, const E: usize, const P: usize, S: AsRef<[f64]> + AsMut<[f64]>>
    DagPlanner<T, E> for Peft<T, P, S>
{
    fn name(&self) -> &'static str {
        "peft"
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
    use crate::dag::test_support::{evaluated_within, ippts_example, topcuoglu_example};

    /// By hand on the 6-task chain 0 → 1 → 2 → {3, 4} → 5 (costs on P0/P1: 20/10, 5/10,
    /// 10/5, 5/10, 10/5, 5/10; every transfer 1). With `X_j = OCT(j) + w(j)` and `m_j` its
    /// minimum, `OCT(i, k) = max_j min(X_j[k], m_j + 1)`:
    /// - OCT(5) = [0, 0], X5 = [5, 10], m5 = 5;
    /// - OCT(3) = [min(5, 6), min(10, 6)] = [5, 6], X3 = [10, 16]; OCT(4) = [5, 6], X4 = [15, 11];
    /// - OCT(2) = [max(min(10, 11), min(15, 12)), max(min(16, 11), min(11, 12))] = [12, 11];
    /// - OCT(1) = [min(22, 17), min(16, 17)] = [17, 16]; OCT(0) = [min(22, 23), min(26, 23)]
    ///   = [22, 23].
    ///
    /// Schedule by O_EFT = EFT + OCT: 0 → P1 (10 + 23 < 20 + 22) 0..10; 1 → P0 (16 + 17 < 20 +
    /// 16) 11..16; 2 → P1 (22 + 11 < 26 + 12) 17..22; 3 (rank 5.5 = 4's, lower id) → P0 (28 +
    /// 5 < 32 + 6) 23..28; 4 → P1 (27 + 6 < 38 + 5) 22..27; 5 → P0 (33 < 39) 28..33.
    #[test]
    fn hand_computed_oct_ranks_and_schedule() {
        let (dag, table) = ippts_example();
        let mut peft: Peft<16, 2, [f64; 32]> = Peft::new();
        let ms = peft.schedule(&dag, &table).unwrap();
        let want = [
            [22.0, 23.0],
            [17.0, 16.0],
            [12.0, 11.0],
            [5.0, 6.0],
            [5.0, 6.0],
            [0.0, 0.0],
        ];
        for (t, row) in want.iter().enumerate() {
            assert_eq!([peft.oct_ms(t, 0), peft.oct_ms(t, 1)], *row, "OCT row {t}");
        }
        assert_eq!(peft.ranks(), &[22.5, 16.5, 11.5, 5.5, 5.5, 0.0]);
        assert_eq!(ms, 33.0);
        let mut plan = Plan::new();
        peft.write_plan(&mut plan).unwrap();
        assert_eq!(plan.gpus(), &[1, 0, 1, 0, 1, 0]);
        assert_eq!(plan.order(), &[0, 1, 2, 4, 3, 5]);
        assert_eq!(evaluated_within(&dag, &table, &plan, ms), 33.0);
    }

    #[test]
    fn paper_example_plan_is_valid_and_table_capacity_is_checked() {
        let (dag, table) = topcuoglu_example();
        let mut peft: Peft<16, 3, [f64; 30]> = Peft::new();
        let ms = peft.schedule(&dag, &table).unwrap();
        let mut plan = Plan::new();
        peft.write_plan(&mut plan).unwrap();
        evaluated_within(&dag, &table, &plan, ms);
        let mut small: Peft<16, 3, [f64; 29]> = Peft::new();
        assert_eq!(
            small.schedule(&dag, &table),
            Err(PlanError::TooManyTasks { capacity: 9 })
        );
    }
}
