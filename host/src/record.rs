//! Recorded event streams: write a simulation's every `handle` call to a file, read it back,
//! replay it through a fresh core and report the first decision that differs, and dump it
//! as text.
//!
//! File layout: the 8-byte magic `GANTRYRL`, a postcard [`RecordHeader`] (format version,
//! gantry version, trace name, cluster, order, placer, simulation config with its seed,
//! core capacities, and on a cluster of mixed GPU types each machine's speed and the
//! placement hints the placer read), then postcard [`LogEntry`]s back to back until the end
//! of the file.

use crate::cli::value_name;
use crate::cluster::Cluster;
use crate::mixed::hints::PlacementHints;
use crate::registry::{
    AnyOrder, AnyPlacer, CapacitySet, HOST_GANG, HOST_GPUS, HOST_JOBS, OrderKind, PlacerKind,
};
use crate::sim::{
    ClusterSpec, DECISION_BUFFER, DagPlannerKind, DecisionLog, HostDecision, JobRecord, LogEntry,
    SchedulerSpec, SimConfig, SimOutput,
};
use crate::tias_config::{Invalid, TiasOverrides};
use gantry_core::wire::{FIRMWARE_GANG, FIRMWARE_GPUS, FIRMWARE_JOBS};
use gantry_core::{
    Decision, Event, GpuId, MachineId, PreemptReason, SchedError, Scheduler, Topology,
};
use std::fmt::Write as _;
use std::path::Path;

/// The first bytes of every recording.
pub const MAGIC: [u8; 8] = *b"GANTRYRL";
/// Bumped whenever the layout of the header or the entries changes (2: GPU types; 3: a
/// submitted job's preemption class, the simulator's preemption mode, checkpoint interval
/// and minimum run quantum).
pub const FORMAT_VERSION: u32 = 3;
/// The version of a recording whose header is followed by an extension (the head
/// reservation): written only when a setting the extension holds is not its default, so a
/// recording of a run without them is byte for byte what version 3 writes.
pub const FORMAT_VERSION_EXTENDED: u32 = 4;
/// Version 4 with the `--tias-config` changes in the extension, after the head reservation:
/// written only for a run with such a file, so other recordings keep versions 3 and 4.
pub const FORMAT_VERSION_TIAS: u32 = 5;

/// Settings recorded after the [`RecordHeader`] in a version-4 or -5 recording (they were
/// added after version 3's header layout, which stays as it was).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct HeaderExtension {
    /// [`SimConfig::reserve_head`].
    reserve_head: bool,
    /// [`SimConfig::tias`] (version 5 only).
    tias: Option<TiasOverrides>,
}

impl HeaderExtension {
    fn of(config: &SimConfig) -> Self {
        Self {
            reserve_head: config.reserve_head,
            tias: config.tias.clone(),
        }
    }

    /// The version whose layout holds this extension: 3 when it is empty, 4 when only the
    /// reservation is set.
    fn format_version(&self) -> u32 {
        if self.tias.is_some() {
            FORMAT_VERSION_TIAS
        } else if self.reserve_head {
            FORMAT_VERSION_EXTENDED
        } else {
            FORMAT_VERSION
        }
    }
}

/// Appends the header (and, in a version-4 or -5 recording, its extension) to `bytes`.
pub fn put_header(header: &RecordHeader, bytes: Vec<u8>) -> Vec<u8> {
    // Encoding these plain types into a Vec cannot fail.
    let bytes = postcard::to_extend(header, bytes).unwrap_or_default();
    let extension = HeaderExtension::of(&header.config);
    match header.format_version {
        FORMAT_VERSION_EXTENDED => {
            postcard::to_extend(&extension.reserve_head, bytes).unwrap_or_default()
        }
        FORMAT_VERSION_TIAS => postcard::to_extend(&extension, bytes).unwrap_or_default(),
        _ => bytes,
    }
}

/// Reads a header (and its extension, in a version-4 or -5 recording) from the front of
/// `bytes`; returns it and the bytes after it. The version is left to the caller to check.
pub fn take_header(bytes: &[u8]) -> Result<(RecordHeader, &[u8]), postcard::Error> {
    let (mut header, rest) = postcard::take_from_bytes::<RecordHeader>(bytes)?;
    let (extension, rest) = match header.format_version {
        FORMAT_VERSION_EXTENDED => {
            let (reserve_head, rest) = postcard::take_from_bytes::<bool>(rest)?;
            let extension = HeaderExtension {
                reserve_head,
                tias: None,
            };
            (extension, rest)
        }
        FORMAT_VERSION_TIAS => postcard::take_from_bytes::<HeaderExtension>(rest)?,
        _ => return Ok((header, rest)),
    };
    header.config.reserve_head = extension.reserve_head;
    header.config.tias = extension.tias;
    Ok((header, rest))
}

/// Whether this build reads recordings of `version`.
pub fn version_known(version: u32) -> bool {
    [FORMAT_VERSION, FORMAT_VERSION_EXTENDED, FORMAT_VERSION_TIAS].contains(&version)
}

/// Everything needed to rebuild the core that produced a recording.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RecordHeader {
    /// [`FORMAT_VERSION`] at recording time.
    pub format_version: u32,
    /// The gantry version that recorded it.
    pub gantry_version: String,
    /// Name of the trace.
    pub trace: String,
    /// The cluster.
    pub cluster: ClusterSpec,
    /// Job order.
    pub order: OrderKind,
    /// Placer.
    pub placer: PlacerKind,
    /// Simulation settings, including the seed.
    pub config: SimConfig,
    /// Core capacities `[GPUs, live jobs, gang]`.
    pub capacities: [u32; 3],
    /// Each machine's speed, per mille of the reference GPU, in topology order; empty when
    /// every machine runs at the reference speed (a cluster of one GPU type).
    pub machine_speeds_permille: Vec<u16>,
    /// What the placer knew about each job on a cluster of mixed GPU types (each GPU's type,
    /// each job's relative run time per type, which jobs are DAG jobs): the type choice and
    /// the same-type rule read it, so a replay needs it to decide the same.
    pub placement_hints: Option<PlacementHints>,
}

impl RecordHeader {
    /// A header for a run of this gantry build.
    pub fn new(
        trace: &str,
        cluster: ClusterSpec,
        order: OrderKind,
        placer: PlacerKind,
        config: &SimConfig,
    ) -> Self {
        Self {
            format_version: HeaderExtension::of(config).format_version(),
            gantry_version: env!("CARGO_PKG_VERSION").to_string(),
            trace: trace.to_string(),
            cluster,
            order,
            placer,
            config: config.clone(),
            capacities: CapacitySet::Host.as_array(),
            machine_speeds_permille: Vec::new(),
            placement_hints: None,
        }
    }

    /// The same header for a run on `hardware` (its machines' speeds) whose placer read
    /// `hints` (`None` on a cluster of one type).
    pub fn with_hardware(
        mut self,
        hardware: &Cluster,
        hints: Option<PlacementHints>,
    ) -> Result<Self, RecordError> {
        if hardware.types.is_some() {
            let topology: Topology<HOST_GPUS> = hardware
                .topology()
                .map_err(|_| RecordError::Cluster(hardware.spec))?;
            self.machine_speeds_permille = (0..topology.machine_count())
                .map(|m| {
                    let first = topology.gpus_of_machine(MachineId(m as u16)).start;
                    topology.speed_permille(GpuId(first))
                })
                .collect();
        }
        self.placement_hints = hints;
        Ok(self)
    }

    /// The core topology the recording was made on: the cluster's shape, Proximity-DRL's
    /// link weights, each machine at its recorded speed.
    pub fn topology<const G: usize>(&self) -> Result<Topology<G>, RecordError> {
        let bad = || RecordError::Cluster(self.cluster);
        if self.machine_speeds_permille.is_empty() {
            return self.cluster.topology().map_err(|_| bad());
        }
        let c = self.cluster;
        let machines = usize::from(c.racks) * usize::from(c.machines_per_rack);
        if self.machine_speeds_permille.len() != machines {
            return Err(bad());
        }
        let speeds = &self.machine_speeds_permille;
        c.topology_with_speeds(|m| speeds.get(m).copied().unwrap_or(0))
            .map_err(|_| bad())
    }

    /// The placer the recording was made with, with its hints (and, for a `gantry slurm`
    /// journal, the rule that keeps placements to shapes Slurm allocates exactly).
    fn build_placer<const G: usize>(&self) -> AnyPlacer<G> {
        AnyPlacer::<G>::new(self.placer, self.config.seed)
            .with_hints(self.placement_hints.clone().map(std::sync::Arc::new))
            .with_slurm_exact(is_slurm_journal(&self.trace))
    }

    /// The same header for a run on the core capacities `set`.
    pub fn with_capacities(mut self, set: CapacitySet) -> Self {
        self.capacities = set.as_array();
        self
    }

    /// The capacity set the recording was made with, if this build has it.
    pub fn capacity_set(&self) -> Option<CapacitySet> {
        CapacitySet::from_array(self.capacities)
    }
}

/// A recording in memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    /// How to rebuild the core.
    pub header: RecordHeader,
    /// Every `handle` call, in order.
    pub entries: Vec<LogEntry>,
}

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// IO failure.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The core state to replay from (a journal checkpoint) is refused by the core.
    #[error("the checkpoint's core state is refused: {0}")]
    Checkpoint(String),
    /// Not a gantry recording.
    #[error("{0}: not a gantry recording (bad magic)")]
    BadMagic(String),
    /// Recorded by an incompatible format.
    #[error("{path}: recording format {found}, this build reads {FORMAT_VERSION}")]
    Version {
        /// The file.
        path: String,
        /// The version found.
        found: u32,
    },
    /// Recorded with core capacities this build does not have.
    #[error(
        "{path}: recorded with capacities {found:?}, this build has {host:?} (host) and {firmware:?} (firmware)"
    )]
    Capacities {
        /// The file.
        path: String,
        /// In the file.
        found: [u32; 3],
        /// The host set.
        host: [u32; 3],
        /// The firmware set.
        firmware: [u32; 3],
    },
    /// Truncated or corrupt bytes.
    #[error("{path}: byte {offset}: corrupt {what}: {source}")]
    Corrupt {
        /// The file.
        path: String,
        /// Where decoding failed.
        offset: usize,
        /// Header or entry number.
        what: String,
        /// The decoder's error.
        source: postcard::Error,
    },
    /// The recorded cluster cannot be rebuilt.
    #[error("recorded cluster {0} cannot be built")]
    Cluster(ClusterSpec),
    /// The recorded TIAS configuration has a value no TIAS may have.
    #[error("recorded TIAS configuration: {0}")]
    TiasConfig(#[from] Invalid),
}

/// Encodes a header and a simulation's log.
pub fn encode(header: &RecordHeader, out: &SimOutput) -> Vec<u8> {
    let mut bytes = put_header(header, MAGIC.to_vec());
    bytes.extend_from_slice(&out.log.bytes);
    bytes
}

/// Decodes a recording; `name` labels errors.
pub fn decode(bytes: &[u8], name: &str) -> Result<Recording, RecordError> {
    let rest = bytes
        .strip_prefix(&MAGIC)
        .ok_or_else(|| RecordError::BadMagic(name.to_string()))?;
    let corrupt = |offset: usize, what: String, source| RecordError::Corrupt {
        path: name.to_string(),
        offset,
        what,
        source,
    };
    let (header, mut rest) =
        take_header(rest).map_err(|e| corrupt(MAGIC.len(), "header".into(), e))?;
    if !version_known(header.format_version) {
        return Err(RecordError::Version {
            path: name.to_string(),
            found: header.format_version,
        });
    }
    if header.capacity_set().is_none() {
        return Err(RecordError::Capacities {
            path: name.to_string(),
            found: header.capacities,
            host: CapacitySet::Host.as_array(),
            firmware: CapacitySet::Firmware.as_array(),
        });
    }
    let mut entries = Vec::new();
    while !rest.is_empty() {
        let offset = bytes.len() - rest.len();
        let (entry, tail) = postcard::take_from_bytes::<LogEntry>(rest)
            .map_err(|e| corrupt(offset, format!("entry {}", entries.len()), e))?;
        entries.push(entry);
        rest = tail;
    }
    Ok(Recording { header, entries })
}

/// Reads a recording file.
pub fn read(path: &Path) -> Result<Recording, RecordError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| RecordError::Io {
        path: name.clone(),
        source,
    })?;
    decode(&bytes, &name)
}

/// The first entry where the replayed core disagrees with the recording.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// Entry index (0-based).
    pub index: usize,
    /// The recorded entry.
    pub expected: LogEntry,
    /// What the core answered now.
    pub actual: LogEntry,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "first difference at entry {} (t = {} ms, {}):",
            self.index,
            self.expected.now.0,
            describe_event(&self.expected.event)
        )?;
        writeln!(f, "  recorded: {}", describe_outcome(&self.expected))?;
        write!(f, "  replayed: {}", describe_outcome(&self.actual))
    }
}

/// The result of a replay.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayReport {
    /// Entries replayed before the first mismatch (all of them when none).
    pub matched: usize,
    /// Entries in the recording.
    pub total: usize,
    /// The first mismatch, if any.
    pub mismatch: Option<Mismatch>,
}

/// Replays every recorded event through a fresh core built from the header (with the
/// capacities it was recorded with) and compares each answer with the recorded one,
/// stopping at the first difference.
pub fn replay(recording: &Recording) -> Result<ReplayReport, RecordError> {
    replay_from(recording, None)
}

/// As [`replay`], from the core state `start` holds (a core snapshot frame: a compacted
/// `gantry slurm` journal's checkpoint) instead of an empty core.
pub fn replay_from(
    recording: &Recording,
    start: Option<&[u8]>,
) -> Result<ReplayReport, RecordError> {
    match recording.header.capacity_set() {
        Some(CapacitySet::Firmware) => {
            replay_on::<FIRMWARE_GPUS, FIRMWARE_JOBS, FIRMWARE_GANG>(recording, start)
        }
        _ => replay_on::<HOST_GPUS, HOST_JOBS, HOST_GANG>(recording, start),
    }
}

fn replay_on<const G: usize, const J: usize, const GANG: usize>(
    recording: &Recording,
    start: Option<&[u8]>,
) -> Result<ReplayReport, RecordError> {
    let header = &recording.header;
    let topology: Topology<G> = header.topology()?;
    let order = AnyOrder::configured(header.order, header.config.tias.as_ref())?;
    let batched = header.order.batches_instants();
    let slurm = is_slurm_journal(&header.trace);
    let placer = header.build_placer::<G>();
    let run = || {
        let config = header.config.scheduler_config(&order);
        let mut core = Box::new(Scheduler::<_, _, G, J, GANG>::with_config(
            topology, order, placer, config,
        ));
        if let Some(frame) = start {
            core.restore_into(&mut frame.to_vec())
                .map_err(|e| RecordError::Checkpoint(e.to_string()))?;
        }
        for (index, expected) in recording.entries.iter().enumerate() {
            let mut out: heapless::Vec<Decision<GANG>, DECISION_BUFFER> = heapless::Vec::new();
            // Batched runs (the Tiresias copies) defer every event but the scheduling Tick;
            // a `gantry slurm` journal also defers GpuUp (slurm::controller::deferred).
            let defer = (batched && expected.event != Event::Tick)
                || (slurm && matches!(expected.event, Event::GpuUp(_)));
            let result = if defer {
                core.handle_deferred(expected.now, expected.event, &mut out)
            } else {
                core.handle(expected.now, expected.event, &mut out)
            };
            let actual = LogEntry {
                now: expected.now,
                event: expected.event,
                error: result.err(),
                decisions: out.iter().map(crate::sim::host_decision).collect(),
            };
            if actual != *expected {
                let mismatch = Mismatch {
                    index,
                    expected: expected.clone(),
                    actual,
                };
                return Ok(ReplayReport {
                    matched: index,
                    total: recording.entries.len(),
                    mismatch: Some(mismatch),
                });
            }
        }
        Ok(ReplayReport {
            matched: recording.entries.len(),
            total: recording.entries.len(),
            mismatch: None,
        })
    };
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn_scoped(s, run)
            .map_err(|source| RecordError::Io {
                path: "replay thread".into(),
                source,
            })?
            .join()
            .map_err(|_| RecordError::Io {
                path: "replay thread".into(),
                source: std::io::Error::other("panicked"),
            })?
    })
}

/// A readable one-line description of an event.
pub fn describe_event(event: &Event) -> String {
    match event {
        Event::Submit(spec) => {
            let mut s = format!("submit job {} ({} GPUs", spec.id.0, spec.gpus);
            if let Some(d) = spec.deadline {
                let _ = write!(s, ", deadline {} ms", d.0);
            }
            s + ")"
        }
        Event::Finish(id) => format!("finish job {}", id.0),
        Event::Cancel(id) => format!("cancel job {}", id.0),
        Event::GpuDown(g) => format!("gpu {} down", g.0),
        Event::GpuUp(g) => format!("gpu {} up", g.0),
        Event::Tick => "tick".to_string(),
    }
}

fn describe_decision(decision: &HostDecision) -> String {
    match decision {
        Decision::Start { job, gpus } => {
            let ids: Vec<String> = gpus.as_slice().iter().map(|g| g.0.to_string()).collect();
            format!("start job {} on [{}]", job.0, ids.join(","))
        }
        Decision::Preempt {
            job,
            reason: PreemptReason::Priority,
        } => format!("preempt job {} (priority)", job.0),
        Decision::Preempt {
            job,
            reason: PreemptReason::GpuFailed(gpu),
        } => format!("preempt job {} (gpu {} failed)", job.0, gpu.0),
        Decision::Reject { job, reason } => match reason {
            gantry_core::RejectReason::DeadlineUnreachable => {
                format!("reject job {} (deadline unreachable)", job.0)
            }
        },
    }
}

fn describe_outcome(entry: &LogEntry) -> String {
    if let Some(err) = &entry.error {
        return format!("error: {err}");
    }
    if entry.decisions.is_empty() {
        return "no decision".to_string();
    }
    entry
        .decisions
        .iter()
        .map(describe_decision)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The whole recording as text: the header, then one line per entry.
pub fn dump(recording: &Recording) -> String {
    let h = &recording.header;
    let mut s = format!(
        "# gantry recording v{} (gantry {}): trace {}, cluster {}, order {}, placer {}, seed {}, {} entries\n",
        h.format_version,
        h.gantry_version,
        h.trace,
        h.cluster,
        value_name(&h.order),
        value_name(&h.placer),
        h.config.seed,
        recording.entries.len()
    );
    if !h.machine_speeds_permille.is_empty() {
        let mut speeds = h.machine_speeds_permille.clone();
        speeds.sort_unstable_by(|a, b| b.cmp(a));
        speeds.dedup();
        let speeds: Vec<String> = speeds.iter().map(u16::to_string).collect();
        let _ = writeln!(
            s,
            "# mixed GPU types: machine speeds {} per mille of the reference; placement hints {}",
            speeds.join(" / "),
            if h.placement_hints.is_some() {
                "recorded"
            } else {
                "none"
            }
        );
    }
    if h.config.reserve_head {
        let _ = writeln!(s, "# the queue head gets a reservation (--reserve-head)");
    }
    if let Some(tias) = &h.config.tias {
        let _ = writeln!(
            s,
            "# TIAS constants changed (--tias-config): {}",
            tias.describe()
        );
    }
    for (i, e) in recording.entries.iter().enumerate() {
        let _ = writeln!(
            s,
            "{i:>7} t={:>12}ms  {:<40} -> {}",
            e.now.0,
            describe_event(&e.event),
            describe_outcome(e)
        );
    }
    s
}

/// What the recorded run did to each job, rebuilt from the log alone: submissions (the
/// first one the core saw for a job id), starts and their placements' communication cost,
/// preemptions, finishes, rejections and refusals — the input of
/// [`Metrics::from_output`](crate::metrics::Metrics::from_output), so `gantry replay
/// --metrics` prints the run's metrics. They equal `simulate`'s except that a job held back
/// by the simulator behind a full job table counts from its first submission attempt (the
/// log does not hold the trace's own time), and `held_back` counts the jobs the core refused
/// with a full table. O(entries + jobs).
pub fn outcome(recording: &Recording) -> Result<SimOutput, RecordError> {
    let header = &recording.header;
    let topology: Topology<HOST_GPUS> = header.topology()?;
    let mut jobs: std::collections::BTreeMap<u32, JobRecord> = Default::default();
    let mut running: std::collections::HashMap<u32, (u64, u64)> = Default::default();
    let mut full: std::collections::BTreeSet<u32> = Default::default();
    let mut gpu_failures = 0;
    for e in &recording.entries {
        let now = e.now.0;
        match (e.event, &e.error) {
            (Event::Submit(spec), error) => {
                let record = jobs.entry(spec.id.0).or_insert_with(|| JobRecord {
                    id: spec.id.0,
                    gpus: spec.gpus,
                    submit_ms: now,
                    deadline_ms: spec.deadline.map(|d| d.0),
                    ..JobRecord::default()
                });
                record.refused = error.as_ref().map(ToString::to_string);
                if let Some(SchedError::JobTableFull(_)) = error {
                    full.insert(spec.id.0);
                }
            }
            (Event::Finish(id), None) => {
                if let Some(record) = jobs.get_mut(&id.0) {
                    stop(record, running.remove(&id.0), now);
                    record.finish_ms = Some(now);
                }
            }
            (Event::GpuDown(_), None) => gpu_failures += 1,
            _ => {}
        }
        for d in &e.decisions {
            let Some(record) = jobs.get_mut(&d.job().0) else {
                continue;
            };
            match d {
                Decision::Start { gpus, .. } => {
                    record.first_start_ms.get_or_insert(now);
                    record
                        .placement_costs
                        .push(topology.comm_cost(gpus.as_slice()));
                    running.insert(record.id, (now, gpus.len() as u64));
                }
                Decision::Preempt { reason, .. } => {
                    stop(record, running.remove(&record.id), now);
                    record.preemptions += 1;
                    if matches!(reason, PreemptReason::GpuFailed(_)) {
                        record.requeues += 1;
                    }
                }
                Decision::Reject { .. } => record.rejected = true,
            }
        }
    }
    Ok(SimOutput {
        jobs: jobs.into_values().collect(),
        cluster_gpus: header.cluster.gpus(),
        order: gantry_core::JobOrder::name(&AnyOrder::new(header.order)),
        // The learned placer's name without loading its model.
        placer: match header.placer {
            PlacerKind::Ppo => "ppo",
            PlacerKind::PpoGavel => "ppo-gavel",
            kind => gantry_core::Placer::<HOST_GPUS>::name(&AnyPlacer::new(kind, 0)),
        },
        log: DecisionLog::default(),
        held_back: full.len() as u64,
        placer_faults: 0,
        anomalies: Vec::new(),
        gpu_failures,
        // A recording holds the core's events, not how DAG jobs were planned: the label is
        // that of a run without DAG jobs (`simulate`'s default planner).
        dag_planner: DagPlannerKind::List.name(),
        scheduler: SchedulerSpec::new(header.order, header.placer, DagPlannerKind::List).label(),
        timeline: Vec::new(),
        dag_note: None,
        gpu_types: Vec::new(),
        // Jobs live when a recording ends are reported unfinished either way.
        gave_up: None,
    })
}

/// Credits a run that ends at `now` to the job's GPU time.
fn stop(record: &mut JobRecord, run: Option<(u64, u64)>, now: u64) {
    if let Some((started, gpus)) = run {
        record.busy_gpu_ms += now.saturating_sub(started) * gpus;
    }
}

/// How a `gantry slurm` journal names its trace: `slurm partition NAME`.
pub const TRACE_PREFIX: &str = "slurm partition ";

/// Whether a recording's trace name says `gantry slurm` wrote it (its placer then keeps to
/// shapes Slurm allocates exactly, [`crate::cluster::slurm_split`]).
pub fn is_slurm_journal(trace: &str) -> bool {
    trace.starts_with(TRACE_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::philly_sample;

    const CLUSTER: ClusterSpec = ClusterSpec {
        racks: 2,
        machines_per_rack: 2,
        gpus_per_machine: 4,
    };

    fn recorded(reserve_head: bool) -> Vec<u8> {
        recorded_with(OrderKind::Las, reserve_head, None)
    }

    fn recorded_with(order: OrderKind, reserve_head: bool, tias: Option<TiasOverrides>) -> Vec<u8> {
        let jobs = philly_sample(Some(150)).unwrap();
        let config = SimConfig {
            reserve_head,
            tias,
            ..SimConfig::default()
        };
        let placer = PlacerKind::BestFit;
        let out = crate::sim::simulate(&jobs, CLUSTER, order, placer, &config).unwrap();
        encode(
            &RecordHeader::new("sample", CLUSTER, order, placer, &config),
            &out,
        )
    }

    #[test]
    fn the_head_reservation_is_a_version_4_header_and_replays() {
        let reserved = decode(&recorded(true), "reserved").unwrap();
        assert_eq!(reserved.header.format_version, FORMAT_VERSION_EXTENDED);
        assert!(reserved.header.config.reserve_head);
        let report = replay(&reserved).unwrap();
        assert_eq!(report.mismatch, None);
        // The extension decides: the same entries replayed without the reservation differ.
        let mut forgotten = reserved.clone();
        forgotten.header.config.reserve_head = false;
        assert!(replay(&forgotten).unwrap().mismatch.is_some());
    }

    #[test]
    fn a_tias_configuration_is_a_version_5_header_and_replays() {
        // No index table before 1,000 sizes: 2D-LAS for the whole run.
        let overrides = TiasOverrides::parse("table_min_samples = 1000\n", "t.toml").unwrap();
        for reserve_head in [false, true] {
            let bytes = recorded_with(OrderKind::Tias, reserve_head, Some(overrides.clone()));
            let tuned = decode(&bytes, "tuned").unwrap();
            assert_eq!(tuned.header.format_version, FORMAT_VERSION_TIAS);
            assert_eq!(tuned.header.config.tias.as_ref(), Some(&overrides));
            assert_eq!(tuned.header.config.reserve_head, reserve_head);
            assert_eq!(replay(&tuned).unwrap().mismatch, None);
            assert!(dump(&tuned).contains(
                "\n# TIAS constants changed (--tias-config): table_min_samples = 1000\n"
            ));
        }
        // The extension decides: replayed with TIAS's defaults, the entries differ.
        let tuned = decode(
            &recorded_with(OrderKind::Tias, false, Some(overrides)),
            "tuned",
        )
        .unwrap();
        let mut forgotten = tuned.clone();
        forgotten.header.config.tias = None;
        assert!(replay(&forgotten).unwrap().mismatch.is_some());
        // A forged value no file may give is refused, not replayed.
        let mut forged = tuned;
        forged.header.config.tias = Some(TiasOverrides {
            safety_permille: Some(5000),
            ..TiasOverrides::default()
        });
        assert!(matches!(
            replay(&forged),
            Err(RecordError::TiasConfig(Invalid {
                field: "safety_permille",
                ..
            }))
        ));
    }

    #[test]
    fn a_run_without_the_reservation_is_written_as_version_3() {
        let bytes = recorded(false);
        let plain = decode(&bytes, "plain").unwrap();
        assert_eq!(plain.header.format_version, FORMAT_VERSION);
        assert!(!plain.header.config.reserve_head);
        // Version 3's layout: the header is followed by the entries, no extension.
        let (_, rest) = take_header(&bytes[MAGIC.len()..]).unwrap();
        let header_only = postcard::to_extend(&plain.header, MAGIC.to_vec()).unwrap();
        assert_eq!(header_only.len() + rest.len(), bytes.len());
    }
}
