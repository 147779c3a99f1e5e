//! Checkpoint and restore: a scheduler's whole state as one frame, so an appliance that loses
//! power resumes where it stopped, with the decisions it would have made uninterrupted.
//!
//! [`Scheduler::snapshot`] writes the live jobs, the job table with its id index and
//! submission list, the ranking (keys, tree and summaries), the review timers, the GPUs'
//! owners and health, the clock, the pending rejections, the configuration, and the order's
//! and the placer's own state (TIAS's learned window shares and published quantiles, LAS's
//! thresholds, the exact placer's cached plan, the random placer's generator position) as a
//! postcard message in the wire format's frame ([`wire`](crate::wire): COBS, a version byte,
//! CRC-32C). Every index is stored, not rebuilt, so a restored scheduler is the same value,
//! and its decisions are byte-identical to an uninterrupted run's by construction.
//!
//! [`Scheduler::restore`] builds a scheduler from a snapshot and the caller's topology (the
//! cluster is configuration, not state: the snapshot keeps a fingerprint of it and refuses
//! another). It refuses, with a [`SnapshotError`](crate::SnapshotError), a frame that is corrupt or truncated (the
//! CRC, the stuffing), of another wire or snapshot layout (the version bytes), for other
//! capacities (`G`, `J`, `GANG`), another topology, order or placer, or whose content breaks
//! the scheduler's invariants ([`Scheduler::check_invariants`]); a refused snapshot changes
//! nothing ([`Scheduler::restore_into`] keeps the running scheduler as it was).
//!
//! Size: at most 22.2 KB on the firmware's streams (64 GPUs, up to 256 live jobs; measured
//! by `scripts/firmware-check.sh`, `snapshot_bytes`). Cost: O(size) to write; O(size + J·G)
//! to restore (the invariant check). [`Scheduler::restore_in_place`] decodes into a second
//! scheduler's storage that the caller provides and exchanges the two only once the decoded
//! state has passed every check: a few KB of stack (`restore_stack_bytes`, within its
//! 4,096 B budget on the Cortex-M4F). The by-value forms, [`Scheduler::restore`] and
//! [`Scheduler::restore_into`], build the decoded state on the stack (several times the
//! scheduler's size) and exist on hosts only, not on bare-metal targets.

use super::{InvariantViolation, Scheduler, SchedulerConfig};
use crate::avl::NIL;
use crate::decode::{DecodeInPlace, IntoColumn, Reader, read};
use crate::ids::{GpuId, MachineId};
#[cfg(not(target_os = "none"))]
use crate::job_table::JobTable;
use crate::job_table::{Slot, TableAt};
use crate::order::JobOrder;
use crate::placement::Placer;
use crate::rank::RankIndex;
use crate::time::TimeMs;
use crate::timers::Timers;
use crate::topology::Topology;
use crate::wire::{self, FrameError, HeaderField, Name};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The snapshot message's layout version: the first byte of the message, after the frame's
/// own [`WIRE_VERSION`](crate::wire::WIRE_VERSION). Changes with any change of the state
/// stored (a field of the scheduler, a job, an order or a placer).
pub const SNAPSHOT_VERSION: u8 = 7;

/// Bytes of a buffer that holds any snapshot of a
/// [`FirmwareScheduler`](crate::wire::FirmwareScheduler) (64 GPUs, 256 live jobs, gangs of
/// 8), whatever its order and placer: a test fills every job slot with the widest field
/// values and every GPU busy or failed, for each order and placer, and checks the frame fits
/// (`the_widest_firmware_state_fits_max_snapshot_bytes`). The C library's
/// `GANTRY_SNAPSHOT_BYTES` is the same number.
pub const MAX_SNAPSHOT_BYTES: usize = 49_152;

/// The capacities a snapshot was taken with: a scheduler restores only its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SnapshotCapacities {
    /// GPUs (`G`).
    pub gpus: u32,
    /// Live jobs (`J`).
    pub jobs: u32,
    /// Largest gang (`GANG`).
    pub gang: u32,
}

/// Why a snapshot was not written or not restored. Nothing changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotError {
    /// The snapshot does not fit the buffer given to [`Scheduler::snapshot`].
    BufferTooSmall,
    /// The frame is corrupt, truncated, of another wire version, or its message does not
    /// decode.
    Frame(FrameError),
    /// Another snapshot layout.
    Version {
        /// The version byte found ([`SNAPSHOT_VERSION`] is understood).
        found: u8,
    },
    /// Taken with other capacities.
    Capacities {
        /// The snapshot's.
        found: SnapshotCapacities,
        /// This scheduler's.
        expected: SnapshotCapacities,
    },
    /// Taken on another cluster (the fingerprints of the topologies differ).
    Topology {
        /// The snapshot's fingerprint.
        found: u32,
        /// The fingerprint of the topology given to restore.
        expected: u32,
    },
    /// Taken with another job order ([`HeaderField::Order`]) or placer
    /// ([`HeaderField::Placer`]).
    Mismatch(HeaderField),
    /// The state decodes but breaks an invariant (a forged or mis-built snapshot).
    Inconsistent(InvariantViolation),
}

impl core::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SnapshotError::BufferTooSmall => write!(f, "snapshot does not fit the buffer"),
            SnapshotError::Frame(e) => write!(f, "snapshot frame: {e}"),
            SnapshotError::Version { found } => {
                write!(
                    f,
                    "snapshot version {found}, this build reads {SNAPSHOT_VERSION}"
                )
            }
            SnapshotError::Capacities { found, expected } => write!(
                f,
                "snapshot for {} GPUs / {} jobs / gangs of {}, this scheduler has {} / {} / {}",
                found.gpus, found.jobs, found.gang, expected.gpus, expected.jobs, expected.gang
            ),
            SnapshotError::Topology { found, expected } => write!(
                f,
                "snapshot of another cluster (topology {found:#010x}, this one {expected:#010x})"
            ),
            SnapshotError::Mismatch(field) => write!(f, "snapshot of another {field:?}"),
            SnapshotError::Inconsistent(v) => write!(f, "snapshot state is inconsistent: {v:?}"),
        }
    }
}

impl core::error::Error for SnapshotError {}

/// The state as written, borrowing the scheduler. Field for field the layout of [`State`].
#[derive(Serialize)]
struct StateRef<'a, O, P, const J: usize> {
    version: u8,
    capacities: SnapshotCapacities,
    topology: u32,
    order_name: &'a str,
    placer_name: &'a str,
    order: &'a O,
    placer: &'a P,
    config: SchedulerConfig,
    table: TableAt<'a, J>,
    rank: &'a RankIndex<J>,
    timers: &'a Timers<J>,
    running: &'a [Slot],
    owner: &'a [Slot],
    healthy: &'a [bool],
    last_now: TimeMs,
    epoch: u32,
    walking: bool,
    walk_next: Slot,
    walk_epoch: u32,
    reject_due: &'a [Slot],
    placer_faults: u32,
}

/// The first fields of [`StateRef`] (version, capacities, topology): read before the rest.
#[derive(Deserialize)]
struct Identity {
    _version: u8,
    capacities: SnapshotCapacities,
    topology: u32,
}

/// The state as read by the by-value restore (hosts only). Field for field the layout of
/// [`StateRef`].
#[cfg(not(target_os = "none"))]
#[derive(Deserialize)]
#[serde(bound(deserialize = "O: DeserializeOwned, P: DeserializeOwned"))]
struct State<O, P, const G: usize, const J: usize> {
    /// Read first, on its own (postcard writes a nested struct's fields inline).
    _identity: Identity,
    order_name: Name,
    placer_name: Name,
    order: O,
    placer: P,
    config: SchedulerConfig,
    table: JobTable<J>,
    rank: RankIndex<J>,
    timers: Timers<J>,
    running: heapless::Vec<Slot, G>,
    owner: heapless::Vec<Slot, G>,
    healthy: heapless::Vec<bool, G>,
    last_now: TimeMs,
    epoch: u32,
    walking: bool,
    walk_next: Slot,
    walk_epoch: u32,
    reject_due: heapless::Vec<Slot, J>,
    placer_faults: u32,
}

/// A CRC-32C over everything placement reads from a topology: its counts, each GPU's
/// machine and speed, each machine's rack, and the integer link weights. O(G).
pub fn topology_fingerprint<const G: usize>(topology: &Topology<G>) -> u32 {
    let mut digest = wire::FRAME_CRC.digest();
    let (gpus, machines) = (topology.gpu_count(), topology.machine_count());
    for count in [gpus, machines, topology.rack_count()] {
        digest.update(&(count as u32).to_le_bytes());
    }
    for g in 0..gpus {
        let gpu = GpuId(g as u16);
        digest.update(&topology.machine_of(gpu).0.to_le_bytes());
        digest.update(&topology.speed_permille(gpu).to_le_bytes());
    }
    for m in 0..machines {
        let rack = topology.rack_of_machine(MachineId(m as u16));
        digest.update(&rack.0.to_le_bytes());
    }
    let w = topology.weights().integer();
    for weight in [w.gpu_peer, w.gpu_machine, w.machine_rack, w.rack_root] {
        digest.update(&weight.to_le_bytes());
    }
    digest.finalize()
}

impl<O, P, const G: usize, const J: usize, const GANG: usize> Scheduler<O, P, G, J, GANG>
where
    O: JobOrder,
    P: Placer<G>,
{
    /// This scheduler's capacities, as a snapshot records them.
    pub const CAPACITIES: SnapshotCapacities = SnapshotCapacities {
        gpus: G as u32,
        jobs: J as u32,
        gang: GANG as u32,
    };

    /// Writes the whole state into `buf` as one frame (delimiter included) and returns it.
    /// Changes nothing. O(snapshot size).
    pub fn snapshot<'b>(&self, buf: &'b mut [u8]) -> Result<&'b mut [u8], SnapshotError>
    where
        O: Serialize,
        P: Serialize,
    {
        wire::encode(&self.state_ref(), buf).ok_or(SnapshotError::BufferTooSmall)
    }

    /// What [`snapshot`](Self::snapshot) writes.
    fn state_ref(&self) -> StateRef<'_, O, P, J> {
        StateRef {
            version: SNAPSHOT_VERSION,
            capacities: Self::CAPACITIES,
            topology: topology_fingerprint(&self.topology),
            order_name: self.order.name(),
            placer_name: self.placer.name(),
            order: &self.order,
            placer: &self.placer,
            config: self.config,
            table: self.table.at(self.last_now),
            rank: &self.rank,
            timers: &self.timers,
            running: &self.running,
            owner: &self.owner,
            healthy: &self.healthy,
            last_now: self.last_now,
            epoch: self.epoch,
            walking: self.walking,
            walk_next: self.walk_next,
            walk_epoch: self.walk_epoch,
            reject_due: &self.reject_due,
            placer_faults: self.placer_faults,
        }
    }

    #[cfg(not(target_os = "none"))]
    /// The scheduler a snapshot holds, on `topology` (the one it was taken on). `frame` is
    /// what [`snapshot`](Self::snapshot) wrote (the trailing delimiter may be left off); it
    /// is unstuffed in place. O(snapshot size + J·G).
    ///
    /// Hosts only: not built for bare-metal targets (`target_os = "none"`), since it builds
    /// the decoded state by value, several times the scheduler's size in stack (179 KB for
    /// the firmware scheduler on the Cortex-M4F, more than most parts have RAM). A device
    /// restores with [`restore_in_place`](Self::restore_in_place).
    pub fn restore(topology: Topology<G>, frame: &mut [u8]) -> Result<Self, SnapshotError>
    where
        O: DeserializeOwned,
        P: DeserializeOwned,
    {
        let message = Self::open(frame, &topology)?;
        let malformed = SnapshotError::Frame(FrameError::Malformed);
        let state: State<O, P, G, J> = match postcard::take_from_bytes(message) {
            Ok((state, [])) => state,
            _ => return Err(malformed),
        };
        if state.order_name.as_str() != state.order.name() {
            return Err(SnapshotError::Mismatch(HeaderField::Order));
        }
        if state.placer_name.as_str() != state.placer.name() {
            return Err(SnapshotError::Mismatch(HeaderField::Placer));
        }
        if state.owner.len() != G || state.healthy.len() != G {
            return Err(malformed);
        }
        let mut owner = [NIL; G];
        let mut healthy = [false; G];
        for (to, from) in owner.iter_mut().zip(&state.owner) {
            *to = *from;
        }
        for (to, from) in healthy.iter_mut().zip(&state.healthy) {
            *to = *from;
        }
        let gpus = topology.gpu_count().min(G);
        let mut scheduler = Self {
            healthy_count: healthy.iter().take(gpus).filter(|&&h| h).count(),
            busy_count: owner.iter().filter(|&&o| o != NIL).count(),
            pinned_count: 0,
            quantum_end: None,
            topology,
            order: state.order,
            placer: state.placer,
            config: state.config,
            table: state.table,
            rank: state.rank,
            timers: state.timers,
            running: state.running,
            owner,
            healthy,
            last_now: state.last_now,
            epoch: state.epoch,
            walking: state.walking,
            walk_next: state.walk_next,
            walk_epoch: state.walk_epoch,
            reject_due: state.reject_due,
            placer_faults: state.placer_faults,
            settled_budget: None,
        };
        scheduler.uncredit_runs()?;
        (scheduler.pinned_count, scheduler.quantum_end) = scheduler.derive_pins();
        scheduler
            .check_invariants()
            .map_err(SnapshotError::Inconsistent)?;
        Ok(scheduler)
    }

    #[cfg(not(target_os = "none"))]
    /// Replaces this scheduler by the one `frame` holds (see [`restore`](Self::restore)), on
    /// the same topology. On an error nothing changes. Hosts only, like
    /// [`restore`](Self::restore).
    pub fn restore_into(&mut self, frame: &mut [u8]) -> Result<(), SnapshotError>
    where
        O: DeserializeOwned,
        P: DeserializeOwned,
    {
        *self = Self::restore(self.topology.clone(), frame)?;
        Ok(())
    }

    /// Unstuffs `frame` in place and checks its CRC, the wire and snapshot versions, and the
    /// capacities and topology it was taken with; returns the message. Changes nothing.
    fn open<'f>(frame: &'f mut [u8], topology: &Topology<G>) -> Result<&'f [u8], SnapshotError> {
        let () = Self::CAPACITIES_FIT;
        // Without the trailing delimiter, if it is there.
        let len = frame.len() - usize::from(frame.last() == Some(&0));
        let body = frame.get_mut(..len).unwrap_or_default();
        let message = wire::unframe(body).map_err(SnapshotError::Frame)?;
        let malformed = SnapshotError::Frame(FrameError::Malformed);
        let found = *message.first().ok_or(malformed)?;
        if found != SNAPSHOT_VERSION {
            return Err(SnapshotError::Version { found });
        }
        // The identity first, so a snapshot for other capacities is named as such (its
        // columns would not even decode into this scheduler's).
        let (identity, _) =
            postcard::take_from_bytes::<Identity>(message).map_err(|_| malformed)?;
        Self::check_identity(&identity, topology)?;
        Ok(message)
    }

    /// A snapshot's capacities and topology against this scheduler's.
    fn check_identity(identity: &Identity, topology: &Topology<G>) -> Result<(), SnapshotError> {
        if identity.capacities != Self::CAPACITIES {
            return Err(SnapshotError::Capacities {
                found: identity.capacities,
                expected: Self::CAPACITIES,
            });
        }
        let expected = topology_fingerprint(topology);
        if identity.topology != expected {
            return Err(SnapshotError::Topology {
                found: identity.topology,
                expected,
            });
        }
        Ok(())
    }
}

impl<O, P, const G: usize, const J: usize, const GANG: usize> Scheduler<O, P, G, J, GANG>
where
    O: JobOrder + DeserializeOwned,
    P: Placer<G> + DeserializeOwned,
{
    /// Replaces this scheduler by the one `frame` holds, on the same topology, without
    /// building the restored scheduler on the stack: the frame is decoded into `scratch` (a
    /// second scheduler of this type, whatever it holds; a `static` on a device), column by
    /// column, checked there, and only then exchanged with `self`. Its stack is a few KB,
    /// not several times the scheduler's size (measured on the Cortex-M4F:
    /// `restore_stack_bytes` in `scripts/firmware-check.sh`). The restore of firmware: the
    /// by-value forms exist on hosts only.
    ///
    /// Every refusal leaves `self` exactly as it was: the frame, the versions, capacities,
    /// cluster and the order's and placer's names are checked before anything is written,
    /// and a snapshot whose content does not decode or breaks an invariant
    /// ([`check_invariants`](Self::check_invariants)) is found in `scratch`. On success
    /// `scratch` holds `self`'s previous state (an undo); on a refusal it is left empty (no
    /// jobs, every GPU of `self`'s topology healthy and free, time 0). The memory price of a
    /// restore that changes nothing unless it succeeds is that second scheduler.
    /// O(snapshot size + J·G).
    pub fn restore_in_place(
        &mut self,
        frame: &mut [u8],
        scratch: &mut Self,
    ) -> Result<(), SnapshotError> {
        let message = Self::open(frame, &self.topology)?;
        let malformed = SnapshotError::Frame(FrameError::Malformed);
        let mut de = Reader::from_bytes(message);
        let names = Self::read_names(&mut de).map_err(|_| malformed)?;
        if names.0.as_str() != self.order.name() {
            return Err(SnapshotError::Mismatch(HeaderField::Order));
        }
        if names.1.as_str() != self.placer.name() {
            return Err(SnapshotError::Mismatch(HeaderField::Placer));
        }
        // From here on only `scratch` is written.
        scratch.topology.clone_from(&self.topology);
        let checked = match scratch.decode_state(&mut de) {
            Ok(()) if de.finalize().is_ok_and(|rest| rest.is_empty()) => {
                scratch.check_restored(names)
            }
            _ => Err(malformed),
        };
        match checked {
            Ok(()) => {
                core::mem::swap(self, scratch);
                Ok(())
            }
            Err(e) => {
                scratch.reset_state();
                Err(e)
            }
        }
    }

    /// Reads the identity (checked already by [`open`](Self::open)) and the order's and
    /// placer's names: the head of the message, before any state.
    fn read_names(de: &mut Reader<'_>) -> postcard::Result<(Name, Name)> {
        Identity::deserialize(&mut *de)?;
        let order_name = Name::deserialize(&mut *de)?;
        let placer_name = Name::deserialize(&mut *de)?;
        Ok((order_name, placer_name))
    }

    /// Overwrites every field but the topology from `de`, which is past the names.
    fn decode_state(&mut self, de: &mut Reader<'_>) -> postcard::Result<()> {
        read(&mut self.order, de)?;
        read(&mut self.placer, de)?;
        read(&mut self.config, de)?;
        self.table.decode_in_place(de)?;
        self.rank.decode_in_place(de)?;
        self.timers.decode_in_place(de)?;
        self.running.decode_in_place(de)?;
        serde::de::DeserializeSeed::deserialize(IntoColumn(&mut self.owner[..]), &mut *de)?;
        serde::de::DeserializeSeed::deserialize(IntoColumn(&mut self.healthy[..]), &mut *de)?;
        read(&mut self.last_now, de)?;
        read(&mut self.epoch, de)?;
        read(&mut self.walking, de)?;
        read(&mut self.walk_next, de)?;
        read(&mut self.walk_epoch, de)?;
        self.reject_due.decode_in_place(de)?;
        read(&mut self.placer_faults, de)
    }

    /// The names against the decoded order and placer, the counters, the invariants.
    fn check_restored(&mut self, (order, placer): (Name, Name)) -> Result<(), SnapshotError> {
        if order.as_str() != self.order.name() {
            return Err(SnapshotError::Mismatch(HeaderField::Order));
        }
        if placer.as_str() != self.placer.name() {
            return Err(SnapshotError::Mismatch(HeaderField::Placer));
        }
        self.uncredit_runs()?;
        self.settled_budget = None;
        let gpus = self.topology.gpu_count().min(G);
        self.healthy_count = self.healthy.iter().take(gpus).filter(|&&h| h).count();
        self.busy_count = self.owner.iter().filter(|&&o| o != NIL).count();
        (self.pinned_count, self.quantum_end) = self.derive_pins();
        self.check_invariants().map_err(SnapshotError::Inconsistent)
    }

    /// A snapshot holds each running job's executed time up to the time it was taken
    /// ([`JobTable::at`]); the job record keeps its ended runs' only.
    fn uncredit_runs(&mut self) -> Result<(), SnapshotError> {
        self.table
            .uncredit(self.last_now)
            .map_err(|id| SnapshotError::Inconsistent(InvariantViolation::RunOutsideTheClock(id)))
    }

    /// Empties the scheduler in place: no jobs, every GPU of the topology healthy and free,
    /// time 0 (the order and placer as decoded so far).
    fn reset_state(&mut self) {
        self.table.reset();
        self.rank.reset();
        self.timers.reset();
        self.running.clear();
        self.reject_due.clear();
        let gpus = self.topology.gpu_count().min(G);
        for (g, (owner, healthy)) in self.owner.iter_mut().zip(&mut self.healthy).enumerate() {
            *owner = NIL;
            *healthy = g < gpus;
        }
        self.healthy_count = gpus;
        self.busy_count = 0;
        self.pinned_count = 0;
        self.quantum_end = None;
        self.last_now = TimeMs(0);
        self.epoch = self.order.epoch();
        self.walking = false;
        self.walk_next = NIL;
        self.placer_faults = 0;
    }
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
