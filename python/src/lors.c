/* lors.c: starproj.Lors (a registered LOR set or listmode events) and starproj.Chunks (its chunkings). */
#include "binding.h"

/* ======================================================================================================== */
/* Lors                                                                                                     */
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
  /* endpoints (and bins) are only read; host arrays, or arrays on one GPU registered there as StarPU vectors */
  if (sp_arr_get(&o->arr[0], xs_o, "xstart", SP_F32, 0, 2, want, 1) < 0)
    goto fail;
  want[0] = o->arr[0].shape[0];
  if (sp_arr_get(&o->arr[1], xe_o, "xend", SP_F32, 0, 2, want, 1) < 0)
    goto fail;
  if (events && sp_arr_get(&o->arr[2], bins_o, "tof_bin", SP_I16, 0, 1, want, 1) < 0)
    goto fail;
  int g0 = o->arr[0].gpu_devid, g1 = o->arr[1].gpu_devid, g2 = events ? o->arr[2].gpu_devid : g0;
  if (g0 != g1 || g0 != g2) {
    PyErr_SetString(PyExc_ValueError, events ? "xstart, xend, tof_bin: all must live on the host or all on the same GPU"
                                             : "xstart, xend: both must live on the host or both on the same GPU");
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
        sp_arr_gpu_handle(&o->arr[1], (uint32_t)n, 3 * sizeof(float)) < 0 ||
        (events && sp_arr_gpu_handle(&o->arr[2], (uint32_t)n, sizeof(int16_t)) < 0)) {
      sp_raise_msg(SPROJ_ERR_STARPU, "Lors: StarPU could not register the GPU arrays");
      goto fail;
    }
    /* the library acquires the handles to check coordinates (and bins): that may wait on the GPU */
    starpu_data_handle_t hs = o->arr[0].handle, he = o->arr[1].handle, hb = events ? o->arr[2].handle : NULL;
    Py_BEGIN_ALLOW_THREADS
    st = hb ? sproj_lors_register_events_handles(&l, hs, he, hb) : sproj_lors_register_handles(&l, hs, he);
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
PyObject *sp_move(PyObject *self, PyObject *args, PyObject *kw, int kind, int release)
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
  if (kind == K_LORS)
    SP_RELEASED_CHUNKS(o, co, st, release ? sproj_lors_release(h, c, chunk, gpu) : sproj_lors_upload(h, c, chunk, gpu));
  else
    SP_RELEASED_CHUNKS(o, co, st, release ? sproj_proj_release(h, c, chunk, gpu) : sproj_proj_upload(h, c, chunk, gpu));
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
  sp_obj *o = sp_open(self, Py_TYPE(self) == sp_types[K_CHUNKS] ? K_CHUNKS : K_LORS, "self");
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

/* hold_order(voxel_size) / drop_order(): the order the library holds for listmode events (sproj_lors_hold_order) */
static PyObject *Lors_hold_order(PyObject *self, PyObject *args, PyObject *kw)
{
  static char *names[] = {"voxel_size", NULL};
  PyObject *vs_o;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O:hold_order", names, &vs_o))
    return NULL;
  sp_obj *o = sp_open(self, K_LORS, "self");
  float vs[3];
  if (!o || sp_float3(vs_o, "voxel_size", vs) < 0)
    return NULL;
  sproj_lors *l = o->h;
  int st;
  /* orders the events on every core and may wait for tasks that write them */
  Py_BEGIN_ALLOW_THREADS
  st = sproj_lors_hold_order(l, vs);
  Py_END_ALLOW_THREADS
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Lors_drop_order(PyObject *self, PyObject *unused)
{
  (void)unused;
  sp_obj *o = sp_open(self, K_LORS, "self");
  if (!o)
    return NULL;
  sproj_lors *l = o->h;
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_lors_drop_order(l);
  Py_END_ALLOW_THREADS
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyMethodDef Lors_methods[] = {
    {"hold_order", (PyCFunction)(void (*)(void))Lors_hold_order, METH_VARARGS | METH_KEYWORDS,
     "hold_order($self, voxel_size)\n--\n\nListmode events: the library keeps an ordered copy and projects the whole set "
     "in that order (faster on GPUs); values stay in the caller's order (sproj_lors_hold_order)."},
    {"drop_order", Lors_drop_order, METH_NOARGS,
     "drop_order($self)\n--\n\nFrees the order hold_order made (none: nothing to do)."},
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
PyObject *sp_chunks_wrap(sproj_chunks *c, PyObject *lors_o)
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
    SP_LIST_SET(list, i, t);
  }
  PyMem_Free(buf);
  return list;
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


SP_TYPE(LorsSpec, "Lors", Lors_new,
        "Lors(xstart, xend, tof_bin=None)\n--\n\n"
        "A registered LOR set: xstart, xend float32 C-contiguous (n, 3) (read only; used in place, kept alive). With "
        "tof_bin (int16, (n,)): listmode events carrying a TOF bin each. CuPy / PyTorch CUDA arrays (all on one GPU) "
        "are registered there.",
        Lors_methods, Lors_getset, {Py_sq_length, (void *)sp_len_lors},)
SP_TYPE(ChunksSpec, "Chunks", Chunks_new,
        "A chunking of a LOR set (made by Chunks.ranges / blocks / lists / strided or Scanner.chunks_*). len() is the "
        "number of chunks. Keeps its Lors alive.",
        Chunks_methods, Chunks_getset, {Py_sq_length, (void *)sp_len_lors},)
