#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the test suite of the parallelproj package (2.x, pure Python; its releases are on conda-forge, not on PyPI)
# with starproj.parallelproj_core in place of libparallelproj's module: the package and its tests import
# parallelproj_core, which a shim written into a temporary folder makes starproj's. By default the binding is built
# as scripts/test-python.sh does (build/python-venv, against the library in build/); with --wheel, a wheel of
# scripts/build-wheel.sh is installed instead (what a user of the package installs). The tests run in a venv of their
# own (build/parallelproj-package-venv-<python version>: numpy, array-api-compat, matplotlib, scipy, pytest, and the
# wheel) on a copy of SRC in the temporary folder; pytest's summary line (and the tests that failed) are printed.
# The package asks for Python 3.12 or newer: --python names one (CI: one of scripts/install-pythons.sh's). With
# --venv, the tests run in that venv instead, with the starproj installed there (CI: scripts/test-torch.sh's, whose
# torch the package's tests then use as a second array backend beside numpy). Nothing of the package enters the
# repository.
# usage: scripts/test-parallelproj-package.sh [--prefix DIR] [--wheel WHL] [--python PY | --venv VENV] SRC
#   DIR: where StarPU is (default /usr/local; not used with --wheel); WHL: a starproj wheel; PY: the tests'
#   interpreter (default python3); VENV: a venv holding starproj; SRC: the package's source, a folder holding
#   src/parallelproj and tests/, or a .tar.gz of one
set -euo pipefail
caller=$(pwd)
prefix_args=()
src=
wheel=
python=python3
venv=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix_args=(--prefix "$2"); shift 2 ;;
    --prefix=*) prefix_args=("$1"); shift ;;
    --wheel) [ $# -ge 2 ] || { echo "test-parallelproj-package.sh: --wheel needs a file" >&2; exit 2; }
      wheel=$2; shift 2 ;;
    --wheel=*) wheel=${1#--wheel=}; shift ;;
    --python) [ $# -ge 2 ] || { echo "test-parallelproj-package.sh: --python needs an interpreter" >&2; exit 2; }
      python=$2; shift 2 ;;
    --python=*) python=${1#--python=}; shift ;;
    --venv) [ $# -ge 2 ] || { echo "test-parallelproj-package.sh: --venv needs a folder" >&2; exit 2; }
      venv=$2; shift 2 ;;
    --venv=*) venv=${1#--venv=}; shift ;;
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
if [ -n "$wheel" ]; then
  case "$wheel" in /*) ;; *) wheel=$caller/$wheel ;; esac
  [ -f "$wheel" ] || { echo "test-parallelproj-package.sh: no such wheel: $wheel" >&2; exit 2; }
fi
if [ -n "$venv" ]; then
  case "$venv" in /*) ;; *) venv=$caller/$venv ;; esac
  [ -x "$venv/bin/python" ] || { echo "test-parallelproj-package.sh: no venv $venv" >&2; exit 2; }
  python=$venv/bin/python
fi
command -v "$python" >/dev/null 2>&1 || { echo "test-parallelproj-package.sh: no Python '$python'" >&2; exit 2; }
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 12))' || {
  echo "test-parallelproj-package.sh: the package needs Python 3.12 or newer; $python is $("$python" -V 2>&1)" >&2
  exit 2
}
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

# the shim: parallelproj_core is starproj.parallelproj_core
shim=$work/shim
mkdir -p "$shim"
cat >"$shim/parallelproj_core.py" <<'PY'
# parallelproj_core.py: libparallelproj's module name, given to starproj.parallelproj_core
import sys

import starproj.parallelproj_core as _m

sys.modules[__name__] = _m
PY

given_venv=$venv
if [ -z "$venv" ]; then
  pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv=$root/build/parallelproj-package-venv-$pyver
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
fi
"$venv/bin/python" -c 'import numpy, scipy, matplotlib, array_api_compat, pytest' 2>/dev/null ||
  "$venv/bin/pip" install -q --disable-pip-version-check --no-compile numpy array-api-compat matplotlib scipy pytest
if [ -n "$given_venv" ] && [ -z "$wheel" ]; then
  # the starproj the venv holds
  "$venv/bin/python" -c 'import starproj.parallelproj_core' ||
    { echo "test-parallelproj-package.sh: $venv holds no starproj (--wheel installs one)" >&2; exit 2; }
  echo "test-parallelproj-package.sh: $("$venv/bin/pip" list --disable-pip-version-check 2>/dev/null |
    grep -iE '^(starproj|torch|numpy) ' | awk '{printf "%s %s, ", $1, $2}' | sed 's/, $//') in $venv ($("$venv/bin/python" -V))"
elif [ -n "$wheel" ]; then
  # the wheel, as a user installs it (its dependencies: numpy, and the CUDA runtime's wheel for a CUDA build)
  "$venv/bin/pip" install -q --disable-pip-version-check "$wheel"
  "$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
  echo "test-parallelproj-package.sh: $(basename "$wheel") on $("$venv/bin/python" -V)"
else
  # the binding, built against this tree's library, beside the shim
  "$venv/bin/pip" uninstall -q -y starproj 2>/dev/null || true
  bash scripts/test-python.sh "${prefix_args[@]}" --build-only
  built=$(cd "$root/build" && "$root/build/python-venv/bin/python" -c 'import os, starproj; print(os.path.dirname(starproj.__file__))')
  ln -s "$built" "$shim/starproj"
fi

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
