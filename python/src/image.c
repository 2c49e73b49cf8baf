/* image.c: starproj.Image, a registered image. */
#include "binding.h"

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
  SP_RELEASED(o, st, sproj_image_sync(h, mode));
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
  SP_RELEASED(o, st, release ? sproj_image_release(h, gpu) : sproj_image_upload(h, gpu));
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

SP_TYPE(ImageSpec, "Image", Image_new,
        "Image(array, voxel_size=(1, 1, 1), origin=(0, 0, 0))\n--\n\n"
        "A registered image: array is float32, C-contiguous, shape (n0, n1, n2), writable; its memory is used in place "
        "(no copy) and kept alive while registered. A CuPy / PyTorch CUDA array (DLPack) is registered on its GPU. "
        "origin is the centre of voxel (0, 0, 0). Read the array after sync(), modify it after sync('write'). "
        "close() / with / garbage collection unregister it.",
        Image_methods, Image_getset)
