//! A fixed-capacity, log-linear histogram of finished jobs' service, for orders that learn
//! job lengths online without being told them (TIAS's information-agnostic estimates).

/// Buckets of a [`ServiceSketch`]: four per octave over the whole `u64` range (exact below
/// 4 ms, then about ±12 % resolution).
pub const SKETCH_BUCKETS: usize = 252;

/// Fixed-point scale of fractional counts (interpolated tails): 1.0 sample = 2^16.
const FP_SHIFT: u32 = 16;

/// Online distribution of finished jobs' service times (ms), as a log-linear histogram with
/// suffix ("tail") counts, so that `P(S ≥ x)` and conditional quantiles are O(1) and
/// O(log B) lookups. Values inside a bucket are assumed uniformly spread (linear
/// interpolation), which makes the estimates continuous in `x`.
///
/// Forgetting: once `halve_at` samples are held (0 = never), every count is halved, so the
/// sketch follows a drifting workload with a window of roughly `halve_at`…`2·halve_at` jobs.
/// Deterministic: integer arithmetic only. Size ≈ 2 KiB.
#[derive(Clone, Debug)]
pub struct ServiceSketch {
    count: [u32; SKETCH_BUCKETS],
    /// `tail[i]` = samples in buckets `i..`; `tail[SKETCH_BUCKETS]` = 0.
    tail: [u32; SKETCH_BUCKETS + 1],
    halve_at: u32,
}

impl ServiceSketch {
    /// An empty sketch that halves its counts when it holds `halve_at` samples (0 = never).
    pub const fn new(halve_at: u32) -> Self {
        Self {
            count: [0; SKETCH_BUCKETS],
            tail: [0; SKETCH_BUCKETS + 1],
            halve_at,
        }
    }

    /// Samples currently held (after halvings).
    pub fn samples(&self) -> u32 {
        self.tail[0]
    }

    /// Adds one finished job's service, `ms`. O(B) with B = [`SKETCH_BUCKETS`] (once per
    /// finished job, not per key).
    pub fn record(&mut self, ms: u64) {
        let b = bucket_of(ms);
        self.count[b] = self.count[b].saturating_add(1);
        for t in self.tail.iter_mut().take(b + 1) {
            *t = t.saturating_add(1);
        }
        if self.halve_at > 0 && self.tail[0] >= self.halve_at {
            self.halve();
        }
    }

    fn halve(&mut self) {
        for c in self.count.iter_mut() {
            *c /= 2;
        }
        let mut acc = 0u32;
        for i in (0..SKETCH_BUCKETS).rev() {
            acc = acc.saturating_add(self.count[i]);
            self.tail[i] = acc;
        }
    }

    /// Estimated number of samples `≥ x`, in 1/65,536ths of a sample (linear inside the
    /// bucket of `x`). Non-increasing in `x`. O(1).
    pub fn tail_fp(&self, x: u64) -> u128 {
        let b = bucket_of(x);
        let (lo, hi) = bounds(b);
        let above = u128::from(self.tail[b + 1]) << FP_SHIFT;
        let inside = u128::from(self.count[b]) << FP_SHIFT;
        above + inside * (hi - u128::from(x)) / (hi - lo)
    }

    /// `P(S ≤ e + t | S > e)` in permille: the chance that a job which has run `e` ms is done
    /// within `t` more. `None` when no recorded job ran longer than `e` (no evidence). O(1).
    pub fn fit_permille(&self, e: u64, t: u64) -> Option<u32> {
        let base = self.tail_fp(e);
        if base == 0 {
            return None;
        }
        let beyond = self.tail_fp(e.saturating_add(t));
        let fit = (base - beyond.min(base)) * 1000 / base;
        Some(fit as u32)
    }

    /// The conditional `q`-quantile (permille) of the remaining service of a job that has run
    /// `e` ms: the `r` with `P(S ≤ e + r | S > e) ≈ q`. `None` when no recorded job ran
    /// longer than `e`. O(log B).
    pub fn remaining_quantile(&self, e: u64, q_permille: u16) -> Option<u64> {
        let base = self.tail_fp(e);
        if base == 0 {
            return None;
        }
        let q = u128::from(q_permille.min(1000));
        let target = base * (1000 - q) / 1000;
        Some(self.value_at_tail(target).max(e) - e)
    }

    /// The `x` where `tail_fp(x)` falls to `target` (largest such `x` inside its bucket).
    fn value_at_tail(&self, target: u128) -> u64 {
        // Smallest bucket whose successors hold ≤ target: tail is non-increasing, so the
        // predicate is monotone and a binary search finds it.
        let (mut lo_i, mut hi_i) = (0usize, SKETCH_BUCKETS - 1);
        while lo_i < hi_i {
            let mid = lo_i + (hi_i - lo_i) / 2;
            if (u128::from(self.tail[mid + 1]) << FP_SHIFT) <= target {
                hi_i = mid;
            } else {
                lo_i = mid + 1;
            }
        }
        let b = lo_i;
        let (lo, hi) = bounds(b);
        let inside = u128::from(self.count[b]) << FP_SHIFT;
        if inside == 0 {
            return saturate(lo);
        }
        let above = u128::from(self.tail[b + 1]) << FP_SHIFT;
        let excess = target.saturating_sub(above).min(inside);
        saturate(hi - excess * (hi - lo) / inside)
    }
}

impl Default for ServiceSketch {
    /// Halves at 8,192 samples.
    fn default() -> Self {
        Self::new(8192)
    }
}

fn saturate(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// Bucket of `x`: exact for 0..4, then 4 per octave. Always `< SKETCH_BUCKETS`.
fn bucket_of(x: u64) -> usize {
    if x < 4 {
        return x as usize;
    }
    let octave = 63 - x.leading_zeros(); // ≥ 2
    let sub = (x >> (octave - 2)) & 3;
    (4 * (octave as usize - 1) + sub as usize).min(SKETCH_BUCKETS - 1)
}

/// `[lo, hi)` of bucket `b`, as u128 so the top bucket's `hi` = 2^64 fits.
fn bounds(b: usize) -> (u128, u128) {
    let lower = |i: usize| -> u128 {
        if i < 4 {
            i as u128
        } else {
            let octave = i / 4 + 1;
            ((4 + (i % 4)) as u128) << (octave - 2)
        }
    };
    let hi = if b + 1 >= SKETCH_BUCKETS {
        1u128 << 64
    } else {
        lower(b + 1)
    };
    (lower(b), hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_u64_range() {
        for x in [0u64, 1, 3, 4, 5, 7, 8, 9, 1000, 65_536, 1 << 40, u64::MAX] {
            let (lo, hi) = bounds(bucket_of(x));
            assert!(lo <= u128::from(x) && u128::from(x) < hi, "{x}");
        }
        for b in 0..SKETCH_BUCKETS - 1 {
            assert_eq!(bounds(b).1, bounds(b + 1).0);
        }
    }

    #[test]
    fn tail_fit_and_quantile_by_hand() {
        // 4 jobs of 65,536 ms (= 2^16, a bucket's lower edge, bucket [65536, 81920)) and
        // 4 of 2^20 ms ([2^20, 1.25·2^20)).
        let mut s = ServiceSketch::new(0);
        for _ in 0..4 {
            s.record(1 << 16);
            s.record(1 << 20);
        }
        assert_eq!(s.samples(), 8);
        assert_eq!(s.tail_fp(0), 8 << 16);
        // Half-way through the first bucket: 4 + 4·(1/2) = 6 samples.
        assert_eq!(s.tail_fp(65_536 + 8_192), 6 << 16);
        // A new job (e = 0) fits in 100,000 ms with P = 4/8.
        assert_eq!(s.fit_permille(0, 100_000), Some(500));
        // After 100,000 ms only the long ones remain: fits in 2^20 + 2^18 ms total.
        assert_eq!(
            s.fit_permille(100_000, (1 << 20) + (1 << 18) - 100_000),
            Some(1000)
        );
        // Conditional median for e = 0: tail falls to 4 at the top of the first bucket.
        assert_eq!(s.remaining_quantile(0, 500), Some(81_920));
        // Longer than every sample: no evidence.
        assert_eq!(s.fit_permille(1 << 30, 5), None);
        assert_eq!(s.remaining_quantile(1 << 30, 500), None);
    }

    #[test]
    fn halving_forgets_old_samples() {
        let mut s = ServiceSketch::new(4);
        for _ in 0..3 {
            s.record(10);
        }
        s.record(1000); // 4th sample: halve → 10:1, 1000:0
        assert_eq!(s.samples(), 1);
        assert_eq!(s.fit_permille(0, 12), Some(1000));
    }
}
