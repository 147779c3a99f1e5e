//! Shared helpers for gantry cross-crate tests.
