//! The GPU check (`scripts/gpu-check.sh` → the `gantry-gpu-check` binary): CPU-vs-GPU
//! equality on random DAGs and populations, and evaluation throughput of both paths.

use super::{HostDag, HostPool, MAX_GPUS, MAX_TASKS};
use crate::gpu::flat::{CpuBatch, FlatDag, Orders, PlanOutcome, Population, PopulationEvaluator};
use crate::gpu::{CudaBatch, CudaConfig, GpuError, KernelVariant};
use gantry_core::SeededRng;
use gantry_core::dag::{Bandwidth, Platform, TaskId};
use std::collections::BinaryHeap;
use std::time::Instant;

/// A random sealed DAG: `tasks` tasks with fractional work in [1, 101) ms, task j with
/// `min(degree, j)` predecessors drawn uniformly from `0..j`, fractional edge data in
/// [0, 50); and a pool of `gpus` GPUs with speeds in [0.5, 2) and bandwidth 7.3 per ms
/// (so transfers are inexact fractions too). Deterministic for `seed`. O(T·degree).
pub fn random_problem(
    seed: u64,
    tasks: usize,
    degree: u32,
    gpus: usize,
) -> Result<(Box<HostDag>, Box<HostPool>), GpuError> {
    let mut rng = SeededRng::new(seed);
    let mut dag = Box::new(HostDag::new());
    let bad = |e: &dyn std::fmt::Display| GpuError::Input(e.to_string());
    for _ in 0..tasks {
        dag.add_task(1.0 + 100.0 * rng.unit_f64())
            .map_err(|e| bad(&e))?;
    }
    for j in 1..tasks as u32 {
        for _ in 0..degree.min(j) {
            let i = rng.below(j);
            dag.add_edge(TaskId(i), TaskId(j), 50.0 * rng.unit_f64())
                .map_err(|e| bad(&e))?;
        }
    }
    dag.seal().map_err(|e| bad(&e))?;
    let mut pool = Box::new(HostPool::new(Bandwidth::Infinite));
    pool.set_bandwidth(Bandwidth::PerMs(7.3))
        .map_err(|e| bad(&e))?;
    for _ in 0..gpus {
        pool.add_gpu(0.5 + 1.5 * rng.unit_f64())
            .map_err(|e| bad(&e))?;
    }
    Ok((dag, pool))
}

/// `plans` random assignments, plan-major. O(P·T).
pub fn random_gpus(rng: &mut SeededRng, plans: usize, tasks: usize, gpus: usize) -> Vec<u16> {
    (0..plans * tasks)
        .map(|_| rng.below(gpus as u32) as u16)
        .collect()
}

/// A random topological order (Kahn's algorithm, random priorities). O(T log T + E).
pub fn random_order(rng: &mut SeededRng, dag: &HostDag) -> Vec<u32> {
    let n = dag.task_count();
    let mut missing: Vec<u32> = (0..n).map(|t| dag.fan_in(t)).collect();
    let mut heap: BinaryHeap<(u32, u32)> = (0..n as u32)
        .filter(|&t| missing[t as usize] == 0)
        .map(|t| (rng.next_u32(), t))
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some((_, t)) = heap.pop() {
        order.push(t);
        for &s in dag.succs(t as usize).0 {
            missing[s as usize] -= 1;
            if missing[s as usize] == 0 {
                heap.push((rng.next_u32(), s));
            }
        }
    }
    order
}

/// One equality case's result.
#[derive(Clone, Debug)]
pub struct EqualityCase {
    /// What was compared.
    pub name: String,
    /// Plans compared.
    pub plans: usize,
    /// Plans whose outcomes differ (makespan bits or error).
    pub mismatches: usize,
}

fn compare(a: &[PlanOutcome], b: &[PlanOutcome]) -> usize {
    let same = |x: &PlanOutcome, y: &PlanOutcome| match (x, y) {
        (Ok(p), Ok(q)) => p.to_bits() == q.to_bits(),
        _ => x == y,
    };
    a.len().abs_diff(b.len()) + a.iter().zip(b).filter(|(x, y)| !same(x, y)).count()
}

/// One equality size: a random DAG of `tasks` tasks with fan-in up to `degree` on `gpus`
/// GPUs, and a population of `plans` plans.
#[derive(Clone, Copy, Debug)]
pub struct EqualitySize {
    /// Tasks T.
    pub tasks: usize,
    /// Predecessors per task (at most).
    pub degree: u32,
    /// GPUs G.
    pub gpus: usize,
    /// Plans P.
    pub plans: usize,
}

const fn size(tasks: usize, degree: u32, gpus: usize, plans: usize) -> EqualitySize {
    EqualitySize {
        tasks,
        degree,
        gpus,
        plans,
    }
}

/// The GPU check's sizes: up to 10,000 tasks and fan-in 100, populations that fill several
/// launches (the check shrinks the scratch limit to 64 plans).
pub const GPU_EQUALITY_SIZES: [EqualitySize; 6] = [
    size(1, 0, 1, 3),
    size(64, 2, 4, 100),
    size(500, 3, 16, 300),
    size(2_000, 8, 50, 257),
    size(1_000, 100, 50, 64),
    size(10_000, 3, 50, 64),
];

/// Sizes the CPU emulation of the kernels gets through in seconds: every shape of
/// [`GPU_EQUALITY_SIZES`] (one task, several launches, fan-in beyond a warp's 32 lanes, more
/// GPUs than lanes) at a smaller scale.
pub const EMULATED_EQUALITY_SIZES: [EqualitySize; 5] = [
    size(1, 0, 1, 3),
    size(64, 2, 4, 100),
    size(200, 3, 16, 40),
    size(120, 45, 50, 9),
    size(400, 8, 40, 7),
];

/// Builds the evaluator under test for one flattened DAG and kernel configuration.
pub type MakeEvaluator<'a> =
    dyn FnMut(&FlatDag, CudaConfig) -> Result<Box<dyn PopulationEvaluator>, GpuError> + 'a;

/// CPU vs GPU (both kernels) on random DAGs of `sizes` ([`GPU_EQUALITY_SIZES`] for the GPU
/// check, the smaller [`EMULATED_EQUALITY_SIZES`] under compute-sanitizer); see
/// [`equality_check_with`].
pub fn equality_check(seed: u64, sizes: &[EqualitySize]) -> Result<Vec<EqualityCase>, GpuError> {
    equality_check_with(seed, sizes, &mut |flat, config| {
        Ok(Box::new(CudaBatch::new(flat, config)?))
    })
}

/// The core evaluator vs the evaluators `make` builds (the GPU's, or the kernels' CPU
/// emulation), both kernel variants, on random DAGs of `sizes`: shared and per-plan orders,
/// pool and table run models, and deliberately broken plans (duplicate task, unknown GPU,
/// precedence). Every outcome must be identical: makespans bit for bit, refusals with the
/// same task ids. O(Σ P·(T + E)) per evaluator.
pub fn equality_check_with(
    seed: u64,
    sizes: &[EqualitySize],
    make: &mut MakeEvaluator<'_>,
) -> Result<Vec<EqualityCase>, GpuError> {
    let mut cases = Vec::new();
    let mut rng = SeededRng::new(seed);
    for (i, s) in sizes.iter().enumerate() {
        let (tasks, degree, gpus, plans) = (s.tasks, s.degree, s.gpus, s.plans);
        let (dag, pool) = random_problem(seed + i as u64, tasks, degree, gpus)?;
        let n = dag.task_count();
        let mut gpu_of = random_gpus(&mut rng, plans, n, gpus);
        let shared: Vec<u32> = random_order(&mut rng, &dag);
        let mut per_plan: Vec<u32> = (0..plans)
            .flat_map(|_| random_order(&mut rng, &dag))
            .collect();
        // Break a few plans (only where the plan is long enough).
        if n >= 3 && plans >= 4 {
            gpu_of[n + 1] = gpus as u16 + 3; // plan 1: unknown GPU
            per_plan[2 * n + 1] = per_plan[2 * n]; // plan 2: duplicate
            per_plan.swap(3 * n, 3 * n + n - 1); // plan 3: likely precedence violation
        }
        let pool_ref: &HostPool = &pool;
        let flats = [
            ("pool", FlatDag::with_pool(&dag, pool_ref)?),
            ("table", FlatDag::with_platform(&dag, pool_ref)?),
        ];
        for orders in [Orders::Shared(&shared), Orders::PerPlan(&per_plan)] {
            let population = Population {
                plans,
                tasks: n,
                gpus: &gpu_of,
                orders,
            };
            let mut cpu: CpuBatch<MAX_TASKS, { 1 << 20 }, MAX_GPUS, _> =
                CpuBatch::new(&dag, pool_ref);
            let want = cpu.evaluate(&population)?;
            for (model, flat) in &flats {
                for variant in [KernelVariant::PerThread, KernelVariant::PerWarp] {
                    let config = CudaConfig {
                        variant,
                        // Small scratch so populations run in several launches too.
                        scratch_bytes: 64 * 8 * (n + gpus + 2),
                        ..CudaConfig::default()
                    };
                    let mut gpu = make(flat, config)?;
                    let got = gpu.evaluate(&population)?;
                    let kind = match orders {
                        Orders::Shared(_) => "shared order",
                        Orders::PerPlan(_) => "per-plan orders",
                    };
                    cases.push(EqualityCase {
                        name: format!("T={n} fan-in {degree} G={gpus} {model} {kind} {variant:?}"),
                        plans,
                        mismatches: compare(&want, &got),
                    });
                }
            }
        }
        let _ = pool.gpu_count();
    }
    Ok(cases)
}

/// One benchmark row.
#[derive(Clone, Debug)]
pub struct BenchRow {
    /// Tasks T.
    pub tasks: usize,
    /// Edges E.
    pub edges: usize,
    /// Plans P.
    pub plans: usize,
    /// One CPU core, plan·tasks per second (measured on up to `cpu_plans` plans).
    pub cpu_rate: f64,
    /// GPU per-thread kernel, plan·tasks per second (best of 3, uploads and downloads in).
    pub gpu_thread_rate: f64,
    /// GPU per-warp kernel, likewise.
    pub gpu_warp_rate: f64,
    /// Whether the GPU makespans equalled the CPU's on the plans the CPU evaluated.
    pub equal: bool,
}

/// Throughput of the CPU (one core) and both kernels on random DAGs and WOA-shaped
/// populations (random assignments, one shared order). The CPU rate is measured on at most
/// `cpu_plans` plans per size. O(Σ P·(T + E)).
pub fn benchmark(
    seed: u64,
    task_sizes: &[usize],
    degree: u32,
    gpus: usize,
    populations: &[usize],
    cpu_plans: usize,
) -> Result<Vec<BenchRow>, GpuError> {
    let mut rows = Vec::new();
    let mut rng = SeededRng::new(seed);
    for &tasks in task_sizes {
        let (dag, pool) = random_problem(seed ^ tasks as u64, tasks, degree, gpus)?;
        let pool_ref: &HostPool = &pool;
        let flat = FlatDag::with_pool(&dag, pool_ref)?;
        let order = random_order(&mut rng, &dag);
        let max_plans = populations.iter().copied().max().unwrap_or(0);
        let all_gpus = random_gpus(&mut rng, max_plans, tasks, gpus);
        let mut batches = [KernelVariant::PerThread, KernelVariant::PerWarp].map(|variant| {
            CudaBatch::new(
                &flat,
                CudaConfig {
                    variant,
                    scratch_bytes: 4 << 30,
                    ..CudaConfig::default()
                },
            )
        });
        for &plans in populations {
            let population = |p: usize| Population {
                plans: p,
                tasks,
                gpus: &all_gpus[..p * tasks],
                orders: Orders::Shared(&order),
            };
            let cpu_n = plans.min(cpu_plans).max(1);
            let mut cpu: CpuBatch<MAX_TASKS, { 1 << 20 }, MAX_GPUS, _> =
                CpuBatch::new(&dag, pool_ref);
            let clock = Instant::now();
            let want = cpu.evaluate(&population(cpu_n))?;
            let cpu_s = clock.elapsed().as_secs_f64();
            let mut rates = [0.0f64; 2];
            let mut equal = true;
            for (slot, batch) in rates.iter_mut().zip(batches.iter_mut()) {
                let batch = batch.as_mut().map_err(|e| GpuError::Input(e.to_string()))?;
                let got = batch.evaluate(&population(plans))?; // warm-up + check
                equal &= compare(&want, &got[..cpu_n]) == 0;
                let mut best = f64::INFINITY;
                for _ in 0..3 {
                    let clock = Instant::now();
                    batch.evaluate(&population(plans))?;
                    best = best.min(clock.elapsed().as_secs_f64());
                }
                *slot = (plans * tasks) as f64 / best;
            }
            rows.push(BenchRow {
                tasks,
                edges: dag.edge_count(),
                plans,
                cpu_rate: (cpu_n * tasks) as f64 / cpu_s,
                gpu_thread_rate: rates[0],
                gpu_warp_rate: rates[1],
                equal,
            });
            if let Some(r) = rows.last() {
                eprintln!(
                    "bench T={} P={}: cpu {:.3e}, per-thread {:.3e} ({:.0}×), per-warp {:.3e} ({:.0}×) plan·tasks/s",
                    r.tasks,
                    r.plans,
                    r.cpu_rate,
                    r.gpu_thread_rate,
                    r.gpu_thread_rate / r.cpu_rate,
                    r.gpu_warp_rate,
                    r.gpu_warp_rate / r.cpu_rate
                );
            }
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_orders_are_topological_and_the_cpu_accepts_them() {
        crate::dag::on_big_stack(|| {
            let (dag, pool) = random_problem(5, 300, 4, 8).unwrap();
            let mut rng = SeededRng::new(1);
            let order = random_order(&mut rng, &dag);
            let gpus = random_gpus(&mut rng, 5, 300, 8);
            let pop = Population {
                plans: 5,
                tasks: 300,
                gpus: &gpus,
                orders: Orders::Shared(&order),
            };
            let pool_ref: &HostPool = &pool;
            let mut cpu: CpuBatch<MAX_TASKS, { 1 << 20 }, MAX_GPUS, _> =
                CpuBatch::new(&dag, pool_ref);
            assert!(cpu.evaluate(&pop).unwrap().iter().all(|o| o.is_ok()));
        });
    }

    /// Runs the whole equality check where a GPU is present; a typed error elsewhere.
    /// `cargo test -p gantry --release dag::gpu_check -- --ignored --nocapture`
    #[test]
    #[ignore = "needs a CUDA GPU (scripts/gpu-check.sh runs it)"]
    fn gpu_equals_cpu_on_random_dags() {
        let cases = crate::dag::on_big_stack(|| equality_check(11, &GPU_EQUALITY_SIZES)).unwrap();
        for c in &cases {
            println!("{} plans={} mismatches={}", c.name, c.plans, c.mismatches);
        }
        assert!(cases.iter().all(|c| c.mismatches == 0));
    }
}
