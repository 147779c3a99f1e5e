//! Scheduler tests: each typed error leaves the state unchanged; GPU failure requeues;
//! no GPU is ever double-booked; decisions survive a postcard round trip.

extern crate std;

use super::*;
use crate::event::RejectReason;
use crate::job::CommProfile;
use crate::order::PriorityKey;
use crate::order::{Fifo, Tias};
use crate::placement::{BestFit, FirstFit};
use crate::time::DurationMs;
use crate::topology::LinkWeights;
use std::vec::Vec;

type Small<P> = Scheduler<Fifo, P, 8, 4, 8>;
type Out = heapless::Vec<Decision<8>, 16>;

/// 1 rack × 2 machines × 4 GPUs.
fn small<P: Placer<8>>(placer: P) -> Small<P> {
    Scheduler::new(
        Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap(),
        Fifo,
        placer,
    )
}

fn spec(id: u32, gpus: u16) -> JobSpec {
    JobSpec::new(JobId(id), gpus)
}

/// Everything observable about a scheduler's state.
fn snapshot<P: Placer<8>>(s: &Small<P>) -> (Vec<Job>, Vec<Option<JobId>>, Vec<bool>, TimeMs) {
    let gpus = (0..8).map(|g| GpuId(g as u16));
    (
        s.jobs().copied().collect::<Vec<_>>(),
        gpus.clone().map(|g| s.gpu_owner(g)).collect(),
        gpus.map(|g| s.is_healthy(g)).collect(),
        s.now(),
    )
}

fn submit<P: Placer<8>>(s: &mut Small<P>, now: u64, id: u32, gpus: u16) -> Out {
    let mut out = Out::new();
    s.handle(TimeMs(now), Event::Submit(spec(id, gpus)), &mut out)
        .unwrap();
    out
}

/// A scheduler at t = 100 with job 1 (4 GPUs) running and job 2 (6 GPUs) queued behind it.
fn busy() -> Small<FirstFit> {
    let mut s = small(FirstFit);
    submit(&mut s, 0, 1, 4);
    submit(&mut s, 100, 2, 6);
    s
}

#[test]
fn every_typed_error_leaves_the_state_unchanged() {
    let full_spec = spec(9, 1);
    let cases: [(Event, u64, SchedError); 9] = [
        (
            Event::Submit(spec(1, 1)),
            100,
            SchedError::DuplicateJob(JobId(1)),
        ),
        (
            Event::Submit(spec(3, 0)),
            100,
            SchedError::ZeroGpuRequest(JobId(3)),
        ),
        (
            Event::Submit(spec(3, 9)),
            100,
            SchedError::GangTooLarge {
                job: JobId(3),
                requested: 9,
                capacity: 8,
            },
        ),
        (
            Event::Finish(JobId(7)),
            100,
            SchedError::UnknownJob(JobId(7)),
        ),
        (
            Event::Cancel(JobId(7)),
            100,
            SchedError::UnknownJob(JobId(7)),
        ),
        (
            Event::Finish(JobId(2)),
            100,
            SchedError::JobNotRunning(JobId(2)),
        ),
        (
            Event::GpuDown(GpuId(8)),
            100,
            SchedError::UnknownGpu(GpuId(8)),
        ),
        (
            Event::Tick,
            99,
            SchedError::TimeWentBackwards {
                now: TimeMs(99),
                last: TimeMs(100),
            },
        ),
        (
            Event::Submit(JobSpec {
                deadline: Some(TimeMs(100)),
                ..spec(3, 1)
            }),
            100,
            SchedError::DeadlineAlreadyPassed {
                job: JobId(3),
                deadline: TimeMs(100),
                now: TimeMs(100),
            },
        ),
    ];
    for (event, now, want) in cases {
        let mut s = busy();
        let before = snapshot(&s);
        let mut out = Out::new();
        assert_eq!(
            s.handle(TimeMs(now), event, &mut out),
            Err(want),
            "{event:?}"
        );
        assert!(out.is_empty());
        assert_eq!(snapshot(&s), before, "{event:?} changed the state");
    }
    // Request larger than the healthy cluster: 8 GPUs, one failed.
    let mut s = busy();
    let mut out = Out::new();
    s.handle(TimeMs(100), Event::GpuDown(GpuId(7)), &mut out)
        .unwrap();
    let before = snapshot(&s);
    let err = s.handle(TimeMs(100), Event::Submit(spec(3, 8)), &mut out);
    assert_eq!(
        err,
        Err(SchedError::RequestExceedsCluster {
            job: JobId(3),
            requested: 8,
            healthy: 7
        })
    );
    assert_eq!(snapshot(&s), before);
    // Job table full (capacity 4): the job comes back.
    let mut s = busy();
    submit(&mut s, 100, 3, 1);
    submit(&mut s, 100, 4, 1);
    let before = snapshot(&s);
    let err = s.handle(TimeMs(100), Event::Submit(full_spec), &mut Out::new());
    assert_eq!(err, Err(SchedError::JobTableFull(full_spec)));
    assert_eq!(snapshot(&s), before);
    // Decision buffer without a free slot.
    let mut s = busy();
    let before = snapshot(&s);
    let mut tiny: heapless::Vec<Decision<8>, 0> = heapless::Vec::new();
    assert_eq!(
        s.handle(TimeMs(100), Event::Tick, &mut tiny),
        Err(SchedError::DecisionBufferFull)
    );
    assert_eq!(snapshot(&s), before);
}

#[test]
fn fifo_blocks_at_the_head_and_starts_in_order() {
    let mut s = busy();
    // Job 3 (1 GPU) fits, but FIFO blocks behind job 2 (6 GPUs, 4 free).
    assert!(submit(&mut s, 200, 3, 1).is_empty());
    let mut out = Out::new();
    s.handle(TimeMs(300), Event::Finish(JobId(1)), &mut out)
        .unwrap();
    let started: Vec<JobId> = out.iter().map(|d| d.job()).collect();
    assert_eq!(started, [JobId(2), JobId(3)]);
    assert!(s.check_invariants().is_ok());
}

#[test]
fn service_accrues_as_gpus_times_time() {
    let mut s = busy();
    s.handle(TimeMs(1_100), Event::Tick, &mut Out::new())
        .unwrap();
    let (job, now) = (s.job(JobId(1)).unwrap(), s.now());
    assert_eq!(job.executed_at(now), DurationMs(1_100));
    assert_eq!(job.attained_gpu_ms_at(now), 4 * 1_100);
    assert_eq!(s.job(JobId(2)).unwrap().attained_gpu_ms_at(now), 0);
    // Read later, a running job's service includes the time since, with no event between.
    assert_eq!(job.attained_gpu_ms_at(TimeMs(1_500)), 4 * 1_500);
}

#[test]
fn gpu_failure_requeues_the_job_which_later_finishes() {
    let mut s = small(BestFit);
    let out = submit(&mut s, 0, 1, 2);
    let Decision::Start { gpus, .. } = &out[0] else {
        panic!("{out:?}")
    };
    let failed = gpus.as_slice()[0];
    let mut out = Out::new();
    s.handle(TimeMs(50), Event::GpuDown(failed), &mut out)
        .unwrap();
    // Preempted for the failure, then restarted on healthy GPUs in the same call.
    assert_eq!(
        out[0],
        Decision::Preempt {
            job: JobId(1),
            reason: PreemptReason::GpuFailed(failed)
        }
    );
    let Decision::Start { job, gpus } = &out[1] else {
        panic!("{out:?}")
    };
    assert_eq!(*job, JobId(1));
    assert!(!gpus.contains(failed));
    let job = s.job(JobId(1)).unwrap();
    assert_eq!(
        (job.state(), job.attained_gpu_ms_at(s.now())),
        (JobState::Running, 100)
    );
    s.handle(TimeMs(90), Event::Finish(JobId(1)), &mut Out::new())
        .unwrap();
    assert!(s.jobs().is_empty());
    assert_eq!(s.busy_gpu_count(), 0);
}

#[test]
fn failure_of_most_gpus_keeps_the_job_queued_until_recovery() {
    let mut s = small(FirstFit);
    submit(&mut s, 0, 1, 6);
    let mut out = Out::new();
    for g in 0..3 {
        s.handle(TimeMs(10), Event::GpuDown(GpuId(g)), &mut out)
            .unwrap();
    }
    // 5 healthy < 6 requested: the job waits, nothing lost.
    assert_eq!(s.job(JobId(1)).unwrap().state(), JobState::Preempted);
    out.clear();
    s.handle(TimeMs(20), Event::GpuUp(GpuId(0)), &mut out)
        .unwrap();
    assert!(matches!(out[0], Decision::Start { job: JobId(1), .. }));
    assert!(s.check_invariants().is_ok());
}

#[test]
fn no_gpu_is_double_booked_under_churn() {
    let mut s: Scheduler<Fifo, BestFit, 8, 16, 8> = Scheduler::new(
        Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap(),
        Fifo,
        BestFit,
    );
    let mut rng = crate::rng::SeededRng::new(42);
    let mut out: heapless::Vec<Decision<8>, 16> = heapless::Vec::new();
    let mut next_id = 0u32;
    for step in 0..2_000u64 {
        out.clear();
        let event = match rng.below(5) {
            0 | 1 => {
                next_id += 1;
                Event::Submit(JobSpec {
                    comm: CommProfile { gradient_mb: 1 },
                    ..spec(next_id, 1 + rng.below(4) as u16)
                })
            }
            2 => match s.jobs().find(|j| j.state() == JobState::Running) {
                Some(j) => Event::Finish(j.id()),
                None => Event::Tick,
            },
            3 => Event::GpuDown(GpuId(rng.below(8) as u16)),
            _ => Event::GpuUp(GpuId(rng.below(8) as u16)),
        };
        let _ = s.handle(TimeMs(step), event, &mut out);
        assert_eq!(s.check_invariants(), Ok(()), "step {step}: {event:?}");
        let mut holders = [None; 8];
        for d in out.iter() {
            if let Decision::Start { job, gpus } = d {
                for g in gpus.as_slice() {
                    assert!(
                        holders[g.index()].is_none(),
                        "gpu {g:?} given twice in one call"
                    );
                    holders[g.index()] = Some(*job);
                }
            }
        }
    }
}

/// A cluster above [`SKIP_ABOVE_GPUS`](crate::placement::SKIP_ABOVE_GPUS) GPUs, where a
/// release skips runs of GPUs the job does not hold and TIAS consolidates gangs over 32
/// machines: under churn with GPU failures every job holds exactly its gang, nothing is
/// double-booked, and every finish and failure frees what it should (`check_invariants`).
#[test]
fn a_large_cluster_keeps_its_gpu_accounting_under_churn() {
    let mut s: std::boxed::Box<Scheduler<Tias, BestFit, 256, 512, 8>> =
        std::boxed::Box::new(Scheduler::new(
            Topology::uniform(2, 16, 8, LinkWeights::PROXIMITY_DRL).unwrap(),
            Tias::default(),
            BestFit,
        ));
    let mut rng = crate::rng::SeededRng::new(7);
    let mut out: heapless::Vec<Decision<8>, 64> = heapless::Vec::new();
    let mut next_id = 0u32;
    let mut starts = 0;
    for step in 0..3_000u64 {
        out.clear();
        let event = match rng.below(8) {
            0..=2 if s.jobs().len() < 500 => {
                next_id += 1;
                Event::Submit(spec(next_id, [1, 1, 2, 3, 4, 8][rng.below(6) as usize]))
            }
            3 | 4 => {
                let running = s.jobs().filter(|j| j.state() == JobState::Running).count();
                match s
                    .jobs()
                    .filter(|j| j.state() == JobState::Running)
                    .nth(rng.below(running.max(1) as u32) as usize)
                {
                    Some(j) => Event::Finish(j.id()),
                    None => Event::Tick,
                }
            }
            5 => Event::GpuDown(GpuId(rng.below(256) as u16)),
            6 => Event::GpuUp(GpuId(rng.below(256) as u16)),
            _ => Event::Tick,
        };
        let _ = s.handle(TimeMs(step * 1_000), event, &mut out);
        assert_eq!(s.check_invariants(), Ok(()), "step {step}: {event:?}");
        starts += out
            .iter()
            .filter(|d| matches!(d, Decision::Start { .. }))
            .count();
    }
    assert!(starts > 1_000, "the churn starts jobs: {starts}");
}

#[test]
fn full_decision_buffer_asks_to_be_called_again() {
    let mut s: Scheduler<Fifo, FirstFit, 8, 8, 8> = Scheduler::new(
        Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap(),
        Fifo,
        FirstFit,
    );
    let mut one: heapless::Vec<Decision<8>, 1> = heapless::Vec::new();
    // Job 1 blocks 8 GPUs; jobs 2-4 queue.
    s.handle(TimeMs(0), Event::Submit(spec(1, 8)), &mut one)
        .unwrap();
    for id in 2..=4 {
        one.clear();
        s.handle(TimeMs(0), Event::Submit(spec(id, 1)), &mut one)
            .unwrap();
    }
    one.clear();
    let outcome = s
        .handle(TimeMs(1), Event::Finish(JobId(1)), &mut one)
        .unwrap();
    assert_eq!(
        outcome,
        HandleOutcome {
            decisions: 1,
            more_pending: true
        }
    );
    let mut started = 1;
    while {
        one.clear();
        let o = s.handle(TimeMs(1), Event::Tick, &mut one).unwrap();
        started += o.decisions;
        o.more_pending
    } {}
    assert_eq!(started, 3);
    assert!(s.check_invariants().is_ok());
}

#[test]
fn events_and_decisions_round_trip_through_postcard() {
    let mut set = GpuSet::<8>::new();
    set.insert(GpuId(3)).unwrap();
    set.insert(GpuId(1)).unwrap();
    let events = [
        Event::Submit(JobSpec {
            deadline: Some(TimeMs(5)),
            declared_length: Some(DurationMs(7)),
            comm: CommProfile { gradient_mb: 100 },
            ..spec(1, 2)
        }),
        Event::Finish(JobId(2)),
        Event::Cancel(JobId(3)),
        Event::GpuDown(GpuId(4)),
        Event::GpuUp(GpuId(4)),
        Event::Tick,
    ];
    let mut buf = [0u8; 64];
    for e in events {
        let bytes = postcard::to_slice(&e, &mut buf).unwrap();
        assert_eq!(postcard::from_bytes::<Event>(bytes).unwrap(), e);
    }
    let decisions: [Decision<8>; 3] = [
        Decision::Start {
            job: JobId(1),
            gpus: set,
        },
        Decision::Preempt {
            job: JobId(1),
            reason: PreemptReason::GpuFailed(GpuId(3)),
        },
        Decision::Reject {
            job: JobId(2),
            reason: RejectReason::DeadlineUnreachable,
        },
    ];
    for d in decisions {
        let bytes = postcard::to_slice(&d, &mut buf).unwrap();
        assert_eq!(postcard::from_bytes::<Decision<8>>(bytes).unwrap(), d);
    }
}

#[test]
fn deferred_events_wait_for_one_pass_and_errors_change_nothing() {
    let mut s = small(FirstFit);
    let mut out = Out::new();
    // Two submissions at one instant: no pass, no decision, both queued.
    s.handle_deferred(TimeMs(5), Event::Submit(spec(0, 4)), &mut out)
        .unwrap();
    s.handle_deferred(TimeMs(5), Event::Submit(spec(1, 4)), &mut out)
        .unwrap();
    assert!(out.is_empty());
    assert!(s.jobs().all(|j| j.state() == JobState::Waiting));
    // A refused deferred event leaves the state as it was.
    let before = snapshot(&s);
    assert_eq!(
        s.handle_deferred(TimeMs(5), Event::Finish(JobId(0)), &mut out),
        Err(SchedError::JobNotRunning(JobId(0)))
    );
    assert_eq!(snapshot(&s), before);
    // One Tick schedules both.
    let outcome = s.handle(TimeMs(5), Event::Tick, &mut out).unwrap();
    assert_eq!(outcome.decisions, 2);
    assert!(s.jobs().all(|j| j.state() == JobState::Running));
    s.check_invariants().unwrap();
}

/// Forwards every [`JobOrder`] method to `O` except `hooks`, which stays at the always-correct
/// default ([`OrderHooks::ALL`]): the reference an order's own hooks are checked against.
#[derive(Clone)]
struct AllHooks<O>(O);

impl<O: JobOrder> JobOrder for AllHooks<O> {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn consolidates_gangs(&self) -> bool {
        self.0.consolidates_gangs()
    }
    fn head_of_line(&self) -> HeadOfLine {
        self.0.head_of_line()
    }
    fn preemption(&self) -> Preemption {
        self.0.preemption()
    }
    fn time_driven(&self) -> bool {
        self.0.time_driven()
    }
    fn refresh(&mut self, job: &mut Job, now: TimeMs) {
        self.0.refresh(job, now)
    }
    fn key(&self, job: &Job, now: TimeMs) -> PriorityKey {
        self.0.key(job, now)
    }
    fn reject(&self, job: &Job, now: TimeMs) -> Option<RejectReason> {
        self.0.reject(job, now)
    }
    fn after_pass(&mut self, job: &mut Job, now: TimeMs) {
        self.0.after_pass(job, now)
    }
    fn advance(&mut self, now: TimeMs) {
        self.0.advance(now)
    }
    fn on_submitted(&mut self, job: &Job, now: TimeMs) {
        self.0.on_submitted(job, now)
    }
    fn on_finished(&mut self, job: &Job, now: TimeMs) {
        self.0.on_finished(job, now)
    }
    fn on_removed(&mut self, job: &Job, now: TimeMs) {
        self.0.on_removed(job, now)
    }
    fn on_capacity(&mut self, healthy_gpus: u32, now: TimeMs) {
        self.0.on_capacity(healthy_gpus, now)
    }
    fn epoch(&self) -> u32 {
        self.0.epoch()
    }
    fn next_review(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        self.0.next_review(job, now)
    }
    /// The same budget per pass: the re-keys go in other slices (the reference re-keys
    /// more), but the decisions, which come once every key due is up to date, are cut at
    /// the same points.
    fn jobs_per_pass(&self) -> usize {
        self.0.jobs_per_pass()
    }
}

type Churn<O> = Scheduler<O, BestFit, 16, 24, 8>;

/// One seeded random event for a churn run: submissions with lengths and some deadlines,
/// finishes and cancels of live jobs, GPU failures and repairs, ticks.
fn churn_event<O: JobOrder>(
    s: &Churn<O>,
    rng: &mut crate::rng::SeededRng,
    now: u64,
    next_id: &mut u32,
) -> Event {
    let pick = |rng: &mut crate::rng::SeededRng, running: bool| {
        let live: Vec<&Job> = s
            .jobs()
            .filter(|j| !running || j.state() == JobState::Running)
            .collect();
        (!live.is_empty()).then(|| live[rng.below(live.len() as u32) as usize].id())
    };
    match rng.below(9) {
        0..=2 => {
            *next_id += 1;
            let length = 60_000 + u64::from(rng.below(4_000_000));
            let deadline = (rng.below(3) == 0)
                .then(|| TimeMs(now + length / 2 + u64::from(rng.below(8_000_000))));
            Event::Submit(JobSpec {
                deadline,
                declared_length: Some(DurationMs(length)),
                ..spec(*next_id, 1 + rng.below(6) as u16)
            })
        }
        3 | 4 => pick(rng, true).map_or(Event::Tick, Event::Finish),
        5 => pick(rng, false).map_or(Event::Tick, Event::Cancel),
        6 => Event::GpuDown(GpuId(rng.below(16) as u16)),
        7 => Event::GpuUp(GpuId(rng.below(16) as u16)),
        _ => Event::Tick,
    }
}

/// Whether the indexed scheduler's next review is no later than the reference's (`None`:
/// never). It may be earlier: an epoch that moves a job's review later leaves the earlier
/// one armed ([`EpochEffect::Review`](crate::order::EpochEffect::Review)), and that review
/// then re-keys the job and changes nothing, which the equal decisions and job tables show.
pub(crate) fn review_not_late(fast: Option<TimeMs>, reference: Option<TimeMs>) -> bool {
    match (fast, reference) {
        (Some(f), Some(r)) => f <= r,
        (_, None) => true,
        (None, Some(_)) => false,
    }
}

/// Runs the same seeded churn through `order` with its own hooks and through the
/// all-hooks reference, with a small decision buffer (partial passes), and asserts equal
/// decisions, equal job tables and intact invariants at every step.
fn hooks_match_the_reference<O: JobOrder + Clone>(order: O) {
    hooks_match_with_buffer::<O, 3>(order);
}

/// As [`hooks_match_the_reference`] with a decision buffer of `D`. A pass cut short by the
/// order's job budget goes on at a follow-up tick with an empty buffer, where a gang's
/// consolidation may find room for its moves that the full pass (after the event's own
/// decisions) did not have; with room for every move of the churn's gangs (at most 6 GPUs:
/// 2·6 + 1 decisions besides a GPU failure's preemption) the decisions are the same.
fn hooks_match_with_buffer<O: JobOrder + Clone, const D: usize>(order: O) {
    let topo = || Topology::uniform(2, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap();
    let name = order.name();
    let mut fast: Churn<O> = Scheduler::new(topo(), order.clone(), BestFit);
    let mut reference: Churn<AllHooks<O>> = Scheduler::new(topo(), AllHooks(order), BestFit);
    let mut rng = crate::rng::SeededRng::new(7);
    let (mut now, mut next_id) = (0u64, 0u32);
    for step in 0..3_000 {
        now += u64::from(rng.below(600_000));
        let event = churn_event(&fast, &mut rng, now, &mut next_id);
        // Each side is driven to the end of its pass (its follow-up ticks at this instant:
        // a full buffer, or the order's job budget per pass), and the instant's decisions
        // compared whole.
        let (ra, a) = drive::<O, D>(&mut fast, TimeMs(now), event);
        let (rb, b) = drive::<AllHooks<O>, D>(&mut reference, TimeMs(now), event);
        assert_eq!(ra, rb, "{name} step {step}: {event:?}");
        assert_eq!(a, b, "{name} step {step}: {event:?}");
        assert!(fast.jobs().eq(reference.jobs()), "{name} step {step}");
        assert!(
            review_not_late(fast.next_review(), reference.next_review()),
            "{name} step {step}: next review {:?} after {:?}",
            fast.next_review(),
            reference.next_review()
        );
        assert_eq!(fast.check_invariants(), Ok(()), "{name} step {step}");
        assert_eq!(reference.check_invariants(), Ok(()), "{name} step {step}");
    }
}

/// `event` at `now`, then follow-up ticks while the pass asks for them, with a decision
/// buffer of `D` (partial passes): the event's result and every decision of the instant.
fn drive<O: JobOrder, const D: usize>(
    s: &mut Churn<O>,
    now: TimeMs,
    event: Event,
) -> (Result<(), crate::SchedError>, Vec<Decision<8>>) {
    let mut all = Vec::new();
    let mut event = event;
    let mut first = None;
    for _ in 0..1_000 {
        let mut out: heapless::Vec<Decision<8>, D> = heapless::Vec::new();
        let result = s.handle(now, event, &mut out);
        all.extend_from_slice(&out);
        let more = result.is_ok_and(|o| o.more_pending);
        first.get_or_insert(result.map(|_| ()));
        if !more {
            break;
        }
        event = Event::Tick;
    }
    (first.unwrap_or(Ok(())), all)
}

#[test]
fn order_hooks_only_skip_work_that_changes_nothing() {
    use crate::order::{CompatPolicy, Edf, Las, LasConfig, LengthMetric, Sjf, Srtf};
    use crate::order::{
        HopelessPolicy, RelaxedDeadlinePlacement, Tias, TiasConfig, TiresiasCompat,
    };
    hooks_match_the_reference(Fifo);
    hooks_match_the_reference(Sjf::default());
    hooks_match_the_reference(Srtf::default());
    hooks_match_the_reference(Edf);
    hooks_match_the_reference(Las::new(LasConfig::default()));
    hooks_match_the_reference(Tias::new(TiasConfig::default()));
    hooks_match_the_reference(Tias::new(TiasConfig::host()));
    // Passes of 2 jobs each: the walks and the due re-keys go in slices.
    hooks_match_with_buffer::<_, 16>(Tias::new(TiasConfig {
        jobs_per_pass: 2,
        min_samples: 2,
        table_min_samples: 3,
        table_rows_per_event: 1,
        ..TiasConfig::default()
    }));
    // Learning early and often (so the epoch moves), rejecting, the other placements;
    // tables built one row per event and switched over 64 s, or at once after every finish.
    hooks_match_the_reference(Tias::new(TiasConfig {
        min_samples: 2,
        hopeless: HopelessPolicy::Reject,
        relaxed: RelaxedDeadlinePlacement::LikeLas,
        table_min_samples: 3,
        ratio_min_deadline_jobs: 1,
        table_rows_per_event: 1,
        deadline_weight: 1,
        ..TiasConfig::default()
    }));
    hooks_match_the_reference(Tias::new(TiasConfig {
        min_samples: 2,
        relaxed: RelaxedDeadlinePlacement::BelowAll,
        hopeless: HopelessPolicy::BestEffort,
        table_min_samples: 2,
        table_every_ms: 0,
        table_switch_step_ms: 0,
        table_rows_per_event: 40,
        big_gang_permille: 300,
        deadline_weight: 1_000,
        ..TiasConfig::default()
    }));
    hooks_match_the_reference(TiresiasCompat::new(CompatPolicy::Dlas(LengthMetric::Time)));
    hooks_match_the_reference(TiresiasCompat::new(CompatPolicy::Shortest(
        LengthMetric::GpuTime,
    )));
}

/// A pass makes at most [`JobOrder::jobs_per_pass`] decisions: twelve jobs that can all
/// start at one instant come three a call (the first three calls only re-key, three jobs
/// each, and the fourth re-keys the last three before it starts three), each call but the
/// last asking for a follow-up tick, and the instant's starts are those of a pass without
/// the limit.
#[test]
fn a_pass_makes_at_most_jobs_per_pass_decisions() {
    use crate::order::TiasConfig;
    let run = |jobs_per_pass: u16| {
        let order = Tias::new(TiasConfig {
            jobs_per_pass,
            ..TiasConfig::default()
        });
        let mut s: Churn<Tias> = Scheduler::new(
            Topology::uniform(2, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap(),
            order,
            BestFit,
        );
        let now = TimeMs(1_000);
        for id in 0..12 {
            let mut out = Out::new();
            s.handle_deferred(now, Event::Submit(spec(id, 1)), &mut out)
                .unwrap();
        }
        let (mut calls, mut all) = (Vec::new(), Vec::new());
        let mut more = true;
        for _ in 0..20 {
            if !more {
                break;
            }
            let mut out = Out::new();
            more = s.handle(now, Event::Tick, &mut out).unwrap().more_pending;
            calls.push(out.len());
            all.extend_from_slice(&out);
        }
        (calls, all)
    };
    let (calls, limited) = run(3);
    assert_eq!(calls, [0, 0, 0, 3, 3, 3, 3]);
    let (calls, unlimited) = run(u16::MAX);
    assert_eq!(calls, [12]);
    assert_eq!(limited, unlimited);
}

/// Issue 12's RAM budget: the reference firmware scheduler (TIAS + best-fit, 64 GPUs, 256
/// jobs, gangs of 8) in 32 KiB. Checked on the host, where `usize` and `heapless::Vec`
/// lengths are twice as wide as on the Cortex-M4F, so the firmware's own figure is smaller.
#[test]
fn the_firmware_scheduler_fits_in_32_kib() {
    use crate::wire::{FIRMWARE_GANG, FIRMWARE_GPUS, FIRMWARE_JOBS};
    type Firmware = Scheduler<Tias, BestFit, FIRMWARE_GPUS, FIRMWARE_JOBS, FIRMWARE_GANG>;
    let bytes = core::mem::size_of::<Firmware>();
    assert!(bytes <= 32 * 1024, "{bytes} bytes");
    assert_eq!(core::mem::size_of::<Job>(), 64);
}

/// Preemptive first-come-first-served that asks for gang consolidation: the smallest order
/// that exercises [`Scheduler::consolidate`] without any other rule in the way.
#[derive(Clone, Copy)]
struct ConsolidatingFifo {
    consolidates: bool,
}

impl JobOrder for ConsolidatingFifo {
    fn name(&self) -> &'static str {
        "consolidating-fifo"
    }
    fn preemption(&self) -> Preemption {
        Preemption::On
    }
    fn hooks(&self) -> OrderHooks {
        OrderHooks::FIXED_KEY_ONLY
    }
    fn key(&self, job: &Job, _now: TimeMs) -> PriorityKey {
        PriorityKey {
            class: 0,
            primary: job.submitted_at().0 as i64,
            secondary: 0,
        }
    }
    fn consolidates_gangs(&self) -> bool {
        self.consolidates
    }
}

/// 1 rack × 2 machines × 4 GPUs (machine 0: GPUs 0–3, machine 1: GPUs 4–7), first-fit.
/// Jobs 1–4 (one GPU each) fill machine 0, job 5 (3 GPUs) takes 4–6, job 2 finishes: GPUs 1
/// and 7 are free, on two machines. Then job 6 asks for 2 GPUs, and the decisions its
/// submission gets with a `D`-slot buffer are returned.
fn gang_after_fragmentation<const D: usize>(consolidates: bool) -> Vec<Decision<8>> {
    let topo = Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap();
    let order = ConsolidatingFifo { consolidates };
    let mut s: Scheduler<ConsolidatingFifo, FirstFit, 8, 8, 8> =
        Scheduler::new(topo, order, FirstFit);
    let mut out: heapless::Vec<Decision<8>, 16> = heapless::Vec::new();
    for (t, id, gpus) in [(0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 4, 1), (4, 5, 3)] {
        s.handle(TimeMs(t), Event::Submit(spec(id, gpus)), &mut out)
            .unwrap();
    }
    s.handle(TimeMs(10), Event::Finish(JobId(2)), &mut out)
        .unwrap();
    let mut last: heapless::Vec<Decision<8>, D> = heapless::Vec::new();
    s.handle(TimeMs(20), Event::Submit(spec(6, 2)), &mut last)
        .unwrap();
    s.check_invariants().unwrap();
    last.iter().cloned().collect()
}

fn gpus(ids: &[u16]) -> GpuSet<8> {
    let mut set = GpuSet::new();
    for &g in ids {
        set.insert(GpuId(g)).unwrap();
    }
    set
}

#[test]
fn a_spread_gang_moves_single_gpu_jobs_to_get_one_machine() {
    // Machine 0 needs one move (job 1 on GPU 0 goes to the gang's GPU 7), machine 1 cannot
    // hold the gang (job 5 is a gang and does not move).
    let moved = [
        Decision::Preempt {
            job: JobId(1),
            reason: PreemptReason::Priority,
        },
        Decision::Start {
            job: JobId(1),
            gpus: gpus(&[7]),
        },
        Decision::Start {
            job: JobId(6),
            gpus: gpus(&[0, 1]),
        },
    ];
    assert_eq!(gang_after_fragmentation::<16>(true), moved);
    let spread = [Decision::Start {
        job: JobId(6),
        gpus: gpus(&[1, 7]),
    }];
    // An order that does not ask keeps the placer's choice, and so does a buffer with no
    // room for the move and both starts.
    assert_eq!(gang_after_fragmentation::<16>(false), spread);
    assert_eq!(gang_after_fragmentation::<2>(true), spread);
}

/// A pass that decides nothing is skipped only while neither the ranking nor the plan's
/// budget changes: a GPU coming back changes only the budget, and the queued job that now
/// fits starts at once.
#[test]
fn a_gpu_coming_back_plans_again_though_the_ranking_is_unchanged() {
    let mut s = small(FirstFit);
    let mut out = Out::new();
    for g in 3..8 {
        s.handle(TimeMs(0), Event::GpuDown(GpuId(g)), &mut out)
            .unwrap();
    }
    submit(&mut s, 1, 1, 2);
    assert!(
        submit(&mut s, 2, 2, 2).is_empty(),
        "one of three GPUs left for 2"
    );
    s.handle(TimeMs(3), Event::Tick, &mut out).unwrap();
    assert!(out.is_empty(), "nothing to decide: the pass is settled");
    s.handle(TimeMs(4), Event::GpuUp(GpuId(3)), &mut out)
        .unwrap();
    match out.as_slice() {
        [Decision::Start { job, gpus }] => {
            assert_eq!(*job, JobId(2));
            assert_eq!(gpus.as_slice(), [GpuId(2), GpuId(3)]);
        }
        other => panic!("expected job 2 to start, got {other:?}"),
    }
}
