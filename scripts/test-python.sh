#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests the Python binding: stages the C library built in build/ (scripts/build.sh) under build/python-prefix,
# builds python/ into a venv (build/python-venv) against it through pkg-config and runs its pytest suite, printing
# pytest's summary line. With --with-parallelproj, also builds libparallelproj's own Python module (parallelproj_core:
# its CPU library, OpenMP, and its nanobind binding, nanobind from PyPI) once into build/parallelproj, which
# tests/test_parallelproj_core.py compares starproj.parallelproj_core with call for call (skipped without it).
# With --build-only it stops once the binding is built (scripts/test-parallelproj-package.sh uses it).
# usage: scripts/test-python.sh [--prefix DIR] [--with-parallelproj SRC] [--build-only]
#   DIR: where StarPU is (default /usr/local); SRC: libparallelproj's source, a folder or a .tar.gz
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
root=$PWD
starpu=/usr/local
pp_src=
build_only=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) starpu=$2; shift 2 ;;
    --prefix=*) starpu=${1#--prefix=}; shift ;;
    --with-parallelproj) pp_src=$2; shift 2 ;;
    --with-parallelproj=*) pp_src=${1#--with-parallelproj=}; shift ;;
    --build-only) build_only=1; shift ;;
    *) echo "test-python.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$pp_src" in ''|/*) ;; *) pp_src=$caller/$pp_src ;; esac
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

# libparallelproj's Python module, built once per source (its build tree's rpath finds its library)
if [ -n "$pp_src" ]; then
  [ -e "$pp_src" ] || { echo "test-python.sh: no such libparallelproj source: $pp_src" >&2; exit 1; }
  pp=$root/build/parallelproj
  stamp="$pp_src $(stat -c %s "$pp_src") $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])')"
  if [ "$(cat "$pp/stamp" 2>/dev/null)" != "$stamp" ] || ! compgen -G "$pp/build/parallelproj_core*.so" >/dev/null; then
    echo "test-python.sh: building libparallelproj's Python module (CPU) into $pp"
    rm -rf "$pp" && mkdir -p "$pp/src"
    if [ -d "$pp_src" ]; then cp -a "$pp_src/." "$pp/src/"; else tar -xzf "$pp_src" -C "$pp/src" --strip-components=1; fi
    # its CMakeLists asks for CMake 3.31 and Python 3.12; Debian 12's CMake 3.25 and Python 3.11 build it as well
    sed -i -e 's/^cmake_minimum_required(VERSION 3\.3[1-9][^)]*)/cmake_minimum_required(VERSION 3.25)/' \
      -e 's/find_package(Python 3\.[0-9]* /find_package(Python 3.9 /' "$pp/src/CMakeLists.txt"
    "$venv/bin/pip" install -q --disable-pip-version-check nanobind
    (cmake -S "$pp/src" -B "$pp/build" -DCMAKE_BUILD_TYPE=Release -DUSE_CUDA=OFF -DBUILD_PYTHON=ON -DBUILD_TESTS=OFF \
      -DPython_EXECUTABLE="$venv/bin/python" && cmake --build "$pp/build" -j "$(nproc 2>/dev/null || echo 2)") \
      >"$pp/build.log" 2>&1 || { tail -n 30 "$pp/build.log"; exit 1; }
    echo "$stamp" >"$pp/stamp"
  fi
  export STARPROJ_TEST_PARALLELPROJ=$pp/build
fi
[ -z "$build_only" ] || exit 0

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
