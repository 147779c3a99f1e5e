//! The DAG-planning extension points: [`DagPlanner`] (make a whole plan) and
//! [`PlanAdvisor`] (propose a plan to a search, e.g. a learned DDQN seeding WOA), plus the
//! seeded random baseline.

use super::eval::{Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;
use crate::rng::SeededRng;

/// One way to plan a DAG: HEFT, WOA, random, later the DDQN. Statically dispatched.
pub trait DagPlanner<const T: usize, const E: usize> {
    /// Short name for reports ("heft", "woa", "random").
    fn name(&self) -> &'static str;
    /// Write a complete, valid plan for `dag` on `platform` into `out` (resized to the DAG).
    /// Errors: unsealed DAG, no GPU, capacities exceeded.
    fn plan<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        out: &mut Plan<T>,
    ) -> Result<(), PlanError>;
}

/// What a search tells an advisor when it asks for a plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdvisorContext {
    /// 0 while the population is initialised, then `1..=iterations`.
    pub iteration: u32,
    /// The population slot the proposal would fill.
    pub whale: usize,
    /// Best makespan found so far (infinite before any evaluation).
    pub best_ms: f64,
}

/// A source of whole plans for a search (WOA): seeds its population and may inject plans
/// during the search. A learned model (the DDQN) plugs in here; the search evaluates every
/// proposal and keeps it only on its merits, so a bad advisor cannot make the result worse
/// than the search without it, only use its evaluations.
pub trait PlanAdvisor<const T: usize, const E: usize> {
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// Fill `out` (already sized to the DAG) with a proposal and return `true`, or return
    /// `false` to let the search use its own (random) plan.
    fn propose<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        ctx: AdvisorContext,
        out: &mut Plan<T>,
    ) -> bool;
}

/// The advisor that never proposes: plain WOA.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAdvisor;

impl<const T: usize, const E: usize> PlanAdvisor<T, E> for NoAdvisor {
    fn name(&self) -> &'static str {
        "none"
    }

    fn propose<M: Platform>(
        &mut self,
        _dag: &Dag<T, E>,
        _platform: &M,
        _ctx: AdvisorContext,
        _out: &mut Plan<T>,
    ) -> bool {
        false
    }
}

/// Up to `K` fixed plans (e.g. the list schedulers' plans) proposed as the initial whales
/// `first_whale..first_whale + len`: a search seeded with them can only improve on them.
#[derive(Clone, Debug)]
pub struct SeedPlans<const T: usize, const K: usize> {
    first_whale: usize,
    len: usize,
    plans: [Plan<T>; K],
}

impl<const T: usize, const K: usize> SeedPlans<T, K> {
    /// No plans yet; they will fill whales from `first_whale` on.
    pub fn new(first_whale: usize) -> Self {
        Self {
            first_whale,
            len: 0,
            plans: core::array::from_fn(|_| Plan::new()),
        }
    }

    /// Add a copy of `plan`; `Err(K)` (the capacity) when all slots are taken. O(T).
    pub fn push(&mut self, plan: &Plan<T>) -> Result<(), usize> {
        let slot = self.plans.get_mut(self.len).ok_or(K)?;
        slot.copy_from(plan);
        self.len += 1;
        Ok(())
    }

    /// Plans held. O(1).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is held. O(1).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<const T: usize, const E: usize, const K: usize> PlanAdvisor<T, E> for SeedPlans<T, K> {
    fn name(&self) -> &'static str {
        "seeds"
    }

    /// Whale `first_whale + k` at initialisation gets plan k if it matches the DAG. O(T).
    fn propose<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        _platform: &M,
        ctx: AdvisorContext,
        out: &mut Plan<T>,
    ) -> bool {
        if ctx.iteration != 0 || ctx.whale < self.first_whale {
            return false;
        }
        match self.plans[..self.len].get(ctx.whale - self.first_whale) {
            Some(plan) if plan.len() == dag.task_count() => {
                out.copy_from(plan);
                true
            }
            _ => false,
        }
    }
}

/// Two advisors in turn: `first` is asked first, `second` when `first` declines.
#[derive(Clone, Debug)]
pub struct Chain<A, B> {
    /// Asked first.
    pub first: A,
    /// Asked when `first` declines.
    pub second: B,
}

impl<const T: usize, const E: usize, A: PlanAdvisor<T, E>, B: PlanAdvisor<T, E>> PlanAdvisor<T, E>
    for Chain<A, B>
{
    fn name(&self) -> &'static str {
        self.first.name()
    }

    fn propose<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        ctx: AdvisorContext,
        out: &mut Plan<T>,
    ) -> bool {
        self.first.propose(dag, platform, ctx, out) || self.second.propose(dag, platform, ctx, out)
    }
}

/// An optional advisor: `None` never proposes (a configuration can switch one off without
/// changing the search's type).
impl<const T: usize, const E: usize, A: PlanAdvisor<T, E>> PlanAdvisor<T, E> for Option<A> {
    fn name(&self) -> &'static str {
        match self {
            Some(a) => a.name(),
            None => "none",
        }
    }

    fn propose<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        ctx: AdvisorContext,
        out: &mut Plan<T>,
    ) -> bool {
        self.as_mut()
            .is_some_and(|a| a.propose(dag, platform, ctx, out))
    }
}

/// The baseline: every task on a uniformly random GPU, tasks in the DAG's topological order.
#[derive(Clone, Debug)]
pub struct RandomPlanner {
    rng: SeededRng,
}

impl RandomPlanner {
    /// A random planner whose whole output is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: SeededRng::new(seed),
        }
    }
}

/// Fill `out` with random GPUs (from `rng`) and the DAG's topological order. O(T).
pub(crate) fn random_plan<const T: usize, const E: usize>(
    rng: &mut SeededRng,
    dag: &Dag<T, E>,
    gpus: usize,
    out: &mut Plan<T>,
) -> Result<(), PlanError> {
    out.reset(dag.task_count())?;
    let (g, o) = out.parts_mut();
    for x in g.iter_mut() {
        *x = rng.below(gpus as u32) as u16;
    }
    o.copy_from_slice(dag.topo_order());
    Ok(())
}

impl<const T: usize, const E: usize> DagPlanner<T, E> for RandomPlanner {
    fn name(&self) -> &'static str {
        "random"
    }

    /// O(T).
    fn plan<M: Platform>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &M,
        out: &mut Plan<T>,
    ) -> Result<(), PlanError> {
        let (_, p) = check_sizes::<T, { u16::MAX as usize }, T, E>(dag, platform)?;
        random_plan(&mut self.rng, dag, p, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{Bandwidth, Evaluator, GpuPool, TaskId};

    #[test]
    fn random_plan_is_valid_and_seeded() {
        let mut d: Dag<16, 16> = Dag::new();
        for i in 0..10 {
            d.add_task(1.0 + i as f64).unwrap();
        }
        for i in 1..10 {
            d.add_edge(TaskId(i - 1), TaskId(i), 0.0).unwrap();
        }
        d.seal().unwrap();
        let mut pool: GpuPool<4> = GpuPool::new(Bandwidth::Infinite);
        for s in [1.0, 2.0, 3.0] {
            pool.add_gpu(s).unwrap();
        }
        let (mut a, mut b) = (Plan::new(), Plan::new());
        RandomPlanner::new(5).plan(&d, &pool, &mut a).unwrap();
        RandomPlanner::new(5).plan(&d, &pool, &mut b).unwrap();
        assert_eq!(a.gpus(), b.gpus());
        assert!(a.gpus().iter().all(|&g| g < 3));
        let mut ev: Evaluator<16, 4> = Evaluator::new();
        assert!(ev.evaluate(&d, &pool, &a).unwrap() > 0.0);
        let empty: GpuPool<4> = GpuPool::default();
        assert_eq!(
            RandomPlanner::new(1).plan(&d, &empty, &mut a),
            Err(PlanError::NoGpus)
        );
    }
}

#[cfg(test)]
mod seed_tests {
    use super::*;
    use crate::dag::test_support::topcuoglu_example;
    use crate::dag::{Heft, Woa, WoaConfig};

    /// Seeded plans fill the whales from `first_whale`, a search keeps the best of them, and
    /// a plan of another size is declined.
    #[test]
    fn seed_plans_fill_their_whales_and_bound_the_result() {
        let (dag, table) = topcuoglu_example();
        let mut heft_plan = Plan::new();
        let mut heft: Heft<16, 3> = Heft::new();
        heft.plan(&dag, &table, &mut heft_plan).unwrap();
        let mut seeds: SeedPlans<16, 2> = SeedPlans::new(1);
        seeds.push(&heft_plan).unwrap();
        let mut wrong = Plan::new();
        wrong.reset(3).unwrap();
        seeds.push(&wrong).unwrap();
        assert_eq!(seeds.push(&heft_plan), Err(2));
        let ctx = |whale| AdvisorContext {
            iteration: 0,
            whale,
            best_ms: f64::INFINITY,
        };
        let mut out = Plan::new();
        assert!(!PlanAdvisor::<16, 32>::propose(
            &mut seeds,
            &dag,
            &table,
            ctx(0),
            &mut out
        ));
        assert!(PlanAdvisor::<16, 32>::propose(
            &mut seeds,
            &dag,
            &table,
            ctx(1),
            &mut out
        ));
        assert_eq!(out.gpus(), heft_plan.gpus());
        assert!(!PlanAdvisor::<16, 32>::propose(
            &mut seeds,
            &dag,
            &table,
            ctx(2),
            &mut out
        ));
        let chained = Chain {
            first: NoAdvisor,
            second: seeds,
        };
        let cfg = WoaConfig {
            population: 4,
            iterations: 3,
            ..WoaConfig::new(1)
        };
        let mut woa: Woa<4, 16, 3, _> = Woa::new(cfg, chained);
        let ms = woa.run(&dag, &table).unwrap();
        assert!(ms <= 80.0, "{ms}");
    }
}
