//! GPUs that jobs running outside gantry hold: jobs that were running when gantry took the
//! partition over, jobs an operator released by hand, jobs a second scheduler started.
//! Slurm will not start anything on those GPUs until the jobs end, so the core must not
//! place there: the controller takes them out of the core's view (`GpuDown`) for as long
//! as the jobs run, and gives them back (`GpuUp`) when they end. Without it the core
//! placed queued jobs on them and the jobs waited ("Slurm's count lags gantry's") while
//! other GPUs were free.

use super::gres::{job_request, node_gpus};
use super::json::{SlurmJob, SlurmNode};
use super::layout::ClusterLayout;

/// How many GPUs each machine of `layout` (by index) gives to `outside`, the running jobs
/// the core does not hold. A job's per-node counts are Slurm's own where it reports them
/// (`gres_detail`, in `--json`), else its GPUs spread evenly over its nodes (exact for
/// `--gres`/`--gpus-per-node`; an estimate for `--gpus` over several nodes). A machine's
/// count is at most its GPUs, and at most what `sinfo` says is used there.
pub fn outside_gpus_per_machine<'a>(
    layout: &ClusterLayout,
    outside: impl Iterator<Item = &'a SlurmJob>,
    nodes: &[SlurmNode],
) -> Vec<u16> {
    let mut held = vec![0u16; layout.machines.len()];
    for job in outside {
        if !job.state.runs() {
            continue;
        }
        for (node, gpus) in per_node_gpus(job, layout) {
            if let Some(index) = layout.machines.iter().position(|m| m.name == node) {
                held[index] = held[index].saturating_add(gpus);
            }
        }
    }
    for (index, machine) in layout.machines.iter().enumerate() {
        let used = nodes
            .iter()
            .find(|n| n.name == machine.name)
            .and_then(|n| node_gpus(&n.gres_used).ok())
            .map_or(machine.gpus, |g| g.count);
        held[index] = held[index].min(machine.gpus).min(used);
    }
    held
}

/// A running job's GPUs on each of its nodes.
fn per_node_gpus(job: &SlurmJob, layout: &ClusterLayout) -> Vec<(String, u16)> {
    if !job.gres_detail.is_empty() && job.gres_detail.len() == job.nodes.len() {
        return job
            .nodes
            .iter()
            .zip(&job.gres_detail)
            .map(|(node, detail)| (node.clone(), node_gpus(detail).map_or(0, |g| g.count)))
            .collect();
    }
    let total = job_request(job, &layout.gpus).map_or(0, |r| r.gpus);
    let n = u16::try_from(job.nodes.len()).unwrap_or(u16::MAX).max(1);
    job.nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let extra = u16::from(u16::try_from(i).unwrap_or(u16::MAX) < total % n);
            (node.clone(), total / n + extra)
        })
        .collect()
}

/// Which GPUs of one machine (`gpus`, core ids) to keep out of the core's view so that
/// `want` are: those already out first (so the choice does not move from poll to poll),
/// then GPUs free in the core, then, with `owned_too`, GPUs of core jobs that are not
/// running in Slurm (a start gantry released that Slurm gave to the job outside instead:
/// the core preempts and places it again); never a GPU of a job Slurm runs. Highest ids first, so the
/// placer's lowest-first choices keep their GPUs. `healthy(g)`: the GPU is in the
/// core's view; `owner_runs(g)`: `None` when free in the core, else whether its job runs
/// in Slurm.
pub fn gpus_to_take_out(
    gpus: core::ops::Range<u16>,
    want: u16,
    owned_too: bool,
    healthy: impl Fn(u16) -> bool,
    owner_runs: impl Fn(u16) -> Option<bool>,
) -> Vec<u16> {
    let mut out: Vec<u16> = gpus.clone().rev().filter(|&g| !healthy(g)).collect();
    out.truncate(usize::from(want));
    let free = |g: u16| owner_runs(g).is_none();
    let not_run_by_slurm = |g: u16| owned_too && owner_runs(g) == Some(false);
    for take in [&free as &dyn Fn(u16) -> bool, &not_run_by_slurm] {
        for g in gpus.clone().rev() {
            if out.len() >= usize::from(want) {
                return out;
            }
            if healthy(g) && take(g) {
                out.push(g);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::json::JobStateName;
    use crate::slurm::json::held_job;

    fn layout() -> ClusterLayout {
        let nodes: Vec<SlurmNode> = (1..=2)
            .map(|i| SlurmNode {
                name: format!("n{i}"),
                states: vec!["MIXED".into()],
                gres: "gpu:8".into(),
                gres_used: "gpu:8".into(),
                partitions: vec!["gpu".into()],
                reason: String::new(),
                closed_partitions: Vec::new(),
            })
            .collect();
        ClusterLayout::discover("gpu", &nodes, "").unwrap()
    }

    fn running(id: u32, per_node: &str, nodes: &[&str]) -> SlurmJob {
        SlurmJob {
            state: JobStateName::Running,
            held: false,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            ..held_job(id, per_node)
        }
    }

    fn sinfo(used: [u16; 2]) -> Vec<SlurmNode> {
        let mut nodes = Vec::new();
        for (i, used) in used.iter().enumerate() {
            nodes.push(SlurmNode {
                name: format!("n{}", i + 1),
                states: vec!["MIXED".into()],
                gres: "gpu:8".into(),
                gres_used: format!("gpu:{used}"),
                partitions: vec!["gpu".into()],
                reason: String::new(),
                closed_partitions: Vec::new(),
            });
        }
        nodes
    }

    #[test]
    fn a_jobs_gpus_count_on_its_nodes_capped_by_what_sinfo_says_is_used() {
        let layout = layout();
        let one = running(1, "gres:gpu:3", &["n2"]);
        let two = SlurmJob {
            node_count: 2,
            ..running(2, "gres:gpu:2", &["n1", "n2"])
        };
        let pending = held_job(3, "gres:gpu:8");
        let jobs = [one, two, pending];
        assert_eq!(
            outside_gpus_per_machine(&layout, jobs.iter(), &sinfo([8, 8])),
            [2, 5]
        );
        // sinfo's count bounds the estimate (a job's split over nodes is a guess).
        assert_eq!(
            outside_gpus_per_machine(&layout, jobs.iter(), &sinfo([1, 8])),
            [1, 5]
        );
        // Slurm's own split, where `--json` gives it, wins over the even one.
        let mut split = running(4, "", &["n1", "n2"]);
        split.tres_per_job = "gres:gpu:5".into();
        split.gres_detail = vec!["gpu:4(IDX:0-3)".into(), "gpu:1(IDX:0)".into()];
        assert_eq!(
            outside_gpus_per_machine(&layout, [split].iter(), &sinfo([8, 8])),
            [4, 1]
        );
    }

    #[test]
    fn the_gpus_taken_out_stay_put_and_spare_jobs_slurm_runs() {
        // GPUs 0..8; 6 and 7 out already; 0-1 a job Slurm runs, 2-3 a start not yet run.
        let healthy = |g: u16| g < 6;
        let owner = |g: u16| match g {
            0 | 1 => Some(true),
            2 | 3 => Some(false),
            _ => None,
        };
        assert_eq!(gpus_to_take_out(0..8, 2, true, healthy, owner), [7, 6]);
        assert_eq!(gpus_to_take_out(0..8, 1, true, healthy, owner), [7]);
        assert_eq!(
            gpus_to_take_out(0..8, 4, true, healthy, owner),
            [7, 6, 5, 4]
        );
        assert_eq!(
            gpus_to_take_out(0..8, 8, true, healthy, owner),
            [7, 6, 5, 4, 3, 2]
        );
        assert!(gpus_to_take_out(0..8, 0, true, healthy, owner).is_empty());
        // Free GPUs only: a start not yet run keeps its GPUs.
        assert_eq!(
            gpus_to_take_out(0..8, 8, false, healthy, owner),
            [7, 6, 5, 4]
        );
    }
}
