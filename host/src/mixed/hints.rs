//! What a heterogeneous cluster tells its placers about each job ([`PlacementHints`]):
//! whether it is a synchronous gang (the same-type rule applies) or a DAG job (its tasks run
//! independently, each at its own GPU's speed, so a mixed gang is no penalty — the DAG planner
//! uses the fast GPUs for the critical tasks), and how fast it runs on each GPU type, for the
//! heterogeneity-aware part of gantry's placer (`--placement ppo-gavel`).
//!
//! # Type choice (`ppo-gavel`)
//!
//! Gavel (Narayanan et al., OSDI'20) observes that job models speed up very differently on
//! newer GPUs (a V100 runs ResNet-18 11.6× faster than a K80 but Recommendation 0.7× as fast
//! as a P100), so the type matters more than anything else a placer chooses. Before a gang's
//! first pick, [`PlacementHints::choose_type`] restricts the usable GPUs to the type on which the job
//! runs fastest among the types with enough usable GPUs for the whole gang (ties: the lower
//! type column); the learned scorer then picks within it and the same-type rule keeps the
//! rest of the gang there. A gang job's time on type `t` is `1 / speed(model, t)`.
//!
//! Where no one type has room for the rest of a synchronous gang, the gang must mix types and
//! runs at its slowest GPU's pace: it may then take only the fastest types that together have
//! room (V100s and P100s rather than a K80 among them). A DAG job's tasks each run at their
//! own GPU's pace, so it takes the fastest type with a free GPU at every pick: its planner
//! puts the critical tasks on the fast GPUs and gets as many as there are. Its time on type
//! `t`, which orders the types for it, is its work-weighted mean over tasks,
//! `Σ w_i / speed(model_i, t) / Σ w_i`.
//!
//! Type-blind placers (first-fit, best-fit, …) do not do this: they are the baselines. The
//! same-type rule and the DAG-job exemption apply to every placer.

use super::JobExtras;
use crate::cluster::Cluster;
use gantry_core::GpuId;
use gantry_core::placement::{GpuMask, PlacementView};

/// Per-GPU types, per-job relative run times per type, and which jobs are DAG jobs.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlacementHints {
    gpu_type: Vec<u8>,
    types: usize,
    /// `time[job · types + t]`: relative run time of the job on type `t` (lower is faster).
    time: Vec<f64>,
    /// Jobs whose gang is a DAG job's (exempt from the same-type rule).
    dag: Vec<bool>,
}

impl PlacementHints {
    /// The hints for `jobs` jobs with `extras` on `cluster`; `None` on a cluster of one
    /// type (nothing to choose, no rule to apply).
    pub fn new(cluster: &Cluster, extras: &JobExtras, jobs: usize) -> Option<Self> {
        if !cluster.is_heterogeneous() {
            return None;
        }
        let table = &cluster.types.as_ref()?.table;
        let types = table.gpu_types.len();
        let gpu_type = (0..cluster.gpus() as u16)
            .map(|g| cluster.gpu_type(GpuId(g)) as u8)
            .collect();
        let mut time = Vec::with_capacity(jobs * types);
        for j in 0..jobs {
            for t in 0..types {
                time.push(match extras.dag_of(j) {
                    None => 1.0 / table.speed(extras.model_of(j), t),
                    Some(dag) => {
                        let work = dag.total_work_ms().max(f64::MIN_POSITIVE);
                        dag.tasks()
                            .iter()
                            .map(|task| task.work_ms / table.speed(usize::from(task.model), t))
                            .sum::<f64>()
                            / work
                    }
                });
            }
        }
        let dag = (0..jobs).map(|j| extras.dag_of(j).is_some()).collect();
        Some(Self {
            gpu_type,
            types,
            time,
            dag,
        })
    }

    /// The job's relative run time on each type.
    fn times_of(&self, job: gantry_core::JobId) -> Option<&[f64]> {
        let job = job.0 as usize;
        self.time.get(job * self.types..(job + 1) * self.types)
    }

    /// How many of `gpus` are of each type.
    fn count_types(&self, gpus: impl Iterator<Item = GpuId>) -> Vec<usize> {
        let mut count = vec![0usize; self.types];
        for g in gpus {
            if let Some(&t) = self.gpu_type.get(usize::from(g.0)) {
                count[usize::from(t)] += 1;
            }
        }
        count
    }

    /// The fastest type with `need` GPUs in `room` (ties: the lower type column).
    fn fastest_single(times: &[f64], room: &[usize], need: usize) -> Option<usize> {
        (0..times.len())
            .filter(|&t| room.get(t).is_some_and(|&n| n >= need))
            .min_by(|&a, &b| times[a].total_cmp(&times[b]).then(a.cmp(&b)))
    }

    /// The types a gang of `need` takes when no one type has room for it: the fastest types
    /// first until their GPUs in `room` suffice (a synchronous gang runs at its slowest
    /// GPU's pace, so the slowest type taken sets its time).
    fn fastest_mix(times: &[f64], room: &[usize], need: usize) -> Option<Vec<usize>> {
        let mut by_speed: Vec<usize> = (0..times.len()).collect();
        by_speed.sort_by(|&a, &b| times[a].total_cmp(&times[b]).then(a.cmp(&b)));
        let mut taken = Vec::new();
        let mut have = 0;
        for t in by_speed {
            if have >= need {
                break;
            }
            let n = room.get(t).copied().unwrap_or(0);
            if n > 0 {
                taken.push(t);
                have += n;
            }
        }
        (have >= need).then_some(taken)
    }

    /// Whether `job` is a DAG job (its gang may mix GPU types).
    pub fn is_dag_job(&self, job: gantry_core::JobId) -> bool {
        self.dag.get(job.0 as usize).copied().unwrap_or(false)
    }

    /// The mask a pick of `ppo-gavel` sees (module docs, "Type choice"): for a synchronous
    /// gang's first pick, the usable GPUs of the job's fastest type that has room for the
    /// whole gang; where no one type has room for the rest of the gang, at any pick, those of
    /// the fastest types that together have room; for a
    /// DAG job, those of the fastest type with a usable GPU. `None` where that does not narrow
    /// the mask, or where the gang's first type still has room (the same-type rule keeps it
    /// there). O(G + types²).
    pub fn choose_type<const G: usize>(&self, view: &PlacementView<'_, G>) -> Option<GpuMask<G>> {
        let times = self.times_of(view.job.id())?;
        let usable = self.count_types(view.usable.iter());
        let need = view.remaining();
        let types = if self.is_dag_job(view.job.id()) {
            vec![Self::fastest_single(times, &usable, 1)?]
        } else {
            self.gang_types(times, &usable, need, view.picked.first())?
        };
        let mut mask = GpuMask::none();
        for g in view.usable.iter() {
            let t = self.gpu_type.get(usize::from(g.0)).map(|&t| usize::from(t));
            if t.is_some_and(|t| types.contains(&t)) {
                mask.set(g, true);
            }
        }
        (mask.count() < view.usable.count()).then_some(mask)
    }

    /// The types a synchronous gang's next pick may take ([`choose_type`](Self::choose_type));
    /// `None` where the gang's first type still has room for the rest.
    fn gang_types(
        &self,
        times: &[f64],
        usable: &[usize],
        need: usize,
        first: Option<&GpuId>,
    ) -> Option<Vec<usize>> {
        if let Some(first) = first {
            let first_type = usize::from(*self.gpu_type.get(usize::from(first.0))?);
            if usable.get(first_type).is_some_and(|&n| n >= need) {
                return None;
            }
        } else if let Some(best) = Self::fastest_single(times, usable, need) {
            return Some(vec![best]);
        }
        Self::fastest_mix(times, usable, need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ClusterSpec;
    use crate::cluster::Throughputs;
    use crate::mixed::{DagJob, DagTask};
    use gantry_core::{Job, JobId, JobSpec, TimeMs, Topology};
    use std::sync::Arc;

    #[test]
    fn picks_the_fastest_type_with_room() {
        let table = Throughputs::gavel();
        let model = |name: &str| table.models.iter().position(|m| m == name).unwrap() as u16;
        let spec: ClusterSpec = "1x3x2".parse().unwrap();
        let cluster =
            Cluster::with_types(spec, "v100:0,p100:1,k80:2", Arc::new(table.clone())).unwrap();
        let extras = JobExtras {
            model: vec![
                model("ResNet-18 (batch size 128)"),
                model("Recommendation (batch size 1024)"),
            ],
            dag: vec![None, None],
            terms: Vec::new(),
        };
        let choice = PlacementHints::new(&cluster, &extras, 2).unwrap();
        let topo: Topology<6> = cluster.topology().unwrap();
        let pick = |job: u32, usable: &[u16], k: u16| {
            let mut mask = GpuMask::<6>::none();
            for &g in usable {
                mask.set(GpuId(g), true);
            }
            let j = Job::submitted(JobSpec::new(JobId(job), k), TimeMs(0));
            let view = PlacementView {
                topology: &topo,
                usable: &mask,
                picked: &[],
                job: &j,
            };
            choice
                .choose_type(&view)
                .map(|m| m.iter().map(|g| g.0).collect::<Vec<_>>())
        };
        // ResNet-18 → V100; Recommendation → P100 (2.3× a V100).
        assert_eq!(pick(0, &[0, 1, 2, 3, 4, 5], 2), Some(vec![0, 1]));
        assert_eq!(pick(1, &[0, 1, 2, 3, 4, 5], 2), Some(vec![2, 3]));
        // V100s busy: the next fastest type with room.
        assert_eq!(pick(0, &[1, 2, 3, 4, 5], 2), Some(vec![2, 3]));
        // No type has room for 3: leave the placer free.
        assert_eq!(pick(0, &[0, 2, 4], 3), None);
        let flat = Cluster::homogeneous(spec);
        assert!(PlacementHints::new(&flat, &extras, 2).is_none());
        assert!(!choice.is_dag_job(JobId(1)));
    }

    /// GPUs 0–1 are V100s, 2–3 P100s, 4–5 K80s; job 0 is a ResNet-18 gang (V100 fastest,
    /// then P100, then K80), job 1 a DAG job of ResNet-18 tasks.
    fn mixed_case() -> (PlacementHints, Topology<6>) {
        let table = Throughputs::gavel();
        let resnet = table
            .models
            .iter()
            .position(|m| m == "ResNet-18 (batch size 128)")
            .unwrap() as u16;
        let spec: ClusterSpec = "1x3x2".parse().unwrap();
        let cluster = Cluster::with_types(spec, "v100:0,p100:1,k80:2", Arc::new(table)).unwrap();
        let task = DagTask {
            work_ms: 1.0,
            model: resnet,
        };
        let dag = DagJob::new(vec![task, task], vec![], 26).unwrap();
        let extras = JobExtras {
            model: vec![resnet, resnet],
            dag: vec![None, Some(Arc::new(dag))],
            terms: Vec::new(),
        };
        let hints = PlacementHints::new(&cluster, &extras, 2).unwrap();
        (hints, cluster.topology().unwrap())
    }

    /// `choose_type`'s mask for job `job` of `k` GPUs with `picked` taken, as GPU numbers.
    fn chosen(job: u32, k: u16, usable: &[u16], picked: &[u16]) -> Option<Vec<u16>> {
        let (hints, topo) = mixed_case();
        let mut mask = GpuMask::<6>::none();
        for &g in usable {
            mask.set(GpuId(g), true);
        }
        let picked: Vec<GpuId> = picked.iter().map(|&g| GpuId(g)).collect();
        let j = Job::submitted(JobSpec::new(JobId(job), k), TimeMs(0));
        let view = PlacementView {
            topology: &topo,
            usable: &mask,
            picked: &picked,
            job: &j,
        };
        hints
            .choose_type(&view)
            .map(|m| m.iter().map(|g| g.0).collect())
    }

    #[test]
    fn a_gang_no_one_type_has_room_for_takes_the_fastest_types_that_suffice() {
        // 3 GPUs with 1 V100, 2 P100s, 2 K80s free: V100 + P100s, never a K80 (a
        // synchronous gang would run at the K80's pace).
        assert_eq!(chosen(0, 3, &[0, 2, 3, 4, 5], &[]), Some(vec![0, 2, 3]));
        // After the V100, the 2 still to pick: the P100s.
        assert_eq!(chosen(0, 3, &[2, 3, 4, 5], &[0]), Some(vec![2, 3]));
        // Its first type still has room: the same-type rule decides, not this.
        assert_eq!(chosen(0, 2, &[3, 4, 5], &[2]), None);
        // Every usable GPU is needed: nothing to narrow.
        assert_eq!(chosen(0, 3, &[0, 2, 4], &[]), None);
    }

    #[test]
    fn a_dag_job_takes_the_fastest_free_gpu_at_each_pick() {
        // Its tasks each run at their own GPU's pace: the V100 first, then the P100s, even
        // though the K80s alone would have room for the whole gang.
        assert_eq!(chosen(1, 2, &[0, 2, 3, 4, 5], &[]), Some(vec![0]));
        assert_eq!(chosen(1, 2, &[2, 3, 4, 5], &[0]), Some(vec![2, 3]));
        assert_eq!(chosen(1, 2, &[4, 5], &[0]), None);
    }
}
