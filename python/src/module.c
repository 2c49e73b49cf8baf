/* module.c: the module starproj._core: runtime calls (init, shutdown, waits, settings) and module set-up. */
#include "binding.h"

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
        Py_INCREF((PyObject *)o);
        int r = sp_obj_close(o, 1);
        Py_DECREF((PyObject *)o);
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
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "starproj._core",
                                        "The C extension of starproj (use the starproj package).", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void)
{
  PyObject *m = PyModule_Create(&module_def);
  if (!m)
    return NULL;
  /* the projection calls and the host helpers are listed where they are defined */
  if (PyModule_AddFunctions(m, sp_proj_methods) < 0 || PyModule_AddFunctions(m, sp_host_methods) < 0 ||
      PyModule_AddFunctions(m, sp_pp_methods) < 0)
    goto fail;
  /* heap types from their specs (the limited API has no static types); made once, kept for the process */
  for (int k = 0; k < K_NKINDS; k++) {
    if (!sp_types[k] && !(sp_types[k] = (PyTypeObject *)PyType_FromSpec(sp_type_specs[k])))
      goto fail;
    Py_INCREF((PyObject *)sp_types[k]);
    if (PyModule_AddObject(m, sp_kind_name[k], (PyObject *)sp_types[k]) < 0) {
      Py_DECREF((PyObject *)sp_types[k]);
      goto fail;
    }
  }
  PyObject *scanner = PyType_FromSpec(&ScannerSpec);
  if (!scanner || PyModule_AddObject(m, "Scanner", scanner) < 0) {
    Py_XDECREF(scanner);
    goto fail;
  }
  sp_Error = PyErr_NewExceptionWithDoc("starproj.Error",
                                       "A starproj call failed: .status is the library's negative status code, "
                                       ".message the text of sproj_last_error().",
                                       PyExc_RuntimeError, NULL);
  if (!sp_Error)
    goto fail;
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
#ifdef STARPU_USE_CUDA
  PyModule_AddIntConstant(m, "cuda_built", 1); /* StarPU (and so, the library) can drive GPUs */
#else
  PyModule_AddIntConstant(m, "cuda_built", 0);
#endif
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
fail:
  Py_DECREF(m);
  return NULL;
}
