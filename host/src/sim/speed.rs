//! How fast a job runs on a placement.
//!
//! Proximity-DRL's model (Deng et al. 2024): a job's speed is its ideal speed divided by the
//! communication cost of its placement. gantry normalises it so that a job placed as tightly
//! as the tree allows runs exactly its trace duration: `speed = min(1, packed_cost(k) /
//! cost(S))`, where `packed_cost(k)` is the cost of the first `k` GPUs of an empty cluster
//! (filled machine by machine, rack by rack — the tightest packing on a regular tree). On a
//! heterogeneous cluster a synchronous gang runs at the pace of its slowest GPU, so the
//! result is multiplied by `min speed / reference speed`.

use gantry_core::topology::REFERENCE_SPEED_PERMILLE;
use gantry_core::{GpuId, Topology};

/// Which speed model the simulator applies.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum SpeedModel {
    /// Every placement runs at the trace's speed (placement does not matter).
    Ideal,
    /// Speed falls with communication cost (Proximity-DRL), see the module docs.
    CommCost,
}

/// Precomputed reference costs for one topology.
#[derive(Clone, Debug)]
pub struct SpeedTable {
    model: SpeedModel,
    packed_cost: Vec<f64>,
}

impl SpeedTable {
    /// The table for `topology`: `packed_cost[k]` for `k = 0..=gpus`.
    pub fn new<const G: usize>(model: SpeedModel, topology: &Topology<G>) -> Self {
        let all: Vec<GpuId> = (0..topology.gpu_count() as u16).map(GpuId).collect();
        let mut packed_cost = vec![0.0; all.len() + 1];
        let mut cost = 0.0;
        for k in 1..=all.len() {
            cost += topology.added_cost(&all[..k - 1], all[k - 1]);
            packed_cost[k] = cost;
        }
        Self { model, packed_cost }
    }

    /// Relative speed (1.0 = the trace's speed) of a job on `gpus`: the comm-cost factor
    /// times the slowest GPU's topology speed.
    pub fn speed<const G: usize>(&self, topology: &Topology<G>, gpus: &[GpuId]) -> f64 {
        let slowest = gpus
            .iter()
            .map(|&g| topology.speed_permille(g))
            .min()
            .unwrap_or(REFERENCE_SPEED_PERMILLE);
        let hardware = f64::from(slowest) / f64::from(REFERENCE_SPEED_PERMILLE);
        self.comm_factor(topology, gpus) * hardware
    }

    /// The placement's share of the speed: `min(1, packed_cost(k) / cost(S))` for the
    /// comm-cost model, 1 for the ideal one. The simulator multiplies it by a per-model
    /// hardware speed on heterogeneous clusters.
    pub fn comm_factor<const G: usize>(&self, topology: &Topology<G>, gpus: &[GpuId]) -> f64 {
        match self.model {
            SpeedModel::Ideal => 1.0,
            SpeedModel::CommCost => {
                let reference = self.packed_cost.get(gpus.len()).copied().unwrap_or(0.0);
                let cost = topology.comm_cost(gpus);
                if cost > 0.0 {
                    (reference / cost).min(1.0)
                } else {
                    1.0
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_core::LinkWeights;

    #[test]
    fn packed_runs_at_full_speed_spread_runs_slower() {
        let topo: Topology<32> = Topology::uniform(2, 4, 4, LinkWeights::PROXIMITY_DRL).unwrap();
        let table = SpeedTable::new(SpeedModel::CommCost, &topo);
        let ids = |xs: &[u16]| xs.iter().map(|&x| GpuId(x)).collect::<Vec<_>>();
        assert_eq!(table.speed(&topo, &ids(&[5])), 1.0);
        assert_eq!(table.speed(&topo, &ids(&[4, 5])), 1.0);
        // Two GPUs in two racks: 0.825 / 1.55.
        let spread = table.speed(&topo, &ids(&[0, 16]));
        assert!((spread - 0.825 / 1.55).abs() < 1e-12);
        let ideal = SpeedTable::new(SpeedModel::Ideal, &topo);
        assert_eq!(ideal.speed(&topo, &ids(&[0, 16])), 1.0);
    }
}
