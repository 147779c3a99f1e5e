//! `gantry compare`: several job orders × placers (× DAG planners) on the same workload, in
//! parallel (rayon), one row each.

use crate::metrics::{Metrics, RunInfo, cell};
use crate::policy::{OrderKind, PlacerKind};
use crate::progress::RunProgress;
use crate::sim::{DagPlannerKind, SchedulerSpec, SimError, SimOutput, Simulation, run};
use crate::workload::Workload;
use rayon::prelude::*;

/// Every `order × placer × planner` scheduler, orders outer, planners inner.
pub fn schedulers(
    orders: &[OrderKind],
    placers: &[PlacerKind],
    planners: &[DagPlannerKind],
) -> Vec<SchedulerSpec> {
    orders
        .iter()
        .flat_map(|&o| {
            placers
                .iter()
                .flat_map(move |&p| planners.iter().map(move |&d| SchedulerSpec::new(o, p, d)))
        })
        .collect()
}

/// Simulates `workload` under every scheduler, in parallel; outputs come back in the order of
/// `schedulers`. `progress` counts finished jobs over all runs.
pub fn run_schedulers(
    workload: &Workload,
    schedulers: &[SchedulerSpec],
    progress: Option<&RunProgress>,
) -> Result<Vec<SimOutput>, SimError> {
    let cluster = workload.hardware();
    schedulers
        .par_iter()
        .map(|&scheduler| {
            run(&Simulation {
                jobs: &workload.jobs,
                extras: &workload.extras,
                cluster: &cluster,
                scheduler,
                config: &workload.config,
                progress,
            })
        })
        .collect()
}

/// Simulates every `(order, placer)` pair on `workload` (DAG jobs planned by `list`); rows
/// come back in the order of the pairs (orders outer, placers inner), whatever order the
/// threads finish in, each labelled with the run ([`RunInfo`]).
pub fn compare(
    workload: &Workload,
    orders: &[OrderKind],
    placers: &[PlacerKind],
) -> Result<Vec<Metrics>, SimError> {
    let specs = schedulers(orders, placers, &[DagPlannerKind::List]);
    Ok(run_schedulers(workload, &specs, None)?
        .iter()
        .map(|out| {
            let run = RunInfo::new(&workload.name, workload.cluster, &workload.config);
            Metrics::from_output(out).with_run(run)
        })
        .collect())
}

/// The comparison as a markdown table.
pub fn table(rows: &[Metrics]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    t.set_header([
        "order",
        "placement",
        "DAG planner",
        "jobs",
        "avg JCT (s)",
        "avg JCT deadline (s)",
        "avg JCT non-deadline (s)",
        "p99 JCT (s)",
        "avg waiting (s)",
        "makespan (s)",
        "deadline miss rate",
        "miss rate feasible",
        "avg JCT DAG (s)",
        "preemptions",
        "utilisation",
        "avg comm cost",
    ]);
    for m in rows {
        let order = if m.scheduler == "gantry" {
            format!("{} (gantry)", m.order)
        } else {
            m.order.clone()
        };
        t.add_row([
            order,
            m.placement.clone(),
            m.dag_planner.clone().unwrap_or_else(|| "—".into()),
            m.jobs.to_string(),
            cell(m.avg_jct_s, 0),
            cell(m.avg_jct_deadline_s, 0),
            cell(m.avg_jct_nondeadline_s, 0),
            cell(m.p99_jct_s, 0),
            cell(m.avg_waiting_s, 0),
            format!("{:.0}", m.makespan_s),
            cell(m.deadline_miss_rate, 3),
            cell(m.deadline_miss_rate_feasible, 3),
            cell(m.avg_jct_dag_s, 0),
            m.preemptions.to_string(),
            cell(m.utilization, 3),
            cell(m.avg_comm_cost, 4),
        ]);
    }
    t.to_string()
}
