/* arrays.c: arrays taken without a copy: the buffer protocol, DLPack, and the CUDA stream handshake. */
/* binding.h first: Python.h sets the feature macros every system header must see */
#include "binding.h"

#include <dlfcn.h>

static const char *const sp_dtype_name[] = {"float32", "int16", "int32", "int64"};
static const Py_ssize_t sp_dtype_size[] = {4, 2, 4, 8};

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
/* The few CUDA runtime calls the binding makes, found once. */
static struct {
  int (*get_device)(int *);
  int (*set_device)(int);
  int (*device_sync)(void);
  int (*stream_sync)(void *);
  int (*memcpy)(void *, const void *, size_t, int);
} sp_rt;

/* 0 once sp_rt holds the calls, -1 when the CUDA runtime cannot be found. */
static int sp_cudart(void)
{
  static void *lib;
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
    *(void **)&sp_rt.get_device = dlsym(lib, "cudaGetDevice");
    *(void **)&sp_rt.set_device = dlsym(lib, "cudaSetDevice");
    *(void **)&sp_rt.device_sync = dlsym(lib, "cudaDeviceSynchronize");
    *(void **)&sp_rt.stream_sync = dlsym(lib, "cudaStreamSynchronize");
    *(void **)&sp_rt.memcpy = dlsym(lib, "cudaMemcpy");
  }
  return sp_rt.get_device && sp_rt.set_device && sp_rt.device_sync && sp_rt.stream_sync && sp_rt.memcpy ? 0 : -1;
}

/* Waits until the work the producer ordered before the legacy default stream of device devid is done (stream_given:
 * __dlpack__ was called with stream=1), or, for a producer that took no stream, until the whole device is idle.
 * StarPU runs its codelets on non-blocking streams, which the legacy stream does not order, hence the wait on the
 * host: registration is rare, the wait short. With dst, then copies bytes from the device's src to the host (a
 * few scalars). Called without the GIL. Returns a CUDA error code, or -1 when the CUDA runtime cannot be found. */
static int sp_cuda_wait_copy(int devid, int stream_given, void *dst, const void *src, size_t bytes)
{
  if (sp_cudart() < 0)
    return -1;
  int previous = -1, err = sp_rt.get_device(&previous);
  if (!err && previous != devid)
    err = sp_rt.set_device(devid);
  if (!err)
    err = stream_given ? sp_rt.stream_sync((void *)(uintptr_t)1 /* cudaStreamLegacy */) : sp_rt.device_sync();
  if (!err && dst)
    err = sp_rt.memcpy(dst, src, bytes, 2 /* cudaMemcpyDeviceToHost */);
  /* the calling thread's current device is the caller's (CuPy, PyTorch keep theirs there) */
  if (previous >= 0 && previous != devid)
    sp_rt.set_device(previous);
  return err;
}
#else
static int sp_cuda_wait_copy(int devid, int stream_given, void *dst, const void *src, size_t bytes)
{
  (void)devid;
  (void)stream_given;
  (void)dst;
  (void)src;
  (void)bytes;
  return -1;
}
#endif

static int sp_cuda_wait(int devid, int stream_given)
{
  return sp_cuda_wait_copy(devid, stream_given, NULL, NULL, 0);
}

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

/* Puts the argument's name before the message of the exception being raised (a producer's own, which names none). */
static int sp_name_exception(const char *name)
{
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  PyErr_NormalizeException(&et, &ev, &tb);
  PyObject *msg = ev ? PyObject_Str(ev) : NULL;
  if (msg && et) {
    PyErr_Format(et, "%s: %U", name, msg);
    Py_DECREF(msg);
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
  } else {
    Py_XDECREF(msg);
    PyErr_Restore(et, ev, tb);
  }
  return -1;
}

static int sp_arr_dlpack(sp_arr *a, PyObject *obj, const char *name, int dt, int writable, int ndim,
                         const Py_ssize_t *want, int allow_gpu)
{
  /* PyTorch does not export a tensor that requires grad (its error names no argument): a projection would record no
   * gradient for it, so it is refused here, by name */
  PyObject *rg = PyObject_GetAttrString(obj, "requires_grad");
  if (rg) {
    int on = PyObject_IsTrue(rg);
    Py_DECREF(rg);
    if (on < 0)
      return -1;
    if (on) {
      PyErr_Format(PyExc_ValueError,
                   "%s: the tensor requires grad, but starproj's calls record no gradient (pass .detach(), or use the "
                   "autograd operators of starproj.torch)", name);
      return -1;
    }
  } else {
    PyErr_Clear();
  }
  PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  if (!dev)
    return sp_name_exception(name);
  long dtype_dev = -1, devid = -1;
  if (PyTuple_Check(dev) && SP_TUPLE_SIZE(dev) == 2) {
    dtype_dev = PyLong_AsLong(SP_TUPLE_ITEM(dev, 0));
    devid = PyLong_AsLong(SP_TUPLE_ITEM(dev, 1));
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
    return sp_name_exception(name);
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
  if (t->ndim < 0 || t->ndim > SP_MAX_NDIM) {
    PyErr_Format(PyExc_ValueError, "%s: %d dimensions are not supported", name, (int)t->ndim);
    Py_DECREF(cap);
    return -1;
  }
  Py_ssize_t shape[SP_MAX_NDIM], count = 1, expect = 1;
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

/* Takes an array without copying it. Host arrays come through the buffer protocol: one request (strides and format,
 * no other demands) names what is wrong or, when nothing is, is the export kept while the array is registered.
 * Objects with __dlpack__ only (PyTorch, CuPy) come through DLPack. The buffer is asked first, so that a NumPy array
 * costs no DLPack method call (a call of the parallelproj module takes up to ten arrays); CuPy's arrays have a buffer
 * slot that refuses every request, so that an array on a GPU always goes through DLPack. */
int sp_arr_get(sp_arr *a, PyObject *obj, const char *name, int dt, int writable, int ndim,
                      const Py_ssize_t *want, int allow_gpu)
{
  memset(a, 0, sizeof(*a));
  a->gpu_devid = -1;
  int has_buffer = PyObject_CheckBuffer(obj);
  Py_buffer v;
  if (has_buffer && PyObject_GetBuffer(obj, &v, PyBUF_RECORDS_RO) == 0) {
    int bad = 0;
    if (!sp_fmt_is(v.format, v.itemsize, dt)) {
      PyErr_Format(PyExc_TypeError, "%s: expected dtype %s, got buffer format '%s' with %zd-byte items", name,
                   sp_dtype_name[dt], v.format ? v.format : "B", v.itemsize);
      bad = 1;
    } else if (v.ndim > SP_MAX_NDIM) {
      PyErr_Format(PyExc_ValueError, "%s: %d dimensions are not supported", name, v.ndim);
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
    if (bad) {
      PyBuffer_Release(&v);
      return -1;
    }
    /* the export is kept: NumPy cannot resize or free the memory while starproj uses it */
    a->view = v;
    a->has_view = 1;
    a->ptr = v.buf;
    a->count = v.itemsize ? v.len / v.itemsize : 0;
    a->ndim = v.ndim;
    for (int i = 0; i < v.ndim; i++)
      a->shape[i] = v.shape ? v.shape[i] : a->count;
    Py_INCREF(obj);
    a->owner = obj;
    return 0;
  }
  if (has_buffer)
    PyErr_Clear(); /* a buffer slot that refuses (CuPy's): DLPack then */
  if (PyObject_HasAttrString(obj, "__dlpack__") && PyObject_HasAttrString(obj, "__dlpack_device__")) {
    if (sp_arr_dlpack(a, obj, name, dt, writable, ndim, want, allow_gpu) < 0)
      return -1;
    Py_INCREF(obj);
    a->owner = obj;
    return 0;
  }
  if (has_buffer)
    sp_type_error(PyExc_TypeError, name, "no strided buffer exported", obj);
  else {
    char what[80];
    snprintf(what, sizeof(what), "expected a %s array (buffer protocol or __dlpack__)", sp_dtype_name[dt]);
    sp_type_error(PyExc_TypeError, name, what, obj);
  }
  return -1;
}

/* Registers a GPU array as a StarPU vector on its device's memory node (StarPU then treats that memory as the data's
 * home: tasks on that GPU use it in place, nothing crosses to the host). */
int sp_arr_gpu_handle(sp_arr *a, uint32_t nelem, size_t elemsize)
{
  starpu_vector_data_register(&a->handle, (int)a->gpu_node, (uintptr_t)a->ptr, nelem, elemsize);
  return a->handle ? 0 : -1;
}

void sp_arr_release(sp_arr *a)
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

/* Copies the first bytes of a's memory to dst: a few scalars the host needs (an origin, a TOF sigma), from a host
 * array or, through the CUDA runtime, from a GPU array. Called with the GIL; 0, or -1 with an exception. */
int sp_arr_read(const sp_arr *a, const char *name, void *dst, size_t bytes)
{
  if (a->gpu_devid < 0) {
    memcpy(dst, a->ptr, bytes);
    return 0;
  }
  int err;
  Py_BEGIN_ALLOW_THREADS
  err = sp_cuda_wait_copy(a->gpu_devid, 1, dst, a->ptr, bytes);
  Py_END_ALLOW_THREADS
  if (err) {
    sp_raise_msg(SPROJ_ERR_NO_DEVICE, "%s: copying %zu bytes from CUDA device %d failed (%s %d)", name, bytes,
                 a->gpu_devid, err < 0 ? "no CUDA runtime found," : "CUDA error", err);
    return -1;
  }
  return 0;
}
