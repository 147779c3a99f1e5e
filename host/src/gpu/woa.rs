//! WOA with batch evaluation: the core's [`Woa`] moves and decodes the whales
//! ([`Woa::step_moves`]), a [`PopulationEvaluator`] (the GPU, or the CPU batch path) scores
//! every moved whale in one call, and [`Woa::step_scores`] records the makespans. The core
//! guarantees this is the same search as [`Woa::step`], and the evaluators return identical
//! makespans, so the plan and makespan equal the CPU planner's for the same seed.

use super::GpuError;
use super::flat::{Orders, Population, PopulationEvaluator};
use gantry_core::dag::{Dag, PlanAdvisor, Platform, Woa};

/// Initialise `woa` and run all its iterations with each iteration's population scored by
/// `evaluator` in one batch; returns the best makespan (the plan is
/// [`Woa::best_plan`]). A refused plan stops the run with its error.
/// O(iterations · (POP·T·P on the host + one batch evaluation)).
pub fn run_woa_batched<const POP: usize, const T: usize, const E: usize, const P: usize, A, M>(
    woa: &mut Woa<POP, T, P, A>,
    dag: &Dag<T, E>,
    platform: &M,
    evaluator: &mut dyn PopulationEvaluator,
) -> Result<f64, GpuError>
where
    A: PlanAdvisor<T, E>,
    M: Platform,
{
    woa.initialize(dag, platform)?;
    let n = dag.task_count();
    let whales = woa.whales();
    let mut gpus = vec![0u16; whales.saturating_sub(1) * n];
    // Per-whale orders (EFT-priority decoding); empty when every whale uses the rank order.
    let mut orders = if woa.shares_rank_order() {
        Vec::new()
    } else {
        vec![0u32; whales.saturating_sub(1) * n]
    };
    let mut makespans = vec![f64::NAN; whales];
    for t in 1..=woa.config().iterations {
        if woa.population_phase_over() {
            break;
        }
        let leader = woa.step_moves(dag, platform, t)?;
        let moved: Vec<usize> = (0..whales).filter(|&w| w != leader).collect();
        for (slot, &w) in gpus.chunks_exact_mut(n.max(1)).zip(&moved) {
            slot.copy_from_slice(woa.whale_assignment(w));
        }
        for (slot, &w) in orders.chunks_exact_mut(n.max(1)).zip(&moved) {
            slot.copy_from_slice(woa.whale_order(w));
        }
        let population = Population {
            plans: moved.len(),
            tasks: n,
            gpus: &gpus[..moved.len() * n],
            orders: if woa.shares_rank_order() {
                Orders::Shared(woa.rank_order())
            } else {
                Orders::PerPlan(&orders[..moved.len() * n])
            },
        };
        let outcomes = evaluator.evaluate(&population)?;
        for (&w, outcome) in moved.iter().zip(outcomes) {
            makespans[w] = outcome?;
        }
        woa.step_scores(dag, platform, t, leader, &makespans)?;
    }
    woa.intensify(dag, platform)?;
    Ok(woa.best_ms())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::CpuBatch;
    use gantry_core::SeededRng;
    use gantry_core::dag::{
        Bandwidth, DagPlanner, GpuPool, HeftAdvisor, NoAdvisor, Plan, TaskId, WoaConfig,
    };

    fn random_dag(seed: u64, n: usize, degree: u32) -> Box<Dag<256, 2048>> {
        let mut rng = SeededRng::new(seed);
        let mut dag = Box::new(Dag::new());
        for _ in 0..n {
            dag.add_task(1.0 + rng.below(50) as f64).unwrap();
        }
        for j in 1..n {
            for _ in 0..degree.min(j as u32) {
                let i = rng.below(j as u32);
                dag.add_edge(TaskId(i), TaskId(j as u32), rng.below(30) as f64)
                    .unwrap();
            }
        }
        dag.seal().unwrap();
        dag
    }

    /// The batched driver on the CPU batch path finds exactly the core planner's plan (also
    /// with `worl-ls`'s insertion decoding, local search, budget and intensification).
    #[test]
    fn batched_woa_equals_core_woa() {
        let mut pool: GpuPool<8> = GpuPool::new(Bandwidth::PerMs(3.0));
        for s in [1.0, 0.6, 1.7, 1.1] {
            pool.add_gpu(s).unwrap();
        }
        for (seed, decoding) in (0..3u64).flat_map(|s| {
            [
                (s, gantry_core::dag::Decoding::WorlLoadTarget),
                (s, gantry_core::dag::Decoding::EftPriority),
                (s, gantry_core::dag::Decoding::EftInsertion),
            ]
        }) {
            let dag = random_dag(seed, 150, 1 + seed as u32);
            let mut config = WoaConfig {
                population: 10,
                iterations: 15,
                decoding,
                ..WoaConfig::new(seed)
            };
            if decoding == gantry_core::dag::Decoding::EftInsertion {
                config.local_search = Some(gantry_core::dag::LocalSearchConfig::default());
                config.work_budget = Some(2_000_000);
                config.intensify = 0.25;
            }
            let mut core: Box<Woa<16, 256, 8, NoAdvisor>> = Box::new(Woa::new(config, NoAdvisor));
            let mut plan = Plan::new();
            core.plan(&dag, &pool, &mut plan).unwrap();
            let mut batched: Box<Woa<16, 256, 8, HeftAdvisor<256, 8>>> =
                Box::new(Woa::new(config, HeftAdvisor::new()));
            let mut core_heft: Box<Woa<16, 256, 8, HeftAdvisor<256, 8>>> =
                Box::new(Woa::new(config, HeftAdvisor::new()));
            let want = core_heft.run(&dag, &pool).unwrap();
            let mut cpu: CpuBatch<256, 2048, 8, _> = CpuBatch::new(&dag, &pool);
            let got = run_woa_batched(&mut batched, &dag, &pool, &mut cpu).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "seed {seed}");
            assert_eq!(batched.best_plan().gpus(), core_heft.best_plan().gpus());
            let mut plain: Box<Woa<16, 256, 8, NoAdvisor>> = Box::new(Woa::new(config, NoAdvisor));
            let got = run_woa_batched(&mut plain, &dag, &pool, &mut cpu).unwrap();
            assert_eq!(got.to_bits(), core.best_ms().to_bits());
            assert_eq!(plain.best_plan().gpus(), plan.gpus());
        }
    }
}
