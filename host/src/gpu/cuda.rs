//! The CUDA path: library probes, NVRTC compilation of the embedded kernels, and
//! [`CudaBatch`], which keeps one DAG on the device and evaluates populations of plans.
//!
//! This is the one module of the host that allows `unsafe`: cudarc marks the library probes
//! and kernel launches unsafe. Each block states why its call is sound.
#![allow(unsafe_code)]

use super::flat::{FlatDag, Orders, PlanOutcome, Population, PopulationEvaluator, RunModel};
use super::{GpuError, KERNEL_SOURCES, NVRTC_DIR_ENV};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{CompileOptions, Ptx};
use gantry_core::dag::PlanError;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

/// Whether libcuda can be opened. Never panics.
pub fn driver_present() -> bool {
    // SAFETY: only tries dlopen on cudarc's candidate names and drops the handle.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Whether libnvrtc can be opened (after preloading [`NVRTC_DIR_ENV`]). Never panics.
pub fn nvrtc_present() -> bool {
    preload_nvrtc();
    // SAFETY: as above, for NVRTC.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// If [`NVRTC_DIR_ENV`] names a folder holding `libnvrtc.so.12` (or `libnvrtc.so`), open it by
/// path once and keep it open: the loader then answers cudarc's later `dlopen("libnvrtc.so.12")`
/// with it (same soname), without `LD_LIBRARY_PATH`. Returns the file opened.
pub fn preload_nvrtc() -> Option<&'static Path> {
    static LIB: OnceLock<Option<(std::path::PathBuf, libloading::Library)>> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = std::env::var_os(NVRTC_DIR_ENV)?;
        ["libnvrtc.so.12", "libnvrtc.so"]
            .iter()
            .map(|name| Path::new(&dir).join(name))
            .filter(|path| path.is_file())
            .find_map(|path| {
                // SAFETY: NVRTC's initialisers are plain C library set-up, run once.
                let lib = unsafe { libloading::Library::new(&path) }.ok()?;
                Some((path, lib))
            })
    })
    .as_ref()
    .map(|(path, _)| path.as_path())
}

/// Run `f`, turning a cudarc panic into [`GpuError::Panicked`].
fn no_panic<R>(f: impl FnOnce() -> Result<R, GpuError>) -> Result<R, GpuError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        Err(GpuError::Panicked(msg))
    })
}

/// Compile one kernel source to PTX for `arch` (`sm_90`, `compute_87`, …) with
/// `--fmad=false` (no contraction of a multiply and an add; see `kernels/README.md`).
/// Results are cached per (name, arch) for the life of the process.
pub fn compile_kernel(name: &str, source: &str, arch: &str) -> Result<Ptx, GpuError> {
    if !nvrtc_present() {
        return Err(GpuError::NvrtcMissing);
    }
    let opts = CompileOptions {
        fmad: Some(false),
        prec_div: Some(true),
        ftz: Some(false),
        options: vec![format!("--gpu-architecture={arch}")],
        name: Some(name.to_string()),
        ..Default::default()
    };
    static CACHE: OnceLock<Mutex<HashMap<(String, String), String>>> = OnceLock::new();
    let key = (name.to_string(), arch.to_string());
    let cache = CACHE.get_or_init(Default::default);
    if let Some(text) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(Ptx::from_src(text));
    }
    let ptx = no_panic(|| {
        cudarc::nvrtc::compile_ptx_with_opts(source, opts).map_err(|e| GpuError::Compile {
            kernel: name.to_string(),
            arch: arch.to_string(),
            log: match e {
                cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                    log.to_string_lossy().into_owned()
                }
                other => format!("{other:?}"),
            },
        })
    })?;
    if let Ok(mut c) = cache.lock() {
        c.insert(key, ptx.to_src());
    }
    Ok(ptx)
}

/// Compile every embedded kernel for `arch`; returns (file name, PTX text). Used by the CI
/// compile check.
pub fn compile_all(arch: &str) -> Result<Vec<(&'static str, String)>, GpuError> {
    KERNEL_SOURCES
        .iter()
        .map(|&(name, src)| Ok((name, compile_kernel(name, src, arch)?.to_src())))
        .collect()
}

/// Which evaluation kernel to launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KernelVariant {
    /// One plan per thread, task-major data (coalesced when plans share an order).
    #[default]
    PerThread,
    /// One plan per warp; lanes share each task's predecessors.
    PerWarp,
}

/// Settings of [`CudaBatch`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CudaConfig {
    /// Device ordinal.
    pub ordinal: usize,
    /// Kernel variant.
    pub variant: KernelVariant,
    /// Most device scratch per launch, bytes (`8·(T + G)` per plan); larger populations run
    /// in several launches. Default 1 GiB (fits a Jetson Orin).
    pub scratch_bytes: usize,
    /// Threads per block of the per-thread kernel.
    pub block_threads: u32,
}

impl Default for CudaConfig {
    fn default() -> Self {
        Self {
            ordinal: 0,
            variant: KernelVariant::PerThread,
            scratch_bytes: 1 << 30,
            block_threads: 128,
        }
    }
}

/// Device buffers that grow to the largest launch seen and are reused.
#[derive(Default)]
struct Scratch {
    gpus: Option<CudaSlice<u16>>,
    gpus_t: Option<CudaSlice<u16>>,
    orders: Option<CudaSlice<u32>>,
    orders_t: Option<CudaSlice<u32>>,
    finish: Option<CudaSlice<f64>>,
    gpu_free: Option<CudaSlice<f64>>,
    makespan: Option<CudaSlice<f64>>,
    status: Option<CudaSlice<u32>>,
}

/// `buf` with at least `len` elements (reallocated, zeroed, when smaller).
fn ensure<'a, T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    buf: &'a mut Option<CudaSlice<T>>,
    len: usize,
) -> Result<&'a mut CudaSlice<T>, GpuError> {
    let len = len.max(1);
    if buf.as_ref().is_none_or(|b| b.len() < len) {
        *buf = None;
        *buf = Some(stream.alloc_zeros::<T>(len).map_err(drv("alloc scratch"))?);
    }
    buf.as_mut()
        .ok_or_else(|| GpuError::Input("scratch buffer vanished".into()))
}

/// Map a cudarc driver error with context.
fn drv(what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> GpuError {
    move |source| GpuError::Driver { what, source }
}

/// One DAG on the GPU, ready to evaluate populations of its plans.
pub struct CudaBatch {
    stream: Arc<CudaStream>,
    eval_thread: CudaFunction,
    eval_warp: CudaFunction,
    transpose_u16: CudaFunction,
    transpose_u32: CudaFunction,
    config: CudaConfig,
    device_name: String,
    dag: DeviceDag,
    scratch: Scratch,
}

/// One DAG's arrays on the device: the kernels' read-only inputs, in their parameter order.
struct DeviceDag {
    pred_first: CudaSlice<u32>,
    pred_src: CudaSlice<u32>,
    pred_transfer: CudaSlice<f64>,
    work: CudaSlice<f64>,
    speed: CudaSlice<f64>,
    run_table: CudaSlice<f64>,
    use_table: i32,
    tasks: u32,
    gpus: u32,
}

/// One launch's plans and outputs (device buffers sized for `plans`).
struct EvalBuffers<'a> {
    plans: u32,
    gpus: &'a CudaSlice<u16>,
    orders: &'a CudaSlice<u32>,
    shared_order: i32,
    finish: &'a mut CudaSlice<f64>,
    gpu_free: &'a mut CudaSlice<f64>,
    makespan: &'a mut CudaSlice<f64>,
    status: &'a mut CudaSlice<u32>,
}

/// Launch `kernel` (`eval_per_thread` or `eval_per_warp`: same parameters) on `dag` and `b`.
fn launch_eval(
    s: &Arc<CudaStream>,
    kernel: &CudaFunction,
    what: &'static str,
    dag: &DeviceDag,
    b: EvalBuffers<'_>,
    cfg: LaunchConfig,
) -> Result<(), GpuError> {
    let mut l = s.launch_builder(kernel);
    l.arg(&dag.pred_first)
        .arg(&dag.pred_src)
        .arg(&dag.pred_transfer)
        .arg(&dag.work)
        .arg(&dag.speed)
        .arg(&dag.run_table)
        .arg(&dag.use_table)
        .arg(&dag.tasks)
        .arg(&dag.gpus)
        .arg(&b.plans)
        .arg(b.gpus)
        .arg(b.orders)
        .arg(&b.shared_order)
        .arg(b.finish)
        .arg(b.gpu_free)
        .arg(b.makespan)
        .arg(b.status);
    // SAFETY: the argument list matches both kernels' signature in kernels/woa_eval.cu
    // (same order and types: u32/f64 arrays, i32 flags, u32 sizes); every buffer holds at
    // least the elements the kernel indexes for `plans` plans (plans·tasks, plans·gpus,
    // 3·plans; the DAG's own arrays), and the kernel checks task and GPU ids before using
    // them as indices. The per-thread kernel's plans were transposed to [tasks][plans] just
    // before, on the same stream.
    unsafe { l.launch(cfg) }.map_err(drv(what))?;
    Ok(())
}

impl CudaBatch {
    /// Open the device, compile the kernels for its compute capability and upload `dag`.
    /// Typed errors when libcuda, libnvrtc or a device is missing; never panics.
    pub fn new(dag: &FlatDag, config: CudaConfig) -> Result<Self, GpuError> {
        if !driver_present() {
            return Err(GpuError::DriverMissing);
        }
        if !nvrtc_present() {
            return Err(GpuError::NvrtcMissing);
        }
        no_panic(|| Self::open(dag, config))
    }

    fn open(dag: &FlatDag, config: CudaConfig) -> Result<Self, GpuError> {
        let ctx = CudaContext::new(config.ordinal).map_err(drv("open device"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(drv("compute capability"))?;
        let device_name = ctx.name().map_err(drv("device name"))?;
        let arch = format!("compute_{major}{minor}");
        let (name, src) = KERNEL_SOURCES[0];
        let ptx = compile_kernel(name, src, &arch)?;
        let module = ctx.load_module(ptx).map_err(drv("load module"))?;
        let load = |f: &'static str| module.load_function(f).map_err(drv("load function"));
        let stream = ctx.default_stream();
        let tasks = u32::try_from(dag.tasks).map_err(|_| GpuError::Input("tasks > u32".into()))?;
        let gpus = u32::try_from(dag.gpus).map_err(|_| GpuError::Input("gpus > u32".into()))?;
        let up_f64 = |v: &[f64]| {
            if v.is_empty() {
                stream.alloc_zeros::<f64>(1)
            } else {
                stream.clone_htod(v)
            }
            .map_err(drv("upload DAG"))
        };
        let (work, speed, run_table, use_table) = match &dag.run {
            RunModel::Speeds { work_ms, speed } => {
                (up_f64(work_ms)?, up_f64(speed)?, up_f64(&[])?, 0)
            }
            RunModel::Table { run_ms } => (up_f64(&[])?, up_f64(&[])?, up_f64(run_ms)?, 1),
        };
        let up_u32 = |v: &[u32]| {
            if v.is_empty() {
                stream.alloc_zeros::<u32>(1)
            } else {
                stream.clone_htod(v)
            }
            .map_err(drv("upload DAG"))
        };
        Ok(Self {
            eval_thread: load("eval_per_thread")?,
            eval_warp: load("eval_per_warp")?,
            transpose_u16: load("transpose_u16")?,
            transpose_u32: load("transpose_u32")?,
            config,
            device_name,
            dag: DeviceDag {
                pred_first: up_u32(&dag.pred_first)?,
                pred_src: up_u32(&dag.pred_src)?,
                pred_transfer: up_f64(&dag.pred_transfer_ms)?,
                work,
                speed,
                run_table,
                use_table,
                tasks,
                gpus,
            },
            scratch: Scratch::default(),
            stream,
        })
    }

    /// The device's name (e.g. "NVIDIA H200").
    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    /// Evaluate one chunk of at most [`chunk_plans`](Self::chunk_plans) plans.
    fn evaluate_chunk(
        &mut self,
        gpus: &[u16],
        orders: Orders<'_>,
        plans: usize,
    ) -> Result<Vec<PlanOutcome>, GpuError> {
        let (n, g) = (self.dag.tasks as usize, self.dag.gpus as usize);
        let np = plans as u32;
        let s = &self.stream;
        let sc = &mut self.scratch;
        let cells = plans * n;
        let d_gpus = ensure(s, &mut sc.gpus, cells)?;
        if cells > 0 {
            s.memcpy_htod(gpus, &mut d_gpus.slice_mut(..cells))
                .map_err(drv("upload plans"))?;
        }
        let (shared, order_cells) = match orders {
            Orders::Shared(o) => (1i32, o),
            Orders::PerPlan(o) => (0i32, o),
        };
        let d_orders = ensure(s, &mut sc.orders, order_cells.len())?;
        if !order_cells.is_empty() {
            s.memcpy_htod(order_cells, &mut d_orders.slice_mut(..order_cells.len()))
                .map_err(drv("upload orders"))?;
        }
        let d_finish = ensure(s, &mut sc.finish, cells)?;
        let d_free = ensure(s, &mut sc.gpu_free, plans * g)?;
        let d_ms = ensure(s, &mut sc.makespan, plans)?;
        let d_status = ensure(s, &mut sc.status, 3 * plans)?;
        let t32 = self.dag.tasks;
        match self.config.variant {
            KernelVariant::PerWarp => {
                let threads = 256u32;
                let cfg = LaunchConfig {
                    grid_dim: ((np as u64 * 32).div_ceil(threads as u64) as u32, 1, 1),
                    block_dim: (threads, 1, 1),
                    shared_mem_bytes: 0,
                };
                let buffers = EvalBuffers {
                    plans: np,
                    gpus: d_gpus,
                    orders: d_orders,
                    shared_order: shared,
                    finish: d_finish,
                    gpu_free: d_free,
                    makespan: &mut *d_ms,
                    status: &mut *d_status,
                };
                let what = "launch eval_per_warp";
                launch_eval(s, &self.eval_warp, what, &self.dag, buffers, cfg)?;
            }
            KernelVariant::PerThread => {
                let d_gpus_t = ensure(s, &mut sc.gpus_t, cells)?;
                transpose(s, &self.transpose_u16, d_gpus, d_gpus_t, np, t32)?;
                let d_orders_used: &CudaSlice<u32> = if shared == 1 {
                    d_orders
                } else {
                    let d_orders_t = ensure(s, &mut sc.orders_t, cells)?;
                    transpose(s, &self.transpose_u32, d_orders, d_orders_t, np, t32)?;
                    d_orders_t
                };
                let threads = self.config.block_threads.clamp(32, 1024);
                let cfg = LaunchConfig {
                    grid_dim: (np.div_ceil(threads), 1, 1),
                    block_dim: (threads, 1, 1),
                    shared_mem_bytes: 0,
                };
                let buffers = EvalBuffers {
                    plans: np,
                    gpus: d_gpus_t,
                    orders: d_orders_used,
                    shared_order: shared,
                    finish: d_finish,
                    gpu_free: d_free,
                    makespan: &mut *d_ms,
                    status: &mut *d_status,
                };
                let what = "launch eval_per_thread";
                launch_eval(s, &self.eval_thread, what, &self.dag, buffers, cfg)?;
            }
        }
        let mut ms = vec![0.0f64; plans];
        let mut status = vec![0u32; 3 * plans];
        if plans > 0 {
            s.memcpy_dtoh(&d_ms.slice(..plans), ms.as_mut_slice())
                .map_err(drv("download makespans"))?;
            s.memcpy_dtoh(&d_status.slice(..3 * plans), status.as_mut_slice())
                .map_err(drv("download status"))?;
        }
        s.synchronize().map_err(drv("synchronize"))?;
        Ok(ms
            .iter()
            .zip(status.chunks_exact(3))
            .map(|(&m, st)| outcome(m, st))
            .collect())
    }
}

/// Launch a tiled transpose of `rows × cols` elements from `src` into `dst`.
fn transpose<T>(
    s: &Arc<CudaStream>,
    f: &CudaFunction,
    src: &CudaSlice<T>,
    dst: &mut CudaSlice<T>,
    rows: u32,
    cols: u32,
) -> Result<(), GpuError> {
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig {
        grid_dim: (cols.div_ceil(32), rows.div_ceil(32), 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    let mut b = s.launch_builder(f);
    b.arg(src).arg(dst).arg(&rows).arg(&cols);
    // SAFETY: (in, out, rows, cols) matches the transpose kernels; both buffers hold at
    // least rows·cols elements of the kernel's element type (callers pass u16 with
    // transpose_u16 and u32 with transpose_u32), and the kernel bounds-checks every index.
    unsafe { b.launch(cfg) }.map_err(drv("launch transpose"))?;
    Ok(())
}

/// Plans per launch for `tasks` and `gpus` under `scratch_bytes` of device scratch
/// (`8·(T + G) + 16` bytes per plan; at least 1, at most what a u32 warp grid indexes).
pub(crate) fn chunk_plans(tasks: usize, gpus: usize, scratch_bytes: usize) -> usize {
    let per_plan = 8 * (tasks + gpus) + 16;
    (scratch_bytes / per_plan).clamp(1, u32::MAX as usize / 32)
}

/// Check `population` against a DAG of `dag_tasks` tasks and evaluate it in chunks of at
/// most `chunk` plans with `evaluate_chunk(gpus, orders, plans)` (plan-major slices of the
/// chunk). A population of the wrong length gets [`PlanError::WrongLength`] per plan, as on
/// the CPU. Shared by [`CudaBatch`] and the CPU emulation of the kernels.
pub(crate) fn evaluate_in_chunks(
    population: &Population<'_>,
    dag_tasks: usize,
    chunk: usize,
    mut evaluate_chunk: impl FnMut(&[u16], Orders<'_>, usize) -> Result<Vec<PlanOutcome>, GpuError>,
) -> Result<Vec<PlanOutcome>, GpuError> {
    population.check()?;
    if population.tasks != dag_tasks {
        let wrong = Err(PlanError::WrongLength {
            plan: population.tasks,
            dag: dag_tasks,
        });
        return Ok(vec![wrong; population.plans]);
    }
    let n = population.tasks;
    let mut out = Vec::with_capacity(population.plans);
    let mut first = 0;
    while first < population.plans {
        let plans = chunk.max(1).min(population.plans - first);
        let cells = first * n..(first + plans) * n;
        let orders = match population.orders {
            Orders::Shared(o) => Orders::Shared(o),
            Orders::PerPlan(o) => Orders::PerPlan(&o[cells.clone()]),
        };
        out.extend(evaluate_chunk(&population.gpus[cells], orders, plans)?);
        first += plans;
    }
    Ok(out)
}

/// Map a kernel status triple (see `kernels/woa_eval.cu`) to the core's outcome.
pub(crate) fn outcome(makespan: f64, st: &[u32]) -> PlanOutcome {
    let (code, a, b) = (st[0], st[1], st[2]);
    match code {
        0 => Ok(makespan),
        1 => Err(PlanError::UnknownTask(a)),
        2 => Err(PlanError::DuplicateTask(a)),
        3 => Err(PlanError::UnknownGpu {
            task: a,
            gpu: b as u16,
        }),
        _ => Err(PlanError::PrecedenceViolated { task: a, pred: b }),
    }
}

impl PopulationEvaluator for CudaBatch {
    fn name(&self) -> &'static str {
        "cuda"
    }

    /// Upload the plans (in chunks of at most `scratch_bytes` of scratch), run the chosen
    /// kernel, download makespans and statuses. O(P·(T + E)) work on the device.
    fn evaluate(&mut self, population: &Population<'_>) -> Result<Vec<PlanOutcome>, GpuError> {
        let (tasks, gpus) = (self.dag.tasks as usize, self.dag.gpus as usize);
        let chunk = chunk_plans(tasks, gpus, self.config.scratch_bytes);
        evaluate_in_chunks(population, tasks, chunk, |gpus, orders, plans| {
            no_panic(|| self.evaluate_chunk(gpus, orders, plans))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_triples_map_to_the_core_errors() {
        let cases: &[([u32; 3], PlanOutcome)] = &[
            ([0, 0, 0], Ok(7.5)),
            ([1, 9, 0], Err(PlanError::UnknownTask(9))),
            ([2, 3, 0], Err(PlanError::DuplicateTask(3))),
            ([3, 1, 5], Err(PlanError::UnknownGpu { task: 1, gpu: 5 })),
            (
                [4, 3, 1],
                Err(PlanError::PrecedenceViolated { task: 3, pred: 1 }),
            ),
        ];
        for (st, want) in cases {
            assert_eq!(outcome(7.5, st), *want);
        }
    }

    /// Without a GPU (this machine, CI) the constructor answers with a typed error and does
    /// not panic; with one it works.
    #[test]
    fn no_gpu_is_a_typed_error_not_a_panic() {
        let mut d: gantry_core::dag::Dag<4, 4> = gantry_core::dag::Dag::new();
        d.add_task(1.0).unwrap();
        d.seal().unwrap();
        let mut p: gantry_core::dag::GpuPool<2> =
            gantry_core::dag::GpuPool::new(gantry_core::dag::Bandwidth::Infinite);
        p.add_gpu(1.0).unwrap();
        let flat = FlatDag::with_pool(&d, &p).unwrap();
        match CudaBatch::new(&flat, CudaConfig::default()) {
            Ok(b) => eprintln!("GPU present: {}", b.device_name()),
            Err(e) => eprintln!("no GPU: {e}"),
        }
    }
}
