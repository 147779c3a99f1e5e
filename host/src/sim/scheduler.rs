//! A scheduler = one job order + one placer + one DAG planner, and the combined one named
//! `gantry`.

use super::dag_run::DagPlannerKind;
use crate::cli::value_name;
use crate::registry::{OrderKind, PlacerKind};

/// The three choices a cluster scheduler makes, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SchedulerSpec {
    /// Which job next.
    pub order: OrderKind,
    /// On which GPUs.
    pub placer: PlacerKind,
    /// How a DAG job's tasks use its GPUs.
    pub dag_planner: DagPlannerKind,
}

impl SchedulerSpec {
    /// gantry's combined scheduler: TIAS orders jobs (deadline-aware, information-agnostic),
    /// the learned PPO placer picks GPUs within the type where each job runs fastest
    /// (`ppo-gavel`), WORL-RTGS plans DAG jobs on them. Its rows are labelled `gantry` (JSON
    /// `"scheduler": "gantry"`).
    pub const GANTRY: SchedulerSpec = SchedulerSpec {
        order: OrderKind::Tias,
        placer: PlacerKind::PpoGavel,
        dag_planner: DagPlannerKind::Worl,
    };

    /// A scheduler from its three parts.
    pub const fn new(order: OrderKind, placer: PlacerKind, dag_planner: DagPlannerKind) -> Self {
        Self {
            order,
            placer,
            dag_planner,
        }
    }

    /// The label in tables and JSON: `gantry` for [`GANTRY`](Self::GANTRY), else
    /// `order + placer + planner` (e.g. `las + best-fit + heft`).
    pub fn label(&self) -> String {
        if *self == Self::GANTRY {
            return "gantry".into();
        }
        format!(
            "{} + {} + {}",
            value_name(&self.order),
            value_name(&self.placer),
            self.dag_planner.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(SchedulerSpec::GANTRY.label(), "gantry");
        let s = SchedulerSpec::new(OrderKind::Las, PlacerKind::BestFit, DagPlannerKind::Heft);
        assert_eq!(s.label(), "las + best-fit + heft");
    }
}
