//! Their training reward: on a job's last pick, `1 − (cost − min_k)/(max_k − min_k)`.
//!
//! `max_k` is the worst cost of k GPUs on the empty tree (spread over as many racks and
//! machines as possible). `min_k` is the best: their table
//! (`communication_cost_ranges`, results.md quirk 2) leaves out the intra-machine peer
//! edges, so it is 0.775, 0.8, 0.825, 0.85, 1.125, 1.15, 1.175, 1.2 for k = 1..8 and the
//! reward never reaches 1 for k ≥ 2; the fixed variant uses the true minimum (0.775, 0.825,
//! 0.9, 1.0, 1.225, 1.3, 1.4, 1.5). The two differ by a constant per k, and k is not the
//! policy's choice, so both rank placements the same way. k = 1 (min = max) gives 1.

use super::env::Variant;
use gantry_core::placement::{GpuMask, optimal_cost};
use gantry_core::{GpuId, Topology};

/// Their best-cost table for k = 1..8 (no intra-machine edges).
pub const THEIR_MIN_COST: [f64; 8] = [0.775, 0.8, 0.825, 0.85, 1.125, 1.15, 1.175, 1.2];

/// Per-k reward bounds for one tree.
#[derive(Clone, Debug, PartialEq)]
pub struct RewardTable {
    /// `min[k]`, k = 0..=G.
    pub min: Vec<f64>,
    /// `max[k]`, k = 0..=G.
    pub max: Vec<f64>,
}

impl RewardTable {
    /// Bounds for `topo`: the exact minimum (or their table for k ≤ 8 under
    /// [`Variant::Compat`]) and the greedy-spread maximum. O(G²).
    pub fn new<const G: usize>(topo: &Topology<G>, variant: Variant) -> Self {
        let n = topo.gpu_count();
        let mut all = GpuMask::<G>::none();
        for g in 0..n as u16 {
            all.set(GpuId(g), true);
        }
        let mut min = vec![0.0; n + 1];
        for (k, m) in min.iter_mut().enumerate().skip(1) {
            *m = match (variant, THEIR_MIN_COST.get(k - 1)) {
                (Variant::Compat, Some(&t)) => t,
                _ => optimal_cost(topo, &all, k).unwrap_or(0.0),
            };
        }
        // Worst: repeatedly add the GPU with the largest added cost (ties: lowest id) —
        // spreads over racks, then machines, then doubles up; exact on regular trees.
        let mut max = vec![0.0; n + 1];
        let mut picked: Vec<GpuId> = Vec::new();
        let mut cost = 0.0;
        for slot in max.iter_mut().skip(1) {
            let best = (0..n as u16)
                .map(GpuId)
                .filter(|g| !picked.contains(g))
                .map(|g| (g, topo.added_cost(&picked, g)))
                .fold(None, |acc: Option<(GpuId, f64)>, (g, c)| match acc {
                    Some((_, bc)) if bc >= c => acc,
                    _ => Some((g, c)),
                });
            if let Some((g, c)) = best {
                picked.push(g);
                cost += c;
            }
            *slot = cost;
        }
        Self { min, max }
    }

    /// The same total spread over the picks: each pick of a k-GPU job gets
    /// `−added/(max_k − min_k)` (its added cost), and the last one also gets
    /// `1 + min_k/(max_k − min_k)`. The sum over a job's picks equals
    /// [`reward`](Self::reward)`(k, cost)` because the added costs sum to the set's cost
    /// (the closed form does not depend on the pick order); only the timing changes, so a
    /// pick is credited when it is made. k = 1: 1 on the pick.
    pub fn pick_reward(&self, k: usize, added: f64, last: bool) -> f64 {
        let (lo, hi) = (
            self.min.get(k).copied().unwrap_or(0.0),
            self.max.get(k).copied().unwrap_or(0.0),
        );
        if hi - lo <= 1e-12 {
            return if last { 1.0 } else { 0.0 };
        }
        let r = -added / (hi - lo);
        if last { r + 1.0 + lo / (hi - lo) } else { r }
    }

    /// The reward for placing k GPUs at `cost`.
    pub fn reward(&self, k: usize, cost: f64) -> f64 {
        let (lo, hi) = (
            self.min.get(k).copied().unwrap_or(0.0),
            self.max.get(k).copied().unwrap_or(0.0),
        );
        if hi - lo <= 1e-12 {
            1.0
        } else {
            1.0 - (cost - lo) / (hi - lo)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proximity::proximity_tree;

    #[test]
    fn tables_on_their_tree() {
        let t = proximity_tree();
        let theirs = RewardTable::new(&t, Variant::Compat);
        let fixed = RewardTable::new(&t, Variant::Fixed);
        let want_max = [0.775, 1.55, 1.825, 2.1, 2.375, 2.65, 2.925, 3.2];
        let want_min = [0.775, 0.825, 0.9, 1.0, 1.225, 1.3, 1.4, 1.5];
        for k in 1..=8 {
            assert!(
                (theirs.max[k] - want_max[k - 1]).abs() < 1e-9,
                "max k={k}: {}",
                theirs.max[k]
            );
            assert!((fixed.min[k] - want_min[k - 1]).abs() < 1e-9, "min k={k}");
            assert_eq!(theirs.min[k], THEIR_MIN_COST[k - 1]);
        }
        assert_eq!(theirs.reward(1, 0.775), 1.0);
        assert!((fixed.reward(4, 1.0) - 1.0).abs() < 1e-12);
        assert!(theirs.reward(4, 1.0) < 1.0);
        // Per-pick shaping sums to the job's reward: 3 + 2 on two machines of one rack.
        let picks = [0u16, 1, 2, 4, 5].map(gantry_core::GpuId);
        let mut sum = 0.0;
        for i in 0..picks.len() {
            let added = t.added_cost(&picks[..i], picks[i]);
            sum += theirs.pick_reward(5, added, i + 1 == picks.len());
        }
        assert!((sum - theirs.reward(5, t.comm_cost(&picks))).abs() < 1e-9);
    }
}
