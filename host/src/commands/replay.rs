//! `gantry replay`: re-runs the core on a recording and checks every decision; `--dump`
//! prints it, `--metrics` the run's metrics rebuilt from it.

use crate::cli::{write_line, write_out};
use crate::metrics::{Metrics, RunInfo};
use crate::record;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// `gantry replay`'s flags.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// A file written by `gantry simulate --record`.
    file: PathBuf,
    /// Print the recording as text instead of replaying it.
    #[arg(long)]
    dump: bool,
    /// After a replay that matches, print the run's metrics (rebuilt from the recording).
    #[arg(long)]
    metrics: bool,
    /// With `--metrics`: one JSON object instead of a table.
    #[arg(long, requires = "metrics")]
    json: bool,
}

/// Runs `gantry replay`; exit status 1 when a decision differs.
pub fn run(args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    if let Some(compacted) = crate::slurm::journal::read_compacted(&args.file)? {
        return run_compacted(args, &compacted);
    }
    let recording = record::read(&args.file)?;
    if args.dump {
        write_out(record::dump(&recording))?;
        return Ok(ExitCode::SUCCESS);
    }
    let report = record::replay(&recording)?;
    match &report.mismatch {
        None => {
            let matched = format!(
                "{}: all {} entries replayed, every decision matches",
                args.file.display(),
                report.total
            );
            if !args.metrics {
                write_line(matched)?;
                return Ok(ExitCode::SUCCESS);
            }
            let h = &recording.header;
            let run = RunInfo::new(&h.trace, h.cluster, &h.config);
            let metrics = Metrics::from_output(&record::outcome(&recording)?).with_run(run);
            if args.json {
                write_line(serde_json::to_string(&metrics)?)?;
            } else {
                write_line(matched)?;
                write_line(metrics.table())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(m) => {
            write_line(format!(
                "{}: {} of {} entries matched; {m}",
                args.file.display(),
                report.matched,
                report.total
            ))?;
            Ok(ExitCode::FAILURE)
        }
    }
}

/// A `gantry slurm` journal with a checkpoint beside it: the core starts from the
/// checkpoint, and only the entries after it are replayed. Metrics need the whole run
/// (`gantry slurm --json` keeps them).
fn run_compacted(
    args: &ReplayArgs,
    compacted: &crate::slurm::journal::Compacted,
) -> anyhow::Result<ExitCode> {
    let file = args.file.display();
    let from = format!(
        "{file}: compacted (its checkpoint stands for {} entries)",
        compacted.checkpointed
    );
    if args.dump {
        write_line(&from)?;
        write_out(record::dump(&compacted.tail))?;
        return Ok(ExitCode::SUCCESS);
    }
    anyhow::ensure!(
        !args.metrics,
        "{from}; --metrics needs the whole run: the summary of `gantry slurm --json` (the tally beside the journal) has it"
    );
    let report = record::replay_from(&compacted.tail, Some(&compacted.core))?;
    match &report.mismatch {
        None => {
            write_line(format!(
                "{from}; the {} entries after it replayed from its state, every decision matches",
                report.total
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(m) => {
            write_line(format!(
                "{from}; {} of the {} entries after it matched; {m}",
                report.matched, report.total
            ))?;
            Ok(ExitCode::FAILURE)
        }
    }
}
