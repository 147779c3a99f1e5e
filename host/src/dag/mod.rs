//! DAG planning on the host: loaders that build the core's [`Dag`]
//! from real inputs, and [`run_planners`] that plans one DAG with several planners and reports
//! makespan, lower bound and planning time.
//!
//! # Capacities and the big stack
//! One capacity for every input: [`MAX_TASKS`] = 16,384 tasks, [`MAX_EDGES`] = 2^20 edges
//! (the 10,000-task WORL slice at synthetic fan-in 100 has 994,950), [`MAX_GPUS`] = 1,024.
//! The DAG is then ~34 MiB, WOA's scratch ~3 MiB, HEFT's ~0.6 MiB. The core has no
//! allocator and the workspace forbids `unsafe`, so these are built as values and moved into
//! a `Box`; a debug build materialises the value on the stack first. Every public entry here
//! therefore runs its work on a helper thread with a 1 GiB stack ([`on_big_stack`]; stack
//! pages are only committed when touched).
//!
//! # Inputs (`--format`)
//! - `worl`: WORL-RTGS Alibaba slices, [`worl`];
//! - `tpch`: Decima's TPC-H DAGs, [`tpch`];
//! - `stg`: Standard Task Graph Set files, [`stg`];
//! - `matrix`: HEFT cost matrices (task × GPU run times, task × task communication,
//!   GPU × GPU bandwidth), [`matrix`].

pub mod cli;
pub mod ddqn_env;
pub mod error;
pub mod exact;
pub mod gantt;
pub mod gpu_check;
pub mod matrix;
pub mod planners;
pub mod report;
pub mod search;
pub mod stg;
pub mod table;
pub mod tpch;
pub mod worl;
pub mod worl_rtgs;

pub use error::DagLoadError;
pub use planners::{DagRunError, PlannerKind, PlannerOptions, SearchOptions};
pub use report::{PlannerReport, ScheduledTask, run_planners};

use gantry_core::dag::{Bandwidth, CostTable, Dag, GpuPool};
use std::path::{Path, PathBuf};

/// Task capacity of every host DAG.
pub const MAX_TASKS: usize = 16_384;
/// Edge capacity of every host DAG.
pub const MAX_EDGES: usize = 1 << 20;
/// GPU capacity of every host platform.
pub const MAX_GPUS: usize = 1024;
/// GPU-type capacity of cost-table platforms (columns of a `matrix` input).
pub const MAX_TYPES: usize = 16;
/// Stack size of the helper thread that builds and plans the big fixed-capacity values.
pub const BIG_STACK_BYTES: usize = 1 << 30;

/// The host's DAG type.
pub type HostDag = Dag<MAX_TASKS, MAX_EDGES>;
/// The host's speed-based GPU pool.
pub type HostPool = GpuPool<MAX_GPUS>;
/// The host's cost-table platform.
pub type HostTable = CostTable<MAX_TASKS, MAX_TYPES, MAX_GPUS>;

/// The GPUs a DAG is planned on.
#[derive(Debug)]
pub enum HostPlatform {
    /// Speeds: run time = work / speed.
    Pool(Box<HostPool>),
    /// A run-time table per task and GPU type.
    Table(Box<HostTable>),
}

/// A loaded planning problem: a sealed DAG and its GPUs.
#[derive(Debug)]
pub struct Problem {
    /// Where it came from, for reports.
    pub name: String,
    /// The sealed DAG.
    pub dag: Box<HostDag>,
    /// The GPUs.
    pub platform: HostPlatform,
    /// Unit of the task costs: `"ms"` (WORL, TPC-H) or `"file units"` (STG, matrix).
    pub time_unit: &'static str,
}

/// Input formats of `gantry dag --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// WORL-RTGS Alibaba slice `instanceN.csv`.
    Worl,
    /// Decima TPC-H `tpch_<size>.json`.
    Tpch,
    /// STG `.stg` file.
    Stg,
    /// Folder with HEFT cost matrices.
    Matrix,
}

/// Where GPU speeds come from (formats `worl`, `tpch`, `stg`; `matrix` has its own table).
#[derive(Clone, Debug, PartialEq)]
pub enum GpuSpeeds {
    /// Every GPU at speed 1.0.
    Uniform,
    /// The WORL `GPU.csv` mapping ([`worl::load_gpu_speeds`]).
    WorlCsv(PathBuf),
    /// The WORL `GPU.csv` next to the input if there is one, else uniform.
    Auto,
}

/// How to load an input.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The input format.
    pub format: Format,
    /// GPUs in the pool (ignored by `matrix`, whose GPUs are its columns).
    pub gpus: usize,
    /// Synthetic fan-in for inputs without edges (`worl`); 0 = independent tasks.
    pub degree: u32,
    /// Seed of synthetic edges.
    pub seed: u64,
    /// `worl`: tasks to take (default: N of `instanceN.csv`, capped at the rows present).
    pub tasks: Option<usize>,
    /// `tpch`: one query (1..=22) instead of all 22 as one batch.
    pub query: Option<u32>,
    /// Link bandwidth in data units per ms (default infinite; `matrix` uses its file).
    pub bandwidth: Option<f64>,
    /// GPU speeds.
    pub speeds: GpuSpeeds,
}

impl LoadOptions {
    /// Defaults: 50 GPUs, fan-in 3, seed 1, speeds [`GpuSpeeds::Auto`], infinite bandwidth.
    pub fn new(format: Format) -> Self {
        Self {
            format,
            gpus: 50,
            degree: 3,
            seed: 1,
            tasks: None,
            query: None,
            bandwidth: None,
            speeds: GpuSpeeds::Auto,
        }
    }
}

/// Run `f` on a helper thread with a [`BIG_STACK_BYTES`] stack and return its result; a panic
/// in `f` is resumed on the caller.
pub fn on_big_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("gantry-dag".into())
            .stack_size(BIG_STACK_BYTES)
            .spawn_scoped(s, f);
        match handle {
            Ok(h) => match h.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            // Could not spawn (no memory for the stack reservation): try in place.
            Err(e) => panic!("cannot start the DAG helper thread: {e}"),
        }
    })
}

/// Load `path` in `options.format` into a sealed [`Problem`] (runs on the big stack).
pub fn load(path: &Path, options: &LoadOptions) -> Result<Problem, DagLoadError> {
    on_big_stack(|| match options.format {
        Format::Worl => worl::load(path, options),
        Format::Tpch => tpch::load(path, options),
        Format::Stg => stg::load(path, options),
        Format::Matrix => matrix::load(path),
    })
}

/// A GPU pool of `options.gpus` GPUs with speeds per `options.speeds` (`Auto` looks for
/// `GPU.csv` in `dir`), and `options.bandwidth`.
pub(crate) fn build_pool(
    options: &LoadOptions,
    dir: Option<&Path>,
) -> Result<Box<HostPool>, DagLoadError> {
    let speeds = match &options.speeds {
        GpuSpeeds::Uniform => vec![1.0],
        GpuSpeeds::WorlCsv(p) => worl::load_gpu_speeds(p)?,
        GpuSpeeds::Auto => match dir.map(|d| d.join("GPU.csv")) {
            Some(p) if p.is_file() => worl::load_gpu_speeds(&p)?,
            _ => vec![1.0],
        },
    };
    let bandwidth = match options.bandwidth {
        Some(b) => Bandwidth::PerMs(b),
        None => Bandwidth::Infinite,
    };
    let problem = |p: &str| DagLoadError::Field {
        file: "options".into(),
        line: 0,
        field: "gpus".into(),
        problem: p.into(),
    };
    if options.gpus == 0 || options.gpus > MAX_GPUS {
        return Err(problem(&format!(
            "{} GPUs; need 1..={MAX_GPUS}",
            options.gpus
        )));
    }
    let mut pool = Box::new(HostPool::new(Bandwidth::Infinite));
    pool.set_bandwidth(bandwidth)
        .map_err(|e| problem(&format!("bandwidth: {e}")))?;
    for g in 0..options.gpus {
        let speed = speeds[g % speeds.len()];
        pool.add_gpu(speed)
            .map_err(|e| problem(&format!("GPU {g}: {e}")))?;
    }
    Ok(pool)
}
