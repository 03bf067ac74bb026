#!/usr/bin/env bash
# Host instructions ptxgate adds to a launch, on a CPU machine: runs ptxgate_launch_instructions
# over the test build's stand-in libcuda under callgrind, one probe kernel at a time, and prints
# instructions per launch of each path and the same minus the raw cuLaunchKernel loop (the
# stand-in driver's own cost); likewise a graph replay (100 launches) against a raw cuGraphLaunch.
# `cache` adds a cache simulation (L1D 32 KiB, 8-way, 64-byte lines) in which every launch and
# replay of the stand-in driver first touches 64 KiB of its own, as the real driver's microseconds
# of work do: the L1D misses ptxgate adds per launch are then the cache lines its path touches.
# The profiles stay in $OUT_DIR for callgrind_annotate. PROBE_DIR and PROBES pick other probes of the
# same names: PROBE_DIR=bench/kernels/no_proof PROBES="launch4 launch16" are the probes whose scalars
# the memory-safety proof does not use (the steady path then keys no scalar value).
#   BUILD_DIR=build N=20000 bench/launch_callgrind.sh [tracked|untracked] [cache]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
n="${N:-20000}"
mode="${1:-tracked}"
source bench/callgrind_setup.sh
callgrind_setup launch_callgrind PTXGATE_FAKE_LAUNCH_TOUCH_BYTES "${2:-}"
bin="$build/bench/ptxgate_launch_instructions"
fake="$build/tests/libptxgate_fake_cuda.so"
[[ -x "$bin" && -f "$fake" ]] || { echo "launch_callgrind: build $bin and $fake first (scripts/build.sh)" >&2; exit 1; }
export PTXGATE_CUDA_DRIVER="$(realpath "$fake")" PTXGATE_CACHE_DIR="$out/cache"
probe_dir="${PROBE_DIR:-bench/kernels}"
for probe in ${PROBES:-launch0 launch4 launch16}; do
  valgrind --tool=callgrind "${cache_options[@]}" --callgrind-out-file="$out/callgrind.$probe.out" --toggle-collect='loop_*' \
    "$bin" "$probe_dir" "$n" "$mode" "$probe" >"$out/run.$probe.log" 2>"$out/valgrind.$probe.log" ||
    { cat "$out/valgrind.$probe.log" >&2; exit 1; }
  callgrind_annotate --inclusive=yes "$out/callgrind.$probe.out" >"$out/annotate.$probe.txt"
  python3 bench/callgrind_loops.py "$out/annotate.$probe.txt" "$n" "$probe"
done
echo "launch_callgrind: profiles in $out/callgrind.PROBE.out (callgrind_annotate --inclusive=yes)"
