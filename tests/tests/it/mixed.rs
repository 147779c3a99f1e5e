//! Mixed workloads end to end: the combined scheduler on the bundled mixed sample (GPU types,
//! deadlines, DAG jobs planned on their gang), its determinism, DAG jobs under GPU failures,
//! and what each DAG planner buys on the heterogeneous cluster.

use gantry::cluster::{Cluster, Throughputs};
use gantry::metrics::Metrics;
use gantry::mixed::JobExtras;
use gantry::registry::{OrderKind, PlacerKind};
use gantry::sample::{MIXED_CLUSTER, MIXED_GPU_TYPES, mixed_sample};
use gantry::sim::{
    DagPlannerKind, FaultConfig, SchedulerSpec, SimConfig, SimOutput, Simulation, run,
};
use gantry::trace::TraceJob;
use std::sync::Arc;

fn sample(limit: usize) -> (Vec<TraceJob>, JobExtras, Cluster) {
    let table = Arc::new(Throughputs::gavel());
    let w = mixed_sample(&table, Some(limit)).unwrap();
    let cluster = Cluster::with_types(MIXED_CLUSTER, MIXED_GPU_TYPES, table).unwrap();
    (w.jobs, w.extras, cluster)
}

fn simulate(
    jobs: &[TraceJob],
    extras: &JobExtras,
    cluster: &Cluster,
    scheduler: SchedulerSpec,
    config: &SimConfig,
) -> SimOutput {
    let out = run(&Simulation {
        jobs,
        extras,
        cluster,
        scheduler,
        config,
        progress: None,
    })
    .unwrap();
    assert!(out.anomalies.is_empty(), "{:?}", out.anomalies);
    out
}

#[test]
fn the_combined_run_replays_byte_identically() {
    let (jobs, extras, cluster) = sample(1500);
    let config = SimConfig::default();
    let a = simulate(&jobs, &extras, &cluster, SchedulerSpec::GANTRY, &config);
    let b = simulate(&jobs, &extras, &cluster, SchedulerSpec::GANTRY, &config);
    assert!(a.log.entries > 1500);
    assert_eq!(a.log, b.log);
    let plans = |o: &SimOutput| -> Vec<_> { o.jobs.iter().map(|j| j.dag_runs.clone()).collect() };
    assert_eq!(plans(&a), plans(&b));
    let m = Metrics::from_output(&a);
    assert_eq!(
        (m.scheduler.as_str(), m.dag_planner.as_deref()),
        ("gantry", Some("worl"))
    );
    assert_eq!((m.jobs_lost, m.dag_jobs), (0, 30));
    assert!(m.avg_jct_dag_s.is_some());
    assert!(a.dag_note.is_none(), "{:?}", a.dag_note);
    // The comparison can fail: another planner gives another log.
    let heft = SchedulerSpec {
        dag_planner: DagPlannerKind::Heft,
        ..SchedulerSpec::GANTRY
    };
    assert_ne!(simulate(&jobs, &extras, &cluster, heft, &config).log, a.log);
}

/// Issue 14's targets on the default main job (the bundled mixed sample, every row of
/// `gantry simulate`): gantry has the lowest DAG-job JCT of all rows, a miss rate at most
/// EDF's plus 0.005 and a non-deadline JCT at most LAS's × 1.005. The figures are in
/// docs/mixed.md, with four other samples of the same recipe, where not every target holds.
#[test]
fn the_combined_scheduler_meets_its_targets_on_the_bundled_sample() {
    let (jobs, extras, cluster) = sample(1500);
    let config = SimConfig::default();
    let rows: Vec<Metrics> = gantry::lineup::LINEUP
        .iter()
        .map(|&spec| Metrics::from_output(&simulate(&jobs, &extras, &cluster, spec, &config)))
        .collect();
    let (gantry, others) = rows.split_first().unwrap();
    assert_eq!(gantry.scheduler, "gantry");
    // The lowest `value` among the other rows, or among those of `order`.
    let best_of = |order: Option<&str>, value: fn(&Metrics) -> Option<f64>| {
        others
            .iter()
            .filter(|m| order.is_none_or(|o| m.order == o))
            .filter_map(value)
            .fold(f64::INFINITY, f64::min)
    };
    let dag = gantry.avg_jct_dag_s.unwrap();
    assert!(dag < best_of(None, |m| m.avg_jct_dag_s), "DAG JCT {dag}");
    let miss = gantry.deadline_miss_rate.unwrap();
    let edf = best_of(Some("edf"), |m| m.deadline_miss_rate);
    assert!(miss <= edf + 0.005, "miss rate {miss}, EDF {edf}");
    let nondeadline = gantry.avg_jct_nondeadline_s.unwrap();
    let las = best_of(Some("las"), |m| m.avg_jct_nondeadline_s);
    assert!(
        nondeadline <= las * 1.005,
        "non-DL JCT {nondeadline}, LAS {las}"
    );
}

#[test]
fn dag_jobs_survive_gpu_failures_and_keep_their_progress() {
    let (jobs, extras, cluster) = sample(1500);
    let config = SimConfig {
        seed: 5,
        faults: Some(FaultConfig::with_rate(0.5)),
        ..SimConfig::default()
    };
    let spec = SchedulerSpec::new(OrderKind::Las, PlacerKind::BestFit, DagPlannerKind::Heft);
    let out = simulate(&jobs, &extras, &cluster, spec, &config);
    let m = Metrics::from_output(&out);
    assert_eq!((m.jobs_lost, m.unfinished, m.jobs), (0, 0, 1500));
    assert!(m.requeues > 0);
    let restarted: Vec<_> = out
        .jobs
        .iter()
        .filter(|j| j.dag_tasks > 0 && j.dag_runs.len() > 1)
        .collect();
    assert!(!restarted.is_empty(), "no DAG job was restarted");
    for job in restarted {
        // Each run plans only the work earlier runs left (finished tasks dropped, interrupted
        // ones with their remaining work); the first run plans every task.
        let planned: usize = job.dag_runs.iter().map(|r| r.plan.tasks.len()).sum();
        assert!(planned >= job.dag_tasks as usize, "job {}", job.id);
        let first = job.dag_runs[0].plan.tasks.len();
        assert_eq!(first, job.dag_tasks as usize, "job {}", job.id);
        for r in &job.dag_runs {
            assert!(r.plan.tasks.iter().all(|t| r.gpus.contains(&t.gpu.0)));
        }
        // No task's work grows from one run to the next.
        for pair in job.dag_runs.windows(2) {
            for t in &pair[1].plan.tasks {
                if let Some(before) = pair[0].plan.tasks.iter().find(|b| b.task == t.task) {
                    assert!(
                        t.work_ms <= before.work_ms,
                        "job {} task {}",
                        job.id,
                        t.task
                    );
                }
            }
        }
    }
}

/// The DAG planners on the heterogeneous cluster, everything else equal (gantry's order and
/// placer): WORL's DAG jobs finish sooner on average than HEFT's and than the plain list
/// schedule's. Measured, not tuned: the figures are in docs/mixed.md.
#[test]
fn worl_plans_finish_dag_jobs_sooner_than_heft_and_list() {
    let (jobs, extras, cluster) = sample(1500);
    let config = SimConfig::default();
    let dag_jct = |planner| {
        let spec = SchedulerSpec {
            dag_planner: planner,
            ..SchedulerSpec::GANTRY
        };
        Metrics::from_output(&simulate(&jobs, &extras, &cluster, spec, &config))
            .avg_jct_dag_s
            .unwrap()
    };
    let (worl, heft, list) = (
        dag_jct(DagPlannerKind::Worl),
        dag_jct(DagPlannerKind::Heft),
        dag_jct(DagPlannerKind::List),
    );
    assert!(
        worl < heft && worl < list,
        "worl {worl}, heft {heft}, list {list}"
    );
}

/// Every planner on exactly the gangs gantry gave the sample's DAG jobs (their first start):
/// WORL (HEFT-seeded, elitist) is never worse than HEFT on any gang, and the plain list
/// schedule is never better than HEFT on average. Prints the per-planner geometric-mean
/// makespan ratio to HEFT (`-- --nocapture`; the figures are in docs/mixed.md).
#[test]
fn planners_on_the_same_gangs() {
    use gantry::mixed::DagProgress;
    use gantry::registry::HOST_GPUS;
    use gantry::sim::dag_run::DagPlanning;
    let (jobs, extras, cluster) = sample(1500);
    let out = simulate(
        &jobs,
        &extras,
        &cluster,
        SchedulerSpec::GANTRY,
        &SimConfig::default(),
    );
    let topology = Box::new(cluster.topology::<HOST_GPUS>().unwrap());
    let kinds = [
        DagPlannerKind::List,
        DagPlannerKind::Heft,
        DagPlannerKind::Woa,
        DagPlannerKind::Worl,
        DagPlannerKind::WorlEft,
    ];
    let model = std::path::Path::new(gantry::dag::worl_rtgs::DEFAULT_MODEL);
    let mut planners: Vec<DagPlanning> =
        kinds.iter().map(|&k| DagPlanning::new(k, model)).collect();
    let mut log_ratio = vec![0.0f64; kinds.len()];
    let mut gangs = 0;
    for (i, record) in out.jobs.iter().enumerate() {
        let (Some(dag), Some(first)) = (extras.dag_of(i), record.dag_runs.first()) else {
            continue;
        };
        let gang: Vec<gantry_core::GpuId> =
            first.gpus.iter().map(|&g| gantry_core::GpuId(g)).collect();
        let spans: Vec<f64> = planners
            .iter_mut()
            .map(|p| {
                p.plan(dag, &DagProgress::default(), &gang, &cluster, &topology, 7)
                    .unwrap()
                    .makespan_ms
            })
            .collect();
        assert!(
            spans[3] <= spans[1],
            "job {i}: worl {} > heft {}",
            spans[3],
            spans[1]
        );
        for (sum, span) in log_ratio.iter_mut().zip(&spans) {
            *sum += (span / spans[1]).ln();
        }
        gangs += 1;
    }
    assert_eq!(gangs, 30);
    let ratio: Vec<f64> = log_ratio
        .iter()
        .map(|s| (s / f64::from(gangs)).exp())
        .collect();
    for (kind, r) in kinds.iter().zip(&ratio) {
        println!(
            "{}: makespan / HEFT's, geometric mean over {gangs} gangs = {r:.4}",
            kind.name()
        );
    }
    assert!(ratio[0] >= 1.0, "list beat HEFT on average: {ratio:?}");
}
