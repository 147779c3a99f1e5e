//! What `gantry slurm` measured: per action carried out, the time from the poll that showed
//! the change to the Slurm command that carried the decision out; per job, its completion
//! time and deadline as Slurm recorded them (`submit_time`, `end_time`, `deadline` of the
//! job records gantry saw end). The tally is written beside the journal as it goes
//! (`JOURNAL.tally.json`, replaced atomically after every cycle that changed it), and a
//! gantry restarted on the journal carries it on, so the summary survives `kill -9`. A
//! statistic over nothing is `None` (`null` in JSON), never a 0.

use super::controller::JobOutcome;
use super::json::{JobStateName, SlurmJob};
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
    /// Journal entries the journal's checkpoint stands for at the end (0: never compacted).
    #[serde(default)]
    pub journal_entries_checkpointed: u64,
    /// Checkpoints this run wrote (journal compactions).
    #[serde(default)]
    pub journal_compactions: u32,
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
    /// Of those, jobs gantry held queued that someone else released or started (an
    /// operator, or a second scheduler on the partition), each counted once.
    #[serde(default)]
    pub jobs_released_outside_gantry: u64,
    /// Released jobs Slurm kept pending for a QOS or association limit, which gantry took
    /// back and held until the limit could free ([`super::limit`]), each time counted.
    #[serde(default)]
    pub limit_holds: u64,
    /// Jobs gantry left to Slurm's own scheduler (heterogeneous jobs, large arrays, node
    /// counts and node rules it cannot keep, per-node requests it would split, reservations,
    /// dependencies and limits it does not judge), each counted when first logged: the part
    /// of the partition's work that ran outside gantry's order.
    #[serde(default)]
    pub jobs_left_to_slurm: u64,
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

/// Samples summarised in bounded space: a [DDSketch] (Masson, Rim and Lee, VLDB 2019) with
/// 1 % relative error on every quantile, exact count, sum, minimum and maximum. A daemon
/// that polls five times a second for months keeps a few KB, where a list of samples grew
/// by 8 MB a day and was rewritten with the tally after every cycle that did something.
///
/// [DDSketch]: sketches_ddsketch::DDSketch
#[derive(Clone, Default)]
pub struct Samples(sketches_ddsketch::DDSketch);

/// An empty sketch is written as `null`: its minimum and maximum are infinite, which JSON
/// cannot hold.
impl serde::Serialize for Samples {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (self.count() > 0).then_some(&self.0).serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for Samples {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let sketch = Option::<sketches_ddsketch::DDSketch>::deserialize(deserializer)?;
        Ok(Self(sketch.unwrap_or_default()))
    }
}

impl Samples {
    /// Adds one sample (non-negative; a negative one counts as 0).
    pub fn add(&mut self, value: f64) {
        self.0.add(value.max(0.0));
    }

    /// Samples added.
    pub fn count(&self) -> usize {
        self.0.count()
    }

    /// The nearest-rank `q`-quantile (the `⌈q·n⌉`-th smallest sample, as `gantry simulate`'s
    /// metrics take it over sorted samples), within 1 % of its value; the largest is exact.
    /// `None` without samples.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        // 0-based nearest rank; the sketch answers rank ⌊q'·(n − 1)⌋, so ask for the middle
        // of that rank's interval (robust to rounding).
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
        if rank + 1 == n {
            return self.0.max();
        }
        let q_sketch = (rank as f64 + 0.5) / (n - 1) as f64;
        self.0.quantile(q_sketch.min(1.0)).ok().flatten()
    }

    /// The largest sample, exact.
    pub fn max(&self) -> Option<f64> {
        self.0.max()
    }

    /// The mean, exact (up to floating-point summation).
    pub fn mean(&self) -> Option<f64> {
        Some(self.0.sum()? / self.count() as f64)
    }
}

impl std::fmt::Debug for Samples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Samples")
            .field("count", &self.count())
            .field("max", &self.max())
            .finish()
    }
}

/// Collects what the daemon measures, in space bounded by the jobs live at once, not by
/// how long it has run: per-sample lists would make the tally file, rewritten after every
/// cycle that did something, grow without end.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Tally {
    /// The summary's counters (the statistics are filled by [`finish`](Self::finish)).
    pub summary: Summary,
    latencies_ms: Samples,
    polls_ms: Samples,
    /// JCTs of completed jobs with a known submission time, s.
    jcts_s: Samples,
    /// Jobs started and not yet seen ending (so that a restart is not counted twice).
    started_live: BTreeSet<u32>,
    /// The releases under way when the tally was written (it is written before them): a
    /// gantry killed before it counted them counts, at its next poll, those Slurm shows
    /// released ([`settle_releasing`](Self::settle_releasing)), so a kill -9 loses no start.
    #[serde(default)]
    releasing: BTreeSet<u32>,
    /// Jobs counted in `jobs_left_to_slurm` that Slurm still lists (by the id they were
    /// counted under: an array's or heterogeneous job's record), so a restarted gantry,
    /// which logs them again, does not count them again.
    #[serde(default)]
    left_live: BTreeSet<u32>,
}

impl Tally {
    /// The tally file beside `journal`.
    pub fn path_for(journal: &std::path::Path) -> std::path::PathBuf {
        super::journal::beside(journal, ".tally.json")
    }

    /// Reads a tally written by [`save`](Self::save); `None` when there is none or it is
    /// unreadable (the summary then counts from now).
    pub fn load(path: &std::path::Path) -> Option<Self> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// Writes the tally to `path` atomically (a temporary file renamed over it).
    pub fn save(&self, path: &std::path::Path) -> std::io::Result<()> {
        super::journal::replace_file(path, &serde_json::to_vec(self)?)
    }

    /// One action carried out `latency_ms` after its poll.
    pub fn carried_out(&mut self, kind: &str, job: u32, latency_ms: f64) {
        self.latencies_ms.add(latency_ms);
        self.summary.decisions_carried_out += 1;
        match kind {
            "start" => self.started(job),
            "reject" => self.summary.jobs_rejected += 1,
            _ => {}
        }
    }

    fn started(&mut self, job: u32) {
        self.summary.starts += 1;
        if self.started_live.insert(job) {
            self.summary.jobs_started += 1;
        }
    }

    /// The releases about to be carried out (the tally is then written, ahead of them).
    pub fn releasing(&mut self, jobs: impl IntoIterator<Item = u32>) {
        self.releasing = jobs.into_iter().collect();
    }

    /// The releases were carried out and counted ([`carried_out`](Self::carried_out)).
    pub fn released(&mut self) {
        self.releasing.clear();
    }

    /// Counts the releases a killed gantry carried out but did not count: those of
    /// [`releasing`](Self::releasing) that `jobs` (a poll) shows released, running or ended.
    pub fn settle_releasing(&mut self, jobs: &[SlurmJob]) {
        for id in std::mem::take(&mut self.releasing) {
            let released = jobs
                .iter()
                .any(|j| j.id == id && !(j.state == JobStateName::Pending && j.held));
            if released {
                self.summary.decisions_carried_out += 1;
                self.started(id);
            }
        }
    }

    /// Counts the jobs a cycle left to Slurm ([`super::controller::Cycle::left_to_slurm`])
    /// that were not counted before, and forgets those `jobs` (the poll) no longer lists,
    /// as a job, an array's task or a heterogeneous job's component.
    pub fn left_to_slurm(&mut self, left: &[u32], jobs: &[SlurmJob]) {
        for &id in left {
            if self.left_live.insert(id) {
                self.summary.jobs_left_to_slurm += 1;
            }
        }
        if self.left_live.is_empty() {
            return;
        }
        let listed: BTreeSet<u32> = jobs
            .iter()
            .flat_map(|j| [Some(j.id), j.array_job, j.het_job])
            .flatten()
            .collect();
        self.left_live.retain(|id| listed.contains(id));
    }

    /// One poll that took `ms`.
    pub fn polled(&mut self, ms: f64) {
        self.summary.cycles += 1;
        self.polls_ms.add(ms);
    }

    /// Jobs seen ending: counted, and their JCTs and deadlines kept as statistics.
    pub fn ended(&mut self, outcomes: &[JobOutcome]) {
        for o in outcomes {
            self.started_live.remove(&o.id);
            let completed = o.state == "COMPLETED";
            if completed {
                self.summary.jobs_completed += 1;
                if o.submit_s > 0 {
                    self.jcts_s.add(o.end_s.saturating_sub(o.submit_s) as f64);
                }
            } else {
                self.summary.jobs_ended_otherwise += 1;
            }
            if let Some(deadline_s) = o.deadline_s {
                self.summary.deadline_jobs += 1;
                if !completed || o.end_s > deadline_s {
                    self.summary.deadline_misses += 1;
                }
            }
        }
    }

    /// The summary with its statistics.
    pub fn finish(&self) -> Summary {
        let mut s = self.summary.clone();
        s.decision_latency_p50_ms = self.latencies_ms.quantile(0.5);
        s.decision_latency_p99_ms = self.latencies_ms.quantile(0.99);
        s.decision_latency_max_ms = self.latencies_ms.max();
        s.poll_p50_ms = self.polls_ms.quantile(0.5);
        s.poll_p99_ms = self.polls_ms.quantile(0.99);
        s.avg_jct_s = self.jcts_s.mean();
        s.p50_jct_s = self.jcts_s.quantile(0.5);
        s.p99_jct_s = self.jcts_s.quantile(0.99);
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
    fn a_job_left_to_slurm_is_counted_once_also_across_a_restart() {
        let job = |id: u32, array: Option<u32>| SlurmJob {
            array_job: array,
            ..crate::slurm::json::held_job(id, "gres:gpu:1")
        };
        let listed = [job(3, None), job(9, Some(8))];
        let mut t = Tally::default();
        // Job 3, and array 8 by its record (its task 9 listed).
        t.left_to_slurm(&[3, 8], &listed);
        t.left_to_slurm(&[3], &listed);
        assert_eq!(t.summary.jobs_left_to_slurm, 2);
        // A restarted gantry logs them again: the saved tally does not count them again.
        let mut restarted: Tally =
            serde_json::from_slice(&serde_json::to_vec(&t).unwrap()).unwrap();
        restarted.left_to_slurm(&[3, 8], &listed);
        assert_eq!(restarted.summary.jobs_left_to_slurm, 2);
        // Gone from the listing, forgotten: an id Slurm gives again is a new job.
        restarted.left_to_slurm(&[], &listed[1..]);
        restarted.left_to_slurm(&[3], &[job(3, None)]);
        assert_eq!(restarted.summary.jobs_left_to_slurm, 3);
        // A tally written before this field existed reads as none counted.
        let mut old = serde_json::to_value(&t).unwrap();
        old.as_object_mut().unwrap().remove("left_live");
        let old: Tally = serde_json::from_value(old).unwrap();
        assert!(old.left_live.is_empty());
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
        assert_within_1_percent(s.p50_jct_s, 10.0);
        assert!((s.avg_jct_s.unwrap() - 44.0 / 3.0).abs() < 1e-9);
        assert_eq!(
            (s.starts, s.jobs_started, s.decisions_carried_out),
            (4, 3, 4)
        );
        assert_within_1_percent(s.decision_latency_p50_ms, 2.0);
        assert_eq!(s.decision_latency_p99_ms, Some(10.0));
        assert_eq!(s.decision_latency_max_ms, Some(10.0));
        let empty = Tally::default().finish();
        assert_eq!(
            (empty.decision_latency_p50_ms, empty.avg_jct_s),
            (None, None)
        );
    }

    fn assert_within_1_percent(got: Option<f64>, want: f64) {
        let got = got.expect("a value");
        assert!(
            (got - want).abs() <= 0.01 * want.abs() + 1e-9,
            "{got} is not within 1 % of {want}"
        );
    }

    /// A deterministic spread of samples: 0.5 ms to about 2 s, heavy-tailed.
    fn spread(i: u64) -> f64 {
        let x = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            >> 33;
        let u = (x % 1_000_000) as f64 / 1_000_000.0;
        0.5 * (1.0 - u).powf(-0.6)
    }

    #[test]
    fn quantiles_are_the_nearest_rank_ones_within_1_percent() {
        for n in [1u64, 2, 3, 7, 100, 1001, 50_000] {
            let mut samples = Samples::default();
            let mut exact: Vec<f64> = (0..n).map(spread).collect();
            for &v in &exact {
                samples.add(v);
            }
            exact.sort_by(f64::total_cmp);
            for q in [0.0, 0.01, 0.5, 0.9, 0.95, 0.99, 1.0] {
                let want = crate::metrics::percentile(&exact, q).unwrap();
                assert_within_1_percent(samples.quantile(q), want);
            }
            assert_eq!(samples.max(), exact.last().copied());
            let mean = exact.iter().sum::<f64>() / n as f64;
            assert!((samples.mean().unwrap() - mean).abs() < 1e-9 * mean);
        }
    }

    /// A week of a busy partition: a poll every 200 ms, 100,000 jobs started once or twice
    /// and ended. The tally is rewritten after every cycle that did something, so its size
    /// must not grow with the run.
    #[test]
    fn a_week_of_polls_and_jobs_keeps_the_tally_a_few_kb() {
        let mut t = Tally::default();
        let polls = 7 * 24 * 3600 * 5;
        for i in 0..polls {
            t.polled(5.0 + spread(i));
        }
        for job in 0..100_000u32 {
            t.carried_out("start", job, spread(u64::from(job)));
            if job % 10 == 0 {
                // Requeued and started again: one job, two starts.
                t.carried_out("start", job, 1.0);
            }
            let end = 1_000 + u64::from(job % 3_000);
            t.ended(&[outcome(job, "COMPLETED", 1_000, end, Some(2_000))]);
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("week.tally.json");
        t.save(&path).unwrap();
        let bytes = std::fs::metadata(&path).unwrap().len();
        assert!(bytes <= 32 * 1024, "tally of a week: {bytes} bytes");
        let s = Tally::load(&path).expect("reads back").finish();
        assert_eq!(s, t.finish());
        assert_eq!(s.cycles, polls);
        assert_eq!((s.starts, s.jobs_started), (110_000, 100_000));
        assert_eq!((s.jobs_completed, s.deadline_jobs), (100_000, 100_000));
        let late = (0..100_000).filter(|job| job % 3_000 > 1_000).count();
        assert_eq!(s.deadline_misses, late);
        assert_within_1_percent(s.p50_jct_s, 1_500.0);
    }

    #[test]
    fn releases_a_killed_gantry_did_not_count_are_counted_from_the_next_poll() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.tally.json");
        let mut tally = Tally::default();
        tally.carried_out("start", 1, 5.0);
        // Written ahead of the releases of jobs 2 and 3; killed before counting them.
        tally.releasing([2, 3]);
        tally.save(&path).unwrap();
        let mut resumed = Tally::load(&path).unwrap();
        let job = |id, held, state| SlurmJob {
            id,
            held,
            state,
            ..SlurmJob::default()
        };
        // Job 2's release went through (it ran and ended); job 3 is still held.
        resumed.settle_releasing(&[
            job(2, false, JobStateName::Completed),
            job(3, true, JobStateName::Pending),
        ]);
        assert_eq!(
            (resumed.summary.starts, resumed.summary.jobs_started),
            (2, 2)
        );
        // Settled once: a later poll counts nothing again.
        resumed.settle_releasing(&[job(2, false, JobStateName::Running)]);
        assert_eq!(resumed.summary.starts, 2);
        // Releases carried out and counted leave nothing to settle.
        resumed.releasing([4]);
        resumed.carried_out("start", 4, 1.0);
        resumed.released();
        resumed.settle_releasing(&[job(4, false, JobStateName::Running)]);
        assert_eq!(resumed.summary.starts, 3);
    }

    #[test]
    fn a_job_started_again_after_a_restart_counts_once() {
        let mut t = Tally::default();
        t.carried_out("start", 7, 1.0);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("r.tally.json");
        t.save(&path).unwrap();
        let mut resumed = Tally::load(&path).expect("reads back");
        resumed.carried_out("start", 7, 1.0);
        resumed.carried_out("start", 8, 1.0);
        let s = resumed.finish();
        assert_eq!((s.starts, s.jobs_started), (3, 2));
    }
}
