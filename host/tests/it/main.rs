//! The host's integration tests, one test binary with one module per subject. Every test
//! binary links the whole host crate and tract; one binary instead of one per file keeps
//! `cargo test --workspace --release` to one such link for this crate. Run one subject with
//! `cargo test --release -p gantry --test it NAME::` (e.g. `cli::`).

mod cli;
mod dag_device;
mod docs;
mod kernels_compile;
mod kernels_emulated;
mod service_unit;
mod slurm_lab;
