//! Conversions between the C structs and the core's types, both ways, total: a C value
//! outside its constants is `None` (the caller returns `GANTRY_STATUS_BAD_ARGUMENT`).

use super::*;

impl From<&JobSpec> for GantryJobSpec {
    fn from(s: &JobSpec) -> Self {
        Self {
            id: s.id.0,
            gpus: s.gpus,
            has_deadline: s.deadline.is_some(),
            deadline_ms: s.deadline.map_or(0, |t| t.0),
            has_declared_length: s.declared_length.is_some(),
            declared_length_ms: s.declared_length.map_or(0, |d| d.0),
            gradient_mb: s.comm.gradient_mb,
            preemption: match s.preemption {
                PreemptionClass::Checkpointing => GANTRY_PREEMPTION_CHECKPOINTING,
                PreemptionClass::Never => GANTRY_PREEMPTION_NEVER,
            },
        }
    }
}

/// The job a C spec describes; `None` for a `preemption` outside `GANTRY_PREEMPTION_*`.
pub(crate) fn spec_from_c(s: &GantryJobSpec) -> Option<JobSpec> {
    let mut spec = JobSpec::new(JobId(s.id), s.gpus);
    spec.deadline = s.has_deadline.then_some(TimeMs(s.deadline_ms));
    spec.declared_length = s
        .has_declared_length
        .then_some(DurationMs(s.declared_length_ms));
    spec.comm.gradient_mb = s.gradient_mb;
    spec.preemption = match s.preemption {
        GANTRY_PREEMPTION_CHECKPOINTING => PreemptionClass::Checkpointing,
        GANTRY_PREEMPTION_NEVER => PreemptionClass::Never,
        _ => return None,
    };
    Some(spec)
}

pub(crate) fn event_from_c(e: &GantryEvent) -> Option<Event> {
    Some(match e.kind {
        GANTRY_EVENT_SUBMIT => Event::Submit(spec_from_c(&e.spec)?),
        GANTRY_EVENT_FINISH => Event::Finish(JobId(e.job)),
        GANTRY_EVENT_CANCEL => Event::Cancel(JobId(e.job)),
        GANTRY_EVENT_GPU_DOWN => Event::GpuDown(GpuId(e.gpu)),
        GANTRY_EVENT_GPU_UP => Event::GpuUp(GpuId(e.gpu)),
        GANTRY_EVENT_TICK => Event::Tick,
        _ => return None,
    })
}

pub(crate) fn event_to_c(e: &Event) -> GantryEvent {
    let mut c = GantryEvent::default();
    match e {
        Event::Submit(spec) => {
            c.kind = GANTRY_EVENT_SUBMIT;
            c.spec = GantryJobSpec::from(spec);
        }
        Event::Finish(j) => (c.kind, c.job) = (GANTRY_EVENT_FINISH, j.0),
        Event::Cancel(j) => (c.kind, c.job) = (GANTRY_EVENT_CANCEL, j.0),
        Event::GpuDown(g) => (c.kind, c.gpu) = (GANTRY_EVENT_GPU_DOWN, g.0),
        Event::GpuUp(g) => (c.kind, c.gpu) = (GANTRY_EVENT_GPU_UP, g.0),
        Event::Tick => c.kind = GANTRY_EVENT_TICK,
    }
    c
}

pub(crate) fn decision_to_c(d: &Decision<FIRMWARE_GANG>) -> GantryDecision {
    let mut c = GantryDecision {
        job: d.job().0,
        ..GantryDecision::default()
    };
    match d {
        Decision::Start { gpus, .. } => {
            c.kind = GANTRY_DECISION_START;
            for (slot, g) in c.gpus.iter_mut().zip(gpus.as_slice()) {
                *slot = g.0;
            }
            c.gpu_count = gpus.len() as u8;
        }
        Decision::Preempt { reason, .. } => {
            c.kind = GANTRY_DECISION_PREEMPT;
            match reason {
                PreemptReason::Priority => c.reason = GANTRY_REASON_PRIORITY,
                PreemptReason::GpuFailed(g) => {
                    (c.reason, c.failed_gpu) = (GANTRY_REASON_GPU_FAILED, g.0);
                }
            }
        }
        Decision::Reject { reason, .. } => {
            c.kind = GANTRY_DECISION_REJECT;
            match reason {
                RejectReason::DeadlineUnreachable => {
                    c.reason = GANTRY_REASON_DEADLINE_UNREACHABLE;
                }
            }
        }
    }
    c
}

pub(crate) fn decision_from_c(c: &GantryDecision) -> Option<Decision<FIRMWARE_GANG>> {
    let job = JobId(c.job);
    Some(match (c.kind, c.reason) {
        (GANTRY_DECISION_START, _) => {
            let mut gpus = GpuSet::new();
            for &g in c.gpus.get(..usize::from(c.gpu_count))? {
                gpus.insert(GpuId(g)).ok()?;
            }
            Decision::Start { job, gpus }
        }
        (GANTRY_DECISION_PREEMPT, GANTRY_REASON_PRIORITY) => Decision::Preempt {
            job,
            reason: PreemptReason::Priority,
        },
        (GANTRY_DECISION_PREEMPT, GANTRY_REASON_GPU_FAILED) => Decision::Preempt {
            job,
            reason: PreemptReason::GpuFailed(GpuId(c.failed_gpu)),
        },
        (GANTRY_DECISION_REJECT, GANTRY_REASON_DEADLINE_UNREACHABLE) => Decision::Reject {
            job,
            reason: RejectReason::DeadlineUnreachable,
        },
        _ => return None,
    })
}

/// The status and the C form of a core refusal.
pub(crate) fn error_to_c(e: &SchedError) -> GantryError {
    let mut c = GantryError::default();
    let status = match *e {
        SchedError::TimeWentBackwards { now, last } => {
            (c.time_ms, c.other_time_ms) = (now.0, last.0);
            GantryStatus::TimeWentBackwards
        }
        SchedError::UnknownJob(j) => {
            c.job = j.0;
            GantryStatus::UnknownJob
        }
        SchedError::DuplicateJob(j) => {
            c.job = j.0;
            GantryStatus::DuplicateJob
        }
        SchedError::ZeroGpuRequest(j) => {
            c.job = j.0;
            GantryStatus::ZeroGpuRequest
        }
        SchedError::RequestExceedsCluster {
            job,
            requested,
            healthy,
        } => {
            (c.job, c.requested, c.limit) = (job.0, requested, u32::from(healthy));
            GantryStatus::RequestExceedsCluster
        }
        SchedError::GangTooLarge {
            job,
            requested,
            capacity,
        } => {
            (c.job, c.requested) = (job.0, requested);
            c.limit = u32::try_from(capacity).unwrap_or(u32::MAX);
            GantryStatus::GangTooLarge
        }
        SchedError::DeadlineAlreadyPassed { job, deadline, now } => {
            (c.job, c.time_ms, c.other_time_ms) = (job.0, deadline.0, now.0);
            GantryStatus::DeadlineAlreadyPassed
        }
        SchedError::DeadlineUnreachable {
            job,
            deadline,
            earliest_finish,
        } => {
            (c.job, c.time_ms, c.other_time_ms) = (job.0, deadline.0, earliest_finish.0);
            GantryStatus::DeadlineUnreachable
        }
        SchedError::JobTableFull(spec) => {
            c.spec = GantryJobSpec::from(&spec);
            GantryStatus::JobTableFull
        }
        SchedError::JobNotRunning(j) => {
            c.job = j.0;
            GantryStatus::JobNotRunning
        }
        SchedError::UnknownGpu(g) => {
            c.gpu = g.0;
            GantryStatus::UnknownGpu
        }
        SchedError::DecisionBufferFull => GantryStatus::DecisionBufferFull,
        _ => GantryStatus::OtherSchedError,
    };
    c.status = status as u32;
    c
}

/// The core refusal a C error describes (`None`: not a refusal this API names).
pub(crate) fn error_from_c(c: &GantryError) -> Option<SchedError> {
    let job = JobId(c.job);
    let (time, other) = (TimeMs(c.time_ms), TimeMs(c.other_time_ms));
    const fn code(s: GantryStatus) -> u32 {
        s as u32
    }
    Some(match c.status {
        x if x == code(GantryStatus::TimeWentBackwards) => SchedError::TimeWentBackwards {
            now: time,
            last: other,
        },
        x if x == code(GantryStatus::UnknownJob) => SchedError::UnknownJob(job),
        x if x == code(GantryStatus::DuplicateJob) => SchedError::DuplicateJob(job),
        x if x == code(GantryStatus::ZeroGpuRequest) => SchedError::ZeroGpuRequest(job),
        x if x == code(GantryStatus::RequestExceedsCluster) => SchedError::RequestExceedsCluster {
            job,
            requested: c.requested,
            healthy: u16::try_from(c.limit).ok()?,
        },
        x if x == code(GantryStatus::GangTooLarge) => SchedError::GangTooLarge {
            job,
            requested: c.requested,
            capacity: usize::try_from(c.limit).ok()?,
        },
        x if x == code(GantryStatus::DeadlineAlreadyPassed) => SchedError::DeadlineAlreadyPassed {
            job,
            deadline: time,
            now: other,
        },
        x if x == code(GantryStatus::DeadlineUnreachable) => SchedError::DeadlineUnreachable {
            job,
            deadline: time,
            earliest_finish: other,
        },
        x if x == code(GantryStatus::JobTableFull) => {
            SchedError::JobTableFull(spec_from_c(&c.spec)?)
        }
        x if x == code(GantryStatus::JobNotRunning) => SchedError::JobNotRunning(job),
        x if x == code(GantryStatus::UnknownGpu) => SchedError::UnknownGpu(GpuId(c.gpu)),
        x if x == code(GantryStatus::DecisionBufferFull) => SchedError::DecisionBufferFull,
        _ => return None,
    })
}

pub(crate) fn fault_to_c(fault: &Fault) -> GantryFault {
    let mut c = GantryFault::default();
    if let Ok(used) = postcard::to_slice(fault, &mut c.bytes) {
        c.len = used.len() as u8;
    }
    c
}

pub(crate) fn fault_from_c(c: &GantryFault) -> Option<Fault> {
    let bytes = c.bytes.get(..usize::from(c.len))?;
    postcard::from_bytes(bytes).ok()
}

/// The header's refusal, or the config it asks for.
pub(crate) fn config_from_header(h: &wire::StreamHeader) -> Result<GantryConfig, Fault> {
    let weights = LinkWeights::PROXIMITY_DRL;
    let field = h.mismatch(
        &Capacities::FIRMWARE,
        weights.integer(),
        order::NAME,
        placer::NAME,
    );
    if let Some(field) = field {
        return Err(Fault::Mismatch(field));
    }
    Ok(GantryConfig {
        racks: h.cluster.racks,
        machines_per_rack: h.cluster.machines_per_rack,
        gpus_per_machine: h.cluster.gpus_per_machine,
        seed: h.seed,
        min_run_ms: h.min_run.0,
    })
}

pub(crate) fn topology(c: &GantryConfig) -> Result<Topology<FIRMWARE_GPUS>, Fault> {
    Topology::uniform(
        c.racks,
        c.machines_per_rack,
        c.gpus_per_machine,
        LinkWeights::PROXIMITY_DRL,
    )
    .map_err(Fault::Topology)
}
