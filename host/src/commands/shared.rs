//! What several commands share: output files created before a long run, the rule for a
//! learned placer whose model cannot be loaded (`--allow-fallback`), running schedulers under
//! one progress bar, their rows, and the charts.

use crate::learn::scorer::{DEFAULT_PPO_MODEL, TractScorer};
use crate::learn::tract_model::ModelError;
use crate::lineup;
use crate::metrics::{Metrics, RunInfo};
use crate::plot;
use crate::progress::RunProgress;
use crate::registry::PlacerKind;
use crate::sim::{SchedulerSpec, SimOutput};
use crate::workload::Workload;
use anyhow::Context;
use std::path::Path;

/// Creates (truncates) an output file before a long run, so a bad path fails at once.
pub fn create_output(path: &Path, flag: &str) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path).with_context(|| format!("{flag} {}", path.display()))
}

/// The label of a `ppo` row when its model is missing and fallback is allowed; an error
/// when it is not allowed. `None`: no `ppo` row, or its model loaded.
pub fn ppo_fallback(
    placers: &[PlacerKind],
    allow_fallback: bool,
) -> anyhow::Result<Option<String>> {
    if !placers
        .iter()
        .any(|p| matches!(p, PlacerKind::Ppo | PlacerKind::PpoGavel))
    {
        return Ok(None);
    }
    Ok(
        match check_ppo_model(Path::new(DEFAULT_PPO_MODEL), allow_fallback)? {
            PpoModel::Loaded => None,
            PpoModel::Fallback(label) => Some(label),
        },
    )
}

/// Relabels `ppo` and `ppo-gavel` rows that ran proximity-greedy.
pub fn label_fallback(rows: &mut [Metrics], label: Option<&String>) {
    for row in rows
        .iter_mut()
        .filter(|r| r.placement == "ppo" || r.placement == "ppo-gavel")
    {
        if let Some(label) = label {
            row.placement = label.clone();
        }
    }
}

/// Runs `schedulers` on `workload` in parallel under one progress bar; says once on stderr
/// if WORL planned without its DDQN, and for each run that stopped at the GPU-failure
/// budget.
pub fn simulate_all(
    workload: &Workload,
    schedulers: &[SchedulerSpec],
    quiet: bool,
) -> anyhow::Result<Vec<SimOutput>> {
    let total = (workload.jobs.len() * schedulers.len()) as u64;
    let progress = RunProgress::new(total, "jobs", quiet);
    let outputs = lineup::run_schedulers(workload, schedulers, Some(&progress))
        .with_context(|| format!("simulating {}", workload.name));
    progress.finish();
    let outputs = outputs?;
    if let Some(note) = outputs.iter().find_map(|o| o.dag_note.as_ref()) {
        eprintln!("gantry: WORL planned without its DDQN: {note}");
    }
    for out in &outputs {
        if let Some(gave_up) = &out.gave_up {
            eprintln!("gantry: {} + {}: {gave_up}", out.order, out.placer);
        }
    }
    Ok(outputs)
}

/// Metrics of `outputs`, each labelled with the run, `ppo` rows relabelled if they fell back.
pub fn rows_of(
    workload: &Workload,
    outputs: &[SimOutput],
    fallback: Option<&String>,
) -> Vec<Metrics> {
    let run = RunInfo::new(&workload.name, workload.cluster, &workload.config);
    let mut rows: Vec<Metrics> = outputs
        .iter()
        .map(|o| Metrics::from_output(o).with_run(run.clone()))
        .collect();
    label_fallback(&mut rows, fallback);
    rows
}

/// Writes the charts when `dir` is given, and says where on stderr.
pub fn write_plots(
    dir: Option<&Path>,
    workload: &Workload,
    outputs: &[SimOutput],
    rows: &[Metrics],
) -> anyhow::Result<()> {
    let Some(dir) = dir else {
        return Ok(());
    };
    let series: Vec<plot::Series<'_>> = outputs
        .iter()
        .zip(rows)
        .map(|(output, metrics)| plot::Series {
            label: metrics.scheduler.clone(),
            metrics,
            output,
        })
        .collect();
    let files = plot::write_all(dir, &series, workload.cluster.gpus())?;
    eprintln!(
        "gantry: {} charts written to {}",
        files.len(),
        dir.display()
    );
    Ok(())
}

/// What a `ppo` row runs when its model cannot be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PpoModel {
    /// The model loaded: the row is the learned placer.
    Loaded,
    /// `--allow-fallback`: proximity-greedy runs in its place, under this label.
    Fallback(String),
}

/// The label of a `ppo` row that ran proximity-greedy because the model could not be loaded.
pub fn fallback_label(err: &ModelError) -> String {
    let why = match err {
        ModelError::Missing { .. } => "model missing",
        _ => "model unusable",
    };
    format!("ppo→greedy (fallback: {why})")
}

/// Checks the PPO model at `path` before a run that uses `--placement ppo`. Without
/// `allow_fallback` a model that cannot be loaded is an error (a row labelled `ppo` must be
/// the learned placer); with it the row runs proximity-greedy and is labelled so.
pub fn check_ppo_model(path: &Path, allow_fallback: bool) -> anyhow::Result<PpoModel> {
    match TractScorer::load(path) {
        Ok(_) => Ok(PpoModel::Loaded),
        Err(err) if allow_fallback => Ok(PpoModel::Fallback(fallback_label(&err))),
        Err(err) => anyhow::bail!(
            "placement ppo: {err}; train one (`gantry train placement`), pass --model PATH \
             where the command has it, or --allow-fallback to run proximity-greedy in its \
             place (the row is then labelled `ppo→greedy`)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_model_fails_unless_fallback_is_allowed() {
        let missing = Path::new("/no/such/model.onnx");
        let err = check_ppo_model(missing, false).unwrap_err().to_string();
        assert!(err.contains("--allow-fallback"), "{err}");
        assert_eq!(
            check_ppo_model(missing, true).unwrap(),
            PpoModel::Fallback("ppo→greedy (fallback: model missing)".into())
        );
        let shipped = Path::new(crate::learn::scorer::DEFAULT_PPO_MODEL);
        assert_eq!(check_ppo_model(shipped, false).unwrap(), PpoModel::Loaded);
    }
}
