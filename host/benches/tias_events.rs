//! Events per second through the core at 1,024 GPUs with a long queue, for TIAS and 2D-LAS
//! (issue 11's acceptance benchmark), at 512, 4,096 and 8,192 waiting jobs: the per-event
//! cost must not grow with the queue.
//!
//! Each scheduler (`Scheduler<_, BestFit, 1024, 16384, 128>`, about 3.5 MB, built on a
//! thread with a large stack and boxed) is filled until every GPU is busy and the queue
//! holds the wanted number of jobs: jobs of 1, 1, 2, 4 or 8 GPUs, one in four with a
//! deadline (TIAS). Each measured iteration then sends three events — a running job
//! finishes, a new job arrives, one second passes (`Tick`) — so the queue stays at its
//! length and each `handle` does a full pass. The harness tracks the running jobs from the
//! decisions, so finding one to finish costs nothing. Throughput is in events.
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

/// Drives one scheduler: its clock, the next job id, and the running jobs (oldest first).
struct Bench<O: JobOrder> {
    sched: Box<Scheduler<O, BestFit, GPUS, JOBS, GANG>>,
    now_ms: u64,
    next_id: u32,
    running: VecDeque<JobId>,
    running_set: HashSet<JobId>,
    waiting: usize,
    out: Out,
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
        };
        while bench.waiting < waiting {
            bench.submit();
        }
        bench
    }

    /// One event, plus the follow-up ticks a full decision buffer asks for; keeps the
    /// running set and the queue length from the decisions.
    fn handle(&mut self, event: Event) {
        let mut event = event;
        loop {
            self.out.clear();
            let outcome = self
                .sched
                .handle(TimeMs(self.now_ms), event, &mut self.out)
                .expect("valid event");
            for d in &self.out {
                match d {
                    Decision::Start { job, .. } => {
                        self.running.push_back(*job);
                        self.running_set.insert(*job);
                        self.waiting -= 1;
                    }
                    Decision::Preempt { job, .. } => {
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
        let mut bench = Bench::new(order(), waiting);
        group.bench_function(BenchmarkId::new(name, waiting), |b| b.iter(|| bench.step()));
        assert!(bench.sched.check_invariants().is_ok());
        eprintln!(
            "{name}/{waiting} after the run: {} waiting, {} live, {} GPUs busy",
            bench.waiting,
            bench.sched.jobs().len(),
            bench.sched.busy_gpu_count()
        );
    }
    group.finish();
}

fn tias_events(c: &mut Criterion) {
    run(c, "tias", || Tias::new(TiasConfig::default()));
    run(c, "las", || Las::new(LasConfig::default()));
}

/// The generated group function carries no doc comment.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::tias_events);
}
criterion_main!(group::benches);
