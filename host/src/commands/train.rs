//! `gantry train`: trains a learned policy (the PPO placement scorer, or the WORL-RTGS
//! Double DQN) and exports it to ONNX.

use super::proximity::{TrainPlacementArgs, run_train};
use crate::cli::write_line;
use crate::paths::resolve_repo_path;
use crate::train::ddqn::{TrainDagArgs, run_train_dag};
use clap::Subcommand;

/// The policies `gantry train` trains.
#[derive(Subcommand, Debug)]
pub enum TrainCommand {
    /// PPO GPU placement policy on Proximity-DRL's environment, exported to ONNX.
    Placement(TrainPlacementArgs),
    /// The WORL-RTGS Double DQN (plans DAGs task by task); the defaults are the shipped
    /// model's recipe, written to target/gantry-train/worl_ddqn.onnx unless --out names a path.
    Dag(TrainDagArgs),
}

/// Runs `gantry train …`.
pub fn run(command: &TrainCommand) -> anyhow::Result<()> {
    match command {
        TrainCommand::Placement(args) => write_line(run_train(args)?),
        TrainCommand::Dag(args) => {
            let mut args = args.clone();
            args.worl_traces = resolve_repo_path(&args.worl_traces);
            let report = run_train_dag(&args)?;
            write_line(serde_json::to_string_pretty(&report)?)
        }
    }
}
