#!/usr/bin/env bash
# Output paths and interrupted tools (issue 25: item 4, D1, D2, D11): -o writes through a device
# or FIFO and follows a link, never replacing it; a directory, a FIFO without a reader and the
# input itself are PG5003; ptxas has a time limit (PG2011); a check interrupted by a signal
# leaves no temporary directory and no ptxas behind. The only real device nodes touched are
# /dev/null and /dev/full, written through. Usage: output_paths.sh PTXGATE_CLI SOURCE_DIR
set -u
cli="$1"
src="$2"
work="$(mktemp -d)"
trap 'exec 3>&- 2>/dev/null; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
saxpy="$src/examples/saxpy.pg"
node() { stat -c '%F %i %t:%T' "$1"; }  # kind, inode, device numbers
"$cli" emit "$saxpy" >"$work/expected.ptx" || fail "emit to stdout exited $?"
size=$(stat -c %s "$work/expected.ptx")

# 1. A FIFO: written through while a reader holds it open, refused at once without one.
mkfifo "$work/fifo"
exec 3<>"$work/fifo"  # a reader (read-write: the open does not wait for a writer)
timeout 60 "$cli" emit "$saxpy" -o "$work/fifo" || fail "emit -o FIFO with a reader exited $?"
timeout 10 head -c "$size" <&3 >"$work/from-fifo"
exec 3>&-
cmp -s "$work/expected.ptx" "$work/from-fifo" || fail "the FIFO's reader did not get the PTX"
[[ -p "$work/fifo" ]] || fail "emit -o replaced the FIFO"
timeout 30 "$cli" emit "$saxpy" -o "$work/fifo" 2>"$work/err"
rc=$?
((rc == 1)) || fail "emit -o FIFO without a reader exited $rc (124: it hung)"
grep -q 'PG5003.*no process is reading' "$work/err" || fail "emit -o FIFO without a reader: $(cat "$work/err")"
[[ -p "$work/fifo" ]] || fail "a failed emit -o replaced the FIFO"

# 2. Links are followed: the target is replaced, the link stays; a dangling link creates its target.
mkdir "$work/sub"
echo old >"$work/sub/target.ptx"
ln -s sub/target.ptx "$work/link.ptx"
"$cli" emit "$saxpy" -o "$work/link.ptx" || fail "emit -o link exited $?"
[[ -L "$work/link.ptx" ]] || fail "emit -o replaced the symbolic link"
cmp -s "$work/expected.ptx" "$work/sub/target.ptx" || fail "emit -o link did not write the link's target"
ln -s sub/created.ptx "$work/dangling.ptx"
"$cli" emit "$saxpy" -o "$work/dangling.ptx" || fail "emit -o dangling link exited $?"
[[ -L "$work/dangling.ptx" ]] || fail "emit -o replaced the dangling link"
cmp -s "$work/expected.ptx" "$work/sub/created.ptx" || fail "emit -o dangling link did not create its target"
[[ -z "$(ls -A "$work/sub" | grep -v -e '^target.ptx$' -e '^created.ptx$')" ]] || fail "temporaries left: $(ls -A "$work/sub")"

# 3. A directory, and a link to one: PG5003, left alone.
mkdir "$work/dir.ptx"
"$cli" emit "$saxpy" -o "$work/dir.ptx" 2>"$work/err" && fail "emit -o directory succeeded"
grep -q 'PG5003.*is a directory' "$work/err" || fail "emit -o directory: $(cat "$work/err")"
[[ -d "$work/dir.ptx" && -z "$(ls -A "$work/dir.ptx")" ]] || fail "emit -o directory changed it"

# 4. /dev/null and /dev/full are written through (never replaced); /dev/full's error is PG5003.
for dev in /dev/null /dev/full; do
  if [[ ! -c "$dev" || ! -w "$dev" ]]; then
    echo "SKIPPED: $dev is not a writable character device here"
    continue
  fi
  before=$(node "$dev")
  "$cli" emit "$saxpy" -o "$dev" 2>"$work/err"
  rc=$?
  if [[ "$dev" == /dev/null ]]; then
    ((rc == 0)) || fail "emit -o /dev/null exited $rc: $(cat "$work/err")"
  else
    ((rc == 1)) || fail "emit -o /dev/full exited $rc, not 1"
    grep -q 'PG5003.*No space left on device' "$work/err" || fail "emit -o /dev/full: $(cat "$work/err")"
  fi
  [[ "$(node "$dev")" == "$before" ]] || fail "emit -o $dev replaced it: $before -> $(node "$dev")"
done

# 5. A character device of its own (a copy of /dev/null), where mknod is permitted.
if mknod "$work/null-copy" c 1 3 2>"$work/err"; then
  before=$(node "$work/null-copy")
  "$cli" emit "$saxpy" -o "$work/null-copy" 2>"$work/err" || grep -q 'PG5003.*Permission denied' "$work/err" \
    || fail "emit -o a device node: $(cat "$work/err")"
  [[ "$(node "$work/null-copy")" == "$before" ]] || fail "emit -o replaced the device node: $(node "$work/null-copy")"
else
  echo "SKIPPED: mknod is not permitted here: $(cat "$work/err")"
fi

# 6. The output is the input (D2): refused before compiling, however the path is spelled, for any product.
cp "$saxpy" "$work/same.pg"
ln -s same.pg "$work/same-link.pg"
for out in "$work/same.pg" "$work/sub/../same.pg" "$work/same-link.pg"; do
  for kind in ptx cubin; do
    "$cli" emit "$work/same.pg" --emit "$kind" -o "$out" 2>"$work/err" && fail "emit same.pg -o $out --emit $kind succeeded"
    grep -q 'PG5003.*is the input file' "$work/err" || fail "emit same.pg -o $out --emit $kind: $(cat "$work/err")"
  done
done
cmp -s "$saxpy" "$work/same.pg" || fail "emit -o onto the input changed it"
"$cli" run "$work/same.pg" --kernel saxpy --arg y=fill:4:1 --arg x=fill:4:2 --arg a=2 --arg n=4 \
  --out y="$work/same.pg" 2>"$work/err" && fail "run --out onto the program succeeded"
grep -q 'PG5003.*is the input file' "$work/err" || fail "run --out onto the program: $(cat "$work/err")"
cmp -s "$saxpy" "$work/same.pg" || fail "run --out onto the program changed it"

# 7. A cache directory that is a FIFO or a device is not usable: a warning, the node left alone.
PTXGATE_CACHE_DIR="$work/fifo" timeout 60 "$cli" emit "$saxpy" >"$work/out" 2>"$work/err" \
  || fail "emit with a FIFO as the cache directory exited $?"
cmp -s "$work/expected.ptx" "$work/out" || fail "emit with a FIFO as the cache directory printed something else"
[[ -p "$work/fifo" ]] || fail "a FIFO as the cache directory was replaced"

# 8. ptxas has a time limit: a stand-in that hangs is stopped (its process group too) with PG2011.
mkdir "$work/tmp"
cat >"$work/slow-ptxas" <<EOF
#!/bin/sh
if [ "\$1" = "--version" ]; then echo "Cuda compilation tools, release 13.0, V13.0.48"; exit 0; fi
echo \$\$ >"$work/ptxas-pid"
sleep 120
EOF
chmod +x "$work/slow-ptxas"
export PTXGATE_PTXAS="$work/slow-ptxas"
group_gone() {  # no process left in the stand-in's process group (killed ones may take a moment to be reaped)
  local group
  group=$(cat "$work/ptxas-pid" 2>/dev/null) || return 0
  for _ in $(seq 50); do
    kill -0 -- "-$group" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}
start=$SECONDS
PTXGATE_TOOL_TIMEOUT=1 TMPDIR="$work/tmp" timeout 60 "$cli" check "$saxpy" --kernel saxpy --grid 100 2>"$work/err"
rc=$?
((rc == 1)) || fail "check with a hanging ptxas exited $rc (124: the limit did not apply)"
grep -q 'PG2011.*did not finish within 1 s' "$work/err" || fail "check with a hanging ptxas: $(cat "$work/err")"
((SECONDS - start < 30)) || fail "the 1 s limit took $((SECONDS - start)) s"
group_gone || fail "the hanging ptxas's process group is still running"
[[ -z "$(ls -A "$work/tmp")" ]] || fail "a timed-out check left temporaries: $(ls -A "$work/tmp")"
PTXGATE_TOOL_TIMEOUT=abc "$cli" check "$saxpy" --kernel saxpy --grid 100 2>"$work/err" && fail "PTXGATE_TOOL_TIMEOUT=abc accepted"
grep -q 'PTXGATE_TOOL_TIMEOUT' "$work/err" || fail "PTXGATE_TOOL_TIMEOUT=abc: $(cat "$work/err")"

# 9. Interrupted while ptxas runs: no ptxgate-ptxas-* / ptxgate-run-* left, ptxas stopped, and the
#    command dies of the signal. (python3 starts it with SIGINT at its default: a background job of
#    a script would ignore it.)
for signal in INT TERM HUP; do
  rm -f "$work/ptxas-pid"
  PTXGATE_TOOL_TIMEOUT=0 TMPDIR="$work/tmp" python3 -c \
    'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$cli" check "$saxpy" --kernel saxpy --grid 100 2>"$work/err" &
  pid=$!
  for _ in $(seq 600); do [[ -s "$work/ptxas-pid" ]] && break; sleep 0.1; done
  [[ -s "$work/ptxas-pid" ]] || fail "SIG$signal: ptxas never started: $(cat "$work/err")"
  ls "$work/tmp" | grep -q '^ptxgate-ptxas-' || fail "SIG$signal: no ptxgate-ptxas-* while ptxas runs: $(ls -A "$work/tmp")"
  kill -s "$signal" "$pid"
  { wait "$pid"; } 2>/dev/null  # (bash would report the death by the signal on stderr)
  rc=$?
  expected=$((128 + $(kill -l "$signal")))
  ((rc == expected)) || fail "SIG$signal: check exited $rc, not $expected"
  [[ -z "$(ls -A "$work/tmp")" ]] || fail "SIG$signal: temporaries left: $(ls -A "$work/tmp")"
  group_gone || fail "SIG$signal: ptxas still running"
done
unset PTXGATE_PTXAS

((failures == 0)) && echo "output paths: all checks passed"
exit $((failures > 0))
