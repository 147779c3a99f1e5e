//! The journal: gantry's recording (`host/src/record.rs` format: magic, header, postcard
//! entries) written as it goes, one `handle` call per entry, flushed and synced before any
//! Slurm action of the cycle runs (write-ahead). It is what makes a restart safe: after
//! `kill -9`, the next `gantry slurm` with the same file replays every entry through a fresh
//! core (checking each answer is the recorded one), which puts the core back exactly where
//! it was; the reconciler then compares that state with Slurm's and carries out whatever
//! was decided but not yet done. Nothing is started twice (a job the core runs is only
//! released while Slurm still holds it) and nothing is forgotten (a held job the core does
//! not hold is submitted). The same file is a recording `gantry replay` checks.
//!
//! A run holds the journal's lock (`flock`) from the moment it opens it until it ends, so a
//! second `gantry slurm` on the same file (by default: on the same partition, for the same
//! user) is refused instead of scheduling the partition a second time.

use super::controller::Controller;
use crate::record::{MAGIC, RecordHeader, describe_event, put_header, take_header};
use crate::sim::LogEntry;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

/// Why the journal cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Reading or writing failed.
    #[error("journal {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Not a recording, or one for another cluster, order, placer or seed.
    #[error(
        "journal {path}: {problem}; use the same flags as the run that wrote it, or move it away to start afresh"
    )]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// What differs.
        problem: String,
    },
    /// Another process holds the journal: a second `gantry slurm` on it would make every
    /// decision twice and interleave two cores' entries.
    #[error(
        "journal {path} is in use by another gantry slurm (it holds the file's lock); stop that one first, or give this run its own --record"
    )]
    InUse {
        /// The file.
        path: PathBuf,
    },
    /// The core answers an entry differently than recorded (another gantry build).
    #[error(
        "journal {path}: entry {index} ({event}) was answered {recorded} when written, {now} by this build; cannot resume safely"
    )]
    Diverged {
        /// The file.
        path: PathBuf,
        /// Entry index.
        index: usize,
        /// The event.
        event: String,
        /// Recorded answer.
        recorded: String,
        /// This build's answer.
        now: String,
    },
}

/// An open journal.
pub struct Journal {
    path: PathBuf,
    file: Option<File>,
    /// Entries replayed when it was opened.
    pub replayed: usize,
    /// Entries appended since.
    pub written: usize,
    /// Bytes of a torn last entry that were cut off when it was opened.
    pub truncated_bytes: usize,
}

impl Journal {
    /// Opens (or creates) the journal at `path` for a run described by `header`, and
    /// replays what it holds into `controller`'s core. `writable: false` (dry run) reads
    /// only and never creates the file.
    pub fn open(
        path: &Path,
        header: &RecordHeader,
        controller: &mut Controller,
        writable: bool,
    ) -> Result<Self, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_path_buf(),
            source,
        };
        // A dry run reads the file as it is; a run locks it first (no other run may append
        // while it replays) and keeps it to append to.
        let (file, bytes) = if writable {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            let mut file = OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(path)
                .map_err(io)?;
            // Held until this process ends, however it ends: the kernel drops the lock with
            // the last descriptor, so a run killed with -9 leaves none behind.
            file.try_lock().map_err(|e| match e {
                std::fs::TryLockError::WouldBlock => JournalError::InUse {
                    path: path.to_path_buf(),
                },
                std::fs::TryLockError::Error(e) => io(e),
            })?;
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).map_err(io)?;
            (Some(file), bytes)
        } else {
            match std::fs::read(path) {
                Ok(bytes) => (None, bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, Vec::new()),
                Err(e) => return Err(io(e)),
            }
        };
        let mut journal = Journal {
            path: path.to_path_buf(),
            file: None,
            replayed: 0,
            written: 0,
            truncated_bytes: 0,
        };
        let valid_len = if bytes.is_empty() {
            0
        } else {
            journal.replay(&bytes, header, controller)?
        };
        let Some(mut file) = file else {
            return Ok(journal);
        };
        if valid_len < bytes.len() {
            file.set_len(valid_len as u64).map_err(io)?;
            journal.truncated_bytes = bytes.len() - valid_len;
        }
        if valid_len == 0 {
            let start = put_header(header, MAGIC.to_vec());
            file.write_all(&start).map_err(io)?;
            file.sync_data().map_err(io)?;
        }
        journal.file = Some(file);
        Ok(journal)
    }

    /// Checks the header, replays every complete entry; returns the length of the valid
    /// prefix (a torn last entry, from a crash mid-write, is not part of it).
    fn replay(
        &mut self,
        bytes: &[u8],
        header: &RecordHeader,
        controller: &mut Controller,
    ) -> Result<usize, JournalError> {
        let mismatch = |problem: String| JournalError::Mismatch {
            path: self.path.clone(),
            problem,
        };
        let rest = bytes
            .strip_prefix(&MAGIC)
            .ok_or_else(|| mismatch("not a gantry recording".into()))?;
        let (found, mut rest) =
            take_header(rest).map_err(|e| mismatch(format!("unreadable header: {e}")))?;
        if found.format_version != header.format_version {
            return Err(mismatch(format!(
                "recording format {}, this run writes {}",
                found.format_version, header.format_version
            )));
        }
        let ours = RecordHeader {
            gantry_version: found.gantry_version.clone(),
            ..header.clone()
        };
        if found != ours {
            return Err(mismatch(format!(
                "written for {} on {} with order {:?}, placer {:?}, seed {}, tick {} ms; this run is {} on {} with {:?}, {:?}, seed {}, tick {} ms",
                found.trace,
                found.cluster,
                found.order,
                found.placer,
                found.config.seed,
                found.config.tick_ms,
                header.trace,
                header.cluster,
                header.order,
                header.placer,
                header.config.seed,
                header.config.tick_ms
            )));
        }
        while !rest.is_empty() {
            let Ok((entry, tail)) = postcard::take_from_bytes::<LogEntry>(rest) else {
                break;
            };
            if let Err(actual) = controller.replay_entry(&entry) {
                return Err(JournalError::Diverged {
                    path: self.path.clone(),
                    index: self.replayed,
                    event: describe_event(&entry.event),
                    recorded: format!("{:?} {:?}", entry.error, entry.decisions),
                    now: format!("{:?} {:?}", actual.error, actual.decisions),
                });
            }
            self.replayed += 1;
            rest = tail;
        }
        Ok(bytes.len() - rest.len())
    }

    /// Appends entries and syncs them to disk (nothing when read-only or empty).
    pub fn append(&mut self, entries: &[LogEntry]) -> Result<(), JournalError> {
        let Some(file) = self.file.as_mut().filter(|_| !entries.is_empty()) else {
            return Ok(());
        };
        let mut bytes = Vec::new();
        for entry in entries {
            bytes = postcard::to_extend(entry, bytes).unwrap_or_default();
        }
        let io = |source| JournalError::Io {
            path: self.path.clone(),
            source,
        };
        file.write_all(&bytes).map_err(io)?;
        file.sync_data().map_err(io)?;
        self.written += entries.len();
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{OrderKind, PlacerKind};
    use crate::sim::SimConfig;
    use crate::slurm::controller::{Controller, ControllerConfig, Snapshot};
    use crate::slurm::json::{SlurmJob, SlurmNode};
    use crate::slurm::layout::ClusterLayout;

    fn nodes() -> Vec<SlurmNode> {
        (1..=2)
            .map(|i| SlurmNode {
                name: format!("n{i}"),
                states: vec!["IDLE".into()],
                gres: "gpu:4".into(),
                gres_used: "gpu:0".into(),
                partitions: vec!["gpu".into()],
                reason: String::new(),
            })
            .collect()
    }

    fn controller() -> Controller {
        let layout = ClusterLayout::discover("gpu", &nodes(), "").unwrap();
        Controller::new(
            layout,
            OrderKind::Fifo,
            PlacerKind::BestFit,
            0,
            ControllerConfig::default(),
        )
        .unwrap()
    }

    fn header(seed: u64) -> RecordHeader {
        let config = SimConfig {
            seed,
            ..SimConfig::default()
        };
        let spec = "1x2x4".parse().unwrap();
        RecordHeader::new(
            "slurm partition gpu",
            spec,
            OrderKind::Fifo,
            PlacerKind::BestFit,
            &config,
        )
    }

    fn held(id: u32) -> SlurmJob {
        crate::slurm::json::held_job(id, "gres:gpu:2")
    }

    #[test]
    fn reopening_replays_cuts_a_torn_entry_and_refuses_another_run() {
        crate::dag::on_big_stack(|| {
            let dir = std::env::temp_dir().join(format!("gantry-journal-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let path = dir.join("j.gantry");
            let mut first = controller();
            let mut journal = Journal::open(&path, &header(0), &mut first, true).unwrap();
            let snapshot = Snapshot {
                jobs: vec![held(1), held(2)],
                nodes: nodes(),
            };
            let cycle = first.observe(&snapshot, 1_000);
            journal.append(&cycle.entries).unwrap();
            assert_eq!(journal.written, 2);
            // The first run ends (its lock goes with it).
            drop(journal);
            // A crash mid-write leaves half an entry.
            let mut bytes = std::fs::read(&path).unwrap();
            bytes.extend_from_slice(&[0x01, 0x02]);
            std::fs::write(&path, &bytes).unwrap();
            let mut second = controller();
            let reopened = Journal::open(&path, &header(0), &mut second, true).unwrap();
            assert_eq!((reopened.replayed, reopened.truncated_bytes), (2, 2));
            assert_eq!(second.core().jobs().len(), 2);
            assert_eq!(std::fs::read(&path).unwrap().len(), bytes.len() - 2);
            // The same file for another seed is refused with both descriptions.
            let err = Journal::open(&path, &header(7), &mut controller(), false)
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains("seed 0") && err.contains("seed 7"), "{err}");
            // `gantry replay` reads it as a recording.
            let recording = crate::record::read(&path).unwrap();
            assert!(
                crate::record::replay(&recording)
                    .unwrap()
                    .mismatch
                    .is_none()
            );
            let _ = std::fs::remove_dir_all(&dir);
        });
    }

    #[test]
    fn a_second_run_on_a_journal_in_use_is_refused_until_the_first_ends() {
        crate::dag::on_big_stack(|| {
            let dir =
                std::env::temp_dir().join(format!("gantry-journal-lock-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let path = dir.join("j.gantry");
            let mut first = controller();
            let mut journal = Journal::open(&path, &header(0), &mut first, true).unwrap();
            let snapshot = Snapshot {
                jobs: vec![held(1)],
                nodes: nodes(),
            };
            journal
                .append(&first.observe(&snapshot, 1_000).entries)
                .unwrap();
            let before = std::fs::read(&path).unwrap();
            let err = Journal::open(&path, &header(0), &mut controller(), true)
                .err()
                .unwrap();
            assert!(matches!(err, JournalError::InUse { .. }), "{err}");
            assert!(
                err.to_string().contains("in use by another gantry slurm"),
                "{err}"
            );
            // Refused without a change to the file; a dry run still reads it.
            assert_eq!(std::fs::read(&path).unwrap(), before);
            let mut reader = controller();
            let dry = Journal::open(&path, &header(0), &mut reader, false).unwrap();
            assert_eq!((dry.replayed, reader.core().jobs().len()), (1, 1));
            drop(journal);
            let mut next = controller();
            let resumed = Journal::open(&path, &header(0), &mut next, true).unwrap();
            assert_eq!((resumed.replayed, next.core().jobs().len()), (1, 1));
            drop(resumed);
            let _ = std::fs::remove_dir_all(&dir);
        });
    }
}
