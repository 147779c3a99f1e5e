//! Double DQN (van Hasselt, Guez, Silver, AAAI 2016) that builds DAG plans task by task —
//! the learned half of WORL-RTGS (Du et al., BDCC 9(11):284, 2025; the paper's DDQN is not
//! published, so everything below is this crate's design).
//!
//! # Network
//! One MLP `[OBS_WIDTH = 14] → 64 → 64 → 1` (ReLU) scores ONE GPU row; the same weights score
//! every GPU, so the Q-function works for any GPU count (rows and layout:
//! `core/src/dag/observation.rs`). Action = the GPU with the highest Q.
//!
//! # Algorithm (per environment step; environment and reward: [`crate::dag::ddqn_env`])
//! - ε-greedy behaviour, ε linear from [`DdqnConfig::eps_start`] to [`DdqnConfig::eps_end`]
//!   over the first [`DdqnConfig::eps_decay_frac`] of the episodes;
//! - replay buffer of [`DdqnConfig::replay`] transitions `(row of the chosen GPU, r, all rows
//!   of the next state, done)` (the chosen row suffices for `Q(s, a)`);
//! - every [`DdqnConfig::train_every`] steps one minibatch update of [`DdqnConfig::batch`]
//!   uniform samples: Double-DQN target `y = r + γ·Q_target(s', argmax_a Q_online(s', a))`,
//!   Huber loss (δ = 1) on `Q_online(s, a) − y`, gradient clipped to norm 10, AdamW;
//! - hard target-network copy every [`DdqnConfig::target_sync`] updates.
//!
//! Single-threaded ndarray and one ChaCha8 stream seeded by [`DdqnConfig::seed`] make a run
//! bit-exact: same seed → same weights hash (tested).

use crate::dag::ddqn_env::{
    Exploration, MlpScorer, ProblemGen, RewardConfig, TRAIN_GPUS, TRAIN_TASKS, TrainDag, argmax,
    choose, rollout,
};
use crate::dag::worl_rtgs::INPUT_NAME;
use crate::learn::mlp::{Activation, AdamW, AdamWConfig, Mlp, MlpConfig};
use crate::learn::onnx::{ExportError, OnnxIo, mlp_model};
use gantry_core::dag::{
    DagPlanner, Evaluator, Heft, ListState, OBS_LAYOUT_VERSION, OBS_WIDTH, Plan, Platform,
};
use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::PathBuf;
use std::time::Instant;

/// Graph output name (`[N]`, one Q-value per GPU).
pub const OUTPUT_NAME: &str = "q_values";

/// Hyper-parameters of [`train`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DdqnConfig {
    /// Seed of the weights, the problems, exploration and replay sampling.
    pub seed: u64,
    /// Training episodes (one generated problem each).
    pub episodes: usize,
    /// Hidden widths.
    pub hidden: Vec<usize>,
    /// Discount γ.
    pub gamma: f32,
    /// AdamW settings.
    pub adamw: AdamWConfig,
    /// Minibatch size.
    pub batch: usize,
    /// Replay capacity (transitions).
    pub replay: usize,
    /// Transitions collected before the first update.
    pub learn_start: usize,
    /// Environment steps per update.
    pub train_every: usize,
    /// Updates between target-network copies.
    pub target_sync: usize,
    /// Initial ε.
    pub eps_start: f64,
    /// Final ε.
    pub eps_end: f64,
    /// Share of the episodes over which ε decays.
    pub eps_decay_frac: f64,
    /// Reward knobs.
    pub reward: RewardConfig,
    /// Held-out problems scored greedily at the end (and every tenth of training).
    pub eval_problems: usize,
}

impl DdqnConfig {
    /// The settings `models/worl_ddqn.onnx` was trained with, for `episodes` episodes.
    pub fn new(seed: u64, episodes: usize) -> Self {
        Self {
            seed,
            episodes,
            hidden: vec![64, 64],
            gamma: 0.95,
            adamw: AdamWConfig {
                lr: 5e-4,
                weight_decay: 1e-4,
                ..AdamWConfig::default()
            },
            batch: 64,
            replay: 20_000,
            learn_start: 1_000,
            train_every: 4,
            target_sync: 250,
            eps_start: 1.0,
            eps_end: 0.05,
            eps_decay_frac: 0.6,
            reward: RewardConfig::default(),
            eval_problems: 16,
        }
    }

    fn epsilon(&self, episode: usize) -> f64 {
        let decay = (self.eps_decay_frac * self.episodes as f64).max(1.0);
        let f = (episode as f64 / decay).min(1.0);
        self.eps_start + (self.eps_end - self.eps_start) * f
    }
}

/// What [`train`] measured.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TrainReport {
    /// Episodes run.
    pub episodes: usize,
    /// Environment steps (tasks placed).
    pub steps: usize,
    /// Minibatch updates.
    pub updates: usize,
    /// Mean Huber loss of the last 1,000 updates.
    pub final_loss: f64,
    /// Mean makespan / lower bound of the greedy policy on the held-out problems.
    pub eval_ratio_ddqn: f64,
    /// Mean makespan / lower bound of HEFT's plans (evaluator) on the same problems.
    pub eval_ratio_heft: f64,
    /// Share of held-out problems where the greedy DDQN plan ≤ HEFT's.
    pub eval_wins: f64,
    /// Wall time, seconds.
    pub seconds: f64,
    /// `Mlp::weight_hash` of the final online network.
    pub weight_hash: u64,
    /// Whether works came from the WORL traces (else synthetic).
    pub trace_works: bool,
}

/// Replay buffer (ring): chosen rows `[cap, W]`, rewards, done flags, next-state rows.
#[derive(Debug)]
struct Replay {
    cap: usize,
    len: usize,
    head: usize,
    rows: Vec<f32>,
    rewards: Vec<f32>,
    done: Vec<bool>,
    next: Vec<Vec<f32>>,
}

impl Replay {
    fn new(cap: usize) -> Self {
        let cap = cap.max(1);
        Self {
            cap,
            len: 0,
            head: 0,
            rows: vec![0.0; cap * OBS_WIDTH],
            rewards: vec![0.0; cap],
            done: vec![true; cap],
            next: vec![Vec::new(); cap],
        }
    }

    fn push(&mut self, row: &[f32], reward: f32, next: Option<&[f32]>) {
        let i = self.head;
        self.rows[i * OBS_WIDTH..(i + 1) * OBS_WIDTH].copy_from_slice(row);
        self.rewards[i] = reward;
        self.done[i] = next.is_none();
        self.next[i].clear();
        if let Some(n) = next {
            self.next[i].extend_from_slice(n);
        }
        self.head = (self.head + 1) % self.cap;
        self.len = (self.len + 1).min(self.cap);
    }
}

/// The Q-network's shape for `cfg`.
pub fn net_config(cfg: &DdqnConfig) -> MlpConfig {
    let mut sizes = vec![OBS_WIDTH];
    sizes.extend(&cfg.hidden);
    sizes.push(1);
    MlpConfig::new(&sizes, Activation::Relu)
}

/// One Double-DQN minibatch update; returns the mean Huber loss. O(batch · P · params).
fn update(
    online: &mut Mlp,
    target: &Mlp,
    opt: &mut AdamW,
    replay: &Replay,
    cfg: &DdqnConfig,
    rng: &mut ChaCha8Rng,
) -> f64 {
    let b = cfg.batch.max(1);
    let idx: Vec<usize> = (0..b).map(|_| rng.random_range(0..replay.len)).collect();
    let mut x = Array2::<f32>::zeros((b, OBS_WIDTH));
    let mut next_rows = Vec::new();
    let mut segments = Vec::with_capacity(b);
    for (k, &i) in idx.iter().enumerate() {
        x.row_mut(k)
            .as_slice_mut()
            .unwrap_or(&mut [])
            .copy_from_slice(&replay.rows[i * OBS_WIDTH..(i + 1) * OBS_WIDTH]);
        let start = next_rows.len() / OBS_WIDTH;
        next_rows.extend_from_slice(&replay.next[i]);
        segments.push(start..next_rows.len() / OBS_WIDTH);
    }
    let mut y = vec![0.0f32; b];
    let m = next_rows.len() / OBS_WIDTH;
    let (q_on, q_tg) = match ArrayView2::from_shape((m, OBS_WIDTH), &next_rows[..m * OBS_WIDTH]) {
        Ok(view) if m > 0 => (online.forward(view), target.forward(view)),
        _ => (Array2::zeros((0, 1)), Array2::zeros((0, 1))),
    };
    for (k, &i) in idx.iter().enumerate() {
        y[k] = replay.rewards[i];
        if !replay.done[i] && !segments[k].is_empty() {
            let seg = segments[k].clone();
            let on: Vec<f32> = seg.clone().map(|r| q_on[[r, 0]]).collect();
            let a = seg.start + argmax(&on);
            y[k] += cfg.gamma * q_tg[[a, 0]];
        }
    }
    let (q, cache) = online.forward_train(x.view());
    let mut grad = Array2::<f32>::zeros((b, 1));
    let mut loss = 0.0f64;
    for k in 0..b {
        let d = q[[k, 0]] - y[k];
        let (l, g) = if d.abs() <= 1.0 {
            (0.5 * d * d, d)
        } else {
            (d.abs() - 0.5, d.signum())
        };
        loss += f64::from(l);
        grad[[k, 0]] = g / b as f32;
    }
    let (mut grads, _) = online.backward(&cache, grad.view());
    grads.clip_global_norm(10.0);
    opt.step(online, &grads);
    loss / b as f64
}

/// Greedy DDQN and HEFT ratios on `n` held-out problems (their own generator seed).
/// Returns (mean DDQN ratio, mean HEFT ratio, share of DDQN ≤ HEFT).
pub fn evaluate_on_generated(net: &Mlp, seed: u64, n: usize) -> (f64, f64, f64) {
    let mut generator = ProblemGen::new(seed ^ 0x5EED_E7A1, Vec::new(), Vec::new());
    let mut dag = Box::new(TrainDag::new());
    let mut state = Box::new(ListState::<TRAIN_TASKS, TRAIN_GPUS>::new());
    let mut eval = Box::new(Evaluator::<TRAIN_TASKS, TRAIN_GPUS>::new());
    let mut heft = Box::new(Heft::<TRAIN_TASKS, TRAIN_GPUS>::new());
    let mut plan = Box::new(Plan::new());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rows = Vec::new();
    let (mut sd, mut sh, mut wins) = (0.0, 0.0, 0usize);
    let mut scorer = MlpScorer::new(net);
    for _ in 0..n {
        let pool = generator.generate(&mut dag);
        let Ok(lb) = eval
            .lower_bound(dag.as_ref(), &pool)
            .map(|l| l.ms().max(1e-9))
        else {
            continue;
        };
        let ms = rollout(
            &mut state,
            &dag,
            &pool,
            &mut scorer,
            Exploration::Greedy,
            &mut rng,
            &mut rows,
            &mut plan,
        )
        .unwrap_or(f64::INFINITY);
        let hm = heft
            .plan(&dag, &pool, &mut plan)
            .and_then(|()| eval.evaluate(&dag, &pool, &plan))
            .unwrap_or(f64::INFINITY);
        sd += ms / lb;
        sh += hm / lb;
        wins += usize::from(ms <= hm);
    }
    let n = n.max(1) as f64;
    (sd / n, sh / n, wins as f64 / n)
}

/// Train a Q-network on problems from `generator` (see the module doc). `progress` draws an
/// indicatif bar on stderr. Deterministic for `cfg.seed` and the generator's seed.
pub fn train(cfg: &DdqnConfig, mut generator: ProblemGen, progress: bool) -> (Mlp, TrainReport) {
    let clock = Instant::now();
    let trace_works = generator.has_trace_works();
    let mut online = Mlp::new(&net_config(cfg), cfg.seed);
    let mut target = online.clone();
    let mut opt = AdamW::new(&online, cfg.adamw);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(0x9E37_79B9_7F4A_7C15));
    let mut replay = Replay::new(cfg.replay);
    let mut dag = Box::new(TrainDag::new());
    let mut state = Box::new(ListState::<TRAIN_TASKS, TRAIN_GPUS>::new());
    let mut eval = Box::new(Evaluator::<TRAIN_TASKS, TRAIN_GPUS>::new());
    let mut heft = Box::new(Heft::<TRAIN_TASKS, TRAIN_GPUS>::new());
    let mut plan = Box::new(Plan::new());
    let bar = if progress {
        let b = indicatif::ProgressBar::new(cfg.episodes as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} episodes {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let (mut steps, mut updates) = (0usize, 0usize);
    let mut losses: Vec<f64> = Vec::new();
    let mut rows = vec![0.0f32; TRAIN_GPUS * OBS_WIDTH];
    let mut next = vec![0.0f32; TRAIN_GPUS * OBS_WIDTH];
    let mut recent_ratio = 0.0f64;
    for episode in 0..cfg.episodes {
        let pool = generator.generate(&mut dag);
        let eps = cfg.epsilon(episode);
        let Ok(lb) = eval.lower_bound(dag.as_ref(), &pool).map(|l| l.ms()) else {
            continue;
        };
        let heft_ms = heft
            .plan(&dag, &pool, &mut plan)
            .and_then(|()| eval.evaluate(&dag, &pool, &plan));
        let (Ok(heft_ms), true) = (heft_ms, lb > 0.0) else {
            continue;
        };
        if state.reset(dag.as_ref(), &pool).is_err() {
            continue;
        }
        let p = pool.gpu_count();
        let w = p * OBS_WIDTH;
        if state.observe(dag.as_ref(), &pool, &mut rows).is_err() {
            continue;
        }
        loop {
            let view = ArrayView2::from_shape((p, OBS_WIDTH), &rows[..w]);
            let Ok(view) = view else { break };
            let q = online.forward(view);
            let qs: Vec<f32> = q.iter().copied().collect();
            let g = choose(&qs, Exploration::EpsilonUniform(eps), &mut rng);
            let before = state.makespan_ms();
            let eft_chosen = state.eft_ms().get(g).copied().unwrap_or(0.0);
            let eft_best = state.eft_ms().iter().copied().fold(f64::INFINITY, f64::min);
            let Ok(after) = state.place(dag.as_ref(), &pool, g) else {
                break;
            };
            let done = state.next_task().is_none();
            let r = cfg.reward.step(
                before,
                after,
                eft_chosen,
                eft_best,
                state.time_scale_ms(),
                done.then_some(heft_ms),
            );
            if done {
                replay.push(&rows[g * OBS_WIDTH..(g + 1) * OBS_WIDTH], r as f32, None);
            } else {
                if state.observe(dag.as_ref(), &pool, &mut next).is_err() {
                    break;
                }
                replay.push(
                    &rows[g * OBS_WIDTH..(g + 1) * OBS_WIDTH],
                    r as f32,
                    Some(&next[..w]),
                );
                std::mem::swap(&mut rows, &mut next);
            }
            steps += 1;
            if replay.len >= cfg.learn_start && steps % cfg.train_every.max(1) == 0 {
                losses.push(update(
                    &mut online,
                    &target,
                    &mut opt,
                    &replay,
                    cfg,
                    &mut rng,
                ));
                updates += 1;
                if updates % cfg.target_sync.max(1) == 0 {
                    target = online.clone();
                }
            }
            if done {
                recent_ratio = 0.95 * recent_ratio + 0.05 * (after / heft_ms);
                break;
            }
        }
        bar.set_message(format!("ε {eps:.2} ms/HEFT (avg) {recent_ratio:.3}"));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let (d, h, wins) = evaluate_on_generated(&online, cfg.seed, cfg.eval_problems);
    let tail = losses.len().saturating_sub(1000);
    let final_loss = if losses.len() > tail {
        losses[tail..].iter().sum::<f64>() / (losses.len() - tail) as f64
    } else {
        0.0
    };
    let report = TrainReport {
        episodes: cfg.episodes,
        steps,
        updates,
        final_loss,
        eval_ratio_ddqn: d,
        eval_ratio_heft: h,
        eval_wins: wins,
        seconds: clock.elapsed().as_secs_f64(),
        weight_hash: online.weight_hash(),
        trace_works,
    };
    (online, report)
}

/// Encode the Q-network as ONNX: input [`INPUT_NAME`] `[N, OBS_WIDTH]` → [`OUTPUT_NAME`]
/// `[N]`, with the layout version, seed and episodes as metadata. O(params).
pub fn export_onnx(net: &Mlp, cfg: &DdqnConfig) -> Result<Vec<u8>, ExportError> {
    let mut io = OnnxIo::new(INPUT_NAME, OUTPUT_NAME);
    io.flatten_output = true;
    io.doc = "gantry WORL-RTGS Double-DQN Q-network: one row of per-GPU features \
              (core/src/dag/observation.rs) per GPU → one Q-value per GPU"
        .into();
    io.metadata = vec![
        ("obs_layout_version".into(), OBS_LAYOUT_VERSION.to_string()),
        ("obs_width".into(), OBS_WIDTH.to_string()),
        ("seed".into(), cfg.seed.to_string()),
        ("episodes".into(), cfg.episodes.to_string()),
    ];
    mlp_model(net, &io)
}

/// `gantry train dag --seed N --out models/worl_ddqn.onnx [--episodes N]`.
#[derive(Clone, Debug, clap::Args)]
pub struct TrainDagArgs {
    /// Seed of weights, problems, exploration and replay.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output ONNX file. The default writes under `target/` so a trial run never replaces
    /// the shipped `models/worl_ddqn.onnx`; name that path to replace it on purpose.
    #[arg(long, default_value = DEFAULT_TRAIN_OUT)]
    pub out: PathBuf,
    /// Training episodes (3,000: the shipped model's recipe, `models/MODEL_CARD.md`).
    #[arg(long, default_value_t = 3000)]
    pub episodes: usize,
    /// WORL traces folder (work pool from instance200…600.csv, speeds from GPU.csv).
    #[arg(long, default_value = "../shared/traces/worl-rtgs-alibaba")]
    pub worl_traces: PathBuf,
    /// No progress bar (progress goes to stderr).
    #[arg(long)]
    pub quiet: bool,
}

/// Where `gantry train dag` writes without `--out`.
pub const DEFAULT_TRAIN_OUT: &str = "target/gantry-train/worl_ddqn.onnx";

/// Run `gantry train dag`: train, export, print the report as JSON.
pub fn run_train_dag(args: &TrainDagArgs) -> anyhow::Result<TrainReport> {
    let cfg = DdqnConfig::new(args.seed, args.episodes);
    let dir = args
        .worl_traces
        .is_dir()
        .then_some(args.worl_traces.as_path());
    if dir.is_none() {
        eprintln!(
            "gantry: {} not found; training on synthetic works and speeds",
            args.worl_traces.display()
        );
    }
    let generator = ProblemGen::from_traces(args.seed, dir);
    let (net, report) = train(&cfg, generator, !args.quiet);
    let bytes = export_onnx(&net, &cfg)?;
    if let Some(parent) = args.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&args.out, bytes)?;
    eprintln!("gantry: DDQN model written to {}", args.out.display());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::tract_model::{InputSpec, TractModel};
    use std::path::Path;

    fn tiny(seed: u64) -> DdqnConfig {
        DdqnConfig {
            learn_start: 200,
            eval_problems: 2,
            replay: 2_000,
            ..DdqnConfig::new(seed, 6)
        }
    }

    /// Same seed → same weights, bit for bit; another seed → other weights.
    #[test]
    fn training_is_deterministic() {
        let run = |seed| {
            let (net, r) = train(&tiny(seed), ProblemGen::new(seed, vec![], vec![]), false);
            assert!(r.updates > 0, "{r:?}");
            assert!(net.is_finite());
            net.weight_hash()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn export_runs_in_tract_and_matches_ndarray() {
        let cfg = tiny(1);
        let net = Mlp::new(&net_config(&cfg), 2);
        let bytes = export_onnx(&net, &cfg).unwrap();
        let mut m = TractModel::from_bytes(
            Path::new("mem"),
            &bytes,
            &[InputSpec::batch(INPUT_NAME, OBS_WIDTH)],
            None,
        )
        .unwrap();
        let x = Array2::from_shape_fn((50, OBS_WIDTH), |(i, j)| ((i * 3 + j) % 7) as f32 / 7.0);
        let want = net.forward(x.view());
        let got = m.run(&[x.view()]).unwrap();
        for (a, b) in got.iter().zip(want.iter()) {
            assert!((a - b).abs() < 1e-4);
        }
    }
}
