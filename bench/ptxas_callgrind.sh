#!/usr/bin/env bash
# Issue 29's target 5 counted instead of timed: the instructions ptxas executes (callgrind, every thread) on
# ptxgate's PTX and on nvcc's PTX of the same kernel's CUDA C++ twin, with the same ptxas and options (-v, the
# twin's -arch, ptxas's default -O3); load-independent, for the shared development machine, where the child
# CPU times of `compile-compare` move by 10% from run to run. The PTX is what compile-compare times
# (--ptx-dir); the kernels with a twin, or those named.
#   BUILD_DIR=build bench/ptxas_callgrind.sh [sgemm bfs ...]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/callgrind_setup.sh
callgrind_setup ptxas_callgrind unused
bin="${BUILD_DIR:-build}/bench/ptxgate_gpu_bench"
[[ -x "$bin" ]] || { echo "ptxas_callgrind: build $bin first (scripts/build.sh)" >&2; exit 1; }
ptxas="${PTXGATE_PTXAS:-${CUDA_HOME:-/usr/local/cuda}/bin/ptxas}"
kernels=("$@")
if ((${#kernels[@]} == 0)); then
  for f in bench/cuda/*.cu; do
    k=$(basename "$f" .cu)
    [[ -f examples/$k.pg || -f bench/kernels/$k.pg ]] && kernels+=("$k")
  done
fi
# Both PTX texts of every kernel, as compile-compare writes them (one round, nothing timed that is kept).
for k in "${kernels[@]}"; do
  "$bin" compile-compare --only "$k" --ptxas-only --repetitions 1 --ptx-dir "$out/ptx" >"$out/compare.$k.log" 2>&1 ||
    { cat "$out/compare.$k.log" >&2; exit 1; }
done
count() {  # count KERNEL SIDE ARCH: ptxas's instructions on $out/ptx/KERNEL.SIDE.ptx
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$ptxas" -v -arch="$3" "$out/ptx/$1.$2.ptx" \
    -o "$out/$1.$2.cubin" >/dev/null 2>"$out/valgrind.$1.$2.log" || { cat "$out/valgrind.$1.$2.log" >&2; exit 1; }
  sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$out/valgrind.$1.$2.log"
}
printf '| %-15s | %15s | %15s | %6s | %9s | %10s |\n' kernel "ptxas on pg" "ptxas on twin" ratio "lines pg" "lines twin"
printf '|%s|%s|%s|%s|%s|%s|\n' "-----------------" "-----------------" "-----------------" "--------" "-----------" "------------"
for k in "${kernels[@]}"; do
  arch=$(sed -n 's|^\.target *\([a-z0-9_]*\).*|\1|p' "$out/ptx/$k.twin.ptx" | head -1)
  pg=$(count "$k" ptxgate "$arch")
  twin=$(count "$k" twin "$arch")
  lines() { grep -cvE '^\s*(//.*)?$' "$1"; }
  printf '| %-15s | %15s | %15s | %6.3f | %9s | %10s |\n' "$k" "$pg" "$twin" \
    "$(echo "$pg / $twin" | bc -l)" "$(lines "$out/ptx/$k.ptxgate.ptx")" "$(lines "$out/ptx/$k.twin.ptx")"
done
echo "ptxas_callgrind: PTX and cubins in $out"
