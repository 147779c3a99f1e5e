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
/// O(G + G·k) per pick for k GPUs picked.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct BestFit;

impl<const G: usize> Placer<G> for BestFit {
    fn name(&self) -> &'static str {
        "best-fit"
    }

    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        let topo = view.topology;
        let mut free_in_machine = [0u16; G];
        for gpu in view.usable.iter() {
            let m = topo.machine_of(gpu).index();
            if let Some(n) = free_in_machine.get_mut(m) {
                *n += 1;
            }
        }
        let need = view.remaining() as u16;
        view.usable.iter().min_by_key(|&gpu| {
            let machine = topo.machine_of(gpu);
            let rack = topo.rack_of_machine(machine);
            let new_machine = !view.picked.iter().any(|&p| topo.machine_of(p) == machine);
            let new_rack = !view.picked.iter().any(|&p| topo.rack_of(p) == rack);
            let free = free_in_machine.get(machine.index()).copied().unwrap_or(0);
            let fits = free >= need;
            let tightness = if fits { free } else { u16::MAX - free };
            (new_machine, new_rack, !fits, tightness, gpu)
        })
    }
}
