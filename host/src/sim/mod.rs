//! The discrete-event cluster simulator. It drives the core only through
//! [`Scheduler::handle`], exactly as firmware would, and models what the core cannot know:
//! how long a job runs on the GPUs it was given ([`speed`]).
//!
//! Event order at equal times is fixed — GPU failures, GPU recoveries, finishes, arrivals,
//! ticks; then by job id — so a run is a pure function of (trace, cluster, policy, config).
//! Every `handle` call is appended to a postcard [`DecisionLog`]; two runs with the same
//! inputs produce byte-identical logs.
//!
//! Mixed workloads ([`run`]): jobs carry a job model (their speed per GPU type on a
//! heterogeneous [`Cluster`]) and DAG jobs are planned on the gang they are given
//! ([`dag_run`]: the design of DAG jobs in the cluster). [`simulate`] is the homogeneous,
//! DAG-free special case every older caller uses; it gives the same results as before.

pub mod dag_run;
mod dag_run_list;
mod event_queue;
pub mod scheduler;
pub mod speed;

pub use crate::cluster::ClusterSpec;
pub use crate::trace::terms::JobTerms;
pub use dag_run::{DagPlannerKind, PlannedRun, TaskRun};
pub use scheduler::SchedulerSpec;
pub use speed::{SpeedModel, SpeedTable};

use crate::cluster::Cluster;
use crate::mixed::{DagProgress, JobExtras};
use crate::progress::RunProgress;
use crate::registry::{
    AnyOrder, AnyPlacer, CapacitySet, HOST_GANG, HOST_GPUS, HOST_JOBS, OrderKind, PlacerKind,
};
use crate::tias_config::{Invalid, TiasOverrides};
use crate::trace::TraceJob;
use dag_run::{DagPlanning, planning_seed};
use event_queue::EventQueue;
use gantry_core::{
    CommProfile, Decision, DurationMs, Event, GpuId, HeadOfLine, JobId, JobSpec, MachineId,
    PreemptionClass, SchedError, Scheduler, TimeMs, Topology,
};
use std::collections::VecDeque;

/// Added to [`SimConfig::requeue_delay_ms`]: a wait counted in whole seconds ends half a
/// second later on average over the second's phase (Slurm's begin time for a requeued job
/// is the requeue's whole second + `cred_expire` + 1 s, `batch_requeue_fini` in
/// `job_mgr.c`; on the lab, with `cred_expire=10`, restarts on the old nodes ran 10.2–10.8 s
/// after their requeue).
pub const REQUEUE_SECOND_MS: u64 = 500;

/// The host's scheduler type.
pub type HostScheduler = Scheduler<AnyOrder, AnyPlacer, HOST_GPUS, HOST_JOBS, HOST_GANG>;
/// A decision as the host's scheduler emits it.
pub type HostDecision = Decision<HOST_GANG>;
/// Decisions one `handle` call may append before it asks to be called again.
pub const DECISION_BUFFER: usize = 64;

/// Simulation settings other than the trace, cluster and policies.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimConfig {
    /// Period of `Tick` events while jobs are live, ms: how often time-driven orders
    /// (demotion, urgency) are re-evaluated (Tiresias's scheduling interval). Orders whose
    /// keys do not change with time alone (FIFO) get no ticks.
    pub tick_ms: u64,
    /// Time a job spends restarting after a preemption before it makes progress, ms.
    pub restart_overhead_ms: u64,
    /// The wait before a requeued job may run again on the nodes it ran on, ms; 0: none.
    /// Their slurmd revoked its credential, and Slurm holds a requeued job `cred_expire` +
    /// 1 s; `gantry slurm` skips that wait when the core restarts the job on other nodes,
    /// and on those nodes once the requeue is 2 s old (its `REVOKED_CREDENTIAL_MARGIN_MS`).
    /// So a job restarted on any machine of its preempted run makes no progress before its
    /// preemption + this + [`REQUEUE_SECOND_MS`]; elsewhere it restarts at once. Not in recordings:
    /// it changes when jobs end, which the recorded events hold, and the core never sees it
    /// (hence skipped by serde, as [`reserve_head`](Self::reserve_head)).
    #[serde(skip)]
    pub requeue_delay_ms: u64,
    /// Seed for every random choice (randomised placers, fault injection).
    pub seed: u64,
    /// How placement affects speed.
    pub speed_model: SpeedModel,
    /// Injected GPU failures, if any.
    pub faults: Option<FaultConfig>,
    /// What a preemption costs a job.
    pub preemption: PreemptionMode,
    /// Under [`PreemptionMode::Checkpoint`]: the job saves its progress every this many ms
    /// of progress in a run, and a preemption loses what it made since the last save; 0:
    /// it loses nothing (a checkpoint taken at the preemption itself, free).
    pub checkpoint_interval_ms: u64,
    /// The core's minimum run quantum ([`gantry_core::SchedulerConfig::min_run`]), ms.
    pub min_run_ms: u64,
    /// Give the queue head a reservation ([`HeadOfLine::Reserve`]) instead of the order's
    /// own head-of-line rule: Slurm's backfill does, so `gantry slurm` does by default and
    /// `simulate --reserve-head` predicts it. Not in the version-3 header layout (a
    /// recording keeps it in its header extension, `record::put_header`), hence skipped
    /// by serde here.
    #[serde(skip)]
    pub reserve_head: bool,
    /// The changes a `--tias-config` file makes to TIAS's constants (orders other than TIAS
    /// have none). In a recording's header extension like [`reserve_head`](Self::reserve_head),
    /// hence skipped by serde here.
    #[serde(skip)]
    pub tias: Option<TiasOverrides>,
}

impl SimConfig {
    /// The core's configuration for `order` under these settings: the order's own
    /// behaviour, this minimum run quantum and, with [`reserve_head`](Self::reserve_head),
    /// a reservation for the queue head.
    pub fn scheduler_config(
        &self,
        order: &impl gantry_core::JobOrder,
    ) -> gantry_core::SchedulerConfig {
        let config = gantry_core::SchedulerConfig::for_order(order)
            .with_min_run(DurationMs(self.min_run_ms));
        if self.reserve_head {
            config.with_head_of_line(HeadOfLine::Reserve)
        } else {
            config
        }
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            tick_ms: 60_000,
            restart_overhead_ms: 0,
            requeue_delay_ms: 0,
            seed: 0,
            speed_model: SpeedModel::CommCost,
            faults: None,
            preemption: PreemptionMode::Checkpoint,
            checkpoint_interval_ms: 0,
            min_run_ms: 0,
            reserve_head: false,
            tias: None,
        }
    }
}

/// What a preemption (for priority, or a GPU failure) costs a gang job in the simulator.
/// Every restart also waits [`SimConfig::restart_overhead_ms`] before making progress.
/// DAG jobs keep the tasks they finished under every mode.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
pub enum PreemptionMode {
    /// The job resumes from its last checkpoint, taken every
    /// [`SimConfig::checkpoint_interval_ms`] of progress (0: at the preemption itself, so
    /// nothing is lost: the simulator's behaviour when no mode is asked for).
    #[default]
    Checkpoint,
    /// The job is killed and restarts from zero (Slurm's requeue of a job that does not
    /// checkpoint): a preemption loses all its progress.
    Restart,
    /// Every job is submitted as [`PreemptionClass::Never`]: once started it runs to
    /// completion; a GPU failure still stops it, and it restarts from zero.
    Never,
}

/// Seeded fault injection: GPU failures arrive as a Poisson process over the whole cluster;
/// each takes down one GPU or, with probability `machine_drain_share`, every GPU of its
/// machine (a drain), and each failed GPU comes back after an exponentially distributed
/// repair time. Faults stop once no job is live and none is still to arrive.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FaultConfig {
    /// Mean failures per GPU per day.
    pub rate_per_gpu_day: f64,
    /// Mean time to repair, ms.
    pub mean_repair_ms: u64,
    /// Share of failures that drain a whole machine.
    pub machine_drain_share: f64,
}

impl FaultConfig {
    /// `rate` failures per GPU per day, 1 h mean repair, one failure in ten a machine drain.
    pub fn with_rate(rate_per_gpu_day: f64) -> Self {
        Self {
            rate_per_gpu_day,
            mean_repair_ms: 3_600_000,
            machine_drain_share: 0.1,
        }
    }
}

/// What happened to one job.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct JobRecord {
    /// Trace id.
    pub id: u32,
    /// GPUs requested.
    pub gpus: u16,
    /// Submission, ms.
    pub submit_ms: u64,
    /// First start, ms.
    pub first_start_ms: Option<u64>,
    /// Completion, ms.
    pub finish_ms: Option<u64>,
    /// Deadline, ms.
    pub deadline_ms: Option<u64>,
    /// The trace's duration: run time at full speed (an ideal placement), ms. Known to the
    /// simulator only; the core's information-agnostic orders never see it.
    pub duration_ms: u64,
    /// Times preempted (priority or failure).
    pub preemptions: u32,
    /// Of those, times requeued because one of its GPUs failed.
    pub requeues: u32,
    /// Communication cost of each placement it ran on, in start order.
    pub placement_costs: Vec<f64>,
    /// GPU·ms it held GPUs for (progress or not).
    pub busy_gpu_ms: u64,
    /// GPU·ms of runs ended by a preemption that did not become kept progress: the
    /// progress the preemption mode loses plus the restart overhead.
    pub wasted_gpu_ms: u64,
    /// The core refused it at submission (with the error's text).
    pub refused: Option<String>,
    /// The core rejected it after accepting it.
    pub rejected: bool,
    /// Cancelled by Slurm's deadline rule ([`JobTerms`]): not running when its time limit,
    /// counted from then, would have ended after its deadline.
    pub cancelled: bool,
    /// Tasks, for a DAG job (0 for a gang job).
    pub dag_tasks: u32,
    /// Each start of a DAG job: when its run began making progress and its plan.
    pub dag_runs: Vec<DagRunRecord>,
}

/// One run of a DAG job on one gang.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DagRunRecord {
    /// When the run began making progress (start + restart overhead), ms.
    pub from_ms: u64,
    /// The gang.
    pub gpus: Vec<u16>,
    /// The plan of the tasks left at this start.
    pub plan: PlannedRun,
}

/// Cluster state after an event: for utilisation and queue plots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TimelinePoint {
    /// Time, ms.
    pub time_ms: u64,
    /// GPUs held by running jobs.
    pub busy_gpus: u32,
    /// Live jobs not running (waiting or preempted).
    pub queued_jobs: u32,
}

/// A simulation's outcome.
#[derive(Clone, Debug, Default)]
pub struct SimOutput {
    /// One record per trace job, by id.
    pub jobs: Vec<JobRecord>,
    /// Total GPUs of the cluster.
    pub cluster_gpus: usize,
    /// The job order's name.
    pub order: &'static str,
    /// The placer's name.
    pub placer: &'static str,
    /// Every handle call, postcard-encoded.
    pub log: DecisionLog,
    /// Times the table was full and an arrival was held back by the simulator.
    pub held_back: u64,
    /// Placer faults the core reported (invalid picks replaced by the lowest usable GPU).
    pub placer_faults: u32,
    /// Events a correct core never refuses (a finish of a running job, a tick) that it did
    /// refuse; always empty unless there is a bug.
    pub anomalies: Vec<String>,
    /// GPUs that failed during the run (a machine drain counts each of its GPUs).
    pub gpu_failures: u64,
    /// The DAG planner's name.
    pub dag_planner: &'static str,
    /// The scheduler's label ("gantry" for the combined scheduler, see [`SchedulerSpec`]).
    pub scheduler: String,
    /// Busy GPUs and queue length after every event that changed them.
    pub timeline: Vec<TimelinePoint>,
    /// Why WORL planned without its DDQN, if it did.
    pub dag_note: Option<String>,
    /// The type name of every GPU (`ref` on a homogeneous cluster).
    pub gpu_types: Vec<String>,
    /// Set when the run stopped because a job could not finish ([`MAX_FAILED_RUNS`]): the
    /// jobs still live then are reported unfinished.
    pub gave_up: Option<GaveUp>,
}

/// How many of a job's runs GPU failures may end, with no progress kept since, before the
/// simulation stops. Where a failure costs a job its progress (`--preemption restart`, a
/// checkpoint interval or restart overhead long against the time between failures, a
/// never-preemptible job), a gang job needs about `e^(failure rate × GPUs × length)` runs,
/// and failures go on for ever: full Philly under `--faults 0.2 --preemption restart` did
/// not end in 5 minutes. A job that would finish after 10,000 such runs is not worth
/// simulating, and the stop comes after under a second. Preemptions for priority do not
/// count: they end once the queue drains (under `--preemption restart` TIAS preempts one job
/// of full Philly 10,717 times, and it finishes).
pub const MAX_FAILED_RUNS: u32 = 10_000;

/// Why and where a simulation stopped before every job ended ([`SimOutput::gave_up`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GaveUp {
    /// Simulated time of the stop, ms.
    pub at_ms: u64,
    /// The job whose runs GPU failures ended [`MAX_FAILED_RUNS`] times with nothing kept
    /// (trace id).
    pub job: u32,
    /// Its GPUs.
    pub gpus: u16,
    /// Jobs not finished at the stop.
    pub unfinished: usize,
}

impl std::fmt::Display for GaveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "stopped at simulated day {:.0}, {} job(s) unfinished: GPU failures ended \
             {MAX_FAILED_RUNS} runs of job {} ({} GPUs) before it kept any progress, so it \
             would not finish (its GPUs fail faster than it saves progress under \
             --preemption restart or this --checkpoint-interval-s / --restart-overhead-s); \
             lower --faults or checkpoint more often",
            self.at_ms as f64 / 86_400_000.0,
            self.unfinished,
            self.job,
            self.gpus,
        )
    }
}

/// One `handle` call as recorded: the input, and what the core answered.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LogEntry {
    /// The time passed in.
    pub now: TimeMs,
    /// The event.
    pub event: Event,
    /// The error, if the core refused the event.
    pub error: Option<SchedError>,
    /// Decisions appended by this call.
    pub decisions: Vec<HostDecision>,
}

/// A postcard-encoded sequence of [`LogEntry`]s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecisionLog {
    /// The encoded bytes.
    pub bytes: Vec<u8>,
    /// Number of entries.
    pub entries: u64,
}

impl DecisionLog {
    fn push(&mut self, entry: &LogEntry) {
        // Encoding into a Vec cannot fail for these types.
        if let Ok(bytes) = postcard::to_extend(entry, std::mem::take(&mut self.bytes)) {
            self.bytes = bytes;
        }
        self.entries += 1;
    }
}

/// Why a simulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The cluster does not fit the core's capacity.
    #[error("cluster {0} has more GPUs than the core's capacity ({1}) or is malformed")]
    Cluster(ClusterSpec, usize),
    /// The simulation thread panicked (a bug).
    #[error("simulation thread panicked")]
    Panicked,
    /// The TIAS configuration has a value no TIAS may have (checked when a file is read, so
    /// only a recording's forged header gets here).
    #[error("TIAS configuration: {0}")]
    TiasConfig(#[from] Invalid),
}

/// Runs `jobs` on a homogeneous `cluster` with the named order and placer (no DAG jobs), on
/// the host's capacities.
pub fn simulate(
    jobs: &[TraceJob],
    cluster: ClusterSpec,
    order: OrderKind,
    placer: PlacerKind,
    config: &SimConfig,
) -> Result<SimOutput, SimError> {
    simulate_with_capacities(jobs, cluster, order, placer, config, CapacitySet::Host)
}

/// As [`simulate`], with the core built for `capacities` (the firmware's, to record a
/// stream the firmware must answer byte for byte).
pub fn simulate_with_capacities(
    jobs: &[TraceJob],
    cluster: ClusterSpec,
    order: OrderKind,
    placer: PlacerKind,
    config: &SimConfig,
    capacities: CapacitySet,
) -> Result<SimOutput, SimError> {
    use gantry_core::wire::{FIRMWARE_GANG, FIRMWARE_GPUS, FIRMWARE_JOBS};
    let simulation = Simulation {
        jobs,
        extras: &JobExtras::default(),
        cluster: &Cluster::homogeneous(cluster),
        scheduler: SchedulerSpec::new(order, placer, DagPlannerKind::List),
        config,
        progress: None,
    };
    match capacities {
        CapacitySet::Host => run(&simulation),
        CapacitySet::Firmware => run_on::<FIRMWARE_GPUS, FIRMWARE_JOBS, FIRMWARE_GANG>(&simulation),
    }
}

/// One simulation of a mixed workload.
#[derive(Clone, Copy, Debug)]
pub struct Simulation<'a> {
    /// The jobs.
    pub jobs: &'a [TraceJob],
    /// Their models and DAGs.
    pub extras: &'a JobExtras,
    /// The cluster (shape and GPU types).
    pub cluster: &'a Cluster,
    /// Order, placer and DAG planner.
    pub scheduler: SchedulerSpec,
    /// Settings.
    pub config: &'a SimConfig,
    /// Counts finished jobs, if given.
    pub progress: Option<&'a RunProgress>,
}

/// Runs a mixed workload on the host's capacities.
///
/// The scheduler (about 5 MB inline) is built on a dedicated thread with a large stack.
pub fn run(r: &Simulation<'_>) -> Result<SimOutput, SimError> {
    run_on::<HOST_GPUS, HOST_JOBS, HOST_GANG>(r)
}

/// [`run`] with a core of `G` GPUs, `J` live jobs and gangs of `GANG`.
fn run_on<const G: usize, const J: usize, const GANG: usize>(
    r: &Simulation<'_>,
) -> Result<SimOutput, SimError> {
    let spec = r.cluster.spec;
    if spec.gpus() > G {
        return Err(SimError::Cluster(spec, G));
    }
    let topology: Topology<G> = r
        .cluster
        .topology()
        .map_err(|_| SimError::Cluster(spec, G))?;
    let batched = r.scheduler.order.batches_instants();
    let order = AnyOrder::configured(r.scheduler.order, r.config.tias.as_ref())?;
    let hints = crate::mixed::hints::PlacementHints::new(r.cluster, r.extras, r.jobs.len());
    let placer = AnyPlacer::<G>::new(r.scheduler.placer, r.config.seed)
        .with_hints(hints.map(std::sync::Arc::new));
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("gantry-sim".into())
            .stack_size(256 << 20)
            .spawn_scoped(scope, || {
                let planning = (r.extras.dag_jobs() > 0).then(|| {
                    DagPlanning::new(
                        r.scheduler.dag_planner,
                        std::path::Path::new(crate::dag::worl_rtgs::DEFAULT_MODEL),
                    )
                });
                let config = r.config.scheduler_config(&order);
                let scheduler = Box::new(Scheduler::<_, _, G, J, GANG>::with_config(
                    topology, order, placer, config,
                ));
                let mut engine = Engine::new(r.jobs, scheduler, r.config);
                engine.batched = batched;
                engine.mixed = Some(Mixed {
                    cluster: r.cluster,
                    extras: r.extras,
                    planning,
                    done: vec![DagProgress::default(); r.jobs.len()],
                    plans: vec![None; r.jobs.len()],
                    starts: vec![0; r.jobs.len()],
                });
                engine.progress_bar = r.progress;
                for (i, record) in engine.records.iter_mut().enumerate() {
                    if let Some(dag) = r.extras.dag_of(i) {
                        record.dag_tasks = dag.tasks().len() as u32;
                    }
                }
                let mut out = engine.run();
                out.dag_planner = r.scheduler.dag_planner.name();
                out.scheduler = r.scheduler.label();
                out.gpu_types = (0..spec.gpus() as u16)
                    .map(|g| r.cluster.type_name(GpuId(g)).to_string())
                    .collect();
                Ok(out)
            })
            .map_err(|_| SimError::Panicked)?
            .join()
            .map_err(|_| SimError::Panicked)?
    })
}

/// What a mixed run adds to the engine: GPU types, job models, DAG jobs and their planner.
struct Mixed<'a> {
    cluster: &'a Cluster,
    extras: &'a JobExtras,
    planning: Option<DagPlanning>,
    /// Per DAG job: what earlier runs achieved.
    done: Vec<DagProgress>,
    /// Per DAG job: the plan of its current run.
    plans: Vec<Option<PlannedRun>>,
    /// Starts so far per job (seeds each planning).
    starts: Vec<u32>,
}

/// `Pending::generation` of a tick armed by [`HostScheduler::next_review`] (periodic ticks
/// have 0).
const REVIEW_TICK: u32 = 1;

/// Kinds of simulator events; the discriminant order is the tie-break at equal times. For
/// `GpuDown`/`GpuUp` the pending event's `job` field holds the GPU id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    GpuDown,
    GpuUp,
    Fault,
    Finish,
    Arrival,
    Tick,
    /// Slurm's deadline rule for the job ([`JobTerms::start_by_ms`]): cancelled unless it
    /// runs. Last at its instant, so a start decided at that instant counts.
    Expire,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    time_ms: u64,
    kind: Kind,
    job: u32,
    generation: u32,
}

/// A job's simulator-side progress.
#[derive(Clone, Debug, Default)]
struct Progress {
    remaining_ms: f64,
    generation: u32,
    run: Option<Run>,
    /// Runs since the job last kept progress that a GPU failure ended.
    failed_runs: u32,
    /// Where and when the job's last run was preempted, while Slurm's requeue delay
    /// ([`SimConfig::requeue_delay_ms`]) may still hold it.
    requeued: Option<Requeued>,
}

#[derive(Clone, Debug)]
struct Run {
    started_ms: u64,
    progress_from_ms: u64,
    speed: f64,
    gpus: u16,
    /// The machines the run holds GPUs on, in ascending order (only with a requeue delay:
    /// [`Engine::machines_of`]).
    machines: Vec<MachineId>,
}

/// A preempted run, for Slurm's requeue delay.
#[derive(Clone, Debug)]
struct Requeued {
    /// When Slurm lets the job run on `machines` again, ms.
    begin_ms: u64,
    /// The machines of the preempted run.
    machines: Vec<MachineId>,
}

/// A decision of a core with gangs of up to `GANG` GPUs as the host logs it (same postcard
/// bytes: a gang is a length-prefixed list whatever its capacity).
pub fn host_decision<const GANG: usize>(decision: &Decision<GANG>) -> HostDecision {
    match decision {
        Decision::Start { job, gpus } => {
            let mut set = gantry_core::GpuSet::new();
            for &g in gpus.as_slice() {
                // GANG ≤ HOST_GANG and the ids are distinct: never refused.
                let _ = set.insert(g);
            }
            Decision::Start {
                job: *job,
                gpus: set,
            }
        }
        Decision::Preempt { job, reason } => Decision::Preempt {
            job: *job,
            reason: *reason,
        },
        Decision::Reject { job, reason } => Decision::Reject {
            job: *job,
            reason: *reason,
        },
    }
}

struct Engine<'a, const G: usize, const J: usize, const GANG: usize> {
    trace: &'a [TraceJob],
    scheduler: Box<Scheduler<AnyOrder, AnyPlacer<G>, G, J, GANG>>,
    config: &'a SimConfig,
    speeds: SpeedTable,
    queue: EventQueue<Pending>,
    held_back: VecDeque<u32>,
    held_back_count: u64,
    progress: Vec<Progress>,
    records: Vec<JobRecord>,
    log: DecisionLog,
    tick_armed: bool,
    review_armed: Option<u64>,
    live: usize,
    anomalies: Vec<String>,
    arrivals_left: usize,
    held_for_gpus: Vec<u32>,
    fault_rng: gantry_core::SeededRng,
    gpu_down: Vec<bool>,
    gpu_failures: u64,
    gave_up: Option<GaveUp>,
    /// A job whose [`MAX_FAILED_RUNS`]-th run since it last kept progress a GPU failure
    /// just ended: it cannot finish.
    cannot_finish: Option<u32>,
    /// Fold every event of one instant into one scheduling pass (the Tiresias copies): events
    /// go through [`HostScheduler::handle_deferred`], then one `Tick` schedules.
    batched: bool,
    /// A deferred event or a review tick at the current instant still needs its pass.
    pass_due: bool,
    /// GPU types, job models and DAG jobs (none for [`simulate`]'s runs).
    mixed: Option<Mixed<'a>>,
    /// Counts jobs done.
    progress_bar: Option<&'a RunProgress>,
    /// GPUs held by running jobs, and jobs running.
    busy_gpus: u32,
    running: u32,
    timeline: Vec<TimelinePoint>,
}

impl<'a, const G: usize, const J: usize, const GANG: usize> Engine<'a, G, J, GANG> {
    fn new(
        trace: &'a [TraceJob],
        scheduler: Box<Scheduler<AnyOrder, AnyPlacer<G>, G, J, GANG>>,
        config: &'a SimConfig,
    ) -> Self {
        let speeds = SpeedTable::new(config.speed_model, scheduler.topology());
        let records = trace
            .iter()
            .map(|j| JobRecord {
                id: j.id,
                gpus: j.gpus,
                submit_ms: j.submit_ms,
                deadline_ms: j.deadline_ms,
                duration_ms: j.duration_ms,
                ..JobRecord::default()
            })
            .collect::<Vec<_>>();
        let progress = trace
            .iter()
            .map(|j| Progress {
                remaining_ms: j.duration_ms as f64,
                ..Progress::default()
            })
            .collect();
        let arrivals = trace
            .iter()
            .enumerate()
            .map(|(i, j)| Pending {
                time_ms: j.submit_ms,
                kind: Kind::Arrival,
                job: i as u32,
                generation: 0,
            })
            .collect();
        let queue = EventQueue::with_arrivals(arrivals);
        Self {
            trace,
            scheduler,
            config,
            speeds,
            queue,
            held_back: VecDeque::new(),
            held_back_count: 0,
            progress,
            records,
            log: DecisionLog::default(),
            tick_armed: false,
            review_armed: None,
            live: 0,
            anomalies: Vec::new(),
            arrivals_left: trace.len(),
            held_for_gpus: Vec::new(),
            fault_rng: gantry_core::SeededRng::new(config.seed ^ 0xFA17_FA17),
            gpu_down: Vec::new(),
            gpu_failures: 0,
            gave_up: None,
            cannot_finish: None,
            batched: false,
            pass_due: false,
            mixed: None,
            progress_bar: None,
            busy_gpus: 0,
            running: 0,
            timeline: Vec::new(),
        }
    }

    /// Notes the cluster's state after an event at `now` (one point per change, the last
    /// one per instant).
    fn note_timeline(&mut self, now: u64) {
        let point = TimelinePoint {
            time_ms: now,
            busy_gpus: self.busy_gpus,
            queued_jobs: (self.live as u32).saturating_sub(self.running),
        };
        match self.timeline.last_mut() {
            Some(last) if last.time_ms == now => *last = point,
            Some(last)
                if (last.busy_gpus, last.queued_jobs) == (point.busy_gpus, point.queued_jobs) => {}
            _ => self.timeline.push(point),
        }
    }

    fn job_done(&self) {
        if let Some(p) = self.progress_bar {
            p.inc(1);
        }
    }

    fn run(mut self) -> SimOutput {
        self.gpu_down = vec![false; self.scheduler.topology().gpu_count()];
        self.schedule_next_fault(0);
        while let Some(p) = self.queue.pop() {
            let now = p.time_ms;
            match p.kind {
                Kind::Arrival => {
                    self.arrivals_left -= 1;
                    if self.hopeless_on_arrival(now, p.job) {
                        self.records[p.job as usize].cancelled = true;
                        self.job_done();
                    } else {
                        self.submit(now, p.job);
                        self.arm_expiry(now, p.job);
                    }
                }
                Kind::Expire => self.expire(now, p.job),
                Kind::Fault => self.inject_fault(now),
                Kind::GpuDown => {
                    let result = self.handle(now, Event::GpuDown(GpuId(p.job as u16)));
                    self.note_anomaly(now, result);
                }
                Kind::GpuUp => {
                    self.gpu_down[p.job as usize] = false;
                    let result = self.handle(now, Event::GpuUp(GpuId(p.job as u16)));
                    self.note_anomaly(now, result);
                    self.resubmit_held_for_gpus(now);
                }
                Kind::Finish => {
                    if self.progress[p.job as usize].generation == p.generation {
                        let result = self.handle(now, Event::Finish(JobId(p.job)));
                        self.note_anomaly(now, result);
                        self.resubmit_held_back(now);
                    }
                }
                Kind::Tick => {
                    // Batched runs keep only the latest review time, like Tiresias's single
                    // `next_job_jump`: a superseded review tick is no event at all.
                    let superseded = self.batched && self.review_armed != Some(now);
                    if p.generation == REVIEW_TICK {
                        if self.review_armed == Some(now) {
                            self.review_armed = None;
                        }
                    } else {
                        self.tick_armed = false;
                    }
                    if self.live > 0 {
                        if self.batched {
                            self.pass_due |= !superseded;
                        } else {
                            let result = self.handle(now, Event::Tick);
                            self.note_anomaly(now, result);
                        }
                    }
                }
            }
            self.note_timeline(now);
            if let Some(job) = self.cannot_finish.take() {
                self.gave_up = Some(self.give_up(now, job));
                break;
            }
            if self.batched {
                let same_instant = self.queue.peek().is_some_and(|n| n.time_ms == now);
                if same_instant {
                    continue;
                }
                if std::mem::take(&mut self.pass_due) {
                    let result = self.handle(now, Event::Tick);
                    self.note_anomaly(now, result);
                }
            }
            self.arm_tick(now);
        }
        SimOutput {
            jobs: self.records,
            cluster_gpus: self.scheduler.topology().gpu_count(),
            order: gantry_core::JobOrder::name(self.scheduler.order()),
            placer: gantry_core::Placer::<G>::name(self.scheduler.placer()),
            log: self.log,
            held_back: self.held_back_count,
            placer_faults: self.scheduler.placer_faults(),
            anomalies: self.anomalies,
            gpu_failures: self.gpu_failures,
            dag_planner: DagPlannerKind::List.name(),
            scheduler: String::new(),
            timeline: self.timeline,
            dag_note: self
                .mixed
                .and_then(|m| m.planning.and_then(|p| p.ddqn_failure)),
            gpu_types: Vec::new(),
            gave_up: self.gave_up,
        }
    }

    /// Jobs neither finished nor turned away yet.
    fn unfinished(&self) -> usize {
        self.live + self.arrivals_left + self.held_back.len() + self.held_for_gpus.len()
    }

    fn give_up(&self, now: u64, job: u32) -> GaveUp {
        GaveUp {
            at_ms: now,
            job: self.trace[job as usize].id,
            gpus: self.trace[job as usize].gpus,
            unfinished: self.unfinished(),
        }
    }

    /// Draws the next fault time (exponential inter-arrival over the whole cluster).
    fn schedule_next_fault(&mut self, now: u64) {
        let Some(faults) = self.config.faults else {
            return;
        };
        let per_ms = faults.rate_per_gpu_day * self.gpu_down.len() as f64 / 86_400_000.0;
        if per_ms <= 0.0 || !per_ms.is_finite() {
            return;
        }
        let gap = -libm::log(1.0 - self.fault_rng.unit_f64()) / per_ms;
        let time_ms = now.saturating_add(gap.ceil() as u64);
        self.queue.push(Pending {
            time_ms,
            kind: Kind::Fault,
            job: 0,
            generation: 0,
        });
    }

    /// Fails one GPU (or drains its machine) and schedules the repairs and the next fault.
    fn inject_fault(&mut self, now: u64) {
        let Some(faults) = self.config.faults else {
            return;
        };
        if self.live == 0
            && self.arrivals_left == 0
            && self.held_back.is_empty()
            && self.held_for_gpus.is_empty()
        {
            return;
        }
        let topology = self.scheduler.topology();
        let gpu = GpuId(self.fault_rng.below(self.gpu_down.len() as u32) as u16);
        let drain = self.fault_rng.unit_f64() < faults.machine_drain_share;
        let gpus: Vec<u16> = if drain {
            topology.gpus_of_machine(topology.machine_of(gpu)).collect()
        } else {
            vec![gpu.0]
        };
        for g in gpus {
            if self.gpu_down[usize::from(g)] {
                continue;
            }
            self.gpu_down[usize::from(g)] = true;
            self.gpu_failures += 1;
            let repair_ms =
                -libm::log(1.0 - self.fault_rng.unit_f64()) * faults.mean_repair_ms as f64;
            let job = u32::from(g);
            self.queue.push(Pending {
                time_ms: now,
                kind: Kind::GpuDown,
                job,
                generation: 0,
            });
            let up_ms = now.saturating_add(repair_ms.ceil() as u64).max(now + 1);
            self.queue.push(Pending {
                time_ms: up_ms,
                kind: Kind::GpuUp,
                job,
                generation: 0,
            });
        }
        self.schedule_next_fault(now);
    }

    /// Retries arrivals that asked for more GPUs than were healthy when they came.
    fn resubmit_held_for_gpus(&mut self, now: u64) {
        for job in std::mem::take(&mut self.held_for_gpus) {
            self.submit_now(now, job);
        }
    }

    /// Arms a tick at the earliest time the order said a key changes by itself
    /// ([`HostScheduler::next_review`]): demotion thresholds, deadline urgency.
    /// Batched runs (the Tiresias copies) replace the armed time instead, even by a later one.
    fn arm_review(&mut self) {
        let next = self.scheduler.next_review().map(|t| t.0);
        if self.batched && self.review_armed != next {
            self.review_armed = None;
        }
        let Some(at) = next else {
            return;
        };
        if self.review_armed.is_none_or(|armed| at < armed) {
            self.queue.push(Pending {
                time_ms: at,
                kind: Kind::Tick,
                job: 0,
                generation: REVIEW_TICK,
            });
            self.review_armed = Some(at);
        }
    }

    /// Finish and Tick are never refused by a correct core; keep any refusal for the report.
    fn note_anomaly(&mut self, now: u64, result: Result<(), SchedError>) {
        if let Err(err) = result {
            self.anomalies.push(format!("at {now} ms: {err}"));
        }
    }

    fn arm_tick(&mut self, now: u64) {
        self.arm_review();
        let wanted = gantry_core::JobOrder::time_driven(self.scheduler.order());
        if wanted && !self.tick_armed && self.live > 0 && self.config.tick_ms > 0 {
            let time_ms = now.saturating_add(self.config.tick_ms);
            self.queue.push(Pending {
                time_ms,
                kind: Kind::Tick,
                job: 0,
                generation: 0,
            });
            self.tick_armed = true;
        }
    }

    fn spec(&self, job: u32) -> JobSpec {
        let t = &self.trace[job as usize];
        JobSpec {
            id: JobId(job),
            gpus: t.gpus,
            deadline: t.deadline_ms.map(TimeMs),
            // With batch-system terms the job declares what it declares there, its time
            // limit (what `gantry slurm` knows); otherwise the trace's duration.
            declared_length: match self.terms_of(job) {
                Some(terms) => terms.time_limit_ms.map(DurationMs),
                None => Some(DurationMs(t.duration_ms)),
            },
            comm: CommProfile {
                gradient_mb: t.gradient_mb,
            },
            preemption: self.class_of(job),
        }
    }

    /// The job's preemption class: its terms' when the workload has them
    /// (`--job-terms`), else the one the preemption mode gives every job.
    fn class_of(&self, job: u32) -> PreemptionClass {
        if let Some(terms) = self.terms_of(job) {
            return terms.preemption;
        }
        match self.config.preemption {
            PreemptionMode::Never => PreemptionClass::Never,
            PreemptionMode::Checkpoint | PreemptionMode::Restart => PreemptionClass::Checkpointing,
        }
    }

    fn terms_of(&self, job: u32) -> Option<JobTerms> {
        self.mixed.as_ref()?.extras.terms_of(job as usize)
    }

    /// Slurm's deadline rule at submission: the job's time limit from now already ends after
    /// its deadline, so it never starts (the adapter cancels it in the cycle that sees it).
    fn hopeless_on_arrival(&self, now: u64, job: u32) -> bool {
        let deadline = self.trace[job as usize].deadline_ms;
        self.terms_of(job)
            .and_then(|t| t.start_by_ms(deadline))
            .is_some_and(|start_by| now > start_by)
    }

    /// Arms Slurm's deadline rule for `job` (when its terms give a time limit and it has a
    /// deadline): at the first instant its limit from now ends after its deadline, or now if
    /// that has passed.
    fn arm_expiry(&mut self, now: u64, job: u32) {
        let deadline = self.trace[job as usize].deadline_ms;
        let Some(start_by) = self.terms_of(job).and_then(|t| t.start_by_ms(deadline)) else {
            return;
        };
        self.queue.push(Pending {
            time_ms: start_by.saturating_add(1).max(now),
            kind: Kind::Expire,
            job,
            generation: 0,
        });
    }

    /// Slurm's deadline rule fires for `job`: a live job that is not running is cancelled
    /// (the adapter cancels a held job whose time limit from now ends after its deadline;
    /// Slurm would cancel it at its start). A running job is left alone; it is checked again
    /// if it is preempted.
    fn expire(&mut self, now: u64, job: u32) {
        let j = job as usize;
        if self.progress[j].run.is_some() || self.scheduler.job(JobId(job)).is_none() {
            return;
        }
        let record = &self.records[j];
        if record.finish_ms.is_some() || record.rejected || record.cancelled {
            return;
        }
        let result = self.handle(now, Event::Cancel(JobId(job)));
        if result.is_ok() {
            self.records[j].cancelled = true;
            self.live -= 1;
            self.job_done();
            self.resubmit_held_back(now);
        }
        self.note_anomaly(now, result);
    }

    fn submit(&mut self, now: u64, job: u32) {
        if !self.held_back.is_empty() {
            // Keep arrival order: a later job must not overtake one held back.
            self.held_back.push_back(job);
            self.held_back_count += 1;
            return;
        }
        if !self.submit_now(now, job) {
            self.held_back.push_back(job);
            self.held_back_count += 1;
        }
    }

    /// Submits `job` now. Returns false when the job table is full (the caller holds the job
    /// back). A job larger than the healthy GPUs but not than the cluster waits for repairs.
    fn submit_now(&mut self, now: u64, job: u32) -> bool {
        match self.handle(now, Event::Submit(self.spec(job))) {
            Err(SchedError::JobTableFull(_)) => return false,
            // Held back past its deadline (the table was full when it arrived): it still
            // runs, as best effort, and its record keeps the deadline, so it counts as missed.
            Err(SchedError::DeadlineAlreadyPassed { .. }) => {
                let mut spec = self.spec(job);
                spec.deadline = None;
                match self.handle(now, Event::Submit(spec)) {
                    Ok(()) => self.live += 1,
                    Err(SchedError::JobTableFull(_)) => return false,
                    Err(err) => {
                        self.records[job as usize].refused = Some(err.to_string());
                        self.job_done();
                    }
                }
            }
            Err(SchedError::RequestExceedsCluster { requested, .. })
                if usize::from(requested) <= self.gpu_down.len() =>
            {
                self.held_for_gpus.push(job);
            }
            Err(err) => {
                self.records[job as usize].refused = Some(err.to_string());
                self.job_done();
            }
            Ok(()) => self.live += 1,
        }
        true
    }

    fn resubmit_held_back(&mut self, now: u64) {
        while let Some(&job) = self.held_back.front() {
            if !self.submit_now(now, job) {
                return;
            }
            self.held_back.pop_front();
        }
    }

    /// One event through the core (and as many follow-up ticks as the decision buffer needs),
    /// logging every call and applying every decision.
    fn handle(&mut self, now: u64, event: Event) -> Result<(), SchedError> {
        let mut event = event;
        let deferred = self.batched && event != Event::Tick;
        self.pass_due |= deferred;
        loop {
            let mut out: heapless::Vec<Decision<GANG>, DECISION_BUFFER> = heapless::Vec::new();
            let result = if deferred {
                self.scheduler.handle_deferred(TimeMs(now), event, &mut out)
            } else {
                self.scheduler.handle(TimeMs(now), event, &mut out)
            };
            let entry = LogEntry {
                now: TimeMs(now),
                event,
                error: result.err(),
                decisions: out.iter().map(host_decision).collect(),
            };
            self.log.push(&entry);
            let outcome = result?;
            if let Event::Finish(JobId(job)) = event {
                self.finish(now, job);
            }
            for decision in &entry.decisions {
                self.apply(now, decision);
            }
            if !outcome.more_pending {
                return Ok(());
            }
            event = Event::Tick;
        }
    }

    fn finish(&mut self, now: u64, job: u32) {
        self.stop_run(now, job);
        self.records[job as usize].finish_ms = Some(now);
        self.live -= 1;
        self.job_done();
    }

    fn apply(&mut self, now: u64, decision: &HostDecision) {
        match decision {
            Decision::Start { job, gpus } => self.start(now, job.0, gpus.as_slice()),
            Decision::Preempt { job, reason } => {
                let failed = matches!(reason, gantry_core::PreemptReason::GpuFailed(_));
                self.note_requeue(now, job.0);
                self.kill_run(now, job.0, failed);
                self.records[job.0 as usize].preemptions += 1;
                if failed {
                    self.records[job.0 as usize].requeues += 1;
                }
                self.progress[job.0 as usize].generation += 1;
                self.arm_expiry(now, job.0);
            }
            Decision::Reject { job, .. } => {
                self.records[job.0 as usize].rejected = true;
                self.live -= 1;
                self.job_done();
            }
        }
    }

    /// Remembers where `job`'s run is being preempted, and when Slurm's requeue delay
    /// lets it run there again.
    fn note_requeue(&mut self, now: u64, job: u32) {
        let progress = &mut self.progress[job as usize];
        progress.requeued = match (progress.run.as_mut(), self.config.requeue_delay_ms) {
            (Some(run), delay_ms) if delay_ms > 0 => Some(Requeued {
                begin_ms: now
                    .saturating_add(delay_ms)
                    .saturating_add(REQUEUE_SECOND_MS),
                // The run ends now: its machines move to the requeue.
                machines: std::mem::take(&mut run.machines),
            }),
            _ => None,
        };
    }

    /// When a run of `job` starting at `now` on `machines` makes progress from: after the
    /// restart overhead for a restart, and not before the requeue delay's end on a machine
    /// of the preempted run.
    fn progress_from(&self, now: u64, job: u32, machines: &[MachineId]) -> u64 {
        if self.records[job as usize].first_start_ms.is_none() {
            return now;
        }
        let after_overhead = now.saturating_add(self.config.restart_overhead_ms);
        match &self.progress[job as usize].requeued {
            Some(r) if machines.iter().any(|m| r.machines.contains(m)) => {
                after_overhead.max(r.begin_ms)
            }
            _ => after_overhead,
        }
    }

    /// The machines of `gpus`, ascending, where the requeue delay needs them; none without it.
    fn machines_of(&self, gpus: &[GpuId]) -> Vec<MachineId> {
        if self.config.requeue_delay_ms == 0 {
            return Vec::new();
        }
        let topology = self.scheduler.topology();
        let mut machines: Vec<MachineId> = gpus.iter().map(|&g| topology.machine_of(g)).collect();
        machines.sort_unstable();
        machines.dedup();
        machines
    }

    fn start(&mut self, now: u64, job: u32, gpus: &[GpuId]) {
        let machines = self.machines_of(gpus);
        let progress_from_ms = self.progress_from(now, job, &machines);
        let topology = self.scheduler.topology();
        let cost = topology.comm_cost(gpus);
        let (run_ms, speed) = match self.plan_dag(now, job, gpus, progress_from_ms) {
            Some(makespan_ms) => (makespan_ms.ceil() as u64, 1.0),
            None => {
                let speed = self.gang_speed(job, gpus);
                let run_ms = (self.progress[job as usize].remaining_ms / speed).ceil() as u64;
                (run_ms, speed)
            }
        };
        let record = &mut self.records[job as usize];
        record.first_start_ms.get_or_insert(now);
        record.placement_costs.push(cost);
        self.busy_gpus += gpus.len() as u32;
        self.running += 1;
        let progress = &mut self.progress[job as usize];
        progress.run = Some(Run {
            started_ms: now,
            progress_from_ms,
            speed,
            gpus: gpus.len() as u16,
            machines,
        });
        self.queue.push(Pending {
            time_ms: progress_from_ms.saturating_add(run_ms),
            kind: Kind::Finish,
            job,
            generation: progress.generation,
        });
    }

    /// A gang job's speed on `gpus`: the placement's comm-cost factor times its slowest GPU's
    /// speed for the job's model (the topology's speeds when the cluster has no GPU types).
    fn gang_speed(&self, job: u32, gpus: &[GpuId]) -> f64 {
        let topology = self.scheduler.topology();
        match &self.mixed {
            Some(m) if m.cluster.types.is_some() => {
                let model = m.extras.model_of(job as usize);
                self.speeds.comm_factor(topology, gpus) * m.cluster.gang_speed(model, gpus)
            }
            _ => self.speeds.speed(topology, gpus),
        }
    }

    /// For a DAG job: plans its remaining tasks on `gpus` and returns the makespan (ms);
    /// `None` for a gang job. A planner error (a defect: DAG jobs are validated when loaded)
    /// is noted as an anomaly and the job runs its remaining work on one reference GPU.
    fn plan_dag(&mut self, now: u64, job: u32, gpus: &[GpuId], from_ms: u64) -> Option<f64> {
        let seed = self.config.seed;
        let topology = self.scheduler.topology();
        let m = self.mixed.as_mut()?;
        let j = job as usize;
        let dag = m.extras.dag_of(j)?.clone();
        let planning = m.planning.as_mut()?;
        let start = m.starts[j];
        m.starts[j] += 1;
        let done = &m.done[j];
        let result = planning.plan(
            &dag,
            done,
            gpus,
            m.cluster,
            topology,
            planning_seed(seed, job, start),
        );
        let run = match result {
            Ok(run) => run,
            Err(e) => {
                let left: f64 = (0..dag.tasks().len())
                    .filter(|&i| !done.is_done(i))
                    .map(|i| done.left_ms(i).unwrap_or(dag.tasks()[i].work_ms))
                    .sum();
                self.anomalies
                    .push(format!("at {now} ms: planning DAG job {job}: {e}"));
                PlannedRun {
                    makespan_ms: left,
                    tasks: Vec::new(),
                }
            }
        };
        let makespan = run.makespan_ms;
        self.records[j].dag_runs.push(DagRunRecord {
            from_ms,
            gpus: gpus.iter().map(|g| g.0).collect(),
            plan: run.clone(),
        });
        m.plans[j] = Some(run);
        Some(makespan)
    }

    /// Ends the job's run at `now` by a preemption: what the preemption mode says is lost
    /// of a gang job's progress since its start is taken back, and the GPU time of the run
    /// that did not become kept progress (restart overhead included) is counted as wasted.
    /// `failed`: the preemption is a GPU failure (counted towards [`MAX_FAILED_RUNS`]).
    fn kill_run(&mut self, now: u64, job: u32, failed: bool) {
        let dag = self
            .mixed
            .as_ref()
            .is_some_and(|m| m.extras.dag_of(job as usize).is_some());
        let Some(run) = self.progress[job as usize].run.clone() else {
            return;
        };
        let before = self.progress[job as usize].remaining_ms;
        self.stop_run(now, job);
        let useful_ms = now.saturating_sub(run.progress_from_ms);
        let never = self.class_of(job) == PreemptionClass::Never;
        let kept_ms = if dag {
            useful_ms
        } else if never {
            // Only a GPU failure stops a never-preemptible job: it restarts from zero.
            0
        } else {
            match self.config.preemption {
                PreemptionMode::Checkpoint => match self.config.checkpoint_interval_ms {
                    0 => useful_ms,
                    every => useful_ms / every * every,
                },
                PreemptionMode::Restart | PreemptionMode::Never => 0,
            }
        };
        if !dag && kept_ms < useful_ms {
            let kept = &mut self.progress[job as usize];
            kept.remaining_ms = (before - kept_ms as f64 * run.speed).max(0.0);
        }
        let held_ms = now.saturating_sub(run.started_ms);
        let record = &mut self.records[job as usize];
        record.wasted_gpu_ms += held_ms.saturating_sub(kept_ms) * u64::from(run.gpus);
        let progress = &mut self.progress[job as usize];
        if kept_ms > 0 {
            progress.failed_runs = 0;
        } else if failed {
            progress.failed_runs = progress.failed_runs.saturating_add(1);
            if progress.failed_runs >= MAX_FAILED_RUNS {
                self.cannot_finish.get_or_insert(job);
            }
        }
    }

    /// Ends the job's current run at `now`: credits its progress (a DAG job: the tasks its
    /// plan had finished by now) and GPU time.
    fn stop_run(&mut self, now: u64, job: u32) {
        let progress = &mut self.progress[job as usize];
        if let Some(run) = progress.run.take() {
            let useful_ms = now.saturating_sub(run.progress_from_ms) as f64;
            progress.remaining_ms = (progress.remaining_ms - useful_ms * run.speed).max(0.0);
            self.records[job as usize].busy_gpu_ms +=
                now.saturating_sub(run.started_ms) * u64::from(run.gpus);
            self.busy_gpus = self.busy_gpus.saturating_sub(u32::from(run.gpus));
            self.running = self.running.saturating_sub(1);
            if let Some(m) = self.mixed.as_mut()
                && let Some(plan) = m.plans[job as usize].take()
            {
                let tasks = m.extras.dag_of(job as usize).map_or(0, |d| d.tasks().len());
                let progress = &mut m.done[job as usize];
                for t in &plan.tasks {
                    let span = (t.start_ms, t.finish_ms);
                    progress.credit(tasks, t.task as usize, t.work_ms, span, useful_ms);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "preemption_tests.rs"]
mod preemption_tests;
