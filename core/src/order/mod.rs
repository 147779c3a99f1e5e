//! Job order: the extension point that decides which queued job runs next.
//!
//! The scheduler asks the order for a [`PriorityKey`] per live job and runs jobs in ascending
//! `(key, id)` order, so every order is total and deterministic. Orders are statically
//! dispatched: `Scheduler<O: JobOrder, ..>`.

mod edf;
mod fifo;
mod gittins;
mod las;
mod sjf;
mod sketch;
mod tias;
mod tiresias_compat;

pub use edf::Edf;
pub use fifo::Fifo;
pub use gittins::{
    GittinsTable, LOG2_ONE, SIZE_BINS, SIZE_EDGES_GPU_MS, SIZE_MIDDLES_GPU_MS, SizeHistogram,
    SizeSketch, log2_q8, size_bin,
};
pub use las::{Las, LasConfig, LasConfigError, MAX_LAS_THRESHOLDS};
pub use sjf::{LengthMetric, Sjf, Srtf};
pub use sketch::{SHARE_BUCKETS, SHARE_SHIFT, WHOLE_WINDOW, WindowShareSketch};
pub use tias::{
    DeadlineSafety, HopelessPolicy, RelaxedDeadlinePlacement, Standing, Tias, TiasConfig,
};
pub use tiresias_compat::{CompatPolicy, TiresiasCompat};

use crate::event::RejectReason;
use crate::job::Job;
use crate::time::TimeMs;
use serde::{Deserialize, Serialize};

/// A sort key; smaller runs first. The job id is appended by the scheduler as the final tie
/// break, so two jobs never compare equal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PriorityKey {
    /// Coarse class (e.g. a 2D-LAS queue index); compared first.
    pub class: u32,
    /// Main value inside the class (e.g. an arrival time or a scaled urgency).
    pub primary: i64,
    /// Second value inside the class.
    pub secondary: i64,
}

/// What the scheduler does when the best queued job does not fit in the free GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeadOfLine {
    /// Wait for it: no later job may start (strict FIFO, as Tiresias's `fifo`).
    Block,
    /// Skip it and try later jobs that fit (backfilling, as Tiresias's other policies).
    Skip,
    /// Reserve GPUs for it and backfill around them (EASY backfill, as Slurm's backfill
    /// gives its top job a reservation): the highest-ranked queued job that fits the
    /// healthy cluster but not the GPUs left (or a running job the pass preempts, if it
    /// ranks higher) is the *head*; it is given the GPU set that
    /// needs the fewest running jobs to end ([`Scheduler::reservation`](crate::Scheduler::reservation)),
    /// and later jobs start on free GPUs outside that set, or inside it only when their
    /// declared length ([`JobSpec::declared_length`](crate::JobSpec::declared_length), for
    /// Slurm its time limit) ends by the time the set drains by the declared lengths of
    /// the jobs holding it; so the later jobs do not delay the head. Jobs ranked after the
    /// head are not started otherwise, and (when the order preempts) are preempted only
    /// where jobs ranked ahead of the head need their GPUs, never for the head: the whole
    /// pass up to the head is decided as under `Block`. Without declared lengths a free GPU of the set idles until
    /// the head takes it: the price of the head's start not being delayed. Never the
    /// default of an order: a caller opts in through
    /// [`SchedulerConfig::head_of_line`](crate::SchedulerConfig::head_of_line). With the
    /// `reserve` feature (on by default).
    #[cfg(feature = "reserve")]
    Reserve,
}

/// Whether a running job may be stopped for a job of higher priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Preemption {
    /// Running jobs keep their GPUs until they finish.
    Off,
    /// Running jobs outside the current top-priority set are preempted (job-level,
    /// all-or-nothing) and requeued with their attained service; except pinned ones
    /// ([`Job::is_pinned`]: preemption class
    /// [`Never`](crate::job::PreemptionClass::Never), or run for less than the scheduler's
    /// minimum run quantum since their last start), which keep their GPUs whatever their
    /// key, so the top-priority set is chosen from the GPUs they leave.
    On,
}

/// When an order's keys change, which decides how the scheduler keeps its ranking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyChanges {
    /// `key(job, now)` is the same for a job all its life (it reads only the spec and
    /// `submitted_at`): computed once, at submission (FIFO, SJF, SRTF, EDF).
    Never,
    /// Keys change only when the job changes state (starts, is preempted) and at the times
    /// [`JobOrder::next_review`] announces, or for every job when [`JobOrder::epoch`]
    /// changes. The scheduler re-keys a job only then, so an event costs O(log J) per key
    /// that changes (LAS, TIAS). The contract, for a job refreshed at `t0` and not changed
    /// by an event since, and `t` before `next_review(job, t0)` (and the same epoch):
    /// `refresh(job, t)` changes nothing; `key`, `reject` and `next_review` at `t` give what
    /// they gave at `t0`; and a state change alone (a start, a preemption) changes neither
    /// what `refresh` makes of the job nor its `key` at the moment it happens, only its
    /// `next_review`: the scheduler then arms the review and calls nothing else, unless
    /// [`JobOrder::state_change_rekeys`] says this change does move them (TIAS: a deadline
    /// job preempted past the point where waiting makes it hopeless). A test checks each
    /// order against [`KeyChanges::EveryPass`].
    AtReview,
    /// Any key may change at any pass: every job is refreshed and re-keyed on every pass,
    /// O(J log J) per event (always correct; the default, and the Tiresias-simulator copies
    /// that restamp list positions after every pass).
    EveryPass,
}

/// Which optional [`JobOrder`] hooks an order really uses, so the scheduler can skip per-job
/// calls that would do nothing on a long queue. [`OrderHooks::ALL`] (every hook called,
/// keys recomputed every pass) is always correct and is the default; an order that claims
/// less than it does gets wrong decisions, so claim only what the code plainly shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderHooks {
    /// [`JobOrder::refresh`] changes something (else it is not called).
    pub refresh: bool,
    /// [`JobOrder::reject`] may return a reason (else it is not called).
    pub reject: bool,
    /// [`JobOrder::after_pass`] changes something (else it is not called). Only called under
    /// [`KeyChanges::EveryPass`]: what it changes would not be seen otherwise.
    pub after_pass: bool,
    /// [`JobOrder::next_review`] may return a time (else it is not called).
    pub next_review: bool,
    /// When keys change.
    pub keys: KeyChanges,
}

impl OrderHooks {
    /// Every hook called and keys recomputed every pass: always correct.
    pub const ALL: Self = Self {
        refresh: true,
        reject: true,
        after_pass: true,
        next_review: true,
        keys: KeyChanges::EveryPass,
    };
    /// Only `key`, and it never changes for a job (FIFO, SJF, EDF).
    pub const FIXED_KEY_ONLY: Self = Self {
        refresh: false,
        reject: false,
        after_pass: false,
        next_review: false,
        keys: KeyChanges::Never,
    };
}

/// What a change of [`JobOrder::epoch`] does to one job that follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochEffect {
    /// Its key, its refresh and its review may all have moved: re-key it.
    Rekey,
    /// Only a review at this time is added (`None`: nothing); key and refresh stay. The
    /// scheduler keeps the job's review if it is earlier: a review that comes too early
    /// re-keys the job then and finds its key unchanged, so it costs a re-key, later and in
    /// another event, and is never wrong.
    Review(Option<TimeMs>),
}

/// The job-order extension point.
pub trait JobOrder {
    /// A short name for logs and tables.
    fn name(&self) -> &'static str;

    /// Head-of-line behaviour this order is defined with.
    fn head_of_line(&self) -> HeadOfLine {
        HeadOfLine::Skip
    }

    /// Whether this order preempts. Keys rank jobs; they never override a job's
    /// [`PreemptionClass`](crate::job::PreemptionClass) or the scheduler's minimum run
    /// quantum ([`SchedulerConfig::min_run`](crate::SchedulerConfig::min_run)): a key that
    /// ranks a pinned job low leaves it running.
    fn preemption(&self) -> Preemption {
        Preemption::Off
    }

    /// Whether keys change with time alone at moments [`next_review`](Self::next_review)
    /// does not announce, so the caller should send periodic
    /// [`Event::Tick`](crate::Event::Tick)s while jobs are live. Orders whose keys change
    /// only on events and at their review times (LAS, TIAS) return false and save those
    /// calls.
    fn time_driven(&self) -> bool {
        true
    }

    /// Updates order-owned job fields ([`Job::order_queue`], [`Job::order_mark`],
    /// [`Job::order_base_gpu_ms`]) before the job is keyed: demotion, promotion. Called for
    /// every live job on every pass under [`KeyChanges::EveryPass`]; under
    /// [`KeyChanges::AtReview`] when the job is submitted or its review time comes (a state
    /// change alone must change nothing here).
    fn refresh(&mut self, _job: &mut Job, _now: TimeMs) {}

    /// Which of the optional hooks below this order uses (a speed hint; see
    /// [`OrderHooks`]). Default: [`OrderHooks::ALL`]. O(1).
    fn hooks(&self) -> OrderHooks {
        OrderHooks::ALL
    }

    /// The job's sort key at `now`.
    fn key(&self, job: &Job, now: TimeMs) -> PriorityKey;

    /// Whether to drop a queued job now (e.g. a deadline job that can no longer finish in
    /// time, under a policy that rejects such jobs). Default: never.
    fn reject(&self, _job: &Job, _now: TimeMs) -> Option<RejectReason> {
        None
    }

    /// Called once per live job after a *complete* scheduling pass, in the pass's rank
    /// order (best first), with the job's new state. Orders that keep a list position from
    /// pass to pass (the Tiresias compatibility order: stable sorts, running jobs moved
    /// ahead of pending ones) stamp it here. Default: nothing. O(1) per job.
    fn after_pass(&mut self, _job: &mut Job, _now: TimeMs) {}

    /// A job was admitted (before it is first keyed): orders that learn from what is
    /// submitted (TIAS: a deadline job's window as a provisional size sample) note it here.
    /// Default: nothing.
    fn on_submitted(&mut self, _job: &Job, _now: TimeMs) {}

    /// A job finished: orders that learn online (TIAS) update their statistics here.
    fn on_finished(&mut self, _job: &Job, _now: TimeMs) {}

    /// A job left without finishing (cancelled, or rejected by [`reject`](Self::reject)):
    /// orders that keep totals over live jobs (TIAS's critical GPU demand) take it out.
    /// Not called for finished jobs ([`on_finished`](Self::on_finished) is). O(1).
    fn on_removed(&mut self, _job: &Job, _now: TimeMs) {}

    /// The number of healthy GPUs: at construction (`now` = 0) and after every `GpuDown` or
    /// `GpuUp` that changes it, before the event's preemption. Orders that weigh their
    /// jobs' demand against the cluster (TIAS's big gangs) keep it; it is part of the
    /// order's state, so a restored snapshot has it. Default: ignored. O(1).
    fn on_capacity(&mut self, _healthy_gpus: u32, _now: TimeMs) {}

    /// Called at the start of every scheduling pass, before any key is read: an order
    /// publishes what it learned since the last pass (TIAS's new index table) by advancing
    /// its [`epoch`](Self::epoch), once. Default: nothing. O(1).
    fn advance(&mut self, _now: TimeMs) {}

    /// A counter that changes whenever something the order learned changes keys or review
    /// times of live jobs it has already given (TIAS re-publishing its estimate): the
    /// scheduler then recomputes them all, once. Orders whose keys depend only on the job
    /// return a constant (default 0). O(1).
    fn epoch(&self) -> u32 {
        0
    }

    /// Whether a change of [`epoch`](Self::epoch) can change this job's key, its review
    /// time or what [`refresh`](Self::refresh) makes of it. When the epoch moves the
    /// scheduler re-keys only the jobs for which this is true; for the others the key and
    /// review time they have stay exact. Default: true (every job). O(1).
    fn follows_epoch(&self, _job: &Job) -> bool {
        true
    }

    /// What the last change of [`epoch`](Self::epoch) does to a job that
    /// [`follows_epoch`](Self::follows_epoch): by default its key, `refresh` and review may
    /// all move, so the scheduler re-keys it. An order whose change leaves the key and what
    /// `refresh` makes of the job as they are and only adds a review returns
    /// [`EpochEffect::Review`] (TIAS's new index table, which reaches each job at its
    /// own time), and the scheduler only arms that review if it is earlier than the one the
    /// job has: a timer move instead of a re-key (also TIAS's `ρ` moving the time a
    /// relaxed job turns critical). O(1).
    fn epoch_effect(&self, _job: &Job, _now: TimeMs) -> EpochEffect {
        EpochEffect::Rekey
    }

    /// The most jobs one scheduling pass may touch, so that no event's cost grows with the
    /// number of live jobs: [`KeyChanges::AtReview`] orders visit at most this many in the
    /// walk of an [`epoch`](Self::epoch) change or re-key them at their review (when a
    /// pass reaches it, it decides nothing), and every order's pass then makes at most
    /// this many decisions (a gang's consolidation counts its moves: a pass without room
    /// for the most it may need stops before the gang, unless it has decided nothing yet).
    /// A pass cut short returns `more_pending`; the follow-up ticks at the same instant go
    /// on where it stopped, and the decisions are those of one pass that touched them all
    /// (but for a gang's consolidation, which moves jobs only if the buffer has room for
    /// every move, and may find more room at a follow-up tick; and for a rejection that a
    /// preemption of the cut pass made due, which comes at the follow-up tick instead of at
    /// the next event). Default: no limit. O(1).
    fn jobs_per_pass(&self) -> usize {
        usize::MAX
    }

    /// [`KeyChanges::AtReview`]: the scheduler has applied the last change of the
    /// [`epoch`](Self::epoch) to every live job. Until then an order that changes its epoch
    /// again must keep the earlier change in what [`epoch_effect`](Self::epoch_effect)
    /// reports (the scheduler restarts its walk, and the jobs it had not reached still need
    /// the earlier change). Default: nothing. O(1).
    fn epoch_walked(&mut self) {}

    /// [`KeyChanges::AtReview`]: whether the state change the job has just had (it started
    /// or was preempted; `job` is in its new state) moves what [`refresh`](Self::refresh)
    /// makes of it or its [`key`](Self::key) at `now`, so the scheduler re-keys it at once
    /// instead of only arming its review. An order whose standing reads the state (TIAS: a
    /// running deadline job is never hopeless, a waiting one is once too little time is
    /// left) says so here; a key left stale until the next review would rank the job by a
    /// standing it no longer has in the very pass that preempted it. Default: false. O(1).
    fn state_change_rekeys(&self, _job: &Job, _now: TimeMs) -> bool {
        false
    }

    /// The earliest time after `now` at which this job's key or queue may change with no
    /// event in between (a 2D-LAS demotion threshold crossed while running, a starvation
    /// promotion, a deadline job turning urgent or hopeless), so a simulator can send
    /// [`Event::Tick`](crate::Event::Tick) then. `None`: no time-driven change (default).
    /// A hint only: ticking earlier or later never breaks anything, it only delays the
    /// change. O(1) or O(log) per job.
    fn next_review(&self, _job: &Job, _now: TimeMs) -> Option<TimeMs> {
        None
    }

    /// Whether the scheduling pass may move running single-GPU jobs to other free GPUs so
    /// that a gang it starts gets one machine instead of GPUs spread over several (a spread
    /// gang runs slower; a single-GPU job runs as fast anywhere). Default: false, so an
    /// order's decisions do not change unless it asks. O(1).
    fn consolidates_gangs(&self) -> bool {
        false
    }
}

/// A millisecond count as a key component: the order-preserving map of `u64` onto `i64`
/// (`0 → i64::MIN`, `u64::MAX → i64::MAX`), so times at or beyond 2^63 ms still sort by time
/// and never tie.
pub(crate) const fn key_ms(ms: u64) -> i64 {
    (ms ^ (1 << 63)) as i64
}
