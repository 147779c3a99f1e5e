//! The scheduler's job table: live jobs in submission order as one contiguous slice, with
//! removal that shifts the shorter side, and stable slots so other indexes (the ranking,
//! the running list) never need renumbering when a job leaves.
//!
//! On a long FIFO queue the jobs that finish are the oldest, near the front: shifting the
//! front part costs O(position), where a plain vector would shift the whole queue.

use crate::ids::JobId;
use crate::job::{Job, JobSpec};
use crate::time::TimeMs;
use core::ops::Range;

/// A fixed-capacity vector stored in `buf[start..start + len]`, so that removing or
/// inserting near either end moves only the elements on the shorter side.
#[derive(Clone, Debug)]
pub(crate) struct GapVec<T: Copy, const N: usize> {
    buf: [T; N],
    start: usize,
    len: usize,
}

impl<T: Copy, const N: usize> GapVec<T, N> {
    /// An empty vector; `fill` only initialises the unused storage.
    pub(crate) const fn new(fill: T) -> Self {
        Self {
            buf: [fill; N],
            start: 0,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len >= N
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        self.buf
            .get(self.start..self.start + self.len)
            .unwrap_or(&[])
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        self.buf
            .get_mut(self.start..self.start + self.len)
            .unwrap_or(&mut [])
    }

    /// Position in the storage of element `i` (valid while nothing is inserted or removed).
    fn physical(&self, i: usize) -> usize {
        self.start + i
    }

    /// Appends `x`; hands it back when full. Returns the elements (new indices) whose
    /// storage position changed: all of them when the storage had to be compacted to the
    /// front (amortised O(1) while not nearly full), else none. O(1) or O(len).
    pub(crate) fn push(&mut self, x: T) -> Result<Range<usize>, T> {
        if self.is_full() {
            return Err(x);
        }
        let mut moved = 0..0;
        if self.start + self.len >= N {
            self.buf.copy_within(self.start..self.start + self.len, 0);
            self.start = 0;
            moved = 0..self.len;
        }
        let end = self.start + self.len;
        match self.buf.get_mut(end) {
            Some(slot) => *slot = x,
            None => return Err(x),
        }
        self.len += 1;
        Ok(moved)
    }

    /// Inserts `x` at index `i`, shifting the shorter side; hands it back when full or
    /// `i > len`. When that side has no room the elements are first re-centred in the
    /// storage, so inserting at one end stays amortised O(1) while the vector is not nearly
    /// full. O(min(i, len − i)), or O(len) when re-centring.
    pub(crate) fn insert(&mut self, i: usize, x: T) -> Result<(), T> {
        if self.is_full() || i > self.len {
            return Err(x);
        }
        let shift_front = i <= self.len / 2;
        let no_room = if shift_front {
            self.start == 0
        } else {
            self.start + self.len >= N
        };
        if no_room {
            let centre = (N - self.len) / 2;
            self.buf
                .copy_within(self.start..self.start + self.len, centre);
            self.start = centre;
        }
        if shift_front && self.start > 0 {
            self.buf
                .copy_within(self.start..self.start + i, self.start - 1);
            self.start -= 1;
        } else {
            self.buf
                .copy_within(self.start + i..self.start + self.len, self.start + i + 1);
        }
        self.len += 1;
        let at = self.physical(i);
        if let Some(slot) = self.buf.get_mut(at) {
            *slot = x;
        }
        Ok(())
    }

    /// Removes element `i`, shifting the shorter side. Returns it and the elements (new
    /// indices) whose storage position changed. O(min(i, len − i)).
    pub(crate) fn remove(&mut self, i: usize) -> Option<(T, Range<usize>)> {
        if i >= self.len {
            return None;
        }
        let x = *self.buf.get(self.physical(i))?;
        let moved = if i < self.len - 1 - i {
            self.buf
                .copy_within(self.start..self.start + i, self.start + 1);
            self.start += 1;
            0..i
        } else {
            self.buf
                .copy_within(self.start + i + 1..self.start + self.len, self.start + i);
            i..self.len - 1
        };
        self.len -= 1;
        if self.len == 0 {
            self.start = 0;
        }
        Some((x, moved))
    }
}

/// A stable handle on a live job, valid from submission to removal (then reused).
pub(crate) type Slot = u16;

const NO_JOB: Job = Job::submitted(JobSpec::new(JobId(0), 0), TimeMs(0));

/// Live jobs in submission order, an id column for a dense linear lookup, and a slot per job
/// whose table position is found in O(1). Memory: about `128·J` bytes.
#[derive(Clone, Debug)]
pub(crate) struct JobTable<const J: usize> {
    jobs: GapVec<Job, J>,
    ids: GapVec<JobId, J>,
    slots: GapVec<Slot, J>,
    /// Storage position of each slot's job (shared by the three columns).
    position_of_slot: [u16; J],
    /// Slots given back, reused last in, first out.
    free: heapless::Vec<Slot, J>,
    /// Slots `fresh..J` have never been used.
    fresh: usize,
    /// The largest id ever pushed: a larger id is not live, without a scan (callers that
    /// number jobs in submission order never scan on submit).
    max_id: Option<JobId>,
}

impl<const J: usize> JobTable<J> {
    /// An empty table. Needs `J <= u16::MAX` (the scheduler checks it).
    pub(crate) const fn new() -> Self {
        Self {
            jobs: GapVec::new(NO_JOB),
            ids: GapVec::new(JobId(0)),
            slots: GapVec::new(0),
            position_of_slot: [0; J],
            free: heapless::Vec::new(),
            fresh: 0,
            max_id: None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.jobs.len()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.jobs.is_full()
    }

    /// The live jobs in submission order.
    pub(crate) fn jobs(&self) -> &[Job] {
        self.jobs.as_slice()
    }

    pub(crate) fn jobs_mut(&mut self) -> &mut [Job] {
        self.jobs.as_mut_slice()
    }

    pub(crate) fn get(&self, i: usize) -> Option<&Job> {
        self.jobs().get(i)
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut Job> {
        self.jobs_mut().get_mut(i)
    }

    /// The id of job `i`.
    pub(crate) fn id_at(&self, i: usize) -> Option<JobId> {
        self.ids.as_slice().get(i).copied()
    }

    /// The slot of job `i`.
    pub(crate) fn slot_at(&self, i: usize) -> Option<Slot> {
        self.slots.as_slice().get(i).copied()
    }

    /// Table index of live job `id`: a linear scan of the dense id column, skipped for an id
    /// above every id pushed so far. O(J), O(1) for such an id.
    pub(crate) fn find(&self, id: JobId) -> Option<usize> {
        if self.max_id.is_none_or(|max| id > max) {
            return None;
        }
        self.ids.as_slice().iter().position(|&j| j == id)
    }

    /// Table index of the job holding `slot`. O(1).
    pub(crate) fn index_of(&self, slot: Slot) -> Option<usize> {
        let position = usize::from(*self.position_of_slot.get(usize::from(slot))?);
        let i = position.checked_sub(self.slots.start)?;
        (self.slot_at(i) == Some(slot)).then_some(i)
    }

    /// The job holding `slot`, for a slot the caller knows is live (the ranking, the running
    /// list): one lookup, no check against the slot column. O(1).
    pub(crate) fn job_of(&self, slot: Slot) -> Option<&Job> {
        let position = usize::from(*self.position_of_slot.get(usize::from(slot))?);
        self.get(position.checked_sub(self.slots.start)?)
    }

    /// Appends a job; returns its slot, or hands the job back when the table is full.
    /// Amortised O(1) while the table is not nearly full.
    pub(crate) fn push(&mut self, job: Job) -> Result<Slot, Job> {
        if self.is_full() {
            return Err(job);
        }
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None if self.fresh < J => {
                self.fresh += 1;
                (self.fresh - 1) as Slot
            }
            None => return Err(job),
        };
        let id = job.id();
        let moved = self.jobs.push(job)?;
        self.max_id = self.max_id.max(Some(id));
        // Same capacity and length as `jobs`: these succeed and move the same elements.
        let _ = self.ids.push(id);
        let _ = self.slots.push(slot);
        self.renumber(moved);
        self.renumber(self.len() - 1..self.len());
        Ok(slot)
    }

    /// Removes job `i`, keeping submission order; returns it and its (now free) slot.
    /// O(min(i, len − i)).
    pub(crate) fn remove(&mut self, i: usize) -> Option<(Job, Slot)> {
        let (job, moved) = self.jobs.remove(i)?;
        let _ = self.ids.remove(i);
        let (slot, _) = self.slots.remove(i)?;
        self.renumber(moved);
        let _ = self.free.push(slot);
        Some((job, slot))
    }

    /// Records the storage position of the jobs at indices `moved`.
    fn renumber(&mut self, moved: Range<usize>) {
        let start = self.slots.start;
        for i in moved {
            if let Some(&slot) = self.slots.as_slice().get(i)
                && let Some(p) = self.position_of_slot.get_mut(usize::from(slot))
            {
                *p = (start + i) as u16;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::rng::SeededRng;
    use std::vec::Vec;

    #[test]
    fn gap_vec_matches_a_vec_under_random_pushes_inserts_and_removes() {
        let mut rng = SeededRng::new(11);
        let mut gap: GapVec<u32, 16> = GapVec::new(0);
        let mut model: Vec<u32> = Vec::new();
        for step in 0..5_000u32 {
            let len = model.len();
            match rng.below(3) {
                0 => assert_eq!(gap.push(step).is_ok(), len < 16),
                1 => {
                    let i = rng.below(len as u32 + 2) as usize;
                    let ok = gap.insert(i, step).is_ok();
                    assert_eq!(ok, len < 16 && i <= len, "step {step}");
                    if ok {
                        model.insert(i, step);
                    }
                    continue;
                }
                _ => {
                    let i = rng.below(len as u32 + 1) as usize;
                    let got = gap.remove(i).map(|(x, _)| x);
                    assert_eq!(got, (i < len).then(|| model.remove(i)), "step {step}");
                    continue;
                }
            }
            if len < 16 {
                model.push(step);
            }
            assert_eq!(gap.as_slice(), &model[..], "step {step}");
        }
    }

    #[test]
    fn table_slots_follow_their_jobs_through_shifts() {
        let mut rng = SeededRng::new(5);
        let mut table: JobTable<12> = JobTable::new();
        let mut model: Vec<(JobId, Slot)> = Vec::new();
        for step in 0..5_000u32 {
            if rng.below(2) == 0 {
                let job = Job::submitted(JobSpec::new(JobId(step), 1), TimeMs(0));
                match table.push(job) {
                    Ok(slot) => model.push((JobId(step), slot)),
                    Err(_) => assert_eq!(model.len(), 12),
                }
            } else if !model.is_empty() {
                let i = rng.below(model.len() as u32) as usize;
                let (job, slot) = table.remove(i).unwrap();
                assert_eq!((job.id(), slot), model.remove(i));
            }
            for (i, &(id, slot)) in model.iter().enumerate() {
                assert_eq!(table.id_at(i), Some(id));
                assert_eq!(table.get(i).map(Job::id), Some(id));
                assert_eq!(table.index_of(slot), Some(i), "step {step}");
                assert_eq!(table.job_of(slot).map(Job::id), Some(id));
                assert_eq!(table.find(id), Some(i));
            }
            assert_eq!(table.len(), model.len());
        }
    }
}
