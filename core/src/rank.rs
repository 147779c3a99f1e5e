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
#[cfg(feature = "snapshot")]
use crate::decode::{DecodeInPlace, Reader};
use crate::ids::JobId;
use crate::job::{Job, JobState};
use crate::job_table::Slot;
use crate::order::PriorityKey;
use crate::sort::heap_sort;
use serde::{Deserialize, Serialize};

/// What the tree sorts and summarises, one entry per slot: the key, in three columns (no
/// padding), and the two subtree summaries. The job's id, GPU count and state are read
/// from the job table (`jobs`, by slot), not copied.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Entries<const J: usize> {
    class: heapless::Vec<u32, J>,
    primary: heapless::Vec<i64, J>,
    secondary: heapless::Vec<i64, J>,
    /// Subtree summary: GPUs requested by the running jobs that are not pinned (at most
    /// `G` ≤ `u16::MAX`: each holds its own GPUs).
    running_gpus: heapless::Vec<u16, J>,
    /// Subtree summary: smallest request among the queued jobs (`u16::MAX` if none).
    min_queued_gpus: heapless::Vec<u16, J>,
}

impl<const J: usize> Entries<J> {
    fn key(&self, s: Slot) -> Option<PriorityKey> {
        let s = usize::from(s);
        Some(PriorityKey {
            class: *self.class.get(s)?,
            primary: *self.primary.get(s)?,
            secondary: *self.secondary.get(s)?,
        })
    }

    fn set_key(&mut self, s: Slot, key: PriorityKey) {
        let s = usize::from(s);
        set(&mut self.class, s, key.class);
        set(&mut self.primary, s, key.primary);
        set(&mut self.secondary, s, key.secondary);
    }

    fn rank_of(&self, jobs: &[Job], s: Slot) -> Option<(PriorityKey, JobId)> {
        Some((self.key(s)?, jobs.get(usize::from(s))?.id()))
    }

    fn less(&self, jobs: &[Job], a: Slot, b: Slot) -> bool {
        self.rank_of(jobs, a) < self.rank_of(jobs, b)
    }

    fn running_gpus(&self, s: Slot) -> u16 {
        self.running_gpus.get(usize::from(s)).copied().unwrap_or(0)
    }

    fn min_queued(&self, s: Slot) -> u16 {
        self.min_queued_gpus
            .get(usize::from(s))
            .copied()
            .unwrap_or(u16::MAX)
    }

    /// What `update` would store for `node` given its children.
    fn summary(&self, jobs: &[Job], node: Slot, left: Slot, right: Slot) -> (u16, u16) {
        let (gpus, role) = gpus_and_role(jobs, node);
        let (own_running, own_queued) = match role {
            Role::Running => (gpus, u16::MAX),
            Role::Pinned => (0, u16::MAX),
            Role::Queued => (0, gpus),
        };
        let running = own_running
            .saturating_add(self.running_gpus(left))
            .saturating_add(self.running_gpus(right));
        let queued = own_queued
            .min(self.min_queued(left))
            .min(self.min_queued(right));
        (running, queued)
    }

    fn update(&mut self, jobs: &[Job], node: Slot, left: Slot, right: Slot) {
        let (running, queued) = self.summary(jobs, node, left, right);
        let n = usize::from(node);
        set(&mut self.running_gpus, n, running);
        set(&mut self.min_queued_gpus, n, queued);
    }
}

/// What a job is to the planning pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Queued (or an unknown slot, with 0 GPUs): may start.
    Queued,
    /// Running, and may be preempted for priority.
    Running,
    /// Running and [`Job::is_pinned`]: keeps its GPUs whatever its rank.
    Pinned,
}

/// The GPUs `slot`'s job asks for and its role (0 and queued for an unknown slot).
fn gpus_and_role(jobs: &[Job], slot: Slot) -> (u16, Role) {
    jobs.get(usize::from(slot)).map_or((0, Role::Queued), |j| {
        let role = if j.is_pinned() {
            Role::Pinned
        } else if j.state() == JobState::Running {
            Role::Running
        } else {
            Role::Queued
        };
        (j.gpus(), role)
    })
}

/// The entries with the job table they read, as the tree's [`NodeKeys`].
struct Keyed<'a, const J: usize> {
    entries: &'a mut Entries<J>,
    jobs: &'a [Job],
}

/// The order alone, for checking the tree (which never updates summaries).
struct Sorted<'a, const J: usize> {
    entries: &'a Entries<J>,
    jobs: &'a [Job],
}

impl<const J: usize> NodeKeys for Sorted<'_, J> {
    fn less(&self, a: Slot, b: Slot) -> bool {
        self.entries.less(self.jobs, a, b)
    }

    fn update(&mut self, _node: Slot, _left: Slot, _right: Slot) {}
}

impl<const J: usize> NodeKeys for Keyed<'_, J> {
    fn less(&self, a: Slot, b: Slot) -> bool {
        self.entries.less(self.jobs, a, b)
    }

    fn update(&mut self, node: Slot, left: Slot, right: Slot) {
        self.entries.update(self.jobs, node, left, right);
    }
}

/// What the scheduling pass plans with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PlanBudget {
    /// Healthy GPUs: a queued job asking for more waits without blocking anyone.
    pub(crate) healthy: usize,
    /// GPUs to hand out in rank order: when preemptive, the healthy GPUs not held by pinned
    /// jobs ([`Job::is_pinned`]); else the free ones.
    pub(crate) gpus: usize,
    /// Running jobs keep their GPUs only while they fit in rank order.
    pub(crate) preemptive: bool,
    /// The first queued job that fits the cluster but not the GPUs left stops every later
    /// queued job (strict FIFO); else later jobs that fit are started (backfilling).
    pub(crate) block: bool,
    /// As `block`, and the plan returns that job, or the first running job it preempts if
    /// that ranks higher (requeued, it is the highest-ranked queued job that does not fit):
    /// the head a reservation is made for
    /// ([`HeadOfLine::Reserve`](crate::order::HeadOfLine::Reserve)). No job ranked after it
    /// is started by this plan (the scheduler backfills them around the head's GPUs in a
    /// second plan); when preemptive, a running one keeps its GPUs while they fit in what
    /// the jobs ranked ahead left, as under `block`.
    pub(crate) reserve: bool,
}

/// Every live job, ranked by `(key, id)`. Memory: 31 bytes per job (20 of key, 4 of
/// summaries, 7 of tree links). Every method that reads ids, GPU counts or states is given
/// the job table by slot ([`JobTable::by_slot`](crate::job_table::JobTable::by_slot)); after a
/// job's state changes, [`refresh`](Self::refresh) brings its summaries up to date.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct RankIndex<const J: usize> {
    tree: Avl<J>,
    entries: Entries<J>,
    /// Whether the order, a summary or a job's role may have changed since
    /// [`mark_unchanged`](Self::mark_unchanged): what a plan reads. Not in a snapshot.
    #[serde(skip)]
    changed: bool,
}

impl<const J: usize> RankIndex<J> {
    /// An empty ranking.
    pub(crate) const fn new() -> Self {
        Self {
            changed: true,
            tree: Avl::new(),
            entries: Entries {
                class: heapless::Vec::new(),
                primary: heapless::Vec::new(),
                secondary: heapless::Vec::new(),
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
        self.entries.key(slot)
    }

    /// Ranks a new job (already in `jobs`). O(log J).
    pub(crate) fn insert(&mut self, slot: Slot, key: PriorityKey, jobs: &[Job]) {
        let e = &mut self.entries;
        let s = usize::from(slot);
        while e.class.len() <= s {
            // Slots are first used in increasing order, so this pushes at most once.
            let full = e.class.push(key.class).is_err()
                | e.primary.push(key.primary).is_err()
                | e.secondary.push(key.secondary).is_err()
                | e.running_gpus.push(0).is_err()
                | e.min_queued_gpus.push(u16::MAX).is_err();
            if full {
                return;
            }
        }
        e.set_key(slot, key);
        self.changed = true;
        self.tree.insert(slot, &mut Keyed { entries: e, jobs });
    }

    /// Removes a job from the ranking (while it is still in `jobs`). O(log J).
    pub(crate) fn remove(&mut self, slot: Slot, jobs: &[Job]) {
        self.changed = true;
        let entries = &mut self.entries;
        self.tree.remove(slot, &mut Keyed { entries, jobs });
    }

    /// Gives `slot` a new key; moves it only if the key changed. Returns whether the move
    /// changed the ranking as a plan reads it (what [`unchanged`](Self::unchanged) notes).
    /// O(log J), and no tree work when the new key still sorts between the slot's
    /// neighbours (a key that moves a little, as many do at a TIAS switch or size-bin crossing).
    /// Neither that nor a running job's move among the running jobs ranked ahead of every
    /// queued job counts as a change ([`unchanged`](Self::unchanged)).
    pub(crate) fn rekey(&mut self, slot: Slot, key: PriorityKey, jobs: &[Job]) -> bool {
        if self.key_of(slot) == Some(key) || !self.tree.contains(slot) {
            return false;
        }
        // Neither the summaries nor a removal read keys, so the new key goes in first and
        // the slot is taken out and put back only if it left its gap.
        self.entries.set_key(slot, key);
        let (before, after) = (self.tree.prev(slot), self.tree.next(slot));
        let e = &self.entries;
        let stays = (before == NIL || e.less(jobs, before, slot))
            && (after == NIL || e.less(jobs, slot, after));
        if !stays {
            // A plan keeps every running job ranked ahead of the first queued job (the
            // running jobs fit the budget together), so their order among themselves decides
            // nothing: a running job that moves within that prefix changes no plan. Most
            // TIAS size-bin reviews are such moves.
            let running = gpus_and_role(jobs, slot).1 != Role::Queued;
            let was_ahead = running && self.none_queued_ahead(slot, jobs);
            let entries = &mut self.entries;
            self.tree.remove(slot, &mut Keyed { entries, jobs });
            self.tree.insert(slot, &mut Keyed { entries, jobs });
            if !(was_ahead && self.none_queued_ahead(slot, jobs)) {
                self.changed = true;
                return true;
            }
        }
        false
    }

    /// Whether no queued job ranks ahead of `slot` in the tree's order: its left subtree
    /// holds none, nor does any ancestor it hangs right of, or that ancestor's left subtree.
    /// Read from the `min_queued` summaries, no key compared. O(log J).
    fn none_queued_ahead(&self, slot: Slot, jobs: &[Job]) -> bool {
        let e = &self.entries;
        let queued_in = |subtree: Slot| e.min_queued(subtree) != u16::MAX;
        if queued_in(self.tree.left(slot)) {
            return false;
        }
        let (mut child, mut at) = (slot, self.tree.parent(slot));
        // Each step goes one level up: at most the tree's height (< J) steps.
        for _ in 0..J {
            if at == NIL {
                return true;
            }
            if self.tree.right(at) == child
                && (gpus_and_role(jobs, at).1 == Role::Queued || queued_in(self.tree.left(at)))
            {
                return false;
            }
            (child, at) = (at, self.tree.parent(at));
        }
        false
    }

    /// Re-ranks every job at once (orders whose keys may all change every pass): `key_of`
    /// gives each ranked slot its key now; the new order is sorted from the old one
    /// (adaptively: nearly sorted after one event) into `scratch`, and the tree rebuilt
    /// balanced when anything moved. O(J) plus the sort's moves, O(J log J) at worst.
    pub(crate) fn rekey_all(
        &mut self,
        scratch: &mut [Slot],
        jobs: &[Job],
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
                self.entries.set_key(at, key);
                changed = true;
            }
            at = self.tree.next(at);
        }
        if !changed {
            return;
        }
        self.changed = true;
        let order = scratch.get_mut(..n).unwrap_or(&mut []);
        let e = &self.entries;
        sort_nearly_sorted(order, |a, b| e.less(jobs, a, b));
        let entries = &mut self.entries;
        self.tree.rebuild(order, &mut Keyed { entries, jobs });
    }

    /// Brings the summaries on `slot`'s path up to date after its job started or stopped
    /// running. O(log J).
    pub(crate) fn refresh(&mut self, slot: Slot, jobs: &[Job]) {
        if self.tree.contains(slot) {
            self.changed = true;
            let entries = &mut self.entries;
            self.tree.refresh_path(slot, &mut Keyed { entries, jobs });
        }
    }

    /// Whether nothing a plan reads (the order, the summaries, the jobs' roles) has changed
    /// since [`mark_unchanged`](Self::mark_unchanged). Keys moved within their gaps do not
    /// count (a plan never reads a key), nor do running jobs reordered ahead of every queued
    /// job (a plan keeps them all).
    pub(crate) fn unchanged(&self) -> bool {
        !self.changed
    }

    /// Notes that a plan has read the ranking as it is now.
    pub(crate) fn mark_unchanged(&mut self) {
        self.changed = false;
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
    /// starts; a pinned running job keeps its GPUs whatever its rank (the budget already
    /// left them out) and is passed by. Appends the slots to preempt and to start, each in rank order. Visits only
    /// the jobs that are decided plus O(log J) nodes per decision. Never fails: each start
    /// takes a GPU and each preemption frees one, so neither list exceeds `G`. Returns the
    /// head a reservation is for when the budget asks for one (`reserve`) and a queued job
    /// that fits the cluster does not fit what is left; `None` otherwise.
    pub(crate) fn plan<const G: usize>(
        &self,
        budget: PlanBudget,
        jobs: &[Job],
        preempts: &mut heapless::Vec<Slot, G>,
        starts: &mut heapless::Vec<Slot, G>,
    ) -> Option<Slot> {
        let e = &self.entries;
        let mut left = budget.gpus;
        let mut blocked = false;
        let mut head = None;
        let healthy = u16::try_from(budget.healthy).unwrap_or(u16::MAX);
        // The largest queued request that could still start.
        let cap = |left: usize, blocked: bool| -> u16 {
            if budget.block || budget.reserve {
                if blocked { 0 } else { healthy }
            } else {
                u16::try_from(left).unwrap_or(u16::MAX).min(healthy)
            }
        };
        let (mut at, mut came_from) = (self.tree.root(), NIL);
        // Each node is entered once from above and left once upwards.
        for _ in 0..3 * J + 3 {
            if at == NIL {
                return head;
            }
            let (l, r, up) = (
                self.tree.left(at),
                self.tree.right(at),
                self.tree.parent(at),
            );
            if came_from == up {
                let held = usize::from(e.running_gpus(at));
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
            let (gpus, role) = gpus_and_role(jobs, at);
            let gpus = usize::from(gpus);
            match role {
                // Its GPUs are outside the budget; it is neither kept nor preempted here.
                Role::Pinned => {}
                Role::Running => {
                    if budget.preemptive {
                        if gpus <= left {
                            left -= gpus;
                        } else {
                            let _ = preempts.push(at);
                            // Requeued, it is the highest-ranked queued job that does not
                            // fit: the head, unless one was found ahead of it.
                            if budget.reserve && head.is_none() {
                                head = Some(at);
                                blocked = true;
                            }
                        }
                    }
                }
                Role::Queued => {
                    if gpus <= budget.healthy && !blocked {
                        if gpus <= left {
                            left -= gpus;
                            let _ = starts.push(at);
                        } else if budget.reserve {
                            head = Some(at);
                            blocked = true;
                        } else if budget.block {
                            blocked = true;
                        }
                    }
                }
            }
            (came_from, at) = if r != NIL { (at, r) } else { (at, up) };
        }
        head
    }

    /// Checks the tree, the summaries and that exactly `live` jobs are ranked. O(J).
    pub(crate) fn check(&self, live: usize, jobs: &[Job]) -> bool {
        let e = &self.entries;
        let columns = e.class.len();
        let in_step = [
            e.primary.len(),
            e.secondary.len(),
            e.running_gpus.len(),
            e.min_queued_gpus.len(),
            jobs.len(),
        ]
        .iter()
        .all(|&n| n == columns);
        if !in_step {
            return false;
        }
        let sorted = Sorted {
            entries: &self.entries,
            jobs,
        };
        if !self.tree.check(&sorted) || self.tree.len() != live {
            return false;
        }
        let mut at = self.tree.first();
        for _ in 0..=J {
            if at == NIL {
                return true;
            }
            let summary = self
                .entries
                .summary(jobs, at, self.tree.left(at), self.tree.right(at));
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

#[cfg(feature = "snapshot")]
impl<const J: usize> DecodeInPlace for RankIndex<J> {
    fn decode_in_place(&mut self, de: &mut Reader<'_>) -> postcard::Result<()> {
        self.changed = true;
        self.tree.decode_in_place(de)?;
        let e = &mut self.entries;
        e.class.decode_in_place(de)?;
        e.primary.decode_in_place(de)?;
        e.secondary.decode_in_place(de)?;
        e.running_gpus.decode_in_place(de)?;
        e.min_queued_gpus.decode_in_place(de)
    }

    fn reset(&mut self) {
        self.changed = true;
        self.tree.reset();
        let e = &mut self.entries;
        e.class.clear();
        e.primary.clear();
        e.secondary.clear();
        e.running_gpus.clear();
        e.min_queued_gpus.clear();
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::job::JobSpec;
    use crate::rng::SeededRng;
    use crate::time::TimeMs;
    use std::vec::Vec;

    /// A job-table entry: job `id` asking for `gpus`, running or queued.
    fn job(id: u32, gpus: u16, running: bool) -> Job {
        let mut job = Job::submitted(JobSpec::new(JobId(id), gpus), TimeMs(0));
        if running {
            job.set_state(JobState::Running);
        }
        job
    }

    fn key(primary: i64) -> PriorityKey {
        PriorityKey {
            class: 0,
            primary,
            secondary: 0,
        }
    }

    /// The plan by a plain walk over every job in rank order: the reference.
    type Walked = (Vec<usize>, Vec<usize>, Option<usize>);

    fn plan_by_walk(jobs: &[(u16, bool)], budget: PlanBudget) -> Walked {
        let (mut left, mut blocked, mut head) = (budget.gpus, false, None);
        let (mut preempts, mut starts) = (Vec::new(), Vec::new());
        for (i, &(gpus, running)) in jobs.iter().enumerate() {
            let gpus = usize::from(gpus);
            match running {
                true if !budget.preemptive => {}
                true if gpus <= left => left -= gpus,
                true => {
                    preempts.push(i);
                    if budget.reserve && head.is_none() {
                        head = Some(i);
                        blocked = true;
                    }
                }
                false if gpus > budget.healthy || blocked => {}
                false if gpus <= left => {
                    left -= gpus;
                    starts.push(i);
                }
                false => {
                    if budget.reserve {
                        head = Some(i);
                    }
                    blocked = budget.block || budget.reserve;
                }
            }
        }
        (preempts, starts, head)
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
            let mut table = std::vec![job(0, 0, false); n];
            for (rank, &slot) in slots.iter().enumerate() {
                let (gpus, running) = jobs[rank];
                table[usize::from(slot)] = job(rank as u32, gpus, running);
            }
            let mut index: RankIndex<128> = RankIndex::new();
            for (rank, &slot) in slots.iter().enumerate() {
                index.insert(slot, key(rank as i64), &table);
            }
            assert!(index.check(n, &table));
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
                reserve: case % 5 == 1,
            };
            let mut preempts: heapless::Vec<Slot, 1024> = heapless::Vec::new();
            let mut starts: heapless::Vec<Slot, 1024> = heapless::Vec::new();
            let head = index.plan(budget, &table, &mut preempts, &mut starts);
            let rank_of = |s: &Slot| slots.iter().position(|x| x == s).unwrap();
            let got = (
                preempts.iter().map(rank_of).collect::<Vec<_>>(),
                starts.iter().map(rank_of).collect::<Vec<_>>(),
                head.as_ref().map(rank_of),
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
            let table: Vec<Job> = (0..n as u16)
                // Ids are unique among live jobs; the new keys collide (ties by id).
                .map(|s| job(u32::from(s) * 7 % 128, 1 + s % 4, rng.below(2) == 0))
                .collect();
            for s in 0..n as Slot {
                index.insert(s, key(i64::from(s)), &table);
            }
            // From nearly sorted (a few keys moved) to shuffled.
            let moves = [0, 1, 3, n / 2, n][case % 5];
            let mut new_keys: Vec<i64> = (0..n as i64).collect();
            for _ in 0..moves.min(n) {
                new_keys[rng.below(n as u32) as usize] = i64::from(rng.below(200)) - 50;
            }
            let mut scratch = [NIL; 128];
            index.rekey_all(&mut scratch, &table, |s| {
                Some(key(new_keys[usize::from(s)]))
            });
            assert!(index.check(n, &table), "case {case}");
            let id_of = |s: Slot| table[usize::from(s)].id();
            let mut want: Vec<(PriorityKey, JobId)> = (0..n as Slot)
                .map(|s| (key(new_keys[usize::from(s)]), id_of(s)))
                .collect();
            want.sort();
            let got: Vec<(PriorityKey, JobId)> =
                core::iter::successors(Some(index.first()).filter(|&s| s != NIL), |&s| {
                    Some(index.next(s)).filter(|&x| x != NIL)
                })
                .map(|s| (index.key_of(s).unwrap(), id_of(s)))
                .collect();
            assert_eq!(got, want, "case {case}");
        }
    }

    #[test]
    fn rekey_and_state_changes_keep_the_summaries() {
        let mut index: RankIndex<8> = RankIndex::new();
        let mut table: Vec<Job> = (0..8u16)
            .map(|s| job(u32::from(s), s + 1, s % 2 == 0))
            .collect();
        for s in 0..8u16 {
            index.insert(s, key(i64::from(s)), &table);
        }
        assert!(index.check(8, &table));
        assert!(index.rekey(3, key(-1), &table));
        assert!(!index.rekey(3, key(-1), &table), "same key: not moved");
        assert_eq!(index.first(), 3);
        table[3].set_state(JobState::Running);
        assert!(!index.check(8, &table), "summaries stale until refreshed");
        index.refresh(3, &table);
        index.remove(0, &table);
        table[0].vacate();
        assert!(index.check(7, &table));
        let order: Vec<Slot> = core::iter::successors(Some(index.first()), |&s| {
            Some(index.next(s)).filter(|&n| n != NIL)
        })
        .collect();
        assert_eq!(order, [3, 1, 2, 4, 5, 6, 7]);
    }

    /// What a plan reads changes with an insertion, a removal, a move or a refreshed
    /// summary, and not with a key written in its gap: the settled-pass skip rests on it.
    #[test]
    fn unchanged_until_the_order_or_a_role_changes() {
        let mut index: RankIndex<8> = RankIndex::new();
        let mut table: Vec<Job> = (0..4u16).map(|s| job(u32::from(s), 1, false)).collect();
        for s in 0..4u16 {
            index.insert(s, key(10 * i64::from(s)), &table);
        }
        assert!(!index.unchanged(), "inserted since the last plan");
        index.mark_unchanged();
        assert!(
            !index.rekey(1, key(15), &table),
            "a new key for slot 1, in its gap: no plan changes"
        );
        assert!(
            index.unchanged(),
            "15 stays between 0 and 20: the order is the same"
        );
        assert!(index.rekey(1, key(25), &table));
        assert!(!index.unchanged(), "25 moves it past slot 2");
        index.mark_unchanged();
        table[2].set_state(JobState::Running);
        index.refresh(2, &table);
        assert!(!index.unchanged(), "a role changed");
        index.mark_unchanged();
        index.remove(3, &table);
        assert!(!index.unchanged(), "a job left");
    }

    /// A running job that moves among the running jobs ranked ahead of the first queued job
    /// changes no plan, so the ranking stays unchanged; a move past a queued job, or of a
    /// queued job, does not.
    #[test]
    fn a_running_job_moving_ahead_of_the_queue_leaves_the_plan_unchanged() {
        let mut index: RankIndex<8> = RankIndex::new();
        let table: Vec<Job> = [true, true, true, false, true, false]
            .iter()
            .zip(0u32..)
            .map(|(&running, id)| job(id, 1, running))
            .collect();
        for s in 0..6u16 {
            index.insert(s, key(10 * i64::from(s)), &table);
        }
        index.mark_unchanged();
        assert!(!index.rekey(0, key(25), &table));
        assert!(index.unchanged(), "0 moves past 1 and 2, still ahead of 3");
        assert!(index.rekey(1, key(35), &table));
        assert!(!index.unchanged(), "1 moves past the queued job 3");
        index.mark_unchanged();
        assert!(!index.rekey(4, key(45), &table));
        assert!(index.unchanged(), "written in its gap");
        assert!(index.rekey(3, key(1), &table));
        assert!(!index.unchanged(), "a queued job moved");
    }

    /// Whenever a re-key leaves the ranking unchanged, every kind of plan decides as it
    /// did before it: random keys and roles, random re-keys.
    #[test]
    fn a_rekey_that_leaves_the_ranking_unchanged_changes_no_plan() {
        const N: u16 = 24;
        let mut rng = SeededRng::new(41);
        for _ in 0..200 {
            let mut index: RankIndex<32> = RankIndex::new();
            let table: Vec<Job> = (0..N)
                .map(|s| {
                    job(
                        u32::from(s),
                        1 + (rng.next_u64() % 4) as u16,
                        !rng.next_u64().is_multiple_of(3),
                    )
                })
                .collect();
            let running_gpus: usize = table
                .iter()
                .filter(|j| j.state() == JobState::Running)
                .map(|j| usize::from(j.gpus()))
                .sum();
            for s in 0..N {
                index.insert(s, key((rng.next_u64() % 100) as i64), &table);
            }
            let budgets = [
                (true, false, false),
                (true, false, true),
                (false, true, false),
            ]
            .map(|(preemptive, block, reserve)| PlanBudget {
                healthy: running_gpus + 6,
                gpus: if preemptive { running_gpus + 3 } else { 3 },
                preemptive,
                block,
                reserve,
            });
            let plans = |index: &RankIndex<32>| {
                budgets.map(|budget| {
                    let mut preempts: heapless::Vec<Slot, 64> = heapless::Vec::new();
                    let mut starts: heapless::Vec<Slot, 64> = heapless::Vec::new();
                    let head = index.plan(budget, &table, &mut preempts, &mut starts);
                    (preempts, starts, head)
                })
            };
            for _ in 0..20 {
                index.mark_unchanged();
                let before = plans(&index);
                let slot = (rng.next_u64() % u64::from(N)) as Slot;
                index.rekey(slot, key((rng.next_u64() % 100) as i64), &table);
                assert!(index.check(usize::from(N), &table));
                if index.unchanged() {
                    assert_eq!(plans(&index), before, "slot {slot} re-keyed");
                }
            }
        }
    }

    /// Re-keys that stay between their neighbours (written in place) and ones that move
    /// (out and back in) keep the ranking equal to a sort by `(key, id)`, with valid
    /// summaries; ties on the key are broken by id, so a key equal to a neighbour's may
    /// stay or move by the ids alone.
    #[test]
    fn rekeys_in_place_or_moved_keep_the_ranking_sorted() {
        const N: u16 = 48;
        let mut rng = crate::rng::SeededRng::new(23);
        let table: Vec<Job> = (0..N)
            .map(|s| job(u32::from(N - s), s % 3 + 1, s % 4 == 0))
            .collect();
        let mut keys: Vec<i64> = (0..N).map(|s| i64::from(s) * 4).collect();
        let mut index: RankIndex<64> = RankIndex::new();
        for s in 0..N {
            index.insert(s, key(keys[usize::from(s)]), &table);
        }
        let (mut in_place, mut moved) = (0, 0);
        for step in 0..4_000 {
            let s = rng.below(u32::from(N)) as u16;
            let old = keys[usize::from(s)];
            // Mostly small nudges (they tend to stay in the gap), sometimes far jumps.
            let new = if rng.below(4) == 0 {
                i64::from(rng.below(200))
            } else {
                old + i64::from(rng.below(5)) - 2
            };
            let neighbours = (index.tree.prev(s), index.tree.next(s));
            index.rekey(s, key(new), &table);
            keys[usize::from(s)] = new;
            if new != old {
                if (index.tree.prev(s), index.tree.next(s)) == neighbours {
                    in_place += 1;
                } else {
                    moved += 1;
                }
            }
            assert!(index.check(usize::from(N), &table), "step {step}");
            let walk: Vec<Slot> = core::iter::successors(Some(index.first()), |&s| {
                Some(index.next(s)).filter(|&n| n != NIL)
            })
            .collect();
            let mut want: Vec<Slot> = (0..N).collect();
            want.sort_by_key(|&s| (keys[usize::from(s)], table[usize::from(s)].id()));
            assert_eq!(walk, want, "step {step}");
        }
        assert!(
            in_place > 500 && moved > 500,
            "{in_place} in place, {moved} moved"
        );
    }
}
