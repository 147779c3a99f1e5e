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
