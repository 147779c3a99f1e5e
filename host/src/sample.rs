//! The bundled default workload: 1,500 consecutive Philly jobs (CC-BY-4.0; see
//! `host/data/ATTRIBUTION.md`), compiled into the binary so `gantry simulate` needs no
//! arguments and no network.

use crate::trace::{TraceError, TraceJob, philly};

/// The sample's CSV text.
pub const PHILLY_SAMPLE_CSV: &str = include_str!("../data/philly_sample.csv");

/// The sample's name in reports.
pub const PHILLY_SAMPLE_NAME: &str = "philly_sample.csv (bundled, CC-BY-4.0)";

/// The bundled sample's jobs, the first `limit` kept.
pub fn philly_sample(limit: Option<usize>) -> Result<Vec<TraceJob>, TraceError> {
    philly::parse(PHILLY_SAMPLE_CSV, "philly_sample.csv", limit)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sample_parses_whole() {
        let jobs = super::philly_sample(None).unwrap();
        assert_eq!(jobs.len(), 1500);
        assert!(jobs.iter().all(|j| (1..=16).contains(&j.gpus)));
    }
}
