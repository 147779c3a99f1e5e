//! Gantt charts of DAG plans (`gantry dag --gantt FILE.svg`): one panel per planner, a row per
//! GPU, a bar per task from its start to its finish as the core evaluator scheduled it
//! ([`ScheduledTask`]). Every panel shares the time axis (0 to the longest makespan), so the
//! planners compare at a glance. Drawn with plotters' SVG backend.

use super::report::{PlannerReport, ScheduledTask};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Chart width, pixels.
const WIDTH_PX: u32 = 1200;
/// Height of one GPU row, pixels (panels are at least [`MIN_PANEL_PX`] tall).
const ROW_PX: u32 = 12;
/// Smallest panel height, pixels.
const MIN_PANEL_PX: u32 = 160;
/// Panel header, axis and margin room, pixels.
const PANEL_CHROME_PX: u32 = 90;

/// Why a chart could not be written.
#[derive(Debug, thiserror::Error)]
pub enum GanttError {
    /// Nothing to draw.
    #[error("no planner reports to chart")]
    Empty,
    /// A task's times are not finite or end before they start (a bug upstream).
    #[error("{planner}: task {task} has start {start_ms} ms and finish {finish_ms} ms")]
    BadTimes {
        /// Planner whose plan it is.
        planner: String,
        /// Task id.
        task: u32,
        /// Start, ms.
        start_ms: f64,
        /// Finish, ms.
        finish_ms: f64,
    },
    /// plotters could not draw or write the file.
    #[error("cannot draw {path}: {message}")]
    Draw {
        /// Output file.
        path: String,
        /// plotters' error.
        message: String,
    },
}

/// Check every scheduled task's times. O(Σ tasks).
fn check_times(reports: &[PlannerReport]) -> Result<(), GanttError> {
    let bad = |r: &PlannerReport, s: &ScheduledTask| GanttError::BadTimes {
        planner: r.planner.clone(),
        task: s.task,
        start_ms: s.start_ms,
        finish_ms: s.finish_ms,
    };
    for r in reports {
        if let Some(s) = r.schedule.iter().find(|s| {
            !(s.start_ms.is_finite() && s.finish_ms.is_finite() && s.start_ms <= s.finish_ms)
        }) {
            return Err(bad(r, s));
        }
    }
    Ok(())
}

/// Draw `reports` (one panel each, in order) into the SVG file `path`. O(Σ tasks).
pub fn write_gantt_svg(path: &Path, reports: &[PlannerReport]) -> Result<(), GanttError> {
    if reports.is_empty() {
        return Err(GanttError::Empty);
    }
    check_times(reports)?;
    let draw_err = |e: &dyn std::fmt::Display| GanttError::Draw {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let gpus = reports.iter().map(|r| r.gpus).max().unwrap_or(1).max(1);
    let end_ms = reports
        .iter()
        .flat_map(|r| r.schedule.iter().map(|s| s.finish_ms))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let panel_px = (ROW_PX * gpus as u32 + PANEL_CHROME_PX).max(MIN_PANEL_PX);
    let height_px = panel_px.saturating_mul(reports.len() as u32);
    let root = SVGBackend::new(path, (WIDTH_PX, height_px)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_err(&e))?;
    let panels = root.split_evenly((reports.len(), 1));
    for (area, report) in panels.iter().zip(reports) {
        draw_panel(area, report, gpus, end_ms).map_err(|e| draw_err(&e))?;
    }
    root.present().map_err(|e| draw_err(&e))
}

/// The axis unit for a time span: ms below 10 s, s below 10 h, else h. (name, ms per unit)
fn time_unit(span_ms: f64) -> (&'static str, f64) {
    if span_ms < 1e4 {
        ("ms", 1.0)
    } else if span_ms < 3.6e7 {
        ("s", 1e3)
    } else {
        ("h", 3.6e6)
    }
}

/// One planner's panel: caption with makespan and ratio to the lower bound, one labelled row
/// per GPU (every row while rows are at least [`ROW_PX`] tall), a bar per task labelled
/// `t<id>` where the label fits inside it.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    report: &PlannerReport,
    gpus: usize,
    end_ms: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let caption = format!(
        "{}: makespan {:.1} {}, {:.3} × lower bound ({} tasks, {} GPUs)",
        report.planner, report.makespan, report.time_unit, report.ratio, report.tasks, report.gpus
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..end_ms, (0..gpus - 1).into_segmented())?;
    // Files in their own units (STG, matrices) are drawn as they are.
    let (unit, per_unit_ms) = if report.time_unit == "ms" {
        time_unit(end_ms)
    } else {
        (report.time_unit, 1.0)
    };
    let x_desc = format!("time ({unit})");
    let x_label = |x: &f64| format!("{}", (x / per_unit_ms * 100.0).round() / 100.0);
    let plot_px = f64::from(area.dim_in_pixel().1.saturating_sub(PANEL_CHROME_PX).max(1));
    let labels = gpus.min((plot_px / f64::from(ROW_PX)) as usize).max(1);
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(x_desc)
        .x_label_formatter(&x_label)
        .y_labels(labels)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(g) => format!("GPU {g}"),
            _ => String::new(),
        })
        .draw()?;
    let px_per_ms = f64::from(WIDTH_PX - 80) / end_ms;
    for s in &report.schedule {
        let row = usize::from(s.gpu);
        let bar = [
            (s.start_ms, SegmentValue::Exact(row)),
            (s.finish_ms, SegmentValue::Exact(row + 1)),
        ];
        let colour = Palette99::pick(s.task as usize);
        chart.draw_series([Rectangle::new(bar.clone(), colour.filled())])?;
        chart.draw_series([Rectangle::new(bar, WHITE.stroke_width(1))])?;
        // About 6 px per character at 11 px: label only bars the text fits in.
        let label = format!("t{}", s.task);
        if (s.finish_ms - s.start_ms) * px_per_ms >= 6.0 * label.len() as f64 + 4.0
            && f64::from(ROW_PX) >= 10.0
        {
            let (r, g, b) = colour.rgb();
            let dark = 299 * u32::from(r) + 587 * u32::from(g) + 114 * u32::from(b) < 128_000;
            let ink = if dark { WHITE } else { BLACK };
            let style = ("sans-serif", 11)
                .into_font()
                .color(&ink)
                .pos(Pos::new(HPos::Left, VPos::Center));
            let at = (s.start_ms + 2.0 / px_per_ms, SegmentValue::CenterOf(row));
            chart.draw_series([Text::new(label, at, style)])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(planner: &str, schedule: Vec<ScheduledTask>) -> PlannerReport {
        PlannerReport {
            planner: planner.into(),
            input: "test".into(),
            tasks: schedule.len(),
            edges: 0,
            gpus: 2,
            makespan: schedule.iter().map(|s| s.finish_ms).fold(0.0, f64::max),
            lower_bound: 1.0,
            ratio: 1.0,
            plan_ms: 0.0,
            seed: 1,
            evaluated_on: "cpu".into(),
            own_makespan: None,
            budget_ms: None,
            work: None,
            time_unit: "ms",
            note: None,
            schedule,
        }
    }

    fn task(task: u32, gpu: u16, start_ms: f64, finish_ms: f64) -> ScheduledTask {
        ScheduledTask {
            task,
            gpu,
            start_ms,
            finish_ms,
        }
    }

    #[test]
    fn one_bar_per_task_and_one_panel_per_planner() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("g.svg");
        let reports = [
            report("heft", vec![task(0, 0, 0.0, 2.0), task(1, 1, 2.0, 5.0)]),
            report(
                "woa",
                vec![
                    task(0, 1, 0.0, 3.0),
                    task(1, 1, 3.0, 4.5),
                    task(2, 0, 0.0, 1.0),
                ],
            ),
        ];
        write_gantt_svg(&path, &reports).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        assert!(svg.contains("heft: makespan 5.0 ms") && svg.contains("woa: makespan 4.5 ms"));
        // Filled task bars are <rect>s with a fill colour other than the white background.
        let bars = svg
            .lines()
            .filter(|l| {
                l.contains("<rect")
                    && !l.contains("fill=\"#FFFFFF\"")
                    && !l.contains("fill=\"none\"")
            })
            .count();
        assert_eq!(bars, 5, "{svg}");
        // Every GPU row and every (wide enough) bar is labelled.
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        for label in ["GPU 0", "GPU 1", "t0", "t1", "t2"] {
            assert!(texts.contains(&label), "{label} in {svg}");
        }
    }

    #[test]
    fn axis_unit_follows_the_span() {
        for (span_ms, unit) in [(0.0, "ms"), (9_999.0, "ms"), (10_000.0, "s"), (4e7, "h")] {
            assert_eq!(time_unit(span_ms).0, unit, "{span_ms}");
        }
    }

    #[test]
    fn bad_times_and_empty_input_are_typed_errors() {
        let path = Path::new("never-written.svg");
        assert!(matches!(write_gantt_svg(path, &[]), Err(GanttError::Empty)));
        let broken = [report("x", vec![task(3, 0, 4.0, 1.0)])];
        let err = write_gantt_svg(path, &broken).unwrap_err();
        assert!(matches!(err, GanttError::BadTimes { task: 3, .. }), "{err}");
        assert!(!path.exists());
    }
}
