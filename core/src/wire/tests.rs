//! The wire format's tests: round trips, every corruption a typed error, resynchronisation.

extern crate std;
use super::*;
use crate::ids::{GpuId, JobId};
use crate::job::JobSpec;
use crate::order::Fifo;
use crate::placement::{BestFit, GpuSet};
use crate::rng::SeededRng;
use crate::scheduler::Scheduler;
use crate::topology::{LinkWeights, Topology};
use std::vec::Vec;

type Out = Outbound<8, 4>;

fn header() -> StreamHeader {
    StreamHeader {
        capacities: Capacities::FIRMWARE,
        cluster: ClusterShape {
            racks: 2,
            machines_per_rack: 4,
            gpus_per_machine: 8,
        },
        link_weights: *LinkWeights::PROXIMITY_DRL.integer(),
        order: Name::try_from("tias").unwrap(),
        placer: Name::try_from("best-fit").unwrap(),
        seed: 7,
        min_run: crate::time::DurationMs::ZERO,
    }
}

fn inbound() -> Vec<Inbound> {
    let mut spec = JobSpec::new(JobId(300_000), 4);
    spec.deadline = Some(TimeMs(u64::MAX));
    std::vec![
        Inbound::Hello(header()),
        Inbound::Event {
            now: TimeMs(0),
            event: Event::Submit(spec),
        },
        Inbound::Event {
            now: TimeMs(1_000),
            event: Event::GpuDown(GpuId(63)),
        },
        Inbound::Event {
            now: TimeMs(u64::MAX),
            event: Event::Tick,
        },
    ]
}

fn frames(messages: &[Inbound]) -> Vec<Vec<u8>> {
    messages
        .iter()
        .map(|m| encode(m, &mut [0u8; 256]).unwrap().to_vec())
        .collect()
}

/// Every frame of `stream`, decoded by a reader of `N` bytes fed `chunk` bytes per read.
fn read_all<const N: usize>(stream: &[u8], chunk: usize) -> Vec<Received<Inbound>> {
    struct Chunked<'a>(&'a [u8], usize);
    impl embedded_io::ErrorType for Chunked<'_> {
        type Error = core::convert::Infallible;
    }
    impl embedded_io::Read for Chunked<'_> {
        fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
            let n = self.0.len().min(buf.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut reader = FrameReader::<_, N>::new(Chunked(stream, chunk));
    let mut got = Vec::new();
    while let Some(r) = reader.next_frame::<Inbound>().unwrap() {
        got.push(r);
        assert!(got.len() < 10_000, "reader does not end");
    }
    got
}

#[test]
fn frames_round_trip_through_reader_and_writer() {
    let messages = inbound();
    let mut wire = [0u8; 1024];
    let mut writer = FrameWriter::<_, 256>::new(&mut wire[..]);
    let mut total = 0;
    for m in &messages {
        total += writer.send(m).unwrap();
    }
    let stream = &wire[..total];
    assert_eq!(stream.iter().filter(|&&b| b == 0).count(), messages.len());
    for chunk in [1, 3, 64, 1024] {
        let got = read_all::<64>(stream, chunk);
        let want: Vec<_> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| Received {
                frame: i as u32,
                message: Ok(m.clone()),
            })
            .collect();
        assert_eq!(got, want, "chunk {chunk}");
    }
}

#[test]
fn borrowed_and_owned_outbound_encode_the_same_bytes() {
    let mut gpus = GpuSet::<8>::new();
    for g in [7u16, 0, 63] {
        gpus.insert(GpuId(g)).unwrap();
    }
    let decisions = [
        Decision::Start {
            job: JobId(5),
            gpus,
        },
        Decision::Preempt {
            job: JobId(u32::MAX),
            reason: crate::event::PreemptReason::GpuFailed(GpuId(3)),
        },
    ];
    let owned: Out = Outbound::Outcome {
        frame: 9,
        error: Some(SchedError::UnknownJob(JobId(4))),
        decisions: heapless::Vec::from_slice(&decisions).unwrap(),
    };
    let borrowed = OutboundRef::Outcome {
        frame: 9,
        error: Some(SchedError::UnknownJob(JobId(4))),
        decisions: &decisions,
    };
    let a = encode(&owned, &mut [0u8; 256]).unwrap().to_vec();
    let b = encode(&borrowed, &mut [0u8; 256]).unwrap().to_vec();
    assert_eq!(a, b);
    let mut body = a[..a.len() - 1].to_vec();
    assert_eq!(decode::<Out>(&mut body), Ok(owned));
    for (owned, borrowed) in [
        (Out::Ready { frame: 0 }, OutboundRef::Ready { frame: 0 }),
        (
            Out::Fault {
                frame: 3,
                fault: Fault::Frame(FrameError::Crc {
                    computed: 1,
                    received: 2,
                }),
            },
            OutboundRef::Fault {
                frame: 3,
                fault: Fault::Frame(FrameError::Crc {
                    computed: 1,
                    received: 2,
                }),
            },
        ),
    ] {
        let a = encode(&owned, &mut [0u8; 64]).unwrap().to_vec();
        let b = encode::<OutboundRef<'_, 8>>(&borrowed, &mut [0u8; 64])
            .unwrap()
            .to_vec();
        assert_eq!(a, b);
    }
}

/// Builds a frame with a chosen version byte and message bytes, and a correct CRC.
fn raw_frame(version: u8, message: &[u8]) -> Vec<u8> {
    let mut payload = std::vec![version];
    payload.extend_from_slice(message);
    let crc = FRAME_CRC.checksum(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    let mut out = std::vec![0u8; payload.len() + payload.len() / 254 + 2];
    let n = cobs::encode(&payload, &mut out);
    out.truncate(n);
    out.push(0);
    out
}

/// (stream, what the reader yields): each bad frame is a typed error, and the good frame
/// after it still decodes.
#[test]
fn bad_frames_are_typed_errors_and_the_next_frame_still_decodes() {
    let good = frames(&inbound());
    // The event frame's payload with one message byte changed, restuffed: a CRC mismatch.
    let mut payload = good[1][..good[1].len() - 1].to_vec();
    let n = cobs::decode_in_place(&mut payload).unwrap();
    payload.truncate(n);
    let received = u32::from_le_bytes(payload[n - 4..].try_into().unwrap());
    payload[3] ^= 0x10;
    let computed = FRAME_CRC.checksum(&payload[..n - 4]);
    let mut flipped = std::vec![0u8; n + 2];
    let len = cobs::encode(&payload, &mut flipped);
    flipped.truncate(len);
    flipped.push(0);
    let tick = postcard::to_slice(
        &Inbound::Event {
            now: TimeMs(1),
            event: Event::Tick,
        },
        &mut [0u8; 32],
    )
    .unwrap()
    .to_vec();
    let mut trailing = tick.clone();
    trailing.push(0x55);
    let cases: [(Vec<u8>, FrameError); 6] = [
        (flipped, FrameError::Crc { computed, received }),
        (
            raw_frame(WIRE_VERSION + 1, &tick),
            FrameError::Version {
                found: WIRE_VERSION + 1,
            },
        ),
        (raw_frame(WIRE_VERSION, &[9, 1, 2]), FrameError::Malformed),
        (raw_frame(WIRE_VERSION, &trailing), FrameError::Malformed),
        (std::vec![2, 7, 0], FrameError::TooShort { bytes: 1 }),
        (std::vec![9, 1, 0], FrameError::Stuffing),
    ];
    for (bad, want) in cases {
        let mut stream = bad.clone();
        stream.extend_from_slice(&good[2]);
        let got = read_all::<64>(&stream, 5);
        assert_eq!(got.len(), 2, "{want:?}");
        assert_eq!(got[0].message, Err(want));
        assert_eq!(got[1].message, Ok(inbound()[2].clone()));
        assert_eq!(got[1].frame, 1);
    }
}

#[test]
fn long_truncated_and_empty_frames() {
    let mut messages = inbound();
    // A header with the longest names: longer than a 40-byte receive buffer.
    if let Inbound::Hello(h) = &mut messages[0] {
        h.order = Name::try_from("an-order-name-24-chars-x").unwrap();
        h.placer = Name::try_from("a-placer-name-24-chars-x").unwrap();
    }
    let good = frames(&messages);
    assert!(
        good[0].len() > 41 && good[1].len() <= 40,
        "{:?}",
        good.map_len()
    );
    let mut stream = good[0].clone();
    stream.extend_from_slice(&[0, 0]); // padding
    stream.extend_from_slice(&good[1]);
    stream.extend_from_slice(&good[2][..5]); // cut short
    let got = read_all::<40>(&stream, 7);
    let got: Vec<_> = got.iter().map(|r| (r.frame, r.message.clone())).collect();
    assert_eq!(
        got,
        std::vec![
            (0, Err(FrameError::TooLong { capacity: 40 })),
            (1, Ok(messages[1].clone())),
            (2, Err(FrameError::Truncated { bytes: 5 })),
        ]
    );
    // A stream ending inside an over-long frame.
    let got = read_all::<40>(&good[0][..good[0].len() - 1], 64);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].message, Err(FrameError::TooLong { capacity: 40 }));
}

trait Lens {
    fn map_len(&self) -> Vec<usize>;
}

impl Lens for Vec<Vec<u8>> {
    fn map_len(&self) -> Vec<usize> {
        self.iter().map(Vec::len).collect()
    }
}

/// Every single-byte change of every frame is refused or, if it hits the delimiter, splits
/// the stream; no change ever decodes as another message, and the reader never panics.
#[test]
fn no_single_byte_corruption_decodes_as_another_message() {
    let messages = inbound();
    for (i, frame) in frames(&messages).iter().enumerate() {
        for at in 0..frame.len() {
            for value in [0x00u8, 0x01, 0x7f, 0xff, frame[at] ^ 0x01] {
                if value == frame[at] {
                    continue;
                }
                let mut bad = frame.clone();
                bad[at] = value;
                for r in read_all::<256>(&bad, 3) {
                    if let Ok(m) = r.message {
                        panic!("frame {i} byte {at} = {value:#x} decoded as {m:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn random_bytes_never_panic_the_reader() {
    let mut rng = SeededRng::new(12);
    for _ in 0..500 {
        let len = rng.below(300) as usize;
        let stream: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(8) == 0 {
                    0
                } else {
                    rng.next_u32() as u8
                }
            })
            .collect();
        read_all::<64>(&stream, 1 + rng.below(40) as usize);
    }
}

#[test]
fn the_largest_outcome_fits_its_bound() {
    const GANG: usize = 8;
    const D: usize = 64;
    let mut gpus = GpuSet::<GANG>::new();
    for g in 0..GANG as u16 {
        gpus.insert(GpuId(u16::MAX - g)).unwrap();
    }
    let decisions = std::vec![
        Decision::Start {
            job: JobId(u32::MAX),
            gpus,
        };
        D
    ];
    let mut spec = JobSpec::new(JobId(u32::MAX), u16::MAX);
    spec.deadline = Some(TimeMs::MAX);
    spec.declared_length = Some(crate::time::DurationMs(u64::MAX));
    spec.comm.gradient_mb = u32::MAX;
    let message = OutboundRef::Outcome {
        frame: u32::MAX,
        error: Some(SchedError::JobTableFull(spec)),
        decisions: &decisions,
    };
    let bound = max_frame_bytes(max_outcome_message_bytes(GANG, D));
    let mut buf = std::vec![0u8; bound];
    let frame = encode(&message, &mut buf).expect("the worst case fits the bound");
    assert!(frame.len() <= bound);
    assert!(encode(&message, &mut std::vec![0u8; frame.len() - 1]).is_none());
}

/// A scheduler fed a stream with bad frames interleaved answers every good event as it
/// does on the clean stream: a bad frame changes nothing.
#[test]
fn bad_frames_change_no_state() {
    let topology = Topology::<16>::uniform(1, 2, 8, LinkWeights::PROXIMITY_DRL).unwrap();
    let mut events = Vec::new();
    for i in 0..12u32 {
        let spec = JobSpec::new(JobId(i), 1 + (i % 5) as u16);
        events.push(Inbound::Event {
            now: TimeMs(u64::from(i) * 10),
            event: Event::Submit(spec),
        });
        if i % 3 == 2 {
            events.push(Inbound::Event {
                now: TimeMs(u64::from(i) * 10 + 5),
                event: Event::Finish(JobId(i - 2)),
            });
        }
    }
    let clean = frames(&events);
    let run = |stream: &[u8]| {
        let mut s: Scheduler<Fifo, BestFit, 16, 8, 8> =
            Scheduler::new(topology.clone(), Fifo, BestFit);
        let mut out = heapless::Vec::<Decision<8>, 4>::new();
        let mut answers = Vec::new();
        for r in read_all::<64>(stream, 9) {
            match r.message {
                Ok(Inbound::Event { now, event }) => {
                    if let OutboundRef::Outcome {
                        error, decisions, ..
                    } = answer_event(&mut s, r.frame, now, event, &mut out)
                    {
                        answers.push((error, decisions.to_vec()));
                    }
                }
                Ok(Inbound::Hello(_)) => unreachable!(),
                Err(_) => {}
            }
        }
        answers
    };
    let want = run(&clean.concat());
    assert!(want.iter().any(|(_, d)| !d.is_empty()));
    assert!(
        want.iter().any(|(e, _)| e.is_some()),
        "the table of 8 fills"
    );
    // Before every good frame, a corrupted copy of it (a flipped byte or a cut).
    let mut noisy = Vec::new();
    for (i, f) in clean.iter().enumerate() {
        let mut bad = f.clone();
        if i % 2 == 0 {
            bad[1] ^= 0x20;
            if bad[1] == 0 {
                bad[1] = 0x33;
            }
        } else {
            bad.truncate(bad.len() / 2);
            bad.push(0);
        }
        noisy.extend_from_slice(&bad);
        noisy.extend_from_slice(f);
    }
    assert_eq!(run(&noisy), want);
}
