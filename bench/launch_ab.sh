#!/usr/bin/env bash
# Before/after launch overhead on the GPU machine, one call: runs `ptxgate_gpu_bench launch` from two
# benchmark bundles (scripts/bench_gpu.sh), alternating ROUNDS times so clock drift hits both alike,
# and prints the paired ratios side by side (bench/compare_launch.py). Results under $OUT.
#   bash bench/launch_ab.sh BEFORE_BUNDLE AFTER_BUNDLE [ROUNDS=2]
set -u
BEFORE=$(cd "$1" && pwd); AFTER=$(cd "$2" && pwd); ROUNDS=${3:-2}
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/launch_ab"
export PTXGATE_PROFILE_DIR="$PWD/profiles"
for ((r = 1; r <= ROUNDS; r++)); do
  for side in before after; do
    dir=$BEFORE; [ "$side" = after ] && dir=$AFTER
    PTXGATE_CACHE_DIR=$(mktemp -d) LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      timeout --kill-after=5 120 "$dir/bin/ptxgate_gpu_bench" launch --kernels bench/kernels \
      --out "$OUT/launch_ab/${side}_$r.json" >"$OUT/launch_ab/${side}_$r.log" 2>&1
    echo "launch_ab: $side round $r exit $?"
  done
done
python3 bench/compare_launch.py "$OUT/launch_ab" | tee "$OUT/launch_ab.md"
