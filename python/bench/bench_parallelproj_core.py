# bench_parallelproj_core.py: the six parallelproj_core calls with CuPy arrays, starproj's module against libparallelproj.
"""Times joseph3d_fwd, joseph3d_back, joseph3d_tof_sino_fwd, joseph3d_tof_sino_back, joseph3d_tof_lm_fwd and
joseph3d_tof_lm_back with CuPy arrays on one GPU, through starproj.parallelproj_core and through libparallelproj: its
Python module parallelproj_core when it can be imported (--pp-module-dir), else its CUDA library called through
ctypes with the arrays' device pointers (--pp-lib; the same C calls its nanobind module makes). Two request shapes:
one call on all LORs, and the same LORs in --chunks calls of equal size (views of the same arrays, as code that
projects a large set chunk by chunk makes them). Each timing is the median of --reps runs after one warm-up, from the
first call to the GPU being idle; per LOR (or event) in nanoseconds. Before timing, each call's result is compared
between the two (relative to the largest value), so that the table compares the same work.

usage: python bench_parallelproj_core.py [--pp-lib libparallelproj.so.2 | --pp-module-dir DIR] [--lors 20000000]
       [--chunks 100] [--reps 5] [--tof-bins 29] [--dims 215 215 71]
"""
import argparse
import ctypes
import importlib
import statistics
import sys
import time

import numpy as np

import starproj as sp
import starproj.parallelproj_core as ppc

CALLS = ("joseph3d_fwd", "joseph3d_back", "joseph3d_tof_sino_fwd", "joseph3d_tof_sino_back", "joseph3d_tof_lm_fwd",
         "joseph3d_tof_lm_back")


class CtypesParallelproj:
    """libparallelproj's C calls behind the Python module's argument lists, for CuPy arrays (device pointers)."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        P, S, I, F, C = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_float, ctypes.c_ubyte
        plain = [P, P, P, P, P, P, S, P, I, I]
        sino = [P, P, P, P, P, P, S, P, F, P, P, F, ctypes.c_short, C, C, I, I]
        lm = [P, P, P, P, P, P, S, P, F, P, P, F, P, ctypes.c_short, C, C, I, I]
        for name, types in (("joseph3d_fwd", plain), ("joseph3d_back", plain), ("joseph3d_tof_sino_fwd", sino),
                            ("joseph3d_tof_sino_back", sino), ("joseph3d_tof_lm_fwd", lm), ("joseph3d_tof_lm_back", lm)):
            getattr(self.lib, name).argtypes = types
            getattr(self.lib, name).restype = None
        self.lib.parallelproj_version.restype = ctypes.c_char_p
        self.__version__ = self.lib.parallelproj_version().decode()
        self.cuda_enabled = self.lib.parallelproj_cuda_enabled()

    @staticmethod
    def _p(a):
        return ctypes.c_void_p(a.data.ptr)

    @staticmethod
    def _dims(img):
        return (ctypes.c_int * 3)(*img.shape)

    def joseph3d_fwd(self, xs, xe, img, origin, vs, y, device_id=0, threads_per_block=64):
        p = self._p
        self.lib.joseph3d_fwd(p(xs), p(xe), p(img), p(origin), p(vs), p(y), xs.size // 3, self._dims(img), device_id,
                              threads_per_block)

    def joseph3d_back(self, xs, xe, img, origin, vs, y, device_id=0, threads_per_block=64):
        p = self._p
        self.lib.joseph3d_back(p(xs), p(xe), p(img), p(origin), p(vs), p(y), xs.size // 3, self._dims(img),
                               device_id, threads_per_block)

    def _sino(self, fn, xs, xe, img, origin, vs, y, width, sigma, off, nbins, num_sigmas=3.0, device_id=0,
              threads_per_block=64):
        p = self._p
        fn(p(xs), p(xe), p(img), p(origin), p(vs), p(y), xs.size // 3, self._dims(img), width, p(sigma), p(off),
           num_sigmas, nbins, int(sigma.size > 1), int(off.size > 1), device_id, threads_per_block)

    def joseph3d_tof_sino_fwd(self, *a, **k):
        self._sino(self.lib.joseph3d_tof_sino_fwd, *a, **k)

    def joseph3d_tof_sino_back(self, *a, **k):
        self._sino(self.lib.joseph3d_tof_sino_back, *a, **k)

    def _lm(self, fn, xs, xe, img, origin, vs, y, width, sigma, off, bins, nbins, num_sigmas=3.0, device_id=0,
            threads_per_block=64):
        p = self._p
        fn(p(xs), p(xe), p(img), p(origin), p(vs), p(y), xs.size // 3, self._dims(img), width, p(sigma), p(off),
           num_sigmas, p(bins), nbins, int(sigma.size > 1), int(off.size > 1), device_id, threads_per_block)

    def joseph3d_tof_lm_fwd(self, *a, **k):
        self._lm(self.lib.joseph3d_tof_lm_fwd, *a, **k)

    def joseph3d_tof_lm_back(self, *a, **k):
        self._lm(self.lib.joseph3d_tof_lm_back, *a, **k)


def reference(a):
    if a.pp_module_dir:
        sys.path.insert(0, a.pp_module_dir)
        return importlib.import_module("parallelproj_core"), "libparallelproj's parallelproj_core"
    if a.pp_lib:
        return CtypesParallelproj(a.pp_lib), "libparallelproj's CUDA library through ctypes"
    return None, "none (--pp-lib or --pp-module-dir not given)"


def scene(cp, n, dims, nbins):
    """Random LORs through a cylinder around the image (a scanner's LORs, in no particular order), the image, and TOF
    parameters with sigma per LOR (as a scanner with depth-dependent resolution gives them)."""
    rng = np.random.default_rng(1)
    vs = np.full(3, 2.78, np.float32)
    origin = (-(np.array(dims) - 1) / 2 * vs).astype(np.float32)
    radius = 0.6 * float(np.linalg.norm(np.array(dims[:2]) * vs[:2]))
    half_z = dims[2] * vs[2] / 2
    phi1, phi2 = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 2 * np.pi, n)
    xs = np.stack([radius * np.cos(phi1), radius * np.sin(phi1), rng.uniform(-half_z, half_z, n)], 1)
    xe = np.stack([radius * np.cos(phi2), radius * np.sin(phi2), rng.uniform(-half_z, half_z, n)], 1)
    image = rng.uniform(0.5, 1.5, dims).astype(np.float32)
    width = 0.9 * 2 * radius / nbins
    g = {
        "xs": cp.asarray(xs.astype(np.float32)), "xe": cp.asarray(xe.astype(np.float32)), "image": cp.asarray(image),
        "origin": cp.asarray(origin), "vs": cp.asarray(vs),
        "sigma": cp.asarray(rng.uniform(0.8, 1.2, n).astype(np.float32) * np.float32(width)),
        "offset": cp.zeros(1, cp.float32), "bins": cp.asarray(rng.integers(0, nbins, n).astype(np.int16)),
        "width": float(width), "nbins": nbins,
    }
    return g


def call_args(name, g, lo, hi, y, img):
    """The arguments of call `name` on LORs lo .. hi-1 (views), writing or reading y, with image img."""
    xs, xe, o, vs = g["xs"][lo:hi], g["xe"][lo:hi], g["origin"], g["vs"]
    if name in ("joseph3d_fwd", "joseph3d_back"):
        return (xs, xe, img, o, vs, y[lo:hi])
    if "sino" in name:
        return (xs, xe, img, o, vs, y[lo:hi], g["width"], g["sigma"][lo:hi], g["offset"], g["nbins"])
    return (xs, xe, img, o, vs, y[lo:hi], g["width"], g["sigma"][lo:hi], g["offset"], g["bins"][lo:hi], g["nbins"])


def outputs(cp, name, g, n):
    """The values a back call reads (random) or a forward call writes, and the image it reads or adds into."""
    if "back" in name:
        shape = (n, g["nbins"]) if "sino" in name else (n,)
        return cp.random.uniform(0.5, 1.5, shape, dtype=cp.float32), cp.zeros(g["image"].shape, cp.float32)
    return cp.zeros((n, g["nbins"]) if "sino" in name else n, cp.float32), g["image"]


def run(cp, module, name, g, n, chunks, reps, y, img):
    """Seconds (median of reps, after a warm-up) of the call on all LORs in `chunks` calls, and a copy of its
    output."""
    bounds = np.linspace(0, n, chunks + 1).astype(np.int64)
    fn = getattr(module, name)
    times = []
    for r in range(reps + 1):
        if "back" in name:
            img[...] = 0
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for c in range(chunks):
            fn(*call_args(name, g, int(bounds[c]), int(bounds[c + 1]), y, img))
        cp.cuda.Device().synchronize()
        if r > 0:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), (img if "back" in name else y).copy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pp-lib", help="libparallelproj.so.2 built with CUDA")
    ap.add_argument("--pp-module-dir", help="folder holding libparallelproj's parallelproj_core module (CUDA build)")
    ap.add_argument("--lors", type=int, default=20_000_000)
    ap.add_argument("--chunks", type=int, default=100)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tof-bins", type=int, default=29)
    ap.add_argument("--dims", type=int, nargs=3, default=(215, 215, 71))
    a = ap.parse_args()
    import cupy as cp

    ref, ref_name = reference(a)
    sp.init()  # what the module would start on its first call: every GPU, and the CPU cores they leave
    print("GPU: %s; starproj %s, %d GPU(s) driven; reference: %s%s" % (
        cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), ppc.__version__, sp.num_gpus(), ref_name,
        " %s" % ref.__version__ if ref is not None else ""))
    g = scene(cp, a.lors, tuple(a.dims), a.tof_bins)
    n = a.lors
    print("%d LORs (events), image %s, %d TOF bins, sigma per LOR; one request, and %d requests of %d" % (
        n, "x".join(map(str, a.dims)), a.tof_bins, a.chunks, n // a.chunks))
    print("| call | requests | parallelproj ns/LOR | starproj ns/LOR | starproj / parallelproj | max rel. difference |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in CALLS:
        y, img = outputs(cp, name, g, n)
        for chunks in (1, a.chunks):
            t_sp, out_sp = run(cp, ppc, name, g, n, chunks, a.reps, y, img)
            if ref is not None:
                t_pp, out_pp = run(cp, ref, name, g, n, chunks, a.reps, y, img)
                diff = float(cp.abs(out_sp - out_pp).max() / cp.abs(out_pp).max())
                print("| %s | %d | %.3f | %.3f | %.3f | %.1e |" % (name, chunks, 1e9 * t_pp / n, 1e9 * t_sp / n,
                                                                   t_sp / t_pp, diff))
            else:
                print("| %s | %d | - | %.3f | - | - |" % (name, chunks, 1e9 * t_sp / n))
            sys.stdout.flush()
    sp.shutdown()


if __name__ == "__main__":
    main()
