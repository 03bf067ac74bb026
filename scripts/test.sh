#!/usr/bin/env bash
# Sets up, builds, and runs the whole CPU test suite (GPU tests skip with a reason when no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
