//! The poll's listings in `squeue`'s and `sinfo`'s compact text form, which cost a fraction
//! of their `--json` (1,000 pending jobs on the lab: 0.03 s against 0.23 s; four nodes:
//! `sinfo` 3.5 ms against 7.4 ms): one line per job or node, the fields gantry reads
//! separated by `|`, times as Unix seconds (`SLURM_TIME_FORMAT=%s`, which
//! [`super::ProcessRunner`] sets for every command).
//!
//! Each poll lists the jobs that are not over ([`ACTIVE_STATES`]); the jobs the core holds
//! that that list lacks (they ended since the last poll) are then asked for by id with
//! every state, so a poll costs the active jobs plus the changes, not every job Slurm
//! still remembers (`MinJobAge`).
//!
//! Two fields differ from the JSON: `MaxNodes` prints 1 for a job that set no node count,
//! so 1 reads as "not set" (an explicit `-N 1` is read with [`show_job_args`] for the jobs
//! where it matters, see [`super::controller::NodeCounts`]), and there is no per-node GPU
//! detail (`gres_detail`: the note "Slurm split its GPUs as …" is not made).

use super::json::{JobStateName, SlurmJob, SlurmNode};

/// `squeue -O` fields, in the order [`parse_squeue_compact`] reads them; width 0 prints
/// each value whole. The two free texts come last: `Name`, ended by [`NAME_END`], then
/// `Comment` (either may hold `|`).
pub const FIELDS: [&str; 33] = [
    "JobID",
    "State",
    "Reason",
    "PriorityLong",
    "Partition",
    "NodeList",
    "ReqNodes",
    "NumNodes",
    "MaxNodes",
    "NumTasks",
    "RestartCnt",
    "tres-per-job",
    "tres-per-node",
    "tres-per-task",
    "tres-per-socket",
    "SubmitTime",
    "StartTime",
    "EndTime",
    "Deadline",
    "TimeLimit",
    "Requeue",
    "QOS",
    "exit_code",
    "ArrayJobID",
    "ArrayTaskID",
    "HetJobID",
    "OverSubscribe",
    "Dependency",
    "Reservation",
    "Licenses",
    "UserId",
    "Name",
    "Comment",
];

/// What ends `Name` in the listing, where every other field ends with `|`: the ASCII unit
/// separator, which a job name may hold only by design (Slurm accepts it). A line whose
/// name and comment hold more than one is read with no name (its `singleton` dependency is
/// not judged) and the comment after the last.
pub const NAME_END: char = '\u{1f}';

/// The states of jobs that are not over, for `squeue --states`.
pub const ACTIVE_STATES: &str = "PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING,REQUEUED,REQUEUE_HOLD,REQUEUE_FED,RESIZING,SIGNALING,STAGE_OUT,STOPPED,SPECIAL_EXIT";

/// `sinfo -O` fields, in the order [`parse_sinfo_compact`] reads them. `Reason` is last (an
/// operator's text may hold `|`). `StateComplete` is the base state and its flags joined by
/// `+` (`idle+drain`), the same names `sinfo --json` gives as `state` and `state_flags`.
pub const NODE_FIELDS: [&str; 7] = [
    "NodeList",
    "StateComplete",
    "Gres",
    "GresUsed",
    "Partition",
    "Available",
    "Reason",
];

/// `--Format=` for `fields`: width 0 prints each value whole, `|` ends every value but the
/// last (`Name` ends with [`NAME_END`]).
fn format_arg(fields: &[&str]) -> String {
    let format = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if i + 1 == fields.len() {
                format!("{f}:0")
            } else if *f == "Name" {
                format!("{f}:0{NAME_END}")
            } else {
                format!("{f}:0|")
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    format!("--Format={format}")
}

/// The `sinfo` arguments that list every node, once per partition it is in (hidden
/// partitions included), in the compact form.
pub fn sinfo_args() -> Vec<String> {
    vec![
        "--noheader".to_string(),
        "--all".to_string(),
        "--Node".to_string(),
        format_arg(&NODE_FIELDS),
    ]
}

/// The `scontrol` arguments that show one job on one line, whose `NumNodes=` field tells
/// whether the job set its own node count ([`parse_max_nodes`]).
pub fn show_job_args(job: u32) -> Vec<String> {
    vec![
        "show".to_string(),
        "job".to_string(),
        "--oneliner".to_string(),
        job.to_string(),
    ]
}

/// The most nodes a pending job may run on as it asked (`-N min-max`), from `scontrol show
/// job --oneliner`: `NumNodes=1-1` for `-N 1` (0 when the job left it to Slurm:
/// `NumNodes=1`). Slurm prints the range only when the maximum is set.
pub fn parse_max_nodes(text: &str) -> Result<u32, String> {
    let field = text
        .split_whitespace()
        .find_map(|f| f.strip_prefix("NumNodes="))
        .ok_or_else(|| format!("no NumNodes= in {:?}", text.trim()))?;
    let bad = || format!("NumNodes={field}");
    match field.split_once('-') {
        None => field.parse::<u32>().map(|_| 0).map_err(|_| bad()),
        Some((_, max)) => max.parse::<u32>().map_err(|_| bad()),
    }
}

/// The `squeue` arguments that list the jobs in `states` (`--jobs` when `jobs` is not
/// empty) in the compact form.
pub fn squeue_args(states: &str, jobs: &[u32]) -> Vec<String> {
    let mut args = vec![
        "--noheader".to_string(),
        format!("--states={states}"),
        format_arg(&FIELDS),
    ];
    if !jobs.is_empty() {
        let ids: Vec<String> = jobs.iter().map(u32::to_string).collect();
        args.push(format!("--jobs={}", ids.join(",")));
    }
    args
}

/// Why a line of a listing could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{command} (compact): line {line}: {problem}: {text:?}")]
pub struct CompactError {
    /// `squeue`, `sinfo` or `scontrol show reservation`.
    pub command: &'static str,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub problem: String,
    /// The line (at most 200 characters).
    pub text: String,
}

/// A value Slurm prints for "none".
fn none(value: &str) -> bool {
    matches!(value, "" | "N/A" | "(null)" | "None" | "Unknown" | "n/a")
}

fn text(value: &str) -> String {
    if none(value) {
        String::new()
    } else {
        value.to_string()
    }
}

fn number(value: &str) -> u64 {
    value.parse().unwrap_or(0)
}

/// `[D-]HH:MM:SS`, `MM:SS` or `MM` → minutes (rounded up); `None` for `UNLIMITED` and the
/// like.
fn time_limit_min(value: &str) -> Option<u64> {
    let (days, rest) = match value.split_once('-') {
        Some((d, rest)) => (d.parse::<u64>().ok()?, rest),
        None => (0, value),
    };
    let parts: Vec<u64> = rest
        .split(':')
        .map(|p| p.parse::<u64>().ok())
        .collect::<Option<_>>()?;
    let seconds = match parts.as_slice() {
        [m] => m * 60,
        [m, s] => m * 60 + s,
        [h, m, s] => h * 3600 + m * 60 + s,
        _ => return None,
    };
    let minutes = (days * 86_400 + seconds).div_ceil(60);
    (minutes > 0).then_some(minutes)
}

/// Node lists as printed (`n[1-2]`, empty for none).
fn hosts(value: &str) -> Result<Vec<String>, String> {
    if none(value) {
        return Ok(Vec::new());
    }
    super::hostlist::expand(value)
}

fn compact_error(command: &'static str, index: usize, line: &str, problem: String) -> CompactError {
    CompactError {
        command,
        line: index + 1,
        problem,
        text: line.chars().take(200).collect(),
    }
}

/// A line's `count` values, trimmed (the last keeps any `|` it holds).
fn fields(line: &str, count: usize) -> Result<Vec<&str>, String> {
    let f: Vec<&str> = line.splitn(count, '|').map(str::trim).collect();
    if f.len() == count {
        Ok(f)
    } else {
        Err(format!("{} fields, expected {count}", f.len()))
    }
}

/// Parses the listing of [`sinfo_args`]: every node once, with the partitions of all its
/// lines (`gpu*`, the default partition, read as `gpu`).
pub fn parse_sinfo_compact(listing: &str) -> Result<Vec<SlurmNode>, CompactError> {
    let mut nodes: Vec<SlurmNode> = Vec::new();
    for (index, line) in listing.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fail = |problem: String| compact_error("sinfo", index, line, problem);
        let f = fields(line, NODE_FIELDS.len()).map_err(fail)?;
        let name = text(f[0]);
        if name.is_empty() {
            return Err(fail("no node name".into()));
        }
        let partition = text(f[4].trim_end_matches('*'));
        // The partition's availability: `up`, `drain` (starts what is queued), `down` or
        // `inact` (starts nothing).
        let closed = matches!(f[5], "down" | "inact" | "inactive");
        if let Some(known) = nodes.iter_mut().find(|n| n.name == name) {
            if !partition.is_empty() && !known.partitions.contains(&partition) {
                if closed {
                    known.closed_partitions.push(partition.clone());
                }
                known.partitions.push(partition);
            }
            continue;
        }
        let mut states: Vec<String> = f[1]
            .split('+')
            .filter(|s| !s.is_empty())
            .map(str::to_ascii_uppercase)
            .collect();
        states.dedup();
        nodes.push(SlurmNode {
            name,
            states,
            gres: text(f[2]),
            gres_used: text(f[3]),
            closed_partitions: (closed && !partition.is_empty())
                .then(|| partition.clone())
                .into_iter()
                .collect(),
            partitions: (!partition.is_empty())
                .then_some(partition)
                .into_iter()
                .collect(),
            // sinfo prints `none` where the node has no reason.
            reason: if f[6] == "none" {
                String::new()
            } else {
                text(f[6])
            },
        });
    }
    Ok(nodes)
}

/// A listing's last field, `Name` [`NAME_END`] `Comment`: the name (`None` when the text
/// holds more than one separator, so that where the name ends is not known) and the comment.
fn name_and_comment(rest: &str) -> (Option<&str>, &str) {
    match rest.split_once(NAME_END) {
        Some((name, comment)) if !comment.contains(NAME_END) => (Some(name), comment),
        Some(_) => (None, rest.rsplit(NAME_END).next().unwrap_or("")),
        None => (None, rest),
    }
}

/// Parses the listing of [`squeue_args`].
pub fn parse_squeue_compact(listing: &str) -> Result<Vec<SlurmJob>, CompactError> {
    let mut jobs = Vec::new();
    for (index, line) in listing.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fail = |problem: String| compact_error("squeue", index, line, problem);
        // Every field up to `Name` ends with `|`; the rest is `Name`, NAME_END, `Comment`.
        let f = fields(line, FIELDS.len() - 1).map_err(fail)?;
        let (name, comment) = name_and_comment(f[31]);
        let id = f[0]
            .parse::<u32>()
            .map_err(|_| fail(format!("job id {:?}", f[0])))?;
        let state = JobStateName::parse(&[f[1].to_string()]);
        let priority = f[3].parse::<u64>().ok();
        let reason = text(f[2]);
        let held = state == JobStateName::Pending
            && (priority == Some(0) || (priority.is_none() && reason.starts_with("JobHeld")));
        let min_nodes = number(f[7]).min(u64::from(u32::MAX)) as u32;
        // `MaxNodes` prints 1 when the job set no node count (the JSON says 0).
        let max_nodes = match number(f[8]).min(u64::from(u32::MAX)) as u32 {
            1 => 0,
            m => m,
        };
        let time = |v: &str| if none(v) { 0 } else { number(v) };
        jobs.push(SlurmJob {
            id,
            state,
            reason,
            held,
            partition: text(f[4]),
            nodes: hosts(f[5]).map_err(|e| fail(format!("NodeList: {e}")))?,
            required_nodes: hosts(f[6]).map_err(|e| fail(format!("ReqNodes: {e}")))?,
            node_count: min_nodes,
            max_nodes,
            tasks: number(f[9]).min(u64::from(u32::MAX)) as u32,
            restart_count: number(f[10]).min(u64::from(u32::MAX)) as u32,
            tres_per_job: text(f[11]),
            tres_per_node: text(f[12]),
            tres_per_task: text(f[13]),
            tres_per_socket: text(f[14]),
            gres_detail: Vec::new(),
            submit_s: time(f[15]),
            start_s: time(f[16]),
            end_s: time(f[17]),
            deadline_s: Some(time(f[18])).filter(|&d| d > 0),
            time_limit_min: time_limit_min(f[19]),
            requeue: f[20] == "1",
            qos: text(f[21]),
            exit_status: if none(f[22]) {
                None
            } else {
                f[22].parse::<u32>().ok()
            },
            // A single job shows its own id and `N/A`.
            array_job: (!none(f[24])).then(|| f[23].parse::<u32>().ok()).flatten(),
            array_tasks: text(f[24]),
            het_job: f[25].parse::<u32>().ok().filter(|&h| h > 0),
            // `NO` for `--exclusive` (Slurm's `job_share_string`).
            exclusive: f[26] == "NO",
            dependency: text(f[27]),
            reservation: text(f[28]),
            licenses: text(f[29]),
            owner: f[30]
                .parse::<u32>()
                .ok()
                .zip(name)
                .map(|(user, name)| (user, name.to_string())),
            comment: text(comment),
        });
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as Slurm 22.05 printed them on the lab (`SLURM_TIME_FORMAT=%s`).
    const LISTING: &str = "\
16|PENDING|JobHeldUser|0|gpu|||1|1|1|0|gres:gpu:2|N/A|N/A|N/A|1796308432|N/A|N/A|N/A|1-02:04:00|1|(null)|0|16|N/A|N/A|OK|afterok:2(unfulfilled),afterany:5_*(unfulfilled)|team|(null)|1000|train|v2\u{1f}(null)
15|PENDING|JobHeldUser|0|gpu|||2|2|2|0|N/A|gres:gpu:3|N/A|N/A|1796308432|N/A|N/A|1796309032|1:00|1|(null)|0|9|1-3|N/A|OK|(null)|(null)|sim:1,cad:2|1000|sweep\u{1f}a gantry:checkpoint | pipe
7|RUNNING|None|4294901753|gpu|n[1-2]|n1,n2|2|2|1|1|N/A|gres:gpu:4|N/A|N/A|1796308000|1796308010|1796308070|N/A|1:00|0|normal|0|7|N/A|7|NO|(null)|(null)|(null)|1000|eval\u{1f}
2|COMPLETING|None|4294901754|gpu|n1|n1|1|1|1|0|gres:gpu:1|N/A|N/A|N/A|1796308000|1796308010|1796308070|N/A|1:00|0|normal|768|9|2|N/A|OK|(null)|(null)|(null)|1000|prep\u{1f}
";

    #[test]
    fn a_node_count_the_job_set_reads_from_scontrol() {
        // Lines of `scontrol show job --oneliner` on the lab (Slurm 22.05), cut short.
        let line = |num_nodes: &str| {
            format!(
                "JobId=3 JobName=wrap JobState=PENDING NodeList= {num_nodes} NumCPUs=1 NumTasks=1"
            )
        };
        assert_eq!(parse_max_nodes(&line("NumNodes=1")), Ok(0), "no -N");
        assert_eq!(parse_max_nodes(&line("NumNodes=1-1")), Ok(1), "-N 1");
        assert_eq!(parse_max_nodes(&line("NumNodes=1-2")), Ok(2), "-N 1-2");
        assert_eq!(
            parse_max_nodes(&line("NumNodes=1-x")),
            Err("NumNodes=1-x".to_string())
        );
        assert!(parse_max_nodes("JobId=3 JobState=PENDING").is_err());
        assert_eq!(show_job_args(3), ["show", "job", "--oneliner", "3"]);
    }

    #[test]
    fn reads_held_running_and_the_fields_gantry_needs() {
        let jobs = parse_squeue_compact(LISTING).unwrap();
        assert_eq!(jobs.len(), 4);
        // The script's exit as Slurm keeps it (exit 3: 3 << 8), known while completing.
        assert_eq!(jobs[3].state, JobStateName::Completing);
        assert_eq!(jobs[3].exit_status, Some(768));
        assert_eq!(jobs[2].exit_status, Some(0));
        let held = &jobs[0];
        assert!(held.held && held.state == JobStateName::Pending);
        assert_eq!(held.tres_per_job, "gres:gpu:2");
        assert_eq!(held.tres_per_node, "");
        assert_eq!((held.node_count, held.max_nodes), (1, 0));
        assert_eq!(held.time_limit_min, Some(26 * 60 + 4));
        assert_eq!((held.qos.as_str(), held.comment.as_str()), ("", ""));
        assert_eq!(
            held.dependency,
            "afterok:2(unfulfilled),afterany:5_*(unfulfilled)"
        );
        assert_eq!(jobs[1].dependency, "");
        assert!(held.requeue);
        let pinned = &jobs[1];
        assert_eq!((pinned.node_count, pinned.max_nodes), (2, 2));
        assert_eq!(pinned.deadline_s, Some(1_796_309_032));
        assert_eq!(pinned.comment, "a gantry:checkpoint | pipe");
        assert_eq!(pinned.time_limit_min, Some(1));
        let running = &jobs[2];
        assert_eq!(running.state, JobStateName::Running);
        assert!(!running.held && !running.requeue);
        assert_eq!(running.nodes, ["n1", "n2"]);
        assert_eq!(running.required_nodes, ["n1", "n2"]);
        assert_eq!(
            (running.start_s, running.end_s),
            (1_796_308_010, 1_796_308_070)
        );
        assert_eq!(running.restart_count, 1);
        assert_eq!(running.qos, "normal");
        // A single job; the pending tasks of array 9; one task of it.
        assert_eq!((held.array_job, held.array_tasks.as_str()), (None, ""));
        assert_eq!(
            (pinned.array_job, pinned.array_tasks.as_str()),
            (Some(9), "1-3")
        );
        assert_eq!(
            (jobs[3].array_job, jobs[3].array_tasks.as_str()),
            (Some(9), "2")
        );
        // A heterogeneous job's component.
        assert_eq!((running.het_job, held.het_job), (Some(7), None));
        // `--exclusive` shows as OverSubscribe `NO`.
        assert!(running.exclusive && !held.exclusive && !pinned.exclusive);
        // Owner and name, a `|` in the name and in the comment included.
        assert_eq!(held.owner, Some((1000, "train|v2".to_string())));
        assert_eq!(running.owner, Some((1000, "eval".to_string())));
        assert_eq!(
            (held.reservation.as_str(), running.reservation.as_str()),
            ("team", "")
        );
        assert_eq!(
            (pinned.licenses.as_str(), held.licenses.as_str()),
            ("sim:1,cad:2", "")
        );
    }

    #[test]
    fn a_name_and_comment_with_several_separators_leave_the_name_unknown() {
        assert_eq!(name_and_comment("a|b\u{1f}c|d"), (Some("a|b"), "c|d"));
        assert_eq!(name_and_comment("a\u{1f}b\u{1f}c"), (None, "c"));
        assert_eq!(name_and_comment("no separator"), (None, "no separator"));
    }

    /// Nodes as Slurm 22.05's `sinfo` printed them on the lab ([`sinfo_args`]): one mixed
    /// (a 3-GPU job), one down, one drained, each with its reason; plus a second partition
    /// of n1, set down, written by hand.
    const NODES: &str = "\
n1|mixed|gpu:8|gpu:3|gpu*|up|none
n2|idle|gpu:8|gpu:0|gpu*|up|none
n3|down|gpu:8|gpu:0|gpu*|up|fan failed
n4|idle+drain|gpu:8|gpu:0|gpu*|up|maintenance | room 2
n1|mixed|gpu:8|gpu:3|debug|down|none
";

    #[test]
    fn reads_each_node_once_with_its_states_partitions_and_reason() {
        let nodes = parse_sinfo_compact(NODES).unwrap();
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["n1", "n2", "n3", "n4"]);
        assert_eq!(nodes[0].partitions, ["gpu", "debug"]);
        // `scontrol update partitionname=debug state=down`.
        assert_eq!(nodes[0].closed_partitions, ["debug"]);
        assert!(nodes[1].closed_partitions.is_empty());
        assert_eq!(
            (nodes[0].gres.as_str(), nodes[0].gres_used.as_str()),
            ("gpu:8", "gpu:3")
        );
        assert_eq!(nodes[0].reason, "");
        assert_eq!(nodes[3].states, ["IDLE", "DRAIN"]);
        assert_eq!(nodes[3].reason, "maintenance | room 2");
        assert_eq!(nodes[2].reason, "fan failed");
        let usable: Vec<bool> = nodes.iter().map(SlurmNode::usable).collect();
        assert_eq!(usable, [true, true, false, false]);
        let err = parse_sinfo_compact("n1|idle").unwrap_err().to_string();
        assert!(
            err.starts_with("sinfo (compact): line 1: 2 fields"),
            "{err}"
        );
        assert_eq!(
            sinfo_args()[3],
            "--Format=NodeList:0|,StateComplete:0|,Gres:0|,GresUsed:0|,Partition:0|,Available:0|,Reason:0"
        );
    }

    #[test]
    fn bad_lines_name_the_line_and_limits_parse() {
        let err = parse_squeue_compact("x|PENDING").unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("2 fields"), "{err}");
        let line = LISTING.lines().next().unwrap().replacen("16", "job", 1);
        assert!(
            parse_squeue_compact(&line)
                .unwrap_err()
                .to_string()
                .contains("job id")
        );
        assert_eq!(time_limit_min("UNLIMITED"), None);
        assert_eq!(time_limit_min("2:03:04"), Some(124));
        assert_eq!(time_limit_min("0:30"), Some(1));
        assert_eq!(time_limit_min("5"), Some(5));
    }

    #[test]
    fn arguments_list_every_field_and_the_jobs_asked_for() {
        let args = squeue_args("all", &[3, 9]);
        assert_eq!(args[0], "--noheader");
        assert_eq!(args[1], "--states=all");
        assert!(args[2].starts_with("--Format=JobID:0|,State:0|,"));
        assert!(args[2].ends_with(",Comment:0"));
        assert_eq!(args[3], "--jobs=3,9");
        assert_eq!(squeue_args(ACTIVE_STATES, &[]).len(), 3);
    }
}
