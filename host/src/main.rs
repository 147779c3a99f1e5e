//! `gantry`: the command-line front end. Argument plumbing only; the logic lives in the
//! library modules.

use anyhow::Context;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use gantry::cli::{
    PpoModel, check_ppo_model, error_text, is_closed_pipe, refuse_flags, write_line, write_out,
};
use gantry::cluster::hints::PlacementHints;
use gantry::compare;
use gantry::dag::{self, cli::DagArgs};
use gantry::frames;
use gantry::learn::scorer::DEFAULT_PPO_MODEL;
use gantry::lineup;
use gantry::metrics::{Metrics, RunInfo};
use gantry::paths::{require_input, resolve_repo_path};
use gantry::plot;
use gantry::policy::{CapacitySet, OrderKind, PlacerKind};
use gantry::progress::RunProgress;
use gantry::proximity::cli::{
    SCENARIO_FLAG_IDS, ScenarioArgs, TrainPlacementArgs, run_scenario, run_train, table,
};
use gantry::record::{self, RecordHeader};
use gantry::sim::{DagPlannerKind, SchedulerSpec, SimOutput, simulate_with_capacities};
use gantry::workload::{WORKLOAD_FLAG_IDS, Workload, WorkloadArgs};
use std::path::{Path, PathBuf};
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
    /// Simulate a workload: with no scheduler flags, the combined scheduler `gantry` beside
    /// the baselines on the bundled mixed sample; else one order + placer + DAG planner.
    Simulate(SimulateArgs),
    /// Simulate several job orders, placers and DAG planners on the same trace, cluster and
    /// seed.
    Compare(CompareArgs),
    /// Re-run the core on a recorded event stream; exit 0 only if every decision matches.
    Replay(ReplayArgs),
    /// Frame streams for firmware: convert a recording, serve, corrupt, compare.
    #[command(subcommand)]
    Frames(FramesCommand),
    /// Plan a DAG workload on heterogeneous GPUs with several planners: gantry's default
    /// `worl-ls` (WOA + local search, budgeted), the list schedulers HEFT, PEFT, CPOP,
    /// lookahead HEFT and IPPTS, WOA and WORL-RTGS variants, the DDQN, random.
    Dag(DagArgs),
    /// Cross-check against the Tiresias simulator's results (the peer anchor): its quirks
    /// copied, per-job identity, gantry's own semantics, run times.
    TiresiasCheck(TiresiasCheckArgs),
    /// Train a learned policy.
    #[command(subcommand)]
    Train(TrainCommand),
    /// The WORL-RTGS acceptance table (markdown): every planner on the WORL slices, TPC-H, STG.
    DagTable(gantry::dag::table::DagTableArgs),
    /// Schedule a Slurm partition whose jobs are submitted held (`sbatch --hold`): gantry
    /// orders and places them and releases each onto the nodes it chose.
    Slurm(gantry::slurm::SlurmArgs),
}

#[derive(Subcommand, Debug)]
enum TrainCommand {
    /// PPO GPU placement policy on Proximity-DRL's environment, exported to ONNX.
    Placement(TrainPlacementArgs),
    /// The WORL-RTGS Double DQN (plans DAGs task by task); the defaults are the shipped
    /// model's recipe, written to target/gantry-train/worl_ddqn.onnx unless --out names a path.
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
    /// The anchor folder (`inputs/`, `perjob/`, `results.md`); relative paths also resolve
    /// against the repository.
    #[arg(long, default_value = "../shared/anchors/tiresias")]
    anchors: PathBuf,
    /// Inputs, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [CheckInput::Tiny, CheckInput::P2k, CheckInput::P10k])]
    inputs: Vec<CheckInput>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

/// A whole scheduler by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum NamedScheduler {
    /// TIAS order + learned placer choosing the GPU type by Gavel throughputs (ppo-gavel) +
    /// WORL-RTGS DAG planner.
    Gantry,
}

#[derive(Args, Debug)]
struct SimulateArgs {
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
    fn single(&self) -> Option<SchedulerSpec> {
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

#[derive(Subcommand, Debug)]
enum FramesCommand {
    /// A recording made with `--capacities firmware` → the inbound frame stream (header and
    /// events) and the outbound frames x86 answered.
    Convert {
        /// The recording.
        recording: PathBuf,
        /// Where to write the inbound frames.
        #[arg(long)]
        events: PathBuf,
        /// Where to write the expected outbound frames.
        #[arg(long)]
        expected: PathBuf,
    },
    /// Answer an inbound stream as the firmware does (the host's reference device).
    Serve {
        /// The inbound frames.
        events: PathBuf,
        /// Where to write the outbound frames.
        #[arg(long)]
        out: PathBuf,
    },
    /// Mix seeded bad frames (corrupt, cut, other version, over-long, unfinished) into an
    /// inbound stream.
    Corrupt {
        /// The inbound frames.
        events: PathBuf,
        /// Where to write the corrupted stream.
        #[arg(long)]
        out: PathBuf,
        /// Seed of the corruption.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Compare two outbound streams byte for byte; exit 1 naming the first differing frame.
    Diff {
        /// The expected frames.
        expected: PathBuf,
        /// The frames a device wrote.
        actual: PathBuf,
    },
    /// Print an inbound stream, one line per frame.
    Dump {
        /// The inbound frames.
        events: PathBuf,
    },
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
    /// DAG planners, comma separated: one row per order × placer × planner.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [DagPlannerKind::Heft])]
    dag_planners: Vec<DagPlannerKind>,
    /// Also run the combined scheduler `gantry` (TIAS + ppo-gavel + WORL), as the first row.
    #[arg(long)]
    gantry: bool,
    /// Write SVG charts into this folder (see `simulate --plot`).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// With `ppo` among the placers: if its model cannot be loaded, run proximity-greedy
    /// under the label `ppo→greedy` instead of failing.
    #[arg(long)]
    allow_fallback: bool,
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
    /// After a replay that matches, print the run's metrics (rebuilt from the recording).
    #[arg(long)]
    metrics: bool,
    /// With `--metrics`: one JSON object instead of a table.
    #[arg(long, requires = "metrics")]
    json: bool,
}

/// Creates (truncates) an output file before a long run, so a bad path fails at once.
fn create_output(path: &Path, flag: &str) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("{flag} {}", path.display()))
}

/// The label of a `ppo` row when its model is missing and fallback is allowed; an error
/// when it is not allowed. `None`: no `ppo` row, or its model loaded.
fn ppo_fallback(placers: &[PlacerKind], allow_fallback: bool) -> anyhow::Result<Option<String>> {
    if !placers
        .iter()
        .any(|p| matches!(p, PlacerKind::Ppo | PlacerKind::PpoGavel))
    {
        return Ok(None);
    }
    Ok(
        match check_ppo_model(Path::new(DEFAULT_PPO_MODEL), allow_fallback)? {
            PpoModel::Loaded => None,
            PpoModel::Fallback(label) => Some(label),
        },
    )
}

/// Relabels `ppo` and `ppo-gavel` rows that ran proximity-greedy.
fn label_fallback(rows: &mut [Metrics], label: Option<&String>) {
    for row in rows
        .iter_mut()
        .filter(|r| r.placement == "ppo" || r.placement == "ppo-gavel")
    {
        if let Some(label) = label {
            row.placement = label.clone();
        }
    }
}

fn run_simulate(args: &SimulateArgs) -> anyhow::Result<()> {
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
            gantry::cli::value_name(&args.capacities)
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

/// Runs `schedulers` on `workload` in parallel under one progress bar; says once on stderr
/// if WORL planned without its DDQN.
fn simulate_all(
    workload: &Workload,
    schedulers: &[SchedulerSpec],
    quiet: bool,
) -> anyhow::Result<Vec<SimOutput>> {
    let total = (workload.jobs.len() * schedulers.len()) as u64;
    let progress = RunProgress::new(total, "jobs", quiet);
    let outputs = compare::run_schedulers(workload, schedulers, Some(&progress))
        .with_context(|| format!("simulating {}", workload.name));
    progress.finish();
    let outputs = outputs?;
    if let Some(note) = outputs.iter().find_map(|o| o.dag_note.as_ref()) {
        eprintln!("gantry: WORL planned without its DDQN: {note}");
    }
    Ok(outputs)
}

/// Metrics of `outputs`, each labelled with the run, `ppo` rows relabelled if they fell back.
fn rows_of(workload: &Workload, outputs: &[SimOutput], fallback: Option<&String>) -> Vec<Metrics> {
    let run = RunInfo::new(&workload.name, workload.cluster, &workload.config);
    let mut rows: Vec<Metrics> = outputs
        .iter()
        .map(|o| Metrics::from_output(o).with_run(run.clone()))
        .collect();
    label_fallback(&mut rows, fallback);
    rows
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

/// Writes the charts when `dir` is given, and says where on stderr.
fn write_plots(
    dir: Option<&Path>,
    workload: &Workload,
    outputs: &[SimOutput],
    rows: &[Metrics],
) -> anyhow::Result<()> {
    let Some(dir) = dir else {
        return Ok(());
    };
    let series: Vec<plot::Series<'_>> = outputs
        .iter()
        .zip(rows)
        .map(|(output, metrics)| plot::Series {
            label: metrics.scheduler.clone(),
            metrics,
            output,
        })
        .collect();
    let files = plot::write_all(dir, &series, workload.cluster.gpus())?;
    eprintln!(
        "gantry: {} charts written to {}",
        files.len(),
        dir.display()
    );
    Ok(())
}

/// `compare`: a scenario refuses the trace flags, a trace run refuses the scenario's.
fn run_compare(args: &CompareArgs, matches: &clap::ArgMatches) -> anyhow::Result<()> {
    let command = Cli::command();
    let command = command
        .find_subcommand("compare")
        .context("the compare subcommand")?;
    if args.scenario.scenario.is_some() {
        let mut refused: Vec<&str> = WORKLOAD_FLAG_IDS.to_vec();
        refused.extend(["orders", "dag_planners", "gantry", "plot"]);
        refuse_flags(
            command,
            matches,
            &refused,
            "compare --scenario proximity-drl",
            "it runs Proximity-DRL's own 32-GPU environment and 30-job episodes: choose them \
             with --seeds, --jobs and --variant, the placers with --placements",
        )?;
        let mut scenario = args.scenario.clone();
        scenario.json = args.json;
        scenario.allow_fallback = args.allow_fallback;
        if !args.placements.is_empty() {
            scenario.placements = args.placements.clone();
        }
        let run = run_scenario(&scenario)?;
        return if args.json {
            write_line(serde_json::to_string(&run.rows)?)
        } else {
            write_line(&run.info)?;
            write_line(table(&run.rows))
        };
    }
    refuse_flags(
        command,
        matches,
        &SCENARIO_FLAG_IDS,
        "compare on a trace",
        "those flags belong to --scenario proximity-drl",
    )?;
    let placements = if args.placements.is_empty() {
        vec![PlacerKind::FirstFit]
    } else {
        args.placements.clone()
    };
    let mut schedulers = Vec::new();
    if args.gantry {
        schedulers.push(SchedulerSpec::GANTRY);
    }
    schedulers.extend(compare::schedulers(
        &args.orders,
        &placements,
        &args.dag_planners,
    ));
    let placers: Vec<PlacerKind> = schedulers.iter().map(|s| s.placer).collect();
    let fallback = ppo_fallback(&placers, args.allow_fallback)?;
    let workload = args.workload.load()?;
    let outputs = simulate_all(&workload, &schedulers, args.workload.quiet)?;
    let rows = rows_of(&workload, &outputs, fallback.as_ref());
    write_plots(args.plot.as_deref(), &workload, &outputs, &rows)?;
    if args.json {
        write_line(serde_json::to_string(&rows)?)
    } else {
        write_line(workload.describe())?;
        write_line(compare::table(&rows))
    }
}

fn run_replay(args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let recording = record::read(&args.file)?;
    if args.dump {
        write_out(record::dump(&recording))?;
        return Ok(ExitCode::SUCCESS);
    }
    let report = record::replay(&recording)?;
    match &report.mismatch {
        None => {
            let matched = format!(
                "{}: all {} entries replayed, every decision matches",
                args.file.display(),
                report.total
            );
            if !args.metrics {
                write_line(matched)?;
                return Ok(ExitCode::SUCCESS);
            }
            let h = &recording.header;
            let run = RunInfo::new(&h.trace, h.cluster, &h.config);
            let metrics = Metrics::from_output(&record::outcome(&recording)?).with_run(run);
            if args.json {
                write_line(serde_json::to_string(&metrics)?)?;
            } else {
                write_line(matched)?;
                write_line(metrics.table())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(m) => {
            write_line(format!(
                "{}: {} of {} entries matched; {m}",
                args.file.display(),
                report.matched,
                report.total
            ))?;
            Ok(ExitCode::FAILURE)
        }
    }
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

fn run_frames(command: &FramesCommand) -> anyhow::Result<ExitCode> {
    use embedded_io_adapters::std::FromStd;
    match command {
        FramesCommand::Convert {
            recording,
            events,
            expected,
        } => {
            let recording = record::read(recording)?;
            write(events, &frames::events(&recording)?)?;
            write(expected, &frames::expected(&recording)?)?;
            write_line(format_args!(
                "{} events, {} ({} GPUs), {} + {}",
                recording.entries.len(),
                recording.header.cluster,
                recording.header.cluster.gpus(),
                events.display(),
                expected.display()
            ))?;
        }
        FramesCommand::Serve { events, out } => {
            let input = std::fs::File::open(events)
                .with_context(|| format!("reading {}", events.display()))?;
            let output = create_output(out, "--out")?;
            let summary = frames::serve(
                FromStd::new(std::io::BufReader::new(input)),
                FromStd::new(std::io::BufWriter::new(output)),
            )?;
            write_line(format_args!(
                "{} frames answered ({} faults) into {}",
                summary.frames,
                summary.faults,
                out.display()
            ))?;
        }
        FramesCommand::Corrupt { events, out, seed } => {
            write(out, &frames::corrupt(&read(events)?, *seed))?;
        }
        FramesCommand::Diff { expected, actual } => {
            let (a, b) = (read(expected)?, read(actual)?);
            if let Some(d) = frames::diff(&a, &b) {
                write_line(format_args!(
                    "{} vs {}: {d}",
                    expected.display(),
                    actual.display()
                ))?;
                return Ok(ExitCode::FAILURE);
            }
            write_line(format_args!(
                "{} and {}: identical ({} bytes, {} frames)",
                expected.display(),
                actual.display(),
                a.len(),
                a.iter().filter(|&&x| x == 0).count()
            ))?;
        }
        FramesCommand::Dump { events } => {
            write_out(frames::dump_events(&read(events)?))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn run_dag(args: &DagArgs) -> anyhow::Result<()> {
    let problem = dag::load(&args.input, &args.load_options())?;
    let reports = dag::run_planners(&problem, &args.planners, &args.planner_options())?;
    if let Some(path) = &args.gantt {
        dag::gantt::write_gantt_svg(path, &reports)?;
        eprintln!("gantry: Gantt chart written to {}", path.display());
    }
    if args.json {
        return write_line(serde_json::to_string(&reports)?);
    }
    // WORL slices and TPC-H are in ms, shown in seconds (as in the docs); STG and HEFT
    // matrices are in the file's own unit.
    let (scale, unit) = match reports.first().map(|r| r.time_unit) {
        Some("ms") => (1000.0, "s"),
        _ => (1.0, "file units"),
    };
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header([
        "planner".to_string(),
        "tasks".into(),
        "edges".into(),
        "gpus".into(),
        format!("makespan ({unit})"),
        format!("lower bound ({unit})"),
        "ratio".into(),
        "plan time (ms)".into(),
    ]);
    for r in &reports {
        table.add_row([
            r.planner.clone(),
            r.tasks.to_string(),
            r.edges.to_string(),
            r.gpus.to_string(),
            format!("{:.1}", r.makespan / scale),
            format!("{:.1}", r.lower_bound / scale),
            format!("{:.3}", r.ratio),
            format!("{:.1}", r.plan_ms),
        ]);
    }
    write_line(format!(
        "input: {} (seed {})",
        args.input.display(),
        args.seed
    ))?;
    write_line(table)?;
    for r in reports.iter().filter(|r| r.budget_ms.is_some()) {
        write_line(format!(
            "{}: budget {} ms of search ({} work units spent; deterministic for the seed)",
            r.planner,
            r.budget_ms.unwrap_or(0),
            r.work.unwrap_or(0)
        ))?;
    }
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
    let rows = tc::check(&require_input(&args.anchors, "--anchors")?, &inputs)?;
    if args.json {
        return write_line(serde_json::to_string(&rows)?);
    }
    write_line(tc::table(&rows))?;
    for r in rows.iter().filter(|r| !r.first_differences.is_empty()) {
        write_line(format!(
            "{} {} {}: {}",
            r.policy,
            r.input,
            r.cluster,
            r.first_differences.join("; ")
        ))?;
    }
    Ok(())
}

fn run(cli: &Cli, matches: &clap::ArgMatches) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Simulate(args) => run_simulate(args).map(|()| ExitCode::SUCCESS),
        Command::Compare(args) => {
            let sub = matches
                .subcommand_matches("compare")
                .context("compare's arguments")?;
            run_compare(args, sub).map(|()| ExitCode::SUCCESS)
        }
        Command::Replay(args) => run_replay(args),
        Command::Frames(command) => run_frames(command),
        Command::Dag(args) => run_dag(args).map(|()| ExitCode::SUCCESS),
        Command::TiresiasCheck(args) => run_tiresias_check(args).map(|()| ExitCode::SUCCESS),
        Command::Train(TrainCommand::Placement(args)) => {
            write_line(run_train(args)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Train(TrainCommand::Dag(args)) => {
            let mut args = args.clone();
            args.worl_traces = resolve_repo_path(&args.worl_traces);
            let report = gantry::learn::ddqn::run_train_dag(&args)?;
            write_line(serde_json::to_string_pretty(&report)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::DagTable(args) => {
            let mut args = args.clone();
            args.traces = require_input(&args.traces, "--traces")?;
            write_out(gantry::dag::table::run(&args)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Slurm(args) => gantry::slurm::run_cli(args).map(|()| ExitCode::SUCCESS),
    }
}

/// Parses, runs, and reports an error as one line `gantry: error: …` (exit 1). A closed
/// stdout (`gantry … | head`) ends the run quietly with status 0.
fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match run(&cli, &matches) {
        Ok(code) => code,
        Err(e) if is_closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gantry: error: {}", error_text(&e));
            ExitCode::FAILURE
        }
    }
}
