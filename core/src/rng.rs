//! Seeded randomness. The core never draws entropy: every random choice comes from a
//! [`SeededRng`] built from a seed the caller passes in and records in its log header.

use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg32;

/// A small, fast, portable PRNG (PCG-XSH-RR 64/32, from `rand_pcg`): the same seed gives the
/// same stream on every target, which replay depends on.
#[derive(Clone, Debug)]
pub struct SeededRng {
    inner: Pcg32,
}

impl SeededRng {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            inner: Pcg32::seed_from_u64(seed),
        }
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        self.inner.next_u32()
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// A uniform integer in `0..n` (0 when `n == 0`), by Lemire's widening multiply; the
    /// bias is below 2^-32 · n, irrelevant at the sizes a scheduler draws from.
    pub fn below(&mut self, n: u32) -> u32 {
        ((u64::from(self.next_u32()) * u64::from(n)) >> 32) as u32
    }

    /// A uniform `f64` in `[0, 1)` with 53 random bits.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let mut a = SeededRng::new(7);
        let mut b = SeededRng::new(7);
        let mut c = SeededRng::new(8);
        let xs: [u64; 4] = core::array::from_fn(|_| a.next_u64());
        let ys: [u64; 4] = core::array::from_fn(|_| b.next_u64());
        let zs: [u64; 4] = core::array::from_fn(|_| c.next_u64());
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = SeededRng::new(1);
        for n in [0u32, 1, 2, 3, 1000] {
            for _ in 0..100 {
                let x = r.below(n);
                assert!(x < n.max(1));
            }
        }
        let u = r.unit_f64();
        assert!((0.0..1.0).contains(&u));
    }
}
