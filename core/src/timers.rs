//! When each job's key will change next: an indexed binary min-heap of `(time, slot)`, so the
//! scheduler re-keys a job exactly when its order said it would ([`JobOrder::next_review`]
//! (crate::JobOrder::next_review): a 2D-LAS threshold crossing, a deadline job turning
//! critical or hopeless) instead of re-keying every job on every event.
//!
//! `set`/`clear` O(log J), `peek` O(1), ties by slot (deterministic). Per-slot columns grow
//! as slots are first used (`const`-constructible, serialisable). Memory: 12 bytes per job.

use crate::avl::NIL;
#[cfg(feature = "snapshot")]
use crate::decode::{DecodeInPlace, Reader};
use crate::job_table::Slot;
use crate::time::TimeMs;
use serde::{Deserialize, Serialize};

/// Review times by slot, in a heap.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Timers<const J: usize> {
    /// Slots with a timer, in heap order of `(at, slot)`.
    heap: heapless::Vec<Slot, J>,
    /// By slot: its timer's time (meaningful while it has one).
    at: heapless::Vec<u64, J>,
    /// By slot: its position in `heap`, or `NIL`.
    position: heapless::Vec<Slot, J>,
}

impl<const J: usize> Timers<J> {
    /// No timers.
    pub(crate) const fn new() -> Self {
        Self {
            heap: heapless::Vec::new(),
            at: heapless::Vec::new(),
            position: heapless::Vec::new(),
        }
    }

    /// The earliest timer. O(1).
    pub(crate) fn peek(&self) -> Option<(TimeMs, Slot)> {
        let &slot = self.heap.first()?;
        Some((TimeMs(self.time(slot)), slot))
    }

    /// The timer of `slot`, if set. O(1).
    pub(crate) fn get(&self, slot: Slot) -> Option<TimeMs> {
        (self.pos(slot) != NIL).then(|| TimeMs(self.time(slot)))
    }

    /// Timers set.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// The slots with a timer, in heap order.
    pub(crate) fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        self.heap.iter().copied()
    }

    /// Sets, moves or (with `None`) clears the timer of `slot`. O(log J).
    pub(crate) fn set(&mut self, slot: Slot, at: Option<TimeMs>) {
        let Some(at) = at else {
            self.clear(slot);
            return;
        };
        let s = usize::from(slot);
        while self.at.len() <= s {
            if self.at.push(0).is_err() || self.position.push(NIL).is_err() {
                return;
            }
        }
        if let Some(x) = self.at.get_mut(s) {
            *x = at.0;
        }
        let mut i = usize::from(self.pos(slot));
        if i == usize::from(NIL) {
            i = self.heap.len();
            if self.heap.push(slot).is_err() {
                return;
            }
            self.set_pos(slot, i);
        }
        let i = self.sift_up(i);
        self.sift_down(i);
    }

    /// Clears the timer of `slot` (nothing if none). O(log J).
    pub(crate) fn clear(&mut self, slot: Slot) {
        let i = usize::from(self.pos(slot));
        if i == usize::from(NIL) {
            return;
        }
        let last = self.heap.len() - 1;
        self.swap(i, last);
        self.heap.pop();
        self.set_pos(slot, usize::from(NIL));
        if i < self.heap.len() {
            let i = self.sift_up(i);
            self.sift_down(i);
        }
    }

    fn time(&self, slot: Slot) -> u64 {
        self.at.get(usize::from(slot)).copied().unwrap_or(u64::MAX)
    }

    fn pos(&self, slot: Slot) -> Slot {
        self.position.get(usize::from(slot)).copied().unwrap_or(NIL)
    }

    fn set_pos(&mut self, slot: Slot, i: usize) {
        if let Some(p) = self.position.get_mut(usize::from(slot)) {
            *p = i as Slot;
        }
    }

    fn before(&self, i: usize, j: usize) -> bool {
        match (self.heap.get(i), self.heap.get(j)) {
            (Some(&a), Some(&b)) => (self.time(a), a) < (self.time(b), b),
            _ => false,
        }
    }

    fn swap(&mut self, i: usize, j: usize) {
        if i >= self.heap.len() || j >= self.heap.len() {
            return;
        }
        self.heap.swap(i, j);
        for k in [i, j] {
            if let Some(&slot) = self.heap.get(k) {
                self.set_pos(slot, k);
            }
        }
    }

    fn sift_up(&mut self, mut i: usize) -> usize {
        // Each step halves `i`: at most log2(J) steps.
        while i > 0 && self.before(i, (i - 1) / 2) {
            self.swap(i, (i - 1) / 2);
            i = (i - 1) / 2;
        }
        i
    }

    fn sift_down(&mut self, mut i: usize) {
        // Each step doubles `i`: at most log2(J) < 64 steps.
        for _ in 0..usize::BITS {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut best = i;
            if self.before(l, best) {
                best = l;
            }
            if self.before(r, best) {
                best = r;
            }
            if best == i {
                return;
            }
            self.swap(i, best);
            i = best;
        }
    }

    /// Checks the heap order and the position index. O(J).
    pub(crate) fn check(&self) -> bool {
        let heap_ok = (1..self.heap.len()).all(|i| !self.before(i, (i - 1) / 2));
        let index_ok = self
            .heap
            .iter()
            .enumerate()
            .all(|(i, &s)| usize::from(self.pos(s)) == i);
        let count = self.position.iter().filter(|&&p| p != NIL).count();
        let columns_ok = self.at.len() == self.position.len();
        columns_ok && heap_ok && index_ok && count == self.heap.len()
    }
}

#[cfg(feature = "snapshot")]
impl<const J: usize> DecodeInPlace for Timers<J> {
    fn decode_in_place(&mut self, de: &mut Reader<'_>) -> postcard::Result<()> {
        self.heap.decode_in_place(de)?;
        self.at.decode_in_place(de)?;
        self.position.decode_in_place(de)
    }

    fn reset(&mut self) {
        self.heap.clear();
        self.at.clear();
        self.position.clear();
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::rng::SeededRng;
    use std::collections::BTreeMap;

    #[test]
    fn matches_a_map_under_random_sets_and_clears() {
        let mut rng = SeededRng::new(29);
        let mut timers: Timers<32> = Timers::new();
        let mut model: BTreeMap<Slot, u64> = BTreeMap::new();
        for step in 0..20_000 {
            let slot = rng.below(32) as Slot;
            if rng.below(3) == 0 {
                timers.clear(slot);
                model.remove(&slot);
            } else {
                let at = u64::from(rng.below(50));
                timers.set(slot, Some(TimeMs(at)));
                model.insert(slot, at);
            }
            assert!(timers.check(), "step {step}");
            let want = model.iter().map(|(&s, &t)| (t, s)).min();
            assert_eq!(timers.peek().map(|(t, s)| (t.0, s)), want, "step {step}");
            assert_eq!(timers.len(), model.len());
            assert_eq!(timers.get(slot).map(|t| t.0), model.get(&slot).copied());
        }
    }
}
