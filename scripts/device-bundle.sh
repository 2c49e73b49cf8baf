#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds starproj (CUDA codelets for sm_90) into .device/build and copies the shared libraries a bare GPU machine
# lacks (StarPU, hwloc, subunit, nifticlib, libpng) into .device/lib and the headers the Python binding is built with
# there (StarPU's, the CUDA headers starpu.h includes) into .device/include, so that .device can be copied to another
# GPU machine. With StarPU-MPI installed it also copies libstarpumpi and downloads Debian's OpenMPI packages into
# .device/debs, which `scripts/device-run.sh mpi` unpacks on a machine that has no MPI.
# With --with-parallelproj SRC it also builds libparallelproj's CUDA library (sm_90) into .device/parallelproj/lib (with
# the CUDA runtime it links), which python/bench/bench_parallelproj_core.py and bench_tof --parallelproj drive as the
# reference on the GPU machine, and its OpenMP library into .device/parallelproj/omp (with the OpenMP runtime), which
# bench_cpu --parallelproj times on the GPU machine's cores.
# usage: scripts/device-bundle.sh [--prefix DIR] [--with-parallelproj SRC]
#   DIR: where install-deps.sh put StarPU, default /usr/local; SRC: libparallelproj's source, a folder or a .tar.gz
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
prefix=/usr/local
pp_src=
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --with-parallelproj) pp_src=$2; case "$pp_src" in /*) ;; *) pp_src=$caller/$pp_src ;; esac; shift 2 ;;
    *) echo "device-bundle.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
root=$PWD
mkdir -p .device/lib .device/build
for lib in "$prefix/lib/libstarpu-1.4.so.9" /usr/lib/x86_64-linux-gnu/libhwloc.so.15 \
           /usr/lib/x86_64-linux-gnu/libsubunit.so.0 /usr/lib/x86_64-linux-gnu/libniftiio.so.2 \
           /usr/lib/x86_64-linux-gnu/libznz.so.3 /usr/lib/x86_64-linux-gnu/libpng16.so.16; do
  cp -L "$lib" .device/lib/
done
if [ -f "$prefix/lib/libstarpumpi-1.4.so.3" ]; then
  cp -L "$prefix/lib/libstarpumpi-1.4.so.3" .device/lib/
  mkdir -p .device/debs
  if ! ls .device/debs/openmpi-bin_*.deb >/dev/null 2>&1; then
    (cd .device/debs && apt-get download -q openmpi-bin libopenmpi3 openmpi-common libpmix2 libevent-core-2.1-7 \
      libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libpsm2-2 libpsm-infinipath1 libnl-3-200 \
      libnl-route-3-200 libmunge2 libnuma1 libpciaccess0 openssh-client >/dev/null 2>&1) ||
      echo "device-bundle: could not download OpenMPI's packages (the mpi step will need an installed MPI)"
  fi
fi
# headers to build the Python binding on the GPU machine (scripts/device-run.sh python), which has no StarPU and maybe
# no CUDA toolkit: StarPU's, and those of the CUDA headers that starpu.h includes (the compiler's dependency list)
rm -rf .device/include
mkdir -p .device/include/starpu .device/include/cuda
cp -r "$prefix/include/starpu/1.4" .device/include/starpu/
cudainc=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --cflags-only-I starpu-1.4 |
  tr ' ' '\n' | sed -n 's/^-I//p' | grep -v '/starpu/' | head -n 1 || true)
if [ -n "$cudainc" ]; then
  echo '#include <starpu.h>' | cc -M -x c - -I"$prefix/include/starpu/1.4" -I"$cudainc" | tr ' \\' '\n\n' |
    grep "^$cudainc/" | sort -u | while read -r h; do
      rel=${h#"$cudainc"/}
      mkdir -p ".device/include/cuda/$(dirname "$rel")"
      cp -L "$h" ".device/include/cuda/$rel"
    done
fi
[ -x configure ] || ./autogen.sh >/dev/null
cd .device/build
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[ -f Makefile ] || "$root/configure" -q --with-cuda-arch=90
make -s -j"$(nproc)"
make -s -j"$(nproc)" check TESTS= >/dev/null
# libparallelproj with CUDA, for the parallelproj module's benchmark (its library only: its nanobind module needs
# Python 3.12's headers, which a Debian 12 machine does not have; the benchmark calls the library through ctypes)
if [ -n "$pp_src" ]; then
  pp=$root/.device/parallelproj
  mkdir -p "$pp/src" "$pp/lib"
  if [ ! -f "$pp/lib/libparallelproj.so.2" ]; then
    rm -rf "$pp/src" "$pp/build" && mkdir -p "$pp/src"
    if [ -d "$pp_src" ]; then cp -a "$pp_src/." "$pp/src/"; else tar -xzf "$pp_src" -C "$pp/src" --strip-components=1; fi
    sed -i 's/^cmake_minimum_required(VERSION 3\.3[1-9][^)]*)/cmake_minimum_required(VERSION 3.25)/' "$pp/src/CMakeLists.txt"
    (cmake -S "$pp/src" -B "$pp/build" -DCMAKE_BUILD_TYPE=Release -DUSE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DCMAKE_CUDA_COMPILER="${NVCC:-/usr/local/cuda/bin/nvcc}" -DBUILD_PYTHON=OFF -DBUILD_TESTS=OFF \
      -DCMAKE_BUILD_RPATH='$ORIGIN' && cmake --build "$pp/build" -j "$(nproc)") >"$pp/build.log" 2>&1 ||
      { tail -n 30 "$pp/build.log"; exit 1; }
    cp -L "$pp/build/libparallelproj.so.2" "$pp/lib/"
    cudart=$(ldd "$pp/lib/libparallelproj.so.2" | sed -n 's/.*libcudart[^ ]* => \([^ ]*\).*/\1/p' | head -n 1)
    [ -n "$cudart" ] && cp -L "$cudart" "$pp/lib/"
    rm -rf "$pp/src" "$pp/build"
  fi
  if [ ! -f "$pp/omp/libparallelproj.so.2" ]; then
    rm -rf "$pp/src" "$pp/build-omp" && mkdir -p "$pp/src" "$pp/omp"
    if [ -d "$pp_src" ]; then cp -a "$pp_src/." "$pp/src/"; else tar -xzf "$pp_src" -C "$pp/src" --strip-components=1; fi
    sed -i 's/^cmake_minimum_required(VERSION 3\.3[1-9][^)]*)/cmake_minimum_required(VERSION 3.25)/' "$pp/src/CMakeLists.txt"
    (cmake -S "$pp/src" -B "$pp/build-omp" -DCMAKE_BUILD_TYPE=Release -DUSE_CUDA=OFF -DBUILD_PYTHON=OFF \
      -DBUILD_TESTS=OFF -DCMAKE_BUILD_RPATH='$ORIGIN' && cmake --build "$pp/build-omp" -j "$(nproc)") \
      >"$pp/build-omp.log" 2>&1 || { tail -n 30 "$pp/build-omp.log"; exit 1; }
    cp -L "$pp/build-omp/libparallelproj.so.2" "$pp/omp/"
    gomp=$(ldd "$pp/omp/libparallelproj.so.2" | sed -n 's/.*libgomp[^ ]* => \([^ ]*\).*/\1/p' | head -n 1)
    [ -n "$gomp" ] && cp -L "$gomp" "$pp/omp/"
    rm -rf "$pp/src" "$pp/build-omp"
  fi
fi
du -sh "$root/.device"
