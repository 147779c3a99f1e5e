//! `gantry slurm` against a real Slurm cluster: the private loopback lab of
//! `scripts/slurm-lab.sh` (4 nodes × 8 fake GPUs, two leaf switches, Slurm 22.05 from
//! Debian), 44 held jobs of 1, 2, 4 and 8 GPUs with short sleeps (some with `--deadline`)
//! plus bad requests, scheduled with `--order tias --placement best-fit` until done. Checked
//! from Slurm's own records (`squeue --json` sampled during the run and at the end) and from
//! files each job writes when it starts and ends:
//!
//! - every job completed exactly once (one `done` file, final state COMPLETED);
//! - no node ever had more GPUs allocated than it has, no GPU index held twice;
//! - every job ran on the nodes gantry chose; an even start with gantry's GPU count per
//!   node (an uneven start's counts are Slurm's split, listed where they differ);
//! - no job started before gantry released it, and `gantry replay` reproduces every
//!   decision of the recording;
//! - bad requests are cancelled with their reason in the job's comment (shown by `squeue`).
//!
//! The same on `sched/backfill`, Slurm's default scheduler (the lab's is `sched/builtin`), with
//! a node set DOWN mid-run (its jobs requeued and finished elsewhere) and with `gantry slurm`
//! killed by SIGKILL mid-run and restarted on its journal (nothing run twice).
//! Each scenario brings up its own lab and tears it down (also on failure); after tear-down
//! none of the lab's processes is left. The scenarios run two at a time.
//!
//! The scenarios run where they are asked for: `GANTRY_SLURM_LAB=1`, or `CI=true` (`.ci/run`
//! sets both). Elsewhere each test prints that it was not run and passes, so that
//! `cargo test --workspace --release` stays quick on a machine that happens to have Slurm.
//! When asked for, a missing Slurm is installed by the lab script (apt-get) or fails the
//! test, and any failure fails the test.

use crate::in_ci;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Two labs at a time: a scenario mostly waits on jobs that sleep, so two share the two cores
/// (ports, state and munge socket are per lab folder; scripts/slurm-lab.sh); more would
/// crowd the daemons' timing on a 2-core machine.
static LABS: LabSlots = LabSlots::new(2);

/// A counting gate: at most `limit` scenarios hold a slot at once.
struct LabSlots {
    taken: Mutex<usize>,
    freed: Condvar,
    limit: usize,
}

/// A held slot; dropping it (also when the scenario panics) frees the slot.
struct LabSlot<'a>(&'a LabSlots);

impl LabSlots {
    const fn new(limit: usize) -> Self {
        Self {
            taken: Mutex::new(0),
            freed: Condvar::new(),
            limit,
        }
    }

    /// Waits for a free slot. A poisoned lock (a scenario panicked while counting) still
    /// counts right: the count is only changed under the lock, by one, without panicking.
    fn take(&self) -> LabSlot<'_> {
        let mut taken = self.taken.lock().unwrap_or_else(|e| e.into_inner());
        while *taken >= self.limit {
            taken = self.freed.wait(taken).unwrap_or_else(|e| e.into_inner());
        }
        *taken += 1;
        LabSlot(self)
    }
}

impl Drop for LabSlot<'_> {
    fn drop(&mut self) {
        let mut taken = self.0.taken.lock().unwrap_or_else(|e| e.into_inner());
        *taken -= 1;
        self.0.freed.notify_one();
    }
}

const GPUS_PER_NODE: usize = 8;
const JOBS: usize = 44;
/// The longest a scenario's gantry may run before the test gives up.
const RUN_LIMIT: Duration = Duration::from_secs(240);

/// The `gantry` binary under test: this build's, or `GANTRY_LAB_BIN` (to show a scenario
/// failing on another build, e.g. `GANTRY_LAB_BIN=/path/to/old/gantry`).
fn gantry_bin() -> PathBuf {
    std::env::var_os("GANTRY_LAB_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_gantry")),
        PathBuf::from,
    )
}

/// Whether the lab scenarios run: `GANTRY_SLURM_LAB=1` or `CI=true`. They take minutes (a
/// lab of Slurm daemons per scenario, real jobs that sleep), too long for every test run.
fn lab_asked_for() -> bool {
    in_ci() || std::env::var("GANTRY_SLURM_LAB").is_ok_and(|v| v == "1")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A running lab; dropping it tears the lab down.
struct Lab {
    dir: PathBuf,
    conf: PathBuf,
    /// Daemon PIDs read from the lab's pid files after bring-up.
    daemons: Vec<u32>,
}

impl Lab {
    /// Brings up a 4 × 8 lab with two racks, or `None` (after a notice) when the lab was not
    /// asked for (`GANTRY_SLURM_LAB=1` or `CI=true`).
    fn up(name: &str) -> Option<Lab> {
        Lab::up_with(name, &[])
    }

    /// [`Lab::up`] with more `scripts/slurm-lab.sh up` flags (`{dir}` in one is the lab's
    /// folder).
    fn up_with(name: &str, flags: &[&str]) -> Option<Lab> {
        if !lab_asked_for() {
            println!(
                "not run: the Slurm lab scenario {name:?} runs with GANTRY_SLURM_LAB=1 (or CI=true); scripts/slurm-lab.sh installs Slurm (slurm-wlm, munge) where it is missing"
            );
            return None;
        }
        let dir = std::env::temp_dir().join(format!("gantry-slurm-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("jobs")).unwrap();
        let started = Instant::now();
        let out = Command::new("bash")
            .arg(repo().join("scripts/slurm-lab.sh"))
            .args([
                "up",
                dir.to_str().unwrap(),
                "--nodes",
                "4",
                "--gpus",
                "8",
                "--racks",
                "2",
            ])
            .args(
                flags
                    .iter()
                    .map(|f| f.replace("{dir}", dir.to_str().unwrap())),
            )
            .output()
            .expect("run scripts/slurm-lab.sh");
        let lab = Lab {
            conf: dir.join("etc/slurm.conf"),
            daemons: pid_files(&dir),
            dir,
        };
        assert!(
            out.status.success(),
            "lab bring-up failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        println!(
            "lab {name} up in {:.1} s ({} daemons)",
            started.elapsed().as_secs_f64(),
            lab.daemons.len()
        );
        Some(lab)
    }

    fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self.cmd(program).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Every job Slurm lists, by id.
    fn squeue(&self) -> BTreeMap<u64, Value> {
        let text = self.run("squeue", &["--json"]);
        let json: Value = serde_json::from_str(&text).unwrap();
        json["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| (j["job_id"].as_u64().unwrap(), j.clone()))
            .collect()
    }

    fn sbatch(&self, args: &[String]) -> u64 {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = self.run("sbatch", &args);
        text.trim()
            .rsplit(' ')
            .next()
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("sbatch said {text:?}"))
    }

    fn jobs_dir(&self) -> PathBuf {
        self.dir.join("jobs")
    }
}

fn pid_files(dir: &Path) -> Vec<u32> {
    let mut pids = Vec::new();
    for sub in ["run", "munge"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().extension().is_some_and(|e| e == "pid")
                && let Ok(text) = std::fs::read_to_string(entry.path())
                && let Ok(pid) = text.trim().parse()
            {
                pids.push(pid);
            }
        }
    }
    pids
}

/// Running and not a zombie (this sandbox's PID 1 does not reap orphans).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|rest| rest.trim_start().to_string())
        })
        .is_some_and(|rest| !rest.starts_with('Z'))
}

impl Drop for Lab {
    fn drop(&mut self) {
        let out = Command::new("bash")
            .arg(repo().join("scripts/slurm-lab.sh"))
            .args(["down", self.dir.to_str().unwrap()])
            .output();
        if let Ok(out) = &out {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
        }
        let left: Vec<u32> = self.daemons.iter().copied().filter(|&p| alive(p)).collect();
        if !std::thread::panicking() {
            assert!(
                out.is_ok_and(|o| o.status.success()),
                "lab tear-down failed"
            );
            assert!(
                left.is_empty(),
                "daemons still running after tear-down: {left:?}"
            );
            // Kept after a failure, for its logs and journal.
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The job script: one file when it starts (with its nodes), one when it ends.
const JOB_SCRIPT: &str = r#"#!/bin/sh
run="${SLURM_RESTART_COUNT:-0}"
echo "$SLURM_JOB_NODELIST" > "$GANTRY_LAB_JOBS/$SLURM_JOB_ID.start.$run"
sleep "$1"
echo ok > "$GANTRY_LAB_JOBS/$SLURM_JOB_ID.done.$run"
"#;

/// A job of the workload.
#[derive(Clone, Debug)]
struct Submitted {
    id: u64,
    gpus: usize,
}

/// How the workload's jobs ask for their GPUs.
#[derive(Clone, Copy, Debug)]
enum Ask {
    /// `--gpus=k`: per job, may span nodes (gantry places them over nodes).
    PerJob,
    /// `--gres=gpu:k`: per node, on one node.
    PerNode,
}

impl Ask {
    fn flag(self, gpus: usize) -> String {
        match self {
            Ask::PerJob => format!("--gpus={gpus}"),
            Ask::PerNode => format!("--gres=gpu:{gpus}"),
        }
    }
}

/// 44 held jobs: 1, 2, 4, 8 GPUs in turn (asked as `ask` says), 1-3 s each, every fifth
/// with a deadline 120-240 s ahead (time limit 1 min, so Slurm's own deadline check never
/// fires); then bad requests. Returns the good jobs and the bad jobs' ids.
fn submit_workload(lab: &Lab, ask: Ask) -> (Vec<Submitted>, Vec<u64>) {
    let script = lab.dir.join("job.sh");
    std::fs::write(&script, JOB_SCRIPT).unwrap();
    let export = format!("--export=ALL,GANTRY_LAB_JOBS={}", lab.jobs_dir().display());
    let mut jobs = Vec::new();
    for i in 0..JOBS {
        let gpus = [1, 2, 4, 8][i % 4];
        let sleep_s = 1 + (i * 7) % 3;
        let mut args = vec![
            "--hold".to_string(),
            "--time=1".into(),
            "-o".into(),
            "/dev/null".into(),
            export.clone(),
            ask.flag(gpus),
        ];
        if i % 5 == 0 {
            args.push(format!("--deadline=now+{}", 120 + i * 3));
        }
        args.push(script.display().to_string());
        args.push(sleep_s.to_string());
        jobs.push(Submitted {
            id: lab.sbatch(&args),
            gpus,
        });
    }
    let bad = ["--gres=gpu:16", "--gres=gpu:-1", "--gpus=40"]
        .iter()
        .map(|flags| {
            let mut args: Vec<String> = ["--hold", "-o", "/dev/null"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            args.extend(flags.split(' ').map(str::to_string));
            args.extend(["--wrap".to_string(), "true".to_string()]);
            lab.sbatch(&args)
        })
        .collect();
    (jobs, bad)
}

/// What happens to gantry mid-run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    /// One node with a running job is set DOWN and stays down.
    NodeDown,
    /// gantry is killed with SIGKILL and started again on its journal.
    KillGantry,
}

/// What the test saw of the run.
struct Observed {
    /// Per sample: node → (GPU count, GPU indexes) of its running jobs.
    overloads: Vec<String>,
    /// Jobs seen running, with the nodes and per-node GPU counts Slurm gave them.
    running: BTreeMap<u64, BTreeSet<Vec<(String, usize)>>>,
    /// The node set DOWN and the jobs Slurm listed as running on it just before.
    downed: Option<Downed>,
    /// gantry's JSON summaries (one per process that ran to the end).
    summaries: Vec<Value>,
    /// gantry runs started.
    gantry_runs: usize,
    /// Per gantry run, the Unix time (s) just before it was spawned: no later than the
    /// start of the clock its log's times count from.
    spawned_unix_s: Vec<f64>,
}

/// The node the test set DOWN.
#[derive(Clone)]
struct Downed {
    node: String,
    /// Jobs `squeue` listed as running on the node in the sample before `scontrol update`.
    jobs: Vec<u64>,
    /// Epoch second, rounded up, by which the node was DOWN (Slurm's clock is this machine's).
    at_s: u64,
}

fn gantry(lab: &Lab, record: &Path, run: usize) -> Child {
    let log = std::fs::File::create(lab.dir.join(format!("gantry-{run}.log"))).unwrap();
    lab.cmd(gantry_bin())
        .args([
            "slurm",
            "--order",
            "tias",
            "--placement",
            "best-fit",
            "--poll-ms",
            "200",
        ])
        .args(["--exit-when-idle", "--json", "--record"])
        .arg(record)
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// `gpu:4(IDX:0-3)` → (4, {0,1,2,3}).
fn gres_detail(detail: &str) -> (usize, BTreeSet<usize>) {
    let count = detail
        .strip_prefix("gpu:")
        .and_then(|r| r.split('(').next())
        .and_then(|c| c.rsplit(':').next())
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut idx = BTreeSet::new();
    if let Some(list) = detail.split("IDX:").nth(1) {
        for part in list.trim_end_matches(')').split(',') {
            let (lo, hi) = part.split_once('-').unwrap_or((part, part));
            if let (Ok(lo), Ok(hi)) = (lo.parse::<usize>(), hi.parse::<usize>()) {
                idx.extend(lo..=hi);
            }
        }
    }
    (count, idx)
}

/// Fails, showing the log, unless gantry's log `log` holds `text`.
fn assert_logged(log: &str, text: &str) {
    assert!(log.contains(text), "{text}\nnot in the log:\n{log}");
}

fn expand(list: &str) -> Vec<String> {
    gantry::slurm::hostlist::expand(list).unwrap()
}

/// Runs gantry to the end while sampling Slurm, injecting `fault` once 8 jobs have run.
fn run_scheduler(lab: &Lab, record: &Path, fault: Fault) -> Observed {
    let mut observed = Observed {
        overloads: Vec::new(),
        running: BTreeMap::new(),
        downed: None,
        summaries: Vec::new(),
        gantry_runs: 1,
        spawned_unix_s: vec![unix_s_f64()],
    };
    let mut child = gantry(lab, record, 1);
    let started = Instant::now();
    let mut fault_done = fault == Fault::None;
    loop {
        if started.elapsed() >= RUN_LIMIT {
            // Ends exactly the gantry process this test started (by its PID), which would
            // otherwise poll the torn-down lab for good.
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "gantry did not finish within {RUN_LIMIT:?}; see {}",
                lab.dir.display()
            );
        }
        let jobs = lab.squeue();
        let mut per_node: BTreeMap<String, (usize, Vec<usize>)> = BTreeMap::new();
        for (id, job) in &jobs {
            if job["job_state"] != "RUNNING" {
                continue;
            }
            let nodes = expand(job["nodes"].as_str().unwrap_or(""));
            let details: Vec<&str> = job["gres_detail"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if details.len() != nodes.len() {
                continue;
            }
            let mut shape = Vec::new();
            for (node, detail) in nodes.iter().zip(details) {
                let (count, idx) = gres_detail(detail);
                let slot = per_node.entry(node.clone()).or_default();
                slot.0 += count;
                slot.1.extend(idx);
                shape.push((node.clone(), count));
            }
            observed.running.entry(*id).or_default().insert(shape);
        }
        for (node, (count, idx)) in &per_node {
            let distinct: BTreeSet<_> = idx.iter().collect();
            if *count > GPUS_PER_NODE || distinct.len() != idx.len() {
                observed
                    .overloads
                    .push(format!("{node}: {count} GPUs, indexes {idx:?}"));
            }
        }
        if !fault_done && observed.running.len() >= 8 {
            fault_done = true;
            match fault {
                Fault::NodeDown => {
                    // The node of the job that started last: it has the most of its
                    // sleep left, so it is still running when the node goes down.
                    let victim = jobs
                        .values()
                        .filter(|j| j["job_state"] == "RUNNING")
                        .max_by_key(|j| j["start_time"].as_u64().unwrap_or(0))
                        .and_then(|j| expand(j["nodes"].as_str()?).into_iter().next());
                    if let Some(node) = victim {
                        let on_it: Vec<u64> = jobs
                            .iter()
                            .filter(|(_, j)| {
                                j["job_state"] == "RUNNING"
                                    && expand(j["nodes"].as_str().unwrap_or("")).contains(&node)
                            })
                            .map(|(id, _)| *id)
                            .collect();
                        lab.run(
                            "scontrol",
                            &[
                                "update",
                                &format!("NodeName={node}"),
                                "State=DOWN",
                                "Reason=gantry-test",
                            ],
                        );
                        let down_at_s = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .unwrap()
                            .as_secs()
                            + 1;
                        println!("set {node} DOWN with jobs {on_it:?} on it");
                        observed.downed = Some(Downed {
                            node,
                            jobs: on_it,
                            at_s: down_at_s,
                        });
                    } else {
                        fault_done = false;
                    }
                }
                Fault::KillGantry => {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    println!(
                        "killed gantry (SIGKILL) after {:.1} s",
                        started.elapsed().as_secs_f64()
                    );
                    std::thread::sleep(Duration::from_millis(500));
                    observed.gantry_runs += 1;
                    observed.spawned_unix_s.push(unix_s_f64());
                    child = gantry(lab, record, observed.gantry_runs);
                }
                Fault::None => {}
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut text = String::new();
            std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut text).unwrap();
            let log = std::fs::read_to_string(
                lab.dir.join(format!("gantry-{}.log", observed.gantry_runs)),
            )
            .unwrap_or_default();
            assert!(status.success(), "gantry failed ({status}):\n{log}");
            observed
                .summaries
                .push(serde_json::from_str(text.trim()).unwrap());
            println!("gantry log:\n{log}");
            return observed;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The node of core GPU `g` in the lab's layout: racks s1 = n1,n2 and s2 = n3,n4, eight
/// GPUs per node, numbered rack by rack, node by node.
fn node_of_gpu(g: u16) -> String {
    format!("n{}", usize::from(g) / GPUS_PER_NODE + 1)
}

/// A core `Start`: the cycle's time (ms) and the (node, GPUs) shape.
type CoreStart = (u64, Vec<(String, usize)>);

/// What the core decided, from gantry's recording.
struct CoreView {
    /// Per job: the starts that begin a run, in order. A `Start` in the same cycle as a
    /// `Preempt` of the job, on the same nodes, continues the run (gantry leaves such a run
    /// alone) and is not listed.
    starts: BTreeMap<u64, Vec<CoreStart>>,
    /// Per job: how often the core preempted it.
    preempts: BTreeMap<u64, u64>,
}

impl CoreView {
    /// The start that launched the run Slurm started at `start_s` (Unix seconds): the
    /// last one decided before then.
    fn launching(&self, job: u64, start_s: u64) -> &CoreStart {
        let starts = &self.starts[&job];
        starts
            .iter()
            .rev()
            .find(|(t, _)| *t <= start_s * 1000 + 999)
            .unwrap_or(&starts[0])
    }
}

fn shape_nodes(shape: &[(String, usize)]) -> Vec<&str> {
    shape.iter().map(|(n, _)| n.as_str()).collect()
}

fn core_view(record: &Path) -> CoreView {
    let recording = gantry::record::read(record).unwrap();
    assert_eq!(recording.header.cluster.to_string(), "2x2x8");
    let mut view = CoreView {
        starts: BTreeMap::new(),
        preempts: BTreeMap::new(),
    };
    let mut preempted: BTreeMap<u64, u64> = BTreeMap::new();
    for entry in &recording.entries {
        let now = entry.now.0;
        for decision in &entry.decisions {
            match decision {
                gantry_core::Decision::Start { job, gpus } => {
                    let id = u64::from(job.0);
                    let mut shape: BTreeMap<String, usize> = BTreeMap::new();
                    for g in gpus.as_slice() {
                        *shape.entry(node_of_gpu(g.0)).or_default() += 1;
                    }
                    let shape: Vec<(String, usize)> = shape.into_iter().collect();
                    let list = view.starts.entry(id).or_default();
                    let continues = preempted.remove(&id) == Some(now)
                        && list
                            .last()
                            .is_some_and(|(_, before)| shape_nodes(before) == shape_nodes(&shape));
                    if continues {
                        list.last_mut().unwrap().1 = shape;
                    } else {
                        list.push((now, shape));
                    }
                }
                gantry_core::Decision::Preempt { job, .. } => {
                    let id = u64::from(job.0);
                    *view.preempts.entry(id).or_default() += 1;
                    preempted.insert(id, now);
                }
                gantry_core::Decision::Reject { .. } => {}
            }
        }
    }
    view
}

/// When gantry released each job (its first `start job N` log line), as Unix seconds no
/// later than the release: the poll the release followed (the line's time less its time
/// after the poll) on the clock of the gantry process that logged it, counted from just
/// before that process was spawned.
fn release_times(lab: &Lab, spawned_unix_s: &[f64]) -> BTreeMap<u64, f64> {
    let mut out = BTreeMap::new();
    for (run, spawned) in spawned_unix_s.iter().enumerate() {
        let log = std::fs::read_to_string(lab.dir.join(format!("gantry-{}.log", run + 1)))
            .unwrap_or_default();
        for line in log.lines() {
            let Some(rest) = line.strip_prefix("gantry slurm [") else {
                continue;
            };
            let Some((t, text)) = rest.split_once(" s] ") else {
                continue;
            };
            let Ok(t) = t.trim().parse::<f64>() else {
                continue;
            };
            let Some(tail) = text.strip_prefix("start job ") else {
                continue;
            };
            let id: Option<u64> = tail.split(' ').next().and_then(|i| i.parse().ok());
            let after_poll_ms: f64 = tail
                .rsplit_once('(')
                .and_then(|(_, r)| r.split(' ').next()?.parse().ok())
                .unwrap_or(0.0);
            if let Some(id) = id {
                out.entry(id)
                    .or_insert(spawned + t - after_poll_ms / 1000.0);
            }
        }
    }
    out
}

/// The splits gantry logged for uneven starts it released with Slurm's split (`job N:
/// released with Slurm's split n1:6,n2:1 (gantry chose …)`), sorted by node.
fn logged_splits(lab: &Lab, runs: usize) -> BTreeMap<u64, Vec<(String, usize)>> {
    let mut out = BTreeMap::new();
    for run in 1..=runs {
        let log =
            std::fs::read_to_string(lab.dir.join(format!("gantry-{run}.log"))).unwrap_or_default();
        for line in log.lines() {
            let Some((_, tail)) = line.split_once("] job ") else {
                continue;
            };
            let Some((id, rest)) = tail.split_once(": released with Slurm's split ") else {
                continue;
            };
            let (Ok(id), Some(split)) = (id.parse::<u64>(), rest.split(' ').next()) else {
                continue;
            };
            let mut shape: Vec<(String, usize)> = split
                .split(',')
                .filter_map(|e| {
                    let (n, c) = e.split_once(':')?;
                    Some((n.to_string(), c.parse().ok()?))
                })
                .collect();
            shape.sort();
            out.insert(id, shape);
        }
    }
    out
}

fn job_files(lab: &Lab, id: u64, kind: &str) -> Vec<(u32, String)> {
    let prefix = format!("{id}.{kind}.");
    let mut files: Vec<(u32, String)> = std::fs::read_dir(lab.jobs_dir())
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let run = name.strip_prefix(&prefix)?.parse().ok()?;
            Some((
                run,
                std::fs::read_to_string(e.path())
                    .unwrap()
                    .trim()
                    .to_string(),
            ))
        })
        .collect();
    files.sort();
    files
}

/// Every check of the acceptance, on Slurm's records and the jobs' files.
fn check(
    lab: &Lab,
    record: &Path,
    jobs: &[Submitted],
    bad: &[u64],
    observed: &Observed,
    fault: Fault,
) {
    let slurm = lab.squeue();
    let core = core_view(record);
    // Every job completed exactly once: Slurm's record ends COMPLETED; it ran at most once
    // per requeue, and every requeue was a preemption the core decided (a node failure or
    // priority; never a gantry restart).
    let mut finished_as_preempted = Vec::new();
    for job in jobs {
        let record = &slurm[&job.id];
        assert_eq!(record["job_state"], "COMPLETED", "job {}: {record}", job.id);
        let restarts = record["restart_cnt"].as_u64().unwrap();
        // (A requeue can also come before a run's script started: fewer runs, never more.)
        let runs = job_files(lab, job.id, "start");
        assert!(
            runs.len() as u64 <= restarts + 1,
            "job {}: {} runs for {restarts} requeues",
            job.id,
            runs.len()
        );
        let preempts = core.preempts.get(&job.id).copied().unwrap_or(0);
        assert!(
            restarts <= preempts,
            "job {}: requeued {restarts} times, the core preempted it {preempts} times",
            job.id
        );
        // The last run completed; an earlier run may have completed too when the core's
        // preemption reached Slurm in the instant the run ended (the requeue races the end).
        let done = job_files(lab, job.id, "done");
        assert!(
            done.last()
                .is_some_and(|(run, _)| u64::from(*run) == restarts),
            "job {}: its last run did not complete: {done:?}",
            job.id
        );
        if done.len() > 1 {
            finished_as_preempted.push(job.id);
        }
    }
    println!("runs that ended as the core preempted them: {finished_as_preempted:?}");
    // No node ever over-allocated.
    assert!(
        observed.overloads.is_empty(),
        "over-allocated: {:?}",
        observed.overloads
    );
    // Every job's last run was on the nodes the core chose when it was launched (a later
    // move may find the run already ending). An even start (one GPU count per node, asked
    // per node) runs with the core's GPUs per node. An uneven one is asked as a per-job
    // count that Slurm splits by its free GPUs when it starts the job: gantry releases it
    // when that split is the core's, but a job ending between gantry's poll and Slurm's
    // start moves it, and one released out of a split deadlock is Slurm's split (logged).
    // Those are listed, not failed.
    let deadlock_splits = logged_splits(lab, observed.gantry_runs);
    let mut shape_differs: Vec<String> = Vec::new();
    let mut uneven_otherwise: Vec<String> = Vec::new();
    for job in jobs {
        let started_s = slurm[&job.id]["start_time"].as_u64().unwrap();
        let (_, chosen) = core.launching(job.id, started_s);
        assert_eq!(
            chosen.iter().map(|(_, c)| c).sum::<usize>(),
            job.gpus,
            "job {}",
            job.id
        );
        let chosen_nodes: BTreeSet<String> = chosen.iter().map(|(n, _)| n.clone()).collect();
        let ran: BTreeSet<String> = expand(slurm[&job.id]["nodes"].as_str().unwrap())
            .into_iter()
            .collect();
        assert_eq!(
            ran, chosen_nodes,
            "job {} ran on {ran:?}, gantry chose {chosen:?}",
            job.id
        );
        let (_, last_start) = job_files(lab, job.id, "start").pop().unwrap();
        let started_on: BTreeSet<String> = expand(&last_start).into_iter().collect();
        assert_eq!(started_on, chosen_nodes, "job {}", job.id);
        let even = chosen.iter().all(|(_, c)| *c == chosen[0].1);
        if let Some(seen) = observed.running.get(&job.id)
            && !seen.contains(chosen)
        {
            let text = format!(
                "job {}: Slurm gave {seen:?}, gantry chose {chosen:?}",
                job.id
            );
            if even {
                shape_differs.push(text);
            } else {
                uneven_otherwise.push(text);
            }
        }
    }
    assert!(shape_differs.is_empty(), "{shape_differs:?}");
    println!(
        "shapes checked; released with Slurm's split: {:?}; uneven starts Slurm split otherwise than gantry: {uneven_otherwise:?}",
        deadlock_splits.keys().collect::<Vec<_>>()
    );
    // No job started before gantry released it (held until then). Slurm's start times are
    // whole seconds (truncated) and each release time is no later than the release, so a
    // start second at least one below it means a start before the release. Slurm's start
    // order among released jobs is not gantry's: Slurm starts a released job at its next
    // scheduling pass that finds its nodes ready (a node completing a job or whose slurmd
    // revoked a requeued job's credential starts nothing for a while), so a job released
    // one cycle before another may start a second after it.
    let released = release_times(lab, &observed.spawned_unix_s);
    let mut early = Vec::new();
    for job in jobs {
        let started_s = slurm[&job.id]["start_time"].as_u64().unwrap();
        let Some(&released_s) = released.get(&job.id) else {
            early.push(format!("job {}: no release logged", job.id));
            continue;
        };
        if started_s as f64 + 1.0 <= released_s {
            early.push(format!(
                "job {}: started {started_s}, released at {released_s:.3}",
                job.id
            ));
        }
    }
    assert!(
        early.is_empty(),
        "jobs started before gantry released them: {early:?}"
    );
    println!("release before start checked on {} jobs", jobs.len());
    // Replaying the recording gives the same decisions.
    let replay = Command::new(gantry_bin())
        .arg("replay")
        .arg(record)
        .output()
        .unwrap();
    assert!(
        replay.status.success(),
        "{}",
        String::from_utf8_lossy(&replay.stdout)
    );
    println!("{}", String::from_utf8_lossy(&replay.stdout).trim());
    // Bad requests: cancelled, with the reason shown by squeue.
    let listing = lab.run("squeue", &["-t", "all", "-h", "-o", "%i|%T|%k"]);
    for id in bad {
        let line = listing
            .lines()
            .find(|l| l.starts_with(&format!("{id}|")))
            .unwrap_or_else(|| panic!("job {id} not in squeue:\n{listing}"));
        assert!(line.contains("|CANCELLED|gantry rejected: "), "{line}");
    }
    let summary = observed.summaries.last().unwrap();
    for key in [
        "jobs_completed",
        "jobs_started",
        "restarts_seen",
        "decision_latency_p50_ms",
        "decision_latency_p99_ms",
    ] {
        assert!(summary[key].is_number(), "summary lacks {key}: {summary}");
    }
    println!("summary: {summary}");
    match fault {
        Fault::None => {
            assert_eq!(summary["jobs_completed"], JOBS);
            assert_eq!(summary["jobs_started"], JOBS);
            assert_eq!(summary["jobs_rejected"], bad.len());
        }
        Fault::NodeDown => {
            let downed = observed.downed.clone().expect("a node was set down");
            let node = &downed.node;
            // A job listed as running may end between that sample and `scontrol update`;
            // such a job completed, not requeued, no later than the node went down.
            let mut requeued = 0;
            for id in &downed.jobs {
                let record = &slurm[id];
                if record["restart_cnt"].as_u64().unwrap() == 0 {
                    assert!(
                        record["end_time"].as_u64().unwrap() <= downed.at_s,
                        "job {id} was not requeued: {record}"
                    );
                    println!("job {id} completed on {node} before it went down");
                    continue;
                }
                requeued += 1;
                let ran = expand(record["nodes"].as_str().unwrap());
                assert!(
                    !ran.contains(node),
                    "job {id} finished on the down node {node}"
                );
            }
            assert!(
                requeued >= 1,
                "no job of {downed:?} was requeued",
                downed = downed.jobs
            );
            assert!(summary["restarts_seen"].as_u64().unwrap() >= requeued);
        }
        Fault::KillGantry => {
            assert_eq!(observed.gantry_runs, 2);
            assert!(summary["journal_entries_replayed"].as_u64().unwrap() > 0);
            // The killed process's part of the summary survived (written as it went).
            assert_eq!(summary["jobs_completed"], JOBS, "{summary}");
            assert_eq!(summary["jobs_rejected"], bad.len(), "{summary}");
        }
    }
}

fn scenario(name: &str, fault: Fault) {
    scenario_on(name, fault, &[]);
}

/// [`scenario`] on a lab brought up with more `scripts/slurm-lab.sh up` flags.
fn scenario_on(name: &str, fault: Fault, lab_flags: &[&str]) {
    let _slot = LABS.take();
    let Some(lab) = Lab::up_with(name, lab_flags) else {
        return;
    };
    let (jobs, bad) = submit_workload(&lab, Ask::PerJob);
    let record = lab.dir.join("gantry.journal");
    let started = Instant::now();
    let observed = run_scheduler(&lab, &record, fault);
    println!(
        "{name}: all jobs done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    check(&lab, &record, &jobs, &bad, &observed, fault);
}

#[test]
fn slurm_lab_schedules_every_job_once_where_and_when_gantry_decided() {
    scenario("plain", Fault::None);
}

/// The same on Slurm's default scheduler, `sched/backfill` (the lab's default is
/// `sched/builtin`): Slurm's backfill thread starts what gantry releases as well, and nothing
/// else.
#[test]
fn slurm_lab_on_sched_backfill_schedules_every_job_once_where_and_when_gantry_decided() {
    scenario_on("backfill", Fault::None, &["--sched", "backfill"]);
}

#[test]
fn slurm_lab_node_down_mid_run_requeues_and_finishes_elsewhere() {
    scenario("node-down", Fault::NodeDown);
}

#[test]
fn slurm_lab_gantry_killed_mid_run_resumes_without_running_anything_twice() {
    scenario("kill", Fault::KillGantry);
}

// ---------------------------------------------------------------------------------------
// Short scenarios, one behaviour each (seconds each, one lab each).

/// A job script that sleeps `$1` s (no files).
const SLEEP_SCRIPT: &str = "#!/bin/sh\nsleep \"$1\"\n";

/// `gantry slurm` started on `lab` with `order`, logging to `DIR/NAME.log`.
struct Gantry {
    child: Child,
    log: PathBuf,
    record: PathBuf,
}

impl Gantry {
    fn start(lab: &Lab, name: &str, order: &str, extra: &[&str]) -> Gantry {
        Self::start_on(
            lab,
            name,
            order,
            &lab.dir.join(format!("{name}.journal")),
            extra,
        )
    }

    /// As [`start`](Self::start), on the journal `record`.
    fn start_on(lab: &Lab, name: &str, order: &str, record: &Path, extra: &[&str]) -> Gantry {
        let log = lab.dir.join(format!("{name}.log"));
        let record = record.to_path_buf();
        let child = lab
            .cmd(gantry_bin())
            .args(["slurm", "--order", order, "--placement", "best-fit"])
            .args(["--poll-ms", "200", "--json", "--record"])
            .arg(&record)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Gantry { child, log, record }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for `--exit-when-idle` to end it (at most `limit`) and returns its summary.
    fn finish(mut self, limit: Duration) -> Value {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut text = String::new();
                std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut text)
                    .unwrap();
                let log = self.log_text();
                assert!(status.success(), "gantry failed ({status}):\n{log}");
                println!("gantry log:\n{log}");
                return serde_json::from_str(text.trim()).unwrap();
            }
            if started.elapsed() > limit {
                let log = self.log_text();
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("gantry did not finish within {limit:?}:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Gantry {
    fn drop(&mut self) {
        // Ends exactly the process this test started, by its PID.
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Lab {
    /// Submits a held job that sleeps `sleep_s` with `flags`; returns its id.
    fn submit_sleep(&self, flags: &[&str], sleep_s: u64) -> u64 {
        let script = self.dir.join("sleep.sh");
        if !script.exists() {
            std::fs::write(&script, SLEEP_SCRIPT).unwrap();
        }
        let mut args: Vec<String> = ["--hold", "-o", "/dev/null"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(flags.iter().map(|s| s.to_string()));
        args.push(script.display().to_string());
        args.push(sleep_s.to_string());
        self.sbatch(&args)
    }

    /// Submits a job an operator holds (`scontrol hold`): pending, it keeps a gantry run
    /// with `--exit-when-idle` going while a test submits in parts, and takes no GPU.
    /// End it with [`let_gantry_end`](Self::let_gantry_end) before waiting for the summary.
    fn keep_gantry_running(&self) -> u64 {
        let id = self.submit_sleep(&["--time=1", "--gpus=1"], 1);
        self.run("scontrol", &["hold", &id.to_string()]);
        id
    }

    /// The log (standard error) of the gantry run named `name` ([`Gantry::start`]).
    fn gantry_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap()
    }

    /// Cancels the job of [`keep_gantry_running`](Self::keep_gantry_running).
    fn let_gantry_end(&self, guard: u64) {
        self.run("scancel", &[&guard.to_string()]);
    }

    /// `ID|STATE|COMMENT` of one job, in any state.
    fn state_and_comment(&self, id: u64) -> String {
        let listing = self.run("squeue", &["-t", "all", "-h", "-o", "%i|%T|%k"]);
        listing
            .lines()
            .find(|l| l.starts_with(&format!("{id}|")))
            .unwrap_or_else(|| panic!("job {id} not listed:\n{listing}"))
            .to_string()
    }

    /// `gantry replay` of the journal `record` matches every decision; returns its output.
    fn assert_replays(&self, record: &Path) -> String {
        let replay = self
            .cmd(gantry_bin())
            .arg("replay")
            .arg(record)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&replay.stdout).to_string();
        assert!(
            replay.status.success() && text.contains("every decision matches"),
            "{text}"
        );
        text
    }

    /// Every job of `ids` ended COMPLETED.
    fn assert_completed(&self, ids: &[u64]) {
        let jobs = self.squeue();
        for id in ids {
            assert_eq!(jobs[id]["job_state"], "COMPLETED", "job {id}: {}", jobs[id]);
        }
    }

    /// Every job of `ids` ended COMPLETED, and `folder` (the epilog acknowledgements and
    /// doorbells) holds nothing.
    fn assert_completed_and_folder_empty(&self, ids: &[u64], folder: &Path) {
        self.assert_completed(ids);
        let left: Vec<_> = std::fs::read_dir(folder).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// Polls `squeue --json` until `done` holds for a job (at most `limit`); returns it.
    fn wait_job(
        &self,
        id: u64,
        limit: Duration,
        what: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let started = Instant::now();
        loop {
            let jobs = self.squeue();
            if let Some(job) = jobs.get(&id)
                && done(job)
            {
                return job.clone();
            }
            assert!(
                started.elapsed() < limit,
                "job {id}: not {what} within {limit:?}: {:?}",
                jobs.get(&id)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn is_running(job: &Value) -> bool {
    job["job_state"] == "RUNNING"
}

fn is_completed(job: &Value) -> bool {
    job["job_state"] == "COMPLETED"
}

/// Per node GPU counts of a running job from Slurm's `gres_detail`, sorted by node.
fn slurm_shape(job: &Value) -> Vec<(String, usize)> {
    let nodes = expand(job["nodes"].as_str().unwrap_or(""));
    let details: Vec<&str> = job["gres_detail"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut shape: Vec<(String, usize)> = nodes
        .into_iter()
        .zip(details)
        .map(|(n, d)| (n, gres_detail(d).0))
        .collect();
    shape.sort();
    shape
}

fn unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn unix_s_f64() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The 5-GPU split repro: with n3 at 2 free GPUs and n4 at 4, a 5-GPU job must be placed
/// as Slurm allocates it (n3:2 + n4:3, Slurm's split of a per-job count), so the 1-GPU job
/// after it starts at once on n4's last free GPU instead of waiting for "n3:1".
#[test]
fn slurm_lab_uneven_split_is_allocated_as_chosen_and_blocks_nobody() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("split") else {
        return;
    };
    let gantry = Gantry::start(&lab, "split", "fifo", &["--exit-when-idle"]);
    // 8 + 8 + 6 + 4 GPUs, each submitted once the one before runs (best-fit fills whole
    // nodes first: n3 keeps 2 free, n4 4).
    let mut fillers = Vec::new();
    for gpus in [8, 8, 6, 4] {
        let id = lab.submit_sleep(&["--time=1", &format!("--gpus={gpus}")], 20);
        lab.wait_job(id, Duration::from_secs(30), "running", is_running);
        fillers.push(id);
    }
    let five = lab.submit_sleep(&["--time=1", "--gpus=5"], 10);
    let five_job = lab.wait_job(five, Duration::from_secs(30), "running", is_running);
    let one_submitted = unix_s();
    let one = lab.submit_sleep(&["--time=1", "--gpus=1"], 1);
    let one_job = lab.wait_job(one, Duration::from_secs(30), "running", |j| {
        is_running(j) || is_completed(j)
    });
    let waited = one_job["start_time"]
        .as_u64()
        .unwrap()
        .saturating_sub(one_submitted);
    let summary = gantry.finish(Duration::from_secs(90));
    // The core's placement of the 5-GPU job, from the journal.
    let core = core_view(&lab.dir.join("split.journal"));
    let chosen = core.starts[&five][0].1.clone();
    assert_eq!(
        slurm_shape(&five_job),
        chosen,
        "Slurm allocated the 5-GPU job otherwise than gantry chose"
    );
    assert!(
        waited <= 3,
        "the 1-GPU job waited {waited} s with a GPU free (job 5 on {chosen:?})"
    );
    assert_eq!(summary["jobs_completed"], 6, "{summary}");
}

/// An operator's `scontrol requeuehold` of a running job and `scontrol hold` of a job
/// gantry has not started are honoured (the jobs stay held, logged); released by the
/// operator, they are scheduled again and complete.
#[test]
fn slurm_lab_admin_holds_are_honoured_and_logged() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("hold") else {
        return;
    };
    let running = lab.submit_sleep(&["--time=1", "--gpus=1"], 8);
    // Asks for the whole partition while the first job runs: it waits in gantry's queue.
    let queued = lab.submit_sleep(&["--time=1", "--gpus=32"], 1);
    let gantry = Gantry::start(&lab, "hold", "fifo", &["--exit-when-idle"]);
    lab.wait_job(running, Duration::from_secs(30), "running", is_running);
    lab.run("scontrol", &["hold", &queued.to_string()]);
    lab.run("scontrol", &["requeuehold", &running.to_string()]);
    // Held now; still held 3 s later (gantry polls every 200 ms).
    let held = |j: &Value| j["job_state"] == "PENDING" && j["priority"] == 0;
    lab.wait_job(running, Duration::from_secs(30), "held", held);
    std::thread::sleep(Duration::from_secs(3));
    let jobs = lab.squeue();
    for id in [running, queued] {
        assert!(
            held(&jobs[&id]),
            "job {id} was not left held: {}",
            jobs[&id]
        );
    }
    let log = gantry.log_text();
    for id in [running, queued] {
        assert!(
            log.contains(&format!("job {id}: held by an operator")),
            "no log line for the hold of job {id}:\n{log}"
        );
    }
    // Released by the operator: both run and complete. The big job is released once the
    // other runs again, so Slurm cannot start it before gantry takes it back.
    lab.run("scontrol", &["release", &running.to_string()]);
    lab.wait_job(
        running,
        Duration::from_secs(60),
        "running again",
        is_running,
    );
    lab.run("scontrol", &["release", &queued.to_string()]);
    let summary = gantry.finish(Duration::from_secs(120));
    lab.assert_completed(&[running, queued]);
    assert_eq!(summary["jobs_completed"], 2, "{summary}");
}

/// A job gantry holds queued, released by an operator (`scontrol release`): gantry logs it
/// once, with both possible causes, counts it in `--json`, and holds it again; it runs
/// when gantry starts it.
#[test]
fn slurm_lab_a_release_outside_gantry_is_logged_counted_and_held_again() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("outside") else {
        return;
    };
    let running = lab.submit_sleep(&["--time=1", "--gpus=24"], 6);
    // 16 GPUs while 8 are free: it waits in gantry's queue, and Slurm cannot start it.
    let queued = lab.submit_sleep(&["--time=1", "--gpus=16"], 1);
    let gantry = Gantry::start(&lab, "outside", "fifo", &["--exit-when-idle"]);
    lab.wait_job(running, Duration::from_secs(30), "running", is_running);
    lab.run("scontrol", &["release", &queued.to_string()]);
    let held = |j: &Value| j["job_state"] == "PENDING" && j["priority"] == 0;
    lab.wait_job(queued, Duration::from_secs(10), "held again", held);
    let summary = gantry.finish(Duration::from_secs(120));
    assert_logged(
        &lab.gantry_log("outside"),
        &format!(
            "job {queued}: released outside gantry while gantry held it queued (an operator's `scontrol release`, or a second scheduler on this partition"
        ),
    );
    lab.assert_completed(&[running, queued]);
    assert_eq!(summary["jobs_released_outside_gantry"], 1, "{summary}");
    assert_eq!(summary["jobs_completed"], 2, "{summary}");
}

/// Two `gantry slurm` runs on one partition with different journals (which the journal's
/// lock cannot see): the second starts a job the first holds queued, and the first says so.
#[test]
fn slurm_lab_a_second_gantry_on_the_partition_is_reported() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("second") else {
        return;
    };
    let running = lab.submit_sleep(&["--time=1", "--gpus=24"], 30);
    let head = lab.submit_sleep(&["--time=1", "--gpus=16"], 1);
    // Behind the head, which `fifo` without the head's reservation does not pass and
    // `las` does.
    let small = lab.submit_sleep(&["--time=1", "--gpus=8"], 30);
    let first = Gantry::start(&lab, "first", "fifo", &["--no-reserve-head"]);
    lab.wait_job(running, Duration::from_secs(30), "running", is_running);
    let second = Gantry::start(&lab, "second", "las", &[]);
    let started = Instant::now();
    let line = format!("job {small}: ");
    loop {
        let log = first.log_text();
        if log.lines().any(|l| {
            l.contains(&line)
                && l.contains("outside gantry while gantry held it queued")
                && l.contains("a second scheduler on this partition")
        }) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the first gantry did not report the second's start of job {small}:\n{log}\nsecond:\n{}",
            second.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        !first
            .log_text()
            .contains(&format!("job {head}: released outside"))
    );
}

/// Slurm's deadline rule: a job whose time limit from now ends after its `--deadline` is
/// refused by gantry with the reason (Slurm would cancel it at start), and `gantry replay
/// --metrics` counts that deadline missed; a job whose limit fits completes.
#[test]
fn slurm_lab_time_limit_past_the_deadline_is_refused_and_counted_missed() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("deadline") else {
        return;
    };
    let late = lab.submit_sleep(&["--time=5", "--gpus=1", "--deadline=now+120"], 1);
    let fits = lab.submit_sleep(&["--time=1", "--gpus=1", "--deadline=now+300"], 1);
    let gantry = Gantry::start(&lab, "deadline", "edf", &["--exit-when-idle"]);
    let record = gantry.record.clone();
    let summary = gantry.finish(Duration::from_secs(60));
    let line = |id: u64| lab.state_and_comment(id);
    assert!(
        line(late).contains("|CANCELLED|gantry rejected: its time limit (5 min)"),
        "{}",
        line(late)
    );
    assert!(line(fits).contains("|COMPLETED|"), "{}", line(fits));
    assert_eq!(summary["deadline_jobs"], 2, "{summary}");
    assert_eq!(summary["deadline_misses"], 1, "{summary}");
    let replay = Command::new(gantry_bin())
        .arg("replay")
        .arg(&record)
        .args(["--metrics", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.status.success(), "{text}");
    let metrics: Value = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON in {text}"));
    assert_eq!(metrics["deadline_jobs"], 2, "{metrics}");
    assert_eq!(metrics["deadline_miss_rate"], 0.5, "{metrics}");
}

/// Requests gantry cannot place as asked: a job whose own `--exclude` or `--constraint`
/// rules out the node gantry chose leaves the core once Slurm says so (`BadConstraints`)
/// and is handed to Slurm unpinned, which runs it on a node its rules allow (on the build
/// before, gantry cancelled it); `--exclusive` on part of a node is refused at once; a
/// user's `-w` is logged and the job runs where gantry places it.
#[test]
fn slurm_lab_node_rules_gantry_cannot_place_by_are_left_to_slurm_or_refused() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("unplaceable") else {
        return;
    };
    lab.run(
        "scontrol",
        &[
            "update",
            "NodeName=n1",
            "AvailableFeatures=fast",
            "ActiveFeatures=fast",
        ],
    );
    // On an empty partition best-fit takes the lowest free node: n1 for the first, which
    // excludes it, n2 for the second, which needs n1's feature.
    let excluded = lab.submit_sleep(&["--time=1", "--gpus=8", "--exclude=n1"], 1);
    let constrained = lab.submit_sleep(&["--time=1", "--gpus=8", "--constraint=fast"], 1);
    let exclusive = lab.submit_sleep(&["--time=1", "--gres=gpu:2", "--exclusive"], 1);
    let asked = lab.submit_sleep(&["--time=1", "--gres=gpu:1", "-w", "n4"], 1);
    let gantry = Gantry::start(&lab, "unplaceable", "fifo", &["--exit-when-idle"]);
    let summary = gantry.finish(Duration::from_secs(120));
    let log = lab.gantry_log("unplaceable");
    let line = |id: u64| lab.state_and_comment(id);
    let jobs = lab.squeue();
    for (id, chosen, ran) in [(excluded, "n1", None), (constrained, "n2", Some("n1"))] {
        assert!(
            log.contains(&format!(
                "job {id}: Slurm cannot run it on {chosen}:8 (BadConstraints: its own node rules"
            )) && log.contains("leaves this job to Slurm's own scheduler, unpinned"),
            "{log}"
        );
        assert!(line(id).contains("|COMPLETED|"), "{}\n{log}", line(id));
        let nodes = jobs[&id]["nodes"].as_str().unwrap_or_default().to_string();
        match ran {
            Some(node) => assert_eq!(nodes, node, "job {id}"),
            None => assert_ne!(nodes, chosen, "job {id}"),
        }
    }
    assert!(
        line(exclusive).contains("|CANCELLED|gantry rejected: asks for whole nodes (--exclusive)"),
        "{}",
        line(exclusive)
    );
    assert!(line(asked).contains("|COMPLETED|"), "{}", line(asked));
    assert!(
        log.contains(&format!("job {asked}: asks for nodes n4 (-w/--nodelist)")),
        "{log}"
    );
    assert_eq!(summary["jobs_completed"], 1, "{summary}");
    assert_eq!(summary["jobs_rejected"], 1, "{summary}");
}

/// A job array is split into single jobs that gantry schedules: three 8-GPU tasks run side
/// by side, each pinned to a node of its own (the task kept in the array's record is named
/// `A_0`, so its release releases no other task), and count in gantry's summary. The tasks
/// of an array with a throttle (`%1`) run one at a time, also scheduled by gantry. (Before,
/// gantry left every array to Slurm; before that, it pinned an array's record to one node,
/// so every task queued there.)
#[test]
fn slurm_lab_a_job_array_is_split_into_single_jobs_gantry_schedules() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("array") else {
        return;
    };
    let array = lab.submit_sleep(&["--time=1", "--gpus=8", "--array=0-2"], 6);
    let throttled = lab.submit_sleep(&["--time=1", "--gpus=1", "--array=0-1%1"], 2);
    let gantry = Gantry::start(&lab, "array", "fifo", &["--exit-when-idle"]);
    let summary = gantry.finish(Duration::from_secs(120));
    let log = lab.gantry_log("array");
    assert!(
        log.contains(&format!(
            "job array {array}: 3 pending tasks (0-2); gantry splits them into single jobs (task 0 keeps job id {array})"
        )),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "job array {throttled}: 2 pending tasks (0-1%1); gantry splits them into single jobs (task 0 keeps job id {throttled}) and schedules each, at most 1 at once (its throttle)"
        )),
        "{log}"
    );
    // Every task, by array: job id, state, nodes, start and end (Unix seconds).
    let listing = lab.run("squeue", &["-t", "all", "-h", "-o", "%i|%F|%T|%N|%S|%e"]);
    let tasks = |of: u64| -> Vec<Vec<&str>> {
        listing
            .lines()
            .map(|l| l.split('|').collect::<Vec<&str>>())
            .filter(|f| f[1] == of.to_string())
            .collect()
    };
    let split = tasks(array);
    assert_eq!(split.len(), 3, "{listing}");
    assert!(split.iter().all(|f| f[2] == "COMPLETED"), "{listing}");
    let nodes: BTreeSet<&str> = split.iter().map(|f| f[3]).collect();
    assert_eq!(nodes.len(), 3, "tasks shared nodes:\n{listing}");
    assert_eq!(summary["jobs_completed"], 5, "{summary}");
    assert_eq!(summary["jobs_rejected"], 0, "{summary}");
    let mut one_at_a_time = tasks(throttled);
    assert_eq!(one_at_a_time.len(), 2, "{listing}");
    assert!(
        one_at_a_time.iter().all(|f| f[2] == "COMPLETED"),
        "{listing}"
    );
    one_at_a_time.sort_by_key(|f| f[4].to_string());
    assert!(
        one_at_a_time[0][5] <= one_at_a_time[1][4],
        "the throttled array's tasks overlapped:\n{listing}"
    );
}

/// A held job with a dependency waits in its hold until it is met (Slurm does not test a
/// held job's dependencies, so it would not start one gantry released early either: it
/// would sit on GPUs the core counted busy), then gantry schedules it; one whose dependency
/// can never be met is released to Slurm, which keeps it pending as
/// `DependencyNeverSatisfied`. (Before, gantry started both at once: the first waited in
/// Slurm on its pinned node, the second held its GPUs for ever.) Two `singleton` jobs of
/// one name run one after the other, both scheduled by gantry (before, gantry left them
/// to Slurm).
#[test]
fn slurm_lab_a_dependent_job_is_scheduled_once_its_dependency_is_met() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("depend") else {
        return;
    };
    let parent = lab.submit_sleep(&["--time=1", "--gpus=1"], 4);
    let child = lab.submit_sleep(
        &[
            "--time=1",
            "--gpus=8",
            &format!("--dependency=afterok:{parent}"),
        ],
        1,
    );
    let failing = lab.sbatch(
        &[
            "--hold",
            "-o",
            "/dev/null",
            "--time=1",
            "--gpus=1",
            "--wrap",
            "exit 3",
        ]
        .map(String::from),
    );
    let orphan = lab.submit_sleep(
        &[
            "--time=1",
            "--gpus=8",
            &format!("--dependency=afterok:{failing}"),
        ],
        1,
    );
    let singleton = [
        "--time=1",
        "--gpus=1",
        "-J",
        "chain",
        "--dependency=singleton",
    ];
    let (first_link, second_link) = (
        lab.submit_sleep(&singleton, 3),
        lab.submit_sleep(&singleton, 1),
    );
    let gantry = Gantry::start(&lab, "depend", "fifo", &["--exit-when-idle"]);
    lab.wait_job(orphan, Duration::from_secs(60), "never satisfiable", |j| {
        j["state_reason"] == "DependencyNeverSatisfied"
    });
    lab.run("scancel", &[&orphan.to_string()]);
    let summary = gantry.finish(Duration::from_secs(60));
    let log = lab.gantry_log("depend");
    for text in [
        format!(
            "job {child}: waits for its dependency (afterok:{parent}(unfulfilled)): job {parent} has not ended"
        ),
        format!(
            "job {orphan}: its dependency (afterok:{failing}(unfulfilled)) can never be met (job {failing} ended FAILED); released to Slurm"
        ),
        format!(
            "job {second_link}: waits for its dependency (singleton(unfulfilled)): job {first_link} of the same name and user"
        ),
    ] {
        assert!(log.contains(&text), "{text}\n{log}");
    }
    let jobs = lab.squeue();
    let time = |id: u64, field: &str| jobs[&id][field].as_u64().unwrap();
    assert_eq!(jobs[&child]["job_state"], "COMPLETED", "{}", jobs[&child]);
    assert!(
        time(child, "start_time") >= time(parent, "end_time"),
        "job {child} started before job {parent} ended:\n{log}"
    );
    assert!(
        time(second_link, "start_time") >= time(first_link, "end_time"),
        "singleton job {second_link} started before job {first_link} ended:\n{log}"
    );
    assert_eq!(summary["jobs_completed"], 4, "{summary}");
}

/// `scripts/slurm-lab.sh` flags for the limit tests' lab: one node of two GPUs.
const ONE_NODE_OF_TWO_GPUS: [&str; 6] = ["--nodes", "1", "--racks", "1", "--gpus", "2"];

/// A job Slurm keeps pending for a QOS limit (its QOS may hold one GPU; lab with
/// accounting, one node of two GPUs) leaves the core and is held again, so the next job
/// runs on the GPU it was pinned to; it runs once the job holding the limit ended. (Before,
/// the core counted that GPU busy and the next job waited for the first to end.)
#[test]
fn slurm_lab_a_job_pending_for_a_qos_limit_gives_its_gpus_to_others() {
    let _slot = LABS.take();
    let flags = [&["--accounting"], &ONE_NODE_OF_TWO_GPUS[..]].concat();
    let Some(lab) = Lab::up_with("limit", &flags) else {
        return;
    };
    lab.run(
        "sacctmgr",
        &["-i", "add", "qos", "one", "GrpTRES=gres/gpu=1"],
    );
    lab.run(
        "sacctmgr",
        &[
            "-i",
            "modify",
            "user",
            "where",
            "name=root",
            "set",
            "qos+=one",
        ],
    );
    lab.held_back_for_a_limit(
        "limit",
        &["--qos=one"],
        "a limit of its QOS or account (QOSGrpGRES)",
    );
}

impl Lab {
    /// Three one-GPU jobs on a lab of one node of two GPUs: the first (6 s) and the second
    /// (1 s) with `limited` (flags that take a limit only one job at a time passes), the
    /// third without. gantry releases the first two; Slurm keeps the second pending for
    /// the limit (`for_what` in the log line), gantry holds it back, and the third runs on
    /// its GPU before the first ends; the second runs after the first.
    fn held_back_for_a_limit(&self, name: &str, limited: &[&str], for_what: &str) {
        let limited = [&["--time=1", "--gpus=1"], limited].concat();
        let first = self.submit_sleep(&limited, 6);
        let second = self.submit_sleep(&limited, 1);
        let other = self.submit_sleep(&["--time=1", "--gpus=1"], 1);
        let gantry = Gantry::start(self, name, "fifo", &["--exit-when-idle"]);
        let summary = gantry.finish(Duration::from_secs(90));
        let log = std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap();
        let text = format!(
            "job {second}: Slurm keeps it pending for {for_what}; gantry holds it again, gives its GPUs to others and submits it again once one of jobs {first} ends"
        );
        assert!(log.contains(&text), "{text}\n{log}");
        self.assert_completed(&[first, second, other]);
        let jobs = self.squeue();
        let time = |id: u64, field: &str| jobs[&id][field].as_u64().unwrap();
        assert!(
            time(other, "start_time") < time(first, "end_time"),
            "job {other} waited for job {first}'s end:\n{log}"
        );
        assert!(time(second, "start_time") >= time(first, "end_time"));
        assert_eq!(summary["jobs_completed"], 3, "{summary}");
        assert!(summary["limit_holds"].as_u64() >= Some(1), "{summary}");
    }
}

/// A job Slurm keeps pending for a license another job holds (one `sim` license; one node
/// of two GPUs) leaves the core and is held again, so the next job runs on the GPU it was
/// pinned to; it runs once the job holding the license ended. (On the build before, the
/// core counted that GPU busy and the next job waited for the first to end.)
#[test]
fn slurm_lab_a_job_pending_for_a_license_gives_its_gpus_to_others() {
    let _slot = LABS.take();
    let flags = [&ONE_NODE_OF_TWO_GPUS[..], &["--licenses", "sim:1"]].concat();
    let Some(lab) = Lab::up_with("license", &flags) else {
        return;
    };
    lab.held_back_for_a_limit("license", &["-L", "sim:1"], "licenses it asks for (sim:1)");
}

/// A job whose time limit passes the partition's `MaxTime` (Slurm's default
/// `EnforcePartLimits=NO` accepts it and keeps it pending, `PartitionTimeLimit`) is left to
/// Slurm and its GPU given back: on one node of two GPUs, the two jobs after it run side by
/// side. (On the build before, the core counted its GPU busy for good, and they ran one
/// after the other.)
#[test]
fn slurm_lab_a_job_past_the_partitions_time_limit_gives_its_gpus_back() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up_with("maxtime", &ONE_NODE_OF_TWO_GPUS) else {
        return;
    };
    lab.run("scontrol", &["update", "partitionname=gpu", "maxtime=1"]);
    let too_long = lab.submit_sleep(&["--time=5", "--gpus=1"], 1);
    let pair: Vec<u64> = (0..2)
        .map(|_| lab.submit_sleep(&["--time=1", "--gpus=1"], 4))
        .collect();
    let gantry = Gantry::start(&lab, "maxtime", "fifo", &["--exit-when-idle"]);
    for &id in &pair {
        lab.wait_job(id, Duration::from_secs(30), "completed", is_completed);
    }
    let jobs = lab.squeue();
    let time = |id: u64, field: &str| jobs[&id][field].as_u64().unwrap();
    let log = gantry.log_text();
    assert!(
        time(pair[1], "start_time") < time(pair[0], "end_time"),
        "job {} waited for job {}:\n{log}",
        pair[1],
        pair[0]
    );
    assert_eq!(jobs[&too_long]["state_reason"], "PartitionTimeLimit");
    let text = format!(
        "job {too_long}: Slurm keeps it pending for a limit it passes by itself (PartitionTimeLimit)"
    );
    assert!(log.contains(&text), "{text}\n{log}");
    lab.run("scancel", &[&too_long.to_string()]);
    let summary = gantry.finish(Duration::from_secs(30));
    assert_eq!(summary["jobs_completed"], 2, "{summary}");
}

/// An operator drains the node a job runs on: the job runs to its end (Slurm lets it), and
/// gantry starts nothing more there; the next job goes to a node that frees. (Before, the
/// drain took the node's GPUs from the core, which requeued the job: killed after a few
/// seconds and run again elsewhere.)
#[test]
fn slurm_lab_a_drained_node_lets_its_job_finish_and_gets_no_new_one() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("drain") else {
        return;
    };
    let long = lab.submit_sleep(&["--time=1", "--gpus=8", "--requeue"], 8);
    let short: Vec<u64> = (0..3)
        .map(|_| lab.submit_sleep(&["--time=1", "--gpus=8"], 3))
        .collect();
    let next = lab.submit_sleep(&["--time=1", "--gpus=8"], 1);
    let gantry = Gantry::start(&lab, "drain", "fifo", &["--exit-when-idle"]);
    let running = lab.wait_job(long, Duration::from_secs(30), "running", is_running);
    let node = running["nodes"].as_str().unwrap().to_string();
    lab.run(
        "scontrol",
        &[
            "update",
            &format!("nodename={node}"),
            "state=drain",
            "reason=maint-test",
        ],
    );
    let summary = gantry.finish(Duration::from_secs(90));
    let log = lab.gantry_log("drain");
    let closed = format!("node {node} is ALLOCATED+DRAIN (maint-test): closed to new jobs");
    assert!(log.contains(&closed), "{closed}\n{log}");
    let mut all = short.clone();
    all.extend([long, next]);
    lab.assert_completed(&all);
    let jobs = lab.squeue();
    assert_eq!(
        jobs[&long]["restart_cnt"], 0,
        "job {long} was requeued:\n{log}"
    );
    assert_ne!(
        jobs[&next]["nodes"].as_str(),
        Some(node.as_str()),
        "job {next} started on the drained node:\n{log}"
    );
    assert_eq!(summary["preemptions"], 0, "{summary}");
    assert_eq!(summary["jobs_completed"], 5, "{summary}");
}

/// An operator sets the partition DOWN (Slurm starts none of its jobs, lets the running
/// ones go on): gantry releases nothing while it is down, and the job submitted meanwhile
/// starts once it is up again. (Before, gantry released it and it sat pinned as
/// `PartitionDown` while the core counted it running.)
#[test]
fn slurm_lab_a_partition_set_down_gets_no_new_job_until_it_is_up() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("partdown") else {
        return;
    };
    let first = lab.submit_sleep(&["--time=1", "--gpus=8"], 6);
    let gantry = Gantry::start(&lab, "partdown", "fifo", &["--exit-when-idle"]);
    lab.wait_job(first, Duration::from_secs(30), "running", is_running);
    lab.run("scontrol", &["update", "partitionname=gpu", "state=down"]);
    let log_path = lab.dir.join("partdown.log");
    let closed = "partition gpu is set DOWN or INACTIVE: nodes n1,n2,n3,n4 are closed to new jobs";
    let started = Instant::now();
    while !std::fs::read_to_string(&log_path)
        .unwrap_or_default()
        .contains(closed)
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no closed note"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let second = lab.submit_sleep(&["--time=1", "--gpus=8"], 1);
    std::thread::sleep(Duration::from_secs(2));
    let held = &lab.squeue()[&second];
    assert_eq!(
        held["state_reason"], "JobHeldUser",
        "released while down: {held}"
    );
    lab.run("scontrol", &["update", "partitionname=gpu", "state=up"]);
    let summary = gantry.finish(Duration::from_secs(60));
    lab.assert_completed(&[first, second]);
    assert_eq!(summary["jobs_completed"], 2, "{summary}");
}

/// Advance reservations ahead (a maintenance window): Slurm starts no job whose time limit
/// runs into one on its nodes. With one ahead on three nodes, the two 10-minute jobs run on
/// the fourth, one after the other, and the nodes the core placed them on first close to new
/// jobs; with one ahead on every node, a job that would run into it waits out of the core,
/// held, while a shorter one runs, and starts once the reservation is deleted. (On the
/// build before, the first job was released onto a reserved node, where it sat pending,
/// `ReqNodeNotAvail`, while the core counted it running, and every later start pinned
/// there waited behind it.)
#[test]
fn slurm_lab_a_reservation_ahead_gets_no_job_that_would_run_into_it() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("resv") else {
        return;
    };
    let reserve = |name: &str, nodes: &str| {
        let name = format!("reservationname={name}");
        let nodes = format!("nodes={nodes}");
        let args = [
            "create",
            "reservation",
            &name,
            "starttime=now+300",
            "duration=10",
        ];
        let rest = ["users=root", "flags=maint,ignore_jobs", &nodes];
        lab.run("scontrol", &[&args[..], &rest[..]].concat());
    };
    reserve("ahead", "n[1-3]");
    let long: Vec<u64> = (0..2)
        .map(|_| lab.submit_sleep(&["--time=10", "--gpus=8"], 2))
        .collect();
    let short = lab.submit_sleep(&["--time=1", "--gpus=1"], 1);
    let guard = lab.keep_gantry_running();
    let gantry = Gantry::start(&lab, "resv", "fifo", &["--exit-when-idle"]);
    let log_path = lab.dir.join("resv.log");
    for &id in &long {
        let job = lab.wait_job(id, Duration::from_secs(30), "completed", is_completed);
        assert_eq!(job["nodes"], "n4", "job {id}:\n{}", gantry.log_text());
    }
    lab.wait_job(short, Duration::from_secs(30), "completed", is_completed);
    lab.run("scontrol", &["delete", "reservationname=ahead"]);
    reserve("whole", "ALL");
    let waits = lab.submit_sleep(&["--time=10", "--gpus=1"], 1);
    let fits = lab.submit_sleep(&["--time=1", "--gpus=1"], 1);
    lab.wait_job(fits, Duration::from_secs(30), "completed", is_completed);
    let held = &lab.squeue()[&waits];
    assert_eq!(held["state_reason"], "JobHeldUser", "released: {held}");
    lab.run("scontrol", &["delete", "reservationname=whole"]);
    lab.let_gantry_end(guard);
    let summary = gantry.finish(Duration::from_secs(60));
    let log = std::fs::read_to_string(&log_path).unwrap();
    let closed = "is closed to new jobs until advance reservation ahead";
    assert!(log.contains(closed), "{closed}\n{log}");
    // Kept out of the core, or, when gantry read the reservation after it released the job
    // (reservations are read every 10 s), held again.
    let kept = format!("job {waits}: waits for advance reservation whole");
    let held_again =
        format!("job {waits}: its time limit (10 min) runs into advance reservation whole");
    assert!(
        log.contains(&kept) || log.contains(&held_again),
        "{kept}\n{log}"
    );
    let mut all = long.clone();
    all.extend([short, waits, fits]);
    lab.assert_completed(&all);
    assert_eq!(summary["jobs_completed"], 5, "{summary}");
}

/// A node count gantry cannot keep (`--gres=gpu:3 --nodes=2`: 6 GPUs its placement could
/// put on one node) is left to Slurm, which runs the job on 2 nodes as asked, while gantry
/// schedules the others. (On the build before, gantry cancelled it with the reason.)
#[test]
fn slurm_lab_a_node_count_gantry_cannot_keep_is_left_to_slurm_and_kept() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("nodecount") else {
        return;
    };
    let two_nodes = lab.submit_sleep(&["--time=1", "--gres=gpu:3", "--nodes=2"], 2);
    let other = lab.submit_sleep(&["--time=1", "--gpus=4"], 2);
    let gantry = Gantry::start(&lab, "nodecount", "fifo", &["--exit-when-idle"]);
    let summary = gantry.finish(Duration::from_secs(60));
    assert_logged(
        &lab.gantry_log("nodecount"),
        &format!(
            "job {two_nodes}: asks for exactly 2 nodes (-N 2), but gantry places its 6 GPUs on the nodes it chooses (1 to 4 of them) and cannot keep a node count; gantry leaves it to Slurm's own scheduler"
        ),
    );
    lab.assert_completed(&[two_nodes, other]);
    let job = &lab.squeue()[&two_nodes];
    let nodes = expand(job["nodes"].as_str().unwrap_or_default());
    assert_eq!(nodes.len(), 2, "{job}");
    assert_eq!(summary["jobs_rejected"], 0, "{summary}");
    assert_eq!(summary["jobs_completed"], 1, "{summary}");
    assert_eq!(summary["jobs_left_to_slurm"], 1, "{summary}");
}

/// A per-node request (`--gres=gpu:4`: 4 GPUs on one node) and a per-job one on one node
/// (`--gpus=4 -N 1`, which `squeue`'s compact listing shows as if it set no `-N`) that
/// gantry's placement would split over nodes (3 free on each) are left to Slurm, which runs
/// each on one node once a node has 4 free; a per-job request (`--gpus=4`) in the same place
/// runs split, as Slurm may run it too. (Before, the per-node one ran on two nodes, its
/// script seeing 3 GPUs; then the `-N 1` one did, gantry setting `NumNodes=2-2`.)
#[test]
fn slurm_lab_a_per_node_request_gantry_would_split_is_left_to_slurm_on_one_node() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("onenode") else {
        return;
    };
    let fillers: Vec<u64> = (0..4)
        .map(|_| lab.submit_sleep(&["--time=1", "--gres=gpu:5"], 5))
        .collect();
    let per_node = lab.submit_sleep(&["--time=1", "--gres=gpu:4"], 1);
    let one_node = lab.submit_sleep(&["--time=1", "--gpus=4", "-N", "1"], 1);
    let per_job = lab.submit_sleep(&["--time=1", "--gpus=4"], 1);
    let gantry = Gantry::start(&lab, "onenode", "fifo", &["--exit-when-idle"]);
    let summary = gantry.finish(Duration::from_secs(90));
    let log = lab.gantry_log("onenode");
    assert_logged(
        &log,
        &format!(
            "job {per_node}: asks for 4 GPUs on one node (per node: --gres or --gpus-per-node), and gantry's placement would split them"
        ),
    );
    assert_logged(
        &log,
        &format!(
            "job {one_node}: asks for 4 GPUs on one node (-N 1), and gantry's placement would split them"
        ),
    );
    assert_logged(
        &log,
        "where Slurm placed it, left to Slurm to keep it on one node",
    );
    let mut all = fillers.clone();
    all.extend([per_node, one_node, per_job]);
    lab.assert_completed(&all);
    let jobs = lab.squeue();
    let nodes = |id: u64| expand(jobs[&id]["nodes"].as_str().unwrap_or_default());
    assert_eq!(nodes(per_node).len(), 1, "{}", jobs[&per_node]);
    assert_eq!(nodes(one_node).len(), 1, "{}", jobs[&one_node]);
    assert_eq!(nodes(per_job).len(), 2, "{}", jobs[&per_job]);
    assert_eq!(summary["jobs_completed"], 5, "{summary}");
    assert_eq!(summary["jobs_left_to_slurm"], 2, "{summary}");
}

/// The workload asked per node (`--gres=gpu:1/2/4/8`), on `sched/backfill`: every job
/// completes, every job of 2 or more GPUs on one node (those the core would have split are
/// left to Slurm, counted in the summary), and the journal replays.
#[test]
fn slurm_lab_per_node_requests_run_on_one_node_or_are_left_to_slurm() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up_with("pernode", &["--sched", "backfill"]) else {
        return;
    };
    let (jobs, bad) = submit_workload(&lab, Ask::PerNode);
    let gantry = Gantry::start(&lab, "pernode", "tias", &["--exit-when-idle"]);
    let record = gantry.record.clone();
    let summary = gantry.finish(Duration::from_secs(180));
    let ids: Vec<u64> = jobs.iter().map(|j| j.id).collect();
    lab.assert_completed(&ids);
    let listed = lab.squeue();
    // On failure, what gantry said and decided about the job.
    let log = lab.gantry_log("pernode");
    let dump = lab
        .cmd(gantry_bin())
        .arg("replay")
        .arg(&record)
        .arg("--dump")
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&dump.stdout);
    for job in &jobs {
        let nodes = expand(listed[&job.id]["nodes"].as_str().unwrap_or_default());
        let said: Vec<&str> = log
            .lines()
            .chain(dump.lines())
            .filter(|l| {
                l.contains(&format!("job {}:", job.id)) || l.contains(&format!("job {} ", job.id))
            })
            .collect();
        assert_eq!(
            nodes.len(),
            1,
            "job {} ({} GPUs) ran on {nodes:?}: {}\n{said:#?}",
            job.id,
            job.gpus,
            listed[&job.id]
        );
    }
    let left = summary["jobs_left_to_slurm"].as_u64().unwrap_or(0);
    println!(
        "per-node workload: {left} of {} jobs left to Slurm",
        jobs.len()
    );
    assert_eq!(
        summary["jobs_completed"].as_u64().unwrap_or(0) + left,
        jobs.len() as u64,
        "{summary}"
    );
    assert_eq!(summary["jobs_rejected"], bad.len(), "{summary}");
    lab.assert_replays(&record);
}

/// A heterogeneous job (Slurm starts its components only together, and accepts such jobs
/// only under sched/backfill) is left to Slurm: both components complete. Before, gantry
/// placed each component as a job of its own, its update failed ("Job resizing not
/// supported for job arrays") five times, and gantry cancelled the job.
#[test]
fn slurm_lab_a_heterogeneous_job_is_left_to_slurm_and_completes() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up_with("het", &["--sched", "backfill"]) else {
        return;
    };
    let het = lab.submit_sleep(
        &["--time=1", "--gres=gpu:2", ":", "--time=1", "--gres=gpu:1"],
        2,
    );
    let gantry = Gantry::start(&lab, "het", "fifo", &["--exit-when-idle"]);
    let summary = gantry.finish(Duration::from_secs(60));
    let log = lab.gantry_log("het");
    assert!(
        log.contains(&format!("part of heterogeneous job {het}; gantry leaves")),
        "{log}"
    );
    lab.assert_completed(&[het, het + 1]);
    assert_eq!(summary["jobs_rejected"], 0, "{summary}");
}

/// A user's `scancel` of a running job is logged and nothing else is disturbed.
#[test]
fn slurm_lab_user_cancel_is_logged() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("cancel") else {
        return;
    };
    let victim = lab.submit_sleep(&["--time=1", "--gpus=2"], 30);
    let other = lab.submit_sleep(&["--time=1", "--gpus=2"], 2);
    let gantry = Gantry::start(&lab, "cancel", "fifo", &["--exit-when-idle"]);
    lab.wait_job(victim, Duration::from_secs(30), "running", is_running);
    lab.run("scancel", &[&victim.to_string()]);
    let summary = gantry.finish(Duration::from_secs(60));
    let log = lab.gantry_log("cancel");
    assert!(
        log.contains(&format!(
            "job {victim}: cancelled in Slurm (scancel by its user or an operator)"
        )),
        "{log}"
    );
    assert_eq!(lab.squeue()[&other]["job_state"], "COMPLETED");
    assert_eq!(summary["jobs_completed"], 1, "{summary}");
    assert_eq!(summary["jobs_ended_otherwise"], 1, "{summary}");
}

/// A requeued job restarts on the node it ran on without Slurm's requeue wait
/// (`cred_expire` + 1 s: 121 s on this lab, as on a stock Slurm): gantry skips it once the
/// requeue is `REVOKED_CREDENTIAL_MARGIN_MS` (2 s) old, and the node's slurmd takes the new
/// credential. Two requeues, both an operator's: a plain `scontrol requeue`, which leaves
/// the job pending where gantry put it (gantry lifts the wait, the core never saw the run
/// end), and `requeuehold` then `release`, after which gantry schedules the job again on the
/// empty partition, where best-fit puts it back on its node.
#[test]
fn slurm_lab_a_requeued_job_restarts_on_its_old_node_without_slurms_requeue_wait() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up_with("requeue-wait", &["--cred-expire", "120"]) else {
        return;
    };
    let plain = lab.submit_sleep(&["--time=2", "--gpus=1"], 5);
    let job = lab.submit_sleep(&["--time=2", "--gpus=1"], 10);
    let gantry = Gantry::start(&lab, "requeue-wait", "fifo", &["--exit-when-idle"]);
    // Running again on the node it ran on (`ran`), within 30 s of its requeue.
    let restarted_there = |id: u64, ran: &Value, requeued_at: Instant, how: &str| {
        let again = lab.wait_job(id, Duration::from_secs(100), "running again", |j| {
            is_running(j) && j["restart_cnt"] == 1
        });
        let waited = requeued_at.elapsed();
        assert!(
            waited < Duration::from_secs(30),
            "restarted {waited:?} after {how} (Slurm's own wait is 121 s):\n{}",
            gantry.log_text()
        );
        assert_eq!(
            again["nodes"],
            ran["nodes"],
            "not restarted on its old node: the test shows nothing\n{}",
            gantry.log_text()
        );
    };
    let ran = lab.wait_job(plain, Duration::from_secs(30), "running", is_running);
    lab.run("scontrol", &["requeue", &plain.to_string()]);
    restarted_there(plain, &ran, Instant::now(), "an operator's requeue");
    assert!(
        gantry.log_text().contains(&format!("lift job {plain}")),
        "{}",
        gantry.log_text()
    );
    let ran = lab.wait_job(job, Duration::from_secs(30), "running", is_running);
    lab.run("scontrol", &["requeuehold", &job.to_string()]);
    let requeued_at = Instant::now();
    let held = |j: &Value| j["job_state"] == "PENDING" && j["priority"] == 0;
    lab.wait_job(job, Duration::from_secs(30), "held", held);
    // Released only once gantry saw the hold, so the core let the job go and schedules it
    // again (released before gantry's next poll, it would be pending where gantry put it,
    // the plain requeue's case above).
    let seen_held = Instant::now();
    while !gantry
        .log_text()
        .contains(&format!("job {job}: held by an operator"))
    {
        assert!(
            seen_held.elapsed() < Duration::from_secs(30),
            "gantry did not see the hold:\n{}",
            gantry.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    lab.run("scontrol", &["release", &job.to_string()]);
    restarted_there(job, &ran, requeued_at, "its requeuehold");
    let summary = gantry.finish(Duration::from_secs(60));
    lab.assert_completed(&[plain, job]);
    assert_eq!(summary["jobs_completed"], 2, "{summary}");
}

/// A journal compacted as gantry runs (`--journal-compact-kib 1`: a checkpoint after every
/// cycle once the journal passes 1 KiB), gantry killed with SIGKILL after a compaction and
/// started again on it: the second run restores the checkpoint and replays only what
/// followed it, every job completes once, and `gantry replay` checks the journal from its
/// checkpoint.
#[test]
fn slurm_lab_a_compacted_journal_resumes_after_kill_9() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("compact") else {
        return;
    };
    const JOBS: u64 = 48;
    for i in 0..JOBS {
        lab.submit_sleep(&["--time=1", "--gpus=1"], 1 + i % 3);
    }
    let record = lab.dir.join("compact.journal");
    let compact = ["--journal-compact-kib", "1"];
    let first = Gantry::start_on(&lab, "compact-1", "las", &record, &compact);
    let started = Instant::now();
    while !first.log_text().contains("journal compacted") {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no compaction:\n{}",
            first.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Jobs start and end after the checkpoint; then SIGKILL, by its PID.
    std::thread::sleep(Duration::from_millis(2_500));
    drop(first);
    let mut extra = compact.to_vec();
    extra.push("--exit-when-idle");
    let second = Gantry::start_on(&lab, "compact-2", "las", &record, &extra);
    let summary = second.finish(Duration::from_secs(120));
    let log = lab.gantry_log("compact-2");
    let resumed = log
        .lines()
        .find_map(|l| l.split_once("resumed: restored the checkpoint of "))
        .map(|(_, rest)| rest.to_string())
        .unwrap_or_else(|| panic!("no checkpoint restored:\n{log}"));
    // "N entries, replayed M journal entries (…)": entries after the checkpoint, too.
    let replayed: u64 = resumed
        .split(", replayed ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(replayed > 0, "{resumed}");
    assert_eq!(summary["jobs_completed"], JOBS, "{summary}");
    assert_eq!(summary["restarts_seen"], 0, "{summary}");
    assert_eq!(summary["starts"], JOBS, "{summary}");
    assert!(
        summary["journal_entries_checkpointed"].as_u64() > Some(0),
        "{summary}"
    );
    let text = lab.assert_replays(&record);
    assert!(text.contains("compacted"), "{text}");
}

/// With the acknowledging epilog (`scripts/gantry-epilog.sh` on every node,
/// `--epilog-ack-dir`): 40 one-GPU jobs of 1 s on 32 GPUs, so 8 are started onto nodes whose
/// job is still COMPLETING. Every job completes once, no job is taken for a stranger's while
/// its epilog runs, the epilogs' doorbells make gantry poll before its period is over, and
/// the acknowledgements and doorbells are gone at the end.
#[test]
fn slurm_lab_epilog_ack_starts_successors_and_cleans_up() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up_with("ack", &["--epilog-ack", "{dir}/ack"]) else {
        return;
    };
    let ids: Vec<u64> = (0..40)
        .map(|_| lab.submit_sleep(&["--time=1", "--gpus=1"], 1))
        .collect();
    let ack = lab.dir.join("ack");
    let ack_flag = ack.to_str().unwrap();
    let gantry = Gantry::start(
        &lab,
        "ack",
        "fifo",
        &["--exit-when-idle", "--epilog-ack-dir", ack_flag],
    );
    let summary = gantry.finish(Duration::from_secs(90));
    let log = lab.gantry_log("ack");
    assert!(!log.contains("not started by gantry"), "{log}");
    assert!(!log.contains("epilog ack"), "{log}");
    assert_eq!(summary["jobs_completed"], 40, "{summary}");
    assert_eq!(summary["restarts_seen"], 0, "{summary}");
    assert!(summary["polls_on_doorbell"].as_u64() > Some(0), "{summary}");
    lab.assert_completed_and_folder_empty(&ids, &ack);
}

/// With the job_submit plugin `scripts/gantry-job-submit.lua` (`--submit-doorbell`, no
/// epilog): jobs submitted while gantry waits for its next poll ring its doorbell, and gantry
/// polls at once; a job submitted without `--hold` is held by the plugin, not by gantry;
/// every job runs once and the doorbells are gone at the end.
#[test]
fn slurm_lab_a_submission_rings_the_doorbell() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up_with("bell", &["--submit-doorbell", "{dir}/ack"]) else {
        return;
    };
    let ack = lab.dir.join("ack");
    let first = lab.submit_sleep(&["--time=1", "--gpus=1"], 4);
    let gantry = Gantry::start(
        &lab,
        "bell",
        "fifo",
        &[
            "--exit-when-idle",
            "--epilog-ack-dir",
            ack.to_str().unwrap(),
        ],
    );
    lab.wait_job(first, Duration::from_secs(20), "running", is_running);
    // Five submissions 300 ms apart: a poll takes a few ms of each 200 ms period, so most
    // of them land while gantry waits.
    // The last one without `--hold`: the plugin holds it.
    let mut ids = vec![first];
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(300));
        ids.push(lab.submit_sleep(&["--time=1", "--gpus=1"], 1));
    }
    std::thread::sleep(Duration::from_millis(300));
    let script = lab.dir.join("sleep.sh").display().to_string();
    ids.push(lab.sbatch(&[
        "-o".into(),
        "/dev/null".into(),
        "--time=1".into(),
        "--gpus=1".into(),
        script,
        "1".into(),
    ]));
    let summary = gantry.finish(Duration::from_secs(60));
    assert!(summary["polls_on_doorbell"].as_u64() > Some(0), "{summary}");
    let log = lab.gantry_log("bell");
    assert!(!log.contains("pending but not held"), "{log}");
    assert_eq!(summary["jobs_completed"], 6, "{summary}");
    lab.assert_completed_and_folder_empty(&ids, &ack);
}

/// With slurmctld down, gantry says the controller is unreachable (Slurm's own JSON only
/// says "Unspecified error").
#[test]
fn slurm_lab_controller_down_is_reported_unreachable() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("ctld-down") else {
        return;
    };
    let pid: i32 = std::fs::read_to_string(lab.dir.join("run/slurmctld.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Stops exactly the lab's controller, by its PID.
    assert!(
        Command::new("kill")
            .arg(pid.to_string())
            .status()
            .unwrap()
            .success()
    );
    let started = Instant::now();
    while alive(pid as u32) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "slurmctld did not stop"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = lab
        .cmd(gantry_bin())
        .args(["slurm", "--dry-run", "--partition", "gpu"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("Slurm controller unreachable"), "{err}");
}

/// A job script for the preemption tests: it writes `ID.trap.RUN` once its signal handler
/// is set (a signal before that is lost, as with Slurm's own preemption); its first run
/// sleeps `$1` s; on the signal it
/// writes `ID.term.RUN` and, after 3 s of "checkpointing", `ID.saved.RUN`, each holding
/// the job's state as Slurm shows it then, and exits 0; a rerun ends at once (`ID.done.RUN`).
const CHECKPOINT_SCRIPT: &str = r#"#!/bin/sh
run="${SLURM_RESTART_COUNT:-0}"
d="$GANTRY_LAB_JOBS"
state() { squeue -h -j "$SLURM_JOB_ID" -o %T; }
trap 'state > "$d/$SLURM_JOB_ID.term.$run"; sleep 3; state > "$d/$SLURM_JOB_ID.saved.$run"; exit 0' TERM
echo ok > "$d/$SLURM_JOB_ID.trap.$run"
if [ "$run" = 0 ]; then sleep "$1" & wait $!; fi
echo ok > "$d/$SLURM_JOB_ID.done.$run"
"#;

impl Lab {
    /// Submits a held `CHECKPOINT_SCRIPT` job with `flags`; returns its id.
    fn submit_checkpointing(&self, flags: &[&str], sleep_s: u64) -> u64 {
        let script = self.dir.join("ckpt.sh");
        if !script.exists() {
            std::fs::write(&script, CHECKPOINT_SCRIPT).unwrap();
        }
        let mut args: Vec<String> = ["--hold", "-o", "/dev/null"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(format!(
            "--export=ALL,GANTRY_LAB_JOBS={}",
            self.jobs_dir().display()
        ));
        args.extend(flags.iter().map(|s| s.to_string()));
        args.push(script.display().to_string());
        args.push(sleep_s.to_string());
        self.sbatch(&args)
    }

    /// Waits until the job wrote `jobs/ID.KIND.RUN` (at most `limit`).
    fn wait_file(&self, id: u64, kind: &str, run: u32, limit: Duration) {
        let started = Instant::now();
        while self.job_file(id, kind, run).is_none() {
            assert!(
                started.elapsed() < limit,
                "job {id}: no {kind}.{run} within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The first line of `jobs/ID.KIND.RUN`, if the job wrote it.
    fn job_file(&self, id: u64, kind: &str, run: u32) -> Option<String> {
        std::fs::read_to_string(self.jobs_dir().join(format!("{id}.{kind}.{run}")))
            .ok()
            .map(|t| t.trim().to_string())
    }
}

/// Preemption on the lab, with EDF (a deadline job outranks one without): a requeueable
/// job without the checkpoint marker is never preempted (the deadline job waits until it
/// completes); one with `--comment gantry:checkpoint` is, and gets SIGTERM first: it saves
/// its checkpoint while still RUNNING (a requeue without a grace period kills it after
/// `KillWait`, 2 s on the lab, and shows it requeued meanwhile), is requeued once it
/// exited, and completes on its second run.
#[test]
fn slurm_lab_only_marked_jobs_are_preempted_and_get_the_signal_before_the_requeue() {
    let _slot = LABS.take();
    let Some(lab) = Lab::up("preempt") else {
        return;
    };
    let guard = lab.keep_gantry_running();
    let gantry = Gantry::start(
        &lab,
        "preempt",
        "edf",
        &["--exit-when-idle", "--preempt-grace-s", "8"],
    );
    let all = ["--time=1", "--gpus=32", "--requeue"];
    let plain = lab.submit_checkpointing(&all, 10);
    lab.wait_job(plain, Duration::from_secs(30), "running", is_running);
    let urgent = ["--time=1", "--gpus=8", "--deadline=now+300"];
    let first = lab.submit_sleep(&urgent, 1);
    let plain_job = lab.wait_job(plain, Duration::from_secs(60), "completed", is_completed);
    assert_eq!(plain_job["restart_cnt"], 0, "{plain_job}");
    assert_eq!(
        lab.job_file(plain, "term", 0),
        None,
        "job {plain} was signalled"
    );
    let marked_flags = [&all[..], &["--comment=gantry:checkpoint"]].concat();
    let marked = lab.submit_checkpointing(&marked_flags, 60);
    lab.wait_file(marked, "trap", 0, Duration::from_secs(30));
    let second = lab.submit_sleep(&urgent, 1);
    lab.let_gantry_end(guard);
    let summary = gantry.finish(Duration::from_secs(120));
    let jobs = lab.squeue();
    let first_job = &jobs[&first];
    assert!(
        first_job["start_time"].as_u64() >= plain_job["end_time"].as_u64(),
        "the deadline job {first} started before the unmarked job {plain} ended: {first_job}"
    );
    for id in [first, second, marked] {
        assert_eq!(
            jobs[&id]["job_state"], "COMPLETED",
            "job {id}: {}",
            jobs[&id]
        );
    }
    assert!(
        jobs[&marked]["restart_cnt"].as_u64() >= Some(1),
        "{}",
        jobs[&marked]
    );
    assert_eq!(lab.job_file(marked, "term", 0).as_deref(), Some("RUNNING"));
    assert_eq!(
        lab.job_file(marked, "saved", 0).as_deref(),
        Some("RUNNING"),
        "the checkpoint was not saved before the requeue"
    );
    assert!(lab.job_file(marked, "done", 1).is_some());
    let log = lab.gantry_log("preempt");
    assert!(
        log.contains(&format!("job {marked}: preempted: sent SIGTERM")),
        "{log}"
    );
    assert!(
        log.contains(&format!("job {marked}: ended by itself")),
        "{log}"
    );
    // While it waits to run again, Slurm shows the requeued job's hold with the reason
    // `BeginTime`: gantry turns its requeuehold into a user hold once, not at every poll.
    let holds = log
        .lines()
        .filter(|l| l.contains(&format!("] hold job {marked} ")))
        .count();
    assert!(holds <= 1, "job {marked} held {holds} times:\n{log}");
    assert_eq!(summary["jobs_completed"], 4, "{summary}");
}
