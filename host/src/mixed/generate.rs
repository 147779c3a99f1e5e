//! `--dag-jobs FRACTION[:TASKS_LO:TASKS_HI]`: turn a seeded share of a trace's multi-GPU jobs
//! into DAG jobs.
//!
//! # Which jobs
//! Exactly `round(FRACTION × m)` of the `m` jobs that ask for two or more GPUs, a uniform
//! seeded subset (the deadline generator's partial Fisher–Yates). One-GPU jobs stay gang
//! jobs: a DAG on one GPU has a single plan (its tasks in sequence), so it would only add
//! rows where every planner ties.
//!
//! # What each becomes (our design; no trace records DAG-shaped training jobs)
//! A job of `k` GPUs and duration `D` becomes `n ~ U{TASKS_LO..=TASKS_HI}` tasks holding its
//! whole GPU time `k·D` on the reference GPU, so it needs about the same GPU-hours and the
//! same gang:
//! - **layers**: widths drawn from `1..=min(2k, tasks left)`, so the DAG is about as parallel
//!   as its gang (a pipeline of data preparation, parallel training shards, evaluation);
//! - **edges**: every task past the first layer gets 1–3 predecessors in the layer before and,
//!   with probability 0.2, one more from any earlier layer; a task without a successor that
//!   is not in the last layer gets one in the next layer;
//! - **work**: task weights `U(0.5, 1.5)`, normalised to `k·D`;
//! - **model**: each task its own job model, uniform over the throughput table (a
//!   preprocessing step and a training step are not equally fast on a K80);
//! - **data**: an edge carries `CCR × work(producer) × 2 MB/ms`, `CCR ~ U(0, 0.5)`: its
//!   transfer across racks (2 GB/s, Proximity-DRL's rack↔root link) takes CCR times the
//!   producer's work, 20× less inside one machine (NVLink 40 GB/s). CCR is HEFT's
//!   communication-to-computation ratio (Topcuoglu et al. 2002 sweep 0.1–10).
//!
//! Everything is drawn from one [`SeededRng`] stream in job order: same trace, spec and seed
//! give the same DAG jobs on every machine.

use super::JobExtras;
use super::dag_job::{DagEdge, DagJob, DagTask, MAX_DAG_TASKS};
use crate::trace::TraceJob;
use crate::trace::deadlines::seeded_subset;
use gantry_core::SeededRng;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Cross-rack bandwidth the edge data is sized against, MB per ms (2 GB/s).
pub const SIZING_MB_PER_MS: f64 = 2.0;
/// Largest communication-to-computation ratio drawn.
pub const MAX_CCR: f64 = 0.5;

/// `FRACTION[:TASKS_LO:TASKS_HI]`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DagJobsSpec {
    /// Share of the multi-GPU jobs made DAG jobs, in [0, 1].
    pub fraction: f64,
    /// Fewest tasks per DAG job (≥ 2).
    pub tasks_lo: usize,
    /// Most tasks per DAG job (≤ [`MAX_DAG_TASKS`]).
    pub tasks_hi: usize,
}

impl DagJobsSpec {
    /// Default task range when only FRACTION is given.
    pub const DEFAULT_TASKS: (usize, usize) = (4, 16);
}

impl fmt::Display for DagJobsSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.fraction, self.tasks_lo, self.tasks_hi)
    }
}

impl FromStr for DagJobsSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split(':').map(str::trim).collect();
        let (fraction, lo, hi) = match parts.as_slice() {
            [f] => (*f, None, None),
            [f, lo, hi] => (*f, Some(*lo), Some(*hi)),
            _ => {
                return Err(format!(
                    "dag-jobs {s:?}: expected FRACTION or FRACTION:TASKS_LO:TASKS_HI, e.g. 0.5:4:16"
                ));
            }
        };
        let fraction = match fraction.parse::<f64>() {
            Ok(v) if (0.0..=1.0).contains(&v) => v,
            _ => {
                return Err(format!(
                    "dag-jobs {s:?}: FRACTION {fraction:?} is not in [0, 1]"
                ));
            }
        };
        let count = |what: &str, text: Option<&str>, default: usize| -> Result<usize, String> {
            match text {
                None => Ok(default),
                Some(t) => match t.parse::<usize>() {
                    Ok(n) if (2..=MAX_DAG_TASKS).contains(&n) => Ok(n),
                    _ => Err(format!(
                        "dag-jobs {s:?}: {what} {t:?} is not a task count in 2..={MAX_DAG_TASKS}"
                    )),
                },
            }
        };
        let (dlo, dhi) = Self::DEFAULT_TASKS;
        let spec = Self {
            fraction,
            tasks_lo: count("TASKS_LO", lo, dlo)?,
            tasks_hi: count("TASKS_HI", hi, dhi)?,
        };
        if spec.tasks_lo > spec.tasks_hi {
            return Err(format!(
                "dag-jobs {s:?}: TASKS_LO {} is above TASKS_HI {}",
                spec.tasks_lo, spec.tasks_hi
            ));
        }
        Ok(spec)
    }
}

/// Makes the chosen jobs DAG jobs in `extras` (see the module docs); `models` is the size of
/// the throughput table. Returns how many. O(n + total tasks · fan-in).
pub fn make_dag_jobs(
    jobs: &[TraceJob],
    extras: &mut JobExtras,
    spec: DagJobsSpec,
    models: usize,
    seed: u64,
) -> usize {
    extras.fit(jobs.len());
    let mut rng = SeededRng::new(seed ^ 0xDA6_10B5);
    let multi: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].gpus >= 2).collect();
    let chosen = seeded_subset(multi.len(), spec.fraction, &mut rng);
    let mut made = 0;
    for (&i, _) in multi.iter().zip(&chosen).filter(|(_, c)| **c) {
        let span = (spec.tasks_hi - spec.tasks_lo + 1) as u32;
        let n = spec.tasks_lo + rng.below(span) as usize;
        let job = generate(&jobs[i], n, models, &mut rng);
        extras.dag[i] = Some(Arc::new(job));
        made += 1;
    }
    made
}

/// One DAG job of `n` tasks for `job` (module docs). O(n · fan-in).
pub fn generate(job: &TraceJob, n: usize, models: usize, rng: &mut SeededRng) -> DagJob {
    let n = n.clamp(1, MAX_DAG_TASKS);
    let k = usize::from(job.gpus.max(1));
    let mut layers: Vec<std::ops::Range<usize>> = Vec::new();
    let mut next = 0;
    while next < n {
        // At least two layers: the first leaves one task for the next.
        let room = if layers.is_empty() { n - 1 } else { n - next };
        let most = (2 * k).min(room).max(1);
        let width = 1 + rng.below(most as u32) as usize;
        layers.push(next..next + width);
        next += width;
    }
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for l in 1..layers.len() {
        let before = layers[l - 1].clone();
        for t in layers[l].clone() {
            let fan_in = 1 + rng.below(3.min(before.len()) as u32) as usize;
            let mut preds: Vec<usize> = Vec::with_capacity(fan_in + 1);
            while preds.len() < fan_in {
                let p = before.start + rng.below(before.len() as u32) as usize;
                if !preds.contains(&p) {
                    preds.push(p);
                }
            }
            if l >= 2 && rng.unit_f64() < 0.2 {
                let p = rng.below(before.start as u32) as usize;
                if !preds.contains(&p) {
                    preds.push(p);
                }
            }
            pairs.extend(preds.into_iter().map(|p| (p, t)));
        }
    }
    for l in 0..layers.len().saturating_sub(1) {
        for t in layers[l].clone() {
            if !pairs.iter().any(|&(p, _)| p == t) {
                let after = layers[l + 1].clone();
                pairs.push((t, after.start + rng.below(after.len() as u32) as usize));
            }
        }
    }
    let weights: Vec<f64> = (0..n).map(|_| 0.5 + rng.unit_f64()).collect();
    let total: f64 = weights.iter().sum();
    let gpu_ms = k as f64 * job.duration_ms as f64;
    let tasks: Vec<DagTask> = weights
        .iter()
        .map(|w| DagTask {
            work_ms: gpu_ms * w / total,
            model: rng.below(models.clamp(1, usize::from(u16::MAX)) as u32) as u16,
        })
        .collect();
    let edges = pairs
        .into_iter()
        .map(|(from, to)| DagEdge {
            from: from as u32,
            to: to as u32,
            data_mb: MAX_CCR * rng.unit_f64() * tasks[from].work_ms * SIZING_MB_PER_MS,
        })
        .collect();
    // Layered by construction: no cycle, no self-edge, edges between existing tasks.
    DagJob::new(tasks, edges, models).unwrap_or_else(|e| panic!("generated DAG job: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs() -> Vec<TraceJob> {
        (0..40)
            .map(|i| TraceJob {
                id: i,
                submit_ms: u64::from(i) * 1000,
                duration_ms: 3_600_000,
                gpus: [1, 2, 4, 8][i as usize % 4],
                deadline_ms: None,
                gradient_mb: 0,
                source_line: i as usize + 2,
            })
            .collect()
    }

    #[test]
    fn parses_and_rejects_specs() {
        let s: DagJobsSpec = "0.3".parse().unwrap();
        assert_eq!((s.tasks_lo, s.tasks_hi), DagJobsSpec::DEFAULT_TASKS);
        let s: DagJobsSpec = "1:2:30".parse().unwrap();
        assert_eq!((s.fraction, s.tasks_lo, s.tasks_hi), (1.0, 2, 30));
        for bad in ["", "1.5", "0.5:4", "0.5:1:4", "0.5:9:4", "0.5:4:999", "x"] {
            assert!(bad.parse::<DagJobsSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn seeded_share_of_multi_gpu_jobs_keeps_gpu_time() {
        let jobs = jobs();
        let spec: DagJobsSpec = "0.5:4:12".parse().unwrap();
        let mut a = JobExtras::default();
        assert_eq!(make_dag_jobs(&jobs, &mut a, spec, 26, 7), 15);
        let mut b = JobExtras::default();
        make_dag_jobs(&jobs, &mut b, spec, 26, 7);
        assert_eq!(a, b, "same seed, same DAG jobs");
        let mut c = JobExtras::default();
        make_dag_jobs(&jobs, &mut c, spec, 26, 8);
        assert_ne!(a, c);
        for (i, dag) in a.dag.iter().enumerate() {
            let Some(dag) = dag else { continue };
            assert!(jobs[i].gpus >= 2);
            assert!((4..=12).contains(&dag.tasks().len()));
            let want = f64::from(jobs[i].gpus) * 3_600_000.0;
            assert!((dag.total_work_ms() - want).abs() < 1e-6 * want);
            assert!(dag.tasks().iter().all(|t| t.model < 26));
            // Every task but the last layer's feeds another.
            assert!(!dag.edges().is_empty());
        }
    }
}
