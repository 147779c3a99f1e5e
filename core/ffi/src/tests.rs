//! The C ABI driven from Rust as a C firmware would drive it: every refusal has its code
//! and round-trips, a stream answered through the ABI is byte-identical to the core's own
//! answers, and the checked-in header is what cbindgen generates.

extern crate std;
use super::convert::*;
use super::*;
use gantry_core::wire::{ClusterShape, Name, StreamHeader};
use std::vec::Vec;

fn every_refusal() -> Vec<SchedError> {
    let mut spec = JobSpec::new(JobId(7), 3);
    spec.deadline = Some(TimeMs(99));
    spec.declared_length = Some(DurationMs(5));
    spec.comm.gradient_mb = 12;
    std::vec![
        SchedError::TimeWentBackwards {
            now: TimeMs(1),
            last: TimeMs(2),
        },
        SchedError::UnknownJob(JobId(3)),
        SchedError::DuplicateJob(JobId(4)),
        SchedError::ZeroGpuRequest(JobId(5)),
        SchedError::RequestExceedsCluster {
            job: JobId(6),
            requested: 9,
            healthy: 8,
        },
        SchedError::GangTooLarge {
            job: JobId(6),
            requested: 9,
            capacity: 8,
        },
        SchedError::DeadlineAlreadyPassed {
            job: JobId(1),
            deadline: TimeMs(3),
            now: TimeMs(4),
        },
        SchedError::DeadlineUnreachable {
            job: JobId(1),
            deadline: TimeMs(3),
            earliest_finish: TimeMs(40),
        },
        SchedError::JobTableFull(spec),
        SchedError::JobNotRunning(JobId(8)),
        SchedError::UnknownGpu(GpuId(70)),
        SchedError::DecisionBufferFull,
    ]
}

#[test]
fn every_refusal_has_its_own_status_and_round_trips() {
    let mut codes = std::collections::BTreeSet::new();
    for e in every_refusal() {
        let c = error_to_c(&e);
        assert!((1..=12).contains(&c.status), "{e:?}");
        assert!(codes.insert(c.status), "{e:?} shares a status");
        assert_eq!(error_from_c(&c), Some(e));
    }
    assert_eq!(codes.len(), 12);
}

fn header(order: &str, placer: &str) -> StreamHeader {
    StreamHeader {
        capacities: Capacities::FIRMWARE,
        cluster: ClusterShape {
            racks: 2,
            machines_per_rack: 4,
            gpus_per_machine: 8,
        },
        link_weights: *LinkWeights::PROXIMITY_DRL.integer(),
        order: Name::try_from(order).unwrap(),
        placer: Name::try_from(placer).unwrap(),
        seed: 5,
        min_run: gantry_core::DurationMs(45_000),
    }
}

/// A seeded stream of events of every kind, with refusals among them.
fn events() -> Vec<Inbound> {
    let mut rng = gantry_core::SeededRng::new(31);
    let mut now = 0u64;
    let mut all = Vec::new();
    for i in 0..600u32 {
        now += u64::from(rng.below(30_000));
        let event = match rng.below(10) {
            0..=3 => {
                let mut spec = JobSpec::new(JobId(i), 1 + rng.below(10) as u16);
                if rng.below(3) == 0 {
                    spec.deadline = Some(TimeMs(now + u64::from(rng.below(900_000))));
                }
                if rng.below(4) == 0 {
                    spec.preemption = gantry_core::PreemptionClass::Never;
                }
                Event::Submit(spec)
            }
            4..=6 => Event::Finish(JobId(i.saturating_sub(rng.below(40)))),
            7 => Event::Cancel(JobId(i.saturating_sub(rng.below(40)))),
            8 => Event::GpuDown(GpuId(rng.below(66) as u16)),
            _ => Event::GpuUp(GpuId(rng.below(66) as u16)),
        };
        all.push(Inbound::Event {
            now: TimeMs(now),
            event,
        });
    }
    all
}

fn frame(message: &Inbound) -> Vec<u8> {
    let mut buf = [0u8; 256];
    wire::encode(message, &mut buf).unwrap().to_vec()
}

/// What the core answers, through `wire::answer_event` (the Rust firmware's path).
fn reference(stream: &[Inbound]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = std::vec![0u8; GANTRY_MAX_FRAME_BYTES];
    let Inbound::Hello(h) = &stream[0] else {
        unreachable!()
    };
    let config = config_from_header(h).unwrap();
    let order = order::new();
    let scheduler_config =
        SchedulerConfig::for_order(&order).with_min_run(DurationMs(config.min_run_ms));
    let mut s = std::boxed::Box::new(FfiScheduler::with_config(
        topology(&config).unwrap(),
        order,
        placer::new(config.seed),
        scheduler_config,
    ));
    let ready: OutboundRef<'_, 8> = OutboundRef::Ready { frame: 0 };
    out.extend_from_slice(wire::encode(&ready, &mut buf).unwrap());
    let mut decisions = heapless::Vec::<Decision<8>, 64>::new();
    for (i, m) in stream.iter().enumerate().skip(1) {
        let Inbound::Event { now, event } = m else {
            unreachable!()
        };
        let answer = wire::answer_event(&mut s, i as u32, *now, *event, &mut decisions);
        out.extend_from_slice(wire::encode(&answer, &mut buf).unwrap());
    }
    out
}

/// The same stream through the C ABI only, as `tests/firmware/c/main.c` does; with
/// `restore_every: Some(n)`, after every `n`-th event the scheduler is snapshotted, its
/// storage wiped, re-initialised from the stream's configuration and restored, as after a
/// power cycle. Returns the answers and the number of restores.
#[allow(unsafe_code)]
fn through_the_abi(stream: &[Inbound], restore_every: Option<usize>) -> (Vec<u8>, usize) {
    #[repr(C, align(8))]
    struct Storage([u8; GANTRY_SCHEDULER_STORAGE_BYTES]);
    let mut storage = std::boxed::Box::new(Storage([0; GANTRY_SCHEDULER_STORAGE_BYTES]));
    let mut handle: *mut GantryScheduler = core::ptr::null_mut();
    let mut scratch = std::boxed::Box::new(Storage([0; GANTRY_SCHEDULER_STORAGE_BYTES]));
    let mut scratch_handle: *mut GantryScheduler = core::ptr::null_mut();
    let mut out = Vec::new();
    let mut buf = std::vec![0u8; GANTRY_MAX_FRAME_BYTES];
    let mut decisions = [GantryDecision::default(); GANTRY_MAX_DECISIONS];
    let mut config = GantryConfig::default();
    let mut snapshot = std::vec![0u8; GANTRY_SNAPSHOT_BYTES];
    let mut restores = 0;
    for (i, m) in stream.iter().enumerate() {
        let mut bytes = frame(m);
        bytes.pop();
        let mut inbound = GantryInbound::default();
        let mut len = 0usize;
        // SAFETY: every pointer below points to a live local of the right size.
        unsafe {
            let st = gantry_frame_decode(bytes.as_mut_ptr(), bytes.len(), &mut inbound);
            assert_eq!(st, GantryStatus::Ok);
            let st = if inbound.kind == GANTRY_INBOUND_HELLO {
                config = inbound.config;
                let st = gantry_scheduler_init(
                    storage.0.as_mut_ptr(),
                    GANTRY_SCHEDULER_STORAGE_BYTES,
                    &inbound.config,
                    &mut handle,
                    core::ptr::null_mut(),
                );
                assert_eq!(st, GantryStatus::Ok);
                gantry_frame_encode_ready(i as u32, buf.as_mut_ptr(), buf.len(), &mut len)
            } else {
                let mut count = 0usize;
                let mut error = GantryError::default();
                let st = gantry_handle(
                    handle,
                    inbound.now_ms,
                    &inbound.event,
                    decisions.as_mut_ptr(),
                    decisions.len(),
                    &mut count,
                    core::ptr::null_mut(),
                    &mut error,
                );
                let error = if st == GantryStatus::Ok {
                    core::ptr::null()
                } else {
                    &error as *const GantryError
                };
                gantry_frame_encode_outcome(
                    i as u32,
                    error,
                    decisions.as_ptr(),
                    count,
                    buf.as_mut_ptr(),
                    buf.len(),
                    &mut len,
                )
            };
            assert_eq!(st, GantryStatus::Ok);
            if restore_every.is_some_and(|n| i > 0 && i % n == 0) {
                let mut n = 0usize;
                let st = gantry_snapshot(handle, snapshot.as_mut_ptr(), snapshot.len(), &mut n);
                assert_eq!(st, GantryStatus::Ok);
                storage.0.fill(0xA5);
                let st = gantry_scheduler_init(
                    storage.0.as_mut_ptr(),
                    GANTRY_SCHEDULER_STORAGE_BYTES,
                    &config,
                    &mut handle,
                    core::ptr::null_mut(),
                );
                assert_eq!(st, GantryStatus::Ok);
                let st = gantry_scheduler_init(
                    scratch.0.as_mut_ptr(),
                    GANTRY_SCHEDULER_STORAGE_BYTES,
                    &config,
                    &mut scratch_handle,
                    core::ptr::null_mut(),
                );
                assert_eq!(st, GantryStatus::Ok);
                assert_eq!(
                    gantry_restore(handle, scratch_handle, snapshot.as_mut_ptr(), n),
                    GantryStatus::Ok
                );
                restores += 1;
            }
        }
        out.extend_from_slice(&buf[..len]);
    }
    (out, restores)
}

#[test]
fn a_stream_through_the_abi_is_byte_identical_to_the_core() {
    let mut stream = std::vec![Inbound::Hello(header(order::NAME, placer::NAME))];
    stream.extend(events());
    let want = reference(&stream);
    let (got, _) = through_the_abi(&stream, None);
    assert_eq!(got, want);
    // Snapshot, wipe, re-initialise and restore every 50 events: the same bytes.
    let (got, restores) = through_the_abi(&stream, Some(50));
    assert_eq!(restores, 12);
    assert_eq!(got, want);
    // The stream meets refusals, so their C round trip is exercised too.
    let outcomes: Vec<Outbound> = want
        .split_inclusive(|&b| b == 0)
        .map(|f| wire::decode(&mut f[..f.len() - 1].to_vec()).unwrap())
        .collect();
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, Outbound::Outcome { error: Some(_), .. }))
    );
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, Outbound::Outcome { decisions, .. } if !decisions.is_empty()))
    );
}

type Outbound = wire::Outbound<8, 64>;

#[test]
#[allow(unsafe_code)]
fn misuse_is_a_status_never_a_crash() {
    let config = GantryConfig {
        racks: 2,
        machines_per_rack: 4,
        gpus_per_machine: 8,
        seed: 0,
        min_run_ms: 0,
    };
    #[repr(C, align(8))]
    struct Storage([u8; GANTRY_SCHEDULER_STORAGE_BYTES + 8]);
    let mut storage = std::boxed::Box::new(Storage([0; GANTRY_SCHEDULER_STORAGE_BYTES + 8]));
    let mut handle: *mut GantryScheduler = core::ptr::null_mut();
    let mut fault = GantryFault::default();
    let p = storage.0.as_mut_ptr();
    // SAFETY: pointers to live locals; the storage has room for every offset used.
    unsafe {
        let init = |p: *mut u8, n: usize, c: *const GantryConfig, f: *mut GantryFault| {
            let mut h: *mut GantryScheduler = core::ptr::null_mut();
            gantry_scheduler_init(p, n, c, &mut h, f)
        };
        assert_eq!(
            init(core::ptr::null_mut(), 1 << 20, &config, &mut fault),
            GantryStatus::NullPointer
        );
        assert_eq!(
            init(p, gantry_scheduler_size() - 1, &config, &mut fault),
            GantryStatus::StorageTooSmall
        );
        assert_eq!(
            init(
                p.add(1),
                GANTRY_SCHEDULER_STORAGE_BYTES,
                &config,
                &mut fault
            ),
            GantryStatus::StorageMisaligned
        );
        let too_big = GantryConfig { racks: 3, ..config };
        assert_eq!(
            init(p, GANTRY_SCHEDULER_STORAGE_BYTES, &too_big, &mut fault),
            GantryStatus::BadTopology
        );
        assert_eq!(
            fault_from_c(&fault),
            Some(Fault::Topology(gantry_core::TopologyError::TooManyGpus {
                capacity: 64
            }))
        );
        assert_eq!(
            gantry_scheduler_init(
                p,
                GANTRY_SCHEDULER_STORAGE_BYTES,
                &config,
                &mut handle,
                core::ptr::null_mut()
            ),
            GantryStatus::Ok
        );
        let mut d = [GantryDecision::default(); GANTRY_MAX_DECISIONS];
        let mut count = 0usize;
        let bad = GantryEvent {
            kind: 77,
            ..GantryEvent::default()
        };
        let h = |e: &GantryEvent, cap: usize, d: &mut [GantryDecision], count: &mut usize| {
            gantry_handle(
                handle,
                0,
                e,
                d.as_mut_ptr(),
                cap,
                count,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
            )
        };
        assert_eq!(
            h(&bad, d.len(), &mut d, &mut count),
            GantryStatus::BadArgument
        );
        let tick = GantryEvent {
            kind: GANTRY_EVENT_TICK,
            ..GantryEvent::default()
        };
        assert_eq!(
            h(&tick, 8, &mut d, &mut count),
            GantryStatus::BufferTooSmall
        );
        let mut submit = GantryEvent {
            kind: GANTRY_EVENT_SUBMIT,
            ..GantryEvent::default()
        };
        submit.spec.id = 1;
        submit.spec.gpus = 9;
        assert_eq!(
            h(&submit, d.len(), &mut d, &mut count),
            GantryStatus::GangTooLarge
        );
        submit.spec.gpus = 4;
        assert_eq!(h(&submit, d.len(), &mut d, &mut count), GantryStatus::Ok);
        assert_eq!(
            (count, d[0].kind, d[0].gpu_count),
            (1, GANTRY_DECISION_START, 4)
        );
        let mut garbage = [1u8, 2, 3];
        let mut inbound = GantryInbound::default();
        assert_eq!(
            gantry_frame_decode(garbage.as_mut_ptr(), 3, &mut inbound),
            GantryStatus::FrameFault
        );
        assert_eq!(inbound.kind, GANTRY_INBOUND_NONE);
        let mut len = 0usize;
        let mut tiny = [0u8; 4];
        assert_eq!(
            gantry_frame_encode_fault(0, &inbound.fault, tiny.as_mut_ptr(), tiny.len(), &mut len),
            GantryStatus::BufferTooSmall
        );
    }
}

/// A scheduler built through the ABI, with the events of [`events`] handled.
#[allow(unsafe_code)]
fn busy_scheduler(storage: &mut [u8], config: &GantryConfig) -> *mut GantryScheduler {
    let mut handle: *mut GantryScheduler = core::ptr::null_mut();
    let mut d = [GantryDecision::default(); GANTRY_MAX_DECISIONS];
    // SAFETY: the storage is aligned and large enough (checked by init); the rest are
    // live locals.
    unsafe {
        let st = gantry_scheduler_init(
            storage.as_mut_ptr(),
            storage.len(),
            config,
            &mut handle,
            core::ptr::null_mut(),
        );
        assert_eq!(st, GantryStatus::Ok);
        for m in events() {
            let Inbound::Event { now, event } = m else {
                continue;
            };
            let e = event_to_c(&event);
            let mut count = 0usize;
            let _ = gantry_handle(
                handle,
                now.0,
                &e,
                d.as_mut_ptr(),
                d.len(),
                &mut count,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
            );
        }
    }
    handle
}

#[test]
#[allow(unsafe_code)]
fn a_bad_snapshot_is_a_status_and_changes_nothing() {
    #[repr(C, align(8))]
    struct Storage([u8; GANTRY_SCHEDULER_STORAGE_BYTES]);
    let config = GantryConfig {
        racks: 2,
        machines_per_rack: 4,
        gpus_per_machine: 8,
        seed: 5,
        min_run_ms: 30_000,
    };
    let mut storage = std::boxed::Box::new(Storage([0; GANTRY_SCHEDULER_STORAGE_BYTES]));
    let handle = busy_scheduler(&mut storage.0, &config);
    let mut scratch = std::boxed::Box::new(Storage([0; GANTRY_SCHEDULER_STORAGE_BYTES]));
    let mut scratch_handle: *mut GantryScheduler = core::ptr::null_mut();
    // SAFETY: live storage of the right size and alignment, a live config and out pointer.
    let st = unsafe {
        gantry_scheduler_init(
            scratch.0.as_mut_ptr(),
            GANTRY_SCHEDULER_STORAGE_BYTES,
            &config,
            &mut scratch_handle,
            core::ptr::null_mut(),
        )
    };
    assert_eq!(st, GantryStatus::Ok);
    let snap = |buf: &mut [u8]| {
        let mut n = 0usize;
        // SAFETY: a live handle and buffer.
        let st = unsafe { gantry_snapshot(handle, buf.as_mut_ptr(), buf.len(), &mut n) };
        (st, n)
    };
    let mut good = std::vec![0u8; GANTRY_SNAPSHOT_BYTES];
    let (st, n) = snap(&mut good);
    assert_eq!(st, GantryStatus::Ok);
    good.truncate(n);
    let mut small = std::vec![0u8; n - 1];
    assert_eq!(snap(&mut small).0, GantryStatus::BufferTooSmall);
    let restore = |frame: &[u8]| {
        let mut frame = frame.to_vec();
        // SAFETY: a live handle and buffer.
        unsafe { gantry_restore(handle, scratch_handle, frame.as_mut_ptr(), frame.len()) }
    };
    let unchanged = |what: &str| {
        let mut again = std::vec![0u8; GANTRY_SNAPSHOT_BYTES];
        let (_, m) = snap(&mut again);
        assert_eq!(&again[..m], &good[..], "{what}: the scheduler changed");
    };
    let mut flipped = good.clone();
    flipped[n / 2] ^= 0x10;
    assert_eq!(restore(&flipped), GantryStatus::SnapshotCorrupt);
    unchanged("flipped byte");
    assert_eq!(restore(&good[..n / 2]), GantryStatus::SnapshotCorrupt);
    unchanged("truncated");
    // Taken on another cluster: refused by the one restoring it.
    let other = GantryConfig { racks: 1, ..config };
    let mut other_storage = std::boxed::Box::new(Storage([0; GANTRY_SCHEDULER_STORAGE_BYTES]));
    let other_handle = busy_scheduler(&mut other_storage.0, &other);
    let mut theirs = std::vec![0u8; GANTRY_SNAPSHOT_BYTES];
    let mut m = 0usize;
    // SAFETY: live handles and buffers.
    unsafe {
        let st = gantry_snapshot(other_handle, theirs.as_mut_ptr(), theirs.len(), &mut m);
        assert_eq!(st, GantryStatus::Ok);
    }
    assert_eq!(restore(&theirs[..m]), GantryStatus::SnapshotOtherCluster);
    unchanged("other cluster");
    assert_eq!(restore(&good), GantryStatus::Ok);
    unchanged("restored");
    // SAFETY: null pointers are refused before use.
    unsafe {
        assert_eq!(
            gantry_restore(core::ptr::null_mut(), scratch_handle, good.as_mut_ptr(), n),
            GantryStatus::NullPointer
        );
        assert_eq!(
            gantry_restore(handle, core::ptr::null_mut(), good.as_mut_ptr(), n),
            GantryStatus::NullPointer
        );
        assert_eq!(
            gantry_restore(handle, handle, good.as_mut_ptr(), n),
            GantryStatus::BadArgument
        );
        assert_eq!(
            gantry_snapshot(handle, core::ptr::null_mut(), 0, &mut m),
            GantryStatus::NullPointer
        );
    }
}

#[test]
fn every_snapshot_refusal_has_its_own_status() {
    use gantry_core::InvariantViolation;
    use gantry_core::wire::{FrameError, HeaderField};
    let caps = FfiScheduler::CAPACITIES;
    let refused = [
        SnapshotError::Frame(FrameError::Malformed),
        SnapshotError::Version { found: 9 },
        SnapshotError::Capacities {
            found: caps,
            expected: caps,
        },
        SnapshotError::Topology {
            found: 1,
            expected: 2,
        },
        SnapshotError::Inconsistent(InvariantViolation::IndexOutOfSync(JobId(1))),
    ];
    let mut codes = std::collections::BTreeSet::new();
    for e in &refused {
        assert!(codes.insert(abi::snapshot_status(e) as u32), "{e:?}");
    }
    assert_eq!(
        abi::snapshot_status(&SnapshotError::Mismatch(HeaderField::Order)),
        GantryStatus::SnapshotOtherBuild
    );
}

/// The largest snapshot this build can write: every job slot used by a job with the widest
/// field values (ids, times and deadlines near the top of their ranges, declared lengths),
/// every GPU busy or failed, fits `GANTRY_SNAPSHOT_BYTES`.
#[test]
fn the_widest_state_fits_the_snapshot_buffer() {
    let config = GantryConfig {
        racks: 2,
        machines_per_rack: 4,
        gpus_per_machine: 8,
        seed: u64::MAX,
        min_run_ms: u64::MAX,
    };
    let order = order::new();
    let scheduler_config =
        SchedulerConfig::for_order(&order).with_min_run(DurationMs(config.min_run_ms));
    let mut s = std::boxed::Box::new(FfiScheduler::with_config(
        topology(&config).unwrap(),
        order,
        placer::new(config.seed),
        scheduler_config,
    ));
    let mut out = heapless::Vec::<Decision<8>, 64>::new();
    let t0 = u64::MAX / 2;
    for i in 0..FIRMWARE_JOBS as u64 {
        let mut spec = JobSpec::new(JobId(u32::MAX - i as u32), 1 + (i % 8) as u16);
        spec.deadline = Some(TimeMs(u64::MAX - i));
        spec.declared_length = Some(DurationMs(u64::MAX / 3 + i));
        spec.comm.gradient_mb = u32::MAX;
        out.clear();
        s.handle(TimeMs(t0 + i * (1 << 40)), Event::Submit(spec), &mut out)
            .unwrap();
    }
    assert_eq!(s.jobs().len(), FIRMWARE_JOBS);
    out.clear();
    s.handle(TimeMs(u64::MAX - 1), Event::GpuDown(GpuId(63)), &mut out)
        .unwrap();
    let mut buf = std::vec![0u8; GANTRY_SNAPSHOT_BYTES];
    let n = s.snapshot(&mut buf).expect("fits").len();
    std::println!("widest snapshot: {n} bytes of {GANTRY_SNAPSHOT_BYTES}");
    assert!(
        n > GANTRY_SNAPSHOT_BYTES / 2,
        "the test state is not wide: {n} bytes"
    );
}

/// The checked-in header is what cbindgen generates (feature `header-check`: `cargo test -p
/// gantry-sched-ffi --release --features header-check --lib header_is_current`).
#[cfg(feature = "header-check")]
#[test]
fn header_is_current() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(std::format!("{dir}/cbindgen.toml")).unwrap();
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen parses the crate")
        .write(&mut generated);
    let path = std::format!("{dir}/include/gantry.h");
    if std::env::var_os("GANTRY_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{path} is out of date: GANTRY_BLESS=1 cargo test -p gantry-sched-ffi --release --features header-check --lib header_is_current"
    );
}

#[test]
#[allow(unsafe_code)]
fn count_is_written_on_every_return_and_time_is_readable() {
    #[repr(C, align(8))]
    struct Storage([u8; GANTRY_SCHEDULER_STORAGE_BYTES]);
    let config = GantryConfig {
        racks: 1,
        machines_per_rack: 1,
        gpus_per_machine: 4,
        seed: 0,
        min_run_ms: 0,
    };
    let mut storage = std::boxed::Box::new(Storage([0; GANTRY_SCHEDULER_STORAGE_BYTES]));
    let mut handle: *mut GantryScheduler = core::ptr::null_mut();
    let mut d = [GantryDecision::default(); GANTRY_MAX_DECISIONS];
    let submit = GantryEvent {
        kind: GANTRY_EVENT_SUBMIT,
        spec: GantryJobSpec {
            id: 1,
            gpus: 4,
            ..GantryJobSpec::default()
        },
        ..GantryEvent::default()
    };
    let bad = GantryEvent {
        kind: 200,
        ..GantryEvent::default()
    };
    // SAFETY: pointers to live locals of the right sizes (or null, refused before use).
    unsafe {
        let st = gantry_scheduler_init(
            storage.0.as_mut_ptr(),
            GANTRY_SCHEDULER_STORAGE_BYTES,
            &config,
            &mut handle,
            core::ptr::null_mut(),
        );
        assert_eq!(st, GantryStatus::Ok);
        let mut call = |h: *mut GantryScheduler, e: *const GantryEvent, cap: usize, t: u64| {
            let mut count = 99usize;
            let st = gantry_handle(
                h,
                t,
                e,
                d.as_mut_ptr(),
                cap,
                &mut count,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
            );
            (st, count)
        };
        let null = core::ptr::null_mut();
        let cap = GANTRY_MAX_DECISIONS;
        assert_eq!(call(null, &submit, cap, 0), (GantryStatus::NullPointer, 0));
        assert_eq!(
            call(handle, &submit, 1, 0),
            (GantryStatus::BufferTooSmall, 0)
        );
        assert_eq!(call(handle, &bad, cap, 0), (GantryStatus::BadArgument, 0));
        let (mut now, mut review) = (1u64, 1u64);
        assert_eq!(gantry_now(handle, &mut now), GantryStatus::Ok);
        assert_eq!(gantry_next_review(handle, &mut review), GantryStatus::Ok);
        assert_eq!((now, review), (0, GANTRY_NO_REVIEW));
        assert_eq!(call(handle, &submit, cap, 5_000), (GantryStatus::Ok, 1));
        assert_eq!(gantry_now(handle, &mut now), GantryStatus::Ok);
        assert_eq!(gantry_next_review(handle, &mut review), GantryStatus::Ok);
        let s = &*handle.cast::<FfiScheduler>();
        let want = s.next_review().map_or(GANTRY_NO_REVIEW, |t| t.0);
        assert_eq!((now, review), (5_000, want));
        // Refused before anything: an event before the scheduler's time.
        assert_eq!(
            call(handle, &submit, cap, 4_999),
            (GantryStatus::TimeWentBackwards, 0)
        );
        assert_eq!(gantry_now(null, &mut now), GantryStatus::NullPointer);
        assert_eq!(
            gantry_next_review(handle, core::ptr::null_mut()),
            GantryStatus::NullPointer
        );
    }
}

#[test]
#[allow(unsafe_code)]
fn build_info_names_the_pair_and_the_capacities() {
    let mut info = core::mem::MaybeUninit::<GantryBuildInfo>::uninit();
    // SAFETY: a live out pointer; the names are static NUL-terminated strings.
    let info = unsafe {
        assert_eq!(gantry_build_info(info.as_mut_ptr()), GantryStatus::Ok);
        assert_eq!(
            gantry_build_info(core::ptr::null_mut()),
            GantryStatus::NullPointer
        );
        info.assume_init()
    };
    // SAFETY: static NUL-terminated strings.
    let (o, p, v) = unsafe {
        (
            core::ffi::CStr::from_ptr(info.order),
            core::ffi::CStr::from_ptr(info.placer),
            core::ffi::CStr::from_ptr(info.version),
        )
    };
    assert_eq!(o.to_str(), Ok(order::NAME));
    assert_eq!(p.to_str(), Ok(placer::NAME));
    assert_eq!(v.to_str(), Ok(env!("CARGO_PKG_VERSION")));
    assert_eq!(
        (
            info.max_gpus,
            info.max_jobs,
            info.max_gang,
            info.max_decisions
        ),
        (64, 256, 8, 64)
    );
    assert_eq!(info.scheduler_bytes, gantry_scheduler_size());
    assert_eq!(info.snapshot_bytes, GANTRY_SNAPSHOT_BYTES);
    assert_eq!(info.snapshot_version, gantry_core::SNAPSHOT_VERSION);
    assert_eq!(info.wire_version, wire::WIRE_VERSION);
}
