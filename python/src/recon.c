/* recon.c: starproj.Model and starproj.Recon (ML-EM / OS-EM on the library's reconstruction API). */
#include "binding.h"
#include <math.h>

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
  Py_ssize_t ns = SP_FAST_SIZE(f), total = 0;
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
    items[s] = PySequence_Fast(SP_FAST_ITEM(f, s), name);
    if (!items[s]) {
      for (Py_ssize_t k = 0; k < s; k++)
        Py_DECREF(items[k]);
      PyMem_Free(*sizes);
      PyMem_Free(items);
      Py_DECREF(f);
      return -1;
    }
    (*sizes)[s] = (int)SP_FAST_SIZE(items[s]);
    total += (*sizes)[s];
  }
  *flat = PyMem_Malloc(sizeof(int) * (size_t)(total ? total : 1));
  int ok = *flat != NULL;
  Py_ssize_t k = 0;
  for (Py_ssize_t s = 0; s < ns; s++) {
    for (Py_ssize_t j = 0; ok && j < (*sizes)[s]; j++)
      ok = sp_as_int(SP_FAST_ITEM(items[s], j), name, &(*flat)[k++]) == 0;
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
  static char *names[] = {"image",      "model",       "chunks",        "data",         "num_subsets", "subsets",
                          "sens_model", "sens_chunks", "sens_subsets",  "objective",    "max_ratio",
                          "small_fraction", NULL};
  PyObject *img_o, *model_o, *chunks_o, *data_o = Py_None, *subsets_o = Py_None, *smodel_o = Py_None,
                                         *schunks_o = Py_None, *ssubsets_o = Py_None;
  int num_subsets = 1, objective = 0;
  float max_ratio = 0.0f, small_fraction = 0.0f;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|OiOOOOpff:Recon", names, &img_o, &model_o, &chunks_o, &data_o,
                                   &num_subsets, &subsets_o, &smodel_o, &schunks_o, &ssubsets_o, &objective,
                                   &max_ratio, &small_fraction))
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
  cfg.max_ratio = max_ratio;
  cfg.small_fraction = small_fraction;
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
  PyObject *r = d ? SP_CALL1(cb->fn, d) : NULL;
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

/* The objective function's pieces (starproj_recon.h): images are starproj.Image objects of the reconstruction's
 * geometry; each call is submitted as tasks (sync an image to read it) with the GIL released. */
static sp_obj *image_or_none(PyObject *o, const char *name, int none_ok)
{
  if (none_ok && o == Py_None)
    return NULL;
  return sp_open(o, K_IMAGE, name);
}

static PyObject *Recon_gradient(PyObject *self, PyObject *args, PyObject *kw)
{
  static char *names[] = {"subset", "x", "grad", "add_sensitivity", NULL};
  int subset, add = 0;
  PyObject *x_o, *g_o;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "iOO|p:gradient", names, &subset, &x_o, &g_o, &add))
    return NULL;
  sp_obj *o = sp_open(self, K_RECON, "self"), *x = o ? image_or_none(x_o, "x", 0) : NULL;
  sp_obj *g = x ? image_or_none(g_o, "grad", 0) : NULL;
  if (!g)
    return NULL;
  int st;
  SP_RELEASED(o, st, sproj_recon_gradient(o->h, subset, x->h, g->h, add ? SPROJ_GRADIENT_ADD_SENSITIVITY : 0));
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Recon_hessian_times(PyObject *self, PyObject *args, PyObject *kw)
{
  static char *names[] = {"subset", "x", "v", "out", "approximate", NULL};
  int subset, approx = 0;
  PyObject *x_o, *v_o, *out_o;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "iOOO|p:hessian_times", names, &subset, &x_o, &v_o, &out_o, &approx))
    return NULL;
  sp_obj *o = sp_open(self, K_RECON, "self");
  if (!o)
    return NULL;
  sp_obj *x = image_or_none(x_o, "x", 1);
  if (!x && (x_o != Py_None || PyErr_Occurred()))
    return NULL;
  sp_obj *v = image_or_none(v_o, "v", 0), *out = v ? image_or_none(out_o, "out", 0) : NULL;
  if (!out)
    return NULL;
  int st;
  SP_RELEASED(o, st, sproj_recon_hessian_times(o->h, subset, x ? x->h : NULL, v->h, out->h,
                                               approx ? SPROJ_HESSIAN_APPROXIMATE : 0));
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Recon_subset_objective(PyObject *self, PyObject *args, PyObject *kw)
{
  static char *names[] = {"subset", "x", NULL};
  int subset;
  PyObject *x_o = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "i|O:subset_objective", names, &subset, &x_o))
    return NULL;
  sp_obj *o = sp_open(self, K_RECON, "self");
  if (!o)
    return NULL;
  sp_obj *x = x_o == Py_None ? (sp_obj *)o->deps[0] : image_or_none(x_o, "x", 0);
  if (!x)
    return NULL;
  double v = 0;
  int st;
  SP_RELEASED(o, st, sproj_recon_subset_objective(o->h, subset, x->h, &v));
  if (st)
    return sp_raise(st);
  return PyFloat_FromDouble(v);
}

static PyObject *Recon_update(PyObject *self, PyObject *args, PyObject *kw)
{
  static char *names[] = {"subset", "x", "work", "lo", "hi", NULL};
  int subset;
  double lo = 0.0, hi = INFINITY;
  PyObject *x_o, *w_o;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "iOO|dd:update", names, &subset, &x_o, &w_o, &lo, &hi))
    return NULL;
  sp_obj *o = sp_open(self, K_RECON, "self"), *x = o ? image_or_none(x_o, "x", 0) : NULL;
  sp_obj *w = x ? image_or_none(w_o, "work", 0) : NULL;
  if (!w)
    return NULL;
  int st;
  SP_RELEASED(o, st, sproj_recon_update(o->h, subset, x->h, w->h, (float)lo, (float)hi));
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyMethodDef Recon_methods[] = {
    {"iterate", (PyCFunction)(void (*)(void))Recon_iterate, METH_VARARGS | METH_KEYWORDS,
     "iterate($self, num_iterations=1, callback=None)\n--\n\nRuns iterations (continuing). Without a callback it returns once the "
     "work is submitted (the image is current after image.sync()). With one, callback(progress: dict) runs after each "
     "iteration with the image current in its array; a true return value stops. Releases the GIL."},
    {"objective", Recon_objective, METH_NOARGS, "objective($self)\n--\n\nPoisson negative log-likelihood of the current image."},
    {"sensitivity", Recon_sensitivity, METH_O, "sensitivity($self, subset, /)\n--\n\nsubset's sensitivity image as a new array."},
    {"gradient", (PyCFunction)(void (*)(void))Recon_gradient, METH_VARARGS | METH_KEYWORDS,
     "gradient($self, subset, x, grad, add_sensitivity=False)\n--\n\nInto the Image grad: the gradient of subset's "
     "Poisson log-likelihood at the Image x (with add_sensitivity, without the sensitivity term). Asynchronous."},
    {"hessian_times", (PyCFunction)(void (*)(void))Recon_hessian_times, METH_VARARGS | METH_KEYWORDS,
     "hessian_times($self, subset, x, v, out, approximate=False)\n--\n\nInto the Image out: the Hessian of subset's "
     "negative log-likelihood at the Image x times the Image v (approximate: the data's approximation; x may be "
     "None). Asynchronous."},
    {"subset_objective", (PyCFunction)(void (*)(void))Recon_subset_objective, METH_VARARGS | METH_KEYWORDS,
     "subset_objective($self, subset, x=None)\n--\n\nPoisson negative log-likelihood of subset (-1: all) at the "
     "Image x (None: the reconstruction's image)."},
    {"update", (PyCFunction)(void (*)(void))Recon_update, METH_VARARGS | METH_KEYWORDS,
     "update($self, subset, x, work, lo=0.0, hi=inf)\n--\n\nOne OSMAPOSL update of the Image x with subset and "
     "its sensitivity, the relative change bounded to [lo, hi]; work receives the gradient plus sensitivity. "
     "Asynchronous."},
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


SP_TYPE(ModelSpec, "Model", Model_new,
        "Model(lors, mult=None, add=None, tof=None, fwhm=None)\n--\n\n"
        "Forward model ybar = mult * A(G x) + add on lors (float32 arrays, host, kept alive); tof selects the TOF "
        "sinogram or listmode projector; fwhm (3 numbers) a Gaussian resolution model.",
        Model_methods, Model_getset)
SP_TYPE(ReconSpec, "Recon", Recon_new,
        "Recon(image, model, chunks, data=None, num_subsets=1, subsets=None, sens_model=None, sens_chunks=None, "
        "sens_subsets=None, objective=False)\n--\n\n"
        "ML-EM / OS-EM of image (updated in place) with model; data: a Proj of counts (None: listmode, one count per "
        "event, then sens_model is required). subsets: list of lists of chunk indices (default: chunk c in subset "
        "c % num_subsets). Computes the sensitivities at creation.",
        Recon_methods, Recon_getset)
