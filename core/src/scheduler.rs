//! The scheduler: the one entry point, [`Scheduler::handle`], that firmware, the host
//! simulator and replay tests all drive.
//!
//! Each call validates the event (an error changes nothing), applies it, then runs one
//! scheduling pass: bring the keys that
//! changed up to date, choose in rank order the jobs that should hold GPUs, preempt running
//! jobs outside that set, and place queued jobs inside it one GPU at a time through the
//! [`Placer`].
//!
//! # Cost per event
//! The ranking is an ordered index (module `rank`) that changes only when a key
//! does. How keys change is the order's [`KeyChanges`]:
//! - [`KeyChanges::Never`] (FIFO, SJF, SRTF, EDF): a key is computed once, at submission.
//! - [`KeyChanges::AtReview`] (LAS, TIAS): a job is re-keyed when its state changes and at
//!   the time the order announced ([`JobOrder::next_review`]), kept in a timer heap
//!   (module `timers`); an order that learned something re-keys every job once
//!   ([`JobOrder::epoch`]).
//! - [`KeyChanges::EveryPass`] (the Tiresias-simulator copies, and any order by default):
//!   every job is refreshed and re-keyed on every pass. O(J log J) per event.
//!
//! With the first two, an event costs O(log J) amortised per key that changes, plus the
//! pass, which visits only the jobs it decides about plus O(log J) nodes per decision,
//! plus O(G) per GPU set freed or placed: nothing in it grows with the number of *waiting*
//! jobs. No event walks the running jobs to credit their service: a job keeps the time of
//! its ended runs and the start of its current one, and its service is read at a time
//! ([`Job::executed_at`]). `next_review` is O(1). The job table (module `job_table`) finds a
//! job by id and removes it in O(log J).

use crate::avl::NIL;
use crate::error::SchedError;
use crate::event::{Decision, Event, PreemptReason};
use crate::ids::{GpuId, JobId, MachineId};
use crate::job::{Job, JobSpec, JobState, LiveJobs};
use crate::job_table::{JobTable, Slot};
use crate::order::{EpochEffect, HeadOfLine, JobOrder, KeyChanges, OrderHooks, Preemption};
use crate::placement::{GpuMask, GpuSet, PlacementView, Placer};
use crate::rank::{PlanBudget, RankIndex};
use crate::sort::heap_sort;
use crate::time::{DurationMs, TimeMs};
use crate::timers::Timers;
use crate::topology::Topology;
use core::mem::MaybeUninit;
use serde::{Deserialize, Serialize};

/// How the scheduling pass treats the queue head and running jobs. Defaults come from the
/// order ([`SchedulerConfig::for_order`]); a caller may override them, e.g. to run LAS
/// without preemption.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerConfig {
    /// Block or skip at a queue head that does not fit.
    pub head_of_line: HeadOfLine,
    /// Whether running jobs may be preempted for higher-priority ones.
    pub preemption: Preemption,
    /// Whether a deadline that the job's declared length cannot meet is refused at submit.
    pub deadline_admission: DeadlineAdmission,
    /// The minimum run quantum: a job that has run less than this since its last (re)start
    /// is not preempted for priority nor moved ([`Job::in_quantum`]), so a preemption that
    /// costs a restart is paid at most once per quantum of work. Zero (the default): no
    /// quantum, the decisions of a scheduler without one. A GPU failure stops a job inside
    /// its quantum all the same.
    pub min_run: DurationMs,
}

/// What `handle` does with a submitted deadline that cannot be met even if the job started
/// now and ran at full speed (`now + declared_length > deadline`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeadlineAdmission {
    /// Accept it: the scheduler is information-agnostic and does not trust declared lengths
    /// (TIAS decides online whether a deadline is hopeless). The default.
    Accept,
    /// Refuse it with [`SchedError::DeadlineUnreachable`], so the submitter learns at once.
    RefuseUnreachable,
}

impl SchedulerConfig {
    /// The behaviour the order is defined with; deadlines are admitted as given.
    pub fn for_order(order: &impl JobOrder) -> Self {
        Self {
            head_of_line: order.head_of_line(),
            preemption: order.preemption(),
            deadline_admission: DeadlineAdmission::Accept,
            min_run: DurationMs::ZERO,
        }
    }

    /// This configuration with the minimum run quantum `min_run` (see
    /// [`min_run`](Self::min_run)).
    pub const fn with_min_run(self, min_run: DurationMs) -> Self {
        Self { min_run, ..self }
    }

    /// This configuration with the head-of-line behaviour `head_of_line` (e.g.
    /// [`HeadOfLine::Reserve`] for a reservation for the queue head).
    pub const fn with_head_of_line(self, head_of_line: HeadOfLine) -> Self {
        Self {
            head_of_line,
            ..self
        }
    }
}

/// What a GPU holds, for [`Scheduler::consolidate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GpuState {
    Free,
    /// Held by a running single-GPU job that is not pinned ([`Job::is_pinned`]), which may
    /// move.
    Single,
    /// Failed, held by a gang, or held by a pinned job.
    Other,
}

/// What one [`Scheduler::handle`] call produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandleOutcome {
    /// Decisions appended to the caller's buffer.
    pub decisions: usize,
    /// The pass did not end: the buffer filled, or the pass touched the most jobs the order
    /// allows one pass ([`JobOrder::jobs_per_pass`]: in re-keys before every key due was up
    /// to date, or in decisions), or (under [`HeadOfLine::Reserve`]) its decisions re-ranked
    /// a job, so the queue head to reserve for is found by the next pass.
    /// Call `handle(now, Event::Tick, ..)` again (with room in the buffer) to get the rest.
    /// The state is consistent with the decisions emitted.
    pub more_pending: bool,
}

/// A broken invariant, found by [`Scheduler::check_invariants`] (tests, fuzzing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvariantViolation {
    /// A GPU is owned by a job that is not live and running.
    GpuOwnedByNonRunningJob(GpuId),
    /// A failed GPU is still owned.
    UnhealthyGpuOwned(GpuId),
    /// A running job holds a different number of GPUs than it asked for.
    WrongGangSize(JobId),
    /// A GPU beyond the topology (index ≥ its GPU count, < `G`) is owned or marked healthy.
    GpuOutsideTopology(GpuId),
    /// A live job is in a final state.
    FinalStateInTable(JobId),
    /// Two live jobs share an id.
    DuplicateId(JobId),
    /// A restored running job's current run starts after the snapshot's time, or has
    /// lasted longer by then than the time the job claims to have executed.
    RunOutsideTheClock(JobId),
    /// The scheduler's own indexes (id column, running list, ranking, GPU counters) disagree
    /// with the job table or the GPU arrays; the job named is the first found out of step
    /// (`JobId(u32::MAX)` for a counter).
    IndexOutOfSync(JobId),
}

/// The scheduling core for a cluster of up to `G` GPUs, `J` live jobs and gangs of up to
/// `GANG` GPUs. All memory is inline; nothing allocates. On a host, build it inside a thread
/// with a large stack or in a `Box` (its size is roughly `215·J + 22·G` bytes: per job 140
/// for the job and its table entry, 44 for its ranking entry, 12 for its timer, 2 for a
/// pending rejection; 7 MB at the host's J = 32,768, G = 2,048).
pub struct Scheduler<O, P, const G: usize, const J: usize, const GANG: usize> {
    topology: Topology<G>,
    order: O,
    placer: P,
    config: SchedulerConfig,
    /// Live jobs, each with a stable slot.
    table: JobTable<J>,
    /// Every live job by `(key, id)`.
    rank: RankIndex<J>,
    /// When each job's key changes next ([`KeyChanges::AtReview`] orders).
    timers: Timers<J>,
    /// Slots of the running jobs, in no particular order (each holds at least one GPU, so
    /// there are at most `G`).
    running: heapless::Vec<Slot, G>,
    /// By GPU: the slot of the job holding it (`NIL`: free). Slots, not ids: 2 bytes a GPU.
    owner: [Slot; G],
    healthy: [bool; G],
    /// Healthy GPUs (`healthy` set within the topology).
    healthy_count: usize,
    /// GPUs with an owner.
    busy_count: usize,
    /// GPUs held by pinned jobs ([`Job::is_pinned`]), which the planning pass leaves out
    /// of its budget. Derived (recomputed on restore).
    pinned_count: usize,
    /// The earliest end of a run quantum among the running jobs inside one (`None`: no job
    /// is). Derived (recomputed on restore).
    quantum_end: Option<TimeMs>,
    last_now: TimeMs,
    /// The order's [`JobOrder::epoch`] the keys were computed under (moved once the walk
    /// of the epoch's change has reached every live job).
    epoch: u32,
    /// Whether an epoch walk is under way.
    walking: bool,
    /// The next job the epoch walk under way reaches (`NIL`: it has reached every job; a
    /// walk starts at the oldest job). The walk goes in slices of [`JobOrder::jobs_per_pass`] jobs, one per
    /// pass, the passes after the first being the follow-up ticks `more_pending` asks for.
    /// In a snapshot, so a restored scheduler goes on where the walk stopped.
    walk_next: Slot,
    /// The order's epoch the walk under way serves: a newer one restarts it.
    walk_epoch: u32,
    /// Queued jobs the order asked to reject since the last pass ([`KeyChanges::AtReview`]).
    reject_due: heapless::Vec<Slot, J>,
    placer_faults: u32,
    /// The budget of the last plan, if it decided nothing. A plan reads only the ranking's
    /// order, the jobs' roles and its budget, so while the ranking is unchanged since
    /// ([`RankIndex::unchanged`]: keys moved within their gaps, as most of a TIAS job's
    /// reviews move it, do not count) the next plan with this budget decides nothing
    /// again and is skipped. Derived: `None` after a restore.
    settled_budget: Option<PlanBudget>,
}

impl<O, P, const G: usize, const J: usize, const GANG: usize> Scheduler<O, P, G, J, GANG>
where
    O: JobOrder,
    P: Placer<G>,
{
    /// Slots are `u16` and `u16::MAX` means "none".
    const CAPACITIES_FIT: () = assert!(J > 0 && J < u16::MAX as usize && GANG > 0);

    /// A scheduler over `topology` with every GPU healthy and free, at time 0, using the
    /// order's own head-of-line and preemption behaviour.
    pub fn new(topology: Topology<G>, order: O, placer: P) -> Self {
        let config = SchedulerConfig::for_order(&order);
        Self::with_config(topology, order, placer, config)
    }

    /// Builds a scheduler in `slot`, storage the caller owns (a `static`'s, on a device:
    /// `static_cell::StaticCell::uninit()` or `cortex_m::singleton!` give a
    /// `&'static mut MaybeUninit<_>` without `unsafe`), and returns it there. Construction
    /// writes the state in place: at most 2,292 B of stack on the Cortex-M4F for the
    /// [`FirmwareScheduler`](crate::FirmwareScheduler) (`construct_stack_bytes` in
    /// `scripts/firmware-check.sh --ci`), where a scheduler returned by value needs its whole
    /// size (32 KB) in the caller's frame. `Scheduler::new` cannot be a
    /// `const fn` (the order's capacity hook is a trait method), so this is how a
    /// scheduler lives in a `static`.
    #[inline]
    pub fn init_in_place(
        slot: &mut MaybeUninit<Self>,
        topology: Topology<G>,
        order: O,
        placer: P,
        config: SchedulerConfig,
    ) -> &mut Self {
        slot.write(Self::with_config(topology, order, placer, config))
    }

    /// As [`new`](Self::new) with an explicit configuration.
    #[inline]
    pub fn with_config(
        topology: Topology<G>,
        mut order: O,
        placer: P,
        config: SchedulerConfig,
    ) -> Self {
        let () = Self::CAPACITIES_FIT;
        let mut healthy = [false; G];
        let healthy_count = topology.gpu_count().min(G);
        for h in healthy.iter_mut().take(healthy_count) {
            *h = true;
        }
        order.on_capacity(gpu_count_u32(healthy_count), TimeMs(0));
        let epoch = order.epoch();
        Self {
            topology,
            order,
            placer,
            config,
            healthy_count,
            table: JobTable::new(),
            rank: RankIndex::new(),
            timers: Timers::new(),
            running: heapless::Vec::new(),
            owner: [NIL; G],
            healthy,
            busy_count: 0,
            pinned_count: 0,
            quantum_end: None,
            last_now: TimeMs(0),
            epoch,
            walking: false,
            walk_next: NIL,
            walk_epoch: epoch,
            reject_due: heapless::Vec::new(),
            placer_faults: 0,
            settled_budget: None,
        }
    }

    /// Handles one event at time `now` and appends the resulting decisions to `out`.
    ///
    /// Errors leave the state unchanged. `out` must have at least one free slot.
    pub fn handle<const D: usize>(
        &mut self,
        now: TimeMs,
        event: Event,
        out: &mut heapless::Vec<Decision<GANG>, D>,
    ) -> Result<HandleOutcome, SchedError> {
        let before = self.admit(now, event, out)?;
        let more_pending = self.schedule(now, out);
        Ok(HandleOutcome {
            decisions: out.len() - before,
            more_pending,
        })
    }

    /// As [`handle`](Self::handle), but runs **no** scheduling pass: the event is validated,
    /// the clock moved and the event applied (a `GpuDown` still emits its `Preempt`); the
    /// next `handle` call at the same `now` (e.g. with [`Event::Tick`]) schedules. Lets a
    /// caller fold simultaneous events into one pass, as the Tiresias simulator does (its
    /// arrivals, completions and timers at one second share a single pass). Until that pass,
    /// [`next_review`](Self::next_review) may name a time that is already due.
    pub fn handle_deferred<const D: usize>(
        &mut self,
        now: TimeMs,
        event: Event,
        out: &mut heapless::Vec<Decision<GANG>, D>,
    ) -> Result<HandleOutcome, SchedError> {
        let before = self.admit(now, event, out)?;
        Ok(HandleOutcome {
            decisions: out.len() - before,
            more_pending: false,
        })
    }

    /// Checks time and buffer, validates, moves the clock and applies the event. Returns
    /// the length of `out` before the event's decisions.
    fn admit<const D: usize>(
        &mut self,
        now: TimeMs,
        event: Event,
        out: &mut heapless::Vec<Decision<GANG>, D>,
    ) -> Result<usize, SchedError> {
        if now < self.last_now {
            return Err(SchedError::TimeWentBackwards {
                now,
                last: self.last_now,
            });
        }
        if out.is_full() {
            return Err(SchedError::DecisionBufferFull);
        }
        let named = self.validate(now, &event)?;
        let before = out.len();
        self.last_now = now;
        self.apply(now, event, named, out);
        Ok(before)
    }

    /// Checks the event against the state. Returns the slot of the job a `Finish` or
    /// `Cancel` names, so `apply` need not look it up again. O(log J).
    fn validate(&self, now: TimeMs, event: &Event) -> Result<Option<Slot>, SchedError> {
        match *event {
            Event::Submit(spec) => self.validate_submit(now, spec).map(|()| None),
            Event::Finish(id) => match self.table.find(id) {
                None => Err(SchedError::UnknownJob(id)),
                Some(s) if self.table.get(s).map(|j| j.state()) != Some(JobState::Running) => {
                    Err(SchedError::JobNotRunning(id))
                }
                Some(s) => Ok(Some(s)),
            },
            Event::Cancel(id) => self
                .table
                .find(id)
                .map(Some)
                .ok_or(SchedError::UnknownJob(id)),
            Event::GpuDown(gpu) | Event::GpuUp(gpu) if !self.topology.contains(gpu) => {
                Err(SchedError::UnknownGpu(gpu))
            }
            Event::GpuDown(_) | Event::GpuUp(_) | Event::Tick => Ok(None),
        }
    }

    fn validate_submit(&self, now: TimeMs, spec: JobSpec) -> Result<(), SchedError> {
        let id = spec.id;
        if spec.gpus == 0 {
            return Err(SchedError::ZeroGpuRequest(id));
        }
        if self.table.find(id).is_some() {
            return Err(SchedError::DuplicateJob(id));
        }
        if usize::from(spec.gpus) > GANG {
            return Err(SchedError::GangTooLarge {
                job: id,
                requested: spec.gpus,
                capacity: GANG,
            });
        }
        let healthy = self.healthy_gpu_count() as u16;
        if spec.gpus > healthy {
            return Err(SchedError::RequestExceedsCluster {
                job: id,
                requested: spec.gpus,
                healthy,
            });
        }
        if let Some(deadline) = spec.deadline
            && deadline <= now
        {
            return Err(SchedError::DeadlineAlreadyPassed {
                job: id,
                deadline,
                now,
            });
        }
        if let (Some(deadline), Some(length), DeadlineAdmission::RefuseUnreachable) = (
            spec.deadline,
            spec.declared_length,
            self.config.deadline_admission,
        ) {
            let earliest_finish = now.saturating_add(length);
            if earliest_finish > deadline {
                return Err(SchedError::DeadlineUnreachable {
                    job: id,
                    deadline,
                    earliest_finish,
                });
            }
        }
        if self.table.is_full() {
            return Err(SchedError::JobTableFull(spec));
        }
        Ok(())
    }

    fn apply<const D: usize>(
        &mut self,
        now: TimeMs,
        event: Event,
        named: Option<Slot>,
        out: &mut heapless::Vec<Decision<GANG>, D>,
    ) {
        match event {
            Event::Submit(spec) => self.insert(Job::submitted(spec, now), now),
            Event::Finish(_) => {
                if let Some(slot) = named {
                    self.unpin(slot);
                    self.release(slot);
                    if let Some(mut job) = self.remove(slot) {
                        job.finish_at(now);
                        self.order.on_finished(&job, now);
                    }
                }
            }
            Event::Cancel(_) => {
                if let Some(slot) = named {
                    self.unpin(slot);
                    self.release(slot);
                    if let Some(job) = self.remove(slot) {
                        self.order.on_removed(&job, now);
                    }
                }
            }
            Event::GpuDown(gpu) => {
                // `validate` checked the GPU is in the topology (so below `G`); `get` keeps
                // the event path free of bounds-check panics all the same.
                let g = gpu.index();
                if let Some(healthy) = self.healthy.get_mut(g)
                    && *healthy
                {
                    *healthy = false;
                    self.healthy_count = self.healthy_count.saturating_sub(1);
                    self.order
                        .on_capacity(gpu_count_u32(self.healthy_count), now);
                }
                let slot = self.owner.get(g).copied().unwrap_or(NIL);
                if let Some(id) = self.table.get(slot).map(Job::id) {
                    self.preempt(slot, now);
                    self.state_changed(slot, now);
                    // `handle` checked that `out` has a free slot, and this is the first push.
                    let _ = out.push(Decision::Preempt {
                        job: id,
                        reason: PreemptReason::GpuFailed(gpu),
                    });
                }
            }
            Event::GpuUp(gpu) => {
                if let Some(healthy) = self.healthy.get_mut(gpu.index())
                    && !*healthy
                {
                    *healthy = true;
                    self.healthy_count = self.healthy_count.saturating_add(1);
                    self.order
                        .on_capacity(gpu_count_u32(self.healthy_count), now);
                }
            }
            Event::Tick => {}
        }
    }

    /// One scheduling pass. Returns true when `out` filled before the pass ended.
    fn schedule<const D: usize>(
        &mut self,
        now: TimeMs,
        out: &mut heapless::Vec<Decision<GANG>, D>,
    ) -> bool {
        self.order.advance(now);
        let hooks = self.order.hooks();
        match hooks.keys {
            KeyChanges::Never => {}
            KeyChanges::AtReview => {
                if !self.rekey_due(now, hooks) {
                    // The pass's job budget is spent: nothing is decided until every key
                    // due now is up to date, at the follow-up ticks of this instant.
                    return true;
                }
            }
            KeyChanges::EveryPass => self.rekey_all(now, hooks),
        }
        // The decisions have a budget of their own, as large: each touches a job. (Not
        // what the re-keys left of it: the passes of an instant would then be cut at
        // points that depend on how many reviews came due, which an order's hooks may
        // change without changing a decision.)
        let stop_at = out.len().saturating_add(self.order.jobs_per_pass().max(1));
        if hooks.reject && self.reject_queued(now, hooks, out, stop_at) {
            return true;
        }
        self.end_quanta(now);
        if self.start_and_preempt(now, out, stop_at) {
            return true;
        }
        if hooks.after_pass && hooks.keys == KeyChanges::EveryPass {
            let mut at = self.rank.first();
            for _ in 0..self.rank.len() {
                if let Some(job) = self.table.get_mut(at) {
                    self.order.after_pass(job, now);
                }
                at = self.rank.next(at);
            }
        }
        false
    }

    /// [`KeyChanges::AtReview`]: walks the live jobs once if the order's epoch moved (each
    /// job that follows it is re-keyed or given a review), then re-keys the jobs whose
    /// review time has come. Touches at most [`JobOrder::jobs_per_pass`] jobs; returns
    /// false if it stopped there, with the rest left for the next pass at this instant (the
    /// walk's cursor and the timers keep the place). O(log J) per job touched.
    fn rekey_due(&mut self, now: TimeMs, hooks: OrderHooks) -> bool {
        let mut budget = self.order.jobs_per_pass().max(1);
        let epoch = self.order.epoch();
        if epoch != self.epoch {
            if !self.walking || self.walk_epoch != epoch {
                // A walk starts at the oldest job; a newer epoch restarts it (the order's
                // change then covers both, see `JobOrder::epoch_walked`).
                self.walk_next = self.table.oldest();
                self.walk_epoch = epoch;
                self.walking = true;
            }
            // Only the jobs whose key or review the epoch can move (for TIAS the deadline
            // jobs not yet hopeless, the jobs whose index the new table moves): the others
            // keep a key and a review that are still exact, and any of them that is due
            // now is re-keyed by the timers below. Live jobs only, in submission order:
            // O(J live), not O(capacity).
            for _ in 0..self.table.len() {
                let slot = self.walk_next;
                if slot == NIL {
                    break;
                }
                if budget == 0 {
                    return false;
                }
                budget -= 1;
                self.walk_next = self.table.next_submitted(slot);
                self.walk_one(slot, now, hooks);
            }
            self.walking = false;
            self.epoch = epoch;
            self.order.epoch_walked();
        }
        // Re-keying sets a job's timer after `now` or clears it: each slot is due once.
        for _ in 0..=self.table.len() {
            match self.timers.peek() {
                Some((at, slot)) if at <= now => {
                    if budget == 0 {
                        return false;
                    }
                    budget -= 1;
                    self.rekey(slot, now, hooks);
                }
                _ => break,
            }
        }
        true
    }

    /// The epoch walk's visit of one job: re-keys it, or arms the review the change adds if
    /// it is earlier than the job's, or nothing ([`JobOrder::epoch_effect`]). O(log J).
    fn walk_one(&mut self, slot: Slot, now: TimeMs, hooks: OrderHooks) {
        let effect = self
            .table
            .get(slot)
            .filter(|job| self.order.follows_epoch(job))
            .map(|job| self.order.epoch_effect(job, now));
        match effect {
            Some(EpochEffect::Rekey) => {
                self.rekey(slot, now, hooks);
            }
            Some(EpochEffect::Review(Some(at))) if hooks.next_review && at > now => {
                if self.timers.get(slot).is_none_or(|t| at < t) {
                    self.timers.set(slot, Some(at));
                }
            }
            Some(EpochEffect::Review(_)) | None => {}
        }
    }

    /// Refreshes one job, re-ranks it under its new key, arms its next review and notes
    /// whether the order wants it rejected. O(log J).
    fn rekey(&mut self, slot: Slot, now: TimeMs, hooks: OrderHooks) -> bool {
        let Some(job) = self.table.get_mut(slot) else {
            self.timers.clear(slot);
            return false;
        };
        if hooks.refresh {
            self.order.refresh(job, now);
        }
        let key = self.order.key(job, now);
        let reordered = self.rank.rekey(slot, key, self.table.by_slot());
        self.arm_review(slot, now, hooks);
        reordered
    }

    /// Arms the job's next review and notes whether the order wants it rejected: the part
    /// of a re-key that a state change alone needs. O(log J).
    fn arm_review(&mut self, slot: Slot, now: TimeMs, hooks: OrderHooks) {
        let Some(job) = self.table.get(slot) else {
            self.timers.clear(slot);
            return;
        };
        let review = if hooks.next_review {
            self.order.next_review(job, now).filter(|&t| t > now)
        } else {
            None
        };
        self.timers.set(slot, review);
        let reject =
            hooks.reject && job.state().is_queued() && self.order.reject(job, now).is_some();
        if reject && !self.reject_due.contains(&slot) {
            // As many entries as live jobs at most: never full.
            let _ = self.reject_due.push(slot);
        }
    }

    /// [`KeyChanges::EveryPass`]: refreshes every job in submission order, then re-keys
    /// them all and re-sorts from the last order. O(J) plus the sort's moves.
    fn rekey_all(&mut self, now: TimeMs, hooks: OrderHooks) {
        if hooks.refresh {
            let mut at = self.table.oldest();
            for _ in 0..self.table.len() {
                if let Some(job) = self.table.get_mut(at) {
                    self.order.refresh(job, now);
                }
                at = self.table.next_submitted(at);
            }
        }
        // 2·J bytes of stack, only for these orders.
        let mut scratch = [NIL; J];
        let (table, order) = (&self.table, &self.order);
        self.rank.rekey_all(&mut scratch, table.by_slot(), |slot| {
            Some(order.key(table.get(slot)?, now))
        });
    }

    /// Drops queued jobs the order rejects, in rank order; returns true if `out` filled or
    /// reached `stop_at` ([`pass_full`]). [`KeyChanges::AtReview`]: the jobs noted when
    /// re-keyed; otherwise every queued job is asked.
    fn reject_queued<const D: usize>(
        &mut self,
        now: TimeMs,
        hooks: OrderHooks,
        out: &mut heapless::Vec<Decision<GANG>, D>,
        stop_at: usize,
    ) -> bool {
        if hooks.keys != KeyChanges::AtReview {
            self.reject_due.clear();
            let mut at = self.rank.first();
            for _ in 0..self.rank.len() {
                if at == NIL {
                    break;
                }
                let _ = self.reject_due.push(at);
                at = self.rank.next(at);
            }
        } else {
            let (rank, table) = (&self.rank, &self.table);
            let rank_of = |s: Slot| (rank.key_of(s), table.get(s).map(Job::id));
            heap_sort(&mut self.reject_due, |&a, &b| rank_of(a) < rank_of(b));
        }
        let mut done = 0;
        let mut full = false;
        for i in 0..self.reject_due.len() {
            let Some(&slot) = self.reject_due.get(i) else {
                break;
            };
            let reason = self
                .table
                .get(slot)
                .filter(|job| job.state().is_queued())
                .and_then(|job| self.order.reject(job, now).map(|r| (job.id(), r)));
            if let Some((id, reason)) = reason {
                if pass_full(out, stop_at) {
                    full = true;
                    break;
                }
                let _ = out.push(Decision::Reject { job: id, reason });
                if let Some(job) = self.remove_indexed(slot) {
                    self.order.on_removed(&job, now);
                }
            }
            done += 1;
        }
        // Keep the ones not reached (the buffer filled), in order.
        let keep = self.reject_due.len().saturating_sub(done);
        for i in 0..keep {
            let later = self.reject_due.get(done + i).copied();
            if let (Some(s), Some(x)) = (later, self.reject_due.get_mut(i)) {
                *x = s;
            }
        }
        self.reject_due.truncate(keep);
        if hooks.keys != KeyChanges::AtReview {
            self.reject_due.clear();
        }
        full
    }

    /// Plans the pass over the ranking, then preempts and starts. Returns true if `out`
    /// filled or reached `stop_at` first ([`pass_full`]; a gang's consolidation moves count,
    /// see [`gang_fits_pass`](Self::gang_fits_pass)). Visits O((decisions + 1)·log J)
    /// ranking nodes.
    fn start_and_preempt<const D: usize>(
        &mut self,
        now: TimeMs,
        out: &mut heapless::Vec<Decision<GANG>, D>,
        stop_at: usize,
    ) -> bool {
        let preemptive = self.config.preemption == Preemption::On;
        let mut preempts: heapless::Vec<Slot, G> = heapless::Vec::new();
        let mut starts: heapless::Vec<Slot, G> = heapless::Vec::new();
        let budget = self.plan_budget();
        if self.settled_budget == Some(budget) && self.rank.unchanged() {
            return false;
        }
        let head = self
            .rank
            .plan(budget, self.table.by_slot(), &mut preempts, &mut starts);
        let nothing = preempts.is_empty() && starts.is_empty() && head.is_none();
        self.settled_budget = nothing.then_some(budget);
        self.rank.mark_unchanged();
        // Whether a decision's state change re-ranked its job (TIAS's preemption margin, a
        // preemption that makes a deadline job hopeless): the head the plan found may then
        // no longer be the head.
        let mut reordered = false;
        for &slot in preempts.iter() {
            if pass_full(out, stop_at) {
                return true;
            }
            let Some(id) = self.table.get(slot).map(Job::id) else {
                continue;
            };
            self.preempt(slot, now);
            let _ = out.push(Decision::Preempt {
                job: id,
                reason: PreemptReason::Priority,
            });
            reordered |= self.state_changed(slot, now);
        }
        let consolidating = preemptive && self.order.consolidates_gangs();
        for &slot in starts.iter() {
            if pass_full(out, stop_at) {
                return true;
            }
            let Some(job) = self.table.get(slot) else {
                continue;
            };
            let id = job.id();
            if consolidating && !self.gang_fits_pass(job.gpus(), out.len(), stop_at) {
                return true;
            }
            if let Some(gpus) = self.place(slot) {
                let gpus = if consolidating {
                    self.consolidate(&gpus, now, out).unwrap_or(gpus)
                } else {
                    gpus
                };
                self.start(slot, gpus.clone(), now);
                let _ = out.push(Decision::Start { job: id, gpus });
                reordered |= self.state_changed(slot, now);
            }
        }
        #[cfg(feature = "reserve")]
        if let Some(head) = head {
            // A preempted job that was the head and fell behind another queued job, for
            // one: the follow-up pass plans with the new order and reserves for its head.
            if reordered {
                return true;
            }
            return self.backfill(head, now, out, stop_at);
        }
        #[cfg(not(feature = "reserve"))]
        let _ = (head, reordered);
        false
    }

    /// Whether a gang of `gpus` may start in this pass under [`consolidate`]: its moves
    /// count against the pass's budget like any decision, and there may be up to
    /// `gpus − 1` of them (a preempt and a start each) before its own start. A pass that
    /// has room for fewer stops before it (`more_pending`) unless its whole budget is still
    /// there (then it goes ahead, so every pass makes progress, and makes at most the
    /// larger of the budget and 2·`GANG` − 1 decisions). The check is made before placing,
    /// on the worst case, so a placer is never asked for a choice that is then thrown
    /// away. O(1).
    ///
    /// [`consolidate`]: Self::consolidate
    fn gang_fits_pass(&self, gpus: u16, decided: usize, stop_at: usize) -> bool {
        let room = stop_at.saturating_sub(decided);
        let worst = usize::from(gpus)
            .saturating_sub(1)
            .saturating_mul(2)
            .saturating_add(1);
        room >= worst || room >= self.order.jobs_per_pass().max(1)
    }

    /// What the first plan of a pass hands out: when preemptive, the healthy GPUs not held
    /// by pinned jobs; else the free ones.
    fn plan_budget(&self) -> PlanBudget {
        let preemptive = self.config.preemption == Preemption::On;
        let healthy = self.healthy_count;
        PlanBudget {
            healthy,
            gpus: if preemptive {
                healthy.saturating_sub(self.pinned_count)
            } else {
                healthy.saturating_sub(self.busy_count)
            },
            preemptive,
            block: self.config.head_of_line == HeadOfLine::Block,
            reserve: self.reserves_head(),
        }
    }

    /// Whether the pass makes a reservation for the queue head ([`HeadOfLine::Reserve`],
    /// with the `reserve` feature).
    fn reserves_head(&self) -> bool {
        #[cfg(feature = "reserve")]
        return self.config.head_of_line == HeadOfLine::Reserve;
        #[cfg(not(feature = "reserve"))]
        return false;
    }

    /// For orders that ask ([`JobOrder::consolidates_gangs`], preemptive only): a gang the
    /// placer spread over several machines, where one machine could hold it once some of its
    /// single-GPU jobs that are not pinned ([`Job::is_pinned`]) moved to GPUs elsewhere.
    /// Moves them (preempt, then start on one of the gang's spread GPUs outside that
    /// machine; each move restarts the job's run and quantum) and returns the machine's
    /// GPUs for the gang.
    /// The machine chosen needs the fewest moves (then the lowest index); the same jobs run
    /// as before, on other GPUs, so the plan's capacity count is unchanged. `None`, with
    /// nothing changed (the placer's choice stands): one machine already, GPUs of more than
    /// one speed in the cluster, no machine that can hold the gang, or no room left in `out`
    /// for every move (so the choice depends on the buffer's capacity, which is 64 on the
    /// host, the firmware and the C ABI alike). O(G + moves).
    fn consolidate<const D: usize>(
        &mut self,
        spread: &GpuSet<GANG>,
        now: TimeMs,
        out: &mut heapless::Vec<Decision<GANG>, D>,
    ) -> Option<GpuSet<GANG>> {
        let gpus = spread.as_slice();
        let first = *gpus.first()?;
        let first_machine = self.topology.machine_of(first);
        if gpus
            .iter()
            .all(|&g| self.topology.machine_of(g) == first_machine)
        {
            return None;
        }
        // One scan of every machine: GPUs of one speed only (a move must not change any
        // job's GPU type, which the placer and a heterogeneous cluster's type rules outside
        // the core chose), and the machine needing the fewest moves.
        let speed = self.topology.speed_permille(first);
        let need = gpus.len();
        let mut best: Option<(usize, MachineId)> = None;
        for m in 0..self.topology.machine_count() {
            let machine = MachineId(m as u16);
            let (mut free, mut size) = (0usize, 0usize);
            for g in self.topology.gpus_of_machine(machine) {
                if self.topology.speed_permille(GpuId(g)) != speed {
                    return None;
                }
                size += 1;
                free += usize::from(self.is_free(usize::from(g)));
            }
            let moves = need.saturating_sub(free);
            // Only a machine that would need fewer moves than the best so far has its
            // movable jobs counted (reading their records is the scan's expensive part).
            if size < need || best.is_some_and(|(b, _)| moves >= b) {
                continue;
            }
            let movable = self
                .topology
                .gpus_of_machine(machine)
                .filter(|&g| self.gpu_state(GpuId(g)) == GpuState::Single)
                .take(moves)
                .count();
            if movable == moves {
                best = Some((moves, machine));
            }
        }
        let (moves, machine) = best?;
        if out.capacity() - out.len() < 2 * moves + 1 {
            return None;
        }
        // Everything is chosen before anything changes: the gang's GPUs on the machine, in
        // its order (free ones, and those of the jobs that move), and where each moving job
        // goes (the gang's spread GPUs outside the machine, in pick order).
        let mut ordered = GpuSet::<GANG>::new();
        let mut leaving = GpuSet::<GANG>::new();
        for g in self.topology.gpus_of_machine(machine).map(GpuId) {
            let state = self.gpu_state(g);
            let free_taken = ordered.len() - leaving.len();
            if state == GpuState::Free && free_taken + moves < need {
                ordered.insert(g).ok()?;
            } else if state == GpuState::Single && leaving.len() < moves {
                leaving.insert(g).ok()?;
                ordered.insert(g).ok()?;
            }
        }
        let mut arriving = GpuSet::<GANG>::new();
        for &g in gpus {
            if self.topology.machine_of(g) != machine && arriving.len() < moves {
                arriving.insert(g).ok()?;
            }
        }
        if leaving.len() != moves || arriving.len() != moves || ordered.len() != need {
            return None;
        }
        // Only now does anything change, and from here on the gang gets `ordered`. A move
        // is a preemption and a start in the same instant: the job keeps running (its
        // service, key and review time are those of a running job throughout), so only the
        // two GPUs' owners and the start of its run (and quantum) change. A pinned job
        // never moves (its GPU is not `Single`).
        for (&from, &to) in leaving.as_slice().iter().zip(arriving.as_slice()) {
            let slot = self.owner.get(from.index()).copied().unwrap_or(NIL);
            let Some(id) = self.table.get(slot).map(Job::id) else {
                continue;
            };
            if let Some(owner) = self.owner.get_mut(from.index()) {
                *owner = NIL;
            }
            if let Some(owner) = self.owner.get_mut(to.index()) {
                *owner = slot;
            }
            // The move restarts it on another GPU: its run (and quantum) count from now.
            self.begin_run(slot, now);
            self.rank.refresh(slot, self.table.by_slot());
            let _ = out.push(Decision::Preempt {
                job: id,
                reason: PreemptReason::Priority,
            });
            let mut one = GpuSet::<GANG>::new();
            let _ = one.insert(to);
            let _ = out.push(Decision::Start { job: id, gpus: one });
        }
        Some(ordered)
    }

    /// Whether `gpu` is free, held by a running single-GPU job, or neither (failed, or part
    /// of a gang).
    fn gpu_state(&self, gpu: GpuId) -> GpuState {
        if self.is_free(gpu.index()) {
            return GpuState::Free;
        }
        match self.owner.get(gpu.index()).copied() {
            Some(slot) if slot != NIL => match self.table.get(slot) {
                Some(job) if job.gpus() == 1 && !job.is_pinned() => GpuState::Single,
                _ => GpuState::Other,
            },
            _ => GpuState::Other,
        }
    }

    /// Whether GPU index `g` is healthy and held by no job: what a placement may use. O(1).
    fn is_free(&self, g: usize) -> bool {
        self.healthy.get(g).is_some_and(|&h| h) && self.owner.get(g) == Some(&NIL)
    }

    /// A job was submitted: [`KeyChanges::AtReview`] orders refresh and key it now (its
    /// first refresh places it); the others need nothing (a fixed key, or every key
    /// recomputed next pass).
    fn submitted(&mut self, slot: Slot, now: TimeMs) {
        let hooks = self.order.hooks();
        if hooks.keys == KeyChanges::AtReview {
            self.rekey(slot, now, hooks);
        }
    }

    /// A job started or was preempted: under [`KeyChanges::AtReview`] a state change alone
    /// leaves `refresh` and `key` as they were (the contract), so only its review (which
    /// does read the state: a running job's threshold crossing, a waiting one's deadline
    /// turn) is armed again, unless its review was already due (a GPU failure preempts
    /// before the due reviews are taken) or the order says the change moves its key
    /// ([`JobOrder::state_change_rekeys`]): then it is re-keyed in full. Returns whether
    /// that moved it in the ranking as a plan reads it ([`RankIndex::rekey`]).
    fn state_changed(&mut self, slot: Slot, now: TimeMs) -> bool {
        let hooks = self.order.hooks();
        if hooks.keys != KeyChanges::AtReview {
            return false;
        }
        let due = self.timers.get(slot).is_some_and(|at| at <= now);
        let moved = || {
            self.table
                .get(slot)
                .is_some_and(|job| self.order.state_change_rekeys(job, now))
        };
        if due || moved() {
            self.rekey(slot, now, hooks)
        } else {
            self.arm_review(slot, now, hooks);
            false
        }
    }

    /// Picks the GPUs of the job in `slot` one at a time through the placer. O(G·k).
    fn place(&mut self, slot: Slot) -> Option<GpuSet<GANG>> {
        let mut usable = GpuMask::<G>::none();
        for g in 0..self.topology.gpu_count().min(G) {
            if self.is_free(g) {
                usable.set(GpuId(g as u16), true);
            }
        }
        self.pick(slot, usable)
    }

    /// Picks the GPUs of the job in `slot` from `usable`, one at a time through the placer.
    /// O(G·k).
    #[inline(always)]
    fn pick(&mut self, slot: Slot, mut usable: GpuMask<G>) -> Option<GpuSet<GANG>> {
        let job = self.table.get(slot)?;
        let need = usize::from(job.gpus());
        if usable.count() < need {
            return None;
        }
        let mut picked = GpuSet::<GANG>::new();
        for _ in 0..need {
            let view = PlacementView {
                topology: &self.topology,
                usable: &usable,
                picked: picked.as_slice(),
                job,
            };
            let gpu = match self.placer.pick(&view) {
                Some(g) if usable.allows(g) => g,
                _ => {
                    self.placer_faults = self.placer_faults.saturating_add(1);
                    usable.first()?
                }
            };
            usable.set(gpu, false);
            picked.insert(gpu).ok()?;
        }
        Some(picked)
    }

    fn start(&mut self, slot: Slot, gpus: GpuSet<GANG>, now: TimeMs) {
        if self.table.get(slot).is_none() {
            return;
        }
        for &g in gpus.as_slice() {
            if let Some(owner) = self.owner.get_mut(g.index()) {
                if *owner == NIL {
                    self.busy_count += 1;
                }
                *owner = slot;
            }
        }
        self.begin_run(slot, now);
        // At most `G` jobs run (each holds a GPU), so this never fails.
        let _ = self.running.push(slot);
        self.rank.refresh(slot, self.table.by_slot());
    }

    /// Marks the job in `slot` running since `now` (a start, or a move to other GPUs) and
    /// opens its run quantum when there is one; counts its GPUs as pinned if it now is.
    /// The caller refreshes its ranking summaries. O(1).
    fn begin_run(&mut self, slot: Slot, now: TimeMs) {
        let min_run = self.config.min_run;
        let quantum = min_run.0 > 0;
        let Some(job) = self.table.get_mut(slot) else {
            return;
        };
        let was_pinned = job.is_pinned();
        job.start_at(now, quantum);
        if job.is_pinned() && !was_pinned {
            self.pinned_count += usize::from(job.gpus());
        }
        if quantum {
            let end = now.saturating_add(min_run);
            self.quantum_end = Some(self.quantum_end.map_or(end, |t| t.min(end)));
        }
    }

    /// The job in `slot` stops running (finish, cancel, preemption): its GPUs no longer
    /// count as pinned, and if its quantum was the earliest to end, the next one is found.
    /// Leaves its quantum bit to the caller (a requeue clears it; a finished or cancelled
    /// job leaves the table). O(1), and O(R) when its quantum was the earliest.
    fn unpin(&mut self, slot: Slot) {
        let Some(job) = self.table.get(slot) else {
            return;
        };
        if job.is_pinned() {
            self.pinned_count = self.pinned_count.saturating_sub(usize::from(job.gpus()));
        }
        if job.state() == JobState::Running && job.in_quantum() {
            let end = job.running_since().saturating_add(self.config.min_run);
            if self.quantum_end == Some(end) {
                self.quantum_end = self.earliest_quantum_end(slot);
            }
        }
    }

    /// The earliest end of a run quantum among the running jobs but `skip`. O(R).
    fn earliest_quantum_end(&self, skip: Slot) -> Option<TimeMs> {
        self.running
            .iter()
            .filter(|&&s| s != skip)
            .filter_map(|&s| self.table.get(s))
            .filter(|job| job.in_quantum())
            .map(|job| job.running_since().saturating_add(self.config.min_run))
            .min()
    }

    /// Ends the run quanta that are over at `now` (the jobs become preemptible, unless they
    /// are `Never`) and finds when the next one ends. Runs only when one is due: O(R + log J
    /// per quantum ended) then, O(1) otherwise.
    fn end_quanta(&mut self, now: TimeMs) {
        if self.quantum_end.is_none_or(|t| t > now) {
            return;
        }
        let min_run = self.config.min_run;
        let mut next: Option<TimeMs> = None;
        for i in 0..self.running.len() {
            let Some(&slot) = self.running.get(i) else {
                break;
            };
            let Some(job) = self.table.get_mut(slot) else {
                continue;
            };
            if !job.in_quantum() {
                continue;
            }
            // Elapsed time, not `end <= now`: a quantum whose end saturates at the end of
            // time has not run out at `TimeMs::MAX`.
            if now.saturating_since(job.running_since()) < min_run {
                let end = job.running_since().saturating_add(min_run);
                next = Some(next.map_or(end, |t| t.min(end)));
                continue;
            }
            let was_pinned = job.is_pinned();
            job.end_quantum();
            if was_pinned && !job.is_pinned() {
                self.pinned_count = self.pinned_count.saturating_sub(usize::from(job.gpus()));
            }
            self.rank.refresh(slot, self.table.by_slot());
        }
        self.quantum_end = next;
    }

    /// GPUs held by pinned jobs and the earliest end of a run quantum, from the job table
    /// (after a restore). O(J).
    fn derive_pins(&self) -> (usize, Option<TimeMs>) {
        let mut pinned = 0usize;
        let mut end: Option<TimeMs> = None;
        for job in self.jobs() {
            if job.is_pinned() {
                pinned += usize::from(job.gpus());
            }
            if job.in_quantum() {
                let at = job.running_since().saturating_add(self.config.min_run);
                end = Some(end.map_or(at, |t| t.min(at)));
            }
        }
        (pinned, end)
    }

    /// Requeues the running job in `slot`, freeing its GPUs. O(G + R + log J).
    fn preempt(&mut self, slot: Slot, now: TimeMs) {
        if self.table.get(slot).is_none() {
            return;
        }
        self.unpin(slot);
        self.release(slot);
        let Some(job) = self.table.get_mut(slot) else {
            return;
        };
        job.requeue(now);
        self.drop_running(slot);
        self.rank.refresh(slot, self.table.by_slot());
    }

    fn drop_running(&mut self, slot: Slot) {
        if let Some(i) = self.running.iter().position(|&r| r == slot) {
            self.running.swap_remove(i);
        }
    }

    /// Frees every GPU the job in `slot` holds: a running job holds exactly its gang
    /// (checked by [`check_invariants`](Self::check_invariants)), so the scan stops at its
    /// last GPU, and a job that does not run holds none. O(G) over the topology's GPUs.
    fn release(&mut self, slot: Slot) {
        let mut held = match self.table.get(slot) {
            Some(job) if job.state() == JobState::Running => job.gpus(),
            _ => return,
        };
        // `gpus` ≤ `G`: the slice is provably in range (no panic path), and cheaper than
        // `take` on the M4F.
        let gpus = self.topology.gpu_count().min(G);
        let owners = &mut self.owner[..gpus];
        // On a large cluster a run of GPUs the job does not hold is skipped after one test
        // without a branch (the mask's rule,
        // [`SKIP_ABOVE_GPUS`](crate::placement::SKIP_ABOVE_GPUS)).
        let mut at = 0;
        if G > crate::placement::SKIP_ABOVE_GPUS {
            let run = crate::placement::SKIP_RUN_GPUS;
            while let Some(owners_run) = owners.get(at..at + run) {
                if owners_run.iter().fold(false, |any, &o| any | (o == slot)) {
                    break;
                }
                at += run;
            }
        }
        for owner in owners.iter_mut().skip(at) {
            if held == 0 {
                break;
            }
            if *owner == slot {
                *owner = NIL;
                held -= 1;
                self.busy_count = self.busy_count.saturating_sub(1);
            }
        }
    }

    /// Adds a validated job to the table and ranks it. O(log J).
    fn insert(&mut self, job: Job, now: TimeMs) {
        self.order.on_submitted(&job, now);
        let key = self.order.key(&job, now);
        // Room was checked in `validate`; the ranking and the timers have the same capacity.
        let Ok(slot) = self.table.push(job) else {
            return;
        };
        self.rank.insert(slot, key, self.table.by_slot());
        self.submitted(slot, now);
    }

    /// Removes the job in `slot` (it holds no GPU) from the table and every index.
    /// O(log J + R).
    fn remove(&mut self, slot: Slot) -> Option<Job> {
        if let Some(i) = self.reject_due.iter().position(|&s| s == slot) {
            self.reject_due.swap_remove(i);
        }
        self.remove_indexed(slot)
    }

    /// As [`remove`](Self::remove), leaving `reject_due` to the caller.
    fn remove_indexed(&mut self, slot: Slot) -> Option<Job> {
        if self.walking && slot == self.walk_next {
            // The epoch walk goes on from the job after it.
            self.walk_next = self.table.next_submitted(slot);
        }
        self.rank.remove(slot, self.table.by_slot());
        let job = self.table.remove(slot)?;
        self.timers.clear(slot);
        self.drop_running(slot);
        Some(job)
    }

    /// The live job with this id. O(log J).
    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.table.find(id).and_then(|s| self.table.get(s))
    }

    /// All live jobs (queued or running), in a deterministic order that is not the
    /// submission order (by slot: a finished job's slot goes to a later submission). An
    /// exact-size iterator; O(1) to get, O(J) to walk.
    pub fn jobs(&self) -> LiveJobs<'_> {
        self.table.jobs()
    }

    /// How many jobs are live (queued or running). O(1).
    pub fn job_count(&self) -> usize {
        self.table.len()
    }

    /// The job holding `gpu`, if any.
    pub fn gpu_owner(&self, gpu: GpuId) -> Option<JobId> {
        let slot = self.owner.get(gpu.index()).copied()?;
        self.table.get(slot).map(Job::id)
    }

    /// Whether `gpu` is healthy.
    pub fn is_healthy(&self, gpu: GpuId) -> bool {
        self.topology.contains(gpu) && self.healthy.get(gpu.index()).is_some_and(|&h| h)
    }

    /// Number of healthy GPUs (a counter kept up to date). O(1).
    pub fn healthy_gpu_count(&self) -> usize {
        self.healthy_count
    }

    /// Number of GPUs held by running jobs (a counter kept up to date). O(1).
    pub fn busy_gpu_count(&self) -> usize {
        self.busy_count
    }

    /// The GPUs a job holds, in id order (empty when it is queued).
    pub fn placement_of(&self, id: JobId) -> GpuSet<GANG> {
        let mut set = GpuSet::new();
        let Some(slot) = self.table.find(id) else {
            return set;
        };
        let gpus = self.topology.gpu_count().min(G);
        for (g, owner) in self.owner.iter().take(gpus).enumerate() {
            if *owner == slot {
                let _ = set.insert(GpuId(g as u16));
            }
        }
        set
    }

    /// The cluster's tree.
    pub fn topology(&self) -> &Topology<G> {
        &self.topology
    }

    /// The earliest time after the last event at which a decision may change with no event
    /// in between: the order expects a key to change (see [`JobOrder::next_review`]), or,
    /// when preemptive, a run quantum ends (the job may then be preempted): send
    /// [`Event::Tick`] then. `None` when nothing needs one. O(1) for [`KeyChanges::AtReview`]
    /// orders (the timer heap's head); O(J) for [`KeyChanges::EveryPass`] ones.
    pub fn next_review(&self) -> Option<TimeMs> {
        let quantum = if self.config.preemption == Preemption::On {
            self.quantum_end
        } else {
            None
        };
        let order = self.order_review();
        match (order, quantum) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The order's part of [`next_review`](Self::next_review).
    fn order_review(&self) -> Option<TimeMs> {
        let hooks = self.order.hooks();
        if !hooks.next_review {
            return None;
        }
        let now = self.last_now;
        match hooks.keys {
            KeyChanges::AtReview => self.timers.peek().map(|(at, _)| at),
            KeyChanges::EveryPass | KeyChanges::Never => self
                .jobs()
                .filter_map(|job| self.order.next_review(job, now))
                .filter(|&t| t > now)
                .min(),
        }
    }

    /// The job order.
    pub fn order(&self) -> &O {
        &self.order
    }

    /// The placer.
    pub fn placer(&self) -> &P {
        &self.placer
    }

    /// The active configuration.
    pub fn config(&self) -> SchedulerConfig {
        self.config
    }

    /// Time of the last accepted event.
    pub fn now(&self) -> TimeMs {
        self.last_now
    }

    /// How often the placer returned no GPU or one outside the mask (and the lowest usable
    /// GPU was taken instead).
    pub fn placer_faults(&self) -> u32 {
        self.placer_faults
    }

    /// Checks the core's invariants: no GPU held by two jobs (by construction: one owner per
    /// GPU) or by a job that is not running, no failed GPU held, every running job holding
    /// exactly its gang, no final state or duplicate id in the table, a run quantum only on
    /// running jobs of a scheduler that has one, and the internal indexes (id index,
    /// submission list, running list, ranking and its summaries, timers, GPU counters,
    /// pinned GPUs, the earliest quantum end) in step with the table. O(J·G + J log J).
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        self.check_indexes()?;
        let gpus = self.topology.gpu_count().min(G);
        for (g, (&owner, &healthy)) in self.owner.iter().zip(&self.healthy).enumerate() {
            if g >= gpus && (owner != NIL || healthy) {
                return Err(InvariantViolation::GpuOutsideTopology(GpuId(g as u16)));
            }
        }
        for (g, &owner) in self.owner.iter().enumerate() {
            if owner == NIL {
                continue;
            }
            let gpu = GpuId(g as u16);
            if !self.healthy[g] {
                return Err(InvariantViolation::UnhealthyGpuOwned(gpu));
            }
            if self.table.get(owner).map(|j| j.state()) != Some(JobState::Running) {
                return Err(InvariantViolation::GpuOwnedByNonRunningJob(gpu));
            }
        }
        for job in self.jobs() {
            if matches!(job.state(), JobState::Finished | JobState::Rejected) {
                return Err(InvariantViolation::FinalStateInTable(job.id()));
            }
            let slot = self.table.find(job.id()).unwrap_or(NIL);
            let held = self.owner.iter().filter(|&&o| o == slot).count();
            let want = if job.state() == JobState::Running {
                usize::from(job.gpus())
            } else {
                0
            };
            if held != want {
                return Err(InvariantViolation::WrongGangSize(job.id()));
            }
        }
        Ok(())
    }

    /// The internal indexes against the table and the GPU arrays. O(J log J + G).
    fn check_indexes(&self) -> Result<(), InvariantViolation> {
        let counter = InvariantViolation::IndexOutOfSync(JobId(u32::MAX));
        let gpus = self.topology.gpu_count().min(G);
        let healthy = self.healthy[..gpus].iter().filter(|&&h| h).count();
        let busy = self.owner.iter().filter(|&&o| o != NIL).count();
        if healthy != self.healthy_count || busy != self.busy_count {
            return Err(counter);
        }
        if self.derive_pins() != (self.pinned_count, self.quantum_end) {
            return Err(counter);
        }
        let live = self.table.len();
        let by_slot = self.table.by_slot();
        if !self.table.check() || !self.rank.check(live, by_slot) || !self.timers.check() {
            return Err(counter);
        }
        let walk_ok =
            !self.walking || self.walk_next == NIL || self.table.get(self.walk_next).is_some();
        if !walk_ok {
            return Err(counter);
        }
        let running = self
            .jobs()
            .filter(|j| j.state() == JobState::Running)
            .count();
        if running != self.running.len() || self.timers.len() > live {
            return Err(counter);
        }
        // Timers and pending rejections name live slots only.
        let is_live = |s: &Slot| self.table.get(*s).is_some();
        if !self.timers.slots().all(|s| is_live(&s)) || !self.reject_due.iter().all(is_live) {
            return Err(counter);
        }
        let live_slots = by_slot.iter().enumerate().filter(|(_, j)| !j.is_vacant());
        for (slot, job) in live_slots {
            let slot = slot as Slot;
            let out_of_sync = Err(InvariantViolation::IndexOutOfSync(job.id()));
            let is_running = job.state() == JobState::Running;
            let fixed_key_ok = self.order.hooks().keys != KeyChanges::Never
                || self.rank.key_of(slot) == Some(self.order.key(job, self.last_now));
            // A quantum only under a scheduler that has one, and never ended early: the
            // flag may outlive its quantum until the next pass, but a running job whose
            // quantum has not run out at `last_now` must still be in it (a restored
            // snapshot could otherwise unpin a job the model still protects).
            let min_run = self.config.min_run;
            let quantum_due = is_running
                && min_run.0 > 0
                && self.last_now.saturating_since(job.running_since()) < min_run;
            let quantum_ok =
                (!job.in_quantum() || min_run.0 > 0) && (job.in_quantum() || !quantum_due);
            if self.table.find(job.id()) != Some(slot)
                || !quantum_ok
                || !self.rank.contains(slot)
                || self.running.contains(&slot) != is_running
                || !fixed_key_ok
            {
                return out_of_sync;
            }
        }
        Ok(())
    }
}

/// Checkpoint and restore (a child module: it reads and builds the scheduler's fields).
#[cfg(feature = "snapshot")]
#[path = "snapshot.rs"]
pub mod snapshot;

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "scheduler_pin_tests.rs"]
mod pin_tests;

/// The queue head's reservation ([`HeadOfLine::Reserve`]): a child module, it reads and
/// changes the scheduler's fields.
#[cfg(feature = "reserve")]
#[path = "scheduler_reserve.rs"]
mod reserve;
#[cfg(feature = "reserve")]
pub use reserve::Reservation;

#[cfg(all(test, feature = "reserve"))]
#[path = "scheduler_reserve_tests.rs"]
mod reserve_tests;

/// A GPU count as the `u32` [`JobOrder::on_capacity`] takes (saturating: `G` never comes
/// near it).
fn gpu_count_u32(count: usize) -> u32 {
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// Whether a pass must stop before its next decision: `out` is full, or holds the decisions
/// up to `stop_at` (its length when the pass began to decide plus the order's
/// [`JobOrder::jobs_per_pass`]: each decision touches a job, so the cost of one `handle` call
/// stays bounded however many jobs a pass could start or preempt). The rest comes at the
/// follow-up ticks `more_pending` asks for. O(1).
fn pass_full<const GANG: usize, const D: usize>(
    out: &heapless::Vec<Decision<GANG>, D>,
    stop_at: usize,
) -> bool {
    out.is_full() || out.len() >= stop_at
}
