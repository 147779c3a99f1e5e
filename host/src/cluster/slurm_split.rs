//! Placements Slurm allocates exactly as gantry chose them: Slurm's allocation rule, part of
//! the cluster model because both the placer (`registry`) and the Slurm adapter apply it.
//!
//! Slurm 22.05 takes a job's GPUs either per node (`TresPerNode=gres:gpu:k`: the same count
//! on every node, exact) or per job (`TresPerJob=gres:gpu:N` over a node list), and then
//! `select/cons_tres` splits the total itself: one GPU on each node of the list first, then
//! the rest node by node in Slurm's node order, each node up to its free GPUs. Checked on
//! the lab (`scripts/slurm-lab.sh`, 4 × 8 GPUs): 5 GPUs over n3 (2 free) and n4 (4 free)
//! became n3:2 + n4:3; 7 over n1 (3 free) and n2 (8 free) became n1:3 + n2:4.
//!
//! So a multi-node placement is exact when it is *filled in node order*: every node but the
//! last (in node order) gives all its free GPUs, the last gives 1 to all of its free ones.
//! Single-node placements are always exact. [`exact_mask`] narrows one sequential pick of
//! the core's placer so that the finished placement is of that shape (there is always one:
//! fill the nodes in order), which keeps gantry's and Slurm's count of free GPUs per node
//! the same: no job then waits for a GPU Slurm gave to another job.
//!
//! Node order here is the core's machine order (rack by rack, node by node in Slurm's
//! order within a rack, see `slurm::layout`); it is Slurm's node order whenever the
//! racks list nodes in that order (the lab's do). The rule reads only the pick's view, so
//! `gantry replay` applies it from the recording alone.

use gantry_core::GpuId;
use gantry_core::placement::{GpuMask, PlacementView};

/// Per machine: GPUs free for this job (usable now or already picked) and already picked.
fn counts<const G: usize>(view: &PlacementView<'_, G>) -> (Vec<u16>, Vec<u16>) {
    let machines = view.topology.machine_count();
    let mut free = vec![0u16; machines];
    let mut picked = vec![0u16; machines];
    for g in view.usable.iter() {
        free[usize::from(view.topology.machine_of(g).0)] += 1;
    }
    for &g in view.picked {
        let m = usize::from(view.topology.machine_of(g).0);
        free[m] += 1;
        picked[m] += 1;
    }
    (free, picked)
}

/// Whether `picked` (GPUs per machine so far) can be completed to `k` GPUs filled in node
/// order over machines with `free` GPUs each. O(machines × k).
pub fn completable(free: &[u16], picked: &[u16], k: u16) -> bool {
    let k = usize::from(k);
    let Some(first_touched) = picked.iter().position(|&p| p > 0) else {
        return free.iter().map(|&f| usize::from(f)).sum::<usize>() >= k;
    };
    let last_touched = picked.iter().rposition(|&p| p > 0).unwrap_or(first_touched);
    if picked.iter().zip(free).any(|(p, f)| p > f) {
        return false;
    }
    // Sums reachable by whole untouched machines before the candidate last machine.
    let mut reach = vec![false; k + 1];
    reach[0] = true;
    // GPUs of the touched machines before the candidate last one (all given in full).
    let mut full_before = 0usize;
    for last in 0..free.len() {
        let f = usize::from(free[last]);
        let p = usize::from(picked[last]);
        if last >= last_touched && f > 0 {
            // `last` gives between max(p, 1) and f GPUs; the others before it give all.
            let lo = p.max(1);
            for (extra, &ok) in reach.iter().enumerate() {
                if !ok {
                    continue;
                }
                let base = full_before + extra;
                if base + lo <= k && k <= base + f {
                    return true;
                }
            }
        }
        if p > 0 {
            full_before += f;
        } else if f > 0 {
            for s in (f..=k).rev() {
                if reach[s - f] {
                    reach[s] = true;
                }
            }
        }
        if full_before > k {
            return false;
        }
    }
    false
}

/// The GPUs of `view.usable` whose pick keeps the placement completable in node order, or
/// `None` when every usable GPU does (nothing to narrow). One-GPU jobs are never narrowed.
pub fn exact_mask<const G: usize>(view: &PlacementView<'_, G>) -> Option<GpuMask<G>> {
    let k = view.job.gpus();
    if k <= 1 {
        return None;
    }
    let (free, mut picked) = counts(view);
    let mut allowed = vec![false; free.len()];
    for (m, ok) in allowed.iter_mut().enumerate() {
        if usize::from(picked[m]) >= usize::from(free[m]) {
            continue;
        }
        picked[m] += 1;
        *ok = completable(&free, &picked, k);
        picked[m] -= 1;
    }
    if (0..free.len()).all(|m| allowed[m] || picked[m] >= free[m]) {
        return None;
    }
    let mut mask = GpuMask::none();
    let mut any = false;
    for g in view.usable.iter() {
        if allowed[usize::from(view.topology.machine_of(g).0)] {
            mask.set(g, true);
            any = true;
        }
    }
    // Unreachable while the view is consistent (filling in order always completes); the
    // unnarrowed view is the safe answer otherwise.
    any.then_some(mask)
}

/// Whether `gpu` may be picked under the node-order rule (cheap check of one pick).
pub fn allows<const G: usize>(view: &PlacementView<'_, G>, gpu: GpuId) -> bool {
    let k = view.job.gpus();
    if k <= 1 || !view.usable.allows(gpu) {
        return true;
    }
    let (free, mut picked) = counts(view);
    picked[usize::from(view.topology.machine_of(gpu).0)] += 1;
    completable(&free, &picked, k)
}

/// GPUs per node of a placement in Slurm's split of a per-job request over the nodes
/// `shape` names, given Slurm's free GPUs per node (`room`, in node order): one each, then
/// the rest node by node up to each node's free GPUs. `None` when they do not fit.
pub fn cons_tres_split(shape: &[(String, u16)], room: &[i64]) -> Option<Vec<(String, u16)>> {
    let total: i64 = shape.iter().map(|(_, c)| i64::from(*c)).sum();
    let mut left = total - shape.len() as i64;
    let mut out = Vec::with_capacity(shape.len());
    for ((node, _), &free) in shape.iter().zip(room) {
        if free < 1 || left < 0 {
            return None;
        }
        let more = left.min(free - 1);
        left -= more;
        out.push((node.clone(), u16::try_from(1 + more).ok()?));
    }
    (left == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_in_node_order_is_completable_and_the_split_repro_is_not() {
        // n3 has 2 free, n4 has 4: 5 GPUs as n3:1 + n4:4 is what Slurm does not do.
        let free = [0, 0, 2, 4];
        assert!(!completable(&free, &[0, 0, 1, 4], 5));
        assert!(completable(&free, &[0, 0, 2, 3], 5));
        assert!(completable(&free, &[0, 0, 1, 0], 5));
        assert!(
            completable(&free, &[0, 0, 0, 1], 5),
            "n3 given in full, then n4:3"
        );
        assert!(
            !completable(&free, &[0, 0, 0, 4], 5),
            "n4 full leaves 1 for n3, not full"
        );
        // One node alone is always exact.
        assert!(completable(&[8, 8], &[3, 0], 4));
        // 7 over n1 (3 free) and n2 (8): n1 full, n2 the rest.
        assert!(completable(&[3, 8], &[3, 4], 7));
        assert!(!completable(&[3, 8], &[2, 5], 7));
        // An untouched whole node may sit between touched ones.
        assert!(completable(&[2, 3, 8], &[2, 0, 1], 7));
        assert!(completable(&[2, 3, 8], &[1, 0, 1], 7), "n1 filled up later");
        assert!(!completable(&[2, 3, 8], &[1, 0, 6], 7), "n1 full + 6 > 7");
        // More than there is.
        assert!(!completable(&[2, 2], &[1, 0], 5));
    }

    #[test]
    fn the_split_slurm_makes_is_one_each_then_node_by_node() {
        let shape = |v: &[(&str, u16)]| -> Vec<(String, u16)> {
            v.iter().map(|(n, c)| (n.to_string(), *c)).collect()
        };
        assert_eq!(
            cons_tres_split(&shape(&[("n3", 1), ("n4", 4)]), &[2, 4]),
            Some(shape(&[("n3", 2), ("n4", 3)]))
        );
        assert_eq!(
            cons_tres_split(&shape(&[("n1", 3), ("n2", 4)]), &[3, 8]),
            Some(shape(&[("n1", 3), ("n2", 4)]))
        );
        assert_eq!(
            cons_tres_split(&shape(&[("n1", 3), ("n2", 4)]), &[2, 4]),
            None
        );
    }
}
