//! Property tests of the core's event API: arbitrary event sequences, garbage included
//! (unknown ids, zero-GPU and oversized jobs, GPU ids out of range, time going backwards),
//! through every placer. After every event:
//! - the core's own invariants hold (`check_invariants`: no GPU held twice or by a
//!   non-running job, no failed GPU held, every running job holds exactly its gang);
//! - every accepted job is in exactly one place: live in the table, or finished, cancelled
//!   or rejected — never two, never none;
//! - GPU accounting balances: busy GPUs = Σ GPUs of running jobs;
//! - an event that returned an error changed nothing;
//! - no running job of class `Never`, nor one inside the minimum run quantum (0 or 1–3,000
//!   ms, drawn per case), is preempted for priority.
//!
//! And the orders whose keys the scheduler keeps in its index between passes (2D-LAS and
//! TIAS re-key a job only at its review times) decide exactly like the same order re-ranked
//! in full on every pass, on the same arbitrary sequences (a quarter of the jobs `Never`,
//! with a drawn quantum).

use gantry_core::placement::{
    ExactOptimal, LoadBalance, OptimalConfig, ProximityGreedy, RandomPlacer,
};
use gantry_core::{
    BestFit, Decision, DurationMs, Edf, Event, Fifo, FirstFit, GpuId, HeadOfLine, HopelessPolicy,
    Job, JobId, JobOrder, JobSpec, JobState, KeyChanges, Las, LasConfig, LinkWeights, OrderHooks,
    Placer, PreemptReason, Preemption, PreemptionClass, PriorityKey, RejectReason, SchedError,
    Scheduler, SchedulerConfig, Sjf, Srtf, Tias, TiasConfig, TimeMs, Topology,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

const G: usize = 16;
const J: usize = 8;
const GANG: usize = 8;

#[derive(Clone, Debug)]
enum Op {
    Submit {
        id: u32,
        gpus: u16,
        deadline_in: Option<u64>,
        length: Option<u64>,
        /// Submitted as `PreemptionClass::Never`.
        never: bool,
    },
    Finish(u32),
    FinishRunning(usize),
    Cancel(u32),
    Down(u16),
    Up(u16),
    Tick,
    Advance(u64),
    Backwards(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u32..24, 0u16..12, proptest::option::of(0u64..5_000), proptest::option::of(1u64..10_000), proptest::bool::weighted(0.25))
            .prop_map(|(id, gpus, deadline_in, length, never)| Op::Submit { id, gpus, deadline_in, length, never }),
        1 => (0u32..24).prop_map(Op::Finish),
        3 => (0usize..8).prop_map(Op::FinishRunning),
        1 => (0u32..24).prop_map(Op::Cancel),
        1 => (0u16..20).prop_map(Op::Down),
        1 => (0u16..20).prop_map(Op::Up),
        1 => Just(Op::Tick),
        3 => (1u64..2_000).prop_map(Op::Advance),
        1 => (1u64..100).prop_map(Op::Backwards),
    ]
}

type Snapshot = (Vec<Job>, Vec<Option<JobId>>, Vec<bool>, TimeMs);

fn spec_of(
    id: u32,
    gpus: u16,
    deadline_in: Option<u64>,
    length: Option<u64>,
    never: bool,
    now: u64,
) -> JobSpec {
    let mut spec = JobSpec::new(JobId(id), gpus);
    spec.deadline = deadline_in.map(|d| TimeMs(now + d));
    spec.declared_length = length.map(DurationMs);
    if never {
        spec.preemption = PreemptionClass::Never;
    }
    spec
}

/// A scheduler on 2 racks × 2 machines × 4 GPUs with the order's own behaviour and the
/// minimum run quantum `min_run_ms`.
fn scheduler<O: JobOrder, P: Placer<G>>(
    order: O,
    placer: P,
    min_run_ms: u64,
) -> Result<Scheduler<O, P, G, J, GANG>, String> {
    let topology =
        Topology::<G>::uniform(2, 2, 4, LinkWeights::PROXIMITY_DRL).map_err(|e| e.to_string())?;
    let config = SchedulerConfig::for_order(&order).with_min_run(DurationMs(min_run_ms));
    Ok(Scheduler::with_config(topology, order, placer, config))
}

fn snapshot<O: JobOrder, P: Placer<G>>(s: &Scheduler<O, P, G, J, GANG>) -> Snapshot {
    let gpus = (0..G as u16).map(GpuId);
    (
        s.jobs().copied().collect::<Vec<_>>(),
        gpus.clone().map(|g| s.gpu_owner(g)).collect(),
        gpus.map(|g| s.is_healthy(g)).collect(),
        s.now(),
    )
}

/// Runs `ops` and checks the properties after each; returns an error message on violation.
/// A running job of class `Never`, or one that has run less than `min_run_ms` since its
/// start, is never preempted for priority.
fn check<O: JobOrder, P: Placer<G>>(
    order: O,
    placer: P,
    ops: &[Op],
    min_run_ms: u64,
) -> Result<(), String> {
    let mut s = scheduler(order, placer, min_run_ms)?;
    let mut now = 0u64;
    let mut live: BTreeSet<u32> = BTreeSet::new();
    let mut gone: BTreeSet<u32> = BTreeSet::new();
    for (step, op) in ops.iter().enumerate() {
        let mut at = now;
        let event = match *op {
            Op::Submit {
                id,
                gpus,
                deadline_in,
                length,
                never,
            } => Event::Submit(spec_of(id, gpus, deadline_in, length, never, now)),
            Op::Finish(id) => Event::Finish(JobId(id)),
            Op::FinishRunning(k) => {
                let running: Vec<JobId> = s
                    .jobs()
                    .filter(|j| j.state() == JobState::Running)
                    .map(Job::id)
                    .collect();
                running
                    .get(k % running.len().max(1))
                    .map_or(Event::Tick, |&id| Event::Finish(id))
            }
            Op::Cancel(id) => Event::Cancel(JobId(id)),
            Op::Down(g) => Event::GpuDown(GpuId(g)),
            Op::Up(g) => Event::GpuUp(GpuId(g)),
            Op::Tick => Event::Tick,
            Op::Advance(dt) => {
                now += dt;
                at = now;
                Event::Tick
            }
            Op::Backwards(dt) => {
                at = now.saturating_sub(dt);
                Event::Tick
            }
        };
        let before = snapshot(&s);
        let protected: BTreeSet<u32> = s
            .jobs()
            .filter(|j| j.state() == JobState::Running)
            .filter(|j| {
                j.preemption_class() == PreemptionClass::Never
                    || at.saturating_sub(j.running_since().0) < min_run_ms
            })
            .map(|j| j.id().0)
            .collect();
        let mut out: heapless::Vec<Decision<GANG>, 32> = heapless::Vec::new();
        match s.handle(TimeMs(at), event, &mut out) {
            Err(err) => {
                if snapshot(&s) != before {
                    return Err(format!(
                        "step {step}: {event:?} failed with {err:?} but changed the state"
                    ));
                }
                if !out.is_empty() {
                    return Err(format!("step {step}: error {err:?} with decisions {out:?}"));
                }
            }
            Ok(outcome) => {
                // A pass the order's budget cut short (`jobs_per_pass`) goes on at follow-up
                // ticks of the instant; only a full buffer is an overflow.
                let overflow = || format!("step {step}: a 32-slot buffer overflowed");
                if outcome.more_pending && out.is_full() {
                    return Err(overflow());
                }
                let mut more = outcome.more_pending;
                let mut out: Vec<Decision<GANG>> = out.to_vec();
                for _ in 0..64 {
                    if !more {
                        break;
                    }
                    let mut next: heapless::Vec<Decision<GANG>, 32> = heapless::Vec::new();
                    let follow_up = s
                        .handle(TimeMs(at), Event::Tick, &mut next)
                        .map_err(|e| format!("step {step}: follow-up tick: {e:?}"))?;
                    if follow_up.more_pending && next.is_full() {
                        return Err(overflow());
                    }
                    more = follow_up.more_pending;
                    out.extend_from_slice(&next);
                }
                if more {
                    return Err(format!(
                        "step {step}: more_pending after 64 follow-up ticks"
                    ));
                }
                match event {
                    Event::Submit(spec) => {
                        live.insert(spec.id.0);
                    }
                    Event::Finish(id) | Event::Cancel(id) => {
                        live.remove(&id.0);
                        gone.insert(id.0);
                    }
                    _ => {}
                }
                for d in &out {
                    if let Decision::Reject { job, .. } = d {
                        live.remove(&job.0);
                        gone.insert(job.0);
                    }
                    if let Decision::Preempt {
                        job,
                        reason: PreemptReason::Priority,
                    } = d
                        && protected.contains(&job.0)
                    {
                        return Err(format!(
                            "step {step}: {event:?}: pinned {job:?} preempted for priority"
                        ));
                    }
                }
            }
        }
        s.check_invariants()
            .map_err(|v| format!("step {step}: {event:?}: {v:?}"))?;
        let table: BTreeSet<u32> = s.jobs().map(|j| j.id().0).collect();
        if table != live {
            return Err(format!(
                "step {step}: table {table:?} but accepted-and-live {live:?}"
            ));
        }
        let running_gpus: usize = s
            .jobs()
            .filter(|j| j.state() == JobState::Running)
            .map(|j| usize::from(j.gpus()))
            .sum();
        if running_gpus != s.busy_gpu_count() {
            return Err(format!(
                "step {step}: {} GPUs busy, running jobs hold {running_gpus}",
                s.busy_gpu_count()
            ));
        }
        if s.busy_gpu_count() > s.healthy_gpu_count() {
            return Err(format!("step {step}: more GPUs busy than healthy"));
        }
    }
    Ok(())
}

/// Every order × every placer on the same ops.
fn check_all(ops: &[Op], seed: u64, min_run_ms: u64) -> Result<(), String> {
    macro_rules! each_placer {
        ($order:expr) => {
            check($order, FirstFit, ops, min_run_ms)?;
            check($order, BestFit, ops, min_run_ms)?;
            check($order, RandomPlacer::new(seed), ops, min_run_ms)?;
            check($order, LoadBalance, ops, min_run_ms)?;
            check($order, ProximityGreedy, ops, min_run_ms)?;
            check(
                $order,
                ExactOptimal::<G>::new(OptimalConfig::default()),
                ops,
                min_run_ms,
            )?;
        };
    }
    each_placer!(Fifo);
    each_placer!(Sjf::default());
    each_placer!(Srtf::default());
    each_placer!(Edf);
    each_placer!(Las::new(LasConfig::default()));
    let mut guarded = LasConfig::default();
    guarded.promote_knob_permille = 1_000;
    each_placer!(Las::new(guarded));
    each_placer!(Tias::default());
    each_placer!(Tias::new(TiasConfig {
        hopeless: HopelessPolicy::Reject,
        ..TiasConfig::default()
    }));
    Ok(())
}

/// `O` with every key recomputed and every job refreshed on every pass
/// ([`KeyChanges::EveryPass`]): the reference an indexed order must match.
#[derive(Clone)]
struct FullRerank<O>(O);

impl<O: JobOrder> JobOrder for FullRerank<O> {
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
    fn hooks(&self) -> OrderHooks {
        OrderHooks {
            keys: KeyChanges::EveryPass,
            ..OrderHooks::ALL
        }
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
    /// The same decision budget per pass, so both sides cut an instant's decisions at the
    /// same points (a rejection noted in a cut pass comes at its follow-up tick, in an uncut
    /// one at the next event: the comparison is about ranking, not about where passes end).
    fn jobs_per_pass(&self) -> usize {
        self.0.jobs_per_pass()
    }
}

/// Runs `ops` through `order` (indexed) and through [`FullRerank`] of it with a 2-slot
/// decision buffer (passes cut short); every call must answer the same, leave the same jobs
/// and announce the same next review.
fn same_as_full_rerank<O: JobOrder + Clone>(
    order: O,
    ops: &[Op],
    min_run_ms: u64,
) -> Result<(), String> {
    let mut fast = scheduler(order.clone(), BestFit, min_run_ms)?;
    let mut full = scheduler(FullRerank(order), BestFit, min_run_ms)?;
    let mut now = 0u64;
    for (step, op) in ops.iter().enumerate() {
        let event = match *op {
            Op::Submit {
                id,
                gpus,
                deadline_in,
                length,
                never,
            } => Event::Submit(spec_of(id, gpus, deadline_in, length, never, now)),
            Op::Finish(id) => Event::Finish(JobId(id)),
            Op::FinishRunning(k) => {
                let running: Vec<JobId> = (fast.jobs())
                    .filter(|j| j.state() == JobState::Running)
                    .map(Job::id)
                    .collect();
                running
                    .get(k % running.len().max(1))
                    .map_or(Event::Tick, |&id| Event::Finish(id))
            }
            Op::Cancel(id) => Event::Cancel(JobId(id)),
            Op::Down(g) => Event::GpuDown(GpuId(g)),
            Op::Up(g) => Event::GpuUp(GpuId(g)),
            Op::Tick | Op::Backwards(_) => Event::Tick,
            Op::Advance(dt) => {
                now += dt;
                Event::Tick
            }
        };
        // Each side is driven to the end of its pass at this instant (follow-up ticks while
        // it asks: a full buffer, or the order's job budget per pass), and the instant's
        // decisions compared whole. A buffer of 2 leaves no room for a consolidation's
        // moves in either, so where a pass was cut cannot change them.
        let (ra, a) = drive_instant(&mut fast, TimeMs(now), event);
        let (rb, b) = drive_instant(&mut full, TimeMs(now), event);
        if (&ra, &a) != (&rb, &b) || !fast.jobs().eq(full.jobs()) {
            return Err(format!(
                "step {step}: {event:?}: indexed {ra:?} {a:?}, full re-rank {rb:?} {b:?}"
            ));
        }
        // The indexed scheduler may review early (an epoch leaves a job's earlier review
        // armed; it then changes nothing), never late.
        let late = match (fast.next_review(), full.next_review()) {
            (Some(f), Some(r)) => f > r,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if late {
            return Err(format!(
                "step {step}: next review {:?} after {:?}",
                fast.next_review(),
                full.next_review()
            ));
        }
    }
    Ok(())
}

/// `event` at `now` with a decision buffer of 2, then follow-up ticks while the pass asks
/// for them: the event's result and every decision of the instant.
fn drive_instant<O: JobOrder, P: Placer<G>>(
    s: &mut Scheduler<O, P, G, J, GANG>,
    now: TimeMs,
    event: Event,
) -> (Result<(), SchedError>, Vec<Decision<GANG>>) {
    let mut all = Vec::new();
    let mut event = event;
    let mut first = None;
    for _ in 0..10_000 {
        let mut out: heapless::Vec<Decision<GANG>, 2> = heapless::Vec::new();
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn indexed_orders_decide_like_a_full_rerank(ops in proptest::collection::vec(op(), 1..160), min_run_ms in prop_oneof![Just(0u64), 1u64..3_000]) {
        let mut guarded = LasConfig::default();
        guarded.promote_knob_permille = 1_000;
        let learning = TiasConfig {
            min_samples: 1,
            table_min_samples: 2,
            table_every_ms: 0,
            table_switch_step_ms: 1,
            table_rows_per_event: 40,
            hopeless: HopelessPolicy::Reject,
            ..TiasConfig::default()
        };
        for result in [
            same_as_full_rerank(Las::new(LasConfig::default()), &ops, min_run_ms),
            same_as_full_rerank(Las::new(guarded), &ops, min_run_ms),
            same_as_full_rerank(Tias::default(), &ops, min_run_ms),
            same_as_full_rerank(Tias::new(learning), &ops, min_run_ms),
            // The host's preemption margin: starts and preemptions re-key their jobs.
            same_as_full_rerank(
                Tias::new(TiasConfig {
                    preemption_margin_log2_q8: 256,
                    ..learning
                }),
                &ops,
                min_run_ms,
            ),
            // Passes of 2 jobs: walks and due re-keys in slices over follow-up ticks.
            same_as_full_rerank(
                Tias::new(TiasConfig { jobs_per_pass: 2, ..learning }),
                &ops,
                min_run_ms,
            ),
            same_as_full_rerank(Edf, &ops, min_run_ms),
            same_as_full_rerank(Fifo, &ops, min_run_ms),
        ] {
            if let Err(msg) = result {
                prop_assert!(false, "{}", msg);
            }
        }
    }

    #[test]
    fn invariants_hold_under_arbitrary_event_sequences(ops in proptest::collection::vec(op(), 1..120), seed in 0u64..1000, min_run_ms in prop_oneof![Just(0u64), 1u64..3_000]) {
        if let Err(msg) = check_all(&ops, seed, min_run_ms) {
            prop_assert!(false, "{}", msg);
        }
    }
}
