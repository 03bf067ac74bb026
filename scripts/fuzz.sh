#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-19 and runs each for a bounded time (FUZZ_SECONDS,
# default 60) from a seed corpus (examples, golden cases, profiles, fuzz/corpus/TARGET/, and
# seeds a target writes itself); first replays every saved crash in fuzz/regressions/TARGET/ so
# each becomes a permanent regression case. A new crash is copied to fuzz/regressions/TARGET/.
# FUZZ_TARGETS="fuzz_pg fuzz_argspec" limits the run to some targets; FUZZ_SECONDS=0 only replays.
# The seed is fixed (FUZZ_SEED, default 1) so that CI runs explore the same inputs each time.
# Targets run side by side, one per core (FUZZ_JOBS, default nproc); each reports when all are done.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
targets="${FUZZ_TARGETS:-$(cd fuzz && ls fuzz_*.cpp | sed 's/\.cpp$//' | tr '\n' ' ')}"
jobs="${FUZZ_JOBS:-$(nproc)}"
# The build the ASan+UBSan test stage (scripts/sanitizers.sh) made already, when it ran.
# shellcheck disable=SC2086  # one word per target
scripts/fuzz_build.sh $targets
# LLVM's static libraries are not instrumented; leaks in one-time target registration are not ours.
export ASAN_OPTIONS="detect_leaks=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One target: replay its saved regressions, then fuzz. Writes $work/NAME.report (what to print),
# $work/NAME.failed (when it failed) and, when it got to the end, $work/NAME.done (a step that
# fails unexpectedly ends the job under set -e without it, and the target counts as failed).
fuzz_one() {
  local name="$1" bin="build-fuzz/fuzz/$1" corpus="$work/$1" report="$work/$1.report"
  mkdir -p "$corpus"
  case "$name" in
    fuzz_pg) find examples tests/golden -name '*.pg' -exec cp {} "$corpus/" \; ;;
    fuzz_profile) cp profiles/*.json "$corpus/" ;;
    fuzz_ptx_entries) find tests \( -name '*.ptx' -o -name '*.cubin' \) -exec cp {} "$corpus/" \; ;;
    fuzz_cache_entry|fuzz_cache_dir) PTXGATE_FUZZ_WRITE_SEEDS="$corpus" "$bin" -runs=0 >/dev/null 2>&1 ;;
  esac
  if [[ -d fuzz/corpus/$name ]]; then cp fuzz/corpus/"$name"/* "$corpus/"; fi
  local dict=()
  if [[ -f fuzz/$name.dict ]]; then dict=(-dict="fuzz/$name.dict"); fi
  if [[ -d fuzz/regressions/$name ]] && compgen -G "fuzz/regressions/$name/*" >/dev/null; then
    echo "== $name: replaying $(ls fuzz/regressions/"$name" | wc -l) regression inputs" >>"$report"
    if ! "$bin" -timeout=30 fuzz/regressions/"$name"/* >"$work/$name.replay.log" 2>&1; then
      { tail -40 "$work/$name.replay.log"; echo "fuzz: $name fails on a saved regression input"; } >>"$report"
      touch "$work/$name.failed" "$work/$name.done"
      return
    fi
  fi
  if [[ "$seconds" == 0 ]]; then
    touch "$work/$name.done"
    return
  fi
  echo "== $name: fuzzed for ${seconds}s ($(ls "$corpus" | wc -l) seeds)" >>"$report"
  local log="$work/$name.log"
  if ! "$bin" "$corpus" "${dict[@]}" -seed="${FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
      -max_len=65536 -artifact_prefix="$work/$name-" -print_final_stats=1 >"$log" 2>&1; then
    mkdir -p fuzz/regressions/"$name"
    cp "$work/$name-"* fuzz/regressions/"$name"/ 2>/dev/null || true
    { tail -60 "$log"
      echo "fuzz: $name found a crash; the input was copied to fuzz/regressions/$name/ (commit it with the fix)"; } >>"$report"
    touch "$work/$name.failed" "$work/$name.done"
    return
  fi
  local runs cov
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')"
  echo "fuzz: $name: $runs executions in ${seconds}s, coverage $cov edges, 0 crashes" >"$work/$name.summary"
  touch "$work/$name.done"
}

for name in $targets; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  fuzz_one "$name" &
done
wait
failed=0
for name in $targets; do
  [[ -f "$work/$name.report" ]] && cat "$work/$name.report"
  if [[ -f "$work/$name.failed" || ! -f "$work/$name.done" ]]; then
    echo "fuzz: $name failed (above; no report: a step of its job failed)" >&2
    failed=1
  fi
done
cat "$work"/*.summary 2>/dev/null || true
exit "$failed"
