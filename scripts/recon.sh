#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: installs what is missing, builds starproj, then simulates and reconstructs a phantom with
# starproj-recon on the small scanner (OSEM, every GPU and CPU core StarPU finds). Options after the prefix go to
# starproj-recon (see build/starproj-recon --help).
# usage: scripts/recon.sh [--prefix DIR] [starproj-recon options...]   (DIR: where StarPU goes, default /usr/local)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix_args=()
case "${1:-}" in
  --prefix) prefix_args=("$1" "$2"); shift 2 ;;
  --prefix=*) prefix_args=("$1"); shift ;;
esac
bash scripts/install-deps.sh "${prefix_args[@]}"
bash scripts/build.sh "${prefix_args[@]}"
prefix=/usr/local
[ "${prefix_args[0]:-}" = --prefix ] && prefix=${prefix_args[1]}
case "${prefix_args[0]:-}" in --prefix=*) prefix=${prefix_args[0]#--prefix=} ;; esac
# the tree's own libraries first: LD_LIBRARY_PATH outranks the programs' RUNPATH, and a starproj installed in the
# prefix (where StarPU is) would otherwise shadow the one just built
export LD_LIBRARY_PATH="$PWD/build/.libs:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec ./build/starproj-recon "$@"
