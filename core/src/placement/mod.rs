//! GPU placement: the extension point that chooses a gang's GPUs, one GPU at a time.
//!
//! Sequential placement (Proximity-DRL, Deng et al. 2024): for a job of k GPUs the scheduler
//! asks the placer k times; each time the placer sees the topology, the GPUs picked so far
//! and a mask of usable GPUs (healthy, free, not yet picked) and returns one GPU. A learned
//! policy and the heuristics it is compared with plug in behind the same trait.
//!
//! A placer that returns nothing or a GPU outside the mask never corrupts the cluster: the
//! scheduler takes the lowest usable GPU instead and counts a placer fault.
//!
//! Placers (names as in tables and the CLI): [`FirstFit`] "first-fit", [`RandomPlacer`]
//! "random", [`LoadBalance`] "load-balance" (their worst-fit baseline, replayed exactly),
//! [`BestFit`] "best-fit", [`ProximityGreedy`] "greedy", [`ExactOptimal`] "optimal" (the
//! per-job limit; [`optimal_cost`] measures the others against it) and [`ScoredPlacer`], the
//! adapter a learned policy plugs into through [`GpuScorer`] and the shared
//! [`observation`] layout.

#[cfg(test)]
mod anchor_replay;
mod best_fit;
#[cfg(test)]
mod compose_tests;
mod exact;
mod first_fit;
mod greedy;
mod load_balance;
pub mod observation;
mod random;
mod scored;
mod tally;

pub use best_fit::BestFit;
pub use exact::{
    ExactOptimal, OptimalConfig, OptimalPlan, OptimalStats, optimal_cost, optimal_placement,
};
pub use first_fit::FirstFit;
pub use greedy::{ProximityGreedy, greedy_pick};
pub use load_balance::LoadBalance;
pub use random::RandomPlacer;
pub use scored::{GpuScorer, ScoreError, ScoreFault, ScoredPlacer};
pub use tally::PlacementTally;

use crate::ids::GpuId;
use crate::job::Job;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use serde_big_array::BigArray;

/// A set of at most `N` distinct GPUs, in pick order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GpuSet<const N: usize> {
    gpus: heapless::Vec<GpuId, N>,
}

impl<const N: usize> GpuSet<N> {
    /// The empty set.
    pub const fn new() -> Self {
        Self {
            gpus: heapless::Vec::new(),
        }
    }

    /// Adds a GPU; hands it back if the set is full or already holds it.
    pub fn insert(&mut self, gpu: GpuId) -> Result<(), GpuId> {
        if self.gpus.contains(&gpu) {
            return Err(gpu);
        }
        self.gpus.push(gpu)
    }

    /// The GPUs in pick order.
    pub fn as_slice(&self) -> &[GpuId] {
        &self.gpus
    }

    /// Number of GPUs.
    pub fn len(&self) -> usize {
        self.gpus.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }

    /// Whether the set holds `gpu`.
    pub fn contains(&self, gpu: GpuId) -> bool {
        self.gpus.contains(&gpu)
    }
}

/// One flag per GPU of a `G`-GPU topology: which GPUs a placer may pick. It keeps its
/// count and the end of its highest allowed GPU, so counting is O(1) and iterating walks
/// only up to the highest GPU ever allowed (the topology's size, not `G`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GpuMask<const G: usize> {
    #[serde(with = "BigArray")]
    bits: [bool; G],
    /// Allowed GPUs.
    allowed: usize,
    /// Every GPU at or above this index is forbidden.
    limit: usize,
}

impl<const G: usize> PartialEq for GpuMask<G> {
    /// Equal when the same GPUs are allowed.
    fn eq(&self, other: &Self) -> bool {
        self.bits == other.bits
    }
}

impl<const G: usize> Eq for GpuMask<G> {}

impl<const G: usize> GpuMask<G> {
    /// No GPU allowed.
    pub const fn none() -> Self {
        Self {
            bits: [false; G],
            allowed: 0,
            limit: 0,
        }
    }

    /// Allows or forbids one GPU; ids outside `0..G` are ignored. O(1).
    pub fn set(&mut self, gpu: GpuId, allowed: bool) {
        let i = gpu.index();
        let Some(b) = self.bits.get_mut(i) else {
            return;
        };
        if *b != allowed {
            *b = allowed;
            if allowed {
                self.allowed += 1;
                self.limit = self.limit.max(i + 1);
            } else {
                self.allowed -= 1;
            }
        }
    }

    /// Whether `gpu` may be picked.
    pub fn allows(&self, gpu: GpuId) -> bool {
        self.bits.get(gpu.index()).copied().unwrap_or(false)
    }

    /// Number of allowed GPUs. O(1).
    pub fn count(&self) -> usize {
        self.allowed
    }

    /// Allowed GPUs in ascending id order. O(highest GPU ever allowed); see [`AllowedGpus`].
    pub fn iter(&self) -> AllowedGpus<'_, G> {
        AllowedGpus {
            bits: self.bits.get(..self.limit).unwrap_or(&self.bits),
            at: 0,
        }
    }

    /// The lowest allowed GPU.
    pub fn first(&self) -> Option<GpuId> {
        self.iter().next()
    }
}

/// Masks larger than this skip runs of forbidden GPUs ([`AllowedGpus`]), and a release on a
/// cluster this large skips runs of GPUs its job does not hold.
pub const SKIP_ABOVE_GPUS: usize = 64;

/// The length of a skipped run: sixteen `bool` flags are one SSE compare, sixteen `u16`
/// owners one AVX2 compare, on x86-64.
pub const SKIP_RUN_GPUS: usize = 16;

/// The allowed GPUs of a [`GpuMask`] in ascending id order ([`GpuMask::iter`]).
///
/// Masks of more than [`SKIP_ABOVE_GPUS`] GPUs skip sixteen forbidden GPUs at a time: on a
/// large cluster that is nearly full a placer walks the mask once per GPU it picks, and most
/// of it is forbidden. Smaller ones (a firmware's) keep the one-flag loop, which is shorter
/// code; both yield the same GPUs.
#[derive(Clone, Debug)]
pub struct AllowedGpus<'a, const G: usize> {
    bits: &'a [bool],
    /// The next flag to read.
    at: usize,
}

impl<const G: usize> Iterator for AllowedGpus<'_, G> {
    type Item = GpuId;

    fn next(&mut self) -> Option<GpuId> {
        if G > SKIP_ABOVE_GPUS {
            while let Some(run) = self.bits.get(self.at..self.at + SKIP_RUN_GPUS) {
                if run != [false; SKIP_RUN_GPUS] {
                    break;
                }
                self.at += SKIP_RUN_GPUS;
            }
        }
        while let Some(&allowed) = self.bits.get(self.at) {
            self.at += 1;
            if allowed {
                return Some(GpuId((self.at - 1) as u16));
            }
        }
        None
    }
}

/// What a placer sees at one step of a sequential placement.
#[derive(Clone, Copy, Debug)]
pub struct PlacementView<'a, const G: usize> {
    /// The cluster's tree.
    pub topology: &'a Topology<G>,
    /// GPUs that may be picked now: healthy, free, not yet picked. Never empty when asked.
    pub usable: &'a GpuMask<G>,
    /// GPUs picked so far for this job, in pick order.
    pub picked: &'a [GpuId],
    /// The job being placed (its request is `job.gpus()`).
    pub job: &'a Job,
}

impl<const G: usize> PlacementView<'_, G> {
    /// GPUs still to pick after this step's, including this one.
    pub fn remaining(&self) -> usize {
        usize::from(self.job.gpus()).saturating_sub(self.picked.len())
    }
}

/// The placement extension point: pick one GPU from `view.usable`.
pub trait Placer<const G: usize> {
    /// A short name for logs and tables.
    fn name(&self) -> &'static str;

    /// One GPU out of `view.usable`. `None` or a GPU outside the mask is a placer fault: the
    /// scheduler falls back to the lowest usable GPU.
    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId>;
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers shared by the placers' tests.
    use super::*;
    use crate::ids::JobId;
    use crate::job::JobSpec;
    use crate::time::TimeMs;
    use crate::topology::LinkWeights;

    /// Proximity-DRL's 2 × 4 × 4 tree.
    pub fn proximity_tree() -> Topology<32> {
        Topology::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).unwrap()
    }

    /// Every GPU of the tree usable.
    pub fn fresh_mask<const G: usize>(topo: &Topology<G>) -> GpuMask<G> {
        let mut m = GpuMask::none();
        for g in 0..topo.gpu_count() as u16 {
            m.set(GpuId(g), true);
        }
        m
    }

    /// A waiting job of `k` GPUs.
    pub fn view_job(k: u16) -> Job {
        Job::submitted(JobSpec::new(JobId(1), k), TimeMs(0))
    }

    /// Runs the sequential protocol as the scheduler does (the mask shrinks by each pick;
    /// a fault panics, since a test wants to see it). Returns the picks in order.
    pub fn place_job<P: Placer<G>, const G: usize>(
        placer: &mut P,
        topo: &Topology<G>,
        mask: &GpuMask<G>,
        k: u16,
    ) -> heapless::Vec<GpuId, G> {
        let job = view_job(k);
        let mut usable = mask.clone();
        let mut picked = heapless::Vec::<GpuId, G>::new();
        for _ in 0..k {
            let view = PlacementView {
                topology: topo,
                usable: &usable,
                picked: &picked,
                job: &job,
            };
            let g = placer.pick(&view).expect("a pick");
            assert!(usable.allows(g), "{} picked unusable {g:?}", placer.name());
            usable.set(g, false);
            picked.push(g).unwrap();
        }
        picked
    }
}

#[cfg(test)]
mod mask_tests {
    extern crate std;
    use super::*;
    use crate::rng::SeededRng;
    use std::vec::Vec;

    /// Random sets and clears (ids up to `G + 6`: the ones past `G` are ignored), one in
    /// `one_in` of them a set: `iter`, `count` and `first` against the flags at every step.
    fn check_mask_against_flags<const G: usize>(seed: u64, one_in: u32) {
        let mut rng = SeededRng::new(seed);
        let mut mask = GpuMask::<G>::none();
        let mut flags = [false; G];
        for step in 0..2_000 {
            let g = rng.below(G as u32 + 7) as u16;
            let allowed = rng.below(one_in) == 0;
            mask.set(GpuId(g), allowed);
            if let Some(f) = flags.get_mut(usize::from(g)) {
                *f = allowed;
            }
            let expected: Vec<GpuId> = (0..G as u16)
                .filter(|&i| flags[usize::from(i)])
                .map(GpuId)
                .collect();
            assert_eq!(mask.iter().collect::<Vec<_>>(), expected, "step {step}");
            assert_eq!(mask.count(), expected.len());
            assert_eq!(mask.first(), expected.first().copied());
        }
        let mut fresh = GpuMask::<G>::none();
        for g in mask.iter().collect::<Vec<_>>() {
            fresh.set(g, true);
        }
        assert_eq!(fresh, mask, "equality looks at the flags only");
    }

    #[test]
    fn mask_count_and_iter_match_its_flags_under_random_sets() {
        check_mask_against_flags::<64>(9, 2);
        check_mask_against_flags::<64>(10, 8);
    }

    /// Above [`SKIP_ABOVE_GPUS`] the iterator skips runs of sixteen forbidden GPUs: sparse
    /// and dense masks of 1,024 and 1,000 GPUs (a tail shorter than a run).
    #[test]
    fn a_large_mask_skipping_forbidden_runs_yields_every_allowed_gpu() {
        check_mask_against_flags::<1024>(11, 2);
        check_mask_against_flags::<1024>(12, 16);
        check_mask_against_flags::<1000>(13, 16);
    }
}
