//! The learned-policy toolkit: a small MLP with hand-written backprop (for the trainers in
//! [`crate::train`]), ONNX export (shipping) and loading (tract), and the placement scorer
//! that runs a shipped model.
//!
//! - [`mlp`]: `Mlp` (Linear + ReLU/Tanh layers on `ndarray`), batch forward, backward,
//!   `AdamW`, seeded bit-exact init, `weight_hash` for determinism tests.
//! - [`onnx`]: `mlp_model` / `split_input_model` encode an `Mlp` as an ONNX file (opset 17,
//!   symbolic batch "N").
//! - [`split_mlp`]: `SplitMlp` evaluates the placement scorer's MLP directly from the same
//!   ONNX weights (the default learned placer; tract is its reference).
//! - [`tract_model`]: `TractModel` loads an ONNX file, checks its declared shapes, runs it
//!   with a reused plan state and rejects non-finite outputs, with typed `ModelError`s.

pub mod mlp;
pub mod onnx;
pub mod scorer;
pub mod split_mlp;
pub mod tract_model;

/// Where to open a model file: `path` itself when it exists or is absolute, else the same
/// relative path under the repository this binary was built from — so the shipped
/// `models/*.onnx` defaults work from any working directory (tests run in their crate's
/// folder), while a user's own path is taken as given. See [`crate::paths`].
pub fn resolve_model_path(path: &std::path::Path) -> std::path::PathBuf {
    crate::paths::resolve_repo_path(path)
}
