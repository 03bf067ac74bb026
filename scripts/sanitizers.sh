#!/usr/bin/env bash
# Builds and runs the CPU suite under AddressSanitizer+UndefinedBehaviorSanitizer, and the
# concurrency tests under ThreadSanitizer. Used by scripts/test.sh. SANITIZERS="address" or
# "thread" runs one stage only.
# The ASan+UBSan build is the fuzzing build (clang-19, -fsanitize=fuzzer-no-link,address,undefined,
# build-fuzz/, scripts/fuzz_build.sh): one instrumented library serves the test suite here and the
# libFuzzer targets in scripts/fuzz.sh, so CI compiles the library under ASan once, not twice.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache (when installed) shares compiled objects between clones of the repository.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
CUDA_ROOT="${CUDA_HOME:-/usr/local/cuda}"
jobs="$(nproc)"
stages="${SANITIZERS:-address thread}"

if [[ " $stages " == *" address "* ]]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
  start=$SECONDS
  scripts/fuzz_build.sh all
  # LLVM's static libraries are not instrumented; leaks in one-time target registration are not ours.
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_string_checks=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir build-fuzz --output-on-failure -j "$jobs" -LE "gpu|install"
  echo "sanitizers: ASan+UBSan stage took $((SECONDS - start))s"
fi

if [[ " $stages " == *" thread "* ]]; then
  echo "== ThreadSanitizer (concurrency tests)"
  start=$SECONDS
  # Not with warnings as errors: GCC's ThreadSanitizer warns (-Wtsan) that it does not model the
  # launch log's std::atomic_thread_fence, which is what that code means to use.
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTXGATE_SANITIZE=thread \
    -DPTXGATE_BUILD_BENCH=OFF -DPTXGATE_BUILD_GPU_TESTS=OFF -DCUDAToolkit_ROOT="$CUDA_ROOT" >/dev/null
  cmake --build build-tsan -j "$jobs" --target ptxgate_concurrency_tests
  # Every test that starts threads or processes: "cache concurrency: ...", "codegen: compiles
  # concurrently ...", "single flight: ...". The run fails when the filter matches nothing.
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    build-tsan/tests/ptxgate_concurrency_tests --no-intro=true -tc='*concurren*,single flight*,*parallel*' 2>&1 | tee "$log"
  if ! grep -Eq 'test cases: *[1-9][0-9]* \| *[1-9]' "$log"; then
    echo "sanitizers: the ThreadSanitizer filter matched no passing test case" >&2
    exit 1
  fi
  echo "sanitizers: TSan stage took $((SECONDS - start))s"
fi
