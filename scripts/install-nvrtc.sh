#!/usr/bin/env bash
# Install NVIDIA's NVRTC (the CUDA runtime compiler, from the PyPI wheel
# nvidia-cuda-nvrtc-cu12) into .nvrtc/ at the repository root, and print the folder that holds
# libnvrtc.so.12 on stdout (progress goes to stderr). No GPU, driver or CUDA toolkit needed:
# CI uses it to compile every kernel to PTX (host/tests/it/kernels_compile.rs).
#
#   export GANTRY_NVRTC_DIR="$(bash scripts/install-nvrtc.sh)"
#
# Idempotent: a present install of the pinned version is reused. Override the version with
# NVRTC_VERSION, the folder with NVRTC_PREFIX.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${NVRTC_VERSION:-12.9.86}"
prefix="${NVRTC_PREFIX:-$PWD/.nvrtc}"
libdir="$prefix/nvidia/cuda_nvrtc/lib"
stamp="$prefix/.installed-$version"
if [[ ! -f "$stamp" || ! -f "$libdir/libnvrtc.so.12" ]]; then
    echo "install-nvrtc: pip-installing nvidia-cuda-nvrtc-cu12==$version into $prefix" >&2
    rm -rf "$prefix"
    mkdir -p "$prefix"
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        --target "$prefix" "nvidia-cuda-nvrtc-cu12==$version" >&2
    touch "$stamp"
fi
if [[ ! -f "$libdir/libnvrtc.so.12" ]]; then
    echo "install-nvrtc: libnvrtc.so.12 missing under $libdir" >&2
    exit 1
fi
# cudarc also tries the unversioned name; a link lets LD_LIBRARY_PATH users find it either way.
ln -sf libnvrtc.so.12 "$libdir/libnvrtc.so"
echo "$libdir"
