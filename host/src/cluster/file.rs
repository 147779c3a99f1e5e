//! Cluster files (`--cluster-file FILE`, TOML): the shape, the GPU type of every machine and,
//! optionally, another throughput table.
//!
//! ```toml
//! # 4 racks × 8 machines × 8 GPUs; machines are numbered rack by rack from 0.
//! racks = 4
//! machines_per_rack = 8
//! gpus_per_machine = 8
//! # throughputs = "my_table.csv"   # default: the bundled Gavel table
//!
//! [gpu_types]            # type = machine ranges (A-B inclusive, joined by +)
//! v100 = "0-15"
//! p100 = "16-23"
//! k80 = "24-31"
//! ```
//!
//! Unknown keys (a typo such as `rakcs`) are errors, as are missing keys, values of the wrong
//! kind, unknown GPU types and uncovered machines; each names the file, the line and the
//! field.

use super::{Cluster, ClusterError, GpuTypeSpec, GpuTypes, MachineTypes, Throughputs};
use crate::cluster::ClusterSpec;
use crate::toml_input::{self, line_of};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterFile {
    racks: Spanned<u16>,
    machines_per_rack: Spanned<u16>,
    gpus_per_machine: Spanned<u16>,
    throughputs: Option<Spanned<String>>,
    gpu_types: Option<BTreeMap<String, Spanned<String>>>,
}

/// Reads a cluster file.
pub fn load(path: &Path) -> Result<Cluster, ClusterError> {
    let (name, text) = toml_input::read(path)?;
    parse(&text, &name, path.parent())
}

/// Parses cluster-file text; `name` labels errors, a relative `throughputs` path is taken
/// from `dir`.
pub fn parse(text: &str, name: &str, dir: Option<&Path>) -> Result<Cluster, ClusterError> {
    let file: ClusterFile = toml_input::from_str(text, name)?;
    let positive = |value: &Spanned<u16>, field: &str| {
        if *value.get_ref() == 0 {
            Err(ClusterError::at(
                name,
                line_of(text, value.span().start),
                field,
                "must be a positive integer",
            ))
        } else {
            Ok(*value.get_ref())
        }
    };
    let spec = ClusterSpec {
        racks: positive(&file.racks, "racks")?,
        machines_per_rack: positive(&file.machines_per_rack, "machines_per_rack")?,
        gpus_per_machine: positive(&file.gpus_per_machine, "gpus_per_machine")?,
    };
    let table = match &file.throughputs {
        None => Throughputs::gavel(),
        Some(p) => {
            let path = dir.unwrap_or(Path::new(".")).join(p.get_ref());
            Throughputs::load(&path).map_err(|e| {
                ClusterError::at(
                    name,
                    line_of(text, p.span().start),
                    "throughputs",
                    e.to_string(),
                )
            })?
        }
    };
    let Some(types) = file.gpu_types else {
        return Ok(Cluster::homogeneous(spec));
    };
    let mut entries = Vec::new();
    let mut lines = Vec::new();
    let mut sorted: Vec<(&String, &Spanned<String>)> = types.iter().collect();
    sorted.sort_by_key(|(_, v)| v.span().start);
    for (type_name, ranges) in sorted {
        let line = line_of(text, ranges.span().start);
        for range in ranges.get_ref().split('+') {
            let range = super::gpu_types::parse_range(range.trim(), type_name, name, line)?;
            entries.push((type_name.clone(), range));
            lines.push(line);
        }
    }
    let spec_entries = GpuTypeSpec { entries };
    let machines = usize::from(spec.racks) * usize::from(spec.machines_per_rack);
    let resolved = MachineTypes::resolve(&spec_entries, &lines, machines, &table, name)?;
    let text_form = spec_entries
        .entries
        .iter()
        .map(|(t, r)| format!("{t}:{}-{}", r.start(), r.end()))
        .collect::<Vec<_>>()
        .join(",");
    Ok(Cluster {
        spec,
        types: Some(GpuTypes {
            table: Arc::new(table),
            machines: resolved,
            text: text_form,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "racks = 2\nmachines_per_rack = 2\ngpus_per_machine = 4\n\n[gpu_types]\nv100 = \"0-1\"\nk80 = \"2+3\"\n";

    #[test]
    fn parses_a_heterogeneous_cluster() {
        let c = parse(GOOD, "c.toml", None).unwrap();
        assert_eq!(c.spec.to_string(), "2x2x4");
        assert_eq!(
            c.types.as_ref().unwrap().machines.machine_type,
            [0, 0, 2, 2]
        );
        assert!(c.is_heterogeneous());
        let flat = parse(
            "racks = 1\nmachines_per_rack = 2\ngpus_per_machine = 8\n",
            "c.toml",
            None,
        )
        .unwrap();
        assert!(!flat.is_heterogeneous());
    }

    #[test]
    fn typos_and_bad_values_name_file_line_field() {
        let cases = [
            (
                GOOD.replace("racks = 2", "rakcs = 2"),
                "c.toml:1: rakcs: unknown field",
            ),
            (GOOD.replace("racks = 2\n", ""), "racks"),
            (
                GOOD.replace("gpus_per_machine = 4", "gpus_per_machine = \"four\""),
                "c.toml:3: gpus_per_machine:",
            ),
            (
                GOOD.replace("machines_per_rack = 2", "machines_per_rack = 0"),
                "c.toml:2: machines_per_rack: must be a positive integer",
            ),
            (
                GOOD.replace("k80 = ", "a100 = "),
                "c.toml:7: a100: GPU type \"a100\" has no throughput entry",
            ),
            (
                GOOD.replace("\"2+3\"", "\"2\""),
                "c.toml: gpu_types: 1 machine(s) have no GPU type (first: machine 3)",
            ),
            (
                GOOD.replace("\"0-1\"", "\"0-x\""),
                "c.toml:6: v100: machine range \"0-x\"",
            ),
        ];
        for (text, want) in cases {
            let err = parse(&text, "c.toml", None).unwrap_err().to_string();
            assert!(err.contains(want), "want {want:?}, got {err}");
        }
    }
}
