//! The CUDA kernels run on the CPU, to check their semantics where there is no GPU (CI).
//!
//! `kernels/emulate/` compiles `kernels/woa_eval.cu` with the machine's C++ compiler against
//! a small CUDA-on-CPU shim (`cuda_on_cpu.h`: the threads of a block are fibers, warp shuffles
//! and barriers run in lock step, divergent barriers are errors) and launches the kernels
//! with the host's launch shapes. [`KernelEmulator`] drives that program through the same
//! chunking and status mapping as [`CudaBatch`](super::CudaBatch), so the equality suite
//! (`host/tests/it/kernels_emulated.rs`) can run against it.
//!
//! What it shows: the kernels' indexing, validation order, layouts (the transposes), warp
//! reduction and f64 arithmetic agree with the core evaluator bit for bit. What it cannot
//! show: anything about NVRTC's code generation, timing, memory coalescing or the driver —
//! only `scripts/gpu-check.sh` on a GPU does.

use super::cuda::{chunk_plans, evaluate_in_chunks, outcome};
use super::flat::{FlatDag, Orders, PlanOutcome, Population, PopulationEvaluator, RunModel};
use super::{CudaConfig, GpuError, KERNEL_SOURCES, KernelVariant};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The emulator's sources, embedded like the kernels: (file name, source).
pub const EMULATOR_SOURCES: &[(&str, &str)] = &[
    (
        "cuda_on_cpu.h",
        include_str!("../../../kernels/emulate/cuda_on_cpu.h"),
    ),
    (
        "woa_eval_main.cpp",
        include_str!("../../../kernels/emulate/woa_eval_main.cpp"),
    ),
];

/// Environment variable naming the C++ compiler (default `c++`), as `cc` and make use it.
pub const CXX_ENV: &str = "CXX";

/// What the emulator's build adds to catch kernel bugs that do not change a makespan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemoryChecks {
    /// AddressSanitizer and UndefinedBehaviorSanitizer (`-fsanitize=address,undefined`): an
    /// out-of-bounds access or undefined behaviour in a kernel aborts the run with a report.
    /// About twice as slow.
    #[default]
    Sanitizers,
    /// A plain optimised build.
    None,
}

/// How to build the emulator.
#[derive(Clone, Copy, Debug)]
pub struct EmulatorBuild<'a> {
    /// The `woa_eval.cu` to run: the shipped one, or a mutant (tests) or a draft.
    pub woa_eval_source: &'a str,
    /// Sanitizers or not.
    pub memory_checks: MemoryChecks,
}

impl Default for EmulatorBuild<'_> {
    /// The shipped kernels, with sanitizers.
    fn default() -> Self {
        Self {
            woa_eval_source: KERNEL_SOURCES[0].1,
            memory_checks: MemoryChecks::default(),
        }
    }
}

/// The compiled emulator program.
#[derive(Clone, Debug)]
pub struct EmulatorProgram {
    exe: PathBuf,
}

impl EmulatorProgram {
    /// Write the kernel and emulator sources into `dir` and compile them with `$CXX` (or
    /// `c++`): `-std=c++17 -O2 -ffp-contract=off` (so no add is fused), plus the sanitizers
    /// `build` asks for. A missing compiler or a failed compile (e.g. no sanitizer runtime)
    /// is [`GpuError::Emulator`] with the compiler's output.
    pub fn build(dir: &Path, build: &EmulatorBuild<'_>) -> Result<Self, GpuError> {
        let io = |what: &str, e: std::io::Error| {
            GpuError::Emulator(format!("{what} {}: {e}", dir.display()))
        };
        std::fs::create_dir_all(dir).map_err(|e| io("cannot create", e))?;
        let kernel = ("woa_eval.cu", build.woa_eval_source);
        for (name, source) in std::iter::once(&kernel).chain(EMULATOR_SOURCES) {
            std::fs::write(dir.join(name), source).map_err(|e| io("cannot write into", e))?;
        }
        let exe = dir.join("woa_eval_emu");
        let compiler = std::env::var(CXX_ENV).unwrap_or_else(|_| "c++".into());
        let checks: &[&str] = match build.memory_checks {
            MemoryChecks::Sanitizers => &[
                "-fsanitize=address,undefined",
                "-fno-sanitize-recover=all",
                "-fno-omit-frame-pointer",
            ],
            MemoryChecks::None => &[],
        };
        let result = Command::new(&compiler)
            .args(["-std=c++17", "-O2", "-ffp-contract=off"])
            .args(checks)
            .arg("-o")
            .arg(&exe)
            .arg(dir.join("woa_eval_main.cpp"))
            .output()
            .map_err(|e| {
                GpuError::Emulator(format!("cannot run the C++ compiler {compiler}: {e}"))
            })?;
        if !result.status.success() {
            return Err(GpuError::Emulator(format!(
                "{compiler} could not compile the kernel emulator ({build:?}): {}",
                String::from_utf8_lossy(&result.stderr)
            )));
        }
        Ok(Self { exe })
    }
}

/// One DAG's kernels on the emulator: a [`PopulationEvaluator`] with [`CudaBatch`]'s
/// chunking ([`CudaConfig::scratch_bytes`]) and kernel choice ([`CudaConfig::variant`],
/// [`CudaConfig::block_threads`]). Slow (a fiber switch per lane per barrier): meant for
/// tests on DAGs of hundreds of tasks and populations of tens to hundreds of plans.
///
/// [`CudaBatch`]: super::CudaBatch
pub struct KernelEmulator {
    program: EmulatorProgram,
    dag: FlatDag,
    config: CudaConfig,
}

impl KernelEmulator {
    /// Bind `program` to `dag` with `config`'s variant, block size and scratch limit.
    pub fn new(program: &EmulatorProgram, dag: &FlatDag, config: CudaConfig) -> Self {
        Self {
            program: program.clone(),
            dag: dag.clone(),
            config,
        }
    }

    /// Run one chunk through the emulator program: write its input, run, read the outcomes.
    fn evaluate_chunk(
        &self,
        gpus: &[u16],
        orders: Orders<'_>,
        plans: usize,
    ) -> Result<Vec<PlanOutcome>, GpuError> {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let call = CALLS.fetch_add(1, Ordering::Relaxed);
        let dir = self.program.exe.parent().unwrap_or(Path::new("."));
        let stem = format!("chunk-{}-{call}", std::process::id());
        let (input, output) = (
            dir.join(format!("{stem}.in")),
            dir.join(format!("{stem}.out")),
        );
        let io =
            |path: &Path, e: std::io::Error| GpuError::Emulator(format!("{}: {e}", path.display()));
        std::fs::write(&input, self.encode(gpus, orders, plans)?).map_err(|e| io(&input, e))?;
        let run = Command::new(&self.program.exe)
            .arg(&input)
            .arg(&output)
            .output()
            .map_err(|e| io(&self.program.exe, e));
        let _ = std::fs::remove_file(&input);
        let run = run?;
        if !run.status.success() {
            let _ = std::fs::remove_file(&output);
            return Err(GpuError::Emulator(format!(
                "kernel emulator failed ({}): {}",
                run.status,
                String::from_utf8_lossy(&run.stderr).trim()
            )));
        }
        let bytes = std::fs::read(&output).map_err(|e| io(&output, e));
        let _ = std::fs::remove_file(&output);
        decode(&bytes?, plans)
    }

    /// The emulator's input (see `kernels/emulate/woa_eval_main.cpp`). O(T·G + P·T + E).
    fn encode(&self, gpus: &[u16], orders: Orders<'_>, plans: usize) -> Result<Vec<u8>, GpuError> {
        let dag = &self.dag;
        let u32_of = |n: usize, what: &str| {
            u32::try_from(n).map_err(|_| GpuError::Input(format!("{what} {n} exceeds u32")))
        };
        let (shared, order_cells) = match orders {
            Orders::Shared(o) => (1, o),
            Orders::PerPlan(o) => (0, o),
        };
        let (work, speed, table, use_table): (&[f64], &[f64], &[f64], u32) = match &dag.run {
            RunModel::Speeds { work_ms, speed } => (work_ms, speed, &[], 0),
            RunModel::Table { run_ms } => (&[], &[], run_ms, 1),
        };
        let variant = match self.config.variant {
            KernelVariant::PerThread => 0,
            KernelVariant::PerWarp => 1,
        };
        let mut out = b"GEMU0001".to_vec();
        for field in [
            u32_of(dag.tasks, "tasks")?,
            u32_of(dag.gpus, "gpus")?,
            u32_of(plans, "plans")?,
            u32_of(dag.edges_len(), "edges")?,
            use_table,
            shared,
            variant,
            self.config.block_threads,
        ] {
            out.extend(field.to_le_bytes());
        }
        out.extend(dag.pred_first.iter().flat_map(|v| v.to_le_bytes()));
        out.extend(dag.pred_src.iter().flat_map(|v| v.to_le_bytes()));
        for floats in [&dag.pred_transfer_ms[..], work, speed, table] {
            out.extend(floats.iter().flat_map(|v| v.to_le_bytes()));
        }
        out.extend(gpus.iter().flat_map(|v| v.to_le_bytes()));
        out.extend(order_cells.iter().flat_map(|v| v.to_le_bytes()));
        Ok(out)
    }
}

/// Makespans `[P]` (f64) then status triples `[3·P]` (u32), little-endian. O(P).
fn decode(bytes: &[u8], plans: usize) -> Result<Vec<PlanOutcome>, GpuError> {
    if bytes.len() != plans * 20 {
        return Err(GpuError::Emulator(format!(
            "emulator output has {} bytes, expected {} for {plans} plans",
            bytes.len(),
            plans * 20
        )));
    }
    let (makespans, statuses) = bytes.split_at(plans * 8);
    let status: Vec<u32> = statuses
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok(makespans
        .chunks_exact(8)
        .zip(status.chunks_exact(3))
        .map(|(m, st)| {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(m);
            outcome(f64::from_le_bytes(raw), st)
        })
        .collect())
}

impl PopulationEvaluator for KernelEmulator {
    fn name(&self) -> &'static str {
        "cuda-emulated"
    }

    /// As [`CudaBatch`](super::CudaBatch)'s: chunks under the scratch limit, one emulator
    /// run per chunk. O(P·(T + E)) fiber steps.
    fn evaluate(&mut self, population: &Population<'_>) -> Result<Vec<PlanOutcome>, GpuError> {
        let chunk = chunk_plans(self.dag.tasks, self.dag.gpus, self.config.scratch_bytes);
        evaluate_in_chunks(population, self.dag.tasks, chunk, |gpus, orders, plans| {
            self.evaluate_chunk(gpus, orders, plans)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_or_long_output_is_a_typed_error() {
        assert!(matches!(decode(&[0; 19], 1), Err(GpuError::Emulator(_))));
        assert!(matches!(decode(&[0; 21], 1), Err(GpuError::Emulator(_))));
        let ok = decode(&[0; 20], 1).unwrap();
        assert_eq!(ok, vec![Ok(0.0)]);
    }
}
