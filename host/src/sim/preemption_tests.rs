//! The simulator's preemption modes on a two-job workload, every JCT computed by hand.
//!
//! One GPU, preemptive EDF, ideal speed, no periodic ticks. Job 0: submitted at 0, 100 s of
//! work, deadline 1,000 s. Job 1: submitted at 30 s, 10 s of work, deadline 50 s, so EDF
//! preempts job 0 for it at 30 s (job 0 has made 30 s of progress) unless job 0 is pinned.

use super::*;
use crate::registry::{OrderKind, PlacerKind};

fn jobs() -> Vec<TraceJob> {
    let job = |id: u32, submit_s: u64, work_s: u64, deadline_s: u64| TraceJob {
        id,
        submit_ms: submit_s * 1000,
        duration_ms: work_s * 1000,
        gpus: 1,
        deadline_ms: Some(deadline_s * 1000),
        gradient_mb: 0,
        source_line: 0,
    };
    vec![job(0, 0, 100, 1_000), job(1, 30, 10, 50)]
}

/// (JCT of job 0, JCT of job 1) in s, restarts, and GPU·s wasted on killed runs.
fn run(config: SimConfig) -> ((u64, u64), u64, u64) {
    let config = SimConfig {
        tick_ms: 0,
        speed_model: SpeedModel::Ideal,
        ..config
    };
    let cluster: ClusterSpec = "1x1x1".parse().unwrap();
    let out = simulate(
        &jobs(),
        cluster,
        OrderKind::Edf,
        PlacerKind::FirstFit,
        &config,
    )
    .unwrap();
    let jct = |j: &JobRecord| (j.finish_ms.unwrap() - j.submit_ms) / 1000;
    let restarts = out
        .jobs
        .iter()
        .map(|j| j.placement_costs.len() as u64 - 1)
        .sum();
    let wasted = out.jobs.iter().map(|j| j.wasted_gpu_ms).sum::<u64>() / 1000;
    ((jct(&out.jobs[0]), jct(&out.jobs[1])), restarts, wasted)
}

#[test]
fn checkpoint_by_default_loses_nothing() {
    // Job 0 runs 0–30 s, job 1 30–40 s, job 0 resumes at 40 s with 70 s left: done at 110.
    assert_eq!(run(SimConfig::default()), ((110, 10), 1, 0));
}

#[test]
fn checkpoint_loses_the_progress_since_the_last_checkpoint_and_pays_the_overhead() {
    // Checkpoints every 20 s: at 30 s job 0 keeps 20 s and loses 10 s. It restarts at 40 s,
    // makes progress from 45 s (5 s overhead) and needs 80 s more: done at 125 s. Wasted:
    // 30 s held − 20 s kept = 10 GPU·s (the overhead of the last run is not a killed run's).
    let config = SimConfig {
        preemption: PreemptionMode::Checkpoint,
        checkpoint_interval_ms: 20_000,
        restart_overhead_ms: 5_000,
        ..SimConfig::default()
    };
    assert_eq!(run(config), ((125, 10), 1, 10));
}

#[test]
fn restart_loses_all_progress_since_the_start() {
    // Job 0 loses its 30 s; restarts at 40 s, progress from 45 s, 100 s of work: 145 s.
    let config = SimConfig {
        preemption: PreemptionMode::Restart,
        restart_overhead_ms: 5_000,
        ..SimConfig::default()
    };
    assert_eq!(run(config), ((145, 10), 1, 30));
}

#[test]
fn never_runs_every_started_job_to_completion() {
    // Job 0 runs 0–100 s; job 1 waits and runs 100–110 s (JCT 80 s).
    let config = SimConfig {
        preemption: PreemptionMode::Never,
        ..SimConfig::default()
    };
    assert_eq!(run(config), ((100, 80), 0, 0));
}

#[test]
fn the_min_run_quantum_delays_the_preemption() {
    // Quantum 60 s: job 1 waits until job 0 has run 60 s, runs 60–70 s; job 0 resumes at
    // 70 s with 40 s left: done at 110 s. Job 1's JCT: 70 − 30 = 40 s.
    let config = SimConfig {
        min_run_ms: 60_000,
        ..SimConfig::default()
    };
    assert_eq!(run(config), ((110, 40), 1, 0));
}

/// Runs the two jobs with per-job terms (`--job-terms`): preemption under checkpoint mode
/// with 20-s checkpoints and a 5-s restart overhead for the checkpointing ones.
/// Returns the JCTs (`None`: cancelled), restarts and wasted GPU·s.
fn run_with_terms(terms: [JobTerms; 2]) -> ((Option<u64>, Option<u64>), u64, u64) {
    let config = SimConfig {
        tick_ms: 0,
        speed_model: SpeedModel::Ideal,
        preemption: PreemptionMode::Checkpoint,
        checkpoint_interval_ms: 20_000,
        restart_overhead_ms: 5_000,
        ..SimConfig::default()
    };
    let cluster = Cluster::homogeneous("1x1x1".parse().unwrap());
    let extras = JobExtras {
        terms: terms.to_vec(),
        ..JobExtras::default()
    };
    let jobs = jobs();
    let out = super::run(&Simulation {
        jobs: &jobs,
        extras: &extras,
        cluster: &cluster,
        scheduler: SchedulerSpec::new(OrderKind::Edf, PlacerKind::FirstFit, DagPlannerKind::List),
        config: &config,
        progress: None,
    })
    .unwrap();
    let jct = |j: &JobRecord| {
        assert_eq!(j.cancelled, j.finish_ms.is_none());
        j.finish_ms.map(|f| (f - j.submit_ms) / 1000)
    };
    let restarts = out
        .jobs
        .iter()
        .map(|j| j.placement_costs.len().saturating_sub(1) as u64)
        .sum();
    let wasted = out.jobs.iter().map(|j| j.wasted_gpu_ms).sum::<u64>() / 1000;
    ((jct(&out.jobs[0]), jct(&out.jobs[1])), restarts, wasted)
}

fn terms(preemption: PreemptionClass, limit_s: Option<u64>) -> JobTerms {
    JobTerms {
        preemption,
        time_limit_ms: limit_s.map(|s| s * 1000),
    }
}

#[test]
fn a_never_job_is_not_preempted_and_the_deadline_rule_cancels_the_one_waiting_for_it() {
    // Job 0 is never preemptible, so job 1 (deadline 50 s, limit 20 s: it must run by 30 s)
    // waits; at 30 s + 1 ms it is not running and is cancelled. Job 0 runs 0–100 s.
    let out = run_with_terms([
        terms(PreemptionClass::Never, None),
        terms(PreemptionClass::Never, Some(20)),
    ]);
    assert_eq!(out, ((Some(100), None), 0, 0));
}

#[test]
fn a_checkpointing_job_is_preempted_and_a_start_at_the_last_instant_meets_the_rule() {
    // Job 0 checkpoints: as in the checkpoint test, job 1 runs 30–40 s (it started at 30 s,
    // the last instant its 20-s limit fits its deadline), job 0 restarts at 40 s with 20 s
    // kept, progress from 45 s, 80 s left: done at 125 s; 10 GPU·s wasted.
    let out = run_with_terms([
        terms(PreemptionClass::Checkpointing, Some(300)),
        terms(PreemptionClass::Never, Some(20)),
    ]);
    assert_eq!(out, ((Some(125), Some(10)), 1, 10));
}

#[test]
fn a_job_whose_limit_already_ends_past_its_deadline_never_starts() {
    // Job 1's 30-s limit from its submission (30 s) ends at 60 s, after its deadline (50 s):
    // cancelled on arrival, so job 0 is not preempted and runs 0–100 s.
    let out = run_with_terms([
        terms(PreemptionClass::Checkpointing, None),
        terms(PreemptionClass::Never, Some(30)),
    ]);
    assert_eq!(out, ((Some(100), None), 0, 0));
}

/// The JCTs (ms) of `jobs` on `cluster` under preemptive EDF, first fit, ideal speed.
fn jcts_on(jobs: &[TraceJob], cluster: &str, config: SimConfig) -> Vec<u64> {
    let config = SimConfig {
        tick_ms: 0,
        speed_model: SpeedModel::Ideal,
        ..config
    };
    let cluster: ClusterSpec = cluster.parse().unwrap();
    let out = simulate(jobs, cluster, OrderKind::Edf, PlacerKind::FirstFit, &config).unwrap();
    out.jobs
        .iter()
        .map(|j| j.finish_ms.unwrap() - j.submit_ms)
        .collect()
}

#[test]
fn the_requeue_delay_holds_a_restart_on_the_preempted_runs_machine() {
    // Job 0 is preempted at 30 s and restarts at 40 s on its own machine: Slurm lets it run
    // there from 30 + 10 + 0.5 = 40.5 s, so its 70 s left end at 110.5 s. With a 5-s
    // overhead the later of the two counts: progress from 45 s, done at 115 s.
    let delayed = |overhead_s: u64| SimConfig {
        requeue_delay_ms: 10_000,
        restart_overhead_ms: overhead_s * 1000,
        ..SimConfig::default()
    };
    assert_eq!(jcts_on(&jobs(), "1x1x1", delayed(0)), [110_500, 10_000]);
    assert_eq!(jcts_on(&jobs(), "1x1x1", delayed(5)), [115_000, 10_000]);
    assert_eq!(
        jcts_on(&jobs(), "1x1x1", SimConfig::default()),
        [110_000, 10_000]
    );
}

#[test]
fn the_requeue_delay_does_not_hold_a_restart_on_another_machine() {
    // Two one-GPU machines. Job 2 (submitted at 0 s, 35 s of work) holds machine 1; job 1
    // preempts job 0 on machine 0 at 30 s; job 2 ends at 35 s and job 0 restarts there at
    // once: 70 s left, done at 105 s.
    let mut jobs = jobs();
    jobs.push(TraceJob {
        id: 2,
        submit_ms: 0,
        duration_ms: 35_000,
        deadline_ms: Some(900_000),
        ..jobs[0].clone()
    });
    let config = SimConfig {
        requeue_delay_ms: 10_000,
        ..SimConfig::default()
    };
    assert_eq!(jcts_on(&jobs, "1x2x1", config), [105_000, 10_000, 35_000]);
}

/// One 8-GPU job of 10 days on one 8-GPU machine whose GPUs fail 24 times a day each.
fn run_under_failures(preemption: PreemptionMode) -> SimOutput {
    let job = TraceJob {
        id: 7,
        submit_ms: 0,
        duration_ms: 10 * 86_400_000,
        gpus: 8,
        deadline_ms: None,
        gradient_mb: 0,
        source_line: 0,
    };
    let config = SimConfig {
        speed_model: SpeedModel::Ideal,
        preemption,
        faults: Some(FaultConfig::with_rate(24.0)),
        ..SimConfig::default()
    };
    let cluster: ClusterSpec = "1x1x8".parse().unwrap();
    simulate(
        &[job],
        cluster,
        OrderKind::Las,
        PlacerKind::FirstFit,
        &config,
    )
    .unwrap()
}

#[test]
fn a_job_that_failures_keep_from_any_progress_stops_the_run() {
    // Its GPUs fail every 7.5 minutes between them: a 10-day run from zero never ends, and
    // the failures would go on for ever. The run stops at the limit and says which job.
    let out = run_under_failures(PreemptionMode::Restart);
    let gave_up = out.gave_up.clone().expect("the run must stop");
    assert_eq!((gave_up.job, gave_up.gpus, gave_up.unfinished), (7, 8, 1));
    assert!(out.jobs[0].finish_ms.is_none());
    assert!(out.jobs[0].requeues >= MAX_FAILED_RUNS);
    // Reported unfinished, not lost.
    let metrics = crate::metrics::Metrics::from_output(&out);
    assert_eq!((metrics.unfinished, metrics.jobs_lost), (1, 0));
}

#[test]
fn a_job_that_keeps_its_progress_through_failures_finishes() {
    // Checkpointed at each failure, the same job loses nothing and ends.
    let out = run_under_failures(PreemptionMode::Checkpoint);
    assert_eq!(out.gave_up, None);
    assert!(out.jobs[0].finish_ms.is_some());
    assert!(out.jobs[0].requeues > 1_000);
}
