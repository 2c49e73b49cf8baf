/* args.c: argument helpers: fast keyword parsing, ints, lists, 3-vectors, sync modes, the chunks argument. */
#include "binding.h"

/* Vectorcall argument parsing for the calls made in loops (projections, syncs): no tuple or dict is built. */
int sp_fast_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
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
    Py_ssize_t nk = SP_TUPLE_SIZE(kwnames);
    for (Py_ssize_t j = 0; j < nk; j++) {
      PyObject *key = SP_TUPLE_ITEM(kwnames, j);
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

int sp_as_int(PyObject *o, const char *name, int *out)
{
  long v = PyLong_AsLong(o);
  if (v == -1 && PyErr_Occurred()) {
    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      sp_type_error(PyExc_TypeError, name, "expected an int", o);
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
int64_t *sp_int64_list(PyObject *seq, const char *name, Py_ssize_t *n)
{
  PyObject *f = PySequence_Fast(seq, name);
  if (!f)
    return NULL;
  Py_ssize_t len = SP_FAST_SIZE(f);
  int64_t *v = PyMem_Malloc(sizeof(int64_t) * (size_t)(len ? len : 1));
  if (!v) {
    Py_DECREF(f);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    long long x = PyLong_AsLongLong(SP_FAST_ITEM(f, i));
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

int *sp_int_list(PyObject *seq, const char *name, Py_ssize_t *n)
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

int sp_float3(PyObject *o, const char *name, float out[3])
{
  PyObject *f = PySequence_Fast(o, name);
  if (!f)
    return -1;
  if (SP_FAST_SIZE(f) != 3) {
    Py_DECREF(f);
    PyErr_Format(PyExc_ValueError, "%s: expected 3 numbers", name);
    return -1;
  }
  for (int i = 0; i < 3; i++) {
    double d = PyFloat_AsDouble(SP_FAST_ITEM(f, i));
    if (d == -1.0 && PyErr_Occurred()) {
      Py_DECREF(f);
      return -1;
    }
    out[i] = (float)d;
  }
  Py_DECREF(f);
  return 0;
}

PyObject *sp_tuple3f(const float v[3])
{
  return Py_BuildValue("(ddd)", (double)v[0], (double)v[1], (double)v[2]);
}

/* A new zeroed NumPy array for calls that return arrays (numpy is imported when first needed, so that the extension
 * itself does not depend on NumPy's C API). */
PyObject *sp_np_zeros(PyObject *shape, const char *dtype)
{
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np)
    return NULL;
  PyObject *r = PyObject_CallMethod(np, "zeros", "Os", shape, dtype);
  Py_DECREF(np);
  return r;
}

/* Sync modes as the constants or as 'read' / 'write'. */
int sp_mode(PyObject *o, int *mode)
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
int sp_chunks_arg(PyObject *o, sproj_chunks **c, sp_obj **co)
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
