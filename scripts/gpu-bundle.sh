#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Puts together, in one folder, what scripts/gpu-check.sh needs on a GPU machine that has Python, CuPy, torch and
# numpy but no network: the wheel of scripts/build-wheel.sh (copied as it is: the same file CI tests), the wheel of its
# one dependency beyond numpy (nvidia-cuda-runtime, from PyPI, of the version the machine's torch pins), and
# libparallelproj's Python module built with CUDA for that machine's Python (nanobind from PyPI; its library, the module
# and the CUDA runtime they link in DIR/parallelproj, run path $ORIGIN).
# Builds nothing of starproj: build the wheel first.
# usage: scripts/gpu-bundle.sh --python PY --with-parallelproj SRC [--wheel WHL] [--cuda-arch 90]
#                              [--runtime-version V] [--out DIR]
#   PY: an interpreter of the GPU machine's Python version (3.12 there: scripts/install-pythons.sh --list gives one),
#   with its headers; SRC: libparallelproj's source (a folder or a .tar.gz); WHL: default the one in build/wheel;
#   V: nvidia-cuda-runtime's version (default 13.0.96, the one torch 2.11.0 pins: the GPU machines' torch); DIR:
#   default build/gpu-bundle
set -euo pipefail
caller=$(pwd)
cd "$(dirname "$0")/.."
root=$PWD
python=
pp_src=
wheel=
arch=90
runtime=13.0.96
out=$root/build/gpu-bundle
die() { echo "gpu-bundle: $*" >&2; exit 2; }
abs() { case "$1" in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }
while [ $# -gt 0 ]; do
  case "$1" in
    --python) [ $# -ge 2 ] || die "--python needs a value"; python=$2; shift 2 ;;
    --with-parallelproj) [ $# -ge 2 ] || die "--with-parallelproj needs a value"; pp_src=$(abs "$2"); shift 2 ;;
    --wheel) [ $# -ge 2 ] || die "--wheel needs a value"; wheel=$(abs "$2"); shift 2 ;;
    --cuda-arch) [ $# -ge 2 ] || die "--cuda-arch needs a value"; arch=$2; shift 2 ;;
    --runtime-version) [ $# -ge 2 ] || die "--runtime-version needs a value"; runtime=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out=$(abs "$2"); shift 2 ;;
    -h|--help) sed -n '3,15p' "$0"; exit 0 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[ -n "$python" ] && [ -n "$pp_src" ] || die "--python and --with-parallelproj are needed (--help)"
command -v "$python" >/dev/null 2>&1 || die "no Python '$python'"
[ -e "$pp_src" ] || die "no libparallelproj source $pp_src"
if [ -z "$wheel" ]; then
  shopt -s nullglob
  wheels=(build/wheel/starproj-*.whl)
  shopt -u nullglob
  [ ${#wheels[@]} -eq 1 ] || die "expected one wheel in build/wheel, found ${#wheels[@]}: run scripts/build-wheel.sh"
  wheel=${wheels[0]}
fi
[ -f "$wheel" ] || die "no wheel $wheel"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || die "no nvcc"

rm -rf "$out"
mkdir -p "$out/parallelproj"
cp "$wheel" "$out/"
# the CUDA runtime's wheel the starproj wheel names (its Requires-Dist), for its major version
req=$(unzip -p "$wheel" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: \(nvidia-cuda-runtime[^;]*\).*/\1/p' | tr -d ' ')
[ -n "$req" ] || die "$(basename "$wheel") names no nvidia-cuda-runtime (a wheel without CUDA cannot use a GPU)"
[ -z "$runtime" ] || req="nvidia-cuda-runtime==$runtime"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# pip and nanobind in a venv of PY (an interpreter of install-pythons.sh has no pip of its own)
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$out" "$req"
echo "gpu-bundle: $(cd "$out" && ls -- *.whl | tr '\n' ' ')"

# libparallelproj with CUDA and its nanobind module, for this Python
mkdir -p "$work/src"
if [ -d "$pp_src" ]; then cp -a "$pp_src/." "$work/src/"; else tar -xzf "$pp_src" -C "$work/src" --strip-components=1; fi
# its CMakeLists asks for CMake 3.31; Debian 12's 3.25 builds it as well
sed -i 's/^cmake_minimum_required(VERSION 3\.3[1-9][^)]*)/cmake_minimum_required(VERSION 3.25)/' "$work/src/CMakeLists.txt"
"$work/venv/bin/pip" install -q --disable-pip-version-check nanobind
echo "gpu-bundle: building libparallelproj (CUDA, sm_$arch) and its module for $("$python" -V) (output in $out/build.log)"
(cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DUSE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DCMAKE_CUDA_COMPILER="$nvcc" -DBUILD_PYTHON=ON -DBUILD_TESTS=OFF \
  -DPython_EXECUTABLE="$work/venv/bin/python" -DCMAKE_BUILD_RPATH='$ORIGIN' -DCMAKE_INSTALL_RPATH='$ORIGIN' &&
  cmake --build "$work/build" -j "$(nproc 2>/dev/null || echo 2)") >"$out/build.log" 2>&1 ||
  { tail -n 30 "$out/build.log"; exit 1; }
module=$(find "$work/build" -name 'parallelproj_core*.so' | head -n 1)
[ -n "$module" ] || die "the build made no parallelproj_core module"
cp "$module" "$out/parallelproj/"
# its library, and the CUDA runtime that links (NVIDIA's licence lets it travel unmodified; where starproj or torch
# loaded a libcudart.so.13 first, the loader takes that one for this soname)
for lib in $(ldd "$module" | sed -n 's/.*=> \([^ ]*\(libparallelproj\|libcudart\)[^ ]*\) .*/\1/p'); do
  cp -L "$lib" "$out/parallelproj/"
done
# what the module needs beyond the base system must be here (ldd from the bundle, with the build tree gone)
rm -rf "$work/build"
if ldd "$out"/parallelproj/*.so* | grep -E 'not found|=> /usr/local/'; then
  die "the module needs a library the bundle lacks (above)"
fi
du -sh "$out"
ls -la "$out" "$out/parallelproj"
