//! What `gantry slurm` measured: per action carried out, the time from the poll that showed
//! the change to the Slurm command that carried the decision out; per job, its completion
//! time and deadline as Slurm recorded them (`submit_time`, `end_time`, `deadline` of the
//! job records gantry saw end). The tally is written beside the journal as it goes
//! (`JOURNAL.tally.json`, replaced atomically after every cycle that changed it), and a
//! gantry restarted on the journal carries it on, so the summary survives `kill -9`. A
//! statistic over nothing is `None` (`null` in JSON), never a 0.

use super::controller::JobOutcome;
use crate::metrics::percentile;
use std::collections::BTreeSet;

/// The `--json` summary.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// The partition scheduled.
    pub partition: String,
    /// Its shape, `RACKSxNODESxGPUS`.
    pub cluster: String,
    /// Job order.
    pub order: String,
    /// Placer.
    pub placement: String,
    /// Nothing was changed in Slurm.
    pub dry_run: bool,
    /// Polls that succeeded.
    pub cycles: u64,
    /// Polls that failed (retried).
    pub poll_failures: u64,
    /// Polls made before their period was over because a doorbell rang
    /// (`--epilog-ack-dir`: a job's epilog started, or a job was submitted).
    #[serde(default)]
    pub polls_on_doorbell: u64,
    /// Slurm commands that failed or timed out (retried in a later cycle).
    pub command_failures: u64,
    /// The journal file.
    pub journal: String,
    /// Journal entries replayed at start (decisions of an earlier run).
    pub journal_entries_replayed: usize,
    /// Journal entries written by this run.
    pub journal_entries_written: usize,
    /// Distinct jobs this run pinned and released.
    pub jobs_started: usize,
    /// Starts carried out (a job preempted and started again counts twice).
    pub starts: u64,
    /// Jobs seen ending `COMPLETED`.
    pub jobs_completed: usize,
    /// Jobs seen ending otherwise (failed, cancelled, timed out, vanished).
    pub jobs_ended_otherwise: usize,
    /// Jobs cancelled with a rejection reason.
    pub jobs_rejected: usize,
    /// Preemptions the core decided (priority or node failure).
    pub preemptions: u64,
    /// Increases of Slurm's restart count seen (requeues by Slurm or by gantry).
    pub restarts_seen: u64,
    /// Differences from what gantry expected, logged and reconciled.
    pub unexpected: u64,
    /// Actions carried out (starts, holds, requeue-holds, rejections).
    pub decisions_carried_out: usize,
    /// Median time from the poll that showed a change to its action done, ms.
    pub decision_latency_p50_ms: Option<f64>,
    /// 99th percentile of the same, ms.
    pub decision_latency_p99_ms: Option<f64>,
    /// Largest, ms.
    pub decision_latency_max_ms: Option<f64>,
    /// Median time of one poll (`squeue` and `sinfo` side by side, compact listings), ms.
    pub poll_p50_ms: Option<f64>,
    /// 99th percentile of the same, ms.
    #[serde(default)]
    pub poll_p99_ms: Option<f64>,
    /// Mean completion time (end − submit) of completed jobs, s.
    pub avg_jct_s: Option<f64>,
    /// Median of the same, s.
    pub p50_jct_s: Option<f64>,
    /// 99th percentile of the same, s.
    pub p99_jct_s: Option<f64>,
    /// Ended jobs that had a deadline.
    pub deadline_jobs: usize,
    /// Of those, jobs that did not complete by it.
    pub deadline_misses: usize,
}

/// Collects samples while the daemon runs.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    /// The summary's counters (the statistics are filled by [`finish`](Self::finish)).
    pub summary: Summary,
    latencies_ms: Vec<f64>,
    polls_ms: Vec<f64>,
    outcomes: Vec<JobOutcome>,
    started: BTreeSet<u32>,
}

impl Tally {
    /// The tally file beside `journal`.
    pub fn path_for(journal: &std::path::Path) -> std::path::PathBuf {
        let mut name = journal.as_os_str().to_owned();
        name.push(".tally.json");
        std::path::PathBuf::from(name)
    }

    /// Reads a tally written by [`save`](Self::save); `None` when there is none or it is
    /// unreadable (the summary then counts from now).
    pub fn load(path: &std::path::Path) -> Option<Self> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// Writes the tally to `path` atomically (a temporary file renamed over it).
    pub fn save(&self, path: &std::path::Path) -> std::io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = std::path::PathBuf::from(tmp);
        std::fs::write(&tmp, serde_json::to_vec(self)?)?;
        std::fs::rename(&tmp, path)
    }

    /// One action carried out `latency_ms` after its poll.
    pub fn carried_out(&mut self, kind: &str, job: u32, latency_ms: f64) {
        self.latencies_ms.push(latency_ms);
        match kind {
            "start" => {
                self.summary.starts += 1;
                self.started.insert(job);
            }
            "reject" => self.summary.jobs_rejected += 1,
            _ => {}
        }
    }

    /// One poll that took `ms`.
    pub fn polled(&mut self, ms: f64) {
        self.summary.cycles += 1;
        self.polls_ms.push(ms);
    }

    /// Jobs seen ending.
    pub fn ended(&mut self, outcomes: &[JobOutcome]) {
        self.outcomes.extend_from_slice(outcomes);
    }

    /// The summary with its statistics.
    pub fn finish(&self) -> Summary {
        let mut s = self.summary.clone();
        let mut latencies = self.latencies_ms.clone();
        latencies.sort_by(f64::total_cmp);
        s.decisions_carried_out = latencies.len();
        s.decision_latency_p50_ms = percentile(&latencies, 0.5);
        s.decision_latency_p99_ms = percentile(&latencies, 0.99);
        s.decision_latency_max_ms = latencies.last().copied();
        let mut polls = self.polls_ms.clone();
        polls.sort_by(f64::total_cmp);
        s.poll_p50_ms = percentile(&polls, 0.5);
        s.poll_p99_ms = percentile(&polls, 0.99);
        s.jobs_started = self.started.len();
        let completed: Vec<&JobOutcome> = self
            .outcomes
            .iter()
            .filter(|o| o.state == "COMPLETED")
            .collect();
        s.jobs_completed = completed.len();
        s.jobs_ended_otherwise = self.outcomes.len() - completed.len();
        let mut jcts: Vec<f64> = completed
            .iter()
            .filter(|o| o.submit_s > 0)
            .map(|o| o.end_s.saturating_sub(o.submit_s) as f64)
            .collect();
        jcts.sort_by(f64::total_cmp);
        s.avg_jct_s = (!jcts.is_empty()).then(|| jcts.iter().sum::<f64>() / jcts.len() as f64);
        s.p50_jct_s = percentile(&jcts, 0.5);
        s.p99_jct_s = percentile(&jcts, 0.99);
        let with_deadline: Vec<&JobOutcome> = self
            .outcomes
            .iter()
            .filter(|o| o.deadline_s.is_some())
            .collect();
        s.deadline_jobs = with_deadline.len();
        s.deadline_misses = with_deadline
            .iter()
            .filter(|o| o.state != "COMPLETED" || Some(o.end_s) > o.deadline_s)
            .count();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(id: u32, state: &str, submit: u64, end: u64, deadline: Option<u64>) -> JobOutcome {
        JobOutcome {
            id,
            state: state.into(),
            gpus: 1,
            submit_s: submit,
            start_s: submit,
            end_s: end,
            deadline_s: deadline,
        }
    }

    #[test]
    fn jct_and_deadline_misses_from_slurm_records() {
        let mut t = Tally::default();
        t.ended(&[
            outcome(1, "COMPLETED", 100, 110, Some(120)),
            outcome(2, "COMPLETED", 100, 130, Some(120)),
            outcome(3, "DEADLINE", 100, 121, Some(120)),
            outcome(4, "COMPLETED", 100, 104, None),
            outcome(5, "FAILED", 100, 101, None),
        ]);
        for (i, ms) in [3.0, 1.0, 2.0, 10.0].into_iter().enumerate() {
            t.carried_out("start", i as u32 % 3, ms);
        }
        let s = t.finish();
        assert_eq!((s.jobs_completed, s.jobs_ended_otherwise), (3, 2));
        assert_eq!((s.deadline_jobs, s.deadline_misses), (3, 2));
        assert_eq!(s.p50_jct_s, Some(10.0));
        assert!((s.avg_jct_s.unwrap() - 44.0 / 3.0).abs() < 1e-9);
        assert_eq!((s.starts, s.jobs_started), (4, 3));
        assert_eq!(s.decision_latency_p50_ms, Some(2.0));
        assert_eq!(s.decision_latency_p99_ms, Some(10.0));
        let empty = Tally::default().finish();
        assert_eq!(
            (empty.decision_latency_p50_ms, empty.avg_jct_s),
            (None, None)
        );
    }
}
