# bench_calls.py: per-call overhead of the binding: separate forward calls of 7.6k-LOR chunks, Python vs fwd_calls.c.
"""Runs the same loop (every 7.6k-LOR chunk of the "small" scanner's sinogram projected by a separate forward call,
then the values synced to the host) through the binding and through the C program fwd_calls.c, in alternating
rounds so that the load of a shared machine hits both alike, and prints the time per LOR of each.

usage: python bench_calls.py [--rounds 5] [--reps 5] [--ncpu N] [--devices cpu|gpu] [--ngpu N] [--c-exe PATH]
       (without --c-exe, PKG_CONFIG_PATH must find starproj to build fwd_calls.c)
With --devices gpu the CUDA workers project (the arrays are NumPy arrays in host memory in both loops, so the
values cross to the GPU and back alike); the last line is the ratio of the binding's time per LOR to C's.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import tempfile
import time

import numpy as np

import starproj as sp

CHUNK_LORS = 7600
DIMS = (64, 64, 16)


def build_c(out):
    here = os.path.dirname(os.path.abspath(__file__))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "starproj"], check=True, capture_output=True,
                           text=True).stdout
    libdirs = [f[2:] for f in shlex.split(flags) if f.startswith("-L")]
    rpath = ["-Wl,-rpath," + d for d in libdirs]
    subprocess.run(["cc", "-O2", "-o", out, os.path.join(here, "fwd_calls.c"), *shlex.split(flags), *rpath],
                   check=True)


def run_c(exe, reps, ncpu, ngpu):
    res = subprocess.run([exe, str(reps), str(ncpu), str(ngpu)], check=True, capture_output=True, text=True)
    rows = [line.split() for line in res.stdout.splitlines()]
    checksum = float(res.stderr.split("checksum")[1].split()[0])
    return [(float(r[2]), float(r[3])) for r in rows], int(rows[0][0]) * int(rows[0][1]), checksum


def run_py(reps, ncpu, ngpu):
    sp.init(devices="gpu" if ngpu else "cpu", ncpu=ncpu, ngpu=ngpu)
    try:
        sc = sp.Scanner("small")
        xs, xe = sc.lors()
        n = len(xs)
        image = (1.0 + (np.arange(np.prod(DIMS)) % 7)).astype(np.float32).reshape(DIMS)
        origin = (-(DIMS[0] - 1) * 1.25, -(DIMS[1] - 1) * 1.25, -(DIMS[2] - 1) * 1.0)
        nchunks = n // CHUNK_LORS
        vals = np.zeros(n, np.float32)
        img = sp.Image(image, (2.5, 2.5, 2.0), origin)
        lors = sp.Lors(xs, xe)
        chunks = sp.Chunks.ranges(lors, [c * CHUNK_LORS for c in range(nchunks)], [CHUNK_LORS] * nchunks)
        proj = sp.Proj(lors, vals)
        fwd = sp.fwd
        times = []
        for r in range(-1, reps):
            t0 = time.perf_counter()
            for c in range(nchunks):
                fwd(img, proj, chunks, c)
            t1 = time.perf_counter()
            proj.sync()
            t2 = time.perf_counter()
            if r >= 0:
                times.append((t2 - t0, t1 - t0))
        return times, nchunks * CHUNK_LORS, float(vals[: nchunks * CHUNK_LORS].astype(np.float64).sum())
    finally:
        sp.shutdown()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ncpu", type=int, default=-1)
    ap.add_argument("--devices", choices=("cpu", "gpu"), default="cpu", help="who projects (default: CPU workers)")
    ap.add_argument("--ngpu", type=int, default=-1, help="CUDA workers with --devices gpu (default -1: every GPU)")
    ap.add_argument("--c-exe", help="fwd_calls built beforehand (default: built here through pkg-config)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exe = a.c_exe
        if not exe:
            exe = os.path.join(tmp, "fwd_calls")
            build_c(exe)
        ngpu = a.ngpu if a.devices == "gpu" else 0
        c_all, p_all = [], []
        for k in range(a.rounds):
            c, nl, c_sum = run_c(exe, a.reps, a.ncpu, ngpu)
            p, nl2, p_sum = run_py(a.reps, a.ncpu, ngpu)
            # both loops must have computed the same projection, or the times compare different work
            assert nl == nl2 and abs(c_sum - p_sum) <= 1e-6 * abs(c_sum), (c_sum, p_sum)
            c_all += c
            p_all += p
            print("round %d: C %.2f ns/LOR, Python %.2f ns/LOR" % (
                k, 1e9 * statistics.median(t for t, _ in c) / nl, 1e9 * statistics.median(t for t, _ in p) / nl))
    med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
    nchunks = nl // CHUNK_LORS
    print("devices %s; LORs per pass %d in %d separate calls of %d LORs; %d passes each" % (
        a.devices, nl, nchunks, CHUNK_LORS, len(c_all)))
    print("C:      %.3f ns/LOR (median), submission %.2f us/call" % (1e9 * med(c_all, 0) / nl,
                                                                    1e6 * med(c_all, 1) / nchunks))
    print("Python: %.3f ns/LOR (median), submission %.2f us/call" % (1e9 * med(p_all, 0) / nl,
                                                                    1e6 * med(p_all, 1) / nchunks))
    print("binding / C, time per LOR: %.4f (min over passes: %.4f)" % (
        med(p_all, 0) / med(c_all, 0), min(t for t, _ in p_all) / min(t for t, _ in c_all)))


if __name__ == "__main__":
    main()
