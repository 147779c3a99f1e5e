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
