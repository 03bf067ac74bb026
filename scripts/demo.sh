#!/usr/bin/env bash
# The main job on an example: set up, build, and emit PTX for examples/saxpy.pg.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/tools/ptxgate emit examples/saxpy.pg --target sm_90
