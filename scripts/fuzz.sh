#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (Debian's clang, ASan + UBSan, no CUDA) in build-fuzz/ and runs each for its share
# of a bounded time from its seed corpus: fuzz/fuzz_api.c (calls into libstarproj; half the time, seeds in
# fuzz/corpus), fuzz/fuzz_raw.c (raw header parser and readers; a quarter, fuzz/corpus_raw) and fuzz/fuzz_nifti.c
# (NIfTI-1 reader; a quarter, fuzz/corpus_nifti), the last two linking libstarproj-io. A crash, sanitizer report,
# leak, hang or allocation over the limits fails the run and leaves the input in build-fuzz/ (<target>-crash-*,
# -leak-*, -timeout-*, -oom-*): turn it into a regression test (tests/check_hardening.c, tests/check_io.c).
# usage: scripts/fuzz.sh [--seconds N] [--prefix DIR]   (N default 60; DIR: where StarPU is, default /usr/local)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=60 prefix=/usr/local
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
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
make -s -j"$(nproc 2>/dev/null || echo 2)" libstarproj.la libstarproj-io.la >/dev/null \
  || { echo "fuzz: library build failed (libstarproj-io needs nifticlib and libpng)"; exit 1; }
starpu_libs=$(pkg-config --libs starpu-1.4)
build_target() { # name, extra libraries
  clang -g -O1 -fsanitize=fuzzer $san -I"$root/include" -I"$root/fuzz" "$root/fuzz/$1.c" -o "$1" \
    -L.libs $2 -lstarproj -Wl,-rpath,"$PWD/.libs" $starpu_libs -lm || { echo "fuzz: $1 build failed"; exit 1; }
}
build_target fuzz_api ""
build_target fuzz_raw -lstarproj-io
build_target fuzz_nifti -lstarproj-io
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp
export STARPU_SILENT=1
# the file targets write each input to a file: on tmpfs they run several times faster than on a busy disk
if [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
# the time split: half for the API, a quarter for each file reader (at least 1 s each); the file targets read
# small files, so a 10 s timeout and a 1 GiB allocation limit are far beyond what a correct reader needs
api_s=$((seconds / 2)) raw_s=$((seconds / 4)); nifti_s=$((seconds - api_s - raw_s))
[ $api_s -ge 1 ] || api_s=1; [ $raw_s -ge 1 ] || raw_s=1; [ $nifti_s -ge 1 ] || nifti_s=1
failed=""
run_target() { # name, seconds, working corpus (build-fuzz/), seed corpus, libFuzzer options
  local name=$1 secs=$2 corpus=$3 seeds=$4; shift 4
  mkdir -p "$corpus"
  echo "  $name: ${secs}s"
  "./$name" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$name-" "$@" "$corpus" "$seeds" \
    >"$name.log" 2>&1
  local status=$?
  grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done)|^#[0-9]+.*DONE' "$name.log" | sed 's/^/    /'
  if [ $status -ne 0 ]; then
    grep -E -A20 'ERROR:|runtime error:|deadly signal|Timeout|out-of-memory|malloc\(' "$name.log" | head -50
    failed="$failed $name"
  fi
}
run_target fuzz_api $api_s corpus "$root/fuzz/corpus" -timeout=20 -rss_limit_mb=4096
run_target fuzz_raw $raw_s corpus_raw "$root/fuzz/corpus_raw" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
run_target fuzz_nifti $nifti_s corpus_nifti "$root/fuzz/corpus_nifti" -timeout=10 -rss_limit_mb=2048 \
  -malloc_limit_mb=1024
if [ -n "$failed" ]; then
  inputs=$(ls ./*-crash-* ./*-leak-* ./*-timeout-* ./*-oom-* 2>/dev/null | tr '\n' ' ')
  echo "== fuzzing FAILED:$failed: the inputs are in build-fuzz/ ($inputs) =="
  exit 1
fi
echo "== fuzzing passed: ${seconds}s (api ${api_s}s, raw ${raw_s}s, nifti ${nifti_s}s), no crash, no sanitizer" \
  "report =="
