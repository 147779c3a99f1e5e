//! A plan kept evaluated under small changes: move one task to another GPU and/or another
//! place in the order, and only what the move can change is recomputed — the local search's
//! evaluator ([`LocalSearch`](super::LocalSearch)).
//!
//! # Why a move is cheap
//! The [`Evaluator`]'s schedule depends on a plan only through each GPU's
//! sequence (the plan's order restricted to the GPU) and the assignment. Moving task `t`
//! changes three things: `t` itself, the task that followed `t` on its old GPU (it now follows
//! `t`'s old predecessor there) and the task that follows `t` on its new GPU. Those are marked
//! dirty; dirty tasks are then recomputed in plan order (a min-heap of their positions, so
//! clean tasks are never visited): `start = max(ready, finish of the GPU predecessor)`, and a
//! task whose times changed marks its successors and its GPU successor dirty. A task whose
//! times do not change stops the propagation, so a move costs the tasks it actually moves,
//! not `T + E`.
//! Every recomputed time is the evaluator's (same operations, same order of `max`), so the
//! incremental makespan equals a full evaluation bit for bit (tested under random moves).
//! Measured (1,000 tasks, fan-in 3, 50 GPUs, `benches/dag_planners.rs`): a random relocation
//! recomputes 14 % of the tasks on average.
//!
//! The makespan is kept as the largest finish: a changed task finishing later raises it; if
//! the task that set it finishes earlier, one scan of the finishes finds the new one. The
//! sum of finish times, the local search's tie-breaker, is kept alongside. [`undo`](IncrementalSchedule::undo)
//! (IncrementalSchedule::undo) restores the previous state exactly from a journal.
//!
//! Work is counted in [`work`](IncrementalSchedule::work) units — one per position swept,
//! order entry shifted, predecessor read or task recomputed — so a search can stop after a
//! deterministic amount of work instead of a wall-clock time.
//!
//! Memory about `72·T + 8·P` bytes.

use super::eval::{Evaluator, Plan, PlanError, check_sizes};
use super::gpus::Platform;
use super::graph::Dag;

const NIL: u32 = u32::MAX;

/// What [`IncrementalSchedule::relocate`] did, for [`IncrementalSchedule::undo`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Move {
    task: u32,
    from_gpu: u16,
    from_pos: u32,
    journal_len: usize,
    total_finish_ms: f64,
    makespan_ms: f64,
}

/// An evaluated plan of up to `T` tasks on up to `P` GPUs that supports cheap moves.
#[derive(Clone, Debug)]
pub struct IncrementalSchedule<const T: usize, const P: usize> {
    tasks: usize,
    gpus: usize,
    work: u64,
    total_finish_ms: f64,
    order: [u32; T],
    pos: [u32; T],
    gpu: [u16; T],
    start: [f64; T],
    finish: [f64; T],
    gprev: [u32; T],
    gnext: [u32; T],
    dirty: [bool; T],
    journal: [(u32, f64, f64); T],
    journal_len: usize,
    pending: usize,
    /// Min-heap of the dirty tasks' positions (`pending` entries).
    queue: [u32; T],
    makespan_ms: f64,
    ghead: [u32; P],
    gtail: [u32; P],
}

impl<const T: usize, const P: usize> Default for IncrementalSchedule<T, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: usize, const P: usize> IncrementalSchedule<T, P> {
    /// Empty scratch.
    pub const fn new() -> Self {
        Self {
            tasks: 0,
            gpus: 0,
            work: 0,
            total_finish_ms: 0.0,
            order: [0; T],
            pos: [0; T],
            gpu: [0; T],
            start: [0.0; T],
            finish: [0.0; T],
            gprev: [NIL; T],
            gnext: [NIL; T],
            dirty: [false; T],
            journal: [(0, 0.0, 0.0); T],
            journal_len: 0,
            pending: 0,
            queue: [0; T],
            makespan_ms: 0.0,
            ghead: [NIL; P],
            gtail: [NIL; P],
        }
    }

    /// Load `plan` (validated by a full evaluation in `eval`) and return its makespan.
    /// O(T + E + P).
    pub fn load<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        plan: &Plan<T>,
        eval: &mut Evaluator<T, P>,
    ) -> Result<f64, PlanError> {
        let (n, p) = check_sizes::<T, P, T, E>(dag, platform)?;
        let makespan = eval.evaluate(dag, platform, plan)?;
        (self.tasks, self.gpus) = (n, p);
        self.order[..n].copy_from_slice(plan.order());
        self.gpu[..n].copy_from_slice(plan.gpus());
        self.start[..n].copy_from_slice(eval.start_ms());
        self.finish[..n].copy_from_slice(eval.finish_ms());
        self.ghead[..p].fill(NIL);
        self.gtail[..p].fill(NIL);
        for (i, &task) in plan.order().iter().enumerate() {
            let t = task as usize;
            self.pos[t] = i as u32;
            let g = usize::from(self.gpu[t]);
            let tail = self.gtail[g];
            self.gprev[t] = tail;
            self.gnext[t] = NIL;
            if tail == NIL {
                self.ghead[g] = task;
            } else {
                self.gnext[tail as usize] = task;
            }
            self.gtail[g] = task;
        }
        self.dirty[..n].fill(false);
        self.pending = 0;
        self.journal_len = 0;
        self.total_finish_ms = self.finish[..n].iter().sum();
        self.makespan_ms = makespan;
        self.work += (n + dag.edge_count() + p) as u64;
        Ok(makespan)
    }

    /// Tasks. O(1).
    pub fn tasks(&self) -> usize {
        self.tasks
    }

    /// The makespan. O(1).
    pub fn makespan_ms(&self) -> f64 {
        self.makespan_ms
    }

    /// The sum of all finish times (a finer measure than the makespan: moves that keep the
    /// makespan but finish tasks earlier lower it). O(1).
    pub fn total_finish_ms(&self) -> f64 {
        self.total_finish_ms
    }

    /// Work units spent so far (module doc). O(1).
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Start times by task id. O(1).
    pub fn start_ms(&self) -> &[f64] {
        &self.start[..self.tasks]
    }

    /// Finish times by task id. O(1).
    pub fn finish_ms(&self) -> &[f64] {
        &self.finish[..self.tasks]
    }

    /// GPU of each task. O(1).
    pub fn gpus(&self) -> &[u16] {
        &self.gpu[..self.tasks]
    }

    /// The plan's order. O(1).
    pub fn order(&self) -> &[u32] {
        &self.order[..self.tasks]
    }

    /// Position of each task in the order. O(1).
    pub fn positions(&self) -> &[u32] {
        &self.pos[..self.tasks]
    }

    /// The task before `t` on its GPU (`None` if it is the first). O(1).
    pub fn gpu_prev(&self, t: usize) -> Option<usize> {
        match self.gprev.get(t) {
            Some(&p) if p != NIL => Some(p as usize),
            _ => None,
        }
    }

    /// Copy the current plan into `out`. O(T).
    pub fn write_plan(&self, out: &mut Plan<T>) -> Result<(), PlanError> {
        let n = self.tasks;
        out.reset(n)?;
        let (gpus, order) = out.parts_mut();
        gpus.copy_from_slice(&self.gpu[..n]);
        order.copy_from_slice(&self.order[..n]);
        Ok(())
    }

    /// The range of positions `lo..=hi` task `t` may take after being taken out of the order
    /// (positions counted without `t`): after every predecessor, before every successor.
    /// O(fan-in + fan-out).
    pub fn window<const E: usize>(&self, dag: &Dag<T, E>, t: usize) -> (usize, usize) {
        let own = self.pos[t];
        let without = |x: u32| -> usize {
            let p = self.pos[x as usize];
            (if p > own { p - 1 } else { p }) as usize
        };
        let lo = dag
            .preds(t)
            .0
            .iter()
            .map(|&s| without(s) + 1)
            .max()
            .unwrap_or(0);
        let hi = dag
            .succs(t)
            .0
            .iter()
            .map(|&s| without(s))
            .min()
            .unwrap_or(self.tasks.saturating_sub(1));
        (lo, hi)
    }

    /// Move task `t` to GPU `gpu` at position `to` of the order without `t` (see
    /// [`window`](Self::window)) and re-evaluate what changed. Refuses a position outside the
    /// window or a GPU outside the platform without changing anything. O(|to − from| + the
    /// swept part, see the module doc).
    pub fn relocate<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
        gpu: usize,
        to: usize,
    ) -> Result<Move, PlanError> {
        if t >= self.tasks {
            return Err(PlanError::UnknownTask(t as u32));
        }
        if gpu >= self.gpus {
            return Err(PlanError::UnknownGpu {
                task: t as u32,
                gpu: gpu as u16,
            });
        }
        let (lo, hi) = self.window(dag, t);
        if to < lo || to > hi {
            let pred = dag.preds(t).0.first().copied().unwrap_or(t as u32);
            return Err(PlanError::PrecedenceViolated {
                task: t as u32,
                pred,
            });
        }
        let mv = Move {
            task: t as u32,
            from_gpu: self.gpu[t],
            from_pos: self.pos[t],
            journal_len: self.journal_len,
            total_finish_ms: self.total_finish_ms,
            makespan_ms: self.makespan_ms,
        };
        let old_next = self.gnext[t];
        self.shift(t, gpu, to);
        self.mark(t);
        if gpu != usize::from(mv.from_gpu) {
            // Transfers to the successors change even if t's finish does not.
            for &s in dag.succs(t).0 {
                self.mark(s as usize);
            }
        }
        if old_next != NIL {
            self.mark(old_next as usize);
        }
        let new_next = self.gnext[t];
        if new_next != NIL {
            self.mark(new_next as usize);
        }
        self.sweep(dag, platform);
        Ok(mv)
    }

    /// Take back `mv`, which must be the last relocation not yet undone (LIFO): structure,
    /// times, makespan and sum exactly as before. O(|to − from| + journal).
    pub fn undo(&mut self, mv: Move) {
        let t = mv.task as usize;
        self.shift(t, usize::from(mv.from_gpu), mv.from_pos as usize);
        while self.journal_len > mv.journal_len {
            self.journal_len -= 1;
            let (task, start, finish) = self.journal[self.journal_len];
            let x = task as usize;
            self.start[x] = start;
            self.finish[x] = finish;
        }
        self.total_finish_ms = mv.total_finish_ms;
        self.makespan_ms = mv.makespan_ms;
    }

    /// Whether one more relocation is sure to fit the undo journal (a sweep journals each
    /// task at most once), so that it and every relocation before it since the last
    /// [`commit`](Self::commit) can still be undone exactly. O(1).
    pub fn journal_room(&self) -> bool {
        self.journal_len + self.tasks <= T
    }

    /// Forget the journal of accepted moves (they can no longer be undone). O(1).
    pub fn commit(&mut self) {
        self.journal_len = 0;
    }

    /// The critical path into `out` (from the last task back): from the task that finishes
    /// last (lowest id on ties), repeatedly the GPU predecessor if it finished exactly at the
    /// task's start, else a predecessor whose data arrived exactly then (lowest id); stops at
    /// a task that starts at its earliest. Returns how many tasks were written. O(path ·
    /// fan-in).
    pub fn critical_path<const E: usize>(
        &self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        out: &mut [u32],
    ) -> usize {
        let n = self.tasks;
        if n == 0 {
            return 0;
        }
        let makespan = self.makespan_ms();
        let Some(mut cur) = (0..n).find(|&t| self.finish[t] == makespan) else {
            return 0;
        };
        let mut len = 0;
        let bandwidth = platform.bandwidth();
        for _ in 0..n {
            let Some(slot) = out.get_mut(len) else { break };
            *slot = cur as u32;
            len += 1;
            let start = self.start[cur];
            if start <= 0.0 {
                break;
            }
            let prev = self.gprev[cur];
            if prev != NIL && self.finish[prev as usize] == start {
                cur = prev as usize;
                continue;
            }
            let g = self.gpu[cur];
            let (srcs, edges) = dag.preds(cur);
            let binding = srcs.iter().zip(edges).find_map(|(&s, &e)| {
                let s = s as usize;
                let mut arrive = self.finish[s];
                if self.gpu[s] != g {
                    arrive += bandwidth.transfer_ms(dag.edge_data(e));
                }
                (arrive == start).then_some(s)
            });
            match binding {
                Some(s) => cur = s,
                None => break,
            }
        }
        len
    }

    /// Take `t` out of the order and its GPU list and put it at position `to` (counted
    /// without it) on GPU `gpu`. Structure only; times are not touched. O(|to − from| +
    /// distance to the previous task on `gpu`).
    fn shift(&mut self, t: usize, gpu: usize, to: usize) {
        // Unlink from the old GPU's list.
        let (prev, next) = (self.gprev[t], self.gnext[t]);
        let old = usize::from(self.gpu[t]);
        if prev == NIL {
            self.ghead[old] = next;
        } else {
            self.gnext[prev as usize] = next;
        }
        if next == NIL {
            self.gtail[old] = prev;
        } else {
            self.gprev[next as usize] = prev;
        }
        // Rotate the order.
        let from = self.pos[t] as usize;
        if to < from {
            for i in (to..from).rev() {
                let x = self.order[i];
                self.order[i + 1] = x;
                self.pos[x as usize] = (i + 1) as u32;
            }
        } else {
            for i in from..to {
                let x = self.order[i + 1];
                self.order[i] = x;
                self.pos[x as usize] = i as u32;
            }
        }
        self.order[to] = t as u32;
        self.pos[t] = to as u32;
        self.work += from.abs_diff(to) as u64 + 1;
        // Link into the new GPU's list after the last task of that GPU before `to`.
        self.gpu[t] = gpu as u16;
        let mut before = NIL;
        for i in (0..to).rev() {
            self.work += 1;
            let x = self.order[i];
            if usize::from(self.gpu[x as usize]) == gpu {
                before = x;
                break;
            }
        }
        let after = if before == NIL {
            self.ghead[gpu]
        } else {
            self.gnext[before as usize]
        };
        self.gprev[t] = before;
        self.gnext[t] = after;
        if before == NIL {
            self.ghead[gpu] = t as u32;
        } else {
            self.gnext[before as usize] = t as u32;
        }
        if after == NIL {
            self.gtail[gpu] = t as u32;
        } else {
            self.gprev[after as usize] = t as u32;
        }
    }

    /// Mark task `t` dirty: queue its position (once). O(log T).
    fn mark(&mut self, t: usize) {
        if self.dirty[t] || self.pending >= T {
            return;
        }
        self.dirty[t] = true;
        let mut i = self.pending;
        self.queue[i] = self.pos[t];
        self.pending += 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.queue[parent] <= self.queue[i] {
                break;
            }
            self.queue.swap(parent, i);
            i = parent;
        }
    }

    /// The smallest queued position, removed. O(log T).
    fn pop_first(&mut self) -> Option<usize> {
        if self.pending == 0 {
            return None;
        }
        let top = self.queue[0] as usize;
        self.pending -= 1;
        self.queue[0] = self.queue[self.pending];
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.pending && self.queue[l] < self.queue[least] {
                least = l;
            }
            if r < self.pending && self.queue[r] < self.queue[least] {
                least = r;
            }
            if least == i {
                break;
            }
            self.queue.swap(i, least);
            i = least;
        }
        Some(top)
    }

    /// Recompute dirty tasks in plan order (smallest queued position first) until none is
    /// left (module doc). Tasks whose times do not change stop the propagation. O(recomputed
    /// tasks · (fan-in + fan-out + log T)).
    fn sweep<const E: usize>(&mut self, dag: &Dag<T, E>, platform: &impl Platform) {
        let bandwidth = platform.bandwidth();
        let works = dag.works_ms();
        let old_makespan = self.makespan_ms;
        let (mut new_max, mut lost_max) = (0.0f64, false);
        while let Some(i) = self.pop_first() {
            let x = self.order[i] as usize;
            self.dirty[x] = false;
            let g = self.gpu[x];
            let gi = usize::from(g);
            let (srcs, edges) = dag.preds(x);
            self.work += srcs.len() as u64 + 2;
            let mut ready = 0.0f64;
            for (&s, &e) in srcs.iter().zip(edges) {
                let si = s as usize;
                let mut arrive = self.finish[si];
                if self.gpu[si] != g {
                    arrive += bandwidth.transfer_ms(dag.edge_data(e));
                }
                ready = ready.max(arrive);
            }
            let free = match self.gprev[x] {
                NIL => 0.0,
                p => self.finish[p as usize],
            };
            let start = ready.max(free);
            let finish = start + platform.run_ms(x, works[x], gi);
            if start.to_bits() == self.start[x].to_bits()
                && finish.to_bits() == self.finish[x].to_bits()
            {
                continue;
            }
            if self.journal_len < T {
                self.journal[self.journal_len] = (x as u32, self.start[x], self.finish[x]);
                self.journal_len += 1;
            }
            self.total_finish_ms += finish - self.finish[x];
            lost_max |= self.finish[x] == old_makespan;
            new_max = new_max.max(finish);
            self.start[x] = start;
            self.finish[x] = finish;
            self.work += dag.succs(x).0.len() as u64;
            for &s in dag.succs(x).0 {
                self.mark(s as usize);
            }
            let next = self.gnext[x];
            if next != NIL {
                self.mark(next as usize);
            }
        }
        // The makespan: a new finish beyond it, or (if the task that set it moved earlier) a
        // scan of all finishes; else unchanged.
        self.makespan_ms = if new_max >= old_makespan {
            new_max
        } else if lost_max {
            self.work += self.tasks as u64;
            self.finish[..self.tasks]
                .iter()
                .copied()
                .fold(0.0, f64::max)
        } else {
            old_makespan
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededRng;
    use crate::dag::test_support::{RandomDagShape, random_dag};
    use crate::dag::{Bandwidth, DagPlanner, GpuPool, Heft};

    fn problem(seed: u64, n: usize) -> (Dag<64, 512>, GpuPool<8>) {
        let shape = RandomDagShape {
            base_work: 1.0,
            work_span: 40,
            data_span: 30,
        };
        let dag = random_dag(seed, n, 1 + (seed % 4) as u32, shape);
        let mut pool = GpuPool::new(Bandwidth::PerMs(2.0 + seed as f64 % 3.0));
        for g in 0..(2 + seed % 5) {
            pool.add_gpu(0.5 + 0.3 * g as f64).unwrap();
        }
        (dag, pool)
    }

    /// Random valid relocations, each checked against a full evaluation (bit for bit), and
    /// random undos checked against the state before the move.
    #[test]
    fn moves_match_full_evaluation_and_undo_restores_exactly() {
        for seed in 0..12u64 {
            let (dag, pool) = problem(seed, 20 + 3 * seed as usize);
            let mut plan = Plan::new();
            Heft::<64, 8>::new().plan(&dag, &pool, &mut plan).unwrap();
            let mut ev: Evaluator<64, 8> = Evaluator::new();
            let mut inc: IncrementalSchedule<64, 8> = IncrementalSchedule::new();
            inc.load(&dag, &pool, &plan, &mut ev).unwrap();
            let mut rng = SeededRng::new(seed);
            let (n, p) = (dag.task_count(), pool.gpu_count());
            for step in 0..200 {
                let t = rng.below(n as u32) as usize;
                let (lo, hi) = inc.window(&dag, t);
                let to = lo + rng.below((hi - lo + 1) as u32) as usize;
                let g = rng.below(p as u32) as usize;
                let before = (
                    inc.order().to_vec(),
                    inc.gpus().to_vec(),
                    inc.finish_ms().to_vec(),
                );
                let before_ms = inc.makespan_ms();
                let mv = inc.relocate(&dag, &pool, t, g, to).unwrap();
                let mut now = Plan::new();
                inc.write_plan(&mut now).unwrap();
                let full = ev.evaluate(&dag, &pool, &now).unwrap();
                assert_eq!(
                    inc.makespan_ms().to_bits(),
                    full.to_bits(),
                    "seed {seed} step {step}"
                );
                assert_eq!(inc.finish_ms(), ev.finish_ms());
                assert_eq!(inc.start_ms(), ev.start_ms());
                let sum: f64 = ev.finish_ms().iter().sum();
                assert!((inc.total_finish_ms() - sum).abs() <= 1e-6 * sum.max(1.0));
                if rng.below(2) == 0 {
                    inc.undo(mv);
                    assert_eq!(inc.order(), &before.0[..]);
                    assert_eq!(inc.gpus(), &before.1[..]);
                    assert_eq!(inc.finish_ms(), &before.2[..]);
                    assert_eq!(inc.makespan_ms().to_bits(), before_ms.to_bits());
                } else {
                    inc.commit();
                }
            }
            assert!(inc.work() > 0);
        }
    }

    /// Two relocations stacked (as a swap does) and undone in reverse order restore the
    /// state exactly; kept, they match a full evaluation.
    #[test]
    fn stacked_moves_undo_in_reverse_order() {
        for seed in 0..8u64 {
            let (dag, pool) = problem(seed, 24 + 3 * seed as usize);
            let mut plan = Plan::new();
            Heft::<64, 8>::new().plan(&dag, &pool, &mut plan).unwrap();
            let mut ev: Evaluator<64, 8> = Evaluator::new();
            let mut inc: IncrementalSchedule<64, 8> = IncrementalSchedule::new();
            inc.load(&dag, &pool, &plan, &mut ev).unwrap();
            let mut rng = SeededRng::new(100 + seed);
            let (n, p) = (dag.task_count(), pool.gpu_count());
            let mut stacked = 0;
            for _ in 0..100 {
                let before = (inc.order().to_vec(), inc.finish_ms().to_vec());
                let (before_ms, before_sum) = (inc.makespan_ms(), inc.total_finish_ms());
                let mut moves = [None, None];
                for slot in &mut moves {
                    let t = rng.below(n as u32) as usize;
                    let (lo, hi) = inc.window(&dag, t);
                    let to = lo + rng.below((hi - lo + 1) as u32) as usize;
                    // The second only when it surely fits the journal (as in a swap).
                    if inc.journal_room() {
                        let g = rng.below(p as u32) as usize;
                        *slot = Some(inc.relocate(&dag, &pool, t, g, to));
                    }
                }
                stacked += usize::from(moves[1].is_some());
                let mut now = Plan::new();
                inc.write_plan(&mut now).unwrap();
                let full = ev.evaluate(&dag, &pool, &now).unwrap();
                assert_eq!(inc.makespan_ms().to_bits(), full.to_bits());
                if rng.below(2) == 0 {
                    for mv in moves.into_iter().rev().flatten() {
                        inc.undo(mv.unwrap());
                    }
                    assert_eq!(inc.order(), &before.0[..]);
                    assert_eq!(inc.finish_ms(), &before.1[..]);
                    assert_eq!(inc.makespan_ms().to_bits(), before_ms.to_bits());
                    assert_eq!(inc.total_finish_ms().to_bits(), before_sum.to_bits());
                } else {
                    inc.commit();
                }
            }
            assert!(stacked > 50, "seed {seed}: {stacked}");
        }
    }

    #[test]
    fn refused_moves_change_nothing() {
        let (dag, pool) = problem(3, 30);
        let mut plan = Plan::new();
        Heft::<64, 8>::new().plan(&dag, &pool, &mut plan).unwrap();
        let mut ev: Evaluator<64, 8> = Evaluator::new();
        let mut inc: IncrementalSchedule<64, 8> = IncrementalSchedule::new();
        let ms = inc.load(&dag, &pool, &plan, &mut ev).unwrap();
        let t = (0..30).find(|&t| dag.fan_in(t) > 0).unwrap();
        let (lo, _) = inc.window(&dag, t);
        assert!(matches!(
            inc.relocate(&dag, &pool, t, 0, lo - 1),
            Err(PlanError::PrecedenceViolated { .. })
        ));
        assert!(matches!(
            inc.relocate(&dag, &pool, t, 9, lo),
            Err(PlanError::UnknownGpu { .. })
        ));
        assert!(matches!(
            inc.relocate(&dag, &pool, 99, 0, 0),
            Err(PlanError::UnknownTask(99))
        ));
        assert_eq!(inc.makespan_ms(), ms);
        let mut again = Plan::new();
        inc.write_plan(&mut again).unwrap();
        assert_eq!(again.order(), plan.order());
    }

    /// The critical path ends at the makespan, starts at time 0 (or at a task with no
    /// binding constraint) and each step is a binding GPU or data predecessor.
    #[test]
    fn critical_path_is_a_chain_of_binding_constraints() {
        for seed in 0..6 {
            let (dag, pool) = problem(seed, 40);
            let mut plan = Plan::new();
            Heft::<64, 8>::new().plan(&dag, &pool, &mut plan).unwrap();
            let mut ev: Evaluator<64, 8> = Evaluator::new();
            let mut inc: IncrementalSchedule<64, 8> = IncrementalSchedule::new();
            inc.load(&dag, &pool, &plan, &mut ev).unwrap();
            let mut path = [0u32; 64];
            let len = inc.critical_path(&dag, &pool, &mut path);
            assert!(len >= 1);
            assert_eq!(inc.finish_ms()[path[0] as usize], inc.makespan_ms());
            for w in path[..len].windows(2) {
                let (later, earlier) = (w[0] as usize, w[1] as usize);
                assert!(inc.finish_ms()[earlier] <= inc.start_ms()[later]);
            }
        }
    }
}
