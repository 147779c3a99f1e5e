//! What every simulation command shares: which trace, which cluster, which settings.
//! [`WorkloadArgs`] are the flags; [`Workload`] the loaded result.
//!
//! Without `--trace` the workload is a bundled sample: the mixed sample (deadlines, DAG jobs,
//! job models) on its heterogeneous cluster, or with `--sample philly` the plain Philly sample
//! on the homogeneous default cluster. `--cluster`, `--gpu-types` and `--cluster-file`
//! override the cluster; `--deadlines` and `--dag-jobs` add to any trace.

use crate::cluster::ClusterSpec;
use crate::cluster::{self, Cluster, ClusterError, GpuTypes, Throughputs};
use crate::mixed::{DagJobsSpec, JobExtras, assign_models, format as mixed_format, make_dag_jobs};
use crate::sample;
use crate::sample::{MIXED_CLUSTER, MIXED_GPU_TYPES, MIXED_SAMPLE_NAME, mixed_sample};
use crate::sim::{FaultConfig, PreemptionMode, SimConfig, SpeedModel};
use crate::tias_config::{self, TiasOverrides};
use crate::trace::deadlines::{DeadlineSpec, attach_synthetic_deadlines, keep_deadlines};
use crate::trace::{self, Skipped, TraceFormat, TraceJob};
use std::path::PathBuf;
use std::sync::Arc;

/// Which bundled sample runs when no `--trace` is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Sample {
    /// 1,500 Philly jobs + seeded deadlines, DAG jobs and job models, on a 256-GPU
    /// V100/P100/K80 cluster (`host/data/mixed_sample.jsonl`).
    Mixed,
    /// The 1,500 Philly jobs alone, on 256 reference GPUs (`host/data/philly_sample.csv`).
    Philly,
}

/// Why a workload could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The trace.
    #[error(transparent)]
    Trace(#[from] trace::TraceError),
    /// The cluster (`--gpu-types`, `--cluster-file`).
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// The flags `gantry simulate` and `gantry compare` share.
#[derive(clap::Args, Clone, Debug)]
pub struct WorkloadArgs {
    /// Trace file; default: the bundled 1,500-job Philly sample.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Trace format.
    #[arg(long, value_enum, default_value_t = TraceFormat::Philly)]
    pub format: TraceFormat,
    /// Without --trace: the bundled mixed sample (on its V100/P100/K80 cluster) or the
    /// plain Philly sample.
    #[arg(long, value_enum, default_value_t = Sample::Mixed)]
    pub sample: Sample,
    /// Cluster shape RACKSxMACHINESxGPUS (default 4x8x8).
    #[arg(long)]
    pub cluster: Option<ClusterSpec>,
    /// GPU type of each machine (machines numbered rack by rack from 0), e.g.
    /// v100:0-15,p100:16-23,k80:24-31; speeds per job model from Gavel's throughputs.
    #[arg(long, value_name = "TYPE:MACHINES,...")]
    pub gpu_types: Option<String>,
    /// A TOML cluster file (shape, GPU types, optional throughput table) instead of
    /// --cluster / --gpu-types.
    #[arg(long, conflicts_with_all = ["cluster", "gpu_types"])]
    pub cluster_file: Option<PathBuf>,
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
    /// Turn a seeded FRACTION of the multi-GPU jobs into DAG jobs of TASKS_LO..=TASKS_HI
    /// tasks (default 4:16) with the same GPUs and GPU time.
    #[arg(long, value_name = "FRACTION[:TASKS_LO:TASKS_HI]")]
    pub dag_jobs: Option<DagJobsSpec>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// How placement affects job speed.
    #[arg(long, value_enum, default_value_t = SpeedModel::CommCost)]
    pub speed_model: SpeedModel,
    /// Re-evaluation period of time-driven orders while jobs are live, seconds.
    #[arg(long, default_value_t = 60)]
    pub tick_s: u64,
    /// Restart overhead charged after each preemption, seconds.
    #[arg(long, default_value_t = 0, value_parser = restart_wait_s)]
    pub restart_overhead_s: u64,
    /// The wait before a requeued job may run again on the nodes it ran on, seconds (0, the
    /// default: none). A job restarted on any node of its preempted run makes no progress
    /// before its preemption + this + 0.5 s; elsewhere it restarts at once. Under `gantry
    /// slurm` it is 2 s (gantry skips Slurm's requeue wait, `cred_expire` + 1 s, once the
    /// requeue is that old; on other nodes at once).
    #[arg(long, default_value_t = 0, value_parser = restart_wait_s)]
    pub requeue_delay_s: u64,
    /// What a preemption costs a job: `checkpoint` resumes from the last checkpoint (every
    /// `--checkpoint-interval-s` of progress; 0, the default: nothing is lost), `restart`
    /// restarts from zero, `never` submits every job as never preemptible (it runs to
    /// completion; a GPU failure restarts it from zero).
    #[arg(long, value_enum, default_value_t = PreemptionMode::Checkpoint)]
    pub preemption: PreemptionMode,
    /// Under `--preemption checkpoint`: seconds of progress between checkpoints (0: a free
    /// checkpoint at the preemption itself).
    #[arg(long, default_value_t = 0)]
    pub checkpoint_interval_s: u64,
    /// The core's minimum run quantum, seconds: a job that has run less than this since its
    /// start is not preempted for priority.
    #[arg(long, default_value_t = 0)]
    pub min_run_s: u64,
    /// Inject seeded GPU failures: mean failures per GPU per day (1 h mean repair, one in
    /// ten drains a whole machine), at most 24.
    #[arg(long, value_name = "RATE", value_parser = fault_rate)]
    pub faults: Option<f64>,
    /// Per-job batch-system terms, CSV `preemption,time_limit_s`, one row per job in trace
    /// order: which jobs may be preempted (`checkpointing`; `never` ones run to completion)
    /// and each job's time limit, with Slurm's deadline rule (a job not running by
    /// deadline − limit is cancelled). `scripts/slurm-bench.sh` writes one per mix.
    #[arg(long, value_name = "FILE")]
    pub job_terms: Option<PathBuf>,
    /// Give the queue head a reservation (EASY backfill, as Slurm's backfill does): the
    /// highest-ranked job that does not fit gets the GPU set needing the fewest running
    /// jobs to end, and a later job starts only outside it, or inside it when its declared
    /// length (with `--job-terms` its time limit, else the trace's duration) ends before
    /// the set's jobs reach theirs. `gantry slurm` does this by default; pass it with
    /// `--job-terms` to predict such a run.
    #[arg(long)]
    pub reserve_head: bool,
    /// TIAS's constants from a TOML file (`deadline_weight = 4`, …; docs/tias.md, *Tuning*):
    /// the keys it names change `tias`, `tias-deadline-safe` and the `gantry` scheduler's
    /// TIAS; the rest keep their defaults. Other orders ignore it.
    #[arg(long, value_name = "FILE", value_parser = tias_config::parse_arg)]
    pub tias_config: Option<TiasOverrides>,
}

/// The clap ids of every [`WorkloadArgs`] flag: what `compare --scenario` refuses (it
/// simulates no trace). A test keeps the list complete.
pub const WORKLOAD_FLAG_IDS: [&str; 23] = [
    "trace",
    "format",
    "sample",
    "cluster",
    "gpu_types",
    "cluster_file",
    "dag_jobs",
    "quiet",
    "limit",
    "seed",
    "deadlines",
    "keep_deadlines",
    "speed_model",
    "tick_s",
    "restart_overhead_s",
    "requeue_delay_s",
    "preemption",
    "checkpoint_interval_s",
    "min_run_s",
    "faults",
    "job_terms",
    "reserve_head",
    "tias_config",
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
    /// The cluster's shape.
    pub cluster: ClusterSpec,
    /// Its GPU types (`None`: all reference GPUs).
    pub gpu_types: Option<GpuTypes>,
    /// Job models and DAG jobs, by job index.
    pub extras: JobExtras,
    /// Simulation settings.
    pub config: SimConfig,
}

impl WorkloadArgs {
    /// Loads the trace and the cluster, and applies synthetic deadlines, DAG jobs and job
    /// models.
    pub fn load(&self) -> Result<Workload, WorkloadError> {
        let hardware = self.cluster()?;
        let table = hardware
            .types
            .as_ref()
            .map_or_else(|| Arc::new(Throughputs::gavel()), |t| t.table.clone());
        let (name, loaded, mut extras, given) = match (&self.trace, self.sample, self.format) {
            (None, Sample::Philly, _) => {
                let jobs = sample::philly_sample(self.limit)?;
                let loaded = trace::Loaded {
                    jobs,
                    ..Default::default()
                };
                (
                    sample::PHILLY_SAMPLE_NAME.to_string(),
                    loaded,
                    JobExtras::default(),
                    Vec::new(),
                )
            }
            (None, Sample::Mixed, _) => {
                let m = mixed_sample(&table, self.limit)?;
                let loaded = trace::Loaded {
                    jobs: m.jobs,
                    ..Default::default()
                };
                (
                    MIXED_SAMPLE_NAME.to_string(),
                    loaded,
                    m.extras,
                    m.models_given,
                )
            }
            (Some(path), _, TraceFormat::Mixed) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| trace::TraceError::Io {
                        path: path.clone(),
                        source,
                    })?;
                let m =
                    mixed_format::parse(&text, &path.display().to_string(), &table, self.limit)?;
                let loaded = trace::Loaded {
                    jobs: m.jobs,
                    ..Default::default()
                };
                (path.display().to_string(), loaded, m.extras, m.models_given)
            }
            (Some(path), _, format) => (
                path.display().to_string(),
                trace::load(path, format, self.limit)?,
                JobExtras::default(),
                Vec::new(),
            ),
        };
        let mut jobs = loaded.jobs;
        if let Some(fraction) = self.keep_deadlines {
            keep_deadlines(&mut jobs, fraction, self.seed);
        }
        if let Some(spec) = self.deadlines {
            attach_synthetic_deadlines(&mut jobs, spec, self.seed);
        }
        assign_models(
            &mut extras,
            jobs.len(),
            &given,
            table.models.len(),
            self.seed,
        );
        if let Some(spec) = self.dag_jobs {
            make_dag_jobs(&jobs, &mut extras, spec, table.models.len(), self.seed);
        }
        if let Some(path) = &self.job_terms {
            extras.terms = crate::trace::terms::load(path, jobs.len())?;
        }
        Ok(Workload {
            name,
            jobs,
            skipped: loaded.skipped,
            cluster: hardware.spec,
            gpu_types: hardware.types,
            extras,
            config: self.sim_config(),
        })
    }

    /// The cluster the flags describe: a cluster file; else `--cluster` (default 4x8x8) with
    /// `--gpu-types`; else, for the bundled mixed sample, its V100/P100/K80 cluster.
    pub fn cluster(&self) -> Result<Cluster, ClusterError> {
        if let Some(path) = &self.cluster_file {
            return cluster::file::load(path);
        }
        let types = match (&self.gpu_types, &self.trace, self.sample, self.cluster) {
            (Some(t), ..) => Some(t.as_str()),
            (None, None, Sample::Mixed, None) => Some(MIXED_GPU_TYPES),
            _ => None,
        };
        let spec =
            self.cluster
                .unwrap_or(if self.trace.is_none() && self.sample == Sample::Mixed {
                    MIXED_CLUSTER
                } else {
                    ClusterSpec::DEFAULT
                });
        match types {
            None => Ok(Cluster::homogeneous(spec)),
            Some(t) => Cluster::with_types(spec, t, Arc::new(Throughputs::gavel())),
        }
    }

    /// The simulation settings the flags describe.
    pub fn sim_config(&self) -> SimConfig {
        SimConfig {
            tick_ms: self.tick_s.saturating_mul(1000),
            restart_overhead_ms: self.restart_overhead_s.saturating_mul(1000),
            requeue_delay_ms: self.requeue_delay_s.saturating_mul(1000),
            seed: self.seed,
            speed_model: self.speed_model,
            faults: self.faults.map(FaultConfig::with_rate),
            preemption: self.preemption,
            checkpoint_interval_ms: self.checkpoint_interval_s.saturating_mul(1000),
            min_run_ms: self.min_run_s.saturating_mul(1000),
            reserve_head: self.reserve_head,
            tias: self.tias_config.clone(),
        }
    }
}

impl Workload {
    /// The cluster (shape and GPU types).
    pub fn hardware(&self) -> Cluster {
        Cluster {
            spec: self.cluster,
            types: self.gpu_types.clone(),
        }
    }

    /// One line saying what is simulated.
    pub fn describe(&self) -> String {
        let deadlines = self.jobs.iter().filter(|j| j.deadline_ms.is_some()).count();
        let mut s = format!(
            "trace: {} ({} jobs: {} with deadlines, {} DAG jobs), cluster {}, seed {}",
            self.name,
            self.jobs.len(),
            deadlines,
            self.extras.dag_jobs(),
            self.hardware(),
            self.config.seed
        );
        if let Some(tias) = &self.config.tias {
            s += &format!(", TIAS constants changed: {}", tias.describe());
        }
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

/// The most `--faults` takes: one failure per GPU-hour, the mean repair time. Beyond it each
/// GPU is down more than half the time, and the simulation spends its time on failures.
pub const MAX_FAULT_RATE_PER_GPU_DAY: f64 = 24.0;

/// `--faults RATE`: a number of failures per GPU per day, from 0 to
/// [`MAX_FAULT_RATE_PER_GPU_DAY`].
fn fault_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of failures per GPU per day"))?;
    if !(0.0..=MAX_FAULT_RATE_PER_GPU_DAY).contains(&rate) {
        return Err(format!(
            "{text} failures per GPU per day: the rate must be from 0 to \
             {MAX_FAULT_RATE_PER_GPU_DAY} (one per GPU-hour, the mean repair time)"
        ));
    }
    Ok(rate)
}

/// The longest wait `--restart-overhead-s` and `--requeue-delay-s` accept, s: a day. Each
/// preemption costs it, and with millions of times that a simulation would spend its time
/// ticking through the waits.
pub const MAX_RESTART_WAIT_S: u64 = 86_400;

/// `--restart-overhead-s` and `--requeue-delay-s`: whole seconds, at most
/// [`MAX_RESTART_WAIT_S`].
fn restart_wait_s(text: &str) -> Result<u64, String> {
    let seconds: u64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number of seconds"))?;
    if seconds > MAX_RESTART_WAIT_S {
        return Err(format!(
            "{seconds} s: a restart may wait at most {MAX_RESTART_WAIT_S} s (a day)"
        ));
    }
    Ok(seconds)
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

    #[test]
    fn fault_rates_are_numbers_from_0_to_one_per_gpu_hour() {
        assert_eq!(fault_rate("0"), Ok(0.0));
        assert_eq!(fault_rate("24"), Ok(24.0));
        for bad in ["nan", "inf", "-1", "24.5", "1e6", "two"] {
            assert!(fault_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn restart_waits_are_whole_seconds_up_to_a_day() {
        assert_eq!(restart_wait_s("0"), Ok(0));
        assert_eq!(restart_wait_s("86400"), Ok(86_400));
        for bad in ["86401", "18446744073709551615", "-1", "1.5", "ten"] {
            assert!(restart_wait_s(bad).is_err(), "{bad}");
        }
    }
}
