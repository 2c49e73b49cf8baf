#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds starproj and runs the demo. usage: scripts/demo.sh [--prefix DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh "$@"
bash scripts/build.sh "$@"
prefix=/usr/local
[ "${1:-}" = --prefix ] && prefix=$2
case "${1:-}" in --prefix=*) prefix=${1#--prefix=} ;; esac
# the tree's own libraries first: LD_LIBRARY_PATH outranks the programs' RUNPATH, and a starproj installed in the
# prefix (where StarPU is) would otherwise shadow the one just built
export LD_LIBRARY_PATH="$PWD/build/.libs:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec ./build/examples/demo
