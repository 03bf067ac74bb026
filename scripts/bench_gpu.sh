#!/usr/bin/env bash
# Builds the GPU benchmark here and bundles it into .bundle/ (binaries, libraries, nvcc cubins, emitted PTX),
# then prints the command to run on the GPU machine and the paths to carry there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build-bench}
BUNDLE=${BUNDLE:-.bundle}
CUDA=${CUDA_HOME:-/usr/local/cuda}

cmake -S . -B "$BUILD" -G Ninja >/dev/null
ninja -C "$BUILD" -j2 ptxgate_gpu_bench ptxgate_programs_bench ptxgate_jacobi validate_bench

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/cubins" "$BUNDLE/emit"
cp "$BUILD/bench/ptxgate_gpu_bench" "$BUILD/bench/ptxgate_programs_bench" "$BUILD/examples/jacobi/ptxgate_jacobi" \
  "$BUILD/bench/validate_bench" "$BUNDLE/bin/"
cp -L "$BUILD/libptxgate.so.0" "$BUNDLE/lib/libptxgate.so.0"
strip --strip-unneeded "$BUNDLE"/bin/* "$BUNDLE/lib/libptxgate.so.0"
# Libraries the GPU machine may lack (fmt, xxhash); Ubuntu 24.04 has newer glibc, libstdc++, zlib and zstd.
ldd "$BUNDLE/lib/libptxgate.so.0" "$BUNDLE"/bin/* | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  case $(basename "$lib") in
    libc.so*|libm.so*|libgcc_s.so*|libstdc++.so*|ld-linux*|libdl.so*|libpthread.so*|librt.so*|libz.so*|libzstd.so*|libptxgate.so*) ;;
    *) cp -L "$lib" "$BUNDLE/lib/" ;;
  esac
done

# The nvcc twins, for sm_90 (the H100/H200 architecture); a twin that uses sm_90a's wgmma names its
# architecture in a "// nvcc-arch: sm_90a" line.
for cu in bench/cuda/*.cu; do
  name=$(basename "$cu" .cu)
  arch=$(sed -n 's|^// nvcc-arch: *||p' "$cu")
  "$CUDA/bin/nvcc" -cubin -arch="${arch:-sm_90}" -O3 -Xptxas -v -o "$BUNDLE/cubins/$name.cubin" "$cu" 2>"$BUNDLE/cubins/$name.ptxas.txt"
done
# ptxgate's PTX, cubins and ptxas reports of the same kernels (for SASS comparison on the GPU machine).
"$BUNDLE/bin/ptxgate_gpu_bench" emit --examples examples --kernels bench/kernels "$BUNDLE/emit" >/dev/null

# Smoke test: everything that needs no GPU runs here.
"$BUNDLE/bin/ptxgate_gpu_bench" validation --examples examples --kernels bench/kernels --batches 3 >/dev/null
python3 -c "import ast, sys; [ast.parse(open(f).read()) for f in sys.argv[1:]]" bench/peers.py bench/report.py

size=$(du -sm "$BUNDLE" | cut -f1)
echo "bundle: $BUNDLE (${size} MiB; the tree sent to the GPU machine is limited to 64 MiB)"
ls -l "$BUNDLE/bin" "$BUNDLE/lib"
echo
echo "GPU machine command (repository root):  bash bench/run_on_gpu.sh .bundle"
echo "carry: [\".bundle\"]"
