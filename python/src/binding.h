/* binding.h: what the source files of starproj._core share: the array and object records and their helpers. */
#ifndef SPROJ_PY_BINDING_H
#define SPROJ_PY_BINDING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* T_PYSSIZET, READONLY: 3.11 has them there only */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <starpu.h>
#include <starproj.h>
#include <starproj_parallelproj.h>
#include <starproj_recon.h>

#include "dlpack_abi.h"

/* The files share these names, the process does not: only PyInit__core (PyMODINIT_FUNC says so) leaves the .so,
 * so that no sp_ name can meet another library's. */
#pragma GCC visibility push(hidden)

/* errors.c */

extern PyObject *sp_Error; /* starproj.Error, a RuntimeError with .status and .message */
PyObject *sp_raise(int status);
PyObject *sp_raise_msg(int status, const char *fmt, ...);

/* arrays.c */

enum sp_dtype { SP_F32, SP_I16, SP_I32, SP_I64 };

/* Most dimensions an array may have (parallelproj's LOR arrays may be (..., 3) of any shape). */
#define SP_MAX_NDIM 8

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
  Py_ssize_t shape[SP_MAX_NDIM];
  int gpu_devid;            /* CUDA device of a GPU array, else -1 */
  unsigned gpu_node;        /* StarPU memory node of that device */
  starpu_data_handle_t handle; /* our StarPU vector handle of a GPU array */
} sp_arr;

int sp_arr_get(sp_arr *a, PyObject *obj, const char *name, int dt, int writable, int ndim, const Py_ssize_t *want,
               int allow_gpu);
int sp_arr_gpu_handle(sp_arr *a, uint32_t nelem, size_t elemsize);
void sp_arr_release(sp_arr *a);
int sp_arr_read(const sp_arr *a, const char *name, void *dst, size_t bytes);

/* objects.c */

/* Kinds in the order shutdown closes them: users before what they use. */
enum sp_kind { K_RECON, K_MODEL, K_PROJ, K_CHUNKS, K_TOF, K_LORS, K_IMAGE, K_NKINDS };
extern const char *const sp_kind_name[];

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

extern sp_obj *sp_live; /* head of the list of open objects */
extern int sp_inflight; /* calls running with the GIL released */

/* The types of the kinds, made by module.c at import (heap types from PyType_Spec, as the limited API needs them),
 * indexed by kind; sp_type_specs holds their specs, each defined in its own file (image.c, lors.c, proj.c, recon.c). */
extern PyTypeObject *sp_types[K_NKINDS];
extern PyType_Spec *const sp_type_specs[K_NKINDS];
extern PyType_Spec ImageSpec, LorsSpec, ChunksSpec, ProjSpec, TofSpec, ModelSpec, ReconSpec;

sp_obj *sp_obj_new(int kind);
void sp_obj_opened(sp_obj *o, void *h);
void sp_obj_add_dep(sp_obj *o, PyObject *dep);
int sp_obj_close(sp_obj *o, int raise);
void sp_obj_finalize(PyObject *self);
void sp_obj_dealloc(PyObject *self);
void sp_free(PyObject *self);
sp_obj *sp_open(PyObject *obj, int kind, const char *argname);

/* methods and attributes every kind has, or several kinds share (idx: which array or dependency) */
PyObject *sp_close_meth(PyObject *self, PyObject *unused);
PyObject *sp_enter(PyObject *self, PyObject *unused);
PyObject *sp_exit(PyObject *self, PyObject *args);
PyObject *sp_get_closed(PyObject *self, void *unused);
PyObject *sp_get_array(PyObject *self, void *idx);
PyObject *sp_get_data_ptr(PyObject *self, void *idx);
PyObject *sp_get_gpu(PyObject *self, void *idx);
PyObject *sp_get_dep(PyObject *self, void *idx);

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

/* The same for a call on o and a chunking co (NULL: none), neither of which may be closed meanwhile. */
#define SP_RELEASED_CHUNKS(o, co, st, expr)                                                                   \
  do {                                                                                                        \
    if (co)                                                                                                   \
      (co)->busy++;                                                                                           \
    SP_RELEASED(o, st, expr);                                                                                 \
    if (co)                                                                                                   \
      (co)->busy--;                                                                                           \
  } while (0)

/* The spec of a kind of registered object's type (the type itself is made at import); extra: more slots, or nothing.
 * __weaklistoffset__ is how a spec gives weak references a place (Py_TPFLAGS_MANAGED_WEAKREF is 3.12's). */
#define SP_TYPE(var, pyname, newfn, doc, methods, getset, ...)                                              \
  static PyMemberDef var##_members[] = {                                                                    \
      {"__weaklistoffset__", T_PYSSIZET, offsetof(sp_obj, weakrefs), READONLY, NULL}, {NULL, 0, 0, 0, NULL}}; \
  static PyType_Slot var##_slots[] = {{Py_tp_doc, (void *)(doc)},                                            \
                                      {Py_tp_new, (void *)(newfn)},                                         \
                                      {Py_tp_dealloc, (void *)sp_obj_dealloc},                              \
                                      {Py_tp_finalize, (void *)sp_obj_finalize},                            \
                                      {Py_tp_methods, (void *)(methods)},                                   \
                                      {Py_tp_getset, (void *)(getset)},                                     \
                                      {Py_tp_members, (void *)var##_members},                               \
                                      __VA_ARGS__{0, NULL}};                                                \
  PyType_Spec var = {"starproj." pyname, sizeof(sp_obj), 0, Py_TPFLAGS_DEFAULT | SP_TPFLAGS_IMMUTABLE, var##_slots};

/* Under the limited API (the abi3 wheel: one for every CPython from 3.11) the few macros of the full API the files use
 * are functions; the full API keeps its macros (python/setup.py builds either). */
#ifdef Py_LIMITED_API
#define SP_TUPLE_SIZE(t) PyTuple_Size(t)
#define SP_TUPLE_ITEM(t, i) PyTuple_GetItem(t, i)
#define SP_FAST_SIZE(f) PySequence_Size(f)
#define SP_FAST_ITEM(f, i) (PyList_Check(f) ? PyList_GetItem(f, i) : PyTuple_GetItem(f, i))
#define SP_LIST_SET(l, i, v) PyList_SetItem(l, i, v)
#define SP_CALL1(f, a) PyObject_CallFunctionObjArgs(f, a, NULL)
#else
#define SP_TUPLE_SIZE(t) PyTuple_GET_SIZE(t)
#define SP_TUPLE_ITEM(t, i) PyTuple_GET_ITEM(t, i)
#define SP_FAST_SIZE(f) PySequence_Fast_GET_SIZE(f)
#define SP_FAST_ITEM(f, i) PySequence_Fast_GET_ITEM(f, i)
#define SP_LIST_SET(l, i, v) PyList_SET_ITEM(l, i, v)
#define SP_CALL1(f, a) PyObject_CallOneArg(f, a)
#endif
/* types that cannot be changed from Python (the flag is 3.10's, in the limited API from 3.10) */
#ifdef Py_TPFLAGS_IMMUTABLETYPE
#define SP_TPFLAGS_IMMUTABLE Py_TPFLAGS_IMMUTABLETYPE
#else
#define SP_TPFLAGS_IMMUTABLE 0
#endif

/* An exception naming an argument and the type of the object given: "<name>: <what>, got <type name>". */
PyObject *sp_type_error(PyObject *exc, const char *name, const char *what, PyObject *got);

/* args.c */

int sp_fast_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                 const char *const *names, int nnames, int nreq, PyObject **out);
int sp_as_int(PyObject *o, const char *name, int *out);
int64_t *sp_int64_list(PyObject *seq, const char *name, Py_ssize_t *n);
int *sp_int_list(PyObject *seq, const char *name, Py_ssize_t *n);
int sp_float3(PyObject *o, const char *name, float out[3]);
PyObject *sp_tuple3f(const float v[3]);
PyObject *sp_np_zeros(PyObject *shape, const char *dtype);
int sp_mode(PyObject *o, int *mode);
int sp_chunks_arg(PyObject *o, sproj_chunks **c, sp_obj **co);

/* lors.c */

PyObject *sp_move(PyObject *self, PyObject *args, PyObject *kw, int kind, int release);
PyObject *sp_chunks_wrap(sproj_chunks *c, PyObject *lors_o);

/* proj.c, scanner.c, parallelproj_core.c: module functions, added to the module by module.c */

extern PyMethodDef sp_proj_methods[];
extern PyMethodDef sp_pp_methods[];
extern PyMethodDef sp_host_methods[];
extern PyType_Spec ScannerSpec;

#pragma GCC visibility pop

#endif
