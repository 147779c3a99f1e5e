//! The true optimum of small DAG planning problems, by branch and bound (test and table use
//! only: exponential time). Model: the core's evaluator (per-GPU sequences, no preemption,
//! transfers between different GPUs), so "optimal" means no plan evaluates lower.
//!
//! # Search space: canonical list schedules
//! A node appends one ready task to the end of one GPU's sequence; it starts at
//! `max(ready on that GPU, GPU free)`. Only sequences whose appended tasks have
//! non-decreasing keys `(start, finish, topological position)` are explored. That loses no
//! schedule: take any plan's evaluated (semi-active) schedule and sort its tasks by that key;
//! every predecessor and every earlier task of the same GPU sorts first (a predecessor
//! finishes by the start; on equal starts a zero-length task sorts before a longer one), so
//! appending in that order rebuilds exactly that schedule. Among identical GPUs (same run
//! time for every task, uniform transfers) only the first empty one is tried.
//!
//! # Bounds
//! A node is cut when its lower bound reaches the incumbent (within a relative 1e-12): the
//! larger of
//! - the makespan so far;
//! - **path**: every unscheduled task starts no earlier than the last appended start (the
//!   key order) nor before its predecessors can finish (fastest run times, no transfers),
//!   then needs its fastest critical tail;
//! - **area**: the remaining work, normalised to each task's fastest run time, over GPUs
//!   that are busy until `max(free, last start)` and process normalised work at most at rate
//!   `r_g = max_task (fastest run / run on g)` (exactly the relative speed for a GPU pool).
//!
//! # Result
//! [`ExactStatus::Optimal`] when the search finished; [`ExactStatus::Feasible`] with the
//! proven lower bound (the smallest bound of the nodes left open) when the node or time limit
//! stopped it. The node limit is deterministic; the time limit is wall-clock (the table's
//! safety net), so a run stopped by it is not.

use super::MAX_TASKS;
use gantry_core::dag::{Dag, Evaluator, Plan, PlanError, Platform};
use std::time::{Duration, Instant};

/// Limits of one [`solve`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactConfig {
    /// Stop after this many nodes (deterministic).
    pub node_limit: u64,
    /// Stop after this much wall time.
    pub time_limit: Duration,
}

impl ExactConfig {
    /// 50 million nodes, 60 s.
    pub const fn new() -> Self {
        Self {
            node_limit: 50_000_000,
            time_limit: Duration::from_secs(60),
        }
    }
}

impl Default for ExactConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether the optimum was proven.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub enum ExactStatus {
    /// The makespan is optimal.
    Optimal,
    /// A limit stopped the search: the makespan is the best found, the optimum lies in
    /// `[lower_bound, makespan]`.
    Feasible {
        /// Proven lower bound on the optimum.
        lower_bound: f64,
    },
}

/// What [`solve`] found.
#[derive(Clone, Debug, PartialEq)]
pub struct ExactResult {
    /// Best makespan found (optimal when `status` says so).
    pub makespan: f64,
    /// Optimal, or feasible with a proven bound.
    pub status: ExactStatus,
    /// Nodes explored.
    pub nodes: u64,
    /// The best plan (GPU per task, order).
    pub gpus: Vec<u16>,
    /// Its order.
    pub order: Vec<u32>,
}

impl ExactResult {
    /// The proven lower bound (the makespan itself when optimal).
    pub fn lower_bound(&self) -> f64 {
        match self.status {
            ExactStatus::Optimal => self.makespan,
            ExactStatus::Feasible { lower_bound } => lower_bound,
        }
    }

    /// Relative gap `(makespan − bound) / makespan` (0 when optimal).
    pub fn gap(&self) -> f64 {
        if self.makespan > 0.0 {
            (self.makespan - self.lower_bound()) / self.makespan
        } else {
            0.0
        }
    }
}

/// Branch-and-bound search state (module doc).
struct Search<'a, const E: usize, M: Platform> {
    dag: &'a Dag<MAX_TASKS, E>,
    platform: &'a M,
    n: usize,
    p: usize,
    config: ExactConfig,
    clock: Instant,
    nodes: u64,
    aborted: bool,
    best_ms: f64,
    best_seq: Vec<(u32, u16)>,
    // Static data.
    run: Vec<f64>,
    fastest: Vec<f64>,
    tail: Vec<f64>,
    topo_pos: Vec<u32>,
    rate: Vec<f64>,
    first_twin: Vec<usize>,
    // Node state.
    pending: Vec<u32>,
    done: Vec<bool>,
    start: Vec<f64>,
    finish: Vec<f64>,
    gpu: Vec<u16>,
    free: Vec<f64>,
    used: Vec<u32>,
    seq: Vec<(u32, u16)>,
    est: Vec<f64>,
    avail: Vec<(f64, f64)>,
}

/// Solve `dag` on `platform` exactly (within `config`'s limits), starting from the best of
/// `incumbents` (plans for this DAG, e.g. the list schedulers'; invalid ones are ignored).
pub fn solve<const E: usize, M: Platform>(
    dag: &Dag<MAX_TASKS, E>,
    platform: &M,
    incumbents: &[&Plan<MAX_TASKS>],
    config: ExactConfig,
) -> Result<ExactResult, PlanError> {
    let p = platform.gpu_count();
    if p == 0 {
        return Err(PlanError::NoGpus);
    }
    dag.require_sealed()?;
    let mut eval = Box::new(Evaluator::<MAX_TASKS, { super::MAX_GPUS }>::new());
    let mut search = Search::new(dag, platform, config);
    for plan in incumbents {
        if let Ok(ms) = eval.evaluate(dag, platform, plan)
            && ms < search.best_ms
        {
            search.best_ms = ms;
            search.best_seq = plan
                .order()
                .iter()
                .map(|&t| (t, plan.gpus()[t as usize]))
                .collect();
        }
    }
    let root_bound = search.bound(0.0, 0.0);
    let proven = search.dfs(root_bound, (f64::NEG_INFINITY, f64::NEG_INFINITY, 0));
    let status = if search.aborted {
        ExactStatus::Feasible {
            lower_bound: proven.min(search.best_ms),
        }
    } else {
        ExactStatus::Optimal
    };
    let order: Vec<u32> = search.best_seq.iter().map(|&(t, _)| t).collect();
    let mut gpus = vec![0u16; order.len()];
    for &(t, g) in &search.best_seq {
        gpus[t as usize] = g;
    }
    Ok(ExactResult {
        makespan: search.best_ms,
        status,
        nodes: search.nodes,
        gpus,
        order,
    })
}

impl<'a, const E: usize, M: Platform> Search<'a, E, M> {
    fn new(dag: &'a Dag<MAX_TASKS, E>, platform: &'a M, config: ExactConfig) -> Self {
        let (n, p) = (dag.task_count(), platform.gpu_count());
        let works = dag.works_ms();
        let mut run = vec![0.0; n * p];
        for t in 0..n {
            for g in 0..p {
                run[t * p + g] = platform.run_ms(t, works[t], g);
            }
        }
        let fastest: Vec<f64> = (0..n)
            .map(|t| {
                run[t * p..(t + 1) * p]
                    .iter()
                    .copied()
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let mut tail = vec![0.0; n];
        for &task in dag.topo_order().iter().rev() {
            let t = task as usize;
            let after = dag
                .succs(t)
                .0
                .iter()
                .map(|&s| tail[s as usize])
                .fold(0.0, f64::max);
            tail[t] = fastest[t] + after;
        }
        let mut topo_pos = vec![0u32; n];
        for (i, &t) in dag.topo_order().iter().enumerate() {
            topo_pos[t as usize] = i as u32;
        }
        let rate: Vec<f64> = (0..p)
            .map(|g| {
                (0..n)
                    .filter(|&t| run[t * p + g] > 0.0)
                    .map(|t| fastest[t] / run[t * p + g])
                    .fold(0.0, f64::max)
                    .max(if n == 0 { 1.0 } else { 0.0 })
            })
            .collect();
        // GPU g's twin: the lowest GPU with the same run time for every task.
        let first_twin: Vec<usize> = (0..p)
            .map(|g| {
                (0..g)
                    .find(|&h| {
                        platform.uniform_transfers()
                            && (0..n).all(|t| run[t * p + h] == run[t * p + g])
                    })
                    .unwrap_or(g)
            })
            .collect();
        let pending = (0..n).map(|t| dag.fan_in(t)).collect();
        Self {
            dag,
            platform,
            n,
            p,
            config,
            clock: Instant::now(),
            nodes: 0,
            aborted: false,
            best_ms: f64::INFINITY,
            best_seq: Vec::new(),
            run,
            fastest,
            tail,
            topo_pos,
            rate,
            first_twin,
            pending,
            done: vec![false; n],
            start: vec![0.0; n],
            finish: vec![0.0; n],
            gpu: vec![0; n],
            free: vec![0.0; p],
            used: vec![0; p],
            seq: Vec::with_capacity(n),
            est: vec![0.0; n],
            avail: Vec::with_capacity(p),
        }
    }

    /// When task `t`'s inputs are all on GPU `g` (every predecessor is scheduled).
    fn ready(&self, t: usize, g: usize) -> f64 {
        let (srcs, edges) = self.dag.preds(t);
        let mut ready = 0.0f64;
        for (&s, &e) in srcs.iter().zip(edges) {
            let s = s as usize;
            let from = usize::from(self.gpu[s]);
            ready = ready
                .max(self.finish[s] + self.platform.transfer_ms(self.dag.edge_data(e), from, g));
        }
        ready
    }

    /// The node's lower bound (module doc) given the makespan so far and the last start.
    fn bound(&mut self, makespan: f64, last_start: f64) -> f64 {
        let p = self.p;
        let mut bound = makespan;
        let mut remaining = 0.0;
        for &task in self.dag.topo_order() {
            let t = task as usize;
            if self.done[t] {
                continue;
            }
            let mut est = last_start;
            for &s in self.dag.preds(t).0 {
                let s = s as usize;
                let ready = if self.done[s] {
                    self.finish[s]
                } else {
                    self.est[s] + self.fastest[s]
                };
                est = est.max(ready);
            }
            self.est[t] = est;
            bound = bound.max(est + self.tail[t]);
            remaining += self.fastest[t];
        }
        // Area: smallest C with Σ_g rate_g · (C − a_g)+ ≥ remaining.
        if remaining > 0.0 {
            self.avail.clear();
            for g in 0..p {
                if self.rate[g] > 0.0 {
                    self.avail
                        .push((self.free[g].max(last_start), self.rate[g]));
                }
            }
            self.avail.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (mut rate_sum, mut weighted) = (0.0, 0.0);
            let mut area = f64::INFINITY;
            for i in 0..self.avail.len() {
                let (a, r) = self.avail[i];
                rate_sum += r;
                weighted += r * a;
                // With GPUs 0..=i working: C = (remaining + Σ r·a) / Σ r, valid if ≤ next a.
                let c = (remaining + weighted) / rate_sum;
                let next = self.avail.get(i + 1).map_or(f64::INFINITY, |x| x.0);
                if c <= next {
                    area = c;
                    break;
                }
            }
            bound = bound.max(area);
        }
        bound
    }

    fn out_of_limits(&mut self) -> bool {
        if self.nodes >= self.config.node_limit
            || (self.nodes.is_multiple_of(4096) && self.clock.elapsed() >= self.config.time_limit)
        {
            self.aborted = true;
        }
        self.aborted
    }

    /// Explore below the current node (bound `node_bound`, last appended key `last`).
    /// Returns the smallest bound left open if a limit stopped the search, else infinity.
    fn dfs(&mut self, node_bound: f64, last: (f64, f64, u32)) -> f64 {
        self.nodes += 1;
        if self.seq.len() == self.n {
            let makespan = self.finish.iter().copied().fold(0.0, f64::max);
            if makespan < self.best_ms {
                self.best_ms = makespan;
                self.best_seq = self.seq.clone();
            }
            return f64::INFINITY;
        }
        if self.out_of_limits() {
            return node_bound;
        }
        // Children: (finish, start, task, gpu), best finish first.
        let mut children: Vec<(f64, f64, usize, usize)> = Vec::new();
        for t in 0..self.n {
            if self.done[t] || self.pending[t] > 0 {
                continue;
            }
            for g in 0..self.p {
                let twin = self.first_twin[g];
                if twin != g && self.used[g] == 0 && self.used[twin] == 0 {
                    continue;
                }
                let start = self.ready(t, g).max(self.free[g]);
                let finish = start + self.run[t * self.p + g];
                let key = (start, finish, self.topo_pos[t]);
                if key.0 < last.0
                    || (key.0 == last.0 && (key.1 < last.1 || (key.1 == last.1 && key.2 < last.2)))
                {
                    continue;
                }
                children.push((finish, start, t, g));
            }
        }
        children.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then(a.1.total_cmp(&b.1))
                .then(a.2.cmp(&b.2))
                .then(a.3.cmp(&b.3))
        });
        let makespan_now = self.finish_max();
        let mut open = f64::INFINITY;
        for (finish, start, t, g) in children {
            if self.aborted {
                open = open.min(node_bound);
                break;
            }
            // Apply.
            let saved_free = self.free[g];
            self.done[t] = true;
            self.start[t] = start;
            self.finish[t] = finish;
            self.gpu[t] = g as u16;
            self.free[g] = finish;
            self.used[g] += 1;
            self.seq.push((t as u32, g as u16));
            for &s in self.dag.succs(t).0 {
                self.pending[s as usize] -= 1;
            }
            let child_bound = self.bound(makespan_now.max(finish), start);
            if child_bound < self.best_ms * (1.0 - 1e-12) {
                let left = self.dfs(child_bound, (start, finish, self.topo_pos[t]));
                open = open.min(left);
            }
            // Undo.
            for &s in self.dag.succs(t).0 {
                self.pending[s as usize] += 1;
            }
            self.seq.pop();
            self.used[g] -= 1;
            self.free[g] = saved_free;
            self.done[t] = false;
            self.finish[t] = 0.0;
        }
        open
    }

    fn finish_max(&self) -> f64 {
        self.seq
            .iter()
            .map(|&(t, _)| self.finish[t as usize])
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{HostDag, HostPool, HostTable, on_big_stack};
    use gantry_core::SeededRng;
    use gantry_core::dag::{Bandwidth, DagPlanner, Heft, TaskId};

    fn random_problem(seed: u64, n: usize, gpus: usize) -> (Box<HostDag>, Box<HostPool>) {
        let mut rng = SeededRng::new(seed);
        let mut dag = Box::new(HostDag::new());
        for _ in 0..n {
            dag.add_task(1.0 + f64::from(rng.below(9))).unwrap();
        }
        for j in 1..n as u32 {
            for _ in 0..rng.below(3) {
                dag.add_edge(TaskId(rng.below(j)), TaskId(j), f64::from(rng.below(6)))
                    .unwrap();
            }
        }
        dag.seal().unwrap();
        let mut pool = Box::new(HostPool::new(Bandwidth::PerMs(1.0)));
        for g in 0..gpus {
            pool.add_gpu(1.0 + 0.5 * g as f64).unwrap();
        }
        (dag, pool)
    }

    /// Every plan: every assignment × every topological order, evaluated.
    fn brute_force(dag: &HostDag, pool: &HostPool) -> f64 {
        let (n, p) = (dag.task_count(), pool.gpu_count());
        let mut eval = Box::new(Evaluator::<MAX_TASKS, { crate::dag::MAX_GPUS }>::new());
        let mut orders = Vec::new();
        let mut order = Vec::new();
        let mut placed = vec![false; n];
        fn extend(
            dag: &HostDag,
            placed: &mut Vec<bool>,
            order: &mut Vec<u32>,
            out: &mut Vec<Vec<u32>>,
        ) {
            let n = dag.task_count();
            if order.len() == n {
                out.push(order.clone());
                return;
            }
            for t in 0..n {
                if !placed[t] && dag.preds(t).0.iter().all(|&s| placed[s as usize]) {
                    placed[t] = true;
                    order.push(t as u32);
                    extend(dag, placed, order, out);
                    order.pop();
                    placed[t] = false;
                }
            }
        }
        extend(dag, &mut placed, &mut order, &mut orders);
        let mut best = f64::INFINITY;
        let mut plan = Box::new(Plan::<MAX_TASKS>::new());
        plan.reset(n).unwrap();
        for code in 0..p.pow(n as u32) {
            let mut c = code;
            for g in plan.gpus_mut() {
                *g = (c % p) as u16;
                c /= p;
            }
            for o in &orders {
                plan.order_mut().copy_from_slice(o);
                best = best.min(eval.evaluate(dag, pool, &plan).unwrap());
            }
        }
        best
    }

    /// The branch and bound's optimum equals brute force on small random DAGs with
    /// transfers (the canonical-order restriction and the bounds lose nothing), and gantry's
    /// lower bound never exceeds it.
    #[test]
    fn optimum_equals_brute_force_and_lower_bound_stays_below() {
        on_big_stack(|| {
            for seed in 0..12u64 {
                let n = 4 + (seed % 3) as usize;
                let (dag, pool) = random_problem(seed, n, 2 + (seed % 2) as usize);
                let want = brute_force(&dag, &pool);
                let r = solve(dag.as_ref(), pool.as_ref(), &[], ExactConfig::new()).unwrap();
                assert_eq!(r.status, ExactStatus::Optimal);
                assert!(
                    (r.makespan - want).abs() <= 1e-9 * want,
                    "seed {seed}: {} vs {want}",
                    r.makespan
                );
                let mut eval = Box::new(Evaluator::<MAX_TASKS, { crate::dag::MAX_GPUS }>::new());
                let mut plan = Box::new(Plan::<MAX_TASKS>::new());
                plan.reset(n).unwrap();
                plan.gpus_mut().copy_from_slice(&r.gpus);
                plan.order_mut().copy_from_slice(&r.order);
                assert_eq!(
                    eval.evaluate(dag.as_ref(), pool.as_ref(), &plan).unwrap(),
                    r.makespan
                );
                let lb = eval.lower_bound(dag.as_ref(), pool.as_ref()).unwrap().ms();
                assert!(
                    lb <= r.makespan + 1e-9,
                    "seed {seed}: bound {lb} > optimum {}",
                    r.makespan
                );
            }
        });
    }

    /// The HEFT paper's example: proven optimum, at most the 73 the EFT-priority search finds,
    /// and a node limit turns it into "feasible" with a bound below the makespan.
    #[test]
    fn heft_paper_example_optimum_and_node_limit() {
        let Some(dir) = crate::test_support::shared("traces/stg-heft-dags/topcuoglu2002_canonical")
        else {
            return;
        };
        on_big_stack(|| {
            let problem = crate::dag::load(
                &dir,
                &crate::dag::LoadOptions::new(crate::dag::Format::Matrix),
            )
            .unwrap();
            let crate::dag::HostPlatform::Table(table) = &problem.platform else {
                panic!("matrix is a table");
            };
            let table: &HostTable = table;
            let mut heft = Box::new(Heft::<MAX_TASKS, { crate::dag::MAX_GPUS }>::new());
            let mut plan = Box::new(Plan::<MAX_TASKS>::new());
            heft.plan(problem.dag.as_ref(), table, &mut plan).unwrap();
            let r = solve(problem.dag.as_ref(), table, &[&plan], ExactConfig::new()).unwrap();
            assert_eq!(r.status, ExactStatus::Optimal);
            assert!(r.makespan <= 73.0, "{}", r.makespan);
            let limited = ExactConfig {
                node_limit: 50,
                ..ExactConfig::new()
            };
            let cut = solve(problem.dag.as_ref(), table, &[&plan], limited).unwrap();
            let ExactStatus::Feasible { lower_bound } = cut.status else {
                panic!("50 nodes cannot prove it: {cut:?}");
            };
            assert!(lower_bound <= r.makespan && r.makespan <= cut.makespan);
            assert!(cut.gap() > 0.0);
        });
    }
}
