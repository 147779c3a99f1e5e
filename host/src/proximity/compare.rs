//! The placers compared on Proximity-DRL's episodes (`gantry compare --scenario
//! proximity-drl`): every placer on the same episodes, with the anchor's figures beside ours
//! when the episodes are theirs.

use super::env::{EpisodeResult, Variant, run_episode};
use super::jobs::ProxJob;
use super::{PROXIMITY_GPUS, proximity_tree};
use crate::learn::scorer::TractScorer;
use crate::registry::PlacerKind;
use gantry_core::placement::{
    BestFit, ExactOptimal, FirstFit, LoadBalance, Placer, ProximityGreedy, RandomPlacer,
    ScoredPlacer,
};
use std::path::Path;

/// What a scenario run was: printed above its table, and carried by every JSON row.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ScenarioInfo {
    /// The scenario.
    pub scenario: &'static str,
    /// The environment variant.
    pub variant: Variant,
    /// Episode seeds, as given.
    pub seeds: String,
    /// Where the episodes come from: their recorded sequences, or gantry's generator.
    pub episodes: String,
    /// The PPO model, when the `ppo` placer ran one.
    pub model: Option<String>,
    /// The gantry version that ran it.
    pub gantry_version: &'static str,
}

impl std::fmt::Display for ScenarioInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "scenario: {} (variant {}), seeds {}; episodes: {}",
            self.scenario,
            crate::cli::value_name(&self.variant),
            self.seeds,
            self.episodes
        )?;
        if let Some(model) = &self.model {
            write!(f, "; ppo model {model}")?;
        }
        Ok(())
    }
}

const G: usize = PROXIMITY_GPUS;

/// The anchor's per-episode `(comm_per_job, jct_theirs, makespan)` by (selector, seed).
pub type AnchorEpisodes = std::collections::HashMap<(String, u64), (f64, f64, f64)>;

/// One placer's figures over all seeds (means over episodes).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ScenarioRow {
    /// Placer name as on the command line.
    pub placement: String,
    /// Episodes run.
    pub seeds: usize,
    /// Mean communication cost per job.
    pub comm_cost_per_job: f64,
    /// Sample standard deviation of the per-episode means.
    pub comm_cost_std: f64,
    /// Σ cost / Σ per-decision optimum (the optimum over the GPUs free at each decision in
    /// this placer's own episodes); 1 = optimal at every decision.
    pub optimal_ratio: f64,
    /// `comm_cost_per_job` / the `optimal` placer's (when it ran), the anchor's "paired"
    /// measure.
    pub vs_optimal_placer: Option<f64>,
    /// Their JCT: mean finish step from t = 0.
    pub avg_jct: f64,
    /// Mean finish − arrival, steps.
    pub jct_minus_arrival: f64,
    /// Mean makespan, steps.
    pub makespan: f64,
    /// Mean running jobs per step.
    pub throughput: f64,
    /// Placer picks replaced by the lowest usable GPU.
    pub placer_faults: u32,
    /// The anchor's comm cost per job for the same selector and seeds, if known.
    pub anchor_comm_cost_per_job: Option<f64>,
    /// The anchor's JCT (theirs), if known.
    pub anchor_avg_jct: Option<f64>,
    /// The anchor's makespan, if known.
    pub anchor_makespan: Option<f64>,
    /// What ran (set by `gantry compare --scenario`).
    pub run: Option<ScenarioInfo>,
}

/// A placer on their tree by kind. `model` is the PPO scorer (loaded once by the caller).
pub fn placer_for(kind: PlacerKind, seed: u64, model: &TractScorer) -> Box<dyn Placer<G>> {
    match kind {
        PlacerKind::FirstFit => Box::new(FirstFit),
        PlacerKind::BestFit => Box::new(BestFit),
        PlacerKind::Random => Box::new(RandomPlacer::new(seed)),
        PlacerKind::LoadBalance => Box::new(LoadBalance),
        PlacerKind::Greedy => Box::new(ProximityGreedy),
        PlacerKind::Optimal => Box::new(ExactOptimal::<G>::default()),
        PlacerKind::Ppo | PlacerKind::PpoGavel => {
            Box::new(ScoredPlacer::<_, G>::named(model.clone(), "ppo"))
        }
    }
}

/// The anchor's selector name for a placer, where they ran one.
pub fn anchor_selector(kind: PlacerKind) -> Option<&'static str> {
    match kind {
        PlacerKind::FirstFit => Some("first"),
        PlacerKind::Random => Some("random"),
        PlacerKind::LoadBalance => Some("loadbalance"),
        PlacerKind::Optimal => Some("opt_bestfit"),
        PlacerKind::Ppo => Some("ppo_latest"),
        _ => None,
    }
}

/// Anchor per-episode figures `(comm_per_job, jct_theirs, makespan)` keyed by (selector,
/// seed), FCFS only, from `episodes_seeds0-19_all.csv`.
pub fn load_anchor_episodes(path: &Path) -> anyhow::Result<AnchorEpisodes> {
    let mut rdr = csv::Reader::from_path(path)?;
    let mut out = std::collections::HashMap::new();
    for rec in rdr.records() {
        let r = rec?;
        if r.get(0) != Some("fcfs") {
            continue;
        }
        let num = |i: usize| -> anyhow::Result<f64> {
            r.get(i)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| anyhow::anyhow!("{}: bad column {i}", path.display()))
        };
        out.insert(
            (r.get(1).unwrap_or("").to_string(), num(2)? as u64),
            (num(4)?, num(5)?, num(7)?),
        );
    }
    Ok(out)
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

fn std_dev(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// Runs every placer on every `(seed, jobs)` episode. O(placers · episodes · episode cost).
pub fn compare(
    episodes: &[(u64, Vec<ProxJob>)],
    placers: &[PlacerKind],
    variant: Variant,
    model: &TractScorer,
    anchor: Option<&AnchorEpisodes>,
) -> anyhow::Result<Vec<ScenarioRow>> {
    let topo = proximity_tree();
    let mut rows = Vec::new();
    for &kind in placers {
        let mut results: Vec<EpisodeResult> = Vec::with_capacity(episodes.len());
        for (seed, jobs) in episodes {
            let mut p = placer_for(kind, *seed, model);
            results.push(run_episode(&topo, jobs, &mut *p, variant)?);
        }
        let comm: Vec<f64> = results.iter().map(EpisodeResult::comm_per_job).collect();
        let cost_sum: f64 = results
            .iter()
            .flat_map(|r| r.jobs.iter().map(|j| j.cost))
            .sum();
        let opt_sum: f64 = results
            .iter()
            .flat_map(|r| r.jobs.iter().map(|j| j.optimum))
            .sum();
        let anchor_vals: Option<Vec<(f64, f64, f64)>> =
            anchor.zip(anchor_selector(kind)).and_then(|(a, sel)| {
                episodes
                    .iter()
                    .map(|(s, _)| a.get(&(sel.to_string(), *s)).copied())
                    .collect()
            });
        let pick = |f: fn(&(f64, f64, f64)) -> f64| {
            anchor_vals
                .as_ref()
                .map(|v| mean(&v.iter().map(f).collect::<Vec<_>>()))
        };
        rows.push(ScenarioRow {
            placement: kind_name(kind),
            seeds: results.len(),
            comm_cost_per_job: mean(&comm),
            comm_cost_std: std_dev(&comm),
            optimal_ratio: if opt_sum > 0.0 {
                cost_sum / opt_sum
            } else {
                f64::NAN
            },
            vs_optimal_placer: None,
            avg_jct: mean(
                &results
                    .iter()
                    .map(EpisodeResult::jct_theirs)
                    .collect::<Vec<_>>(),
            ),
            jct_minus_arrival: mean(
                &results
                    .iter()
                    .map(EpisodeResult::jct_minus_arrival)
                    .collect::<Vec<_>>(),
            ),
            makespan: mean(
                &results
                    .iter()
                    .map(|r| f64::from(r.makespan))
                    .collect::<Vec<_>>(),
            ),
            throughput: mean(&results.iter().map(|r| r.throughput).collect::<Vec<_>>()),
            placer_faults: results.iter().map(|r| r.placer_faults).sum(),
            anchor_comm_cost_per_job: pick(|v| v.0),
            anchor_avg_jct: pick(|v| v.1),
            anchor_makespan: pick(|v| v.2),
            run: None,
        });
    }
    if let Some(opt) = rows
        .iter()
        .find(|r| r.placement == "optimal")
        .map(|r| r.comm_cost_per_job)
    {
        for r in &mut rows {
            r.vs_optimal_placer = Some(r.comm_cost_per_job / opt);
        }
    }
    Ok(rows)
}

/// The CLI name of a placer kind.
pub fn kind_name(kind: PlacerKind) -> String {
    crate::cli::value_name(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proximity::jobs::load_anchor_sequences;

    /// Our first-fit, LoadBalance and optimum reproduce the anchor's seeds 0–19 figures.
    #[test]
    fn heuristics_reproduce_the_anchor_table() {
        let Some(dir) = crate::test_support::shared("anchors/proximity-drl") else {
            return;
        };
        let eps = load_anchor_sequences(&dir.join("job_sequences_seeds0-19.csv")).unwrap();
        let anchor = load_anchor_episodes(&dir.join("episodes_seeds0-19_all.csv")).unwrap();
        let kinds = [
            PlacerKind::FirstFit,
            PlacerKind::LoadBalance,
            PlacerKind::Optimal,
        ];
        let none = TractScorer::unloaded();
        let rows = compare(&eps, &kinds, Variant::Compat, &none, Some(&anchor)).unwrap();
        for r in &rows {
            let a = r.anchor_comm_cost_per_job.unwrap();
            let tol = if r.placement == "optimal" { 2e-3 } else { 1e-9 };
            assert!(
                (r.comm_cost_per_job - a).abs() <= tol,
                "{}: {} vs anchor {a}",
                r.placement,
                r.comm_cost_per_job
            );
        }
    }
}
