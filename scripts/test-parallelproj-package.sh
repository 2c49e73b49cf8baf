#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the test suite of the parallelproj package (2.x, pure Python; its releases are on conda-forge, not on PyPI)
# with starproj.parallelproj_core in place of libparallelproj's module: the package and its tests import
# parallelproj_core, which a shim written into a temporary folder makes starproj's. Builds the binding as
# scripts/test-python.sh does (build/python-venv, against the library in build/), runs the tests in a venv of their
# own (build/parallelproj-package-venv: numpy, array-api-compat, matplotlib, scipy, pytest) on a copy of SRC in the
# temporary folder, and prints pytest's summary line (and the tests that failed). Not part of CI: CI has no copy of
# the package, and nothing of it enters the repository.
# usage: scripts/test-parallelproj-package.sh [--prefix DIR] SRC
#   DIR: where StarPU is (default /usr/local); SRC: the package's source, a folder holding src/parallelproj and
#   tests/, or a .tar.gz of one
set -euo pipefail
caller=$(pwd)
prefix_args=()
src=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix_args=(--prefix "$2"); shift 2 ;;
    --prefix=*) prefix_args=("$1"); shift ;;
    -*) echo "test-parallelproj-package.sh: unknown argument '$1'" >&2; exit 2 ;;
    *) [ -z "$src" ] || { echo "test-parallelproj-package.sh: one SRC only ('$src', '$1')" >&2; exit 2; }
       src=$1; shift ;;
  esac
done
if [ -z "$src" ]; then
  echo "usage: scripts/test-parallelproj-package.sh [--prefix DIR] SRC (the parallelproj package's source)" >&2
  exit 2
fi
case "$src" in /*) ;; *) src=$caller/$src ;; esac
if [ ! -e "$src" ]; then
  echo "test-parallelproj-package.sh: no such parallelproj package source: $src" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
root=$PWD

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the package's source, copied (its tests may write next to themselves)
mkdir -p "$work/pkg"
if [ -d "$src" ]; then cp -a "$src/." "$work/pkg/"; else tar -xzf "$src" -C "$work/pkg"; fi
found=$(find "$work/pkg" -maxdepth 4 -type d -path '*/src/parallelproj' | head -n 1)
pkg=${found%/src/parallelproj}
if [ -z "$found" ] || [ ! -d "$pkg/tests" ]; then
  echo "test-parallelproj-package.sh: $src holds no src/parallelproj and tests/" >&2
  exit 2
fi

# the binding, built against this tree's library
bash scripts/test-python.sh "${prefix_args[@]}" --build-only

# the shim: parallelproj_core is starproj.parallelproj_core; the built starproj package beside it
shim=$work/shim
mkdir -p "$shim"
cat >"$shim/parallelproj_core.py" <<'PY'
# parallelproj_core.py: libparallelproj's module name, given to starproj.parallelproj_core
import sys

import starproj.parallelproj_core as _m

sys.modules[__name__] = _m
PY
built=$(cd "$root/build" && "$root/build/python-venv/bin/python" -c 'import os, starproj; print(os.path.dirname(starproj.__file__))')
ln -s "$built" "$shim/starproj"

venv=$root/build/parallelproj-package-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import numpy, scipy, matplotlib, array_api_compat, pytest' 2>/dev/null ||
  "$venv/bin/pip" install -q --disable-pip-version-check numpy array-api-compat matplotlib scipy pytest

log=$root/build/parallelproj-package-tests.log
unset LD_LIBRARY_PATH
set +e
(cd "$pkg" && MPLBACKEND=Agg PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$shim:$pkg/src" \
  "$venv/bin/python" -m pytest -q -rfEs -p no:cacheprovider tests) >"$log" 2>&1
status=$?
set -e
grep -E '^(FAILED|ERROR) ' "$log" || true
tail -n 1 "$log"
[ "$status" -eq 0 ] || echo "--- full output in build/parallelproj-package-tests.log ---"
exit "$status"
