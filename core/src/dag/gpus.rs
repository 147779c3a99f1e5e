//! Heterogeneous GPUs for DAG planning, behind one trait, [`Platform`]: how long a task runs
//! on a GPU and how long an edge's data takes between two GPUs.
//!
//! Two platforms:
//! - [`GpuPool`]: a speed per GPU; `run = work / speed` (the WORL-RTGS model, Du et al. 2025:
//!   `finish = start + W_i / C_g`).
//! - [`CostTable`]: a run time per (task, GPU type), the cost matrix of the HEFT paper
//!   (Topcuoglu, Hariri, Wu 2002, Fig. 2) or Gavel's measured per-type throughputs.
//!
//! Transfers: `transfer = data / bandwidth` between two different GPUs and 0 on the same GPU;
//! [`Bandwidth::Infinite`] makes every transfer 0, which reproduces the WORL code (it has no
//! transfer term). A per-pair bandwidth matrix is not modelled: the HEFT example's matrix is
//! uniform (all 1), and the host loader refuses a non-uniform one.

use super::graph::{Dag, TaskId};
use core::fmt;

/// Link speed between two different GPUs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bandwidth {
    /// Transfers take no time (WORL-RTGS's model).
    Infinite,
    /// `per_ms` data units per millisecond (1.0 with data given directly in ms, as in HEFT).
    PerMs(f64),
}

impl Bandwidth {
    /// Time to move `data` across one link: 0 for infinite bandwidth. O(1).
    pub fn transfer_ms(self, data: f64) -> f64 {
        match self {
            Bandwidth::Infinite => 0.0,
            Bandwidth::PerMs(b) => data / b,
        }
    }

    const fn or_infinite(self) -> Bandwidth {
        match self {
            Bandwidth::PerMs(b) if b > 0.0 && b < f64::INFINITY => self,
            _ => Bandwidth::Infinite,
        }
    }

    fn is_valid(self) -> bool {
        match self {
            Bandwidth::Infinite => true,
            Bandwidth::PerMs(b) => b.is_finite() && b > 0.0,
        }
    }
}

/// Why a platform refused a GPU or a setting. Capacity errors hand the item back.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum PlatformError {
    /// The GPU table is full; here is the refused speed (or type) back.
    Full {
        /// The refused GPU's speed (pools) or type index (cost tables).
        item: f64,
        /// The capacity.
        capacity: usize,
    },
    /// A speed or run time that is zero, negative, NaN or infinite (or negative for run times).
    BadValue(f64),
    /// A bandwidth that is not finite and positive.
    BadBandwidth,
    /// A GPU type index outside the table's `K` columns.
    UnknownType(usize),
    /// A task index outside the table.
    UnknownTask(usize),
}

impl fmt::Display for PlatformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlatformError::Full { capacity, .. } => write!(f, "GPU capacity {capacity} is full"),
            PlatformError::BadValue(v) => write!(f, "bad speed or run time {v}"),
            PlatformError::BadBandwidth => write!(f, "bandwidth must be finite and > 0"),
            PlatformError::UnknownType(k) => write!(f, "unknown GPU type {k}"),
            PlatformError::UnknownTask(t) => write!(f, "unknown task {t} in cost table"),
        }
    }
}

impl core::error::Error for PlatformError {}

/// The machine a DAG is planned on: GPU count, run times, transfer times. Implementations
/// must return finite, non-negative times for every task and GPU index in range.
pub trait Platform {
    /// Number of GPUs (`0..gpu_count` are valid GPU indices).
    fn gpu_count(&self) -> usize;
    /// Run time of `task` (whose reference work is `work_ms`) on GPU `gpu`. O(1).
    fn run_ms(&self, task: usize, work_ms: f64, gpu: usize) -> f64;
    /// The link model between two different GPUs.
    fn bandwidth(&self) -> Bandwidth;
    /// Time to move `data` from GPU `from` to GPU `to`: 0 when they are the same. O(1).
    fn transfer_ms(&self, data: f64, from: usize, to: usize) -> f64 {
        if from == to {
            0.0
        } else {
            self.bandwidth().transfer_ms(data)
        }
    }
    /// Whether [`transfer_ms`](Self::transfer_ms) is the provided one (0 on the same GPU, else
    /// `bandwidth().transfer_ms(data)` for every pair). Planners then compute a task's ready
    /// time on all GPUs at once in O(fan-in + P) instead of O(fan-in · P). An implementation
    /// that overrides `transfer_ms` with per-pair costs must keep the default `false`.
    fn uniform_transfers(&self) -> bool {
        false
    }
    /// Mean over GPUs of a task's run time, HEFT's `w̄_i`. O(P).
    fn mean_run_ms(&self, task: usize, work_ms: f64) -> f64 {
        let p = self.gpu_count();
        if p == 0 {
            return 0.0;
        }
        (0..p).map(|g| self.run_ms(task, work_ms, g)).sum::<f64>() / p as f64
    }
    /// Fastest run time of a task on any GPU. O(P).
    fn min_run_ms(&self, task: usize, work_ms: f64) -> f64 {
        (0..self.gpu_count())
            .map(|g| self.run_ms(task, work_ms, g))
            .fold(f64::INFINITY, f64::min)
    }
    /// A lower bound on the makespan from total work alone (the "area" bound). The default,
    /// valid for any platform, is `Σ_i min_g run(i, g) / P`: every task keeps some GPU busy at
    /// least its fastest run time and there are P GPUs. O(T·P).
    fn area_bound_ms<const T: usize, const E: usize>(&self, dag: &Dag<T, E>) -> f64 {
        let p = self.gpu_count();
        if p == 0 {
            return f64::INFINITY;
        }
        let total: f64 = (0..dag.task_count())
            .map(|t| self.min_run_ms(t, dag.work_ms(TaskId(t as u32))))
            .sum();
        total / p as f64
    }
}

/// GPUs with a relative speed each (1.0 = reference GPU) and one bandwidth. Memory `8·P`
/// bytes plus a few words.
#[derive(Clone, Debug)]
pub struct GpuPool<const P: usize> {
    count: usize,
    speed: [f64; P],
    bandwidth: Bandwidth,
}

impl<const P: usize> Default for GpuPool<P> {
    fn default() -> Self {
        Self::new(Bandwidth::Infinite)
    }
}

impl<const P: usize> GpuPool<P> {
    /// An empty pool with this link model (an invalid bandwidth falls back to infinite;
    /// [`set_bandwidth`](Self::set_bandwidth) reports it instead).
    pub const fn new(bandwidth: Bandwidth) -> Self {
        Self {
            count: 0,
            speed: [1.0; P],
            bandwidth: bandwidth.or_infinite(),
        }
    }

    /// Change the link model; refuses a non-positive or non-finite bandwidth. O(1).
    pub fn set_bandwidth(&mut self, bandwidth: Bandwidth) -> Result<(), PlatformError> {
        if !bandwidth.is_valid() {
            return Err(PlatformError::BadBandwidth);
        }
        self.bandwidth = bandwidth;
        Ok(())
    }

    /// Add a GPU of relative `speed` (> 0, finite); returns its index. O(1).
    pub fn add_gpu(&mut self, speed: f64) -> Result<usize, PlatformError> {
        if !(speed.is_finite() && speed > 0.0) {
            return Err(PlatformError::BadValue(speed));
        }
        let g = self.count;
        let Some(slot) = self.speed.get_mut(g) else {
            return Err(PlatformError::Full {
                item: speed,
                capacity: P,
            });
        };
        *slot = speed;
        self.count += 1;
        Ok(g)
    }

    /// Speeds of all GPUs. O(1).
    pub fn speeds(&self) -> &[f64] {
        &self.speed[..self.count]
    }
}

impl<const P: usize> Platform for GpuPool<P> {
    fn uniform_transfers(&self) -> bool {
        true
    }

    fn gpu_count(&self) -> usize {
        self.count
    }

    fn run_ms(&self, _task: usize, work_ms: f64, gpu: usize) -> f64 {
        work_ms / self.speeds().get(gpu).copied().unwrap_or(1.0)
    }

    fn bandwidth(&self) -> Bandwidth {
        self.bandwidth
    }

    fn mean_run_ms(&self, _task: usize, work_ms: f64) -> f64 {
        let p = self.count;
        if p == 0 {
            return 0.0;
        }
        self.speeds().iter().map(|s| work_ms / s).sum::<f64>() / p as f64
    }

    fn min_run_ms(&self, _task: usize, work_ms: f64) -> f64 {
        let fastest = self.speeds().iter().copied().fold(0.0, f64::max);
        if fastest > 0.0 {
            work_ms / fastest
        } else {
            f64::INFINITY
        }
    }

    /// `Σ work / Σ speed`: the pool finishes at best when all GPUs work all the time. O(T+P).
    fn area_bound_ms<const T: usize, const E: usize>(&self, dag: &Dag<T, E>) -> f64 {
        let capacity: f64 = self.speeds().iter().sum();
        if capacity > 0.0 {
            dag.total_work_ms() / capacity
        } else {
            f64::INFINITY
        }
    }
}

/// A run-time table: `run_ms(task, type)` for `T` tasks × `K` GPU types, and `P` GPUs each
/// of one type. The HEFT example is `K = P = 3` with GPU g of type g. Memory `8·T·K + 2·P`
/// bytes; tasks without a row run in 0 ms, so fill every task of the DAG.
#[derive(Clone, Debug)]
pub struct CostTable<const T: usize, const K: usize, const P: usize> {
    run: [[f64; K]; T],
    kind: [u16; P],
    count: usize,
    bandwidth: Bandwidth,
}

impl<const T: usize, const K: usize, const P: usize> Default for CostTable<T, K, P> {
    fn default() -> Self {
        Self::new(Bandwidth::Infinite)
    }
}

impl<const T: usize, const K: usize, const P: usize> CostTable<T, K, P> {
    /// An empty table (all run times 0, no GPUs) with this link model (an invalid bandwidth
    /// falls back to infinite; [`set_bandwidth`](Self::set_bandwidth) reports it instead).
    pub const fn new(bandwidth: Bandwidth) -> Self {
        Self {
            run: [[0.0; K]; T],
            kind: [0; P],
            count: 0,
            bandwidth: bandwidth.or_infinite(),
        }
    }

    /// Change the link model; refuses a non-positive or non-finite bandwidth. O(1).
    pub fn set_bandwidth(&mut self, bandwidth: Bandwidth) -> Result<(), PlatformError> {
        if !bandwidth.is_valid() {
            return Err(PlatformError::BadBandwidth);
        }
        self.bandwidth = bandwidth;
        Ok(())
    }

    /// Set the run time of `task` on GPUs of type `kind` (finite, ≥ 0). O(1).
    pub fn set_run_ms(
        &mut self,
        task: usize,
        kind: usize,
        run_ms: f64,
    ) -> Result<(), PlatformError> {
        if !(run_ms.is_finite() && run_ms >= 0.0) {
            return Err(PlatformError::BadValue(run_ms));
        }
        let row = self
            .run
            .get_mut(task)
            .ok_or(PlatformError::UnknownTask(task))?;
        let cell = row.get_mut(kind).ok_or(PlatformError::UnknownType(kind))?;
        *cell = run_ms;
        Ok(())
    }

    /// Add a GPU of type `kind` (< K); returns its index. O(1).
    pub fn add_gpu(&mut self, kind: usize) -> Result<usize, PlatformError> {
        if kind >= K {
            return Err(PlatformError::UnknownType(kind));
        }
        let g = self.count;
        let Some(slot) = self.kind.get_mut(g) else {
            return Err(PlatformError::Full {
                item: kind as f64,
                capacity: P,
            });
        };
        *slot = kind as u16;
        self.count += 1;
        Ok(g)
    }
}

impl<const T: usize, const K: usize, const P: usize> Platform for CostTable<T, K, P> {
    fn uniform_transfers(&self) -> bool {
        true
    }

    fn gpu_count(&self) -> usize {
        self.count
    }

    fn run_ms(&self, task: usize, _work_ms: f64, gpu: usize) -> f64 {
        let kind = self.kind[..self.count].get(gpu).copied().unwrap_or(0) as usize;
        self.run
            .get(task)
            .and_then(|row| row.get(kind))
            .copied()
            .unwrap_or(0.0)
    }

    fn bandwidth(&self) -> Bandwidth {
        self.bandwidth
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_run_time_is_work_over_speed_and_area_bound_is_work_over_capacity() {
        let mut pool: GpuPool<4> = GpuPool::new(Bandwidth::PerMs(2.0));
        pool.add_gpu(1.0).unwrap();
        pool.add_gpu(2.0).unwrap();
        assert_eq!(pool.run_ms(0, 8.0, 1), 4.0);
        assert_eq!(pool.min_run_ms(0, 8.0), 4.0);
        assert_eq!(pool.mean_run_ms(0, 8.0), 6.0);
        assert_eq!(pool.transfer_ms(10.0, 0, 1), 5.0);
        assert_eq!(pool.transfer_ms(10.0, 1, 1), 0.0);
        let mut d: Dag<2, 1> = Dag::new();
        d.add_task(6.0).unwrap();
        assert_eq!(pool.area_bound_ms(&d), 2.0);
        assert_eq!(pool.add_gpu(0.0), Err(PlatformError::BadValue(0.0)));
        assert_eq!(
            pool.set_bandwidth(Bandwidth::PerMs(-1.0)),
            Err(PlatformError::BadBandwidth)
        );
    }

    #[test]
    fn pool_full_hands_speed_back() {
        let mut pool: GpuPool<1> = GpuPool::default();
        pool.add_gpu(1.0).unwrap();
        assert_eq!(
            pool.add_gpu(3.0),
            Err(PlatformError::Full {
                item: 3.0,
                capacity: 1
            })
        );
    }

    #[test]
    fn cost_table_looks_up_by_type() {
        let mut t: CostTable<2, 2, 3> = CostTable::default();
        t.set_run_ms(1, 1, 7.0).unwrap();
        t.add_gpu(0).unwrap();
        t.add_gpu(1).unwrap();
        t.add_gpu(1).unwrap();
        assert_eq!(t.run_ms(1, 0.0, 2), 7.0);
        assert_eq!(t.run_ms(1, 0.0, 0), 0.0);
        assert_eq!(t.add_gpu(2), Err(PlatformError::UnknownType(2)));
        assert_eq!(t.set_run_ms(5, 0, 1.0), Err(PlatformError::UnknownTask(5)));
        assert_eq!(t.transfer_ms(3.0, 0, 1), 0.0);
    }
}
