//! The observation a learned placement policy sees: one layout shared by training (host),
//! simulation (host) and firmware.
//!
//! # Size-independent by construction
//!
//! Proximity-DRL's actor (Deng et al. 2024) reads a flat 66-value vector and emits 33 logits,
//! so it serves exactly 32 GPUs. Here every candidate GPU gets its own fixed-length feature
//! row, built only from its own state and its machine's and rack's (all normalised to the
//! group's size), plus one job-level row. A policy scores each row with shared weights and
//! takes a masked softmax over the scores, so the same model runs on 32 or 1,024 GPUs.
//!
//! # GPU features ([`GPU_FEATURES`] = 12 per GPU)
//!
//! k = the job's request, `need` = GPUs still to pick including this one
//! ([`PlacementView::remaining`]), `iso` = w_gpu + w_machine + w_rack: the cost a lone GPU
//! adds (0.775 on Proximity-DRL's tree). "usable" = healthy, free, not yet picked.
//!
//! | index | name | formula | range |
//! |---|---|---|---|
//! | 0 | `usable` | 1 if the GPU may be picked now | {0, 1} |
//! | 1 | `added_cost` | `added_cost(picked, gpu) / iso` | [0, 2] (clipped; ≤ 1 unless peer links dominate) |
//! | 2 | `machine_free` | usable GPUs on its machine / machine size | [0, 1] |
//! | 3 | `rack_free` | usable GPUs in its rack / rack size | [0, 1] |
//! | 4 | `machine_has_pick` | 1 if the job already holds a GPU on its machine | {0, 1} |
//! | 5 | `rack_has_pick` | 1 if the job already holds a GPU in its rack | {0, 1} |
//! | 6 | `machine_picks` | job's GPUs on its machine / k | [0, 1] |
//! | 7 | `machine_fits` | 1 if its machine's usable GPUs ≥ need | {0, 1} |
//! | 8 | `rack_fits` | 1 if its rack's usable GPUs ≥ need | {0, 1} |
//! | 9 | `machine_slack` | (machine usable − need) / machine size | [−1, 1] (clipped) |
//! | 10 | `rack_slack` | (rack usable − need) / rack size | [−1, 1] (clipped) |
//! | 11 | `speed` | GPU speed / fastest GPU's speed | (0, 1] |
//!
//! Masked GPUs get the same features with `usable` = 0 (a policy must mask them out of its
//! softmax; their scores are ignored). Rows past the tree's GPU count are all zero.
//!
//! # Job features ([`JOB_FEATURES`] = 8)
//!
//! | index | name | formula | range |
//! |---|---|---|---|
//! | 0 | `request_frac` | k / GPUs in the tree | [0, 1] |
//! | 1 | `request_log` | log2(k) / 10 (k = 1024 → 1) | [0, 1] (clipped) |
//! | 2 | `remaining_frac` | need / k | [0, 1] |
//! | 3 | `picked_frac` | picked / k | [0, 1] |
//! | 4 | `usable_frac` | usable GPUs / GPUs in the tree | [0, 1] |
//! | 5 | `partial_cost` | cost of the picked GPUs / (k · iso) | [0, 2] (clipped) |
//! | 6 | `length_known` | 1 if the job declared a length | {0, 1} |
//! | 7 | `length` | L / (L + 1 h), L = declared length in ms; 0 if unknown | [0, 1) |
//!
//! Information-agnostic deployments leave the length undeclared; the policy then sees 0, 0.

use super::PlacementView;
use super::tally::PlacementTally;
use crate::ids::{GpuId, MachineId, RackId};

/// Version of this layout; bump on any change and record it with every trained model.
pub const LAYOUT_VERSION: u32 = 1;

/// Features per GPU row.
pub const GPU_FEATURES: usize = 12;

/// Job-level features.
pub const JOB_FEATURES: usize = 8;

/// Names of the GPU features, by index (for ONNX metadata, CSV headers, model cards).
pub const GPU_FEATURE_NAMES: [&str; GPU_FEATURES] = [
    "usable",
    "added_cost",
    "machine_free",
    "rack_free",
    "machine_has_pick",
    "rack_has_pick",
    "machine_picks",
    "machine_fits",
    "rack_fits",
    "machine_slack",
    "rack_slack",
    "speed",
];

/// Names of the job features, by index.
pub const JOB_FEATURE_NAMES: [&str; JOB_FEATURES] = [
    "request_frac",
    "request_log",
    "remaining_frac",
    "picked_frac",
    "usable_frac",
    "partial_cost",
    "length_known",
    "length",
];

/// The declared length at which the `length` feature is 0.5: one hour, in milliseconds.
pub const LENGTH_HALF_MS: f64 = 3_600_000.0;

/// Fills one feature row per GPU of `view.topology` (rows past its GPU count are zeroed)
/// and the job row, per the tables in the module docs; returns the number of GPU rows
/// filled. O(G + M + R + k) for G GPUs, M machines, R racks and k picked: the per-GPU
/// values come from per-machine and per-rack tallies, not from rescanning the picks.
pub fn encode<const G: usize>(
    view: &PlacementView<'_, G>,
    gpus: &mut [[f32; GPU_FEATURES]; G],
    job: &mut [f32; JOB_FEATURES],
) -> usize {
    let topo = view.topology;
    let tally = PlacementTally::of(view);
    let w = topo.weights().reciprocal();
    let iso = positive(w.gpu_machine + w.machine_rack + w.rack_root);
    let k = f64::from(view.job.gpus().max(1));
    let need = view.remaining().min(usize::from(u16::MAX)) as u16;
    let n = topo.gpu_count().min(G);
    let max_speed = (0..n as u16)
        .map(|g| topo.speed_permille(GpuId(g)))
        .max()
        .unwrap_or(1)
        .max(1);

    for (i, row) in gpus.iter_mut().enumerate() {
        if i >= n {
            *row = [0.0; GPU_FEATURES];
            continue;
        }
        let gpu = GpuId(i as u16);
        let machine = topo.machine_of(gpu);
        let rack = topo.rack_of_machine(machine);
        let m_size = f64::from(topo.gpus_of_machine(machine).len().max(1) as u16);
        let r_size = f64::from(tally.rack_size(rack).max(1));
        let m_free = tally.machine_usable(machine);
        let r_free = tally.rack_usable(rack);
        let m_picks = tally.machine_picks(machine);
        *row = [
            flag(view.usable.allows(gpu)),
            clip(tally.added_cost(topo, gpu) / iso, 0.0, 2.0),
            clip(f64::from(m_free) / m_size, 0.0, 1.0),
            clip(f64::from(r_free) / r_size, 0.0, 1.0),
            flag(m_picks > 0),
            flag(tally.rack_picks(rack) > 0),
            clip(f64::from(m_picks) / k, 0.0, 1.0),
            flag(m_free >= need),
            flag(r_free >= need),
            clip((f64::from(m_free) - f64::from(need)) / m_size, -1.0, 1.0),
            clip((f64::from(r_free) - f64::from(need)) / r_size, -1.0, 1.0),
            clip(
                f64::from(topo.speed_permille(gpu)) / f64::from(max_speed),
                0.0,
                1.0,
            ),
        ];
    }

    let total = positive(n as f64);
    let length_ms = view.job.declared_length().map(|d| d.0 as f64);
    *job = [
        clip(k / total, 0.0, 1.0),
        clip(libm::log2(k) / 10.0, 0.0, 1.0),
        clip(f64::from(need) / k, 0.0, 1.0),
        clip(view.picked.len() as f64 / k, 0.0, 1.0),
        clip(f64::from(tally.usable_total()) / total, 0.0, 1.0),
        clip(picked_cost(view, &tally) / (k * iso), 0.0, 2.0),
        flag(length_ms.is_some()),
        length_ms.map_or(0.0, |l| clip(l / (l + LENGTH_HALF_MS), 0.0, 1.0)),
    ];
    n
}

/// Cost of the picked GPUs from the tallies (closed form). O(M + R).
fn picked_cost<const G: usize>(view: &PlacementView<'_, G>, tally: &PlacementTally<G>) -> f64 {
    let topo = view.topology;
    let w = topo.weights().reciprocal();
    let mut cost = w.gpu_machine * view.picked.len() as f64;
    for m in 0..topo.machine_count() {
        let n = u64::from(tally.machine_picks(MachineId(m as u16)));
        if n > 0 {
            cost += w.machine_rack + w.gpu_peer * (n * (n - 1) / 2) as f64;
        }
    }
    for r in 0..topo.rack_count() {
        if tally.rack_picks(RackId(r as u16)) > 0 {
            cost += w.rack_root;
        }
    }
    cost
}

fn positive(x: f64) -> f64 {
    if x > 0.0 && x.is_finite() { x } else { 1.0 }
}

fn flag(b: bool) -> f32 {
    if b { 1.0 } else { 0.0 }
}

/// Clamps to `[lo, hi]` and maps NaN to `lo`, so a row is always finite.
fn clip(x: f64, lo: f64, hi: f64) -> f32 {
    if x.is_nan() {
        lo as f32
    } else {
        x.clamp(lo, hi) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JobId;
    use crate::job::{Job, JobSpec};
    use crate::placement::GpuMask;
    use crate::placement::test_support::{fresh_mask, proximity_tree};
    use crate::time::{DurationMs, TimeMs};
    use crate::topology::{LinkWeights, Topology};

    fn close(a: f32, b: f64) -> bool {
        libm::fabs(f64::from(a) - b) < 1e-6
    }

    #[test]
    fn names_match_counts_and_layout_is_documented() {
        assert_eq!(GPU_FEATURE_NAMES.len(), GPU_FEATURES);
        assert_eq!(JOB_FEATURE_NAMES.len(), JOB_FEATURES);
    }

    #[test]
    fn features_on_proximity_tree_by_hand() {
        let topo = proximity_tree();
        let mut spec = JobSpec::new(JobId(3), 4);
        spec.declared_length = Some(DurationMs(3_600_000));
        let job = Job::submitted(spec, TimeMs(0));
        // Other jobs hold 4..8 (machine 1) and 16; GPU 0 is picked for this job.
        let mut mask = fresh_mask(&topo);
        for g in [0u16, 4, 5, 6, 7, 16] {
            mask.set(GpuId(g), false);
        }
        let picked = [GpuId(0)];
        let view = PlacementView {
            topology: &topo,
            usable: &mask,
            picked: &picked,
            job: &job,
        };
        let mut rows = [[9.0f32; GPU_FEATURES]; 32];
        let mut jf = [9.0f32; JOB_FEATURES];
        assert_eq!(encode(&view, &mut rows, &mut jf), 32);

        // GPU 1: same machine as the pick; need = 3; machine 0 has 3 usable.
        let want1 = [
            1.0,
            0.05 / 0.775,
            0.75,
            11.0 / 16.0,
            1.0,
            1.0,
            0.25,
            1.0,
            1.0,
            0.0,
            0.5,
            1.0,
        ];
        // GPU 4: busy, machine 1 empty of usable GPUs, same rack as the pick.
        let want4 = [
            0.0,
            0.275 / 0.775,
            0.0,
            11.0 / 16.0,
            0.0,
            1.0,
            0.0,
            0.0,
            1.0,
            -0.75,
            0.5,
            1.0,
        ];
        // GPU 17: other rack, 15 usable of 16, machine 4 has 3.
        let want17 = [
            1.0,
            1.0,
            0.75,
            15.0 / 16.0,
            0.0,
            0.0,
            0.0,
            1.0,
            1.0,
            0.0,
            0.75,
            1.0,
        ];
        for (g, want) in [(1usize, want1), (4, want4), (17, want17)] {
            for (i, (&got, &w)) in rows[g].iter().zip(want.iter()).enumerate() {
                assert!(
                    close(got, w),
                    "gpu {g} feature {} = {got}, want {w}",
                    GPU_FEATURE_NAMES[i]
                );
            }
        }
        let want_job = [
            4.0 / 32.0,
            2.0 / 10.0,
            0.75,
            0.25,
            26.0 / 32.0,
            0.775 / (4.0 * 0.775),
            1.0,
            0.5,
        ];
        for (i, (&got, &w)) in jf.iter().zip(want_job.iter()).enumerate() {
            assert!(
                close(got, w),
                "job feature {} = {got}, want {w}",
                JOB_FEATURE_NAMES[i]
            );
        }
    }

    #[test]
    fn same_local_state_same_row_on_any_cluster_size() {
        // A GPU in an empty machine of an empty rack looks the same on 32 and 256 GPUs,
        // except the cluster-relative job features.
        let small = proximity_tree();
        let big = Topology::<256>::uniform(4, 8, 8, LinkWeights::PROXIMITY_DRL).unwrap();
        let job = Job::submitted(JobSpec::new(JobId(1), 2), TimeMs(0));
        let mut small_rows = [[0.0f32; GPU_FEATURES]; 32];
        let mut big_rows = [[0.0f32; GPU_FEATURES]; 256];
        let mut jf = [0.0f32; JOB_FEATURES];
        let sm = fresh_mask(&small);
        let bm = fresh_mask(&big);
        let sv = PlacementView {
            topology: &small,
            usable: &sm,
            picked: &[],
            job: &job,
        };
        let bv = PlacementView {
            topology: &big,
            usable: &bm,
            picked: &[],
            job: &job,
        };
        assert_eq!(encode(&sv, &mut small_rows, &mut jf), 32);
        assert_eq!(encode(&bv, &mut big_rows, &mut jf), 256);
        // Machines of 4 vs 8 GPUs differ in slack only; usable, cost, fractions agree.
        for i in [0usize, 1, 2, 3, 4, 5, 6, 7, 8, 11] {
            assert!(
                close(small_rows[0][i], f64::from(big_rows[0][i])),
                "feature {i}"
            );
        }
        assert!(rows_finite(&big_rows));
    }

    fn rows_finite<const G: usize>(rows: &[[f32; GPU_FEATURES]; G]) -> bool {
        rows.iter().flatten().all(|x| x.is_finite())
    }

    #[test]
    fn extra_rows_are_zero_and_odd_input_stays_finite() {
        let topo = Topology::<16>::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap();
        let job = Job::submitted(JobSpec::new(JobId(1), 0), TimeMs(0));
        let mask = GpuMask::<16>::none();
        let view = PlacementView {
            topology: &topo,
            usable: &mask,
            picked: &[],
            job: &job,
        };
        let mut rows = [[7.0f32; GPU_FEATURES]; 16];
        let mut jf = [7.0f32; JOB_FEATURES];
        assert_eq!(encode(&view, &mut rows, &mut jf), 8);
        assert!(rows[8..].iter().flatten().all(|&x| x == 0.0));
        assert!(rows_finite(&rows));
        assert!(jf.iter().all(|x| x.is_finite()));
    }
}
