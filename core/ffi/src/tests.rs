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
    let mut s = std::boxed::Box::new(FfiScheduler::new(
        topology(&config).unwrap(),
        order::new(),
        placer::new(config.seed),
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

/// The same stream through the C ABI only, as `tests/firmware/c/main.c` does.
#[allow(unsafe_code)]
fn through_the_abi(stream: &[Inbound]) -> Vec<u8> {
    #[repr(C, align(8))]
    struct Storage([u8; GANTRY_SCHEDULER_STORAGE_BYTES]);
    let mut storage = std::boxed::Box::new(Storage([0; GANTRY_SCHEDULER_STORAGE_BYTES]));
    let mut handle: *mut GantryScheduler = core::ptr::null_mut();
    let mut out = Vec::new();
    let mut buf = std::vec![0u8; GANTRY_MAX_FRAME_BYTES];
    let mut decisions = [GantryDecision::default(); GANTRY_MAX_DECISIONS];
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
        }
        out.extend_from_slice(&buf[..len]);
    }
    out
}

#[test]
fn a_stream_through_the_abi_is_byte_identical_to_the_core() {
    let mut stream = std::vec![Inbound::Hello(header(order::NAME, placer::NAME))];
    stream.extend(events());
    let want = reference(&stream);
    let got = through_the_abi(&stream);
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
        "{path} is out of date: GANTRY_BLESS=1 cargo test -p gantry-ffi --release header_is_current"
    );
}
