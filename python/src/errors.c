/* errors.c: starproj.Error, raised from the library's status and message or from the binding's own checks. */
#include "binding.h"

PyObject *sp_Error; /* starproj.Error, a RuntimeError with .status and .message */

/* Turns a negative status into starproj.Error. The library keeps its message per thread, and the GIL is taken back
 * on the thread that made the call, so the message read here is the failing call's own. */
PyObject *sp_raise(int status)
{
  const char *msg = sproj_last_error();
  const char *name = sproj_strerror(status);
  if (!msg || !*msg)
    msg = name;
  PyObject *text = PyUnicode_FromFormat("%s [%s]", msg, name);
  if (!text)
    return NULL;
  PyObject *exc = SP_CALL1(sp_Error, text);
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
PyObject *sp_raise_msg(int status, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  PyObject *m = PyUnicode_FromFormatV(fmt, ap);
  va_end(ap);
  if (!m)
    return NULL;
  PyObject *text = PyUnicode_FromFormat("%U [%s]", m, sproj_strerror(status));
  PyObject *exc = text ? SP_CALL1(sp_Error, text) : NULL;
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
