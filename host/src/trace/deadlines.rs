//! Seeded synthetic deadlines for any trace (`--deadlines FRACTION:LO:HI`).
//!
//! A chosen `FRACTION` of the jobs gets `deadline = submit + U(LO, HI) × duration`; every
//! other job gets none. This is the generator ElasticFlow uses on the ITP traces (Gu et al.,
//! ASPLOS'23, `generate_trace_from_itp.py`: U(0.5, 1.5) for all jobs) and Hydra on PAI
//! (U(1.2, 3.0) for 20 % / 30 % of the jobs), made reproducible: the same jobs, spec and seed
//! give the same deadlines on every machine.
//!
//! It **replaces** whatever deadlines the trace had, so the fraction of deadline jobs is
//! exactly the one asked for. Which jobs: exactly `round(FRACTION × n)` of them, a uniform
//! random subset drawn by a partial Fisher–Yates shuffle from [`SeededRng`].

use gantry_core::SeededRng;
use std::fmt;
use std::str::FromStr;

use super::TraceJob;

/// `FRACTION:LO:HI`: which share of the jobs gets a deadline, and the range of the factor
/// on the job's duration that sets its slack.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DeadlineSpec {
    /// Share of the jobs with a deadline, in [0, 1].
    pub fraction: f64,
    /// Smallest deadline factor (× duration after submit), ≥ 0.
    pub lo: f64,
    /// Largest deadline factor, ≥ `lo`.
    pub hi: f64,
}

impl fmt::Display for DeadlineSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.fraction, self.lo, self.hi)
    }
}

impl FromStr for DeadlineSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split(':').collect();
        let [fraction, lo, hi] = parts.as_slice() else {
            return Err(format!(
                "deadlines {s:?}: expected FRACTION:LO:HI, e.g. 0.3:1.2:3.0"
            ));
        };
        let number = |what: &str, text: &str| -> Result<f64, String> {
            match text.trim().parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(format!(
                    "deadlines {s:?}: {what} {text:?} is not a finite number ≥ 0"
                )),
            }
        };
        let spec = DeadlineSpec {
            fraction: number("FRACTION", fraction)?,
            lo: number("LO", lo)?,
            hi: number("HI", hi)?,
        };
        if spec.fraction > 1.0 {
            return Err(format!(
                "deadlines {s:?}: FRACTION {} is above 1",
                spec.fraction
            ));
        }
        if spec.lo > spec.hi {
            return Err(format!(
                "deadlines {s:?}: LO {} is above HI {}",
                spec.lo, spec.hi
            ));
        }
        Ok(spec)
    }
}

/// Gives `round(fraction × n)` seeded-random jobs `deadline = submit + U(lo, hi) × duration`
/// (ms, rounded, saturating) and clears every other job's deadline. Factors are drawn in job
/// order after the subset, so one seed fixes the whole result. O(n).
pub fn attach_synthetic_deadlines(jobs: &mut [TraceJob], spec: DeadlineSpec, seed: u64) {
    let mut rng = SeededRng::new(seed);
    let chosen = seeded_subset(jobs.len(), spec.fraction, &mut rng);
    let span = (spec.hi - spec.lo).max(0.0);
    for (job, &has_deadline) in jobs.iter_mut().zip(&chosen) {
        job.deadline_ms = has_deadline.then(|| {
            let factor = spec.lo + span * rng.unit_f64();
            // `as` saturates; factor and duration are finite and non-negative.
            let slack_ms = (factor * job.duration_ms as f64).round() as u64;
            job.submit_ms.saturating_add(slack_ms)
        });
    }
}

/// Keeps the trace's own deadlines on `round(fraction × n)` seeded-random jobs and makes
/// every other job best-effort (no deadline): turns an all-deadline trace (ElasticFlow) into
/// the deadline / non-deadline mix TIAS is judged on, without inventing deadlines. O(n).
pub fn keep_deadlines(jobs: &mut [TraceJob], fraction: f64, seed: u64) {
    let mut rng = SeededRng::new(seed);
    let chosen = seeded_subset(jobs.len(), fraction, &mut rng);
    for (job, &keep) in jobs.iter_mut().zip(&chosen) {
        if !keep {
            job.deadline_ms = None;
        }
    }
}

/// A uniformly random subset of `round(fraction × n)` of `0..n` (partial Fisher–Yates),
/// as flags. `fraction` is clamped to [0, 1]. O(n).
pub(crate) fn seeded_subset(n: usize, fraction: f64, rng: &mut SeededRng) -> Vec<bool> {
    let fraction = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let chosen_count = ((fraction * n as f64).round() as usize).min(n);
    let mut order: Vec<usize> = (0..n).collect();
    for i in 0..chosen_count {
        let remaining = u32::try_from(n - i).unwrap_or(u32::MAX);
        let pick = i + rng.below(remaining) as usize;
        order.swap(i, pick);
    }
    let mut chosen = vec![false; n];
    for &index in &order[..chosen_count] {
        chosen[index] = true;
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_deadlines_keeps_an_exact_seeded_share_of_the_originals() {
        let mut a = jobs(100);
        for j in &mut a {
            j.deadline_ms = Some(j.submit_ms + 7);
        }
        let original = a.clone();
        keep_deadlines(&mut a, 0.3, 5);
        assert_eq!(a.iter().filter(|j| j.deadline_ms.is_some()).count(), 30);
        for (kept, orig) in a.iter().zip(&original) {
            assert!(kept.deadline_ms.is_none() || kept.deadline_ms == orig.deadline_ms);
        }
        let mut b = original.clone();
        keep_deadlines(&mut b, 0.3, 5);
        assert_eq!(a, b);
    }

    fn jobs(n: usize) -> Vec<TraceJob> {
        (0..n)
            .map(|i| TraceJob {
                id: i as u32,
                submit_ms: 1_000 * i as u64,
                duration_ms: 10_000 + 7 * i as u64,
                gpus: 1,
                deadline_ms: Some(1),
                gradient_mb: 0,
                source_line: i + 2,
            })
            .collect()
    }

    #[test]
    fn parses_and_rejects_specs_clearly() {
        let spec: DeadlineSpec = "0.3:1.2:3".parse().unwrap();
        assert_eq!(
            spec,
            DeadlineSpec {
                fraction: 0.3,
                lo: 1.2,
                hi: 3.0
            }
        );
        assert_eq!(spec.to_string(), "0.3:1.2:3");
        let cases = [
            ("0.3:1.2", "expected FRACTION:LO:HI"),
            ("0.3:1.2:3:4", "expected FRACTION:LO:HI"),
            ("x:1:2", "FRACTION \"x\" is not a finite number"),
            ("0.5:-1:2", "LO \"-1\" is not a finite number"),
            ("0.5:1:inf", "HI \"inf\" is not a finite number"),
            ("0.5:1:NaN", "HI \"NaN\" is not a finite number"),
            ("1.5:1:2", "FRACTION 1.5 is above 1"),
            ("0.5:3:2", "LO 3 is above HI 2"),
        ];
        for (text, want) in cases {
            let err = text.parse::<DeadlineSpec>().unwrap_err();
            assert!(err.contains(want), "{err:?} should contain {want:?}");
            assert!(err.starts_with(&format!("deadlines {text:?}")), "{err}");
        }
    }

    #[test]
    fn exact_fraction_within_bounds_and_deterministic_for_a_seed() {
        let spec: DeadlineSpec = "0.3:1.2:3.0".parse().unwrap();
        let mut a = jobs(1_000);
        attach_synthetic_deadlines(&mut a, spec, 42);
        let with: Vec<_> = a.iter().filter(|j| j.deadline_ms.is_some()).collect();
        assert_eq!(with.len(), 300);
        for job in &with {
            let slack = (job.deadline_ms.unwrap() - job.submit_ms) as f64;
            let factor = slack / job.duration_ms as f64;
            assert!((1.2 - 1e-4..=3.0 + 1e-4).contains(&factor), "{factor}");
        }
        let mut b = jobs(1_000);
        attach_synthetic_deadlines(&mut b, spec, 42);
        assert_eq!(a, b);
        let mut c = jobs(1_000);
        attach_synthetic_deadlines(&mut c, spec, 43);
        assert_ne!(a, c);
        // The subset is spread over the trace, not a prefix.
        assert!(with.iter().any(|j| j.id >= 700) && with.iter().any(|j| j.id < 300));
    }

    #[test]
    fn edge_fractions_and_fixed_factor() {
        let mut all = jobs(10);
        attach_synthetic_deadlines(&mut all, "1:2:2".parse().unwrap(), 1);
        assert!(
            all.iter()
                .all(|j| j.deadline_ms == Some(j.submit_ms + 2 * j.duration_ms))
        );
        let mut none = jobs(10);
        attach_synthetic_deadlines(&mut none, "0:1:2".parse().unwrap(), 1);
        assert!(none.iter().all(|j| j.deadline_ms.is_none()));
        let mut empty = jobs(0);
        attach_synthetic_deadlines(&mut empty, "0.5:1:2".parse().unwrap(), 1);
        let mut huge = jobs(1);
        huge[0].submit_ms = u64::MAX - 5;
        attach_synthetic_deadlines(&mut huge, "1:1000:1000".parse().unwrap(), 1);
        assert_eq!(huge[0].deadline_ms, Some(u64::MAX));
    }
}
