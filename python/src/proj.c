/* proj.c: starproj.Proj (projection values), starproj.Tof and the projection calls. */
#include "binding.h"

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
  if (a->ndim == 2 && a->shape[1] > INT_MAX) {
    PyErr_SetString(PyExc_ValueError, "values: too many TOF bins");
    goto fail;
  }
  if (a->gpu_devid >= 0) {
    /* one element per LOR: its value, or its TOF bins (a TOF sinogram's row) */
    if (l->arr[0].gpu_devid >= 0 && l->arr[0].gpu_devid != a->gpu_devid) {
      PyErr_Format(PyExc_ValueError, "values: on CUDA device %d, but the LORs are on CUDA device %d", a->gpu_devid,
                   l->arr[0].gpu_devid);
      goto fail;
    }
    if (a->shape[0] > UINT32_MAX) {
      PyErr_SetString(PyExc_ValueError, "values: too many LORs for a StarPU vector");
      goto fail;
    }
    size_t row = (size_t)(a->ndim == 2 ? a->shape[1] : 1) * sizeof(float);
    if (sp_arr_gpu_handle(a, (uint32_t)a->shape[0], row) < 0) {
      sp_raise_msg(SPROJ_ERR_STARPU, "Proj: StarPU could not register the GPU array");
      goto fail;
    }
    st = a->ndim == 2 ? sproj_proj_register_tof_handle(&p, a->handle, l->h, (int)a->shape[1])
                      : sproj_proj_register_handle(&p, a->handle, l->h);
  } else if (a->ndim == 2) {
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
  SP_RELEASED_CHUNKS(o, co, st, sproj_proj_sync(h, c, chunk, mode));
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
    if (sp_arr_get(&o->arr[0], sigma_o, "sigma", SP_F32, 0, 1, want, 1) < 0)
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
      if (sp_arr_get(&o->arr[1], off_o, "center_offset", SP_F32, 0, 1, want, 1) < 0)
        goto fail;
      off = o->arr[1].ptr;
    }
  }
  sproj_tof *t = NULL;
  int st;
  if ((sigma && o->arr[0].gpu_devid >= 0) || (off && o->arr[1].gpu_devid >= 0)) {
    /* a per-LOR array on a GPU: both as StarPU vectors, each registered where it lives (a host one in main memory) */
    if (l->num_lors > UINT32_MAX) {
      PyErr_SetString(PyExc_ValueError, "sigma: too many LORs for a StarPU vector");
      goto fail;
    }
    if ((sigma && sp_arr_gpu_handle(&o->arr[0], (uint32_t)l->num_lors, sizeof(float)) < 0) ||
        (off && sp_arr_gpu_handle(&o->arr[1], (uint32_t)l->num_lors, sizeof(float)) < 0)) {
      sp_raise_msg(SPROJ_ERR_STARPU, "Tof: StarPU could not register the per-LOR arrays");
      goto fail;
    }
    starpu_data_handle_t hs = o->arr[0].handle, ho = o->arr[1].handle;
    void *lh = l->h;
    /* the library checks the values where they live: that may wait on the GPU */
    Py_BEGIN_ALLOW_THREADS
    st = sproj_tof_register_handles(&t, &par, lh, hs, ho);
    Py_END_ALLOW_THREADS
  } else {
    st = sproj_tof_register(&t, &par, (sigma || off) ? l->h : NULL, sigma, off);
  }
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

SP_TYPE(ProjSpec, "Proj", Proj_new,
        "Proj(lors, values)\n--\n\n"
        "A projection vector on lors: values float32 C-contiguous writable, shape (num_lors,) or (num_lors, "
        "num_tof_bins) for a TOF sinogram; used in place (no copy). Keeps its Lors and the array alive.",
        Proj_methods, Proj_getset)
SP_TYPE(TofSpec, "Tof", Tof_new,
        "Tof(num_bins, bin_width, sigma, num_sigmas=3.0, center_offset=0.0, lors=None)\n--\n\n"
        "TOF parameters. sigma and center_offset are numbers, or float32 arrays with one value per LOR of lors (host or "
        "GPU arrays).",
        Tof_methods, Tof_getset)

/* ======================================================================================================== */
/* projection calls                                                                                          */
/* ======================================================================================================== */

/* The projection calls, a row each: the Python name; PLAIN (image, proj, chunks=None, chunk=-1) or TOF (tof after
 * proj), which also says which of the two kinds of C calls the row names; the library's call for one chunk (or all)
 * and for a list of chunks; the docstring after the signature. Adding a call is adding a row. */
#define SP_PROJ_CALLS(X)                                                                                      \
  X(fwd, PLAIN, sproj_fwd, sproj_fwd_chunks,                                                                  \
    "Forward projection of a chunk (an int), a list of chunks (a sequence: one merged call) or every chunk; " \
    "overwrites proj's values there. Returns at once.")                                                       \
  X(back, PLAIN, sproj_back, sproj_back_chunks, "Back projection, ADDED to image. Returns at once.")          \
  X(fwd_tof_sino, TOF, sproj_fwd_tof_sino, sproj_fwd_tof_sino_chunks, "TOF-sinogram forward projection.")     \
  X(back_tof_sino, TOF, sproj_back_tof_sino, sproj_back_tof_sino_chunks, "TOF-sinogram back projection (added).") \
  X(fwd_tof_lm, TOF, sproj_fwd_tof_lm, sproj_fwd_tof_lm_chunks, "TOF listmode forward projection of events.") \
  X(back_tof_lm, TOF, sproj_back_tof_lm, sproj_back_tof_lm_chunks, "TOF listmode back projection (added).")

/* What a row's kind means: the argument names (the first nreq required), the signature in the docstring and the
 * fields of sp_proj_call that hold its C calls. */
static const char *const sp_args_plain[] = {"image", "proj", "chunks", "chunk"};
static const char *const sp_args_tof[] = {"image", "proj", "tof", "chunks", "chunk"};
#define SP_SIG_PLAIN "image, proj, chunks=None, chunk=-1"
#define SP_SIG_TOF "image, proj, tof, chunks=None, chunk=-1"
#define SP_ONE_PLAIN one
#define SP_LIST_PLAIN list
#define SP_ONE_TOF one_tof
#define SP_LIST_TOF list_tof

typedef struct {
  const char *name;
  int (*one)(sproj_image *, sproj_proj *, const sproj_chunks *, int);
  int (*list)(sproj_image *, sproj_proj *, const sproj_chunks *, const int *, int);
  int (*one_tof)(sproj_image *, sproj_proj *, const sproj_chunks *, int, const sproj_tof *);
  int (*list_tof)(sproj_image *, sproj_proj *, const sproj_chunks *, const int *, int, const sproj_tof *);
} sp_proj_call;

#define SP_CALL_ROW(name, kind, one_fn, list_fn, doc) {#name, .SP_ONE_##kind = one_fn, .SP_LIST_##kind = list_fn},
static const sp_proj_call sp_proj_calls[] = {SP_PROJ_CALLS(SP_CALL_ROW)};
#define SP_CALL_INDEX(name, ...) SP_CALL_##name,
enum { SP_PROJ_CALLS(SP_CALL_INDEX) SP_NUM_CALLS };

/* The one parser and dispatcher of every row: vectorcall arguments by the row's kind, the objects checked open and
 * marked busy, the chunk an int, a sequence (one call, which the library merges into few tasks) or None (all). */
static PyObject *sp_project(const sp_proj_call *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
  int has_tof = d->one_tof != NULL;
  PyObject *a[5];
  if (sp_fast_args(d->name, args, nargs, kwnames, has_tof ? sp_args_tof : sp_args_plain, has_tof ? 5 : 4,
                   has_tof ? 3 : 2, a) < 0)
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
      Py_ssize_t n = SP_FAST_SIZE(f);
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
        if (sp_as_int(SP_FAST_ITEM(f, k), "chunk", &list[k]) < 0) {
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
  if (list)
    st = has_tof ? d->list_tof(ih, ph, c, list, num, th) : d->list(ih, ph, c, list, num);
  else
    st = has_tof ? d->one_tof(ih, ph, c, chunk, th) : d->one(ih, ph, c, chunk);
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

/* A C function a row: a module function is told its module, not which row it was called as. */
#define SP_CALL_ENTRY(name, ...)                                                                              \
  static PyObject *sp_##name(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)         \
  {                                                                                                           \
    (void)m;                                                                                                  \
    return sp_project(&sp_proj_calls[SP_CALL_##name], args, nargs, kwnames);                                  \
  }
SP_PROJ_CALLS(SP_CALL_ENTRY)

#define SP_CALL_DEF(name, kind, one_fn, list_fn, doc)                                                          \
  {#name, (PyCFunction)(void (*)(void))sp_##name, METH_FASTCALL | METH_KEYWORDS,                              \
   #name "($module, " SP_SIG_##kind ")\n--\n\n" doc},
PyMethodDef sp_proj_methods[] = {SP_PROJ_CALLS(SP_CALL_DEF){NULL, NULL, 0, NULL}};
