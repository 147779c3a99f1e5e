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
//!
//! **Checkpoints.** Once the journal passes a size (`gantry slurm --journal-compact-kib`),
//! gantry writes the controller's state ([`ControllerCheckpoint`]: the core's snapshot and
//! what a replay would rebuild) beside it (`JOURNAL.checkpoint`, written whole, synced and
//! renamed into place) and then cuts the journal back to its header. A restart restores
//! the checkpoint and replays only the entries after it, so restarts and the file stay
//! bounded however long gantry runs. The checkpoint records the journal's length and
//! CRC-32C when it was written: a journal that still begins with those bytes (gantry
//! stopped between the two steps) is replayed from that length, any other from its
//! header. A journal that is new or empty makes a checkpoint beside it stale (the journal
//! was moved away to start afresh): it is removed.

use super::controller::{Controller, ControllerCheckpoint};
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
    /// The checkpoint beside the journal cannot be used.
    #[error(
        "journal checkpoint {path}: {problem}; move the journal and the files beside it away to start afresh"
    )]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The core answers an entry differently than recorded (another gantry build).
    #[error(
        "journal {path}: entry {index} ({event}) was answered {recorded} when written, {now} by this build; cannot resume safely"
    )]
    Diverged {
        /// The file.
        path: PathBuf,
        /// Entry index in the file (0-based; after a checkpoint, counted from it).
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
    /// Entries replayed when it was opened (those after its checkpoint).
    pub replayed: usize,
    /// Entries appended since.
    pub written: usize,
    /// Bytes of a torn last entry that were cut off when it was opened.
    pub truncated_bytes: usize,
    /// Entries the checkpoint stands for: restored at open, plus those compacted since.
    pub checkpointed: u64,
    /// Checkpoints written by this run.
    pub compactions: u32,
    /// The journal's magic and header as in the file: what it is cut back to.
    head: Vec<u8>,
    /// The journal's length now, bytes.
    len: u64,
    /// No compaction is tried below this length (after a failed one: the threshold again).
    next_compaction_len: u64,
    /// Why checkpoints cannot be written for this run (said once), if so.
    compaction_off: Option<String>,
    /// Entries of this run (replayed or written) cut from the file by its compactions.
    cut_entries: u64,
}

/// Why a compaction did not happen.
enum Compaction {
    /// Never possible in this run (the placer's state cannot be written).
    Unavailable(String),
    /// An I/O failure: tried again later.
    Failed(String),
}

/// The file layout of a checkpoint: [`CHECKPOINT_MAGIC`], this as postcard, then the
/// CRC-32C of the postcard bytes (little-endian).
#[derive(serde::Serialize, serde::Deserialize)]
struct CheckpointFile {
    /// The journal's magic and header when it was written (compared as the journal's).
    head: Vec<u8>,
    /// The journal's length when it was written, bytes, and the CRC-32C of those bytes.
    journal_len: u64,
    journal_crc: u32,
    /// Journal entries it stands for, in all.
    entries: u64,
    controller: ControllerCheckpoint,
}

impl CheckpointFile {
    /// Where the entries after this checkpoint begin in `journal` (whose magic and header
    /// take `head_len` bytes): after the bytes it covers if the journal still begins with
    /// them (not cut yet), else right after the header.
    fn tail_start(&self, journal: &[u8], head_len: usize) -> usize {
        let covered = usize::try_from(self.journal_len).unwrap_or(usize::MAX);
        let not_cut = journal.len() >= covered
            && covered >= head_len
            && CRC32C.checksum(&journal[..covered]) == self.journal_crc;
        if not_cut { covered } else { head_len }
    }
}

/// A journal `gantry slurm` compacted, for `gantry replay`: the core state of its
/// checkpoint and the entries after it.
pub struct Compacted {
    /// The core's snapshot frame at the checkpoint.
    pub core: Vec<u8>,
    /// Journal entries the checkpoint stands for.
    pub checkpointed: u64,
    /// The journal's header and the entries after the checkpoint.
    pub tail: crate::record::Recording,
}

/// Reads `path` as a compacted journal: `None` when no checkpoint is beside it.
pub fn read_compacted(path: &Path) -> Result<Option<Compacted>, JournalError> {
    let checkpoint_path = checkpoint_path_for(path);
    let Some(checkpoint) = read_checkpoint(&checkpoint_path)? else {
        return Ok(None);
    };
    let bytes = std::fs::read(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let (header, head_len) = read_head(path, &bytes)?;
    if checkpoint.head != bytes[..head_len] {
        return Err(JournalError::Checkpoint {
            path: checkpoint_path,
            problem: "written for another run than the journal beside it".into(),
        });
    }
    let mut tail = &bytes[checkpoint.tail_start(&bytes, head_len)..];
    let mut entries = Vec::new();
    while let Ok((entry, next)) = postcard::take_from_bytes::<LogEntry>(tail) {
        entries.push(entry);
        tail = next;
    }
    Ok(Some(Compacted {
        core: checkpoint.controller.core_snapshot().to_vec(),
        checkpointed: checkpoint.entries,
        tail: crate::record::Recording { header, entries },
    }))
}

const CHECKPOINT_MAGIC: [u8; 8] = *b"GANTRYCK";

/// CRC-32C (Castagnoli), table-driven.
static CRC32C: crc::Crc<u32, crc::Table<16>> =
    crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);

/// The header at the start of the journal `bytes` (read from `path`) and the length of its
/// magic and header.
fn read_head(path: &Path, bytes: &[u8]) -> Result<(RecordHeader, usize), JournalError> {
    let mismatch = |problem: String| JournalError::Mismatch {
        path: path.to_path_buf(),
        problem,
    };
    let rest = bytes
        .strip_prefix(&MAGIC)
        .ok_or_else(|| mismatch("not a gantry recording".into()))?;
    let (header, rest) =
        take_header(rest).map_err(|e| mismatch(format!("unreadable header: {e}")))?;
    Ok((header, bytes.len() - rest.len()))
}

/// A header's `--tias-config` changes, for a mismatch message.
fn describe_tias(header: &RecordHeader) -> String {
    header
        .config
        .tias
        .as_ref()
        .map_or_else(|| "unchanged".into(), |t| t.describe())
}

/// What differs between a journal's header and this run's (`None`: the same run; the
/// gantry version may differ).
fn header_difference(found: &RecordHeader, header: &RecordHeader) -> Option<String> {
    if found.config.tias != header.config.tias {
        return Some(format!(
            "written with TIAS's constants {}, this run with {} (--tias-config)",
            describe_tias(found),
            describe_tias(header)
        ));
    }
    if found.format_version != header.format_version {
        return Some(format!(
            "recording format {}, this run writes {}",
            found.format_version, header.format_version
        ));
    }
    let ours = RecordHeader {
        gantry_version: found.gantry_version.clone(),
        ..header.clone()
    };
    (*found != ours).then(|| {
        format!(
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
        )
    })
}

/// Reads the checkpoint at `path`; `None` when there is none.
fn read_checkpoint(path: &Path) -> Result<Option<CheckpointFile>, JournalError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(JournalError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let refused = |problem: &str| JournalError::Checkpoint {
        path: path.to_path_buf(),
        problem: problem.to_string(),
    };
    let body = bytes
        .strip_prefix(&CHECKPOINT_MAGIC)
        .ok_or_else(|| refused("not a gantry journal checkpoint"))?;
    let (body, crc) = body
        .split_last_chunk::<4>()
        .ok_or_else(|| refused("truncated"))?;
    if CRC32C.checksum(body) != u32::from_le_bytes(*crc) {
        return Err(refused(
            "its checksum does not match (corrupt or truncated)",
        ));
    }
    postcard::from_bytes(body)
        .map(Some)
        .map_err(|e| refused(&format!("unreadable: {e}")))
}

/// `JOURNAL` followed by `suffix`: the files gantry keeps beside its journal (the
/// checkpoint, the tally, the grace periods) and their temporary copies.
pub fn beside(journal: &Path, suffix: &str) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The checkpoint beside `journal` (`JOURNAL.checkpoint`).
pub fn checkpoint_path_for(journal: &Path) -> PathBuf {
    beside(journal, ".checkpoint")
}

/// Replaces `path` with `bytes` at once: written to `PATH.tmp`, then renamed over it, so a
/// reader (a restarted gantry) finds the old file or the new one, never a part.
pub fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = beside(path, ".tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// As [`replace_file`], and on disk when it returns: the file is synced before the rename
/// and its folder after it, so what follows may rely on it across a power loss.
pub fn replace_file_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = beside(path, ".tmp");
    let mut file = File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => File::open(dir)?.sync_all(),
        None => Ok(()),
    }
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
        let checkpoint_path = checkpoint_path_for(path);
        let mut journal = Journal {
            path: path.to_path_buf(),
            file: None,
            replayed: 0,
            written: 0,
            truncated_bytes: 0,
            checkpointed: 0,
            compactions: 0,
            head: put_header(header, MAGIC.to_vec()),
            len: 0,
            next_compaction_len: 0,
            compaction_off: None,
            cut_entries: 0,
        };
        let valid_len = if bytes.is_empty() {
            // A new journal: a checkpoint beside it belongs to one moved away.
            if file.is_some() {
                match std::fs::remove_file(&checkpoint_path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io(e)),
                }
            }
            0
        } else {
            let head_len = journal.check_head(&bytes, header)?;
            // The head as the file has it (written by the run that began the journal, maybe
            // another gantry version): what a compaction cuts back to.
            journal.head = bytes[..head_len].to_vec();
            let from = match read_checkpoint(&checkpoint_path)? {
                None => head_len,
                Some(checkpoint) => {
                    journal.restore(&checkpoint_path, &checkpoint, header, controller)?;
                    checkpoint.tail_start(&bytes, head_len)
                }
            };
            journal.replay(&bytes, from, controller)?
        };
        let Some(mut file) = file else {
            return Ok(journal);
        };
        if valid_len < bytes.len() {
            file.set_len(valid_len as u64).map_err(io)?;
            journal.truncated_bytes = bytes.len() - valid_len;
        }
        journal.len = valid_len as u64;
        if valid_len == 0 {
            file.write_all(&journal.head).map_err(io)?;
            file.sync_data().map_err(io)?;
            journal.len = journal.head.len() as u64;
        }
        journal.file = Some(file);
        Ok(journal)
    }

    /// Checks the magic and header at the start of `bytes` against this run's; returns
    /// their length.
    fn check_head(&self, bytes: &[u8], header: &RecordHeader) -> Result<usize, JournalError> {
        let (found, head_len) = read_head(&self.path, bytes)?;
        match header_difference(&found, header) {
            None => Ok(head_len),
            Some(problem) => Err(JournalError::Mismatch {
                path: self.path.clone(),
                problem,
            }),
        }
    }

    /// Restores `controller` from a checkpoint written for this run.
    fn restore(
        &mut self,
        checkpoint_path: &Path,
        checkpoint: &CheckpointFile,
        header: &RecordHeader,
        controller: &mut Controller,
    ) -> Result<(), JournalError> {
        let refused = |problem: String| JournalError::Checkpoint {
            path: checkpoint_path.to_path_buf(),
            problem,
        };
        let found = checkpoint
            .head
            .strip_prefix(&MAGIC)
            .and_then(|rest| take_header(rest).ok())
            .map(|(found, _)| found)
            .ok_or_else(|| refused("unreadable header".into()))?;
        if let Some(problem) = header_difference(&found, header) {
            return Err(refused(problem));
        }
        controller
            .restore_checkpoint(&checkpoint.controller)
            .map_err(refused)?;
        self.checkpointed = checkpoint.entries;
        Ok(())
    }

    /// Replays every complete entry from byte `from` on; returns the length of the valid
    /// prefix (a torn last entry, from a crash mid-write, is not part of it).
    fn replay(
        &mut self,
        bytes: &[u8],
        from: usize,
        controller: &mut Controller,
    ) -> Result<usize, JournalError> {
        let mut rest = &bytes[from.min(bytes.len())..];
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

    /// Whether the controller was put back where an earlier run left it (entries replayed,
    /// or a checkpoint restored).
    pub fn resumed(&self) -> bool {
        self.replayed > 0 || self.checkpointed > 0
    }

    /// Writes a checkpoint and cuts the journal back to its header once the journal is
    /// longer than `threshold_bytes` (0: never), at a point where `controller` has taken
    /// every entry written (after a cycle). Returns a line for the log when it compacted,
    /// or when it cannot (said once; a failed write is tried again a threshold later).
    pub fn compact_if_over(
        &mut self,
        threshold_bytes: u64,
        controller: &Controller,
    ) -> Option<String> {
        let over = threshold_bytes > 0
            && self.file.is_some()
            && self.len > threshold_bytes
            && self.len >= self.next_compaction_len;
        if !over || self.compaction_off.is_some() {
            return None;
        }
        let tail = self.tail_entries();
        match self.compact(controller) {
            Ok(()) => Some(format!(
                "journal compacted: checkpoint written for {} entries ({} since the last), journal cut to its header",
                self.checkpointed, tail
            )),
            Err(Compaction::Unavailable(why)) => {
                let line = format!("journal not compacted: {why}; it grows with every event");
                self.compaction_off = Some(why);
                Some(line)
            }
            Err(Compaction::Failed(e)) => {
                self.next_compaction_len = self.len.saturating_add(threshold_bytes);
                Some(format!("journal compaction failed, tried again later: {e}"))
            }
        }
    }

    /// Entries in the journal file now (after its checkpoint).
    fn tail_entries(&self) -> u64 {
        (self.replayed + self.written) as u64 - self.cut_entries
    }

    fn compact(&mut self, controller: &Controller) -> Result<(), Compaction> {
        let state = controller.checkpoint().map_err(Compaction::Unavailable)?;
        let failed = |e: std::io::Error| Compaction::Failed(e.to_string());
        let bytes = std::fs::read(&self.path).map_err(failed)?;
        let checkpoint = CheckpointFile {
            head: self.head.clone(),
            journal_len: bytes.len() as u64,
            journal_crc: CRC32C.checksum(&bytes),
            entries: self.checkpointed + self.tail_entries(),
            controller: state,
        };
        let body =
            postcard::to_stdvec(&checkpoint).map_err(|e| Compaction::Failed(e.to_string()))?;
        let mut out = CHECKPOINT_MAGIC.to_vec();
        out.extend_from_slice(&body);
        out.extend_from_slice(&CRC32C.checksum(&body).to_le_bytes());
        replace_file_synced(&checkpoint_path_for(&self.path), &out).map_err(failed)?;
        // The checkpoint is in place: the entries it covers may go.
        let journal = self
            .file
            .as_mut()
            .ok_or_else(|| Compaction::Failed("read-only".into()))?;
        journal.set_len(self.head.len() as u64).map_err(failed)?;
        journal.sync_all().map_err(failed)?;
        self.cut_entries += self.tail_entries();
        self.checkpointed = checkpoint.entries;
        self.len = self.head.len() as u64;
        self.compactions += 1;
        Ok(())
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
        self.len += bytes.len() as u64;
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
                closed_partitions: Vec::new(),
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
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            let path = dir.join("j.gantry");
            let mut first = controller();
            let mut journal = Journal::open(&path, &header(0), &mut first, true).unwrap();
            let snapshot = Snapshot {
                jobs: vec![held(1), held(2)],
                nodes: nodes(),
                ..Snapshot::default()
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
            // And for another TIAS configuration.
            let mut tuned = header(0);
            tuned.config.tias = Some(crate::tias_config::TiasOverrides {
                deadline_weight: Some(2),
                ..Default::default()
            });
            let err = Journal::open(&path, &tuned, &mut controller(), false)
                .err()
                .unwrap()
                .to_string();
            assert!(
                err.contains("constants unchanged, this run with deadline_weight = 2"),
                "{err}"
            );
            // `gantry replay` reads it as a recording.
            let recording = crate::record::read(&path).unwrap();
            assert!(
                crate::record::replay(&recording)
                    .unwrap()
                    .mismatch
                    .is_none()
            );
        });
    }

    #[test]
    fn a_second_run_on_a_journal_in_use_is_refused_until_the_first_ends() {
        crate::dag::on_big_stack(|| {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            let path = dir.join("j.gantry");
            let mut first = controller();
            let mut journal = Journal::open(&path, &header(0), &mut first, true).unwrap();
            let snapshot = Snapshot {
                jobs: vec![held(1)],
                nodes: nodes(),
                ..Snapshot::default()
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
        });
    }

    /// A small Slurm: the controller's starts run at once, and the oldest running job
    /// completes every third step; a new held job arrives every step.
    #[derive(Clone)]
    struct MiniSlurm {
        jobs: std::collections::BTreeMap<u32, SlurmJob>,
        step: u32,
    }

    impl MiniSlurm {
        fn new() -> Self {
            Self {
                jobs: Default::default(),
                step: 0,
            }
        }

        fn now(&self) -> u64 {
            1_800_000_000_000 + u64::from(self.step) * 7_000
        }

        /// One poll and the actions it asked for; returns the cycle's journal entries.
        fn step(&mut self, c: &mut Controller) -> Vec<crate::sim::LogEntry> {
            self.step += 1;
            let id = self.step;
            self.jobs.insert(id, held(id));
            let end_s = self.now() / 1000;
            if self.step.is_multiple_of(3)
                && let Some(job) = self
                    .jobs
                    .values_mut()
                    .find(|j| j.state == crate::slurm::json::JobStateName::Running)
            {
                job.state = crate::slurm::json::JobStateName::Completed;
                job.end_s = end_s;
            }
            let snapshot = Snapshot {
                jobs: self.jobs.values().cloned().collect(),
                nodes: nodes(),
                ..Snapshot::default()
            };
            let now = self.now();
            let cycle = c.observe(&snapshot, now);
            for action in &cycle.actions {
                if let crate::slurm::action::Action::Start(plan) = action {
                    let job = self.jobs.get_mut(&plan.job).unwrap();
                    job.held = false;
                    job.state = crate::slurm::json::JobStateName::Running;
                    job.nodes = plan.shape.iter().map(|(n, _)| n.clone()).collect();
                    job.required_nodes = job.nodes.clone();
                }
                c.action_done(action, now, Ok(()));
            }
            // Ended jobs leave squeue's listing.
            self.jobs.retain(|_, j| !j.state.is_final());
            cycle.entries
        }
    }

    fn tias_controller() -> Controller {
        let layout = ClusterLayout::discover("gpu", &nodes(), "").unwrap();
        Controller::new(
            layout,
            OrderKind::Tias,
            PlacerKind::BestFit,
            0,
            ControllerConfig::default(),
        )
        .unwrap()
    }

    fn tias_header() -> RecordHeader {
        let spec = "1x2x4".parse().unwrap();
        RecordHeader::new(
            "slurm partition gpu",
            spec,
            OrderKind::Tias,
            PlacerKind::BestFit,
            &SimConfig::default(),
        )
    }

    fn core_state(c: &Controller) -> Vec<u8> {
        c.checkpoint().unwrap().core_snapshot().to_vec()
    }

    /// A journal compacted mid-run resumes to the same core state as a full replay of the
    /// same run, and then decides the same; whether gantry stopped before the journal was
    /// cut or after.
    #[test]
    fn a_compacted_journal_resumes_where_the_whole_journal_would() {
        crate::dag::on_big_stack(|| {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            let whole_path = dir.join("whole.gantry");
            let cut_path = dir.join("cut.gantry");
            let mut whole_c = tias_controller();
            let mut cut_c = tias_controller();
            let mut whole = Journal::open(&whole_path, &tias_header(), &mut whole_c, true).unwrap();
            let mut cut = Journal::open(&cut_path, &tias_header(), &mut cut_c, true).unwrap();
            let (mut slurm_a, mut slurm_b) = (MiniSlurm::new(), MiniSlurm::new());
            let mut before_cut = Vec::new();
            for step in 0..40 {
                let entries = slurm_a.step(&mut whole_c);
                whole.append(&entries).unwrap();
                let entries = slurm_b.step(&mut cut_c);
                cut.append(&entries).unwrap();
                if step == 24 {
                    before_cut = std::fs::read(&cut_path).unwrap();
                }
                // A threshold of one byte: compacted after every cycle from step 10 to 24.
                if (10..=24).contains(&step) {
                    let line = cut.compact_if_over(1, &cut_c).unwrap();
                    assert!(line.starts_with("journal compacted"), "{line}");
                }
            }
            assert_eq!(cut.compactions, 15);
            let total = (whole.replayed + whole.written) as u64;
            assert!(
                std::fs::metadata(&cut_path).unwrap().len()
                    < std::fs::metadata(&whole_path).unwrap().len()
            );
            drop((whole, cut));
            let reference = {
                let mut c = tias_controller();
                let j = Journal::open(&whole_path, &tias_header(), &mut c, false).unwrap();
                assert_eq!(j.replayed as u64, total);
                c
            };
            let mut resumed = tias_controller();
            let j = Journal::open(&cut_path, &tias_header(), &mut resumed, true).unwrap();
            assert_eq!(j.checkpointed + j.replayed as u64, total);
            assert!(j.resumed() && j.checkpointed > 0);
            drop(j);
            assert_eq!(core_state(&resumed), core_state(&reference));
            // `gantry replay` checks the entries after the checkpoint from its state.
            let replays_clean = |path: &Path| {
                let compacted = read_compacted(path).unwrap().expect("a checkpoint");
                assert!(!compacted.tail.entries.is_empty());
                let report =
                    crate::record::replay_from(&compacted.tail, Some(&compacted.core)).unwrap();
                report.mismatch.is_none()
            };
            assert!(replays_clean(&cut_path));
            assert!(read_compacted(&whole_path).unwrap().is_none());
            // Stopped after the checkpoint of step 24 was written, before the cut: the
            // journal still begins with the bytes the checkpoint covers.
            let latest = std::fs::read(&cut_path).unwrap();
            let mut uncut = before_cut.clone();
            uncut.extend_from_slice(&latest[put_header(&tias_header(), MAGIC.to_vec()).len()..]);
            std::fs::write(&cut_path, &uncut).unwrap();
            let mut resumed_uncut = tias_controller();
            let j = Journal::open(&cut_path, &tias_header(), &mut resumed_uncut, false).unwrap();
            assert_eq!(j.checkpointed + j.replayed as u64, total);
            assert_eq!(core_state(&resumed_uncut), core_state(&reference));
            assert!(replays_clean(&cut_path));
            // And each decides the next cycle as the uninterrupted run does.
            let next = |c: &mut Controller, slurm: &mut MiniSlurm| slurm.step(c);
            let mut reference = reference;
            let expected = next(&mut reference, &mut slurm_a);
            assert_eq!(next(&mut resumed, &mut slurm_b.clone()), expected);
            assert_eq!(next(&mut resumed_uncut, &mut slurm_b), expected);
        });
    }

    /// A checkpoint beside a journal that was moved away is stale: removed when the new
    /// journal starts. A corrupt one is refused, naming the file. A placer whose state is
    /// not written makes compaction unavailable, said once.
    #[test]
    fn stale_corrupt_and_unavailable_checkpoints() {
        crate::dag::on_big_stack(|| {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            let path = dir.join("j.gantry");
            let checkpoint = checkpoint_path_for(&path);
            let mut c = tias_controller();
            let mut journal = Journal::open(&path, &tias_header(), &mut c, true).unwrap();
            let mut slurm = MiniSlurm::new();
            for _ in 0..5 {
                journal.append(&slurm.step(&mut c)).unwrap();
            }
            assert!(journal.compact_if_over(0, &c).is_none(), "0: never");
            assert!(journal.compact_if_over(1, &c).is_some());
            drop(journal);
            // Corrupt: one byte flipped.
            let good = std::fs::read(&checkpoint).unwrap();
            let mut bad = good.clone();
            let middle = bad.len() / 2;
            bad[middle] ^= 0x40;
            std::fs::write(&checkpoint, &bad).unwrap();
            let err = Journal::open(&path, &tias_header(), &mut tias_controller(), true)
                .err()
                .unwrap()
                .to_string();
            assert!(
                err.contains("j.gantry.checkpoint") && err.contains("checksum"),
                "{err}"
            );
            // Moved away: the journal is gone, the checkpoint stays behind.
            std::fs::write(&checkpoint, &good).unwrap();
            std::fs::rename(&path, dir.join("old.gantry")).unwrap();
            let mut fresh = tias_controller();
            let journal = Journal::open(&path, &tias_header(), &mut fresh, true).unwrap();
            assert!(!journal.resumed() && fresh.core().jobs().is_empty());
            assert!(!checkpoint.exists(), "stale checkpoint removed");
            drop(journal);
            // The learned placer's state is not written: said once, then not tried.
            let layout = ClusterLayout::discover("gpu", &nodes(), "").unwrap();
            let mut ppo = Controller::new(
                layout,
                OrderKind::Fifo,
                PlacerKind::Ppo,
                0,
                ControllerConfig::default(),
            )
            .unwrap();
            let ppo_path = dir.join("ppo.gantry");
            let ppo_header = RecordHeader::new(
                "slurm partition gpu",
                "1x2x4".parse().unwrap(),
                OrderKind::Fifo,
                PlacerKind::Ppo,
                &SimConfig::default(),
            );
            let mut journal = Journal::open(&ppo_path, &ppo_header, &mut ppo, true).unwrap();
            let mut slurm = MiniSlurm::new();
            journal.append(&slurm.step(&mut ppo)).unwrap();
            let line = journal.compact_if_over(1, &ppo).unwrap();
            assert!(
                line.contains("journal not compacted") && line.contains("ppo"),
                "{line}"
            );
            journal.append(&slurm.step(&mut ppo)).unwrap();
            assert!(journal.compact_if_over(1, &ppo).is_none(), "said once");
            assert!(!checkpoint_path_for(&ppo_path).exists());
            drop(journal);
        });
    }

    /// A journal begun by another gantry build (its header names that version, of another
    /// length) is cut back to its own header, and still reads afterwards.
    #[test]
    fn a_journal_begun_by_another_build_is_cut_back_to_its_own_header() {
        crate::dag::on_big_stack(|| {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            let path = dir.join("j.gantry");
            let older = RecordHeader {
                gantry_version: "0.0.1-an-older-build-with-a-longer-name".into(),
                ..tias_header()
            };
            let mut c = tias_controller();
            let mut journal = Journal::open(&path, &older, &mut c, true).unwrap();
            let mut slurm = MiniSlurm::new();
            journal.append(&slurm.step(&mut c)).unwrap();
            drop(journal);
            let mut c = tias_controller();
            let mut journal = Journal::open(&path, &tias_header(), &mut c, true).unwrap();
            for _ in 0..4 {
                journal.append(&slurm.step(&mut c)).unwrap();
            }
            assert!(journal.compact_if_over(1, &c).is_some());
            journal.append(&slurm.step(&mut c)).unwrap();
            drop(journal);
            let bytes = std::fs::read(&path).unwrap();
            assert!(bytes.starts_with(&put_header(&older, MAGIC.to_vec())));
            let mut resumed = tias_controller();
            let journal = Journal::open(&path, &tias_header(), &mut resumed, false).unwrap();
            assert!(journal.replayed > 0 && journal.checkpointed > 0);
            assert_eq!(core_state(&resumed), core_state(&c));
            let compacted = read_compacted(&path).unwrap().unwrap();
            let report =
                crate::record::replay_from(&compacted.tail, Some(&compacted.core)).unwrap();
            assert!(report.mismatch.is_none());
        });
    }
}
