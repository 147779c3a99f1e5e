//! Critical-path local search on a plan, every move evaluated incrementally
//! ([`IncrementalSchedule`]).
//!
//! # The neighbourhood
//! Only a task on the critical path can shorten the makespan directly, so each pass walks the
//! current critical path (by default its last task first, [`LocalSearchConfig::latest_first`]:
//! a move of a late task re-evaluates only the tasks after it, so far more moves fit in a
//! work limit on 10,000-task plans) and, for each task `x`, considers every
//! **relocation**: `x` on any GPU `g`, at any place of g's sequence that keeps the order
//! topological (between `x`'s last predecessor and first successor in the plan's order).
//! That covers moving `x` to another GPU, into an idle gap there (HEFT's insertion), and
//! swapping it ahead of a task on its own GPU. Each candidate gets an estimate from the
//! current times, `max(ready_g(x), finish of the task before it on g) + run(x, g)`; only
//! candidates whose estimate beats `x`'s current finish are kept, the
//! [`LocalSearchConfig::candidates`] best of them are evaluated exactly (incrementally), and
//! the first that lowers (makespan, sum of finish times) lexicographically is kept (the sum
//! lets the search cross plateaus of equal makespan; a move must lower it by more than a
//! relative 1e-12 to count, so rounding cannot make the search cycle). A pass without an
//! accepted move ends the search: a local optimum.
//!
//! # Swaps
//! When no shortlisted relocation of `x` improves, the search tries **swaps** (up to
//! [`LocalSearchConfig::swaps`]): `x` takes the place of a task `y` on another GPU (just
//! before y in y's sequence) and y takes x's old place on x's GPU. Only tasks y strictly
//! inside x's window are candidates, so neither depends on the other. A swap keeps both
//! GPUs' loads nearly as they were, which a single relocation cannot: on packed plans (every
//! GPU busy to the end) moving `x` alone lengthens its new GPU's queue, while trading it for
//! a task of similar length does not. A candidate needs x's relocation estimate to beat x's
//! finish and y's estimate in x's place, `max(y's inputs there, finish of x's GPU
//! predecessor) + run(y, x's GPU)`, to beat the makespan; candidates are ranked by x's
//! estimate plus y's estimated delay, and evaluated exactly as two stacked relocations
//! (undone in reverse order; skipped when the second might not fit the undo journal,
//! [`IncrementalSchedule::journal_room`]).
//!
//! # Kicks
//! [`LocalSearch::kick`] perturbs a plan for an iterated local search (the WOA's
//! intensification): a few random critical tasks each make one of their shortlisted moves,
//! relocation or swap, although it does not improve.
//!
//! This is the classic move set of list-schedule local search (e.g. the critical-path
//! reassignment of Wu, Shu & Gu, "Efficient local search for DAG scheduling", IEEE TPDS
//! 12(6), 2001), here with insertion positions and exact incremental evaluation.
//!
//! # Cost
//! Gathering candidates for one task is O(fan-in + P + distance back to the last task of each
//! GPU + window size); an evaluation is what [`IncrementalSchedule::relocate`] sweeps. All of
//! it is counted in work units, and [`LocalSearch::improve`] stops when its `work_limit` is
//! spent: deterministic for a given input, whatever the machine.

use super::eval::{Evaluator, Plan, PlanError};
use super::gpus::Platform;
use super::graph::Dag;
use super::incremental::{IncrementalSchedule, Move};
use crate::rng::SeededRng;

/// Most candidates evaluated exactly per critical task (the capacity of the shortlist).
pub const MAX_CANDIDATES: usize = 64;

/// Local-search settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalSearchConfig {
    /// Candidates evaluated exactly per critical task, best estimate first (1 to
    /// [`MAX_CANDIDATES`]).
    pub candidates: usize,
    /// Swaps evaluated exactly per critical task when none of its relocations improves
    /// (module doc, "Swaps"; 0 to [`MAX_CANDIDATES`]; 0: relocations only).
    pub swaps: usize,
    /// Try the critical path's tasks from the last one back (else from the first): a move
    /// of a late task re-evaluates fewer tasks, so more moves fit in a work limit.
    pub latest_first: bool,
}

impl LocalSearchConfig {
    /// Four relocations and four swaps per critical task, latest task first.
    pub const fn new() -> Self {
        Self {
            candidates: 4,
            swaps: 4,
            latest_first: true,
        }
    }
}

impl Default for LocalSearchConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// What one [`LocalSearch::improve`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalSearchStats {
    /// Makespan before.
    pub initial_ms: f64,
    /// Makespan after.
    pub final_ms: f64,
    /// Moves evaluated exactly.
    pub evaluated: u64,
    /// Moves kept.
    pub accepted: u64,
    /// Work units spent.
    pub work: u64,
    /// Whether it stopped at a local optimum (else the work limit ended it).
    pub local_optimum: bool,
}

/// One shortlisted move: its score (the estimated finish of the task; for a swap plus the
/// other task's estimated delay), GPU, position (in the order without the task) and, for a
/// swap, the task whose place it takes ([`NO_TASK`] for a relocation).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Candidate {
    estimate: f64,
    gpu: u16,
    to: u32,
    other: u32,
}

/// [`Candidate::other`] of a relocation.
const NO_TASK: u32 = u32::MAX;

const NO_CANDIDATE: Candidate = Candidate {
    estimate: 0.0,
    gpu: 0,
    to: 0,
    other: NO_TASK,
};

/// The local search with scratch for `T` tasks and `P` GPUs.
#[derive(Clone, Debug)]
pub struct LocalSearch<const T: usize, const P: usize> {
    config: LocalSearchConfig,
    schedule: IncrementalSchedule<T, P>,
    eval: Evaluator<T, P>,
    path: [u32; T],
    ready: [f64; P],
    last: [f64; P],
    seen: [bool; P],
    shortlist: [Candidate; MAX_CANDIDATES],
    listed: usize,
    swaplist: [Candidate; MAX_CANDIDATES],
    swaps_listed: usize,
    scan_work: u64,
}

impl<const T: usize, const P: usize> LocalSearch<T, P> {
    /// Fresh scratch.
    pub const fn new(config: LocalSearchConfig) -> Self {
        Self {
            config,
            schedule: IncrementalSchedule::new(),
            eval: Evaluator::new(),
            path: [0; T],
            ready: [0.0; P],
            last: [0.0; P],
            seen: [false; P],
            shortlist: [NO_CANDIDATE; MAX_CANDIDATES],
            listed: 0,
            swaplist: [NO_CANDIDATE; MAX_CANDIDATES],
            swaps_listed: 0,
            scan_work: 0,
        }
    }

    /// The settings. O(1).
    pub fn config(&self) -> LocalSearchConfig {
        self.config
    }

    /// Change the settings (the scratch stays). O(1).
    pub fn set_config(&mut self, config: LocalSearchConfig) {
        self.config = config;
    }

    /// Improve `plan` in place until a local optimum or until `work_limit` units are spent;
    /// the result is never worse than the input. Errors only on an invalid plan.
    pub fn improve<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        plan: &mut Plan<T>,
        work_limit: u64,
    ) -> Result<LocalSearchStats, PlanError> {
        let start_work = self.work_total();
        let initial = self.schedule.load(dag, platform, plan, &mut self.eval)?;
        let mut stats = LocalSearchStats {
            initial_ms: initial,
            final_ms: initial,
            ..LocalSearchStats::default()
        };
        let spent = |s: &Self| s.work_total().saturating_sub(start_work);
        let n = dag.task_count();
        // Every accepted move lowers (makespan, sum); the work limit bounds the loop anyway,
        // and so does this cap on passes.
        for _ in 0..n.saturating_mul(64).max(64) {
            if spent(self) >= work_limit {
                break;
            }
            let len = self
                .schedule
                .critical_path(dag, platform, &mut self.path[..n]);
            self.scan_work += len as u64;
            let mut moved = false;
            for j in 0..len {
                if spent(self) >= work_limit {
                    break;
                }
                let i = if self.config.latest_first {
                    j
                } else {
                    len - 1 - j
                };
                let x = self.path[i] as usize;
                let left = work_limit.saturating_sub(spent(self));
                if self.try_task(dag, platform, x, &mut stats, left)? {
                    moved = true;
                    break;
                }
            }
            if !moved {
                stats.local_optimum = spent(self) < work_limit;
                break;
            }
        }
        self.schedule.write_plan(plan)?;
        stats.final_ms = self.schedule.makespan_ms();
        stats.work = spent(self);
        Ok(stats)
    }

    fn work_total(&self) -> u64 {
        self.schedule.work() + self.scan_work
    }

    /// Shortlist and try the relocations of critical task `x` (module doc); keep the first
    /// that improves. Stops early once `work_left` is spent. Returns whether a move was kept.
    fn try_task<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        x: usize,
        stats: &mut LocalSearchStats,
        work_left: u64,
    ) -> Result<bool, PlanError> {
        let before = self.work_total();
        self.shortlist_moves(dag, platform, x);
        let (ms, sum) = (self.schedule.makespan_ms(), self.schedule.total_finish_ms());
        for c in 0..self.listed {
            if self.work_total().saturating_sub(before) >= work_left {
                break;
            }
            let cand = self.shortlist[c];
            let mv = self.schedule.relocate(
                dag,
                platform,
                x,
                usize::from(cand.gpu),
                cand.to as usize,
            )?;
            if self.keep_if_better(ms, sum, stats) {
                return Ok(true);
            }
            self.schedule.undo(mv);
        }
        for c in 0..self.swaps_listed {
            if self.work_total().saturating_sub(before) >= work_left {
                break;
            }
            let Some((first, second)) = self.swap(dag, platform, x, self.swaplist[c])? else {
                continue;
            };
            if self.keep_if_better(ms, sum, stats) {
                return Ok(true);
            }
            self.schedule.undo(second);
            self.schedule.undo(first);
        }
        Ok(false)
    }

    /// Counts the move just made and commits it if it beats makespan `ms` (or ties it with a
    /// smaller total finish `sum`, by more than relative 1e-12 so rounding cannot cycle).
    /// Returns whether it was kept; the caller undoes it otherwise. O(1).
    fn keep_if_better(&mut self, ms: f64, sum: f64, stats: &mut LocalSearchStats) -> bool {
        stats.evaluated += 1;
        let (new_ms, new_sum) = (self.schedule.makespan_ms(), self.schedule.total_finish_ms());
        let better = new_ms < ms || (new_ms == ms && new_sum < sum - 1e-12 * sum.abs());
        if better {
            self.schedule.commit();
            stats.accepted += 1;
        }
        better
    }

    /// Swap critical task `x` with the swap candidate `cand` (module doc, "Swaps"): `x` into
    /// the other task y's place on y's GPU (just before y in the order), then y into x's old
    /// place on x's GPU — position `own` of the order without y, between the tasks that were
    /// on either side of x. Returns both moves (undo the second first), or `None`, changing
    /// nothing, if y's inputs come after that place or if the second sweep might not fit the
    /// undo journal.
    fn swap<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        x: usize,
        cand: Candidate,
    ) -> Result<Option<(Move, Move)>, PlanError> {
        let own = self.schedule.positions()[x] as usize;
        let own_gpu = usize::from(self.schedule.gpus()[x]);
        let y = cand.other as usize;
        let first =
            self.schedule
                .relocate(dag, platform, x, usize::from(cand.gpu), cand.to as usize)?;
        let (lo, hi) = self.schedule.window(dag, y);
        if !(lo..=hi).contains(&own) || !self.schedule.journal_room() {
            self.schedule.undo(first);
            return Ok(None);
        }
        let second = self.schedule.relocate(dag, platform, y, own_gpu, own)?;
        Ok(Some((first, second)))
    }

    /// Perturb `plan` for an iterated local search: `moves` times, a random task of the
    /// critical path makes one of its shortlisted relocations or swaps (picked at random)
    /// although it does not improve the plan (at a local optimum none does); a task with no
    /// shortlisted move is passed over (at most `4·moves` draws). Returns the work spent.
    /// O(moves · (shortlist + sweep)).
    pub fn kick<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        plan: &mut Plan<T>,
        rng: &mut SeededRng,
        moves: usize,
    ) -> Result<u64, PlanError> {
        let start_work = self.work_total();
        self.schedule.load(dag, platform, plan, &mut self.eval)?;
        let n = dag.task_count();
        let mut done = 0;
        for _ in 0..moves.saturating_mul(4) {
            if done >= moves {
                break;
            }
            let len = self
                .schedule
                .critical_path(dag, platform, &mut self.path[..n]);
            self.scan_work += len as u64;
            if len == 0 {
                break;
            }
            let x = self.path[rng.below(len as u32) as usize] as usize;
            self.shortlist_moves(dag, platform, x);
            let listed = self.listed + self.swaps_listed;
            if listed == 0 {
                continue;
            }
            let k = rng.below(listed as u32) as usize;
            if k < self.listed {
                let c = self.shortlist[k];
                self.schedule
                    .relocate(dag, platform, x, usize::from(c.gpu), c.to as usize)?;
            } else if self
                .swap(dag, platform, x, self.swaplist[k - self.listed])?
                .is_none()
            {
                continue;
            }
            self.schedule.commit();
            done += 1;
        }
        self.schedule.write_plan(plan)?;
        Ok(self.work_total().saturating_sub(start_work))
    }

    /// Fill the shortlist with `x`'s most promising relocations (module doc). O(fan-in + P +
    /// distance back to each GPU's last task before the window + window).
    fn shortlist_moves<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        x: usize,
    ) {
        self.listed = 0;
        self.swaps_listed = 0;
        let p = platform.gpu_count();
        let n = self.schedule.tasks();
        let (lo, hi) = self.schedule.window(dag, x);
        self.ready_everywhere(dag, platform, x, p);
        let order = self.schedule.order();
        let positions = self.schedule.positions();
        let own = positions[x] as usize;
        let finish = self.schedule.finish_ms();
        let gpus = self.schedule.gpus();
        // The finish of each GPU's last task before the window (without x).
        self.last[..p].fill(0.0);
        self.seen[..p].fill(false);
        let mut unseen = p;
        let full = |r: usize| if r >= own { r + 1 } else { r };
        let mut r = lo;
        let mut scanned = 0u64;
        while r > 0 && unseen > 0 {
            r -= 1;
            scanned += 1;
            let y = order[full(r)] as usize;
            let g = usize::from(gpus[y]);
            if !self.seen[g] {
                self.seen[g] = true;
                self.last[g] = finish[y];
                unseen -= 1;
            }
        }
        let works = dag.works_ms();
        let current = finish[x];
        let own_gpu = usize::from(gpus[x]);
        let mut shortlist = Shortlist {
            items: &mut self.shortlist,
            len: 0,
            cap: self.config.candidates.clamp(1, MAX_CANDIDATES),
        };
        let mut swaplist = Shortlist {
            items: &mut self.swaplist,
            len: 0,
            cap: self.config.swaps.min(MAX_CANDIDATES),
        };
        // For swaps: x's GPU predecessor's finish (where a task taking x's place may start),
        // and whether the window's last place is x's first successor (never swapped with x).
        let own_free = match self.schedule.gpu_prev(x) {
            Some(q) => finish[q],
            None => 0.0,
        };
        let succ_at_hi = !dag.succs(x).0.is_empty();
        let makespan = self.schedule.makespan_ms();
        // Inside the window: before each task y, on y's GPU (the order without x has n − 1
        // entries, so position n − 1 is the end).
        let mut at_hi = None;
        for r in lo..=hi {
            if r + 1 >= n {
                break;
            }
            scanned += 1;
            let y = order[full(r)] as usize;
            let g = usize::from(gpus[y]);
            if !(g == own_gpu && r == own) {
                let estimate = self.ready[g].max(self.last[g]) + platform.run_ms(x, works[x], g);
                if estimate < current {
                    shortlist.push(Candidate {
                        estimate,
                        gpu: g as u16,
                        to: r as u32,
                        other: NO_TASK,
                    });
                    // y is unrelated to x (strictly inside x's window), so x and y may trade
                    // places: y's estimate there is from its inputs and x's GPU predecessor.
                    if g != own_gpu && swaplist.cap > 0 && !(r == hi && succ_at_hi) {
                        scanned += dag.preds(y).0.len() as u64;
                        let ready_y =
                            own_free.max(inputs_ready_ms(dag, platform, finish, gpus, y, own_gpu));
                        let finish_y = ready_y + platform.run_ms(y, works[y], own_gpu);
                        if finish_y < makespan {
                            swaplist.push(Candidate {
                                estimate: estimate + (finish_y - finish[y]).max(0.0),
                                gpu: g as u16,
                                to: r as u32,
                                other: y as u32,
                            });
                        }
                    }
                }
            }
            self.last[g] = finish[y];
            if r == hi {
                at_hi = Some(g);
            }
        }
        // At the window's end, after every task of the other GPUs.
        for g in 0..p {
            if Some(g) == at_hi || (g == own_gpu && hi == own) {
                continue;
            }
            let estimate = self.ready[g].max(self.last[g]) + platform.run_ms(x, works[x], g);
            if estimate < current {
                shortlist.push(Candidate {
                    estimate,
                    gpu: g as u16,
                    to: hi as u32,
                    other: NO_TASK,
                });
            }
        }
        self.listed = shortlist.len;
        self.swaps_listed = swaplist.len;
        self.scan_work += scanned + p as u64;
    }

    /// `ready[g]`: when all of `x`'s inputs are on GPU g, by the current times (top two over
    /// distinct GPUs with uniform transfers, O(fan-in + P); else O(fan-in · P)).
    fn ready_everywhere<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        x: usize,
        p: usize,
    ) {
        let finish = self.schedule.finish_ms();
        let gpus = self.schedule.gpus();
        let (srcs, edges) = dag.preds(x);
        self.scan_work += srcs.len() as u64 + p as u64;
        if !platform.uniform_transfers() {
            for g in 0..p {
                self.ready[g] = inputs_ready_ms(dag, platform, finish, gpus, x, g);
            }
            self.scan_work += (srcs.len() * p) as u64;
            return;
        }
        let bandwidth = platform.bandwidth();
        self.ready[..p].fill(0.0);
        let (mut best1, mut best1_gpu, mut best2) = (0.0f64, u16::MAX, 0.0f64);
        for (&s, &e) in srcs.iter().zip(edges) {
            let s = s as usize;
            let g = gpus[s];
            let own = &mut self.ready[usize::from(g)];
            *own = own.max(finish[s]);
            let arrive = finish[s] + bandwidth.transfer_ms(dag.edge_data(e));
            if arrive > best1 {
                if g != best1_gpu {
                    best2 = best1;
                }
                (best1, best1_gpu) = (arrive, g);
            } else if g != best1_gpu && arrive > best2 {
                best2 = arrive;
            }
        }
        for (g, r) in self.ready[..p].iter_mut().enumerate() {
            let other = if g == usize::from(best1_gpu) {
                best2
            } else {
                best1
            };
            *r = r.max(other);
        }
    }
}

/// The best `cap` candidates by estimate (ties: lower GPU, then lower position), kept sorted.
struct Shortlist<'a> {
    items: &'a mut [Candidate; MAX_CANDIDATES],
    len: usize,
    cap: usize,
}

/// When all of task `t`'s inputs are on GPU `g`, from the plan's current finish times and
/// GPUs (0 without inputs). O(fan-in).
fn inputs_ready_ms<const T: usize, const E: usize>(
    dag: &Dag<T, E>,
    platform: &impl Platform,
    finish: &[f64],
    gpus: &[u16],
    t: usize,
    g: usize,
) -> f64 {
    let (srcs, edges) = dag.preds(t);
    srcs.iter()
        .zip(edges)
        .map(|(&s, &e)| {
            let s = s as usize;
            finish[s] + platform.transfer_ms(dag.edge_data(e), usize::from(gpus[s]), g)
        })
        .fold(0.0, f64::max)
}

impl Shortlist<'_> {
    fn push(&mut self, c: Candidate) {
        let key = |c: &Candidate| (c.estimate, c.gpu, c.to);
        let less = |a: &Candidate, b: &Candidate| {
            let (ka, kb) = (key(a), key(b));
            ka.0 < kb.0 || (ka.0 == kb.0 && (ka.1, ka.2) < (kb.1, kb.2))
        };
        if self.cap == 0 || (self.len == self.cap && !less(&c, &self.items[self.len - 1])) {
            return;
        }
        let mut i = if self.len < self.cap {
            self.len += 1;
            self.len - 1
        } else {
            self.cap - 1
        };
        while i > 0 && less(&c, &self.items[i - 1]) {
            self.items[i] = self.items[i - 1];
            i -= 1;
        }
        self.items[i] = c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::test_support::{
        RandomDagShape, cost_table_problem, random_dag, topcuoglu_example,
    };
    use crate::dag::{Bandwidth, DagPlanner, GpuPool, Heft, Platform};

    fn case(seed: u64) -> (Dag<64, 512>, GpuPool<16>) {
        let shape = RandomDagShape {
            base_work: 1.0,
            work_span: 40,
            data_span: 20,
        };
        let dag = random_dag(seed, 30 + seed as usize, 1 + (seed % 3) as u32, shape);
        let mut pool = GpuPool::new(Bandwidth::PerMs(1.0 + (seed % 4) as f64));
        for g in 0..(2 + seed % 4) {
            pool.add_gpu(0.6 + 0.25 * g as f64).unwrap();
        }
        (dag, pool)
    }

    fn improve_heft<const T: usize, const E: usize>(
        dag: &Dag<T, E>,
        platform: &impl Platform,
        limit: u64,
    ) -> (f64, LocalSearchStats, Plan<T>) {
        let mut plan = Plan::new();
        let mut heft: Heft<T, 16> = Heft::new();
        heft.plan(dag, platform, &mut plan).unwrap();
        let mut ev: Evaluator<T, 16> = Evaluator::new();
        let heft_ms = ev.evaluate(dag, platform, &plan).unwrap();
        let mut ls: LocalSearch<T, 16> = LocalSearch::new(LocalSearchConfig::default());
        let stats = ls.improve(dag, platform, &mut plan, limit).unwrap();
        assert_eq!(stats.initial_ms, heft_ms);
        let again = ev.evaluate(dag, platform, &plan).unwrap();
        assert_eq!(
            again, stats.final_ms,
            "the returned plan has the reported makespan"
        );
        assert!(stats.final_ms <= heft_ms);
        (heft_ms, stats, plan)
    }

    /// Never worse than its input, the plan it returns evaluates to what it reports, and on
    /// random DAGs it improves HEFT often.
    #[test]
    fn improves_heft_and_never_worsens() {
        let mut better = 0;
        for seed in 0..20u64 {
            let (dag, pool) = case(seed);
            let (heft_ms, stats, _) = improve_heft(&dag, &pool, u64::MAX);
            assert!(stats.local_optimum);
            better += usize::from(stats.final_ms < heft_ms);
        }
        assert!(better >= 10, "improved HEFT on only {better} of 20");
    }

    /// Hand-computed: tasks x = 0 and y = 1, no edges, x runs 10 on GPU 0 and 2 on GPU 1, y
    /// the reverse; the plan has x on GPU 0 and y on GPU 1 (both finish at 10). No
    /// relocation helps: x before y on GPU 1 gives x 0–2, y 2–12 (makespan 12), x after y
    /// 10–12, and y's moves are the mirror image. Swapping them puts both on their fast GPU:
    /// y 0–2 on GPU 0, x 0–2 on GPU 1, makespan 2 (optimal), after which nothing improves.
    #[test]
    fn a_swap_finds_what_no_relocation_can() {
        let (dag, table) = cost_table_problem(&[[10.0, 2.0], [2.0, 10.0]], &[]);
        let mut start: Plan<16> = Plan::new();
        start.reset(2).unwrap();
        {
            let (gpus, order) = start.parts_mut();
            gpus.copy_from_slice(&[0, 1]);
            order.copy_from_slice(&[0, 1]);
        }
        let mut ev: Evaluator<16, 4> = Evaluator::new();
        for (swaps, want_ms, want_gpus) in [(0, 10.0, [0, 1]), (4, 2.0, [1, 0])] {
            let mut plan = start.clone();
            let config = LocalSearchConfig {
                swaps,
                ..LocalSearchConfig::new()
            };
            let mut ls: LocalSearch<16, 4> = LocalSearch::new(config);
            let stats = ls.improve(&dag, &table, &mut plan, u64::MAX).unwrap();
            assert_eq!(stats.initial_ms, 10.0);
            assert_eq!(stats.final_ms, want_ms, "swaps {swaps}");
            assert_eq!(stats.accepted, u64::from(swaps > 0));
            assert!(stats.local_optimum);
            assert_eq!(plan.gpus(), &want_gpus[..]);
            assert_eq!(ev.evaluate(&dag, &table, &plan).unwrap(), want_ms);
        }
    }

    /// A zero limit changes nothing; half the work of a full run stops early.
    #[test]
    fn work_limit_bounds_the_search() {
        let (dag, table) = topcuoglu_example();
        let (heft_ms, stats, _) = improve_heft(&dag, &table, 0);
        assert_eq!(stats.final_ms, heft_ms);
        assert_eq!(stats.evaluated, 0);
        let mut checked = false;
        for seed in 0..20u64 {
            let (dag, pool) = case(seed);
            let (heft_ms, full, _) = improve_heft(&dag, &pool, u64::MAX);
            if full.final_ms == heft_ms {
                continue;
            }
            let (_, part, _) = improve_heft(&dag, &pool, full.work / 2);
            assert!(part.work < full.work && !part.local_optimum, "{part:?}");
            checked = true;
            break;
        }
        assert!(checked);
    }
}
