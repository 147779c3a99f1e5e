//! The device side of the protocol: one inbound event answered by a scheduler. Apart from the
//! frame format (`wire`) because it needs the scheduler, which itself stores snapshots in
//! wire frames: the format sits below the scheduler, this answer above it. The reference
//! firmware's scheduler and decision buffer types live here for the same reason.

#[cfg(feature = "wire")]
use super::OutboundRef;
use super::{FIRMWARE_DECISIONS, FIRMWARE_GANG, FIRMWARE_GPUS, FIRMWARE_JOBS};
use crate::event::Decision;
#[cfg(feature = "wire")]
use crate::event::Event;
#[cfg(feature = "wire")]
use crate::order::JobOrder;
#[cfg(feature = "wire")]
use crate::placement::Placer;
use crate::scheduler::Scheduler;
#[cfg(feature = "wire")]
use crate::time::TimeMs;

/// The scheduler at the reference firmware's capacities (64 GPUs, 256 live jobs, gangs of
/// 8): what `tests/firmware` and the C library run, and what the figures in the README's
/// Cortex-M4F table measure. About 32 KB; see [`MAX_SNAPSHOT_BYTES`](crate::snapshot::MAX_SNAPSHOT_BYTES)
/// for its checkpoint buffer.
pub type FirmwareScheduler<O, P> = Scheduler<O, P, FIRMWARE_GPUS, FIRMWARE_JOBS, FIRMWARE_GANG>;

/// The decision buffer of one [`FirmwareScheduler::handle`](crate::Scheduler::handle) call
/// that never cuts a pass short for want of room (a `Tick` may decide for many jobs).
pub type FirmwareDecisions = heapless::Vec<Decision<FIRMWARE_GANG>, FIRMWARE_DECISIONS>;

#[cfg(feature = "wire")]
/// Runs one event through `scheduler` and returns the [`OutboundRef::Outcome`] answering
/// the inbound frame `frame`, borrowing the decisions from `out` (cleared first). The
/// device side of the protocol, shared by the firmware and the host's reference loop.
pub fn answer_event<'o, O, P, const G: usize, const J: usize, const GANG: usize, const D: usize>(
    scheduler: &mut Scheduler<O, P, G, J, GANG>,
    frame: u32,
    now: TimeMs,
    event: Event,
    out: &'o mut heapless::Vec<Decision<GANG>, D>,
) -> OutboundRef<'o, GANG>
where
    O: JobOrder,
    P: Placer<G>,
{
    out.clear();
    let error = scheduler.handle(now, event, out).err();
    OutboundRef::Outcome {
        frame,
        error,
        decisions: out,
    }
}
