extern crate std;

use super::*;
use crate::SchedError;
use crate::event::{Decision, Event};
use crate::ids::JobId;
use crate::job::{JobSpec, JobState};
use crate::order::{CompatPolicy, Edf, Fifo, Las, LasConfig, LengthMetric, Sjf, Srtf, Tias};
use crate::order::{TiasConfig, TiresiasCompat};
use crate::placement::RandomPlacer;
use crate::placement::{BestFit, ExactOptimal, FirstFit, LoadBalance, ProximityGreedy};
use crate::rng::SeededRng;
use crate::time::DurationMs;
use crate::topology::LinkWeights;
use std::boxed::Box;
use std::vec;
use std::vec::Vec;

const G: usize = 32;
const J: usize = 48;
const GANG: usize = 8;
type Sched<O, P> = Scheduler<O, P, G, J, GANG>;
type Out = heapless::Vec<Decision<GANG>, 16>;
/// What one `handle` call gave: its error or its decisions.
type Answer = (Option<SchedError>, Vec<Decision<GANG>>);

fn topology() -> Topology<G> {
    Topology::uniform(2, 2, 8, LinkWeights::PROXIMITY_DRL).unwrap()
}

fn answer<O: JobOrder, P: Placer<G>>(s: &mut Sched<O, P>, now: TimeMs, event: Event) -> Answer {
    let mut out = Out::new();
    let error = s.handle(now, event, &mut out).err();
    (error, out.to_vec())
}

/// A seeded stream that follows the scheduler it drives: submits of 1–8 GPUs (a third with
/// deadlines, most with declared lengths), finishes of running jobs, cancels, GPU failures
/// and repairs, ticks, and some refused events (unknown jobs, time running backwards is
/// avoided). Returns the events with the answers of the uninterrupted run.
fn seeded_stream<O: JobOrder, P: Placer<G>>(
    mut s: Box<Sched<O, P>>,
    seed: u64,
    events: usize,
) -> Vec<(TimeMs, Event, Answer)> {
    let mut rng = SeededRng::new(seed);
    let mut now = 0u64;
    let mut next_id = 0u32;
    let mut log = Vec::with_capacity(events);
    for _ in 0..events {
        now += u64::from(rng.below(300_000));
        let running: Vec<JobId> = s
            .jobs()
            .filter(|j| j.state() == JobState::Running)
            .map(|j| j.id())
            .collect();
        let event = match rng.below(10) {
            0..=3 => {
                next_id += 1;
                let mut spec = JobSpec::new(JobId(next_id), 1 << rng.below(4));
                if rng.below(3) == 0 {
                    spec.deadline = Some(TimeMs(now + 1 + u64::from(rng.below(20_000_000))));
                }
                if rng.below(4) != 0 {
                    spec.declared_length = Some(DurationMs(u64::from(rng.below(5_000_000))));
                }
                Event::Submit(spec)
            }
            4..=6 if !running.is_empty() => {
                Event::Finish(running[rng.below(running.len() as u32) as usize])
            }
            7 => Event::Cancel(JobId(rng.below(next_id + 2))),
            8 => {
                let gpu = GpuId(rng.below(G as u32 + 2) as u16);
                if rng.below(2) == 0 {
                    Event::GpuDown(gpu)
                } else {
                    Event::GpuUp(gpu)
                }
            }
            _ => Event::Tick,
        };
        let got = answer(&mut s, TimeMs(now), event);
        log.push((TimeMs(now), event, got));
    }
    log
}

/// Runs the first `cut` events, snapshots, restores into a fresh scheduler (whose own
/// snapshot must be the same bytes), and checks that the rest of the stream gets the
/// uninterrupted run's answers.
fn check_cut<O, P>(
    fresh: impl Fn() -> Box<Sched<O, P>>,
    log: &[(TimeMs, Event, Answer)],
    cut: usize,
) where
    O: JobOrder + Serialize + DeserializeOwned,
    P: Placer<G> + Serialize + DeserializeOwned,
{
    let mut s = fresh();
    for (now, event, want) in &log[..cut] {
        assert_eq!(answer(&mut s, *now, *event), *want);
    }
    let mut buf = vec![0u8; 64 * 1024];
    let frame = s.snapshot(&mut buf).unwrap().to_vec();
    let mut bytes = frame.clone();
    let mut restored: Box<Sched<O, P>> =
        Box::new(Scheduler::restore(topology(), &mut bytes).unwrap());
    let mut again = vec![0u8; 64 * 1024];
    let name = (s.order().name(), s.placer().name());
    assert_eq!(
        restored.snapshot(&mut again).unwrap(),
        &frame[..],
        "{name:?} at {cut}"
    );
    // In place, into a scheduler that has lived a life of its own (the first events).
    let mut in_place = fresh();
    for (now, event, _) in log.iter().take(50) {
        answer(&mut in_place, *now, *event);
    }
    let mut scratch = fresh();
    in_place
        .restore_in_place(&mut frame.clone(), &mut scratch)
        .unwrap();
    assert_eq!(
        in_place.snapshot(&mut again).unwrap(),
        &frame[..],
        "{name:?} at {cut}, in place"
    );
    drop(s);
    for (i, (now, event, want)) in log[cut..].iter().enumerate() {
        let got = answer(&mut restored, *now, *event);
        assert_eq!(got, *want, "{name:?}: cut at {cut}, event {}", cut + i);
        let got = answer(&mut in_place, *now, *event);
        assert_eq!(
            got,
            *want,
            "{name:?}: cut at {cut}, event {}, in place",
            cut + i
        );
    }
}

fn every_cut<O, P>(order: O, placer: P)
where
    O: JobOrder + Serialize + DeserializeOwned + Clone,
    P: Placer<G> + Serialize + DeserializeOwned + Clone,
{
    let fresh = || Box::new(Sched::new(topology(), order.clone(), placer.clone()));
    let log = seeded_stream(fresh(), 5, 1_500);
    assert!(log.iter().any(|(_, _, (_, d))| !d.is_empty()));
    for cut in [0, 1, 97, 700, 1_499, 1_500] {
        check_cut(fresh, &log, cut);
    }
}

fn every_placer<O>(order: O)
where
    O: JobOrder + Serialize + DeserializeOwned + Clone,
{
    every_cut(order.clone(), FirstFit);
    every_cut(order.clone(), BestFit);
    every_cut(order.clone(), RandomPlacer::new(3));
    every_cut(order.clone(), LoadBalance);
    every_cut(order.clone(), ProximityGreedy);
    every_cut(order, ExactOptimal::<G>::default());
}

#[test]
fn restored_runs_decide_like_uninterrupted_ones_for_every_order_and_placer() {
    let mut las_time = LasConfig::default();
    las_time.service = LengthMetric::Time;
    every_placer(Fifo);
    every_placer(Sjf::default());
    every_placer(Srtf::default());
    every_placer(Edf);
    every_placer(Las::new(LasConfig::default()));
    every_placer(Las::new(las_time));
    every_placer(Tias::new(TiasConfig {
        min_samples: 4,
        table_min_samples: 8,
        table_rows_per_event: 8,
        ..TiasConfig::default()
    }));
    every_placer(Tias::default());
    for metric in [LengthMetric::Time, LengthMetric::GpuTime] {
        every_placer(TiresiasCompat::new(CompatPolicy::Dlas(metric)));
        every_placer(TiresiasCompat::new(CompatPolicy::Shortest(metric)));
    }
}

/// A TIAS scheduler some way into a seeded stream (jobs queued and running, the sketch
/// learning), and its snapshot.
fn busy_tias() -> (Box<Sched<Tias, BestFit>>, Vec<u8>) {
    let order = Tias::new(TiasConfig {
        min_samples: 4,
        table_min_samples: 8,
        table_rows_per_event: 8,
        ..TiasConfig::default()
    });
    let fresh = || Box::new(Sched::new(topology(), order.clone(), BestFit));
    let log = seeded_stream(fresh(), 9, 600);
    let mut s = fresh();
    for (now, event, _) in &log {
        answer(&mut s, *now, *event);
    }
    assert!(s.jobs().len() > 10 && s.order().sketch().feasible_samples() > 4);
    let mut buf = vec![0u8; 64 * 1024];
    let frame = s.snapshot(&mut buf).unwrap().to_vec();
    (s, frame)
}

#[test]
fn every_corrupted_byte_and_every_truncation_is_refused() {
    let (_, frame) = busy_tias();
    for i in 0..frame.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = frame.clone();
            bad[i] ^= flip;
            let result = Sched::<Tias, BestFit>::restore(topology(), &mut bad);
            assert!(
                matches!(result, Err(SnapshotError::Frame(_))),
                "byte {i} ^ {flip:#x}: {:?}",
                result.err()
            );
        }
    }
    for len in 0..frame.len() - 1 {
        let mut cut = frame[..len].to_vec();
        let result = Sched::<Tias, BestFit>::restore(topology(), &mut cut);
        assert!(
            matches!(result, Err(SnapshotError::Frame(_))),
            "length {len}"
        );
    }
}

#[test]
fn another_build_cluster_or_order_is_refused_by_name() {
    let (_, frame) = busy_tias();
    let other_jobs =
        Scheduler::<Tias, BestFit, G, 64, GANG>::restore(topology(), &mut frame.clone());
    let want = SnapshotCapacities {
        gpus: 32,
        jobs: 48,
        gang: 8,
    };
    assert!(matches!(
        other_jobs.err(),
        Some(SnapshotError::Capacities { found, .. }) if found == want
    ));
    let wider = Topology::uniform(2, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap();
    let other_cluster = Sched::<Tias, BestFit>::restore(wider, &mut frame.clone());
    assert!(matches!(
        other_cluster.err(),
        Some(SnapshotError::Topology { .. })
    ));
    let other_placer = Sched::<Tias, FirstFit>::restore(topology(), &mut frame.clone());
    assert_eq!(
        other_placer.err(),
        Some(SnapshotError::Mismatch(HeaderField::Placer))
    );
    // A LAS order cannot read TIAS's state: it fails to decode or is named wrongly.
    let other_order = Sched::<Las, BestFit>::restore(topology(), &mut frame.clone());
    assert!(matches!(
        other_order.err(),
        Some(SnapshotError::Frame(FrameError::Malformed) | SnapshotError::Mismatch(_))
    ));
    let mut small = [0u8; 64];
    let (s, _) = busy_tias();
    assert_eq!(
        s.snapshot(&mut small).err(),
        Some(SnapshotError::BufferTooSmall)
    );
}

#[test]
fn a_refused_restore_changes_nothing_and_an_accepted_one_replaces_the_state() {
    let (mut s, frame) = busy_tias();
    let mut bad = frame.clone();
    let middle = bad.len() / 2;
    bad[middle] ^= 0x10;
    assert!(s.restore_into(&mut bad).is_err());
    let mut buf = vec![0u8; 64 * 1024];
    assert_eq!(s.snapshot(&mut buf).unwrap(), &frame[..]);
    // Move on, then go back to the snapshot: the same state as before.
    let mut out = Out::new();
    let _ = s.handle(TimeMs(u64::MAX / 2), Event::Tick, &mut out);
    assert_ne!(s.snapshot(&mut buf).unwrap(), &frame[..]);
    s.restore_into(&mut frame.clone()).unwrap();
    assert_eq!(s.snapshot(&mut buf).unwrap(), &frame[..]);
}

/// A copy of `s`, through its snapshot.
fn copy(s: &Sched<Tias, BestFit>) -> Box<Sched<Tias, BestFit>> {
    let mut frame = s.snapshot(&mut vec![0u8; 64 * 1024]).unwrap().to_vec();
    Box::new(Sched::restore(s.topology().clone(), &mut frame).unwrap())
}

/// A scheduler of another life (its own jobs, a failed GPU), the target of refused restores.
fn other_life() -> Box<Sched<Tias, BestFit>> {
    let mut s = Box::new(Sched::new(topology(), Tias::default(), BestFit));
    let mut out = Out::new();
    s.handle(TimeMs(5), Event::GpuDown(GpuId(3)), &mut out)
        .unwrap();
    for id in 1..=3 {
        s.handle(
            TimeMs(10),
            Event::Submit(JobSpec::new(JobId(id), 2)),
            &mut out,
        )
        .unwrap();
    }
    s
}

#[test]
fn in_place_every_refusal_changes_nothing() {
    let (_, frame) = busy_tias();
    let mut s = other_life();
    let mut buf = vec![0u8; 64 * 1024];
    let before = s.snapshot(&mut buf).unwrap().to_vec();
    let mut scratch = Box::new(Sched::new(topology(), Tias::default(), BestFit));
    let mut unchanged = |s: &Sched<Tias, BestFit>, what: &str| {
        assert_eq!(s.snapshot(&mut buf).unwrap(), &before[..], "{what}");
    };
    for i in (0..frame.len()).step_by(7) {
        let mut bad = frame.clone();
        bad[i] ^= 0x5a;
        let result = s.restore_in_place(&mut bad, &mut scratch);
        assert!(matches!(result, Err(SnapshotError::Frame(_))), "byte {i}");
    }
    let mut truncated = frame[..frame.len() / 2].to_vec();
    assert!(s.restore_in_place(&mut truncated, &mut scratch).is_err());
    unchanged(&s, "a corrupt frame");
    let mut other =
        Scheduler::<Tias, BestFit, G, 64, GANG>::new(topology(), Tias::default(), BestFit);
    let mut other_scratch =
        Scheduler::<Tias, BestFit, G, 64, GANG>::new(topology(), Tias::default(), BestFit);
    assert!(matches!(
        other.restore_in_place(&mut frame.clone(), &mut other_scratch),
        Err(SnapshotError::Capacities { .. })
    ));
    // Another placer: refused before anything is decoded.
    let first_fit = Sched::new(topology(), Tias::default(), FirstFit);
    let mut other_build = first_fit
        .snapshot(&mut vec![0u8; 64 * 1024])
        .unwrap()
        .to_vec();
    assert_eq!(
        s.restore_in_place(&mut other_build, &mut scratch),
        Err(SnapshotError::Mismatch(HeaderField::Placer))
    );
    unchanged(&s, "another build");
    // Well-framed states that break an invariant: refused, unchanged, the scratch left empty.
    let (mut forged, _) = busy_tias();
    if forged.table.is_full() {
        // Make room for "a slot no job is in": cancel the newest job.
        let newest = forged.jobs().map(|j| j.id()).max().unwrap();
        let at = forged.last_now;
        answer(&mut forged, at, Event::Cancel(newest));
    }
    let vacant = (0..J as Slot)
        .find(|&v| forged.table.get(v).is_none())
        .unwrap();
    // A free GPU if the state has one, else any: either way owned by no job after.
    let gpu = forged.owner.iter().position(|&o| o == NIL).unwrap_or(0);
    type Forgery<'a> = &'a dyn Fn(&mut Sched<Tias, BestFit>);
    let forgeries: [Forgery; 2] = [
        // A GPU owned by a slot no job is in.
        &|f| f.owner[gpu] = vacant,
        // A pending rejection of a slot no job is in.
        &|f| f.reject_due.push(vacant).unwrap(),
    ];
    for (i, forge) in forgeries.iter().enumerate() {
        let mut f = copy(&forged);
        forge(&mut f);
        let mut bad_state = f.snapshot(&mut vec![0u8; 64 * 1024]).unwrap().to_vec();
        let result = s.restore_in_place(&mut bad_state, &mut scratch);
        assert!(
            matches!(result, Err(SnapshotError::Inconsistent(_))),
            "forgery {i}: {result:?}"
        );
        unchanged(&s, "an inconsistent state");
        assert!(scratch.jobs().is_empty());
        assert_eq!(scratch.check_invariants(), Ok(()));
    }
    // A GPU beyond the topology: on a 16-GPU cluster, GPU 31 is outside it.
    let outside = G - 1;
    let small_topology = Topology::uniform(1, 2, 8, LinkWeights::PROXIMITY_DRL).unwrap();
    let mut small = Box::new(Sched::new(small_topology.clone(), Tias::default(), BestFit));
    let mut small_scratch = Box::new(Sched::new(small_topology, Tias::default(), BestFit));
    small.healthy[outside] = true;
    let mut bad_state = small.snapshot(&mut buf).unwrap().to_vec();
    small.healthy[outside] = false;
    assert_eq!(
        small.restore_in_place(&mut bad_state, &mut small_scratch),
        Err(SnapshotError::Inconsistent(
            InvariantViolation::GpuOutsideTopology(GpuId(outside as u16))
        ))
    );
    // And a good snapshot replaces the state; the scratch keeps the previous one.
    s.restore_in_place(&mut frame.clone(), &mut scratch)
        .unwrap();
    assert_eq!(s.snapshot(&mut buf).unwrap(), &frame[..]);
    assert_eq!(scratch.snapshot(&mut buf).unwrap(), &before[..]);
}

#[test]
fn a_well_framed_but_inconsistent_state_is_refused() {
    let (mut s, _) = busy_tias();
    // A GPU owned by a slot no job is in.
    let free = s.owner.iter().position(|&o| o == crate::avl::NIL).unwrap();
    s.owner[free] = 200;
    let mut buf = vec![0u8; 64 * 1024];
    let mut frame = s.snapshot(&mut buf).unwrap().to_vec();
    assert!(matches!(
        Sched::<Tias, BestFit>::restore(topology(), &mut frame).err(),
        Some(SnapshotError::Inconsistent(_))
    ));
}

/// The widest state a firmware scheduler can hold (every job slot used with the widest
/// field values, every GPU busy or failed), snapshotted after the order has learned from
/// finished deadline jobs.
fn widest_snapshot<O, P>(order: O, placer: P) -> usize
where
    O: JobOrder + Serialize,
    P: Placer<{ wire::FIRMWARE_GPUS }> + Serialize,
{
    let topology = Topology::uniform(2, 4, 8, LinkWeights::PROXIMITY_DRL).unwrap();
    let mut s: Box<wire::FirmwareScheduler<O, P>> =
        Box::new(Scheduler::new(topology, order, placer));
    let mut out = wire::FirmwareDecisions::new();
    let t0 = u64::MAX / 2;
    // Learned state first: deadline jobs that run and finish.
    for i in 0..64u64 {
        let mut spec = JobSpec::new(JobId(1_000_000 + i as u32), 1 + (i % 8) as u16);
        spec.deadline = Some(TimeMs(t0 + 1_000_000_000 + i));
        spec.declared_length = Some(DurationMs(1_000 + i));
        out.clear();
        let now = TimeMs(t0 + i * 10_000);
        s.handle(now, Event::Submit(spec), &mut out).unwrap();
        out.clear();
        let _ = s.handle(now, Event::Finish(spec.id), &mut out);
    }
    let t1 = t0 + (1 << 30);
    for i in 0..wire::FIRMWARE_JOBS as u64 {
        let mut spec = JobSpec::new(JobId(u32::MAX - i as u32), 1 + (i % 8) as u16);
        spec.deadline = Some(TimeMs(u64::MAX - i));
        spec.declared_length = Some(DurationMs(u64::MAX / 3 + i));
        spec.comm.gradient_mb = u32::MAX;
        out.clear();
        let _ = s.handle(TimeMs(t1 + i * (1 << 40)), Event::Submit(spec), &mut out);
    }
    assert_eq!(s.jobs().len(), wire::FIRMWARE_JOBS, "every job slot used");
    out.clear();
    let _ = s.handle(TimeMs(u64::MAX - 1), Event::GpuDown(GpuId(63)), &mut out);
    let mut buf = vec![0u8; 2 * MAX_SNAPSHOT_BYTES];
    s.snapshot(&mut buf).unwrap().len()
}

#[test]
fn the_widest_firmware_state_fits_max_snapshot_bytes() {
    const FG: usize = wire::FIRMWARE_GPUS;
    let sizes = [
        widest_snapshot(Tias::default(), BestFit),
        widest_snapshot(Tias::default(), RandomPlacer::new(u64::MAX)),
        widest_snapshot(Tias::default(), ExactOptimal::<FG>::default()),
        widest_snapshot(Las::new(LasConfig::default()), FirstFit),
        widest_snapshot(Fifo, LoadBalance),
        widest_snapshot(Edf, ProximityGreedy),
    ];
    std::println!("widest firmware snapshots: {sizes:?} of {MAX_SNAPSHOT_BYTES}");
    for n in sizes {
        assert!(n <= MAX_SNAPSHOT_BYTES, "{n} > {MAX_SNAPSHOT_BYTES}");
    }
}

/// A job started at 1 s, snapshotted at 6 s (a FIFO scheduler on the test cluster).
fn running_since_one_second() -> Box<Sched<Fifo, BestFit>> {
    let mut s = Box::new(Sched::new(topology(), Fifo, BestFit));
    answer(
        &mut s,
        TimeMs(1_000),
        Event::Submit(JobSpec::new(JobId(1), 2)),
    );
    answer(&mut s, TimeMs(6_000), Event::Tick);
    s
}

/// A snapshot holds a running job's service up to the time it was taken (the layout of the
/// builds that credited every running job at each event, so their snapshots still read);
/// a restore reads it back as the job's ended runs plus its current one.
#[test]
fn a_snapshot_holds_a_running_jobs_service_up_to_its_time() {
    let s = running_since_one_second();
    let mut buf = vec![0u8; 64 * 1024];
    let frame = s.snapshot(&mut buf).unwrap().to_vec();
    let mut opened = frame.clone();
    let message = Sched::<Fifo, BestFit>::open(&mut opened, &topology()).unwrap();
    let state: State<Fifo, BestFit, G, J> = postcard::from_bytes(message).unwrap();
    let written = state
        .table
        .get(state.table.find(JobId(1)).unwrap())
        .unwrap();
    // The record as written, read at its run's start: the field itself.
    assert_eq!(written.running_since(), TimeMs(1_000));
    assert_eq!(
        written.executed_at(written.running_since()),
        DurationMs(5_000)
    );
    let restored = Sched::<Fifo, BestFit>::restore(topology(), &mut frame.clone()).unwrap();
    let job = restored.job(JobId(1)).unwrap();
    assert_eq!(job.executed_at(TimeMs(6_000)), DurationMs(5_000));
    assert_eq!(job.attained_gpu_ms_at(TimeMs(9_000)), 2 * 8_000);
    let mut again = vec![0u8; 64 * 1024];
    assert_eq!(restored.snapshot(&mut again).unwrap(), &frame[..]);
}

/// A running job whose run has lasted longer by the snapshot's clock than the time it claims
/// to have executed, or starts after that clock, is refused by both restores, which change
/// nothing. (Accepted, the second would gain service only from its start, where a model of
/// the restored state credits it from the snapshot's time.)
#[test]
fn a_run_outside_the_snapshots_clock_is_refused() {
    let s = running_since_one_second();
    // The table as at 6 s (5 s executed, started at 1 s); the clock at 9 s (an 8-s run)
    // and at 0.5 s (a run that has not started).
    for clock_ms in [9_000, 500] {
        let mut state = s.state_ref();
        state.last_now = TimeMs(clock_ms);
        let mut buf = vec![0u8; 64 * 1024];
        let frame = wire::encode(&state, &mut buf).unwrap().to_vec();
        let refused = SnapshotError::Inconsistent(InvariantViolation::RunOutsideTheClock(JobId(1)));
        assert_eq!(
            Sched::<Fifo, BestFit>::restore(topology(), &mut frame.clone()).err(),
            Some(refused),
            "{clock_ms}"
        );
        let mut target = running_since_one_second();
        let before = target.snapshot(&mut vec![0u8; 64 * 1024]).unwrap().to_vec();
        let mut scratch = Box::new(Sched::new(topology(), Fifo, BestFit));
        assert_eq!(
            target.restore_in_place(&mut frame.clone(), &mut scratch),
            Err(refused)
        );
        assert_eq!(target.snapshot(&mut buf).unwrap(), &before[..]);
    }
}
