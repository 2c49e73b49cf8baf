# joseph_ref.py: an independent NumPy Joseph forward projector (non-TOF) following starproj.h's conventions.
import numpy as np


def joseph_fwd(image, voxel_size, origin, xstart, xend):
    """Line integrals of image [n0][n1][n2] (origin = centre of voxel 0) along the LORs, in float64.

    For each LOR: clip to the image box, step through the voxel planes of the principal axis (largest |direction|
    component), sample the image there by bilinear interpolation in the two other axes (zero outside the image), and
    weight each sample by voxel_size[axis] / |cos(angle to that axis)|.
    """
    image = np.asarray(image, np.float64)
    n = np.array(image.shape)
    vs = np.asarray(voxel_size, np.float64)
    org = np.asarray(origin, np.float64)
    out = np.zeros(len(xstart))
    lo = org - 0.5 * vs
    hi = lo + n * vs
    for i, (a, b) in enumerate(zip(np.asarray(xstart, np.float64), np.asarray(xend, np.float64))):
        d = b - a
        if not d.any():
            continue
        # the part of the segment a..b inside the box
        tmin, tmax = 0.0, 1.0
        inside = True
        for k in range(3):
            if d[k] != 0:
                t1, t2 = (lo[k] - a[k]) / d[k], (hi[k] - a[k]) / d[k]
                tmin, tmax = max(tmin, min(t1, t2)), min(tmax, max(t1, t2))
            elif not lo[k] <= a[k] <= hi[k]:
                inside = False
        if not inside or tmax < tmin:
            continue
        ax = int(np.argmax(np.abs(d)))
        u, v = [k for k in range(3) if k != ax]
        cosine = abs(d[ax]) / np.linalg.norm(d)
        # voxel planes of the principal axis whose centres lie between the clipped ends
        f1 = (a[ax] + tmin * d[ax] - org[ax]) / vs[ax]
        f2 = (a[ax] + tmax * d[ax] - org[ax]) / vs[ax]
        f1, f2 = min(f1, f2), max(f1, f2)
        total = 0.0
        for p in range(max(0, int(np.floor(f1)) + 1), min(n[ax] - 1, int(np.floor(f2))) + 1):
            x_ax = org[ax] + p * vs[ax]
            t = (x_ax - a[ax]) / d[ax]
            fu = (a[u] + t * d[u] - org[u]) / vs[u]
            fv = (a[v] + t * d[v] - org[v]) / vs[v]
            iu, iv = int(np.floor(fu)), int(np.floor(fv))
            wu, wv = fu - iu, fv - iv
            val = 0.0
            for du, wgu in ((0, 1 - wu), (1, wu)):
                for dv, wgv in ((0, 1 - wv), (1, wv)):
                    ju, jv = iu + du, iv + dv
                    if 0 <= ju < n[u] and 0 <= jv < n[v]:
                        idx = [0, 0, 0]
                        idx[ax], idx[u], idx[v] = p, ju, jv
                        val += wgu * wgv * image[tuple(idx)]
            total += val
        out[i] = total * vs[ax] / cosine
    return out
