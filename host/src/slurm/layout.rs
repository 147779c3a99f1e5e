//! The partition's shape as gantry's core sees it: machines = the partition's nodes that
//! have GPUs, racks = the leaf switches of `topology.conf` (`scontrol show topology`) or one
//! rack when there are none, GPUs per machine from the node's GRES.
//!
//! GPU ids are laid out as the core's [`ClusterSpec`] lays them out: rack by rack, node by
//! node (in Slurm's node order), so GPU `g` lives on machine `g / gpus_per_node`.
//! Recordings (and so the journal) describe a cluster as `RACKSxNODESxGPUS`, so the
//! partition must be that regular: every rack the same number of GPU nodes, every node the
//! same number of GPUs. A partition that is not is refused with the counts that differ.

use super::gres::{PartitionGpus, node_gpus};
use super::hostlist;
use super::json::SlurmNode;
use crate::registry::HOST_GPUS;
use crate::sim::ClusterSpec;
use gantry_core::GpuId;

/// Why the partition cannot be scheduled by gantry.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// No node of the partition has a GPU.
    #[error("partition `{0}` has no node with GPUs (GRES gpu)")]
    NoGpus(String),
    /// A node's GRES or a switch's node list is malformed.
    #[error("{what}: {problem}")]
    Malformed {
        /// The node or switch.
        what: String,
        /// What is wrong.
        problem: String,
    },
    /// Not a regular racks × nodes × GPUs tree.
    #[error(
        "partition `{partition}` is not a regular RACKSxNODESxGPUS tree ({detail}); gantry's recordings and journal need one"
    )]
    Irregular {
        /// The partition.
        partition: String,
        /// What differs.
        detail: String,
    },
    /// More GPUs than the host's capacity.
    #[error(
        "partition `{partition}` has {gpus} GPUs, more than gantry's host capacity {HOST_GPUS}"
    )]
    TooLarge {
        /// The partition.
        partition: String,
        /// Its GPUs.
        gpus: usize,
    },
}

/// One node as a machine of the core's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// Slurm's node name.
    pub name: String,
    /// Index of its rack.
    pub rack: usize,
    /// Its GPUs.
    pub gpus: u16,
    /// Its first GPU id in the core.
    pub first_gpu: u16,
}

/// The partition as a tree of racks, machines and GPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterLayout {
    /// The partition's name.
    pub partition: String,
    /// Rack names (leaf switches; `all` when Slurm has no topology).
    pub racks: Vec<String>,
    /// Machines, rack by rack.
    pub machines: Vec<Machine>,
    /// The regular shape of the tree.
    pub spec: ClusterSpec,
    /// What typed requests are checked against.
    pub gpus: PartitionGpus,
}

/// Leaf switches of `scontrol show topology` (`SwitchName=s1 Level=0 … Nodes=n[1-2]`), in
/// its order, with their nodes. Empty when Slurm has no topology plugin.
pub fn leaf_switches(text: &str) -> Result<Vec<(String, Vec<String>)>, LayoutError> {
    let mut leaves = Vec::new();
    for line in text.lines() {
        let field = |key: &str| {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        };
        let (Some(name), Some("0")) = (field("SwitchName"), field("Level")) else {
            continue;
        };
        let nodes = hostlist::expand(field("Nodes").unwrap_or("")).map_err(|problem| {
            LayoutError::Malformed {
                what: format!("switch {name}"),
                problem,
            }
        })?;
        leaves.push((name.to_string(), nodes));
    }
    Ok(leaves)
}

/// The default partition from `scontrol show partition -o` (`… Default=YES …`).
pub fn default_partition(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let mut name = None;
        let mut default = false;
        for kv in line.split_whitespace() {
            if let Some(v) = kv.strip_prefix("PartitionName=") {
                name = Some(v.to_string());
            }
            default |= kv == "Default=YES";
        }
        name.filter(|_| default)
    })
}

impl ClusterLayout {
    /// The layout of `partition` from `sinfo`'s nodes and `scontrol show topology`.
    pub fn discover(
        partition: &str,
        nodes: &[SlurmNode],
        topology: &str,
    ) -> Result<Self, LayoutError> {
        let mut gpu_nodes = Vec::new();
        for node in nodes
            .iter()
            .filter(|n| n.partitions.iter().any(|p| p == partition))
        {
            let gpus = node_gpus(&node.gres).map_err(|problem| LayoutError::Malformed {
                what: format!("node {} GRES {:?}", node.name, node.gres),
                problem,
            })?;
            if gpus.count > 0 {
                gpu_nodes.push((node.name.clone(), gpus));
            }
        }
        if gpu_nodes.is_empty() {
            return Err(LayoutError::NoGpus(partition.to_string()));
        }
        // Racks: leaf switches that hold GPU nodes of the partition, in Slurm's order; nodes
        // under no switch form one more rack.
        let leaves = leaf_switches(topology)?;
        let mut racks: Vec<(String, Vec<usize>)> = Vec::new();
        let mut placed = vec![false; gpu_nodes.len()];
        for (switch, members) in &leaves {
            let inside: Vec<usize> = (0..gpu_nodes.len())
                .filter(|&i| !placed[i] && members.contains(&gpu_nodes[i].0))
                .collect();
            for &i in &inside {
                placed[i] = true;
            }
            if !inside.is_empty() {
                racks.push((switch.clone(), inside));
            }
        }
        let rest: Vec<usize> = (0..gpu_nodes.len()).filter(|&i| !placed[i]).collect();
        if !rest.is_empty() {
            let name = if leaves.is_empty() {
                "all"
            } else {
                "unswitched"
            };
            racks.push((name.to_string(), rest));
        }
        let per_node = gpu_nodes[0].1.count;
        let per_rack = racks[0].1.len();
        if let Some((name, gpus)) = gpu_nodes.iter().find(|(_, g)| g.count != per_node) {
            return Err(LayoutError::Irregular {
                partition: partition.to_string(),
                detail: format!(
                    "node {} has {} GPUs, node {} has {per_node}",
                    name, gpus.count, gpu_nodes[0].0
                ),
            });
        }
        if let Some((name, members)) = racks.iter().find(|(_, m)| m.len() != per_rack) {
            return Err(LayoutError::Irregular {
                partition: partition.to_string(),
                detail: format!(
                    "rack {name} has {} GPU nodes, rack {} has {per_rack}",
                    members.len(),
                    racks[0].0
                ),
            });
        }
        let total = usize::from(per_node) * gpu_nodes.len();
        if total > HOST_GPUS {
            return Err(LayoutError::TooLarge {
                partition: partition.to_string(),
                gpus: total,
            });
        }
        let mut machines = Vec::with_capacity(gpu_nodes.len());
        for (rack, (_, members)) in racks.iter().enumerate() {
            for &i in members {
                let first_gpu = (machines.len() * usize::from(per_node)) as u16;
                machines.push(Machine {
                    name: gpu_nodes[i].0.clone(),
                    rack,
                    gpus: per_node,
                    first_gpu,
                });
            }
        }
        let types: Vec<&Vec<String>> = gpu_nodes.iter().map(|(_, g)| &g.types).collect();
        let uniform_type = match types[0].as_slice() {
            [one] if types.iter().all(|t| t.as_slice() == [one.clone()]) => Some(one.clone()),
            _ => None,
        };
        Ok(Self {
            partition: partition.to_string(),
            spec: ClusterSpec {
                racks: racks.len() as u16,
                machines_per_rack: per_rack as u16,
                gpus_per_machine: per_node,
            },
            racks: racks.into_iter().map(|(name, _)| name).collect(),
            machines,
            gpus: PartitionGpus {
                largest_node: per_node,
                uniform_type,
            },
        })
    }

    /// The machine holding `gpu`.
    pub fn machine_of(&self, gpu: GpuId) -> Option<&Machine> {
        self.machines
            .get(usize::from(gpu.0) / usize::from(self.spec.gpus_per_machine.max(1)))
    }

    /// The machine named `name`.
    pub fn machine(&self, name: &str) -> Option<&Machine> {
        self.machines.iter().find(|m| m.name == name)
    }

    /// GPUs in all.
    pub fn gpu_count(&self) -> usize {
        self.spec.gpus()
    }

    /// A GPU set as (node, GPUs on it), in node order.
    pub fn shape(&self, gpus: &[GpuId]) -> Vec<(String, u16)> {
        let mut counts = vec![0u16; self.machines.len()];
        for g in gpus {
            let m = usize::from(g.0) / usize::from(self.spec.gpus_per_machine.max(1));
            if let Some(c) = counts.get_mut(m) {
                *c += 1;
            }
        }
        self.machines
            .iter()
            .zip(counts)
            .filter(|(_, c)| *c > 0)
            .map(|(m, c)| (m.name.clone(), c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::json::parse_sinfo;

    const SINFO: &str = include_str!("fixtures/sinfo-idle-mixed.json");
    const TOPOLOGY: &str = include_str!("fixtures/topology-2racks.txt");

    fn node(name: &str, gres: &str) -> SlurmNode {
        SlurmNode {
            name: name.into(),
            states: vec!["IDLE".into()],
            gres: gres.into(),
            gres_used: String::new(),
            partitions: vec!["gpu".into()],
            reason: String::new(),
            closed_partitions: Vec::new(),
        }
    }

    #[test]
    fn lab_with_two_leaf_switches() {
        let nodes = parse_sinfo(SINFO).unwrap();
        let layout = ClusterLayout::discover("gpu", &nodes, TOPOLOGY).unwrap();
        assert_eq!(layout.spec.to_string(), "2x2x8");
        assert_eq!(layout.racks, ["s1", "s2"]);
        let names: Vec<&str> = layout.machines.iter().map(|m| &*m.name).collect();
        assert_eq!(names, ["n1", "n2", "n3", "n4"]);
        assert_eq!(layout.machine_of(GpuId(17)).unwrap().name, "n3");
        assert_eq!(
            layout.shape(&[GpuId(0), GpuId(3), GpuId(9), GpuId(30)]),
            [
                ("n1".to_string(), 2),
                ("n2".to_string(), 1),
                ("n4".to_string(), 1)
            ]
        );
    }

    #[test]
    fn no_topology_is_one_rack_and_gpu_less_nodes_are_left_out() {
        let nodes = [
            node("a", "gpu:4"),
            node("login", "(null)"),
            node("b", "gpu:4"),
        ];
        let layout = ClusterLayout::discover("gpu", &nodes, "").unwrap();
        assert_eq!(layout.spec.to_string(), "1x2x4");
        assert_eq!(layout.racks, ["all"]);
    }

    #[test]
    fn irregular_partitions_are_refused_with_the_difference() {
        let nodes = [node("a", "gpu:4"), node("b", "gpu:8")];
        let err = ClusterLayout::discover("gpu", &nodes, "")
            .unwrap_err()
            .to_string();
        assert!(err.contains("node b has 8 GPUs, node a has 4"), "{err}");
        let nodes = [node("a", "gpu:4"), node("b", "gpu:4"), node("c", "gpu:4")];
        let topo = "SwitchName=s1 Level=0 Nodes=a,b\nSwitchName=s2 Level=0 Nodes=c\n";
        let err = ClusterLayout::discover("gpu", &nodes, topo)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("rack s2 has 1 GPU nodes, rack s1 has 2"),
            "{err}"
        );
        let err = ClusterLayout::discover("cpu", &nodes, "")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no node with GPUs"), "{err}");
    }

    #[test]
    fn typed_gpus_and_default_partition() {
        let nodes = [node("a", "gpu:a100:4"), node("b", "gpu:a100:4(S:0)")];
        let layout = ClusterLayout::discover("gpu", &nodes, "").unwrap();
        assert_eq!(layout.gpus.uniform_type.as_deref(), Some("a100"));
        let text = "PartitionName=cpu Default=NO Nodes=c1\nPartitionName=gpu AllowGroups=ALL Default=YES Nodes=n[1-4]\n";
        assert_eq!(default_partition(text).as_deref(), Some("gpu"));
        assert_eq!(default_partition("PartitionName=x Default=NO"), None);
    }
}
