//! Proximity-DRL's LoadBalance baseline: worst-fit descent of the tree.

use super::tally::PlacementTally;
use super::{PlacementView, Placer};
use crate::ids::{GpuId, MachineId, RackId};
use crate::topology::Topology;
use core::cmp::Reverse;
use serde::{Deserialize, Serialize};

/// Proximity-DRL's `LoadBalanceGpuSelector` (Deng et al. 2024, their public code), replayed
/// one GPU at a time. For a job of k GPUs, on the GPUs free when the job's placement began:
///
/// 1. **Descend**: from the cluster go to the rack with the most free GPUs if it holds all k
///    (ties: lowest id), then to that rack's machine with the most free GPUs if it holds all
///    k; otherwise stay at the level reached.
/// 2. **Take**: list the node's GPUs children-first, children sorted by free GPUs descending
///    (a stable sort, so ties by id), recursively, GPUs of a machine in id order; the job
///    gets the first k free GPUs of that list.
///
/// It is stateless: the free set at the start of the job is `usable ∪ picked`, so every pick
/// re-derives the same list and returns its first usable GPU. If the cluster cannot hold k,
/// it still returns GPUs in cluster-level order (their code would idle instead).
/// O(G + M + R) per pick for G GPUs, M machines, R racks.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct LoadBalance;

impl<const G: usize> Placer<G> for LoadBalance {
    fn name(&self) -> &'static str {
        "load-balance"
    }

    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        let topo = view.topology;
        let tally = PlacementTally::of(view);
        // Free at the start of the job = usable now + picked for this job. In u32: the two
        // u16 tallies can sum past u16::MAX on a hand-built view (issue 16, defect 7).
        let machine_free =
            |m: MachineId| u32::from(tally.machine_usable(m)) + u32::from(tally.machine_picks(m));
        let rack_free =
            |r: RackId| u32::from(tally.rack_usable(r)) + u32::from(tally.rack_picks(r));
        let k = u32::from(view.job.gpus());

        let best_rack = (0..topo.rack_count() as u16)
            .map(RackId)
            .min_by_key(|&r| (Reverse(rack_free(r)), r));
        let mut scope = Scope::Cluster;
        if let Some(rack) = best_rack.filter(|&r| rack_free(r) >= k) {
            scope = Scope::Rack(rack);
            let best_machine = machines(topo)
                .filter(|&m| topo.rack_of_machine(m) == rack)
                .min_by_key(|&m| (Reverse(machine_free(m)), m));
            if let Some(machine) = best_machine.filter(|&m| machine_free(m) >= k) {
                scope = Scope::Machine(machine);
            }
        }

        // The first usable GPU of the take-list: the first rack (in order) with a usable
        // GPU, its first machine with one, that machine's lowest usable GPU.
        let rack = match scope {
            Scope::Cluster => (0..topo.rack_count() as u16)
                .map(RackId)
                .filter(|&r| tally.rack_usable(r) > 0)
                .min_by_key(|&r| (Reverse(rack_free(r)), r))?,
            Scope::Rack(r) => r,
            Scope::Machine(m) => topo.rack_of_machine(m),
        };
        let machine = match scope {
            Scope::Machine(m) => m,
            _ => machines(topo)
                .filter(|&m| topo.rack_of_machine(m) == rack && tally.machine_usable(m) > 0)
                .min_by_key(|&m| (Reverse(machine_free(m)), m))?,
        };
        topo.gpus_of_machine(machine)
            .map(GpuId)
            .find(|&g| view.usable.allows(g))
    }
}

/// How far the descent went.
#[derive(Clone, Copy)]
enum Scope {
    Cluster,
    Rack(RackId),
    Machine(MachineId),
}

fn machines<const G: usize>(topo: &Topology<G>) -> impl Iterator<Item = MachineId> {
    (0..topo.machine_count() as u16).map(MachineId)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::test_support::{fresh_mask, place_job, proximity_tree};

    /// (GPUs taken by other jobs, request, expected set in pick order).
    #[test]
    fn load_balance_cases() {
        let topo = proximity_tree();
        let cases: [(&[u16], u16, &[u16]); 7] = [
            // Empty: rack 0 (tie, lowest id), machine 0 (tie), lowest GPUs.
            (&[], 2, &[0, 1]),
            // 5 does not fit a machine: stay at rack 0, machines by free desc, stable.
            (&[], 5, &[0, 1, 2, 3, 4]),
            // Rack 0 has fewer free: worst fit goes to rack 1.
            (&[0], 1, &[16]),
            // Machine 0 has 1 free, machine 1 has 4: worst fit takes machine 1 even for 1 GPU.
            (&[0, 1, 2, 16, 17, 18, 19], 1, &[4]),
            // Rack 0: 16 free minus {4,5,6} → machine 1 has 1 free; 6 GPUs stay at rack level,
            // machines by free desc (0, 2, 3 have 4; then 1): 0,1,2,3 then 8,9.
            (&[4, 5, 6, 16, 17, 18, 19, 20], 6, &[0, 1, 2, 3, 8, 9]),
            // No rack holds 20: cluster level, racks by free desc (rack 1: 16, rack 0: 12).
            (
                &[0, 1, 2, 3],
                20,
                &[
                    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 4, 5, 6, 7,
                ],
            ),
            // Rack 1 has more free; its machine 4 holds all 4.
            (&[0, 4, 8, 12], 4, &[16, 17, 18, 19]),
        ];
        for (taken, k, want) in cases {
            let mut mask = fresh_mask(&topo);
            for &g in taken {
                mask.set(GpuId(g), false);
            }
            let got = place_job(&mut LoadBalance, &topo, &mask, k);
            let want: heapless::Vec<GpuId, 32> = want.iter().map(|&x| GpuId(x)).collect();
            assert_eq!(got.as_slice(), want.as_slice(), "taken {taken:?} k {k}");
        }
    }

    /// Issue 16, defect 7: the free counts summed two u16 tallies, which overflow on a
    /// hand-built view whose `picked` holds 65,535 entries on machine 0 (debug: a panic;
    /// release: a wrapped count that sent the descent to rack 1). Rack 0 has the most GPUs
    /// free at the start of this job, so the pick stays in rack 0.
    #[test]
    fn free_counts_do_not_overflow_on_a_hand_built_view() {
        extern crate std;
        let topo = proximity_tree();
        let mut mask = fresh_mask(&topo);
        mask.set(GpuId(0), false);
        let picked = std::vec![GpuId(0); usize::from(u16::MAX)];
        let job = crate::placement::test_support::view_job(2);
        let view = crate::placement::PlacementView {
            topology: &topo,
            usable: &mask,
            picked: &picked,
            job: &job,
        };
        let pick = LoadBalance.pick(&view).unwrap();
        assert_eq!(topo.rack_of(pick), RackId(0), "picked {pick:?}");
    }
}
