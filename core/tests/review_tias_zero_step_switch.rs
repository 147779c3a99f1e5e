//! Review 2026-12-03: with `table_switch_step_ms: 0` (switch steps of 0 ms, which
//! `Tias::epoch_effect` handles explicitly), a deadline job submitted in the event whose
//! `on_submitted` completes and publishes a new table is refreshed at insertion
//! (`Scheduler::insert` -> `submitted` -> `rekey`) *before* the pass's `advance` moves the
//! switch: it reads the previous `rho` (1.0 on a cold start), is marked critical and lifted,
//! and both flags are sticky, so the job stays above every other job for its whole life. The
//! same order re-ranked in full refreshes it after `advance`, under the published `rho`,
//! where it is relaxed with ~79 s of slack and (with `RelaxedDeadlinePlacement::BelowAll`)
//! waits behind the non-deadline jobs.

use gantry_core::{
    BestFit, Decision, Event, HeadOfLine, Job, JobId, JobOrder, JobSpec, KeyChanges, LinkWeights,
    OrderHooks, Preemption, PriorityKey, RejectReason, RelaxedDeadlinePlacement, Scheduler,
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

fn config() -> TiasConfig {
    TiasConfig {
        min_samples: 1,
        table_min_samples: 1,
        // Switch steps of 0 ms: a new table reaches every job at once.
        table_switch_step_ms: 0,
        relaxed: RelaxedDeadlinePlacement::BelowAll,
        big_gang_permille: 0,
        ..TiasConfig::default()
    }
}

/// Returns what the submission of deadline job 50 decided.
fn run<O: JobOrder>(s: &mut Scheduler<O, BestFit, 4, 16, 4>) -> Out {
    let mut out = Out::new();
    let mut at = |s: &mut Scheduler<O, BestFit, 4, 16, 4>, t_ms: u64, e: Event| {
        out.clear();
        s.handle(TimeMs(t_ms), e, &mut out).unwrap();
        out.clone()
    };
    let mut teach = JobSpec::new(JobId(100), 1);
    teach.deadline = Some(TimeMs(100_000));
    at(s, 0, Event::Submit(teach));
    at(s, 0, Event::Submit(JobSpec::new(JobId(200), 1))); // F, no deadline
    // Job 100 used 10 % of its window: rho = rho0 = 112/1024. The finish starts a table
    // (rows 0-3); each later submission or finish computes 4 more rows.
    at(s, 10_000, Event::Finish(JobId(100)));
    let mut t = 10_000;
    for id in 1..=3 {
        t += 1;
        at(s, t, Event::Submit(JobSpec::new(JobId(id), 1)));
        t += 1;
        at(s, t, Event::Finish(JobId(id)));
    }
    t += 1;
    at(s, t, Event::Submit(JobSpec::new(JobId(4), 1))); // rows 28-31, runs
    t += 1;
    at(s, t, Event::Submit(JobSpec::new(JobId(5), 1))); // rows 32-35, waits
    // Rows 36-39: this submission publishes the table.
    t += 1;
    let mut d = JobSpec::new(JobId(50), 1);
    d.deadline = Some(TimeMs(t + 100_000));
    at(s, t, Event::Submit(d))
}

#[test]
fn review_tias_zero_ms_switch_latches_a_new_job_critical_under_the_old_rho() {
    let topo = || Topology::uniform(1, 1, 2, LinkWeights::PROXIMITY_DRL).unwrap();
    let mut indexed: Scheduler<Tias, BestFit, 4, 16, 4> =
        Scheduler::new(topo(), Tias::new(config()), BestFit);
    let mut full: Scheduler<FullRerank<Tias>, BestFit, 4, 16, 4> =
        Scheduler::new(topo(), FullRerank(Tias::new(config())), BestFit);
    let got = run(&mut indexed);
    let reference = run(&mut full);
    eprintln!("indexed: {got:?}\nfull re-rank: {reference:?}");
    let now = indexed.now();
    assert_eq!(
        indexed.order().table().map(|(_, at)| at),
        Some(now),
        "published now"
    );
    assert_eq!(indexed.order().shares(), (112, 112));
    // Under the published rho the new job has ~79 s of slack: relaxed.
    let d = *full.job(JobId(50)).unwrap();
    assert!(matches!(
        full.order().0.standing(&d, now),
        Standing::Relaxed { .. }
    ));
    let d = *indexed.job(JobId(50)).unwrap();
    // Job 50 (relaxed, BelowAll) must wait behind the non-deadline jobs, as in the full
    // re-rank; the indexed scheduler latched it critical + lifted under the previous rho
    // (1.0, cold start) at insertion, before the pass's `advance` moved the switch.
    assert_eq!(
        got.as_slice(),
        reference.as_slice(),
        "indexed TIAS preempts for job 50, whose standing it holds as {:?} (order_queue {:#x}); \
         under the published rho it is relaxed",
        indexed.order().standing(&d, now),
        d.order_queue
    );
}
