//! The per-scheduler charts: JCT CDF, deadline miss rate, utilisation and queue over time.

use super::{PALETTE, PlotError, SIZE_PX, Series, draw_err, time_unit};
use crate::sim::TimelinePoint;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Points per CDF line at most (evenly spaced in rank).
const CDF_POINTS: usize = 400;
/// Time bins of the utilisation and queue lines.
const TIME_BINS: usize = 240;

fn colour(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// JCTs of the finished jobs, seconds, sorted.
fn jcts_s(run: &Series<'_>) -> Vec<f64> {
    let mut v: Vec<f64> = run
        .output
        .jobs
        .iter()
        .filter_map(|j| {
            j.finish_ms
                .map(|f| (f.saturating_sub(j.submit_ms)) as f64 / 1000.0)
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// `jct_cdf.svg`: fraction of jobs finished within x seconds of submission, x on a log axis.
pub fn jct_cdf(path: &Path, runs: &[Series<'_>]) -> Result<(), PlotError> {
    let all: Vec<Vec<f64>> = runs.iter().map(jcts_s).collect();
    let lo = all
        .iter()
        .flatten()
        .copied()
        .filter(|&x| x > 0.0)
        .fold(f64::INFINITY, f64::min);
    let lo = if lo.is_finite() { lo.max(1.0) } else { 1.0 };
    let hi = all.iter().flatten().copied().fold(lo * 10.0, f64::max);
    let root = SVGBackend::new(path, SIZE_PX).into_drawing_area();
    let e = |x: &dyn std::fmt::Display| draw_err(path, x);
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Job completion time (JCT) distribution", ("sans-serif", 22))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("JCT = finish − submit (s, log scale)")
        .y_desc("fraction of finished jobs with JCT ≤ x")
        .x_label_formatter(&|x| thousands(*x))
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|x| e(&x))?;
    for (i, (run, jcts)) in runs.iter().zip(&all).enumerate() {
        if jcts.is_empty() {
            continue;
        }
        let n = jcts.len();
        let step = n.div_ceil(CDF_POINTS).max(1);
        let mut points: Vec<(f64, f64)> = (0..n)
            .step_by(step)
            .map(|k| (jcts[k].max(lo), (k + 1) as f64 / n as f64))
            .collect();
        points.push((jcts[n - 1].max(lo), 1.0));
        let c = colour(i);
        let width = if i == 0 { 3 } else { 2 };
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(width)))
            .map_err(|x| e(&x))?
            .label(run.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

/// A number with thousands separators: 1,000,000.
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `deadline_miss.svg`: one horizontal bar per scheduler, its miss rate written at its end.
pub fn deadline_miss(path: &Path, runs: &[Series<'_>]) -> Result<(), PlotError> {
    let e = |x: &dyn std::fmt::Display| draw_err(path, x);
    let n = runs.len().max(1);
    let height = (120 + 44 * n as u32).max(260);
    let root = SVGBackend::new(path, (SIZE_PX.0, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let deadline_jobs = runs.first().map_or(0, |r| r.metrics.deadline_jobs);
    let top = runs
        .iter()
        .filter_map(|r| r.metrics.deadline_miss_rate)
        .fold(0.0, f64::max);
    let x_max = (top * 1.25).clamp(0.05, 1.0);
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Deadline miss rate ({deadline_jobs} jobs with a deadline)"),
            ("sans-serif", 22),
        )
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(230)
        .build_cartesian_2d(0.0..x_max, (0..n - 1).into_segmented())
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("share of deadline jobs late, rejected or unfinished")
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(n - 1 - *i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|x| e(&x))?;
    for (i, run) in runs.iter().enumerate() {
        let row = n - 1 - i;
        let rate = run.metrics.deadline_miss_rate.unwrap_or(0.0);
        let text = crate::metrics::cell(run.metrics.deadline_miss_rate, 3);
        let bar = [
            (0.0, SegmentValue::Exact(row)),
            (rate, SegmentValue::Exact(row + 1)),
        ];
        chart
            .draw_series([Rectangle::new(bar.clone(), colour(i).filled())])
            .map_err(|x| e(&x))?;
        // A white border leaves a gap between neighbouring bars.
        chart
            .draw_series([Rectangle::new(bar, WHITE.stroke_width(6))])
            .map_err(|x| e(&x))?;
        // The bar's value, just right of its end, vertically centred.
        let style = ("sans-serif", 14)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        let at = (rate + x_max * 0.01, SegmentValue::CenterOf(row));
        chart
            .draw_series([Text::new(text, at, style)])
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))
}

/// Time-weighted mean of `value` over `bins` equal bins of `[0, end_ms)`.
fn binned(
    points: &[TimelinePoint],
    end_ms: f64,
    bins: usize,
    value: impl Fn(&TimelinePoint) -> f64,
) -> Vec<f64> {
    let width = end_ms / bins as f64;
    let mut sums = vec![0.0; bins];
    for (k, p) in points.iter().enumerate() {
        let from = p.time_ms as f64;
        let to = points
            .get(k + 1)
            .map_or(end_ms, |q| q.time_ms as f64)
            .min(end_ms);
        if to <= from {
            continue;
        }
        let v = value(p);
        let (mut t, last) = (from, ((to / width).ceil() as usize).min(bins));
        for (b, sum) in sums
            .iter_mut()
            .enumerate()
            .take(last)
            .skip((from / width) as usize)
        {
            let bin_end = (b + 1) as f64 * width;
            let span = bin_end.min(to) - t;
            if span > 0.0 {
                *sum += v * span;
                t += span;
            }
        }
    }
    sums.iter().map(|s| s / width).collect()
}

/// `utilisation_queue.svg`: two panels over the same time axis — GPU utilisation (busy
/// GPUs / all GPUs) and jobs waiting — one line per scheduler.
pub fn utilisation_queue(
    path: &Path,
    runs: &[Series<'_>],
    cluster_gpus: usize,
) -> Result<(), PlotError> {
    let e = |x: &dyn std::fmt::Display| draw_err(path, x);
    // The tail after 99 % of the jobs finished is a handful of long jobs on an idle cluster:
    // the axis ends there.
    let end_ms = runs
        .iter()
        .map(|r| finish_quantile_ms(r, 0.99))
        .fold(1.0, f64::max);
    let (unit, per_unit) = time_unit(end_ms);
    let x_end = end_ms / per_unit;
    let gpus = cluster_gpus.max(1) as f64;
    let utilisation: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| {
            binned(&r.output.timeline, end_ms, TIME_BINS, |p| {
                f64::from(p.busy_gpus) / gpus
            })
        })
        .collect();
    let queue: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| {
            binned(&r.output.timeline, end_ms, TIME_BINS, |p| {
                f64::from(p.queued_jobs)
            })
        })
        .collect();
    let queue_max = queue.iter().flatten().copied().fold(1.0, f64::max) * 1.05;
    let root = SVGBackend::new(path, (SIZE_PX.0, 820)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let root = root
        .titled(
            "GPU utilisation and queue length over time",
            ("sans-serif", 22),
        )
        .map_err(|x| e(&x))?;
    let (upper, lower) = root.split_vertically(390);
    let x_desc = format!(
        "time since the first submission ({unit}; until 99 % of the jobs finished; mean over {TIME_BINS} bins)"
    );
    panel(
        &upper,
        runs,
        &utilisation,
        x_end,
        0.0..1.05,
        &x_desc,
        "GPU utilisation (busy / all GPUs)",
        SeriesLabelPosition::UpperRight,
    )
    .map_err(|x| e(&x))?;
    panel(
        &lower,
        runs,
        &queue,
        x_end,
        0.0..queue_max,
        &x_desc,
        "jobs waiting (queued or preempted)",
        SeriesLabelPosition::UpperRight,
    )
    .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

/// The time by which a share `q` of the run's jobs had finished, ms.
fn finish_quantile_ms(run: &Series<'_>, q: f64) -> f64 {
    let mut finishes: Vec<u64> = run.output.jobs.iter().filter_map(|j| j.finish_ms).collect();
    finishes.sort_unstable();
    let Some(last) = finishes.len().checked_sub(1) else {
        return 0.0;
    };
    finishes[((q * finishes.len() as f64).ceil() as usize).clamp(1, last + 1) - 1] as f64
}

/// One panel of binned lines over `[0, x_end]`.
#[allow(clippy::too_many_arguments)]
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    runs: &[Series<'_>],
    lines: &[Vec<f64>],
    x_end: f64,
    y: std::ops::Range<f64>,
    x_desc: &str,
    y_desc: &str,
    legend: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x_end, y)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 13))
        .draw()?;
    for (i, (run, values)) in runs.iter().zip(lines).enumerate() {
        let width = x_end / values.len().max(1) as f64;
        let points = values
            .iter()
            .enumerate()
            .map(|(b, &v)| ((b as f64 + 0.5) * width, v));
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(
                points,
                c.stroke_width(if i == 0 { 3 } else { 1 }),
            ))?
            .label(run.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)));
    }
    chart
        .configure_series_labels()
        .position(legend)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binned_means_are_time_weighted() {
        let p = |t: u64, b: u32| TimelinePoint {
            time_ms: t,
            busy_gpus: b,
            queued_jobs: 0,
        };
        // 4 GPUs busy on [0, 50), 0 on [50, 100): bins of 50 → 4, 0; bins of 100 → 2.
        let pts = [p(0, 4), p(50, 0)];
        assert_eq!(
            binned(&pts, 100.0, 2, |x| f64::from(x.busy_gpus)),
            [4.0, 0.0]
        );
        assert_eq!(binned(&pts, 100.0, 1, |x| f64::from(x.busy_gpus)), [2.0]);
        let pts = [p(0, 4), p(25, 8)];
        assert_eq!(
            binned(&pts, 100.0, 2, |x| f64::from(x.busy_gpus)),
            [6.0, 8.0]
        );
        assert_eq!(thousands(1_234_567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
    }
}
