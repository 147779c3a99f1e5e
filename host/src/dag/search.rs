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
//! Default budget ([`SearchOptions::budget_ms`] `None`): 1 ms per task, at least 1,000 ms.

use super::report::{DagRunError, PlannerKind, PlannerOptions, WOA_POP, list_schedule};
use super::worl_rtgs::{DdqnAdvisor, WorlConfig, load_model};
use super::{MAX_GPUS, MAX_TASKS};
use crate::gpu::{CudaBatch, run_woa_batched};
use gantry_core::dag::{
    Chain, Dag, DagPlanner, Decoding, LocalSearchConfig, Plan, Platform, SeedPlans, Woa, WoaConfig,
};

/// Work units per millisecond of `--budget-ms` (measured: the search spends 100k–300k units
/// per ms on the development machine, depending on the input's shape).
pub const WORK_UNITS_PER_MS: u64 = 200_000;

/// How `worl-ls` searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SearchOptions {
    /// Budget in ms of search (converted to work units); `None`: 1 ms per task, ≥ 1,000.
    pub budget_ms: Option<u64>,
    /// Seed the population with the list schedulers' plans (HEFT, PEFT, CPOP, lookahead
    /// HEFT, IPPTS): the result is then never worse than any of them.
    pub list_seeds: bool,
    /// DDQN plans in the initial population (greedy + perturbed); 0 = no DDQN.
    pub ddqn_seeds: usize,
}

impl SearchOptions {
    /// Default budget, list seeds on, no DDQN.
    pub const fn new() -> Self {
        Self {
            budget_ms: None,
            list_seeds: true,
            ddqn_seeds: 0,
        }
    }

    /// The budget in ms for a DAG of `tasks` tasks.
    pub fn budget_ms_for(&self, tasks: usize) -> u64 {
        self.budget_ms.unwrap_or((tasks as u64).max(1000))
    }
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self::new()
    }
}

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
