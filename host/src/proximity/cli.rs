//! Command-line arguments and drivers for the Proximity-DRL scenario and PPO training.

use super::compare::{ScenarioRow, compare, load_anchor_episodes};
use super::env::Variant;
use super::jobs::{generate_episode, load_anchor_sequences, load_models};
use crate::learn::ppo::{Credit, PpoConfig, train, write_curve, write_model};
use crate::learn::scorer::{DEFAULT_PPO_MODEL, TractScorer};
use crate::policy::PlacerKind;
use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Default location of their 35-model table.
pub const DEFAULT_MODEL_TABLE: &str = "../shared/traces/proximity-drl/DNN_properties.csv";

/// Scenarios `compare --scenario` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// Proximity-DRL's 32-GPU environment, 30 jobs per episode, FCFS.
    ProximityDrl,
}

/// `gantry compare --scenario …` arguments.
#[derive(Args, Debug, Clone)]
pub struct ScenarioArgs {
    /// Scenario to run.
    #[arg(long, value_enum)]
    pub scenario: Option<Scenario>,
    /// Seeds: `A-B`, `A` or a comma list.
    #[arg(long, default_value = "0-19")]
    pub seeds: String,
    /// Their job sequences (`job_sequences_seeds0-19.csv`); without it gantry's own seeded
    /// generator draws the episodes.
    #[arg(long)]
    pub jobs: Option<PathBuf>,
    /// Placers (set from `compare --placements`; default all six).
    #[arg(skip = default_scenario_placers())]
    pub placements: Vec<PlacerKind>,
    /// Environment: their code's quirks (`compat`) or fixed.
    #[arg(long, value_enum, default_value_t = Variant::Compat)]
    pub variant: Variant,
    /// PPO model for the `ppo` placer.
    #[arg(long, default_value = DEFAULT_PPO_MODEL)]
    pub model: PathBuf,
    /// Their DNN model table (for the generator).
    #[arg(long, default_value = DEFAULT_MODEL_TABLE)]
    pub model_table: PathBuf,
    /// Print a JSON array instead of a table (set from `compare --json`).
    #[arg(skip)]
    pub json: bool,
}

/// The placers a scenario compares unless `--placements` names others.
pub fn default_scenario_placers() -> Vec<PlacerKind> {
    vec![
        PlacerKind::FirstFit,
        PlacerKind::Random,
        PlacerKind::LoadBalance,
        PlacerKind::Greedy,
        PlacerKind::Optimal,
        PlacerKind::Ppo,
    ]
}

/// `gantry train placement` arguments.
#[derive(Args, Debug, Clone)]
pub struct TrainPlacementArgs {
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the ONNX model.
    #[arg(long, default_value = DEFAULT_PPO_MODEL)]
    pub out: PathBuf,
    /// Policy updates.
    #[arg(long)]
    pub updates: Option<usize>,
    /// Episodes per update.
    #[arg(long)]
    pub episodes_per_update: Option<usize>,
    /// Imitation (behaviour-cloning) updates before PPO; 0 = pure PPO.
    #[arg(long)]
    pub bc_updates: Option<usize>,
    /// PPO Adam step size (default 1e-4).
    #[arg(long)]
    pub lr: Option<f32>,
    /// Surrogate clip ε (default 0.2).
    #[arg(long)]
    pub clip: Option<f32>,
    /// Entropy bonus at the start (default 0.001).
    #[arg(long)]
    pub ent_coef: Option<f32>,
    /// Critic-only updates at the start of PPO (default 20).
    #[arg(long)]
    pub critic_warmup: Option<usize>,
    /// Credit assignment: GAE over the episode, or per job against the optimum's reward.
    #[arg(long, value_enum)]
    pub credit: Option<Credit>,
    /// Weight of the fragmentation term under `--credit job-optimum` (default 0).
    #[arg(long)]
    pub frag_coef: Option<f32>,
    /// Learning-curve CSV (default: the model path with `.curve.csv`).
    #[arg(long)]
    pub curve: Option<PathBuf>,
    /// Environment variant to train on.
    #[arg(long, value_enum, default_value_t = Variant::Compat)]
    pub variant: Variant,
    /// Their DNN model table.
    #[arg(long, default_value = DEFAULT_MODEL_TABLE)]
    pub model_table: PathBuf,
}

/// Parses `A-B`, `A` or `A,B,C`.
pub fn parse_seeds(s: &str) -> anyhow::Result<Vec<u64>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((a, b)) = part.split_once('-') {
            let (a, b): (u64, u64) = (a.trim().parse()?, b.trim().parse()?);
            anyhow::ensure!(a <= b && b - a < 1_000_000, "bad seed range {part}");
            out.extend(a..=b);
        } else {
            out.push(part.parse()?);
        }
    }
    anyhow::ensure!(!out.is_empty(), "no seeds in {s:?}");
    Ok(out)
}

/// Runs the scenario comparison; returns the rows (the caller prints them).
pub fn run_scenario(args: &ScenarioArgs) -> anyhow::Result<Vec<ScenarioRow>> {
    let seeds = parse_seeds(&args.seeds)?;
    let (episodes, anchor) = match &args.jobs {
        Some(path) => {
            let all = load_anchor_sequences(path)?;
            let eps: Vec<_> = seeds
                .iter()
                .map(|s| {
                    all.iter()
                        .find(|(seed, _)| seed == s)
                        .cloned()
                        .ok_or_else(|| {
                            anyhow::anyhow!("{}: no episode for seed {s}", path.display())
                        })
                })
                .collect::<anyhow::Result<_>>()?;
            let ep_file = path.with_file_name("episodes_seeds0-19_all.csv");
            let anchor = if args.variant == Variant::Compat && ep_file.is_file() {
                Some(load_anchor_episodes(&ep_file)?)
            } else {
                None
            };
            (eps, anchor)
        }
        None => {
            let models = load_models(&args.model_table)?;
            (
                seeds
                    .iter()
                    .map(|&s| (s, generate_episode(&models, s)))
                    .collect(),
                None,
            )
        }
    };
    let scorer = if args.placements.contains(&PlacerKind::Ppo) {
        TractScorer::load_or_fallback(&args.model)
    } else {
        TractScorer::unloaded()
    };
    compare(
        &episodes,
        &args.placements,
        args.variant,
        &scorer,
        anchor.as_ref(),
    )
}

/// Formats rows as a text table.
pub fn table(rows: &[ScenarioRow]) -> String {
    let mut t = comfy_table::Table::new();
    t.set_header([
        "placement",
        "comm/job",
        "± std",
        "opt ratio",
        "vs optimal",
        "JCT (theirs)",
        "JCT−arr",
        "makespan",
        "anchor comm/job",
        "anchor JCT",
        "anchor makespan",
    ]);
    let opt = |v: Option<f64>, d: usize| v.map_or("—".to_string(), |x| format!("{x:.d$}"));
    for r in rows {
        t.add_row([
            r.placement.clone(),
            format!("{:.4}", r.comm_cost_per_job),
            format!("{:.4}", r.comm_cost_std),
            format!("{:.4}", r.optimal_ratio),
            opt(r.vs_optimal_placer, 4),
            format!("{:.2}", r.avg_jct),
            format!("{:.2}", r.jct_minus_arrival),
            format!("{:.2}", r.makespan),
            opt(r.anchor_comm_cost_per_job, 4),
            opt(r.anchor_avg_jct, 2),
            opt(r.anchor_makespan, 2),
        ]);
    }
    t.to_string()
}

/// Trains, exports and writes the model and learning curve; returns a one-line summary.
pub fn run_train(args: &TrainPlacementArgs) -> anyhow::Result<String> {
    let models = load_models(&args.model_table)?;
    let mut cfg = PpoConfig {
        seed: args.seed,
        variant: args.variant,
        ..PpoConfig::default()
    };
    if let Some(u) = args.updates {
        cfg.updates = u;
    }
    if let Some(b) = args.bc_updates {
        cfg.bc_updates = b;
    }
    if let Some(e) = args.episodes_per_update {
        cfg.episodes_per_update = e;
    }
    cfg.lr = args.lr.unwrap_or(cfg.lr);
    cfg.clip = args.clip.unwrap_or(cfg.clip);
    cfg.ent_coef = args.ent_coef.unwrap_or(cfg.ent_coef);
    cfg.critic_warmup = args.critic_warmup.unwrap_or(cfg.critic_warmup);
    cfg.credit = args.credit.unwrap_or(cfg.credit);
    cfg.frag_coef = args.frag_coef.unwrap_or(cfg.frag_coef);
    let bar = indicatif::ProgressBar::new(cfg.updates as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let start = std::time::Instant::now();
    let trained = train(&models, &cfg, |row| {
        bar.set_message(format!(
            "return {:.3} comm/job {:.4} (opt {:.4}) H {:.3}",
            row.mean_return, row.comm_per_job, row.optimum_per_job, row.entropy
        ));
        bar.inc(1);
    })?;
    bar.finish();
    let secs = start.elapsed().as_secs_f64();
    let meta = vec![
        ("producer".to_string(), "gantry train placement".to_string()),
        ("seed".to_string(), args.seed.to_string()),
        ("updates".to_string(), cfg.updates.to_string()),
        (
            "episodes_per_update".to_string(),
            cfg.episodes_per_update.to_string(),
        ),
        ("variant".to_string(), format!("{:?}", cfg.variant)),
        ("bc_updates".to_string(), cfg.bc_updates.to_string()),
        ("credit".to_string(), format!("{:?}", cfg.credit)),
        ("lr".to_string(), cfg.lr.to_string()),
        ("clip".to_string(), cfg.clip.to_string()),
        ("ent_coef".to_string(), cfg.ent_coef.to_string()),
        ("critic_warmup".to_string(), cfg.critic_warmup.to_string()),
        ("frag_coef".to_string(), cfg.frag_coef.to_string()),
        (
            "weight_hash".to_string(),
            format!("{:016x}", trained.policy.weight_hash()),
        ),
    ];
    let bytes = trained.policy.to_onnx(meta)?;
    write_model(&args.out, &bytes)?;
    let curve = args
        .curve
        .clone()
        .unwrap_or_else(|| args.out.with_extension("curve.csv"));
    write_curve(&curve, &trained.curve)?;
    let last = trained.curve.last();
    Ok(format!(
        "wrote {} ({} bytes) and {}; {} updates in {secs:.1} s; weight hash {:016x}; last sampled comm/job {:.4} (optimum {:.4})",
        args.out.display(),
        bytes.len(),
        curve.display(),
        cfg.updates,
        trained.policy.weight_hash(),
        last.map_or(f64::NAN, |r| r.comm_per_job),
        last.map_or(f64::NAN, |r| r.optimum_per_job),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse() {
        assert_eq!(parse_seeds("0-3").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_seeds("5").unwrap(), vec![5]);
        assert_eq!(parse_seeds("1,4-5").unwrap(), vec![1, 4, 5]);
        assert!(parse_seeds("5-1").is_err());
        assert!(parse_seeds("").is_err());
    }
}
