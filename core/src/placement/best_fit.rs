//! Consolidating best fit.

use super::{PlacementView, Placer};
use crate::ids::GpuId;
use serde::{Deserialize, Serialize};

/// Consolidating best fit: keep a gang on as few machines and racks as possible, and take the
/// machine that fits what is still needed most tightly, so large holes stay free for large
/// jobs. For each usable GPU the key, compared lexicographically, is:
///
/// 1. not on a machine already picked (0 = stays on one), then not in a rack already picked;
/// 2. whether its machine can hold all GPUs still needed (fits first);
/// 3. among fitting machines the fewest free GPUs (tightest); among the others the most;
/// 4. GPU id.
///
/// O(G + M·k) per pick for M machines with usable GPUs and k GPUs picked, with no scratch
/// array (a G-sized one used to be zeroed on every pick: 15 % of a full-Philly run).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct BestFit;

impl<const G: usize> Placer<G> for BestFit {
    fn name(&self) -> &'static str {
        "best-fit"
    }

    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        let topo = view.topology;
        let need = view.remaining() as u16;
        // A machine's GPUs are one id range (`Topology::gpus_of_machine`) and `usable`
        // iterates in id order, so each machine's usable GPUs come as one run. Every GPU of a
        // run has the same key but its id, so the run's first GPU stands for it.
        let mut best: Option<(bool, bool, bool, u16, GpuId)> = None;
        let mut gpus = view.usable.iter().peekable();
        while let Some(first) = gpus.next() {
            let machine = topo.machine_of(first);
            let mut free: u16 = 1;
            while gpus.next_if(|&g| topo.machine_of(g) == machine).is_some() {
                free = free.saturating_add(1);
            }
            let rack = topo.rack_of_machine(machine);
            let new_machine = !view.picked.iter().any(|&p| topo.machine_of(p) == machine);
            let new_rack = !view.picked.iter().any(|&p| topo.rack_of(p) == rack);
            let fits = free >= need;
            let tightness = if fits { free } else { u16::MAX - free };
            let key = (new_machine, new_rack, !fits, tightness, first);
            if best.is_none_or(|b| key < b) {
                best = Some(key);
            }
        }
        best.map(|(.., gpu)| gpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Job, JobSpec};
    use crate::placement::GpuMask;
    use crate::rng::SeededRng;
    use crate::{JobId, LinkWeights, TimeMs, Topology};

    /// The definition in the type's docs, evaluated for every usable GPU with a per-machine
    /// count: O(G·k), the way `pick` worked before it took one GPU per machine run.
    fn by_definition<const G: usize>(view: &PlacementView<'_, G>) -> Option<GpuId> {
        let topo = view.topology;
        let mut free_in_machine = [0u16; G];
        for gpu in view.usable.iter() {
            free_in_machine[topo.machine_of(gpu).index()] += 1;
        }
        let need = view.remaining() as u16;
        view.usable.iter().min_by_key(|&gpu| {
            let machine = topo.machine_of(gpu);
            let rack = topo.rack_of_machine(machine);
            let new_machine = !view.picked.iter().any(|&p| topo.machine_of(p) == machine);
            let new_rack = !view.picked.iter().any(|&p| topo.rack_of(p) == rack);
            let free = free_in_machine[machine.index()];
            let fits = free >= need;
            (
                new_machine,
                new_rack,
                !fits,
                if fits { free } else { u16::MAX - free },
                gpu,
            )
        })
    }

    /// Random trees (1–4 racks of 1–4 machines of 1–8 GPUs), random free sets, gangs of
    /// 1–8 picked one GPU at a time: `pick` chooses what the definition chooses.
    #[test]
    fn picks_what_the_definition_picks() {
        let mut rng = SeededRng::new(7);
        for _ in 0..2_000 {
            let mut topo = Topology::<128>::new(LinkWeights::PROXIMITY_DRL);
            for _ in 0..=rng.below(4) {
                topo.add_rack().unwrap();
                for _ in 0..=rng.below(4) {
                    topo.add_machine(1 + rng.below(8) as u16, 1000).unwrap();
                }
            }
            let mut usable = GpuMask::<128>::none();
            for g in 0..topo.gpu_count() {
                usable.set(GpuId(g as u16), rng.below(3) > 0);
            }
            let k = (1 + rng.below(8) as u16).min(usable.count() as u16);
            let job = Job::submitted(JobSpec::new(JobId(1), k), TimeMs(0));
            let mut picked = heapless::Vec::<GpuId, 8>::new();
            for _ in 0..k {
                let view = PlacementView {
                    topology: &topo,
                    usable: &usable,
                    picked: &picked,
                    job: &job,
                };
                let gpu = BestFit.pick(&view);
                assert_eq!(gpu, by_definition(&view));
                let Some(gpu) = gpu else { break };
                usable.set(gpu, false);
                picked.push(gpu).unwrap();
            }
        }
    }
}
