#!/usr/bin/env bash
# `ptxgate cache stats|list|clear` on hostile cache directories, through the CLI: a FIFO in
# place of an entry file never blocks (every command runs under a 20 s timeout), a symbolic
# link as `v1` or as an entry is never followed out of the cache root, and the read-only
# commands create nothing. Usage: cache_hostile_directory.sh PTXGATE_CLI
set -u
cli="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# Runs the CLI with a deadline; 124 (timeout) is a hang.
run() {
  timeout 20 "$cli" "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if ((rc == 124)); then fail "hung: ptxgate $*"; fi
  return "$rc"
}
key_a=0123456789abcdef0123456789abcdef
key_b=fedcba9876543210fedcba9876543210

# 1. A FIFO as manifest.json and as module.ptx: stats, list, clear return promptly.
c="$work/fifo"
mkdir -p "$c/v1/$key_a" "$c/v1/$key_b"
mkfifo "$c/v1/$key_a/manifest.json" "$c/v1/$key_b/module.ptx"
echo '{}' >"$c/v1/$key_b/manifest.json"
run cache stats --cache-dir "$c" || fail "cache stats on a FIFO entry exited $?"
grep -q '^entries: *2$' "$work/out" || fail "cache stats does not count the two entries: $(cat "$work/out")"
run cache list --cache-dir "$c" || fail "cache list on a FIFO entry exited $?"
grep -q "$key_a  (corrupt)" "$work/out" || fail "cache list does not show the FIFO entry as corrupt: $(cat "$work/out")"
run cache clear --cache-dir "$c" || fail "cache clear on a FIFO entry exited $?"
grep -q '^removed 2 entries' "$work/out" || fail "cache clear: $(cat "$work/out")"
[[ -z "$(ls -A "$c/v1")" ]] || fail "cache clear left: $(ls -A "$c/v1")"

# 2. `ln -s /elsewhere C/v1; ptxgate cache clear --cache-dir C` leaves /elsewhere untouched.
c="$work/linked-v1"
elsewhere="$work/elsewhere"
mkdir -p "$c" "$elsewhere/$key_a" "$elsewhere/.trash-old"
echo keep >"$elsewhere/$key_a/manifest.json"
touch -d '2000-01-01' "$elsewhere/.trash-old"
ln -s "$elsewhere" "$c/v1"
run cache clear --cache-dir "$c"
grep -q 'PG4104' "$work/err" || fail "cache clear through a linked v1 gave no PG4104: $(cat "$work/err")"
[[ "$(cat "$elsewhere/$key_a/manifest.json" 2>/dev/null)" == keep ]] || fail "cache clear removed $elsewhere/$key_a"
[[ -d "$elsewhere/.trash-old" ]] || fail "cache clear removed $elsewhere/.trash-old"
run cache list --cache-dir "$c" --json
[[ "$(tr -d ' \n' <"$work/out")" == *'"entries":[]'* ]] || fail "cache list followed a linked v1: $(cat "$work/out")"

# 3. A link at an entry's name: clear removes the link, not its target; list shows no other entry.
c="$work/linked-entry"
mkdir -p "$c/v1" "$work/target"
echo keep >"$work/target/manifest.json"
ln -s "$work/target" "$c/v1/$key_a"
run cache list --cache-dir "$c" || fail "cache list exited $?"
grep -q "$key_a  (corrupt)" "$work/out" || fail "cache list followed the entry link: $(cat "$work/out")"
run cache clear --cache-dir "$c" || fail "cache clear exited $?"
[[ ! -e "$c/v1/$key_a" && ! -L "$c/v1/$key_a" ]] || fail "cache clear left the entry link"
[[ "$(cat "$work/target/manifest.json" 2>/dev/null)" == keep ]] || fail "cache clear removed the link's target"

# 4. Read-only commands create nothing.
for sub in stats list clear; do
  run cache "$sub" --cache-dir "$work/missing/x" || fail "cache $sub on a missing directory exited $?"
  [[ ! -e "$work/missing" ]] && continue
  fail "cache $sub created $work/missing"
  rm -rf "$work/missing"
done

if ((failures)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "cache_hostile_directory: all checks passed"
