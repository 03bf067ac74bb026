#!/usr/bin/env bash
# Host instructions the memory-safety verdict adds to a fresh check_launch, per shipped kernel
# (bench/shipped_launches.hpp) and per memory case of validate_bench: callgrind counts N calls of
# check_launch with the kernel's access facts and N without; prints instructions per call of each
# and their difference (load-independent, unlike the nanoseconds validate_bench prints). The last
# profile stays in $OUT_DIR (bench/callgrind_setup.sh).
#   BUILD_DIR=build N=50 bench/memory_callgrind.sh [WORD]
# The calls cycle through launches new in every input the kernel lets change (bench/new_shapes.hpp);
# PTXGATE_BENCH_NEW=grid alternates only the grid (the first component of more than one block with
# half of it), PTXGATE_BENCH_NEW=same repeats the documented launch, which the kernel's remembered
# node bounds then serve (docs/benchmarks.md). N is best a multiple of 16 (the number of launches).
# SPLIT=1 also prints the shared-race part of the memory verdict per call (remembered_shared_races
# with the race search it calls, inclusive, from the same profile) and the rest (the bounds).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
n="${N:-48}"
source bench/callgrind_setup.sh
callgrind_setup memory_callgrind PTXGATE_UNUSED_TOUCH_BYTES
bin="$build/bench/validate_bench"
[[ -x "$bin" ]] || { echo "memory_callgrind: build $bin first" >&2; exit 1; }
names="$(PTXGATE_BENCH_FIXED_CALLS=1 "$bin" "${1:-.pg}" | sed -n 's/^  \(.*[^ ]\) \{2,\}-\?[0-9.]* ns (.*/\1/p')"
split="${SPLIT:-}"
if [[ -n "$split" ]]; then
  printf '%-48s %12s %12s %12s %12s %12s\n' kernel with without memory races rest
else
  printf '%-48s %12s %12s %12s\n' kernel with without memory
fi
while IFS= read -r name; do
  [[ -n "$name" ]] || continue
  PTXGATE_BENCH_FIXED_CALLS="$n" valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
    --toggle-collect='*fixed_checks*' "$bin" "$name" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  with=$(callgrind_annotate "$out/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  with_out="$out/cg_with.out"
  cp "$out/cg.out" "$with_out"
  PTXGATE_BENCH_FIXED_CALLS="$n" PTXGATE_BENCH_FIXED_SIDE=without valgrind --tool=callgrind \
    --callgrind-out-file="$out/cg.out" --toggle-collect='*fixed_checks*' "$bin" "$name" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  without=$(callgrind_annotate "$out/cg.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  if [[ -z "$split" ]]; then
    printf '%-48s %12d %12d %12d\n' "$name" $((with / n)) $((without / n)) $(((with - without) / n))
    continue
  fi
  races=$(callgrind_annotate --inclusive=yes --threshold=100 "$with_out" 2>/dev/null |
    awk '/remembered_shared_races/ && !done {gsub(",", "", $1); if ($1 ~ /^[0-9]+$/) {print $1; done = 1}}')
  races=${races:-0}
  printf '%-48s %12d %12d %12d %12d %12d\n' "$name" $((with / n)) $((without / n)) $(((with - without) / n)) \
    $((races / n)) $(((with - without - races) / n))
done <<<"$names"
