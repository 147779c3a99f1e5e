//! Jobs: what the caller submits ([`JobSpec`]) and what the core tracks about each live job
//! ([`Job`]).

use crate::ids::JobId;
use crate::time::{DurationMs, TimeMs};
use serde::{Deserialize, Serialize};

/// How a job communicates, for placement-aware speed models (Proximity-DRL: all-reduce time
/// grows with the gradient size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CommProfile {
    /// Size of one gradient exchange, in megabytes (0 = unknown).
    pub gradient_mb: u32,
}

/// Whether a running job may be stopped before it finishes for another job's sake.
///
/// On a cluster where a preemption kills the job (Slurm's requeue: the job restarts from
/// its last checkpoint, or from zero), preempting a job that does not checkpoint throws its
/// work away; such a job says [`Never`](Self::Never) and runs to completion once started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PreemptionClass {
    /// Once started, runs until it finishes: never preempted for priority and never moved
    /// by the scheduling pass's consolidation. A failure of one of its GPUs still stops it
    /// (the GPU is gone); it then waits in the queue like any preempted job.
    Never,
    /// May be preempted (for priority, after the scheduler's minimum run quantum) and moved;
    /// it resumes from its checkpoint. The default, and the only class before classes were
    /// introduced, so a stream without them decides as before.
    #[default]
    Checkpointing,
}

/// A job as the caller submits it. The request is a gang: all `gpus` GPUs or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JobSpec {
    /// The caller's id; unique among live jobs.
    pub id: JobId,
    /// Number of GPUs, all at once (gang scheduling).
    pub gpus: u16,
    /// Absolute deadline, if the job has one.
    pub deadline: Option<TimeMs>,
    /// The job's run time on an ideal placement, if known. Only *oracle* orders (SJF, SRTF)
    /// read it; information-agnostic orders (LAS, TIAS) never do.
    pub declared_length: Option<DurationMs>,
    /// Communication profile, for placement-aware speed models.
    pub comm: CommProfile,
    /// Whether the job may be preempted once it runs.
    pub preemption: PreemptionClass,
}

impl JobSpec {
    /// A job of `gpus` GPUs with no deadline, no declared length and no comm profile, that
    /// may be preempted ([`PreemptionClass::Checkpointing`]).
    pub const fn new(id: JobId, gpus: u16) -> Self {
        Self {
            id,
            gpus,
            deadline: None,
            declared_length: None,
            comm: CommProfile { gradient_mb: 0 },
            preemption: PreemptionClass::Checkpointing,
        }
    }
}

/// Where a job is in its life. A live job in the core is `Waiting`, `Running` or
/// `Preempted`; `Finished` and `Rejected` are final and name jobs the core has let go of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum JobState {
    /// Submitted, never started.
    Waiting,
    /// Holding its gang of GPUs.
    Running,
    /// Started before, now back in the queue (by priority or a GPU failure).
    Preempted,
    /// Done (final).
    Finished,
    /// Refused by the scheduler (final).
    Rejected,
}

impl JobState {
    /// Waiting or preempted: in the queue, holding no GPU.
    pub const fn is_queued(self) -> bool {
        matches!(self, JobState::Waiting | JobState::Preempted)
    }
}

/// A live job as the core tracks it: 64 bytes, because a firmware scheduler keeps hundreds of
/// them in RAM (`Scheduler<Tias, BestFit, 64, 256, 8>` must fit in 32 KiB, issue 12).
///
/// What an order or a placer reads is kept; what only a caller would read is not (the
/// communication profile; a job's first start and preemption count, which the caller sees
/// in the decisions). Attained service is derived, not stored: a gang holds all its GPUs
/// while it runs, so GPUs × executed time is exactly Tiresias's 2D attained service. The two
/// optional times share one status byte with the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Job {
    /// The absolute deadline in ms; meaningful only when `status` says the job has one.
    deadline_ms: u64,
    /// The declared length in ms; meaningful only when `status` says the job has one.
    declared_length_ms: u64,
    submitted_at: TimeMs,
    /// Since when it is in its current state: queued since its submission or last
    /// preemption, running since its last (re)start.
    since: TimeMs,
    /// Time spent running in the runs that ended (a running job's current run counts from
    /// `since`, [`Job::executed_at`]): crediting running jobs at every event would cost O(R).
    executed: DurationMs,
    /// A time that belongs to the job order (e.g. when the job entered its 2D-LAS queue).
    /// Set to the submission time at submit.
    pub order_mark: TimeMs,
    /// A value that belongs to the job order: 2D-LAS's service baseline in GPU·ms (queue
    /// service counts from here; the starvation guard raises it to the attained service,
    /// as Tiresias resets the job's executed time), the oracles' declared length in ms.
    /// 0 at submit.
    pub order_base_gpu_ms: u64,
    id: JobId,
    gpus: u16,
    status: Status,
    /// A queue index that belongs to the job order (e.g. 2D-LAS's queue); 0 = top.
    pub order_queue: u8,
}

/// A job's [`JobState`], whether it has a deadline and a declared length, its
/// [`PreemptionClass`] and whether it is inside its minimum run quantum, in one byte (the job
/// record's size is the firmware's RAM budget).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
struct Status(u8);

impl Status {
    const HAS_DEADLINE: u8 = 0x80;
    const HAS_DECLARED_LENGTH: u8 = 0x40;
    /// [`PreemptionClass::Never`].
    const NEVER_PREEMPT: u8 = 0x20;
    /// Running, and started less than the scheduler's minimum run quantum ago (set at a
    /// start when the quantum is not zero; cleared by the scheduler when it ends or the job
    /// stops running).
    const IN_QUANTUM: u8 = 0x10;
    const STATE_BITS: u8 = 0x07;
    /// A free slot of the job table (its job has left).
    const VACANT: Self = Self(Self::STATE_BITS);

    const fn new(
        state: JobState,
        has_deadline: bool,
        has_declared_length: bool,
        class: PreemptionClass,
    ) -> Self {
        let deadline = if has_deadline { Self::HAS_DEADLINE } else { 0 };
        let declared = if has_declared_length {
            Self::HAS_DECLARED_LENGTH
        } else {
            0
        };
        let never = match class {
            PreemptionClass::Never => Self::NEVER_PREEMPT,
            PreemptionClass::Checkpointing => 0,
        };
        Self(state as u8 | deadline | declared | never)
    }

    const fn with_flag(self, flag: u8, on: bool) -> Self {
        if on {
            Self(self.0 | flag)
        } else {
            Self(self.0 & !flag)
        }
    }

    const fn with_state(self, state: JobState) -> Self {
        Self(self.0 & !Self::STATE_BITS | state as u8)
    }

    const fn state(self) -> Option<JobState> {
        match self.0 & Self::STATE_BITS {
            0 => Some(JobState::Waiting),
            1 => Some(JobState::Running),
            2 => Some(JobState::Preempted),
            3 => Some(JobState::Finished),
            4 => Some(JobState::Rejected),
            _ => None,
        }
    }

    const fn has_deadline(self) -> bool {
        self.0 & Self::HAS_DEADLINE != 0
    }

    const fn has_declared_length(self) -> bool {
        self.0 & Self::HAS_DECLARED_LENGTH != 0
    }

    const fn has_flag(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    /// Only the bits the core sets, a known state, and the quantum bit only on a running
    /// job (a decoded snapshot is checked with it).
    const fn is_valid(self) -> bool {
        let known = Self::HAS_DEADLINE
            | Self::HAS_DECLARED_LENGTH
            | Self::NEVER_PREEMPT
            | Self::IN_QUANTUM
            | Self::STATE_BITS;
        let quantum_ok =
            !self.has_flag(Self::IN_QUANTUM) || matches!(self.state(), Some(JobState::Running));
        self.0 & !known == 0 && self.state().is_some() && quantum_ok
    }
}

impl Job {
    /// A freshly submitted job: waiting, queued since `now`, no service, order fields zero
    /// (the order's mark at `now`).
    pub const fn submitted(spec: JobSpec, now: TimeMs) -> Self {
        let (deadline_ms, has_deadline) = match spec.deadline {
            Some(d) => (d.0, true),
            None => (0, false),
        };
        let (declared_length_ms, has_declared_length) = match spec.declared_length {
            Some(d) => (d.0, true),
            None => (0, false),
        };
        Self {
            deadline_ms,
            declared_length_ms,
            submitted_at: now,
            since: now,
            executed: DurationMs::ZERO,
            order_mark: now,
            order_base_gpu_ms: 0,
            id: spec.id,
            gpus: spec.gpus,
            status: Status::new(
                JobState::Waiting,
                has_deadline,
                has_declared_length,
                spec.preemption,
            ),
            order_queue: 0,
        }
    }

    /// The job's id.
    pub const fn id(&self) -> JobId {
        self.id
    }

    /// GPUs it asks for, all at once.
    pub const fn gpus(&self) -> u16 {
        self.gpus
    }

    /// Its absolute deadline, if it has one.
    pub const fn deadline(&self) -> Option<TimeMs> {
        if self.status.has_deadline() {
            Some(TimeMs(self.deadline_ms))
        } else {
            None
        }
    }

    /// Its run time on an ideal placement, if the submitter declared it. Only *oracle* orders
    /// (SJF, SRTF) and the learned placer's observation read it; information-agnostic orders
    /// (LAS, TIAS) never do.
    pub const fn declared_length(&self) -> Option<DurationMs> {
        if self.status.has_declared_length() {
            Some(DurationMs(self.declared_length_ms))
        } else {
            None
        }
    }

    /// Declared length minus the time executed by `now`, for oracle SRTF; `None` if no
    /// length declared.
    pub fn declared_remaining_at(&self, now: TimeMs) -> Option<DurationMs> {
        self.declared_length()
            .map(|len| len.saturating_sub(self.executed_at(now)))
    }

    /// Where it is in its life (`Waiting`, `Running` or `Preempted` for a live job).
    pub const fn state(&self) -> JobState {
        match self.status.state() {
            Some(state) => state,
            // Unreachable: `status` is only built by `Status::new`, and a restored snapshot
            // is refused unless every job's status `is_valid`.
            None => JobState::Waiting,
        }
    }

    /// When it was submitted.
    pub const fn submitted_at(&self) -> TimeMs {
        self.submitted_at
    }

    /// Since when it has been queued (submission or last preemption); meaningful when queued.
    pub const fn queued_since(&self) -> TimeMs {
        self.since
    }

    /// Since when it has been running (its last start, or its last move to other GPUs);
    /// meaningful when running. The minimum run quantum counts from here.
    pub const fn running_since(&self) -> TimeMs {
        self.since
    }

    /// Whether it may be preempted once it runs.
    pub const fn preemption_class(&self) -> PreemptionClass {
        if self.status.has_flag(Status::NEVER_PREEMPT) {
            PreemptionClass::Never
        } else {
            PreemptionClass::Checkpointing
        }
    }

    /// Whether it runs inside the scheduler's minimum run quantum (started less than
    /// [`SchedulerConfig::min_run`](crate::SchedulerConfig::min_run) ago, as of the last
    /// scheduling pass).
    pub const fn in_quantum(&self) -> bool {
        self.status.has_flag(Status::IN_QUANTUM)
    }

    /// Whether it runs and may not be preempted for priority nor moved now: it is
    /// [`PreemptionClass::Never`] or inside its quantum. Such a job holds its GPUs until it
    /// finishes, its quantum ends or a GPU of it fails.
    pub const fn is_pinned(&self) -> bool {
        matches!(self.status.state(), Some(JobState::Running))
            && self
                .status
                .has_flag(Status::NEVER_PREEMPT | Status::IN_QUANTUM)
    }

    /// Wall time spent running by `now`, summed over all runs (`now` at or after the job's
    /// last state change; the scheduler passes its current time). O(1): the current run
    /// counts from its start, so no event walks the running jobs to credit them.
    #[cfg_attr(target_os = "none", inline(never))]
    pub const fn executed_at(&self, now: TimeMs) -> DurationMs {
        if matches!(self.status.state(), Some(JobState::Running)) {
            self.executed
                .saturating_add(now.saturating_since(self.since))
        } else {
            self.executed
        }
    }

    /// Attained service in GPU·ms by `now`: GPUs × time running (Tiresias's 2D attained
    /// service), kept across preemptions. `min(gpus × Σ runs, u64::MAX)`: a gang holds all
    /// its GPUs while it runs, and the executed time saturates only where the product does.
    pub const fn attained_gpu_ms_at(&self, now: TimeMs) -> u64 {
        self.executed_at(now).0.saturating_mul(self.gpus as u64)
    }

    /// Ends the current run at `now`, if it runs: its time joins the ended runs'. Every
    /// move out of `Running` (or onto other GPUs) goes through here first.
    fn end_run(&mut self, now: TimeMs) {
        self.executed = self.executed_at(now);
        self.since = now;
    }

    /// The record as a snapshot holds it: the current run's time credited up to `now`
    /// (what the job has executed by then), so the layout does not depend on how the core
    /// keeps the running time.
    #[cfg(feature = "snapshot")]
    pub(crate) const fn credited_to(&self, now: TimeMs) -> Self {
        let mut job = *self;
        job.executed = self.executed_at(now);
        job
    }

    /// Undoes [`credited_to`](Self::credited_to) on a decoded record. False, changing
    /// nothing, if it runs and its run starts after `now` or has lasted longer by `now` than
    /// the time it claims to have executed (no scheduler writes such a record: a job starts
    /// at an event, and `now` is the last event's time).
    #[cfg(feature = "snapshot")]
    pub(crate) fn uncredit(&mut self, now: TimeMs) -> bool {
        if !matches!(self.status.state(), Some(JobState::Running)) {
            return true;
        }
        if self.since > now {
            return false;
        }
        let run = now.saturating_since(self.since);
        match self.executed.0.checked_sub(run.0) {
            Some(before) => {
                self.executed = DurationMs(before);
                true
            }
            None => false,
        }
    }

    /// Moves it to `state`.
    pub(crate) fn set_state(&mut self, state: JobState) {
        self.status = self.status.with_state(state);
    }

    /// Puts it back in the queue at `now` (a preemption); its quantum, if any, ends.
    pub(crate) fn requeue(&mut self, now: TimeMs) {
        self.end_run(now);
        self.set_state(JobState::Preempted);
        self.status = self.status.with_flag(Status::IN_QUANTUM, false);
    }

    /// Starts (or restarts, or moves) it at `now`, inside a run quantum when `quantum`.
    pub(crate) fn start_at(&mut self, now: TimeMs, quantum: bool) {
        self.end_run(now);
        self.set_state(JobState::Running);
        self.status = self.status.with_flag(Status::IN_QUANTUM, quantum);
    }

    /// Marks it finished at `now` (it left the scheduler), its last run ended.
    pub(crate) fn finish_at(&mut self, now: TimeMs) {
        self.end_run(now);
        self.set_state(JobState::Finished);
    }

    /// Ends its run quantum (it may be preempted from now on, unless it is `Never`).
    pub(crate) fn end_quantum(&mut self) {
        self.status = self.status.with_flag(Status::IN_QUANTUM, false);
    }

    /// Whether its fields are ones the core could have built (a decoded snapshot's jobs are
    /// checked with it).
    pub(crate) const fn is_valid(&self) -> bool {
        self.status.is_valid()
            && (self.status.has_deadline() || self.deadline_ms == 0)
            && (self.status.has_declared_length() || self.declared_length_ms == 0)
    }

    /// Sets its executed time as every later read sees it (unit tests of the orders build
    /// jobs in any state): a running job is given no current run (its run clock is parked
    /// at the end of time), so set its state first.
    #[cfg(test)]
    pub(crate) fn set_executed(&mut self, executed: DurationMs) {
        self.executed = executed;
        if matches!(self.status.state(), Some(JobState::Running)) {
            self.since = TimeMs(u64::MAX);
        }
    }

    /// Sets when it was submitted and queued (unit tests).
    #[cfg(test)]
    pub(crate) fn set_times(&mut self, submitted_at: TimeMs, queued_since: TimeMs) {
        self.submitted_at = submitted_at;
        self.since = queued_since;
    }

    /// Marks a job-table slot free (its job has left).
    pub(crate) fn vacate(&mut self) {
        self.status = Status::VACANT;
    }

    /// Whether this is a free job-table slot rather than a live job.
    pub(crate) const fn is_vacant(&self) -> bool {
        self.status.0 == Status::VACANT.0
    }
}

/// The live jobs of a scheduler ([`Scheduler::jobs`](crate::Scheduler::jobs)), in slot order:
/// deterministic, not the submission order.
#[derive(Clone, Debug)]
pub struct LiveJobs<'a> {
    slots: core::slice::Iter<'a, Job>,
    left: usize,
}

impl<'a> LiveJobs<'a> {
    pub(crate) fn new(slots: &'a [Job], live: usize) -> Self {
        Self {
            slots: slots.iter(),
            left: live,
        }
    }
}

impl<'a> Iterator for LiveJobs<'a> {
    type Item = &'a Job;

    fn next(&mut self) -> Option<&'a Job> {
        if self.left == 0 {
            return None;
        }
        let job = self.slots.find(|j| !j.is_vacant())?;
        self.left -= 1;
        Some(job)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for LiveJobs<'_> {}

impl LiveJobs<'_> {
    /// No job is live.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }
}
