//! `dag_gantt.svg`: one DAG job's tasks on the GPUs of its gang, as its plan ran.

use super::{PALETTE, PlotError, Series, draw_err, time_unit};
use crate::sim::{DagRunRecord, JobRecord};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Pixels per GPU row.
const ROW_PX: u32 = 46;

/// The job to show: among finished DAG jobs, preferably one that ran without restart, the
/// one with the most tasks, then on the most GPUs; ties by the lower id.
fn pick_job(jobs: &[JobRecord]) -> Option<&JobRecord> {
    let finished = jobs
        .iter()
        .filter(|j| j.dag_tasks > 0 && j.finish_ms.is_some() && !j.dag_runs.is_empty());
    let key = |j: &&JobRecord| {
        let gang = j.dag_runs.last().map_or(0, |r| r.gpus.len());
        (
            j.dag_runs.len() == 1,
            j.dag_tasks,
            gang,
            std::cmp::Reverse(j.id),
        )
    };
    finished.max_by_key(key)
}

/// Draws the chosen DAG job of `run` into `path`; `false` (nothing written) when the run has
/// no finished DAG job. The last run of the job is drawn (an earlier, preempted run's tasks
/// are noted in the title).
pub fn dag_job_to_chart(path: &Path, run: &Series<'_>) -> Result<bool, PlotError> {
    let Some(job) = pick_job(&run.output.jobs) else {
        return Ok(false);
    };
    let Some(last) = job.dag_runs.last() else {
        return Ok(false);
    };
    draw(path, run, job, last)?;
    Ok(true)
}

fn draw(
    path: &Path,
    run: &Series<'_>,
    job: &JobRecord,
    last: &DagRunRecord,
) -> Result<(), PlotError> {
    let e = |x: &dyn std::fmt::Display| draw_err(path, x);
    // Rows: the gang's GPUs that ran a task, in gang order (idle ones are counted in the title).
    let gpus: Vec<u16> = last
        .gpus
        .iter()
        .copied()
        .filter(|g| last.plan.tasks.iter().any(|t| t.gpu.0 == *g))
        .collect();
    let rows = gpus.len().max(1);
    let end_ms = last.plan.makespan_ms.max(1.0);
    let (unit, per_unit) = time_unit(end_ms);
    let height = 150 + ROW_PX * rows as u32;
    let root = SVGBackend::new(path, (super::SIZE_PX.0, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let restarts = job.dag_runs.len() - 1;
    let jct_s = job.finish_ms.unwrap_or(0).saturating_sub(job.submit_ms) as f64 / 1000.0;
    let title = format!(
        "DAG job {} under {}: {} tasks on {} of its {} GPUs, plan makespan {:.1} {unit}, JCT {:.1} {unit}{}",
        job.id,
        run.label,
        job.dag_tasks,
        gpus.len(),
        last.gpus.len(),
        last.plan.makespan_ms / per_unit,
        jct_s * 1000.0 / per_unit,
        if restarts > 0 {
            format!(" (last of {} runs shown)", restarts + 1)
        } else {
            String::new()
        }
    );
    let names: Vec<String> = gpus
        .iter()
        .map(|g| {
            format!(
                "GPU {g} ({})",
                run.output
                    .gpu_types
                    .get(usize::from(*g))
                    .map_or("?", |s| s.as_str())
            )
        })
        .collect();
    let x_end = end_ms / per_unit;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(130)
        .build_cartesian_2d(0.0..x_end * 1.01, (0..rows - 1).into_segmented())
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(format!("time since the run began ({unit})"))
        .y_labels(rows)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|x| e(&x))?;
    let row_of = |g: u16| gpus.iter().position(|&x| x == g).unwrap_or(0);
    // Roughly 7.5 px per label character at 13 px: label a bar only when the label fits.
    let px_per_unit = f64::from(super::SIZE_PX.0 - 160) / (x_end * 1.01);
    for t in &last.plan.tasks {
        let row = row_of(t.gpu.0);
        let (x0, x1) = (t.start_ms / per_unit, t.finish_ms / per_unit);
        let (r, g, b) = PALETTE[t.task as usize % PALETTE.len()];
        let fill = RGBColor(r, g, b).mix(0.85);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [
                    (x0, SegmentValue::Exact(row)),
                    (x1, SegmentValue::Exact(row + 1)),
                ],
                fill.filled(),
            )))
            .map_err(|x| e(&x))?;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [
                    (x0, SegmentValue::Exact(row)),
                    (x1, SegmentValue::Exact(row + 1)),
                ],
                BLACK.stroke_width(1),
            )))
            .map_err(|x| e(&x))?;
        let label = format!("t{}", t.task);
        if (x1 - x0) * px_per_unit >= 7.5 * label.len() as f64 + 4.0 {
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (x0 + 3.0 / px_per_unit, SegmentValue::CenterOf(row)),
                    ("sans-serif", 13)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                )))
                .map_err(|x| e(&x))?;
        }
    }
    root.present().map_err(|x| e(&x))
}
