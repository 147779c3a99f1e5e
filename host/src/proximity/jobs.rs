//! Proximity-DRL's jobs: the 35-model table, the speed model and the 30-job generator.
//!
//! Formulas from the authors' environment (Deng et al., Canadian AI 2024; code at commit
//! `db043a2`, as documented in `shared/anchors/proximity-drl/results.md`, "Semantics and
//! quirks" 3, 4 and 7):
//! - `tt_m = d_m / 10.6` (seconds of compute for one minibatch on a 10.6 TFLOPS GPU), with
//!   `d_m = gflops / 1000 · minibatch` (TFLOP per minibatch).
//! - all-reduce time `rt(grad, n, nr)`: piecewise-linear in the gradient size through
//!   (0, 0), (100 MB, 28.29·√n ms), (500 MB, 139.77·√n ms), extrapolated beyond 500, then
//!   × 0.001 s/ms × (1 + 0.2·(nr − 1)) for a gang spread over `nr` machines.
//! - speed `v = n·d_m / (tt_m + rt) / cost`, and each step adds `v · T_TSC` to the work done.
//! - total work `d_f = g·d_m / (tt_m + rt(grad, g, 1)) · T_TSC · len`.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;

/// Work units per step: `51200 / 10.6 / 20`.
pub const T_TSC: f64 = 51200.0 / 10.6 / 20.0;
/// Peak compute of one GPU, TFLOPS.
pub const GPU_TFLOPS: f64 = 10.6;
/// Jobs per episode.
pub const EPISODE_JOBS: usize = 30;
/// Minibatch sizes the generator draws from.
pub const MINIBATCHES: [u32; 4] = [32, 64, 128, 256];

/// One row of `DNN_properties.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct DnnModel {
    /// Model name.
    pub name: String,
    /// Parameter memory = gradient size, MB.
    pub param_mb: f64,
    /// GFLOPs per sample.
    pub gflops: f64,
}

/// Loads the 35-model table (`model,input_width,input_height,param mem (MB),feature mem
/// (MB),flops (GFLOPS),src,performance`). O(rows).
pub fn load_models(path: &Path) -> anyhow::Result<Vec<DnnModel>> {
    let mut rdr =
        csv::Reader::from_path(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|e| anyhow::anyhow!("{}: row {}: {e}", path.display(), i + 2))?;
        let field = |j: usize| -> anyhow::Result<f64> {
            rec.get(j)
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| anyhow::anyhow!("{}: row {}: bad column {j}", path.display(), i + 2))
        };
        out.push(DnnModel {
            name: rec.get(0).unwrap_or("").to_string(),
            param_mb: field(3)?,
            gflops: field(5)?,
        });
    }
    anyhow::ensure!(!out.is_empty(), "{}: no models", path.display());
    Ok(out)
}

/// One job of an episode.
#[derive(Clone, Debug, PartialEq)]
pub struct ProxJob {
    /// Index in the episode, 0..30 (= FCFS order).
    pub id: u32,
    /// GPUs requested, k.
    pub gpus: u16,
    /// Nominal length in steps.
    pub len_steps: u32,
    /// Gradient size, MB.
    pub grad_mb: f64,
    /// TFLOP per minibatch, `d_m`.
    pub d_m_tflop: f64,
    /// Total work as their code computes it (job-0 bug: job 0's `g` and `len`).
    pub work_bugged: f64,
    /// Total work with each job's own `g` and `len`.
    pub work_fixed: f64,
}

impl ProxJob {
    /// Compute time per minibatch, s.
    pub fn tt_m(&self) -> f64 {
        self.d_m_tflop / GPU_TFLOPS
    }

    /// Work per step on `n` GPUs over `nr` machines at communication cost `cost`.
    pub fn work_per_step(&self, n: u16, nr: u32, cost: f64) -> f64 {
        let n = f64::from(n);
        let v = n * self.d_m_tflop / (self.tt_m() + allreduce_s(self.grad_mb, n, nr));
        v / cost * T_TSC
    }
}

/// All-reduce time in seconds (module docs).
pub fn allreduce_s(grad_mb: f64, n: f64, nr: u32) -> f64 {
    let (y100, y500) = (28.29 * n.sqrt(), 139.77 * n.sqrt());
    let ms = if grad_mb <= 100.0 {
        grad_mb / 100.0 * y100
    } else {
        y100 + (grad_mb - 100.0) / 400.0 * (y500 - y100)
    };
    ms * 0.001 * (1.0 + 0.2 * (f64::from(nr.max(1)) - 1.0))
}

/// `d_f` for a job of `g` GPUs and `len` steps.
pub fn total_work(grad_mb: f64, d_m_tflop: f64, g: u16, len: u32) -> f64 {
    let g = f64::from(g);
    g * d_m_tflop / (d_m_tflop / GPU_TFLOPS + allreduce_s(grad_mb, g, 1)) * T_TSC * f64::from(len)
}

/// Builds an episode from `(gpus, len, model, minibatch)` per job, computing both work sizes.
pub fn episode_from(spec: &[(u16, u32, &DnnModel, u32)]) -> Vec<ProxJob> {
    let (g0, len0) = spec.first().map_or((1, 1), |s| (s.0, s.1));
    spec.iter()
        .enumerate()
        .map(|(i, &(g, len, m, mb))| {
            let d_m = m.gflops / 1000.0 * f64::from(mb);
            ProxJob {
                id: i as u32,
                gpus: g,
                len_steps: len,
                grad_mb: m.param_mb,
                d_m_tflop: d_m,
                work_bugged: total_work(m.param_mb, d_m, g0, len0),
                work_fixed: total_work(m.param_mb, d_m, g, len),
            }
        })
        .collect()
}

/// gantry's seeded version of their `data_gen_with_p(30)`: the same per-episode mix (lengths
/// 15 × U{1..6}, 3 × U{6,7}, 6 × U{8..15}, 6 × U{16..20}; requests 15 × 1, 3 × 2,
/// 6 × U{2..4}, 6 × U{5..8}; both shuffled independently), a uniform model and minibatch per
/// job, drawn from ChaCha8 (not their MT19937 stream, so not their sequences: use
/// [`load_anchor_sequences`] for those). O(jobs).
pub fn generate_episode(models: &[DnnModel], seed: u64) -> Vec<ProxJob> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut lens: Vec<u32> = Vec::with_capacity(EPISODE_JOBS);
    for (n, lo, hi) in [(15, 1, 6), (3, 6, 7), (6, 8, 15), (6, 16, 20)] {
        lens.extend((0..n).map(|_| rng.random_range(lo..=hi)));
    }
    let mut gpus: Vec<u16> = Vec::with_capacity(EPISODE_JOBS);
    for (n, lo, hi) in [(15, 1, 1), (3, 2, 2), (6, 2, 4), (6, 5, 8)] {
        gpus.extend((0..n).map(|_| rng.random_range(lo..=hi)));
    }
    lens.shuffle(&mut rng);
    gpus.shuffle(&mut rng);
    let picks: Vec<(usize, u32)> = (0..EPISODE_JOBS)
        .map(|_| {
            let m = rng.random_range(0..models.len().max(1));
            let mb = MINIBATCHES[rng.random_range(0..MINIBATCHES.len())];
            (m, mb)
        })
        .collect();
    let spec: Vec<_> = (0..EPISODE_JOBS)
        .filter_map(|i| Some((gpus[i], lens[i], models.get(picks[i].0)?, picks[i].1)))
        .collect();
    episode_from(&spec)
}

/// Their exact job sequences (`job_sequences_seeds0-19.csv`), as `(seed, jobs)` sorted by
/// seed. Work sizes are recomputed from the row's model and request; the file's `d_f_work`
/// and `d_f_if_job0_bug_fixed` columns are checked against them (relative 1e-9) so a
/// formula drift is an error, not a silent difference. O(rows).
pub fn load_anchor_sequences(path: &Path) -> anyhow::Result<Vec<(u64, Vec<ProxJob>)>> {
    let mut rdr =
        csv::Reader::from_path(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let headers = rdr.headers()?.clone();
    let col = |name: &str| -> anyhow::Result<usize> {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| anyhow::anyhow!("{}: no column {name}", path.display()))
    };
    let c = [
        col("seed")?,
        col("job_id")?,
        col("gpu_request")?,
        col("job_len")?,
        col("gradsize_mb")?,
        col("d_m_tflop")?,
        col("d_f_work")?,
        col("d_f_if_job0_bug_fixed")?,
    ];
    // (job id, gpus, len, grad MB, d_m, their d_f, their fixed d_f) by seed.
    type Row = (u32, u16, u32, f64, f64, f64, f64);
    let mut by_seed: std::collections::BTreeMap<u64, Vec<Row>> = Default::default();
    for (i, rec) in rdr.records().enumerate() {
        let rec = rec?;
        let line = i + 2;
        let num = |j: usize| -> anyhow::Result<f64> {
            rec.get(c[j])
                .and_then(|s| s.trim().parse::<f64>().ok())
                .ok_or_else(|| {
                    anyhow::anyhow!("{}:{line}: bad value in column {}", path.display(), c[j])
                })
        };
        by_seed.entry(num(0)? as u64).or_default().push((
            num(1)? as u32,
            num(2)? as u16,
            num(3)? as u32,
            num(4)?,
            num(5)?,
            num(6)?,
            num(7)?,
        ));
    }
    let mut out = Vec::new();
    for (seed, mut rows) in by_seed {
        rows.sort_by_key(|r| r.0);
        let (g0, len0) = rows.first().map_or((1, 1), |r| (r.1, r.2));
        let mut jobs = Vec::with_capacity(rows.len());
        for (j, (id, g, len, grad, d_m, bug, fixed)) in rows.into_iter().enumerate() {
            anyhow::ensure!(
                id as usize == j,
                "{}: seed {seed}: job ids not 0..n",
                path.display()
            );
            let job = ProxJob {
                id,
                gpus: g,
                len_steps: len,
                grad_mb: grad,
                d_m_tflop: d_m,
                work_bugged: total_work(grad, d_m, g0, len0),
                work_fixed: total_work(grad, d_m, g, len),
            };
            for (ours, theirs, what) in [
                (job.work_bugged, bug, "d_f_work"),
                (job.work_fixed, fixed, "d_f_if_job0_bug_fixed"),
            ] {
                anyhow::ensure!(
                    (ours - theirs).abs() <= 1e-9 * theirs.abs().max(1.0),
                    "{}: seed {seed} job {id}: {what} {theirs} but the formula gives {ours}",
                    path.display()
                );
            }
            jobs.push(job);
        }
        out.push((seed, jobs));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// `../shared` when the Proximity-DRL anchors are there (they are what these tests read).
    pub(crate) fn shared() -> Option<PathBuf> {
        crate::test_support::shared("anchors/proximity-drl")
            .map(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
    }

    #[test]
    fn allreduce_interpolates_through_the_knots() {
        assert!((allreduce_s(100.0, 1.0, 1) - 0.02829).abs() < 1e-12);
        assert!((allreduce_s(500.0, 4.0, 1) - 0.27954).abs() < 1e-12);
        assert!((allreduce_s(50.0, 1.0, 2) - 0.014145 * 1.2).abs() < 1e-12);
        // Job 0 of seed 0 by hand: alexnet, batch 256, 1 GPU, 7 steps.
        let w = total_work(233.0, 0.186112, 1, 7);
        assert!((w - 3794.672246446644).abs() < 1e-6, "{w}");
    }

    #[test]
    fn anchor_sequences_load_and_match_their_work_sizes() {
        let Some(s) = shared() else { return };
        let eps =
            load_anchor_sequences(&s.join("anchors/proximity-drl/job_sequences_seeds0-19.csv"))
                .unwrap();
        assert_eq!(eps.len(), 20);
        for (_, jobs) in &eps {
            assert_eq!(jobs.len(), EPISODE_JOBS);
            assert_eq!(jobs.iter().filter(|j| j.gpus == 1).count(), 15);
        }
    }

    #[test]
    fn generator_has_their_mix_and_is_seeded() {
        let Some(s) = shared() else { return };
        let models = load_models(&s.join("traces/proximity-drl/DNN_properties.csv")).unwrap();
        assert_eq!(models.len(), 35);
        let a = generate_episode(&models, 5);
        assert_eq!(a, generate_episode(&models, 5));
        assert_ne!(a, generate_episode(&models, 6));
        assert_eq!(a.len(), EPISODE_JOBS);
        assert_eq!(a.iter().filter(|j| j.gpus == 1).count(), 15);
        assert_eq!(a.iter().filter(|j| j.gpus >= 5).count(), 6);
        assert!(
            a.iter()
                .all(|j| (1..=8).contains(&j.gpus) && (1..=20).contains(&j.len_steps))
        );
    }
}
