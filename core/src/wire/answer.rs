//! The device side of the protocol: one inbound event answered by a scheduler. Apart from the
//! frame format (`wire`) because it needs the scheduler, which itself stores snapshots in
//! wire frames: the format sits below the scheduler, this answer above it.

use super::OutboundRef;
use crate::event::{Decision, Event};
use crate::order::JobOrder;
use crate::placement::Placer;
use crate::scheduler::Scheduler;
use crate::time::TimeMs;

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
