//! Checkpoint and restore on a real stream: for every job order and every non-learned placer,
//! the bundled Philly sample (its first 400 jobs, 30 % with seeded deadlines) is simulated on
//! 2 × 4 × 8 GPUs with the firmware's capacities; its recorded events are replayed through
//! the core, which at several points snapshots and is restored from the snapshot alone
//! (alternately as a new core, `restore`, and in place, `restore_in_place`); every answer
//! after the restore must equal the recorded uninterrupted run's. (Seeded random streams, refused snapshots: `core/src/snapshot_tests.rs`.)

use clap::ValueEnum;
use gantry::record::{self, RecordHeader};
use gantry::registry::{CapacitySet, OrderKind, PlacerKind};
use gantry::sample::philly_sample;
use gantry::sim::{ClusterSpec, LogEntry, SimConfig, host_decision, simulate_with_capacities};
use gantry::trace::deadlines::{DeadlineSpec, attach_synthetic_deadlines};
use gantry_core::order::{CompatPolicy, TiresiasCompat};
use gantry_core::wire::{FIRMWARE_DECISIONS, FIRMWARE_GANG, FIRMWARE_GPUS, FIRMWARE_JOBS};
use gantry_core::{
    BestFit, DeadlineSafety, Decision, Edf, Event, ExactOptimal, Fifo, FirstFit, JobOrder, Las,
    LasConfig, LengthMetric, LoadBalance, Placer, ProximityGreedy, RandomPlacer, Scheduler, Sjf,
    Srtf, Tias, TiasConfig, Topology,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

type Sched<O, P> = Scheduler<O, P, FIRMWARE_GPUS, FIRMWARE_JOBS, FIRMWARE_GANG>;

const CLUSTER: ClusterSpec = ClusterSpec {
    racks: 2,
    machines_per_rack: 4,
    gpus_per_machine: 8,
};

fn topology() -> Topology<FIRMWARE_GPUS> {
    CLUSTER.topology().unwrap()
}

/// The recorded run of `order` × `placer` on the sample slice.
fn recorded(order: OrderKind, placer: PlacerKind) -> Vec<LogEntry> {
    let mut jobs = philly_sample(Some(400)).unwrap();
    let spec = DeadlineSpec {
        fraction: 0.3,
        lo: 1.5,
        hi: 3.0,
    };
    attach_synthetic_deadlines(&mut jobs, spec, 7);
    let config = SimConfig::default();
    let firmware = CapacitySet::Firmware;
    let out = simulate_with_capacities(&jobs, CLUSTER, order, placer, &config, firmware).unwrap();
    let header = RecordHeader::new("philly[..400]", CLUSTER, order, placer, &config)
        .with_capacities(firmware);
    record::decode(&record::encode(&header, &out), "run")
        .unwrap()
        .entries
}

/// One recorded call through `core`, compared with the recording.
fn replay_one<O: JobOrder, P: Placer<FIRMWARE_GPUS>>(
    core: &mut Sched<O, P>,
    entry: &LogEntry,
    batched: bool,
) -> bool {
    let mut out = heapless::Vec::<Decision<FIRMWARE_GANG>, FIRMWARE_DECISIONS>::new();
    let result = if batched && entry.event != Event::Tick {
        core.handle_deferred(entry.now, entry.event, &mut out)
    } else {
        core.handle(entry.now, entry.event, &mut out)
    };
    let decisions: Vec<_> = out.iter().map(host_decision).collect();
    result.err() == entry.error && decisions == entry.decisions
}

/// Replays `entries`, restoring from a snapshot after each cut; panics at the first answer
/// that differs from the recording.
fn replay_with_restores<O, P>(order: O, placer: P, entries: &[LogEntry], batched: bool, what: &str)
where
    O: JobOrder + Serialize + DeserializeOwned + Clone,
    P: Placer<FIRMWARE_GPUS> + Serialize + DeserializeOwned + Clone,
{
    let n = entries.len();
    let cuts = [1, n / 5, n / 2, n - 1];
    let mut scratch = Box::new(Sched::new(topology(), order.clone(), placer.clone()));
    let mut core = Box::new(Sched::new(topology(), order, placer));
    let mut buf = vec![0u8; 64 * 1024];
    let mut restores = 0;
    for (i, entry) in entries.iter().enumerate() {
        if cuts.contains(&i) {
            let mut frame = core.snapshot(&mut buf).unwrap().to_vec();
            if restores % 2 == 0 {
                drop(core);
                core = Box::new(Sched::<O, P>::restore(topology(), &mut frame).unwrap());
            } else {
                core.restore_in_place(&mut frame, &mut scratch).unwrap();
            }
            restores += 1;
        }
        assert!(
            replay_one(&mut core, entry, batched),
            "{what}: entry {i} of {n} differs after {restores} restores"
        );
    }
    assert_eq!(restores, cuts.len(), "{what}");
}

fn name<T: ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

fn with_each_placer<O>(order: O, kind: OrderKind)
where
    O: JobOrder + Serialize + DeserializeOwned + Clone,
{
    let batched = kind.batches_instants();
    let seed = SimConfig::default().seed;
    for placer in [
        PlacerKind::FirstFit,
        PlacerKind::BestFit,
        PlacerKind::Random,
        PlacerKind::LoadBalance,
        PlacerKind::Greedy,
        PlacerKind::Optimal,
    ] {
        let entries = recorded(kind, placer);
        let what = format!("{} + {}", name(&kind), name(&placer));
        assert!(entries.len() > 800, "{what}: {} entries", entries.len());
        let o = order.clone();
        match placer {
            PlacerKind::FirstFit => replay_with_restores(o, FirstFit, &entries, batched, &what),
            PlacerKind::BestFit => replay_with_restores(o, BestFit, &entries, batched, &what),
            PlacerKind::Random => {
                replay_with_restores(o, RandomPlacer::new(seed), &entries, batched, &what)
            }
            PlacerKind::LoadBalance => {
                replay_with_restores(o, LoadBalance, &entries, batched, &what)
            }
            PlacerKind::Greedy => {
                replay_with_restores(o, ProximityGreedy, &entries, batched, &what)
            }
            _ => {
                let exact = ExactOptimal::<FIRMWARE_GPUS>::default();
                replay_with_restores(o, exact, &entries, batched, &what)
            }
        }
    }
}

#[test]
fn restored_cores_answer_a_real_stream_like_the_uninterrupted_run() {
    for &kind in OrderKind::value_variants() {
        let las_time = {
            let mut config = LasConfig::default();
            config.service = LengthMetric::Time;
            config
        };
        match kind {
            OrderKind::Fifo => with_each_placer(Fifo, kind),
            OrderKind::Sjf => with_each_placer(Sjf::default(), kind),
            OrderKind::Srtf => with_each_placer(Srtf::default(), kind),
            OrderKind::SrtfGpu => with_each_placer(
                Srtf {
                    metric: LengthMetric::GpuTime,
                },
                kind,
            ),
            OrderKind::Edf => with_each_placer(Edf, kind),
            OrderKind::Las => with_each_placer(Las::new(LasConfig::default()), kind),
            OrderKind::LasTime => with_each_placer(Las::new(las_time), kind),
            // The host's TIAS (`TiasConfig::host()`), which recorded the stream.
            OrderKind::Tias => with_each_placer(Tias::new(TiasConfig::host()), kind),
            OrderKind::TiasDeadlineSafe => with_each_placer(
                Tias::new(TiasConfig {
                    deadline_safety: DeadlineSafety::LatestStart,
                    ..TiasConfig::host()
                }),
                kind,
            ),
            OrderKind::TiresiasDlas => with_each_placer(
                TiresiasCompat::new(CompatPolicy::Dlas(LengthMetric::Time)),
                kind,
            ),
            OrderKind::TiresiasDlasGpu => with_each_placer(
                TiresiasCompat::new(CompatPolicy::Dlas(LengthMetric::GpuTime)),
                kind,
            ),
            OrderKind::TiresiasShortest => with_each_placer(
                TiresiasCompat::new(CompatPolicy::Shortest(LengthMetric::Time)),
                kind,
            ),
            OrderKind::TiresiasShortestGpu => with_each_placer(
                TiresiasCompat::new(CompatPolicy::Shortest(LengthMetric::GpuTime)),
                kind,
            ),
        }
    }
}
