//! Typed errors of the event API. Every error leaves the scheduler's state exactly as it was,
//! and an error about capacity hands the refused item back.

use crate::ids::{GpuId, JobId};
use crate::job::JobSpec;
use crate::time::TimeMs;
use serde::{Deserialize, Serialize};

/// Why [`Scheduler::handle`](crate::Scheduler::handle) refused an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum SchedError {
    /// `now` is earlier than the time of the previous event.
    TimeWentBackwards {
        /// The time passed in.
        now: TimeMs,
        /// The time of the previous event.
        last: TimeMs,
    },
    /// No live job has this id.
    UnknownJob(JobId),
    /// A live job already has this id.
    DuplicateJob(JobId),
    /// A job asked for zero GPUs.
    ZeroGpuRequest(JobId),
    /// A job asked for more GPUs than are healthy right now.
    RequestExceedsCluster {
        /// The job.
        job: JobId,
        /// GPUs requested.
        requested: u16,
        /// Healthy GPUs in the cluster.
        healthy: u16,
    },
    /// A job asked for more GPUs than one decision can carry (the `GANG` capacity).
    GangTooLarge {
        /// The job.
        job: JobId,
        /// GPUs requested.
        requested: u16,
        /// The capacity.
        capacity: usize,
    },
    /// A job's deadline is not after its submission time.
    DeadlineAlreadyPassed {
        /// The job.
        job: JobId,
        /// Its deadline.
        deadline: TimeMs,
        /// The submission time.
        now: TimeMs,
    },
    /// The job's declared length cannot finish before its deadline even if it started now
    /// (only under [`DeadlineAdmission::RefuseUnreachable`](crate::scheduler::DeadlineAdmission)).
    DeadlineUnreachable {
        /// The job.
        job: JobId,
        /// Its deadline.
        deadline: TimeMs,
        /// `now + declared_length`.
        earliest_finish: TimeMs,
    },
    /// The job table is full; here is the job back, nothing was dropped.
    JobTableFull(JobSpec),
    /// `Finish` named a job that is not running.
    JobNotRunning(JobId),
    /// The GPU id is outside the topology.
    UnknownGpu(GpuId),
    /// The decision buffer had no room for even one decision; pass a buffer with space.
    DecisionBufferFull,
}

impl core::fmt::Display for SchedError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SchedError::TimeWentBackwards { now, last } => {
                write!(
                    f,
                    "time went backwards: now {} ms < previous event {} ms",
                    now.0, last.0
                )
            }
            SchedError::UnknownJob(j) => write!(f, "unknown {j}"),
            SchedError::DuplicateJob(j) => write!(f, "duplicate {j}: already live"),
            SchedError::ZeroGpuRequest(j) => write!(f, "{j} requests zero GPUs"),
            SchedError::RequestExceedsCluster {
                job,
                requested,
                healthy,
            } => write!(
                f,
                "{job} requests {requested} GPUs but only {healthy} are healthy"
            ),
            SchedError::GangTooLarge {
                job,
                requested,
                capacity,
            } => write!(
                f,
                "{job} requests {requested} GPUs, more than the gang capacity {capacity}"
            ),
            SchedError::DeadlineAlreadyPassed { job, deadline, now } => write!(
                f,
                "{job} has deadline {} ms, not after its submission at {} ms",
                deadline.0, now.0
            ),
            SchedError::DeadlineUnreachable {
                job,
                deadline,
                earliest_finish,
            } => write!(
                f,
                "{job} has deadline {} ms but cannot finish before {} ms",
                deadline.0, earliest_finish.0
            ),
            SchedError::JobTableFull(spec) => {
                write!(f, "job table full: {} handed back", spec.id)
            }
            SchedError::JobNotRunning(j) => write!(f, "{j} is not running"),
            SchedError::UnknownGpu(g) => write!(f, "{g} is not in the topology"),
            SchedError::DecisionBufferFull => write!(f, "decision buffer has no free slot"),
        }
    }
}

impl core::error::Error for SchedError {}
