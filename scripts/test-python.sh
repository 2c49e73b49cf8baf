#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests the Python binding: stages the C library built in build/ (scripts/build.sh) under build/python-prefix,
# builds python/ into a venv (build/python-venv) against it through pkg-config and runs its pytest suite, printing
# pytest's summary line. usage: scripts/test-python.sh [--prefix DIR]   (DIR: where StarPU is, default /usr/local)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
starpu=/usr/local
case "${1:-}" in
  --prefix) starpu=$2 ;;
  --prefix=*) starpu=${1#--prefix=} ;;
esac
if [ ! -f build/Makefile ]; then
  echo "test-python.sh: build/ is not configured; run scripts/build.sh first" >&2
  exit 1
fi

# a private copy of the library: the binding is built and tested against exactly this tree's code. libtool installs
# only into the libdir configure chose, so the copy is staged (DESTDIR) under build/python-prefix.
stage=$root/build/python-prefix
configured=$(sed -n 's/^prefix = //p' build/Makefile)
prefix=$stage$configured
rm -rf "$stage"
make -s -C build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
make -s -C build install DESTDIR="$stage" >/dev/null 2>&1 || make -s -C build install DESTDIR="$stage"
# the .pc files carry the configured prefix; point them at the copy (pkg-config derives the rest from it)
sed -i "s|^prefix=.*|prefix=$prefix|" "$prefix"/lib/pkgconfig/starproj*.pc
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$starpu/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

venv=$root/build/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# petsird: the PETSIRD example and its test are written against this version's API
"$venv/bin/pip" install -q --disable-pip-version-check numpy pytest setuptools wheel petsird==0.12.0
# rebuilt every run (no build isolation: the venv's setuptools, no download per run); setuptools builds in python/build
# and would reuse an extension linked against another copy of the library, so that goes first
rm -rf python/build python/*.egg-info
"$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps ./python

# no LD_LIBRARY_PATH: the extension finds libstarproj and StarPU through its rpath. Run from the repository root so
# that `import starproj` gets the installed package, not the python/ source folder.
unset LD_LIBRARY_PATH
set +e
"$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests 2>&1 | tee build/python-tests.log | tail -n 1
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "--- python tests failed (exit $status); full output in build/python-tests.log ---"
  tail -n 60 build/python-tests.log
fi
exit "$status"
