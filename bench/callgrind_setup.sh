# Shared set-up of the callgrind scripts (sourced by bench/launch_callgrind.sh and
# bench/nccl_callgrind.sh): `callgrind_setup NAME TOUCH_VARIABLE [cache]` sets `cache_options` (a
# cache simulation when the third argument is `cache`, with the stand-in library's TOUCH_VARIABLE
# set so that each of its calls first touches 64 KiB of its own) and `out` ($OUT_DIR or a new
# folder), and stops when valgrind is missing.
callgrind_setup() {
  cache_options=()
  if [[ "${3:-}" == cache ]]; then
    cache_options=(--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64)
    export "$2=65536"
  fi
  out="${OUT_DIR:-$(mktemp -d)}"
  mkdir -p "$out"
  command -v valgrind >/dev/null || { echo "$1: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
}
