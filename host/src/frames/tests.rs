//! Frame streams from real recordings: the reference device answers every event exactly as
//! the simulator's core did, and bad frames change nothing.

use super::*;
use crate::record::{self, RecordHeader};
use crate::sample;
use crate::sim::{SimConfig, simulate_with_capacities};

/// A firmware-capacity recording of the bundled sample's first `jobs` jobs on 2×4×8.
fn recording(order: OrderKind, placer: PlacerKind, jobs: usize) -> Recording {
    let trace = sample::philly_sample(Some(jobs)).unwrap();
    let cluster: ClusterSpec = "2x4x8".parse().unwrap();
    let config = SimConfig::default();
    let out = simulate_with_capacities(
        &trace,
        cluster,
        order,
        placer,
        &config,
        CapacitySet::Firmware,
    )
    .unwrap();
    let header = RecordHeader::new("sample", cluster, order, placer, &config)
        .with_capacities(CapacitySet::Firmware);
    record::decode(&record::encode(&header, &out), "sample").unwrap()
}

fn serve_bytes(events: &[u8]) -> (Vec<u8>, ServeSummary) {
    use embedded_io_adapters::std::FromStd;
    let mut out = Vec::new();
    let summary = serve(FromStd::new(events), FromStd::new(&mut out)).unwrap();
    (out, summary)
}

/// The outcomes of an outbound stream, without frame indices (which shift when bad frames
/// are mixed in).
fn outcomes(stream: &[u8]) -> Vec<FirmwareOutbound> {
    let mut reader = FrameReader::<_, OUTBOUND_FRAME_BYTES>::new(stream);
    let mut all = Vec::new();
    while let Some(r) = reader.next_frame::<FirmwareOutbound>().unwrap() {
        match r.message.unwrap() {
            Outbound::Outcome {
                error, decisions, ..
            } => all.push(Outbound::Outcome {
                frame: 0,
                error,
                decisions,
            }),
            Outbound::Ready { .. } => all.push(Outbound::Ready { frame: 0 }),
            Outbound::Fault { .. } => {}
        }
    }
    all
}

#[test]
fn reference_device_answers_every_recorded_event_identically() {
    for (order, placer) in [
        (OrderKind::Tias, PlacerKind::BestFit),
        (OrderKind::Las, PlacerKind::Optimal),
        (OrderKind::Fifo, PlacerKind::Random),
    ] {
        let rec = recording(order, placer, 300);
        assert!(rec.entries.len() > 300, "{order:?}");
        assert_eq!(record::replay(&rec).unwrap().mismatch, None);
        let events = events(&rec).unwrap();
        let expected = expected(&rec).unwrap();
        let (answered, summary) = serve_bytes(&events);
        assert_eq!(summary.faults, 0);
        assert_eq!(summary.frames as usize, rec.entries.len() + 1);
        assert_eq!(diff(&expected, &answered), None, "{order:?} {placer:?}");
    }
}

#[test]
fn firmware_capacities_meet_a_full_table_and_oversized_gangs() {
    let rec = recording(OrderKind::Tias, PlacerKind::BestFit, 1_500);
    let errors: Vec<_> = rec.entries.iter().filter_map(|e| e.error).collect();
    assert!(
        errors
            .iter()
            .any(|e| matches!(e, gantry_core::SchedError::GangTooLarge { .. })),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| matches!(e, gantry_core::SchedError::JobTableFull(_))),
        "the sample's bursts fill 256 live jobs"
    );
}

#[test]
fn bad_frames_are_answered_with_faults_and_change_nothing() {
    let rec = recording(OrderKind::Las, PlacerKind::BestFit, 200);
    let events = events(&rec).unwrap();
    let (clean, _) = serve_bytes(&events);
    let noisy = corrupt(&events, 3);
    let (answered, summary) = serve_bytes(&noisy);
    assert!(summary.faults >= 5, "{summary:?}");
    assert_eq!(outcomes(&answered), outcomes(&clean));
    // The corruption is deterministic.
    assert_eq!(corrupt(&events, 3), noisy);
    assert_ne!(corrupt(&events, 4), noisy);
}

#[test]
fn streams_are_refused_for_other_builds() {
    let rec = recording(OrderKind::Fifo, PlacerKind::FirstFit, 20);
    let mut host = rec.clone();
    host.header = host.header.with_capacities(CapacitySet::Host);
    assert!(matches!(
        events(&host),
        Err(FramesError::NotFirmwareCapacities(..))
    ));
    // A run with TIAS's constants changed: the firmware would decide with the defaults.
    let mut tuned = recording(OrderKind::Tias, PlacerKind::BestFit, 20);
    tuned.header.config.tias = Some(crate::tias_config::TiasOverrides {
        deadline_weight: Some(2),
        ..Default::default()
    });
    assert!(matches!(
        stream_header(&tuned),
        Err(FramesError::TiasConfig)
    ));
    // A header for other capacities: a Fault, then every event a NoStream fault.
    let mut header = stream_header(&rec).unwrap();
    header.capacities.jobs = 512;
    let mut stream = Vec::new();
    push_frame(&mut stream, &Inbound::Hello(header), 0).unwrap();
    let tail = events(&rec).unwrap();
    let first_event = tail.iter().position(|&b| b == 0).unwrap() + 1;
    stream.extend_from_slice(&tail[first_event..]);
    let (answered, summary) = serve_bytes(&stream);
    assert_eq!(summary.faults, summary.frames);
    let mut reader = FrameReader::<_, OUTBOUND_FRAME_BYTES>::new(&answered[..]);
    let first = reader
        .next_frame::<FirmwareOutbound>()
        .unwrap()
        .unwrap()
        .message;
    assert_eq!(
        first,
        Ok(Outbound::Fault {
            frame: 0,
            fault: Fault::Mismatch(HeaderField::Capacities)
        })
    );
    let second = reader
        .next_frame::<FirmwareOutbound>()
        .unwrap()
        .unwrap()
        .message;
    assert_eq!(
        second,
        Ok(Outbound::Fault {
            frame: 1,
            fault: Fault::NoStream
        })
    );
}
