#!/usr/bin/env bash
# The CLI on a terminal (a pseudo-terminal from util-linux `script`): `emit --emit cubin` refuses
# to write binary to it (PG5006, exit 2) and writes nothing else; `--color=auto` colours
# diagnostics there, unless NO_COLOR is set; `--color=never` never does.
# Usage: terminal.sh PTXGATE_CLI SOURCE_DIR
set -u
cli="$1"
src="$2"
if ! command -v script >/dev/null; then
  echo "SKIPPED: terminal tests need util-linux 'script'"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# Runs the CLI with standard output and error on a pseudo-terminal; its output lands in $work/tty.
on_tty() {
  local cmd
  printf -v cmd '%q ' "$@"
  timeout 60 script -qec "$cmd" /dev/null >"$work/tty" 2>&1
}
esc=$'\033'
printf 'kernel k(inout y: f32[]) {\n  let i = global_id.x;\n  y[i] + 1.0;\n}\n' >"$work/warn.pg"

on_tty "$cli" emit "$src/examples/saxpy.pg" --emit cubin
rc=$?
((rc == 2)) || fail "emit --emit cubin on a terminal exited $rc, not 2"
grep -q 'PG5006' "$work/tty" || fail "no PG5006 for a cubin on a terminal: $(cat -v "$work/tty")"
grep -q 'ELF' "$work/tty" && fail "cubin bytes reached the terminal"

on_tty "$cli" emit "$work/warn.pg" --emit meta
grep -q "${esc}\[1;35mwarning" "$work/tty" || fail "--color=auto on a terminal is not coloured: $(cat -v "$work/tty")"

on_tty env NO_COLOR=1 "$cli" emit "$work/warn.pg" --emit meta
grep -q 'warning\[PG1314\]' "$work/tty" || fail "NO_COLOR run printed no warning: $(cat -v "$work/tty")"
grep -q "$esc" "$work/tty" && fail "NO_COLOR=1 still coloured: $(cat -v "$work/tty")"

on_tty "$cli" emit "$work/warn.pg" --emit meta --color=never
grep -q "$esc" "$work/tty" && fail "--color=never coloured: $(cat -v "$work/tty")"

# A pipe is not a terminal: the cubin is written.
"$cli" emit "$src/examples/saxpy.pg" --emit cubin | head -c 4 | grep -q ELF || fail "emit --emit cubin to a pipe wrote no ELF"

if ((failures)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "terminal: all checks passed"
