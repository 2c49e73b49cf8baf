#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes .device-stir/, what stir/bench/time-to-image.sh and stir/bench/osmaposl-timing.sh need on a GPU machine beyond
# .device/ (scripts/device-bundle.sh: starproj's CUDA build and StarPU): starproj_OSMAPOSL, starproj_OSSPS,
# starproj_forward_project, starproj_make_listmode and starproj_stir_compare built against an installed STIR and
# starproj's CUDA build in .device/build, STIR's generate_image, all stripped; libstir_starproj and STIR's shared
# libraries; libparallelproj's CUDA build as the libparallelproj.so.2 STIR's "Parallelproj" pair calls (with shared
# STIR and libparallelproj 2 the C API is the same whichever build is loaded: no STIR build against it is needed); the
# libraries the programs need that a bare CUDA machine may lack (X11's, which STIR links, libgomp, the CUDA runtime);
# STIR's mMR scanner templates and its test-pack mMR listmode file (whose header starproj_make_listmode copies). With a shared
# STIR also STIR's own OSMAPOSL and the launcher starproj-stir, which preloads the bundle's libstir_starproj.so
# (osmaposl-timing.sh's PAIRS=STIROwn).
#
# usage: stir/bench/make-bundle.sh --stir-src SRC [--stir-prefix DIR] [--parallelproj-lib DIR] [--device DIR] [--jobs N]
#   --stir-src SRC           STIR's sources (folder or .tar.gz, top folder STIR/), for the scanner templates
#   --stir-prefix DIR        an installed STIR (lib/cmake/STIR-*, bin/generate_image), default /usr/local/stir
#                            (scripts/install-stir.sh --shared)
#   --parallelproj-lib DIR   a folder with libparallelproj's CUDA build, libparallelproj.so.2 (and the CUDA runtime it
#                            needs), default DEVICE/parallelproj/lib (scripts/device-bundle.sh --with-parallelproj SRC)
#   --device DIR             where scripts/device-bundle.sh put starproj's CUDA build (default .device)
# The programs are built in build-stir-cuda/. Prints the sizes of what a GPU run carries.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
stir_prefix=/usr/local/stir
pp_lib=
stir_src=
jobs=$(nproc 2>/dev/null || echo 2)
device=$root/.device
while [ $# -gt 0 ]; do
  case "$1" in
    --stir-prefix) stir_prefix=$2; shift 2 ;;
    --parallelproj-lib) pp_lib=$(cd "$2" && pwd); shift 2 ;;
    --stir-src) stir_src=$2; shift 2 ;;
    --device) device=$(cd "$2" && pwd); shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '3,20p' "$0"; exit 0 ;;
    *) echo "make-bundle: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$stir_src" ] || { sed -n '12,20p' "$0" >&2; exit 2; }
pp_lib=${pp_lib:-$device/parallelproj/lib}
log() { printf 'make-bundle: %s\n' "$*"; }
[ -f "$device/build/.libs/libstarproj.so.0" ] || { log "no $device/build/.libs/libstarproj.so.0: run scripts/device-bundle.sh"; exit 1; }
[ -f "$pp_lib/libparallelproj.so.2" ] ||
  { log "no $pp_lib/libparallelproj.so.2: scripts/device-bundle.sh --with-parallelproj SRC, or --parallelproj-lib"; exit 1; }
nm -D --defined-only "$pp_lib/libparallelproj.so.2" | grep -q ' parallelproj_cuda_enabled$' &&
  ldd "$pp_lib/libparallelproj.so.2" | grep -q libcudart || log "warning: $pp_lib/libparallelproj.so.2 is not a CUDA build"

# starproj's CUDA build, through a pkg-config file of its own: headers from include/, the library from .device/build
build=$root/build-stir-cuda
mkdir -p "$build/pkgconfig"
cat >"$build/pkgconfig/starproj.pc" <<PC
includedir=$root/include
libdir=$device/build/.libs
Name: starproj
Description: starproj's CUDA build in .device/build
Version: 0.1.0
Requires: starpu-1.4
Cflags: -I\${includedir}
Libs: -L\${libdir} -lstarproj
PC
export PKG_CONFIG_PATH="$build/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
rm -f "$build/CMakeCache.txt"
programs=(starproj_OSMAPOSL starproj_OSSPS starproj_forward_project starproj_make_listmode starproj_stir_compare)
log "building ${programs[*]} against $stir_prefix"
cmake -S stir -B "$build" -DCMAKE_PREFIX_PATH="$stir_prefix" -DCMAKE_BUILD_TYPE=Release >"$build/cmake.log" 2>&1 ||
  { tail -n 30 "$build/cmake.log"; exit 1; }
cmake --build "$build" -j "$jobs" --target "${programs[@]}" >"$build/build.log" 2>&1 ||
  { grep -E 'error|Error' "$build/build.log" | head -n 30; exit 1; }

rm -rf .device-stir
mkdir -p .device-stir/bin .device-stir/lib .device-stir/data
launcher=
stir_own=()
# STIR's own OSMAPOSL reads the registrations of a preloaded libstir_starproj only when STIR's libraries are shared
if [ -f "$build/libstir_starproj.so" ] && [ -x "$stir_prefix/bin/OSMAPOSL" ]; then
  stir_own=("$stir_prefix/bin/OSMAPOSL")
  launcher=$build/starproj-stir # copied after ldd has read the programs (it is a script)
else
  log "STIR's libraries are static (or $stir_prefix/bin has no OSMAPOSL): no STIR OSMAPOSL and launcher in the bundle"
fi
for p in "${programs[@]/#/$build/}" "$stir_prefix/bin/generate_image" "${stir_own[@]}"; do
  strip -o ".device-stir/bin/$(basename "$p")" "$p"
done
[ -f "$build/libstir_starproj.so" ] && strip --strip-unneeded -o .device-stir/lib/libstir_starproj.so "$build/libstir_starproj.so"
# what the programs need besides glibc, libstdc++, .device/ and starproj: STIR's libraries, libparallelproj's CUDA build
# (found first), the CUDA runtime, X11's and OpenMP's libraries
search=".device-stir/lib:$pp_lib:$device/lib:$device/build/.libs:$stir_prefix/lib:/usr/local/cuda/lib64"
needed=$(LD_LIBRARY_PATH="$search" ldd .device-stir/bin/* .device-stir/lib/*.so* |
  awk '$2 == "=>" && $3 ~ /^\// { print $1 " " $3 }' | sort -u)
while read -r name path; do
  case $name in
    libc.so*|libm.so*|libmvec.so*|libdl.so*|libpthread.so*|librt.so*|libstdc++.so*|libgcc_s.so*|ld-linux*) continue ;;
    libstarproj*|libstarpu*|libhwloc*|libniftiio*|libznz*|libpng16*|libsubunit*|libudev*) continue ;;
    libcublas*|libcusparse*|libcusolver*|libnvJitLink*|libcufft*|libcurand*) continue ;; # CUDA's, there
  esac
  case $path in "$root"/.device-stir/*) continue ;; esac
  cp -L "$path" .device-stir/lib/
done <<<"$needed"
strip --strip-unneeded .device-stir/lib/*.so* 2>/dev/null || true
LD_LIBRARY_PATH="$root/.device-stir/lib:$device/lib:$device/build/.libs" ldd .device-stir/bin/starproj_OSMAPOSL |
  grep -q "libparallelproj.so.2 => $root/.device-stir/lib/" || { log "libparallelproj.so.2 is not the bundle's"; exit 1; }
[ -n "$launcher" ] && cp "$launcher" .device-stir/bin/
# STIR's templates (its files, carried as they are): the mMR at span 11 and at span 1 (the largest template STIR has),
# recon_test_pack's 5-segment mMR, and recon_test_pack's mMR listmode file (1 MB; STIR's reader opens the data named
# in the header that starproj_make_listmode copies)
templates=(examples/Siemens-mMR/template_span11.hs examples/Siemens-mMR/template_span1.hs
           recon_test_pack/Siemens_mMR_seg2.hs recon_test_pack/PET_ACQ_small.l.hdr.STIR
           recon_test_pack/small_listmode_file.l)
if [ -d "$stir_src" ]; then
  for t in "${templates[@]}"; do cp "$stir_src/$t" .device-stir/data/; done
else
  tmp=$(mktemp -d)
  tar -xzf "$stir_src" -C "$tmp" "${templates[@]/#/STIR/}"
  for t in "${templates[@]}"; do cp "$tmp/STIR/$t" .device-stir/data/; done
  rm -rf "$tmp"
fi
ls -l .device-stir/bin .device-stir/lib
carry=(.device-stir "$device/lib" "$device/build/.libs")
log "$(du -sh .device-stir | cut -f1) in .device-stir; with ${device#"$root"/}/lib and ${device#"$root"/}/build/.libs (what a run carries): $(du -scL "${carry[@]}" | tail -n 1 | cut -f1) KiB"
