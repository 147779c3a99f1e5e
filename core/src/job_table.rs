//! The scheduler's job table: live jobs by *slot* (a stable `u16` handle the other indexes
//! — ranking, timers, running list, GPU owners — refer to), an id index, and the submission
//! order.
//!
//! Every operation is O(1) or O(log J): a job is stored at its slot for its whole life (a
//! freed slot is marked vacant and reused by the next submission), ids are found through an
//! AVL tree ([`Avl`]) that reads the ids from the jobs themselves, and the submission order is
//! a doubly linked list through the slots (for the orders that walk jobs in submission
//! order). Per-slot columns are `heapless::Vec`s that grow as slots are first used, so the
//! table is `const`-constructible and serialisable. Memory: 64 bytes per job plus 11 for the
//! list and the id index.

use crate::avl::{Avl, NIL};
#[cfg(feature = "snapshot")]
use crate::decode::{DecodeInPlace, Reader, read};
use crate::ids::JobId;
use crate::job::Job;
#[cfg(feature = "snapshot")]
use crate::time::TimeMs;
use serde::{Deserialize, Serialize};

pub(crate) use crate::slot::Slot;

/// Live jobs by slot, with an id index and the submission order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct JobTable<const J: usize> {
    /// By slot: its job (vacant, [`Job::is_vacant`], when the slot is free).
    jobs: heapless::Vec<Job, J>,
    /// By slot: the slot submitted just before (`NIL` for the oldest).
    prev: heapless::Vec<Slot, J>,
    /// By slot: the slot submitted just after (`NIL` for the newest); for a free slot, the
    /// next free slot.
    next: heapless::Vec<Slot, J>,
    oldest: Slot,
    newest: Slot,
    free: Slot,
    /// Live jobs.
    len: Slot,
    by_id: Avl<J>,
}

impl<const J: usize> JobTable<J> {
    /// An empty table. Needs `J < u16::MAX` (the scheduler checks it).
    pub(crate) const fn new() -> Self {
        Self {
            jobs: heapless::Vec::new(),
            prev: heapless::Vec::new(),
            next: heapless::Vec::new(),
            oldest: NIL,
            newest: NIL,
            free: NIL,
            len: 0,
            by_id: Avl::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len() >= J
    }

    /// Every slot ever used, by slot: live jobs and vacant ones. What the indexes that read
    /// job fields by slot (the ranking) are given.
    pub(crate) fn by_slot(&self) -> &[Job] {
        &self.jobs
    }

    /// The live jobs, by slot.
    pub(crate) fn jobs(&self) -> crate::job::LiveJobs<'_> {
        crate::job::LiveJobs::new(&self.jobs, self.len())
    }

    /// The job in `slot`. O(1).
    pub(crate) fn get(&self, slot: Slot) -> Option<&Job> {
        self.jobs.get(usize::from(slot)).filter(|j| !j.is_vacant())
    }

    /// The job in `slot`, mutably. O(1).
    pub(crate) fn get_mut(&mut self, slot: Slot) -> Option<&mut Job> {
        self.jobs
            .get_mut(usize::from(slot))
            .filter(|j| !j.is_vacant())
    }

    /// The slot of live job `id`. O(log J).
    pub(crate) fn find(&self, id: JobId) -> Option<Slot> {
        let jobs = &self.jobs;
        let at = self.by_id.search(|n| id.cmp(&id_at(jobs, n).unwrap_or(id)));
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
            set(&mut self.jobs, slot, job);
            slot
        } else {
            let slot = self.jobs.len() as Slot;
            let grown = self.prev.push(NIL).is_ok() & self.next.push(NIL).is_ok();
            if !grown {
                return Err(job);
            }
            self.jobs.push(job)?;
            slot
        };
        self.len += 1;
        set(&mut self.prev, slot, self.newest);
        set(&mut self.next, slot, NIL);
        if self.newest == NIL {
            self.oldest = slot;
        } else {
            set(&mut self.next, self.newest, slot);
        }
        self.newest = slot;
        let jobs = &self.jobs;
        let mut by_id = |a: Slot, b: Slot| id_at(jobs, a) < id_at(jobs, b);
        self.by_id.insert(slot, &mut by_id);
        Ok(slot)
    }

    /// Removes the job in `slot` and frees the slot. O(log J).
    pub(crate) fn remove(&mut self, slot: Slot) -> Option<Job> {
        let job = *self.get(slot)?;
        let jobs = &self.jobs;
        let mut by_id = |a: Slot, b: Slot| id_at(jobs, a) < id_at(jobs, b);
        self.by_id.remove(slot, &mut by_id);
        if let Some(j) = self.jobs.get_mut(usize::from(slot)) {
            j.vacate();
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
        set(&mut self.next, slot, self.free);
        self.free = slot;
        self.len = self.len.saturating_sub(1);
        Some(job)
    }

    /// Checks the jobs, the id index, the submission list and the free list. O(J).
    pub(crate) fn check(&self) -> bool {
        let jobs = &self.jobs;
        let by_id = |a: Slot, b: Slot| id_at(jobs, a) < id_at(jobs, b);
        let columns_ok = self.prev.len() == self.jobs.len() && self.next.len() == self.jobs.len();
        let live = self.jobs.iter().filter(|j| !j.is_vacant()).count();
        let jobs_ok = self.jobs.iter().enumerate().all(|(s, job)| {
            job.is_vacant() || (job.is_valid() && self.find(job.id()) == Some(s as Slot))
        });
        let mut listed = 0usize;
        let mut at = self.oldest;
        let mut before = NIL;
        for _ in 0..=J {
            if at == NIL {
                break;
            }
            if self.get(at).is_none() || self.prev.get(usize::from(at)) != Some(&before) {
                return false;
            }
            listed += 1;
            (before, at) = (at, self.next_submitted(at));
        }
        let mut vacant = 0usize;
        let mut at = self.free;
        for _ in 0..=J {
            if at == NIL {
                break;
            }
            if !self.jobs.get(usize::from(at)).is_some_and(Job::is_vacant) {
                return false;
            }
            vacant += 1;
            at = self.next_submitted(at);
        }
        columns_ok
            && jobs_ok
            && live == self.len()
            && vacant + live == self.jobs.len()
            && self.by_id.check(&by_id)
            && self.by_id.len() == self.len()
            && listed == self.len()
            && before == self.newest
    }
}

/// The id of the job in `slot` (live or vacant).
fn id_at(jobs: &[Job], slot: Slot) -> Option<JobId> {
    jobs.get(usize::from(slot)).map(Job::id)
}

fn set<T, const J: usize>(column: &mut heapless::Vec<T, J>, slot: Slot, value: T) {
    if let Some(x) = column.get_mut(usize::from(slot)) {
        *x = value;
    }
}

/// A [`JobTable`] as a snapshot writes it: field for field its own layout, each running
/// job credited with its current run up to `now` ([`Job::credited_to`]).
#[cfg(feature = "snapshot")]
pub(crate) struct TableAt<'a, const J: usize> {
    table: &'a JobTable<J>,
    now: TimeMs,
}

#[cfg(feature = "snapshot")]
impl<const J: usize> JobTable<J> {
    /// The table as a snapshot taken at `now` holds it.
    pub(crate) fn at(&self, now: TimeMs) -> TableAt<'_, J> {
        TableAt { table: self, now }
    }

    /// Undoes [`at`](Self::at) after a decode: each running job's executed time back to its
    /// ended runs'. The first job whose record no scheduler writes
    /// ([`Job::uncredit`]) is returned, with the jobs before it already changed. O(J).
    pub(crate) fn uncredit(&mut self, now: TimeMs) -> Result<(), JobId> {
        for job in self.jobs.iter_mut().filter(|j| !j.is_vacant()) {
            if !job.uncredit(now) {
                return Err(job.id());
            }
        }
        Ok(())
    }
}

#[cfg(feature = "snapshot")]
impl<const J: usize> Serialize for TableAt<'_, J> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let table = self.table;
        let jobs = CreditedJobs {
            jobs: &table.jobs,
            now: self.now,
        };
        let mut out = serializer.serialize_struct("JobTable", 8)?;
        out.serialize_field("jobs", &jobs)?;
        out.serialize_field("prev", &table.prev)?;
        out.serialize_field("next", &table.next)?;
        out.serialize_field("oldest", &table.oldest)?;
        out.serialize_field("newest", &table.newest)?;
        out.serialize_field("free", &table.free)?;
        out.serialize_field("len", &table.len)?;
        out.serialize_field("by_id", &table.by_id)?;
        out.end()
    }
}

/// Jobs written as a sequence (what `heapless::Vec` writes), each credited up to `now`.
#[cfg(feature = "snapshot")]
struct CreditedJobs<'a> {
    jobs: &'a [Job],
    now: TimeMs,
}

#[cfg(feature = "snapshot")]
impl Serialize for CreditedJobs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.jobs.len()))?;
        for job in self.jobs {
            seq.serialize_element(&job.credited_to(self.now))?;
        }
        seq.end()
    }
}

#[cfg(feature = "snapshot")]
impl<const J: usize> DecodeInPlace for JobTable<J> {
    fn decode_in_place(&mut self, de: &mut Reader<'_>) -> postcard::Result<()> {
        self.jobs.decode_in_place(de)?;
        self.prev.decode_in_place(de)?;
        self.next.decode_in_place(de)?;
        read(&mut self.oldest, de)?;
        read(&mut self.newest, de)?;
        read(&mut self.free, de)?;
        read(&mut self.len, de)?;
        self.by_id.decode_in_place(de)
    }

    fn reset(&mut self) {
        self.jobs.clear();
        self.prev.clear();
        self.next.clear();
        (self.oldest, self.newest, self.free, self.len) = (NIL, NIL, NIL, 0);
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
