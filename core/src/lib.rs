#![doc = include_str!("../README.md")]
//!
//! ## Design
//!
//! The scheduling core of gantry: which deep-learning job runs next, on which GPUs, and in
//! what order the tasks of a DAG-shaped workflow run. It is `#![no_std]`, allocation-free and
//! free of `unsafe`, so the same code runs in appliance firmware, in the host simulator and in
//! bit-for-bit replays on a workstation.
//!
//! Principles (see `ARCHITECTURE.md`):
//! - **Memory is inline.** Every collection has a const-generic capacity; a full one hands the
//!   item back (`Err(JobTableFull(spec))`), never panics, never drops.
//! - **Time is passed in.** [`TimeMs`] comes with every event; the core never reads a clock.
//!   Arithmetic on time saturates.
//! - **Deterministic.** Every order is total (ties broken by id); randomness comes from a
//!   [`SeededRng`] seeded by the caller; floating point goes through `libm`.
//! - **One entry point.** [`Scheduler::handle`] takes an [`Event`] and appends
//!   [`Decision`]s to a caller-provided buffer; errors are typed ([`SchedError`]) and leave
//!   the state unchanged.
//! - **Extension points are traits**, statically dispatched: [`JobOrder`] (which job next) and
//!   [`Placer`] (which GPU next, one at a time).
#![no_std]
#![forbid(unsafe_code)]

mod any_error;
mod avl;
#[cfg(feature = "dag")]
pub mod dag;
#[cfg(feature = "snapshot")]
mod decode;
pub mod error;
pub mod event;
pub mod ids;
pub mod job;
mod job_table;
pub mod order;
pub mod placement;
mod rank;
pub mod rng;
pub mod scheduler;
mod slot;
mod sort;
pub mod time;
mod timers;
pub mod topology;
pub mod wire;

#[cfg(feature = "wire")]
/// The I/O traits the wire format reads and writes through (`FrameReader`, `FrameWriter`).
pub use embedded_io;
/// The fixed-capacity collections of the API (`heapless::Vec` is the decision buffer):
/// re-exported so a firmware uses exactly the version the core was built with.
pub use heapless;

pub use any_error::Error;
pub use error::SchedError;
pub use event::{Decision, Event, PreemptReason, RejectReason};
pub use ids::{GpuId, JobId, MachineId, RackId};
pub use job::{CommProfile, Job, JobSpec, JobState, LiveJobs, PreemptionClass};
pub use order::{
    DeadlineSafety, Edf, EpochEffect, Fifo, HeadOfLine, HopelessPolicy, JobOrder, KeyChanges, Las,
    LasConfig, LasConfigError, LengthMetric, OrderHooks, Preemption, PriorityKey,
    RelaxedDeadlinePlacement, Sjf, Srtf, Standing, Tias, TiasConfig, WindowShareSketch,
};
pub use placement::{
    BestFit, ExactOptimal, FirstFit, GpuMask, GpuScorer, GpuSet, LoadBalance, OptimalConfig,
    OptimalPlan, OptimalStats, PlacementTally, PlacementView, Placer, ProximityGreedy,
    RandomPlacer, ScoreError, ScoreFault, ScoredPlacer, optimal_cost, optimal_placement,
};
pub use rng::SeededRng;
#[cfg(feature = "reserve")]
pub use scheduler::Reservation;
#[cfg(feature = "snapshot")]
pub use scheduler::snapshot::{
    self, MAX_SNAPSHOT_BYTES, SNAPSHOT_VERSION, SnapshotCapacities, SnapshotError,
};
pub use scheduler::{
    DeadlineAdmission, HandleOutcome, InvariantViolation, Scheduler, SchedulerConfig,
};
pub use time::{DurationMs, TimeMs};
pub use topology::{CommCost, Levels, LinkWeights, Topology, TopologyError};
pub use wire::{FirmwareDecisions, FirmwareScheduler};
