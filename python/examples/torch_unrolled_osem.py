# torch_unrolled_osem.py: a few unrolled OS-EM steps with learned step sizes, trained with PyTorch through starproj.
"""Unrolled OS-EM with a learned step size per unrolled iteration, trained on a phantom.

The network is OS-EM itself, unrolled: iterations k = 0 .. K-1 over subsets s of the sinogram's views, each step
    x <- relu(x * (1 + lambda_k * (A_s^T (y_s / (A_s x + b)) / A_s^T 1 - 1)))
(lambda_k = 1 is plain OS-EM). The step sizes lambda_k are the network's weights: trained with Adam so that x_K comes
close to the phantom the data were simulated from. Each A_s is a starproj.torch.Projector on subset s's LORs: its
forward projection and back projection are autograd operators, so the loss's gradient flows back through every
projection of every unrolled step (the backward of A is A^T and that of A^T is A).

usage: python torch_unrolled_osem.py [--device cpu|cuda] [--iterations 3] [--subsets 4] [--epochs 8] [--tof]
Prints the loss and the step sizes per epoch; exits 1 if training did not lower the loss.
"""
import argparse
import time

import numpy as np
import torch

import starproj as sp
from starproj.torch import Projector

DIMS = (24, 24, 3)
VS = (3.0, 3.0, 4.0)
ORIGIN = tuple(-(d - 1) * v / 2 for d, v in zip(DIMS, VS))
TOF = dict(num_bins=9, bin_width=20.0, sigma=15.0, num_sigmas=3.0)


def phantom():
    i, j = np.meshgrid(np.arange(DIMS[0]), np.arange(DIMS[1]), indexing="ij")
    x = np.zeros(DIMS, np.float32)
    x[(i - 11.5) ** 2 + (j - 11.5) ** 2 < 80] = 1.0
    x[(i - 8) ** 2 + (j - 13) ** 2 < 8] = 3.0
    x[(i - 15) ** 2 + (j - 9) ** 2 < 5] = 0.2
    return x


def subset_projectors(device, num_subsets, tof):
    """A Projector per subset of views (subset s: views s, s + num_subsets, ...) of a small 2-ring scanner."""
    scanner = sp.Scanner("small", num_rings=2, num_radial_bins=33)
    info = scanner.info()
    xs, xe = scanner.lors()
    per_view = info["num_lors"] // info["num_views"]
    ops = []
    for s in range(num_subsets):
        views = np.arange(s, info["num_views"], num_subsets)
        idx = (views[:, None] * per_view + np.arange(per_view)[None, :]).ravel()
        ops.append(Projector(torch.from_numpy(xs[idx]).to(device), torch.from_numpy(xe[idx]).to(device), DIMS, VS,
                             ORIGIN, tof=TOF if tof else None))
    return ops


def unrolled_osem(ops, sens, data, background, step, x0):
    x = x0
    for k in range(step.shape[0]):
        for op, s, y in zip(ops, sens, data):
            ratio = y / (op(x) + background)
            x = torch.relu(x * (1.0 + step[k] * (op.T(ratio) / s - 1.0)))
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (a GPU that torch and starproj both see)")
    ap.add_argument("--iterations", type=int, default=3, help="unrolled OS-EM iterations K")
    ap.add_argument("--subsets", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--counts", type=float, default=2e5, help="expected counts of the simulated data")
    ap.add_argument("--tof", action="store_true", help="TOF sinograms instead of non-TOF ones")
    args = ap.parse_args()
    device = torch.device(args.device)
    sp.init(devices="gpu" if device.type == "cuda" else "cpu")
    torch.manual_seed(0)
    ops = subset_projectors(device, args.subsets, args.tof)
    truth = torch.from_numpy(phantom()).to(device)
    with torch.no_grad():
        clean = [op.project(truth) for op in ops]
        scale = args.counts / float(sum(c.sum() for c in clean))
        truth = truth * scale
        background = 0.05 * float(sum(c.sum() for c in clean)) * scale / sum(c.numel() for c in clean)
        data = [torch.poisson(c * scale + background) for c in clean]
        sens = [op.backproject(torch.ones(op.out_shape, device=device)).clamp_min(1e-6) for op in ops]
    step = torch.full((args.iterations,), 0.5, device=device, requires_grad=True)
    opt = torch.optim.Adam([step], lr=0.1)
    x0 = torch.full(DIMS, float(truth.mean()), device=device)
    norm = float((truth ** 2).sum())
    losses = []
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        opt.zero_grad()
        x = unrolled_osem(ops, sens, data, background, step, x0)
        loss = ((x - truth) ** 2).sum() / norm
        loss.backward()
        opt.step()
        losses.append(loss.item())
        print("epoch %2d  loss %.5f  step sizes %s" % (epoch, losses[-1],
                                                       " ".join("%.3f" % v for v in step.detach().cpu().tolist())))
    dt = time.perf_counter() - t0
    nproj = 4 * args.epochs * args.iterations * args.subsets
    print("%s, %s, %d unrolled iterations x %d subsets: %d epochs in %.2f s (%d projections, %.1f ms each)"
          % (device, "TOF" if args.tof else "non-TOF", args.iterations, args.subsets, args.epochs, dt, nproj,
             1e3 * dt / nproj))
    for op in ops:
        op.close()
    sp.shutdown()
    if not losses[-1] < losses[0]:
        print("training did not lower the loss")
        return 1
    print("loss %.5f -> %.5f" % (losses[0], losses[-1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
