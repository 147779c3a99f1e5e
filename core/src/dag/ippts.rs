//! IPPTS — Improved Predict Priority Task Scheduling (Djigal, Feng, Lu, Ge, IEEE TPDS
//! 32(5):1057–1071, 2021, doi:10.1109/TPDS.2020.3041829): a list scheduler that looks ahead in
//! both phases through a **predict cost matrix** (PCM). Implemented from the authors' public
//! code (github.com/Hamza-Djigal/IPPTS, `IPPTS.py`):
//!
//! 1. **PCM**, in reverse topological order, `PCM(exit, p_k) = w(exit, p_k)`:
//!    `PCM(t_i, p_k) = max_{t_j ∈ succ(t_i)} min_{p_w} [PCM(t_j, p_w) + w(t_j, p_w) +
//!    w(t_i, p_w) + c̄_ij]`, `c̄_ij = 0` when `p_w = p_k`, else the edge's transfer time. Unlike
//!    PEFT's OCT it counts the task's own cost on its successor's GPU. As for PEFT the inner
//!    minimum is `min(Y_k, min_w Y_w + c̄_ij)`, so the table costs O(E·P).
//! 2. **Priority** `Prank(t_i) = rank_PCM(t_i) · outdegree(t_i)`, `rank_PCM` = mean PCM row.
//!    Then, as in the authors' code, if `Prank(t_i)` is below that of its successor with the
//!    most successors `t_s` (the first such in edge order), `Prank(t_i) = Prank(t_s) + 1 /
//!    (T · outdegree(t_s))`. Tasks are taken from a ready list by highest `Prank` (ties: lowest
//!    id) — the authors' code walks the sorted list directly, which is the same order whenever
//!    that list is topological and a valid one when it is not.
//! 3. **Processor** minimising `LHET(t_i, p_k) = EFT(t_i, p_k) + PCM(t_i, p_k) − w(t_i, p_k)`
//!    (ties: lowest GPU).
//!
//! Differences from the authors' code, both for consistency with the other list schedulers
//! here: EFT uses **insertion** (the code appends at the end of a GPU's queue), and the mean
//! PCM is not rounded to two decimals (a rounding in the input's time unit).
//!
//! Cost: O(E·P + T·P·(fan-in + tasks per GPU) + T log T); memory `8·cells + 49·T + 12·P`
//! bytes (the PCM's `tasks × GPUs` cells in storage `S`, as for [`Peft`](super::Peft)).

use super::eval::{Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;
use super::planner::DagPlanner;
use super::slots::{ReadyList, Slot, SlotSchedule};

/// Fill `table[t·p + k]` with the PCM of `dag` on `platform` (module doc); `y` (≥ P cells)
/// is scratch. O(E·P).
fn predict_cost_matrix<const T: usize, const E: usize>(
    dag: &Dag<T, E>,
    platform: &impl Platform,
    table: &mut [f64],
    y: &mut [f64],
) {
    let p = platform.gpu_count();
    let works = dag.works_ms();
    let multi_gpu = p > 1;
    let bandwidth = platform.bandwidth();
    for &task in dag.topo_order().iter().rev() {
        let i = task as usize;
        let row = i * p;
        let (succs, edges) = dag.succs(i);
        if succs.is_empty() {
            for k in 0..p {
                table[row + k] = platform.run_ms(i, works[i], k);
            }
            continue;
        }
        table[row..row + p].fill(f64::NEG_INFINITY);
        for (&j, &e) in succs.iter().zip(edges) {
            let j = j as usize;
            let comm = if multi_gpu {
                bandwidth.transfer_ms(dag.edge_data(e))
            } else {
                0.0
            };
            let mut least = f64::INFINITY;
            for (w, cell) in y[..p].iter_mut().enumerate() {
                *cell = table[j * p + w]
                    + platform.run_ms(j, works[j], w)
                    + platform.run_ms(i, works[i], w);
                least = least.min(*cell);
            }
            for k in 0..p {
                let cell = y[k].min(least + comm);
                table[row + k] = table[row + k].max(cell);
            }
        }
    }
}

/// IPPTS with scratch for `T` tasks, `P` GPUs and its PCM in `S`. Reuse across calls.
#[derive(Clone, Debug)]
pub struct Ippts<const T: usize, const P: usize, S> {
    tasks: usize,
    gpus: usize,
    pcm: S,
    rank: [f64; T],
    y: [f64; P],
    ready: ReadyList<T>,
    schedule: SlotSchedule<T, P>,
}

impl<const T: usize, const P: usize, const C: usize> Default for Ippts<T, P, [f64; C]> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize, const P: usize, const C: usize> Ippts<T, P, [f64; C]> {
    /// Fresh scratch with an inline table of `C` cells.
    pub const fn new() -> Self {
        Self::with_table([0.0; C])
    }
}

impl<const T: usize, const P: usize, S: AsRef<[f64]> + AsMut<[f64]>> Ippts<T, P, S> {
    /// Fresh scratch around the caller's table storage (≥ tasks × GPUs cells; the host passes
    /// a buffer sized to the problem, firmware an array).
    pub const fn with_table(table: S) -> Self {
        Self {
            tasks: 0,
            gpus: 0,
            pcm: table,
            rank: [0.0; T],
            y: [0.0; P],
            ready: ReadyList::new(),
            schedule: SlotSchedule::new(),
        }
    }

    /// `Prank` of the last run, by task id. O(1).
    pub fn ranks(&self) -> &[f64] {
        &self.rank[..self.tasks]
    }

    /// `PCM(task, gpu)` of the last run (0 outside the problem). O(1).
    pub fn pcm_ms(&self, task: usize, gpu: usize) -> f64 {
        if task >= self.tasks || gpu >= self.gpus {
            return 0.0;
        }
        self.pcm.as_ref()[task * self.gpus + gpu]
    }

    /// IPPTS's own makespan of the last run (insertion-based). O(1).
    pub fn makespan_ms(&self) -> f64 {
        self.schedule.makespan_ms()
    }

    /// Run IPPTS and keep the schedule in this scratch (see the module doc for the cost).
    pub fn schedule<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> Result<f64, PlanError> {
        let (n, p) = check_sizes::<T, P, T, E>(dag, platform)?;
        let cells = self.pcm.as_ref().len();
        if n.saturating_mul(p) > cells {
            return Err(PlanError::TooManyTasks {
                capacity: cells / p,
            });
        }
        (self.tasks, self.gpus) = (n, p);
        predict_cost_matrix(dag, platform, self.pcm.as_mut(), &mut self.y);
        self.priorities(dag, n, p);
        let works = dag.works_ms();
        self.schedule.reset(n, p);
        self.ready.reset(dag, &self.rank[..n]);
        while let Some(task) = self.ready.pop(&self.rank[..n]) {
            let t = task as usize;
            let mut best: Option<(f64, usize, Slot)> = None;
            self.schedule.ready_all(dag, platform, t);
            for g in 0..p {
                let slot = self.schedule.prepared_slot(dag, platform, t, g);
                let lhet =
                    slot.finish + self.pcm.as_ref()[t * p + g] - platform.run_ms(t, works[t], g);
                if best.is_none_or(|(b, _, _)| lhet < b) {
                    best = Some((lhet, g, slot));
                }
            }
            if let Some((_, g, slot)) = best {
                self.schedule.place(t, g, slot);
            }
            self.ready.release(dag, t, &self.rank[..n]);
        }
        Ok(self.schedule.makespan_ms())
    }

    /// `Prank` with the authors' successor fix (module doc), in reverse topological order.
    /// O(T·P + E).
    fn priorities<const E: usize>(&mut self, dag: &Dag<T, E>, n: usize, p: usize) {
        for &task in dag.topo_order().iter().rev() {
            let i = task as usize;
            let succs = dag.succs(i).0;
            let mean = self.pcm.as_ref()[i * p..(i + 1) * p].iter().sum::<f64>() / p as f64;
            let mut rank = mean * succs.len() as f64;
            let mut widest: Option<(usize, usize)> = None;
            for &s in succs {
                let out = dag.succs(s as usize).0.len();
                if widest.is_none_or(|(_, w)| out > w) {
                    widest = Some((s as usize, out));
                }
            }
            if let Some((s, out)) = widest
                && out > 0
                && rank < self.rank[s]
            {
                rank = self.rank[s] + 1.0 / (n as f64 * out as f64);
            }
            self.rank[i] = rank;
        }
    }

    /// The last schedule as a [`Plan`] (GPUs, tasks by start time). O(T log T).
    pub fn write_plan(&self, out: &mut Plan<T>) -> Result<(), PlanError> {
        self.schedule.write_plan(out)
    }
}

impl<const T: usize, const E: usize, const P: usize, S: AsRef<[f64]> + AsMut<[f64]>>
    DagPlanner<T, E> for Ippts<T, P, S>
{
    fn name(&self) -> &'static str {
        "ippts"
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

    /// By hand on the authors' 6-task example (0 → 1 → 2 → {3, 4} → 5; costs on P0/P1 20/10,
    /// 5/10, 10/5, 5/10, 10/5, 5/10; transfers 1). `Y_w = PCM(j, w) + w(j, w) + w(i, w)`,
    /// `PCM(i, k) = max_j min(Y_k, min_w Y_w + 1)`:
    /// - PCM(5) = w(5) = [5, 10];
    /// - PCM(3): Y = [5+5+5, 10+10+10] = [15, 30] → [15, 16]; PCM(4): Y = [20, 25] → [20, 21];
    /// - PCM(2): via 3 Y = [30, 31] → [30, 31], via 4 Y = [40, 31] → [32, 31]; max = [32, 31];
    /// - PCM(1): Y = [32+10+5, 31+5+10] = [47, 46] → [47, 46];
    /// - PCM(0): Y = [47+5+20, 46+10+10] = [72, 66] → [67, 66].
    ///
    /// Prank = mean · outdegree: 66.5, 46.5, 31.5·2 = 63, 15.5, 20.5, 0; task 1 is below its
    /// successor 2 (the widest, outdegree 2), so Prank(1) = 63 + 1/(6·2). Order 0, 1, 2, 4, 3,
    /// 5. LHET = EFT + PCM − w: 0 → P1 (10 + 56 < 20 + 47); 1 → P1 (20 + 36 < 16 + 42) 10..20;
    /// 2 → P1 (25 + 26 < 31 + 22) 20..25; 4: P0 36 + 10 = P1 30 + 16 = 46, tie → P0 26..36;
    /// 3 → P1 (35 + 6 < 41 + 10) 25..35; 5 → P0 (36 + 5 < 37 + 10) 36..41. Makespan 41.
    #[test]
    fn hand_computed_pcm_ranks_and_schedule() {
        let (dag, table) = ippts_example();
        let mut ippts: Ippts<16, 2, [f64; 32]> = Ippts::new();
        let ms = ippts.schedule(&dag, &table).unwrap();
        let want = [
            [67.0, 66.0],
            [47.0, 46.0],
            [32.0, 31.0],
            [15.0, 16.0],
            [20.0, 21.0],
            [5.0, 10.0],
        ];
        for (t, row) in want.iter().enumerate() {
            assert_eq!(
                [ippts.pcm_ms(t, 0), ippts.pcm_ms(t, 1)],
                *row,
                "PCM row {t}"
            );
        }
        let rank = ippts.ranks();
        assert_eq!(rank[0], 66.5);
        assert_eq!(rank[1], 63.0 + 1.0 / 12.0);
        assert_eq!(&rank[2..], &[63.0, 15.5, 20.5, 0.0]);
        assert_eq!(ms, 41.0);
        let mut plan = Plan::new();
        ippts.write_plan(&mut plan).unwrap();
        assert_eq!(plan.gpus(), &[1, 1, 1, 1, 0, 0]);
        assert_eq!(evaluated_within(&dag, &table, &plan, ms), 41.0);
    }

    #[test]
    fn paper_example_plan_is_valid() {
        let (dag, table) = topcuoglu_example();
        let mut ippts: Ippts<16, 3, [f64; 30]> = Ippts::new();
        let ms = ippts.schedule(&dag, &table).unwrap();
        let mut plan = Plan::new();
        ippts.write_plan(&mut plan).unwrap();
        evaluated_within(&dag, &table, &plan, ms);
    }
}
