#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds starproj without CUDA under AddressSanitizer and UndefinedBehaviorSanitizer (float-cast-overflow included)
# in build-sanitize/ and runs the whole test suite there; fails on any sanitizer report. Expects what
# scripts/install-deps.sh installs. usage: scripts/sanitize.sh [--prefix DIR] [--build-only]   (DIR: where StarPU is;
# --build-only: build-sanitize/ brought up to date, no tests: what scripts/test-stir.sh builds the STIR plug-ins on)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prefix=/usr/local
build_only=no
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --build-only) build_only=yes; shift ;;
    *) echo "sanitize: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build-sanitize
cd build-sanitize
san="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer"
if [ ! -f Makefile ]; then
  ../configure -q --without-cuda CFLAGS="-O1 -g $san" LDFLAGS="$san" || { echo "sanitize: configure failed"; exit 1; }
fi
make -s -j"$(nproc 2>/dev/null || echo 2)" >/dev/null || { echo "sanitize: build failed"; exit 1; }
[ "$build_only" = yes ] && exit 0
# huge allocations are part of the tests (a failed allocation must return a status): let them fail, not abort
# hwloc's plug-ins (PCI, OpenCL, GL: nothing a build without CUDA uses) are dlopened and unloaded again, so that what
# they keep until exit points into an unknown module and escapes the suppressions: none is loaded (an empty plug-in
# folder). The slow unwinder, which named them, made every allocation about 3 times slower (check_geometry's LOR sets
# 31 s instead of 10 s); check_mpi.sh still asks for it, for OpenMPI's frames, which have no frame pointers.
mkdir -p no-hwloc-plugins
export HWLOC_PLUGINS_PATH=$PWD/no-hwloc-plugins
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:abort_on_error=0
export LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1
# Check's timeouts bound hangs: a sanitizer build runs 2-5x slower, more on a loaded machine
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-5}
make -s -j"$(nproc 2>/dev/null || echo 2)" check >/dev/null 2>&1
status=$?
reports=$(grep -lE 'runtime error:|ERROR: (Address|Leak)Sanitizer' tests/*.log 2>/dev/null)
echo "== sanitizer build (ASan + UBSan incl. float-cast-overflow, no CUDA) =="
for trs in tests/*.trs; do
  printf '%-22s %s\n' "${trs%.trs}" "$(sed -n 's/^:test-result: //p' "$trs")"
done
if [ -n "$reports" ] || [ $status -ne 0 ]; then
  for f in $reports; do
    echo "--- sanitizer report in $f ---"
    grep -E -A12 'runtime error:|ERROR: (Address|Leak)Sanitizer' "$f" | head -40
  done
  [ -z "$reports" ] && for f in tests/*.log; do grep -qE ':[FE]:' "$f" && grep -E ':[FE]:' "$f"; done
  # a failed test without a Check line (a script such as check_mpi.sh): the end of its log
  for trs in tests/*.trs; do
    if grep -qE '^:test-result: (FAIL|ERROR)' "$trs" && ! grep -qE ':[FE]:' "${trs%.trs}.log"; then
      echo "--- the end of ${trs%.trs}.log ---"
      tail -n 25 "${trs%.trs}.log"
    fi
  done
  echo "== sanitizer run FAILED =="
  exit 1
fi
echo "== sanitizer run passed: no reports =="
