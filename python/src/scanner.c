/* scanner.c: starproj.Scanner (host-only geometry) and the host helpers (LOR order, reorder, TOF bins). */
#include "binding.h"

typedef struct {
  PyObject_HEAD
  sproj_scanner *s;
  struct sproj_sinogram_info info;
} ScannerObject;

static PyObject *Scanner_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
  static char *names[] = {"preset", "num_modules", "detectors_per_module", "detector_pitch", "radius", "num_rings",
                          "ring_z", "num_radial_bins", "max_ring_difference", "order", "segment_sequence", NULL};
  const char *preset = "small";
  struct sproj_scanner_params p;
  memset(&p, 0, sizeof(p));
  int nm = -1, dpm = -1, nr = -1, nrb = -1, mrd = -2, order = -1, seq = -1;
  double pitch = -1, radius = -1;
  PyObject *ring_z = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|siiddiOiiii:Scanner", names, &preset, &nm, &dpm, &pitch, &radius, &nr,
                                   &ring_z, &nrb, &mrd, &order, &seq))
    return NULL;
  int st = sproj_scanner_preset(preset, &p);
  if (st)
    return sp_raise(st);
  /* the preset's values, with each field given overriding it */
  if (nm >= 0) p.num_modules = nm;
  if (dpm >= 0) p.detectors_per_module = dpm;
  if (pitch >= 0) p.detector_pitch = pitch;
  if (radius >= 0) p.radius = radius;
  if (nr >= 0) p.num_rings = nr;
  if (nrb >= 0) p.num_radial_bins = nrb;
  if (mrd >= -1)
    p.max_ring_difference = mrd;
  else if (nr >= 0)
    p.max_ring_difference = -1; /* the presets take every ring pair: so does a preset with other rings */
  if (order >= 0) p.order = order;
  if (seq >= 0) p.segment_sequence = seq;
  if (ring_z != Py_None) {
    PyObject *f = PySequence_Fast(ring_z, "ring_z: expected a sequence of numbers");
    if (!f)
      return NULL;
    Py_ssize_t n = SP_FAST_SIZE(f);
    if (n > SPROJ_MAX_RINGS) {
      Py_DECREF(f);
      PyErr_SetString(PyExc_ValueError, "ring_z: too many rings");
      return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
      p.ring_z[i] = PyFloat_AsDouble(SP_FAST_ITEM(f, i));
      if (PyErr_Occurred()) {
        Py_DECREF(f);
        return NULL;
      }
    }
    Py_DECREF(f);
    if (nr < 0)
      p.num_rings = (int)n;
  } else if (nr >= 0 && nr != 0) {
    /* rings given without positions: evenly spaced at the preset's ring distance, centred on 0 */
    double dz = p.ring_z[1] - p.ring_z[0];
    for (int i = 0; i < nr && i < SPROJ_MAX_RINGS; i++)
      p.ring_z[i] = (i - 0.5 * (nr - 1)) * dz;
  }
  ScannerObject *self = (ScannerObject *)PyType_GenericAlloc(type, 0);
  if (!self)
    return NULL;
  st = sproj_scanner_create(&self->s, &p);
  if (st) {
    Py_DECREF(self);
    return sp_raise(st);
  }
  sproj_scanner_info(self->s, &self->info);
  return (PyObject *)self;
}

static void Scanner_dealloc(PyObject *o)
{
  ScannerObject *s = (ScannerObject *)o;
  sproj_scanner_destroy(s->s);
  sp_free(o);
}

static PyObject *Scanner_info(PyObject *self, PyObject *u)
{
  (void)u;
  struct sproj_sinogram_info *i = &((ScannerObject *)self)->info;
  return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:L,s:L}", "num_detectors", i->num_detectors, "num_rings",
                       i->num_rings, "num_views", i->num_views, "num_radial_bins", i->num_radial_bins,
                       "max_ring_difference", i->max_ring_difference, "num_segments", i->num_segments, "num_planes",
                       i->num_planes, "lors_per_view", (long long)i->lors_per_view, "num_lors",
                       (long long)i->num_lors);
}

static PyObject *Scanner_params(PyObject *self, PyObject *u)
{
  (void)u;
  struct sproj_scanner_params p;
  sproj_scanner_params(((ScannerObject *)self)->s, &p);
  PyObject *rz = PyList_New(p.num_rings);
  for (int i = 0; rz && i < p.num_rings; i++)
    SP_LIST_SET(rz, i, PyFloat_FromDouble(p.ring_z[i]));
  if (!rz)
    return NULL;
  return Py_BuildValue("{s:i,s:i,s:d,s:d,s:i,s:N,s:i,s:i,s:i,s:i}", "num_modules", p.num_modules,
                       "detectors_per_module", p.detectors_per_module, "detector_pitch", p.detector_pitch, "radius",
                       p.radius, "num_rings", p.num_rings, "ring_z", rz, "num_radial_bins", p.num_radial_bins,
                       "max_ring_difference", p.max_ring_difference, "order", p.order, "segment_sequence",
                       p.segment_sequence);
}

static PyObject *Scanner_lors_into(PyObject *self, PyObject *args)
{
  PyObject *xs_o, *xe_o;
  if (!PyArg_ParseTuple(args, "OO:lors_into", &xs_o, &xe_o))
    return NULL;
  ScannerObject *s = (ScannerObject *)self;
  Py_ssize_t want[2] = {(Py_ssize_t)s->info.num_lors, 3};
  sp_arr a, b;
  if (sp_arr_get(&a, xs_o, "xstart", SP_F32, 1, 2, want, 0) < 0)
    return NULL;
  if (sp_arr_get(&b, xe_o, "xend", SP_F32, 1, 2, want, 0) < 0) {
    sp_arr_release(&a);
    return NULL;
  }
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_scanner_lors(s->s, a.ptr, b.ptr, 0);
  Py_END_ALLOW_THREADS
  sp_arr_release(&a);
  sp_arr_release(&b);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *Scanner_pair_lors_into(PyObject *self, PyObject *args)
{
  PyObject *p_o, *xs_o, *xe_o;
  if (!PyArg_ParseTuple(args, "OOO:pair_lors_into", &p_o, &xs_o, &xe_o))
    return NULL;
  ScannerObject *s = (ScannerObject *)self;
  Py_ssize_t wp[2] = {-1, 4};
  sp_arr p, a, b;
  if (sp_arr_get(&p, p_o, "pairs", SP_I32, 0, 2, wp, 0) < 0)
    return NULL;
  Py_ssize_t want[2] = {p.shape[0], 3};
  if (sp_arr_get(&a, xs_o, "xstart", SP_F32, 1, 2, want, 0) < 0) {
    sp_arr_release(&p);
    return NULL;
  }
  if (sp_arr_get(&b, xe_o, "xend", SP_F32, 1, 2, want, 0) < 0) {
    sp_arr_release(&p);
    sp_arr_release(&a);
    return NULL;
  }
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_scanner_pair_lors(s->s, want[0], p.ptr, a.ptr, b.ptr);
  Py_END_ALLOW_THREADS
  sp_arr_release(&p);
  sp_arr_release(&a);
  sp_arr_release(&b);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

/* (xstart, xend): two new (n, 3) float32 arrays filled by into, called with (pairs, xstart, xend), or (xstart, xend)
 * where pairs is NULL, so that the arrays are checked and filled by the same code as the caller's own. */
static PyObject *sp_new_lors(PyObject *self, long long n, PyObject *pairs, PyObject *(*into)(PyObject *, PyObject *))
{
  PyObject *shape = Py_BuildValue("(Li)", n, 3);
  PyObject *xs = shape ? sp_np_zeros(shape, "float32") : NULL;
  PyObject *xe = xs ? sp_np_zeros(shape, "float32") : NULL;
  Py_XDECREF(shape);
  PyObject *r = NULL;
  if (xe) {
    PyObject *args = pairs ? PyTuple_Pack(3, pairs, xs, xe) : PyTuple_Pack(2, xs, xe);
    PyObject *ok = args ? into(self, args) : NULL;
    Py_XDECREF(args);
    if (ok) {
      Py_DECREF(ok);
      r = PyTuple_Pack(2, xs, xe);
    }
  }
  Py_XDECREF(xs);
  Py_XDECREF(xe);
  return r;
}

static PyObject *Scanner_lors(PyObject *self, PyObject *u)
{
  (void)u;
  return sp_new_lors(self, (long long)((ScannerObject *)self)->info.num_lors, NULL, Scanner_lors_into);
}

static PyObject *Scanner_pair_lors(PyObject *self, PyObject *pairs)
{
  Py_ssize_t n = PyObject_Length(pairs);
  if (n < 0)
    return NULL;
  return sp_new_lors(self, (long long)n, pairs, Scanner_pair_lors_into);
}

static PyObject *Scanner_lor_index(PyObject *self, PyObject *args)
{
  int v, seg, ax, rad;
  if (!PyArg_ParseTuple(args, "iiii:lor_index", &v, &seg, &ax, &rad))
    return NULL;
  int64_t lor;
  int st = sproj_scanner_lor_index(((ScannerObject *)self)->s, v, seg, ax, rad, &lor);
  if (st)
    return sp_raise(st);
  return PyLong_FromLongLong(lor);
}

static PyObject *Scanner_chunks(PyObject *self, PyObject *args, int which)
{
  PyObject *lors_o;
  int n = 0;
  if (!PyArg_ParseTuple(args, which == 2 ? "Oi:chunks_subsets" : "O:chunks", &lors_o, &n))
    return NULL;
  sp_obj *l = sp_open(lors_o, K_LORS, "lors");
  if (!l)
    return NULL;
  sproj_chunks *c = NULL;
  sproj_scanner *s = ((ScannerObject *)self)->s;
  int st;
  void *lh = l->h;
  SP_RELEASED(l, st,
              which == 0   ? sproj_scanner_chunks_views(&c, s, lh)
              : which == 1 ? sproj_scanner_chunks_viewgrams(&c, s, lh)
                           : sproj_scanner_chunks_subsets(&c, s, lh, n));
  if (st)
    return sp_raise(st);
  return sp_chunks_wrap(c, lors_o);
}

static PyObject *Scanner_chunks_views(PyObject *self, PyObject *args)
{
  return Scanner_chunks(self, args, 0);
}

static PyObject *Scanner_chunks_viewgrams(PyObject *self, PyObject *args)
{
  return Scanner_chunks(self, args, 1);
}

static PyObject *Scanner_chunks_subsets(PyObject *self, PyObject *args)
{
  return Scanner_chunks(self, args, 2);
}

static PyMethodDef Scanner_methods[] = {
    {"info", Scanner_info, METH_NOARGS, "info($self)\n--\n\nSinogram sizes as a dict (views, radial bins, planes, LORs...)."},
    {"params", Scanner_params, METH_NOARGS, "params($self)\n--\n\nThe scanner's parameters as a dict."},
    {"lors_into", Scanner_lors_into, METH_VARARGS,
     "lors_into($self, xstart, xend, /)\n--\n\nFills (num_lors, 3) float32 arrays with every LOR of the sinogram, in its order."},
    {"pair_lors_into", Scanner_pair_lors_into, METH_VARARGS,
     "pair_lors_into($self, pairs, xstart, xend, /)\n--\n\npairs: (n, 4) int32 (ring_a, det_a, ring_b, det_b); fills the LORs."},
    {"lors", Scanner_lors, METH_NOARGS, "lors($self)\n--\n\n(xstart, xend): every LOR of the sinogram as new (num_lors, 3) arrays."},
    {"pair_lors", Scanner_pair_lors, METH_O,
     "pair_lors($self, pairs, /)\n--\n\n(xstart, xend) of detector pairs given as (n, 4) int32 (ring_a, det_a, ring_b, det_b)."},
    {"lor_index", Scanner_lor_index, METH_VARARGS, "lor_index($self, view, segment, axial, radial, /)\n--\n\nLOR index."},
    {"chunks_views", Scanner_chunks_views, METH_VARARGS, "chunks_views($self, lors, /)\n--\n\nChunks: one per view."},
    {"chunks_viewgrams", Scanner_chunks_viewgrams, METH_VARARGS,
     "chunks_viewgrams($self, lors, /)\n--\n\nChunks: one per (view, segment)."},
    {"chunks_subsets", Scanner_chunks_subsets, METH_VARARGS,
     "chunks_subsets($self, lors, num_subsets, /)\n--\n\nChunks: subset t = views t, t + num_subsets, ..."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot Scanner_slots[] = {
    {Py_tp_doc, (void *)"Scanner(preset='small', **fields)\n--\n\n"
                        "A cylindrical scanner (rings of polygons of modules): a preset ('small', 'vision600') with "
                        "fields overridden (num_modules, detectors_per_module, detector_pitch, radius, num_rings, "
                        "ring_z, num_radial_bins, max_ring_difference, order, segment_sequence). Host-only: needs no "
                        "init()."},
    {Py_tp_new, (void *)Scanner_new},
    {Py_tp_dealloc, (void *)Scanner_dealloc},
    {Py_tp_methods, (void *)Scanner_methods},
    {0, NULL}};

PyType_Spec ScannerSpec = {"starproj.Scanner", sizeof(ScannerObject), 0, Py_TPFLAGS_DEFAULT | SP_TPFLAGS_IMMUTABLE,
                           Scanner_slots};

/* ======================================================================================================== */
/* host helpers                                                                                              */
/* ======================================================================================================== */

static PyObject *sp_lors_order_into(PyObject *m, PyObject *args)
{
  (void)m;
  PyObject *xs_o, *xe_o, *vs_o, *out_o;
  if (!PyArg_ParseTuple(args, "OOOO:lors_order_into", &xs_o, &xe_o, &vs_o, &out_o))
    return NULL;
  float vs[3];
  if (sp_float3(vs_o, "voxel_size", vs) < 0)
    return NULL;
  sp_arr a, b, o;
  Py_ssize_t w[2] = {-1, 3};
  if (sp_arr_get(&a, xs_o, "xstart", SP_F32, 0, 2, w, 0) < 0)
    return NULL;
  w[0] = a.shape[0];
  if (sp_arr_get(&b, xe_o, "xend", SP_F32, 0, 2, w, 0) < 0) {
    sp_arr_release(&a);
    return NULL;
  }
  if (sp_arr_get(&o, out_o, "out", SP_I64, 1, 1, w, 0) < 0) {
    sp_arr_release(&a);
    sp_arr_release(&b);
    return NULL;
  }
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = sproj_lors_order(a.ptr, b.ptr, w[0], vs, o.ptr);
  Py_END_ALLOW_THREADS
  sp_arr_release(&a);
  sp_arr_release(&b);
  sp_arr_release(&o);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

static PyObject *sp_lors_order(PyObject *m, PyObject *args)
{
  PyObject *xs_o, *xe_o, *vs_o;
  if (!PyArg_ParseTuple(args, "OOO:lors_order", &xs_o, &xe_o, &vs_o))
    return NULL;
  Py_ssize_t n = PyObject_Length(xs_o);
  if (n < 0)
    return NULL;
  PyObject *shape = Py_BuildValue("(n)", n);
  PyObject *out = shape ? sp_np_zeros(shape, "int64") : NULL;
  Py_XDECREF(shape);
  if (!out)
    return NULL;
  PyObject *a = Py_BuildValue("(OOOO)", xs_o, xe_o, vs_o, out);
  PyObject *ok = a ? sp_lors_order_into(m, a) : NULL;
  Py_XDECREF(a);
  if (!ok) {
    Py_DECREF(out);
    return NULL;
  }
  Py_DECREF(ok);
  return out;
}

static PyObject *sp_reorder(PyObject *m, PyObject *args)
{
  (void)m;
  PyObject *arr_o, *order_o;
  if (!PyArg_ParseTuple(args, "OO:reorder", &arr_o, &order_o))
    return NULL;
  sp_arr ord;
  if (sp_arr_get(&ord, order_o, "order", SP_I64, 0, 1, NULL, 0) < 0)
    return NULL;
  Py_buffer v;
  /* any C-contiguous writable array whose first dimension runs over the elements */
  if (PyObject_GetBuffer(arr_o, &v, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0) {
    sp_arr_release(&ord);
    return NULL;
  }
  PyObject *res = NULL;
  if (v.ndim < 1 || v.shape[0] != ord.count) {
    PyErr_SetString(PyExc_ValueError, "array: dimension 0 must have as many elements as order");
  } else {
    size_t eb = ord.count ? (size_t)(v.len / ord.count) : 1;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = sproj_reorder(v.buf, eb, ord.count, ord.ptr);
    Py_END_ALLOW_THREADS
    if (st)
      sp_raise(st);
    else {
      Py_INCREF(Py_None);
      res = Py_None;
    }
  }
  PyBuffer_Release(&v);
  sp_arr_release(&ord);
  return res;
}

static PyObject *sp_tof_bins_from_centered(PyObject *m, PyObject *args)
{
  (void)m;
  PyObject *in_o, *out_o;
  int nb, rev = 0;
  if (!PyArg_ParseTuple(args, "OOi|p:tof_bins_from_centered", &in_o, &out_o, &nb, &rev))
    return NULL;
  sp_arr a, b;
  if (sp_arr_get(&a, in_o, "centered", SP_I16, 0, 1, NULL, 0) < 0)
    return NULL;
  Py_ssize_t w[1] = {a.count};
  if (sp_arr_get(&b, out_o, "out", SP_I16, 1, 1, w, 0) < 0) {
    sp_arr_release(&a);
    return NULL;
  }
  int st = sproj_tof_bins_from_centered(a.count, a.ptr, b.ptr, nb, rev);
  sp_arr_release(&a);
  sp_arr_release(&b);
  if (st)
    return sp_raise(st);
  Py_RETURN_NONE;
}

PyMethodDef sp_host_methods[] = {
    {"lors_order", sp_lors_order, METH_VARARGS,
     "lors_order($module, xstart, xend, voxel_size, /)\n--\n\nsproj_lors_order: a new int64 permutation that makes projections faster."},
    {"lors_order_into", sp_lors_order_into, METH_VARARGS,
     "lors_order_into($module, xstart, xend, voxel_size, out, /)\n--\n\nsproj_lors_order into out (int64, (n,))."},
    {"reorder", sp_reorder, METH_VARARGS,
     "reorder($module, array, order, /)\n--\n\nIn place: element i of array (along dimension 0) becomes the old element order[i]."},
    {"tof_bins_from_centered", sp_tof_bins_from_centered, METH_VARARGS,
     "tof_bins_from_centered($module, centered, out, num_bins, reverse=False, /)\n--\n\nCentred TOF bin numbers -> 0..num_bins-1."},
    {NULL, NULL, 0, NULL}};
