#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds starproj (CUDA codelets for sm_90) into .device/build and copies the shared libraries a bare GPU machine
# lacks (StarPU, hwloc, subunit, nifticlib, libpng) into .device/lib and the headers the Python binding is built with
# there (StarPU's, the CUDA headers starpu.h includes) into .device/include, so that .device can be copied to another
# GPU machine. With StarPU-MPI installed it also copies libstarpumpi and downloads Debian's OpenMPI packages into
# .device/debs, which `scripts/device-run.sh mpi` unpacks on a machine that has no MPI.
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
du -sh "$root/.device"
