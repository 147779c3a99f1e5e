//! `gantry dag-table`: the DAG-planning acceptance table in markdown — every planner on the
//! WORL slices (100, 1,000, 10,000 tasks × 50, 500 GPUs × synthetic fan-in 1, 3, 100), on the
//! Decima TPC-H batches, on the STG graphs and on the HEFT paper's example; each makespan
//! with its ratio to the lower bound. Then the mean ratios (to the lower bound and to the best
//! list scheduler of the row), how often gantry's default planner `worl-ls` (with and without
//! the list schedulers' plans as seeds) is ≤ the best list scheduler, one `gantry dag`
//! command per row that reproduces it, and the gap of every planner to the proven optimum on
//! small instances ([`super::exact`]).
//!
//! Rows where tasks × GPUs exceeds [`DagTableArgs::big`] run WOA and WORL with
//! [`DagTableArgs::big_iterations`] iterations instead of [`DagTableArgs::iterations`] (the
//! table marks them with `*`). `worl-ls` runs on a work budget (1 ms per task, ≥ 1,000 ms,
//! unless `--budget-ms`).

use super::exact::{ExactConfig, ExactStatus, solve};
use super::{
    Format, GpuSpeeds, HostPlatform, LoadOptions, MAX_TASKS, PlannerKind, PlannerOptions,
    PlannerReport, Problem, load, on_big_stack, run_planners,
};
use crate::gpu::Device;
use gantry_core::dag::{Bandwidth, Plan, TaskId};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `gantry dag-table`.
#[derive(Clone, Debug, clap::Args)]
pub struct DagTableArgs {
    /// The traces folder (holds `worl-rtgs-alibaba/`, `decima-tpch/`, `stg-heft-dags/`).
    #[arg(long, default_value = "../shared/traces")]
    pub traces: PathBuf,
    /// The DDQN model.
    #[arg(long, default_value = super::worl_rtgs::DEFAULT_MODEL)]
    pub ddqn_model: PathBuf,
    /// Seed of synthetic edges, WOA, WORL and random.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// WOA / WORL iterations.
    #[arg(long, default_value_t = 100)]
    pub iterations: u32,
    /// Iterations for rows with tasks × GPUs above `big`.
    #[arg(long, default_value_t = 20)]
    pub big_iterations: u32,
    /// tasks × GPUs threshold of a "big" row.
    #[arg(long, default_value_t = 1_000_000)]
    pub big: usize,
    /// Skip WORL slices above this many tasks (quick runs).
    #[arg(long, default_value_t = 10_000)]
    pub max_tasks: usize,
    /// Only rows whose label contains this text (quick runs).
    #[arg(long)]
    pub only: Option<String>,
    /// Planners (columns), comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = DEFAULT_COLUMNS)]
    pub planners: Vec<PlannerKind>,
    /// No extra `worl-ls` column without the list schedulers' seeds.
    #[arg(long)]
    pub no_unseeded: bool,
    /// `worl-ls` budget in ms (default: 1 ms per task, at least 1,000).
    #[arg(long)]
    pub budget_ms: Option<u64>,
    /// WORL without the HEFT plan in its initial population (WOA + DDQN only).
    #[arg(long)]
    pub no_heft_seed: bool,
    /// Run `ddqn`/`worl`/`worl-eft` as WOA (labelled so) when the model is unusable.
    #[arg(long)]
    pub allow_fallback: bool,
    /// Skip the gap-to-optimum section.
    #[arg(long)]
    pub no_gaps: bool,
    /// Wall-time limit of the exact solver per small instance, s.
    #[arg(long, default_value_t = 10)]
    pub exact_seconds: u64,
}

/// The default columns: gantry's planner, the five list schedulers, the WORL-RTGS family.
pub const DEFAULT_COLUMNS: [PlannerKind; 12] = [
    PlannerKind::WorlLs,
    PlannerKind::Heft,
    PlannerKind::Peft,
    PlannerKind::Cpop,
    PlannerKind::HeftLookahead,
    PlannerKind::Ippts,
    PlannerKind::Worl,
    PlannerKind::WorlEft,
    PlannerKind::Woa,
    PlannerKind::WoaEft,
    PlannerKind::Ddqn,
    PlannerKind::Random,
];

/// The label of the `worl-ls` column without list seeds.
const UNSEEDED: &str = "worl-ls (no seeds)";

/// One table row's input.
struct RowSpec {
    label: String,
    path: PathBuf,
    options: LoadOptions,
    degree: Option<u32>,
}

fn rows(args: &DagTableArgs) -> Vec<RowSpec> {
    let worl = args.traces.join("worl-rtgs-alibaba");
    let speeds = GpuSpeeds::WorlCsv(worl.join("GPU.csv"));
    let mut out = Vec::new();
    for n in [100usize, 1000, 10000] {
        if n > args.max_tasks {
            continue;
        }
        for gpus in [50usize, 500] {
            for degree in [1u32, 3, 100] {
                let mut o = LoadOptions::new(Format::Worl);
                (o.gpus, o.degree, o.seed) = (gpus, degree, args.seed);
                o.speeds = speeds.clone();
                out.push(RowSpec {
                    label: format!("WORL instance{n}"),
                    path: worl.join(format!("instance{n}.csv")),
                    options: o,
                    degree: Some(degree),
                });
            }
        }
    }
    for size in ["2g", "10g", "100g"] {
        let mut o = LoadOptions::new(Format::Tpch);
        (o.gpus, o.speeds) = (10, speeds.clone());
        out.push(RowSpec {
            label: format!("TPC-H {size} (22 queries)"),
            path: args.traces.join(format!("decima-tpch/tpch_{size}.json")),
            options: o,
            degree: None,
        });
    }
    for f in [
        "rand0000", "rand0001", "rand0002", "rand0003", "rand0004", "rand0005", "rand0151",
        "sample04",
    ] {
        let mut o = LoadOptions::new(Format::Stg);
        (o.gpus, o.speeds) = (4, speeds.clone());
        out.push(RowSpec {
            label: format!("STG {f}"),
            path: args.traces.join(format!("stg-heft-dags/stg/{f}.stg")),
            options: o,
            degree: None,
        });
    }
    out.push(RowSpec {
        label: "HEFT paper example (matrix)".into(),
        path: args.traces.join("stg-heft-dags/topcuoglu2002_canonical"),
        options: LoadOptions::new(Format::Matrix),
        degree: None,
    });
    match &args.only {
        Some(only) => out
            .into_iter()
            .filter(|r| r.label.contains(only.as_str()))
            .collect(),
        None => out,
    }
}

/// The planner options of one row.
fn row_options(args: &DagTableArgs, big: bool) -> PlannerOptions {
    let base = PlannerOptions::new(args.seed);
    PlannerOptions {
        woa_iterations: if big {
            args.big_iterations
        } else {
            args.iterations
        },
        device: Device::Cpu,
        ddqn_model: args.ddqn_model.clone(),
        allow_fallback: args.allow_fallback,
        worl: super::worl_rtgs::WorlConfig {
            heft_seed: !args.no_heft_seed,
            ..base.worl
        },
        search: super::SearchOptions {
            budget_ms: args.budget_ms,
            ..base.search
        },
        ..base
    }
}

/// The `gantry dag` command that reproduces a row (same file, format, GPUs and speeds,
/// fan-in, seed, iterations, budget and planners).
fn reproduce(
    spec: &RowSpec,
    args: &DagTableArgs,
    options: &PlannerOptions,
    tasks: usize,
) -> String {
    let o = &spec.options;
    let format = match o.format {
        Format::Worl => "worl",
        Format::Tpch => "tpch",
        Format::Stg => "stg",
        Format::Matrix => "matrix",
    };
    let mut cmd = format!(
        "gantry dag --input {} --format {format}",
        spec.path.display()
    );
    if o.format != Format::Matrix {
        let _ = write!(cmd, " --gpus {}", o.gpus);
    }
    if let Some(d) = spec.degree {
        let _ = write!(cmd, " --degree {d}");
    }
    if let GpuSpeeds::WorlCsv(p) = &o.speeds {
        let _ = write!(cmd, " --gpu-csv {}", p.display());
    }
    let names: Vec<&str> = args.planners.iter().map(|k| k.name()).collect();
    let _ = write!(
        cmd,
        " --seed {} --woa-iterations {} --budget-ms {} --planners {}",
        options.seed,
        options.woa_iterations,
        options.search.budget_ms_for(tasks),
        names.join(",")
    );
    if args.no_heft_seed {
        cmd.push_str(" --no-heft-seed");
    }
    if args.allow_fallback {
        cmd.push_str(" --allow-fallback");
    }
    cmd.push_str(" --device cpu");
    cmd
}

/// Per-column accumulators.
#[derive(Clone, Default)]
struct Column {
    name: String,
    ratio_lb: f64,
    ratio_best_list: f64,
    rows: usize,
    /// ≤, <, > the best list scheduler, and the worst ratio to it.
    le: usize,
    lt: usize,
    gt: usize,
    worst: f64,
}

/// Run every row and return the markdown. Rows whose input is missing are listed as skipped.
pub fn run(args: &DagTableArgs) -> anyhow::Result<String> {
    let mut md = String::new();
    let mut names: Vec<String> = Vec::new();
    for k in &args.planners {
        names.push(k.name().to_string());
        if *k == PlannerKind::WorlLs && !args.no_unseeded {
            names.push(UNSEEDED.to_string());
        }
    }
    let mut header = String::from("| input | tasks | GPUs | fan-in | lower bound |");
    let mut rule = String::from("|---|---:|---:|---:|---:|");
    for n in &names {
        let _ = write!(header, " {n} |");
        rule.push_str("---|");
    }
    let _ = writeln!(md, "{header}\n{rule}");
    let mut columns: Vec<Column> = names
        .iter()
        .map(|n| Column {
            name: n.clone(),
            ..Column::default()
        })
        .collect();
    let mut ceiling = (0.0f64, 0usize);
    let mut skipped = Vec::new();
    let mut notes = Vec::new();
    let mut commands = Vec::new();
    let list_cols: Vec<usize> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            PlannerKind::LIST_SCHEDULERS
                .iter()
                .any(|k| k.name() == n.as_str())
        })
        .map(|(i, _)| i)
        .collect();
    for spec in rows(args) {
        if !spec.path.exists() {
            skipped.push(spec.path.display().to_string());
            continue;
        }
        let problem = load(&spec.path, &spec.options)?;
        let tasks = problem.dag.task_count();
        let big = tasks * spec.options.gpus > args.big && spec.options.format != Format::Matrix;
        let options = row_options(args, big);
        let clock = std::time::Instant::now();
        let mut reports = run_planners(&problem, &args.planners, &options)?;
        if !args.no_unseeded
            && let Some(at) = args.planners.iter().position(|&k| k == PlannerKind::WorlLs)
        {
            let unseeded = PlannerOptions {
                search: super::SearchOptions {
                    list_seeds: false,
                    ..options.search
                },
                ..options.clone()
            };
            let mut extra = run_planners(&problem, &[PlannerKind::WorlLs], &unseeded)?;
            if let Some(mut r) = extra.pop() {
                r.planner = UNSEEDED.into();
                reports.insert(at + 1, r);
            }
        }
        eprintln!(
            "dag-table: {} ({} GPUs, fan-in {:?}) in {:.1} s",
            spec.label,
            reports.first().map_or(0, |r| r.gpus),
            spec.degree,
            clock.elapsed().as_secs_f64()
        );
        let Some(first) = reports.first() else {
            continue;
        };
        let scale = if first.time_unit == "ms" { 1000.0 } else { 1.0 };
        let _ = write!(
            md,
            "| {}{} | {} | {} | {} | {:.1} |",
            spec.label,
            if big { " *" } else { "" },
            first.tasks,
            first.gpus,
            spec.degree.map_or("—".to_string(), |d| d.to_string()),
            first.lower_bound / scale
        );
        let best_list = list_cols
            .iter()
            .map(|&c| reports[c].makespan)
            .fold(f64::INFINITY, f64::min);
        if best_list.is_finite() && best_list > 0.0 {
            ceiling.0 += first.lower_bound / best_list;
            ceiling.1 += 1;
        }
        for (col, r) in columns.iter_mut().zip(&reports) {
            let _ = write!(md, " {:.1} ({:.3}) |", r.makespan / scale, r.ratio);
            col.ratio_lb += r.ratio;
            col.rows += 1;
            if best_list.is_finite() && best_list > 0.0 {
                let to_best = r.makespan / best_list;
                col.ratio_best_list += to_best;
                col.le += usize::from(r.makespan <= best_list);
                col.lt += usize::from(r.makespan < best_list);
                col.gt += usize::from(r.makespan > best_list);
                col.worst = col.worst.max(to_best);
            }
            if let Some(n) = &r.note {
                notes.push(format!("{} / {}: {n}", spec.label, r.planner));
            }
        }
        md.push('\n');
        commands.push(format!(
            "- {}{}: `{}`",
            spec.label,
            spec.degree.map_or(String::new(), |d| format!(
                " ({} GPUs, fan-in {d})",
                spec.options.gpus
            )),
            reproduce(&spec, args, &options, tasks)
        ));
    }
    summary(&mut md, args, &columns, ceiling);
    let _ = writeln!(
        md,
        "\nEach row with one command (add `--no-list-seeds --planners worl-ls` for the `{UNSEEDED}` \
         column):\n"
    );
    for c in commands {
        let _ = writeln!(md, "{c}");
    }
    for n in notes {
        let _ = writeln!(md, "\nNote: {n}");
    }
    for s in skipped {
        let _ = writeln!(md, "\nSkipped (missing): {s}");
    }
    if !args.no_gaps {
        md.push_str(&gap_section(args)?);
    }
    Ok(md)
}

/// Means, counts against the best list scheduler, and the lower-bound ceiling.
fn summary(md: &mut String, args: &DagTableArgs, columns: &[Column], ceiling: (f64, usize)) {
    let _ = writeln!(
        md,
        "\nCells: makespan (ratio to the lower bound); seconds for WORL and TPC-H, the file's \
         time units for STG and the matrix. `*`: WOA/WORL ran {} iterations instead of {} \
         (tasks × GPUs > {}). WORL's HEFT seed: {}. `worl-ls` budget: {}.\n",
        args.big_iterations,
        args.iterations,
        args.big,
        if args.no_heft_seed { "off" } else { "on" },
        args.budget_ms
            .map_or("1 ms per task, at least 1,000 ms".to_string(), |b| format!(
                "{b} ms"
            ))
    );
    let _ = writeln!(
        md,
        "| planner | mean ratio to the lower bound | mean ratio to the best list scheduler | ≤ best list scheduler | < best list scheduler | worst ratio to it |\n|---|---:|---:|---:|---:|---:|"
    );
    for c in columns {
        let rows = c.rows.max(1) as f64;
        let _ = writeln!(
            md,
            "| {} | {:.4} | {:.4} | {} of {} | {} | {:.4} |",
            c.name,
            c.ratio_lb / rows,
            c.ratio_best_list / rows,
            c.le,
            c.rows,
            c.lt,
            c.worst
        );
    }
    if ceiling.1 > 0 {
        let _ = writeln!(
            md,
            "\nCeiling: the mean over rows of (lower bound / best list scheduler) is {:.4} — no \
             planner can have a lower mean ratio to the best list scheduler than this, since no \
             plan beats the lower bound.",
            ceiling.0 / ceiling.1 as f64
        );
    }
}

/// One small instance of the gap section.
struct Small {
    label: String,
    problem: Problem,
}

/// The small instances: the HEFT paper's example, STG sample00/01/02 on 2 and 4 GPUs (WORL
/// speeds), 10 generated DAGs of 12–18 tasks on 3 GPUs with transfers, and the 52-task STG
/// rows of the main table (usually beyond a proof in the time limit: reported with the gap).
fn small_instances(args: &DagTableArgs) -> anyhow::Result<Vec<Small>> {
    let mut out = Vec::new();
    let matrix = args.traces.join("stg-heft-dags/topcuoglu2002_canonical");
    if matrix.exists() {
        out.push(Small {
            label: "HEFT paper example (10 tasks, 3 GPUs)".into(),
            problem: load(&matrix, &LoadOptions::new(Format::Matrix))?,
        });
    }
    let gpu_csv = args.traces.join("worl-rtgs-alibaba/GPU.csv");
    for f in ["sample00", "sample01", "sample02"] {
        let path = args.traces.join(format!("stg-heft-dags/stg/{f}.stg"));
        if !path.exists() {
            continue;
        }
        for gpus in [2usize, 4] {
            let mut o = LoadOptions::new(Format::Stg);
            o.gpus = gpus;
            o.speeds = GpuSpeeds::WorlCsv(gpu_csv.clone());
            let problem = load(&path, &o)?;
            out.push(Small {
                label: format!("STG {f} ({} tasks, {gpus} GPUs)", problem.dag.task_count()),
                problem,
            });
        }
    }
    for seed in 1..=10u64 {
        let problem = generated(seed);
        out.push(Small {
            label: format!(
                "generated #{seed} ({} tasks, 3 GPUs)",
                problem.dag.task_count()
            ),
            problem,
        });
    }
    for f in [
        "rand0000", "rand0001", "rand0002", "rand0003", "rand0004", "rand0005", "rand0151",
        "sample04",
    ] {
        let path = args.traces.join(format!("stg-heft-dags/stg/{f}.stg"));
        if !path.exists() {
            continue;
        }
        let mut o = LoadOptions::new(Format::Stg);
        o.gpus = 4;
        o.speeds = GpuSpeeds::WorlCsv(gpu_csv.clone());
        let problem = load(&path, &o)?;
        out.push(Small {
            label: format!("STG {f} ({} tasks, 4 GPUs)", problem.dag.task_count()),
            problem,
        });
    }
    Ok(out)
}

/// A generated instance: 12–18 tasks, each with 1 to 3 random earlier predecessors, work
/// 1–20, data 0–10 at bandwidth 2, on GPUs of speed 1.0, 1.5 and 0.7.
fn generated(seed: u64) -> Problem {
    on_big_stack(|| {
        let mut rng = gantry_core::SeededRng::new(seed);
        let n = 12 + rng.below(7);
        let mut dag = Box::new(super::HostDag::new());
        for _ in 0..n {
            // Cannot fail: far below the capacity, finite work.
            let _ = dag.add_task(1.0 + f64::from(rng.below(20)));
        }
        for j in 1..n {
            for _ in 0..1 + rng.below(3) {
                let _ = dag.add_edge(TaskId(rng.below(j)), TaskId(j), f64::from(rng.below(11)));
            }
        }
        let _ = dag.seal();
        let mut pool = Box::new(super::HostPool::new(Bandwidth::PerMs(2.0)));
        for s in [1.0, 1.5, 0.7] {
            let _ = pool.add_gpu(s);
        }
        Problem {
            name: format!("generated-{seed}"),
            dag,
            platform: HostPlatform::Pool(pool),
            time_unit: "file units",
        }
    })
}

/// A report's schedule back as a plan.
fn plan_of(report: &PlannerReport, tasks: usize) -> Box<Plan<MAX_TASKS>> {
    let mut plan = Box::new(Plan::<MAX_TASKS>::new());
    if plan.reset(tasks).is_ok() && report.schedule.len() == tasks {
        for (i, s) in report.schedule.iter().enumerate() {
            plan.order_mut()[i] = s.task;
            plan.gpus_mut()[s.task as usize] = s.gpu;
        }
    }
    plan
}

/// The gap-to-optimum section: every planner against the branch and bound's optimum.
fn gap_section(args: &DagTableArgs) -> anyhow::Result<String> {
    let mut md = String::from("\n### Gap to the optimum on small instances\n\n");
    let mut names: Vec<String> = Vec::new();
    let mut header =
        String::from("| instance | optimum (or best known) | status | nodes | lower bound |");
    let mut rule = String::from("|---|---:|---|---:|---:|");
    let instances = small_instances(args)?;
    let mut sums: Vec<(f64, usize)> = Vec::new();
    let mut bound_ok = 0usize;
    let mut proven = 0usize;
    for small in &instances {
        let options = PlannerOptions {
            woa_iterations: args.iterations,
            ..row_options(args, false)
        };
        let mut reports = run_planners(&small.problem, &args.planners, &options)?;
        if !args.no_unseeded {
            let unseeded = PlannerOptions {
                search: super::SearchOptions {
                    list_seeds: false,
                    ..options.search
                },
                ..options.clone()
            };
            if let Some(mut r) =
                run_planners(&small.problem, &[PlannerKind::WorlLs], &unseeded)?.pop()
            {
                r.planner = UNSEEDED.into();
                reports.push(r);
            }
        }
        if names.is_empty() {
            for r in &reports {
                names.push(r.planner.clone());
                let _ = write!(header, " {} |", r.planner);
                rule.push_str("---:|");
            }
            sums = vec![(0.0, 0); names.len()];
            let _ = writeln!(md, "{header}\n{rule}");
        }
        let tasks = small.problem.dag.task_count();
        let plans: Vec<Box<Plan<MAX_TASKS>>> = reports.iter().map(|r| plan_of(r, tasks)).collect();
        let config = ExactConfig {
            time_limit: Duration::from_secs(args.exact_seconds),
            ..ExactConfig::new()
        };
        let exact = on_big_stack(|| {
            let refs: Vec<&Plan<MAX_TASKS>> = plans.iter().map(|p| p.as_ref()).collect();
            match &small.problem.platform {
                HostPlatform::Pool(p) => {
                    solve(small.problem.dag.as_ref(), p.as_ref(), &refs, config)
                }
                HostPlatform::Table(t) => {
                    solve(small.problem.dag.as_ref(), t.as_ref(), &refs, config)
                }
            }
        })?;
        let lower_bound = reports.first().map_or(0.0, |r| r.lower_bound);
        let optimal = exact.status == ExactStatus::Optimal;
        if optimal {
            proven += 1;
            bound_ok += usize::from(lower_bound <= exact.makespan * (1.0 + 1e-12));
        }
        let status = match exact.status {
            ExactStatus::Optimal => "optimal".to_string(),
            ExactStatus::Feasible { lower_bound } => {
                format!("≥ {lower_bound:.1} (gap {:.1} %)", 100.0 * exact.gap())
            }
        };
        let _ = write!(
            md,
            "| {} | {:.1} | {status} | {} | {:.1} |",
            small.label, exact.makespan, exact.nodes, lower_bound
        );
        for (i, r) in reports.iter().enumerate() {
            let gap = (r.makespan - exact.makespan) / exact.makespan;
            let _ = write!(md, " {:.2} % |", 100.0 * gap);
            if optimal && let Some(s) = sums.get_mut(i) {
                s.0 += gap;
                s.1 += 1;
            }
        }
        md.push('\n');
        eprintln!("dag-table: gap {} in {} nodes", small.label, exact.nodes);
    }
    let _ = writeln!(
        md,
        "\nCells: each planner's gap to the optimum, `(makespan − optimum) / optimum` (to the \
         best plan known where the search stopped at its limit: status `≥ bound`). The optimum \
         is the branch and bound's (`host/src/dag/exact.rs`; {} s per instance; incumbents = \
         every planner's plan). Proven optimal on {proven} of {} instances; gantry's lower \
         bound ≤ the optimum on all {bound_ok} of them.\n",
        args.exact_seconds,
        instances.len()
    );
    let _ = writeln!(
        md,
        "| planner | mean gap to the optimum (proven instances) |\n|---|---:|"
    );
    for (name, (sum, n)) in names.iter().zip(&sums) {
        let _ = writeln!(md, "| {name} | {:.2} % |", 100.0 * sum / (*n).max(1) as f64);
    }
    Ok(md)
}

/// Evaluate `plan` (used by tests).
#[cfg(test)]
fn evaluate(problem: &Problem, plan: &Plan<MAX_TASKS>) -> f64 {
    on_big_stack(|| {
        let mut ev = Box::new(gantry_core::dag::Evaluator::<MAX_TASKS, { super::MAX_GPUS }>::new());
        match &problem.platform {
            HostPlatform::Pool(p) => ev.evaluate(problem.dag.as_ref(), p.as_ref(), plan),
            HostPlatform::Table(t) => ev.evaluate(problem.dag.as_ref(), t.as_ref(), plan),
        }
        .unwrap_or(f64::NAN)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report's schedule turns back into the plan it came from.
    #[test]
    fn report_schedules_round_trip_to_plans() {
        let problem = generated(3);
        let options = PlannerOptions::new(1);
        let reports =
            run_planners(&problem, &[PlannerKind::Heft, PlannerKind::Peft], &options).unwrap();
        for r in &reports {
            let plan = plan_of(r, problem.dag.task_count());
            assert_eq!(evaluate(&problem, &plan), r.makespan, "{}", r.planner);
        }
    }

    /// The reproduce line names every setting of the row.
    #[test]
    fn reproduce_names_speeds_gpus_degree_seed_budget_and_planners() {
        let args = DagTableArgs {
            traces: PathBuf::from("/t"),
            ddqn_model: PathBuf::from("m.onnx"),
            seed: 7,
            iterations: 100,
            big_iterations: 20,
            big: 1_000_000,
            max_tasks: 10_000,
            only: None,
            planners: vec![PlannerKind::WorlLs, PlannerKind::Heft],
            no_unseeded: false,
            budget_ms: None,
            no_heft_seed: true,
            allow_fallback: false,
            no_gaps: true,
            exact_seconds: 10,
        };
        let spec = rows(&args).into_iter().next().unwrap();
        let cmd = reproduce(&spec, &args, &row_options(&args, false), 100);
        for part in [
            "--input /t/worl-rtgs-alibaba/instance100.csv",
            "--format worl",
            "--gpus 50",
            "--degree 1",
            "--gpu-csv /t/worl-rtgs-alibaba/GPU.csv",
            "--seed 7",
            "--woa-iterations 100",
            "--budget-ms 1000",
            "--planners worl-ls,heft",
            "--no-heft-seed",
        ] {
            assert!(cmd.contains(part), "{part} missing in {cmd}");
        }
    }
}
