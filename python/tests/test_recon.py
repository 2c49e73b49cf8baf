# test_recon.py: Scanner, Model and Recon: OSEM against the same update written with the binding's projections, LM.
import numpy as np
import pytest

import starproj as sp

DIMS = (24, 24, 3)
VS = (3.0, 3.0, 4.0)
ORIGIN = tuple(-(d - 1) * v / 2 for d, v in zip(DIMS, VS))


def scanner():
    return sp.Scanner("small", num_rings=2, num_radial_bins=33)


def phantom():
    i, j = np.meshgrid(np.arange(DIMS[0]), np.arange(DIMS[1]), indexing="ij")
    r2 = (i - 11.5) ** 2 + (j - 11.5) ** 2
    x = np.zeros(DIMS, np.float32)
    x[r2 < 64] = 1.0
    x[(i - 8) ** 2 + (j - 12) ** 2 < 6] = 3.0
    return x


def test_scanner_geometry():
    s = scanner()
    info = s.info()
    assert info["num_lors"] == info["num_views"] * info["lors_per_view"] == 64 * 33 * 4
    xs, xe = s.lors()
    assert xs.shape == (info["num_lors"], 3) and xs.dtype == np.float32
    # a detector pair's LOR is the sinogram LOR of the same detectors (starproj_recon.h)
    k = s.lor_index(5, 1, 0, 20)
    r = np.hypot(xs[k, 0], xs[k, 1])
    assert abs(r - s.params()["radius"]) < 10
    with pytest.raises(sp.Error) as e:
        sp.Scanner("no-such-scanner")
    assert e.value.status == sp.ERR_INVALID


def projections(lors, views, n):
    """The forward and back projection of the binding, as NumPy functions in double."""
    def A_fwd(x):
        out = np.zeros(n, np.float32)
        with sp.Image(np.ascontiguousarray(x, np.float32), VS, ORIGIN) as I, sp.Proj(lors, out) as P:
            sp.fwd(I, P, views)
        return out.astype(np.float64)

    def A_back(v):
        out = np.zeros(DIMS, np.float32)
        with sp.Image(out, VS, ORIGIN) as I, sp.Proj(lors, np.ascontiguousarray(v, np.float32)) as P:
            sp.back(I, P, views)
        return out.astype(np.float64)
    return A_fwd, A_back


def mlem_by_hand(A_fwd, A_back, y, mult, add, x0, iters):
    x = x0.astype(np.float64).copy()
    sens = A_back(mult.astype(np.float32)).astype(np.float64)
    for _ in range(iters):
        ybar = mult * A_fwd(x.astype(np.float32)) + add
        ratio = np.where(ybar > 0, mult * y / np.where(ybar > 0, ybar, 1), 0)
        x = np.where(sens > 0, x / np.where(sens > 0, sens, 1) * A_back(ratio.astype(np.float32)), 0)
    return x


def test_mlem_matches_the_update_written_with_projections(rt):
    s = scanner()
    xs, xe = s.lors()
    n = len(xs)
    rng = np.random.default_rng(0)
    mult = rng.uniform(0.5, 1.0, n).astype(np.float32)
    add = np.full(n, 0.1, np.float32)
    lors = sp.Lors(xs, xe)
    views = s.chunks_views(lors)

    A_fwd, A_back = projections(lors, views, n)

    y = (mult * A_fwd(phantom()) + add).astype(np.float32)
    ref = mlem_by_hand(A_fwd, A_back, y, mult, add, np.ones(DIMS), 3)

    x = np.ones(DIMS, np.float32)
    seen = []
    with sp.Image(x, VS, ORIGIN) as X, sp.Proj(lors, y) as Y, sp.Model(lors, mult, add) as M, \
            sp.Recon(X, M, views, data=Y, num_subsets=1, objective=True) as R:
        R.iterate(3, callback=lambda p: seen.append(p))
        sens = R.sensitivity(0)
    np.testing.assert_allclose(x, ref, rtol=2e-3, atol=2e-3 * ref.max())
    np.testing.assert_allclose(sens, A_back(mult), rtol=1e-4, atol=1e-5 * sens.max())
    assert [p["iteration"] for p in seen] == [1, 2, 3]
    obj = [p["objective"] for p in seen]
    assert obj[0] > obj[1] > obj[2]


def test_osem_subsets_callback_stop_and_errors(rt):
    s = scanner()
    xs, xe = s.lors()
    lors = sp.Lors(xs, xe)
    views = s.chunks_views(lors)
    n = len(xs)
    y = np.ones(n, np.float32)
    x = np.ones(DIMS, np.float32)
    X, Y, M = sp.Image(x, VS, ORIGIN), sp.Proj(lors, y), sp.Model(lors)
    R = sp.Recon(X, M, views, data=Y, subsets=[list(range(0, 64, 2)), list(range(1, 64, 2))])
    assert R.num_subsets == 2
    calls = []
    R.iterate(5, callback=lambda p: calls.append(p) or True)  # a true value stops after the first iteration
    assert len(calls) == 1 and calls[0]["objective"] is None

    def boom(p):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        R.iterate(2, callback=boom)
    R.iterate(1)  # asynchronous: returns at once
    X.sync()
    assert np.isfinite(x).all() and x.max() > 0
    with pytest.raises(sp.Error) as e:
        M.close()  # the reconstruction still uses its model
    assert e.value.status == sp.ERR_BUSY
    R.close()
    M.close()
    with pytest.raises(sp.Error) as e:
        sp.Recon(X, sp.Model(lors), views, data=Y, num_subsets=65)
    assert e.value.status == sp.ERR_RANGE


def test_listmode_mlem_equals_sinogram_mlem_of_the_histogram(rt):
    """Non-TOF LM-EM of events and sinogram EM of their histogram are the same iteration (m = 1, a = 0)."""
    s = scanner()
    xs, xe = s.lors()
    n = len(xs)
    lors = sp.Lors(xs, xe)
    views = s.chunks_views(lors)
    expected = np.zeros(n, np.float32)
    with sp.Image(phantom(), VS, ORIGIN) as I, sp.Proj(lors, expected) as P:
        sp.fwd(I, P, views)
    rng = np.random.default_rng(2)
    counts = rng.poisson(expected * 0.3)
    ev = np.repeat(np.arange(n), counts)
    rng.shuffle(ev)
    exs, exe = np.ascontiguousarray(xs[ev]), np.ascontiguousarray(xe[ev])
    y = counts.astype(np.float32)

    x_sino = np.ones(DIMS, np.float32)
    with sp.Image(x_sino, VS, ORIGIN) as X, sp.Proj(lors, y) as Y, sp.Model(lors) as M, \
            sp.Recon(X, M, views, data=Y) as R:
        R.iterate(3)

    x_lm = np.ones(DIMS, np.float32)
    events = sp.Lors(exs, exe)
    with sp.Image(x_lm, VS, ORIGIN) as X, sp.Model(events, mult=np.ones(len(ev), np.float32)) as M, \
            sp.Model(lors) as S, sp.Recon(X, M, sp.Chunks.blocks(events, 3), num_subsets=1, sens_model=S) as R:
        R.iterate(3)
    np.testing.assert_allclose(x_lm, x_sino, rtol=2e-3, atol=2e-3 * x_sino.max())


def test_tof_listmode_osem_runs_and_improves(rt):
    s = scanner()
    xs, xe = s.lors()
    n = len(xs)
    T = 11
    lors = sp.Lors(xs, xe)
    tof = sp.Tof(T, 20.0, 15.0)
    sino = np.zeros((n, T), np.float32)
    with sp.Image(phantom(), VS, ORIGIN) as I, sp.Proj(lors, sino) as P:
        sp.fwd_tof_sino(I, P, tof)
    rng = np.random.default_rng(4)
    counts = rng.poisson(sino.ravel() * 0.05)
    e = np.repeat(np.arange(n * T), counts)
    rng.shuffle(e)
    lor, b = e // T, (e % T).astype(np.int16)
    events = sp.Lors(np.ascontiguousarray(xs[lor]), np.ascontiguousarray(xe[lor]), b)
    x = np.ones(DIMS, np.float32)
    obj = []
    with sp.Image(x, VS, ORIGIN) as X, sp.Model(events, tof=tof) as M, sp.Model(lors) as S, \
            sp.Recon(X, M, sp.Chunks.blocks(events, 4), num_subsets=4, sens_model=S, objective=True) as R:
        R.iterate(3, callback=lambda p: obj.append(p["objective"]))
    assert obj[0] > obj[-1]
    truth = phantom()
    # hot region brighter than the background after a few TOF-LM-OSEM iterations
    assert x[truth == 3].mean() > 1.5 * x[truth == 1].mean()


def test_objective_pieces_match_numpy(rt):
    """Recon.gradient / hessian_times / subset_objective / update against the same quantities written with the
    binding's projections (subset 1 of 2: the odd views), in double with NumPy."""
    s = scanner()
    xs, xe = s.lors()
    n = len(xs)
    rng = np.random.default_rng(1)
    mult = rng.uniform(0.5, 1.0, n).astype(np.float32)
    add = np.full(n, 0.2, np.float32)
    lors = sp.Lors(xs, xe)
    views = s.chunks_views(lors)
    per_view = n // 64
    odd = np.zeros(n, bool)
    for v in range(1, 64, 2):
        odd[v * per_view:(v + 1) * per_view] = True

    A_fwd, A_back = projections(lors, views, n)

    y = np.floor(mult * A_fwd(phantom()) + add + rng.uniform(0, 1, n)).astype(np.float32)
    x0 = (0.5 * phantom() + 0.3).astype(np.float32)
    v0 = rng.uniform(0, 1, DIMS).astype(np.float32)
    ybar = mult * A_fwd(x0) + add
    av = A_fwd(v0)
    m, yd = mult.astype(np.float64), y.astype(np.float64)
    grad_ref = A_back(np.where(odd, m * yd / ybar - m, 0))
    hess_ref = A_back(np.where(odd, m * m * yd * av / ybar ** 2, 0))
    approx_ref = A_back(np.where(odd & (yd > 0), m * m * av / np.where(yd > 0, yd, 1), 0))
    nll_ref = np.sum(np.where(odd, ybar - np.where(yd > 0, yd * np.log(ybar), 0), 0))
    sens1 = A_back(np.where(odd, m, 0))
    upd_ref = x0 * np.clip(A_back(np.where(odd, m * yd / ybar, 0)) / np.where(sens1 > 0, sens1, 1), 0.8, 1.25)
    upd_ref = np.where(sens1 > 0, upd_ref, 0)

    x, xc = np.ones(DIMS, np.float32), x0.copy()
    g, h, ha, v, w = (np.zeros(DIMS, np.float32) for _ in range(5))
    v[...] = v0
    with sp.Image(x, VS, ORIGIN) as X, sp.Proj(lors, y) as Y, sp.Model(lors, mult, add) as M, \
            sp.Recon(X, M, views, data=Y, num_subsets=2) as R, sp.Image(xc, VS, ORIGIN) as XC, \
            sp.Image(g, VS, ORIGIN) as G, sp.Image(h, VS, ORIGIN) as H, sp.Image(ha, VS, ORIGIN) as HA, \
            sp.Image(v, VS, ORIGIN) as V, sp.Image(w, VS, ORIGIN) as W:
        R.gradient(1, XC, G)
        R.hessian_times(1, XC, V, H)
        R.hessian_times(1, None, V, HA, approximate=True)
        nll = R.subset_objective(1, XC)
        for img in (G, H, HA):
            img.sync()
        R.update(1, XC, W, 0.8, 1.25)
        XC.sync()
        with pytest.raises(sp.Error) as e:
            R.gradient(2, XC, G)
        assert e.value.status == sp.ERR_RANGE
        with pytest.raises(sp.Error) as e:
            R.hessian_times(1, XC, V, V)
        assert e.value.status == sp.ERR_INVALID
    for got, ref in ((g, grad_ref), (h, hess_ref), (ha, approx_ref), (xc, upd_ref)):
        assert np.abs(ref).max() > 0
        assert np.linalg.norm(got - ref) <= 1e-4 * np.linalg.norm(ref)
    assert abs(nll - nll_ref) <= 1e-6 * abs(nll_ref)


def test_small_value_rule_matches_numpy(rt):
    """Recon(max_ratio=10000, small_fraction=1e-6): the approximate Hessian follows STIR's rules, written with NumPy on
    the binding's forward values view by view (a chunk): a forward value of the direction at most 1e-6 of its view's
    largest gives 0, else m^2 (A v) / y, capped at 10000 (so 10000 where y = 0). The direction is the phantom plus
    1e-9, every fifth count 0: the rule decides thousands of quotients, and without it the product differs."""
    s = scanner()
    xs, xe = s.lors()
    n = len(xs)
    rng = np.random.default_rng(2)
    mult = rng.uniform(0.5, 1.0, n).astype(np.float32)
    add = np.full(n, 0.2, np.float32)
    lors = sp.Lors(xs, xe)
    views = s.chunks_views(lors)
    per_view = n // 64
    A_fwd, A_back = projections(lors, views, n)
    y = np.floor(mult * A_fwd(phantom()) + add + rng.uniform(0, 1, n)).astype(np.float32)
    y[::5] = 0
    v0 = (phantom() + np.float32(1e-9)).astype(np.float32)
    av = A_fwd(v0).reshape(64, per_view)
    zero = ~(av > np.float32(1e-6) * np.maximum(av.max(axis=1, keepdims=True), 0))
    odd = np.zeros((64, per_view), bool)
    odd[1::2] = True
    m, yd, avd = mult.astype(np.float64), y.astype(np.float64), av.reshape(-1).astype(np.float64)
    num = m * m * avd
    q = np.where(num > 10000 * yd, 10000, num / np.where(yd > 0, yd, 1))
    q = np.where(odd.reshape(-1) & ~zero.reshape(-1) & (num > 0), q, 0)
    ref = A_back(q)
    assert np.sum(odd & zero & (av > 0) & (y.reshape(64, per_view) == 0)) > 100
    results = []
    for frac in (1e-6, 0.0):
        x, ha, v = np.ones(DIMS, np.float32), np.zeros(DIMS, np.float32), v0.copy()
        with sp.Image(x, VS, ORIGIN) as X, sp.Proj(lors, y) as Y, sp.Model(lors, mult, add) as M, \
                sp.Recon(X, M, views, data=Y, num_subsets=2, max_ratio=10000, small_fraction=frac) as R, \
                sp.Image(ha, VS, ORIGIN) as HA, sp.Image(v, VS, ORIGIN) as V:
            R.hessian_times(1, None, V, HA, approximate=True)
            HA.sync()
        results.append(ha)
    assert np.linalg.norm(results[0] - ref) <= 1e-5 * np.linalg.norm(ref)
    assert np.linalg.norm(results[1] - ref) > 1e-3 * np.linalg.norm(ref)
    for bad in (-1.0, 1.0, float("nan")):
        with sp.Image(np.ones(DIMS, np.float32), VS, ORIGIN) as X, sp.Proj(lors, y) as Y, \
                sp.Model(lors, mult, add) as M:
            with pytest.raises(sp.Error) as e:
                sp.Recon(X, M, views, data=Y, num_subsets=2, small_fraction=bad)
            assert e.value.status in (sp.ERR_RANGE, sp.ERR_NONFINITE)
