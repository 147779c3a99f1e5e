//! Frame streams for firmware (`gantry frames`): a recording made with the firmware's
//! capacities (`gantry simulate --capacities firmware --record FILE`) as the inbound frames a
//! device reads ([`events`]) and the outbound frames x86 answered ([`expected`]); the host's
//! reference device loop ([`serve`], the same core code the firmware runs, for streams with
//! bad frames); deterministic corruption of a stream ([`corrupt`]); and a comparison that
//! names the first frame that differs ([`diff`]). The recording format is unchanged: this
//! converts it. Codec: `gantry_core::wire`, over `std::io` through `embedded-io-adapters`.

use crate::cluster::ClusterSpec;
use crate::record::{Recording, describe_event};
use crate::registry::{AnyOrder, AnyPlacer, CapacitySet, OrderKind, PlacerKind};
use clap::ValueEnum;
use gantry_core::wire::{
    self, Capacities, ClusterShape, FIRMWARE_DECISIONS, FIRMWARE_GANG, FIRMWARE_GPUS,
    FIRMWARE_JOBS, Fault, FrameReader, FrameWriter, HeaderField, Inbound, Name, Outbound,
    OutboundRef, StreamHeader, WriteError,
};
use gantry_core::{Decision, LinkWeights, Scheduler, SeededRng, Topology};

/// The scheduler a firmware-capacity stream runs on.
pub type FirmwareScheduler =
    Scheduler<AnyOrder, AnyPlacer<FIRMWARE_GPUS>, FIRMWARE_GPUS, FIRMWARE_JOBS, FIRMWARE_GANG>;
/// An outbound message of a firmware-capacity stream, decoded.
pub type FirmwareOutbound = Outbound<FIRMWARE_GANG, FIRMWARE_DECISIONS>;
/// Receive buffer of the firmware and of [`serve`]: the longest inbound frame accepted.
pub const INBOUND_FRAME_BYTES: usize = 256;
/// Encode buffer for outbound frames: the largest outcome of the firmware's capacities.
pub const OUTBOUND_FRAME_BYTES: usize = wire::max_frame_bytes(wire::max_outcome_message_bytes(
    FIRMWARE_GANG,
    FIRMWARE_DECISIONS,
));

/// Why a frame stream could not be made or compared.
#[derive(Debug, thiserror::Error)]
pub enum FramesError {
    /// The recording was not made with the firmware's capacities.
    #[error(
        "the recording has capacities {0:?}; record with `gantry simulate --capacities firmware` (the firmware's {1:?})"
    )]
    NotFirmwareCapacities([u32; 3], [u32; 3]),
    /// The order folds instants into one pass (a `tiresias-*` copy): its recorded calls are
    /// not plain `handle` calls.
    #[error("order {0:?} batches instants (handle_deferred); only gantry's own orders stream")]
    BatchedOrder(OrderKind),
    /// The run gave the queue head a reservation (`--reserve-head`), which a firmware
    /// stream's header does not carry: the device would decide with its order's own rule.
    #[error("the recording was made with --reserve-head; a firmware stream has no such setting")]
    ReserveHead,
    /// The run changed TIAS's constants (`--tias-config`); a firmware runs its order with
    /// the defaults, and a stream's header carries no configuration.
    #[error("the recording was made with --tias-config; a firmware stream has no such setting")]
    TiasConfig,
    /// A name does not fit the header.
    #[error("name {0:?} is longer than a stream header holds")]
    Name(String),
    /// A frame did not fit its buffer (a bug: the buffers are sized for the worst case).
    #[error("entry {0}: frame larger than {OUTBOUND_FRAME_BYTES} bytes")]
    TooLarge(usize),
    /// Reading or writing failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The kebab-case name the CLI uses for an order or placer.
fn cli_name(value: &impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

fn name(text: &str) -> Result<Name, FramesError> {
    Name::try_from(text).map_err(|_| FramesError::Name(text.to_string()))
}

/// The stream header for a recording made with the firmware's capacities.
pub fn stream_header(recording: &Recording) -> Result<StreamHeader, FramesError> {
    let h = &recording.header;
    if h.capacity_set() != Some(CapacitySet::Firmware) {
        return Err(FramesError::NotFirmwareCapacities(
            h.capacities,
            CapacitySet::Firmware.as_array(),
        ));
    }
    if h.order.batches_instants() {
        return Err(FramesError::BatchedOrder(h.order));
    }
    if h.config.reserve_head {
        return Err(FramesError::ReserveHead);
    }
    if h.config.tias.is_some() {
        return Err(FramesError::TiasConfig);
    }
    Ok(StreamHeader {
        capacities: Capacities::FIRMWARE,
        cluster: ClusterShape {
            racks: h.cluster.racks,
            machines_per_rack: h.cluster.machines_per_rack,
            gpus_per_machine: h.cluster.gpus_per_machine,
        },
        link_weights: *LinkWeights::PROXIMITY_DRL.integer(),
        order: name(&cli_name(&h.order))?,
        placer: name(&cli_name(&h.placer))?,
        seed: h.config.seed,
        min_run: gantry_core::DurationMs(h.config.min_run_ms),
    })
}

fn push_frame<T: serde::Serialize>(
    out: &mut Vec<u8>,
    message: &T,
    entry: usize,
) -> Result<(), FramesError> {
    let mut buf = [0u8; OUTBOUND_FRAME_BYTES];
    let frame = wire::encode(message, &mut buf).ok_or(FramesError::TooLarge(entry))?;
    out.extend_from_slice(frame);
    Ok(())
}

/// The inbound stream: the header, then one event frame per recorded `handle` call.
pub fn events(recording: &Recording) -> Result<Vec<u8>, FramesError> {
    let mut out = Vec::new();
    push_frame(&mut out, &Inbound::Hello(stream_header(recording)?), 0)?;
    for (i, e) in recording.entries.iter().enumerate() {
        let message = Inbound::Event {
            now: e.now,
            event: e.event,
        };
        push_frame(&mut out, &message, i)?;
    }
    Ok(out)
}

/// The outbound stream x86 produced: `Ready` for the header, then each recorded call's
/// error or decisions, exactly as a device must answer them.
pub fn expected(recording: &Recording) -> Result<Vec<u8>, FramesError> {
    stream_header(recording)?;
    let mut out = Vec::new();
    let ready: OutboundRef<'_, FIRMWARE_GANG> = OutboundRef::Ready { frame: 0 };
    push_frame(&mut out, &ready, 0)?;
    for (i, e) in recording.entries.iter().enumerate() {
        let message = OutboundRef::Outcome {
            frame: i as u32 + 1,
            error: e.error,
            decisions: &e.decisions,
        };
        push_frame(&mut out, &message, i)?;
    }
    Ok(out)
}

/// What [`serve`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServeSummary {
    /// Inbound frames read (bad ones included).
    pub frames: u32,
    /// Of those, frames answered with a `Fault`.
    pub faults: u32,
}

/// Builds the scheduler a header asks for, or says why not.
fn open_stream(header: &StreamHeader) -> Result<Box<FirmwareScheduler>, Fault> {
    if let Some(field) = header.mismatch(
        &Capacities::FIRMWARE,
        LinkWeights::PROXIMITY_DRL.integer(),
        header.order.as_str(),
        header.placer.as_str(),
    ) {
        return Err(Fault::Mismatch(field));
    }
    let order = OrderKind::from_str(header.order.as_str(), false)
        .ok()
        .filter(|o| !o.batches_instants())
        .ok_or(Fault::Mismatch(HeaderField::Order))?;
    let placer = PlacerKind::from_str(header.placer.as_str(), false)
        .map_err(|_| Fault::Mismatch(HeaderField::Placer))?;
    let c = header.cluster;
    let spec = ClusterSpec {
        racks: c.racks,
        machines_per_rack: c.machines_per_rack,
        gpus_per_machine: c.gpus_per_machine,
    };
    let topology: Topology<FIRMWARE_GPUS> = spec.topology().map_err(Fault::Topology)?;
    let order = AnyOrder::new(order);
    let config = gantry_core::SchedulerConfig::for_order(&order).with_min_run(header.min_run);
    Ok(Box::new(Scheduler::with_config(
        topology,
        order,
        AnyPlacer::new(placer, header.seed),
        config,
    )))
}

/// The reference device: reads inbound frames, answers each as the firmware does (the
/// same core code: `wire::FrameReader`, `wire::answer_event`, `wire::FrameWriter`), so its
/// output is what a correct device writes for any stream, bad frames included.
pub fn serve<R, W>(reader: R, writer: W) -> Result<ServeSummary, FramesError>
where
    R: embedded_io::Read<Error = std::io::Error>,
    W: embedded_io::Write<Error = std::io::Error>,
{
    let mut reader = FrameReader::<_, INBOUND_FRAME_BYTES>::new(reader);
    let mut writer = FrameWriter::<_, OUTBOUND_FRAME_BYTES>::new(writer);
    let mut device: Option<Box<FirmwareScheduler>> = None;
    let mut out = heapless::Vec::<Decision<FIRMWARE_GANG>, FIRMWARE_DECISIONS>::new();
    let mut summary = ServeSummary::default();
    let send = |writer: &mut FrameWriter<W, OUTBOUND_FRAME_BYTES>,
                message: &OutboundRef<'_, FIRMWARE_GANG>,
                frame: u32| match writer.send(message) {
        Ok(_) => Ok(()),
        Err(WriteError::Io(e)) => Err(FramesError::Io(e)),
        Err(WriteError::Closed) => Err(FramesError::Io(std::io::ErrorKind::WriteZero.into())),
        Err(WriteError::TooLarge) => Err(FramesError::TooLarge(frame as usize)),
    };
    while let Some(received) = reader.next_frame::<Inbound>()? {
        summary.frames += 1;
        let frame = received.frame;
        let fault = match received.message {
            Err(e) => Some(Fault::Frame(e)),
            Ok(Inbound::Hello(header)) => match open_stream(&header) {
                Ok(s) => {
                    device = Some(s);
                    send(&mut writer, &OutboundRef::Ready { frame }, frame)?;
                    None
                }
                Err(fault) => {
                    device = None;
                    Some(fault)
                }
            },
            Ok(Inbound::Event { now, event }) => match device.as_deref_mut() {
                Some(s) => {
                    let answer = wire::answer_event(s, frame, now, event, &mut out);
                    send(&mut writer, &answer, frame)?;
                    None
                }
                None => Some(Fault::NoStream),
            },
        };
        if let Some(fault) = fault {
            summary.faults += 1;
            send(&mut writer, &OutboundRef::Fault { frame, fault }, frame)?;
        }
    }
    writer.flush()?;
    Ok(summary)
}

/// A copy of an inbound stream with bad frames mixed in, fixed by `seed`: before about one
/// frame in eight, a corrupted copy of it (one byte changed, or cut short), and at the end a
/// frame of another wire version, an over-long frame and an unfinished one. A correct
/// device answers each bad frame with a `Fault` and every good frame as on the clean stream.
pub fn corrupt(events: &[u8], seed: u64) -> Vec<u8> {
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
    // Another version: a valid frame whose version byte is the next one.
    let mut payload = vec![wire::WIRE_VERSION.wrapping_add(1), 0];
    payload.extend_from_slice(&wire::FRAME_CRC.checksum(&payload).to_le_bytes());
    let mut stuffed = vec![0u8; payload.len() + 2];
    let n = cobs::encode(&payload, &mut stuffed);
    out.extend_from_slice(&stuffed[..n]);
    out.push(0);
    // Longer than the receive buffer, then a frame the stream ends inside.
    out.extend(std::iter::repeat_n(0x41, INBOUND_FRAME_BYTES + 10));
    out.push(0);
    out.extend_from_slice(&[0x05, 0x01, 0x02]);
    out
}

/// The first frame where two outbound streams differ.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameDifference {
    /// Index of the frame (0-based) in the streams.
    pub index: usize,
    /// Byte offset of the frame in the expected stream.
    pub offset: usize,
    /// The expected frame, described.
    pub expected: String,
    /// The actual frame, described.
    pub actual: String,
}

impl std::fmt::Display for FrameDifference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "first difference at frame {} (byte {}):\n  expected: {}\n  actual:   {}",
            self.index, self.offset, self.expected, self.actual
        )
    }
}

fn describe(frame: Option<&[u8]>) -> String {
    let Some(frame) = frame else {
        return "(stream ended)".to_string();
    };
    let mut body = frame.strip_suffix(&[0]).unwrap_or(frame).to_vec();
    match wire::decode::<FirmwareOutbound>(&mut body) {
        Ok(Outbound::Ready { frame }) => format!("ready (answers frame {frame})"),
        Ok(Outbound::Fault { frame, fault }) => format!("fault {fault:?} (frame {frame})"),
        Ok(Outbound::Outcome {
            frame,
            error: Some(e),
            ..
        }) => format!("error: {e} (frame {frame})"),
        Ok(Outbound::Outcome {
            frame, decisions, ..
        }) => format!("{decisions:?} (frame {frame})"),
        Err(e) => format!("undecodable: {e}: {frame:02x?}"),
    }
}

/// `None` when the two outbound streams are byte-identical, else the first differing frame.
pub fn diff(expected: &[u8], actual: &[u8]) -> Option<FrameDifference> {
    if expected == actual {
        return None;
    }
    let mut a = expected.split_inclusive(|&b| b == 0);
    let mut b = actual.split_inclusive(|&b| b == 0);
    let mut offset = 0;
    for index in 0.. {
        let (x, y) = (a.next(), b.next());
        if x != y {
            return Some(FrameDifference {
                index,
                offset,
                expected: describe(x),
                actual: describe(y),
            });
        }
        offset += x.map_or(0, <[u8]>::len);
    }
    None
}

/// Describes an inbound stream, one line per frame (for `gantry frames dump`).
pub fn dump_events(events: &[u8]) -> String {
    let mut reader = FrameReader::<_, INBOUND_FRAME_BYTES>::new(events);
    let mut s = String::new();
    while let Ok(Some(r)) = reader.next_frame::<Inbound>() {
        let line = match r.message {
            Ok(Inbound::Hello(h)) => format!("hello {h:?}"),
            Ok(Inbound::Event { now, event }) => {
                format!("t={}ms {}", now.0, describe_event(&event))
            }
            Err(e) => format!("bad frame: {e}"),
        };
        s += &format!("{:>7} {line}\n", r.frame);
    }
    s
}

#[cfg(test)]
mod tests;
