//! Plans and the list-scheduling evaluator: the one place start and finish times are
//! computed, so every planner is scored the same way.
//!
//! # The model (WORL-RTGS, Du et al. 2025, with an optional transfer term)
//! Tasks are visited in the plan's order; each GPU runs its tasks one at a time, in that
//! order, without preemption and without filling earlier gaps:
//!
//! ```text
//! start_i  = max( max_{p ∈ preds(i)} (finish_p + transfer(p → i)), free_{gpu(i)} )
//! finish_i = start_i + run(i, gpu(i))            free_{gpu(i)} := finish_i
//! makespan = max_i finish_i
//! ```
//! `transfer(p → i) = data(p, i) / bandwidth` when p and i are on different GPUs, else 0
//! ([`Bandwidth::Infinite`] reproduces the WORL code).
//!
//! # Lower bound
//! `max(critical path, area)`: the critical path uses each task's fastest run time on any GPU
//! and zero transfers (no plan can overlap a chain); the area bound is the platform's
//! [`area_bound_ms`](Platform::area_bound_ms) (`Σ work / Σ speed` for a pool, `Σ_i min run /
//! P` for a table) — no plan beats all GPUs busy all the time.

use super::gpus::{Bandwidth, Platform};
use super::graph::{Dag, DagError};
use core::fmt;

/// A DAG plan: which GPU runs each task, and a priority order of all tasks that respects
/// precedence. Memory `6·T` bytes.
#[derive(Clone, Debug)]
pub struct Plan<const T: usize> {
    len: usize,
    gpu: [u16; T],
    order: [u32; T],
}

impl<const T: usize> Default for Plan<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize> Plan<T> {
    /// An empty plan (zero tasks).
    pub const fn new() -> Self {
        Self {
            len: 0,
            gpu: [0; T],
            order: [0; T],
        }
    }

    /// Size the plan for `tasks` tasks: every task on GPU 0, order `0..tasks`. O(tasks).
    pub fn reset(&mut self, tasks: usize) -> Result<(), PlanError> {
        if tasks > T {
            return Err(PlanError::TooManyTasks { capacity: T });
        }
        self.len = tasks;
        self.gpu[..tasks].fill(0);
        for (i, o) in self.order[..tasks].iter_mut().enumerate() {
            *o = i as u32;
        }
        Ok(())
    }

    /// Number of tasks. O(1).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the plan has no task. O(1).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// GPU of each task, indexed by task id. O(1).
    pub fn gpus(&self) -> &[u16] {
        &self.gpu[..self.len]
    }

    /// Mutable GPU of each task. O(1).
    pub fn gpus_mut(&mut self) -> &mut [u16] {
        &mut self.gpu[..self.len]
    }

    /// The priority order (task ids). O(1).
    pub fn order(&self) -> &[u32] {
        &self.order[..self.len]
    }

    /// Mutable priority order. O(1).
    pub fn order_mut(&mut self) -> &mut [u32] {
        &mut self.order[..self.len]
    }

    /// Both halves at once, for planners that write assignment and order together. O(1).
    pub fn parts_mut(&mut self) -> (&mut [u16], &mut [u32]) {
        (&mut self.gpu[..self.len], &mut self.order[..self.len])
    }

    /// Copy another plan into this one. O(len).
    pub fn copy_from(&mut self, other: &Plan<T>) {
        let n = other.len;
        self.len = n;
        self.gpu[..n].copy_from_slice(&other.gpu[..n]);
        self.order[..n].copy_from_slice(&other.order[..n]);
    }
}

/// Why a plan could not be evaluated or produced.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum PlanError {
    /// The DAG was refused (not sealed).
    Dag(DagError),
    /// The plan's length differs from the DAG's task count.
    WrongLength {
        /// Tasks in the plan.
        plan: usize,
        /// Tasks in the DAG.
        dag: usize,
    },
    /// More tasks than the plan / scratch capacity.
    TooManyTasks {
        /// The capacity.
        capacity: usize,
    },
    /// The platform has more GPUs than the scratch capacity `P`.
    TooManyGpus {
        /// The capacity.
        capacity: usize,
    },
    /// The platform has no GPU.
    NoGpus,
    /// The order names a task id outside the DAG.
    UnknownTask(u32),
    /// The order names a task twice.
    DuplicateTask(u32),
    /// A task is assigned to a GPU outside the platform.
    UnknownGpu {
        /// The task.
        task: u32,
        /// Its GPU.
        gpu: u16,
    },
    /// A search was continued on a platform with another GPU count than the one it was
    /// initialised for (tasks: [`WrongLength`](Self::WrongLength)).
    GpuCountChanged {
        /// GPUs at initialisation.
        initialized: usize,
        /// GPUs now.
        given: usize,
    },
    /// A task comes before one of its predecessors in the order.
    PrecedenceViolated {
        /// The task.
        task: u32,
        /// The predecessor that had not run yet.
        pred: u32,
    },
}

impl From<DagError> for PlanError {
    fn from(e: DagError) -> Self {
        PlanError::Dag(e)
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Dag(e) => write!(f, "{e}"),
            PlanError::WrongLength { plan, dag } => {
                write!(f, "plan has {plan} tasks, DAG has {dag}")
            }
            PlanError::TooManyTasks { capacity } => write!(f, "more than {capacity} tasks"),
            PlanError::TooManyGpus { capacity } => write!(f, "more than {capacity} GPUs"),
            PlanError::NoGpus => write!(f, "the platform has no GPU"),
            PlanError::UnknownTask(t) => write!(f, "plan names unknown task {t}"),
            PlanError::DuplicateTask(t) => write!(f, "plan names task {t} twice"),
            PlanError::UnknownGpu { task, gpu } => write!(f, "task {task} on unknown GPU {gpu}"),
            PlanError::GpuCountChanged { initialized, given } => write!(
                f,
                "initialised for {initialized} GPUs, continued with {given}"
            ),
            PlanError::PrecedenceViolated { task, pred } => {
                write!(f, "task {task} ordered before its predecessor {pred}")
            }
        }
    }
}

impl core::error::Error for PlanError {}

/// The two halves of the makespan lower bound (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LowerBound {
    /// Longest chain with every task at its fastest run time and no transfers.
    pub critical_path_ms: f64,
    /// Total work over total capacity.
    pub area_ms: f64,
}

impl LowerBound {
    /// The bound itself: the larger half.
    pub fn ms(&self) -> f64 {
        self.critical_path_ms.max(self.area_ms)
    }
}

/// Scratch for evaluating plans of up to `T` tasks on up to `P` GPUs; reuse it across calls,
/// nothing is allocated. Memory `17·T + 8·P` bytes. After a successful evaluation
/// [`start_ms`](Self::start_ms) and [`finish_ms`](Self::finish_ms) hold the schedule.
#[derive(Clone, Debug)]
pub struct Evaluator<const T: usize, const P: usize> {
    len: usize,
    start: [f64; T],
    finish: [f64; T],
    done: [bool; T],
    gpu_free: [f64; P],
}

impl<const T: usize, const P: usize> Default for Evaluator<T, P> {
    fn default() -> Self {
        Self::new()
    }
}

/// Check a DAG and platform against scratch capacities `T` and `P`; returns (tasks, gpus).
pub(crate) fn check_sizes<const T: usize, const P: usize, const DT: usize, const DE: usize>(
    dag: &Dag<DT, DE>,
    platform: &impl Platform,
) -> Result<(usize, usize), PlanError> {
    dag.require_sealed()?;
    let n = dag.task_count();
    if n > T {
        return Err(PlanError::TooManyTasks { capacity: T });
    }
    let p = platform.gpu_count();
    if p == 0 {
        return Err(PlanError::NoGpus);
    }
    if p > P || p > usize::from(u16::MAX) {
        return Err(PlanError::TooManyGpus { capacity: P });
    }
    Ok((n, p))
}

impl<const T: usize, const P: usize> Evaluator<T, P> {
    /// Fresh scratch.
    pub const fn new() -> Self {
        Self {
            len: 0,
            start: [0.0; T],
            finish: [0.0; T],
            done: [false; T],
            gpu_free: [0.0; P],
        }
    }

    /// Makespan of `plan` (see the module doc), validating it: every task exactly once,
    /// predecessors first, GPUs in range. O(T + E), allocation-free, deterministic.
    pub fn evaluate<const DT: usize, const DE: usize>(
        &mut self,
        dag: &Dag<DT, DE>,
        platform: &impl Platform,
        plan: &Plan<DT>,
    ) -> Result<f64, PlanError> {
        self.evaluate_parts(dag, platform, plan.order(), plan.gpus())
    }

    /// [`evaluate`](Self::evaluate) on bare slices: `order` lists task ids, `gpus[task]` is
    /// the task's GPU. Used by WOA, which keeps one order and many assignments. O(T + E).
    pub fn evaluate_parts<const DT: usize, const DE: usize>(
        &mut self,
        dag: &Dag<DT, DE>,
        platform: &impl Platform,
        order: &[u32],
        gpus: &[u16],
    ) -> Result<f64, PlanError> {
        let (n, p) = check_sizes::<T, P, DT, DE>(dag, platform)?;
        if order.len() != n || gpus.len() != n {
            return Err(PlanError::WrongLength {
                plan: order.len().min(gpus.len()),
                dag: n,
            });
        }
        self.len = 0;
        self.done[..n].fill(false);
        self.gpu_free[..p].fill(0.0);
        let bandwidth = platform.bandwidth();
        let mut makespan = 0.0f64;
        for &task in order {
            let t = task as usize;
            let done = self
                .done
                .get(t)
                .copied()
                .ok_or(PlanError::UnknownTask(task))?;
            if t >= n {
                return Err(PlanError::UnknownTask(task));
            }
            if done {
                return Err(PlanError::DuplicateTask(task));
            }
            let g = gpus[t];
            let gi = usize::from(g);
            if gi >= p {
                return Err(PlanError::UnknownGpu { task, gpu: g });
            }
            let ready = self.ready_ms(dag, bandwidth, gpus, t, g)?;
            let start = ready.max(self.gpu_free[gi]);
            let finish = start + platform.run_ms(t, dag.works_ms()[t], gi);
            self.start[t] = start;
            self.finish[t] = finish;
            self.done[t] = true;
            self.gpu_free[gi] = finish;
            makespan = makespan.max(finish);
        }
        self.len = n;
        Ok(makespan)
    }

    /// When all of task `t`'s inputs are on GPU `g`. O(fan-in).
    fn ready_ms<const DT: usize, const DE: usize>(
        &self,
        dag: &Dag<DT, DE>,
        bandwidth: Bandwidth,
        gpus: &[u16],
        t: usize,
        g: u16,
    ) -> Result<f64, PlanError> {
        let (srcs, edges) = dag.preds(t);
        let mut ready = 0.0f64;
        for (&s, &e) in srcs.iter().zip(edges) {
            let si = s as usize;
            if !self.done[si] {
                return Err(PlanError::PrecedenceViolated {
                    task: t as u32,
                    pred: s,
                });
            }
            let mut arrive = self.finish[si];
            if gpus[si] != g {
                arrive += bandwidth.transfer_ms(dag.edge_data(e));
            }
            ready = ready.max(arrive);
        }
        Ok(ready)
    }

    /// Start times of the last successful evaluation, indexed by task id. O(1).
    pub fn start_ms(&self) -> &[f64] {
        &self.start[..self.len]
    }

    /// Finish times of the last successful evaluation, indexed by task id. O(1).
    pub fn finish_ms(&self) -> &[f64] {
        &self.finish[..self.len]
    }

    /// The makespan lower bound (see the module doc); uses this scratch. O(T·P + E).
    pub fn lower_bound<const DT: usize, const DE: usize>(
        &mut self,
        dag: &Dag<DT, DE>,
        platform: &impl Platform,
    ) -> Result<LowerBound, PlanError> {
        let (n, _) = check_sizes::<T, P, DT, DE>(dag, platform)?;
        self.len = 0;
        let mut critical = 0.0f64;
        for &task in dag.topo_order() {
            let t = task as usize;
            let (srcs, _) = dag.preds(t);
            let ready = srcs
                .iter()
                .map(|&s| self.finish[s as usize])
                .fold(0.0, f64::max);
            let f = ready + platform.min_run_ms(t, dag.works_ms()[t]);
            self.finish[t] = f;
            critical = critical.max(f);
        }
        let _ = n;
        Ok(LowerBound {
            critical_path_ms: critical,
            area_ms: platform.area_bound_ms(dag),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{GpuPool, TaskId};

    /// 0 → {1, 2} → 3, works 2, 4, 6, 2, edge data 10 each.
    fn diamond() -> Dag<8, 8> {
        let mut d = Dag::new();
        for w in [2.0, 4.0, 6.0, 2.0] {
            d.add_task(w).unwrap();
        }
        for (a, b) in [(0, 1), (0, 2), (1, 3), (2, 3)] {
            d.add_edge(TaskId(a), TaskId(b), 10.0).unwrap();
        }
        d.seal().unwrap();
        d
    }

    fn pool(bandwidth: Bandwidth) -> GpuPool<4> {
        let mut p = GpuPool::new(bandwidth);
        p.add_gpu(1.0).unwrap();
        p.add_gpu(2.0).unwrap();
        p
    }

    fn plan(gpus: &[u16], order: &[u32]) -> Plan<8> {
        let mut p = Plan::new();
        p.reset(gpus.len()).unwrap();
        p.gpus_mut().copy_from_slice(gpus);
        p.order_mut().copy_from_slice(order);
        p
    }

    /// Data-driven: (bandwidth, gpus, order, expected makespan).
    #[test]
    fn makespans_by_hand() {
        let cases: &[(Bandwidth, &[u16], &[u32], f64)] = &[
            // All on GPU 0: serial 2+4+6+2.
            (Bandwidth::Infinite, &[0, 0, 0, 0], &[0, 1, 2, 3], 14.0),
            // All on the 2× GPU.
            (Bandwidth::PerMs(1.0), &[1, 1, 1, 1], &[0, 1, 2, 3], 7.0),
            // 0 on GPU 1 (0..1), 1 on GPU 0 (1..5), 2 on GPU 1 (1..4), 3 on GPU 1 (5..6).
            (Bandwidth::Infinite, &[1, 0, 1, 1], &[0, 1, 2, 3], 6.0),
            // Same with bandwidth 10: 1 starts 1+1=2, ends 6; 3 ready max(6+1, 4)=7 → 8.
            (Bandwidth::PerMs(10.0), &[1, 0, 1, 1], &[0, 1, 2, 3], 8.0),
            // Order 2 before 1 changes nothing across GPUs.
            (Bandwidth::Infinite, &[1, 0, 1, 1], &[0, 2, 1, 3], 6.0),
        ];
        let d = diamond();
        let mut ev: Evaluator<8, 4> = Evaluator::new();
        for (i, &(bw, gpus, order, want)) in cases.iter().enumerate() {
            let got = ev.evaluate(&d, &pool(bw), &plan(gpus, order)).unwrap();
            assert_eq!(got, want, "case {i}");
        }
        assert_eq!(ev.finish_ms().len(), 4);
    }

    #[test]
    fn bad_plans_are_refused() {
        let d = diamond();
        let p = pool(Bandwidth::Infinite);
        let mut ev: Evaluator<8, 4> = Evaluator::new();
        let cases: &[(&[u16], &[u32], PlanError)] = &[
            (
                &[0, 0, 0],
                &[0, 1, 2],
                PlanError::WrongLength { plan: 3, dag: 4 },
            ),
            (&[0, 0, 0, 0], &[0, 1, 1, 3], PlanError::DuplicateTask(1)),
            (&[0, 0, 0, 0], &[0, 1, 9, 3], PlanError::UnknownTask(9)),
            (
                &[0, 0, 0, 0],
                &[0, 3, 1, 2],
                PlanError::PrecedenceViolated { task: 3, pred: 1 },
            ),
            (
                &[0, 5, 0, 0],
                &[0, 1, 2, 3],
                PlanError::UnknownGpu { task: 1, gpu: 5 },
            ),
        ];
        for (gpus, order, want) in cases {
            assert_eq!(ev.evaluate_parts(&d, &p, order, gpus), Err(*want));
        }
        let mut unsealed: Dag<8, 8> = Dag::new();
        unsealed.add_task(1.0).unwrap();
        assert_eq!(
            ev.evaluate_parts(&unsealed, &p, &[0], &[0]),
            Err(PlanError::Dag(DagError::NotSealed))
        );
        let mut small: Evaluator<8, 1> = Evaluator::new();
        assert_eq!(
            small.evaluate_parts(&d, &p, &[0, 1, 2, 3], &[0; 4]),
            Err(PlanError::TooManyGpus { capacity: 1 })
        );
    }

    #[test]
    fn lower_bound_is_max_of_critical_path_and_area() {
        let d = diamond();
        let mut ev: Evaluator<8, 4> = Evaluator::new();
        let lb = ev.lower_bound(&d, &pool(Bandwidth::PerMs(1.0))).unwrap();
        // Fastest GPU speed 2: chain 0→2→3 = (2+6+2)/2 = 5; area 14/3.
        assert_eq!(lb.critical_path_ms, 5.0);
        assert!((lb.area_ms - 14.0 / 3.0).abs() < 1e-12);
        assert_eq!(lb.ms(), 5.0);
    }
}
