//! `gantry dag`: plans one DAG workload with several planners; a table (or JSON) of
//! makespans, lower bounds and planning times, optionally a Gantt chart.

use crate::cli::write_line;
use crate::dag::{self, cli::DagArgs};

/// Runs `gantry dag`.
pub fn run(args: &DagArgs) -> anyhow::Result<()> {
    let problem = dag::load(&args.input, &args.load_options())?;
    let reports = dag::run_planners(&problem, &args.planners, &args.planner_options())?;
    if let Some(path) = &args.gantt {
        dag::gantt::write_gantt_svg(path, &reports)?;
        eprintln!("gantry: Gantt chart written to {}", path.display());
    }
    if args.json {
        return write_line(serde_json::to_string(&reports)?);
    }
    // WORL slices and TPC-H are in ms, shown in seconds (as in the docs); STG and HEFT
    // matrices are in the file's own unit.
    let (scale, unit) = match reports.first().map(|r| r.time_unit) {
        Some("ms") => (1000.0, "s"),
        _ => (1.0, "file units"),
    };
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    table.set_header([
        "planner".to_string(),
        "tasks".into(),
        "edges".into(),
        "gpus".into(),
        format!("makespan ({unit})"),
        format!("lower bound ({unit})"),
        "ratio".into(),
        "plan time (ms)".into(),
    ]);
    for r in &reports {
        table.add_row([
            r.planner.clone(),
            r.tasks.to_string(),
            r.edges.to_string(),
            r.gpus.to_string(),
            format!("{:.1}", r.makespan / scale),
            format!("{:.1}", r.lower_bound / scale),
            format!("{:.3}", r.ratio),
            format!("{:.1}", r.plan_ms),
        ]);
    }
    write_line(format!(
        "input: {} (seed {})",
        args.input.display(),
        args.seed
    ))?;
    write_line(table)?;
    for r in reports.iter().filter(|r| r.budget_ms.is_some()) {
        write_line(format!(
            "{}: budget {} ms of search ({} work units spent; deterministic for the seed)",
            r.planner,
            r.budget_ms.unwrap_or(0),
            r.work.unwrap_or(0)
        ))?;
    }
    Ok(())
}
