#!/usr/bin/env bash
# The bash completion (tools/completion/ptxgate.bash) offers every command `ptxgate --help`
# lists and every long option each command's help lists, completes fixed option values, and
# completes .pg files (and, for check, .ptx and .cubin files). Usage: completion.sh PTXGATE_CLI SOURCE_DIR
set -u
cli="$1"
src="$2"
source "$src/tools/completion/ptxgate.bash"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# complete WORD... : COMPREPLY for the last word of "ptxgate WORD...".
complete_words() {
  COMP_WORDS=(ptxgate "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _ptxgate
}
commands="$("$cli" --help | awk '/^Subcommands:/ { on = 1; next } on && NF { print $1 }')"
[[ -n "$commands" ]] || fail "no commands in ptxgate --help"
complete_words ""
for c in $commands; do
  [[ " ${COMPREPLY[*]} " == *" $c "* ]] || fail "command '$c' is not completed"
done
for c in $commands; do
  [[ "$c" == help ]] && continue
  sub=()
  [[ "$c" == cache ]] && sub=(list)
  # The options each help declares (lines that start with the option, not descriptions).
  if [[ "$c" == cache ]]; then help_text="$("$cli" cache list --help)"; else help_text="$("$cli" help "$c")"; fi
  options="$(grep -E '^ +-' <<<"$help_text" | awk '{ print $1 }' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)"
  complete_words "$c" "${sub[@]}" --
  for o in $options; do
    [[ " ${COMPREPLY[*]} " == *" $o "* ]] || fail "option '$o' of '$c' is not completed"
  done
done
complete_words emit x.pg --emit ""
[[ " ${COMPREPLY[*]} " == *" sass "* && " ${COMPREPLY[*]} " == *" resources "* ]] || fail "--emit values: ${COMPREPLY[*]}"
complete_words check x.pg --color a
[[ "${COMPREPLY[*]}" == "auto always" ]] || fail "--color a: ${COMPREPLY[*]}"
complete_words cache ""
[[ "${COMPREPLY[*]}" == "stats list clear" ]] || fail "cache subcommands: ${COMPREPLY[*]}"
cd "$src/examples"
complete_words check sax
[[ " ${COMPREPLY[*]} " == *" saxpy.pg "* ]] || fail "no .pg file completed: ${COMPREPLY[*]}"
cd "$src/tests/golden/ptx"
complete_words check sax
[[ " ${COMPREPLY[*]} " == *" saxpy_sm80.cubin "* ]] || fail "check completes no .cubin: ${COMPREPLY[*]}"
complete_words check check_nvcc
[[ " ${COMPREPLY[*]} " == *" check_nvcc_saxpy.ptx "* ]] || fail "check completes no .ptx: ${COMPREPLY[*]}"
complete_words emit sax
[[ " ${COMPREPLY[*]} " != *".cubin "* ]] || fail "emit completes a .cubin: ${COMPREPLY[*]}"
if ((failures)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "completion: all checks passed"
