//! Export an [`Mlp`] to ONNX with no extra crate: build the prost-generated protobuf types
//! that `tract_onnx::pb` exposes and encode them with [`prost::Message::encode_to_vec`].
//!
//! Standard operators only (`Gemm`, `MatMul`, `Add`, `Relu`, `Tanh`, `Reshape`), opset 17,
//! IR version 8, float32, a symbolic batch dimension `"N"`; the files open in Netron and
//! onnxruntime as well as tract.
//!
//! Two graph shapes:
//! - [`mlp_model`]: one input `[N, in]` → one output `[N, out]` (or `[N]` with
//!   [`OnnxIo::flatten_output`] when `out` = 1). For value nets, Q-nets, anything plain.
//! - [`split_input_model`]: a per-row input `[N, a]` plus a shared row `[1, b]` broadcast to
//!   every row. The first layer's weights are split `W = [W_row; W_shared]`, so
//!   `x_row · W_row + x_shared · W_shared + b` equals the MLP applied to the concatenated row
//!   without a `Concat`/`Expand` in the graph. This is the per-GPU scorer's form
//!   (`gpu_features [N, 12]`, `job_features [1, 8]` → `scores [N]`).

use super::mlp::{Activation, Mlp};
use prost::Message;
use tract_onnx::pb;

/// ONNX opset the exports target.
pub const OPSET: i64 = 17;
/// ONNX IR version written (IR 8 = ONNX 1.10+, understood by opset 17 readers).
pub const IR_VERSION: i64 = 8;
/// Name of the symbolic batch dimension.
pub const BATCH_DIM: &str = "N";

/// Names and documentation of a plain MLP export.
#[derive(Clone, Debug)]
pub struct OnnxIo {
    /// Graph input name (`[N, in]`).
    pub input: String,
    /// Graph output name (`[N, out]`, or `[N]` when flattened).
    pub output: String,
    /// Reshape a one-wide output to `[N]`.
    pub flatten_output: bool,
    /// Free text stored as the model's doc string (Netron shows it).
    pub doc: String,
    /// Key/value metadata (layout version, feature names, training seed, …).
    pub metadata: Vec<(String, String)>,
}

impl OnnxIo {
    /// Input `input`, output `output`, not flattened, no doc or metadata.
    pub fn new(input: &str, output: &str) -> Self {
        Self {
            input: input.into(),
            output: output.into(),
            flatten_output: false,
            doc: String::new(),
            metadata: Vec::new(),
        }
    }
}

/// Why an export was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ExportError {
    /// The network has no layers.
    #[error("cannot export an MLP with no layers")]
    Empty,
    /// `flatten_output` needs a one-wide output.
    #[error("flatten_output needs a 1-wide output, the MLP has {0}")]
    NotFlattenable(usize),
    /// The split widths do not add up to the first layer's input width.
    #[error("split inputs {row} + {shared} ≠ MLP input width {input}")]
    SplitMismatch {
        /// Per-row width.
        row: usize,
        /// Shared-row width.
        shared: usize,
        /// The MLP's input width.
        input: usize,
    },
}

/// Encodes `net` as an ONNX model: input `io.input` `[N, in]` → output `io.output`.
/// O(params).
pub fn mlp_model(net: &Mlp, io: &OnnxIo) -> Result<Vec<u8>, ExportError> {
    let first = net.layers.first().ok_or(ExportError::Empty)?;
    let mut g = GraphBuilder::default();
    g.input(&io.input, first.w.nrows());
    let h = g.layers(net, 0, io.input.clone());
    finish(g, net, io, h)
}

/// Encodes `net` with its first layer split between a per-row input (`row`: name, width;
/// shape `[N, width]`) and a shared input (`shared`: name, width; shape `[1, width]`), so
/// `output[i] = net([row_i, shared])`. O(params).
pub fn split_input_model(
    net: &Mlp,
    row: (&str, usize),
    shared: (&str, usize),
    io: &OnnxIo,
) -> Result<Vec<u8>, ExportError> {
    let first = net.layers.first().ok_or(ExportError::Empty)?;
    if row.1 + shared.1 != first.w.nrows() {
        return Err(ExportError::SplitMismatch {
            row: row.1,
            shared: shared.1,
            input: first.w.nrows(),
        });
    }
    let mut g = GraphBuilder::default();
    g.input(row.0, row.1);
    g.input_fixed(shared.0, 1, shared.1);
    let w_row = first
        .w
        .slice_axis(ndarray::Axis(0), ndarray::Slice::from(..row.1));
    let w_shared = first
        .w
        .slice_axis(ndarray::Axis(0), ndarray::Slice::from(row.1..));
    let cols = first.w.ncols();
    g.weight("l0_w_row", &[row.1, cols], w_row.iter().copied().collect());
    g.weight(
        "l0_w_shared",
        &[shared.1, cols],
        w_shared.iter().copied().collect(),
    );
    g.weight("l0_b", &[cols], first.b.to_vec());
    g.node("MatMul", &[row.0, "l0_w_row"], "l0_row", vec![]);
    g.node("MatMul", &[shared.0, "l0_w_shared"], "l0_shared", vec![]);
    g.node("Add", &["l0_row", "l0_shared"], "l0_sum", vec![]);
    g.node("Add", &["l0_sum", "l0_b"], "l0_z", vec![]);
    let h = g.activation(first.act, "l0_z", "l0");
    let h = g.layers(net, 1, h);
    finish(g, net, io, h)
}

fn finish(mut g: GraphBuilder, net: &Mlp, io: &OnnxIo, h: String) -> Result<Vec<u8>, ExportError> {
    let out = net.output_dim();
    if io.flatten_output {
        if out != 1 {
            return Err(ExportError::NotFlattenable(out));
        }
        g.int_const("flat_shape", &[-1]);
        g.node("Reshape", &[&h, "flat_shape"], &io.output, vec![]);
        g.output(&io.output, None);
    } else {
        g.node("Identity", &[&h], &io.output, vec![]);
        g.output(&io.output, Some(out));
    }
    let graph = pb::GraphProto {
        name: "gantry_mlp".into(),
        node: g.nodes,
        initializer: g.inits,
        input: g.inputs,
        output: g.outputs,
        ..Default::default()
    };
    let model = pb::ModelProto {
        ir_version: IR_VERSION,
        opset_import: vec![pb::OperatorSetIdProto {
            domain: String::new(),
            version: OPSET,
        }],
        producer_name: "gantry".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        doc_string: io.doc.clone(),
        graph: Some(graph),
        metadata_props: io
            .metadata
            .iter()
            .map(|(k, v)| pb::StringStringEntryProto {
                key: k.clone(),
                value: v.clone(),
            })
            .collect(),
        ..Default::default()
    };
    Ok(model.encode_to_vec())
}

#[derive(Default)]
struct GraphBuilder {
    nodes: Vec<pb::NodeProto>,
    inits: Vec<pb::TensorProto>,
    inputs: Vec<pb::ValueInfoProto>,
    outputs: Vec<pb::ValueInfoProto>,
}

impl GraphBuilder {
    /// Layers `from..` as Gemm + activation, starting from tensor `h`; returns the last name.
    fn layers(&mut self, net: &Mlp, from: usize, mut h: String) -> String {
        for (i, l) in net.layers.iter().enumerate().skip(from) {
            let (w, b, z) = (format!("l{i}_w"), format!("l{i}_b"), format!("l{i}_z"));
            self.weight(
                &w,
                &[l.w.nrows(), l.w.ncols()],
                l.w.iter().copied().collect(),
            );
            self.weight(&b, &[l.b.len()], l.b.to_vec());
            self.node("Gemm", &[&h, &w, &b], &z, vec![]);
            h = self.activation(l.act, &z, &format!("l{i}"));
        }
        h
    }

    fn activation(&mut self, act: Activation, z: &str, prefix: &str) -> String {
        let (op, out) = match act {
            Activation::Relu => ("Relu", format!("{prefix}_relu")),
            Activation::Tanh => ("Tanh", format!("{prefix}_tanh")),
            Activation::Identity => return z.to_string(),
        };
        self.node(op, &[z], &out, vec![]);
        out
    }

    fn node(
        &mut self,
        op: &str,
        inputs: &[&str],
        output: &str,
        attribute: Vec<pb::AttributeProto>,
    ) {
        self.nodes.push(pb::NodeProto {
            name: format!("{output}_{op}"),
            op_type: op.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.into()],
            attribute,
            ..Default::default()
        });
    }

    fn weight(&mut self, name: &str, dims: &[usize], data: Vec<f32>) {
        self.inits.push(pb::TensorProto {
            name: name.into(),
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type: pb::tensor_proto::DataType::Float as i32,
            float_data: data,
            ..Default::default()
        });
    }

    fn int_const(&mut self, name: &str, data: &[i64]) {
        self.inits.push(pb::TensorProto {
            name: name.into(),
            dims: vec![data.len() as i64],
            data_type: pb::tensor_proto::DataType::Int64 as i32,
            int64_data: data.to_vec(),
            ..Default::default()
        });
    }

    fn input(&mut self, name: &str, width: usize) {
        self.inputs
            .push(value_info(name, &[Dim::Batch, Dim::Fixed(width)]));
    }

    fn input_fixed(&mut self, name: &str, rows: usize, width: usize) {
        self.inputs
            .push(value_info(name, &[Dim::Fixed(rows), Dim::Fixed(width)]));
    }

    fn output(&mut self, name: &str, width: Option<usize>) {
        let dims: Vec<Dim> = match width {
            Some(w) => vec![Dim::Batch, Dim::Fixed(w)],
            None => vec![Dim::Batch],
        };
        self.outputs.push(value_info(name, &dims));
    }
}

enum Dim {
    Batch,
    Fixed(usize),
}

fn value_info(name: &str, dims: &[Dim]) -> pb::ValueInfoProto {
    use pb::tensor_shape_proto::{Dimension, dimension::Value};
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(match d {
                Dim::Batch => Value::DimParam(BATCH_DIM.into()),
                Dim::Fixed(n) => Value::DimValue(*n as i64),
            }),
            ..Default::default()
        })
        .collect();
    pb::ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: pb::tensor_proto::DataType::Float as i32,
                shape: Some(pb::TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::mlp::MlpConfig;

    #[test]
    fn export_decodes_back_with_expected_structure() {
        let net = Mlp::new(&MlpConfig::new(&[20, 16, 1], Activation::Tanh), 2);
        let mut io = OnnxIo::new("x", "y");
        io.flatten_output = true;
        io.metadata.push(("layout_version".into(), "1".into()));
        let bytes =
            split_input_model(&net, ("gpu_features", 12), ("job_features", 8), &io).unwrap();
        let m = pb::ModelProto::decode(bytes.as_slice()).unwrap();
        assert_eq!(m.opset_import[0].version, OPSET);
        let g = m.graph.unwrap();
        let names: Vec<_> = g.input.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["gpu_features", "job_features"]);
        assert_eq!(g.output[0].name, "y");
        let ops: Vec<_> = g.node.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(
            ops,
            ["MatMul", "MatMul", "Add", "Add", "Tanh", "Gemm", "Reshape"]
        );
        assert_eq!(m.metadata_props[0].key, "layout_version");
    }

    #[test]
    fn refuses_bad_shapes() {
        let net = Mlp::new(&MlpConfig::new(&[20, 2], Activation::Tanh), 2);
        let mut io = OnnxIo::new("x", "y");
        io.flatten_output = true;
        assert_eq!(mlp_model(&net, &io), Err(ExportError::NotFlattenable(2)));
        assert!(matches!(
            split_input_model(&net, ("a", 12), ("b", 7), &io),
            Err(ExportError::SplitMismatch { .. })
        ));
        let empty = Mlp { layers: vec![] };
        assert_eq!(mlp_model(&empty, &io), Err(ExportError::Empty));
    }
}
