# bench_tiny.py: per-call cost of every projection call on a tiny input (4 LORs), binding vs tiny_calls.c.
"""Times each projection call of the binding (fwd, back, fwd_tof_sino, back_tof_sino, fwd_tof_lm, back_tof_lm) made
many times in a loop on 4 LORs of an 8^3 image, then waited for, against the same loop in C (tiny_calls.c), in
alternating rounds so that the load of a shared machine hits both alike. The projections themselves cost next to
nothing here, so the times are what a call costs: argument checks, task submission and StarPU's scheduling.

usage: python bench_tiny.py [--rounds 5] [--calls 2000] [--reps 5] [--ncpu N] [--merge] [--c-exe PATH]
       (without --c-exe, PKG_CONFIG_PATH must find starproj to build tiny_calls.c)
Without --merge every call becomes a task at once (merge_calls=0): with merging, the same call repeated while the
workers are busy is held back and merged, and the loop would time mostly the merging.
Prints a table: per call kind, microseconds per call through C and through the binding (median and minimum over
passes; a pass is `calls` calls and the wait), their ratios, the CPU time of the submitting thread per call (the loop
without the wait, median), and what the binding adds: the difference of those CPU times, relative to C's time per
call. On a loaded machine the wall times move by tens of percent between passes; the thread's CPU time does not
count the time it waits for a core, but it does count the library's own submission, which spends more when calls come
faster (as from C), so the difference can come out negative: it bounds the binding's cost, it does not isolate it.
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

KINDS = ("fwd", "back", "fwd_tof_sino", "back_tof_sino", "fwd_tof_lm", "back_tof_lm")
NLORS, DIM, TOF_BINS = 4, 8, 5


def build_c(out):
    here = os.path.dirname(os.path.abspath(__file__))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "starproj"], check=True, capture_output=True,
                           text=True).stdout
    rpath = ["-Wl,-rpath," + f[2:] for f in shlex.split(flags) if f.startswith("-L")]
    subprocess.run(["cc", "-O2", "-Wall", "-o", out, os.path.join(here, "tiny_calls.c"), *shlex.split(flags), *rpath],
                   check=True)


def run_c(exe, calls, reps, ncpu, merge):
    out = subprocess.run([exe, str(calls), str(reps), str(ncpu), str(merge)], check=True, capture_output=True,
                         text=True).stdout
    times = collections.defaultdict(list)
    for line in out.splitlines():
        name, n, submit, total, cpu = line.split()
        times[name].append((float(total) / int(n), float(submit) / int(n), float(cpu) / int(n)))
    return times


def run_py(calls, reps, ncpu, merge):
    times = collections.defaultdict(list)
    sp.init(devices="cpu", ncpu=ncpu, ngpu=0, merge_calls=merge)
    try:
        image = (1.0 + (np.arange(DIM ** 3) % 7)).astype(np.float32).reshape(DIM, DIM, DIM)
        i = np.arange(NLORS, dtype=np.float32)
        y, z = -3.0 + 2.0 * i, 1.0 - 0.5 * i
        xs = np.stack([np.full(NLORS, -20.0, np.float32), y, z], axis=1).astype(np.float32)
        xe = np.stack([np.full(NLORS, 20.0, np.float32), -y, z], axis=1).astype(np.float32)
        bins = (np.arange(NLORS) % TOF_BINS).astype(np.int16)
        img = sp.Image(image, (2.0, 2.0, 2.0), (-7.0, -7.0, -7.0))
        lors, events = sp.Lors(xs, xe), sp.Lors(xs, xe, bins)
        chunks, lm_chunks = sp.Chunks.ranges(lors, [0], [NLORS]), sp.Chunks.ranges(events, [0], [NLORS])
        proj = sp.Proj(lors, np.zeros(NLORS, np.float32))
        sino = sp.Proj(lors, np.zeros((NLORS, TOF_BINS), np.float32))
        lm = sp.Proj(events, np.zeros(NLORS, np.float32))
        tof = sp.Tof(TOF_BINS, 10.0, 8.0)
        # the arguments as a caller passes them: positionally, the chunking and chunk 0 (as tiny_calls.c does)
        loops = {
            "fwd": (sp.fwd, (img, proj, chunks, 0)),
            "back": (sp.back, (img, proj, chunks, 0)),
            "fwd_tof_sino": (sp.fwd_tof_sino, (img, sino, tof, chunks, 0)),
            "back_tof_sino": (sp.back_tof_sino, (img, sino, tof, chunks, 0)),
            "fwd_tof_lm": (sp.fwd_tof_lm, (img, lm, tof, lm_chunks, 0)),
            "back_tof_lm": (sp.back_tof_lm, (img, lm, tof, lm_chunks, 0)),
        }
        wait_all = sp.wait_all
        for name in KINDS:
            fn, args = loops[name]
            for r in range(-1, reps):
                t0, c0 = time.perf_counter(), time.thread_time()
                for _ in range(calls):
                    fn(*args)
                t1, c1 = time.perf_counter(), time.thread_time()
                wait_all()
                t2 = time.perf_counter()
                if r >= 0:
                    times[name].append(((t2 - t0) / calls, (t1 - t0) / calls, (c1 - c0) / calls))
    finally:
        sp.shutdown()
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ncpu", type=int, default=-1)
    ap.add_argument("--merge", action="store_true", help="merge repeated calls (the library's default)")
    ap.add_argument("--c-exe", help="tiny_calls built beforehand (default: built here through pkg-config)")
    a = ap.parse_args()
    c_all, p_all = collections.defaultdict(list), collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        exe = a.c_exe
        if not exe:
            exe = os.path.join(tmp, "tiny_calls")
            build_c(exe)
        merge = -1 if a.merge else 0
        for _ in range(a.rounds):
            for name, t in run_c(exe, a.calls, a.reps, a.ncpu, merge).items():
                c_all[name] += t
            for name, t in run_py(a.calls, a.reps, a.ncpu, merge).items():
                p_all[name] += t
    med = lambda xs, i: 1e6 * statistics.median(x[i] for x in xs)  # noqa: E731
    low = lambda xs: 1e6 * min(x[0] for x in xs)  # noqa: E731
    print("%d calls a pass on %d LORs, %d passes each (CPU workers, merging %s); microseconds per call" % (
        a.calls, NLORS, len(c_all[KINDS[0]]), "on" if a.merge else "off"))
    print("| call | C median | Python median | Python / C | C min | Python min | Python / C (min) | submit CPU C | "
          "submit CPU Python | (Python - C) CPU / C |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in KINDS:
        c, p = c_all[name], p_all[name]
        print("| %s | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f | %.2f | %.2f | %.1f%% |" % (
            name, med(c, 0), med(p, 0), med(p, 0) / med(c, 0), low(c), low(p), low(p) / low(c), med(c, 2), med(p, 2),
            100 * (med(p, 2) - med(c, 2)) / med(c, 0)))

if __name__ == "__main__":
    main()
