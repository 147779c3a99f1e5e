//! Every kernel in `kernels/*.cu` compiles to PTX through cudarc's NVRTC for the two targets
//! gantry supports: `sm_87` (Jetson Orin) and `sm_90` (H100/H200). Needs libnvrtc, not a GPU:
//! `export GANTRY_NVRTC_DIR="$(bash scripts/install-nvrtc.sh)"`. Without libnvrtc the test
//! prints "skipped: libnvrtc not found" and passes, except under `CI=true`, where it fails.

use gantry::gpu::{KERNEL_SOURCES, compile_kernel, nvrtc_present};
use std::path::Path;

/// The CI targets, and the `compute_XX` form the runtime path passes (from the device's
/// compute capability).
const ARCHES: &[&str] = &["sm_87", "sm_90", "compute_87", "compute_90"];

#[test]
fn every_kernel_compiles_for_orin_and_hopper() {
    if !nvrtc_present() {
        crate::skip_outside_ci(
            "libnvrtc was not found: run scripts/install-nvrtc.sh and set GANTRY_NVRTC_DIR",
        );
        return;
    }
    // The embedded list must be every kernels/*.cu file.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".cu"))
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = KERNEL_SOURCES.iter().map(|(n, _)| n.to_string()).collect();
    embedded.sort();
    assert_eq!(
        on_disk, embedded,
        "embed every kernels/*.cu in gpu::KERNEL_SOURCES"
    );
    for &(name, src) in KERNEL_SOURCES {
        for arch in ARCHES {
            let ptx = compile_kernel(name, src, arch)
                .unwrap_or_else(|e| panic!("{name} for {arch}: {e}"))
                .to_src();
            let target = format!(".target sm_{}", &arch[arch.len() - 2..]);
            assert!(ptx.contains(&target), "{name}: PTX lacks `{target}`");
            for entry in [
                "eval_per_thread",
                "eval_per_warp",
                "transpose_u16",
                "transpose_u32",
            ] {
                assert!(ptx.contains(entry), "{name} for {arch}: no entry {entry}");
            }
            // --fmad=false: no fused multiply-add in the evaluation (there is no multiply to
            // fuse, but keep it that way).
            assert!(
                !ptx.contains("fma.rn.f64"),
                "{name} for {arch}: fma in the PTX"
            );
            println!("compiled {name} for {arch}: {} bytes of PTX", ptx.len());
        }
    }
}
