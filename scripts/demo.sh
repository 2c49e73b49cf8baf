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
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec ./build/examples/demo
