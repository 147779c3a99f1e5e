//! Placement benchmarks: one learned pick at 32 and 256 GPUs — the default scorer (the MLP
//! evaluated directly from the ONNX weights, `learned_pick_*`) and tract, its reference
//! (`tract_pick_*`) — and the exact-optimal search at k = 8.
//! Run: `cargo bench -p gantry --features bench --bench placement`.

use criterion::{Criterion, criterion_main};
use gantry::learn::scorer::{PolicyScorer, TractScorer};
use gantry::train::ppo::PpoPolicy;
use gantry_core::placement::{
    GpuMask, GpuScorer, OptimalConfig, PlacementView, Placer, ScoredPlacer, optimal_placement,
};
use gantry_core::topology::LinkWeights;
use gantry_core::{GpuId, Job, JobId, JobSpec, TimeMs, Topology};
use std::hint::black_box;
use std::path::Path;

/// The shipped model's bytes, or a fresh 20 → 64 → 64 → 1 policy of the same shape.
fn model_bytes() -> Vec<u8> {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/proximity_ppo.onnx");
    std::fs::read(shipped)
        .unwrap_or_else(|_| PpoPolicy::new(64, 0).to_onnx(vec![]).expect("export"))
}

/// A half-busy mask: every third GPU taken.
fn mask<const G: usize>(topo: &Topology<G>) -> GpuMask<G> {
    let mut m = GpuMask::none();
    for g in 0..topo.gpu_count() as u16 {
        m.set(GpuId(g), g % 3 != 0);
    }
    m
}

fn bench_pick<const G: usize, S: GpuScorer>(
    c: &mut Criterion,
    name: &str,
    topo: &Topology<G>,
    scorer: S,
) {
    let usable = mask(topo);
    let job = Job::submitted(JobSpec::new(JobId(1), 8), TimeMs(0));
    let picked = [GpuId(1), GpuId(2)];
    let mut placer = ScoredPlacer::<_, G>::named(scorer, "ppo");
    c.bench_function(name, |b| {
        b.iter(|| {
            let view = PlacementView {
                topology: topo,
                usable: &usable,
                picked: &picked,
                job: &job,
            };
            black_box(placer.pick(black_box(&view)))
        })
    });
    assert_eq!(placer.fallbacks(), 0, "the bench model must not fall back");
}

fn picks(c: &mut Criterion) {
    let small = Topology::<32>::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).expect("tree");
    let big = Topology::<256>::uniform(4, 8, 8, LinkWeights::PROXIMITY_DRL).expect("tree");
    let bytes = model_bytes();
    let label = Path::new("bench");
    let direct = PolicyScorer::from_bytes(label, &bytes).expect("load");
    assert_eq!(
        direct.backend(),
        "direct",
        "the bench model must take the direct path"
    );
    let tract = TractScorer::from_bytes(label, &bytes).expect("load");
    bench_pick(c, "learned_pick_32_gpus", &small, direct.clone());
    bench_pick(c, "learned_pick_256_gpus", &big, direct);
    bench_pick(c, "tract_pick_32_gpus", &small, tract.clone());
    bench_pick(c, "tract_pick_256_gpus", &big, tract);
}

fn exact(c: &mut Criterion) {
    let small = Topology::<32>::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).expect("tree");
    let big = Topology::<256>::uniform(4, 8, 8, LinkWeights::PROXIMITY_DRL).expect("tree");
    let (ms, mb) = (mask(&small), mask(&big));
    let cfg = OptimalConfig::default();
    c.bench_function("exact_optimal_k8_32_gpus", |b| {
        b.iter(|| black_box(optimal_placement(&small, black_box(&ms), 8, &cfg)))
    });
    c.bench_function("exact_optimal_k8_256_gpus", |b| {
        b.iter(|| black_box(optimal_placement(&big, black_box(&mb), 8, &cfg)))
    });
}

mod group {
    //! criterion's generated entry point (undocumented by its macro).
    #![allow(missing_docs)]
    use super::{exact, picks};
    criterion::criterion_group!(benches, picks, exact);
}
use group::benches;
criterion_main!(benches);
