//! Criterion benchmarks of the DAG planning core: the list-scheduling evaluator per plan at
//! 1,000 and 10,000 tasks, and one WOA iteration (population 64) on 1,000 tasks.
//! `cargo bench -p gantry --features bench --bench dag_eval`.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use gantry_core::SeededRng;
use gantry_core::dag::{
    Bandwidth, Dag, DagPlanner, Evaluator, GpuPool, NoAdvisor, Plan, RandomPlanner, TaskId, Woa,
    WoaConfig,
};
use std::hint::black_box;

type BigDag = Dag<10_240, 40_960>;

/// `n` tasks with WORL-like works and fan-in 3 (the WORL synthetic rule).
fn dag(n: usize) -> Box<BigDag> {
    let mut rng = SeededRng::new(7);
    let mut d = Box::new(BigDag::new());
    for _ in 0..n {
        d.add_task(1_000.0 + f64::from(rng.below(100_000))).unwrap();
    }
    for j in 1..n as u32 {
        for _ in 0..3.min(j) {
            d.add_edge(TaskId(rng.below(j)), TaskId(j), 0.0).unwrap();
        }
    }
    d.seal().unwrap();
    d
}

fn pool() -> GpuPool<64> {
    let mut p = GpuPool::new(Bandwidth::Infinite);
    for g in 0..50 {
        p.add_gpu(0.54 + f64::from(g) * 0.02).unwrap();
    }
    p
}

fn evaluator(c: &mut Criterion) {
    let p = pool();
    for n in [1_000usize, 10_000] {
        let d = dag(n);
        let mut plan = Box::new(Plan::new());
        RandomPlanner::new(1).plan(&d, &p, &mut plan).unwrap();
        let mut ev = Box::new(Evaluator::<10_240, 64>::new());
        c.bench_function(&format!("evaluate plan {n} tasks 50 GPUs"), |b| {
            b.iter(|| black_box(ev.evaluate(&d, &p, &plan).unwrap()))
        });
    }
}

fn woa_iteration(c: &mut Criterion) {
    let p = pool();
    let d = dag(1_000);
    let small: Box<Dag<1_024, 4_096>> = {
        let mut s = Box::new(Dag::new());
        for &w in d.works_ms() {
            s.add_task(w).unwrap();
        }
        for i in 0..d.edge_count() {
            let e = d.edge(i).unwrap();
            s.add_edge(e.from, e.to, e.data).unwrap();
        }
        s.seal().unwrap();
        s
    };
    let cfg = WoaConfig {
        population: 64,
        iterations: 1_000_000,
        ..WoaConfig::new(1)
    };
    let mut woa = Box::new(Woa::<64, 1_024, 64, NoAdvisor>::new(cfg, NoAdvisor));
    woa.initialize(&small, &p).unwrap();
    let mut t = 0u32;
    c.bench_function("woa iteration pop 64, 1000 tasks, 50 GPUs", |b| {
        b.iter(|| {
            t += 1;
            woa.step(&small, &p, t).unwrap();
            black_box(woa.best_ms())
        })
    });
}

criterion_group!(benches, evaluator, woa_iteration);
criterion_main!(benches);
