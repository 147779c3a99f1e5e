//! # gantry (host)
//!
//! The std side of gantry: trace loaders, the discrete-event simulator that drives the
//! `gantry-core` scheduler through its event API, the learned policies and DAG planners,
//! reports, the Slurm and firmware adapters, and the `gantry` commands. The modules form
//! layers, each importing only from those below; `ARCHITECTURE.md` at the repository root
//! names them (section "Layers") and maps every module (`tests/tests/it/layering.rs` checks).

pub mod cli;
pub mod cluster;
pub mod commands;
pub mod dag;
pub mod frames;
pub mod gpu;
pub mod jobs;
pub mod learn;
pub mod lineup;
pub mod metrics;
pub mod mixed;
pub mod paths;
pub mod plot;
pub mod progress;
pub mod proximity;
pub mod record;
pub mod registry;
pub mod sample;
pub mod sim;
pub mod slurm;
pub mod tias_config;
pub mod tiresias_check;
pub mod toml_input;
pub mod trace;
pub mod train;
pub mod workload;

/// Helpers shared by the host's unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use std::path::PathBuf;

    /// `../shared/{relative}` beside the repository (traces, anchors), or `None` after a
    /// one-line "skipped" notice, so tests on real data pass where the data is absent.
    pub(crate) fn shared(relative: &str) -> Option<PathBuf> {
        let path = crate::paths::shared_data(relative);
        if path.is_none() {
            println!("skipped: ../shared/{relative} not found");
        }
        path
    }
}
