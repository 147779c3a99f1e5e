//! `gantry`: the command-line front end.

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use gantry::metrics::Metrics;
use gantry::policy::{OrderKind, PlacerKind};
use gantry::sample;
use gantry::sim::{ClusterSpec, SimConfig, SpeedModel, simulate};
use gantry::trace::{TraceJob, philly};
use std::path::PathBuf;

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
    };
    let out = simulate(&jobs, args.cluster, args.order, args.placement, &config)
        .with_context(|| format!("simulating {name}"))?;
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

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match &cli.command {
        Command::Simulate(args) => run_simulate(args),
    }
}
