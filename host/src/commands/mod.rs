//! The `gantry` commands, one module per subcommand: each owns its arguments and its run,
//! built from the layers below (workloads, the simulator, the methods, the reports, the
//! adapters). `main.rs` only parses, dispatches and prints the error.

pub mod compare;
pub mod dag;
pub mod dag_table;
pub mod frames;
pub mod proximity;
pub mod replay;
pub mod shared;
pub mod simulate;
pub mod tiresias_check;
pub mod train;

use clap::{Parser, Subcommand};

/// gantry: a GPU-cluster scheduling core (TIAS job order, Proximity-DRL placement,
/// WORL-RTGS DAG planning) and its trace-driven simulator.
#[derive(Parser, Debug)]
#[command(version, about)]
pub struct Cli {
    #[command(subcommand)]
    /// The subcommand.
    pub command: Command,
}

/// The subcommands, one module each.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Simulate a workload: with no scheduler flags, the combined scheduler `gantry` beside
    /// the baselines on the bundled mixed sample; else one order + placer + DAG planner.
    Simulate(simulate::SimulateArgs),
    /// Simulate several job orders, placers and DAG planners on the same trace, cluster and
    /// seed.
    Compare(compare::CompareArgs),
    /// Re-run the core on a recorded event stream; exit 0 only if every decision matches.
    Replay(replay::ReplayArgs),
    /// Frame streams for firmware: convert a recording, serve, corrupt, compare.
    #[command(subcommand)]
    Frames(frames::FramesCommand),
    /// Plan a DAG workload on heterogeneous GPUs with several planners: gantry's default
    /// `worl-ls` (WOA + local search, budgeted), the list schedulers HEFT, PEFT, CPOP,
    /// lookahead HEFT and IPPTS, WOA and WORL-RTGS variants, the DDQN, random.
    Dag(crate::dag::cli::DagArgs),
    /// Cross-check against the Tiresias simulator's results (the peer anchor): its quirks
    /// copied, per-job identity, gantry's own semantics, run times.
    TiresiasCheck(tiresias_check::TiresiasCheckArgs),
    /// Train a learned policy.
    #[command(subcommand)]
    Train(train::TrainCommand),
    /// The WORL-RTGS acceptance table (markdown): every planner on the WORL slices, TPC-H, STG.
    DagTable(crate::dag::table::DagTableArgs),
    /// Schedule a Slurm partition whose jobs are submitted held (`sbatch --hold`): gantry
    /// orders and places them and releases each onto the nodes it chose.
    Slurm(crate::slurm::SlurmArgs),
}
