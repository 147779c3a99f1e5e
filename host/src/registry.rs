//! The registry of job orders and placers by name (`--order`, `--placement`), for the
//! commands and the simulator, and the core capacity sets.
//!
//! The core dispatches statically (`Scheduler<O: JobOrder, P: Placer>`); the host picks one at
//! run time from a name, so it wraps the core's types in enums whose trait impls `match` on
//! the variant. Adding an order = one variant here plus one arm per method.

use crate::cluster::same_type::same_type_mask;
use crate::learn::scorer::{DEFAULT_PPO_MODEL, PolicyScorer};
use crate::mixed::hints::PlacementHints;
use crate::tias_config::{Invalid, TiasOverrides};
use gantry_core::order::{
    CompatPolicy, DeadlineSafety, Edf, Fifo, Las, LasConfig, LengthMetric, Sjf, Srtf, Tias,
    TiasConfig, TiresiasCompat,
};
use gantry_core::order::{EpochEffect, HeadOfLine, JobOrder, OrderHooks, Preemption, PriorityKey};
use gantry_core::placement::ScoredPlacer;
use gantry_core::placement::{
    BestFit, ExactOptimal, FirstFit, GpuMask, LoadBalance, OptimalConfig, PlacementView, Placer,
    ProximityGreedy, RandomPlacer,
};
use gantry_core::{GpuId, Job, RejectReason, TimeMs};
use std::path::Path;
use std::sync::Arc;

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
    /// TIAS that never keeps a critical deadline job waiting past its latest safe start
    /// (`DeadlineSafety::LatestStart`): EDF's misses at a fraction of its JCT. Last, so the
    /// variant numbers in recordings and journals stay those of earlier builds.
    TiasDeadlineSafe,
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
    /// The learned PPO scorer (`models/proximity_ppo.onnx`, its MLP evaluated directly from
    /// the ONNX weights); a missing or broken model falls back to greedy and says so once.
    Ppo,
    /// gantry's placer: the learned scorer within the GPU type where the job runs fastest by
    /// Gavel's throughputs (`mixed::hints`); the same as `ppo` on one GPU type.
    PpoGavel,
}

/// Any job order the host knows, statically dispatched by `match`. Serialisable with its
/// state (a core snapshot of the host's scheduler: `gantry slurm`'s journal checkpoints).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
            OrderKind::Tias => AnyOrder::Tias(Box::new(Tias::new(TiasConfig::host()))),
            OrderKind::TiasDeadlineSafe => AnyOrder::Tias(Box::new(Tias::new(TiasConfig {
                deadline_safety: DeadlineSafety::LatestStart,
                ..TiasConfig::host()
            }))),
            OrderKind::TiresiasDlas => compat(CompatPolicy::Dlas(LengthMetric::Time)),
            OrderKind::TiresiasDlasGpu => compat(CompatPolicy::Dlas(LengthMetric::GpuTime)),
            OrderKind::TiresiasShortest => compat(CompatPolicy::Shortest(LengthMetric::Time)),
            OrderKind::TiresiasShortestGpu => compat(CompatPolicy::Shortest(LengthMetric::GpuTime)),
        }
    }

    /// The order named `kind` with a `--tias-config` file's changes applied to TIAS's
    /// constants (other orders have none to change), or the value the file may not give.
    pub fn configured(kind: OrderKind, tias: Option<&TiasOverrides>) -> Result<Self, Invalid> {
        let mut order = Self::new(kind);
        if let (AnyOrder::Tias(t), Some(overrides)) = (&mut order, tias) {
            **t = Tias::new(overrides.apply(*t.config())?);
        }
        Ok(order)
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
    fn advance(&mut self, now: TimeMs) {
        each_order!(self, o => o.advance(now))
    }
    fn on_submitted(&mut self, job: &Job, now: TimeMs) {
        each_order!(self, o => o.on_submitted(job, now))
    }
    fn on_finished(&mut self, job: &Job, now: TimeMs) {
        each_order!(self, o => o.on_finished(job, now))
    }
    fn on_removed(&mut self, job: &Job, now: TimeMs) {
        each_order!(self, o => o.on_removed(job, now))
    }
    fn on_capacity(&mut self, healthy_gpus: u32, now: TimeMs) {
        each_order!(self, o => o.on_capacity(healthy_gpus, now))
    }
    fn epoch(&self) -> u32 {
        each_order!(self, o => o.epoch())
    }
    fn follows_epoch(&self, job: &Job) -> bool {
        each_order!(self, o => o.follows_epoch(job))
    }
    fn epoch_effect(&self, job: &Job, now: TimeMs) -> EpochEffect {
        each_order!(self, o => o.epoch_effect(job, now))
    }
    fn after_pass(&mut self, job: &mut Job, now: TimeMs) {
        each_order!(self, o => o.after_pass(job, now))
    }
    fn consolidates_gangs(&self) -> bool {
        each_order!(self, o => o.consolidates_gangs())
    }
    fn jobs_per_pass(&self) -> usize {
        each_order!(self, o => o.jobs_per_pass())
    }
    fn epoch_walked(&mut self) {
        each_order!(self, o => o.epoch_walked())
    }
    fn state_change_rekeys(&self, job: &Job, now: TimeMs) -> bool {
        each_order!(self, o => o.state_change_rekeys(job, now))
    }
}

/// Any placer the host knows (statically dispatched by `match`), with what a heterogeneous
/// cluster tells placers about jobs ([`PlacementHints`]: the same-type rule, DAG jobs'
/// exemption from it, `ppo-gavel`'s type choice).
///
/// Serialisable with its state, except the learned placers (their weights are
/// configuration, loaded from the model file): writing `ppo` or `ppo-gavel` fails. The hints
/// are configuration too and are not written.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct AnyPlacer<const G: usize = HOST_GPUS> {
    placer: PlacerImpl<G>,
    #[serde(skip)]
    hints: Option<Arc<PlacementHints>>,
    /// Whether the cluster's GPUs all run at one speed (learned at the first pick: the
    /// topology is the scheduler's and fixed), so the same-type rule is skipped.
    #[serde(skip)]
    one_speed: Option<bool>,
    /// Only placements Slurm allocates exactly (`gantry slurm`; see [`crate::cluster::slurm_split`]).
    slurm_exact: bool,
}

/// The placers behind [`AnyPlacer`], for clusters of up to `G` GPUs.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum PlacerImpl<const G: usize = HOST_GPUS> {
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
    #[serde(skip)]
    Ppo(PpoPlacer<G>),
    /// [`PpoPlacer`] choosing each gang's GPU type by the job's throughputs (with hints).
    #[serde(skip)]
    PpoGavel(PpoPlacer<G>),
}

/// The learned placer: the core's [`ScoredPlacer`] over a [`PolicyScorer`] (the shipped
/// MLP evaluated directly from its ONNX weights). A clone copies the weights and starts with
/// fresh fault counters.
pub struct PpoPlacer<const G: usize = HOST_GPUS>(pub Box<ScoredPlacer<PolicyScorer, G>>);

impl<const G: usize> PpoPlacer<G> {
    /// Loads the model at `path`; on failure says so once on stderr and places like
    /// proximity-greedy.
    pub fn load(path: &Path) -> Self {
        Self::from_scorer(PolicyScorer::load_or_fallback(path))
    }

    /// Wraps a scorer.
    pub fn from_scorer(scorer: PolicyScorer) -> Self {
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
        let placer = match kind {
            PlacerKind::Ppo => PlacerImpl::Ppo(PpoPlacer::load(model)),
            PlacerKind::PpoGavel => PlacerImpl::PpoGavel(PpoPlacer::load(model)),
            PlacerKind::FirstFit => PlacerImpl::FirstFit(FirstFit),
            PlacerKind::BestFit => PlacerImpl::BestFit(BestFit),
            PlacerKind::Random => PlacerImpl::Random(RandomPlacer::new(seed)),
            PlacerKind::LoadBalance => PlacerImpl::LoadBalance(LoadBalance),
            PlacerKind::Greedy => PlacerImpl::Greedy(ProximityGreedy),
            PlacerKind::Optimal => {
                PlacerImpl::Optimal(Box::new(ExactOptimal::new(OptimalConfig::default())))
            }
        };
        Self {
            placer,
            hints: None,
            one_speed: None,
            slurm_exact: false,
        }
    }

    /// The placer limited to placements Slurm's `cons_tres` allocates exactly as chosen
    /// (multi-node gangs filled in node order, [`crate::cluster::slurm_split`]); `gantry slurm` and
    /// the replay of its journals use it.
    pub fn with_slurm_exact(mut self, on: bool) -> Self {
        self.slurm_exact = on;
        self
    }

    /// Whether its state can be written (a core snapshot): every placer but the learned
    /// ones.
    pub fn serialisable(&self) -> bool {
        !matches!(self.placer, PlacerImpl::Ppo(_) | PlacerImpl::PpoGavel(_))
    }

    /// The placer with a heterogeneous cluster's hints (`None`: one GPU type).
    pub fn with_hints(mut self, hints: Option<Arc<PlacementHints>>) -> Self {
        self.hints = hints;
        self
    }

    /// The mask this pick sees instead of `view.usable`, if any: `ppo-gavel`'s type choice for
    /// a gang's first GPU, else the same-type rule for synchronous gangs (not DAG jobs).
    fn narrowed(&mut self, view: &PlacementView<'_, G>) -> Option<GpuMask<G>> {
        let one_speed = *self
            .one_speed
            .get_or_insert_with(|| crate::cluster::same_type::one_speed(view.topology));
        let same_type = |view| {
            if one_speed {
                None
            } else {
                same_type_mask(view)
            }
        };
        let Some(hints) = self.hints.as_deref() else {
            return same_type(view);
        };
        if matches!(self.placer, PlacerImpl::PpoGavel(_))
            && let Some(mask) = hints.choose_type(view)
        {
            return Some(mask);
        }
        if hints.is_dag_job(view.job.id()) {
            return None;
        }
        same_type(view)
    }
}

impl<const G: usize> Placer<G> for AnyPlacer<G> {
    fn name(&self) -> &'static str {
        match &self.placer {
            PlacerImpl::FirstFit(p) => Placer::<G>::name(p),
            PlacerImpl::BestFit(p) => Placer::<G>::name(p),
            PlacerImpl::Random(p) => Placer::<G>::name(p),
            PlacerImpl::LoadBalance(p) => Placer::<G>::name(p),
            PlacerImpl::Greedy(p) => Placer::<G>::name(p),
            PlacerImpl::Optimal(p) => Placer::<G>::name(&**p),
            PlacerImpl::Ppo(p) => Placer::<G>::name(&*p.0),
            PlacerImpl::PpoGavel(_) => "ppo-gavel",
        }
    }
    /// On a heterogeneous cluster the placer sees the narrowed mask of
    /// `AnyPlacer::narrowed`; on a homogeneous one, the view unchanged.
    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        let narrowed = self.narrowed(view);
        let same_type;
        let view = match &narrowed {
            Some(mask) => {
                same_type = PlacementView {
                    usable: mask,
                    ..*view
                };
                &same_type
            }
            None => view,
        };
        let first = self.pick_inner(view);
        if !self.slurm_exact || first.is_some_and(|g| crate::cluster::slurm_split::allows(view, g))
        {
            return first;
        }
        let Some(mask) = crate::cluster::slurm_split::exact_mask(view) else {
            return first;
        };
        let exact = PlacementView {
            usable: &mask,
            ..*view
        };
        self.pick_inner(&exact)
            .filter(|g| mask.allows(*g))
            .or_else(|| mask.first())
    }
}

impl<const G: usize> AnyPlacer<G> {
    fn pick_inner(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        match &mut self.placer {
            PlacerImpl::FirstFit(p) => p.pick(view),
            PlacerImpl::BestFit(p) => p.pick(view),
            PlacerImpl::Random(p) => p.pick(view),
            PlacerImpl::LoadBalance(p) => p.pick(view),
            PlacerImpl::Greedy(p) => p.pick(view),
            PlacerImpl::Optimal(p) => p.pick(view),
            PlacerImpl::Ppo(p) | PlacerImpl::PpoGavel(p) => p.0.pick(view),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterSpec;
    use crate::cluster::{Cluster, Throughputs};
    use crate::mixed::{DagJob, DagTask, JobExtras};
    use gantry_core::{JobId, JobSpec, Topology};

    /// On mixed hardware a gang job keeps to its first GPU's type; a DAG job does not (its
    /// tasks run independently, each at its GPU's speed).
    #[test]
    fn the_same_type_rule_spares_dag_jobs() {
        let spec: ClusterSpec = "1x2x2".parse().unwrap();
        let cluster =
            Cluster::with_types(spec, "v100:0,k80:1", Arc::new(Throughputs::gavel())).unwrap();
        let task = DagTask {
            work_ms: 1.0,
            model: 0,
        };
        let dag = DagJob::new(vec![task, task], vec![], 26).unwrap();
        let extras = JobExtras {
            model: vec![0, 0],
            dag: vec![None, Some(Arc::new(dag))],
            terms: Vec::new(),
        };
        let hints = PlacementHints::new(&cluster, &extras, 2).map(Arc::new);
        let mut placer = AnyPlacer::new(PlacerKind::FirstFit, 0).with_hints(hints);
        let topo: Topology<HOST_GPUS> = cluster.topology().unwrap();
        let mut usable = GpuMask::none();
        for g in [1, 2, 3] {
            usable.set(GpuId(g), true);
        }
        let mut narrowed = |job: u32, gpus: u16| {
            let job = Job::submitted(JobSpec::new(JobId(job), gpus), TimeMs(0));
            let view = PlacementView {
                topology: &topo,
                usable: &usable,
                picked: &[GpuId(0)],
                job: &job,
            };
            placer
                .narrowed(&view)
                .map(|m| m.iter().map(|g| g.0).collect::<Vec<_>>())
        };
        // Gang job 0 holds GPU 0 (a V100). Needing 2 more, with one V100 left, the rule
        // cannot hold and nothing is narrowed; needing 1 more, it keeps to the V100.
        assert_eq!(narrowed(0, 3), None);
        assert_eq!(narrowed(0, 2), Some(vec![1]));
        assert_eq!(narrowed(1, 2), None, "a DAG job may mix types");
    }
}
