//! Run an ONNX model with tract: load once, check the shapes it declares, keep one
//! optimised plan and one reused state, and reject non-finite outputs.
//!
//! The loader is generic over "rank-2 float inputs with a fixed width": callers state what
//! they expect ([`InputSpec`]) and get a typed [`ModelError`] when the file is missing, is
//! not an ONNX model, or declares other shapes — at load time, not on the first decision.

use ndarray::ArrayView2;
use std::path::{Path, PathBuf};
use tract_onnx::prelude::*;

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file does not exist or cannot be read.
    #[error("model file {path}: {source}")]
    Missing {
        /// The path given.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid ONNX model, or tract cannot type or optimise it.
    #[error("model file {path} is not a usable ONNX model: {message}")]
    Corrupt {
        /// The path given.
        path: PathBuf,
        /// tract's explanation.
        message: String,
    },
    /// The model's inputs or outputs differ from what the caller needs.
    #[error("model {what}: expected {expected}, model has {got}")]
    Shape {
        /// Which input/output, e.g. `input 0 "gpu_features"`.
        what: String,
        /// The expected shape, e.g. `[N, 12]`.
        expected: String,
        /// The model's.
        got: String,
    },
    /// tract failed while running (e.g. an input of the wrong width).
    #[error("model run failed: {0}")]
    Run(String),
    /// An output value was NaN or infinite.
    #[error("model output {index} is not finite ({value})")]
    NonFinite {
        /// Flat index into the output.
        index: usize,
        /// The value.
        value: f32,
    },
}

/// What one model input must look like: `[rows, width]`, `rows` = `None` for the symbolic
/// batch dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputSpec {
    /// Expected graph input name (checked; the order of specs is the order of inputs).
    pub name: String,
    /// Fixed row count, or `None` for the batch dimension.
    pub rows: Option<usize>,
    /// Column count.
    pub width: usize,
}

impl InputSpec {
    /// A `[N, width]` input called `name`.
    pub fn batch(name: &str, width: usize) -> Self {
        Self {
            name: name.into(),
            rows: None,
            width,
        }
    }

    /// A `[rows, width]` input called `name`.
    pub fn fixed(name: &str, rows: usize, width: usize) -> Self {
        Self {
            name: name.into(),
            rows: Some(rows),
            width,
        }
    }

    fn describe(&self) -> String {
        match self.rows {
            Some(r) => format!("[{r}, {}]", self.width),
            None => format!("[N, {}]", self.width),
        }
    }
}

/// An ONNX model loaded into tract with one reusable plan state. A clone shares the
/// optimised plan and gets its own state.
#[derive(Clone)]
pub struct TractModel {
    path: PathBuf,
    inputs: Vec<InputSpec>,
    state: TypedSimpleState,
    out: Vec<f32>,
}

impl std::fmt::Debug for TractModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TractModel")
            .field("path", &self.path)
            .field("inputs", &self.inputs)
            .finish_non_exhaustive()
    }
}

impl TractModel {
    /// Loads `path`, checks that its inputs are exactly `inputs` (names, fixed widths, batch
    /// or fixed rows) and that it has one output whose trailing size is `output_width` per
    /// batch row (`Some(w)`: `[N, w]`; `None`: `[N]`), then optimises it into a plan.
    /// O(model size); tens of milliseconds for the small policies here.
    pub fn load(
        path: &Path,
        inputs: &[InputSpec],
        output_width: Option<usize>,
    ) -> Result<Self, ModelError> {
        let bytes = std::fs::read(path).map_err(|source| ModelError::Missing {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_bytes(path, &bytes, inputs, output_width)
    }

    /// As [`load`](Self::load) from bytes in memory; `path` only labels errors.
    pub fn from_bytes(
        path: &Path,
        bytes: &[u8],
        inputs: &[InputSpec],
        output_width: Option<usize>,
    ) -> Result<Self, ModelError> {
        let corrupt = |e: TractError| ModelError::Corrupt {
            path: path.to_path_buf(),
            message: format!("{e:#}"),
        };
        let model = tract_onnx::onnx()
            .model_for_read(&mut &bytes[..])
            .map_err(corrupt)?;
        let typed = model.into_typed().map_err(corrupt)?;
        check_inputs(&typed, inputs)?;
        check_output(&typed, output_width)?;
        let plan = typed
            .into_optimized()
            .map_err(corrupt)?
            .into_runnable()
            .map_err(corrupt)?;
        let state = plan.spawn().map_err(corrupt)?;
        Ok(Self {
            path: path.to_path_buf(),
            inputs: inputs.to_vec(),
            state,
            out: Vec::new(),
        })
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs the model on `inputs` (one view per [`InputSpec`], in order) and returns the
    /// flattened first output, every value finite. Widths are checked before tract sees
    /// them. O(model FLOPs · N); allocation: the input tensors and tract's outputs.
    pub fn run(&mut self, inputs: &[ArrayView2<f32>]) -> Result<&[f32], ModelError> {
        if inputs.len() != self.inputs.len() {
            return Err(ModelError::Shape {
                what: "input count".into(),
                expected: self.inputs.len().to_string(),
                got: inputs.len().to_string(),
            });
        }
        let mut tv = TVec::new();
        for (spec, x) in self.inputs.iter().zip(inputs) {
            let rows_ok = spec.rows.is_none_or(|r| r == x.nrows());
            if x.ncols() != spec.width || !rows_ok {
                return Err(ModelError::Shape {
                    what: format!("input \"{}\"", spec.name),
                    expected: spec.describe(),
                    got: format!("{:?}", x.shape()),
                });
            }
            tv.push(Tensor::from(x.to_owned()).into_tvalue());
        }
        let outputs = self
            .state
            .run(tv)
            .map_err(|e| ModelError::Run(format!("{e:#}")))?;
        let first = outputs
            .first()
            .ok_or_else(|| ModelError::Run("model produced no output".into()))?;
        let view = first
            .to_plain_array_view::<f32>()
            .map_err(|e| ModelError::Run(format!("{e:#}")))?;
        self.out.clear();
        self.out.extend(view.iter().copied());
        if let Some((index, &value)) = self.out.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(ModelError::NonFinite { index, value });
        }
        Ok(&self.out)
    }
}

fn dim_text(d: &TDim) -> String {
    d.to_i64()
        .map_or_else(|_| "N".to_string(), |v| v.to_string())
}

fn shape_text(dims: &[TDim]) -> String {
    format!(
        "[{}]",
        dims.iter().map(dim_text).collect::<Vec<_>>().join(", ")
    )
}

fn check_inputs(model: &TypedModel, inputs: &[InputSpec]) -> Result<(), ModelError> {
    let outlets = model
        .input_outlets()
        .map_err(|e| ModelError::Run(e.to_string()))?;
    if outlets.len() != inputs.len() {
        return Err(ModelError::Shape {
            what: "input count".into(),
            expected: inputs.len().to_string(),
            got: outlets.len().to_string(),
        });
    }
    for (i, (spec, outlet)) in inputs.iter().zip(outlets).enumerate() {
        let name = &model.node(outlet.node).name;
        let fact = model
            .outlet_fact(*outlet)
            .map_err(|e| ModelError::Run(e.to_string()))?;
        let dims = fact.shape.dims();
        let what = format!("input {i} \"{name}\"");
        let rows_ok = match spec.rows {
            None => dims.first().is_some_and(|d| d.to_i64().is_err()),
            Some(r) => dims.first().and_then(|d| d.to_i64().ok()) == Some(r as i64),
        };
        let width_ok = dims.get(1).and_then(|d| d.to_i64().ok()) == Some(spec.width as i64);
        if name != &spec.name
            || dims.len() != 2
            || !rows_ok
            || !width_ok
            || fact.datum_type != f32::datum_type()
        {
            return Err(ModelError::Shape {
                what,
                expected: format!("\"{}\" f32 {}", spec.name, spec.describe()),
                got: format!("\"{name}\" {:?} {}", fact.datum_type, shape_text(dims)),
            });
        }
    }
    Ok(())
}

fn check_output(model: &TypedModel, width: Option<usize>) -> Result<(), ModelError> {
    let outlets = model
        .output_outlets()
        .map_err(|e| ModelError::Run(e.to_string()))?;
    let expected = match width {
        Some(w) => format!("one f32 output [N, {w}]"),
        None => "one f32 output [N]".to_string(),
    };
    let got = outlets
        .iter()
        .map(|o| {
            model
                .outlet_fact(*o)
                .map(|f| shape_text(f.shape.dims()))
                .unwrap_or_else(|e| e.to_string())
        })
        .collect::<Vec<_>>()
        .join(", ");
    let ok = outlets.len() == 1
        && model.outlet_fact(outlets[0]).is_ok_and(|f| {
            let dims = f.shape.dims();
            let lead_ok = dims.first().is_some_and(|d| d.to_i64().is_err());
            let rest_ok = match width {
                Some(w) => dims.len() == 2 && dims[1].to_i64().ok() == Some(w as i64),
                None => dims.len() == 1,
            };
            f.datum_type == f32::datum_type() && lead_ok && rest_ok
        });
    if ok {
        Ok(())
    } else {
        Err(ModelError::Shape {
            what: "output".into(),
            expected,
            got: format!("[{got}]"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::mlp::{Activation, Mlp, MlpConfig};
    use crate::learn::onnx::{OnnxIo, mlp_model, split_input_model};
    use ndarray::{Array2, Axis, concatenate};

    /// The path `name` in a new temporary folder, removed when the guard drops.
    fn tmp(name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        (dir, path)
    }

    fn grid(n: usize, d: usize) -> Array2<f32> {
        Array2::from_shape_fn((n, d), |(i, j)| ((i * 7 + j * 3) % 11) as f32 / 11.0 - 0.4)
    }

    #[test]
    fn plain_mlp_matches_ndarray_at_several_batch_sizes() {
        let net = Mlp::new(&MlpConfig::new(&[6, 16, 16, 3], Activation::Relu), 4);
        let bytes = mlp_model(&net, &OnnxIo::new("x", "y")).unwrap();
        let mut m = TractModel::from_bytes(
            Path::new("mem"),
            &bytes,
            &[InputSpec::batch("x", 6)],
            Some(3),
        )
        .unwrap();
        for n in [1usize, 5, 32, 256] {
            let x = grid(n, 6);
            let want = net.forward(x.view());
            let got = m.run(&[x.view()]).unwrap();
            assert_eq!(got.len(), n * 3);
            for (a, b) in got.iter().zip(want.iter()) {
                assert!((a - b).abs() < 1e-4, "n={n}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn split_scorer_matches_concatenated_mlp() {
        let net = Mlp::new(&MlpConfig::new(&[20, 32, 1], Activation::Tanh), 9);
        let mut io = OnnxIo::new("unused", "scores");
        io.flatten_output = true;
        let bytes =
            split_input_model(&net, ("gpu_features", 12), ("job_features", 8), &io).unwrap();
        let specs = [
            InputSpec::batch("gpu_features", 12),
            InputSpec::fixed("job_features", 1, 8),
        ];
        let mut m = TractModel::from_bytes(Path::new("mem"), &bytes, &specs, None).unwrap();
        for n in [32usize, 256] {
            let g = grid(n, 12);
            let j = grid(1, 8);
            let cat = concatenate(Axis(1), &[g.view(), j.broadcast((n, 8)).unwrap()]).unwrap();
            let want = net.forward(cat.view());
            let got = m.run(&[g.view(), j.view()]).unwrap().to_vec();
            assert_eq!(got.len(), n);
            for (a, b) in got.iter().zip(want.iter()) {
                assert!((a - b).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn load_errors_are_typed() {
        let spec = [InputSpec::batch("x", 6)];
        let missing = TractModel::load(&tmp("nope.onnx").1, &spec, Some(3));
        assert!(
            matches!(missing, Err(ModelError::Missing { .. })),
            "{missing:?}"
        );
        let (_bad_dir, bad) = tmp("corrupt.onnx");
        std::fs::write(&bad, b"this is not a protobuf \xff\xfe\x00garbage").unwrap();
        let corrupt = TractModel::load(&bad, &spec, Some(3));
        assert!(
            matches!(corrupt, Err(ModelError::Corrupt { .. })),
            "{corrupt:?}"
        );
        let net = Mlp::new(&MlpConfig::new(&[5, 4, 3], Activation::Relu), 4);
        let (_wrong_dir, wrong) = tmp("wrong.onnx");
        std::fs::write(&wrong, mlp_model(&net, &OnnxIo::new("x", "y")).unwrap()).unwrap();
        let shape = TractModel::load(&wrong, &spec, Some(3));
        assert!(matches!(shape, Err(ModelError::Shape { .. })), "{shape:?}");
        let out_w = TractModel::load(&wrong, &[InputSpec::batch("x", 5)], Some(2));
        assert!(matches!(out_w, Err(ModelError::Shape { .. })), "{out_w:?}");
        let name = TractModel::load(&wrong, &[InputSpec::batch("z", 5)], Some(3));
        assert!(matches!(name, Err(ModelError::Shape { .. })), "{name:?}");
        let ok = TractModel::load(&wrong, &[InputSpec::batch("x", 5)], Some(3));
        assert!(ok.is_ok());
    }

    #[test]
    fn non_finite_output_and_wrong_width_are_typed_errors() {
        let mut net = Mlp::new(&MlpConfig::new(&[2, 2], Activation::Identity), 1);
        net.layers[0].b[1] = f32::NAN;
        let bytes = mlp_model(&net, &OnnxIo::new("x", "y")).unwrap();
        let mut m = TractModel::from_bytes(
            Path::new("mem"),
            &bytes,
            &[InputSpec::batch("x", 2)],
            Some(2),
        )
        .unwrap();
        let x = grid(3, 2);
        assert!(matches!(
            m.run(&[x.view()]),
            Err(ModelError::NonFinite { index: 1, .. })
        ));
        let narrow = grid(3, 1);
        assert!(matches!(
            m.run(&[narrow.view()]),
            Err(ModelError::Shape { .. })
        ));
    }
}
