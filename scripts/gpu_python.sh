#!/usr/bin/env bash
# The Python package on a GPU machine in one call: the wheel installed with pip (the library
# bundled), the Python tests (GPU ones included), the examples (MLP training with bf16 weights
# against PyTorch autograd, data-parallel linear regression with NCCL) and bench/python_bench.py.
#   here:         scripts/gpu_python.sh bundle DIR   (a wheel with the stripped library, the tests,
#                                                     examples and benchmark files, into DIR)
#   GPU machine:  cd DIR && scripts/gpu_python.sh device   (results into $OUT)
# PARTS="install tests examples bench" picks parts; *_LIMIT seconds bound each; BENCH_ARGS go to
# bench/python_bench.py (e.g. "--rounds 7 --first-reps 2" for a short run).
set -uo pipefail

bundle() {
  set -e
  local dir="$1" root
  root="$(cd "$(dirname "$0")/.." && pwd)"
  [[ -e "$root/build/libptxgate.so" ]] || (cd "$root" && scripts/build.sh)
  rm -rf "$dir"
  mkdir -p "$dir/scripts" "$dir/python" "$dir/examples/python" "$dir/bench/kernels" "$dir/bench/cuda" "$dir/lib" \
    "$dir/profiles" "$dir/tests/golden/ptx" "$dir/tests/unit/ptx"
  cp -L "$root/build/libptxgate.so" "$dir/lib/libptxgate.so"
  strip --strip-unneeded "$dir/lib/libptxgate.so"
  (cd "$root/python" && PTXGATE_LIBRARY="$dir/lib/libptxgate.so" python3 -c \
    "import sys; sys.path.insert(0, '_build'); import ptxgate_build; print(ptxgate_build.build_wheel(sys.argv[1]))" "$dir")
  rm -rf "$dir/lib"
  cp -r "$root/python/tests" "$dir/python/"
  cp "$root/examples/"*.pg "$dir/examples/"
  cp "$root/examples/python/"* "$dir/examples/python/"
  cp "$root/bench/python_bench.py" "$root/bench/peers.py" "$root/bench/graph_replay_peers.py" "$dir/bench/"
  cp "$root/bench/kernels/launch"*.pg "$dir/bench/kernels/"
  cp "$root/bench/cuda/launch.cu" "$dir/bench/cuda/"
  cp "$root/scripts/gpu_python.sh" "$dir/scripts/"
  cp "$root/profiles/"*.json "$dir/profiles/"
  cp "$root/tests/golden/ptx/saxpy_sm80.cubin" "$dir/tests/golden/ptx/"
  cp "$root/tests/unit/ptx/"*.ptx "$dir/tests/unit/ptx/"
  find "$dir" -name __pycache__ -prune -exec rm -rf {} +
  echo "bundle: $dir, $(du -sm "$dir" | cut -f1) MiB"
}

device() {
  local out="${OUT:-$PWD/out}" parts="${PARTS:-install tests examples bench}"
  mkdir -p "$out"
  export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PTXGATE_PROFILE_DIR="$PWD/profiles"
  local site=/tmp/ptxgate-site
  # The one-command install: the wheel, with no network and no environment variables after it.
  rm -rf "$site"
  local how="pip install --target $site ptxgate-*.whl"
  if ! python3 -m pip install -q --no-index --no-deps --target "$site" ./ptxgate-*.whl 2>&1 | tail -3; then
    # An interpreter without pip (a uv virtual environment): a wheel is a zip file.
    how="python3 -m zipfile -e ptxgate-*.whl $site (no pip in this python3)"
    python3 -m zipfile -e ./ptxgate-*.whl "$site"
  fi
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
  if [[ " $parts " == *" install "* ]]; then
    {
      echo "\$ $how; python3 -c 'import ptxgate ...'"
      (cd /tmp && python3 -c 'import ptxgate, json; print(ptxgate.__file__); print(ptxgate.library_path()); d = ptxgate.devices(); print(json.dumps({"devices": [x["profile"]["name"] for x in d["devices"]], "peer_access": d["peer_access"]}))')
      echo "exit $?"
      python3 -m pip show torch cupy-cuda13x triton cuda-core cuda-python numpy 2>/dev/null | grep -E "^(Name|Version)"
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    } >"$out/install.txt" 2>&1
    echo "install part: $(grep -c '^exit 0' "$out/install.txt") of 1 steps exit 0"
  fi
  if [[ " $parts " == *" tests "* ]]; then
    PTXGATE_CACHE_DIR="$(mktemp -d)" timeout --kill-after=5 "${TESTS_LIMIT:-150}" \
      python3 -m pytest -v -rs --tb=short -p no:cacheprovider python/tests >"$out/python_tests.txt" 2>&1
    echo "tests part: exit $? — $(tail -1 "$out/python_tests.txt")"
  fi
  if [[ " $parts " == *" examples "* ]]; then
    {
      echo "\$ python3 examples/python/mlp_bf16.py"
      timeout --kill-after=5 "${EXAMPLE_LIMIT:-90}" python3 examples/python/mlp_bf16.py
      echo "exit $?"
      echo "\$ python3 examples/python/data_parallel.py --mode process"
      timeout --kill-after=5 "${EXAMPLE_LIMIT:-90}" python3 examples/python/data_parallel.py --mode process
      echo "exit $?"
      echo "\$ python3 examples/python/data_parallel.py --mode ranks"
      timeout --kill-after=5 "${EXAMPLE_LIMIT:-90}" python3 examples/python/data_parallel.py --mode ranks
      echo "exit $?"
    } >"$out/examples.txt" 2>&1
    echo "examples part: $(grep -c '^exit 0' "$out/examples.txt") of 3 steps exit 0"
  fi
  if [[ " $parts " == *" bench "* ]]; then
    timeout --kill-after=5 "${BENCH_LIMIT:-200}" python3 bench/python_bench.py --out "$out" ${BENCH_ARGS:-} >"$out/bench_log.txt" 2>&1
    echo "bench part: exit $?"
  fi
}

case "${1:-}" in
  bundle) bundle "${2:?bundle DIR}" ;;
  device) device ;;
  *) echo "usage: $0 bundle DIR | device" >&2; exit 2 ;;
esac
