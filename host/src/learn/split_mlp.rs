//! [`SplitMlp`]: the placement scorer's small MLP evaluated directly in Rust from the weights
//! of the same ONNX file tract runs, so a learned pick costs microseconds instead of a tract
//! call over every GPU row.
//!
//! # What it accepts
//! Exactly the graph [`split_input_model`](super::onnx::split_input_model) writes: a per-row
//! input `[N, a]` and a shared row `[1, b]`, `MatMul` + `MatMul` + `Add` + `Add` (the first
//! layer split `W = [W_row; W_shared]`), an optional `Tanh`/`Relu`, then `Gemm` layers (default
//! attributes: α = β = 1, no transposes) each with an optional activation, ending in a
//! one-wide output `Reshape`d to `[N]`. Anything else is refused with a typed
//! [`ModelError`], and the caller runs the model with tract instead.
//!
//! # Why it is fast
//! - The shared row's share of the first layer (`x_shared · W_shared + b`) is computed once
//!   per call, not once per row.
//! - Rows that cannot be picked (feature 0 = 0: the scorer contract says their scores are
//!   ignored) are skipped, and a row equal to one already scored gets that score: the
//!   observation's features are functions of the GPU's machine and rack, so the usable GPUs of
//!   one machine share one row, and a 256-GPU tree needs at most 32 evaluations.
//! - Layers are evaluated as `z = b + Σ_i h_i · W[i, :]` (row-major `[in, out]` weights), 16
//!   output lanes at a time held in registers: the inner loop is over independent lanes, which
//!   the compiler vectorises without reassociating any sum, so results are the same on every
//!   x86-64 or ARM CPU.
//! - `tanh` is a rational approximation (Eigen's `ptanh_float` form, odd degree-13 numerator
//!   over even degree-6 denominator, inputs clamped to ±7.9053), within 5·10⁻⁷ of the true
//!   function: no transcendental call per unit.
//!
//! tract stays the reference: `learn::scorer` tests check that both give the same scores
//! (within 10⁻⁵) and the same picks.

use super::tract_model::ModelError;
use prost::Message;
use std::collections::HashMap;
use std::path::Path;
use tract_onnx::pb;

/// An activation the direct evaluator supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Act {
    Identity,
    Tanh,
    Relu,
}

/// One dense layer, weights row-major `[inputs, outputs]`.
#[derive(Clone, Debug)]
struct Dense {
    inputs: usize,
    outputs: usize,
    weights: Weights,
    bias: Vec<f32>,
    act: Act,
}

/// Output lanes kept in registers at once by [`Weights::axpy`].
const BLOCK: usize = 16;

/// A layer's weights laid out for [`Weights::axpy`]: for each block of [`BLOCK`] outputs, the
/// block's weights of every input in turn (`[blocks][inputs][BLOCK]`), then the outputs past
/// the last whole block row-major (`[inputs][leftover]`).
#[derive(Clone, Debug)]
struct Weights {
    inputs: usize,
    outputs: usize,
    blocks: Vec<[f32; BLOCK]>,
    leftover: Vec<f32>,
}

impl Weights {
    /// From row-major `[inputs, outputs]` weights.
    fn new(row_major: &[f32], inputs: usize, outputs: usize) -> Self {
        let whole = outputs / BLOCK;
        let mut blocks = Vec::with_capacity(whole * inputs);
        for b in 0..whole {
            for i in 0..inputs {
                let mut lanes = [0.0f32; BLOCK];
                lanes.copy_from_slice(&row_major[i * outputs + b * BLOCK..][..BLOCK]);
                blocks.push(lanes);
            }
        }
        let leftover = (0..inputs)
            .flat_map(|i| {
                row_major[i * outputs + whole * BLOCK..(i + 1) * outputs]
                    .iter()
                    .copied()
            })
            .collect();
        Self {
            inputs,
            outputs,
            blocks,
            leftover,
        }
    }

    /// `z += Σ_i x[i] · W[i, :]`. Each output sums its terms in input order whatever the
    /// blocking, so the result does not depend on the CPU's vector width. A block of outputs
    /// stays in registers across all inputs (no load/store of `z` per input); with
    /// `skip_zeros`, inputs equal to 0 are skipped (the observation's flags often are).
    fn axpy(&self, z: &mut [f32], x: &[f32], skip_zeros: bool) {
        let x = &x[..x.len().min(self.inputs)];
        let whole = self.outputs / BLOCK;
        for (zc, block) in z[..whole * BLOCK]
            .chunks_exact_mut(BLOCK)
            .zip(self.blocks.chunks_exact(self.inputs.max(1)))
        {
            let mut acc = [0.0f32; BLOCK];
            acc.copy_from_slice(zc);
            for (&xi, w) in x.iter().zip(block) {
                if skip_zeros && xi == 0.0 {
                    continue;
                }
                for k in 0..BLOCK {
                    acc[k] += xi * w[k];
                }
            }
            zc.copy_from_slice(&acc);
        }
        let left = self.outputs - whole * BLOCK;
        if left == 0 {
            return;
        }
        for (&xi, w) in x.iter().zip(self.leftover.chunks_exact(left)) {
            for (zj, &wij) in z[whole * BLOCK..].iter_mut().zip(w) {
                *zj += xi * wij;
            }
        }
    }
}

/// The scorer MLP with its first layer split between a per-row and a shared input. Memory:
/// its weights (≈ 22 KB for 20 → 64 → 64 → 1) plus a few rows of scratch.
#[derive(Clone, Debug)]
pub struct SplitMlp {
    row_width: usize,
    shared_width: usize,
    /// First layer: `[row_width, hidden]`, `[shared_width, hidden]`, bias, activation.
    w_row: Weights,
    w_shared: Weights,
    first_bias: Vec<f32>,
    first_act: Act,
    rest: Vec<Dense>,
    /// Scratch: the shared row's pre-activation share, two hidden buffers.
    shared_share: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
    /// Rows already scored in this call (a handful: one per distinct machine state) and their
    /// scores, searched linearly.
    seen: Vec<([f32; MAX_ROW_WIDTH], f32)>,
}

/// Widest per-row input the direct evaluator takes (the placement layout has 12).
pub const MAX_ROW_WIDTH: usize = 32;

fn unsupported(path: &Path, why: impl Into<String>) -> ModelError {
    ModelError::Corrupt {
        path: path.to_path_buf(),
        message: format!("not a plain split-input MLP: {}", why.into()),
    }
}

/// A float tensor's values and dims by initializer name.
fn initializers(graph: &pb::GraphProto) -> HashMap<&str, (&[i64], Vec<f32>)> {
    graph
        .initializer
        .iter()
        .filter(|t| t.data_type == pb::tensor_proto::DataType::Float as i32)
        .map(|t| {
            let values = if t.float_data.is_empty() {
                t.raw_data
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            } else {
                t.float_data.clone()
            };
            (t.name.as_str(), (t.dims.as_slice(), values))
        })
        .collect()
}

impl SplitMlp {
    /// Reads the weights of an ONNX scorer (see the module docs for the accepted graph).
    /// `row_width` / `shared_width` are the widths of the two inputs, in graph order. `path`
    /// only labels errors. O(model size).
    pub fn from_onnx(
        path: &Path,
        bytes: &[u8],
        row_width: usize,
        shared_width: usize,
    ) -> Result<Self, ModelError> {
        let model = pb::ModelProto::decode(bytes).map_err(|e| ModelError::Corrupt {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let graph = model
            .graph
            .as_ref()
            .ok_or_else(|| unsupported(path, "no graph"))?;
        let inits = initializers(graph);
        let tensor = |name: &str, dims: &[usize]| -> Result<Vec<f32>, ModelError> {
            let (d, v) = inits.get(name).ok_or_else(|| {
                unsupported(path, format!("weight {name:?} is not a float initializer"))
            })?;
            let want: Vec<i64> = dims.iter().map(|&x| x as i64).collect();
            if *d != want.as_slice() || v.len() != dims.iter().product::<usize>() {
                return Err(unsupported(
                    path,
                    format!("weight {name:?} has shape {d:?}, expected {want:?}"),
                ));
            }
            Ok(v.clone())
        };
        if row_width == 0 || row_width > MAX_ROW_WIDTH {
            return Err(unsupported(
                path,
                format!("row width {row_width} not in 1..={MAX_ROW_WIDTH}"),
            ));
        }
        let inputs: Vec<&str> = graph
            .input
            .iter()
            .map(|i| i.name.as_str())
            .filter(|n| !inits.contains_key(n))
            .collect();
        let [row_in, shared_in] = inputs.as_slice() else {
            return Err(unsupported(
                path,
                format!("{} graph inputs, expected 2", inputs.len()),
            ));
        };
        let nodes = &graph.node;
        let op = |i: usize| nodes.get(i).map(|n| n.op_type.as_str());
        if (op(0), op(1), op(2), op(3))
            != (Some("MatMul"), Some("MatMul"), Some("Add"), Some("Add"))
        {
            return Err(unsupported(
                path,
                "the first layer is not MatMul, MatMul, Add, Add",
            ));
        }
        let (row_mm, shared_mm, sum, add_b) = (&nodes[0], &nodes[1], &nodes[2], &nodes[3]);
        let chained = row_mm.input.first().map(String::as_str) == Some(*row_in)
            && shared_mm.input.first().map(String::as_str) == Some(*shared_in)
            && sum.input == [row_mm.output[0].clone(), shared_mm.output[0].clone()]
            && add_b.input.first() == sum.output.first();
        if !chained
            || row_mm.input.len() != 2
            || shared_mm.input.len() != 2
            || add_b.input.len() != 2
        {
            return Err(unsupported(path, "the first layer's tensors do not chain"));
        }
        let hidden = inits
            .get(add_b.input[1].as_str())
            .map(|(_, v)| v.len())
            .ok_or_else(|| unsupported(path, "first bias is not an initializer"))?;
        let w_row = tensor(&row_mm.input[1], &[row_width, hidden])?;
        let w_shared = tensor(&shared_mm.input[1], &[shared_width, hidden])?;
        let first_bias = tensor(&add_b.input[1], &[hidden])?;
        let mut at = 4;
        let mut h = add_b.output[0].clone();
        let first_act = activation(nodes.get(at), &h);
        if first_act != Act::Identity {
            h = nodes[at].output[0].clone();
            at += 1;
        }
        let mut rest = Vec::new();
        let mut width = hidden;
        while op(at) == Some("Gemm") {
            let gemm = &nodes[at];
            if gemm.input.len() != 3
                || gemm.input[0] != h
                || !gemm.attribute.iter().all(default_gemm_attribute)
            {
                return Err(unsupported(
                    path,
                    format!("Gemm node {at} is not a plain dense layer"),
                ));
            }
            let outputs = inits
                .get(gemm.input[2].as_str())
                .map(|(_, v)| v.len())
                .ok_or_else(|| unsupported(path, "a Gemm bias is not an initializer"))?;
            let weights = tensor(&gemm.input[1], &[width, outputs])?;
            let weights = Weights::new(&weights, width, outputs);
            let bias = tensor(&gemm.input[2], &[outputs])?;
            h = gemm.output[0].clone();
            at += 1;
            let act = activation(nodes.get(at), &h);
            if act != Act::Identity {
                h = nodes[at].output[0].clone();
                at += 1;
            }
            rest.push(Dense {
                inputs: width,
                outputs,
                weights,
                bias,
                act,
            });
            width = outputs;
        }
        let last_ok = nodes.get(at).is_some_and(|n| {
            matches!(n.op_type.as_str(), "Reshape" | "Identity") && n.input.first() == Some(&h)
        }) && at + 1 == nodes.len();
        if !last_ok || width != 1 {
            return Err(unsupported(
                path,
                "the graph does not end in one score per row",
            ));
        }
        let widest = rest
            .iter()
            .map(|d| d.outputs)
            .max()
            .unwrap_or(0)
            .max(hidden);
        Ok(Self {
            row_width,
            shared_width,
            w_row: Weights::new(&w_row, row_width, hidden),
            w_shared: Weights::new(&w_shared, shared_width, hidden),
            first_bias,
            first_act,
            rest,
            shared_share: vec![0.0; hidden],
            a: vec![0.0; widest],
            b: vec![0.0; widest],
            seen: Vec::new(),
        })
    }

    /// Scores every row of `rows` (each `row_width` wide) into `out` given the shared row;
    /// rows whose first feature is 0 get −∞ (not evaluated). O(U·params) for U distinct
    /// usable rows, plus O(N·row_width) to find them.
    pub fn score(&mut self, rows: &[f32], shared: &[f32], out: &mut [f32]) {
        debug_assert_eq!(shared.len(), self.shared_width);
        self.shared_share.copy_from_slice(&self.first_bias);
        self.w_shared.axpy(&mut self.shared_share, shared, true);
        self.seen.clear();
        let mut previous: Option<(&[f32], f32)> = None;
        for (i, row) in rows.chunks_exact(self.row_width).enumerate() {
            let Some(slot) = out.get_mut(i) else {
                break;
            };
            if row.first().is_none_or(|&usable| usable == 0.0) {
                *slot = f32::NEG_INFINITY;
                continue;
            }
            if let Some((p, score)) = previous
                && same_bits(p, row)
            {
                *slot = score;
                continue;
            }
            let known = self
                .seen
                .iter()
                .find(|(k, _)| same_bits(&k[..row.len()], row))
                .map(|&(_, s)| s);
            let score = match known {
                Some(s) => s,
                None => {
                    let s = self.evaluate(row);
                    let mut key = [0.0f32; MAX_ROW_WIDTH];
                    key[..row.len()].copy_from_slice(row);
                    self.seen.push((key, s));
                    s
                }
            };
            *slot = score;
            previous = Some((row, score));
        }
    }

    /// The network on one row. O(params).
    fn evaluate(&mut self, row: &[f32]) -> f32 {
        let hidden = self.first_bias.len();
        let a = &mut self.a[..hidden];
        a.copy_from_slice(&self.shared_share);
        self.w_row.axpy(a, row, true);
        apply(a, self.first_act);
        let (mut cur, mut next) = (&mut self.a, &mut self.b);
        let mut width = hidden;
        for layer in &self.rest {
            let z = &mut next[..layer.outputs];
            let inputs = &cur[..width.min(layer.inputs)];
            if layer.outputs == 1 {
                z[0] = layer.bias[0] + dot(inputs, &layer.weights.leftover);
            } else {
                z.copy_from_slice(&layer.bias);
                layer.weights.axpy(z, inputs, false);
            }
            apply(z, layer.act);
            width = layer.outputs;
            std::mem::swap(&mut cur, &mut next);
        }
        cur[0]
    }
}

/// Whether two rows are the same bits (so the network gives them the same score).
fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// `Σ x[i] · w[i]` with eight running sums (a fixed order, the same on every CPU), so the
/// last layer is not one long chain of dependent additions.
fn dot(x: &[f32], w: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let chunks = x.len() / 8 * 8;
    for (xc, wc) in x[..chunks].chunks_exact(8).zip(w[..chunks].chunks_exact(8)) {
        for k in 0..8 {
            acc[k] += xc[k] * wc[k];
        }
    }
    let mut tail = 0.0f32;
    for (a, b) in x[chunks..].iter().zip(&w[chunks..]) {
        tail += a * b;
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail
}

fn apply(z: &mut [f32], act: Act) {
    match act {
        Act::Identity => {}
        Act::Tanh => z.iter_mut().for_each(|v| *v = fast_tanh(*v)),
        Act::Relu => z.iter_mut().for_each(|v| *v = v.max(0.0)),
    }
}

/// The activation node after tensor `input`, if the next node is one.
fn activation(node: Option<&pb::NodeProto>, input: &str) -> Act {
    match node {
        Some(n) if n.input.first().map(String::as_str) == Some(input) => match n.op_type.as_str() {
            "Tanh" => Act::Tanh,
            "Relu" => Act::Relu,
            _ => Act::Identity,
        },
        _ => Act::Identity,
    }
}

fn default_gemm_attribute(a: &pb::AttributeProto) -> bool {
    match a.name.as_str() {
        "alpha" | "beta" => a.f == 1.0,
        "transA" | "transB" => a.i == 0,
        _ => false,
    }
}

/// tanh by a rational approximation (Eigen's `ptanh_float` coefficients): odd numerator
/// of degree 13 over an even denominator of degree 6 on `x` clamped to ±7.9053, and `x`
/// itself below 4·10⁻⁴ in magnitude. Within 5·10⁻⁷ of `tanh` (f32 rounding included; tested on
/// a dense grid).
pub fn fast_tanh(x: f32) -> f32 {
    const CLAMP: f32 = 7.905_311;
    const A1: f32 = 4.893_524_6e-3;
    const A3: f32 = 6.372_619_3e-4;
    const A5: f32 = 1.485_722_4e-5;
    const A7: f32 = 5.122_297e-8;
    const A9: f32 = -8.604_672e-11;
    const A11: f32 = 2.000_188e-13;
    const A13: f32 = -2.760_768_5e-16;
    const B0: f32 = 4.893_525e-3;
    const B2: f32 = 2.268_434_6e-3;
    const B4: f32 = 1.185_347e-4;
    const B6: f32 = 1.198_258_4e-6;
    // Branch-free (a select at the end), so a layer's activations vectorise.
    let c = x.clamp(-CLAMP, CLAMP);
    let x2 = c * c;
    let p = x2 * (x2 * (x2 * (x2 * (x2 * (x2 * A13 + A11) + A9) + A7) + A5) + A3) + A1;
    let q = x2 * (x2 * (x2 * B6 + B4) + B2) + B0;
    let r = c * p / q;
    if x.abs() < 4e-4 { x } else { r }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::mlp::{Activation, Mlp, MlpConfig};
    use crate::learn::onnx::{OnnxIo, mlp_model, split_input_model};
    use ndarray::Array2;

    #[test]
    fn fast_tanh_is_within_5e7_of_tanh() {
        let mut worst = 0.0f64;
        for i in -200_000..=200_000 {
            let x = i as f32 * 1e-4;
            let err = (f64::from(fast_tanh(x)) - f64::from(x).tanh()).abs();
            worst = worst.max(err);
        }
        assert!(worst < 5e-7, "worst error {worst}");
        assert_eq!(fast_tanh(1e9), fast_tanh(8.0));
        assert!(fast_tanh(f32::NAN).is_nan());
    }

    fn split_model(act: Activation, sizes: &[usize]) -> (Mlp, Vec<u8>) {
        let net = Mlp::new(&MlpConfig::new(sizes, act), 11);
        let mut io = OnnxIo::new("unused", "scores");
        io.flatten_output = true;
        let bytes = split_input_model(&net, ("rows", 5), ("shared", 3), &io).unwrap();
        (net, bytes)
    }

    #[test]
    fn matches_the_training_network_and_skips_masked_rows() {
        for act in [Activation::Tanh, Activation::Relu] {
            let (net, bytes) = split_model(act, &[8, 16, 12, 1]);
            let mut mlp = SplitMlp::from_onnx(Path::new("mem"), &bytes, 5, 3).unwrap();
            let rows = Array2::from_shape_fn((7, 5), |(i, j)| {
                if j == 0 {
                    f32::from(u8::from(i != 2))
                } else {
                    ((i % 3) * 5 + j) as f32 / 9.0 - 0.6
                }
            });
            let shared = [0.3f32, -0.2, 0.9];
            let mut out = vec![0.0; 7];
            mlp.score(rows.as_slice().unwrap(), &shared, &mut out);
            let full =
                Array2::from_shape_fn(
                    (7, 8),
                    |(i, j)| {
                        if j < 5 { rows[[i, j]] } else { shared[j - 5] }
                    },
                );
            let want = net.forward(full.view());
            for i in 0..7 {
                if i == 2 {
                    assert_eq!(out[i], f32::NEG_INFINITY);
                } else {
                    assert!((out[i] - want[[i, 0]]).abs() < 1e-5, "{act:?} row {i}");
                }
            }
        }
    }

    #[test]
    fn refuses_other_graphs() {
        let net = Mlp::new(&MlpConfig::new(&[8, 4, 1], Activation::Tanh), 1);
        let plain = mlp_model(&net, &OnnxIo::new("x", "y")).unwrap();
        let err = SplitMlp::from_onnx(Path::new("plain.onnx"), &plain, 5, 3).unwrap_err();
        assert!(
            err.to_string().contains("not a plain split-input MLP"),
            "{err}"
        );
        let (_, bytes) = split_model(Activation::Tanh, &[8, 4, 1]);
        let err = SplitMlp::from_onnx(Path::new("w.onnx"), &bytes, 6, 2).unwrap_err();
        assert!(err.to_string().contains("has shape"), "{err}");
        let wide = Mlp::new(&MlpConfig::new(&[8, 4, 2], Activation::Tanh), 1);
        let io = OnnxIo::new("u", "scores");
        let bytes = split_input_model(&wide, ("rows", 5), ("shared", 3), &io).unwrap();
        assert!(SplitMlp::from_onnx(Path::new("w.onnx"), &bytes, 5, 3).is_err());
        assert!(SplitMlp::from_onnx(Path::new("junk"), b"\xff\xfe junk", 5, 3).is_err());
    }
}
