//! Tests of the reconciler on Slurm JSON (fixtures captured from the lab, and jobs built
//! field by field): no Slurm needed.

use super::*;
use crate::slurm::action::JobNames;
use crate::slurm::json::{parse_sinfo, parse_squeue};
use crate::slurm::layout::ClusterLayout;

const SINFO_MIXED: &str = include_str!("fixtures/sinfo-idle-mixed.json");
const SINFO_DOWN: &str = include_str!("fixtures/sinfo-down-drain.json");
const SQUEUE_RUNNING: &str = include_str!("fixtures/squeue-running.json");

/// Runs `f` on a thread with room for the core (built inline before it is boxed).
fn big_stack(f: impl FnOnce() + Send) {
    crate::dag::on_big_stack(f)
}

fn nodes(usable: [bool; 4]) -> Vec<SlurmNode> {
    (1..=4)
        .map(|i| SlurmNode {
            name: format!("n{i}"),
            states: if usable[i - 1] {
                vec!["IDLE".into()]
            } else {
                vec!["DOWN".into()]
            },
            gres: "gpu:8".into(),
            gres_used: "gpu:0".into(),
            partitions: vec!["gpu".into()],
            reason: if usable[i - 1] {
                String::new()
            } else {
                "test".into()
            },
            closed_partitions: Vec::new(),
        })
        .collect()
}

/// A controller that requeues preempted jobs at once (no grace period: the tests of the
/// grace period set one).
fn controller(order: OrderKind) -> Controller {
    let config = ControllerConfig {
        preempt_grace_ms: 0,
        ..ControllerConfig::default()
    };
    controller_with(order, config)
}

/// A best-fit controller of the four 8-GPU nodes of [`nodes`], all up, under `config`.
fn controller_with(order: OrderKind, config: ControllerConfig) -> Controller {
    let layout = ClusterLayout::discover("gpu", &nodes([true; 4]), "").unwrap();
    Controller::new(layout, order, PlacerKind::BestFit, 0, config).unwrap()
}

/// A held job asking `per_node` GPUs per node (`--gres`), submitted at `1000 + id` s.
fn held(id: u32, per_node: &str) -> SlurmJob {
    crate::slurm::json::held_job(id, per_node)
}

/// Job array `id`'s record, held, its pending tasks `tasks` (`0-2`, `0-3%2`).
fn held_array(id: u32, tasks: &str, per_node: &str) -> SlurmJob {
    SlurmJob {
        array_job: Some(id),
        array_tasks: tasks.into(),
        ..held(id, per_node)
    }
}

/// Task `task` of `array`, split off as job `id` (the record itself when `id` is the
/// array's).
fn array_task(array: &SlurmJob, id: u32, task: u32) -> SlurmJob {
    SlurmJob {
        id,
        array_tasks: task.to_string(),
        ..array.clone()
    }
}

/// The job as Slurm shows it once gantry's start was carried out (released, pinned).
fn released(job: &SlurmJob, pinned: &[&str]) -> SlurmJob {
    SlurmJob {
        held: false,
        reason: "None".into(),
        required_nodes: pinned.iter().map(|s| s.to_string()).collect(),
        ..job.clone()
    }
}

fn running(job: &SlurmJob, on: &[&str]) -> SlurmJob {
    SlurmJob {
        state: JobStateName::Running,
        nodes: on.iter().map(|s| s.to_string()).collect(),
        ..released(job, on)
    }
}

fn ended(job: &SlurmJob, state: JobStateName) -> SlurmJob {
    SlurmJob {
        state,
        end_s: job.submit_s + 10,
        ..job.clone()
    }
}

fn snapshot(jobs: &[SlurmJob], usable: [bool; 4]) -> Snapshot {
    Snapshot {
        jobs: jobs.to_vec(),
        nodes: nodes(usable),
        ..Snapshot::default()
    }
}

fn starts(cycle: &Cycle) -> Vec<(u32, String)> {
    cycle
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Start(p) => Some((p.job, shape_text(&p.shape))),
            _ => None,
        })
        .collect()
}

fn kinds(cycle: &Cycle) -> Vec<(u32, &'static str)> {
    cycle.actions.iter().map(|a| (a.job(), a.kind())).collect()
}

/// A FIFO controller whose first cycle (at `T0`) released `job` (job 1, held), the release
/// carried out; with that cycle.
fn fifo_released(job: &SlurmJob) -> (Controller, Cycle) {
    let mut c = controller(OrderKind::Fifo);
    let cycle = c.observe(&snapshot(std::slice::from_ref(job), [true; 4]), T0);
    c.action_done(&cycle.actions[0], T0, Ok(()));
    (c, cycle)
}

/// Where the start of `job` pinned it, as node names.
fn pinned_nodes(cycle: &Cycle, job: u32) -> Vec<String> {
    cycle
        .actions
        .iter()
        .find_map(|a| match a {
            Action::Start(p) if p.job == job => {
                Some(p.shape.iter().map(|(n, _)| n.clone()).collect())
            }
            _ => None,
        })
        .unwrap()
}

const T0: u64 = 1_800_000_000_000;

#[test]
fn held_jobs_are_submitted_in_order_started_and_not_started_twice() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs = [
            held(1, "gres:gpu:4"),
            held(2, "gres:gpu:8"),
            held(3, "gres:gpu:2"),
        ];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        let submits = cycle
            .entries
            .iter()
            .filter(|e| matches!(e.event, Event::Submit(_)))
            .count();
        assert_eq!(submits, 3);
        // Best fit packs: 4 and 2 on one node, 8 on another; started in decision order.
        assert_eq!(
            starts(&cycle),
            [(1, "n1:4".into()), (2, "n2:8".into()), (3, "n1:2".into())]
        );
        // Carried out: Slurm shows them released and pinned, then running. Nothing more.
        let after = [
            released(&jobs[0], &["n1"]),
            running(&jobs[1], &["n2"]),
            released(&jobs[2], &["n1"]),
        ];
        let again = c.observe(&snapshot(&after, [true; 4]), T0 + 500);
        assert!(again.actions.is_empty(), "{:?}", again.actions);
        assert!(again.entries.is_empty(), "{:?}", again.entries);
    });
}

/// Job 2's end reached the core as a completion, and job 5 (8 GPUs) starts on its `node`.
fn job_2_completed_and_job_5_took_its_node(cycle: &Cycle, node: &str) {
    assert!(
        cycle
            .entries
            .iter()
            .any(|e| e.event == Event::Finish(JobId(2)))
    );
    assert_eq!(cycle.outcomes.len(), 1);
    assert_eq!(cycle.outcomes[0].state, "COMPLETED");
    assert_eq!(starts(cycle), [(5, shape_text(&[(node.to_string(), 8)]))]);
}

#[test]
fn a_finished_job_frees_its_gpus_for_the_next() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let big = [
            held(1, "gres:gpu:8"),
            held(2, "gres:gpu:8"),
            held(3, "gres:gpu:8"),
            held(4, "gres:gpu:8"),
        ];
        let wide = held(5, "gres:gpu:8");
        let mut jobs = big.to_vec();
        jobs.push(wide.clone());
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        assert_eq!(starts(&cycle).len(), 4);
        let on: Vec<Vec<String>> = (1..=4).map(|j| pinned_nodes(&cycle, j)).collect();
        let mut now: Vec<SlurmJob> = big
            .iter()
            .zip(&on)
            .map(|(j, n)| running(j, &n.iter().map(String::as_str).collect::<Vec<_>>()))
            .collect();
        now.push(wide.clone());
        now[1] = ended(&now[1], JobStateName::Completed);
        let cycle = c.observe(&snapshot(&now, [true; 4]), T0 + 10_000);
        job_2_completed_and_job_5_took_its_node(&cycle, &on[1][0]);
    });
}

/// Four 8-GPU jobs running on the four nodes and a fifth waiting, under `config`; returns
/// the controller, the jobs as Slurm shows them, and the node each runs on.
fn four_running_one_waiting(config: ControllerConfig) -> (Controller, Vec<SlurmJob>, Vec<String>) {
    let mut c = controller_with(OrderKind::Fifo, config);
    let mut jobs: Vec<SlurmJob> = (1..=5).map(|id| held(id, "gres:gpu:8")).collect();
    let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
    let on: Vec<String> = (1..=4)
        .map(|j| pinned_nodes(&cycle, j)[0].clone())
        .collect();
    for (job, node) in jobs.iter_mut().zip(&on) {
        *job = running(job, &[node.as_str()]);
    }
    let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 1_000);
    assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
    (c, jobs, on)
}

/// Job 2 as Slurm shows it while its epilog runs: COMPLETING (its node too), its GPUs
/// already free in Slurm's count, its script's exit status known.
fn completing(jobs: &mut [SlurmJob], exit_status: u32, node: &str) -> Snapshot {
    jobs[1] = SlurmJob {
        exit_status: Some(exit_status),
        ..ended(&jobs[1], JobStateName::Completing)
    };
    let mut seen = snapshot(jobs, [true; 4]);
    let n = seen.nodes.iter_mut().find(|n| n.name == node).unwrap();
    n.states.push("COMPLETING".into());
    seen
}

/// A controller configuration with epilog acknowledgements on (`--epilog-ack-dir`) and
/// preempted jobs requeued at once.
fn with_epilog_acks() -> ControllerConfig {
    ControllerConfig {
        preempt_grace_ms: 0,
        finish_at_completing: true,
        ..ControllerConfig::default()
    }
}

#[test]
fn with_epilog_acks_a_job_that_exited_0_ends_while_completing() {
    big_stack(|| {
        let (mut c, mut jobs, on) = four_running_one_waiting(with_epilog_acks());
        let seen = completing(&mut jobs, 0, &on[1]);
        let cycle = c.observe(&seen, T0 + 10_000);
        // Its successor is released onto the completing node in the same cycle.
        job_2_completed_and_job_5_took_its_node(&cycle, &on[1]);
        // Still completing at the next poll: neither ended again nor taken for a stranger's.
        let cycle = c.observe(&seen, T0 + 10_200);
        assert!(
            cycle
                .entries
                .iter()
                .all(|e| e.event != Event::Finish(JobId(2)))
        );
        assert!(cycle.outcomes.is_empty());
        assert!(
            cycle.notes.iter().all(|n| !n.contains("job 2")),
            "{:?}",
            cycle.notes
        );
    });
}

/// Job 1 (8 GPUs) started by `c` at T0 and seen running on its node at T0 + 1 s with every
/// node down (nowhere to restart, so the core queues it): gantry requeue-holds it. Returns
/// the node and the job as Slurm showed it running.
fn requeue_held_with_every_node_down(c: &mut Controller) -> (String, [SlurmJob; 1]) {
    let jobs = [held(1, "gres:gpu:8")];
    let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
    let node = pinned_nodes(&cycle, 1)[0].clone();
    let still_running = [running(&jobs[0], &[&node])];
    let cycle = c.observe(&snapshot(&still_running, [false; 4]), T0 + 1_000);
    assert_eq!(kinds(&cycle), [(1, "requeue-hold")]);
    (node, still_running)
}

#[test]
fn with_epilog_acks_a_requeue_still_completing_is_not_taken_for_a_finished_run() {
    big_stack(|| {
        // Seen on the lab (seed 1, edf): gantry requeue-held job 13; a poll showed the
        // requeue (restart count 0 → 1) and the core restarted the job at another's end;
        // the next poll still showed it COMPLETING with exit status 0, which gantry took for
        // a completed run: the core let the job go, and the held job was then taken for an
        // operator's and never started again.
        let mut c = controller_with(OrderKind::Fifo, with_epilog_acks());
        let (_, still_running) = requeue_held_with_every_node_down(&mut c);
        let none = [false; 4];
        let requeuing = [SlurmJob {
            state: JobStateName::Completing,
            exit_status: Some(0),
            restart_count: 1,
            ..still_running[0].clone()
        }];
        c.observe(&snapshot(&requeuing, none), T0 + 1_500);
        // The nodes back, Slurm still completing the requeue: the core restarts the job,
        // and it stays the core's, running.
        for now in [T0 + 2_000, T0 + 2_200] {
            let cycle = c.observe(&snapshot(&requeuing, [true; 4]), now);
            assert!(
                cycle
                    .entries
                    .iter()
                    .all(|e| !matches!(e.event, Event::Finish(JobId(1)) | Event::Cancel(JobId(1)))),
                "{:?}",
                cycle.entries
            );
            assert!(cycle.outcomes.is_empty(), "{:?}", cycle.outcomes);
        }
        assert_eq!(
            c.core().job(JobId(1)).map(|j| j.state()),
            Some(JobState::Running)
        );
    });
}

#[test]
fn a_completing_job_ends_early_only_after_a_clean_exit_and_with_epilog_acks() {
    big_stack(|| {
        let on_config = with_epilog_acks();
        let off_config = ControllerConfig {
            finish_at_completing: false,
            ..on_config.clone()
        };
        // exit 1 (1 << 8), a requeue by Slurm (restart count up), or acks off: the job ends
        // for the core only when Slurm says how it ended.
        for (config, exit_status, requeued) in [
            (on_config.clone(), 256, false),
            (on_config, 0, true),
            (off_config, 0, false),
        ] {
            let (mut c, mut jobs, on) = four_running_one_waiting(config);
            let mut seen = completing(&mut jobs, exit_status, &on[1]);
            if requeued {
                seen.jobs[1].restart_count += 1;
            }
            let cycle = c.observe(&seen, T0 + 10_000);
            assert!(cycle.outcomes.is_empty(), "{exit_status} {requeued}");
            assert!(starts(&cycle).is_empty(), "{:?}", cycle.actions);
        }
    });
}

#[test]
fn bad_requests_are_rejected_with_their_reason_and_the_rest_goes_on() {
    big_stack(|| {
        let mut c = controller(OrderKind::Tias);
        let mut too_many = held(3, "");
        too_many.tres_per_job = "gres:gpu:40".into();
        let jobs = [
            held(1, "gres:gpu:16"),
            held(2, "gres:gpu:-1"),
            too_many,
            held(4, ""),
            held(5, "gres:gpu:two"),
            held(6, "gres:gpu:1"),
        ];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        let reasons: BTreeMap<u32, String> = cycle
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::Reject { job, reason } => Some((*job, reason.clone())),
                _ => None,
            })
            .collect();
        let expected: [(u32, &str); 5] = [
            (
                1,
                "asks for 16 GPUs per node (--gres), but the largest node of the partition has 8",
            ),
            (
                2,
                "unparseable GPU request `gres:gpu:-1` (--gres): `-1` is not a GPU count",
            ),
            (3, "asks for 40 GPUs, but partition gpu has 32 in all"),
            (4, "asks for no GPU"),
            (5, "asks for GPU type `two`"),
        ];
        for (job, text) in expected {
            assert!(reasons[&job].contains(text), "job {job}: {}", reasons[&job]);
        }
        assert_eq!(starts(&cycle), [(6, "n1:1".into())]);
        // Until Slurm shows them cancelled, the cancellation is retried, never resubmitted.
        let again = c.observe(&snapshot(&jobs, [true; 4]), T0 + 500);
        assert_eq!(
            kinds(&again).iter().filter(|(_, k)| *k == "reject").count(),
            5
        );
        assert!(
            again
                .entries
                .iter()
                .all(|e| !matches!(e.event, Event::Submit(_)))
        );
    });
}

#[test]
fn a_node_going_down_preempts_its_job_and_holds_it_until_it_restarts_elsewhere() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs = [held(1, "gres:gpu:8"), held(2, "gres:gpu:8")];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        let first = pinned_nodes(&cycle, 1)[0].clone();
        let second = pinned_nodes(&cycle, 2)[0].clone();
        let down_index = first[1..].parse::<usize>().unwrap() - 1;
        let mut usable = [true; 4];
        usable[down_index] = false;
        // Slurm requeued job 1 itself: pending, not held, still pinned, restart count 1.
        let mut requeued = released(&jobs[0], &[&first]);
        requeued.restart_count = 1;
        requeued.reason = "BeginTime".into();
        let now = [requeued.clone(), running(&jobs[1], &[&second])];
        // The restart count is a baseline when first seen; the next cycle sees it grow.
        let cycle = c.observe(&snapshot(&now, usable), T0 + 1_000);
        let downs = cycle
            .entries
            .iter()
            .filter(|e| matches!(e.event, Event::GpuDown(_)))
            .count();
        assert_eq!(downs, 8);
        assert_eq!(cycle.preemptions, 1);
        assert!(
            cycle
                .notes
                .iter()
                .any(|n| n.contains(&format!("node {first} is DOWN (test)")))
        );
        // Preempted, then placed again at once on a free node: re-pinned there.
        let moved = pinned_nodes(&cycle, 1);
        assert_ne!(moved[0], first);
        assert_ne!(moved[0], second);
        let plan = cycle.actions.iter().find_map(|a| match a {
            Action::Start(p) => Some(p.clone()),
            _ => None,
        });
        assert!(
            !plan.unwrap().release,
            "a released job is re-pinned, not released again"
        );
        // Node back: GPUs up, nothing else changes.
        let moved_to = [
            released(&requeued, &[&moved[0]]),
            running(&jobs[1], &[&second]),
        ];
        let cycle = c.observe(&snapshot(&moved_to, [true; 4]), T0 + 2_000);
        let ups = cycle
            .entries
            .iter()
            .filter(|e| matches!(e.event, Event::GpuUp(_)))
            .count();
        assert_eq!((ups, cycle.actions.len()), (8, 0));
    });
}

#[test]
fn a_preempted_running_job_is_requeued_held_and_waits_while_completing() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let (node, still_running) = requeue_held_with_every_node_down(&mut c);
        let index = node[1..].parse::<usize>().unwrap() - 1;
        let mut usable = [true; 4];
        usable[index] = false;
        let usable_none = [false; 4];
        let completing = [SlurmJob {
            state: JobStateName::Completing,
            ..still_running[0].clone()
        }];
        let cycle = c.observe(&snapshot(&completing, usable_none), T0 + 1_500);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        // Slurm leaves an administrator hold: gantry makes it a user hold (an operator's
        // holds are administrator holds), then leaves it alone.
        let requeued_held = [SlurmJob {
            state: JobStateName::Pending,
            held: true,
            reason: "JobHeldAdmin".into(),
            restart_count: 1,
            ..still_running[0].clone()
        }];
        let cycle = c.observe(&snapshot(&requeued_held, usable_none), T0 + 2_000);
        assert_eq!(kinds(&cycle), [(1, "hold")]);
        assert_eq!(cycle.restarts_seen, 1);
        let user_held = [SlurmJob {
            reason: "JobHeldUser".into(),
            ..requeued_held[0].clone()
        }];
        let cycle = c.observe(&snapshot(&user_held, usable_none), T0 + 2_500);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        // A node comes back: the job starts again, released from its hold.
        let cycle = c.observe(&snapshot(&user_held, usable), T0 + 3_000);
        assert_eq!(kinds(&cycle), [(1, "start")]);
    });
}

#[test]
fn unexpected_states_are_logged_and_reconciled() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs = [held(1, "gres:gpu:2"), held(2, "gres:gpu:2")];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        let node = pinned_nodes(&cycle, 1)[0].clone();
        let other = if node == "n4" { "n3" } else { "n4" };
        // Job 1 runs elsewhere (moved by the core or an admin), job 2 vanished, job 3 was released by
        // hand, job 9 runs outside gantry.
        let mut foreign = held(9, "gres:gpu:1");
        foreign.state = JobStateName::Running;
        foreign.held = false;
        foreign.nodes = vec!["n4".into()];
        let by_hand = SlurmJob {
            held: false,
            reason: "Priority".into(),
            ..held(3, "gres:gpu:1")
        };
        let now = [running(&jobs[0], &[other]), by_hand, foreign];
        let cycle = c.observe(&snapshot(&now, [true; 4]), T0 + 1_000);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains(&format!(
                "job 1: runs on {other} but the core placed it on {node}:2"
            )),
            "{text}"
        );
        assert!(text.contains("job 2: no longer listed by squeue"), "{text}");
        assert!(text.contains("job 3: pending but not held"), "{text}");
        assert!(
            text.contains("job 9: RUNNING on n4 but not started by gantry"),
            "{text}"
        );
        assert!(
            cycle
                .entries
                .iter()
                .any(|e| e.event == Event::Finish(JobId(2)))
        );
        assert_eq!(kinds(&cycle), [(3, "hold"), (1, "requeue-hold")]);
        assert_eq!(cycle.unexpected, 1);
        // Said once, not every cycle.
        let cycle = c.observe(&snapshot(&now, [true; 4]), T0 + 1_500);
        assert!(cycle.notes.is_empty(), "{:?}", cycle.notes);
    });
}

/// A job running outside gantry (here: before gantry took the partition over) keeps its
/// GPUs out of the core's view: nothing is placed on them while it runs, and they come
/// back when it ends.
#[test]
fn gpus_of_a_job_running_outside_gantry_are_left_to_it_until_it_ends() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let mut outside = held(9, "gres:gpu:8");
        outside.state = JobStateName::Running;
        outside.held = false;
        outside.nodes = vec!["n1".into()];
        let mut jobs: Vec<SlurmJob> = (1..=4).map(|id| held(id, "gres:gpu:8")).collect();
        jobs.push(outside.clone());
        let mut used = nodes([true; 4]);
        used[0].gres_used = "gpu:8".into();
        let cycle = c.observe(
            &Snapshot {
                jobs: jobs.clone(),
                nodes: used.clone(),
                ..Snapshot::default()
            },
            T0,
        );
        let placed: Vec<String> = starts(&cycle).into_iter().map(|(_, s)| s).collect();
        assert_eq!(placed.len(), 3, "{:?}", cycle.notes);
        assert!(placed.iter().all(|s| !s.starts_with("n1")), "{placed:?}");
        assert_eq!(c.core.healthy_gpu_count(), 24);
        for (i, shape) in placed.iter().enumerate() {
            let node = shape.split(':').next().unwrap();
            jobs[i] = running(&jobs[i], &[node]);
        }
        // Stable while it runs: nothing is taken out or given back again.
        let cycle = c.observe(
            &Snapshot {
                jobs: jobs.clone(),
                nodes: used,
                ..Snapshot::default()
            },
            T0 + 1_000,
        );
        assert!(
            cycle.entries.is_empty() && cycle.actions.is_empty(),
            "{:?}",
            cycle.entries
        );
        // It ends: its GPUs come back, and job 4 starts there.
        jobs[4] = ended(&outside, JobStateName::Completed);
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 2_000);
        assert_eq!(starts(&cycle), [(4, "n1:8".into())], "{:?}", cycle.notes);
        assert_eq!(c.core.healthy_gpu_count(), 32);
    });
}

/// A node in two partitions: the other partition's jobs, which Slurm starts by itself,
/// hold GPUs gantry must leave to them.
#[test]
fn gpus_another_partitions_job_holds_on_a_shared_node_are_left_to_it() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let mut other = held(10, "gres:gpu:2");
        other.partition = "other".into();
        other.state = JobStateName::Running;
        other.held = false;
        other.nodes = vec!["n2".into()];
        let mut used = nodes([true; 4]);
        used[1].gres_used = "gpu:2".into();
        let cycle = c.observe(
            &Snapshot {
                jobs: vec![other.clone()],
                nodes: used,
                ..Snapshot::default()
            },
            T0,
        );
        assert_eq!(c.core.healthy_gpu_count(), 30);
        // Not this partition's job: no note about it.
        assert!(cycle.notes.is_empty(), "{:?}", cycle.notes);
        let cycle = c.observe(
            &snapshot(&[ended(&other, JobStateName::Completed)], [true; 4]),
            T0 + 1_000,
        );
        assert!(cycle.notes.is_empty(), "{:?}", cycle.notes);
        assert_eq!(c.core.healthy_gpu_count(), 32);
    });
}

/// A start Slurm can never run where gantry placed it (the job's own `--exclude` or
/// `--constraint` rules the nodes out: Slurm shows it held, reason `BadConstraints`) is not
/// released again and again, nor cancelled: it leaves the core, its GPUs go to others, and
/// it is handed to Slurm unpinned (`NodeList=` cleared, then released), once; pending in
/// Slurm afterwards it is neither held nor submitted again.
#[test]
fn a_start_slurm_cannot_run_where_placed_is_left_to_slurm_unpinned() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs = [held(1, "gres:gpu:8"), held(2, "gres:gpu:8")];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        for action in &cycle.actions {
            c.action_done(action, T0, Ok(()));
        }
        let on = pinned_nodes(&cycle, 1);
        let on: Vec<&str> = on.iter().map(String::as_str).collect();
        // Released, re-evaluated by Slurm: non-runnable there, priority 0.
        let bad = SlurmJob {
            reason: "BadConstraints".into(),
            ..released(&jobs[0], &on)
        };
        let bad = SlurmJob { held: true, ..bad };
        let two = pinned_nodes(&cycle, 2);
        let two: Vec<&str> = two.iter().map(String::as_str).collect();
        let now = [bad.clone(), running(&jobs[1], &two)];
        let cycle = c.observe(&snapshot(&now, [true; 4]), T0 + 1_000);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains(&format!(
                "job 1: Slurm cannot run it on {}:8 (BadConstraints: its own node rules, such as --exclude or --constraint, rule out the nodes gantry chose); gantry places jobs on any node of the partition, so it leaves this job to Slurm's own scheduler, unpinned",
                on[0]
            )),
            "{text}"
        );
        assert_eq!(kinds(&cycle), [(1, "hand-over")]);
        let names = JobNames::default();
        let commands = cycle.actions[0].commands(&names);
        assert_eq!(commands.len(), 2, "{commands:?}");
        assert!(
            commands[0].contains(&"NodeList=".to_string()),
            "{commands:?}"
        );
        assert_eq!(commands[1][1], "release", "{commands:?}");
        assert!(c.core.job(JobId(1)).is_none());
        // Carried out: pending for resources in Slurm, unpinned. Nothing more to do, and
        // the note is not repeated.
        let waiting = SlurmJob {
            held: false,
            reason: "Resources".into(),
            required_nodes: Vec::new(),
            ..bad.clone()
        };
        let now = [waiting, running(&jobs[1], &two)];
        let cycle = c.observe(&snapshot(&now, [true; 4]), T0 + 1_500);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert!(cycle.notes.is_empty(), "{:?}", cycle.notes);
        assert!(c.core.job(JobId(1)).is_none());
        // Running where Slurm placed it: logged as left to Slurm, nothing done.
        let ran = SlurmJob {
            state: JobStateName::Running,
            nodes: vec!["n4".into()],
            ..bad.clone()
        };
        let cycle = c.observe(
            &snapshot(&[ran, running(&jobs[1], &two)], [true; 4]),
            T0 + 1_800,
        );
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert_eq!(
            cycle.notes,
            [
                "job 1: RUNNING on n4 where Slurm placed it, left to Slurm for its node rules; its GPUs are not gantry's to give"
            ]
        );
        // The hand-over failed and Slurm still holds it: handed over again.
        let now = [bad.clone(), running(&jobs[1], &two)];
        let cycle = c.observe(&snapshot(&now, [true; 4]), T0 + 2_000);
        assert_eq!(kinds(&cycle), [(1, "hand-over")]);
        // A restarted gantry given the side state leaves it to Slurm too; one without it
        // would take it for new work and hold it.
        let waiting = SlurmJob {
            held: false,
            reason: "Resources".into(),
            required_nodes: Vec::new(),
            ..bad
        };
        for restored in [true, false] {
            let mut fresh = controller(OrderKind::Fifo);
            if restored {
                fresh.restore_left_for_node_rules(c.left_for_node_rules().clone());
            }
            let cycle = fresh.observe(&snapshot(std::slice::from_ref(&waiting), [true; 4]), T0);
            let held = kinds(&cycle).contains(&(1, "hold"));
            assert_eq!(held, !restored, "{:?}", cycle.actions);
        }
    });
}

/// A per-node request on one node (`--gres=gpu:4`) that the core would split over nodes
/// is left to Slurm as submitted, which runs it on one node; the core holds the GPUs it
/// chose until then, and lets the job go once Slurm runs it. A per-job request (`--gpus=4`)
/// in the same place is split and released. Neither is held again, and a restarted
/// controller given the side state leaves the first to Slurm too.
/// Node counts as `scontrol show job` would read them, with the jobs asked each time.
struct FakeNodeCounts {
    max_nodes: BTreeMap<u32, Result<u32, String>>,
    asked: Vec<Vec<u32>>,
}

impl NodeCounts for FakeNodeCounts {
    fn max_nodes(&mut self, jobs: &[u32]) -> Vec<(u32, Result<u32, String>)> {
        self.asked.push(jobs.to_vec());
        jobs.iter()
            .filter_map(|id| self.max_nodes.get(id).map(|r| (*id, r.clone())))
            .collect()
    }
}

#[test]
fn a_job_that_set_one_node_is_left_to_slurm_when_the_core_would_split_it() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        // Four 5-GPU jobs, one per node: 3 GPUs free on each node. Then per-job requests
        // the core splits: `--gpus=4 -N 1` (5), `--gpus=4` (6), and `--gpus=3` whose node
        // count cannot be read (7). The compact listing shows the three alike.
        let per_job = |id: u32, gpus: u32| SlurmJob {
            tres_per_job: format!("gres:gpu:{gpus}"),
            ..held(id, "")
        };
        let fillers: Vec<SlurmJob> = (1..=4).map(|id| held(id, "gres:gpu:5")).collect();
        let cycle = c.observe(&snapshot(&fillers, [true; 4]), T0 - 1_000);
        for action in &cycle.actions {
            c.action_done(action, T0 - 1_000, Ok(()));
        }
        let mut jobs: Vec<SlurmJob> = fillers
            .iter()
            .zip(["n1", "n2", "n3", "n4"])
            .map(|(job, node)| running(job, &[node]))
            .collect();
        jobs.extend([per_job(5, 4), per_job(6, 4), per_job(7, 3)]);
        let mut counts = FakeNodeCounts {
            max_nodes: [
                (5, Ok(1)),
                (6, Ok(0)),
                (7, Err("scontrol: timed out".to_string())),
            ]
            .into(),
            asked: Vec::new(),
        };
        let cycle = c.observe_reading(&snapshot(&jobs, [true; 4]), T0, &mut counts);
        // Only the split starts are read, together.
        assert_eq!(counts.asked, [vec![5, 6, 7]]);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 5: asks for 4 GPUs on one node (-N 1), and gantry's placement would split them (n1:3,n2:1); gantry leaves it to Slurm's own scheduler"),
            "{text}"
        );
        assert!(
            text.contains("job 7: cannot read whether it asked for one node (scontrol: timed out); released where gantry placed it"),
            "{text}"
        );
        assert!(!text.contains("job 6"), "{text}");
        let of = |job: u32| -> Vec<&'static str> {
            cycle
                .actions
                .iter()
                .filter(|a| a.job() == job)
                .map(Action::kind)
                .collect()
        };
        assert_eq!(of(5), ["hand-over"], "{text}");
        assert_eq!(of(6), ["start"], "{text}");
        // Placed as gantry chose (its release waits for job 6's on n4).
        assert!(of(7).is_empty(), "{text}");
        assert!(text.contains("job 7: waits until the jobs released onto n2:2,n4:1 run"));
        // Job 5 keeps its GPUs in the core until Slurm starts it.
        assert_eq!(
            c.core.job(JobId(5)).map(|j| j.state()),
            Some(JobState::Running)
        );
        assert_eq!(cycle.left_to_slurm.len(), 1);
        for action in &cycle.actions {
            c.action_done(action, T0, Ok(()));
        }
        // Nothing read again: job 5 is Slurm's, 6 is read, 7 is released.
        let mut now: Vec<SlurmJob> = jobs[..4].to_vec();
        for id in [5, 6, 7] {
            now.push(SlurmJob {
                held: false,
                reason: "Resources".into(),
                ..jobs[id as usize - 1].clone()
            });
        }
        let cycle = c.observe_reading(&snapshot(&now, [true; 4]), T0 + 1_000, &mut counts);
        assert_eq!(counts.asked.len(), 1, "{:?}", counts.asked);
        assert!(
            !cycle.actions.iter().any(|a| a.job() == 5),
            "{:?}",
            cycle.actions
        );
        // Without the read, `-N 1` is not seen and the job is released split.
        let mut unread = controller(OrderKind::Fifo);
        let cycle = unread.observe(&snapshot(&jobs, [true; 4]), T0);
        assert!(
            cycle
                .actions
                .iter()
                .any(|a| a.job() == 5 && a.kind() == "start"),
            "{:?}",
            cycle.actions
        );
    });
}

#[test]
fn a_per_node_request_the_core_would_split_is_left_to_slurm_to_keep_it_on_one_node() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        // Four 5-GPU jobs, one per node (best fit keeps a gang on one node): 3 GPUs free
        // on each node, 12 in all.
        let mut jobs: Vec<SlurmJob> = (1..=4).map(|id| held(id, "gres:gpu:5")).collect();
        let per_node = held(5, "gres:gpu:4");
        let per_job = SlurmJob {
            tres_per_job: "gres:gpu:4".into(),
            ..held(6, "")
        };
        jobs.extend([per_node.clone(), per_job]);
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 5: asks for 4 GPUs on one node (per node: --gres or --gpus-per-node), and gantry's placement would split them (n1:3,n2:1); gantry leaves it to Slurm's own scheduler, which starts it on one node"),
            "{text}"
        );
        // Still running in the core where it placed it: those GPUs wait for it.
        assert_eq!(
            c.core.job(JobId(5)).map(|j| j.state()),
            Some(JobState::Running)
        );
        assert_eq!(cycle.left_to_slurm.len(), 1);
        let handed: Vec<&Action> = cycle.actions.iter().filter(|a| a.job() == 5).collect();
        assert_eq!(handed.len(), 1, "{:?}", cycle.actions);
        let commands = handed[0].commands(&JobNames::default());
        assert_eq!(commands.len(), 1, "released as submitted: {commands:?}");
        assert_eq!(commands[0][1], "release", "{commands:?}");
        // The per-job request takes the GPUs job 5 left, over two nodes.
        // The per-job request is split over two nodes (its release then waits for Slurm's
        // counts there).
        let split = c.layout.shape(c.core.placement_of(JobId(6)).as_slice());
        assert_eq!(shape_text(&split), "n3:3,n4:1");
        for action in &cycle.actions {
            c.action_done(action, T0, Ok(()));
        }
        // Pending in Slurm for a node with 4 free GPUs: nothing done, nothing said again.
        let waiting = SlurmJob {
            held: false,
            reason: "Resources".into(),
            ..per_node.clone()
        };
        let mut now: Vec<SlurmJob> = jobs[..4].to_vec();
        now.push(waiting.clone());
        let cycle = c.observe(&snapshot(&now, [true; 4]), T0 + 1_000);
        assert!(
            !cycle.actions.iter().any(|a| a.job() == 5),
            "{:?}",
            cycle.actions
        );
        assert!(
            !cycle.notes.join("\n").contains("job 5"),
            "{:?}",
            cycle.notes
        );
        assert_eq!(cycle.left_to_slurm.len(), 0);
        assert!(c.core.job(JobId(5)).is_some());
        // Running where Slurm placed it: out of the core, logged as left to Slurm.
        now[4] = running(&per_node, &["n1"]);
        let cycle = c.observe(&snapshot(&now, [true; 4]), T0 + 2_000);
        assert!(c.core.job(JobId(5)).is_none());
        assert!(
            !cycle.actions.iter().any(|a| a.job() == 5),
            "not requeued: {:?}",
            cycle.actions
        );
        assert!(
            cycle.notes.contains(
                &"job 5: RUNNING on n1 where Slurm placed it, left to Slurm to keep it on one node; its GPUs are not gantry's to give".to_string()
            ),
            "{:?}",
            cycle.notes
        );
        for restored in [true, false] {
            let mut fresh = controller(OrderKind::Fifo);
            if restored {
                fresh.restore_left_for_one_node(c.left_for_one_node().clone());
            }
            let cycle = fresh.observe(&snapshot(std::slice::from_ref(&waiting), [true; 4]), T0);
            let held = kinds(&cycle).contains(&(5, "hold"));
            assert_eq!(held, !restored, "{:?}", cycle.actions);
        }
    });
}

/// Per-node requests left to Slurm keep the GPUs the core chose for them until Slurm starts
/// them, so the queue behind them is not handed over on the same GPUs: with 12 GPUs free,
/// 3 per node, three 4-GPU per-node jobs are left to Slurm and a fourth waits in gantry's
/// queue.
#[test]
fn per_node_requests_left_to_slurm_hold_their_gpus_so_the_next_waits_in_gantry() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let mut jobs: Vec<SlurmJob> = (1..=4).map(|id| held(id, "gres:gpu:5")).collect();
        jobs.extend((5..=8).map(|id| held(id, "gres:gpu:4")));
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        let handed: Vec<u32> = kinds(&cycle)
            .into_iter()
            .filter(|(_, kind)| *kind == "hand-over")
            .map(|(job, _)| job)
            .collect();
        assert_eq!(handed, [5, 6, 7], "{:?}", cycle.notes);
        assert_eq!(cycle.left_to_slurm.len(), 3);
        assert_eq!(
            c.core.job(JobId(8)).map(|j| j.state()),
            Some(JobState::Waiting)
        );
    });
}

/// A per-node request released onto one node and not started yet, which the core then
/// moves over several nodes (its node went down), is left to Slurm too, its pin cleared,
/// instead of being pinned again over the new nodes.
#[test]
fn a_per_node_request_the_core_moves_over_nodes_before_it_starts_is_left_to_slurm() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        // Job 1 (4 GPUs) on n1; jobs 2-4 (5 GPUs) on n2-n4, 3 GPUs free on each.
        let mut jobs = vec![held(1, "gres:gpu:4")];
        jobs.extend((2..=4).map(|id| held(id, "gres:gpu:5")));
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        assert_eq!(pinned_nodes(&cycle, 1), ["n1"]);
        for action in &cycle.actions {
            c.action_done(action, T0, Ok(()));
        }
        let mut now = vec![released(&jobs[0], &["n1"])];
        for (job, node) in jobs[1..].iter().zip(["n2", "n3", "n4"]) {
            now.push(running(job, &[node]));
        }
        // n1 goes down before job 1 starts: the core moves it to 4 of the 9 free GPUs.
        let cycle = c.observe(&snapshot(&now, [false, true, true, true]), T0 + 1_000);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 1: asks for 4 GPUs on one node (per node: --gres or --gpus-per-node), and gantry's placement would split them"),
            "{text}"
        );
        assert!(c.left_for_one_node().contains(&1));
        assert_eq!(kinds(&cycle), [(1, "hand-over")], "{:?}", cycle.actions);
        let commands = cycle.actions[0].commands(&JobNames::default());
        assert!(
            commands[0].contains(&"NodeList=".to_string()),
            "{commands:?}"
        );
    });
}

/// `--exclusive` is kept for whole nodes' worth of GPUs and refused, with the reason, for
/// fewer; a user's `-w` is logged: gantry pins the job where it places it.
#[test]
fn exclusive_part_of_a_node_is_refused_and_a_users_nodelist_is_logged() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let part = SlurmJob {
            exclusive: true,
            ..held(1, "gres:gpu:2")
        };
        let whole = SlurmJob {
            exclusive: true,
            ..held(2, "gres:gpu:8")
        };
        let asked = SlurmJob {
            required_nodes: vec!["n3".into()],
            ..held(3, "gres:gpu:1")
        };
        let cycle = c.observe(&snapshot(&[part, whole, asked], [true; 4]), T0);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 1: rejected: asks for whole nodes (--exclusive) but 2 GPUs, not a multiple of a node's 8"),
            "{text}"
        );
        assert!(
            text.contains(
                "job 3: asks for nodes n3 (-w/--nodelist); gantry chooses the nodes itself"
            ),
            "{text}"
        );
        let started: Vec<u32> = starts(&cycle).into_iter().map(|(j, _)| j).collect();
        assert_eq!(started, [2, 3]);
        assert!(kinds(&cycle).contains(&(1, "reject")));
    });
}

/// A held job waits in its hold until its dependency is met (Slurm does not test the
/// dependencies of held jobs), what it waits for watched by id; one whose dependency can
/// never be met, or of a kind gantry does not judge, is released to Slurm and not held
/// again.
#[test]
fn a_held_job_is_scheduled_once_its_dependency_is_met() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let parent = held(1, "gres:gpu:8");
        let child = SlurmJob {
            dependency: "afterok:1(unfulfilled)".into(),
            ..held(2, "gres:gpu:8")
        };
        let failed = SlurmJob {
            state: JobStateName::Ended("FAILED".into()),
            ..held(3, "gres:gpu:1")
        };
        let orphan = SlurmJob {
            dependency: "afterok:3(unfulfilled)".into(),
            ..held(4, "gres:gpu:1")
        };
        let single = SlurmJob {
            dependency: "singleton(unfulfilled)".into(),
            ..held(5, "gres:gpu:1")
        };
        let jobs = [
            parent.clone(),
            child.clone(),
            failed.clone(),
            orphan.clone(),
            single,
        ];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        assert_eq!(
            kinds(&cycle),
            [(4, "hand-over"), (5, "hand-over"), (1, "start")]
        );
        let said = |id: u32, text: &str| {
            assert!(
                cycle
                    .notes
                    .iter()
                    .any(|n| n.starts_with(&format!("job {id}: {text}"))),
                "{:?}",
                cycle.notes
            )
        };
        said(
            2,
            "waits for its dependency (afterok:1(unfulfilled)): job 1 has not ended; gantry schedules it once it is met",
        );
        said(
            4,
            "its dependency (afterok:3(unfulfilled)) can never be met (job 3 ended FAILED); released to Slurm",
        );
        said(
            5,
            "its dependency (singleton(unfulfilled)) is not one gantry judges",
        );
        // What a pending job depends on is listed by id once it ended (job 3 already has).
        assert!(c.watched_jobs().contains(&1) && c.watched_jobs().contains(&3));
        c.action_done(&cycle.actions[2], T0, Ok(()));
        // Job 1 ran and ended; Slurm shows the released jobs pending, job 4 for ever.
        let on = pinned_nodes(&cycle, 1);
        let on: Vec<&str> = on.iter().map(String::as_str).collect();
        let never = SlurmJob {
            held: false,
            reason: "DependencyNeverSatisfied".into(),
            ..orphan
        };
        let jobs = [
            ended(&running(&parent, &on), JobStateName::Completed),
            child,
            failed,
            never,
        ];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 1_000);
        assert_eq!(kinds(&cycle), [(2, "start")], "{:?}", cycle.notes);
    });
}

/// A held job array is split into single jobs in the cycle gantry first sees it (every
/// pending task but the lowest, which keeps the array's id), never submitted to the core as
/// one job; from the next poll each task is scheduled as a single job, the one in the
/// array's own record named `A_k` in every command (`A` names every task).
#[test]
fn a_job_array_is_split_and_each_task_scheduled_as_a_single_job() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let array = held_array(5, "0-2", "gres:gpu:8");
        let single = held(9, "gres:gpu:8");
        let cycle = c.observe(&snapshot(&[array.clone(), single.clone()], [true; 4]), T0);
        assert_eq!(kinds(&cycle), [(5, "split"), (9, "start")]);
        assert!(c.core.job(JobId(5)).is_none());
        assert!(
            cycle.notes.iter().any(|n| n
                == "job array 5: 3 pending tasks (0-2); gantry splits them into single jobs (task 0 keeps job id 5) and schedules each"),
            "{:?}",
            cycle.notes
        );
        let update = |name: &str| {
            ["scontrol", "update", &format!("JobId={name}"), "Requeue=0"].map(String::from)
        };
        assert_eq!(
            cycle.actions[0].commands(&JobNames::default()),
            [update("5_1"), update("5_2")]
        );
        // Slurm split tasks 1 and 2 off (ids 10 and 11); the record keeps task 0.
        let task = |id, task| array_task(&array, id, task);
        let on = pinned_nodes(&cycle, 9);
        let on: Vec<&str> = on.iter().map(String::as_str).collect();
        let jobs = [task(5, 0), task(10, 1), task(11, 2), running(&single, &on)];
        c.action_done(&cycle.actions[1], T0, Ok(()));
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 1_000);
        let started: Vec<u32> = starts(&cycle).into_iter().map(|(j, _)| j).collect();
        assert_eq!(started, [5, 10, 11]);
        let nodes: BTreeSet<String> = started
            .iter()
            .flat_map(|&j| pinned_nodes(&cycle, j))
            .chain(on.iter().map(|n| n.to_string()))
            .collect();
        assert_eq!(nodes.len(), 4, "tasks share a node: {:?}", cycle.actions);
        let names = JobNames::of_jobs(&jobs);
        let lines = cycle.actions[0].commands(&names);
        assert_eq!(lines[0][2], "JobId=5_0");
        assert_eq!(lines[1][1..], ["release", "5_0"]);
        assert_eq!(cycle.actions[1].commands(&names)[1][2], "10");
    });
}

/// A job array with a throttle (`%2`, which Slurm enforces on split tasks too) is split as
/// any array, and the core holds at most two of its tasks at once: a third is submitted
/// once one of them ended.
#[test]
fn a_throttled_job_arrays_tasks_are_scheduled_at_most_n_at_once() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let array = held_array(5, "0-3%2", "gres:gpu:1");
        let cycle = c.observe(&snapshot(std::slice::from_ref(&array), [true; 4]), T0);
        assert_eq!(kinds(&cycle), [(5, "split")]);
        assert!(
            cycle
                .notes
                .iter()
                .any(|n| n.ends_with("and schedules each, at most 2 at once (its throttle)")),
            "{:?}",
            cycle.notes
        );
        assert_eq!(c.array_throttles(), &BTreeMap::from([(5, 2)]));
        let task = |id, task| array_task(&array, id, task);
        let mut jobs = vec![task(5, 0), task(10, 1), task(11, 2), task(12, 3)];
        // A gantry restarted now (its records show no throttle) keeps the throttle it
        // finds beside its journal.
        let mut restarted = controller(OrderKind::Fifo);
        restarted.restore_array_throttles(c.array_throttles().clone());
        let cycle = restarted.observe(&snapshot(&jobs, [true; 4]), T0 + 1_000);
        assert_eq!(starts(&cycle).len(), 2, "{:?}", cycle.actions);
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 1_000);
        let started: Vec<u32> = starts(&cycle).into_iter().map(|(j, _)| j).collect();
        assert_eq!(started, [5, 10]);
        for action in &cycle.actions {
            c.action_done(action, T0 + 1_000, Ok(()));
        }
        jobs[0] = ended(
            &running(
                &jobs[0],
                &pinned_nodes(&cycle, 5)
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
            ),
            JobStateName::Completed,
        );
        let on = pinned_nodes(&cycle, 10);
        jobs[1] = running(&jobs[1], &on.iter().map(String::as_str).collect::<Vec<_>>());
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 2_000);
        let started: Vec<u32> = starts(&cycle).into_iter().map(|(j, _)| j).collect();
        assert_eq!(started, [11]);
        // Once no task of it is left, its throttle is forgotten.
        let over: Vec<SlurmJob> = jobs
            .iter()
            .map(|j| ended(j, JobStateName::Completed))
            .collect();
        c.observe(&snapshot(&over, [true; 4]), T0 + 3_000);
        assert!(c.array_throttles().is_empty());
    });
}

/// A job array released outside gantry (here before gantry saw it) is left to Slurm's own
/// scheduler: its tasks are not held, nor submitted to the core (logged once), and the GPUs
/// of its running tasks are kept out of the core's view without a line per task.
#[test]
fn a_job_array_released_outside_gantry_is_left_to_slurm_and_its_running_tasks_keep_their_gpus() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let array = SlurmJob {
            held: false,
            reason: "Resources".into(),
            ..held_array(5, "0-2", "gres:gpu:8")
        };
        let single = held(9, "gres:gpu:8");
        let cycle = c.observe(&snapshot(&[array.clone(), single.clone()], [true; 4]), T0);
        assert_eq!(kinds(&cycle), [(9, "start")]);
        assert!(
            cycle.notes.iter().any(|n| n.starts_with(
                "job 5: part of job array 5; gantry leaves this array to Slurm's own scheduler (released outside gantry)"
            )),
            "{:?}",
            cycle.notes
        );
        assert!(c.core.job(JobId(5)).is_none());
        // Two tasks run (own ids, n2 and n3); the record still holds task 2, pending.
        let on = pinned_nodes(&cycle, 9);
        let on: Vec<&str> = on.iter().map(String::as_str).collect();
        let task = |id: u32, node: &str| SlurmJob {
            array_tasks: (id - 6).to_string(),
            ..running(&array, &[node])
        };
        let free: Vec<&str> = ["n1", "n2", "n3", "n4"]
            .into_iter()
            .filter(|n| !on.contains(n))
            .collect();
        let record = SlurmJob {
            array_tasks: "2".into(),
            ..array.clone()
        };
        let mut now = vec![
            record,
            running(&single, &on),
            task(6, free[0]),
            task(7, free[1]),
        ];
        now[2].id = 6;
        now[3].id = 7;
        let mut used = nodes([true; 4]);
        for n in used.iter_mut() {
            n.gres_used = "gpu:8".into();
        }
        used.iter_mut()
            .find(|n| n.name == free[2])
            .unwrap()
            .gres_used = "gpu:0".into();
        let cycle = c.observe(
            &Snapshot {
                jobs: now,
                nodes: used,
                ..Snapshot::default()
            },
            T0 + 1_000,
        );
        assert!(cycle.notes.is_empty(), "{:?}", cycle.notes);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert_eq!(c.core.healthy_gpu_count(), 32 - 16);
    });
}

/// A heterogeneous job's components (Slurm starts them only together) are left to Slurm
/// as an array is: released unpinned, logged once for the whole job, never in the core.
#[test]
fn a_heterogeneous_jobs_components_are_handed_to_slurm_together() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let first = SlurmJob {
            het_job: Some(11),
            ..held(11, "gres:gpu:2")
        };
        let second = SlurmJob {
            het_job: Some(11),
            ..held(12, "gres:gpu:1")
        };
        let cycle = c.observe(&snapshot(&[first, second], [true; 4]), T0);
        assert_eq!(kinds(&cycle), [(11, "hand-over"), (12, "hand-over")]);
        let lines: Vec<&String> = cycle
            .notes
            .iter()
            .filter(|n| n.contains("part of heterogeneous job 11"))
            .collect();
        assert_eq!(lines.len(), 1, "{:?}", cycle.notes);
        assert!(c.core.jobs().next().is_none());
    });
}

/// A job the core holds queued, released or started by someone else (an operator, or a
/// second gantry with another journal), is logged once, counted and held again; a job the
/// core preempted, still released or running until gantry's own hold lands, is not.
#[test]
fn a_queued_job_released_outside_gantry_is_logged_counted_and_held_again() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        // Four whole-node jobs fill the partition; jobs 5 and 6 queue behind them.
        let mut jobs: Vec<SlurmJob> = (1..=6).map(|id| held(id, "gres:gpu:8")).collect();
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        assert_eq!(starts(&cycle).len(), 4, "{:?}", cycle.actions);
        for id in 1..=4 {
            let on = pinned_nodes(&cycle, id);
            let on: Vec<&str> = on.iter().map(String::as_str).collect();
            jobs[id as usize - 1] = running(&jobs[id as usize - 1], &on);
        }
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 1_000);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert_eq!(cycle.released_outside, 0);
        // Job 5 is released by hand; job 6 is started on n1 beside job 1 by another scheduler.
        jobs[4] = SlurmJob {
            held: false,
            reason: "Resources".into(),
            ..jobs[4].clone()
        };
        jobs[5] = running(&jobs[5], &["n1"]);
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 2_000);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 5: released outside gantry while gantry held it queued"),
            "{text}"
        );
        assert!(
            text.contains("job 6: started outside gantry while gantry held it queued"),
            "{text}"
        );
        assert!(
            text.contains("a second scheduler on this partition"),
            "{text}"
        );
        assert_eq!(cycle.released_outside, 2);
        assert_eq!(kinds(&cycle), [(5, "hold"), (6, "requeue-hold")]);
        // Logged and counted once per job, however long it lasts.
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 3_000);
        assert_eq!(cycle.released_outside, 0);
        assert!(
            !cycle.notes.iter().any(|n| n.contains("outside gantry")),
            "{:?}",
            cycle.notes
        );
    });
}

/// The core's own preemption (a job released and not yet running when the core preempts
/// it, or running until its requeue lands) is not a release outside gantry.
#[test]
fn gantrys_own_preemption_is_not_a_release_outside_gantry() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        // Four whole-node jobs; job 1 is released but not yet running when its node goes
        // down: the core preempts it and, with no other node free, keeps it queued, so
        // Slurm shows a released job the core holds queued until gantry's hold lands.
        let mut jobs: Vec<SlurmJob> = (1..=4).map(|id| held(id, "gres:gpu:8")).collect();
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        let mut first = Vec::new();
        for id in 1..=4u32 {
            let on = pinned_nodes(&cycle, id);
            let on: Vec<&str> = on.iter().map(String::as_str).collect();
            let i = id as usize - 1;
            jobs[i] = if id == 1 {
                first = on.iter().map(|n| n.to_string()).collect();
                released(&jobs[i], &on)
            } else {
                running(&jobs[i], &on)
            };
        }
        let mut usable = [true; 4];
        usable[first[0].trim_start_matches('n').parse::<usize>().unwrap() - 1] = false;
        let cycle = c.observe(&snapshot(&jobs, usable), T0 + 1_000);
        assert_eq!(kinds(&cycle), [(1, "hold")], "{:?}", cycle.notes);
        assert_eq!(cycle.released_outside, 0, "{:?}", cycle.notes);
        assert!(
            !cycle.notes.iter().any(|n| n.contains("outside gantry")),
            "{:?}",
            cycle.notes
        );
    });
}

#[test]
fn a_start_that_keeps_failing_is_given_up_with_the_error_as_reason() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs = [held(1, "gres:gpu:2")];
        for attempt in 0..5u64 {
            let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + attempt * 500);
            assert_eq!(kinds(&cycle), [(1, "start")], "attempt {attempt}");
            c.action_done(
                &cycle.actions[0],
                T0,
                Err("Requested node configuration is not available".into()),
            );
        }
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 5_000);
        assert!(
            cycle
                .entries
                .iter()
                .any(|e| e.event == Event::Cancel(JobId(1)))
        );
        match &cycle.actions[..] {
            [Action::Reject { job: 1, reason }] => assert!(
                reason
                    .contains("could not start it after 5 attempts: Requested node configuration"),
                "{reason}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(c.core().jobs().is_empty());
    });
}

#[test]
fn a_job_larger_than_the_healthy_gpus_waits_for_nodes() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs = [held(1, "gres:gpu:8")];
        let mut whole = jobs[0].clone();
        whole.node_count = 4;
        let cycle = c.observe(&snapshot(&[whole.clone()], [true, true, true, false]), T0);
        assert!(
            cycle.actions.is_empty()
                && cycle
                    .entries
                    .iter()
                    .all(|e| !matches!(e.event, Event::Submit(_)))
        );
        assert!(
            cycle
                .notes
                .iter()
                .any(|n| n.contains("asks for 32 GPUs, 24 are up"))
        );
        let cycle = c.observe(&snapshot(&[whole], [true; 4]), T0 + 1_000);
        assert_eq!(starts(&cycle), [(1, "n1:8,n2:8,n3:8,n4:8".into())]);
    });
}

#[test]
fn resuming_from_the_journal_starts_nothing_twice_and_forgets_nothing() {
    big_stack(|| {
        let mut first = controller(OrderKind::Tias);
        let jobs = [
            held(1, "gres:gpu:4"),
            held(2, "gres:gpu:8"),
            held(3, "gres:gpu:4"),
        ];
        let cycle = first.observe(&snapshot(&jobs, [true; 4]), T0);
        let journal = cycle.entries.clone();
        let pins: Vec<Vec<String>> = (1..=3).map(|j| pinned_nodes(&cycle, j)).collect();
        let pin = |j: usize| pins[j].iter().map(String::as_str).collect::<Vec<_>>();
        // Killed after carrying out job 1's start only; job 4 arrived meanwhile.
        let now = [
            running(&jobs[0], &pin(0)),
            jobs[1].clone(),
            jobs[2].clone(),
            held(4, "gres:gpu:1"),
        ];
        drop(first);
        let mut second = controller(OrderKind::Tias);
        for entry in &journal {
            second.replay_entry(entry).unwrap();
        }
        let cycle = second.observe(&snapshot(&now, [true; 4]), T0 + 2_000);
        let submitted: Vec<u32> = cycle
            .entries
            .iter()
            .filter_map(|e| match e.event {
                Event::Submit(spec) => Some(spec.id.0),
                _ => None,
            })
            .collect();
        assert_eq!(submitted, [4], "only the new job is submitted");
        let started: Vec<u32> = starts(&cycle).iter().map(|(j, _)| *j).collect();
        assert!(!started.contains(&1), "job 1 already runs: {started:?}");
        assert!(started.contains(&2) && started.contains(&3), "{started:?}");
        assert_eq!(
            pinned_nodes(&cycle, 2),
            pins[1],
            "the journal's placement is kept"
        );
    });
}

#[test]
fn a_diverging_journal_entry_is_detected() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let cycle = c.observe(&snapshot(&[held(1, "gres:gpu:4")], [true; 4]), T0);
        let mut forged = cycle.entries[0].clone();
        forged.decisions.clear();
        let mut fresh = controller(OrderKind::Fifo);
        assert!(fresh.replay_entry(&forged).is_err());
    });
}

#[test]
fn the_lab_fixtures_reconcile_cleanly() {
    big_stack(|| {
        // Captured: job 1 on n2 (2 GPUs), job 2 on n1+n3 (5 GPUs per job, Slurm split 4+1),
        // held jobs 3-6, job 7 completed. gantry (fresh) did not start 1 and 2.
        let jobs = parse_squeue(SQUEUE_RUNNING).unwrap();
        let nodes = parse_sinfo(SINFO_MIXED).unwrap();
        let layout = ClusterLayout::discover("gpu", &nodes, "").unwrap();
        let mut c = Controller::new(
            layout,
            OrderKind::Tias,
            PlacerKind::BestFit,
            0,
            ControllerConfig::default(),
        )
        .unwrap();
        let cycle = c.observe(
            &Snapshot {
                jobs,
                nodes,
                ..Snapshot::default()
            },
            T0,
        );
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 1: RUNNING on n2 but not started by gantry"),
            "{text}"
        );
        assert!(
            text.contains("job 5: rejected: unparseable GPU request"),
            "{text}"
        );
        assert!(text.contains("job 6: rejected: asks for no GPU"), "{text}");
        // The GPUs jobs 1 and 2 hold (2 on n2; 4 + 1 on n1 and n3, Slurm's split) are out
        // of the core's view: job 3 fills n1's other 4, job 4 goes to n2, and neither
        // waits for GPUs Slurm will not give (before, the core packed both on n1 and job 4
        // waited for job 2 to end).
        assert_eq!(starts(&cycle), [(3, "n1:4".into()), (4, "n2:2".into())]);
        assert!(!text.contains("waits for Slurm to free GPUs"), "{text}");
        assert_eq!(c.core.healthy_gpu_count(), 32 - 7);
        // Down and drained nodes take their GPUs away.
        let down = parse_sinfo(SINFO_DOWN).unwrap();
        let cycle = c.observe(
            &Snapshot {
                jobs: vec![],
                nodes: down,
                ..Snapshot::default()
            },
            T0 + 1_000,
        );
        assert_eq!(c.core().healthy_gpu_count(), 16);
        assert!(
            cycle
                .notes
                .iter()
                .any(|n| n.contains("node n4 is IDLE+DRAIN (maintenance)"))
        );
    });
}

#[test]
fn a_start_waits_while_slurm_has_no_room_and_holds_back_no_other() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs = [held(1, "gres:gpu:8"), held(2, "gres:gpu:1")];
        // Slurm still counts 2 GPUs in use on n1 (a requeued job completing there) while
        // the core sees all 32 free.
        let mut busy = snapshot(&jobs, [true; 4]);
        busy.nodes[0].gres_used = "gpu:(null):2(IDX:0-1)".into();
        let cycle = c.observe(&busy, T0);
        // Job 2's GPUs are free in Slurm: it is released, job 1 waits alone.
        assert_eq!(kinds(&cycle), [(2, "start")]);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 1: waits for Slurm to free GPUs on n1: Slurm has 6 free, the start on n1:8 needs 8"),
            "{text}"
        );
        // The same reason is not logged twice.
        let cycle = c.observe(&busy, T0 + 100);
        assert!(
            !cycle.notes.iter().any(|n| n.contains("job 1:")),
            "{:?}",
            cycle.notes
        );
        // Slurm's count is down while the node still completes that job (its GPUs are
        // free in Slurm's count at the job's end, before the epilog is done): job 1 is
        // released onto it, and Slurm starts it once the node is done.
        busy.nodes[0].gres_used = "gpu:0".into();
        busy.nodes[0].states.push("COMPLETING".into());
        let cycle = c.observe(&busy, T0 + 250);
        assert_eq!(kinds(&cycle), [(1, "start"), (2, "start")]);
        assert_eq!(pinned_nodes(&cycle, 1), ["n1"]);
    });
}

#[test]
fn an_uneven_start_waits_for_a_completing_node_without_epilog_acks_an_even_one_does_not() {
    big_stack(|| {
        // n1 completes a job: Slurm's count shows all its GPUs free.
        let nodes = nodes([true; 4]);
        let uneven = plan(1, &[("n1", 3), ("n2", 1)]);
        let even = plan(2, &[("n1", 4)]);
        let room: BTreeMap<String, i64> = nodes.iter().map(|n| (n.name.clone(), 8)).collect();
        let completing = BTreeSet::from(["n1"]);
        // With acks the epilog ends right after this cycle's releases, so the uneven start
        // goes in the pass its end runs, on the counts it was released on.
        let acks = || controller_with(OrderKind::Fifo, with_epilog_acks());
        let cases = [
            (controller(OrderKind::Fifo), uneven.clone(), true),
            (controller(OrderKind::Fifo), even.clone(), false),
            (acks(), uneven, false),
            (acks(), even, false),
        ];
        for (mut c, start, waits) in cases {
            let mut cycle = Cycle::default();
            let starts = vec![(u64::from(start.job), start.clone())];
            c.release_in_order(
                starts,
                room.clone(),
                &completing,
                BTreeSet::new(),
                &mut cycle,
            );
            let started = cycle
                .actions
                .iter()
                .any(|a| matches!(a, Action::Start(p) if p.job == start.job));
            assert_eq!(started, !waits, "{:?} {:?}", cycle.actions, cycle.notes);
            if waits {
                assert!(
                    cycle.notes.join("\n").contains("job 1: waits for node n1: Slurm completes a job there, and splits this uneven start (n1:3,n2:1) only when it starts it"),
                    "{:?}",
                    cycle.notes
                );
            }
        }
    });
}

#[test]
fn an_uneven_start_whose_begin_time_is_ahead_is_released_only_at_its_begin_time() {
    big_stack(|| {
        // Seen on the lab (seed 42, edf), before gantry skipped a requeued job's wait on its
        // old nodes: job 10, restarted by the core on n1:1,n4:3, was released at once but
        // started only at its begin time, 10 s later; a GPU freed on n1 meanwhile, Slurm
        // split it n1:2,n4:2, and the next start on n1 waited 19 s for a GPU Slurm had
        // given job 10. A begin time gantry does not skip (a `--begin`) splits so still.
        let room: BTreeMap<String, i64> = [("n1", 1), ("n2", 8), ("n3", 8), ("n4", 3)]
            .iter()
            .map(|(n, f)| (n.to_string(), *f))
            .collect();
        let waiting = |p: StartPlan| StartPlan {
            begin_time_ahead: true,
            ..p
        };
        let uneven = plan(10, &[("n1", 1), ("n4", 3)]);
        let even = plan(11, &[("n2", 4)]);
        let cases = [
            (waiting(uneven.clone()), false),
            (uneven, true),
            (waiting(even.clone()), true),
            (even, true),
        ];
        for (start, released) in cases {
            let mut c = controller(OrderKind::Fifo);
            let mut cycle = Cycle::default();
            let job = start.job;
            let starts = vec![(u64::from(job), start.clone())];
            c.release_in_order(
                starts,
                room.clone(),
                &BTreeSet::new(),
                BTreeSet::new(),
                &mut cycle,
            );
            let started = kinds(&cycle) == [(job, "start")];
            assert_eq!(started, released, "{start:?}: {:?}", cycle.notes);
            if !released {
                assert!(
                    cycle.notes.join("\n").contains(
                        "job 10: waits for its begin time: Slurm starts it on n1:1,n4:3 only then"
                    ),
                    "{:?}",
                    cycle.notes
                );
            }
        }
    });
}

#[test]
fn a_start_onto_a_node_whose_job_is_requeued_this_cycle_waits() {
    big_stack(|| {
        let first = [held(1, "gres:gpu:8")];
        let (mut c, cycle) = fifo_released(&first[0]);
        let placed = pinned_nodes(&cycle, 1)[0].clone();
        let placed_index = placed[1..].parse::<usize>().unwrap() - 1;
        let other_index = (placed_index + 1) % 4;
        let other = format!("n{}", other_index + 1);
        let mut usable = [false; 4];
        usable[placed_index] = true;
        usable[other_index] = true;
        // Slurm runs job 1 on the other node (an admin moved it): gantry requeues it, and
        // the core puts job 2 on that node, the only free one. Slurm's count shows room,
        // but the requeue turns the node COMPLETING: job 2 waits for the next cycle.
        let jobs = [running(&first[0], &[&other]), held(2, "gres:gpu:8")];
        let cycle = c.observe(&snapshot(&jobs, usable), T0 + 1_000);
        assert_eq!(kinds(&cycle), [(1, "requeue-hold")]);
        c.action_done(&cycle.actions[0], T0 + 1_000, Ok(()));
        assert!(
            cycle.notes.join("\n").contains(&format!(
                "job 2: waits for Slurm to free GPUs on {other}: Slurm has 0 free"
            )),
            "{:?}",
            cycle.notes
        );
        let requeued = [
            SlurmJob {
                state: JobStateName::Pending,
                held: true,
                restart_count: 1,
                ..jobs[0].clone()
            },
            jobs[1].clone(),
        ];
        let cycle = c.observe(&snapshot(&requeued, usable), T0 + 2_000);
        assert_eq!(starts(&cycle).len(), 2, "{:?}", cycle.actions);
        assert!(starts(&cycle).contains(&(2, format!("{other}:8"))));
    });
}

#[test]
fn later_starts_do_not_wait_for_earlier_releases_to_run() {
    big_stack(|| {
        let first = [held(1, "gres:gpu:8")];
        let (mut c, cycle) = fifo_released(&first[0]);
        let on = pinned_nodes(&cycle, 1);
        let on: Vec<&str> = on.iter().map(String::as_str).collect();
        // Job 1 released but not running yet when job 2 arrives: its GPUs are free in
        // Slurm (job 1's are counted taken), so it is released at once.
        let jobs = vec![released(&first[0], &on), held(2, "gres:gpu:8")];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 200);
        assert_eq!(kinds(&cycle), [(2, "start")]);
        assert_ne!(pinned_nodes(&cycle, 2), on);
    });
}

#[test]
fn a_job_requeued_outside_gantry_has_slurms_requeue_wait_lifted_after_the_margin() {
    big_stack(|| {
        let jobs = [held(1, "gres:gpu:8")];
        let (mut c, cycle) = fifo_released(&jobs[0]);
        let node = pinned_nodes(&cycle, 1)[0].clone();
        c.observe(
            &snapshot(&[running(&jobs[0], &[&node])], [true; 4]),
            T0 + 500,
        );
        // An operator's `scontrol requeue`: pending where gantry put it, not held, waiting
        // for the begin time Slurm set 121 s ahead; the core still runs it.
        let requeued_at = T0 + 1_000;
        let requeued = SlurmJob {
            restart_count: 1,
            reason: "BeginTime".into(),
            start_s: requeued_at / 1000 + 121,
            ..released(&jobs[0], &[&node])
        };
        for (now, lifted) in [
            (requeued_at, false),
            (requeued_at + REVOKED_CREDENTIAL_MARGIN_MS - 1, false),
            (requeued_at + REVOKED_CREDENTIAL_MARGIN_MS, true),
        ] {
            let cycle = c.observe(&snapshot(std::slice::from_ref(&requeued), [true; 4]), now);
            if lifted {
                assert_eq!(kinds(&cycle), [(1, "lift")], "{:?}", cycle.notes);
            } else {
                assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
            }
            if now == requeued_at {
                let notes = cycle.notes.join("\n");
                assert!(notes.contains("Slurm requeued it"), "{notes}");
                assert!(
                    notes.contains(&format!(
                        "job 1: requeued outside gantry, pending on {node}:8 in Slurm's requeue wait"
                    )),
                    "{notes}"
                );
            }
        }
        // Lifted: its begin time is now, no wait is left and nothing more is done.
        let lifted = SlurmJob {
            reason: "None".into(),
            start_s: (requeued_at + REVOKED_CREDENTIAL_MARGIN_MS) / 1000,
            ..requeued.clone()
        };
        let cycle = c.observe(
            &snapshot(&[lifted], [true; 4]),
            requeued_at + REVOKED_CREDENTIAL_MARGIN_MS + 200,
        );
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        // A job with a begin time of its own (`--begin`), never requeued, keeps it.
        let (mut d, cycle) = fifo_released(&jobs[0]);
        let begins = SlurmJob {
            reason: "BeginTime".into(),
            start_s: T0 / 1000 + 600,
            ..released(&jobs[0], &[&pinned_nodes(&cycle, 1)[0]])
        };
        let cycle = d.observe(&snapshot(&[begins], [true; 4]), T0 + 10_000);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
    });
}

#[test]
fn a_requeued_job_skips_the_requeue_wait_on_other_nodes_at_once_and_on_its_old_ones_after_the_margin()
 {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs = [held(1, "gres:gpu:8")];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        let node = pinned_nodes(&cycle, 1)[0].clone();
        let index = node[1..].parse::<usize>().unwrap() - 1;
        let mut down = [true; 4];
        down[index] = false;
        // Seen running on `node`, which then goes down: Slurm requeues it (held here, as
        // after a launch failure), the core moves it elsewhere.
        c.observe(
            &snapshot(&[running(&jobs[0], &[&node])], [true; 4]),
            T0 + 500,
        );
        let mut requeued = jobs[0].clone();
        requeued.restart_count = 1;
        let cycle = c.observe(&snapshot(&[requeued.clone()], down), T0 + 1_000);
        match &cycle.actions[..] {
            [Action::Start(plan)] => {
                assert!(!plan.shape.iter().any(|(n, _)| *n == node));
                assert!(
                    plan.start_now && !plan.credential_wait,
                    "other nodes: no credential was revoked there"
                );
            }
            other => panic!("{other:?}"),
        }
        // Only its old node left: the restart waits until the requeue gantry saw is
        // REVOKED_CREDENTIAL_MARGIN_MS old (the first sight of a restart count above 0
        // counts as the requeue's), then skips Slurm's wait there too.
        let mut only_old = [false; 4];
        only_old[index] = true;
        let mut fresh = controller(OrderKind::Fifo);
        fresh.observe(&snapshot(&[running(&jobs[0], &[&node])], [true; 4]), T0);
        // Slurm shows the begin time, 121 s ahead, as the held job's start time.
        requeued.start_s = (T0 + 1_000) / 1000 + 121;
        let seen = T0 + 1_000;
        for (now, released) in [
            (seen, false),
            (seen + REVOKED_CREDENTIAL_MARGIN_MS - 1, false),
            (seen + REVOKED_CREDENTIAL_MARGIN_MS, true),
        ] {
            let cycle = fresh.observe(&snapshot(&[requeued.clone()], only_old), now);
            let plans: Vec<&StartPlan> = cycle
                .actions
                .iter()
                .filter_map(|a| match a {
                    Action::Start(p) => Some(p),
                    _ => None,
                })
                .collect();
            if released {
                assert!(
                    plans.len() == 1 && plans.iter().all(|p| p.start_now),
                    "{plans:?}"
                );
                assert_eq!(plans[0].shape, [(node.clone(), 8)]);
            } else {
                assert!(plans.is_empty(), "{:?}", cycle.actions);
                assert!(
                    cycle.notes.join("\n").contains(&format!(
                        "job 1: waits until 2.0 s after its requeue to restart on {node}:8, nodes it ran on"
                    )) || now > seen,
                    "{:?}",
                    cycle.notes
                );
            }
        }
    });
}

#[test]
fn an_uneven_split_is_filled_in_node_order_and_released_when_slurm_splits_it_so() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let mut three = held(5, "");
        three.tres_per_job = "gres:gpu:3".into();
        let mut jobs: Vec<SlurmJob> = (1..=4).map(|id| held(id, "gres:gpu:6")).collect();
        jobs.push(three);
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        // Jobs 1-4 take 6 GPUs of each node; job 5's 3 GPUs must span nodes: the core
        // fills them in node order (a whole node's 2 free GPUs, then 1), as Slurm splits
        // a per-job count. Released onto nodes whose releases have not run yet, it waits.
        assert_eq!(
            starts(&cycle).iter().map(|(j, _)| *j).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        let gpus = c.core().placement_of(JobId(5));
        let shape = c.layout().shape(gpus.as_slice());
        let free: Vec<i64> = shape.iter().map(|_| 2).collect();
        assert_eq!(
            crate::slurm::shape::cons_tres_split(&shape, &free).as_deref(),
            Some(shape.as_slice()),
            "{shape:?}"
        );
        assert!(is_uneven(&shape), "{shape:?}");
        assert!(
            cycle
                .notes
                .iter()
                .any(|n| n.contains("job 5: waits until the jobs released onto")),
            "{:?}",
            cycle.notes
        );
        for a in &cycle.actions {
            c.action_done(a, T0, Ok(()));
        }
        for id in 1..=4 {
            let on = pinned_nodes(&cycle, id);
            jobs[id as usize - 1] = running(&jobs[id as usize - 1], &[&on[0]]);
        }
        let mut snap = snapshot(&jobs, [true; 4]);
        for n in &mut snap.nodes {
            n.gres_used = "gpu:6".into();
        }
        let cycle = c.observe(&snap, T0 + 500);
        let released = starts(&cycle);
        assert_eq!(released, [(5, shape_text(&shape))]);
    });
}

#[test]
fn a_restart_in_the_same_cycle_on_the_same_nodes_keeps_its_place() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let start = |job: u32, gpus: &[u16]| {
            let mut set = gantry_core::placement::GpuSet::new();
            for &g in gpus {
                set.insert(GpuId(g)).unwrap();
            }
            HostDecision::Start {
                job: JobId(job),
                gpus: set,
            }
        };
        let preempt = |job: u32| HostDecision::Preempt {
            job: JobId(job),
            reason: gantry_core::PreemptReason::Priority,
        };
        c.sequence(100, &[start(1, &[0]), start(2, &[8])]);
        // Same cycle, same node: job 1 keeps its place before job 2.
        c.sequence(100, &[preempt(1), start(1, &[1])]);
        assert!(c.seq(1) < c.seq(2));
        // Another node, or a later cycle: a new start, after job 2.
        c.sequence(100, &[preempt(1), start(1, &[9])]);
        assert!(c.seq(1) > c.seq(2));
        c.sequence(100, &[preempt(2)]);
        c.sequence(200, &[start(2, &[8])]);
        assert!(c.seq(2) > c.seq(1));
    });
}

/// Job 1 (2 GPUs) started by a FIFO controller and seen running (at `T0 + 200`), and the
/// job as Slurm shows it once an operator requeue-held it: pending, held with `reason`,
/// restarted once.
fn started_then_requeue_held(reason: &str) -> (Controller, SlurmJob) {
    let job = held(1, "gres:gpu:2");
    let (mut c, cycle) = fifo_released(&job);
    let on = pinned_nodes(&cycle, 1);
    let on: Vec<&str> = on.iter().map(String::as_str).collect();
    c.observe(&snapshot(&[running(&job, &on)], [true; 4]), T0 + 200);
    let requeued = SlurmJob {
        state: JobStateName::Pending,
        held: true,
        reason: reason.into(),
        restart_count: 1,
        ..released(&job, &on)
    };
    (c, requeued)
}

#[test]
fn an_operator_hold_takes_the_job_out_until_released() {
    big_stack(|| {
        // `scontrol requeuehold 1` by an operator: pending, held (Slurm 22.05 shows the
        // job's old user-hold reason: seen on the lab).
        let (mut c, requeued) = started_then_requeue_held("JobHeldUser");
        let cycle = c.observe(
            &snapshot(std::slice::from_ref(&requeued), [true; 4]),
            T0 + 400,
        );
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert!(c.core().job(JobId(1)).is_none(), "the core let it go");
        assert!(
            cycle
                .notes
                .join("\n")
                .contains("job 1: held by an operator (JobHeldUser)"),
            "{:?}",
            cycle.notes
        );
        // Still held: nothing, no second note.
        let cycle = c.observe(
            &snapshot(std::slice::from_ref(&requeued), [true; 4]),
            T0 + 600,
        );
        assert!(
            cycle.actions.is_empty() && cycle.notes.is_empty(),
            "{cycle:?}"
        );
        // Released by the operator: gantry holds it (user hold), then schedules it.
        let freed = SlurmJob {
            held: false,
            reason: "BeginTime".into(),
            ..requeued.clone()
        };
        let cycle = c.observe(&snapshot(&[freed], [true; 4]), T0 + 800);
        assert_eq!(kinds(&cycle), [(1, "hold")]);
        assert_eq!(
            cycle.actions[0].commands(&JobNames::default())[0],
            ["scontrol", "uhold", "1"].map(String::from)
        );
        let user_held = SlurmJob {
            reason: "JobHeldUser".into(),
            ..requeued
        };
        // It restarts on the node it ran on: once its requeue (seen at T0 + 400) is old
        // enough for that node's slurmd to take a new credential.
        let cycle = c.observe(
            &snapshot(std::slice::from_ref(&user_held), [true; 4]),
            T0 + 1_000,
        );
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        let cycle = c.observe(
            &snapshot(&[user_held], [true; 4]),
            T0 + 400 + REVOKED_CREDENTIAL_MARGIN_MS,
        );
        assert_eq!(kinds(&cycle), [(1, "start")]);
    });
}

#[test]
fn gantrys_own_requeue_hold_is_not_an_operators() {
    big_stack(|| {
        let jobs = [held(1, "gres:gpu:2")];
        let (mut c, cycle) = fifo_released(&jobs[0]);
        let on = pinned_nodes(&cycle, 1);
        let on: Vec<&str> = on.iter().map(String::as_str).collect();
        c.observe(&snapshot(&[running(&jobs[0], &on)], [true; 4]), T0 + 200);
        // The node goes down: the core preempts job 1, gantry requeue-holds it (Slurm's
        // requeuehold leaves an administrator hold), which gantry turns into a user hold.
        let mut down = [true; 4];
        down[on[0][1..].parse::<usize>().unwrap() - 1] = false;
        let admin = SlurmJob {
            state: JobStateName::Pending,
            held: true,
            reason: "JobHeldAdmin".into(),
            restart_count: 1,
            ..released(&jobs[0], &on)
        };
        let cycle = c.observe(&snapshot(&[admin], down), T0 + 400);
        assert!(c.core().job(JobId(1)).is_some(), "{:?}", cycle.notes);
        assert!(
            !cycle.notes.iter().any(|n| n.contains("operator")),
            "{:?}",
            cycle.notes
        );
    });
}

#[test]
fn a_requeued_job_gantry_holds_is_held_once_though_slurm_shows_its_begin_time() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs: Vec<SlurmJob> = (1..=4).map(|id| held(id, "gres:gpu:8")).collect();
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        assert_eq!(cycle.actions.len(), 4);
        let mut on = Vec::new();
        for action in &cycle.actions {
            c.action_done(action, T0, Ok(()));
            on.push(pinned_nodes(&cycle, action.job()));
        }
        let run: Vec<SlurmJob> = jobs
            .iter()
            .zip(&on)
            .map(|(j, n)| running(j, &[n[0].as_str()]))
            .collect();
        c.observe(&snapshot(&run, [true; 4]), T0 + 200);
        // Job 1's node goes down; Slurm requeued it, gantry's requeuehold holds it. Every
        // other node is full: it waits in the core.
        let mut down = [true; 4];
        down[on[0][0][1..].parse::<usize>().unwrap() - 1] = false;
        let requeued = |reason: &str| SlurmJob {
            state: JobStateName::Pending,
            held: true,
            reason: reason.into(),
            restart_count: 1,
            nodes: Vec::new(),
            ..run[0].clone()
        };
        let mut now = run.clone();
        now[0] = requeued("JobHeldAdmin");
        let cycle = c.observe(&snapshot(&now, down), T0 + 400);
        assert_eq!(kinds(&cycle), [(1, "hold")], "{:?}", cycle.notes);
        c.action_done(&cycle.actions[0], T0 + 400, Ok(()));
        // Slurm shows the held job's future begin time as its reason: still gantry's hold.
        now[0] = requeued("BeginTime");
        for at in [T0 + 600, T0 + 800] {
            let cycle = c.observe(&snapshot(&now, down), at);
            assert!(
                cycle.actions.is_empty() && cycle.notes.is_empty(),
                "{cycle:?}"
            );
        }
        assert!(c.core().job(JobId(1)).is_some());
        // An operator's `scontrol hold` then is the operator's.
        now[0] = requeued("JobHeldAdmin");
        let cycle = c.observe(&snapshot(&now, down), T0 + 1_000);
        assert!(c.core().job(JobId(1)).is_none(), "{cycle:?}");
        assert!(
            cycle
                .notes
                .iter()
                .any(|n| n.contains("job 1: held by an operator (JobHeldAdmin)")),
            "{:?}",
            cycle.notes
        );
        assert!(!cycle.actions.iter().any(|a| a.job() == 1), "{cycle:?}");
    });
}

#[test]
fn a_time_limit_past_the_deadline_is_refused_before_release() {
    big_stack(|| {
        let mut c = controller(OrderKind::Edf);
        let now_s = T0 / 1000;
        let mut late = held(1, "gres:gpu:1");
        late.deadline_s = Some(now_s + 120);
        late.time_limit_min = Some(5);
        let mut fits = held(2, "gres:gpu:1");
        fits.deadline_s = Some(now_s + 120);
        fits.time_limit_min = Some(1);
        let cycle = c.observe(&snapshot(&[late, fits], [true; 4]), T0);
        assert_eq!(kinds(&cycle), [(1, "reject"), (2, "start")]);
        match &cycle.actions[0] {
            Action::Reject { reason, .. } => {
                assert!(
                    reason.starts_with(
                        "its time limit (5 min) from now ends 180 s after its --deadline"
                    ),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(cycle.outcomes.len(), 1);
        assert_eq!(cycle.outcomes[0].state, "CANCELLED");
        // The core saw a cancellation: a deadline job that did not finish.
        assert!(
            cycle
                .entries
                .iter()
                .any(|e| e.event == Event::Cancel(JobId(1)))
        );
    });
}

#[test]
fn a_user_cancel_is_logged_and_ends_the_job_as_cancelled() {
    big_stack(|| {
        let jobs = [held(1, "gres:gpu:2")];
        let (mut c, cycle) = fifo_released(&jobs[0]);
        let on = pinned_nodes(&cycle, 1);
        let on: Vec<&str> = on.iter().map(String::as_str).collect();
        let run = running(&jobs[0], &on);
        c.observe(&snapshot(std::slice::from_ref(&run), [true; 4]), T0 + 200);
        let cycle = c.observe(
            &snapshot(
                &[ended(&run, JobStateName::Ended("CANCELLED".into()))],
                [true; 4],
            ),
            T0 + 400,
        );
        assert!(
            cycle.notes.join("\n").contains(
                "job 1: cancelled in Slurm (scancel by its user or an operator) (CANCELLED); gantry drops it"
            ),
            "{:?}",
            cycle.notes
        );
        assert!(
            cycle
                .entries
                .iter()
                .any(|e| e.event == Event::Cancel(JobId(1)))
        );
    });
}

#[test]
fn a_job_gantry_requeue_held_and_started_again_is_not_an_operators_hold() {
    big_stack(|| {
        let jobs = [held(1, "gres:gpu:2")];
        let (mut c, cycle) = fifo_released(&jobs[0]);
        let on = pinned_nodes(&cycle, 1);
        let on: Vec<&str> = on.iter().map(String::as_str).collect();
        // Runs elsewhere: gantry requeue-holds it (and the core still runs it).
        let other = if on[0] == "n4" { "n3" } else { "n4" };
        let cycle = c.observe(
            &snapshot(&[running(&jobs[0], &[other])], [true; 4]),
            T0 + 200,
        );
        assert_eq!(kinds(&cycle), [(1, "requeue-hold")]);
        c.action_done(&cycle.actions[0], T0 + 200, Ok(()));
        // Requeued with the old user-hold reason, and Slurm's count still lags: the
        // start waits, and the hold is gantry's, not an operator's.
        let requeued = SlurmJob {
            state: JobStateName::Pending,
            held: true,
            reason: "JobHeldUser".into(),
            restart_count: 1,
            ..released(&jobs[0], &on)
        };
        let mut snap = snapshot(std::slice::from_ref(&requeued), [true; 4]);
        for n in &mut snap.nodes {
            n.gres_used = "gpu:8".into();
        }
        let cycle = c.observe(&snap, T0 + 400);
        assert!(c.core().job(JobId(1)).is_some(), "{:?}", cycle.notes);
        assert!(
            !cycle.notes.iter().any(|n| n.contains("operator")),
            "{:?}",
            cycle.notes
        );
        let cycle = c.observe(
            &snapshot(std::slice::from_ref(&requeued), [true; 4]),
            T0 + 600,
        );
        assert_eq!(kinds(&cycle), [(1, "start")]);
    });
}

/// A start for `job` on `shape` (as the core placed it), held until released.
fn plan(job: u32, shape: &[(&str, u16)]) -> StartPlan {
    StartPlan {
        job,
        shape: shape.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
        gpu_type: None,
        other_per_node: Vec::new(),
        had_per_job: true,
        had_per_node_gpus: false,
        had_per_task: false,
        release: true,
        start_now: false,
        credential_wait: false,
        begin_time_ahead: false,
    }
}

/// The split blocks of `plans` given Slurm's `room`, as `desired` hands them over.
fn blocked(plans: Vec<StartPlan>, room: &BTreeMap<String, i64>) -> Vec<SplitBlocked> {
    plans
        .into_iter()
        .map(|p| {
            let split = crate::slurm::shape::cons_tres_split(&p.shape, &node_room(room, &p.shape));
            assert_ne!(split.as_deref(), Some(p.shape.as_slice()), "{p:?}");
            (p, split)
        })
        .collect()
}

#[test]
fn uneven_starts_that_wait_for_each_others_gpus_release_the_first_with_slurms_split() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        // Seen on the lab after a node went down: job 24 was placed on n1:2,n2:4,n3:2 (n1's
        // 2 free GPUs in full), job 36 later on n1:3,n3:5 (n1's 3 then free, in full). Slurm
        // counts both jobs' GPUs free on n1 (5): each split puts 5 there, neither is
        // gantry's, and neither changes while the other waits.
        let room: BTreeMap<String, i64> = [("n1", 5), ("n2", 4), ("n3", 7), ("n4", 8)]
            .iter()
            .map(|(n, f)| (n.to_string(), *f))
            .collect();
        let plans = vec![
            plan(24, &[("n1", 2), ("n2", 4), ("n3", 2)]),
            plan(36, &[("n1", 3), ("n3", 5)]),
        ];
        let mut cycle = Cycle::default();
        let mut left = room.clone();
        let mut busy = BTreeSet::new();
        // (Some other start waits for Slurm's count elsewhere: `moving`.)
        c.split_blocked(
            &mut cycle,
            blocked(plans.clone(), &room),
            true,
            &mut left,
            &mut busy,
        );
        // The first in the core's order goes, with the split Slurm makes; the other waits.
        assert_eq!(kinds(&cycle), [(24, "start")]);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains(
                "job 24: released with Slurm's split n1:5,n2:2,n3:1 (gantry chose n1:2,n2:4,n3:2)"
            ),
            "{text}"
        );
        assert!(
            text.contains("job 36: waits until the jobs released onto n1:3,n3:5 run"),
            "{text}"
        );
        assert_eq!(left["n1"], 0, "Slurm's split taken from the room: {left:?}");
        assert_eq!(left["n2"], 2);
        // Another start released this cycle onto these nodes changes Slurm's counts: both
        // wait for it to run.
        let mut cycle = Cycle::default();
        let mut busy: BTreeSet<String> = ["n3".to_string()].into();
        c.split_blocked(
            &mut cycle,
            blocked(plans, &room),
            true,
            &mut room.clone(),
            &mut busy,
        );
        assert!(kinds(&cycle).is_empty(), "{:?}", cycle.actions);
        // One uneven start whose split differs for another reason (here Slurm counts 2 GPUs
        // on n1 more than any waiting start holds, as after a job it split otherwise) while
        // other starts wait for Slurm's count: those can still change it, so it waits.
        let mut wider = room.clone();
        wider.insert("n1".into(), 4);
        let mut cycle = Cycle::default();
        let alone = vec![plan(24, &[("n1", 2), ("n2", 4), ("n3", 2)])];
        c.split_blocked(
            &mut cycle,
            blocked(alone.clone(), &wider),
            true,
            &mut wider.clone(),
            &mut BTreeSet::new(),
        );
        assert!(kinds(&cycle).is_empty(), "{:?}", cycle.actions);
        assert!(
            cycle
                .notes
                .join("\n")
                .contains("job 24: waits: Slurm would split it as n1:4,n2:3,n3:1"),
            "{:?}",
            cycle.notes
        );
        // Nothing else left that could change Slurm's counts: it goes with Slurm's split.
        let mut cycle = Cycle::default();
        c.split_blocked(
            &mut cycle,
            blocked(alone, &wider),
            false,
            &mut wider.clone(),
            &mut BTreeSet::new(),
        );
        assert_eq!(kinds(&cycle), [(24, "start")]);
        assert!(
            cycle
                .notes
                .join("\n")
                .contains("job 24: released with Slurm's split n1:4,n2:3,n3:1"),
            "{:?}",
            cycle.notes
        );
    });
}

/// Job 1 takes every GPU (`--gpus=32`, marked as the test says), runs, then job 2 with a
/// deadline arrives: EDF ranks it first. Returns the actions of that cycle.
fn edf_preemption_of(requeue: bool, comment: &str, marker: &str) -> Vec<(u32, &'static str)> {
    let config = ControllerConfig {
        checkpoint_marker: marker.parse().unwrap(),
        preempt_grace_ms: 0,
        ..ControllerConfig::default()
    };
    let mut c = controller_with(OrderKind::Edf, config);
    let big = SlurmJob {
        tres_per_job: "gres:gpu:32".into(),
        tres_per_node: String::new(),
        requeue,
        comment: comment.into(),
        ..held(1, "")
    };
    let cycle = c.observe(&snapshot(std::slice::from_ref(&big), [true; 4]), T0);
    assert_eq!(kinds(&cycle), [(1, "start")]);
    let all = ["n1", "n2", "n3", "n4"];
    let urgent = SlurmJob {
        deadline_s: Some(T0 / 1000 + 600),
        ..held(2, "gres:gpu:8")
    };
    let cycle = c.observe(
        &snapshot(&[running(&big, &all), urgent], [true; 4]),
        T0 + 5_000,
    );
    kinds(&cycle)
}

#[test]
fn only_a_requeueable_job_with_the_checkpoint_marker_is_preempted() {
    big_stack(|| {
        // Marked and requeueable: the core preempts it for the deadline job.
        assert_eq!(
            edf_preemption_of(true, "gantry:checkpoint", "gantry:checkpoint"),
            [(1, "requeue-hold")]
        );
        // Another site's marker.
        assert_eq!(
            edf_preemption_of(true, "ckpt", "comment:ckpt"),
            [(1, "requeue-hold")]
        );
        // Not requeueable, not marked, or marked for another site: it runs to completion
        // and the deadline job waits.
        for (requeue, comment, marker) in [
            (false, "gantry:checkpoint", "gantry:checkpoint"),
            (true, "", "gantry:checkpoint"),
            (true, "gantry:checkpoint", "qos:preemptible"),
        ] {
            assert_eq!(
                edf_preemption_of(requeue, comment, marker),
                [],
                "{requeue} {comment:?} {marker}"
            );
        }
    });
}

#[test]
fn the_min_run_quantum_keeps_a_checkpointing_job_running_until_it_ends() {
    big_stack(|| {
        let config = ControllerConfig {
            min_run_ms: 60_000,
            preempt_grace_ms: 0,
            ..ControllerConfig::default()
        };
        let mut c = controller_with(OrderKind::Edf, config);
        let big = SlurmJob {
            tres_per_job: "gres:gpu:32".into(),
            tres_per_node: String::new(),
            requeue: true,
            comment: "gantry:checkpoint".into(),
            ..held(1, "")
        };
        c.observe(&snapshot(std::slice::from_ref(&big), [true; 4]), T0);
        let all = ["n1", "n2", "n3", "n4"];
        let urgent = SlurmJob {
            deadline_s: Some(T0 / 1000 + 600),
            ..held(2, "gres:gpu:8")
        };
        let jobs = [running(&big, &all), urgent];
        // Inside its 60 s quantum: not preempted.
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 5_000);
        assert_eq!(kinds(&cycle), []);
        // Once the quantum is over (the core asks for a review then): preempted.
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 61_000);
        assert_eq!(kinds(&cycle), [(1, "requeue-hold")]);
    });
}

/// The EDF scene of [`edf_preemption_of`] with a marked job and a 10 s grace period:
/// returns the controller, the running big job and the deadline job.
fn graced() -> (Controller, SlurmJob, SlurmJob) {
    let config = ControllerConfig {
        preempt_grace_ms: 10_000,
        preempt_signal: "USR1".into(),
        ..ControllerConfig::default()
    };
    let mut c = controller_with(OrderKind::Edf, config);
    let big = SlurmJob {
        tres_per_job: "gres:gpu:32".into(),
        tres_per_node: String::new(),
        requeue: true,
        comment: "gantry:checkpoint".into(),
        ..held(1, "")
    };
    c.observe(&snapshot(std::slice::from_ref(&big), [true; 4]), T0);
    let urgent = SlurmJob {
        deadline_s: Some(T0 / 1000 + 600),
        ..held(2, "gres:gpu:8")
    };
    (c, running(&big, &["n1", "n2", "n3", "n4"]), urgent)
}

/// Slurm's count of used GPUs while the big job holds every GPU.
fn all_used() -> Vec<SlurmNode> {
    nodes([true; 4])
        .into_iter()
        .map(|n| SlurmNode {
            gres_used: "gpu:8".into(),
            states: vec!["ALLOCATED".into()],
            ..n
        })
        .collect()
}

#[test]
fn a_preemption_signals_first_and_requeues_after_the_grace_period() {
    big_stack(|| {
        let (mut c, big, urgent) = graced();
        let jobs = [big.clone(), urgent.clone()];
        let at = |c: &mut Controller, t: u64| {
            let s = Snapshot {
                jobs: jobs.to_vec(),
                nodes: all_used(),
                ..Snapshot::default()
            };
            c.observe(&s, T0 + t)
        };
        let cycle = at(&mut c, 5_000);
        assert_eq!(
            cycle.actions,
            [Action::Signal {
                job: 1,
                signal: "USR1".into()
            }]
        );
        assert_eq!(c.grace().get(&1), Some(&(T0 + 5_000)));
        // The core gave job 2 the GPUs, but Slurm still counts them used: no start yet
        // (nothing runs twice), no second signal, no requeue inside the grace period.
        for t in [5_200, 9_000, 14_900] {
            let cycle = at(&mut c, t);
            assert_eq!(kinds(&cycle), [], "at {t}");
        }
        let cycle = at(&mut c, 15_000);
        let requeue = Action::RequeueHold { job: 1 };
        assert_eq!(cycle.actions, std::slice::from_ref(&requeue));
        c.action_done(&requeue, T0 + 15_000, Ok(()));
        assert!(c.grace().is_empty());
    });
}

#[test]
fn a_job_that_ends_in_its_grace_period_is_requeued_not_finished() {
    big_stack(|| {
        let (mut c, big, urgent) = graced();
        let cycle = c.observe(
            &Snapshot {
                jobs: vec![big.clone(), urgent.clone()],
                nodes: all_used(),
                ..Snapshot::default()
            },
            T0 + 5_000,
        );
        assert_eq!(kinds(&cycle), [(1, "signal")]);
        // It saved its checkpoint and exited 0: Slurm says COMPLETED. Still the core's
        // (queued), requeued at once, its end not counted.
        let exited = ended(&big, JobStateName::Completed);
        let cycle = c.observe(
            &Snapshot {
                jobs: vec![exited.clone(), urgent.clone()],
                nodes: nodes([true; 4]),
                ..Snapshot::default()
            },
            T0 + 7_000,
        );
        assert!(cycle.outcomes.is_empty(), "{:?}", cycle.outcomes);
        assert!(c.core().job(JobId(1)).is_some());
        assert_eq!(kinds(&cycle), [(1, "requeue-hold")]);
        assert!(cycle.notes.iter().any(|n| n.contains("ended by itself")));
        c.action_done(&cycle.actions[0], T0 + 7_000, Ok(()));
        // Requeued and held: job 2 starts on the GPUs it freed.
        let requeued = SlurmJob {
            state: JobStateName::Pending,
            held: true,
            restart_count: 1,
            ..big.clone()
        };
        let cycle = c.observe(
            &Snapshot {
                jobs: vec![requeued, urgent.clone()],
                nodes: nodes([true; 4]),
                ..Snapshot::default()
            },
            T0 + 7_500,
        );
        assert_eq!(kinds(&cycle), [(1, "hold"), (2, "start")]);
    });
}

#[test]
fn a_restart_keeps_the_grace_period_and_sends_no_second_signal() {
    big_stack(|| {
        let (mut first, big, urgent) = graced();
        let s = Snapshot {
            jobs: vec![big.clone(), urgent.clone()],
            nodes: all_used(),
            ..Snapshot::default()
        };
        let cycle = first.observe(&s, T0 + 5_000);
        assert_eq!(kinds(&cycle), [(1, "signal")]);
        // kill -9: a new process replays the journal and restores the grace map (`graced`
        // observed job 1's start as `first` did; the rest is this cycle's entries).
        let (mut second, _, _) = graced();
        for entry in &cycle.entries {
            second.replay_entry(entry).unwrap();
        }
        second.restore_grace(first.grace().clone());
        let cycle = second.observe(&s, T0 + 6_000);
        assert_eq!(kinds(&cycle), []);
        let cycle = second.observe(&s, T0 + 15_000);
        assert_eq!(kinds(&cycle), [(1, "requeue-hold")]);
    });
}

#[test]
fn a_node_count_a_placement_could_break_is_not_kept_and_one_it_cannot_is() {
    let job = |min: u32, max: u32| SlurmJob {
        node_count: min,
        max_nodes: max,
        ..held(1, "")
    };
    // 4 nodes of 8 GPUs. No -N, or a range every placement fits: scheduled.
    assert_eq!(node_count_kept(&job(1, 0), 6, 8, 4), Ok(()));
    assert_eq!(node_count_kept(&job(1, 4), 6, 8, 4), Ok(()));
    assert_eq!(node_count_kept(&job(2, 4), 16, 8, 4), Ok(()));
    assert_eq!(node_count_kept(&job(1, 1), 1, 8, 4), Ok(()));
    // `--gres=gpu:3 -N 2`: 6 GPUs, which fit on one node.
    let err = node_count_kept(&job(2, 2), 6, 8, 4).unwrap_err();
    assert!(
        err.starts_with("asks for exactly 2 nodes (-N 2), but gantry places its 6 GPUs on the nodes it chooses (1 to 4 of them)"),
        "{err}"
    );
    // `-N 1 --gpus=8` is scheduled (a split start is left to Slurm then, see
    // `a_job_that_set_one_node_is_left_to_slurm_when_the_core_would_split_it`);
    // `-N 1-2 --gpus=4` could take 4 nodes.
    assert_eq!(node_count_kept(&job(1, 1), 8, 8, 4), Ok(()));
    assert!(
        node_count_kept(&job(1, 2), 4, 8, 4)
            .unwrap_err()
            .contains("1 to 2 nodes (-N 1-2)")
    );
}

#[test]
fn a_multi_node_request_is_left_to_slurm_but_a_job_gantry_pinned_is_not() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let pinned_by_user = SlurmJob {
            node_count: 2,
            max_nodes: 2,
            ..held(1, "gres:gpu:3")
        };
        let cycle = c.observe(
            &snapshot(&[pinned_by_user, held(2, "gres:gpu:3")], [true; 4]),
            T0,
        );
        assert_eq!(kinds(&cycle), [(1, "hand-over"), (2, "start")]);
        let two = pinned_nodes(&cycle, 2);
        let two: Vec<&str> = two.iter().map(String::as_str).collect();
        let two_runs = running(&held(2, "gres:gpu:3"), &two);
        let Action::HandOver { unpin, .. } = &cycle.actions[0] else {
            unreachable!()
        };
        assert!(!unpin);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 1: asks for exactly 2 nodes (-N 2), but gantry places its 6 GPUs on the nodes it chooses (1 to 4 of them) and cannot keep a node count; gantry leaves it to Slurm's own scheduler, which keeps it"),
            "{text}"
        );
        assert!(c.core().job(JobId(1)).is_none());
        // Released, pending in Slurm: neither held again nor logged again; running, it is
        // named as left to Slurm (its GPUs leave the core's view as any job's running
        // outside gantry).
        let pending = SlurmJob {
            held: false,
            reason: "Resources".into(),
            node_count: 2,
            max_nodes: 2,
            ..held(1, "gres:gpu:3")
        };
        let cycle = c.observe(
            &snapshot(&[pending.clone(), two_runs.clone()], [true; 4]),
            T0 + 500,
        );
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert!(cycle.notes.is_empty(), "{:?}", cycle.notes);
        let on_two = SlurmJob {
            state: JobStateName::Running,
            nodes: vec!["n3".into(), "n4".into()],
            ..pending
        };
        let cycle = c.observe(&snapshot(&[on_two, two_runs], [true; 4]), T0 + 700);
        assert_eq!(
            cycle.notes,
            [
                "job 1: RUNNING on n3,n4 where Slurm placed it, left to Slurm; its GPUs are not gantry's to give"
            ]
        );
        // Job 2 ran (gantry set NumNodes=1-1), an operator held it, then released it:
        // Slurm now shows -N 1, gantry's own, and it is scheduled again.
        let job2 = SlurmJob {
            node_count: 1,
            max_nodes: 1,
            ..held(2, "gres:gpu:3")
        };
        let admin = SlurmJob {
            reason: "JobHeldAdmin".into(),
            ..job2.clone()
        };
        c.observe(
            &snapshot(std::slice::from_ref(&admin), [true; 4]),
            T0 + 1_000,
        );
        assert!(c.core().job(JobId(2)).is_none());
        let released = SlurmJob {
            held: false,
            reason: "None".into(),
            ..job2.clone()
        };
        let cycle = c.observe(&snapshot(&[released], [true; 4]), T0 + 2_000);
        assert_eq!(kinds(&cycle), [(2, "hold")]);
        let cycle = c.observe(&snapshot(&[job2], [true; 4]), T0 + 3_000);
        assert_eq!(kinds(&cycle), [(2, "start")]);
    });
}

#[test]
fn a_node_back_from_down_moves_no_running_job() {
    big_stack(|| {
        let mut c = controller_with(OrderKind::Tias, ControllerConfig::default());
        let n4_down = [true, true, true, false];
        // Singles (every other one marked as checkpointing) and two whole-node jobs.
        let mut jobs: Vec<SlurmJob> = (1..=6)
            .map(|id| SlurmJob {
                requeue: true,
                comment: if id % 2 == 0 {
                    "gantry:checkpoint".into()
                } else {
                    String::new()
                },
                ..held(id, "gres:gpu:1")
            })
            .collect();
        jobs.push(held(7, "gres:gpu:8"));
        jobs.push(held(8, "gres:gpu:8"));
        let cycle = c.observe(&snapshot(&jobs, n4_down), T0);
        assert_eq!(starts(&cycle).len(), 8, "{:?}", starts(&cycle));
        let run: Vec<SlurmJob> = jobs
            .iter()
            .map(|j| {
                let on = pinned_nodes(&cycle, j.id);
                let on: Vec<&str> = on.iter().map(String::as_str).collect();
                running(j, &on)
            })
            .collect();
        // A 4-GPU job waits: 2 GPUs are free.
        let mut now = run.clone();
        now.push(held(9, "gres:gpu:4"));
        let mut actions = Vec::new();
        let mut t = T0;
        let mut cycle_at = |c: &mut Controller, nodes: Vec<SlurmNode>, jobs: &[SlurmJob]| {
            t += 30_000;
            let cycle = c.observe(
                &Snapshot {
                    jobs: jobs.to_vec(),
                    nodes,
                    ..Snapshot::default()
                },
                t,
            );
            actions.extend(kinds(&cycle));
            cycle
        };
        cycle_at(&mut c, nodes(n4_down), &now);
        // n4 comes back, first still not responding: not used yet.
        let mut back = nodes([true; 4]);
        back[3].states = vec!["IDLE".into(), "NOT_RESPONDING".into()];
        let cycle = cycle_at(&mut c, back, &now);
        assert!(
            !cycle
                .entries
                .iter()
                .any(|e| matches!(e.event, Event::GpuUp(_))),
            "a node back but not responding was used"
        );
        // Responding: its GPUs are up, the 4-GPU job starts there; no running job moves.
        let cycle = cycle_at(&mut c, nodes([true; 4]), &now);
        assert_eq!(
            starts(&cycle),
            [(9, "n4:4".into())],
            "{:?} {:?}",
            kinds(&cycle),
            cycle.entries
        );
        for _ in 0..4 {
            cycle_at(&mut c, nodes([true; 4]), &now);
        }
        assert!(
            actions
                .iter()
                .all(|(_, kind)| !matches!(*kind, "requeue-hold" | "signal" | "re-pin")),
            "{actions:?}"
        );
    });
}

/// A daemon runs for months: what it keeps per job must go with the job, whichever way the
/// job leaves (completed, cancelled while an operator held it, run outside gantry and
/// ended, rejected).
#[test]
fn nothing_is_kept_of_jobs_that_left_for_good() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let too_big = held(3, "gres:gpu:16");
        let mut foreign = held(9, "gres:gpu:1");
        foreign.state = JobStateName::Running;
        foreign.held = false;
        foreign.nodes = vec!["n4".into()];
        let jobs = [held(1, "gres:gpu:2"), held(2, "gres:gpu:2")];
        let cycle = c.observe(
            &snapshot(
                &[
                    jobs[0].clone(),
                    jobs[1].clone(),
                    too_big.clone(),
                    foreign.clone(),
                ],
                [true; 4],
            ),
            T0,
        );
        // The rejection's answer is lost (gantry would retry it): its reason stays kept.
        for action in cycle.actions.iter().filter(|a| a.kind() != "reject") {
            c.action_done(action, T0, Ok(()));
        }
        assert!(
            kinds(&cycle).contains(&(3, "reject")),
            "{:?}",
            kinds(&cycle)
        );
        let on1 = pinned_nodes(&cycle, 1);
        let on1: Vec<&str> = on1.iter().map(String::as_str).collect();
        let on2 = pinned_nodes(&cycle, 2);
        let on2: Vec<&str> = on2.iter().map(String::as_str).collect();
        // Job 1 runs, then an operator requeue-holds it; job 2 runs; job 3 was rejected.
        let operator_held = SlurmJob {
            state: JobStateName::Pending,
            held: true,
            reason: "JobHeldAdmin".into(),
            restart_count: 1,
            ..released(&jobs[0], &on1)
        };
        let rejected = ended(&too_big, JobStateName::Ended("CANCELLED".into()));
        c.observe(
            &snapshot(
                &[
                    operator_held.clone(),
                    running(&jobs[1], &on2),
                    rejected,
                    foreign.clone(),
                ],
                [true; 4],
            ),
            T0 + 200,
        );
        assert!(c.per_job_entries() > 0);
        // Job 1 is cancelled by its user while held, job 2 completes, job 9 ends: then
        // Slurm lists none of them.
        let cycle = c.observe(
            &snapshot(
                &[
                    ended(&operator_held, JobStateName::Ended("CANCELLED".into())),
                    ended(&running(&jobs[1], &on2), JobStateName::Completed),
                    ended(&foreign, JobStateName::Completed),
                ],
                [true; 4],
            ),
            T0 + 400,
        );
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        c.observe(&snapshot(&[], [true; 4]), T0 + 600);
        assert_eq!(c.core().jobs().count(), 0);
        assert_eq!(c.per_job_entries(), 0);
    });
}

#[test]
fn a_node_that_joins_the_partition_is_logged_once_and_not_used() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let mut more = nodes([true; 4]);
        let mut n5 = more[0].clone();
        n5.name = "n5".into();
        more.push(n5);
        let jobs = [held(1, "gres:gpu:8"), held(2, "gres:gpu:8")];
        let with_n5 = |jobs: &[SlurmJob]| Snapshot {
            jobs: jobs.to_vec(),
            nodes: more.clone(),
            ..Snapshot::default()
        };
        let cycle = c.observe(&with_n5(&jobs), T0);
        let said: Vec<&String> = cycle.notes.iter().filter(|n| n.contains("n5")).collect();
        assert_eq!(said.len(), 1, "{:?}", cycle.notes);
        assert!(said[0].contains("node n5 joined partition gpu after gantry started"));
        assert!(
            starts(&cycle)
                .iter()
                .all(|(_, shape)| !shape.contains("n5"))
        );
        let cycle = c.observe(&with_n5(&jobs), T0 + 200);
        assert!(!cycle.notes.iter().any(|n| n.contains("n5")), "said once");
    });
}

/// An operator released a requeued job and gantry held it again; gantry is killed before
/// the core took it. Slurm shows the held job with the reason `BeginTime` (its requeue
/// wait): after the restart, the hold is still gantry's when `held_by_gantry` is restored
/// (the daemon keeps it beside the journal), and the job is scheduled; otherwise it would
/// wait as if an operator held it.
#[test]
fn gantrys_own_hold_stays_gantrys_across_a_restart() {
    big_stack(|| {
        // An operator's `scontrol requeuehold 1`, then `scontrol release 1`.
        let (mut c, requeued) = started_then_requeue_held("JobHeldAdmin");
        c.observe(
            &snapshot(std::slice::from_ref(&requeued), [true; 4]),
            T0 + 400,
        );
        let freed = SlurmJob {
            held: false,
            reason: "BeginTime".into(),
            ..requeued.clone()
        };
        let cycle = c.observe(&snapshot(&[freed], [true; 4]), T0 + 600);
        assert_eq!(kinds(&cycle), [(1, "hold")]);
        c.action_done(&cycle.actions[0], T0 + 600, Ok(()));
        assert!(c.held_by_gantry().contains(&1));
        // Killed here. Slurm now shows gantry's hold with the requeue wait as its reason.
        let held_again = SlurmJob {
            reason: "BeginTime".into(),
            ..requeued
        };
        // The first cycle after the restart and one REVOKED_CREDENTIAL_MARGIN_MS later
        // (a restart on the job's old node waits that long after gantry first sees it).
        let restarted = |restore: bool| {
            let mut fresh = controller(OrderKind::Fifo);
            if restore {
                fresh.restore_held_by_gantry(c.held_by_gantry().clone());
            }
            let mut observe =
                |now| fresh.observe(&snapshot(std::slice::from_ref(&held_again), [true; 4]), now);
            let first = observe(T0 + 800);
            (first, observe(T0 + 800 + REVOKED_CREDENTIAL_MARGIN_MS))
        };
        let (first, later) = restarted(true);
        assert!(first.actions.is_empty(), "{:?}", first.actions);
        assert_eq!(kinds(&later), [(1, "start")], "{:?}", later.notes);
        let (cycle, later) = restarted(false);
        assert!(cycle.actions.is_empty() && later.actions.is_empty());
        assert!(
            cycle
                .notes
                .iter()
                .any(|n| n.contains("job 1: held by an operator (BeginTime)")),
            "{:?}",
            cycle.notes
        );
    });
}

fn as_str(nodes: &[String]) -> Vec<&str> {
    nodes.iter().map(String::as_str).collect()
}

/// A released job Slurm keeps pending for a shared QOS limit leaves the core, so its GPUs
/// go to the next job, is held again, and is submitted again once a job of its user that
/// ran when it was held back ends; one pending for a limit it passes alone is left to Slurm.
#[test]
fn a_job_pending_for_a_qos_limit_gives_its_gpus_to_others_until_the_limit_may_free() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        // Jobs 1 and 2 of user 7, 3 to 6 of user 8, a whole node each: 5 and 6 queue.
        let mut jobs: Vec<SlurmJob> = (1..=6)
            .map(|id| SlurmJob {
                owner: Some((if id <= 2 { 7 } else { 8 }, format!("job{id}"))),
                ..held(id, "gres:gpu:8")
            })
            .collect();
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        assert_eq!(starts(&cycle).len(), 4, "{:?}", cycle.actions);
        for action in &cycle.actions {
            c.action_done(action, T0, Ok(()));
        }
        let on = |cycle: &Cycle, id: u32| pinned_nodes(cycle, id);
        let (on1, on2, on3, on4) = (on(&cycle, 1), on(&cycle, 2), on(&cycle, 3), on(&cycle, 4));
        jobs[0] = running(&jobs[0], &as_str(&on1));
        // User 7 may hold 8 GPUs: Slurm keeps job 2 pending where gantry pinned it.
        jobs[1] = SlurmJob {
            reason: "QOSMaxGRESPerUser".into(),
            ..released(&jobs[1], &as_str(&on2))
        };
        jobs[2] = running(&jobs[2], &as_str(&on3));
        jobs[3] = running(&jobs[3], &as_str(&on4));
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 1_000);
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 2: Slurm keeps it pending for a limit of its QOS or account (QOSMaxGRESPerUser); gantry holds it again, gives its GPUs to others and submits it again once one of jobs 1 ends"),
            "{text}"
        );
        assert_eq!(cycle.limit_holds, 1);
        assert!(c.core().job(JobId(2)).is_none(), "the core let it go");
        assert_eq!(kinds(&cycle), [(2, "hold"), (5, "start")]);
        assert_eq!(on(&cycle, 5), on2, "job 5 took job 2's node");
        for action in &cycle.actions {
            c.action_done(action, T0 + 1_000, Ok(()));
        }
        let on5 = on(&cycle, 5);
        jobs[1] = SlurmJob {
            held: true,
            reason: "JobHeldUser".into(),
            ..jobs[1].clone()
        };
        jobs[4] = running(&jobs[4], &as_str(&on5));
        // While job 1 runs, job 2 stays held and out of the core.
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 2_000);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert!(c.core().job(JobId(2)).is_none());
        // Job 1 ends: job 2 is submitted again, behind job 6 (the core takes it as a new
        // arrival), which takes job 1's node.
        jobs[0] = ended(&jobs[0], JobStateName::Completed);
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 3_000);
        assert!(
            cycle.notes.join("\n").contains(
                "job 2: held back for a limit (QOSMaxGRESPerUser) for 2.0 s; gantry schedules it again"
            ),
            "{:?}",
            cycle.notes
        );
        assert!(c.core().job(JobId(2)).is_some());
        assert_eq!(starts(&cycle), [(6, shape_text(&[(on1[0].clone(), 8)]))]);
        for action in &cycle.actions {
            c.action_done(action, T0 + 3_000, Ok(()));
        }
        jobs[5] = released(&jobs[5], &as_str(&on1));
        // Job 3 ends: job 2 starts on its node.
        jobs[2] = ended(&jobs[2], JobStateName::Completed);
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 4_000);
        assert_eq!(starts(&cycle), [(2, shape_text(&[(on3[0].clone(), 8)]))]);
        for action in &cycle.actions {
            c.action_done(action, T0 + 4_000, Ok(()));
        }
        // Job 6 passes a per-job limit by itself: out of the core, left pending to Slurm,
        // not held again.
        jobs[1] = running(&jobs[1], &as_str(&on3));
        jobs[5].reason = "QOSMaxWallDurationPerJobLimit".into();
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 5_000);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert!(c.core().job(JobId(6)).is_none());
        assert!(
            cycle.notes.join("\n").contains(
                "job 6: Slurm keeps it pending for a limit it passes by itself (QOSMaxWallDurationPerJobLimit)"
            ),
            "{:?}",
            cycle.notes
        );
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 6_000);
        assert!(
            cycle.actions.is_empty() && cycle.notes.is_empty(),
            "{cycle:?}"
        );
    });
}

/// The four nodes of [`nodes`], all up, with `states` on node `name`.
fn nodes_with(name: &str, states: &[&str]) -> Vec<SlurmNode> {
    let mut all = nodes([true; 4]);
    for node in all.iter_mut().filter(|n| n.name == name) {
        node.states = states.iter().map(|s| s.to_string()).collect();
        node.reason = "maintenance".into();
    }
    all
}

/// A drained node (Slurm starts nothing new there, its running jobs go on) keeps its
/// running job, which runs to its end; its GPUs then leave the core's view, so the next
/// job starts elsewhere, and they come back when the node is resumed. A node in a
/// reservation is closed the same way. (Before, a drain made gantry requeue the job.)
#[test]
fn a_drained_node_keeps_its_running_job_and_gets_no_new_one() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let mut jobs: Vec<SlurmJob> = (1..=5).map(|id| held(id, "gres:gpu:8")).collect();
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        assert_eq!(starts(&cycle).len(), 4);
        for action in &cycle.actions {
            c.action_done(action, T0, Ok(()));
        }
        let on: Vec<Vec<String>> = (1..=4).map(|id| pinned_nodes(&cycle, id)).collect();
        for id in 0..4 {
            jobs[id] = running(&jobs[id], &as_str(&on[id]));
        }
        let drained = on[0][0].clone();
        let observe = |c: &mut Controller, jobs: &[SlurmJob], states: &[&str], at: u64| {
            let snapshot = Snapshot {
                jobs: jobs.to_vec(),
                nodes: nodes_with(&drained, states),
                ..Snapshot::default()
            };
            c.observe(&snapshot, T0 + at)
        };
        // `scontrol update nodename=… state=drain` while job 1 runs there.
        let cycle = observe(&mut c, &jobs, &["ALLOCATED", "DRAIN"], 1_000);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert!(
            cycle.notes.join("\n").contains(&format!(
                "node {drained} is ALLOCATED+DRAIN (maintenance): closed to new jobs: its running jobs go on"
            )),
            "{:?}",
            cycle.notes
        );
        assert_eq!(
            c.core().job(JobId(1)).map(|j| j.state()),
            Some(JobState::Running)
        );
        // Job 1 ends: job 5 waits (nothing starts on the drained node).
        jobs[0] = ended(&jobs[0], JobStateName::Completed);
        let cycle = observe(&mut c, &jobs, &["IDLE", "DRAIN"], 2_000);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        assert_eq!(
            cycle.preemptions, 0,
            "a start never released is not a preemption"
        );
        assert_ne!(
            c.core().job(JobId(5)).map(|j| j.state()),
            Some(JobState::Running)
        );
        assert_eq!(c.core().healthy_gpu_count(), 24);
        // Job 2 ends: job 5 takes its node.
        jobs[1] = ended(&jobs[1], JobStateName::Completed);
        let cycle = observe(&mut c, &jobs, &["IDLE", "DRAIN"], 3_000);
        assert_eq!(pinned_nodes(&cycle, 5), on[1]);
        for action in &cycle.actions {
            c.action_done(action, T0 + 3_000, Ok(()));
        }
        jobs[4] = running(&jobs[4], &as_str(&on[1]));
        // Resumed: the node's GPUs are back.
        let cycle = observe(&mut c, &jobs, &["IDLE"], 4_000);
        assert!(
            cycle.notes.join("\n").contains("GPUs are back for gantry"),
            "{:?}",
            cycle.notes
        );
        assert_eq!(c.core().healthy_gpu_count(), 32);
        // In a reservation gantry's jobs are not part of: closed too.
        let cycle = observe(&mut c, &jobs, &["IDLE", "RESERVED"], 5_000);
        assert!(
            cycle.notes.join("\n").contains("closed to new jobs"),
            "{:?}",
            cycle.notes
        );
        assert_eq!(c.core().healthy_gpu_count(), 24);
        // A job that asks for a reservation is Slurm's to start there.
        let member = SlurmJob {
            reservation: "team".into(),
            ..held(9, "gres:gpu:1")
        };
        jobs.push(member);
        let cycle = observe(&mut c, &jobs, &["IDLE", "RESERVED"], 6_000);
        assert_eq!(kinds(&cycle), [(9, "hand-over")]);
        assert!(c.core().job(JobId(9)).is_none());
    });
}

/// A partition set DOWN (`scontrol update partitionname=gpu state=down`: Slurm starts none
/// of its jobs, its running ones go on) closes every node: the running job keeps its GPUs,
/// nothing new is released, and the GPUs come back when the partition is up again.
#[test]
fn a_partition_set_down_closes_every_node() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let mut jobs = vec![held(1, "gres:gpu:8")];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        c.action_done(&cycle.actions[0], T0, Ok(()));
        jobs[0] = running(&jobs[0], &as_str(&pinned_nodes(&cycle, 1)));
        jobs.push(held(2, "gres:gpu:8"));
        let partition_down = |down: bool| {
            let mut all = nodes([true; 4]);
            for node in &mut all {
                node.closed_partitions = if down { vec!["gpu".into()] } else { vec![] };
            }
            all
        };
        let down = Snapshot {
            jobs: jobs.clone(),
            nodes: partition_down(true),
            ..Snapshot::default()
        };
        let cycle = c.observe(&down, T0 + 1_000);
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        // One line for the partition's four nodes.
        assert_eq!(
            cycle.notes,
            [
                "partition gpu is set DOWN or INACTIVE: nodes n1,n2,n3,n4 are closed to new jobs: their running jobs go on, and gantry starts nothing there"
            ]
        );
        assert_eq!(
            c.core().job(JobId(1)).map(|j| j.state()),
            Some(JobState::Running)
        );
        assert_eq!(c.core().healthy_gpu_count(), 8);
        let up = Snapshot {
            jobs,
            nodes: partition_down(false),
            ..Snapshot::default()
        };
        let cycle = c.observe(&up, T0 + 2_000);
        assert_eq!(kinds(&cycle), [(2, "start")]);
        assert_eq!(c.core().healthy_gpu_count(), 32);
        assert!(
            cycle.notes[0]
                .starts_with("partition gpu is up again: the GPUs of nodes n1,n2,n3,n4 are back"),
            "{:?}",
            cycle.notes
        );
    });
}

/// An advance reservation from `ahead_s` after `T0` for an hour, on `nodes`.
fn reservation(name: &str, ahead_s: u64, nodes: &[&str]) -> SlurmReservation {
    let start_s = T0 / 1000 + ahead_s;
    SlurmReservation {
        name: name.into(),
        start_s,
        end_s: start_s + 3_600,
        nodes: nodes.iter().map(|n| n.to_string()).collect(),
    }
}

/// A held job of `gpus` GPUs on one node with a time limit.
fn limited(id: u32, gpus: u16, limit_min: u64) -> SlurmJob {
    SlurmJob {
        time_limit_min: Some(limit_min),
        ..held(id, &format!("gres:gpu:{gpus}"))
    }
}

/// A maintenance of the whole partition ten minutes ahead: Slurm would start no job whose
/// time limit runs into it, so such a job stays out of the core (held) while jobs that end
/// before it run, a waiting job leaves the core once its limit reaches the reservation,
/// and both are scheduled once it is over.
#[test]
fn a_job_whose_limit_runs_into_a_reservation_of_every_node_waits_out_of_the_core() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let maint = reservation("maint", 600, &["n1", "n2", "n3", "n4"]);
        let observe = |c: &mut Controller, jobs: &[SlurmJob], at_s: u64| {
            let snapshot = Snapshot {
                reservations: vec![maint.clone()],
                ..snapshot(jobs, [true; 4])
            };
            c.observe(&snapshot, T0 + at_s * 1000)
        };
        // Job 1 (30 min) would run into it; jobs 2-5 (5 min) fill the nodes; job 6 (8 min)
        // fits for now and waits in the core.
        let mut jobs = vec![limited(1, 8, 30)];
        jobs.extend((2..=5).map(|id| limited(id, 8, 5)));
        jobs.push(limited(6, 8, 8));
        let cycle = observe(&mut c, &jobs, 0);
        let started: Vec<u32> = starts(&cycle).iter().map(|(id, _)| *id).collect();
        assert_eq!(started, [2, 3, 4, 5]);
        assert!(c.core().job(JobId(1)).is_none());
        assert_eq!(
            c.core().job(JobId(6)).map(|j| j.state()),
            Some(JobState::Waiting)
        );
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("job 1: waits for advance reservation maint (from")
                && text.contains("its time limit (30 min) runs into it on every node"),
            "{text}"
        );
        for action in &cycle.actions {
            c.action_done(action, T0, Ok(()));
        }
        for id in 2..=5 {
            let on = pinned_nodes(&cycle, id);
            jobs[id as usize - 1] = running(&jobs[id as usize - 1], &as_str(&on));
        }
        // Three minutes on, job 6's 8 minutes reach the reservation: it leaves the core.
        let cycle = observe(&mut c, &jobs, 180);
        assert!(c.core().job(JobId(6)).is_none());
        assert!(
            cycle
                .notes
                .join("\n")
                .contains("job 6: its time limit (8 min) runs into advance reservation maint"),
            "{:?}",
            cycle.notes
        );
        assert!(cycle.actions.is_empty(), "{:?}", cycle.actions);
        // Job 2 ends: job 7 (1 min) takes its node; jobs 1 and 6 stay held.
        jobs[1] = ended(&jobs[1], JobStateName::Completed);
        jobs.push(limited(7, 8, 1));
        let cycle = observe(&mut c, &jobs, 200);
        assert_eq!(kinds(&cycle), [(7, "start")]);
        // The reservation is over: both are scheduled again.
        jobs = vec![jobs[0].clone(), jobs[5].clone()];
        let cycle = observe(&mut c, &jobs, 600 + 3_600);
        let started: Vec<u32> = starts(&cycle).iter().map(|(id, _)| *id).collect();
        assert_eq!(started, [1, 6]);
    });
}

/// Reservations ahead on three nodes: the core's start of a 30-minute job on one of them
/// would wait in Slurm (and, under `sched/builtin`, hold back every later start pinned
/// there), so each such node closes to new jobs and the job is placed on the fourth. The
/// nodes open again once the reservations are gone.
#[test]
fn a_start_that_would_run_into_a_reservation_closes_its_node_and_goes_elsewhere() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let ahead = vec![
            reservation("m1", 600, &["n1"]),
            reservation("m2", 600, &["n2", "n3"]),
        ];
        let jobs = [limited(1, 8, 30)];
        let with = |reservations: Vec<SlurmReservation>| Snapshot {
            reservations,
            ..snapshot(&jobs, [true; 4])
        };
        let cycle = c.observe(&with(ahead.clone()), T0);
        assert_eq!(pinned_nodes(&cycle, 1), ["n4"]);
        assert_eq!(cycle.preemptions, 0, "a start never released");
        let text = cycle.notes.join("\n");
        assert!(
            text.contains("is closed to new jobs until advance reservation m")
                && text.contains(
                    "the core placed job 1 there, whose time limit (30 min) runs into it"
                ),
            "{text}"
        );
        let closed = c.core().healthy_gpu_count();
        assert!(closed < 32, "{closed}");
        // The reservations are deleted: the nodes open again.
        let cycle = c.observe(&with(Vec::new()), T0 + 1_000);
        assert!(
            cycle.notes.join("\n").contains("GPUs are back for gantry"),
            "{:?}",
            cycle.notes
        );
        assert_eq!(c.core().healthy_gpu_count(), 32);
    });
}

/// A reservation of every node that gantry reads after it released a job whose limit runs
/// into it (the reservation was made in the seconds between two reads): the job is held
/// again and leaves the core, and no node closes.
#[test]
fn a_release_that_would_run_into_a_reservation_of_every_node_is_held_again() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let mut jobs = vec![limited(1, 8, 30)];
        let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0);
        for action in &cycle.actions {
            c.action_done(action, T0, Ok(()));
        }
        jobs[0] = released(&jobs[0], &as_str(&pinned_nodes(&cycle, 1)));
        let maint = reservation("maint", 600, &["n1", "n2", "n3", "n4"]);
        let cycle = c.observe(
            &Snapshot {
                reservations: vec![maint],
                ..snapshot(&jobs, [true; 4])
            },
            T0 + 1_000,
        );
        assert_eq!(kinds(&cycle), [(1, "hold")]);
        assert!(c.core().job(JobId(1)).is_none());
        assert_eq!(c.core().healthy_gpu_count(), 32);
        assert!(
            cycle
                .notes
                .join("\n")
                .contains("job 1: its time limit (30 min) runs into advance reservation maint"),
            "{:?}",
            cycle.notes
        );
    });
}

/// A reservation on the node a released job waits on, read after the release (reservations
/// are read every 10 s): the node closes, the core places the job on another node and
/// gantry pins it there; no preemption is counted, as the job never ran.
#[test]
fn a_release_onto_a_node_reserved_since_is_moved_to_another() {
    big_stack(|| {
        let job = limited(1, 8, 30);
        let (mut c, cycle) = fifo_released(&job);
        let first = pinned_nodes(&cycle, 1);
        let waiting = released(&job, &as_str(&first));
        let ahead = reservation("ahead", 600, &as_str(&first));
        let cycle = c.observe(
            &Snapshot {
                reservations: vec![ahead],
                ..snapshot(&[waiting], [true; 4])
            },
            T0 + 1_000,
        );
        let moved = pinned_nodes(&cycle, 1);
        assert_ne!(moved, first, "{:?}", cycle.actions);
        assert_eq!(cycle.preemptions, 0);
        assert_eq!(c.core().healthy_gpu_count(), 24);
        assert!(
            cycle.notes.join("\n").contains(&format!(
                "node {} is closed to new jobs until advance reservation ahead",
                first[0]
            )),
            "{:?}",
            cycle.notes
        );
    });
}

/// A reservation ahead on three nodes while the fourth is down: the 30-minute job cannot
/// start on any node open to new jobs, so it waits out of the core, and the reserved nodes
/// stay open to a 5-minute job.
#[test]
fn a_node_down_outside_the_reservation_does_not_count_as_room() {
    big_stack(|| {
        let mut c = controller(OrderKind::Fifo);
        let jobs = [limited(1, 8, 30), limited(2, 8, 5)];
        let cycle = c.observe(
            &Snapshot {
                reservations: vec![reservation("m", 600, &["n1", "n2", "n3"])],
                ..snapshot(&jobs, [true, true, true, false])
            },
            T0,
        );
        assert!(c.core().job(JobId(1)).is_none());
        assert_eq!(kinds(&cycle), [(2, "start")]);
        assert_eq!(c.core().healthy_gpu_count(), 24, "{:?}", cycle.notes);
    });
}

/// A release still pending for `Priority` behind a job gantry left to Slurm that waits for
/// GPUs (here one asking for an advance reservation) names that job and the cause: under
/// `sched/builtin` Slurm starts nothing behind it. Without such a job the note is the plain
/// one.
#[test]
fn a_release_held_back_behind_a_job_left_to_slurm_names_it() {
    big_stack(|| {
        let job = held(1, "gres:gpu:1");
        let waiting = SlurmJob {
            held: false,
            reason: "Resources".into(),
            reservation: "maint".into(),
            ..held(9, "gres:gpu:8")
        };
        for with_waiting in [true, false] {
            let (mut c, first) = fifo_released(&job);
            let pinned = pinned_nodes(&first, 1);
            let pinned: Vec<&str> = pinned.iter().map(String::as_str).collect();
            let mut jobs = vec![SlurmJob {
                reason: "Priority".into(),
                ..released(&job, &pinned)
            }];
            if with_waiting {
                jobs.push(waiting.clone());
            }
            let cycle = c.observe(&snapshot(&jobs, [true; 4]), T0 + 31_000);
            let note = cycle
                .notes
                .iter()
                .find(|n| n.starts_with("job 1: released 31 s ago"))
                .unwrap_or_else(|| panic!("{:?}", cycle.notes));
            let names_it =
                note.contains("job 9, which gantry does not schedule, waits for GPUs ahead of it");
            assert_eq!(names_it, with_waiting, "{note}");
            assert_eq!(note.contains("sched/backfill"), with_waiting, "{note}");
        }
    });
}

/// Under `sched/builtin`, the first job left to Slurm brings one warning of what it can do
/// to gantry's starts; under another scheduler, none.
#[test]
fn the_first_job_left_to_slurm_under_sched_builtin_brings_one_warning() {
    big_stack(|| {
        for builtin in [true, false] {
            let config = ControllerConfig {
                slurm_builtin: builtin,
                ..ControllerConfig::default()
            };
            let mut c = controller_with(OrderKind::Fifo, config.clone());
            let asking = |id: u32| SlurmJob {
                reservation: "maint".into(),
                ..held(id, "gres:gpu:1")
            };
            let warned = |cycle: &Cycle| {
                cycle
                    .notes
                    .iter()
                    .filter(|n| n.starts_with("Slurm runs sched/builtin"))
                    .count()
            };
            let cycle = c.observe(&snapshot(&[asking(1), asking(2)], [true; 4]), T0);
            assert_eq!(kinds(&cycle), [(1, "hand-over"), (2, "hand-over")]);
            assert_eq!(warned(&cycle), usize::from(builtin), "{:?}", cycle.notes);
            let cycle = c.observe(&snapshot(&[asking(3)], [true; 4]), T0 + 500);
            assert_eq!(warned(&cycle), 0, "{:?}", cycle.notes);
            // A dependency gantry does not judge: Slurm runs the job once it is met, and
            // it then waits for GPUs like any job left there. One that can never be met
            // never becomes eligible, and brings no warning.
            let failed = SlurmJob {
                state: JobStateName::Ended("FAILED".into()),
                ..held(4, "gres:gpu:1")
            };
            let never = SlurmJob {
                dependency: "afterok:4(unfulfilled)".into(),
                ..held(5, "gres:gpu:1")
            };
            let not_judged = SlurmJob {
                dependency: "singleton(unfulfilled)".into(),
                ..held(6, "gres:gpu:1")
            };
            let mut c = controller_with(OrderKind::Fifo, config);
            let cycle = c.observe(&snapshot(&[failed, never], [true; 4]), T0);
            assert_eq!(kinds(&cycle), [(5, "hand-over")]);
            assert_eq!(warned(&cycle), 0, "{:?}", cycle.notes);
            let cycle = c.observe(&snapshot(&[not_judged], [true; 4]), T0 + 500);
            assert_eq!(kinds(&cycle), [(6, "hand-over")]);
            assert_eq!(warned(&cycle), usize::from(builtin), "{:?}", cycle.notes);
        }
    });
}
