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
    j.set_state(state);
    j.set_executed(DurationMs(e_ms));
    j
}

/// Learns from nine finished deadline jobs that used a quarter of their window and one that
/// used three quarters: buckets 16 and 48 of 64, so `ρ` (q99) = 49/64 = 784/1024 and `ρ₀`
/// (q10) = 17/64 = 272/1024. They are published to every job (a table would be too, but
/// 10 sizes are below `table_min_samples`, so none is built: the cases stay 2D-LAS's).
fn trained(config: TiasConfig) -> Tias {
    let mut tias = Tias::new(TiasConfig {
        min_samples: 4,
        ..config
    });
    for (id, e) in (0..10).map(|i| (100 + i, if i == 9 { 3 * W / 4 } else { W / 4 })) {
        tias.on_finished(&job(id, 1, Some(W), e, JobState::Running), TimeMs(e));
    }
    (tias.bound_share, tias.least_share) = tias.learned_shares();
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
    assert_eq!(
        tias.hopeless_at(&waiting, TimeMs(0)),
        Some(TimeMs(W - 27_200))
    );
    assert_eq!(
        Tias::default().hopeless_at(&waiting, TimeMs(0)),
        None,
        "ρ₀ not learned"
    );
}

#[test]
fn classes_young_first_then_the_index_then_older_then_relaxed_then_hopeless() {
    // Without the lift: job 2's remaining bound is below it (see the lift's own test). No
    // index table yet (10 sizes learned, 32 needed): non-deadline jobs by 2D-LAS.
    let mut tias = trained(TiasConfig {
        finish_lift_gpu_ms: 0,
        ..TiasConfig::default()
    });
    assert!(tias.table().is_none());
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
        // 0: non-deadline, old (queue 1): below the index.
        old(0, None),
        // 1: relaxed deadline job, old: below every non-deadline job.
        old(1, Some(q1 + far)),
        // 2: critical, its bound `ρ·W − e` used up (bin 0, index w / 60 GPU·s).
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
        // 6: critical, bound 784/1024 × 5,000 s = 3,828 GPU·s: a lower index than job 2's.
        job(6, 1, Some(5_000_000), 0, JobState::Waiting),
    ];
    assert_eq!(ranked(&mut tias, jobs, now), [4, 3, 2, 6, 0, 1, 5]);
    // Under the other placements and policies: the relaxed old job 1 like a non-deadline
    // job in queue 1, the hopeless job 5 like one in queue 0 (entered at 0, after job 4 by
    // id).
    let mut like_las = trained(TiasConfig {
        relaxed: RelaxedDeadlinePlacement::LikeLas,
        hopeless: HopelessPolicy::BestEffort,
        finish_lift_gpu_ms: 0,
        ..TiasConfig::default()
    });
    assert_eq!(ranked(&mut like_las, jobs, now), [4, 5, 3, 2, 6, 0, 1]);
}

#[test]
fn critical_jobs_by_their_bound_rounded_up_to_its_bin_and_weighted() {
    // Cold start (ρ = 1): both critical from submission, bounds `k·W`. Job 0: 1 GPU, 300 s
    // (bin 5, from 240 GPU·s, up to 339.411 GPU·s); job 1: 8 GPUs, 100 s (800 GPU·s, bin 7,
    // up to 960 GPU·s), the earlier deadline: job 0 first.
    let mut tias = Tias::new(TiasConfig {
        finish_lift_gpu_ms: 0,
        ..TiasConfig::default()
    });
    let jobs = [
        job(0, 1, Some(300_000), 0, JobState::Waiting),
        job(1, 8, Some(100_000), 0, JobState::Waiting),
    ];
    assert_eq!(ranked(&mut tias, jobs, TimeMs(0)), [0, 1]);
    // The key: −(log₂ 8 − log₂ 339,411) in 1/256ths: 3 − 18.3727 octaves.
    let mut j = jobs[0];
    tias.refresh(&mut j, TimeMs(0));
    let key = tias.key(&j, TimeMs(0));
    assert_eq!((key.class, key.primary), (INDEX_CLASS, 4_703 - 768));
    assert_eq!(SIZE_EDGES_GPU_MS[6], 339_411);
    // The whole bin shares one key: 240 GPU·s (bin 5's lower edge) to 339.410 GPU·s.
    for window in [240_000, 339_410] {
        let mut j = job(0, 1, Some(window), 0, JobState::Waiting);
        tias.refresh(&mut j, TimeMs(0));
        assert_eq!(
            tias.key(&j, TimeMs(0)),
            PriorityKey {
                secondary: key_ms(window),
                ..key
            }
        );
    }
    // Running, its key changes when the bound falls below 240 GPU·s: after 60,001 ms.
    j.set_state(JobState::Running);
    assert_eq!(tias.next_review(&j, TimeMs(0)), Some(TimeMs(60_001)));
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
    // Running and lifted (its bound, 78.4 GPU·s, is below the lift): its deadline.
    critical.set_state(JobState::Running);
    critical.set_executed(DurationMs(0));
    critical.order_queue |= LIFTED_FLAG;
    assert_eq!(tias.next_review(&critical, TimeMs(20_000)), Some(TimeMs(W)));
    // Running and not lifted: its bound 78,400 GPU·ms falls below bin 1's edge (60 GPU·s)
    // after 18,401 ms.
    critical.order_queue &= !LIFTED_FLAG;
    assert_eq!(
        tias.next_review(&critical, TimeMs(20_000)),
        Some(TimeMs(38_401))
    );
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
            // On one GPU every job is a big gang: this case is about deadline jobs.
            Tias::new(TiasConfig {
                hopeless: policy,
                big_gang_permille: 0,
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
fn learned_shares_reach_a_job_with_its_switch_step() {
    // 40 deadline jobs that used a quarter of their window: the 31st (31 sizes and the
    // pseudo-sample) publishes a table with `ρ` = `ρ₀` = 17/64 = 272/1024 (bucket 16).
    let mut tias = Tias::new(TiasConfig {
        min_samples: 4,
        table_rows_per_event: 40,
        ..TiasConfig::default()
    });
    for id in 0..40 {
        let done = job(100 + id, 1, Some(W), W / 4, JobState::Running);
        tias.on_finished(&done, TimeMs(0));
    }
    assert_eq!(tias.shares(), (272, 272));
    // Job 5 (hashed to step 5) reads `ρ` = 1 until 6 s: critical from its submission. Then
    // `ρ·W` = 27,200 ms and `σ·W` = 10,200 ms: relaxed until 102,400 − 10,200 − 27,200 =
    // 65,000. Job 39 (step 6) switches at 7 s. The publication (the next pass) gives each a
    // review at its switch.
    let waiting = job(5, 1, Some(W), 0, JobState::Waiting);
    let other = job(39, 1, Some(W), 0, JobState::Waiting);
    assert_eq!(
        (Tias::switch_step(&waiting), Tias::switch_step(&other)),
        (5, 6)
    );
    tias.advance(TimeMs(0));
    assert!(tias.follows_epoch(&waiting) && tias.follows_epoch(&other));
    assert_eq!(
        tias.epoch_effect(&waiting, TimeMs(0)),
        EpochEffect::Review(Some(TimeMs(6_000)))
    );
    assert_eq!(
        tias.epoch_effect(&other, TimeMs(0)),
        EpochEffect::Review(Some(TimeMs(7_000)))
    );
    assert_eq!(tias.next_review(&waiting, TimeMs(0)), Some(TimeMs(6_000)));
    tias.advance(TimeMs(5_999));
    assert_eq!(tias.standing(&waiting, TimeMs(5_999)), Standing::Critical);
    tias.advance(TimeMs(6_000));
    let relaxed = Standing::Relaxed {
        critical_at: TimeMs(65_000),
    };
    assert_eq!(tias.standing(&waiting, TimeMs(6_000)), relaxed);
    assert_eq!(tias.standing(&other, TimeMs(6_000)), Standing::Critical);
    // A hopeless job in the background reads nothing learned: no step moves it.
    let mut hopeless = job(5, 1, Some(W), 0, JobState::Waiting);
    hopeless.order_queue |= HOPELESS_FLAG;
    assert!(!tias.follows_epoch(&hopeless));
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

/// `n` finished non-deadline jobs of `gpu_ms` each, at `now`.
fn finish_plain(tias: &mut Tias, n: u32, gpu_ms: u64, now: TimeMs) {
    for id in 0..n {
        tias.on_finished(&job(1_000 + id, 1, None, gpu_ms, JobState::Running), now);
    }
}

#[test]
fn a_table_is_built_a_few_rows_per_event_and_published_once_whole() {
    let mut tias = Tias::default();
    // 30 finished jobs and the pseudo-sample: 31 sizes, 32 needed.
    finish_plain(&mut tias, 30, 100_000, TimeMs(0));
    assert!(tias.table().is_none());
    // The 31st starts a table: 4 rows now, 4 per later event; 40 rows in 10 events.
    finish_plain(&mut tias, 1, 100_000, TimeMs(0));
    let plain = job(1, 1, None, 0, JobState::Waiting);
    for event in 1..10 {
        assert!(tias.table().is_none(), "{event}");
        tias.on_submitted(&plain, TimeMs(event));
    }
    let expected = GittinsTable::compute(&tias.sizes().blended(8));
    assert_eq!(tias.table(), Some((&expected, TimeMs(9))));
    // Publishing changes no key: every job reads 2D-LAS until the switch reaches it, job
    // `id` `(1 + h(id))` s after the publication (job 68: step 1). The publication is one
    // epoch, at the next pass, that gives each job whose key the switch moves a review at
    // its switch; the steps themselves are no epochs.
    let epoch = tias.epoch();
    tias.advance(TimeMs(9));
    assert_eq!(tias.epoch(), epoch + 1);
    assert!(tias.last_change.published && !tias.last_change.gangs);
    let j = job(68, 1, None, 0, JobState::Waiting);
    assert_eq!(Tias::switch_step(&j), 1);
    assert_eq!(tias.switch_at(&j), Some(TimeMs(2_009)));
    assert!(tias.follows_epoch(&j));
    assert_eq!(
        tias.epoch_effect(&j, TimeMs(9)),
        EpochEffect::Review(Some(TimeMs(2_009)))
    );
    assert_eq!(tias.next_review(&j, TimeMs(9)), Some(TimeMs(2_009)));
    tias.advance(TimeMs(2_009));
    assert_eq!(tias.epoch(), epoch + 1, "a switch step is no epoch");
    assert_eq!(tias.switched_steps, 2);
    assert_eq!(tias.switch_at(&j), None);
    assert_eq!(tias.next_step_at(), Some(TimeMs(3_009)));
    // The next table starts at a finish once every job has switched and 64 s have passed.
    tias.advance(TimeMs(64_008));
    finish_plain(&mut tias, 1, 100_000, TimeMs(64_008));
    assert_eq!(
        tias.next_row as usize, SIZE_BINS,
        "the last job switches at 64,009"
    );
    tias.advance(TimeMs(64_009));
    assert_eq!(tias.next_step_at(), None);
    finish_plain(&mut tias, 1, 100_000, TimeMs(64_009));
    assert_eq!(tias.next_row, 4, "started");
}

#[test]
fn a_deadline_window_is_a_size_sample_until_the_job_finishes_or_leaves() {
    let mut tias = Tias::default();
    let mut sizes = SizeSketch::new();
    // Submitted: 4 GPUs × 100 s window.
    let dl = job(1, 4, Some(100_000), 0, JobState::Waiting);
    tias.on_submitted(&dl, TimeMs(0));
    sizes.add_window(4, 100_000);
    assert_eq!(tias.sizes(), &sizes);
    // Finished after 60 s on 4 GPUs: the window goes, the true size and `r` come.
    let mut done = dl;
    done.set_executed(DurationMs(60_000));
    tias.on_finished(&done, TimeMs(60_000));
    sizes.remove_window(4, 100_000);
    sizes.record_finished(
        done.attained_gpu_ms_at(TimeMs(60_000)),
        Some((60_000, 100_000)),
    );
    assert_eq!(tias.sizes(), &sizes);
    // Cancelled: the window goes; a non-deadline job adds none.
    let other = job(2, 2, Some(50_000), 0, JobState::Waiting);
    tias.on_submitted(&other, TimeMs(0));
    tias.on_submitted(&job(3, 2, None, 0, JobState::Waiting), TimeMs(0));
    tias.on_removed(&other, TimeMs(1));
    assert_eq!(tias.sizes(), &sizes);
}

/// TIAS with a table published at `t = 0` from 40 jobs of 100 GPU·s, reached every job by
/// 64 s.
fn with_table(config: TiasConfig) -> Tias {
    let mut tias = Tias::new(TiasConfig {
        table_rows_per_event: 40,
        ..config
    });
    finish_plain(&mut tias, 40, 100_000, TimeMs(0));
    tias.advance(TimeMs(64_000));
    assert!(tias.table().is_some());
    tias
}

#[test]
fn a_new_table_reaches_job_id_after_one_plus_its_hashed_step_seconds() {
    let mut tias = Tias::new(TiasConfig {
        table_rows_per_event: 40,
        ..TiasConfig::default()
    });
    finish_plain(&mut tias, 40, 100_000, TimeMs(0));
    let (table, at) = tias.table().unwrap();
    let (table, index) = (table.clone(), i64::from(table.bin_log_index(0)));
    assert_eq!(at, TimeMs(0));
    // Job 39 (hashed to step 6) reads 2D-LAS until the step at 7 s, then the table: the
    // publication gives it a review then.
    let mut j = job(39, 1, None, 0, JobState::Waiting);
    assert_eq!(Tias::switch_step(&j), 6);
    tias.refresh(&mut j, TimeMs(0));
    tias.advance(TimeMs(0));
    assert_eq!(
        tias.epoch_effect(&j, TimeMs(0)),
        EpochEffect::Review(Some(TimeMs(7_000)))
    );
    tias.advance(TimeMs(6_999));
    assert_eq!(tias.key(&j, TimeMs(6_999)).class, class_of_queue(0));
    assert_eq!(tias.next_review(&j, TimeMs(6_999)), Some(TimeMs(7_000)));
    tias.advance(TimeMs(7_000));
    assert_eq!(tias.next_review(&j, TimeMs(7_000)), None, "switched");
    let after = tias.key(&j, TimeMs(7_000));
    assert_eq!((after.class, after.primary), (INDEX_CLASS, -index));
    assert_eq!(tias.table().map(|(t, _)| t), Some(&table));
}
/// A job ranked by its size index is ranked, while it runs, as if its index were
/// `preemption_margin_log2_q8` higher, so a queued job needs an index that much above its
/// own to take its GPUs; its start and its preemption re-key it.
#[test]
fn a_running_job_is_ranked_by_its_index_raised_by_the_preemption_margin() {
    let tias = with_table(TiasConfig::host());
    let now = TimeMs(64_000);
    let queued = job(1, 2, None, 50_000, JobState::Preempted);
    let running = job(1, 2, None, 50_000, JobState::Running);
    let (q, r) = (tias.key(&queued, now), tias.key(&running, now));
    assert_eq!((q.class, r.class), (INDEX_CLASS, INDEX_CLASS));
    assert_eq!(q.primary - r.primary, 256, "2 × its index");
    assert!(tias.state_change_rekeys(&running, now));
    assert!(tias.state_change_rekeys(&queued, now));
    let plain = with_table(TiasConfig::default());
    assert_eq!(plain.key(&running, now), q);
    assert!(!plain.state_change_rekeys(&running, now));
}

#[test]
fn a_running_job_ranked_by_size_is_reviewed_when_it_enters_the_next_bin() {
    let tias = with_table(TiasConfig::default());
    // 2 GPUs, 50 s run (100 GPU·s, bin 2 from 84.852 GPU·s): bin 3 from 120 GPU·s, 20 GPU·s
    // later at 2 GPU·ms per ms: 10 s after now (64 s, once the table reached it).
    let j = job(0, 2, None, 50_000, JobState::Running);
    assert_eq!(tias.next_review(&j, TimeMs(64_000)), Some(TimeMs(74_000)));
    // Before the table reached it, 2D-LAS alone: its first threshold, 3,250 GPU·s.
    let early = with_table(TiasConfig::default());
    let mut early = early;
    early.switched_steps = 0;
    assert_eq!(
        early.next_review(&j, TimeMs(64_000)),
        Some(TimeMs(64_000 + (3_250_000 - 100_000) / 2))
    );
}

#[test]
fn gangs_of_a_quarter_of_the_cluster_are_ranked_as_non_deadline_jobs() {
    let mut tias = with_table(TiasConfig {
        finish_lift_gpu_ms: 0,
        ..TiasConfig::default()
    });
    tias.on_capacity(64, TimeMs(0));
    let now = TimeMs(64_000);
    for (gpus, class) in [(15, INDEX_CLASS), (16, INDEX_CLASS)] {
        let mut j = job(1, gpus, Some(100_000), 0, JobState::Waiting);
        tias.refresh(&mut j, now);
        assert_eq!(tias.standing(&j, now), Standing::Critical, "{gpus}");
        assert_eq!(tias.key(&j, now).class, class, "{gpus}");
        let sized = tias.sized_key(&j, now);
        assert_eq!(tias.key(&j, now) == sized, gpus == 16, "{gpus}");
    }
    // The cluster's size is the most healthy GPUs seen: a failure makes no gang bigger.
    let epoch = tias.epoch();
    tias.on_capacity(8, TimeMs(0));
    assert_eq!(tias.epoch(), epoch);
    assert_eq!(tias.cluster_gpus, 64);
}

#[test]
fn a_switch_reviews_only_the_jobs_whose_key_it_moves() {
    let mut tias = with_table(TiasConfig::default());
    // 64 s later, one more job of 1,000 GPU·s publishes a second table at once (40 rows per
    // event): one more job runs past the first one's best horizon, so the index at 0
    // falls; the last bin's (the pseudo-sample alone) stays.
    finish_plain(&mut tias, 1, 1_000_000, TimeMs(64_000));
    assert!(tias.table().is_some_and(|(_, at)| at == TimeMs(64_000)));
    assert_ne!(tias.previous.bin_log_index(0), tias.table.bin_log_index(0));
    let last = SIZE_BINS - 1;
    assert_eq!(
        tias.previous.bin_log_index(last),
        tias.table.bin_log_index(last)
    );
    // The publication: a young job (bin 0, whose index moved) is reviewed at its switch
    // (job 68, step 1: 2 s on), a long one (the last bin, unmoved) not.
    tias.advance(TimeMs(64_000));
    let young = job(68, 1, None, 0, JobState::Waiting);
    let long = job(65, 1, None, SIZE_EDGES_GPU_MS[last], JobState::Waiting);
    assert!(tias.follows_epoch(&young) && tias.follows_epoch(&long));
    assert_eq!(
        tias.epoch_effect(&young, TimeMs(64_000)),
        EpochEffect::Review(Some(TimeMs(66_000)))
    );
    assert_eq!(
        tias.epoch_effect(&long, TimeMs(64_000)),
        EpochEffect::Review(None)
    );
    assert_eq!(tias.next_review(&long, TimeMs(64_000)), None);
    // A hopeless job in the background reads no table.
    let mut hopeless = job(1, 1, Some(10), 0, JobState::Waiting);
    hopeless.order_queue |= HOPELESS_FLAG;
    assert!(!tias.follows_epoch(&hopeless));
}

#[test]
fn a_table_that_settles_on_the_published_one_is_not_published() {
    // One more job of the same size 64 s later moves only bin 2's index (from 84.852 GPU·s),
    // by 5/256 of an octave (−3,601 → −3,596).
    let published = with_table(TiasConfig::default()).table().unwrap().0.clone();
    for (tolerance, publishes) in [(8, false), (4, true)] {
        let mut tias = with_table(TiasConfig {
            table_tolerance_log2_q8: tolerance,
            ..TiasConfig::default()
        });
        finish_plain(&mut tias, 1, 100_000, TimeMs(64_000));
        let (table, at) = tias.table().unwrap();
        assert_eq!(
            at,
            TimeMs(64_000),
            "tolerance {tolerance}: the next is due 64 s on"
        );
        let moved: [i32; SIZE_BINS] =
            core::array::from_fn(|bin| table.bin_log_index(bin) - published.bin_log_index(bin));
        let expected_moves = if publishes { 5 } else { 0 };
        assert_eq!(moved.iter().map(|m| m.abs()).sum::<i32>(), expected_moves);
        assert_eq!(moved[2], expected_moves, "tolerance {tolerance}");
        let switch = publishes.then_some(TimeMs(65_000));
        assert_eq!(tias.next_step_at(), switch, "tolerance {tolerance}");
    }
}

#[test]
fn no_review_is_announced_for_a_switch_while_no_job_is_live() {
    // A switch in progress with no live job: the steps catch up at the next event, and a
    // caller is not asked to tick for them (a simulator would tick forever).
    let mut tias = Tias::new(TiasConfig {
        table_rows_per_event: 40,
        ..TiasConfig::default()
    });
    finish_plain(&mut tias, 40, 100_000, TimeMs(0));
    assert_eq!(tias.next_step_at(), Some(TimeMs(1_000)));
    let s = sched(4, tias);
    assert_eq!(s.next_review(), None);
}

/// The switch step hashes the id: 120 ids in an arithmetic progression put at most 3 jobs
/// on one of the 64 steps for strides 1, 64 and 65,536 and at most 5 for 1,024 and 4,096
/// (as many as 120 random ids would: 1.9 a step on average), where `id mod 64` put every id
/// of stride 64 on step 0 (and one event re-keyed them all); every step is in range.
#[test]
fn switch_steps_spread_ids_of_any_stride_over_the_64_steps() {
    for (stride, most_allowed) in [(1u32, 3), (64, 3), (65_536, 3), (1_024, 5), (4_096, 5)] {
        let mut per_step = [0u32; SWITCH_STEPS as usize];
        for k in 0..120u32 {
            let j = job(k.wrapping_mul(stride), 1, None, 0, JobState::Waiting);
            let step = usize::from(Tias::switch_step(&j));
            assert!(step < per_step.len());
            per_step[step] += 1;
        }
        let most = per_step.iter().copied().max().unwrap_or(0);
        assert!(
            most <= most_allowed,
            "stride {stride}: {most} jobs on one step"
        );
    }
    let top = job(u32::MAX, 1, None, 0, JobState::Waiting);
    assert!(u64::from(Tias::switch_step(&top)) < SWITCH_STEPS);
}

/// `DeadlineSafety::LatestStart`: `ρ·W` = 78,400 ms of a 102,400 ms window, so a job that has
/// not run must start by 24,000 ms. It turns critical at 24,000 − σ·W and is ranked by the
/// index until 24,000, then above a fresh non-deadline job, by deadline; the default mode
/// never does either.
#[test]
fn latest_start_mode_ranks_a_critical_job_first_once_it_must_run() {
    // Windows of 102 s are below the lift threshold: no lifting here.
    let index = TiasConfig {
        finish_lift_gpu_ms: 0,
        ..TiasConfig::default()
    };
    let safe = TiasConfig {
        deadline_safety: DeadlineSafety::LatestStart,
        ..index
    };
    for (config, latest_start_class) in [(safe, true), (index, false)] {
        let mut tias = trained(config);
        let deadline_job = || job(1, 1, Some(W), 0, JobState::Waiting);
        let fresh = || job(2, 1, None, 0, JobState::Waiting);
        let mut before = deadline_job();
        tias.refresh(&mut before, TimeMs(20_000));
        assert_eq!(tias.standing(&before, TimeMs(20_000)), Standing::Critical);
        assert_ne!(tias.key(&before, TimeMs(20_000)).class, LATEST_START_CLASS);
        let review = tias.next_review(&before, TimeMs(20_000));
        assert_eq!(
            review == Some(TimeMs(24_000)),
            latest_start_class,
            "{review:?}"
        );
        let mut at = deadline_job();
        tias.refresh(&mut at, TimeMs(24_000));
        let class = tias.key(&at, TimeMs(24_000)).class;
        assert_eq!(class == LATEST_START_CLASS, latest_start_class);
        let order = ranked(&mut tias, [fresh(), deadline_job()], TimeMs(24_000));
        assert_eq!(order == [1, 2], latest_start_class, "{order:?}");
        // Started at its latest start, it keeps its place while it runs.
        let mut running = job(1, 1, Some(W), 5_000, JobState::Running);
        tias.refresh(&mut running, TimeMs(29_000));
        let class = tias.key(&running, TimeMs(29_000)).class;
        assert_eq!(class == LATEST_START_CLASS, latest_start_class);
    }
}
