//! Proximity-DRL's episode loop (their `testEnv.step`), driving any core [`Placer`].
//!
//! Per step (results.md, quirk 5): the clock advances by one; the FCFS head (queue index 0,
//! i.e. the lowest job id waiting) is placed if enough GPUs are free — at most one placement
//! per step, no backfill, so a head that does not fit idles the step; a placement lets the
//! next job of the sequence into the 10-slot queue; every running job (including the one
//! just placed) advances by its speed; finished jobs free their GPUs in the same step. The
//! episode ends when all jobs are done (makespan ≥ jobs).
//!
//! Placement goes through the core's sequential protocol: k calls to [`Placer::pick`] with a
//! [`PlacementView`] whose mask shrinks by each pick. A fault (no pick, or a pick outside
//! the mask) takes the lowest usable GPU, as the core scheduler does, and is counted.

use super::jobs::ProxJob;
use gantry_core::placement::{GpuMask, PlacementView, Placer, optimal_cost};
use gantry_core::{GpuId, Job, JobId, JobSpec, TimeMs, Topology};

/// Jobs waiting at once (their queue length).
pub const QUEUE_SLOTS: usize = 10;
/// Step limit per episode, so a stuck episode ends with an error instead of looping.
pub const MAX_STEPS: u32 = 1_000_000;

/// Which environment: theirs bit for bit, or with their bugs fixed.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Their code as run for the anchor: every job's work uses job 0's request and length
    /// (quirk 3), the all-reduce penalty counts distinct machine *indices within a rack*
    /// (r0m1 and r1m1 count once, quirk 4), and the reward's best-cost table leaves out the
    /// intra-machine edges (quirk 2).
    #[default]
    Compat,
    /// Each job's own work, distinct machines counted across racks, and the true per-k
    /// minimum cost in the reward.
    Fixed,
}

/// One placed job.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRecord {
    /// Job index in the episode.
    pub id: u32,
    /// GPUs requested.
    pub gpus: u16,
    /// GPUs chosen, in pick order.
    pub placement: Vec<GpuId>,
    /// Communication cost of the placement (rounded to 3 decimals, as theirs).
    pub cost: f64,
    /// Minimum cost over the GPUs free at that decision (the per-decision optimum).
    pub optimum: f64,
    /// Step the job entered the queue.
    pub arrival: u32,
    /// Step it was placed.
    pub start: u32,
    /// Step it finished.
    pub finish: u32,
}

/// What an episode produced.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeResult {
    /// Every job, by id.
    pub jobs: Vec<JobRecord>,
    /// Final step.
    pub makespan: u32,
    /// Mean number of running jobs per step.
    pub throughput: f64,
    /// Picks the placer got wrong (replaced by the lowest usable GPU).
    pub placer_faults: u32,
}

impl EpisodeResult {
    /// Mean communication cost per job.
    pub fn comm_per_job(&self) -> f64 {
        mean(self.jobs.iter().map(|j| j.cost))
    }

    /// Mean per-decision optimum per job.
    pub fn optimum_per_job(&self) -> f64 {
        mean(self.jobs.iter().map(|j| j.optimum))
    }

    /// Their JCT: mean finish step counted from 0.
    pub fn jct_theirs(&self) -> f64 {
        mean(self.jobs.iter().map(|j| f64::from(j.finish)))
    }

    /// Mean finish − arrival.
    pub fn jct_minus_arrival(&self) -> f64 {
        mean(self.jobs.iter().map(|j| f64::from(j.finish - j.arrival)))
    }
}

fn mean(it: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = it.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { s / n as f64 }
}

/// Why an episode could not run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnvError {
    /// A job asks for more GPUs than the tree has.
    #[error("job {id} asks for {gpus} GPUs, the tree has {total}")]
    TooBig {
        /// Job index.
        id: u32,
        /// Its request.
        gpus: u16,
        /// GPUs in the tree.
        total: usize,
    },
    /// The step limit was reached.
    #[error("episode did not finish within {MAX_STEPS} steps")]
    TooLong,
}

struct Running {
    idx: usize,
    done: f64,
    rate: f64,
}

/// Rounds to 3 decimals as their `round(cost, 3)`.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The number of machines the all-reduce penalty counts for `gpus`.
fn machines_spanned<const G: usize>(topo: &Topology<G>, gpus: &[GpuId], variant: Variant) -> u32 {
    let per_rack = (topo.machine_count() / topo.rack_count().max(1)).max(1);
    let mut seen: Vec<usize> = gpus
        .iter()
        .map(|&g| {
            let m = usize::from(topo.machine_of(g).0);
            match variant {
                Variant::Compat => m % per_rack,
                Variant::Fixed => m,
            }
        })
        .collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len() as u32
}

/// Runs one FCFS episode of `jobs` on `topo` with `placer` (module docs). O(steps · (G +
/// running)) plus k picks and one exact-optimum search per job.
pub fn run_episode<const G: usize, P: Placer<G> + ?Sized>(
    topo: &Topology<G>,
    jobs: &[ProxJob],
    placer: &mut P,
    variant: Variant,
) -> Result<EpisodeResult, EnvError> {
    let total = topo.gpu_count();
    if let Some(j) = jobs
        .iter()
        .find(|j| usize::from(j.gpus) > total || j.gpus == 0)
    {
        return Err(EnvError::TooBig {
            id: j.id,
            gpus: j.gpus,
            total,
        });
    }
    let mut free = GpuMask::<G>::none();
    for g in 0..total as u16 {
        free.set(GpuId(g), true);
    }
    let mut queue: std::collections::VecDeque<usize> = (0..jobs.len().min(QUEUE_SLOTS)).collect();
    let mut next = queue.len();
    let mut arrival = vec![0u32; jobs.len()];
    let mut records: Vec<Option<JobRecord>> = vec![None; jobs.len()];
    let mut running: Vec<Running> = Vec::new();
    let (mut now, mut finished, mut faults, mut running_sum) = (0u32, 0usize, 0u32, 0u64);
    while finished < jobs.len() {
        now += 1;
        if now > MAX_STEPS {
            return Err(EnvError::TooLong);
        }
        if let Some(&head) = queue.front() {
            let job = &jobs[head];
            if free.count() >= usize::from(job.gpus) {
                queue.pop_front();
                let optimum = optimal_cost(topo, &free, usize::from(job.gpus)).unwrap_or(f64::NAN);
                let (placement, f) = place(topo, &mut free, job, placer);
                faults += f;
                let cost = round3(topo.comm_cost(&placement));
                let nr = machines_spanned(topo, &placement, variant);
                running.push(Running {
                    idx: head,
                    done: 0.0,
                    rate: job.work_per_step(job.gpus, nr, cost),
                });
                records[head] = Some(JobRecord {
                    id: job.id,
                    gpus: job.gpus,
                    placement,
                    cost,
                    optimum: round3(optimum),
                    arrival: arrival[head],
                    start: now,
                    finish: 0,
                });
                if next < jobs.len() {
                    arrival[next] = now;
                    queue.push_back(next);
                    next += 1;
                }
            }
        }
        running_sum += running.len() as u64;
        let work = |i: usize| match variant {
            Variant::Compat => jobs[i].work_bugged,
            Variant::Fixed => jobs[i].work_fixed,
        };
        for r in &mut running {
            r.done += r.rate;
        }
        running.retain(|r| {
            if r.done < work(r.idx) {
                return true;
            }
            if let Some(rec) = records[r.idx].as_mut() {
                rec.finish = now;
                for &g in &rec.placement {
                    free.set(g, true);
                }
            }
            finished += 1;
            false
        });
    }
    Ok(EpisodeResult {
        jobs: records.into_iter().flatten().collect(),
        makespan: now,
        throughput: running_sum as f64 / f64::from(now.max(1)),
        placer_faults: faults,
    })
}

/// Places one job pick by pick; returns its GPUs and the number of faulty picks.
fn place<const G: usize, P: Placer<G> + ?Sized>(
    topo: &Topology<G>,
    free: &mut GpuMask<G>,
    job: &ProxJob,
    placer: &mut P,
) -> (Vec<GpuId>, u32) {
    let core_job = Job::submitted(JobSpec::new(JobId(job.id), job.gpus), TimeMs(0));
    let mut picked = Vec::with_capacity(usize::from(job.gpus));
    let mut faults = 0;
    for _ in 0..job.gpus {
        let view = PlacementView {
            topology: topo,
            usable: free,
            picked: &picked,
            job: &core_job,
        };
        let gpu = match placer.pick(&view) {
            Some(g) if free.allows(g) => g,
            _ => {
                faults += 1;
                match free.first() {
                    Some(g) => g,
                    None => break,
                }
            }
        };
        free.set(gpu, false);
        picked.push(gpu);
    }
    (picked, faults)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proximity::jobs::load_anchor_sequences;
    use crate::proximity::proximity_tree;
    use gantry_core::placement::{FirstFit, LoadBalance};
    use std::collections::HashMap;
    use std::path::PathBuf;

    fn anchors() -> Option<PathBuf> {
        crate::test_support::shared("anchors/proximity-drl")
    }

    type Placed = HashMap<(u64, u32), (u32, u32, u32, Vec<u16>, f64)>;

    /// (seed, job) → (arrival, start, finish, gpus, cost) for one selector under FCFS.
    fn anchor_placements(dir: &std::path::Path, sel: &str) -> Placed {
        let mut rdr = csv::Reader::from_path(dir.join("placements_seeds0-19_all.csv")).unwrap();
        let mut out = HashMap::new();
        for rec in rdr.records() {
            let r = rec.unwrap();
            if &r[0] != "fcfs" || &r[1] != sel {
                continue;
            }
            let gpus = r[8]
                .split_whitespace()
                .map(|s| s.parse().unwrap())
                .collect();
            out.insert(
                (r[2].parse().unwrap(), r[3].parse().unwrap()),
                (
                    r[4].parse().unwrap(),
                    r[5].parse().unwrap(),
                    r[6].parse().unwrap(),
                    gpus,
                    r[9].parse().unwrap(),
                ),
            );
        }
        out
    }

    /// Step-exact replay of their episodes: same GPUs, same arrival, start and finish steps,
    /// for every job of seeds 0–19, with first-available and LoadBalance.
    #[test]
    fn replays_their_episodes_step_exact() {
        let Some(dir) = anchors() else { return };
        let seqs = load_anchor_sequences(&dir.join("job_sequences_seeds0-19.csv")).unwrap();
        let topo = proximity_tree();
        for sel in ["first", "loadbalance"] {
            let want = anchor_placements(&dir, sel);
            let mut mismatches = Vec::new();
            for (seed, jobs) in &seqs {
                let res = match sel {
                    "first" => run_episode(&topo, jobs, &mut FirstFit, Variant::Compat),
                    _ => run_episode(&topo, jobs, &mut LoadBalance, Variant::Compat),
                }
                .unwrap();
                for j in &res.jobs {
                    let w = &want[&(*seed, j.id)];
                    let mut gpus: Vec<u16> = j.placement.iter().map(|g| g.0).collect();
                    gpus.sort_unstable();
                    let mut wg = w.3.clone();
                    wg.sort_unstable();
                    let got = (j.arrival, j.start, j.finish, gpus, j.cost);
                    if got != (w.0, w.1, w.2, wg, w.4) {
                        mismatches.push(format!(
                            "{sel} seed {seed} job {}: got {got:?} want {w:?}",
                            j.id
                        ));
                    }
                }
            }
            assert!(
                mismatches.is_empty(),
                "{} mismatches, first: {:?}",
                mismatches.len(),
                &mismatches[..mismatches.len().min(5)]
            );
        }
    }

    #[test]
    fn oversize_job_is_an_error() {
        let topo = proximity_tree();
        let mut jobs = crate::proximity::jobs::episode_from(&[]);
        jobs.push(ProxJob {
            id: 0,
            gpus: 33,
            len_steps: 1,
            grad_mb: 1.0,
            d_m_tflop: 1.0,
            work_bugged: 1.0,
            work_fixed: 1.0,
        });
        assert!(matches!(
            run_episode(&topo, &jobs, &mut FirstFit, Variant::Compat),
            Err(EnvError::TooBig { .. })
        ));
    }
}
