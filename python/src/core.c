/* core.c: the CPython extension starproj._core: runtime, Image, Lors, Chunks, Proj, Tof, Model, Recon, Scanner. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starproj.h>
#include <starproj_recon.h>

#include "dlpack_abi.h"

/* ======================================================================================================== */
/* errors                                                                                                    */
/* ======================================================================================================== */

static PyObject *sp_Error; /* starproj.Error, a RuntimeError with .status and .message */

/* Turns a negative status into starproj.Error. The library keeps its message per thread, and the GIL is taken back
 * on the thread that made the call, so the message read here is the failing call's own. */
static PyObject *sp_raise(int status)
{
  const char *msg = sproj_last_error();
  const char *name = sproj_strerror(status);
  if (!msg || !*msg)
    msg = name;
  PyObject *text = PyUnicode_FromFormat("%s [%s]", msg, name);
  if (!text)
    return NULL;
  PyObject *exc = PyObject_CallOneArg(sp_Error, text);
  Py_DECREF(text);
  if (!exc)
    return NULL;
  PyObject *st = PyLong_FromLong(status);
  PyObject *m = PyUnicode_FromString(msg);
  if (st && m) {
    PyObject_SetAttrString(exc, "status", st);
    PyObject_SetAttrString(exc, "message", m);
  }
  Py_XDECREF(st);
  Py_XDECREF(m);
  PyErr_SetObject(sp_Error, exc);
  Py_DECREF(exc);
  return NULL;
}

/* The same for failures the binding detects itself (e.g. a GPU array without a GPU worker), so that callers can
 * catch them like the library's own. */
static PyObject *sp_raise_msg(int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  PyObject *m = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  if (!m)
    return NULL;
  PyObject *text = PyUnicode_FromFormat("%U [%s]", m, sproj_strerror(status));
  PyObject *exc = text ? PyObject_CallOneArg(sp_Error, text) : NULL;
  Py_XDECREF(text);
  if (exc) {
    PyObject *st = PyLong_FromLong(status);
    if (st) {
      PyObject_SetAttrString(exc, "status", st);
      PyObject_SetAttrString(exc, "message", m);
    }
    Py_XDECREF(st);
    PyErr_SetObject(sp_Error, exc);
    Py_DECREF(exc);
  }
  Py_DECREF(m);
  return NULL;
}

/* ======================================================================================================== */
/* arrays: buffer protocol and DLPack                                                                        */
/* ======================================================================================================== */

enum sp_dtype { SP_F32, SP_I16, SP_I32, SP_I64 };
static const char *const sp_dtype_name[] = {"float32", "int16", "int32", "int64"};
static const Py_ssize_t sp_dtype_size[] = {4, 2, 4, 8};

/* One array an object registered: either a buffer view (host memory, kept exported so that NumPy cannot resize or
 * free it while starproj uses it) or a consumed DLPack tensor (host, or a GPU with a StarPU handle of our own). */
typedef struct {
  PyObject *owner;          /* the array object, for .array attributes */
  Py_buffer view;
  int has_view;
  PyObject *capsule;        /* consumed DLPack capsule (renamed "used_dltensor[_versioned]"); its tensor is ours */
  void *managed;            /* the capsule's sp_dl_managed_v (versioned) or sp_dl_managed, deleted on release */
  int versioned;
  void *ptr;
  Py_ssize_t count;         /* elements */
  int ndim;
  Py_ssize_t shape[4];
  int gpu_devid;            /* CUDA device of a GPU array, else -1 */
  unsigned gpu_node;        /* StarPU memory node of that device */
  starpu_data_handle_t handle; /* our StarPU vector handle of a GPU array */
} sp_arr;

static int sp_fmt_is(const char *fmt, Py_ssize_t itemsize, int dt)
{
  if (!fmt)
    fmt = "B";
  if (*fmt == '@' || *fmt == '=' || *fmt == '<')
    fmt++;
  if (!fmt[0] || fmt[1])
    return 0;
  if (itemsize != sp_dtype_size[dt])
    return 0;
  switch (dt) {
  case SP_F32: return fmt[0] == 'f';
  case SP_I16: return fmt[0] == 'h';
  case SP_I32: return fmt[0] == 'i' || fmt[0] == 'l';
  default: return fmt[0] == 'q' || fmt[0] == 'l';
  }
}

/* Shape check common to both paths: ndim < 0 accepts any number of dimensions (the caller checks the count). */
static int sp_check_shape(const char *name, int ndim, const Py_ssize_t *want, int got_ndim, const Py_ssize_t *got)
{
  if (ndim < 0)
    return 0;
  if (got_ndim != ndim) {
    PyErr_Format(PyExc_ValueError, "%s: expected a %d-dimensional array, got %d dimensions", name, ndim, got_ndim);
    return -1;
  }
  for (int i = 0; i < ndim; i++)
    if (want && want[i] >= 0 && got[i] != want[i]) {
      PyErr_Format(PyExc_ValueError, "%s: dimension %d has length %zd, expected %zd", name, i, got[i], want[i]);
      return -1;
    }
  return 0;
}

/* The StarPU memory node of the CUDA worker driving device devid, or -1 (starproj must be initialised). */
static int sp_cuda_node(int devid, unsigned *node)
{
  unsigned nw = starpu_worker_get_count();
  for (unsigned w = 0; w < nw; w++)
    if (starpu_worker_get_type((int)w) == STARPU_CUDA_WORKER && starpu_worker_get_devid((int)w) == devid) {
      *node = starpu_worker_get_memory_node(w);
      return 0;
    }
  return -1;
}

/* CUDA runtime calls for the stream handshake of DLPack. The extension links no CUDA library of its own: it uses the
 * libcudart that StarPU loaded (opened by its soname, so it is that very copy), which exists whenever StarPU drives a
 * CUDA worker, the only case in which a GPU array is accepted. */
#if defined(STARPU_USE_CUDA) && defined(CUDART_VERSION)
typedef int (*sp_cuda_getdev_fn)(int *);
typedef int (*sp_cuda_setdev_fn)(int);
typedef int (*sp_cuda_sync_fn)(void);
typedef int (*sp_cuda_stream_sync_fn)(void *);

/* Waits until the work the producer ordered before the legacy default stream of device devid is done (stream_given:
 * __dlpack__ was called with stream=1), or, for a producer that took no stream, until the whole device is idle.
 * StarPU runs its codelets on non-blocking streams, which the legacy stream does not order, hence the wait on the
 * host: registration is rare, the wait short. Called without the GIL. Returns a CUDA error code, or -1 when the CUDA
 * runtime cannot be found. */
static int sp_cuda_wait(int devid, int stream_given)
{
  static void *lib;
  static sp_cuda_getdev_fn get_device;
  static sp_cuda_setdev_fn set_device;
  static sp_cuda_sync_fn device_sync;
  static sp_cuda_stream_sync_fn stream_sync;
  if (!lib) {
    char name[64];
    const char *const patterns[] = {"libcudart.so.%d", "libcudart.so.%d.0"};
    for (int i = 0; i < 2 && !lib; i++) {
      snprintf(name, sizeof(name), patterns[i], CUDART_VERSION / 1000);
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib)
      lib = dlopen("libcudart.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return -1;
    get_device = (sp_cuda_getdev_fn)dlsym(lib, "cudaGetDevice");
    set_device = (sp_cuda_setdev_fn)dlsym(lib, "cudaSetDevice");
    device_sync = (sp_cuda_sync_fn)dlsym(lib, "cudaDeviceSynchronize");
    stream_sync = (sp_cuda_stream_sync_fn)dlsym(lib, "cudaStreamSynchronize");
  }
  if (!get_device || !set_device || !device_sync || !stream_sync)
    return -1;
  int previous = -1, err = get_device(&previous);
  if (!err && previous != devid)
    err = set_device(devid);
  if (!err)
    err = stream_given ? stream_sync((void *)(uintptr_t)1 /* cudaStreamLegacy */) : device_sync();
  /* the calling thread's current device is the caller's (CuPy, PyTorch keep theirs there) */
  if (previous >= 0 && previous != devid)
    set_device(previous);
  return err;
}
#else
static int sp_cuda_wait(int devid, int stream_given)
{
  (void)devid;
  (void)stream_given;
  return -1;
}
#endif

/* Calls obj.__dlpack__ as DLPack 1.0 asks: max_version=(1, 0) (a versioned capsule, which can say "read-only"),
 * copy=False (the memory itself or an error, never a copy) and, for a CUDA array, stream=1: the producer orders its
 * pending work on the array before the legacy default stream (sp_cuda_wait then waits for that). A producer that
 * does not take these keywords (a TypeError) is asked again with stream= only (CUDA), then with no argument;
 * *stream_given says whether the stream was passed. Other errors (BufferError...) are the caller's. */
static PyObject *sp_dlpack_export(PyObject *obj, int on_gpu, int *stream_given)
{
  PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
  if (!meth)
    return NULL;
  PyObject *noargs = PyTuple_New(0);
  PyObject *cap = NULL;
  for (int level = 2; level >= 0 && noargs; level--) {
    if (level == 1 && !on_gpu)
      continue;
    PyObject *kw = level ? PyDict_New() : NULL;
    if (level && !kw)
      break;
    int bad = 0;
    if (level == 2) {
      PyObject *ver = Py_BuildValue("(ii)", 1, 0);
      bad = !ver || PyDict_SetItemString(kw, "max_version", ver) < 0 ||
            PyDict_SetItemString(kw, "copy", Py_False) < 0;
      Py_XDECREF(ver);
    }
    if (!bad && level && on_gpu) {
      PyObject *one = PyLong_FromLong(1);
      bad = !one || PyDict_SetItemString(kw, "stream", one) < 0;
      Py_XDECREF(one);
    }
    if (bad) {
      Py_XDECREF(kw);
      break;
    }
    cap = PyObject_Call(meth, noargs, kw);
    Py_XDECREF(kw);
    if (cap || !PyErr_ExceptionMatches(PyExc_TypeError) || level == 0) {
      *stream_given = cap && level > 0 && on_gpu;
      break;
    }
    PyErr_Clear(); /* keywords this producer does not know: ask it the older way */
  }
  Py_XDECREF(noargs);
  Py_DECREF(meth);
  return cap;
}

static int sp_arr_dlpack(sp_arr *a, PyObject *obj, const char *name, int dt, int writable, int ndim,
                         const Py_ssize_t *want, int allow_gpu)
{
  PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  if (!dev)
    return -1;
  long dtype_dev = -1, devid = -1;
  if (PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2) {
    dtype_dev = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
    devid = PyLong_AsLong(PyTuple_GET_ITEM(dev, 1));
  }
  Py_DECREF(dev);
  if (PyErr_Occurred())
    return -1;
  int on_gpu = dtype_dev == SP_DL_CUDA;
  if (!on_gpu && dtype_dev != SP_DL_CPU && dtype_dev != SP_DL_CUDA_HOST) {
    PyErr_Format(PyExc_ValueError, "%s: DLPack device type %ld is not supported (CPU or CUDA only)", name, dtype_dev);
    return -1;
  }
  unsigned node = 0;
  if (on_gpu) {
    /* refuse before consuming the tensor, so that the caller's array is left exactly as it was */
    if (!allow_gpu) {
      PyErr_Format(PyExc_ValueError, "%s: a GPU array is not accepted here (host memory only)", name);
      return -1;
    }
    if (!sproj_is_initialized()) {
      sp_raise_msg(SPROJ_ERR_NOT_INIT, "%s: starproj is not initialised", name);
      return -1;
    }
    if (sp_cuda_node((int)devid, &node) < 0) {
      sp_raise_msg(SPROJ_ERR_NO_DEVICE,
                   "%s: the array lives on CUDA device %ld, but StarPU drives no CUDA worker on it (num_gpus() = %d)",
                   name, devid, sproj_num_gpus());
      return -1;
    }
  }
  int stream_given = 0;
  PyObject *cap = sp_dlpack_export(obj, on_gpu, &stream_given);
  if (!cap)
    return -1;
  void *mt = NULL;
  sp_dl_tensor *t = NULL;
  uint64_t flags = 0;
  int versioned = PyCapsule_IsValid(cap, "dltensor_versioned");
  if (versioned) {
    sp_dl_managed_v *mv = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (mv && mv->version.major != 1) {
      /* a layout this code does not know; the capsule (not renamed) still deletes its tensor */
      PyErr_Format(PyExc_BufferError, "%s: DLPack version %u.%u is not supported (1.x only)", name,
                   (unsigned)mv->version.major, (unsigned)mv->version.minor);
      Py_DECREF(cap);
      return -1;
    }
    if (mv) {
      mt = mv;
      t = &mv->dl_tensor;
      flags = mv->flags;
    }
  } else if (PyCapsule_IsValid(cap, "dltensor")) {
    sp_dl_managed *ml = PyCapsule_GetPointer(cap, "dltensor");
    if (ml) {
      mt = ml;
      t = &ml->dl_tensor;
    }
  }
  if (!mt) {
    Py_DECREF(cap);
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s: __dlpack__ did not return an unused 'dltensor_versioned' or 'dltensor' capsule",
                 name);
    return -1;
  }
  static const uint8_t codes[] = {SP_DL_FLOAT, SP_DL_INT, SP_DL_INT, SP_DL_INT};
  if (t->dtype.code != codes[dt] || t->dtype.bits != 8 * sp_dtype_size[dt] || t->dtype.lanes != 1) {
    PyErr_Format(PyExc_TypeError, "%s: expected dtype %s, got DLPack type code %d with %d bits", name, sp_dtype_name[dt],
                 (int)t->dtype.code, (int)t->dtype.bits);
    Py_DECREF(cap);
    return -1;
  }
  if ((t->device.device_type == SP_DL_CUDA) != on_gpu || (on_gpu && t->device.device_id != devid)) {
    PyErr_Format(PyExc_ValueError, "%s: the DLPack tensor is on device (%d, %d), __dlpack_device__ said (%ld, %ld)", name,
                 (int)t->device.device_type, (int)t->device.device_id, dtype_dev, devid);
    Py_DECREF(cap);
    return -1;
  }
  if (writable && (flags & SP_DL_FLAG_READ_ONLY)) {
    PyErr_Format(PyExc_ValueError, "%s: array is read-only, but starproj writes into it", name);
    Py_DECREF(cap);
    return -1;
  }
  if (t->ndim < 0 || t->ndim > 4) {
    PyErr_Format(PyExc_ValueError, "%s: %d dimensions are not supported", name, (int)t->ndim);
    Py_DECREF(cap);
    return -1;
  }
  Py_ssize_t shape[4], count = 1, expect = 1;
  for (int i = 0; i < t->ndim; i++) {
    shape[i] = (Py_ssize_t)t->shape[i];
    count *= shape[i];
  }
  if (sp_check_shape(name, ndim, want, t->ndim, shape) < 0) {
    Py_DECREF(cap);
    return -1;
  }
  /* strides in elements; a dimension of length 1 may carry any stride */
  if (t->strides)
    for (int i = t->ndim - 1; i >= 0; i--) {
      if (shape[i] != 1 && t->strides[i] != expect) {
        PyErr_Format(PyExc_ValueError, "%s: array is not C-contiguous (stride %lld in dimension %d, expected %zd)", name,
                     (long long)t->strides[i], i, expect);
        Py_DECREF(cap);
        return -1;
      }
      expect *= shape[i];
    }
  char *ptr = (char *)t->data + t->byte_offset;
  if ((uintptr_t)ptr % (uintptr_t)sp_dtype_size[dt]) {
    PyErr_Format(PyExc_ValueError, "%s: data is not aligned to its element size", name);
    Py_DECREF(cap);
    return -1;
  }
  if (on_gpu) {
    /* the producer's kernels writing the array may still run; StarPU's streams would not wait for them */
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = sp_cuda_wait((int)devid, stream_given);
    Py_END_ALLOW_THREADS
    if (err) {
      sp_raise_msg(SPROJ_ERR_NO_DEVICE, "%s: waiting for the producer's work on CUDA device %ld failed (%s %d)", name,
                   devid, err < 0 ? "no CUDA runtime found," : "CUDA error", err);
      Py_DECREF(cap);
      return -1;
    }
  }
  /* from here the tensor is ours: the capsule's destructor must not free it any more */
  if (PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor") < 0) {
    Py_DECREF(cap);
    return -1;
  }
  a->capsule = cap;
  a->managed = mt;
  a->versioned = versioned;
  a->ptr = ptr;
  a->count = count;
  a->ndim = t->ndim;
  memcpy(a->shape, shape, sizeof(Py_ssize_t) * (size_t)t->ndim);
  a->gpu_devid = on_gpu ? (int)devid : -1;
  a->gpu_node = node;
  return 0;
}

/* Takes an array without copying it. Host arrays come through the buffer protocol: the first request (strides and
 * format, no other demands) only serves to name what is wrong, the second one is the export kept while the array is
 * registered. Objects with __dlpack__ only (PyTorch, CuPy) come through DLPack. */
static int sp_arr_get(sp_arr *a, PyObject *obj, const char *name, int dt, int writable, int ndim,
                      const Py_ssize_t *want, int allow_gpu)
{
  memset(a, 0, sizeof(*a));
  a->gpu_devid = -1;
  int has_dlpack = PyObject_HasAttrString(obj, "__dlpack__") && PyObject_HasAttrString(obj, "__dlpack_device__");
  /* CuPy's arrays have a buffer slot that refuses every request: an array on a GPU always goes through DLPack */
  int on_gpu = 0;
  if (has_dlpack) {
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (dev && PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2) {
      long type = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
      on_gpu = type != 1 /* kDLCPU */ && type != -1;
    }
    Py_XDECREF(dev);
    PyErr_Clear();
  }
  if (!PyObject_CheckBuffer(obj) || on_gpu) {
    if (has_dlpack) {
      if (sp_arr_dlpack(a, obj, name, dt, writable, ndim, want, allow_gpu) < 0)
        return -1;
      Py_INCREF(obj);
      a->owner = obj;
      return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: expected a %s array (buffer protocol or __dlpack__), got %.100s", name,
                 sp_dtype_name[dt], Py_TYPE(obj)->tp_name);
    return -1;
  }
  Py_buffer v;
  if (PyObject_GetBuffer(obj, &v, PyBUF_RECORDS_RO) < 0) {
    PyErr_Clear();
    if (has_dlpack) { /* a buffer slot that refuses: DLPack then */
      if (sp_arr_dlpack(a, obj, name, dt, writable, ndim, want, allow_gpu) < 0)
        return -1;
      Py_INCREF(obj);
      a->owner = obj;
      return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: %.100s does not export a strided buffer", name, Py_TYPE(obj)->tp_name);
    return -1;
  }
  int bad = 0;
  if (!sp_fmt_is(v.format, v.itemsize, dt)) {
    PyErr_Format(PyExc_TypeError, "%s: expected dtype %s, got buffer format '%s' with %zd-byte items", name,
                 sp_dtype_name[dt], v.format ? v.format : "B", v.itemsize);
    bad = 1;
  } else if (sp_check_shape(name, ndim, want, v.ndim, v.shape) < 0) {
    bad = 1;
  } else if (!PyBuffer_IsContiguous(&v, 'C')) {
    PyErr_Format(PyExc_ValueError,
                 "%s: array is not C-contiguous (starproj uses the memory in place; pass numpy.ascontiguousarray(...))",
                 name);
    bad = 1;
  } else if (writable && v.readonly) {
    PyErr_Format(PyExc_ValueError, "%s: array is read-only, but starproj writes into it", name);
    bad = 1;
  } else if ((uintptr_t)v.buf % (uintptr_t)v.itemsize) {
    PyErr_Format(PyExc_ValueError, "%s: data is not aligned to its element size", name);
    bad = 1;
  }
  PyBuffer_Release(&v);
  if (bad)
    return -1;
  if (PyObject_GetBuffer(obj, &a->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
    return -1;
  a->has_view = 1;
  a->ptr = a->view.buf;
  a->count = a->view.itemsize ? a->view.len / a->view.itemsize : 0;
  a->ndim = a->view.ndim;
  for (int i = 0; i < a->view.ndim && i < 4; i++)
    a->shape[i] = a->view.shape ? a->view.shape[i] : a->count;
  Py_INCREF(obj);
  a->owner = obj;
  return 0;
}

/* Registers a GPU array as a StarPU vector on its device's memory node (StarPU then treats that memory as the data's
 * home: tasks on that GPU use it in place, nothing crosses to the host). */
static int sp_arr_gpu_handle(sp_arr *a, uint32_t nelem, size_t elemsize)
{
  starpu_vector_data_register(&a->handle, (int)a->gpu_node, (uintptr_t)a->ptr, nelem, elemsize);
  return a->handle ? 0 : -1;
}

static void sp_arr_release(sp_arr *a)
{
  if (a->handle) {
    starpu_data_handle_t h = a->handle;
    a->handle = NULL;
    Py_BEGIN_ALLOW_THREADS
    starpu_data_unregister(h);
    Py_END_ALLOW_THREADS
  }
  if (a->has_view) {
    PyBuffer_Release(&a->view);
    a->has_view = 0;
  }
  if (a->managed) {
    void *m = a->managed;
    a->managed = NULL;
    if (a->versioned) {
      sp_dl_managed_v *mv = m;
      if (mv->deleter)
        mv->deleter(mv);
    } else {
      sp_dl_managed *ml = m;
      if (ml->deleter)
        ml->deleter(ml);
    }
  }
  Py_CLEAR(a->capsule);
  Py_CLEAR(a->owner);
}

/* ======================================================================================================== */
/* objects                                                                                                   */
/* ======================================================================================================== */

/* Kinds in the order shutdown closes them: users before what they use. */
enum sp_kind { K_RECON, K_MODEL, K_PROJ, K_CHUNKS, K_TOF, K_LORS, K_IMAGE, K_NKINDS };
static const char *const sp_kind_name[] = {"Recon", "Model", "Proj", "Chunks", "Tof", "Lors", "Image"};

#define SP_MAX_ARRS 3
#define SP_MAX_DEPS 6

typedef struct sp_obj {
  PyObject_HEAD
  PyObject *weakrefs;
  struct sp_obj *prev, *next; /* every open object, so that shutdown can close what the caller left open */
  int kind;
  void *h;                    /* the library's object; NULL once closed */
  int busy;                   /* calls on other threads (GIL released) using it right now */
  int users;                  /* open objects that depend on it */
  sp_arr arr[SP_MAX_ARRS];
  PyObject *deps[SP_MAX_DEPS];/* objects it depends on, kept alive (and counted as used) while it is open */
  int64_t num_lors;           /* Lors, Proj, Chunks (of its set) */
  int values_per_lor;         /* Proj */
  int has_bins;               /* Lors registered as events */
  int num_chunks;             /* Chunks */
  int num_bins;               /* Tof */
  int dims[3];                /* Image */
  int *ints[4];               /* Recon: subset lists it passed to the library */
} sp_obj;

static sp_obj *sp_live; /* head of the list of open objects */
static int sp_inflight; /* calls running with the GIL released */

static PyTypeObject ImageType, LorsType, ChunksType, ProjType, TofType, ModelType, ReconType;
static PyTypeObject *const sp_types[] = {&ReconType, &ModelType, &ProjType, &ChunksType, &TofType, &LorsType, &ImageType};

static sp_obj *sp_obj_new(int kind)
{
  sp_obj *o = (sp_obj *)sp_types[kind]->tp_alloc(sp_types[kind], 0);
  if (!o)
    return NULL;
  o->kind = kind;
  for (int i = 0; i < SP_MAX_ARRS; i++)
    o->arr[i].gpu_devid = -1;
  return o;
}

/* Marks o open with its library object h: links it and counts it as a user of its dependencies. */
static void sp_obj_opened(sp_obj *o, void *h)
{
  o->h = h;
  o->next = sp_live;
  o->prev = NULL;
  if (sp_live)
    sp_live->prev = o;
  sp_live = o;
  /* every dependency is one of our objects (sp_obj_add_dep skips None) */
  for (int i = 0; i < SP_MAX_DEPS; i++)
    if (o->deps[i])
      ((sp_obj *)o->deps[i])->users++;
}

static void sp_obj_add_dep(sp_obj *o, PyObject *dep)
{
  if (!dep || dep == Py_None)
    return;
  for (int i = 0; i < SP_MAX_DEPS; i++)
    if (!o->deps[i]) {
      Py_INCREF(dep);
      o->deps[i] = dep;
      return;
    }
}

static int sp_unregister(int kind, void *h)
{
  switch (kind) {
  case K_RECON: return sproj_recon_destroy(h);
  case K_MODEL: return sproj_model_destroy(h);
  case K_PROJ: return sproj_proj_unregister(h);
  case K_CHUNKS: return sproj_chunks_destroy(h);
  case K_TOF: return sproj_tof_unregister(h);
  case K_LORS: return sproj_lors_unregister(h);
  default: return sproj_image_unregister(h);
  }
}

/* Frees what an object holds after (or instead of) its registration: arrays, GPU handles, dependencies. */
static void sp_obj_drop(sp_obj *o)
{
  for (int i = 0; i < SP_MAX_ARRS; i++)
    sp_arr_release(&o->arr[i]);
  for (int i = 0; i < SP_MAX_DEPS; i++)
    Py_CLEAR(o->deps[i]);
  for (int i = 0; i < 4; i++) {
    PyMem_Free(o->ints[i]);
    o->ints[i] = NULL;
  }
}

/* Unregisters o. raise = 0 (finalizer): failures are reported as unraisable and the arrays are then kept (a
 * registration that could not be undone may still be used by StarPU, so its memory must stay). */
static int sp_obj_close(sp_obj *o, int raise)
{
  if (!o->h)
    return 0;
  if (o->busy) {
    if (raise)
      PyErr_Format(PyExc_RuntimeError, "%s is in use by another thread", sp_kind_name[o->kind]);
    return -1;
  }
  if (o->users) {
    if (raise)
      sp_raise_msg(SPROJ_ERR_BUSY, "%s is still used by %d open object(s); close them first", sp_kind_name[o->kind],
                   o->users);
    return -1;
  }
  void *h = o->h;
  int kind = o->kind, st;
  o->busy++;
  Py_BEGIN_ALLOW_THREADS
  st = sp_unregister(kind, h);
  Py_END_ALLOW_THREADS
  o->busy--;
  if (st) {
    if (raise)
      sp_raise(st);
    return -1;
  }
  o->h = NULL;
  if (o->prev)
    o->prev->next = o->next;
  else
    sp_live = o->next;
  if (o->next)
    o->next->prev = o->prev;
  o->prev = o->next = NULL;
  for (int i = 0; i < SP_MAX_DEPS; i++)
    if (o->deps[i])
      ((sp_obj *)o->deps[i])->users--;
  sp_obj_drop(o);
  return 0;
}

static void sp_obj_finalize(PyObject *self)
{
  sp_obj *o = (sp_obj *)self;
  if (!o->h)
    return;
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  if (sp_obj_close(o, 1) < 0)
    PyErr_WriteUnraisable(self);
  PyErr_Restore(et, ev, tb);
}

static void sp_obj_dealloc(PyObject *self)
{
  sp_obj *o = (sp_obj *)self;
  if (PyObject_CallFinalizerFromDealloc(self) < 0)
    return; /* resurrected */
  if (o->weakrefs)
    PyObject_ClearWeakRefs(self);
  if (!o->h)
    sp_obj_drop(o);
  /* an object whose unregistration failed keeps its arrays exported (leaked) rather than let StarPU use freed memory */
  Py_TYPE(self)->tp_free(self);
}

/* The object, checked to be of the type and open; NULL with an exception otherwise. */
static sp_obj *sp_open(PyObject *obj, int kind, const char *argname)
{
  if (!PyObject_TypeCheck(obj, sp_types[kind])) {
    PyErr_Format(PyExc_TypeError, "%s: expected starproj.%s, got %.100s", argname, sp_kind_name[kind],
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  sp_obj *o = (sp_obj *)obj;
  if (!o->h) {
    PyErr_Format(PyExc_ValueError, "%s: this %s is closed (closed explicitly, or by shutdown())", argname,
                 sp_kind_name[kind]);
    return NULL;
  }
  return o;
}

/* Runs expr (a library call on plain C values) with the GIL released, while o counts as busy so that no other thread
 * can close it meanwhile. Partitioning a LOR set or registering a model may wait for StarPU. */
#define SP_RELEASED(o, st, expr)                                                                              \
  do {                                                                                                        \
    (o)->busy++;                                                                                              \
    sp_inflight++;                                                                                            \
    Py_BEGIN_ALLOW_THREADS                                                                                    \
    st = (expr);                                                                                              \
    Py_END_ALLOW_THREADS                                                                                      \
    sp_inflight--;                                                                                            \
    (o)->busy--;                                                                                              \
  } while (0)

static PyObject *sp_close_meth(PyObject *self, PyObject *unused)
{
  (void)unused;
  if (sp_obj_close((sp_obj *)self, 1) < 0)
    return NULL;
  Py_RETURN_NONE;
}

static PyObject *sp_enter(PyObject *self, PyObject *unused)
{
  (void)unused;
  Py_INCREF(self);
  return self;
}

static PyObject *sp_exit(PyObject *self, PyObject *args)
{
  (void)args;
  if (sp_obj_close((sp_obj *)self, 1) < 0)
    return NULL;
  Py_RETURN_FALSE;
}

static PyObject *sp_get_closed(PyObject *self, void *unused)
{
  (void)unused;
  return PyBool_FromLong(((sp_obj *)self)->h == NULL);
}

/* ======================================================================================================== */
/* argument helpers                                                                                          */
/* ======================================================================================================== */

/* Vectorcall argument parsing for the calls made in loops (projections, syncs): no tuple or dict is built. */
static int sp_fast_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                        const char *const *names, int nnames, int nreq, PyObject **out)
{
  for (int i = 0; i < nnames; i++)
    out[i] = NULL;
  if (nargs > nnames) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", fname, nnames, nargs);
    return -1;
  }
  for (Py_ssize_t i = 0; i < nargs; i++)
    out[i] = args[i];
  if (kwnames) {
    Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t j = 0; j < nk; j++) {
      PyObject *key = PyTuple_GET_ITEM(kwnames, j);
      int i;
      for (i = 0; i < nnames; i++)
        if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0)
          break;
      if (i == nnames) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname, key);
        return -1;
      }
      if (out[i]) {
        PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname, names[i]);
        return -1;
      }
      out[i] = args[nargs + j];
    }
  }
  for (int i = 0; i < nreq; i++)
    if (!out[i]) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname, names[i]);
      return -1;
    }
  return 0;
}

static int sp_as_int(PyObject *o, const char *name, int *out)
{
  long v = PyLong_AsLong(o);
  if (v == -1 && PyErr_Occurred()) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "%s: expected an int, got %.100s", name, Py_TYPE(o)->tp_name);
    }
    return -1;
  }
  if (v < INT_MIN || v > INT_MAX) {
    PyErr_Format(PyExc_OverflowError, "%s: %ld does not fit a C int", name, v);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* A sequence of ints into a new PyMem array (*n elements). */
static int64_t *sp_int64_list(PyObject *seq, const char *name, Py_ssize_t *n)
{
  PyObject *f = PySequence_Fast(seq, name);
  if (!f)
    return NULL;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(f);
  int64_t *v = PyMem_Malloc(sizeof(int64_t) * (size_t)(len ? len : 1));
  if (!v) {
    Py_DECREF(f);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    long long x = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "%s: element %zd is not an int", name, i);
      PyMem_Free(v);
      Py_DECREF(f);
      return NULL;
    }
    v[i] = x;
  }
  Py_DECREF(f);
  *n = len;
  return v;
}

static int *sp_int_list(PyObject *seq, const char *name, Py_ssize_t *n)
{
  int64_t *w = sp_int64_list(seq, name, n);
  if (!w)
    return NULL;
  int *v = PyMem_Malloc(sizeof(int) * (size_t)(*n ? *n : 1));
  if (!v) {
    PyMem_Free(w);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < *n; i++) {
    if (w[i] < INT_MIN || w[i] > INT_MAX) {
      PyErr_Format(PyExc_OverflowError, "%s: element %zd does not fit a C int", name, i);
      PyMem_Free(w);
      PyMem_Free(v);
      return NULL;
    }
    v[i] = (int)w[i];
  }
  PyMem_Free(w);
  return v;
}

static int sp_float3(PyObject *o, const char *name, float out[3])
{
  PyObject *f = PySequence_Fast(o, name);
  if (!f)
    return -1;
  if (PySequence_Fast_GET_SIZE(f) != 3) {
    Py_DECREF(f);
    PyErr_Format(PyExc_ValueError, "%s: expected 3 numbers", name);
    return -1;
  }
  for (int i = 0; i < 3; i++) {
    double d = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(f, i));
    if (d == -1.0 && PyErr_Occurred()) {
      Py_DECREF(f);
      return -1;
    }
    out[i] = (float)d;
  }
  Py_DECREF(f);
  return 0;
}

static PyObject *sp_tuple3f(const float v[3])
{
  return Py_BuildValue("(ddd)", (double)v[0], (double)v[1], (double)v[2]);
}

/* A new zeroed NumPy array for calls that return arrays (numpy is imported when first needed, so that the extension
 * itself does not depend on NumPy's C API). */
static PyObject *sp_np_zeros(PyObject *shape, const char *dtype)
{
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np)
    return NULL;
  PyObject *r = PyObject_CallMethod(np, "zeros", "Os", shape, dtype);
  Py_DECREF(np);
  return r;
}

/* Sync modes as the constants or as 'read' / 'write'. */
static int sp_mode(PyObject *o, int *mode)
{
  if (!o) {
    *mode = SPROJ_SYNC_READ;
    return 0;
  }
  if (PyUnicode_Check(o)) {
    if (PyUnicode_CompareWithASCIIString(o, "read") == 0)
      *mode = SPROJ_SYNC_READ;
    else if (PyUnicode_CompareWithASCIIString(o, "write") == 0)
      *mode = SPROJ_SYNC_WRITE;
    else {
      PyErr_SetString(PyExc_ValueError, "mode: expected 'read', 'write', SYNC_READ or SYNC_WRITE");
      return -1;
    }
    return 0;
  }
  return sp_as_int(o, "mode", mode);
}

/* chunks argument: None (the whole set) or an open Chunks. */
static int sp_chunks_arg(PyObject *o, sproj_chunks **c, sp_obj **co)
{
  *c = NULL;
  *co = NULL;
  if (!o || o == Py_None)
    return 0;
  sp_obj *x = sp_open(o, K_CHUNKS, "chunks");
  if (!x)
    return -1;
  *c = x->h;
  *co = x;
  return 0;
}

/* ======================================================================================================== */
/* runtime                                                                                                   */
/* ======================================================================================================== */

static char *sp_sched_copy; /* the scheduler name handed to sproj_init, kept until shutdown */

static int sp_devices_mask(PyObject *o, unsigned *mask)
{
  if (PyUnicode_Check(o)) {
    if (!PyUnicode_CompareWithASCIIString(o, "cpu"))
      *mask = SPROJ_DEVICE_CPU;
    else if (!PyUnicode_CompareWithASCIIString(o, "gpu") || !PyUnicode_CompareWithASCIIString(o, "cuda"))
      *mask = SPROJ_DEVICE_CUDA;
    else if (!PyUnicode_CompareWithASCIIString(o, "any"))
      *mask = SPROJ_DEVICE_ANY;
    else {
      PyErr_SetString(PyExc_ValueError, "devices: expected 'cpu', 'gpu', 'any' or a DEVICE_* mask");
      return -1;
    }
    return 0;
  }
  int v;
  if (sp_as_int(o, "devices", &v) < 0)
    return -1;
  *mask = (unsigned)v;
  return 0;
}

static PyObject *sp_init(PyObject *m, PyObject *args, PyObject *kw)
{
  (void)m;
  static char *names[] = {"devices", "scheduler", "ncpu", "ngpu", "workers_per_gpu", "task_lors", "verbose",
                          "max_queued_tasks", "reproducible", "merge_calls", "image_layouts", NULL};
  PyObject *devices = Py_None;
  const char *sched = NULL;
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  long long task_lors = 0;
  int verbose = 0, reproducible = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Ozii" "iLp" "ipii:init", names, &devices, &sched, &cfg.ncpu,
                                   &cfg.ncuda, &cfg.workers_per_gpu, &task_lors, &verbose, &cfg.max_queued_tasks,
                                   &reproducible, &cfg.merge_calls, &cfg.image_layouts))
    return NULL;
  unsigned mask = 0;
  if (devices != Py_None && sp_devices_mask(devices, &mask) < 0)
    return NULL;
  cfg.task_lors = task_lors;
  cfg.verbose = verbose;
  cfg.reproducible = reproducible;
  char *copy = NULL;
  if (sched) {
    copy = strdup(sched);
    if (!copy)
      return PyErr_NoMemory();
  }
  cfg.sched = copy;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_init(&cfg);
  Py_END_ALLOW_THREADS
  if (st) {
    free(copy);
    return sp_raise(st);
  }
  free(sp_sched_copy);
  sp_sched_copy = copy;
  if (devices != Py_None && (st = sproj_set_devices(mask)) != 0) {
    sp_raise(st);
    /* leave the process as before the call: a runtime without the devices asked for is no success */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Py_BEGIN_ALLOW_THREADS
    sproj_shutdown();
    Py_END_ALLOW_THREADS
    PyErr_Restore(et, ev, tb);
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *sp_shutdown(PyObject *m, PyObject *unused)
{
  (void)m;
  (void)unused;
  if (!sproj_is_initialized())
    Py_RETURN_NONE;
  if (sp_inflight) {
    PyErr_SetString(PyExc_RuntimeError, "shutdown: other threads are still in starproj calls");
    return NULL;
  }
  /* close what the caller left open, users before what they use, so that sproj_shutdown is not refused */
  for (int kind = 0; kind < K_NKINDS; kind++) {
    sp_obj *o = sp_live;
    while (o) {
      sp_obj *next = o->next;
      if (o->kind == kind) {
        Py_INCREF(o);
        int r = sp_obj_close(o, 1);
        Py_DECREF(o);
        if (r < 0)
          return NULL;
        next = sp_live; /* the list may have changed under the decref; start over, closed ones are gone */
      }
      o = next;
    }
  }
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_shutdown();
  Py_END_ALLOW_THREADS
  if (st)
    return sp_raise(st);
  free(sp_sched_copy);
  sp_sched_copy = NULL;
  Py_RETURN_NONE;
}

static PyObject *sp_is_initialized(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  return PyBool_FromLong(sproj_is_initialized());
}

static PyObject *sp_num_gpus(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  return PyLong_FromLong(sproj_num_gpus());
}

static PyObject *sp_num_cpu_workers(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  return PyLong_FromLong(sproj_num_cpu_workers());
}

static PyObject *sp_num_workers(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  return PyLong_FromLong(sproj_num_workers());
}

static PyObject *sp_scheduler_name(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  const char *s = sproj_scheduler_name();
  if (!s)
    Py_RETURN_NONE;
  return PyUnicode_FromString(s);
}

static PyObject *sp_worker_stats(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  int n = sproj_num_workers();
  PyObject *list = PyList_New(0);
  if (!list)
    return NULL;
  for (int w = 0; w < n; w++) {
    struct sproj_worker_stats s;
    int st;
    /* stats count finished tasks after a wait: the call may wait for StarPU's bookkeeping */
    Py_BEGIN_ALLOW_THREADS
    st = sproj_worker_stats(w, &s);
    Py_END_ALLOW_THREADS
    if (st) {
      Py_DECREF(list);
      return sp_raise(st);
    }
    PyObject *d = Py_BuildValue("{s:i,s:s,s:O,s:i,s:L,s:L,s:L}", "worker", w, "name", s.name, "is_gpu",
                                s.is_gpu ? Py_True : Py_False, "gpu", s.gpu, "tasks", (long long)s.tasks, "lors",
                                (long long)s.lors, "layout_tasks", (long long)s.layout_tasks);
    if (!d || PyList_Append(list, d) < 0) {
      Py_XDECREF(d);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(d);
  }
  return list;
}

/* Calls a status-returning function of no arguments with the GIL released (waits, flushes). */
static PyObject *sp_call_released(int (*fn)(void))
{
  int st;
  sp_inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = fn();
  Py_END_ALLOW_THREADS
  sp_inflight--;
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *sp_wait_all(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  return sp_call_released(sproj_wait_all);
}

static PyObject *sp_flush(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  return sp_call_released(sproj_flush);
}

static PyObject *sp_stats_reset(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  return sp_call_released(sproj_stats_reset);
}

static PyObject *sp_batch_begin(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  int st = sproj_batch_begin();
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *sp_batch_end(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  return sp_call_released(sproj_batch_end);
}

static PyObject *sp_set_devices(PyObject *m, PyObject *arg)
{
  (void)m;
  unsigned mask;
  if (sp_devices_mask(arg, &mask) < 0)
    return NULL;
  int st = sproj_set_devices(mask);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *sp_set_task_lors(PyObject *m, PyObject *arg)
{
  (void)m;
  long long v = PyLong_AsLongLong(arg);
  if (v == -1 && PyErr_Occurred())
    return NULL;
  int st = sproj_set_task_lors(v);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *sp_get_task_lors(PyObject *m, PyObject *u)
{
  (void)m;
  (void)u;
  return PyLong_FromLongLong(sproj_get_task_lors());
}

static PyObject *sp_set_flag(PyObject *arg, int (*fn)(int), const char *name)
{
  int v;
  if (sp_as_int(arg, name, &v) < 0)
    return NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = fn(v);
  Py_END_ALLOW_THREADS
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *sp_set_merge_calls(PyObject *m, PyObject *arg)
{
  (void)m;
  return sp_set_flag(arg, sproj_set_merge_calls, "on");
}

static PyObject *sp_set_image_layouts(PyObject *m, PyObject *arg)
{
  (void)m;
  return sp_set_flag(arg, sproj_set_image_layouts, "on");
}

static PyObject *sp_strerror(PyObject *m, PyObject *arg)
{
  (void)m;
  int v;
  if (sp_as_int(arg, "status", &v) < 0)
    return NULL;
  return PyUnicode_FromString(sproj_strerror(v));
}

/* ======================================================================================================== */
/* projections                                                                                               */
/* ======================================================================================================== */

enum sp_op { OP_FWD, OP_BACK, OP_FWD_SINO, OP_BACK_SINO, OP_FWD_LM, OP_BACK_LM };

static int sp_submit(int op, sproj_image *i, sproj_proj *p, const sproj_chunks *c, int chunk, const int *list, int num,
                     const sproj_tof *t)
{
  if (list)
    switch (op) {
    case OP_FWD: return sproj_fwd_chunks(i, p, c, list, num);
    case OP_BACK: return sproj_back_chunks(i, p, c, list, num);
    case OP_FWD_SINO: return sproj_fwd_tof_sino_chunks(i, p, c, list, num, t);
    case OP_BACK_SINO: return sproj_back_tof_sino_chunks(i, p, c, list, num, t);
    case OP_FWD_LM: return sproj_fwd_tof_lm_chunks(i, p, c, list, num, t);
    default: return sproj_back_tof_lm_chunks(i, p, c, list, num, t);
    }
  switch (op) {
  case OP_FWD: return sproj_fwd(i, p, c, chunk);
  case OP_BACK: return sproj_back(i, p, c, chunk);
  case OP_FWD_SINO: return sproj_fwd_tof_sino(i, p, c, chunk, t);
  case OP_BACK_SINO: return sproj_back_tof_sino(i, p, c, chunk, t);
  case OP_FWD_LM: return sproj_fwd_tof_lm(i, p, c, chunk, t);
  default: return sproj_back_tof_lm(i, p, c, chunk, t);
  }
}

static PyObject *sp_project(int op, const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
  static const char *const plain[] = {"image", "proj", "chunks", "chunk"};
  static const char *const tofn[] = {"image", "proj", "tof", "chunks", "chunk"};
  int has_tof = op >= OP_FWD_SINO;
  PyObject *a[5];
  if (sp_fast_args(fname, args, nargs, kwnames, has_tof ? tofn : plain, has_tof ? 5 : 4, has_tof ? 3 : 2, a) < 0)
    return NULL;
  sp_obj *img = sp_open(a[0], K_IMAGE, "image");
  if (!img)
    return NULL;
  sp_obj *proj = sp_open(a[1], K_PROJ, "proj");
  if (!proj)
    return NULL;
  sp_obj *tof = NULL;
  if (has_tof && !(tof = sp_open(a[2], K_TOF, "tof")))
    return NULL;
  PyObject *chunks_o = a[has_tof ? 3 : 2], *chunk_o = a[has_tof ? 4 : 3];
  sproj_chunks *c;
  sp_obj *co;
  if (sp_chunks_arg(chunks_o, &c, &co) < 0)
    return NULL;
  int chunk = SPROJ_ALL_CHUNKS, *list = NULL, num = 0, small[16];
  if (chunk_o && chunk_o != Py_None) {
    if (PyLong_Check(chunk_o)) {
      if (sp_as_int(chunk_o, "chunk", &chunk) < 0)
        return NULL;
    } else {
      /* a list of chunks: one call, which the library merges into few tasks */
      PyObject *f = PySequence_Fast(chunk_o, "chunk: expected an int or a sequence of ints");
      if (!f)
        return NULL;
      Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
      if (n > INT_MAX) {
        Py_DECREF(f);
        PyErr_SetString(PyExc_OverflowError, "chunk: too many chunks");
        return NULL;
      }
      list = n <= 16 ? small : PyMem_Malloc(sizeof(int) * (size_t)n);
      if (!list) {
        Py_DECREF(f);
        return PyErr_NoMemory();
      }
      for (Py_ssize_t k = 0; k < n; k++)
        if (sp_as_int(PySequence_Fast_GET_ITEM(f, k), "chunk", &list[k]) < 0) {
          if (list != small)
            PyMem_Free(list);
          Py_DECREF(f);
          return NULL;
        }
      Py_DECREF(f);
      num = (int)n;
    }
  }
  int st;
  void *ih = img->h, *ph = proj->h, *th = tof ? tof->h : NULL;
  img->busy++;
  proj->busy++;
  if (tof)
    tof->busy++;
  if (co)
    co->busy++;
  sp_inflight++;
  /* submission may wait (queue limit, held-back merged calls): other Python threads keep running */
  Py_BEGIN_ALLOW_THREADS
  st = sp_submit(op, ih, ph, c, chunk, list, num, th);
  Py_END_ALLOW_THREADS
  sp_inflight--;
  img->busy--;
  proj->busy--;
  if (tof)
    tof->busy--;
  if (co)
    co->busy--;
  if (list && list != small)
    PyMem_Free(list);
  if (st) {
    /* an empty list is no call: the library says EMPTY, which is right */
    return sp_raise(st);
  }
  Py_RETURN_NONE;
}

#define SP_PROJ_FN(name, op)                                                                                  \
  static PyObject *sp_##name(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)         \
  {                                                                                                           \
    (void)m;                                                                                                  \
    return sp_project(op, #name, args, nargs, kwnames);                                                      \
  }
SP_PROJ_FN(fwd, OP_FWD)
SP_PROJ_FN(back, OP_BACK)
SP_PROJ_FN(fwd_tof_sino, OP_FWD_SINO)
SP_PROJ_FN(back_tof_sino, OP_BACK_SINO)
SP_PROJ_FN(fwd_tof_lm, OP_FWD_LM)
SP_PROJ_FN(back_tof_lm, OP_BACK_LM)

/* ======================================================================================================== */
/* Image                                                                                                     */
/* ======================================================================================================== */

static PyObject *Image_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
  (void)type;
  static char *names[] = {"array", "voxel_size", "origin", NULL};
  PyObject *array, *vs_o = NULL, *or_o = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:Image", names, &array, &vs_o, &or_o))
    return NULL;
  float vs[3] = {1, 1, 1}, origin[3] = {0, 0, 0};
  if (vs_o && sp_float3(vs_o, "voxel_size", vs) < 0)
    return NULL;
  if (or_o && sp_float3(or_o, "origin", origin) < 0)
    return NULL;
  sp_obj *o = sp_obj_new(K_IMAGE);
  if (!o)
    return NULL;
  sp_arr *a = &o->arr[0];
  /* back projections and syncs write into the image, so it must be writable */
  if (sp_arr_get(a, array, "array", SP_F32, 1, 3, NULL, 1) < 0)
    goto fail;
  for (int i = 0; i < 3; i++) {
    if (a->shape[i] > INT_MAX) {
      PyErr_SetString(PyExc_ValueError, "array: a dimension exceeds a C int");
      goto fail;
    }
    o->dims[i] = (int)a->shape[i];
  }
  sproj_image *img = NULL;
  int st;
  if (a->gpu_devid >= 0) {
    if (a->count > UINT32_MAX) {
      PyErr_SetString(PyExc_ValueError, "array: too many voxels for a StarPU vector");
      goto fail;
    }
    if (sp_arr_gpu_handle(a, (uint32_t)a->count, sizeof(float)) < 0) {
      sp_raise_msg(SPROJ_ERR_STARPU, "Image: StarPU could not register the GPU array");
      goto fail;
    }
    st = sproj_image_register_handle(&img, a->handle, o->dims, vs, origin);
  } else {
    st = sproj_image_register(&img, a->ptr, o->dims, vs, origin);
  }
  if (st) {
    sp_raise(st);
    goto fail;
  }
  sp_obj_opened(o, img);
  return (PyObject *)o;
fail:
  Py_DECREF(o);
  return NULL;
}

static PyObject *Image_sync(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
  static const char *const names[] = {"mode"};
  PyObject *a[1];
  int mode, st;
  if (sp_fast_args("sync", args, nargs, kwnames, names, 1, 0, a) < 0 || sp_mode(a[0], &mode) < 0)
    return NULL;
  sp_obj *o = sp_open(self, K_IMAGE, "self");
  if (!o)
    return NULL;
  void *h = o->h;
  o->busy++;
  sp_inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_image_sync(h, mode);
  Py_END_ALLOW_THREADS
  sp_inflight--;
  o->busy--;
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Image_gpu_call(PyObject *self, PyObject *args, int release)
{
  int gpu = SPROJ_ALL_GPUS, st;
  if (!PyArg_ParseTuple(args, release ? "|i:release" : "|i:upload", &gpu))
    return NULL;
  sp_obj *o = sp_open(self, K_IMAGE, "self");
  if (!o)
    return NULL;
  void *h = o->h;
  o->busy++;
  sp_inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = release ? sproj_image_release(h, gpu) : sproj_image_upload(h, gpu);
  Py_END_ALLOW_THREADS
  sp_inflight--;
  o->busy--;
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Image_upload(PyObject *self, PyObject *args)
{
  return Image_gpu_call(self, args, 0);
}

static PyObject *Image_release(PyObject *self, PyObject *args)
{
  return Image_gpu_call(self, args, 1);
}

static PyObject *Image_zero(PyObject *self, PyObject *unused)
{
  (void)unused;
  sp_obj *o = sp_open(self, K_IMAGE, "self");
  if (!o)
    return NULL;
  int st = sproj_image_zero(o->h);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Image_set_reproducible(PyObject *self, PyObject *arg)
{
  sp_obj *o = sp_open(self, K_IMAGE, "self");
  if (!o)
    return NULL;
  int on = PyObject_IsTrue(arg);
  if (on < 0)
    return NULL;
  int st = sproj_image_set_reproducible(o->h, on);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *sp_get_array(PyObject *self, void *idx)
{
  sp_obj *o = (sp_obj *)self;
  PyObject *a = o->arr[(intptr_t)idx].owner;
  if (!a)
    Py_RETURN_NONE;
  Py_INCREF(a);
  return a;
}

static PyObject *Image_get_geometry(PyObject *self, void *which)
{
  sp_obj *o = sp_open(self, K_IMAGE, "self");
  if (!o)
    return NULL;
  int dims[3];
  float vs[3], origin[3];
  int st = sproj_image_geometry(o->h, dims, vs, origin);
  if (st)
    return sp_raise(st);
  if ((intptr_t)which == 0)
    return Py_BuildValue("(iii)", dims[0], dims[1], dims[2]);
  return sp_tuple3f((intptr_t)which == 1 ? vs : origin);
}

static PyObject *sp_get_data_ptr(PyObject *self, void *idx)
{
  sp_obj *o = (sp_obj *)self;
  sp_arr *a = &o->arr[(intptr_t)idx];
  if (!o->h || !a->ptr)
    Py_RETURN_NONE;
  return PyLong_FromVoidPtr(a->ptr);
}

static PyObject *sp_get_gpu(PyObject *self, void *idx)
{
  sp_obj *o = (sp_obj *)self;
  int d = o->arr[(intptr_t)idx].gpu_devid;
  if (d < 0)
    Py_RETURN_NONE;
  return PyLong_FromLong(d);
}

static PyMethodDef Image_methods[] = {
    {"sync", (PyCFunction)(void (*)(void))Image_sync, METH_FASTCALL | METH_KEYWORDS,
     "sync($self, mode='read')\n--\n\nWaits for pending tasks on the image (back projections included) and makes the array hold "
     "its current value. 'read' (SYNC_READ): you will only read it, device copies stay valid; 'write' (SYNC_WRITE): "
     "you will modify it before the next submission, device copies are dropped. Releases the GIL while waiting."},
    {"upload", Image_upload, METH_VARARGS,
     "upload($self, gpu=-1, /)\n--\n\nCopies the image to one GPU or every GPU (a no-op for ALL_GPUS without GPUs)."},
    {"release", Image_release, METH_VARARGS, "release($self, gpu=-1, /)\n--\n\nDrops device copies (after pending tasks)."},
    {"zero", Image_zero, METH_NOARGS,
     "zero($self)\n--\n\nSets the image to 0 where the next projections run, by a task (a GPU writes the zeros, nothing is "
     "copied): a back projection target starts again without touching the array, which is stale until sync()."},
    {"set_reproducible", Image_set_reproducible, METH_O,
     "set_reproducible($self, on, /)\n--\n\nBack projections into this image summed in 64-bit fixed point (same bits every run)."},
    {"close", sp_close_meth, METH_NOARGS,
     "close($self)\n--\n\nWaits, writes the value back into the array and unregisters (idempotent). Raises starproj.Error "
     "while a Recon uses the image."},
    {"__enter__", sp_enter, METH_NOARGS, "Returns the image itself."},
    {"__exit__", sp_exit, METH_VARARGS, "Closes the image."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Image_getset[] = {
    {"array", sp_get_array, NULL, "The registered array (its memory is the image: no copy was made).", (void *)0},
    {"shape", Image_get_geometry, NULL, "(n0, n1, n2)", (void *)0},
    {"voxel_size", Image_get_geometry, NULL, "Voxel size along the three axes.", (void *)1},
    {"origin", Image_get_geometry, NULL, "World coordinates of the centre of voxel (0, 0, 0).", (void *)2},
    {"data_ptr", sp_get_data_ptr, NULL, "Address of the registered memory (None once closed).", (void *)0},
    {"gpu", sp_get_gpu, NULL, "CUDA device the array lives on (DLPack), or None for host memory.", (void *)0},
    {"closed", sp_get_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ======================================================================================================== */
/* Lors                                                                                                      */
/* ======================================================================================================== */

static PyObject *Lors_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
  (void)type;
  static char *names[] = {"xstart", "xend", "tof_bin", NULL};
  PyObject *xs_o, *xe_o, *bins_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:Lors", names, &xs_o, &xe_o, &bins_o))
    return NULL;
  int events = bins_o != Py_None;
  sp_obj *o = sp_obj_new(K_LORS);
  if (!o)
    return NULL;
  Py_ssize_t want[2] = {-1, 3};
  /* endpoints are only read; listmode events have no handle variant in the library, so they stay on the host */
  if (sp_arr_get(&o->arr[0], xs_o, "xstart", SP_F32, 0, 2, want, !events) < 0)
    goto fail;
  want[0] = o->arr[0].shape[0];
  if (sp_arr_get(&o->arr[1], xe_o, "xend", SP_F32, 0, 2, want, !events) < 0)
    goto fail;
  if (events && sp_arr_get(&o->arr[2], bins_o, "tof_bin", SP_I16, 0, 1, want, 0) < 0)
    goto fail;
  int g0 = o->arr[0].gpu_devid, g1 = o->arr[1].gpu_devid;
  if (g0 != g1) {
    PyErr_SetString(PyExc_ValueError, "xstart, xend: both must live on the host or both on the same GPU");
    goto fail;
  }
  int64_t n = o->arr[0].shape[0];
  sproj_lors *l = NULL;
  int st;
  if (g0 >= 0) {
    if (n > UINT32_MAX) {
      PyErr_SetString(PyExc_ValueError, "xstart: too many LORs for a StarPU vector");
      goto fail;
    }
    if (sp_arr_gpu_handle(&o->arr[0], (uint32_t)n, 3 * sizeof(float)) < 0 ||
        sp_arr_gpu_handle(&o->arr[1], (uint32_t)n, 3 * sizeof(float)) < 0) {
      sp_raise_msg(SPROJ_ERR_STARPU, "Lors: StarPU could not register the GPU arrays");
      goto fail;
    }
    /* the library acquires the handles to check coordinates: that may wait on the GPU */
    Py_BEGIN_ALLOW_THREADS
    st = sproj_lors_register_handles(&l, o->arr[0].handle, o->arr[1].handle);
    Py_END_ALLOW_THREADS
  } else if (events) {
    st = sproj_lors_register_events(&l, o->arr[0].ptr, o->arr[1].ptr, o->arr[2].ptr, n);
  } else {
    st = sproj_lors_register(&l, o->arr[0].ptr, o->arr[1].ptr, n);
  }
  if (st) {
    sp_raise(st);
    goto fail;
  }
  o->num_lors = n;
  o->has_bins = events;
  sp_obj_opened(o, l);
  return (PyObject *)o;
fail:
  Py_DECREF(o);
  return NULL;
}

/* upload / release of LORs or projection values: (chunks=None, chunk=ALL_CHUNKS, gpu=ALL_GPUS) */
static PyObject *sp_move(PyObject *self, PyObject *args, PyObject *kw, int kind, int release)
{
  static char *names[] = {"chunks", "chunk", "gpu", NULL};
  PyObject *chunks_o = Py_None;
  int chunk = SPROJ_ALL_CHUNKS, gpu = SPROJ_ALL_GPUS, st;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Oii", names, &chunks_o, &chunk, &gpu))
    return NULL;
  sp_obj *o = sp_open(self, kind, "self");
  if (!o)
    return NULL;
  sproj_chunks *c;
  sp_obj *co;
  if (sp_chunks_arg(chunks_o, &c, &co) < 0)
    return NULL;
  void *h = o->h;
  o->busy++;
  if (co)
    co->busy++;
  sp_inflight++;
  Py_BEGIN_ALLOW_THREADS
  if (kind == K_LORS)
    st = release ? sproj_lors_release(h, c, chunk, gpu) : sproj_lors_upload(h, c, chunk, gpu);
  else
    st = release ? sproj_proj_release(h, c, chunk, gpu) : sproj_proj_upload(h, c, chunk, gpu);
  Py_END_ALLOW_THREADS
  sp_inflight--;
  o->busy--;
  if (co)
    co->busy--;
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Lors_upload(PyObject *self, PyObject *args, PyObject *kw)
{
  return sp_move(self, args, kw, K_LORS, 0);
}

static PyObject *Lors_release(PyObject *self, PyObject *args, PyObject *kw)
{
  return sp_move(self, args, kw, K_LORS, 1);
}

static Py_ssize_t sp_len_lors(PyObject *self)
{
  sp_obj *o = sp_open(self, self->ob_type == &ChunksType ? K_CHUNKS : K_LORS, "self");
  if (!o)
    return -1;
  return o->kind == K_CHUNKS ? o->num_chunks : (Py_ssize_t)o->num_lors;
}

static PyObject *Lors_get_num(PyObject *self, void *u)
{
  (void)u;
  sp_obj *o = sp_open(self, K_LORS, "self");
  return o ? PyLong_FromLongLong(o->num_lors) : NULL;
}

static PyObject *Lors_get_has_bins(PyObject *self, void *u)
{
  (void)u;
  return PyBool_FromLong(((sp_obj *)self)->has_bins);
}

static PyMethodDef Lors_methods[] = {
    {"upload", (PyCFunction)(void (*)(void))Lors_upload, METH_VARARGS | METH_KEYWORDS,
     "upload($self, chunks=None, chunk=-1, gpu=-1)\n--\n\nCopies the LORs of a chunk (or all) to GPUs."},
    {"release", (PyCFunction)(void (*)(void))Lors_release, METH_VARARGS | METH_KEYWORDS,
     "release($self, chunks=None, chunk=-1, gpu=-1)\n--\n\nDrops those device copies."},
    {"close", sp_close_meth, METH_NOARGS,
     "close($self)\n--\n\nUnregisters the LORs (idempotent). Raises starproj.Error while Chunks, Proj, Tof or Model objects "
     "of this set are open."},
    {"__enter__", sp_enter, METH_NOARGS, "Returns the LOR set itself."},
    {"__exit__", sp_exit, METH_VARARGS, "Closes the LOR set."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Lors_getset[] = {
    {"xstart", sp_get_array, NULL, "The registered start points, shape (n, 3).", (void *)0},
    {"xend", sp_get_array, NULL, "The registered end points, shape (n, 3).", (void *)1},
    {"tof_bin", sp_get_array, NULL, "The events' TOF bins (int16), or None.", (void *)2},
    {"num_lors", Lors_get_num, NULL, "Number of LORs (events).", NULL},
    {"has_tof_bins", Lors_get_has_bins, NULL, "True for listmode events registered with TOF bins.", NULL},
    {"data_ptr", sp_get_data_ptr, NULL, "Address of xstart's registered memory.", (void *)0},
    {"gpu", sp_get_gpu, NULL, "CUDA device of the endpoints (DLPack), or None for host memory.", (void *)0},
    {"closed", sp_get_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ======================================================================================================== */
/* Chunks                                                                                                    */
/* ======================================================================================================== */

static PyObject *Chunks_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
  (void)type;
  (void)args;
  (void)kw;
  PyErr_SetString(PyExc_TypeError, "create chunkings with Chunks.ranges(), .blocks(), .lists(), .strided() or a "
                                   "Scanner's chunks_*() methods");
  return NULL;
}

/* Wraps a chunking the library just made on lors_o (or destroys it if the wrapper cannot be made). */
static PyObject *sp_chunks_wrap(sproj_chunks *c, PyObject *lors_o)
{
  sp_obj *o = sp_obj_new(K_CHUNKS);
  if (!o) {
    sproj_chunks_destroy(c);
    return NULL;
  }
  int n = 0;
  sproj_chunks_count(c, &n);
  o->num_chunks = n;
  o->num_lors = ((sp_obj *)lors_o)->num_lors;
  sp_obj_add_dep(o, lors_o);
  sp_obj_opened(o, c);
  return (PyObject *)o;
}

static PyObject *Chunks_ranges(PyObject *cls, PyObject *args)
{
  (void)cls;
  PyObject *lors_o, *first_o, *count_o;
  if (!PyArg_ParseTuple(args, "OOO:ranges", &lors_o, &first_o, &count_o))
    return NULL;
  sp_obj *l = sp_open(lors_o, K_LORS, "lors");
  if (!l)
    return NULL;
  Py_ssize_t nf, nc;
  int64_t *first = sp_int64_list(first_o, "first", &nf);
  if (!first)
    return NULL;
  int64_t *count = sp_int64_list(count_o, "count", &nc);
  if (!count) {
    PyMem_Free(first);
    return NULL;
  }
  if (nf != nc || nf > INT_MAX) {
    PyMem_Free(first);
    PyMem_Free(count);
    PyErr_SetString(PyExc_ValueError, "first, count: expected sequences of the same length");
    return NULL;
  }
  sproj_chunks *c = NULL;
  int st;
  void *lh = l->h;
  SP_RELEASED(l, st, sproj_chunks_create_ranges(&c, lh, (int)nf, first, count));
  PyMem_Free(first);
  PyMem_Free(count);
  if (st)
    return sp_raise(st);
  return sp_chunks_wrap(c, lors_o);
}

static PyObject *Chunks_blocks(PyObject *cls, PyObject *args)
{
  (void)cls;
  PyObject *lors_o;
  int n;
  if (!PyArg_ParseTuple(args, "Oi:blocks", &lors_o, &n))
    return NULL;
  sp_obj *l = sp_open(lors_o, K_LORS, "lors");
  if (!l)
    return NULL;
  sproj_chunks *c = NULL;
  int st;
  void *lh = l->h;
  SP_RELEASED(l, st, sproj_chunks_create_blocks(&c, lh, n));
  if (st)
    return sp_raise(st);
  return sp_chunks_wrap(c, lors_o);
}

static PyObject *Chunks_lists(PyObject *cls, PyObject *args)
{
  (void)cls;
  PyObject *lors_o, *nr_o, *first_o, *count_o;
  if (!PyArg_ParseTuple(args, "OOOO:lists", &lors_o, &nr_o, &first_o, &count_o))
    return NULL;
  sp_obj *l = sp_open(lors_o, K_LORS, "lors");
  if (!l)
    return NULL;
  Py_ssize_t nn, nf, nc;
  int *nr = sp_int_list(nr_o, "num_ranges", &nn);
  int64_t *first = nr ? sp_int64_list(first_o, "first", &nf) : NULL;
  int64_t *count = first ? sp_int64_list(count_o, "count", &nc) : NULL;
  PyObject *res = NULL;
  if (count) {
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < nn; i++)
      total += nr[i] > 0 ? nr[i] : 0;
    /* the library reads sum(num_ranges) entries of first and count: they must be there */
    if (nf != nc || total > nf || nn > INT_MAX) {
      PyErr_SetString(PyExc_ValueError, "first, count: need sum(num_ranges) entries each");
    } else {
      sproj_chunks *c = NULL;
      int st;
      void *lh = l->h;
      SP_RELEASED(l, st, sproj_chunks_create_lists(&c, lh, (int)nn, nr, first, count));
      res = st ? sp_raise(st) : sp_chunks_wrap(c, lors_o);
    }
  }
  PyMem_Free(nr);
  PyMem_Free(first);
  PyMem_Free(count);
  return res;
}

static PyObject *Chunks_strided(PyObject *cls, PyObject *args)
{
  (void)cls;
  PyObject *lors_o, *f_o, *c_o, *s_o, *n_o;
  if (!PyArg_ParseTuple(args, "OOOOO:strided", &lors_o, &f_o, &c_o, &s_o, &n_o))
    return NULL;
  sp_obj *l = sp_open(lors_o, K_LORS, "lors");
  if (!l)
    return NULL;
  Py_ssize_t n1 = 0, n2 = 0, n3 = 0, n4 = 0;
  int64_t *first = sp_int64_list(f_o, "first", &n1);
  int64_t *count = first ? sp_int64_list(c_o, "count", &n2) : NULL;
  int64_t *stride = count ? sp_int64_list(s_o, "stride", &n3) : NULL;
  int *nr = stride ? sp_int_list(n_o, "num_ranges", &n4) : NULL;
  PyObject *res = NULL;
  if (nr) {
    if (n1 != n2 || n1 != n3 || n1 != n4 || n1 > INT_MAX) {
      PyErr_SetString(PyExc_ValueError, "first, count, stride, num_ranges: expected sequences of the same length");
    } else {
      sproj_chunks *c = NULL;
      int st;
      void *lh = l->h;
      SP_RELEASED(l, st, sproj_chunks_create_strided(&c, lh, (int)n1, first, count, stride, nr));
      res = st ? sp_raise(st) : sp_chunks_wrap(c, lors_o);
    }
  }
  PyMem_Free(first);
  PyMem_Free(count);
  PyMem_Free(stride);
  PyMem_Free(nr);
  return res;
}

static PyObject *Chunks_size(PyObject *self, PyObject *arg)
{
  sp_obj *o = sp_open(self, K_CHUNKS, "self");
  int c;
  if (!o || sp_as_int(arg, "chunk", &c) < 0)
    return NULL;
  int64_t n;
  int st = sproj_chunks_size(o->h, c, &n);
  if (st)
    return sp_raise(st);
  return PyLong_FromLongLong(n);
}

static PyObject *Chunks_ranges_of(PyObject *self, PyObject *arg)
{
  sp_obj *o = sp_open(self, K_CHUNKS, "self");
  int c, nr;
  if (!o || sp_as_int(arg, "chunk", &c) < 0)
    return NULL;
  int st = sproj_chunks_num_ranges(o->h, c, &nr);
  if (st)
    return sp_raise(st);
  int64_t *buf = PyMem_Malloc(sizeof(int64_t) * 2 * (size_t)(nr ? nr : 1));
  if (!buf)
    return PyErr_NoMemory();
  st = sproj_chunks_ranges(o->h, c, buf, buf + nr);
  if (st) {
    PyMem_Free(buf);
    return sp_raise(st);
  }
  PyObject *list = PyList_New(nr);
  for (int i = 0; list && i < nr; i++) {
    PyObject *t = Py_BuildValue("(LL)", (long long)buf[i], (long long)buf[nr + i]);
    if (!t) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, t);
  }
  PyMem_Free(buf);
  return list;
}

static PyObject *sp_get_dep(PyObject *self, void *idx)
{
  PyObject *d = ((sp_obj *)self)->deps[(intptr_t)idx];
  if (!d)
    Py_RETURN_NONE;
  Py_INCREF(d);
  return d;
}

static PyMethodDef Chunks_methods[] = {
    {"ranges", Chunks_ranges, METH_VARARGS | METH_CLASS,
     "ranges($type, lors, first, count, /)\n--\n\nChunk c covers LORs [first[c], first[c] + count[c])."},
    {"blocks", Chunks_blocks, METH_VARARGS | METH_CLASS,
     "blocks($type, lors, num_chunks, /)\n--\n\nnum_chunks chunks of (nearly) equal size covering the set."},
    {"lists", Chunks_lists, METH_VARARGS | METH_CLASS,
     "lists($type, lors, num_ranges, first, count, /)\n--\n\nChunk c is num_ranges[c] ranges, taken in turn from first/count."},
    {"strided", Chunks_strided, METH_VARARGS | METH_CLASS,
     "strided($type, lors, first, count, stride, num_ranges, /)\n--\n\nChunk c is num_ranges[c] ranges of count[c] LORs at "
     "first[c] + k * stride[c]."},
    {"size", Chunks_size, METH_O, "size($self, chunk, /)\n--\n\nNumber of LORs in the chunk."},
    {"ranges_of", Chunks_ranges_of, METH_O, "ranges_of($self, chunk, /)\n--\n\nThe chunk's ranges as a list of (first, count)."},
    {"close", sp_close_meth, METH_NOARGS,
     "close($self)\n--\n\nDestroys the chunking (after pending tasks; idempotent). Raises starproj.Error while a Recon uses it."},
    {"__enter__", sp_enter, METH_NOARGS, "Returns the chunking itself."},
    {"__exit__", sp_exit, METH_VARARGS, "Closes the chunking."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Chunks_getset[] = {
    {"lors", sp_get_dep, NULL, "The LOR set this chunking divides.", (void *)0},
    {"closed", sp_get_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ======================================================================================================== */
/* Proj                                                                                                      */
/* ======================================================================================================== */

static PyObject *Proj_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
  (void)type;
  static char *names[] = {"lors", "values", NULL};
  PyObject *lors_o, *values;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:Proj", names, &lors_o, &values))
    return NULL;
  sp_obj *l = sp_open(lors_o, K_LORS, "lors");
  if (!l)
    return NULL;
  sp_obj *o = sp_obj_new(K_PROJ);
  if (!o)
    return NULL;
  sp_arr *a = &o->arr[0];
  /* 1-D: one value per LOR; 2-D (num_lors, num_tof_bins): a TOF sinogram [lor][bin] */
  if (sp_arr_get(a, values, "values", SP_F32, 1, -1, NULL, 1) < 0)
    goto fail;
  if (a->ndim != 1 && a->ndim != 2) {
    PyErr_Format(PyExc_ValueError, "values: expected shape (num_lors,) or (num_lors, num_tof_bins), got %d dimensions",
                 a->ndim);
    goto fail;
  }
  if (a->shape[0] != l->num_lors) {
    PyErr_Format(PyExc_ValueError, "values: dimension 0 has length %zd, but the LOR set has %lld LORs", a->shape[0],
                 (long long)l->num_lors);
    goto fail;
  }
  sproj_proj *p = NULL;
  int st;
  if (a->gpu_devid >= 0) {
    if (a->ndim != 1) {
      PyErr_SetString(PyExc_ValueError, "values: TOF sinograms on a GPU are not supported (the library takes GPU "
                                        "handles of one value per LOR)");
      goto fail;
    }
    if (sp_arr_gpu_handle(a, (uint32_t)a->count, sizeof(float)) < 0) {
      sp_raise_msg(SPROJ_ERR_STARPU, "Proj: StarPU could not register the GPU array");
      goto fail;
    }
    st = sproj_proj_register_handle(&p, a->handle, l->h);
  } else if (a->ndim == 2) {
    if (a->shape[1] > INT_MAX) {
      PyErr_SetString(PyExc_ValueError, "values: too many TOF bins");
      goto fail;
    }
    st = sproj_proj_register_tof(&p, a->ptr, l->h, (int)a->shape[1]);
  } else {
    st = sproj_proj_register(&p, a->ptr, l->h);
  }
  if (st) {
    sp_raise(st);
    goto fail;
  }
  o->num_lors = l->num_lors;
  o->values_per_lor = a->ndim == 2 ? (int)a->shape[1] : 1;
  sp_obj_add_dep(o, lors_o);
  sp_obj_opened(o, p);
  return (PyObject *)o;
fail:
  Py_DECREF(o);
  return NULL;
}

static PyObject *Proj_sync(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
  static const char *const names[] = {"chunks", "chunk", "mode"};
  PyObject *a[3];
  int mode, chunk = SPROJ_ALL_CHUNKS, st;
  if (sp_fast_args("sync", args, nargs, kwnames, names, 3, 0, a) < 0 || sp_mode(a[2], &mode) < 0)
    return NULL;
  if (a[1] && a[1] != Py_None && sp_as_int(a[1], "chunk", &chunk) < 0)
    return NULL;
  sp_obj *o = sp_open(self, K_PROJ, "self");
  if (!o)
    return NULL;
  sproj_chunks *c;
  sp_obj *co;
  if (sp_chunks_arg(a[0], &c, &co) < 0)
    return NULL;
  void *h = o->h;
  o->busy++;
  if (co)
    co->busy++;
  sp_inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_proj_sync(h, c, chunk, mode);
  Py_END_ALLOW_THREADS
  sp_inflight--;
  o->busy--;
  if (co)
    co->busy--;
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Proj_upload(PyObject *self, PyObject *args, PyObject *kw)
{
  return sp_move(self, args, kw, K_PROJ, 0);
}

static PyObject *Proj_release(PyObject *self, PyObject *args, PyObject *kw)
{
  return sp_move(self, args, kw, K_PROJ, 1);
}

static PyObject *Proj_get_int(PyObject *self, void *which)
{
  sp_obj *o = (sp_obj *)self;
  return PyLong_FromLongLong((intptr_t)which == 0 ? o->num_lors : o->values_per_lor);
}

static PyMethodDef Proj_methods[] = {
    {"sync", (PyCFunction)(void (*)(void))Proj_sync, METH_FASTCALL | METH_KEYWORDS,
     "sync($self, chunks=None, chunk=-1, mode='read')\n--\n\nWaits for pending tasks writing the chunk (or all) and makes "
     "the array hold its current values. Releases the GIL while waiting."},
    {"upload", (PyCFunction)(void (*)(void))Proj_upload, METH_VARARGS | METH_KEYWORDS,
     "upload($self, chunks=None, chunk=-1, gpu=-1)\n--\n\nCopies values of a chunk (or all) to GPUs."},
    {"release", (PyCFunction)(void (*)(void))Proj_release, METH_VARARGS | METH_KEYWORDS,
     "release($self, chunks=None, chunk=-1, gpu=-1)\n--\n\nDrops those device copies."},
    {"close", sp_close_meth, METH_NOARGS,
     "close($self)\n--\n\nWaits, writes the values back into the array and unregisters (idempotent)."},
    {"__enter__", sp_enter, METH_NOARGS, "Returns the projection vector itself."},
    {"__exit__", sp_exit, METH_VARARGS, "Closes the projection vector."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Proj_getset[] = {
    {"array", sp_get_array, NULL, "The registered values (no copy was made).", (void *)0},
    {"lors", sp_get_dep, NULL, "The LOR set the values belong to.", (void *)0},
    {"num_lors", Proj_get_int, NULL, "Number of LORs.", (void *)0},
    {"values_per_lor", Proj_get_int, NULL, "1, or the TOF bins of a TOF sinogram.", (void *)1},
    {"data_ptr", sp_get_data_ptr, NULL, "Address of the registered memory (None once closed).", (void *)0},
    {"gpu", sp_get_gpu, NULL, "CUDA device of the values (DLPack), or None for host memory.", (void *)0},
    {"closed", sp_get_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ======================================================================================================== */
/* Tof                                                                                                       */
/* ======================================================================================================== */

/* A number (Python or NumPy scalar, 0-d array) rather than an array of per-LOR values: NumPy scalars export a
 * 0-dimensional buffer, so the buffer protocol alone cannot tell them apart. */
static int sp_is_scalar(PyObject *o)
{
  if (PyFloat_Check(o) || PyLong_Check(o))
    return 1;
  if (!PyNumber_Check(o))
    return 0;
  if (!PyObject_CheckBuffer(o))
    return 1;
  Py_buffer v;
  if (PyObject_GetBuffer(o, &v, PyBUF_RECORDS_RO) < 0) {
    PyErr_Clear();
    return 0;
  }
  int scalar = v.ndim == 0;
  PyBuffer_Release(&v);
  return scalar;
}

static PyObject *Tof_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
  (void)type;
  static char *names[] = {"num_bins", "bin_width", "sigma", "num_sigmas", "center_offset", "lors", NULL};
  int num_bins;
  float bin_width, num_sigmas = 3.0f;
  PyObject *sigma_o, *off_o = NULL, *lors_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "ifO|fOO:Tof", names, &num_bins, &bin_width, &sigma_o, &num_sigmas,
                                   &off_o, &lors_o))
    return NULL;
  sp_obj *l = NULL;
  if (lors_o != Py_None && !(l = sp_open(lors_o, K_LORS, "lors")))
    return NULL;
  struct sproj_tof_params par = {bin_width, num_bins, num_sigmas, bin_width, 0.0f};
  sp_obj *o = sp_obj_new(K_TOF);
  if (!o)
    return NULL;
  const float *sigma = NULL, *off = NULL;
  Py_ssize_t want[1] = {l ? (Py_ssize_t)l->num_lors : -1};
  /* a number applies to every LOR; an array holds one value per LOR of lors (read, and kept alive here) */
  if (sp_is_scalar(sigma_o)) {
    par.sigma = (float)PyFloat_AsDouble(sigma_o);
    if (PyErr_Occurred())
      goto fail;
  } else {
    if (!l) {
      PyErr_SetString(PyExc_ValueError, "sigma: per-LOR values need lors=");
      goto fail;
    }
    if (sp_arr_get(&o->arr[0], sigma_o, "sigma", SP_F32, 0, 1, want, 0) < 0)
      goto fail;
    sigma = o->arr[0].ptr;
  }
  if (off_o && off_o != Py_None) {
    if (sp_is_scalar(off_o)) {
      par.center_offset = (float)PyFloat_AsDouble(off_o);
      if (PyErr_Occurred())
        goto fail;
    } else {
      if (!l) {
        PyErr_SetString(PyExc_ValueError, "center_offset: per-LOR values need lors=");
        goto fail;
      }
      if (sp_arr_get(&o->arr[1], off_o, "center_offset", SP_F32, 0, 1, want, 0) < 0)
        goto fail;
      off = o->arr[1].ptr;
    }
  }
  sproj_tof *t = NULL;
  int st = sproj_tof_register(&t, &par, (sigma || off) ? l->h : NULL, sigma, off);
  if (st) {
    sp_raise(st);
    goto fail;
  }
  o->num_bins = num_bins;
  if (sigma || off)
    sp_obj_add_dep(o, lors_o);
  sp_obj_opened(o, t);
  return (PyObject *)o;
fail:
  Py_DECREF(o);
  return NULL;
}

static PyObject *Tof_get_bins(PyObject *self, void *u)
{
  (void)u;
  return PyLong_FromLong(((sp_obj *)self)->num_bins);
}

static PyMethodDef Tof_methods[] = {
    {"close", sp_close_meth, METH_NOARGS, "close($self)\n--\n\nUnregisters the TOF parameters (idempotent)."},
    {"__enter__", sp_enter, METH_NOARGS, "Returns the TOF parameters themselves."},
    {"__exit__", sp_exit, METH_VARARGS, "Closes the TOF parameters."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Tof_getset[] = {
    {"num_bins", Tof_get_bins, NULL, "Number of TOF bins.", NULL},
    {"closed", sp_get_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ======================================================================================================== */
/* Model                                                                                                     */
/* ======================================================================================================== */

static PyObject *Model_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
  (void)type;
  static char *names[] = {"lors", "mult", "add", "tof", "fwhm", NULL};
  PyObject *lors_o, *mult_o = Py_None, *add_o = Py_None, *tof_o = Py_None, *fwhm_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOOO:Model", names, &lors_o, &mult_o, &add_o, &tof_o, &fwhm_o))
    return NULL;
  sp_obj *l = sp_open(lors_o, K_LORS, "lors");
  if (!l)
    return NULL;
  sp_obj *t = NULL;
  if (tof_o != Py_None && !(t = sp_open(tof_o, K_TOF, "tof")))
    return NULL;
  float fwhm[3];
  if (fwhm_o != Py_None && sp_float3(fwhm_o, "fwhm", fwhm) < 0)
    return NULL;
  sp_obj *o = sp_obj_new(K_MODEL);
  if (!o)
    return NULL;
  Py_ssize_t want[1] = {(Py_ssize_t)l->num_lors};
  if (mult_o != Py_None && sp_arr_get(&o->arr[0], mult_o, "mult", SP_F32, 0, 1, want, 0) < 0)
    goto fail;
  if (add_o != Py_None) {
    /* a TOF sinogram's background has a value per LOR and bin; any C-contiguous shape of that many floats */
    Py_ssize_t per = (t && !l->has_bins) ? t->num_bins : 1;
    if (sp_arr_get(&o->arr[1], add_o, "add", SP_F32, 0, -1, NULL, 0) < 0)
      goto fail;
    if (o->arr[1].count != want[0] * per || o->arr[1].shape[0] != want[0]) {
      PyErr_Format(PyExc_ValueError, "add: expected %zd values (%zd per LOR) with the LORs along dimension 0",
                   want[0] * per, per);
      goto fail;
    }
  }
  sproj_model *mdl = NULL;
  int st;
  void *lh = l->h, *th = t ? t->h : NULL;
  const float *mp = o->arr[0].ptr, *ap = o->arr[1].ptr, *fp = fwhm_o != Py_None ? fwhm : NULL;
  SP_RELEASED(l, st, sproj_model_create(&mdl, lh, mp, ap, th, fp));
  if (st) {
    sp_raise(st);
    goto fail;
  }
  o->num_lors = l->num_lors;
  sp_obj_add_dep(o, lors_o);
  sp_obj_add_dep(o, tof_o);
  sp_obj_opened(o, mdl);
  return (PyObject *)o;
fail:
  Py_DECREF(o);
  return NULL;
}

static PyMethodDef Model_methods[] = {
    {"close", sp_close_meth, METH_NOARGS,
     "close($self)\n--\n\nDestroys the model (idempotent). Raises starproj.Error while a Recon uses it."},
    {"__enter__", sp_enter, METH_NOARGS, "Returns the model itself."},
    {"__exit__", sp_exit, METH_VARARGS, "Closes the model."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Model_getset[] = {
    {"lors", sp_get_dep, NULL, "The LOR set of the model.", (void *)0},
    {"mult", sp_get_array, NULL, "Multiplicative factors, or None.", (void *)0},
    {"add", sp_get_array, NULL, "Additive background, or None.", (void *)1},
    {"closed", sp_get_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ======================================================================================================== */
/* Recon                                                                                                     */
/* ======================================================================================================== */

/* Subsets given as a list of lists of chunk indices -> the library's flat list and sizes. */
static int sp_subsets(PyObject *o, const char *name, int **flat, int **sizes, int *num)
{
  PyObject *f = PySequence_Fast(o, name);
  if (!f)
    return -1;
  Py_ssize_t ns = PySequence_Fast_GET_SIZE(f), total = 0;
  if (ns == 0 || ns > INT_MAX) {
    Py_DECREF(f);
    PyErr_Format(PyExc_ValueError, "%s: expected a non-empty list of lists of chunk indices", name);
    return -1;
  }
  *sizes = PyMem_Malloc(sizeof(int) * (size_t)ns);
  PyObject **items = PyMem_Malloc(sizeof(PyObject *) * (size_t)ns);
  if (!*sizes || !items) {
    PyMem_Free(*sizes);
    PyMem_Free(items);
    Py_DECREF(f);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t s = 0; s < ns; s++) {
    items[s] = PySequence_Fast(PySequence_Fast_GET_ITEM(f, s), name);
    if (!items[s]) {
      for (Py_ssize_t k = 0; k < s; k++)
        Py_DECREF(items[k]);
      PyMem_Free(*sizes);
      PyMem_Free(items);
      Py_DECREF(f);
      return -1;
    }
    (*sizes)[s] = (int)PySequence_Fast_GET_SIZE(items[s]);
    total += (*sizes)[s];
  }
  *flat = PyMem_Malloc(sizeof(int) * (size_t)(total ? total : 1));
  int ok = *flat != NULL;
  Py_ssize_t k = 0;
  for (Py_ssize_t s = 0; s < ns; s++) {
    for (Py_ssize_t j = 0; ok && j < (*sizes)[s]; j++)
      ok = sp_as_int(PySequence_Fast_GET_ITEM(items[s], j), name, &(*flat)[k++]) == 0;
    Py_DECREF(items[s]);
  }
  PyMem_Free(items);
  Py_DECREF(f);
  if (!ok) {
    if (!PyErr_Occurred())
      PyErr_NoMemory();
    PyMem_Free(*flat);
    PyMem_Free(*sizes);
    *flat = *sizes = NULL;
    return -1;
  }
  *num = (int)ns;
  return 0;
}

static PyObject *Recon_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
  (void)type;
  static char *names[] = {"image",      "model",       "chunks",        "data",      "num_subsets",
                          "subsets",    "sens_model",  "sens_chunks",   "sens_subsets", "objective", NULL};
  PyObject *img_o, *model_o, *chunks_o, *data_o = Py_None, *subsets_o = Py_None, *smodel_o = Py_None,
                                         *schunks_o = Py_None, *ssubsets_o = Py_None;
  int num_subsets = 1, objective = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|OiOOOOp:Recon", names, &img_o, &model_o, &chunks_o, &data_o,
                                   &num_subsets, &subsets_o, &smodel_o, &schunks_o, &ssubsets_o, &objective))
    return NULL;
  sp_obj *img = sp_open(img_o, K_IMAGE, "image");
  sp_obj *mdl = img ? sp_open(model_o, K_MODEL, "model") : NULL;
  sp_obj *ch = mdl ? sp_open(chunks_o, K_CHUNKS, "chunks") : NULL;
  if (!ch)
    return NULL;
  sp_obj *data = NULL, *smodel = NULL, *schunks = NULL;
  if (data_o != Py_None && !(data = sp_open(data_o, K_PROJ, "data")))
    return NULL;
  if (smodel_o != Py_None && !(smodel = sp_open(smodel_o, K_MODEL, "sens_model")))
    return NULL;
  if (schunks_o != Py_None && !(schunks = sp_open(schunks_o, K_CHUNKS, "sens_chunks")))
    return NULL;
  sp_obj *o = sp_obj_new(K_RECON);
  if (!o)
    return NULL;
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = mdl->h;
  cfg.data = data ? data->h : NULL;
  cfg.chunks = ch->h;
  cfg.num_subsets = num_subsets;
  cfg.sens_model = smodel ? smodel->h : NULL;
  cfg.sens_chunks = schunks ? schunks->h : NULL;
  cfg.objective = objective;
  if (subsets_o != Py_None) {
    int n;
    if (sp_subsets(subsets_o, "subsets", &o->ints[0], &o->ints[1], &n) < 0)
      goto fail;
    cfg.subset_chunks = o->ints[0];
    cfg.subset_sizes = o->ints[1];
    cfg.num_subsets = n;
  }
  if (ssubsets_o != Py_None) {
    int n;
    if (sp_subsets(ssubsets_o, "sens_subsets", &o->ints[2], &o->ints[3], &n) < 0)
      goto fail;
    if (n != cfg.num_subsets) {
      PyErr_SetString(PyExc_ValueError, "sens_subsets: need as many subsets as the data");
      goto fail;
    }
    cfg.sens_subset_chunks = o->ints[2];
    cfg.sens_subset_sizes = o->ints[3];
  }
  sproj_recon *r = NULL;
  int st;
  void *ih = img->h;
  img->busy++;
  sp_inflight++;
  /* create computes the sensitivities and waits for them */
  Py_BEGIN_ALLOW_THREADS
  st = sproj_recon_create(&r, ih, &cfg);
  Py_END_ALLOW_THREADS
  sp_inflight--;
  img->busy--;
  if (st) {
    sp_raise(st);
    goto fail;
  }
  sp_obj_add_dep(o, img_o);
  sp_obj_add_dep(o, model_o);
  sp_obj_add_dep(o, chunks_o);
  sp_obj_add_dep(o, data_o);
  sp_obj_add_dep(o, smodel_o);
  sp_obj_add_dep(o, schunks_o);
  o->num_chunks = cfg.num_subsets;
  sp_obj_opened(o, r);
  return (PyObject *)o;
fail:
  Py_DECREF(o);
  return NULL;
}

struct sp_cb {
  PyObject *fn;
  int failed;
};

/* Runs on the thread that called iterate (whose GIL was released), after each iteration. */
static int sp_recon_cb(const struct sproj_recon_progress *p, void *user)
{
  struct sp_cb *cb = user;
  PyGILState_STATE g = PyGILState_Ensure();
  int stop = 1;
  PyObject *d = Py_BuildValue("{s:i,s:i,s:d,s:O}", "iteration", p->iteration, "num_subsets", p->num_subsets, "elapsed",
                              p->elapsed, "objective", Py_None);
  if (d && p->has_objective) {
    PyObject *v = PyFloat_FromDouble(p->objective);
    if (!v || PyDict_SetItemString(d, "objective", v) < 0)
      Py_CLEAR(d);
    Py_XDECREF(v);
  }
  PyObject *r = d ? PyObject_CallOneArg(cb->fn, d) : NULL;
  Py_XDECREF(d);
  if (!r) {
    cb->failed = 1; /* the exception stays set for iterate to raise */
  } else {
    stop = PyObject_IsTrue(r);
    if (stop < 0) {
      cb->failed = 1;
      stop = 1;
    }
    Py_DECREF(r);
  }
  PyGILState_Release(g);
  return stop;
}

static PyObject *Recon_iterate(PyObject *self, PyObject *args, PyObject *kw)
{
  static char *names[] = {"num_iterations", "callback", NULL};
  int n = 1;
  PyObject *fn = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|iO:iterate", names, &n, &fn))
    return NULL;
  sp_obj *o = sp_open(self, K_RECON, "self");
  if (!o)
    return NULL;
  if (fn != Py_None && !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "callback: expected a callable or None");
    return NULL;
  }
  struct sp_cb cb = {fn, 0};
  void *h = o->h;
  int st;
  o->busy++;
  sp_inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_recon_iterate(h, n, fn != Py_None ? sp_recon_cb : NULL, &cb);
  Py_END_ALLOW_THREADS
  sp_inflight--;
  o->busy--;
  if (cb.failed)
    return NULL;
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Recon_objective(PyObject *self, PyObject *u)
{
  (void)u;
  sp_obj *o = sp_open(self, K_RECON, "self");
  if (!o)
    return NULL;
  double v = 0;
  int st;
  void *h = o->h;
  o->busy++;
  sp_inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_recon_objective(h, &v);
  Py_END_ALLOW_THREADS
  sp_inflight--;
  o->busy--;
  if (st)
    return sp_raise(st);
  return PyFloat_FromDouble(v);
}

static PyObject *Recon_sensitivity_into(PyObject *self, PyObject *args)
{
  int subset;
  PyObject *out_o;
  if (!PyArg_ParseTuple(args, "iO:sensitivity_into", &subset, &out_o))
    return NULL;
  sp_obj *o = sp_open(self, K_RECON, "self");
  if (!o)
    return NULL;
  sp_obj *img = (sp_obj *)o->deps[0];
  Py_ssize_t want[3] = {img->dims[0], img->dims[1], img->dims[2]};
  sp_arr a;
  if (sp_arr_get(&a, out_o, "out", SP_F32, 1, 3, want, 0) < 0)
    return NULL;
  int st;
  void *h = o->h;
  o->busy++;
  sp_inflight++;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_recon_sensitivity(h, subset, a.ptr);
  Py_END_ALLOW_THREADS
  sp_inflight--;
  o->busy--;
  sp_arr_release(&a);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Recon_sensitivity(PyObject *self, PyObject *arg)
{
  sp_obj *o = sp_open(self, K_RECON, "self");
  if (!o)
    return NULL;
  sp_obj *img = (sp_obj *)o->deps[0];
  PyObject *shape = Py_BuildValue("(iii)", img->dims[0], img->dims[1], img->dims[2]);
  PyObject *out = shape ? sp_np_zeros(shape, "float32") : NULL;
  Py_XDECREF(shape);
  if (!out)
    return NULL;
  PyObject *args = Py_BuildValue("(OO)", arg, out);
  PyObject *ok = args ? Recon_sensitivity_into(self, args) : NULL;
  Py_XDECREF(args);
  if (!ok) {
    Py_DECREF(out);
    return NULL;
  }
  Py_DECREF(ok);
  return out;
}

static PyMethodDef Recon_methods[] = {
    {"iterate", (PyCFunction)(void (*)(void))Recon_iterate, METH_VARARGS | METH_KEYWORDS,
     "iterate($self, num_iterations=1, callback=None)\n--\n\nRuns iterations (continuing). Without a callback it returns once the "
     "work is submitted (the image is current after image.sync()). With one, callback(progress: dict) runs after each "
     "iteration with the image current in its array; a true return value stops. Releases the GIL."},
    {"objective", Recon_objective, METH_NOARGS, "objective($self)\n--\n\nPoisson negative log-likelihood of the current image."},
    {"sensitivity", Recon_sensitivity, METH_O, "sensitivity($self, subset, /)\n--\n\nsubset's sensitivity image as a new array."},
    {"sensitivity_into", Recon_sensitivity_into, METH_VARARGS,
     "sensitivity_into($self, subset, out, /)\n--\n\nCopies subset's sensitivity image into out (float32, the image's shape)."},
    {"close", sp_close_meth, METH_NOARGS, "close($self)\n--\n\nWaits and frees the reconstruction (the image keeps its value)."},
    {"__enter__", sp_enter, METH_NOARGS, "Returns the reconstruction itself."},
    {"__exit__", sp_exit, METH_VARARGS, "Closes the reconstruction."},
    {NULL, NULL, 0, NULL}};

static PyObject *Recon_get_subsets(PyObject *self, void *u)
{
  (void)u;
  return PyLong_FromLong(((sp_obj *)self)->num_chunks);
}

static PyGetSetDef Recon_getset[] = {
    {"image", sp_get_dep, NULL, "The Image being reconstructed.", (void *)0},
    {"model", sp_get_dep, NULL, "The forward model.", (void *)1},
    {"num_subsets", Recon_get_subsets, NULL, "Subsets per iteration.", NULL},
    {"closed", sp_get_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ======================================================================================================== */
/* Scanner (host-only geometry, no registration)                                                             */
/* ======================================================================================================== */

typedef struct {
  PyObject_HEAD
  sproj_scanner *s;
  struct sproj_sinogram_info info;
} ScannerObject;

static PyTypeObject ScannerType;

static PyObject *Scanner_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
  static char *names[] = {"preset", "num_modules", "detectors_per_module", "detector_pitch", "radius", "num_rings",
                          "ring_z", "num_radial_bins", "max_ring_difference", "order", "segment_sequence", NULL};
  const char *preset = "small";
  struct sproj_scanner_params p;
  memset(&p, 0, sizeof(p));
  int nm = -1, dpm = -1, nr = -1, nrb = -1, mrd = -2, order = -1, seq = -1;
  double pitch = -1, radius = -1;
  PyObject *ring_z = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|siiddiOiiii:Scanner", names, &preset, &nm, &dpm, &pitch, &radius, &nr,
                                   &ring_z, &nrb, &mrd, &order, &seq))
    return NULL;
  int st = sproj_scanner_preset(preset, &p);
  if (st)
    return sp_raise(st);
  /* the preset's values, with each field given overriding it */
  if (nm >= 0) p.num_modules = nm;
  if (dpm >= 0) p.detectors_per_module = dpm;
  if (pitch >= 0) p.detector_pitch = pitch;
  if (radius >= 0) p.radius = radius;
  if (nr >= 0) p.num_rings = nr;
  if (nrb >= 0) p.num_radial_bins = nrb;
  if (mrd >= -1)
    p.max_ring_difference = mrd;
  else if (nr >= 0)
    p.max_ring_difference = -1; /* the presets take every ring pair: so does a preset with other rings */
  if (order >= 0) p.order = order;
  if (seq >= 0) p.segment_sequence = seq;
  if (ring_z != Py_None) {
    PyObject *f = PySequence_Fast(ring_z, "ring_z: expected a sequence of numbers");
    if (!f)
      return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (n > SPROJ_MAX_RINGS) {
      Py_DECREF(f);
      PyErr_SetString(PyExc_ValueError, "ring_z: too many rings");
      return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
      p.ring_z[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(f, i));
      if (PyErr_Occurred()) {
        Py_DECREF(f);
        return NULL;
      }
    }
    Py_DECREF(f);
    if (nr < 0)
      p.num_rings = (int)n;
  } else if (nr >= 0 && nr != 0) {
    /* rings given without positions: evenly spaced at the preset's ring distance, centred on 0 */
    double dz = p.ring_z[1] - p.ring_z[0];
    for (int i = 0; i < nr && i < SPROJ_MAX_RINGS; i++)
      p.ring_z[i] = (i - 0.5 * (nr - 1)) * dz;
  }
  ScannerObject *self = (ScannerObject *)type->tp_alloc(type, 0);
  if (!self)
    return NULL;
  st = sproj_scanner_create(&self->s, &p);
  if (st) {
    Py_DECREF(self);
    return sp_raise(st);
  }
  sproj_scanner_info(self->s, &self->info);
  return (PyObject *)self;
}

static void Scanner_dealloc(PyObject *o)
{
  ScannerObject *s = (ScannerObject *)o;
  sproj_scanner_destroy(s->s);
  Py_TYPE(o)->tp_free(o);
}

static PyObject *Scanner_info(PyObject *self, PyObject *u)
{
  (void)u;
  struct sproj_sinogram_info *i = &((ScannerObject *)self)->info;
  return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:L,s:L}", "num_detectors", i->num_detectors, "num_rings",
                       i->num_rings, "num_views", i->num_views, "num_radial_bins", i->num_radial_bins,
                       "max_ring_difference", i->max_ring_difference, "num_segments", i->num_segments, "num_planes",
                       i->num_planes, "lors_per_view", (long long)i->lors_per_view, "num_lors",
                       (long long)i->num_lors);
}

static PyObject *Scanner_params(PyObject *self, PyObject *u)
{
  (void)u;
  struct sproj_scanner_params p;
  sproj_scanner_params(((ScannerObject *)self)->s, &p);
  PyObject *rz = PyList_New(p.num_rings);
  for (int i = 0; rz && i < p.num_rings; i++)
    PyList_SET_ITEM(rz, i, PyFloat_FromDouble(p.ring_z[i]));
  if (!rz)
    return NULL;
  return Py_BuildValue("{s:i,s:i,s:d,s:d,s:i,s:N,s:i,s:i,s:i,s:i}", "num_modules", p.num_modules,
                       "detectors_per_module", p.detectors_per_module, "detector_pitch", p.detector_pitch, "radius",
                       p.radius, "num_rings", p.num_rings, "ring_z", rz, "num_radial_bins", p.num_radial_bins,
                       "max_ring_difference", p.max_ring_difference, "order", p.order, "segment_sequence",
                       p.segment_sequence);
}

static PyObject *Scanner_lors_into(PyObject *self, PyObject *args)
{
  PyObject *xs_o, *xe_o;
  if (!PyArg_ParseTuple(args, "OO:lors_into", &xs_o, &xe_o))
    return NULL;
  ScannerObject *s = (ScannerObject *)self;
  Py_ssize_t want[2] = {(Py_ssize_t)s->info.num_lors, 3};
  sp_arr a, b;
  if (sp_arr_get(&a, xs_o, "xstart", SP_F32, 1, 2, want, 0) < 0)
    return NULL;
  if (sp_arr_get(&b, xe_o, "xend", SP_F32, 1, 2, want, 0) < 0) {
    sp_arr_release(&a);
    return NULL;
  }
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_scanner_lors(s->s, a.ptr, b.ptr, 0);
  Py_END_ALLOW_THREADS
  sp_arr_release(&a);
  sp_arr_release(&b);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Scanner_pair_lors_into(PyObject *self, PyObject *args)
{
  PyObject *p_o, *xs_o, *xe_o;
  if (!PyArg_ParseTuple(args, "OOO:pair_lors_into", &p_o, &xs_o, &xe_o))
    return NULL;
  ScannerObject *s = (ScannerObject *)self;
  Py_ssize_t wp[2] = {-1, 4};
  sp_arr p, a, b;
  if (sp_arr_get(&p, p_o, "pairs", SP_I32, 0, 2, wp, 0) < 0)
    return NULL;
  Py_ssize_t want[2] = {p.shape[0], 3};
  if (sp_arr_get(&a, xs_o, "xstart", SP_F32, 1, 2, want, 0) < 0) {
    sp_arr_release(&p);
    return NULL;
  }
  if (sp_arr_get(&b, xe_o, "xend", SP_F32, 1, 2, want, 0) < 0) {
    sp_arr_release(&p);
    sp_arr_release(&a);
    return NULL;
  }
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_scanner_pair_lors(s->s, want[0], p.ptr, a.ptr, b.ptr);
  Py_END_ALLOW_THREADS
  sp_arr_release(&p);
  sp_arr_release(&a);
  sp_arr_release(&b);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Scanner_lors(PyObject *self, PyObject *u)
{
  (void)u;
  ScannerObject *s = (ScannerObject *)self;
  PyObject *shape = Py_BuildValue("(Li)", (long long)s->info.num_lors, 3);
  PyObject *xs = shape ? sp_np_zeros(shape, "float32") : NULL;
  PyObject *xe = xs ? sp_np_zeros(shape, "float32") : NULL;
  Py_XDECREF(shape);
  PyObject *r = NULL;
  if (xe) {
    PyObject *args = PyTuple_Pack(2, xs, xe);
    PyObject *ok = args ? Scanner_lors_into(self, args) : NULL;
    Py_XDECREF(args);
    if (ok) {
      Py_DECREF(ok);
      r = PyTuple_Pack(2, xs, xe);
    }
  }
  Py_XDECREF(xs);
  Py_XDECREF(xe);
  return r;
}

static PyObject *Scanner_pair_lors(PyObject *self, PyObject *pairs)
{
  Py_ssize_t n = PyObject_Length(pairs);
  if (n < 0)
    return NULL;
  PyObject *shape = Py_BuildValue("(ni)", n, 3);
  PyObject *xs = shape ? sp_np_zeros(shape, "float32") : NULL;
  PyObject *xe = xs ? sp_np_zeros(shape, "float32") : NULL;
  Py_XDECREF(shape);
  PyObject *r = NULL;
  if (xe) {
    PyObject *args = PyTuple_Pack(3, pairs, xs, xe);
    PyObject *ok = args ? Scanner_pair_lors_into(self, args) : NULL;
    Py_XDECREF(args);
    if (ok) {
      Py_DECREF(ok);
      r = PyTuple_Pack(2, xs, xe);
    }
  }
  Py_XDECREF(xs);
  Py_XDECREF(xe);
  return r;
}

static PyObject *Scanner_lor_index(PyObject *self, PyObject *args)
{
  int v, seg, ax, rad;
  if (!PyArg_ParseTuple(args, "iiii:lor_index", &v, &seg, &ax, &rad))
    return NULL;
  int64_t lor;
  int st = sproj_scanner_lor_index(((ScannerObject *)self)->s, v, seg, ax, rad, &lor);
  if (st)
    return sp_raise(st);
  return PyLong_FromLongLong(lor);
}

static PyObject *Scanner_chunks(PyObject *self, PyObject *args, int which)
{
  PyObject *lors_o;
  int n = 0;
  if (!PyArg_ParseTuple(args, which == 2 ? "Oi:chunks_subsets" : "O:chunks", &lors_o, &n))
    return NULL;
  sp_obj *l = sp_open(lors_o, K_LORS, "lors");
  if (!l)
    return NULL;
  sproj_chunks *c = NULL;
  sproj_scanner *s = ((ScannerObject *)self)->s;
  int st;
  void *lh = l->h;
  SP_RELEASED(l, st,
              which == 0   ? sproj_scanner_chunks_views(&c, s, lh)
              : which == 1 ? sproj_scanner_chunks_viewgrams(&c, s, lh)
                           : sproj_scanner_chunks_subsets(&c, s, lh, n));
  if (st)
    return sp_raise(st);
  return sp_chunks_wrap(c, lors_o);
}

static PyObject *Scanner_chunks_views(PyObject *self, PyObject *args)
{
  return Scanner_chunks(self, args, 0);
}

static PyObject *Scanner_chunks_viewgrams(PyObject *self, PyObject *args)
{
  return Scanner_chunks(self, args, 1);
}

static PyObject *Scanner_chunks_subsets(PyObject *self, PyObject *args)
{
  return Scanner_chunks(self, args, 2);
}

static PyMethodDef Scanner_methods[] = {
    {"info", Scanner_info, METH_NOARGS, "info($self)\n--\n\nSinogram sizes as a dict (views, radial bins, planes, LORs...)."},
    {"params", Scanner_params, METH_NOARGS, "params($self)\n--\n\nThe scanner's parameters as a dict."},
    {"lors_into", Scanner_lors_into, METH_VARARGS,
     "lors_into($self, xstart, xend, /)\n--\n\nFills (num_lors, 3) float32 arrays with every LOR of the sinogram, in its order."},
    {"pair_lors_into", Scanner_pair_lors_into, METH_VARARGS,
     "pair_lors_into($self, pairs, xstart, xend, /)\n--\n\npairs: (n, 4) int32 (ring_a, det_a, ring_b, det_b); fills the LORs."},
    {"lors", Scanner_lors, METH_NOARGS, "lors($self)\n--\n\n(xstart, xend): every LOR of the sinogram as new (num_lors, 3) arrays."},
    {"pair_lors", Scanner_pair_lors, METH_O,
     "pair_lors($self, pairs, /)\n--\n\n(xstart, xend) of detector pairs given as (n, 4) int32 (ring_a, det_a, ring_b, det_b)."},
    {"lor_index", Scanner_lor_index, METH_VARARGS, "lor_index($self, view, segment, axial, radial, /)\n--\n\nLOR index."},
    {"chunks_views", Scanner_chunks_views, METH_VARARGS, "chunks_views($self, lors, /)\n--\n\nChunks: one per view."},
    {"chunks_viewgrams", Scanner_chunks_viewgrams, METH_VARARGS,
     "chunks_viewgrams($self, lors, /)\n--\n\nChunks: one per (view, segment)."},
    {"chunks_subsets", Scanner_chunks_subsets, METH_VARARGS,
     "chunks_subsets($self, lors, num_subsets, /)\n--\n\nChunks: subset t = views t, t + num_subsets, ..."},
    {NULL, NULL, 0, NULL}};

/* ======================================================================================================== */
/* host helpers                                                                                              */
/* ======================================================================================================== */

static PyObject *sp_lors_order_into(PyObject *m, PyObject *args)
{
  (void)m;
  PyObject *xs_o, *xe_o, *vs_o, *out_o;
  if (!PyArg_ParseTuple(args, "OOOO:lors_order_into", &xs_o, &xe_o, &vs_o, &out_o))
    return NULL;
  float vs[3];
  if (sp_float3(vs_o, "voxel_size", vs) < 0)
    return NULL;
  sp_arr a, b, o;
  Py_ssize_t w[2] = {-1, 3};
  if (sp_arr_get(&a, xs_o, "xstart", SP_F32, 0, 2, w, 0) < 0)
    return NULL;
  w[0] = a.shape[0];
  if (sp_arr_get(&b, xe_o, "xend", SP_F32, 0, 2, w, 0) < 0) {
    sp_arr_release(&a);
    return NULL;
  }
  if (sp_arr_get(&o, out_o, "out", SP_I64, 1, 1, w, 0) < 0) {
    sp_arr_release(&a);
    sp_arr_release(&b);
    return NULL;
  }
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_lors_order(a.ptr, b.ptr, w[0], vs, o.ptr);
  Py_END_ALLOW_THREADS
  sp_arr_release(&a);
  sp_arr_release(&b);
  sp_arr_release(&o);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *sp_lors_order(PyObject *m, PyObject *args)
{
  PyObject *xs_o, *xe_o, *vs_o;
  if (!PyArg_ParseTuple(args, "OOO:lors_order", &xs_o, &xe_o, &vs_o))
    return NULL;
  Py_ssize_t n = PyObject_Length(xs_o);
  if (n < 0)
    return NULL;
  PyObject *shape = Py_BuildValue("(n)", n);
  PyObject *out = shape ? sp_np_zeros(shape, "int64") : NULL;
  Py_XDECREF(shape);
  if (!out)
    return NULL;
  PyObject *a = Py_BuildValue("(OOOO)", xs_o, xe_o, vs_o, out);
  PyObject *ok = a ? sp_lors_order_into(m, a) : NULL;
  Py_XDECREF(a);
  if (!ok) {
    Py_DECREF(out);
    return NULL;
  }
  Py_DECREF(ok);
  return out;
}

static PyObject *sp_reorder(PyObject *m, PyObject *args)
{
  (void)m;
  PyObject *arr_o, *order_o;
  if (!PyArg_ParseTuple(args, "OO:reorder", &arr_o, &order_o))
    return NULL;
  sp_arr ord;
  if (sp_arr_get(&ord, order_o, "order", SP_I64, 0, 1, NULL, 0) < 0)
    return NULL;
  Py_buffer v;
  /* any C-contiguous writable array whose first dimension runs over the elements */
  if (PyObject_GetBuffer(arr_o, &v, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
    sp_arr_release(&ord);
    return NULL;
  }
  PyObject *res = NULL;
  if (v.ndim < 1 || v.shape[0] != ord.count) {
    PyErr_SetString(PyExc_ValueError, "array: dimension 0 must have as many elements as order");
  } else {
    size_t eb = ord.count ? (size_t)(v.len / ord.count) : 1;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = sproj_reorder(v.buf, eb, ord.count, ord.ptr);
    Py_END_ALLOW_THREADS
    if (st)
      sp_raise(st);
    else {
      Py_INCREF(Py_None);
      res = Py_None;
    }
  }
  PyBuffer_Release(&v);
  sp_arr_release(&ord);
  return res;
}

static PyObject *sp_tof_bins_from_centered(PyObject *m, PyObject *args)
{
  (void)m;
  PyObject *in_o, *out_o;
  int nb, rev = 0;
  if (!PyArg_ParseTuple(args, "OOi|p:tof_bins_from_centered", &in_o, &out_o, &nb, &rev))
    return NULL;
  sp_arr a, b;
  if (sp_arr_get(&a, in_o, "centered", SP_I16, 0, 1, NULL, 0) < 0)
    return NULL;
  Py_ssize_t w[1] = {a.count};
  if (sp_arr_get(&b, out_o, "out", SP_I16, 1, 1, w, 0) < 0) {
    sp_arr_release(&a);
    return NULL;
  }
  int st = sproj_tof_bins_from_centered(a.count, a.ptr, b.ptr, nb, rev);
  sp_arr_release(&a);
  sp_arr_release(&b);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

/* ======================================================================================================== */
/* types and module                                                                                          */
/* ======================================================================================================== */

static PySequenceMethods Lors_as_seq = {.sq_length = sp_len_lors};

#define SP_TYPE(var, pyname, newfn, doc, methods, getset)                                                   \
  static PyTypeObject var = {                                                                               \
      PyVarObject_HEAD_INIT(NULL, 0).tp_name = "starproj." pyname,                                          \
      .tp_basicsize = sizeof(sp_obj),                                                                       \
      .tp_flags = Py_TPFLAGS_DEFAULT,                                                                       \
      .tp_doc = doc,                                                                                        \
      .tp_new = newfn,                                                                                      \
      .tp_dealloc = sp_obj_dealloc,                                                                         \
      .tp_finalize = sp_obj_finalize,                                                                       \
      .tp_weaklistoffset = offsetof(sp_obj, weakrefs),                                                      \
      .tp_methods = methods,                                                                                \
      .tp_getset = getset,                                                                                  \
  };

SP_TYPE(ImageType, "Image", Image_new,
        "Image(array, voxel_size=(1, 1, 1), origin=(0, 0, 0))\n--\n\n"
        "A registered image: array is float32, C-contiguous, shape (n0, n1, n2), writable; its memory is used in place "
        "(no copy) and kept alive while registered. A CuPy / PyTorch CUDA array (DLPack) is registered on its GPU. "
        "origin is the centre of voxel (0, 0, 0). Read the array after sync(), modify it after sync('write'). "
        "close() / with / garbage collection unregister it.",
        Image_methods, Image_getset)
SP_TYPE(LorsType, "Lors", Lors_new,
        "Lors(xstart, xend, tof_bin=None)\n--\n\n"
        "A registered LOR set: xstart, xend float32 C-contiguous (n, 3) (read only; used in place, kept alive). With "
        "tof_bin (int16, (n,)): listmode events carrying a TOF bin each (host memory only). CuPy / PyTorch CUDA arrays "
        "are registered on their GPU.",
        Lors_methods, Lors_getset)
SP_TYPE(ChunksType, "Chunks", Chunks_new,
        "A chunking of a LOR set (made by Chunks.ranges / blocks / lists / strided or Scanner.chunks_*). len() is the "
        "number of chunks. Keeps its Lors alive.",
        Chunks_methods, Chunks_getset)
SP_TYPE(ProjType, "Proj", Proj_new,
        "Proj(lors, values)\n--\n\n"
        "A projection vector on lors: values float32 C-contiguous writable, shape (num_lors,) or (num_lors, "
        "num_tof_bins) for a TOF sinogram; used in place (no copy). Keeps its Lors and the array alive.",
        Proj_methods, Proj_getset)
SP_TYPE(TofType, "Tof", Tof_new,
        "Tof(num_bins, bin_width, sigma, num_sigmas=3.0, center_offset=0.0, lors=None)\n--\n\n"
        "TOF parameters. sigma and center_offset are numbers, or float32 arrays with one value per LOR of lors.",
        Tof_methods, Tof_getset)
SP_TYPE(ModelType, "Model", Model_new,
        "Model(lors, mult=None, add=None, tof=None, fwhm=None)\n--\n\n"
        "Forward model ybar = mult * A(G x) + add on lors (float32 arrays, host, kept alive); tof selects the TOF "
        "sinogram or listmode projector; fwhm (3 numbers) a Gaussian resolution model.",
        Model_methods, Model_getset)
SP_TYPE(ReconType, "Recon", Recon_new,
        "Recon(image, model, chunks, data=None, num_subsets=1, subsets=None, sens_model=None, sens_chunks=None, "
        "sens_subsets=None, objective=False)\n--\n\n"
        "ML-EM / OS-EM of image (updated in place) with model; data: a Proj of counts (None: listmode, one count per "
        "event, then sens_model is required). subsets: list of lists of chunk indices (default: chunk c in subset "
        "c % num_subsets). Computes the sensitivities at creation.",
        Recon_methods, Recon_getset)

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "starproj.Scanner",
    .tp_basicsize = sizeof(ScannerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(preset='small', **fields)\n--\n\n"
              "A cylindrical scanner (rings of polygons of modules): a preset ('small', 'vision600') with fields "
              "overridden (num_modules, detectors_per_module, detector_pitch, radius, num_rings, ring_z, "
              "num_radial_bins, max_ring_difference, order, segment_sequence). Host-only: needs no init().",
    .tp_new = Scanner_new,
    .tp_dealloc = Scanner_dealloc,
    .tp_methods = Scanner_methods,
};

static PyMethodDef module_methods[] = {
    {"init", (PyCFunction)(void (*)(void))sp_init, METH_VARARGS | METH_KEYWORDS,
     "init($module, devices=None, scheduler=None, ncpu=-1, ngpu=-1, workers_per_gpu=-1, task_lors=0, verbose=False, "
     "max_queued_tasks=-1, reproducible=False, merge_calls=-1, image_layouts=-1)\n--\n\n"
     "Starts StarPU through sproj_init. devices: 'cpu', 'gpu', 'any' (where projections run; None: the library's "
     "default). scheduler: a StarPU policy name. -1 means the library's default."},
    {"shutdown", sp_shutdown, METH_NOARGS,
     "shutdown($module)\n--\n\nCloses every object still open (reconstructions first, images last), waits and stops StarPU. "
     "A no-op when not initialised."},
    {"is_initialized", sp_is_initialized, METH_NOARGS, "is_initialized($module)\n--\n\nTrue between init() and shutdown()."},
    {"num_gpus", sp_num_gpus, METH_NOARGS, "num_gpus($module)\n--\n\nGPUs driven by StarPU (0 before init)."},
    {"num_cpu_workers", sp_num_cpu_workers, METH_NOARGS, "num_cpu_workers($module)\n--\n\nCPU workers (0 before init)."},
    {"num_workers", sp_num_workers, METH_NOARGS, "num_workers($module)\n--\n\nAll StarPU workers."},
    {"scheduler_name", sp_scheduler_name, METH_NOARGS, "scheduler_name($module)\n--\n\nScheduler in use, or None."},
    {"worker_stats", sp_worker_stats, METH_NOARGS,
     "worker_stats($module)\n--\n\nList of dicts per worker: worker, name, is_gpu, gpu, tasks, lors, layout_tasks."},
    {"stats_reset", sp_stats_reset, METH_NOARGS, "stats_reset($module)\n--\n\nZeroes the worker statistics."},
    {"wait_all", sp_wait_all, METH_NOARGS, "wait_all($module)\n--\n\nWaits for every submitted task (GIL released)."},
    {"flush", sp_flush, METH_NOARGS, "flush($module)\n--\n\nSubmits calls held back for merging."},
    {"batch_begin", sp_batch_begin, METH_NOARGS, "batch_begin($module)\n--\n\nStarts collecting this thread's calls."},
    {"batch_end", sp_batch_end, METH_NOARGS, "batch_end($module)\n--\n\nSubmits what the batch collected."},
    {"set_devices", sp_set_devices, METH_O, "set_devices($module, devices, /)\n--\n\n'cpu', 'gpu', 'any' or a DEVICE_* mask."},
    {"set_task_lors", sp_set_task_lors, METH_O, "set_task_lors($module, n, /)\n--\n\nLargest task in LORs (0: automatic)."},
    {"get_task_lors", sp_get_task_lors, METH_NOARGS, "get_task_lors($module)\n--\n\nLargest task in LORs."},
    {"set_merge_calls", sp_set_merge_calls, METH_O, "set_merge_calls($module, on, /)\n--\n\nMerging of separate calls on (1) / off."},
    {"set_image_layouts", sp_set_image_layouts, METH_O, "set_image_layouts($module, on, /)\n--\n\nGPU image copies on (1) / off (0)."},
    {"strerror", sp_strerror, METH_O, "strerror($module, status, /)\n--\n\nName of a status code."},
    {"fwd", (PyCFunction)(void (*)(void))sp_fwd, METH_FASTCALL | METH_KEYWORDS,
     "fwd($module, image, proj, chunks=None, chunk=-1)\n--\n\nForward projection of a chunk (an int), a list of chunks "
     "(a sequence: one merged call) or every chunk; overwrites proj's values there. Returns at once."},
    {"back", (PyCFunction)(void (*)(void))sp_back, METH_FASTCALL | METH_KEYWORDS,
     "back($module, image, proj, chunks=None, chunk=-1)\n--\n\nBack projection, ADDED to image. Returns at once."},
    {"fwd_tof_sino", (PyCFunction)(void (*)(void))sp_fwd_tof_sino, METH_FASTCALL | METH_KEYWORDS,
     "fwd_tof_sino($module, image, proj, tof, chunks=None, chunk=-1)\n--\n\nTOF-sinogram forward projection."},
    {"back_tof_sino", (PyCFunction)(void (*)(void))sp_back_tof_sino, METH_FASTCALL | METH_KEYWORDS,
     "back_tof_sino($module, image, proj, tof, chunks=None, chunk=-1)\n--\n\nTOF-sinogram back projection (added)."},
    {"fwd_tof_lm", (PyCFunction)(void (*)(void))sp_fwd_tof_lm, METH_FASTCALL | METH_KEYWORDS,
     "fwd_tof_lm($module, image, proj, tof, chunks=None, chunk=-1)\n--\n\nTOF listmode forward projection of events."},
    {"back_tof_lm", (PyCFunction)(void (*)(void))sp_back_tof_lm, METH_FASTCALL | METH_KEYWORDS,
     "back_tof_lm($module, image, proj, tof, chunks=None, chunk=-1)\n--\n\nTOF listmode back projection (added)."},
    {"lors_order", sp_lors_order, METH_VARARGS,
     "lors_order($module, xstart, xend, voxel_size, /)\n--\n\nsproj_lors_order: a new int64 permutation that makes projections faster."},
    {"lors_order_into", sp_lors_order_into, METH_VARARGS,
     "lors_order_into($module, xstart, xend, voxel_size, out, /)\n--\n\nsproj_lors_order into out (int64, (n,))."},
    {"reorder", sp_reorder, METH_VARARGS,
     "reorder($module, array, order, /)\n--\n\nIn place: element i of array (along dimension 0) becomes the old element order[i]."},
    {"tof_bins_from_centered", sp_tof_bins_from_centered, METH_VARARGS,
     "tof_bins_from_centered($module, centered, out, num_bins, reverse=False, /)\n--\n\nCentred TOF bin numbers -> 0..num_bins-1."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "starproj._core",
                                        "The C extension of starproj (use the starproj package).", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void)
{
  ImageType.tp_as_sequence = NULL;
  LorsType.tp_as_sequence = &Lors_as_seq;
  ChunksType.tp_as_sequence = &Lors_as_seq;
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  for (int k = 0; k < K_NKINDS; k++) {
    if (PyType_Ready(sp_types[k]) < 0)
      return NULL;
    Py_INCREF(sp_types[k]);
    if (PyModule_AddObject(m, sp_kind_name[k], (PyObject *)sp_types[k]) < 0)
      return NULL;
  }
  if (PyType_Ready(&ScannerType) < 0)
    return NULL;
  Py_INCREF(&ScannerType);
  PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType);
  sp_Error = PyErr_NewExceptionWithDoc("starproj.Error",
                                       "A starproj call failed: .status is the library's negative status code, "
                                       ".message the text of sproj_last_error().",
                                       PyExc_RuntimeError, NULL);
  if (!sp_Error)
    return NULL;
  Py_INCREF(sp_Error);
  PyModule_AddObject(m, "Error", sp_Error);
  PyModule_AddStringConstant(m, "version", "" Py_STRINGIFY(SPROJ_VERSION_MAJOR) "." Py_STRINGIFY(
                                               SPROJ_VERSION_MINOR) "." Py_STRINGIFY(SPROJ_VERSION_PATCH));
  PyModule_AddIntConstant(m, "SYNC_READ", SPROJ_SYNC_READ);
  PyModule_AddIntConstant(m, "SYNC_WRITE", SPROJ_SYNC_WRITE);
  PyModule_AddIntConstant(m, "ALL_GPUS", SPROJ_ALL_GPUS);
  PyModule_AddIntConstant(m, "ALL_CHUNKS", SPROJ_ALL_CHUNKS);
  PyModule_AddIntConstant(m, "DEVICE_CPU", SPROJ_DEVICE_CPU);
  PyModule_AddIntConstant(m, "DEVICE_CUDA", SPROJ_DEVICE_CUDA);
  PyModule_AddIntConstant(m, "DEVICE_ANY", SPROJ_DEVICE_ANY);
  static const struct {
    const char *name;
    int v;
  } codes[] = {{"ERR_NULL", SPROJ_ERR_NULL},         {"ERR_DIMS", SPROJ_ERR_DIMS},
               {"ERR_VOXEL_SIZE", SPROJ_ERR_VOXEL_SIZE}, {"ERR_NONFINITE", SPROJ_ERR_NONFINITE},
               {"ERR_MISMATCH", SPROJ_ERR_MISMATCH}, {"ERR_EMPTY", SPROJ_ERR_EMPTY},
               {"ERR_OVERFLOW", SPROJ_ERR_OVERFLOW}, {"ERR_RANGE", SPROJ_ERR_RANGE},
               {"ERR_NOT_INIT", SPROJ_ERR_NOT_INIT}, {"ERR_NO_DEVICE", SPROJ_ERR_NO_DEVICE},
               {"ERR_NOMEM", SPROJ_ERR_NOMEM},       {"ERR_STARPU", SPROJ_ERR_STARPU},
               {"ERR_BUSY", SPROJ_ERR_BUSY},         {"ERR_INVALID", SPROJ_ERR_INVALID},
               {"ERR_TOF", SPROJ_ERR_TOF},           {"ERR_IO", SPROJ_ERR_IO},
               {"ERR_FORMAT", SPROJ_ERR_FORMAT}};
  for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
    PyModule_AddIntConstant(m, codes[i].name, codes[i].v);
  return m;
}
