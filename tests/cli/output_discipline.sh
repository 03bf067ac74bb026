#!/usr/bin/env bash
# Output discipline (issue 11 items 17, 18): a command's product alone on standard output,
# diagnostics on standard error in the format asked, `check --format json` one JSON document
# on standard output whatever happens, usage errors in the format asked, every write checked,
# `-o` written through a temporary file. Usage: output_discipline.sh PTXGATE_CLI SOURCE_DIR
set -u
cli="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
is_json() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }
cat >"$work/warn.pg" <<'PG'
kernel k(inout y: f32[], a: f32) {
  sqrt(a);
}
PG

# 1. emit --format json with a warning: stdout is the product (meta JSON), stderr the diagnostics as JSON.
"$cli" emit "$work/warn.pg" --emit meta --format json >"$work/out" 2>"$work/err" || fail "emit with a warning exited $?"
is_json "$work/out" || fail "emit --format json: stdout is not the meta JSON alone: $(cat "$work/out")"
is_json "$work/err" || fail "emit --format json: stderr is not JSON diagnostics: $(cat "$work/err")"
grep -q '"severity": "warning"' "$work/err" || fail "emit --format json: the warning is not on stderr"
"$cli" emit "$work/warn.pg" --format sarif >"$work/out" 2>"$work/err" || fail "emit --format sarif exited $?"
grep -q '^\.version' "$work/out" || fail "emit --format sarif: stdout does not start as PTX"
grep -q '"version": "2.1.0"' "$work/err" || fail "emit --format sarif: stderr is not SARIF"

# 2. A full disk: emit > /dev/full exits 1 with PG5003.
if [[ -w /dev/full ]]; then
  "$cli" emit "$src/examples/saxpy.pg" >/dev/full 2>"$work/err"
  rc=$?
  ((rc == 1)) || fail "emit > /dev/full exited $rc, not 1"
  grep -q 'PG5003' "$work/err" || fail "emit > /dev/full: no PG5003: $(cat "$work/err")"
fi

# 3. -o writes the same product atomically and leaves no temporary file; a failed write leaves the old file.
"$cli" emit "$src/examples/saxpy.pg" >"$work/stdout.ptx" || fail "emit to stdout exited $?"
mkdir "$work/o"
"$cli" emit "$src/examples/saxpy.pg" -o "$work/o/out.ptx" || fail "emit -o exited $?"
cmp -s "$work/stdout.ptx" "$work/o/out.ptx" || fail "emit -o wrote something else than stdout gets"
[[ "$(ls -A "$work/o")" == "out.ptx" ]] || fail "emit -o left other files: $(ls -A "$work/o")"
mkdir "$work/o/dir.ptx"
"$cli" emit "$src/examples/saxpy.pg" -o "$work/o/dir.ptx" 2>"$work/err" && fail "emit -o onto a directory succeeded"
grep -q 'PG5003' "$work/err" || fail "emit -o onto a directory: no PG5003"
[[ "$(ls -A "$work/o" | sort | tr '\n' ' ')" == "dir.ptx out.ptx " ]] || fail "a failed -o left files: $(ls -A "$work/o")"

# 4. check --format json: one JSON document on stdout for a verdict, an error before the verdict and a usage error.
"$cli" check "$src/examples/saxpy.pg" --kernel saxpy --grid 100 --format json >"$work/out" 2>"$work/err" \
  || fail "check --format json of a legal launch exited $?"
is_json "$work/out" && grep -q '"launchable": true' "$work/out" || fail "check --format json: no verdict document"
"$cli" check "$src/examples/saxpy.pg" --kernel saxpy --device-profile "$work/none.json" --format json >"$work/out" 2>"$work/err"
((rc = $?, rc == 1)) || fail "check with a missing profile exited $rc"
is_json "$work/out" && grep -q '"diagnostics"' "$work/out" || fail "check --format json with a missing profile: $(cat "$work/out")"
"$cli" check "$src/examples/saxpy.pg" --kernel saxpy --grid abc --format json >"$work/out" 2>"$work/err"
((rc = $?, rc == 2)) || fail "check --grid abc exited $rc"
is_json "$work/out" && grep -q '"usage_error"' "$work/out" || fail "check --format json --grid abc: $(cat "$work/out")"
"$cli" check "$src/examples/saxpy.pg" --kernel saxpy --arg y=buffer:8 --arg x=buffer:8 --arg a=hello --arg n=2 --format json >"$work/out" 2>"$work/err"
is_json "$work/out" && grep -q 'PG5002' "$work/out" || fail "check --format json with a bad --arg: $(cat "$work/out")"

# 5. A usage error the parser finds honours --format json too: check, whose product is the verdict,
#    still prints its one document on standard output; emit (no document of diagnostics) the record
#    on standard error.
"$cli" check "$src/examples/saxpy.pg" --kernel saxpy --no-such-flag --format json >"$work/out" 2>"$work/err"
((rc = $?, rc == 2)) || fail "an unknown flag exited $rc"
is_json "$work/out" && grep -q 'PG5004' "$work/out" && grep -q '"usage_error"' "$work/out" ||
  fail "check's usage error under --format json is not its document on stdout: $(cat "$work/out")"
"$cli" emit "$src/examples/saxpy.pg" --no-such-flag --format json >"$work/out" 2>"$work/err"
((rc = $?, rc == 2)) || fail "an unknown flag of emit exited $rc"
[[ ! -s "$work/out" ]] && is_json "$work/err" && grep -q 'PG5004' "$work/err" ||
  fail "emit's usage error under --format json is not JSON on stderr: $(cat "$work/err")"

# 6. check compiles through the module cache: `cache list` afterwards shows the module (needs ptxas).
if PTXGATE_CACHE_DIR="$work/cache" "$cli" check "$src/examples/saxpy.pg" --kernel saxpy --grid 100 >"$work/out" 2>"$work/err"; then
  "$cli" cache list --cache-dir "$work/cache" >"$work/out" 2>"$work/err" || fail "cache list exited $?"
  grep -q 'saxpy' "$work/out" || fail "cache list after check does not show the module: $(cat "$work/out")"
elif ! grep -q 'PG2005' "$work/err"; then
  fail "check of saxpy failed: $(cat "$work/err")"
fi

((failures == 0)) && echo "output discipline: all checks passed"
exit $((failures > 0))
