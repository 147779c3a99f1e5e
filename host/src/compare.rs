//! `gantry compare`: several job orders × placers on the same workload, in parallel (rayon),
//! one row each.

use crate::metrics::{Metrics, RunInfo, cell};
use crate::policy::{OrderKind, PlacerKind};
use crate::sim::{SimError, simulate};
use crate::workload::Workload;
use rayon::prelude::*;

/// Simulates every `(order, placer)` pair on `workload`; rows come back in the order of the
/// pairs (orders outer, placers inner), whatever order the threads finish in, each labelled
/// with the run ([`RunInfo`]).
pub fn compare(
    workload: &Workload,
    orders: &[OrderKind],
    placers: &[PlacerKind],
) -> Result<Vec<Metrics>, SimError> {
    let pairs: Vec<(OrderKind, PlacerKind)> = orders
        .iter()
        .flat_map(|&o| placers.iter().map(move |&p| (o, p)))
        .collect();
    pairs
        .par_iter()
        .map(|&(order, placer)| {
            simulate(
                &workload.jobs,
                workload.cluster,
                order,
                placer,
                &workload.config,
            )
            .map(|out| {
                let run = RunInfo::new(&workload.name, workload.cluster, &workload.config);
                Metrics::from_output(&out).with_run(run)
            })
        })
        .collect()
}

/// The comparison as a markdown table.
pub fn table(rows: &[Metrics]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    t.set_header([
        "order",
        "placement",
        "jobs",
        "avg JCT (s)",
        "avg JCT deadline (s)",
        "avg JCT non-deadline (s)",
        "p99 JCT (s)",
        "avg waiting (s)",
        "makespan (s)",
        "deadline miss rate",
        "miss rate feasible",
        "preemptions",
        "utilisation",
        "avg comm cost",
    ]);
    for m in rows {
        t.add_row([
            m.order.clone(),
            m.placement.clone(),
            m.jobs.to_string(),
            cell(m.avg_jct_s, 0),
            cell(m.avg_jct_deadline_s, 0),
            cell(m.avg_jct_nondeadline_s, 0),
            cell(m.p99_jct_s, 0),
            cell(m.avg_waiting_s, 0),
            format!("{:.0}", m.makespan_s),
            cell(m.deadline_miss_rate, 3),
            cell(m.deadline_miss_rate_feasible, 3),
            m.preemptions.to_string(),
            cell(m.utilization, 3),
            cell(m.avg_comm_cost, 4),
        ]);
    }
    t.to_string()
}
