//! `gantry compare`: several job orders × placers × DAG planners on one workload, one row
//! each; or, with `--scenario proximity-drl`, the placers on Proximity-DRL's own environment.

use super::Cli;
use super::proximity::{SCENARIO_FLAG_IDS, ScenarioArgs, run_scenario, table};
use super::shared::{ppo_fallback, rows_of, simulate_all, write_plots};
use crate::cli::{refuse_flags, write_line};
use crate::lineup;
use crate::registry::{OrderKind, PlacerKind};
use crate::sim::{DagPlannerKind, SchedulerSpec};
use crate::workload::{WORKLOAD_FLAG_IDS, WorkloadArgs};
use anyhow::Context;
use clap::{Args, CommandFactory};
use std::path::PathBuf;

/// `gantry compare`'s flags.
#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Job orders, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [OrderKind::Fifo])]
    orders: Vec<OrderKind>,
    /// Placers, comma separated (default: first-fit on a trace; all six on a scenario).
    #[arg(long, value_enum, value_delimiter = ',')]
    placements: Vec<PlacerKind>,
    /// DAG planners, comma separated: one row per order × placer × planner.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [DagPlannerKind::Heft])]
    dag_planners: Vec<DagPlannerKind>,
    /// Also run the combined scheduler `gantry` (TIAS + ppo-gavel + WORL), as the first row.
    #[arg(long)]
    gantry: bool,
    /// Write SVG charts into this folder (see `simulate --plot`).
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
    /// With `ppo` among the placers: if its model cannot be loaded, run proximity-greedy
    /// under the label `ppo→greedy` instead of failing.
    #[arg(long)]
    allow_fallback: bool,
    /// Instead of a trace: a placement scenario (`proximity-drl`, their environment).
    #[command(flatten)]
    scenario: ScenarioArgs,
}

/// `compare`: a scenario refuses the trace flags, a trace run refuses the scenario's.
pub fn run(args: &CompareArgs, matches: &clap::ArgMatches) -> anyhow::Result<()> {
    let command = Cli::command();
    let command = command
        .find_subcommand("compare")
        .context("the compare subcommand")?;
    if args.scenario.scenario.is_some() {
        let mut refused: Vec<&str> = WORKLOAD_FLAG_IDS.to_vec();
        refused.extend(["orders", "dag_planners", "gantry", "plot"]);
        refuse_flags(
            command,
            matches,
            &refused,
            "compare --scenario proximity-drl",
            "it runs Proximity-DRL's own 32-GPU environment and 30-job episodes: choose them \
             with --seeds, --jobs and --variant, the placers with --placements",
        )?;
        let mut scenario = args.scenario.clone();
        scenario.json = args.json;
        scenario.allow_fallback = args.allow_fallback;
        if !args.placements.is_empty() {
            scenario.placements = args.placements.clone();
        }
        let run = run_scenario(&scenario)?;
        return if args.json {
            write_line(serde_json::to_string(&run.rows)?)
        } else {
            write_line(&run.info)?;
            write_line(table(&run.rows))
        };
    }
    refuse_flags(
        command,
        matches,
        &SCENARIO_FLAG_IDS,
        "compare on a trace",
        "those flags belong to --scenario proximity-drl",
    )?;
    let placements = if args.placements.is_empty() {
        vec![PlacerKind::FirstFit]
    } else {
        args.placements.clone()
    };
    let mut schedulers = Vec::new();
    if args.gantry {
        schedulers.push(SchedulerSpec::GANTRY);
    }
    schedulers.extend(lineup::schedulers(
        &args.orders,
        &placements,
        &args.dag_planners,
    ));
    let placers: Vec<PlacerKind> = schedulers.iter().map(|s| s.placer).collect();
    let fallback = ppo_fallback(&placers, args.allow_fallback)?;
    let workload = args.workload.load()?;
    let outputs = simulate_all(&workload, &schedulers, args.workload.quiet)?;
    let rows = rows_of(&workload, &outputs, fallback.as_ref());
    write_plots(args.plot.as_deref(), &workload, &outputs, &rows)?;
    if args.json {
        write_line(serde_json::to_string(&rows)?)
    } else {
        write_line(workload.describe())?;
        write_line(lineup::full_table(&rows))
    }
}
