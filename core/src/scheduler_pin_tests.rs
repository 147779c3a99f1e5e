//! Preemption classes and the minimum run quantum, each decision hand-computed: a `Never`
//! job is not preempted for priority nor moved, a job inside its quantum is not preempted
//! until the quantum ends, a pinned job's GPUs are not promised to anyone, and a GPU
//! failure still stops a pinned job.

extern crate std;

use super::*;
use crate::job::PreemptionClass;
use crate::order::{Edf, PriorityKey};
use crate::placement::FirstFit;
use crate::topology::LinkWeights;
use std::vec::Vec;

type Edf8 = Scheduler<Edf, FirstFit, 8, 8, 8>;
type Out = heapless::Vec<Decision<8>, 16>;

/// 1 rack × 2 machines × 4 GPUs (machine 0: GPUs 0–3, machine 1: GPUs 4–7), preemptive
/// EDF, first-fit, with the minimum run quantum `min_run_ms`.
fn edf(min_run_ms: u64) -> Edf8 {
    let topo = Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap();
    let config = SchedulerConfig::for_order(&Edf).with_min_run(DurationMs(min_run_ms));
    Scheduler::with_config(topo, Edf, FirstFit, config)
}

/// Job `id` of `gpus` GPUs with deadline `deadline_ms` (EDF: earlier runs first).
fn job(id: u32, gpus: u16, deadline_ms: u64, class: PreemptionClass) -> JobSpec {
    JobSpec {
        deadline: Some(TimeMs(deadline_ms)),
        preemption: class,
        ..JobSpec::new(JobId(id), gpus)
    }
}

fn step<O: JobOrder, P: Placer<8>>(
    s: &mut Scheduler<O, P, 8, 8, 8>,
    now: u64,
    event: Event,
) -> Vec<Decision<8>> {
    let mut out = Out::new();
    s.handle(TimeMs(now), event, &mut out).unwrap();
    s.check_invariants().unwrap();
    out.iter().cloned().collect()
}

fn gpus(ids: &[u16]) -> GpuSet<8> {
    let mut set = GpuSet::new();
    for &g in ids {
        set.insert(GpuId(g)).unwrap();
    }
    set
}

fn start(id: u32, on: &[u16]) -> Decision<8> {
    Decision::Start {
        job: JobId(id),
        gpus: gpus(on),
    }
}

fn preempt(id: u32) -> Decision<8> {
    Decision::Preempt {
        job: JobId(id),
        reason: PreemptReason::Priority,
    }
}

const ALL: [u16; 8] = [0, 1, 2, 3, 4, 5, 6, 7];

#[test]
fn a_never_job_is_not_preempted_by_a_higher_priority_arrival() {
    use PreemptionClass::{Checkpointing, Never};
    // Job 1 (all 8 GPUs, deadline 1000) runs; job 2 (8 GPUs, deadline 500) outranks it.
    let mut s = edf(0);
    assert_eq!(
        step(&mut s, 0, Event::Submit(job(1, 8, 1000, Never))),
        [start(1, &ALL)]
    );
    assert_eq!(
        step(&mut s, 10, Event::Submit(job(2, 8, 500, Checkpointing))),
        []
    );
    assert!(s.job(JobId(1)).unwrap().is_pinned());
    // It runs to completion; then job 2 gets the GPUs.
    assert_eq!(step(&mut s, 40, Event::Finish(JobId(1))), [start(2, &ALL)]);
    // The same arrival preempts a checkpointing job at once.
    let mut s = edf(0);
    step(&mut s, 0, Event::Submit(job(1, 8, 1000, Checkpointing)));
    assert_eq!(
        step(&mut s, 10, Event::Submit(job(2, 8, 500, Checkpointing))),
        [preempt(1), start(2, &ALL)]
    );
}

#[test]
fn a_pinned_job_keeps_its_gpus_and_only_what_is_left_is_planned() {
    use PreemptionClass::{Checkpointing, Never};
    let mut s = edf(0);
    // Job 1 (Never, GPUs 0–3) and job 2 (GPUs 4–7) run.
    step(&mut s, 0, Event::Submit(job(1, 4, 900, Never)));
    assert_eq!(
        step(&mut s, 0, Event::Submit(job(2, 4, 800, Checkpointing))),
        [start(2, &[4, 5, 6, 7])]
    );
    // Job 3 (8 GPUs) outranks both but can never get 8 while job 1 runs: preempting job 2
    // for it would gain nothing, so nothing happens.
    assert_eq!(
        step(&mut s, 5, Event::Submit(job(3, 8, 100, Checkpointing))),
        []
    );
    // Job 4 (4 GPUs, deadline 200) fits in the 4 GPUs not pinned: job 2 (deadline 800,
    // ranked after it) makes room.
    assert_eq!(
        step(&mut s, 6, Event::Submit(job(4, 4, 200, Checkpointing))),
        [preempt(2), start(4, &[4, 5, 6, 7])]
    );
    // Job 1 finishes: job 3 still cannot have 8 GPUs without job 4 (deadline 200 > 100):
    // job 4 is preempted and job 3 takes all 8.
    assert_eq!(
        step(&mut s, 20, Event::Finish(JobId(1))),
        [preempt(4), start(3, &ALL)]
    );
}

#[test]
fn a_quantum_ended_early_breaks_an_invariant() {
    // The quantum flag is the scheduler's only record that a running job is protected; a
    // state (a restored snapshot) where it is off before the quantum has run out would let
    // the job be preempted early, so `check_invariants` (which `restore_in_place` runs)
    // refuses it. A flag that outlives its quantum until the next pass is fine.
    let mut s = edf(100);
    step(
        &mut s,
        0,
        Event::Submit(job(1, 8, 1000, PreemptionClass::Checkpointing)),
    );
    let slot = s.table.find(JobId(1)).unwrap();
    s.table.get_mut(slot).unwrap().end_quantum();
    // The counters and summaries agree with the flag: only the flag itself is wrong.
    s.pinned_count = 0;
    s.quantum_end = None;
    s.rank.refresh(slot, s.table.by_slot());
    assert_eq!(
        s.check_invariants(),
        Err(InvariantViolation::IndexOutOfSync(JobId(1)))
    );
    // At 100 the quantum is over: the same flag is consistent again.
    s.last_now = TimeMs(100);
    assert_eq!(s.check_invariants(), Ok(()));
}

#[test]
fn a_job_within_its_quantum_is_not_preempted_and_is_after_it() {
    use PreemptionClass::Checkpointing;
    // Quantum 100 ms. Job 1 (8 GPUs, deadline 1000) starts at 0.
    let mut s = edf(100);
    assert_eq!(
        step(&mut s, 0, Event::Submit(job(1, 8, 1000, Checkpointing))),
        [start(1, &ALL)]
    );
    assert!(s.job(JobId(1)).unwrap().in_quantum());
    // Job 2 (deadline 500) outranks it at 10, inside the quantum: it waits, and the
    // scheduler asks to be called when the quantum ends.
    assert_eq!(
        step(&mut s, 10, Event::Submit(job(2, 8, 500, Checkpointing))),
        []
    );
    assert_eq!(s.next_review(), Some(TimeMs(100)));
    assert_eq!(step(&mut s, 99, Event::Tick), []);
    assert_eq!(s.next_review(), Some(TimeMs(100)));
    // At 100 job 1 has run its quantum: it is preempted for job 2, whose own quantum runs
    // to 200.
    assert_eq!(step(&mut s, 100, Event::Tick), [preempt(1), start(2, &ALL)]);
    assert!(!s.job(JobId(1)).unwrap().in_quantum());
    assert_eq!(s.job(JobId(2)).unwrap().running_since(), TimeMs(100));
    assert_eq!(s.next_review(), Some(TimeMs(200)));
    // A job 3 (deadline 300) at 150 waits for job 2's quantum too.
    assert_eq!(
        step(&mut s, 150, Event::Submit(job(3, 8, 300, Checkpointing))),
        []
    );
    assert_eq!(step(&mut s, 200, Event::Tick), [preempt(2), start(3, &ALL)]);
    // Job 3 finishes inside its quantum: no quantum is left to wait for, and job 2 (deadline
    // 500) comes back before job 1 (1000).
    assert_eq!(step(&mut s, 250, Event::Finish(JobId(3))), [start(2, &ALL)]);
    assert_eq!(s.next_review(), Some(TimeMs(350)));
}

#[test]
fn without_preemption_the_quantum_asks_for_no_review() {
    // Non-preemptive FIFO with a quantum: the quantum changes no decision, so no tick.
    let topo = Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap();
    let config = SchedulerConfig::for_order(&crate::Fifo).with_min_run(DurationMs(100));
    let mut s: Scheduler<crate::Fifo, FirstFit, 8, 8, 8> =
        Scheduler::with_config(topo, crate::Fifo, FirstFit, config);
    step(&mut s, 0, Event::Submit(JobSpec::new(JobId(1), 2)));
    assert!(s.job(JobId(1)).unwrap().in_quantum());
    assert_eq!(s.next_review(), None);
}

#[test]
fn a_gpu_failure_still_stops_a_pinned_job() {
    use PreemptionClass::Never;
    // Job 1 (Never, 4 GPUs) on GPUs 0–3; GPU 2 fails: it is stopped and restarted at once
    // on the first 4 healthy GPUs (first-fit: 0, 1, 3, 4).
    let mut s = edf(0);
    assert_eq!(
        step(&mut s, 0, Event::Submit(job(1, 4, 900, Never))),
        [start(1, &[0, 1, 2, 3])]
    );
    let failed = Decision::Preempt {
        job: JobId(1),
        reason: PreemptReason::GpuFailed(GpuId(2)),
    };
    assert_eq!(
        step(&mut s, 30, Event::GpuDown(GpuId(2))),
        [failed, start(1, &[0, 1, 3, 4])]
    );
    // The same inside a quantum: the quantum ends with the run and starts again with the
    // restart.
    let mut s = edf(100);
    step(
        &mut s,
        0,
        Event::Submit(job(1, 4, 900, PreemptionClass::Checkpointing)),
    );
    assert_eq!(
        step(&mut s, 30, Event::GpuDown(GpuId(2))),
        [
            Decision::Preempt {
                job: JobId(1),
                reason: PreemptReason::GpuFailed(GpuId(2)),
            },
            start(1, &[0, 1, 3, 4])
        ]
    );
    assert_eq!(s.job(JobId(1)).unwrap().running_since(), TimeMs(30));
    assert_eq!(s.next_review(), Some(TimeMs(130)));
}

/// Preemptive first-come-first-served that consolidates gangs (as in the scheduler tests).
#[derive(Clone, Copy)]
struct ConsolidatingFifo;

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
        true
    }
}

/// Jobs 1–4 (one GPU each; job 1 of class `first`) fill machine 0, job 5 (3 GPUs) takes
/// GPUs 4–6, job 2 finishes: GPUs 1 and 7 are free, on two machines. Job 6 then asks for 2
/// GPUs at 20 ms; its decisions are returned.
fn gang_after_fragmentation(first: PreemptionClass, min_run_ms: u64) -> Vec<Decision<8>> {
    let topo = Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap();
    let config =
        SchedulerConfig::for_order(&ConsolidatingFifo).with_min_run(DurationMs(min_run_ms));
    let mut s: Scheduler<ConsolidatingFifo, FirstFit, 8, 8, 8> =
        Scheduler::with_config(topo, ConsolidatingFifo, FirstFit, config);
    let one = JobSpec {
        preemption: first,
        ..JobSpec::new(JobId(1), 1)
    };
    step(&mut s, 0, Event::Submit(one));
    for (t, id, gpus) in [(1, 2, 1), (2, 3, 1), (3, 4, 1), (4, 5, 3)] {
        step(&mut s, t, Event::Submit(JobSpec::new(JobId(id), gpus)));
    }
    step(&mut s, 10, Event::Finish(JobId(2)));
    step(&mut s, 20, Event::Submit(JobSpec::new(JobId(6), 2)))
}

#[test]
fn consolidation_does_not_move_pinned_jobs() {
    use PreemptionClass::{Checkpointing, Never};
    // Movable job 1 on GPU 0: it moves to the gang's GPU 7 and the gang gets GPUs 0 and 1
    // (the scheduler tests' case).
    assert_eq!(
        gang_after_fragmentation(Checkpointing, 0),
        [preempt(1), start(1, &[7]), start(6, &[0, 1])]
    );
    // Job 1 is Never: machine 0 still needs one move, and job 3 on GPU 2 is the first
    // movable one: it goes to GPU 7 and the gang gets GPUs 1 and 2.
    assert_eq!(
        gang_after_fragmentation(Never, 0),
        [preempt(3), start(3, &[7]), start(6, &[1, 2])]
    );
    // Every single-GPU job is inside a 1 s quantum at 20 ms: nothing moves, the gang stays
    // spread.
    assert_eq!(
        gang_after_fragmentation(Checkpointing, 1000),
        [start(6, &[1, 7])]
    );
}

#[test]
fn a_move_restarts_the_quantum_of_the_job_moved() {
    // Quantum 15 ms: at 20 ms jobs 1–4 (started at 0–3 ms) are past theirs and may move;
    // job 1 moves and its run (and quantum) count from 20.
    let topo = Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap();
    let config = SchedulerConfig::for_order(&ConsolidatingFifo).with_min_run(DurationMs(15));
    let mut s: Scheduler<ConsolidatingFifo, FirstFit, 8, 8, 8> =
        Scheduler::with_config(topo, ConsolidatingFifo, FirstFit, config);
    for (t, id, gpus) in [(0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 4, 1), (4, 5, 3)] {
        step(&mut s, t, Event::Submit(JobSpec::new(JobId(id), gpus)));
    }
    step(&mut s, 10, Event::Finish(JobId(2)));
    assert_eq!(
        step(&mut s, 20, Event::Submit(JobSpec::new(JobId(6), 2))),
        [preempt(1), start(1, &[7]), start(6, &[0, 1])]
    );
    let moved = s.job(JobId(1)).unwrap();
    assert!(moved.in_quantum());
    assert_eq!(moved.running_since(), TimeMs(20));
    // Job 5 (started at 4) ended its quantum at 19; job 6 (20) and job 1 (moved at 20)
    // end theirs at 35.
    assert!(!s.job(JobId(5)).unwrap().in_quantum());
    assert_eq!(s.next_review(), Some(TimeMs(35)));
}

#[test]
fn classes_and_quanta_survive_a_snapshot() {
    use PreemptionClass::{Checkpointing, Never};
    let mut s = edf(100);
    step(&mut s, 0, Event::Submit(job(1, 4, 900, Never)));
    step(&mut s, 0, Event::Submit(job(2, 4, 800, Checkpointing)));
    step(&mut s, 5, Event::Submit(job(3, 4, 100, Checkpointing)));
    let mut buf = [0u8; 4096];
    let frame = s.snapshot(&mut buf).unwrap().to_vec();
    let topo = Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap();
    let mut frame2 = frame.clone();
    let mut r = Edf8::restore(topo, &mut frame2).unwrap();
    assert_eq!(r.config().min_run, DurationMs(100));
    assert_eq!(r.next_review(), s.next_review());
    assert_eq!(
        r.job(JobId(1)).unwrap().preemption_class(),
        PreemptionClass::Never
    );
    // Both go on to the same decisions: job 2's quantum ends at 100, job 3 takes its GPUs.
    let want = [preempt(2), start(3, &[4, 5, 6, 7])];
    assert_eq!(step(&mut s, 100, Event::Tick), want);
    assert_eq!(step(&mut r, 100, Event::Tick), want);
}
