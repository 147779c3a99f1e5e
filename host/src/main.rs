//! `gantry`: the command-line front end. It parses the arguments, dispatches to the
//! subcommand's module (`gantry::commands::*`) and prints an error as one line.

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches};
use gantry::cli::{error_text, is_closed_pipe};
use gantry::commands::{
    Cli, Command, compare, dag, dag_table, frames, replay, simulate, tiresias_check, train,
};
use std::process::ExitCode;

/// Runs the parsed command line; `matches` are its raw matches (for `compare`'s refusal of
/// flags that do not apply). The exit status: 1 when `replay` or `frames diff` finds a
/// difference.
fn run(cli: &Cli, matches: &clap::ArgMatches) -> anyhow::Result<ExitCode> {
    let done = |r: anyhow::Result<()>| r.map(|()| ExitCode::SUCCESS);
    match &cli.command {
        Command::Simulate(args) => done(simulate::run(args)),
        Command::Compare(args) => {
            let sub = matches
                .subcommand_matches("compare")
                .context("compare's arguments")?;
            done(compare::run(args, sub))
        }
        Command::Replay(args) => replay::run(args),
        Command::Frames(command) => frames::run(command),
        Command::Dag(args) => done(dag::run(args)),
        Command::TiresiasCheck(args) => done(tiresias_check::run(args)),
        Command::Train(command) => done(train::run(command)),
        Command::DagTable(args) => done(dag_table::run(args)),
        Command::Slurm(args) => done(gantry::slurm::run_cli(args)),
    }
}

/// Parses, runs, and reports an error as one line `gantry: error: …` (exit 1). A closed
/// stdout (`gantry … | head`) ends the run quietly with status 0.
fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match run(&cli, &matches) {
        Ok(code) => code,
        Err(e) if is_closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gantry: error: {}", error_text(&e));
            ExitCode::FAILURE
        }
    }
}
