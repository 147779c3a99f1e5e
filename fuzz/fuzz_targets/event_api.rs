//! Fuzzes the core's event API: arbitrary bytes become an event sequence (garbage included:
//! unknown ids, zero-GPU and oversized jobs, GPU ids out of range, time going backwards,
//! past deadlines) fed to schedulers with preemptive and non-preemptive orders. After every
//! event the invariants must hold, and an event that returned an error must have changed
//! nothing. Any panic is a finding.
#![no_main]

use gantry_core::placement::{LoadBalance, ProximityGreedy};
use gantry_core::{
    BestFit, Decision, DurationMs, Event, Fifo, GpuId, Job, JobId, JobOrder, JobSpec, JobState, Las, LasConfig,
    LinkWeights, Placer, Scheduler, TimeMs, Tias, Topology,
};
use libfuzzer_sys::fuzz_target;

const G: usize = 16;
const J: usize = 8;
const GANG: usize = 8;

fn event_of(op: &[u8], now: &mut u64, running: &[JobId]) -> (u64, Event) {
    let (kind, a, b, c) = (op[0], op[1], op[2], op[3]);
    let at = *now;
    match kind % 9 {
        0 | 1 => {
            let mut spec = JobSpec::new(JobId(u32::from(a % 24)), u16::from(b % 12));
            if c & 1 == 1 {
                spec.deadline = Some(TimeMs(now.saturating_add(u64::from(c) * 97).saturating_sub(50)));
            }
            if c & 2 == 2 {
                spec.declared_length = Some(DurationMs(u64::from(a) * 131));
            }
            if c == 255 {
                spec.deadline = Some(TimeMs::MAX);
            }
            (at, Event::Submit(spec))
        }
        2 => (at, Event::Finish(JobId(u32::from(a % 24)))),
        3 => (at, running.get(usize::from(a)).map_or(Event::Tick, |&id| Event::Finish(id))),
        4 => (at, Event::Cancel(JobId(u32::from(a % 24)))),
        5 => (at, Event::GpuDown(GpuId(u16::from(a % 20)))),
        6 => (at, Event::GpuUp(GpuId(u16::from(a % 20)))),
        7 => {
            *now = now.saturating_add(u64::from(u16::from_le_bytes([a, b])));
            (*now, Event::Tick)
        }
        _ => (now.saturating_sub(u64::from(a)), Event::Tick),
    }
}

type Snapshot = (Vec<Job>, Vec<Option<JobId>>, Vec<bool>, TimeMs);

fn snapshot<O: JobOrder, P: Placer<G>>(s: &Scheduler<O, P, G, J, GANG>) -> Snapshot {
    let gpus = (0..G as u16).map(GpuId);
    (s.jobs().to_vec(), gpus.clone().map(|g| s.gpu_owner(g)).collect(), gpus.map(|g| s.is_healthy(g)).collect(), s.now())
}

fn run<O: JobOrder, P: Placer<G>>(order: O, placer: P, data: &[u8]) {
    let topology = Topology::<G>::uniform(2, 2, 4, LinkWeights::PROXIMITY_DRL).expect("fixed shape");
    let mut s: Scheduler<O, P, G, J, GANG> = Scheduler::new(topology, order, placer);
    let mut now = 0u64;
    for op in data.chunks_exact(4) {
        let running: Vec<JobId> = s.jobs().iter().filter(|j| j.state == JobState::Running).map(Job::id).collect();
        let (at, event) = event_of(op, &mut now, &running);
        let before = snapshot(&s);
        let mut out: heapless::Vec<Decision<GANG>, 4> = heapless::Vec::new();
        match s.handle(TimeMs(at), event, &mut out) {
            Err(err) => assert!(snapshot(&s) == before && out.is_empty(), "{event:?} -> {err:?} changed state"),
            Ok(outcome) => {
                // A small buffer: drain what is pending, as a caller must.
                let mut more = outcome.more_pending;
                let mut rounds = 0;
                while more {
                    out.clear();
                    more = s.handle(TimeMs(at), Event::Tick, &mut out).expect("tick at same time").more_pending;
                    rounds += 1;
                    assert!(rounds < 64, "more_pending never ends");
                }
            }
        }
        if let Err(v) = s.check_invariants() {
            panic!("{event:?}: {v:?}");
        }
        let held: usize = s.jobs().iter().filter(|j| j.state == JobState::Running).map(|j| usize::from(j.spec.gpus)).sum();
        assert_eq!(held, s.busy_gpu_count(), "GPU accounting");
    }
}

fuzz_target!(|data: &[u8]| {
    run(Fifo, BestFit, data);
    run(Las::new(LasConfig::default()), ProximityGreedy, data);
    run(Tias::default(), LoadBalance, data);
});
