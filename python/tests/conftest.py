# conftest.py: shared fixtures of the binding's tests: a CPU runtime, small geometries, the C library via ctypes.
import ctypes
import ctypes.util
import os
import re

import numpy as np
import pytest

import starproj as sp


def ensure_runtime():
    """Starts a CPU-only runtime unless one runs (tests that shut it down leave the next test to restart it)."""
    if not sp.is_initialized():
        sp.init(devices="cpu", ncpu=2, ngpu=0)


@pytest.fixture
def rt():
    ensure_runtime()
    yield
    # nothing a test left open may leak into the next one's checks
    sp.wait_all()


def pytest_sessionfinish(session, exitstatus):
    sp.shutdown()


def loaded_libstarproj():
    """The path of the libstarproj this process loaded with the extension, or its soname where /proc cannot tell: a
    wheel carries it renamed by auditwheel (libstarproj-<hash>.so.0.0.0, found by no soname search)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6}
    except OSError:
        paths = set()
    for path in sorted(paths):
        if re.match(r"libstarproj(-[0-9a-f]{8})?\.so", os.path.basename(path)):
            return path
    return "libstarproj.so.0"


@pytest.fixture(scope="session")
def lib():
    """libstarproj as ctypes sees it: the copy the extension already loaded."""
    L = ctypes.CDLL(loaded_libstarproj())
    f = ctypes.POINTER(ctypes.c_float)
    i = ctypes.POINTER(ctypes.c_int)
    s = ctypes.POINTER(ctypes.c_short)
    L.sproj_pp_joseph3d_fwd.argtypes = [f, f, f, f, f, f, ctypes.c_size_t, i, ctypes.c_int, ctypes.c_int]
    L.sproj_pp_joseph3d_back.argtypes = L.sproj_pp_joseph3d_fwd.argtypes
    tof = [f, f, f, f, f, f, ctypes.c_size_t, i, ctypes.c_float, f, f, ctypes.c_float]
    L.sproj_pp_joseph3d_tof_sino_fwd.argtypes = tof + [ctypes.c_short, ctypes.c_ubyte, ctypes.c_ubyte, ctypes.c_int,
                                                       ctypes.c_int]
    L.sproj_pp_joseph3d_tof_sino_back.argtypes = L.sproj_pp_joseph3d_tof_sino_fwd.argtypes
    L.sproj_pp_joseph3d_tof_lm_fwd.argtypes = tof + [s, ctypes.c_short, ctypes.c_ubyte, ctypes.c_ubyte, ctypes.c_int,
                                                     ctypes.c_int]
    L.sproj_pp_joseph3d_tof_lm_back.argtypes = L.sproj_pp_joseph3d_tof_lm_fwd.argtypes
    for fn in ("sproj_pp_joseph3d_fwd", "sproj_pp_joseph3d_back", "sproj_pp_joseph3d_tof_sino_fwd",
               "sproj_pp_joseph3d_tof_sino_back", "sproj_pp_joseph3d_tof_lm_fwd", "sproj_pp_joseph3d_tof_lm_back"):
        getattr(L, fn).restype = ctypes.c_int
    return L


def fp(a):
    """A float* of a C-contiguous float32 array."""
    assert a.dtype == np.float32 and a.flags.c_contiguous
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def ip(a):
    return np.ascontiguousarray(a, np.int32).ctypes.data_as(ctypes.POINTER(ctypes.c_int))


class Geometry:
    """A small image and random LORs crossing it: shapes that are not cubes, so that axes cannot be confused."""

    def __init__(self, seed=0, dims=(9, 11, 7), vs=(2.0, 1.5, 2.5), n=600):
        rng = np.random.default_rng(seed)
        self.dims = dims
        self.vs = np.array(vs, np.float32)
        self.origin = np.array([-(d - 1) * v / 2 + 0.3 for d, v in zip(dims, vs)], np.float32)
        self.image = rng.uniform(0.5, 2.0, dims).astype(np.float32)
        # endpoints on a sphere around the image, through random points near the centre
        r = 40.0
        u = rng.normal(size=(n, 3))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        c = rng.uniform(-6, 6, (n, 3))
        self.xstart = (c - r * u).astype(np.float32)
        self.xend = (c + r * u).astype(np.float32)
        self.n = n


@pytest.fixture
def geom():
    return Geometry()
