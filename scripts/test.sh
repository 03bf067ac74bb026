#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite: unit, golden and install tests, the same suite
# under ASan+UBSan, the concurrency tests under TSan, and bounded libFuzzer runs. GPU tests skip
# with a reason when there is no driver. PTXGATE_QUICK=1 stops after the plain suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
# ctest lists skipped tests without their output: show why the GPU tests did not run.
ctest --test-dir build -L gpu -V 2>&1 | grep -E "SKIPPED:|Skipped|Passed" || true
if [[ "${PTXGATE_QUICK:-0}" == 1 ]]; then
  echo "test: PTXGATE_QUICK=1, skipping sanitizer and fuzz stages"
  exit 0
fi
scripts/sanitizers.sh
scripts/fuzz.sh
echo "test: all stages passed"
