//! The cluster's shape: a tree root → racks → machines → GPUs, with one link weight per level
//! and a speed per GPU, and the communication cost of a set of GPUs on that tree.
//!
//! # Communication cost (Proximity-DRL, Deng et al. 2024, and their public code)
//!
//! A job's gang of GPUs exchanges gradients along the tree. Its cost is the summed weight
//! (weight = 1 / bandwidth) of the union of tree edges on the paths from the root to every
//! chosen GPU, plus the direct intra-machine GPU↔GPU links among the chosen GPUs:
//!
//! ```text
//! cost(S) = w_rack·#racks(S) + w_machine·#machines(S) + w_gpu·|S| + w_peer·Σ_m C(n_m, 2)
//! ```
//!
//! where `n_m` is the number of chosen GPUs on machine `m`, `w_rack` weighs a rack↔root edge,
//! `w_machine` a machine↔rack edge, `w_gpu` a GPU↔machine edge and `w_peer` a GPU↔GPU link
//! inside one machine. The formula holds for any tree shape (racks of different sizes,
//! machines with different GPU counts). On their default tree (2 racks × 4 machines × 4 GPUs,
//! NVLink 40, machine↔rack 4, rack↔root 2) it is
//! `0.5·#racks + 0.25·#machines + 0.025·k + 0.025·Σ_m C(n_m, 2)`.

use crate::ids::{GpuId, MachineId, RackId};
use serde::{Deserialize, Serialize};

/// One value per level of the tree, from the GPU's own links up to the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Levels<T> {
    /// A direct GPU↔GPU link inside one machine (NVLink).
    pub gpu_peer: T,
    /// A GPU's link to its machine (PCIe / NVSwitch uplink).
    pub gpu_machine: T,
    /// A machine's link to its rack switch.
    pub machine_rack: T,
    /// A rack's link to the root (spine).
    pub rack_root: T,
}

/// A communication cost in integer weight units ([`LinkWeights::integer`]): what the
/// placers compare. Integers make every comparison exact whatever unit the bandwidths were
/// given in (issue 16, defect 2: an absolute epsilon on `f64` costs called a placement 7×
/// the optimum "exact" when the bandwidths were in bytes/s), and keep soft-float `f64` off
/// a microcontroller's event path. The closed form with weights ≤ `u32::MAX` and at most
/// 65,535 GPUs stays below 2^64, and every sum saturates anyway.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CommCost(pub u64);

impl CommCost {
    /// No placement: sorts after every real cost (the exact search's "infinity").
    pub const MAX: CommCost = CommCost(u64::MAX);

    /// `self + other`, saturating at [`CommCost::MAX`].
    pub const fn saturating_add(self, other: CommCost) -> CommCost {
        CommCost(self.0.saturating_add(other.0))
    }

    /// The cost of `count` links of integer weight `weight`, saturating.
    pub const fn of_links(weight: u32, count: u64) -> CommCost {
        CommCost((weight as u64).saturating_mul(count))
    }
}

/// Link weights (1 / bandwidth) for each level of the tree, kept twice:
///
/// - [`reciprocal`](Self::reciprocal): `1 / bandwidth` in the caller's unit, as `f64`, for
///   reports ([`Topology::comm_cost`], the simulator's speed model, Proximity-DRL's reward);
/// - [`integer`](Self::integer): integers with the same ratios, for decisions
///   ([`Topology::comm_cost_units`], every placer). Only ratios matter to a placement, so
///   bandwidths in bytes/s and in GB/s give the same integers and the same decisions.
///
/// [`from_bandwidths`](Self::from_bandwidths) finds the integers exactly (the smallest
/// integer vector proportional to the reciprocals) when every bandwidth is a decimal with at
/// most 9 fractional digits at some common scale and that vector stays within 2^24;
/// otherwise it rounds each weight to 24 bits relative to the heaviest one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkWeights {
    reciprocal: Levels<f64>,
    integer: Levels<u32>,
}

/// Largest integer weight [`LinkWeights::from_bandwidths`] produces (2^24).
pub const INTEGER_WEIGHT_LIMIT: u32 = 1 << 24;

impl LinkWeights {
    /// Proximity-DRL's tree: NVLink 40 inside a machine, 4 machine↔rack, 2 rack↔root
    /// (integer weights 1, 1, 10, 20).
    pub const PROXIMITY_DRL: LinkWeights = match LinkWeights::from_bandwidths(40.0, 40.0, 4.0, 2.0)
    {
        Ok(w) => w,
        Err(_) => panic!("Proximity-DRL's bandwidths are positive"),
    };

    /// Weights as reciprocals of per-level bandwidths, in any consistent unit (GB/s, bytes/s).
    /// A bandwidth that is not positive and finite is refused
    /// ([`TopologyError::BadBandwidth`]). `const`: a firmware evaluates it at compile time,
    /// so no floating point reaches the device.
    pub const fn from_bandwidths(
        gpu_peer: f64,
        gpu_machine: f64,
        machine_rack: f64,
        rack_root: f64,
    ) -> Result<LinkWeights, TopologyError> {
        let bandwidths = [gpu_peer, gpu_machine, machine_rack, rack_root];
        let mut i = 0;
        while i < 4 {
            // NaN fails both comparisons.
            if !(bandwidths[i] > 0.0 && bandwidths[i] <= f64::MAX) {
                return Err(TopologyError::BadBandwidth { level: i as u8 });
            }
            i += 1;
        }
        let integer = match exact_integer_weights(&bandwidths) {
            Some(w) => w,
            None => rounded_integer_weights(&bandwidths),
        };
        Ok(LinkWeights {
            reciprocal: Levels {
                gpu_peer: 1.0 / gpu_peer,
                gpu_machine: 1.0 / gpu_machine,
                machine_rack: 1.0 / machine_rack,
                rack_root: 1.0 / rack_root,
            },
            integer: levels_from_array(integer),
        })
    }

    /// Weights given directly as integers (a firmware that wants no floating point at all);
    /// the reported (`f64`) cost of a placement is then its integer cost.
    pub const fn from_integer_weights(weights: Levels<u32>) -> LinkWeights {
        LinkWeights {
            reciprocal: Levels {
                gpu_peer: weights.gpu_peer as f64,
                gpu_machine: weights.gpu_machine as f64,
                machine_rack: weights.machine_rack as f64,
                rack_root: weights.rack_root as f64,
            },
            integer: weights,
        }
    }

    /// `1 / bandwidth` per level, in the caller's unit: for reports, never for decisions.
    pub const fn reciprocal(&self) -> &Levels<f64> {
        &self.reciprocal
    }

    /// Integer weights with the same ratios: what every placer compares.
    pub const fn integer(&self) -> &Levels<u32> {
        &self.integer
    }
}

const fn levels_from_array(w: [u32; 4]) -> Levels<u32> {
    Levels {
        gpu_peer: w[0],
        gpu_machine: w[1],
        machine_rack: w[2],
        rack_root: w[3],
    }
}

/// `x` as an integer if it is one to within 2^-40 relative (so `0.3 × 10` counts as 3), and
/// at most 2^53.
const fn as_integer(x: f64) -> Option<u64> {
    if !(x >= 0.5 && x <= 9_007_199_254_740_992.0) {
        return None;
    }
    let rounded = (x + 0.5) as u64;
    let diff = x - rounded as f64;
    let diff = if diff < 0.0 { -diff } else { diff };
    if diff <= x * (1.0 / 1_099_511_627_776.0) {
        Some(rounded)
    } else {
        None
    }
}

const fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// The smallest integers proportional to `1 / bandwidth`: scale the bandwidths by 10^d until
/// all are integers `B_i`, then `W_i = lcm(B) / B_i` divided by their gcd. `None` when no
/// d ≤ 9 makes them integers or a weight would exceed [`INTEGER_WEIGHT_LIMIT`].
const fn exact_integer_weights(bandwidths: &[f64; 4]) -> Option<[u32; 4]> {
    let mut scale = 1.0;
    let mut digits = 0;
    while digits <= 9 {
        let mut ints = [0u128; 4];
        let mut all = true;
        let mut i = 0;
        while i < 4 {
            match as_integer(bandwidths[i] * scale) {
                Some(b) => ints[i] = b as u128,
                None => all = false,
            }
            i += 1;
        }
        if all {
            return primitive_reciprocals(ints);
        }
        scale *= 10.0;
        digits += 1;
    }
    None
}

const fn primitive_reciprocals(ints: [u128; 4]) -> Option<[u32; 4]> {
    let mut lcm: u128 = 1;
    let mut i = 0;
    while i < 4 {
        let g = gcd(lcm, ints[i]);
        lcm = match (lcm / g).checked_mul(ints[i]) {
            Some(l) => l,
            None => return None,
        };
        i += 1;
    }
    let mut w = [0u128; 4];
    let mut common = 0u128;
    i = 0;
    while i < 4 {
        w[i] = lcm / ints[i];
        common = gcd(common, w[i]);
        i += 1;
    }
    let mut out = [0u32; 4];
    i = 0;
    while i < 4 {
        let v = w[i] / common;
        if v > INTEGER_WEIGHT_LIMIT as u128 {
            return None;
        }
        out[i] = v as u32;
        i += 1;
    }
    Some(out)
}

/// `round(2^24 · min(B) / B_i)`, at least 1: each weight to 24 bits relative to the heaviest.
const fn rounded_integer_weights(bandwidths: &[f64; 4]) -> [u32; 4] {
    let mut min = bandwidths[0];
    let mut i = 1;
    while i < 4 {
        if bandwidths[i] < min {
            min = bandwidths[i];
        }
        i += 1;
    }
    let mut out = [0u32; 4];
    i = 0;
    while i < 4 {
        let w = (INTEGER_WEIGHT_LIMIT as f64 * (min / bandwidths[i]) + 0.5) as u32;
        out[i] = if w == 0 { 1 } else { w };
        i += 1;
    }
    out
}

/// Why a topology could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum TopologyError {
    /// More GPUs than the capacity `G`.
    TooManyGpus {
        /// The capacity.
        capacity: usize,
    },
    /// A machine was added before any rack.
    NoRack,
    /// A machine with zero GPUs.
    EmptyMachine,
    /// A GPU speed of zero (it would never finish anything).
    ZeroSpeed,
    /// A link bandwidth that is not positive and finite (`level`: 0 GPU↔GPU, 1 GPU↔machine,
    /// 2 machine↔rack, 3 rack↔root).
    BadBandwidth {
        /// Which level.
        level: u8,
    },
}

impl core::fmt::Display for TopologyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TopologyError::TooManyGpus { capacity } => {
                write!(f, "topology has more GPUs than its capacity {capacity}")
            }
            TopologyError::NoRack => write!(f, "a machine was added before any rack"),
            TopologyError::EmptyMachine => write!(f, "a machine must have at least one GPU"),
            TopologyError::ZeroSpeed => write!(f, "a GPU speed must be positive"),
            TopologyError::BadBandwidth { level } => write!(
                f,
                "link bandwidth of level {level} (0 GPU-GPU, 1 GPU-machine, 2 machine-rack, 3 rack-root) must be positive and finite"
            ),
        }
    }
}

impl core::error::Error for TopologyError {}

/// Relative speed of the reference GPU, in per-mille: a GPU of speed 2000 computes twice as
/// fast as one of speed 1000.
pub const REFERENCE_SPEED_PERMILLE: u16 = 1000;

/// A tree of racks, machines and GPUs with up to `G` GPUs (and so at most `G` machines and
/// racks). GPUs are numbered contiguously machine by machine, machines rack by rack, so a
/// machine's GPUs are one index range. Memory: about `10·G` bytes, inline.
#[derive(Clone, Debug)]
pub struct Topology<const G: usize> {
    weights: LinkWeights,
    gpu_count: u16,
    machine_count: u16,
    rack_count: u16,
    machine_of_gpu: [u16; G],
    speed_of_gpu: [u16; G],
    rack_of_machine: [u16; G],
    first_gpu_of_machine: [u16; G],
    gpus_in_machine: [u16; G],
}

impl<const G: usize> Topology<G> {
    const CAPACITY_FITS_U16: () = assert!(G > 0 && G <= u16::MAX as usize, "G must be 1..=65535");

    /// An empty tree with the given link weights; add racks and machines next.
    pub fn new(weights: LinkWeights) -> Self {
        let () = Self::CAPACITY_FITS_U16;
        Self {
            weights,
            gpu_count: 0,
            machine_count: 0,
            rack_count: 0,
            machine_of_gpu: [0; G],
            speed_of_gpu: [0; G],
            rack_of_machine: [0; G],
            first_gpu_of_machine: [0; G],
            gpus_in_machine: [0; G],
        }
    }

    /// A regular tree: `racks × machines_per_rack × gpus_per_machine`, all GPUs of reference
    /// speed.
    pub fn uniform(
        racks: u16,
        machines_per_rack: u16,
        gpus_per_machine: u16,
        weights: LinkWeights,
    ) -> Result<Self, TopologyError> {
        let mut topo = Self::new(weights);
        for _ in 0..racks {
            topo.add_rack()?;
            for _ in 0..machines_per_rack {
                topo.add_machine(gpus_per_machine, REFERENCE_SPEED_PERMILLE)?;
            }
        }
        Ok(topo)
    }

    /// Opens a new rack; following machines belong to it.
    pub fn add_rack(&mut self) -> Result<RackId, TopologyError> {
        if usize::from(self.rack_count) >= G {
            return Err(TopologyError::TooManyGpus { capacity: G });
        }
        self.rack_count += 1;
        Ok(RackId(self.rack_count - 1))
    }

    /// Adds a machine with `gpus` GPUs of `speed_permille` to the last rack.
    pub fn add_machine(
        &mut self,
        gpus: u16,
        speed_permille: u16,
    ) -> Result<MachineId, TopologyError> {
        if self.rack_count == 0 {
            return Err(TopologyError::NoRack);
        }
        if gpus == 0 {
            return Err(TopologyError::EmptyMachine);
        }
        if speed_permille == 0 {
            return Err(TopologyError::ZeroSpeed);
        }
        let first = usize::from(self.gpu_count);
        let end = first + usize::from(gpus);
        if end > G || usize::from(self.machine_count) >= G {
            return Err(TopologyError::TooManyGpus { capacity: G });
        }
        let m = usize::from(self.machine_count);
        self.rack_of_machine[m] = self.rack_count - 1;
        self.first_gpu_of_machine[m] = self.gpu_count;
        self.gpus_in_machine[m] = gpus;
        for g in first..end {
            self.machine_of_gpu[g] = self.machine_count;
            self.speed_of_gpu[g] = speed_permille;
        }
        self.gpu_count += gpus;
        self.machine_count += 1;
        Ok(MachineId(self.machine_count - 1))
    }

    /// Number of GPUs.
    pub fn gpu_count(&self) -> usize {
        usize::from(self.gpu_count)
    }

    /// Number of machines.
    pub fn machine_count(&self) -> usize {
        usize::from(self.machine_count)
    }

    /// Number of racks.
    pub fn rack_count(&self) -> usize {
        usize::from(self.rack_count)
    }

    /// The link weights.
    pub fn weights(&self) -> &LinkWeights {
        &self.weights
    }

    /// The machine a GPU sits in. `gpu` must be below [`gpu_count`](Self::gpu_count).
    pub fn machine_of(&self, gpu: GpuId) -> MachineId {
        MachineId(self.machine_of_gpu[gpu.index() % G])
    }

    /// The rack a machine sits in.
    pub fn rack_of_machine(&self, machine: MachineId) -> RackId {
        RackId(self.rack_of_machine[machine.index() % G])
    }

    /// The rack a GPU sits in.
    pub fn rack_of(&self, gpu: GpuId) -> RackId {
        self.rack_of_machine(self.machine_of(gpu))
    }

    /// The GPUs of a machine, as an index range.
    pub fn gpus_of_machine(&self, machine: MachineId) -> core::ops::Range<u16> {
        let m = machine.index() % G;
        let first = self.first_gpu_of_machine[m];
        first..first + self.gpus_in_machine[m]
    }

    /// Relative speed of a GPU, per-mille of the reference GPU.
    pub fn speed_permille(&self, gpu: GpuId) -> u16 {
        self.speed_of_gpu[gpu.index() % G]
    }

    /// Whether `gpu` names a GPU of this tree.
    pub fn contains(&self, gpu: GpuId) -> bool {
        gpu.0 < self.gpu_count
    }

    /// The cost `gpu` adds to a set that already holds `picked` (which must not contain it),
    /// in the caller's unit (`f64`, for reports): its GPU↔machine edge, a peer link to every
    /// picked GPU on its machine, and its machine↔rack and rack↔root edges when those are
    /// new to the set. O(|picked|).
    pub fn added_cost(&self, picked: &[GpuId], gpu: GpuId) -> f64 {
        let machine = self.machine_of(gpu);
        let rack = self.rack_of_machine(machine);
        let mut peers_on_machine = 0u32;
        let mut rack_used = false;
        for &p in picked {
            let pm = self.machine_of(p);
            if pm == machine {
                peers_on_machine += 1;
            }
            if self.rack_of_machine(pm) == rack {
                rack_used = true;
            }
        }
        let w = self.weights.reciprocal();
        let mut cost = w.gpu_machine + w.gpu_peer * f64::from(peers_on_machine);
        if peers_on_machine == 0 {
            cost += w.machine_rack;
        }
        if !rack_used {
            cost += w.rack_root;
        }
        cost
    }

    /// What `gpu` adds to `picked`, as [`added_cost`](Self::added_cost), in exact integer
    /// weight units (what placers compare). O(|picked|).
    pub fn added_cost_units(&self, picked: &[GpuId], gpu: GpuId) -> CommCost {
        let machine = self.machine_of(gpu);
        let rack = self.rack_of_machine(machine);
        let peers = picked
            .iter()
            .filter(|&&p| self.machine_of(p) == machine)
            .count();
        let rack_used = picked.iter().any(|&p| self.rack_of(p) == rack);
        added_units(self.weights.integer(), peers as u64, rack_used)
    }

    /// The cost of a GPU set in exact integer weight units (duplicates counted once).
    /// O(|gpus|²).
    pub fn comm_cost_units(&self, gpus: &[GpuId]) -> CommCost {
        let mut cost = CommCost(0);
        for (i, &g) in gpus.iter().enumerate() {
            if gpus[..i].contains(&g) {
                continue;
            }
            cost = cost.saturating_add(self.added_cost_units(&gpus[..i], g));
        }
        cost
    }

    /// The communication cost of a GPU set (see the module docs) in the caller's unit, for
    /// reports: summed pick by pick in the given order in `f64`. Decisions compare
    /// [`comm_cost_units`](Self::comm_cost_units) instead. O(|gpus|²); duplicates are counted
    /// once.
    pub fn comm_cost(&self, gpus: &[GpuId]) -> f64 {
        let mut cost = 0.0;
        for (i, &g) in gpus.iter().enumerate() {
            if gpus[..i].contains(&g) {
                continue;
            }
            cost += self.added_cost(&gpus[..i], g);
        }
        cost
    }
}

/// The integer cost one more GPU adds, given how many picked GPUs share its machine and
/// whether its rack is already used (the closed form's increments).
pub(crate) fn added_units(w: &Levels<u32>, peers_on_machine: u64, rack_used: bool) -> CommCost {
    let mut cost = CommCost::of_links(w.gpu_machine, 1)
        .saturating_add(CommCost::of_links(w.gpu_peer, peers_on_machine));
    if peers_on_machine == 0 {
        cost = cost.saturating_add(CommCost::of_links(w.machine_rack, 1));
    }
    if !rack_used {
        cost = cost.saturating_add(CommCost::of_links(w.rack_root, 1));
    }
    cost
}

/// The closed form in integer units: `w_rack·racks + w_machine·machines + w_gpu·gpus +
/// w_peer·pairs`, saturating.
pub(crate) fn closed_form_units(
    w: &Levels<u32>,
    racks: u64,
    machines: u64,
    gpus: u64,
    pairs: u64,
) -> CommCost {
    CommCost::of_links(w.rack_root, racks)
        .saturating_add(CommCost::of_links(w.machine_rack, machines))
        .saturating_add(CommCost::of_links(w.gpu_machine, gpus))
        .saturating_add(CommCost::of_links(w.gpu_peer, pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proximity_tree() -> Topology<32> {
        Topology::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).unwrap()
    }

    fn ids(xs: &[u16]) -> heapless::Vec<GpuId, 32> {
        xs.iter().map(|&x| GpuId(x)).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        libm::fabs(a - b) < 1e-12
    }

    #[test]
    fn proximity_drl_reference_costs() {
        let t = proximity_tree();
        // (set, cost) from the issue: the closed form of their code.
        let cases: [(&[u16], f64); 5] = [
            (&[0], 0.775),
            (&[0, 1], 0.825),
            (&[0, 1, 2, 3], 1.0),
            (&[0, 1, 2, 3, 4, 5, 6, 7], 1.5),
            (&[0, 16], 1.55),
        ];
        for (set, want) in cases {
            let got = t.comm_cost(&ids(set));
            assert!(close(got, want), "{set:?}: got {got}, want {want}");
        }
    }

    #[test]
    fn cost_matches_closed_form_on_every_pair_and_order() {
        let t = proximity_tree();
        let closed = |racks: f64, machines: f64, k: f64, pairs: f64| {
            0.5 * racks + 0.25 * machines + 0.025 * k + 0.025 * pairs
        };
        // Same machine, same rack other machine, other rack.
        assert!(close(
            t.comm_cost(&ids(&[3, 2])),
            closed(1.0, 1.0, 2.0, 1.0)
        ));
        assert!(close(
            t.comm_cost(&ids(&[0, 4])),
            closed(1.0, 2.0, 2.0, 0.0)
        ));
        assert!(close(
            t.comm_cost(&ids(&[31, 0])),
            closed(2.0, 2.0, 2.0, 0.0)
        ));
        // Order does not matter, duplicates count once.
        assert!(close(
            t.comm_cost(&ids(&[0, 5, 1])),
            t.comm_cost(&ids(&[5, 1, 0]))
        ));
        assert!(close(t.comm_cost(&ids(&[0, 0])), t.comm_cost(&ids(&[0]))));
    }

    /// A heterogeneous 3-level tree, costs computed by hand:
    /// rack 0: machine 0 (2 GPUs: 0,1), machine 1 (3 GPUs: 2,3,4);
    /// rack 1: machine 2 (1 GPU: 5).
    /// Bandwidths: peer 100, gpu↔machine 20, machine↔rack 10, rack↔root 5
    /// → weights 0.01, 0.05, 0.1, 0.2.
    #[test]
    fn heterogeneous_tree_costs_by_hand() {
        let mut t: Topology<8> =
            Topology::new(LinkWeights::from_bandwidths(100.0, 20.0, 10.0, 5.0).unwrap());
        t.add_rack().unwrap();
        t.add_machine(2, 1000).unwrap();
        t.add_machine(3, 2000).unwrap();
        t.add_rack().unwrap();
        t.add_machine(1, 500).unwrap();
        assert_eq!(t.gpu_count(), 6);
        assert_eq!(t.machine_of(GpuId(4)), MachineId(1));
        assert_eq!(t.rack_of(GpuId(5)), RackId(1));
        assert_eq!(t.speed_permille(GpuId(3)), 2000);
        let cases: [(&[u16], f64); 5] = [
            // 0.2 + 0.1 + 0.05
            (&[5], 0.35),
            // 0.2 + 0.1 + 2·0.05 + 1·0.01
            (&[0, 1], 0.41),
            // 0.2 + 0.1 + 3·0.05 + 3·0.01
            (&[2, 3, 4], 0.48),
            // 0.2 + 2·0.1 + 2·0.05
            (&[1, 2], 0.5),
            // 2·0.2 + 3·0.1 + 6·0.05 + (1 + 3)·0.01
            (&[0, 1, 2, 3, 4, 5], 1.04),
        ];
        for (set, want) in cases {
            let got = t.comm_cost(&ids(set));
            assert!(
                libm::fabs(got - want) < 1e-9,
                "{set:?}: got {got}, want {want}"
            );
        }
    }

    #[test]
    fn builder_rejects_bad_shapes() {
        let mut t: Topology<4> = Topology::new(LinkWeights::PROXIMITY_DRL);
        assert_eq!(t.add_machine(1, 1000), Err(TopologyError::NoRack));
        t.add_rack().unwrap();
        assert_eq!(t.add_machine(0, 1000), Err(TopologyError::EmptyMachine));
        assert_eq!(t.add_machine(1, 0), Err(TopologyError::ZeroSpeed));
        assert_eq!(
            t.add_machine(5, 1000),
            Err(TopologyError::TooManyGpus { capacity: 4 })
        );
        assert!(t.add_machine(4, 1000).is_ok());
        assert_eq!(t.gpus_of_machine(MachineId(0)), 0..4);
    }

    fn ints(w: &LinkWeights) -> [u32; 4] {
        let i = w.integer();
        [i.gpu_peer, i.gpu_machine, i.machine_rack, i.rack_root]
    }

    /// (bandwidths, expected integer weights): exact where the bandwidths are decimals at
    /// some common scale, the same at every unit, rounded to 24 bits otherwise.
    #[test]
    fn integer_weights_are_exact_and_unit_free() {
        let cases: [([f64; 4], [u32; 4]); 6] = [
            ([40.0, 40.0, 4.0, 2.0], [1, 1, 10, 20]),
            // Issue 16 defect 2's bandwidths, in GB/s and in bytes/s: lcm 37,449.
            ([1.0, 73.0, 27.0, 19.0], [37_449, 513, 1_387, 1_971]),
            ([1e9, 73e9, 27e9, 19e9], [37_449, 513, 1_387, 1_971]),
            ([1e-9, 73e-9, 27e-9, 19e-9], [37_449, 513, 1_387, 1_971]),
            // Decimals: ×10 → 125, 250, 30, 10.
            ([12.5, 25.0, 3.0, 1.0], [6, 3, 25, 75]),
            ([0.3, 0.6, 0.1, 0.05], [2, 1, 6, 12]),
        ];
        for (b, want) in cases {
            let w = LinkWeights::from_bandwidths(b[0], b[1], b[2], b[3]).unwrap();
            assert_eq!(ints(&w), want, "{b:?}");
            // The integers keep the reciprocals' ratios.
            let r = w.reciprocal();
            let ratio = r.gpu_peer / f64::from(want[0]);
            for (x, n) in [r.gpu_machine, r.machine_rack, r.rack_root]
                .iter()
                .zip(&want[1..])
            {
                assert!(libm::fabs(x / f64::from(*n) / ratio - 1.0) < 1e-12, "{b:?}");
            }
        }
        // No small exact vector (four large primes): 24-bit rounding, heaviest = 2^24.
        let w = LinkWeights::from_bandwidths(1_000_003.0, 999_983.0, 999_979.0, 7.0).unwrap();
        let got = ints(&w);
        assert_eq!(got[3], INTEGER_WEIGHT_LIMIT);
        assert_eq!(got[0], (16_777_216.0 * (7.0 / 1_000_003.0) + 0.5) as u32);
        let scaled = LinkWeights::from_bandwidths(1_000_003e6, 999_983e6, 999_979e6, 7e6).unwrap();
        assert_eq!(ints(&scaled), got);
    }

    #[test]
    fn bad_bandwidths_are_refused_with_their_level() {
        for (level, b) in [(0u8, 0.0), (1, -4.0), (2, f64::NAN), (3, f64::INFINITY)] {
            let mut bw = [40.0, 40.0, 4.0, 2.0];
            bw[usize::from(level)] = b;
            assert_eq!(
                LinkWeights::from_bandwidths(bw[0], bw[1], bw[2], bw[3]),
                Err(TopologyError::BadBandwidth { level })
            );
        }
    }

    #[test]
    fn integer_costs_are_the_reported_costs_in_units() {
        let t = proximity_tree();
        // Proximity-DRL: one unit is 0.025.
        for set in [
            &[0u16][..],
            &[0, 1],
            &[0, 1, 2, 3, 4],
            &[0, 16, 17],
            &[3, 2, 9, 31],
        ] {
            let g = ids(set);
            let units = t.comm_cost_units(&g).0 as f64;
            assert!(close(units * 0.025, t.comm_cost(&g)), "{set:?}");
        }
        let integer = LinkWeights::from_integer_weights(Levels {
            gpu_peer: 1,
            gpu_machine: 2,
            machine_rack: 3,
            rack_root: 4,
        });
        let t2 = Topology::<32>::uniform(2, 4, 4, integer).unwrap();
        let g = ids(&[0, 1, 5, 20]);
        // 2 racks·4 + 3 machines·3 + 4 GPUs·2 + 1 pair·1.
        assert_eq!(t2.comm_cost_units(&g), CommCost(8 + 9 + 8 + 1));
        assert_eq!(t2.comm_cost(&g), 26.0);
    }
}
