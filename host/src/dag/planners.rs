//! The planners `gantry dag` knows and how they are asked for: [`PlannerKind`],
//! [`PlannerOptions`] (with `worl-ls`'s [`SearchOptions`]), the list schedulers run by kind
//! ([`list_schedule`]) and the error of running any of them ([`DagRunError`]). Shared by the
//! report ([`run_planners`](super::run_planners)) and the search (`worl-ls`), which both
//! build on it.

use super::worl_rtgs::{DEFAULT_MODEL, WorlConfig};
use super::{MAX_GPUS, MAX_TASKS};
use crate::gpu::{Device, GpuError};
use gantry_core::dag::{
    Cpop, Dag, DagPlanner, Heft, HeftLookahead, Ippts, LookaheadConfig, Peft, Plan, PlanError,
    Platform,
};
use std::path::PathBuf;

/// Why [`run_planners`](super::run_planners) failed.
#[derive(Debug, thiserror::Error)]
pub enum DagRunError {
    /// A planner or the evaluator refused the problem.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// `--device cuda` and the GPU path could not run (or failed mid-run).
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A learned planner's model could not be used and fallbacks were not allowed.
    #[error(
        "planner {planner}: {why} (pass --allow-fallback to run WOA alone instead, labelled so)"
    )]
    ModelUnusable {
        /// The planner asked for.
        planner: &'static str,
        /// What went wrong.
        why: String,
    },
}

/// Population capacity of the host's WOA (the population actually used is
/// [`PlannerOptions::woa_population`]).
pub const WOA_POP: usize = 64;

/// The planners `gantry dag --planners` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlannerKind {
    /// HEFT (Topcuoglu et al. 2002).
    Heft,
    /// PEFT (Arabnejad & Barbosa 2014): optimistic cost table for priority and GPU choice.
    Peft,
    /// CPOP (Topcuoglu et al. 2002): the critical path on one processor.
    Cpop,
    /// Lookahead HEFT (Bittencourt, Sakellariou & Madeira 2010): a GPU is chosen by its
    /// children's finish times.
    HeftLookahead,
    /// IPPTS (Djigal et al. 2021): predict cost matrix in priority and GPU choice.
    Ippts,
    /// Whale Optimization with a random initial population.
    Woa,
    /// Whale Optimization whose population is seeded with the HEFT plan.
    WoaHeft,
    /// Whale Optimization with the EFT-priority decoding (per-task priority keys around the
    /// upward rank, EFT list scheduling; `Decoding::EftPriority`), random initial keys.
    WoaEft,
    /// Seeded random assignment, topological order.
    Random,
    /// The Double DQN's greedy plan (ONNX model run with tract).
    Ddqn,
    /// WORL-RTGS: WOA seeded and refined with DDQN plans (see `worl_rtgs`).
    Worl,
    /// WORL-RTGS with the EFT-priority decoding instead of the WORL code's load target.
    WorlEft,
    /// gantry's default: WOA with the insertion decoding, critical-path local search and a
    /// work budget, seeded with the list schedulers' plans ([`super::search`]).
    WorlLs,
}

impl PlannerKind {
    /// The list schedulers (one pass, no search): the baselines a search must beat.
    pub const LIST_SCHEDULERS: [PlannerKind; 5] = [
        PlannerKind::Heft,
        PlannerKind::Peft,
        PlannerKind::Cpop,
        PlannerKind::HeftLookahead,
        PlannerKind::Ippts,
    ];

    /// Whether this is one of [`Self::LIST_SCHEDULERS`].
    pub fn is_list_scheduler(self) -> bool {
        Self::LIST_SCHEDULERS.contains(&self)
    }

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            PlannerKind::Heft => "heft",
            PlannerKind::Peft => "peft",
            PlannerKind::Cpop => "cpop",
            PlannerKind::HeftLookahead => "heft-lookahead",
            PlannerKind::Ippts => "ippts",
            PlannerKind::Woa => "woa",
            PlannerKind::WoaHeft => "woa-heft",
            PlannerKind::WoaEft => "woa-eft",
            PlannerKind::Random => "random",
            PlannerKind::Ddqn => "ddqn",
            PlannerKind::Worl => "worl",
            PlannerKind::WorlEft => "worl-eft",
            PlannerKind::WorlLs => "worl-ls",
        }
    }
}

/// Settings shared by the planners of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannerOptions {
    /// Seed of WOA and random.
    pub seed: u64,
    /// WOA whales (clamped to 1..=[`WOA_POP`]).
    pub woa_population: usize,
    /// WOA iterations.
    pub woa_iterations: u32,
    /// Where WOA evaluates its populations (other planners always use the CPU).
    pub device: Device,
    /// The DDQN's ONNX Q-network (`ddqn`, `worl`).
    pub ddqn_model: PathBuf,
    /// How WORL-RTGS uses the DDQN (its `seed` is replaced by [`seed`](Self::seed)).
    pub worl: WorlConfig,
    /// Bounds of `heft-lookahead`; `None` = [`LookaheadConfig::for_size`] of the problem.
    pub lookahead: Option<LookaheadConfig>,
    /// How `worl-ls` searches (budget, seeds).
    pub search: SearchOptions,
    /// When `ddqn`/`worl`/`worl-eft` cannot use the model: run WOA alone and label the row
    /// with what ran (`true`), or fail (`false`).
    pub allow_fallback: bool,
}

impl PlannerOptions {
    /// WOA with Mirjalili's defaults: 30 whales, 100 iterations.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            woa_population: 30,
            woa_iterations: 100,
            device: Device::Cpu,
            ddqn_model: PathBuf::from(DEFAULT_MODEL),
            worl: WorlConfig::new(seed),
            lookahead: None,
            search: SearchOptions::new(),
            allow_fallback: false,
        }
    }
}

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

/// The lookahead bounds for this problem: the caller's, else [`LookaheadConfig::for_size`].
pub fn lookahead_config<const E: usize>(
    options: &PlannerOptions,
    dag: &Dag<MAX_TASKS, E>,
    platform: &impl Platform,
) -> LookaheadConfig {
    options.lookahead.unwrap_or_else(|| {
        LookaheadConfig::for_size(dag.task_count(), dag.edge_count(), platform.gpu_count())
    })
}

/// Run list scheduler `kind` into `plan`; returns its own (insertion-based) makespan. Each
/// scratch is boxed; PEFT's and IPPTS's tables are sized to the problem.
pub fn list_schedule<const E: usize, M: Platform>(
    kind: PlannerKind,
    dag: &Dag<MAX_TASKS, E>,
    platform: &M,
    options: &PlannerOptions,
    plan: &mut Plan<MAX_TASKS>,
) -> Result<f64, PlanError> {
    fn run<P: DagPlanner<MAX_TASKS, E>, const E: usize, M: Platform>(
        mut planner: Box<P>,
        dag: &Dag<MAX_TASKS, E>,
        platform: &M,
        plan: &mut Plan<MAX_TASKS>,
        own: impl Fn(&P) -> f64,
    ) -> Result<f64, PlanError> {
        planner.plan(dag, platform, plan)?;
        Ok(own(&planner))
    }
    // PEFT's and IPPTS's task × GPU tables, sized to the problem.
    let cells = dag.task_count() * platform.gpu_count();
    match kind {
        PlannerKind::Peft => run(
            Box::new(Peft::<MAX_TASKS, MAX_GPUS, _>::with_table(vec![0.0; cells])),
            dag,
            platform,
            plan,
            |p| p.makespan_ms(),
        ),
        PlannerKind::Cpop => run(
            Box::new(Cpop::<MAX_TASKS, MAX_GPUS>::new()),
            dag,
            platform,
            plan,
            |p| p.makespan_ms(),
        ),
        PlannerKind::HeftLookahead => run(
            Box::new(HeftLookahead::<MAX_TASKS, MAX_GPUS>::new(lookahead_config(
                options, dag, platform,
            ))),
            dag,
            platform,
            plan,
            |p| p.makespan_ms(),
        ),
        PlannerKind::Ippts => run(
            Box::new(Ippts::<MAX_TASKS, MAX_GPUS, _>::with_table(vec![
                0.0;
                cells
            ])),
            dag,
            platform,
            plan,
            |p| p.makespan_ms(),
        ),
        _ => run(
            Box::new(Heft::<MAX_TASKS, MAX_GPUS>::new()),
            dag,
            platform,
            plan,
            |p| p.makespan_ms(),
        ),
    }
}
