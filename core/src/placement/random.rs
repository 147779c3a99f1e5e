//! Uniformly random placement.

use super::{PlacementView, Placer};
use crate::ids::GpuId;
use crate::rng::SeededRng;
use serde::{Deserialize, Serialize};

/// A uniformly random usable GPU (Proximity-DRL's `RandomWithoutIdle` baseline, drawn one GPU
/// at a time: k sequential uniform draws without replacement give the same distribution over
/// sets as their `np.random.choice(.., k, replace=False)`, though not the same stream).
/// Draws an index into the mask's allowed list from a [`SeededRng`], so a seed fixes every
/// pick. O(G) per pick.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RandomPlacer {
    rng: SeededRng,
}

impl RandomPlacer {
    /// A placer whose every pick is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: SeededRng::new(seed),
        }
    }
}

impl<const G: usize> Placer<G> for RandomPlacer {
    fn name(&self) -> &'static str {
        "random"
    }

    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        let n = view.usable.count() as u32;
        if n == 0 {
            return None;
        }
        let i = self.rng.below(n) as usize;
        view.usable.iter().nth(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::test_support::{fresh_mask, proximity_tree, view_job};

    #[test]
    fn same_seed_same_picks_and_always_usable() {
        let topo = proximity_tree();
        let job = view_job(3);
        let mut mask = fresh_mask(&topo);
        for g in [0u16, 5, 9, 30] {
            mask.set(GpuId(g), false);
        }
        let mut a = RandomPlacer::new(42);
        let mut b = RandomPlacer::new(42);
        let mut c = RandomPlacer::new(43);
        let mut same_as_c = true;
        for _ in 0..50 {
            let view = PlacementView {
                topology: &topo,
                usable: &mask,
                picked: &[],
                job: &job,
            };
            let x = Placer::<32>::pick(&mut a, &view).unwrap();
            assert_eq!(Some(x), Placer::<32>::pick(&mut b, &view));
            same_as_c &= Some(x) == Placer::<32>::pick(&mut c, &view);
            assert!(mask.allows(x));
        }
        assert!(!same_as_c);
    }

    #[test]
    fn covers_every_usable_gpu_roughly_uniformly() {
        let topo = proximity_tree();
        let job = view_job(1);
        let mask = fresh_mask(&topo);
        let mut p = RandomPlacer::new(7);
        let mut hits = [0u32; 32];
        for _ in 0..32_000 {
            let view = PlacementView {
                topology: &topo,
                usable: &mask,
                picked: &[],
                job: &job,
            };
            let g = Placer::<32>::pick(&mut p, &view).unwrap();
            hits[g.index()] += 1;
        }
        // Expect 1000 each; 5 sigma is about 160.
        assert!(hits.iter().all(|&h| (840..1160).contains(&h)), "{hits:?}");
    }

    #[test]
    fn empty_mask_gives_none() {
        let topo = proximity_tree();
        let job = view_job(1);
        let mask = crate::placement::GpuMask::<32>::none();
        let view = PlacementView {
            topology: &topo,
            usable: &mask,
            picked: &[],
            job: &job,
        };
        assert_eq!(Placer::<32>::pick(&mut RandomPlacer::new(1), &view), None);
    }
}
