//! The CUDA kernels (`kernels/woa_eval.cu`), compiled for the CPU against
//! `kernels/emulate/cuda_on_cpu.h` and launched with the host's shapes, give the core
//! evaluator's outcomes bit for bit: both kernel variants, shared and per-plan orders, speed
//! pools and run-time tables, several launches per population, broken plans. A mutated
//! kernel must be caught, and a divergent warp barrier must be reported, not hidden.
//!
//! Needs a C++17 compiler (`$CXX` or `c++`); without one the tests print a notice and pass,
//! except under `CI=true`, where they fail.

use gantry::dag::gpu_check::{
    EMULATED_EQUALITY_SIZES, EqualityCase, EqualitySize, equality_check_with,
};
use gantry::dag::on_big_stack;
use gantry::gpu::GpuError;
use gantry::gpu::emulate::{EmulatorBuild, EmulatorProgram, KernelEmulator, MemoryChecks};
use rayon::prelude::*;
use std::path::PathBuf;

const KERNEL: &str = include_str!("../../../kernels/woa_eval.cu");

/// Build the emulator into its own folder; `None` (after a notice) when no C++ compiler (or
/// sanitizer runtime) is there outside CI.
fn program(folder: &str, build: EmulatorBuild<'_>) -> Option<EmulatorProgram> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(folder);
    match EmulatorProgram::build(&dir, &build) {
        Ok(p) => Some(p),
        Err(e) if !crate::in_ci() => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn run(program: &EmulatorProgram, seed: u64) -> Result<Vec<EqualityCase>, GpuError> {
    run_sizes(program, seed, &EMULATED_EQUALITY_SIZES)
}

/// The sizes a mutant runs on: edges with transfers and fan-in, several launches. Enough to
/// catch each mutation; the full set is the unmutated kernel's check.
const MUTANT_SIZES: &[EqualitySize] = &[EMULATED_EQUALITY_SIZES[1]];

/// Each size on its own (seed `seed + i` for the `i`-th), the sizes side by side: the
/// emulator is one process per launch, and the sanitized run is the suite's longest.
fn run_sizes(
    program: &EmulatorProgram,
    seed: u64,
    sizes: &[EqualitySize],
) -> Result<Vec<EqualityCase>, GpuError> {
    let per_size: Vec<Result<Vec<EqualityCase>, GpuError>> = sizes
        .par_iter()
        .enumerate()
        .map(|(i, size)| {
            on_big_stack(|| {
                let seed = seed + i as u64;
                equality_check_with(seed, std::slice::from_ref(size), &mut |flat, config| {
                    Ok(Box::new(KernelEmulator::new(program, flat, config)))
                })
            })
        })
        .collect();
    let mut cases = Vec::new();
    for result in per_size {
        cases.extend(result?);
    }
    Ok(cases)
}

#[test]
fn emulated_kernels_equal_the_core_evaluator() {
    // With AddressSanitizer and UBSan: an out-of-bounds access fails the run.
    let Some(program) = program("emu-kernel", EmulatorBuild::default()) else {
        return;
    };
    let cases = run(&program, 7).unwrap();
    // Every size × {shared, per-plan orders} × {pool, table} × {per-thread, per-warp}.
    assert_eq!(cases.len(), EMULATED_EQUALITY_SIZES.len() * 8);
    for c in &cases {
        println!("{}: {} plans, {} mismatches", c.name, c.plans, c.mismatches);
    }
    assert!(cases.iter().all(|c| c.mismatches == 0));
}

/// A build of `kernel` without sanitizers (faster; mutants are caught by their outcomes).
fn mutant(kernel: &str) -> EmulatorBuild<'_> {
    EmulatorBuild {
        woa_eval_source: kernel,
        memory_checks: MemoryChecks::None,
    }
}

/// Each mutation breaks one rule of the evaluator in one kernel; the suite must see it.
#[test]
fn a_mutated_kernel_is_caught() {
    for (i, (name, from, to)) in [
        (
            "per-thread: transfer ignored",
            "arrive = __dadd_rn(arrive, pred_transfer[j]);\n            }\n            ready",
            "arrive = arrive;\n            }\n            ready",
        ),
        (
            "per-warp: reduction stops one step early",
            "for (int offset = 16; offset > 0; offset >>= 1)",
            "for (int offset = 16; offset > 1; offset >>= 1)",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(
            KERNEL.matches(from).count(),
            1,
            "{name}: pattern not unique"
        );
        let mutated = KERNEL.replacen(from, to, 1);
        let Some(program) = program(&format!("emu-mutant-{i}"), mutant(&mutated)) else {
            return;
        };
        let cases = run_sizes(&program, 7, MUTANT_SIZES).unwrap();
        let wrong: usize = cases.iter().map(|c| c.mismatches).sum();
        assert!(wrong > 0, "{name}: the mutation went unnoticed");
    }
}

#[test]
fn a_lane_leaving_before_a_shuffle_is_a_divergence_error() {
    let from = "        for (int offset = 16; offset > 0; offset >>= 1) {";
    let mutated = KERNEL.replacen(from, &format!("        if (lane == 5) return;\n{from}"), 1);
    let Some(program) = program("emu-divergent", mutant(&mutated)) else {
        return;
    };
    let err = run(&program, 7).unwrap_err().to_string();
    assert!(err.contains("only some lanes"), "{err}");
}
