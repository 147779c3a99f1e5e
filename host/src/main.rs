//! `gantry`: the command-line front end. Argument plumbing only; the logic lives in the
//! library modules.

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use gantry::compare;
use gantry::dag::{self, cli::DagArgs};
use gantry::metrics::Metrics;
use gantry::policy::{OrderKind, PlacerKind};
use gantry::proximity::cli::{ScenarioArgs, TrainPlacementArgs, run_scenario, run_train, table};
use gantry::record::{self, RecordHeader};
use gantry::sim::simulate;
use gantry::workload::WorkloadArgs;
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
    /// Simulate several job orders and placers on the same trace, cluster and seed.
    Compare(CompareArgs),
    /// Re-run the core on a recorded event stream; exit 0 only if every decision matches.
    Replay(ReplayArgs),
    /// Plan a DAG workload on heterogeneous GPUs with several planners (HEFT, WOA, random).
    Dag(DagArgs),
    /// Cross-check against the Tiresias simulator's results (the peer anchor): its quirks
    /// copied, per-job identity, gantry's own semantics, run times.
    TiresiasCheck(TiresiasCheckArgs),
    /// Train a learned policy.
    #[command(subcommand)]
    Train(TrainCommand),
    /// The WORL-RTGS acceptance table (markdown): every planner on the WORL slices, TPC-H, STG.
    DagTable(gantry::dag::table::DagTableArgs),
}

#[derive(Subcommand, Debug)]
enum TrainCommand {
    /// PPO GPU placement policy on Proximity-DRL's environment, exported to ONNX.
    Placement(TrainPlacementArgs),
    /// The WORL-RTGS Double DQN (plans DAGs task by task): `gantry train dag --seed N --out models/worl_ddqn.onnx`.
    Dag(gantry::learn::ddqn::TrainDagArgs),
}

/// Which anchor inputs `tiresias-check` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum CheckInput {
    /// The three hand-made traces.
    Tiny,
    /// The 2,000-job Philly slice on n64g8 and n256g8.
    P2k,
    /// The 10,000-job Philly slice on n64g8 and n256g8 (slower).
    P10k,
}

#[derive(Args, Debug)]
struct TiresiasCheckArgs {
    /// The anchor folder (`inputs/`, `perjob/`, `results.md`).
    #[arg(long, default_value = "../shared/anchors/tiresias")]
    anchors: PathBuf,
    /// Inputs, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [CheckInput::Tiny, CheckInput::P2k, CheckInput::P10k])]
    inputs: Vec<CheckInput>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct SimulateArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Job order.
    #[arg(long, value_enum, default_value_t = OrderKind::Fifo)]
    order: OrderKind,
    /// GPU placer.
    #[arg(long, value_enum, default_value_t = PlacerKind::FirstFit)]
    placement: PlacerKind,
    /// Record every event and decision to this file (replay with `gantry replay`).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct CompareArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Job orders, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [OrderKind::Fifo])]
    orders: Vec<OrderKind>,
    /// Placers, comma separated (default: first-fit on a trace; all six on a scenario).
    #[arg(long, value_enum, value_delimiter = ',')]
    placements: Vec<PlacerKind>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// Instead of a trace: a placement scenario (`proximity-drl`, their environment).
    #[command(flatten)]
    scenario: ScenarioArgs,
}

#[derive(Args, Debug)]
struct ReplayArgs {
    /// A file written by `gantry simulate --record`.
    file: PathBuf,
    /// Print the recording as text instead of replaying it.
    #[arg(long)]
    dump: bool,
}

fn run_simulate(args: &SimulateArgs) -> anyhow::Result<()> {
    let workload = args.workload.load()?;
    let out = simulate(
        &workload.jobs,
        workload.cluster,
        args.order,
        args.placement,
        &workload.config,
    )
    .with_context(|| format!("simulating {}", workload.name))?;
    if let Some(path) = &args.record {
        let header = RecordHeader::new(
            &workload.name,
            workload.cluster,
            args.order,
            args.placement,
            &workload.config,
        );
        std::fs::write(path, record::encode(&header, &out))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let metrics = Metrics::from_output(&out);
    if args.json {
        println!("{}", serde_json::to_string(&metrics)?);
    } else {
        println!("{}", workload.describe());
        println!("{}", metrics.table());
    }
    Ok(())
}

fn run_compare(args: &CompareArgs) -> anyhow::Result<()> {
    if args.scenario.scenario.is_some() {
        let mut scenario = args.scenario.clone();
        scenario.json = args.json;
        if !args.placements.is_empty() {
            scenario.placements = args.placements.clone();
        }
        let rows = run_scenario(&scenario)?;
        if args.json {
            println!("{}", serde_json::to_string(&rows)?);
        } else {
            println!("{}", table(&rows));
        }
        return Ok(());
    }
    let workload = args.workload.load()?;
    let placements = if args.placements.is_empty() {
        vec![PlacerKind::FirstFit]
    } else {
        args.placements.clone()
    };
    let rows = compare::compare(&workload, &args.orders, &placements)?;
    if args.json {
        println!("{}", serde_json::to_string(&rows)?);
    } else {
        println!("{}", workload.describe());
        println!("{}", compare::table(&rows));
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
    if let Some(path) = &args.gantt {
        dag::gantt::write_gantt_svg(path, &reports)?;
        eprintln!("gantry: Gantt chart written to {}", path.display());
    }
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

fn run_tiresias_check(args: &TiresiasCheckArgs) -> anyhow::Result<()> {
    use gantry::tiresias_check::{self as tc, PHILLY_2K, PHILLY_10K, TINY};
    let mut inputs = Vec::new();
    for input in &args.inputs {
        inputs.extend_from_slice(match input {
            CheckInput::Tiny => &TINY[..],
            CheckInput::P2k => &PHILLY_2K[..],
            CheckInput::P10k => &PHILLY_10K[..],
        });
    }
    let rows = tc::check(&args.anchors, &inputs)?;
    if args.json {
        println!("{}", serde_json::to_string(&rows)?);
    } else {
        println!("{}", tc::table(&rows));
        for r in rows.iter().filter(|r| !r.first_differences.is_empty()) {
            println!(
                "{} {} {}: {}",
                r.policy,
                r.input,
                r.cluster,
                r.first_differences.join("; ")
            );
        }
    }
    Ok(())
}

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match &cli.command {
        Command::Simulate(args) => run_simulate(args).map(|()| ExitCode::SUCCESS),
        Command::Compare(args) => run_compare(args).map(|()| ExitCode::SUCCESS),
        Command::Replay(args) => run_replay(args),
        Command::Dag(args) => run_dag(args).map(|()| ExitCode::SUCCESS),
        Command::TiresiasCheck(args) => run_tiresias_check(args).map(|()| ExitCode::SUCCESS),
        Command::Train(TrainCommand::Placement(args)) => {
            println!("{}", run_train(args)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Train(TrainCommand::Dag(args)) => {
            let report = gantry::learn::ddqn::run_train_dag(args)?;
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::DagTable(args) => {
            print!("{}", gantry::dag::table::run(args)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}
