//! The scheduler's job table: live jobs in one dense slice, a stable *slot* per job that the
//! other indexes (ranking, timers, running list) refer to, an id index, and the submission
//! order.
//!
//! Every operation is O(1) or O(log J): a job leaves by swapping the last job into its place
//! (so the slice order is deterministic but not the submission order), ids are found through
//! an AVL tree ([`Avl`]), and the submission order is a doubly linked list through the slots
//! (for the orders that walk jobs in submission order). Per-slot columns are
//! `heapless::Vec`s that grow as slots are first used.

use crate::avl::{Avl, NIL};
use crate::ids::JobId;
use crate::job::Job;
use crate::scheduler::snapshot::{DecodeInPlace, Reader, read};
use serde::{Deserialize, Serialize};

/// A stable handle on a live job, valid from submission to removal (then reused). `u16`:
/// the scheduler checks `J ≤ u16::MAX` at compile time, and [`NIL`] (`u16::MAX`) is never a
/// slot.
pub(crate) type Slot = u16;

/// Live jobs by slot, with an id index and the submission order. Memory: about 140 bytes
/// per job (120 for the job).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct JobTable<const J: usize> {
    /// The live jobs, densely; removal moves the last job into the gap.
    jobs: heapless::Vec<Job, J>,
    /// By dense index: the job's slot.
    slot_at: heapless::Vec<Slot, J>,
    /// By slot: the dense index of its job (`NIL` when the slot is free).
    index_of: heapless::Vec<Slot, J>,
    /// By slot: its job's id (what the id index sorts by).
    id_of: heapless::Vec<JobId, J>,
    /// By slot: the slot submitted just before (`NIL` for the oldest).
    prev: heapless::Vec<Slot, J>,
    /// By slot: the slot submitted just after (`NIL` for the newest); for a free slot, the
    /// next free slot.
    next: heapless::Vec<Slot, J>,
    oldest: Slot,
    newest: Slot,
    free: Slot,
    by_id: Avl<J>,
}

impl<const J: usize> JobTable<J> {
    /// An empty table. Needs `J < u16::MAX` (the scheduler checks it).
    pub(crate) const fn new() -> Self {
        Self {
            jobs: heapless::Vec::new(),
            slot_at: heapless::Vec::new(),
            index_of: heapless::Vec::new(),
            id_of: heapless::Vec::new(),
            prev: heapless::Vec::new(),
            next: heapless::Vec::new(),
            oldest: NIL,
            newest: NIL,
            free: NIL,
            by_id: Avl::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.jobs.len()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.jobs.is_full()
    }

    /// The live jobs, in a deterministic order (not the submission order).
    pub(crate) fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    /// The slot of the job at dense index `i`.
    pub(crate) fn slot_at(&self, i: usize) -> Option<Slot> {
        self.slot_at.get(i).copied()
    }

    fn index(&self, slot: Slot) -> Option<usize> {
        let i = *self.index_of.get(usize::from(slot))?;
        (i != NIL).then_some(usize::from(i))
    }

    /// The job in `slot`. O(1).
    pub(crate) fn get(&self, slot: Slot) -> Option<&Job> {
        self.jobs.get(self.index(slot)?)
    }

    /// The job in `slot`, mutably. O(1).
    pub(crate) fn get_mut(&mut self, slot: Slot) -> Option<&mut Job> {
        let i = self.index(slot)?;
        self.jobs.get_mut(i)
    }

    /// The slot of live job `id`. O(log J).
    pub(crate) fn find(&self, id: JobId) -> Option<Slot> {
        let ids = &self.id_of;
        let at = self
            .by_id
            .search(|n| id.cmp(ids.get(usize::from(n)).unwrap_or(&id)));
        (at != NIL).then_some(at)
    }

    /// The oldest live job's slot (`NIL` when empty).
    pub(crate) fn oldest(&self) -> Slot {
        self.oldest
    }

    /// The slot submitted after `slot` (`NIL` for the newest).
    pub(crate) fn next_submitted(&self, slot: Slot) -> Slot {
        self.next.get(usize::from(slot)).copied().unwrap_or(NIL)
    }

    /// Adds a job as the newest; returns its slot, or hands the job back when the table is
    /// full. The caller checks that no live job has its id. O(log J).
    pub(crate) fn push(&mut self, job: Job) -> Result<Slot, Job> {
        if self.is_full() {
            return Err(job);
        }
        let slot = if self.free != NIL {
            let slot = self.free;
            self.free = self.next_submitted(slot);
            slot
        } else {
            let slot = self.index_of.len() as Slot;
            let grown = self.index_of.push(NIL).is_ok()
                & self.id_of.push(job.id()).is_ok()
                & self.prev.push(NIL).is_ok()
                & self.next.push(NIL).is_ok();
            if !grown {
                return Err(job);
            }
            slot
        };
        let id = job.id();
        let index = self.jobs.len();
        self.jobs.push(job)?;
        let _ = self.slot_at.push(slot);
        set(&mut self.index_of, slot, index as Slot);
        set(&mut self.id_of, slot, id);
        set(&mut self.prev, slot, self.newest);
        set(&mut self.next, slot, NIL);
        if self.newest == NIL {
            self.oldest = slot;
        } else {
            set(&mut self.next, self.newest, slot);
        }
        self.newest = slot;
        let ids = &self.id_of;
        let mut by_id = |a: Slot, b: Slot| ids.get(usize::from(a)) < ids.get(usize::from(b));
        self.by_id.insert(slot, &mut by_id);
        Ok(slot)
    }

    /// Removes the job in `slot` and frees the slot. O(log J).
    pub(crate) fn remove(&mut self, slot: Slot) -> Option<Job> {
        let i = self.index(slot)?;
        // The columns are in step (`check`), so `i` is in range of both.
        if i >= self.jobs.len() || i >= self.slot_at.len() {
            return None;
        }
        let ids = &self.id_of;
        let mut by_id = |a: Slot, b: Slot| ids.get(usize::from(a)) < ids.get(usize::from(b));
        self.by_id.remove(slot, &mut by_id);
        let job = swap_remove(&mut self.jobs, i)?;
        let _ = swap_remove(&mut self.slot_at, i);
        if let Some(&moved) = self.slot_at.get(i) {
            set(&mut self.index_of, moved, i as Slot);
        }
        let (before, after) = (
            self.prev.get(usize::from(slot)).copied().unwrap_or(NIL),
            self.next_submitted(slot),
        );
        if before == NIL {
            self.oldest = after;
        } else {
            set(&mut self.next, before, after);
        }
        if after == NIL {
            self.newest = before;
        } else {
            set(&mut self.prev, after, before);
        }
        set(&mut self.index_of, slot, NIL);
        set(&mut self.next, slot, self.free);
        self.free = slot;
        Some(job)
    }

    /// Checks the columns, the id index and the submission list against the jobs. O(J).
    pub(crate) fn check(&self) -> bool {
        let ids = &self.id_of;
        let by_id = |a: Slot, b: Slot| ids.get(usize::from(a)) < ids.get(usize::from(b));
        let columns_ok = self.jobs.iter().enumerate().all(|(i, job)| {
            self.slot_at(i).is_some_and(|s| {
                self.index(s) == Some(i)
                    && self.id_of.get(usize::from(s)) == Some(&job.id())
                    && self.find(job.id()) == Some(s)
            })
        });
        let mut listed = 0usize;
        let mut at = self.oldest;
        let mut before = NIL;
        for _ in 0..=J {
            if at == NIL {
                break;
            }
            if self.index(at).is_none() || self.prev.get(usize::from(at)) != Some(&before) {
                return false;
            }
            listed += 1;
            (before, at) = (at, self.next_submitted(at));
        }
        columns_ok
            && self.by_id.check(&by_id)
            && self.by_id.len() == self.len()
            && listed == self.len()
            && before == self.newest
    }
}

/// `Vec::swap_remove` without its bounds assertion (a panic path): `None` when `i` is out of
/// range.
fn swap_remove<T, const J: usize>(column: &mut heapless::Vec<T, J>, i: usize) -> Option<T> {
    if i >= column.len() {
        return None;
    }
    let last = column.pop()?;
    match column.get_mut(i) {
        Some(x) => Some(core::mem::replace(x, last)),
        // `i` was the last entry.
        None => Some(last),
    }
}

fn set<T, const J: usize>(column: &mut heapless::Vec<T, J>, slot: Slot, value: T) {
    if let Some(x) = column.get_mut(usize::from(slot)) {
        *x = value;
    }
}

impl<const J: usize> DecodeInPlace for JobTable<J> {
    fn decode_in_place(&mut self, de: &mut Reader<'_>) -> postcard::Result<()> {
        self.jobs.decode_in_place(de)?;
        self.slot_at.decode_in_place(de)?;
        self.index_of.decode_in_place(de)?;
        self.id_of.decode_in_place(de)?;
        self.prev.decode_in_place(de)?;
        self.next.decode_in_place(de)?;
        read(&mut self.oldest, de)?;
        read(&mut self.newest, de)?;
        read(&mut self.free, de)?;
        self.by_id.decode_in_place(de)
    }

    fn reset(&mut self) {
        self.jobs.clear();
        self.slot_at.clear();
        self.index_of.clear();
        self.id_of.clear();
        self.prev.clear();
        self.next.clear();
        (self.oldest, self.newest, self.free) = (NIL, NIL, NIL);
        self.by_id.reset();
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

    #[test]
    fn slots_ids_and_submission_order_follow_the_jobs() {
        let mut rng = SeededRng::new(5);
        let mut table: JobTable<12> = JobTable::new();
        // The model: (id, slot) in submission order.
        let mut model: Vec<(JobId, Slot)> = Vec::new();
        for step in 0..5_000u32 {
            if rng.below(2) == 0 {
                // Ids out of submission order, unique among live jobs.
                let id = JobId(rng.below(1_000) * 10_000 + step);
                let job = Job::submitted(JobSpec::new(id, 1), TimeMs(0));
                match table.push(job) {
                    Ok(slot) => model.push((id, slot)),
                    Err(_) => assert_eq!(model.len(), 12),
                }
            } else if !model.is_empty() {
                let (id, slot) = model.remove(rng.below(model.len() as u32) as usize);
                assert_eq!(table.remove(slot).map(|j| j.id()), Some(id));
                assert_eq!(table.find(id), None);
            }
            assert!(table.check(), "step {step}");
            assert_eq!(table.len(), model.len());
            let mut at = table.oldest();
            for &(id, slot) in &model {
                assert_eq!(at, slot, "step {step}");
                assert_eq!(table.get(slot).map(Job::id), Some(id));
                assert_eq!(table.find(id), Some(slot));
                at = table.next_submitted(at);
            }
            assert_eq!(at, NIL);
        }
    }
}
