#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build in build/ into a temporary directory and builds and runs two programs outside the tree against
# it: tests/consumers/cmake (find_package(starproj COMPONENTS io)) and tests/consumers/pkgconfig (pkg-config
# starproj); then runs the installed starproj-recon with the build tree moved away.
# usage: scripts/check-consumers.sh [--prefix DIR]   (DIR: where StarPU is, default /usr/local; builds first if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prefix=/usr/local
prefix_args=()
case "${1:-}" in
  --prefix) prefix=$2; prefix_args=(--prefix "$2") ;;
  --prefix=*) prefix=${1#--prefix=}; prefix_args=("$1") ;;
  "") ;;
  *) echo "check-consumers: unknown argument '$1'" >&2; exit 2 ;;
esac
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
log() { printf 'check-consumers: %s\n' "$*"; }

command -v cmake >/dev/null 2>&1 || { log "cmake not found: run scripts/install-deps.sh"; exit 1; }
[ -f build/Makefile ] || bash scripts/build.sh "${prefix_args[@]}"

work=$(mktemp -d "${TMPDIR:-/tmp}/starproj-consumers.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A staged install (DESTDIR) leaves build/ configured as it is; both consumers find the staged tree from where its
# files lie: CMake from the config file's own directory, pkg-config through --define-prefix.
make -C build -s install DESTDIR="$work/stage" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
pc=$(find "$work/stage" -name starproj.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || { log "make install put no starproj.pc in the staging tree"; exit 1; }
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
stage_prefix=$(dirname "$libdir")
export LD_LIBRARY_PATH="$libdir:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export STARPU_SILENT=1

log "CMake: find_package(starproj) from $stage_prefix"
cmake -S tests/consumers/cmake -B "$work/cmake" -DCMAKE_PREFIX_PATH="$stage_prefix" >"$work/cmake.log" 2>&1 \
  && cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; log "CMake consumer did not build"; exit 1; }
"$work/cmake/consumer"

log "pkg-config: starproj.pc in $pcdir"
mkdir -p "$work/pkgconfig"
PKG_CONFIG_PATH="$pcdir:$PKG_CONFIG_PATH" make -s -C "$work/pkgconfig" -f "$root/tests/consumers/pkgconfig/Makefile" \
  SRCDIR="$root/tests/consumers/pkgconfig" PKG_CONFIG="pkg-config --define-prefix" \
  || { log "pkg-config consumer did not build"; exit 1; }
"$work/pkgconfig/consumer"

# Installed programs run from where they are installed: make install relinked them, so they name no folder of the
# build tree, and they still run with the build tree moved away.
bin=$(find "$work/stage" -type f -name starproj-recon -path '*/bin/*' | head -n 1)
if [ -n "$bin" ]; then
  builddir=$(cd build && pwd)
  if readelf -d "$bin" | grep -E 'R(UN)?PATH' | grep -qF "$builddir"; then
    readelf -d "$bin" | grep -E 'R(UN)?PATH'
    log "the installed starproj-recon has a run path into the build tree"; exit 1
  fi
  moved="$root/build.moved-$$"
  mv build "$moved"
  trap 'mv "$moved" "$root/build" 2>/dev/null; rm -rf "$work"' EXIT
  if ! "$bin" --help >"$work/help.log" 2>&1; then
    mv "$moved" "$root/build"; cat "$work/help.log"; log "the installed starproj-recon --help failed with build/ moved away"; exit 1
  fi
  mv "$moved" "$root/build"
  trap 'rm -rf "$work"' EXIT
  log "installed starproj-recon runs with the build tree moved away ($(head -n 1 "$work/help.log" | cut -c1-60)...)"
else
  log "no starproj-recon installed (built without libstarproj-io): nothing to run"
fi
log "both consumers built and ran"
