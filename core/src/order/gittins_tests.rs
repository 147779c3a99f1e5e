use super::*;
use crate::SeededRng;

/// The pseudo-sample every blended histogram holds: one very long job.
const PSEUDO_GPU_MS: u64 = SIZE_EDGES_GPU_MS[SIZE_BINS - 1];

#[test]
fn edges_step_by_root_two_from_sixty_gpu_seconds() {
    assert_eq!(
        &SIZE_EDGES_GPU_MS[..5],
        &[0, 60_000, 84_852, 120_000, 169_705]
    );
    assert_eq!(SIZE_EDGES_GPU_MS[SIZE_BINS - 1], 60_000 << 19);
    assert!(SIZE_EDGES_GPU_MS.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn each_middle_lies_in_its_own_bin() {
    assert_eq!(
        &SIZE_MIDDLES_GPU_MS[..4],
        &[30_000, 71_352, 100_906, 142_704]
    );
    for (bin, &middle) in SIZE_MIDDLES_GPU_MS.iter().enumerate() {
        assert_eq!(size_bin(middle), bin, "middle {middle}");
    }
}

#[test]
fn sizes_fall_in_the_bin_whose_lower_edge_they_reach() {
    let cases = [
        (0, 0),
        (59_999, 0),
        (60_000, 1),
        (84_851, 1),
        (84_852, 2),
        (120_000, 3),
        (PSEUDO_GPU_MS - 1, SIZE_BINS - 2),
        (u64::MAX, SIZE_BINS - 1),
    ];
    for (gpu_ms, bin) in cases {
        assert_eq!(size_bin(gpu_ms), bin, "{gpu_ms} GPU·ms");
    }
}

#[test]
fn log2_q8_is_the_rounded_down_binary_logarithm() {
    let cases = [
        (1u128, 0),
        (2, 256),
        (3, 405),  // 256 · 1.58496 = 405.75
        (10, 850), // 256 · 3.32193 = 850.41
        (1 << 100, 25_600),
        (u128::MAX, 128 * 256 - 1),
    ];
    for (x, log) in cases {
        assert_eq!(log2_q8(x), log, "log2({x})");
    }
    assert!(log2_q8(0) < log2_q8(1) - 64 * LOG2_ONE);
}

#[test]
fn log2_q8_agrees_with_floating_point_to_one_step() {
    let mut rng = SeededRng::new(7);
    for _ in 0..2_000 {
        let x = u128::from(rng.next_u64() >> rng.below(64)).max(1);
        let exact = libm::log2(x as f64) * 256.0;
        let got = f64::from(log2_q8(x));
        assert!(
            got <= exact + 1e-6 && exact - got < 1.0 + 1e-6,
            "{x}: {got} vs {exact}"
        );
    }
}

/// Ten jobs of 120 GPU·s (standing at bin 3's middle, 142,704 GPU·ms) and the pseudo-sample.
fn ten_alike() -> SizeHistogram {
    let mut sizes = SizeHistogram::new();
    sizes.add(120_000, 10);
    sizes.add(PSEUDO_GPU_MS, 1);
    sizes
}

#[test]
fn a_new_job_is_worth_its_expected_completions_per_gpu_ms() {
    // From a = 0 the best horizon is bin 4's edge (169,705): the ten jobs finish, costing
    // 10 · 142,704, and the pseudo-sample runs to the horizon: 10 / 1,596,745.
    let table = GittinsTable::compute(&ten_alike());
    assert_eq!(table.bin_log_index(0), log2_q8(10) - log2_q8(1_596_745));
    assert_eq!(table.log_index(0), table.log_index(59_999));
}

#[test]
fn the_index_rises_as_a_job_nears_the_common_size_and_falls_past_it() {
    let table = GittinsTable::compute(&ten_alike());
    // At a = 120,000 the ten need 22,704 more each and the pseudo-sample 169,705 − 120,000
    // to the horizon: 10 / 276,745.
    assert_eq!(table.log_index(120_000), log2_q8(10) - log2_q8(276_745));
    assert!(table.log_index(120_000) > table.log_index(0));
    // Past them only the very long job is left: 1 / (pseudo − a).
    let a = SIZE_EDGES_GPU_MS[4];
    assert_eq!(table.log_index(a), -log2_q8(u128::from(PSEUDO_GPU_MS - a)));
    assert!(table.log_index(a) < table.log_index(0));
}

/// The index from its definition in floating point: max over horizons of
/// `P(a < S ≤ b) / E[min(S, b) − a | S > a]`, sizes at their bin's mean.
fn reference_log_index(sizes: &SizeHistogram, bin: usize) -> f64 {
    let a = SIZE_EDGES_GPU_MS[bin] as f64;
    let mut best = 0.0f64;
    for b in bin..SIZE_BINS {
        let horizon = SIZE_EDGES_GPU_MS.get(b + 1).map_or(a, |&e| e as f64);
        let (mut done, mut cost) = (0.0, 0.0);
        for m in bin..SIZE_BINS {
            let (count, sum) = sizes.bin(m);
            if m <= b {
                done += f64::from(count);
                cost += sum as f64 - a * f64::from(count);
            } else {
                cost += f64::from(count) * (horizon - a);
            }
        }
        if done > 0.0 && cost > 0.0 && done / cost > best {
            best = done / cost;
        }
    }
    libm::log2(best) * 256.0
}

#[test]
fn every_row_agrees_with_the_definition_on_random_histograms() {
    let mut rng = SeededRng::new(11);
    for _ in 0..200 {
        let mut sizes = SizeHistogram::new();
        for _ in 0..1 + rng.below(40) {
            let gpu_ms = 1_000 + (rng.next_u64() >> (24 + rng.below(24)));
            sizes.add(gpu_ms, 1 + rng.below(50));
        }
        sizes.add(PSEUDO_GPU_MS, 1);
        let table = GittinsTable::compute(&sizes);
        for bin in 0..SIZE_BINS {
            let exact = reference_log_index(&sizes, bin);
            let got = table.bin_log_index(bin);
            if exact == f64::NEG_INFINITY {
                // Only jobs at the bin's lower edge remain (the open-ended last bin starts
                // at the pseudo-sample): nothing to learn, the floor.
                assert_eq!(got, i32::from(i16::MIN), "bin {bin}");
                continue;
            }
            let got = f64::from(got);
            assert!((got - exact).abs() <= 2.0, "bin {bin}: {got} vs {exact}");
        }
    }
}

#[test]
fn a_row_past_the_table_changes_nothing() {
    let mut table = GittinsTable::new();
    table.compute_row(&ten_alike(), SIZE_BINS);
    assert_eq!(table, GittinsTable::new());
}

#[test]
fn removing_a_sample_never_added_leaves_the_histogram_alone() {
    let mut sizes = ten_alike();
    sizes.remove(5_000_000);
    assert_eq!(sizes, ten_alike());
    sizes.remove(120_000);
    assert_eq!(sizes.bin(3), (9, 9 * 142_704));
    assert_eq!(sizes.total(), 10);
}

#[test]
fn a_deadline_window_is_a_provisional_size_once_r_is_learned() {
    let mut sketch = SizeSketch::new();
    // Eight deadline jobs that ran half their window: r = 1/2.
    for _ in 0..8 {
        sketch.record_finished(4_000_000, Some((1_000_000, 2_000_000)));
    }
    assert_eq!(sketch.run_to_window_q16(8), Some(32_768));
    // A live 2-GPU job with a 3,600 s window: k·W = 7,200 GPU·s, in bin 14, whose middle
    // (6,458,082 GPU·ms) times r is 3,229,041: bin 12.
    sketch.add_window(2, 3_600_000);
    assert_eq!(size_bin(7_200_000), 14);
    assert_eq!(size_bin(SIZE_MIDDLES_GPU_MS[14] / 2), 12);
    let blended = sketch.blended(8);
    assert_eq!(blended.bin(12).0, 1);
    assert_eq!(blended.bin(size_bin(4_000_000)).0, 8);
    assert_eq!(blended.bin(SIZE_BINS - 1), (1, PSEUDO_GPU_MS));
    assert_eq!(blended.total(), 10);
    // Before nine deadline jobs have finished, r is not trusted and windows count for nothing.
    assert_eq!(sketch.blended(9).total(), 9);
    // When the job finishes, its window goes and its true size comes.
    sketch.remove_window(2, 3_600_000);
    sketch.record_finished(1_000_000, Some((500_000, 3_600_000)));
    let blended = sketch.blended(8);
    assert_eq!(blended.bin(12), (0, 0));
    assert_eq!(blended.bin(size_bin(1_000_000)).0, 1);
}

#[test]
fn a_full_bin_halves_the_whole_histogram_instead_of_saturating() {
    let mut sizes = SizeHistogram::new();
    sizes.add(5_000_000, u32::from(u16::MAX));
    sizes.add(120_000, 3);
    sizes.record(5_000_000);
    assert_eq!(sizes.bin(size_bin(5_000_000)).0, 32_767 + 1);
    assert_eq!(sizes.bin(3).0, 1);
    // `add` (provisional samples) saturates instead.
    sizes.add(120_000, 100_000);
    assert_eq!(sizes.bin(3).0, u32::from(u16::MAX));
}

#[test]
fn state_fits_the_firmware_budget() {
    assert_eq!(core::mem::size_of::<SizeSketch>(), 184);
    assert_eq!(core::mem::size_of::<GittinsTable>(), 80);
}

#[test]
fn ratio_sums_halve_instead_of_overflowing() {
    let mut sketch = SizeSketch::new();
    for _ in 0..100 {
        sketch.record_finished(0, Some((u64::MAX / 4, u64::MAX / 2)));
    }
    let ratio = sketch.run_to_window_q16(1).unwrap_or(0);
    assert!((32_000..=33_000).contains(&ratio), "r = {ratio} / 65,536");
}

#[test]
fn settling_keeps_the_published_index_where_it_barely_moved() {
    let current = GittinsTable::compute(&ten_alike());
    let mut next = current.clone();
    // Bin 0 moves by 4/256 of an octave (kept), bin 1 by 5 (published), bin 2 by −4 (kept).
    next.log_index[0] += 4;
    next.log_index[1] += 5;
    next.log_index[2] -= 4;
    next.settle_towards(&current, 4);
    assert_eq!(next.bin_log_index(0), current.bin_log_index(0));
    assert_eq!(next.bin_log_index(1), current.bin_log_index(1) + 5);
    assert_eq!(next.bin_log_index(2), current.bin_log_index(2));
    // A tolerance of 0 keeps only equal indices: nothing changes.
    let mut exact = next.clone();
    exact.settle_towards(&current, 0);
    assert_eq!(exact, next);
}
