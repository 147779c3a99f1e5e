//! The core's [`GpuScorer`] over the shipped ONNX placement scorer, for any cluster size G:
//! - [`PolicyScorer`] (what `--placement ppo` uses): loads the file with tract, checks its
//!   shapes, then evaluates the MLP directly from the same weights ([`SplitMlp`]: one
//!   evaluation per distinct usable row, about 100× fewer FLOPs than scoring every GPU),
//!   keeping tract for a model of any other shape;
//! - [`TractScorer`]: every call through tract — the reference the direct path is tested
//!   against (same scores within 10⁻⁵, same picks).

use super::split_mlp::SplitMlp;
use super::tract_model::{InputSpec, ModelError, TractModel};
use gantry_core::placement::observation::{GPU_FEATURES, JOB_FEATURES};
use gantry_core::placement::{GpuScorer, ScoreError};
use ndarray::ArrayView2;
use std::path::Path;

/// ONNX input name of the per-GPU rows, `[N, 12]`.
pub const INPUT_GPUS: &str = "gpu_features";
/// ONNX input name of the job row, `[1, 8]`.
pub const INPUT_JOB: &str = "job_features";

/// Default location of the shipped PPO placement model.
pub const DEFAULT_PPO_MODEL: &str = "models/proximity_ppo.onnx";

/// The input specs a GPU scorer model must declare: `gpu_features [N, 12]`,
/// `job_features [1, 8]`; its output is `[N]`.
pub fn scorer_inputs() -> [InputSpec; 2] {
    [
        InputSpec::batch(INPUT_GPUS, GPU_FEATURES),
        InputSpec::fixed(INPUT_JOB, 1, JOB_FEATURES),
    ]
}

/// A GPU scorer backed by an ONNX model, or by nothing (every call fails, so the placer
/// falls back to proximity-greedy). The first failure is printed once on stderr.
#[derive(Clone, Debug)]
pub struct TractScorer {
    model: Option<TractModel>,
    warned: bool,
}

impl TractScorer {
    /// Loads a scorer model and checks its shapes (typed errors: missing, corrupt, shape).
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        Ok(Self {
            model: Some(TractModel::load(
                &super::resolve_model_path(path),
                &scorer_inputs(),
                None,
            )?),
            warned: false,
        })
    }

    /// As [`load`](Self::load) from bytes; `label` names the model in errors.
    pub fn from_bytes(label: &Path, bytes: &[u8]) -> Result<Self, ModelError> {
        Ok(Self {
            model: Some(TractModel::from_bytes(
                label,
                bytes,
                &scorer_inputs(),
                None,
            )?),
            warned: false,
        })
    }

    /// Loads `path`, or on failure prints the error and "falling back to greedy" once on
    /// stderr and returns a scorer without a model.
    pub fn load_or_fallback(path: &Path) -> Self {
        match Self::load(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("gantry: ppo placer: {e}; falling back to proximity-greedy");
                Self {
                    model: None,
                    warned: true,
                }
            }
        }
    }

    /// A scorer without a model, silently: every call fails with `NotLoaded` (for callers
    /// that will not use it).
    pub fn unloaded() -> Self {
        Self {
            model: None,
            warned: true,
        }
    }

    /// Whether a model is loaded.
    pub fn is_loaded(&self) -> bool {
        self.model.is_some()
    }
}

impl GpuScorer for TractScorer {
    fn score(
        &mut self,
        gpus: &[[f32; GPU_FEATURES]],
        job: &[f32; JOB_FEATURES],
        out: &mut [f32],
    ) -> Result<(), ScoreError> {
        let model = self.model.as_mut().ok_or(ScoreError::NotLoaded)?;
        let rows = ArrayView2::from_shape((gpus.len(), GPU_FEATURES), gpus.as_flattened())
            .map_err(|_| ScoreError::Backend)?;
        let job =
            ArrayView2::from_shape((1, JOB_FEATURES), &job[..]).map_err(|_| ScoreError::Backend)?;
        let result = model.run(&[rows, job]).and_then(|scores| {
            if scores.len() == out.len() {
                out.copy_from_slice(scores);
                Ok(())
            } else {
                Err(ModelError::Shape {
                    what: "scores".into(),
                    expected: out.len().to_string(),
                    got: scores.len().to_string(),
                })
            }
        });
        result.map_err(|e| {
            if !self.warned {
                self.warned = true;
                eprintln!("gantry: ppo placer: {e}; falling back to proximity-greedy");
            }
            match e {
                ModelError::Shape { .. } => ScoreError::ShapeMismatch {
                    expected: out.len(),
                    got: 0,
                },
                _ => ScoreError::Backend,
            }
        })
    }
}

/// The default learned scorer: the model's MLP evaluated directly ([`SplitMlp`]) when the
/// file has the scorer's plain split-input shape, else by tract; without a model every call
/// fails with `NotLoaded` (the placer then places like proximity-greedy). A clone copies the
/// weights (≈ 22 KB) and shares tract's plan.
#[derive(Clone, Debug)]
pub struct PolicyScorer {
    backend: Backend,
}

#[derive(Clone, Debug)]
enum Backend {
    Direct(Box<SplitMlp>),
    Tract(Box<TractScorer>),
    None,
}

impl PolicyScorer {
    /// Loads and checks a scorer model (tract validates the file and its shapes), then reads
    /// its weights for the direct path. Typed errors: missing, corrupt, shape.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let resolved = super::resolve_model_path(path);
        let bytes = std::fs::read(&resolved).map_err(|source| ModelError::Missing {
            path: resolved.clone(),
            source,
        })?;
        Self::from_bytes(&resolved, &bytes)
    }

    /// As [`load`](Self::load) from bytes; `label` names the model in errors.
    pub fn from_bytes(label: &Path, bytes: &[u8]) -> Result<Self, ModelError> {
        let tract = TractScorer::from_bytes(label, bytes)?;
        let backend = match SplitMlp::from_onnx(label, bytes, GPU_FEATURES, JOB_FEATURES) {
            Ok(mlp) => Backend::Direct(Box::new(mlp)),
            Err(_) => Backend::Tract(Box::new(tract)),
        };
        Ok(Self { backend })
    }

    /// Loads `path`, or on failure prints the error and "falling back to greedy" once on
    /// stderr and returns a scorer without a model.
    pub fn load_or_fallback(path: &Path) -> Self {
        match Self::load(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("gantry: ppo placer: {e}; falling back to proximity-greedy");
                Self {
                    backend: Backend::None,
                }
            }
        }
    }

    /// Which back end scores: "direct", "tract" or "none".
    pub fn backend(&self) -> &'static str {
        match self.backend {
            Backend::Direct(_) => "direct",
            Backend::Tract(_) => "tract",
            Backend::None => "none",
        }
    }

    /// Whether a model is loaded.
    pub fn is_loaded(&self) -> bool {
        !matches!(self.backend, Backend::None)
    }
}

impl GpuScorer for PolicyScorer {
    fn score(
        &mut self,
        gpus: &[[f32; GPU_FEATURES]],
        job: &[f32; JOB_FEATURES],
        out: &mut [f32],
    ) -> Result<(), ScoreError> {
        match &mut self.backend {
            Backend::Direct(mlp) => {
                if out.len() != gpus.len() {
                    return Err(ScoreError::ShapeMismatch {
                        expected: gpus.len(),
                        got: out.len(),
                    });
                }
                mlp.score(gpus.as_flattened(), job, out);
                Ok(())
            }
            Backend::Tract(tract) => tract.score(gpus, job, out),
            Backend::None => Err(ScoreError::NotLoaded),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::ppo::PpoPolicy;
    use gantry_core::placement::observation::encode;
    use gantry_core::placement::{
        GpuMask, PlacementView, Placer, ProximityGreedy, ScoreFault, ScoredPlacer,
    };
    use gantry_core::topology::LinkWeights;
    use gantry_core::{GpuId, Job, JobId, JobSpec, TimeMs, Topology};

    fn place<const G: usize, P: Placer<G>>(
        p: &mut P,
        topo: &Topology<G>,
        busy: &[u16],
        k: u16,
    ) -> Vec<GpuId> {
        let mut usable = GpuMask::<G>::none();
        for g in 0..topo.gpu_count() as u16 {
            usable.set(GpuId(g), !busy.contains(&g));
        }
        let job = Job::submitted(JobSpec::new(JobId(1), k), TimeMs(0));
        let mut picked = Vec::new();
        for _ in 0..k {
            let view = PlacementView {
                topology: topo,
                usable: &usable,
                picked: &picked,
                job: &job,
            };
            let g = p.pick(&view).unwrap();
            assert!(usable.allows(g));
            usable.set(g, false);
            picked.push(g);
        }
        picked
    }

    /// The observation of one pick: GPU rows, job row, rows filled.
    fn observe<const G: usize>(
        topology: &Topology<G>,
        usable: &GpuMask<G>,
        picked: &[GpuId],
        job: &Job,
    ) -> (Box<[[f32; GPU_FEATURES]; G]>, [f32; JOB_FEATURES], usize) {
        let view = PlacementView {
            topology,
            usable,
            picked,
            job,
        };
        let mut rows = Box::new([[0.0f32; GPU_FEATURES]; G]);
        let mut jf = [0.0f32; JOB_FEATURES];
        let n = encode(&view, &mut rows, &mut jf);
        (rows, jf, n)
    }

    /// The tract scores equal the training network's on the same observation.
    fn check_scores<const G: usize>(
        scorer: &mut TractScorer,
        policy: &PpoPolicy,
        topo: &Topology<G>,
    ) {
        let mut usable = GpuMask::<G>::none();
        for g in 0..topo.gpu_count() as u16 {
            usable.set(GpuId(g), g % 3 != 0);
        }
        let job = Job::submitted(JobSpec::new(JobId(1), 5), TimeMs(0));
        let picked = [GpuId(1)];
        let (rows, jf, n) = observe(topo, &usable, &picked, &job);
        let mut out = vec![0.0f32; n];
        scorer.score(&rows[..n], &jf, &mut out).unwrap();
        let x = ndarray::Array2::from_shape_fn((n, GPU_FEATURES + JOB_FEATURES), |(i, j)| {
            if j < GPU_FEATURES {
                rows[i][j]
            } else {
                jf[j - GPU_FEATURES]
            }
        });
        let want = policy.actor.forward(x.view());
        for (a, b) in out.iter().zip(want.iter()) {
            assert!((a - b).abs() < 1e-4, "{a} vs {b}");
        }
    }

    #[test]
    fn one_model_serves_32_and_256_gpu_trees() {
        let policy = PpoPolicy::new(32, 3);
        let bytes = policy.to_onnx(vec![]).unwrap();
        let scorer = TractScorer::from_bytes(Path::new("mem"), &bytes).unwrap();
        let small = Topology::<32>::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).unwrap();
        let big = Topology::<256>::uniform(4, 8, 8, LinkWeights::PROXIMITY_DRL).unwrap();
        check_scores(&mut scorer.clone(), &policy, &small);
        check_scores(&mut scorer.clone(), &policy, &big);
        let mut p32 = ScoredPlacer::<_, 32>::named(scorer.clone(), "ppo");
        let mut p256 = ScoredPlacer::<_, 256>::named(scorer, "ppo");
        assert_eq!(place(&mut p32, &small, &[0, 5], 6).len(), 6);
        assert_eq!(place(&mut p256, &big, &[0, 5, 100], 24).len(), 24);
        assert_eq!(p32.fallbacks() + p256.fallbacks(), 0);
        // The shipped model too, when present.
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/proximity_ppo.onnx");
        if shipped.is_file() {
            let s = TractScorer::load(&shipped).unwrap();
            let mut p32 = ScoredPlacer::<_, 32>::named(s.clone(), "ppo");
            let mut p256 = ScoredPlacer::<_, 256>::named(s, "ppo");
            assert_eq!(place(&mut p32, &small, &[3], 8).len(), 8);
            assert_eq!(place(&mut p256, &big, &[3], 64).len(), 64);
            assert_eq!(p32.fallbacks() + p256.fallbacks(), 0);
        }
    }

    #[test]
    fn nan_output_falls_back_to_greedy() {
        let mut policy = PpoPolicy::new(16, 1);
        if let Some(l) = policy.actor.layers.last_mut() {
            l.b[0] = f32::NAN;
        }
        let bytes = policy.to_onnx(vec![]).unwrap();
        let scorer = TractScorer::from_bytes(Path::new("mem"), &bytes).unwrap();
        let topo = Topology::<32>::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).unwrap();
        let mut p = ScoredPlacer::<_, 32>::named(scorer, "ppo");
        let got = place(&mut p, &topo, &[2, 9], 5);
        assert_eq!(got, place(&mut ProximityGreedy, &topo, &[2, 9], 5));
        assert_eq!(p.fallbacks(), 5);
        assert_eq!(
            p.first_fault(),
            Some(ScoreFault::Scorer(ScoreError::Backend))
        );
    }

    #[test]
    fn missing_model_places_like_greedy() {
        let scorer = TractScorer::load_or_fallback(Path::new("/nonexistent/gantry.onnx"));
        assert!(!scorer.is_loaded());
        let topo = Topology::<32>::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).unwrap();
        let mut p = ScoredPlacer::<_, 32>::named(scorer, "ppo");
        assert_eq!(
            place(&mut p, &topo, &[], 3),
            place(&mut ProximityGreedy, &topo, &[], 3)
        );
        assert_eq!(
            p.first_fault(),
            Some(ScoreFault::Scorer(ScoreError::NotLoaded))
        );
        // A model with other input widths is refused at load.
        let wrong = crate::learn::onnx::mlp_model(
            &crate::learn::mlp::Mlp::new(
                &crate::learn::mlp::MlpConfig::new(
                    &[12, 4, 1],
                    crate::learn::mlp::Activation::Relu,
                ),
                1,
            ),
            &crate::learn::onnx::OnnxIo::new("gpu_features", "scores"),
        )
        .unwrap();
        assert!(matches!(
            TractScorer::from_bytes(Path::new("mem"), &wrong),
            Err(ModelError::Shape { .. })
        ));
    }

    /// The direct evaluator against tract (the reference) on the shipped model and a fresh
    /// one: same scores within 1e-5 on varied observations, and the same GPUs for whole gangs
    /// on 32- and 256-GPU trees.
    #[test]
    fn direct_scores_and_picks_match_tract() {
        let fresh = PpoPolicy::new(64, 7).to_onnx(vec![]).unwrap();
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/proximity_ppo.onnx");
        let mut models = vec![fresh];
        if let Ok(b) = std::fs::read(&shipped) {
            models.push(b);
        }
        let small = Topology::<32>::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).unwrap();
        let big = Topology::<256>::uniform(4, 8, 8, LinkWeights::PROXIMITY_DRL).unwrap();
        for bytes in &models {
            let direct = PolicyScorer::from_bytes(Path::new("mem"), bytes).unwrap();
            assert_eq!(direct.backend(), "direct");
            let tract = TractScorer::from_bytes(Path::new("mem"), bytes).unwrap();
            for (busy, k) in [
                (vec![0u16, 5], 6u16),
                (vec![1, 2, 3, 9, 17, 30], 3),
                (vec![], 8),
            ] {
                compare_scores(&mut direct.clone(), &mut tract.clone(), &small, &busy, k);
                let mut a = ScoredPlacer::<_, 32>::named(direct.clone(), "ppo");
                let mut b = ScoredPlacer::<_, 32>::named(tract.clone(), "ppo");
                assert_eq!(
                    place(&mut a, &small, &busy, k),
                    place(&mut b, &small, &busy, k)
                );
            }
            let busy: Vec<u16> = (0..256).filter(|g| g % 3 == 0 || g % 7 == 1).collect();
            compare_scores(&mut direct.clone(), &mut tract.clone(), &big, &busy, 24);
            let mut a = ScoredPlacer::<_, 256>::named(direct.clone(), "ppo");
            let mut b = ScoredPlacer::<_, 256>::named(tract.clone(), "ppo");
            assert_eq!(
                place(&mut a, &big, &busy, 24),
                place(&mut b, &big, &busy, 24)
            );
            assert_eq!(a.fallbacks() + b.fallbacks(), 0);
        }
    }

    fn compare_scores<const G: usize>(
        direct: &mut PolicyScorer,
        tract: &mut TractScorer,
        topo: &Topology<G>,
        busy: &[u16],
        k: u16,
    ) {
        let mut usable = GpuMask::<G>::none();
        for g in 0..topo.gpu_count() as u16 {
            usable.set(GpuId(g), !busy.contains(&g));
        }
        let job = Job::submitted(JobSpec::new(JobId(1), k), TimeMs(0));
        let picked: Vec<GpuId> = (0..topo.gpu_count() as u16)
            .filter(|g| usable.allows(GpuId(*g)))
            .take(usize::from(k / 2))
            .map(GpuId)
            .collect();
        for &g in &picked {
            usable.set(g, false);
        }
        let (rows, jf, n) = observe(topo, &usable, &picked, &job);
        let (mut a, mut b) = (vec![0.0f32; n], vec![0.0f32; n]);
        direct.score(&rows[..n], &jf, &mut a).unwrap();
        tract.score(&rows[..n], &jf, &mut b).unwrap();
        for i in 0..n {
            if rows[i][0] != 0.0 {
                assert!((a[i] - b[i]).abs() < 1e-5, "GPU {i}: {} vs {}", a[i], b[i]);
            }
        }
    }
}
