# test_badinput.py: malformed arguments of every kind raise Python exceptions and never bring the interpreter down.
import numpy as np
import pytest

import starproj as sp

EXC = (TypeError, ValueError, OverflowError, sp.Error)


def objects():
    img = np.ones((4, 5, 6), np.float32)
    xs = np.zeros((10, 3), np.float32)
    xe = np.zeros((10, 3), np.float32)
    xs[:, 0], xe[:, 0] = -20, 20
    I = sp.Image(img)
    L = sp.Lors(xs, xe)
    P = sp.Proj(L, np.zeros(10, np.float32))
    C = sp.Chunks.blocks(L, 2)
    T = sp.Tof(3, 5.0, 4.0)
    return img, xs, xe, I, L, P, C, T


def test_malformed_calls_raise(rt):
    img, xs, xe, I, L, P, C, T = objects()
    bad = [
        lambda: sp.Image(np.ones((0, 2, 2), np.float32)),
        lambda: sp.Image(np.ones((2, 2, 2), np.float32), (1, 1)),
        lambda: sp.Image(np.ones((2, 2, 2), np.float32), "abc"),
        lambda: sp.Image(np.ones((2, 2, 2), np.float32), origin=(np.nan, 0, 0)),
        lambda: sp.Image(np.frombuffer(b"\0" * 33, np.float32, 8, 1).reshape(2, 2, 2)),  # misaligned, read-only
        lambda: sp.Image(None),
        lambda: sp.Image(b"abcdabcd"),
        lambda: sp.Lors(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)),
        lambda: sp.Lors(xs[::2], xe[::2]),
        lambda: sp.Lors(xs, xe, np.zeros(10, np.int16) - 1),
        lambda: sp.Proj(I, np.zeros(10, np.float32)),
        lambda: sp.Proj(L, np.zeros((10, 0), np.float32)),
        lambda: sp.Proj(L, np.zeros((10, 2, 2), np.float32)),
        lambda: sp.Chunks.ranges(L, [0], [11]),
        lambda: sp.Chunks.ranges(L, [0, 1], [1]),
        lambda: sp.Chunks.ranges(L, [-1], [2]),
        lambda: sp.Chunks.ranges(L, ["a"], [2]),
        lambda: sp.Chunks.ranges(L, 5, 5),
        lambda: sp.Chunks.blocks(L, 0),
        lambda: sp.Chunks.blocks(L, 11),
        lambda: sp.Chunks.lists(L, [2, 1], [0, 3], [1, 1]),
        lambda: sp.Chunks.lists(L, [-1], [0], [1]),
        lambda: sp.Chunks.strided(L, [0], [2], [3], [5]),
        lambda: sp.fwd(I, P, C, 2),
        lambda: sp.fwd(I, P, C, -5),
        lambda: sp.fwd(I, P, C, []),
        lambda: sp.fwd(I, P, C, [0, 7]),
        lambda: sp.fwd(I, P, C, 2 ** 40),
        lambda: sp.fwd(I, P, None, 1),
        lambda: sp.fwd(I, P, C, 0, 1),
        lambda: sp.fwd(I, P, nope=1),
        lambda: sp.fwd(P, I),
        lambda: sp.fwd_tof_sino(I, P, T),  # one value per LOR, three bins
        lambda: sp.fwd_tof_lm(I, P, T),  # LORs without bins
        lambda: sp.fwd_tof_sino(I, P, None),
        lambda: sp.Tof(3, -1.0, 1.0),
        lambda: sp.Tof(3, 1.0, float("nan")),
        lambda: sp.Tof(3, 1.0, np.ones(10, np.float32), lors=I),
        lambda: sp.Tof(3, 1.0, np.ones(9, np.float32), lors=L),
        lambda: sp.Model(L, mult=np.ones(9, np.float32)),
        lambda: sp.Model(L, mult=-np.ones(10, np.float32)),
        lambda: sp.Model(L, add=np.ones(20, np.float32)),
        lambda: sp.Model(L, fwhm=(1, 2)),
        lambda: sp.Recon(I, L, C),
        lambda: sp.Recon(I, sp.Model(L), C, num_subsets=0),
        lambda: sp.Recon(I, sp.Model(L), C, subsets=[]),
        lambda: sp.Recon(I, sp.Model(L), C, subsets=[[0, 0]]),
        lambda: sp.Recon(I, sp.Model(L), C, subsets=[[5]]),
        lambda: I.sync("sideways"),
        lambda: I.sync(7),
        lambda: I.upload(3),
        lambda: P.sync(C, 9),
        lambda: L.upload(C, 5),
        lambda: sp.set_devices("gpu"),
        lambda: sp.set_task_lors(-1),
        lambda: sp.set_merge_calls(5),
        lambda: sp.reorder(np.arange(3.0), np.array([0, 0, 1])),
        lambda: sp.reorder(np.arange(3.0), np.array([0, 1])),
        lambda: sp.lors_order(xs, xe[:5], (1, 1, 1)),
        lambda: sp.tof_bins_from_centered(np.array([5], np.int16), np.zeros(1, np.int16), 3),
        lambda: sp.Scanner("small", num_modules=2),
        lambda: sp.Scanner("small", ring_z=[0, 0, 0]),
        lambda: sp.batch_end(),
    ]
    for k, call in enumerate(bad):
        with pytest.raises(EXC):
            call()
            pytest.fail("call %d did not raise" % k)
    # everything still works afterwards
    sp.fwd(I, P, C, [0, 1])
    P.sync()
    assert P.array.any()


def test_reorder_and_order(rt):
    rng = np.random.default_rng(0)
    xs = rng.uniform(-50, 50, (100, 3)).astype(np.float32)
    xe = rng.uniform(-50, 50, (100, 3)).astype(np.float32)
    order = sp.lors_order(xs, xe, (2.0, 2.0, 2.0))
    assert sorted(order.tolist()) == list(range(100))
    ys = xs.copy()
    sp.reorder(ys, order)
    assert np.array_equal(ys, xs[order])
    bins = np.arange(-2, 3, dtype=np.int16)
    out = np.zeros(5, np.int16)
    sp.tof_bins_from_centered(bins, out, 5)
    assert out.tolist() == [0, 1, 2, 3, 4]


def test_unsupported_interpreters_refused_at_import(monkeypatch):
    """The package's import-time check (the extension is abi3 of CPython 3.11): an older CPython, another
    implementation and a free-threaded build are refused with an ImportError that says what is needed. (scripts/
    test-wheel.sh also imports the wheel's package into a real CPython 3.10, and has pip refuse the wheel there.)"""
    import sys
    import sysconfig
    import types

    sp._check_interpreter()  # this interpreter runs the tests, so it passes
    cases = [
        ("version_info", (3, 10, 13, "final", 0), None, "cpython 3.10.13"),
        ("implementation", types.SimpleNamespace(name="pypy"), None, "pypy"),
        (None, None, 1, "free-threaded"),
    ]
    for attr, value, gil_disabled, says in cases:
        with monkeypatch.context() as m:
            if attr:
                m.setattr(sys, attr, value)
            if gil_disabled:
                real = sysconfig.get_config_var
                m.setattr(sysconfig, "get_config_var", lambda k: 1 if k == "Py_GIL_DISABLED" else real(k))
            with pytest.raises(ImportError, match="starproj needs CPython 3.11 or newer with the GIL") as e:
                sp._check_interpreter()
            assert says in str(e.value)
