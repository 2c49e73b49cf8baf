/* objects.c: what every registered object shares: open/close, the list shutdown closes, dependencies, attributes. */
#include "binding.h"

const char *const sp_kind_name[] = {"Recon", "Model", "Proj", "Chunks", "Tof", "Lors", "Image"};

sp_obj *sp_live; /* head of the list of open objects */
int sp_inflight; /* calls running with the GIL released */

PyTypeObject *sp_types[K_NKINDS];
PyType_Spec *const sp_type_specs[K_NKINDS] = {&ReconSpec, &ModelSpec, &ProjSpec, &ChunksSpec, &TofSpec, &LorsSpec,
                                              &ImageSpec};

sp_obj *sp_obj_new(int kind)
{
  sp_obj *o = (sp_obj *)PyType_GenericAlloc(sp_types[kind], 0);
  if (!o)
    return NULL;
  o->kind = kind;
  for (int i = 0; i < SP_MAX_ARRS; i++)
    o->arr[i].gpu_devid = -1;
  return o;
}

/* Marks o open with its library object h: links it and counts it as a user of its dependencies. */
void sp_obj_opened(sp_obj *o, void *h)
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

void sp_obj_add_dep(sp_obj *o, PyObject *dep)
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
int sp_obj_close(sp_obj *o, int raise)
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

/* Closes an object still open when it is collected. Also called by sp_obj_dealloc, with the object's count at 0: the
 * unraisable error then names no object (that would take a reference to it again). */
static void sp_obj_close_quietly(PyObject *self, PyObject *report_as)
{
  sp_obj *o = (sp_obj *)self;
  if (!o->h)
    return;
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  if (sp_obj_close(o, 1) < 0)
    PyErr_WriteUnraisable(report_as);
  PyErr_Restore(et, ev, tb);
}

void sp_obj_finalize(PyObject *self)
{
  sp_obj_close_quietly(self, self);
}

/* The types are not collected by the cycle collector, so nothing but this calls tp_finalize before the memory goes
 * (what PyObject_CallFinalizerFromDealloc, outside the limited API, would do). */
void sp_obj_dealloc(PyObject *self)
{
  sp_obj *o = (sp_obj *)self;
  sp_obj_close_quietly(self, NULL);
  if (o->weakrefs)
    PyObject_ClearWeakRefs(self);
  if (!o->h)
    sp_obj_drop(o);
  /* an object whose unregistration failed keeps its arrays exported (leaked) rather than let StarPU use freed memory */
  sp_free(self);
}

/* Frees an object of one of the module's heap types, which each instance holds a reference to. */
void sp_free(PyObject *self)
{
  PyTypeObject *type = Py_TYPE(self);
  freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
  tp_free(self);
  Py_DECREF(type);
}

PyObject *sp_type_error(PyObject *exc, const char *name, const char *what, PyObject *got)
{
  PyObject *tn = PyType_GetName(Py_TYPE(got));
  if (tn) {
    PyErr_Format(exc, "%s: %s, got %.100U", name, what, tn);
    Py_DECREF(tn);
  }
  return NULL;
}

/* The object, checked to be of the type and open; NULL with an exception otherwise. */
sp_obj *sp_open(PyObject *obj, int kind, const char *argname)
{
  if (!PyObject_TypeCheck(obj, sp_types[kind])) {
    char what[64];
    snprintf(what, sizeof(what), "expected starproj.%s", sp_kind_name[kind]);
    return (sp_obj *)sp_type_error(PyExc_TypeError, argname, what, obj);
  }
  sp_obj *o = (sp_obj *)obj;
  if (!o->h) {
    PyErr_Format(PyExc_ValueError, "%s: this %s is closed (closed explicitly, or by shutdown())", argname,
                 sp_kind_name[kind]);
    return NULL;
  }
  return o;
}

PyObject *sp_close_meth(PyObject *self, PyObject *unused)
{
  (void)unused;
  if (sp_obj_close((sp_obj *)self, 1) < 0)
    return NULL;
  Py_RETURN_NONE;
}

PyObject *sp_enter(PyObject *self, PyObject *unused)
{
  (void)unused;
  Py_INCREF(self);
  return self;
}

PyObject *sp_exit(PyObject *self, PyObject *args)
{
  (void)args;
  if (sp_obj_close((sp_obj *)self, 1) < 0)
    return NULL;
  Py_RETURN_FALSE;
}

PyObject *sp_get_closed(PyObject *self, void *unused)
{
  (void)unused;
  return PyBool_FromLong(((sp_obj *)self)->h == NULL);
}

PyObject *sp_get_array(PyObject *self, void *idx)
{
  sp_obj *o = (sp_obj *)self;
  PyObject *a = o->arr[(intptr_t)idx].owner;
  if (!a)
    Py_RETURN_NONE;
  Py_INCREF(a);
  return a;
}

PyObject *sp_get_data_ptr(PyObject *self, void *idx)
{
  sp_obj *o = (sp_obj *)self;
  sp_arr *a = &o->arr[(intptr_t)idx];
  if (!o->h || !a->ptr)
    Py_RETURN_NONE;
  return PyLong_FromVoidPtr(a->ptr);
}

PyObject *sp_get_gpu(PyObject *self, void *idx)
{
  sp_obj *o = (sp_obj *)self;
  int d = o->arr[(intptr_t)idx].gpu_devid;
  if (d < 0)
    Py_RETURN_NONE;
  return PyLong_FromLong(d);
}

PyObject *sp_get_dep(PyObject *self, void *idx)
{
  PyObject *d = ((sp_obj *)self)->deps[(intptr_t)idx];
  if (!d)
    Py_RETURN_NONE;
  Py_INCREF(d);
  return d;
}
