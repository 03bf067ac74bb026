#!/usr/bin/env bash
# Runs the ptxgate benchmarks on the GPU machine from a prebuilt bundle (scripts/bench_gpu.sh); results go to $OUT.
# Usage (repository root): bash bench/run_on_gpu.sh [BUNDLE=.bundle]
# BENCH_STEPS picks the steps (default "validation launch kernels compile peers"); "workloads" runs issue 13's
# workloads (ptxgate_gpu_bench workloads) and their library peers (peers.py --steps workloads):
#   BENCH_STEPS="kernels workloads" bash bench/run_on_gpu.sh .bundle   (scripts/gpu_all.sh's "kernels" part)
# Writes at most 6 files to $OUT: bench_results.json, bench_results.md, bench_log.txt and 3 PNG plots.
# Every step has its own time limit and failures are recorded; the report is written whatever happened, and
# the exit status is 1 when a step failed (a wrong result, a crash, a time-out), naming the steps.
set -u
BUNDLE=$(cd "${1:-.bundle}" && pwd)
ROOT=$(pwd)
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
WORK=$(mktemp -d)
PARTS=$WORK/parts
mkdir -p "$PARTS"
LOG=$OUT/bench_log.txt
: >"$LOG"
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH="$CUDA_HOME/bin:$PATH"
export PTXGATE_PROFILE_DIR="$ROOT/profiles"
export PTXGATE_CACHE_DIR="$WORK/ptxgate-cache"
# The bundled libraries only for the benchmark binary (python, torch and nvidia-smi keep the system's).
BENCH_LD_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bench() { LD_LIBRARY_PATH="$BENCH_LD_PATH" "$BUNDLE/bin/ptxgate_gpu_bench" "$@"; }
export -f bench
export BUNDLE BENCH_LD_PATH
START=$(date +%s)
STEPS=" ${BENCH_STEPS:-validation launch kernels compile peers} "
want() { [[ "$STEPS" == *" $1 "* ]]; }

log() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }
# step NAME LIMIT_SECONDS COMMAND...: runs with a time limit, output to the log, never aborts the script.
step() {
  local name=$1 limit=$2
  shift 2
  log "== $name (limit ${limit}s): $*"
  timeout --kill-after=5 "$limit" "$@" >>"$LOG" 2>&1
  local rc=$?
  case $rc in
    0) log "== $name: ok" ;;
    3) log "== $name: skipped (no driver or device)" ;;
    124|137) log "== $name: TIMED OUT after ${limit}s (partial results kept)"; FAILED_STEPS+=("$name (timed out)") ;;
    *) log "== $name: exit status $rc (partial results kept)"; FAILED_STEPS+=("$name (exit $rc)") ;;
  esac
}
FAILED_STEPS=()
smi() { nvidia-smi --query-gpu="$1" --format=csv,noheader 2>/dev/null | head -1; }
CLOCK_FIELDS=clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw,pstate

log "bundle $BUNDLE, output $OUT, work $WORK"
CLOCKS_BEFORE=$(smi $CLOCK_FIELDS)
nvidia-smi >>"$LOG" 2>&1 || log "nvidia-smi failed"
ls "$BUNDLE/bin" "$BUNDLE/lib" >>"$LOG" 2>&1
LD_LIBRARY_PATH="$BENCH_LD_PATH" ldd "$BUNDLE/bin/ptxgate_gpu_bench" >>"$LOG" 2>&1

# The nvcc twins: built with the bundle; compiled here only if missing.
CUBINS=$BUNDLE/cubins
for k in saxpy copy block_sum matmul launch saxpy4 copy4 warp_sum softmax layer_norm axpy_half bfs sgemm gemm_bf16_wgmma gemm_bf16_mma; do
  if [ ! -s "$CUBINS/$k.cubin" ]; then
    mkdir -p "$WORK/cubins" && CUBINS=$WORK/cubins
    arch=$(sed -n 's|^// nvcc-arch: *||p' "bench/cuda/$k.cu")
    step "nvcc $k" 60 nvcc -cubin -arch="${arch:-sm_90}" -O3 -o "$CUBINS/$k.cubin" "bench/cuda/$k.cu"
  fi
done

want validation && step "validation cost" 45 bash -c 'bench "$@"' bench validation --examples examples --kernels bench/kernels --out "$PARTS/validation.json"
want launch && step "launch overhead" 90 bash -c 'bench "$@"' bench launch --kernels bench/kernels --out "$PARTS/launch.json"
want kernels && step "kernel quality" 100 bash -c 'bench "$@"' bench kernels --examples examples --kernels bench/kernels --cubins "$CUBINS" \
  --out "$PARTS/kernels.json"
if want workloads; then
  step "workloads" "${WORKLOADS_LIMIT:-240}" bash -c 'bench "$@"' bench workloads --kernels bench/kernels --cubins "$CUBINS" ${WORKLOADS:+--only $WORKLOADS} \
    --out "$PARTS/workloads.json"
  step "workload peers (torch, cuBLAS)" "${PEERS_LIMIT:-180}" python3 bench/peers.py --cuda-dir bench/cuda --steps workloads \
    --out "$PARTS/workload_peers.json"
fi
# One process per kernel: a crash in one (see the log) loses only that kernel's rows.
want compile && for k in saxpy copy block_sum matmul; do
  step "compile latency $k" 60 bash -c 'bench "$@"' bench compile --only "$k" --examples examples \
    --kernels bench/kernels --twins bench/cuda --cache-dir "$WORK/compile-cache-$k" --out "$PARTS/compile_$k.json"
done
# Issue 17: every example and benchmark kernel against NVRTC in one process, per phase, and the size curve; issue 29's
# target 5 (ptxas on ptxgate's PTX against nvcc's PTX of each twin, with nvcc from $CUDA_HOME) and target 4 (the
# generated kernels up to 2000 statements, each doubling gated by report.py).
want compile && step "compile vs NVRTC" 240 bash -c 'bench "$@"' bench compile-compare --examples examples \
  --kernels bench/kernels --twins bench/cuda --repetitions 10 --scaling 250 500 1000 2000 --scaling-repetitions 5 \
  --out "$PARTS/compile_compare.json"
# The cold path (text -> loaded module, fresh Runtime and caches) of every kernel with a twin, against NVRTC -> cubin -> load.
want compile && step "compile cold path, every twin" 180 bash -c 'bench "$@"' bench compile --cold-all --cold-repetitions 3 \
  --examples examples --kernels bench/kernels --twins bench/cuda --out "$PARTS/compile_cold_all.json"
want peers && step "peers (CuPy, Triton, NVRTC)" 150 python3 bench/peers.py --cuda-dir bench/cuda --out "$PARTS/peers.json"

# Generated code next to nvcc's, for the log: resources and SASS of the bandwidth kernels.
if command -v cuobjdump >/dev/null; then
  for k in copy saxpy copy4 saxpy4 $(want workloads && echo warp_sum softmax layer_norm axpy_half bfs sgemm gemm_bf16_mma); do
    {
      echo "---- SASS $k: ptxgate"; cuobjdump -sass "$BUNDLE/emit/$k.cubin" 2>&1 | grep -E '^\s+/\*[0-9a-f]{4}\*/' | head -"${SASS_LINES:-40}"
      echo "---- SASS $k: nvcc"; cuobjdump -sass "$CUBINS/$k.cubin" 2>&1 | grep -E '^\s+/\*[0-9a-f]{4}\*/' | head -"${SASS_LINES:-40}"
    } >>"$LOG" 2>&1
  done
fi
cat "$BUNDLE"/emit/*.ptxas.txt >>"$LOG" 2>/dev/null

CLOCKS_AFTER=$(smi $CLOCK_FIELDS)
python3 - "$WORK/env.json" "$CLOCKS_BEFORE" "$CLOCKS_AFTER" "$CLOCK_FIELDS" <<'PY' >>"$LOG" 2>&1
import json, subprocess, sys
path, before, after, fields = sys.argv[1:5]
def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:
        return f"unavailable ({e})"
gpu = run("nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap", "--format=csv,noheader")
name, driver, memory, cc = (gpu.split(", ") + ["?"] * 4)[:4]
env = {"gpu": {"name": name, "driver_version": driver, "memory_total": memory, "compute_cap": cc},
       "clock_fields": fields, "clocks_before": before, "clocks_after": after,
       "nvcc": run("nvcc", "--version").splitlines()[-1:] and run("nvcc", "--version").splitlines()[-1],
       "ptxas": run("ptxas", "--version").splitlines()[-1:] and run("ptxas", "--version").splitlines()[-1],
       "uname": run("uname", "-srm")}
json.dump(env, open(path, "w"), indent=2)
print(json.dumps(env, indent=2))
PY
log "clocks before: $CLOCKS_BEFORE"
log "clocks after:  $CLOCKS_AFTER"

python3 bench/report.py --parts "$PARTS" --env "$WORK/env.json" --out "$OUT" 2>&1 | tee -a "$LOG"
report_status=${PIPESTATUS[0]}
((report_status == 0)) || FAILED_STEPS+=("report (bench/report.py exit $report_status)")
log "done in $(( $(date +%s) - START ))s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
if ((${#FAILED_STEPS[@]} > 0)); then
  log "FAILED steps: ${FAILED_STEPS[*]}"
  exit 1
fi
