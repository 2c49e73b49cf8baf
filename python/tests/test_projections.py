# test_projections.py: projections through the binding against the one-shot C calls, a NumPy reference, adjointness.
import ctypes

import numpy as np
import pytest

import starproj as sp
from conftest import fp, ip
from joseph_ref import joseph_fwd

TOF = dict(bin_width=6.0, num_bins=15, sigma=5.0, num_sigmas=3.0, center_offset=0.0)


def register(g):
    img = sp.Image(g.image, g.vs, g.origin)
    lors = sp.Lors(g.xstart, g.xend)
    return img, lors


def test_fwd_matches_numpy_reference(rt, geom):
    img, lors = register(geom)
    vals = np.zeros(geom.n, np.float32)
    proj = sp.Proj(lors, vals)
    sp.fwd(img, proj)
    proj.sync()
    ref = joseph_fwd(geom.image, geom.vs, geom.origin, geom.xstart, geom.xend)
    assert np.count_nonzero(ref) > geom.n // 2
    np.testing.assert_allclose(vals, ref, rtol=2e-4, atol=2e-4 * ref.max())


def test_fwd_bitwise_equals_oneshot_c_call(rt, geom, lib):
    img, lors = register(geom)
    vals = np.zeros(geom.n, np.float32)
    with sp.Proj(lors, vals) as proj:
        chunks = sp.Chunks.blocks(lors, 7)
        for c in range(len(chunks)):
            sp.fwd(img, proj, chunks, c)
        proj.sync()
    ref = np.zeros(geom.n, np.float32)
    img.sync()
    st = lib.sproj_pp_joseph3d_fwd(fp(geom.xstart), fp(geom.xend), fp(geom.image), fp(geom.origin), fp(geom.vs),
                                   fp(ref), geom.n, ip(geom.dims), 0, 64)
    assert st == 0
    assert np.array_equal(vals, ref)


def test_chunk_list_equals_single_chunks(rt, geom):
    img, lors = register(geom)
    chunks = sp.Chunks.ranges(lors, [0, 100, 350], [100, 250, 250])
    a = np.zeros(geom.n, np.float32)
    b = np.zeros(geom.n, np.float32)
    pa, pb = sp.Proj(lors, a), sp.Proj(lors, b)
    sp.fwd(img, pa, chunks, [0, 1, 2])
    for c in (2, 0, 1):
        sp.fwd(img, pb, chunks, c)
    pa.sync()
    pb.sync(chunks, 1)
    pb.sync()
    assert np.array_equal(a, b) and a.any()


def test_back_matches_oneshot_and_is_adjoint(rt, geom, lib):
    rng = np.random.default_rng(3)
    y = rng.uniform(0, 1, geom.n).astype(np.float32)
    x = rng.uniform(0, 1, geom.dims).astype(np.float32)
    out = np.zeros(geom.dims, np.float32)
    img = sp.Image(out, geom.vs, geom.origin)
    lors = sp.Lors(geom.xstart, geom.xend)
    proj = sp.Proj(lors, y)
    sp.back(img, proj)
    img.sync()
    ref = np.zeros(geom.dims, np.float32)
    assert lib.sproj_pp_joseph3d_back(fp(geom.xstart), fp(geom.xend), fp(ref), fp(geom.origin), fp(geom.vs), fp(y),
                                      geom.n, ip(geom.dims), 0, 64) == 0
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5 * ref.max())
    # <A x, y> = <x, A^T y>, A from the NumPy reference
    ax = joseph_fwd(x, geom.vs, geom.origin, geom.xstart, geom.xend)
    lhs = float(np.dot(ax, y.astype(np.float64)))
    rhs = float(np.dot(x.ravel().astype(np.float64), out.ravel().astype(np.float64)))
    assert abs(lhs - rhs) <= 1e-4 * abs(lhs)


def test_back_adds(rt, geom):
    img_arr = np.ones(geom.dims, np.float32)
    img = sp.Image(img_arr, geom.vs, geom.origin)
    lors = sp.Lors(geom.xstart, geom.xend)
    zero = sp.Proj(lors, np.zeros(geom.n, np.float32))
    sp.back(img, zero)
    img.sync()
    assert np.array_equal(img_arr, np.ones(geom.dims, np.float32))


def test_zero_restarts_a_back_projection_target(rt, geom):
    # an image holding something, zeroed by a task, then back projected into: the same as into an array of zeros
    vals = np.random.default_rng(3).uniform(0.5, 2.0, geom.n).astype(np.float32)
    lors = sp.Lors(geom.xstart, geom.xend)
    acc_arr = np.full(geom.dims, 7.0, np.float32)
    fresh_arr = np.zeros(geom.dims, np.float32)
    acc = sp.Image(acc_arr, geom.vs, geom.origin)
    fresh = sp.Image(fresh_arr, geom.vs, geom.origin)
    p = sp.Proj(lors, vals)
    for _ in range(2):
        acc.zero()
        sp.back(acc, p)
    sp.back(fresh, p)
    acc.sync()
    fresh.sync()
    assert fresh_arr.sum() > 0
    np.testing.assert_allclose(acc_arr, fresh_arr, rtol=1e-5, atol=1e-6)


def tof_args(g, tof_bins):
    return (ctypes.c_float(TOF["bin_width"]), fp(np.array([TOF["sigma"]], np.float32)),
            fp(np.array([TOF["center_offset"]], np.float32)), ctypes.c_float(TOF["num_sigmas"]))


def test_tof_sino_matches_oneshot_and_sums_to_nontof(rt, geom, lib):
    img, lors = register(geom)
    T = TOF["num_bins"]
    vals = np.zeros((geom.n, T), np.float32)
    tof = sp.Tof(T, TOF["bin_width"], TOF["sigma"], TOF["num_sigmas"], TOF["center_offset"])
    proj = sp.Proj(lors, vals)
    assert proj.values_per_lor == T
    sp.fwd_tof_sino(img, proj, tof)
    proj.sync()
    ref = np.zeros((geom.n, T), np.float32)
    bw, sig, off, ns = tof_args(geom, T)
    assert lib.sproj_pp_joseph3d_tof_sino_fwd(fp(geom.xstart), fp(geom.xend), fp(geom.image), fp(geom.origin),
                                              fp(geom.vs), fp(ref), geom.n, ip(geom.dims), bw, sig, off, ns, T, 0, 0,
                                              0, 64) == 0
    np.testing.assert_allclose(vals, ref, rtol=1e-6, atol=1e-6 * ref.max())
    # bins covering the whole LOR inside the image sum to the non-TOF value
    nontof = joseph_fwd(geom.image, geom.vs, geom.origin, geom.xstart, geom.xend)
    np.testing.assert_allclose(vals.sum(1), nontof, rtol=2e-3, atol=2e-3 * nontof.max())
    # back projection of the TOF sinogram, against the one-shot call
    y = np.random.default_rng(5).uniform(0, 1, (geom.n, T)).astype(np.float32)
    out = np.zeros(geom.dims, np.float32)
    with sp.Image(out, geom.vs, geom.origin) as oimg, sp.Proj(lors, y) as py:
        sp.back_tof_sino(oimg, py, tof)
    bref = np.zeros(geom.dims, np.float32)
    assert lib.sproj_pp_joseph3d_tof_sino_back(fp(geom.xstart), fp(geom.xend), fp(bref), fp(geom.origin), fp(geom.vs),
                                               fp(y), geom.n, ip(geom.dims), bw, sig, off, ns, T, 0, 0, 0, 64) == 0
    np.testing.assert_allclose(out, bref, rtol=1e-5, atol=1e-5 * bref.max())


def test_tof_listmode_is_sinogram_bin(rt, geom, lib):
    T = TOF["num_bins"]
    rng = np.random.default_rng(7)
    bins = rng.integers(0, T, geom.n).astype(np.int16)
    img = sp.Image(geom.image, geom.vs, geom.origin)
    events = sp.Lors(geom.xstart, geom.xend, bins)
    assert events.has_tof_bins
    tof = sp.Tof(T, TOF["bin_width"], TOF["sigma"], TOF["num_sigmas"])
    lm = np.zeros(geom.n, np.float32)
    sino = np.zeros((geom.n, T), np.float32)
    plain = sp.Lors(geom.xstart, geom.xend)
    p_lm, p_sino = sp.Proj(events, lm), sp.Proj(plain, sino)
    ch = sp.Chunks.blocks(events, 4)
    sp.fwd_tof_lm(img, p_lm, tof, ch, [0, 1, 2, 3])
    sp.fwd_tof_sino(img, p_sino, tof)
    p_lm.sync()
    p_sino.sync()
    np.testing.assert_allclose(lm, sino[np.arange(geom.n), bins], rtol=1e-6, atol=1e-7)
    ref = np.zeros(geom.n, np.float32)
    bw, sig, off, ns = tof_args(geom, T)
    assert lib.sproj_pp_joseph3d_tof_lm_fwd(fp(geom.xstart), fp(geom.xend), fp(geom.image), fp(geom.origin),
                                            fp(geom.vs), fp(ref), geom.n, ip(geom.dims), bw, sig, off, ns,
                                            bins.ctypes.data_as(ctypes.POINTER(ctypes.c_short)), T, 0, 0, 0, 64) == 0
    assert np.array_equal(lm, ref)
    # listmode back projection is the adjoint of its forward projection
    y = rng.uniform(0, 1, geom.n).astype(np.float32)
    out = np.zeros(geom.dims, np.float32)
    with sp.Image(out, geom.vs, geom.origin) as oimg, sp.Proj(events, y) as py:
        sp.back_tof_lm(oimg, py, tof, ch, sp.ALL_CHUNKS)
    lhs = float(np.dot(lm.astype(np.float64), y))
    rhs = float(np.dot(geom.image.ravel().astype(np.float64), out.ravel()))
    assert abs(lhs - rhs) <= 1e-4 * abs(lhs)
    bref = np.zeros(geom.dims, np.float32)
    assert lib.sproj_pp_joseph3d_tof_lm_back(fp(geom.xstart), fp(geom.xend), fp(bref), fp(geom.origin), fp(geom.vs),
                                             fp(y), geom.n, ip(geom.dims), bw, sig, off, ns,
                                             bins.ctypes.data_as(ctypes.POINTER(ctypes.c_short)), T, 0, 0, 0, 64) == 0
    np.testing.assert_allclose(out, bref, rtol=1e-5, atol=1e-5 * bref.max())


def test_tof_listmode_held_order(rt, geom):
    """Events whose order the library holds: the same forward values bit for bit, back projection to float rounding."""
    T = TOF["num_bins"]
    rng = np.random.default_rng(11)
    bins = rng.integers(0, T, geom.n).astype(np.int16)
    tof = sp.Tof(T, TOF["bin_width"], TOF["sigma"], TOF["num_sigmas"])
    img = sp.Image(geom.image, geom.vs, geom.origin)
    out, back = {}, {}
    y = rng.uniform(0, 1, geom.n).astype(np.float32)
    for held in (False, True):
        events = sp.Lors(geom.xstart, geom.xend, bins)
        if held:
            events.hold_order(geom.vs)
            events.hold_order(geom.vs)  # a second call holds nothing more
        lm = np.zeros(geom.n, np.float32)
        with sp.Proj(events, lm) as p:
            sp.fwd_tof_lm(img, p, tof)
            p.sync()
        b = np.zeros(geom.dims, np.float32)
        with sp.Image(b, geom.vs, geom.origin) as bimg, sp.Proj(events, y) as py:
            sp.back_tof_lm(bimg, py, tof)
        out[held], back[held] = lm, b
        if held:
            events.drop_order()
        events.close()
    assert np.count_nonzero(out[False]) > 0
    assert np.array_equal(out[True], out[False])
    np.testing.assert_allclose(back[True], back[False], rtol=1e-5, atol=1e-6 * back[False].max())
    plain = sp.Lors(geom.xstart, geom.xend)
    with pytest.raises(sp.Error):
        plain.hold_order(geom.vs)
    events = sp.Lors(geom.xstart, geom.xend, bins)
    with pytest.raises(sp.Error):
        events.hold_order([1.0, 0.0, 1.0])
    with pytest.raises((TypeError, ValueError)):
        events.hold_order([1.0, 2.0])
    events.close()
    plain.close()


def test_per_lor_tof_sigma(rt, geom):
    T = TOF["num_bins"]
    img, lors = register(geom)
    sig = np.full(geom.n, TOF["sigma"], np.float32)
    a = np.zeros((geom.n, T), np.float32)
    b = np.zeros((geom.n, T), np.float32)
    t_arr = sp.Tof(T, TOF["bin_width"], sig, lors=lors)
    t_sc = sp.Tof(T, TOF["bin_width"], TOF["sigma"])
    with sp.Proj(lors, a) as pa, sp.Proj(lors, b) as pb:
        sp.fwd_tof_sino(img, pa, t_arr)
        sp.fwd_tof_sino(img, pb, t_sc)
    assert np.array_equal(a, b)
    with pytest.raises(ValueError, match="sigma"):
        sp.Tof(T, TOF["bin_width"], sig)  # per-LOR values without their LOR set


def test_batch_and_merge(rt, geom):
    img, lors = register(geom)
    ch = sp.Chunks.blocks(lors, 12)
    a = np.zeros(geom.n, np.float32)
    b = np.zeros(geom.n, np.float32)
    pa, pb = sp.Proj(lors, a), sp.Proj(lors, b)
    with sp.batch():
        for c in range(len(ch)):
            sp.fwd(img, pa, ch, c)
    sp.fwd(img, pb, chunks=ch, chunk=list(range(12)))
    sp.wait_all()
    pa.sync()
    pb.sync()
    assert np.array_equal(a, b)


def test_worker_stats(rt, geom):
    img, lors = register(geom)
    sp.stats_reset()
    p = sp.Proj(lors, np.zeros(geom.n, np.float32))
    sp.fwd(img, p)
    p.sync()
    stats = sp.worker_stats()
    assert len(stats) == sp.num_workers() == sp.num_cpu_workers() + 0
    assert sum(s["lors"] for s in stats) == geom.n
    assert all(not s["is_gpu"] and s["gpu"] == -1 for s in stats)
    sp.stats_reset()
    assert sum(s["tasks"] for s in sp.worker_stats()) == 0
