//! Summary metrics of a simulation, as a table or one JSON object.

use crate::sim::SimOutput;
use serde::Serialize;

/// The numbers `gantry simulate` reports. Times in seconds.
#[derive(Clone, Debug, Serialize)]
pub struct Metrics {
    /// Job order.
    pub order: String,
    /// Placer.
    pub placement: String,
    /// Jobs that finished.
    pub jobs: usize,
    /// Jobs the core refused at submission (e.g. larger than the cluster).
    pub refused: usize,
    /// Jobs the core rejected after accepting them (hopeless deadlines).
    pub rejected: usize,
    /// Jobs neither finished, refused nor rejected when the simulation ran out of events.
    pub unfinished: usize,
    /// Mean job completion time (finish − submit) over finished jobs.
    pub avg_jct_s: f64,
    /// Median JCT.
    pub p50_jct_s: f64,
    /// 95th percentile JCT.
    pub p95_jct_s: f64,
    /// 99th percentile JCT.
    pub p99_jct_s: f64,
    /// Last finish − first submit.
    pub makespan_s: f64,
    /// Mean first start − submit over started jobs.
    pub avg_queueing_delay_s: f64,
    /// GPU-time held by jobs / (cluster GPUs × makespan).
    pub utilization: f64,
    /// Mean communication cost over all placements the jobs ran on.
    pub avg_comm_cost: f64,
    /// Preemptions, all causes.
    pub preemptions: u64,
    /// Deadline jobs among the trace's jobs.
    pub deadline_jobs: usize,
    /// Deadline jobs that finished late, were rejected or did not finish / deadline jobs.
    pub deadline_miss_rate: f64,
    /// Mean JCT of finished jobs without a deadline.
    pub avg_jct_nondeadline_s: f64,
    /// Mean JCT of finished deadline jobs.
    pub avg_jct_deadline_s: f64,
    /// GPU failures injected (`--faults`).
    pub gpu_failures: u64,
    /// Jobs preempted and requeued because a GPU under them failed.
    pub requeues: u64,
    /// Accepted jobs that neither finished nor were rejected: must be 0.
    pub jobs_lost: usize,
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// The nearest-rank percentile `q` (0..=1) of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Metrics {
    /// Summarises a simulation.
    pub fn from_output(out: &SimOutput) -> Self {
        let finished: Vec<_> = out.jobs.iter().filter(|j| j.finish_ms.is_some()).collect();
        let jct =
            |j: &&crate::sim::JobRecord| (j.finish_ms.unwrap_or(0) - j.submit_ms) as f64 / 1000.0;
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
        let missed = deadline_jobs
            .iter()
            .filter(|j| match (j.finish_ms, j.deadline_ms) {
                (Some(f), Some(d)) => f > d,
                _ => true,
            })
            .count();
        let refused = out.jobs.iter().filter(|j| j.refused.is_some()).count();
        let rejected = out.jobs.iter().filter(|j| j.rejected).count();
        Metrics {
            order: out.order.to_string(),
            placement: out.placer.to_string(),
            jobs: finished.len(),
            refused,
            rejected,
            unfinished: out.jobs.len() - finished.len() - refused - rejected,
            avg_jct_s: mean(jcts.iter().copied()),
            p50_jct_s: percentile(&jcts, 0.50),
            p95_jct_s: percentile(&jcts, 0.95),
            p99_jct_s: percentile(&jcts, 0.99),
            makespan_s: makespan_ms as f64 / 1000.0,
            avg_queueing_delay_s: mean(
                out.jobs
                    .iter()
                    .filter_map(|j| j.first_start_ms.map(|s| (s - j.submit_ms) as f64 / 1000.0)),
            ),
            utilization: if makespan_ms == 0 {
                0.0
            } else {
                busy as f64 / (out.cluster_gpus as f64 * makespan_ms as f64)
            },
            avg_comm_cost: mean(
                out.jobs
                    .iter()
                    .flat_map(|j| j.placement_costs.iter().copied()),
            ),
            preemptions: out.jobs.iter().map(|j| u64::from(j.preemptions)).sum(),
            deadline_jobs: deadline_jobs.len(),
            deadline_miss_rate: if deadline_jobs.is_empty() {
                0.0
            } else {
                missed as f64 / deadline_jobs.len() as f64
            },
            avg_jct_nondeadline_s: mean(
                finished.iter().filter(|j| j.deadline_ms.is_none()).map(jct),
            ),
            avg_jct_deadline_s: mean(finished.iter().filter(|j| j.deadline_ms.is_some()).map(jct)),
            gpu_failures: out.gpu_failures,
            requeues: out.jobs.iter().map(|j| u64::from(j.requeues)).sum(),
            jobs_lost: out.jobs.len() - finished.len() - refused - rejected,
        }
    }

    /// A two-column table for humans.
    pub fn table(&self) -> String {
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
        t.set_header(["metric", "value"]);
        let rows: [(&str, String); 16] = [
            (
                "order / placement",
                format!("{} / {}", self.order, self.placement),
            ),
            ("jobs finished", self.jobs.to_string()),
            (
                "refused / rejected / unfinished",
                format!("{} / {} / {}", self.refused, self.rejected, self.unfinished),
            ),
            ("avg JCT (s)", format!("{:.1}", self.avg_jct_s)),
            ("p50 JCT (s)", format!("{:.1}", self.p50_jct_s)),
            ("p95 JCT (s)", format!("{:.1}", self.p95_jct_s)),
            ("p99 JCT (s)", format!("{:.1}", self.p99_jct_s)),
            ("makespan (s)", format!("{:.1}", self.makespan_s)),
            (
                "avg queueing delay (s)",
                format!("{:.1}", self.avg_queueing_delay_s),
            ),
            ("GPU utilisation", format!("{:.3}", self.utilization)),
            ("avg comm cost", format!("{:.4}", self.avg_comm_cost)),
            ("preemptions", self.preemptions.to_string()),
            (
                "GPU failures / requeues / jobs lost",
                format!(
                    "{} / {} / {}",
                    self.gpu_failures, self.requeues, self.jobs_lost
                ),
            ),
            ("deadline jobs", self.deadline_jobs.to_string()),
            (
                "deadline miss rate",
                format!("{:.3}", self.deadline_miss_rate),
            ),
            (
                "avg JCT non-deadline / deadline (s)",
                format!(
                    "{:.1} / {:.1}",
                    self.avg_jct_nondeadline_s, self.avg_jct_deadline_s
                ),
            ),
        ];
        for (k, v) in rows {
            t.add_row([k.to_string(), v]);
        }
        t.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 0.5), 50.0);
        assert_eq!(percentile(&xs, 0.99), 99.0);
        assert_eq!(percentile(&xs, 1.0), 100.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
