#!/usr/bin/env bash
# Configures and builds ptxgate into build/ (Release). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache (when installed) shares compiled objects between clones of the repository.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
CUDA_ROOT="${CUDA_HOME:-/usr/local/cuda}"
# CI (CI=true) builds with warnings as errors: a warning in ptxgate's own code fails the build there.
werror=()
if [[ "${CI:-}" == true ]]; then werror=(-DPTXGATE_WERROR=ON); fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="$CUDA_ROOT" "${werror[@]}" "$@" >/dev/null
cmake --build build -j "$(nproc)"
