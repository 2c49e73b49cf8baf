#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and installs STIR (its libraries, static or shared, and the few programs the tests use) for the "Starproj" projector pair in stir/, with STIR's own
# "Parallelproj" projector pair on a CPU (OpenMP) build of libparallelproj, so that the two pairs can be compared.
# Sources are a source tree or a tarball given on the command line; nothing is downloaded. Skips when the prefix
# already holds a STIR (and, when asked for, a libparallelproj). Called by install-deps.sh --with-stir.
#
# usage: scripts/install-stir.sh --with-stir SRC [--with-parallelproj SRC] [--prefix DIR] [--jobs N] [--shared]
#   --with-stir SRC          STIR's source: a folder or a .tar.gz (top folder STIR/)
#   --shared                 STIR's libraries as shared libraries (BUILD_SHARED_LIBS), so that STIR's own programs
#                            share one registry of classes with a plug-in library loaded at start (stir/: doc/stir.md);
#                            a prefix holding the other kind of build is rebuilt
#   --with-parallelproj SRC  libparallelproj's source: a folder or a .tar.gz; built without CUDA and installed first
#   --prefix DIR             where both go (default /usr/local/stir)
#   --jobs N                 parallel build jobs (default: the number of cores)
# The full output of the builds goes to ${TMPDIR:-/tmp}/starproj-install-stir.log.
set -euo pipefail

stir_src=
pp_src=
prefix=/usr/local/stir
jobs=$(nproc 2>/dev/null || echo 2)
shared=no
while [ $# -gt 0 ]; do
  case "$1" in
    --with-stir) stir_src=$2; shift 2 ;;
    --with-stir=*) stir_src=${1#--with-stir=}; shift ;;
    --with-parallelproj) pp_src=$2; shift 2 ;;
    --with-parallelproj=*) pp_src=${1#--with-parallelproj=}; shift ;;
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    --shared) shared=yes; shift ;;
    -h|--help) sed -n '3,17p' "$0"; exit 0 ;;
    *) echo "install-stir: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$stir_src" ] || { echo "install-stir: --with-stir SRC is required" >&2; exit 2; }

log() { printf 'install-stir: %s\n' "$*"; }
logfile=${TMPDIR:-/tmp}/starproj-install-stir.log
: >"$logfile" 2>/dev/null || logfile=/dev/null
quiet() {
  "$@" >>"$logfile" 2>&1 && return 0
  tail -n 40 "$logfile"
  log "failed: $* (full output in $logfile)"
  exit 1
}
abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$(pwd)" "$1" ;; esac; }
stir_src=$(abspath "$stir_src")
[ -n "$pp_src" ] && pp_src=$(abspath "$pp_src")
prefix=$(abspath "$prefix")
# a source that is not there is named here, before anything else runs (also when STIR is installed already)
for src in "$stir_src" ${pp_src:+"$pp_src"}; do
  [ -d "$src" ] || [ -f "$src" ] || { log "no such source: $src (a source folder or a .tar.gz)" >&2; exit 1; }
done

# Only what starproj's stir/ needs: STIR's libraries, headers and CMake package (BUILD_EXECUTABLES=OFF), then the
# few STIR programs its tests run, built in the same tree and copied into bin/ (all of STIR's ~120 programs would
# take as long again as the libraries on a small machine).
programs=(OSMAPOSL OSSPS forward_project back_project lm_to_projdata generate_image list_projdata_info compare_image
  compare_projdata)

if [ "$(id -u)" -eq 0 ]; then SUDO=(); elif command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else SUDO=(false); fi

stir_ok() {
  compgen -G "$prefix/lib/cmake/STIR-*/STIRConfig.cmake" >/dev/null || return 1
  local p
  for p in "${programs[@]}"; do [ -x "$prefix/bin/$p" ] || return 1; done
  # the kind of build asked for: STIR's main library (target stir_buildblock, which holds buildblock and
  # recon_buildblock) shared or static, as STIR's CMake package imports it (a library of the other kind may be left
  # in lib/ from an earlier build)
  local lib=libstir_buildblock.a
  [ "$shared" = yes ] && lib=libstir_buildblock.so
  grep -qs "/$lib" "$prefix"/lib/cmake/STIR-*/STIRTargets-*.cmake || return 1
  [ -e "$prefix/lib/$lib" ] || return 1
  if [ -n "$pp_src" ]; then
    compgen -G "$prefix/lib*/cmake/parallelproj/*onfig.cmake" >/dev/null || return 1
    # STIR found parallelproj when it was configured (its "Parallelproj" pair is then in the library)
    grep -rqs 'parallelproj' "$prefix"/lib/cmake/STIR-*/ || return 1
  fi
  return 0
}
if stir_ok; then
  log "STIR present in $prefix ($([ "$shared" = yes ] && echo shared || echo static) libraries)"
  exit 0
fi

# Debian packages STIR needs beyond a C++ tool chain and CMake
missing=()
for p in build-essential cmake libboost-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  quiet "${SUDO[@]}" apt-get update -q
  quiet env DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/starproj-stir.XXXXXX")
trap 'rm -rf "$work"' EXIT
# unpacks a tarball into the work folder, or uses a folder as it is; prints the source folder
source_dir() {
  local src=$1 name=$2
  if [ -d "$src" ]; then printf '%s\n' "$src"; return; fi
  [ -f "$src" ] || { log "no such source: $src" >&2; exit 1; }
  mkdir -p "$work/$name"
  tar -xzf "$src" -C "$work/$name"
  local top
  top=$(find "$work/$name" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  printf '%s\n' "$top"
}

mkdir -p "$prefix" 2>/dev/null || "${SUDO[@]}" mkdir -p "$prefix"
as_owner=()
[ -w "$prefix" ] || as_owner=("${SUDO[@]}")
start=$(date +%s)

pp_args=()
if [ -n "$pp_src" ]; then
  pp_dir=$(source_dir "$pp_src" parallelproj)
  # libparallelproj asks for CMake 3.31 but builds with Debian 12's 3.25: lower the minimum in a copy
  if [ "$pp_dir" = "$pp_src" ]; then cp -a "$pp_src" "$work/parallelproj-copy"; pp_dir=$work/parallelproj-copy; fi
  sed -i 's/^cmake_minimum_required(VERSION 3\.3[1-9][^)]*)/cmake_minimum_required(VERSION 3.25)/' "$pp_dir/CMakeLists.txt"
  log "building libparallelproj (CPU, OpenMP) into $prefix"
  quiet cmake -S "$pp_dir" -B "$work/pp-build" -DCMAKE_BUILD_TYPE=Release -DUSE_CUDA=OFF -DBUILD_PYTHON=OFF \
    -DBUILD_TESTS=OFF -DBUILD_DOCS=OFF -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib
  quiet cmake --build "$work/pp-build" -j "$jobs"
  quiet "${as_owner[@]}" cmake --install "$work/pp-build"
  pp_cfg=$(dirname "$(compgen -G "$prefix/lib*/cmake/parallelproj/*onfig.cmake" | head -n 1)")
  pp_args=(-Dparallelproj_DIR="$pp_cfg")
else
  pp_args=(-DDISABLE_Parallelproj_PROJECTOR=ON)
fi

stir_dir=$(source_dir "$stir_src" stir)
stir_cmake() {
  quiet cmake -S "$stir_dir" -B "$work/stir-build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_INSTALL_RPATH="$prefix/lib" -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
    -DDISABLE_ITK=ON -DDISABLE_HDF5=ON -DDISABLE_CERN_ROOT=ON -DDISABLE_LLN_MATRIX=ON \
    -DDISABLE_NiftyPET_PROJECTOR=ON -DDISABLE_STIR_CUDA=ON -DDISABLE_PETSIRD=ON -DDISABLE_UPENN=ON \
    -DDISABLE_NLOHMANN_JSON=ON -DBUILD_TESTING=OFF -DBUILD_DOCUMENTATION=OFF -DBUILD_SWIG_PYTHON=OFF \
    -DGIT_SUBMODULE=OFF -DBUILD_SHARED_LIBS="$([ "$shared" = yes ] && echo ON || echo OFF)" "${pp_args[@]}" "$@"
}
log "configuring STIR (output in $logfile)"
stir_cmake -DBUILD_EXECUTABLES=OFF
log "building STIR's libraries with $jobs jobs (about 18 CPU-minutes)"
quiet cmake --build "$work/stir-build" -j "$jobs"
log "installing STIR's libraries into $prefix"
quiet "${as_owner[@]}" cmake --install "$work/stir-build"
log "building STIR's programs ${programs[*]}"
stir_cmake -DBUILD_EXECUTABLES=ON
quiet cmake --build "$work/stir-build" -j "$jobs" --target "${programs[@]}"
for p in "${programs[@]}"; do
  exe=$(find "$work/stir-build/src" -type f -name "$p" -perm -u+x | head -n 1)
  [ -n "$exe" ] || { log "built no $p"; exit 1; }
  quiet "${as_owner[@]}" install -D -m 755 "$exe" "$prefix/bin/$p"
done
stir_ok || { log "STIR installed but not complete in $prefix (see $logfile)"; exit 1; }
log "STIR installed in $prefix in $(( ($(date +%s) - start) / 60 )) min"
