//! Lookahead HEFT (Bittencourt, Sakellariou, Madeira, "DAG Scheduling Using a Lookahead
//! Variant of the Heterogeneous Earliest Finish Time Algorithm", PDP 2010).
//!
//! HEFT's upward-rank order, but a task does not simply go to its earliest-finish GPU: for
//! each candidate GPU g the task is placed on g (insertion, as HEFT), then its children are
//! placed one by one in rank order, each on its own earliest-finish GPU (HEFT's rule, with
//! insertion; a child's ready time counts only its placed parents, as in the paper). The task
//! goes to the GPU minimising the **largest finish time among its children** (a task without
//! children: its own finish time). Ties: the earlier finish of the task itself, then the
//! lowest GPU. Every tentative placement is undone before the next candidate.
//!
//! # Bounds (ours; the paper has none)
//! The paper's cost is O(T·P·c·P·(fan-in + tasks per GPU)) for c children per task, which is
//! beyond reach at 10,000 tasks × 500 GPUs × 100 children. [`LookaheadConfig`] bounds it:
//! - `candidate_gpus`: only the task's this-many GPUs of earliest finish are tried (ties:
//!   lowest index); the others cannot win unless their children gain back the difference.
//! - `max_children`: only the task's this-many highest-ranked children are looked at.
//!
//! `0` means "all", the paper's algorithm, and is the default ([`LookaheadConfig::PAPER`]);
//! tested equal to an unbounded run on small DAGs. [`LookaheadConfig::for_size`] is the
//! rule the host uses when the caller gives no bounds (and prints what it used).
//!
//! Memory `57·T + 4·P + 8·P` bytes.

use super::eval::{Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;
use super::heft::upward_rank_order;
use super::planner::DagPlanner;
use super::slots::{Slot, SlotSchedule, Undo};

/// Bounds on the lookahead (module doc). `0` = unbounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LookaheadConfig {
    /// GPUs tried per task: its this-many earliest-finish GPUs (0 = all).
    pub candidate_gpus: usize,
    /// Children looked at per task: the this-many highest-ranked (0 = all).
    pub max_children: usize,
}

impl LookaheadConfig {
    /// The paper's algorithm: every GPU, every child.
    pub const PAPER: Self = Self {
        candidate_gpus: 0,
        max_children: 0,
    };
}

impl LookaheadConfig {
    /// Lookahead work (tasks × GPUs × mean fan-out × GPUs) up to which
    /// [`for_size`](Self::for_size) keeps the paper's unbounded algorithm.
    pub const UNBOUNDED_UP_TO: u64 = 1 << 27;

    /// The paper's algorithm when `tasks · gpus · max(1, edges / tasks) · gpus` ≤
    /// [`UNBOUNDED_UP_TO`](Self::UNBOUNDED_UP_TO) (every STG, TPC-H and small WORL input),
    /// else 8 candidate GPUs and 8 children (10,000 tasks × 500 GPUs at fan-in 100: ~18 s
    /// instead of days). O(1).
    pub fn for_size(tasks: usize, edges: usize, gpus: usize) -> Self {
        let fan_out = (edges / tasks.max(1)).max(1) as u64;
        let (t, p) = (tasks as u64, gpus as u64);
        let work = t
            .saturating_mul(p)
            .saturating_mul(fan_out)
            .saturating_mul(p);
        if work <= Self::UNBOUNDED_UP_TO {
            Self::PAPER
        } else {
            Self {
                candidate_gpus: 8,
                max_children: 8,
            }
        }
    }
}

impl Default for LookaheadConfig {
    fn default() -> Self {
        Self::PAPER
    }
}

/// Lookahead HEFT with scratch for `T` tasks and `P` GPUs. Reuse across calls.
#[derive(Clone, Debug)]
pub struct HeftLookahead<const T: usize, const P: usize> {
    config: LookaheadConfig,
    tasks: usize,
    rank: [f64; T],
    order: [u32; T],
    pos: [u32; T],
    children: [u32; T],
    undo: [Option<Undo>; T],
    candidates: [(f64, u16); P],
    finishes: [f64; P],
    schedule: SlotSchedule<T, P>,
}

impl<const T: usize, const P: usize> Default for HeftLookahead<T, P> {
    fn default() -> Self {
        Self::new(LookaheadConfig::PAPER)
    }
}

impl<const T: usize, const P: usize> HeftLookahead<T, P> {
    /// Fresh scratch with these bounds.
    pub const fn new(config: LookaheadConfig) -> Self {
        Self {
            config,
            tasks: 0,
            rank: [0.0; T],
            order: [0; T],
            pos: [0; T],
            children: [0; T],
            undo: [None; T],
            candidates: [(0.0, 0); P],
            finishes: [0.0; P],
            schedule: SlotSchedule::new(),
        }
    }

    /// The bounds. O(1).
    pub fn config(&self) -> LookaheadConfig {
        self.config
    }

    /// Its own makespan of the last run (insertion-based). O(1).
    pub fn makespan_ms(&self) -> f64 {
        self.schedule.makespan_ms()
    }

    /// Run the lookahead HEFT and keep the schedule in this scratch. O(T·k·c·P·(fan-in +
    /// tasks per GPU)) for k candidate GPUs and c children.
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
            &mut self.rank,
            &mut self.order,
            &mut self.pos,
        )?;
        self.schedule.reset(n, p);
        for i in 0..n {
            let t = self.order[i] as usize;
            let k = self.rank_candidates(dag, platform, t, p);
            let children = self.sort_children(dag, t);
            let mut best: Option<(f64, f64, usize, Slot)> = None;
            for c in 0..k {
                let g = usize::from(self.candidates[c].1);
                let slot = self.schedule.earliest_slot(dag, platform, t, g);
                let score = self.children_finish(dag, platform, t, g, slot, children);
                let better = match best {
                    None => true,
                    Some((s, f, bg, _)) => {
                        score < s
                            || (score == s && (slot.finish < f || (slot.finish == f && g < bg)))
                    }
                };
                if better {
                    best = Some((score, slot.finish, g, slot));
                }
            }
            if let Some((_, _, g, slot)) = best {
                self.schedule.place(t, g, slot);
            }
        }
        Ok(self.schedule.makespan_ms())
    }

    /// Fill `candidates[..k]` with task `t`'s earliest-finish GPUs (all of them unbounded),
    /// sorted by finish, ties lowest index; returns k. O(fan-in + P + placed + P log P).
    fn rank_candidates<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
        p: usize,
    ) -> usize {
        self.schedule
            .all_finishes(dag, platform, t, &mut self.finishes[..p]);
        for g in 0..p {
            self.candidates[g] = (self.finishes[g], g as u16);
        }
        let k = match self.config.candidate_gpus {
            0 => p,
            k => k.min(p),
        };
        if k < p {
            self.candidates[..p].sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        }
        k
    }

    /// Put task `t`'s children in `children` by rank position (HEFT's order), keeping the
    /// first `max_children`; returns how many. O(c log c).
    fn sort_children<const E: usize>(&mut self, dag: &Dag<T, E>, t: usize) -> usize {
        let succs = dag.succs(t).0;
        let c = succs.len();
        self.children[..c].copy_from_slice(succs);
        let pos = &self.pos;
        self.children[..c].sort_unstable_by_key(|&s| pos[s as usize]);
        // Duplicate edges name a child twice: keep it once.
        let mut kept = 0;
        for i in 0..c {
            if kept == 0 || self.children[kept - 1] != self.children[i] {
                self.children[kept] = self.children[i];
                kept += 1;
            }
        }
        match self.config.max_children {
            0 => kept,
            m => m.min(kept),
        }
    }

    /// Place `t` on `g` in `slot`, then its first `children` children on their EFT GPUs;
    /// return the largest child finish (t's own finish without children) and undo all.
    fn children_finish<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
        g: usize,
        slot: Slot,
        children: usize,
    ) -> f64 {
        if children == 0 {
            return slot.finish;
        }
        let own = self.schedule.place(t, g, slot);
        let mut worst = f64::NEG_INFINITY;
        for c in 0..children {
            let child = self.children[c] as usize;
            let (h, s) = self.schedule.best_eft(dag, platform, child);
            worst = worst.max(s.finish);
            self.undo[c] = Some(self.schedule.place(child, h, s));
        }
        for c in (0..children).rev() {
            if let Some(u) = self.undo[c].take() {
                self.schedule.unplace(u);
            }
        }
        self.schedule.unplace(own);
        worst
    }

    /// The last schedule as a [`Plan`] (GPUs, tasks by start time). O(T log T).
    pub fn write_plan(&self, out: &mut Plan<T>) -> Result<(), PlanError> {
        self.schedule.write_plan(out)
    }
}

impl<const T: usize, const E: usize, const P: usize> DagPlanner<T, E> for HeftLookahead<T, P> {
    fn name(&self) -> &'static str {
        "heft-lookahead"
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
    use crate::dag::Heft;
    use crate::dag::test_support::{cost_table_problem, evaluated_within, topcuoglu_example};

    /// By hand: A → B with transfer 5; A costs 5 on P0 and 6 on P1, B costs 10 and 2. HEFT
    /// puts A on P0 (5 < 6), then B on P1 (5 + 5 + 2 = 12 < 5 + 10): makespan 12. The
    /// lookahead tries A on P0 (child B's best finish 12) and on P1 (B on P1: 6 + 2 = 8) and
    /// keeps P1: makespan 8.
    #[test]
    fn lookahead_sees_the_child_heft_does_not() {
        let (dag, table) = cost_table_problem(&[[5.0, 6.0], [10.0, 2.0]], &[(0, 1, 5.0)]);
        let mut heft: Heft<16, 2> = Heft::new();
        assert_eq!(heft.schedule(&dag, &table).unwrap(), 12.0);
        let mut la: HeftLookahead<16, 2> = HeftLookahead::default();
        let ms = la.schedule(&dag, &table).unwrap();
        assert_eq!(ms, 8.0);
        let mut plan = Plan::new();
        la.write_plan(&mut plan).unwrap();
        assert_eq!(plan.gpus(), &[1, 1]);
        assert_eq!(evaluated_within(&dag, &table, &plan, ms), 8.0);
        // Bounded to the single earliest-finish GPU, it is HEFT again.
        let mut one = HeftLookahead::<16, 2>::new(LookaheadConfig {
            candidate_gpus: 1,
            max_children: 0,
        });
        assert_eq!(one.schedule(&dag, &table).unwrap(), 12.0);
    }

    /// Bounds at least as large as the problem are the paper's algorithm; every plan is valid
    /// and evaluates no later than the lookahead's own schedule.
    #[test]
    fn large_bounds_equal_the_unbounded_algorithm() {
        let (dag, table) = topcuoglu_example();
        let mut paper: HeftLookahead<16, 3> = HeftLookahead::default();
        let ms = paper.schedule(&dag, &table).unwrap();
        let mut wide = HeftLookahead::<16, 3>::new(LookaheadConfig {
            candidate_gpus: 3,
            max_children: 10,
        });
        assert_eq!(wide.schedule(&dag, &table).unwrap(), ms);
        let (mut a, mut b) = (Plan::new(), Plan::new());
        paper.write_plan(&mut a).unwrap();
        wide.write_plan(&mut b).unwrap();
        assert_eq!(a.gpus(), b.gpus());
        assert_eq!(a.order(), b.order());
        evaluated_within(&dag, &table, &a, ms);
    }
}
