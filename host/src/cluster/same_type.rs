//! The same-type rule every placer follows on a heterogeneous cluster: a synchronous gang
//! runs at its slowest GPU's pace, so once a gang holds a GPU it only takes GPUs of the same
//! speed class (the core topology's per-machine speed) while enough of them are usable. The
//! placer still chooses freely among those, and freely for the first GPU.
//!
//! On a homogeneous cluster (or when every usable GPU already has the pick's speed) the rule
//! narrows nothing and the placer sees exactly the mask it saw before: results of
//! homogeneous runs are unchanged.

use gantry_core::placement::{GpuMask, PlacementView};
use gantry_core::{GpuId, MachineId, Topology};

/// Whether every GPU of `topology` runs at one speed: then [`same_type_mask`] never narrows
/// anything, and a placer that knows it skips its O(G) count. O(machines).
pub fn one_speed<const G: usize>(topology: &Topology<G>) -> bool {
    let speed_of = |m: usize| {
        let gpus = topology.gpus_of_machine(MachineId(m as u16));
        topology.speed_permille(GpuId(gpus.start))
    };
    let first = speed_of(0);
    (1..topology.machine_count()).all(|m| speed_of(m) == first)
}

/// The usable GPUs whose speed equals the gang's first GPU's, when that both narrows the mask
/// and leaves enough GPUs for the rest of the gang; `None` otherwise (use the view as is).
/// O(G) when the gang has a GPU, O(1) for its first pick.
pub fn same_type_mask<const G: usize>(view: &PlacementView<'_, G>) -> Option<GpuMask<G>> {
    let &first = view.picked.first()?;
    let topo = view.topology;
    let speed = topo.speed_permille(first);
    let matching = view
        .usable
        .iter()
        .filter(|&g| topo.speed_permille(g) == speed)
        .count();
    if matching == view.usable.count() || matching < view.remaining() {
        return None;
    }
    let mut mask = GpuMask::none();
    for g in view.usable.iter() {
        if topo.speed_permille(g) == speed {
            mask.set(GpuId(g.0), true);
        }
    }
    Some(mask)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_core::{Job, JobId, JobSpec, LinkWeights, TimeMs, Topology};

    fn topo() -> Topology<8> {
        let mut t = Topology::new(LinkWeights::PROXIMITY_DRL);
        t.add_rack().unwrap();
        t.add_machine(4, 1000).unwrap();
        t.add_machine(4, 297).unwrap();
        t
    }

    fn narrowed(usable: &[u16], picked: &[u16], k: u16) -> Option<Vec<u16>> {
        let t = topo();
        let mut mask = GpuMask::<8>::none();
        for &g in usable {
            mask.set(GpuId(g), true);
        }
        let picked: Vec<GpuId> = picked.iter().map(|&g| GpuId(g)).collect();
        let job = Job::submitted(JobSpec::new(JobId(1), k), TimeMs(0));
        let view = PlacementView {
            topology: &t,
            usable: &mask,
            picked: &picked,
            job: &job,
        };
        same_type_mask(&view).map(|m| m.iter().map(|g| g.0).collect())
    }

    #[test]
    fn keeps_gangs_on_one_type_when_it_can() {
        // First pick: free choice.
        assert_eq!(narrowed(&[0, 1, 4, 5], &[], 3), None);
        // A V100 picked, two more needed, two V100s usable: K80s masked out.
        assert_eq!(narrowed(&[1, 2, 4, 5], &[0], 3), Some(vec![1, 2]));
        // Not enough V100s left: the placer may mix.
        assert_eq!(narrowed(&[1, 4, 5], &[0], 3), None);
        // Only V100s usable: nothing to narrow.
        assert_eq!(narrowed(&[1, 2], &[0], 3), None);
    }

    #[test]
    fn one_speed_tells_a_homogeneous_cluster() {
        assert!(!one_speed(&topo()));
        let uniform = Topology::<16>::uniform(1, 2, 8, LinkWeights::PROXIMITY_DRL).unwrap();
        assert!(one_speed(&uniform));
    }
}
