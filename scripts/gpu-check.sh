#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU: CPU-vs-GPU equality of the DAG plan evaluator
# on random DAGs and populations (must be bit-identical), then evaluation throughput
# (plan·tasks per second) of both kernels against one CPU core, populations 256..16,384,
# DAGs of 1,000 and 10,000 tasks. Writes $OUT/gpu-check.md (when OUT is set) or
# target/gpu-check.md, plus gpu-check.log beside it. Meant to finish in under 5 minutes.
#
#   scripts/gpu-check.sh            # run .gpucheck/gantry-gpu-check if prepared, else build and run
#   scripts/gpu-check.sh --quick    # small sizes only
#   scripts/gpu-check.sh --prepare  # build the release binary into .gpucheck/ (git-ignored)
#                                   # for a GPU machine without Rust: carry .gpucheck there
#   scripts/gpu-check.sh --emulate  # no GPU: equality on the kernels' CPU emulation (needs c++)
#
# NVRTC: the binary (cudarc, cuda-12020 bindings) opens libnvrtc.so or libnvrtc.so.12. This
# script finds one in order: $GANTRY_NVRTC_DIR; .nvrtc/ (scripts/install-nvrtc.sh, the PyPI
# cu12 wheel); the system's CUDA (ldconfig, /usr/local/cuda*/, Python's nvidia/*/lib) — any
# libnvrtc.so.1N, which it links as libnvrtc.so in target/nvrtc-link/ on LD_LIBRARY_PATH, so
# a CUDA 13 machine (libnvrtc.so.13 only) works without carrying the 100 MB cu12 wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
mode=run
args=()
for a in "$@"; do
    case "$a" in
        --prepare) mode=prepare ;;
        --quick) args+=(--quick) ;;
        --emulate) args+=(--emulate); mode=emulate ;;
        *) echo "usage: $0 [--quick|--prepare|--emulate]" >&2; exit 64 ;;
    esac
done
target_dir="${CARGO_TARGET_DIR:-$root/target}"

if [[ $mode == prepare ]]; then
    cargo build --release -p gantry --bin gantry-gpu-check
    mkdir -p .gpucheck
    # Stripped: the release profile keeps line tables (~124 MB); the device tool carries at
    # most 64 MiB per call, and the stripped binary is ~18 MB.
    if command -v strip >/dev/null 2>&1; then
        strip -o .gpucheck/gantry-gpu-check "$target_dir/release/gantry-gpu-check"
    else
        cp "$target_dir/release/gantry-gpu-check" .gpucheck/
    fi
    size_mb=$(( $(stat -c %s .gpucheck/gantry-gpu-check) / 1048576 ))
    if (( size_mb >= 60 )); then
        echo "gpu-check: .gpucheck/gantry-gpu-check is ${size_mb} MiB, too big to carry (64 MiB); install binutils' strip" >&2
        exit 2
    fi
    echo "built .gpucheck/gantry-gpu-check (${size_mb} MiB, stripped); carry .gpucheck"
    exit 0
fi

# 1. The binary: a prepared one wins (GPU machines here have no network for cargo to fetch
#    crates with), else build it.
if [[ -x .gpucheck/gantry-gpu-check ]]; then
    echo "== using the prepared .gpucheck/gantry-gpu-check"
    bin="$root/.gpucheck/gantry-gpu-check"
elif command -v cargo >/dev/null 2>&1; then
    echo "== building (release)"
    cargo build --release -p gantry --bin gantry-gpu-check
    bin="$target_dir/release/gantry-gpu-check"
else
    echo "gpu-check: no cargo and no .gpucheck/gantry-gpu-check (run '$0 --prepare' where Rust is)" >&2
    exit 2
fi

# 2. NVRTC (not needed to emulate).
find_nvrtc() {
    local d f
    for d in "${GANTRY_NVRTC_DIR:-}" "$root/.nvrtc/nvidia/cuda_nvrtc/lib"; do
        [[ -n "$d" && -e "$d/libnvrtc.so.12" ]] && { echo "$d/libnvrtc.so.12"; return; }
    done
    f="$(ldconfig -p 2>/dev/null | awk '/libnvrtc\.so\.[0-9]/ && !/builtins/ {print $NF; exit}')"
    [[ -n "$f" ]] && { echo "$f"; return; }
    local py_dirs=""
    py_dirs="$(python3 -c 'import nvidia, sys; print(" ".join(nvidia.__path__))' 2>/dev/null || true)"
    for f in /usr/local/cuda/lib64/libnvrtc.so.* /usr/local/cuda*/lib64/libnvrtc.so.* \
             /usr/local/cuda*/targets/*/lib/libnvrtc.so.* /usr/lib/x86_64-linux-gnu/libnvrtc.so.*; do
        [[ -e "$f" && "$f" != *builtins* && "$f" != *alt* ]] && { echo "$f"; return; }
    done
    for d in $py_dirs; do
        for f in "$d"/*/lib/libnvrtc.so.*; do
            [[ -e "$f" && "$f" != *builtins* && "$f" != *alt* ]] && { echo "$f"; return; }
        done
    done
}
nvrtc="$(find_nvrtc || true)"
if [[ $mode == emulate ]]; then
    :
elif [[ -z "$nvrtc" ]]; then
    echo "gpu-check: libnvrtc not found (run scripts/install-nvrtc.sh or install the CUDA toolkit)" >&2
    exit 2
else
    link_dir="$root/target/nvrtc-link"
    mkdir -p "$link_dir"
    ln -sf "$(readlink -f "$nvrtc")" "$link_dir/libnvrtc.so"
    ln -sf "$(readlink -f "$nvrtc")" "$link_dir/libnvrtc.so.12"
    real_dir="$(dirname "$(readlink -f "$nvrtc")")"
    extra="$link_dir:$real_dir"
    for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/wsl/lib; do
        [[ -d "$d" ]] && extra="$extra:$d"
    done
    export LD_LIBRARY_PATH="$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "== NVRTC: $nvrtc (linked in $link_dir)"
fi

# 3. Run.
out_dir="${OUT:-$root/target}"
mkdir -p "$out_dir"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
echo "== gantry-gpu-check ${args[*]:-} -> $out_dir/gpu-check.md"
set +e
timeout 200 "$bin" --out "$out_dir/gpu-check.md" "${args[@]}" 2>&1 | tee "$out_dir/gpu-check.log"
rc=${PIPESTATUS[0]}
set -e
# 4. compute-sanitizer (memcheck: out-of-bounds and misaligned accesses; racecheck: the
#    transposes' shared-memory tiles) on the small equality sizes, when the tool is there and
#    the main run passed. Exit 5 if it reports errors.
sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1 || true)"
if [[ $rc == 0 && $mode == run && -n "$sanitizer" ]]; then
    for tool in memcheck racecheck; do
        echo "== compute-sanitizer --tool $tool (small sizes)"
        set +e
        timeout 45 "$sanitizer" --tool "$tool" --error-exitcode 5 \
            "$bin" --small --out "$out_dir/gpu-check-$tool.md" 2>&1 | tail -n 5 | tee -a "$out_dir/gpu-check.log"
        src=${PIPESTATUS[0]}
        set -e
        echo "compute-sanitizer $tool: exit $src" | tee -a "$out_dir/gpu-check.log"
        printf '\n## compute-sanitizer --tool %s (small sizes)\n\nexit %s\n' "$tool" "$src" >> "$out_dir/gpu-check.md"
        [[ $src == 5 ]] && rc=5
    done
fi

case $rc in
    0) if [[ $mode == emulate ]]; then echo "gpu-check: OK (the kernels' CPU emulation equals the core)";
       else echo "gpu-check: OK (GPU equals CPU)"; fi;;
    1) echo "gpu-check: FAILED: GPU and CPU makespans differ" >&2;;
    2) echo "gpu-check: no usable GPU / CUDA library (see above)" >&2;;
    5) echo "gpu-check: compute-sanitizer reported errors (see gpu-check.log)" >&2;;
    124) echo "gpu-check: timed out after 200 s" >&2;;
    *) echo "gpu-check: exit $rc" >&2;;
esac
exit "$rc"
