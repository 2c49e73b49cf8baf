/* parallelproj_core.c: libparallelproj's Python calls (its module parallelproj_core: joseph3d_fwd, ...) with their
 * arguments, checks and in-place outputs, each a one-shot starproj projection on the caller's arrays where they live. */
#include "binding.h"

#include <pthread.h>

/* ======================================================================================================== */
/* the calls                                                                                                 */
/* ======================================================================================================== */

/* Three argument lists, as libparallelproj's binding has them (the first nreq required, the rest with defaults). */
enum pp_kind { PP_NONTOF, PP_SINO, PP_LM };
static const char *const pp_args_nontof[] = {"lor_start", "lor_end", "image", "image_origin", "voxel_size",
                                             "projection_values", "device_id", "threads_per_block"};
static const char *const pp_args_sino[] = {"lor_start", "lor_end", "image", "image_origin", "voxel_size",
                                           "projection_values", "tof_bin_width", "tof_sigma", "tof_center_offset",
                                           "num_tof_bins", "num_sigmas", "device_id", "threads_per_block"};
static const char *const pp_args_lm[] = {"event_start", "event_end", "image", "image_origin", "voxel_size",
                                         "projection_values", "tof_bin_width", "tof_sigma", "tof_center_offset",
                                         "tof_bin_index", "num_tof_bins", "num_sigmas", "device_id",
                                         "threads_per_block"};
static const struct {
  const char *const *names;
  int nnames, nreq;
} pp_kinds[] = {{pp_args_nontof, 8, 6}, {pp_args_sino, 13, 10}, {pp_args_lm, 14, 11}};

/* Everything one call takes: its arrays (held as the binding holds any array, without a copy) and numbers. */
typedef struct {
  const char *name; /* joseph3d_... */
  int kind, back;
  sp_arr xs, xe, img, values, sigma, offset, bins;
  int have_sigma, have_offset, have_bins;
  int dims[3];
  float origin[3], voxel_size[3];
  struct sproj_tof_params tof;
  int sigma_per_lor, offset_per_lor;
  int64_t num_lors;
  int gpu; /* CUDA device of the arrays, or -1 for host memory */
} pp_call;

/* ======================================================================================================== */
/* arguments                                                                                                 */
/* ======================================================================================================== */

/* An array argument, refused as libparallelproj's binding refuses it: what its nanobind caster rejects (dtype,
 * order, a read-only output, the image's 3 dimensions, the 3 values of origin and voxel size) is a TypeError there,
 * so it is one here too; the library's own refusals (a GPU without a CUDA worker) stay starproj.Error. */
static int pp_arr(const pp_call *c, sp_arr *a, PyObject *obj, const char *arg, int dt, int writable, int ndim,
                  const Py_ssize_t *want)
{
  if (sp_arr_get(a, obj, arg, dt, writable, ndim, want, 1) == 0)
    return 0;
  if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_BufferError) ||
      PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyErr_Format(PyExc_TypeError, "%s(): %S", c->name, ev ? ev : Py_None);
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
  }
  return -1;
}

/* A Python int as libparallelproj's int / short parameters take it (no float, no overflow: TypeError there). */
static int pp_int(const pp_call *c, PyObject *o, const char *arg, long lo, long hi, long *out)
{
  PyObject *i = PyFloat_Check(o) ? NULL : PyNumber_Index(o);
  long v = i ? PyLong_AsLong(i) : -1;
  Py_XDECREF(i);
  if (!i || (v == -1 && PyErr_Occurred()) || v < lo || v > hi) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s(): %s: expected an int in [%ld, %ld], got %.100R", c->name, arg, lo, hi, o);
    return -1;
  }
  *out = v;
  return 0;
}

static int pp_float(const pp_call *c, PyObject *o, const char *arg, float *out)
{
  double v = PyFloat_AsDouble(o);
  if (v == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    char argname[80];
    snprintf(argname, sizeof(argname), "%s(): %s", c->name, arg);
    sp_type_error(PyExc_TypeError, argname, "expected a float", o);
    return -1;
  }
  *out = (float)v;
  return 0;
}

/* The CUDA device an array lives on (-1: host memory). */
static int pp_where(const sp_arr *a)
{
  return a->gpu_devid;
}

/* shape[:-1] of the LORs against an array's shape (its first nd dimensions). */
static int pp_same_lead(const sp_arr *lors, const sp_arr *a, int nd)
{
  if (nd != lors->ndim - 1)
    return 0;
  for (int i = 0; i < nd; i++)
    if (a->shape[i] != lors->shape[i])
      return 0;
  return 1;
}

/* A TOF parameter a already holds: one value (shape (1,)), read now, or one per LOR (the LORs' shape[:-1]; for
 * listmode (num_events,)), registered with them. */
static int pp_tof_param(pp_call *c, const sp_arr *a, const char *arg, float *scalar, int *per_lor)
{
  int lm = c->kind == PP_LM;
  *per_lor = !(a->ndim == 1 && a->shape[0] == 1);
  /* with values per LOR the scalar is their first, which the library checks like the others (as the C one-shot
   * calls do) */
  if (!*per_lor || (a->count > 0 && ((lm && a->ndim == 1 && a->shape[0] == c->num_lors) ||
                                     (!lm && pp_same_lead(&c->xs, a, a->ndim)))))
    return sp_arr_read(a, arg, scalar, sizeof(float));
  if (*per_lor && a->count == 0 && c->num_lors == 0)
    return 0; /* no LOR, nothing to read: the call does nothing */
  PyErr_Format(PyExc_ValueError, "%s(): %s must have shape (1,) (one value for every LOR) or %s (one per LOR)",
               c->name, arg, lm ? "(num_events,)" : "lor_start.shape[:-1]");
  return -1;
}

/* Takes and checks every argument; on failure an exception is set and whatever was taken is still in c (released by
 * the caller). The checks are libparallelproj's, in its order, so that a call it refuses is refused here with the
 * same exception type. */
static int pp_parse(pp_call *c, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
  PyObject *a[14];
  const int lm = c->kind == PP_LM, tof = c->kind != PP_NONTOF;
  if (sp_fast_args(c->name, args, nargs, kwnames, pp_kinds[c->kind].names, pp_kinds[c->kind].nnames,
                   pp_kinds[c->kind].nreq, a) < 0)
    return -1;
  const char *s_name = lm ? "event_start" : "lor_start", *e_name = lm ? "event_end" : "lor_end";
  const Py_ssize_t three[1] = {3};
  sp_arr origin, vs;
  memset(&origin, 0, sizeof origin);
  memset(&vs, 0, sizeof vs);
  int ret = -1;
  /* the arrays, as nanobind's casters would take them: float32 (int16 bins), C order, outputs writable */
  if (pp_arr(c, &c->xs, a[0], s_name, SP_F32, 0, -1, NULL) < 0 || pp_arr(c, &c->xe, a[1], e_name, SP_F32, 0, -1, NULL) < 0 ||
      pp_arr(c, &c->img, a[2], "image", SP_F32, c->back, 3, NULL) < 0 ||
      pp_arr(c, &origin, a[3], "image_origin", SP_F32, 0, 1, three) < 0 ||
      pp_arr(c, &vs, a[4], "voxel_size", SP_F32, 0, 1, three) < 0 ||
      pp_arr(c, &c->values, a[5], "projection_values", SP_F32, !c->back, -1, NULL) < 0)
    goto out;
  float bin_width = 0.0f, num_sigmas = 3.0f;
  long num_bins = 0, ignored;
  if (tof && pp_float(c, a[6], "tof_bin_width", &bin_width) < 0)
    goto out;
  int nb = lm ? 10 : 9; /* num_tof_bins */
  /* numbers before arrays' shapes, as the caster does all arguments before the call checks any shape */
  if (tof && (pp_int(c, a[nb], "num_tof_bins", -32768, 32767, &num_bins) < 0 ||
              (a[nb + 1] && pp_float(c, a[nb + 1], "num_sigmas", &num_sigmas) < 0)))
    goto out;
  int dev = tof ? nb + 2 : 6;
  if ((a[dev] && pp_int(c, a[dev], "device_id", INT_MIN, INT_MAX, &ignored) < 0) ||
      (a[dev + 1] && pp_int(c, a[dev + 1], "threads_per_block", INT_MIN, INT_MAX, &ignored) < 0))
    goto out;
  if (lm) {
    c->have_bins = 1;
    if (pp_arr(c, &c->bins, a[9], "tof_bin_index", SP_I16, 0, -1, NULL) < 0)
      goto out;
  }
  if (tof) {
    c->have_sigma = c->have_offset = 1;
    /* shapes checked below, once the LORs' are */
    if (pp_arr(c, &c->sigma, a[7], "tof_sigma", SP_F32, 0, -1, NULL) < 0 ||
        pp_arr(c, &c->offset, a[8], "tof_center_offset", SP_F32, 0, -1, NULL) < 0)
      goto out;
  }

  /* shapes: the LORs (..., 3), the values their shape[:-1] (and the TOF bins last); listmode events (n, 3) */
  sp_arr *xs = &c->xs, *xe = &c->xe, *v = &c->values;
  if (lm) {
    if (xs->ndim != 2 || xe->ndim != 2) {
      PyErr_Format(PyExc_ValueError, "%s(): event_start and event_end must have 2 dimensions", c->name);
      goto out;
    }
    if (xs->shape[1] != 3 || xe->shape[1] != 3) {
      PyErr_Format(PyExc_ValueError, "%s(): event_start and event_end must have shape (num_events, 3)", c->name);
      goto out;
    }
    if (xs->shape[0] != xe->shape[0]) {
      PyErr_Format(PyExc_ValueError, "%s(): event_start and event_end hold %zd and %zd events", c->name, xs->shape[0],
                   xe->shape[0]);
      goto out;
    }
    c->num_lors = xs->shape[0];
    if (v->ndim != 1 || v->shape[0] != c->num_lors) {
      PyErr_Format(PyExc_ValueError, "%s(): projection_values must have shape (num_events,) = (%lld,)", c->name,
                   (long long)c->num_lors);
      goto out;
    }
    if (c->bins.ndim != 1 || c->bins.shape[0] != c->num_lors) {
      PyErr_Format(PyExc_ValueError, "%s(): tof_bin_index must have shape (num_events,) = (%lld,)", c->name,
                   (long long)c->num_lors);
      goto out;
    }
  } else {
    if (xs->ndim < 2 || xs->shape[xs->ndim - 1] != 3) {
      PyErr_Format(PyExc_ValueError, "%s(): lor_start must have shape (..., 3) with at least 2 dimensions", c->name);
      goto out;
    }
    if (xe->ndim != xs->ndim || !pp_same_lead(xs, xe, xs->ndim - 1)) {
      PyErr_Format(PyExc_ValueError, "%s(): lor_start and lor_end must have the same shape", c->name);
      goto out;
    }
    if (!tof && (v->ndim != xs->ndim - 1 || !pp_same_lead(xs, v, v->ndim))) {
      PyErr_Format(PyExc_ValueError, "%s(): projection_values must have the shape lor_start.shape[:-1]", c->name);
      goto out;
    }
    if (tof) {
      if (v->ndim != xs->ndim || !pp_same_lead(xs, v, v->ndim - 1)) {
        PyErr_Format(PyExc_ValueError, "%s(): projection_values must have the shape lor_start.shape[:-1] + "
                     "(num_tof_bins,)", c->name);
        goto out;
      }
      if (v->shape[v->ndim - 1] != num_bins) {
        PyErr_Format(PyExc_ValueError, "%s(): the last dimension of projection_values (%zd) must equal num_tof_bins "
                     "(%ld)", c->name, v->shape[v->ndim - 1], num_bins);
        goto out;
      }
    }
    c->num_lors = 1;
    for (int i = 0; i < xs->ndim - 1; i++)
      c->num_lors *= xs->shape[i];
  }
  /* one device for all of them (libparallelproj leaves the TOF sigma and offset out of this check: so does this) */
  sp_arr *same[] = {xe, &c->img, &origin, &vs, v, &c->bins};
  for (int i = 0; i < (lm ? 6 : 5); i++)
    if (pp_where(same[i]) != pp_where(xs)) {
      PyErr_Format(PyExc_ValueError, "%s(): all input arrays must be on the same device (%s is on %s%d, %s on %s%d)",
                   c->name, s_name, pp_where(xs) < 0 ? "host " : "CUDA ", pp_where(xs),
                   (const char *[]){e_name, "image", "image_origin", "voxel_size", "projection_values",
                                    "tof_bin_index"}[i],
                   pp_where(same[i]) < 0 ? "host " : "CUDA ", pp_where(same[i]));
      goto out;
    }
  c->gpu = pp_where(xs);
  if (tof) {
    if (pp_tof_param(c, &c->sigma, "tof_sigma", &c->tof.sigma, &c->sigma_per_lor) < 0 ||
        pp_tof_param(c, &c->offset, "tof_center_offset", &c->tof.center_offset, &c->offset_per_lor) < 0)
      goto out;
    c->tof.bin_width = bin_width;
    c->tof.num_bins = (int)num_bins;
    c->tof.num_sigmas = num_sigmas;
  }
  for (int k = 0; k < 3; k++)
    c->dims[k] = c->img.shape[k] > INT_MAX ? INT_MAX : (int)c->img.shape[k];
  if (sp_arr_read(&origin, "image_origin", c->origin, sizeof c->origin) < 0 ||
      sp_arr_read(&vs, "voxel_size", c->voxel_size, sizeof c->voxel_size) < 0)
    goto out;
  ret = 0;
out:
  sp_arr_release(&origin);
  sp_arr_release(&vs);
  return ret;
}

/* ======================================================================================================== */
/* running a call                                                                                            */
/* ======================================================================================================== */

/* Where projections run is process-wide (sproj_set_devices): a call sets it for its own submission, under this lock,
 * and puts it back, so that calls on host arrays (CPU workers) and on GPU arrays (their GPU) from several threads
 * do not take each other's setting. Held for the submission only, not for the projection. */
static pthread_mutex_t pp_devices_lock = PTHREAD_MUTEX_INITIALIZER;

/* What a call registered, unregistered in reverse order at its end. */
typedef struct {
  sproj_image *img;
  sproj_lors *lors;
  sproj_proj *proj;
  sproj_tof *tof;
} pp_reg;

/* The binding's own failure (a StarPU vector it could not register), told apart from the library's statuses. */
#define PP_NO_HANDLE 1

/* The StarPU vector of an array: on its GPU (or, for a host array a call passes with GPU ones, in main memory). */
static int pp_handle(sp_arr *a, uint32_t n, size_t elemsize)
{
  return a->handle || sp_arr_gpu_handle(a, n, elemsize) == 0 ? 0 : PP_NO_HANDLE;
}

/* Registers the call's arrays where they live, submits its projection on the devices of its arrays and waits for it
 * (the unregistrations wait). Runs without the GIL; returns 0, a library status, or PP_NO_HANDLE. */
static int pp_run(pp_call *c)
{
  pp_reg r = {0};
  const int gpu = c->gpu >= 0, lm = c->kind == PP_LM, sino = c->kind == PP_SINO;
  const uint32_t n = (uint32_t)c->num_lors;
  int st;
  /* image, LORs (listmode: with their bins), values: pointers for host arrays, StarPU vectors for GPU ones */
  if (gpu) {
    st = pp_handle(&c->img, (uint32_t)(c->img.count), sizeof(float));
    if (!st)
      st = sproj_image_register_handle(&r.img, c->img.handle, c->dims, c->voxel_size, c->origin);
    if (!st)
      st = pp_handle(&c->xs, n, 3 * sizeof(float));
    if (!st)
      st = pp_handle(&c->xe, n, 3 * sizeof(float));
    if (!st && lm)
      st = pp_handle(&c->bins, n, sizeof(int16_t));
    /* listmode bins as libparallelproj takes them: any int16 (see the TOF parameters' convention below) */
    if (!st)
      st = lm ? sproj_lors_register_events_handles_convention(&r.lors, c->xs.handle, c->xe.handle, c->bins.handle,
                                                              SPROJ_TOF_CONVENTION_PARALLELPROJ)
              : sproj_lors_register_handles(&r.lors, c->xs.handle, c->xe.handle);
    if (!st)
      st = pp_handle(&c->values, n, (size_t)(sino ? c->tof.num_bins : 1) * sizeof(float));
    if (!st)
      st = sino ? sproj_proj_register_tof_handle(&r.proj, c->values.handle, r.lors, c->tof.num_bins)
                : sproj_proj_register_handle(&r.proj, c->values.handle, r.lors);
  } else {
    st = sproj_image_register(&r.img, c->img.ptr, c->dims, c->voxel_size, c->origin);
    if (!st)
      st = lm ? sproj_lors_register_events_convention(&r.lors, c->xs.ptr, c->xe.ptr, c->bins.ptr, (int64_t)n,
                                                      SPROJ_TOF_CONVENTION_PARALLELPROJ)
              : sproj_lors_register(&r.lors, c->xs.ptr, c->xe.ptr, (int64_t)n);
    if (!st)
      st = sino ? sproj_proj_register_tof(&r.proj, c->values.ptr, r.lors, c->tof.num_bins)
                : sproj_proj_register(&r.proj, c->values.ptr, r.lors);
  }
  /* TOF parameters: per-LOR arrays by pointer when on the host, as StarPU vectors when one of them is on a GPU */
  if (!st && c->kind != PP_NONTOF) {
    sp_arr *sigma = c->sigma_per_lor ? &c->sigma : NULL, *offset = c->offset_per_lor ? &c->offset : NULL;
    if ((sigma && sigma->gpu_devid >= 0) || (offset && offset->gpu_devid >= 0)) {
      if (sigma)
        st = pp_handle(sigma, n, sizeof(float));
      if (!st && offset)
        st = pp_handle(offset, n, sizeof(float));
      if (!st)
        st = sproj_tof_register_handles(&r.tof, &c->tof, r.lors, sigma ? sigma->handle : NULL,
                                        offset ? offset->handle : NULL);
    } else {
      st = sproj_tof_register(&r.tof, &c->tof, sigma || offset ? r.lors : NULL, sigma ? sigma->ptr : NULL,
                              offset ? offset->ptr : NULL);
    }
    /* libparallelproj's numbers: its centre offset along the principal axis, its listmode normalisation and its
     * listmode bins outside 0 .. num_tof_bins-1 */
    if (!st)
      st = sproj_tof_set_convention(r.tof, SPROJ_TOF_CONVENTION_PARALLELPROJ);
  }
  if (!st) {
    unsigned want = gpu ? SPROJ_DEVICE_CUDA : SPROJ_DEVICE_CPU;
    pthread_mutex_lock(&pp_devices_lock);
    unsigned before = sproj_get_devices();
    /* no worker of the kind wanted (a runtime started without CPU workers): the projection runs where it can */
    int changed = before != want && sproj_set_devices(want) == SPROJ_OK;
    switch (c->kind) {
    case PP_NONTOF:
      st = c->back ? sproj_back(r.img, r.proj, NULL, SPROJ_ALL_CHUNKS) : sproj_fwd(r.img, r.proj, NULL, SPROJ_ALL_CHUNKS);
      break;
    case PP_SINO:
      st = c->back ? sproj_back_tof_sino(r.img, r.proj, NULL, SPROJ_ALL_CHUNKS, r.tof)
                   : sproj_fwd_tof_sino(r.img, r.proj, NULL, SPROJ_ALL_CHUNKS, r.tof);
      break;
    default:
      st = c->back ? sproj_back_tof_lm(r.img, r.proj, NULL, SPROJ_ALL_CHUNKS, r.tof)
                   : sproj_fwd_tof_lm(r.img, r.proj, NULL, SPROJ_ALL_CHUNKS, r.tof);
      break;
    }
    if (changed) {
      /* work the library held back to merge with later calls goes out now, with this call's devices */
      sproj_flush();
      sproj_set_devices(before);
    }
    pthread_mutex_unlock(&pp_devices_lock);
  }
  /* waits for the projection; a failure here is reported unless an earlier one is */
  int u;
  if (r.tof && (u = sproj_tof_unregister(r.tof)) && !st)
    st = u;
  if (r.proj && (u = sproj_proj_unregister(r.proj)) && !st)
    st = u;
  if (r.lors && (u = sproj_lors_unregister(r.lors)) && !st)
    st = u;
  if (r.img && (u = sproj_image_unregister(r.img)) && !st)
    st = u;
  return st;
}

static void pp_release(pp_call *c)
{
  sp_arr *all[] = {&c->xs, &c->xe, &c->img, &c->values, &c->sigma, &c->offset, &c->bins};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    sp_arr_release(all[i]);
}

/* One call: arguments, then the projection without the GIL, then the arrays given back. */
static PyObject *pp_call_run(const char *name, int kind, int back, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
  pp_call c;
  memset(&c, 0, sizeof c);
  c.name = name;
  c.kind = kind;
  c.back = back;
  c.gpu = -1;
  sp_arr *all[] = {&c.xs, &c.xe, &c.img, &c.values, &c.sigma, &c.offset, &c.bins};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    all[i]->gpu_devid = -1;
  /* libparallelproj needs no set-up call: starproj starts on the first projection, with its defaults (every GPU and
   * the CPU cores they leave), and stops at exit */
  if (!sproj_is_initialized()) {
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = sproj_init(NULL);
    Py_END_ALLOW_THREADS
    if (st && !sproj_is_initialized())
      return sp_raise(st);
  }
  if (pp_parse(&c, args, nargs, kwnames) < 0) {
    pp_release(&c);
    return NULL;
  }
  if (c.num_lors > (int64_t)UINT32_MAX) {
    pp_release(&c);
    return sp_raise_msg(SPROJ_ERR_OVERFLOW, "%s(): %lld LORs: at most 2^32-1 in one call", name, (long long)c.num_lors);
  }
  int st = 0;
  if (c.num_lors > 0) { /* no LOR: nothing to do, as in libparallelproj */
    sp_inflight++;
    Py_BEGIN_ALLOW_THREADS
    st = pp_run(&c);
    Py_END_ALLOW_THREADS
    sp_inflight--;
  }
  if (st == PP_NO_HANDLE)
    sp_raise_msg(SPROJ_ERR_STARPU, "%s(): StarPU could not register a GPU array", name);
  else if (st)
    sp_raise(st);
  pp_release(&c);
  if (st)
    return NULL;
  Py_RETURN_NONE;
}

/* The six calls, a row each: name, argument list, direction, and the docstring after the signature. */
#define PP_SIG_NONTOF "lor_start, lor_end, image, image_origin, voxel_size, projection_values, device_id=0, " \
                      "threads_per_block=64"
#define PP_SIG_SINO "lor_start, lor_end, image, image_origin, voxel_size, projection_values, tof_bin_width, " \
                    "tof_sigma, tof_center_offset, num_tof_bins, num_sigmas=3.0, device_id=0, threads_per_block=64"
#define PP_SIG_LM "event_start, event_end, image, image_origin, voxel_size, projection_values, tof_bin_width, " \
                  "tof_sigma, tof_center_offset, tof_bin_index, num_tof_bins, num_sigmas=3.0, device_id=0, " \
                  "threads_per_block=64"
#define PP_CALLS(X)                                                                                           \
  X(joseph3d_fwd, NONTOF, 0, "Forward projection into projection_values (overwritten), shape lor_start.shape[:-1].") \
  X(joseph3d_back, NONTOF, 1, "Back projection of projection_values, ADDED to image.")                        \
  X(joseph3d_tof_sino_fwd, SINO, 0,                                                                           \
    "TOF-sinogram forward projection into projection_values (overwritten), shape lor_start.shape[:-1] + "     \
    "(num_tof_bins,). tof_sigma and tof_center_offset: shape (1,) (every LOR) or lor_start.shape[:-1].")      \
  X(joseph3d_tof_sino_back, SINO, 1, "TOF-sinogram back projection, ADDED to image.")                         \
  X(joseph3d_tof_lm_fwd, LM, 0,                                                                               \
    "TOF listmode forward projection of events (num_events, 3) in bins tof_bin_index (int16; any bin, those "  \
    "outside 0 .. num_tof_bins-1 beyond the ends as in libparallelproj) into projection_values (num_events,), " \
    "overwritten.")                                                                                           \
  X(joseph3d_tof_lm_back, LM, 1, "TOF listmode back projection, ADDED to image.")

#define PP_DOC_TAIL                                                                                           \
  "\n\nlibparallelproj's call of the same name, with its arguments, on starproj: NumPy (or any buffer) arrays are "   \
  "projected on CPU workers, CUDA arrays (CuPy, PyTorch: DLPack) on the GPU that holds them, in place (no copy). "   \
  "device_id and threads_per_block are accepted and ignored. Returns when done; the GIL is released meanwhile."
#define PP_ENTRY(name, kind, back, doc)                                                                       \
  static PyObject *pp_##name(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)         \
  {                                                                                                           \
    (void)m;                                                                                                  \
    return pp_call_run(#name, PP_##kind, back, args, nargs, kwnames);                                         \
  }
PP_CALLS(PP_ENTRY)

#define PP_DEF(name, kind, back, doc)                                                                         \
  {#name, (PyCFunction)(void (*)(void))pp_##name, METH_FASTCALL | METH_KEYWORDS,                              \
   #name "($module, " PP_SIG_##kind ")\n--\n\n" doc PP_DOC_TAIL},
PyMethodDef sp_pp_methods[] = {PP_CALLS(PP_DEF){NULL, NULL, 0, NULL}};
