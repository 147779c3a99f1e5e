//! GPU counts from Slurm's generic-resource strings: what a node has (`gpu:8`,
//! `gpu:a100:4(S:0-1)`) and what a job asks for (`--gpus` → `tres_per_job`, `--gres` /
//! `--gpus-per-node` → `tres_per_node`, `--gpus-per-task` → `tres_per_task`).
//!
//! gantry's core schedules a job as a gang of GPUs placed anywhere in the tree, so every
//! request becomes one total: per node × node count, per task × task count. A request gantry
//! cannot honour (malformed, per socket, per node beyond the largest node, a GPU type the
//! partition does not have uniformly) is a [`GresError`], whose text becomes the job's
//! rejection reason.

use super::json::SlurmJob;

/// GPUs a node has, from its GRES.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeGpus {
    /// GPUs in all.
    pub count: u16,
    /// GPU types named in its GRES (empty when untyped).
    pub types: Vec<String>,
}

/// A job's GPU request in gantry's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuRequest {
    /// GPUs in all (0 when the job asked for none).
    pub gpus: u16,
    /// The GPU type it named, if any (kept when gantry rewrites the request at start).
    pub gpu_type: Option<String>,
}

/// Why gantry cannot schedule a job's GPU request; the text is the rejection reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GresError {
    /// A GRES entry gantry cannot read.
    #[error("unparseable GPU request `{text}` ({flag}): {problem}")]
    Malformed {
        /// The string as Slurm printed it.
        text: String,
        /// The sbatch flag it came from.
        flag: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// More GPUs per node than any node of the partition has.
    #[error(
        "asks for {per_node} GPUs per node ({flag}), but the largest node of the partition has {largest}"
    )]
    PerNodeTooMany {
        /// GPUs per node asked for.
        per_node: u64,
        /// The flag.
        flag: &'static str,
        /// The largest node's GPUs.
        largest: u16,
    },
    /// A GPU type the partition does not have on every node.
    #[error("asks for GPU type `{wanted}`, but the partition's GPUs are {have}")]
    UnknownType {
        /// The type asked for.
        wanted: String,
        /// What the partition has, in words.
        have: String,
    },
    /// GPUs asked for in more than one way.
    #[error("asks for GPUs in two ways ({first} and {second}); use one")]
    Several {
        /// One flag.
        first: &'static str,
        /// The other.
        second: &'static str,
    },
    /// Per-socket GPUs: the core has no sockets.
    #[error("asks for GPUs per socket (--gpus-per-socket), which gantry does not schedule")]
    PerSocket,
    /// A total beyond what a GPU count can hold.
    #[error("asks for {0} GPUs, more than gantry can count (65535)")]
    TooMany(u64),
}

/// One `name[:type][:count]` entry of a GRES or TRES string.
struct Entry<'a> {
    name: &'a str,
    gpu_type: Option<&'a str>,
    count: Option<&'a str>,
}

/// Splits `gres:gpu:a100:2,gres:nic:1` (or `gres/gpu=2`, or a node's `gpu:a100:4(S:0-1)`,
/// or its usage `gpu:(null):4(IDX:0-3)`) into entries.
fn entries(text: &str) -> impl Iterator<Item = Entry<'_>> {
    top_level_items(text)
        .filter(|s| !s.trim().is_empty())
        .map(|raw| {
            let raw = raw.trim();
            let raw = raw
                .strip_prefix("gres:")
                .or_else(|| raw.strip_prefix("gres/"))
                .unwrap_or(raw);
            // A socket binding or index list, `(S:0-1)` / `(IDX:0-3)`, is not part of the count.
            let raw = match raw.rfind('(') {
                Some(i) if raw[i..].contains(':') => &raw[..i],
                _ => raw,
            };
            let mut parts = raw.split([':', '=']);
            let name = parts.next().unwrap_or("");
            let rest: Vec<&str> = parts.collect();
            let (gpu_type, count) = match rest.as_slice() {
                [] => (None, None),
                [one] if looks_numeric(one) => (None, Some(*one)),
                [one] => (Some(*one), None),
                [t, c] => (Some(*t), Some(*c)),
                // Too many fields: keep the whole tail as the "count" so it fails to parse.
                [t, ..] => (Some(*t), Some(&raw[name.len() + 1 + t.len() + 1..])),
            };
            Entry {
                name,
                gpu_type: gpu_type.filter(|t| *t != "(null)"),
                count,
            }
        })
}

/// `text` split at the commas that are not inside parentheses (`gpu:2(S:0,1),nic:1`).
fn top_level_items(text: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0usize;
    text.split(move |c: char| {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        c == ',' && depth == 0
    })
}

/// Whether Slurm would read `s` as a count rather than a type: it starts with a digit or a
/// sign (so `-1` is a bad count, not a type named "-1").
fn looks_numeric(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+')
}

/// A GRES count: digits with Slurm's optional `k`/`m`/`g` multiplier (×1024 each).
fn count(text: &str) -> Result<u64, String> {
    let (digits, multiplier) = match text.char_indices().last() {
        Some((i, 'k' | 'K')) => (&text[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&text[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{text}` is not a GPU count"));
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// GPUs of a node from its GRES (`gpu:8`, `gpu:a100:4(S:0-1),gpu:v100:2`, `(null)`).
pub fn node_gpus(gres: &str) -> Result<NodeGpus, String> {
    let mut gpus = NodeGpus::default();
    if gres == "(null)" {
        return Ok(gpus);
    }
    for entry in entries(gres).filter(|e| e.name == "gpu") {
        let n = count(entry.count.unwrap_or("1"))?;
        let n = u16::try_from(n).map_err(|_| format!("{n} GPUs on one node"))?;
        gpus.count = gpus
            .count
            .checked_add(n)
            .ok_or_else(|| format!("GRES {gres:?} has more than 65535 GPUs"))?;
        if let Some(t) = entry.gpu_type
            && !gpus.types.iter().any(|have| have == t)
        {
            gpus.types.push(t.to_string());
        }
    }
    Ok(gpus)
}

/// What the partition's GPUs look like, for checking typed requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionGpus {
    /// GPUs of the largest node.
    pub largest_node: u16,
    /// The one GPU type every GPU node has exclusively, if there is one.
    pub uniform_type: Option<String>,
}

/// Reads one flag's GPU count: `None` when the string names no GPU.
fn flag_gpus(text: &str, flag: &'static str) -> Result<Option<(u64, Option<String>)>, GresError> {
    let malformed = |problem: String| GresError::Malformed {
        text: text.to_string(),
        flag,
        problem,
    };
    let mut found: Option<(u64, Option<String>)> = None;
    for entry in entries(text).filter(|e| e.name == "gpu") {
        let n = count(entry.count.unwrap_or("1")).map_err(malformed)?;
        let t = entry.gpu_type.map(str::to_string);
        found = Some(match found {
            None => (n, t),
            Some((m, prev)) if prev == t => (m.saturating_add(n), t),
            Some(_) => return Err(malformed("several GPU types in one request".into())),
        });
    }
    Ok(found)
}

/// Whether the job asks for its GPUs per node on one node (`--gres=gpu:k` or
/// `--gpus-per-node=k`, k ≥ 2, no node count above 1). Slurm runs such a job on one node
/// with its k GPUs, where its script finds them; split over nodes, each node would hold
/// fewer. A per-job request (`--gpus=N`) may span nodes under Slurm too, and so may a
/// per-task one (`--gpus-per-task`).
pub fn asks_one_node(job: &SlurmJob) -> bool {
    let none = |text: &str, flag| matches!(flag_gpus(text, flag), Ok(None));
    job.node_count <= 1
        && job.max_nodes <= 1
        && none(&job.tres_per_job, "--gpus")
        && none(&job.tres_per_task, "--gpus-per-task")
        && matches!(flag_gpus(&job.tres_per_node, "--gres"), Ok(Some((k, _))) if k >= 2)
}

/// The job's GPU request as one total, checked against the partition.
pub fn job_request(job: &SlurmJob, partition: &PartitionGpus) -> Result<GpuRequest, GresError> {
    if flag_gpus(&job.tres_per_socket, "--gpus-per-socket")?.is_some() {
        return Err(GresError::PerSocket);
    }
    let per_job = flag_gpus(&job.tres_per_job, "--gpus")?.map(|r| ("--gpus", r, 1));
    let per_node = flag_gpus(&job.tres_per_node, "--gres")?
        .map(|r| ("--gres", r, u64::from(job.node_count.max(1))));
    let per_task = flag_gpus(&job.tres_per_task, "--gpus-per-task")?
        .map(|r| ("--gpus-per-task", r, u64::from(job.tasks.max(1))));
    let mut given = [per_job, per_node, per_task].into_iter().flatten();
    let Some((flag, (n, gpu_type), times)) = given.next() else {
        return Ok(GpuRequest {
            gpus: 0,
            gpu_type: None,
        });
    };
    if let Some((second, ..)) = given.next() {
        return Err(GresError::Several {
            first: flag,
            second,
        });
    }
    if flag == "--gres" && n > u64::from(partition.largest_node) {
        return Err(GresError::PerNodeTooMany {
            per_node: n,
            flag,
            largest: partition.largest_node,
        });
    }
    if let Some(wanted) = &gpu_type
        && partition.uniform_type.as_ref() != Some(wanted)
    {
        let have = match &partition.uniform_type {
            Some(t) => format!("all of type `{t}`"),
            None => "untyped or of several types".to_string(),
        };
        return Err(GresError::UnknownType {
            wanted: wanted.clone(),
            have,
        });
    }
    let total = n.saturating_mul(times);
    let gpus = u16::try_from(total).map_err(|_| GresError::TooMany(total))?;
    Ok(GpuRequest { gpus, gpu_type })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::json::JobStateName;

    fn job(per_job: &str, per_node: &str, per_task: &str, nodes: u32, tasks: u32) -> SlurmJob {
        SlurmJob {
            id: 1,
            state: JobStateName::Pending,
            reason: String::new(),
            held: true,
            partition: "gpu".into(),
            nodes: vec![],
            required_nodes: vec![],
            node_count: nodes,
            tasks,
            restart_count: 0,
            tres_per_job: per_job.into(),
            tres_per_node: per_node.into(),
            tres_per_task: per_task.into(),
            tres_per_socket: String::new(),
            gres_detail: vec![],
            submit_s: 0,
            start_s: 0,
            end_s: 0,
            deadline_s: None,
            time_limit_min: None,
            exclusive: false,
            array_job: None,
            array_tasks: String::new(),
            het_job: None,
            dependency: String::new(),
            comment: String::new(),
            ..SlurmJob::default()
        }
    }

    const LAB: PartitionGpus = PartitionGpus {
        largest_node: 8,
        uniform_type: None,
    };

    #[test]
    fn totals_of_valid_requests() {
        let cases: [(&str, &str, &str, u32, u32, u16); 9] = [
            ("gres:gpu:3", "", "", 1, 1, 3),
            ("", "gres:gpu:2", "", 1, 1, 2),
            ("", "gres:gpu:2", "", 3, 3, 6),
            ("", "", "gres:gpu:1", 1, 4, 4),
            ("", "gres:gpu", "", 1, 1, 1),
            ("", "gres:gpu:4,gres:nic:1", "", 1, 1, 4),
            ("gres/gpu=2", "", "", 1, 1, 2),
            ("", "", "", 1, 1, 0),
            ("", "gres:gpu:0", "", 1, 1, 0),
        ];
        for (per_job, per_node, per_task, nodes, tasks, expected) in cases {
            let r = job_request(&job(per_job, per_node, per_task, nodes, tasks), &LAB).unwrap();
            assert_eq!(r.gpus, expected, "{per_job:?} {per_node:?} {per_task:?}");
        }
    }

    #[test]
    fn a_per_node_request_on_one_node_asks_for_one_node() {
        let one_node = |per_job, per_node, per_task, nodes, max_nodes| {
            let mut j = job(per_job, per_node, per_task, nodes, 1);
            j.max_nodes = max_nodes;
            asks_one_node(&j)
        };
        assert!(one_node("", "gres:gpu:4", "", 1, 0), "--gres=gpu:4");
        assert!(one_node("", "gres:gpu:4", "", 1, 1), "--gres=gpu:4 -N 1");
        assert!(one_node("", "gres:gpu:2,gres:nic:1", "", 1, 0));
        assert!(
            !one_node("", "gres:gpu:1", "", 1, 0),
            "one GPU is never split"
        );
        assert!(!one_node("", "gres:gpu:4", "", 2, 2), "-N 2");
        assert!(!one_node("", "gres:gpu:4", "", 1, 3), "-N 1-3");
        assert!(!one_node("gres:gpu:4", "", "", 1, 0), "--gpus=4");
        assert!(!one_node("", "", "gres:gpu:1", 1, 0), "--gpus-per-task=1");
        assert!(!one_node("", "gres:nic:2", "", 1, 0), "no GPU");
    }

    #[test]
    fn bad_requests_name_what_is_wrong() {
        let cases: [(&str, &str, &str); 8] = [
            (
                "",
                "gres:gpu:-1",
                "unparseable GPU request `gres:gpu:-1` (--gres)",
            ),
            ("gres:gpu:99999999999", "", "more than gantry can count"),
            (
                "",
                "gres:gpu:99999999999",
                "asks for 99999999999 GPUs per node",
            ),
            (
                "",
                "gres:gpu:16",
                "asks for 16 GPUs per node (--gres), but the largest node of the partition has 8",
            ),
            (
                "",
                "gres:gpu:two",
                "asks for GPU type `two`, but the partition's GPUs are untyped",
            ),
            ("gres:gpu:2", "gres:gpu:2", "two ways (--gpus and --gres)"),
            ("gres:gpu:1x", "", "`1x` is not a GPU count"),
            ("gres:gpu:a:b:c", "", "unparseable"),
        ];
        for (per_job, per_node, expected) in cases {
            let err = job_request(&job(per_job, per_node, "", 1, 1), &LAB).unwrap_err();
            assert!(
                err.to_string().contains(expected),
                "{per_job:?} {per_node:?}: {err}"
            );
        }
        let mut socket = job("", "", "", 1, 1);
        socket.tres_per_socket = "gres:gpu:1".into();
        assert_eq!(job_request(&socket, &LAB), Err(GresError::PerSocket));
    }

    #[test]
    fn typed_requests_need_one_uniform_type() {
        let a100 = PartitionGpus {
            largest_node: 8,
            uniform_type: Some("a100".into()),
        };
        let r = job_request(&job("", "gres:gpu:a100:2", "", 1, 1), &a100).unwrap();
        assert_eq!((r.gpus, r.gpu_type.as_deref()), (2, Some("a100")));
        let err = job_request(&job("", "gres:gpu:v100:2", "", 1, 1), &a100).unwrap_err();
        assert!(err.to_string().contains("all of type `a100`"), "{err}");
    }

    #[test]
    fn node_gres() {
        let cases: [(&str, u16, &[&str]); 8] = [
            ("gpu:8", 8, &[]),
            ("gpu:(null):4(IDX:0-3)", 4, &[]),
            ("gpu:a100:2(IDX:0,5)", 2, &["a100"]),
            ("gpu:2(S:0,1),gpu:2(S:2)", 4, &[]),
            ("gpu:a100:4(S:0-1)", 4, &["a100"]),
            ("gpu:a100:2,gpu:v100:2", 4, &["a100", "v100"]),
            ("gpu:8,nic:1", 8, &[]),
            ("(null)", 0, &[]),
        ];
        for (gres, n, types) in cases {
            let g = node_gpus(gres).unwrap();
            assert_eq!(g.count, n, "{gres}");
            assert_eq!(g.types, types, "{gres}");
        }
        assert!(node_gpus("gpu:-2").is_err());
        assert!(node_gpus("gpu:a:b:c").is_err());
    }

    #[test]
    fn multipliers() {
        assert_eq!(count("2k"), Ok(2048));
        assert!(count("k").is_err());
        assert!(count("99999999999999999999").is_err());
    }
}
