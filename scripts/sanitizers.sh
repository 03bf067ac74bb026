#!/usr/bin/env bash
# Builds and runs the CPU suite under AddressSanitizer+UndefinedBehaviorSanitizer, and the
# concurrency tests under ThreadSanitizer. Used by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
CUDA_ROOT="${CUDA_HOME:-/usr/local/cuda}"
jobs="$(nproc)"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTXGATE_SANITIZE=address \
  -DPTXGATE_BUILD_BENCH=OFF -DCUDAToolkit_ROOT="$CUDA_ROOT" >/dev/null
cmake --build build-asan -j "$jobs"
# LLVM's static libraries are not instrumented; leaks in one-time target registration are not ours.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE "gpu|install"

echo "== ThreadSanitizer (concurrency tests)"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTXGATE_SANITIZE=thread \
  -DPTXGATE_BUILD_BENCH=OFF -DCUDAToolkit_ROOT="$CUDA_ROOT" >/dev/null
cmake --build build-tsan -j "$jobs" --target ptxgate_unit_tests
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
build-tsan/tests/ptxgate_unit_tests --no-intro=true -tc='*concurren*,*thread*,*single-flight*,*parallel*'
