//! What gantry asks Slurm to do, as Slurm command lines. Every action is idempotent in
//! effect and is planned again from Slurm's state each cycle until that state shows it done,
//! so a command that fails or times out is simply retried.

use super::command::{CommandError, SlurmRunner};

/// How a job is started: pinned to its nodes with gantry's GPUs per node, then released.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartPlan {
    /// Slurm's job id.
    pub job: u32,
    /// Nodes and GPUs on each, in node order.
    pub shape: Vec<(String, u16)>,
    /// The GPU type the job named, kept in the rewritten request.
    pub gpu_type: Option<String>,
    /// Non-GPU entries of the job's per-node request (`gres:nic:1`), kept.
    pub other_per_node: Vec<String>,
    /// The job asked per job (`--gpus`): clear that when asking per node, and vice versa.
    pub had_per_job: bool,
    /// The job asked per node (`--gres`).
    pub had_per_node_gpus: bool,
    /// The job asked per task (`--gpus-per-task`): cleared.
    pub had_per_task: bool,
    /// Release it (it is held); false when it is only re-pinned.
    pub release: bool,
    /// Skip Slurm's wait before a requeued job may run again (`StartTime=now`). Only safe
    /// on nodes other than those it last ran on: their slurmd revoked its credential, and
    /// a launch there before `cred_expire` fails the job ("Job credential revoked").
    pub start_now: bool,
}

/// One thing to do in Slurm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Pin and release a job the core started.
    Start(StartPlan),
    /// Hold a pending job the core has queued (it was released outside gantry, or Slurm
    /// requeued it after a node failure).
    Hold {
        /// The job.
        job: u32,
    },
    /// Requeue and hold a running job the core preempted.
    RequeueHold {
        /// The job.
        job: u32,
    },
    /// Tell a running job the core preempted that it is about to be requeued (`scancel
    /// --signal=SIG --full`: the batch script and every step), so it can checkpoint; the
    /// requeue follows after the grace period or once the job ended by itself, as with
    /// Slurm's own preemption (`GraceTime`).
    Signal {
        /// The job.
        job: u32,
        /// The signal's name (`TERM`, `USR1`, …).
        signal: String,
    },
    /// Write the reason into the job's comment (visible in `squeue -O comment` / `%k`) and
    /// cancel it.
    Reject {
        /// The job.
        job: u32,
        /// Why, in words.
        reason: String,
    },
}

/// The prefix of every rejection comment.
pub const REJECT_PREFIX: &str = "gantry rejected: ";

impl Action {
    /// The job it is about.
    pub fn job(&self) -> u32 {
        match self {
            Action::Start(plan) => plan.job,
            Action::Hold { job }
            | Action::RequeueHold { job }
            | Action::Signal { job, .. }
            | Action::Reject { job, .. } => *job,
        }
    }

    /// A short name for logs and counters.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Start(p) if p.release => "start",
            Action::Start(_) => "re-pin",
            Action::Hold { .. } => "hold",
            Action::RequeueHold { .. } => "requeue-hold",
            Action::Signal { .. } => "signal",
            Action::Reject { .. } => "reject",
        }
    }

    /// The command lines that carry it out, in order (program first).
    pub fn commands(&self) -> Vec<Vec<String>> {
        let scontrol = |args: &[String]| {
            std::iter::once("scontrol".to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
        };
        match self {
            Action::Start(plan) => {
                let mut lines = vec![scontrol(&plan.update_args())];
                if plan.release {
                    lines.push(scontrol(&["release".into(), plan.job.to_string()]));
                }
                lines
            }
            // A user hold: an administrator hold (`scontrol hold`) is an operator's, which
            // gantry honours.
            Action::Hold { job } => vec![scontrol(&["uhold".into(), job.to_string()])],
            Action::RequeueHold { job } => {
                vec![scontrol(&["requeuehold".into(), job.to_string()])]
            }
            Action::Signal { job, signal } => vec![vec![
                "scancel".into(),
                format!("--signal={signal}"),
                "--full".into(),
                job.to_string(),
            ]],
            Action::Reject { job, reason } => vec![
                scontrol(&[
                    "update".into(),
                    format!("JobId={job}"),
                    format!("Comment={REJECT_PREFIX}{reason}"),
                ]),
                vec!["scancel".into(), job.to_string()],
            ],
        }
    }

    /// Runs the commands in order. A rejection cancels even when its comment could not be
    /// written; anything else stops at the first failure.
    pub fn execute(&self, runner: &mut dyn SlurmRunner) -> Result<(), CommandError> {
        let mut first_error = None;
        for line in self.commands() {
            if let Err(err) = runner.run(&line[0], &line[1..]) {
                if !matches!(self, Action::Reject { .. }) {
                    return Err(err);
                }
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl StartPlan {
    /// `scontrol update JobId=… NodeList=… NumNodes=n-n <GPU request> [StartTime=now]`.
    /// One GPU count on every node becomes a per-node request (exact); different counts a
    /// per-job total over exactly those nodes (Slurm then splits it itself).
    fn update_args(&self) -> Vec<String> {
        let nodes: Vec<&str> = self.shape.iter().map(|(n, _)| n.as_str()).collect();
        let count = nodes.len();
        let gres = |n: u32| match &self.gpu_type {
            Some(t) => format!("gres:gpu:{t}:{n}"),
            None => format!("gres:gpu:{n}"),
        };
        let mut args = vec![
            "update".to_string(),
            format!("JobId={}", self.job),
            format!("NodeList={}", nodes.join(",")),
            format!("NumNodes={count}-{count}"),
        ];
        let first = self.shape.first().map_or(0, |(_, c)| *c);
        let even = self.shape.iter().all(|(_, c)| *c == first);
        let mut per_node = self.other_per_node.clone();
        if even {
            per_node.push(gres(u32::from(first)));
            args.push(format!("TresPerNode={}", per_node.join(",")));
            if self.had_per_job {
                args.push("TresPerJob=".into());
            }
        } else {
            let total: u32 = self.shape.iter().map(|(_, c)| u32::from(*c)).sum();
            args.push(format!("TresPerJob={}", gres(total)));
            if self.had_per_node_gpus {
                args.push(format!("TresPerNode={}", per_node.join(",")));
            }
        }
        if self.had_per_task {
            args.push("TresPerTask=".into());
        }
        if self.start_now {
            args.push("StartTime=now".into());
        }
        args
    }
}

/// A command line as a shell would need it typed (for `--dry-run`).
pub fn shell_line(line: &[String]) -> String {
    line.iter()
        .map(|a| {
            if a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "=-_,:./[]".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(shape: &[(&str, u16)]) -> StartPlan {
        StartPlan {
            job: 7,
            shape: shape.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
            gpu_type: None,
            other_per_node: vec![],
            had_per_job: true,
            had_per_node_gpus: false,
            had_per_task: false,
            release: true,
            start_now: false,
        }
    }

    fn lines(action: &Action) -> Vec<String> {
        action.commands().iter().map(|l| shell_line(l)).collect()
    }

    #[test]
    fn start_on_one_node_asks_per_node_and_releases() {
        assert_eq!(
            lines(&Action::Start(plan(&[("n2", 4)]))),
            [
                "scontrol update JobId=7 NodeList=n2 NumNodes=1-1 TresPerNode=gres:gpu:4 TresPerJob=",
                "scontrol release 7"
            ]
        );
    }

    #[test]
    fn uneven_split_asks_per_job_over_exactly_those_nodes() {
        let mut p = plan(&[("n1", 3), ("n3", 1)]);
        p.had_per_job = false;
        p.had_per_node_gpus = true;
        p.had_per_task = true;
        p.other_per_node = vec!["gres:nic:1".into()];
        p.release = false;
        p.start_now = true;
        assert_eq!(
            lines(&Action::Start(p)),
            [
                "scontrol update JobId=7 NodeList=n1,n3 NumNodes=2-2 TresPerJob=gres:gpu:4 TresPerNode=gres:nic:1 TresPerTask= StartTime=now"
            ]
        );
    }

    #[test]
    fn typed_even_split() {
        let mut p = plan(&[("a", 2), ("b", 2)]);
        p.gpu_type = Some("a100".into());
        p.had_per_job = false;
        assert_eq!(
            lines(&Action::Start(p))[0],
            "scontrol update JobId=7 NodeList=a,b NumNodes=2-2 TresPerNode=gres:gpu:a100:2"
        );
    }

    #[test]
    fn preempt_hold_and_reject_lines() {
        assert_eq!(
            lines(&Action::RequeueHold { job: 3 }),
            ["scontrol requeuehold 3"]
        );
        assert_eq!(lines(&Action::Hold { job: 3 }), ["scontrol uhold 3"]);
        assert_eq!(
            lines(&Action::Signal {
                job: 3,
                signal: "USR1".into()
            }),
            ["scancel --signal=USR1 --full 3"]
        );
        assert_eq!(
            lines(&Action::Reject {
                job: 3,
                reason: "asks for 40 GPUs".into()
            }),
            [
                "scontrol update JobId=3 'Comment=gantry rejected: asks for 40 GPUs'",
                "scancel 3"
            ]
        );
    }
}
