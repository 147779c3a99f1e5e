//! The reconciler: each cycle it compares what Slurm reports with what the core believes,
//! turns every difference into a core event, and plans the Slurm actions that make Slurm
//! match the core's decisions. It never runs a command itself (the daemon does), so it is
//! tested with Slurm's JSON from fixtures.
//!
//! The core is the single source of truth for gantry's side: a job is *live* when the core
//! holds it, *running* when the core gave it GPUs. Slurm's side is read fresh each cycle.
//!
//! | Slurm says                                   | core: running             | core: queued        | core: unknown |
//! |----------------------------------------------|---------------------------|---------------------|---------------|
//! | pending, held                                | start it (pin + release)  | fine                | `Submit`      |
//! | pending, released                            | fine (re-pin if moved; a requeue's wait skipped) | hold it | hold it (adopt) |
//! | running / suspended / completing             | fine (placement checked)  | requeue-hold it (completing: wait) | logged (not gantry's); its GPUs out of the core's view ([`super::foreign`]) |
//! | ended (completed, failed, cancelled, …)      | `Finish`                  | `Cancel`            | —             |
//! | gone from `squeue`                           | `Finish`                  | `Cancel`            | —             |
//!
//! Nodes: a node that goes down (DOWN, powered off) sends `GpuDown` for each of its GPUs
//! (the core preempts and requeues its job, Slurm has usually requeued it already); a node
//! closed to new jobs (DRAIN, FAIL, RESERVED, MAINT) keeps the GPUs of the jobs Slurm runs
//! there and sends `GpuDown` for the rest as they free (`NodeUse::Closed`); a node usable
//! again sends `GpuUp`. A difference gantry did not expect (a job running on
//! other nodes than chosen, a state it does not know, a job released outside gantry) is
//! logged once and reconciled as the table says. GPUs that jobs running outside gantry
//! hold are taken out of the core's view (`GpuDown`) while those jobs run.

use super::action::{Action, StartPlan};
use super::array::ArrayTasks;
use super::class::CheckpointMarker;
use super::dependency::{self, Verdict};
use super::foreign::{gpus_to_take_out, outside_gpus_per_machine};
use super::gres::{GpuRequest, asks_one_node, job_request, node_gpus};
use super::json::{JobStateName, SlurmJob, SlurmNode};
use super::layout::ClusterLayout;
use super::limit::{Limit, LimitWait};
use super::reservation::{ReservedMachines, SlurmReservation};
use crate::registry::{AnyOrder, AnyPlacer, HOST_JOBS, OrderKind, PlacerKind};
use crate::sim::{DECISION_BUFFER, HostDecision, HostScheduler, LogEntry};
use crate::tias_config::{Invalid, TiasOverrides};
use gantry_core::{
    CommProfile, Decision, Event, GpuId, JobId, JobSpec, JobState, SchedError, TimeMs,
};
use std::collections::{BTreeMap, BTreeSet};

/// How long after gantry saw a job's requeue it skips Slurm's requeue wait for a restart on
/// the nodes the job ran on (`StartTime=now`). Slurm's wait (`batch_requeue_fini`:
/// `cred_expire` + 1 s, 121 s on a stock Slurm) is there because those nodes' slurmd
/// revoked the run's credential, and it refuses a launch whose credential is no newer than
/// the revocation, to the second (`slurm_cred.c`, `_credential_revoked`); slurmctld stamps
/// both. Checked on a lab with `cred_expire=120`: released onto its old node in the second
/// of its requeue, a job was killed ("Job credential revoked"); released 0.8 s after its
/// requeue, in the next second, it ran ("reissued job credential"). The revocation comes
/// before the requeue shows in `squeue`, so two seconds after gantry sees it, whatever the
/// second's phase and a poll's lag, a launch is always a later second.
pub const REVOKED_CREDENTIAL_MARGIN_MS: u64 = 2_000;

/// Reads what the poll's compact listing cannot tell ([`super::compact`]): the most nodes a
/// job may run on as the job set it, since `-N 1` and no `-N` both list as `MaxNodes` 1.
/// The controller asks only for held jobs the core starts over several nodes, where the
/// answer decides whether gantry may split them (a job that set `-N 1` is left to Slurm
/// then, as a per-node request is): one command per such job, not one per job.
pub trait NodeCounts {
    /// Each job's own maximum node count (0: not set), or why it could not be read.
    fn max_nodes(&mut self, jobs: &[u32]) -> Vec<(u32, Result<u32, String>)>;
}

/// Reads nothing: a job's node count is what the listing says.
pub struct ListedNodeCounts;

impl NodeCounts for ListedNodeCounts {
    fn max_nodes(&mut self, _jobs: &[u32]) -> Vec<(u32, Result<u32, String>)> {
        Vec::new()
    }
}

/// What Slurm reported in one poll.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// `squeue --json` jobs (any partition; the controller keeps its own).
    pub jobs: Vec<SlurmJob>,
    /// The nodes, from `sinfo` ([`super::compact`]).
    pub nodes: Vec<SlurmNode>,
    /// The advance reservations, from `scontrol show reservation` ([`super::reservation`]).
    pub reservations: Vec<SlurmReservation>,
}

/// Settings of the reconciler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerConfig {
    /// Period of `Tick` events for time-driven orders while jobs are live, ms (as
    /// `gantry simulate --tick-s`).
    pub tick_ms: u64,
    /// Failed attempts to start one job before gantry gives up on it (cancels it with the
    /// last error as the reason).
    pub max_start_attempts: u32,
    /// A released job still pending after this long is logged, ms.
    pub slow_start_ms: u64,
    /// What marks a job that checkpoints: only such jobs (and only when Slurm may requeue
    /// them) are preemptible for the core; every other job runs to completion once started
    /// ([`super::class`]).
    pub checkpoint_marker: CheckpointMarker,
    /// The core's minimum run quantum, ms ([`gantry_core::SchedulerConfig::min_run`]): a
    /// checkpointing job runs at least this long after each (re)start before it may be
    /// preempted or moved. Part of the journal's header (a resume must use the same).
    pub min_run_ms: u64,
    /// Grace period of a preemption, ms: gantry signals a running job the core preempted
    /// ([`preempt_signal`](Self::preempt_signal)) and requeues it this long after, or as
    /// soon as it ended by itself (its checkpoint is written), as Slurm's own preemption
    /// does with `GraceTime`. 0: requeued at once (Slurm's requeue then sends its own
    /// SIGTERM and, `KillWait` later, SIGKILL).
    pub preempt_grace_ms: u64,
    /// The signal of a preemption's grace period (a name `scancel --signal` takes).
    pub preempt_signal: String,
    /// Give the queue head a reservation ([`gantry_core::HeadOfLine::Reserve`]), as
    /// Slurm's backfill does: `gantry slurm` sets it unless `--no-reserve-head`; off here by
    /// default (the order's own rule, as every other caller of the core). Part of the
    /// journal's header (a resume must use the same).
    pub reserve_head: bool,
    /// The changes `--tias-config` makes to TIAS's constants. Part of the journal's header
    /// (a resume must use the same).
    pub tias: Option<TiasOverrides>,
    /// A job whose script exited 0 is finished for the core as soon as Slurm shows it
    /// COMPLETING (its GPUs are free in Slurm's count then), not once its epilog is done:
    /// its successors are released onto the completing node and start in the scheduling
    /// pass the epilog's end runs. `gantry slurm` sets it with `--epilog-ack-dir`, whose
    /// epilog waits for gantry ([`super::ack`]). Off: the job ends for the core when Slurm
    /// says COMPLETED.
    pub finish_at_completing: bool,
    /// Slurm's scheduler is `sched/builtin` (`SchedulerType`): a job left to Slurm that
    /// waits for GPUs then holds back every later start of the partition, gantry's
    /// included. Said once, at the first job gantry leaves to Slurm.
    pub slurm_builtin: bool,
}

/// Why a [`Controller`] cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The partition's shape is not a topology the core takes.
    #[error("partition shape: {0:?}")]
    Topology(#[from] gantry_core::TopologyError),
    /// [`ControllerConfig::tias`] has a value no TIAS may have.
    #[error("TIAS configuration: {0}")]
    TiasConfig(#[from] Invalid),
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self {
            tick_ms: 60_000,
            max_start_attempts: 5,
            slow_start_ms: 30_000,
            checkpoint_marker: CheckpointMarker::default(),
            min_run_ms: 0,
            preempt_grace_ms: 10_000,
            preempt_signal: "TERM".to_string(),
            reserve_head: false,
            tias: None,
            finish_at_completing: false,
            slurm_builtin: false,
        }
    }
}

/// A job that ended, as Slurm recorded it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobOutcome {
    /// Slurm's job id.
    pub id: u32,
    /// Final state (`COMPLETED`, `FAILED`, `DEADLINE`, …; `VANISHED` when `squeue` stopped
    /// listing it before gantry saw it end).
    pub state: String,
    /// GPUs it had.
    pub gpus: u16,
    /// Submission, Unix seconds.
    pub submit_s: u64,
    /// Last start, Unix seconds.
    pub start_s: u64,
    /// End, Unix seconds.
    pub end_s: u64,
    /// Its deadline, Unix seconds.
    pub deadline_s: Option<u64>,
}

/// What one cycle produced.
#[derive(Clone, Debug, Default)]
pub struct Cycle {
    /// Every `handle` call, for the journal (written before any action runs).
    pub entries: Vec<LogEntry>,
    /// Slurm actions, in the order to run them.
    pub actions: Vec<Action>,
    /// Lines for the log.
    pub notes: Vec<String>,
    /// Jobs seen ending.
    pub outcomes: Vec<JobOutcome>,
    /// Differences gantry did not expect (each also a note).
    pub unexpected: u32,
    /// Preemptions the core decided.
    pub preemptions: u32,
    /// Increases of Slurm's restart count seen.
    pub restarts_seen: u32,
    /// Jobs the core holds queued that were first seen released or started by someone else
    /// (an operator's `scontrol release`, or a second scheduler on the partition).
    pub released_outside: u32,
    /// Released jobs taken back for a QOS or association limit ([`super::limit`]).
    pub limit_holds: u32,
    /// Jobs gantry left to Slurm's own scheduler, when first logged (a job array or a
    /// heterogeneous job once, by its record's id): they run outside gantry's order.
    pub left_to_slurm: Vec<u32>,
}

/// What a node is to gantry, from `sinfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeUse {
    /// Slurm starts jobs there: its GPUs are the core's (less those of jobs outside gantry).
    Open,
    /// Slurm starts no new job there but its running jobs go on (drained, failing, in a
    /// reservation or maintenance): they keep their GPUs, the rest leave the core's view.
    Closed,
    /// Down, or powered off: its jobs are gone, and so are its GPUs.
    Down,
}

/// Kinds of one-time notes, so a lasting condition is logged once per job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Said {
    Foreign,
    WaitsForGpus,
    SlowStart,
    OperatorHold,
    Moved,
    Split,
    UnknownState,
    Adopted,
    ReleasedOutside,
    NodesAsked,
    LeftToSlurm,
    ArraySplit,
    DependencyWait,
    DependencyLeft,
    LimitLeft,
    ReservationWait,
}

/// The reconciler. Owns the core (boxed: about 5 MB).
pub struct Controller {
    core: Box<HostScheduler>,
    layout: ClusterLayout,
    config: ControllerConfig,
    batched: bool,
    /// What the journal's replay rebuilds (and a checkpoint keeps).
    replayed: Replayed,
    /// Node usability as last seen, by machine index (for transition notes).
    node_use: Vec<Option<NodeUse>>,
    restarts: BTreeMap<u32, u32>,
    refused: BTreeMap<u32, String>,
    start_failures: BTreeMap<u32, (u32, String)>,
    give_up: Vec<(u32, String)>,
    released_at_ms: BTreeMap<u32, u64>,
    said: BTreeSet<(u32, Said)>,
    /// The nodes each job was last seen holding (for the requeue wait, see
    /// [`StartPlan::start_now`]).
    last_nodes: BTreeMap<u32, BTreeSet<String>>,
    /// When gantry first saw each requeued job's latest requeue (its restart count rise, or
    /// a count above 0 at first sight): Slurm revoked the run's credential before then
    /// (see [`REVOKED_CREDENTIAL_MARGIN_MS`]).
    requeue_seen_ms: BTreeMap<u32, u64>,
    /// Jobs gantry put on a user hold (`scontrol uhold`, accepted) since it last released
    /// them. Their hold is gantry's whatever reason Slurm shows next, except
    /// `JobHeldAdmin` (an operator's `scontrol hold`): Slurm shows a held job whose begin
    /// time is in the future, as every requeued job's is, with the reason `BeginTime`, so
    /// the reason alone would make gantry hold it again at every poll.
    held_by_gantry: BTreeSet<u32>,
    /// Throttles (`%N`) of the job arrays gantry split, by array id: at most N tasks of
    /// such an array are in the core at once (Slurm would hold a further released task
    /// back). Kept beside the journal: once split, a record no longer shows its throttle.
    array_throttles: BTreeMap<u32, u32>,
    /// Released jobs Slurm kept pending for a shared QOS or association limit, taken out
    /// of the core and held until the limit may have freed ([`super::limit`]).
    limit_waits: BTreeMap<u32, LimitWait>,
    /// The jobs the held jobs of the last poll depend on (see [`Self::watched_jobs`]).
    dependency_parents: BTreeSet<u32>,
    /// Jobs an operator holds (`scontrol hold` / `requeuehold`): out of the core until
    /// released.
    operator_held: BTreeSet<u32>,
    /// The last wait reason logged per job (a new reason is logged again).
    wait_said: BTreeMap<u32, String>,
    /// Jobs gantry signalled for a preemption and has not requeued yet, with when (Unix
    /// ms): they are requeued once the grace period is over or they ended by themselves
    /// (an end then is not the job's end for the core). The daemon writes this map beside
    /// the journal before the signal is sent, so a restart neither signals twice nor
    /// forgets a requeue.
    grace: BTreeMap<u32, u64>,
    /// Jobs that left the core while Slurm still shows them COMPLETING
    /// ([`ControllerConfig::finish_at_completing`]): theirs until Slurm is done with them.
    finished_completing: BTreeSet<u32>,
    /// Nodes that joined the partition after the start, already logged.
    joined_said: BTreeSet<String>,
    /// Nodes closed to new jobs ahead of an advance reservation, by machine index, with the
    /// reservation's name: the core placed a job there whose time limit runs into it
    /// ([`super::reservation`]). Open again once the reservation is over or gone.
    closed_for_reservation: BTreeMap<usize, String>,
    /// Whether the partition was last logged set DOWN or INACTIVE (one line for all its
    /// nodes, and one when it is up again).
    partition_down_said: bool,
    /// Jobs gantry released that Slurm cannot run where gantry pinned them
    /// (`BadConstraints`: their own `--exclude` or `--constraint` rule those nodes out),
    /// taken out of the core and left to Slurm unpinned ([`Controller::node_rule_leaves`]).
    left_for_node_rules: BTreeSet<u32>,
    /// Jobs asking for their GPUs on one node (per node, or `-N 1`) that the core started
    /// over several nodes, handed to Slurm as submitted, which runs them on one node; the core holds the
    /// GPUs it chose until Slurm starts them ([`Controller::one_node_leaves`]).
    left_for_one_node: BTreeSet<u32>,
    /// The most nodes each job may run on as it set it (0: not set), read by
    /// [`NodeCounts`] for held jobs the core started over several nodes.
    max_nodes_read: BTreeMap<u32, u32>,
    /// Whether the `sched/builtin` warning ([`ControllerConfig::slurm_builtin`]) was said.
    builtin_said: bool,
}

/// What the journal's replay rebuilds in a controller ([`Controller::replay_entry`]) beside
/// the core, and so what a journal checkpoint keeps of it with the core's snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Replayed {
    /// The last event's time (ticks follow it).
    last_tick_ms: u64,
    /// The next start's sequence number.
    next_seq: u64,
    /// When the core last started each running job, as a sequence number: releases follow
    /// this order (across cycles and restarts: the journal replay numbers them too).
    start_seq: BTreeMap<u32, (u64, Vec<String>)>,
    /// Jobs preempted in the cycle at `.0`, with the number and nodes they had: a start in
    /// the same cycle on the same nodes continues the run (keeps its place in the order).
    preempted_seq: BTreeMap<u32, (u64, u64, Vec<String>)>,
    /// Jobs the core ever started: their node count in Slurm is the one gantry set.
    started_ever: BTreeSet<u32>,
    /// Jobs gantry requeue-held (the core preempted them, or gantry moved them), whose
    /// hold may still be the administrator hold `scontrol requeuehold` leaves: gantry turns
    /// it into a user hold (`scontrol uhold`), so that an administrator hold on any other
    /// job is an operator's, and honoured.
    preempted_by_core: BTreeSet<u32>,
}

/// What a journal checkpoint keeps of a controller ([`super::journal`]): the core's whole
/// state (its snapshot, [`gantry_core::Scheduler::snapshot`]) and what the journal's replay
/// would otherwise rebuild (the start numbers, the jobs ever started and preempted, the
/// last tick). The rest of the controller is rebuilt from Slurm
/// by the first cycle after a restart, as after a replay. (postcard writes a nested struct
/// as its fields in order, so this is the layout the six fields had side by side.)
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ControllerCheckpoint {
    core: Vec<u8>,
    replayed: Replayed,
}

impl ControllerCheckpoint {
    /// The core's snapshot frame.
    pub fn core_snapshot(&self) -> &[u8] {
        &self.core
    }
}

/// Whether a held job's reason is an administrator's hold (`scontrol hold`,
/// `requeuehold`), not the user hold `sbatch --hold` and gantry's own `scontrol uhold` set.
/// For a job gantry itself holds, see [`Controller::admin_held`].
fn admin_hold(job: &SlurmJob) -> bool {
    job.held && job.reason != "JobHeldUser" && !unrunnable_there(job)
}

/// Whether Slurm found the job non-runnable on the nodes it is pinned to and held it
/// (priority 0, reason `BadConstraints`): its own node rules (`--exclude`, `--constraint`)
/// rule them out. Slurm's hold, not an operator's.
fn unrunnable_there(job: &SlurmJob) -> bool {
    job.state == JobStateName::Pending && job.reason == "BadConstraints"
}

impl Controller {
    /// A controller over `layout` with a fresh core. Build it on a thread with a large
    /// stack: the core is constructed inline before it is boxed.
    pub fn new(
        layout: ClusterLayout,
        order: OrderKind,
        placer: PlacerKind,
        seed: u64,
        config: ControllerConfig,
    ) -> Result<Self, SetupError> {
        let topology = layout.spec.topology()?;
        let order_impl = AnyOrder::configured(order, config.tias.as_ref())?;
        let scheduler_config = gantry_core::SchedulerConfig::for_order(&order_impl)
            .with_min_run(gantry_core::DurationMs(config.min_run_ms));
        let scheduler_config = if config.reserve_head {
            scheduler_config.with_head_of_line(gantry_core::HeadOfLine::Reserve)
        } else {
            scheduler_config
        };
        let core = Box::new(HostScheduler::with_config(
            topology,
            order_impl,
            AnyPlacer::new(placer, seed).with_slurm_exact(true),
            scheduler_config,
        ));
        let machines = layout.machines.len();
        Ok(Self {
            core,
            layout,
            config,
            batched: order.batches_instants(),
            replayed: Replayed::default(),
            node_use: vec![None; machines],
            restarts: BTreeMap::new(),
            refused: BTreeMap::new(),
            start_failures: BTreeMap::new(),
            give_up: Vec::new(),
            joined_said: BTreeSet::new(),
            closed_for_reservation: BTreeMap::new(),
            partition_down_said: false,
            left_for_node_rules: BTreeSet::new(),
            left_for_one_node: BTreeSet::new(),
            max_nodes_read: BTreeMap::new(),
            builtin_said: false,
            released_at_ms: BTreeMap::new(),
            said: BTreeSet::new(),
            last_nodes: BTreeMap::new(),
            requeue_seen_ms: BTreeMap::new(),
            held_by_gantry: BTreeSet::new(),
            array_throttles: BTreeMap::new(),
            dependency_parents: BTreeSet::new(),
            limit_waits: BTreeMap::new(),
            operator_held: BTreeSet::new(),
            wait_said: BTreeMap::new(),
            grace: BTreeMap::new(),
            finished_completing: BTreeSet::new(),
        })
    }

    /// The core (read-only).
    pub fn core(&self) -> &HostScheduler {
        &self.core
    }

    /// The layout.
    pub fn layout(&self) -> &ClusterLayout {
        &self.layout
    }

    /// The jobs whose end the next poll must see even once Slurm lists them no more among
    /// active jobs: those the core holds, those in a preemption's grace period, and those
    /// held jobs depend on ([`super::dependency`]; an array's id stands for its tasks).
    pub fn watched_jobs(&self) -> Vec<u32> {
        let mut ids: BTreeSet<u32> = self.core.jobs().map(|j| j.id().0).collect();
        ids.extend(self.grace.keys().copied());
        ids.extend(self.dependency_parents.iter().copied());
        ids.into_iter().collect()
    }

    /// Jobs signalled for a preemption and not requeued yet, with when (Unix ms).
    pub fn grace(&self) -> &BTreeMap<u32, u64> {
        &self.grace
    }

    /// Restores [`grace`](Self::grace) as an earlier process left it (after a restart).
    pub fn restore_grace(&mut self, grace: BTreeMap<u32, u64>) {
        self.grace = grace;
    }

    /// Jobs gantry put on a user hold and has not released since: their hold is gantry's
    /// whatever reason Slurm shows, except an operator's `JobHeldAdmin`.
    pub fn held_by_gantry(&self) -> &BTreeSet<u32> {
        &self.held_by_gantry
    }

    /// Restores [`held_by_gantry`](Self::held_by_gantry) as an earlier process left it
    /// (after a restart): without it, a held job out of the core whose reason reads
    /// `BeginTime` would be taken for an operator's hold.
    pub fn restore_held_by_gantry(&mut self, held: BTreeSet<u32>) {
        self.held_by_gantry = held;
    }

    /// Throttles of the job arrays gantry split (array id → N of `%N`).
    pub fn array_throttles(&self) -> &BTreeMap<u32, u32> {
        &self.array_throttles
    }

    /// Restores [`array_throttles`](Self::array_throttles) as an earlier process left them
    /// (after a restart).
    pub fn restore_array_throttles(&mut self, throttles: BTreeMap<u32, u32>) {
        self.array_throttles = throttles;
    }

    /// Jobs left to Slurm for their node rules: released by gantry, held by Slurm as
    /// `BadConstraints` where gantry pinned them, and handed to Slurm unpinned.
    pub fn left_for_node_rules(&self) -> &BTreeSet<u32> {
        &self.left_for_node_rules
    }

    /// Restores [`left_for_node_rules`](Self::left_for_node_rules) as an earlier process
    /// left it (after a restart): without it, such a job still pending would be held and
    /// scheduled again, and land on a node it rules out again.
    pub fn restore_left_for_node_rules(&mut self, left: BTreeSet<u32>) {
        self.left_for_node_rules = left;
    }

    /// Jobs left to Slurm to keep them on one node: per-node or `-N 1` requests the core
    /// started over several nodes, handed to Slurm as submitted (in the core, holding the GPUs it
    /// chose, until Slurm starts them).
    pub fn left_for_one_node(&self) -> &BTreeSet<u32> {
        &self.left_for_one_node
    }

    /// Restores [`left_for_one_node`](Self::left_for_one_node) as an earlier process left
    /// it (after a restart): without it, such a job still pending would be held and
    /// scheduled again.
    pub fn restore_left_for_one_node(&mut self, left: BTreeSet<u32>) {
        self.left_for_one_node = left;
    }

    /// Re-applies one journal entry to the core and checks the core answers as recorded.
    /// Returns the entry the core produced now when it differs.
    pub fn replay_entry(&mut self, entry: &LogEntry) -> Result<(), Box<LogEntry>> {
        let mut out: heapless::Vec<HostDecision, DECISION_BUFFER> = heapless::Vec::new();
        let result = if deferred(self.batched, entry.event) {
            self.core.handle_deferred(entry.now, entry.event, &mut out)
        } else {
            self.core.handle(entry.now, entry.event, &mut out)
        };
        let actual = LogEntry {
            now: entry.now,
            event: entry.event,
            error: result.err(),
            decisions: out.to_vec(),
        };
        if actual == *entry {
            self.replayed.last_tick_ms = self.replayed.last_tick_ms.max(entry.now.0);
            self.sequence(entry.now.0, &actual.decisions);
            Ok(())
        } else {
            Err(Box::new(actual))
        }
    }

    /// The controller's state for a journal checkpoint, or why it cannot be written (the
    /// learned placers' state is not serialisable).
    pub fn checkpoint(&self) -> Result<ControllerCheckpoint, String> {
        if !self.core.placer().serialisable() {
            return Err(format!(
                "the {} placer's state is not written in checkpoints",
                gantry_core::Placer::<{ crate::registry::HOST_GPUS }>::name(self.core.placer())
            ));
        }
        let mut size = 1 << 16;
        let core = loop {
            let mut buf = vec![0u8; size];
            match self.core.snapshot(&mut buf) {
                Ok(frame) => break frame.to_vec(),
                Err(gantry_core::SnapshotError::BufferTooSmall) if size < 1 << 30 => size *= 2,
                Err(e) => return Err(format!("the core's snapshot failed: {e}")),
            }
        };
        Ok(ControllerCheckpoint {
            core,
            replayed: self.replayed.clone(),
        })
    }

    /// Puts a fresh controller where `checkpoint` was taken. The core refuses a snapshot of
    /// another cluster, order, placer or build (its checks), and then nothing changes.
    pub fn restore_checkpoint(&mut self, checkpoint: &ControllerCheckpoint) -> Result<(), String> {
        let mut frame = checkpoint.core.clone();
        self.core
            .restore_into(&mut frame)
            .map_err(|e| format!("the core's snapshot is refused: {e}"))?;
        self.replayed = checkpoint.replayed.clone();
        Ok(())
    }

    /// Whether nothing is left to do: the core holds no job and no job of the partition is
    /// pending or running in Slurm.
    pub fn idle(&self, snapshot: &Snapshot) -> bool {
        self.core.jobs().is_empty()
            && !snapshot
                .jobs
                .iter()
                .any(|j| self.in_partition(j) && !j.state.is_final())
    }

    fn in_partition(&self, job: &SlurmJob) -> bool {
        job.partition.split(',').any(|p| p == self.layout.partition)
    }

    /// One reconciliation at `now_ms` (Unix ms; earlier than the core's last event counts
    /// as that event's time).
    pub fn observe(&mut self, snapshot: &Snapshot, now_ms: u64) -> Cycle {
        self.observe_reading(snapshot, now_ms, &mut ListedNodeCounts)
    }

    /// [`Self::observe`], reading with `counts` the node count of each held job the core
    /// starts over several nodes ([`NodeCounts`]).
    pub fn observe_reading(
        &mut self,
        snapshot: &Snapshot,
        now_ms: u64,
        counts: &mut dyn NodeCounts,
    ) -> Cycle {
        let now = now_ms.max(self.core.now().0);
        let mut cycle = Cycle::default();
        let jobs: BTreeMap<u32, &SlurmJob> = snapshot
            .jobs
            .iter()
            .filter(|j| self.in_partition(j))
            .map(|j| (j.id, j))
            .collect();
        self.give_up_stuck(now, &jobs, &mut cycle);
        self.one_node_started(now, &jobs, &mut cycle);
        self.nodes(now, &jobs, snapshot, &mut cycle);
        let unusable: BTreeSet<&str> = snapshot
            .nodes
            .iter()
            .filter(|n| !n.keeps_jobs())
            .map(|n| n.name.as_str())
            .collect();
        self.finished_completing.retain(|id| {
            jobs.get(id)
                .is_some_and(|j| j.state == JobStateName::Completing)
        });
        self.ends(now, &jobs, &unusable, &mut cycle);
        self.operator_holds(now, &jobs, &mut cycle);
        // A dependency or a limit may name a job of another partition.
        let listed: BTreeMap<u32, &SlurmJob> = snapshot.jobs.iter().map(|j| (j.id, j)).collect();
        self.limit_holds(now, &jobs, &listed, &mut cycle);
        self.node_rule_leaves(now, &jobs, &mut cycle);
        let machine_names = self.layout.machines.iter().map(|m| m.name.as_str());
        let reservations = &ReservedMachines::new(&snapshot.reservations, machine_names);
        self.reservation_holds(now, &jobs, reservations, &mut cycle);
        self.submissions(now, &jobs, &listed, reservations, &mut cycle);
        self.deadline_rule(now, &jobs, &mut cycle);
        self.tick(now, &mut cycle);
        self.close_for_reservations(now, &jobs, reservations, &mut cycle);
        self.close_nodes(now, &jobs, &mut cycle);
        if self.batched && cycle.entries.iter().any(|e| e.event != Event::Tick) {
            self.handle(now, Event::Tick, &mut cycle).ok();
        }
        // The core's new places for the jobs the sweep took back may run into a
        // reservation too: each round closes at least one more node.
        for _ in 0..self.layout.machines.len() {
            if !self.close_for_reservations(now, &jobs, reservations, &mut cycle) {
                break;
            }
            self.close_nodes(now, &jobs, &mut cycle);
            if self.batched {
                self.handle(now, Event::Tick, &mut cycle).ok();
            }
        }
        self.one_node_leaves(&jobs, &mut cycle, counts);
        self.desired(now, &jobs, &snapshot.nodes, &mut cycle);
        self.forget_departed(&jobs);
        cycle
    }

    /// Drops what is kept per job for the jobs that left for good: out of the core, not in
    /// a grace period, and no longer active in Slurm (ended, purged, or moved to another
    /// partition). A job that ends outside the core (held by an operator and then
    /// cancelled, run outside gantry, rejected) would otherwise leave its entries behind
    /// for as long as gantry runs. O(listed + live jobs) per cycle.
    fn forget_departed(&mut self, jobs: &BTreeMap<u32, &SlurmJob>) {
        let mut present: BTreeSet<u32> = jobs
            .values()
            .filter(|j| !j.state.is_final())
            .map(|j| j.id)
            .collect();
        present.extend(self.core.jobs().map(|j| j.id().0));
        present.extend(self.grace.keys().copied());
        let here = |id: &u32| present.contains(id);
        self.restarts.retain(|id, _| here(id));
        self.refused.retain(|id, _| here(id));
        self.start_failures.retain(|id, _| here(id));
        self.released_at_ms.retain(|id, _| here(id));
        self.said.retain(|(id, _)| here(id));
        self.replayed.start_seq.retain(|id, _| here(id));
        self.replayed.preempted_seq.retain(|id, _| here(id));
        self.last_nodes.retain(|id, _| here(id));
        self.requeue_seen_ms.retain(|id, _| here(id));
        self.replayed.preempted_by_core.retain(here);
        self.held_by_gantry.retain(here);
        self.operator_held.retain(here);
        self.limit_waits.retain(|id, _| here(id));
        self.wait_said.retain(|id, _| here(id));
        self.left_for_node_rules.retain(here);
        self.left_for_one_node.retain(here);
        self.max_nodes_read.retain(|id, _| here(id));
        self.replayed.started_ever.retain(here);
        let arrays: BTreeSet<u32> = jobs
            .values()
            .filter(|j| !j.state.is_final())
            .filter_map(|j| j.array_job)
            .collect();
        self.array_throttles.retain(|a, _| arrays.contains(a));
    }

    /// Entries kept per job, over every per-job map (tests: none once every job left).
    #[cfg(test)]
    pub(crate) fn per_job_entries(&self) -> usize {
        self.restarts.len()
            + self.refused.len()
            + self.start_failures.len()
            + self.released_at_ms.len()
            + self.said.len()
            + self.replayed.start_seq.len()
            + self.replayed.preempted_seq.len()
            + self.last_nodes.len()
            + self.requeue_seen_ms.len()
            + self.replayed.preempted_by_core.len()
            + self.held_by_gantry.len()
            + self.operator_held.len()
            + self.wait_said.len()
            + self.left_for_node_rules.len()
            + self.left_for_one_node.len()
            + self.max_nodes_read.len()
            + self.replayed.started_ever.len()
            + self.grace.len()
            + self.finished_completing.len()
            + self.give_up.len()
            + self.array_throttles.len()
    }

    /// Tells the controller how an action went (the daemon calls this after running it).
    pub fn action_done(&mut self, action: &Action, now_ms: u64, result: Result<(), String>) {
        let job = action.job();
        match (action, result) {
            (Action::Start(plan), Ok(())) => {
                self.start_failures.remove(&job);
                if plan.release {
                    self.released_at_ms.insert(job, now_ms);
                    self.held_by_gantry.remove(&job);
                }
            }
            (Action::Start(_), Err(err)) => {
                let entry = self.start_failures.entry(job).or_insert((0, String::new()));
                entry.0 += 1;
                entry.1 = err;
                if entry.0 >= self.config.max_start_attempts {
                    let reason = format!(
                        "gantry could not start it after {} attempts: {}",
                        entry.0, entry.1
                    );
                    self.give_up.push((job, reason));
                    self.start_failures.remove(&job);
                }
            }
            (Action::Reject { .. }, Ok(())) => {
                self.refused.remove(&job);
            }
            (Action::RequeueHold { .. }, Ok(())) => {
                // Held by gantry: a hold seen from now on is not an operator's.
                self.replayed.preempted_by_core.insert(job);
                self.released_at_ms.remove(&job);
                self.grace.remove(&job);
            }
            (Action::Hold { .. }, Ok(())) => {
                // Held by gantry: a hold seen from now on is not an operator's.
                self.released_at_ms.remove(&job);
                self.held_by_gantry.insert(job);
            }
            _ => {}
        }
    }

    /// One event through the core, plus follow-up ticks while the decision buffer filled.
    fn handle(&mut self, now: u64, event: Event, cycle: &mut Cycle) -> Result<(), SchedError> {
        let mut event = event;
        loop {
            let mut out: heapless::Vec<HostDecision, DECISION_BUFFER> = heapless::Vec::new();
            let result = if deferred(self.batched, event) {
                self.core.handle_deferred(TimeMs(now), event, &mut out)
            } else {
                self.core.handle(TimeMs(now), event, &mut out)
            };
            cycle.preemptions += out
                .iter()
                .filter(|d| matches!(d, Decision::Preempt { .. }))
                .count() as u32;
            self.sequence(now, &out);
            cycle.entries.push(LogEntry {
                now: TimeMs(now),
                event,
                error: result.err(),
                decisions: out.to_vec(),
            });
            if !result?.more_pending {
                return Ok(());
            }
            event = Event::Tick;
        }
    }

    /// Numbers starts in decision order; a job preempted or rejected loses its number, and
    /// gets it back when the core starts it again in the same cycle on the same nodes
    /// (its Slurm run goes on: gantry leaves it where it is).
    fn sequence(&mut self, now: u64, decisions: &[HostDecision]) {
        for decision in decisions {
            match decision {
                Decision::Start { job, gpus } => {
                    self.replayed.started_ever.insert(job.0);
                    let nodes: Vec<String> = self
                        .layout
                        .shape(gpus.as_slice())
                        .into_iter()
                        .map(|(n, _)| n)
                        .collect();
                    let seq = match self.replayed.preempted_seq.remove(&job.0) {
                        Some((at, seq, before)) if at == now && before == nodes => seq,
                        _ => {
                            self.replayed.next_seq += 1;
                            self.replayed.next_seq - 1
                        }
                    };
                    self.replayed.start_seq.insert(job.0, (seq, nodes));
                }
                Decision::Preempt { job, .. } => {
                    self.replayed.preempted_by_core.insert(job.0);
                    self.released_at_ms.remove(&job.0);
                    if let Some((seq, nodes)) = self.replayed.start_seq.remove(&job.0) {
                        self.replayed.preempted_seq.insert(job.0, (now, seq, nodes));
                    }
                }
                Decision::Reject { job, .. } => {
                    self.replayed.start_seq.remove(&job.0);
                }
            }
        }
    }

    /// A job's place in the release order.
    fn seq(&self, job: u32) -> Option<u64> {
        self.replayed.start_seq.get(&job).map(|(seq, _)| *seq)
    }

    /// Logs `text` the first time `said` holds for `job`; true then.
    fn note(&mut self, cycle: &mut Cycle, job: u32, said: Said, text: String) -> bool {
        let first = self.said.insert((job, said));
        if first {
            if matches!(
                said,
                Said::UnknownState | Said::Adopted | Said::ReleasedOutside
            ) {
                cycle.unexpected += 1;
            }
            if matches!(
                said,
                Said::LeftToSlurm | Said::DependencyLeft | Said::LimitLeft
            ) {
                cycle.left_to_slurm.push(job);
            }
            cycle.notes.push(text);
        }
        first
    }

    /// A component of a heterogeneous job: Slurm starts all its components together, which
    /// the core, placing each alone, cannot promise. gantry releases it unpinned when held
    /// and leaves it to Slurm's own scheduler (logged once per heterogeneous job); the GPUs
    /// of its running components are out of the core's view ([`super::foreign`]).
    fn heterogeneous_job_part(&mut self, job: &SlurmJob, cycle: &mut Cycle) {
        let group = job.het_job.unwrap_or(job.id);
        let text = format!(
            "job {}: part of heterogeneous job {group}; gantry leaves heterogeneous jobs to Slurm's own scheduler (it starts their components together) and keeps the GPUs of their running components out of its view",
            job.id
        );
        self.leave_to_slurm(job, group, text, cycle);
    }

    /// Leaves `job` (part of `group`, an array or heterogeneous job, or itself) to Slurm's own
    /// scheduler: `text` logged once per group, the job released unpinned if held.
    fn leave_to_slurm(&mut self, job: &SlurmJob, group: u32, text: String, cycle: &mut Cycle) {
        self.note(cycle, group, Said::LeftToSlurm, text);
        self.warn_builtin(cycle);
        if job.state == JobStateName::Pending && job.held {
            cycle.actions.push(Action::HandOver {
                job: job.id,
                unpin: false,
            });
        }
    }

    /// Under `sched/builtin` ([`ControllerConfig::slurm_builtin`]), once per run: what a
    /// job left to Slurm can do to gantry's starts.
    fn warn_builtin(&mut self, cycle: &mut Cycle) {
        if self.config.slurm_builtin && !self.builtin_said {
            self.builtin_said = true;
            cycle.notes.push(
                "Slurm runs sched/builtin: while a job gantry leaves to Slurm waits for GPUs, Slurm starts no later job of the partition, gantry's releases included; sched/backfill (SchedulerType) avoids it (docs/slurm.md, Known limits)".to_string(),
            );
        }
    }

    /// A job array's record or task the core does not hold ([`super::array`]). True for a
    /// pending record of one task that is gantry's to schedule as a single job: held as
    /// submitted, or released by an operator after their hold (held again, as a single job
    /// is). A held record of several tasks is split (`Split`, all but the lowest task) and
    /// scheduled from the next poll; a throttle (`%N`) is kept ([`Self::array_throttles`]).
    /// Left to Slurm (released unpinned when held, logged once per array, running tasks'
    /// GPUs out of the core's view): an array whose task expression gantry cannot read or
    /// that has more than [`MAX_TASKS_SPLIT`](super::array::MAX_TASKS_SPLIT) pending tasks,
    /// tasks released or started outside gantry.
    fn array_task_is_gantrys(&mut self, job: &SlurmJob, cycle: &mut Cycle) -> bool {
        let array = job.array_job.unwrap_or(job.id);
        let why = match ArrayTasks::parse(&job.array_tasks) {
            _ if job.state != JobStateName::Pending => "started outside gantry".to_string(),
            Err(problem) => format!("its pending tasks: {problem}"),
            Ok(_) if !job.held && self.operator_held.contains(&job.id) => return true,
            Ok(_) if !job.held => "released outside gantry".to_string(),
            Ok(ArrayTasks { tasks, throttle }) => {
                if let Some(n) = throttle {
                    self.array_throttles.insert(array, n);
                }
                if tasks.len() == 1 {
                    return true;
                }
                let at_once = throttle.map_or(String::new(), |n| {
                    format!(", at most {n} at once (its throttle)")
                });
                let text = format!(
                    "job array {array}: {} pending tasks ({}); gantry splits them into single jobs (task {} keeps job id {array}) and schedules each{at_once}",
                    tasks.len(),
                    job.array_tasks,
                    tasks[0]
                );
                self.note(cycle, array, Said::ArraySplit, text);
                cycle.actions.push(Action::Split {
                    array,
                    tasks: tasks[1..].to_vec(),
                    requeue: job.requeue,
                });
                return false;
            }
        };
        let text = format!(
            "job {}: part of job array {array}; gantry leaves this array to Slurm's own scheduler ({why}) and keeps the GPUs of its running tasks out of its view",
            job.id
        );
        self.leave_to_slurm(job, array, text, cycle);
        false
    }

    /// Whether a held job's dependency ([`super::dependency`]) lets the core schedule it
    /// now. Not yet: logged once, the job stays held, and what it waits for is listed by id
    /// at the next poll should it end. Never (an `afterok` parent that failed), or a kind
    /// gantry does not judge: released unpinned to Slurm (logged once), which keeps the job
    /// pending (`DependencyNeverSatisfied`) or cancels it (`kill_invalid_depend`), or runs
    /// it once its dependency is met, outside gantry's order.
    fn dependency_met(
        &mut self,
        now: u64,
        job: &SlurmJob,
        listed: &BTreeMap<u32, &SlurmJob>,
        cycle: &mut Cycle,
    ) -> bool {
        let verdict = self.judge_dependency(now, job, listed);
        let runs_outside = matches!(verdict, Verdict::NotJudged(_));
        let (what, why) = match verdict {
            Verdict::Met => return true,
            Verdict::Waiting(why) => {
                let text = format!(
                    "job {}: waits for its dependency ({}): {why}; gantry schedules it once it is met",
                    job.id, job.dependency
                );
                self.note(cycle, job.id, Said::DependencyWait, text);
                return false;
            }
            Verdict::Never(why) => ("can never be met", why),
            Verdict::NotJudged(why) => ("is not one gantry judges", why),
        };
        let text = format!(
            "job {}: its dependency ({}) {what} ({why}); released to Slurm, which keeps, cancels or runs it by its own rules",
            job.id, job.dependency
        );
        self.note(cycle, job.id, Said::DependencyLeft, text);
        // Once its dependency is met it waits for GPUs in Slurm like any job left there.
        if runs_outside {
            self.warn_builtin(cycle);
        }
        cycle.actions.push(Action::HandOver {
            job: job.id,
            unpin: false,
        });
        false
    }

    /// Judges `job`'s dependency against the poll; what it names is watched by id while
    /// the job is pending, so an ended parent stays in view.
    fn judge_dependency(
        &mut self,
        now: u64,
        job: &SlurmJob,
        listed: &BTreeMap<u32, &SlurmJob>,
    ) -> Verdict {
        self.dependency_parents
            .extend(dependency::parents(&job.dependency));
        dependency::judge(job, listed, now / 1000)
    }

    /// Whether a released pending job out of the core is Slurm's for its dependency: one
    /// gantry released for that (never met, or not judged; [`Self::dependency_met`]), or one
    /// Slurm found never met. Not held again.
    fn dependency_is_slurms(
        &mut self,
        now: u64,
        job: &SlurmJob,
        listed: &BTreeMap<u32, &SlurmJob>,
    ) -> bool {
        job.reason == "DependencyNeverSatisfied"
            || matches!(
                self.judge_dependency(now, job, listed),
                Verdict::Never(_) | Verdict::NotJudged(_)
            )
    }

    /// Logs, once per job, a job the core holds queued that Slurm shows `what` (released or
    /// started) although gantry did not release it since its last hold or preemption: an
    /// operator's `scontrol release`, or a second scheduler on the partition (a second
    /// `gantry slurm` with another journal, which each side sees this way). Counted in
    /// the `--json` summary; the job is held (or requeued) again, as the module's table
    /// says.
    fn released_outside(&mut self, cycle: &mut Cycle, id: u32, what: &str) {
        // A job gantry released and the core then preempted shows released or running
        // until gantry's own hold or requeue lands.
        if self.replayed.preempted_by_core.contains(&id) {
            return;
        }
        let text = format!(
            "job {id}: {what} outside gantry while gantry held it queued (an operator's `scontrol release`, or a second scheduler on this partition: one gantry per partition); gantry holds it again"
        );
        if self.note(cycle, id, Said::ReleasedOutside, text) {
            cycle.released_outside += 1;
        }
    }

    /// Cancels jobs whose start failed too often (decided in [`action_done`](Self::action_done)).
    fn give_up_stuck(&mut self, now: u64, jobs: &BTreeMap<u32, &SlurmJob>, cycle: &mut Cycle) {
        for (job, reason) in std::mem::take(&mut self.give_up) {
            if self.core.job(JobId(job)).is_some() {
                let _ = self.handle(now, Event::Cancel(JobId(job)), cycle);
            }
            if jobs.get(&job).is_some_and(|j| !j.state.is_final()) {
                cycle
                    .notes
                    .push(format!("job {job}: {reason}; cancelling it"));
                self.refused.insert(job, reason);
            }
        }
    }

    /// Node changes. GPUs coming back are handed to the core without a scheduling pass
    /// each ([`deferred`]) and one `Tick` follows them all: the pass sees every returned
    /// node whole. (A pass after each GPU would see part of a node back, place a waiting
    /// gang over it and other nodes, and let the order's consolidation move running jobs
    /// onto the returned GPUs: capacity coming back alone must not move anything.)
    fn nodes(
        &mut self,
        now: u64,
        jobs: &BTreeMap<u32, &SlurmJob>,
        snapshot: &Snapshot,
        cycle: &mut Cycle,
    ) {
        let nodes = &snapshot.nodes;
        let mut gpus_back = false;
        // Every partition's jobs: a node may be in several, and Slurm starts another
        // partition's jobs on it by itself.
        let outside = outside_gpus_per_machine(
            &self.layout,
            snapshot.jobs.iter().filter(|j| self.runs_outside(j)),
            nodes,
        );
        let partition = self.layout.partition.clone();
        let partition_down = nodes
            .iter()
            .any(|n| n.closed_partitions.contains(&partition));
        // Nodes closed or opened by the partition alone: one line for them all.
        let (mut closing, mut opening) = (Vec::new(), Vec::new());
        for (index, &outside_gpus) in outside.iter().enumerate() {
            let machine = self.layout.machines[index].clone();
            let node = nodes.iter().find(|n| n.name == machine.name);
            // A node back from DOWN whose slurmd has not answered yet (`IDLE+NOT_RESPONDING`)
            // runs nothing Slurm releases onto it: its GPUs come back once it responds. (A
            // node that was usable keeps its GPUs while NOT_RESPONDING: Slurm keeps its jobs
            // until `SlurmdTimeout` sets it DOWN.)
            let silent = node.is_some_and(|n| n.has("NOT_RESPONDING"));
            let partition_closed = node.is_some_and(|n| n.closed_partitions.contains(&partition));
            let reserved_ahead = self.closed_for_reservation.get(&index).is_some_and(|name| {
                snapshot
                    .reservations
                    .iter()
                    .any(|r| &r.name == name && !r.over(now))
            });
            if !reserved_ahead {
                self.closed_for_reservation.remove(&index);
            }
            let node_use = match node {
                _ if silent && self.node_use[index] == Some(NodeUse::Down) => NodeUse::Down,
                Some(n) if n.usable() && !partition_closed && !reserved_ahead => NodeUse::Open,
                Some(n) if n.keeps_jobs() => NodeUse::Closed,
                _ => NodeUse::Down,
            };
            if self.node_use[index] != Some(node_use) {
                let state = node.map_or("missing from sinfo".to_string(), |n| {
                    let mut s = n.states.join("+");
                    if !n.reason.is_empty() {
                        s.push_str(&format!(" ({})", n.reason));
                    }
                    if partition_closed {
                        s.push_str(&format!(
                            " in partition {partition}, which is set DOWN or INACTIVE"
                        ));
                    }
                    if let Some(name) = self.closed_for_reservation.get(&index) {
                        s.push_str(&format!(" ahead of advance reservation {name}"));
                    }
                    s
                });
                let by_partition = node.is_some_and(SlurmNode::usable) && !reserved_ahead;
                if by_partition && partition_closed && node_use == NodeUse::Closed {
                    closing.push(machine.name.clone());
                } else if by_partition && self.partition_down_said && node_use == NodeUse::Open {
                    opening.push(machine.name.clone());
                } else if self.node_use[index].is_some() || node_use != NodeUse::Open {
                    let what = match node_use {
                        NodeUse::Open => format!("its {} GPUs are back for gantry", machine.gpus),
                        NodeUse::Closed => "closed to new jobs: its running jobs go on, and gantry starts nothing there".to_string(),
                        NodeUse::Down => format!("its {} GPUs are down for gantry", machine.gpus),
                    };
                    cycle
                        .notes
                        .push(format!("node {} is {state}: {what}", machine.name));
                }
                self.node_use[index] = Some(node_use);
            }
            let gpus = machine.first_gpu..machine.first_gpu + machine.gpus;
            // A closed node: every GPU out but those of the core's jobs, which the sweep
            // at the end of the cycle takes unless Slurm runs the job ([`Self::close_nodes`]).
            let taken_out = match node_use {
                NodeUse::Open => self.taken_out(gpus.clone(), outside_gpus, true, jobs),
                NodeUse::Closed => self.taken_out(gpus.clone(), machine.gpus, false, jobs),
                NodeUse::Down => Vec::new(),
            };
            gpus_back |= self.set_gpus(now, gpus, node_use != NodeUse::Down, &taken_out, cycle);
        }
        if !closing.is_empty() {
            cycle.notes.push(format!(
                "partition {partition} is set DOWN or INACTIVE: nodes {} are closed to new jobs: their running jobs go on, and gantry starts nothing there",
                closing.join(",")
            ));
            self.partition_down_said = true;
        }
        if !opening.is_empty() {
            cycle.notes.push(format!(
                "partition {partition} is up again: the GPUs of nodes {} are back for gantry",
                opening.join(",")
            ));
        }
        self.partition_down_said &= partition_down;
        self.nodes_joined(nodes, cycle);
        // Batched orders get their one pass from `observe`'s Tick.
        if gpus_back && !self.batched {
            let _ = self.handle(now, Event::Tick, cycle);
        }
    }

    /// Brings the core's view of one machine's GPUs (`gpus`) to: up where `up` and not in
    /// `taken_out`, down elsewhere. Returns whether a GPU came back.
    fn set_gpus(
        &mut self,
        now: u64,
        gpus: core::ops::Range<u16>,
        up: bool,
        taken_out: &[u16],
        cycle: &mut Cycle,
    ) -> bool {
        let mut back = false;
        for g in gpus {
            let gpu = GpuId(g);
            let up = up && !taken_out.contains(&g);
            if up != self.core.is_healthy(gpu) {
                let event = if up {
                    Event::GpuUp(gpu)
                } else {
                    Event::GpuDown(gpu)
                };
                match self.handle(now, event, cycle) {
                    Ok(()) => back |= up,
                    Err(err) => cycle.notes.push(format!("core refused {event:?}: {err}")),
                }
            }
        }
        back
    }

    /// Closed nodes (drained, failing, reserved, in maintenance: Slurm starts no new job
    /// there, its running ones go on), at the end of the cycle: every GPU leaves the core's
    /// view but those of jobs Slurm runs there. So the GPUs a job freed this cycle, and
    /// those of a start Slurm has not run (a pass of this cycle, or a release pending there
    /// when the node closed), go; the core places those jobs elsewhere before anything is
    /// released. The jobs it takes back never ran there: not counted as preemptions.
    fn close_nodes(&mut self, now: u64, jobs: &BTreeMap<u32, &SlurmJob>, cycle: &mut Cycle) {
        let preemptions = cycle.preemptions;
        for index in 0..self.layout.machines.len() {
            if self.node_use[index] != Some(NodeUse::Closed) {
                continue;
            }
            let machine = &self.layout.machines[index];
            let gpus = machine.first_gpu..machine.first_gpu + machine.gpus;
            let taken_out = self.taken_out(gpus.clone(), machine.gpus, true, jobs);
            self.set_gpus(now, gpus, true, &taken_out, cycle);
        }
        cycle.preemptions = preemptions;
    }

    /// Whether `job` holds GPUs of the partition outside gantry: Slurm runs it and the core
    /// does not hold it (nor is it one of gantry's own, finished while Slurm completes it).
    fn runs_outside(&self, job: &SlurmJob) -> bool {
        job.state.runs()
            && self.core.job(JobId(job.id)).is_none()
            && !self.finished_completing.contains(&job.id)
            && !self.grace.contains_key(&job.id)
    }

    /// The GPUs of one machine to keep out of the core's view for the `want` GPUs jobs
    /// outside gantry hold there, or that a closed node holds back ([`gpus_to_take_out`]).
    fn taken_out(
        &self,
        gpus: core::ops::Range<u16>,
        want: u16,
        owned_too: bool,
        jobs: &BTreeMap<u32, &SlurmJob>,
    ) -> Vec<u16> {
        let owner_runs = |g: u16| {
            self.core
                .gpu_owner(GpuId(g))
                .map(|id| jobs.get(&id.0).is_some_and(|j| j.state.holds_nodes()))
        };
        gpus_to_take_out(
            gpus,
            want,
            owned_too,
            |g| self.core.is_healthy(GpuId(g)),
            owner_runs,
        )
    }

    /// Says once per node that a node with GPUs joined the partition after gantry started:
    /// the core's topology is fixed at start (and written in the journal's header), so
    /// gantry does not use the node, and jobs it starts are pinned elsewhere.
    fn nodes_joined(&mut self, nodes: &[SlurmNode], cycle: &mut Cycle) {
        let partition = &self.layout.partition;
        for node in nodes {
            let joined = self.layout.machine(&node.name).is_none()
                && node.partitions.iter().any(|p| p == partition)
                && node_gpus(&node.gres).is_ok_and(|g| g.count > 0);
            if joined && self.joined_said.insert(node.name.clone()) {
                cycle.notes.push(format!(
                    "node {} joined partition {partition} after gantry started: gantry does not use it (its topology is fixed at start; see docs/slurm.md, Changing the partition)",
                    node.name
                ));
            }
        }
    }

    /// Whether `job`, running for the core, has completed although Slurm still shows it
    /// COMPLETING ([`ControllerConfig::finish_at_completing`]): its script exited 0, Slurm
    /// did not requeue it (the restart count an earlier poll saw it run with), gantry is not
    /// preempting it, and none of its nodes failed (a failed node's job may show a clean
    /// exit status).
    fn completed_while_completing(&self, job: &SlurmJob, unusable: &BTreeSet<&str>) -> bool {
        self.config.finish_at_completing
            && job.state == JobStateName::Completing
            && job.exit_status == Some(0)
            && self
                .restarts
                .get(&job.id)
                .is_some_and(|&seen| seen == job.restart_count)
            && !self.grace.contains_key(&job.id)
            // The core preempted it and gantry requeued it: this COMPLETING is the requeue
            // (until Slurm shows it pending), even once its restart count was seen to rise.
            && !self.replayed.preempted_by_core.contains(&job.id)
            && !job.nodes.iter().any(|n| unusable.contains(n.as_str()))
            && self
                .core
                .job(JobId(job.id))
                .is_some_and(|j| j.state() == JobState::Running)
    }

    /// Ends: a live job that Slurm reports ended, or no longer lists, leaves the core (or,
    /// with [`ControllerConfig::finish_at_completing`], one that completed and is still
    /// COMPLETING).
    fn ends(
        &mut self,
        now: u64,
        jobs: &BTreeMap<u32, &SlurmJob>,
        unusable: &BTreeSet<&str>,
        cycle: &mut Cycle,
    ) {
        let live: Vec<(u32, u16, Option<TimeMs>)> = self
            .core
            .jobs()
            .map(|j| (j.id().0, j.gpus(), j.deadline()))
            .collect();
        for (id, gpus, deadline) in live {
            let slurm = jobs.get(&id);
            if self.grace.contains_key(&id) && slurm.is_some_and(|j| j.state.is_final()) {
                // Ended by itself in its grace period (it saved its checkpoint): not the
                // job's end; gantry requeues it (`desired`), as Slurm's preemption would.
                continue;
            }
            let completed_early =
                slurm.is_some_and(|j| self.completed_while_completing(j, unusable));
            if let Some(job) = slurm.filter(|j| !j.state.is_final() && !completed_early) {
                if job.state.holds_nodes() && !job.nodes.is_empty() {
                    self.last_nodes
                        .insert(id, job.nodes.iter().cloned().collect());
                }
                let seen = self.restarts.entry(id).or_insert(job.restart_count);
                if job.restart_count > *seen {
                    self.requeue_seen_ms.insert(id, now);
                    cycle.restarts_seen += job.restart_count - *seen;
                    cycle.notes.push(format!(
                        "job {id}: Slurm requeued it (restart count {} → {})",
                        seen, job.restart_count
                    ));
                    *seen = job.restart_count;
                }
                continue;
            }
            let outcome = match slurm {
                Some(job) => JobOutcome {
                    id,
                    state: if completed_early {
                        "COMPLETED".to_string()
                    } else {
                        job.state.name().to_string()
                    },
                    gpus,
                    submit_s: job.submit_s,
                    start_s: job.start_s,
                    end_s: job.end_s,
                    deadline_s: job.deadline_s,
                },
                None => {
                    cycle.notes.push(format!(
                        "job {id}: no longer listed by squeue; treating it as ended"
                    ));
                    JobOutcome {
                        id,
                        state: "VANISHED".into(),
                        gpus,
                        submit_s: 0,
                        start_s: 0,
                        end_s: now / 1000,
                        deadline_s: deadline.map(|d| d.0 / 1000),
                    }
                }
            };
            // The state now, not when the list was made: a pass run for an earlier end of
            // this cycle may have preempted this job (it ended in Slurm all the same).
            let running = self
                .core
                .job(JobId(id))
                .is_some_and(|j| j.state() == JobState::Running);
            // Only a run that completed finishes; any other end (cancelled by its user or
            // an operator, DEADLINE, FAILED, TIMEOUT, NODE_FAIL) is a cancellation, so a
            // deadline job Slurm cancelled counts as missed (`gantry replay --metrics`).
            // (A job squeue no longer lists ended long enough ago to be purged: taken as
            // completed, as before it was listed.)
            let completed =
                completed_early || slurm.is_none_or(|j| j.state == JobStateName::Completed);
            if let Some(job) = slurm.filter(|_| !completed)
                && !job.comment.starts_with(super::action::REJECT_PREFIX)
            {
                let why = match job.state.name() {
                    "CANCELLED" => "cancelled in Slurm (scancel by its user or an operator)",
                    "DEADLINE" => "cancelled by Slurm: its time limit passed its --deadline",
                    "TIMEOUT" => "ended by Slurm: it ran out of its time limit",
                    "NODE_FAIL" => "ended by Slurm: its node failed",
                    _ => "ended in Slurm without completing",
                };
                cycle.notes.push(format!(
                    "job {id}: {why} ({}); gantry drops it",
                    job.state.name()
                ));
            }
            let event = if running && completed {
                Event::Finish(JobId(id))
            } else {
                Event::Cancel(JobId(id))
            };
            if let Err(err) = self.handle(now, event, cycle) {
                cycle
                    .notes
                    .push(format!("job {id}: core refused {event:?}: {err}"));
            }
            self.restarts.remove(&id);
            self.replayed.start_seq.remove(&id);
            self.replayed.preempted_seq.remove(&id);
            self.last_nodes.remove(&id);
            self.requeue_seen_ms.remove(&id);
            self.released_at_ms.remove(&id);
            self.start_failures.remove(&id);
            self.replayed.preempted_by_core.remove(&id);
            self.held_by_gantry.remove(&id);
            self.wait_said.remove(&id);
            self.grace.remove(&id);
            self.replayed.started_ever.remove(&id);
            self.said.retain(|(j, _)| *j != id);
            if completed_early {
                self.finished_completing.insert(id);
            }
            cycle.outcomes.push(outcome);
        }
    }

    /// Whether `job` is held by an administrator: [`admin_hold`], or, for a job gantry
    /// put on a user hold itself ([`Controller::held_by_gantry`]), an explicit
    /// `JobHeldAdmin` (its reason otherwise turns to `BeginTime` and back as Slurm
    /// re-evaluates it).
    fn admin_held(&self, job: &SlurmJob) -> bool {
        if self.held_by_gantry.contains(&job.id) {
            job.held && job.reason == "JobHeldAdmin"
        } else {
            admin_hold(job)
        }
    }

    /// Administrator holds on jobs the core holds: a job held by an operator (`scontrol
    /// hold`, or `requeuehold` of a running job) leaves the core (`Cancel`, its GPUs go to
    /// others) and stays held; once the operator releases it, it is submitted again. Holds
    /// that gantry's own `requeuehold` left (the core preempted the job) are not an
    /// operator's: gantry turns them into user holds in [`desired`](Self::desired).
    fn operator_holds(&mut self, now: u64, jobs: &BTreeMap<u32, &SlurmJob>, cycle: &mut Cycle) {
        let live: Vec<(u32, JobState)> = self.core.jobs().map(|j| (j.id().0, j.state())).collect();
        for (id, state) in live {
            let Some(job) = jobs.get(&id) else { continue };
            // Slurm 22.05 may show a `requeuehold` with the job's old user-hold reason, so a
            // hold of a job gantry released and did not hold again is an operator's too.
            let held_after_release =
                state == JobState::Running && job.held && self.released_at_ms.contains_key(&id);
            // gantry's own `requeuehold`, not yet made a user hold: gantry's, whatever it shows.
            let requeued_by_gantry =
                self.replayed.preempted_by_core.contains(&id) && !self.held_by_gantry.contains(&id);
            if job.state != JobStateName::Pending
                || !(self.admin_held(job) || held_after_release)
                || requeued_by_gantry
                || unrunnable_there(job)
            {
                continue;
            }
            if !self.withdraw(now, id, cycle) {
                continue;
            }
            self.operator_held.insert(id);
            self.said.insert((id, Said::OperatorHold));
            cycle.notes.push(format!(
                "job {id}: held by an operator ({}); gantry leaves it held, gives its GPUs to others and schedules it again once it is released",
                job.reason
            ));
        }
    }

    /// Jobs gantry released that Slurm will not run where gantry pinned them: their own
    /// node rules (`--exclude`, `--constraint`) rule out those nodes, and Slurm holds them
    /// (`BadConstraints`, priority 0). The core places jobs on any node of the partition,
    /// so each leaves the core and is handed to Slurm unpinned (`NodeList=` cleared, then
    /// released), which places it on a node its rules allow; while it runs its GPUs are out
    /// of the core's view, as any job running outside gantry. Logged once per job.
    fn node_rule_leaves(&mut self, now: u64, jobs: &BTreeMap<u32, &SlurmJob>, cycle: &mut Cycle) {
        for id in self.running_in_core() {
            let Some(job) = jobs.get(&id) else { continue };
            if !unrunnable_there(job) {
                continue;
            }
            let shape = self.placed_shape(id);
            let pinned: BTreeSet<&str> = job.required_nodes.iter().map(String::as_str).collect();
            let chosen: BTreeSet<&str> = shape.iter().map(|(n, _)| n.as_str()).collect();
            if pinned != chosen || !self.withdraw(now, id, cycle) {
                continue;
            }
            let text = format!(
                "job {id}: Slurm cannot run it on {} (BadConstraints: its own node rules, such as --exclude or --constraint, rule out the nodes gantry chose); gantry places jobs on any node of the partition, so it leaves this job to Slurm's own scheduler, unpinned, and keeps its GPUs out of its view while it runs",
                shape_text(&shape)
            );
            self.note(cycle, id, Said::LeftToSlurm, text);
            self.warn_builtin(cycle);
            // Handed over by `submissions`, as long as Slurm shows it held.
            self.left_for_node_rules.insert(id);
        }
    }

    /// Jobs that must run on one node ([`Self::one_node_asked`]: `--gres=gpu:k`,
    /// `--gpus-per-node=k`, or `-N 1`) which the core started over several nodes, not
    /// running yet (held, or released onto one node and then moved by the core). Slurm runs
    /// such a job on one node and its script expects its GPUs there, so gantry does not
    /// release it split: it hands the job to Slurm as submitted (gantry's pin of an earlier
    /// release or run cleared), which starts it on a node with room for it. Until Slurm
    /// starts it the core keeps it running where it placed it, so those GPUs are not given
    /// to the next queued job (which, a one-node job too, would be left to Slurm as well),
    /// as Slurm keeps GPUs for it; once it runs it leaves the core and its GPUs are out of
    /// the core's view, as any job running outside gantry ([`Self::one_node_started`]).
    fn one_node_leaves(
        &mut self,
        jobs: &BTreeMap<u32, &SlurmJob>,
        cycle: &mut Cycle,
        counts: &mut dyn NodeCounts,
    ) {
        let mut split = Vec::new();
        for id in self.running_in_core() {
            // Held, or released and not started yet: a job the core moved (a node went
            // down under it, a preemption) shows released where gantry put it.
            let Some(job) = jobs.get(&id) else { continue };
            if job.state != JobStateName::Pending {
                continue;
            }
            if self.left_for_one_node.contains(&id) {
                self.hand_over_again(job, cycle);
                continue;
            }
            // One GPU is on one node: no shape to build.
            let placement = self.core.placement_of(JobId(id));
            if placement.as_slice().len() < 2 {
                continue;
            }
            let shape = self.layout.shape(placement.as_slice());
            if shape.len() >= 2 {
                split.push((*job, shape));
            }
        }
        self.read_node_counts(&split, cycle, counts);
        for (job, shape) in split {
            let Some(asked) = self.one_node_asked(job) else {
                continue;
            };
            let id = job.id;
            let gpus: u16 = shape.iter().map(|(_, c)| c).sum();
            let text = format!(
                "job {id}: asks for {gpus} GPUs on one node ({asked}), and gantry's placement would split them ({}); gantry leaves it to Slurm's own scheduler, which starts it on one node, holds those GPUs until then, and keeps its GPUs out of its view while it runs",
                shape_text(&shape)
            );
            self.note(cycle, id, Said::LeftToSlurm, text);
            self.warn_builtin(cycle);
            self.left_for_one_node.insert(id);
            // Slurm's `release` of a job not held is a no-op; a user's `-w` on a job never
            // released is kept.
            cycle.actions.push(Action::HandOver {
                job: id,
                unpin: job.restart_count > 0 || !job.held,
            });
        }
    }

    /// How `job` asks to run on one node, for the note; `None` when it may span nodes. A
    /// per-node request ([`asks_one_node`]), or `-N 1` as the job set it: listed by Slurm
    /// (the JSON's `max_nodes`) or read ([`NodeCounts`]) while it is as submitted, since
    /// once gantry released it its node count is gantry's (`NumNodes=n-n`).
    fn one_node_asked(&self, job: &SlurmJob) -> Option<&'static str> {
        let own_max_nodes = if as_submitted(job) && job.max_nodes != 0 {
            job.max_nodes
        } else {
            self.max_nodes_read.get(&job.id).copied().unwrap_or(0)
        };
        if asks_one_node(job) {
            Some("per node: --gres or --gpus-per-node")
        } else if job.node_count <= 1 && own_max_nodes == 1 {
            Some("-N 1")
        } else {
            None
        }
    }

    /// Reads the node count of each job in `split` (the core placed it over several nodes)
    /// that the listing cannot tell ([`NodeCounts`]): held as submitted, no node count
    /// listed, asking per job or per task. Once per job; a job whose count cannot be read
    /// is placed as the core chose, and the note says so.
    fn read_node_counts(
        &mut self,
        split: &[(&SlurmJob, Vec<(String, u16)>)],
        cycle: &mut Cycle,
        counts: &mut dyn NodeCounts,
    ) {
        let unread: Vec<u32> = split
            .iter()
            .map(|(job, _)| *job)
            .filter(|job| {
                as_submitted(job)
                    && job.node_count <= 1
                    && job.max_nodes == 0
                    && !asks_one_node(job)
                    && !self.max_nodes_read.contains_key(&job.id)
            })
            .map(|job| job.id)
            .collect();
        if unread.is_empty() {
            return;
        }
        for (id, read) in counts.max_nodes(&unread) {
            match read {
                Ok(max_nodes) => {
                    self.max_nodes_read.insert(id, max_nodes);
                }
                Err(e) => cycle.notes.push(format!(
                    "job {id}: cannot read whether it asked for one node ({e}); released where gantry placed it"
                )),
            }
        }
    }

    /// Jobs left to Slurm to keep them on one node ([`Self::one_node_leaves`]) that the core
    /// still holds: once Slurm shows one running, ended or gone, or the core preempted it (it
    /// took those GPUs back, for a job outside gantry on them), it leaves the core (those
    /// GPUs go to others; a running one's are out of the core's view from now on, see
    /// [`super::foreign`]). It stays Slurm's: it was released to Slurm. Runs before the
    /// cycle reads ends, so such a job's end is not counted as gantry's.
    fn one_node_started(&mut self, now: u64, jobs: &BTreeMap<u32, &SlurmJob>, cycle: &mut Cycle) {
        let waiting: Vec<(u32, JobState)> = self
            .left_for_one_node
            .iter()
            .filter_map(|&id| self.core.job(JobId(id)).map(|j| (id, j.state())))
            .collect();
        for (id, state) in waiting {
            if state != JobState::Running
                || jobs
                    .get(&id)
                    .is_none_or(|j| j.state != JobStateName::Pending)
            {
                self.withdraw(now, id, cycle);
            }
        }
    }

    /// Jobs gantry released that Slurm keeps pending for a QOS or association limit
    /// ([`super::limit`]): the core counts their GPUs busy while nothing runs there, so
    /// each leaves the core. One held back by a shared limit is held again and submitted
    /// once the limit may have freed ([`Self::limit_wait_over`]); one that passes a limit
    /// alone is left to Slurm, pending where it is.
    fn limit_holds(
        &mut self,
        now: u64,
        jobs: &BTreeMap<u32, &SlurmJob>,
        listed: &BTreeMap<u32, &SlurmJob>,
        cycle: &mut Cycle,
    ) {
        let released: Vec<u32> = self
            .running_in_core()
            .into_iter()
            .filter(|id| self.released_at_ms.contains_key(id))
            .collect();
        for id in released {
            let Some(job) = jobs.get(&id) else { continue };
            if job.state != JobStateName::Pending || job.held {
                continue;
            }
            let Some(limit) = super::limit::limit_of(&job.reason) else {
                continue;
            };
            if !self.withdraw(now, id, cycle) {
                continue;
            }
            match limit {
                Limit::Shared => {
                    let wait = LimitWait::new(job, listed, now);
                    let on = if wait.blockers.is_empty() {
                        format!("in {} s", super::limit::RETRY_WITHOUT_BLOCKERS_MS / 1000)
                    } else {
                        let ids: Vec<String> = wait.blockers.iter().map(u32::to_string).collect();
                        format!("once one of jobs {} ends", ids.join(","))
                    };
                    let what = if job.reason == super::limit::LICENSES {
                        format!("licenses it asks for ({})", job.licenses)
                    } else {
                        format!("a limit of its QOS or account ({})", job.reason)
                    };
                    cycle.notes.push(format!(
                        "job {id}: Slurm keeps it pending for {what}; gantry holds it again, gives its GPUs to others and submits it again {on}"
                    ));
                    self.limit_waits.insert(id, wait);
                    cycle.actions.push(Action::Hold { job: id });
                    cycle.limit_holds += 1;
                }
                Limit::JobAlone => {
                    let text = format!(
                        "job {id}: Slurm keeps it pending for a limit it passes by itself ({}); it starts only once the limit or the job is changed, so gantry leaves it to Slurm and gives its GPUs to others",
                        job.reason
                    );
                    self.note(cycle, id, Said::LimitLeft, text);
                }
            }
        }
    }

    /// Whether a held job waits for advance reservations that keep it from starting
    /// anywhere ([`ReservedMachines::everywhere`]), logged once per wait.
    fn reservation_wait(
        &mut self,
        now: u64,
        job: &SlurmJob,
        reservations: &ReservedMachines,
        open: &[bool],
        cycle: &mut Cycle,
    ) -> bool {
        let blocking = reservations.everywhere(now, job.time_limit_min, open);
        if blocking.is_empty() {
            self.said.remove(&(job.id, Said::ReservationWait));
            return false;
        }
        let text = format!(
            "job {}: waits for advance reservation {}: its time limit ({}) runs into it on every node open to new jobs, so Slurm would not start it before the reservation ends; gantry schedules it once it can start",
            job.id,
            names(&blocking),
            limit_text(job.time_limit_min)
        );
        self.note(cycle, job.id, Said::ReservationWait, text);
        true
    }

    /// Waiting jobs of the core whose time limit now runs into advance reservations on
    /// every node ([`ReservedMachines::everywhere`]; a maintenance of the whole partition
    /// comes nearer): out of the core, still held, until they can start
    /// ([`Self::reservation_wait`]), so that the core gives their turn to jobs that end
    /// before the reservation, as Slurm's backfill would.
    fn reservation_holds(
        &mut self,
        now: u64,
        jobs: &BTreeMap<u32, &SlurmJob>,
        reservations: &ReservedMachines,
        cycle: &mut Cycle,
    ) {
        if reservations.on_none() {
            return;
        }
        let waiting: Vec<u32> = self
            .core
            .jobs()
            .filter(|j| matches!(j.state(), JobState::Waiting | JobState::Preempted))
            .map(|j| j.id().0)
            .collect();
        let open = self.open_machines();
        for id in waiting {
            let Some(job) = jobs.get(&id) else { continue };
            if job.state != JobStateName::Pending || !job.held {
                continue;
            }
            let blocking = reservations.everywhere(now, job.time_limit_min, &open);
            if !blocking.is_empty() {
                self.hold_for_reservations(now, job, &blocking, cycle);
            }
        }
    }

    /// Which machines are open to new jobs now, by index.
    fn open_machines(&self) -> Vec<bool> {
        self.node_use
            .iter()
            .map(|u| *u == Some(NodeUse::Open))
            .collect()
    }

    /// Takes `job`, whose time limit runs into `blocking` on every node, out of the core and
    /// keeps it held until it can start ([`Self::reservation_wait`]); false when the core
    /// refuses.
    fn hold_for_reservations(
        &mut self,
        now: u64,
        job: &SlurmJob,
        blocking: &[&SlurmReservation],
        cycle: &mut Cycle,
    ) -> bool {
        // Still gantry's hold: a requeued job's reason reads `BeginTime`, which must not
        // pass for an operator's hold once it is out of the core.
        let held_by_gantry = self.held_by_gantry.contains(&job.id);
        if !self.withdraw(now, job.id, cycle) {
            return false;
        }
        if held_by_gantry {
            self.held_by_gantry.insert(job.id);
        }
        if !job.held {
            cycle.actions.push(Action::Hold { job: job.id });
        }
        self.said.insert((job.id, Said::ReservationWait));
        cycle.notes.push(format!(
            "job {}: its time limit ({}) runs into advance reservation {} on every node open to new jobs; gantry takes it out of its queue, held, and schedules it once it can start",
            job.id,
            limit_text(job.time_limit_min),
            names(blocking)
        ));
        true
    }

    /// Starts Slurm would not run where the core placed them: a job the core runs that
    /// Slurm has not started, whose time limit, counted from now, runs into an advance
    /// reservation on a node of its placement. Each such node closes to new jobs until the
    /// reservation is over ([`super::reservation`]), and the sweep that follows
    /// ([`Self::close_nodes`]) has the core place the job elsewhere before anything is
    /// released; a job that would run into reservations on every node (released before
    /// gantry read them) leaves the core instead ([`Self::hold_for_reservations`]).
    /// Returns whether it changed anything. O(GPUs of open reserved nodes).
    fn close_for_reservations(
        &mut self,
        now: u64,
        jobs: &BTreeMap<u32, &SlurmJob>,
        reservations: &ReservedMachines,
        cycle: &mut Cycle,
    ) -> bool {
        if reservations.on_none() {
            return false;
        }
        let mut changed = false;
        for index in 0..self.layout.machines.len() {
            let here: Vec<&SlurmReservation> = reservations.on(index).collect();
            if self.node_use[index] != Some(NodeUse::Open) || here.is_empty() {
                continue;
            }
            let machine = &self.layout.machines[index];
            let gpus = machine.first_gpu..machine.first_gpu + machine.gpus;
            // Jobs Slurm runs here are past the rule; a pending one is a start not made yet.
            let conflict = gpus
                .filter_map(|g| self.core.gpu_owner(GpuId(g)))
                .filter_map(|id| jobs.get(&id.0))
                .filter(|job| job.state == JobStateName::Pending)
                .find_map(|job| {
                    let blocking = here.iter().find(|r| r.blocks(now, job.time_limit_min))?;
                    Some((job, *blocking))
                });
            let Some((job, reservation)) = conflict else {
                continue;
            };
            let open = self.open_machines();
            let everywhere = reservations.everywhere(now, job.time_limit_min, &open);
            if !everywhere.is_empty() {
                changed |= self.hold_for_reservations(now, job, &everywhere, cycle);
                continue;
            }
            cycle.notes.push(format!(
                "node {} is closed to new jobs until advance reservation {} is over: the core placed job {} there, whose time limit ({}) runs into it; its running jobs go on",
                self.layout.machines[index].name,
                reservation.describe(),
                job.id,
                limit_text(job.time_limit_min)
            ));
            self.node_use[index] = Some(NodeUse::Closed);
            self.closed_for_reservation
                .insert(index, reservation.name.clone());
            changed = true;
        }
        changed
    }

    /// Whether a held job gantry held back for a limit may be submitted again (logged
    /// then); true for any other job.
    fn limit_wait_over(
        &mut self,
        now: u64,
        job: &SlurmJob,
        listed: &BTreeMap<u32, &SlurmJob>,
        cycle: &mut Cycle,
    ) -> bool {
        let Some(wait) = self.limit_waits.get(&job.id) else {
            return true;
        };
        if !wait.over(listed, now) {
            return false;
        }
        cycle.notes.push(format!(
            "job {}: held back for a limit ({}) for {:.1} s; gantry schedules it again",
            job.id,
            wait.reason,
            now.saturating_sub(wait.since_ms) as f64 / 1000.0
        ));
        self.limit_waits.remove(&job.id);
        true
    }

    /// A job gantry left to Slurm after it placed it ([`Self::node_rule_leaves`],
    /// [`Self::one_node_leaves`]) that Slurm still shows held: handed over again, gantry's
    /// pin cleared (a node-rule job's always, a per-node one's once it ran).
    fn hand_over_again(&self, job: &SlurmJob, cycle: &mut Cycle) {
        if job.held {
            cycle.actions.push(Action::HandOver {
                job: job.id,
                unpin: self.left_for_node_rules.contains(&job.id) || job.restart_count > 0,
            });
        }
    }

    /// The jobs the core runs, by id.
    fn running_in_core(&self) -> Vec<u32> {
        self.core
            .jobs()
            .filter(|j| j.state() == JobState::Running)
            .map(|j| j.id().0)
            .collect()
    }

    /// The nodes, and GPUs on each, of the core's placement of job `id`.
    fn placed_shape(&self, id: u32) -> Vec<(String, u16)> {
        self.layout
            .shape(self.core.placement_of(JobId(id)).as_slice())
    }

    /// Takes a job gantry still holds out of the core (an operator hold, a limit, Slurm's
    /// deadline rule, a job left to Slurm) and forgets its release, pending start,
    /// preemption and wait note; false, with a note, when the core refuses the cancel.
    fn withdraw(&mut self, now: u64, id: u32, cycle: &mut Cycle) -> bool {
        if let Err(err) = self.handle(now, Event::Cancel(JobId(id)), cycle) {
            cycle
                .notes
                .push(format!("job {id}: core refused its cancel: {err}"));
            return false;
        }
        self.replayed.start_seq.remove(&id);
        self.replayed.preempted_seq.remove(&id);
        self.held_by_gantry.remove(&id);
        self.released_at_ms.remove(&id);
        self.wait_said.remove(&id);
        true
    }

    /// Slurm's deadline rule, applied before Slurm applies it: a job whose time limit,
    /// counted from now, ends after its `--deadline` is cancelled by Slurm when it starts
    /// (`deadline_ok`). gantry cancels such a job while it still holds it (not released
    /// yet), with the reason, instead of releasing it to be cancelled; the core sees a
    /// cancellation, so `gantry replay --metrics` counts the deadline missed.
    fn deadline_rule(&mut self, now: u64, jobs: &BTreeMap<u32, &SlurmJob>, cycle: &mut Cycle) {
        let live: Vec<u32> = self.core.jobs().map(|j| j.id().0).collect();
        for id in live {
            let Some(job) = jobs.get(&id) else { continue };
            let (Some(deadline_s), Some(limit_min)) = (job.deadline_s, job.time_limit_min) else {
                continue;
            };
            let ends_s = (now / 1000).saturating_add(limit_min.saturating_mul(60));
            if job.state != JobStateName::Pending || !job.held || ends_s <= deadline_s {
                continue;
            }
            if !self.withdraw(now, id, cycle) {
                continue;
            }
            let reason = format!(
                "its time limit ({limit_min} min) from now ends {} s after its --deadline; Slurm cancels such a job when it starts",
                ends_s - deadline_s
            );
            self.refuse(cycle, id, reason);
            // It ends here for gantry (Slurm shows it CANCELLED): a missed deadline.
            cycle.outcomes.push(JobOutcome {
                id,
                state: "CANCELLED".into(),
                gpus: job_request(job, &self.layout.gpus).map_or(0, |r| r.gpus),
                submit_s: job.submit_s,
                start_s: 0,
                end_s: now / 1000,
                deadline_s: Some(deadline_s),
            });
        }
    }

    /// New work: held jobs the core does not hold are submitted (in submission order) once
    /// their dependency is met and no limit holds them back; a request gantry cannot
    /// honour is rejected with its reason. `listed`: every job of the poll, of any
    /// partition (a dependency or a limit may name any).
    fn submissions(
        &mut self,
        now: u64,
        jobs: &BTreeMap<u32, &SlurmJob>,
        listed: &BTreeMap<u32, &SlurmJob>,
        reservations: &ReservedMachines,
        cycle: &mut Cycle,
    ) {
        let mut candidates: Vec<&SlurmJob> = Vec::new();
        self.dependency_parents.clear();
        let open = self.open_machines();
        for job in jobs.values() {
            let live = self.core.job(JobId(job.id)).is_some();
            let finished =
                job.state == JobStateName::Completing && self.finished_completing.contains(&job.id);
            if live || finished || job.state.is_final() {
                continue;
            }
            match &job.state {
                JobStateName::Pending
                    if self.admin_held(job)
                        || (job.held && self.operator_held.contains(&job.id)) =>
                {
                    self.held_by_gantry.remove(&job.id);
                    let text = format!(
                        "job {}: held by an operator ({}); gantry schedules it once it is released",
                        job.id, job.reason
                    );
                    self.note(cycle, job.id, Said::OperatorHold, text);
                    self.operator_held.insert(job.id);
                }
                // Left to Slurm for its node rules ([`Self::node_rule_leaves`]) or to keep
                // it on one node ([`Self::one_node_leaves`]).
                JobStateName::Pending
                    if self.left_for_node_rules.contains(&job.id)
                        || self.left_for_one_node.contains(&job.id) =>
                {
                    self.hand_over_again(job, cycle);
                }
                _ if job.het_job.is_some() => self.heterogeneous_job_part(job, cycle),
                _ if job.array_job.is_some() && !self.array_task_is_gantrys(job, cycle) => {}
                JobStateName::Pending if !job.reservation.is_empty() => {
                    let text = format!(
                        "job {}: asks for advance reservation {}; gantry leaves such jobs to Slurm's own scheduler, which starts them on the reservation's nodes",
                        job.id, job.reservation
                    );
                    self.leave_to_slurm(job, job.id, text, cycle);
                }
                JobStateName::Pending if let Some(why) = self.node_count_not_kept(job) => {
                    let text = format!(
                        "job {}: {why}; gantry leaves it to Slurm's own scheduler, which keeps it, and keeps its GPUs out of its view while it runs",
                        job.id
                    );
                    self.leave_to_slurm(job, job.id, text, cycle);
                }
                JobStateName::Pending if job.held => {
                    if self.limit_wait_over(now, job, listed, cycle)
                        && self.dependency_met(now, job, listed, cycle)
                        && !self.reservation_wait(now, job, reservations, &open, cycle)
                    {
                        candidates.push(job);
                    }
                }
                JobStateName::Pending if self.operator_held.remove(&job.id) => {
                    self.said.remove(&(job.id, Said::OperatorHold));
                    cycle.notes.push(format!(
                        "job {}: released by an operator; gantry holds it and schedules it again",
                        job.id
                    ));
                    cycle.actions.push(Action::Hold { job: job.id });
                }
                // Held back for a limit in this cycle: its hold is on its way.
                JobStateName::Pending
                    if self
                        .limit_waits
                        .get(&job.id)
                        .is_some_and(|w| w.since_ms == now) => {}
                JobStateName::Pending if self.dependency_is_slurms(now, job, listed) => {}
                // A limit it passes alone: Slurm's until an operator changes the limit.
                JobStateName::Pending
                    if super::limit::limit_of(&job.reason) == Some(Limit::JobAlone) => {}
                JobStateName::Pending => {
                    let text = format!(
                        "job {}: pending but not held (reason {}); holding it so gantry schedules it",
                        job.id, job.reason
                    );
                    self.note(cycle, job.id, Said::Adopted, text);
                    cycle.actions.push(Action::Hold { job: job.id });
                }
                other => {
                    let by = if self.left_for_node_rules.contains(&job.id) {
                        "where Slurm placed it, left to Slurm for its node rules"
                    } else if self.left_for_one_node.contains(&job.id) {
                        "where Slurm placed it, left to Slurm to keep it on one node"
                    } else if self.said.contains(&(job.id, Said::LeftToSlurm)) {
                        "where Slurm placed it, left to Slurm"
                    } else {
                        "but not started by gantry"
                    };
                    let text = format!(
                        "job {}: {} on {} {by}; its GPUs are not gantry's to give",
                        job.id,
                        other.name(),
                        job.nodes.join(",")
                    );
                    self.note(cycle, job.id, Said::Foreign, text);
                }
            }
        }
        candidates.sort_by_key(|j| (j.submit_s, j.id));
        let mut throttle_room = self.throttle_room(jobs);
        for job in candidates {
            let room = job.array_job.and_then(|a| throttle_room.get_mut(&a));
            if room.as_ref().is_some_and(|left| **left == 0) {
                continue;
            }
            if let Some(reason) = self.refused.get(&job.id) {
                cycle.actions.push(Action::Reject {
                    job: job.id,
                    reason: reason.clone(),
                });
                continue;
            }
            let request = match job_request(job, &self.layout.gpus) {
                Ok(r) => r,
                Err(err) => {
                    self.refuse(cycle, job.id, err.to_string());
                    continue;
                }
            };
            if let Err(reason) = exclusive_kept(job, request.gpus, self.layout.gpus.largest_node) {
                self.refuse(cycle, job.id, reason);
                continue;
            }
            if !self.replayed.started_ever.contains(&job.id)
                && job.restart_count == 0
                && !job.required_nodes.is_empty()
            {
                let text = format!(
                    "job {}: asks for nodes {} (-w/--nodelist); gantry chooses the nodes itself and pins the job where it places it",
                    job.id,
                    job.required_nodes.join(",")
                );
                self.note(cycle, job.id, Said::NodesAsked, text);
            }
            let total = self.layout.gpu_count();
            let healthy = self.core.healthy_gpu_count();
            if usize::from(request.gpus) > healthy && usize::from(request.gpus) <= total {
                let text = format!(
                    "job {}: asks for {} GPUs, {healthy} are up and free of jobs outside gantry; it waits for more",
                    job.id, request.gpus
                );
                self.note(cycle, job.id, Said::WaitsForGpus, text);
                continue;
            }
            if self.core.jobs().len() >= HOST_JOBS {
                cycle.notes.push(format!(
                    "{HOST_JOBS} jobs live: job {} and later wait in Slurm",
                    job.id
                ));
                break;
            }
            if let Some(left) = room {
                *left -= 1;
            }
            self.submit(now, job, &request, cycle);
        }
    }

    /// Why gantry cannot keep the node count `job` asks for (`-N`, [`node_count_kept`]);
    /// `None` when it can, when its GPU request cannot be read (refused later with the
    /// reason), or when the count is gantry's own (`NumNodes=n-n`, set at an earlier start).
    fn node_count_not_kept(&self, job: &SlurmJob) -> Option<String> {
        if self.replayed.started_ever.contains(&job.id) {
            return None;
        }
        let request = job_request(job, &self.layout.gpus).ok()?;
        node_count_kept(
            job,
            request.gpus,
            self.layout.gpus.largest_node,
            self.layout.machines.len(),
        )
        .err()
    }

    /// How many more tasks of each throttled array ([`Self::array_throttles`]) the core may
    /// take: its throttle less its tasks the core holds and those running outside it
    /// (Slurm counts every running task of the array).
    fn throttle_room(&self, jobs: &BTreeMap<u32, &SlurmJob>) -> BTreeMap<u32, u32> {
        let mut room = self.array_throttles.clone();
        for job in jobs.values() {
            let counted = self.core.job(JobId(job.id)).is_some()
                || !(job.state == JobStateName::Pending || job.state.is_final());
            if let Some(left) = job.array_job.and_then(|a| room.get_mut(&a))
                && counted
            {
                *left = left.saturating_sub(1);
            }
        }
        room
    }

    fn submit(&mut self, now: u64, job: &SlurmJob, request: &GpuRequest, cycle: &mut Cycle) {
        let mut spec = JobSpec {
            id: JobId(job.id),
            gpus: request.gpus,
            deadline: job.deadline_s.map(|s| TimeMs(s.saturating_mul(1000))),
            // Its time limit: Slurm ends the job by then, so it bounds the run (a reservation
            // lets a job that ends before the head could start use the head's GPUs, as
            // Slurm's backfill does; `simulate --job-terms` declares the same).
            declared_length: job
                .time_limit_min
                .map(|m| gantry_core::DurationMs(m.saturating_mul(60_000))),
            comm: CommProfile::default(),
            preemption: self.config.checkpoint_marker.class_of(job),
        };
        let mut result = self.handle(now, Event::Submit(spec), cycle);
        if let Err(SchedError::DeadlineAlreadyPassed { .. }) = result {
            cycle.notes.push(format!(
                "job {}: its deadline passed before gantry saw it; scheduled as best effort",
                job.id
            ));
            spec.deadline = None;
            result = self.handle(now, Event::Submit(spec), cycle);
        }
        let reason = match result {
            Ok(()) => return,
            Err(SchedError::RequestExceedsCluster { requested, .. }) => format!(
                "asks for {requested} GPUs, but partition {} has {} in all",
                self.layout.partition,
                self.layout.gpu_count()
            ),
            Err(SchedError::GangTooLarge {
                requested,
                capacity,
                ..
            }) => {
                format!("asks for {requested} GPUs, more than gantry's largest gang ({capacity})")
            }
            Err(SchedError::ZeroGpuRequest(_)) => {
                "asks for no GPU; gantry schedules GPU jobs (--gpus or --gres=gpu:N)".to_string()
            }
            Err(err) => format!("refused by gantry's core: {err}"),
        };
        self.refuse(cycle, job.id, reason);
    }

    fn refuse(&mut self, cycle: &mut Cycle, job: u32, reason: String) {
        cycle.notes.push(format!("job {job}: rejected: {reason}"));
        self.refused.insert(job, reason.clone());
        cycle.actions.push(Action::Reject { job, reason });
    }

    fn tick(&mut self, now: u64, cycle: &mut Cycle) {
        if self.core.jobs().is_empty() {
            return;
        }
        let review_due = self.core.next_review().is_some_and(|t| t.0 <= now);
        let time_driven = gantry_core::JobOrder::time_driven(self.core.order());
        let period_due = time_driven
            && self.config.tick_ms > 0
            && now
                >= self
                    .replayed
                    .last_tick_ms
                    .saturating_add(self.config.tick_ms);
        if review_due || period_due {
            let _ = self.handle(now, Event::Tick, cycle);
            self.replayed.last_tick_ms = now;
        }
    }

    /// Plans the actions that bring Slurm to the core's state: rejections, then holds and
    /// requeue-holds (preemptions), then starts in the order the core decided them.
    ///
    /// A start is released only when Slurm has room for it now (its own count of GPUs in
    /// use per node, `gres_used`, plus what released jobs pinned there will take), and a
    /// start that has to wait holds back every later one: Slurm then starts jobs in the
    /// core's order. Slurm's count can lag the core's after a preemption (the requeued job
    /// is still completing; a node whose job is requeued in this very cycle counts as full)
    /// or differ after a job the core spread unevenly over nodes (Slurm 22.05 takes a
    /// per-job GPU count and splits it itself).
    fn desired(
        &mut self,
        now: u64,
        jobs: &BTreeMap<u32, &SlurmJob>,
        nodes: &[SlurmNode],
        cycle: &mut Cycle,
    ) {
        for entry in &cycle.entries {
            for decision in &entry.decisions {
                if let Decision::Reject { job, .. } = decision {
                    let reason =
                        "its deadline can no longer be met (the job order drops such jobs)";
                    cycle
                        .notes
                        .push(format!("job {}: rejected: {reason}", job.0));
                    self.refused.insert(job.0, reason.to_string());
                }
            }
        }
        let mut holds = Vec::new();
        let mut starts = Vec::new();
        let live: Vec<(u32, JobState)> = self.core.jobs().map(|j| (j.id().0, j.state())).collect();
        for (id, state) in live {
            let Some(slurm) = jobs.get(&id) else { continue };
            if slurm.restart_count > 0 {
                // A requeue gantry sees for the first time (a rise of the restart count is
                // noted in `ends`).
                self.requeue_seen_ms.entry(id).or_insert(now);
            }
            if slurm.state == JobStateName::Pending {
                // Requeued (by gantry or Slurm): no grace period runs any more.
                self.grace.remove(&id);
            }
            if state == JobState::Running {
                match self.running_job(now, id, slurm, jobs, cycle) {
                    Some(Action::Start(plan)) => {
                        let seq = self.seq(id).unwrap_or(u64::MAX);
                        starts.push((seq, plan));
                    }
                    Some(other) => holds.push(other),
                    None => {}
                }
            } else if self.left_for_one_node.contains(&id) {
                // Left to Slurm and preempted by the core: it leaves the core next cycle
                // ([`Self::one_node_started`]), and stays Slurm's meanwhile.
            } else {
                match &slurm.state {
                    JobStateName::Pending if self.admin_held(slurm) => {
                        // The hold gantry's own requeuehold left (operator holds left the
                        // core in `operator_holds`): make it a user hold.
                        holds.push(Action::Hold { job: id })
                    }
                    JobStateName::Pending if slurm.held => {
                        self.replayed.preempted_by_core.remove(&id);
                    }
                    JobStateName::Pending => {
                        self.released_outside(cycle, id, "released");
                        holds.push(Action::Hold { job: id })
                    }
                    JobStateName::Running | JobStateName::Suspended => {
                        if !self.grace.contains_key(&id) {
                            self.released_outside(cycle, id, "started");
                        }
                        holds.extend(self.requeue(now, id, slurm, cycle))
                    }
                    JobStateName::Completing => {}
                    ended if ended.is_final() && self.grace.contains_key(&id) => {
                        holds.extend(self.requeue(now, id, slurm, cycle))
                    }
                    other => {
                        let text =
                            format!("job {id}: state {} not expected; left alone", other.name());
                        self.note(cycle, id, Said::UnknownState, text);
                    }
                }
            }
        }
        for (&job, reason) in &self.refused {
            if jobs.get(&job).is_some_and(|j| !j.state.is_final())
                && !cycle.actions.iter().any(|a| a.job() == job)
            {
                cycle.actions.push(Action::Reject {
                    job,
                    reason: reason.clone(),
                });
            }
        }
        starts.sort_by_key(|(seq, plan)| (*seq, plan.job));
        let mut room = self.slurm_room(jobs, nodes);
        close_requeued_nodes(&mut room, &holds, jobs);
        let completing: BTreeSet<&str> = nodes
            .iter()
            .filter(|n| n.states.iter().any(|s| s == "COMPLETING"))
            .map(|n| n.name.as_str())
            .collect();
        // Nodes where a job gantry released earlier has not started yet: Slurm may take
        // it before an uneven start, which would change that start's split.
        let mut busy: BTreeSet<String> = BTreeSet::new();
        for job in jobs.values() {
            if job.state == JobStateName::Pending && !job.held && self.seq(job.id).is_some() {
                busy.extend(job.required_nodes.iter().cloned());
            }
        }
        cycle.actions.extend(holds);
        self.release_in_order(starts, room, &completing, busy, cycle);
    }

    /// Work conserving: every start (in the core's order) whose GPUs Slurm has free now
    /// (`room`) is released; one that must wait holds back no other, and its log line says
    /// why. `completing`: nodes Slurm shows completing a job; `busy`: nodes where a job
    /// gantry released has not started yet.
    fn release_in_order(
        &mut self,
        starts: Vec<(u64, StartPlan)>,
        mut room: BTreeMap<String, i64>,
        completing: &BTreeSet<&str>,
        mut busy: BTreeSet<String>,
        cycle: &mut Cycle,
    ) {
        let mut split_blocked: Vec<SplitBlocked> = Vec::new();
        // Whether anything can still change Slurm's counts for the split-blocked starts
        // other than jobs ending: a release pending in Slurm, one made this cycle, or a
        // start waiting for Slurm's count or a completing node.
        let mut moving = !busy.is_empty();
        for (_, plan) in starts {
            let short = plan
                .shape
                .iter()
                .find(|(node, n)| room.get(node).is_none_or(|free| *free < i64::from(*n)));
            let completes = plan
                .shape
                .iter()
                .find(|(node, _)| completing.contains(node.as_str()));
            let wait = if plan.credential_wait {
                Some(format!(
                    "waits until {:.1} s after its requeue to restart on {}, nodes it ran on: their slurmd refuses a launch in the second it revoked the run's credential (then released with Slurm's requeue wait skipped)",
                    REVOKED_CREDENTIAL_MARGIN_MS as f64 / 1000.0,
                    shape_text(&plan.shape)
                ))
            } else if let Some((node, n)) = short {
                Some(format!(
                    "waits for Slurm to free GPUs on {node}: Slurm has {} free, the start on {} needs {n} (Slurm's count lags gantry's)",
                    room.get(node).copied().unwrap_or(0).max(0),
                    shape_text(&plan.shape)
                ))
            } else if let Some((node, _)) =
                completes.filter(|_| is_uneven(&plan.shape) && !self.config.finish_at_completing)
            {
                // An even start is released onto a completing node (below); an uneven one
                // is split by Slurm when it starts, so without epilog acks, where the
                // epilog may run for long while jobs end on its other nodes, it waits
                // until the node is done and the counts it is released on are the ones
                // Slurm splits by. With acks the epilog ends as soon as this cycle's
                // releases are made, and the pass its end runs starts the uneven start
                // on the counts it was released on, as it does the even ones.
                Some(format!(
                    "waits for node {node}: Slurm completes a job there, and splits this uneven start ({}) only when it starts it",
                    shape_text(&plan.shape)
                ))
            } else if is_uneven(&plan.shape) && plan.begin_time_ahead {
                // Released now, it would start only at its begin time, split by Slurm's
                // counts of then, which jobs ending or requeued on these nodes meanwhile
                // change: it is released once the wait is over, on the counts it starts by.
                Some(format!(
                    "waits for its begin time: Slurm starts it on {} only then, and splits this uneven start by its counts then",
                    shape_text(&plan.shape)
                ))
            } else if is_uneven(&plan.shape) {
                // Slurm splits a per-job count itself (one GPU per node, then node by node):
                // release only when that split is gantry's and nothing else released onto
                // these nodes can change Slurm's counts first.
                let split =
                    super::shape::cons_tres_split(&plan.shape, &node_room(&room, &plan.shape));
                if plan.shape.iter().any(|(n, _)| busy.contains(n)) {
                    Some(format!(
                        "waits until the jobs released onto {} run (Slurm splits this uneven start by its counts then)",
                        shape_text(&plan.shape)
                    ))
                } else if split.as_deref() != Some(plan.shape.as_slice()) {
                    // Decided after every other start of the cycle (see below).
                    split_blocked.push((plan, split));
                    continue;
                } else {
                    None
                }
            } else {
                None
            };
            moving = true;
            if let Some(text) = wait {
                self.wait_note(cycle, plan.job, text);
                if !plan.release {
                    // Released for its old place: hold it until its new one has room.
                    cycle.actions.push(Action::Hold { job: plan.job });
                }
                continue;
            }
            take_room(&mut room, &plan.shape);
            busy.extend(plan.shape.iter().map(|(n, _)| n.clone()));
            self.wait_said.remove(&plan.job);
            cycle.actions.push(Action::Start(plan));
        }
        self.split_blocked(cycle, split_blocked, moving, &mut room, &mut busy);
    }

    /// Uneven starts whose split Slurm would make otherwise than gantry chose. Slurm's count
    /// on their nodes includes the GPUs the core gave other starts that are not released
    /// yet; usually those are released first (this cycle or later: a start waiting for
    /// Slurm's count or a completing node) and run, and the uneven start's split is then
    /// gantry's, so it waits. When its only obstacle is the GPUs of *other uneven starts
    /// that wait for their split* — each counting the other's GPUs, so none can ever be
    /// released exactly (two gangs that each take "all free GPUs" of one node, placed at
    /// different times) — waiting cannot help: the first of them in the core's order is
    /// released with Slurm's split (logged), at most one per cycle. Slurm then runs it on
    /// the nodes gantry chose with Slurm's counts, and a start that needs the GPUs Slurm
    /// gave it waits for them (Slurm's count lags gantry's) until it ends. The same when
    /// nothing but jobs ending can change Slurm's counts any more (`moving` false: no
    /// release pending or made this cycle, no start waiting for anything but its split):
    /// a job whose split Slurm made otherwise, or GPUs of several blocked starts that
    /// overlap, can keep every split apart while nothing else is left to run.
    fn split_blocked(
        &mut self,
        cycle: &mut Cycle,
        blocked: Vec<SplitBlocked>,
        moving: bool,
        room: &mut BTreeMap<String, i64>,
        busy: &mut BTreeSet<String>,
    ) {
        let mut released_one = false;
        for (i, (plan, split)) in blocked.iter().enumerate() {
            let text = if plan.shape.iter().any(|(n, _)| busy.contains(n)) {
                // A start released this cycle shares its nodes: Slurm's counts change.
                format!(
                    "waits until the jobs released onto {} run (Slurm splits this uneven start by its counts then)",
                    shape_text(&plan.shape)
                )
            } else {
                let mut without = room.clone();
                for (j, (other, _)) in blocked.iter().enumerate() {
                    if j != i {
                        take_room(&mut without, &other.shape);
                    }
                }
                let exact_without =
                    super::shape::cons_tres_split(&plan.shape, &node_room(&without, &plan.shape))
                        .as_deref()
                        == Some(plan.shape.as_slice());
                let deadlocked = !released_one && (!moving || exact_without);
                let chosen = split.as_ref().filter(|_| deadlocked);
                if let Some(slurm_split) = chosen {
                    let note = format!(
                        "job {}: released with Slurm's split {} (gantry chose {}): {}",
                        plan.job,
                        shape_text(slurm_split),
                        shape_text(&plan.shape),
                        if exact_without {
                            "the uneven starts on these nodes each wait for the others' GPUs"
                        } else {
                            "nothing left to release can change Slurm's counts there"
                        }
                    );
                    cycle.notes.push(note);
                    take_room(room, slurm_split);
                    busy.extend(plan.shape.iter().map(|(n, _)| n.clone()));
                    self.wait_said.remove(&plan.job);
                    cycle.actions.push(Action::Start(plan.clone()));
                    released_one = true;
                    continue;
                }
                format!(
                    "waits: Slurm would split it as {}, gantry chose {}",
                    split
                        .as_ref()
                        .map_or("nothing (no room)".to_string(), |s| shape_text(s)),
                    shape_text(&plan.shape)
                )
            };
            self.wait_note(cycle, plan.job, text);
            if !plan.release {
                cycle.actions.push(Action::Hold { job: plan.job });
            }
        }
    }

    /// Logs why a start waits, each time the reason changes (not once per job).
    fn wait_note(&mut self, cycle: &mut Cycle, job: u32, text: String) {
        if self.wait_said.get(&job) != Some(&text) {
            cycle.notes.push(format!("job {job}: {text}"));
            self.wait_said.insert(job, text);
        }
    }

    /// GPUs Slurm can give now, per node: its own `gres_used` count taken from the node's
    /// GPUs, less what jobs released by gantry but not yet running will take there.
    ///
    /// A node that is completing a job counts too: Slurm frees a job's GPUs in its count
    /// when the job ends, before the node's epilog is done, and starts nothing on the node
    /// until then. A job released onto it waits in Slurm, pinned (so it holds back no job
    /// on other nodes), and starts in the scheduling pass Slurm runs as soon as the epilog
    /// completes; released after the node is done, it would wait for Slurm's next periodic
    /// pass (up to a second in 22.05, which defers the pass a release asks for).
    fn slurm_room(
        &self,
        jobs: &BTreeMap<u32, &SlurmJob>,
        nodes: &[SlurmNode],
    ) -> BTreeMap<String, i64> {
        let mut room: BTreeMap<String, i64> = BTreeMap::new();
        for machine in &self.layout.machines {
            let node = nodes.iter().find(|n| n.name == machine.name);
            let free = match node {
                Some(n) => {
                    let used = node_gpus(&n.gres_used).map_or(0, |g| g.count);
                    i64::from(machine.gpus) - i64::from(used)
                }
                None => 0,
            };
            room.insert(machine.name.clone(), free);
        }
        for job in jobs.values() {
            let releasing = job.state == JobStateName::Pending && !job.held;
            if !releasing
                || self
                    .core
                    .job(JobId(job.id))
                    .is_none_or(|j| j.state() != JobState::Running)
            {
                continue;
            }
            let shape = self.placed_shape(job.id);
            let pinned: BTreeSet<&str> = job.required_nodes.iter().map(String::as_str).collect();
            if shape.iter().all(|(n, _)| pinned.contains(n.as_str())) && pinned.len() == shape.len()
            {
                // Pinned where the core placed it; one pinned elsewhere is re-pinned below.
                take_room(&mut room, &shape);
            }
        }
        room
    }

    /// The lowest-numbered job of the partition that the core does not hold and that
    /// Slurm keeps pending, released, for resources: a job left to Slurm's own scheduler
    /// (or released outside gantry) that waits for GPUs. Under `sched/builtin` Slurm starts
    /// no later job of the partition while it waits, gantry's releases included.
    fn left_waiting(&self, jobs: &BTreeMap<u32, &SlurmJob>) -> Option<u32> {
        jobs.values()
            .filter(|j| j.state == JobStateName::Pending && !j.held && j.reason == "Resources")
            .map(|j| j.id)
            .find(|&id| self.core.job(JobId(id)).is_none() || self.left_for_one_node.contains(&id))
    }

    /// What a job the core runs needs in Slurm: a start when it is still held, a re-pin
    /// when it is released but pinned elsewhere, nothing when it runs where it should.
    /// `jobs`: the partition's, for [`Self::left_waiting`] when a release waits behind one.
    fn running_job(
        &mut self,
        now: u64,
        id: u32,
        slurm: &SlurmJob,
        jobs: &BTreeMap<u32, &SlurmJob>,
        cycle: &mut Cycle,
    ) -> Option<Action> {
        let gpus = self.core.placement_of(JobId(id));
        let shape = self.layout.shape(gpus.as_slice());
        let chosen: BTreeSet<&str> = shape.iter().map(|(n, _)| n.as_str()).collect();
        match &slurm.state {
            // Left to Slurm to keep it on one node, waiting there ([`Self::one_node_leaves`]).
            JobStateName::Pending if self.left_for_one_node.contains(&id) => None,
            JobStateName::Pending => {
                let pinned: BTreeSet<&str> =
                    slurm.required_nodes.iter().map(String::as_str).collect();
                if pinned == chosen && unrunnable_there(slurm) {
                    // Slurm will never run it there (and holds it: priority 0), so
                    // releasing it again would loop.
                    if !self.give_up.iter().any(|(job, _)| *job == id) {
                        let reason = format!(
                            "Slurm cannot run it on {} (BadConstraints: its own node rules, such as --exclude or --constraint, rule out the nodes gantry chose); gantry places jobs on any node of the partition: submit it without them, or to a partition gantry does not schedule",
                            shape_text(&shape)
                        );
                        self.give_up.push((id, reason));
                    }
                    return None;
                }
                if !slurm.held && pinned == chosen && requeue_waits(slurm, now) {
                    return self.lift(now, id, &shape, cycle);
                }
                if !slurm.held && pinned == chosen {
                    let released = self.released_at_ms.get(&id).copied();
                    if released.is_some_and(|t| now.saturating_sub(t) > self.config.slow_start_ms) {
                        let mut text = format!(
                            "job {id}: released {} s ago onto {}, still pending ({})",
                            now.saturating_sub(released.unwrap_or(now)) / 1000,
                            shape_text(&shape),
                            slurm.reason
                        );
                        let ahead = (slurm.reason == "Priority")
                            .then(|| self.left_waiting(jobs))
                            .flatten();
                        if let Some(ahead) = ahead {
                            text.push_str(&format!(
                                ": job {ahead}, which gantry does not schedule, waits for GPUs ahead of it in Slurm's queue; under sched/builtin Slurm starts nothing behind a waiting job (run the partition on sched/backfill)"
                            ));
                        }
                        self.note(cycle, id, Said::SlowStart, text);
                    }
                    return None;
                }
                Some(Action::Start(self.start_plan(now, slurm, shape)))
            }
            // Finishing an earlier run (a requeue): the next poll shows it pending.
            JobStateName::Completing => None,
            // Signalled for a preemption, then started again by the core before the requeue:
            // the run was told to stop, so it is requeued all the same and started anew.
            _ if self.grace.contains_key(&id) => self.requeue(now, id, slurm, cycle),
            JobStateName::Running | JobStateName::Suspended => {
                let ran: BTreeSet<&str> = slurm.nodes.iter().map(String::as_str).collect();
                if ran != chosen {
                    // The core moved it (preempted and started it elsewhere in one cycle),
                    // or someone else did: requeue it; it is started where the core says.
                    let text = format!(
                        "job {id}: runs on {} but the core placed it on {}; requeueing it there",
                        slurm.nodes.join(","),
                        shape_text(&shape)
                    );
                    self.note(cycle, id, Said::Moved, text);
                    return self.requeue(now, id, slurm, cycle);
                }
                if let Some(split) = split_differs(slurm, &shape) {
                    let text = format!(
                        "job {id}: Slurm split its GPUs as {split}, gantry chose {}",
                        shape_text(&shape)
                    );
                    self.note(cycle, id, Said::Split, text);
                }
                None
            }
            other => {
                let text = format!("job {id}: state {} not expected; left alone", other.name());
                self.note(cycle, id, Said::UnknownState, text);
                None
            }
        }
    }

    /// A running Slurm job gantry must requeue (the core preempted or moved it): first the
    /// grace signal, then, once the grace period is over or the job ended by itself, the
    /// requeue-hold; `None` while the grace period runs. The job's GPUs stay Slurm's
    /// until the requeue, and no start is released onto GPUs Slurm counts as used, so
    /// nothing runs on them twice meanwhile.
    fn requeue(
        &mut self,
        now: u64,
        id: u32,
        slurm: &SlurmJob,
        cycle: &mut Cycle,
    ) -> Option<Action> {
        let grace = self.config.preempt_grace_ms;
        match self.grace.get(&id) {
            _ if grace == 0 => Some(Action::RequeueHold { job: id }),
            None if slurm.state.is_final() => Some(Action::RequeueHold { job: id }),
            None => {
                self.grace.insert(id, now);
                cycle.notes.push(format!(
                    "job {id}: preempted: sent SIG{}, requeued in {} s or once it ends",
                    self.config.preempt_signal,
                    grace.div_ceil(1000)
                ));
                Some(Action::Signal {
                    job: id,
                    signal: self.config.preempt_signal.clone(),
                })
            }
            Some(&at) if slurm.state.is_final() => {
                cycle.notes.push(format!(
                    "job {id}: ended by itself ({}) {:.1} s after its preemption signal; requeueing it",
                    slurm.state.name(),
                    now.saturating_sub(at) as f64 / 1000.0
                ));
                Some(Action::RequeueHold { job: id })
            }
            Some(&at) if now >= at.saturating_add(grace) => Some(Action::RequeueHold { job: id }),
            Some(_) => None,
        }
    }

    /// A job the core runs, requeued outside gantry (an operator's `scontrol requeue`, a
    /// `requeuehold` released again before gantry saw it) and pending where the core placed
    /// it, in Slurm's requeue wait: skipped once the requeue is
    /// [`REVOKED_CREDENTIAL_MARGIN_MS`] old, as for gantry's own restarts on a job's old
    /// nodes. The job's GPUs are the core's already, so no room is checked.
    fn lift(
        &mut self,
        now: u64,
        id: u32,
        shape: &[(String, u16)],
        cycle: &mut Cycle,
    ) -> Option<Action> {
        if now >= self.credential_aged_ms(id, now) {
            self.wait_said.remove(&id);
            return Some(Action::Lift { job: id });
        }
        let text = format!(
            "requeued outside gantry, pending on {} in Slurm's requeue wait: skipped {:.1} s after the requeue (their slurmd refuses a launch in the second it revoked the run's credential)",
            shape_text(shape),
            REVOKED_CREDENTIAL_MARGIN_MS as f64 / 1000.0
        );
        self.wait_note(cycle, id, text);
        None
    }

    /// When a restart of requeued job `id` on the nodes it ran on may skip Slurm's requeue
    /// wait: [`REVOKED_CREDENTIAL_MARGIN_MS`] after gantry first saw the requeue (noted in
    /// `desired` and `ends`; `now` if not yet).
    fn credential_aged_ms(&self, id: u32, now: u64) -> u64 {
        let seen = self.requeue_seen_ms.get(&id).copied().unwrap_or(now);
        seen.saturating_add(REVOKED_CREDENTIAL_MARGIN_MS)
    }

    /// The start of `slurm` on `shape` as the core placed it, at `now` (Unix ms).
    fn start_plan(&self, now: u64, slurm: &SlurmJob, shape: Vec<(String, u16)>) -> StartPlan {
        // Where it ran: as last seen, else where it is pinned (a run is only there).
        let ran: Option<BTreeSet<&str>> = match self.last_nodes.get(&slurm.id) {
            Some(nodes) => Some(nodes.iter().map(String::as_str).collect()),
            None if !slurm.required_nodes.is_empty() => {
                Some(slurm.required_nodes.iter().map(String::as_str).collect())
            }
            None => None,
        };
        let elsewhere = ran.is_some_and(|ran| shape.iter().all(|(n, _)| !ran.contains(n.as_str())));
        let credential_aged_ms =
            (slurm.restart_count > 0).then(|| self.credential_aged_ms(slurm.id, now));
        let start_now = credential_aged_ms.is_some_and(|aged| elsewhere || now >= aged);
        let credential_wait = credential_aged_ms.is_some() && !start_now;
        let gpu_type = job_request(slurm, &self.layout.gpus)
            .ok()
            .and_then(|r| r.gpu_type);
        let per_node: Vec<&str> = slurm
            .tres_per_node
            .split(',')
            .filter(|s| !s.is_empty())
            .collect();
        let is_gpu = |e: &&str| {
            let e = e.trim_start_matches("gres:").trim_start_matches("gres/");
            e == "gpu" || e.starts_with("gpu:") || e.starts_with("gpu=")
        };
        StartPlan {
            job: slurm.id,
            shape,
            gpu_type,
            other_per_node: per_node
                .iter()
                .filter(|e| !is_gpu(e))
                .map(|e| e.to_string())
                .collect(),
            had_per_job: !slurm.tres_per_job.is_empty(),
            had_per_node_gpus: per_node.iter().any(is_gpu),
            had_per_task: !slurm.tres_per_task.is_empty(),
            release: slurm.held,
            start_now,
            credential_wait,
            // A pending job's begin time is its start time until it runs (a requeued one's
            // too: Slurm's `batch_requeue_fini` clears the start time; held, it gets no
            // estimate).
            begin_time_ahead: !start_now && slurm.held && slurm.start_s.saturating_mul(1000) > now,
        }
    }
}

/// Whether the controller hands `event` to the core without a scheduling pass
/// ([`HostScheduler::handle_deferred`]): every event but `Tick` for orders that batch an
/// instant's events, and `GpuUp` always (a node's GPUs come back together, followed by one
/// `Tick`; see `Controller::nodes`). `gantry replay` applies the same rule to a `gantry
/// slurm` journal (`record::replay`).
pub fn deferred(batched: bool, event: Event) -> bool {
    (batched && event != Event::Tick) || matches!(event, Event::GpuUp(_))
}

/// Whether Slurm shows `job` as its user submitted it: held, never requeued and not pinned,
/// so its node count is the user's, not one gantry set at a release.
fn as_submitted(job: &SlurmJob) -> bool {
    job.held && job.restart_count == 0 && job.required_nodes.is_empty()
}

/// Whether every placement the core may choose for a gang of `gpus` GPUs keeps the job's
/// node count (`-N min[-max]`). The core places GPUs, not nodes: a gang may span from
/// ⌈gpus / GPUs per node⌉ nodes to one GPU per node, and gantry pins the job to the nodes
/// of its placement (`NumNodes=n-n`). A job whose `-N` rules out some of those counts
/// (`--gres=gpu:3 -N 2`: 6 GPUs that could be placed on one node) is left to Slurm, which
/// keeps its node count, rather than run on another one; the error says why. `-N 1` is
/// scheduled: a placement over several nodes is left to Slurm then
/// ([`Controller::one_node_leaves`]).
fn node_count_kept(
    job: &SlurmJob,
    gpus: u16,
    per_node: u16,
    machines: usize,
) -> Result<(), String> {
    let (min, max) = (job.node_count.max(1), job.max_nodes);
    if gpus == 0 || (min <= 1 && max <= 1) {
        return Ok(());
    }
    let fewest = u32::from(gpus.div_ceil(per_node.max(1)));
    let most = u32::from(gpus).min(u32::try_from(machines).unwrap_or(u32::MAX));
    if min <= fewest && (max == 0 || max >= most) {
        return Ok(());
    }
    let asked = match max {
        0 => format!("at least {min} nodes (-N {min}-)"),
        m if m == min => format!(
            "exactly {min} node{} (-N {min})",
            if min == 1 { "" } else { "s" }
        ),
        m => format!("{min} to {m} nodes (-N {min}-{m})"),
    };
    Err(format!(
        "asks for {asked}, but gantry places its {gpus} GPUs on the nodes it chooses ({fewest} to {most} of them) and cannot keep a node count"
    ))
}

/// Reservations for a note, each with its times ([`SlurmReservation::describe`]).
fn names(reservations: &[&SlurmReservation]) -> String {
    let names: Vec<String> = reservations.iter().map(|r| r.describe()).collect();
    names.join(", ")
}

/// A time limit for a note: `90 min`, or `none`.
fn limit_text(limit_min: Option<u64>) -> String {
    limit_min.map_or("none".to_string(), |m| format!("{m} min"))
}

/// Whether gantry can keep a job's `--exclusive`: only for whole nodes' worth of GPUs.
/// gantry shares a node's GPUs between jobs, so an exclusive job of fewer GPUs than a node
/// has would hold the rest idle in Slurm while the core gave them to others (they would
/// wait behind it). A whole-node multiple is placed on whole nodes when the placer finds
/// them free (`docs/slurm.md`, Known limits).
fn exclusive_kept(job: &SlurmJob, gpus: u16, per_node: u16) -> Result<(), String> {
    if !job.exclusive || gpus == 0 || gpus.is_multiple_of(per_node.max(1)) {
        return Ok(());
    }
    Err(format!(
        "asks for whole nodes (--exclusive) but {gpus} GPU{}, not a multiple of a node's {per_node}: gantry shares a node's GPUs between jobs; ask for whole nodes' GPUs (e.g. --gpus-per-node={per_node}) or drop --exclusive",
        if gpus == 1 { "" } else { "s" }
    ))
}

/// An uneven start whose split Slurm would make otherwise, with that split (`None`: it
/// does not fit Slurm's counts at all).
type SplitBlocked = (StartPlan, Option<Vec<(String, u16)>>);

/// Whether a released pending job is in Slurm's wait after a requeue: requeued at least
/// once, waiting for its begin time (`BeginTime`), which is still ahead.
fn requeue_waits(job: &SlurmJob, now: u64) -> bool {
    job.restart_count > 0 && job.reason == "BeginTime" && job.start_s.saturating_mul(1000) > now
}

/// Whether a placement spans nodes with different GPU counts: Slurm 22.05 can only be
/// asked for a per-job total there, and splits it itself.
fn is_uneven(shape: &[(String, u16)]) -> bool {
    shape.iter().any(|(_, c)| *c != shape[0].1)
}

/// Slurm puts every node of a job it requeues into COMPLETING while the job's epilog
/// runs, and starts nothing there until that ends (seen on the lab: a start released onto
/// such a node in the same cycle as the requeue ran 3 s after one released with it onto
/// another node). Starts onto those nodes wait for a later cycle, with every start after
/// them, so Slurm still starts jobs in the core's order.
fn close_requeued_nodes(
    room: &mut BTreeMap<String, i64>,
    holds: &[Action],
    jobs: &BTreeMap<u32, &SlurmJob>,
) {
    for action in holds {
        let Action::RequeueHold { job } = action else {
            continue;
        };
        for node in jobs.get(job).map_or(&[][..], |j| j.nodes.as_slice()) {
            if let Some(free) = room.get_mut(node) {
                *free = 0;
            }
        }
    }
}

/// Slurm's free GPUs on each node of `shape`, in its order.
fn node_room(room: &BTreeMap<String, i64>, shape: &[(String, u16)]) -> Vec<i64> {
    shape
        .iter()
        .map(|(n, _)| room.get(n).copied().unwrap_or(0))
        .collect()
}

/// Takes a placement's GPUs from `room` (an uneven one by the split Slurm makes of it:
/// gantry's, except for one released out of a split deadlock, see `split_blocked`).
fn take_room(room: &mut BTreeMap<String, i64>, shape: &[(String, u16)]) {
    for (node, n) in shape {
        if let Some(free) = room.get_mut(node) {
            *free -= i64::from(*n);
        }
    }
}

/// `n1:4,n2:4`.
pub fn shape_text(shape: &[(String, u16)]) -> String {
    shape
        .iter()
        .map(|(n, c)| format!("{n}:{c}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Slurm's per-node GPU counts (`gres_detail`, in node order) when they differ from gantry's.
fn split_differs(slurm: &SlurmJob, shape: &[(String, u16)]) -> Option<String> {
    if slurm.gres_detail.len() != slurm.nodes.len() {
        return None;
    }
    let mut actual = Vec::new();
    for (node, detail) in slurm.nodes.iter().zip(&slurm.gres_detail) {
        let count: u16 = detail
            .split(',')
            .filter_map(|e| e.strip_prefix("gpu:"))
            .filter_map(|e| e.split('(').next()?.rsplit(':').next()?.parse::<u16>().ok())
            .sum();
        actual.push((node.clone(), count));
    }
    let mut expected = shape.to_vec();
    expected.sort();
    actual.sort();
    (actual != expected).then(|| shape_text(&actual))
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
