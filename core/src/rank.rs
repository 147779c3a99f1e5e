//! The ranking: every live job by `(key, id)` in an AVL tree ([`Avl`]), with per-subtree
//! summaries that let the scheduling pass skip whole runs of jobs whose plan is already known.
//!
//! A key changes only when the order says it does, so the index changes only then
//! (O(log J) per change). The pass walks the ranking best first and needs to *visit* only
//! the jobs whose plan is a decision — a queued job that starts, a running job that is
//! preempted — plus O(log J) nodes per such decision: a subtree none of whose queued jobs can
//! fit the GPUs left, and whose running jobs all fit, is passed over in one step using two
//! summaries (GPUs held by running jobs, the smallest request among queued jobs).

use crate::avl::{Avl, NIL, NodeKeys};
use crate::ids::JobId;
use crate::job_table::Slot;
use crate::order::PriorityKey;
use crate::scheduler::snapshot::{DecodeInPlace, Reader};
use crate::sort::heap_sort;
use serde::{Deserialize, Serialize};

/// The data the tree sorts and summarises, one entry per slot.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Entries<const J: usize> {
    key: heapless::Vec<PriorityKey, J>,
    id: heapless::Vec<JobId, J>,
    gpus: heapless::Vec<u16, J>,
    running: heapless::Vec<bool, J>,
    /// Subtree summary: GPUs requested by the running jobs.
    running_gpus: heapless::Vec<u32, J>,
    /// Subtree summary: smallest request among the queued jobs (`u16::MAX` if none).
    min_queued_gpus: heapless::Vec<u16, J>,
}

impl<const J: usize> Entries<J> {
    fn rank_of(&self, s: Slot) -> Option<(PriorityKey, JobId)> {
        let s = usize::from(s);
        Some((*self.key.get(s)?, *self.id.get(s)?))
    }

    fn running_gpus(&self, s: Slot) -> u32 {
        self.running_gpus.get(usize::from(s)).copied().unwrap_or(0)
    }

    fn min_queued(&self, s: Slot) -> u16 {
        self.min_queued_gpus
            .get(usize::from(s))
            .copied()
            .unwrap_or(u16::MAX)
    }

    fn gpus(&self, s: Slot) -> u16 {
        self.gpus.get(usize::from(s)).copied().unwrap_or(0)
    }

    fn is_running(&self, s: Slot) -> bool {
        self.running.get(usize::from(s)).copied().unwrap_or(false)
    }

    /// What `update` would store for `node` given its children.
    fn summary(&self, node: Slot, left: Slot, right: Slot) -> (u32, u16) {
        let gpus = self.gpus(node);
        let (own_running, own_queued) = if self.is_running(node) {
            (u32::from(gpus), u16::MAX)
        } else {
            (0, gpus)
        };
        let running = own_running
            .saturating_add(self.running_gpus(left))
            .saturating_add(self.running_gpus(right));
        let queued = own_queued
            .min(self.min_queued(left))
            .min(self.min_queued(right));
        (running, queued)
    }
}

impl<const J: usize> NodeKeys for Entries<J> {
    fn less(&self, a: Slot, b: Slot) -> bool {
        self.rank_of(a) < self.rank_of(b)
    }

    fn update(&mut self, node: Slot, left: Slot, right: Slot) {
        let (running, queued) = self.summary(node, left, right);
        let n = usize::from(node);
        if let Some(x) = self.running_gpus.get_mut(n) {
            *x = running;
        }
        if let Some(x) = self.min_queued_gpus.get_mut(n) {
            *x = queued;
        }
    }
}

/// What the scheduling pass plans with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlanBudget {
    /// Healthy GPUs: a queued job asking for more waits without blocking anyone.
    pub(crate) healthy: usize,
    /// GPUs to hand out in rank order: all healthy GPUs when preemptive, else the free ones.
    pub(crate) gpus: usize,
    /// Running jobs keep their GPUs only while they fit in rank order.
    pub(crate) preemptive: bool,
    /// The first queued job that fits the cluster but not the GPUs left stops every later
    /// queued job (strict FIFO); else later jobs that fit are started (backfilling).
    pub(crate) block: bool,
}

/// Every live job, ranked by `(key, id)`. Memory: about 44 bytes per job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RankIndex<const J: usize> {
    tree: Avl<J>,
    entries: Entries<J>,
}

impl<const J: usize> RankIndex<J> {
    /// An empty ranking.
    pub(crate) const fn new() -> Self {
        Self {
            tree: Avl::new(),
            entries: Entries {
                key: heapless::Vec::new(),
                id: heapless::Vec::new(),
                gpus: heapless::Vec::new(),
                running: heapless::Vec::new(),
                running_gpus: heapless::Vec::new(),
                min_queued_gpus: heapless::Vec::new(),
            },
        }
    }

    /// Jobs ranked.
    pub(crate) fn len(&self) -> usize {
        self.tree.len()
    }

    /// Whether `slot` is ranked.
    pub(crate) fn contains(&self, slot: Slot) -> bool {
        self.tree.contains(slot)
    }

    /// The key `slot` is ranked by.
    pub(crate) fn key_of(&self, slot: Slot) -> Option<PriorityKey> {
        self.entries.key.get(usize::from(slot)).copied()
    }

    /// The id `slot` is ranked with.
    pub(crate) fn id_of(&self, slot: Slot) -> Option<JobId> {
        self.entries.id.get(usize::from(slot)).copied()
    }

    /// Whether `slot` is ranked as running.
    pub(crate) fn is_running(&self, slot: Slot) -> bool {
        self.entries.is_running(slot)
    }

    /// Ranks a new job. O(log J).
    pub(crate) fn insert(
        &mut self,
        slot: Slot,
        key: PriorityKey,
        id: JobId,
        gpus: u16,
        running: bool,
    ) {
        let e = &mut self.entries;
        let s = usize::from(slot);
        while e.key.len() <= s {
            // Slots are first used in increasing order, so this pushes at most once.
            let full = e.key.push(key).is_err()
                | e.id.push(id).is_err()
                | e.gpus.push(0).is_err()
                | e.running.push(false).is_err()
                | e.running_gpus.push(0).is_err()
                | e.min_queued_gpus.push(u16::MAX).is_err();
            if full {
                return;
            }
        }
        set(&mut e.key, s, key);
        set(&mut e.id, s, id);
        set(&mut e.gpus, s, gpus);
        set(&mut e.running, s, running);
        self.tree.insert(slot, &mut self.entries);
    }

    /// Removes a job from the ranking. O(log J).
    pub(crate) fn remove(&mut self, slot: Slot) {
        self.tree.remove(slot, &mut self.entries);
    }

    /// Gives `slot` a new key; moves it only if the key changed. Returns whether it did.
    /// O(log J).
    pub(crate) fn rekey(&mut self, slot: Slot, key: PriorityKey) -> bool {
        if self.key_of(slot) == Some(key) || !self.tree.contains(slot) {
            return false;
        }
        self.tree.remove(slot, &mut self.entries);
        set(&mut self.entries.key, usize::from(slot), key);
        self.tree.insert(slot, &mut self.entries);
        true
    }

    /// Re-ranks every job at once (orders whose keys may all change every pass): `key_of`
    /// gives each ranked slot its key now; the new order is sorted from the old one
    /// (adaptively: nearly sorted after one event) into `scratch`, and the tree rebuilt
    /// balanced when anything moved. O(J) plus the sort's moves, O(J log J) at worst.
    pub(crate) fn rekey_all(
        &mut self,
        scratch: &mut [Slot],
        mut key_of: impl FnMut(Slot) -> Option<PriorityKey>,
    ) {
        let mut n = 0;
        let mut at = self.tree.first();
        let mut changed = false;
        for x in scratch.iter_mut().take(self.tree.len()) {
            if at == NIL {
                break;
            }
            *x = at;
            n += 1;
            if let Some(key) = key_of(at)
                && self.key_of(at) != Some(key)
            {
                set(&mut self.entries.key, usize::from(at), key);
                changed = true;
            }
            at = self.tree.next(at);
        }
        if !changed {
            return;
        }
        let order = scratch.get_mut(..n).unwrap_or(&mut []);
        let e = &self.entries;
        sort_nearly_sorted(order, |a, b| e.less(a, b));
        self.tree.rebuild(order, &mut self.entries);
    }

    /// Marks `slot` running or queued. O(log J).
    pub(crate) fn set_running(&mut self, slot: Slot, running: bool) {
        if self.entries.is_running(slot) == running {
            return;
        }
        set(&mut self.entries.running, usize::from(slot), running);
        if self.tree.contains(slot) {
            self.tree.refresh_path(slot, &mut self.entries);
        }
    }

    /// The best-ranked slot (`NIL` when empty).
    pub(crate) fn first(&self) -> Slot {
        self.tree.first()
    }

    /// The slot ranked after `slot` (`NIL` at the end).
    pub(crate) fn next(&self, slot: Slot) -> Slot {
        self.tree.next(slot)
    }

    /// Plans one scheduling pass: in rank order, a running job keeps its GPUs if they fit in
    /// what is left (else it is preempted, when preemptive), and a queued job that fits
    /// starts. Appends the slots to preempt and to start, each in rank order. Visits only
    /// the jobs that are decided plus O(log J) nodes per decision. Never fails: each start
    /// takes a GPU and each preemption frees one, so neither list exceeds `G`.
    pub(crate) fn plan<const G: usize>(
        &self,
        budget: PlanBudget,
        preempts: &mut heapless::Vec<Slot, G>,
        starts: &mut heapless::Vec<Slot, G>,
    ) {
        let e = &self.entries;
        let mut left = budget.gpus;
        let mut blocked = false;
        let healthy = u16::try_from(budget.healthy).unwrap_or(u16::MAX);
        // The largest queued request that could still start.
        let cap = |left: usize, blocked: bool| -> u16 {
            if budget.block {
                if blocked { 0 } else { healthy }
            } else {
                u16::try_from(left).unwrap_or(u16::MAX).min(healthy)
            }
        };
        let (mut at, mut came_from) = (self.tree.root(), NIL);
        // Each node is entered once from above and left once upwards.
        for _ in 0..3 * J + 3 {
            if at == NIL {
                return;
            }
            let (l, r, up) = (
                self.tree.left(at),
                self.tree.right(at),
                self.tree.parent(at),
            );
            if came_from == up {
                let held = e.running_gpus(at) as usize;
                let skip =
                    e.min_queued(at) > cap(left, blocked) && (!budget.preemptive || held <= left);
                if skip {
                    if budget.preemptive {
                        left -= held;
                    }
                    (came_from, at) = (at, up);
                    continue;
                }
                if l != NIL {
                    (came_from, at) = (at, l);
                    continue;
                }
            } else if came_from == r && r != NIL {
                (came_from, at) = (at, up);
                continue;
            }
            // Back from the left subtree (or there is none): decide this job.
            let gpus = usize::from(e.gpus(at));
            if e.is_running(at) {
                if budget.preemptive {
                    if gpus <= left {
                        left -= gpus;
                    } else {
                        let _ = preempts.push(at);
                    }
                }
            } else if gpus <= budget.healthy && !blocked {
                if gpus <= left {
                    left -= gpus;
                    let _ = starts.push(at);
                } else if budget.block {
                    blocked = true;
                }
            }
            (came_from, at) = if r != NIL { (at, r) } else { (at, up) };
        }
    }

    /// Checks the tree, the summaries and that exactly `live` jobs are ranked. O(J).
    pub(crate) fn check(&self, live: usize) -> bool {
        if !self.tree.check(&self.entries) || self.tree.len() != live {
            return false;
        }
        let mut at = self.tree.first();
        for _ in 0..=J {
            if at == NIL {
                return true;
            }
            let summary = self
                .entries
                .summary(at, self.tree.left(at), self.tree.right(at));
            if summary != (self.entries.running_gpus(at), self.entries.min_queued(at)) {
                return false;
            }
            at = self.tree.next(at);
        }
        false
    }
}

/// Sorts `slots` by `less`, cheaply when they are nearly sorted (the last pass's order with
/// a few keys moved): insertion sort while it has moved at most `2·len` entries, then
/// [`heap_sort`]. `less` is a strict total order, so either gives the one sorted order.
/// O(len + moves), at most O(len log len) after the fallback.
fn sort_nearly_sorted(slots: &mut [Slot], less: impl Fn(Slot, Slot) -> bool) {
    let mut budget = slots.len().saturating_mul(2);
    for i in 1..slots.len() {
        let mut j = i;
        while j > 0 {
            let (Some(&a), Some(&b)) = (slots.get(j), slots.get(j - 1)) else {
                break;
            };
            if !less(a, b) {
                break;
            }
            if budget == 0 {
                heap_sort(slots, |&a, &b| less(a, b));
                return;
            }
            budget -= 1;
            slots.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn set<T, const J: usize>(column: &mut heapless::Vec<T, J>, i: usize, value: T) {
    if let Some(x) = column.get_mut(i) {
        *x = value;
    }
}

impl<const J: usize> DecodeInPlace for RankIndex<J> {
    fn decode_in_place(&mut self, de: &mut Reader<'_>) -> postcard::Result<()> {
        self.tree.decode_in_place(de)?;
        let e = &mut self.entries;
        e.key.decode_in_place(de)?;
        e.id.decode_in_place(de)?;
        e.gpus.decode_in_place(de)?;
        e.running.decode_in_place(de)?;
        e.running_gpus.decode_in_place(de)?;
        e.min_queued_gpus.decode_in_place(de)
    }

    fn reset(&mut self) {
        self.tree.reset();
        let e = &mut self.entries;
        e.key.clear();
        e.id.clear();
        e.gpus.clear();
        e.running.clear();
        e.running_gpus.clear();
        e.min_queued_gpus.clear();
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::rng::SeededRng;
    use std::vec::Vec;

    fn key(primary: i64) -> PriorityKey {
        PriorityKey {
            class: 0,
            primary,
            secondary: 0,
        }
    }

    /// The plan by a plain walk over every job in rank order: the reference.
    fn plan_by_walk(jobs: &[(u16, bool)], budget: PlanBudget) -> (Vec<usize>, Vec<usize>) {
        let (mut left, mut blocked) = (budget.gpus, false);
        let (mut preempts, mut starts) = (Vec::new(), Vec::new());
        for (i, &(gpus, running)) in jobs.iter().enumerate() {
            let gpus = usize::from(gpus);
            match running {
                true if !budget.preemptive => {}
                true if gpus <= left => left -= gpus,
                true => preempts.push(i),
                false if gpus > budget.healthy || blocked => {}
                false if gpus <= left => {
                    left -= gpus;
                    starts.push(i);
                }
                false => blocked = budget.block,
            }
        }
        (preempts, starts)
    }

    #[test]
    fn plan_skips_subtrees_but_decides_like_a_full_walk() {
        let mut rng = SeededRng::new(23);
        for case in 0..400 {
            let n = rng.below(120) as usize;
            // Job i is ranked i-th (key i); slots are a shuffle so slot ≠ rank.
            let mut slots: Vec<Slot> = (0..n as Slot).collect();
            for i in (1..n).rev() {
                slots.swap(i, rng.below(i as u32 + 1) as usize);
            }
            let jobs: Vec<(u16, bool)> = (0..n)
                .map(|_| (1 + rng.below(8) as u16, rng.below(3) == 0))
                .collect();
            let mut index: RankIndex<128> = RankIndex::new();
            for (rank, &slot) in slots.iter().enumerate() {
                let (gpus, running) = jobs[rank];
                index.insert(slot, key(rank as i64), JobId(rank as u32), gpus, running);
            }
            assert!(index.check(n));
            let healthy = rng.below(64) as usize;
            let busy: usize = jobs.iter().filter(|j| j.1).map(|j| usize::from(j.0)).sum();
            let preemptive = case % 2 == 0;
            let budget = PlanBudget {
                healthy,
                gpus: if preemptive {
                    healthy
                } else {
                    healthy.saturating_sub(busy)
                },
                preemptive,
                block: case % 3 == 0,
            };
            let mut preempts: heapless::Vec<Slot, 1024> = heapless::Vec::new();
            let mut starts: heapless::Vec<Slot, 1024> = heapless::Vec::new();
            index.plan(budget, &mut preempts, &mut starts);
            let rank_of = |s: &Slot| slots.iter().position(|x| x == s).unwrap();
            let got = (
                preempts.iter().map(rank_of).collect::<Vec<_>>(),
                starts.iter().map(rank_of).collect::<Vec<_>>(),
            );
            assert_eq!(got, plan_by_walk(&jobs, budget), "case {case}");
        }
    }

    #[test]
    fn rekey_all_sorts_like_the_standard_sort_from_any_disorder() {
        let mut rng = SeededRng::new(3);
        for case in 0..200 {
            let n = rng.below(120) as usize;
            let mut index: RankIndex<128> = RankIndex::new();
            for s in 0..n as Slot {
                let running = rng.below(2) == 0;
                // Ids are unique among live jobs; the new keys collide (ties by id).
                let id = JobId(u32::from(s) * 7 % 128);
                index.insert(s, key(i64::from(s)), id, 1 + s % 4, running);
            }
            // From nearly sorted (a few keys moved) to shuffled.
            let moves = [0, 1, 3, n / 2, n][case % 5];
            let mut new_keys: Vec<i64> = (0..n as i64).collect();
            for _ in 0..moves.min(n) {
                new_keys[rng.below(n as u32) as usize] = i64::from(rng.below(200)) - 50;
            }
            let mut scratch = [NIL; 128];
            index.rekey_all(&mut scratch, |s| Some(key(new_keys[usize::from(s)])));
            assert!(index.check(n), "case {case}");
            let mut want: Vec<(PriorityKey, JobId)> = (0..n as Slot)
                .map(|s| (key(new_keys[usize::from(s)]), index.id_of(s).unwrap()))
                .collect();
            want.sort();
            let got: Vec<(PriorityKey, JobId)> =
                core::iter::successors(Some(index.first()).filter(|&s| s != NIL), |&s| {
                    Some(index.next(s)).filter(|&x| x != NIL)
                })
                .map(|s| (index.key_of(s).unwrap(), index.id_of(s).unwrap()))
                .collect();
            assert_eq!(got, want, "case {case}");
        }
    }

    #[test]
    fn rekey_and_state_changes_keep_the_summaries() {
        let mut index: RankIndex<8> = RankIndex::new();
        for s in 0..8u16 {
            index.insert(s, key(i64::from(s)), JobId(u32::from(s)), s + 1, s % 2 == 0);
        }
        assert!(index.check(8));
        assert!(index.rekey(3, key(-1)));
        assert!(!index.rekey(3, key(-1)), "same key: not moved");
        assert_eq!(index.first(), 3);
        index.set_running(3, true);
        index.remove(0);
        assert!(index.check(7));
        let order: Vec<Slot> = core::iter::successors(Some(index.first()), |&s| {
            Some(index.next(s)).filter(|&n| n != NIL)
        })
        .collect();
        assert_eq!(order, [3, 1, 2, 4, 5, 6, 7]);
    }
}
