//! The epilog's acknowledgement (`gantry slurm --epilog-ack-dir DIR`).
//!
//! Slurm 22.05 starts a released job only in a scheduling pass: the periodic one, about once
//! a second, or the one the end of a job's epilog runs at once. A job released after its
//! predecessor's epilog is done therefore waits 0–1 s for the periodic pass. With the
//! site's epilog `scripts/gantry-epilog.sh`, a node's epilog waits (at most a bound it sets)
//! until `DIR/JOBID` exists, and gantry creates that file only after the cycle that saw the
//! job COMPLETING: the core has finished it
//! ([`ControllerConfig::finish_at_completing`](super::ControllerConfig::finish_at_completing)),
//! and its successors are released onto the completing node. The epilog's end then runs the
//! pass that starts them.
//!
//! The same epilog rings a doorbell as it starts: it creates `DIR/JOBID.end`; the site's
//! `job_submit.lua` (`scripts/gantry-job-submit.lua`) rings one at each submission to the
//! partition (`DIR/job.submit`). gantry looks for doorbells every [`DOORBELL_CHECK`] while
//! it waits for its next poll and polls at once when one rang, so an end or a submission
//! reaches the core within milliseconds instead of up to a poll period later: the epilog,
//! and with it the successors' start, waits for that poll, and a job released before
//! Slurm's next periodic pass starts in it. A doorbell is only a hint: one that cannot be
//! written, or that gantry misses, leaves the change to the next periodic poll.

use super::json::{JobStateName, SlurmJob};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often gantry looks for a doorbell while it waits for its next poll: a `read_dir` of
/// the acknowledgement folder, a few microseconds on a local file system.
pub const DOORBELL_CHECK: Duration = Duration::from_millis(5);

/// The suffixes of doorbells: `DIR/JOBID.end` (`scripts/gantry-epilog.sh` writes it) and
/// `DIR/job.submit` (`scripts/gantry-job-submit.lua`).
const DOORBELL_SUFFIXES: [&str; 2] = [".end", ".submit"];

/// The acknowledgements gantry has written, one empty file per job.
#[derive(Debug)]
pub struct EpilogAcks {
    dir: PathBuf,
    written: BTreeSet<u32>,
}

impl EpilogAcks {
    /// Acknowledges into `dir` (created if missing).
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            written: BTreeSet::new(),
        })
    }

    /// After a cycle's actions: acknowledges every job `jobs` shows COMPLETING (gantry's
    /// or not: an epilog must not wait for nothing), and removes the files of jobs that no
    /// longer complete (done, or requeued: a later run's epilog waits again). Returns what
    /// could not be written or removed, for the log.
    pub fn update(&mut self, jobs: &[SlurmJob]) -> Vec<String> {
        let completing: BTreeSet<u32> = jobs
            .iter()
            .filter(|j| j.state == JobStateName::Completing)
            .map(|j| j.id)
            .collect();
        let mut problems = Vec::new();
        for &id in completing.difference(&self.written.clone()) {
            let path = self.dir.join(id.to_string());
            match std::fs::File::create(&path) {
                Ok(_) => {
                    self.written.insert(id);
                }
                Err(e) => problems.push(format!("epilog ack {}: {e}", path.display())),
            }
        }
        let done: Vec<u32> = self.written.difference(&completing).copied().collect();
        for id in done {
            let path = self.dir.join(id.to_string());
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => problems.push(format!("epilog ack {}: {e}", path.display())),
            }
            self.written.remove(&id);
        }
        problems
    }

    /// Removes the doorbells that rang (`DIR/*.end`, `DIR/*.submit`) and says how many there
    /// were.
    /// Called before each poll (the poll sees every end they announce) and while gantry
    /// waits for the next one. A folder or a doorbell that cannot be read or removed is
    /// counted as not rung: the periodic poll still sees the change.
    pub fn take_doorbells(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        entries
            .filter_map(Result::ok)
            .filter(|entry| {
                entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| DOORBELL_SUFFIXES.iter().any(|s| name.ends_with(s)))
            })
            .filter(|entry| std::fs::remove_file(entry.path()).is_ok())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::json::held_job;

    fn in_state(id: u32, state: JobStateName) -> SlurmJob {
        SlurmJob {
            state,
            held: false,
            ..held_job(id, "gres:gpu:1")
        }
    }

    #[test]
    fn completing_jobs_are_acknowledged_until_they_leave_that_state() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("acks");
        let mut acks = EpilogAcks::new(&dir).unwrap();
        let jobs = [
            in_state(1, JobStateName::Completing),
            in_state(2, JobStateName::Running),
        ];
        assert!(acks.update(&jobs).is_empty());
        assert!(dir.join("1").exists() && !dir.join("2").exists());
        // Job 1 is done, job 2 completes.
        let jobs = [in_state(2, JobStateName::Completing)];
        assert!(acks.update(&jobs).is_empty());
        assert!(!dir.join("1").exists() && dir.join("2").exists());
        // Job 2 requeued: its next run's epilog waits again.
        let jobs = [in_state(2, JobStateName::Pending)];
        assert!(acks.update(&jobs).is_empty());
        assert!(!dir.join("2").exists());
    }

    #[test]
    fn doorbells_are_counted_and_removed_acknowledgements_are_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("acks");
        let mut acks = EpilogAcks::new(&dir).unwrap();
        assert_eq!(acks.take_doorbells(), 0);
        // Job 7's epilog starts, a job is submitted; job 9 is acknowledged.
        std::fs::write(dir.join("7.end"), "").unwrap();
        std::fs::write(dir.join("job.submit"), "").unwrap();
        assert!(
            acks.update(&[in_state(9, JobStateName::Completing)])
                .is_empty()
        );
        assert_eq!(acks.take_doorbells(), 2);
        assert_eq!(acks.take_doorbells(), 0);
        assert!(dir.join("9").exists() && !dir.join("7.end").exists());
    }
}
