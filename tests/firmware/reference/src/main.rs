//! The x86 side of the firmware check, with gantry-core alone (no host build): the reference
//! device that answers a frame stream as a correct device must (`serve`: the same core code
//! the firmware runs, `wire::FrameReader` → `wire::answer_event` → `wire::FrameWriter`), a
//! deterministic corruption of a stream (`corrupt`), a stream's `Hello` pointed at another
//! order and placer (`retarget`), and a comparison naming the first differing frame (`diff`).
//!
//! ```text
//! gantry-firmware-reference serve EVENTS ANSWERS
//! gantry-firmware-reference corrupt EVENTS OUT SEED
//! gantry-firmware-reference retarget EVENTS OUT ORDER PLACER
//! gantry-firmware-reference diff EXPECTED ACTUAL
//! ```

use gantry_core::embedded_io::{self, ErrorType};
use gantry_core::wire::{
    self, Capacities, FIRMWARE_DECISIONS, FIRMWARE_GANG, FIRMWARE_GPUS, Fault, FirmwareDecisions,
    FirmwareScheduler, FrameReader, FrameWriter, HeaderField, Inbound, OutboundRef, StreamHeader,
    WriteError,
};
use gantry_core::{JobOrder, LinkWeights, Placer, SchedulerConfig, SeededRng, Topology};
use std::io::Read as _;
use std::process::ExitCode;

/// The firmware's receive buffer: the longest inbound frame accepted.
const IN_FRAME_BYTES: usize = 256;
/// The firmware's encode buffer: the largest outcome at its capacities.
const OUT_FRAME_BYTES: usize = wire::max_frame_bytes(wire::max_outcome_message_bytes(
    FIRMWARE_GANG,
    FIRMWARE_DECISIONS,
));

/// A std reader or writer as `embedded_io`'s (the core's I/O traits).
struct Io<T>(T);

/// A failed read or write (the file names are in the message of the caller).
impl<T> ErrorType for Io<T> {
    type Error = embedded_io::ErrorKind;
}

impl<T: std::io::Read> embedded_io::Read for Io<T> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        self.0.read(buf).map_err(|_| embedded_io::ErrorKind::Other)
    }
}

impl<T: std::io::Write> embedded_io::Write for Io<T> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.0.write(buf).map_err(|_| embedded_io::ErrorKind::Other)
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.0.flush().map_err(|_| embedded_io::ErrorKind::Other)
    }
}

type Reader = FrameReader<Io<std::io::BufReader<std::fs::File>>, IN_FRAME_BYTES>;
type Writer = FrameWriter<Io<std::io::BufWriter<std::fs::File>>, OUT_FRAME_BYTES>;

fn send(writer: &mut Writer, message: &OutboundRef<'_, FIRMWARE_GANG>) -> Result<(), String> {
    match writer.send(message) {
        Ok(_) => Ok(()),
        Err(WriteError::Io(e)) => Err(format!("write failed: {e:?}")),
        Err(WriteError::Closed) => Err("output closed".into()),
        Err(WriteError::TooLarge) => Err("answer larger than the firmware's buffer".into()),
    }
}

/// Reads frames until the next `Hello`, answering everything else with a fault.
fn until_hello(
    reader: &mut Reader,
    writer: &mut Writer,
) -> Result<Option<(u32, StreamHeader)>, String> {
    while let Some(r) = reader
        .next_frame::<Inbound>()
        .map_err(|e| format!("{e:?}"))?
    {
        let fault = match r.message {
            Ok(Inbound::Hello(header)) => return Ok(Some((r.frame, header))),
            Ok(Inbound::Event { .. }) => Fault::NoStream,
            Err(e) => Fault::Frame(e),
        };
        send(
            writer,
            &OutboundRef::Fault {
                frame: r.frame,
                fault,
            },
        )?;
    }
    Ok(None)
}

/// Serves one stream of the pair `O`, `P` until it ends or the next `Hello`, which it returns.
fn run<O: JobOrder, P: Placer<FIRMWARE_GPUS>>(
    frame: u32,
    header: &StreamHeader,
    order: O,
    placer: P,
    reader: &mut Reader,
    writer: &mut Writer,
) -> Result<Option<(u32, StreamHeader)>, String> {
    let c = header.cluster;
    let weights = LinkWeights::PROXIMITY_DRL;
    let topology =
        match Topology::uniform(c.racks, c.machines_per_rack, c.gpus_per_machine, weights) {
            Ok(t) => t,
            Err(e) => {
                let fault = Fault::Topology(e);
                send(writer, &OutboundRef::Fault { frame, fault })?;
                return until_hello(reader, writer);
            }
        };
    let config = SchedulerConfig::for_order(&order).with_min_run(header.min_run);
    // About 32 KB: on the heap, not on the main thread's stack.
    let mut scheduler = Box::new(FirmwareScheduler::with_config(
        topology, order, placer, config,
    ));
    send(writer, &OutboundRef::Ready { frame })?;
    let mut out = FirmwareDecisions::new();
    while let Some(r) = reader
        .next_frame::<Inbound>()
        .map_err(|e| format!("{e:?}"))?
    {
        match r.message {
            Ok(Inbound::Hello(header)) => return Ok(Some((r.frame, header))),
            Ok(Inbound::Event { now, event }) => {
                let answer = wire::answer_event(&mut *scheduler, r.frame, now, event, &mut out);
                send(writer, &answer)?;
            }
            Err(e) => {
                let fault = Fault::Frame(e);
                send(
                    writer,
                    &OutboundRef::Fault {
                        frame: r.frame,
                        fault,
                    },
                )?;
            }
        }
    }
    Ok(None)
}

/// Runs the stream a header asks for (any order × placer the firmware builds).
fn dispatch(
    frame: u32,
    header: &StreamHeader,
    reader: &mut Reader,
    writer: &mut Writer,
) -> Result<Option<(u32, StreamHeader)>, String> {
    let (order, placer) = (header.order.as_str(), header.placer.as_str());
    let weights = LinkWeights::PROXIMITY_DRL.integer();
    let fault = |field| Fault::Mismatch(field);
    if let Some(field) = header.mismatch(&Capacities::FIRMWARE, weights, order, placer) {
        send(
            writer,
            &OutboundRef::Fault {
                frame,
                fault: fault(field),
            },
        )?;
        return until_hello(reader, writer);
    }
    macro_rules! placers {
        ($order:expr) => {
            match placer {
                "first-fit" => run(frame, header, $order, gantry_core::FirstFit, reader, writer),
                "best-fit" => run(frame, header, $order, gantry_core::BestFit, reader, writer),
                "random" => {
                    let random = gantry_core::RandomPlacer::new(header.seed);
                    run(frame, header, $order, random, reader, writer)
                }
                "load-balance" => run(
                    frame,
                    header,
                    $order,
                    gantry_core::LoadBalance,
                    reader,
                    writer,
                ),
                "greedy" => run(
                    frame,
                    header,
                    $order,
                    gantry_core::ProximityGreedy,
                    reader,
                    writer,
                ),
                "optimal" => {
                    let exact = gantry_core::ExactOptimal::<FIRMWARE_GPUS>::default();
                    run(frame, header, $order, exact, reader, writer)
                }
                _ => {
                    let fault = fault(HeaderField::Placer);
                    send(writer, &OutboundRef::Fault { frame, fault })?;
                    until_hello(reader, writer)
                }
            }
        };
    }
    match order {
        "tias" => placers!(gantry_core::Tias::default()),
        "las" => placers!(gantry_core::Las::new(gantry_core::LasConfig::default())),
        "fifo" => placers!(gantry_core::Fifo),
        _ => {
            let fault = fault(HeaderField::Order);
            send(writer, &OutboundRef::Fault { frame, fault })?;
            until_hello(reader, writer)
        }
    }
}

fn serve(events: &str, answers: &str) -> Result<(), String> {
    let input = std::fs::File::open(events).map_err(|e| format!("{events}: {e}"))?;
    let output = std::fs::File::create(answers).map_err(|e| format!("{answers}: {e}"))?;
    let mut reader = Reader::new(Io(std::io::BufReader::new(input)));
    let mut writer = Writer::new(Io(std::io::BufWriter::new(output)));
    let mut next = until_hello(&mut reader, &mut writer)?;
    while let Some((frame, header)) = next {
        next = dispatch(frame, &header, &mut reader, &mut writer)?;
    }
    writer.flush().map_err(|e| format!("{answers}: {e:?}"))
}

/// A copy of an inbound stream with bad frames mixed in, fixed by `seed`: before about one
/// frame in eight, a corrupted copy of it (one byte changed, or cut short), and at the end a
/// frame of another wire version, an over-long frame and an unfinished one. A correct
/// device answers each bad frame with a `Fault` and every good frame as on the clean stream.
fn corrupt(events: &[u8], seed: u64) -> Vec<u8> {
    let mut rng = SeededRng::new(seed);
    let mut out = Vec::with_capacity(events.len() * 2);
    for frame in events.split_inclusive(|&b| b == 0) {
        if frame.len() > 2 && rng.below(8) == 0 {
            let mut bad = frame.to_vec();
            if rng.below(2) == 0 {
                let at = rng.below(frame.len() as u32 - 1) as usize;
                bad[at] = bad[at].wrapping_add(1 + rng.below(254) as u8);
                if bad[at] == 0 {
                    bad[at] = 1;
                }
            } else {
                bad.truncate(1 + rng.below(frame.len() as u32 - 2) as usize);
                bad.push(0);
            }
            out.extend_from_slice(&bad);
        }
        out.extend_from_slice(frame);
    }
    // Another version: a valid frame (CRC included) whose version byte is not WIRE_VERSION.
    let mut payload = vec![wire::WIRE_VERSION.wrapping_add(1), 0];
    payload.extend_from_slice(&wire::FRAME_CRC.checksum(&payload).to_le_bytes());
    out.extend_from_slice(&cobs_encode(&payload));
    out.push(0);
    // Longer than the receive buffer, then a frame the stream ends inside.
    out.extend(std::iter::repeat_n(0x41, IN_FRAME_BYTES + 10));
    out.push(0);
    out.extend_from_slice(&[0x05, 0x01, 0x02]);
    out
}

/// COBS byte stuffing (no delimiter): every run of up to 254 non-zero bytes behind its
/// length code.
fn cobs_encode(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8];
    let mut code_at = 0;
    for &b in data {
        if b == 0 || out.len() - code_at == 255 {
            out[code_at] = (out.len() - code_at) as u8;
            code_at = out.len();
            out.push(0);
            if b == 0 {
                continue;
            }
        }
        out.push(b);
    }
    out[code_at] = (out.len() - code_at) as u8;
    out
}

/// The stream with its first `Hello` naming `order` and `placer` (the events unchanged).
fn retarget(events: &[u8], order: &str, placer: &str) -> Result<Vec<u8>, String> {
    let mut frames = events.split_inclusive(|&b| b == 0);
    let first = frames.next().ok_or("empty stream")?;
    let mut body = first.strip_suffix(&[0]).unwrap_or(first).to_vec();
    let Ok(Inbound::Hello(mut header)) = wire::decode::<Inbound>(&mut body) else {
        return Err("the stream does not start with a Hello".into());
    };
    header.order = order
        .try_into()
        .map_err(|_| format!("name too long: {order}"))?;
    header.placer = placer
        .try_into()
        .map_err(|_| format!("name too long: {placer}"))?;
    let mut buf = [0u8; IN_FRAME_BYTES];
    let frame = wire::encode(&Inbound::Hello(header), &mut buf).ok_or("header too large")?;
    let mut out = frame.to_vec();
    for f in frames {
        out.extend_from_slice(f);
    }
    Ok(out)
}

/// `None` when the two streams are byte-identical, else where they first differ.
fn diff(expected: &[u8], actual: &[u8]) -> Option<String> {
    if expected == actual {
        return None;
    }
    let mut a = expected.split_inclusive(|&b| b == 0);
    let mut b = actual.split_inclusive(|&b| b == 0);
    let mut offset = 0;
    for index in 0.. {
        let (x, y) = (a.next(), b.next());
        if x != y {
            return Some(format!(
                "first difference at frame {index} (byte {offset}): expected {x:02x?}, actual {y:02x?}"
            ));
        }
        offset += x.map_or(0, <[u8]>::len);
    }
    None
}

fn read(path: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| format!("{path}: {e}"))?;
    Ok(bytes)
}

fn write(path: &str, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{path}: {e}"))
}

const USAGE: &str = "usage: serve EVENTS ANSWERS | corrupt EVENTS OUT SEED | retarget EVENTS OUT ORDER PLACER | diff EXPECTED ACTUAL";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["serve", events, answers] => serve(events, answers),
        ["corrupt", events, out, seed] => seed
            .parse()
            .map_err(|e| format!("seed: {e}"))
            .and_then(|seed| write(out, &corrupt(&read(events)?, seed))),
        ["retarget", events, out, order, placer] => {
            read(events).and_then(|s| write(out, &retarget(&s, order, placer)?))
        }
        ["diff", expected, actual] => read(expected).and_then(|a| match diff(&a, &read(actual)?) {
            None => Ok(()),
            Some(d) => Err(format!("{expected} vs {actual}: {d}")),
        }),
        _ => Err(USAGE.into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gantry-firmware-reference: {e}");
            ExitCode::FAILURE
        }
    }
}
