#!/usr/bin/env bash
# Host instructions the memory-safety verdict adds to a fresh check_launch, per shipped kernel
# (bench/shipped_launches.hpp) and per memory case of validate_bench: callgrind counts N calls of
# check_launch with the kernel's access facts and N without; prints instructions per call of each
# and their difference (load-independent, unlike the nanoseconds validate_bench prints). The last
# profile stays in $OUT_DIR (bench/callgrind_setup.sh).
#   BUILD_DIR=build N=50 bench/memory_callgrind.sh [WORD]
# With PTXGATE_BENCH_FIXED_NEW_GRID=1 every call has a new grid (the first grid component of more
# than one block alternates with half of it); without it every call repeats the same launch, which
# the kernel's remembered node bounds then serve (docs/benchmarks.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
n="${N:-50}"
source bench/callgrind_setup.sh
callgrind_setup memory_callgrind PTXGATE_UNUSED_TOUCH_BYTES
bin="$build/bench/validate_bench"
[[ -x "$bin" ]] || { echo "memory_callgrind: build $bin first" >&2; exit 1; }
names="$(PTXGATE_BENCH_FIXED_CALLS=1 "$bin" "${1:-.pg}" | sed -n 's/^  \(.*[^ ]\) \{2,\}-\?[0-9.]* ns (.*/\1/p')"
printf '%-48s %12s %12s %12s\n' kernel with without memory
while IFS= read -r name; do
  [[ -n "$name" ]] || continue
  PTXGATE_BENCH_FIXED_CALLS="$n" valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
    --toggle-collect='*fixed_checks*' "$bin" "$name" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  with=$(callgrind_annotate "$out/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  PTXGATE_BENCH_FIXED_CALLS="$n" PTXGATE_BENCH_FIXED_SIDE=without valgrind --tool=callgrind \
    --callgrind-out-file="$out/cg.out" --toggle-collect='*fixed_checks*' "$bin" "$name" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  without=$(callgrind_annotate "$out/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  printf '%-48s %12d %12d %12d\n' "$name" $((with / n)) $((without / n)) $(((with - without) / n))
done <<<"$names"
