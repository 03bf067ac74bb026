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
source bench/ab_rounds.sh
run() {  # run SIDE ROUND BUNDLE
  PTXGATE_CACHE_DIR=$(mktemp -d) LD_LIBRARY_PATH="$3/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout --kill-after=5 "${WORKLOADS_AB_LIMIT:-240}" "$3/bin/ptxgate_gpu_bench" workloads --kernels bench/kernels \
    --cubins "$3/cubins" ${WORKLOADS:+--only $WORKLOADS} --out "$OUT/workloads_ab/$1_$2.json" \
    >"$OUT/workloads_ab/$1_$2.log" 2>&1
}
ab_rounds "$ROUNDS" "$BEFORE" "$AFTER" workloads_ab run
status=$?
python3 bench/compare_workloads.py "$OUT/workloads_ab" | tee "$OUT/workloads_ab.md"
exit $status
