# torch.py: starproj's projectors as PyTorch autograd operators on CPU or CUDA tensors, used in place through DLPack.
"""PyTorch operators on starproj's projectors.

``Projector`` holds the LORs (registered once with starproj, in place) and the image geometry of one of three
operators: non-TOF (``tof=None``), TOF sinogram (``tof=dict(...)``) or TOF listmode (``tof=dict(...)`` and
``tof_bin=``, one int16 bin per event). Its tensors live on one device, the CPU or one CUDA GPU, and every
projection runs where they live, on the tensors themselves (DLPack: no copy, no host round trip for CUDA tensors):

    op = Projector(xstart, xend, (n0, n1, n2), voxel_size, origin)          # non-TOF
    y = op(x)          # forward projection, recorded by autograd: its backward is the back projection
    z = op.T(y)        # back projection, recorded by autograd: its backward is the forward projection
    y = op.project(x)  # the same without autograd (x must not require grad), into a new tensor or out=
    z = op.backproject(y, out=None)   # back projection ADDED into out, when given

``ForwardProjection`` and ``BackProjection`` are the ``torch.autograd.Function`` classes behind ``op(x)`` and
``op.T(y)``: ``ForwardProjection.apply(x, op)``. The backward of each is the other operator applied to the incoming
gradient (so that second derivatives exist too: the operators are linear). The projections are float32, as
starproj's: tensors of another dtype, of another device than the projector's, not contiguous or of the wrong shape are
refused with an exception naming the argument, before anything is written.

TOF parameters: ``tof=dict(num_bins=..., bin_width=..., sigma=..., num_sigmas=3.0, center_offset=0.0)``, sigma and
center_offset numbers or float32 tensors with one value per LOR; in starproj's conventions (the package README): TOF
sinograms are ``(num_lors, num_bins)``, listmode events project to exactly their LOR's TOF-sinogram bin.
"""
import torch

import starproj as _sp

__all__ = ["Projector", "ForwardProjection", "BackProjection"]


def _describe(t):
    return "%s %s on %s" % (tuple(t.shape), t.dtype, t.device)


def _check(t, name, dtype, device, shape=None, grad_ok=False):
    """Refuses what a projection cannot take, naming the argument: raised before starproj sees the tensor."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s: expected a torch.Tensor, got %s" % (name, type(t).__name__))
    if t.dtype != dtype:
        raise TypeError("%s: expected dtype %s, got %s (starproj projects in float32; convert explicitly)"
                        % (name, dtype, t.dtype))
    if t.device != device:
        raise ValueError("%s: the tensor is on %s, the projector's LORs on %s" % (name, t.device, device))
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError("%s: expected shape %s, got %s" % (name, tuple(shape), tuple(t.shape)))
    if not t.is_contiguous():
        raise ValueError("%s: the tensor is not contiguous (starproj uses its memory in place; pass .contiguous())"
                         % name)
    if t.requires_grad and not grad_ok:
        raise ValueError("%s: requires_grad is set, but no gradient flows through this call (use the projector's "
                         "autograd operators op(x) / op.T(y), or pass .detach())" % name)


class Projector:
    """A projector and its adjoint on fixed LORs, for tensors of one device (see the module's documentation).

    Projector(xstart, xend, image_shape, voxel_size, origin, tof=None, tof_bin=None)
      xstart, xend   float32 tensors (num_lors, 3), on the CPU or one CUDA device: the device of every projection
      image_shape    (n0, n1, n2); voxel_size and origin (the centre of voxel 0) 3 numbers each
      tof            None (non-TOF) or dict(num_bins, bin_width, sigma, num_sigmas=3.0, center_offset=0.0)
      tof_bin        None, or an int16 tensor (num_lors,): listmode events (needs tof)
    starproj is started with its defaults if it is not running (starproj.init() first chooses otherwise; CUDA tensors
    need a CUDA worker on their device). close() (or a with block) unregisters the LORs.
    """

    def __init__(self, xstart, xend, image_shape, voxel_size, origin, tof=None, tof_bin=None):
        if not isinstance(xstart, torch.Tensor):
            raise TypeError("xstart: expected a torch.Tensor, got %s" % type(xstart).__name__)
        self.device = xstart.device
        if xstart.dim() != 2 or xstart.shape[1] != 3:
            raise ValueError("xstart: expected shape (num_lors, 3), got %s" % (tuple(xstart.shape),))
        n = xstart.shape[0]
        _check(xstart, "xstart", torch.float32, self.device)
        _check(xend, "xend", torch.float32, self.device, (n, 3))
        shape = tuple(int(d) for d in image_shape)
        if len(shape) != 3 or min(shape) < 1:
            raise ValueError("image_shape: expected 3 positive sizes, got %r" % (image_shape,))
        self.image_shape = shape
        self.voxel_size = tuple(float(v) for v in voxel_size)
        self.origin = tuple(float(v) for v in origin)
        if len(self.voxel_size) != 3 or len(self.origin) != 3:
            raise ValueError("voxel_size, origin: expected 3 numbers each")
        if tof_bin is not None and tof is None:
            raise ValueError("tof_bin: listmode events need tof=dict(...)")
        if tof_bin is not None:
            _check(tof_bin, "tof_bin", torch.int16, self.device, (n,))
        self.num_lors = n
        self.kind = "nontof" if tof is None else ("tof_lm" if tof_bin is not None else "tof_sino")
        if not _sp.is_initialized():
            _sp.init()
        self._lors = _sp.Lors(xstart, xend, tof_bin) if tof_bin is not None else _sp.Lors(xstart, xend)
        self._tof = None
        self.num_tof_bins = 0
        if tof is not None:
            params = dict(tof)
            unknown = set(params) - {"num_bins", "bin_width", "sigma", "num_sigmas", "center_offset"}
            if unknown or not {"num_bins", "bin_width", "sigma"} <= set(params):
                raise ValueError("tof: expected dict(num_bins, bin_width, sigma, num_sigmas=3.0, center_offset=0.0), "
                                 "got keys %s" % sorted(params))
            per_lor = {}
            for key in ("sigma", "center_offset"):
                v = params.get(key)
                if isinstance(v, torch.Tensor):
                    _check(v, "tof['%s']" % key, torch.float32, self.device, (n,))
                    per_lor[key] = v
            try:
                self._tof = _sp.Tof(int(params["num_bins"]), float(params["bin_width"]),
                                    per_lor.get("sigma", params["sigma"]), float(params.get("num_sigmas", 3.0)),
                                    per_lor.get("center_offset", params.get("center_offset", 0.0)),
                                    lors=self._lors if per_lor else None)
            except Exception:
                self._lors.close()
                raise
            self.num_tof_bins = int(params["num_bins"])
        self.out_shape = (n, self.num_tof_bins) if self.kind == "tof_sino" else (n,)
        self._fwd_call = {"nontof": _sp.fwd, "tof_sino": _sp.fwd_tof_sino, "tof_lm": _sp.fwd_tof_lm}[self.kind]
        self._back_call = {"nontof": _sp.back, "tof_sino": _sp.back_tof_sino, "tof_lm": _sp.back_tof_lm}[self.kind]

    def close(self):
        """Unregisters the TOF parameters and the LORs (idempotent)."""
        if self._tof is not None:
            self._tof.close()
        self._lors.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "Projector(%s, %d LORs, image %s, on %s)" % (self.kind, self.num_lors, self.image_shape, self.device)

    def _args(self):
        return (self._tof,) if self._tof is not None else ()

    def _project(self, x, out):
        """Forward projection of x into out (overwritten), both checked; waits for the result."""
        with _sp.Image(x, self.voxel_size, self.origin) as img, _sp.Proj(self._lors, out) as proj:
            self._fwd_call(img, proj, *self._args())
            proj.sync()
        return out

    def _backproject(self, y, out):
        """Back projection of y added into out, both checked; waits for the result."""
        with _sp.Image(out, self.voxel_size, self.origin) as img, _sp.Proj(self._lors, y) as proj:
            self._back_call(img, proj, *self._args())
            img.sync()
        return out

    def project(self, x, out=None):
        """Forward projection of the image x (float32, image_shape, the projector's device), without autograd: into
        a new tensor, or into out (out_shape, overwritten), which is returned."""
        _check(x, "x", torch.float32, self.device, self.image_shape)
        if out is None:
            out = torch.empty(self.out_shape, dtype=torch.float32, device=self.device)
        else:
            _check(out, "out", torch.float32, self.device, self.out_shape)
        return self._project(x, out)

    def backproject(self, y, out=None):
        """Back projection of y (out_shape), without autograd: into a new zeroed image, or ADDED into out."""
        _check(y, "y", torch.float32, self.device, self.out_shape)
        if out is None:
            out = torch.zeros(self.image_shape, dtype=torch.float32, device=self.device)
        else:
            _check(out, "out", torch.float32, self.device, self.image_shape)
        return self._backproject(y, out)

    def __call__(self, x):
        """The forward projection of x, recorded by autograd (its backward is the back projection)."""
        return ForwardProjection.apply(x, self)

    def T(self, y):
        """The back projection of y, recorded by autograd (its backward is the forward projection)."""
        return BackProjection.apply(y, self)


class ForwardProjection(torch.autograd.Function):
    """y = A x for a Projector A: ForwardProjection.apply(x, op). Backward: the back projection of the gradient."""

    @staticmethod
    def forward(ctx, x, op):
        _check(x, "x", torch.float32, op.device, op.image_shape, grad_ok=True)
        ctx.op = op
        out = torch.empty(op.out_shape, dtype=torch.float32, device=op.device)
        # the projection reads x's memory as it is (detach: the same memory, without autograd's record)
        return op._project(x.detach(), out)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None
        return BackProjection.apply(grad.contiguous(), ctx.op), None


class BackProjection(torch.autograd.Function):
    """x = A^T y for a Projector A: BackProjection.apply(y, op). Backward: the forward projection of the gradient."""

    @staticmethod
    def forward(ctx, y, op):
        _check(y, "y", torch.float32, op.device, op.out_shape, grad_ok=True)
        ctx.op = op
        out = torch.zeros(op.image_shape, dtype=torch.float32, device=op.device)
        return op._backproject(y.detach(), out)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None
        return ForwardProjection.apply(grad.contiguous(), ctx.op), None
