//! The independent-model check (issue 16): seeded random event streams — every order,
//! GPU failures and repairs, cancels, time jumps up to `u64::MAX`, deferred calls, decision
//! buffers of 1 to 64 slots, topologies smaller than the capacity — replayed into the core
//! and into the model of `model/mod.rs`, which checks after every call that no GPU is given
//! twice or while failed, no job changes state in a way the docs forbid, attained service is
//! exact, no job is lost or duplicated, no job of class `Never` or inside the minimum run
//! quantum is preempted for priority, and (for orders that skip a blocked head) no GPU
//! idles while a job that fits waits. One job in four is of class `Never`; the quantum is
//! 0, 0.5 s or 20 s by stream. The orders run on a 16-GPU capacity; FIFO, LAS and TIAS
//! also on 256 GPUs ([`large_clusters_agree_with_the_model`]), where placements and
//! releases skip runs of GPUs they cannot use.
//!
//! Sized for CI: `STREAMS` streams of `OPS` operations per order (about 2 s in release on
//! the 2-core machine); CI also runs it in a debug build (`.ci/run`), where overflow checks
//! are on. `GANTRY_MODEL_STREAMS=N` runs N streams per order instead (a longer soak).

mod model;

use gantry_core::HeadOfLine;
use gantry_core::order::{CompatPolicy, TiresiasCompat};
use gantry_core::placement::{ExactOptimal, LoadBalance, OptimalConfig, ProximityGreedy};
use gantry_core::{
    BestFit, DeadlineSafety, DurationMs, Edf, Fifo, FirstFit, HopelessPolicy, JobOrder, Las,
    LasConfig, LengthMetric, LinkWeights, RandomPlacer, Sjf, Srtf, Tias, TiasConfig, Topology,
};
use model::{G, OP_BYTES, Tally, check_stream_with};

/// Streams per order in the default run.
const STREAMS: u64 = 40;
/// Operations per stream.
const OPS: usize = 2_000;

/// splitmix64: the stream bytes come from here, not from the core's own generator.
fn stream_bytes(seed: u64, ops: usize) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(ops * OP_BYTES + 8);
    while out.len() < ops * OP_BYTES {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(ops * OP_BYTES);
    out
}

/// The tree for stream `seed`: full capacity, or fewer GPUs than `G` (ids past the end
/// must be refused), with link weights at very different scales.
fn topology(seed: u64) -> Topology<G> {
    let shapes: [(u16, u16, u16); 4] = [(2, 2, 4), (1, 3, 4), (2, 2, 2), (1, 1, 5)];
    let (r, m, g) = shapes[(seed % 4) as usize];
    let scale = [1.0, 1e-9, 1e9, 3.7][((seed / 4) % 4) as usize];
    // Proximity-DRL's bandwidths (weights 0.025, 0.025, 0.25, 0.5) with weights × scale.
    let weights =
        LinkWeights::from_bandwidths(40.0 / scale, 40.0 / scale, 4.0 / scale, 2.0 / scale)
            .expect("positive bandwidths");
    Topology::uniform(r, m, g, weights).expect("shapes fit G")
}

/// The minimum run quantum of stream `seed`: none, shorter than most time steps, or
/// longer than many.
fn min_run(seed: u64) -> DurationMs {
    DurationMs([0, 500, 20_000][(seed % 3) as usize])
}

/// One stream on `tree` with the placer, buffer size and quantum chosen by `seed`, under
/// the head-of-line rule `rule`.
fn check_one<O: JobOrder + Clone, const G: usize>(
    order: &O,
    rule: HeadOfLine,
    tree: Topology<G>,
    seed: u64,
    bytes: &[u8],
) -> Result<Tally, String> {
    let q = min_run(seed);
    macro_rules! with_buffer {
        ($placer:expr) => {
            match seed % 4 {
                0 => check_stream_with::<_, _, _, 1>(order.clone(), $placer, tree, q, rule, bytes),
                1 => check_stream_with::<_, _, _, 2>(order.clone(), $placer, tree, q, rule, bytes),
                2 => check_stream_with::<_, _, _, 3>(order.clone(), $placer, tree, q, rule, bytes),
                _ => check_stream_with::<_, _, _, 64>(order.clone(), $placer, tree, q, rule, bytes),
            }
        };
    }
    match (seed / 4) % 6 {
        0 => with_buffer!(FirstFit),
        1 => with_buffer!(BestFit),
        2 => with_buffer!(RandomPlacer::new(seed)),
        3 => with_buffer!(LoadBalance),
        4 => with_buffer!(ProximityGreedy),
        _ => with_buffer!(ExactOptimal::<G>::new(OptimalConfig::default())),
    }
}

/// Runs `streams` streams through `order`; panics with the seed and the first disagreement.
fn check_order<O: JobOrder + Clone>(name: &str, order: O, streams: u64) -> Tally {
    let rule = order.head_of_line();
    check_order_with(name, order, rule, streams)
}

/// As [`check_order`], under the head-of-line rule `rule`.
fn check_order_with<O: JobOrder + Clone>(
    name: &str,
    order: O,
    rule: HeadOfLine,
    streams: u64,
) -> Tally {
    check_order_on(name, &order, rule, streams, topology, 0x6A09_E667_F3BC_C908)
}

/// Runs `streams` streams through `order` on the trees `tree(seed)`, the bytes of stream
/// `seed` from `seed ^ salt`; panics with the seed and the first disagreement.
fn check_order_on<O: JobOrder + Clone, const G: usize>(
    name: &str,
    order: &O,
    rule: HeadOfLine,
    streams: u64,
    tree: fn(u64) -> Topology<G>,
    salt: u64,
) -> Tally {
    let mut total = Tally::default();
    for seed in 0..streams {
        let bytes = stream_bytes(seed ^ salt, OPS);
        match check_one(order, rule, tree(seed), seed, &bytes) {
            Ok(t) => total += t,
            Err(e) => panic!("{name} on {G} GPUs, stream seed {seed}: {e}"),
        }
    }
    total
}

fn streams() -> u64 {
    std::env::var("GANTRY_MODEL_STREAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(STREAMS)
}

/// Each order, and whether it must show preemptions and follow-up calls.
fn orders_agree_with_the_model(name: &str, order: impl JobOrder + Clone, preemptive: bool) {
    let t = check_order(name, order, streams());
    println!("{name}: {t:?}");
    assert!(t.accepted_calls > 0 && t.refused_calls > 0, "{name}: {t:?}");
    assert!(t.starts > 0 && t.follow_ups > 0, "{name}: {t:?}");
    // Failures preempt under every order; priority preemptions need a preemptive one.
    assert!(t.preemptions > 0, "{name}: {t:?}");
    if preemptive {
        assert!(t.idle_checks > 0, "{name}: {t:?}");
    }
    assert!(t.pinned_checks > 0, "{name}: {t:?}");
}

#[test]
fn fifo_agrees_with_the_model() {
    orders_agree_with_the_model("fifo", Fifo, false);
}

#[test]
fn sjf_and_srtf_agree_with_the_model() {
    orders_agree_with_the_model("sjf", Sjf::default(), false);
    orders_agree_with_the_model("srtf", Srtf::default(), true);
    let gpu_time = Srtf {
        metric: LengthMetric::GpuTime,
    };
    orders_agree_with_the_model("srtf-gpu", gpu_time, true);
}

#[test]
fn edf_agrees_with_the_model() {
    orders_agree_with_the_model("edf", Edf, true);
}

#[test]
fn las_agrees_with_the_model() {
    orders_agree_with_the_model("las", Las::new(LasConfig::default()), true);
    let mut guarded = LasConfig::default();
    guarded.promote_knob_permille = 1_000;
    orders_agree_with_the_model("las+promote", Las::new(guarded), true);
    let mut time = LasConfig::default();
    time.service = LengthMetric::Time;
    orders_agree_with_the_model("las-time", Las::new(time), true);
}

#[test]
fn tias_agrees_with_the_model() {
    orders_agree_with_the_model("tias", Tias::default(), true);
    let rejecting = TiasConfig {
        hopeless: HopelessPolicy::Reject,
        ..TiasConfig::default()
    };
    orders_agree_with_the_model("tias-reject", Tias::new(rejecting), true);
    let deadline_safe = TiasConfig {
        deadline_safety: DeadlineSafety::LatestStart,
        ..TiasConfig::default()
    };
    orders_agree_with_the_model("tias-deadline-safe", Tias::new(deadline_safe), true);
    orders_agree_with_the_model("tias-host", Tias::new(TiasConfig::host()), true);
}

#[test]
fn tiresias_compat_agrees_with_the_model() {
    for (name, policy) in [
        ("dlas", CompatPolicy::Dlas(LengthMetric::Time)),
        ("dlas-gpu", CompatPolicy::Dlas(LengthMetric::GpuTime)),
        ("shortest", CompatPolicy::Shortest(LengthMetric::Time)),
        (
            "shortest-gpu",
            CompatPolicy::Shortest(LengthMetric::GpuTime),
        ),
    ] {
        orders_agree_with_the_model(name, TiresiasCompat::new(policy), true);
    }
}

/// A reservation for the queue head (`HeadOfLine::Reserve`) under non-preemptive orders
/// (FIFO, EDF, SJF), a preemptive one (LAS) and one with rejections (TIAS): every stream is
/// checked against the model's rules for it, and reservations are seen.
#[test]
fn reservations_agree_with_the_model() {
    for (name, t) in [
        (
            "fifo+reserve",
            check_order_with("fifo+reserve", Fifo, HeadOfLine::Reserve, streams()),
        ),
        (
            "las+reserve",
            check_order_with(
                "las+reserve",
                Las::new(LasConfig::default()),
                HeadOfLine::Reserve,
                streams(),
            ),
        ),
        (
            "tias+reserve",
            check_order_with(
                "tias+reserve",
                Tias::default(),
                HeadOfLine::Reserve,
                streams(),
            ),
        ),
        (
            "tias-host+reserve",
            check_order_with(
                "tias-host+reserve",
                Tias::new(TiasConfig::host()),
                HeadOfLine::Reserve,
                streams(),
            ),
        ),
        (
            "edf+reserve",
            check_order_with("edf+reserve", Edf, HeadOfLine::Reserve, streams()),
        ),
        (
            "sjf+reserve",
            check_order_with(
                "sjf+reserve",
                Sjf::default(),
                HeadOfLine::Reserve,
                streams(),
            ),
        ),
    ] {
        println!("{name}: {t:?}");
        assert!(t.starts > 0 && t.reservations > 0, "{name}: {t:?}");
        assert!(t.preemptions > 0 && t.follow_ups > 0, "{name}: {t:?}");
    }
}

/// GPU capacity of the large-cluster check: above `placement::SKIP_ABOVE_GPUS` (64), where a
/// mask skips sixteen forbidden GPUs at a time and a release skips runs of sixteen GPUs the
/// job does not hold.
const LARGE: usize = 256;

/// A tree inside the large capacity (the skipping paths are the capacity's, whatever the
/// tree): small enough that the jobs and failures fill it, so a GPU a skip passes over is
/// missed (32 and 48 GPUs; machines of 12, so skipped runs cross machine edges), above 64
/// GPUs, and full.
fn large_topology(seed: u64) -> Topology<LARGE> {
    let shapes: [(u16, u16, u16); 4] = [(1, 2, 16), (2, 2, 12), (1, 3, 24), (2, 4, 32)];
    let (r, m, g) = shapes[(seed % 4) as usize];
    Topology::uniform(r, m, g, LinkWeights::PROXIMITY_DRL).expect("shapes fit LARGE")
}

/// Runs the large-cluster streams through `order` under `rule` (`None`: the order's own),
/// and checks that they started, preempted, refused and (skipping a blocked head) checked
/// for idle GPUs.
fn check_large_order<O: JobOrder + Clone>(name: &str, order: O, rule: Option<HeadOfLine>) -> Tally {
    let rule = rule.unwrap_or(order.head_of_line());
    let salt = 0xBB67_AE85_84CA_A73B;
    let total = check_order_on(name, &order, rule, streams(), large_topology, salt);
    println!("{name} on {LARGE} GPUs: {total:?}");
    assert!(
        total.starts > 0 && total.preemptions > 0,
        "{name}: {total:?}"
    );
    assert!(total.refused_calls > 0, "{name}: {total:?}");
    if rule == HeadOfLine::Skip {
        assert!(total.idle_checks > 0, "{name}: {total:?}");
    }
    total
}

/// Clusters above 64 GPUs take the skipping paths of placement and release (and TIAS's
/// consolidation over more machines), which the fuzz targets' 16-GPU trees never do: FIFO,
/// LAS and TIAS under their own head-of-line rule and with the head's reservation, each
/// over every placer. Dropping the GPU after a skipped run, or skipping
/// a run of owners that holds the job, fails it.
#[test]
fn large_clusters_agree_with_the_model() {
    check_large_order("fifo", Fifo, None);
    check_large_order("las", Las::new(LasConfig::default()), None);
    check_large_order("tias", Tias::default(), None);
    for t in [
        check_large_order("fifo+reserve", Fifo, Some(HeadOfLine::Reserve)),
        check_large_order(
            "las+reserve",
            Las::new(LasConfig::default()),
            Some(HeadOfLine::Reserve),
        ),
        check_large_order("tias+reserve", Tias::default(), Some(HeadOfLine::Reserve)),
    ] {
        assert!(t.reservations > 0, "{t:?}");
    }
}

#[test]
fn stream_bytes_are_seeded() {
    assert_eq!(stream_bytes(7, 10), stream_bytes(7, 10));
    assert_ne!(stream_bytes(7, 10), stream_bytes(8, 10));
    assert_eq!(stream_bytes(7, 10).len(), 10 * OP_BYTES);
}

/// Streams cut by a checkpoint: the first half into a core, a snapshot restored in place
/// (into a second scheduler, swapped in) onto a core that has lived other events, then the
/// second half checked against a model built from the restored state (`check_stream_from`,
/// which the snapshot-mutation fuzz target uses too).
#[test]
fn restored_cores_agree_with_the_model() {
    type S = gantry_core::Scheduler<Tias, BestFit, G, { model::J }, { model::GANG }>;
    for seed in 0..8u64 {
        let bytes = stream_bytes(seed ^ 0x5eed, 600);
        let (first, second) = bytes.split_at(300 * OP_BYTES);
        let fresh = || Box::new(S::new(topology(seed), Tias::default(), BestFit));
        let mut core = fresh();
        model::check_stream_from::<_, _, _, 4>(&mut core, first)
            .unwrap_or_else(|e| panic!("seed {seed}, first half: {e}"));
        let mut buf = vec![0u8; 1 << 16];
        let mut frame = core.snapshot(&mut buf).unwrap().to_vec();
        let mut other = fresh();
        model::check_stream_from::<_, _, _, 4>(&mut other, &second[..60 * OP_BYTES])
            .unwrap_or_else(|e| panic!("seed {seed}, other life: {e}"));
        let mut scratch = fresh();
        other.restore_in_place(&mut frame, &mut scratch).unwrap();
        let tally = model::check_stream_from::<_, _, _, 4>(&mut other, second)
            .unwrap_or_else(|e| panic!("seed {seed}, after the restore: {e}"));
        assert!(tally.accepted_calls > 0, "seed {seed}");
    }
}
