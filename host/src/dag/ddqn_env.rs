//! The Double DQN's environment: generated training problems, the plan-building episode and
//! its reward, and the rollout that turns Q-values into a plan (shared by training, the
//! ndarray scorer and the tract scorer).
//!
//! # Episode
//! One DAG, one GPU pool. The core's [`ListState`] visits tasks in HEFT's upward-rank order;
//! at each step the agent sees one [`OBS_WIDTH`]-wide row per GPU (layout table in
//! `core/src/dag/observation.rs`) and picks a GPU; the task goes to the end of that GPU's
//! queue. The finished plan (assignment + rank order) has exactly the evaluator's makespan.
//!
//! # Reward
//! In units of `ū`, the DAG's mean task run time ([`ListState::time_scale_ms`]), so one
//! network trains on DAGs of any size and time unit:
//! `r_t = −(M_t − M_{t−1}) / ū − α·min((EFT_chosen − min_g EFT_g) / ū, 8)`, where `M_t` is the
//! partial makespan after step t (so the undiscounted sum of the first terms is `−makespan/ū`)
//! and the second term (α = [`RewardConfig::regret_weight`], 0.5) charges the finish-time
//! regret against the greedy-EFT choice — a dense signal where makespan increments are
//! zero for most steps. The last step adds `β·clip((HEFT − makespan) / ū, −8, 8)` (β =
//! [`RewardConfig::terminal_bonus`], 1): positive when the agent beat HEFT's plan (as the
//! evaluator scores it), negative when it lost.
//!
//! # Training problems ([`ProblemGen`]) — never the evaluation inputs
//! - tasks: 30–300; works drawn from a work pool (the durations of the WORL slices
//!   `instance200…600.csv`, which the acceptance table does not use; log-uniform 1–1000 s
//!   when the traces are absent);
//! - edges: with probability ½ the WORL synthetic rule (row j gets `min(d, j)` random
//!   predecessors, d drawn from {0, 1, 2, 3, 5, 10}), else a layered random DAG (STG-like:
//!   3–20 layers, each task gets 1–3 predecessors from the previous two layers); edge data 0
//!   with probability ¾ (like every real input), else uniform 0–0.5× the mean work with a
//!   finite bandwidth of 1;
//! - GPUs: 2–64, speeds drawn from the WORL `GPU.csv` mapping (0.54–1.52) when present, else
//!   uniform 0.5–1.5.

use crate::learn::tract_model::ModelError;
use gantry_core::dag::{Bandwidth, Dag, GpuPool, ListState, OBS_WIDTH, Plan, Platform, TaskId};
use ndarray::ArrayView2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;

/// Task capacity of training DAGs.
pub const TRAIN_TASKS: usize = 320;
/// Edge capacity of training DAGs.
pub const TRAIN_EDGES: usize = 4096;
/// GPU capacity of training pools.
pub const TRAIN_GPUS: usize = 64;
/// A training DAG.
pub type TrainDag = Dag<TRAIN_TASKS, TRAIN_EDGES>;
/// A training GPU pool.
pub type TrainPool = GpuPool<TRAIN_GPUS>;

/// The reward's knobs (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct RewardConfig {
    /// Weight α of the per-step EFT regret.
    pub regret_weight: f64,
    /// Weight β of the terminal `(HEFT − makespan) / ū` bonus.
    pub terminal_bonus: f64,
}

impl Default for RewardConfig {
    fn default() -> Self {
        Self {
            regret_weight: 0.5,
            terminal_bonus: 1.0,
        }
    }
}

impl RewardConfig {
    /// Reward of one step (module doc): makespan `before` → `after`, the chosen GPU's EFT,
    /// the best EFT, time scale `scale_ms`, and HEFT's makespan on the last step.
    pub fn step(
        &self,
        before: f64,
        after: f64,
        eft_chosen: f64,
        eft_best: f64,
        scale_ms: f64,
        heft_ms_if_last: Option<f64>,
    ) -> f64 {
        let u = if scale_ms > 0.0 { scale_ms } else { 1.0 };
        let regret = ((eft_chosen - eft_best) / u).clamp(0.0, 8.0);
        let mut r = -(after - before) / u - self.regret_weight * regret;
        if let Some(h) = heft_ms_if_last {
            r += self.terminal_bonus * ((h - after) / u).clamp(-8.0, 8.0);
        }
        r
    }
}

/// Something that scores GPU rows: `rows` is `[P, OBS_WIDTH]`, the answer one Q-value per row.
pub trait QScorer {
    /// Q-values of every row. Errors: the model failed or produced a non-finite value.
    fn q_values(&mut self, rows: ArrayView2<f32>) -> Result<&[f32], ModelError>;
}

/// An ndarray [`Mlp`](crate::learn::mlp::Mlp) as a scorer (training, tests).
#[derive(Debug)]
pub struct MlpScorer<'a> {
    /// The network.
    pub net: &'a crate::learn::mlp::Mlp,
    out: Vec<f32>,
}

impl<'a> MlpScorer<'a> {
    /// Wrap `net`.
    pub fn new(net: &'a crate::learn::mlp::Mlp) -> Self {
        Self {
            net,
            out: Vec::new(),
        }
    }
}

impl QScorer for MlpScorer<'_> {
    fn q_values(&mut self, rows: ArrayView2<f32>) -> Result<&[f32], ModelError> {
        let q = self.net.forward(rows);
        self.out.clear();
        self.out.extend(q.iter().copied());
        if let Some((index, &value)) = self.out.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(ModelError::NonFinite { index, value });
        }
        Ok(&self.out)
    }
}

impl QScorer for crate::learn::tract_model::TractModel {
    fn q_values(&mut self, rows: ArrayView2<f32>) -> Result<&[f32], ModelError> {
        self.run(&[rows])
    }
}

/// Index of the largest value (ties: lowest index). O(len).
pub fn argmax(q: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in q.iter().enumerate() {
        if v > q[best] {
            best = i;
        }
    }
    best
}

/// How a rollout departs from the greedy policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Exploration {
    /// Always the highest Q (ε = 0).
    Greedy,
    /// With probability ε a uniformly random GPU (training's ε-greedy).
    EpsilonUniform(f64),
    /// With probability ε a uniformly random one of the `k` highest-Q GPUs (WORL's perturbed
    /// seeds: diverse but still sensible plans).
    EpsilonTopK(f64, usize),
}

/// Pick a GPU from `q` per `explore`. O(P) (O(P log P) for a top-k draw).
pub fn choose(q: &[f32], explore: Exploration, rng: &mut ChaCha8Rng) -> usize {
    match explore {
        Exploration::Greedy => argmax(q),
        Exploration::EpsilonUniform(eps) => {
            if rng.random::<f64>() < eps {
                rng.random_range(0..q.len().max(1))
            } else {
                argmax(q)
            }
        }
        Exploration::EpsilonTopK(eps, k) => {
            if rng.random::<f64>() >= eps || q.len() < 2 {
                return argmax(q);
            }
            let k = k.clamp(1, q.len());
            let pick = rng.random_range(0..k);
            // The pick-th best, ties by index.
            let mut idx: Vec<usize> = (0..q.len()).collect();
            idx.sort_by(|&a, &b| q[b].total_cmp(&q[a]).then(a.cmp(&b)));
            idx[pick]
        }
    }
}

/// Build a whole plan with `scorer` (see the module doc) into `out`; returns its makespan.
/// `rows` is reused scratch. O(T·(fan-in + P·model)).
#[allow(clippy::too_many_arguments)]
pub fn rollout<const T: usize, const E: usize, const P: usize, S: QScorer>(
    state: &mut ListState<T, P>,
    dag: &Dag<T, E>,
    platform: &impl Platform,
    scorer: &mut S,
    explore: Exploration,
    rng: &mut ChaCha8Rng,
    rows: &mut Vec<f32>,
    out: &mut Plan<T>,
) -> Result<f64, RolloutError> {
    state.reset(dag, platform)?;
    let p = state.gpus();
    rows.resize(p * OBS_WIDTH, 0.0);
    while state.next_task().is_some() {
        state.observe(dag, platform, rows)?;
        let view = ArrayView2::from_shape((p, OBS_WIDTH), &rows[..p * OBS_WIDTH])
            .map_err(|e| RolloutError::Model(ModelError::Run(e.to_string())))?;
        let q = scorer.q_values(view)?;
        if q.len() != p {
            return Err(RolloutError::Model(ModelError::Shape {
                what: "output".into(),
                expected: format!("[{p}]"),
                got: format!("[{}]", q.len()),
            }));
        }
        let g = choose(q, explore, rng);
        state.place(dag, platform, g)?;
    }
    state.write_plan(out)?;
    Ok(state.makespan_ms())
}

/// Why a rollout failed.
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    /// The DAG or platform was refused.
    #[error(transparent)]
    Plan(#[from] gantry_core::dag::PlanError),
    /// The model failed or produced NaN.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// Generator of training problems (see the module doc).
#[derive(Clone, Debug)]
pub struct ProblemGen {
    rng: ChaCha8Rng,
    works_ms: Vec<f64>,
    speeds: Vec<f64>,
}

impl ProblemGen {
    /// A generator seeded by `seed`, with works from `works_ms` and speeds from `speeds`
    /// (empty: the synthetic fallbacks of the module doc).
    pub fn new(seed: u64, works_ms: Vec<f64>, speeds: Vec<f64>) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            works_ms: works_ms
                .into_iter()
                .filter(|w| w.is_finite() && *w >= 0.0)
                .collect(),
            speeds: speeds
                .into_iter()
                .filter(|s| s.is_finite() && *s > 0.0)
                .collect(),
        }
    }

    /// Work pool and speeds from the WORL traces folder (`instance200…600.csv`, `GPU.csv`);
    /// empty pools when the folder or files are missing.
    pub fn from_traces(seed: u64, worl_dir: Option<&Path>) -> Self {
        let mut works = Vec::new();
        let mut speeds = Vec::new();
        if let Some(dir) = worl_dir {
            for n in [200, 300, 400, 500, 600] {
                if let Ok(rows) = super::worl::read_rows(&dir.join(format!("instance{n}.csv"))) {
                    works.extend(rows.iter().map(|r| r.work_ms));
                }
            }
            if let Ok(s) = super::worl::load_gpu_speeds(&dir.join("GPU.csv")) {
                speeds = s;
            }
        }
        Self::new(seed, works, speeds)
    }

    /// Whether the works come from the traces.
    pub fn has_trace_works(&self) -> bool {
        !self.works_ms.is_empty()
    }

    fn work(&mut self) -> f64 {
        if self.works_ms.is_empty() {
            1000.0 * 10f64.powf(self.rng.random_range(0.0..3.0))
        } else {
            self.works_ms[self.rng.random_range(0..self.works_ms.len())]
        }
    }

    /// Fill `dag` (cleared, then sealed) and return a fresh pool. O(T + E).
    pub fn generate(&mut self, dag: &mut TrainDag) -> TrainPool {
        dag.clear();
        let n = self.rng.random_range(30..=300usize);
        let mut total = 0.0;
        for _ in 0..n {
            let w = self.work();
            total += w;
            // A work the DAG refuses (never: the pool is filtered) is skipped.
            let _ = dag.add_task(w);
        }
        let n = dag.task_count();
        let mean_work = total / n.max(1) as f64;
        let with_data = self.rng.random_bool(0.25);
        let data = |rng: &mut ChaCha8Rng| {
            if with_data {
                rng.random_range(0.0..0.5) * mean_work
            } else {
                0.0
            }
        };
        if self.rng.random_bool(0.5) {
            let d = [0u32, 1, 2, 3, 5, 10][self.rng.random_range(0..6)];
            for (a, b) in super::worl::synthetic_edges(n, d, self.rng.random()) {
                let x = data(&mut self.rng);
                let _ = dag.add_edge(TaskId(a), TaskId(b), x);
            }
        } else {
            let layers = self.rng.random_range(3..=20usize).min(n);
            // Layer of task i: i·layers/n (non-decreasing, every layer non-empty).
            let layer = |i: usize| i * layers / n.max(1);
            let first = |l: usize| (l * n).div_ceil(layers);
            for j in 0..n {
                let l = layer(j);
                if l == 0 {
                    continue;
                }
                let lo = first(l.saturating_sub(2));
                let hi = first(l);
                for _ in 0..self.rng.random_range(1..=3) {
                    let i = self.rng.random_range(lo..hi.max(lo + 1));
                    let x = data(&mut self.rng);
                    let _ = dag.add_edge(TaskId(i as u32), TaskId(j as u32), x);
                }
            }
        }
        // Edges only go forward, so sealing cannot fail; a failure would leave it unsealed
        // and the episode would be skipped by the caller's error path.
        let _ = dag.seal();
        let bandwidth = if with_data {
            Bandwidth::PerMs(1.0)
        } else {
            Bandwidth::Infinite
        };
        let mut pool = TrainPool::new(bandwidth);
        let gpus = [2usize, 4, 8, 16, 32, 50, 64][self.rng.random_range(0..7)];
        for _ in 0..gpus {
            let s = if self.speeds.is_empty() {
                self.rng.random_range(0.5..1.5)
            } else {
                self.speeds[self.rng.random_range(0..self.speeds.len())]
            };
            let _ = pool.add_gpu(s);
        }
        pool
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::mlp::{Activation, Mlp, MlpConfig};
    use gantry_core::dag::Evaluator;

    #[test]
    fn generated_problems_are_valid_and_seeded() {
        let mut a = ProblemGen::new(3, vec![], vec![]);
        let mut b = ProblemGen::new(3, vec![], vec![]);
        let (mut da, mut db) = (Box::new(TrainDag::new()), Box::new(TrainDag::new()));
        for _ in 0..20 {
            let pa = a.generate(&mut da);
            let pb = b.generate(&mut db);
            assert!(da.is_sealed());
            assert_eq!(da.task_count(), db.task_count());
            assert_eq!(da.edge_count(), db.edge_count());
            assert_eq!(pa.speeds(), pb.speeds());
            assert!((30..=300).contains(&da.task_count()));
        }
    }

    #[test]
    fn rollout_makespan_is_the_evaluators() {
        let net = Mlp::new(&MlpConfig::new(&[OBS_WIDTH, 8, 1], Activation::Relu), 1);
        let mut gen_ = ProblemGen::new(5, vec![], vec![]);
        let mut dag = Box::new(TrainDag::new());
        let mut state = Box::new(ListState::<TRAIN_TASKS, TRAIN_GPUS>::new());
        let mut ev = Box::new(Evaluator::<TRAIN_TASKS, TRAIN_GPUS>::new());
        let mut plan = Box::new(Plan::new());
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut rows = Vec::new();
        for explore in [
            Exploration::Greedy,
            Exploration::EpsilonUniform(0.3),
            Exploration::EpsilonTopK(0.5, 3),
        ] {
            let pool = gen_.generate(&mut dag);
            let ms = rollout(
                &mut state,
                &dag,
                &pool,
                &mut MlpScorer::new(&net),
                explore,
                &mut rng,
                &mut rows,
                &mut plan,
            )
            .unwrap();
            assert_eq!(ms, ev.evaluate(&dag, &pool, &plan).unwrap());
        }
    }

    #[test]
    fn choose_picks_within_top_k() {
        let q = [0.1f32, 0.9, 0.5, 0.7, -1.0];
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        assert_eq!(choose(&q, Exploration::Greedy, &mut rng), 1);
        for _ in 0..100 {
            let g = choose(&q, Exploration::EpsilonTopK(1.0, 3), &mut rng);
            assert!([1, 3, 2].contains(&g), "{g}");
        }
        assert_eq!(argmax(&[1.0, 1.0]), 0);
    }
}
