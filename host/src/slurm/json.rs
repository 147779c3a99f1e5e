//! What `squeue --json` and `sinfo --json` say, reduced to what gantry reads: the job and
//! node model of `gantry slurm`. The daemon's polls read the compact listings instead
//! ([`super::compact`], the same model at a fraction of the cost); the JSON readers read
//! the fixtures the controller's tests run on.
//!
//! Slurm 22.05 (OpenAPI v0.0.38) prints plain numbers and one state string per job; 23.02 and
//! later print numbers as `{"set": …, "infinite": …, "number": …}` and states as lists of
//! flags. Both shapes are accepted here, so the rest of `gantry slurm` sees one model. The
//! fixtures in `fixtures/` were captured from the 22.05 lab (`scripts/slurm-lab.sh`), trimmed
//! to the fields gantry reads.

use super::hostlist;
use serde::Deserialize;
use serde_json::Value;

/// Why Slurm's JSON could not be used.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    /// Not JSON, or not the expected shape.
    #[error("{command}: unreadable JSON: {source}")]
    Syntax {
        /// `squeue --json` or `sinfo --json`.
        command: &'static str,
        /// The parser's error (with line and column).
        source: serde_json::Error,
    },
    /// Slurm reported errors in its answer (e.g. the controller is not reachable).
    #[error("{command}: Slurm reported: {errors}")]
    Reported {
        /// The command.
        command: &'static str,
        /// The `errors` array as text.
        errors: String,
    },
    /// An entry lacks a field gantry needs or has a malformed one.
    #[error("{command}: {entry}: field `{field}`: {problem}")]
    Field {
        /// The command.
        command: &'static str,
        /// Which entry (`job 12`, `node #3`).
        entry: String,
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
}

/// A job's state, as Slurm names it (the base state; flags such as `REQUEUED` aside).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum JobStateName {
    /// Waiting (held or not).
    #[default]
    Pending,
    /// Running (CONFIGURING counts: its nodes are allocated).
    Running,
    /// Running but suspended, or stopped: still holds its nodes.
    Suspended,
    /// Ending or being requeued: still holds its nodes until Slurm releases them.
    Completing,
    /// Ended with exit code 0.
    Completed,
    /// Ended some other way (`FAILED`, `CANCELLED`, `TIMEOUT`, `NODE_FAIL`, `DEADLINE`, …).
    Ended(String),
    /// A state gantry does not know; logged and left alone.
    Other(String),
}

impl JobStateName {
    /// Parses Slurm's state names (base state first; `COMPLETING` and `CONFIGURING` flags
    /// win over the base state because they decide whether nodes are still held).
    pub(crate) fn parse(states: &[String]) -> Self {
        let has = |name: &str| states.iter().any(|s| s.eq_ignore_ascii_case(name));
        if has("COMPLETING") || has("STAGE_OUT") {
            return JobStateName::Completing;
        }
        if has("CONFIGURING") {
            return JobStateName::Running;
        }
        let base = states
            .first()
            .map(|s| s.to_ascii_uppercase())
            .unwrap_or_default();
        match base.as_str() {
            "PENDING" => JobStateName::Pending,
            "RUNNING" | "SIGNALING" | "RESIZING" => JobStateName::Running,
            "SUSPENDED" | "STOPPED" => JobStateName::Suspended,
            "COMPLETED" => JobStateName::Completed,
            "CANCELLED" | "FAILED" | "TIMEOUT" | "NODE_FAIL" | "PREEMPTED" | "BOOT_FAIL"
            | "DEADLINE" | "OUT_OF_MEMORY" | "REVOKED" | "SPECIAL_EXIT" => {
                JobStateName::Ended(base)
            }
            _ => JobStateName::Other(states.join(",")),
        }
    }

    /// Whether the job has ended for good.
    pub fn is_final(&self) -> bool {
        matches!(self, JobStateName::Completed | JobStateName::Ended(_))
    }

    /// Whether the job is started and not ending (running or suspended): what Slurm counts
    /// against limits and `singleton`, and what a job outside gantry holds GPUs for.
    pub fn runs(&self) -> bool {
        matches!(self, JobStateName::Running | JobStateName::Suspended)
    }

    /// Whether the job holds nodes now (running, suspended or completing).
    pub fn holds_nodes(&self) -> bool {
        matches!(
            self,
            JobStateName::Running | JobStateName::Suspended | JobStateName::Completing
        )
    }

    /// Slurm's name for it.
    pub fn name(&self) -> &str {
        match self {
            JobStateName::Pending => "PENDING",
            JobStateName::Running => "RUNNING",
            JobStateName::Suspended => "SUSPENDED",
            JobStateName::Completing => "COMPLETING",
            JobStateName::Completed => "COMPLETED",
            JobStateName::Ended(s) | JobStateName::Other(s) => s,
        }
    }
}

/// One job of `squeue --json`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlurmJob {
    /// Slurm's job id.
    pub id: u32,
    /// Its state.
    pub state: JobStateName,
    /// Slurm's reason (`JobHeldUser`, `Resources`, `BeginTime`, …).
    pub reason: String,
    /// Held: pending with priority 0 (`sbatch --hold`, `scontrol hold`, `requeuehold`).
    pub held: bool,
    /// Its partition.
    pub partition: String,
    /// Nodes it runs on (or ran on), expanded.
    pub nodes: Vec<String>,
    /// Nodes it is pinned to (`NodeList=`), expanded.
    pub required_nodes: Vec<String>,
    /// Requested node count (the minimum of `-N min-max`; 1 when not given).
    pub node_count: u32,
    /// The most nodes it may run on: set by `-N` (`-N 2` → 2, `-N 1-3` → 3), 0 when the
    /// job left its node count to the scheduler.
    pub max_nodes: u32,
    /// Requested task count.
    pub tasks: u32,
    /// Times Slurm requeued it.
    pub restart_count: u32,
    /// `--gpus` and friends, as Slurm prints them (`gres:gpu:4`); empty when not given.
    pub tres_per_job: String,
    /// `--gres` / `--gpus-per-node`.
    pub tres_per_node: String,
    /// `--gpus-per-task`.
    pub tres_per_task: String,
    /// `--gpus-per-socket`.
    pub tres_per_socket: String,
    /// Per-node GPU allocation while it runs, in node order (`gpu:4(IDX:0-3)`).
    pub gres_detail: Vec<String>,
    /// Submission time, Unix seconds.
    pub submit_s: u64,
    /// Start time, Unix seconds (0 = not started; for a pending job Slurm's estimate).
    pub start_s: u64,
    /// End time, Unix seconds (meaningful once final).
    pub end_s: u64,
    /// `--deadline`, Unix seconds.
    pub deadline_s: Option<u64>,
    /// Time limit (`--time`), minutes; `None` when unlimited or not reported. Slurm cancels
    /// a job whose start + time limit would pass its deadline, so gantry applies that rule.
    pub time_limit_min: Option<u64>,
    /// `--exclusive`: no other job may share its nodes.
    pub exclusive: bool,
    /// The job array it belongs to (`--array`), by the array's job id; `None` for a single
    /// job.
    pub array_job: Option<u32>,
    /// Its array tasks: the pending ones of the array's record (`1-3`), or the task it is
    /// (`2`); empty for a single job.
    pub array_tasks: String,
    /// The heterogeneous job it is a component of (`sbatch … : …`), by its first
    /// component's id; `None` for a single job.
    pub het_job: Option<u32>,
    /// What it waits for (`--dependency`) as Slurm shows it: `afterok:7(unfulfilled)`, items
    /// joined by `,` (all) or `?` (any); empty for none. Slurm does not update the states
    /// in brackets while the job is held ([`super::dependency`]).
    pub dependency: String,
    /// The advance reservation it asks for (`--reservation`), empty for none.
    pub reservation: String,
    /// The licenses it asks for (`-L sim:1,cad:2`), empty for none.
    pub licenses: String,
    /// Its owner's numeric user id and its name (`--job-name`): a `singleton` dependency
    /// waits for the other jobs of the same name and user. `None` when the listing did not
    /// say (or could not be read unambiguously).
    pub owner: Option<(u32, String)>,
    /// The job's comment (`gantry` writes its rejection reasons here; a site's checkpoint
    /// marker may be a tag in it, see `ControllerConfig::checkpoint_marker`).
    pub comment: String,
    /// Whether Slurm may requeue it (`--requeue`, or `JobRequeue=1` without `--no-requeue`).
    pub requeue: bool,
    /// Its quality of service (empty when none).
    pub qos: String,
    /// How its batch script exited, as Slurm keeps it (a wait status: 0 when it exited
    /// with 0, `code << 8` for an exit code, the signal number when killed); known once
    /// the script ended, also while the job is still COMPLETING. `None` when not reported.
    pub exit_status: Option<u32>,
}

/// One node of `sinfo --json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmNode {
    /// Node name.
    pub name: String,
    /// Base state and flags, upper case (`IDLE`, `MIXED`, `DOWN`, `DRAIN`, …).
    pub states: Vec<String>,
    /// Configured generic resources (`gpu:8`, `gpu:a100:4(S:0-1)`).
    pub gres: String,
    /// Generic resources allocated now (`gpu:4`, `gpu:(null):4(IDX:0-3)`): Slurm's own count.
    pub gres_used: String,
    /// Partitions it belongs to.
    pub partitions: Vec<String>,
    /// Why it is down or drained.
    pub reason: String,
    /// Its partitions that are set DOWN or INACTIVE (`scontrol update partitionname=P
    /// state=down`): Slurm starts no job of theirs, and lets their running jobs go on.
    pub closed_partitions: Vec<String>,
}

impl SlurmNode {
    /// Whether Slurm would start jobs on it: it keeps its jobs ([`keeps_jobs`](Self::keeps_jobs))
    /// and is not closed to new ones (drained, failing, in a reservation or maintenance,
    /// due for a reboot).
    pub fn usable(&self) -> bool {
        let closed = [
            "DRAIN",
            "DRAINING",
            "DRAINED",
            "FAIL",
            "FAILING",
            "REBOOT_ISSUED",
            "MAINTENANCE",
            "MAINT",
            "RESERVED",
        ]
        .iter()
        .any(|f| self.has(f));
        self.keeps_jobs() && !closed
    }

    /// Whether the jobs running there go on: its base state is idle, mixed, allocated or
    /// completing, and it is not powered down. A drain, a failing mark or a reservation
    /// closes a node to new jobs only; `NOT_RESPONDING` alone does not count either: Slurm
    /// keeps the node's jobs until `SlurmdTimeout` marks it DOWN.
    pub fn keeps_jobs(&self) -> bool {
        let base_ok = ["IDLE", "MIXED", "ALLOCATED", "ALLOC", "COMPLETING"]
            .iter()
            .any(|b| self.states.first().is_some_and(|s| s == b));
        let off = ["POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN"]
            .iter()
            .any(|f| self.has(f));
        base_ok && !off
    }

    /// Whether `state` (upper case) is its base state or one of its flags.
    pub(crate) fn has(&self, state: &str) -> bool {
        self.states.iter().any(|s| s == state)
    }
}

/// A number in either JSON shape: `5`, or `{"set": true, "infinite": false, "number": 5}`.
/// `None` for null, unset or infinite.
fn number(value: &Value) -> Option<u64> {
    match value {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().map(|f| f.max(0.0) as u64)),
        Value::Object(map) => {
            let set = map.get("set").and_then(Value::as_bool).unwrap_or(true);
            let infinite = map
                .get("infinite")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if !set || infinite {
                return None;
            }
            map.get("number").and_then(number)
        }
        _ => None,
    }
}

/// A string, or `""` for null/absent.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A list of strings from a string (`"idle"`) or an array (`["IDLE", "DRAIN"]`).
fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) if s.is_empty() => Vec::new(),
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().map(text).collect(),
        _ => Vec::new(),
    }
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    jobs: Vec<Value>,
    #[serde(default)]
    nodes: Vec<Value>,
    #[serde(default)]
    errors: Vec<Value>,
}

fn envelope(command: &'static str, json: &str) -> Result<Envelope, JsonError> {
    let envelope: Envelope =
        serde_json::from_str(json).map_err(|source| JsonError::Syntax { command, source })?;
    if !envelope.errors.is_empty() {
        let errors = envelope
            .errors
            .iter()
            .map(|e| {
                e.get("error")
                    .or_else(|| e.get("description"))
                    .map(text)
                    .unwrap_or_else(|| e.to_string())
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(JsonError::Reported { command, errors });
    }
    Ok(envelope)
}

/// Parses `squeue --json`: every job, in Slurm's order.
pub fn parse_squeue(json: &str) -> Result<Vec<SlurmJob>, JsonError> {
    const COMMAND: &str = "squeue --json";
    let envelope = envelope(COMMAND, json)?;
    envelope
        .jobs
        .iter()
        .enumerate()
        .map(|(index, raw)| parse_job(COMMAND, index, raw))
        .collect()
}

fn parse_job(command: &'static str, index: usize, raw: &Value) -> Result<SlurmJob, JsonError> {
    let field = |name: &str| raw.get(name).unwrap_or(&Value::Null);
    let id = number(field("job_id"))
        .and_then(|id| u32::try_from(id).ok())
        .ok_or_else(|| JsonError::Field {
            command,
            entry: format!("job #{index}"),
            field: "job_id",
            problem: format!("{} is not a job id", field("job_id")),
        })?;
    let hosts = |name: &'static str| {
        hostlist::expand(&text(field(name))).map_err(|problem| JsonError::Field {
            command,
            entry: format!("job {id}"),
            field: name,
            problem,
        })
    };
    let state = JobStateName::parse(&strings(field("job_state")));
    let reason = text(field("state_reason"));
    let priority = number(field("priority"));
    let held = state == JobStateName::Pending
        && (priority == Some(0) || (priority.is_none() && reason.starts_with("JobHeld")));
    let count = |name: &str| number(field(name)).map_or(0, |n| n.min(u64::from(u32::MAX)) as u32);
    let time = |name: &str| number(field(name)).unwrap_or(0);
    Ok(SlurmJob {
        id,
        state,
        reason,
        held,
        partition: text(field("partition")),
        nodes: hosts("nodes")?,
        required_nodes: hosts("required_nodes")?,
        node_count: count("node_count"),
        max_nodes: count("max_nodes"),
        tasks: count("tasks"),
        restart_count: count("restart_cnt"),
        tres_per_job: text(field("tres_per_job")),
        tres_per_node: text(field("tres_per_node")),
        tres_per_task: text(field("tres_per_task")),
        tres_per_socket: text(field("tres_per_socket")),
        gres_detail: strings(field("gres_detail")),
        submit_s: time("submit_time"),
        start_s: time("start_time"),
        end_s: time("end_time"),
        deadline_s: number(field("deadline")).filter(|&d| d > 0),
        // 22.05 prints minutes; INFINITE is a huge number or absent.
        time_limit_min: number(field("time_limit")).filter(|&m| m > 0 && m < u64::from(u32::MAX)),
        // 22.05: `"shared": "none"` for `--exclusive` (null by default).
        exclusive: text(field("shared")) == "none",
        // 0 for a single job.
        array_job: number(field("array_job_id"))
            .filter(|&a| a > 0)
            .and_then(|a| u32::try_from(a).ok()),
        array_tasks: match text(field("array_task_string")) {
            tasks if !tasks.is_empty() => tasks,
            _ => number(field("array_task_id")).map_or(String::new(), |t| t.to_string()),
        },
        het_job: number(field("het_job_id"))
            .filter(|&h| h > 0)
            .and_then(|h| u32::try_from(h).ok()),
        dependency: match text(field("dependency")) {
            d if d == "(null)" => String::new(),
            d => d,
        },
        reservation: text(field("resv_name")),
        licenses: text(field("licenses")),
        owner: number(field("user_id"))
            .and_then(|u| u32::try_from(u).ok())
            .map(|u| (u, text(field("name")))),
        comment: text(field("comment")),
        requeue: field("requeue").as_bool().unwrap_or(false),
        qos: text(field("qos")),
        // Not read from the JSON (22.05 nests it differently by version); the poll's
        // compact listing has it.
        exit_status: None,
    })
}

/// Parses `sinfo --json`: every node once (sinfo may list a node once per partition).
pub fn parse_sinfo(json: &str) -> Result<Vec<SlurmNode>, JsonError> {
    const COMMAND: &str = "sinfo --json";
    let envelope = envelope(COMMAND, json)?;
    let mut nodes: Vec<SlurmNode> = Vec::with_capacity(envelope.nodes.len());
    for (index, raw) in envelope.nodes.iter().enumerate() {
        let field = |name: &str| raw.get(name).unwrap_or(&Value::Null);
        let name = text(field("name"));
        if name.is_empty() {
            return Err(JsonError::Field {
                command: COMMAND,
                entry: format!("node #{index}"),
                field: "name",
                problem: "missing".into(),
            });
        }
        if nodes.iter().any(|n| n.name == name) {
            continue;
        }
        let mut states: Vec<String> = strings(field("state"))
            .into_iter()
            .chain(strings(field("state_flags")))
            .map(|s| s.to_ascii_uppercase())
            .collect();
        states.dedup();
        nodes.push(SlurmNode {
            name,
            states,
            gres: text(field("gres")),
            gres_used: text(field("gres_used")),
            partitions: strings(field("partitions")),
            reason: text(field("reason")),
            closed_partitions: Vec::new(),
        });
    }
    Ok(nodes)
}

/// A held job asking `per_node` GPUs per node (`--gres`), for the module tests.
#[cfg(test)]
pub(crate) fn held_job(id: u32, per_node: &str) -> SlurmJob {
    SlurmJob {
        id,
        state: JobStateName::Pending,
        reason: "JobHeldUser".into(),
        held: true,
        partition: "gpu".into(),
        nodes: vec![],
        required_nodes: vec![],
        node_count: 1,
        max_nodes: 0,
        tasks: 1,
        restart_count: 0,
        tres_per_job: String::new(),
        tres_per_node: per_node.into(),
        tres_per_task: String::new(),
        tres_per_socket: String::new(),
        gres_detail: vec![],
        submit_s: 1_000 + u64::from(id),
        start_s: 0,
        end_s: 0,
        deadline_s: None,
        time_limit_min: None,
        exclusive: false,
        array_job: None,
        array_tasks: String::new(),
        het_job: None,
        dependency: String::new(),
        reservation: String::new(),
        licenses: String::new(),
        owner: None,
        comment: String::new(),
        requeue: false,
        qos: String::new(),
        exit_status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNNING: &str = include_str!("fixtures/squeue-running.json");
    const AFTER_DOWN: &str = include_str!("fixtures/squeue-after-down.json");
    const REQUEUE_HOLD: &str = include_str!("fixtures/squeue-requeuehold.json");
    const SINFO_MIXED: &str = include_str!("fixtures/sinfo-idle-mixed.json");
    const SINFO_DOWN: &str = include_str!("fixtures/sinfo-down-drain.json");

    fn job(jobs: &[SlurmJob], id: u32) -> &SlurmJob {
        jobs.iter().find(|j| j.id == id).unwrap()
    }

    #[test]
    fn reads_running_held_and_completed_jobs_of_22_05() {
        let jobs = parse_squeue(RUNNING).unwrap();
        assert_eq!(jobs.len(), 7);
        let two = job(&jobs, 2);
        assert_eq!(two.state, JobStateName::Running);
        assert!(!two.held);
        assert_eq!(two.nodes, ["n1", "n3"]);
        assert_eq!(two.required_nodes, ["n1", "n3"]);
        assert_eq!(two.tres_per_job, "gres:gpu:5");
        assert_eq!(two.gres_detail, ["gpu:4(IDX:0-3)", "gpu:1(IDX:0)"]);
        let three = job(&jobs, 3);
        assert!(three.held, "{three:?}");
        assert_eq!(three.tres_per_node, "gres:gpu:4");
        assert_eq!(three.deadline_s, Some(1796075229));
        assert_eq!(job(&jobs, 4).tres_per_task, "gres:gpu:1");
        assert_eq!(job(&jobs, 4).tasks, 2);
        assert_eq!(job(&jobs, 7).state, JobStateName::Completed);
        assert_eq!(job(&jobs, 1).deadline_s, None);
    }

    #[test]
    fn a_node_down_shows_completing_and_restart_count() {
        let jobs = parse_squeue(AFTER_DOWN).unwrap();
        let two = job(&jobs, 2);
        assert_eq!(two.state, JobStateName::Completing);
        assert_eq!(two.restart_count, 1);
        let held = parse_squeue(REQUEUE_HOLD).unwrap();
        let one = job(&held, 1);
        assert_eq!(one.state, JobStateName::Completing);
        assert!(
            !one.held,
            "completing jobs are not pending, so not held yet"
        );
        assert!(one.state.holds_nodes());
    }

    #[test]
    fn node_usability_from_state_and_flags() {
        let nodes = parse_sinfo(SINFO_MIXED).unwrap();
        assert!(nodes.iter().all(SlurmNode::usable));
        assert_eq!(nodes[0].gres, "gpu:8");
        assert_eq!(nodes[0].gres_used, "gpu:4");
        assert_eq!(nodes[0].partitions, ["gpu"]);
        let nodes = parse_sinfo(SINFO_DOWN).unwrap();
        let usable: Vec<(&str, bool)> = nodes.iter().map(|n| (&*n.name, n.usable())).collect();
        assert_eq!(
            usable,
            [("n1", true), ("n2", true), ("n3", false), ("n4", false)]
        );
        assert_eq!(nodes[2].reason, "fan failed");
    }

    #[test]
    fn reads_the_newer_shape_with_number_objects_and_state_lists() {
        // The shape of Slurm 23.02+ (OpenAPI v0.0.39+), written by hand from its schema.
        let json = r#"{"jobs": [{"job_id": 9, "job_state": ["PENDING", "REQUEUED"],
            "priority": {"set": true, "infinite": false, "number": 0},
            "deadline": {"set": false, "infinite": false, "number": 0},
            "nodes": "", "required_nodes": "gpu-[01-02]", "tres_per_node": "gres:gpu:2",
            "submit_time": {"set": true, "number": 1700000000}, "restart_cnt": 1}],
            "errors": []}"#;
        let jobs = parse_squeue(json).unwrap();
        assert_eq!(jobs[0].state, JobStateName::Pending);
        assert!(jobs[0].held);
        assert_eq!(jobs[0].deadline_s, None);
        assert_eq!(jobs[0].required_nodes, ["gpu-01", "gpu-02"]);
        assert_eq!(jobs[0].submit_s, 1_700_000_000);
        let nodes = parse_sinfo(
            r#"{"nodes": [{"name": "a1", "state": ["IDLE", "DRAIN"], "gres": "gpu:8", "gres_used": "gpu:(null):0"}]}"#,
        )
        .unwrap();
        assert!(!nodes[0].usable());
    }

    #[test]
    fn errors_name_the_command_and_the_entry() {
        let cases: [(&str, &str); 4] = [
            ("not json", "squeue --json: unreadable JSON"),
            (
                r#"{"jobs": [], "errors": [{"error": "Unable to contact slurm controller"}]}"#,
                "Slurm reported: Unable to contact slurm controller",
            ),
            (
                r#"{"jobs": [{"job_state": "PENDING"}]}"#,
                "job #0: field `job_id`",
            ),
            (
                r#"{"jobs": [{"job_id": 4, "nodes": "n[3-"}]}"#,
                "job 4: field `nodes`",
            ),
        ];
        for (json, expected) in cases {
            let err = parse_squeue(json).unwrap_err().to_string();
            assert!(err.contains(expected), "{json}: {err}");
        }
    }

    #[test]
    fn state_names() {
        let s = |names: &[&str]| {
            JobStateName::parse(&names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(s(&["CONFIGURING"]), JobStateName::Running);
        assert_eq!(s(&["RUNNING", "COMPLETING"]), JobStateName::Completing);
        assert_eq!(s(&["NODE_FAIL"]), JobStateName::Ended("NODE_FAIL".into()));
        assert!(s(&["DEADLINE"]).is_final());
        assert_eq!(s(&["WEIRD"]), JobStateName::Other("WEIRD".into()));
        assert!(!s(&["WEIRD"]).is_final());
    }
}
