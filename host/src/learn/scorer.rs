//! [`TractScorer`]: the core's [`GpuScorer`] over an ONNX scorer run by tract, so
//! `ScoredPlacer<TractScorer, G>` is a placer for any cluster size G.

use super::ppo::{INPUT_GPUS, INPUT_JOB};
use super::tract_model::{InputSpec, ModelError, TractModel};
use gantry_core::placement::observation::{GPU_FEATURES, JOB_FEATURES};
use gantry_core::placement::{GpuScorer, ScoreError};
use ndarray::ArrayView2;
use std::path::Path;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::ppo::PpoPolicy;
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
        let view = PlacementView {
            topology: topo,
            usable: &usable,
            picked: &picked,
            job: &job,
        };
        let mut rows = Box::new([[0.0f32; GPU_FEATURES]; G]);
        let mut jf = [0.0f32; JOB_FEATURES];
        let n = encode(&view, &mut rows, &mut jf);
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
}
