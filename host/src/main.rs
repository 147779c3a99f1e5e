//! `gantry`: the command-line front end.

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use gantry::dag::{self, cli::DagArgs};
use gantry::metrics::Metrics;
use gantry::policy::{OrderKind, PlacerKind};
use gantry::proximity::cli::{ScenarioArgs, TrainPlacementArgs, run_scenario, run_train, table};
use gantry::record::{self, RecordHeader};
use gantry::sample;
use gantry::sim::{ClusterSpec, FaultConfig, SimConfig, SpeedModel, simulate};
use gantry::trace::{TraceJob, philly};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// gantry: a GPU-cluster scheduling core (TIAS job order, Proximity-DRL placement,
/// WORL-RTGS DAG planning) and its trace-driven simulator.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a trace on a cluster with one job order and one placer, print metrics.
    Simulate(SimulateArgs),
    /// Re-run the core on a recorded event stream; exit 0 only if every decision matches.
    Replay(ReplayArgs),
    /// Plan a DAG workload on heterogeneous GPUs with several planners (HEFT, WOA, random).
    Dag(DagArgs),
    /// Compare placers on a scenario (`--scenario proximity-drl`).
    Compare(CompareArgs),
    /// Train a learned policy.
    #[command(subcommand)]
    Train(TrainCommand),
}

#[derive(Args, Debug)]
struct CompareArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
}

#[derive(Subcommand, Debug)]
enum TrainCommand {
    /// PPO GPU placement policy on Proximity-DRL's environment, exported to ONNX.
    Placement(TrainPlacementArgs),
}

#[derive(Args, Debug)]
struct ReplayArgs {
    /// A file written by `gantry simulate --record`.
    file: PathBuf,
    /// Print the recording as text instead of replaying it.
    #[arg(long)]
    dump: bool,
}

/// Trace formats `--format` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TraceFormat {
    /// `timestamp,duration,num_gpus,gpu_time,cluster` (Pollux's philly.csv).
    Philly,
}

#[derive(Args, Debug)]
struct SimulateArgs {
    /// Trace file; default: the bundled 1,500-job Philly sample.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Trace format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Philly)]
    format: TraceFormat,
    /// Cluster shape RACKSxMACHINESxGPUS.
    #[arg(long, default_value_t = ClusterSpec::DEFAULT)]
    cluster: ClusterSpec,
    /// Job order.
    #[arg(long, value_enum, default_value_t = OrderKind::Fifo)]
    order: OrderKind,
    /// GPU placer.
    #[arg(long, value_enum, default_value_t = PlacerKind::FirstFit)]
    placement: PlacerKind,
    /// Keep the first N jobs by submit time.
    #[arg(long)]
    limit: Option<usize>,
    /// Seed for every random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// How placement affects job speed.
    #[arg(long, value_enum, default_value_t = SpeedModel::CommCost)]
    speed_model: SpeedModel,
    /// Re-evaluation period while jobs are live, seconds.
    #[arg(long, default_value_t = 60)]
    tick_s: u64,
    /// Restart overhead charged after each preemption, seconds.
    #[arg(long, default_value_t = 0)]
    restart_overhead_s: u64,
    /// Inject seeded GPU failures: mean failures per GPU per day (1 h mean repair, one in ten
    /// drains a whole machine).
    #[arg(long)]
    faults: Option<f64>,
    /// Record every event and decision to this file (replay with `gantry replay`).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

fn load_trace(
    path: Option<&PathBuf>,
    format: TraceFormat,
    limit: Option<usize>,
) -> anyhow::Result<(String, Vec<TraceJob>)> {
    match (path, format) {
        (None, _) => Ok((
            sample::PHILLY_SAMPLE_NAME.to_string(),
            sample::philly_sample(limit)?,
        )),
        (Some(p), TraceFormat::Philly) => Ok((p.display().to_string(), philly::load(p, limit)?)),
    }
}

fn run_simulate(args: &SimulateArgs) -> anyhow::Result<()> {
    let (name, jobs) = load_trace(args.trace.as_ref(), args.format, args.limit)?;
    let config = SimConfig {
        tick_ms: args.tick_s.saturating_mul(1000),
        restart_overhead_ms: args.restart_overhead_s.saturating_mul(1000),
        seed: args.seed,
        speed_model: args.speed_model,
        faults: args.faults.map(FaultConfig::with_rate),
    };
    let out = simulate(&jobs, args.cluster, args.order, args.placement, &config)
        .with_context(|| format!("simulating {name}"))?;
    if let Some(path) = &args.record {
        let header = RecordHeader::new(&name, args.cluster, args.order, args.placement, &config);
        std::fs::write(path, record::encode(&header, &out))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let metrics = Metrics::from_output(&out);
    if args.json {
        println!("{}", serde_json::to_string(&metrics)?);
    } else {
        println!(
            "trace: {name} ({} jobs), cluster {} ({} GPUs), seed {}",
            jobs.len(),
            args.cluster,
            args.cluster.gpus(),
            args.seed
        );
        println!("{}", metrics.table());
    }
    Ok(())
}

fn run_replay(args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let recording = record::read(&args.file)?;
    if args.dump {
        // A closed pipe (`| head`) is not an error for a dump.
        let _ = std::io::stdout()
            .lock()
            .write_all(record::dump(&recording).as_bytes());
        return Ok(ExitCode::SUCCESS);
    }
    let report = record::replay(&recording)?;
    match &report.mismatch {
        None => {
            println!(
                "{}: all {} entries replayed, every decision matches",
                args.file.display(),
                report.total
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(m) => {
            println!(
                "{}: {} of {} entries matched; {m}",
                args.file.display(),
                report.matched,
                report.total
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

fn run_dag(args: &DagArgs) -> anyhow::Result<()> {
    let problem = dag::load(&args.input, &args.load_options())?;
    let reports = dag::run_planners(&problem, &args.planners, &args.planner_options())?;
    if args.json {
        println!("{}", serde_json::to_string(&reports)?);
        return Ok(());
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header([
        "planner",
        "tasks",
        "edges",
        "gpus",
        "makespan (ms)",
        "lower bound (ms)",
        "ratio",
        "plan (ms)",
    ]);
    for r in &reports {
        table.add_row([
            r.planner.clone(),
            r.tasks.to_string(),
            r.edges.to_string(),
            r.gpus.to_string(),
            format!("{:.1}", r.makespan),
            format!("{:.1}", r.lower_bound),
            format!("{:.3}", r.ratio),
            format!("{:.1}", r.plan_ms),
        ]);
    }
    println!("input: {} (seed {})", args.input.display(), args.seed);
    println!("{table}");
    Ok(())
}

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match &cli.command {
        Command::Simulate(args) => run_simulate(args).map(|()| ExitCode::SUCCESS),
        Command::Replay(args) => run_replay(args),
        Command::Dag(args) => run_dag(args).map(|()| ExitCode::SUCCESS),
        Command::Compare(args) => run_compare(args).map(|()| ExitCode::SUCCESS),
        Command::Train(TrainCommand::Placement(args)) => {
            println!("{}", run_train(args)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_compare(args: &CompareArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.scenario.scenario.is_some(),
        "compare needs --scenario (e.g. --scenario proximity-drl)"
    );
    let rows = run_scenario(&args.scenario)?;
    if args.scenario.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        println!("{}", table(&rows));
    }
    Ok(())
}
