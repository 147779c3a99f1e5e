//! Exact minimum-communication-cost placement of a whole job.
//!
//! # Why a search over per-machine counts is exact
//!
//! On a tree the cost of a set S is (see [`topology`](crate::topology))
//! `w_rack·#racks + w_machine·#machines + w_gpu·|S| + w_peer·Σ_m C(n_m, 2)`: it depends only
//! on how many GPUs `n_m` the set takes on each machine, never on which ones. Proximity-DRL's
//! anchor computed its optimum the same way (an exhaustive search over per-machine count
//! vectors, checked against `itertools.combinations`). Here the search is a dynamic
//! programme instead of an enumeration, so it stays polynomial on large trees:
//!
//! 1. **Inside a rack**, for c GPUs on exactly t machines, the t machines with the most usable
//!    GPUs are never worse (any count vector feasible on other t machines is feasible on
//!    those), and for fixed t the pair term `Σ C(n_i, 2)` is convex and separable, so
//!    filling one GPU at a time onto the least-filled machine with room (water filling under
//!    capacities) minimises it. `best_r(c) = min_t w_rack + w_machine·t + w_gpu·c +
//!    w_peer·pairs(c, t)`. O(k·M_r²) per rack of M_r machines.
//! 2. **Across racks**, `D_j(c) = min_{c_r} D_{j-1}(c − c_r) + best_{r_j}(c_r)` (a min-plus
//!    knapsack). The choice per rack is recovered by recomputing the layers backwards (no
//!    R × k table, so memory stays O(G)). O(R·k·Σ_r min(k, free_r)) in all.
//!
//! Worst case, in "work units" ≈ inner-loop iterations:
//! `W = Σ_r (k+1)·M_r² + (R+1)·(k+1)·Σ_r (min(k, free_r)+1)`. On Proximity-DRL's 2×4×4 tree
//! with k = 8 that is 2·9·16 + 3·9·18 = 774; on a 4×8×8 tree with k = 64 about 0.1 M; on
//! an 8×16×8 (1,024-GPU) tree with k = 64 about 0.44 M. The
//! estimate is computed before searching; above [`OptimalConfig::work_budget`] the search is
//! skipped and the plan is proximity-greedy's, flagged `exact: false`. Stack: about `38·G`
//! bytes during a search.
//!
//! # Ties (our choice; their anchor has `opt_lex` and `opt_bestfit`)
//!
//! Among optimal placements, consolidate: fill racks with fewer usable GPUs first (then lower
//! id), use as few machines as the cost allows, give each machine's count to the machine with
//! the fewest usable GPUs that holds it (best fit, then lower id), and take each machine's
//! lowest usable GPUs.
//!
//! # Exact arithmetic
//!
//! Every cost is an integer in weight units ([`CommCost`], [`LinkWeights::integer`]), so
//! two placements tie exactly when their costs are equal, at any bandwidth unit, and the
//! search uses no floating point (none reaches a microcontroller's event path). Only
//! [`optimal_cost`], a report, converts to the caller's unit.

use super::greedy::greedy_pick;
use super::{GpuMask, PlacementView, Placer};
use crate::ids::{GpuId, JobId, MachineId};
use crate::job::{Job, JobSpec};
use crate::sort::heap_sort_by_key;
use crate::time::TimeMs;
use crate::topology::{CommCost, Levels, Topology, closed_form_units};
use core::cmp::Reverse;
use serde::{Deserialize, Serialize};

/// Limits of the exact search.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptimalConfig {
    /// Largest work estimate (see the module docs) the search may take; above it the plan is
    /// proximity-greedy's and says so (`exact: false`).
    pub work_budget: u64,
}

impl Default for OptimalConfig {
    /// 4 M work units: a few milliseconds on a desktop core, far above what a 1,024-GPU
    /// cluster needs for k ≤ 64.
    fn default() -> Self {
        Self {
            work_budget: 4_000_000,
        }
    }
}

/// A whole-job placement and how it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct OptimalPlan<const G: usize> {
    /// The chosen GPUs.
    pub set: GpuMask<G>,
    /// Their communication cost, in exact integer units.
    pub cost: CommCost,
    /// Whether the set is provably optimal (false: the budget was exceeded and the set is
    /// proximity-greedy's).
    pub exact: bool,
    /// The work estimate of the search (0 when trivial).
    pub work: u64,
}

/// The minimum communication cost of placing `k` GPUs on `usable` GPUs, or `None` when
/// fewer than `k` are usable or the search would exceed the default budget (so a `Some` is
/// always the true optimum), in the caller's unit (`f64`, a report). Used to measure other
/// placers' ratio to the optimum. Cost: see the module docs.
pub fn optimal_cost<const G: usize>(
    topology: &Topology<G>,
    usable: &GpuMask<G>,
    k: usize,
) -> Option<f64> {
    optimal_placement(topology, usable, k, &OptimalConfig::default())
        .filter(|p| p.exact)
        .map(|p| set_cost(topology, &p.set))
}

/// A minimum-communication-cost set of `k` GPUs out of `usable` (ties: see the module docs),
/// or `None` when fewer than `k` are usable. Cost: see the module docs.
pub fn optimal_placement<const G: usize>(
    topology: &Topology<G>,
    usable: &GpuMask<G>,
    k: usize,
    config: &OptimalConfig,
) -> Option<OptimalPlan<G>> {
    let search = Search::new(topology, usable);
    let total = search.total_usable;
    if k > total {
        return None;
    }
    if k == 0 || k == total {
        let mut set = GpuMask::none();
        if k == total {
            for g in usable.iter().filter(|&g| topology.contains(g)) {
                set.set(g, true);
            }
        }
        return Some(plan(topology, set, true, 0));
    }
    let work = search.work_estimate(k);
    if work > config.work_budget {
        return Some(plan(topology, greedy_set(topology, usable, k), false, work));
    }
    match search.solve(k) {
        Some(set) => Some(plan(topology, set, true, work)),
        None => Some(plan(topology, greedy_set(topology, usable, k), false, work)),
    }
}

fn plan<const G: usize>(
    topo: &Topology<G>,
    set: GpuMask<G>,
    exact: bool,
    work: u64,
) -> OptimalPlan<G> {
    OptimalPlan {
        cost: set_cost_units(topo, &set),
        set,
        exact,
        work,
    }
}

/// Per-machine and per-rack counts of a mask: (racks used, machines used, GPUs, pairs on
/// one machine). O(G + M).
fn set_counts<const G: usize>(topo: &Topology<G>, set: &GpuMask<G>) -> [u64; 4] {
    let mut per_machine = [0u16; G];
    let mut per_rack = [0u16; G];
    let mut k = 0u64;
    for g in set.iter().filter(|&g| topo.contains(g)) {
        let m = topo.machine_of(g);
        if let Some(n) = per_machine.get_mut(m.index()) {
            *n += 1;
        }
        if let Some(n) = per_rack.get_mut(topo.rack_of_machine(m).index()) {
            *n += 1;
        }
        k += 1;
    }
    let racks = per_rack.iter().filter(|&&n| n > 0).count() as u64;
    let machines = per_machine.iter().filter(|&&n| n > 0).count() as u64;
    let pairs: u64 = per_machine
        .iter()
        .map(|&n| u64::from(n) * u64::from(n.saturating_sub(1)) / 2)
        .sum();
    [racks, machines, k, pairs]
}

/// Cost of a mask in exact integer units, by the closed form. O(G + M).
pub(crate) fn set_cost_units<const G: usize>(topo: &Topology<G>, set: &GpuMask<G>) -> CommCost {
    let [racks, machines, k, pairs] = set_counts(topo, set);
    closed_form_units(topo.weights().integer(), racks, machines, k, pairs)
}

/// Cost of a mask by the closed form in the caller's unit (`f64`, for reports). O(G + M).
pub(crate) fn set_cost<const G: usize>(topo: &Topology<G>, set: &GpuMask<G>) -> f64 {
    let [racks, machines, k, pairs] = set_counts(topo, set);
    let w = topo.weights().reciprocal();
    w.rack_root * racks as f64
        + w.machine_rack * machines as f64
        + w.gpu_machine * k as f64
        + w.gpu_peer * pairs as f64
}

/// Proximity-greedy's k picks, as a fallback plan. O(k·(G + k)).
fn greedy_set<const G: usize>(topo: &Topology<G>, usable: &GpuMask<G>, k: usize) -> GpuMask<G> {
    let job = Job::submitted(JobSpec::new(JobId(0), k as u16), TimeMs(0));
    let mut mask = usable.clone();
    let mut set = GpuMask::none();
    let mut picked: heapless::Vec<GpuId, G> = heapless::Vec::new();
    for _ in 0..k {
        let view = PlacementView {
            topology: topo,
            usable: &mask,
            picked: &picked,
            job: &job,
        };
        let Some(g) = greedy_pick(&view) else { break };
        mask.set(g, false);
        set.set(g, true);
        if picked.push(g).is_err() {
            break;
        }
    }
    set
}

/// The per-search state: usable counts per machine and rack, racks in DP order.
struct Search<'a, const G: usize> {
    topo: &'a Topology<G>,
    usable: &'a GpuMask<G>,
    /// Usable GPUs per machine.
    cap: [u16; G],
    /// Usable GPUs per rack.
    free: [u16; G],
    /// Machines with a usable GPU, per rack.
    machines_with_room: [u16; G],
    /// Racks with a usable GPU, by (free desc, id desc): the DP order. The last one (fewest
    /// free, lowest id) is resolved first in the backward pass and so gets the most GPUs
    /// among equal-cost choices.
    order: [u16; G],
    racks: usize,
    total_usable: usize,
}

impl<'a, const G: usize> Search<'a, G> {
    fn new(topo: &'a Topology<G>, usable: &'a GpuMask<G>) -> Self {
        let mut s = Self {
            topo,
            usable,
            cap: [0; G],
            free: [0; G],
            machines_with_room: [0; G],
            order: [0; G],
            racks: 0,
            total_usable: 0,
        };
        for g in usable.iter().filter(|&g| topo.contains(g)) {
            let m = topo.machine_of(g);
            if let Some(c) = s.cap.get_mut(m.index()) {
                if *c == 0
                    && let Some(n) = s
                        .machines_with_room
                        .get_mut(topo.rack_of_machine(m).index())
                {
                    *n += 1;
                }
                *c += 1;
            }
            if let Some(f) = s.free.get_mut(topo.rack_of_machine(m).index()) {
                *f += 1;
            }
            s.total_usable += 1;
        }
        for (r, &free) in s.free.iter().enumerate().take(topo.rack_count()) {
            if let Some(slot) = s.order.get_mut(s.racks)
                && free > 0
            {
                *slot = r as u16;
                s.racks += 1;
            }
        }
        let free = s.free;
        let order = s.order.get_mut(..s.racks).unwrap_or(&mut []);
        heap_sort_by_key(order, |&r| (Reverse(at(&free, usize::from(r))), Reverse(r)));
        s
    }

    /// The rack at DP position `j`.
    fn rack_at(&self, j: usize) -> u16 {
        at(&self.order, j)
    }

    /// Usable GPUs of the rack at DP position `j`, capped at `k`.
    fn lim(&self, j: usize, k: usize) -> usize {
        usize::from(at(&self.free, usize::from(self.rack_at(j)))).min(k)
    }

    fn work_estimate(&self, k: usize) -> u64 {
        let k1 = k as u64 + 1;
        let mut tables = 0u64;
        let mut cells = 0u64;
        for j in 0..self.racks {
            let m = u64::from(at(&self.machines_with_room, usize::from(self.rack_at(j))));
            tables = tables.saturating_add(k1.saturating_mul(m.saturating_mul(m)));
            cells = cells.saturating_add(self.lim(j, k) as u64 + 1);
        }
        let layers = (self.racks as u64 + 1)
            .saturating_mul(k1)
            .saturating_mul(cells);
        tables.saturating_add(layers)
    }

    /// The usable counts of the rack's machines that have room, largest first.
    fn rack_caps(&self, rack: u16, out: &mut [u16; G]) -> usize {
        let mut n = 0;
        for (m, &cap) in self.cap.iter().enumerate().take(self.topo.machine_count()) {
            let machine = MachineId(m as u16);
            if let Some(slot) = out.get_mut(n)
                && self.topo.rack_of_machine(machine).0 == rack
                && cap > 0
            {
                *slot = cap;
                n += 1;
            }
        }
        heap_sort_by_key(out.get_mut(..n).unwrap_or(&mut []), |&c| Reverse(c));
        n
    }

    /// The optimal set, or `None` if the arithmetic went wrong (never with sane weights).
    fn solve(&self, k: usize) -> Option<GpuMask<G>> {
        let w = *self.topo.weights().integer();
        // best_j(c) for c in 1..=lim_j lives at table[offset[j] + c - 1]; Σ lim ≤ usable ≤ G.
        let mut table = [CommCost::MAX; G];
        let mut offset = [0u16; G];
        let mut caps = [0u16; G];
        let mut fill = [0u16; G];
        let mut next = 0usize;
        for (j, off) in offset.iter_mut().enumerate().take(self.racks) {
            let lim = self.lim(j, k);
            *off = next as u16;
            let n = self.rack_caps(self.rack_at(j), &mut caps);
            let cells = table.get_mut(next..next + lim)?;
            rack_table(&w, caps.get(..n)?, cells, &mut fill);
            next += lim;
        }
        let best = |j: usize, c: usize| -> CommCost {
            if c == 0 {
                CommCost(0)
            } else {
                let first = usize::from(at(&offset, j));
                table.get(first + c - 1).copied().unwrap_or(CommCost::MAX)
            }
        };

        // Backward pass: recompute layer j, choose rack j's count, move on.
        let mut layer_buf = [CommCost::MAX; G];
        let mut tmp = [CommCost::MAX; G];
        self.layer(self.racks, k, &best, &mut layer_buf, &mut tmp);
        let mut target = *layer_buf.get(k)?;
        if target == CommCost::MAX {
            return None;
        }
        let mut choice = [0u16; G];
        let mut c = k;
        for j in (0..self.racks).rev() {
            self.layer(j, k, &best, &mut layer_buf, &mut tmp);
            let lim = self.lim(j, k).min(c);
            let fits = |cr: usize| at(&layer_buf, c - cr).saturating_add(best(j, cr)) <= target;
            let cr = (0..=lim).rev().find(|&cr| fits(cr))?;
            *choice.get_mut(j)? = cr as u16;
            c -= cr;
            target = *layer_buf.get(c)?;
        }
        if c != 0 {
            return None;
        }

        let mut set = GpuMask::none();
        for (j, &cr) in choice.iter().enumerate().take(self.racks) {
            let cr = usize::from(cr);
            if cr > 0 {
                let n = self.rack_caps(self.rack_at(j), &mut caps);
                let t = rack_counts(&w, caps.get(..n)?, cr, best(j, cr), &mut fill)?;
                self.assign(self.rack_at(j), fill.get_mut(..t)?, &mut set)?;
            }
        }
        Some(set)
    }

    /// `out[c]` = min cost of c GPUs on the first `upto` racks of the DP order, c in 0..=k.
    /// O(k · Σ_{j<upto} lim_j).
    fn layer(
        &self,
        upto: usize,
        k: usize,
        best: &impl Fn(usize, usize) -> CommCost,
        out: &mut [CommCost; G],
        tmp: &mut [CommCost; G],
    ) {
        // `k` < usable ≤ G, so `0..=k` is in range; a `k` beyond leaves `out` as it was.
        let Some(row) = out.get_mut(..=k) else {
            return;
        };
        row.fill(CommCost::MAX);
        if let Some(none) = row.first_mut() {
            *none = CommCost(0);
        }
        for j in 0..upto {
            let lim = self.lim(j, k);
            for (c, cell) in tmp.iter_mut().enumerate().take(k + 1) {
                *cell = (0..=lim.min(c))
                    .map(|cr| at(&*out, c - cr).saturating_add(best(j, cr)))
                    .min()
                    .unwrap_or(CommCost::MAX);
            }
            for (o, &t) in out.iter_mut().zip(tmp.iter()).take(k + 1) {
                *o = t;
            }
        }
    }

    /// Gives each count (largest first) to the rack's machine with the fewest usable GPUs
    /// that holds it (then lowest id), and marks that machine's lowest usable GPUs.
    /// O(t·M + k).
    fn assign(&self, rack: u16, counts: &mut [u16], set: &mut GpuMask<G>) -> Option<()> {
        heap_sort_by_key(counts, |&n| Reverse(n));
        let mut taken = [false; G];
        for &n in counts.iter() {
            let m = (0..self.topo.machine_count())
                .filter(|&m| {
                    taken.get(m) == Some(&false)
                        && at(&self.cap, m) >= n
                        && self.topo.rack_of_machine(MachineId(m as u16)).0 == rack
                })
                .min_by_key(|&m| (at(&self.cap, m), m))?;
            *taken.get_mut(m)? = true;
            self.topo
                .gpus_of_machine(MachineId(m as u16))
                .map(GpuId)
                .filter(|&g| self.usable.allows(g))
                .take(usize::from(n))
                .for_each(|g| set.set(g, true));
        }
        Some(())
    }
}

fn rack_cost(w: &Levels<u32>, machines: usize, gpus: usize, pairs: u64) -> CommCost {
    closed_form_units(w, 1, machines as u64, gpus as u64, pairs)
}

/// Adds one GPU to the least-filled of the first `t` machines with room (lowest index on
/// ties); returns the new pairs it creates, or `None` when all are full. O(t).
fn fill_one(caps: &[u16], fill: &mut [u16]) -> Option<u64> {
    let (_, slot) = caps
        .iter()
        .zip(fill.iter_mut())
        .enumerate()
        .filter(|(_, (cap, filled))| **filled < **cap)
        .min_by_key(|(i, (_, filled))| (**filled, *i))
        .map(|(i, (_, filled))| (i, filled))?;
    let pairs = u64::from(*slot);
    *slot += 1;
    Some(pairs)
}

/// `xs[i]`, or the type's default (0, an empty cost) when `i` is out of range: indexing
/// without a panic path. Every caller's index is in range by construction.
fn at<T: Copy + Default>(xs: &[T], i: usize) -> T {
    xs.get(i).copied().unwrap_or_default()
}

/// Fills `cells[c-1]` with the best cost of c GPUs in one rack whose machines have the
/// usable counts `caps` (largest first), for c in 1..=cells.len(). O(len·|caps|²).
fn rack_table<const G: usize>(
    w: &Levels<u32>,
    caps: &[u16],
    cells: &mut [CommCost],
    fill: &mut [u16; G],
) {
    cells.fill(CommCost::MAX);
    let lim = cells.len();
    for t in 1..=caps.len().min(lim) {
        let (Some(fill), Some(caps)) = (fill.get_mut(..t), caps.get(..t)) else {
            break;
        };
        fill.fill(1);
        let mut pairs = 0u64;
        let mut c = t;
        loop {
            if let Some(cell) = cells.get_mut(c - 1) {
                *cell = (*cell).min(rack_cost(w, t, c, pairs));
            }
            if c >= lim {
                break;
            }
            match fill_one(caps, fill) {
                Some(p) => pairs += p,
                None => break,
            }
            c += 1;
        }
    }
}

/// The fewest machines t whose water-filled counts for c GPUs reach `target`; the counts are
/// left in `fill[..t]`. O(|caps|·c·|caps|).
fn rack_counts<const G: usize>(
    w: &Levels<u32>,
    caps: &[u16],
    c: usize,
    target: CommCost,
    fill: &mut [u16; G],
) -> Option<usize> {
    for t in 1..=caps.len().min(c) {
        let (Some(counts), Some(caps)) = (fill.get_mut(..t), caps.get(..t)) else {
            break;
        };
        counts.fill(1);
        let mut pairs = 0u64;
        let mut placed = t;
        while placed < c {
            match fill_one(caps, counts) {
                Some(p) => pairs += p,
                None => break,
            }
            placed += 1;
        }
        if placed == c && rack_cost(w, t, c, pairs) <= target {
            return Some(t);
        }
    }
    None
}

/// Statistics of an [`ExactOptimal`] placer, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptimalStats {
    /// Whole-job searches run.
    pub plans: u32,
    /// Plans that are not proven optimal (budget exceeded or odd weights: greedy instead).
    pub inexact_plans: u32,
    /// Picks made by proximity-greedy because the mask no longer matched the plan (the
    /// usable set changed in the middle of a job, or a pick left the plan).
    pub off_plan_picks: u32,
}

/// Exact-optimal placement behind the sequential [`Placer`] trait: at a job's first pick it
/// computes a minimum-cost set for the whole job ([`optimal_placement`]) on the usable GPUs
/// and then hands out its members, lowest id first. It keeps the plan with everything the
/// plan depends on: the request size and the free set it was computed on
/// (`usable ∪ picked`). Not the job id: a finished job's id may come back with another
/// request on the same free set (issue 16, defect 3). If either differs at a later pick, the
/// rest of the job is placed by proximity-greedy and counted in
/// [`OptimalStats::off_plan_picks`]. Per pick O(G) plus one search per job (module docs).
/// Memory: `2·G` bytes of masks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExactOptimal<const G: usize> {
    config: OptimalConfig,
    plan: Option<Cached<G>>,
    stats: OptimalStats,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Cached<const G: usize> {
    /// GPUs the job asked for.
    gpus: u16,
    /// The free set the plan was computed on.
    base: GpuMask<G>,
    set: GpuMask<G>,
}

impl<const G: usize> Default for ExactOptimal<G> {
    fn default() -> Self {
        Self::new(OptimalConfig::default())
    }
}

impl<const G: usize> ExactOptimal<G> {
    /// A placer with the given search limits.
    pub fn new(config: OptimalConfig) -> Self {
        Self {
            config,
            plan: None,
            stats: OptimalStats::default(),
        }
    }

    /// What it has done so far.
    pub fn stats(&self) -> OptimalStats {
        self.stats
    }
}

impl<const G: usize> Placer<G> for ExactOptimal<G> {
    fn name(&self) -> &'static str {
        "optimal"
    }

    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        let mut base = view.usable.clone();
        for &g in view.picked {
            base.set(g, true);
        }
        let gpus = view.job.gpus();
        let fresh = self
            .plan
            .as_ref()
            .is_some_and(|p| p.gpus == gpus && p.base == base);
        if !fresh {
            if !view.picked.is_empty() {
                self.stats.off_plan_picks = self.stats.off_plan_picks.saturating_add(1);
                return greedy_pick(view);
            }
            let k = usize::from(view.job.gpus());
            let found = optimal_placement(view.topology, view.usable, k, &self.config)?;
            self.stats.plans = self.stats.plans.saturating_add(1);
            if !found.exact {
                self.stats.inexact_plans = self.stats.inexact_plans.saturating_add(1);
            }
            self.plan = Some(Cached {
                gpus,
                base,
                set: found.set,
            });
        }
        let next = self
            .plan
            .as_ref()
            .and_then(|p| p.set.iter().find(|&g| view.usable.allows(g)));
        match next {
            Some(g) => Some(g),
            None => {
                self.stats.off_plan_picks = self.stats.off_plan_picks.saturating_add(1);
                greedy_pick(view)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::placement::ProximityGreedy;
    use crate::placement::test_support::{fresh_mask, place_job, proximity_tree};
    use crate::rng::SeededRng;
    use crate::topology::LinkWeights;
    use std::format;

    fn close(a: f64, b: f64) -> bool {
        libm::fabs(a - b) < 1e-9
    }

    #[test]
    fn empty_proximity_tree_optimum_per_k() {
        // The true per-k minima on an empty cluster (anchor results.md, quirk 1).
        let topo = proximity_tree();
        let mask = fresh_mask(&topo);
        let want = [0.775, 0.825, 0.9, 1.0, 1.225, 1.3, 1.4, 1.5];
        for (i, &w) in want.iter().enumerate() {
            let k = i + 1;
            let p = optimal_placement(&topo, &mask, k, &OptimalConfig::default()).unwrap();
            assert!(p.exact);
            assert!(
                close(set_cost(&topo, &p.set), w),
                "k {k}: {:?} vs {w}",
                p.cost
            );
            // One integer unit is 0.025 on Proximity-DRL's tree.
            assert_eq!(p.cost, CommCost((w / 0.025 + 0.5) as u64), "k {k}");
            assert_eq!(p.set.count(), k);
            assert!(close(optimal_cost(&topo, &mask, k).unwrap(), w));
        }
        // k = 5 is 3 + 2 on one rack, consolidated on the lowest machines.
        let p = optimal_placement(&topo, &mask, 5, &OptimalConfig::default()).unwrap();
        let got: heapless::Vec<u16, 8> = p.set.iter().map(|g| g.0).collect();
        assert_eq!(got.as_slice(), &[0, 1, 2, 4, 5]);
        // The whole cluster, and nothing.
        assert!(close(
            optimal_cost(&topo, &mask, 32).unwrap(),
            topo.comm_cost(&all(32))
        ));
        assert_eq!(optimal_cost(&topo, &mask, 0), Some(0.0));
        assert_eq!(optimal_cost(&topo, &mask, 33), None);
    }

    fn all(n: u16) -> heapless::Vec<GpuId, 32> {
        (0..n).map(GpuId).collect()
    }

    /// Brute force over every subset of the usable GPUs: per size k, the least real (`f64`)
    /// cost and the least integer cost. O(2^G · G²).
    fn brute<const G: usize>(
        topo: &Topology<G>,
        usable: &GpuMask<G>,
    ) -> std::vec::Vec<(f64, CommCost)> {
        let n = topo.gpu_count();
        let mut best = std::vec![(f64::INFINITY, CommCost::MAX); n + 1];
        best[0] = (0.0, CommCost(0));
        for bits in 1u32..(1 << n) {
            if (0..n).any(|g| bits & (1 << g) != 0 && !usable.allows(GpuId(g as u16))) {
                continue;
            }
            let set: heapless::Vec<GpuId, G> = (0..n as u16)
                .filter(|&g| bits & (1 << g) != 0)
                .map(GpuId)
                .collect();
            let Some(b) = best.get_mut(set.len()) else {
                continue;
            };
            b.0 = b.0.min(topo.comm_cost(&set));
            b.1 = b.1.min(topo.comm_cost_units(&set));
        }
        best
    }

    fn random_mask<const G: usize>(topo: &Topology<G>, rng: &mut SeededRng) -> GpuMask<G> {
        let mut mask = GpuMask::none();
        let density = 1 + rng.below(4); // keep 1/4 .. 4/4 of the GPUs on average
        for g in 0..topo.gpu_count() as u16 {
            mask.set(GpuId(g), rng.below(4) < density);
        }
        mask
    }

    fn check_against_brute<const G: usize>(topo: &Topology<G>, seed: u64, rounds: usize) {
        let mut rng = SeededRng::new(seed);
        for _ in 0..rounds {
            let mask = random_mask(topo, &mut rng);
            let want = brute(topo, &mask);
            for k in 0..=mask.count() {
                let got = optimal_placement(topo, &mask, k, &OptimalConfig::default());
                let got = got.expect("k ≤ usable");
                assert!(got.exact);
                assert_eq!(got.set.count(), k);
                assert!(got.set.iter().all(|g| mask.allows(g)));
                assert_eq!(got.cost, want[k].1, "mask {mask:?} k {k}");
                let real = set_cost(topo, &got.set);
                assert!(
                    close(real, want[k].0),
                    "mask {mask:?} k {k}: {real} vs {want:?}"
                );
            }
        }
    }

    #[test]
    fn matches_brute_force_on_2x2x2() {
        let topo = Topology::<8>::uniform(2, 2, 2, LinkWeights::PROXIMITY_DRL).unwrap();
        check_against_brute(&topo, 1, 60);
    }

    #[test]
    fn matches_brute_force_on_heterogeneous_tree() {
        // 3 racks; machines of 1..4 GPUs; weights where a peer link is costly, so spreading
        // inside a rack can beat packing.
        let mut topo: Topology<12> =
            Topology::new(LinkWeights::from_bandwidths(8.0, 40.0, 16.0, 2.0).unwrap());
        topo.add_rack().unwrap();
        topo.add_machine(4, 1000).unwrap();
        topo.add_machine(1, 1000).unwrap();
        topo.add_rack().unwrap();
        topo.add_machine(3, 1000).unwrap();
        topo.add_machine(2, 1000).unwrap();
        topo.add_rack().unwrap();
        topo.add_machine(2, 1000).unwrap();
        check_against_brute(&topo, 2, 40);
        // And with Proximity-DRL's weights on the same shape.
        let mut t2: Topology<12> = Topology::new(LinkWeights::PROXIMITY_DRL);
        for (rack, gpus) in [(true, 4), (false, 1), (true, 3), (false, 2), (true, 2)] {
            if rack {
                t2.add_rack().unwrap();
            }
            t2.add_machine(gpus, 1000).unwrap();
        }
        check_against_brute(&t2, 3, 40);
    }

    /// Count-vector brute force for the 32-GPU tree: every n_m in 0..=usable_m.
    fn brute_counts(topo: &Topology<32>, mask: &GpuMask<32>, k: usize) -> Option<f64> {
        let caps: [u32; 8] = core::array::from_fn(|m| {
            topo.gpus_of_machine(MachineId(m as u16))
                .filter(|&g| mask.allows(GpuId(g)))
                .count() as u32
        });
        let mut best: Option<f64> = None;
        let mut n = [0u32; 8];
        loop {
            if n.iter().sum::<u32>() as usize == k {
                let racks = (0..2)
                    .filter(|r| n[r * 4..r * 4 + 4].iter().any(|&x| x > 0))
                    .count();
                let machines = n.iter().filter(|&&x| x > 0).count();
                let pairs: u32 = n.iter().map(|&x| x * x.saturating_sub(1) / 2).sum();
                let c = 0.5 * racks as f64
                    + 0.25 * machines as f64
                    + 0.025 * k as f64
                    + 0.025 * f64::from(pairs);
                best = Some(best.map_or(c, |b: f64| b.min(c)));
            }
            // Odometer over n[m] in 0..=caps[m].
            let mut m = 0;
            loop {
                if m == 8 {
                    return best;
                }
                if n[m] < caps[m] {
                    n[m] += 1;
                    break;
                }
                n[m] = 0;
                m += 1;
            }
        }
    }

    #[test]
    fn matches_count_brute_force_and_beats_greedy_on_proximity_tree() {
        let topo = proximity_tree();
        let mut rng = SeededRng::new(11);
        for _ in 0..40 {
            let mask = random_mask(&topo, &mut rng);
            for k in 1..=mask.count().min(8) {
                let opt = optimal_cost(&topo, &mask, k).unwrap();
                let want = brute_counts(&topo, &mask, k).unwrap();
                assert!(close(opt, want), "k {k}: {opt} vs {want}");
                let greedy = place_job(&mut ProximityGreedy, &topo, &mask, k as u16);
                assert!(opt <= topo.comm_cost(&greedy) + 1e-9);
                let mut placer = ExactOptimal::<32>::default();
                let got = place_job(&mut placer, &topo, &mask, k as u16);
                assert!(close(topo.comm_cost(&got), opt));
                assert_eq!(placer.stats().plans, 1);
                assert_eq!(placer.stats().off_plan_picks, 0);
            }
        }
    }

    #[test]
    fn large_trees_stay_exact_and_never_lose_to_greedy() {
        fn check<const G: usize>(topo: &Topology<G>, seed: u64, ks: &[usize]) {
            let mut rng = SeededRng::new(seed);
            for _ in 0..4 {
                let mask = random_mask(topo, &mut rng);
                for &k in ks.iter().filter(|&&k| k <= mask.count()) {
                    let p = optimal_placement(topo, &mask, k, &OptimalConfig::default()).unwrap();
                    assert!(p.exact, "k {k}: work {}", p.work);
                    assert_eq!(p.set.count(), k);
                    assert!(p.set.iter().all(|g| mask.allows(g)));
                    let greedy = greedy_set(topo, &mask, k);
                    assert!(p.cost <= set_cost_units(topo, &greedy), "k {k}");
                    let ids: heapless::Vec<GpuId, G> = p.set.iter().collect();
                    assert_eq!(p.cost, topo.comm_cost_units(&ids));
                    assert!(close(set_cost(topo, &p.set), topo.comm_cost(&ids)));
                }
            }
        }
        let t256 = Topology::<256>::uniform(4, 8, 8, LinkWeights::PROXIMITY_DRL).unwrap();
        check(&t256, 21, &[1, 2, 5, 9, 16, 33, 64]);
        let t1024 = Topology::<1024>::uniform(8, 16, 8, LinkWeights::PROXIMITY_DRL).unwrap();
        check(&t1024, 22, &[3, 8, 64]);
        let full = fresh_mask(&t1024);
        let p = optimal_placement(&t1024, &full, 64, &OptimalConfig::default()).unwrap();
        assert!(p.work < 500_000, "work {}", p.work);
    }

    #[test]
    fn consolidates_on_ties() {
        let topo = proximity_tree();
        let mut mask = fresh_mask(&topo);
        // Rack 1 has fewer free GPUs; its machine 4 has exactly 2 free.
        for g in [16u16, 17, 20, 21, 22] {
            mask.set(GpuId(g), false);
        }
        let p = optimal_placement(&topo, &mask, 2, &OptimalConfig::default()).unwrap();
        let got: heapless::Vec<u16, 2> = p.set.iter().map(|g| g.0).collect();
        assert_eq!(got.as_slice(), &[18, 19]);
    }

    #[test]
    fn over_budget_falls_back_to_greedy_and_says_so() {
        let topo = proximity_tree();
        let mask = fresh_mask(&topo);
        let tiny = OptimalConfig { work_budget: 10 };
        let p = optimal_placement(&topo, &mask, 5, &tiny).unwrap();
        assert!(!p.exact);
        assert!(p.work > 10);
        assert!(close(set_cost(&topo, &p.set), 1.275)); // greedy's 4 + 1
        let mut placer = ExactOptimal::<32>::new(tiny);
        place_job(&mut placer, &topo, &mask, 5);
        assert_eq!(placer.stats().inexact_plans, 1);
    }

    #[test]
    fn replans_when_the_mask_changes_mid_job() {
        let topo = proximity_tree();
        let mask = fresh_mask(&topo);
        let job = crate::placement::test_support::view_job(4);
        let mut placer = ExactOptimal::<32>::default();
        let first = placer
            .pick(&PlacementView {
                topology: &topo,
                usable: &mask,
                picked: &[],
                job: &job,
            })
            .unwrap();
        assert_eq!(first, GpuId(0));
        // GPU 1 (in the plan) failed meanwhile: greedy takes over, the pick stays usable.
        let mut m2 = mask.clone();
        m2.set(GpuId(0), false);
        m2.set(GpuId(1), false);
        let next = placer
            .pick(&PlacementView {
                topology: &topo,
                usable: &m2,
                picked: &[GpuId(0)],
                job: &job,
            })
            .unwrap();
        assert!(m2.allows(next));
        assert_eq!(next, GpuId(2));
        assert_eq!(placer.stats().off_plan_picks, 1);
    }

    /// Issue 16, defect 2: with bandwidths in bytes/s the link weights are ~1e-9, and an
    /// absolute tie tolerance of 1e-9 made every placement "optimal" (main picked [0, 1, 4],
    /// cost 1.17e-9, over [0, 4, 8], 2.05e-10). Integer costs pick the same set at any unit.
    #[test]
    fn bandwidth_unit_does_not_change_the_optimum() {
        let mut sets = heapless::Vec::<[heapless::Vec<GpuId, 16>; 2], 4>::new();
        for scale in [1e9, 1.0, 1e-3, 1e12] {
            let weights =
                LinkWeights::from_bandwidths(1.0 * scale, 73.0 * scale, 27.0 * scale, 19.0 * scale)
                    .unwrap();
            let topo = Topology::<16>::uniform(1, 4, 4, weights).unwrap();
            let mask = fresh_mask(&topo);
            let p = optimal_placement(&topo, &mask, 3, &OptimalConfig::default()).unwrap();
            let got: heapless::Vec<GpuId, 16> = p.set.iter().collect();
            assert_eq!(
                got.as_slice(),
                &[GpuId(0), GpuId(4), GpuId(8)],
                "scale {scale}"
            );
            let spread = topo.comm_cost(&got);
            let packed = topo.comm_cost(&[GpuId(0), GpuId(1), GpuId(4)]);
            assert!(spread < packed / 5.0, "scale {scale}: {spread} vs {packed}");
            let mut exact = ExactOptimal::<16>::default();
            let placed = place_job(&mut exact, &topo, &mask, 3);
            let greedy = place_job(&mut ProximityGreedy, &topo, &mask, 3);
            sets.push([
                placed.iter().copied().collect(),
                greedy.iter().copied().collect(),
            ])
            .unwrap();
        }
        assert!(sets.iter().all(|s| *s == sets[0]), "{sets:?}");
    }

    /// Issue 16, defect 2, as a property: on random small trees with random bandwidths,
    /// at six units from 1e-9 to 1e12, the exact placer's set has the least integer cost
    /// (brute force over every subset), the least real cost to a relative 1e-12, and is the
    /// same set at every unit, as are proximity-greedy's picks.
    #[test]
    fn optimal_at_every_bandwidth_unit_on_random_trees() {
        const SCALES: [f64; 6] = [1e-9, 1e-3, 1.0, 1e3, 1e9, 1e12];
        let mut rng = SeededRng::new(16);
        for tree in 0..24 {
            // Bandwidths 1..=100, a third of them with one decimal.
            let bandwidths: [f64; 4] = core::array::from_fn(|_| {
                let b = f64::from(1 + rng.below(100));
                if rng.below(3) == 0 { b / 10.0 } else { b }
            });
            let mut shape = heapless::Vec::<(bool, u16), 10>::new();
            let mut gpus = 0;
            while gpus < 10 {
                let size = (1 + rng.below(4) as u16).min(10 - gpus);
                let new_rack = shape.is_empty() || rng.below(2) == 0;
                shape.push((new_rack, size)).unwrap();
                gpus += size;
                if rng.below(4) == 0 {
                    break;
                }
            }
            let mask_seed = rng.next_u64();
            let mut first: Option<heapless::Vec<heapless::Vec<GpuId, 10>, 64>> = None;
            for scale in SCALES {
                let b = bandwidths.map(|x| x * scale);
                let weights = LinkWeights::from_bandwidths(b[0], b[1], b[2], b[3]).unwrap();
                let mut topo = Topology::<10>::new(weights);
                for &(new_rack, size) in &shape {
                    if new_rack {
                        topo.add_rack().unwrap();
                    }
                    topo.add_machine(size, 1000).unwrap();
                }
                let mut masks = SeededRng::new(mask_seed);
                let mut chosen = heapless::Vec::<heapless::Vec<GpuId, 10>, 64>::new();
                for _ in 0..3 {
                    let mask = random_mask(&topo, &mut masks);
                    let want = brute(&topo, &mask);
                    let usable = want.iter().enumerate().take(mask.count() + 1);
                    for (k, &(least_real, least_units)) in usable.skip(1) {
                        let p =
                            optimal_placement(&topo, &mask, k, &OptimalConfig::default()).unwrap();
                        let ctx = || format!("tree {tree} {b:?} mask {mask:?} k {k}");
                        assert!(p.exact, "{}", ctx());
                        assert_eq!(p.cost, least_units, "{}", ctx());
                        let real = set_cost(&topo, &p.set);
                        assert!(real <= least_real * (1.0 + 1e-12), "{}: {real}", ctx());
                        chosen.push(p.set.iter().collect()).unwrap();
                        let greedy = place_job(&mut ProximityGreedy, &topo, &mask, k as u16);
                        chosen.push(greedy.iter().copied().collect()).unwrap();
                    }
                }
                match &first {
                    None => first = Some(chosen),
                    Some(f) => assert_eq!(*f, chosen, "tree {tree} scale {scale}"),
                }
            }
        }
    }

    /// Issue 16, defect 3: the cached plan was keyed on the job id and the free set, so a
    /// new job reusing a finished job's id on the same free set got the old job's plan
    /// (main: [0, 1, 2] at cost 1.1 instead of [1, 2, 3] at 0.9, 2 off-plan picks).
    #[test]
    fn a_reused_job_id_gets_its_own_plan() {
        let mut topo = Topology::<4>::new(LinkWeights::PROXIMITY_DRL);
        topo.add_rack().unwrap();
        topo.add_machine(1, 1000).unwrap();
        topo.add_machine(3, 1000).unwrap();
        let mask = fresh_mask(&topo);
        let mut placer = ExactOptimal::<4>::default();
        // place_job always submits JobId(1): job 1 (1 GPU) runs, finishes, a new job 1
        // (3 GPUs) sees the same free set.
        assert_eq!(
            place_job(&mut placer, &topo, &mask, 1).as_slice(),
            &[GpuId(0)]
        );
        let second = place_job(&mut placer, &topo, &mask, 3);
        assert_eq!(second.as_slice(), &[GpuId(1), GpuId(2), GpuId(3)]);
        assert!(close(topo.comm_cost(&second), 0.9));
        assert_eq!(placer.stats().off_plan_picks, 0);
        assert_eq!(placer.stats().plans, 2);
    }
}
