//! The Tiresias cross-check as a test: on the anchor's tiny traces and 2,000-job Philly slice
//! (and, `#[ignore]`d, the 10,000-job slice), gantry's compat orders must reproduce every job's
//! first start and end exactly, and so the average JCT. Skips with a note when
//! `../shared/anchors/tiresias` is absent.
//!
//! `cargo test --release -p gantry-tests --test it tiresias_anchor:: -- --include-ignored`

use gantry::tiresias_check::{self, Input, PHILLY_2K, PHILLY_10K, Row, TINY};
use std::path::PathBuf;

fn anchors() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/anchors/tiresias");
    if dir.join("perjob").exists() {
        Some(dir)
    } else {
        println!("skipped: {} not found", dir.display());
        None
    }
}

fn assert_identical(inputs: &[Input], rows_expected: usize) {
    let Some(dir) = anchors() else { return };
    let rows: Vec<Row> = tiresias_check::check(&dir, inputs).unwrap();
    println!("{}", tiresias_check::table(&rows));
    assert_eq!(rows.len(), rows_expected, "every policy has an anchor");
    for r in &rows {
        assert_eq!(
            (r.identical, r.total),
            (r.jobs, r.jobs),
            "{} {} {}: {:?}",
            r.policy,
            r.input,
            r.cluster,
            r.first_differences
        );
        assert!(
            (r.compat_avg_jct_s - r.tiresias_avg_jct_s).abs() < 1e-9,
            "{} {} {}",
            r.policy,
            r.input,
            r.cluster
        );
    }
}

#[test]
fn tiny_traces_are_identical_per_job() {
    assert_identical(&TINY, 15);
}

#[test]
fn philly_2k_is_identical_per_job_on_both_clusters() {
    assert_identical(&PHILLY_2K, 10);
}

#[test]
#[ignore = "10,000-job slice: about 7 s in release, slower in debug"]
fn philly_10k_is_identical_per_job_on_both_clusters() {
    assert_identical(&PHILLY_10K, 10);
}
