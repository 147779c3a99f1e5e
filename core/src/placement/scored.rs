//! A placer driven by a learned per-GPU scorer, with a heuristic safety net.

use super::greedy::greedy_pick;
use super::observation::{GPU_FEATURES, JOB_FEATURES, encode};
use super::{PlacementView, Placer};
use crate::ids::GpuId;

/// Why a scorer produced no scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScoreError {
    /// The model's input or output shape does not match the layout (e.g. a model trained on
    /// another [`LAYOUT_VERSION`](super::observation::LAYOUT_VERSION)).
    ShapeMismatch {
        /// What the layout or the call needs.
        expected: usize,
        /// What the model has.
        got: usize,
    },
    /// The inference back end failed (the host logs its message; the core has no heap).
    Backend,
    /// No model is loaded.
    NotLoaded,
}

impl core::fmt::Display for ScoreError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ScoreError::ShapeMismatch { expected, got } => {
                write!(f, "scorer shape mismatch: expected {expected}, got {got}")
            }
            ScoreError::Backend => write!(f, "scorer back end failed"),
            ScoreError::NotLoaded => write!(f, "no scoring model loaded"),
        }
    }
}

impl core::error::Error for ScoreError {}

/// The extension point a learned placement policy implements (the host: an ONNX model run
/// by tract): one score per GPU row, higher = better. It sees the
/// [`observation`](super::observation) layout and nothing else, and is independent of the
/// cluster size: `gpus.len()` rows in, `out.len()` (the same) scores out.
pub trait GpuScorer {
    /// Scores every row of `gpus` into `out`. Scores of masked GPUs (row feature 0 = 0) are
    /// ignored and may be anything, including −∞.
    fn score(
        &mut self,
        gpus: &[[f32; GPU_FEATURES]],
        job: &[f32; JOB_FEATURES],
        out: &mut [f32],
    ) -> Result<(), ScoreError>;
}

/// What went wrong with a scored pick (the pick itself was then proximity-greedy's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScoreFault {
    /// The scorer returned an error.
    Scorer(ScoreError),
    /// A usable GPU got a NaN or infinite score.
    NonFinite(GpuId),
}

impl core::fmt::Display for ScoreFault {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ScoreFault::Scorer(e) => write!(f, "{e}; fell back to proximity-greedy"),
            ScoreFault::NonFinite(g) => {
                write!(f, "non-finite score for {g}; fell back to proximity-greedy")
            }
        }
    }
}

/// Picks the usable GPU with the highest score (ties: lowest id; greedy decoding of a masked
/// softmax policy). A broken model falls back to a heuristic and says so: on a scorer error
/// or a NaN/∞ score for a usable GPU the pick is [`ProximityGreedy`](super::ProximityGreedy)'s,
/// [`fallbacks`](Self::fallbacks) counts it and [`first_fault`](Self::first_fault) keeps the
/// first cause, so the host can report it once. The argmax is restricted to the mask, so a
/// pick outside it cannot happen. O(G + k) plus the scorer's cost per pick; memory
/// `52·G` bytes of buffers, inline.
pub struct ScoredPlacer<S, const G: usize> {
    scorer: S,
    name: &'static str,
    gpus: [[f32; GPU_FEATURES]; G],
    job: [f32; JOB_FEATURES],
    scores: [f32; G],
    fallbacks: u32,
    picks: u32,
    first_fault: Option<ScoreFault>,
    last_fault: Option<ScoreFault>,
}

impl<S: GpuScorer, const G: usize> ScoredPlacer<S, G> {
    /// A placer named "scored" around `scorer`.
    pub fn new(scorer: S) -> Self {
        Self::named(scorer, "scored")
    }

    /// A placer with a name for logs and tables (e.g. "ppo").
    pub fn named(scorer: S, name: &'static str) -> Self {
        Self {
            scorer,
            name,
            gpus: [[0.0; GPU_FEATURES]; G],
            job: [0.0; JOB_FEATURES],
            scores: [0.0; G],
            fallbacks: 0,
            picks: 0,
            first_fault: None,
            last_fault: None,
        }
    }

    /// Picks that fell back to proximity-greedy.
    pub fn fallbacks(&self) -> u32 {
        self.fallbacks
    }

    /// All picks asked of this placer.
    pub fn picks(&self) -> u32 {
        self.picks
    }

    /// The first fault ever seen (report it once), if any.
    pub fn first_fault(&self) -> Option<ScoreFault> {
        self.first_fault
    }

    /// The most recent fault, if any.
    pub fn last_fault(&self) -> Option<ScoreFault> {
        self.last_fault
    }

    /// The scorer.
    pub fn scorer(&self) -> &S {
        &self.scorer
    }

    /// The scorer, mutably (e.g. to swap its model).
    pub fn scorer_mut(&mut self) -> &mut S {
        &mut self.scorer
    }

    fn scored_pick(&mut self, view: &PlacementView<'_, G>) -> Result<Option<GpuId>, ScoreFault> {
        let n = encode(view, &mut self.gpus, &mut self.job);
        let (rows, scores) = (&self.gpus[..n], &mut self.scores[..n]);
        scores.fill(f32::NAN);
        self.scorer
            .score(rows, &self.job, scores)
            .map_err(ScoreFault::Scorer)?;
        let mut best: Option<(GpuId, f32)> = None;
        for (i, &s) in scores.iter().enumerate() {
            let gpu = GpuId(i as u16);
            if !view.usable.allows(gpu) {
                continue;
            }
            if !s.is_finite() {
                return Err(ScoreFault::NonFinite(gpu));
            }
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((gpu, s));
            }
        }
        Ok(best.map(|(g, _)| g))
    }
}

impl<S: GpuScorer, const G: usize> Placer<G> for ScoredPlacer<S, G> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        self.picks = self.picks.saturating_add(1);
        match self.scored_pick(view) {
            Ok(pick) => pick,
            Err(fault) => {
                self.fallbacks = self.fallbacks.saturating_add(1);
                self.first_fault.get_or_insert(fault);
                self.last_fault = Some(fault);
                greedy_pick(view)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::ProximityGreedy;
    use crate::placement::test_support::{fresh_mask, place_job, proximity_tree};

    /// Scores = −added_cost feature, with a tiny tie-break toward fuller machines: a
    /// hand-written "policy" that should place like a consolidating greedy.
    struct MinCost;
    impl GpuScorer for MinCost {
        fn score(
            &mut self,
            gpus: &[[f32; GPU_FEATURES]],
            _job: &[f32; JOB_FEATURES],
            out: &mut [f32],
        ) -> Result<(), ScoreError> {
            for (o, row) in out.iter_mut().zip(gpus) {
                *o = -row[1];
            }
            Ok(())
        }
    }

    /// Returns NaN for one GPU, or an error.
    struct Broken {
        nan_at: Option<usize>,
        error: bool,
    }
    impl GpuScorer for Broken {
        fn score(
            &mut self,
            gpus: &[[f32; GPU_FEATURES]],
            _job: &[f32; JOB_FEATURES],
            out: &mut [f32],
        ) -> Result<(), ScoreError> {
            if self.error {
                return Err(ScoreError::Backend);
            }
            for (i, (o, _)) in out.iter_mut().zip(gpus).enumerate() {
                *o = if Some(i) == self.nan_at {
                    f32::NAN
                } else {
                    0.0
                };
            }
            Ok(())
        }
    }

    #[test]
    fn argmax_of_usable_scores_ties_by_id() {
        let topo = proximity_tree();
        let mut mask = fresh_mask(&topo);
        mask.set(GpuId(0), false);
        let mut p = ScoredPlacer::<_, 32>::new(MinCost);
        let got = place_job(&mut p, &topo, &mask, 3);
        assert_eq!(got.as_slice(), &[GpuId(1), GpuId(2), GpuId(3)]);
        assert_eq!(p.fallbacks(), 0);
        assert_eq!(p.picks(), 3);
        assert_eq!(p.first_fault(), None);
    }

    #[test]
    fn masked_gpus_may_score_anything() {
        // −∞ on masked GPUs is how a masked-softmax model marks them: not a fault.
        struct MaskedInf;
        impl GpuScorer for MaskedInf {
            fn score(
                &mut self,
                gpus: &[[f32; GPU_FEATURES]],
                _job: &[f32; JOB_FEATURES],
                out: &mut [f32],
            ) -> Result<(), ScoreError> {
                for (i, (o, row)) in out.iter_mut().zip(gpus).enumerate() {
                    *o = if row[0] == 0.0 {
                        f32::NEG_INFINITY
                    } else {
                        i as f32
                    };
                }
                Ok(())
            }
        }
        let topo = proximity_tree();
        let mut mask = fresh_mask(&topo);
        mask.set(GpuId(31), false);
        let mut p = ScoredPlacer::<_, 32>::named(MaskedInf, "highest-id");
        let got = place_job(&mut p, &topo, &mask, 2);
        assert_eq!(got.as_slice(), &[GpuId(30), GpuId(29)]);
        assert_eq!(p.fallbacks(), 0);
        assert_eq!(Placer::<32>::name(&p), "highest-id");
    }

    #[test]
    fn broken_scorer_falls_back_to_greedy_and_says_so() {
        let topo = proximity_tree();
        let mask = fresh_mask(&topo);
        let greedy = place_job(&mut ProximityGreedy, &topo, &mask, 4);
        let cases = [
            (
                Broken {
                    nan_at: Some(5),
                    error: false,
                },
                ScoreFault::NonFinite(GpuId(5)),
            ),
            (
                Broken {
                    nan_at: None,
                    error: true,
                },
                ScoreFault::Scorer(ScoreError::Backend),
            ),
        ];
        for (scorer, fault) in cases {
            let mut p = ScoredPlacer::<_, 32>::new(scorer);
            let got = place_job(&mut p, &topo, &mask, 4);
            assert_eq!(got, greedy);
            assert_eq!(p.fallbacks(), 4);
            assert_eq!(p.first_fault(), Some(fault));
        }
        // A NaN only on a masked GPU is ignored.
        let mut m2 = mask.clone();
        m2.set(GpuId(5), false);
        let mut p = ScoredPlacer::<_, 32>::new(Broken {
            nan_at: Some(5),
            error: false,
        });
        place_job(&mut p, &topo, &m2, 2);
        assert_eq!(p.fallbacks(), 0);
    }
}
