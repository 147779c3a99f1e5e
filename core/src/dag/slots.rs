//! The insertion-based partial schedule every list scheduler builds (HEFT, PEFT, CPOP,
//! lookahead HEFT, IPPTS), and the ready list the dynamic-priority ones pick from.
//!
//! # Insertion ([`SlotSchedule`])
//! Each GPU keeps its placed tasks in a start-ordered linked list. A task may go into an idle
//! gap between two placed tasks if it fits after its data is ready (Topcuoglu et al. 2002,
//! §4.1, "insertion-based policy"), else at the end of the queue. Ready time counts only the
//! predecessors placed so far (a list scheduler places every predecessor first; the lookahead
//! of [`HeftLookahead`](super::HeftLookahead) places children whose other parents are not
//! placed yet and ignores those, as Bittencourt et al. 2010 do).
//!
//! Placements can be undone in LIFO order ([`SlotSchedule::unplace`]), which the lookahead uses
//! to try a task and its children on every GPU.
//!
//! # From a schedule to a [`Plan`]
//! [`SlotSchedule::write_plan`]: the GPUs as placed, the order by start time with ties by
//! placement sequence (a topological order, so zero-length tasks that start together stay
//! after their predecessors). Each GPU then runs its tasks in start order, and by induction
//! every task starts in the [`Evaluator`](super::Evaluator) no later than in the schedule, so
//! the evaluated makespan is ≤ the schedule's (tested per planner).
//!
//! Memory `37·T + 16·P` bytes (schedule) and `8·T` (ready list).

use super::eval::{Plan, PlanError};
use super::gpus::Platform;
use super::graph::Dag;

/// "No task": end of a GPU's list, or "at the head" for [`Slot::after`].
pub(crate) const NIL: u32 = u32::MAX;

/// Where a task would run on one GPU: start, finish, and the list node it goes after.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Slot {
    pub start: f64,
    pub finish: f64,
    pub after: u32,
}

/// What [`SlotSchedule::place`] changed, for [`SlotSchedule::unplace`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Undo {
    task: u32,
    gpu: u16,
    after: u32,
    makespan_ms: f64,
    max_gap_ms: f64,
}

/// A partial insertion-based schedule of up to `T` tasks on up to `P` GPUs.
#[derive(Clone, Debug)]
pub(crate) struct SlotSchedule<const T: usize, const P: usize> {
    tasks: usize,
    gpus: usize,
    placed_count: usize,
    makespan_ms: f64,
    placed: [bool; T],
    seq: [u32; T],
    start: [f64; T],
    finish: [f64; T],
    gpu: [u16; T],
    next: [u32; T],
    prev: [u32; T],
    head: [u32; P],
    tail: [u32; P],
    ready: [f64; P],
    /// An upper bound on the longest idle gap of each GPU (gaps only split after they
    /// open, so the longest gap ever opened bounds them all): a task longer than it goes
    /// straight to the end of the queue.
    max_gap: [f64; P],
    /// List nodes visited by gap searches (work units for searches with a budget).
    steps: core::cell::Cell<u64>,
}

impl<const T: usize, const P: usize> SlotSchedule<T, P> {
    /// Empty scratch.
    pub const fn new() -> Self {
        Self {
            tasks: 0,
            gpus: 0,
            placed_count: 0,
            makespan_ms: 0.0,
            placed: [false; T],
            seq: [0; T],
            start: [0.0; T],
            finish: [0.0; T],
            gpu: [0; T],
            next: [NIL; T],
            prev: [NIL; T],
            head: [NIL; P],
            tail: [NIL; P],
            ready: [0.0; P],
            max_gap: [0.0; P],
            steps: core::cell::Cell::new(0),
        }
    }

    /// Start an empty schedule of `tasks` tasks on `gpus` GPUs (both already checked against
    /// the capacities). O(T + P).
    pub fn reset(&mut self, tasks: usize, gpus: usize) {
        self.tasks = tasks.min(T);
        self.gpus = gpus.min(P);
        self.placed_count = 0;
        self.makespan_ms = 0.0;
        self.placed[..self.tasks].fill(false);
        self.head[..self.gpus].fill(NIL);
        self.tail[..self.gpus].fill(NIL);
        self.max_gap[..self.gpus].fill(0.0);
    }

    /// Latest finish so far. O(1).
    pub fn makespan_ms(&self) -> f64 {
        self.makespan_ms
    }

    /// Start times by task id (valid for placed tasks). O(1).
    pub fn start_ms(&self) -> &[f64] {
        &self.start[..self.tasks]
    }

    /// Finish times by task id (valid for placed tasks). O(1).
    pub fn finish_ms(&self) -> &[f64] {
        &self.finish[..self.tasks]
    }

    /// When all of task `t`'s placed predecessors' data is on GPU `g`. O(fan-in).
    pub fn ready_ms<const E: usize>(
        &self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
        g: usize,
    ) -> f64 {
        let (srcs, edges) = dag.preds(t);
        let mut ready = 0.0f64;
        for (&s, &e) in srcs.iter().zip(edges) {
            let s = s as usize;
            if !self.placed[s] {
                continue;
            }
            let from = usize::from(self.gpu[s]);
            ready = ready.max(self.finish[s] + platform.transfer_ms(dag.edge_data(e), from, g));
        }
        ready
    }

    /// Earliest slot of length `run` on GPU `g` starting at or after `ready`: the first idle
    /// gap that fits, else the end of the queue. Gaps that close before `ready` cannot fit,
    /// so the scan starts from the last task starting before `ready`, found by walking back
    /// from the tail: O(tasks on g starting at or after `ready`), which list schedulers keep
    /// small (they place tasks roughly in time order). Same result as scanning from the head.
    pub fn slot_after(&self, g: usize, ready: f64, run: f64) -> Slot {
        self.slot_within(g, ready, run, usize::MAX)
    }

    /// [`slot_after`](Self::slot_after) looking at most `max_back` tasks back from the tail:
    /// older gaps are ignored (a feasible slot, possibly later than the earliest). O(max_back).
    pub fn slot_within(&self, g: usize, ready: f64, run: f64, max_back: usize) -> Slot {
        let tail = self.tail[g];
        if run > self.max_gap[g] || tail == NIL {
            // No gap can hold the task: the end of the queue.
            let prev_end = if tail == NIL {
                0.0
            } else {
                self.finish[tail as usize]
            };
            let start = ready.max(prev_end);
            return Slot {
                start,
                finish: start + run,
                after: tail,
            };
        }
        let mut visited = 0u64;
        let mut cur = tail;
        let mut first = NIL;
        while cur != NIL && self.start[cur as usize] >= ready {
            if visited as usize >= max_back {
                // Bounded: the gaps before `cur` are not searched.
                first = self.next[cur as usize];
                break;
            }
            first = cur;
            cur = self.prev[cur as usize];
            visited += 1;
        }
        let (mut prev_end, mut after) = match cur {
            NIL => (0.0f64, NIL),
            c => (self.finish[c as usize], c),
        };
        let mut cur = first;
        while cur != NIL {
            let c = cur as usize;
            visited += 1;
            let candidate = ready.max(prev_end);
            if candidate + run <= self.start[c] {
                self.steps.set(self.steps.get() + visited);
                return Slot {
                    start: candidate,
                    finish: candidate + run,
                    after,
                };
            }
            prev_end = self.finish[c];
            after = cur;
            cur = self.next[c];
        }
        self.steps.set(self.steps.get() + visited);
        let start = ready.max(prev_end);
        Slot {
            start,
            finish: start + run,
            after,
        }
    }

    /// List nodes visited by gap searches so far (never reset). O(1).
    pub fn steps(&self) -> u64 {
        self.steps.get()
    }

    /// Earliest insertion slot of task `t` on GPU `g`. O(fan-in + tasks on g).
    pub fn earliest_slot<const E: usize>(
        &self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
        g: usize,
    ) -> Slot {
        let ready = self.ready_ms(dag, platform, t, g);
        self.slot_after(g, ready, platform.run_ms(t, dag.works_ms()[t], g))
    }

    /// Ready time of task `t` on every GPU (placed predecessors only) into the `ready`
    /// scratch. With uniform transfers, the latest arrival from another GPU is the overall
    /// latest unless that one sits on g, then the latest from a GPU other than its (top two
    /// over distinct GPUs): O(fan-in + P). Otherwise O(fan-in · P).
    pub fn ready_all<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
    ) {
        let p = self.gpus;
        if !platform.uniform_transfers() {
            for g in 0..p {
                self.ready[g] = self.ready_ms(dag, platform, t, g);
            }
            return;
        }
        let bandwidth = platform.bandwidth();
        self.ready[..p].fill(0.0);
        let (mut best1, mut best1_gpu, mut best2) = (0.0f64, u16::MAX, 0.0f64);
        let (srcs, edges) = dag.preds(t);
        for (&s, &e) in srcs.iter().zip(edges) {
            let s = s as usize;
            if !self.placed[s] {
                continue;
            }
            let g = self.gpu[s];
            let own = &mut self.ready[usize::from(g)];
            *own = own.max(self.finish[s]);
            let arrive = self.finish[s] + bandwidth.transfer_ms(dag.edge_data(e));
            if arrive > best1 {
                if g != best1_gpu {
                    best2 = best1;
                }
                (best1, best1_gpu) = (arrive, g);
            } else if g != best1_gpu && arrive > best2 {
                best2 = arrive;
            }
        }
        for (g, r) in self.ready[..p].iter_mut().enumerate() {
            let other = if g == usize::from(best1_gpu) {
                best2
            } else {
                best1
            };
            *r = r.max(other);
        }
    }

    /// Earliest insertion slot of task `t` on GPU `g` after [`ready_all`](Self::ready_all)
    /// for `t`. O(tasks on g).
    pub fn prepared_slot<const E: usize>(
        &self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
        g: usize,
    ) -> Slot {
        self.slot_after(g, self.ready[g], platform.run_ms(t, dag.works_ms()[t], g))
    }

    /// Fill `finish[..P]` with task `t`'s earliest insertion finish on every GPU. O(fan-in +
    /// P + placed tasks) with uniform transfers.
    pub fn all_finishes<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
        finish: &mut [f64],
    ) {
        self.ready_all(dag, platform, t);
        let work = dag.works_ms()[t];
        for (g, f) in finish.iter_mut().enumerate().take(self.gpus) {
            *f = self
                .slot_after(g, self.ready[g], platform.run_ms(t, work, g))
                .finish;
        }
    }

    /// The GPU with the earliest finish time for task `t` (ties: lowest index) and its slot.
    /// First every GPU's end-of-queue finish (O(1) each, an upper bound of its insertion
    /// finish); then the gap search only on GPUs whose lower bound `ready + run` could still
    /// win — the same choice as searching every GPU. O(fan-in + P + gap searches) with
    /// uniform transfers.
    pub fn best_eft<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
    ) -> (usize, Slot) {
        self.best_eft_within(dag, platform, t, usize::MAX)
    }

    /// [`best_eft`](Self::best_eft) with each GPU's gap search bounded to `max_back` tasks
    /// from its tail ([`slot_within`](Self::slot_within)). O(fan-in + P·max_back).
    pub fn best_eft_within<const E: usize>(
        &mut self,
        dag: &Dag<T, E>,
        platform: &impl Platform,
        t: usize,
        max_back: usize,
    ) -> (usize, Slot) {
        self.ready_all(dag, platform, t);
        let work = dag.works_ms()[t];
        let end_of_queue = |s: &Self, g: usize, run: f64| {
            let tail = s.tail[g];
            let prev_end = if tail == NIL {
                0.0
            } else {
                s.finish[tail as usize]
            };
            let start = s.ready[g].max(prev_end);
            Slot {
                start,
                finish: start + run,
                after: tail,
            }
        };
        let mut best = (0, end_of_queue(self, 0, platform.run_ms(t, work, 0)));
        for g in 1..self.gpus {
            let slot = end_of_queue(self, g, platform.run_ms(t, work, g));
            if slot.finish < best.1.finish {
                best = (g, slot);
            }
        }
        for g in 0..self.gpus {
            let run = platform.run_ms(t, work, g);
            let bound = self.ready[g] + run;
            let could_win = bound < best.1.finish || (bound == best.1.finish && g < best.0);
            if !could_win || run > self.max_gap[g] || self.tail[g] == NIL {
                continue;
            }
            let slot = self.slot_within(g, self.ready[g], run, max_back);
            if slot.finish < best.1.finish || (slot.finish == best.1.finish && g < best.0) {
                best = (g, slot);
            }
        }
        best
    }

    /// Record task `t` on GPU `g` in `slot`, linking it into g's start-ordered list; returns
    /// what [`unplace`](Self::unplace) needs. O(1).
    pub fn place(&mut self, t: usize, g: usize, slot: Slot) -> Undo {
        let undo = Undo {
            task: t as u32,
            gpu: g as u16,
            after: slot.after,
            makespan_ms: self.makespan_ms,
            max_gap_ms: self.max_gap[g],
        };
        self.start[t] = slot.start;
        self.finish[t] = slot.finish;
        self.gpu[t] = g as u16;
        self.placed[t] = true;
        self.seq[t] = self.placed_count as u32;
        self.placed_count += 1;
        let next = if slot.after == NIL {
            let next = self.head[g];
            self.head[g] = t as u32;
            next
        } else {
            let a = slot.after as usize;
            let next = self.next[a];
            self.next[a] = t as u32;
            next
        };
        self.next[t] = next;
        self.prev[t] = slot.after;
        if next == NIL {
            // Appended: the gap before it is new (inserted tasks only split old gaps).
            let prev_end = if slot.after == NIL {
                0.0
            } else {
                self.finish[slot.after as usize]
            };
            self.max_gap[g] = self.max_gap[g].max(slot.start - prev_end);
            self.tail[g] = t as u32;
        } else {
            self.prev[next as usize] = t as u32;
        }
        self.makespan_ms = self.makespan_ms.max(slot.finish);
        undo
    }

    /// Take back the most recent placement still in force (LIFO). O(1).
    pub fn unplace(&mut self, undo: Undo) {
        let t = undo.task as usize;
        let g = usize::from(undo.gpu);
        let next = self.next[t];
        if undo.after == NIL {
            self.head[g] = next;
        } else {
            self.next[undo.after as usize] = next;
        }
        if next == NIL {
            self.tail[g] = undo.after;
        } else {
            self.prev[next as usize] = undo.after;
        }
        self.placed[t] = false;
        self.placed_count = self.placed_count.saturating_sub(1);
        self.makespan_ms = undo.makespan_ms;
        self.max_gap[g] = undo.max_gap_ms;
    }

    /// The schedule as a [`Plan`]: GPUs as placed, tasks by start time, ties by placement
    /// sequence. Every task must be placed. O(T log T).
    pub fn write_plan(&self, out: &mut Plan<T>) -> Result<(), PlanError> {
        out.reset(self.tasks)?;
        let (gpus, order) = out.parts_mut();
        self.write_parts(gpus, order);
        Ok(())
    }

    /// [`write_plan`](Self::write_plan) into bare slices of the task count. O(T log T).
    pub fn write_parts(&self, gpus: &mut [u16], order: &mut [u32]) {
        let n = self.tasks.min(gpus.len()).min(order.len());
        gpus[..n].copy_from_slice(&self.gpu[..n]);
        for (i, o) in order[..n].iter_mut().enumerate() {
            *o = i as u32;
        }
        let (start, seq) = (&self.start, &self.seq);
        order[..n].sort_unstable_by(|&a, &b| {
            start[a as usize]
                .total_cmp(&start[b as usize])
                .then(seq[a as usize].cmp(&seq[b as usize]))
        });
    }
}

/// Tasks whose predecessors are all placed, popped by highest `key` first (ties: lowest task
/// id). A binary heap over task ids; keys are read from the caller's slice at each
/// comparison, so they must not change while a task is queued. O(log T) per push and pop.
#[derive(Clone, Debug)]
pub(crate) struct ReadyList<const T: usize> {
    len: usize,
    heap: [u32; T],
    pending: [u32; T],
}

/// Whether task `a` pops before task `b`.
fn before(key: &[f64], a: u32, b: u32) -> bool {
    match key[a as usize].total_cmp(&key[b as usize]) {
        core::cmp::Ordering::Greater => true,
        core::cmp::Ordering::Less => false,
        core::cmp::Ordering::Equal => a < b,
    }
}

impl<const T: usize> ReadyList<T> {
    /// Empty list.
    pub const fn new() -> Self {
        Self {
            len: 0,
            heap: [0; T],
            pending: [0; T],
        }
    }

    /// Queue every entry task of `dag` (`key` has one entry per task). O(T log T).
    pub fn reset<const E: usize>(&mut self, dag: &Dag<T, E>, key: &[f64]) {
        self.len = 0;
        let n = dag.task_count();
        for t in 0..n {
            self.pending[t] = dag.fan_in(t);
            if self.pending[t] == 0 {
                self.push(t as u32, key);
            }
        }
    }

    /// The queued task that pops first, removed. O(log T).
    pub fn pop(&mut self, key: &[f64]) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let top = self.heap[0];
        self.len -= 1;
        self.heap[0] = self.heap[self.len];
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if l < self.len && before(key, self.heap[l], self.heap[best]) {
                best = l;
            }
            if r < self.len && before(key, self.heap[r], self.heap[best]) {
                best = r;
            }
            if best == i {
                break;
            }
            self.heap.swap(i, best);
            i = best;
        }
        Some(top)
    }

    /// Task `t` was placed: queue the successors whose last predecessor it was. O(fan-out ·
    /// log T).
    pub fn release<const E: usize>(&mut self, dag: &Dag<T, E>, t: usize, key: &[f64]) {
        for &s in dag.succs(t).0 {
            let p = &mut self.pending[s as usize];
            *p = p.saturating_sub(1);
            if *p == 0 {
                self.push(s, key);
            }
        }
    }

    fn push(&mut self, t: u32, key: &[f64]) {
        if self.len >= T {
            return;
        }
        let mut i = self.len;
        self.heap[i] = t;
        self.len += 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !before(key, self.heap[i], self.heap[parent]) {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{Bandwidth, GpuPool, TaskId};

    #[test]
    fn insertion_fills_the_first_gap_that_fits_and_unplace_restores() {
        let mut d: Dag<8, 8> = Dag::new();
        for w in [2.0, 2.0, 1.0, 3.0] {
            d.add_task(w).unwrap();
        }
        d.add_edge(TaskId(0), TaskId(1), 0.0).unwrap();
        d.seal().unwrap();
        let mut pool: GpuPool<2> = GpuPool::new(Bandwidth::Infinite);
        pool.add_gpu(1.0).unwrap();
        let mut s: SlotSchedule<8, 2> = SlotSchedule::new();
        s.reset(4, 1);
        // Task 1 at 5..7 leaves a gap 0..5 on GPU 0.
        s.place(1, 0, s.slot_after(0, 5.0, 2.0));
        let first = s.earliest_slot(&d, &pool, 0, 0);
        assert_eq!((first.start, first.finish, first.after), (0.0, 2.0, NIL));
        s.place(0, 0, first);
        // Task 3 (3 long) fits 2..5; task 2 then goes after task 1.
        let gap = s.earliest_slot(&d, &pool, 3, 0);
        assert_eq!((gap.start, gap.after), (2.0, 0));
        let u3 = s.place(3, 0, gap);
        let end = s.earliest_slot(&d, &pool, 2, 0);
        assert_eq!((end.start, end.after), (7.0, 1));
        s.unplace(u3);
        assert_eq!(s.earliest_slot(&d, &pool, 3, 0), gap);
        assert_eq!(s.makespan_ms(), 7.0);
    }

    /// The tail-first gap search equals a plain scan from the head, zero-length tasks and
    /// ready times equal to a start included.
    #[test]
    fn tail_first_gap_search_equals_head_scan() {
        fn head_scan<const T: usize, const P: usize>(
            s: &SlotSchedule<T, P>,
            g: usize,
            ready: f64,
            run: f64,
        ) -> Slot {
            let (mut prev_end, mut after, mut cur) = (0.0f64, NIL, s.head[g]);
            while cur != NIL {
                let c = cur as usize;
                let candidate = ready.max(prev_end);
                if candidate + run <= s.start[c] {
                    return Slot {
                        start: candidate,
                        finish: candidate + run,
                        after,
                    };
                }
                prev_end = s.finish[c];
                after = cur;
                cur = s.next[c];
            }
            let start = ready.max(prev_end);
            Slot {
                start,
                finish: start + run,
                after,
            }
        }
        let mut rng = crate::SeededRng::new(9);
        let mut s: SlotSchedule<64, 4> = SlotSchedule::new();
        for _ in 0..20 {
            s.reset(64, 3);
            for t in 0..40 {
                let g = rng.below(3) as usize;
                let (ready, run) = (f64::from(rng.below(60)), f64::from(rng.below(6)));
                let slot = s.slot_after(g, ready, run);
                assert_eq!(slot, head_scan(&s, g, ready, run));
                s.place(t, g, slot);
            }
            for _ in 0..50 {
                let g = rng.below(3) as usize;
                let (ready, run) = (f64::from(rng.below(80)), f64::from(rng.below(6)));
                assert_eq!(s.slot_after(g, ready, run), head_scan(&s, g, ready, run));
            }
        }
    }

    /// The pruned choice of `best_eft` is the plain argmin over every GPU's insertion slot
    /// (ties: lowest GPU), on random DAGs with transfers.
    #[test]
    fn pruned_best_eft_equals_exhaustive_search() {
        use crate::dag::test_support::{RandomDagShape, random_dag};
        for seed in 0..10u64 {
            let shape = RandomDagShape {
                base_work: 0.0,
                work_span: 20,
                data_span: 10,
            };
            let dag: Dag<64, 512> = random_dag(seed, 60, 2, shape);
            let mut pool: GpuPool<8> = GpuPool::new(Bandwidth::PerMs(2.0));
            for g in 0..5 {
                pool.add_gpu(0.5 + 0.25 * f64::from(g)).unwrap();
            }
            let mut s: SlotSchedule<64, 8> = SlotSchedule::new();
            s.reset(60, 5);
            for &task in dag.topo_order() {
                let t = task as usize;
                let mut want = (0, s.earliest_slot(&dag, &pool, t, 0));
                for g in 1..5 {
                    let slot = s.earliest_slot(&dag, &pool, t, g);
                    if slot.finish < want.1.finish {
                        want = (g, slot);
                    }
                }
                let got = s.best_eft(&dag, &pool, t);
                assert_eq!(got, want, "seed {seed} task {t}");
                s.place(t, got.0, got.1);
            }
            assert!(s.steps() > 0);
        }
    }

    #[test]
    fn ready_list_pops_by_key_then_id_and_respects_precedence() {
        let mut d: Dag<8, 8> = Dag::new();
        for _ in 0..4 {
            d.add_task(1.0).unwrap();
        }
        d.add_edge(TaskId(0), TaskId(3), 0.0).unwrap();
        d.seal().unwrap();
        let key = [1.0, 2.0, 2.0, 9.0];
        let mut r: ReadyList<8> = ReadyList::new();
        r.reset(&d, &key);
        let mut got = [0u32; 4];
        for slot in got.iter_mut() {
            let t = r.pop(&key).unwrap();
            r.release(&d, t as usize, &key);
            *slot = t;
        }
        assert_eq!(got, [1, 2, 0, 3]);
        assert_eq!(r.pop(&key), None);
    }
}

/// Every list scheduler on seeded random DAGs (with transfers, heterogeneous GPUs): a valid
/// plan that evaluates no later than the scheduler's own insertion-based schedule.
#[cfg(test)]
mod planner_tests {
    use crate::dag::test_support::{RandomDagShape, evaluated_within, random_dag};
    use crate::dag::{
        Bandwidth, Cpop, DagPlanner, GpuPool, Heft, HeftLookahead, Ippts, LookaheadConfig, Peft,
        Plan,
    };

    #[test]
    fn every_list_scheduler_plan_evaluates_within_its_own_makespan() {
        let mut rng = crate::SeededRng::new(77);
        for case in 0..25u64 {
            let n = 8 + rng.below(50) as usize;
            let shape = RandomDagShape {
                base_work: 1.0,
                work_span: 30,
                data_span: 40,
            };
            let dag = random_dag::<64, 512>(case, n, 1 + rng.below(4), shape);
            let mut pool: GpuPool<8> = GpuPool::new(Bandwidth::PerMs(1.0 + rng.below(8) as f64));
            for _ in 0..(1 + rng.below(6)) {
                pool.add_gpu(0.3 + rng.unit_f64()).unwrap();
            }
            let mut plan = Plan::new();
            let mut heft: Heft<64, 8> = Heft::new();
            heft.plan(&dag, &pool, &mut plan).unwrap();
            evaluated_within(&dag, &pool, &plan, heft.makespan_ms());
            let mut peft: Peft<64, 8, [f64; 512]> = Peft::new();
            peft.plan(&dag, &pool, &mut plan).unwrap();
            evaluated_within(&dag, &pool, &plan, peft.makespan_ms());
            let mut cpop: Cpop<64, 8> = Cpop::new();
            cpop.plan(&dag, &pool, &mut plan).unwrap();
            evaluated_within(&dag, &pool, &plan, cpop.makespan_ms());
            let mut ippts: Ippts<64, 8, [f64; 512]> = Ippts::new();
            ippts.plan(&dag, &pool, &mut plan).unwrap();
            evaluated_within(&dag, &pool, &plan, ippts.makespan_ms());
            for config in [
                LookaheadConfig::PAPER,
                LookaheadConfig {
                    candidate_gpus: 2,
                    max_children: 2,
                },
            ] {
                let mut la: HeftLookahead<64, 8> = HeftLookahead::new(config);
                la.plan(&dag, &pool, &mut plan).unwrap();
                evaluated_within(&dag, &pool, &plan, la.makespan_ms());
            }
        }
    }
}
