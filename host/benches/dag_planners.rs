//! Criterion benchmarks of the list schedulers and the search's building blocks on a WORL-like
//! DAG (1,000 tasks, fan-in 3, 50 GPUs of WORL-like speeds, no transfers): one plan each of
//! HEFT, PEFT, CPOP, lookahead HEFT and IPPTS; one local-search run from HEFT's plan; one
//! incremental move (relocate + undo); one WOA-LS run at a fixed work budget.
//! `cargo bench -p gantry --features bench --bench dag_planners`. Instruction counts per planned task:
//! `docs/worl-rtgs.md` (valgrind --tool=callgrind).
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use gantry_core::SeededRng;
use gantry_core::dag::{
    Bandwidth, Cpop, Dag, DagPlanner, Decoding, Evaluator, GpuPool, Heft, HeftLookahead,
    IncrementalSchedule, Ippts, LocalSearch, LocalSearchConfig, LookaheadConfig, NoAdvisor, Peft,
    Plan, TaskId, Woa, WoaConfig,
};
use std::hint::black_box;

const T: usize = 1_024;
const E: usize = 4_096;
const P: usize = 64;

/// `n` tasks with WORL-like works and fan-in 3 (the WORL synthetic rule).
fn dag(n: usize) -> Box<Dag<T, E>> {
    let mut rng = SeededRng::new(7);
    let mut d = Box::new(Dag::new());
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

fn pool() -> GpuPool<P> {
    let mut p = GpuPool::new(Bandwidth::Infinite);
    for g in 0..50 {
        p.add_gpu(0.15 + f64::from(g % 28) * 0.01).unwrap();
    }
    p
}

fn bench_planner<D: DagPlanner<T, E>>(c: &mut Criterion, name: &str, planner: &mut D) {
    let (d, p) = (dag(1_000), pool());
    let mut plan = Box::new(Plan::new());
    c.bench_function(&format!("{name} plan 1000 tasks 50 GPUs"), |b| {
        b.iter(|| {
            planner.plan(&d, &p, &mut plan).unwrap();
            black_box(plan.gpus()[0])
        })
    });
}

fn list_schedulers(c: &mut Criterion) {
    bench_planner(c, "heft", &mut *Box::new(Heft::<T, P>::new()));
    bench_planner(
        c,
        "peft",
        &mut *Box::new(Peft::<T, P, Vec<f64>>::with_table(vec![0.0; 1_000 * 50])),
    );
    bench_planner(c, "cpop", &mut *Box::new(Cpop::<T, P>::new()));
    bench_planner(
        c,
        "heft-lookahead",
        &mut *Box::new(HeftLookahead::<T, P>::new(LookaheadConfig::PAPER)),
    );
    bench_planner(
        c,
        "ippts",
        &mut *Box::new(Ippts::<T, P, Vec<f64>>::with_table(vec![0.0; 1_000 * 50])),
    );
}

fn search_parts(c: &mut Criterion) {
    let (d, p) = (dag(1_000), pool());
    let mut heft_plan = Box::new(Plan::new());
    Heft::<T, P>::new().plan(&d, &p, &mut heft_plan).unwrap();
    let mut ls = Box::new(LocalSearch::<T, P>::new(LocalSearchConfig::default()));
    let mut plan = Box::new(Plan::new());
    c.bench_function("local search from HEFT 1000 tasks 50 GPUs", |b| {
        b.iter(|| {
            plan.copy_from(&heft_plan);
            black_box(ls.improve(&d, &p, &mut plan, u64::MAX).unwrap().final_ms)
        })
    });
    let mut eval = Box::new(Evaluator::<T, P>::new());
    let mut inc = Box::new(IncrementalSchedule::<T, P>::new());
    inc.load(&d, &p, &heft_plan, &mut eval).unwrap();
    let mut rng = SeededRng::new(3);
    c.bench_function("incremental relocate+undo 1000 tasks 50 GPUs", |b| {
        b.iter(|| {
            let t = rng.below(1_000) as usize;
            let (lo, hi) = inc.window(&d, t);
            let to = lo + rng.below((hi - lo + 1) as u32) as usize;
            let mv = inc.relocate(&d, &p, t, rng.below(50) as usize, to).unwrap();
            let ms = inc.makespan_ms();
            inc.undo(mv);
            black_box(ms)
        })
    });
    let config = WoaConfig {
        population: 30,
        iterations: u32::MAX,
        local_search: Some(LocalSearchConfig::default()),
        work_budget: Some(1_000_000),
        ..WoaConfig::new(1)
    }
    .with_decoding(Decoding::EftInsertion);
    let mut woa = Box::new(Woa::<32, T, P, NoAdvisor>::new(config, NoAdvisor));
    c.bench_function("woa-ls 1e6 work units 1000 tasks 50 GPUs", |b| {
        b.iter(|| black_box(woa.run(&d, &p).unwrap()))
    });
}

criterion_group!(benches, list_schedulers, search_parts);
criterion_main!(benches);
