//! `gantry simulate`: one scheduler (its metrics, and optionally its recording, per-job CSV
//! and charts), or with no scheduler flags the combined scheduler `gantry` beside the
//! baselines ([`LINEUP`](crate::lineup::LINEUP)).

use super::shared::{
    create_output, label_fallback, ppo_fallback, rows_of, simulate_all, write_plots,
};
use crate::cli::write_line;
use crate::lineup;
use crate::metrics::{Metrics, RunInfo};
use crate::mixed::hints::PlacementHints;
use crate::record::{self, RecordHeader};
use crate::registry::{CapacitySet, OrderKind, PlacerKind};
use crate::sim::{DagPlannerKind, SchedulerSpec, simulate_with_capacities};
use crate::workload::WorkloadArgs;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

/// A whole scheduler by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NamedScheduler {
    /// TIAS order + learned placer choosing the GPU type by Gavel throughputs (ppo-gavel) +
    /// WORL-RTGS DAG planner.
    Gantry,
}

/// `gantry simulate`'s flags.
#[derive(Args, Debug)]
pub struct SimulateArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Job order (default fifo). Without --order, --placement, --dag-planner or --scheduler,
    /// simulate runs gantry side by side with the baselines.
    #[arg(long, value_enum)]
    order: Option<OrderKind>,
    /// GPU placer (default first-fit).
    #[arg(long, value_enum)]
    placement: Option<PlacerKind>,
    /// How a DAG job's tasks are planned on its GPUs (default list).
    #[arg(long, value_enum)]
    dag_planner: Option<DagPlannerKind>,
    /// A whole scheduler: `gantry` = --order tias --placement ppo-gavel --dag-planner worl.
    #[arg(long, value_enum, conflicts_with_all = ["order", "placement", "dag_planner"])]
    scheduler: Option<NamedScheduler>,
    /// Record every event and decision to this file (replay with `gantry replay`; one
    /// scheduler; on mixed GPU types the machines' speeds and the placer's hints are
    /// recorded too).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Write one CSV row per job (submit, start, finish, GPUs, deadline, met, waiting, …).
    #[arg(long, value_name = "FILE")]
    jobs_csv: Option<PathBuf>,
    /// Core capacities: the host's, or the firmware's (64 GPUs, 256 live jobs, gangs of 8),
    /// to record a stream the firmware must answer identically (`gantry frames convert`; one
    /// scheduler, one GPU type, no DAG jobs).
    #[arg(long, value_enum, default_value_t = CapacitySet::Host)]
    capacities: CapacitySet,
    /// Write SVG charts (JCT CDF, deadline misses, utilisation and queue, a DAG job's Gantt)
    /// into this folder.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Print JSON (one object; an array for the side-by-side run) instead of a table.
    #[arg(long)]
    json: bool,
    /// With a `ppo` or `ppo-gavel` placer: if the model cannot be loaded, run
    /// proximity-greedy under the label `ppo→greedy` instead of failing.
    #[arg(long)]
    allow_fallback: bool,
}

impl SimulateArgs {
    /// The one scheduler asked for, or `None` for the side-by-side lineup.
    pub fn single(&self) -> Option<SchedulerSpec> {
        if self.scheduler == Some(NamedScheduler::Gantry) {
            return Some(SchedulerSpec::GANTRY);
        }
        if self.order.is_none() && self.placement.is_none() && self.dag_planner.is_none() {
            return None;
        }
        Some(SchedulerSpec::new(
            self.order.unwrap_or(OrderKind::Fifo),
            self.placement.unwrap_or(PlacerKind::FirstFit),
            self.dag_planner.unwrap_or(DagPlannerKind::List),
        ))
    }
}

/// Runs `gantry simulate`.
pub fn run(args: &SimulateArgs) -> anyhow::Result<()> {
    let Some(scheduler) = args.single() else {
        anyhow::ensure!(
            args.record.is_none() && args.jobs_csv.is_none(),
            "--record and --jobs-csv describe one scheduler: add --scheduler gantry or \
             --order/--placement/--dag-planner"
        );
        return run_lineup(args);
    };
    let fallback = ppo_fallback(&[scheduler.placer], args.allow_fallback)?;
    let record_file = (args.record.as_deref())
        .map(|p| create_output(p, "--record"))
        .transpose()?;
    if let Some(path) = &args.jobs_csv {
        create_output(path, "--jobs-csv")?;
    }
    let workload = args.workload.load()?;
    let outputs = if args.capacities == CapacitySet::Host {
        simulate_all(&workload, &[scheduler], args.workload.quiet)?
    } else {
        anyhow::ensure!(
            workload.gpu_types.is_none() && workload.extras.dag_jobs() == 0,
            "--capacities {}: the firmware's core simulates one GPU type and no DAG jobs",
            crate::cli::value_name(&args.capacities)
        );
        vec![
            simulate_with_capacities(
                &workload.jobs,
                workload.cluster,
                scheduler.order,
                scheduler.placer,
                &workload.config,
                args.capacities,
            )
            .with_context(|| format!("simulating {}", workload.name))?,
        ]
    };
    let out = &outputs[0];
    if let (Some(path), Some(mut file)) = (&args.record, record_file) {
        let hardware = workload.hardware();
        let hints = PlacementHints::new(&hardware, &workload.extras, workload.jobs.len());
        let header = RecordHeader::new(
            &workload.name,
            workload.cluster,
            scheduler.order,
            scheduler.placer,
            &workload.config,
        )
        .with_capacities(args.capacities)
        .with_hardware(&hardware, hints)?;
        std::io::Write::write_all(&mut file, &record::encode(&header, out))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.jobs_csv {
        Metrics::write_jobs_csv(out, path)?;
    }
    let run = RunInfo::new(&workload.name, workload.cluster, &workload.config);
    let mut metrics = [Metrics::from_output(out).with_run(run)];
    label_fallback(&mut metrics, fallback.as_ref());
    write_plots(args.plot.as_deref(), &workload, &outputs, &metrics)?;
    if args.json {
        write_line(serde_json::to_string(&metrics[0])?)
    } else {
        write_line(workload.describe())?;
        write_line(metrics[0].table())
    }
}

/// The default main job: gantry and the baselines side by side.
fn run_lineup(args: &SimulateArgs) -> anyhow::Result<()> {
    let clock = std::time::Instant::now();
    let placers: Vec<PlacerKind> = lineup::LINEUP.iter().map(|s| s.placer).collect();
    let fallback = ppo_fallback(&placers, args.allow_fallback)?;
    let workload = args.workload.load()?;
    let outputs = simulate_all(&workload, &lineup::LINEUP, args.workload.quiet)?;
    let rows = rows_of(&workload, &outputs, fallback.as_ref());
    write_plots(args.plot.as_deref(), &workload, &outputs, &rows)?;
    if args.json {
        return write_line(serde_json::to_string(&rows)?);
    }
    write_line(workload.describe())?;
    write_line(lineup::table(&rows))?;
    write_line(lineup::LEGEND)?;
    write_line(format!(
        "{} schedulers in {:.1} s. One scheduler: --scheduler gantry or --order/--placement/\
         --dag-planner; charts: --plot DIR",
        rows.len(),
        clock.elapsed().as_secs_f64()
    ))
}
