//! A small multi-layer perceptron on `ndarray` with hand-written backprop and AdamW.
//!
//! Why hand-written: the policies here are tiny (tens of thousands of weights), so a
//! framework's graph machinery costs more than the arithmetic; plain `ndarray` keeps the
//! dependency tree at a dozen crates, and single-threaded `matrixmultiply` makes every run
//! **bit-exact** for a given seed on a given machine (the determinism tests hash the weights).
//!
//! Layout: rows are samples. A layer holds `w: [in, out]` and `b: [out]`, so
//! `y = act(x · w + b)` with `x: [N, in]` — the same orientation as ONNX `MatMul` /
//! `Gemm(transB = 0)`, which lets [`onnx`](super::onnx) export the weights as they are.
//!
//! Typical use (a training step):
//! ```
//! use gantry::learn::mlp::{Activation, AdamW, AdamWConfig, Mlp, MlpConfig};
//! use ndarray::Array2;
//! let mut net = Mlp::new(&MlpConfig::new(&[3, 16, 1], Activation::Tanh), 7);
//! let mut opt = AdamW::new(&net, AdamWConfig::default());
//! let x = Array2::<f32>::zeros((4, 3));
//! let (y, cache) = net.forward_train(x.view());
//! let grad_y = &y - 1.0; // d(½‖y − 1‖²)/dy
//! let (grads, _grad_x) = net.backward(&cache, grad_y.view());
//! opt.step(&mut net, &grads);
//! ```

use fnv::FnvHasher;
use ndarray::{Array1, Array2, ArrayView2, Axis, Zip};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hash::Hasher;

/// An element-wise non-linearity after a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Activation {
    /// max(0, x).
    Relu,
    /// tanh(x).
    Tanh,
    /// x (output layers).
    Identity,
}

impl Activation {
    /// Applies the activation in place. O(len).
    fn apply(self, z: &mut Array2<f32>) {
        match self {
            Activation::Relu => z.mapv_inplace(|v| v.max(0.0)),
            Activation::Tanh => z.mapv_inplace(f32::tanh),
            Activation::Identity => {}
        }
    }

    /// Multiplies `grad` by the derivative at output `y` (both activations' derivatives are
    /// functions of their output). O(len).
    fn backprop(self, y: &Array2<f32>, grad: &mut Array2<f32>) {
        match self {
            Activation::Relu => Zip::from(grad).and(y).for_each(|g, &y| {
                if y <= 0.0 {
                    *g = 0.0;
                }
            }),
            Activation::Tanh => Zip::from(grad).and(y).for_each(|g, &y| *g *= 1.0 - y * y),
            Activation::Identity => {}
        }
    }
}

/// The shape of an [`Mlp`]: layer widths and activations.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MlpConfig {
    /// Widths from input to output, e.g. `[20, 64, 64, 1]` = three layers.
    pub sizes: Vec<usize>,
    /// Activation after every hidden layer.
    pub hidden: Activation,
    /// Activation after the last layer.
    pub output: Activation,
    /// Multiplier on the last layer's initial weights (0.01 for a policy head keeps the
    /// initial policy near uniform; 1.0 for a value head).
    pub output_init_scale: f32,
}

impl MlpConfig {
    /// Widths `sizes`, activation `hidden` between layers, identity output, unit init scale.
    pub fn new(sizes: &[usize], hidden: Activation) -> Self {
        Self {
            sizes: sizes.to_vec(),
            hidden,
            output: Activation::Identity,
            output_init_scale: 1.0,
        }
    }

    /// The same with the last layer's initial weights scaled by `scale`.
    pub fn with_output_scale(mut self, scale: f32) -> Self {
        self.output_init_scale = scale;
        self
    }
}

/// One affine layer and its activation: `y = act(x · w + b)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// Weights, `[in, out]`.
    pub w: Array2<f32>,
    /// Bias, `[out]`.
    pub b: Array1<f32>,
    /// Activation after the affine map.
    pub act: Activation,
}

/// A feed-forward network of [`Layer`]s.
#[derive(Clone, Debug, PartialEq)]
pub struct Mlp {
    /// The layers, input first.
    pub layers: Vec<Layer>,
}

/// What [`Mlp::forward_train`] keeps for [`Mlp::backward`]: the input and every layer's
/// output, `[N, width]` each.
#[derive(Clone, Debug)]
pub struct ForwardCache {
    /// `acts[0]` = input, `acts[i + 1]` = output of layer i.
    pub acts: Vec<Array2<f32>>,
}

/// Gradients of a scalar loss with respect to every parameter, shaped like the [`Mlp`].
#[derive(Clone, Debug, PartialEq)]
pub struct Gradients {
    /// Per layer: (d/dw `[in, out]`, d/db `[out]`).
    pub layers: Vec<(Array2<f32>, Array1<f32>)>,
}

impl Gradients {
    /// All-zero gradients for `net` (to accumulate into).
    pub fn zeros_like(net: &Mlp) -> Self {
        Self {
            layers: net
                .layers
                .iter()
                .map(|l| (Array2::zeros(l.w.raw_dim()), Array1::zeros(l.b.raw_dim())))
                .collect(),
        }
    }

    /// `self += other`. O(params).
    pub fn add_assign(&mut self, other: &Gradients) {
        for ((w, b), (ow, ob)) in self.layers.iter_mut().zip(&other.layers) {
            *w += ow;
            *b += ob;
        }
    }

    /// `self *= k`. O(params).
    pub fn scale(&mut self, k: f32) {
        for (w, b) in &mut self.layers {
            *w *= k;
            *b *= k;
        }
    }

    /// The L2 norm over all parameters. O(params).
    pub fn global_norm(&self) -> f32 {
        let sq: f64 = self
            .layers
            .iter()
            .map(|(w, b)| {
                w.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>()
                    + b.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>()
            })
            .sum();
        sq.sqrt() as f32
    }

    /// Rescales so the global norm is at most `max_norm` (PPO's gradient clipping);
    /// returns the norm before clipping. O(params).
    pub fn clip_global_norm(&mut self, max_norm: f32) -> f32 {
        let n = self.global_norm();
        if n > max_norm && n.is_finite() && n > 0.0 {
            self.scale(max_norm / n);
        }
        n
    }
}

impl Mlp {
    /// A network shaped by `cfg` with weights drawn from a ChaCha8 stream seeded by `seed`:
    /// He-uniform (`±√(6/fan_in)`) before ReLU, Glorot-uniform (`±√(6/(fan_in + fan_out))`)
    /// otherwise (He et al. 2015; Glorot & Bengio 2010), zero biases, the last layer scaled by
    /// `cfg.output_init_scale`. Same seed → same weights, bit for bit. O(params).
    pub fn new(cfg: &MlpConfig, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let n = cfg.sizes.len().saturating_sub(1);
        let layers = (0..n)
            .map(|i| {
                let (fan_in, fan_out) = (cfg.sizes[i], cfg.sizes[i + 1]);
                let last = i + 1 == n;
                let act = if last { cfg.output } else { cfg.hidden };
                let bound = match act {
                    Activation::Relu => (6.0 / fan_in.max(1) as f64).sqrt(),
                    _ => (6.0 / (fan_in + fan_out).max(1) as f64).sqrt(),
                } as f32;
                let scale = if last { cfg.output_init_scale } else { 1.0 };
                let w = Array2::from_shape_simple_fn((fan_in, fan_out), || {
                    rng.random_range(-bound..=bound) * scale
                });
                Layer {
                    w,
                    b: Array1::zeros(fan_out),
                    act,
                }
            })
            .collect();
        Self { layers }
    }

    /// Input width.
    pub fn input_dim(&self) -> usize {
        self.layers.first().map_or(0, |l| l.w.nrows())
    }

    /// Output width.
    pub fn output_dim(&self) -> usize {
        self.layers.last().map_or(0, |l| l.w.ncols())
    }

    /// Number of parameters.
    pub fn param_count(&self) -> usize {
        self.layers.iter().map(|l| l.w.len() + l.b.len()).sum()
    }

    /// Batch inference: `x: [N, in]` → `[N, out]`. O(N · params). Panics (ndarray) if the
    /// width of `x` is not [`input_dim`](Self::input_dim): shapes are the caller's contract.
    pub fn forward(&self, x: ArrayView2<f32>) -> Array2<f32> {
        let mut h = x.to_owned();
        for l in &self.layers {
            h = Self::affine(l, &h);
        }
        h
    }

    /// Forward pass that keeps every activation for [`backward`](Self::backward).
    /// O(N · params) time and O(N · Σ widths) memory.
    pub fn forward_train(&self, x: ArrayView2<f32>) -> (Array2<f32>, ForwardCache) {
        let mut acts = Vec::with_capacity(self.layers.len() + 1);
        acts.push(x.to_owned());
        for l in &self.layers {
            let next = Self::affine(l, acts.last().unwrap_or(&acts[0]));
            acts.push(next);
        }
        let out = acts.last().cloned().unwrap_or_else(|| x.to_owned());
        (out, ForwardCache { acts })
    }

    fn affine(l: &Layer, h: &Array2<f32>) -> Array2<f32> {
        let mut z = h.dot(&l.w);
        z += &l.b;
        l.act.apply(&mut z);
        z
    }

    /// Backprop of `grad_out = dL/d(output)` (`[N, out]`) through the cached pass: returns
    /// the parameter gradients (summed over the batch — scale the loss for a mean) and
    /// `dL/d(input)` (`[N, in]`). O(N · params).
    pub fn backward(
        &self,
        cache: &ForwardCache,
        grad_out: ArrayView2<f32>,
    ) -> (Gradients, Array2<f32>) {
        let mut grads = Vec::with_capacity(self.layers.len());
        let mut g = grad_out.to_owned();
        for (i, l) in self.layers.iter().enumerate().rev() {
            l.act.backprop(&cache.acts[i + 1], &mut g);
            let x = &cache.acts[i];
            let dw = x.t().dot(&g);
            let db = g.sum_axis(Axis(0));
            g = g.dot(&l.w.t());
            grads.push((dw, db));
        }
        grads.reverse();
        (Gradients { layers: grads }, g)
    }

    /// A stable 64-bit FNV-1a hash of every shape and weight bit pattern, for determinism
    /// checks ("same seed → same weights"). O(params).
    pub fn weight_hash(&self) -> u64 {
        let mut h = FnvHasher::default();
        for l in &self.layers {
            h.write_u64(l.w.nrows() as u64);
            h.write_u64(l.w.ncols() as u64);
            for &x in l.w.iter().chain(l.b.iter()) {
                h.write_u32(x.to_bits());
            }
        }
        h.finish()
    }

    /// Whether every parameter is finite.
    pub fn is_finite(&self) -> bool {
        self.layers
            .iter()
            .all(|l| l.w.iter().chain(l.b.iter()).all(|x| x.is_finite()))
    }
}

/// AdamW hyper-parameters (Loshchilov & Hutter 2019, decoupled weight decay).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AdamWConfig {
    /// Step size.
    pub lr: f32,
    /// First-moment decay.
    pub beta1: f32,
    /// Second-moment decay.
    pub beta2: f32,
    /// Denominator guard.
    pub eps: f32,
    /// Decoupled weight decay per step, applied to weights only (not biases).
    pub weight_decay: f32,
}

impl Default for AdamWConfig {
    fn default() -> Self {
        Self {
            lr: 3e-4,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
        }
    }
}

/// AdamW optimiser state for one [`Mlp`]. Minimises: [`step`](Self::step) moves against
/// the gradient.
#[derive(Clone, Debug)]
pub struct AdamW {
    /// Hyper-parameters (the learning rate may be changed between steps for schedules).
    pub cfg: AdamWConfig,
    m: Gradients,
    v: Gradients,
    t: i32,
}

impl AdamW {
    /// Zeroed moments shaped like `net`.
    pub fn new(net: &Mlp, cfg: AdamWConfig) -> Self {
        Self {
            cfg,
            m: Gradients::zeros_like(net),
            v: Gradients::zeros_like(net),
            t: 0,
        }
    }

    /// Steps taken so far.
    pub fn steps(&self) -> i32 {
        self.t
    }

    /// One bias-corrected AdamW update of `net` from `grads`. O(params).
    pub fn step(&mut self, net: &mut Mlp, grads: &Gradients) {
        self.t = self.t.saturating_add(1);
        let c = self.cfg;
        let bc1 = 1.0 - c.beta1.powi(self.t);
        let bc2 = 1.0 - c.beta2.powi(self.t);
        let step = c.lr / bc1;
        let decay = 1.0 - c.lr * c.weight_decay;
        for (((layer, (gw, gb)), (mw, mb)), (vw, vb)) in net
            .layers
            .iter_mut()
            .zip(&grads.layers)
            .zip(&mut self.m.layers)
            .zip(&mut self.v.layers)
        {
            let upd = |p: &mut f32, g: &f32, m: &mut f32, v: &mut f32, wd: f32| {
                *m = c.beta1 * *m + (1.0 - c.beta1) * g;
                *v = c.beta2 * *v + (1.0 - c.beta2) * g * g;
                *p = *p * wd - step * *m / ((*v / bc2).sqrt() + c.eps);
            };
            Zip::from(&mut layer.w)
                .and(gw)
                .and(mw)
                .and(vw)
                .for_each(|p, g, m, v| upd(p, g, m, v, decay));
            Zip::from(&mut layer.b)
                .and(gb)
                .and(mb)
                .and(vb)
                .for_each(|p, g, m, v| upd(p, g, m, v, 1.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn sample_input(n: usize, d: usize, seed: u64) -> Array2<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Array2::from_shape_simple_fn((n, d), || rng.random_range(-1.0f32..1.0))
    }

    /// Loss = Σ c_ij · y_ij with fixed random c, so dL/dy = c.
    fn loss(net: &Mlp, x: &Array2<f32>, c: &Array2<f32>) -> f64 {
        let y = net.forward(x.view());
        y.iter()
            .zip(c.iter())
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum()
    }

    #[test]
    fn gradients_match_finite_differences() {
        for act in [Activation::Tanh, Activation::Relu, Activation::Identity] {
            let mut net = Mlp::new(&MlpConfig::new(&[5, 7, 6, 3], act), 11);
            // Nudge biases off zero so ReLU kinks are not hit exactly.
            for l in &mut net.layers {
                l.b.mapv_inplace(|_| 0.05);
            }
            let x = sample_input(4, 5, 1);
            let c = sample_input(4, 3, 2);
            let (_, cache) = net.forward_train(x.view());
            let (grads, gx) = net.backward(&cache, c.view());
            let eps = 1e-3f32;
            let mut worst = 0.0f64;
            for li in 0..net.layers.len() {
                for idx in 0..net.layers[li].w.len() {
                    let (r, col) = (
                        idx / net.layers[li].w.ncols(),
                        idx % net.layers[li].w.ncols(),
                    );
                    let mut p = net.clone();
                    p.layers[li].w[[r, col]] += eps;
                    let mut m = net.clone();
                    m.layers[li].w[[r, col]] -= eps;
                    let fd = (loss(&p, &x, &c) - loss(&m, &x, &c)) / (2.0 * f64::from(eps));
                    let an = f64::from(grads.layers[li].0[[r, col]]);
                    worst = worst.max((fd - an).abs() / (1e-2 + fd.abs().max(an.abs())));
                }
                for j in 0..net.layers[li].b.len() {
                    let mut p = net.clone();
                    p.layers[li].b[j] += eps;
                    let mut m = net.clone();
                    m.layers[li].b[j] -= eps;
                    let fd = (loss(&p, &x, &c) - loss(&m, &x, &c)) / (2.0 * f64::from(eps));
                    let an = f64::from(grads.layers[li].1[j]);
                    worst = worst.max((fd - an).abs() / (1e-2 + fd.abs().max(an.abs())));
                }
            }
            // Input gradient too.
            for i in 0..x.nrows() {
                for j in 0..x.ncols() {
                    let mut xp = x.clone();
                    xp[[i, j]] += eps;
                    let mut xm = x.clone();
                    xm[[i, j]] -= eps;
                    let fd = (loss(&net, &xp, &c) - loss(&net, &xm, &c)) / (2.0 * f64::from(eps));
                    let an = f64::from(gx[[i, j]]);
                    worst = worst.max((fd - an).abs() / (1e-2 + fd.abs().max(an.abs())));
                }
            }
            assert!(worst < 2e-2, "{act:?}: worst relative error {worst}");
        }
    }

    #[test]
    fn same_seed_same_weights_other_seed_other_weights() {
        let cfg = MlpConfig::new(&[12, 32, 1], Activation::Tanh);
        assert_eq!(
            Mlp::new(&cfg, 3).weight_hash(),
            Mlp::new(&cfg, 3).weight_hash()
        );
        assert_ne!(
            Mlp::new(&cfg, 3).weight_hash(),
            Mlp::new(&cfg, 4).weight_hash()
        );
    }

    #[test]
    fn batch_forward_equals_row_by_row() {
        let net = Mlp::new(&MlpConfig::new(&[4, 8, 2], Activation::Relu), 5);
        let x = sample_input(6, 4, 9);
        let batch = net.forward(x.view());
        for i in 0..6 {
            let row = net.forward(x.slice_axis(Axis(0), ndarray::Slice::from(i..i + 1)));
            for j in 0..2 {
                assert!((row[[0, j]] - batch[[i, j]]).abs() < 1e-6);
            }
        }
        assert_eq!(net.input_dim(), 4);
        assert_eq!(net.output_dim(), 2);
        assert_eq!(net.param_count(), 4 * 8 + 8 + 8 * 2 + 2);
    }

    #[test]
    fn adamw_fits_a_line_and_training_is_bit_exact() {
        let run = || {
            let mut net = Mlp::new(&MlpConfig::new(&[1, 16, 1], Activation::Tanh), 1);
            let mut opt = AdamW::new(
                &net,
                AdamWConfig {
                    lr: 1e-2,
                    weight_decay: 1e-4,
                    ..AdamWConfig::default()
                },
            );
            let x = array![[-1.0f32], [-0.5], [0.0], [0.5], [1.0]];
            let target = x.mapv(|v| 0.5 * v - 0.2);
            let mut last = f32::MAX;
            for _ in 0..500 {
                let (y, cache) = net.forward_train(x.view());
                let g = (&y - &target) * (2.0 / 5.0);
                last = (&y - &target).mapv(|v| v * v).mean().unwrap_or(f32::MAX);
                let (mut grads, _) = net.backward(&cache, g.view());
                grads.clip_global_norm(10.0);
                opt.step(&mut net, &grads);
            }
            (net.weight_hash(), last)
        };
        let (h1, mse) = run();
        let (h2, _) = run();
        assert_eq!(h1, h2);
        assert!(mse < 1e-3, "mse {mse}");
    }

    #[test]
    fn gradient_helpers() {
        let net = Mlp::new(&MlpConfig::new(&[2, 2], Activation::Identity), 0);
        let mut g = Gradients::zeros_like(&net);
        g.layers[0].0.fill(3.0);
        g.layers[0].1.fill(4.0);
        // sqrt(4·9 + 2·16) = sqrt(68)
        assert!((g.global_norm() - 68f32.sqrt()).abs() < 1e-5);
        let before = g.clip_global_norm(1.0);
        assert!((before - 68f32.sqrt()).abs() < 1e-5);
        assert!((g.global_norm() - 1.0).abs() < 1e-5);
        let h = g.clone();
        g.add_assign(&h);
        assert!((g.global_norm() - 2.0).abs() < 1e-5);
        assert!(net.is_finite());
    }
}
