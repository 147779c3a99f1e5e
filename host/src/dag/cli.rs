//! Arguments of `gantry dag` (clap derive), and their translation into loader and planner
//! options. The lead wires the subcommand; this keeps the flags next to the code they drive.

use super::{Format, GpuSpeeds, LoadOptions, PlannerKind, PlannerOptions};
use crate::gpu::Device;
use std::path::PathBuf;

/// `gantry dag --input PATH --format worl|tpch|stg|matrix [--gpus N] [--degree D]
/// [--planners worl-ls,heft,...] [--budget-ms N] [--seed N] [--device cuda|cpu|auto] [--json]
/// [--gantt FILE.svg]`: plan one DAG with several planners.
#[derive(Clone, Debug, clap::Args)]
pub struct DagArgs {
    /// Input file (or folder for `--format matrix`).
    #[arg(long)]
    pub input: PathBuf,
    /// Input format.
    #[arg(long, value_enum)]
    pub format: Format,
    /// GPUs (ignored by `matrix`: its GPUs are its columns). Default by format, as in
    /// `gantry dag-table`: 50 for `worl` (the paper's smaller cluster), 10 for `tpch`, 4 for
    /// `stg`.
    #[arg(long)]
    pub gpus: Option<usize>,
    /// Synthetic fan-in for inputs without edges (WORL slices; the paper uses 1, 3, 100).
    #[arg(long, default_value_t = 3)]
    pub degree: u32,
    /// Planners to run, comma separated (default: gantry's default planner `worl-ls` and the
    /// five list schedulers it must beat).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = DEFAULT_PLANNERS)]
    pub planners: Vec<PlannerKind>,
    /// Seed of synthetic edges, WOA and random.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// WORL: tasks to take (default N of instanceN.csv).
    #[arg(long)]
    pub tasks: Option<usize>,
    /// TPC-H: one query (1..=22) instead of the batch of all 22.
    #[arg(long)]
    pub query: Option<u32>,
    /// Link bandwidth in data units per ms (default infinite; `matrix` uses its file).
    #[arg(long)]
    pub bandwidth: Option<f64>,
    /// WORL GPU.csv for GPU speeds (default: GPU.csv next to the input, else uniform).
    #[arg(long)]
    pub gpu_csv: Option<PathBuf>,
    /// Uniform GPU speeds (1.0) even if a GPU.csv is found.
    #[arg(long)]
    pub uniform_speeds: bool,
    /// WOA whales, 1 to 64 (the host's population capacity, `WOA_POP`); more is refused at
    /// parse time rather than silently clamped.
    #[arg(long, default_value_t = 30, value_parser = woa_population_parser())]
    pub woa_population: usize,
    /// WOA iterations.
    #[arg(long, default_value_t = 100)]
    pub woa_iterations: u32,
    /// `heft-lookahead`: try only each task's this-many earliest-finish GPUs (0 = all, the
    /// paper's algorithm). Default with `--lookahead-children` unset: all GPUs and children
    /// up to a work of 2^27 (tasks × GPUs × fan-out × GPUs), else 8 and 8.
    #[arg(long)]
    pub lookahead_gpus: Option<usize>,
    /// `heft-lookahead`: look only at each task's this-many highest-ranked children (0 = all).
    #[arg(long)]
    pub lookahead_children: Option<usize>,
    /// `worl-ls`: search budget in ms, counted as work (deterministic: the same plan on every
    /// machine; the wall time is about this). Default: 1 ms per task, at least 1,000. At
    /// most a day ([`MAX_BUDGET_MS`]).
    #[arg(long, value_parser = budget_parser())]
    pub budget_ms: Option<u64>,
    /// `worl`/`worl-eft`: no HEFT plan in the initial population (WOA + DDQN only).
    #[arg(long)]
    pub no_heft_seed: bool,
    /// `ddqn`/`worl`/`worl-eft` without a usable model: run WOA alone and label the row
    /// `woa (fallback for …)` instead of failing.
    #[arg(long)]
    pub allow_fallback: bool,
    /// `worl-ls`: do not seed the search with the list schedulers' plans.
    #[arg(long)]
    pub no_list_seeds: bool,
    /// `worl-ls`: DDQN plans in the initial population (greedy + this many perturbed; 0 =
    /// none, the default: they did not improve the search, see docs/worl-rtgs.md).
    #[arg(long, default_value_t = 0)]
    pub ddqn_seeds: usize,
    /// Where WOA evaluates its populations: `cuda` (GPU 0, an error without one), `cpu`, or
    /// `auto` (the GPU when usable, else a one-line notice and the CPU). Same results on all.
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
    /// The DDQN's ONNX Q-network (planners `ddqn`, `worl`; missing → WOA alone, with a note).
    #[arg(long, default_value = super::worl_rtgs::DEFAULT_MODEL)]
    pub ddqn_model: PathBuf,
    /// Print a JSON array of reports instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also draw each planner's plan as a Gantt chart (one panel per planner) into this SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub gantt: Option<PathBuf>,
}

/// GPUs when `--gpus` is not given: the `gantry dag-table` setting of each format.
pub fn default_gpus(format: Format) -> usize {
    match format {
        Format::Worl => 50,
        Format::Tpch => 10,
        Format::Stg => 4,
        // Ignored: the matrix's columns are its GPUs.
        Format::Matrix => 3,
    }
}

/// The default `--planners`.
pub const DEFAULT_PLANNERS: [PlannerKind; 6] = [
    PlannerKind::WorlLs,
    PlannerKind::Heft,
    PlannerKind::Peft,
    PlannerKind::Cpop,
    PlannerKind::HeftLookahead,
    PlannerKind::Ippts,
];

/// The largest `--budget-ms`: a day. The search spends its whole budget, so a larger one
/// (`--budget-ms 18446744073709551615` searched for ever) is a typo, not a plan.
pub const MAX_BUDGET_MS: u64 = 86_400_000;

/// `--budget-ms`: an integer in `0..=MAX_BUDGET_MS`.
fn budget_parser() -> clap::builder::RangedU64ValueParser<u64> {
    clap::builder::RangedU64ValueParser::new().range(0..=MAX_BUDGET_MS)
}

/// `--woa-population`: an integer in `1..=WOA_POP`.
fn woa_population_parser() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..=super::planners::WOA_POP as u64)
}

impl DagArgs {
    /// Loader options from the flags.
    pub fn load_options(&self) -> LoadOptions {
        let speeds = match (&self.gpu_csv, self.uniform_speeds) {
            (_, true) => GpuSpeeds::Uniform,
            (Some(p), false) => GpuSpeeds::WorlCsv(p.clone()),
            (None, false) => GpuSpeeds::Auto,
        };
        LoadOptions {
            format: self.format,
            gpus: self.gpus.unwrap_or(default_gpus(self.format)),
            degree: self.degree,
            seed: self.seed,
            tasks: self.tasks,
            query: self.query,
            bandwidth: self.bandwidth,
            speeds,
        }
    }

    /// Planner options from the flags.
    pub fn planner_options(&self) -> PlannerOptions {
        PlannerOptions {
            seed: self.seed,
            woa_population: self.woa_population,
            woa_iterations: self.woa_iterations,
            device: self.device,
            ddqn_model: self.ddqn_model.clone(),
            lookahead: match (self.lookahead_gpus, self.lookahead_children) {
                (None, None) => None,
                (gpus, children) => Some(gantry_core::dag::LookaheadConfig {
                    candidate_gpus: gpus.unwrap_or(0),
                    max_children: children.unwrap_or(0),
                }),
            },
            allow_fallback: self.allow_fallback,
            worl: super::worl_rtgs::WorlConfig {
                heft_seed: !self.no_heft_seed,
                ..super::worl_rtgs::WorlConfig::new(self.seed)
            },
            search: super::SearchOptions {
                budget_ms: self.budget_ms,
                list_seeds: !self.no_list_seeds,
                ddqn_seeds: self.ddqn_seeds,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        dag: DagArgs,
    }

    #[test]
    fn parses_the_documented_command_line() {
        let cli = Cli::parse_from([
            "gantry",
            "--input",
            "x.csv",
            "--format",
            "worl",
            "--gpus",
            "500",
            "--degree",
            "100",
            "--planners",
            "heft,woa-heft,random",
            "--seed",
            "7",
            "--json",
            "--device",
            "cpu",
        ]);
        let a = cli.dag;
        assert_eq!(
            a.planners,
            vec![PlannerKind::Heft, PlannerKind::WoaHeft, PlannerKind::Random]
        );
        assert_eq!(a.load_options().gpus, 500);
        assert_eq!(a.planner_options().seed, 7);
        assert!(a.json);
        assert_eq!(a.planner_options().device, Device::Cpu);
    }

    /// A minimal command line with `flag value` added.
    fn with_flag(flag: &str, value: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from([
            "gantry", "--input", "x.csv", "--format", "worl", flag, value,
        ])
    }

    #[test]
    fn woa_population_beyond_capacity_is_refused_not_clamped() {
        let with = |n: &str| with_flag("--woa-population", n);
        assert_eq!(with("64").unwrap().dag.woa_population, 64);
        for bad in ["0", "65", "4096"] {
            let err = with(bad).err().unwrap().to_string();
            assert!(
                err.contains("--woa-population") && err.contains("1..=64"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_budget_beyond_a_day_is_refused() {
        let with = |n: &str| with_flag("--budget-ms", n);
        assert_eq!(with("0").unwrap().dag.budget_ms, Some(0));
        assert_eq!(with("86400000").unwrap().dag.budget_ms, Some(MAX_BUDGET_MS));
        for bad in ["86400001", "18446744073709551615", "1.5", "day"] {
            let err = with(bad).err().unwrap().to_string();
            assert!(err.contains("--budget-ms"), "{err}");
        }
    }
}
