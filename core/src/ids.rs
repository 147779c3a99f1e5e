//! Identifier newtypes. Ids are plain integers on the wire, but distinct types in code, so a
//! GPU index can never be passed where a job id is expected.

use serde::{Deserialize, Serialize};

/// A job's identifier, chosen by the caller (trace row, RPC id). Unique among live jobs.
/// Every ordering in the core breaks ties by this id, which makes every order total.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JobId(pub u32);

/// A GPU's index in the [`Topology`](crate::topology::Topology): `0..gpu_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GpuId(pub u16);

/// A machine's index in the topology: `0..machine_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MachineId(pub u16);

/// A rack's index in the topology: `0..rack_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RackId(pub u16);

impl GpuId {
    /// The id as an array index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl MachineId {
    /// The id as an array index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl RackId {
    /// The id as an array index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl core::fmt::Display for JobId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "job {}", self.0)
    }
}

impl core::fmt::Display for GpuId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "gpu {}", self.0)
    }
}
