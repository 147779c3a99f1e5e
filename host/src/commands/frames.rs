//! `gantry frames`: the firmware's frame streams: convert a recording, serve a stream as
//! the reference device, corrupt one, compare two, print one.

use super::shared::create_output;
use crate::cli::{write_line, write_out};
use crate::{frames, record};
use anyhow::Context;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `gantry frames`' subcommands.
#[derive(Subcommand, Debug)]
pub enum FramesCommand {
    /// A recording made with `--capacities firmware` → the inbound frame stream (header and
    /// events) and the outbound frames x86 answered.
    Convert {
        /// The recording.
        recording: PathBuf,
        /// Where to write the inbound frames.
        #[arg(long)]
        events: PathBuf,
        /// Where to write the expected outbound frames.
        #[arg(long)]
        expected: PathBuf,
    },
    /// Answer an inbound stream as the firmware does (the host's reference device).
    Serve {
        /// The inbound frames.
        events: PathBuf,
        /// Where to write the outbound frames.
        #[arg(long)]
        out: PathBuf,
    },
    /// Mix seeded bad frames (corrupt, cut, other version, over-long, unfinished) into an
    /// inbound stream.
    Corrupt {
        /// The inbound frames.
        events: PathBuf,
        /// Where to write the corrupted stream.
        #[arg(long)]
        out: PathBuf,
        /// Seed of the corruption.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Compare two outbound streams byte for byte; exit 1 naming the first differing frame.
    Diff {
        /// The expected frames.
        expected: PathBuf,
        /// The frames a device wrote.
        actual: PathBuf,
    },
    /// Print an inbound stream, one line per frame.
    Dump {
        /// The inbound frames.
        events: PathBuf,
    },
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Runs `gantry frames …`; exit status 1 when `diff` finds a difference.
pub fn run(command: &FramesCommand) -> anyhow::Result<ExitCode> {
    use embedded_io_adapters::std::FromStd;
    match command {
        FramesCommand::Convert {
            recording,
            events,
            expected,
        } => {
            let recording = record::read(recording)?;
            write(events, &frames::events(&recording)?)?;
            write(expected, &frames::expected(&recording)?)?;
            write_line(format_args!(
                "{} events, {} ({} GPUs), {} + {}",
                recording.entries.len(),
                recording.header.cluster,
                recording.header.cluster.gpus(),
                events.display(),
                expected.display()
            ))?;
        }
        FramesCommand::Serve { events, out } => {
            let input = std::fs::File::open(events)
                .with_context(|| format!("reading {}", events.display()))?;
            let output = create_output(out, "--out")?;
            let summary = frames::serve(
                FromStd::new(std::io::BufReader::new(input)),
                FromStd::new(std::io::BufWriter::new(output)),
            )?;
            write_line(format_args!(
                "{} frames answered ({} faults) into {}",
                summary.frames,
                summary.faults,
                out.display()
            ))?;
        }
        FramesCommand::Corrupt { events, out, seed } => {
            write(out, &frames::corrupt(&read(events)?, *seed))?;
        }
        FramesCommand::Diff { expected, actual } => {
            let (a, b) = (read(expected)?, read(actual)?);
            if let Some(d) = frames::diff(&a, &b) {
                write_line(format_args!(
                    "{} vs {}: {d}",
                    expected.display(),
                    actual.display()
                ))?;
                return Ok(ExitCode::FAILURE);
            }
            write_line(format_args!(
                "{} and {}: identical ({} bytes, {} frames)",
                expected.display(),
                actual.display(),
                a.len(),
                a.iter().filter(|&&x| x == 0).count()
            ))?;
        }
        FramesCommand::Dump { events } => {
            write_out(frames::dump_events(&read(events)?))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
