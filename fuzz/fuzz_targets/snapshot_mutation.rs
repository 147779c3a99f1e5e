//! Fuzzes restore with mutated snapshots: a valid snapshot of a scheduler that has run a
//! stream is changed byte by byte (set, xor, insert, delete) and framed again with a correct
//! CRC, so the mutations reach the state checks, not only the frame check. Then
//! `Scheduler::restore_in_place` into the scheduler that took the snapshot:
//!
//! - a refused snapshot must leave that scheduler byte-identical (its own snapshot);
//! - an accepted one must pass `check_invariants`, and then decide like the independent
//!   model of `core/tests/model/mod.rs` (built from the restored state) on the rest of the
//!   input's operations.
//!
//! Set `GANTRY_FUZZ_TALLY` to have each accepted mutated snapshot counted on stderr.
//!
//! Input: 4 header bytes (order, placer, tree shape, ops before the snapshot), the
//! operations before it, a mutation count and 4 bytes per mutation (offset, kind, value),
//! then the operations after it. Any panic is a finding.
#![no_main]

#[path = "../../core/tests/model/mod.rs"]
#[allow(dead_code)] // `check_stream_with` is the event_api target's
mod model;

use gantry_core::placement::{ExactOptimal, LoadBalance, OptimalConfig, ProximityGreedy};
use gantry_core::wire::{FRAME_CRC, WIRE_VERSION};
use gantry_core::{
    BestFit, Edf, Fifo, FirstFit, JobOrder, Las, LasConfig, LinkWeights, Placer, RandomPlacer,
    Scheduler, Sjf, Srtf, Tias, TiasConfig, Topology,
};
use libfuzzer_sys::fuzz_target;
use model::{G, GANG, J, OP_BYTES, check_stream_from};
use serde::{Serialize, de::DeserializeOwned};

const HEADER: usize = 4;
const MUTATION_BYTES: usize = 4;
/// Room for any snapshot of these capacities, framed.
const BUF: usize = 16 * 1024;

type Sched<O, P> = Scheduler<O, P, G, J, GANG>;

/// 1–2 racks × 1–2 machines × 1–4 GPUs (uniform; at most `G` = 16), Proximity-DRL's weights.
fn topology(shape: u8) -> Topology<G> {
    let racks = 1 + u16::from(shape & 1);
    let machines = 1 + u16::from(shape >> 1) % 2;
    let gpus = 1 + u16::from(shape >> 2) % 4;
    Topology::uniform(racks, machines, gpus, LinkWeights::PROXIMITY_DRL).unwrap()
}

/// The message of a snapshot frame (between the wire version and the CRC).
fn message(frame: &[u8]) -> Vec<u8> {
    let mut body = frame[..frame.len() - 1].to_vec();
    let n = cobs::decode_in_place(&mut body).unwrap();
    body[1..n - 4].to_vec()
}

/// `message` framed as the wire format does: version, message, CRC-32C, COBS, delimiter.
fn reframe(message: &[u8]) -> Vec<u8> {
    let mut payload = vec![WIRE_VERSION];
    payload.extend_from_slice(message);
    let crc = FRAME_CRC.checksum(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    let mut frame = vec![0u8; cobs::max_encoding_length(payload.len()) + 1];
    let n = cobs::encode(&payload, &mut frame);
    frame.truncate(n);
    frame.push(0);
    frame
}

/// Applies the mutations (offset, kind, value) to `m`.
fn mutate(m: &mut Vec<u8>, mutations: &[u8]) {
    for x in mutations.chunks_exact(MUTATION_BYTES) {
        if m.is_empty() {
            return;
        }
        let at = usize::from(u16::from_le_bytes([x[0], x[1]])) % m.len();
        match x[2] % 4 {
            0 => m[at] = x[3],
            1 => m[at] ^= x[3],
            2 => m.insert(at, x[3]),
            _ => {
                m.remove(at);
            }
        }
    }
}

fn run<O, P>(order: O, placer: P, data: &[u8])
where
    O: JobOrder + Serialize + DeserializeOwned + Clone,
    P: Placer<G> + Serialize + DeserializeOwned + Clone,
{
    let h = &data[..HEADER];
    let rest = &data[HEADER..];
    let before_len = (usize::from(h[3]) * OP_BYTES).min(rest.len());
    let (before, rest) = rest.split_at(before_len);
    let Some((&count, rest)) = rest.split_first() else {
        return;
    };
    let mutation_len = (usize::from(count % 16) * MUTATION_BYTES).min(rest.len());
    let (mutations, after) = rest.split_at(mutation_len);

    let topo = topology(h[2]);
    let mut core: Box<Sched<O, P>> =
        Box::new(Scheduler::new(topo.clone(), order.clone(), placer.clone()));
    // The stream before the snapshot, checked against the model as the event_api target does.
    if let Err(e) = check_stream_from::<_, _, _, 4>(&mut core, before) {
        panic!("model check before the snapshot: {e}");
    }
    let mut buf = vec![0u8; BUF];
    let original = core.snapshot(&mut buf).unwrap().to_vec();
    let mut m = message(&original);
    mutate(&mut m, mutations);
    let mut frame = reframe(&m);

    let mut scratch: Box<Sched<O, P>> = Box::new(Scheduler::new(topo, order, placer));
    match core.restore_in_place(&mut frame, &mut scratch) {
        Err(_) => {
            let mut again = vec![0u8; BUF];
            assert_eq!(
                core.snapshot(&mut again).unwrap(),
                &original[..],
                "a refused restore changed the scheduler"
            );
        }
        Ok(()) => {
            // `GANTRY_FUZZ_TALLY=1` with `-runs=0` over a corpus: how many inputs restored a
            // mutated snapshot (and went on to the model check), one line each.
            if m != message(&original) && std::env::var_os("GANTRY_FUZZ_TALLY").is_some() {
                eprintln!("tally: accepted a mutated snapshot");
            }
            if let Err(v) = core.check_invariants() {
                panic!("an accepted snapshot breaks an invariant: {v:?}");
            }
            if let Err(e) = check_stream_from::<_, _, _, 4>(&mut core, after) {
                panic!("model check after an accepted mutated snapshot: {e}");
            }
        }
    }
}

fn with_placer<O>(order: O, data: &[u8])
where
    O: JobOrder + Serialize + DeserializeOwned + Clone,
{
    match data[1] % 6 {
        0 => run(order, FirstFit, data),
        1 => run(order, BestFit, data),
        2 => run(order, RandomPlacer::new(u64::from(data[2])), data),
        3 => run(order, LoadBalance, data),
        4 => run(order, ProximityGreedy, data),
        _ => run(
            order,
            ExactOptimal::<G>::new(OptimalConfig::default()),
            data,
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < HEADER {
        return;
    }
    match data[0] % 7 {
        0 => with_placer(Fifo, data),
        1 => with_placer(Sjf::default(), data),
        2 => with_placer(Srtf::default(), data),
        3 => with_placer(Edf, data),
        4 => with_placer(Las::new(LasConfig::default()), data),
        5 => with_placer(Tias::default(), data),
        _ => with_placer(
            Tias::new(TiasConfig {
                min_samples: 2,
                table_min_samples: 4,
                ..TiasConfig::default()
            }),
            data,
        ),
    }
});
