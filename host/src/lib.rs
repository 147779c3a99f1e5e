//! # gantry (host)
//!
//! The std side of gantry: trace loaders, the discrete-event simulator that drives the
//! `gantry-core` scheduler through its event API, metrics, and the `gantry` CLI.
//! See `ARCHITECTURE.md` at the repository root for the map.

pub mod cli;
pub mod cluster;
pub mod compare;
pub mod dag;
pub mod frames;
pub mod gpu;
pub mod learn;
pub mod lineup;
pub mod metrics;
pub mod mixed;
pub mod paths;
pub mod plot;
pub mod policy;
pub mod progress;
pub mod proximity;
pub mod record;
pub mod sample;
pub mod sim;
pub mod slurm;
pub mod tiresias_check;
pub mod trace;
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
