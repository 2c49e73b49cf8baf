# test_parallelproj_core.py: starproj.parallelproj_core against libparallelproj's own module, call for call.
"""starproj.parallelproj_core against libparallelproj's parallelproj_core (its CPU build, made by
scripts/test-python.sh --with-parallelproj SRC and found through STARPROJ_TEST_PARALLELPROJ): the same arguments
give the same numbers (forward bit for bit, the rest within 1e-5 of the largest value), the same in-place outputs
and the same exception types. Where starproj's own TOF conventions differ from libparallelproj's (the direction of the
centre offset, the listmode normalisation), this module computes libparallelproj's numbers, and the tests show that
starproj's own calls keep the project's."""
import ctypes
import importlib
import inspect
import os
import re
import sys
import threading

import numpy as np
import pytest

import starproj as sp
import starproj.parallelproj_core as ppc
from conftest import ensure_runtime

CALLS = ["joseph3d_fwd", "joseph3d_back", "joseph3d_tof_sino_fwd", "joseph3d_tof_sino_back", "joseph3d_tof_lm_fwd",
         "joseph3d_tof_lm_back"]
RTOL = 1e-5


def _load_reference():
    where = os.environ.get("STARPROJ_TEST_PARALLELPROJ")
    if not where:
        return None, ("libparallelproj's parallelproj_core was not built: run scripts/test-python.sh "
                      "--with-parallelproj SRC (libparallelproj's source or tarball)")
    sys.path.insert(0, where)
    try:
        return importlib.import_module("parallelproj_core"), None
    except ImportError as e:
        return None, "libparallelproj's parallelproj_core in %s cannot be imported: %s" % (where, e)
    finally:
        sys.path.remove(where)


REF, WHY = _load_reference()
needs_ref = pytest.mark.skipif(REF is None, reason=WHY or "")


@pytest.fixture
def ref():
    ensure_runtime()
    yield REF
    sp.wait_all()


class Scene:
    """A random image (anisotropic voxels, off-centre origin) and random LORs through and around it, shape
    lead + (3,)."""

    def __init__(self, seed, lead=(700,), increasing_axis=False):
        rng = np.random.default_rng(seed)
        self.rng = rng
        self.shape = tuple(int(k) for k in rng.integers(7, 16, 3))
        self.vs = rng.uniform(0.8, 2.2, 3).astype(np.float32)
        self.origin = (-(np.array(self.shape) - 1) / 2 * self.vs + rng.uniform(-2, 2, 3)).astype(np.float32)
        self.image = rng.uniform(0.2, 2.0, self.shape).astype(np.float32)
        half = np.array(self.shape) * self.vs / 2
        n = int(np.prod(lead))
        r = 1.3 * np.linalg.norm(half)
        d = rng.normal(size=(n, 3))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        mid = rng.uniform(-0.6, 0.6, (n, 3)) * half
        xs, xe = mid - r * d, mid + r * d
        if increasing_axis:
            # libparallelproj shifts TOF bins by the centre offset along its principal axis, starproj's own calls
            # along the LOR towards xend: with the principal coordinate increasing the two agree
            axis = np.argmax(np.abs(xe - xs), axis=1)
            flip = (xe - xs)[np.arange(n), axis] < 0
            xs[flip], xe[flip] = xe[flip].copy(), xs[flip].copy()
        self.lead = lead
        self.xs = xs.astype(np.float32).reshape(lead + (3,))
        self.xe = xe.astype(np.float32).reshape(lead + (3,))
        self.n = n

    def args(self):
        return self.xs, self.xe, self.image, self.origin, self.vs


def close(a, b, rtol=RTOL):
    scale = max(float(np.abs(a).max()), 1e-30)
    return float(np.abs(a.astype(np.float64) - b).max()) / scale <= rtol, float(np.abs(a - b).max()) / scale


def tof_setup(s, nbins, sigma_per_lor, offset, offset_per_lor):
    """TOF bins of ~1.5 voxels covering every LOR's inner part; sigma and offset as (1,) or per-LOR arrays."""
    vs = float(s.vs.mean())
    width = np.float32(1.5 * vs)
    if sigma_per_lor:
        sigma = (1.3 * vs * s.rng.uniform(0.7, 1.4, s.lead)).astype(np.float32)
    else:
        sigma = np.array([1.3 * vs], np.float32)
    if offset_per_lor:
        off = (offset * width * s.rng.uniform(-1, 1, s.lead)).astype(np.float32)
    else:
        off = np.array([offset * width], np.float32)
    return width, sigma, off


def test_the_six_calls_and_their_arguments():
    assert [c for c in CALLS if callable(getattr(ppc, c, None))] == CALLS
    assert ppc.version_major == 2 and ppc.__version__.startswith("2.0.8+starproj.")
    assert ppc.cuda_enabled in (0, 1)
    expect = {
        "joseph3d_fwd": "lor_start lor_end image image_origin voxel_size projection_values device_id=0 "
                        "threads_per_block=64",
        "joseph3d_tof_sino_fwd": "lor_start lor_end image image_origin voxel_size projection_values tof_bin_width "
                                 "tof_sigma tof_center_offset num_tof_bins num_sigmas=3.0 device_id=0 "
                                 "threads_per_block=64",
        "joseph3d_tof_lm_fwd": "event_start event_end image image_origin voxel_size projection_values tof_bin_width "
                               "tof_sigma tof_center_offset tof_bin_index num_tof_bins num_sigmas=3.0 device_id=0 "
                               "threads_per_block=64",
    }
    for name in CALLS:
        sig = inspect.signature(getattr(ppc, name))
        got = " ".join(p.name if p.default is inspect.Parameter.empty else "%s=%r" % (p.name, p.default)
                       for p in sig.parameters.values())
        assert got == expect[name.replace("_back", "_fwd")], name


@needs_ref
def test_argument_lists_match_libparallelproj(ref):
    """Names, order and defaults as libparallelproj's nanobind signatures (first line of each docstring) say."""
    for name in CALLS:
        first = getattr(ref, name).__doc__.splitlines()[0]
        inner = first[first.index("(") + 1:first.rindex(") ->")]
        parts, depth, cur = [], 0, ""
        for ch in inner:  # split at the commas outside ndarray[...]
            depth += (ch == "[") - (ch == "]")
            if ch == "," and depth == 0:
                parts.append(cur.strip())
                cur = ""
            else:
                cur += ch
        parts.append(cur.strip())
        theirs = [(p.split(":")[0], p.split(" = ")[1] if " = " in p else None) for p in parts]
        ours = [(p.name, None if p.default is inspect.Parameter.empty else repr(p.default))
                for p in inspect.signature(getattr(ppc, name)).parameters.values()]
        assert ours == theirs, name


@needs_ref
@pytest.mark.parametrize("seed,lead", [(1, (900,)), (2, (30, 31)), (3, (4, 5, 6))])
def test_forward_bit_identical(ref, seed, lead):
    s = Scene(seed, lead)
    a = np.full(lead, np.nan, np.float32)
    b = np.full(lead, np.nan, np.float32)
    ref.joseph3d_fwd(*s.args(), a)
    ppc.joseph3d_fwd(*s.args(), b)
    assert np.array_equal(a, b), np.abs(a - b).max()
    assert np.count_nonzero(b) > 0.5 * b.size  # most LORs cross the image: a real comparison


@needs_ref
@pytest.mark.parametrize("seed,lead", [(4, (900,)), (5, (20, 45))])
def test_back_adds_into_the_image(ref, seed, lead):
    s = Scene(seed, lead)
    y = s.rng.uniform(0.5, 1.5, lead).astype(np.float32)
    start = s.rng.uniform(0, 1, s.shape).astype(np.float32)
    a, b = start.copy(), start.copy()
    ref.joseph3d_back(s.xs, s.xe, a, s.origin, s.vs, y)
    ppc.joseph3d_back(s.xs, s.xe, b, s.origin, s.vs, y)
    ok, err = close(a - start, b - start)
    assert ok, err
    assert np.abs(a - start).max() > 1.0


def principal_sign(xs, xe):
    """+1 where a LOR's coordinate on its principal axis (largest |direction|) increases from start to end, else -1."""
    d = (xe - xs).reshape(-1, 3)
    return np.where(d[np.arange(len(d)), np.argmax(np.abs(d), axis=1)] >= 0, 1, -1).astype(np.float32)


@needs_ref
@pytest.mark.parametrize("nbins,sigma_per_lor,offset,offset_per_lor,num_sigmas",
                         [(15, False, 0.0, False, 3.0), (16, True, 0.0, False, 3.0), (21, False, 0.7, False, 2.0),
                          (13, True, 1.0, True, 4.5), (1, False, 0.0, False, 3.0), (17, False, 0.8, True, 3.0)])
def test_tof_sinogram(ref, nbins, sigma_per_lor, offset, offset_per_lor, num_sigmas):
    """LORs in both directions along their principal axis, offsets included: libparallelproj's numbers within 1e-5."""
    s = Scene(10 + nbins, (400,))
    assert 0.3 < np.mean(principal_sign(s.xs, s.xe) < 0) < 0.7  # both directions, about half each
    width, sigma, off = tof_setup(s, nbins, sigma_per_lor, offset, offset_per_lor)
    a = np.full((s.n, nbins), np.nan, np.float32)
    b = np.full((s.n, nbins), np.nan, np.float32)
    ref.joseph3d_tof_sino_fwd(*s.args(), a, width, sigma, off, nbins, num_sigmas)
    ppc.joseph3d_tof_sino_fwd(*s.args(), b, float(width), sigma, off, nbins, num_sigmas=num_sigmas)
    ok, err = close(a, b)
    assert ok, err
    start = np.ones(s.shape, np.float32)
    ia, ib = start.copy(), start.copy()
    ref.joseph3d_tof_sino_back(s.xs, s.xe, ia, s.origin, s.vs, a, width, sigma, off, nbins, num_sigmas)
    ppc.joseph3d_tof_sino_back(s.xs, s.xe, ib, s.origin, s.vs, a, width, sigma, off, nbins, num_sigmas)
    ok, err = close(ia - start, ib - start)
    assert ok, err


@needs_ref
def test_tof_offset_direction(ref):
    """On LORs whose principal coordinate decreases, libparallelproj moves the bins by +offset against xend's
    direction: this module does the same (1e-5), while starproj's own calls keep the project's convention (along the
    LOR towards xend), where libparallelproj's +offset is starproj's -offset."""
    s = Scene(31, (500,), increasing_axis=True)
    xs, xe = s.xe.copy(), s.xs.copy()  # every principal coordinate decreases now
    nbins = 17
    width, sigma, off = tof_setup(s, nbins, False, 0.8, False)
    a = np.zeros((s.n, nbins), np.float32)
    b = np.zeros((s.n, nbins), np.float32)
    ref.joseph3d_tof_sino_fwd(xs, xe, s.image, s.origin, s.vs, a, width, sigma, off, nbins)
    ppc.joseph3d_tof_sino_fwd(xs, xe, s.image, s.origin, s.vs, b, width, sigma, off, nbins)
    ok, err = close(a, b)
    assert ok, err
    # starproj's own call: the same numbers with the offset negated, different ones with it as given
    img, lors = sp.Image(s.image, s.vs, s.origin), sp.Lors(xs.reshape(-1, 3), xe.reshape(-1, 3))
    for sign, same in ((-1, True), (1, False)):
        own = np.zeros((s.n, nbins), np.float32)
        with sp.Proj(lors, own) as p:
            sp.fwd_tof_sino(img, p, sp.Tof(nbins, float(width), float(sigma[0]), 3.0, sign * float(off[0])))
        assert close(a, own)[0] == same, close(a, own)[1]
    assert not close(a, own, 1e-2)[0]  # the convention matters here well beyond the tolerance


@needs_ref
@pytest.mark.parametrize("nbins,sigma_per_lor,offset_per_lor,num_sigmas", [(11, False, False, 3.0),
                                                                           (20, True, True, 2.5),
                                                                           (9, True, False, 4.5),
                                                                           (1, False, True, 3.0)])
def test_tof_listmode(ref, nbins, sigma_per_lor, offset_per_lor, num_sigmas):
    """libparallelproj's listmode numbers, forward bit for bit on CPU (the same float operations, glibc's erff on
    both sides), back within 1e-5, on LORs in both directions with offsets.
    Its listmode projector normalises over the planes of an event's window, not like its sinogram, and differs from
    the sinogram's bin by 1e-3 to 5e-3 of the largest value: starproj's own listmode calls keep the project's
    definition (an event projects to exactly its LOR's TOF-sinogram bin)."""
    s = Scene(40 + nbins, (600,))
    width, sigma, off = tof_setup(s, nbins, sigma_per_lor, 0.5, offset_per_lor)
    bins = s.rng.integers(0, nbins, s.n).astype(np.int16)
    lm_ref = np.full(s.n, np.nan, np.float32)
    lm = np.full(s.n, np.nan, np.float32)
    ref.joseph3d_tof_lm_fwd(*s.args(), lm_ref, width, sigma, off, bins, nbins, num_sigmas)
    ppc.joseph3d_tof_lm_fwd(*s.args(), lm, width, sigma, off, bins, nbins, num_sigmas)
    assert np.array_equal(lm_ref, lm), close(lm_ref, lm)[1]
    assert np.count_nonzero(lm) > 0.3 * s.n
    y = s.rng.uniform(0.5, 1.5, s.n).astype(np.float32)
    ia = np.ones(s.shape, np.float32)
    ib = np.ones(s.shape, np.float32)
    ref.joseph3d_tof_lm_back(*s.args()[:2], ia, s.origin, s.vs, y, width, sigma, off, bins, nbins, num_sigmas)
    ppc.joseph3d_tof_lm_back(*s.args()[:2], ib, s.origin, s.vs, y, width, sigma, off, bins, nbins, num_sigmas)
    ok, err = close(ia - 1, ib - 1)
    assert ok, err
    # starproj's own listmode call: its LOR's sinogram bin, which is libparallelproj's sinogram bin (with the offset
    # along the LOR) and not its listmode value
    sino = np.zeros((s.n, nbins), np.float32)
    ref.joseph3d_tof_sino_fwd(*s.args(), sino, width, sigma, off, nbins, num_sigmas)
    at_bin = sino[np.arange(s.n), bins]
    own_off = (np.broadcast_to(off, (s.n,)) * principal_sign(s.xs, s.xe)).astype(np.float32)
    events = sp.Lors(s.xs, s.xe, bins)
    tof = sp.Tof(nbins, float(width), sigma if sigma_per_lor else float(sigma[0]), num_sigmas, own_off, lors=events)
    own = np.full(s.n, np.nan, np.float32)
    with sp.Image(s.image, s.vs, s.origin) as img, sp.Proj(events, own) as p:
        sp.fwd_tof_lm(img, p, tof)
    ok, err = close(at_bin, own)
    assert ok, err
    if nbins > 1:
        assert not close(lm_ref, at_bin, 1e-4)[0]  # the two definitions really differ


@needs_ref
@pytest.mark.parametrize("nbins,sigma_per_lor,offset_per_lor", [(5, False, False), (27, True, True), (1, True, False)])
def test_tof_listmode_bins_outside_the_range(ref, nbins, sigma_per_lor, offset_per_lor):
    """Listmode bins outside 0 .. num_tof_bins-1 (libparallelproj's own package projects bins -2 .. 2 with 27 bins):
    libparallelproj places bin b b bin widths from bin 0 whatever b, and this module gives its values, forward bit
    for bit on CPU and back within 1e-5 of the largest value, for bins a few bin widths beyond either end (many of
    them within reach of the image: values that are not 0) and for int16's extremes (windows far outside the image:
    0). starproj's own listmode calls keep refusing such bins."""
    s = Scene(70 + nbins, (800,))
    # the bins span half the image's smallest side, so that bins beyond either end still cross the image; sigma of
    # ~1.3 voxels (a kernel narrower than the planes' spacing makes libparallelproj's listmode divide 0 by 0)
    width = np.float32(0.5 * float(np.min(np.array(s.shape) * s.vs)) / nbins)
    vs = float(s.vs.mean())
    sigma = (1.3 * vs * (s.rng.uniform(0.7, 1.4, s.n) if sigma_per_lor else np.ones(1))).astype(np.float32)
    off = (0.5 * width * (s.rng.uniform(-1, 1, s.n) if offset_per_lor else np.ones(1))).astype(np.float32)
    bins = s.rng.integers(-8, nbins + 8, s.n).astype(np.int16)
    bins[:4] = [-32768, 32767, -1, nbins]
    outside = (bins < 0) | (bins >= nbins)
    lm_ref = np.full(s.n, np.nan, np.float32)
    lm = np.full(s.n, np.nan, np.float32)
    ref.joseph3d_tof_lm_fwd(*s.args(), lm_ref, width, sigma, off, bins, nbins)
    ppc.joseph3d_tof_lm_fwd(*s.args(), lm, width, sigma, off, bins, nbins)
    assert np.array_equal(lm_ref, lm), close(lm_ref, lm)[1]  # measured bit for bit, as for bins inside
    assert np.all(np.isfinite(lm)) and lm[0] == 0 and lm[1] == 0
    assert np.count_nonzero(lm[outside]) > 0.2 * np.count_nonzero(outside)
    y = s.rng.uniform(0.5, 1.5, s.n).astype(np.float32)
    y[~outside] = 0  # the bins outside alone
    ia = np.ones(s.shape, np.float32)
    ib = np.ones(s.shape, np.float32)
    ref.joseph3d_tof_lm_back(*s.args()[:2], ia, s.origin, s.vs, y, width, sigma, off, bins, nbins)
    ppc.joseph3d_tof_lm_back(*s.args()[:2], ib, s.origin, s.vs, y, width, sigma, off, bins, nbins)
    assert float(np.abs(ia - 1).max()) > 0.1
    ok, err = close(ia - 1, ib - 1)
    assert ok, err
    # starproj's own calls: a negative bin is refused where the events are registered, a bin past the end where
    # they are projected
    with pytest.raises(sp.Error) as e:
        sp.Lors(s.xs, s.xe, bins)
    assert e.value.status == sp.ERR_RANGE and "-32768" in e.value.message
    high = np.clip(bins, 0, None).astype(np.int16)
    events = sp.Lors(s.xs, s.xe, high)
    tof = sp.Tof(nbins, float(width), float(sigma[0]), 3.0, 0.0)
    own = np.full(s.n, 7.0, np.float32)
    with sp.Image(s.image, s.vs, s.origin) as img, sp.Proj(events, own) as p:
        with pytest.raises(sp.Error) as e:
            sp.fwd_tof_lm(img, p, tof)
    assert e.value.status == sp.ERR_RANGE and "32767" in e.value.message
    assert np.all(own == 7.0)


def _bad_cases():
    """(name, call(m, arrays), outputs it must leave untouched) for arguments libparallelproj refuses."""
    f = np.float32

    def base():
        n = 10
        return dict(xs=np.zeros((n, 3), f), xe=np.full((n, 3), 5, f), img=np.ones((4, 5, 6), f), o=np.zeros(3, f),
                    v=np.ones(3, f), y=np.full(n, 7, f), ys=np.full((n, 4), 7, f), s1=np.ones(1, f),
                    b=np.zeros(n, np.int16))

    c = [
        ("image float64", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"].astype(np.float64), a["o"], a["v"],
                                                      a["y"])),
        ("image 2-D", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"][0], a["o"], a["v"], a["y"])),
        ("origin of 4", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"], np.zeros(4, f), a["v"], a["y"])),
        ("origin a list", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"], [0, 0, 0], a["v"], a["y"])),
        ("values too short", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"], a["y"][:5])),
        ("values strided", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"],
                                                       np.zeros(20, f)[::2])),
        ("values read-only", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"],
                                                         np.frombuffer(bytes(40), f))),
        ("back image read-only", lambda m, a: m.joseph3d_back(a["xs"], a["xe"],
                                                              np.frombuffer(bytes(480), f).reshape(4, 5, 6),
                                                              a["o"], a["v"], a["y"])),
        ("LORs 1-D", lambda m, a: m.joseph3d_fwd(a["xs"].ravel(), a["xe"].ravel(), a["img"], a["o"], a["v"],
                                                 a["y"])),
        ("LORs (n, 2)", lambda m, a: m.joseph3d_back(a["xs"][:, :2].copy(), a["xe"][:, :2].copy(), a["img"],
                                                     a["o"], a["v"], a["y"])),
        ("ends differ", lambda m, a: m.joseph3d_back(a["xs"], a["xe"][:5], a["img"], a["o"], a["v"], a["y"])),
        ("argument missing", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"])),
        ("unknown keyword", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"], a["y"], foo=1)),
        ("device_id a float", lambda m, a: m.joseph3d_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"], a["y"],
                                                          device_id=1.5)),
        ("bins differ from values", lambda m, a: m.joseph3d_tof_sino_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"],
                                                                         a["ys"], 1.0, a["s1"], a["s1"], 5)),
        ("num_tof_bins beyond a short", lambda m, a: m.joseph3d_tof_sino_back(a["xs"], a["xe"], a["img"], a["o"],
                                                                              a["v"], a["ys"], 1.0, a["s1"],
                                                                              a["s1"], 40000)),
        ("num_tof_bins a float", lambda m, a: m.joseph3d_tof_sino_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"],
                                                                      a["ys"], 1.0, a["s1"], a["s1"], 4.0)),
        ("bin width a string", lambda m, a: m.joseph3d_tof_sino_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"],
                                                                    a["ys"], "1", a["s1"], a["s1"], 4)),
        ("sigma of 2", lambda m, a: m.joseph3d_tof_sino_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"], a["ys"],
                                                            1.0, np.ones(2, f), a["s1"], 4)),
        ("sigma a float", lambda m, a: m.joseph3d_tof_sino_back(a["xs"], a["xe"], a["img"], a["o"], a["v"],
                                                                a["ys"], 1.0, 1.0, a["s1"], 4)),
        ("offset float64", lambda m, a: m.joseph3d_tof_sino_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"],
                                                                a["ys"], 1.0, a["s1"], np.ones(1), 4)),
        ("sinogram 1-D", lambda m, a: m.joseph3d_tof_sino_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"], a["y"],
                                                              1.0, a["s1"], a["s1"], 4)),
        ("bins int32", lambda m, a: m.joseph3d_tof_lm_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"], a["y"], 1.0,
                                                          a["s1"], a["s1"], a["b"].astype(np.int32), 4)),
        ("bins too few", lambda m, a: m.joseph3d_tof_lm_back(a["xs"], a["xe"], a["img"], a["o"], a["v"], a["y"], 1.0,
                                                             a["s1"], a["s1"], a["b"][:3], 4)),
        ("events 3-D", lambda m, a: m.joseph3d_tof_lm_fwd(a["xs"].reshape(2, 5, 3), a["xe"].reshape(2, 5, 3),
                                                          a["img"], a["o"], a["v"], a["y"], 1.0, a["s1"], a["s1"],
                                                          a["b"], 4)),
        ("listmode values 2-D", lambda m, a: m.joseph3d_tof_lm_fwd(a["xs"], a["xe"], a["img"], a["o"], a["v"],
                                                                   a["y"].reshape(2, 5), 1.0, a["s1"], a["s1"],
                                                                   a["b"], 4)),
        ("listmode sigma of 5", lambda m, a: m.joseph3d_tof_lm_back(a["xs"], a["xe"], a["img"], a["o"], a["v"],
                                                                    a["y"], 1.0, np.ones(5, f), a["s1"], a["b"], 4)),
        ("values flat for 3-D LORs", lambda m, a: m.joseph3d_fwd(a["xs"].reshape(2, 5, 3), a["xe"].reshape(2, 5, 3),
                                                                 a["img"], a["o"], a["v"], a["y"])),
    ]
    return base, c


_BASE, _CASES = _bad_cases()


@pytest.mark.parametrize("name", [c[0] for c in _CASES])
def test_bad_arguments_raise_as_libparallelproj_does(rt, name):
    """The exception type libparallelproj raises (TypeError where its argument casters refuse, ValueError where its
    checks do), a message naming the call or the argument, and no output touched."""
    call = dict(_CASES)[name]
    a = _BASE()
    want = None
    if REF is not None:
        r = _BASE()
        with pytest.raises((TypeError, ValueError)) as e:
            call(REF, r)
        want = e.type
    keep = {k: v.copy() for k, v in a.items()}
    with pytest.raises((TypeError, ValueError)) as e:
        call(ppc, a)
    if want is not None:
        assert e.type is want, "%s: libparallelproj raises %s, starproj.parallelproj_core %s (%s)" % (
            name, want.__name__, e.type.__name__, e.value)
    assert re.search(r"joseph3d_\w+\(\)", str(e.value)), str(e.value)
    for k in a:
        assert np.array_equal(a[k], keep[k], equal_nan=True), k


def test_library_refusals_leave_outputs_untouched(rt):
    """What libparallelproj would compute garbage from (or crash on) starproj refuses: starproj.Error, outputs as
    they were."""
    s = Scene(50, (300,))
    y = np.full(s.n, 7.0, np.float32)
    xs = s.xs.copy()
    xs[17, 1] = np.nan
    with pytest.raises(sp.Error) as e:
        ppc.joseph3d_fwd(xs, s.xe, s.image, s.origin, s.vs, y)
    assert e.value.status == sp.ERR_NONFINITE and "17" in e.value.message
    assert np.all(y == 7.0)
    img = s.image.copy()
    with pytest.raises(sp.Error) as e:
        ppc.joseph3d_back(s.xs, s.xe, img, s.origin, np.array([1, 0, 1], np.float32), y)
    assert e.value.status == sp.ERR_VOXEL_SIZE
    assert np.array_equal(img, s.image)
    bins = np.full(s.n, 3, np.int16)
    one = np.ones(1, np.float32)
    sigma = np.full(s.n, 2.0, np.float32)
    sigma[5] = 0.0  # listmode bins may be anything (as in libparallelproj), a per-event sigma may not
    with pytest.raises(sp.Error) as e:
        ppc.joseph3d_tof_lm_fwd(*s.args(), y, 2.0, sigma, one * 0, bins, 9)
    assert e.value.status == sp.ERR_TOF and "5" in e.value.message
    assert np.all(y == 7.0)
    with pytest.raises(sp.Error):
        ppc.joseph3d_tof_lm_back(s.xs, s.xe, img, s.origin, s.vs, y, 2.0, sigma, one * 0, bins, 9)
    assert np.array_equal(img, s.image)
    with pytest.raises(sp.Error) as e:  # sigma <= 0
        ppc.joseph3d_tof_sino_fwd(*s.args(), np.zeros((s.n, 4), np.float32), 2.0, one * 0, one, 4)
    assert e.value.status == sp.ERR_TOF


def test_keywords_zero_lors_and_nd_shapes(rt):
    s = Scene(60, (6, 7))
    y = np.zeros((6, 7), np.float32)
    ppc.joseph3d_fwd(lor_start=s.xs, lor_end=s.xe, image=s.image, image_origin=s.origin, voxel_size=s.vs,
                     projection_values=y, device_id=3, threads_per_block=32)
    flat = np.zeros(42, np.float32)
    ppc.joseph3d_fwd(s.xs.reshape(42, 3), s.xe.reshape(42, 3), s.image, s.origin, s.vs, flat)
    assert np.array_equal(y.ravel(), flat) and np.count_nonzero(flat) > 20
    empty = np.zeros(0, np.float32)
    img = s.image.copy()
    ppc.joseph3d_back(s.xs.reshape(42, 3)[:0], s.xe.reshape(42, 3)[:0], img, s.origin, s.vs, empty)
    assert np.array_equal(img, s.image)


def test_calls_from_threads(rt):
    """The GIL is released while a call projects: calls from four threads at once give each its own result."""
    scenes = [Scene(70 + k, (3000,)) for k in range(4)]
    want = []
    for s in scenes:
        y = np.zeros(s.n, np.float32)
        ppc.joseph3d_fwd(*s.args(), y)
        want.append(y)
    got = [np.zeros(s.n, np.float32) for s in scenes]
    errors = []

    def run(k):
        try:
            for _ in range(3):
                ppc.joseph3d_fwd(*scenes[k].args(), got[k])
        except Exception as e:  # reported below: an exception in a thread would otherwise pass unseen
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(4):
        assert np.array_equal(got[k], want[k])


def test_devices_setting_is_restored(rt, lib):
    """A call on host arrays runs on CPU workers and leaves the process-wide device setting as it found it."""
    lib.sproj_get_devices.restype = ctypes.c_uint
    before = lib.sproj_get_devices()
    assert before != 0
    s = Scene(80, (500,))
    sp.stats_reset()
    ppc.joseph3d_fwd(*s.args(), np.zeros(s.n, np.float32))
    sp.wait_all()
    assert sum(w["lors"] for w in sp.worker_stats() if not w["is_gpu"]) == s.n
    assert lib.sproj_get_devices() == before


def _cupy_gpu():
    try:
        import cupy as cp

        return cp if cp.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:
        return None


def test_cupy_arrays_run_on_their_gpu():
    """CuPy arrays (DLPack) are projected on the GPU that holds them, in place, and give the NumPy call's numbers
    (forward to 1e-5: GPU and CPU round differently). Runs where CuPy sees a GPU and StarPU drives it."""
    cp = _cupy_gpu()
    if cp is None:
        pytest.skip("needs CuPy and a GPU")
    if sp.is_initialized() and sp.num_gpus() == 0:
        sp.shutdown()  # the CPU-only runtime of the other tests
    if not sp.is_initialized():
        sp.init()
    if sp.num_gpus() == 0:
        pytest.skip("StarPU drives no GPU here")
    s = Scene(90, (20000,))  # LORs in both directions: libparallelproj's offset convention on the GPU too
    y = np.zeros(s.n, np.float32)
    ppc.joseph3d_fwd(*s.args(), y)
    g = [cp.asarray(a) for a in s.args()]
    gy = cp.zeros(s.n, cp.float32)
    ptr = gy.data.ptr
    sp.stats_reset()
    ppc.joseph3d_fwd(*g, gy)
    assert gy.data.ptr == ptr
    assert sum(w["lors"] for w in sp.worker_stats() if w["is_gpu"]) == s.n
    ok, err = close(y, cp.asnumpy(gy))
    assert ok, err
    img = np.zeros(s.shape, np.float32)
    ppc.joseph3d_back(s.xs, s.xe, img, s.origin, s.vs, y)
    gimg = cp.zeros(s.shape, cp.float32)
    ppc.joseph3d_back(g[0], g[1], gimg, g[3], g[4], cp.asarray(y))
    ok, err = close(img, cp.asnumpy(gimg))
    assert ok, err
    nbins = 13
    width, sigma, off = tof_setup(s, nbins, True, 0.5, True)
    t = np.zeros((s.n, nbins), np.float32)
    ppc.joseph3d_tof_sino_fwd(*s.args(), t, width, sigma, off, nbins)
    gt = cp.zeros((s.n, nbins), cp.float32)
    ppc.joseph3d_tof_sino_fwd(*g, gt, width, cp.asarray(sigma), cp.asarray(off), nbins)
    ok, err = close(t, cp.asnumpy(gt))
    assert ok, err
    bins = s.rng.integers(0, nbins, s.n).astype(np.int16)
    lm = np.zeros(s.n, np.float32)
    ppc.joseph3d_tof_lm_fwd(*s.args(), lm, width, sigma, off, bins, nbins)
    glm = cp.zeros(s.n, cp.float32)
    ppc.joseph3d_tof_lm_fwd(*g, glm, width, cp.asarray(sigma), cp.asarray(off), cp.asarray(bins), nbins)
    ok, err = close(lm, cp.asnumpy(glm))
    assert ok, err
    gimg[:] = 0
    ppc.joseph3d_tof_lm_back(g[0], g[1], gimg, g[3], g[4], cp.asarray(lm), width, cp.asarray(sigma),
                             cp.asarray(off), cp.asarray(bins), nbins)
    img[:] = 0
    ppc.joseph3d_tof_lm_back(s.xs, s.xe, img, s.origin, s.vs, lm, width, sigma, off, bins, nbins)
    ok, err = close(img, cp.asnumpy(gimg))
    assert ok, err
    # arrays on two devices (host and GPU) are refused, as libparallelproj refuses them
    with pytest.raises(ValueError):
        ppc.joseph3d_fwd(g[0], g[1], s.image, g[3], g[4], gy)
    _cupy_bad_inputs(cp, s, g, width, sigma, off, nbins)
    sp.shutdown()  # the next tests start their CPU-only runtime again


def _what(e):
    """A starproj.Error's message less the names of the calls that report it (host arrays and GPU arrays are
    registered through different calls)."""
    m = e.message
    while m.startswith("sproj_") and ": " in m:
        m = m.split(": ", 1)[1]
    return m


def _cupy_bad_inputs(cp, s, g, width, sigma, off, nbins):
    """Bad coordinates, sigma and offsets in CuPy arrays are found on the GPU and refused with the status and
    message the same NumPy arrays get, the outputs untouched; listmode bins outside 0 .. nbins-1, which are fine,
    give the host's values."""
    k = s.n // 2 + 7

    def both(call, host_args, gpu_args, out, gout):
        with pytest.raises(sp.Error) as eh:
            call(*host_args)
        before = gout.copy()
        with pytest.raises(sp.Error) as eg:
            call(*gpu_args)
        assert eg.value.status == eh.value.status
        assert _what(eg.value) == _what(eh.value), (eg.value.message, eh.value.message)
        assert bool(cp.all(gout == before))
        return eh.value

    y, gy = np.zeros(s.n, np.float32), cp.full(s.n, 7.0, cp.float32)
    for value, status in ((np.nan, sp.ERR_NONFINITE), (-np.inf, sp.ERR_NONFINITE), (3e7, sp.ERR_RANGE)):
        xe = s.xe.copy()
        xe.reshape(-1, 3)[k, 1] = value
        e = both(ppc.joseph3d_fwd, (s.xs, xe, s.image, s.origin, s.vs, y),
                 (g[0], cp.asarray(xe), g[2], g[3], g[4], gy), y, gy)
        assert e.status == status and str(k) in e.message
    t, gt = np.zeros((s.n, nbins), np.float32), cp.full((s.n, nbins), 7.0, cp.float32)
    sig = np.broadcast_to(sigma, s.xs.shape[:-1]).astype(np.float32) if sigma.size == 1 else sigma.copy()
    sig.reshape(-1)[k] = 0.0
    e = both(ppc.joseph3d_tof_sino_fwd, (*s.args(), t, width, sig, off, nbins),
             (*g, gt, width, cp.asarray(sig), cp.asarray(off), nbins), t, gt)
    assert e.status == sp.ERR_TOF and str(k) in e.message
    offs = np.zeros(s.xs.shape[:-1], np.float32)
    offs.reshape(-1)[k] = np.nan
    e = both(ppc.joseph3d_tof_sino_fwd, (*s.args(), t, width, sigma, offs, nbins),
             (*g, gt, width, cp.asarray(sigma), cp.asarray(offs), nbins), t, gt)
    assert e.status == sp.ERR_NONFINITE and str(k) in e.message
    # listmode bins outside 0 .. nbins-1 are no error (libparallelproj's convention): the GPU gives the host's values
    b = s.rng.integers(-6, nbins + 6, s.n).astype(np.int16)
    b[:2] = [-32768, 32767]
    lm, glm = np.zeros(s.n, np.float32), cp.full(s.n, 7.0, cp.float32)
    ppc.joseph3d_tof_lm_fwd(*s.args(), lm, width, sigma, off, b, nbins)
    ppc.joseph3d_tof_lm_fwd(*g, glm, width, cp.asarray(sigma), cp.asarray(off), cp.asarray(b), nbins)
    ok, err = close(lm, cp.asnumpy(glm))
    assert ok, err
    assert np.count_nonzero(lm[(b < 0) | (b >= nbins)]) > 100
    img = np.zeros(s.shape, np.float32)
    ppc.joseph3d_tof_lm_back(s.xs, s.xe, img, s.origin, s.vs, lm, width, sigma, off, b, nbins)
    gimg = cp.zeros(s.shape, cp.float32)
    ppc.joseph3d_tof_lm_back(g[0], g[1], gimg, g[3], g[4], cp.asarray(lm), width, cp.asarray(sigma), cp.asarray(off),
                             cp.asarray(b), nbins)
    ok, err = close(img, cp.asnumpy(gimg))
    assert ok, err
