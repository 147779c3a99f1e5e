//! The cross-crate integration tests, one test binary with one module per subject. Every
//! test binary links the whole host crate and tract; one binary instead of one per file
//! keeps `cargo test --workspace --release` to one such link for this crate. Run one subject
//! with `cargo test --release -p gantry-tests --test it NAME::` (e.g. `golden::`).

mod bad_input;
mod checkpoint;
mod golden;
mod layering;
mod mixed;
mod properties;
mod simulate;
mod tiresias_anchor;
