#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes .device-stir/, what stir/bench/osmaposl-timing.sh needs on a GPU machine beyond .device/ (scripts/
# device-bundle.sh: starproj's CUDA build and StarPU): starproj_OSMAPOSL, starproj_OSSPS, starproj_forward_project and
# starproj_make_listmode built against a STIR whose "Parallelproj" pair uses a CUDA build of libparallelproj and against
# starproj's CUDA build in .device/build, STIR's generate_image, all stripped; libparallelproj; the libraries the
# programs need that a bare CUDA machine may lack (X11's, which STIR links, libgomp, the CUDA runtime); STIR's mMR
# scanner templates and its test-pack mMR listmode file (whose header starproj_make_listmode copies). With a shared
# STIR also STIR's own OSMAPOSL and the launcher starproj-stir, which preloads the bundle's libstir_starproj.so
# (osmaposl-timing.sh's PAIRS=STIROwn).
#
# usage: stir/bench/make-bundle.sh --stir-prefix DIR --parallelproj-prefix DIR --stir-src SRC [--device DIR] [--jobs N]
#   --stir-prefix DIR          an installed STIR (lib/cmake/STIR-*, bin/generate_image) configured with
#                              -Dparallelproj_DIR=<CUDA libparallelproj>/lib/cmake/parallelproj
#   --parallelproj-prefix DIR  that libparallelproj (built with -DUSE_CUDA=ON)
#   --stir-src SRC             STIR's sources (folder or .tar.gz, top folder STIR/), for the scanner templates
#   --device DIR               where scripts/device-bundle.sh put starproj's CUDA build (default .device)
# The programs are built in build-stir-cuda/.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
stir_prefix=
pp_prefix=
stir_src=
jobs=$(nproc 2>/dev/null || echo 2)
device=$root/.device
while [ $# -gt 0 ]; do
  case "$1" in
    --stir-prefix) stir_prefix=$2; shift 2 ;;
    --parallelproj-prefix) pp_prefix=$2; shift 2 ;;
    --stir-src) stir_src=$2; shift 2 ;;
    --device) device=$(cd "$2" && pwd); shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '3,17p' "$0"; exit 0 ;;
    *) echo "make-bundle: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$stir_prefix" ] && [ -n "$pp_prefix" ] && [ -n "$stir_src" ] || { sed -n '10,16p' "$0" >&2; exit 2; }
log() { printf 'make-bundle: %s\n' "$*"; }
[ -f "$device/build/.libs/libstarproj.so.0" ] || { log "no $device/build/.libs/libstarproj.so.0: run scripts/device-bundle.sh"; exit 1; }
grep -qs 'PARALLELPROJ_CUDA 1' "$pp_prefix"/lib*/cmake/parallelproj/parallelprojConfig.cmake \
  || log "warning: $pp_prefix holds no CUDA build of libparallelproj"

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
log "building starproj_OSMAPOSL, starproj_OSSPS, starproj_forward_project and starproj_make_listmode against $stir_prefix"
cmake -S stir -B "$build" -DCMAKE_PREFIX_PATH="$stir_prefix;$pp_prefix" -DCMAKE_BUILD_TYPE=Release -DSTARPROJ_STIR_TESTS=OFF \
  >"$build/cmake.log" 2>&1 || { tail -n 30 "$build/cmake.log"; exit 1; }
cmake --build "$build" -j "$jobs" --target starproj_OSMAPOSL starproj_OSSPS starproj_forward_project starproj_make_listmode \
  >"$build/build.log" 2>&1 \
  || { grep -E 'error|Error' "$build/build.log" | head -n 30; exit 1; }

rm -rf .device-stir
mkdir -p .device-stir/bin .device-stir/lib .device-stir/data
launcher=
programs=("$build/starproj_OSMAPOSL" "$build/starproj_OSSPS" "$build/starproj_forward_project" "$build/starproj_make_listmode"
          "$stir_prefix/bin/generate_image")
# STIR's own OSMAPOSL reads the registrations of a preloaded libstir_starproj only when STIR's libraries are shared
# (the library, a dependency of our programs, comes with them below)
if [ -f "$build/libstir_starproj.so" ] && [ -x "$stir_prefix/bin/OSMAPOSL" ]; then
  programs+=("$stir_prefix/bin/OSMAPOSL")
  launcher=$build/starproj-stir # copied after ldd has read the programs (it is a script)
else
  log "STIR's libraries are static (or $stir_prefix/bin has no OSMAPOSL): no STIR OSMAPOSL and launcher in the bundle"
fi
for p in "${programs[@]}"; do
  strip -o ".device-stir/bin/$(basename "$p")" "$p"
done
cp -L "$pp_prefix"/lib*/libparallelproj.so.2 .device-stir/lib/
# what the programs and libparallelproj need besides glibc, libstdc++, .device/ and starproj
needed=$(LD_LIBRARY_PATH=".device-stir/lib:$device/lib:$device/build/.libs:/usr/local/cuda/lib64" \
  ldd .device-stir/bin/* .device-stir/lib/*.so* | awk '$2 == "=>" && $3 ~ /^\// { print $1 " " $3 }' | sort -u)
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
log "$(du -sh .device-stir | cut -f1) in .device-stir; with $device/lib and $device/build/.libs: $(du -sch .device-stir "$device/lib" "$device/build/.libs" | tail -n 1 | cut -f1)"
