//! Per-machine and per-rack tallies of usable and picked GPUs, shared by the topology-aware
//! placers and the observation encoding so each pick costs O(G + k), not O(G·k).

use super::PlacementView;
use crate::ids::{GpuId, MachineId, RackId};
use crate::topology::{CommCost, Topology, added_units};

/// Counts of one placement step, indexed by machine or rack id. Built once per pick in
/// O(G + k) for G GPUs and k picked; every lookup after that is O(1). Memory: `10·G` bytes.
#[derive(Clone, Debug)]
pub struct PlacementTally<const G: usize> {
    /// Usable (healthy, free, not yet picked) GPUs per machine.
    machine_usable: [u16; G],
    /// Usable GPUs per rack.
    rack_usable: [u16; G],
    /// GPUs already picked for this job, per machine.
    machine_picks: [u16; G],
    /// GPUs already picked for this job, per rack.
    rack_picks: [u16; G],
    /// All GPUs of each rack, usable or not.
    rack_size: [u16; G],
    /// Usable GPUs in the whole cluster.
    usable_total: u16,
}

impl<const G: usize> PlacementTally<G> {
    /// Tallies `view`. O(G + M + k) for G GPUs, M machines and k picked.
    pub fn of(view: &PlacementView<'_, G>) -> Self {
        let topo = view.topology;
        let mut t = Self {
            machine_usable: [0; G],
            rack_usable: [0; G],
            machine_picks: [0; G],
            rack_picks: [0; G],
            rack_size: [0; G],
            usable_total: 0,
        };
        for m in 0..topo.machine_count() {
            let machine = MachineId(m as u16);
            let size = topo.gpus_of_machine(machine).len() as u16;
            bump(
                &mut t.rack_size,
                topo.rack_of_machine(machine).index(),
                size,
            );
        }
        for gpu in view.usable.iter().filter(|&g| topo.contains(g)) {
            let machine = topo.machine_of(gpu);
            bump(&mut t.machine_usable, machine.index(), 1);
            bump(&mut t.rack_usable, topo.rack_of_machine(machine).index(), 1);
            t.usable_total = t.usable_total.saturating_add(1);
        }
        for &gpu in view.picked.iter().filter(|&&g| topo.contains(g)) {
            let machine = topo.machine_of(gpu);
            bump(&mut t.machine_picks, machine.index(), 1);
            bump(&mut t.rack_picks, topo.rack_of_machine(machine).index(), 1);
        }
        t
    }

    /// Usable GPUs on `machine`.
    pub fn machine_usable(&self, machine: MachineId) -> u16 {
        at(&self.machine_usable, machine.index())
    }

    /// Usable GPUs in `rack`.
    pub fn rack_usable(&self, rack: RackId) -> u16 {
        at(&self.rack_usable, rack.index())
    }

    /// GPUs of this job already picked on `machine`.
    pub fn machine_picks(&self, machine: MachineId) -> u16 {
        at(&self.machine_picks, machine.index())
    }

    /// GPUs of this job already picked in `rack`.
    pub fn rack_picks(&self, rack: RackId) -> u16 {
        at(&self.rack_picks, rack.index())
    }

    /// All GPUs of `rack`, usable or not.
    pub fn rack_size(&self, rack: RackId) -> u16 {
        at(&self.rack_size, rack.index())
    }

    /// Usable GPUs in the cluster.
    pub fn usable_total(&self) -> u16 {
        self.usable_total
    }

    /// The cost `gpu` would add to the picked set, in exact integer units: the same value as
    /// [`Topology::added_cost_units`], from the tallies in O(1) instead of O(k).
    pub fn added_cost_units(&self, topo: &Topology<G>, gpu: GpuId) -> CommCost {
        let machine = topo.machine_of(gpu);
        let peers = self.machine_picks(machine);
        let rack_used = self.rack_picks(topo.rack_of_machine(machine)) > 0;
        added_units(topo.weights().integer(), u64::from(peers), rack_used)
    }

    /// The cost `gpu` would add to the picked set in the caller's unit (`f64`, for the
    /// learned policy's features): the same value as [`Topology::added_cost`], in O(1).
    pub fn added_cost(&self, topo: &Topology<G>, gpu: GpuId) -> f64 {
        let machine = topo.machine_of(gpu);
        let peers = self.machine_picks(machine);
        let rack_used = self.rack_picks(topo.rack_of_machine(machine)) > 0;
        let w = topo.weights().reciprocal();
        let mut cost = w.gpu_machine + w.gpu_peer * f64::from(peers);
        if peers == 0 {
            cost += w.machine_rack;
        }
        if !rack_used {
            cost += w.rack_root;
        }
        cost
    }
}

fn bump<const G: usize>(counts: &mut [u16; G], index: usize, by: u16) {
    if let Some(c) = counts.get_mut(index) {
        *c = c.saturating_add(by);
    }
}

fn at<const G: usize>(counts: &[u16; G], index: usize) -> u16 {
    counts.get(index).copied().unwrap_or(0)
}

/// How well a group (machine or rack) with `free` usable GPUs fits `need` more GPUs, as a
/// sort key (smaller is better): groups that can hold all of `need` first, the tightest of
/// them first (best fit, keeps large holes for large jobs); then groups that cannot, the
/// largest first (fewest groups spanned).
pub(crate) fn fit_key(free: u16, need: u16) -> (bool, u16) {
    if free >= need {
        (false, free)
    } else {
        (true, u16::MAX - free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JobId;
    use crate::job::{Job, JobSpec};
    use crate::placement::GpuMask;
    use crate::time::TimeMs;
    use crate::topology::LinkWeights;

    #[test]
    fn tally_added_cost_matches_topology_for_every_gpu() {
        let topo = Topology::<32>::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).unwrap();
        let job = Job::submitted(JobSpec::new(JobId(1), 6), TimeMs(0));
        let picked = [GpuId(0), GpuId(1), GpuId(5), GpuId(20)];
        let mut usable = GpuMask::<32>::none();
        for g in 0..32u16 {
            usable.set(GpuId(g), !picked.contains(&GpuId(g)) && g % 7 != 3);
        }
        let view = PlacementView {
            topology: &topo,
            usable: &usable,
            picked: &picked,
            job: &job,
        };
        let t = PlacementTally::of(&view);
        for g in 0..32u16 {
            let want = topo.added_cost(&picked, GpuId(g));
            let got = t.added_cost(&topo, GpuId(g));
            assert!(libm::fabs(want - got) < 1e-12, "gpu {g}: {got} vs {want}");
            let units = t.added_cost_units(&topo, GpuId(g));
            assert_eq!(units, topo.added_cost_units(&picked, GpuId(g)), "gpu {g}");
        }
        assert_eq!(t.machine_picks(MachineId(0)), 2);
        assert_eq!(t.rack_picks(RackId(1)), 1);
        assert_eq!(t.rack_size(RackId(1)), 16);
        // Machine 0: GPUs 0,1 picked, 3 masked → only GPU 2.
        assert_eq!(t.machine_usable(MachineId(0)), 1);
        assert_eq!(usize::from(t.usable_total()), usable.count());
    }
}
