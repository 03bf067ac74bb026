#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite: unit, golden and install tests, the same suite
# under ASan+UBSan, the concurrency tests under TSan, and bounded libFuzzer runs. GPU tests skip
# with a reason when there is no driver. PTXGATE_QUICK=1 stops after the plain suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
# ctest lists skipped tests without their output: show why each did not run (its "SKIPPED: reason" line,
# from the log of the run above; nothing is run again, and a failure above has already stopped the script).
skipped=$(sed -n "/^SKIPPED/p" build/Testing/Temporary/LastTest.log | sort -u)
echo "${skipped:-test: no test was skipped}"
if [[ "${PTXGATE_QUICK:-0}" == 1 ]]; then
  echo "test: PTXGATE_QUICK=1, skipping sanitizer and fuzz stages"
  exit 0
fi
scripts/sanitizers.sh
scripts/fuzz.sh
echo "test: all stages passed"
