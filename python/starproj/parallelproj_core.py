# parallelproj_core.py: libparallelproj's Python module (parallelproj_core) on starproj: its six calls, unchanged.
"""libparallelproj's Python calls on starproj: code written against ``parallelproj_core`` runs unchanged with

    import starproj.parallelproj_core as parallelproj_core

``joseph3d_fwd``, ``joseph3d_back``, ``joseph3d_tof_sino_fwd``, ``joseph3d_tof_sino_back``, ``joseph3d_tof_lm_fwd``
and ``joseph3d_tof_lm_back`` take libparallelproj's arguments (names, order, defaults) and refuse what it refuses
with the same exception types (TypeError for an array of the wrong dtype, order or number of dimensions, ValueError
for shapes that do not match); forward calls overwrite ``projection_values``, back calls add into ``image``. They
are functions of the C extension itself (no Python layer in between). Where the arrays live decides where they run:
NumPy arrays (or any buffer) on starproj's CPU workers, CuPy or PyTorch CUDA arrays (DLPack) on the GPU that holds
them, in place (no copy). ``device_id`` and ``threads_per_block`` are accepted and ignored. starproj starts on the
first call with its defaults (``starproj.init()`` first chooses otherwise) and stops at exit. The library's own
refusals (a non-finite coordinate, a non-positive voxel size, TOF parameters out of range) raise ``starproj.Error``,
leaving the outputs untouched. Listmode bins may be any int16, as in libparallelproj: a bin outside
0 .. num_tof_bins-1 lies beyond the ends of the TOF sinogram, its value libparallelproj's.

Each call registers its arrays, projects and unregisters them, as libparallelproj copies them to the GPU and back at
each call. Code that projects many chunks of one image, or the same LORs again and again, gains by keeping them
registered: ``starproj.Image``, ``starproj.Lors``, ``starproj.Chunks`` and ``starproj.Proj`` hold the same arrays
(no copy) across calls, and ``starproj.fwd`` / ``starproj.back`` (and the TOF variants) project one chunk or a list
of chunks at a time, returning at once (see the package's README).
"""
from . import _core
from ._core import (  # noqa: F401  (the module's API)
    joseph3d_back,
    joseph3d_fwd,
    joseph3d_tof_lm_back,
    joseph3d_tof_lm_fwd,
    joseph3d_tof_sino_back,
    joseph3d_tof_sino_fwd,
)

# The libparallelproj version whose Python calls these follow, and starproj's own after "+"; libparallelproj's
# module reports its library's version here.
version_major, version_minor, version_patch = 2, 0, 8
__version__ = "%d.%d.%d+starproj.%s" % (version_major, version_minor, version_patch, _core.version)
# 1 when starproj was built to drive GPUs (CUDA arrays then run there), as libparallelproj reports its CUDA build
cuda_enabled = _core.cuda_built

__all__ = [
    "joseph3d_fwd",
    "joseph3d_back",
    "joseph3d_tof_sino_fwd",
    "joseph3d_tof_sino_back",
    "joseph3d_tof_lm_fwd",
    "joseph3d_tof_lm_back",
    "cuda_enabled",
]
