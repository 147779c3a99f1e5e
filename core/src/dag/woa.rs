//! Whale Optimization over DAG plans (Mirjalili & Lewis, Adv. Eng. Software 95, 2016), with
//! the running-time-gap decoding of the WORL-RTGS code (Du et al., BDCC 9(11):284, 2025).
//!
//! # Positions
//! With the faithful decoding ([`Decoding::WorlLoadTarget`]) a whale is an assignment task →
//! GPU. Its continuous position has one coordinate per task: `X_i = load of the GPU task i is
//! on` (sum of the run times of that GPU's tasks), as in the WORL code
//! (`gpuLoad[assignment[i]]`). With [`Decoding::EftPriority`] the position is a stored
//! priority key per task (below).
//!
//! # Moves (Mirjalili 2016, Eq. 2.1–2.8), per whale and iteration t = 1..=T
//! `a = 2·(1 − (t−1)/T)` falls linearly from 2 towards 0; draw r1, r2, p uniform in [0, 1)
//! and l uniform in [−1, 1) once per whale (scalar A and C, as in Mirjalili's reference code);
//! `A = 2a·r1 − a`, `C = 2·r2`, b = [`WoaConfig::spiral_b`] (1):
//! - p < 0.5 and |A| < 1 — encircle the leader X*: `X'_i = X*_i − A·|C·X*_i − X_i|`;
//! - p < 0.5 and |A| ≥ 1 — explore around a random whale: `X'_i = Xr_i − A·|C·Xr_i − X_i|`;
//! - p ≥ 0.5 — spiral: `X'_i = |X*_i − X_i|·e^{b·l}·cos(2πl) + X*_i`.
//!
//! The leader (best whale of the population, ties by index) does not move.
//!
//! # Decoding A: the WORL code's running-time gap ([`Decoding::WorlLoadTarget`], default)
//! Visit tasks in HEFT's upward-rank order ([`upward_rank_order`], a topological order; the
//! WORL code uses task-index order, which its inputs keep topological). Every GPU starts at
//! load 0; task i goes to the GPU g minimising `|X'_i − (load_g + run(i, g))|` (ties: lowest
//! g), then `load_g += run(i, g)`. The whale's plan is (that assignment, the rank order).
//!
//! # Decoding B: EFT priority ([`Decoding::EftPriority`], gantry's alternative)
//! The load-target decoding ignores precedence and finish times, so WOA from random starts
//! stays far from HEFT. The alternative is the classic way metaheuristics improve on HEFT:
//! search over **task priority lists** and decode each list by earliest-finish-time list
//! scheduling — random keys (Bean, ORSA J. Computing 6(2), 1994) decoded by HEFT's EFT
//! assignment, as in the HEFT-seeded genetic algorithm of Daoud & Kharma (JPDC 71(11), 2011).
//! - **Position** = one continuous priority key per task, on the scale of HEFT's upward rank.
//!   Random whales start at `X_i = rank_u(i)·(1 + σ·(2u − 1))`, u uniform in [0, 1), σ =
//!   [`WoaConfig::priority_noise`], so the search explores task orders around HEFT's. WOA's
//!   moves act on the keys directly (they are homogeneous of degree 1, so the rank's units
//!   do not matter). A proposed plan becomes keys by giving the task at position k of its
//!   order the k-th largest upward rank.
//! - **Order**: keys are made monotone along edges, `K_i = min(X_i, min_{p ∈ preds(i)} K_p)`
//!   (topological pass), and tasks sorted by decreasing `K`, ties by upward-rank position — a
//!   topological order for any keys (a task never sorts before a predecessor).
//! - **Assignment**: in that order every task goes to the GPU with the earliest finish time
//!   at the end of its queue (the evaluator's model, [`ListState`]; ties lowest GPU). No
//!   insertion, so one decoding is O(T·P + E + T log T), like the load-target one; gap
//!   filling is reachable through the order instead.
//!
//! The decoded makespan equals the evaluator's for (assignment, order), which is the whale's
//! plan. Every decoded plan is valid whatever the keys (tested).
//!
//! # Elitism and the advisor
//! The best plan ever evaluated is kept whole (assignment and order) and returned, so WOA
//! never returns worse than its initial best. A [`PlanAdvisor`] fills each slot of the initial
//! population it wants to (the rest is random), and after each iteration may inject one plan
//! that replaces the worst whale (ties: highest index). A proposal is evaluated twice: with
//! its own order (for the elite) and with WOA's order (as a whale).
//!
//! # Intensification ([`WoaConfig::intensify`])
//! With a work budget, a local search and a keyed decoding, a share of the budget can be
//! kept for the end of the search: the WOA iterations stop when the rest is spent (WOA's `a`
//! falls over that part), and [`Woa::intensify`] spends the share on the elite alone —
//! first a local search to a local optimum with the configured shortlists, then, each time
//! a local optimum is reached, a **variable-neighbourhood** step (the shortlists made
//! [`WIDEN`] times longer, up to [`MAX_CANDIDATES`],
//! and the search run again from the elite), and once they are at their widest an
//! **iterated local search**: a kick of 1 to [`KICK_MOVES`] non-improving critical moves
//! ([`LocalSearch::kick`]) then a local search, the result replacing the elite when it is
//! no worse (equal makespans let the search drift across plateaus). On 10,000-task plans a
//! WOA iteration costs a decoding per whale (tens of millions of units at 50 GPUs, more at
//! 500), so the tail of the budget buys far more improving moves on the elite than a few
//! more iterations would.
//!
//! Cost: one iteration O(POP·(T·P + E)) (EFT priority: O(POP·(T·P + E + T log T))); memory
//! about `POP·(14·T + 8·P) + 110·T + 56·P` bytes.

use super::eval::{Evaluator, Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;
use super::heft::upward_rank_order;
use super::local_search::{LocalSearch, LocalSearchConfig, MAX_CANDIDATES};
use super::observation::ListState;
use super::planner::{AdvisorContext, DagPlanner, PlanAdvisor};
use super::slots::SlotSchedule;
use crate::rng::SeededRng;

/// How a whale's continuous position becomes a plan (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Decoding {
    /// The WORL code's running-time gap: position = GPU loads, each task to the GPU whose
    /// load after it is closest to its target; every whale uses the rank order. Faithful to
    /// WORL-RTGS, blind to precedence.
    #[default]
    WorlLoadTarget,
    /// Position = per-task priority keys around the upward rank; decode by EFT list
    /// scheduling in key order (random keys + EFT, as in GA-HEFT hybrids).
    EftPriority,
    /// Keys as [`EftPriority`](Self::EftPriority), decoded by HEFT's insertion-based EFT
    /// (idle gaps filled); the plan's order is the decoded start order. Keys equal to the
    /// upward ranks decode to HEFT's schedule.
    EftInsertion,
}

impl Decoding {
    /// Whether positions are per-task priority keys (every decoding but the WORL code's).
    pub const fn keyed(self) -> bool {
        !matches!(self, Decoding::WorlLoadTarget)
    }
}

/// WOA settings. Population is bounded by the const `POP`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WoaConfig {
    /// Whales used (clamped to `1..=POP`).
    pub population: usize,
    /// Iterations T.
    pub iterations: u32,
    /// Spiral shape constant b (Mirjalili: 1).
    pub spiral_b: f64,
    /// Seed of every random draw.
    pub seed: u64,
    /// How positions become plans.
    pub decoding: Decoding,
    /// σ of the random initial keys of [`Decoding::EftPriority`], relative to the upward rank
    /// (0.25: keys within ±25 % of the rank). Unused by the load-target decoding.
    pub priority_noise: f64,
    /// Half-width of the random initial keys of [`Decoding::EftInsertion`], in mean task run
    /// times: `rank_i + key_noise_tasks · ū · (2u − 1)` (2: each task may trade places with
    /// tasks whose rank is within two mean task times). Additive, so a 10,000-task DAG is
    /// shuffled locally rather than by a quarter of its critical path.
    pub key_noise_tasks: f64,
    /// Memetic step: improve the best plans with the critical-path [`LocalSearch`] (module
    /// doc, "Local search"). `None`: plain WOA.
    pub local_search: Option<LocalSearchConfig>,
    /// Stop after this many work units (module doc, "Work budget"); `None`: run all
    /// iterations.
    pub work_budget: Option<u64>,
    /// Share of [`work_budget`](Self::work_budget) kept for the end of the search, spent on
    /// an iterated local search from the elite instead of WOA iterations (module doc,
    /// "Intensification"); 0: none. Needs a budget and
    /// [`local_search`](Self::local_search).
    pub intensify: f64,
}

impl WoaConfig {
    /// Population 30, 100 iterations, b = 1 (Mirjalili's defaults), the WORL code's
    /// load-target decoding.
    pub const fn new(seed: u64) -> Self {
        Self {
            population: 30,
            iterations: 100,
            spiral_b: 1.0,
            seed,
            decoding: Decoding::WorlLoadTarget,
            priority_noise: 0.25,
            key_noise_tasks: 2.0,
            local_search: None,
            work_budget: None,
            intensify: 0.0,
        }
    }

    /// This configuration with `decoding`.
    pub const fn with_decoding(mut self, decoding: Decoding) -> Self {
        self.decoding = decoding;
        self
    }
}

/// WOA with scratch for `POP` whales, `T` tasks and `P` GPUs, and an advisor `A`.
#[derive(Clone, Debug)]
pub struct Woa<const POP: usize, const T: usize, const P: usize, A> {
    config: WoaConfig,
    advisor: A,
    rng: SeededRng,
    tasks: usize,
    gpus: usize,
    whales: usize,
    assign: [[u16; T]; POP],
    load: [[f64; P]; POP],
    fitness: [f64; POP],
    order: [u32; T],
    rank: [f64; T],
    pos: [u32; T],
    target: [f64; T],
    keys: [[f64; T]; POP],
    orders: [[u32; T]; POP],
    eff: [f64; T],
    list: ListState<T, P>,
    best: Plan<T>,
    best_ms: f64,
    initial_best_ms: f64,
    proposal: Plan<T>,
    eval: Evaluator<T, P>,
    slots: SlotSchedule<T, P>,
    local: LocalSearch<T, P>,
    polished: [bool; POP],
    work: u64,
    mean_task_ms: f64,
}

impl<const POP: usize, const T: usize, const P: usize, A> Woa<POP, T, P, A> {
    /// A WOA with this configuration and advisor.
    pub fn new(config: WoaConfig, advisor: A) -> Self {
        Self {
            config,
            advisor,
            rng: SeededRng::new(config.seed),
            tasks: 0,
            gpus: 0,
            whales: 0,
            assign: [[0; T]; POP],
            load: [[0.0; P]; POP],
            fitness: [f64::INFINITY; POP],
            order: [0; T],
            rank: [0.0; T],
            pos: [0; T],
            target: [0.0; T],
            keys: [[0.0; T]; POP],
            orders: [[0; T]; POP],
            eff: [0.0; T],
            list: ListState::new(),
            best: Plan::new(),
            best_ms: f64::INFINITY,
            initial_best_ms: f64::INFINITY,
            proposal: Plan::new(),
            eval: Evaluator::new(),
            slots: SlotSchedule::new(),
            local: LocalSearch::new(config.local_search.unwrap_or_default()),
            polished: [false; POP],
            work: 0,
            mean_task_ms: 1.0,
        }
    }

    /// Work units spent since [`initialize`](Self::initialize) (module doc). O(1).
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Whether the work budget is spent (never, without one). O(1).
    pub fn budget_spent(&self) -> bool {
        self.config.work_budget.is_some_and(|b| self.work >= b)
    }

    /// The work units of the population phase (WOA iterations): the budget less the share
    /// kept for [`intensify`](Self::intensify). O(1).
    fn population_budget(&self) -> Option<u64> {
        let share = self.intensify_share();
        self.config
            .work_budget
            .map(|b| b.saturating_sub((b as f64 * share) as u64))
    }

    /// [`WoaConfig::intensify`] clamped to `[0, 1]` (NaN: 0), or 0 when it cannot apply
    /// (no budget, no local search, the load-target decoding). O(1).
    fn intensify_share(&self) -> f64 {
        let c = &self.config;
        if c.work_budget.is_none() || c.local_search.is_none() || !c.decoding.keyed() {
            return 0.0;
        }
        if c.intensify > 0.0 {
            c.intensify.min(1.0)
        } else {
            0.0
        }
    }

    /// Whether the WOA iterations are over: the budget less the share kept for
    /// [`intensify`](Self::intensify) is spent (the whole budget without that share; never
    /// without a budget). O(1).
    pub fn population_phase_over(&self) -> bool {
        self.population_budget().is_some_and(|b| self.work >= b)
    }

    /// The advisor, e.g. to read its statistics. O(1).
    pub fn advisor(&self) -> &A {
        &self.advisor
    }

    /// Best plan ever evaluated. O(1).
    pub fn best_plan(&self) -> &Plan<T> {
        &self.best
    }

    /// Its makespan. O(1).
    pub fn best_ms(&self) -> f64 {
        self.best_ms
    }

    /// Best makespan after initialisation (before any move). O(1).
    pub fn initial_best_ms(&self) -> f64 {
        self.initial_best_ms
    }

    /// Makespans of the current population. O(1).
    pub fn fitness_ms(&self) -> &[f64] {
        &self.fitness[..self.whales]
    }
}

impl<const POP: usize, const T: usize, const P: usize, A> Woa<POP, T, P, A> {
    /// Reset the search for `dag`: rank order, seeded RNG, population (advisor first, random
    /// otherwise). O(POP·(T·P + E)).
    pub fn initialize<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
    ) -> Result<(), PlanError>
    where
        A: PlanAdvisor<T, E>,
    {
        let (n, p) = check_sizes::<T, P, T, E>(dag, platform)?;
        self.tasks = n;
        self.gpus = p;
        self.whales = self.config.population.clamp(1, POP.max(1)).min(POP);
        if self.whales == 0 {
            return Err(PlanError::TooManyTasks { capacity: 0 });
        }
        self.rng = SeededRng::new(self.config.seed);
        self.best_ms = f64::INFINITY;
        self.best.reset(n)?;
        upward_rank_order(
            dag,
            platform,
            &mut self.rank,
            &mut self.order,
            &mut self.pos,
        )?;
        if self.config.decoding == Decoding::EftPriority {
            self.list.reset(dag, platform)?;
        }
        self.work = 0;
        self.polished = [false; POP];
        let works = dag.works_ms();
        let total: f64 = (0..n).map(|t| platform.mean_run_ms(t, works[t])).sum();
        self.mean_task_ms = if n > 0 && total > 0.0 {
            total / n as f64
        } else {
            1.0
        };
        for w in 0..self.whales {
            // With a budget, at most half of it goes to the initial population (whales
            // beyond are dropped: the population shrinks, the search stays anytime).
            let half_spent = self.config.work_budget.is_some_and(|b| self.work >= b / 2);
            let ctx = AdvisorContext {
                iteration: 0,
                whale: w,
                best_ms: self.best_ms,
            };
            // Proposals (seeds) are always taken; random whales only while budget remains.
            if !self.take_proposal(dag, platform, ctx, w)? {
                if w >= 2 && half_spent {
                    self.whales = w;
                    break;
                }
                self.random_whale(w);
            }
            self.score_whale(dag, platform, w)?;
        }
        self.initial_best_ms = self.best_ms;
        if self.config.local_search.is_some() && self.best_ms.is_finite() {
            self.proposal.copy_from(&self.best);
            self.polish_proposal(dag, platform)?;
        }
        Ok(())
    }

    /// Ask the advisor for a plan for slot `w`; if it proposes a valid one, consider it for
    /// the elite and copy its assignment into whale `w`. O(T + E).
    fn take_proposal<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        ctx: AdvisorContext,
        w: usize,
    ) -> Result<bool, PlanError>
    where
        A: PlanAdvisor<T, E>,
    {
        let n = self.tasks;
        self.proposal.reset(n)?;
        if !self.advisor.propose(dag, platform, ctx, &mut self.proposal) {
            return Ok(false);
        }
        self.work += eval_work(dag);
        self.polished[w] = false;
        let Ok(ms) = self.eval.evaluate(dag, platform, &self.proposal) else {
            return Ok(false);
        };
        if ms < self.best_ms {
            self.best_ms = ms;
            self.best.copy_from(&self.proposal);
        }
        match self.config.decoding {
            Decoding::WorlLoadTarget => {
                self.assign[w][..n].copy_from_slice(self.proposal.gpus());
            }
            Decoding::EftPriority | Decoding::EftInsertion => {
                // The task at position k of the proposal's order gets the k-th largest rank.
                for (k, &task) in self.proposal.order().iter().enumerate() {
                    self.keys[w][task as usize] = self.rank[self.order[k] as usize];
                }
            }
        }
        Ok(true)
    }

    /// Draw whale `w`'s random start: random GPUs (load-target) or keys around the upward
    /// rank (EFT priority). O(T).
    fn random_whale(&mut self, w: usize) {
        let (n, p) = (self.tasks, self.gpus);
        match self.config.decoding {
            Decoding::WorlLoadTarget => {
                for g in self.assign[w][..n].iter_mut() {
                    *g = self.rng.below(p as u32) as u16;
                }
            }
            Decoding::EftPriority => {
                let sigma = self.config.priority_noise;
                for (k, r) in self.keys[w][..n].iter_mut().zip(&self.rank[..n]) {
                    *k = r * (1.0 + sigma * (2.0 * self.rng.unit_f64() - 1.0));
                }
            }
            Decoding::EftInsertion => {
                // Widths spread over the population: whale w of W gets (w + 1)/W of the
                // full width, so the search starts both near and far from the rank order.
                let share = (w + 1) as f64 / self.whales.max(1) as f64;
                let width = self.config.key_noise_tasks * self.mean_task_ms * share;
                for (k, r) in self.keys[w][..n].iter_mut().zip(&self.rank[..n]) {
                    *k = r + width * (2.0 * self.rng.unit_f64() - 1.0);
                }
            }
        }
    }

    /// Evaluate whale `w` (EFT priority: decode its keys first), update its loads and the
    /// elite. O(T + E) (EFT priority: O(T·P + E + T log T)).
    fn score_whale<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        w: usize,
    ) -> Result<(), PlanError> {
        self.decode_keys(dag, platform, w)?;
        self.work += eval_work(dag);
        let ms = self.evaluate_whale(dag, platform, w)?;
        self.update_load(dag, platform, w);
        self.record(w, ms);
        Ok(())
    }

    /// Makespan of whale `w`'s assignment with its order. O(T + E).
    fn evaluate_whale<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        w: usize,
    ) -> Result<f64, PlanError> {
        let n = self.tasks;
        let order = match self.config.decoding {
            Decoding::WorlLoadTarget => &self.order[..n],
            Decoding::EftPriority | Decoding::EftInsertion => &self.orders[w][..n],
        };
        self.eval
            .evaluate_parts(dag, platform, order, &self.assign[w][..n])
    }

    /// Recompute whale `w`'s GPU loads from its assignment (task-index order). O(T + P).
    fn update_load<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        w: usize,
    ) {
        let (n, p) = (self.tasks, self.gpus);
        let works = dag.works_ms();
        let load = &mut self.load[w];
        load[..p].fill(0.0);
        for (t, &g) in self.assign[w][..n].iter().enumerate() {
            load[usize::from(g)] += platform.run_ms(t, works[t], usize::from(g));
        }
    }

    /// Record whale `w`'s makespan and keep its plan if it beats the elite. O(T).
    fn record(&mut self, w: usize, ms: f64) {
        let n = self.tasks;
        self.fitness[w] = ms;
        if ms < self.best_ms {
            self.best_ms = ms;
            let (gpus, order) = self.best.parts_mut();
            gpus.copy_from_slice(&self.assign[w][..n]);
            order.copy_from_slice(match self.config.decoding {
                Decoding::WorlLoadTarget => &self.order[..n],
                Decoding::EftPriority | Decoding::EftInsertion => &self.orders[w][..n],
            });
        }
    }

    /// Index of the best (ties lowest index) or worst (ties highest index) whale. O(POP).
    fn extreme(&self, worst: bool) -> usize {
        let mut pick = 0;
        for w in 1..self.whales {
            let (f, b) = (self.fitness[w], self.fitness[pick]);
            if (!worst && f < b) || (worst && f >= b) {
                pick = w;
            }
        }
        pick
    }

    /// One WOA iteration `t` (1-based; see the module doc). O(POP·(T·P + E)).
    ///
    /// Equivalent to [`step_moves`](Self::step_moves), evaluating every moved whale, then
    /// [`step_scores`](Self::step_scores): moves never read a makespan of the same
    /// iteration, so batch evaluators (the host's GPU path) reproduce this exactly.
    pub fn step<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        t: u32,
    ) -> Result<(), PlanError>
    where
        A: PlanAdvisor<T, E>,
    {
        let leader = self.step_moves(dag, platform, t)?;
        for w in 0..self.whales {
            if w == leader {
                continue;
            }
            let ms = self.evaluate_whale(dag, platform, w)?;
            self.record(w, ms);
        }
        self.finish_step(dag, platform, t)
    }

    /// First half of iteration `t`: move and decode every whale but the leader (whose index
    /// is returned) and update their loads; evaluates nothing. Afterwards
    /// [`whale_assignment`](Self::whale_assignment) and [`whale_order`](Self::whale_order)
    /// are the population to evaluate. Errors (never panics) if the DAG's task count or the
    /// platform's GPU count changed since [`initialize`](Self::initialize). O(POP·T·P) (EFT priority: O(POP·(T·P + E + T log T))).
    pub fn step_moves<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        t: u32,
    ) -> Result<usize, PlanError> {
        self.check_same_problem(dag, platform)?;
        let progress = match self.population_budget() {
            Some(budget) => (self.work as f64 / budget.max(1) as f64).min(1.0),
            None => f64::from(t.saturating_sub(1)) / f64::from(self.config.iterations.max(1)),
        };
        let a = 2.0 * (1.0 - progress);
        let leader = self.extreme(false);
        for w in 0..self.whales {
            if w == leader {
                continue;
            }
            self.move_whale(w, leader, a);
            self.polished[w] = false;
            // The moved whale is evaluated next, here or by the caller's batch evaluator.
            self.work += eval_work(dag);
            match self.config.decoding {
                Decoding::WorlLoadTarget => {
                    self.decode(dag, platform, w);
                    self.update_load(dag, platform, w);
                    self.work += decode_work(self.tasks, 0, self.gpus);
                }
                Decoding::EftPriority | Decoding::EftInsertion => {
                    let n = self.tasks;
                    self.keys[w][..n].copy_from_slice(&self.target[..n]);
                    self.decode_keys(dag, platform, w)?;
                }
            }
        }
        Ok(leader)
    }

    /// Second half of iteration `t`: `makespans_ms[w]` is the makespan of whale `w`'s
    /// assignment with [`whale_order`](Self::whale_order)`(w)`, for every whale but `leader` (whose entry is ignored);
    /// records them in whale order (elite ties keep the lower index), then lets the advisor
    /// replace the worst whale. Refuses a slice shorter than the population. O(POP·T + E).
    pub fn step_scores<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        t: u32,
        leader: usize,
        makespans_ms: &[f64],
    ) -> Result<(), PlanError>
    where
        A: PlanAdvisor<T, E>,
    {
        self.check_same_problem(dag, platform)?;
        if makespans_ms.len() < self.whales {
            return Err(PlanError::WrongLength {
                plan: makespans_ms.len(),
                dag: self.whales,
            });
        }
        for (w, &ms) in makespans_ms[..self.whales].iter().enumerate() {
            if w != leader {
                self.record(w, ms);
            }
        }
        self.finish_step(dag, platform, t)
    }

    /// Refuse a DAG or platform other than the one of [`initialize`](Self::initialize): the
    /// scratch (loads, ranks, positions) is sized for its task and GPU counts. O(1).
    fn check_same_problem<const E: usize>(
        &self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> Result<(), PlanError> {
        dag.require_sealed()?;
        if dag.task_count() != self.tasks {
            return Err(PlanError::WrongLength {
                plan: self.tasks,
                dag: dag.task_count(),
            });
        }
        if platform.gpu_count() != self.gpus {
            return Err(PlanError::GpuCountChanged {
                initialized: self.gpus,
                given: platform.gpu_count(),
            });
        }
        Ok(())
    }

    /// The advisor's injection at the end of iteration `t`. O(T + E).
    fn finish_step<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        t: u32,
    ) -> Result<(), PlanError>
    where
        A: PlanAdvisor<T, E>,
    {
        let worst = self.extreme(true);
        let ctx = AdvisorContext {
            iteration: t,
            whale: worst,
            best_ms: self.best_ms,
        };
        if self.take_proposal(dag, platform, ctx, worst)? {
            self.score_whale(dag, platform, worst)?;
        } else if self.config.local_search.is_some()
            && self.config.decoding.keyed()
            && !self.budget_spent()
        {
            self.kick_elite(dag, platform)?;
        }
        self.polish_whale(dag, platform)
    }

    /// The memetic kick (module doc): the worst whale becomes the elite's order with the keys
    /// of [`KICK_WINDOW`] consecutive tasks of it perturbed by up to ± two mean task times —
    /// a local change of the best plan, which the next polish may turn into a better one.
    /// O(T·P + E + T log T).
    fn kick_elite<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
    ) -> Result<(), PlanError> {
        let n = self.tasks;
        if n == 0 || self.best.len() != n {
            return Ok(());
        }
        let w = self.extreme(true);
        for (k, &task) in self.best.order().iter().enumerate() {
            self.keys[w][task as usize] = self.rank[self.order[k] as usize];
        }
        let window = KICK_WINDOW.min(n);
        let first = self.rng.below((n - window + 1) as u32) as usize;
        let width = 2.0 * self.mean_task_ms;
        for k in first..first + window {
            let task = self.best.order()[k] as usize;
            self.keys[w][task] += width * (2.0 * self.rng.unit_f64() - 1.0);
        }
        self.polished[w] = false;
        self.score_whale(dag, platform, w)
    }

    /// The memetic step (module doc): local search on the best whale not polished since it
    /// last changed, if it is within [`POLISH_WITHIN`] of the elite; the result may become
    /// the elite and (keyed decodings) replaces the whale. No-op without
    /// [`WoaConfig::local_search`] or once the budget is spent.
    fn polish_whale<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
    ) -> Result<(), PlanError> {
        if self.config.local_search.is_none() || self.budget_spent() {
            return Ok(());
        }
        let mut pick: Option<usize> = None;
        for w in 0..self.whales {
            if !self.polished[w] && pick.is_none_or(|p| self.fitness[w] < self.fitness[p]) {
                pick = Some(w);
            }
        }
        let Some(w) = pick else { return Ok(()) };
        // NaN fitness (never from the evaluator) is not polished either.
        let within = self.fitness[w] <= self.best_ms * (1.0 + POLISH_WITHIN);
        if !within {
            return Ok(());
        }
        self.polished[w] = true;
        let n = self.tasks;
        self.proposal.reset(n)?;
        {
            let (gpus, order) = self.proposal.parts_mut();
            gpus.copy_from_slice(&self.assign[w][..n]);
            order.copy_from_slice(match self.config.decoding {
                Decoding::WorlLoadTarget => &self.order[..n],
                _ => &self.orders[w][..n],
            });
        }
        let ms = self.polish_proposal(dag, platform)?;
        if self.config.decoding.keyed() && ms < self.fitness[w] {
            self.assign[w][..n].copy_from_slice(self.proposal.gpus());
            self.orders[w][..n].copy_from_slice(self.proposal.order());
            for (k, &task) in self.proposal.order().iter().enumerate() {
                self.keys[w][task as usize] = self.rank[self.order[k] as usize];
            }
            self.fitness[w] = ms;
        }
        Ok(())
    }

    /// Local search on `proposal` with a quarter of the budget left (all of it without a
    /// budget); a result better than the elite becomes the elite. Returns its makespan.
    fn polish_proposal<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
    ) -> Result<f64, PlanError> {
        let limit = match self.config.work_budget {
            Some(budget) => (budget.saturating_sub(self.work) / 4).max(1),
            None => u64::MAX,
        };
        let stats = self
            .local
            .improve(dag, platform, &mut self.proposal, limit)?;
        self.work += stats.work;
        if stats.final_ms < self.best_ms {
            self.best_ms = stats.final_ms;
            self.best.copy_from(&self.proposal);
        }
        Ok(stats.final_ms)
    }

    /// Whales in use (after [`initialize`](Self::initialize)). O(1).
    pub fn whales(&self) -> usize {
        self.whales
    }

    /// Whale `w`'s assignment (GPU per task id); empty if `w` is out of range. O(1).
    pub fn whale_assignment(&self, w: usize) -> &[u16] {
        match self.assign.get(w) {
            Some(a) if w < self.whales => &a[..self.tasks],
            _ => &[],
        }
    }

    /// HEFT's upward-rank order: the order every whale is evaluated with under the
    /// load-target decoding. O(1).
    pub fn rank_order(&self) -> &[u32] {
        &self.order[..self.tasks]
    }

    /// The order whale `w` is evaluated with: the rank order (load-target decoding) or its
    /// own decoded priority order (EFT priority); empty if `w` is out of range. O(1).
    pub fn whale_order(&self, w: usize) -> &[u32] {
        match (self.config.decoding, self.orders.get(w)) {
            (_, None) => &[],
            (_, Some(_)) if w >= self.whales => &[],
            (Decoding::WorlLoadTarget, Some(_)) => self.rank_order(),
            (Decoding::EftPriority | Decoding::EftInsertion, Some(o)) => &o[..self.tasks],
        }
    }

    /// Whether every whale shares [`rank_order`](Self::rank_order) (load-target decoding),
    /// so batch evaluators can send one order. O(1).
    pub fn shares_rank_order(&self) -> bool {
        self.config.decoding == Decoding::WorlLoadTarget
    }

    /// The configuration. O(1).
    pub fn config(&self) -> &WoaConfig {
        &self.config
    }

    /// Write whale `w`'s new continuous position into `target`. O(T).
    fn move_whale(&mut self, w: usize, leader: usize, a: f64) {
        let r1 = self.rng.unit_f64();
        let r2 = self.rng.unit_f64();
        let p = self.rng.unit_f64();
        let l = 2.0 * self.rng.unit_f64() - 1.0;
        let big_a = 2.0 * a * r1 - a;
        let big_c = 2.0 * r2;
        let n = self.tasks;
        if p < 0.5 {
            let other = if libm::fabs(big_a) < 1.0 {
                leader
            } else {
                self.rng.below(self.whales as u32) as usize
            };
            for i in 0..n {
                let (xr, x) = (self.position(other, i), self.position(w, i));
                self.target[i] = xr - big_a * libm::fabs(big_c * xr - x);
            }
        } else {
            let spiral =
                libm::exp(self.config.spiral_b * l) * libm::cos(2.0 * core::f64::consts::PI * l);
            for i in 0..n {
                let (xs, x) = (self.position(leader, i), self.position(w, i));
                self.target[i] = libm::fabs(xs - x) * spiral + xs;
            }
        }
    }

    /// Coordinate `i` of whale `w`'s position: its GPU's load (load-target) or its key (EFT
    /// priority). O(1).
    fn position(&self, w: usize, i: usize) -> f64 {
        match self.config.decoding {
            Decoding::WorlLoadTarget => self.load[w][usize::from(self.assign[w][i])],
            Decoding::EftPriority | Decoding::EftInsertion => self.keys[w][i],
        }
    }

    /// Decode whale `w`'s keys into its order and assignment (EFT priority or insertion;
    /// nothing for the load-target decoding, whose moves decode directly). Counts the work.
    fn decode_keys<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        w: usize,
    ) -> Result<(), PlanError> {
        match self.config.decoding {
            Decoding::WorlLoadTarget => return Ok(()),
            Decoding::EftPriority => self.decode_eft(dag, platform, w)?,
            Decoding::EftInsertion => self.decode_insertion(dag, platform, w)?,
        }
        self.work += decode_work(dag.task_count(), dag.edge_count(), self.gpus);
        Ok(())
    }

    /// Whale `w`'s keys made monotone along edges and sorted (module doc, decoding B, step
    /// 1) into `orders[w]`: a topological order whatever the keys. O(E + T log T).
    fn key_order<const E: usize>(&mut self, dag: &Dag<T, E>, w: usize) {
        let n = self.tasks;
        let keys = &self.keys[w];
        for &task in dag.topo_order() {
            let t = task as usize;
            // NaN keys sort last (−∞), so the order stays topological whatever the keys.
            let mut k = if keys[t].is_nan() {
                f64::NEG_INFINITY
            } else {
                keys[t]
            };
            for &pred in dag.preds(t).0 {
                k = k.min(self.eff[pred as usize]);
            }
            self.eff[t] = k;
        }
        let (eff, pos) = (&self.eff, &self.pos);
        let order = &mut self.orders[w][..n];
        order.copy_from_slice(&self.order[..n]);
        order.sort_unstable_by(|&a, &b| {
            eff[b as usize]
                .total_cmp(&eff[a as usize])
                .then(pos[a as usize].cmp(&pos[b as usize]))
        });
    }

    /// EFT-priority decoding of whale `w`'s keys into its order and assignment (module doc,
    /// decoding B). O(T·P + E + T log T).
    fn decode_eft<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        w: usize,
    ) -> Result<(), PlanError> {
        let n = self.tasks;
        self.key_order(dag, w);
        self.list.restart_with_order(dag, &self.orders[w][..n])?;
        for _ in 0..n {
            self.list.candidates(dag, platform)?;
            let g = self.list.best_eft_gpu();
            self.list.place(dag, platform, g)?;
        }
        self.assign[w][..n].copy_from_slice(self.list.assignment());
        Ok(())
    }

    /// Insertion decoding of whale `w`'s keys (module doc, decoding C): key order, then
    /// HEFT's insertion-based EFT; the whale's order becomes the start order. O(T·P + E + T
    /// log T + gap scans).
    fn decode_insertion<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        w: usize,
    ) -> Result<(), PlanError> {
        let (n, p) = (self.tasks, self.gpus);
        self.key_order(dag, w);
        self.slots.reset(n, p);
        let steps = self.slots.steps();
        for i in 0..n {
            let t = self.orders[w][i] as usize;
            let (g, slot) = self
                .slots
                .best_eft_within(dag, platform, t, DECODE_GAP_SCAN);
            self.slots.place(t, g, slot);
        }
        self.slots
            .write_parts(&mut self.assign[w][..n], &mut self.orders[w][..n]);
        // Gap searches are counted as visited: their length varies with the keys.
        self.work += self.slots.steps() - steps;
        Ok(())
    }

    /// Running-time-gap decoding of `target` into whale `w`'s assignment. O(T·P).
    fn decode<const E: usize, M: Platform>(&mut self, dag: &Dag<T, E>, platform: &M, w: usize) {
        let (n, p) = (self.tasks, self.gpus);
        let works = dag.works_ms();
        let load = &mut self.load[w];
        load[..p].fill(0.0);
        for &task in &self.order[..n] {
            let i = task as usize;
            let want = self.target[i];
            let (mut best_g, mut best_gap, mut best_run) = (0usize, f64::INFINITY, 0.0);
            for (g, &l) in load[..p].iter().enumerate() {
                let run = platform.run_ms(i, works[i], g);
                let gap = libm::fabs(want - (l + run));
                if gap < best_gap {
                    (best_g, best_gap, best_run) = (g, gap, run);
                }
            }
            if best_gap.is_infinite() {
                best_run = platform.run_ms(i, works[i], 0);
            }
            self.assign[w][i] = best_g as u16;
            load[best_g] += best_run;
        }
    }

    /// Initialise and run all iterations; the result is [`best_plan`](Self::best_plan).
    /// Deterministic for a seed. O(iterations · POP · (T·P + E)).
    pub fn run<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
    ) -> Result<f64, PlanError>
    where
        A: PlanAdvisor<T, E>,
    {
        self.initialize(dag, platform)?;
        for t in 1..=self.config.iterations {
            if self.population_phase_over() {
                break;
            }
            self.step(dag, platform, t)?;
        }
        self.intensify(dag, platform)?;
        Ok(self.best_ms)
    }

    /// The end of the search (module doc, "Intensification"): until the budget is spent,
    /// local search on the elite to a local optimum, then rounds of kick (a few non-improving
    /// critical moves, [`LocalSearch::kick`]) and local search from the elite; a result no
    /// worse than the elite replaces it (equal makespans let the search drift across
    /// plateaus). No-op when [`WoaConfig::intensify`] does not apply (its doc). Every round
    /// spends work (at least one evaluation), so the budget bounds the loop; so does a cap
    /// of [`MAX_INTENSIFY_ROUNDS`].
    pub fn intensify<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
    ) -> Result<(), PlanError> {
        let Some(budget) = self.config.work_budget else {
            return Ok(());
        };
        if self.intensify_share() <= 0.0 || !self.best_ms.is_finite() {
            return Ok(());
        }
        self.check_same_problem(dag, platform)?;
        let base = self.local.config();
        let mut at_optimum = false;
        for _ in 0..MAX_INTENSIFY_ROUNDS {
            if self.work >= budget {
                break;
            }
            self.proposal.copy_from(&self.best);
            let wide = self.local.config().candidates >= MAX_CANDIDATES;
            if at_optimum && !wide {
                // Variable neighbourhood: a local optimum of the shortlist is searched again
                // with a shortlist WIDEN times as long, up to MAX_CANDIDATES.
                let c = self.local.config();
                self.local.set_config(LocalSearchConfig {
                    candidates: c
                        .candidates
                        .max(1)
                        .saturating_mul(WIDEN)
                        .min(MAX_CANDIDATES),
                    swaps: c.swaps.max(1).saturating_mul(WIDEN).min(MAX_CANDIDATES),
                    ..c
                });
            } else if at_optimum {
                let moves = 1 + self.rng.below(KICK_MOVES) as usize;
                self.work +=
                    self.local
                        .kick(dag, platform, &mut self.proposal, &mut self.rng, moves)?;
            }
            let left = budget.saturating_sub(self.work).max(1);
            let stats = self
                .local
                .improve(dag, platform, &mut self.proposal, left)?;
            self.work += stats.work.max(1);
            if stats.final_ms <= self.best_ms {
                self.best_ms = stats.final_ms;
                self.best.copy_from(&self.proposal);
                at_optimum = stats.local_optimum;
            } else {
                at_optimum = true;
            }
        }
        self.local.set_config(base);
        Ok(())
    }
}

/// The insertion decoding searches each GPU's idle gaps at most this many tasks back from
/// its queue's end (older gaps are left to the local search): a decoding stays
/// O(T·P·1024) however shuffled the keys (a full search is O(T²) on orders far from time
/// order). Keys near the upward ranks never reach the bound (tasks come roughly in time
/// order), so there the decoding is HEFT's exact insertion; 64 cost 0.06 % of makespan on
/// the 10,000-task rows.
pub const DECODE_GAP_SCAN: usize = 1024;

/// Tasks (consecutive in the elite's order) whose keys a kick perturbs.
pub const KICK_WINDOW: usize = 32;

/// Whales within this fraction of the elite's makespan get the memetic local search.
pub const POLISH_WITHIN: f64 = 0.05;

/// Each widening of [`Woa::intensify`]'s shortlists multiplies them by this.
pub const WIDEN: usize = 4;

/// An intensification kick makes 1 to this many non-improving critical moves.
pub const KICK_MOVES: u32 = 3;

/// Most rounds of [`Woa::intensify`] (a bound for the loop besides the budget).
pub const MAX_INTENSIFY_ROUNDS: u32 = 1 << 20;

/// Work units of one evaluation: one per task and per edge. O(1).
fn eval_work<const T: usize, const E: usize>(dag: &Dag<T, E>) -> u64 {
    (dag.task_count() + dag.edge_count()) as u64
}

/// Work units of one decoding of `tasks` tasks with `edges` edges on `gpus` GPUs: one per
/// task × GPU candidate, per edge, and 16 per task for the sort. O(1).
fn decode_work(tasks: usize, edges: usize, gpus: usize) -> u64 {
    (tasks as u64)
        .saturating_mul(gpus as u64 + 16)
        .saturating_add(edges as u64)
}

impl<const POP: usize, const T: usize, const E: usize, const P: usize, A> DagPlanner<T, E>
    for Woa<POP, T, P, A>
where
    A: PlanAdvisor<T, E>,
{
    fn name(&self) -> &'static str {
        "woa"
    }

    fn plan<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        out: &mut Plan<T>,
    ) -> Result<(), PlanError> {
        self.run(dag, platform)?;
        out.copy_from(&self.best);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::test_support::RandomDagShape;
    use crate::dag::{Bandwidth, GpuPool, Heft, HeftAdvisor, NoAdvisor};

    fn random_dag(seed: u64, n: usize, degree: u32) -> Dag<128, 1024> {
        let shape = RandomDagShape {
            base_work: 10.0,
            work_span: 90,
            data_span: 20,
        };
        crate::dag::test_support::random_dag(seed, n, degree, shape)
    }

    fn pool() -> GpuPool<8> {
        let mut p = GpuPool::new(Bandwidth::PerMs(4.0));
        for s in [1.0, 1.5, 0.7, 2.0, 1.2] {
            p.add_gpu(s).unwrap();
        }
        p
    }

    fn config(seed: u64) -> WoaConfig {
        WoaConfig {
            population: 12,
            iterations: 25,
            ..WoaConfig::new(seed)
        }
    }

    fn eft(seed: u64) -> WoaConfig {
        config(seed).with_decoding(Decoding::EftPriority)
    }

    #[test]
    fn same_seed_same_plan_and_makespan() {
        let dag = random_dag(3, 80, 2);
        for cfg in [config(9), eft(9)] {
            let mut a: Woa<16, 128, 8, NoAdvisor> = Woa::new(cfg, NoAdvisor);
            let mut b: Woa<16, 128, 8, NoAdvisor> = Woa::new(cfg, NoAdvisor);
            let (mut pa, mut pb) = (Plan::new(), Plan::new());
            a.plan(&dag, &pool(), &mut pa).unwrap();
            b.plan(&dag, &pool(), &mut pb).unwrap();
            assert_eq!(a.best_ms().to_bits(), b.best_ms().to_bits());
            assert_eq!(pa.gpus(), pb.gpus());
            assert_eq!(pa.order(), pb.order());
            // Running again on the same object reproduces it too.
            a.plan(&dag, &pool(), &mut pb).unwrap();
            assert_eq!(pa.gpus(), pb.gpus());
            assert_eq!(pa.order(), pb.order());
        }
    }

    /// The split iteration (moves, outside evaluation, scores) is the same search as `step`,
    /// advisor injections included.
    #[test]
    fn split_step_matches_step() {
        for (seed, cfg) in (1u64..=3).flat_map(|s| [(s, config(s)), (s, eft(s))]) {
            let dag = random_dag(seed, 70, 3);
            let mut a: Woa<16, 128, 8, HeftAdvisor<128, 8>> = Woa::new(cfg, HeftAdvisor::new());
            let mut b: Woa<16, 128, 8, HeftAdvisor<128, 8>> = Woa::new(cfg, HeftAdvisor::new());
            a.initialize(&dag, &pool()).unwrap();
            b.initialize(&dag, &pool()).unwrap();
            let mut ev: Evaluator<128, 8> = Evaluator::new();
            let mut ms = [0.0; 16];
            for t in 1..=a.config().iterations {
                a.step(&dag, &pool(), t).unwrap();
                let leader = b.step_moves(&dag, &pool(), t).unwrap();
                for (w, slot) in ms.iter_mut().enumerate().take(b.whales()) {
                    *slot = if w == leader {
                        f64::NAN
                    } else {
                        ev.evaluate_parts(&dag, &pool(), b.whale_order(w), b.whale_assignment(w))
                            .unwrap()
                    };
                }
                b.step_scores(&dag, &pool(), t, leader, &ms).unwrap();
                assert_eq!(a.fitness_ms().len(), b.fitness_ms().len());
                for (x, y) in a.fitness_ms().iter().zip(b.fitness_ms()) {
                    assert_eq!(x.to_bits(), y.to_bits(), "seed {seed} iteration {t}");
                }
            }
            assert_eq!(a.best_ms().to_bits(), b.best_ms().to_bits());
            assert_eq!(a.best_plan().gpus(), b.best_plan().gpus());
            assert_eq!(
                b.step_scores(&dag, &pool(), 1, 0, &ms[..2]).unwrap_err(),
                PlanError::WrongLength { plan: 2, dag: 12 }
            );
        }
    }

    #[test]
    fn never_worse_than_initial_best_and_returns_its_best() {
        for (seed, cfg) in (0..8).flat_map(|s| [(s, config(s)), (s, eft(s))]) {
            let dag = random_dag(seed, 60 + seed as usize, 1 + (seed % 3) as u32);
            let mut woa: Woa<16, 128, 8, NoAdvisor> = Woa::new(cfg, NoAdvisor);
            let ms = woa.run(&dag, &pool()).unwrap();
            assert!(ms <= woa.initial_best_ms());
            let mut ev: Evaluator<128, 8> = Evaluator::new();
            assert_eq!(ev.evaluate(&dag, &pool(), woa.best_plan()).unwrap(), ms);
        }
    }

    #[test]
    fn heft_advisor_makes_woa_at_least_as_good_as_heft() {
        for (seed, cfg) in (0..5).flat_map(|s| [(s, config(s)), (s, eft(s))]) {
            let dag = random_dag(100 + seed, 70, 3);
            let mut heft: Heft<128, 8> = Heft::new();
            let mut plan = Plan::new();
            heft.plan(&dag, &pool(), &mut plan).unwrap();
            let mut ev: Evaluator<128, 8> = Evaluator::new();
            let heft_ms = ev.evaluate(&dag, &pool(), &plan).unwrap();
            let mut woa: Woa<16, 128, 8, HeftAdvisor<128, 8>> = Woa::new(cfg, HeftAdvisor::new());
            let ms = woa.run(&dag, &pool()).unwrap();
            assert!(ms <= heft_ms, "seed {seed}: {ms} > {heft_ms}");
        }
    }

    #[test]
    fn woa_improves_on_random_initialisation() {
        let dag = random_dag(7, 100, 1);
        let mut woa: Woa<16, 128, 8, NoAdvisor> = Woa::new(
            WoaConfig {
                iterations: 60,
                ..config(1)
            },
            NoAdvisor,
        );
        let ms = woa.run(&dag, &pool()).unwrap();
        assert!(
            ms < woa.initial_best_ms(),
            "{ms} vs {}",
            woa.initial_best_ms()
        );
    }

    /// Every whale's decoded plan is valid (a topological order, GPUs in range) and its
    /// makespan is the decoder's list-schedule makespan — for keys of any shape, NaN and ±∞
    /// included.
    #[test]
    fn eft_decoded_plans_are_valid_for_any_keys() {
        let dag = random_dag(11, 90, 3);
        let mut woa: Woa<16, 128, 8, NoAdvisor> = Woa::new(eft(4), NoAdvisor);
        woa.initialize(&dag, &pool()).unwrap();
        let mut ev: Evaluator<128, 8> = Evaluator::new();
        let mut rng = SeededRng::new(5);
        let wild = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1e300,
            0.0,
            1e300,
        ];
        for t in 1..=10 {
            let leader = woa.step_moves(&dag, &pool(), t).unwrap();
            for w in (0..woa.whales()).filter(|&w| w != leader) {
                let ms = ev
                    .evaluate_parts(&dag, &pool(), woa.whale_order(w), woa.whale_assignment(w))
                    .unwrap();
                assert!(ms.is_finite() && ms > 0.0);
            }
            // Scramble one whale's keys and decode it again.
            for k in woa.keys[1][..90].iter_mut() {
                *k = match rng.below(3) {
                    0 => wild[rng.below(wild.len() as u32) as usize],
                    _ => rng.unit_f64() * 1000.0 - 500.0,
                };
            }
            woa.decode_eft(&dag, &pool(), 1).unwrap();
            let ms = ev
                .evaluate_parts(&dag, &pool(), woa.whale_order(1), woa.whale_assignment(1))
                .unwrap();
            assert_eq!(ms, woa.list.makespan_ms());
            let mut seen = [false; 90];
            for &task in woa.whale_order(1) {
                seen[task as usize] = true;
            }
            assert!(seen.iter().all(|&s| s));
            assert!(woa.whale_assignment(1).iter().all(|&g| g < 5));
        }
    }

    /// The precedence-aware decoding finds better plans than the faithful one (same seeds,
    /// no advisor).
    #[test]
    fn eft_priority_beats_load_target_decoding() {
        let (mut wins, mut total_eft, mut total_load) = (0, 0.0, 0.0);
        for seed in 0..6 {
            let dag = random_dag(200 + seed, 100, 2);
            let mut load: Woa<16, 128, 8, NoAdvisor> = Woa::new(config(seed), NoAdvisor);
            let mut prio: Woa<16, 128, 8, NoAdvisor> = Woa::new(eft(seed), NoAdvisor);
            let (a, b) = (
                load.run(&dag, &pool()).unwrap(),
                prio.run(&dag, &pool()).unwrap(),
            );
            wins += usize::from(b < a);
            total_load += a;
            total_eft += b;
        }
        assert_eq!(wins, 6, "{total_eft} vs {total_load}");
    }

    /// Issue 16, defect 5: continuing a search on a smaller DAG (or fewer GPUs) than it was
    /// initialised for returned `WrongLength` with the EFT decoding but panicked (index out of
    /// bounds in `decode`/`update_load`) with the default load-target decoding.
    #[test]
    fn continuing_on_another_problem_is_a_typed_error_not_a_panic() {
        let big = random_dag(5, 60, 2);
        let small = random_dag(5, 20, 2);
        let mut fewer = GpuPool::<8>::new(Bandwidth::PerMs(4.0));
        fewer.add_gpu(1.0).unwrap();
        for cfg in [config(1), eft(1)] {
            let mut woa: Woa<16, 128, 8, NoAdvisor> = Woa::new(cfg, NoAdvisor);
            woa.initialize(&big, &pool()).unwrap();
            let wrong = PlanError::WrongLength { plan: 60, dag: 20 };
            assert_eq!(woa.step_moves(&small, &pool(), 1), Err(wrong));
            assert_eq!(woa.step(&small, &pool(), 1), Err(wrong));
            let ms = [0.0; 16];
            assert_eq!(woa.step_scores(&small, &pool(), 1, 0, &ms), Err(wrong));
            let gpus = PlanError::GpuCountChanged {
                initialized: 5,
                given: 1,
            };
            assert_eq!(woa.step_moves(&big, &fewer, 1), Err(gpus));
            // The search itself is intact: it continues on its own problem.
            woa.step(&big, &pool(), 1).unwrap();
        }
    }

    /// `worl-ls`'s tail: the intensification never loses the elite, spends the budget, and
    /// the same seed and budget give the same plan.
    #[test]
    fn intensification_keeps_the_elite_spends_the_budget_and_is_deterministic() {
        for seed in 0..4u64 {
            let dag = random_dag(300 + seed, 90, 1 + (seed % 3) as u32);
            let budget = 400_000;
            let cfg = WoaConfig {
                population: 8,
                iterations: u32::MAX,
                local_search: Some(LocalSearchConfig::default()),
                work_budget: Some(budget),
                intensify: 0.25,
                ..WoaConfig::new(seed)
            }
            .with_decoding(Decoding::EftInsertion);
            let mut a: Woa<16, 128, 8, NoAdvisor> = Woa::new(cfg, NoAdvisor);
            let ms = a.run(&dag, &pool()).unwrap();
            assert!(ms <= a.initial_best_ms());
            assert!(a.work() >= budget, "{} < {budget}", a.work());
            let mut ev: Evaluator<128, 8> = Evaluator::new();
            assert_eq!(ev.evaluate(&dag, &pool(), a.best_plan()).unwrap(), ms);
            let mut b: Woa<16, 128, 8, NoAdvisor> = Woa::new(cfg, NoAdvisor);
            assert_eq!(b.run(&dag, &pool()).unwrap().to_bits(), ms.to_bits());
            assert_eq!(a.best_plan().gpus(), b.best_plan().gpus());
            assert_eq!(a.best_plan().order(), b.best_plan().order());
        }
    }

    #[test]
    fn whale_order_out_of_range_is_empty() {
        let dag = random_dag(1, 20, 1);
        for cfg in [config(1), eft(1)] {
            let mut woa: Woa<16, 128, 8, NoAdvisor> = Woa::new(cfg, NoAdvisor);
            woa.initialize(&dag, &pool()).unwrap();
            assert_eq!(woa.whale_order(0).len(), 20);
            assert!(woa.whale_order(12).is_empty());
            assert!(woa.whale_order(99).is_empty());
            assert_eq!(
                woa.shares_rank_order(),
                cfg.decoding == Decoding::WorlLoadTarget
            );
        }
    }
}
