#!/usr/bin/env bash
# Where a compile's instructions go, per phase, on a CPU machine: one text -> PTX compile of each kernel
# (every example and benchmark kernel, or those named; `generated_N` is the generated N-statement kernel)
# under callgrind, after a warm-up compile that callgrind does not count, and the inclusive instruction
# counts of the phase functions: parse + verify (ir::load_module), lowering (codegen::lower_module),
# libdevice linking, the optimisation pipeline, NVPTX code generation (emit_ptx_text). The profiles stay
# in $OUT_DIR for callgrind_annotate.
#   BUILD_DIR=build bench/compile_callgrind.sh [saxpy matmul generated_250 ...]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
out="${OUT_DIR:-$(mktemp -d)}"
mkdir -p "$out"
command -v valgrind >/dev/null || { echo "compile_callgrind: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
bin="$build/bench/ptxgate_gpu_bench"
[[ -x "$bin" ]] || { echo "compile_callgrind: build $bin first (scripts/build.sh)" >&2; exit 1; }
kernels=("$@")
if ((${#kernels[@]} == 0)); then
  for f in examples/*.pg bench/kernels/*.pg; do kernels+=("$(basename "$f" .pg)"); done
fi
printf '| %-14s | %13s | %12s | %12s | %12s | %12s | %12s |\n' kernel "instructions" "parse+verify" lower libdevice optimise "NVPTX codegen"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..16})" "$(printf -- '-%.0s' {1..15})" \
  "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" \
  "$(printf -- '-%.0s' {1..14})"
for k in "${kernels[@]}"; do
  args=(compile-callgrind --only "$k")
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.$k.out" --toggle-collect='*measured_compile*' \
    "$bin" "${args[@]}" >"$out/run.$k.log" 2>"$out/valgrind.$k.log" || { cat "$out/run.$k.log" "$out/valgrind.$k.log" >&2; exit 1; }
  callgrind_annotate --inclusive=yes --threshold=100 "$out/callgrind.$k.out" >"$out/annotate.$k.txt"
  python3 - "$out/annotate.$k.txt" "$k" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def count(pattern):
    best = 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+\S*?:(.*)", line)
        if m and re.search(pattern, m.group(2)):
            best = max(best, int(m.group(1).replace(",", "")))
    return best
total = count(r"measured_compile")
cols = [count(r"ptxgate::ir::load_module\("), count(r"ptxgate::codegen::lower_module\("),
        count(r"ptxgate::codegen::link_libdevice\("), count(r"ptxgate::codegen::optimize_module\("),
        count(r"ptxgate::codegen::emit_ptx_text")]
pct = lambda v: f"{v / total * 100:5.1f}%" if total else "-"
print(f"| {sys.argv[2]:<14} | {total:>13,} | " + " | ".join(f"{pct(v):>12}" for v in cols) + " |")
PY
done
echo "compile_callgrind: profiles in $out/callgrind.KERNEL.out (callgrind_annotate --inclusive=yes)"
