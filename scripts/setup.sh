#!/usr/bin/env bash
# Installs the Debian packages ptxgate needs (only those missing) and checks the CUDA Toolkit.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ pkg-config ccache help2man
  llvm-19-dev zlib1g-dev libzstd-dev
  libboost-dev doctest-dev libcli11-dev nlohmann-json3-dev libfmt-dev libxxhash-dev
  python3-pytest python3-numpy python3-dev
  clang-19 libclang-rt-19-dev lld-19
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

CUDA_ROOT="${CUDA_HOME:-/usr/local/cuda}"
for f in bin/ptxas include/cuda.h include/cuda_occupancy.h nvvm/libdevice/libdevice.10.bc; do
  if [[ ! -e "$CUDA_ROOT/$f" ]]; then
    echo "setup: the CUDA Toolkit is incomplete: $CUDA_ROOT/$f is missing (set CUDA_HOME)" >&2
    exit 1
  fi
done
echo "setup: all dependencies present"
