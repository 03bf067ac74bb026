#!/usr/bin/env bash
# One command from a fresh checkout to an importable ptxgate: builds the library (scripts/build.sh,
# which runs scripts/setup.sh's checks through CMake) unless build/libptxgate.so is there, then
# installs the Python package with pip, as a wheel that bundles the library and the shared
# libraries it needs (python/_build/ptxgate_build.py). Extra arguments go to pip install
# (e.g. --user, --target DIR). PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
if [[ ! -e build/libptxgate.so ]]; then
  scripts/build.sh
fi
"$python" -m pip install --no-index --no-deps --no-build-isolation --force-reinstall "$@" ./python
echo "installed: $("$python" -c 'import sys; sys.path.pop(0); import ptxgate; print(ptxgate.__file__, ptxgate.library_path())' 2>/dev/null || echo "(not importable by $python as it is: a --target directory must be on PYTHONPATH)")"
