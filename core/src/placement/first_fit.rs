//! First available GPU.

use super::{PlacementView, Placer};
use crate::ids::GpuId;
use serde::{Deserialize, Serialize};

/// The lowest-numbered usable GPU (Proximity-DRL's "first-available" baseline). O(G).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct FirstFit;

impl<const G: usize> Placer<G> for FirstFit {
    fn name(&self) -> &'static str {
        "first-fit"
    }

    fn pick(&mut self, view: &PlacementView<'_, G>) -> Option<GpuId> {
        view.usable.first()
    }
}
