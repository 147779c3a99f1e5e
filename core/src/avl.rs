//! An intrusive AVL tree over the scheduler's job slots: the ordered index behind the ranking
//! ([`RankIndex`](crate::rank)) and the id lookup of the job table.
//!
//! The tree stores only links (left, right, parent, height) per slot; what a slot sorts by
//! and what each subtree summarises live with the owner, which passes them in as a
//! [`NodeKeys`]. Height is at most `1.44·log2(J + 2)` (AVL), so every operation is O(log J)
//! with a hard bound, every loop is bounded by [`MAX_HEIGHT`] or `J`, and nothing recurses.
//! Links are `u16` slots (`NIL` = none): the scheduler checks `J ≤ u16::MAX` at compile time.
//! Per-slot columns are `heapless::Vec`s that grow as slots are first used, so an empty tree
//! is `const`-constructible and serialisable.

#[cfg(feature = "snapshot")]
use crate::decode::{DecodeInPlace, Reader, read};
use crate::slot::Slot;
use core::cmp::Ordering;
use serde::{Deserialize, Serialize};

/// "No slot".
pub(crate) const NIL: Slot = Slot::MAX;

/// More than the height of any AVL tree with at most 65,535 nodes (which is ≤ 23).
pub(crate) const MAX_HEIGHT: usize = 32;

/// What the owner of an [`Avl`] provides: the order of its slots and the subtree summaries.
pub(crate) trait NodeKeys {
    /// Whether slot `a` sorts before slot `b`; a strict total order on the slots in the tree.
    fn less(&self, a: Slot, b: Slot) -> bool;
    /// Recomputes the summary of `node` from its own data and its children's summaries
    /// (`NIL` = no child). Called bottom-up whenever a subtree below `node` changed.
    fn update(&mut self, node: Slot, left: Slot, right: Slot);
}

/// Slots without summaries (the id index).
impl<F: Fn(Slot, Slot) -> bool> NodeKeys for F {
    fn less(&self, a: Slot, b: Slot) -> bool {
        self(a, b)
    }
    fn update(&mut self, _node: Slot, _left: Slot, _right: Slot) {}
}

/// A child's side.
#[derive(Clone, Copy)]
enum Side {
    Left,
    Right,
}

/// The links of an AVL tree over slots `0..J`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Avl<const J: usize> {
    left: heapless::Vec<Slot, J>,
    right: heapless::Vec<Slot, J>,
    parent: heapless::Vec<Slot, J>,
    height: heapless::Vec<u8, J>,
    root: Slot,
    len: usize,
}

impl<const J: usize> Avl<J> {
    /// An empty tree.
    pub(crate) const fn new() -> Self {
        Self {
            left: heapless::Vec::new(),
            right: heapless::Vec::new(),
            parent: heapless::Vec::new(),
            height: heapless::Vec::new(),
            root: NIL,
            len: 0,
        }
    }

    /// Slots in the tree.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The root (`NIL` when empty).
    pub(crate) fn root(&self) -> Slot {
        self.root
    }

    /// Left child of `n` (`NIL` for none or an unknown slot).
    pub(crate) fn left(&self, n: Slot) -> Slot {
        self.left.get(usize::from(n)).copied().unwrap_or(NIL)
    }

    /// Right child of `n`.
    pub(crate) fn right(&self, n: Slot) -> Slot {
        self.right.get(usize::from(n)).copied().unwrap_or(NIL)
    }

    /// Parent of `n`.
    pub(crate) fn parent(&self, n: Slot) -> Slot {
        self.parent.get(usize::from(n)).copied().unwrap_or(NIL)
    }

    fn height(&self, n: Slot) -> i32 {
        i32::from(self.height.get(usize::from(n)).copied().unwrap_or(0))
    }

    fn set_left(&mut self, n: Slot, v: Slot) {
        if let Some(x) = self.left.get_mut(usize::from(n)) {
            *x = v;
        }
    }

    fn set_right(&mut self, n: Slot, v: Slot) {
        if let Some(x) = self.right.get_mut(usize::from(n)) {
            *x = v;
        }
    }

    fn set_parent(&mut self, n: Slot, v: Slot) {
        if let Some(x) = self.parent.get_mut(usize::from(n)) {
            *x = v;
        }
    }

    /// Makes sure slot `n` has its columns (slots are first used in increasing order).
    fn reserve(&mut self, n: Slot) -> bool {
        let n = usize::from(n);
        while self.left.len() <= n {
            if self.left.push(NIL).is_err()
                || self.right.push(NIL).is_err()
                || self.parent.push(NIL).is_err()
                || self.height.push(0).is_err()
            {
                return false;
            }
        }
        true
    }

    /// Whether `n` is in the tree.
    pub(crate) fn contains(&self, n: Slot) -> bool {
        n != NIL && (self.root == n || self.parent(n) != NIL)
    }

    /// Inserts slot `n` (not in the tree) at its place by `keys`. O(log J).
    pub(crate) fn insert<K: NodeKeys>(&mut self, n: Slot, keys: &mut K) {
        if n == NIL || self.contains(n) || !self.reserve(n) {
            return;
        }
        self.set_left(n, NIL);
        self.set_right(n, NIL);
        if let Some(h) = self.height.get_mut(usize::from(n)) {
            *h = 1;
        }
        let mut at = self.root;
        let mut above = NIL;
        let mut go_left = false;
        for _ in 0..MAX_HEIGHT {
            if at == NIL {
                break;
            }
            above = at;
            go_left = keys.less(n, at);
            at = if go_left {
                self.left(at)
            } else {
                self.right(at)
            };
        }
        self.set_parent(n, above);
        if above == NIL {
            self.root = n;
        } else if go_left {
            self.set_left(above, n);
        } else {
            self.set_right(above, n);
        }
        self.len += 1;
        keys.update(n, NIL, NIL);
        self.retrace(above, keys);
    }

    /// Removes slot `n` from the tree (nothing if absent). O(log J).
    pub(crate) fn remove<K: NodeKeys>(&mut self, n: Slot, keys: &mut K) {
        if !self.contains(n) {
            return;
        }
        let (l, r) = (self.left(n), self.right(n));
        let start = if l == NIL {
            self.transplant(n, r);
            self.parent(n)
        } else if r == NIL {
            self.transplant(n, l);
            self.parent(n)
        } else {
            let y = self.leftmost(r);
            let start = if self.parent(y) == n {
                y
            } else {
                let start = self.parent(y);
                let yr = self.right(y);
                self.transplant(y, yr);
                self.set_right(y, r);
                self.set_parent(r, y);
                start
            };
            self.transplant(n, y);
            self.set_left(y, l);
            self.set_parent(l, y);
            start
        };
        self.set_parent(n, NIL);
        self.set_left(n, NIL);
        self.set_right(n, NIL);
        self.len -= 1;
        self.retrace(start, keys);
    }

    /// Recomputes the summaries from `n` up to the root after `n`'s own data changed (not
    /// its place). O(log J).
    pub(crate) fn refresh_path<K: NodeKeys>(&mut self, n: Slot, keys: &mut K) {
        let mut at = n;
        for _ in 0..MAX_HEIGHT {
            if at == NIL {
                return;
            }
            keys.update(at, self.left(at), self.right(at));
            at = self.parent(at);
        }
    }

    /// The first slot in order (`NIL` when empty). O(log J).
    pub(crate) fn first(&self) -> Slot {
        self.leftmost(self.root)
    }

    /// The slot after `n` in order (`NIL` at the end). O(log J), amortised O(1) over a walk.
    pub(crate) fn next(&self, n: Slot) -> Slot {
        self.neighbour(n, Side::Right)
    }

    /// The slot before `n` in order (`NIL` at the start). O(log J).
    pub(crate) fn prev(&self, n: Slot) -> Slot {
        self.neighbour(n, Side::Left)
    }

    /// The nearest slot on `side` of `n` in order: the far end of that subtree, else the
    /// first ancestor `n` hangs on the other side of. One walk for both directions (the
    /// firmware's flash counts).
    fn neighbour(&self, n: Slot, side: Side) -> Slot {
        let child = |at: Slot, side: Side| match side {
            Side::Left => self.left(at),
            Side::Right => self.right(at),
        };
        let other = match side {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        };
        let mut at = child(n, side);
        if at != NIL {
            for _ in 0..MAX_HEIGHT {
                let down = child(at, other);
                if down == NIL {
                    break;
                }
                at = down;
            }
            return at;
        }
        let mut from = n;
        at = self.parent(n);
        for _ in 0..MAX_HEIGHT {
            if at == NIL || child(at, other) == from {
                return at;
            }
            from = at;
            at = self.parent(at);
        }
        NIL
    }

    /// The slot `probe` says is equal (`probe(node)` = how the sought item compares with
    /// `node`), or `NIL`. O(log J).
    pub(crate) fn search(&self, probe: impl Fn(Slot) -> Ordering) -> Slot {
        let mut at = self.root;
        for _ in 0..MAX_HEIGHT {
            if at == NIL {
                break;
            }
            at = match probe(at) {
                Ordering::Less => self.left(at),
                Ordering::Greater => self.right(at),
                Ordering::Equal => return at,
            };
        }
        NIL
    }

    fn leftmost(&self, n: Slot) -> Slot {
        let mut at = n;
        for _ in 0..MAX_HEIGHT {
            let l = self.left(at);
            if l == NIL {
                break;
            }
            at = l;
        }
        at
    }

    /// Puts `v` (or nothing) where `u` hangs from its parent.
    fn transplant(&mut self, u: Slot, v: Slot) {
        let p = self.parent(u);
        if p == NIL {
            self.root = v;
        } else if self.left(p) == u {
            self.set_left(p, v);
        } else {
            self.set_right(p, v);
        }
        if v != NIL {
            self.set_parent(v, p);
        }
    }

    fn update_node<K: NodeKeys>(&mut self, n: Slot, keys: &mut K) {
        let (l, r) = (self.left(n), self.right(n));
        let h = 1 + self.height(l).max(self.height(r));
        if let Some(x) = self.height.get_mut(usize::from(n)) {
            *x = h as u8;
        }
        keys.update(n, l, r);
    }

    /// Walks from `n` to the root, updating heights and summaries and rotating where a node's
    /// subtrees differ in height by 2.
    fn retrace<K: NodeKeys>(&mut self, n: Slot, keys: &mut K) {
        let mut at = n;
        for _ in 0..MAX_HEIGHT {
            if at == NIL {
                return;
            }
            self.update_node(at, keys);
            let balance = self.height(self.left(at)) - self.height(self.right(at));
            if balance > 1 {
                let l = self.left(at);
                if self.height(self.left(l)) < self.height(self.right(l)) {
                    self.rotate_left(l, keys);
                }
                at = self.rotate_right(at, keys);
            } else if balance < -1 {
                let r = self.right(at);
                if self.height(self.right(r)) < self.height(self.left(r)) {
                    self.rotate_right(r, keys);
                }
                at = self.rotate_left(at, keys);
            }
            at = self.parent(at);
        }
    }

    /// Rotates `x`'s right child up into its place; returns the new subtree root.
    fn rotate_left<K: NodeKeys>(&mut self, x: Slot, keys: &mut K) -> Slot {
        let y = self.right(x);
        if y == NIL {
            return x;
        }
        let b = self.left(y);
        self.set_right(x, b);
        if b != NIL {
            self.set_parent(b, x);
        }
        self.transplant(x, y);
        self.set_left(y, x);
        self.set_parent(x, y);
        self.update_node(x, keys);
        self.update_node(y, keys);
        y
    }

    /// Rotates `x`'s left child up into its place; returns the new subtree root.
    fn rotate_right<K: NodeKeys>(&mut self, x: Slot, keys: &mut K) -> Slot {
        let y = self.left(x);
        if y == NIL {
            return x;
        }
        let b = self.right(y);
        self.set_left(x, b);
        if b != NIL {
            self.set_parent(b, x);
        }
        self.transplant(x, y);
        self.set_right(y, x);
        self.set_parent(x, y);
        self.update_node(x, keys);
        self.update_node(y, keys);
        y
    }

    /// Replaces the tree by a balanced one over `sorted` (the slots the tree holds, in their
    /// new order, each once), with every summary recomputed: O(n), for re-ranking every job
    /// at once. Each range's root is its middle slot, built depth first with a fixed stack
    /// (depth ≤ log2 n + 1).
    pub(crate) fn rebuild<K: NodeKeys>(&mut self, sorted: &[Slot], keys: &mut K) {
        /// A range `lo..hi` of `sorted` whose middle hangs from `parent`; `phase` counts the
        /// children already built.
        #[derive(Clone, Copy)]
        struct Range {
            lo: usize,
            hi: usize,
            parent: Slot,
            phase: u8,
        }
        let mid_of = |lo: usize, hi: usize| -> Slot {
            if lo < hi {
                sorted.get(lo + (hi - lo) / 2).copied().unwrap_or(NIL)
            } else {
                NIL
            }
        };
        self.root = NIL;
        self.len = 0;
        let mut stack = [Range {
            lo: 0,
            hi: 0,
            parent: NIL,
            phase: 0,
        }; MAX_HEIGHT];
        if let Some(first) = stack.first_mut() {
            first.hi = sorted.len();
        }
        let mut top = 1usize;
        // Three steps per slot and one per empty range (n + 1 of them).
        for _ in 0..4 * sorted.len() + 4 {
            let Some(range) = top.checked_sub(1).and_then(|t| stack.get_mut(t)) else {
                break;
            };
            let Range { lo, hi, parent, .. } = *range;
            let mid = lo + (hi - lo) / 2;
            let node = mid_of(lo, hi);
            if node == NIL || !self.reserve(node) {
                top -= 1;
                continue;
            }
            let child = match range.phase {
                0 => Range {
                    lo,
                    hi: mid,
                    parent: node,
                    phase: 0,
                },
                1 => Range {
                    lo: mid + 1,
                    hi,
                    parent: node,
                    phase: 0,
                },
                _ => {
                    let (l, r) = (mid_of(lo, mid), mid_of(mid + 1, hi));
                    self.set_left(node, l);
                    self.set_right(node, r);
                    self.set_parent(node, parent);
                    if parent == NIL {
                        self.root = node;
                    }
                    self.update_node(node, keys);
                    self.len += 1;
                    top -= 1;
                    continue;
                }
            };
            range.phase += 1;
            if let Some(next) = stack.get_mut(top) {
                *next = child;
                top += 1;
            }
        }
    }

    /// Checks the structure: parent links, order by `keys`, AVL balance, stored heights, the
    /// node count, and that no slot outside the tree carries a link. O(J).
    pub(crate) fn check<K: NodeKeys>(&self, keys: &K) -> bool {
        let mut count = 0usize;
        let mut prev = NIL;
        let mut at = self.first();
        for _ in 0..=J {
            if at == NIL {
                break;
            }
            count += 1;
            if prev != NIL && !keys.less(prev, at) {
                return false;
            }
            let (l, r) = (self.left(at), self.right(at));
            let balanced = (self.height(l) - self.height(r)).abs() <= 1;
            let height_ok = self.height(at) == 1 + self.height(l).max(self.height(r));
            let links_ok = (l == NIL || self.parent(l) == at) && (r == NIL || self.parent(r) == at);
            if !(balanced && height_ok && links_ok) {
                return false;
            }
            prev = at;
            at = self.next(at);
        }
        let columns = self.left.len();
        let columns_ok = [self.right.len(), self.parent.len(), self.height.len()]
            .iter()
            .all(|&n| n == columns);
        let root_ok = self.root == NIL || (usize::from(self.root) < columns);
        // The walk above saw only the slots reachable from the root. A slot outside the tree
        // must carry no links, or `contains` would call it a member (and `insert` would skip
        // it): exactly the non-root members have a parent, and a parentless slot other than
        // the root has no children.
        let mut with_parent = 0usize;
        for s in 0..columns {
            let slot = s as Slot;
            if self.parent(slot) != NIL {
                with_parent += 1;
            } else if slot != self.root && (self.left(slot) != NIL || self.right(slot) != NIL) {
                return false;
            }
        }
        columns_ok
            && root_ok
            && count == self.len
            && with_parent + usize::from(self.root != NIL) == self.len
            && (self.root == NIL || self.parent(self.root) == NIL)
    }
}

#[cfg(feature = "snapshot")]
impl<const J: usize> DecodeInPlace for Avl<J> {
    fn decode_in_place(&mut self, de: &mut Reader<'_>) -> postcard::Result<()> {
        self.left.decode_in_place(de)?;
        self.right.decode_in_place(de)?;
        self.parent.decode_in_place(de)?;
        self.height.decode_in_place(de)?;
        read(&mut self.root, de)?;
        read(&mut self.len, de)
    }

    fn reset(&mut self) {
        self.left.clear();
        self.right.clear();
        self.parent.clear();
        self.height.clear();
        self.root = NIL;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::rng::SeededRng;
    use std::collections::BTreeSet;
    use std::vec::Vec;

    /// Keys by slot, with a subtree sum as the summary.
    struct Keyed {
        key: [u32; 64],
        sum: [u64; 64],
    }

    impl NodeKeys for Keyed {
        fn less(&self, a: Slot, b: Slot) -> bool {
            (self.key[usize::from(a)], a) < (self.key[usize::from(b)], b)
        }
        fn update(&mut self, node: Slot, left: Slot, right: Slot) {
            let sub = |s: Slot| {
                if s == NIL {
                    0
                } else {
                    self.sum[usize::from(s)]
                }
            };
            self.sum[usize::from(node)] =
                u64::from(self.key[usize::from(node)]) + sub(left) + sub(right);
        }
    }

    #[test]
    fn matches_an_ordered_set_under_random_inserts_removes_and_rekeys() {
        let mut rng = SeededRng::new(17);
        let mut tree: Avl<64> = Avl::new();
        let mut keys = Keyed {
            key: [0; 64],
            sum: [0; 64],
        };
        let mut model: BTreeSet<(u32, Slot)> = BTreeSet::new();
        for step in 0..20_000 {
            let slot = rng.below(64) as Slot;
            let present = tree.contains(slot);
            match rng.below(3) {
                0 if !present => {
                    keys.key[usize::from(slot)] = rng.below(40);
                    tree.insert(slot, &mut keys);
                    model.insert((keys.key[usize::from(slot)], slot));
                }
                1 if present => {
                    tree.remove(slot, &mut keys);
                    model.remove(&(keys.key[usize::from(slot)], slot));
                }
                _ if present => {
                    // Re-key: out, new key, back in.
                    tree.remove(slot, &mut keys);
                    model.remove(&(keys.key[usize::from(slot)], slot));
                    keys.key[usize::from(slot)] = rng.below(40);
                    tree.insert(slot, &mut keys);
                    model.insert((keys.key[usize::from(slot)], slot));
                }
                _ => {}
            }
            assert!(tree.check(&keys), "step {step}");
            let mut walk = Vec::new();
            let mut at = tree.first();
            while at != NIL {
                walk.push((keys.key[usize::from(at)], at));
                at = tree.next(at);
            }
            assert_eq!(
                walk,
                model.iter().copied().collect::<Vec<_>>(),
                "step {step}"
            );
            let total: u64 = model.iter().map(|&(k, _)| u64::from(k)).sum();
            let root_sum = if tree.root() == NIL {
                0
            } else {
                keys.sum[usize::from(tree.root())]
            };
            assert_eq!(root_sum, total, "step {step}");
            let probe = rng.below(64) as Slot;
            let k = keys.key[usize::from(probe)];
            let found = tree.search(|n| (k, probe).cmp(&(keys.key[usize::from(n)], n)));
            assert_eq!(found != NIL, tree.contains(probe), "step {step}");
        }
        // Height stays logarithmic: 64 slots → at most 1.44·log2(66) ≈ 8.7.
        for s in 0..64 {
            if !tree.contains(s) {
                keys.key[usize::from(s)] = s.into();
                tree.insert(s, &mut keys);
            }
        }
        assert!(tree.height(tree.root()) <= 8);
    }

    #[test]
    fn rebuild_from_sorted_slots_is_a_balanced_tree_with_summaries() {
        let mut keys = Keyed {
            key: [0; 64],
            sum: [0; 64],
        };
        for n in [0usize, 1, 2, 3, 7, 8, 33, 64] {
            let mut tree: Avl<64> = Avl::new();
            // Slots in a scrambled order, keys increasing along it.
            let sorted: Vec<Slot> = (0..n as Slot).map(|i| (i * 37) % 64).collect();
            for (k, &s) in sorted.iter().enumerate() {
                keys.key[usize::from(s)] = k as u32;
            }
            tree.insert(5, &mut keys); // replaced by the rebuild
            tree.rebuild(&sorted, &mut keys);
            assert!(tree.check(&keys), "n {n}");
            assert_eq!(tree.len(), n);
            let mut walk = Vec::new();
            let mut at = tree.first();
            while at != NIL {
                walk.push(at);
                at = tree.next(at);
            }
            assert_eq!(walk, sorted, "n {n}");
            let total: u64 = (0..n as u64).sum();
            let root_sum = if n == 0 {
                0
            } else {
                keys.sum[usize::from(tree.root())]
            };
            assert_eq!(root_sum, total, "n {n}");
        }
    }

    #[test]
    fn sorted_inserts_stay_balanced() {
        let mut tree: Avl<1000> = Avl::new();
        let mut less = |a: Slot, b: Slot| a < b;
        for s in 0..1000 {
            tree.insert(s, &mut less);
        }
        assert!(tree.check(&less));
        assert!(tree.height(tree.root()) <= 14, "1.44·log2(1002) ≈ 14.4");
        for s in (0..1000).step_by(2) {
            tree.remove(s, &mut less);
        }
        assert!(tree.check(&less));
        assert_eq!(tree.len(), 500);
        assert_eq!(tree.first(), 1);
    }
}
