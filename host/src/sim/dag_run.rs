//! DAG jobs inside the cluster simulator: when the core starts a DAG job on a gang, a DAG
//! planner plans the job's remaining tasks on exactly those GPUs and the job holds the gang
//! for the plan's makespan.
//!
//! # Design: the planner runs in the host, between the core's `Start` and the job's finish
//! The core decides *when* a DAG job starts (its order) and *which* GPUs it gets (its placer),
//! exactly as for a gang job: to the core a DAG job is a gang of `k` GPUs. The simulator,
//! which already models how long a started job runs, asks a planner for the plan on that
//! gang and schedules the finish at `start + makespan`. So the core stays allocation-free and
//! unchanged, and firmware that runs DAG jobs would do the same: plan on the GPUs it was
//! given (the core's DAG planners are `no_std` too; the host's WORL adds the DDQN).
//!
//! # The platform a plan sees ([`GangPlatform`])
//! - task `i` on GPU `g` runs `work_i / speed(model_i, type(g))` (Gavel's ratio for the task's
//!   own job model; 1 on a homogeneous cluster);
//! - an edge's data crosses the gang's **bottleneck link** of the tree (the core's evaluator
//!   models one bandwidth per platform): NVLink (40 MB/ms) when the gang is one machine, the
//!   machine↔rack link (4 MB/ms) within one rack, the rack↔root link (2 MB/ms) across racks,
//!   i.e. `1 / max weight on any path` with Proximity-DRL's link weights. So a consolidated
//!   gang moves data 10–20× faster: placement matters for DAG jobs through their plans.
//!   The comm-cost speed model of gang jobs does not apply on top: the plan already pays
//!   for every transfer.
//!
//! Makespans are always the core [`Evaluator`]'s (list scheduling of the plan), whichever
//! planner made the plan, so planners are compared on one model.
//!
//! # Preemption and GPU failure
//! As for any job, a preempted DAG job keeps its progress ([`DagProgress`]): finished tasks
//! stay finished (their outputs are in shared storage) and a task in flight keeps the share
//! of its work it had done (the simulator's jobs checkpoint continuously; losing it would let
//! a task longer than its gang's time between failures restart forever). On the next start
//! the remaining work is planned afresh on the new gang, edges from finished tasks dropped.
//!
//! # Planners ([`DagPlannerKind`])
//! `list` (topological order, each task on the GPU that frees up first: blind to speeds
//! and links, a plain list schedule), `heft`, `woa` (load-target decoding), `worl` (WOA
//! seeded and refined by the DDQN, HEFT seed, the WORL code's decoding) and `worl-eft`
//! (the same with EFT-priority decoding). WOA and WORL use 16 whales × 50 iterations here
//! (the DAGs are 4–16 tasks on 2–16 GPUs; `gantry dag` keeps Mirjalili's 30 × 100 for the
//! big inputs), each planning seeded from the run's seed, the job and its start count.

use super::dag_run_list::TopoList;
use crate::cluster::Cluster;
use crate::dag::worl_rtgs::{DdqnAdvisor, WorlConfig, load_model};
use crate::learn::resolve_model_path;
use crate::learn::tract_model::TractModel;
use crate::mixed::{DagJob, DagProgress, JobDag, MAX_DAG_TASKS};
use crate::registry::HOST_GANG;
use gantry_core::dag::{
    Bandwidth, DagPlanner, Decoding, Evaluator, Heft, NoAdvisor, Plan, PlanError, Platform, Woa,
    WoaConfig,
};
use gantry_core::{GpuId, Topology};
use std::path::Path;

/// Whales of the cluster's WOA / WORL.
pub const CLUSTER_WOA_POPULATION: usize = 16;
/// Iterations of the cluster's WOA / WORL.
pub const CLUSTER_WOA_ITERATIONS: u32 = 50;

/// Which planner plans DAG jobs on their gang (`--dag-planner`, `--dag-planners`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum DagPlannerKind {
    /// Topological order, each task on the GPU that becomes free first (speed- and
    /// link-blind).
    List,
    /// HEFT (Topcuoglu et al. 2002).
    Heft,
    /// Whale Optimization, the WORL code's load-target decoding, random start.
    Woa,
    /// WORL-RTGS: WOA seeded and refined by the DDQN (`models/worl_ddqn.onnx`) and HEFT.
    Worl,
    /// WORL-RTGS with the EFT-priority decoding.
    WorlEft,
}

impl DagPlannerKind {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            DagPlannerKind::List => "list",
            DagPlannerKind::Heft => "heft",
            DagPlannerKind::Woa => "woa",
            DagPlannerKind::Worl => "worl",
            DagPlannerKind::WorlEft => "worl-eft",
        }
    }

    fn uses_ddqn(self) -> bool {
        matches!(self, DagPlannerKind::Worl | DagPlannerKind::WorlEft)
    }
}

/// The GPUs of one gang as a DAG platform (module docs).
#[derive(Clone, Debug)]
pub struct GangPlatform {
    gpus: usize,
    /// `speed[task · gpus + gpu]`.
    speed: Vec<f64>,
    bandwidth: Bandwidth,
}

impl GangPlatform {
    /// The platform of `gang` for the tasks `kept` of `job`.
    pub fn new<const G: usize>(
        job: &DagJob,
        kept: &[u32],
        gang: &[GpuId],
        cluster: &Cluster,
        topology: &Topology<G>,
    ) -> Self {
        let mut speed = Vec::with_capacity(kept.len() * gang.len());
        for &t in kept {
            let model = usize::from(job.tasks()[t as usize].model);
            speed.extend(gang.iter().map(|&g| cluster.gpu_speed(model, g)));
        }
        Self {
            gpus: gang.len(),
            speed,
            bandwidth: bottleneck(gang, topology),
        }
    }
}

/// The gang's slowest tree link as a bandwidth, MB per ms (module docs); infinite for one
/// GPU. O(k).
pub fn bottleneck<const G: usize>(gang: &[GpuId], topology: &Topology<G>) -> Bandwidth {
    let Some(&first) = gang.first() else {
        return Bandwidth::Infinite;
    };
    if gang.len() == 1 {
        return Bandwidth::Infinite;
    }
    let w = topology.weights().reciprocal();
    let machine = topology.machine_of(first);
    let rack = topology.rack_of(first);
    let weight = if gang.iter().all(|&g| topology.machine_of(g) == machine) {
        w.gpu_peer
    } else if gang.iter().all(|&g| topology.rack_of(g) == rack) {
        w.gpu_machine.max(w.machine_rack)
    } else {
        w.gpu_machine.max(w.machine_rack).max(w.rack_root)
    };
    if weight > 0.0 && weight.is_finite() {
        Bandwidth::PerMs(1.0 / weight)
    } else {
        Bandwidth::Infinite
    }
}

impl Platform for GangPlatform {
    fn gpu_count(&self) -> usize {
        self.gpus
    }

    fn run_ms(&self, task: usize, work_ms: f64, gpu: usize) -> f64 {
        work_ms
            / self
                .speed
                .get(task * self.gpus + gpu)
                .copied()
                .unwrap_or(1.0)
    }

    fn bandwidth(&self) -> Bandwidth {
        self.bandwidth
    }
}

/// One task of a planned run, as the evaluator scheduled it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct TaskRun {
    /// Task index in the job.
    pub task: u32,
    /// The GPU it ran on.
    pub gpu: GpuId,
    /// Reference work it had left at this run's start, ms.
    pub work_ms: f64,
    /// Start, ms after the run began making progress.
    pub start_ms: f64,
    /// Finish, ms after the run began making progress.
    pub finish_ms: f64,
}

/// A plan of a DAG job's remaining tasks on one gang.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PlannedRun {
    /// The plan's makespan by the core evaluator, ms.
    pub makespan_ms: f64,
    /// Every remaining task, in plan order.
    pub tasks: Vec<TaskRun>,
}

/// A planner for one simulation run, with its scratch and (for WORL) the DDQN loaded once.
pub struct DagPlanning {
    kind: DagPlannerKind,
    ddqn: Option<TractModel>,
    dag: Box<JobDag>,
    plan: Box<Plan<MAX_DAG_TASKS>>,
    eval: Box<Evaluator<MAX_DAG_TASKS, HOST_GANG>>,
    /// Why WORL ran without its DDQN, if it did (reported once).
    pub ddqn_failure: Option<String>,
}

impl DagPlanning {
    /// A planner of `kind`; WORL loads the DDQN from `ddqn_model` once, and plans as WOA +
    /// HEFT seed alone (saying why in [`ddqn_failure`](Self::ddqn_failure)) if it cannot.
    pub fn new(kind: DagPlannerKind, ddqn_model: &Path) -> Self {
        let (ddqn, ddqn_failure) = if kind.uses_ddqn() {
            match load_model(&resolve_model_path(ddqn_model)) {
                Ok(m) => (Some(m), None),
                Err(e) => (
                    None,
                    Some(format!("DDQN model {}: {e}", ddqn_model.display())),
                ),
            }
        } else {
            (None, None)
        };
        Self {
            kind,
            ddqn,
            dag: Box::new(JobDag::new()),
            plan: Box::new(Plan::new()),
            eval: Box::new(Evaluator::new()),
            ddqn_failure,
        }
    }

    /// The planner's kind.
    pub fn kind(&self) -> DagPlannerKind {
        self.kind
    }

    /// Plans what `progress` left of `job` on `gang`; `seed` fixes WOA's and WORL's draws.
    /// An empty remainder is an empty run of 0 ms.
    pub fn plan<const G: usize>(
        &mut self,
        job: &DagJob,
        progress: &DagProgress,
        gang: &[GpuId],
        cluster: &Cluster,
        topology: &Topology<G>,
        seed: u64,
    ) -> Result<PlannedRun, PlanError> {
        let kept = job
            .build(progress, &mut self.dag)
            .map_err(|(_, e)| PlanError::from(e))?;
        if kept.is_empty() {
            return Ok(PlannedRun {
                makespan_ms: 0.0,
                tasks: Vec::new(),
            });
        }
        let platform = GangPlatform::new(job, &kept, gang, cluster, topology);
        let dag = self.dag.as_ref();
        let woa = WoaConfig {
            population: CLUSTER_WOA_POPULATION,
            iterations: CLUSTER_WOA_ITERATIONS,
            ..WoaConfig::new(seed)
        };
        match self.kind {
            DagPlannerKind::List => TopoList.plan(dag, &platform, &mut self.plan)?,
            DagPlannerKind::Heft => {
                let mut heft = Box::new(Heft::<MAX_DAG_TASKS, HOST_GANG>::new());
                heft.plan(dag, &platform, &mut self.plan)?
            }
            DagPlannerKind::Woa => {
                let mut search = Box::new(
                    Woa::<CLUSTER_WOA_POPULATION, MAX_DAG_TASKS, HOST_GANG, _>::new(woa, NoAdvisor),
                );
                search.plan(dag, &platform, &mut self.plan)?
            }
            DagPlannerKind::Worl | DagPlannerKind::WorlEft => {
                let decoding = if self.kind == DagPlannerKind::WorlEft {
                    Decoding::EftPriority
                } else {
                    Decoding::WorlLoadTarget
                };
                let config = woa.with_decoding(decoding);
                match &self.ddqn {
                    Some(model) => {
                        let worl = WorlConfig::new(seed).scaled_for(kept.len(), gang.len());
                        let advisor = DdqnAdvisor::<MAX_DAG_TASKS>::new(model.clone(), worl);
                        let mut search = Box::new(Woa::<
                            CLUSTER_WOA_POPULATION,
                            MAX_DAG_TASKS,
                            HOST_GANG,
                            _,
                        >::new(config, advisor));
                        search.plan(dag, &platform, &mut self.plan)?;
                        if let Some(e) = search.advisor().failure()
                            && self.ddqn_failure.is_none()
                        {
                            self.ddqn_failure = Some(format!("DDQN: {e}"));
                        }
                    }
                    None => {
                        let heft = gantry_core::dag::HeftAdvisor::<MAX_DAG_TASKS, HOST_GANG>::new();
                        let mut search = Box::new(Woa::<
                            CLUSTER_WOA_POPULATION,
                            MAX_DAG_TASKS,
                            HOST_GANG,
                            _,
                        >::new(config, heft));
                        search.plan(dag, &platform, &mut self.plan)?
                    }
                }
            }
        }
        let makespan_ms = self.eval.evaluate(dag, &platform, &self.plan)?;
        let tasks = self
            .plan
            .order()
            .iter()
            .map(|&t| TaskRun {
                task: kept[t as usize],
                gpu: gang[usize::from(self.plan.gpus()[t as usize])],
                work_ms: dag.works_ms()[t as usize],
                start_ms: self.eval.start_ms()[t as usize],
                finish_ms: self.eval.finish_ms()[t as usize],
            })
            .collect();
        Ok(PlannedRun { makespan_ms, tasks })
    }
}

/// The seed of one planning: the run's seed, the job and how often it has started.
pub fn planning_seed(run_seed: u64, job: u32, start: u32) -> u64 {
    run_seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(u64::from(job) << 20)
        .wrapping_add(u64::from(start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Throughputs;
    use crate::mixed::{DagEdge, DagTask};
    use crate::sim::ClusterSpec;
    use std::sync::Arc;

    fn diamond(data_mb: f64) -> DagJob {
        let t = |w: f64, model: u16| DagTask { work_ms: w, model };
        let e = |from, to| DagEdge { from, to, data_mb };
        DagJob::new(
            vec![t(100.0, 0), t(400.0, 12), t(400.0, 7), t(100.0, 0)],
            vec![e(0, 1), e(0, 2), e(1, 3), e(2, 3)],
            26,
        )
        .unwrap()
    }

    fn cluster() -> (Cluster, Topology<32>) {
        let spec: ClusterSpec = "2x4x4".parse().unwrap();
        let c =
            Cluster::with_types(spec, "v100:0-3,k80:4-7", Arc::new(Throughputs::gavel())).unwrap();
        let t = c.topology().unwrap();
        (c, t)
    }

    #[test]
    fn bottleneck_follows_the_tree() {
        let (_, topo) = cluster();
        let g = |xs: &[u16]| xs.iter().map(|&x| GpuId(x)).collect::<Vec<_>>();
        assert_eq!(bottleneck(&g(&[0]), &topo), Bandwidth::Infinite);
        assert_eq!(bottleneck(&g(&[0, 3]), &topo), Bandwidth::PerMs(40.0));
        assert_eq!(bottleneck(&g(&[0, 4]), &topo), Bandwidth::PerMs(4.0));
        assert_eq!(bottleneck(&g(&[0, 16]), &topo), Bandwidth::PerMs(2.0));
    }

    #[test]
    fn every_planner_plans_on_exactly_the_gang_and_replans_the_rest() {
        let (c, topo) = cluster();
        let job = diamond(50.0);
        let gang = [GpuId(2), GpuId(3), GpuId(16), GpuId(17)];
        let mut spans = Vec::new();
        for kind in [
            DagPlannerKind::List,
            DagPlannerKind::Heft,
            DagPlannerKind::Woa,
            DagPlannerKind::Worl,
            DagPlannerKind::WorlEft,
        ] {
            let mut p = DagPlanning::new(kind, Path::new("models/worl_ddqn.onnx"));
            let run = p
                .plan(&job, &DagProgress::default(), &gang, &c, &topo, 1)
                .unwrap();
            assert_eq!(run.tasks.len(), 4, "{kind:?}");
            assert!(run.tasks.iter().all(|t| gang.contains(&t.gpu)));
            let last = run.tasks.iter().map(|t| t.finish_ms).fold(0.0, f64::max);
            assert_eq!(last, run.makespan_ms);
            // Stopped after tasks 0 and 1 finished: only 2 and 3 are left.
            let mut progress = DagProgress::default();
            let stop = run.tasks.iter().find(|t| t.task == 1).unwrap().finish_ms;
            for t in &run.tasks {
                progress.credit(
                    4,
                    t.task as usize,
                    t.work_ms,
                    (t.start_ms, t.finish_ms),
                    stop,
                );
            }
            let rest = p.plan(&job, &progress, &gang, &c, &topo, 1).unwrap();
            let left: Vec<u32> = rest.tasks.iter().map(|t| t.task).collect();
            assert!(
                left.contains(&3) && !left.contains(&0) && !left.contains(&1),
                "{left:?}"
            );
            for t in &run.tasks {
                progress.credit(
                    4,
                    t.task as usize,
                    t.work_ms,
                    (t.start_ms, t.finish_ms),
                    f64::MAX,
                );
            }
            let none = p.plan(&job, &progress, &gang, &c, &topo, 1).unwrap();
            assert_eq!(none.makespan_ms, 0.0);
            spans.push(run.makespan_ms);
        }
        // HEFT-seeded WORL is never worse than HEFT; HEFT beats the speed-blind list here
        // (two V100s and two K80s).
        assert!(spans[3] <= spans[1] && spans[4] <= spans[1], "{spans:?}");
        assert!(spans[1] < spans[0], "{spans:?}");
    }
}
