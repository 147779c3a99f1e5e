//! The scheduler: the one entry point, [`Scheduler::handle`], that firmware, the host
//! simulator and replay tests all drive.
//!
//! Each call validates the event (an error changes nothing), accrues service for running
//! jobs up to `now`, applies the event, then runs one scheduling pass: rank every live job by
//! the [`JobOrder`], choose the set that should hold GPUs, preempt running jobs outside it,
//! and place queued jobs inside it one GPU at a time through the [`Placer`].
//! Cost per call: O(J log J + G·Σk) for J live jobs, G GPUs and gangs of k GPUs started in
//! the worst case. The ranking is kept between passes and re-sorted adaptively (nearly
//! sorted after one event), the plan stops as soon as nothing more can start or be
//! preempted, per-job hooks an order does not use ([`OrderHooks`]) are skipped, and a job
//! leaves the table by shifting its shorter side (module `job_table`). So an event on a
//! long queue costs O(J) for orders whose keys move with time (refresh and key per job),
//! and about O(R + k) for fixed-key orders (FIFO, SJF, EDF) with R running jobs.

use crate::error::SchedError;
use crate::event::{Decision, Event, PreemptReason, RejectReason};
use crate::ids::{GpuId, JobId};
use crate::job::{Job, JobSpec, JobState};
use crate::job_table::{GapVec, JobTable, Slot};
use crate::order::{HeadOfLine, JobOrder, OrderHooks, Preemption, PriorityKey};
use crate::placement::{GpuMask, GpuSet, PlacementView, Placer};
use crate::time::TimeMs;
use crate::topology::Topology;

/// How the scheduling pass treats the queue head and running jobs. Defaults come from the
/// order ([`SchedulerConfig::for_order`]); a caller may override them, e.g. to run LAS
/// without preemption.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Block or skip at a queue head that does not fit.
    pub head_of_line: HeadOfLine,
    /// Whether running jobs may be preempted for higher-priority ones.
    pub preemption: Preemption,
    /// Whether a deadline that the job's declared length cannot meet is refused at submit.
    pub deadline_admission: DeadlineAdmission,
}

/// What `handle` does with a submitted deadline that cannot be met even if the job started
/// now and ran at full speed (`now + declared_length > deadline`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
        }
    }
}

/// What one [`Scheduler::handle`] call produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandleOutcome {
    /// Decisions appended to the caller's buffer.
    pub decisions: usize,
    /// The buffer filled before the pass ended: call `handle(now, Event::Tick, ..)` again
    /// with room to get the rest. The state is consistent with the decisions emitted.
    pub more_pending: bool,
}

/// What the scheduling pass decided for one ranked job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    Keep,
    Preempt,
    Start,
    Wait,
}

#[derive(Clone, Copy, Debug)]
struct Ranked {
    key: PriorityKey,
    id: JobId,
    slot: Slot,
    plan: Plan,
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
    /// A live job is in a final state.
    FinalStateInTable(JobId),
    /// Two live jobs share an id.
    DuplicateId(JobId),
    /// The scheduler's own indexes (id column, running list, ranking, GPU counters) disagree
    /// with the job table or the GPU arrays; the job named is the first found out of step
    /// (`JobId(u32::MAX)` for a counter).
    IndexOutOfSync(JobId),
}

/// The scheduling core for a cluster of up to `G` GPUs, `J` live jobs and gangs of up to
/// `GANG` GPUs. All memory is inline; nothing allocates. On a host, build it inside a thread
/// with a large stack or in a `Box` (its size is roughly `162·J + 22·G` bytes: per job 120
/// for the job, 32 for its ranking entry, 10 for its id, slot and free-list entry; 5.4 MB at
/// the host's J = 32,768, G = 2,048).
pub struct Scheduler<O, P, const G: usize, const J: usize, const GANG: usize> {
    topology: Topology<G>,
    order: O,
    placer: P,
    config: SchedulerConfig,
    /// Live jobs in submission order, each with a stable slot.
    table: JobTable<J>,
    /// Slots of the running jobs, in no particular order (each holds at least one GPU, so
    /// there are at most `G`).
    running: heapless::Vec<Slot, G>,
    owner: [Option<JobId>; G],
    healthy: [bool; G],
    /// Healthy GPUs (`healthy` set within the topology).
    healthy_count: usize,
    /// GPUs with an owner.
    busy_count: usize,
    last_now: TimeMs,
    /// One entry per live job, sorted by `(key, id)` as of the last pass (fixed-key orders:
    /// always sorted), so the next pass's sort starts from nearly sorted data.
    ranked: GapVec<Ranked, J>,
    placer_faults: u32,
}

impl<O, P, const G: usize, const J: usize, const GANG: usize> Scheduler<O, P, G, J, GANG>
where
    O: JobOrder,
    P: Placer<G>,
{
    const CAPACITIES_FIT: () = assert!(J > 0 && J <= u16::MAX as usize && GANG > 0);

    /// A scheduler over `topology` with every GPU healthy and free, at time 0, using the
    /// order's own head-of-line and preemption behaviour.
    pub fn new(topology: Topology<G>, order: O, placer: P) -> Self {
        let config = SchedulerConfig::for_order(&order);
        Self::with_config(topology, order, placer, config)
    }

    /// As [`new`](Self::new) with an explicit configuration.
    pub fn with_config(
        topology: Topology<G>,
        order: O,
        placer: P,
        config: SchedulerConfig,
    ) -> Self {
        let () = Self::CAPACITIES_FIT;
        let mut healthy = [false; G];
        let healthy_count = topology.gpu_count().min(G);
        for h in healthy.iter_mut().take(healthy_count) {
            *h = true;
        }
        Self {
            topology,
            order,
            placer,
            config,
            healthy_count,
            table: JobTable::new(),
            running: heapless::Vec::new(),
            owner: [None; G],
            healthy,
            busy_count: 0,
            last_now: TimeMs(0),
            ranked: GapVec::new(Ranked {
                key: PriorityKey {
                    class: 0,
                    primary: 0,
                    secondary: 0,
                },
                id: JobId(0),
                slot: 0,
                plan: Plan::Wait,
            }),
            placer_faults: 0,
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
    /// service accrued and the event applied (a `GpuDown` still emits its `Preempt`); the
    /// next `handle` call at the same `now` (e.g. with [`Event::Tick`]) schedules. Lets a
    /// caller fold simultaneous events into one pass, as the Tiresias simulator does (its
    /// arrivals, completions and timers at one second share a single pass). O(J).
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

    /// Checks time and buffer, validates, accrues service and applies the event. Returns
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
        self.accrue(now);
        self.apply(now, event, named, out);
        Ok(before)
    }

    /// Checks the event against the state. Returns the table index of the job a `Finish` or
    /// `Cancel` names, so `apply` need not look it up again.
    fn validate(&self, now: TimeMs, event: &Event) -> Result<Option<usize>, SchedError> {
        match *event {
            Event::Submit(spec) => self.validate_submit(now, spec).map(|()| None),
            Event::Finish(id) => match self.find(id) {
                None => Err(SchedError::UnknownJob(id)),
                Some(i) if self.table.get(i).map(|j| j.state) != Some(JobState::Running) => {
                    Err(SchedError::JobNotRunning(id))
                }
                Some(i) => Ok(Some(i)),
            },
            Event::Cancel(id) => self.find(id).map(Some).ok_or(SchedError::UnknownJob(id)),
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
        if self.find(id).is_some() {
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

    /// Credits every running job with service from the previous event up to `now`.
    fn accrue(&mut self, now: TimeMs) {
        let dt = now.saturating_since(self.last_now);
        for &slot in self.running.iter() {
            let Some(job) = self
                .table
                .index_of(slot)
                .and_then(|i| self.table.get_mut(i))
            else {
                continue;
            };
            job.executed = job.executed.saturating_add(dt);
            job.attained_gpu_ms = job
                .attained_gpu_ms
                .saturating_add(dt.0.saturating_mul(u64::from(job.spec.gpus)));
        }
        self.last_now = now;
    }

    fn apply<const D: usize>(
        &mut self,
        now: TimeMs,
        event: Event,
        named: Option<usize>,
        out: &mut heapless::Vec<Decision<GANG>, D>,
    ) {
        match event {
            Event::Submit(spec) => self.insert(Job::submitted(spec, now), now),
            Event::Finish(id) => {
                if let Some(i) = named {
                    self.release(id);
                    if let Some(mut job) = self.remove_at(i) {
                        job.state = JobState::Finished;
                        self.order.on_finished(&job, now);
                    }
                }
            }
            Event::Cancel(id) => {
                if let Some(i) = named {
                    self.release(id);
                    self.remove_at(i);
                }
            }
            Event::GpuDown(gpu) => {
                let g = gpu.index();
                if self.healthy[g] {
                    self.healthy[g] = false;
                    self.healthy_count -= 1;
                }
                if let Some(id) = self.owner[g] {
                    if let Some(i) = self.find(id) {
                        self.preempt_at(i, now);
                    }
                    // `handle` checked that `out` has a free slot, and this is the first push.
                    let _ = out.push(Decision::Preempt {
                        job: id,
                        reason: PreemptReason::GpuFailed(gpu),
                    });
                }
            }
            Event::GpuUp(gpu) => {
                let g = gpu.index();
                if !self.healthy[g] {
                    self.healthy[g] = true;
                    self.healthy_count += 1;
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
        let hooks = self.order.hooks();
        if hooks.refresh {
            for job in self.table.jobs_mut() {
                self.order.refresh(job, now);
            }
        }
        if hooks.reject && self.reject_hopeless(now, out) {
            return true;
        }
        self.rank(now, hooks);
        let planned = self.plan();
        for r in 0..planned {
            let Some(&Ranked { id, slot, plan, .. }) = self.ranked.as_slice().get(r) else {
                break;
            };
            if plan == Plan::Preempt {
                if out.is_full() {
                    return true;
                }
                if let Some(index) = self.table.index_of(slot) {
                    self.preempt_at(index, now);
                }
                let _ = out.push(Decision::Preempt {
                    job: id,
                    reason: PreemptReason::Priority,
                });
            }
        }
        for r in 0..planned {
            let Some(&Ranked { id, slot, plan, .. }) = self.ranked.as_slice().get(r) else {
                break;
            };
            if plan == Plan::Start {
                if out.is_full() {
                    return true;
                }
                let Some(index) = self.table.index_of(slot) else {
                    continue;
                };
                if let Some(gpus) = self.place(index) {
                    self.start(index, gpus.clone(), now);
                    let _ = out.push(Decision::Start { job: id, gpus });
                }
            }
        }
        if hooks.after_pass {
            for r in self.ranked.as_slice() {
                if let Some(job) = self
                    .table
                    .index_of(r.slot)
                    .and_then(|i| self.table.get_mut(i))
                {
                    self.order.after_pass(job, now);
                }
            }
        }
        false
    }

    /// Lets the order drop queued jobs it deems hopeless (e.g. past their deadline).
    fn reject_hopeless<const D: usize>(
        &mut self,
        now: TimeMs,
        out: &mut heapless::Vec<Decision<GANG>, D>,
    ) -> bool {
        let mut i = 0;
        while let Some(job) = self.table.get(i) {
            let reason: Option<RejectReason> = if job.state.is_queued() {
                self.order.reject(job, now)
            } else {
                None
            };
            match reason {
                Some(reason) => {
                    if out.is_full() {
                        return true;
                    }
                    let id = job.id();
                    self.remove_at(i);
                    let _ = out.push(Decision::Reject { job: id, reason });
                }
                None => i += 1,
            }
        }
        false
    }

    /// Brings `ranked` into `(key, id)` order: a total order, so the pass is deterministic.
    /// Fixed-key orders keep it sorted on insertion; others recompute every key (O(J)) and
    /// re-sort adaptively from the last pass's order.
    fn rank(&mut self, now: TimeMs, hooks: OrderHooks) {
        if hooks.fixed_key {
            return;
        }
        for r in self.ranked.as_mut_slice() {
            if let Some(job) = self.table.job_of(r.slot) {
                r.key = self.order.key(job, now);
            }
        }
        sort_nearly_sorted(self.ranked.as_mut_slice());
    }

    /// Chooses, in rank order, the jobs that hold GPUs after this pass. Returns how many
    /// ranked entries it planned: past that, every job waits or keeps its GPUs (no GPU left
    /// to give, or the head blocks, and no running job left to preempt). O(J) worst case.
    fn plan(&mut self) -> usize {
        let healthy = self.healthy_count;
        let preemptive = self.config.preemption == Preemption::On;
        let mut budget = healthy;
        if !preemptive {
            budget = budget.saturating_sub(self.busy_count);
        }
        // Running jobs a preemptive pass has still to keep or preempt.
        let mut running_left = if preemptive { self.running.len() } else { 0 };
        let mut blocked = false;
        for (n, r) in self.ranked.as_mut_slice().iter_mut().enumerate() {
            if running_left == 0 && (budget == 0 || blocked) {
                return n;
            }
            let Some(job) = self.table.job_of(r.slot) else {
                r.plan = Plan::Wait;
                continue;
            };
            let gpus = usize::from(job.spec.gpus);
            if preemptive && job.state == JobState::Running {
                running_left = running_left.saturating_sub(1);
            }
            r.plan = match job.state {
                JobState::Running if !preemptive => Plan::Keep,
                JobState::Running if gpus <= budget => {
                    budget -= gpus;
                    Plan::Keep
                }
                JobState::Running => Plan::Preempt,
                // Cannot fit the healthy cluster now: waits without blocking others.
                _ if gpus > healthy => Plan::Wait,
                _ if blocked => Plan::Wait,
                _ if gpus <= budget => {
                    budget -= gpus;
                    Plan::Start
                }
                _ => {
                    blocked = self.config.head_of_line == HeadOfLine::Block;
                    Plan::Wait
                }
            };
        }
        self.ranked.len()
    }

    /// Picks the GPUs of job `index` one at a time through the placer.
    fn place(&mut self, index: usize) -> Option<GpuSet<GANG>> {
        let mut usable = GpuMask::<G>::none();
        for g in 0..self.topology.gpu_count() {
            usable.set(GpuId(g as u16), self.healthy[g] && self.owner[g].is_none());
        }
        let job = self.table.get(index)?;
        let need = usize::from(job.spec.gpus);
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

    fn start(&mut self, index: usize, gpus: GpuSet<GANG>, now: TimeMs) {
        let Some(slot) = self.table.slot_at(index) else {
            return;
        };
        let Some(job) = self.table.get_mut(index) else {
            return;
        };
        for &g in gpus.as_slice() {
            if let Some(owner) = self.owner.get_mut(g.index()) {
                if owner.is_none() {
                    self.busy_count += 1;
                }
                *owner = Some(job.id());
            }
        }
        job.state = JobState::Running;
        job.first_started_at.get_or_insert(now);
        // At most `G` jobs run (each holds a GPU), so this never fails.
        let _ = self.running.push(slot);
    }

    /// Requeues the running job at table index `index`, freeing its GPUs. O(G + R).
    fn preempt_at(&mut self, index: usize, now: TimeMs) {
        let (Some(id), Some(slot)) = (self.table.id_at(index), self.table.slot_at(index)) else {
            return;
        };
        self.release(id);
        let Some(job) = self.table.get_mut(index) else {
            return;
        };
        job.state = JobState::Preempted;
        job.queued_since = now;
        job.preemptions = job.preemptions.saturating_add(1);
        self.running.retain(|&r| r != slot);
    }

    /// Frees every GPU `id` holds. O(G) over the topology's GPUs.
    fn release(&mut self, id: JobId) {
        let gpus = self.topology.gpu_count().min(G);
        for owner in self.owner[..gpus].iter_mut().filter(|o| **o == Some(id)) {
            *owner = None;
            self.busy_count = self.busy_count.saturating_sub(1);
        }
    }

    /// Adds a validated job to the table and to the ranking (at its sorted place by its
    /// key now: exact for fixed-key orders, a good start for the others). O(log J) plus the
    /// shift of the shorter side of the ranking (none for FIFO).
    fn insert(&mut self, job: Job, now: TimeMs) {
        let id = job.id();
        let key = self.order.key(&job, now);
        // Room was checked in `validate`; the ranking has the table's capacity.
        let Ok(slot) = self.table.push(job) else {
            return;
        };
        let at = self
            .ranked
            .as_slice()
            .partition_point(|r| (r.key, r.id) < (key, id));
        let _ = self.ranked.insert(
            at,
            Ranked {
                key,
                id,
                slot,
                plan: Plan::Wait,
            },
        );
    }

    /// Removes the job at table index `i` (it holds no GPU) from the table, the ranking and
    /// the running list, keeping submission order. O(min(i, J − i)) for the table, plus a
    /// scan of the ranking up to the job's entry and the shift of its shorter side.
    fn remove_at(&mut self, i: usize) -> Option<Job> {
        let (job, slot) = self.table.remove(i)?;
        if let Some(n) = self.ranked.as_slice().iter().position(|r| r.slot == slot) {
            self.ranked.remove(n);
        }
        self.running.retain(|&r| r != slot);
        Some(job)
    }

    /// Table index of live job `id`: a linear scan of the dense id column. O(J).
    fn find(&self, id: JobId) -> Option<usize> {
        self.table.find(id)
    }

    /// The live job with this id.
    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.find(id).and_then(|i| self.table.get(i))
    }

    /// All live jobs (queued or running), in submission order.
    pub fn jobs(&self) -> &[Job] {
        self.table.jobs()
    }

    /// The job holding `gpu`, if any.
    pub fn gpu_owner(&self, gpu: GpuId) -> Option<JobId> {
        self.owner.get(gpu.index()).copied().flatten()
    }

    /// Whether `gpu` is healthy.
    pub fn is_healthy(&self, gpu: GpuId) -> bool {
        self.topology.contains(gpu) && self.healthy[gpu.index()]
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
        let gpus = self.topology.gpu_count().min(G);
        for (g, owner) in self.owner[..gpus].iter().enumerate() {
            if *owner == Some(id) {
                let _ = set.insert(GpuId(g as u16));
            }
        }
        set
    }

    /// The cluster's tree.
    pub fn topology(&self) -> &Topology<G> {
        &self.topology
    }

    /// The earliest time after the last event at which the order expects a key to change
    /// with no event in between (see [`JobOrder::next_review`]): send
    /// [`Event::Tick`] then. `None` when no job needs one. O(J).
    pub fn next_review(&self) -> Option<TimeMs> {
        if !self.order.hooks().next_review {
            return None;
        }
        let now = self.last_now;
        self.jobs()
            .iter()
            .filter_map(|job| self.order.next_review(job, now))
            .filter(|&t| t > now)
            .min()
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
    /// exactly its gang, no final state or duplicate id in the table, and the internal indexes
    /// (id column, running list, ranking, GPU counters) in step with the table. O(J·(G + J)).
    pub fn check_invariants(&self) -> Result<(), InvariantViolation> {
        self.check_indexes()?;
        for (g, owner) in self.owner.iter().enumerate() {
            let Some(id) = owner else { continue };
            let gpu = GpuId(g as u16);
            if !self.healthy[g] {
                return Err(InvariantViolation::UnhealthyGpuOwned(gpu));
            }
            if self.job(*id).map(|j| j.state) != Some(JobState::Running) {
                return Err(InvariantViolation::GpuOwnedByNonRunningJob(gpu));
            }
        }
        let jobs = self.jobs();
        for (i, job) in jobs.iter().enumerate() {
            if matches!(job.state, JobState::Finished | JobState::Rejected) {
                return Err(InvariantViolation::FinalStateInTable(job.id()));
            }
            if jobs[..i].iter().any(|other| other.id() == job.id()) {
                return Err(InvariantViolation::DuplicateId(job.id()));
            }
            let held = self.owner.iter().filter(|o| **o == Some(job.id())).count();
            let want = if job.state == JobState::Running {
                usize::from(job.spec.gpus)
            } else {
                0
            };
            if held != want {
                return Err(InvariantViolation::WrongGangSize(job.id()));
            }
        }
        Ok(())
    }

    /// The internal indexes against the table and the GPU arrays. O(J² + G).
    fn check_indexes(&self) -> Result<(), InvariantViolation> {
        let counter = InvariantViolation::IndexOutOfSync(JobId(u32::MAX));
        let gpus = self.topology.gpu_count().min(G);
        let healthy = self.healthy[..gpus].iter().filter(|&&h| h).count();
        let busy = self.owner.iter().filter(|o| o.is_some()).count();
        if healthy != self.healthy_count || busy != self.busy_count {
            return Err(counter);
        }
        let jobs = self.jobs();
        if self.ranked.len() != jobs.len() {
            return Err(counter);
        }
        let running = jobs.iter().filter(|j| j.state == JobState::Running).count();
        if running != self.running.len() {
            return Err(counter);
        }
        for (i, job) in jobs.iter().enumerate() {
            let out_of_sync = Err(InvariantViolation::IndexOutOfSync(job.id()));
            let Some(slot) = self.table.slot_at(i) else {
                return out_of_sync;
            };
            let ranked = self
                .ranked
                .as_slice()
                .iter()
                .filter(|r| r.slot == slot && r.id == job.id())
                .count();
            let listed = self.running.contains(&slot);
            if self.table.id_at(i) != Some(job.id())
                || self.table.index_of(slot) != Some(i)
                || ranked != 1
                || listed != (job.state == JobState::Running)
            {
                return out_of_sync;
            }
        }
        Ok(())
    }
}

/// Sorts `ranked` by `(key, id)`, cheaply when it is nearly sorted (the last pass's order
/// with a few keys moved): insertion sort while it has moved at most `2·len` entries, then
/// the standard unstable sort. The key is total, so either gives the one sorted order.
/// O(len + moves), at most O(len log len) after the fallback.
fn sort_nearly_sorted(ranked: &mut [Ranked]) {
    let mut budget = ranked.len().saturating_mul(2);
    for i in 1..ranked.len() {
        let mut j = i;
        while j > 0 && (ranked[j].key, ranked[j].id) < (ranked[j - 1].key, ranked[j - 1].id) {
            if budget == 0 {
                ranked.sort_unstable_by_key(|r| (r.key, r.id));
                return;
            }
            budget -= 1;
            ranked.swap(j, j - 1);
            j -= 1;
        }
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
