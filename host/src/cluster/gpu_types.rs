//! Which GPU type each machine holds: `--gpu-types v100:0-15,p100:16-23,k80:24-31`, or the
//! `[gpu_types]` table of a cluster file.
//!
//! Types are given per **machine** (global machine index, rack by rack: machine `m` of rack
//! `r` is `r × machines_per_rack + m`), since a machine's GPUs are one type in practice and
//! in the core's topology. Every machine must get exactly one type: an uncovered or doubly
//! covered machine is an error, as is a type the throughput table has no column for.

use super::ClusterError;
use super::throughputs::Throughputs;
use std::ops::RangeInclusive;

/// A parsed `TYPE:RANGES` list, not yet checked against a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuTypeSpec {
    /// `(type name, machine range)` in the order given.
    pub entries: Vec<(String, RangeInclusive<usize>)>,
}

impl GpuTypeSpec {
    /// Parses `TYPE:A-B[+C-D…],TYPE:…`: a comma-separated list of a type name, a colon and
    /// machine ranges (`A-B` inclusive, or one index; several joined by `+`). `source`
    /// names the input in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self, ClusterError> {
        let error = |field: &str, problem: String| ClusterError::at(source, 0, field, problem);
        let mut entries = Vec::new();
        for item in text.split(',').map(str::trim) {
            let Some((name, ranges)) = item.split_once(':') else {
                return Err(error(
                    "gpu_types",
                    format!("{item:?} is not TYPE:MACHINES, e.g. v100:0-15"),
                ));
            };
            let name = name.trim();
            if name.is_empty() {
                return Err(error("gpu_types", format!("{item:?} has no type name")));
            }
            for range in ranges.split('+') {
                entries.push((
                    name.to_string(),
                    parse_range(range.trim(), name, source, 0)?,
                ));
            }
        }
        Ok(Self { entries })
    }
}

/// `A-B` or `A` as an inclusive machine range; errors name `field` (the type).
pub(crate) fn parse_range(
    text: &str,
    field: &str,
    source: &str,
    line: usize,
) -> Result<RangeInclusive<usize>, ClusterError> {
    let number = |s: &str| {
        s.trim().parse::<usize>().map_err(|_| {
            ClusterError::at(
                source,
                line,
                field,
                format!("machine range {text:?}: {s:?} is not a machine index"),
            )
        })
    };
    let (lo, hi) = match text.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let n = number(text)?;
            (n, n)
        }
    };
    if lo > hi {
        return Err(ClusterError::at(
            source,
            line,
            field,
            format!("machine range {text:?} is empty ({lo} > {hi})"),
        ));
    }
    Ok(lo..=hi)
}

/// One GPU type per machine, resolved against a throughput table.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineTypes {
    /// Column of the throughput table for each machine.
    pub machine_type: Vec<usize>,
}

impl MachineTypes {
    /// Resolves `spec` for a cluster of `machines` machines: every machine covered once, every
    /// type a column of `table`. `lines[i]` is the line entry `i` came from (0 = a flag).
    pub fn resolve(
        spec: &GpuTypeSpec,
        lines: &[usize],
        machines: usize,
        table: &Throughputs,
        source: &str,
    ) -> Result<Self, ClusterError> {
        let mut machine_type: Vec<Option<usize>> = vec![None; machines];
        for (i, (name, range)) in spec.entries.iter().enumerate() {
            let line = lines.get(i).copied().unwrap_or(0);
            let column = table.type_index(name).ok_or_else(|| {
                ClusterError::at(
                    source,
                    line,
                    name,
                    format!(
                        "GPU type {name:?} has no throughput entry in {} (types: {})",
                        table.file,
                        table.gpu_types.join(", ")
                    ),
                )
            })?;
            if *range.end() >= machines {
                return Err(ClusterError::at(
                    source,
                    line,
                    name,
                    format!(
                        "machines {}-{} but the cluster has machines 0-{}",
                        range.start(),
                        range.end(),
                        machines.saturating_sub(1)
                    ),
                ));
            }
            for m in range.clone() {
                if let Some(other) = machine_type[m] {
                    return Err(ClusterError::at(
                        source,
                        line,
                        name,
                        format!("machine {m} is already {}", table.gpu_types[other]),
                    ));
                }
                machine_type[m] = Some(column);
            }
        }
        let missing: Vec<usize> = (0..machines)
            .filter(|&m| machine_type[m].is_none())
            .collect();
        if let Some(&first) = missing.first() {
            return Err(ClusterError::at(
                source,
                0,
                "gpu_types",
                format!(
                    "{} machine(s) have no GPU type (first: machine {first}); give every machine 0-{} one",
                    missing.len(),
                    machines - 1
                ),
            ));
        }
        Ok(Self {
            machine_type: machine_type.into_iter().flatten().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str, machines: usize) -> Result<MachineTypes, String> {
        let spec = GpuTypeSpec::parse(text, "--gpu-types").map_err(|e| e.to_string())?;
        MachineTypes::resolve(&spec, &[], machines, &Throughputs::gavel(), "--gpu-types")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn resolves_per_machine() {
        let t = resolve("v100:0-1,k80:2+4,p100:3", 5).unwrap();
        assert_eq!(t.machine_type, [0, 0, 2, 1, 2]);
        assert_eq!(resolve("K80:0-3", 4).unwrap().machine_type, [2; 4]);
    }

    #[test]
    fn errors_say_what_and_where() {
        let cases = [
            (
                "v100",
                4,
                "--gpu-types: gpu_types: \"v100\" is not TYPE:MACHINES",
            ),
            (
                "v100:0-x",
                4,
                "--gpu-types: v100: machine range \"0-x\": \"x\" is not",
            ),
            ("v100:3-1", 4, "is empty (3 > 1)"),
            (
                "a100:0-3",
                4,
                "--gpu-types: a100: GPU type \"a100\" has no throughput entry in gavel_throughputs.csv (types: v100, p100, k80)",
            ),
            (
                "v100:0-4",
                4,
                "machines 0-4 but the cluster has machines 0-3",
            ),
            ("v100:0-3,k80:3", 4, "k80: machine 3 is already v100"),
            (
                "v100:0-1",
                4,
                "2 machine(s) have no GPU type (first: machine 2)",
            ),
        ];
        for (text, machines, want) in cases {
            let err = resolve(text, machines).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
