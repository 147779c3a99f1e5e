//! Where the CLI's default files are: inputs shipped in or beside the repository (models,
//! `../shared` traces and anchors) resolve against the repository this binary was built
//! from, so every command works from any working directory; training writes under the
//! repository's `target/` unless told otherwise, never over the shipped models.

use std::path::{Path, PathBuf};

/// The repository this binary was built from (the workspace root).
pub fn repo_root() -> PathBuf {
    let host = Path::new(env!("CARGO_MANIFEST_DIR"));
    host.parent().unwrap_or(host).to_path_buf()
}

/// `../shared/{relative}` beside the repository (traces, anchors: internal test data, not
/// redistributed), if it is there.
pub fn shared_data(relative: &str) -> Option<PathBuf> {
    let path = repo_root().join("../shared").join(relative);
    path.exists().then_some(path)
}

/// Where to open an input: `path` itself when it exists or is absolute, else the same
/// relative path under the repository (so `models/…` and `../shared/…` defaults work from
/// any directory), else `path` as given (the caller's error names it).
pub fn resolve_repo_path(path: &Path) -> PathBuf {
    if path.is_absolute() || path.exists() {
        return path.to_path_buf();
    }
    let in_repo = repo_root().join(path);
    if in_repo.exists() {
        // `…/gantry/../shared/x` reads better as `…/shared/x` in messages and output.
        std::fs::canonicalize(&in_repo).unwrap_or(in_repo)
    } else {
        path.to_path_buf()
    }
}

/// An input a command cannot run without.
#[derive(Debug, thiserror::Error)]
#[error(
    "{flag} {}: not found here nor under the repository ({}); pass {flag} PATH",
    .path.display(),
    .tried.display()
)]
pub struct MissingInput {
    /// The flag that names it.
    pub flag: &'static str,
    /// The path as given.
    pub path: PathBuf,
    /// The repository-relative place also tried.
    pub tried: PathBuf,
}

/// [`resolve_repo_path`], or an error saying where it looked and which flag to pass.
pub fn require_input(path: &Path, flag: &'static str) -> Result<PathBuf, MissingInput> {
    let resolved = resolve_repo_path(path);
    if resolved.exists() {
        Ok(resolved)
    } else {
        Err(MissingInput {
            flag,
            path: path.to_path_buf(),
            tried: repo_root().join(path),
        })
    }
}

/// Default output of a training command: `target/trained/FILE` under the repository when
/// it is there, else the system's temporary folder — never `models/`, which holds the
/// shipped models (pass `--out models/FILE` to replace one on purpose).
pub fn default_training_out(file: &str) -> PathBuf {
    let root = repo_root();
    let base = if root.join("Cargo.toml").is_file() {
        root.join("target")
    } else {
        std::env::temp_dir()
    };
    base.join("trained").join(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_inputs_resolve_from_any_directory() {
        // Tests run in `host/`, where `models/…` does not exist but the repository has it.
        let model = resolve_repo_path(Path::new("models/MODEL_CARD.md"));
        assert!(model.is_file(), "{}", model.display());
        let err = require_input(Path::new("no/such/file.csv"), "--anchors").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("--anchors no/such/file.csv: not found here nor under the repository"),
            "{text}"
        );
        assert!(text.ends_with("pass --anchors PATH"), "{text}");
    }

    #[test]
    fn training_never_defaults_into_models() {
        let out = default_training_out("proximity_ppo.onnx");
        assert!(
            out.ends_with("target/trained/proximity_ppo.onnx"),
            "{}",
            out.display()
        );
    }
}
