//! The event API's vocabulary: what happens to the cluster ([`Event`]) and what the core
//! decides in answer ([`Decision`]). Both serialize with serde + postcard, so firmware can
//! send them over a wire and the host can record and replay them byte for byte.

use crate::ids::{GpuId, JobId};
use crate::job::JobSpec;
use crate::placement::GpuSet;
use serde::{Deserialize, Serialize};

/// Something that happened, passed to [`Scheduler::handle`](crate::Scheduler::handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event {
    /// A new job arrives.
    Submit(JobSpec),
    /// A running job completed its work.
    Finish(JobId),
    /// The user withdrew a job (queued or running).
    Cancel(JobId),
    /// A GPU failed; a job running on it is preempted and requeued.
    GpuDown(GpuId),
    /// A failed GPU is usable again.
    GpuUp(GpuId),
    /// Time passed; lets time-driven orders (queue demotion, urgency) act.
    Tick,
}

/// Why a running job was preempted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PreemptReason {
    /// A job of higher priority needs its GPUs.
    Priority,
    /// One of its GPUs failed.
    GpuFailed(GpuId),
}

/// Why a job was refused after it had been accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RejectReason {
    /// The job can no longer meet its deadline, and the order drops such jobs.
    DeadlineUnreachable,
}

/// What the core decided. `GANG` is the largest gang a decision can carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Decision<const GANG: usize> {
    /// Start (or restart) `job` on exactly these GPUs, in pick order.
    Start {
        /// The job.
        job: JobId,
        /// Its GPUs.
        gpus: GpuSet<GANG>,
    },
    /// Stop `job` and release its GPUs; it stays queued with its attained service.
    Preempt {
        /// The job.
        job: JobId,
        /// Why.
        reason: PreemptReason,
    },
    /// Drop `job`; the core forgets it.
    Reject {
        /// The job.
        job: JobId,
        /// Why.
        reason: RejectReason,
    },
}

impl<const GANG: usize> Decision<GANG> {
    /// The job the decision is about.
    pub fn job(&self) -> JobId {
        match self {
            Decision::Start { job, .. }
            | Decision::Preempt { job, .. }
            | Decision::Reject { job, .. } => *job,
        }
    }
}
