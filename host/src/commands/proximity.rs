//! The Proximity-DRL pieces of two commands: `gantry compare --scenario proximity-drl` (its
//! arguments, the run over their episodes, the table) and `gantry train placement` (PPO on
//! their environment, the model exported to ONNX).

use super::shared::{PpoModel, check_ppo_model};
use crate::learn::scorer::{DEFAULT_PPO_MODEL, TractScorer};
use crate::paths::{default_training_out, require_input};
use crate::proximity::compare::{
    ScenarioInfo, ScenarioRow, compare, kind_name, load_anchor_episodes,
};
use crate::proximity::env::Variant;
use crate::proximity::jobs::{generate_episode, load_anchor_sequences, load_models};
use crate::registry::PlacerKind;
use crate::train::ppo::{Credit, PpoConfig, train, write_curve, write_model};
use clap::{Args, ValueEnum};
use std::io::IsTerminal as _;
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
    /// PPO model for the `ppo` placer (relative paths also resolve against the repository).
    #[arg(long, default_value = DEFAULT_PPO_MODEL)]
    pub model: PathBuf,
    /// Their DNN model table (for the generator; relative paths also resolve against the
    /// repository).
    #[arg(long, default_value = DEFAULT_MODEL_TABLE)]
    pub model_table: PathBuf,
    /// Print a JSON array instead of a table (set from `compare --json`).
    #[arg(skip)]
    pub json: bool,
    /// Run proximity-greedy under the label `ppo→greedy` when the PPO model cannot be loaded
    /// (set from `compare --allow-fallback`); otherwise that is an error.
    #[arg(skip)]
    pub allow_fallback: bool,
}

/// The clap ids of the scenario's own flags (refused on a trace run).
pub const SCENARIO_FLAG_IDS: [&str; 5] = ["seeds", "jobs", "variant", "model", "model_table"];

/// A scenario run: what ran, and one row per placer.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioRun {
    /// What ran.
    pub info: ScenarioInfo,
    /// One row per placer, each carrying `info` as `run`.
    pub rows: Vec<ScenarioRow>,
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

/// `gantry train placement` arguments. Every default is the recipe of the shipped
/// `models/proximity_ppo.onnx` ([`PpoConfig::shipped`], `models/MODEL_CARD.md`), so the
/// command with no flags reproduces it byte for byte — but writes it under `target/`.
#[derive(Args, Debug, Clone)]
pub struct TrainPlacementArgs {
    /// Seed of every random choice.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the ONNX model [default: target/trained/proximity_ppo.onnx in the
    /// repository; `--out models/proximity_ppo.onnx` replaces the shipped model].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Policy updates [default: 300, the shipped recipe].
    #[arg(long)]
    pub updates: Option<usize>,
    /// Episodes per update [default: 16].
    #[arg(long)]
    pub episodes_per_update: Option<usize>,
    /// Imitation (behaviour-cloning) updates before PPO; 0 = pure PPO [default: 0].
    #[arg(long)]
    pub bc_updates: Option<usize>,
    /// PPO Adam step size [default: 3e-4].
    #[arg(long)]
    pub lr: Option<f32>,
    /// Surrogate clip ε [default: 0.2].
    #[arg(long)]
    pub clip: Option<f32>,
    /// Entropy bonus at the start [default: 0.001].
    #[arg(long)]
    pub ent_coef: Option<f32>,
    /// Critic-only updates at the start of PPO [default: 0].
    #[arg(long)]
    pub critic_warmup: Option<usize>,
    /// Credit assignment: GAE over the episode, or per job against the optimum's reward
    /// [default: job-optimum].
    #[arg(long, value_enum)]
    pub credit: Option<Credit>,
    /// Weight of the fragmentation term under `--credit job-optimum` [default: 0.2].
    #[arg(long)]
    pub frag_coef: Option<f32>,
    /// Learning-curve CSV (default: the model path with `.curve.csv`).
    #[arg(long)]
    pub curve: Option<PathBuf>,
    /// Environment variant to train on.
    #[arg(long, value_enum, default_value_t = Variant::Compat)]
    pub variant: Variant,
    /// Their DNN model table (relative paths also resolve against the repository).
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

/// Runs the scenario comparison; returns what ran and the rows (the caller prints them).
/// A `ppo` placer whose model cannot be loaded is an error unless `allow_fallback`, and
/// then its row is labelled `ppo→greedy (fallback: …)`.
pub fn run_scenario(args: &ScenarioArgs) -> anyhow::Result<ScenarioRun> {
    let seeds = parse_seeds(&args.seeds)?;
    let (episodes, anchor, source) = match &args.jobs {
        Some(path) => {
            let path = require_input(path, "--jobs")?;
            let all = load_anchor_sequences(&path)?;
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
            let source = format!("Proximity-DRL's recorded sequences {}", path.display());
            (eps, anchor, source)
        }
        None => {
            let table = require_input(&args.model_table, "--model-table")?;
            let models = load_models(&table)?;
            let eps = seeds
                .iter()
                .map(|&s| (s, generate_episode(&models, s)))
                .collect();
            let source = format!(
                "gantry's own seeded generator of their 30-job episodes (model table {}); \
                 pass --jobs FILE for their recorded sequences",
                table.display()
            );
            (eps, None, source)
        }
    };
    let mut fallback = None;
    let scorer = if args.placements.contains(&PlacerKind::Ppo) {
        match check_ppo_model(&args.model, args.allow_fallback)? {
            PpoModel::Loaded => TractScorer::load(&args.model)?,
            PpoModel::Fallback(label) => {
                fallback = Some(label);
                TractScorer::unloaded()
            }
        }
    } else {
        TractScorer::unloaded()
    };
    let info = ScenarioInfo {
        scenario: "proximity-drl",
        variant: args.variant,
        seeds: args.seeds.clone(),
        episodes: source,
        model: (args.placements.contains(&PlacerKind::Ppo) && fallback.is_none()).then(|| {
            crate::learn::resolve_model_path(&args.model)
                .display()
                .to_string()
        }),
        gantry_version: env!("CARGO_PKG_VERSION"),
    };
    let mut rows = compare(
        &episodes,
        &args.placements,
        args.variant,
        &scorer,
        anchor.as_ref(),
    )?;
    let ppo = kind_name(PlacerKind::Ppo);
    for row in &mut rows {
        row.run = Some(info.clone());
        if let Some(label) = fallback.as_ref().filter(|_| row.placement == ppo) {
            row.placement = label.clone();
        }
    }
    Ok(ScenarioRun { info, rows })
}

/// Formats rows as a markdown table, like every other gantry table.
pub fn table(rows: &[ScenarioRow]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
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

/// The training configuration the flags describe: the shipped recipe with each given flag
/// in place of its value.
pub fn train_config(args: &TrainPlacementArgs) -> PpoConfig {
    let shipped = PpoConfig::shipped();
    PpoConfig {
        seed: args.seed,
        variant: args.variant,
        updates: args.updates.unwrap_or(shipped.updates),
        bc_updates: args.bc_updates.unwrap_or(shipped.bc_updates),
        episodes_per_update: args
            .episodes_per_update
            .unwrap_or(shipped.episodes_per_update),
        lr: args.lr.unwrap_or(shipped.lr),
        clip: args.clip.unwrap_or(shipped.clip),
        ent_coef: args.ent_coef.unwrap_or(shipped.ent_coef),
        critic_warmup: args.critic_warmup.unwrap_or(shipped.critic_warmup),
        credit: args.credit.unwrap_or(shipped.credit),
        frag_coef: args.frag_coef.unwrap_or(shipped.frag_coef),
        ..shipped
    }
}

/// Progress of `train placement` on stderr: a bar on a terminal, else one line every
/// twentieth of the run (so a log or CI shows it is alive).
struct TrainProgress {
    bar: Option<indicatif::ProgressBar>,
    every: usize,
    total: usize,
}

impl TrainProgress {
    fn new(total: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar
        });
        Self {
            bar,
            every: total.div_ceil(20).max(1),
            total,
        }
    }

    fn update(&self, row: &crate::train::ppo::CurveRow) {
        let msg = format!(
            "return {:.3} comm/job {:.4} (opt {:.4}) H {:.3}",
            row.mean_return, row.comm_per_job, row.optimum_per_job, row.entropy
        );
        match &self.bar {
            Some(bar) => {
                bar.set_message(msg);
                bar.inc(1);
            }
            None if row.update.is_multiple_of(self.every) || row.update == self.total => eprintln!(
                "gantry: train placement: update {}/{} ({:.0} s): {msg}",
                row.update, self.total, row.seconds
            ),
            None => {}
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish();
        }
    }
}

/// Trains, exports and writes the model and learning curve; returns a one-line summary.
/// Writes to `--out`, or under the repository's `target/` ([`default_training_out`]),
/// never over the shipped model unless `--out` names it.
pub fn run_train(args: &TrainPlacementArgs) -> anyhow::Result<String> {
    let models = load_models(&require_input(&args.model_table, "--model-table")?)?;
    let cfg = train_config(args);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_training_out("proximity_ppo.onnx"));
    eprintln!(
        "gantry: training the PPO placement scorer: seed {}, {} imitation + {} PPO updates × \
         {} episodes ({}); writing {}",
        cfg.seed,
        cfg.bc_updates,
        cfg.updates,
        cfg.episodes_per_update,
        if cfg == PpoConfig::shipped() {
            "the shipped recipe"
        } else {
            "flags differ from the shipped recipe"
        },
        out.display()
    );
    if cfg.bc_updates > 0 {
        eprintln!(
            "gantry: train placement: {} imitation updates first (no progress shown)",
            cfg.bc_updates
        );
    }
    let progress = TrainProgress::new(cfg.updates);
    let start = std::time::Instant::now();
    let trained = train(&models, &cfg, |row| progress.update(row))?;
    progress.finish();
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
    write_model(&out, &bytes)?;
    let curve = args
        .curve
        .clone()
        .unwrap_or_else(|| out.with_extension("curve.csv"));
    write_curve(&curve, &trained.curve)?;
    let last = trained.curve.last();
    Ok(format!(
        "wrote {} ({} bytes) and {}; {} updates in {secs:.1} s; weight hash {:016x}; last sampled comm/job {:.4} (optimum {:.4})",
        out.display(),
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
