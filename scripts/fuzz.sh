#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer target fuzz/fuzz_api.c (Debian's clang, ASan + UBSan, no CUDA) in build-fuzz/ and runs it
# for a bounded time from the seed corpus in fuzz/corpus. A crash, sanitizer report or leak fails the run and
# leaves the input in build-fuzz/ (crash-*, leak-*): turn it into a regression test in tests/check_hardening.c.
# usage: scripts/fuzz.sh [--seconds N] [--prefix DIR]   (N default 60; DIR: where StarPU is, default /usr/local)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=60 prefix=/usr/local
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "fuzz: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$seconds" in ''|*[!0-9]*) echo "fuzz: --seconds needs a whole number" >&2; exit 2 ;; esac
command -v clang >/dev/null || { echo "fuzz: clang not found: run scripts/install-deps.sh" >&2; exit 1; }
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build-fuzz
cd build-fuzz
san="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all"
if [ ! -f Makefile ]; then
  ../configure -q --without-cuda CC=clang CFLAGS="-g -O1 -fsanitize=fuzzer-no-link $san" LDFLAGS="$san" \
    || { echo "fuzz: configure failed"; exit 1; }
fi
make -s -j"$(nproc 2>/dev/null || echo 2)" libstarproj.la >/dev/null || { echo "fuzz: library build failed"; exit 1; }
clang -g -O1 -fsanitize=fuzzer $san -I"$root/include" "$root/fuzz/fuzz_api.c" -o fuzz_api \
  -L.libs -lstarproj -Wl,-rpath,"$PWD/.libs" $(pkg-config --libs starpu-1.4) -lm \
  || { echo "fuzz: target build failed"; exit 1; }
mkdir -p corpus
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp
export STARPU_SILENT=1
./fuzz_api -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 corpus "$root/fuzz/corpus" \
  >fuzz.log 2>&1
status=$?
grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done)|^#[0-9]+.*DONE' fuzz.log | sed 's/^/  /'
if [ $status -ne 0 ]; then
  grep -E -A20 'ERROR:|runtime error:|deadly signal|Timeout' fuzz.log | head -50
  echo "== fuzzing FAILED: the input is in build-fuzz/ ($(ls crash-* leak-* timeout-* 2>/dev/null | tr '\n' ' ')) =="
  exit 1
fi
echo "== fuzzing passed: ${seconds}s, no crash, no sanitizer report =="
