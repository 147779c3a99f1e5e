//! Shared helpers for gantry's cross-crate tests: where the shared traces live, and a
//! uniform "skipped" notice when they are absent.

use std::path::PathBuf;

/// `../shared/traces` relative to the repository root, if that folder exists.
pub fn shared_traces() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = root.join("../shared/traces");
    dir.is_dir().then_some(dir)
}

/// A file under `../shared/traces`, or `None` after printing why the caller skips.
pub fn shared_trace(relative: &str) -> Option<PathBuf> {
    let path = shared_traces()
        .map(|d| d.join(relative))
        .filter(|p| p.is_file());
    if path.is_none() {
        println!("skipped: ../shared/traces/{relative} not found");
    }
    path
}
