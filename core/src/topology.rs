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

/// Link weights (1 / bandwidth) for each level of the tree. Smaller is faster.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkWeights {
    /// A direct GPU↔GPU link inside one machine (NVLink).
    pub gpu_peer: f64,
    /// A GPU's link to its machine (PCIe / NVSwitch uplink).
    pub gpu_machine: f64,
    /// A machine's link to its rack switch.
    pub machine_rack: f64,
    /// A rack's link to the root (spine).
    pub rack_root: f64,
}

impl LinkWeights {
    /// Proximity-DRL's tree: NVLink 40 inside a machine, 4 machine↔rack, 2 rack↔root.
    pub const PROXIMITY_DRL: LinkWeights = LinkWeights::from_bandwidths(40.0, 40.0, 4.0, 2.0);

    /// Weights as reciprocals of per-level bandwidths (any consistent unit, e.g. GB/s).
    pub const fn from_bandwidths(
        gpu_peer: f64,
        gpu_machine: f64,
        machine_rack: f64,
        rack_root: f64,
    ) -> LinkWeights {
        LinkWeights {
            gpu_peer: 1.0 / gpu_peer,
            gpu_machine: 1.0 / gpu_machine,
            machine_rack: 1.0 / machine_rack,
            rack_root: 1.0 / rack_root,
        }
    }
}

/// Why a topology could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

    /// The cost `gpu` adds to a set that already holds `picked` (which must not contain it):
    /// its GPU↔machine edge, a peer link to every picked GPU on its machine, and its
    /// machine↔rack and rack↔root edges when those are new to the set. O(|picked|).
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
        let w = &self.weights;
        let mut cost = w.gpu_machine + w.gpu_peer * f64::from(peers_on_machine);
        if peers_on_machine == 0 {
            cost += w.machine_rack;
        }
        if !rack_used {
            cost += w.rack_root;
        }
        cost
    }

    /// The communication cost of a GPU set (see the module docs), summed pick by pick in the
    /// given order, which the closed form does not depend on. O(|gpus|²); duplicates are
    /// counted once.
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
            Topology::new(LinkWeights::from_bandwidths(100.0, 20.0, 10.0, 5.0));
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
}
