#!/usr/bin/env bash
# Build-bundle-run for the GPU machine in one device call: GPU tests, `ptxgate run`,
# compute-sanitizer, and the benchmarks.
#   here:            scripts/gpu_all.sh bundle      (builds $BUILD_DIR or build-gpu/, packs .bundle/ < 64 MiB)
#   GPU machine:     scripts/gpu_all.sh device      (with .bundle carried; results in $OUT)
#   before/after:    scripts/gpu_all.sh base REV    (REV's library and launch benchmark into .bundle/base)
#                    scripts/gpu_all.sh pack        (the bundle's library packed: bundle + base < 64 MiB)
# Parts: GPU_PARTS="tests bench kernels programs launch_ab" (default "tests bench"):
#   kernels    kernel quality and issue 13's workloads (sum, softmax, layer norm, f16/bf16 axpy, BFS, SGEMM) and
#              issue 16's bf16 GEMM (wgmma + TMA, sm_90a):
#              ptxgate vs nvcc twins vs memcpy vs torch/cuBLAS, in about 3 minutes (kernels_results.md;
#              WORKLOADS="sum softmax" picks some);
#   programs   ptxgate_programs_bench (100 small kernels: launches, graph replay, overlap), the CuPy and
#              PyTorch graph-replay peers, and the Jacobi example;
#   launch_ab  before/after launch overhead against a benchmark bundle of an earlier commit
#              (GPU_BEFORE: a directory, or a .tar.xz holding one directory; bench/launch_ab.sh;
#              default .bundle/base when `base` packed one);
#   validate   validate_bench on the GPU machine's host: what the memory verdict adds to validating a launch
#              new in every input, per shipped kernel (validate.txt; PTXGATE_BENCH_NEW=grid|same for others);
#   validate_ab  the same verdict before/after: the bundle's validate_bench with an earlier commit's library
#              (.bundle/base/libptxgate.so.0.xz, packed by `base`) and with its own, alternating, with an
#              A/A control (bench/validate_ab.sh; validate_ab.md);
#   python     the Python package's tests (python/tests, GPU ones with PyTorch/CuPy) over the bundle's library;
#   sanitize   compute-sanitizer memcheck, racecheck and synccheck over the programs GPU tests;
#   memsafe    the memory-safety analysis against compute-sanitizer: every tests/golden/memsafe case
#              launched unchecked through the raw driver (tests/gpu/memsafe_agreement.py; prepared in `bundle`);
#   multigpu   (a machine with 2 or 4 GPUs): the multi-GPU tests, the data-parallel example on
#              1/2/4 GPUs and the NCCL benchmark (multigpu_results.txt).
# `device` exits 1 when any part failed (a GPU test case, a sanitizer check, a benchmark's verification or
# step, a program, a Python test) and names what failed at the end; a case that does not apply to the
# device is SKIPPED with its reason and counts neither way. PTXGATE_GPU_FAIL_CASE='NAME*' fails the GPU
# test cases whose names match, on purpose (to see a failing run).
set -uo pipefail
cd "$(dirname "$0")/.."

bundle() {
  set -e
  # BUILD_DIR=build reuses scripts/build.sh's Release tree (it builds the benchmarks too).
  PTXGATE_BUILD_BENCH=ON BUILD_DIR="${BUILD_DIR:-build-gpu}" scripts/gpu_run.sh bundle
  BUNDLE=.bundle/bench BUILD="${BUILD_DIR:-build-gpu}" bash scripts/bench_gpu.sh
  # One copy of the library (it holds LLVM): the benchmark's is a relative link to it.
  ln -sf ../../lib/libptxgate.so.0 .bundle/bench/lib/libptxgate.so.0
  # The memsafe part's cases: PTX, launches and ptxgate's offline verdicts (the GPU machine needs no CLI for it).
  rm -rf .bundle/memsafe
  python3 tests/gpu/memsafe_agreement.py prepare "${BUILD_DIR:-build-gpu}/tools/ptxgate" tests/golden/memsafe .bundle/memsafe
  echo "bundle: $(du -sLm .bundle | cut -f1) MiB as followed, $(du -sm .bundle | cut -f1) MiB on disk"
}

# The before side of launch_ab and validate_ab: commit REV built in a scratch worktree (Release, the
# library and the launch benchmark only) and packed as .bundle/base/libptxgate.so.0.xz and
# .bundle/base/bin/ptxgate_gpu_bench; `device` unpacks it into a bundle of its own (base_bundle).
base() {
  set -e
  local rev=${1:?usage: scripts/gpu_all.sh base REV} tree
  tree=$(mktemp -d)
  git worktree add -q --detach "$tree" "$rev"
  trap 'git worktree remove --force "$tree"' RETURN
  (cd "$tree" && export CCACHE_BASEDIR="$tree" CCACHE_NOHASHDIR=1 &&
    cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPTXGATE_BUILD_BENCH=ON \
      -DCUDAToolkit_ROOT="${CUDA_HOME:-/usr/local/cuda}" >/dev/null &&
    cmake --build build -j "$(nproc)" --target ptxgate ptxgate_gpu_bench >/dev/null)
  rm -rf .bundle/base && mkdir -p .bundle/base/bin
  cp -L "$tree/build/libptxgate.so.0" .bundle/base/libptxgate.so.0
  cp "$tree/build/bench/ptxgate_gpu_bench" .bundle/base/bin/
  strip --strip-unneeded .bundle/base/libptxgate.so.0 .bundle/base/bin/ptxgate_gpu_bench
  xz -T0 -f .bundle/base/libptxgate.so.0
  echo "base: $rev in .bundle/base ($(du -sm .bundle/base | cut -f1) MiB)"
}

# The bundle's library xz-packed (device unpacks it), so that a bundle and a base fit one carry.
pack() {
  set -e
  [[ -f .bundle/lib/libptxgate.so.0 ]] && xz -T0 -f .bundle/lib/libptxgate.so.0
  echo "pack: $(du -sLm .bundle | cut -f1) MiB as followed, $(du -sm .bundle | cut -f1) MiB on disk"
}

# The base's benchmark bundle (launch_ab's before side): its library unpacked, the bundle's other libraries.
base_bundle() {
  [[ -f .bundle/base/libptxgate.so.0.xz && -x .bundle/base/bin/ptxgate_gpu_bench ]] || return 1
  [[ -f .bundle/base/libptxgate.so.0 ]] || xz -dk .bundle/base/libptxgate.so.0.xz || return 1
  mkdir -p .bundle/base/lib
  ln -sf ../libptxgate.so.0 .bundle/base/lib/libptxgate.so.0
  local f
  for f in .bundle/bench/lib/*; do
    [[ "$(basename "$f")" == libptxgate.so.0 ]] || ln -sf "$(realpath "$f")" .bundle/base/lib/
  done
}

device() {
  local final="${OUT:-$PWD/out}" work
  if [[ -f .bundle/lib/libptxgate.so.0.xz && ! -f .bundle/lib/libptxgate.so.0 ]]; then
    xz -dk .bundle/lib/libptxgate.so.0.xz || { echo "gpu_all: cannot unpack the bundle's library" >&2; return 1; }
  fi
  work="$(mktemp -d)"
  mkdir -p "$final" "$work/gpu" "$work/bench"
  local parts="${GPU_PARTS:-tests bench}"
  local failed=()
  # part NAME STATUS: records a part's exit status (124/137: it ran past its limit).
  part() {
    echo "$1 part: exit $2"
    ((${2} == 0)) || failed+=("$1 part (exit $2$( ((${2} == 124 || ${2} == 137)) && echo ', timed out'))")
  }
  if [[ " $parts " == *" tests "* ]]; then
    OUT="$work/gpu" timeout --kill-after=10 "${GPU_TESTS_LIMIT:-400}" scripts/gpu_run.sh device
    part gpu $?
    cp "$work/gpu/gpu_results.txt" "$final/" 2>/dev/null
  fi
  if [[ " $parts " == *" bench "* ]]; then
    OUT="$work/bench" timeout --kill-after=10 "${GPU_BENCH_LIMIT:-300}" bash bench/run_on_gpu.sh .bundle/bench
    part bench $?
    cp "$work/bench/bench_results.md" "$work/bench/bench_results.json" "$work/bench/"*.png "$final/" 2>/dev/null
  fi
  if [[ " $parts " == *" kernels "* ]]; then
    mkdir -p "$work/kernels"
    OUT="$work/kernels" BENCH_STEPS="${KERNELS_STEPS:-kernels workloads}" SASS_LINES=400 \
      timeout --kill-after=10 "${GPU_KERNELS_LIMIT:-330}" bash bench/run_on_gpu.sh .bundle/bench
    part kernels $?
    cp "$work/kernels/bench_results.md" "$final/kernels_results.md" 2>/dev/null
  fi
  if [[ " $parts " == *" multigpu "* ]]; then
    mkdir -p "$work/multigpu"
    OUT="$work/multigpu" timeout --kill-after=10 "${GPU_MULTIGPU_LIMIT:-540}" scripts/gpu_run.sh multigpu
    part multigpu $?
    cp "$work/multigpu/multigpu_results.txt" "$final/" 2>/dev/null
  fi
  if [[ " $parts " == *" programs "* ]]; then
    {
      echo "\$ ptxgate_programs_bench"
      LD_LIBRARY_PATH=".bundle/bench/lib" timeout --kill-after=5 "${GPU_PROGRAMS_LIMIT:-180}" .bundle/bench/bin/ptxgate_programs_bench
      echo "exit $?"
      echo "\$ python3 bench/graph_replay_peers.py"
      timeout --kill-after=5 180 python3 bench/graph_replay_peers.py
      echo "exit $?"
      echo "\$ ptxgate_jacobi"
      PTXGATE_CACHE_DIR="$work/jacobi-cache" PTXGATE_EXAMPLES_DIR="$PWD/examples" LD_LIBRARY_PATH=".bundle/bench/lib" timeout --kill-after=5 120 .bundle/bench/bin/ptxgate_jacobi
      echo "exit $?"
    } >"$final/programs.txt" 2>&1
    local ok
    ok=$(grep -c '^exit 0' "$final/programs.txt")
    echo "programs part: $ok of 3 steps exit 0"
    ((ok == 3)) || failed+=("programs part ($((3 - ok)) of 3 steps failed: programs.txt)")
  fi
  if [[ " $parts " == *" validate "* ]]; then
    PTXGATE_SOURCE_DIR="$PWD" PTXGATE_PROFILE_DIR="$PWD/profiles" LD_LIBRARY_PATH=".bundle/bench/lib" \
      timeout --kill-after=5 "${GPU_VALIDATE_LIMIT:-240}" .bundle/bench/bin/validate_bench >"$final/validate.txt" 2>&1
    part validate $?
  fi
  if [[ " $parts " == *" validate_ab "* ]]; then
    # Each round's output goes into the logs archive (the device tool brings back 8 files), the table here.
    OUT="$work" timeout --kill-after=5 "${GPU_VALIDATE_AB_LIMIT:-400}" bash bench/validate_ab.sh .bundle/base .bundle/bench \
      "${VALIDATE_AB_ROUNDS:-4}" >"$final/validate_ab.txt" 2>&1
    part validate_ab $?
    cp "$work/validate_ab.md" "$final/" 2>/dev/null
  fi
  if [[ " $parts " == *" python "* ]]; then
    PTXGATE_LIBRARY="$PWD/.bundle/lib/libptxgate.so.0" LD_LIBRARY_PATH="$PWD/.bundle/lib" PTXGATE_CACHE_DIR="$work/py-cache" \
      PTXGATE_PROFILE_DIR="$PWD/profiles" PTXGATE_EXAMPLES_DIR="$PWD/examples" \
      timeout --kill-after=5 "${GPU_PYTHON_LIMIT:-240}" python3 -m pytest -q -rs -p no:cacheprovider python/tests >"$final/python.txt" 2>&1
    local prc=$?
    echo "python part: exit $prc — $(tail -1 "$final/python.txt")"
    ((prc == 0)) || failed+=("python part (exit $prc: python.txt)")
  fi
  if [[ " $parts " == *" sanitize "* ]]; then
    local tool
    for tool in memcheck racecheck synccheck; do
      PTXGATE_UNDER_COMPUTE_SANITIZER=1 LD_LIBRARY_PATH="$PWD/.bundle/lib" PTXGATE_CACHE_DIR="$work/san-cache" \
        PTXGATE_EXAMPLES_DIR="$PWD/.bundle/examples" \
        PTXGATE_GPU_TEST_SELF="$PWD/.bundle/bin/ptxgate_gpu_tests" PTXGATE_PROFILE_DIR="$PWD/.bundle/profiles" \
        timeout --kill-after=5 "${GPU_SANITIZE_LIMIT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        .bundle/bin/ptxgate_gpu_tests --no-intro=true -tc='programs*' >"$work/sanitize_$tool.log" 2>&1
      local src=$?
      echo "sanitize $tool (programs tests): exit $src — $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^gpu cases:' "$work/sanitize_$tool.log" | sort | uniq -c | tr -s ' \n' ' ')"
      ((src == 0)) || failed+=("sanitize $tool (exit $src)")
    done
  fi
  if [[ " $parts " == *" memsafe "* ]]; then
    timeout --kill-after=5 "${GPU_MEMSAFE_LIMIT:-300}" python3 tests/gpu/memsafe_agreement.py device .bundle/memsafe "$final" \
      >"$work/memsafe.log" 2>&1
    local mrc=$?
    echo "memsafe part: exit $mrc — $(sed -n 3p "$final/memsafe_agreement.md" 2>/dev/null)"
    ((mrc == 0)) || failed+=("memsafe part (exit $mrc: memsafe_agreement.md)")
  fi
  if [[ " $parts " == *" launch_ab "* && -z "${GPU_BEFORE:-}" ]] && base_bundle; then GPU_BEFORE=.bundle/base; fi
  if [[ " $parts " == *" launch_ab "* && -n "${GPU_BEFORE:-}" ]]; then
    local before="$GPU_BEFORE"
    if [[ "$before" == *.tar.xz ]]; then
      mkdir -p "$work/before" && tar -xJf "$before" -C "$work/before" && before=$(find "$work/before" -mindepth 1 -maxdepth 1 -type d | head -1)
    fi
    OUT="$work" bash bench/launch_ab.sh "$before" .bundle/bench "${GPU_AB_ROUNDS:-3}"
    cp "$work/launch_ab.md" "$final/" 2>/dev/null
  fi
  # The device tool returns at most 8 files: logs travel as one archive.
  tar -czf "$final/logs.tar.gz" -C "$work" . 2>/dev/null
  ls -l "$final"
  cat "$final/gpu_results.txt" "$final/multigpu_results.txt" 2>/dev/null
  tail -40 "$final/bench_results.md" 2>/dev/null
  sed -n '/^## Workloads/,/^## All/p' "$final/kernels_results.md" 2>/dev/null
  sed -n '/^## Against targets/,/^## Workloads/p' "$final/kernels_results.md" 2>/dev/null
  cat "$final/launch_ab.md" 2>/dev/null
  tail -60 "$final/programs.txt" 2>/dev/null
  if ((${#failed[@]} > 0)); then
    echo "gpu_all: FAILED (${#failed[@]}):"
    printf '  %s\n' "${failed[@]}"
    grep -h '^FAILED: ' "$final/gpu_results.txt" "$final/multigpu_results.txt" 2>/dev/null | sed 's/^/  /'
    return 1
  fi
  echo "gpu_all: every part passed (parts: $parts)"
}

case "${1:-bundle}" in
  bundle) bundle ;;
  device) device ;;
  base) base "${2:-}" ;;
  pack) pack ;;
  *) echo "usage: scripts/gpu_all.sh bundle | device | base REV | pack" >&2; exit 2 ;;
esac
