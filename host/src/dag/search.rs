//! `worl-ls`, gantry's default DAG planner: the core's WOA over priority keys with the
//! insertion decoding ([`Decoding::EftInsertion`]), the memetic critical-path local search
//! and kick ([`LocalSearch`](gantry_core::dag::LocalSearch)), seeded (by default) with the
//! five list schedulers' plans and optionally with DDQN plans, run for a deterministic work
//! budget.
//!
//! # Budget: work, not wall time
//! `--budget-ms N` becomes `N ×` [`WORK_UNITS_PER_MS`] work units; the core counts units
//! (decoding candidates, gap-search steps, evaluated tasks and edges, local-search sweeps)
//! and stops when they are spent. The same input, seed and budget give the same plan on
//! every machine; the wall time is only about N ms (the constant was measured on the 2-core
//! development machine; `plan_ms` in the report says what it really took). The list
//! schedulers' seeds are computed before the search and are not part of the budget.
//!
//! Default budget ([`SearchOptions::budget_ms`](super::SearchOptions::budget_ms) `None`): 1 ms per task, at least 1,000 ms.

use super::planners::{DagRunError, PlannerKind, PlannerOptions, WOA_POP, list_schedule};
use super::worl_rtgs::{DdqnAdvisor, WorlConfig, load_model};
use super::{MAX_GPUS, MAX_TASKS};
use crate::gpu::{CudaBatch, run_woa_batched};
use gantry_core::dag::{
    Chain, Dag, DagPlanner, Decoding, LocalSearchConfig, Plan, Platform, SeedPlans, Woa, WoaConfig,
};

/// Work units per millisecond of `--budget-ms` (measured: the search spends 100k–300k units
/// per ms on the development machine, depending on the input's shape).
pub const WORK_UNITS_PER_MS: u64 = 200_000;

/// Share of the budget `worl-ls` keeps for its end: variable-neighbourhood and iterated
/// local search from the elite ([`WoaConfig::intensify`]).
pub const INTENSIFY_SHARE: f64 = 0.25;

/// What a `worl-ls` run did, for the report.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchOutcome {
    /// Budget used, ms (as configured).
    pub budget_ms: u64,
    /// Work units spent.
    pub work: u64,
    /// Set when DDQN seeds were asked for and the model could not be used.
    pub ddqn_failure: Option<String>,
}

/// Run `worl-ls` on `dag` into `plan`.
pub fn run_worl_ls<const E: usize, M: Platform>(
    dag: &Dag<MAX_TASKS, E>,
    platform: &M,
    options: &PlannerOptions,
    gpu: &mut Option<CudaBatch>,
    plan: &mut Plan<MAX_TASKS>,
) -> Result<SearchOutcome, DagRunError> {
    let search = options.search;
    let budget_ms = search.budget_ms_for(dag.task_count());
    let (ddqn, ddqn_failure) = ddqn_advisor(options, search.ddqn_seeds);
    let ddqn_whales = ddqn.as_ref().map_or(0, |_| search.ddqn_seeds + 1);
    let mut seeds = Box::new(SeedPlans::<MAX_TASKS, 5>::new(ddqn_whales));
    if search.list_seeds {
        for kind in PlannerKind::LIST_SCHEDULERS {
            list_schedule(kind, dag, platform, options, plan)?;
            // Five slots for five schedulers: cannot be full.
            let _ = seeds.push(plan);
        }
    }
    let config = WoaConfig {
        population: options.woa_population,
        iterations: u32::MAX,
        local_search: Some(LocalSearchConfig::default()),
        work_budget: Some(budget_ms.saturating_mul(WORK_UNITS_PER_MS)),
        intensify: INTENSIFY_SHARE,
        ..WoaConfig::new(options.seed)
    }
    .with_decoding(Decoding::EftInsertion);
    let advisor = Chain {
        first: ddqn,
        second: *seeds,
    };
    let mut woa = Box::new(Woa::<WOA_POP, MAX_TASKS, MAX_GPUS, _>::new(config, advisor));
    match gpu {
        Some(batch) => {
            run_woa_batched(woa.as_mut(), dag, platform, batch)?;
            plan.copy_from(woa.best_plan());
        }
        None => woa.plan(dag, platform, plan)?,
    }
    Ok(SearchOutcome {
        budget_ms,
        work: woa.work(),
        ddqn_failure,
    })
}

/// The DDQN advisor for `seeds` perturbed plans (plus the greedy one), without HEFT seed or
/// refinement; `None` when `seeds` is 0 or the model cannot be loaded (then with the reason).
fn ddqn_advisor(
    options: &PlannerOptions,
    seeds: usize,
) -> (Option<DdqnAdvisor<MAX_TASKS>>, Option<String>) {
    if seeds == 0 {
        return (None, None);
    }
    match load_model(&options.ddqn_model) {
        Ok(model) => {
            let config = WorlConfig {
                seeds,
                refine_every: 0,
                heft_seed: false,
                ..WorlConfig::new(options.seed)
            };
            (Some(DdqnAdvisor::new(model, config)), None)
        }
        Err(e) => (None, Some(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::SearchOptions;
    use crate::dag::report::run_planners;
    use crate::dag::{HostDag, HostPlatform, HostPool, Problem, on_big_stack};
    use gantry_core::SeededRng;
    use gantry_core::dag::{Bandwidth, TaskId};

    fn problem(seed: u64) -> Problem {
        on_big_stack(|| {
            let mut rng = SeededRng::new(seed);
            let mut dag = Box::new(HostDag::new());
            for _ in 0..150 {
                dag.add_task(10.0 + f64::from(rng.below(200))).unwrap();
            }
            for j in 1..150u32 {
                for _ in 0..2.min(j) {
                    dag.add_edge(TaskId(rng.below(j)), TaskId(j), f64::from(rng.below(30)))
                        .unwrap();
                }
            }
            dag.seal().unwrap();
            let mut pool = Box::new(HostPool::new(Bandwidth::PerMs(4.0)));
            for g in 0..6 {
                pool.add_gpu(0.5 + 0.2 * f64::from(g)).unwrap();
            }
            Problem {
                name: "search-test".into(),
                dag,
                platform: HostPlatform::Pool(pool),
                time_unit: "ms",
            }
        })
    }

    fn options(budget_ms: u64, list_seeds: bool) -> PlannerOptions {
        PlannerOptions {
            search: SearchOptions {
                budget_ms: Some(budget_ms),
                list_seeds,
                ddqn_seeds: 0,
            },
            ..PlannerOptions::new(5)
        }
    }

    /// Seeded, `worl-ls` is never worse than any list scheduler; the same seed and budget give
    /// the same plan; the work spent stays within the budget plus one step.
    #[test]
    fn seeded_never_worse_than_list_schedulers_and_deterministic() {
        for seed in [1, 2] {
            let p = problem(seed);
            let mut kinds = vec![PlannerKind::WorlLs];
            kinds.extend(PlannerKind::LIST_SCHEDULERS);
            let r = run_planners(&p, &kinds, &options(20, true)).unwrap();
            let best_list = r[1..]
                .iter()
                .map(|x| x.makespan)
                .fold(f64::INFINITY, f64::min);
            assert!(
                r[0].makespan <= best_list,
                "{} > {best_list}",
                r[0].makespan
            );
            let again = run_planners(&p, &[PlannerKind::WorlLs], &options(20, true)).unwrap();
            assert_eq!(again[0].makespan.to_bits(), r[0].makespan.to_bits());
            assert_eq!(again[0].schedule, r[0].schedule);
            let budget = 20 * WORK_UNITS_PER_MS;
            let work = r[0].work.unwrap();
            assert!(
                work >= budget / 2 && work < budget + budget / 2,
                "{work} vs {budget}"
            );
            assert_eq!(r[0].budget_ms, Some(20));
        }
    }

    /// More budget never hurts here, and without seeds the search still beats a random plan
    /// by far (it stands on its own).
    #[test]
    fn unseeded_search_improves_with_budget() {
        let p = problem(3);
        let kinds = [PlannerKind::WorlLs, PlannerKind::Random, PlannerKind::Heft];
        let small = run_planners(&p, &kinds, &options(2, false)).unwrap();
        let large = run_planners(&p, &kinds, &options(40, false)).unwrap();
        assert!(large[0].makespan <= small[0].makespan * 1.001);
        assert!(small[0].makespan < 0.8 * small[1].makespan);
        assert!(large[0].work.unwrap() > small[0].work.unwrap());
    }
}
