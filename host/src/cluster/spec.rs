//! The simulated cluster's shape, as given on the command line (`RACKSxMACHINESxGPUS`).

use gantry_core::{LinkWeights, Topology, TopologyError};
use std::str::FromStr;

/// A regular tree of racks × machines × GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClusterSpec {
    /// Racks under the root.
    pub racks: u16,
    /// Machines per rack.
    pub machines_per_rack: u16,
    /// GPUs per machine.
    pub gpus_per_machine: u16,
}

impl ClusterSpec {
    /// The default cluster: 4 racks × 8 machines × 8 GPUs = 256 GPUs.
    pub const DEFAULT: ClusterSpec = ClusterSpec {
        racks: 4,
        machines_per_rack: 8,
        gpus_per_machine: 8,
    };

    /// Total GPUs.
    pub fn gpus(&self) -> usize {
        usize::from(self.racks)
            * usize::from(self.machines_per_rack)
            * usize::from(self.gpus_per_machine)
    }

    /// The core topology with Proximity-DRL's link weights.
    pub fn topology<const G: usize>(&self) -> Result<Topology<G>, TopologyError> {
        Topology::uniform(
            self.racks,
            self.machines_per_rack,
            self.gpus_per_machine,
            LinkWeights::PROXIMITY_DRL,
        )
    }

    /// The same tree with machine `m` (0-based, rack by rack) at `speed_permille(m)` of the
    /// reference GPU's speed: mixed GPU types, from the types' speeds or from a recording.
    pub fn topology_with_speeds<const G: usize>(
        &self,
        speed_permille: impl Fn(usize) -> u16,
    ) -> Result<Topology<G>, TopologyError> {
        let mut topology = Topology::new(LinkWeights::PROXIMITY_DRL);
        let mut machine = 0;
        for _ in 0..self.racks {
            topology.add_rack()?;
            for _ in 0..self.machines_per_rack {
                topology.add_machine(self.gpus_per_machine, speed_permille(machine))?;
                machine += 1;
            }
        }
        Ok(topology)
    }
}

impl std::fmt::Display for ClusterSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}x{}x{}",
            self.racks, self.machines_per_rack, self.gpus_per_machine
        )
    }
}

impl FromStr for ClusterSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split(['x', 'X']).collect();
        let [racks, machines, gpus] = parts.as_slice() else {
            return Err(format!(
                "cluster {s:?}: expected RACKSxMACHINESxGPUS, e.g. 4x8x8"
            ));
        };
        let number = |what: &str, text: &str| -> Result<u16, String> {
            match text.trim().parse::<u16>() {
                Ok(0) | Err(_) => Err(format!(
                    "cluster {s:?}: {what} {text:?} is not a positive integer"
                )),
                Ok(n) => Ok(n),
            }
        };
        Ok(ClusterSpec {
            racks: number("racks", racks)?,
            machines_per_rack: number("machines", machines)?,
            gpus_per_machine: number("GPUs", gpus)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!("2x4x4".parse::<ClusterSpec>().unwrap().gpus(), 32);
        assert_eq!(ClusterSpec::DEFAULT.to_string(), "4x8x8");
        for bad in ["2x4", "0x4x4", "2xax4", "2x4x4x1", ""] {
            assert!(bad.parse::<ClusterSpec>().is_err(), "{bad}");
        }
    }
}
