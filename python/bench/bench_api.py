# bench_api.py: what the binding itself costs per call, on calls where the library does next to nothing.
"""Times binding calls whose library part is tiny, so that the extension's own work shows: an attribute of a
registered object (a getter of its type), a function without arguments, a sync with nothing pending (keyword
parsing, the object check, one library call), and the registration of a small NumPy array as an Image and its close
(the buffer protocol, the object's set-up and tear-down). Each is the median over --reps passes of --calls calls, in
nanoseconds of the calling thread's CPU time (on a shared machine the wall time also counts the waits for a core);
run it with builds of the extension to be compared (python/README.md: limited API against full API).

usage: python bench_api.py [--calls 200000] [--reps 7]
"""
import argparse
import statistics
import time

import numpy as np

import starproj as sp


def per_call(fn, calls, reps):
    out = []
    for _ in range(reps):
        t0 = time.thread_time()
        for _ in range(calls):
            fn()
        out.append((time.thread_time() - t0) / calls)
    return 1e9 * statistics.median(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    sp.init(devices="cpu", ncpu=1, ngpu=0)
    x = np.ones((8, 8, 8), np.float32)
    xs = np.zeros((4, 3), np.float32)
    xe = np.ones((4, 3), np.float32)
    lors = sp.Lors(xs, xe)
    proj = sp.Proj(lors, np.zeros(4, np.float32))

    def register():
        sp.Image(x, (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)).close()

    rows = [
        ("proj.num_lors (getter)", lambda: proj.num_lors, a.calls),
        ("sp.is_initialized()", sp.is_initialized, a.calls),
        ("proj.sync(mode='read'), nothing pending", lambda: proj.sync(mode="read"), a.calls // 10),
        ("sp.Image(8^3 array) and close()", register, a.calls // 20),
    ]
    print("| call | ns per call |")
    print("| --- | ---: |")
    for name, fn, calls in rows:
        print("| %s | %.0f |" % (name, per_call(fn, calls, a.reps)))
    proj.close()
    lors.close()
    sp.shutdown()


if __name__ == "__main__":
    main()
