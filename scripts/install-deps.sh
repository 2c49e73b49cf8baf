#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what starproj needs on Debian 12: build tools, hwloc, Check, nifticlib, libpng, clang (fuzzing), cmake
# (consumer check), doxygen (`make doc`), graphviz (scripts/architecture.sh's figures) and OpenMPI (the distributed
# layer) from Debian, and StarPU 1.4 built from Debian's source package (with CUDA when nvcc is found, with StarPU-MPI
# unless --without-mpi); with --with-simgrid a second StarPU from the same source, built over SimGrid, for simulated
# machines, and with --with-smpi a third, static, with StarPU-MPI over SimGrid's SMPI, for simulated clusters.
# Re-running it with everything present is quick.
#
# usage: scripts/install-deps.sh [--prefix DIR] [--without-cuda] [--with-cuda=DIR] [--with-fxt] [--without-mpi]
#                                [--with-simgrid[=DIR]] [--with-smpi[=DIR]] [--jobs N]
#                                [--with-stir SRC [--with-parallelproj SRC] [--stir-prefix DIR]]
#   --prefix DIR   where StarPU goes (default /usr/local, which pkg-config and the loader search anyway)
#   --with-cuda=DIR / --without-cuda   build StarPU with the CUDA toolkit in DIR / without CUDA
#                  (default: with CUDA when nvcc is on PATH or in /usr/local/cuda)
#   --with-fxt     build StarPU with FxT execution traces (Debian's libfxt-dev; starproj-bench --trace), rebuilding
#                  a StarPU installed without them
#   --without-mpi  no OpenMPI and no StarPU-MPI (starproj then builds without its distributed layer)
#   --with-simgrid[=DIR]  also StarPU over SimGrid (Debian's libsimgrid-dev) in its own prefix DIR (default
#                  /usr/local/starpu-simgrid), never in --prefix: no kernel runs there, CUDA workers are simulated
#                  from performance models (configure --with-simgrid, doc/simulation.md); skipped when built
#   --with-smpi[=DIR]  also StarPU over SimGrid with StarPU-MPI over SMPI, static libraries only (SMPI gives each
#                  simulated rank its own copy of a program's globals, which it cannot do for shared libraries), in
#                  its own prefix DIR (default /usr/local/starpu-smpi), with starpu_smpirun (needs Debian's xsltproc);
#                  for bench_mpi on simulated nodes (scripts/test-smpi.sh, doc/simulation.md); skipped when built
#   --with-stir SRC  also STIR (for stir/, the "Starproj" projector pair), from a source folder or tarball, into
#                  --stir-prefix (default /usr/local/stir), with --with-parallelproj SRC its "Parallelproj" pair on a
#                  CPU build of libparallelproj; skipped when installed (scripts/install-stir.sh does it)
set -euo pipefail

prefix=/usr/local
cuda_dir=auto
fxt=no
mpi=yes
jobs=$(nproc 2>/dev/null || echo 2)
stir_args=()
simgrid_prefix=
smpi_prefix=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --without-cuda) cuda_dir=no; shift ;;
    --with-cuda=*) cuda_dir=${1#--with-cuda=}; shift ;;
    --with-fxt) fxt=yes; shift ;;
    --without-mpi) mpi=no; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    --with-stir|--with-parallelproj|--stir-prefix) stir_args+=("$1" "$2"); shift 2 ;;
    --with-simgrid) simgrid_prefix=/usr/local/starpu-simgrid; shift ;;
    --with-simgrid=*) simgrid_prefix=${1#--with-simgrid=}; shift ;;
    --with-smpi) smpi_prefix=/usr/local/starpu-smpi; shift ;;
    --with-smpi=*) smpi_prefix=${1#--with-smpi=}; shift ;;
    -h|--help) sed -n '3,28p' "$0"; exit 0 ;;
    *) echo "install-deps: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$prefix" 2>/dev/null || true
[ -d "$prefix" ] && prefix=$(cd "$prefix" && pwd)
if [ -n "$simgrid_prefix" ]; then
  case "$simgrid_prefix" in /*) ;; *) echo "install-deps: --with-simgrid needs an absolute folder" >&2; exit 2 ;; esac
  [ "${simgrid_prefix%/}" != "$prefix" ] || { echo "install-deps: --with-simgrid needs a prefix of its own, not $prefix" >&2; exit 2; }
fi
if [ -n "$smpi_prefix" ]; then
  case "$smpi_prefix" in /*) ;; *) echo "install-deps: --with-smpi needs an absolute folder" >&2; exit 2 ;; esac
  smpi_prefix=${smpi_prefix%/}
  [ "$smpi_prefix" != "$prefix" ] && [ "$smpi_prefix" != "${simgrid_prefix%/}" ] ||
    { echo "install-deps: --with-smpi needs a prefix of its own, not $smpi_prefix" >&2; exit 2; }
fi

# log, quiet (a step with its output in a log file), SUDO, and the Debian source and StarPU build steps
deps_name=install-deps
# shellcheck source=scripts/lib-deps.sh
source "$(dirname "$0")/lib-deps.sh"
[ ${#SUDO[@]} -eq 1 ] && [ "${SUDO[0]}" = false ] && log "not root and no sudo: install the Debian packages listed in $0 by hand"

if [ "$cuda_dir" = auto ]; then
  if command -v nvcc >/dev/null 2>&1; then
    cuda_dir=$(dirname "$(dirname "$(command -v nvcc)")")
  elif [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda_dir=/usr/local/cuda
  else
    cuda_dir=no
  fi
fi

# --- Debian packages: only what is missing -------------------------------------------------------------
packages=(build-essential autoconf automake libtool pkgconf check libhwloc-dev hwloc dpkg-dev ca-certificates
  clang libclang-rt-14-dev libnifti2-dev libpng-dev cmake doxygen gnuplot-nox python3-venv python3-dev graphviz)
[ "$fxt" = yes ] && packages+=(libfxt-dev)
[ "$mpi" = yes ] && packages+=(libopenmpi-dev openmpi-bin)
[ -n "$simgrid_prefix" ] && packages+=(libsimgrid-dev)
[ -n "$smpi_prefix" ] && packages+=(libsimgrid-dev xsltproc)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]} (output in $logfile)"
  quiet "${SUDO[@]}" apt-get update -q
  quiet env DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  log "Debian packages present"
fi

# --- STIR (--with-stir) ---------------------------------------------------------------------------------
if [ ${#stir_args[@]} -gt 0 ]; then
  printf '%s\n' "${stir_args[@]}" | grep -qx -- --with-stir || { log "--with-parallelproj/--stir-prefix need --with-stir"; exit 2; }
  bash "$(dirname "$0")/install-stir.sh" "${stir_args[@]/#--stir-prefix/--prefix}" --jobs "$jobs"
fi

# --- StarPU 1.4 -----------------------------------------------------------------------------------------
# whether the StarPU in $1 (normal, simgrid or smpi, $2) is built as this script would build it
starpu_ok() {
  local dir=$1 kind=$2 pc="$1/lib/pkgconfig"
  PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --exists 'starpu-1.4 >= 1.4.0' || return 1
  local cfg="$dir/include/starpu/1.4/starpu_config.h"
  [ -f "$cfg" ] || return 1
  if [ "$kind" = simgrid ] || [ "$kind" = smpi ]; then
    grep -q '^#define STARPU_SIMGRID 1' "$cfg" || return 1
    # the simulated machines have up to 8 GPUs, like the real builds' tables
    grep -q '^#define STARPU_MAXCUDADEVS 8' "$cfg" || return 1
    if [ "$kind" = smpi ]; then
      grep -q '^#define STARPU_USE_MPI 1' "$cfg" || return 1
      [ -f "$dir/lib/libstarpumpi-1.4.a" ] && [ -x "$dir/bin/starpu_smpirun" ] || return 1
      ! ls "$dir"/lib/libstarpu*.so >/dev/null 2>&1 || return 1
    fi
  else
    grep -q '^#define STARPU_SIMGRID 1' "$cfg" && return 1
    if [ "$cuda_dir" != no ]; then grep -q '^#define STARPU_USE_CUDA 1' "$cfg" || return 1; fi
    if [ "$fxt" = yes ]; then grep -q '^#define STARPU_USE_FXT 1' "$cfg" || return 1; fi
    if [ "$mpi" = yes ]; then
      PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --exists starpumpi-1.4 || return 1
    fi
  fi
  # StarPU sizes its worker tables at build time from the build machine's cores: ours must fit big hosts.
  local maxcpus
  maxcpus=$(sed -n 's/^#define STARPU_MAXCPUS \([0-9]*\)/\1/p' "$cfg")
  [ "${maxcpus:-0}" -ge 128 ] || return 1
  return 0
}

need_normal=yes
if starpu_ok "$prefix" normal; then
  log "StarPU 1.4 present in $prefix (CUDA: $cuda_dir, MPI: $mpi)"
  need_normal=no
fi
need_simgrid=no
if [ -n "$simgrid_prefix" ]; then
  if starpu_ok "$simgrid_prefix" simgrid; then
    log "StarPU 1.4 over SimGrid present in $simgrid_prefix"
  else
    need_simgrid=yes
  fi
fi
need_smpi=no
if [ -n "$smpi_prefix" ]; then
  if starpu_ok "$smpi_prefix" smpi; then
    log "StarPU 1.4 over SimGrid's SMPI (static, StarPU-MPI) present in $smpi_prefix"
  else
    need_smpi=yes
  fi
fi
[ "$need_normal" = yes ] || [ "$need_simgrid" = yes ] || [ "$need_smpi" = yes ] || exit 0

work=$(mktemp -d "${TMPDIR:-/tmp}/starproj-starpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
# the newest 1.4.x the configured suites carry (a later 1.5 would change the API)
deps_debian_sources starpu 1.4
deps_newest_source starpu 1.4
deps_fetch_source starpu "$newest_version" "$work"
srcdir=$fetched_srcdir
log "source: $srcdir"
# the SimGrid builds get untouched copies: the normal build leaves its objects in $srcdir
[ "$need_simgrid" = yes ] && cp -r "$srcdir" "$work/simgrid-src"
[ "$need_smpi" = yes ] && cp -r "$srcdir" "$work/smpi-src"

if [ "$need_normal" = yes ]; then
  log "building StarPU 1.4 from Debian's source package into $prefix (CUDA: $cuda_dir, MPI: $mpi)"
  cd "$srcdir"
  cuda_args=(--disable-cuda)
  if [ "$cuda_dir" != no ]; then
    starpu_patch_cuda13 "$srcdir"
    cuda_args=(--enable-cuda --with-cuda-dir="$cuda_dir")
    export PATH="$cuda_dir/bin:$PATH"
  fi
  mpi_args=(--disable-mpi)
  [ "$mpi" = yes ] && mpi_args=(--enable-mpi --disable-mpi-check --disable-mpi-master-slave)
  fxt_args=(--disable-fxt)
  [ "$fxt" = yes ] && fxt_args=(--with-fxt)
  log "configuring and building StarPU (FxT traces: $fxt, MPI: $mpi; about 2.5 minutes on 2 cores)"
  starpu_build_install "$prefix" "${cuda_args[@]}" "${mpi_args[@]}" "${fxt_args[@]}"
  case "$prefix" in /usr|/usr/local) "${SUDO[@]}" ldconfig ;; esac
  starpu_ok "$prefix" normal || { log "StarPU installed but not found by pkg-config in $prefix"; exit 1; }
  log "StarPU $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion starpu-1.4) installed in $prefix"
fi

if [ "$need_simgrid" = yes ]; then
  # A fresh copy of the source: the normal build above leaves its objects behind. With SimGrid, StarPU builds no
  # CUDA code (its configure refuses --enable-cuda there): CUDA workers are simulated from the performance models,
  # as many as the platform file lists, up to --enable-maxcudadev. No StarPU-MPI: over SimGrid's SMPI it must be a
  # static library linked into programs built with smpicc (doc/simulation.md).
  cd "$work/simgrid-src"
  log "building StarPU 1.4 over SimGrid ($(pkg-config --modversion simgrid 2>/dev/null || echo '?')) into $simgrid_prefix (about 4 minutes on 2 cores)"
  t0=$(date +%s)
  starpu_build_install "$simgrid_prefix" --enable-simgrid --disable-cuda --disable-mpi --disable-fxt --disable-static
  starpu_ok "$simgrid_prefix" simgrid || { log "StarPU over SimGrid installed but not found in $simgrid_prefix"; exit 1; }
  log "StarPU $(PKG_CONFIG_PATH="$simgrid_prefix/lib/pkgconfig" pkg-config --modversion starpu-1.4) over SimGrid installed in $simgrid_prefix ($(( $(date +%s) - t0 )) s); starproj: configure --with-simgrid=$simgrid_prefix"
fi

if [ "$need_smpi" = yes ]; then
  # StarPU's configure takes SimGrid's smpicc as the MPI compiler once SimGrid is enabled, and installs
  # starpu_smpirun, which builds each run's platform from a cluster file and the recorded node (doc/simulation.md).
  cd "$work/smpi-src"
  log "building StarPU 1.4 over SimGrid's SMPI ($(pkg-config --modversion simgrid 2>/dev/null || echo '?'), static, StarPU-MPI) into $smpi_prefix (about 3 to 7 minutes on 2 cores)"
  t0=$(date +%s)
  starpu_build_install "$smpi_prefix" --enable-simgrid --disable-cuda --enable-mpi --disable-mpi-check \
    --disable-mpi-master-slave --disable-fxt --disable-shared --enable-static
  starpu_ok "$smpi_prefix" smpi || { log "StarPU over SMPI installed but not found as built in $smpi_prefix"; exit 1; }
  log "StarPU $(PKG_CONFIG_PATH="$smpi_prefix/lib/pkgconfig" pkg-config --modversion starpu-1.4) over SMPI installed in $smpi_prefix ($(( $(date +%s) - t0 )) s); bench_mpi: scripts/test-smpi.sh"
fi
