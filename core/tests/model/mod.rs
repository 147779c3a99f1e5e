//! An independent model of what the scheduler promises, and a driver that replays one event
//! stream into both and compares them after every call.
//!
//! The model knows nothing of ranking, keys or placement: it keeps, per GPU, its health and
//! owner and, per live job, its state and attained service, and it applies the
//! core's *decisions* to that state under the rules the docs promise:
//!
//! - a refused event changes nothing, emits nothing, and is refused for a reason the model
//!   also sees (time going backwards, unknown or duplicate id, zero, oversized or
//!   over-capacity request, past deadline, full table, a finish of a job that is not running,
//!   a GPU outside the topology);
//! - only a queued job starts, on exactly its gang of distinct, healthy, free GPUs inside the
//!   topology; only a running job is preempted (for priority only under a preemptive order;
//!   a `GpuDown` under a running job preempts it first, naming that GPU); only a queued job is
//!   rejected; a deferred call (`handle_deferred`) makes no other decision;
//! - a job of class `Never` is never preempted for priority (nor moved: a move is a priority
//!   preemption and a start), and no job is while it has run less than the scheduler's
//!   minimum run quantum since its last start (a move is a start); a GPU failure stops
//!   either; after a complete pass the core's quantum flag says exactly that;
//! - attained service is exactly Σ GPUs × running time (saturating at `u64::MAX`), and
//!   executed time Σ running time;
//! - every accepted job is live exactly once until it finishes, is cancelled or is rejected;
//! - after a complete pass, an order that skips a blocked head leaves no queued job that fits
//!   in the free healthy GPUs; under a reservation for the queue head, the reservation the
//!   core reports is for a queued job that does not fit the free GPUs, holds its gang of
//!   healthy GPUs, and leaves no other queued job that fits the free GPUs outside it (or,
//!   ending by the set's drain time, all the free GPUs).
//!
//! It is a few hundred lines on purpose, and shares no code with the core: the core's test
//! `core/tests/model_check.rs` drives it with seeded random streams, and the cargo-fuzz
//! target `fuzz/fuzz_targets/event_api.rs` with arbitrary bytes (it includes this file by
//! path).

use gantry_core::{
    DeadlineAdmission, Decision, DurationMs, Event, GpuId, HeadOfLine, JobId, JobOrder, JobSpec,
    JobState, Placer, PreemptReason, Preemption, PreemptionClass, SchedError, Scheduler,
    SchedulerConfig, TimeMs, Topology,
};
use std::collections::BTreeMap;

/// GPU capacity of the small schedulers under test (topologies may use fewer); every check
/// below is generic over the capacity, so a harness may also run clusters above the 64 GPUs
/// where placements and releases skip runs of unusable GPUs.
pub const G: usize = 16;
/// Live-job capacity: small, so a full table is reached often.
pub const J: usize = 8;
/// Largest gang.
pub const GANG: usize = 8;
/// Job ids drawn (more than `J`, so ids are reused and unknown ids occur).
const IDS: u8 = 24;
/// Bytes per encoded operation (see [`Op::decode`]).
pub const OP_BYTES: usize = 6;
/// Follow-up ticks a caller may need to drain a pass: every decision takes a slot and a pass
/// makes at most one decision per live job plus one per preemption, so `2·J + 2` rounds of a
/// one-slot buffer always suffice.
const MAX_ROUNDS: usize = 2 * J + 2;

/// One operation of a stream: the event, the time it is sent at, and whether it goes through
/// `handle_deferred` (no scheduling pass).
#[derive(Clone, Copy, Debug)]
pub struct Op {
    /// The time passed in.
    pub now: u64,
    /// The event.
    pub event: Event,
    /// Sent through `handle_deferred`.
    pub deferred: bool,
}

impl Op {
    /// Decodes `OP_BYTES` bytes into an operation at the stream's clock `now` (updated for
    /// time jumps). `running` and `live` name jobs the core holds, so finishes and cancels
    /// hit real jobs often. Times reach `u64::MAX`; garbage is produced on purpose: unknown
    /// ids, zero-GPU and oversized jobs, GPU ids outside the topology, time going backwards,
    /// past, maximal and huge deadlines.
    pub fn decode<const G: usize>(
        bytes: &[u8],
        now: &mut u64,
        running: &[JobId],
        live: &[JobId],
    ) -> Op {
        let b = |i: usize| bytes.get(i).copied().unwrap_or(0);
        let wide = u64::from_le_bytes([b(2), b(3), b(4), b(5), 0, 0, 0, 0]);
        let (kind, a) = (b(0) & 0x3F, b(1));
        // One call in four goes through `handle_deferred`.
        let deferred = b(0) & 0xC0 == 0xC0;
        let at = *now;
        let event = match kind % 16 {
            0..=3 => Event::Submit(submit(a, b(2), b(3), b(4), wide, at)),
            4..=6 => pick(running, a).map_or(Event::Tick, Event::Finish),
            7 => Event::Finish(JobId(u32::from(a % IDS))),
            8 => pick(live, a).map_or(Event::Tick, Event::Cancel),
            9 => Event::Cancel(JobId(u32::from(a % IDS))),
            10 => Event::GpuDown(gpu_id::<G>(a, b(2))),
            11 => Event::GpuUp(gpu_id::<G>(a, b(2))),
            12 | 13 => {
                *now = now.saturating_add(u64::from(u16::from_le_bytes([a, b(2)])));
                Event::Tick
            }
            14 => {
                // A jump far ahead (up to 2^39 ms), or rarely to just below the end of time,
                // where every later deadline has passed and service saturates.
                *now = if a == 0xFF {
                    u64::MAX - u64::from(b(2))
                } else {
                    now.saturating_add(wide << (a >> 5))
                };
                Event::Tick
            }
            _ => {
                return Op {
                    now: at.saturating_sub(u64::from(a)),
                    event: Event::Tick,
                    deferred,
                };
            }
        };
        Op {
            now: *now,
            event,
            deferred,
        }
    }
}

/// A GPU id in `0..G + 4`, so ids past the capacity occur (and past a smaller topology's
/// end): from one byte up to 252 GPUs; above, half below 80 and half from two bytes.
fn gpu_id<const G: usize>(low: u8, high: u8) -> GpuId {
    let ids = G as u16 + 4;
    let raw = if G <= 252 {
        u16::from(low)
    } else if high & 0x80 == 0 {
        // Half of them below 80, where a small topology inside a large capacity ends.
        u16::from(low % 80)
    } else {
        u16::from_le_bytes([low, high & 0x7F])
    };
    GpuId(raw % ids)
}

fn pick(ids: &[JobId], a: u8) -> Option<JobId> {
    (!ids.is_empty()).then(|| ids[usize::from(a) % ids.len()])
}

fn submit(a: u8, gpus: u8, flags: u8, class: u8, wide: u64, now: u64) -> JobSpec {
    // Mostly 1–4 GPUs; one in two draws anything in 0..12 (zero and above the gang too).
    let gpus = if gpus & 0x80 == 0 {
        gpus % 4 + 1
    } else {
        gpus % 12
    };
    let mut spec = JobSpec::new(JobId(u32::from(a % IDS)), u16::from(gpus));
    spec.deadline = match flags & 0x07 {
        1 | 2 => Some(TimeMs(
            now.saturating_add(u64::from(flags) * 97).saturating_sub(50),
        )),
        3 => Some(TimeMs(now.saturating_add(wide))),
        4 => Some(TimeMs::MAX),
        _ => None,
    };
    if flags & 0x08 != 0 {
        spec.declared_length = Some(DurationMs(wide >> (flags >> 4)));
    }
    // One job in four runs to completion once started.
    if class & 0x03 == 0 {
        spec.preemption = PreemptionClass::Never;
    }
    spec
}

/// A live job as the model sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ModelJob {
    gpus: u16,
    state: JobState,
    attained_gpu_ms: u128,
    executed_ms: u128,
    class: PreemptionClass,
    /// When it last started (or moved); meaningful while it runs.
    running_since: u64,
    /// Its declared length, ms, if it declared one.
    declared_ms: Option<u64>,
}

/// Why the core may refuse an event, as the model judges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    TimeWentBackwards,
    UnknownJob,
    DuplicateJob,
    ZeroGpu,
    ExceedsHealthy,
    GangTooLarge,
    DeadlinePassed,
    DeadlineUnreachable,
    TableFull,
    NotRunning,
    UnknownGpu,
}

fn refusal_of(err: &SchedError) -> Option<Refusal> {
    Some(match err {
        SchedError::TimeWentBackwards { .. } => Refusal::TimeWentBackwards,
        SchedError::UnknownJob(_) => Refusal::UnknownJob,
        SchedError::DuplicateJob(_) => Refusal::DuplicateJob,
        SchedError::ZeroGpuRequest(_) => Refusal::ZeroGpu,
        SchedError::RequestExceedsCluster { .. } => Refusal::ExceedsHealthy,
        SchedError::GangTooLarge { .. } => Refusal::GangTooLarge,
        SchedError::DeadlineAlreadyPassed { .. } => Refusal::DeadlinePassed,
        SchedError::DeadlineUnreachable { .. } => Refusal::DeadlineUnreachable,
        SchedError::JobTableFull(_) => Refusal::TableFull,
        SchedError::JobNotRunning(_) => Refusal::NotRunning,
        SchedError::UnknownGpu(_) => Refusal::UnknownGpu,
        _ => return None,
    })
}

/// The model's state.
#[derive(Clone, Debug)]
pub struct Model {
    gpu_count: usize,
    healthy: Vec<bool>,
    owner: Vec<Option<JobId>>,
    jobs: BTreeMap<u32, ModelJob>,
    last_now: u64,
    preemptive: bool,
    skips_blocked_head: bool,
    /// The queue head gets a reservation ([`HeadOfLine::Reserve`]).
    reserves_head: bool,
    /// The scheduler's minimum run quantum, ms.
    min_run: u64,
    /// Submissions whose declared length ends after their deadline are refused
    /// ([`DeadlineAdmission::RefuseUnreachable`]; a restored snapshot may carry it).
    refuses_unreachable: bool,
    /// Accepted submissions, and how they left: finished, cancelled, rejected.
    accepted: u64,
    left: u64,
}

/// What one stream did, for tests that want to see the checks were exercised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Calls the core accepted.
    pub accepted_calls: u64,
    /// Calls it refused (each for a reason the model saw).
    pub refused_calls: u64,
    /// Starts, preemptions and rejections checked.
    pub starts: u64,
    /// Preemptions (priority or failure).
    pub preemptions: u64,
    /// Rejections.
    pub rejections: u64,
    /// Follow-up calls for a full decision buffer.
    pub follow_ups: u64,
    /// Idle-GPU checks made after complete passes with a queue.
    pub idle_checks: u64,
    /// Pinned running jobs seen after complete passes (class `Never` or inside the quantum).
    pub pinned_checks: u64,
    /// Reservations checked after complete passes (under [`HeadOfLine::Reserve`]).
    pub reservations: u64,
}

impl core::ops::AddAssign for Tally {
    fn add_assign(&mut self, other: Self) {
        self.accepted_calls += other.accepted_calls;
        self.refused_calls += other.refused_calls;
        self.starts += other.starts;
        self.preemptions += other.preemptions;
        self.rejections += other.rejections;
        self.follow_ups += other.follow_ups;
        self.idle_checks += other.idle_checks;
        self.pinned_checks += other.pinned_checks;
        self.reservations += other.reservations;
    }
}

impl Model {
    fn new<O: JobOrder, P: Placer<G>, const G: usize>(core: &Scheduler<O, P, G, J, GANG>) -> Self {
        let gpu_count = core.topology().gpu_count();
        let config = core.config();
        Self {
            gpu_count,
            healthy: vec![true; gpu_count],
            owner: vec![None; gpu_count],
            jobs: BTreeMap::new(),
            last_now: 0,
            preemptive: config.preemption == Preemption::On,
            skips_blocked_head: config.head_of_line == HeadOfLine::Skip,
            reserves_head: config.head_of_line == HeadOfLine::Reserve,
            min_run: config.min_run.0,
            refuses_unreachable: config.deadline_admission == DeadlineAdmission::RefuseUnreachable,
            accepted: 0,
            left: 0,
        }
    }

    /// The model of a core restored from a snapshot (which may have been mutated): the GPUs'
    /// health and owners, the live jobs' states and service, and the clock are taken from
    /// it as they are; from then on the model's rules apply to every call. Only for a state
    /// the core accepted (`check_invariants` holds).
    pub fn from_core<O: JobOrder, P: Placer<G>, const G: usize>(
        core: &Scheduler<O, P, G, J, GANG>,
    ) -> Self {
        let mut model = Self::new(core);
        let gpus = (0..model.gpu_count as u16).map(GpuId);
        model.healthy = gpus.clone().map(|g| core.is_healthy(g)).collect();
        model.owner = gpus.map(|g| core.gpu_owner(g)).collect();
        for job in core.jobs() {
            let m = ModelJob {
                gpus: job.gpus(),
                state: job.state(),
                attained_gpu_ms: u128::from(job.attained_gpu_ms_at(core.now())),
                executed_ms: u128::from(job.executed_at(core.now()).0),
                class: job.preemption_class(),
                running_since: job.running_since().0,
                declared_ms: job.declared_length().map(|d| d.0),
            };
            model.jobs.insert(job.id().0, m);
        }
        model.accepted = model.jobs.len() as u64;
        model.last_now = core.now().0;
        model
    }

    fn healthy_count(&self) -> usize {
        self.healthy.iter().filter(|&&h| h).count()
    }

    fn free_count(&self) -> usize {
        (0..self.gpu_count)
            .filter(|&g| self.healthy[g] && self.owner[g].is_none())
            .count()
    }

    /// Every reason the event may be refused now; empty = it must be accepted.
    fn refusals(&self, now: u64, event: &Event) -> Vec<Refusal> {
        let mut out = Vec::new();
        if now < self.last_now {
            out.push(Refusal::TimeWentBackwards);
        }
        let live = |id: JobId| self.jobs.get(&id.0);
        match *event {
            Event::Submit(spec) => {
                let checks = [
                    (spec.gpus == 0, Refusal::ZeroGpu),
                    (live(spec.id).is_some(), Refusal::DuplicateJob),
                    (usize::from(spec.gpus) > GANG, Refusal::GangTooLarge),
                    (
                        usize::from(spec.gpus) > self.healthy_count(),
                        Refusal::ExceedsHealthy,
                    ),
                    (
                        spec.deadline.is_some_and(|d| d.0 <= now),
                        Refusal::DeadlinePassed,
                    ),
                    (
                        self.refuses_unreachable
                            && spec.deadline.zip(spec.declared_length).is_some_and(
                                |(deadline, length)| now.saturating_add(length.0) > deadline.0,
                            ),
                        Refusal::DeadlineUnreachable,
                    ),
                    (self.jobs.len() >= J, Refusal::TableFull),
                ];
                out.extend(checks.iter().filter(|c| c.0).map(|c| c.1));
            }
            Event::Finish(id) => match live(id) {
                None => out.push(Refusal::UnknownJob),
                Some(j) if j.state != JobState::Running => out.push(Refusal::NotRunning),
                Some(_) => {}
            },
            Event::Cancel(id) if live(id).is_none() => out.push(Refusal::UnknownJob),
            Event::GpuDown(g) | Event::GpuUp(g) if usize::from(g.0) >= self.gpu_count => {
                out.push(Refusal::UnknownGpu)
            }
            _ => {}
        }
        out
    }

    /// Credits running jobs up to `now`.
    fn accrue(&mut self, now: u64) {
        let dt = u128::from(now.saturating_sub(self.last_now));
        for job in self.jobs.values_mut() {
            if job.state == JobState::Running {
                job.attained_gpu_ms += dt * u128::from(job.gpus);
                job.executed_ms += dt;
            }
        }
        self.last_now = self.last_now.max(now);
    }

    fn release(&mut self, id: JobId) {
        for owner in self.owner.iter_mut().filter(|o| **o == Some(id)) {
            *owner = None;
        }
    }

    fn preempt(&mut self, id: JobId) -> Result<(), String> {
        let job = self
            .jobs
            .get_mut(&id.0)
            .ok_or(format!("preempted {id:?} is not live"))?;
        if job.state != JobState::Running {
            return Err(format!("preempted {id:?} is {:?}, not running", job.state));
        }
        job.state = JobState::Preempted;
        self.release(id);
        Ok(())
    }

    fn remove(&mut self, id: JobId) {
        self.release(id);
        self.jobs.remove(&id.0);
        self.left += 1;
    }

    /// Applies an accepted event; returns the preemption it must cause, if any.
    fn apply_event(&mut self, event: Event) -> Result<Option<(JobId, GpuId)>, String> {
        match event {
            Event::Submit(spec) => {
                self.jobs.insert(
                    spec.id.0,
                    ModelJob {
                        gpus: spec.gpus,
                        state: JobState::Waiting,
                        attained_gpu_ms: 0,
                        executed_ms: 0,
                        class: spec.preemption,
                        running_since: 0,
                        declared_ms: spec.declared_length.map(|d| d.0),
                    },
                );
                self.accepted += 1;
            }
            Event::Finish(id) | Event::Cancel(id) => self.remove(id),
            Event::GpuDown(g) => {
                let i = usize::from(g.0);
                self.healthy[i] = false;
                if let Some(id) = self.owner[i] {
                    self.preempt(id)?;
                    return Ok(Some((id, g)));
                }
            }
            Event::GpuUp(g) => self.healthy[usize::from(g.0)] = true,
            Event::Tick => {}
        }
        Ok(None)
    }

    /// Applies the core's decisions, checking each is allowed.
    fn apply_decisions(
        &mut self,
        decisions: &[Decision<GANG>],
        in_pass: bool,
        tally: &mut Tally,
    ) -> Result<(), String> {
        for d in decisions {
            match d {
                Decision::Preempt {
                    reason: PreemptReason::GpuFailed(g),
                    ..
                } => {
                    return Err(format!("a GpuFailed({g:?}) preemption out of place: {d:?}"));
                }
                _ if !in_pass => return Err(format!("a deferred call decided {d:?}")),
                Decision::Preempt { job, .. } => {
                    if !self.preemptive {
                        return Err(format!("non-preemptive order preempted {job:?}"));
                    }
                    if let Some(j) = self.jobs.get(&job.0) {
                        if j.class == PreemptionClass::Never {
                            return Err(format!("{job:?} of class Never preempted for priority"));
                        }
                        let ran = self.last_now.saturating_sub(j.running_since);
                        if j.state == JobState::Running && ran < self.min_run {
                            return Err(format!(
                                "{job:?} preempted after {ran} ms, inside its {} ms quantum",
                                self.min_run
                            ));
                        }
                    }
                    self.preempt(*job)?;
                    tally.preemptions += 1;
                }
                Decision::Reject { job, .. } => {
                    let state = self.jobs.get(&job.0).map(|j| j.state);
                    if !state.is_some_and(JobState::is_queued) {
                        return Err(format!("rejected {job:?} in state {state:?}"));
                    }
                    self.remove(*job);
                    tally.rejections += 1;
                }
                Decision::Start { job, gpus } => {
                    self.start(*job, gpus.as_slice())?;
                    tally.starts += 1;
                }
            }
        }
        Ok(())
    }

    fn start(&mut self, id: JobId, gpus: &[GpuId]) -> Result<(), String> {
        let job = self
            .jobs
            .get(&id.0)
            .ok_or(format!("started {id:?} is not live"))?;
        if !job.state.is_queued() {
            return Err(format!("started {id:?} is {:?}", job.state));
        }
        if gpus.len() != usize::from(job.gpus) {
            return Err(format!("{id:?} wants {} GPUs, got {gpus:?}", job.gpus));
        }
        for g in gpus {
            let i = usize::from(g.0);
            if i >= self.gpu_count {
                return Err(format!("{id:?} got {g:?} outside the topology"));
            }
            if !self.healthy[i] {
                return Err(format!("{id:?} got failed {g:?}"));
            }
            if let Some(other) = self.owner[i] {
                return Err(format!("{id:?} got {g:?}, held by {other:?}"));
            }
            self.owner[i] = Some(id);
        }
        let now = self.last_now;
        if let Some(job) = self.jobs.get_mut(&id.0) {
            job.state = JobState::Running;
            job.running_since = now;
        }
        Ok(())
    }

    /// After a complete pass: each job's class, start and quantum flag as the core reports
    /// them (the flag is brought up to date by the pass, so only then).
    fn check_quanta<O: JobOrder, P: Placer<G>, const G: usize>(
        &self,
        core: &Scheduler<O, P, G, J, GANG>,
        tally: &mut Tally,
    ) -> Result<(), String> {
        for job in core.jobs() {
            let m = &self.jobs[&job.id().0];
            let running = m.state == JobState::Running;
            let in_quantum =
                running && self.last_now.saturating_sub(m.running_since) < self.min_run;
            let pinned = running && (in_quantum || m.class == PreemptionClass::Never);
            let seen = (
                job.preemption_class(),
                job.in_quantum(),
                job.is_pinned(),
                running.then(|| job.running_since().0),
            );
            let want = (
                m.class,
                in_quantum,
                pinned,
                running.then_some(m.running_since),
            );
            if seen != want {
                return Err(format!(
                    "{:?}: core (class, in quantum, pinned, running since) {seen:?}, model \
                     {want:?}",
                    job.id()
                ));
            }
            tally.pinned_checks += u64::from(pinned);
        }
        Ok(())
    }

    /// The core's state against the model's.
    fn compare<O: JobOrder, P: Placer<G>, const G: usize>(
        &self,
        core: &Scheduler<O, P, G, J, GANG>,
    ) -> Result<(), String> {
        core.check_invariants()
            .map_err(|v| format!("core invariant: {v:?}"))?;
        if core.now().0 != self.last_now {
            return Err(format!(
                "core time {} vs model {}",
                core.now().0,
                self.last_now
            ));
        }
        let live: Vec<u32> = core.jobs().map(|j| j.id().0).collect();
        let mut sorted = live.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let expected: Vec<u32> = self.jobs.keys().copied().collect();
        if sorted != expected || live.len() != sorted.len() {
            return Err(format!("core live jobs {live:?}, model {expected:?}"));
        }
        if self.accepted != self.jobs.len() as u64 + self.left {
            return Err("model accounting broke".into());
        }
        for job in core.jobs() {
            let m = &self.jobs[&job.id().0];
            let cap = |x: u128| u64::try_from(x).unwrap_or(u64::MAX);
            // Preemption counts and first starts are not in the core's job record: a caller
            // sees them in the decisions.
            let seen = (
                job.gpus(),
                job.state(),
                job.attained_gpu_ms_at(core.now()),
                job.executed_at(core.now()).0,
            );
            let want = (m.gpus, m.state, cap(m.attained_gpu_ms), cap(m.executed_ms));
            if seen != want {
                return Err(format!(
                    "{:?}: core (gpus, state, attained, executed) {seen:?}, model {want:?}",
                    job.id()
                ));
            }
        }
        for g in 0..G {
            let gpu = GpuId(g as u16);
            let owner = self.owner.get(g).copied().flatten();
            let healthy = self.healthy.get(g).copied().unwrap_or(false);
            if core.gpu_owner(gpu) != owner || core.is_healthy(gpu) != healthy {
                return Err(format!(
                    "{gpu:?}: core owner {:?} healthy {}, model {owner:?} {healthy}",
                    core.gpu_owner(gpu),
                    core.is_healthy(gpu)
                ));
            }
        }
        let busy = self.owner.iter().filter(|o| o.is_some()).count();
        if core.busy_gpu_count() != busy || core.healthy_gpu_count() != self.healthy_count() {
            return Err("core GPU counters differ from the model".into());
        }
        Ok(())
    }

    /// After a complete pass under [`HeadOfLine::Reserve`], the core's reservation
    /// (`Scheduler::reservation`, the core's own account, judged here against the model's
    /// state): without one, no queued job fits the healthy cluster; with one, its head is
    /// a queued job that fits the healthy cluster but not the free GPUs, its set is
    /// exactly that many healthy GPUs inside the topology, `jobs_to_end` counts the jobs
    /// holding them, its drain time is known only if each of them declared a length and is
    /// no earlier than any of them can end by it, and no other queued job fits in the free
    /// GPUs outside the set, nor, ending by the drain time by its declared length, in all
    /// the free GPUs.
    fn check_reservation<O: JobOrder, P: Placer<G>, const G: usize>(
        &self,
        core: &Scheduler<O, P, G, J, GANG>,
        tally: &mut Tally,
    ) -> Result<(), String> {
        if !self.reserves_head {
            return Ok(());
        }
        let healthy = self.healthy_count();
        let free = self.free_count();
        let queued = || self.jobs.iter().filter(|(_, j)| j.state.is_queued());
        let Some(r) = core.reservation() else {
            return match queued().find(|(_, j)| usize::from(j.gpus) <= healthy) {
                Some((id, job)) => Err(format!(
                    "job {id} ({} GPUs) waits with no reservation on {healthy} healthy GPUs",
                    job.gpus
                )),
                None => Ok(()),
            };
        };
        let head = self
            .jobs
            .get(&r.job.0)
            .filter(|j| j.state.is_queued())
            .ok_or_else(|| format!("reservation for job {}, not a queued job", r.job.0))?;
        let need = usize::from(head.gpus);
        if need > healthy || need <= free {
            return Err(format!(
                "reservation for job {} ({need} GPUs) with {free} free of {healthy} healthy",
                r.job.0
            ));
        }
        let set: Vec<usize> = (0..G).filter(|&g| r.gpus.allows(GpuId(g as u16))).collect();
        if set.len() != need || set.iter().any(|&g| g >= self.gpu_count || !self.healthy[g]) {
            return Err(format!(
                "reservation for job {} ({need} GPUs) holds GPUs {set:?}",
                r.job.0
            ));
        }
        let mut holders: Vec<JobId> = set.iter().filter_map(|&g| self.owner[g]).collect();
        holders.sort_unstable();
        holders.dedup();
        if holders.len() != r.jobs_to_end {
            return Err(format!(
                "reservation for job {} counts {} jobs to end, its GPUs are held by {holders:?}",
                r.job.0, r.jobs_to_end
            ));
        }
        let now = self.last_now;
        for id in &holders {
            let job = &self.jobs[&id.0];
            let remaining = job.declared_ms.map(|len| {
                let executed = u64::try_from(job.executed_ms).unwrap_or(u64::MAX);
                now.saturating_add(len.saturating_sub(executed))
            });
            match (r.drained_by, remaining) {
                (Some(d), Some(end)) if d.0 < end => {
                    return Err(format!(
                        "reservation drains by {} ms, job {} runs to {end} ms",
                        d.0, id.0
                    ));
                }
                (Some(d), None) => {
                    return Err(format!(
                        "reservation drains by {} ms, job {} declared no length",
                        d.0, id.0
                    ));
                }
                _ => {}
            }
        }
        let outside = (0..self.gpu_count)
            .filter(|&g| self.healthy[g] && self.owner[g].is_none() && !set.contains(&g))
            .count();
        for (id, job) in queued().filter(|(id, _)| **id != r.job.0) {
            let gpus = usize::from(job.gpus);
            if gpus <= outside {
                return Err(format!(
                    "job {id} ({gpus} GPUs) waits while {outside} GPUs outside job {}'s reservation are free",
                    r.job.0
                ));
            }
            let ends_in_time = matches!(
                (r.drained_by, job.declared_ms),
                (Some(d), Some(len)) if now.saturating_add(len) <= d.0
            );
            if ends_in_time && gpus <= free {
                return Err(format!(
                    "job {id} ({gpus} GPUs) ends before job {}'s reservation drains and waits while {free} GPUs are free",
                    r.job.0
                ));
            }
        }
        tally.reservations += 1;
        Ok(())
    }

    /// After a complete pass: no queued job fits in the free healthy GPUs (orders that skip a
    /// blocked head only).
    fn check_no_idle_fit(&self, tally: &mut Tally) -> Result<(), String> {
        if !self.skips_blocked_head {
            return Ok(());
        }
        let free = self.free_count();
        let queued = self.jobs.iter().filter(|(_, j)| j.state.is_queued());
        let mut any = false;
        for (id, job) in queued {
            any = true;
            if usize::from(job.gpus) <= free {
                return Err(format!(
                    "job {id} ({} GPUs) waits while {free} healthy GPUs are idle",
                    job.gpus
                ));
            }
        }
        tally.idle_checks += u64::from(any);
        Ok(())
    }
}

type Snapshot = (Vec<gantry_core::Job>, Vec<Option<JobId>>, Vec<bool>, TimeMs);

fn snapshot<O: JobOrder, P: Placer<G>, const G: usize>(
    s: &Scheduler<O, P, G, J, GANG>,
) -> Snapshot {
    let gpus = (0..G as u16).map(GpuId);
    (
        s.jobs().copied().collect::<Vec<_>>(),
        gpus.clone().map(|g| s.gpu_owner(g)).collect(),
        gpus.map(|g| s.is_healthy(g)).collect(),
        s.now(),
    )
}

/// Replays the operations encoded in `bytes` (`OP_BYTES` each) into a scheduler with this
/// order, placer, topology, minimum run quantum and head-of-line rule and a `D`-slot
/// decision buffer, and into the model; returns the first disagreement as text, naming the
/// operation.
#[allow(dead_code)] // the fuzz target `event_api`'s entry; `model_check.rs` has its own driver
pub fn check_stream_with<O: JobOrder, P: Placer<G>, const G: usize, const D: usize>(
    order: O,
    placer: P,
    topology: Topology<G>,
    min_run: DurationMs,
    head_of_line: HeadOfLine,
    bytes: &[u8],
) -> Result<Tally, String> {
    let config = SchedulerConfig::for_order(&order)
        .with_min_run(min_run)
        .with_head_of_line(head_of_line);
    let mut core: Box<Scheduler<O, P, G, J, GANG>> =
        Box::new(Scheduler::with_config(topology, order, placer, config));
    let mut model = Model::new(&core);
    drive::<O, P, G, D>(&mut core, &mut model, bytes)
}

/// As [`check_stream_with`], into `core` as it is (one restored from a snapshot) and a model of
/// its state ([`Model::from_core`]), compared first.
pub fn check_stream_from<O: JobOrder, P: Placer<G>, const G: usize, const D: usize>(
    core: &mut Scheduler<O, P, G, J, GANG>,
    bytes: &[u8],
) -> Result<Tally, String> {
    let mut model = Model::from_core(core);
    model
        .compare(core)
        .map_err(|e| format!("restored state: {e}"))?;
    drive::<O, P, G, D>(core, &mut model, bytes)
}

/// Replays `bytes` into `core` and `model`, checking after every call.
fn drive<O: JobOrder, P: Placer<G>, const G: usize, const D: usize>(
    core: &mut Scheduler<O, P, G, J, GANG>,
    model: &mut Model,
    bytes: &[u8],
) -> Result<Tally, String> {
    let mut tally = Tally::default();
    let mut clock = model.last_now;
    for (step, chunk) in bytes.chunks_exact(OP_BYTES).enumerate() {
        let running: Vec<JobId> = (core.jobs())
            .filter(|j| j.state() == JobState::Running)
            .map(|j| j.id())
            .collect();
        let live: Vec<JobId> = core.jobs().map(|j| j.id()).collect();
        let op = Op::decode::<G>(chunk, &mut clock, &running, &live);
        one_call::<O, P, G, D>(core, model, op, &mut tally)
            .map_err(|e| format!("op {step} ({op:?}): {e}"))?;
    }
    Ok(tally)
}

fn one_call<O: JobOrder, P: Placer<G>, const G: usize, const D: usize>(
    core: &mut Scheduler<O, P, G, J, GANG>,
    model: &mut Model,
    op: Op,
    tally: &mut Tally,
) -> Result<(), String> {
    let refusals = model.refusals(op.now, &op.event);
    let before = snapshot(core);
    let mut out: heapless::Vec<Decision<GANG>, D> = heapless::Vec::new();
    let now = TimeMs(op.now);
    let result = if op.deferred {
        core.handle_deferred(now, op.event, &mut out)
    } else {
        core.handle(now, op.event, &mut out)
    };
    let outcome = match result {
        Err(err) => {
            let why = refusal_of(&err);
            if !why.is_some_and(|r| refusals.contains(&r)) {
                return Err(format!(
                    "refused with {err:?}; the model allows {refusals:?}"
                ));
            }
            if snapshot(core) != before || !out.is_empty() {
                return Err(format!(
                    "refusal {err:?} changed the state or decided {out:?}"
                ));
            }
            tally.refused_calls += 1;
            return Ok(());
        }
        Ok(outcome) => outcome,
    };
    if !refusals.is_empty() {
        return Err(format!("accepted; the model expected one of {refusals:?}"));
    }
    tally.accepted_calls += 1;
    model.accrue(op.now);
    let failed = model.apply_event(op.event)?;
    let mut decisions: &[Decision<GANG>] = &out;
    if let Some((job, gpu)) = failed {
        let want = Decision::Preempt {
            job,
            reason: PreemptReason::GpuFailed(gpu),
        };
        if decisions.first() != Some(&want) {
            return Err(format!("expected {want:?} first, got {decisions:?}"));
        }
        decisions = &decisions[1..];
        tally.preemptions += 1;
    }
    model.apply_decisions(decisions, !op.deferred, tally)?;
    let mut more = outcome.more_pending;
    let mut rounds = 0;
    while more {
        rounds += 1;
        if rounds > MAX_ROUNDS {
            return Err(format!("more_pending after {MAX_ROUNDS} follow-up ticks"));
        }
        out.clear();
        more = core
            .handle(now, Event::Tick, &mut out)
            .map_err(|e| format!("follow-up tick refused: {e:?}"))?
            .more_pending;
        model.apply_decisions(&out, true, tally)?;
        tally.follow_ups += 1;
    }
    model.compare(core)?;
    if !op.deferred {
        model.check_no_idle_fit(tally)?;
        model.check_quanta(core, tally)?;
        model.check_reservation(core, tally)?;
    }
    Ok(())
}

/// The model's own checks fail on the faults they exist to catch (so a passing stream means
/// something): decisions a broken core could make, fed to the model by hand.
#[cfg(test)]
mod catches {
    use super::*;
    use gantry_core::{Fifo, FirstFit, GpuSet, LinkWeights};

    fn model_with_two_jobs() -> Model {
        let topology = Topology::<G>::uniform(1, 1, 4, LinkWeights::PROXIMITY_DRL).unwrap();
        let core: Scheduler<Fifo, FirstFit, G, J, GANG> = Scheduler::new(topology, Fifo, FirstFit);
        let mut model = Model::new(&core);
        for id in [1, 2] {
            model
                .apply_event(Event::Submit(JobSpec::new(JobId(id), 2)))
                .unwrap();
        }
        model
    }

    fn start(job: u32, gpus: &[u16]) -> Decision<GANG> {
        let mut set = GpuSet::new();
        for &g in gpus {
            set.insert(GpuId(g)).unwrap();
        }
        Decision::Start {
            job: JobId(job),
            gpus: set,
        }
    }

    fn apply(model: &mut Model, decisions: &[Decision<GANG>]) -> Result<(), String> {
        model.apply_decisions(decisions, true, &mut Tally::default())
    }

    #[test]
    fn a_gpu_given_twice_is_caught() {
        let mut m = model_with_two_jobs();
        let err = apply(&mut m, &[start(1, &[0, 1]), start(2, &[1, 2])]).unwrap_err();
        assert!(err.contains("held by"), "{err}");
    }

    #[test]
    fn a_failed_gpu_given_is_caught() {
        let mut m = model_with_two_jobs();
        m.apply_event(Event::GpuDown(GpuId(3))).unwrap();
        let err = apply(&mut m, &[start(1, &[2, 3])]).unwrap_err();
        assert!(err.contains("failed"), "{err}");
    }

    #[test]
    fn a_wrong_gang_or_a_bad_transition_is_caught() {
        let mut m = model_with_two_jobs();
        assert!(apply(&mut m, &[start(1, &[0])]).is_err());
        let preempt = Decision::Preempt {
            job: JobId(2),
            reason: PreemptReason::Priority,
        };
        assert!(apply(&mut m, &[preempt]).is_err(), "FIFO does not preempt");
        assert!(apply(&mut m, &[start(1, &[0, 1]), start(1, &[2, 3])]).is_err());
    }

    #[test]
    fn an_idle_gpu_beside_a_fitting_job_is_caught() {
        let mut m = model_with_two_jobs();
        m.skips_blocked_head = true;
        apply(&mut m, &[start(1, &[0, 1])]).unwrap();
        let err = m.check_no_idle_fit(&mut Tally::default()).unwrap_err();
        assert!(err.contains("waits while 2 healthy GPUs are idle"), "{err}");
    }

    #[test]
    fn a_pinned_job_preempted_for_priority_is_caught() {
        let preempt = |job: u32| Decision::Preempt {
            job: JobId(job),
            reason: PreemptReason::Priority,
        };
        // Class Never.
        let mut m = model_with_two_jobs();
        m.preemptive = true;
        m.jobs.get_mut(&1).unwrap().class = PreemptionClass::Never;
        apply(&mut m, &[start(1, &[0, 1])]).unwrap();
        m.accrue(5_000);
        let err = apply(&mut m, &[preempt(1)]).unwrap_err();
        assert!(err.contains("class Never"), "{err}");
        // Inside a 1 s quantum at 999 ms, allowed at 1,000 ms.
        let mut m = model_with_two_jobs();
        m.preemptive = true;
        m.min_run = 1_000;
        apply(&mut m, &[start(2, &[0, 1])]).unwrap();
        m.accrue(999);
        let err = apply(&mut m, &[preempt(2)]).unwrap_err();
        assert!(err.contains("inside its 1000 ms quantum"), "{err}");
        m.accrue(1_000);
        apply(&mut m, &[preempt(2)]).unwrap();
    }

    #[test]
    fn service_is_credited_per_gpu_and_saturates() {
        let mut m = model_with_two_jobs();
        apply(&mut m, &[start(1, &[0, 1])]).unwrap();
        m.accrue(1_000);
        assert_eq!(m.jobs[&1].attained_gpu_ms, 2_000);
        assert_eq!(m.jobs[&2].attained_gpu_ms, 0);
        m.accrue(u64::MAX);
        assert!(m.jobs[&1].attained_gpu_ms > u128::from(u64::MAX));
    }
}
