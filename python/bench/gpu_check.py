# gpu_check.py: the installed wheel on a GPU: CuPy and torch CUDA arrays in place, parallelproj_core against
# libparallelproj's CUDA module, and a per-call table of both with NumPy and CuPy arrays.
"""Checks, then times, the starproj wheel on a GPU machine (scripts/gpu-check.sh installs the wheel and runs this).

1. starproj's own calls (fwd, back and the TOF-sinogram and TOF-listmode pairs) on CuPy arrays registered where they
   live, on GPU 0, run in place (the output is the CuPy array itself) and equal the same calls on NumPy arrays run by
   the CPU workers within --tol (max |GPU - CPU| / max |CPU|).
2. starproj.parallelproj_core's six calls on CuPy arrays against libparallelproj's own CUDA module (--pp-module-dir):
   the same values within --pp-tol.
3. starproj.torch's autograd operators on CUDA tensors: the forward projections equal the CPU workers' within --tol,
   autograd's gradient equals the explicit back projection, <A x, y> = <x, A^T y>.
4. The table, printed last: milliseconds per call of each of the six parallelproj_core calls on --lors LORs (events),
   with NumPy arrays and with CuPy arrays, through libparallelproj's module and through starproj's (median of --reps
   after a warm-up; CuPy rows from the first call until the GPU is idle).
Exits 1 if a check failed (the table is printed all the same).

usage: python gpu_check.py [--pp-module-dir DIR] [--lors 1000000] [--check-lors 50000] [--reps 3] [--tof-bins 29]
"""
import argparse
import importlib
import statistics
import sys
import time

import numpy as np

import starproj as sp
import starproj.parallelproj_core as ppc

CALLS = ("joseph3d_fwd", "joseph3d_back", "joseph3d_tof_sino_fwd", "joseph3d_tof_sino_back", "joseph3d_tof_lm_fwd",
         "joseph3d_tof_lm_back")
failures = []


def verdict(ok, what):
    print("  %s  %s" % ("ok  " if ok else "FAIL", what))
    sys.stdout.flush()
    if not ok:
        failures.append(what)


def scene(n, dims, nbins, seed=1):
    """Random LORs through a cylinder around the image (NumPy arrays), the image, TOF parameters with sigma per LOR."""
    rng = np.random.default_rng(seed)
    vs = np.full(3, 2.78, np.float32)
    origin = (-(np.array(dims) - 1) / 2 * vs).astype(np.float32)
    radius = 0.6 * float(np.linalg.norm(np.array(dims[:2]) * vs[:2]))
    half_z = dims[2] * vs[2] / 2
    phi1, phi2 = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 2 * np.pi, n)
    xs = np.stack([radius * np.cos(phi1), radius * np.sin(phi1), rng.uniform(-half_z, half_z, n)], 1)
    xe = np.stack([radius * np.cos(phi2), radius * np.sin(phi2), rng.uniform(-half_z, half_z, n)], 1)
    width = 0.9 * 2 * radius / nbins
    return {
        "xs": xs.astype(np.float32), "xe": xe.astype(np.float32), "origin": origin, "vs": vs,
        "image": rng.uniform(0.5, 1.5, dims).astype(np.float32),
        "sigma": (rng.uniform(0.8, 1.2, n) * width).astype(np.float32), "offset": np.zeros(1, np.float32),
        "bins": rng.integers(0, nbins, n).astype(np.int16), "width": float(width), "nbins": nbins,
        "values": rng.uniform(0.5, 1.5, n).astype(np.float32),
        "sino": rng.uniform(0.5, 1.5, (n, nbins)).astype(np.float32),
    }


def on(xp, g):
    """The scene's arrays as arrays of module xp (numpy or cupy)."""
    return {k: (xp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in g.items()}


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


# --- 1. starproj's own calls: CuPy on GPU 0 against NumPy on the CPU workers ----------------------------------------

def own_calls(g, cp, xp_name):
    """The six own calls on the scene's arrays of one kind; returns their outputs as NumPy arrays."""
    xp = cp if xp_name == "cupy" else np
    a = on(xp, g)
    n = len(g["xs"])
    sp.set_devices(sp.DEVICE_CUDA if xp_name == "cupy" else sp.DEVICE_CPU)
    out = {}
    with sp.Lors(a["xs"], a["xe"]) as lors, sp.Lors(a["xs"], a["xe"], a["bins"]) as events, \
            sp.Tof(g["nbins"], g["width"], a["sigma"], 3.0, 0.0, lors=lors) as tof, \
            sp.Tof(g["nbins"], g["width"], a["sigma"], 3.0, 0.0, lors=events) as tof_ev, \
            sp.Image(a["image"], g["vs"], g["origin"]) as img:
        for name, fwd, values, ev, t in (("fwd", sp.fwd, xp.zeros(n, xp.float32), lors, None),
                                         ("fwd_tof_sino", sp.fwd_tof_sino, xp.zeros((n, g["nbins"]), xp.float32),
                                          lors, tof),
                                         ("fwd_tof_lm", sp.fwd_tof_lm, xp.zeros(n, xp.float32), events, tof_ev)):
            with sp.Proj(ev, values) as proj:
                in_place = proj.data_ptr == (values.data.ptr if xp_name == "cupy" else values.ctypes.data)
                on_gpu = proj.gpu == (0 if xp_name == "cupy" else None)
                fwd(img, proj, *((t,) if t is not None else ()))
                proj.sync()
            out[name] = (cp.asnumpy(values) if xp_name == "cupy" else values.copy(), in_place and on_gpu)
        for name, back, values, ev, t in (("back", sp.back, a["values"], lors, None),
                                          ("back_tof_sino", sp.back_tof_sino, a["sino"], lors, tof),
                                          ("back_tof_lm", sp.back_tof_lm, a["values"], events, tof_ev)):
            image = xp.zeros(g["image"].shape, xp.float32)
            with sp.Proj(ev, values) as proj, sp.Image(image, g["vs"], g["origin"]) as bimg:
                in_place = bimg.data_ptr == (image.data.ptr if xp_name == "cupy" else image.ctypes.data)
                back(bimg, proj, *((t,) if t is not None else ()))
                bimg.sync()
            out[name] = (cp.asnumpy(image) if xp_name == "cupy" else image, in_place)
    sp.set_devices(sp.DEVICE_ANY)
    return out


def check_own_calls(cp, n, dims, nbins, tol):
    print("1. starproj's own calls: CuPy arrays on GPU 0 (in place) against NumPy arrays on the CPU workers")
    g = scene(n, dims, nbins, seed=2)
    cpu = own_calls(g, cp, "numpy")
    gpu = own_calls(g, cp, "cupy")
    for name in ("fwd", "back", "fwd_tof_sino", "back_tof_sino", "fwd_tof_lm", "back_tof_lm"):
        d = rel(gpu[name][0], cpu[name][0])
        verdict(gpu[name][1] and d <= tol and np.abs(cpu[name][0]).max() > 0,
                "%-14s in place on GPU 0: %s; max |GPU - CPU| / max |CPU| = %.2e (<= %.0e)"
                % (name, gpu[name][1], d, tol))


# --- 2. parallelproj_core against libparallelproj's CUDA module ------------------------------------------------------

def pp_args(name, a, y, img):
    base = (a["xs"], a["xe"], img, a["origin"], a["vs"], y)
    if name in ("joseph3d_fwd", "joseph3d_back"):
        return base
    if "sino" in name:
        return base + (a["width"], a["sigma"], a["offset"], a["nbins"])
    return base + (a["width"], a["sigma"], a["offset"], a["bins"], a["nbins"])


def pp_outputs(xp, name, a, n):
    """The values a back call reads or a forward call writes, and the image it adds into or reads."""
    if "back" in name:
        return (a["sino"] if "sino" in name else a["values"]), xp.zeros(a["image"].shape, xp.float32)
    return xp.zeros((n, a["nbins"]) if "sino" in name else n, xp.float32), a["image"]


def time_call(xp, cp, module, name, a, n, reps):
    """Seconds per call (median of reps after a warm-up; None for reps = 0) and a NumPy copy of the output."""
    y, img = pp_outputs(xp, name, a, n)
    fn = getattr(module, name)
    times = []
    for r in range(reps + 1):
        if "back" in name:
            img[...] = 0
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn(*pp_args(name, a, y, img))
        cp.cuda.Device().synchronize()
        if r:
            times.append(time.perf_counter() - t0)
    out = img if "back" in name else y
    return statistics.median(times) if times else None, (cp.asnumpy(out) if xp is cp else out.copy())


def check_pp(cp, ref, n, dims, nbins, tol):
    print("2. starproj.parallelproj_core against libparallelproj's CUDA module, CuPy arrays")
    if ref is None:
        verdict(False, "libparallelproj's module: not given (--pp-module-dir)")
        return
    verdict(bool(ref.cuda_enabled), "libparallelproj %s, cuda_enabled = %s" % (ref.__version__, ref.cuda_enabled))
    a = on(cp, scene(n, dims, nbins, seed=3))
    for name in CALLS:
        _, o_sp = time_call(cp, cp, ppc, name, a, n, 0)
        _, o_pp = time_call(cp, cp, ref, name, a, n, 0)
        d = rel(o_sp, o_pp)
        verdict(d <= tol and np.abs(o_pp).max() > 0, "%-22s max |starproj - libparallelproj| / max = %.2e (<= %.0e)"
                % (name, d, tol))


# --- 3. torch CUDA tensors through the autograd operators ------------------------------------------------------------

def check_torch(n, dims, nbins, tol):
    print("3. starproj.torch on CUDA tensors")
    try:
        import torch
    except ImportError:
        verdict(False, "torch: not importable")
        return
    from starproj.torch import Projector
    if not torch.cuda.is_available():
        verdict(False, "torch sees no GPU")
        return
    print("  torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0)))
    g = scene(n, dims, nbins, seed=4)
    tof = dict(num_bins=nbins, bin_width=g["width"], sigma=5.0 * g["width"] / 3, num_sigmas=3.0)
    for kind, kw in (("nontof", {}), ("tof_sino", dict(tof=tof)), ("tof_lm", dict(tof=tof, tof_bin=g["bins"]))):
        ops = {}
        for dev in ("cpu", "cuda"):
            args = {k: (torch.from_numpy(v).to(dev) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
            ops[dev] = Projector(torch.from_numpy(g["xs"]).to(dev), torch.from_numpy(g["xe"]).to(dev),
                                 g["image"].shape, g["vs"], g["origin"], **args)
        x_cpu = torch.from_numpy(g["image"])
        x = x_cpu.to("cuda").requires_grad_()
        y = ops["cuda"](x)
        sp.set_devices(sp.DEVICE_CPU)
        y_cpu = ops["cpu"].project(x_cpu)
        sp.set_devices(sp.DEVICE_ANY)
        d = rel(y.detach().cpu().numpy(), y_cpu.numpy())
        verdict(y.is_cuda and d <= tol, "%-8s forward on cuda:0 against the CPU workers: %.2e (<= %.0e)" % (kind, d, tol))
        w = torch.rand(ops["cuda"].out_shape, device="cuda")
        (y * w).sum().backward()
        explicit = ops["cuda"].backproject(w)
        d = rel(x.grad.cpu().numpy(), explicit.cpu().numpy())
        verdict(x.grad.is_cuda and d <= 1e-6, "%-8s autograd gradient = explicit back projection: %.2e" % (kind, d))
        lhs = float((y.detach().double() * w.double()).sum())
        rhs = float((x.detach().double() * explicit.double()).sum())
        verdict(abs(lhs - rhs) <= 1e-5 * abs(lhs), "%-8s <A x, w> = <x, A^T w>: relative gap %.2e (<= 1e-5)"
                % (kind, abs(lhs - rhs) / abs(lhs)))
        for op in ops.values():
            op.close()


# --- 4. the per-call table ------------------------------------------------------------------------------------------

def table(cp, ref, n, dims, nbins, reps):
    g = scene(n, dims, nbins, seed=5)
    rows = []
    for xp_name, xp in (("NumPy", np), ("CuPy", cp)):
        a = on(xp, g)
        for name in CALLS:
            try:
                t_sp, o_sp = time_call(xp, cp, ppc, name, a, n, reps)
            except Exception as e:
                rows.append("| %s | %s | %s: %s |" % (name, xp_name, type(e).__name__, e))
                continue
            if ref is not None:
                try:
                    t_pp, o_pp = time_call(xp, cp, ref, name, a, n, reps)
                except Exception as e:
                    rows.append("| %s | %s | %s: %s | %.2f | - | - |" % (name, xp_name, type(e).__name__, e,
                                                                         1e3 * t_sp))
                    continue
                rows.append("| %s | %s | %.2f | %.2f | %.2f | %.1e |" % (name, xp_name, 1e3 * t_pp, 1e3 * t_sp,
                                                                        t_sp / t_pp, rel(o_sp, o_pp)))
            else:
                rows.append("| %s | %s | - | %.2f | - | - |" % (name, xp_name, 1e3 * t_sp))
    print("4. per call: %d LORs (events), image %s, %d TOF bins, sigma per LOR; ms per call, median of %d"
          % (n, "x".join(map(str, dims)), nbins, reps))
    print("| call | arrays | libparallelproj ms | starproj ms | starproj / libparallelproj | max rel. difference |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pp-module-dir", help="folder holding libparallelproj's parallelproj_core module (CUDA build)")
    ap.add_argument("--lors", type=int, default=1_000_000, help="LORs (events) of the table's calls")
    ap.add_argument("--check-lors", type=int, default=50_000, help="LORs (events) of the checks")
    ap.add_argument("--dims", type=int, nargs=3, default=(215, 215, 71))
    ap.add_argument("--check-dims", type=int, nargs=3, default=(64, 64, 32))
    ap.add_argument("--tof-bins", type=int, default=29)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tol", type=float, default=1e-6, help="GPU against CPU workers")
    ap.add_argument("--pp-tol", type=float, default=1e-5, help="starproj against libparallelproj")
    a = ap.parse_args()
    import cupy as cp

    ref = None
    if a.pp_module_dir:
        sys.path.insert(0, a.pp_module_dir)
        ref = importlib.import_module("parallelproj_core")
    sp.init(devices="any")
    print("starproj %s from %s; %d GPU(s) driven, %d CPU workers; %s; CuPy %s; NumPy %s; Python %s" % (
        sp.version, sp.__file__, sp.num_gpus(), sp.num_cpu_workers(),
        cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), cp.__version__, np.__version__,
        sys.version.split()[0]))
    if sp.num_gpus() == 0:
        verdict(False, "starproj drives no GPU")
    else:
        for check, args in ((check_own_calls, (cp, a.check_lors, tuple(a.check_dims), a.tof_bins, a.tol)),
                            (check_pp, (cp, ref, a.check_lors, tuple(a.check_dims), a.tof_bins, a.pp_tol)),
                            (check_torch, (a.check_lors, tuple(a.check_dims), a.tof_bins, a.tol))):
            try:
                check(*args)
            except Exception as e:  # a check that breaks is a failure; the others and the table still run
                sp.set_devices(sp.DEVICE_ANY)
                verdict(False, "%s raised %s: %s" % (check.__name__, type(e).__name__, e))
    print("checks: %d failed%s" % (len(failures), "".join("\n  " + f for f in failures)))
    if sp.num_gpus():
        table(cp, ref, a.lors, tuple(a.dims), a.tof_bins, a.reps)
    sp.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
