#!/usr/bin/env bash
# GPU run in two halves. Here: `scripts/gpu_run.sh bundle` builds and packs .bundle/ (< 64 MiB).
# On the GPU machine: `scripts/gpu_run.sh device` runs the GPU tests (each case in its own process),
# `ptxgate run`, and compute-sanitizer memcheck + racecheck, writing $OUT/gpu_results.txt and logs; it
# exits 1 when a case, a run or a sanitizer check failed, and names the failed cases at the end
# (GPU_TESTS_ARGS: more arguments for the test binary, e.g. "-tc=example*"; GPU_RUN_SANITIZER=0 leaves
# compute-sanitizer out);
# `scripts/gpu_run.sh multigpu` runs the multi-GPU tests, the data-parallel example on 1/2/4 GPUs
# and the NCCL benchmark, writing $OUT/multigpu_results.txt and $OUT/multigpu_logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
BUNDLE="$ROOT/.bundle"
MODE="${1:-bundle}"

bundle() {
  set -e
  local build="${BUILD_DIR:-build-gpu}"
  local cuda="${CUDA_HOME:-/usr/local/cuda}"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPTXGATE_BUILD_BENCH="${PTXGATE_BUILD_BENCH:-OFF}" >/dev/null
  local targets=(ptxgate ptxgate_cli ptxgate_gpu_tests ptxgate_data_parallel)
  [[ "${PTXGATE_BUILD_BENCH:-OFF}" == ON ]] && targets+=(ptxgate_nccl_bench)
  # The Python package's launch extension, where the build found Python's headers (python/CMakeLists.txt).
  ninja -C "$build" -t targets all | grep -q '^ptxgate_python_launch:' && targets+=(ptxgate_python_launch)
  ninja -C "$build" -j "${JOBS:-2}" "${targets[@]}"
  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE/bin" "$BUNDLE/lib/sys" "$BUNDLE/examples" "$BUNDLE/profiles" "$BUNDLE/ptx" "$BUNDLE/kernels"
  cp "$build/tools/ptxgate" "$build/tests/gpu/ptxgate_gpu_tests" "$build/examples/data_parallel/ptxgate_data_parallel" \
    "$BUNDLE/bin/"
  [[ -x "$build/bench/ptxgate_nccl_bench" ]] && cp "$build/bench/ptxgate_nccl_bench" "$BUNDLE/bin/"
  cp -L "$build/libptxgate.so.0" "$BUNDLE/lib/"
  # Beside the library, where the package finds it (the stable ABI: any CPython from 3.10 on).
  [[ -f "$build/_launch.abi3.so" ]] && cp "$build/_launch.abi3.so" "$BUNDLE/lib/"
  strip --strip-unneeded "$BUNDLE/lib/libptxgate.so.0" "$BUNDLE/bin/"*
  # Non-system libraries the binaries need (Debian packages the GPU image may lack).
  for lib in $(ldd "$BUNDLE/bin/"* "$BUNDLE/lib/libptxgate.so.0" |
               awk '/=> \// {print $3}' | sort -u); do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libptxgate*) ;;
      libstdc++.so.*|libgcc_s.so.*) cp -L "$lib" "$BUNDLE/lib/sys/" ;;
      *) cp -L "$lib" "$BUNDLE/lib/" ;;
    esac
  done
  # A glibc of this build machine, used only when the GPU machine's is older.
  for lib in /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/libm.so.6; do
    cp -L "$lib" "$BUNDLE/lib/sys/"
  done
  cp examples/*.pg "$BUNDLE/examples/"
  cp bench/kernels/*.pg "$BUNDLE/kernels/"  # the GEMM the tensor-core GPU tests run
  cp tests/unit/ptx/*.ptx "$BUNDLE/ptx/"  # other compilers' PTX, for the foreign-kernel GPU tests
  cp profiles/*.json "$BUNDLE/profiles/"
  cp "$cuda/nvvm/libdevice/libdevice.10.bc" "$BUNDLE/"
  local size
  size=$(du -sb "$BUNDLE" | cut -f1)
  echo "bundle: $BUNDLE, $((size / 1024 / 1024)) MiB"
  if ((size >= 64 * 1024 * 1024)); then
    echo "bundle: too large for the device tool (64 MiB with the working tree)" >&2
    exit 1
  fi
  echo "next: run 'scripts/gpu_run.sh device' on the GPU machine with .bundle carried"
}

# The environment of the bundled binaries on the GPU machine: libraries, examples, ptxas, NCCL
# (NCCL_NVLS_ENABLE=0, libnccl.so.2 from python3's site-packages), and the loader prefix; sets
# the arrays tests=(...) and cli=(...) and prefix=(...).
setup_env() {
  export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PTXGATE_EXAMPLES_DIR="$BUNDLE/examples" PTXGATE_PROFILE_DIR="$BUNDLE/profiles" PTXGATE_PTX_DIR="$BUNDLE/ptx"
  export PTXGATE_BENCH_KERNELS_DIR="$BUNDLE/kernels"
  export PTXGATE_CACHE_DIR="$(mktemp -d)"
  local cuda="${CUDA_HOME:-/usr/local/cuda}"
  if [[ -x "$cuda/bin/ptxas" ]]; then export CUDA_HOME="$cuda" PTXGATE_PTXAS="$cuda/bin/ptxas"
  elif command -v ptxas >/dev/null; then export PTXGATE_PTXAS="$(command -v ptxas)"; fi
  [[ -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]] || export PTXGATE_LIBDEVICE="$BUNDLE/libdevice.10.bc"

  # NCCL (collective tests): ships with PyTorch's Python packages, not with the toolkit.
  export NCCL_NVLS_ENABLE=0
  if [[ -z "${PTXGATE_NCCL_LIBRARY:-}" ]]; then
    local nccl_lib
    nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
    if [[ ! -f "$nccl_lib" ]]; then
      nccl_lib=$(python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null |
                 while read -r d; do [[ -d "$d" ]] && find "$d" -name 'libnccl.so.2' 2>/dev/null; done | head -1)
    fi
    [[ -f "$nccl_lib" ]] && export PTXGATE_NCCL_LIBRARY="$nccl_lib"
  fi

  # Run natively when the binaries load here; else through the bundled loader and glibc.
  prefix=()
  if ! "$BUNDLE/bin/ptxgate" --version >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$BUNDLE/lib/sys:$LD_LIBRARY_PATH"
    if ! "$BUNDLE/bin/ptxgate" --version >/dev/null 2>&1; then
      prefix=("$BUNDLE/lib/sys/ld-linux-x86-64.so.2" --library-path "$LD_LIBRARY_PATH")
    fi
  fi
  tests=("${prefix[@]}" "$BUNDLE/bin/ptxgate_gpu_tests")
  export PTXGATE_GPU_TEST_SELF="${tests[*]}"
  cli=("${prefix[@]}" "$BUNDLE/bin/ptxgate")
}

device() {
  local out="${OUT:-$ROOT/out}"
  mkdir -p "$out"
  local results="$out/gpu_results.txt"
  : >"$results"
  say() { echo "$*" | tee -a "$results"; }
  [[ -x "$BUNDLE/bin/ptxgate_gpu_tests" ]] || { say "FAILED: no .bundle (run 'scripts/gpu_run.sh bundle' first and carry .bundle)"; return 1; }
  local prefix=() tests=() cli=()
  setup_env
  local cuda="${CUDA_HOME:-/usr/local/cuda}"

  say "== ptxgate GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  say "host: $(uname -srm)"
  say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi unavailable')"
  say "ptxgate: $("${cli[@]}" --version 2>&1)"
  say "loader: ${prefix[*]:-native}; ptxas: ${PTXGATE_PTXAS:-none (PTX JIT)}"
  say "nccl: ${PTXGATE_NCCL_LIBRARY:-libnccl.so.2 on the library path (PTXGATE_NCCL_LIBRARY unset)}"
  "${cli[@]}" devices --json >"$out/device.json" 2>&1
  say "devices --json: exit $? ($(head -c 200 "$out/device.json" | tr -d '\n'))"

  local rc=0 failed=()
  # shellcheck disable=SC2086  # GPU_TESTS_ARGS: words on purpose
  "${tests[@]}" --no-intro=true ${GPU_TESTS_ARGS:-} >"$out/gpu_tests.log" 2>&1
  local trc=$?
  say "gpu tests: exit $trc"
  grep -E '^device:|^agreement:|^occupancy agreement:|^nccl:|^overlap:|^gpu cases:' "$out/gpu_tests.log" | tee -a "$results"
  # The summary's FAILED and SKIPPED lines (after "gpu cases:"), each naming its case and why.
  sed -n '/^gpu cases:/,$p' "$out/gpu_tests.log" | grep -E '^(FAILED|SKIPPED): ' | tee -a "$results"
  if ((trc != 0)); then
    rc=1
    grep -q '^gpu cases:' "$out/gpu_tests.log" || failed+=("gpu tests (no summary: exit $trc)")
    while IFS= read -r line; do failed+=("gpu case: ${line#FAILED: }"); done \
      < <(sed -n '/^gpu cases:/,$p' "$out/gpu_tests.log" | grep '^FAILED: ')
  fi

  {
    echo "\$ ptxgate run examples/saxpy.pg --kernel saxpy --arg y=random:1000003:1 --arg x=random:1000003:2 --arg a=2.5 --arg n=1000003 --print y:4 --time 50"
    "${cli[@]}" run "$BUNDLE/examples/saxpy.pg" --kernel saxpy --arg y=random:1000003:1 --arg x=random:1000003:2 \
      --arg a=2.5 --arg n=1000003 --print y:4 --time 50 --out "y=$out/saxpy_y.npy"
    echo "exit $?"
    echo "\$ ptxgate run examples/normalize.pg --kernel normalize --grid max --arg x=fill:100000:2 --arg acc=fill:1:0 --arg n=100000 --print x:3"
    "${cli[@]}" run "$BUNDLE/examples/normalize.pg" --kernel normalize --grid max --arg x=fill:100000:2 \
      --arg acc=fill:1:0 --arg n=100000 --print x:3
    echo "exit $?"
    echo "\$ ptxgate run examples/saxpy.pg --kernel saxpy --block 512 ... (must be blocked: PG3105)"
    "${cli[@]}" run "$BUNDLE/examples/saxpy.pg" --kernel saxpy --block 512 --arg y=random:10 --arg x=random:10 \
      --arg a=1 --arg n=10
    echo "exit $?"
  } >"$out/run.log" 2>&1
  local successes
  successes=$(grep -c '^exit 0' "$out/run.log")
  say "ptxgate run: $successes of 2 expected successes, the blocked launch $(grep -q '^exit 1' "$out/run.log" && echo 'exit 1 (as it must)' || echo 'NOT blocked'); $(grep -E '^time:' "$out/run.log")"
  if ((successes != 2)) || ! grep -q '^exit 1' "$out/run.log"; then rc=1; failed+=("ptxgate run (run.log)"); fi
  rm -f "$out/saxpy_y.npy"

  local sanitizer=""
  for s in compute-sanitizer "$cuda/bin/compute-sanitizer" "$cuda/compute-sanitizer/compute-sanitizer"; do
    if command -v "$s" >/dev/null 2>&1; then sanitizer="$s"; break; fi
  done
  if [[ "${GPU_RUN_SANITIZER:-1}" == 0 ]]; then
    say "compute-sanitizer: SKIPPED (GPU_RUN_SANITIZER=0)"
  elif [[ -z "$sanitizer" ]]; then
    say "compute-sanitizer: SKIPPED (not found)"
  else
    for tool in memcheck racecheck; do
      PTXGATE_UNDER_COMPUTE_SANITIZER=1 "$sanitizer" --tool "$tool" --error-exitcode 99 "${tests[@]}" --no-intro=true \
        -tc='example*' >"$out/$tool.log" 2>&1
      local src=$?
      say "compute-sanitizer $tool: exit $src — $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool.log" | sort | uniq -c | tr -s ' \n' ' ')"
      grep -E '^gpu cases:' "$out/$tool.log" | sed "s/^/  $tool /" | tee -a "$results"
      if ((src != 0)); then rc=1; failed+=("compute-sanitizer $tool (exit $src)"); fi
    done
  fi
  rm -rf "$PTXGATE_CACHE_DIR"
  local f
  for f in "${failed[@]}"; do say "FAILED: $f"; done
  say "== done (exit $rc: ${#failed[@]} failed)"
  return "$rc"
}

# Several GPUs: the multigpu tests, the data-parallel example on 1, 2 and 4 GPUs (as many as there
# are), and the all-reduce benchmark; $OUT/multigpu_results.txt holds what to read, the full logs
# travel as $OUT/multigpu_logs.tar.gz.
multigpu() {
  local out="${OUT:-$ROOT/out}" logs
  mkdir -p "$out"
  logs="$(mktemp -d)"
  local results="$out/multigpu_results.txt"
  : >"$results"
  say() { echo "$*" | tee -a "$results"; }
  [[ -x "$BUNDLE/bin/ptxgate_data_parallel" ]] || { say "FAILED: no .bundle with ptxgate_data_parallel (run 'scripts/gpu_run.sh bundle')"; return 1; }
  local prefix=() tests=() cli=()
  setup_env
  local count rc=0
  count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  say "== ptxgate multi-GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  say "gpus: $count: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')"
  say "nccl: ${PTXGATE_NCCL_LIBRARY:-libnccl.so.2 on the library path}; NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
  "${cli[@]}" devices >"$logs/devices.txt" 2>&1
  say "\$ ptxgate devices: exit $?"
  tee -a "$results" <"$logs/devices.txt"
  "${cli[@]}" devices --json >"$logs/devices.json" 2>&1
  say "\$ ptxgate devices --json: exit $? (schema_version $(grep -m1 "schema_version" "$logs/devices.json" | tr -dc 0-9))"

  timeout --kill-after=10 "${MULTIGPU_TESTS_LIMIT:-300}" "${tests[@]}" --min-gpus 2 --no-intro=true --test-case='multigpu*' \
    >"$logs/multigpu_tests.log" 2>&1
  local trc=$?
  ((trc == 0 || trc == 77)) || rc=1
  say "multigpu tests: exit $trc (77: skipped, fewer than 2 GPUs)"
  grep -E '^multigpu|^gpu cases:|^SKIPPED|ERROR|^FAILED' "$logs/multigpu_tests.log" | tee -a "$results"

  local g
  for g in ${DATA_PARALLEL_GPUS-1 2 4}; do
    ((g <= count)) || { say "data-parallel gpus=$g: SKIPPED (this machine has $count)"; continue; }
    timeout --kill-after=10 "${DATA_PARALLEL_LIMIT:-180}" "${prefix[@]}" "$BUNDLE/bin/ptxgate_data_parallel" --gpus "$g" \
      --rows "${DATA_PARALLEL_ROWS:-16777216}" --steps "${DATA_PARALLEL_STEPS:-10}" >"$logs/data_parallel_$g.log" 2>&1
    local drc=$?
    ((drc == 0)) || rc=1
    say "data-parallel gpus=$g: exit $drc"
    grep -E '^data-parallel:|^equal|^weights|step (1|2|10):|error' "$logs/data_parallel_$g.log" | tee -a "$results"
  done

  if [[ -x "$BUNDLE/bin/ptxgate_nccl_bench" ]]; then
    # NCCL_BENCH_GPUS="2 0": one run per count (0: every GPU), e.g. 2 and 4 on a machine of 4;
    # NCCL_BENCH_ARGS go to each run (e.g. "--max-bytes 4194304 --repeats 31" for the small sizes only).
    local bg
    for bg in ${NCCL_BENCH_GPUS:-0}; do
      ((bg <= count)) || { say "nccl bench gpus=$bg: SKIPPED (this machine has $count)"; continue; }
      timeout --kill-after=10 "${NCCL_BENCH_LIMIT:-240}" "${prefix[@]}" "$BUNDLE/bin/ptxgate_nccl_bench" --gpus "$bg" ${NCCL_BENCH_ARGS:-} \
        --json "$logs/nccl_bench_$bg.json" >"$logs/nccl_bench_$bg.log" 2>&1
      local brc=$?
      ((brc == 0)) || rc=1
      say "nccl bench gpus=$bg: exit $brc"
      grep -vE '^  nccl\.' "$logs/nccl_bench_$bg.log" | tee -a "$results"
    done
  else
    say "nccl bench: SKIPPED (bundle built without PTXGATE_BUILD_BENCH=ON; scripts/gpu_all.sh bundle builds it)"
  fi
  tar -czf "$out/multigpu_logs.tar.gz" -C "$logs" . 2>/dev/null
  rm -rf "$PTXGATE_CACHE_DIR" "$logs"
  say "== done (exit $rc)"
  return "$rc"
}

case "$MODE" in
  bundle) bundle ;;
  device) device ;;
  multigpu) multigpu ;;
  *) echo "usage: scripts/gpu_run.sh bundle | device | multigpu" >&2; exit 2 ;;
esac
