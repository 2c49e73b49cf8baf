# __init__.py: the starproj Python package: the C extension's objects plus Runtime and batch() context managers.
"""Python binding of starproj: Joseph forward/back projectors and ML-EM/OS-EM on data kept resident by StarPU.

Objects (Image, Lors, Chunks, Proj, Tof, Model, Recon) own their registration in the library and use the arrays
given to them in place (no copy); close() them, use them as context managers, or let garbage collection free them.
Failures of the library raise starproj.Error (a RuntimeError with .status and .message).
"""
import atexit
import contextlib
import sys
import sysconfig


def _check_interpreter():
    """The extension is built on CPython 3.11's limited API (abi3): an older CPython, another implementation or a
    free-threaded build (which has no limited API) cannot load it; say so instead of failing inside the import."""
    impl = sys.implementation.name
    version = "%d.%d.%d" % sys.version_info[:3]
    if impl != "cpython" or sys.version_info < (3, 11) or sysconfig.get_config_var("Py_GIL_DISABLED"):
        raise ImportError(
            "starproj needs CPython 3.11 or newer with the GIL (its extension is built on the limited API, abi3); this "
            "interpreter is %s %s%s (%s)" % (impl, version, " free-threaded" if sysconfig.get_config_var(
                "Py_GIL_DISABLED") else "", sys.executable))


_check_interpreter()

from ._core import (  # noqa: F401  (re-exported API)
    ALL_CHUNKS,
    ALL_GPUS,
    DEVICE_ANY,
    DEVICE_CPU,
    DEVICE_CUDA,
    SYNC_READ,
    SYNC_WRITE,
    Chunks,
    Error,
    Image,
    Lors,
    Model,
    Proj,
    Recon,
    Scanner,
    Tof,
    back,
    back_tof_lm,
    back_tof_sino,
    batch_begin,
    batch_end,
    flush,
    fwd,
    fwd_tof_lm,
    fwd_tof_sino,
    get_task_lors,
    init,
    is_initialized,
    lors_order,
    lors_order_into,
    num_cpu_workers,
    num_gpus,
    num_workers,
    reorder,
    scheduler_name,
    set_devices,
    set_image_layouts,
    set_merge_calls,
    set_task_lors,
    shutdown,
    stats_reset,
    strerror,
    tof_bins_from_centered,
    version,
    wait_all,
    worker_stats,
)
from . import _core

# status codes, as the C enum names them without the SPROJ_ prefix
for _name in dir(_core):
    if _name.startswith("ERR_"):
        globals()[_name] = getattr(_core, _name)

__version__ = version


class Runtime:
    """The starproj runtime as an object: Runtime(**init_kwargs) calls init(); close() or leaving a `with` block
    calls shutdown(), which first closes every object still open."""

    def __init__(self, **kwargs):
        """Starts the runtime; see init() for the keyword arguments."""
        init(**kwargs)
        self._open = True

    def close(self):
        """Closes what is still open and stops StarPU (idempotent)."""
        if self._open:
            self._open = False
            shutdown()

    def __enter__(self):
        """Returns the runtime."""
        return self

    def __exit__(self, *exc):
        """Shuts the runtime down."""
        self.close()
        return False

    num_gpus = staticmethod(num_gpus)
    num_cpu_workers = staticmethod(num_cpu_workers)
    num_workers = staticmethod(num_workers)
    worker_stats = staticmethod(worker_stats)
    stats_reset = staticmethod(stats_reset)
    scheduler_name = staticmethod(scheduler_name)
    wait_all = staticmethod(wait_all)


@contextlib.contextmanager
def batch():
    """Collects this thread's projection calls and submits them together when the block ends
    (sproj_batch_begin / sproj_batch_end)."""
    batch_begin()
    try:
        yield
    finally:
        batch_end()


def _shutdown_at_exit():
    # StarPU's worker threads must be stopped before the interpreter tears down; errors at exit help nobody
    try:
        shutdown()
    except Exception:
        pass


atexit.register(_shutdown_at_exit)
