//! The bundled workloads, compiled into the binary so `gantry simulate` needs no arguments
//! and no network:
//!
//! - the Philly sample: 1,500 consecutive Philly jobs (CC-BY-4.0; see
//!   `host/data/ATTRIBUTION.md`), [`philly_sample`];
//! - the mixed sample (`host/data/mixed_sample.jsonl`), what `gantry simulate` runs with no
//!   arguments: the Philly sample with, all seeded ([`RECIPE`]):
//!   - synthetic deadlines on 30 % of the jobs, `submit + U(1.5, 3) × duration`;
//!   - half of the 60 multi-GPU jobs made DAG jobs of 4–16 tasks
//!     ([`generate`](crate::mixed::generate));
//!   - a Gavel job model for every gang job and every task;
//!
//!   on a heterogeneous 256-GPU cluster, 4 × 8 × 8 with machines 0–15 V100, 16–23 P100 and
//!   24–31 K80 ([`MIXED_CLUSTER`], [`MIXED_GPU_TYPES`]). The file is the recipe's output, kept
//!   in the repository so it can be read and edited; the test
//!   `bundled_file_is_the_recipe_output` regenerates it and compares byte for byte
//!   (`GANTRY_BLESS=1` rewrites it after a deliberate change).

use crate::cluster::{ClusterSpec, Throughputs};
use crate::mixed::format::{self, MixedJobs};
use crate::mixed::{DagJobsSpec, JobExtras, assign_models, make_dag_jobs};
use crate::trace::deadlines::{DeadlineSpec, attach_synthetic_deadlines};
use crate::trace::{TraceError, TraceJob, philly};

/// The Philly sample's CSV text.
pub const PHILLY_SAMPLE_CSV: &str = include_str!("../data/philly_sample.csv");

/// The Philly sample's name in reports.
pub const PHILLY_SAMPLE_NAME: &str = "philly_sample.csv (bundled, CC-BY-4.0)";

/// The bundled Philly sample's jobs, the first `limit` kept.
pub fn philly_sample(limit: Option<usize>) -> Result<Vec<TraceJob>, TraceError> {
    philly::parse(PHILLY_SAMPLE_CSV, "philly_sample.csv", limit)
}

/// The mixed sample's text.
pub const MIXED_SAMPLE_JSONL: &str = include_str!("../data/mixed_sample.jsonl");
/// The mixed sample's file name in messages.
pub const MIXED_SAMPLE_FILE: &str = "mixed_sample.jsonl";
/// The mixed sample's name in reports.
pub const MIXED_SAMPLE_NAME: &str =
    "mixed_sample.jsonl (bundled: Philly CC-BY-4.0 + seeded deadlines and DAG jobs, Gavel models)";
/// The mixed sample's cluster shape.
pub const MIXED_CLUSTER: ClusterSpec = ClusterSpec::DEFAULT;
/// The mixed sample's GPU types per machine.
pub const MIXED_GPU_TYPES: &str = "v100:0-15,p100:16-23,k80:24-31";

/// How the mixed sample is made from the Philly sample.
#[derive(Clone, Copy, Debug)]
pub struct Recipe {
    /// Synthetic deadlines.
    pub deadlines: &'static str,
    /// DAG jobs.
    pub dag_jobs: &'static str,
    /// Seed of every draw.
    pub seed: u64,
}

/// The bundled mixed sample's recipe.
pub const RECIPE: Recipe = Recipe {
    deadlines: "0.3:1.5:3",
    dag_jobs: "0.5:4:16",
    seed: 0,
};

/// The bundled mixed sample, the first `limit` jobs kept.
pub fn mixed_sample(table: &Throughputs, limit: Option<usize>) -> Result<MixedJobs, TraceError> {
    format::parse(MIXED_SAMPLE_JSONL, MIXED_SAMPLE_FILE, table, limit)
}

/// The mixed sample recipe's output, in the mixed format.
pub fn regenerate() -> Result<String, TraceError> {
    let table = Throughputs::gavel();
    let mut jobs = philly_sample(None)?;
    let deadlines: DeadlineSpec = RECIPE
        .deadlines
        .parse()
        .unwrap_or_else(|e| panic!("recipe: {e}"));
    let dag_jobs: DagJobsSpec = RECIPE
        .dag_jobs
        .parse()
        .unwrap_or_else(|e| panic!("recipe: {e}"));
    attach_synthetic_deadlines(&mut jobs, deadlines, RECIPE.seed);
    let mut extras = JobExtras::default();
    assign_models(
        &mut extras,
        jobs.len(),
        &[],
        table.models.len(),
        RECIPE.seed,
    );
    make_dag_jobs(
        &jobs,
        &mut extras,
        dag_jobs,
        table.models.len(),
        RECIPE.seed,
    );
    Ok(format::write(&jobs, &extras, &table))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_parses_whole() {
        let jobs = philly_sample(None).unwrap();
        assert_eq!(jobs.len(), 1500);
        assert!(jobs.iter().all(|j| (1..=16).contains(&j.gpus)));
    }

    #[test]
    fn bundled_file_is_the_recipe_output() {
        let fresh = regenerate().unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/mixed_sample.jsonl");
        if std::env::var_os("GANTRY_BLESS").is_some() {
            std::fs::write(path, &fresh).unwrap();
            return;
        }
        assert!(
            fresh == MIXED_SAMPLE_JSONL,
            "host/data/mixed_sample.jsonl differs from its recipe; rerun with GANTRY_BLESS=1 if the change is deliberate"
        );
    }

    #[test]
    fn sample_has_every_kind_of_job() {
        let table = Throughputs::gavel();
        let w = mixed_sample(&table, None).unwrap();
        assert_eq!(w.jobs.len(), 1500);
        assert_eq!(w.extras.dag_jobs(), 30);
        let deadlines = w.jobs.iter().filter(|j| j.deadline_ms.is_some()).count();
        assert_eq!(deadlines, 450);
        for (i, &given) in w.models_given.iter().enumerate() {
            assert_eq!(given, w.extras.dag_of(i).is_none(), "job {i}");
        }
    }
}
