//! A DAG of tasks with fixed capacity: `T` tasks, `E` edges, compressed-sparse-row (CSR)
//! adjacency in both directions and an allocation-free topological order.
//!
//! # Life cycle
//! 1. [`Dag::new`] (a `const fn`) or [`Dag::clear`];
//! 2. [`Dag::add_task`] and [`Dag::add_edge`] in any order (edges name tasks already added);
//!    each call validates its input and refuses it with a typed [`DagError`];
//! 3. [`Dag::seal`] builds the CSR arrays and the topological order (Kahn), refusing a cycle.
//!    Planners and the evaluator only accept a sealed DAG; adding anything unseals it.
//!
//! # Memory
//! Everything is inline: `32·T + 32·E` bytes plus a few words. `Dag<16_384, 1_048_576>` (the
//! host's capacity, enough for the WORL slices at synthetic degree 100) is about 34 MiB, so the
//! host keeps it in a `Box` (see `host/src/dag/`); `Dag<64, 512>` is 18 KiB.
//!
//! Duplicate edges are accepted and kept (they change nothing in a max-plus evaluation);
//! the fan-in limit counts them.

use core::fmt;

/// A task's index in its [`Dag`]: `0..task_count`, in the order tasks were added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u32);

impl TaskId {
    /// The id as an array index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {}", self.0)
    }
}

/// One precedence edge: `to` may start only after `from` finished (and its `data` arrived).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Edge {
    /// The predecessor.
    pub from: TaskId,
    /// The successor.
    pub to: TaskId,
    /// Data sent along the edge, in the unit the platform's bandwidth divides (e.g. MB, or
    /// directly milliseconds at unit bandwidth as in the HEFT paper's cost matrix).
    pub data: f64,
}

/// Why a DAG refused a task, an edge or sealing. Capacity errors hand the item back.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum DagError {
    /// The task table is full; here is the refused work back.
    TaskCapacityFull {
        /// The refused task's work.
        work_ms: f64,
        /// The capacity `T`.
        capacity: usize,
    },
    /// The edge table is full; here is the refused edge back.
    EdgeCapacityFull {
        /// The refused edge.
        edge: Edge,
        /// The capacity `E`.
        capacity: usize,
    },
    /// Work is negative, NaN or infinite.
    BadWork {
        /// The refused work.
        work_ms: f64,
    },
    /// Edge data is negative, NaN or infinite.
    BadData(Edge),
    /// An edge named a task that does not exist.
    UnknownTask(TaskId),
    /// An edge from a task to itself.
    SelfEdge(TaskId),
    /// The successor would get more predecessors than the configured fan-in limit.
    FanInAboveCapacity {
        /// The refused edge.
        edge: Edge,
        /// The limit ([`Dag::set_max_fan_in`]).
        max_fan_in: u32,
    },
    /// Sealing found a cycle; this task is on it or downstream of it.
    Cycle(TaskId),
    /// A planner or the evaluator was given a DAG that is not sealed.
    NotSealed,
}

impl fmt::Display for DagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DagError::TaskCapacityFull { capacity, .. } => {
                write!(f, "DAG task capacity {capacity} is full")
            }
            DagError::EdgeCapacityFull { capacity, .. } => {
                write!(f, "DAG edge capacity {capacity} is full")
            }
            DagError::BadWork { work_ms } => write!(f, "task work {work_ms} ms is not finite ≥ 0"),
            DagError::BadData(e) => write!(
                f,
                "edge {}→{} data {} is not finite ≥ 0",
                e.from.0, e.to.0, e.data
            ),
            DagError::UnknownTask(t) => write!(f, "unknown {t}"),
            DagError::SelfEdge(t) => write!(f, "self-edge on {t}"),
            DagError::FanInAboveCapacity { edge, max_fan_in } => write!(
                f,
                "{} would have more than {max_fan_in} predecessors",
                edge.to
            ),
            DagError::Cycle(t) => write!(f, "the DAG has a cycle through or before {t}"),
            DagError::NotSealed => write!(f, "the DAG is not sealed (call seal())"),
        }
    }
}

impl core::error::Error for DagError {}

/// A fixed-capacity DAG (see the module doc for the life cycle and memory size).
#[derive(Clone, Debug)]
pub struct Dag<const T: usize, const E: usize> {
    task_count: usize,
    edge_count: usize,
    max_fan_in: u32,
    sealed: bool,
    work_ms: [f64; T],
    // Raw edge list in insertion order.
    edge_from: [u32; E],
    edge_to: [u32; E],
    edge_data: [f64; E],
    // CSR by successor: predecessors of task t are pred_src[pred_first[t]..+pred_count[t]].
    pred_first: [u32; T],
    pred_count: [u32; T],
    pred_src: [u32; E],
    pred_edge: [u32; E],
    // CSR by predecessor: successors of task t are succ_dst[succ_first[t]..+succ_count[t]].
    succ_first: [u32; T],
    succ_count: [u32; T],
    succ_dst: [u32; E],
    succ_edge: [u32; E],
    topo: [u32; T],
    scratch: [u32; T],
}

impl<const T: usize, const E: usize> Default for Dag<T, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize, const E: usize> Dag<T, E> {
    /// An empty DAG, fan-in limited only by `E`. `const`, so it can initialise a `static`.
    pub const fn new() -> Self {
        Self {
            task_count: 0,
            edge_count: 0,
            max_fan_in: u32::MAX,
            sealed: false,
            work_ms: [0.0; T],
            edge_from: [0; E],
            edge_to: [0; E],
            edge_data: [0.0; E],
            pred_first: [0; T],
            pred_count: [0; T],
            pred_src: [0; E],
            pred_edge: [0; E],
            succ_first: [0; T],
            succ_count: [0; T],
            succ_dst: [0; E],
            succ_edge: [0; E],
            topo: [0; T],
            scratch: [0; T],
        }
    }

    /// Forget every task and edge (keeps the fan-in limit). O(1).
    pub fn clear(&mut self) {
        self.task_count = 0;
        self.edge_count = 0;
        self.sealed = false;
    }

    /// Limit the number of predecessors of any task (firmware that evaluates with per-task
    /// fixed buffers wants this bound). Applies to edges added afterwards. O(1).
    pub fn set_max_fan_in(&mut self, max_fan_in: u32) {
        self.max_fan_in = max_fan_in;
    }

    /// Add a task with `work_ms` of work (milliseconds on a speed-1.0 reference GPU; ignored
    /// by cost-table platforms). Returns its id. O(1).
    pub fn add_task(&mut self, work_ms: f64) -> Result<TaskId, DagError> {
        if !(work_ms.is_finite() && work_ms >= 0.0) {
            return Err(DagError::BadWork { work_ms });
        }
        let id = self.task_count;
        let Some(slot) = self.work_ms.get_mut(id) else {
            return Err(DagError::TaskCapacityFull {
                work_ms,
                capacity: T,
            });
        };
        *slot = work_ms;
        if let Some(c) = self.pred_count.get_mut(id) {
            *c = 0;
        }
        if let Some(c) = self.succ_count.get_mut(id) {
            *c = 0;
        }
        self.task_count += 1;
        self.sealed = false;
        Ok(TaskId(id as u32))
    }

    /// Add the edge `from → to` carrying `data`. Refuses unknown tasks, self-edges, bad data,
    /// a full edge table and fan-in above the limit, handing the edge back. O(1).
    pub fn add_edge(&mut self, from: TaskId, to: TaskId, data: f64) -> Result<(), DagError> {
        let edge = Edge { from, to, data };
        for t in [from, to] {
            if t.index() >= self.task_count {
                return Err(DagError::UnknownTask(t));
            }
        }
        if from == to {
            return Err(DagError::SelfEdge(from));
        }
        if !(data.is_finite() && data >= 0.0) {
            return Err(DagError::BadData(edge));
        }
        let fan_in = self.pred_count.get(to.index()).copied().unwrap_or(0);
        if fan_in >= self.max_fan_in {
            return Err(DagError::FanInAboveCapacity {
                edge,
                max_fan_in: self.max_fan_in,
            });
        }
        let e = self.edge_count;
        if e >= E {
            return Err(DagError::EdgeCapacityFull { edge, capacity: E });
        }
        if let (Some(f), Some(t), Some(d)) = (
            self.edge_from.get_mut(e),
            self.edge_to.get_mut(e),
            self.edge_data.get_mut(e),
        ) {
            *f = from.0;
            *t = to.0;
            *d = data;
        }
        if let Some(c) = self.pred_count.get_mut(to.index()) {
            *c += 1;
        }
        if let Some(c) = self.succ_count.get_mut(from.index()) {
            *c += 1;
        }
        self.edge_count += 1;
        self.sealed = false;
        Ok(())
    }

    /// Build the CSR adjacency (counting sort, edges of one task stay in insertion order) and
    /// a topological order (Kahn's algorithm with a FIFO seeded in task-id order, so the order
    /// is deterministic). Refuses a cycle with [`DagError::Cycle`]. O(T + E), no allocation.
    pub fn seal(&mut self) -> Result<(), DagError> {
        let n = self.task_count;
        let m = self.edge_count;
        // Prefix sums.
        let (mut p, mut s) = (0u32, 0u32);
        for t in 0..n {
            self.pred_first[t] = p;
            self.succ_first[t] = s;
            p += self.pred_count[t];
            s += self.succ_count[t];
        }
        // Fill pred side, scratch = cursor.
        self.scratch[..n].copy_from_slice(&self.pred_first[..n]);
        for e in 0..m {
            let to = self.edge_to[e] as usize;
            let at = self.scratch[to] as usize;
            self.pred_src[at] = self.edge_from[e];
            self.pred_edge[at] = e as u32;
            self.scratch[to] += 1;
        }
        self.scratch[..n].copy_from_slice(&self.succ_first[..n]);
        for e in 0..m {
            let from = self.edge_from[e] as usize;
            let at = self.scratch[from] as usize;
            self.succ_dst[at] = self.edge_to[e];
            self.succ_edge[at] = e as u32;
            self.scratch[from] += 1;
        }
        self.kahn()?;
        self.sealed = true;
        Ok(())
    }

    /// Kahn's algorithm; `topo` doubles as the FIFO queue, `scratch` holds in-degrees.
    fn kahn(&mut self) -> Result<(), DagError> {
        let n = self.task_count;
        self.scratch[..n].copy_from_slice(&self.pred_count[..n]);
        let mut tail = 0usize;
        for t in 0..n {
            if self.scratch[t] == 0 {
                self.topo[tail] = t as u32;
                tail += 1;
            }
        }
        let mut head = 0usize;
        while head < tail {
            let t = self.topo[head] as usize;
            head += 1;
            let first = self.succ_first[t] as usize;
            let count = self.succ_count[t] as usize;
            for k in first..first + count {
                let d = self.succ_dst[k] as usize;
                self.scratch[d] -= 1;
                if self.scratch[d] == 0 {
                    self.topo[tail] = d as u32;
                    tail += 1;
                }
            }
        }
        if tail < n {
            // Smallest id still holding an in-degree: on a cycle or downstream of one.
            let stuck = (0..n).find(|&t| self.scratch[t] > 0).unwrap_or(0);
            return Err(DagError::Cycle(TaskId(stuck as u32)));
        }
        Ok(())
    }

    /// Whether [`seal`](Self::seal) succeeded since the last change. O(1).
    pub fn is_sealed(&self) -> bool {
        self.sealed
    }

    /// `Ok` when sealed, else [`DagError::NotSealed`]: the guard planners call first. O(1).
    pub fn require_sealed(&self) -> Result<(), DagError> {
        if self.sealed {
            Ok(())
        } else {
            Err(DagError::NotSealed)
        }
    }

    /// Number of tasks. O(1).
    pub fn task_count(&self) -> usize {
        self.task_count
    }

    /// Number of edges. O(1).
    pub fn edge_count(&self) -> usize {
        self.edge_count
    }

    /// Work of a task in reference milliseconds (0 for an unknown task). O(1).
    pub fn work_ms(&self, task: TaskId) -> f64 {
        self.work_ms[..self.task_count]
            .get(task.index())
            .copied()
            .unwrap_or(0.0)
    }

    /// Works of all tasks, indexed by task id. O(1).
    pub fn works_ms(&self) -> &[f64] {
        &self.work_ms[..self.task_count]
    }

    /// Sum of all work. O(T).
    pub fn total_work_ms(&self) -> f64 {
        self.works_ms().iter().sum()
    }

    /// The `i`-th edge in insertion order. O(1).
    pub fn edge(&self, i: usize) -> Option<Edge> {
        if i >= self.edge_count {
            return None;
        }
        Some(Edge {
            from: TaskId(self.edge_from[i]),
            to: TaskId(self.edge_to[i]),
            data: self.edge_data[i],
        })
    }

    /// Data on edge `i` (insertion index); 0 if unknown. O(1).
    pub fn edge_data(&self, i: u32) -> f64 {
        self.edge_data[..self.edge_count]
            .get(i as usize)
            .copied()
            .unwrap_or(0.0)
    }

    /// Predecessors of `task` as (source task index, edge index) slices; empty if unsealed or
    /// unknown. O(1).
    pub fn preds(&self, task: usize) -> (&[u32], &[u32]) {
        if !self.sealed || task >= self.task_count {
            return (&[], &[]);
        }
        let first = self.pred_first[task] as usize;
        let end = first + self.pred_count[task] as usize;
        (&self.pred_src[first..end], &self.pred_edge[first..end])
    }

    /// Successors of `task` as (destination task index, edge index) slices; empty if unsealed
    /// or unknown. O(1).
    pub fn succs(&self, task: usize) -> (&[u32], &[u32]) {
        if !self.sealed || task >= self.task_count {
            return (&[], &[]);
        }
        let first = self.succ_first[task] as usize;
        let end = first + self.succ_count[task] as usize;
        (&self.succ_dst[first..end], &self.succ_edge[first..end])
    }

    /// Number of predecessors of `task` (counted also before sealing). O(1).
    pub fn fan_in(&self, task: usize) -> u32 {
        self.pred_count[..self.task_count]
            .get(task)
            .copied()
            .unwrap_or(0)
    }

    /// The topological order computed by [`seal`](Self::seal); empty if unsealed. O(1).
    pub fn topo_order(&self) -> &[u32] {
        if self.sealed {
            &self.topo[..self.task_count]
        } else {
            &[]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diamond() -> Dag<8, 16> {
        let mut d = Dag::new();
        for w in [1.0, 2.0, 3.0, 4.0] {
            d.add_task(w).unwrap();
        }
        d.add_edge(TaskId(0), TaskId(1), 1.0).unwrap();
        d.add_edge(TaskId(0), TaskId(2), 2.0).unwrap();
        d.add_edge(TaskId(1), TaskId(3), 3.0).unwrap();
        d.add_edge(TaskId(2), TaskId(3), 4.0).unwrap();
        d.seal().unwrap();
        d
    }

    #[test]
    fn csr_and_topo_order_of_a_diamond() {
        let d = diamond();
        assert_eq!(d.topo_order(), &[0, 1, 2, 3]);
        assert_eq!(d.preds(3).0, &[1, 2]);
        assert_eq!(d.succs(0).0, &[1, 2]);
        assert_eq!(d.edge_data(d.preds(3).1[1]), 4.0);
        assert_eq!(d.total_work_ms(), 10.0);
    }

    #[test]
    fn topo_order_respects_edges_added_backwards() {
        let mut d: Dag<4, 4> = Dag::new();
        for _ in 0..3 {
            d.add_task(1.0).unwrap();
        }
        d.add_edge(TaskId(2), TaskId(1), 0.0).unwrap();
        d.add_edge(TaskId(1), TaskId(0), 0.0).unwrap();
        d.seal().unwrap();
        assert_eq!(d.topo_order(), &[2, 1, 0]);
    }

    #[test]
    fn typed_errors() {
        let mut d: Dag<3, 2> = Dag::new();
        assert_eq!(d.add_task(-1.0), Err(DagError::BadWork { work_ms: -1.0 }));
        for _ in 0..3 {
            d.add_task(1.0).unwrap();
        }
        assert!(matches!(
            d.add_task(5.0),
            Err(DagError::TaskCapacityFull { work_ms, capacity: 3 }) if work_ms == 5.0
        ));
        assert_eq!(
            d.add_edge(TaskId(0), TaskId(7), 0.0),
            Err(DagError::UnknownTask(TaskId(7)))
        );
        assert_eq!(
            d.add_edge(TaskId(1), TaskId(1), 0.0),
            Err(DagError::SelfEdge(TaskId(1)))
        );
        assert!(matches!(
            d.add_edge(TaskId(0), TaskId(1), f64::NAN),
            Err(DagError::BadData(_))
        ));
        d.set_max_fan_in(1);
        d.add_edge(TaskId(0), TaskId(1), 0.0).unwrap();
        assert!(matches!(
            d.add_edge(TaskId(2), TaskId(1), 0.0),
            Err(DagError::FanInAboveCapacity { max_fan_in: 1, .. })
        ));
        d.add_edge(TaskId(1), TaskId(2), 0.0).unwrap();
        let refused = d.add_edge(TaskId(2), TaskId(0), 9.0);
        assert!(matches!(
            refused,
            Err(DagError::EdgeCapacityFull { edge, capacity: 2 }) if edge.data == 9.0
        ));
    }

    #[test]
    fn cycle_is_refused() {
        let mut d: Dag<4, 4> = Dag::new();
        for _ in 0..3 {
            d.add_task(1.0).unwrap();
        }
        d.add_edge(TaskId(0), TaskId(1), 0.0).unwrap();
        d.add_edge(TaskId(1), TaskId(2), 0.0).unwrap();
        d.add_edge(TaskId(2), TaskId(1), 0.0).unwrap();
        assert_eq!(d.seal(), Err(DagError::Cycle(TaskId(1))));
        assert!(!d.is_sealed());
        assert_eq!(d.require_sealed(), Err(DagError::NotSealed));
        assert!(d.topo_order().is_empty());
    }
}
