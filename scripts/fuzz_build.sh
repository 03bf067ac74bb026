#!/usr/bin/env bash
# The one ASan+UBSan build (clang-19, libFuzzer-instrumented, build-fuzz/): the sanitizer test
# stage runs the suite from it (`fuzz_build.sh all`), scripts/fuzz.sh its libFuzzer targets
# (`fuzz_build.sh fuzz_pg ...`). Both configure it alike, so the second one builds nothing again.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
CUDA_ROOT="${CUDA_HOME:-/usr/local/cuda}"
# LLVM's own linker (lld-19, from scripts/setup.sh) links libptxgate (LLVM's static libraries inside)
# and the test and fuzz executables several times faster than GNU ld.
linker=()
if [[ -x /usr/lib/llvm-19/bin/ld.lld ]]; then
  linker=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)
fi
# CI (CI=true) builds with warnings as errors here too (scripts/build.sh does for the GCC build).
werror=()
if [[ "${CI:-}" == true ]]; then werror=(-DPTXGATE_WERROR=ON); fi
CC=clang-19 CXX=clang++-19 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPTXGATE_SANITIZE=fuzzer -DPTXGATE_FUZZ=ON -DPTXGATE_BUILD_TESTS=ON -DPTXGATE_BUILD_GPU_TESTS=OFF -DPTXGATE_BUILD_BENCH=OFF \
  "${linker[@]}" "${werror[@]}" -DCUDAToolkit_ROOT="$CUDA_ROOT" >/dev/null
targets=("$@")
if [[ ${#targets[@]} -eq 0 || "${targets[0]}" == all ]]; then
  cmake --build build-fuzz -j "$(nproc)"
else
  cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]}"
fi
