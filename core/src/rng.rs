//! Seeded randomness. The core never draws entropy: every random choice comes from a
//! [`SeededRng`] built from a seed the caller passes in and records in its log header.

use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg32;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A small, fast, portable PRNG (PCG-XSH-RR 64/32, from `rand_pcg`): the same seed gives the
/// same stream on every target, which replay depends on.
///
/// It serialises as its seed and the number of steps drawn (`rand_pcg` keeps its state
/// private, and its serde feature needs std); deserialising re-seeds and jumps ahead in
/// O(log steps) (`Pcg32::advance`), so a restored generator continues the same stream.
#[derive(Clone, Debug)]
pub struct SeededRng {
    inner: Pcg32,
    seed: u64,
    /// 32-bit outputs drawn so far (one LCG step each).
    steps: u64,
}

/// What a [`SeededRng`] serialises as.
#[derive(Serialize, Deserialize)]
struct RngPosition {
    seed: u64,
    steps: u64,
}

impl Serialize for SeededRng {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RngPosition {
            seed: self.seed,
            steps: self.steps,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SeededRng {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let at = RngPosition::deserialize(deserializer)?;
        let mut rng = SeededRng::new(at.seed);
        rng.inner.advance(at.steps);
        rng.steps = at.steps;
        Ok(rng)
    }
}

impl SeededRng {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            inner: Pcg32::seed_from_u64(seed),
            seed,
            steps: 0,
        }
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        self.steps = self.steps.wrapping_add(1);
        self.inner.next_u32()
    }

    /// The next 64 random bits (two 32-bit outputs, low word first, as `rand_pcg` draws them).
    pub fn next_u64(&mut self) -> u64 {
        self.steps = self.steps.wrapping_add(2);
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
    fn a_deserialised_generator_continues_the_stream() {
        let mut a = SeededRng::new(99);
        for i in 0..37 {
            if i % 3 == 0 {
                a.next_u64();
            } else {
                a.below(10);
            }
        }
        let mut buf = [0u8; 32];
        let bytes = postcard::to_slice(&a, &mut buf).unwrap();
        let mut b: SeededRng = postcard::from_bytes(bytes).unwrap();
        let xs: [u64; 8] = core::array::from_fn(|_| a.next_u64());
        let ys: [u64; 8] = core::array::from_fn(|_| b.next_u64());
        assert_eq!(xs, ys);
        assert_eq!(a.next_u32(), b.next_u32());
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
