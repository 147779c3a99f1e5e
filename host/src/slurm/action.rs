//! What gantry asks Slurm to do, as Slurm command lines. Every action is idempotent in
//! effect and is planned again from Slurm's state each cycle until that state shows it done,
//! so a command that fails or times out is simply retried.

use super::command::{CommandError, Invocation, SlurmRunner};
use super::json::SlurmJob;
use std::collections::BTreeMap;
use std::time::Instant;

/// At most this many `scontrol` processes carry out a cycle's updates side by side
/// ([`start_together`]): each update is one request to slurmctld, and 32 of them in one
/// process took 60–290 ms on the lab under load.
pub const UPDATE_PROCESSES: usize = 4;

/// Each of those processes gets at least this many updates (fewer are not worth a process).
pub const UPDATE_LINES: usize = 8;

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
    /// Skip Slurm's wait before a requeued job may run again (`StartTime=now`): on nodes
    /// other than those it last ran on at once, on those once its requeue is
    /// [`REVOKED_CREDENTIAL_MARGIN_MS`](super::controller::REVOKED_CREDENTIAL_MARGIN_MS)
    /// old (their slurmd revoked its credential and refuses a launch whose credential is
    /// no newer than the revocation, to the second).
    pub start_now: bool,
    /// A restart on the nodes the job last ran on, too soon after its requeue for its
    /// wait to be skipped: not released yet (see [`start_now`](Self::start_now)).
    pub credential_wait: bool,
    /// The job's begin time is still ahead and gantry does not skip it (a `--begin` in the
    /// future; a requeued job's wait is skipped, see [`start_now`](Self::start_now)), so
    /// Slurm starts it only after that time.
    pub begin_time_ahead: bool,
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
    /// Release a held job gantry leaves to Slurm's own scheduler (a job array or a
    /// heterogeneous job: gantry schedules single jobs), without pinning it.
    HandOver {
        /// The job (an array's record).
        job: u32,
        /// Clear the node list gantry pinned it to first (`NodeList=`): a job whose own
        /// node rules rule out the nodes gantry chose, left to Slurm to place.
        unpin: bool,
    },
    /// Split the pending tasks of a job array's record into records of their own
    /// ([`super::array`]): `scontrol update JobId=A_k Requeue=r`, an update that changes
    /// nothing (`r` is the array's own setting) but splits task `k` off, one line per task.
    Split {
        /// The array's job id.
        array: u32,
        /// The tasks to split off.
        tasks: Vec<u32>,
        /// The array's `Requeue` setting, written back unchanged.
        requeue: bool,
    },
    /// Skip Slurm's requeue wait of a job gantry released, requeued outside gantry (an
    /// operator's `scontrol requeue`, a `requeuehold` released again before gantry saw it)
    /// and pending where the core placed it: `StartTime=now`, nothing else. Slurm then
    /// starts it on its nodes as soon as they are free, instead of `cred_expire` + 1 s
    /// after the requeue.
    Lift {
        /// The job.
        job: u32,
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

/// How Slurm commands name jobs: by id, except the task a job array's own record keeps,
/// `A_k` ([`super::array::command_name`]: the id `A` names every task of the array).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobNames(BTreeMap<u32, String>);

impl JobNames {
    /// The names of `jobs` (a poll's listing).
    pub fn of_jobs(jobs: &[SlurmJob]) -> JobNames {
        JobNames(
            jobs.iter()
                .filter_map(|j| super::array::command_name(j).map(|name| (j.id, name)))
                .collect(),
        )
    }

    /// The name of job `id` in a command.
    pub fn name(&self, id: u32) -> String {
        self.0.get(&id).cloned().unwrap_or_else(|| id.to_string())
    }
}

/// The prefix of every rejection comment.
pub const REJECT_PREFIX: &str = "gantry rejected: ";

impl Action {
    /// The job it is about.
    pub fn job(&self) -> u32 {
        match self {
            Action::Start(plan) => plan.job,
            Action::Hold { job }
            | Action::HandOver { job, .. }
            | Action::Lift { job }
            | Action::RequeueHold { job }
            | Action::Signal { job, .. }
            | Action::Reject { job, .. } => *job,
            Action::Split { array, .. } => *array,
        }
    }

    /// A short name for logs and counters.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Start(p) if p.release => "start",
            Action::Start(_) => "re-pin",
            Action::Hold { .. } => "hold",
            Action::HandOver { .. } => "hand-over",
            Action::Lift { .. } => "lift",
            Action::Split { .. } => "split",
            Action::RequeueHold { .. } => "requeue-hold",
            Action::Signal { .. } => "signal",
            Action::Reject { .. } => "reject",
        }
    }

    /// The command lines that carry it out, in order (program first), each job named as
    /// `names` says.
    pub fn commands(&self, names: &JobNames) -> Vec<Vec<String>> {
        let scontrol = |args: &[String]| {
            std::iter::once("scontrol".to_string())
                .chain(args.iter().cloned())
                .collect::<Vec<_>>()
        };
        match self {
            Action::Start(plan) => {
                let mut lines = vec![scontrol(&plan.update_args(names))];
                if plan.release {
                    lines.push(scontrol(&["release".into(), names.name(plan.job)]));
                }
                lines
            }
            // A user hold: an administrator hold (`scontrol hold`) is an operator's, which
            // gantry honours.
            Action::Hold { job } => vec![scontrol(&["uhold".into(), names.name(*job)])],
            Action::HandOver { job, unpin } => {
                let release = scontrol(&["release".into(), names.name(*job)]);
                if *unpin {
                    let update = [
                        "update".into(),
                        format!("JobId={}", names.name(*job)),
                        "NodeList=".into(),
                    ];
                    vec![scontrol(&update), release]
                } else {
                    vec![release]
                }
            }
            Action::Split {
                array,
                tasks,
                requeue,
            } => tasks
                .iter()
                .map(|task| {
                    scontrol(&[
                        "update".into(),
                        format!("JobId={array}_{task}"),
                        format!("Requeue={}", u8::from(*requeue)),
                    ])
                })
                .collect(),
            Action::Lift { job } => vec![scontrol(&[
                "update".into(),
                format!("JobId={}", names.name(*job)),
                "StartTime=now".into(),
            ])],
            Action::RequeueHold { job } => {
                vec![scontrol(&["requeuehold".into(), names.name(*job)])]
            }
            Action::Signal { job, signal } => vec![vec![
                "scancel".into(),
                format!("--signal={signal}"),
                "--full".into(),
                names.name(*job),
            ]],
            Action::Reject { job, reason } => vec![
                scontrol(&[
                    "update".into(),
                    format!("JobId={}", names.name(*job)),
                    format!("Comment={REJECT_PREFIX}{reason}"),
                ]),
                vec!["scancel".into(), names.name(*job)],
            ],
        }
    }

    /// Runs the commands in order. A rejection cancels even when its comment could not be
    /// written; a split's lines go to one `scontrol` ([`SlurmRunner::scontrol_each`]), each
    /// tried (the first failure is returned; the split is planned again from the next
    /// poll); anything else stops at the first failure.
    pub fn execute(
        &self,
        runner: &mut dyn SlurmRunner,
        names: &JobNames,
    ) -> Result<(), CommandError> {
        if let Action::Split { .. } = self {
            let lines: Vec<Vec<String>> = self
                .commands(names)
                .into_iter()
                .map(|line| line[1..].to_vec())
                .collect();
            return runner.scontrol_each(&lines).into_iter().collect();
        }
        let mut first_error = None;
        for line in self.commands(names) {
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
    fn update_args(&self, names: &JobNames) -> Vec<String> {
        let nodes: Vec<&str> = self.shape.iter().map(|(n, _)| n.as_str()).collect();
        let count = nodes.len();
        let gres = |n: u32| match &self.gpu_type {
            Some(t) => format!("gres:gpu:{t}:{n}"),
            None => format!("gres:gpu:{n}"),
        };
        let mut args = vec![
            "update".to_string(),
            format!("JobId={}", names.name(self.job)),
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

/// Carries out a cycle's releases (`plans`, each held: `release` true): each job's `update`
/// (`scontrol update` takes one job id per line; 22.05 refuses `JobId=1,2`), then one
/// `scontrol release J1,J2,…` of them all.
///
/// Up to [`UPDATE_LINES`] updates go through [`SlurmRunner::scontrol_each`] (one long-lived
/// `scontrol`, each line's result known on its own), the usual case: one job submitted and
/// released in a few milliseconds. More are split over up to [`UPDATE_PROCESSES`] `scontrol`
/// processes reading their lines on standard input, side by side.
///
/// A job is released only once its own update is known done, so a job is never released
/// unpinned: when a script of updates fails (a line failed, and `scontrol` does not say
/// which), each of its updates is run again on its own (they are idempotent) and only the
/// jobs whose update succeeded are released; when the batched release fails, each job is
/// released on its own. Returns, per plan, its result and when it was known.
pub fn start_together(
    runner: &mut dyn SlurmRunner,
    plans: &[&StartPlan],
    names: &JobNames,
) -> Vec<(Result<(), CommandError>, Instant)> {
    let updates: Vec<Vec<String>> = plans.iter().map(|p| p.update_args(names)).collect();
    // `scontrol` splits its input lines at blanks and quotes: only plain words batch.
    let plain = updates
        .iter()
        .flatten()
        .all(|a| !a.chars().any(|c| c.is_whitespace() || "'\"\\#".contains(c)));
    let mut results = if plain && plans.len() <= UPDATE_LINES {
        let at = Instant::now();
        runner
            .scontrol_each(&updates)
            .into_iter()
            .map(|r| (r, at))
            .collect()
    } else {
        update_in_scripts(runner, &updates, plain)
    };
    let to_release: Vec<usize> = (0..plans.len())
        .filter(|&i| plans[i].release && results[i].0.is_ok())
        .collect();
    if to_release.is_empty() {
        return results;
    }
    let ids: Vec<String> = to_release
        .iter()
        .map(|&i| names.name(plans[i].job))
        .collect();
    let release = |ids: String| vec!["release".to_string(), ids];
    let batched = runner.scontrol_each(&[release(ids.join(","))]);
    if batched.first().is_some_and(Result::is_ok) {
        let at = Instant::now();
        for &i in &to_release {
            results[i].1 = at;
        }
        return results;
    }
    let lines: Vec<Vec<String>> = ids.into_iter().map(release).collect();
    for (&i, result) in to_release.iter().zip(runner.scontrol_each(&lines)) {
        results[i] = (result, Instant::now());
    }
    results
}

/// The updates of a large cycle: scripts of at least [`UPDATE_LINES`] lines on up to
/// [`UPDATE_PROCESSES`] `scontrol` processes side by side (`plain`: the lines can be fed
/// to `scontrol`; if not, each update runs as its own process), the lines of a failed
/// script again one by one.
fn update_in_scripts(
    runner: &mut dyn SlurmRunner,
    updates: &[Vec<String>],
    plain: bool,
) -> Vec<(Result<(), CommandError>, Instant)> {
    let per = updates.len().div_ceil(UPDATE_PROCESSES).max(UPDATE_LINES);
    let chunks: Vec<std::ops::Range<usize>> = (0..updates.len())
        .step_by(per)
        .map(|i| i..(i + per).min(updates.len()))
        .collect();
    let batched: Vec<bool> = if plain {
        let scripts: Vec<Invocation<'_>> = chunks
            .iter()
            .map(|r| {
                let script: String = updates[r.clone()]
                    .iter()
                    .map(|args| args.join(" ") + "\n")
                    .collect();
                ("scontrol", Vec::new(), Some(script))
            })
            .collect();
        runner.run_all(&scripts).iter().map(Result::is_ok).collect()
    } else {
        vec![false; chunks.len()]
    };
    let at = Instant::now();
    let mut results: Vec<(Result<(), CommandError>, Instant)> =
        updates.iter().map(|_| (Ok(()), at)).collect();
    // The jobs of a failed script: each update again on its own.
    let again: Vec<usize> = chunks
        .iter()
        .zip(&batched)
        .filter(|(_, ok)| !**ok)
        .flat_map(|(r, _)| r.clone())
        .collect();
    let lines: Vec<Vec<Vec<String>>> = again
        .iter()
        .map(|&i| {
            vec![
                std::iter::once("scontrol".to_string())
                    .chain(updates[i].iter().cloned())
                    .collect(),
            ]
        })
        .collect();
    for (&i, result) in again.iter().zip(runner.run_sequences(&lines)) {
        results[i] = result;
    }
    results
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
            credential_wait: false,
            begin_time_ahead: false,
        }
    }

    fn lines(action: &Action) -> Vec<String> {
        action
            .commands(&JobNames::default())
            .iter()
            .map(|l| shell_line(l))
            .collect()
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

    /// Records every command; fails those `fails` says fail.
    struct Recorder {
        calls: Vec<String>,
        fails: fn(&str) -> bool,
    }

    impl SlurmRunner for Recorder {
        fn run(&mut self, program: &str, args: &[String]) -> Result<String, CommandError> {
            self.run_input(program, args, "")
        }

        fn run_input(
            &mut self,
            program: &str,
            args: &[String],
            input: &str,
        ) -> Result<String, CommandError> {
            let mut line = shell_line(&[&[program.to_string()], args].concat());
            if !input.is_empty() {
                line.push_str(&format!(" <<{}", input.trim_end().replace('\n', " | ")));
            }
            self.calls.push(line.clone());
            if (self.fails)(&line) {
                Err(CommandError::Failed {
                    command: line,
                    status: "exit status: 1".into(),
                    stderr: "Invalid job id specified".into(),
                })
            } else {
                Ok(String::new())
            }
        }
    }

    fn together(fails: fn(&str) -> bool) -> (Vec<String>, Vec<bool>) {
        let mut a = plan(&[("n1", 1)]);
        a.job = 7;
        let mut b = plan(&[("n2", 2)]);
        b.job = 8;
        let mut runner = Recorder {
            calls: Vec::new(),
            fails,
        };
        let results = start_together(&mut runner, &[&a, &b], &JobNames::default());
        let ok = results.iter().map(|(r, _)| r.is_ok()).collect();
        (runner.calls, ok)
    }

    const UPDATE_7: &str =
        "scontrol update JobId=7 NodeList=n1 NumNodes=1-1 TresPerNode=gres:gpu:1 TresPerJob=";
    const UPDATE_8: &str =
        "scontrol update JobId=8 NodeList=n2 NumNodes=1-1 TresPerNode=gres:gpu:2 TresPerJob=";

    #[test]
    fn a_few_releases_are_one_update_each_then_one_release() {
        let (calls, ok) = together(|_| false);
        assert_eq!(calls, [UPDATE_7, UPDATE_8, "scontrol release 7,8"]);
        assert_eq!(ok, [true, true]);
    }

    #[test]
    fn a_job_whose_update_failed_is_not_released() {
        // Each update's result is its own: job 8's fails, and only job 7 is released.
        let (calls, ok) = together(|l| l.contains("JobId=8"));
        assert_eq!(calls, [UPDATE_7, UPDATE_8, "scontrol release 7"]);
        assert_eq!(ok, [true, false]);
    }

    #[test]
    fn a_failed_batched_release_is_retried_job_by_job() {
        let (calls, ok) = together(|l| l.contains("release 7,8") || l == "scontrol release 8");
        assert_eq!(
            &calls[2..],
            [
                "scontrol release 7,8",
                "scontrol release 7",
                "scontrol release 8"
            ]
        );
        assert_eq!(ok, [true, false]);
    }

    #[test]
    fn many_updates_are_split_over_a_few_scripts_and_a_failed_one_is_redone_alone() {
        let plans: Vec<StartPlan> = (0..20)
            .map(|i| {
                let mut p = plan(&[("n1", 1)]);
                p.job = 100 + i;
                p
            })
            .collect();
        let refs: Vec<&StartPlan> = plans.iter().collect();
        // The second script (jobs 108-115) fails because job 110's update does.
        let mut runner = Recorder {
            calls: Vec::new(),
            fails: |l| l.contains("JobId=110 "),
        };
        let results = start_together(&mut runner, &refs, &JobNames::default());
        let scripts = runner
            .calls
            .iter()
            .filter(|c| c.starts_with("scontrol <<"))
            .count();
        assert_eq!(scripts, 3, "{:#?}", runner.calls);
        let alone: Vec<&String> = runner
            .calls
            .iter()
            .filter(|c| c.starts_with("scontrol update"))
            .collect();
        assert_eq!(alone.len(), 8, "{alone:#?}");
        let released = runner.calls.last().unwrap();
        assert!(!released.contains("110"), "{released}");
        assert_eq!(released.matches(',').count(), 18, "{released}");
        let failed: Vec<u32> = refs
            .iter()
            .zip(&results)
            .filter(|(_, (r, _))| r.is_err())
            .map(|(p, _)| p.job)
            .collect();
        assert_eq!(failed, [110]);
    }

    #[test]
    fn an_argument_scontrol_would_split_is_not_batched() {
        let mut a = plan(&[("n1", 1)]);
        a.other_per_node = vec!["gres:nic 1".into()];
        let mut runner = Recorder {
            calls: Vec::new(),
            fails: |_| false,
        };
        start_together(&mut runner, &[&a], &JobNames::default());
        assert_eq!(
            runner.calls,
            [
                "scontrol update JobId=7 NodeList=n1 NumNodes=1-1 'TresPerNode=gres:nic 1,gres:gpu:1' TresPerJob=",
                "scontrol release 7"
            ]
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
            lines(&Action::Lift { job: 3 }),
            ["scontrol update JobId=3 StartTime=now"]
        );
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
