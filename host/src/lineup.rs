//! Schedulers side by side on one workload: which ones ([`LINEUP`], what `gantry simulate`
//! shows with no scheduler flags; [`schedulers`], the `order × placer × planner` grid of
//! `gantry compare`), running them in parallel (rayon, [`run_schedulers`]), and their tables:
//! every metric ([`full_table`]) or the lineup's summary with the best value of each column
//! marked ([`table`]).

use crate::metrics::{Metrics, RunInfo, cell};
use crate::progress::RunProgress;
use crate::registry::{OrderKind, PlacerKind};
use crate::sim::{DagPlannerKind, SchedulerSpec, SimError, SimOutput, Simulation, run};
use crate::workload::Workload;
use rayon::prelude::*;

/// gantry first, then FIFO + first-fit, Tiresias LAS + best-fit and EDF + best-fit, each with
/// DAG jobs planned by HEFT and by the plain topological-order list schedule.
pub const LINEUP: [SchedulerSpec; 7] = [
    SchedulerSpec::GANTRY,
    SchedulerSpec::new(OrderKind::Fifo, PlacerKind::FirstFit, DagPlannerKind::Heft),
    SchedulerSpec::new(OrderKind::Fifo, PlacerKind::FirstFit, DagPlannerKind::List),
    SchedulerSpec::new(OrderKind::Las, PlacerKind::BestFit, DagPlannerKind::Heft),
    SchedulerSpec::new(OrderKind::Las, PlacerKind::BestFit, DagPlannerKind::List),
    SchedulerSpec::new(OrderKind::Edf, PlacerKind::BestFit, DagPlannerKind::Heft),
    SchedulerSpec::new(OrderKind::Edf, PlacerKind::BestFit, DagPlannerKind::List),
];

/// Whether smaller or larger is better in a column.
#[derive(Clone, Copy)]
enum Better {
    Lower,
    Higher,
}

/// One numeric column: header, value of a row (None: not applicable), decimals, direction.
struct Column {
    header: &'static str,
    value: fn(&Metrics) -> Option<f64>,
    decimals: usize,
    better: Better,
}

const COLUMNS: [Column; 7] = [
    Column {
        header: "avg JCT (s)",
        value: |m| m.avg_jct_s,
        decimals: 0,
        better: Better::Lower,
    },
    Column {
        header: "p99 JCT (s)",
        value: |m| m.p99_jct_s,
        decimals: 0,
        better: Better::Lower,
    },
    Column {
        header: "DAG JCT (s)",
        value: |m| m.avg_jct_dag_s,
        decimals: 0,
        better: Better::Lower,
    },
    Column {
        header: "miss rate",
        value: |m| m.deadline_miss_rate,
        decimals: 3,
        better: Better::Lower,
    },
    Column {
        header: "non-DL JCT (s)",
        value: |m| m.avg_jct_nondeadline_s,
        decimals: 0,
        better: Better::Lower,
    },
    Column {
        header: "GPU util",
        value: |m| m.utilization,
        decimals: 3,
        better: Better::Higher,
    },
    Column {
        header: "makespan (s)",
        value: |m| Some(m.makespan_s),
        decimals: 0,
        better: Better::Lower,
    },
];

/// The side-by-side table: one row per scheduler, the best value of each column (as
/// printed, so ties are all marked) followed by `*`.
pub fn table(rows: &[Metrics]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    let mut header = vec!["scheduler"];
    header.extend(COLUMNS.iter().map(|c| c.header));
    t.set_header(header);
    let printed: Vec<Vec<Option<String>>> = rows
        .iter()
        .map(|m| {
            COLUMNS
                .iter()
                .map(|c| (c.value)(m).map(|v| format!("{v:.*}", c.decimals)))
                .collect()
        })
        .collect();
    let best: Vec<Option<f64>> = COLUMNS
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let values = printed
                .iter()
                .filter_map(|row| row[i].as_ref().and_then(|v| v.parse::<f64>().ok()));
            match c.better {
                Better::Lower => values.reduce(f64::min),
                Better::Higher => values.reduce(f64::max),
            }
        })
        .collect();
    for (m, row) in rows.iter().zip(&printed) {
        let mut cells = vec![m.scheduler.clone()];
        for (i, cell) in row.iter().enumerate() {
            cells.push(match cell {
                None => "-".to_string(),
                Some(v) if v.parse::<f64>().ok() == best[i] && rows.len() > 1 => format!("{v} *"),
                Some(v) => format!("{v}  "),
            });
        }
        t.add_row(cells);
    }
    for i in 1..=COLUMNS.len() {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    t.to_string()
}

/// The lines under the table: what `gantry` is and what the columns mean.
pub const LEGEND: &str = "* best in its column. gantry = TIAS order + ppo-gavel placer (the learned placer, in the GPU type \
fastest for each job by Gavel's throughputs) + WORL-RTGS DAG planner; other rows: order + placer + DAG planner \
(list = topological order, first free GPU).\nDAG JCT = average JCT of DAG jobs; miss rate = deadline jobs late, \
rejected or unfinished; non-DL JCT = average JCT of jobs without a deadline; GPU util = GPU time held / (GPUs × makespan).";

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

/// The comparison as a markdown table, every metric a column (`gantry compare`).
pub fn full_table(rows: &[Metrics]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(scheduler: &str, jct: f64, dag: Option<f64>, util: f64) -> Metrics {
        Metrics {
            scheduler: scheduler.into(),
            avg_jct_s: Some(jct),
            avg_jct_dag_s: dag,
            utilization: Some(util),
            ..Metrics::default()
        }
    }

    #[test]
    fn marks_the_best_of_each_column() {
        let rows = [
            metrics("gantry", 100.0, Some(50.0), 0.5),
            metrics("fifo + first-fit + heft", 90.0, Some(70.0), 0.7),
        ];
        let text = table(&rows);
        let gantry = text.lines().find(|l| l.contains("gantry")).unwrap();
        let fifo = text.lines().find(|l| l.contains("fifo")).unwrap();
        assert!(
            gantry.contains("50 *") && !gantry.contains("100 *"),
            "{text}"
        );
        assert!(fifo.contains("90 *") && fifo.contains("0.700 *"), "{text}");
        assert_eq!(LINEUP[0].label(), "gantry");
    }
}
