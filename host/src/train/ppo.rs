//! PPO for sequential GPU placement, size-independent (Schulman et al. 2017, "Proximal
//! Policy Optimization Algorithms"; GAE: Schulman et al. 2016).
//!
//! # Policy
//! Every GPU row of the core's observation (`gantry_core::placement::observation`, 12
//! features) is concatenated with the 8 job features and scored by one shared MLP
//! (20 → 64 → 64 → 1, tanh): `logit_i = f([gpu_i, job])`. The policy is the softmax of the
//! logits over the usable GPUs (mask = feature 0). Nothing depends on the number of GPUs, so
//! the trained scorer runs on 32 or 1,024 GPUs. At deployment the placer takes the argmax.
//!
//! # Critic
//! `V = g([mean of all rows, mean of usable rows, job])` (12 + 12 + 8 → 64 → 64 → 1, tanh),
//! also size-independent.
//!
//! # Episodes and reward
//! One step per pick. The environment is Proximity-DRL's (`crate::proximity::env`), FCFS
//! over 30 generated jobs; the reward is theirs, given on a job's last pick:
//! `1 − (cost − min_k)/(max_k − min_k)` (`crate::proximity::reward`), 0 on other picks.
//! Nothing is added to its value: the return sums the normalised costs of all jobs of the
//! episode, so a pick that fragments the cluster for later jobs is charged through their
//! rewards (γ = 0.99 per pick). By default ([`RewardShaping::PerPick`]) the same per-job
//! total is paid pick by pick — `−added_cost/(max_k − min_k)` per pick plus
//! `1 + min_k/(max_k − min_k)` on the last — which sums exactly to their reward and credits
//! each pick when it is made; with the reward only on the last pick (theirs,
//! [`RewardShaping::Terminal`]) 300 updates reached 3.5 % above the optimum.
//!
//! # Warm start (added; `bc_updates` = 0 turns it off)
//! With [`Credit::Episode`], pure PPO from a random init learns slowly here (300 updates ≈
//! 5,000 episodes ended 3.5 % above the optimum, worse than their checkpoint); with
//! [`Credit::JobOptimum`] and `frag_coef` 0.2 it needs no warm start (the shipped model,
//! `models/MODEL_CARD.md`). So the actor is first fitted by
//! behaviour cloning to the exact per-job optimum (`gantry_core::placement::
//! optimal_placement`) on the states the optimum visits: at each pick the targets are the
//! still-unpicked GPUs of the optimal set, loss `−log Σ_{i∈targets} π_i` (GPUs with equal
//! features are interchangeable, so any member counts). PPO then fine-tunes on their reward.
//!
//! # Credit assignment (`--credit`)
//! [`Credit::Episode`] (the default) runs GAE over the whole 30-job episode with the pooled
//! critic above; it sees neither how many jobs remain nor the queue, so a pick's advantage
//! carries the noise of every later job's reward and swamps the per-decision differences
//! (3 + 2 vs 4 + 1 GPUs is 0.05 of cost): 300 updates ended 3.5 % above the optimum.
//! [`Credit::JobOptimum`] makes each job its own episode (their reward is per job anyway) and
//! gives every pick of a job the advantage `R_job − R_opt`, where `R_opt` is their reward of
//! the per-decision optimum (`optimal_cost` on the GPUs free before the job's first pick).
//! `R_opt` does not depend on any action of this job, so it is an unbiased baseline: a
//! Monte-Carlo return (λ = 1 within the job) minus an exact per-decision baseline, the
//! critic unused. It is myopic, like the optimal placer it is measured against; with
//! `frag_coef` β > 0 both terms also get β × the quality of the GPUs left free
//! (`leftover_quality`: mean reward of the best next placement over sizes 1–8), for
//! the policy's set and for the optimum's plan, so among equal-cost sets the one that
//! leaves a less fragmented cluster is preferred.
//!
//! # Update
//! Clipped surrogate (ε = 0.2), value loss ½(V − R)² × 0.5, entropy bonus, advantages
//! from GAE(γ = 0.99, λ = 0.95) normalised per minibatch, global gradient-norm clip 0.5,
//! AdamW. All randomness from one ChaCha8 stream seeded by `--seed`; all arithmetic
//! single-threaded, so a seed gives the same weights bit for bit.

use crate::learn::mlp::{Activation, AdamW, AdamWConfig, Mlp, MlpConfig};
use crate::learn::onnx::{ExportError, OnnxIo, split_input_model};
use crate::learn::scorer::{INPUT_GPUS, INPUT_JOB};
use crate::proximity::PROXIMITY_GPUS;
use crate::proximity::env::{Variant, round3, run_episode};
use crate::proximity::jobs::{DnnModel, generate_episode};
use crate::proximity::proximity_tree;
use crate::proximity::reward::RewardTable;
use gantry_core::placement::observation::{GPU_FEATURES, JOB_FEATURES, LAYOUT_VERSION, encode};
use gantry_core::placement::{
    GpuMask, OptimalConfig, PlacementView, Placer, optimal_cost, optimal_placement,
};
use gantry_core::{GpuId, Topology};
use ndarray::{Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io::Write;

/// Adam step size of the imitation warm start.
pub const BC_LR: f32 = 1e-3;
/// Width of one actor input row: GPU features then job features.
pub const ROW: usize = GPU_FEATURES + JOB_FEATURES;
/// Width of the critic input.
pub const CRITIC_IN: usize = 2 * GPU_FEATURES + JOB_FEATURES;
/// ONNX output name, `[N]`: one score per GPU row, higher = better; masked rows' scores are
/// meaningless and must be ignored by the caller.
pub const OUTPUT_SCORES: &str = "scores";

const G: usize = PROXIMITY_GPUS;

/// PPO hyper-parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PpoConfig {
    /// Seed of every random choice (init, episodes, sampling, minibatches).
    pub seed: u64,
    /// Policy updates.
    pub updates: usize,
    /// Episodes (30 jobs each) collected per update.
    pub episodes_per_update: usize,
    /// Passes over each batch.
    pub epochs: usize,
    /// Picks per minibatch.
    pub minibatch: usize,
    /// Hidden width of actor and critic.
    pub hidden: usize,
    /// Adam step size (decayed linearly to 10 % over the run).
    pub lr: f32,
    /// Surrogate clip ε.
    pub clip: f32,
    /// Discount per pick.
    pub gamma: f32,
    /// GAE λ.
    pub lambda: f32,
    /// Value-loss weight.
    pub vf_coef: f32,
    /// Entropy bonus at the start (decayed linearly to 0).
    pub ent_coef: f32,
    /// Global gradient-norm clip.
    pub max_grad_norm: f32,
    /// Environment variant trained on.
    pub variant: Variant,
    /// When the reward is paid.
    pub shaping: RewardShaping,
    /// PPO updates at the start that fit only the critic (the actor is frozen), so a
    /// warm-started actor is not pushed around by a random critic's advantages.
    pub critic_warmup: usize,
    /// Imitation updates before PPO (0 = pure PPO): the actor is first fitted to the exact
    /// optimum's choices (module docs, "Warm start").
    pub bc_updates: usize,
    /// How a pick is credited (module docs, "Credit assignment").
    pub credit: Credit,
    /// Weight β of the fragmentation term of [`Credit::JobOptimum`] (0 = their reward only).
    pub frag_coef: f32,
}

/// Fragmentation score of the GPUs left free: the mean, over next-job sizes k' = 1..=8
/// that fit, of their reward for the best k'-GPU placement on `free` (higher = a better
/// cluster left for the next job). O(8 · exact-search work).
fn leftover_quality(topo: &Topology<G>, free: &GpuMask<G>, rewards: &RewardTable) -> f32 {
    let (mut sum, mut n) = (0.0f64, 0usize);
    for k in 1..=8usize.min(free.count()) {
        if let Some(c) = optimal_cost(topo, free, k) {
            sum += rewards.reward(k, c);
            n += 1;
        }
    }
    if n == 0 { 0.0 } else { (sum / n as f64) as f32 }
}

/// How the advantage of a pick is formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Credit {
    /// GAE(γ, λ) over the whole 30-job episode with the pooled-feature critic.
    Episode,
    /// Each job is its own episode and every pick of it gets `R_job − R_opt`: their reward
    /// of the job's placement minus the reward the per-decision optimum (`optimal_cost` over
    /// the GPUs free at the job's start) would get. `R_opt` depends only on the state before
    /// the job's first pick, so it is a valid (unbiased) baseline for all its picks.
    JobOptimum,
}

/// When their per-job reward is paid (the episode's undiscounted return is the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum RewardShaping {
    /// All of it on the job's last pick, as theirs.
    Terminal,
    /// Spread over the picks by added cost (`RewardTable::pick_reward`), so each pick is
    /// credited when made.
    PerPick,
}

impl Default for PpoConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            updates: 60,
            episodes_per_update: 16,
            epochs: 4,
            minibatch: 256,
            hidden: 64,
            lr: 1e-4,
            clip: 0.2,
            gamma: 0.99,
            lambda: 0.95,
            vf_coef: 0.5,
            ent_coef: 0.001,
            max_grad_norm: 0.5,
            variant: Variant::Compat,
            shaping: RewardShaping::PerPick,
            bc_updates: 40,
            critic_warmup: 20,
            credit: Credit::Episode,
            frag_coef: 0.0,
        }
    }
}

impl PpoConfig {
    /// The recipe of the shipped `models/proximity_ppo.onnx` (`models/MODEL_CARD.md`): pure
    /// PPO (no imitation), 300 updates × 16 episodes, per-job credit against the optimum with
    /// fragmentation weight 0.2, lr 3e-4, no critic warm-up, seed 0, variant compat. The
    /// defaults of `gantry train placement`.
    pub fn shipped() -> Self {
        Self {
            seed: 0,
            updates: 300,
            bc_updates: 0,
            credit: Credit::JobOptimum,
            lr: 3e-4,
            critic_warmup: 0,
            frag_coef: 0.2,
            ..Self::default()
        }
    }
}

/// Actor (per-GPU scorer) and critic.
#[derive(Clone, Debug, PartialEq)]
pub struct PpoPolicy {
    /// `[gpu, job]` row (20) → logit.
    pub actor: Mlp,
    /// Pooled features (32) → value.
    pub critic: Mlp,
}

impl PpoPolicy {
    /// Fresh networks from `seed` (the actor's last layer scaled by 0.01: a near-uniform
    /// start).
    pub fn new(hidden: usize, seed: u64) -> Self {
        Self {
            actor: Mlp::new(
                &MlpConfig::new(&[ROW, hidden, hidden, 1], Activation::Tanh)
                    .with_output_scale(0.01),
                seed,
            ),
            critic: Mlp::new(
                &MlpConfig::new(&[CRITIC_IN, hidden, hidden, 1], Activation::Tanh),
                seed ^ 0x9E37_79B9_7F4A_7C15,
            ),
        }
    }

    /// Hash of both networks' weights.
    pub fn weight_hash(&self) -> u64 {
        self.actor.weight_hash() ^ self.critic.weight_hash().rotate_left(1)
    }

    /// The actor as an ONNX scorer: inputs `gpu_features [N, 12]` and `job_features [1, 8]`,
    /// output `scores [N]`. `metadata` is stored in the file.
    pub fn to_onnx(&self, metadata: Vec<(String, String)>) -> Result<Vec<u8>, ExportError> {
        let mut io = OnnxIo::new(INPUT_GPUS, OUTPUT_SCORES);
        io.flatten_output = true;
        io.doc = format!(
            "gantry PPO GPU scorer (observation layout v{LAYOUT_VERSION}). Inputs: {INPUT_GPUS} \
             [N, {GPU_FEATURES}] one row per GPU, {INPUT_JOB} [1, {JOB_FEATURES}]. Output: \
             {OUTPUT_SCORES} [N], higher = better; pick the argmax over usable GPUs \
             (gpu_features[:, 0] = 1); masked rows' scores are meaningless."
        );
        io.metadata = metadata;
        io.metadata
            .push(("layout_version".into(), LAYOUT_VERSION.to_string()));
        split_input_model(
            &self.actor,
            (INPUT_GPUS, GPU_FEATURES),
            (INPUT_JOB, JOB_FEATURES),
            &io,
        )
    }
}

/// One pick in a rollout.
#[derive(Clone, Debug)]
struct Step {
    rows: Array2<f32>,
    usable: Vec<bool>,
    critic_in: [f32; CRITIC_IN],
    action: usize,
    logp: f32,
    value: f32,
    reward: f32,
    done: bool,
    /// `R_job − R_opt` of the pick's job ([`Credit::JobOptimum`]); set on the job's last pick.
    job_adv: f32,
}

/// Stacks GPU rows with the job row: `[n, 20]`.
fn actor_rows(gpus: &[[f32; GPU_FEATURES]], job: &[f32; JOB_FEATURES]) -> Array2<f32> {
    let mut x = Array2::zeros((gpus.len(), ROW));
    for (mut r, g) in x.rows_mut().into_iter().zip(gpus) {
        for (j, v) in g.iter().chain(job.iter()).enumerate() {
            r[j] = *v;
        }
    }
    x
}

fn critic_input(gpus: &[[f32; GPU_FEATURES]], job: &[f32; JOB_FEATURES]) -> [f32; CRITIC_IN] {
    let mut out = [0.0f32; CRITIC_IN];
    let n_all = gpus.len().max(1) as f32;
    let n_use = gpus.iter().filter(|r| r[0] > 0.5).count().max(1) as f32;
    for r in gpus {
        for j in 0..GPU_FEATURES {
            out[j] += r[j] / n_all;
            if r[0] > 0.5 {
                out[GPU_FEATURES + j] += r[j] / n_use;
            }
        }
    }
    out[2 * GPU_FEATURES..].copy_from_slice(job);
    out
}

/// Masked log-softmax of `logits`; masked entries get −∞ and probability 0.
fn masked_log_softmax(logits: &[f32], usable: &[bool]) -> Vec<f32> {
    let m = logits
        .iter()
        .zip(usable)
        .filter(|(_, u)| **u)
        .map(|(l, _)| *l)
        .fold(f32::NEG_INFINITY, f32::max);
    let z: f32 = logits
        .iter()
        .zip(usable)
        .filter(|(_, u)| **u)
        .map(|(l, _)| (l - m).exp())
        .sum();
    let lz = m + z.ln();
    logits
        .iter()
        .zip(usable)
        .map(|(l, u)| if *u { l - lz } else { f32::NEG_INFINITY })
        .collect()
}

/// A placer that samples from (or, `greedy`, takes the argmax of) the policy and records
/// every pick for training.
struct Sampler<'a> {
    policy: &'a PpoPolicy,
    shaping: RewardShaping,
    rewards: &'a RewardTable,
    rng: &'a mut ChaCha8Rng,
    steps: Vec<Step>,
    greedy: bool,
    gpus: Box<[[f32; GPU_FEATURES]; G]>,
    job: [f32; JOB_FEATURES],
    credit: Credit,
    /// Index in `steps` of the current job's first pick and the optimum's reward for it
    /// (plus β × the leftover quality of the optimum's plan).
    job_start: (usize, f32),
    /// β of the fragmentation term.
    frag_coef: f32,
}

impl Sampler<'_> {
    fn new<'a>(
        policy: &'a PpoPolicy,
        cfg: (RewardShaping, Credit),
        rewards: &'a RewardTable,
        rng: &'a mut ChaCha8Rng,
        greedy: bool,
    ) -> Sampler<'a> {
        Sampler {
            policy,
            shaping: cfg.0,
            rewards,
            rng,
            steps: Vec::new(),
            greedy,
            gpus: Box::new([[0.0; GPU_FEATURES]; G]),
            job: [0.0; JOB_FEATURES],
            credit: cfg.1,
            job_start: (0, 0.0),
            frag_coef: 0.0,
        }
    }
}

impl Placer<G> for Sampler<'_> {
    fn name(&self) -> &'static str {
        "ppo-sampler"
    }

    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        let n = encode(view, &mut self.gpus, &mut self.job);
        let rows = actor_rows(&self.gpus[..n], &self.job);
        let logits = self.policy.actor.forward(rows.view());
        let usable: Vec<bool> = (0..n)
            .map(|i| view.usable.allows(GpuId(i as u16)))
            .collect();
        let logp = masked_log_softmax(logits.as_slice()?, &usable);
        let action = if self.greedy {
            (0..n)
                .filter(|&i| usable[i])
                .fold(None, |b: Option<usize>, i| match b {
                    Some(j) if logp[j] >= logp[i] => Some(j),
                    _ => Some(i),
                })?
        } else {
            let u: f32 = self.rng.random();
            let mut acc = 0.0;
            let mut chosen = None;
            for i in (0..n).filter(|&i| usable[i]) {
                acc += logp[i].exp();
                chosen = Some(i);
                if u < acc {
                    break;
                }
            }
            chosen?
        };
        let critic_in = critic_input(&self.gpus[..n], &self.job);
        let value = self
            .policy
            .critic
            .forward(ArrayView2::from_shape((1, CRITIC_IN), &critic_in).ok()?)[[0, 0]];
        let k = usize::from(view.job.gpus());
        let last = view.remaining() == 1;
        let job_credit = self.credit == Credit::JobOptimum && !self.greedy;
        if job_credit && view.picked.is_empty() {
            let opt = optimal_cost(view.topology, view.usable, k).unwrap_or(f64::NAN);
            let mut base = self.rewards.reward(k, round3(opt)) as f32;
            if self.frag_coef != 0.0 {
                let plan =
                    optimal_placement(view.topology, view.usable, k, &OptimalConfig::default())?;
                let mut left = view.usable.clone();
                for g in plan.set.iter() {
                    left.set(g, false);
                }
                base += self.frag_coef * leftover_quality(view.topology, &left, self.rewards);
            }
            self.job_start = (self.steps.len(), base);
        }
        let reward = match self.shaping {
            RewardShaping::Terminal if last => {
                let mut set = view.picked.to_vec();
                set.push(GpuId(action as u16));
                let cost = round3(view.topology.comm_cost(&set));
                self.rewards.reward(k, cost) as f32
            }
            RewardShaping::Terminal => 0.0,
            RewardShaping::PerPick => {
                let added = view.topology.added_cost(view.picked, GpuId(action as u16));
                self.rewards.pick_reward(k, added, last) as f32
            }
        };
        self.steps.push(Step {
            rows,
            usable,
            critic_in,
            action,
            logp: logp[action],
            value,
            reward,
            done: job_credit && last,
            job_adv: 0.0,
        });
        if job_credit && last {
            let mut set = view.picked.to_vec();
            set.push(GpuId(action as u16));
            let mut r_job =
                self.rewards
                    .reward(k, round3(view.topology.comm_cost(&set))) as f32;
            if self.frag_coef != 0.0 {
                let mut left = view.usable.clone();
                left.set(GpuId(action as u16), false);
                r_job += self.frag_coef * leftover_quality(view.topology, &left, self.rewards);
            }
            let adv = r_job - self.job_start.1;
            for s in self.steps.iter_mut().skip(self.job_start.0) {
                s.job_adv = adv;
            }
        }
        Some(GpuId(action as u16))
    }
}

/// Places like the exact optimum and records, at each pick, the rows and the GPUs of the
/// optimal set not yet picked.
struct Teacher {
    plan: Vec<bool>,
    samples: Vec<(Array2<f32>, Vec<bool>, Vec<bool>)>,
    gpus: Box<[[f32; GPU_FEATURES]; G]>,
    job: [f32; JOB_FEATURES],
}

impl Placer<G> for Teacher {
    fn name(&self) -> &'static str {
        "teacher"
    }

    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        let n = encode(view, &mut self.gpus, &mut self.job);
        if view.picked.is_empty() {
            let k = usize::from(view.job.gpus());
            let plan = optimal_placement(view.topology, view.usable, k, &OptimalConfig::default())?;
            self.plan = (0..n).map(|i| plan.set.allows(GpuId(i as u16))).collect();
        }
        let usable: Vec<bool> = (0..n)
            .map(|i| view.usable.allows(GpuId(i as u16)))
            .collect();
        let targets: Vec<bool> = (0..n)
            .map(|i| usable[i] && self.plan.get(i) == Some(&true))
            .collect();
        let pick = targets.iter().position(|&t| t)?;
        self.samples
            .push((actor_rows(&self.gpus[..n], &self.job), usable, targets));
        Some(GpuId(pick as u16))
    }
}

/// Behaviour cloning of the actor on the optimum's picks (module docs); returns the mean
/// loss of the last update.
fn imitate(
    policy: &mut PpoPolicy,
    opt: &mut AdamW,
    models: &[DnnModel],
    cfg: &PpoConfig,
    rng: &mut ChaCha8Rng,
) -> anyhow::Result<f64> {
    let topo: Topology<G> = proximity_tree();
    let mut last = 0.0;
    for _ in 0..cfg.bc_updates {
        let mut teacher = Teacher {
            plan: Vec::new(),
            samples: Vec::new(),
            gpus: Box::new([[0.0; GPU_FEATURES]; G]),
            job: [0.0; JOB_FEATURES],
        };
        for _ in 0..cfg.episodes_per_update {
            let jobs = generate_episode(models, rng.random());
            run_episode(&topo, &jobs, &mut teacher, cfg.variant)?;
        }
        let samples = teacher.samples;
        let mut order: Vec<usize> = (0..samples.len()).collect();
        for _ in 0..cfg.epochs {
            shuffle(&mut order, rng);
            let mut loss = 0.0f64;
            for mb in order.chunks(cfg.minibatch.max(1)) {
                let views: Vec<ArrayView2<f32>> = mb.iter().map(|&i| samples[i].0.view()).collect();
                let x = ndarray::concatenate(Axis(0), &views)
                    .unwrap_or_else(|_| Array2::zeros((0, ROW)));
                let (logits, cache) = policy.actor.forward_train(x.view());
                let mut grad = Array2::<f32>::zeros(logits.raw_dim());
                let b = mb.len().max(1) as f32;
                let mut off = 0;
                for &i in mb {
                    let (rows, usable, targets) = &samples[i];
                    let n = rows.nrows();
                    let l: Vec<f32> = (0..n).map(|r| logits[[off + r, 0]]).collect();
                    let lp = masked_log_softmax(&l, usable);
                    let p_t: f32 = (0..n).filter(|&r| targets[r]).map(|r| lp[r].exp()).sum();
                    loss -= f64::from(p_t.max(1e-12).ln());
                    for r in (0..n).filter(|&r| usable[r]) {
                        let p = lp[r].exp();
                        let t = if targets[r] { p / p_t.max(1e-12) } else { 0.0 };
                        grad[[off + r, 0]] = (p - t) / b;
                    }
                    off += n;
                }
                let (mut g, _) = policy.actor.backward(&cache, grad.view());
                g.clip_global_norm(cfg.max_grad_norm);
                opt.step(&mut policy.actor, &g);
            }
            last = loss / samples.len().max(1) as f64;
        }
    }
    Ok(last)
}

/// One row of the learning curve.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CurveRow {
    /// Update index (1-based).
    pub update: usize,
    /// Episodes seen so far.
    pub episodes: usize,
    /// Mean undiscounted return per episode.
    pub mean_return: f64,
    /// Mean communication cost per job while sampling.
    pub comm_per_job: f64,
    /// Mean per-decision optimum per job on the same decisions.
    pub optimum_per_job: f64,
    /// Mean policy entropy over the batch.
    pub entropy: f64,
    /// Mean value loss over the last epoch.
    pub value_loss: f64,
    /// Seconds since the start.
    pub seconds: f64,
}

/// The outcome of [`train`].
#[derive(Clone, Debug)]
pub struct Trained {
    /// The final networks.
    pub policy: PpoPolicy,
    /// One row per update.
    pub curve: Vec<CurveRow>,
}

/// Writes the learning curve as CSV.
pub fn write_curve(path: &std::path::Path, curve: &[CurveRow]) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    for r in curve {
        w.serialize(r)?;
    }
    w.flush()?;
    Ok(())
}

/// Trains a placement policy with PPO on Proximity-DRL episodes drawn by
/// [`generate_episode`] from `models`; `progress` is told after each update. O(updates ·
/// episodes · picks · (G · params)).
pub fn train(
    models: &[DnnModel],
    cfg: &PpoConfig,
    mut progress: impl FnMut(&CurveRow),
) -> anyhow::Result<Trained> {
    let topo: Topology<G> = proximity_tree();
    let rewards = RewardTable::new(&topo, cfg.variant);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut policy = PpoPolicy::new(cfg.hidden, rng.random());
    let opt_cfg = AdamWConfig {
        lr: cfg.lr,
        ..AdamWConfig::default()
    };
    let mut opt_a = AdamW::new(&policy.actor, opt_cfg);
    let mut opt_c = AdamW::new(&policy.critic, opt_cfg);
    let start = std::time::Instant::now();
    if cfg.bc_updates > 0 {
        let bc_cfg = AdamWConfig {
            lr: BC_LR,
            ..AdamWConfig::default()
        };
        let mut opt_bc = AdamW::new(&policy.actor, bc_cfg);
        imitate(&mut policy, &mut opt_bc, models, cfg, &mut rng)?;
    }
    let mut curve = Vec::with_capacity(cfg.updates);
    for update in 0..cfg.updates {
        let frac = update as f32 / cfg.updates.max(1) as f32;
        opt_a.cfg.lr = cfg.lr * (1.0 - 0.9 * frac);
        opt_c.cfg.lr = opt_a.cfg.lr;
        let ent_coef = cfg.ent_coef * (1.0 - frac);
        // Collect.
        let mut steps: Vec<Step> = Vec::new();
        let (mut comm, mut optimum, mut jobs_n, mut ret) = (0.0, 0.0, 0usize, 0.0);
        for _ in 0..cfg.episodes_per_update {
            let jobs = generate_episode(models, rng.random());
            let mut sampler = Sampler::new(
                &policy,
                (cfg.shaping, cfg.credit),
                &rewards,
                &mut rng,
                false,
            );
            sampler.frag_coef = cfg.frag_coef;
            let res = run_episode(&topo, &jobs, &mut sampler, cfg.variant)?;
            let mut ep = sampler.steps;
            if let Some(last) = ep.last_mut() {
                last.done = true;
            }
            ret += ep.iter().map(|s| f64::from(s.reward)).sum::<f64>();
            comm += res.jobs.iter().map(|j| j.cost).sum::<f64>();
            optimum += res.jobs.iter().map(|j| j.optimum).sum::<f64>();
            jobs_n += res.jobs.len();
            steps.extend(ep);
        }
        let (mut adv, returns) = gae(&steps, cfg.gamma, cfg.lambda);
        if cfg.credit == Credit::JobOptimum {
            adv = steps.iter().map(|s| s.job_adv).collect();
        }
        let entropy = mean_entropy(&policy, &steps);
        let value_loss = optimise(
            &mut policy,
            (&mut opt_a, &mut opt_c),
            &steps,
            (&adv, &returns),
            cfg,
            ent_coef,
            update >= cfg.critic_warmup,
            &mut rng,
        );
        let row = CurveRow {
            update: update + 1,
            episodes: (update + 1) * cfg.episodes_per_update,
            mean_return: ret / cfg.episodes_per_update.max(1) as f64,
            comm_per_job: comm / jobs_n.max(1) as f64,
            optimum_per_job: optimum / jobs_n.max(1) as f64,
            entropy,
            value_loss,
            seconds: start.elapsed().as_secs_f64(),
        };
        progress(&row);
        curve.push(row);
        anyhow::ensure!(
            policy.actor.is_finite() && policy.critic.is_finite(),
            "training diverged at update {}",
            update + 1
        );
    }
    Ok(Trained { policy, curve })
}

/// GAE(γ, λ) advantages and returns over consecutive episodes (`done` ends one).
fn gae(steps: &[Step], gamma: f32, lambda: f32) -> (Vec<f32>, Vec<f32>) {
    let mut adv = vec![0.0f32; steps.len()];
    let mut next_value = 0.0f32;
    let mut next_adv = 0.0f32;
    for (i, s) in steps.iter().enumerate().rev() {
        if s.done {
            next_value = 0.0;
            next_adv = 0.0;
        }
        let delta = s.reward + gamma * next_value - s.value;
        next_adv = delta + gamma * lambda * next_adv;
        adv[i] = next_adv;
        next_value = s.value;
    }
    let returns = adv.iter().zip(steps).map(|(a, s)| a + s.value).collect();
    (adv, returns)
}

fn mean_entropy(policy: &PpoPolicy, steps: &[Step]) -> f64 {
    let mut total = 0.0f64;
    for s in steps.iter().step_by(8) {
        let logits = policy.actor.forward(s.rows.view());
        if let Some(l) = logits.as_slice() {
            let lp = masked_log_softmax(l, &s.usable);
            total -= lp
                .iter()
                .filter(|v| v.is_finite())
                .map(|v| f64::from(v.exp() * v))
                .sum::<f64>();
        }
    }
    total / steps.iter().step_by(8).count().max(1) as f64
}

/// PPO epochs over the batch; returns the last epoch's mean value loss.
#[allow(clippy::too_many_arguments)] // internal: state, optimisers, batch, schedule
fn optimise(
    policy: &mut PpoPolicy,
    (opt_a, opt_c): (&mut AdamW, &mut AdamW),
    steps: &[Step],
    (adv, returns): (&[f32], &[f32]),
    cfg: &PpoConfig,
    ent_coef: f32,
    actor_on: bool,
    rng: &mut ChaCha8Rng,
) -> f64 {
    let mut order: Vec<usize> = (0..steps.len()).collect();
    let mut value_loss = 0.0;
    for _ in 0..cfg.epochs {
        shuffle(&mut order, rng);
        let mut vl_sum = 0.0f64;
        for mb in order.chunks(cfg.minibatch.max(1)) {
            vl_sum += minibatch_step(
                policy,
                (opt_a, opt_c),
                steps,
                mb,
                (adv, returns),
                cfg,
                ent_coef,
                actor_on,
            );
        }
        value_loss = vl_sum / steps.len().max(1) as f64;
    }
    value_loss
}

fn shuffle(v: &mut [usize], rng: &mut ChaCha8Rng) {
    for i in (1..v.len()).rev() {
        let j = rng.random_range(0..=i);
        v.swap(i, j);
    }
}

/// One gradient step on the picks `mb`; returns the summed value loss.
#[allow(clippy::too_many_arguments)] // internal: state, optimisers, batch, schedule
fn minibatch_step(
    policy: &mut PpoPolicy,
    (opt_a, opt_c): (&mut AdamW, &mut AdamW),
    steps: &[Step],
    mb: &[usize],
    (adv, returns): (&[f32], &[f32]),
    cfg: &PpoConfig,
    ent_coef: f32,
    actor_on: bool,
) -> f64 {
    let b = mb.len().max(1) as f32;
    // Normalise advantages over the minibatch.
    let a: Vec<f32> = mb.iter().map(|&i| adv[i]).collect();
    let mean = a.iter().sum::<f32>() / b;
    let std = (a.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / b).sqrt() + 1e-8;
    // Actor: all rows of all picks in one batch.
    let sizes: Vec<usize> = mb.iter().map(|&i| steps[i].rows.nrows()).collect();
    let views: Vec<ArrayView2<f32>> = mb.iter().map(|&i| steps[i].rows.view()).collect();
    let x = ndarray::concatenate(Axis(0), &views).unwrap_or_else(|_| Array2::zeros((0, ROW)));
    let (logits, cache) = policy.actor.forward_train(x.view());
    let mut grad = Array2::<f32>::zeros(logits.raw_dim());
    let mut off = 0;
    for (j, &i) in mb.iter().enumerate() {
        let s = &steps[i];
        let n = sizes[j];
        let l: Vec<f32> = (0..n).map(|r| logits[[off + r, 0]]).collect();
        let lp = masked_log_softmax(&l, &s.usable);
        let a_n = (a[j] - mean) / std;
        let ratio = (lp[s.action] - s.logp).exp();
        let clipped =
            (a_n >= 0.0 && ratio > 1.0 + cfg.clip) || (a_n < 0.0 && ratio < 1.0 - cfg.clip);
        let dlogp = if clipped { 0.0 } else { -a_n * ratio };
        let h: f32 = -lp
            .iter()
            .filter(|v| v.is_finite())
            .map(|v| v.exp() * v)
            .sum::<f32>();
        for r in 0..n {
            if !s.usable[r] {
                continue;
            }
            let p = lp[r].exp();
            let onehot = if r == s.action { 1.0 } else { 0.0 };
            // d(−A·ratio·logπ_a)/dlogit + ent_coef·d(−H)/dlogit.
            grad[[off + r, 0]] = (dlogp * (onehot - p) + ent_coef * p * (lp[r] + h)) / b;
        }
        off += n;
    }
    if actor_on {
        let (mut ga, _) = policy.actor.backward(&cache, grad.view());
        ga.clip_global_norm(cfg.max_grad_norm);
        opt_a.step(&mut policy.actor, &ga);
    }
    // Critic.
    let mut ci = Array2::<f32>::zeros((mb.len(), CRITIC_IN));
    for (j, &i) in mb.iter().enumerate() {
        for (k, v) in steps[i].critic_in.iter().enumerate() {
            ci[[j, k]] = *v;
        }
    }
    let (v, cache) = policy.critic.forward_train(ci.view());
    let mut gv = Array2::<f32>::zeros(v.raw_dim());
    let mut vl = 0.0f64;
    for (j, &i) in mb.iter().enumerate() {
        let e = v[[j, 0]] - returns[i];
        vl += f64::from(0.5 * e * e);
        gv[[j, 0]] = cfg.vf_coef * e / b;
    }
    let (mut gc, _) = policy.critic.backward(&cache, gv.view());
    gc.clip_global_norm(cfg.max_grad_norm);
    opt_c.step(&mut policy.critic, &gc);
    vl
}

/// Runs the greedy (argmax) policy on `jobs`, as an evaluation helper for tests and the
/// training report. O(picks · G · params).
pub fn greedy_episode(
    policy: &PpoPolicy,
    jobs: &[crate::proximity::jobs::ProxJob],
    variant: Variant,
) -> anyhow::Result<crate::proximity::env::EpisodeResult> {
    let topo: Topology<G> = proximity_tree();
    let rewards = RewardTable::new(&topo, variant);
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut sampler = Sampler::new(
        policy,
        (RewardShaping::Terminal, Credit::Episode),
        &rewards,
        &mut rng,
        true,
    );
    Ok(run_episode(&topo, jobs, &mut sampler, variant)?)
}

/// Writes `bytes` to `path`, creating its folder.
pub fn write_model(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::File::create(path)?;
    f.write_all(bytes)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_softmax_ignores_masked_entries() {
        let lp = masked_log_softmax(&[1.0, 100.0, 1.0], &[true, false, true]);
        assert!((lp[0].exp() - 0.5).abs() < 1e-6);
        assert_eq!(lp[1], f32::NEG_INFINITY);
    }

    #[test]
    fn gae_on_a_two_step_episode() {
        let step = |reward: f32, value: f32, done: bool| Step {
            rows: Array2::zeros((1, ROW)),
            usable: vec![true],
            critic_in: [0.0; CRITIC_IN],
            action: 0,
            logp: 0.0,
            value,
            reward,
            done,
            job_adv: 0.0,
        };
        let steps = [step(0.0, 0.5, false), step(1.0, 0.2, true)];
        let (adv, ret) = gae(&steps, 0.9, 0.5);
        // Last: δ = 1 − 0.2 = 0.8. First: δ = 0 + 0.9·0.2 − 0.5 = −0.32; A = −0.32 + 0.45·0.8.
        assert!((adv[1] - 0.8).abs() < 1e-6);
        assert!((adv[0] - (-0.32 + 0.45 * 0.8)).abs() < 1e-6);
        assert!((ret[1] - 1.0).abs() < 1e-6);
    }

    /// Per-job credit: one `done` per job, and no job beats the per-decision optimum, so
    /// `R_job − R_opt ≤ 0`, with some picks at 0 (optimal) and some below.
    #[test]
    fn job_optimum_credit_is_per_job_and_non_positive() {
        let Some(table) = crate::test_support::shared("traces/proximity-drl/DNN_properties.csv")
        else {
            return;
        };
        let models = crate::proximity::jobs::load_models(&table).unwrap();
        let topo: Topology<G> = proximity_tree();
        let rewards = RewardTable::new(&topo, Variant::Compat);
        let policy = PpoPolicy::new(16, 3);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let jobs = generate_episode(&models, 11);
        let mut sampler = Sampler::new(
            &policy,
            (RewardShaping::PerPick, Credit::JobOptimum),
            &rewards,
            &mut rng,
            false,
        );
        run_episode(&topo, &jobs, &mut sampler, Variant::Compat).unwrap();
        let steps = sampler.steps;
        assert_eq!(steps.iter().filter(|s| s.done).count(), jobs.len());
        assert!(steps.iter().all(|s| s.job_adv <= 1e-6));
        assert!(steps.iter().any(|s| s.job_adv < -1e-3));
        assert!(steps.iter().any(|s| s.job_adv.abs() < 1e-6));
    }

    /// Same seed → same weights (hash), bit for bit; another seed → other weights.
    #[test]
    fn training_is_deterministic() {
        let Some(table) = crate::test_support::shared("traces/proximity-drl/DNN_properties.csv")
        else {
            return;
        };
        let models = crate::proximity::jobs::load_models(&table).unwrap();
        let cfg = PpoConfig {
            seed: 7,
            updates: 2,
            episodes_per_update: 2,
            epochs: 2,
            hidden: 16,
            ..PpoConfig::default()
        };
        let a = train(&models, &cfg, |_| {}).unwrap();
        let b = train(&models, &cfg, |_| {}).unwrap();
        assert_eq!(a.policy.weight_hash(), b.policy.weight_hash());
        assert_eq!(a.curve.len(), 2);
        let other = train(
            &models,
            &PpoConfig {
                seed: 8,
                ..cfg.clone()
            },
            |_| {},
        )
        .unwrap();
        assert_ne!(a.policy.weight_hash(), other.policy.weight_hash());
        let job = PpoConfig {
            credit: Credit::JobOptimum,
            ..cfg
        };
        let c = train(&models, &job, |_| {}).unwrap();
        let d = train(&models, &job, |_| {}).unwrap();
        assert_eq!(c.policy.weight_hash(), d.policy.weight_hash());
        assert_ne!(a.policy.weight_hash(), c.policy.weight_hash());
    }
}
