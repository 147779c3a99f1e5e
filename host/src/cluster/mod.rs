//! The simulated cluster: its shape ([`ClusterSpec`]), the GPU type of every machine, and how
//! fast each job model runs on each type ([`Throughputs`], Gavel's measurements).
//!
//! A homogeneous cluster (no `--gpu-types`, no cluster file) is all reference GPUs: every job
//! runs at its trace speed, exactly as before types existed. A heterogeneous one gives
//! - the **core** one speed per machine, per-mille of the reference: the geometric mean over
//!   job models of the type's Gavel ratio (V100 1000, P100 943, K80 297), which the
//!   placement observation's `speed` feature reads;
//! - the **simulator** per-model speeds: a gang runs at its slowest GPU's speed for its own
//!   model ([`Cluster::gang_speed`]), a DAG task at its GPU's speed for the task's model;
//! - every **placer** a same-type rule ([`same_type`]): once a gang holds a GPU, it only
//!   takes GPUs of that type while enough are usable, so no gang runs at a K80's pace
//!   because one of its eight GPUs is a K80. DAG jobs are exempt ([`hints`](crate::mixed::hints)): their tasks
//!   run independently and their planner uses each GPU at its own speed;
//! - gantry's placer (`ppo-gavel`) a per-model type choice ([`hints`](crate::mixed::hints)): each gang starts on
//!   the type where its model runs fastest among those with room.
//!
//! Inputs: `--cluster 4x8x8 --gpu-types v100:0-15,p100:16-23,k80:24-31` ([`gpu_types`]) or
//! `--cluster-file FILE` (TOML, [`file`](mod@file)); bad input is a [`ClusterError`] naming the file or
//! flag, the line and the field.

pub mod file;
pub mod gpu_types;
pub mod same_type;
pub mod slurm_split;
pub mod spec;
pub mod throughputs;

pub use gpu_types::{GpuTypeSpec, MachineTypes};
pub use spec::ClusterSpec;
pub use throughputs::Throughputs;

use gantry_core::topology::REFERENCE_SPEED_PERMILLE;
use gantry_core::{GpuId, Topology, TopologyError};
use std::fmt;
use std::sync::Arc;

/// A cluster input that cannot be used: the file or flag (`--gpu-types`), the line (0 for a
/// flag or the file as a whole), the field and what is wrong.
pub type ClusterError = crate::toml_input::InputError;

/// GPU types of a heterogeneous cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuTypes {
    /// Per-model speeds per type.
    pub table: Arc<Throughputs>,
    /// Type (table column) of each machine.
    pub machines: MachineTypes,
    /// The spec as given, for reports (`v100:0-15,…`).
    pub text: String,
}

/// The cluster a simulation runs on.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// Racks × machines × GPUs.
    pub spec: ClusterSpec,
    /// GPU types; `None` = every GPU the reference type.
    pub types: Option<GpuTypes>,
}

impl Cluster {
    /// All reference GPUs.
    pub fn homogeneous(spec: ClusterSpec) -> Self {
        Self { spec, types: None }
    }

    /// `spec` with the machine types of `types_text` (`--gpu-types` syntax) from `table`.
    pub fn with_types(
        spec: ClusterSpec,
        types_text: &str,
        table: Arc<Throughputs>,
    ) -> Result<Self, ClusterError> {
        let parsed = GpuTypeSpec::parse(types_text, "--gpu-types")?;
        let machines = usize::from(spec.racks) * usize::from(spec.machines_per_rack);
        let machines = MachineTypes::resolve(&parsed, &[], machines, &table, "--gpu-types")?;
        Ok(Self {
            spec,
            types: Some(GpuTypes {
                table,
                machines,
                text: types_text.to_string(),
            }),
        })
    }

    /// Total GPUs.
    pub fn gpus(&self) -> usize {
        self.spec.gpus()
    }

    /// Whether GPUs differ in type.
    pub fn is_heterogeneous(&self) -> bool {
        self.types.as_ref().is_some_and(|t| {
            let first = t.machines.machine_type.first();
            t.machines.machine_type.iter().any(|x| Some(x) != first)
        })
    }

    /// The core topology: Proximity-DRL's link weights, each machine at its type's mean
    /// speed (per-mille of the reference).
    pub fn topology<const G: usize>(&self) -> Result<Topology<G>, TopologyError> {
        let Some(types) = &self.types else {
            return self.spec.topology();
        };
        self.spec.topology_with_speeds(|machine| {
            let column = types
                .machines
                .machine_type
                .get(machine)
                .copied()
                .unwrap_or(0);
            type_permille(&types.table, column)
        })
    }

    /// The throughput-table column of `gpu`'s type (0, the reference, when homogeneous).
    pub fn gpu_type(&self, gpu: GpuId) -> usize {
        let machine = usize::from(gpu.0) / usize::from(self.spec.gpus_per_machine.max(1));
        self.types
            .as_ref()
            .and_then(|t| t.machines.machine_type.get(machine).copied())
            .unwrap_or(0)
    }

    /// The name of `gpu`'s type (`ref` on a homogeneous cluster). O(1).
    pub fn type_name(&self, gpu: GpuId) -> &str {
        match &self.types {
            None => "ref",
            Some(t) => t
                .table
                .gpu_types
                .get(self.gpu_type(gpu))
                .map_or("?", String::as_str),
        }
    }

    /// Relative speed of job model `model` on `gpu` (1.0 when homogeneous). O(1).
    pub fn gpu_speed(&self, model: usize, gpu: GpuId) -> f64 {
        match &self.types {
            None => 1.0,
            Some(t) => t.table.speed(model, self.gpu_type(gpu)),
        }
    }

    /// A synchronous gang's hardware speed: its slowest GPU's for the job's model. O(k).
    pub fn gang_speed(&self, model: usize, gpus: &[GpuId]) -> f64 {
        if gpus.is_empty() {
            return 1.0;
        }
        gpus.iter()
            .map(|&g| self.gpu_speed(model, g))
            .fold(f64::INFINITY, f64::min)
    }

    /// Job models the throughput table knows (1 when homogeneous: every model is alike).
    pub fn model_count(&self) -> usize {
        self.types.as_ref().map_or(1, |t| t.table.models.len())
    }
}

/// The core's per-mille speed for a table column: its mean ratio, at least 1.
fn type_permille(table: &Throughputs, column: usize) -> u16 {
    let permille = table.mean_speed(column) * f64::from(REFERENCE_SPEED_PERMILLE);
    permille.round().clamp(1.0, f64::from(u16::MAX)) as u16
}

impl fmt::Display for Cluster {
    /// `4x8x8 (256 GPUs: 128 v100, 64 p100, 64 k80)`, or `4x8x8 (256 GPUs)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} GPUs", self.spec, self.gpus())?;
        if let Some(t) = &self.types {
            let per_machine = usize::from(self.spec.gpus_per_machine);
            let parts: Vec<String> = t
                .table
                .gpu_types
                .iter()
                .enumerate()
                .filter_map(|(column, name)| {
                    let n = t
                        .machines
                        .machine_type
                        .iter()
                        .filter(|&&c| c == column)
                        .count();
                    (n > 0).then(|| format!("{} {name}", n * per_machine))
                })
                .collect();
            write!(f, ": {}", parts.join(", "))?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heterogeneous_topology_and_speeds() {
        let spec: ClusterSpec = "2x2x4".parse().unwrap();
        let c =
            Cluster::with_types(spec, "v100:0-1,k80:2-3", Arc::new(Throughputs::gavel())).unwrap();
        assert!(c.is_heterogeneous());
        let topo: Topology<16> = c.topology().unwrap();
        assert_eq!(topo.speed_permille(GpuId(0)), 1000);
        assert_eq!(topo.speed_permille(GpuId(15)), 297);
        assert_eq!(c.gpu_type(GpuId(8)), 2);
        // ResNet-18 (batch size 128) is model 12 in the sorted table: K80 ratio ≈ 0.100.
        let table = Throughputs::gavel();
        let m = table
            .models
            .iter()
            .position(|x| x == "ResNet-18 (batch size 128)")
            .unwrap();
        assert_eq!(c.gang_speed(m, &[GpuId(0), GpuId(1)]), 1.0);
        let mixed = c.gang_speed(m, &[GpuId(0), GpuId(9)]);
        assert!((mixed - 1.806_529_788 / 17.994_906_225).abs() < 1e-9);
        assert_eq!(c.to_string(), "2x2x4 (16 GPUs: 8 v100, 8 k80)");
        let flat = Cluster::homogeneous(spec);
        assert_eq!(flat.gang_speed(m, &[GpuId(9)]), 1.0);
        assert_eq!(flat.to_string(), "2x2x4 (16 GPUs)");
    }
}
