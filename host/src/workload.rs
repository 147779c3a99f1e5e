//! What every simulation command shares: which trace, which cluster, which settings.
//! [`WorkloadArgs`] are the flags; [`Workload`] the loaded result.

use crate::sample;
use crate::sim::{ClusterSpec, FaultConfig, SimConfig, SpeedModel};
use crate::trace::deadlines::{DeadlineSpec, attach_synthetic_deadlines, keep_deadlines};
use crate::trace::{self, Skipped, TraceFormat, TraceJob};
use std::path::PathBuf;

/// The flags `gantry simulate` and `gantry compare` share.
#[derive(clap::Args, Clone, Debug)]
pub struct WorkloadArgs {
    /// Trace file; default: the bundled 1,500-job Philly sample.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Trace format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Philly)]
    pub format: TraceFormat,
    /// Cluster shape RACKSxMACHINESxGPUS.
    #[arg(long, default_value_t = ClusterSpec::DEFAULT)]
    pub cluster: ClusterSpec,
    /// Keep the first N jobs by submit time.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Seed for every random choice (placers, synthetic deadlines, faults).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Replace the trace's deadlines by synthetic ones on a seeded FRACTION of the jobs:
    /// deadline = submit + U(LO, HI) × duration.
    #[arg(long, value_name = "FRACTION:LO:HI")]
    pub deadlines: Option<DeadlineSpec>,
    /// Keep the trace's own deadlines on a seeded FRACTION of its jobs and make the rest
    /// best-effort (e.g. 0.5 on ElasticFlow, where every job has one).
    #[arg(long, value_name = "FRACTION")]
    pub keep_deadlines: Option<f64>,
    /// How placement affects job speed.
    #[arg(long, value_enum, default_value_t = SpeedModel::CommCost)]
    pub speed_model: SpeedModel,
    /// Re-evaluation period of time-driven orders while jobs are live, seconds.
    #[arg(long, default_value_t = 60)]
    pub tick_s: u64,
    /// Restart overhead charged after each preemption, seconds.
    #[arg(long, default_value_t = 0)]
    pub restart_overhead_s: u64,
    /// Inject seeded GPU failures: mean failures per GPU per day (1 h mean repair, one in
    /// ten drains a whole machine).
    #[arg(long)]
    pub faults: Option<f64>,
}

/// The clap ids of every [`WorkloadArgs`] flag: what `compare --scenario` refuses (it
/// simulates no trace). A test keeps the list complete.
pub const WORKLOAD_FLAG_IDS: [&str; 11] = [
    "trace",
    "format",
    "cluster",
    "limit",
    "seed",
    "deadlines",
    "keep_deadlines",
    "speed_model",
    "tick_s",
    "restart_overhead_s",
    "faults",
];

/// A loaded workload, ready to simulate.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The trace's name in reports.
    pub name: String,
    /// Its jobs.
    pub jobs: Vec<TraceJob>,
    /// Rows the loader left out (e.g. Chronus's 0-GPU jobs).
    pub skipped: Vec<Skipped>,
    /// The cluster.
    pub cluster: ClusterSpec,
    /// Simulation settings.
    pub config: SimConfig,
}

impl WorkloadArgs {
    /// Loads the trace and applies synthetic deadlines.
    pub fn load(&self) -> Result<Workload, trace::TraceError> {
        let (name, loaded) = match &self.trace {
            None => {
                let jobs = sample::philly_sample(self.limit)?;
                (
                    sample::PHILLY_SAMPLE_NAME.to_string(),
                    trace::Loaded {
                        jobs,
                        ..Default::default()
                    },
                )
            }
            Some(path) => (
                path.display().to_string(),
                trace::load(path, self.format, self.limit)?,
            ),
        };
        let mut jobs = loaded.jobs;
        if let Some(fraction) = self.keep_deadlines {
            keep_deadlines(&mut jobs, fraction, self.seed);
        }
        if let Some(spec) = self.deadlines {
            attach_synthetic_deadlines(&mut jobs, spec, self.seed);
        }
        Ok(Workload {
            name,
            jobs,
            skipped: loaded.skipped,
            cluster: self.cluster,
            config: self.sim_config(),
        })
    }

    /// The simulation settings the flags describe.
    pub fn sim_config(&self) -> SimConfig {
        SimConfig {
            tick_ms: self.tick_s.saturating_mul(1000),
            restart_overhead_ms: self.restart_overhead_s.saturating_mul(1000),
            seed: self.seed,
            speed_model: self.speed_model,
            faults: self.faults.map(FaultConfig::with_rate),
        }
    }
}

impl Workload {
    /// One line saying what is simulated.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "trace: {} ({} jobs), cluster {} ({} GPUs), seed {}",
            self.name,
            self.jobs.len(),
            self.cluster,
            self.cluster.gpus(),
            self.config.seed
        );
        if !self.skipped.is_empty() {
            s += &format!(
                "; {} input rows left out (e.g. {})",
                self.skipped.len(),
                self.skipped[0]
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        workload: WorkloadArgs,
    }

    #[test]
    fn the_flag_id_list_names_every_workload_flag() {
        let command = Flags::command();
        let mut ids: Vec<&str> = command
            .get_arguments()
            .map(|a| a.get_id().as_str())
            .filter(|id| *id != "help")
            .collect();
        ids.sort_unstable();
        let mut listed = WORKLOAD_FLAG_IDS.to_vec();
        listed.sort_unstable();
        assert_eq!(ids, listed);
    }
}
