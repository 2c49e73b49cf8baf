# setup.py: builds the C extension starproj._core against the installed libstarproj found through pkg-config, or,
# where there is none, against the directories named by STARPROJ_INCLUDE_DIRS and STARPROJ_LIB_DIRS.
import os
import shlex
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup

PACKAGES = ["starproj", "starproj-io"]


def pkg_config(*args):
    """Runs pkg-config on the starproj packages; a clear message instead of a compiler error when it is missing."""
    try:
        out = subprocess.run(["pkg-config", *args, *PACKAGES], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", "") or str(e)
        raise SystemExit(
            "starproj: pkg-config could not find %s (set PKG_CONFIG_PATH to the library's lib/pkgconfig): %s"
            % (" ".join(PACKAGES), detail.strip())
        )
    return shlex.split(out)


def env_dirs(var):
    return [d for d in os.environ.get(var, "").split(os.pathsep) if d]


if os.environ.get("STARPROJ_INCLUDE_DIRS") or os.environ.get("STARPROJ_LIB_DIRS"):
    # no pkg-config (a machine with the library copied but not installed): the directories of starproj's and StarPU's
    # headers (and the CUDA headers starpu.h includes, if StarPU has CUDA) and of libstarproj, libstarproj-io and
    # libstarpu-1.4, each a list separated by os.pathsep
    cflags = []
    include_dirs = env_dirs("STARPROJ_INCLUDE_DIRS")
    library_dirs = env_dirs("STARPROJ_LIB_DIRS")
    libraries = os.environ.get("STARPROJ_LIBRARIES", "starproj starproj-io starpu-1.4").split()
else:
    cflags = pkg_config("--cflags")
    libs = pkg_config("--libs")
    include_dirs = [f[2:] for f in cflags if f.startswith("-I")]
    library_dirs = [f[2:] for f in libs if f.startswith("-L")]
    libraries = [f[2:] for f in libs if f.startswith("-l")]
# dlopen: the CUDA runtime StarPU loaded, for the stream handshake of DLPack (in libc itself since glibc 2.34)
if sys.platform.startswith("linux"):
    libraries.append("dl")
# an rpath to every library directory, so that `import starproj` works without LD_LIBRARY_PATH
rpath = [d for d in library_dirs if os.path.isdir(d)]

# CPython's limited API of 3.11 (the first with the buffer protocol in it): one extension, and one abi3 wheel, for
# CPython 3.11 and every later version. STARPROJ_FULL_API=1 builds on the full API instead: an extension for the
# building interpreter alone (python/README.md weighs the two).
limited = os.environ.get("STARPROJ_FULL_API", "").lower() not in ("1", "yes", "true", "on")
if limited and sysconfig.get_config_var("Py_GIL_DISABLED"):
    raise SystemExit("starproj: the limited API (abi3) is not available on a free-threaded CPython; build with "
                     "STARPROJ_FULL_API=1 (untested there)")
LIMITED_API = 0x030B0000

ext = Extension(
    "starproj._core",
    # one file a concern; binding.h is what they share
    sources=["src/" + f + ".c" for f in ("module", "errors", "arrays", "objects", "args", "image", "lors", "proj",
                                         "recon", "scanner", "parallelproj_core")],
    include_dirs=include_dirs + ["src"],
    library_dirs=library_dirs,
    libraries=libraries,
    runtime_library_dirs=rpath,
    define_macros=[("Py_LIMITED_API", hex(LIMITED_API))] if limited else [],
    py_limited_api=limited,
    # starpu.h pulls in CUDA headers whose deprecations are not ours to fix
    extra_compile_args=[f for f in cflags if not f.startswith("-I")]
    + ["-std=c11", "-Wall", "-Wno-missing-field-initializers", "-Wno-deprecated-declarations"],
)

# numpy is the only dependency of a build against installed libraries; scripts/build-wheel.sh adds, through
# STARPROJ_WHEEL_REQUIRES (requirements separated by spaces), the nvidia-cuda-runtime wheel whose libcudart the wheel's
# StarPU and libstarproj load
requires = ["numpy>=1.22"] + os.environ.get("STARPROJ_WHEEL_REQUIRES", "").split()

setup(ext_modules=[ext], install_requires=requires,
      options={"bdist_wheel": {"py_limited_api": "cp%d%d" % (LIMITED_API >> 24, (LIMITED_API >> 16) & 0xFF)}}
      if limited else {})
