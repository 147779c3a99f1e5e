//! Jobs: what the caller submits ([`JobSpec`]) and what the core tracks about each live job
//! ([`Job`]).

use crate::ids::JobId;
use crate::time::{DurationMs, TimeMs};
use serde::{Deserialize, Serialize};

/// How a job communicates, for placement-aware speed models (Proximity-DRL: all-reduce time
/// grows with the gradient size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CommProfile {
    /// Size of one gradient exchange, in megabytes (0 = unknown).
    pub gradient_mb: u32,
}

/// A job as the caller submits it. The request is a gang: all `gpus` GPUs or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JobSpec {
    /// The caller's id; unique among live jobs.
    pub id: JobId,
    /// Number of GPUs, all at once (gang scheduling).
    pub gpus: u16,
    /// Absolute deadline, if the job has one.
    pub deadline: Option<TimeMs>,
    /// The job's run time on an ideal placement, if known. Only *oracle* orders (SJF, SRTF)
    /// read it; information-agnostic orders (LAS, TIAS) never do.
    pub declared_length: Option<DurationMs>,
    /// Communication profile, for placement-aware speed models.
    pub comm: CommProfile,
}

impl JobSpec {
    /// A job of `gpus` GPUs with no deadline, no declared length and no comm profile.
    pub const fn new(id: JobId, gpus: u16) -> Self {
        Self {
            id,
            gpus,
            deadline: None,
            declared_length: None,
            comm: CommProfile { gradient_mb: 0 },
        }
    }
}

/// Where a job is in its life. A live job in the core is `Waiting`, `Running` or
/// `Preempted`; `Finished` and `Rejected` are final and name jobs the core has let go of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum JobState {
    /// Submitted, never started.
    Waiting,
    /// Holding its gang of GPUs.
    Running,
    /// Started before, now back in the queue (by priority or a GPU failure).
    Preempted,
    /// Done (final).
    Finished,
    /// Refused by the scheduler (final).
    Rejected,
}

impl JobState {
    /// Waiting or preempted: in the queue, holding no GPU.
    pub const fn is_queued(self) -> bool {
        matches!(self, JobState::Waiting | JobState::Preempted)
    }
}

/// A live job as the core tracks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Job {
    /// What was submitted.
    pub spec: JobSpec,
    /// Current state.
    pub state: JobState,
    /// When it was submitted.
    pub submitted_at: TimeMs,
    /// When it first started, if ever.
    pub first_started_at: Option<TimeMs>,
    /// Since when it has been queued (submit or last preemption); meaningful when queued.
    pub queued_since: TimeMs,
    /// Attained service in GPU·milliseconds: GPUs × time running (Tiresias's 2D attained
    /// service). Kept across preemptions.
    pub attained_gpu_ms: u64,
    /// Wall time spent running, summed over all runs.
    pub executed: DurationMs,
    /// How many times it was preempted (priority or GPU failure).
    pub preemptions: u32,
    /// A queue index that belongs to the job order (e.g. 2D-LAS's queue); 0 = top.
    pub order_queue: u8,
    /// A second value that belongs to the job order (e.g. when the job entered its queue).
    pub order_mark: TimeMs,
    /// A service baseline that belongs to the job order, in GPU·ms: 2D-LAS counts queue
    /// service from here, and raises it to `attained_gpu_ms` when the starvation guard sends a
    /// job back to the top queue (Tiresias resets the job's executed time there). 0 at submit.
    pub order_base_gpu_ms: u64,
}

impl Job {
    /// A freshly submitted job.
    pub const fn submitted(spec: JobSpec, now: TimeMs) -> Self {
        Self {
            spec,
            state: JobState::Waiting,
            submitted_at: now,
            first_started_at: None,
            queued_since: now,
            attained_gpu_ms: 0,
            executed: DurationMs::ZERO,
            preemptions: 0,
            order_queue: 0,
            order_mark: now,
            order_base_gpu_ms: 0,
        }
    }

    /// The job's id.
    pub const fn id(&self) -> JobId {
        self.spec.id
    }

    /// Declared length minus executed time, for oracle SRTF; `None` if no length declared.
    pub fn declared_remaining(&self) -> Option<DurationMs> {
        self.spec
            .declared_length
            .map(|len| len.saturating_sub(self.executed))
    }
}
