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
source bench/ab_rounds.sh
run() {  # run SIDE ROUND BUNDLE
  PTXGATE_CACHE_DIR=$(mktemp -d) LD_LIBRARY_PATH="$3/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout --kill-after=5 120 "$3/bin/ptxgate_gpu_bench" launch --kernels bench/kernels \
    --out "$OUT/launch_ab/$1_$2.json" >"$OUT/launch_ab/$1_$2.log" 2>&1
}
ab_rounds "$ROUNDS" "$BEFORE" "$AFTER" launch_ab run
python3 bench/compare_launch.py "$OUT/launch_ab" | tee "$OUT/launch_ab.md"
