//! DAG planning on heterogeneous GPUs (the WORL-RTGS part of gantry): a fixed-capacity
//! [`Dag`], GPU [`Platform`]s, the list-scheduling [`Evaluator`] with its makespan
//! [`LowerBound`], and planners behind one trait, [`DagPlanner`]: [`Heft`], [`Woa`] (with a
//! [`PlanAdvisor`] hook for learned plan proposals) and the [`RandomPlanner`] baseline.
//!
//! Everything is allocation-free and deterministic for a seed; capacities are const
//! generics. Large instances (10,000 tasks) are tens of MiB: keep them in a `Box` on the host.

pub mod eval;
pub mod gpus;
pub mod graph;
pub mod heft;
pub mod observation;
pub mod planner;
pub mod woa;

pub use eval::{Evaluator, LowerBound, Plan, PlanError};
pub use gpus::{Bandwidth, CostTable, GpuPool, Platform, PlatformError};
pub use graph::{Dag, DagError, Edge, TaskId};
pub use heft::{Heft, HeftAdvisor, upward_rank_order};
pub use observation::{ListState, OBS_LAYOUT_VERSION, OBS_WIDTH};
pub use planner::{AdvisorContext, DagPlanner, NoAdvisor, PlanAdvisor, RandomPlanner};
pub use woa::{Decoding, Woa, WoaConfig};
