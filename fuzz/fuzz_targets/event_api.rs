//! Fuzzes the core's event API against the independent model of
//! `core/tests/model/mod.rs` (included by path: the same checks the test
//! `core/tests/model_check.rs` runs on seeded streams).
//!
//! The first `HEADER` bytes choose the order (all of them), the placer, the capacity (16
//! GPUs, or 256, where placements and releases take their skipping paths), the decision buffer
//! (1 to 64 slots), the minimum run quantum (0 to 63 s), the head-of-line rule (the
//! order's own, `Block`, `Skip` or `Reserve`), the tree's shape, heterogeneous GPU speeds
//! and the link weights — at any
//! scale from 2^-60 to 2^60 per level, or raw `f64` bits (NaN, infinities, negatives,
//! subnormals: refused by `LinkWeights::from_bandwidths`, then the raw bits are taken as
//! integer weights, any `u32`); the rest are operations of `model::OP_BYTES` bytes each: garbage events
//! included (unknown ids, zero-GPU and oversized jobs, GPU ids out of range, time going
//! backwards), times up to `u64::MAX`, deferred calls. After every call the model's checks
//! must hold; any panic is a finding.
#![no_main]

#[path = "../../core/tests/model/mod.rs"]
#[allow(dead_code)] // `check_stream_from` is the snapshot_mutation target's
mod model;

use gantry_core::order::{CompatPolicy, TiresiasCompat};
use gantry_core::placement::{ExactOptimal, LoadBalance, OptimalConfig, ProximityGreedy};
use gantry_core::{
    BestFit, DeadlineSafety, DurationMs, Edf, Fifo, FirstFit, HeadOfLine, HopelessPolicy, JobOrder,
    Las, LasConfig, LengthMetric, Levels, LinkWeights, Placer, RandomPlacer, Sjf, Srtf, Tias,
    TiasConfig, Topology,
};
use libfuzzer_sys::fuzz_target;
use gantry_core::placement::SKIP_ABOVE_GPUS;
use model::{G, check_stream_with};

/// Bytes that configure the run before the operations start.
const HEADER: usize = 16;
/// The large capacity a header may choose instead of the model's `G`.
const LARGE: usize = 256;

/// A link weight from one byte of exponent and a flag: the Proximity-DRL weight scaled by
/// 2^(e − 128) / 2 (2^-64 … 2^63), or (flag) the raw bits of `raw`.
fn weight(base: f64, exponent: u8, raw_bits: bool, raw: u64) -> f64 {
    if raw_bits {
        f64::from_bits(raw)
    } else {
        base * libm::exp2((f64::from(exponent) - 128.0) / 2.0)
    }
}

fn topology<const G: usize>(h: &[u8]) -> Topology<G> {
    let w = LinkWeights::PROXIMITY_DRL.reciprocal();
    let raw = u64::from_le_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    let flags = h[3];
    // Bandwidths are the weights' reciprocals; weights that are not positive and finite are
    // refused by `from_bandwidths`, and the raw bits then give integer weights directly
    // (any u32, zero included).
    let weights = LinkWeights::from_bandwidths(
        1.0 / weight(w.gpu_peer, h[4], flags & 0x10 != 0, raw),
        1.0 / weight(w.gpu_machine, h[5], flags & 0x20 != 0, raw.rotate_left(16)),
        1.0 / weight(w.machine_rack, h[6], flags & 0x40 != 0, raw.rotate_left(32)),
        1.0 / weight(w.rack_root, h[7], flags & 0x80 != 0, raw.rotate_left(48)),
    )
    .unwrap_or(LinkWeights::from_integer_weights(Levels {
        gpu_peer: raw as u32,
        gpu_machine: (raw >> 16) as u32,
        machine_rack: (raw >> 32) as u32,
        rack_root: (raw >> 48) as u32,
    }));
    // 1–2 racks × 1–3 machines × 1–4 GPUs (× 1 to 8 on the large capacity, from the placer
    // byte: trees of 1 to 192 GPUs, small ones filled by the jobs and failures, so a GPU a
    // skip passes over is missed), speeds 1..=4000 per mille from the header.
    let scale = if G > SKIP_ABOVE_GPUS {
        1 + u16::from((h[1] >> 3) & 0x07)
    } else {
        1
    };
    let mut topo = Topology::new(weights);
    let racks = 1 + (flags & 1);
    let machines = 1 + (flags >> 1) % 3;
    for r in 0..racks {
        if topo.add_rack().is_err() {
            break;
        }
        for m in 0..machines {
            let i = usize::from(r * 3 + m);
            let gpus = (1 + u16::from(h[8 + i % 8] % 4)) * scale;
            let speed = 1 + u16::from(h[(4 + i) % HEADER]) * 15;
            if topo.add_machine(gpus, speed).is_err() {
                break;
            }
        }
    }
    topo
}

fn with_buffer<O: JobOrder, P: Placer<G>, const G: usize>(
    order: O,
    placer: P,
    h: &[u8],
    ops: &[u8],
) {
    let topo = topology::<G>(h);
    // The minimum run quantum: 0 to 63 s from the buffer byte's upper bits.
    let q = DurationMs(u64::from(h[2] >> 2) * 1_000);
    // The head-of-line rule from the order byte's upper part (the lower part is the order).
    let rule = match (h[0] / 14) % 4 {
        0 => order.head_of_line(),
        1 => HeadOfLine::Block,
        2 => HeadOfLine::Skip,
        _ => HeadOfLine::Reserve,
    };
    let result = match h[2] % 4 {
        0 => check_stream_with::<_, _, _, 1>(order, placer, topo, q, rule, ops),
        1 => check_stream_with::<_, _, _, 2>(order, placer, topo, q, rule, ops),
        2 => check_stream_with::<_, _, _, 4>(order, placer, topo, q, rule, ops),
        _ => check_stream_with::<_, _, _, 64>(order, placer, topo, q, rule, ops),
    };
    if let Err(e) = result {
        panic!("model check: {e}");
    }
}

/// The capacity from the placer byte's top bit: the model's 16 GPUs, or 256, above
/// [`SKIP_ABOVE_GPUS`], where placements and releases skip runs of unusable GPUs.
fn with_placer<O: JobOrder>(order: O, h: &[u8], ops: &[u8]) {
    if h[1] & 0x80 == 0 {
        with_placer_on::<O, G>(order, h, ops);
    } else {
        with_placer_on::<O, LARGE>(order, h, ops);
    }
}

fn with_placer_on<O: JobOrder, const G: usize>(order: O, h: &[u8], ops: &[u8]) {
    match h[1] % 6 {
        0 => with_buffer::<_, _, G>(order, FirstFit, h, ops),
        1 => with_buffer::<_, _, G>(order, BestFit, h, ops),
        2 => with_buffer::<_, _, G>(order, RandomPlacer::new(u64::from(h[8])), h, ops),
        3 => with_buffer::<_, _, G>(order, LoadBalance, h, ops),
        4 => with_buffer::<_, _, G>(order, ProximityGreedy, h, ops),
        _ => with_buffer::<_, _, G>(
            order,
            ExactOptimal::<G>::new(OptimalConfig::default()),
            h,
            ops,
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < HEADER {
        return;
    }
    let (h, ops) = data.split_at(HEADER);
    let mut guarded = LasConfig::default();
    guarded.promote_knob_permille = 1_000;
    let mut las_time = LasConfig::default();
    las_time.service = LengthMetric::Time;
    let compat = |p| TiresiasCompat::new(p);
    match h[0] % 16 {
        0 => with_placer(Fifo, h, ops),
        1 => with_placer(Sjf::default(), h, ops),
        2 => with_placer(Srtf::default(), h, ops),
        3 => with_placer(
            Srtf {
                metric: LengthMetric::GpuTime,
            },
            h,
            ops,
        ),
        4 => with_placer(Edf, h, ops),
        5 => with_placer(Las::new(LasConfig::default()), h, ops),
        6 => with_placer(Las::new(guarded), h, ops),
        7 => with_placer(Las::new(las_time), h, ops),
        8 => with_placer(Tias::default(), h, ops),
        9 => with_placer(
            Tias::new(TiasConfig {
                hopeless: HopelessPolicy::Reject,
                ..TiasConfig::default()
            }),
            h,
            ops,
        ),
        10 => with_placer(compat(CompatPolicy::Dlas(LengthMetric::Time)), h, ops),
        11 => with_placer(compat(CompatPolicy::Dlas(LengthMetric::GpuTime)), h, ops),
        12 => with_placer(compat(CompatPolicy::Shortest(LengthMetric::Time)), h, ops),
        13 => with_placer(
            Tias::new(TiasConfig {
                deadline_safety: DeadlineSafety::LatestStart,
                ..TiasConfig::default()
            }),
            h,
            ops,
        ),
        14 => with_placer(Tias::new(TiasConfig::host()), h, ops),
        _ => with_placer(
            compat(CompatPolicy::Shortest(LengthMetric::GpuTime)),
            h,
            ops,
        ),
    }
});
