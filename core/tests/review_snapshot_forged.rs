//! Review 2026-12-03: `Scheduler::restore` / `restore_in_place` accept well-framed snapshots
//! whose state the scheduler could never reach, and the restored scheduler then loses GPUs or
//! jobs.
//!
//! The snapshot docs promise that a state which "breaks the scheduler's invariants" is
//! refused (`SnapshotError::Inconsistent`). The CRC is no authentication: anyone who can write
//! the checkpoint storage (or a buggy writer) can produce a frame with a valid CRC. Two gaps
//! in `check_invariants` (what restore relies on):
//!
//! 1. GPUs *beyond the topology* (index >= `topology.gpu_count()`, < `G`) may be owned and
//!    healthy: `check_invariants` walks all `G` owners and accepts an owner there, but
//!    `release` only frees owners inside the topology, so once that job finishes the GPU stays
//!    "busy" forever: `busy_gpu_count` never returns to 0, a non-preemptive order hands out
//!    one GPU fewer for ever (a job that needs the whole cluster never starts while every GPU
//!    is idle), and `check_invariants` itself fails after the finish.
//! 2. A *ghost* node in the ranking tree: a vacant slot whose `parent` link is not `NIL`.
//!    `Avl::check` walks only the nodes reachable from the root, so it passes, but
//!    `Avl::contains` says the slot is in the tree; the next job submitted into that slot is
//!    never inserted into the ranking (`Avl::insert` returns early) and never starts, though
//!    GPUs are free; `handle` returned `Ok`.
//!
//! The mirror structs below follow the snapshot's postcard layout field for field
//! (`StateRef` in core/src/snapshot.rs and the derives of `JobTable`, `Avl`, `RankIndex`,
//! `Timers`); heapless columns, as gantry-core's serde has no `alloc`.

use gantry_core::{
    Decision, Event, Fifo, FirstFit, GpuId, Job, JobId, JobSpec, JobState, LinkWeights, Scheduler,
    SchedulerConfig, SnapshotCapacities, TimeMs, Topology, wire,
};
use serde::{Deserialize, Serialize};

const NIL: u16 = u16::MAX;

/// A column as the snapshot writes it (serde without `alloc`: heapless).
type V<T> = heapless::Vec<T, 64>;

#[derive(Serialize, Deserialize, Debug)]
struct AvlM {
    left: V<u16>,
    right: V<u16>,
    parent: V<u16>,
    height: V<u8>,
    root: u16,
    len: usize,
}

#[derive(Serialize, Deserialize, Debug)]
struct TableM {
    jobs: V<Job>,
    prev: V<u16>,
    next: V<u16>,
    oldest: u16,
    newest: u16,
    free: u16,
    len: u16,
    by_id: AvlM,
}

#[derive(Serialize, Deserialize, Debug)]
struct EntriesM {
    class: V<u32>,
    primary: V<i64>,
    secondary: V<i64>,
    running_gpus: V<u16>,
    min_queued_gpus: V<u16>,
}

#[derive(Serialize, Deserialize, Debug)]
struct RankM {
    tree: AvlM,
    entries: EntriesM,
}

#[derive(Serialize, Deserialize, Debug)]
struct TimersM {
    heap: V<u16>,
    at: V<u64>,
    position: V<u16>,
}

/// `StateRef<Fifo, FirstFit, J>` as postcard writes it.
#[derive(Serialize, Deserialize, Debug)]
struct StateM {
    version: u8,
    capacities: SnapshotCapacities,
    topology: u32,
    order_name: heapless::String<24>,
    placer_name: heapless::String<24>,
    order: Fifo,
    placer: FirstFit,
    config: SchedulerConfig,
    table: TableM,
    rank: RankM,
    timers: TimersM,
    running: V<u16>,
    owner: V<u16>,
    healthy: V<bool>,
    last_now: TimeMs,
    epoch: u32,
    walking: bool,
    walk_next: u16,
    walk_epoch: u32,
    reject_due: V<u16>,
    placer_faults: u32,
}

type S = Scheduler<Fifo, FirstFit, 8, 8, 4>;
type Out = heapless::Vec<Decision<4>, 16>;

/// One machine of 4 GPUs under a scheduler built for up to 8.
fn topology() -> Topology<8> {
    Topology::uniform(1, 1, 4, LinkWeights::PROXIMITY_DRL).unwrap()
}

/// Decodes `s`'s snapshot, lets `forge` change it, and frames it again (valid CRC).
fn forged(s: &S, forge: impl FnOnce(&mut StateM)) -> Vec<u8> {
    let mut buf = vec![0u8; 1 << 16];
    let mut frame = s.snapshot(&mut buf).unwrap().to_vec();
    let body = frame.len() - 1; // without the delimiter
    let mut state: StateM = wire::decode(&mut frame[..body]).expect("mirror matches the layout");
    forge(&mut state);
    let mut out = vec![0u8; 1 << 16];
    wire::encode(&state, &mut out).unwrap().to_vec()
}

fn submit(s: &mut S, t: u64, id: u32, gpus: u16) -> Out {
    let mut out = Out::new();
    s.handle(
        TimeMs(t),
        Event::Submit(JobSpec::new(JobId(id), gpus)),
        &mut out,
    )
    .unwrap();
    out
}

#[test]
fn review_snapshot_owner_beyond_the_topology_leaks_a_gpu_forever() {
    let mut s: S = Scheduler::new(topology(), Fifo, FirstFit);
    submit(&mut s, 0, 1, 1); // job 1 runs on GPU 0 (slot 0)
    assert_eq!(s.placement_of(JobId(1)).as_slice(), &[GpuId(0)]);
    // Job 1 "holds" GPU 6 instead: a GPU this 4-GPU cluster does not have.
    let mut frame = forged(&s, |st| {
        st.owner[0] = NIL;
        st.owner[6] = 0;
        st.healthy[6] = true;
    });
    let Ok(mut r) = S::restore(topology(), &mut frame) else {
        return; // refused: what the docs promise
    };
    let mut out = Out::new();
    r.handle(TimeMs(1_000), Event::Finish(JobId(1)), &mut out)
        .unwrap();
    // Every GPU of the cluster is idle now; a job for the whole cluster must start.
    let started = submit(&mut r, 2_000, 2, 4);
    assert_eq!(
        (r.busy_gpu_count(), r.check_invariants(), started.len()),
        (0, Ok(()), 1),
        "restore accepted a GPU beyond the topology: after its job finished the scheduler still \
         counts it busy, and the 4-GPU job never starts on the 4 idle GPUs"
    );
}

#[test]
fn review_snapshot_ghost_node_in_the_ranking_loses_the_next_job() {
    let mut s: S = Scheduler::new(topology(), Fifo, FirstFit);
    submit(&mut s, 0, 1, 1); // slot 0
    submit(&mut s, 0, 2, 1); // slot 1
    submit(&mut s, 0, 3, 1); // slot 2
    let mut out = Out::new();
    s.handle(TimeMs(10), Event::Finish(JobId(2)), &mut out)
        .unwrap(); // slot 1 is vacant, first on the free list
    let mut frame = forged(&s, |st| {
        assert!(st.table.jobs[1].state() != JobState::Running);
        assert_eq!(st.table.free, 1);
        // A ghost: the vacant slot 1 "hangs" from the root without the root knowing.
        let root = st.rank.tree.root;
        assert!(root != NIL && root != 1);
        st.rank.tree.parent[1] = root;
    });
    let Ok(mut r) = S::restore(topology(), &mut frame) else {
        return; // refused: what the docs promise
    };
    // Two GPUs are idle; job 4 (1 GPU) is accepted into slot 1 and must start.
    let started = submit(&mut r, 20, 4, 1);
    assert_eq!(
        (started.len(), r.check_invariants()),
        (1, Ok(())),
        "restore accepted a ghost ranking node: job 4 was accepted (Ok) but never ranked, so \
         it never starts on the 2 idle GPUs ({} busy)",
        r.busy_gpu_count()
    );
}
