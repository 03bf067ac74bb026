#!/usr/bin/env bash
# The GPU tests' supervisor over the stand-in driver (kernels do not run there, so only the supervisor's own
# self-test cases are selected): every case runs in its own process, a case that kills its process fails
# alone and the case after it still passes, a case that does not apply is SKIPPED with its reason (never
# counted as passed), the summary names them, and the exit status is 1; PTXGATE_GPU_FAIL_CASE fails a case
# that passes. Usage: supervisor_selftest.sh PTXGATE_GPU_TESTS (with PTXGATE_CUDA_DRIVER set to the stand-in).
set -u
tests="$1"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
expect() { grep -qF -- "$1" "$out" || fail "missing line '$1' in: $(cat "$out")"; }

"$tests" --no-skip=true --test-case='supervisor self-test*' >"$out" 2>&1
rc=$?
cat "$out"
((rc == 1)) || fail "exit status $rc with a failing case, not 1"
expect "gpu cases: 4: 2 passed, 1 failed, 1 skipped (each in its own process)"
expect "FAILED: supervisor self-test: a case that kills its process, as a fault would: killed by signal 6"
expect "SKIPPED: supervisor self-test: a case that does not apply: this machine lacks what the case needs (on purpose)"
expect "PASSED  supervisor self-test: a case after that one, with its own result"
expect "PASSED  supervisor self-test: a case that passes"

PTXGATE_GPU_FAIL_CASE='supervisor self-test: a case that passes' \
  "$tests" --no-skip=true --test-case='supervisor self-test: a case that passes,supervisor self-test: a case after*' \
  >"$out" 2>&1
rc=$?
cat "$out"
((rc == 1)) || fail "exit status $rc with PTXGATE_GPU_FAIL_CASE, not 1"
expect "gpu cases: 2: 1 passed, 1 failed, 0 skipped"
expect "FAILED: supervisor self-test: a case that passes: exit status 1"

"$tests" --no-skip=true --test-case='supervisor self-test: a case that passes,supervisor self-test: a case that does*' \
  >"$out" 2>&1
rc=$?
((rc == 0)) || fail "exit status $rc with cases that pass or do not apply, not 0: $(cat "$out")"
expect "gpu cases: 2: 1 passed, 0 failed, 1 skipped"

((failures == 0)) && echo "supervisor self-test: ok"
exit $((failures > 0))
