#!/usr/bin/env bash
# GPU run in two halves. Here: `scripts/gpu_run.sh bundle` builds and packs .bundle/ (< 64 MiB).
# On the GPU machine: `scripts/gpu_run.sh device` runs the GPU tests, `ptxgate run`, and
# compute-sanitizer memcheck + racecheck, writing $OUT/gpu_results.txt and logs.
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
  ninja -C "$build" -j "${JOBS:-2}" ptxgate ptxgate_cli ptxgate_gpu_tests
  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE/bin" "$BUNDLE/lib/sys" "$BUNDLE/examples" "$BUNDLE/profiles"
  cp "$build/tools/ptxgate" "$build/tests/gpu/ptxgate_gpu_tests" "$BUNDLE/bin/"
  cp -L "$build/libptxgate.so.0" "$BUNDLE/lib/"
  strip --strip-unneeded "$BUNDLE/lib/libptxgate.so.0" "$BUNDLE/bin/"*
  # Non-system libraries the binaries need (Debian packages the GPU image may lack).
  for lib in $(ldd "$BUNDLE/bin/ptxgate" "$BUNDLE/bin/ptxgate_gpu_tests" "$BUNDLE/lib/libptxgate.so.0" |
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

device() {
  local out="${OUT:-$ROOT/out}"
  mkdir -p "$out"
  local results="$out/gpu_results.txt"
  : >"$results"
  say() { echo "$*" | tee -a "$results"; }
  [[ -x "$BUNDLE/bin/ptxgate_gpu_tests" ]] || { say "FAILED: no .bundle (run 'scripts/gpu_run.sh bundle' first and carry .bundle)"; return 1; }

  export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PTXGATE_EXAMPLES_DIR="$BUNDLE/examples" PTXGATE_PROFILE_DIR="$BUNDLE/profiles"
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
  local prefix=()
  if ! "$BUNDLE/bin/ptxgate" --version >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$BUNDLE/lib/sys:$LD_LIBRARY_PATH"
    if ! "$BUNDLE/bin/ptxgate" --version >/dev/null 2>&1; then
      prefix=("$BUNDLE/lib/sys/ld-linux-x86-64.so.2" --library-path "$LD_LIBRARY_PATH")
    fi
  fi
  local tests=("${prefix[@]}" "$BUNDLE/bin/ptxgate_gpu_tests")
  export PTXGATE_GPU_TEST_SELF="${tests[*]}"
  local cli=("${prefix[@]}" "$BUNDLE/bin/ptxgate")

  say "== ptxgate GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  say "host: $(uname -srm)"
  say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'nvidia-smi unavailable')"
  say "ptxgate: $("${cli[@]}" --version 2>&1)"
  say "loader: ${prefix[*]:-native}; ptxas: ${PTXGATE_PTXAS:-none (PTX JIT)}"
  say "nccl: ${PTXGATE_NCCL_LIBRARY:-libnccl.so.2 on the library path (PTXGATE_NCCL_LIBRARY unset)}"
  "${cli[@]}" devices --json >"$out/device.json" 2>&1
  say "devices --json: exit $? ($(head -c 200 "$out/device.json" | tr -d '\n'))"

  "${tests[@]}" --no-intro=true >"$out/gpu_tests.log" 2>&1
  local rc=$?
  say "gpu tests: exit $rc"
  grep -E '^device:|^agreement:|^occupancy agreement:|^nccl:|test cases:|assertions:|SKIPPED' "$out/gpu_tests.log" | tee -a "$results"

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
  say "ptxgate run: $(grep -c '^exit 0' "$out/run.log") of 2 expected successes; $(grep -E '^time:' "$out/run.log")"
  rm -f "$out/saxpy_y.npy"

  local sanitizer=""
  for s in compute-sanitizer "$cuda/bin/compute-sanitizer" "$cuda/compute-sanitizer/compute-sanitizer"; do
    if command -v "$s" >/dev/null 2>&1; then sanitizer="$s"; break; fi
  done
  if [[ -z "$sanitizer" ]]; then
    say "compute-sanitizer: SKIPPED (not found)"
  else
    for tool in memcheck racecheck; do
      "$sanitizer" --tool "$tool" --error-exitcode 99 "${tests[@]}" --no-intro=true -tc='example*' \
        >"$out/$tool.log" 2>&1
      say "compute-sanitizer $tool: exit $? — $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool.log" | tr '\n' ' ')"
      grep -E 'test cases:' "$out/$tool.log" | sed "s/^/  $tool /" | tee -a "$results"
    done
  fi
  rm -rf "$PTXGATE_CACHE_DIR"
  say "== done (gpu tests exit $rc)"
  return "$rc"
}

case "$MODE" in
  bundle) bundle ;;
  device) device ;;
  *) echo "usage: scripts/gpu_run.sh bundle | device" >&2; exit 2 ;;
esac
