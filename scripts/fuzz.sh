#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-19 and runs each for a bounded time (FUZZ_SECONDS,
# default 60) from a seed corpus of the examples, golden cases and profiles; then replays
# every saved crash in fuzz/regressions/TARGET/ so each becomes a permanent regression case.
set -euo pipefail
cd "$(dirname "$0")/.."
CUDA_ROOT="${CUDA_HOME:-/usr/local/cuda}"
seconds="${FUZZ_SECONDS:-60}"
CC=clang-19 CXX=clang++-19 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPTXGATE_SANITIZE=fuzzer -DPTXGATE_FUZZ=ON -DPTXGATE_BUILD_TESTS=OFF -DPTXGATE_BUILD_BENCH=OFF \
  -DCUDAToolkit_ROOT="$CUDA_ROOT" >/dev/null
cmake --build build-fuzz -j "$(nproc)"
export ASAN_OPTIONS="detect_leaks=0"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
summary=()
for bin in build-fuzz/fuzz/fuzz_*; do
  [[ -x "$bin" ]] || continue
  name="$(basename "$bin")"
  corpus="$work/$name"
  mkdir -p "$corpus"
  case "$name" in
    fuzz_pg) find examples tests/golden -name '*.pg' -exec cp {} "$corpus/" \; ;;
    fuzz_profile) cp profiles/*.json "$corpus/" 2>/dev/null || true ;;
  esac
  if [[ -d fuzz/corpus/$name ]]; then cp fuzz/corpus/$name/* "$corpus/" 2>/dev/null || true; fi
  if [[ -d fuzz/regressions/$name ]] && compgen -G "fuzz/regressions/$name/*" >/dev/null; then
    echo "== $name: replaying regressions"
    "$bin" fuzz/regressions/$name/*
  fi
  echo "== $name: fuzzing for ${seconds}s"
  log="$work/$name.log"
  if ! "$bin" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
      -artifact_prefix="$work/$name-" -print_final_stats=1 >"$log" 2>&1; then
    tail -60 "$log"
    echo "fuzz: $name found a crash; the input is in $work (save it to fuzz/regressions/$name/)" >&2
    cp "$work/$name-"* fuzz/ 2>/dev/null || true
    exit 1
  fi
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  summary+=("$name: $runs executions, 0 crashes")
done
printf 'fuzz: %s\n' "${summary[@]}"
