//! The `extern "C"` functions. Each checks its pointers before turning them into
//! references; every `unsafe` block says why it is sound.

use super::convert::*;
use super::*;

/// Exact bytes of one scheduler on this target (at most `GANTRY_SCHEDULER_STORAGE_BYTES`).
#[unsafe(no_mangle)]
pub extern "C" fn gantry_scheduler_size() -> usize {
    core::mem::size_of::<FfiScheduler>()
}

/// Builds a scheduler for `config` in `storage` (`storage_bytes` long, aligned to
/// `GANTRY_SCHEDULER_ALIGN`) and stores its handle in `*out`. On
/// `GANTRY_STATUS_BAD_TOPOLOGY`, `*fault` (if not null) says why, for a fault frame.
///
/// # Safety
/// `storage` must be valid for writes of `storage_bytes` bytes and not used otherwise while
/// the handle lives; `config` and `out` must be valid pointers; `fault` valid or null.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_scheduler_init(
    storage: *mut u8,
    storage_bytes: usize,
    config: *const GantryConfig,
    out: *mut *mut GantryScheduler,
    fault: *mut GantryFault,
) -> GantryStatus {
    if storage.is_null() || config.is_null() || out.is_null() {
        return GantryStatus::NullPointer;
    }
    if storage_bytes < core::mem::size_of::<FfiScheduler>() {
        return GantryStatus::StorageTooSmall;
    }
    if !(storage as usize).is_multiple_of(core::mem::align_of::<FfiScheduler>()) {
        return GantryStatus::StorageMisaligned;
    }
    // SAFETY: `config` is non-null and, by the contract, points to a valid GantryConfig.
    let config = unsafe { &*config };
    let topology = match topology(config) {
        Ok(t) => t,
        Err(f) => {
            // SAFETY: `fault` is null or valid for writes, by the contract.
            let _ = unsafe { store_fault(f, fault) };
            return GantryStatus::BadTopology;
        }
    };
    let order = order::new();
    let scheduler_config =
        SchedulerConfig::for_order(&order).with_min_run(DurationMs(config.min_run_ms));
    let slot = storage.cast::<core::mem::MaybeUninit<FfiScheduler>>();
    // SAFETY: `slot` is non-null, aligned for FfiScheduler and has room for one (checked
    // above), and the caller reserves it for this handle; a `MaybeUninit` may hold any
    // bytes, and building in place drops nothing and copies no scheduler through the stack.
    unsafe {
        FfiScheduler::init_in_place(
            &mut *slot,
            topology,
            order,
            placer::new(config.seed),
            scheduler_config,
        );
        *out = slot.cast::<GantryScheduler>();
    }
    GantryStatus::Ok
}

/// Handles one event at `now_ms`: writes the decisions to `decisions` (room for
/// `capacity` ≥ `GANTRY_MAX_DECISIONS`), their number to `*count`, and whether the pass was
/// cut short (call again with a `TICK` at the same time) to `*more_pending`. A refusal
/// returns its status and fills `*error` (if not null); the state is then unchanged.
///
/// # Safety
/// `scheduler` must come from [`gantry_scheduler_init`]; `event` and `count` valid;
/// `decisions` valid for `capacity` writes; `more_pending` and `error` valid or null.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_handle(
    scheduler: *mut GantryScheduler,
    now_ms: u64,
    event: *const GantryEvent,
    decisions: *mut GantryDecision,
    capacity: usize,
    count: *mut usize,
    more_pending: *mut bool,
    error: *mut GantryError,
) -> GantryStatus {
    if count.is_null() {
        return GantryStatus::NullPointer;
    }
    // SAFETY: `count` is non-null and, by the contract, valid for writes. Written first, so
    // every return path below leaves it set (0 unless decisions were written).
    unsafe { *count = 0 };
    if scheduler.is_null() || event.is_null() || decisions.is_null() {
        return GantryStatus::NullPointer;
    }
    if capacity < GANTRY_MAX_DECISIONS {
        return GantryStatus::BufferTooSmall;
    }
    // SAFETY: non-null, and by the contract the handle points to an initialised
    // FfiScheduler that nothing else borrows during this call; `event` is valid.
    let (scheduler, event) = unsafe { (&mut *scheduler.cast::<FfiScheduler>(), &*event) };
    let Some(event) = event_from_c(event) else {
        return GantryStatus::BadArgument;
    };
    let mut out = heapless::Vec::<Decision<FIRMWARE_GANG>, FIRMWARE_DECISIONS>::new();
    let result = scheduler.handle(TimeMs(now_ms), event, &mut out);
    // SAFETY: `decisions` is valid for `capacity` ≥ GANTRY_MAX_DECISIONS ≥ out.len() writes.
    let slots = unsafe { core::slice::from_raw_parts_mut(decisions, capacity) };
    for (slot, d) in slots.iter_mut().zip(&out) {
        *slot = decision_to_c(d);
    }
    // SAFETY: `count` is valid; `more_pending` and `error` are valid or null.
    unsafe {
        *count = out.len();
        if let Some(m) = more_pending.as_mut() {
            *m = result.is_ok_and(|o| o.more_pending);
        }
        match result {
            Ok(_) => GantryStatus::Ok,
            Err(e) => {
                let c = error_to_c(&e);
                if let Some(slot) = error.as_mut() {
                    *slot = c;
                }
                status_of(&c)
            }
        }
    }
}

/// The time at which the job order expects a priority to change with no event in between
/// (a LAS threshold crossing, a TIAS deadline job turning critical): send a
/// `GANTRY_EVENT_TICK` at that time, or nothing is decided until the next event. Writes it
/// to `*at_ms`, or `GANTRY_NO_REVIEW` when none is due. Call it after every
/// [`gantry_handle`] (a timer interrupt). O(1) for TIAS and LAS.
///
/// # Safety
/// `scheduler` must come from [`gantry_scheduler_init`]; `at_ms` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_next_review(
    scheduler: *const GantryScheduler,
    at_ms: *mut u64,
) -> GantryStatus {
    if scheduler.is_null() || at_ms.is_null() {
        return GantryStatus::NullPointer;
    }
    // SAFETY: non-null; by the contract the handle points to an initialised FfiScheduler
    // that nothing mutates during this call, and `at_ms` is valid for writes.
    unsafe {
        let scheduler = &*scheduler.cast::<FfiScheduler>();
        *at_ms = scheduler.next_review().map_or(GANTRY_NO_REVIEW, |t| t.0);
    }
    GantryStatus::Ok
}

/// The scheduler's time: that of the last accepted event (0 when new; a restored
/// scheduler's is the snapshot's). Events earlier than it are refused with
/// `GANTRY_STATUS_TIME_WENT_BACKWARDS`, so after a power cycle the device's clock must
/// resume from at least this value (keep the milliseconds monotonic across reboots).
///
/// # Safety
/// `scheduler` must come from [`gantry_scheduler_init`]; `now_ms` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_now(
    scheduler: *const GantryScheduler,
    now_ms: *mut u64,
) -> GantryStatus {
    if scheduler.is_null() || now_ms.is_null() {
        return GantryStatus::NullPointer;
    }
    // SAFETY: as in `gantry_next_review`.
    unsafe {
        let scheduler = &*scheduler.cast::<FfiScheduler>();
        *now_ms = scheduler.now().0;
    }
    GantryStatus::Ok
}

/// Which job order and placer this library was built with, its capacities and format
/// versions, into `*info`.
///
/// # Safety
/// `info` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_build_info(info: *mut GantryBuildInfo) -> GantryStatus {
    if info.is_null() {
        return GantryStatus::NullPointer;
    }
    let built = GantryBuildInfo {
        order: order::C_NAME.as_ptr(),
        placer: placer::C_NAME.as_ptr(),
        version: VERSION.as_ptr(),
        max_gpus: GANTRY_MAX_GPUS as u32,
        max_jobs: GANTRY_MAX_JOBS as u32,
        max_gang: GANTRY_MAX_GANG as u32,
        max_decisions: GANTRY_MAX_DECISIONS as u32,
        scheduler_bytes: core::mem::size_of::<FfiScheduler>(),
        snapshot_bytes: GANTRY_SNAPSHOT_BYTES,
        snapshot_version: gantry_core::SNAPSHOT_VERSION,
        wire_version: wire::WIRE_VERSION,
    };
    // SAFETY: `info` is non-null and, by the contract, valid for writes.
    unsafe { info.write(built) };
    GantryStatus::Ok
}

/// The crate's version, NUL-terminated, for [`gantry_build_info`].
const VERSION: &core::ffi::CStr =
    match core::ffi::CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes())
    {
        Ok(c) => c,
        Err(_) => panic!("a version has no NUL"),
    };

/// Writes the scheduler's whole state (jobs, indexes, timers, GPUs, clock, the order's and
/// the placer's own state) into `buf` as one snapshot frame (`capacity` bytes of room;
/// `GANTRY_SNAPSHOT_BYTES`, 1.8 × the widest state a test builds) and its length, delimiter
/// included, to `*len`.
/// Changes nothing. `GANTRY_STATUS_BUFFER_TOO_SMALL` when it does not fit.
///
/// # Safety
/// `scheduler` must come from [`gantry_scheduler_init`]; `buf` valid for `capacity` writes;
/// `len` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_snapshot(
    scheduler: *const GantryScheduler,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> GantryStatus {
    if scheduler.is_null() || buf.is_null() || len.is_null() {
        return GantryStatus::NullPointer;
    }
    // SAFETY: non-null; by the contract the handle points to an initialised FfiScheduler
    // that nothing mutates during this call, `buf` is valid for `capacity` writes and does
    // not overlap it, and `len` is valid.
    unsafe {
        let scheduler = &*scheduler.cast::<FfiScheduler>();
        let buf = core::slice::from_raw_parts_mut(buf, capacity);
        match scheduler.snapshot(buf) {
            Ok(frame) => {
                *len = frame.len();
                GantryStatus::Ok
            }
            Err(_) => GantryStatus::BufferTooSmall,
        }
    }
}

/// Restores the state of a snapshot frame (`len` bytes, as [`gantry_snapshot`] wrote them;
/// the trailing delimiter may be left off) into `scheduler`, which must have been
/// initialised with the configuration the snapshot was taken under. The frame is decoded in
/// place (its bytes are overwritten) into `scratch`, a second handle from
/// [`gantry_scheduler_init`] (any configuration; its content is discarded), checked there,
/// and only then exchanged with `scheduler`, with a few KB of stack. Any refusal (a frame
/// that is corrupt, of another version, build or cluster, or whose content breaks an
/// invariant) returns its `GANTRY_STATUS_SNAPSHOT_*` status and leaves `scheduler`
/// unchanged. On success `scratch` holds the previous state; after a refusal it is empty.
/// `GANTRY_STATUS_BAD_ARGUMENT` when both handles are the same.
///
/// # Safety
/// `scheduler` and `scratch` must come from [`gantry_scheduler_init`] and not be in use
/// elsewhere during the call; `frame` valid for reads and writes of `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_restore(
    scheduler: *mut GantryScheduler,
    scratch: *mut GantryScheduler,
    frame: *mut u8,
    len: usize,
) -> GantryStatus {
    if scheduler.is_null() || scratch.is_null() || frame.is_null() {
        return GantryStatus::NullPointer;
    }
    if core::ptr::eq(scheduler, scratch) {
        return GantryStatus::BadArgument;
    }
    // SAFETY: non-null and distinct; by the contract each handle points to an initialised
    // FfiScheduler that nothing else borrows during this call, and `frame` is valid for
    // `len` reads and writes and overlaps neither.
    let (scheduler, scratch, frame) = unsafe {
        (
            &mut *scheduler.cast::<FfiScheduler>(),
            &mut *scratch.cast::<FfiScheduler>(),
            core::slice::from_raw_parts_mut(frame, len),
        )
    };
    match scheduler.restore_in_place(frame, scratch) {
        Ok(()) => GantryStatus::Ok,
        Err(e) => snapshot_status(&e),
    }
}

/// The C status of a refused snapshot.
pub(crate) fn snapshot_status(e: &SnapshotError) -> GantryStatus {
    match e {
        SnapshotError::BufferTooSmall => GantryStatus::BufferTooSmall,
        SnapshotError::Frame(_) => GantryStatus::SnapshotCorrupt,
        SnapshotError::Version { .. } => GantryStatus::SnapshotVersion,
        SnapshotError::Capacities { .. } | SnapshotError::Mismatch(_) => {
            GantryStatus::SnapshotOtherBuild
        }
        SnapshotError::Topology { .. } => GantryStatus::SnapshotOtherCluster,
        SnapshotError::Inconsistent(_) => GantryStatus::SnapshotInconsistent,
    }
}

fn status_of(e: &GantryError) -> GantryStatus {
    const ALL: [GantryStatus; 13] = [
        GantryStatus::TimeWentBackwards,
        GantryStatus::UnknownJob,
        GantryStatus::DuplicateJob,
        GantryStatus::ZeroGpuRequest,
        GantryStatus::RequestExceedsCluster,
        GantryStatus::GangTooLarge,
        GantryStatus::DeadlineAlreadyPassed,
        GantryStatus::DeadlineUnreachable,
        GantryStatus::JobTableFull,
        GantryStatus::JobNotRunning,
        GantryStatus::UnknownGpu,
        GantryStatus::DecisionBufferFull,
        GantryStatus::OtherSchedError,
    ];
    ALL.into_iter()
        .find(|&s| s as u32 == e.status)
        .unwrap_or(GantryStatus::OtherSchedError)
}

/// Decodes one inbound frame (`len` bytes between two `0x00` delimiters, delimiter
/// excluded; unstuffed in place) into `*out`. A frame that cannot be used returns
/// `GANTRY_STATUS_FRAME_FAULT` with `out->fault` set: a bad frame, or a header for another
/// build (capacities, link weights, order, placer).
///
/// # Safety
/// `frame` must be valid for reads and writes of `len` bytes; `out` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_frame_decode(
    frame: *mut u8,
    len: usize,
    out: *mut GantryInbound,
) -> GantryStatus {
    if frame.is_null() || out.is_null() {
        return GantryStatus::NullPointer;
    }
    // SAFETY: valid for `len` reads and writes and for one GantryInbound, by the contract.
    let (bytes, out) = unsafe { (core::slice::from_raw_parts_mut(frame, len), &mut *out) };
    *out = GantryInbound::default();
    let fault = match wire::decode::<Inbound>(bytes) {
        Err(e) => Fault::Frame(e),
        Ok(Inbound::Event { now, event }) => {
            out.kind = GANTRY_INBOUND_EVENT;
            out.now_ms = now.0;
            out.event = event_to_c(&event);
            return GantryStatus::Ok;
        }
        Ok(Inbound::Hello(header)) => {
            out.kind = GANTRY_INBOUND_HELLO;
            match config_from_header(&header) {
                Ok(config) => {
                    out.config = config;
                    return GantryStatus::Ok;
                }
                Err(fault) => fault,
            }
        }
    };
    out.fault = fault_to_c(&fault);
    GantryStatus::FrameFault
}

/// Writes `message` as a frame into `buf` (`capacity` bytes) and its length to `*len`.
///
/// # Safety
/// `buf` valid for `capacity` writes; `len` valid.
unsafe fn encode_into(
    message: &OutboundRef<'_, FIRMWARE_GANG>,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> GantryStatus {
    if buf.is_null() || len.is_null() {
        return GantryStatus::NullPointer;
    }
    // SAFETY: valid for `capacity` writes and `len` valid, by the contract.
    let (buf, len) = unsafe { (core::slice::from_raw_parts_mut(buf, capacity), &mut *len) };
    match wire::encode(message, buf) {
        Some(frame) => {
            *len = frame.len();
            GantryStatus::Ok
        }
        None => GantryStatus::BufferTooSmall,
    }
}

/// Encodes the answer to an accepted header at inbound frame `frame`.
///
/// # Safety
/// `buf` valid for `capacity` writes; `len` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_frame_encode_ready(
    frame: u32,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> GantryStatus {
    // SAFETY: the same contract, passed on.
    unsafe { encode_into(&OutboundRef::Ready { frame }, buf, capacity, len) }
}

/// Encodes the answer to the event at inbound frame `frame`: `error` (null when the event
/// was accepted) or the `count` decisions [`gantry_handle`] produced.
///
/// # Safety
/// `decisions` valid for `count` reads (or null with `count` 0); `error` valid or null;
/// `buf` valid for `capacity` writes; `len` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_frame_encode_outcome(
    frame: u32,
    error: *const GantryError,
    decisions: *const GantryDecision,
    count: usize,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> GantryStatus {
    if count > GANTRY_MAX_DECISIONS || (decisions.is_null() && count > 0) {
        return GantryStatus::BadArgument;
    }
    let mut out = heapless::Vec::<Decision<FIRMWARE_GANG>, FIRMWARE_DECISIONS>::new();
    if count > 0 {
        // SAFETY: non-null and valid for `count` reads, by the contract.
        let slice = unsafe { core::slice::from_raw_parts(decisions, count) };
        for c in slice {
            let Some(d) = decision_from_c(c) else {
                return GantryStatus::BadArgument;
            };
            if out.push(d).is_err() {
                return GantryStatus::BadArgument;
            }
        }
    }
    // SAFETY: `error` is valid or null.
    let error = match unsafe { error.as_ref() } {
        None => None,
        Some(c) => match error_from_c(c) {
            Some(e) => Some(e),
            None => return GantryStatus::BadArgument,
        },
    };
    let message = OutboundRef::Outcome {
        frame,
        error,
        decisions: &out,
    };
    // SAFETY: the same contract, passed on.
    unsafe { encode_into(&message, buf, capacity, len) }
}

/// Encodes the fault answer to the unusable inbound frame `frame`.
///
/// # Safety
/// `fault` valid; `buf` valid for `capacity` writes; `len` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_frame_encode_fault(
    frame: u32,
    fault: *const GantryFault,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> GantryStatus {
    // SAFETY: `fault` is valid or null.
    let Some(fault) = (unsafe { fault.as_ref() }).and_then(fault_from_c) else {
        return GantryStatus::BadArgument;
    };
    // SAFETY: the same contract, passed on.
    unsafe { encode_into(&OutboundRef::Fault { frame, fault }, buf, capacity, len) }
}

/// Encodes the fault for an event that came before any accepted header.
///
/// # Safety
/// `buf` valid for `capacity` writes; `len` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_frame_encode_no_stream(
    frame: u32,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> GantryStatus {
    let fault = Fault::NoStream;
    // SAFETY: the same contract, passed on.
    unsafe { encode_into(&OutboundRef::Fault { frame, fault }, buf, capacity, len) }
}

/// Stores `f` in `*fault`.
///
/// # Safety
/// `fault` valid or null.
unsafe fn store_fault(f: Fault, fault: *mut GantryFault) -> GantryStatus {
    // SAFETY: `fault` is valid or null, by the contract.
    match unsafe { fault.as_mut() } {
        Some(slot) => {
            *slot = fault_to_c(&f);
            GantryStatus::Ok
        }
        None => GantryStatus::NullPointer,
    }
}

/// The fault for a frame longer than the caller's receive buffer of `capacity` bytes
/// (skipped up to its delimiter), as the Rust firmware reports it.
///
/// # Safety
/// `fault` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_frame_fault_too_long(
    capacity: u32,
    fault: *mut GantryFault,
) -> GantryStatus {
    // SAFETY: the same contract, passed on.
    unsafe { store_fault(Fault::Frame(wire::FrameError::TooLong { capacity }), fault) }
}

/// The fault for a stream that ended `bytes` into a frame.
///
/// # Safety
/// `fault` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gantry_frame_fault_truncated(
    bytes: u32,
    fault: *mut GantryFault,
) -> GantryStatus {
    // SAFETY: the same contract, passed on.
    unsafe { store_fault(Fault::Frame(wire::FrameError::Truncated { bytes }), fault) }
}
