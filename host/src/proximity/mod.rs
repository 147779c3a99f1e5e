//! Proximity-DRL's environment (Deng et al., "GPU Job Scheduler with Deep Reinforcement
//! Learning", Canadian AI 2024), ported faithfully, then fixed.
//!
//! - [`jobs`]: the 35-model table, their speed model and 30-job generator, and a loader for
//!   their exact job sequences (`shared/anchors/proximity-drl/job_sequences_seeds0-19.csv`).
//! - [`env`](mod@env): their step loop (FCFS, 10-slot queue, one placement per step, no backfill)
//!   driving any core `Placer` on the 2 × 4 × 4 tree; [`env::Variant::Compat`] reproduces
//!   their quirks, [`env::Variant::Fixed`] removes them.
//! - [`reward`]: their per-job reward `1 − (cost − min_k)/(max_k − min_k)` on the last pick.
//! - [`compare`]: the placers on their episodes, one row each, for `gantry compare
//!   --scenario proximity-drl` (the command is [`crate::commands::proximity`]).

pub mod compare;
pub mod env;
pub mod jobs;
pub mod reward;

use gantry_core::Topology;
use gantry_core::topology::LinkWeights;

/// GPUs in their tree.
pub const PROXIMITY_GPUS: usize = 32;

/// Their 2 racks × 4 machines × 4 GPUs tree with their link weights; GPU ids are their flat
/// indices `r·16 + m·4 + g`.
pub fn proximity_tree() -> Topology<PROXIMITY_GPUS> {
    // 2 × 4 × 4 = 32 ≤ PROXIMITY_GPUS and the weights are positive: cannot fail.
    match Topology::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL) {
        Ok(t) => t,
        Err(_) => Topology::new(LinkWeights::PROXIMITY_DRL),
    }
}
