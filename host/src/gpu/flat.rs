//! The flat inputs every batch evaluator takes: a [`FlatDag`] (CSR predecessors, per-edge
//! transfer time, per-task work and per-GPU speed, or a task × GPU run-time table) and a
//! [`Population`] of plans; and the CPU reference path [`evaluate_population_cpu`], which
//! runs the core's [`Evaluator`] on each plan.

use super::GpuError;
use gantry_core::dag::{Dag, Evaluator, GpuPool, PlanError, Platform};

/// How the kernel gets a task's run time on a GPU.
#[derive(Clone, Debug, PartialEq)]
pub enum RunModel {
    /// `run = work[task] / speed[gpu]`, as [`GpuPool`] computes it (one IEEE division).
    Speeds {
        /// Reference work per task, ms.
        work_ms: Vec<f64>,
        /// Speed per GPU.
        speed: Vec<f64>,
    },
    /// `run = table[task · gpus + gpu]`, read from any [`Platform`]'s `run_ms`.
    Table {
        /// Run time per task and GPU, ms, row-major `[tasks][gpus]`.
        run_ms: Vec<f64>,
    },
}

/// A sealed DAG and its platform flattened into the arrays the kernels read. Memory
/// `4·(T+1) + 12·E + 8·(T+G)` bytes (speeds) or `8·T·G` more (table).
#[derive(Clone, Debug, PartialEq)]
pub struct FlatDag {
    /// Tasks T.
    pub tasks: usize,
    /// GPUs G.
    pub gpus: usize,
    /// CSR offsets: task t's predecessors are `pred_src[pred_first[t]..pred_first[t+1]]`, in
    /// the core DAG's own order (so the first precedence violation found is the same).
    pub pred_first: Vec<u32>,
    /// Predecessor task of each CSR entry.
    pub pred_src: Vec<u32>,
    /// Transfer time of each CSR entry when the two tasks are on different GPUs, ms, computed
    /// by the core's `Bandwidth::transfer_ms` (so the kernel never divides by the bandwidth).
    pub pred_transfer_ms: Vec<f64>,
    /// Run times.
    pub run: RunModel,
}

/// Largest run-time table [`FlatDag::with_platform`] builds (entries): 2^26 = 512 MiB.
pub const MAX_TABLE_ENTRIES: usize = 1 << 26;

impl FlatDag {
    /// Flatten `dag` on a speed pool (run = work / speed, computed on the device). O(T + E + G).
    pub fn with_pool<const T: usize, const E: usize, const P: usize>(
        dag: &Dag<T, E>,
        pool: &GpuPool<P>,
    ) -> Result<Self, GpuError> {
        let mut flat = Self::edges(dag, pool)?;
        flat.run = RunModel::Speeds {
            work_ms: dag.works_ms().to_vec(),
            speed: pool.speeds().to_vec(),
        };
        Ok(flat)
    }

    /// Flatten `dag` on any platform through a task × GPU table of `platform.run_ms`.
    /// O(T·G + E); refuses a table above [`MAX_TABLE_ENTRIES`].
    pub fn with_platform<const T: usize, const E: usize>(
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> Result<Self, GpuError> {
        let mut flat = Self::edges(dag, platform)?;
        let (n, g) = (flat.tasks, flat.gpus);
        if n.saturating_mul(g) > MAX_TABLE_ENTRIES {
            return Err(GpuError::Input(format!(
                "run-time table of {n} tasks × {g} GPUs is above {MAX_TABLE_ENTRIES} entries"
            )));
        }
        let works = dag.works_ms();
        let run_ms = (0..n)
            .flat_map(|t| (0..g).map(move |gpu| (t, gpu)))
            .map(|(t, gpu)| platform.run_ms(t, works[t], gpu))
            .collect();
        flat.run = RunModel::Table { run_ms };
        Ok(flat)
    }

    /// The CSR part, with an empty run model. O(T + E).
    fn edges<const T: usize, const E: usize>(
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> Result<Self, GpuError> {
        dag.require_sealed().map_err(PlanError::from)?;
        let (n, g) = (dag.task_count(), platform.gpu_count());
        if g == 0 {
            return Err(PlanError::NoGpus.into());
        }
        if g > usize::from(u16::MAX) || n >= u32::MAX as usize {
            return Err(GpuError::Input(format!(
                "{n} tasks / {g} GPUs do not fit u32 / u16"
            )));
        }
        let bandwidth = platform.bandwidth();
        let mut flat = Self {
            tasks: n,
            gpus: g,
            pred_first: Vec::with_capacity(n + 1),
            pred_src: Vec::with_capacity(dag.edge_count()),
            pred_transfer_ms: Vec::with_capacity(dag.edge_count()),
            run: RunModel::Table { run_ms: Vec::new() },
        };
        flat.pred_first.push(0);
        for t in 0..n {
            let (srcs, edges) = dag.preds(t);
            for (&s, &e) in srcs.iter().zip(edges) {
                flat.pred_src.push(s);
                flat.pred_transfer_ms
                    .push(bandwidth.transfer_ms(dag.edge_data(e)));
            }
            flat.pred_first.push(flat.pred_src.len() as u32);
        }
        Ok(flat)
    }

    /// CSR entries (edges). O(1).
    pub fn edges_len(&self) -> usize {
        self.pred_src.len()
    }
}

/// The orders of a population's plans.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Orders<'a> {
    /// One order for every plan (`[tasks]`): WOA evaluates every whale with the rank order.
    Shared(&'a [u32]),
    /// One order per plan, plan-major `[plans][tasks]`.
    PerPlan(&'a [u32]),
}

/// P plans of one DAG as flat arrays: `gpus` is plan-major `[plans][tasks]` (GPU of each task
/// id), `orders` lists task ids.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Population<'a> {
    /// Plans P.
    pub plans: usize,
    /// Tasks T of each plan.
    pub tasks: usize,
    /// GPU per task id, `[plans][tasks]`.
    pub gpus: &'a [u16],
    /// Task orders.
    pub orders: Orders<'a>,
}

impl<'a> Population<'a> {
    /// Check the array lengths against `plans × tasks`. O(1).
    pub fn check(&self) -> Result<(), GpuError> {
        let cells = self.plans.checked_mul(self.tasks);
        let order_len = match self.orders {
            Orders::Shared(o) => (o.len(), Some(self.tasks)),
            Orders::PerPlan(o) => (o.len(), cells),
        };
        if cells != Some(self.gpus.len()) || Some(order_len.0) != order_len.1 {
            return Err(GpuError::Input(format!(
                "population of {} plans × {} tasks: gpus has {}, orders {}",
                self.plans,
                self.tasks,
                self.gpus.len(),
                order_len.0
            )));
        }
        Ok(())
    }

    /// Plan `p` as (order, gpus); `None` past the end. O(1).
    pub fn plan(&self, p: usize) -> Option<(&'a [u32], &'a [u16])> {
        let (lo, hi) = (p.checked_mul(self.tasks)?, (p + 1).checked_mul(self.tasks)?);
        let gpus = self.gpus.get(lo..hi)?;
        let order = match self.orders {
            Orders::Shared(o) => o,
            Orders::PerPlan(o) => o.get(lo..hi)?,
        };
        Some((order, gpus))
    }
}

/// One plan's outcome: its makespan, or the core's reason for refusing it.
pub type PlanOutcome = Result<f64, PlanError>;

/// The CPU reference and fallback: each plan through the core [`Evaluator`] (scratch `eval`,
/// reused). Same inputs and outcomes as the GPU path. O(P·(T + E)).
pub fn evaluate_population_cpu<const T: usize, const E: usize, const P: usize>(
    eval: &mut Evaluator<T, P>,
    dag: &Dag<T, E>,
    platform: &impl Platform,
    population: &Population<'_>,
) -> Result<Vec<PlanOutcome>, GpuError> {
    population.check()?;
    Ok((0..population.plans)
        .map(|p| match population.plan(p) {
            Some((order, gpus)) => eval.evaluate_parts(dag, platform, order, gpus),
            None => Err(PlanError::WrongLength {
                plan: 0,
                dag: population.tasks,
            }),
        })
        .collect())
}

/// Something that scores a whole population at once: the CPU path or the GPU.
pub trait PopulationEvaluator {
    /// Short name for reports ("cpu", "cuda").
    fn name(&self) -> &'static str;
    /// Makespan or refusal of every plan, in plan order.
    fn evaluate(&mut self, population: &Population<'_>) -> Result<Vec<PlanOutcome>, GpuError>;
}

/// [`evaluate_population_cpu`] bound to one DAG and platform.
pub struct CpuBatch<'a, const T: usize, const E: usize, const P: usize, M> {
    dag: &'a Dag<T, E>,
    platform: &'a M,
    eval: Box<Evaluator<T, P>>,
}

impl<'a, const T: usize, const E: usize, const P: usize, M: Platform> CpuBatch<'a, T, E, P, M> {
    /// Bind to `dag` on `platform` (boxes an evaluator: `17·T + 8·P` bytes).
    pub fn new(dag: &'a Dag<T, E>, platform: &'a M) -> Self {
        Self {
            dag,
            platform,
            eval: Box::new(Evaluator::new()),
        }
    }
}

impl<const T: usize, const E: usize, const P: usize, M: Platform> PopulationEvaluator
    for CpuBatch<'_, T, E, P, M>
{
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn evaluate(&mut self, population: &Population<'_>) -> Result<Vec<PlanOutcome>, GpuError> {
        evaluate_population_cpu(&mut self.eval, self.dag, self.platform, population)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_core::dag::{Bandwidth, TaskId};

    fn diamond() -> (Dag<8, 8>, GpuPool<4>) {
        let mut d = Dag::new();
        for w in [2.0, 4.0, 6.0, 2.0] {
            d.add_task(w).unwrap();
        }
        for (a, b) in [(0, 1), (0, 2), (1, 3), (2, 3)] {
            d.add_edge(TaskId(a), TaskId(b), 10.0).unwrap();
        }
        d.seal().unwrap();
        let mut p = GpuPool::new(Bandwidth::PerMs(10.0));
        p.add_gpu(1.0).unwrap();
        p.add_gpu(2.0).unwrap();
        (d, p)
    }

    #[test]
    fn flattening_keeps_csr_order_and_precomputes_transfers() {
        let (d, p) = diamond();
        let f = FlatDag::with_pool(&d, &p).unwrap();
        assert_eq!(f.pred_first, vec![0, 0, 1, 2, 4]);
        assert_eq!(f.pred_src, vec![0, 0, 1, 2]);
        assert_eq!(f.pred_transfer_ms, vec![1.0; 4]);
        let t = FlatDag::with_platform(&d, &p).unwrap();
        assert_eq!(
            t.run,
            RunModel::Table {
                run_ms: vec![2.0, 1.0, 4.0, 2.0, 6.0, 3.0, 2.0, 1.0]
            }
        );
    }

    #[test]
    fn cpu_batch_matches_single_evaluations_and_reports_refusals() {
        let (d, p) = diamond();
        let gpus = [1, 0, 1, 1, 0, 0, 0, 0, 0, 5, 0, 0];
        let pop = Population {
            plans: 3,
            tasks: 4,
            gpus: &gpus,
            orders: Orders::Shared(&[0, 1, 2, 3]),
        };
        let mut batch: CpuBatch<8, 8, 4, _> = CpuBatch::new(&d, &p);
        let got = batch.evaluate(&pop).unwrap();
        assert_eq!(got[0], Ok(8.0));
        assert_eq!(got[1], Ok(14.0));
        assert_eq!(got[2], Err(PlanError::UnknownGpu { task: 1, gpu: 5 }));
        let short = Population { plans: 4, ..pop };
        assert!(matches!(batch.evaluate(&short), Err(GpuError::Input(_))));
    }
}
