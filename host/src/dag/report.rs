//! Plan one DAG with several planners and report each plan's makespan (always computed by the
//! core's list-scheduling [`Evaluator`], so planners are compared on one model), the makespan
//! lower bound, and the wall time of planning.

use super::ddqn_env::{Exploration, RolloutError};
use super::planners::{DagRunError, PlannerKind, PlannerOptions, WOA_POP, list_schedule};
use super::search::run_worl_ls;
use super::worl_rtgs::{DdqnAdvisor, WorlConfig, load_model};
use super::{HostPlatform, MAX_GPUS, MAX_TASKS, Problem, on_big_stack};
use crate::gpu::{CudaBatch, CudaConfig, Device, FlatDag, run_woa_batched};
use crate::learn::tract_model::ModelError;
use gantry_core::dag::{
    DagPlanner, Decoding, Evaluator, HeftAdvisor, NoAdvisor, Plan, PlanAdvisor, Platform,
    RandomPlanner, Woa, WoaConfig,
};
use std::time::Instant;

/// One task of a plan as the evaluator scheduled it (for Gantt charts).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct ScheduledTask {
    /// Task id.
    pub task: u32,
    /// GPU index.
    pub gpu: u16,
    /// Start, ms.
    pub start_ms: f64,
    /// Finish, ms.
    pub finish_ms: f64,
}

/// One planner's result on one DAG (`gantry dag --json` prints an array of these).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PlannerReport {
    /// Planner name.
    pub planner: String,
    /// Input name.
    pub input: String,
    /// Tasks in the DAG.
    pub tasks: usize,
    /// Edges in the DAG.
    pub edges: usize,
    /// GPUs.
    pub gpus: usize,
    /// Makespan of the plan by the core evaluator, ms.
    pub makespan: f64,
    /// Makespan lower bound, ms: max(critical path at fastest run times, area bound).
    pub lower_bound: f64,
    /// `makespan / lower_bound` (≥ 1).
    pub ratio: f64,
    /// Wall time of planning, ms (host clock; evaluation of the result not included).
    pub plan_ms: f64,
    /// Seed used.
    pub seed: u64,
    /// Where the planner's populations were evaluated: "cuda" for WOA on the GPU, else "cpu".
    pub evaluated_on: String,
    /// For the list schedulers: their own insertion-based makespan (the papers' figure), ≥
    /// `makespan`.
    pub own_makespan: Option<f64>,
    /// Set when the planner fell back (e.g. `ddqn`/`worl` ran as WOA alone: model missing or
    /// NaN), saying why.
    pub note: Option<String>,
    /// `worl-ls`: the search budget in ms (converted to work units) and the units spent.
    pub budget_ms: Option<u64>,
    /// `worl-ls`: work units spent.
    pub work: Option<u64>,
    /// Unit of `makespan`, `lower_bound` and the schedule's times: `"ms"` (WORL slices, TPC-H)
    /// or `"file units"` (STG, HEFT matrices: whatever unit the file's costs are in).
    pub time_unit: &'static str,
    /// The plan, scheduled (not serialised: large).
    #[serde(skip)]
    pub schedule: Vec<ScheduledTask>,
}

/// Run each planner of `kinds` on `problem` (on the big stack) and report. Deterministic
/// except `plan_ms`; the device changes where WOA's populations are evaluated, not the
/// result (the GPU's makespans are bit-identical to the CPU's).
pub fn run_planners(
    problem: &Problem,
    kinds: &[PlannerKind],
    options: &PlannerOptions,
) -> Result<Vec<PlannerReport>, DagRunError> {
    on_big_stack(|| {
        let wants_woa = kinds.iter().any(|k| {
            matches!(
                k,
                PlannerKind::Woa
                    | PlannerKind::WoaHeft
                    | PlannerKind::WoaEft
                    | PlannerKind::Worl
                    | PlannerKind::WorlEft
                    | PlannerKind::WorlLs
            )
        });
        let mut gpu = if wants_woa {
            open_gpu(problem, options.device)?
        } else {
            None
        };
        match &problem.platform {
            HostPlatform::Pool(p) => run_on(problem, p.as_ref(), kinds, options, &mut gpu),
            HostPlatform::Table(t) => run_on(problem, t.as_ref(), kinds, options, &mut gpu),
        }
    })
}

/// The GPU batch evaluator for `problem` per `device`: `Cpu` → none; `Cuda` → it or the
/// error; `Auto` → it, or a one-line notice on stderr and none.
fn open_gpu(problem: &Problem, device: Device) -> Result<Option<CudaBatch>, DagRunError> {
    if device == Device::Cpu {
        return Ok(None);
    }
    let flat = match &problem.platform {
        HostPlatform::Pool(p) => FlatDag::with_pool(problem.dag.as_ref(), p.as_ref()),
        HostPlatform::Table(t) => FlatDag::with_platform(problem.dag.as_ref(), t.as_ref()),
    };
    match flat.and_then(|f| CudaBatch::new(&f, CudaConfig::default())) {
        Ok(batch) => Ok(Some(batch)),
        Err(e) if device == Device::Auto => {
            eprintln!("gantry: no usable CUDA GPU ({e}); WOA evaluates on the CPU");
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// WOA on `dag`, its populations scored by `gpu` when there is one, else the core path.
fn run_woa<A: PlanAdvisor<MAX_TASKS, E>, const E: usize, M: Platform>(
    woa: &mut Woa<WOA_POP, MAX_TASKS, MAX_GPUS, A>,
    dag: &gantry_core::dag::Dag<MAX_TASKS, E>,
    platform: &M,
    gpu: &mut Option<CudaBatch>,
    plan: &mut Plan<MAX_TASKS>,
) -> Result<(), DagRunError> {
    match gpu {
        Some(batch) => {
            run_woa_batched(woa, dag, platform, batch)?;
            plan.copy_from(woa.best_plan());
        }
        None => woa.plan(dag, platform, plan)?,
    }
    Ok(())
}

/// `ddqn` (greedy plan) or `worl` (WOA + DDQN advisor) into `plan`. Returns (whether `plan`
/// holds a result, the model failure if no DDQN plan came out): `(false, Some(e))` — model
/// missing or NaN, the caller runs WOA alone; `(true, Some(e))` — `worl` got no DDQN plan and
/// its search was plain WOA's.
fn run_learned<const E: usize, M: Platform>(
    kind: PlannerKind,
    dag: &gantry_core::dag::Dag<MAX_TASKS, E>,
    platform: &M,
    options: &PlannerOptions,
    worl: WorlConfig,
    gpu: &mut Option<CudaBatch>,
    plan: &mut Plan<MAX_TASKS>,
) -> Result<(bool, Option<ModelError>), DagRunError> {
    let model = match load_model(&options.ddqn_model) {
        Ok(m) => m,
        Err(e) => return Ok((false, Some(e))),
    };
    let mut advisor = DdqnAdvisor::<MAX_TASKS>::new(model, worl);
    if kind == PlannerKind::Ddqn {
        return match advisor.plan(dag, platform, Exploration::Greedy, plan) {
            Ok(_) => Ok((true, None)),
            Err(RolloutError::Model(e)) => Ok((false, Some(e))),
            Err(RolloutError::Plan(e)) => Err(e.into()),
        };
    }
    let config = WoaConfig {
        population: options.woa_population,
        iterations: options.woa_iterations,
        ..WoaConfig::new(options.seed)
    }
    .with_decoding(decoding_of(kind));
    let mut woa = Box::new(Woa::<WOA_POP, MAX_TASKS, MAX_GPUS, _>::new(config, advisor));
    run_woa(&mut woa, dag, platform, gpu, plan)?;
    let adv = woa.advisor();
    match adv.failure() {
        // No DDQN plan at all: the run was plain WOA; say so.
        Some(e) if adv.proposals() == 0 => Ok((true, Some(ModelError::Run(e.to_string())))),
        _ => Ok((true, None)),
    }
}

/// The WOA decoding a planner kind uses: EFT priority for `woa-eft` / `worl-eft`, the WORL
/// code's load target otherwise.
fn decoding_of(kind: PlannerKind) -> Decoding {
    match kind {
        PlannerKind::WoaEft | PlannerKind::WorlEft => Decoding::EftPriority,
        _ => Decoding::WorlLoadTarget,
    }
}

/// The report label of a learned planner that ran as WOA alone: what ran, and what was asked.
fn fallback_label(kind: PlannerKind) -> String {
    let ran = match decoding_of(kind) {
        Decoding::EftPriority => "woa-eft",
        _ => "woa",
    };
    format!("{ran} (fallback for {})", kind.name())
}

fn fallback_note(path: &std::path::Path, e: &ModelError) -> String {
    format!(
        "DDQN model {} unusable ({e}); ran WOA alone instead",
        path.display()
    )
}

/// Print `msg` on stderr, once per process.
fn warn_once(msg: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| eprintln!("gantry: {msg}"));
}

fn run_on<M: Platform>(
    problem: &Problem,
    platform: &M,
    kinds: &[PlannerKind],
    options: &PlannerOptions,
    gpu: &mut Option<CudaBatch>,
) -> Result<Vec<PlannerReport>, DagRunError> {
    let dag = problem.dag.as_ref();
    let mut eval = Box::new(Evaluator::<MAX_TASKS, MAX_GPUS>::new());
    let lower_bound = eval.lower_bound(dag, platform)?.ms();
    let mut plan = Box::new(Plan::<MAX_TASKS>::new());
    let mut reports = Vec::with_capacity(kinds.len());
    let woa_config = WoaConfig {
        population: options.woa_population,
        iterations: options.woa_iterations,
        ..WoaConfig::new(options.seed)
    };
    for &kind in kinds {
        let clock = Instant::now();
        let mut own_makespan = None;
        let mut note = None;
        let (mut budget_ms, mut work) = (None, None);
        let mut label = kind.name().to_string();
        match kind {
            PlannerKind::Heft
            | PlannerKind::Peft
            | PlannerKind::Cpop
            | PlannerKind::HeftLookahead
            | PlannerKind::Ippts => {
                own_makespan = Some(list_schedule(kind, dag, platform, options, &mut plan)?);
            }
            PlannerKind::Woa | PlannerKind::WoaEft => {
                let mut woa = Box::new(Woa::<WOA_POP, MAX_TASKS, MAX_GPUS, _>::new(
                    woa_config.with_decoding(decoding_of(kind)),
                    NoAdvisor,
                ));
                run_woa(&mut woa, dag, platform, gpu, &mut plan)?;
            }
            PlannerKind::WoaHeft => {
                let mut woa = Box::new(Woa::<WOA_POP, MAX_TASKS, MAX_GPUS, _>::new(
                    woa_config,
                    HeftAdvisor::<MAX_TASKS, MAX_GPUS>::new(),
                ));
                run_woa(&mut woa, dag, platform, gpu, &mut plan)?;
            }
            PlannerKind::Random => {
                RandomPlanner::new(options.seed).plan(dag, platform, &mut plan)?;
            }
            PlannerKind::WorlLs => {
                let outcome = run_worl_ls(dag, platform, options, gpu, &mut plan)?;
                budget_ms = Some(outcome.budget_ms);
                work = Some(outcome.work);
                if let Some(e) = outcome.ddqn_failure {
                    let why = format!(
                        "DDQN model {} unusable ({e}); searched without DDQN seeds",
                        options.ddqn_model.display()
                    );
                    warn_once(&why);
                    note = Some(why);
                }
            }
            PlannerKind::Ddqn | PlannerKind::Worl | PlannerKind::WorlEft => {
                let worl = WorlConfig {
                    seed: options.seed,
                    ..options.worl
                }
                .scaled_for(dag.task_count(), platform.gpu_count());
                let (planned, failure) =
                    run_learned(kind, dag, platform, options, worl, gpu, &mut plan)?;
                if let Some(e) = failure {
                    let why = fallback_note(&options.ddqn_model, &e);
                    if !options.allow_fallback {
                        return Err(DagRunError::ModelUnusable {
                            planner: kind.name(),
                            why: format!(
                                "DDQN model {} unusable ({e})",
                                options.ddqn_model.display()
                            ),
                        });
                    }
                    warn_once(&why);
                    note = Some(why);
                    label = fallback_label(kind);
                }
                if !planned {
                    let mut woa = Box::new(Woa::<WOA_POP, MAX_TASKS, MAX_GPUS, _>::new(
                        woa_config.with_decoding(decoding_of(kind)),
                        NoAdvisor,
                    ));
                    run_woa(&mut woa, dag, platform, gpu, &mut plan)?;
                }
            }
        }
        let plan_ms = clock.elapsed().as_secs_f64() * 1000.0;
        let makespan = eval.evaluate(dag, platform, &plan)?;
        let schedule = plan
            .order()
            .iter()
            .map(|&t| ScheduledTask {
                task: t,
                gpu: plan.gpus()[t as usize],
                start_ms: eval.start_ms()[t as usize],
                finish_ms: eval.finish_ms()[t as usize],
            })
            .collect();
        reports.push(PlannerReport {
            planner: label,
            input: problem.name.clone(),
            tasks: dag.task_count(),
            edges: dag.edge_count(),
            gpus: platform.gpu_count(),
            makespan,
            lower_bound,
            ratio: if lower_bound > 0.0 {
                makespan / lower_bound
            } else {
                1.0
            },
            plan_ms,
            seed: options.seed,
            evaluated_on: match (kind, gpu.is_some()) {
                (
                    PlannerKind::Woa
                    | PlannerKind::WoaHeft
                    | PlannerKind::WoaEft
                    | PlannerKind::Worl
                    | PlannerKind::WorlEft
                    | PlannerKind::WorlLs,
                    true,
                ) => "cuda",
                _ => "cpu",
            }
            .to_string(),
            own_makespan,
            note,
            budget_ms,
            work,
            time_unit: problem.time_unit,
            schedule,
        });
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{Format, LoadOptions, load};
    use std::path::PathBuf;

    /// A quick side-by-side table on the real inputs (not a benchmark: wall times are rough).
    /// `cargo test -p gantry --release dag::report -- --ignored --nocapture`
    #[test]
    #[ignore = "slow in debug builds; prints a table"]
    fn table_on_real_inputs() {
        let Some(traces) = crate::test_support::shared("traces") else {
            return;
        };
        let worl = traces.join("worl-rtgs-alibaba");
        let mut inputs: Vec<(PathBuf, LoadOptions)> = Vec::new();
        for (n, gpus, degree) in [
            (100, 50, 3),
            (1000, 50, 1),
            (1000, 50, 3),
            (1000, 50, 100),
            (1000, 500, 3),
        ] {
            let mut o = LoadOptions::new(Format::Worl);
            (o.gpus, o.degree) = (gpus, degree);
            inputs.push((worl.join(format!("instance{n}.csv")), o));
        }
        let mut o = LoadOptions::new(Format::Tpch);
        o.speeds = crate::dag::GpuSpeeds::WorlCsv(worl.join("GPU.csv"));
        o.gpus = 10;
        inputs.push((traces.join("decima-tpch/tpch_10g.json"), o.clone()));
        inputs.push((
            traces.join("stg-heft-dags/stg/rand0000.stg"),
            LoadOptions {
                gpus: 4,
                format: Format::Stg,
                ..o
            },
        ));
        inputs.push((
            traces.join("stg-heft-dags/topcuoglu2002_canonical"),
            LoadOptions::new(Format::Matrix),
        ));
        let kinds = [
            PlannerKind::Heft,
            PlannerKind::Woa,
            PlannerKind::WoaHeft,
            PlannerKind::Random,
        ];
        println!("input gpus degree planner makespan lower_bound ratio plan_ms");
        for (path, options) in &inputs {
            let problem = load(path, options).unwrap();
            for r in run_planners(&problem, &kinds, &PlannerOptions::new(1)).unwrap() {
                println!(
                    "{} {} {} {} {:.1} {:.1} {:.3} {:.1}",
                    r.input,
                    r.gpus,
                    options.degree,
                    r.planner,
                    r.makespan,
                    r.lower_bound,
                    r.ratio,
                    r.plan_ms
                );
            }
        }
    }

    /// Rough evaluator cost per plan on the 9,790-task slice (criterion benches come later).
    /// `cargo test -p gantry --release dag::report -- --ignored --nocapture`
    #[test]
    #[ignore = "timing; run in release"]
    fn evaluator_time_per_plan_rough() {
        let Some(f) = crate::test_support::shared("traces/worl-rtgs-alibaba/instance10000.csv")
        else {
            return;
        };
        for degree in [3, 100] {
            let mut o = LoadOptions::new(Format::Worl);
            o.degree = degree;
            let problem = load(&f, &o).unwrap();
            let HostPlatform::Pool(pool) = &problem.platform else {
                return;
            };
            on_big_stack(|| {
                let dag = problem.dag.as_ref();
                let mut plan = Box::new(Plan::<MAX_TASKS>::new());
                RandomPlanner::new(1)
                    .plan(dag, pool.as_ref(), &mut plan)
                    .unwrap();
                let mut eval = Box::new(Evaluator::<MAX_TASKS, MAX_GPUS>::new());
                let runs = 200;
                let clock = Instant::now();
                let mut sum = 0.0;
                for _ in 0..runs {
                    sum += eval.evaluate(dag, pool.as_ref(), &plan).unwrap();
                }
                let us = clock.elapsed().as_secs_f64() * 1e6 / f64::from(runs);
                println!(
                    "evaluate: {} tasks, {} edges: {us:.0} µs per plan (checksum {sum:.0})",
                    dag.task_count(),
                    dag.edge_count()
                );
            });
        }
    }
}
