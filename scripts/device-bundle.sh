#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds starproj (CUDA codelets for sm_90) into .device/build and copies the shared libraries a bare GPU machine
# lacks (StarPU, hwloc, subunit, nifticlib, libpng) into .device/lib, so that .device can be carried to a lent GPU
# machine.
# usage: scripts/device-bundle.sh [--prefix DIR]   (DIR: where install-deps.sh put StarPU, default /usr/local)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/usr/local
[ "${1:-}" = --prefix ] && prefix=$2
root=$PWD
mkdir -p .device/lib .device/build
for lib in "$prefix/lib/libstarpu-1.4.so.9" /usr/lib/x86_64-linux-gnu/libhwloc.so.15 \
           /usr/lib/x86_64-linux-gnu/libsubunit.so.0 /usr/lib/x86_64-linux-gnu/libniftiio.so.2 \
           /usr/lib/x86_64-linux-gnu/libznz.so.3 /usr/lib/x86_64-linux-gnu/libpng16.so.16; do
  cp -L "$lib" .device/lib/
done
[ -x configure ] || ./autogen.sh >/dev/null
cd .device/build
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[ -f Makefile ] || "$root/configure" -q --with-cuda-arch=90
make -s -j"$(nproc)"
make -s -j"$(nproc)" check TESTS= >/dev/null
du -sh "$root/.device"
