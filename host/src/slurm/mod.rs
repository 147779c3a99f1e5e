//! `gantry slurm`: gantry as the external scheduler of a real Slurm partition.
//!
//! Jobs are submitted held (`sbatch --hold`). Each cycle gantry reads `squeue`'s compact
//! listing ([`compact`]: the active jobs, then the ended ones it still holds) and
//! `sinfo`'s, turns what differs from its core's state into core events (submit,
//! finish, cancel, GPU down/up for nodes, ticks), calls the same `Scheduler::handle` as the
//! simulator (any order and placer of [`crate::registry`]), writes every call to its journal,
//! then carries the decisions out: a `Start` pins the job to the nodes of its GPUs
//! (`scontrol update JobId= NodeList= …`) and releases it, a `Preempt` signals the job and
//! requeues and holds it after a grace period, a `Reject` writes the reason into the job's
//! comment and cancels it. Only jobs that may be requeued and carry the site's checkpoint
//! marker are preemptible ([`class`]).
//!
//! - [`command`]: the one seam to Slurm ([`SlurmRunner`]); [`json`]: Slurm's JSON;
//!   [`compact`]: the poll's `squeue` listing; [`class`]: which jobs may be preempted;
//!   [`gres`]: GPU counts; [`hostlist`]; [`layout`]: the partition as the core's tree.
//! - [`controller`]: the reconciler (pure: Slurm's state in, events and actions out);
//!   [`action`]: actions as command lines; [`journal`]: write-ahead recording and resume;
//!   [`array`](mod@array): job arrays, split into single jobs; [`dependency`]: when a held
//!   job's `--dependency` is met.
//! - [`summary`]: latency, JCT and deadline figures; this module: the flags and the loop.
//!
//! Failures on Slurm's side never end the loop: a poll that fails (controller restarting,
//! timeout, bad JSON) is retried with backoff; an action that fails is planned again from
//! the next poll (with backoff per job); a start that keeps failing is given up and the job
//! cancelled with the error as its reason. Only a journal that cannot be written ends it,
//! because decisions must not be carried out unrecorded.

pub mod ack;
pub mod action;
pub mod array;
pub mod class;
pub mod command;
pub mod compact;
pub mod controller;
pub mod dependency;
pub mod foreign;
pub mod gres;
pub mod hostlist;
pub mod journal;
pub mod json;
pub mod layout;
pub mod limit;
pub mod reservation;
pub mod session;
/// Slurm's allocation rule, from the cluster model ([`crate::cluster::slurm_split`]).
pub use crate::cluster::slurm_split as shape;
pub mod summary;

pub use command::{CommandError, ProcessRunner, SlurmRunner};
pub use controller::{Controller, ControllerConfig, Snapshot};
pub use summary::Summary;

use crate::record::RecordHeader;
use crate::registry::{OrderKind, PlacerKind};
use crate::sim::SimConfig;
use crate::tias_config::TiasOverrides;
use action::{Action, JobNames, shell_line};
use journal::Journal;
use layout::{ClusterLayout, default_partition};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use summary::Tally;

use crate::record::TRACE_PREFIX;

/// The flags of `gantry slurm`.
#[derive(clap::Args, Clone, Debug)]
pub struct SlurmArgs {
    /// Partition to schedule; default: Slurm's default partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Job order. The default, `las`, met the most acceptance points of the Slurm benchmark
    /// (docs/slurm.md, "Benchmark"): it preempts a job only once it passes a 2D-LAS threshold
    /// (3,250 GPU·s first), so it requeues least and long jobs start about as early as under
    /// Slurm's own backfill.
    #[arg(long, value_enum, default_value_t = OrderKind::Las)]
    pub order: OrderKind,
    /// GPU placer.
    #[arg(long, value_enum, default_value_t = PlacerKind::BestFit)]
    pub placement: PlacerKind,
    /// Poll period, ms.
    #[arg(long, default_value_t = 500)]
    pub poll_ms: u64,
    /// Exit 0 once no job of the partition is pending or running (for tests and batches).
    #[arg(long)]
    pub exit_when_idle: bool,
    /// The journal and recording (`gantry replay FILE` checks it). Reusing it resumes.
    /// Default: `$XDG_STATE_HOME/gantry/slurm-PARTITION.gantry` (or `~/.local/state/…`).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Once the journal is longer than this, KiB, gantry writes its state beside it
    /// (`FILE.checkpoint`) and cuts it back to its header, so a restart replays at most
    /// this much. 0: never (the journal then grows with every event).
    #[arg(long, value_name = "KIB", default_value_t = 16_384)]
    pub journal_compact_kib: u64,
    /// Print what one cycle would do and change nothing (the journal is read, not written).
    #[arg(long)]
    pub dry_run: bool,
    /// Print a JSON summary at the end.
    #[arg(long)]
    pub json: bool,
    /// Seed for randomised placers.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Re-evaluation period of time-driven orders while jobs are live, seconds.
    #[arg(long, default_value_t = 60)]
    pub tick_s: u64,
    /// Longest a Slurm command may run before it is killed and retried, seconds.
    #[arg(long, default_value_t = 10)]
    pub command_timeout_s: u64,
    /// What marks a job that checkpoints, so that gantry may preempt it (requeue it for a
    /// job the order ranks higher): `TAG` or `comment:TAG` (a word of the job's
    /// `--comment`) or `qos:NAME` (the job's `--qos`). A job is preemptible only when Slurm
    /// may requeue it (`--requeue` / `JobRequeue=1`) and it carries the marker; every other
    /// job runs to completion once started.
    #[arg(long, value_name = "MARKER", default_value = class::DEFAULT_MARKER)]
    pub checkpoint_marker: class::CheckpointMarker,
    /// Minimum run quantum, seconds: a preemptible job runs at least this long after each
    /// (re)start before it may be preempted or moved, so a requeue is paid at most once per
    /// quantum of work. 0: none.
    #[arg(long, default_value_t = 0)]
    pub min_run_s: u64,
    /// Grace period of a preemption, seconds: a running job the core preempts is sent
    /// `--preempt-signal` and requeued this long after, or as soon as it ends by itself
    /// (Slurm's own preemption does the same with `GraceTime`). 0: requeued at once.
    #[arg(long, default_value_t = 10)]
    pub preempt_grace_s: u64,
    /// The signal of the grace period (as `scancel --signal` takes it: `TERM`, `USR1`, …);
    /// it goes to the batch script and every step of the job.
    #[arg(long, value_name = "SIG", default_value = "TERM")]
    pub preempt_signal: String,
    /// Do not give the queue head a reservation: a job that does not fit is skipped and
    /// later jobs may take the GPUs as they free up (the order's own rule), so a large job
    /// can wait behind a stream of small ones. By default the highest-ranked job that does
    /// not fit gets the GPU set needing the fewest running jobs to end, and a later job
    /// starts only outside it, or inside it when its time limit ends before the set's jobs
    /// reach theirs, as Slurm's backfill reserves for its top job.
    #[arg(long)]
    pub no_reserve_head: bool,
    /// TIAS's constants from a TOML file (as `gantry simulate --tias-config`; docs/tias.md,
    /// *Tuning*), for `--order tias` or `tias-deadline-safe`. Part of the journal's header:
    /// a resume must give the same file.
    #[arg(long, value_name = "FILE", value_parser = crate::tias_config::parse_arg)]
    pub tias_config: Option<TiasOverrides>,
    /// Acknowledge each job's end into this folder for the site's epilog
    /// (`scripts/gantry-epilog.sh`, which waits for `DIR/JOBID`): a job whose script
    /// exited 0 ends for the core as soon as Slurm shows it COMPLETING, its successors are
    /// released onto its node, and then its epilog is told to finish, so Slurm starts them
    /// in the scheduling pass the epilog's end runs instead of its next periodic one (about
    /// once a second). The folder must be the one the compute nodes' epilog reads. gantry
    /// also polls at once when a doorbell rings there: the epilog's as it starts, and the
    /// site's `job_submit.lua` (`scripts/gantry-job-submit.lua`) at each submission.
    #[arg(long, value_name = "DIR")]
    pub epilog_ack_dir: Option<PathBuf>,
}

/// Runs `gantry slurm` with the real Slurm commands and prints the summary.
pub fn run_cli(args: &SlurmArgs) -> anyhow::Result<()> {
    let mut runner = ProcessRunner::new(Duration::from_secs(args.command_timeout_s.max(1)));
    // The core is built inline (about 5 MB) before it is boxed: give it a large stack.
    let summary = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("gantry-slurm".into())
            .stack_size(256 << 20)
            .spawn_scoped(scope, || run(args, &mut runner))?
            .join()
            .map_err(|_| anyhow::anyhow!("gantry slurm thread panicked"))?
    })?;
    if args.json {
        crate::cli::write_line(serde_json::to_string(&summary)?)?;
    } else {
        let ms = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.1} ms"));
        crate::cli::write_line(format_args!(
            "gantry slurm: partition {} ({}), {} cycles, {} jobs started, {} completed, {} rejected, decision latency p50 {} p99 {}",
            summary.partition,
            summary.cluster,
            summary.cycles,
            summary.jobs_started,
            summary.jobs_completed,
            summary.jobs_rejected,
            ms(summary.decision_latency_p50_ms),
            ms(summary.decision_latency_p99_ms)
        ))?;
    }
    Ok(())
}

/// Writes one log line (stderr) with the seconds since start.
struct Log(Instant);

impl Log {
    fn line(&self, text: &str) {
        eprintln!(
            "gantry slurm [{:8.3} s] {text}",
            self.0.elapsed().as_secs_f64()
        );
    }
}

/// The flag spelling of an order or placer (`best-fit`).
fn value_name(value: impl clap::ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn args_of(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// How often the advance reservations are read, at most ([`reservation`]): they change
/// rarely, and a third command beside `squeue` and `sinfo` adds 2-3 ms to a poll on a
/// 2-core machine (median 8.8 against 7.0 ms on the lab). A start released in the seconds
/// between a reservation's creation and its next read, onto nodes it would run into, is
/// moved once it is read (the node closes to new jobs and the start goes elsewhere).
const RESERVATIONS_EVERY: Duration = Duration::from_secs(10);

/// The advance reservations as last read, and when.
#[derive(Debug, Default)]
struct ReservationCache {
    read_at: Option<Instant>,
    list: Vec<reservation::SlurmReservation>,
    /// Why the last read failed, if it did.
    failure: Option<String>,
    /// Whether that failure was logged.
    failure_said: bool,
}

/// Reads jobs and nodes: the jobs that are not over (compact `squeue`, see [`compact`])
/// and the nodes (compact `sinfo`) side by side, with the advance reservations when
/// [`RESERVATIONS_EVERY`] has passed since `reservations` was read, then those of
/// `watched` (the jobs the core holds) that the listing lacks, by id with every state
/// (they ended since the last poll), at most 500 ids per call.
fn poll(
    runner: &mut dyn SlurmRunner,
    watched: &[u32],
    reservations: &mut ReservationCache,
) -> Result<Snapshot, String> {
    let due = reservations
        .read_at
        .is_none_or(|at| at.elapsed() >= RESERVATIONS_EVERY);
    let mut commands = vec![
        (
            "squeue",
            compact::squeue_args(compact::ACTIVE_STATES, &[]),
            None,
        ),
        ("sinfo", compact::sinfo_args(), None),
    ];
    if due {
        commands.push(("scontrol", reservation::reservation_args(), None));
    }
    let mut all = runner.run_all(&commands).into_iter();
    let (Some(listing), Some(nodes)) = (all.next(), all.next()) else {
        return Err("squeue and sinfo gave no answer".to_string());
    };
    let listing = listing.map_err(|e| e.to_string())?;
    let nodes = nodes.map_err(|e| e.to_string())?;
    if due {
        // A failed read keeps the last list (scheduling goes on without the newest
        // reservations) and is tried again a period later; the daemon logs why.
        let read = all
            .next()
            .ok_or_else(|| "no answer".to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
            .and_then(|text| reservation::parse_reservations(&text).map_err(|e| e.to_string()));
        match read {
            Ok(list) => {
                reservations.list = list;
                reservations.failure = None;
            }
            Err(e) => reservations.failure = Some(e),
        }
        reservations.read_at = Some(Instant::now());
    }
    let mut jobs = compact::parse_squeue_compact(&listing).map_err(|e| e.to_string())?;
    let listed: std::collections::BTreeSet<u32> = jobs.iter().map(|j| j.id).collect();
    let missing: Vec<u32> = watched
        .iter()
        .copied()
        .filter(|id| !listed.contains(id))
        .collect();
    for chunk in missing.chunks(500) {
        let ended = match runner.run("squeue", &compact::squeue_args("all", chunk)) {
            Ok(text) => text,
            // One id Slurm no longer knows (purged after MinJobAge): nothing to list.
            Err(e) if e.stderr().contains("Invalid job id") => String::new(),
            Err(e) => return Err(e.to_string()),
        };
        // `--jobs=A` of a job array lists every task of it: keep those not listed yet (an
        // array a held job depends on is watched by its id).
        let known: std::collections::BTreeSet<u32> = jobs.iter().map(|j| j.id).collect();
        jobs.extend(
            compact::parse_squeue_compact(&ended)
                .map_err(|e| e.to_string())?
                .into_iter()
                .filter(|j| !known.contains(&j.id)),
        );
    }
    let nodes = compact::parse_sinfo_compact(&nodes).map_err(|e| e.to_string())?;
    Ok(Snapshot {
        jobs,
        nodes,
        reservations: reservations.list.clone(),
    })
}

/// Reads jobs' own node counts with `scontrol show job` ([`controller::NodeCounts`]), up to
/// [`action::UPDATE_PROCESSES`] side by side.
struct ScontrolNodeCounts<'a>(&'a mut dyn SlurmRunner);

impl controller::NodeCounts for ScontrolNodeCounts<'_> {
    fn max_nodes(&mut self, jobs: &[u32]) -> Vec<(u32, Result<u32, String>)> {
        let mut read = Vec::with_capacity(jobs.len());
        for chunk in jobs.chunks(action::UPDATE_PROCESSES) {
            let commands: Vec<command::Invocation<'_>> = chunk
                .iter()
                .map(|&id| ("scontrol", compact::show_job_args(id), None))
                .collect();
            let answers = self.0.run_all(&commands);
            for (&id, answer) in chunk.iter().zip(answers) {
                let max_nodes = answer
                    .map_err(|e| e.to_string())
                    .and_then(|text| compact::parse_max_nodes(&text));
                read.push((id, max_nodes));
            }
        }
        read
    }
}

/// Says what a failed read means: Slurm's tools name the RPC that failed, not the cause, so
/// `scontrol ping` tells; when it says DOWN or fails, the error names the controller as
/// unreachable.
fn diagnose(runner: &mut dyn SlurmRunner, error: String) -> String {
    match runner.run("scontrol", &args_of(&["ping"])) {
        Ok(out) if !out.contains("DOWN") => error,
        Ok(out) => format!(
            "Slurm controller unreachable (scontrol ping: {}); {error}",
            out.lines().next().unwrap_or("").trim()
        ),
        Err(e) => format!(
            "Slurm controller unreachable (scontrol ping failed: {}); {error}",
            e.stderr().lines().next().unwrap_or("").trim()
        ),
    }
}

/// Backoff for retries: 0.5 s doubling to 8 s.
fn backoff(failures: u32) -> Duration {
    Duration::from_millis(500u64 << failures.min(4))
}

/// A failed action not tried again this long after its retry time is forgotten (its job
/// ended, or gantry decided otherwise), so the backoff map holds only recent failures.
const FORGET_FAILURE_AFTER: Duration = Duration::from_secs(60);

/// Per (job, action kind): consecutive failures and when to try again.
type RetryAt = BTreeMap<(u32, &'static str), (u32, Instant)>;

/// Drops the failures whose retry time passed [`FORGET_FAILURE_AFTER`] ago.
fn forget_old_failures(retry_at: &mut RetryAt, now: Instant) {
    retry_at.retain(|_, (_, at)| now.saturating_duration_since(*at) < FORGET_FAILURE_AFTER);
}

/// Finds the partition and its layout, retrying while Slurm does not answer.
fn discover(
    args: &SlurmArgs,
    runner: &mut dyn SlurmRunner,
    log: &Log,
) -> anyhow::Result<ClusterLayout> {
    let mut failures = 0u32;
    loop {
        let attempt = (|| -> Result<ClusterLayout, String> {
            let partition = match &args.partition {
                Some(p) => p.clone(),
                None => {
                    let text = runner
                        .run("scontrol", &args_of(&["show", "partition", "-o"]))
                        .map_err(|e| e.to_string())?;
                    default_partition(&text)
                        .ok_or("Slurm has no default partition; pass --partition")?
                }
            };
            let nodes = runner
                .run("sinfo", &compact::sinfo_args())
                .map_err(|e| e.to_string())?;
            let nodes = compact::parse_sinfo_compact(&nodes).map_err(|e| e.to_string())?;
            // No topology plugin: scontrol prints nothing (or says so); one rack then.
            let topology = runner
                .run("scontrol", &args_of(&["show", "topology"]))
                .unwrap_or_default();
            ClusterLayout::discover(&partition, &nodes, &topology)
                .map_err(|e| format!("fatal: {e}"))
        })();
        match attempt {
            Ok(layout) => return Ok(layout),
            Err(e) if e.starts_with("fatal: ") || e.contains("no default partition") => {
                anyhow::bail!("{}", e.trim_start_matches("fatal: "))
            }
            Err(e) => {
                failures += 1;
                let e = diagnose(runner, e);
                if failures == 1 || failures.is_multiple_of(10) {
                    log.line(&format!(
                        "cannot read the cluster yet (attempt {failures}): {e}"
                    ));
                }
                if args.dry_run && failures >= 3 {
                    anyhow::bail!("cannot read the cluster: {e}");
                }
                std::thread::sleep(backoff(failures));
            }
        }
    }
}

/// `SchedulerType` from `scontrol show config` (`SchedulerType = sched/backfill`).
fn scheduler_type(config: &str) -> Option<String> {
    config.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "SchedulerType").then(|| value.trim().to_string())
    })
}

/// Where the journal lives.
fn journal_path(args: &SlurmArgs, partition: &str) -> anyhow::Result<PathBuf> {
    if let Some(path) = &args.record {
        return Ok(path.clone());
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .ok_or_else(|| {
            anyhow::anyhow!("no HOME or XDG_STATE_HOME for the journal; pass --record FILE")
        })?;
    Ok(base
        .join("gantry")
        .join(format!("slurm-{partition}.gantry")))
}

/// Runs the scheduler against `runner` until idle (with `--exit-when-idle`), after one cycle
/// (`--dry-run`), or forever. Must run on a thread with a large stack (see [`run_cli`]).
pub fn run(args: &SlurmArgs, runner: &mut dyn SlurmRunner) -> anyhow::Result<Summary> {
    let log = Log(Instant::now());
    let layout = discover(args, runner, &log)?;
    // Best effort: without it, gantry only cannot warn about `sched/builtin`.
    let scheduler = runner
        .run("scontrol", &args_of(&["show", "config"]))
        .ok()
        .and_then(|text| scheduler_type(&text));
    let config = SimConfig {
        tick_ms: args.tick_s.saturating_mul(1000),
        seed: args.seed,
        min_run_ms: args.min_run_s.saturating_mul(1000),
        reserve_head: !args.no_reserve_head,
        tias: args.tias_config.clone(),
        ..SimConfig::default()
    };
    let header = RecordHeader::new(
        &format!("{TRACE_PREFIX}{}", layout.partition),
        layout.spec,
        args.order,
        args.placement,
        &config,
    );
    let path = journal_path(args, &layout.partition)?;
    let mut tally = Tally::default();
    tally.summary.partition = layout.partition.clone();
    tally.summary.cluster = layout.spec.to_string();
    tally.summary.order = value_name(args.order);
    tally.summary.placement = value_name(args.placement);
    tally.summary.dry_run = args.dry_run;
    tally.summary.journal = path.display().to_string();
    log.line(&format!(
        "partition {} = {} (racks {}), order {}, placement {}, journal {}; preemptible: jobs with --requeue and the {}, min run {} s; queue head {}; Slurm's scheduler {}",
        layout.partition,
        layout.spec,
        layout.racks.join(","),
        tally.summary.order,
        tally.summary.placement,
        path.display(),
        args.checkpoint_marker,
        args.min_run_s,
        if config.reserve_head {
            "reserved"
        } else {
            "skipped"
        },
        scheduler.as_deref().unwrap_or("unknown")
    ));
    let controller_config = ControllerConfig {
        tick_ms: config.tick_ms,
        checkpoint_marker: args.checkpoint_marker.clone(),
        min_run_ms: config.min_run_ms,
        reserve_head: config.reserve_head,
        tias: config.tias.clone(),
        preempt_grace_ms: args.preempt_grace_s.saturating_mul(1000),
        preempt_signal: args
            .preempt_signal
            .trim_start_matches("SIG")
            .to_ascii_uppercase(),
        finish_at_completing: args.epilog_ack_dir.is_some(),
        slurm_builtin: scheduler.as_deref() == Some("sched/builtin"),
        ..ControllerConfig::default()
    };
    let mut controller = Controller::new(
        layout,
        args.order,
        args.placement,
        args.seed,
        controller_config,
    )?;
    let journal = Journal::open(&path, &header, &mut controller, !args.dry_run)?;
    let tally_path = Tally::path_for(&path);
    let grace_path = grace_path_for(&path);
    if journal.resumed() {
        // Resumed: preemptions signalled but not requeued yet keep their grace period, and
        // gantry's own holds stay gantry's.
        if let Some(side) = load_side_state(&grace_path) {
            controller.restore_grace(side.grace);
            controller.restore_held_by_gantry(side.held_by_gantry);
            controller.restore_array_throttles(side.array_throttles);
            controller.restore_left_for_node_rules(side.left_for_node_rules);
            controller.restore_left_for_one_node(side.left_for_one_node);
        }
        // Resumed: carry on the tally the earlier process wrote as it went.
        if let Some(mut earlier) = Tally::load(&tally_path) {
            let meta = &tally.summary;
            earlier.summary.partition = meta.partition.clone();
            earlier.summary.cluster = meta.cluster.clone();
            earlier.summary.order = meta.order.clone();
            earlier.summary.placement = meta.placement.clone();
            earlier.summary.dry_run = meta.dry_run;
            earlier.summary.journal = meta.journal.clone();
            tally = earlier;
        }
    } else if !args.dry_run {
        // A fresh journal: a tally left beside an earlier one is not this run's.
        let _ = std::fs::remove_file(&tally_path);
        let _ = std::fs::remove_file(&grace_path);
    }
    tally.summary.journal_entries_replayed = journal.replayed;
    if journal.resumed() || journal.truncated_bytes > 0 {
        let checkpoint = if journal.checkpointed > 0 {
            format!(
                "restored the checkpoint of {} entries, ",
                journal.checkpointed
            )
        } else {
            String::new()
        };
        log.line(&format!(
            "resumed: {checkpoint}replayed {} journal entries ({} live jobs){}",
            journal.replayed,
            controller.core().jobs().len(),
            if journal.truncated_bytes > 0 {
                format!(
                    ", cut a torn last entry of {} bytes",
                    journal.truncated_bytes
                )
            } else {
                String::new()
            }
        ));
    }
    let epilog_acks = match &args.epilog_ack_dir {
        Some(dir) if !args.dry_run => Some(
            ack::EpilogAcks::new(dir)
                .map_err(|e| anyhow::anyhow!("--epilog-ack-dir {}: {e}", dir.display()))?,
        ),
        _ => None,
    };
    let mut daemon = Daemon {
        args,
        runner,
        epilog_acks,
        log,
        journal,
        tally,
        tally_path,
        saved_side: daemon_side_state(&controller),
        controller,
        grace_path,
        retry_at: BTreeMap::new(),
        names: JobNames::default(),
        reservations: ReservationCache::default(),
    };
    daemon.run()?;
    let mut summary = daemon.tally.finish();
    summary.journal_entries_written = daemon.journal.written;
    summary.journal_entries_checkpointed = daemon.journal.checkpointed;
    summary.journal_compactions = daemon.journal.compactions;
    Ok(summary)
}

/// The loop's state.
struct Daemon<'a> {
    args: &'a SlurmArgs,
    runner: &'a mut dyn SlurmRunner,
    log: Log,
    controller: Controller,
    journal: Journal,
    tally: Tally,
    /// Where the tally is written as it goes (see [`Tally::save`]).
    tally_path: PathBuf,
    /// Where the [`SideState`] is written.
    grace_path: PathBuf,
    /// The side state as last written.
    saved_side: SideState,
    /// Per (job, action kind): consecutive failures and when to try again.
    retry_at: RetryAt,
    /// How this cycle's commands name its jobs (from the last poll).
    names: JobNames,
    /// `--epilog-ack-dir`: the acknowledgements the site's epilog waits for.
    epilog_acks: Option<ack::EpilogAcks>,
    /// The advance reservations, read every [`RESERVATIONS_EVERY`].
    reservations: ReservationCache,
}

impl Daemon<'_> {
    /// Logs once that the reservations cannot be read (and once that they can again).
    fn say_reservation_failure(&mut self) {
        let cache = &mut self.reservations;
        match (&cache.failure, cache.failure_said) {
            (Some(e), false) => {
                self.log.line(&format!(
                    "cannot read the advance reservations (retried every {} s; scheduling goes on with the last ones read, {}): {e}",
                    RESERVATIONS_EVERY.as_secs(),
                    cache.list.len()
                ));
                cache.failure_said = true;
            }
            (None, true) => {
                self.log.line("the advance reservations are read again");
                cache.failure_said = false;
            }
            _ => {}
        }
    }

    fn run(&mut self) -> anyhow::Result<()> {
        let period = Duration::from_millis(self.args.poll_ms.max(1));
        let mut poll_failures = 0u32;
        // Whether the last poll came early (see below).
        let mut early = false;
        loop {
            let started = Instant::now();
            // This poll sees every end or submission a doorbell has announced so far.
            if let Some(acks) = &self.epilog_acks {
                acks.take_doorbells();
            }
            let watched = self.controller.watched_jobs();
            let snapshot = match poll(self.runner, &watched, &mut self.reservations) {
                Ok(s) => s,
                Err(e) => {
                    poll_failures += 1;
                    let e = diagnose(self.runner, e);
                    self.tally.summary.poll_failures += 1;
                    if poll_failures == 1 || poll_failures.is_multiple_of(10) {
                        self.log
                            .line(&format!("poll failed (#{poll_failures}), retrying: {e}"));
                    }
                    if self.args.dry_run && poll_failures >= 3 {
                        anyhow::bail!("cannot read Slurm: {e}");
                    }
                    std::thread::sleep(backoff(poll_failures).max(period));
                    continue;
                }
            };
            if poll_failures > 0 {
                self.log.line(&format!(
                    "Slurm answers again after {poll_failures} failed polls"
                ));
                poll_failures = 0;
            }
            self.say_reservation_failure();
            // Releases an earlier gantry carried out but was killed before it counted.
            self.tally.settle_releasing(&snapshot.jobs);
            let observed = Instant::now();
            self.tally
                .polled(observed.duration_since(started).as_secs_f64() * 1000.0);
            let cycle = self.controller.observe_reading(
                &snapshot,
                unix_ms(),
                &mut ScontrolNodeCounts(&mut *self.runner),
            );
            self.names = JobNames::of_jobs(&snapshot.jobs);
            let planned = Instant::now();
            for note in &cycle.notes {
                self.log.line(note);
            }
            self.tally.ended(&cycle.outcomes);
            self.tally.summary.preemptions += u64::from(cycle.preemptions);
            self.tally.summary.restarts_seen += u64::from(cycle.restarts_seen);
            self.tally.summary.unexpected += u64::from(cycle.unexpected);
            self.tally.summary.jobs_released_outside_gantry += u64::from(cycle.released_outside);
            self.tally.summary.limit_holds += u64::from(cycle.limit_holds);
            self.tally
                .left_to_slurm(&cycle.left_to_slurm, &snapshot.jobs);
            if self.args.dry_run {
                for action in &cycle.actions {
                    for line in action.commands(&self.names) {
                        crate::cli::write_line(format_args!("would run: {}", shell_line(&line)))?;
                    }
                }
                return Ok(());
            }
            // Write-ahead: decisions are on disk before anything is carried out, and so are
            // the ends this cycle saw (the journal's replay will not show them again).
            self.journal.append(&cycle.entries)?;
            if !cycle.outcomes.is_empty() {
                self.save_tally();
            }
            // Also write-ahead: a signal is on disk before it is sent.
            self.save_side()?;
            let journaled = Instant::now();
            // Releases last, all together (two `scontrol` processes, `start_together`);
            // everything else first, in the planned order.
            let (starts, others): (Vec<&Action>, Vec<&Action>) = cycle
                .actions
                .iter()
                .partition(|a| matches!(a, Action::Start(plan) if plan.release));
            for action in others {
                self.carry_out(action, observed);
            }
            let others_done = Instant::now();
            if !starts.is_empty() {
                // Written ahead, so a kill -9 during the releases loses none of their counts.
                self.tally.releasing(starts.iter().map(|a| a.job()));
                self.save_tally();
            }
            self.carry_out_together(&starts, observed);
            self.tally.released();
            if !starts.is_empty() {
                // Where a release's time goes, from the poll's start to Slurm's answer.
                let ms =
                    |from: Instant, to: Instant| to.duration_since(from).as_secs_f64() * 1000.0;
                self.log.line(&format!(
                    "cycle: poll {:.1} ms, plan {:.1} ms, journal {:.1} ms, other actions {:.1} ms, {} releases {:.1} ms",
                    ms(started, observed),
                    ms(observed, planned),
                    ms(planned, journaled),
                    ms(journaled, others_done),
                    starts.len(),
                    ms(others_done, Instant::now())
                ));
            }
            if !cycle.actions.is_empty() {
                self.save_tally();
                self.save_side()?;
            }
            forget_old_failures(&mut self.retry_at, Instant::now());
            // The controller has taken every entry written: a checkpoint may stand for them.
            let threshold = self.args.journal_compact_kib.saturating_mul(1024);
            if let Some(line) = self.journal.compact_if_over(threshold, &self.controller) {
                self.log.line(&line);
            }
            // Only now, with the successors released: the epilogs may end.
            if let Some(acks) = &mut self.epilog_acks {
                for problem in acks.update(&snapshot.jobs) {
                    self.log.line(&problem);
                }
            }
            if self.args.exit_when_idle
                && cycle.actions.is_empty()
                && self.controller.idle(&snapshot)
            {
                self.log
                    .line("idle: no job of the partition is pending or running");
                return Ok(());
            }
            // Jobs tend to end together (a gang's nodes, jobs started in one pass): a poll
            // that saw an end is followed at once by one more, which sees the rest of them
            // and releases their successors while Slurm still handles those ends (each end
            // starts a scheduling pass in Slurm; a release alone waits for its next
            // periodic one). At most one early poll per period, so at most twice the polls.
            early = !early && !cycle.outcomes.is_empty();
            if early {
                continue;
            }
            if let Some(rest) = period.checked_sub(started.elapsed()) {
                self.wait(rest);
            }
        }
    }

    /// Waits `rest` for the next poll, or, with `--epilog-ack-dir`, until a doorbell rings
    /// ([`ack`]): a job ended, and its epilog (so its successors' start) waits for the poll
    /// that sees it; or a job was submitted, and may start in Slurm's next pass if released
    /// before it.
    fn wait(&mut self, rest: Duration) {
        let Some(acks) = &self.epilog_acks else {
            std::thread::sleep(rest);
            return;
        };
        let until = Instant::now() + rest;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            std::thread::sleep(left.min(ack::DOORBELL_CHECK));
            if acks.take_doorbells() > 0 {
                self.tally.summary.polls_on_doorbell += 1;
                return;
            }
        }
    }

    /// Writes the [`SideState`] beside the journal when it changed. A failure ends the run
    /// as a journal failure does: a signal must not be sent unrecorded (a restart would send
    /// a second one, or requeue without one).
    fn save_side(&mut self) -> anyhow::Result<()> {
        let side = daemon_side_state(&self.controller);
        if side != self.saved_side {
            save_side_state(&self.grace_path, &side)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", self.grace_path.display()))?;
            self.saved_side = side;
        }
        Ok(())
    }

    /// Writes the tally beside the journal (a failure is logged; the run goes on).
    fn save_tally(&self) {
        if let Err(e) = self.tally.save(&self.tally_path) {
            self.log.line(&format!(
                "cannot write the tally {}: {e}",
                self.tally_path.display()
            ));
        }
    }

    /// Whether `action` waits for its retry backoff.
    fn backing_off(&self, action: &Action) -> bool {
        self.retry_at
            .get(&(action.job(), action.kind()))
            .is_some_and(|(_, at)| Instant::now() < *at)
    }

    fn carry_out(&mut self, action: &Action, observed: Instant) {
        if self.backing_off(action) {
            return;
        }
        let result = action.execute(self.runner, &self.names);
        self.record(action, result, Instant::now(), observed);
    }

    /// Carries out a cycle's releases together: two `scontrol` processes for all of them
    /// ([`action::start_together`]), each job's result recorded as its own.
    fn carry_out_together(&mut self, actions: &[&Action], observed: Instant) {
        let due: Vec<(&Action, &action::StartPlan)> = actions
            .iter()
            .copied()
            .filter(|a| !self.backing_off(a))
            .filter_map(|a| match a {
                Action::Start(plan) => Some((a, plan)),
                _ => None,
            })
            .collect();
        if due.is_empty() {
            return;
        }
        let plans: Vec<&action::StartPlan> = due.iter().map(|(_, p)| *p).collect();
        let results = action::start_together(self.runner, &plans, &self.names);
        for ((action, _), (result, done)) in due.into_iter().zip(results) {
            self.record(action, result, done, observed);
        }
    }

    /// Logs and counts how an action went (it ended at `done`) and tells the controller.
    fn record(
        &mut self,
        action: &Action,
        result: Result<(), CommandError>,
        done: Instant,
        observed: Instant,
    ) {
        let key = (action.job(), action.kind());
        let now = unix_ms();
        match &result {
            Ok(()) => {
                self.retry_at.remove(&key);
                let latency = done.saturating_duration_since(observed).as_secs_f64() * 1000.0;
                // A split is bookkeeping (a job array's tasks made jobs), not a decision.
                if !matches!(action, Action::Split { .. }) {
                    self.tally.carried_out(action.kind(), action.job(), latency);
                }
                let what = match action {
                    Action::Start(plan) => {
                        format!("on {}", controller::shape_text(&plan.shape))
                    }
                    Action::Reject { reason, .. } => format!("({reason})"),
                    Action::Split { tasks, .. } => format!("into {} more jobs", tasks.len()),
                    _ => String::new(),
                };
                self.log.line(&format!(
                    "{} job {} {what} ({latency:.1} ms after the poll)",
                    action.kind(),
                    action.job()
                ));
            }
            Err(err) => {
                self.tally.summary.command_failures += 1;
                let failures = self.retry_at.get(&key).map_or(0, |(n, _)| *n) + 1;
                self.retry_at
                    .insert(key, (failures, Instant::now() + backoff(failures)));
                self.log.line(&format!(
                    "{} job {} failed (#{failures}, retried): {err}",
                    action.kind(),
                    action.job()
                ));
            }
        }
        self.controller
            .action_done(action, now, result.map_err(|e| e.stderr()));
    }
}

/// What gantry keeps beside the journal because the journal does not hold it, written
/// when it changes (`JOURNAL.grace.json`): the jobs signalled for a preemption and not
/// requeued yet, with when (Unix ms), so a gantry restarted after `kill -9` neither signals
/// them again nor forgets to requeue them; the jobs gantry holds itself
/// ([`Controller::held_by_gantry`]), so their holds are not taken for an operator's; and
/// the throttles of the job arrays gantry split ([`Controller::array_throttles`]), which
/// Slurm's listing no longer shows; and the jobs it left to Slurm for their node rules
/// ([`Controller::left_for_node_rules`]) or to keep them on one node
/// ([`Controller::left_for_one_node`]), so a restart does not schedule them again.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct SideState {
    grace: BTreeMap<u32, u64>,
    #[serde(default)]
    held_by_gantry: std::collections::BTreeSet<u32>,
    #[serde(default)]
    array_throttles: BTreeMap<u32, u32>,
    #[serde(default)]
    left_for_node_rules: std::collections::BTreeSet<u32>,
    #[serde(default)]
    left_for_one_node: std::collections::BTreeSet<u32>,
}

/// The side state as the controller holds it.
fn daemon_side_state(controller: &Controller) -> SideState {
    SideState {
        grace: controller.grace().clone(),
        held_by_gantry: controller.held_by_gantry().clone(),
        array_throttles: controller.array_throttles().clone(),
        left_for_node_rules: controller.left_for_node_rules().clone(),
        left_for_one_node: controller.left_for_one_node().clone(),
    }
}

/// `JOURNAL.grace.json`: the grace periods and gantry's own holds, beside the journal.
pub fn grace_path_for(journal: &std::path::Path) -> PathBuf {
    journal::beside(journal, ".grace.json")
}

/// Reads the side state; `None` when there is none or it is unreadable. A file of an
/// earlier build holds the grace map alone.
fn load_side_state(path: &std::path::Path) -> Option<SideState> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok().or_else(|| {
        let grace = serde_json::from_slice(&bytes).ok()?;
        Some(SideState {
            grace,
            ..SideState::default()
        })
    })
}

/// Writes the side state atomically (a temporary file renamed over it) and synced, as the
/// journal is: it is written ahead of the signals it records, and a restart after a power
/// loss must find it as the journal's entries left it.
fn save_side_state(path: &std::path::Path, state: &SideState) -> std::io::Result<()> {
    journal::replace_file_synced(path, &serde_json::to_vec(state)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::json::JobStateName;

    /// Answers `squeue`, `sinfo` and `scontrol show reservation` from canned text and records
    /// each call's `--jobs` (and each reading of the reservations).
    struct Canned {
        asked: Vec<String>,
        /// `scontrol show reservation` fails.
        reservations_fail: bool,
    }

    fn line(id: u32, state: &str) -> String {
        format!(
            "{id}|{state}|None|1|gpu|n1|n1|1|1|1|0|gres:gpu:1|N/A|N/A|N/A|1796308000|1796308010|1796308070|N/A|1:00|0|normal|0|{id}|N/A|N/A|OK|(null)|(null)|(null)|0|job\u{1f}\n"
        )
    }

    impl SlurmRunner for Canned {
        fn run(&mut self, program: &str, args: &[String]) -> Result<String, CommandError> {
            if program == "scontrol" {
                self.asked.push("reservations".into());
                if self.reservations_fail {
                    return Err(CommandError::Timeout {
                        command: "scontrol show reservation".into(),
                        timeout_ms: 5_000,
                    });
                }
                return Ok("ReservationName=m StartTime=1796308000 EndTime=1796311600 Nodes=n[1-2] Flags=MAINT\n".into());
            }
            if program == "sinfo" {
                return Ok(
                    "n1|mixed|gpu:8|gpu:4|gpu*|up|none\nn2|idle|gpu:8|gpu:0|gpu*|up|none\n".into(),
                );
            }
            let jobs = args.iter().find_map(|a| a.strip_prefix("--jobs="));
            self.asked.push(jobs.unwrap_or("active").to_string());
            Ok(match jobs {
                None => line(16, "PENDING"),
                // Job 7 is a job array's record: Slurm lists its task 16 too.
                Some("7,15") => {
                    line(7, "COMPLETED") + &line(16, "RUNNING") + &line(15, "CANCELLED")
                }
                Some(other) => panic!("asked for {other}"),
            })
        }

        fn run_input(&mut self, _: &str, _: &[String], _: &str) -> Result<String, CommandError> {
            unreachable!("a poll writes no input")
        }
    }

    #[test]
    fn the_scheduler_type_is_read_from_scontrol_show_config() {
        let text = "Configuration data as of 2026-12-07T14:00:00\nSchedulerParameters     = batch_sched_delay=0\nSchedulerTimeSlice      = 30 sec\nSchedulerType           = sched/builtin\nSelectType              = select/cons_tres\n";
        assert_eq!(scheduler_type(text).as_deref(), Some("sched/builtin"));
        assert_eq!(scheduler_type("SelectType = select/cons_tres\n"), None);
    }

    #[test]
    fn the_side_state_round_trips_and_an_earlier_builds_grace_map_still_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("j.gantry.grace.json");
        let side = SideState {
            grace: BTreeMap::from([(4, 1_800_000_000_000)]),
            held_by_gantry: [7, 9].into(),
            array_throttles: [(4, 2)].into(),
            left_for_node_rules: [11].into(),
            left_for_one_node: [12].into(),
        };
        save_side_state(&path, &side).unwrap();
        assert_eq!(load_side_state(&path), Some(side.clone()));
        std::fs::write(&path, br#"{"4":1800000000000}"#).unwrap();
        let earlier = load_side_state(&path).unwrap();
        assert_eq!(
            (earlier.grace, earlier.held_by_gantry.len()),
            (side.grace, 0)
        );
        std::fs::write(&path, b"not json").unwrap();
        assert_eq!(load_side_state(&path), None);
    }

    #[test]
    fn failures_not_retried_for_a_minute_are_forgotten() {
        let now = Instant::now();
        let mut retry_at = RetryAt::new();
        retry_at.insert((1, "start"), (3, now));
        retry_at.insert((2, "hold"), (1, now + Duration::from_secs(2)));
        forget_old_failures(&mut retry_at, now + Duration::from_secs(59));
        assert_eq!(retry_at.len(), 2);
        forget_old_failures(&mut retry_at, now + Duration::from_secs(61));
        assert_eq!(retry_at.keys().collect::<Vec<_>>(), [&(2, "hold")]);
    }

    /// The listing (beside sinfo and, at the first poll, the reservations), then the watched
    /// jobs it lacks, in one call; what it listed already is not listed twice. The
    /// reservations are read again only after [`RESERVATIONS_EVERY`].
    #[test]
    fn a_poll_lists_active_jobs_and_asks_for_the_watched_ones_it_lacks_by_id() {
        let mut runner = Canned {
            asked: Vec::new(),
            reservations_fail: false,
        };
        let mut reservations = ReservationCache::default();
        let snapshot = poll(&mut runner, &[7, 15, 16], &mut reservations).unwrap();
        assert_eq!(runner.asked, ["active", "reservations", "7,15"]);
        let states: Vec<(u32, JobStateName)> = snapshot
            .jobs
            .iter()
            .map(|j| (j.id, j.state.clone()))
            .collect();
        assert_eq!(
            states,
            [
                (16, JobStateName::Pending),
                (7, JobStateName::Completed),
                (15, JobStateName::Ended("CANCELLED".into()))
            ]
        );
        assert!(!snapshot.nodes.is_empty());
        assert_eq!(snapshot.reservations[0].nodes, ["n1", "n2"]);
        runner.asked.clear();
        let again = poll(&mut runner, &[7, 15, 16], &mut reservations).unwrap();
        assert_eq!(runner.asked, ["active", "7,15"]);
        assert_eq!(again.reservations, snapshot.reservations);
        reservations.read_at = Instant::now().checked_sub(RESERVATIONS_EVERY);
        runner.asked.clear();
        poll(&mut runner, &[], &mut reservations).unwrap();
        assert_eq!(runner.asked, ["active", "reservations"]);
        // A failed read keeps the last list and does not fail the poll.
        runner.reservations_fail = true;
        reservations.read_at = Instant::now().checked_sub(RESERVATIONS_EVERY);
        let kept = poll(&mut runner, &[], &mut reservations).unwrap();
        assert_eq!(kept.reservations, snapshot.reservations);
        assert!(
            reservations
                .failure
                .as_deref()
                .is_some_and(|e| e.contains("timed out"))
        );
    }
}
