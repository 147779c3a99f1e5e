//! # gantry (host)
//!
//! The std side of gantry: trace loaders, the discrete-event simulator that drives the
//! `gantry-core` scheduler through its event API, metrics, and the `gantry` CLI.
//! See `ARCHITECTURE.md` at the repository root for the map.

pub mod compare;
pub mod dag;
pub mod gpu;
pub mod learn;
pub mod metrics;
pub mod policy;
pub mod record;
pub mod sample;
pub mod sim;
pub mod trace;
pub mod workload;
