//! Events per second through the core at 1,024 GPUs with a long queue, for TIAS and 2D-LAS
//! (issue 11's acceptance benchmark), at 512, 4,096 and 8,192 waiting jobs: the per-event
//! cost must not grow with the queue. TIAS runs twice: `tias` with `TiasConfig::default()`
//! (what the firmware and the C ABI start from) and `tias-host` with `TiasConfig::host()`
//! (what `gantry`'s `tias` order runs: the preemption margin).
//!
//! Each scheduler (`Scheduler<_, BestFit, 1024, 16384, 128>`, about 3.5 MB, built on a
//! thread with a large stack and boxed) is filled until every GPU is busy and the queue
//! holds the wanted number of jobs: jobs of 1, 1, 2, 4 or 8 GPUs, one in four with a
//! deadline (TIAS). Each measured iteration then sends three events — a running job
//! finishes, a new job arrives, one second passes (`Tick`) — so the queue stays at its
//! length and each `handle` does a full pass. The harness tracks the running jobs from the
//! decisions, so finding one to finish costs nothing. Throughput is in events. After each
//! run the bench prints what a step decided on average (`handle` calls, starts,
//! preemptions): the running job that finishes is always the oldest started, whatever its
//! size, so an order that preempts running jobs keeps preempting.
//!
//! `cargo bench -p gantry --features bench --bench tias_events`; for instruction counts, run the bench binary
//! under `valgrind --tool=callgrind` with criterion's `--profile-time 10` and a filter
//! (`tias/4096`), which skips the analysis.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};
use gantry_core::order::{Las, LasConfig, Tias, TiasConfig};
use gantry_core::placement::BestFit;
use gantry_core::{
    Decision, DurationMs, Event, JobId, JobOrder, JobSpec, LinkWeights, Scheduler, TimeMs, Topology,
};
use std::collections::{HashSet, VecDeque};
use std::hint::black_box;

const GPUS: usize = 1024;
const JOBS: usize = 16_384;
const GANG: usize = 128;
const QUEUE_LENGTHS: [usize; 3] = [512, 4096, 8192];

type Out = heapless::Vec<Decision<GANG>, 256>;

/// Drives one scheduler: its clock, the next job id, the running jobs (oldest first), and
/// what the steps since the queue was filled decided.
struct Bench<O: JobOrder> {
    sched: Box<Scheduler<O, BestFit, GPUS, JOBS, GANG>>,
    now_ms: u64,
    next_id: u32,
    running: VecDeque<JobId>,
    running_set: HashSet<JobId>,
    waiting: usize,
    out: Out,
    tally: StepTally,
}

/// Per measured step: `handle` calls (follow-up ticks included), starts and preemptions. An
/// order that preempts more makes more decisions per event; printed after each run, so
/// that events/s can be read against the work each event does.
#[derive(Default)]
struct StepTally {
    steps: u64,
    handles: u64,
    starts: u64,
    preemptions: u64,
}

impl StepTally {
    fn per_step(&self, count: u64) -> f64 {
        count as f64 / self.steps.max(1) as f64
    }
}

impl<O: JobOrder + Send + 'static> Bench<O> {
    /// A scheduler with every GPU busy and `waiting` jobs queued.
    fn new(order: O, waiting: usize) -> Self {
        let sched = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || {
                let topology =
                    Topology::uniform(16, 8, 8, LinkWeights::PROXIMITY_DRL).expect("topology");
                Box::new(Scheduler::new(topology, order, BestFit))
            })
            .expect("thread")
            .join()
            .expect("construction");
        let mut bench = Self {
            sched,
            now_ms: 0,
            next_id: 0,
            running: VecDeque::new(),
            running_set: HashSet::new(),
            waiting: 0,
            out: Out::new(),
            tally: StepTally::default(),
        };
        while bench.waiting < waiting {
            bench.submit();
        }
        bench.tally = StepTally::default();
        bench
    }

    /// One event, plus the follow-up ticks a full decision buffer asks for; keeps the
    /// running set and the queue length from the decisions.
    fn handle(&mut self, event: Event) {
        let mut event = event;
        loop {
            self.out.clear();
            self.tally.handles += 1;
            let outcome = self
                .sched
                .handle(TimeMs(self.now_ms), event, &mut self.out)
                .expect("valid event");
            for d in &self.out {
                match d {
                    Decision::Start { job, .. } => {
                        self.tally.starts += 1;
                        self.running.push_back(*job);
                        self.running_set.insert(*job);
                        self.waiting -= 1;
                    }
                    Decision::Preempt { job, .. } => {
                        self.tally.preemptions += 1;
                        self.running_set.remove(job);
                        self.waiting += 1;
                    }
                    Decision::Reject { .. } => self.waiting -= 1,
                }
            }
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
        self.waiting += 1;
        self.handle(Event::Submit(spec));
    }

    /// Finish, submit, tick: three events.
    fn step(&mut self) {
        self.now_ms += 1000;
        self.tally.steps += 1;
        while let Some(id) = self.running.pop_front() {
            // Skip jobs preempted since they started (lazy deletion).
            if self.running_set.remove(&id) {
                self.handle(Event::Finish(id));
                break;
            }
        }
        self.submit();
        self.handle(Event::Tick);
        black_box(self.out.len());
    }
}

fn run<O: JobOrder + Send + 'static>(c: &mut Criterion, name: &str, order: impl Fn() -> O) {
    let mut group = c.benchmark_group("events_1024gpus");
    group.throughput(Throughput::Elements(3));
    for waiting in QUEUE_LENGTHS {
        // Built on the first call, which criterion makes only for a benchmark its filter
        // selects: a filtered run does not fill the other schedulers (seconds each).
        let mut built: Option<Bench<O>> = None;
        group.bench_function(BenchmarkId::new(name, waiting), |b| {
            let bench = built.get_or_insert_with(|| Bench::new(order(), waiting));
            b.iter(|| bench.step())
        });
        let Some(bench) = built else { continue };
        assert!(bench.sched.check_invariants().is_ok());
        let tally = &bench.tally;
        eprintln!(
            "{name}/{waiting} after the run: {} waiting, {} live, {} GPUs busy; per step: {:.2} handle calls, {:.2} starts, {:.2} preemptions",
            bench.waiting,
            bench.sched.jobs().len(),
            bench.sched.busy_gpu_count(),
            tally.per_step(tally.handles),
            tally.per_step(tally.starts),
            tally.per_step(tally.preemptions)
        );
    }
    group.finish();
}

fn tias_events(c: &mut Criterion) {
    run(c, "tias", || Tias::new(TiasConfig::default()));
    run(c, "tias-host", || Tias::new(TiasConfig::host()));
    run(c, "las", || Las::new(LasConfig::default()));
}

/// The generated group function carries no doc comment.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::tias_events);
}
criterion_main!(group::benches);
