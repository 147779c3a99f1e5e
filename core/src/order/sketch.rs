//! What TIAS learns online about deadlines: how much of its deadline window a deadline job
//! really needs. Fixed size, integer arithmetic, no division on the per-job path.
//!
//! A user who sets a deadline says, in effect, how long they expect the job to take. How far
//! that can be trusted is a property of the workload (ElasticFlow draws deadlines at
//! `U(0.5, 1.5) ×` the duration after submission, the Chronus traces at roughly 1.4–3.1 ×,
//! a `--deadlines F:1.5:3` run at 1.5–3 ×), so TIAS learns it from finished deadline jobs
//! instead of assuming it: the *window share* of a job is `S / W`, its run time (executed
//! ms) over its window `W = deadline − submit`.

use serde::{Deserialize, Serialize};
use serde_big_array::BigArray;

/// Buckets of a [`WindowShareSketch`] over shares `[0, 1]` (each 1/64 of a window wide).
pub const SHARE_BUCKETS: usize = 64;

/// Fixed-point unit of window shares: `1.0 = 1 << SHARE_SHIFT` (1/1,024 of a window).
pub const SHARE_SHIFT: u32 = 10;

/// One whole window in share units.
pub const WHOLE_WINDOW: u32 = 1 << SHARE_SHIFT;

/// Online histogram of finished deadline jobs' window shares `S / W`, for the shares a
/// schedule could have met (`S ≤ W`; longer ones are only counted). Forgets by halving every
/// count once `halve_at` jobs are held (0 = never), so it follows a drifting workload, and
/// whenever a bucket is full (16-bit counts keep it small for the firmware's RAM; the
/// default halves at 4,096 jobs, long before). Size: 136 B.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowShareSketch {
    #[serde(with = "BigArray")]
    count: [u16; SHARE_BUCKETS],
    /// Jobs that ran longer than their window (`S > W`): no schedule could have met them.
    over: u32,
    halve_at: u32,
}

impl WindowShareSketch {
    /// An empty sketch that halves its counts once it holds `halve_at` jobs (0 = never).
    pub const fn new(halve_at: u32) -> Self {
        Self {
            count: [0; SHARE_BUCKETS],
            over: 0,
            halve_at,
        }
    }

    /// Jobs held whose share was at most one window.
    pub fn feasible_samples(&self) -> u32 {
        self.count
            .iter()
            .fold(0u32, |a, &c| a.saturating_add(u32::from(c)))
    }

    /// Jobs held whose share was above one window: deadlines no order could have met.
    pub fn infeasible_samples(&self) -> u32 {
        self.over
    }

    /// Records a finished deadline job that ran `run_ms` against a window of `window_ms`.
    /// O(1), plus O(B) when the counts are halved. One u64 division (once per finished job).
    pub fn record(&mut self, run_ms: u64, window_ms: u64) {
        if run_ms > window_ms {
            self.over = self.over.saturating_add(1);
        } else {
            // run ≤ window, so the share is ≤ 1 and the bucket ≤ B; the top edge (S = W)
            // belongs to the last bucket. `window_ms ≥ 1` here, as `run_ms ≤ window_ms` and
            // a zero window makes `run_ms > 0` fail only when both are 0.
            let scaled = scaled_share(run_ms, window_ms);
            let b = usize::try_from(scaled)
                .unwrap_or(SHARE_BUCKETS - 1)
                .min(SHARE_BUCKETS - 1);
            if self.count.get(b) == Some(&u16::MAX) {
                self.halve();
            }
            if let Some(c) = self.count.get_mut(b) {
                *c = c.saturating_add(1);
            }
        }
        let held = self.feasible_samples().saturating_add(self.over);
        if self.halve_at > 0 && held >= self.halve_at {
            self.halve();
        }
    }

    /// Halves every count: the older half of what is held is forgotten. O(B).
    fn halve(&mut self) {
        for c in self.count.iter_mut() {
            *c /= 2;
        }
        self.over /= 2;
    }

    /// The `q`-quantile (permille) of the feasible shares, rounded **up** to a bucket edge, in
    /// 1/1,024ths of a window (`16..=1024`); `None` with fewer than `min_samples` feasible
    /// jobs. O(B).
    pub fn feasible_quantile(&self, q_permille: u16, min_samples: u32) -> Option<u32> {
        let total = self.feasible_samples();
        if total == 0 || total < min_samples {
            return None;
        }
        // Smallest bucket whose cumulative count reaches ⌈q·total⌉ (at least 1).
        let need = (u64::from(total) * u64::from(q_permille.min(1000))).div_ceil(1000);
        let need = need.max(1);
        let mut seen = 0u64;
        for (b, &c) in self.count.iter().enumerate() {
            seen += u64::from(c);
            if seen >= need {
                return Some(((b as u32) + 1) * (WHOLE_WINDOW / SHARE_BUCKETS as u32));
            }
        }
        Some(WHOLE_WINDOW)
    }
}

impl Default for WindowShareSketch {
    /// Halves at 4,096 jobs.
    fn default() -> Self {
        Self::new(4096)
    }
}

/// `⌊run · B / window⌋` for `run ≤ window`, in u64: scale the window down when
/// `run · B` would overflow (both are then huge, and the relative error is below 2^-57).
fn scaled_share(run_ms: u64, window_ms: u64) -> u64 {
    let b = SHARE_BUCKETS as u64;
    match run_ms.checked_mul(b) {
        Some(scaled) => scaled / window_ms.max(1),
        None => run_ms / (window_ms / b).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_by_hand() {
        let mut s = WindowShareSketch::new(0);
        assert_eq!(s.feasible_quantile(500, 1), None);
        // Shares 0.25, 0.5, 0.5, 0.75, 1.0 and one job over its window.
        for (run, window) in [(25, 100), (50, 100), (500, 1000), (75, 100), (100, 100)] {
            s.record(run, window);
        }
        s.record(150, 100);
        assert_eq!((s.feasible_samples(), s.infeasible_samples()), (5, 1));
        // Buckets of 1/64: 0.25 → bucket 16 (upper edge 17/64 = 272/1024), 0.5 → 32 (528),
        // 0.75 → 48 (784), 1.0 → the last bucket (1024).
        let cases = [
            (1, 272),
            (200, 272),
            (201, 528),
            (600, 528),
            (800, 784),
            (1000, 1024),
        ];
        for (q, want) in cases {
            assert_eq!(s.feasible_quantile(q, 1), Some(want), "q {q}");
        }
        assert_eq!(
            s.feasible_quantile(500, 6),
            None,
            "too few feasible samples"
        );
    }

    #[test]
    fn halving_forgets_and_huge_values_do_not_overflow() {
        let mut s = WindowShareSketch::new(4);
        for _ in 0..3 {
            s.record(10, 100);
        }
        s.record(90, 100); // 4th: halve → bucket 6: 1, bucket 57: 0
        assert_eq!(s.feasible_samples(), 1);
        assert_eq!(s.feasible_quantile(1000, 1), Some(7 * 16));
        let mut s = WindowShareSketch::new(0);
        s.record(u64::MAX / 2, u64::MAX);
        s.record(u64::MAX, u64::MAX);
        s.record(0, 0);
        assert_eq!(s.feasible_quantile(500, 1), Some(32 * 16 + 16));
        assert_eq!(s.feasible_quantile(1000, 1), Some(WHOLE_WINDOW));
    }

    #[test]
    fn a_full_bucket_halves_every_count_instead_of_saturating() {
        let mut s = WindowShareSketch::new(0);
        s.record(90, 100); // bucket 57
        for _ in 0..u16::MAX {
            s.record(10, 100); // bucket 6
        }
        assert_eq!(s.count[6], u16::MAX);
        assert_eq!(s.count[57], 1);
        s.record(10, 100); // full: halve first, then count it
        assert_eq!((s.count[6], s.count[57]), (u16::MAX / 2 + 1, 0));
    }
}
