# bench_pp_calls.py: per-call cost of starproj.parallelproj_core's calls against the same one-shot calls from C.
"""Times each of starproj.parallelproj_core's six calls, made many times in a row on a small input (an 8^3 image,
4 LORs by default), against the same calls from C (pp_calls.c, starproj_parallelproj.h's sproj_pp_joseph3d_*), in
alternating rounds so that the load of a shared machine hits both alike. A call registers its arrays, projects,
waits and unregisters; on so small an input what is timed is that, plus what the Python module adds (arguments,
taking the arrays, the device setting).

usage: python bench_pp_calls.py [--rounds 5] [--calls 500] [--reps 5] [--ncpu N] [--lors 4] [--c-exe PATH]
       (without --c-exe, PKG_CONFIG_PATH must find starproj to build pp_calls.c)
Prints a table: per call, microseconds per call through C and through Python (median and minimum over passes), their
ratios, and the CPU time of the calling thread per call (median) of both.
"""
import argparse
import collections
import os
import shlex
import statistics
import subprocess
import tempfile
import time

import numpy as np

import starproj as sp
import starproj.parallelproj_core as ppc

CALLS = ("joseph3d_fwd", "joseph3d_back", "joseph3d_tof_sino_fwd", "joseph3d_tof_sino_back", "joseph3d_tof_lm_fwd",
         "joseph3d_tof_lm_back")
DIM, TOF_BINS = 8, 5


def build_c(out):
    here = os.path.dirname(os.path.abspath(__file__))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "starproj"], check=True, capture_output=True,
                           text=True).stdout
    rpath = ["-Wl,-rpath," + f[2:] for f in shlex.split(flags) if f.startswith("-L")]
    subprocess.run(["cc", "-O2", "-Wall", "-o", out, os.path.join(here, "pp_calls.c"), *shlex.split(flags), *rpath],
                   check=True)


def run_c(exe, calls, reps, ncpu, nlors):
    out = subprocess.run([exe, str(calls), str(reps), str(ncpu), str(nlors)], check=True, capture_output=True,
                         text=True).stdout
    times = collections.defaultdict(list)
    for line in out.splitlines():
        name, n, total, cpu = line.split()
        times[name].append((float(total) / int(n), float(cpu) / int(n)))
    return times


def run_py(calls, reps, ncpu, n):
    """The same input as pp_calls.c, the same runtime (CPU workers), the calls positionally."""
    times = collections.defaultdict(list)
    sp.init(ncpu=ncpu, ngpu=0)
    try:
        image = (1.0 + (np.arange(DIM ** 3) % 7)).astype(np.float32).reshape(DIM, DIM, DIM)
        i = np.arange(n)
        y = (-3.0 + 6.0 * (i % 4) / 3.0).astype(np.float32)
        z = (1.0 - 0.5 * (i % 5)).astype(np.float32)
        xs = np.stack([np.full(n, -20.0, np.float32), y, z], axis=1).astype(np.float32)
        xe = np.stack([np.full(n, 20.0, np.float32), -y, z], axis=1).astype(np.float32)
        vals = np.ones(n, np.float32)
        sino = np.ones((n, TOF_BINS), np.float32)
        bins = (i % TOF_BINS).astype(np.int16)
        origin, vs = np.full(3, -7.0, np.float32), np.full(3, 2.0, np.float32)
        sigma, offset = np.array([8.0], np.float32), np.array([0.0], np.float32)
        args = {
            "joseph3d_fwd": (xs, xe, image, origin, vs, vals),
            "joseph3d_back": (xs, xe, image, origin, vs, vals),
            "joseph3d_tof_sino_fwd": (xs, xe, image, origin, vs, sino, 10.0, sigma, offset, TOF_BINS, 3.0),
            "joseph3d_tof_sino_back": (xs, xe, image, origin, vs, sino, 10.0, sigma, offset, TOF_BINS, 3.0),
            "joseph3d_tof_lm_fwd": (xs, xe, image, origin, vs, vals, 10.0, sigma, offset, bins, TOF_BINS, 3.0),
            "joseph3d_tof_lm_back": (xs, xe, image, origin, vs, vals, 10.0, sigma, offset, bins, TOF_BINS, 3.0),
        }
        for k, name in enumerate(CALLS):
            fn, a = getattr(ppc, name), args[name]
            for r in range(-1, reps):
                t0, c0 = time.perf_counter(), time.thread_time()
                for _ in range(calls):
                    fn(*a)
                    if k % 2:
                        image[0, 0, 0] = 1.0  # as pp_calls.c: back projections add into the image
                t1, c1 = time.perf_counter(), time.thread_time()
                if r >= 0:
                    times[name].append(((t1 - t0) / calls, (c1 - c0) / calls))
    finally:
        sp.shutdown()
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ncpu", type=int, default=-1)
    ap.add_argument("--lors", type=int, default=4)
    ap.add_argument("--c-exe", help="pp_calls built beforehand (default: built here through pkg-config)")
    a = ap.parse_args()
    c_all, p_all = collections.defaultdict(list), collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        exe = a.c_exe
        if not exe:
            exe = os.path.join(tmp, "pp_calls")
            build_c(exe)
        for _ in range(a.rounds):
            for name, t in run_c(exe, a.calls, a.reps, a.ncpu, a.lors).items():
                c_all[name] += t
            for name, t in run_py(a.calls, a.reps, a.ncpu, a.lors).items():
                p_all[name] += t
    med = lambda xs, i: 1e6 * statistics.median(x[i] for x in xs)  # noqa: E731
    low = lambda xs: 1e6 * min(x[0] for x in xs)  # noqa: E731
    print("%d calls a pass on %d LORs, %d passes each (CPU workers); microseconds per call" % (
        a.calls, a.lors, len(c_all[CALLS[0]])))
    print("| call | C median | Python median | Python / C | C min | Python min | Python / C (min) | CPU C | CPU Python |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in CALLS:
        c, p = c_all[name], p_all[name]
        print("| %s | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f | %.2f | %.2f |" % (
            name, med(c, 0), med(p, 0), med(p, 0) / med(c, 0), low(c), low(p), low(p) / low(c), med(c, 1), med(p, 1)))


if __name__ == "__main__":
    main()
