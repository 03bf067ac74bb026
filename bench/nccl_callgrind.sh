#!/usr/bin/env bash
# Host instructions ptxgate adds to issuing an all-reduce, on a CPU machine: runs
# ptxgate_nccl_instructions over the test build's stand-in libcuda and libnccl under callgrind and
# prints instructions per iteration of each loop and the same minus its raw loop (the stand-ins'
# own cost): one group over every rank (as ptxgate_nccl_bench's timed rounds) and one rank alone.
# `cache` adds a cache simulation (L1D 32 KiB, 8-way, 64-byte lines) in which every ncclGroupEnd
# and every collective outside a group of the stand-in libnccl first touches 64 KiB of its own, as
# NCCL's microseconds of work do: the L1D misses ptxgate adds are then the cache lines its path
# touches. MODE=fresh leaves the buffers unwritten by the host (as the benchmark's uploads are not):
# every earlier use is then on the collective's own stream. The profiles stay in $OUT_DIR for
# callgrind_annotate.
#   BUILD_DIR=build N=20000 RANKS=2 [MODE=fresh] bench/nccl_callgrind.sh [cache]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
n="${N:-20000}"
ranks="${RANKS:-2}"
source bench/callgrind_setup.sh
callgrind_setup nccl_callgrind PTXGATE_FAKE_NCCL_TOUCH_BYTES "${1:-}"
bin="$build/bench/ptxgate_nccl_instructions"
cuda="$build/tests/libptxgate_fake_cuda.so"
nccl="$build/tests/libptxgate_fake_nccl.so"
[[ -x "$bin" && -f "$cuda" && -f "$nccl" ]] || { echo "nccl_callgrind: build $bin, $cuda and $nccl first" >&2; exit 1; }
export PTXGATE_CUDA_DRIVER="$(realpath "$cuda")" PTXGATE_NCCL_LIBRARY="$(realpath "$nccl")" PTXGATE_FAKE_DEVICES="$ranks"
export PTXGATE_NCCL_CHECKED=0 PTXGATE_NCCL_TIMEOUT_MS=0
valgrind --tool=callgrind "${cache_options[@]}" --callgrind-out-file="$out/callgrind.nccl.out" --toggle-collect='loop_*' \
  "$bin" "$n" "$ranks" "${MODE:-uploads}" >"$out/run.nccl.log" 2>"$out/valgrind.nccl.log" || { cat "$out/valgrind.nccl.log" >&2; exit 1; }
callgrind_annotate --inclusive=yes "$out/callgrind.nccl.out" >"$out/annotate.nccl.txt"
python3 bench/callgrind_loops.py "$out/annotate.nccl.txt" "$n" "${ranks}ranks"
echo "nccl_callgrind: profile in $out/callgrind.nccl.out (callgrind_annotate --inclusive=yes)"
