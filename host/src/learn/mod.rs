//! Learning: a small MLP with hand-written backprop (training), ONNX export (shipping) and a
//! tract runner (inference).
//!
//! - [`mlp`]: `Mlp` (Linear + ReLU/Tanh layers on `ndarray`), batch forward, backward,
//!   `AdamW`, seeded bit-exact init, `weight_hash` for determinism tests.
//! - [`onnx`]: `mlp_model` / `split_input_model` encode an `Mlp` as an ONNX file (opset 17,
//!   symbolic batch "N").
//! - [`tract_model`]: `TractModel` loads an ONNX file, checks its declared shapes, runs it
//!   with a reused plan state and rejects non-finite outputs, with typed `ModelError`s.

pub mod ddqn;
pub mod mlp;
pub mod onnx;
pub mod tract_model;
