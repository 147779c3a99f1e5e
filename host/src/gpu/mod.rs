//! Batch evaluation of DAG plans on a CUDA GPU (through cudarc) or the CPU, with identical
//! makespans, so WOA can score whole populations per iteration on the GPU.
//!
//! # Pieces
//! - [`flat`]: the flat inputs ([`FlatDag`], [`Population`]), the CPU reference path
//!   [`evaluate_population_cpu`] (the core's `Evaluator` per plan) and the
//!   [`PopulationEvaluator`] trait both paths implement;
//! - [`cuda`]: [`CudaBatch`], the kernels of `kernels/woa_eval.cu` compiled by NVRTC at run
//!   time, device buffers, launches, errors mapped to [`GpuError`];
//! - [`emulate`]: the same kernels compiled for the CPU against a small CUDA shim, to check
//!   their semantics without a GPU;
//! - [`woa`]: a host WOA driver that evaluates every iteration's population in one batch;
//! - [`Device`]: `--device cuda|cpu|auto`.
//!
//! # Identical results
//! The kernels use f64 with one IEEE rounding per add and divide, in the CPU's operation
//! order, and max (exact, order-free); transfer times are computed on the host by the core.
//! See `kernels/README.md`.
//!
//! # Libraries (no CUDA needed to build or run)
//! cudarc is built with `dynamic-loading` and the `cuda-12020` bindings: libcuda and libnvrtc
//! are opened at run time. It looks NVRTC up as `libnvrtc.so`, `libnvrtc.so.12`, `.11`, …
//! through the loader's search path; a CUDA 13 machine (`libnvrtc.so.13` only) needs a
//! `libnvrtc.so` link on `LD_LIBRARY_PATH` (`scripts/gpu-check.sh` makes one). Setting
//! `GANTRY_NVRTC_DIR` to a folder holding `libnvrtc.so.12` (e.g. the PyPI wheel that
//! `scripts/install-nvrtc.sh` installs) preloads it from there. cudarc panics when a library
//! is missing, so every entry point checks presence first and returns
//! [`GpuError::DriverMissing`] / [`GpuError::NvrtcMissing`].

pub mod cuda;
pub mod emulate;
pub mod flat;
pub mod woa;

pub use cuda::{CudaBatch, CudaConfig, KernelVariant, compile_all, compile_kernel, nvrtc_present};
pub use flat::{
    CpuBatch, FlatDag, Orders, PlanOutcome, Population, PopulationEvaluator, RunModel,
    evaluate_population_cpu,
};
pub use woa::run_woa_batched;

use gantry_core::dag::PlanError;

/// Kernel sources, embedded so the binary needs no file at run time: (file name, source).
pub const KERNEL_SOURCES: &[(&str, &str)] =
    &[("woa_eval.cu", include_str!("../../../kernels/woa_eval.cu"))];

/// Environment variable naming a folder with `libnvrtc.so.12` to preload.
pub const NVRTC_DIR_ENV: &str = "GANTRY_NVRTC_DIR";

/// Where plans are evaluated (`gantry dag --device`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// The CUDA GPU 0; an error if there is none.
    Cuda,
    /// The CPU (the core evaluator).
    Cpu,
    /// The GPU when one is usable, else a one-line notice on stderr and the CPU.
    #[default]
    Auto,
}

/// Why the GPU path could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// libcuda (the driver) could not be opened.
    #[error("CUDA driver library (libcuda) not found")]
    DriverMissing,
    /// libnvrtc could not be opened.
    #[error(
        "NVRTC library (libnvrtc.so / .so.12) not found; set {NVRTC_DIR_ENV} or LD_LIBRARY_PATH"
    )]
    NvrtcMissing,
    /// A driver call failed (no device, out of memory, launch failure, …).
    #[error("CUDA driver: {what}: {source}")]
    Driver {
        /// What was being done.
        what: &'static str,
        /// cudarc's error (CUresult).
        source: cudarc::driver::DriverError,
    },
    /// NVRTC refused a kernel source.
    #[error("NVRTC could not compile {kernel} for {arch}: {log}")]
    Compile {
        /// Kernel file.
        kernel: String,
        /// Target architecture.
        arch: String,
        /// Compiler log (or cudarc's error).
        log: String,
    },
    /// The inputs do not fit the kernels (shape mismatch, sizes beyond u32).
    #[error("bad batch input: {0}")]
    Input(String),
    /// The DAG or platform was refused.
    #[error("plan input: {0}")]
    Plan(#[from] PlanError),
    /// The CPU emulation of the kernels could not be built or run ([`emulate`]).
    #[error("kernel emulator: {0}")]
    Emulator(String),
    /// cudarc panicked (it does on some library problems); the message.
    #[error("cudarc panicked: {0}")]
    Panicked(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_sources_are_embedded() {
        assert!(
            KERNEL_SOURCES
                .iter()
                .any(|(name, src)| *name == "woa_eval.cu"
                    && src.contains("eval_per_thread")
                    && src.contains("eval_per_warp"))
        );
    }
}
