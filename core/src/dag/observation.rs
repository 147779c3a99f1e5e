//! An incremental list schedule and the per-GPU observation rows a learned planner (the
//! host's Double DQN) scores: one definition for training and inference, so the two cannot
//! drift apart.
//!
//! # The schedule ([`ListState`])
//! Tasks are placed one at a time in HEFT's upward-rank order ([`upward_rank_order`]); each
//! goes to the end of its GPU's queue, exactly as the [`Evaluator`](super::Evaluator) runs a
//! plan: `start = max(ready_g, free_g)`, `finish = start + run(t, g)`, where `ready_g` is when
//! every predecessor's output is on GPU g (transfer added when the predecessor ran elsewhere).
//! So the makespan a [`ListState`] ends with equals the evaluator's makespan of
//! [`ListState::write_plan`] (tested).
//!
//! # Observation layout ([`OBS_WIDTH`] = 14 `f32` per GPU row, row-major `[P, 14]`)
//! `u` = the task's mean run time over the GPUs (its own time scale; the DAG's mean task run
//! time if that is 0, else 1). Every feature is bounded, so one network serves any DAG size,
//! time unit and GPU count. Columns 0–8 describe GPU g for the task, 9–13 the task (the same
//! in every row, so shared weights see them too).
//!
//! | col | name       | value                                                              |
//! |-----|------------|--------------------------------------------------------------------|
//! | 0   | `eft_rel`  | `(EFT_g − min_h EFT_h) / u`, clipped to [0, 8]                     |
//! | 1   | `wait`     | `(free_g − ready_g) / u`, clipped to [−8, 8] (> 0: task waits)     |
//! | 2   | `run_rel`  | `run(t, g) / u`, clipped to [0, 8]                                 |
//! | 3   | `speed`    | `min_h run(t, h) / run(t, g)` in (0, 1] (1 = fastest for the task) |
//! | 4   | `locality` | share of the predecessors' data already on g (by count if no data) |
//! | 5   | `load_rel` | `busy_g / mean_h busy_h`, clipped to [0, 8] (0 when nothing placed)|
//! | 6   | `grow`     | `(EFT_g − partial makespan) / u`, clipped to [−8, 8]               |
//! | 7   | `is_best`  | 1 if `EFT_g` is the minimum, else 0                                |
//! | 8   | `free_rel` | `(free_g − min_h free_h) / u`, clipped to [0, 8]                   |
//! | 9   | `rank_rel` | `rank_u(t) / max rank_u`                                           |
//! | 10  | `progress` | tasks placed / tasks                                               |
//! | 11  | `size`     | `u / mean task u`, clipped to [0, 8]                               |
//! | 12  | `succ`     | `s / (1 + s)`, s = number of successors                            |
//! | 13  | `gpus`     | `ln P / ln 1024`                                                   |
//!
//! `EFT_g = max(ready_g, free_g) + run(t, g)`. Cost of one observation: O(fan-in + P), thanks
//! to the top-two trick for `ready_g` (the latest predecessor arrival from another GPU is
//! either the overall latest or, if that one is on g, the latest from a GPU other than its).

use super::eval::{Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;
use super::heft::upward_rank_order;

/// Features per GPU row (see the module's layout table).
pub const OBS_WIDTH: usize = 14;
/// Layout version, stored in exported models' metadata; bump when the table changes.
pub const OBS_LAYOUT_VERSION: u32 = 1;
/// Clip bound of the unbounded features.
const CLIP: f64 = 8.0;

/// An incremental list schedule of up to `T` tasks on up to `P` GPUs, with the scratch for
/// observations. Memory `38·T + 40·P` bytes; nothing is allocated.
#[derive(Clone, Debug)]
pub struct ListState<const T: usize, const P: usize> {
    tasks: usize,
    gpus: usize,
    placed: usize,
    makespan_ms: f64,
    max_rank: f64,
    mean_u: f64,
    finish: [f64; T],
    gpu: [u16; T],
    rank: [f64; T],
    order: [u32; T],
    pos: [u32; T],
    free: [f64; P],
    busy: [f64; P],
    // Candidate scratch for `current` (valid after `candidates`).
    current: Option<u32>,
    ready: [f64; P],
    local: [f64; P],
    eft: [f64; P],
}

impl<const T: usize, const P: usize> Default for ListState<T, P> {
    fn default() -> Self {
        Self::new()
    }
}

/// Clip to `[lo, hi]`, NaN to `lo`.
fn clip(x: f64, lo: f64, hi: f64) -> f32 {
    if x.is_nan() {
        lo as f32
    } else {
        x.clamp(lo, hi) as f32
    }
}

impl<const T: usize, const P: usize> ListState<T, P> {
    /// Empty state.
    pub const fn new() -> Self {
        Self {
            tasks: 0,
            gpus: 0,
            placed: 0,
            makespan_ms: 0.0,
            max_rank: 0.0,
            mean_u: 1.0,
            finish: [0.0; T],
            gpu: [0; T],
            rank: [0.0; T],
            order: [0; T],
            pos: [0; T],
            free: [0.0; P],
            busy: [0.0; P],
            current: None,
            ready: [0.0; P],
            local: [0.0; P],
            eft: [0.0; P],
        }
    }

    /// Start an empty schedule of `dag` on `platform`: upward ranks and the placing order.
    /// O(T·P + E + T log T).
    pub fn reset<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> Result<(), PlanError> {
        let (n, p) = check_sizes::<T, P, T, E>(dag, platform)?;
        upward_rank_order(
            dag,
            platform,
            &mut self.rank,
            &mut self.order,
            &mut self.pos,
        )?;
        self.tasks = n;
        self.gpus = p;
        self.placed = 0;
        self.makespan_ms = 0.0;
        self.current = None;
        self.free[..p].fill(0.0);
        self.busy[..p].fill(0.0);
        self.max_rank = self.rank[..n].iter().copied().fold(0.0, f64::max);
        let works = dag.works_ms();
        let total: f64 = (0..n).map(|t| platform.mean_run_ms(t, works[t])).sum();
        self.mean_u = if n > 0 && total > 0.0 {
            total / n as f64
        } else {
            1.0
        };
        Ok(())
    }

    /// Restart an empty schedule of the DAG of the last [`reset`](Self::reset) with the
    /// caller's placing `order` instead of the rank order (ranks and time scale are kept).
    /// The order must name every task once and put each task after its predecessors; WOA's
    /// EFT-priority decoding places its whales this way. O(T + E).
    pub fn restart_with_order<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        order: &[u32],
    ) -> Result<(), PlanError> {
        let n = self.tasks;
        if order.len() != n || dag.task_count() != n {
            return Err(PlanError::WrongLength {
                plan: order.len(),
                dag: dag.task_count(),
            });
        }
        self.pos[..n].fill(u32::MAX);
        for (k, &task) in order.iter().enumerate() {
            match self
                .pos
                .get_mut(task as usize)
                .filter(|_| (task as usize) < n)
            {
                None => return Err(PlanError::UnknownTask(task)),
                Some(p) if *p != u32::MAX => return Err(PlanError::DuplicateTask(task)),
                Some(p) => *p = k as u32,
            }
        }
        for &task in order {
            let t = task as usize;
            for &pred in dag.preds(t).0 {
                if self.pos[pred as usize] > self.pos[t] {
                    return Err(PlanError::PrecedenceViolated { task, pred });
                }
            }
        }
        self.order[..n].copy_from_slice(order);
        self.placed = 0;
        self.makespan_ms = 0.0;
        self.current = None;
        self.free[..self.gpus].fill(0.0);
        self.busy[..self.gpus].fill(0.0);
        Ok(())
    }

    /// The DAG's mean task run time (mean over tasks of each task's mean run time over the
    /// GPUs; 1 if that is 0): the time scale of rewards and features. O(1).
    pub fn time_scale_ms(&self) -> f64 {
        self.mean_u
    }

    /// Tasks in the DAG. O(1).
    pub fn tasks(&self) -> usize {
        self.tasks
    }

    /// GPUs of the platform. O(1).
    pub fn gpus(&self) -> usize {
        self.gpus
    }

    /// Tasks placed so far. O(1).
    pub fn placed(&self) -> usize {
        self.placed
    }

    /// The placing order (upward rank, a topological order). O(1).
    pub fn order(&self) -> &[u32] {
        &self.order[..self.tasks]
    }

    /// The next task to place, or `None` when all are placed. O(1).
    pub fn next_task(&self) -> Option<u32> {
        (self.placed < self.tasks).then(|| self.order[self.placed])
    }

    /// The partial makespan (latest finish so far). O(1).
    pub fn makespan_ms(&self) -> f64 {
        self.makespan_ms
    }

    /// GPU of each task placed so far (others: 0), by task id. O(1).
    pub fn assignment(&self) -> &[u16] {
        &self.gpu[..self.tasks]
    }

    /// Earliest finish time of the next task on each GPU (after [`candidates`](Self::candidates)
    /// or [`observe`](Self::observe)). O(1).
    pub fn eft_ms(&self) -> &[f64] {
        &self.eft[..self.gpus]
    }

    /// Compute ready time, locality and EFT of the next task on every GPU.
    /// O(fan-in + P). Errors if every task is placed.
    pub fn candidates<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
    ) -> Result<u32, PlanError> {
        let task = self.next_task().ok_or(PlanError::WrongLength {
            plan: self.placed,
            dag: self.tasks,
        })?;
        let t = task as usize;
        let p = self.gpus;
        let bandwidth = platform.bandwidth();
        let (srcs, edges) = dag.preds(t);
        // Latest arrival from another GPU: top two over distinct GPUs; own-GPU finishes.
        let (mut best1, mut best1_gpu, mut best2) = (0.0f64, u16::MAX, 0.0f64);
        let mut total_data = 0.0f64;
        self.ready[..p].fill(0.0);
        self.local[..p].fill(0.0);
        for (&s, &e) in srcs.iter().zip(edges) {
            let (si, data) = (s as usize, dag.edge_data(e));
            total_data += data;
            let g = self.gpu[si];
            let arrive = self.finish[si] + bandwidth.transfer_ms(data);
            if arrive > best1 {
                if g != best1_gpu {
                    best2 = best1;
                }
                (best1, best1_gpu) = (arrive, g);
            } else if g != best1_gpu && arrive > best2 {
                best2 = arrive;
            }
        }
        // `ready[g]` first holds the latest own-GPU finish, `local[g]` the data on g.
        for (&s, &e) in srcs.iter().zip(edges) {
            let si = s as usize;
            let gi = usize::from(self.gpu[si]);
            let weight = if total_data > 0.0 {
                dag.edge_data(e) / total_data
            } else {
                1.0 / srcs.len() as f64
            };
            if let (Some(r), Some(l)) = (self.ready.get_mut(gi), self.local.get_mut(gi)) {
                *r = r.max(self.finish[si]);
                *l += weight;
            }
        }
        let works = dag.works_ms();
        for g in 0..p {
            let other = if g == usize::from(best1_gpu) {
                best2
            } else {
                best1
            };
            let ready = self.ready[g].max(other);
            self.ready[g] = ready;
            self.eft[g] = ready.max(self.free[g]) + platform.run_ms(t, works[t], g);
        }
        self.current = Some(task);
        Ok(task)
    }

    /// Write the observation of the next task into `out` (`P·OBS_WIDTH` floats, row-major by
    /// GPU; layout in the module doc) and return the task. O(fan-in + P).
    pub fn observe<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        out: &mut [f32],
    ) -> Result<u32, PlanError> {
        let p = self.gpus;
        if out.len() < p * OBS_WIDTH {
            return Err(PlanError::TooManyGpus {
                capacity: out.len() / OBS_WIDTH,
            });
        }
        let task = self.candidates(dag, platform)?;
        let t = task as usize;
        let works = dag.works_ms();
        let mean_run = platform.mean_run_ms(t, works[t]);
        let u = if mean_run > 0.0 {
            mean_run
        } else {
            self.mean_u
        };
        let min_run = platform.min_run_ms(t, works[t]);
        let min_eft = self.eft[..p].iter().copied().fold(f64::INFINITY, f64::min);
        let min_free = self.free[..p].iter().copied().fold(f64::INFINITY, f64::min);
        let mean_busy = self.busy[..p].iter().sum::<f64>() / p as f64;
        let succ = dag.succs(t).0.len() as f64;
        let task_cols = [
            if self.max_rank > 0.0 {
                (self.rank[t] / self.max_rank) as f32
            } else {
                0.0
            },
            self.placed as f32 / self.tasks.max(1) as f32,
            clip(u / self.mean_u, 0.0, CLIP),
            (succ / (1.0 + succ)) as f32,
            (libm::log(p as f64) / libm::log(1024.0)) as f32,
        ];
        for (g, row) in out.chunks_exact_mut(OBS_WIDTH).take(p).enumerate() {
            let run = platform.run_ms(t, works[t], g);
            let eft = self.eft[g];
            row[0] = clip((eft - min_eft) / u, 0.0, CLIP);
            row[1] = clip((self.free[g] - self.ready[g]) / u, -CLIP, CLIP);
            row[2] = clip(run / u, 0.0, CLIP);
            row[3] = if run > 0.0 {
                clip(min_run / run, 0.0, 1.0)
            } else {
                1.0
            };
            row[4] = clip(self.local[g], 0.0, 1.0);
            row[5] = if mean_busy > 0.0 {
                clip(self.busy[g] / mean_busy, 0.0, CLIP)
            } else {
                0.0
            };
            row[6] = clip((eft - self.makespan_ms) / u, -CLIP, CLIP);
            row[7] = if eft <= min_eft { 1.0 } else { 0.0 };
            row[8] = clip((self.free[g] - min_free) / u, 0.0, CLIP);
            row[9..].copy_from_slice(&task_cols);
        }
        Ok(task)
    }

    /// Place the next task on GPU `g` (after [`candidates`](Self::candidates) or
    /// [`observe`](Self::observe) for that task) and return the new partial makespan. O(1).
    pub fn place<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        g: usize,
    ) -> Result<f64, PlanError> {
        let task = match self.current {
            Some(t) if Some(t) == self.next_task() => t,
            _ => self.candidates(dag, platform)?,
        };
        let t = task as usize;
        if g >= self.gpus {
            return Err(PlanError::UnknownGpu {
                task,
                gpu: g.min(usize::from(u16::MAX)) as u16,
            });
        }
        let finish = self.eft[g];
        let run = platform.run_ms(t, dag.works_ms()[t], g);
        self.finish[t] = finish;
        self.gpu[t] = g as u16;
        self.free[g] = finish;
        self.busy[g] += run;
        self.makespan_ms = self.makespan_ms.max(finish);
        self.placed += 1;
        self.current = None;
        Ok(self.makespan_ms)
    }

    /// The GPU with the earliest finish time for the next task (ties: lowest index), from
    /// the last [`candidates`](Self::candidates). O(P).
    pub fn best_eft_gpu(&self) -> usize {
        let mut best = 0;
        for g in 1..self.gpus {
            if self.eft[g] < self.eft[best] {
                best = g;
            }
        }
        best
    }

    /// The finished schedule as a plan: the assignment and the placing order. O(T).
    pub fn write_plan(&self, out: &mut Plan<T>) -> Result<(), PlanError> {
        let n = self.tasks;
        out.reset(n)?;
        let (g, o) = out.parts_mut();
        g.copy_from_slice(&self.gpu[..n]);
        o.copy_from_slice(&self.order[..n]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededRng;
    use crate::dag::test_support::RandomDagShape;
    use crate::dag::{Bandwidth, Evaluator, GpuPool};

    fn random_dag(seed: u64, n: usize, degree: u32) -> Dag<64, 512> {
        let shape = RandomDagShape {
            base_work: 5.0,
            work_span: 50,
            data_span: 30,
        };
        crate::dag::test_support::random_dag(seed, n, degree, shape)
    }

    fn pool(bw: Bandwidth) -> GpuPool<8> {
        let mut p = GpuPool::new(bw);
        for s in [1.0, 0.5, 2.0, 1.25] {
            p.add_gpu(s).unwrap();
        }
        p
    }

    /// Random placements: the state's makespan equals the evaluator's on the written plan,
    /// and every row is finite and within the documented ranges.
    #[test]
    fn schedule_matches_evaluator_and_rows_are_bounded() {
        for (seed, bw) in [
            (1, Bandwidth::Infinite),
            (2, Bandwidth::PerMs(2.0)),
            (3, Bandwidth::PerMs(0.5)),
        ] {
            let dag = random_dag(seed, 40, 3);
            let pl = pool(bw);
            let mut s: ListState<64, 8> = ListState::new();
            s.reset(&dag, &pl).unwrap();
            let mut rng = SeededRng::new(seed);
            let mut rows = [0.0f32; 8 * OBS_WIDTH];
            while s.next_task().is_some() {
                s.observe(&dag, &pl, &mut rows).unwrap();
                for row in rows.chunks_exact(OBS_WIDTH).take(4) {
                    assert!(row.iter().all(|x| x.is_finite() && x.abs() <= 8.0));
                    assert!((0.0..=1.0).contains(&row[3]) && (0.0..=1.0).contains(&row[4]));
                }
                assert!(rows.chunks_exact(OBS_WIDTH).take(4).any(|r| r[7] == 1.0));
                s.place(&dag, &pl, rng.below(4) as usize).unwrap();
            }
            let mut plan: Plan<64> = Plan::new();
            s.write_plan(&mut plan).unwrap();
            let mut ev: Evaluator<64, 8> = Evaluator::new();
            let ms = ev.evaluate(&dag, &pl, &plan).unwrap();
            assert_eq!(ms.to_bits(), s.makespan_ms().to_bits(), "seed {seed}");
        }
    }

    /// EFT by the top-two trick equals the brute-force EFT over predecessors.
    #[test]
    fn eft_matches_brute_force() {
        let dag = random_dag(7, 50, 4);
        let pl = pool(Bandwidth::PerMs(1.0));
        let mut s: ListState<64, 8> = ListState::new();
        s.reset(&dag, &pl).unwrap();
        let mut rng = SeededRng::new(3);
        while let Some(task) = s.next_task() {
            s.candidates(&dag, &pl).unwrap();
            let t = task as usize;
            for g in 0..4 {
                let (srcs, edges) = dag.preds(t);
                let mut ready = 0.0f64;
                for (&p, &e) in srcs.iter().zip(edges) {
                    let c = if usize::from(s.assignment()[p as usize]) == g {
                        0.0
                    } else {
                        dag.edge_data(e)
                    };
                    ready = ready.max(s.finish[p as usize] + c);
                }
                let eft = ready.max(s.free[g]) + pl.run_ms(t, dag.works_ms()[t], g);
                assert_eq!(eft.to_bits(), s.eft_ms()[g].to_bits());
            }
            let g = if rng.below(2) == 0 {
                s.best_eft_gpu()
            } else {
                rng.below(4) as usize
            };
            s.place(&dag, &pl, g).unwrap();
        }
        assert_eq!(s.placed(), 50);
        assert!(s.candidates(&dag, &pl).is_err());
    }

    #[test]
    fn bad_calls_are_refused() {
        let dag = random_dag(1, 5, 1);
        let pl = pool(Bandwidth::Infinite);
        let mut s: ListState<64, 8> = ListState::new();
        s.reset(&dag, &pl).unwrap();
        let mut short = [0.0f32; OBS_WIDTH];
        assert!(s.observe(&dag, &pl, &mut short).is_err());
        assert!(matches!(
            s.place(&dag, &pl, 9),
            Err(PlanError::UnknownGpu { .. })
        ));
        let mut small: ListState<64, 2> = ListState::new();
        assert_eq!(
            small.reset(&dag, &pl),
            Err(PlanError::TooManyGpus { capacity: 2 })
        );
    }

    /// A caller's order is checked (permutation, precedence) and then placed as given; the
    /// makespan still equals the evaluator's.
    #[test]
    fn restart_with_order_checks_and_uses_the_order() {
        let dag = random_dag(4, 30, 2);
        let pl = pool(Bandwidth::PerMs(2.0));
        let mut s: ListState<64, 8> = ListState::new();
        s.reset(&dag, &pl).unwrap();
        let topo: [u32; 30] = core::array::from_fn(|i| dag.topo_order()[i]);
        s.restart_with_order(&dag, &topo).unwrap();
        assert_eq!(s.order(), &topo[..]);
        while s.next_task().is_some() {
            s.candidates(&dag, &pl).unwrap();
            let g = s.best_eft_gpu();
            s.place(&dag, &pl, g).unwrap();
        }
        let mut plan = Plan::new();
        s.write_plan(&mut plan).unwrap();
        let mut ev: Evaluator<64, 8> = Evaluator::new();
        assert_eq!(ev.evaluate(&dag, &pl, &plan).unwrap(), s.makespan_ms());
        assert!(matches!(
            s.restart_with_order(&dag, &topo[..29]),
            Err(PlanError::WrongLength { .. })
        ));
        let mut dup = topo;
        dup[29] = dup[0];
        assert_eq!(
            s.restart_with_order(&dag, &dup),
            Err(PlanError::DuplicateTask(dup[0]))
        );
        let mut unknown = topo;
        unknown[3] = 99;
        assert_eq!(
            s.restart_with_order(&dag, &unknown),
            Err(PlanError::UnknownTask(99))
        );
        let mut reversed = topo;
        reversed.reverse();
        assert!(matches!(
            s.restart_with_order(&dag, &reversed),
            Err(PlanError::PrecedenceViolated { .. })
        ));
    }
}
