//! Review 2026-12-03: the C ABI promises that a snapshot of another build leaves the
//! scheduler unchanged, but the in-place restore behind it empties the scheduler.
//!
//! `core/ffi/include/gantry.h`: `GANTRY_STATUS_SNAPSHOT_OTHER_BUILD` = "A snapshot of another
//! build: other capacities, job order or placer; the scheduler is unchanged", and
//! `gantry_restore`: "A frame that is corrupt, of another version, build or cluster returns
//! its `GANTRY_STATUS_SNAPSHOT_*` status and changes nothing". `gantry_restore` is
//! `Scheduler::restore_in_place` plus `snapshot_status`, which maps
//! `SnapshotError::Mismatch(_)` to `SNAPSHOT_OTHER_BUILD`. But `restore_in_place` compares the
//! order and placer names only after it has overwritten the order, placer, job table, GPUs
//! and clock (`check_restored`), then `reset_state` leaves the scheduler *empty*: every live
//! job forgotten, every GPU "healthy and free" (failed ones included), time 0, and the
//! *other* build's order state kept. A C firmware that follows the header and carries on with
//! its "unchanged" scheduler then hands GPUs that are busy (or failed) to new jobs. The names
//! are the second and third fields of the snapshot, read before any state: checking them
//! there makes the promise true. (The same holds for `SNAPSHOT_CORRUPT` when the frame's CRC
//! and identity are good but its content does not decode: also emptied, also documented as
//! unchanged.)
//!
//! This test drives `restore_in_place` directly (an integration test of gantry-core cannot
//! link gantry-ffi); the C library's default build is TIAS + best-fit.

use gantry_core::{
    BestFit, Decision, Event, FirstFit, GpuId, JobId, JobSpec, LinkWeights, Scheduler,
    SnapshotError, Tias, TimeMs, Topology, wire::HeaderField,
};

type Out = heapless::Vec<Decision<4>, 16>;

fn topology() -> Topology<8> {
    Topology::uniform(1, 2, 4, LinkWeights::PROXIMITY_DRL).unwrap()
}

#[test]
fn review_ffi_restore_of_another_build_must_leave_the_scheduler_unchanged() {
    // The running firmware: TIAS + best-fit, two jobs running, GPU 7 failed.
    let mut s: Scheduler<Tias, BestFit, 8, 16, 4> =
        Scheduler::new(topology(), Tias::default(), BestFit);
    let mut out = Out::new();
    s.handle(TimeMs(0), Event::GpuDown(GpuId(7)), &mut out)
        .unwrap();
    for id in 1..=2 {
        s.handle(
            TimeMs(1_000),
            Event::Submit(JobSpec::new(JobId(id), 2)),
            &mut out,
        )
        .unwrap();
    }
    assert_eq!(
        (s.job_count(), s.busy_gpu_count(), s.healthy_gpu_count()),
        (2, 4, 7)
    );

    // A snapshot written by another build of the library (TIAS + first-fit), same
    // capacities and cluster.
    let other: Scheduler<Tias, FirstFit, 8, 16, 4> =
        Scheduler::new(topology(), Tias::default(), FirstFit);
    let mut buf = vec![0u8; 1 << 16];
    let mut frame = other.snapshot(&mut buf).unwrap().to_vec();

    let mut scratch: Scheduler<Tias, BestFit, 8, 16, 4> =
        Scheduler::new(topology(), Tias::default(), BestFit);
    let result = s.restore_in_place(&mut frame, &mut scratch);
    // gantry_restore returns GANTRY_STATUS_SNAPSHOT_OTHER_BUILD for this: "unchanged".
    assert_eq!(result, Err(SnapshotError::Mismatch(HeaderField::Placer)));
    assert_eq!(
        (
            s.job_count(),
            s.busy_gpu_count(),
            s.healthy_gpu_count(),
            s.now()
        ),
        (2, 4, 7, TimeMs(1_000)),
        "a restore refused as another build (C: SNAPSHOT_OTHER_BUILD, 'the scheduler is \
         unchanged') emptied the scheduler: its jobs are gone, the failed GPU is healthy again"
    );
}
