//! `gantry dag-table`: the WORL-RTGS acceptance table (markdown), every planner on the WORL
//! slices, TPC-H and STG.

use crate::cli::write_out;
use crate::dag::table::{self, DagTableArgs};
use crate::paths::require_input;

/// Runs `gantry dag-table` (`--traces` resolved against the repository, refused if absent).
pub fn run(args: &DagTableArgs) -> anyhow::Result<()> {
    let mut args = args.clone();
    args.traces = require_input(&args.traces, "--traces")?;
    write_out(table::run(&args)?)
}
