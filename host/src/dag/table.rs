//! `gantry dag-table`: the WORL-RTGS acceptance table in markdown — every planner on the WORL
//! slices (100, 1,000, 10,000 tasks × 50, 500 GPUs × synthetic fan-in 1, 3, 100), on the
//! Decima TPC-H batches and on the STG graphs, each makespan with its ratio to the lower bound,
//! then the mean ratio per planner and, for `worl`, `worl-eft` and `woa-eft`, on how many rows
//! each is ≤, < and > HEFT.
//!
//! Rows where tasks × GPUs exceeds [`DagTableArgs::big`] run WOA and WORL with
//! [`DagTableArgs::big_iterations`] iterations instead of [`DagTableArgs::iterations`] (the
//! table marks them with `*`).

use super::{
    Format, GpuSpeeds, LoadOptions, PlannerKind, PlannerOptions, PlannerReport, load, run_planners,
};
use crate::gpu::Device;
use std::fmt::Write as _;
use std::path::PathBuf;

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
    /// Planners (columns), comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [PlannerKind::Worl, PlannerKind::WorlEft, PlannerKind::Heft, PlannerKind::Woa, PlannerKind::WoaEft, PlannerKind::Ddqn, PlannerKind::Random])]
    pub planners: Vec<PlannerKind>,
    /// WORL without the HEFT plan in its initial population (WOA + DDQN only).
    #[arg(long)]
    pub no_heft_seed: bool,
}

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
    out
}

/// Run every row and return the markdown (table, means, WORL-vs-HEFT). Rows whose input is
/// missing are listed as skipped.
pub fn run(args: &DagTableArgs) -> anyhow::Result<String> {
    let mut md = String::new();
    let mut header = String::from("| input | tasks | GPUs | fan-in | lower bound |");
    let mut rule = String::from("|---|---:|---:|---:|---:|");
    for k in &args.planners {
        let _ = write!(header, " {} |", k.name());
        rule.push_str("---|");
    }
    let _ = writeln!(md, "{header}\n{rule}");
    let mut sums = vec![(0.0f64, 0usize); args.planners.len()];
    // Per WORL-like column (worl, worl-eft, woa-eft): (≤ HEFT, < HEFT, > HEFT) row counts.
    let vs_heft_kinds = [PlannerKind::Worl, PlannerKind::WorlEft, PlannerKind::WoaEft];
    let mut vs_heft = [(0usize, 0usize, 0usize); 3];
    let mut compared = 0usize;
    let mut skipped = Vec::new();
    let mut notes = Vec::new();
    let vs_heft_cols = vs_heft_kinds.map(|k| args.planners.iter().position(|&p| p == k));
    let heft_col = args.planners.iter().position(|&k| k == PlannerKind::Heft);
    for spec in rows(args) {
        if !spec.path.exists() {
            skipped.push(spec.path.display().to_string());
            continue;
        }
        let problem = load(&spec.path, &spec.options)?;
        let size = problem.dag.task_count() * spec.options.gpus;
        let big = size > args.big && spec.options.format != Format::Matrix;
        let options = PlannerOptions {
            woa_iterations: if big {
                args.big_iterations
            } else {
                args.iterations
            },
            device: Device::Cpu,
            ddqn_model: args.ddqn_model.clone(),
            ..PlannerOptions::new(args.seed)
        };
        let options = PlannerOptions {
            worl: super::worl_rtgs::WorlConfig {
                heft_seed: !args.no_heft_seed,
                ..options.worl
            },
            ..options
        };
        // WORL and TPC-H are in ms (shown in s); STG and the matrix in their own units.
        let scale = match spec.options.format {
            Format::Worl | Format::Tpch => 1000.0,
            Format::Stg | Format::Matrix => 1.0,
        };
        let clock = std::time::Instant::now();
        let reports: Vec<PlannerReport> = run_planners(&problem, &args.planners, &options)?;
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
        for (i, r) in reports.iter().enumerate() {
            let _ = write!(md, " {:.1} ({:.3}) |", r.makespan / scale, r.ratio);
            sums[i].0 += r.ratio;
            sums[i].1 += 1;
            if let Some(n) = &r.note {
                notes.push(format!("{} / {}: {n}", spec.label, r.planner));
            }
        }
        md.push('\n');
        if let Some(h) = heft_col {
            compared += 1;
            for (count, col) in vs_heft.iter_mut().zip(vs_heft_cols) {
                if let Some(w) = col {
                    let (x, heft) = (reports[w].makespan, reports[h].makespan);
                    count.0 += usize::from(x <= heft);
                    count.1 += usize::from(x < heft);
                    count.2 += usize::from(x > heft);
                }
            }
        }
    }
    let _ = writeln!(
        md,
        "\nCells: makespan (ratio to the lower bound); seconds for WORL and TPC-H, the file's \
         time units for STG and the matrix. `*`: WOA/WORL ran {} iterations instead of {} \
         (tasks × GPUs > {}). WORL's HEFT seed: {}.\n",
        args.big_iterations,
        args.iterations,
        args.big,
        if args.no_heft_seed { "off" } else { "on" }
    );
    let _ = writeln!(
        md,
        "| planner | mean ratio to the lower bound |\n|---|---:|"
    );
    for (k, (s, n)) in args.planners.iter().zip(&sums) {
        let _ = writeln!(md, "| {} | {:.4} |", k.name(), s / (*n).max(1) as f64);
    }
    if compared > 0 {
        md.push('\n');
        for ((kind, col), (le, lt, gt)) in vs_heft_kinds.iter().zip(vs_heft_cols).zip(vs_heft) {
            if col.is_some() {
                let _ = writeln!(
                    md,
                    "{} makespan ≤ HEFT makespan on {le} of {compared} rows, strictly lower \
                     on {lt}, higher on {gt}.  ",
                    kind.name()
                );
            }
        }
    }
    for n in notes {
        let _ = writeln!(md, "\nNote: {n}");
    }
    for s in skipped {
        let _ = writeln!(md, "\nSkipped (missing): {s}");
    }
    Ok(md)
}
