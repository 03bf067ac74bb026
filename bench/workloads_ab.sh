#!/usr/bin/env bash
# Before/after kernel run times on the GPU machine, one call: `ptxgate_gpu_bench workloads --only ...` from
# two benchmark bundles (scripts/bench_gpu.sh), alternating ROUNDS times so clock drift hits both alike.
# Each run compiles the same bench/kernels sources with its own compiler and times ptxgate's kernel against
# nvcc's twin in the same process (the twin's figure is each run's control). Prints every workload's
# ptxgate / twin figures per side and round (bench/compare_workloads.py). Results under $OUT.
#   bash bench/workloads_ab.sh BEFORE_BUNDLE AFTER_BUNDLE [ROUNDS=2] [WORKLOADS="sum gemm_bf16_mma"]
set -u
BEFORE=$(cd "$1" && pwd); AFTER=$(cd "$2" && pwd); ROUNDS=${3:-2}; WORKLOADS=${4:-}
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/workloads_ab"
status=0
for ((r = 1; r <= ROUNDS; r++)); do
  for side in before after; do
    dir=$BEFORE; [ "$side" = after ] && dir=$AFTER
    PTXGATE_CACHE_DIR=$(mktemp -d) LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      timeout --kill-after=5 "${WORKLOADS_AB_LIMIT:-240}" "$dir/bin/ptxgate_gpu_bench" workloads --kernels bench/kernels \
      --cubins "$dir/cubins" ${WORKLOADS:+--only $WORKLOADS} --out "$OUT/workloads_ab/${side}_$r.json" \
      >"$OUT/workloads_ab/${side}_$r.log" 2>&1
    rc=$?
    echo "workloads_ab: $side round $r exit $rc"
    ((rc == 0)) || status=1
  done
done
python3 bench/compare_workloads.py "$OUT/workloads_ab" | tee "$OUT/workloads_ab.md"
exit $status
