# petsird_lmosem.py: reads a PETSIRD listmode file (petsird package) and reconstructs it with starproj's LM-OSEM.
"""LM-OSEM of a PETSIRD file with starproj.

What is used from the file (petsird 0.12):
  - scanner_geometry.replicated_modules[t]: module transforms, and per module the detecting elements (a replicated box:
    element transforms and the box corners). A detection bin's position is the centre of its element's box after the
    element and module transforms (the centre of the crystal: no depth-of-interaction model).
  - event_energy_bin_edges[t]: only their number, to split a detection bin into (module, element, energy).
  - tof_bin_edges[t0][t1] and tof_resolution[t0][t1] (FWHM in mm): uniform bins become starproj TOF bins (bin width =
    edge spacing, centre offset = centre of the edges, sigma = FWHM / 2.355). PETSIRD stores (t1 - t2) c / 2, i.e. the
    displacement from the LOR's midpoint towards the second detection bin, and starproj counts bins from xstart towards
    xend, so xstart = detection_bins[0], xend = detection_bins[1] and starproj's bin = tof_idx.
  - detection_efficiencies: detection_bin_efficiencies and module_pair_sgidlut / module_pair_efficiencies_vectors. The
    factor m of a crystal pair is the mean over its energy-bin pairs (energy is ignored as a coordinate); pairs whose
    module pair has SGID < 0 are not in coincidence and are left out of the sensitivity.
  - EventTimeBlock.prompt_events of one pair of module types (--module-types, default 0 0).
Ignored: calibration_factor (a global scale), delayed events (no randoms estimate: the background is 0), other pairs of
module types (one reconstruction has one TOF model), external signals, bed / gantry movement, dead time, singles,
bulk materials, energy resolution, non-uniform TOF bins (refused), time intervals (all blocks are summed).

usage: python petsird_lmosem.py FILE [--iterations 2] [--subsets 4] [--voxel-size 4] [--output x.npy]
"""
import argparse

import numpy as np

import petsird
import starproj as sp


def read_file(path):
    """Header and every time block's prompt events, as lists per pair of module types."""
    with petsird.BinaryPETSIRDReader(path) as reader:
        header = reader.read_header()
        prompts = {}
        for tb in reader.read_time_blocks():
            if not isinstance(tb, petsird.TimeBlock.EventTimeBlock):
                continue
            for t0, row in enumerate(tb.value.prompt_events):
                for t1, events in enumerate(row):
                    prompts.setdefault((t0, t1), []).extend(events)
    return header, prompts


def element_centres(scanner, t):
    """Centres of module type t's detecting elements in scanner coordinates, shape (modules, elements, 3)."""
    rep = scanner.scanner_geometry.replicated_modules[t]
    det = rep.object.detecting_elements
    corners = np.array([c.c for c in det.object.shape.corners], np.float64)
    centre = corners.mean(0)  # transforms are affine: the centre maps to the centre
    el = np.array([tr.matrix for tr in det.transforms], np.float64)  # (E, 3, 4)
    mod = np.array([tr.matrix for tr in rep.transforms], np.float64)  # (M, 3, 4)
    p = el[:, :, :3] @ centre + el[:, :, 3]  # (E, 3)
    return np.einsum("mij,ej->mei", mod[:, :, :3], p) + mod[:, None, :, 3]


def num_energy_bins(scanner, t):
    """Number of energy windows of module type t."""
    return scanner.event_energy_bin_edges[t].number_of_bins()


def split_bins(scanner, t, bins):
    """Detection bins -> (module, element, energy) index arrays."""
    nel = len(scanner.scanner_geometry.replicated_modules[t].object.detecting_elements.transforms)
    nen = num_energy_bins(scanner, t)
    bins = np.asarray(bins, np.int64)
    return bins // (nel * nen), (bins // nen) % nel, bins % nen


def pair_factors(scanner, t0, t1, mod0, el0, mod1, el1):
    """Mean efficiency over energy-bin pairs of crystal pairs (0 where the module pair is not in coincidence)."""
    eff = scanner.detection_efficiencies
    nel0 = len(scanner.scanner_geometry.replicated_modules[t0].object.detecting_elements.transforms)
    nel1 = len(scanner.scanner_geometry.replicated_modules[t1].object.detecting_elements.transforms)
    nen0, nen1 = num_energy_bins(scanner, t0), num_energy_bins(scanner, t1)
    m = np.ones(len(mod0))
    if eff is None:
        return m.astype(np.float32)
    if eff.detection_bin_efficiencies is not None:
        d0 = np.asarray(eff.detection_bin_efficiencies[t0], np.float64).reshape(-1, nel0, nen0)
        d1 = np.asarray(eff.detection_bin_efficiencies[t1], np.float64).reshape(-1, nel1, nen1)
    else:
        d0 = np.ones((mod0.max() + 1, nel0, nen0))
        d1 = np.ones((mod1.max() + 1, nel1, nen1))
    if eff.module_pair_sgidlut is not None and eff.module_pair_efficiencies_vectors is not None:
        lut = eff.module_pair_sgidlut[t0][t1]
        vecs = eff.module_pair_efficiencies_vectors[t0][t1]
        sgid = np.array([lut[a][b] for a, b in zip(mod0, mod1)], np.int64)
        table = np.stack([np.asarray(v.values, np.float64).reshape(nel0, nen0, nel1, nen1) for v in vecs])
        ok = sgid >= 0
        # mean over (en0, en1) of d0[en0] * d1[en1] * table[sgid, el0, en0, el1, en1]
        s = np.where(ok, sgid, 0)
        w = np.einsum("ni,nj,nij->n", d0[mod0, el0], d1[mod1, el1], table[s, el0, :, el1, :]) / (nen0 * nen1)
        return np.where(ok, w, 0.0).astype(np.float32)
    return (d0[mod0, el0].mean(1) * d1[mod1, el1].mean(1)).astype(np.float32)


def tof_parameters(scanner, t0, t1):
    """(num_bins, bin_width, sigma, center_offset), or None for a single bin (no TOF)."""
    edges = np.asarray(scanner.tof_bin_edges[t0][t1].edges, np.float64)
    n = len(edges) - 1
    if n <= 1:
        return None
    widths = np.diff(edges)
    if not np.allclose(widths, widths[0], rtol=1e-4):
        raise ValueError("non-uniform TOF bins are not supported")
    sigma = float(scanner.tof_resolution[t0][t1]) / (2 * np.sqrt(2 * np.log(2)))
    return n, float(widths[0]), sigma, float(0.5 * (edges[0] + edges[-1]))


def event_arrays(header, events, t0, t1):
    """Endpoints, TOF bins and factors of the events (xstart = detection_bins[0])."""
    sc = header.scanner
    b = np.array([e.detection_bins[:2] for e in events], np.int64).reshape(-1, 2)
    tof_idx = np.array([e.tof_idx for e in events], np.int64)
    c0, c1 = element_centres(sc, t0), element_centres(sc, t1)
    m0, e0, _ = split_bins(sc, t0, b[:, 0])
    m1, e1, _ = split_bins(sc, t1, b[:, 1])
    xs = np.ascontiguousarray(c0[m0, e0], np.float32)
    xe = np.ascontiguousarray(c1[m1, e1], np.float32)
    return xs, xe, tof_idx.astype(np.int16), pair_factors(sc, t0, t1, m0, e0, m1, e1)


def sensitivity_lors(header, t0, t1):
    """Every crystal pair in coincidence (each unordered pair once), with its factor."""
    sc = header.scanner
    c0, c1 = element_centres(sc, t0), element_centres(sc, t1)
    M0, E0 = c0.shape[:2]
    M1, E1 = c1.shape[:2]
    i0, i1 = np.meshgrid(np.arange(M0 * E0), np.arange(M1 * E1), indexing="ij")
    keep = i0 > i1 if t0 == t1 else np.ones_like(i0, bool)
    i0, i1 = i0[keep], i1[keep]
    m0, e0, m1, e1 = i0 // E0, i0 % E0, i1 // E1, i1 % E1
    f = pair_factors(sc, t0, t1, m0, e0, m1, e1)
    ok = f > 0
    return (np.ascontiguousarray(c0[m0[ok], e0[ok]], np.float32), np.ascontiguousarray(c1[m1[ok], e1[ok]], np.float32),
            f[ok])


def image_geometry(header, t0, voxel_size):
    """A box holding every crystal centre of module type t0, so that every LOR lies inside the image (an event whose
    LOR missed the image would have no expected counts and an infinite likelihood term)."""
    c = element_centres(header.scanner, t0).reshape(-1, 3)
    r = np.hypot(c[:, 0], c[:, 1]).max()
    zlo, zhi = c[:, 2].min(), c[:, 2].max()
    n_t = int(np.ceil(2 * r / voxel_size)) + 1
    n_z = int(np.ceil((zhi - zlo) / voxel_size)) + 1
    dims = (n_t, n_t, n_z)
    origin = (-(n_t - 1) * voxel_size / 2, -(n_t - 1) * voxel_size / 2,
              float(0.5 * (zlo + zhi) - (n_z - 1) * voxel_size / 2))
    return dims, (voxel_size,) * 3, origin


def reconstruct(path, iterations=2, subsets=4, voxel_size=4.0, module_types=(0, 0), callback=None):
    """LM-OSEM of one pair of module types of a PETSIRD file; returns (image, dims, voxel_size, origin, num_events)."""
    header, prompts = read_file(path)
    t0, t1 = module_types
    events = prompts.get((t0, t1), [])
    if not events:
        raise ValueError("no prompt events for module types %d, %d" % (t0, t1))
    xs, xe, tof_bin, m = event_arrays(header, events, t0, t1)
    sxs, sxe, sm = sensitivity_lors(header, t0, t1)
    dims, vs, origin = image_geometry(header, t0, voxel_size)
    tof_par = tof_parameters(header.scanner, t0, t1)
    x = np.ones(dims, np.float32)
    subsets = max(1, min(subsets, len(xs)))
    with sp.Image(x, vs, origin) as X, sp.Lors(sxs, sxe) as S_lors:
        tof = sp.Tof(tof_par[0], tof_par[1], tof_par[2], center_offset=tof_par[3]) if tof_par else None
        ev = sp.Lors(xs, xe, tof_bin) if tof else sp.Lors(xs, xe)
        with sp.Model(ev, mult=m, tof=tof) as M, sp.Model(S_lors, mult=sm) as S, \
                sp.Recon(X, M, sp.Chunks.blocks(ev, subsets), num_subsets=subsets, sens_model=S,
                         objective=callback is not None) as R:
            R.iterate(iterations, callback=callback)
        ev.close()
        if tof:
            tof.close()
    return x, dims, vs, origin, len(xs)


def main():
    """Command line: reconstructs FILE and saves the image as a .npy file."""
    ap = argparse.ArgumentParser(description="LM-OSEM of a PETSIRD file with starproj")
    ap.add_argument("file")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--subsets", type=int, default=4)
    ap.add_argument("--voxel-size", type=float, default=4.0)
    ap.add_argument("--module-types", type=int, nargs=2, default=(0, 0))
    ap.add_argument("--output", default="petsird_lmosem.npy")
    a = ap.parse_args()
    def report(p):
        note = ""
        if np.isinf(p["objective"]):
            # an event whose LOR misses the image, or whose TOF bin lies beyond its LOR, has no expected counts:
            # its likelihood term is infinite, and the update gives it no weight (ratio 0)
            note = " (some events have no expected counts)"
        print("iteration %d: %.3f s, objective %.6g%s" % (p["iteration"], p["elapsed"], p["objective"], note))

    with sp.Runtime():
        x, dims, vs, origin, n = reconstruct(a.file, a.iterations, a.subsets, a.voxel_size, tuple(a.module_types),
                                             callback=report)
    np.save(a.output, x)
    print("%d events, image %s of %s mm at %s: %s" % (n, dims, vs, tuple(round(o, 3) for o in origin), a.output))


if __name__ == "__main__":
    main()
