//! What a job's attained GPU time says about how soon it will finish: a Gittins index learned
//! online from job sizes, for the unified index of `docs/tias.md`.
//!
//! Gittins (1979), as Tiresias (NSDI'19, §4.1) uses it for jobs of unknown length: a job that
//! has attained `a` GPU·ms is worth serving up to some `b > a` in proportion to
//! `G(a) = max_b P(a < S ≤ b) / E[min(S, b) − a | S > a]`, the expected completions per GPU·ms
//! spent on it. Serving the highest index first minimises the mean completion time when only
//! the size distribution is known. TIAS learns that distribution ([`SizeSketch`]):
//!
//! - every finished job's GPU time, deadline jobs' included (they come from the same
//!   workload: on the TIAS grid, half of the ITP jobs and 70 % of Chronus's);
//! - every live deadline job as a *provisional* sample `r·k·W` (its window `W`, its GPUs `k`,
//!   `r = ΣS / ΣW` over the finished deadline jobs' run times and windows), replaced by its
//!   true GPU time when it finishes. A deadline says at submission how long its user expects
//!   the job to take, so a burst of new work teaches the index before any of it finishes
//!   (measured on ITP cluster01 at 128 GPUs: 1.023 × LAS's non-deadline JCT learning from
//!   finished non-deadline jobs alone, 1.006–1.009 × from every finished job, 1.002 × with
//!   the windows too);
//! - one pseudo-sample of a very long job, so a job that has run longer than every finished
//!   one gets a small index rather than the noisy high one of the last few samples (without
//!   it, Philly's non-deadline JCT was 2–4 × LAS's).
//!
//! Sizes fall in [`SIZE_BINS`] logarithmic bins (edges `60 s × 2^(i/2)` GPU·s); a bin keeps
//! only a count, and its samples stand at the bin's geometric middle (the development grid
//! measured the same as with exact sums). That keeps the state small enough for the firmware's
//! RAM budget: a [`SizeSketch`] is 184 B, a [`GittinsTable`] 80 B. A table of indices, one per
//! bin, is computed one row at a time ([`GittinsTable::compute_row`], O(B) integer work) so
//! that no single event pays for the whole O(B²) table. Indices are fixed-point base-2
//! logarithms ([`log2_q8`]), so keys compare without a division. Everything is integer; the
//! only division is the one that learns `r`.

use serde::{Deserialize, Serialize};
use serde_big_array::BigArray;

/// Bins of a size histogram: edge 0 is 0, edge `i ≥ 1` is `60 s × 2^((i−1)/2)` GPU·s; the last
/// bin (from 60 s × 2^19 GPU·s, about one GPU-year) is open-ended, and a job that has
/// attained that much gets the lowest index.
pub const SIZE_BINS: usize = 40;

/// The first non-zero bin edge: 60 GPU·s, in GPU·ms. Below it every job looks alike.
const FIRST_EDGE_GPU_MS: u64 = 60_000;

/// The lower edge of each bin, GPU·ms. `√2` steps rounded down (`1,414,213 / 1,000,000`).
pub const SIZE_EDGES_GPU_MS: [u64; SIZE_BINS] = size_edges();

const fn size_edges() -> [u64; SIZE_BINS] {
    let mut edges = [0u64; SIZE_BINS];
    let mut i = 1;
    while i < SIZE_BINS {
        let j = i - 1;
        let base = FIRST_EDGE_GPU_MS << (j / 2);
        edges[i] = if j % 2 == 0 {
            base
        } else {
            scale_millionths(base, 1_414_213)
        };
        i += 1;
    }
    edges
}

/// Where a bin's samples stand, GPU·ms: the geometric middle of its edges (`× 2^(1/4)`,
/// `1,189,207 / 1,000,000`), 30 GPU·s for bin 0, the edge itself for the open-ended last bin.
pub const SIZE_MIDDLES_GPU_MS: [u64; SIZE_BINS] = size_middles();

const fn size_middles() -> [u64; SIZE_BINS] {
    let mut middles = [0u64; SIZE_BINS];
    middles[0] = FIRST_EDGE_GPU_MS / 2;
    let mut i = 1;
    while i < SIZE_BINS - 1 {
        middles[i] = scale_millionths(SIZE_EDGES_GPU_MS[i], 1_189_207);
        i += 1;
    }
    middles[SIZE_BINS - 1] = SIZE_EDGES_GPU_MS[SIZE_BINS - 1];
    middles
}

/// `⌊x · millionths / 1,000,000⌋` without overflowing for any edge: the bins' `√2` and
/// `2^(1/4)` steps, at compile time.
const fn scale_millionths(x: u64, millionths: u64) -> u64 {
    x / 1_000_000 * millionths + x % 1_000_000 * millionths / 1_000_000
}

/// The bin of a size in GPU·ms. O(log B): a binary search over [`SIZE_EDGES_GPU_MS`].
pub fn size_bin(gpu_ms: u64) -> usize {
    SIZE_EDGES_GPU_MS
        .partition_point(|&edge| edge <= gpu_ms)
        .saturating_sub(1)
}

/// Fixed-point unit of [`log2_q8`]: 256 per doubling.
pub const LOG2_ONE: i32 = 256;

/// `log2(x)` in 1/256ths, rounded down; `x = 0` gives `i32::MIN / 2` (below any real value,
/// and still safe to subtract from). Integer only: the integer part from `leading_zeros`,
/// eight fraction bits by squaring the normalised mantissa. O(1).
pub fn log2_q8(x: u128) -> i32 {
    if x == 0 {
        return i32::MIN / 2;
    }
    let int_part = 127 - x.leading_zeros();
    // Mantissa in [2^31, 2^32): x normalised to 32 significant bits.
    let mut m: u64 = if int_part >= 31 {
        (x >> (int_part - 31)) as u64
    } else {
        (x << (31 - int_part)) as u64
    };
    let mut fraction = 0i32;
    for bit in (0..8).rev() {
        m = (m * m) >> 31;
        if m >= 1 << 32 {
            fraction |= 1 << bit;
            m >>= 1;
        }
    }
    (int_part as i32) * LOG2_ONE + fraction
}

/// Samples per bin, each standing at its bin's middle ([`SIZE_MIDDLES_GPU_MS`]). Size: 80 B.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeHistogram {
    #[serde(with = "BigArray")]
    count: [u16; SIZE_BINS],
}

impl Default for SizeHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl SizeHistogram {
    /// An empty histogram.
    pub const fn new() -> Self {
        Self {
            count: [0; SIZE_BINS],
        }
    }

    /// Adds `count` samples of `gpu_ms` each, saturating at `u16::MAX` per bin (a live
    /// deadline job beyond 65,535 in one bin goes uncounted). O(log B).
    pub fn add(&mut self, gpu_ms: u64, count: u32) {
        let bin = size_bin(gpu_ms);
        let count = u16::try_from(count).unwrap_or(u16::MAX);
        self.count[bin] = self.count[bin].saturating_add(count);
    }

    /// Adds one sample; a full bin first halves every count, so the histogram forgets its
    /// oldest half instead of saturating (what [`WindowShareSketch`](super::WindowShareSketch)
    /// does too). O(B) when halving, else O(log B).
    pub fn record(&mut self, gpu_ms: u64) {
        let bin = size_bin(gpu_ms);
        if self.count[bin] == u16::MAX {
            for count in &mut self.count {
                *count /= 2;
            }
        }
        self.count[bin] += 1;
    }

    /// Takes one sample of `gpu_ms` out again (a provisional sample replaced by the truth).
    /// Saturating: a sample never added leaves the histogram as it was. O(log B).
    pub fn remove(&mut self, gpu_ms: u64) {
        let bin = size_bin(gpu_ms);
        self.count[bin] = self.count[bin].saturating_sub(1);
    }

    /// Samples held.
    pub fn total(&self) -> u64 {
        self.count.iter().map(|&c| u64::from(c)).sum()
    }

    /// Samples in bin `bin` and their summed size (count × the bin's middle).
    pub fn bin(&self, bin: usize) -> (u32, u64) {
        match (self.count.get(bin), SIZE_MIDDLES_GPU_MS.get(bin)) {
            (Some(&count), Some(&middle)) => (u32::from(count), u64::from(count) * middle),
            _ => (0, 0),
        }
    }
}

/// What TIAS knows of job sizes: the finished jobs' GPU time, the live deadline jobs' windows
/// and the ratio `r` of run time to window that turns a window into a size. Size: 184 B.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeSketch {
    finished: SizeHistogram,
    /// `k·W` (GPU·ms) of each live deadline job.
    windows: SizeHistogram,
    /// Σ run time (ms) of the finished deadline jobs, halved with `window_ms_sum`.
    run_ms_sum: u64,
    /// Σ window (ms) of the finished deadline jobs.
    window_ms_sum: u64,
    /// Finished deadline jobs seen (saturating).
    deadline_jobs_finished: u32,
}

/// Sums of run times and windows are halved together above this (each pair adds less than
/// 2^40), so `run_ms_sum << 16` never overflows and `r` keeps its value.
const RATIO_SUM_LIMIT: u64 = 1 << 46;

impl SizeSketch {
    /// Nothing learned.
    pub const fn new() -> Self {
        Self {
            finished: SizeHistogram::new(),
            windows: SizeHistogram::new(),
            run_ms_sum: 0,
            window_ms_sum: 0,
            deadline_jobs_finished: 0,
        }
    }

    /// A deadline job of `gpus` GPUs and window `window_ms` is live: a provisional sample.
    pub fn add_window(&mut self, gpus: u16, window_ms: u64) {
        self.windows
            .add(window_ms.saturating_mul(u64::from(gpus)), 1);
    }

    /// That deadline job finished or left: its provisional sample goes.
    pub fn remove_window(&mut self, gpus: u16, window_ms: u64) {
        self.windows
            .remove(window_ms.saturating_mul(u64::from(gpus)));
    }

    /// A job finished after `gpu_ms` of GPU time; a deadline job also teaches `r` from its
    /// run time `run_ms` and window `window_ms`.
    pub fn record_finished(&mut self, gpu_ms: u64, deadline: Option<(u64, u64)>) {
        self.finished.record(gpu_ms);
        if let Some((run_ms, window_ms)) = deadline {
            // A pair beyond 2^40 ms (35 years) is scaled down together, keeping its ratio.
            let excess = (64 - (run_ms | window_ms).leading_zeros()).saturating_sub(40);
            self.run_ms_sum = self.run_ms_sum.saturating_add(run_ms >> excess);
            self.window_ms_sum = self.window_ms_sum.saturating_add(window_ms >> excess);
            if self.run_ms_sum >= RATIO_SUM_LIMIT || self.window_ms_sum >= RATIO_SUM_LIMIT {
                self.run_ms_sum /= 2;
                self.window_ms_sum /= 2;
            }
            self.deadline_jobs_finished = self.deadline_jobs_finished.saturating_add(1);
        }
    }

    /// `r = ΣS / ΣW` in 1/65,536ths, once `min_deadline_jobs` deadline jobs have finished.
    pub fn run_to_window_q16(&self, min_deadline_jobs: u32) -> Option<u64> {
        let enough = self.deadline_jobs_finished >= min_deadline_jobs.max(1);
        (enough && self.window_ms_sum > 0).then(|| (self.run_ms_sum << 16) / self.window_ms_sum)
    }

    /// The distribution a table is computed from: the finished jobs, each window bin's jobs at
    /// `r ×` their bin's middle (when `r` is known), and one pseudo-sample in the last bin.
    /// O(B log B).
    pub fn blended(&self, min_deadline_jobs: u32) -> SizeHistogram {
        let mut blended = self.finished.clone();
        if let Some(ratio_q16) = self.run_to_window_q16(min_deadline_jobs) {
            for (&count, &middle) in self.windows.count.iter().zip(&SIZE_MIDDLES_GPU_MS) {
                if count == 0 {
                    continue;
                }
                let size = (u128::from(middle) * u128::from(ratio_q16)) >> 16;
                blended.add(u64::try_from(size).unwrap_or(u64::MAX), u32::from(count));
            }
        }
        blended.add(SIZE_EDGES_GPU_MS[SIZE_BINS - 1], 1);
        blended
    }
}

/// The Gittins index of each bin's lower edge, as [`log2_q8`] of completions per GPU·ms,
/// clamped to 16 bits (a real index lies within ±2^14; the floor for "nothing to learn" is
/// `i16::MIN`). Size: 80 B.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GittinsTable {
    #[serde(with = "BigArray")]
    log_index: [i16; SIZE_BINS],
}

impl Default for GittinsTable {
    fn default() -> Self {
        Self::new()
    }
}

impl GittinsTable {
    /// A table with every index equal (no job preferred): what is used before anything is
    /// learned.
    pub const fn new() -> Self {
        Self {
            log_index: [0; SIZE_BINS],
        }
    }

    /// The index of a job that has attained `attained_gpu_ms`: its bin's. O(log B).
    pub fn log_index(&self, attained_gpu_ms: u64) -> i32 {
        i32::from(self.log_index[size_bin(attained_gpu_ms)])
    }

    /// The index of bin `bin` (0 past the last bin).
    pub fn bin_log_index(&self, bin: usize) -> i32 {
        self.log_index.get(bin).map_or(0, |&index| i32::from(index))
    }

    /// Computes row `bin` from `sizes`: the best ratio of completions to GPU·ms over every
    /// horizon `b` (a later bin edge), for a job that has attained the bin's lower edge `a`.
    /// Horizons are bin edges; a job in bin `m ≤ b` costs its size minus `a`, a longer one
    /// `b − a`. Ratios are compared by cross-multiplication (u128, no division). O(B).
    pub fn compute_row(&mut self, sizes: &SizeHistogram, bin: usize) {
        let Some(slot) = self.log_index.get_mut(bin) else {
            return;
        };
        let attained = SIZE_EDGES_GPU_MS[bin];
        let mut longer: u64 = sizes.count[bin..].iter().map(|&c| u64::from(c)).sum();
        let (mut done, mut cost_done) = (0u64, 0u64);
        let (mut best_done, mut best_cost) = (0u64, 1u64);
        for m in bin..SIZE_BINS {
            let (count, sum) = sizes.bin(m);
            done += u64::from(count);
            longer -= u64::from(count);
            let beyond = sum.saturating_sub(attained.saturating_mul(u64::from(count)));
            cost_done = cost_done.saturating_add(beyond);
            let horizon = SIZE_EDGES_GPU_MS
                .get(m + 1)
                .map_or(0, |&edge| edge - attained);
            let cost = cost_done.saturating_add(longer.saturating_mul(horizon));
            if done > 0
                && cost > 0
                && u128::from(done) * u128::from(best_cost)
                    > u128::from(best_done) * u128::from(cost)
            {
                (best_done, best_cost) = (done, cost);
            }
        }
        let index = log2_q8(u128::from(best_done)) - log2_q8(u128::from(best_cost));
        *slot = i16::try_from(index.max(i32::from(i16::MIN))).unwrap_or(i16::MAX);
    }

    /// Keeps `current`'s index in every bin where this table's differs from it by at most
    /// `tolerance` (in 1/256ths of an octave): a change that small barely moves the order,
    /// and publishing it would re-key every job in the bin. O(B).
    pub fn settle_towards(&mut self, current: &GittinsTable, tolerance: i32) {
        for (index, &old) in self.log_index.iter_mut().zip(&current.log_index) {
            if (i32::from(*index) - i32::from(old)).abs() <= tolerance {
                *index = old;
            }
        }
    }

    /// Every row at once (tests and hosts; an event computes one row at a time). O(B²).
    pub fn compute(sizes: &SizeHistogram) -> Self {
        let mut table = Self::new();
        for bin in 0..SIZE_BINS {
            table.compute_row(sizes, bin);
        }
        table
    }
}

#[cfg(test)]
#[path = "gittins_tests.rs"]
mod tests;
