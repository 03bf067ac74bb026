#!/usr/bin/env bash
# What checked mode costs, on the GPU machine, in one run (docs/benchmarks.md "Checked mode"):
#   here:        bash bench/checked_cost.sh bundle DIR    (from a built tree, BUILD=build: DIR/ with the binaries,
#                                                          the library, kernels, examples and nvcc cubins)
#   GPU machine: bash DIR/checked_cost.sh device         (results in $OUT: checked_cost.md and logs.tar.gz)
# Device steps: the checked GPU tests (each case in a process of its own, under the tests' supervisor),
# GPU_TESTS_MORE (doctest filters, e.g. 'examples*') as a control of the unchecked paths; the workloads (sum,
# softmax, layer norm, f16/bf16 axpy, SGEMM) timed GPU-bound (20 launches between two events, variants
# interleaved in alternating order, every result checked at the timed size) in four processes: unchecked,
# checked, checked, unchecked (the two unchecked runs, the two checked ones and the nvcc twins are the A/A
# controls); the SASS of each workload kernel both ways (cuobjdump: registers and instructions); a faulty
# GPU program (bench/checked_faulty.cpp: data made on the device, thousands of launches) checked against the
# same program under compute-sanitizer memcheck, whole-program wall time (run first). STEPS=faulty runs only it.
set -uo pipefail

bundle() {
  set -e
  local dir=$1 build=${BUILD:-build} cuda=${CUDA_HOME:-/usr/local/cuda}
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib" "$dir/examples" "$dir/kernels" "$dir/cubins" "$dir/profiles"
  cp "$build/tools/ptxgate" "$build/tests/gpu/ptxgate_gpu_tests" "$build/bench/ptxgate_gpu_bench" \
    "$build/bench/ptxgate_checked_faulty" "$dir/bin/"
  cp -L "$build/libptxgate.so.0" "$dir/lib/"
  strip --strip-unneeded "$dir/lib/libptxgate.so.0" "$dir/bin/"*
  ldd "$dir/lib/libptxgate.so.0" "$dir"/bin/* | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libgcc_s.so*|libstdc++.so*|ld-linux*|libdl.so*|libpthread.so*|librt.so*|libz.so*|libzstd.so*|libptxgate.so*) ;;
      *) cp -L "$lib" "$dir/lib/" ;;
    esac
  done
  cp examples/*.pg "$dir/examples/"
  cp bench/kernels/*.pg bench/checked/*.pg "$dir/kernels/"
  cp profiles/*.json "$dir/profiles/"
  for k in warp_sum softmax layer_norm axpy_half sgemm; do
    "$cuda/bin/nvcc" -cubin -arch=sm_90 -O3 -o "$dir/cubins/$k.cubin" "bench/cuda/$k.cu"
  done
  cp bench/checked_cost.sh bench/checked_report.py "$dir/"
  echo "bundle: $dir, $(du -sm "$dir" | cut -f1) MiB"
}

device() {
  local here out work
  here=$(cd "$(dirname "$0")" && pwd)
  out=${OUT:-$PWD/out}
  work=$(mktemp -d)
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PTXGATE_EXAMPLES_DIR="$here/examples" PTXGATE_PROFILE_DIR="$here/profiles" PTXGATE_BENCH_KERNELS_DIR="$here/kernels"
  export PTXGATE_CACHE_DIR="$work/cache" CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
  [[ -x "$CUDA_HOME/bin/ptxas" ]] && export PTXGATE_PTXAS="$CUDA_HOME/bin/ptxas"
  local cli="$here/bin/ptxgate" bench="$here/bin/ptxgate_gpu_bench" tests="$here/bin/ptxgate_gpu_tests"
  local log="$out/steps.txt"  # written as the steps go: a run cut short keeps what it did
  say() { echo "$*" | tee -a "$log"; }
  say "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader)"

  # The faulty program (bench/checked_faulty.cpp): a smoother whose matrix is built on the device with an
  # off-by-one column, SIDE^2 cells, STEPS launches; whole-program wall time, checked against memcheck.
  local prog="$here/bin/ptxgate_checked_faulty" side=${FAULTY_SIDE:-1024} steps=${FAULTY_STEPS:-4000}
  "$prog" 64 2 >/dev/null 2>&1  # warm the module cache (both modes)
  "$prog" --checked 64 2 >/dev/null 2>&1
  timed() {  # timed NAME COMMAND...: wall seconds to $work/NAME.wall, output to $work/NAME.log
    local name=$1 t0 t1
    shift
    t0=$(date +%s%N)
    timeout --kill-after=5 "${FAULTY_LIMIT:-100}" "$@" >"$work/$name.log" 2>&1
    local rc=$?
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }' >"$work/$name.wall"
    echo "$rc" >"$work/$name.rc"
    say "$name: exit $rc, $(cat "$work/$name.wall") s wall; $(grep -E '^checked_faulty:|error\[PG|ERROR SUMMARY' "$work/$name.log" | head -3 | tr '\n' ' ')"
  }
  # Alternating order; the two checked runs are the A/A control.
  timed faulty_checked "$prog" --checked "$side" "$steps"
  timed faulty_memcheck_continue compute-sanitizer --tool memcheck --print-limit 10 --destroy-on-device-error kernel \
    "$prog" "$side" "$steps"
  timed faulty_checked_2 "$prog" --checked "$side" "$steps"
  timed faulty_unchecked "$prog" "$side" "$steps"
  timed faulty_memcheck compute-sanitizer --tool memcheck --print-limit 10 "$prog" "$side" "$steps"

  export PTXGATE_GPU_CASE_TIMEOUT=${CASE_LIMIT:-60}
  if [[ "${STEPS:-all}" == all ]]; then
    timeout --kill-after=5 "${TESTS_LIMIT:-120}" "$tests" --no-intro=true -tc='checked*' >"$work/gpu_checked.log" 2>&1
    say "gpu tests (checked*): exit $?"
    sed -n '/^gpu cases:/,$p' "$work/gpu_checked.log" | head -30 >>"$log"
    if [[ -n "${GPU_TESTS_MORE:-}" ]]; then
      timeout --kill-after=5 "${MORE_LIMIT:-120}" "$tests" --no-intro=true -tc="$GPU_TESTS_MORE" >"$work/gpu_more.log" 2>&1
      say "gpu tests ($GPU_TESTS_MORE): exit $?"
      sed -n '/^gpu cases:/,$p' "$work/gpu_more.log" | head -30 >>"$log"
    fi

    local only="sum softmax layer_norm axpy_f16 axpy_bf16 sgemm" reps=${REPS:-10}
    for run in plain1 checked1 checked2 plain2; do
      local flag=""
      [[ $run == checked* ]] && flag="--checked"
      timeout --kill-after=5 "${WORKLOADS_LIMIT:-150}" "$bench" workloads --kernels "$here/kernels" --cubins "$here/cubins" \
        --only $only --repetitions "$reps" $flag --out "$work/workloads_$run.json" \
        >"$work/workloads_$run.log" 2>&1
      say "workloads $run: exit $?"
    done

    # SASS of each workload kernel, unchecked and checked (what a missed target is profiled with).
    mkdir -p "$work/sass"
    for k in warp_sum softmax layer_norm axpy_half sgemm; do
      [[ -f "$here/kernels/$k.pg" ]] || continue
      for mode in plain checked; do
        local flagc=""
        [[ $mode == checked ]] && flagc="--checked"
        "$cli" emit "$here/kernels/$k.pg" --target sm_90 $flagc -o "$work/sass/$k.$mode.ptx" >/dev/null 2>&1 &&
          "$CUDA_HOME/bin/ptxas" -arch=sm_90 -O3 -v -o "$work/sass/$k.$mode.cubin" "$work/sass/$k.$mode.ptx" \
            >"$work/sass/$k.$mode.ptxas.txt" 2>&1 &&
          "$CUDA_HOME/bin/cuobjdump" -sass "$work/sass/$k.$mode.cubin" >"$work/sass/$k.$mode.sass" 2>&1
        rm -f "$work/sass/$k.$mode.cubin"
      done
      say "sass $k: $(grep -ho 'Used [0-9]* registers' "$work/sass/$k.plain.ptxas.txt" | head -3 | tr '\n' ' ')-> checked $(grep -ho 'Used [0-9]* registers' "$work/sass/$k.checked.ptxas.txt" | head -3 | tr '\n' ' ')"
    done

  fi

  python3 "$here/checked_report.py" "$work" >"$out/checked_cost.md" 2>"$work/report.err"
  cat "$log" >>"$out/checked_cost.md"
  cp "$log" "$work/steps.txt"
  tar -czf "$out/logs.tar.gz" -C "$work" --exclude=cache . 2>/dev/null
  cat "$out/checked_cost.md"
}

case "${1:-}" in
  bundle) bundle "${2:?bundle DIR}" ;;
  device) device ;;
  *) echo "usage: bench/checked_cost.sh bundle DIR | device" >&2; exit 2 ;;
esac
