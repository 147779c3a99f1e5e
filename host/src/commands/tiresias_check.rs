//! `gantry tiresias-check`: gantry against the Tiresias simulator's published per-job
//! results (the peer anchor): its quirks copied, per-job identity, gantry's own semantics.

use crate::cli::write_line;
use crate::paths::require_input;
use clap::Args;
use std::path::PathBuf;

/// Which anchor inputs `tiresias-check` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckInput {
    /// The three hand-made traces.
    Tiny,
    /// The 2,000-job Philly slice on n64g8 and n256g8.
    P2k,
    /// The 10,000-job Philly slice on n64g8 and n256g8 (slower).
    P10k,
}

/// `gantry tiresias-check`'s flags.
#[derive(Args, Debug)]
pub struct TiresiasCheckArgs {
    /// The anchor folder (`inputs/`, `perjob/`, `results.md`); relative paths also resolve
    /// against the repository.
    #[arg(long, default_value = "../shared/anchors/tiresias")]
    anchors: PathBuf,
    /// Inputs, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [CheckInput::Tiny, CheckInput::P2k, CheckInput::P10k])]
    inputs: Vec<CheckInput>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `gantry tiresias-check`.
pub fn run(args: &TiresiasCheckArgs) -> anyhow::Result<()> {
    use crate::tiresias_check::{self as tc, PHILLY_2K, PHILLY_10K, TINY};
    let mut inputs = Vec::new();
    for input in &args.inputs {
        inputs.extend_from_slice(match input {
            CheckInput::Tiny => &TINY[..],
            CheckInput::P2k => &PHILLY_2K[..],
            CheckInput::P10k => &PHILLY_10K[..],
        });
    }
    let rows = tc::check(&require_input(&args.anchors, "--anchors")?, &inputs)?;
    if args.json {
        return write_line(serde_json::to_string(&rows)?);
    }
    write_line(tc::table(&rows))?;
    for r in rows.iter().filter(|r| !r.first_differences.is_empty()) {
        write_line(format!(
            "{} {} {}: {}",
            r.policy,
            r.input,
            r.cluster,
            r.first_differences.join("; ")
        ))?;
    }
    Ok(())
}
