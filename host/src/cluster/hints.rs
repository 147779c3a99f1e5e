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
//! rest of the gang there. A gang job's time on type `t` is `1 / speed(model, t)`; a DAG
//! job's is its work-weighted mean over tasks, `Σ w_i / speed(model_i, t) / Σ w_i`.
//!
//! Type-blind placers (first-fit, best-fit, …) do not do this: they are the baselines. The
//! same-type rule and the DAG-job exemption apply to every placer.

use super::Cluster;
use crate::mixed::JobExtras;
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

    /// Whether `job` is a DAG job (its gang may mix GPU types).
    pub fn is_dag_job(&self, job: gantry_core::JobId) -> bool {
        self.dag.get(job.0 as usize).copied().unwrap_or(false)
    }

    /// For a gang's first pick: the usable GPUs of the job's fastest type that has enough of
    /// them, when that narrows the mask; `None` otherwise. O(G + types).
    pub fn choose_type<const G: usize>(&self, view: &PlacementView<'_, G>) -> Option<GpuMask<G>> {
        if !view.picked.is_empty() {
            return None;
        }
        let job = view.job.id().0 as usize;
        let times = self.time.get(job * self.types..(job + 1) * self.types)?;
        let mut usable = vec![0usize; self.types];
        for g in view.usable.iter() {
            if let Some(&t) = self.gpu_type.get(usize::from(g.0)) {
                usable[usize::from(t)] += 1;
            }
        }
        let need = view.remaining();
        let best = (0..self.types)
            .filter(|&t| usable[t] >= need)
            .min_by(|&a, &b| times[a].total_cmp(&times[b]).then(a.cmp(&b)))?;
        if usable[best] == view.usable.count() {
            return None;
        }
        let mut mask = GpuMask::none();
        for g in view.usable.iter() {
            if self.gpu_type.get(usize::from(g.0)) == Some(&(best as u8)) {
                mask.set(g, true);
            }
        }
        Some(mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Throughputs;
    use crate::sim::ClusterSpec;
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
}
