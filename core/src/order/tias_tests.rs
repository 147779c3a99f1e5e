//! TIAS rules, each with a small case computed by hand.

use super::*;
use crate::event::{Decision, Event, PreemptReason};
use crate::ids::JobId;
use crate::job::JobSpec;
use crate::placement::FirstFit;
use crate::scheduler::Scheduler;
use crate::time::DurationMs;
use crate::topology::{LinkWeights, Topology};

type Sched = Scheduler<Tias, FirstFit, 16, 64, 8>;
type Out = heapless::Vec<Decision<8>, 32>;

/// A window of 102,400 ms: one 1/1,024th of it is 100 ms, so shares are exact.
const W: u64 = 102_400;

fn spec(id: u32, gpus: u16, deadline_ms: Option<u64>) -> JobSpec {
    let mut s = JobSpec::new(JobId(id), gpus);
    s.deadline = deadline_ms.map(TimeMs);
    s
}

/// A job submitted at 0 that has executed `e_ms`, in `state`, in 2D-LAS queue `queue`.
fn job(id: u32, gpus: u16, deadline_ms: Option<u64>, e_ms: u64, state: JobState) -> Job {
    let mut j = Job::submitted(spec(id, gpus, deadline_ms), TimeMs(0));
    j.set_executed(DurationMs(e_ms));
    j.set_state(state);
    j
}

/// Learns from nine finished deadline jobs that used a quarter of their window and one that
/// used three quarters: buckets 16 and 48 of 64, so `ρ` (q99) = 49/64 = 784/1024 and `ρ₀`
/// (q10) = 17/64 = 272/1024.
fn trained(config: TiasConfig) -> Tias {
    let mut tias = Tias::new(TiasConfig {
        min_samples: 4,
        republish_every: 1,
        ..config
    });
    for (id, e) in (0..10).map(|i| (100 + i, if i == 9 { 3 * W / 4 } else { W / 4 })) {
        tias.on_finished(&job(id, 1, Some(W), e, JobState::Running), TimeMs(e));
    }
    tias
}

fn sched(gpus: u16, tias: Tias) -> Sched {
    Scheduler::new(
        Topology::uniform(1, 1, gpus, LinkWeights::PROXIMITY_DRL).unwrap(),
        tias,
        FirstFit,
    )
}

/// Ids sorted the way the scheduler ranks them, `(key, id)`, after a refresh at `now`.
fn ranked<const N: usize>(tias: &mut Tias, mut jobs: [Job; N], now: TimeMs) -> [u32; N] {
    for j in jobs.iter_mut() {
        tias.refresh(j, now);
    }
    let mut ids: [(PriorityKey, u32); N] =
        core::array::from_fn(|i| (tias.key(&jobs[i], now), jobs[i].id().0));
    ids.sort();
    ids.map(|(_, id)| id)
}

#[test]
fn window_shares_are_learned_from_finished_deadline_jobs_only() {
    let tias = Tias::new(TiasConfig::default());
    assert_eq!(tias.shares(), (1024, 0), "cold start: ρ = 1, ρ₀ = 0");
    let mut tias = trained(TiasConfig::default());
    assert_eq!(tias.shares(), (784, 272));
    let epoch = tias.epoch();
    // Non-deadline jobs and jobs over their window do not move the feasible quantiles.
    tias.on_finished(&job(1, 1, None, 5 * W, JobState::Running), TimeMs(0));
    tias.on_finished(&job(2, 1, Some(W), 2 * W, JobState::Running), TimeMs(0));
    assert_eq!((tias.shares(), tias.epoch()), ((784, 272), epoch));
    assert_eq!(tias.sketch().infeasible_samples(), 1);
    // The job's own declared length is never read.
    let mut j = job(3, 1, Some(W), 0, JobState::Waiting);
    let before = tias.critical_at(&j, TimeMs(0));
    let mut declared = spec(3, 1, Some(W));
    declared.declared_length = Some(DurationMs(1));
    j = Job::submitted(declared, TimeMs(0));
    assert_eq!(tias.critical_at(&j, TimeMs(0)), before);
}

#[test]
fn relaxed_job_turns_critical_when_its_laxity_reaches_the_reserve() {
    // ρ·W = 784 × 100 = 78,400 ms; σ·W = 102 × 100 = 10,200 ms (100‰ → 102/1024).
    let tias = trained(TiasConfig::default());
    // (case, executed, state, now, critical at)
    let cases = [
        // Waiting, nothing run: D − σW − ρW = 102,400 − 10,200 − 78,400.
        ("waiting", 0, JobState::Waiting, 0, 13_800),
        // Preempted after 20 s: 20,000 ms less to run.
        ("preempted", 20_000, JobState::Preempted, 20_000, 33_800),
        // Running: the laxity holds while it runs, so D − σW = 92,200.
        ("running", 20_000, JobState::Running, 20_000, 92_200),
        // Running but already past it: critical now (as it would be waiting).
        ("running late", 20_000, JobState::Running, 40_000, 33_800),
    ];
    for (what, e, state, now, at) in cases {
        let j = job(0, 1, Some(W), e, state);
        assert_eq!(
            tias.critical_at(&j, TimeMs(now)),
            Some(TimeMs(at)),
            "{what}"
        );
    }
    let waiting = job(0, 1, Some(W), 0, JobState::Waiting);
    let relaxed = Standing::Relaxed {
        critical_at: TimeMs(13_800),
    };
    assert_eq!(tias.standing(&waiting, TimeMs(13_799)), relaxed);
    assert_eq!(tias.standing(&waiting, TimeMs(13_800)), Standing::Critical);
    // Cold start: ρ = 1 → critical at submission.
    let cold = Tias::default();
    assert_eq!(cold.standing(&waiting, TimeMs(0)), Standing::Critical);
}

#[test]
fn waiting_job_is_hopeless_once_even_the_least_share_no_longer_fits() {
    // ρ₀·W = 272 × 100 = 27,200 ms.
    let tias = trained(TiasConfig::default());
    let cases = [
        // (case, executed, state, now, hopeless?)
        (
            "waiting, 27.2 s left",
            0,
            JobState::Waiting,
            W - 27_200 - 1,
            false,
        ),
        ("waiting, less left", 0, JobState::Waiting, W - 27_200, true),
        (
            "ran 10 s: 17.2 s needed",
            10_000,
            JobState::Preempted,
            W - 17_201,
            false,
        ),
        (
            "ran 10 s, late",
            10_000,
            JobState::Preempted,
            W - 17_200,
            true,
        ),
        // A running job is using its time: only the deadline ends it.
        ("running", 0, JobState::Running, W - 1, false),
        ("deadline passed", 0, JobState::Running, W, true),
    ];
    for (what, e, state, now, hopeless) in cases {
        let mut j = job(0, 1, Some(W), e, state);
        // Critical by then (so not relaxed), which hopelessness overrides.
        j.order_queue |= CRITICAL_FLAG;
        let standing = tias.standing(&j, TimeMs(now));
        assert_eq!(
            standing == Standing::Hopeless,
            hopeless,
            "{what}: {standing:?}"
        );
    }
    let waiting = job(0, 1, Some(W), 0, JobState::Waiting);
    assert_eq!(tias.hopeless_at(&waiting), Some(TimeMs(W - 27_200)));
    assert_eq!(
        Tias::default().hopeless_at(&waiting),
        None,
        "ρ₀ not learned"
    );
}

#[test]
fn classes_young_first_then_critical_then_older_then_relaxed_then_hopeless() {
    // Without the lift: job 2's remaining bound is below it (see the lift's own test).
    let mut tias = trained(TiasConfig {
        finish_lift_gpu_ms: 0,
        ..TiasConfig::default()
    });
    // Attained GPU·ms that puts a 1-GPU job in 2D-LAS queue 1; "old" jobs ran from 0 to
    // then and were preempted.
    let q1 = 3_250_000;
    let far = 1_000 * W; // a deadline far enough to stay relaxed
    let now = TimeMs(q1);
    let old = |id, deadline| {
        let mut j = job(id, 1, deadline, q1, JobState::Preempted);
        j.set_times(j.submitted_at(), now);
        j
    };
    let jobs = [
        // 0: non-deadline, old (queue 1).
        old(0, None),
        // 1: relaxed deadline job, old: below every non-deadline job.
        old(1, Some(q1 + far)),
        // 2: critical deadline job, old: head of queue 1.
        old(2, Some(q1 + 1_000)),
        // 3: non-deadline, young (queue 0), submitted later than the others.
        {
            let mut j = job(3, 1, None, 0, JobState::Waiting);
            j.set_times(now, j.queued_since());
            j.order_mark = now;
            j
        },
        // 4: relaxed deadline job, young: like any young job (entered queue 0 at 0).
        job(4, 1, Some(q1 + far), 0, JobState::Waiting),
        // 5: deadline passed: background.
        job(5, 1, Some(1_000), 0, JobState::Waiting),
        // 6: critical and young (still able to make it): head of queue 0.
        job(6, 1, Some(5_000_000), 0, JobState::Waiting),
    ];
    assert_eq!(ranked(&mut tias, jobs, now), [6, 4, 3, 2, 0, 1, 5]);
    // Under the other placements and policies.
    let mut like_las = trained(TiasConfig {
        relaxed: RelaxedDeadlinePlacement::LikeLas,
        hopeless: HopelessPolicy::BestEffort,
        critical_queue: 0,
        ..TiasConfig::default()
    });
    // Critical above all, smallest commitment first (job 2: 3,251 GPU·s, job 6: 5,000);
    // the hopeless job 5 like a non-deadline job in queue 0, entered at 0 (after job 4 by
    // id); the relaxed old job 1 like LAS in queue 1, entered at 3.25 s with job 0.
    assert_eq!(ranked(&mut like_las, jobs, now), [2, 6, 4, 5, 3, 0, 1]);
}

#[test]
fn critical_jobs_by_smallest_commitment_or_earliest_deadline() {
    // Both critical from submission (cold start). Job 0: 1 GPU, window 300 s (300 GPU·s);
    // job 1: 8 GPUs, window 100 s (800 GPU·s), the earlier deadline.
    let jobs = [
        job(0, 1, Some(300_000), 0, JobState::Waiting),
        job(1, 8, Some(100_000), 0, JobState::Waiting),
    ];
    for (order, want) in [
        (CriticalOrder::SmallestCommitment, [0, 1]),
        (CriticalOrder::EarliestDeadline, [1, 0]),
    ] {
        let mut tias = Tias::new(TiasConfig {
            critical_order: order,
            ..TiasConfig::default()
        });
        assert_eq!(ranked(&mut tias, jobs, TimeMs(0)), want, "{order:?}");
    }
}

#[test]
fn review_times_are_the_next_change() {
    let tias = trained(TiasConfig::default());
    // Relaxed and waiting: critical at 13,800 (before its hopeless time 75,200).
    let waiting = job(0, 1, Some(W), 0, JobState::Waiting);
    assert_eq!(tias.next_review(&waiting, TimeMs(0)), Some(TimeMs(13_800)));
    // Critical and waiting: hopeless at 75,200; running: its deadline.
    let mut critical = waiting;
    critical.order_queue |= CRITICAL_FLAG;
    assert_eq!(
        tias.next_review(&critical, TimeMs(20_000)),
        Some(TimeMs(75_200))
    );
    critical.set_state(JobState::Running);
    assert_eq!(tias.next_review(&critical, TimeMs(20_000)), Some(TimeMs(W)));
    // A running non-deadline job: its 2D-LAS threshold (3,250 GPU·s for 2 GPUs: 1,625 s).
    let plain = job(1, 2, None, 0, JobState::Running);
    assert_eq!(tias.next_review(&plain, TimeMs(0)), Some(TimeMs(1_625_000)));
}

/// Issue 16, defect 1: with the old least-laxity key, two critical jobs on one GPU swapped
/// on every tick (60 preemptions in 60 s of 1-s ticks; fails on the main of that time).
/// Critical keys no longer move with time, so neither tick period preempts anyone.
#[test]
fn two_critical_jobs_do_not_preempt_each_other_whatever_the_tick_period() {
    for tick_ms in [1_000, 7_000] {
        let mut tias = Tias::new(TiasConfig {
            min_samples: 4,
            ..TiasConfig::default()
        });
        for id in 0..32 {
            let done = job(100 + id, 1, None, 100_000, JobState::Running);
            tias.on_finished(&done, TimeMs(0));
        }
        let mut s = sched(1, tias);
        let mut out = Out::new();
        for id in [0, 1] {
            s.handle(
                TimeMs(0),
                Event::Submit(spec(id, 1, Some(180_000))),
                &mut out,
            )
            .unwrap();
        }
        let mut preemptions = 0;
        for t in (tick_ms..=60_000).step_by(tick_ms as usize) {
            out.clear();
            s.handle(TimeMs(t), Event::Tick, &mut out).unwrap();
            preemptions += out
                .iter()
                .filter(|d| matches!(d, Decision::Preempt { .. }))
                .count();
        }
        assert_eq!(preemptions, 0, "tick every {tick_ms} ms");
        assert_eq!(s.job(JobId(0)).map(|j| j.state()), Some(JobState::Running));
        s.check_invariants().unwrap();
    }
}

#[test]
fn hopeless_job_runs_in_the_background_or_is_rejected() {
    // 1 GPU. Job 0 (no deadline) runs from 0; job 1 (deadline at 10 s) arrives at 1 s,
    // critical at once (cold start), preempts job 0, and is still running at its deadline.
    for (policy, rejected) in [
        (HopelessPolicy::Background, false),
        (HopelessPolicy::Reject, true),
    ] {
        let mut out = Out::new();
        let mut s = sched(
            1,
            Tias::new(TiasConfig {
                hopeless: policy,
                ..TiasConfig::default()
            }),
        );
        s.handle(TimeMs(0), Event::Submit(spec(0, 1, None)), &mut out)
            .unwrap();
        s.handle(
            TimeMs(1_000),
            Event::Submit(spec(1, 1, Some(10_000))),
            &mut out,
        )
        .unwrap();
        assert_eq!(s.job(JobId(1)).map(|j| j.state()), Some(JobState::Running));
        assert_eq!(s.next_review(), Some(TimeMs(10_000)), "its deadline");
        out.clear();
        s.handle(TimeMs(10_000), Event::Tick, &mut out).unwrap();
        // Hopeless: job 0 takes the GPU back; job 1 waits in the background.
        assert!(out.contains(&Decision::Preempt {
            job: JobId(1),
            reason: PreemptReason::Priority
        }));
        assert_eq!(s.job(JobId(0)).map(|j| j.state()), Some(JobState::Running));
        // Preempted and hopeless: rejected at the next pass under `Reject`.
        out.clear();
        s.handle(TimeMs(10_001), Event::Tick, &mut out).unwrap();
        let was_rejected = out.contains(&Decision::Reject {
            job: JobId(1),
            reason: RejectReason::DeadlineUnreachable,
        });
        assert_eq!(was_rejected, rejected, "{policy:?}");
        assert_eq!(s.job(JobId(1)).is_none(), rejected, "{policy:?}");
        s.check_invariants().unwrap();
    }
}

#[test]
fn an_epoch_changes_only_the_jobs_that_follow_it() {
    // The same jobs under TIAS before anything is learned (ρ = 1, ρ₀ = 0) and after (ρ, ρ₀
    // learned: a later epoch). A job that does not follow the epoch must refresh, key and
    // review the same under both, or skipping it at an epoch would change decisions.
    let (cold, learned) = (Tias::default(), trained(TiasConfig::default()));
    assert_ne!(cold.epoch(), learned.epoch());
    let mut hopeless = job(3, 2, Some(W), 0, JobState::Waiting);
    hopeless.order_queue |= HOPELESS_FLAG | 1;
    let mut older = job(4, 1, None, 40_000_000, JobState::Preempted);
    older.order_queue = 1;
    let jobs = [
        job(1, 4, None, 0, JobState::Waiting),
        job(2, 4, None, 3_000_000, JobState::Running),
        hopeless,
        older,
        job(5, 1, Some(W), 0, JobState::Waiting),
        job(6, 2, Some(W), 20_000, JobState::Running),
    ];
    let mut followers_that_moved = 0;
    for original in jobs {
        for now in [0, W / 4, W / 2, W - 1].map(TimeMs) {
            let (mut a, mut b) = (original, original);
            let (mut cold, mut learned) = (cold.clone(), learned.clone());
            cold.refresh(&mut a, now);
            learned.refresh(&mut b, now);
            let seen = |t: &Tias, j: &Job| (j.order_queue, t.key(j, now), t.next_review(j, now));
            let same = seen(&cold, &a) == seen(&learned, &b);
            assert_eq!(
                cold.follows_epoch(&original),
                learned.follows_epoch(&original)
            );
            if !learned.follows_epoch(&original) {
                assert!(
                    same,
                    "job {} at {now:?} changed with the epoch",
                    original.id().0
                );
            } else if !same {
                followers_that_moved += 1;
            }
        }
    }
    assert!(
        followers_that_moved > 0,
        "the deadline jobs do move with ρ, ρ₀"
    );
}

/// Overload mode: entered at a publication where the critical jobs ask for more than 1.5 ×
/// the healthy GPUs, left only once they fit (≤ 1 ×); a cancelled critical job leaves the
/// demand. With `ρ` = 784/1024 and `σ` ≈ 102/1024, a waiting job due at `W` is critical at
/// `W / 5` (laxity 3,520 ms ≤ 10,200 ms) and not hopeless (81,920 ms left ≥ `ρ₀·W`).
#[test]
fn overload_mode_enters_above_one_and_a_half_the_gpus_and_leaves_once_they_fit() {
    let mut tias = trained(TiasConfig::default());
    tias.on_capacity(10);
    let now = TimeMs(W / 5);
    let publish = |tias: &mut Tias| tias.on_finished(&job(999, 1, None, 0, JobState::Running), now);
    let critical = |tias: &mut Tias, id, gpus| {
        let mut j = job(id, gpus, Some(W), 0, JobState::Waiting);
        tias.refresh(&mut j, now);
        assert_eq!(tias.standing(&j, now), Standing::Critical);
        j
    };
    let _a = critical(&mut tias, 1, 8);
    let b = critical(&mut tias, 2, 7);
    publish(&mut tias);
    assert!(!tias.overloaded(), "15 GPUs of 10 is not above 1.5 ×");
    let c = critical(&mut tias, 3, 1);
    assert!(!tias.overloaded(), "only a publication changes the mode");
    publish(&mut tias);
    assert!(tias.overloaded(), "16 of 10");
    tias.on_removed(&c, now);
    publish(&mut tias);
    assert!(
        tias.overloaded(),
        "15 of 10: above the cluster, so it stays"
    );
    tias.on_removed(&b, now);
    publish(&mut tias);
    assert!(!tias.overloaded(), "8 of 10: they fit");
    tias.on_capacity(4);
    publish(&mut tias);
    assert!(tias.overloaded(), "8 of 4 once GPUs failed");
}

/// A change of `ρ`, `ρ₀` re-keys only a job whose standing moves now; the others get the
/// review `next_review` gives, and the scheduler keeps an earlier one. Learned `ρ·W` =
/// 78,400 ms, `σ·W` = 10,200 ms, `ρ₀·W` = 27,200 ms, window 102,400 ms.
#[test]
fn an_epoch_rekeys_only_jobs_whose_standing_moves() {
    let tias = trained(TiasConfig {
        finish_lift_gpu_ms: 0,
        ..TiasConfig::default()
    });
    let waiting = job(5, 1, Some(W), 0, JobState::Waiting);
    // Relaxed at 0: critical at 102,400 − 10,200 − 78,400 = 13,800 ms, before it could turn
    // hopeless (102,400 − 27,200 = 75,200) or reach its deadline.
    assert_eq!(
        tias.epoch_effect(&waiting, TimeMs(0)),
        EpochEffect::Review(Some(TimeMs(13_800)))
    );
    // Critical from 13,800 ms on, hopeless from 75,200 ms on: both move its key.
    assert_eq!(
        tias.epoch_effect(&waiting, TimeMs(13_800)),
        EpochEffect::Rekey
    );
    let mut marked = waiting;
    marked.order_queue |= CRITICAL_FLAG;
    assert_eq!(
        tias.epoch_effect(&marked, TimeMs(75_200)),
        EpochEffect::Rekey
    );
    // Already marked critical and not yet hopeless: the key stays (it does not read `ρ`
    // outside the overload mode); only the review may move.
    let now = TimeMs(20_000);
    assert_eq!(
        tias.epoch_effect(&marked, now),
        EpochEffect::Review(tias.next_review(&marked, now))
    );
    assert_eq!(tias.next_review(&marked, now), Some(TimeMs(75_200)));
}

/// The lift's review of a running critical job whose window is the whole clock: its
/// remaining bound saturates at `u64::MAX` ms, and the review is `u64::MAX − ⌈3,250,000 / 1⌉`
/// ms after 0 (found by cargo-fuzz `event_api`: `remaining + 1` overflowed).
#[test]
fn the_lift_review_of_a_job_with_an_endless_window_saturates() {
    let tias = Tias::new(TiasConfig::default());
    let mut j = job(1, 1, Some(u64::MAX), 0, JobState::Running);
    j.order_queue |= CRITICAL_FLAG;
    assert_eq!(
        tias.lift_at(&j, TimeMs(0)),
        Some(TimeMs(u64::MAX - 3_250_000))
    );
}
