#!/usr/bin/env bash
# Before/after of the memory verdict of a launch new in every input, on one host in one call: runs the
# after bundle's validate_bench for each named kernel with the before library and with the after
# library (LD_LIBRARY_PATH; check_launch's interface is the same on both sides), alternating the order
# every round so that drift hits both alike, plus an A/A control (the after library against itself;
# bench/ab_rounds.sh's rounds).
# Prints per kernel the median over rounds of each side's "memory" ns and the ratios (bench/compare_validate.py).
# Without KERNEL names, each run is one whole validate_bench (every row, in one warm process: a process per
# row measured the short rows about 1.5x slower and noisier, A/A 0.92-1.03).
#   bash bench/validate_ab.sh BEFORE_LIB_DIR AFTER_BUNDLE [ROUNDS=4] [KERNEL...]
# BEFORE_LIB_DIR holds the before libptxgate.so.0 (libptxgate.so.0.xz is unpacked there first);
# AFTER_BUNDLE is scripts/gpu_all.sh's .bundle/bench. Results under $OUT/validate_ab.
# `scripts/gpu_all.sh base REV` builds and packs the before library there; `scripts/gpu_all.sh pack`
# packs the bundle's own, so that the bundle, the base and the tree fit the device tool's 64 MiB carry.
set -u
BEFORE=$(cd "$1" && pwd); AFTER=$(cd "$2" && pwd); ROUNDS=${3:-4}
shift $(($# < 3 ? $# : 3))
kernels=("$@")
((${#kernels[@]})) || kernels=("")
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/validate_ab"
if [[ -f "$BEFORE/libptxgate.so.0.xz" && ! -f "$BEFORE/libptxgate.so.0" ]]; then
  xz -dk "$BEFORE/libptxgate.so.0.xz" || exit 1
fi
# The before side needs the after bundle's other libraries (fmt, xxhash) too.
for f in "$AFTER"/lib/*; do [[ "$(basename "$f")" == libptxgate.so.0 || -e "$BEFORE/$(basename "$f")" ]] || ln -s "$f" "$BEFORE/"; done
# Every run on one core (VALIDATE_AB_CPU, default 2) where taskset exists: runs that the scheduler
# placed on different cores differed by up to 2x on a shared host.
pin=()
command -v taskset >/dev/null && pin=(taskset -c "${VALIDATE_AB_CPU:-2}")
source bench/ab_rounds.sh
run() {  # run SIDE ROUND LIBDIR
  local k rc=0
  for k in "${kernels[@]}"; do
    PTXGATE_SOURCE_DIR="$PWD" PTXGATE_PROFILE_DIR="$PWD/profiles" LD_LIBRARY_PATH="$3" \
      timeout --kill-after=5 120 "${pin[@]}" "$AFTER/bin/validate_bench" "$k" >>"$OUT/validate_ab/$1_$2.txt" 2>&1 || rc=1
  done
  return $rc
}
# The A/A control (`again`) runs the after library a second time each round.
ab_rounds "$ROUNDS" "$BEFORE" "$AFTER/lib" validate_ab run again
status=$?
python3 bench/compare_validate.py "$OUT/validate_ab" | tee "$OUT/validate_ab.md"
exit $status
