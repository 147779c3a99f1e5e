//! The host's integration tests, one test binary with one module per subject. Every test
//! binary links the whole host crate and tract; one binary instead of one per file keeps
//! `cargo test --workspace --release` to one such link for this crate. Run one subject with
//! `cargo test --release -p gantry --test it NAME::` (e.g. `cli::`).

mod cli;
mod dag_device;
mod docs;
mod kernels_compile;
mod kernels_emulated;
mod loader_mutation;
mod service_unit;
mod slurm_lab;

/// Whether the tests run under CI (`CI=true` or `1`), where a test whose tool is missing
/// fails instead of skipping.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// For a test that cannot run here (`reason`: what is missing and how to get it): fails
/// under CI, says it skipped otherwise. The caller returns after it.
fn skip_outside_ci(reason: &str) {
    assert!(!in_ci(), "CI=true but {reason}");
    eprintln!("skipped: {reason}");
}
