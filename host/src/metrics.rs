//! Summary metrics of a simulation, as a table or one JSON object, and the run they came
//! from ([`RunInfo`]). A metric with nothing to average over (no deadline job, no finished
//! job) is `None`: "—" in tables, `null` in JSON, never a misleading 0.

use crate::cluster::ClusterSpec;
use crate::sim::{JobRecord, PreemptionMode, SimConfig, SimOutput, SpeedModel};
use crate::tias_config::TiasOverrides;
use serde::Serialize;

/// What was simulated: enough to re-run it (`--json` output carries it as `run`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunInfo {
    /// The trace (a path, or the bundled sample's name).
    pub trace: String,
    /// The cluster, `RACKSxMACHINESxGPUS`.
    pub cluster: String,
    /// GPUs in the cluster.
    pub gpus: usize,
    /// The seed of every random choice.
    pub seed: u64,
    /// How placement affects speed.
    pub speed_model: SpeedModel,
    /// Tick period of time-driven orders, s.
    pub tick_s: f64,
    /// Restart overhead after a preemption, s.
    pub restart_overhead_s: f64,
    /// What a preemption costs a job.
    pub preemption: PreemptionMode,
    /// Seconds of progress between checkpoints under `checkpoint` (0: free).
    pub checkpoint_interval_s: f64,
    /// The core's minimum run quantum, s.
    pub min_run_s: f64,
    /// Injected GPU failures per GPU per day, if any.
    pub faults_per_gpu_day: Option<f64>,
    /// The gantry version that ran it.
    pub gantry_version: &'static str,
    /// The TIAS constants a `--tias-config` file changed (`key = value, …`); absent when
    /// none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tias_config: Option<String>,
}

impl RunInfo {
    /// The run of `trace` on `cluster` with `config`, by this build.
    pub fn new(trace: &str, cluster: ClusterSpec, config: &SimConfig) -> Self {
        Self {
            trace: trace.to_string(),
            cluster: cluster.to_string(),
            gpus: cluster.gpus(),
            seed: config.seed,
            speed_model: config.speed_model,
            tick_s: config.tick_ms as f64 / 1000.0,
            restart_overhead_s: config.restart_overhead_ms as f64 / 1000.0,
            preemption: config.preemption,
            checkpoint_interval_s: config.checkpoint_interval_ms as f64 / 1000.0,
            min_run_s: config.min_run_ms as f64 / 1000.0,
            faults_per_gpu_day: config.faults.map(|f| f.rate_per_gpu_day),
            gantry_version: env!("CARGO_PKG_VERSION"),
            tias_config: config.tias.as_ref().map(TiasOverrides::describe),
        }
    }
}

/// The numbers `gantry simulate` reports. Times in seconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Metrics {
    /// What was simulated (set by the caller that knows the trace; `null` otherwise).
    pub run: Option<RunInfo>,
    /// The scheduler's label: `gantry` for the combined scheduler (TIAS + ppo-gavel + WORL),
    /// else `order + placement`, with `+ dag_planner` when the trace has DAG jobs.
    pub scheduler: String,
    /// Job order.
    pub order: String,
    /// Placer (with what ran in its place when a learned model was missing).
    pub placement: String,
    /// DAG planner (plans DAG jobs on their gang); null when the trace has no DAG job.
    pub dag_planner: Option<String>,
    /// DAG jobs among the trace's jobs.
    pub dag_jobs: usize,
    /// Mean JCT of finished DAG jobs; null when there are none.
    pub avg_jct_dag_s: Option<f64>,
    /// Jobs that finished.
    pub jobs: usize,
    /// Jobs the core refused at submission (e.g. larger than the cluster).
    pub refused: usize,
    /// Jobs the core rejected after accepting them (hopeless deadlines).
    pub rejected: usize,
    /// Jobs neither finished, refused nor rejected when the simulation ran out of events.
    pub unfinished: usize,
    /// Mean job completion time (finish − submit) over finished jobs.
    pub avg_jct_s: Option<f64>,
    /// Median JCT.
    pub p50_jct_s: Option<f64>,
    /// 95th percentile JCT.
    pub p95_jct_s: Option<f64>,
    /// 99th percentile JCT.
    pub p99_jct_s: Option<f64>,
    /// Last finish − first submit.
    pub makespan_s: f64,
    /// Mean first start − submit over started jobs: the wait before the first start only
    /// (0 for a job started at once and then preempted for hours; see `avg_waiting_s`).
    pub avg_queueing_delay_s: Option<f64>,
    /// Mean total time finished jobs spent queued, holding no GPU, between submit and finish:
    /// the first wait plus every wait after a preemption (JCT − time holding GPUs).
    pub avg_waiting_s: Option<f64>,
    /// GPU-time held by jobs / (cluster GPUs × makespan).
    pub utilization: Option<f64>,
    /// Mean communication cost over all placements the jobs ran on.
    pub avg_comm_cost: Option<f64>,
    /// Preemptions, all causes.
    pub preemptions: u64,
    /// Starts after a job's first: runs that began again after a preemption.
    pub restarts: u64,
    /// GPU·hours of runs ended by a preemption that did not become kept progress (what the
    /// preemption mode loses, and the restart overhead).
    pub wasted_gpu_hours: f64,
    /// Deadline jobs among the trace's jobs.
    pub deadline_jobs: usize,
    /// Deadline jobs that finished late, were rejected or did not finish / deadline jobs.
    pub deadline_miss_rate: Option<f64>,
    /// Deadline jobs whose deadline some schedule could meet: `deadline ≥ submit + duration`
    /// at full speed. About half of ElasticFlow's deadlines (`submit + U(0.5, 1.5) ×
    /// duration`) are not, and count as misses under every order.
    pub deadline_jobs_feasible: usize,
    /// Misses among the feasible deadline jobs / feasible deadline jobs: the misses an order
    /// could have avoided.
    pub deadline_miss_rate_feasible: Option<f64>,
    /// Mean JCT of finished jobs without a deadline.
    pub avg_jct_nondeadline_s: Option<f64>,
    /// Mean JCT of finished deadline jobs.
    pub avg_jct_deadline_s: Option<f64>,
    /// GPU failures injected (`--faults`).
    pub gpu_failures: u64,
    /// Jobs preempted and requeued because a GPU under them failed.
    pub requeues: u64,
    /// Accepted jobs that neither finished nor were rejected, other than those still live
    /// when a run stopped because a job could not finish (`SimOutput::gave_up`, counted in
    /// `unfinished`): must be 0.
    pub jobs_lost: usize,
    /// Arrivals the simulator held back because the core's job table was full (they were
    /// submitted later, in arrival order; their JCT still counts from the trace's submit).
    pub held_back: u64,
}

/// The mean, or `None` over nothing.
fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// The nearest-rank percentile `q` (0..=1) of sorted values, or `None` over nothing.
pub(crate) fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

/// Seconds from milliseconds.
fn secs(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// Time a finished job spent queued: JCT − time holding GPUs (`busy_gpu_ms` / its gang).
fn waiting_ms(j: &JobRecord) -> Option<u64> {
    let finish = j.finish_ms?;
    let held = j.busy_gpu_ms / u64::from(j.gpus.max(1));
    Some(finish.saturating_sub(j.submit_ms).saturating_sub(held))
}

/// A metric for a table: "—" when it has no population.
pub(crate) fn cell(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "—".to_string(), |v| format!("{v:.decimals$}"))
}

impl Metrics {
    /// Summarises a simulation.
    pub fn from_output(out: &SimOutput) -> Self {
        let finished: Vec<_> = out.jobs.iter().filter(|j| j.finish_ms.is_some()).collect();
        let jct = |j: &&JobRecord| secs(j.finish_ms.unwrap_or(0).saturating_sub(j.submit_ms));
        let mut jcts: Vec<f64> = finished.iter().map(jct).collect();
        jcts.sort_by(f64::total_cmp);
        let first_submit = out.jobs.iter().map(|j| j.submit_ms).min().unwrap_or(0);
        let last_finish = finished
            .iter()
            .filter_map(|j| j.finish_ms)
            .max()
            .unwrap_or(first_submit);
        let makespan_ms = last_finish.saturating_sub(first_submit);
        let busy: u64 = out.jobs.iter().map(|j| j.busy_gpu_ms).sum();
        let deadline_jobs: Vec<_> = out
            .jobs
            .iter()
            .filter(|j| j.deadline_ms.is_some() && j.refused.is_none())
            .collect();
        let is_miss = |j: &&&JobRecord| match (j.finish_ms, j.deadline_ms) {
            (Some(f), Some(d)) => f > d,
            _ => true,
        };
        let missed = deadline_jobs.iter().filter(is_miss).count();
        let feasible: Vec<_> = deadline_jobs
            .iter()
            .filter(|j| {
                j.deadline_ms
                    .is_some_and(|d| d >= j.submit_ms.saturating_add(j.duration_ms))
            })
            .collect();
        let missed_feasible = feasible.iter().copied().filter(is_miss).count();
        let refused = out.jobs.iter().filter(|j| j.refused.is_some()).count();
        let rejected = out.jobs.iter().filter(|j| j.rejected).count();
        let dag_jcts: Vec<f64> = finished
            .iter()
            .filter(|j| j.dag_tasks > 0)
            .map(jct)
            .collect();
        let dag_jobs = out.jobs.iter().filter(|j| j.dag_tasks > 0).count();
        // Without DAG jobs the planner did nothing: the label leaves it out.
        let scheduler = match out.scheduler.rsplit_once(" + ") {
            Some((without_planner, _)) if dag_jobs == 0 => without_planner.to_string(),
            _ => out.scheduler.clone(),
        };
        Metrics {
            run: None,
            scheduler,
            order: out.order.to_string(),
            placement: out.placer.to_string(),
            dag_planner: (dag_jobs > 0).then(|| out.dag_planner.to_string()),
            dag_jobs,
            avg_jct_dag_s: mean(dag_jcts.iter().copied()),
            jobs: finished.len(),
            refused,
            rejected,
            unfinished: out.jobs.len() - finished.len() - refused - rejected,
            avg_jct_s: mean(jcts.iter().copied()),
            p50_jct_s: percentile(&jcts, 0.50),
            p95_jct_s: percentile(&jcts, 0.95),
            p99_jct_s: percentile(&jcts, 0.99),
            makespan_s: secs(makespan_ms),
            avg_queueing_delay_s: mean(out.jobs.iter().filter_map(|j| {
                j.first_start_ms
                    .map(|s| secs(s.saturating_sub(j.submit_ms)))
            })),
            avg_waiting_s: mean(out.jobs.iter().filter_map(waiting_ms).map(secs)),
            utilization: (makespan_ms > 0 && out.cluster_gpus > 0)
                .then(|| busy as f64 / (out.cluster_gpus as f64 * makespan_ms as f64)),
            avg_comm_cost: mean(
                out.jobs
                    .iter()
                    .flat_map(|j| j.placement_costs.iter().copied()),
            ),
            preemptions: out.jobs.iter().map(|j| u64::from(j.preemptions)).sum(),
            restarts: out
                .jobs
                .iter()
                .map(|j| j.placement_costs.len().saturating_sub(1) as u64)
                .sum(),
            wasted_gpu_hours: out.jobs.iter().map(|j| j.wasted_gpu_ms as f64).sum::<f64>()
                / 3_600_000.0,
            deadline_jobs: deadline_jobs.len(),
            deadline_miss_rate: (!deadline_jobs.is_empty())
                .then(|| missed as f64 / deadline_jobs.len() as f64),
            deadline_jobs_feasible: feasible.len(),
            deadline_miss_rate_feasible: (!feasible.is_empty())
                .then(|| missed_feasible as f64 / feasible.len() as f64),
            avg_jct_nondeadline_s: mean(
                finished.iter().filter(|j| j.deadline_ms.is_none()).map(jct),
            ),
            avg_jct_deadline_s: mean(finished.iter().filter(|j| j.deadline_ms.is_some()).map(jct)),
            gpu_failures: out.gpu_failures,
            requeues: out.jobs.iter().map(|j| u64::from(j.requeues)).sum(),
            jobs_lost: (out.jobs.len() - finished.len() - refused - rejected)
                .saturating_sub(out.gave_up.as_ref().map_or(0, |g| g.unfinished)),
            held_back: out.held_back,
        }
    }

    /// The same metrics labelled with the run they came from.
    pub fn with_run(mut self, run: RunInfo) -> Self {
        self.run = Some(run);
        self
    }

    /// A two-column markdown table for humans.
    pub fn table(&self) -> String {
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
        t.set_header(["metric", "value"]);
        let rows: [(&str, String); 22] = [
            (
                "order / placement / DAG planner",
                format!(
                    "{} / {} / {}",
                    self.order,
                    self.placement,
                    self.dag_planner.as_deref().unwrap_or("—")
                ),
            ),
            ("jobs finished", self.jobs.to_string()),
            (
                "refused / rejected / unfinished",
                format!("{} / {} / {}", self.refused, self.rejected, self.unfinished),
            ),
            ("avg JCT (s)", cell(self.avg_jct_s, 1)),
            ("p50 JCT (s)", cell(self.p50_jct_s, 1)),
            ("p95 JCT (s)", cell(self.p95_jct_s, 1)),
            ("p99 JCT (s)", cell(self.p99_jct_s, 1)),
            ("makespan (s)", format!("{:.1}", self.makespan_s)),
            ("avg total waiting (s)", cell(self.avg_waiting_s, 1)),
            (
                "avg wait before first start (s)",
                cell(self.avg_queueing_delay_s, 1),
            ),
            ("GPU utilisation", cell(self.utilization, 3)),
            ("avg comm cost", cell(self.avg_comm_cost, 4)),
            ("preemptions", self.preemptions.to_string()),
            ("restarts", self.restarts.to_string()),
            (
                "GPU time wasted on killed runs (GPU·h)",
                format!("{:.2}", self.wasted_gpu_hours),
            ),
            (
                "GPU failures / requeues / jobs lost",
                format!(
                    "{} / {} / {}",
                    self.gpu_failures, self.requeues, self.jobs_lost
                ),
            ),
            (
                "arrivals held back (job table full)",
                self.held_back.to_string(),
            ),
            (
                "deadline jobs (feasible)",
                format!("{} ({})", self.deadline_jobs, self.deadline_jobs_feasible),
            ),
            ("deadline miss rate", cell(self.deadline_miss_rate, 3)),
            (
                "deadline miss rate, feasible only",
                cell(self.deadline_miss_rate_feasible, 3),
            ),
            (
                "avg JCT non-deadline / deadline (s)",
                format!(
                    "{} / {}",
                    cell(self.avg_jct_nondeadline_s, 1),
                    cell(self.avg_jct_deadline_s, 1)
                ),
            ),
            (
                "DAG jobs / their avg JCT (s)",
                format!("{} / {}", self.dag_jobs, cell(self.avg_jct_dag_s, 1)),
            ),
        ];
        for (k, v) in rows {
            t.add_row([k.to_string(), v]);
        }
        t.to_string()
    }

    /// One CSV row per trace job (`--jobs-csv`), for users who analyse runs themselves.
    /// Times in seconds from the trace's first submit; empty cells where a job never
    /// started, never finished or has no deadline; `met` is empty without a deadline.
    pub fn write_jobs_csv(out: &SimOutput, path: &std::path::Path) -> anyhow::Result<()> {
        let mut w =
            csv::Writer::from_path(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        w.write_record([
            "job",
            "gpus",
            "submit_s",
            "first_start_s",
            "finish_s",
            "deadline_s",
            "met",
            "jct_s",
            "waiting_s",
            "preemptions",
            "requeues",
            "outcome",
        ])?;
        let opt = |v: Option<u64>| v.map_or(String::new(), |ms| format!("{:.3}", secs(ms)));
        for j in &out.jobs {
            let met = j.deadline_ms.map(|d| j.finish_ms.is_some_and(|f| f <= d));
            let outcome = if j.refused.is_some() {
                "refused"
            } else if j.rejected {
                "rejected"
            } else if j.finish_ms.is_some() {
                "finished"
            } else {
                "unfinished"
            };
            w.write_record([
                j.id.to_string(),
                j.gpus.to_string(),
                format!("{:.3}", secs(j.submit_ms)),
                opt(j.first_start_ms),
                opt(j.finish_ms),
                opt(j.deadline_ms),
                met.map_or(String::new(), |m| m.to_string()),
                opt(j.finish_ms.map(|f| f.saturating_sub(j.submit_ms))),
                opt(waiting_ms(j)),
                j.preemptions.to_string(),
                j.requeues.to_string(),
                outcome.to_string(),
            ])?;
        }
        w.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::DecisionLog;

    fn output(jobs: Vec<JobRecord>) -> SimOutput {
        SimOutput {
            jobs,
            cluster_gpus: 4,
            order: "las",
            placer: "first-fit",
            log: DecisionLog::default(),
            held_back: 3,
            placer_faults: 0,
            anomalies: Vec::new(),
            gpu_failures: 0,
            ..SimOutput::default()
        }
    }

    /// A 2-GPU job started at once, preempted at 10 s, restarted at 30 s, finished at 50 s.
    fn preempted_job() -> JobRecord {
        JobRecord {
            id: 0,
            gpus: 2,
            submit_ms: 0,
            first_start_ms: Some(0),
            finish_ms: Some(50_000),
            preemptions: 1,
            busy_gpu_ms: (10_000 + 20_000) * 2,
            placement_costs: vec![0.1, 0.1],
            ..JobRecord::default()
        }
    }

    #[test]
    fn waiting_counts_the_time_queued_after_a_preemption() {
        let m = Metrics::from_output(&output(vec![preempted_job()]));
        assert_eq!(m.avg_queueing_delay_s, Some(0.0));
        assert_eq!(m.avg_waiting_s, Some(20.0));
        assert_eq!(m.avg_jct_s, Some(50.0));
        assert_eq!(m.held_back, 3);
    }

    #[test]
    fn feasible_miss_rate_counts_only_deadlines_some_schedule_could_meet() {
        // (submit, duration, deadline, finish): job 0 cannot make it (deadline 50 s before
        // submit + duration) and misses; job 1 is feasible and met; job 2 feasible (exactly
        // submit + duration) and missed; job 3 feasible and never finished; job 4 has none.
        let rows = [
            (0, 100, Some(50), Some(120)),
            (0, 100, Some(300), Some(250)),
            (10, 100, Some(110), Some(200)),
            (0, 100, Some(500), None),
            (0, 100, None, Some(90)),
        ];
        let jobs = rows
            .iter()
            .enumerate()
            .map(|(id, &(submit, duration, deadline, finish))| JobRecord {
                id: id as u32,
                gpus: 1,
                submit_ms: submit * 1000,
                duration_ms: duration * 1000,
                deadline_ms: deadline.map(|d: u64| d * 1000),
                finish_ms: finish.map(|f: u64| f * 1000),
                ..JobRecord::default()
            })
            .collect();
        let m = Metrics::from_output(&output(jobs));
        assert_eq!((m.deadline_jobs, m.deadline_jobs_feasible), (4, 3));
        assert_eq!(m.deadline_miss_rate, Some(3.0 / 4.0));
        assert_eq!(m.deadline_miss_rate_feasible, Some(2.0 / 3.0));
        let table = m.table();
        let row = table.lines().find(|l| l.contains("feasible only"));
        assert!(row.is_some_and(|r| r.contains("0.667")), "{table}");
    }

    #[test]
    fn metrics_without_a_population_are_none_and_null() {
        let m = Metrics::from_output(&output(vec![preempted_job()]));
        assert_eq!(m.deadline_jobs, 0);
        assert_eq!(m.deadline_miss_rate, None);
        assert_eq!(m.deadline_miss_rate_feasible, None);
        assert_eq!(m.avg_jct_deadline_s, None);
        assert_eq!(m.avg_jct_nondeadline_s, Some(50.0));
        let json = serde_json::to_value(&m).unwrap();
        assert!(json["avg_jct_deadline_s"].is_null(), "{json}");
        assert!(json["deadline_miss_rate"].is_null(), "{json}");
        let table = m.table();
        assert!(table.contains("| 50.0 / —"), "{table}");
        let empty = Metrics::from_output(&output(Vec::new()));
        assert_eq!(
            (empty.avg_jct_s, empty.p99_jct_s, empty.utilization),
            (None, None, None)
        );
    }

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 0.5), Some(50.0));
        assert_eq!(percentile(&xs, 0.99), Some(99.0));
        assert_eq!(percentile(&xs, 1.0), Some(100.0));
        assert_eq!(percentile(&xs, 0.0), Some(1.0));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
