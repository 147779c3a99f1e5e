//! Named job orders and placers for the CLI and the simulator.
//!
//! The core dispatches statically (`Scheduler<O: JobOrder, P: Placer>`); the host picks one at
//! run time from a name, so it wraps the core's types in enums whose trait impls `match` on
//! the variant. Adding an order = one variant here plus one arm per method.

use crate::learn::scorer::{DEFAULT_PPO_MODEL, TractScorer};
use gantry_core::order::{
    CompatPolicy, Edf, Fifo, Las, LasConfig, LengthMetric, Sjf, Srtf, Tias, TiasConfig,
    TiresiasCompat,
};
use gantry_core::order::{HeadOfLine, JobOrder, OrderHooks, Preemption, PriorityKey};
use gantry_core::placement::ScoredPlacer;
use gantry_core::placement::{
    BestFit, ExactOptimal, FirstFit, LoadBalance, OptimalConfig, PlacementView, Placer,
    ProximityGreedy, RandomPlacer,
};
use gantry_core::{GpuId, Job, RejectReason, TimeMs};
use std::path::Path;

/// Largest cluster the host simulates.
pub const HOST_GPUS: usize = 2048;
/// Largest number of live (queued or running) jobs in the host's core; the simulator holds
/// later arrivals back and resubmits them when the table has room.
pub const HOST_JOBS: usize = 32_768;
/// Largest gang (Philly's largest jobs ask for 128 GPUs).
pub const HOST_GANG: usize = 128;

/// Which core capacities a simulation runs with: the host's, or the reference firmware
/// build's (`gantry_core::wire::FIRMWARE_*`: 64 GPUs, 256 live jobs, gangs of 8), so a
/// recording for the firmware meets a full job table or an oversized gang exactly where the
/// firmware does.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CapacitySet {
    /// 2,048 GPUs, 32,768 live jobs, gangs of 128.
    #[default]
    Host,
    /// 64 GPUs, 256 live jobs, gangs of 8 (the firmware under QEMU, the C ABI).
    Firmware,
}

impl CapacitySet {
    /// `[GPUs, live jobs, gang]`, as a recording's header stores them.
    pub fn as_array(self) -> [u32; 3] {
        match self {
            CapacitySet::Host => [HOST_GPUS as u32, HOST_JOBS as u32, HOST_GANG as u32],
            CapacitySet::Firmware => [
                gantry_core::wire::FIRMWARE_GPUS as u32,
                gantry_core::wire::FIRMWARE_JOBS as u32,
                gantry_core::wire::FIRMWARE_GANG as u32,
            ],
        }
    }

    /// The set whose array this is.
    pub fn from_array(capacities: [u32; 3]) -> Option<Self> {
        [CapacitySet::Host, CapacitySet::Firmware]
            .into_iter()
            .find(|set| set.as_array() == capacities)
    }

    /// The largest cluster it holds.
    pub fn gpus(self) -> usize {
        self.as_array()[0] as usize
    }
}

/// A job order by name.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum OrderKind {
    /// First in, first out (blocks at the head).
    Fifo,
    /// ORACLE shortest job first (reads the true duration), non-preemptive.
    Sjf,
    /// ORACLE shortest remaining time first (reads the true duration), preemptive.
    Srtf,
    /// ORACLE shortest remaining GPU·time first (Tiresias's `shortest-gpu`).
    SrtfGpu,
    /// Earliest deadline first, preemptive; jobs without deadline after, by arrival.
    Edf,
    /// Tiresias discretized 2D-LAS (attained GPU·time), preemptive.
    Las,
    /// Discretized 1D LAS (attained time only; Tiresias's `dlas`).
    LasTime,
    /// TIAS: 2D-LAS plus deadline urgency learned online (information-agnostic).
    Tias,
    /// Copy of the Tiresias simulator's `dlas`, quirks included (cross-check only).
    TiresiasDlas,
    /// Copy of the Tiresias simulator's `dlas-gpu`, quirks included (cross-check only).
    TiresiasDlasGpu,
    /// Copy of the Tiresias simulator's `shortest` (ORACLE; cross-check only).
    TiresiasShortest,
    /// Copy of the Tiresias simulator's `shortest-gpu` (ORACLE; cross-check only).
    TiresiasShortestGpu,
}

impl OrderKind {
    /// Whether the simulator folds every event of one instant into a single scheduling pass
    /// for this order, as the Tiresias simulator does. True for the `tiresias-*` copies;
    /// gantry's own orders schedule after every event.
    pub fn batches_instants(self) -> bool {
        matches!(
            self,
            OrderKind::TiresiasDlas
                | OrderKind::TiresiasDlasGpu
                | OrderKind::TiresiasShortest
                | OrderKind::TiresiasShortestGpu
        )
    }
}

/// A placer by name.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum PlacerKind {
    /// Lowest free GPU id.
    FirstFit,
    /// Consolidating best fit.
    BestFit,
    /// Uniformly random usable GPU (seeded).
    Random,
    /// Proximity-DRL's LoadBalance: worst-fit descent rack → machine.
    LoadBalance,
    /// Smallest added communication cost (Proximity-DRL's proximity heuristic).
    Greedy,
    /// The minimum-communication-cost set for the whole job (exact search).
    Optimal,
    /// The learned PPO scorer (`models/proximity_ppo.onnx`, run by tract); a missing or
    /// broken model falls back to greedy and says so once.
    Ppo,
}

/// Any job order the host knows, statically dispatched by `match`.
#[derive(Clone, Debug)]
pub enum AnyOrder {
    /// See [`Fifo`].
    Fifo(Fifo),
    /// See [`Sjf`].
    Sjf(Sjf),
    /// See [`Srtf`].
    Srtf(Srtf),
    /// See [`Edf`].
    Edf(Edf),
    /// See [`Las`].
    Las(Las),
    /// See [`Tias`] (boxed: its service sketch is about 2 KB).
    Tias(Box<Tias>),
    /// See [`TiresiasCompat`].
    Tiresias(TiresiasCompat),
}

impl AnyOrder {
    /// The order named `kind`, with its default configuration.
    pub fn new(kind: OrderKind) -> Self {
        let mut las_time = LasConfig::default();
        las_time.service = LengthMetric::Time;
        match kind {
            OrderKind::Fifo => AnyOrder::Fifo(Fifo),
            OrderKind::Sjf => AnyOrder::Sjf(Sjf::default()),
            OrderKind::Srtf => AnyOrder::Srtf(Srtf::default()),
            OrderKind::SrtfGpu => AnyOrder::Srtf(Srtf {
                metric: LengthMetric::GpuTime,
            }),
            OrderKind::Edf => AnyOrder::Edf(Edf),
            OrderKind::Las => AnyOrder::Las(Las::new(LasConfig::default())),
            OrderKind::LasTime => AnyOrder::Las(Las::new(las_time)),
            OrderKind::Tias => AnyOrder::Tias(Box::new(Tias::new(TiasConfig::default()))),
            OrderKind::TiresiasDlas => compat(CompatPolicy::Dlas(LengthMetric::Time)),
            OrderKind::TiresiasDlasGpu => compat(CompatPolicy::Dlas(LengthMetric::GpuTime)),
            OrderKind::TiresiasShortest => compat(CompatPolicy::Shortest(LengthMetric::Time)),
            OrderKind::TiresiasShortestGpu => compat(CompatPolicy::Shortest(LengthMetric::GpuTime)),
        }
    }
}

fn compat(policy: CompatPolicy) -> AnyOrder {
    AnyOrder::Tiresias(TiresiasCompat::new(policy))
}

macro_rules! each_order {
    ($self:expr, $o:ident => $body:expr) => {
        match $self {
            AnyOrder::Fifo($o) => $body,
            AnyOrder::Sjf($o) => $body,
            AnyOrder::Srtf($o) => $body,
            AnyOrder::Edf($o) => $body,
            AnyOrder::Las($o) => $body,
            AnyOrder::Tias($o) => $body,
            AnyOrder::Tiresias($o) => $body,
        }
    };
}

impl JobOrder for AnyOrder {
    fn name(&self) -> &'static str {
        each_order!(self, o => o.name())
    }
    fn head_of_line(&self) -> HeadOfLine {
        each_order!(self, o => o.head_of_line())
    }
    fn preemption(&self) -> Preemption {
        each_order!(self, o => o.preemption())
    }
    fn time_driven(&self) -> bool {
        each_order!(self, o => o.time_driven())
    }
    fn hooks(&self) -> OrderHooks {
        each_order!(self, o => o.hooks())
    }
    fn refresh(&mut self, job: &mut Job, now: TimeMs) {
        each_order!(self, o => o.refresh(job, now))
    }
    fn key(&self, job: &Job, now: TimeMs) -> PriorityKey {
        each_order!(self, o => o.key(job, now))
    }
    fn reject(&self, job: &Job, now: TimeMs) -> Option<RejectReason> {
        each_order!(self, o => o.reject(job, now))
    }
    fn next_review(&self, job: &Job, now: TimeMs) -> Option<TimeMs> {
        each_order!(self, o => o.next_review(job, now))
    }
    fn on_finished(&mut self, job: &Job, now: TimeMs) {
        each_order!(self, o => o.on_finished(job, now))
    }
    fn epoch(&self) -> u32 {
        each_order!(self, o => o.epoch())
    }
    fn after_pass(&mut self, job: &mut Job, now: TimeMs) {
        each_order!(self, o => o.after_pass(job, now))
    }
}

/// Any placer the host knows, statically dispatched by `match`, for clusters of up to `G`
/// GPUs.
#[derive(Clone, Debug)]
pub enum AnyPlacer<const G: usize = HOST_GPUS> {
    /// See [`FirstFit`].
    FirstFit(FirstFit),
    /// See [`BestFit`].
    BestFit(BestFit),
    /// See [`RandomPlacer`].
    Random(RandomPlacer),
    /// See [`LoadBalance`].
    LoadBalance(LoadBalance),
    /// See [`ProximityGreedy`].
    Greedy(ProximityGreedy),
    /// See [`ExactOptimal`].
    Optimal(Box<ExactOptimal<G>>),
    /// See [`PpoPlacer`].
    Ppo(PpoPlacer<G>),
}

/// The learned placer: the core's [`ScoredPlacer`] over a [`TractScorer`]. A clone shares
/// the model's plan and starts with fresh fault counters.
pub struct PpoPlacer<const G: usize = HOST_GPUS>(pub Box<ScoredPlacer<TractScorer, G>>);

impl<const G: usize> PpoPlacer<G> {
    /// Loads the model at `path`; on failure says so once on stderr and places like
    /// proximity-greedy.
    pub fn load(path: &Path) -> Self {
        Self::from_scorer(TractScorer::load_or_fallback(path))
    }

    /// Wraps a scorer.
    pub fn from_scorer(scorer: TractScorer) -> Self {
        Self(Box::new(ScoredPlacer::named(scorer, "ppo")))
    }
}

impl<const G: usize> Clone for PpoPlacer<G> {
    fn clone(&self) -> Self {
        Self::from_scorer(self.0.scorer().clone())
    }
}

impl<const G: usize> std::fmt::Debug for PpoPlacer<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PpoPlacer")
            .field("scorer", self.0.scorer())
            .field("fallbacks", &self.0.fallbacks())
            .finish()
    }
}

impl<const G: usize> AnyPlacer<G> {
    /// The placer named `kind`; `seed` feeds randomised placers; `ppo` loads
    /// [`DEFAULT_PPO_MODEL`].
    pub fn new(kind: PlacerKind, seed: u64) -> Self {
        Self::with_model(kind, seed, Path::new(DEFAULT_PPO_MODEL))
    }

    /// As [`new`](Self::new), with the PPO model at `model`.
    pub fn with_model(kind: PlacerKind, seed: u64, model: &Path) -> Self {
        match kind {
            PlacerKind::Ppo => AnyPlacer::Ppo(PpoPlacer::load(model)),
            PlacerKind::FirstFit => AnyPlacer::FirstFit(FirstFit),
            PlacerKind::BestFit => AnyPlacer::BestFit(BestFit),
            PlacerKind::Random => AnyPlacer::Random(RandomPlacer::new(seed)),
            PlacerKind::LoadBalance => AnyPlacer::LoadBalance(LoadBalance),
            PlacerKind::Greedy => AnyPlacer::Greedy(ProximityGreedy),
            PlacerKind::Optimal => {
                AnyPlacer::Optimal(Box::new(ExactOptimal::new(OptimalConfig::default())))
            }
        }
    }
}

impl<const G: usize> Placer<G> for AnyPlacer<G> {
    fn name(&self) -> &'static str {
        match self {
            AnyPlacer::FirstFit(p) => Placer::<G>::name(p),
            AnyPlacer::BestFit(p) => Placer::<G>::name(p),
            AnyPlacer::Random(p) => Placer::<G>::name(p),
            AnyPlacer::LoadBalance(p) => Placer::<G>::name(p),
            AnyPlacer::Greedy(p) => Placer::<G>::name(p),
            AnyPlacer::Optimal(p) => Placer::<G>::name(&**p),
            AnyPlacer::Ppo(p) => Placer::<G>::name(&*p.0),
        }
    }
    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        match self {
            AnyPlacer::FirstFit(p) => p.pick(view),
            AnyPlacer::BestFit(p) => p.pick(view),
            AnyPlacer::Random(p) => p.pick(view),
            AnyPlacer::LoadBalance(p) => p.pick(view),
            AnyPlacer::Greedy(p) => p.pick(view),
            AnyPlacer::Optimal(p) => p.pick(view),
            AnyPlacer::Ppo(p) => p.0.pick(view),
        }
    }
}
