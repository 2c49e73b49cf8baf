# test_objects.py: zero-copy registration, lifetimes, errors as exceptions, reference counts, runtime handling, DLPack.
import gc
import sys
import threading
import time

import numpy as np
import pytest

import starproj as sp


def small(n=64, seed=1):
    rng = np.random.default_rng(seed)
    img = rng.uniform(0.5, 1.5, (6, 5, 4)).astype(np.float32)
    xs = np.zeros((n, 3), np.float32)
    xe = np.zeros((n, 3), np.float32)
    xs[:, 0], xe[:, 0] = -30, 30
    xs[:, 1:] = xe[:, 1:] = rng.uniform(-2, 2, (n, 2))
    return img, xs, xe


# ---- zero copy -------------------------------------------------------------------------------------------------

def test_image_and_proj_use_the_callers_memory(rt):
    img, xs, xe = small()
    vals = np.zeros(len(xs), np.float32)
    with sp.Image(img) as I, sp.Lors(xs, xe) as L, sp.Proj(L, vals) as P:
        assert I.array is img and P.array is vals
        assert I.data_ptr == img.ctypes.data and P.data_ptr == vals.ctypes.data and L.data_ptr == xs.ctypes.data
        assert np.shares_memory(I.array, img)
        sp.fwd(I, P)
        P.sync()
        # the values were written straight into the very array passed in
        assert vals.any()
        first = vals.copy()
        # modify the image in place after a write sync: the next projection sees the change, no re-registration
        I.sync("write")
        img *= 2
        sp.fwd(I, P)
        P.sync(mode=sp.SYNC_READ)
        np.testing.assert_allclose(vals, 2 * first, rtol=1e-6)


def test_back_projection_lands_in_the_array(rt):
    img, xs, xe = small()
    out = np.zeros_like(img)
    with sp.Image(out) as I, sp.Lors(xs, xe) as L, sp.Proj(L, np.ones(len(xs), np.float32)) as P:
        sp.back(I, P)
        I.sync()
        assert out.sum() > 0
        # a view on the same memory sees it too: nothing was copied
        assert out.reshape(-1).sum() == out.sum()


def test_objects_keep_their_arrays_and_parents_alive(rt):
    img, xs, xe = small()
    vals = np.zeros(len(xs), np.float32)
    refs = [sys.getrefcount(a) for a in (img, xs, xe, vals)]
    I = sp.Image(img)
    L = sp.Lors(xs, xe)
    P = sp.Proj(L, vals)
    assert [sys.getrefcount(a) for a in (img, xs, xe, vals)] > refs
    del L
    gc.collect()
    assert P.lors.num_lors == len(xs)  # the Proj keeps its Lors
    # the registration holds a reference to the array (its buffer export): NumPy's resize check refuses
    with pytest.raises(ValueError):
        vals.resize(10)
    P.close()
    I.close()
    gc.collect()
    assert [sys.getrefcount(a) for a in (img, xs, xe, vals)] == refs


def test_refcounts_and_rss_stable_over_register_cycles(rt):
    img, xs, xe = small()
    vals = np.zeros(len(xs), np.float32)

    def cycle(n):
        for _ in range(n):
            with sp.Image(img) as I, sp.Lors(xs, xe) as L, sp.Proj(L, vals) as P:
                pass
            # and once through garbage collection instead of close()
            L2 = sp.Lors(xs, xe)
            del L2

    def rss_kib():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])

    before = [sys.getrefcount(a) for a in (img, xs, xe, vals)]
    cycle(1000)  # warm-up: StarPU's and the allocator's pools
    gc.collect()
    r0 = rss_kib()
    cycle(10000)
    gc.collect()
    r1 = rss_kib()
    assert [sys.getrefcount(a) for a in (img, xs, xe, vals)] == before
    assert r1 - r0 < 4096, "RSS grew by %d KiB over 10^4 cycles" % (r1 - r0)


# ---- errors as exceptions --------------------------------------------------------------------------------------

def test_bad_arrays_raise_naming_the_argument(rt):
    img, xs, xe = small()
    with pytest.raises(TypeError, match="array: expected dtype float32"):
        sp.Image(img.astype(np.float64))
    with pytest.raises(ValueError, match="array: expected a 3-dimensional"):
        sp.Image(img[0])
    with pytest.raises(ValueError, match="array: array is not C-contiguous"):
        sp.Image(img.transpose(2, 1, 0))
    with pytest.raises(ValueError, match="xstart: array is not C-contiguous"):
        sp.Lors(np.asfortranarray(xs), xe)
    with pytest.raises(ValueError, match="xend: dimension 1 has length 2"):
        sp.Lors(xs, xe[:, :2].copy())
    with pytest.raises(TypeError, match="xstart: expected a float32 array"):
        sp.Lors([[0, 0, 0]], xe)
    ro = img.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="array: array is read-only"):
        sp.Image(ro)
    L = sp.Lors(xs, xe)
    vals_ro = np.zeros(len(xs), np.float32)
    vals_ro.flags.writeable = False
    with pytest.raises(ValueError, match="values: array is read-only"):
        sp.Proj(L, vals_ro)
    with pytest.raises(ValueError, match="values: dimension 0 has length 3"):
        sp.Proj(L, np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="tof_bin: expected dtype int16"):
        sp.Lors(xs, xe, np.zeros(len(xs), np.int32))
    # read-only LOR arrays are fine: starproj only reads them
    xr = xs.copy()
    xr.flags.writeable = False
    sp.Lors(xr, xe).close()


def test_library_errors_carry_status_and_message(rt):
    img, xs, xe = small()
    with pytest.raises(sp.Error) as e:
        sp.Image(img, voxel_size=(1, -1, 1))
    assert e.value.status == sp.ERR_VOXEL_SIZE and "voxel_size" in e.value.message
    assert isinstance(e.value, RuntimeError)
    bad = xs.copy()
    bad[5, 1] = np.nan
    with pytest.raises(sp.Error) as e:
        sp.Lors(bad, xe)
    assert e.value.status == sp.ERR_NONFINITE and "LOR 5" in e.value.message
    L = sp.Lors(xs, xe)
    ch = sp.Chunks.blocks(L, 4)
    I = sp.Image(img)
    P = sp.Proj(L, np.zeros(len(xs), np.float32))
    with pytest.raises(sp.Error) as e:
        sp.fwd(I, P, ch, 4)
    assert e.value.status == sp.ERR_RANGE
    with pytest.raises(sp.Error) as e:
        sp.Chunks.ranges(L, [0, 10], [20, 20])  # overlapping
    assert e.value.status == sp.ERR_RANGE
    other = sp.Lors(xs, xe)
    with pytest.raises(sp.Error) as e:
        sp.fwd(I, P, sp.Chunks.blocks(other, 2), 0)  # chunking of another LOR set
    assert e.value.status == sp.ERR_MISMATCH
    with pytest.raises(TypeError, match="proj: expected starproj.Proj"):
        sp.fwd(I, L)
    with pytest.raises(TypeError, match="missing required argument 'proj'"):
        sp.fwd(I)
    with pytest.raises(TypeError, match="chunk"):
        sp.fwd(I, P, ch, "x")
    with pytest.raises(TypeError):
        sp.Chunks()
    with pytest.raises(sp.Error) as e:
        sp.Tof(0, 1.0, 1.0)
    assert e.value.status in (sp.ERR_TOF, sp.ERR_EMPTY, sp.ERR_DIMS)


def test_closed_objects_and_dependencies(rt):
    img, xs, xe = small()
    I = sp.Image(img)
    L = sp.Lors(xs, xe)
    P = sp.Proj(L, np.zeros(len(xs), np.float32))
    with pytest.raises(sp.Error) as e:
        L.close()  # a Proj still uses it
    assert e.value.status == sp.ERR_BUSY
    P.close()
    P.close()  # idempotent
    assert P.closed and P.data_ptr is None
    with pytest.raises(ValueError, match="proj: this Proj is closed"):
        sp.fwd(I, P)
    with pytest.raises(ValueError, match="closed"):
        P.sync()
    L.close()
    with pytest.raises(ValueError, match="closed"):
        sp.Proj(L, np.zeros(len(xs), np.float32))
    I.close()


def test_shutdown_closes_open_objects_and_later_calls_fail_cleanly():
    from conftest import ensure_runtime
    ensure_runtime()
    img, xs, xe = small()
    I = sp.Image(img)
    L = sp.Lors(xs, xe)
    P = sp.Proj(L, np.zeros(len(xs), np.float32))
    ch = sp.Chunks.blocks(L, 2)
    sp.shutdown()
    assert not sp.is_initialized()
    assert I.closed and L.closed and P.closed and ch.closed
    with pytest.raises(ValueError, match="closed"):
        sp.fwd(I, P)
    with pytest.raises(sp.Error) as e:
        sp.Image(img)
    assert e.value.status == sp.ERR_NOT_INIT
    with pytest.raises(sp.Error):
        sp.wait_all()
    # objects of the old runtime stay closed in a new one
    ensure_runtime()
    with pytest.raises(ValueError, match="closed"):
        sp.fwd(I, P)
    del I, L, P, ch
    gc.collect()


def test_runtime_context_manager():
    sp.shutdown()
    with sp.Runtime(devices="cpu", ncpu=1, ngpu=0) as rt:
        assert sp.is_initialized() and rt.num_cpu_workers() == 1 and rt.num_gpus() == 0
        img, xs, xe = small()
        I = sp.Image(img)
        with pytest.raises(sp.Error) as e:
            sp.init()  # twice
        assert e.value.status == sp.ERR_INVALID
    assert not sp.is_initialized() and I.closed
    with pytest.raises(ValueError, match="devices"):
        sp.init(devices="tpu")
    with pytest.raises(sp.Error) as e:
        sp.init(devices="gpu", ngpu=0)  # no GPU worker: refused, and the runtime is left stopped
    assert e.value.status == sp.ERR_NO_DEVICE and not sp.is_initialized()
    with pytest.raises(sp.Error):
        sp.init(scheduler="no-such-policy")
    assert not sp.is_initialized()


def test_threads_submit_concurrently(rt):
    img, xs, xe = small(n=2000)
    I = sp.Image(img)
    L = sp.Lors(xs, xe)
    ch = sp.Chunks.blocks(L, 40)
    vals = np.zeros(len(xs), np.float32)
    P = sp.Proj(L, vals)
    errors = []

    def work(part):
        try:
            for c in range(part, 40, 4):
                sp.fwd(I, P, ch, c)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    P.sync()
    ref = np.zeros_like(vals)
    with sp.Proj(L, ref) as R:
        sp.fwd(I, R)
    assert not errors and np.array_equal(vals, ref)


# ---- DLPack ----------------------------------------------------------------------------------------------------

class DLPackOnly:
    """Exposes an array through DLPack only (as PyTorch tensors do), to take the binding's DLPack path."""

    def __init__(self, a, device=None):
        self.a = a
        self.device = device
        self.exported = 0

    def __dlpack_device__(self):
        return self.device if self.device else self.a.__dlpack_device__()

    def __dlpack__(self, stream=None):
        self.exported += 1
        return self.a.__dlpack__()


def test_dlpack_host_arrays_are_used_in_place(rt):
    img, xs, xe = small()
    vals = np.zeros(len(xs), np.float32)
    I = sp.Image(DLPackOnly(img))
    L = sp.Lors(DLPackOnly(xs), DLPackOnly(xe))
    P = sp.Proj(L, DLPackOnly(vals))
    assert I.data_ptr == img.ctypes.data and P.data_ptr == vals.ctypes.data and I.gpu is None
    sp.fwd(I, P)
    P.sync()
    ref = np.zeros_like(vals)
    with sp.Image(img) as I2, sp.Proj(L, ref) as R:
        sp.fwd(I2, R)
    assert vals.any() and np.array_equal(vals, ref)
    with pytest.raises(TypeError, match="expected dtype float32"):
        sp.Image(DLPackOnly(img.astype(np.float64)))
    with pytest.raises(ValueError, match="not C-contiguous"):
        sp.Image(DLPackOnly(img.transpose(1, 0, 2)))
    for o in (P, L, I):
        o.close()


class DLPackV1(DLPackOnly):
    """Takes the DLPack 1.0 keywords (as NumPy 2 and CuPy do) and hands them on: the versioned capsule path."""

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.exported += 1
        self.asked = dict(stream=stream, max_version=max_version, copy=copy)
        return self.a.__dlpack__(stream=stream, max_version=max_version, copy=copy)


def test_dlpack_versioned_capsules(rt):
    """A producer that knows DLPack 1.0 is asked for it (max_version=(1, 0), copy=False, no stream for host memory),
    its versioned capsule is used in place, and its read-only flag is honoured."""
    img, xs, xe = small()
    try:
        np.zeros(1, np.float32).__dlpack__(max_version=(1, 0), copy=False)
    except TypeError:
        pytest.skip("this NumPy (%s) has no DLPack 1.0 export" % np.__version__)
    vals = np.zeros(len(xs), np.float32)
    wrapped = DLPackV1(vals)
    I, L = sp.Image(DLPackV1(img)), sp.Lors(DLPackV1(xs), DLPackV1(xe))
    P = sp.Proj(L, wrapped)
    assert wrapped.asked == dict(stream=None, max_version=(1, 0), copy=False)
    assert P.data_ptr == vals.ctypes.data and I.data_ptr == img.ctypes.data
    sp.fwd(I, P)
    P.sync()
    ref = np.zeros_like(vals)
    with sp.Image(img) as I2, sp.Proj(L, ref) as R:
        sp.fwd(I2, R)
    assert vals.any() and np.array_equal(vals, ref)
    for o in (P, L, I):
        o.close()
    # read-only memory: fine where starproj only reads, refused where it writes
    ro_xs, ro_xe, ro_vals = xs.copy(), xe.copy(), np.zeros(len(xs), np.float32)
    for a in (ro_xs, ro_xe, ro_vals):
        a.flags.writeable = False
    with sp.Lors(DLPackV1(ro_xs), DLPackV1(ro_xe)) as L2:
        with pytest.raises(ValueError, match="read-only"):
            sp.Proj(L2, DLPackV1(ro_vals))


def test_dlpack_cuda_array_refused_without_gpu_worker(rt):
    """On a machine (or runtime) without CUDA workers a GPU array is refused before its tensor is taken."""
    if sp.num_gpus() > 0:
        pytest.skip("this runtime has GPU workers")
    img, xs, xe = small()
    fake = DLPackOnly(img, device=(2, 0))  # kDLCUDA, device 0
    with pytest.raises(sp.Error) as e:
        sp.Image(fake)
    assert e.value.status == sp.ERR_NO_DEVICE and "CUDA device 0" in e.value.message
    assert fake.exported == 0
    with pytest.raises(sp.Error):
        sp.Lors(DLPackOnly(xs, device=(2, 0)), DLPackOnly(xe, device=(2, 0)))
    # listmode bins on a GPU are registered there too (with the endpoints on the same GPU): refused here likewise
    bins = DLPackOnly(np.zeros(len(xs), np.int16), device=(2, 0))
    with pytest.raises(sp.Error) as e:
        sp.Lors(xs, xe, bins)
    assert e.value.status == sp.ERR_NO_DEVICE and "tof_bin" in e.value.message and bins.exported == 0
    with pytest.raises(ValueError, match="device type"):
        sp.Image(DLPackOnly(img, device=(4, 0)))  # OpenCL


def test_cupy_arrays_registered_on_their_gpu():
    """Runs where CuPy and a CUDA device are present; reported as skipped elsewhere."""
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except Exception:
        pytest.skip("no usable CUDA runtime")
    sp.shutdown()
    try:
        runtime = sp.Runtime(devices="gpu")
    except sp.Error as e:
        pytest.skip("StarPU drives no GPU here: %s" % e)
    with runtime:
        img, xs, xe = small()
        gimg, gxs, gxe = cp.asarray(img), cp.asarray(xs), cp.asarray(xe)
        gvals = cp.zeros(len(xs), cp.float32)
        I = sp.Image(gimg)
        L = sp.Lors(gxs, gxe)
        P = sp.Proj(L, gvals)
        assert I.gpu == 0 and L.gpu == 0 and P.gpu == 0
        assert I.data_ptr == gimg.data.ptr and P.data_ptr == gvals.data.ptr
        sp.fwd(I, P)
        P.sync()
        gback = cp.zeros_like(gimg)
        B = sp.Image(gback)
        sp.back(B, P)
        B.sync()
        host = np.zeros(len(xs), np.float32)
        hback = np.zeros_like(img)
        with sp.Image(img) as Ih, sp.Lors(xs, xe) as Lh, sp.Proj(Lh, host) as Ph, sp.Image(hback) as Bh:
            sp.fwd(Ih, Ph)
            Ph.sync()
            sp.back(Bh, Ph)
        for o in (P, B, L, I):
            o.close()
        np.testing.assert_allclose(cp.asnumpy(gvals), host, rtol=1e-5)
        np.testing.assert_allclose(cp.asnumpy(gback), hback, rtol=1e-4, atol=1e-5 * hback.max())


def test_waiting_calls_release_the_gil(rt):
    """While the main thread waits in sync(), another Python thread keeps running."""
    sc = sp.Scanner("small")
    xs, xe = sc.lors()
    img = np.ones((64, 64, 16), np.float32)
    vals = np.zeros(len(xs), np.float32)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    with sp.Image(img, (2.5, 2.5, 2.0), (-78.75, -78.75, -15.0)) as I, sp.Lors(xs, xe) as L, sp.Proj(L, vals) as P:
        t = threading.Thread(target=spin)
        t.start()
        try:
            for _ in range(3):
                sp.fwd(I, P)
                c0 = count[0]
                t0 = time.perf_counter()
                P.sync()
                waited = time.perf_counter() - t0
                c1 = count[0]
                if waited > 0.05:
                    break
        finally:
            stop.set()
            t.join()
    if waited <= 0.05:
        pytest.skip("the projection finished too fast to tell (%.3f s)" % waited)
    assert c1 > c0, "no Python code ran during a %.3f s sync" % waited
