# test_torch.py: PyTorch tensors through starproj in place (DLPack), the autograd operators, and their refusals.
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import starproj as sp  # noqa: E402
import starproj.parallelproj_core as ppc  # noqa: E402
from conftest import Geometry  # noqa: E402
from joseph_ref import joseph_fwd  # noqa: E402
from starproj.torch import BackProjection, ForwardProjection, Projector  # noqa: E402

TOF = dict(num_bins=7, bin_width=9.0, sigma=6.0, num_sigmas=3.0, center_offset=0.0)
KINDS = ("nontof", "tof_sino", "tof_lm")
# CPU always; CUDA where torch sees a GPU and starproj drives one (the GPU machine's run of this file)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def small(seed=0, n=40, dims=(6, 5, 4)):
    """A geometry small enough for gradcheck's dense Jacobians (dims voxels x n LORs)."""
    return Geometry(seed=seed, dims=dims, vs=(4.0, 5.0, 6.0), n=n)


def runtime_for(device):
    if device == "cuda":
        if sp.is_initialized() and sp.num_gpus() == 0:
            sp.shutdown()
        if not sp.is_initialized():
            sp.init(devices="any")
        if sp.num_gpus() == 0:
            pytest.skip("torch sees a GPU, starproj drives none")
    elif not sp.is_initialized():
        sp.init(devices="cpu", ncpu=2, ngpu=0)


def same_values(a, b, device):
    """Bit for bit on the CPU workers; within 1e-6 of the largest value on a GPU."""
    if device == "cpu":
        return torch.equal(a, b)
    return float((a - b).abs().max()) <= 1e-6 * float(b.abs().max())


def make_op(g, kind, device="cpu", seed=1):
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(device)  # noqa: E731
    if kind == "nontof":
        return Projector(t(g.xstart), t(g.xend), g.dims, g.vs, g.origin)
    if kind == "tof_sino":
        return Projector(t(g.xstart), t(g.xend), g.dims, g.vs, g.origin, tof=TOF)
    bins = np.random.default_rng(seed).integers(0, TOF["num_bins"], g.n).astype(np.int16)
    return Projector(t(g.xstart), t(g.xend), g.dims, g.vs, g.origin, tof=TOF, tof_bin=t(bins))


# --- tensors in place through starproj's own calls and parallelproj_core ------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_own_calls_take_tensors_in_place(device):
    runtime_for(device)
    g = Geometry()
    ref = np.zeros(g.n, np.float32)
    with sp.Image(g.image, g.vs, g.origin) as img, sp.Lors(g.xstart, g.xend) as lors, sp.Proj(lors, ref) as proj:
        sp.fwd(img, proj)
        proj.sync()
    x = torch.from_numpy(g.image).to(device)
    xs, xe = torch.from_numpy(g.xstart).to(device), torch.from_numpy(g.xend).to(device)
    y = torch.full((g.n,), 7.0, device=device)
    with sp.Image(x, g.vs, g.origin) as img, sp.Lors(xs, xe) as lors, sp.Proj(lors, y) as proj:
        assert proj.data_ptr == y.data_ptr() and img.data_ptr == x.data_ptr()  # no copy
        assert (proj.gpu is None) == (device == "cpu")
        sp.fwd(img, proj)
        proj.sync()
        np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-6, atol=1e-6 * ref.max())
        # the back projection adds into the tensor itself
        z = torch.zeros(g.dims, device=device)
        with sp.Image(z, g.vs, g.origin) as zi:
            sp.back(zi, proj)
            zi.sync()
    assert z.abs().sum() > 0
    # TOF sinogram and listmode events as tensors too (on a GPU: registered there as StarPU vectors)
    bins = torch.from_numpy(np.random.default_rng(2).integers(0, 7, g.n).astype(np.int16)).to(device)
    sino = torch.zeros((g.n, 7), device=device)
    lm = torch.zeros((g.n,), device=device)
    with sp.Image(x, g.vs, g.origin) as img, sp.Lors(xs, xe) as lors, sp.Lors(xs, xe, bins) as ev, \
            sp.Tof(7, 9.0, 6.0) as tof, sp.Proj(lors, sino) as ps, sp.Proj(ev, lm) as pl:
        sp.fwd_tof_sino(img, ps, tof)
        sp.fwd_tof_lm(img, pl, tof)
        ps.sync()
        pl.sync()
    # an event projects to exactly its LOR's TOF-sinogram bin (starproj's convention; on a GPU two kernels may contract
    # their operations differently: 1e-6 of the largest value there)
    expect = sino[torch.arange(g.n, device=device), bins.long()]
    assert same_values(lm, expect, device) and lm.abs().sum() > 0
    np.testing.assert_allclose(sino.sum(1).cpu().numpy(), ref, rtol=2e-3, atol=2e-3 * ref.max())


@pytest.mark.parametrize("device", DEVICES)
def test_parallelproj_core_takes_tensors_in_place(device):
    runtime_for(device)
    g = Geometry(seed=4)
    ref = np.zeros(g.n, np.float32)
    ppc.joseph3d_fwd(g.xstart, g.xend, g.image, g.origin, g.vs, ref)
    t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    y = torch.full((g.n,), 3.0, device=device)
    ptr = y.data_ptr()
    ppc.joseph3d_fwd(t(g.xstart), t(g.xend), t(g.image), t(g.origin), t(g.vs), y)
    assert y.data_ptr() == ptr
    np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-6, atol=1e-6 * ref.max())
    back = torch.ones(g.dims, device=device)
    ppc.joseph3d_back(t(g.xstart), t(g.xend), back, t(g.origin), t(g.vs), y)
    ref_back = np.ones(g.dims, np.float32)
    ppc.joseph3d_back(g.xstart, g.xend, ref_back, g.origin, g.vs, ref)
    np.testing.assert_allclose(back.cpu().numpy(), ref_back, rtol=1e-5, atol=1e-5 * ref_back.max())


# --- the operators --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_projector_matches_numpy_reference_and_own_calls(device):
    runtime_for(device)
    g = Geometry(seed=5)
    with make_op(g, "nontof", device) as op:
        y = op.project(torch.from_numpy(g.image).to(device))
    ref = joseph_fwd(g.image, g.vs, g.origin, g.xstart, g.xend)
    np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=2e-4, atol=2e-4 * ref.max())
    # TOF sinogram: its bins sum to the non-TOF projection where they cover the LOR; listmode: the sinogram's bin
    with make_op(g, "tof_sino", device) as ts, make_op(g, "tof_lm", device, seed=9) as tl:
        x = torch.from_numpy(g.image).to(device)
        s, e = ts.project(x), tl.project(x)
        bins = np.random.default_rng(9).integers(0, TOF["num_bins"], g.n)
        assert same_values(e.cpu(), s.cpu()[np.arange(g.n), bins], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", KINDS)
def test_dot_product(kind, device):
    """<A x, y> = <x, A^T y> on random x and y, sums in float64: the back projection is the forward's adjoint up to
    float32 rounding (relative 1e-5; a wrong weight anywhere shows as a larger gap)."""
    runtime_for(device)
    g = Geometry(seed=6)
    gen = torch.Generator().manual_seed(0)
    with make_op(g, kind, device) as op:
        x = torch.rand(op.image_shape, generator=gen).to(device)
        y = torch.rand(op.out_shape, generator=gen).to(device)
        ax, aty = op.project(x), op.backproject(y)
    lhs = float((ax.double() * y.double()).sum())
    rhs = float((x.double() * aty.double()).sum())
    assert lhs > 0 and abs(lhs - rhs) <= 1e-5 * abs(lhs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", KINDS)
def test_autograd_gradients_are_the_adjoint(kind, device):
    """The gradient autograd computes for L(x) = <w, A x> is A^T w; for L(y) = <v, A^T y> it is A v. Checked against an
    independent A for non-TOF (the NumPy reference's rows, in float64) and against the explicit calls for all."""
    runtime_for(device)
    g = small(seed=7)
    gen = torch.Generator().manual_seed(1)
    with make_op(g, kind, device) as op:
        x = torch.rand(op.image_shape, generator=gen).to(device).requires_grad_()
        w = torch.rand(op.out_shape, generator=gen).to(device)
        (op(x) * w).sum().backward()
        explicit = op.backproject(w)
        torch.testing.assert_close(x.grad, explicit, rtol=1e-6, atol=1e-6 * float(explicit.abs().max()))
        y = torch.rand(op.out_shape, generator=gen).to(device).requires_grad_()
        v = torch.rand(op.image_shape, generator=gen).to(device)
        (op.T(y) * v).sum().backward()
        torch.testing.assert_close(y.grad, op.project(v), rtol=1e-6, atol=1e-6 * float(y.grad.abs().max()))
    if kind == "nontof":
        # A's columns from the reference: A e_j for every voxel j, then A^T w = sum_i w_i A_ij in float64
        nvox = int(np.prod(g.dims))
        a = np.zeros((g.n, nvox))
        for j in range(nvox):
            e = np.zeros(nvox, np.float32)
            e[j] = 1.0
            a[:, j] = joseph_fwd(e.reshape(g.dims), g.vs, g.origin, g.xstart, g.xend)
        atw = (a.T @ w.cpu().double().numpy()).reshape(g.dims)
        assert np.count_nonzero(atw) > nvox // 2
        np.testing.assert_allclose(x.grad.cpu().numpy(), atw, rtol=1e-4, atol=1e-4 * atw.max())


# gradcheck in float64 around a float32 operator: the function checked is x -> A(float32(x)) in float64. A is linear,
# so finite differences carry no truncation error, only float32 rounding of A x: with eps = 1e-2 relative to inputs
# of order 1, that is at most ~1e-7 |A x| / 1e-2 ~ 1e-5 relative, hence atol = rtol = 1e-3 (honest for float32, still
# sensitive: the self-check below shows a backward 1% off fails them).
GRADCHECK = dict(eps=1e-2, atol=1e-3, rtol=1e-3)


def as_f64(fn):
    return lambda t: fn(t.float()).double()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck(kind, device):
    runtime_for(device)
    g = small(seed=8, n=24, dims=(4, 3, 3))
    gen = torch.Generator().manual_seed(2)
    with make_op(g, kind, device) as op:
        x = torch.rand(op.image_shape, generator=gen, dtype=torch.float64).to(device).requires_grad_()
        y = torch.rand(op.out_shape, generator=gen, dtype=torch.float64).to(device).requires_grad_()
        # the autograd Functions themselves (op(x) and op.T(y) are these)
        fwd = lambda t: ForwardProjection.apply(t, op)  # noqa: E731
        back = lambda t: BackProjection.apply(t, op)  # noqa: E731
        assert torch.autograd.gradcheck(as_f64(fwd), (x,), **GRADCHECK)
        assert torch.autograd.gradcheck(as_f64(back), (y,), **GRADCHECK)
        # second derivatives: the backward of the backward is the operator again
        assert torch.autograd.gradgradcheck(as_f64(fwd), (x,), **GRADCHECK)


class _OffByOnePercent(torch.autograd.Function):
    """A forward projection whose backward is 1% too large: what gradcheck with GRADCHECK's tolerances must catch."""

    @staticmethod
    def forward(ctx, x, op):
        ctx.op = op
        return op.project(x.detach())

    @staticmethod
    def backward(ctx, grad):
        return 1.01 * ctx.op.backproject(grad.contiguous()), None


def test_gradcheck_tolerances_catch_a_wrong_backward():
    runtime_for("cpu")
    g = small(seed=8, n=24, dims=(4, 3, 3))
    with make_op(g, "tof_sino") as op:
        x = torch.rand(op.image_shape, dtype=torch.float64).requires_grad_()
        assert not torch.autograd.gradcheck(as_f64(lambda t: _OffByOnePercent.apply(t, op)), (x,),
                                            raise_exception=False, **GRADCHECK)


# --- refusals: named, and nothing written --------------------------------------------------------------------------

def test_projector_refusals_name_the_argument_and_write_nothing():
    runtime_for("cpu")
    g = small(seed=10)
    with make_op(g, "tof_sino") as op:
        x = torch.rand(op.image_shape)
        out = torch.full(op.out_shape, 5.0)
        img_out = torch.full(op.image_shape, 5.0)
        bad = [
            (TypeError, "x: expected dtype torch.float32, got torch.float64", lambda: op.project(x.double(), out)),
            (TypeError, "x: expected dtype torch.float32, got torch.int32", lambda: op.project(x.int(), out)),
            (ValueError, "x: the tensor is not contiguous", lambda: op.project(x.transpose(0, 2).contiguous()
                                                                              .transpose(0, 2), out)),
            (ValueError, "x: expected shape", lambda: op.project(x[:-1], out)),
            (ValueError, "x: the tensor is on meta", lambda: op.project(torch.empty(op.image_shape, device="meta"),
                                                                        out)),
            (ValueError, "x: requires_grad is set", lambda: op.project(x.clone().requires_grad_(), out)),
            (TypeError, "x: expected a torch.Tensor", lambda: op.project(x.numpy(), out)),
            (TypeError, "out: expected dtype torch.float32", lambda: op.project(x, out.double())),
            (ValueError, "out: the tensor is not contiguous", lambda: op.project(x, torch.full((op.out_shape[1],
                                                                                                op.out_shape[0]),
                                                                                               5.0).t())),
            (ValueError, "y: expected shape", lambda: op.backproject(out[:, :3].contiguous(), img_out)),
            (TypeError, "y: expected dtype torch.float32", lambda: op.backproject(out.half(), img_out)),
            (ValueError, "out: requires_grad is set", lambda: op.backproject(out, img_out.clone().requires_grad_())),
            (TypeError, "x: expected dtype torch.float32", lambda: op(x.double().requires_grad_())),
            (ValueError, "y: the tensor is not contiguous", lambda: op.T(torch.full((7, op.out_shape[0]), 1.0).t())),
        ]
        for exc, msg, call in bad:
            with pytest.raises(exc, match=msg):
                call()
            assert torch.equal(out, torch.full(op.out_shape, 5.0)), msg
            assert torch.equal(img_out, torch.full(op.image_shape, 5.0)), msg
    t = torch.from_numpy
    with pytest.raises(ValueError, match="xstart: requires_grad is set"):
        Projector(t(g.xstart).requires_grad_(), t(g.xend), g.dims, g.vs, g.origin)
    with pytest.raises(TypeError, match="tof_bin: expected dtype torch.int16"):
        Projector(t(g.xstart), t(g.xend), g.dims, g.vs, g.origin, tof=TOF, tof_bin=torch.zeros(g.n, dtype=torch.int64))
    with pytest.raises(ValueError, match="xend: expected shape"):
        Projector(t(g.xstart), t(g.xend[1:]), g.dims, g.vs, g.origin)


def test_own_calls_and_parallelproj_core_refuse_tensors_by_name():
    runtime_for("cpu")
    g = Geometry(seed=11)
    xs, xe, img = torch.from_numpy(g.xstart), torch.from_numpy(g.xend), torch.from_numpy(g.image)
    vals = torch.full((g.n,), 5.0)
    with pytest.raises(ValueError, match="array: the tensor requires grad"):
        sp.Image(img.clone().requires_grad_(), g.vs, g.origin)
    with pytest.raises(TypeError, match="array: expected dtype float32"):
        sp.Image(img.double(), g.vs, g.origin)
    with pytest.raises(ValueError, match="xstart: array is not C-contiguous"):
        sp.Lors(xs.t().contiguous().t(), xe)
    with pytest.raises(TypeError, match="tof_bin: expected dtype int16"):
        sp.Lors(xs, xe, torch.zeros(g.n, dtype=torch.int32))
    with pytest.raises(ValueError, match="array: DLPack device type .* not supported|array: .*meta"):
        sp.Image(torch.empty(g.dims, device="meta"), g.vs, g.origin)
    calls = [
        (TypeError, "image: the tensor requires grad", lambda: ppc.joseph3d_fwd(xs, xe, img.clone().requires_grad_(),
                                                                                 g.origin, g.vs, vals)),
        (TypeError, "image: expected dtype float32", lambda: ppc.joseph3d_fwd(xs, xe, img.double(), g.origin, g.vs,
                                                                               vals)),
        (TypeError, "lor_start: array is not C-contiguous", lambda: ppc.joseph3d_fwd(xs.t().contiguous().t(), xe,
                                                                                      img, g.origin, g.vs, vals)),
        (TypeError, "image: .*meta|image: DLPack device type", lambda: ppc.joseph3d_fwd(
            xs, xe, torch.empty(g.dims, device="meta"), g.origin, g.vs, vals)),
        (TypeError, "projection_values: expected dtype float32", lambda: ppc.joseph3d_fwd(xs, xe, img, g.origin,
                                                                                           g.vs, vals.long())),
    ]
    for exc, msg, call in calls:
        with pytest.raises(exc, match=msg):
            call()
        assert torch.equal(vals, torch.full((g.n,), 5.0)), msg
    # a tensor handed back is still usable: a refused export consumed nothing
    ppc.joseph3d_fwd(xs, xe, img, g.origin, g.vs, vals)
    assert not torch.equal(vals, torch.full((g.n,), 5.0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU that torch sees")
def test_wrong_device_refused_on_a_gpu_machine():
    runtime_for("cuda")
    g = small(seed=12)
    with make_op(g, "nontof", "cpu") as op:
        out = torch.full(op.out_shape, 5.0)
        with pytest.raises(ValueError, match="x: the tensor is on cuda:0, the projector's LORs on cpu"):
            op.project(torch.rand(op.image_shape, device="cuda"), out)
        assert torch.equal(out, torch.full(op.out_shape, 5.0))
    vals = torch.full((g.n,), 5.0, device="cuda")
    with pytest.raises((TypeError, ValueError), match="device"):
        ppc.joseph3d_fwd(torch.from_numpy(g.xstart), torch.from_numpy(g.xend), torch.from_numpy(g.image), g.origin,
                         g.vs, vals)
    assert torch.equal(vals, torch.full((g.n,), 5.0, device="cuda"))
