//! A sort with no panic path, for the event path (ranking fallback, rejections, placers).
//!
//! `core`'s slice sorts assert that the comparison is a total order and panic otherwise, so
//! any call links a panic path that the firmware's no-panic link check
//! (`tests/firmware/src/bin/no_panic.rs`) refuses, and they cost about 6 KB of flash on a
//! Cortex-M4F. Heapsort (Williams 1964) needs neither: O(n log n) at worst, no extra
//! memory, every loop bounded. It is not stable; every caller sorts by a strict total order
//! (or equal keys mean equal items), so its result is the one sorted order any correct sort
//! gives, and decisions are unchanged.

/// Sorts `items` ascending by `less`, a strict weak order (equal items in any order).
pub(crate) fn heap_sort<T>(items: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let len = items.len();
    for root in (0..len / 2).rev() {
        sift_down(items, root, len, &less);
    }
    for end in (1..len).rev() {
        swap_in(items, 0, end);
        sift_down(items, 0, end, &less);
    }
}

/// Sorts `items` ascending by `key` (as [`heap_sort`]).
pub(crate) fn heap_sort_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    heap_sort(items, |a, b| key(a) < key(b));
}

/// Moves `items[root]` down the max-heap `items[..end]` to its place. At most log2(end)
/// steps: each one at least doubles `root`.
fn sift_down<T>(items: &mut [T], mut root: usize, end: usize, less: &impl Fn(&T, &T) -> bool) {
    let before = |items: &[T], i: usize, j: usize| match (items.get(i), items.get(j)) {
        (Some(a), Some(b)) => less(a, b),
        _ => false,
    };
    for _ in 0..usize::BITS {
        let left = root.saturating_mul(2).saturating_add(1);
        if left >= end {
            return;
        }
        let right = left + 1;
        let child = if right < end && before(items, left, right) {
            right
        } else {
            left
        };
        if !before(items, root, child) {
            return;
        }
        swap_in(items, root, child);
        root = child;
    }
}

/// Swaps two entries; nothing if either index is out of range.
fn swap_in<T>(items: &mut [T], a: usize, b: usize) {
    if a < items.len() && b < items.len() {
        items.swap(a, b);
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::rng::SeededRng;
    use std::vec::Vec;

    #[test]
    fn sorts_like_the_standard_sort_with_and_without_ties() {
        let mut rng = SeededRng::new(11);
        for len in [0usize, 1, 2, 3, 7, 64, 255, 256] {
            for modulus in [3u32, 1 << 20] {
                let mut items: Vec<u32> = (0..len).map(|_| rng.below(modulus)).collect();
                let mut want = items.clone();
                want.sort_unstable();
                heap_sort(&mut items, |a, b| a < b);
                assert_eq!(items, want, "len {len}, values below {modulus}");
                let mut by_key = want.clone();
                heap_sort_by_key(&mut by_key, |&x| core::cmp::Reverse(x));
                want.reverse();
                assert_eq!(by_key, want, "len {len}, descending");
            }
        }
    }
}
