# bench_recon.py: an OSEM reconstruction from Python with NumPy arrays and with CuPy arrays (on their GPU), timed.
"""Reconstructs the same noise-free data twice through the binding: once with every array a NumPy array in host
memory (StarPU copies what the GPUs need), once with the image, the LOR endpoints and the data CuPy arrays registered
where they live, on the GPU (through __dlpack__; the model's factors stay host arrays, as the C API takes them). Each
run is timed in phases: setup (arrays made and registered, objects created), the first iteration (which includes the
sensitivity images), the remaining iterations (each one done when Recon.iterate's callback runs), and the fetch of
the result into a NumPy array. Prints a markdown
table and the relative difference of the two results.

usage: python bench_recon.py [--scanner small|vision600] [--max-ring-difference N] [--subsets N] [--iterations N] [--devices cpu|gpu]
                             [--arrays numpy,cupy]
       The CuPy run is skipped (and says so) where CuPy or a StarPU CUDA worker is missing.
"""
import argparse
import time

import numpy as np

import starproj as sp

# the image of bench/bench_recon.c for each scanner: dimensions and voxel size (mm)
IMAGES = {"small": ((64, 64, 16), (2.5, 2.5, 2.0)), "vision600": ((215, 215, 71), (2.78, 2.78, 2.78))}


def phantom(dims, vs):
    """An elliptic cylinder of activity 1 with a hot sphere (4) and a cold one (0), in float32."""
    c = [(np.arange(d) - (d - 1) / 2) * v for d, v in zip(dims, vs)]
    x, y, z = np.meshgrid(*c, indexing="ij")
    a, b = 0.42 * dims[0] * vs[0], 0.32 * dims[1] * vs[1]
    img = ((x / a) ** 2 + (y / b) ** 2 < 1).astype(np.float32)
    img[(x - 0.4 * a) ** 2 + y ** 2 + z ** 2 < (0.15 * a) ** 2] = 4.0
    img[(x + 0.4 * a) ** 2 + y ** 2 + z ** 2 < (0.12 * a) ** 2] = 0.0
    return img


def make_data(scanner, xs, xe, dims, vs, origin):
    """y = m * A(phantom) + a, projected through the binding with host arrays; m and a as a scanner would have."""
    n = len(xs)
    mult = (0.5 + 0.5 * ((np.arange(n, dtype=np.uint64) * 2654435761) % 1000) / 1000.0).astype(np.float32)
    add = np.full(n, 0.01, np.float32)
    y = np.zeros(n, np.float32)
    with sp.Image(phantom(dims, vs), vs, origin) as P, sp.Lors(xs, xe) as L, sp.Proj(L, y) as Y:
        with scanner.chunks_views(L) as views:
            sp.fwd(P, Y, views)
            Y.sync()
    y *= mult
    y += add
    return y, mult, add


def reconstruct(xp, scanner, xs, xe, y, mult, add, dims, vs, origin, subsets, iterations):
    """One OSEM reconstruction with arrays of module xp (numpy or cupy); returns (result as NumPy, phase times)."""
    t = {}
    sync = (lambda: xp.cuda.runtime.deviceSynchronize()) if xp is not np else (lambda: None)
    t0 = time.perf_counter()
    x = xp.ones(dims, xp.float32)
    gxs, gxe, gy = xp.asarray(xs), xp.asarray(xe), xp.asarray(y)
    sync()
    objs = []
    try:
        X = sp.Image(x, vs, origin)
        objs.append(X)
        L = sp.Lors(gxs, gxe)
        objs.append(L)
        views = scanner.chunks_views(L)
        objs.append(views)
        Y = sp.Proj(L, gy)
        objs.append(Y)
        M = sp.Model(L, mult, add)
        objs.append(M)
        R = sp.Recon(X, M, views, data=Y, num_subsets=subsets)
        objs.append(R)
        where = "GPU %d" % X.gpu if X.gpu is not None else "host"
        # iterate() without a callback returns once the work is submitted; the callback runs after each iteration
        # is done (the image current in its array, where it lives), which times the iterations one by one
        ends = []
        t1 = time.perf_counter()
        R.iterate(iterations, callback=lambda progress: ends.append(time.perf_counter()))
        t2, t3 = ends[0], ends[-1]
        X.sync()
        result = x.get() if xp is not np else x.copy()
        t4 = time.perf_counter()
    finally:
        for o in reversed(objs):
            o.close()
    t["setup"], t["first"], t["rest"], t["fetch"], t["total"] = t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0
    return result, t, where


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scanner", choices=sorted(IMAGES), default="small")
    ap.add_argument("--max-ring-difference", type=int, help="fewer oblique planes than the preset (a smaller job)")
    ap.add_argument("--subsets", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--devices", choices=("cpu", "gpu"), default="cpu", help="who projects (default: CPU workers)")
    ap.add_argument("--arrays", default="numpy,cupy", help="which runs, in order (default numpy,cupy)")
    a = ap.parse_args()
    kinds = [k for k in a.arrays.split(",") if k]
    dims, vs = IMAGES[a.scanner]
    origin = tuple(-(d - 1) / 2 * v for d, v in zip(dims, vs))
    overrides = {} if a.max_ring_difference is None else {"max_ring_difference": a.max_ring_difference}
    scanner = sp.Scanner(a.scanner, **overrides)
    xs, xe = scanner.lors()
    with sp.Runtime(devices=a.devices):
        print("bench_recon.py: %s scanner, %d LORs, image %dx%dx%d, OSEM %d subsets x %d iterations; "
              "starproj %s, %d GPUs, %d CPU workers, scheduler %s" % (
                  a.scanner, len(xs), *dims, a.subsets, a.iterations, sp.version, sp.num_gpus(),
                  sp.num_cpu_workers(), sp.scheduler_name()))
        t0 = time.perf_counter()
        y, mult, add = make_data(scanner, xs, xe, dims, vs, origin)
        print("data (forward projection of the phantom): %.2f s" % (time.perf_counter() - t0))
        rows, results = [], {}
        for kind in kinds:
            if kind == "numpy":
                xp = np
            elif kind == "cupy":
                try:
                    import cupy as xp
                    if xp.cuda.runtime.getDeviceCount() < 1:
                        raise RuntimeError("no CUDA device")
                except Exception as e:  # ImportError, or CuPy without a usable CUDA runtime
                    print("cupy: skipped (%s)" % e)
                    continue
                if sp.num_gpus() < 1:
                    print("cupy: skipped (StarPU drives no CUDA worker here)")
                    continue
            else:
                raise SystemExit("bench_recon.py: unknown array kind %r" % kind)
            res, t, where = reconstruct(xp, scanner, xs, xe, y, mult, add, dims, vs, origin, a.subsets,
                                        a.iterations)
            results[kind] = res
            rows.append((kind, where, t))
    print()
    print("| arrays | image on | setup (s) | 1st iteration (s) | further iterations (s/it) | fetch (s) | total (s) |")
    print("|---|---|---|---|---|---|---|")
    for kind, where, t in rows:
        rest = t["rest"] / (a.iterations - 1) if a.iterations > 1 else float("nan")
        print("| %s | %s | %.3f | %.3f | %.3f | %.4f | %.3f |" % (
            kind, where, t["setup"], t["first"], rest, t["fetch"], t["total"]))
    for kind, res in results.items():
        if not np.isfinite(res).all():
            raise SystemExit("bench_recon.py: the %s result is not finite" % kind)
    if "numpy" in results and "cupy" in results:
        r, c = results["numpy"].astype(np.float64), results["cupy"].astype(np.float64)
        rel = np.linalg.norm(c - r) / np.linalg.norm(r)
        print("\nrelative difference cupy vs numpy: %.3e (L2), max |diff| / max %.3e" % (
            rel, np.abs(c - r).max() / np.abs(r).max()))


if __name__ == "__main__":
    main()
