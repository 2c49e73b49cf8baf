#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds starproj in build/ (autogen + configure on the first run), against the StarPU that
# scripts/install-deps.sh installed. usage: scripts/build.sh [--prefix DIR] [configure options...]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/usr/local
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build
cd build
if [ ! -f Makefile ] || [ ${#args[@]} -gt 0 ]; then
  ../configure -q "${args[@]}"
fi
make -s -j"$(nproc 2>/dev/null || echo 2)"
