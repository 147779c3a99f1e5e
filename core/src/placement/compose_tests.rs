//! Every placer driven through a real scheduler: the sequential protocol composes.

use super::observation::{GPU_FEATURES, JOB_FEATURES};
use super::test_support::proximity_tree;
use super::{
    ExactOptimal, FirstFit, GpuMask, GpuScorer, LoadBalance, Placer, ProximityGreedy, RandomPlacer,
    ScoreError, ScoredPlacer, optimal_cost,
};
use crate::event::{Decision, Event};
use crate::ids::{GpuId, JobId};
use crate::job::JobSpec;
use crate::order::Fifo;
use crate::scheduler::Scheduler;
use crate::time::TimeMs;

type Sched<P> = Scheduler<Fifo, P, 32, 64, 8>;
type Out = heapless::Vec<Decision<8>, 16>;

/// Runs: 6 jobs at t=0 (23 GPUs, all fit), job 4 (8 GPUs) finishes at t=10, two more
/// arrive. Returns (job, cost, optimum on the free set it saw) per start, and the
/// scheduler's placer-fault count.
fn drive<P: Placer<32>>(placer: P) -> (heapless::Vec<(JobId, f64, f64), 16>, u32) {
    let topo = proximity_tree();
    let mut s: Sched<P> = Scheduler::new(topo.clone(), Fifo, placer);
    let mut starts = heapless::Vec::new();
    let mut free = GpuMask::<32>::none();
    for g in 0..32 {
        free.set(GpuId(g), true);
    }
    let mut record = |out: &Out, free: &mut GpuMask<32>| {
        for d in out {
            if let Decision::Start { job, gpus } = d {
                let opt = optimal_cost(&topo, free, gpus.len()).unwrap();
                for &g in gpus.as_slice() {
                    assert!(free.allows(g));
                    free.set(g, false);
                }
                starts
                    .push((*job, topo.comm_cost(gpus.as_slice()), opt))
                    .unwrap();
            }
        }
    };
    let mut out = Out::new();
    for (id, k) in [(1u32, 2u16), (2, 4), (3, 1), (4, 5), (5, 8), (6, 3)] {
        out.clear();
        let spec = JobSpec::new(JobId(id), k);
        s.handle(TimeMs(0), Event::Submit(spec), &mut out).unwrap();
        record(&out, &mut free);
        s.check_invariants().unwrap();
    }
    out.clear();
    s.handle(TimeMs(10), Event::Finish(JobId(5)), &mut out)
        .unwrap();
    for g in 0..32 {
        free.set(GpuId(g), s.gpu_owner(GpuId(g)).is_none());
    }
    for (id, k) in [(7u32, 6u16), (8, 4)] {
        out.clear();
        let spec = JobSpec::new(JobId(id), k);
        s.handle(TimeMs(11), Event::Submit(spec), &mut out).unwrap();
        record(&out, &mut free);
        s.check_invariants().unwrap();
    }
    assert_eq!(s.busy_gpu_count(), 23 - 8 + 10);
    (starts, s.placer_faults())
}

struct NanScorer;
impl GpuScorer for NanScorer {
    fn score(
        &mut self,
        _: &[[f32; GPU_FEATURES]],
        _: &[f32; JOB_FEATURES],
        out: &mut [f32],
    ) -> Result<(), ScoreError> {
        out.fill(f32::NAN);
        Ok(())
    }
}

#[test]
fn every_placer_composes_with_the_scheduler() {
    let total = |starts: &[(JobId, f64, f64)]| starts.iter().map(|s| s.1).sum::<f64>();
    let check = |name: &str, starts: &[(JobId, f64, f64)], faults: u32| {
        assert_eq!(starts.len(), 8, "{name}");
        assert_eq!(faults, 0, "{name}");
        for &(job, cost, opt) in starts {
            assert!(cost + 1e-9 >= opt, "{name} {job}: {cost} < optimum {opt}");
        }
    };
    let (first, f) = drive(FirstFit);
    check("first-fit", &first, f);
    let (random, f) = drive(RandomPlacer::new(5));
    check("random", &random, f);
    let (lb, f) = drive(LoadBalance);
    check("load-balance", &lb, f);
    let (greedy, f) = drive(ProximityGreedy);
    check("greedy", &greedy, f);
    let (opt, f) = drive(ExactOptimal::<32>::default());
    check("optimal", &opt, f);
    // The exact placer hits the per-job optimum at every decision.
    for &(job, cost, best) in &opt {
        assert!((cost - best).abs() < 1e-9, "{job}");
    }
    assert!(total(&opt) <= total(&greedy) + 1e-9);
    assert!(total(&greedy) < total(&random));
    // A scorer that only says NaN places exactly as greedy does, with no scheduler fault.
    let (scored, f) = drive(ScoredPlacer::<_, 32>::new(NanScorer));
    check("scored", &scored, f);
    assert_eq!(scored, greedy);
}
