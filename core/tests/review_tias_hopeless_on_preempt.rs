//! Review 2026-12-03: TIAS keeps a stale "critical/lifted" key on a job that a preemption
//! makes hopeless.
//!
//! `Scheduler::state_changed` only re-arms a job's review after a start or a preemption (the
//! `KeyChanges::AtReview` contract says a state change alone changes neither `refresh` nor
//! `key`). TIAS breaks that contract: `Tias::hopeless_at` is `None` while a job runs and
//! `Some(D − (ρ₀·W − e))` once it is queued, so a running deadline job whose `ρ₀` grew while
//! it ran (a new table's switch re-keyed it *while running*) is hopeless the instant it is
//! preempted. Nobody refreshes it then: `next_review` of a job whose standing is already
//! `Hopeless` announces neither the hopeless time nor the deadline, so the job keeps its
//! lifted key (class 0, above every job) and takes GPUs from a non-deadline job, although
//! `Tias::standing` itself says it is hopeless (and, under `HopelessPolicy::Background`, must
//! only use GPUs no other job wants). The same order re-ranked in full every pass (what the
//! property test `indexed_orders_decide_like_a_full_rerank` calls the reference) keeps the
//! non-deadline job running.

use gantry_core::{
    BestFit, Decision, Event, GpuId, HeadOfLine, Job, JobId, JobOrder, JobSpec, KeyChanges,
    LinkWeights, OrderHooks, PreemptReason, Preemption, PriorityKey, RejectReason, Scheduler,
    Standing, Tias, TiasConfig, TimeMs, Topology,
};

/// `O` re-ranked in full every pass (every job refreshed, every key recomputed).
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
}

type Out = heapless::Vec<Decision<4>, 16>;

/// Job A. Its id is one whose switch step (a hash of the id) is the first, so that the new
/// table reaches it while it runs, before the GPU failure (the review used id 1, which under
/// `id mod 64` switched at the second step).
const A: JobId = JobId(34);

fn config() -> TiasConfig {
    TiasConfig {
        // Learn rho, rho0 from the first finished deadline jobs, publish with the first table
        // (two finished jobs and the pseudo-sample), all rows in one event.
        min_samples: 1,
        table_min_samples: 3,
        table_rows_per_event: 40,
        // Two GPUs: keep 1-GPU deadline jobs out of the big-gang rule.
        big_gang_permille: 0,
        ..TiasConfig::default()
    }
}

fn deadline_job(id: u32, deadline_s: u64) -> JobSpec {
    let mut spec = JobSpec::new(JobId(id), 1);
    spec.deadline = Some(TimeMs(deadline_s * 1000));
    spec
}

/// The event stream; returns what the GPU failure at t = 50 s decided.
fn run<O: JobOrder>(s: &mut Scheduler<O, BestFit, 4, 8, 4>) -> Out {
    let mut out = Out::new();
    let mut at = |s: &mut Scheduler<O, BestFit, 4, 8, 4>, t_s: u64, e: Event| {
        out.clear();
        s.handle(TimeMs(t_s * 1000), e, &mut out).unwrap();
        out.clone()
    };
    // Cold start (rho = 1): all three are critical and lifted at once; C and B hold the GPUs.
    at(s, 0, Event::Submit(deadline_job(3, 50)));
    at(s, 0, Event::Submit(deadline_job(2, 60)));
    at(s, 0, Event::Submit(deadline_job(A.0, 100))); // A: waits
    at(s, 40, Event::Finish(JobId(3))); // A starts at 40 s, having waited 40 s
    // B's finish publishes the first table with rho = 832/1024, rho0 = 784/1024.
    at(s, 45, Event::Finish(JobId(2)));
    // A's switch (id 34, hashed to step 0: 1 step of 1 s, due at 46 s) re-keys it while it
    // runs: not hopeless while running.
    at(s, 47, Event::Tick);
    at(s, 48, Event::Submit(JobSpec::new(JobId(4), 1))); // N, no deadline, on the free GPU
    assert!(s.placement_of(JobId(4)).len() == 1, "N runs");
    let a_gpu = s.placement_of(A).as_slice()[0];
    // A's GPU fails at 50 s: A has 50 s left and needs at least rho0*W - e = 76.6 - 10 s.
    at(s, 50, Event::GpuDown(a_gpu))
}

#[test]
fn review_tias_job_made_hopeless_by_a_preemption_keeps_its_lifted_key() {
    let topo = || Topology::uniform(1, 1, 2, LinkWeights::PROXIMITY_DRL).unwrap();
    let mut indexed: Scheduler<Tias, BestFit, 4, 8, 4> =
        Scheduler::new(topo(), Tias::new(config()), BestFit);
    let mut full: Scheduler<FullRerank<Tias>, BestFit, 4, 8, 4> =
        Scheduler::new(topo(), FullRerank(Tias::new(config())), BestFit);
    let got = run(&mut indexed);
    let reference = run(&mut full);

    eprintln!("indexed: {got:?}\nfull re-rank: {reference:?}");
    // TIAS itself says A is hopeless once it waits (as it does after the failure in the
    // full re-rank).
    assert_eq!(indexed.order().shares(), (832, 784));
    let a = *full.job(A).unwrap();
    assert!(a.state().is_queued());
    assert_eq!(
        full.order().0.standing(&a, TimeMs(50_000)),
        Standing::Hopeless
    );
    let failed = Decision::Preempt {
        job: A,
        reason: PreemptReason::GpuFailed(GpuId(0)),
    };
    // Under HopelessPolicy::Background a hopeless job takes no GPU another job wants: the
    // full re-rank keeps N running.
    assert_eq!(reference.as_slice(), &[failed], "full re-rank");
    assert_eq!(
        got.as_slice(),
        reference.as_slice(),
        "indexed TIAS decides unlike the full re-rank: the hopeless job A keeps its lifted key \
         and preempts the non-deadline job N"
    );
}

/// The same stream under each hopeless policy: the indexed order decides the GPU failure as
/// the full re-rank does, and under `Reject` the job made hopeless by the failure is
/// rejected in that very pass (re-keyed at the preemption, so its rank is fresh) rather than
/// restarted on the other GPU.
#[test]
fn tias_job_made_hopeless_by_a_preemption_decides_as_the_full_rerank_under_every_policy() {
    use gantry_core::HopelessPolicy;
    let policies = [
        HopelessPolicy::Background,
        HopelessPolicy::BestEffort,
        HopelessPolicy::Reject,
    ];
    for hopeless in policies {
        let config = TiasConfig {
            hopeless,
            ..config()
        };
        let topo = || Topology::uniform(1, 1, 2, LinkWeights::PROXIMITY_DRL).unwrap();
        let mut indexed: Scheduler<Tias, BestFit, 4, 8, 4> =
            Scheduler::new(topo(), Tias::new(config), BestFit);
        let mut full: Scheduler<FullRerank<Tias>, BestFit, 4, 8, 4> =
            Scheduler::new(topo(), FullRerank(Tias::new(config)), BestFit);
        let got = run(&mut indexed);
        let reference = run(&mut full);
        assert_eq!(got.as_slice(), reference.as_slice(), "{hopeless:?}");
        if hopeless == HopelessPolicy::Reject {
            let rejected = Decision::Reject {
                job: A,
                reason: RejectReason::DeadlineUnreachable,
            };
            assert!(got.contains(&rejected), "{got:?}");
            assert!(indexed.job(A).is_none());
        }
        indexed.check_invariants().unwrap();
    }
}
