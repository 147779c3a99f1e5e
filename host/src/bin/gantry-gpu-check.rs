//! `gantry-gpu-check`: the GPU check of `scripts/gpu-check.sh`. Compares GPU and CPU
//! makespans on random DAGs and populations (must be identical), benchmarks evaluation
//! throughput (plan·tasks per second) of both kernels against one CPU core, and writes a
//! markdown summary. Exit 0 = all equal; 1 = a mismatch; 2 = no usable GPU.
//! `--small` runs only the equality part at small sizes (for compute-sanitizer);
//! `--emulate` runs the equality part on the CPU emulation of the kernels instead (no GPU;
//! needs a C++ compiler), at the smaller sizes of `EMULATED_EQUALITY_SIZES`.

use clap::Parser;
use gantry::dag::gpu_check::{
    BenchRow, EMULATED_EQUALITY_SIZES, EqualityCase, GPU_EQUALITY_SIZES, benchmark, equality_check,
    equality_check_with,
};
use gantry::dag::on_big_stack;
use gantry::gpu::emulate::{EmulatorBuild, EmulatorProgram, KernelEmulator};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags.
#[derive(Parser)]
#[command(about = "CPU-vs-GPU equality and throughput of the DAG plan evaluator")]
struct Args {
    /// Markdown results file.
    #[arg(long, default_value = "target/gpu-check.md")]
    out: PathBuf,
    /// Small sizes only (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Seed of the random DAGs and plans.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Most plans the CPU evaluates per benchmark size (its rate is per plan).
    #[arg(long, default_value_t = 256)]
    cpu_plans: usize,
    /// Equality only, at the emulator's small sizes, on the GPU; no benchmark. Quick enough
    /// to run under `compute-sanitizer` (memcheck, racecheck), as scripts/gpu-check.sh does.
    #[arg(long, conflicts_with = "emulate")]
    small: bool,
    /// No GPU: check the kernels' CPU emulation (built with `$CXX` or `c++` and the address
    /// and UB sanitizers, in the results file's folder) against the core; no benchmark.
    #[arg(long)]
    emulate: bool,
}

fn table(rows: &[BenchRow]) -> String {
    let mut s = String::from(
        "| tasks | edges | plans | CPU 1 core (plan·tasks/s) | GPU per-thread | × | GPU per-warp | × | equal |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.3e} | {:.3e} | {:.1} | {:.3e} | {:.1} | {} |",
            r.tasks,
            r.edges,
            r.plans,
            r.cpu_rate,
            r.gpu_thread_rate,
            r.gpu_thread_rate / r.cpu_rate,
            r.gpu_warp_rate,
            r.gpu_warp_rate / r.cpu_rate,
            if r.equal { "yes" } else { "NO" }
        );
    }
    s
}

fn main() -> ExitCode {
    let args = Args::parse();
    on_big_stack(|| run(&args))
}

fn run(args: &Args) -> ExitCode {
    let clock = std::time::Instant::now();
    let mut md = String::from("# gantry GPU check\n\n");
    let cases = match equality_cases(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gantry-gpu-check: no usable GPU: {e}");
            return ExitCode::from(2);
        }
    };
    let mismatched: usize = cases.iter().map(|c| c.mismatches).sum();
    let plans: usize = cases.iter().map(|c| c.plans).sum();
    let _ = writeln!(
        md,
        "## Equality ({} vs core evaluator, bit for bit)\n\n{} cases, {plans} plans, {mismatched} mismatches ({:.1} s)\n",
        if args.emulate {
            "kernels' CPU emulation"
        } else {
            "GPU"
        },
        cases.len(),
        clock.elapsed().as_secs_f64()
    );
    for c in &cases {
        let _ = writeln!(
            md,
            "- {}: {} plans, {} mismatches",
            c.name, c.plans, c.mismatches
        );
    }
    println!(
        "equality: {} cases, {plans} plans, {mismatched} mismatches",
        cases.len()
    );
    if args.emulate || args.small {
        return finish(args, &md, mismatched == 0);
    }
    let (sizes, pops, hi_pops): (&[usize], &[usize], &[usize]) = if args.quick {
        (&[1_000], &[256, 1_024], &[256])
    } else {
        (
            &[1_000, 10_000],
            &[256, 1_024, 4_096, 16_384],
            &[256, 4_096],
        )
    };
    let mut rows = Vec::new();
    for (degree, sizes, pops) in [
        (3u32, sizes, pops),
        (100, &sizes[sizes.len() - 1..], hi_pops),
    ] {
        match benchmark(args.seed, sizes, degree, 50, pops, args.cpu_plans) {
            Ok(r) => rows.extend(r),
            Err(e) => {
                eprintln!("gantry-gpu-check: benchmark failed: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let t = table(&rows);
    let _ = writeln!(
        md,
        "\n## Throughput (random DAGs, fan-in 3 and 100, 50 GPUs, WOA-shaped populations: random \
         assignments, one shared order; GPU time includes upload and download, best of 3; CPU \
         rate on up to {} plans)\n\n{t}\ntotal {:.1} s",
        args.cpu_plans,
        clock.elapsed().as_secs_f64()
    );
    println!("{t}");
    finish(args, &md, mismatched == 0 && rows.iter().all(|r| r.equal))
}

/// The equality cases: on the GPU, or with `--emulate` on the kernels' CPU emulation.
fn equality_cases(args: &Args) -> Result<Vec<EqualityCase>, gantry::gpu::GpuError> {
    if args.small {
        return equality_check(args.seed, &EMULATED_EQUALITY_SIZES);
    }
    if !args.emulate {
        return equality_check(args.seed, &GPU_EQUALITY_SIZES);
    }
    let dir = args.out.parent().unwrap_or(std::path::Path::new("."));
    let program = EmulatorProgram::build(&dir.join("kernel-emulator"), &EmulatorBuild::default())?;
    println!("equality on the kernels' CPU emulation (no GPU)");
    equality_check_with(args.seed, &EMULATED_EQUALITY_SIZES, &mut |flat, config| {
        Ok(Box::new(KernelEmulator::new(&program, flat, config)))
    })
}

/// Write the markdown summary and map the verdict to the exit status.
fn finish(args: &Args, md: &str, all_equal: bool) -> ExitCode {
    if let Some(dir) = args.out.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::write(&args.out, md) {
        Ok(()) => println!("wrote {}", args.out.display()),
        Err(e) => eprintln!("cannot write {}: {e}", args.out.display()),
    }
    if all_equal {
        ExitCode::SUCCESS
    } else {
        eprintln!("gantry-gpu-check: GPU and CPU makespans DIFFER");
        ExitCode::FAILURE
    }
}
