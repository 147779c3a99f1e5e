//! Events per second through the core with the TIAS order at 1,024 GPUs and 4,096 waiting
//! jobs (issue 3's acceptance benchmark).
//!
//! The scheduler (`Scheduler<Tias, BestFit, 1024, 8192, 128>`, about 1.3 MB, boxed) is filled
//! until every GPU is busy and 4,096 jobs wait: jobs of 1, 2, 4 or 8 GPUs, one in four with a
//! deadline. Each measured iteration then sends three events — a running job finishes, a new
//! job arrives, one second passes (`Tick`) — so the queue stays at about 4,096 and each
//! `handle` does a full pass (refresh, rank, plan, place). Throughput is in events.
//!
//! `cargo bench -p gantry --bench tias_events`; for a profiler (callgrind, perf), run the
//! bench binary with criterion's `--profile-time 10`, which skips the analysis.

use criterion::{Criterion, Throughput, criterion_main};
use gantry_core::order::{Tias, TiasConfig};
use gantry_core::placement::BestFit;
use gantry_core::{
    Decision, DurationMs, Event, JobId, JobSpec, JobState, LinkWeights, Scheduler, TimeMs, Topology,
};
use std::hint::black_box;

const GPUS: usize = 1024;
const JOBS: usize = 8192;
const GANG: usize = 128;
const WAITING: usize = 4096;

type Sched = Scheduler<Tias, BestFit, GPUS, JOBS, GANG>;
type Out = heapless::Vec<Decision<GANG>, 256>;

/// Drives one scheduler: its clock and the next job id.
struct Bench {
    sched: Box<Sched>,
    now_ms: u64,
    next_id: u32,
    out: Out,
}

impl Bench {
    fn new() -> Self {
        let topology = Topology::uniform(16, 8, 8, LinkWeights::PROXIMITY_DRL).expect("topology");
        let mut bench = Self {
            sched: Box::new(Scheduler::new(
                topology,
                Tias::new(TiasConfig::default()),
                BestFit,
            )),
            now_ms: 0,
            next_id: 0,
            out: Out::new(),
        };
        // Fill: every GPU busy, then 4,096 queued.
        while bench.waiting() < WAITING {
            bench.submit();
        }
        bench
    }

    fn waiting(&self) -> usize {
        self.sched
            .jobs()
            .iter()
            .filter(|j| j.state.is_queued())
            .count()
    }

    /// One event, plus the follow-up ticks a full decision buffer asks for.
    fn handle(&mut self, event: Event) {
        let mut event = event;
        loop {
            self.out.clear();
            let outcome = self
                .sched
                .handle(TimeMs(self.now_ms), event, &mut self.out)
                .expect("valid event");
            if !outcome.more_pending {
                return;
            }
            event = Event::Tick;
        }
    }

    fn submit(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let mut spec = JobSpec::new(JobId(id), [1, 1, 2, 4, 8][id as usize % 5]);
        if id.is_multiple_of(4) {
            // Generous deadlines: the jobs stay deadline jobs for the whole run.
            spec.deadline = Some(TimeMs(self.now_ms + 30 * 86_400_000 + u64::from(id) * 1000));
        }
        spec.declared_length = Some(DurationMs(3_600_000));
        self.handle(Event::Submit(spec));
    }

    /// Finish, submit, tick: three events.
    fn step(&mut self) {
        self.now_ms += 1000;
        if let Some(id) = self
            .sched
            .jobs()
            .iter()
            .find(|j| j.state == JobState::Running)
            .map(|j| j.id())
        {
            self.handle(Event::Finish(id));
        }
        self.submit();
        self.handle(Event::Tick);
        black_box(self.out.len());
    }
}

fn tias_events(c: &mut Criterion) {
    let mut bench = Bench::new();
    let mut group = c.benchmark_group("tias_1024gpus_4096waiting");
    group.throughput(Throughput::Elements(3));
    group.bench_function("finish_submit_tick", |b| b.iter(|| bench.step()));
    group.finish();
    assert!(bench.sched.check_invariants().is_ok());
    eprintln!(
        "after the run: {} waiting, {} live, {} GPUs busy",
        bench.waiting(),
        bench.sched.jobs().len(),
        bench.sched.busy_gpu_count()
    );
}

/// The generated group function carries no doc comment.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::tias_events);
}
criterion_main!(group::benches);
