#!/usr/bin/env bash
# Formats ptxgate's C and C++ sources with .clang-format (clang-format; $CLANG_FORMAT picks another).
#   scripts/format.sh [FILE...]                  format the files (default: every tracked .c/.h/.cpp/.hpp)
#   scripts/format.sh --check [FILE...]          change nothing; list the files that are not formatted, exit 1 if any
#   scripts/format.sh --check --diff BASE        change nothing; check only the lines changed since git revision BASE
#                                                (clang-format-diff), exit 1 if any would change
# The whole tree is not formatted yet (that waits until the open branches have landed), so CI can
# call the --diff form now and the plain --check after that one formatting commit.
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format="${CLANG_FORMAT:-clang-format}"
check=0
base=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --check) check=1; shift ;;
    --diff)
      [[ $# -ge 2 ]] || { echo "format.sh: --diff needs a git revision (e.g. main)" >&2; exit 2; }
      base="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) echo "format.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
command -v "$clang_format" >/dev/null || { echo "format.sh: '$clang_format' not found (apt-get install clang-format)" >&2; exit 2; }

if [[ -n "$base" ]]; then
  [[ $# -eq 0 ]] || { echo "format.sh: --diff checks the changed lines of every file; give no files" >&2; exit 2; }
  git rev-parse --verify --quiet "$base^{commit}" >/dev/null || { echo "format.sh: '$base' is not a git revision" >&2; exit 2; }
  clang_format_diff="${CLANG_FORMAT_DIFF:-clang-format-diff}"
  command -v "$clang_format_diff" >/dev/null || { echo "format.sh: '$clang_format_diff' not found" >&2; exit 2; }
  patch="$(git diff -U0 --no-color "$base" -- '*.c' '*.h' '*.cpp' '*.hpp' | "$clang_format_diff" -p1 -binary "$(command -v "$clang_format")" $([[ $check -eq 1 ]] || echo -i))"
  if [[ $check -eq 1 && -n "$patch" ]]; then
    printf '%s\n' "$patch"
    echo "format.sh: the lines above, changed since $base, are not formatted (scripts/format.sh --diff $base formats them)" >&2
    exit 1
  fi
  exit 0
fi

if [[ $# -eq 0 ]]; then
  mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
else
  files=("$@")
fi
if [[ $check -eq 0 ]]; then
  "$clang_format" -i --style=file "${files[@]}"
  exit 0
fi
unformatted=0
for f in "${files[@]}"; do
  if ! "$clang_format" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "$f"
    unformatted=$((unformatted + 1))
  fi
done
if [[ $unformatted -gt 0 ]]; then
  echo "format.sh: $unformatted of ${#files[@]} files are not formatted (scripts/format.sh FILE... formats them)" >&2
  exit 1
fi
