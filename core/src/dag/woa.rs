//! Whale Optimization over DAG plans (Mirjalili & Lewis, Adv. Eng. Software 95, 2016), with
//! the running-time-gap decoding of the WORL-RTGS code (Du et al., BDCC 9(11):284, 2025).
//!
//! # Positions
//! A whale is an assignment task → GPU. Its continuous position has one coordinate per task:
//! `X_i = load of the GPU task i is on` (sum of the run times of that GPU's tasks), as in the
//! WORL code (`gpuLoad[assignment[i]]`).
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
//! # Decoding (the WORL code's running-time gap)
//! Visit tasks in HEFT's upward-rank order ([`upward_rank_order`], a topological order; the
//! WORL code uses task-index order, which its inputs keep topological). Every GPU starts at
//! load 0; task i goes to the GPU g minimising `|X'_i − (load_g + run(i, g))|` (ties: lowest
//! g), then `load_g += run(i, g)`. The whale's plan is (that assignment, the rank order).
//!
//! # Elitism and the advisor
//! The best plan ever evaluated is kept whole (assignment and order) and returned, so WOA
//! never returns worse than its initial best. A [`PlanAdvisor`] fills each slot of the initial
//! population it wants to (the rest is random), and after each iteration may inject one plan
//! that replaces the worst whale (ties: highest index). A proposal is evaluated twice: with
//! its own order (for the elite) and with WOA's order (as a whale).
//!
//! Cost: one iteration O(POP·(T·P + E)); memory `POP·(2T + 8P) + 70·T + 16·P` bytes.

use super::eval::{Evaluator, Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;
use super::heft::upward_rank_order;
use super::planner::{AdvisorContext, DagPlanner, PlanAdvisor};
use crate::rng::SeededRng;

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
}

impl WoaConfig {
    /// Population 30, 100 iterations, b = 1 (Mirjalili's defaults).
    pub const fn new(seed: u64) -> Self {
        Self {
            population: 30,
            iterations: 100,
            spiral_b: 1.0,
            seed,
        }
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
    best: Plan<T>,
    best_ms: f64,
    initial_best_ms: f64,
    proposal: Plan<T>,
    eval: Evaluator<T, P>,
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
            best: Plan::new(),
            best_ms: f64::INFINITY,
            initial_best_ms: f64::INFINITY,
            proposal: Plan::new(),
            eval: Evaluator::new(),
        }
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
        for w in 0..self.whales {
            let ctx = AdvisorContext {
                iteration: 0,
                whale: w,
                best_ms: self.best_ms,
            };
            if !self.take_proposal(dag, platform, ctx, w)? {
                for g in self.assign[w][..n].iter_mut() {
                    *g = self.rng.below(p as u32) as u16;
                }
            }
            self.score_whale(dag, platform, w)?;
        }
        self.initial_best_ms = self.best_ms;
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
        let Ok(ms) = self.eval.evaluate(dag, platform, &self.proposal) else {
            return Ok(false);
        };
        if ms < self.best_ms {
            self.best_ms = ms;
            self.best.copy_from(&self.proposal);
        }
        self.assign[w][..n].copy_from_slice(self.proposal.gpus());
        Ok(true)
    }

    /// Evaluate whale `w` with the rank order, update its loads and the elite. O(T + E).
    fn score_whale<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        w: usize,
    ) -> Result<(), PlanError> {
        let n = self.tasks;
        let ms = self
            .eval
            .evaluate_parts(dag, platform, &self.order[..n], &self.assign[w][..n])?;
        self.update_load(dag, platform, w);
        self.record(w, ms);
        Ok(())
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
            order.copy_from_slice(&self.order[..n]);
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
        let leader = self.step_moves(dag, platform, t);
        let n = self.tasks;
        for w in 0..self.whales {
            if w == leader {
                continue;
            }
            let ms =
                self.eval
                    .evaluate_parts(dag, platform, &self.order[..n], &self.assign[w][..n])?;
            self.record(w, ms);
        }
        self.finish_step(dag, platform, t)
    }

    /// First half of iteration `t`: move and decode every whale but the leader (whose index
    /// is returned) and update their loads; evaluates nothing. Afterwards
    /// [`whale_assignment`](Self::whale_assignment) and [`rank_order`](Self::rank_order) are
    /// the population to evaluate. O(POP·T·P).
    pub fn step_moves<const E: usize, M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        t: u32,
    ) -> usize {
        let iterations = f64::from(self.config.iterations.max(1));
        let a = 2.0 * (1.0 - f64::from(t.saturating_sub(1)) / iterations);
        let leader = self.extreme(false);
        for w in 0..self.whales {
            if w == leader {
                continue;
            }
            self.move_whale(w, leader, a);
            self.decode(dag, platform, w);
            self.update_load(dag, platform, w);
        }
        leader
    }

    /// Second half of iteration `t`: `makespans_ms[w]` is the makespan of whale `w`'s
    /// assignment with the rank order, for every whale but `leader` (whose entry is ignored);
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
        }
        Ok(())
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

    /// The order every whale is evaluated with (HEFT upward rank). O(1).
    pub fn rank_order(&self) -> &[u32] {
        &self.order[..self.tasks]
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
        let me = (&self.assign[w], &self.load[w]);
        let x = |i: usize| me.1[usize::from(me.0[i])];
        if p < 0.5 {
            let other = if libm::fabs(big_a) < 1.0 {
                leader
            } else {
                self.rng.below(self.whales as u32) as usize
            };
            let (oa, ol) = (&self.assign[other], &self.load[other]);
            for i in 0..n {
                let xr = ol[usize::from(oa[i])];
                self.target[i] = xr - big_a * libm::fabs(big_c * xr - x(i));
            }
        } else {
            let spiral =
                libm::exp(self.config.spiral_b * l) * libm::cos(2.0 * core::f64::consts::PI * l);
            let (la, ll) = (&self.assign[leader], &self.load[leader]);
            for i in 0..n {
                let xs = ll[usize::from(la[i])];
                self.target[i] = libm::fabs(xs - x(i)) * spiral + xs;
            }
        }
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
            self.step(dag, platform, t)?;
        }
        Ok(self.best_ms)
    }
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
    use crate::dag::{Bandwidth, GpuPool, Heft, HeftAdvisor, NoAdvisor, TaskId};

    fn random_dag(seed: u64, n: usize, degree: u32) -> Dag<128, 1024> {
        let mut rng = SeededRng::new(seed);
        let mut dag = Dag::new();
        for _ in 0..n {
            dag.add_task(10.0 + rng.below(90) as f64).unwrap();
        }
        for j in 1..n {
            for _ in 0..degree.min(j as u32) {
                let i = rng.below(j as u32);
                dag.add_edge(TaskId(i), TaskId(j as u32), rng.below(20) as f64)
                    .unwrap();
            }
        }
        dag.seal().unwrap();
        dag
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
            spiral_b: 1.0,
            seed,
        }
    }

    #[test]
    fn same_seed_same_plan_and_makespan() {
        let dag = random_dag(3, 80, 2);
        let mut a: Woa<16, 128, 8, NoAdvisor> = Woa::new(config(9), NoAdvisor);
        let mut b: Woa<16, 128, 8, NoAdvisor> = Woa::new(config(9), NoAdvisor);
        let (mut pa, mut pb) = (Plan::new(), Plan::new());
        a.plan(&dag, &pool(), &mut pa).unwrap();
        b.plan(&dag, &pool(), &mut pb).unwrap();
        assert_eq!(a.best_ms().to_bits(), b.best_ms().to_bits());
        assert_eq!(pa.gpus(), pb.gpus());
        assert_eq!(pa.order(), pb.order());
        // Running again on the same object reproduces it too.
        a.plan(&dag, &pool(), &mut pb).unwrap();
        assert_eq!(pa.gpus(), pb.gpus());
    }

    /// The split iteration (moves, outside evaluation, scores) is the same search as `step`,
    /// advisor injections included.
    #[test]
    fn split_step_matches_step() {
        for seed in 1u64..=3 {
            let dag = random_dag(seed, 70, 3);
            let mut a: Woa<16, 128, 8, HeftAdvisor<128, 8>> =
                Woa::new(config(seed), HeftAdvisor::new());
            let mut b: Woa<16, 128, 8, HeftAdvisor<128, 8>> =
                Woa::new(config(seed), HeftAdvisor::new());
            a.initialize(&dag, &pool()).unwrap();
            b.initialize(&dag, &pool()).unwrap();
            let mut ev: Evaluator<128, 8> = Evaluator::new();
            let mut ms = [0.0; 16];
            for t in 1..=a.config().iterations {
                a.step(&dag, &pool(), t).unwrap();
                let leader = b.step_moves(&dag, &pool(), t);
                for (w, slot) in ms.iter_mut().enumerate().take(b.whales()) {
                    *slot = if w == leader {
                        f64::NAN
                    } else {
                        ev.evaluate_parts(&dag, &pool(), b.rank_order(), b.whale_assignment(w))
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
        for seed in 0..8 {
            let dag = random_dag(seed, 60 + seed as usize, 1 + (seed % 3) as u32);
            let mut woa: Woa<16, 128, 8, NoAdvisor> = Woa::new(config(seed), NoAdvisor);
            let ms = woa.run(&dag, &pool()).unwrap();
            assert!(ms <= woa.initial_best_ms());
            let mut ev: Evaluator<128, 8> = Evaluator::new();
            assert_eq!(ev.evaluate(&dag, &pool(), woa.best_plan()).unwrap(), ms);
        }
    }

    #[test]
    fn heft_advisor_makes_woa_at_least_as_good_as_heft() {
        for seed in 0..5 {
            let dag = random_dag(100 + seed, 70, 3);
            let mut heft: Heft<128, 8> = Heft::new();
            let mut plan = Plan::new();
            heft.plan(&dag, &pool(), &mut plan).unwrap();
            let mut ev: Evaluator<128, 8> = Evaluator::new();
            let heft_ms = ev.evaluate(&dag, &pool(), &plan).unwrap();
            let mut woa: Woa<16, 128, 8, HeftAdvisor<128, 8>> =
                Woa::new(config(seed), HeftAdvisor::new());
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
}
