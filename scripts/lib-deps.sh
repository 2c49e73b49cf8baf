# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# lib-deps.sh: what install-deps.sh and build-wheel.sh share, sourced by them (not a program of its own): a line per
# step with the full output in a log file, sudo where needed, source packages from the Debian suites that carry
# StarPU 1.4, and StarPU 1.4 configured, built and installed the way starproj needs it. The caller sets deps_name
# (the first word of its messages, also naming the log file) and jobs (make's -j) before sourcing, and runs under
# `set -euo pipefail`.

: "${deps_name:?lib-deps.sh: set deps_name before sourcing}" "${jobs:?lib-deps.sh: set jobs before sourcing}"
case "$jobs" in
  ''|*[!0-9]*|0) echo "$deps_name: --jobs needs a positive number, not '$jobs'" >&2; exit 2 ;;
esac

log() { printf '%s: %s\n' "$deps_name" "$*"; }
# apt's and the builds' full output goes here; the terminal gets a line per step
logfile=${TMPDIR:-/tmp}/starproj-$deps_name.log
: >"$logfile" 2>/dev/null || logfile=/dev/null
# runs a step quietly; on failure shows the end of the log and exits
quiet() {
  "$@" >>"$logfile" 2>&1 && return 0
  tail -n 40 "$logfile"
  log "failed: $* (full output in $logfile)"
  exit 1
}

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  SUDO=(false)
fi

# apt's options for the source steps below: empty, apt as the system configures it; deps_private_sources sets them
apt_opts=()

# deps_debian_sources PACKAGE MAJOR: makes the system's apt serve a source package of PACKAGE whose version starts
# with MAJOR (e.g. 1.4). Debian 12 carries StarPU 1.3 only; a later suite's source package carries 1.4 (only the
# newest of a suite is served), so this adds the source lists of trixie and sid (source packages only: nothing is
# installed from them) when no configured suite has one.
deps_debian_sources() {
  local package=$1 major=$2
  local list=/etc/apt/sources.list.d/starproj-starpu-src.sources
  # (grep reads all of apt-cache's output: with -q it would stop early, and pipefail would count apt-cache's broken
  # pipe as a failure)
  if ! apt-cache showsrc "$package" 2>/dev/null | grep "^Version: ${major//./\\.}\." >/dev/null; then
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: trixie sid\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      | "${SUDO[@]}" tee "$list" >/dev/null
    log "added $list (Debian source packages of trixie and sid, for $package $major's source)"
    quiet "${SUDO[@]}" apt-get update -q
  fi
}

# deps_private_sources DIR SUITE...: an apt configuration of its own in DIR, with the source lists of Debian's SUITEs
# only (no root, nothing changed in the system's configuration); the source steps below then use it
deps_private_sources() {
  local dir=$1 suite; shift
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/parts"
  : >"$dir/sources.list"
  for suite in "$@"; do
    printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s main\n' \
      "$suite" >>"$dir/sources.list"
  done
  apt_opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/parts"
    -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache")
  log "reading the source package lists of Debian $* (apt configuration in $dir)"
  quiet apt-get "${apt_opts[@]}" update -q
}

# deps_newest_source PACKAGE MAJOR: sets newest_version to the newest MAJOR.x version of source package PACKAGE that
# apt serves
deps_newest_source() {
  local package=$1 major=$2
  newest_version=$(apt-cache "${apt_opts[@]}" showsrc "$package" |
    sed -n "s/^Version: \(${major//./\\.}\.[^ ]*\)\$/\1/p" | sort -V | tail -n 1)
  [ -n "$newest_version" ] || { log "no $package $major source package is served"; exit 1; }
}

# deps_fetch_source PACKAGE VERSION DIR: unpacks the source package PACKAGE=VERSION into DIR (Debian's patches
# applied); sets fetched_srcdir (absolute)
deps_fetch_source() {
  local package=$1 version=$2 dir=$3
  log "fetching the source of $package $version"
  (cd "$dir" && quiet apt-get "${apt_opts[@]}" source -q "$package=$version")
  fetched_srcdir=$(find "$dir" -maxdepth 1 -type d -name "$package-${version%%[-+]*}*" | head -n 1)
  [ -n "$fetched_srcdir" ] || { log "apt-get source gave no $package $version source"; exit 1; }
  fetched_srcdir=$(cd "$fetched_srcdir" && pwd)
}

# starpu_patch_cuda13 SRCDIR: CUDA 13 removed cudaDeviceProp::computeMode; StarPU then reads it through
# cudaDeviceGetAttribute instead (a no-op for sources that no longer use the field)
starpu_patch_cuda13() {
  local f
  for f in "$1/src/drivers/cuda/driver_cuda.c" "$1/src/drivers/cuda/driver_cuda1.c"; do
    [ -f "$f" ] || continue
    if grep -q 'props\[devid\]\.computeMode' "$f"; then
      perl -0pi -e 's/if \(props\[devid\]\.computeMode == cudaComputeModeExclusive\)/int compute_mode = 0;\n\tcudaDeviceGetAttribute(&compute_mode, cudaDevAttrComputeMode, devid);\n\tif (compute_mode == cudaComputeModeExclusive)/g' "$f"
      grep -q 'props\[devid\]\.computeMode' "$f" && { log "could not patch $f"; exit 1; }
    fi
  done
  return 0
}

# starpu_build_install PREFIX [CONFIGURE ARGUMENTS...]: configures the StarPU source in the current folder with what
# starproj needs (no OpenCL, HIP, Fortran, documentation, examples or tests; worker tables for big hosts: StarPU
# sizes them at build time) plus the arguments given, builds it and installs it into PREFIX (through sudo where
# PREFIX is not writable)
starpu_build_install() {
  local dir=$1; shift
  quiet ./configure -q --prefix="$dir" \
    --disable-opencl --disable-hip --disable-build-doc --disable-build-examples --disable-build-tests \
    --disable-fortran --disable-socl --disable-starpufft --disable-glpk --disable-starpupy --disable-openmp \
    --enable-maxcpus=128 --enable-maxcudadev=8 --enable-maxnodes=16 "$@"
  quiet make -s -j"$jobs"
  log "installing StarPU into $dir"
  mkdir -p "$dir" 2>/dev/null || true
  if [ -w "$dir" ] && { [ ! -e "$dir/lib" ] || [ -w "$dir/lib" ]; }; then
    quiet make -s install
  else
    quiet "${SUDO[@]}" make -s install
  fi
}
