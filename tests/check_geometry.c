/* SPDX-License-Identifier: Apache-2.0 */
/* check_geometry.c: scanner presets and sinogram layouts (counts, indices, LOR endpoints against an independent
 * double-precision polygon), chunkings of a scanner's sinogram, chunks of several ranges in projections, TOF bin
 * numberings, detector pairs, an order of events for locality, and the status of bad arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define PI 3.14159265358979323846

/* Check's ck_assert records a mark point (a write) per call, which costs minutes over millions of per-LOR checks:
 * these fail the same way and cost nothing while they hold. */
#define REQUIRE(expr)                                                                                           \
  do {                                                                                                          \
    if (!(expr))                                                                                                \
      ck_abort_msg("Assertion '%s' failed", #expr);                                                             \
  } while (0)
#define REQUIRE_MSG(expr, ...)                                                                                  \
  do {                                                                                                          \
    if (!(expr))                                                                                                \
      ck_abort_msg(__VA_ARGS__);                                                                                \
  } while (0)
#define REQUIRE_EQ(a, b)                                                                                        \
  do {                                                                                                          \
    long long a_ = (a), b_ = (b);                                                                               \
    if (a_ != b_)                                                                                               \
      ck_abort_msg("Assertion '%s == %s' failed: %lld != %lld", #a, #b, a_, b_);                                \
  } while (0)

static const int orders[3] = {SPROJ_ORDER_VIEW_SEGMENT, SPROJ_ORDER_SEGMENT_VIEW, SPROJ_ORDER_SEGMENT_AXIAL};

static sproj_scanner *make(const char *preset, int max_rd, int order, int seq)
{
  struct sproj_scanner_params p;
  sproj_scanner *sc;
  REQUIRE_EQ(sproj_scanner_preset(preset, &p), SPROJ_OK);
  p.max_ring_difference = max_rd;
  p.order = order;
  p.segment_sequence = seq;
  REQUIRE_MSG(sproj_scanner_create(&sc, &p) == SPROJ_OK, "%s", sproj_last_error());
  return sc;
}

static struct sproj_sinogram_info info_of(const sproj_scanner *sc)
{
  struct sproj_sinogram_info in;
  REQUIRE_EQ(sproj_scanner_info(sc, &in), SPROJ_OK);
  return in;
}

/* ---- an independent reference: the polygon from its vertices, indices from their definitions -------------- */
struct ref {
  int modules, per_module, rings, nrad, max_rd, order;
  double pitch, radius, z[SPROJ_MAX_RINGS];
};

static struct ref ref_of(const sproj_scanner *sc)
{
  struct sproj_scanner_params p;
  REQUIRE_EQ(sproj_scanner_params(sc, &p), SPROJ_OK);
  struct ref r = {p.num_modules, p.detectors_per_module, p.num_rings, p.num_radial_bins, p.max_ring_difference,
                  p.order, p.detector_pitch, p.radius, {0}};
  memcpy(r.z, p.ring_z, sizeof r.z);
  return r;
}

/* Detector d: on the edge of module m between the polygon's vertices at angles (2m -+ 1) pi / M (circumradius
 * R / cos(pi / M)), at its offset from the edge's midpoint. */
static void ref_detector(const struct ref *r, int d, double *x, double *y)
{
  int m = d / r->per_module, i = d % r->per_module;
  double rc = r->radius / cos(PI / r->modules);
  double a0 = (2 * m - 1) * PI / r->modules, a1 = (2 * m + 1) * PI / r->modules;
  double x0 = rc * cos(a0), y0 = rc * sin(a0), x1 = rc * cos(a1), y1 = rc * sin(a1);
  double len = hypot(x1 - x0, y1 - y0), off = (i - (r->per_module - 1) / 2.0) * r->pitch;
  *x = 0.5 * (x0 + x1) + off * (x1 - x0) / len;
  *y = 0.5 * (y0 + y1) + off * (y1 - y0) / len;
}

/* Endpoints of (view, segment, axial, radial): d1 = view + floor(j/2), d2 = d1 + D/2 - j (mod D). */
static void ref_lor(const struct ref *r, int v, int s, int a, int k, double xs[3], double xe[3])
{
  int ndet = r->modules * r->per_module, j = k - r->nrad / 2;
  int d1 = ((v + (int)floor(j / 2.0)) % ndet + ndet) % ndet;
  int d2 = ((d1 + ndet / 2 - j) % ndet + ndet) % ndet;
  int r1 = s >= 0 ? a : a - s, r2 = r1 + s;
  ref_detector(r, d1, &xs[0], &xs[1]);
  ref_detector(r, d2, &xe[0], &xe[1]);
  xs[2] = r->z[r1];
  xe[2] = r->z[r2];
}

/* Index with segments ascending, from the order's definition. */
static int64_t ref_index(const struct ref *r, int v, int s, int a, int k)
{
  int64_t nviews = r->modules * r->per_module / 2, before = 0, planes = 0;
  for (int t = -r->max_rd; t <= r->max_rd; t++) {
    if (t < s)
      before += r->rings - abs(t);
    planes += r->rings - abs(t);
  }
  int64_t np = r->rings - abs(s);
  if (r->order == SPROJ_ORDER_VIEW_SEGMENT)
    return ((v * planes) + before + a) * r->nrad + k;
  if (r->order == SPROJ_ORDER_SEGMENT_VIEW)
    return (before * nviews + v * np + a) * r->nrad + k;
  return ((before + a) * nviews + v) * r->nrad + k;
}

static double dist3(const float *f, const double *d)
{
  return sqrt((f[0] - d[0]) * (f[0] - d[0]) + (f[1] - d[1]) * (f[1] - d[1]) + (f[2] - d[2]) * (f[2] - d[2]));
}

/* ---- counts ------------------------------------------------------------------------------------------- */
/* Planes with |ring difference| <= m: sum over s of (R - |s|) = R (2m + 1) - m (m + 1). */
static int64_t planes_for(int rings, int m)
{
  return (int64_t)rings * (2 * m + 1) - (int64_t)m * (m + 1);
}

START_TEST(test_counts)
{
  sproj_scanner *sc = make("small", -1, 0, 0);
  struct sproj_sinogram_info in = info_of(sc);
  REQUIRE_EQ(in.num_detectors, 128);
  REQUIRE_EQ(in.num_views, 64);
  REQUIRE_EQ(in.num_radial_bins, 65);
  REQUIRE_EQ(in.num_segments, 15);
  REQUIRE_EQ(in.num_planes, 64);
  REQUIRE_EQ(in.num_lors, 266240);
  sproj_scanner_destroy(sc);

  sc = make("vision600", -1, 0, 0);
  in = info_of(sc);
  REQUIRE_EQ(in.num_detectors, 544);
  REQUIRE_EQ(in.num_views, 272);
  REQUIRE_EQ(in.num_radial_bins, 415);
  REQUIRE_EQ(in.num_segments, 71);
  REQUIRE_EQ(in.num_planes, 1296);
  REQUIRE_EQ(in.lors_per_view, 1296 * 415);
  REQUIRE(in.num_lors == 146292480LL);
  /* the preset's rings: 5.31556 mm apart within a block of 9, 2.8 mm more between blocks, centred on 0 */
  struct sproj_scanner_params p;
  REQUIRE_EQ(sproj_scanner_params(sc, &p), SPROJ_OK);
  double sum = 0.0;
  for (int r = 0; r < 36; r++) {
    sum += p.ring_z[r];
    if (r > 0)
      REQUIRE(fabs(p.ring_z[r] - p.ring_z[r - 1] - (r % 9 ? 5.31556 : 5.31556 + 2.8)) < 1e-9);
  }
  REQUIRE(fabs(sum) < 1e-9);
  REQUIRE(fabs(p.radius - 380.56) < 1e-9);
  sproj_scanner_destroy(sc);

  /* ring-difference limits: segments, planes and per-segment planes */
  const int small_m[] = {0, 1, 3, 7}, vision_m[] = {0, 10, 35};
  for (int i = 0; i < 4; i++) {
    sc = make("small", small_m[i], 0, 0);
    in = info_of(sc);
    REQUIRE_EQ(in.num_segments, 2 * small_m[i] + 1);
    REQUIRE_EQ(in.num_planes, planes_for(8, small_m[i]));
    REQUIRE(in.num_lors == 64 * 65 * planes_for(8, small_m[i]));
    for (int s = -small_m[i]; s <= small_m[i]; s++) {
      int np = -1;
      REQUIRE_EQ(sproj_scanner_segment_planes(sc, s, &np), SPROJ_OK);
      REQUIRE_EQ(np, 8 - abs(s));
    }
    sproj_scanner_destroy(sc);
  }
  for (int i = 0; i < 3; i++) {
    sc = make("vision600", vision_m[i], 0, 0);
    REQUIRE(info_of(sc).num_lors == 272LL * 415 * planes_for(36, vision_m[i]));
    sproj_scanner_destroy(sc);
  }
}
END_TEST

/* ---- indices ------------------------------------------------------------------------------------------ */
/* Every (view, segment, axial, radial) of the small scanner (max ring difference 5) in every order and segment
 * sequence: index inside the sinogram, each index exactly once, position(index) gives the tuple back, and with
 * ascending segments the index is the one of the order's definition. In the zero-first sequences the first planes
 * of view 0 are segment 0, then +1 / -1. Vision600: 20000 random tuples round trip in every order. */
START_TEST(test_index_round_trip)
{
  for (int o = 0; o < 3; o++)
    for (int seq = 0; seq < 3; seq++) {
      sproj_scanner *sc = make("small", 5, orders[o], seq);
      struct sproj_sinogram_info in = info_of(sc);
      struct ref r = ref_of(sc);
      char *seen = calloc(in.num_lors, 1);
      int64_t n = 0;
      for (int v = 0; v < in.num_views; v++)
        for (int s = -5; s <= 5; s++)
          for (int a = 0; a < 8 - abs(s); a++)
            for (int k = 0; k < in.num_radial_bins; k++, n++) {
              int64_t i = -1;
              int v2, s2, a2, k2;
              REQUIRE_EQ(sproj_scanner_lor_index(sc, v, s, a, k, &i), SPROJ_OK);
              REQUIRE(i >= 0 && i < in.num_lors);
              REQUIRE_MSG(!seen[i], "index %lld twice", (long long)i);
              seen[i] = 1;
              if (seq == SPROJ_SEGMENTS_ASCENDING)
                REQUIRE(i == ref_index(&r, v, s, a, k));
              REQUIRE_EQ(sproj_scanner_lor_position(sc, i, &v2, &s2, &a2, &k2), SPROJ_OK);
              REQUIRE_MSG(v2 == v && s2 == s && a2 == a && k2 == k, "order %d seq %d: (%d %d %d %d) -> %lld -> "
                            "(%d %d %d %d)", orders[o], seq, v, s, a, k, (long long)i, v2, s2, a2, k2);
            }
      REQUIRE(n == in.num_lors);
      if (seq != SPROJ_SEGMENTS_ASCENDING && orders[o] == SPROJ_ORDER_VIEW_SEGMENT) {
        int v, s, a, k;
        REQUIRE_EQ(sproj_scanner_lor_position(sc, 0, &v, &s, &a, &k), SPROJ_OK);
        REQUIRE_EQ(s, 0);
        REQUIRE_EQ(sproj_scanner_lor_position(sc, 8 * 65, &v, &s, &a, &k), SPROJ_OK);
        REQUIRE_EQ(s, seq == SPROJ_SEGMENTS_ZERO_PLUS ? 1 : -1);
      }
      free(seen);
      sproj_scanner_destroy(sc);
    }
  tu_seed(5);
  for (int o = 0; o < 3; o++) {
    sproj_scanner *sc = make("vision600", -1, orders[o], SPROJ_SEGMENTS_ZERO_MINUS);
    for (int t = 0; t < 20000; t++) {
      int v = tu_randint(0, 271), s = tu_randint(-35, 35), a = tu_randint(0, 35 - abs(s)), k = tu_randint(0, 414);
      int v2, s2, a2, k2;
      int64_t i;
      REQUIRE_EQ(sproj_scanner_lor_index(sc, v, s, a, k, &i), SPROJ_OK);
      REQUIRE_EQ(sproj_scanner_lor_position(sc, i, &v2, &s2, &a2, &k2), SPROJ_OK);
      REQUIRE(v2 == v && s2 == s && a2 == a && k2 == k);
    }
    sproj_scanner_destroy(sc);
  }
}
END_TEST

/* ---- endpoints ---------------------------------------------------------------------------------------- */
/* Every endpoint lies on the detector polygon: on the side of the module it faces (normal distance = radius), inside
 * the module's width, at a ring's z; 1e-4 mm (float rounding of coordinates up to 381 mm is 2e-5 mm). */
static void check_on_polygon(const struct ref *r, const float *x, int64_t n)
{
  double half_width = 0.5 * r->per_module * r->pitch, *c = malloc(r->modules * sizeof *c),
         *sn = malloc(r->modules * sizeof *sn);
  for (int m = 0; m < r->modules; m++) {
    c[m] = cos(2 * PI * m / r->modules);
    sn[m] = sin(2 * PI * m / r->modules);
  }
  for (int64_t i = 0; i < n; i++) {
    const float *p = x + 3 * i;
    double best = -1e300, tang = 0.0;
    for (int m = 0; m < r->modules; m++) {
      double normal = p[0] * c[m] + p[1] * sn[m];
      if (normal > best) {
        best = normal;
        tang = -p[0] * sn[m] + p[1] * c[m];
      }
    }
    REQUIRE_MSG(fabs(best - r->radius) < 1e-4, "point %lld at %.6f from the axis", (long long)i, best);
    REQUIRE_MSG(fabs(tang) < half_width, "point %lld %.6f along its module", (long long)i, tang);
    double dz = 1e300;
    for (int k = 0; k < r->rings; k++)
      dz = fmin(dz, fabs(p[2] - r->z[k]));
    REQUIRE_MSG(dz < 1e-4, "point %lld z %.6f is on no ring", (long long)i, p[2]);
  }
  free(c);
  free(sn);
}

/* The whole small sinogram in every order, and 4 views plus 20000 random LORs of vision600, equal the independent
 * double-precision reference to 1e-4 mm (float rounding: 2e-5 mm), and lie on the polygon. */
START_TEST(test_lors_reference)
{
  for (int o = 0; o < 3; o++) {
    sproj_scanner *sc = make("small", -1, orders[o], 0);
    struct sproj_sinogram_info in = info_of(sc);
    struct ref r = ref_of(sc);
    float *xs = tu_alloc(3 * in.num_lors), *xe = tu_alloc(3 * in.num_lors);
    REQUIRE_EQ(sproj_scanner_lors(sc, xs, xe, o + 1), SPROJ_OK);
    double worst = 0.0;
    for (int v = 0; v < in.num_views; v++)
      for (int s = -7; s <= 7; s++)
        for (int a = 0; a < 8 - abs(s); a++)
          for (int k = 0; k < in.num_radial_bins; k++) {
            double ds[3], de[3];
            int64_t i = ref_index(&r, v, s, a, k);
            ref_lor(&r, v, s, a, k, ds, de);
            worst = fmax(worst, fmax(dist3(xs + 3 * i, ds), dist3(xe + 3 * i, de)));
          }
    REQUIRE_MSG(worst < 1e-4, "order %d: %.3g mm from the reference", orders[o], worst);
    check_on_polygon(&r, xs, in.num_lors);
    check_on_polygon(&r, xe, in.num_lors);
    free(xs);
    free(xe);
    sproj_scanner_destroy(sc);
  }

  sproj_scanner *sc = make("vision600", -1, 0, 0);
  struct sproj_sinogram_info in = info_of(sc);
  struct ref r = ref_of(sc);
  const int views[4] = {0, 1, 137, 271};
  int64_t n = 4 * in.lors_per_view;
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n);
  REQUIRE_EQ(sproj_scanner_view_lors(sc, views, 4, xs, xe, 2), SPROJ_OK);
  double worst = 0.0;
  int64_t i = 0;
  for (int e = 0; e < 4; e++)
    for (int s = -35; s <= 35; s++)
      for (int a = 0; a < 36 - abs(s); a++)
        for (int k = 0; k < 415; k++, i++) {
          double ds[3], de[3];
          ref_lor(&r, views[e], s, a, k, ds, de);
          worst = fmax(worst, fmax(dist3(xs + 3 * i, ds), dist3(xe + 3 * i, de)));
        }
  REQUIRE_MSG(worst < 1e-4, "vision600 views: %.3g mm from the reference", worst);
  check_on_polygon(&r, xs, n);
  check_on_polygon(&r, xe, n);
  enum { M = 20000 };
  int64_t *lor = malloc(M * sizeof *lor);
  tu_seed(17);
  for (int t = 0; t < M; t++)
    lor[t] = (int64_t)tu_uniform(0, (double)in.num_lors);
  REQUIRE_EQ(sproj_scanner_lors_at(sc, M, lor, xs, xe), SPROJ_OK);
  for (int t = 0; t < M; t++) {
    int v, s, a, k;
    double ds[3], de[3];
    REQUIRE_EQ(sproj_scanner_lor_position(sc, lor[t], &v, &s, &a, &k), SPROJ_OK);
    ref_lor(&r, v, s, a, k, ds, de);
    REQUIRE(dist3(xs + 3 * t, ds) < 1e-4 && dist3(xe + 3 * t, de) < 1e-4);
  }
  free(lor);
  free(xs);
  free(xe);
  sproj_scanner_destroy(sc);
}
END_TEST

/* Forward projections of an image (uniform values) along a LOR set, the whole set in one request. */
static float *project(sproj_lors *lors, int64_t n)
{
  const int dims[3] = {32, 32, 8};
  const float vs[3] = {4.0f, 4.0f, 4.0f}, origin[3] = {-62.0f, -62.0f, -14.0f};
  float *img = tu_alloc(32 * 32 * 8), *val = tu_alloc(n);
  tu_seed(5);
  for (int v = 0; v < 32 * 32 * 8; v++)
    img[v] = (float)tu_uniform(0.5, 1.5);
  sproj_image *x;
  sproj_proj *p;
  REQUIRE_EQ(sproj_image_register(&x, img, dims, vs, origin), SPROJ_OK);
  REQUIRE_EQ(sproj_proj_register(&p, val, lors), SPROJ_OK);
  REQUIRE_MSG(sproj_fwd(x, p, NULL, SPROJ_ALL_CHUNKS) == SPROJ_OK, "%s", sproj_last_error());
  REQUIRE_EQ(sproj_proj_sync(p, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  REQUIRE_EQ(sproj_proj_unregister(p), SPROJ_OK);
  REQUIRE_EQ(sproj_image_unregister(x), SPROJ_OK);
  free(img);
  return val;
}

/* LOR sets made where they are used (sproj_scanner_lors_create: on a GPU when there is one, else on the host's
 * cores; and by a task on a CPU worker): bit for bit the endpoints of sproj_scanner_lors in every order and segment
 * sequence, with a chunking of one chunk per view, and projections equal to those of the host's set. Listmode events
 * of sinogram LORs (sproj_scanner_events_create): the endpoints of sproj_scanner_lors_at, their TOF bins checked. */
START_TEST(test_lors_made_where_used)
{
  const int seqs[3] = {SPROJ_SEGMENTS_ASCENDING, SPROJ_SEGMENTS_ZERO_PLUS, SPROJ_SEGMENTS_ZERO_MINUS};
  for (int o = 0; o < 3; o++)
    for (int q = 0; q < 3; q++) {
      sproj_scanner *sc = make("small", q == 2 ? 5 : -1, orders[o], seqs[q]);
      struct sproj_sinogram_info in = info_of(sc);
      const int64_t n = in.num_lors;
      float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *ys = tu_alloc(3 * n), *ye = tu_alloc(3 * n);
      REQUIRE_EQ(sproj_scanner_lors(sc, xs, xe, 2), SPROJ_OK);
      sproj_lors *host;
      REQUIRE_EQ(sproj_lors_register(&host, xs, xe, n), SPROJ_OK);
      float *want = project(host, n);
      for (int flags = 0; flags <= SPROJ_LORS_BY_TASK; flags++) {
        sproj_lors *made;
        sproj_chunks *views;
        REQUIRE_MSG(sproj_scanner_lors_create(sc, flags, &made, &views) == SPROJ_OK, "%s", sproj_last_error());
        int nchunks;
        int64_t count;
        REQUIRE_EQ(sproj_chunks_count(views, &nchunks), SPROJ_OK);
        REQUIRE_EQ(nchunks, in.num_views);
        REQUIRE_EQ(sproj_lors_count(made, &count), SPROJ_OK);
        REQUIRE_EQ(count, n);
        float *got = project(made, n);
        REQUIRE_MSG(memcmp(got, want, (size_t)n * sizeof(float)) == 0, "order %d, sequence %d, flags %d: the "
                    "projections differ", orders[o], seqs[q], flags);
        free(got);
        memset(ys, 0xff, (size_t)n * 3 * sizeof(float));
        REQUIRE_EQ(sproj_lors_copy(made, 0, n, ys, ye), SPROJ_OK);
        REQUIRE_MSG(memcmp(ys, xs, (size_t)n * 3 * sizeof(float)) == 0 &&
                    memcmp(ye, xe, (size_t)n * 3 * sizeof(float)) == 0,
                    "order %d, sequence %d, flags %d: endpoints differ", orders[o], seqs[q], flags);
        /* a part of the set, and ranges that are not in it (nothing copied) */
        REQUIRE_EQ(sproj_lors_copy(made, n - 7, 7, ys, ye), SPROJ_OK);
        REQUIRE(memcmp(ys, xs + 3 * (n - 7), 21 * sizeof(float)) == 0);
        ys[0] = 12345.0f;
        REQUIRE_EQ(sproj_lors_copy(made, n - 7, 8, ys, ye), SPROJ_ERR_RANGE);
        REQUIRE_EQ(sproj_lors_copy(made, -1, 1, ys, ye), SPROJ_ERR_RANGE);
        REQUIRE(ys[0] == 12345.0f);
        REQUIRE_EQ(sproj_chunks_destroy(views), SPROJ_OK);
        REQUIRE_EQ(sproj_lors_unregister(made), SPROJ_OK);
      }
      free(want);
      REQUIRE_EQ(sproj_lors_unregister(host), SPROJ_OK);
      free(xs);
      free(xe);
      free(ys);
      free(ye);
      sproj_scanner_destroy(sc);
    }

  /* events: random LORs of the sinogram (several events on one LOR too), TOF bins */
  sproj_scanner *sc = make("small", -1, SPROJ_ORDER_SEGMENT_VIEW, SPROJ_SEGMENTS_ZERO_PLUS);
  struct sproj_sinogram_info in = info_of(sc);
  enum { M = 50000 };
  int32_t *lor = malloc(M * sizeof *lor);
  int64_t *lor64 = malloc(M * sizeof *lor64);
  int16_t *bin = malloc(M * sizeof *bin);
  float *xs = tu_alloc(3 * M), *xe = tu_alloc(3 * M), *ys = tu_alloc(3 * M), *ye = tu_alloc(3 * M);
  tu_seed(23);
  for (int e = 0; e < M; e++) {
    lor[e] = (int32_t)tu_uniform(0, (double)(e % 3 ? in.num_lors : 100));
    lor64[e] = lor[e];
    bin[e] = (int16_t)tu_uniform(0, 13);
  }
  REQUIRE_EQ(sproj_scanner_lors_at(sc, M, lor64, xs, xe), SPROJ_OK);
  sproj_lors *host;
  REQUIRE_EQ(sproj_lors_register(&host, xs, xe, M), SPROJ_OK);
  float *want = project(host, M);
  for (int flags = 0; flags <= SPROJ_LORS_BY_TASK; flags++)
    for (int tof = 0; tof < 2; tof++) {
      sproj_lors *ev;
      REQUIRE_MSG(sproj_scanner_events_create(sc, lor, tof ? bin : NULL, M, flags, &ev) == SPROJ_OK, "%s",
                  sproj_last_error());
      REQUIRE_EQ(sproj_lors_copy(ev, 0, M, ys, ye), SPROJ_OK);
      REQUIRE_MSG(memcmp(ys, xs, sizeof(float) * 3 * M) == 0 && memcmp(ye, xe, sizeof(float) * 3 * M) == 0,
                  "events (flags %d, tof %d): endpoints differ", flags, tof);
      if (!tof) {
        float *got = project(ev, M);
        REQUIRE_MSG(memcmp(got, want, sizeof(float) * M) == 0, "events (flags %d): projections differ", flags);
        free(got);
      }
      REQUIRE_EQ(sproj_lors_unregister(ev), SPROJ_OK);
    }
  free(want);
  REQUIRE_EQ(sproj_lors_unregister(host), SPROJ_OK);

  /* bad input: a status, nothing made */
  sproj_lors *ev = NULL;
  sproj_chunks *views = NULL;
  lor[M - 1] = (int32_t)in.num_lors;
  REQUIRE_EQ(sproj_scanner_events_create(sc, lor, bin, M, 0, &ev), SPROJ_ERR_RANGE);
  lor[M - 1] = -1;
  REQUIRE_EQ(sproj_scanner_events_create(sc, lor, bin, M, 0, &ev), SPROJ_ERR_RANGE);
  lor[M - 1] = 0;
  bin[17] = -2;
  REQUIRE_EQ(sproj_scanner_events_create(sc, lor, bin, M, 0, &ev), SPROJ_ERR_RANGE);
  REQUIRE_MSG(strstr(sproj_last_error(), "event 17") != NULL, "%s", sproj_last_error());
  REQUIRE_EQ(sproj_scanner_events_create(sc, lor, NULL, 0, 0, &ev), SPROJ_ERR_EMPTY);
  REQUIRE_EQ(sproj_scanner_events_create(sc, lor, NULL, -5, 0, &ev), SPROJ_ERR_DIMS);
  REQUIRE_EQ(sproj_scanner_events_create(sc, lor, NULL, M, 4, &ev), SPROJ_ERR_INVALID);
  REQUIRE_EQ(sproj_scanner_events_create(NULL, lor, NULL, M, 0, &ev), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_scanner_events_create(sc, NULL, NULL, M, 0, &ev), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_scanner_lors_create(sc, 2, &host, &views), SPROJ_ERR_INVALID);
  REQUIRE_EQ(sproj_scanner_lors_create(NULL, 0, &host, &views), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_scanner_lors_create(sc, 0, NULL, &views), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_lors_copy(NULL, 0, 1, ys, ye), SPROJ_ERR_NULL);
  REQUIRE(ev == NULL && views == NULL);
  free(lor);
  free(lor64);
  free(bin);
  free(xs);
  free(xe);
  free(ys);
  free(ye);
  sproj_scanner_destroy(sc);
}
END_TEST

/* A ring-difference limit leaves out exactly the planes beyond it: the limited sinogram's LORs are, bit for bit,
 * those of the full one at the same (view, segment, axial, radial), and no LOR spans more than 3 rings (12 mm). */
START_TEST(test_ring_difference_limit)
{
  sproj_scanner *full = make("small", -1, 0, 0), *lim = make("small", 3, SPROJ_ORDER_SEGMENT_AXIAL, 1);
  struct sproj_sinogram_info fi = info_of(full), li = info_of(lim);
  REQUIRE(li.num_lors == 64 * 65 * 44);
  float *fs = tu_alloc(3 * fi.num_lors), *fe = tu_alloc(3 * fi.num_lors);
  float *ls = tu_alloc(3 * li.num_lors), *le = tu_alloc(3 * li.num_lors);
  REQUIRE_EQ(sproj_scanner_lors(full, fs, fe, 2), SPROJ_OK);
  REQUIRE_EQ(sproj_scanner_lors(lim, ls, le, 0), SPROJ_OK);
  for (int64_t i = 0; i < li.num_lors; i++) {
    int v, s, a, k;
    int64_t j;
    REQUIRE_EQ(sproj_scanner_lor_position(lim, i, &v, &s, &a, &k), SPROJ_OK);
    REQUIRE(abs(s) <= 3);
    REQUIRE_EQ(sproj_scanner_lor_index(full, v, s, a, k, &j), SPROJ_OK);
    REQUIRE(!memcmp(ls + 3 * i, fs + 3 * j, 3 * sizeof(float)) && !memcmp(le + 3 * i, fe + 3 * j, 3 * sizeof(float)));
    REQUIRE(fabsf(le[3 * i + 2] - ls[3 * i + 2]) <= 12.0f + 1e-4f);
  }
  int np;
  REQUIRE_EQ(sproj_scanner_segment_planes(lim, 4, &np), SPROJ_ERR_RANGE);
  free(fs);
  free(fe);
  free(ls);
  free(le);
  sproj_scanner_destroy(full);
  sproj_scanner_destroy(lim);
}
END_TEST

/* ---- chunkings of a scanner's sinogram ---------------------------------------------------------------- */
/* Marks the chunk of every LOR in owner[] (-1: none), asserting that each is in at most one and that a chunk's size
 * is the sum of its ranges; returns how many LORs are covered and the most ranges of a chunk. */
static int64_t cover(const sproj_chunks *ch, int64_t num_lors, int *owner, int *max_ranges)
{
  int nc;
  int64_t covered = 0;
  REQUIRE_EQ(sproj_chunks_count(ch, &nc), SPROJ_OK);
  for (int64_t i = 0; i < num_lors; i++)
    owner[i] = -1;
  *max_ranges = 0;
  for (int c = 0; c < nc; c++) {
    int nr;
    int64_t size, sum = 0;
    REQUIRE_EQ(sproj_chunks_num_ranges(ch, c, &nr), SPROJ_OK);
    REQUIRE_EQ(sproj_chunks_size(ch, c, &size), SPROJ_OK);
    if (nr > *max_ranges)
      *max_ranges = nr;
    int64_t *first = malloc(nr * sizeof *first), *count = malloc(nr * sizeof *count);
    REQUIRE_EQ(sproj_chunks_ranges(ch, c, first, count), SPROJ_OK);
    for (int r = 0; r < nr; r++) {
      sum += count[r];
      for (int64_t i = first[r]; i < first[r] + count[r]; i++) {
        REQUIRE_MSG(owner[i] < 0, "LOR %lld in chunks %d and %d", (long long)i, owner[i], c);
        owner[i] = c;
        covered++;
      }
    }
    REQUIRE(sum == size);
    free(first);
    free(count);
  }
  return covered;
}

/* Views, viewgrams and 4 / 7 / 64 subsets of the small scanner (max ring difference 3) in every order: each chunk
 * holds exactly its LORs (by their positions), every LOR is in exactly one chunk; a view and a viewgram is one range
 * except in [segment][axial][view][radial], where a viewgram is one range per axial position; the subset views
 * listed are t, t+S, ... The strided chunking of framework-order viewgrams has the helper's ranges. */
START_TEST(test_scanner_chunks)
{
  for (int o = 0; o < 3; o++) {
    sproj_scanner *sc = make("small", 3, orders[o], o == 1 ? SPROJ_SEGMENTS_ZERO_PLUS : SPROJ_SEGMENTS_ASCENDING);
    struct sproj_sinogram_info in = info_of(sc);
    float *xs = tu_alloc(3 * in.num_lors), *xe = tu_alloc(3 * in.num_lors);
    int *owner = malloc(in.num_lors * sizeof *owner), maxr;
    REQUIRE_EQ(sproj_scanner_lors(sc, xs, xe, 2), SPROJ_OK);
    sproj_lors *lors;
    sproj_chunks *ch;
    REQUIRE_EQ(sproj_lors_register(&lors, xs, xe, in.num_lors), SPROJ_OK);

    REQUIRE_EQ(sproj_scanner_chunks_viewgrams(&ch, sc, lors), SPROJ_OK);
    REQUIRE(cover(ch, in.num_lors, owner, &maxr) == in.num_lors);
    REQUIRE_EQ(maxr, orders[o] == SPROJ_ORDER_SEGMENT_AXIAL ? 8 : 1);
    for (int64_t i = 0; i < in.num_lors; i++) {
      int v, s, a, k;
      sproj_scanner_lor_position(sc, i, &v, &s, &a, &k);
      REQUIRE_EQ(owner[i], v * in.num_segments + s + 3);
    }
    if (orders[o] == SPROJ_ORDER_SEGMENT_AXIAL) {
      /* the same viewgrams as strided chunks: num_rings - |s| ranges of 65 LORs, 64 * 65 apart */
      int nc = in.num_views * in.num_segments, *nr = malloc(nc * sizeof *nr);
      int64_t *f = malloc(nc * sizeof *f), *cnt = malloc(nc * sizeof *cnt), *stride = malloc(nc * sizeof *stride);
      for (int c = 0; c < nc; c++) {
        int s = c % in.num_segments - 3;
        REQUIRE_EQ(sproj_scanner_lor_index(sc, c / in.num_segments, s, 0, 0, &f[c]), SPROJ_OK);
        cnt[c] = 65;
        stride[c] = 64 * 65;
        nr[c] = 8 - abs(s);
      }
      sproj_chunks *st;
      REQUIRE_EQ(sproj_chunks_create_strided(&st, lors, nc, f, cnt, stride, nr), SPROJ_OK);
      for (int c = 0; c < nc; c++) {
        int n1, n2;
        int64_t a1[8], b1[8], a2[8], b2[8];
        REQUIRE_EQ(sproj_chunks_num_ranges(ch, c, &n1), SPROJ_OK);
        REQUIRE_EQ(sproj_chunks_num_ranges(st, c, &n2), SPROJ_OK);
        REQUIRE_EQ(n1, n2);
        sproj_chunks_ranges(ch, c, a1, b1);
        sproj_chunks_ranges(st, c, a2, b2);
        REQUIRE(!memcmp(a1, a2, n1 * sizeof *a1) && !memcmp(b1, b2, n1 * sizeof *b1));
      }
      REQUIRE_EQ(sproj_chunks_destroy(st), SPROJ_OK);
      free(nr);
      free(f);
      free(cnt);
      free(stride);
    }
    REQUIRE_EQ(sproj_chunks_destroy(ch), SPROJ_OK);

    REQUIRE_EQ(sproj_scanner_chunks_views(&ch, sc, lors), SPROJ_OK);
    REQUIRE(cover(ch, in.num_lors, owner, &maxr) == in.num_lors);
    REQUIRE_EQ(maxr, orders[o] == SPROJ_ORDER_VIEW_SEGMENT ? 1 : orders[o] == SPROJ_ORDER_SEGMENT_VIEW ? 7
                                                                                                           : 44);
    for (int64_t i = 0; i < in.num_lors; i++) {
      int v, s, a, k;
      sproj_scanner_lor_position(sc, i, &v, &s, &a, &k);
      REQUIRE_EQ(owner[i], v);
    }
    REQUIRE_EQ(sproj_chunks_destroy(ch), SPROJ_OK);

    const int nsub[3] = {4, 7, 64};
    for (int t = 0; t < 3; t++) {
      int S = nsub[t], nc = -1;
      REQUIRE_EQ(sproj_scanner_chunks_subsets(&ch, sc, lors, S), SPROJ_OK);
      REQUIRE_EQ(sproj_chunks_count(ch, &nc), SPROJ_OK);
      REQUIRE_EQ(nc, S);
      REQUIRE(cover(ch, in.num_lors, owner, &maxr) == in.num_lors);
      for (int64_t i = 0; i < in.num_lors; i++) {
        int v, s, a, k;
        sproj_scanner_lor_position(sc, i, &v, &s, &a, &k);
        REQUIRE_EQ(owner[i], v % S);
      }
      for (int u = 0; u < S; u++) {
        int views[64], nv = -1;
        REQUIRE_EQ(sproj_scanner_subset_views(sc, S, u, views, &nv), SPROJ_OK);
        REQUIRE_EQ(nv, (64 - u + S - 1) / S);
        for (int e = 0; e < nv; e++)
          REQUIRE_EQ(views[e], u + e * S);
      }
      REQUIRE_EQ(sproj_chunks_destroy(ch), SPROJ_OK);
    }
    REQUIRE_EQ(sproj_lors_unregister(lors), SPROJ_OK);
    free(owner);
    free(xs);
    free(xe);
    sproj_scanner_destroy(sc);
  }
}
END_TEST

/* ---- projections over chunks of several ranges -------------------------------------------------------- */
static double max_rel_diff(const float *a, const float *b, int64_t n)
{
  double d = 0.0, m = 0.0;
  for (int64_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - b[i]));
    m = fmax(m, fabs((double)b[i]));
  }
  return m > 0 ? d / m : d;
}

/* Back projections that differ only in the order of their float additions: every voxel sums thousands of LOR
 * contributions, each summation order rounding differently (and StarPU reduces per-worker images in whatever order
 * tasks end). Observed: relative L2 ~3e-7, largest voxel difference up to 1.5e-6 of the maximum. Asserted: relative
 * L2 <= 1e-6 and every voxel within 1e-5 of the maximum (a missing or doubled LOR would be ~1e-3 and more). */
static void check_back_close(const char *what, const float *a, const float *b, int64_t n)
{
  double l2 = tu_rel_l2_ff(a, b, n), mx = max_rel_diff(a, b, n);
  printf("%s: relative L2 difference %.3g, largest %.3g of the maximum\n", what, l2, mx);
  REQUIRE_MSG(l2 <= 1e-6 && mx <= 1e-5, "%s: relative L2 %.3g, largest difference %.3g of the maximum", what, l2, mx);
}

/* Random ranges of [0, n) (lengths 1 .. 3000, some gaps) dealt to nc chunks at random, each chunk's ranges in
 * shuffled order: the most irregular multi-range chunking. */
static sproj_chunks *random_lists(sproj_lors *lors, int64_t n, int nc, char *covered)
{
  int cap = 4096, nr = 0;
  int64_t *f = malloc(cap * sizeof *f), *c = malloc(cap * sizeof *c);
  int *owner = malloc(cap * sizeof *owner);
  memset(covered, 0, n);
  for (int64_t pos = 0; pos < n && nr < cap;) {
    int64_t len = tu_randint(1, 3000);
    if (len > n - pos)
      len = n - pos;
    if (tu_randint(0, 9) == 0) { /* a gap */
      pos += len;
      continue;
    }
    f[nr] = pos;
    c[nr] = len;
    owner[nr++] = tu_randint(0, nc - 1);
    memset(covered + pos, 1, len);
    pos += len;
  }
  /* group by chunk, shuffled within */
  int *num = calloc(nc, sizeof *num);
  int64_t *gf = malloc(nr * sizeof *gf), *gc = malloc(nr * sizeof *gc);
  int k = 0;
  for (int ch = 0; ch < nc; ch++) {
    int start = k;
    for (int r = 0; r < nr; r++)
      if (owner[r] == ch) {
        gf[k] = f[r];
        gc[k++] = c[r];
      }
    num[ch] = k - start;
    for (int i = k - 1; i > start; i--) {
      int j = tu_randint(start, i);
      int64_t tf = gf[i], tc = gc[i];
      gf[i] = gf[j];
      gc[i] = gc[j];
      gf[j] = tf;
      gc[j] = tc;
    }
  }
  sproj_chunks *ch;
  REQUIRE_MSG(sproj_chunks_create_lists(&ch, lors, nc, num, gf, gc) == SPROJ_OK, "%s", sproj_last_error());
  free(f);
  free(c);
  free(owner);
  free(num);
  free(gf);
  free(gc);
  return ch;
}

/* Non-TOF and TOF-sinogram forward and back projections of the small scanner's sinogram (max ring difference 2) over
 * 5 interleaved-view subsets and over random multi-range chunks equal those over single-range per-view chunks:
 * forward bit for bit (each LOR is computed by the same code whatever its chunk), back as check_back_close says.
 * LORs in no chunk keep their poison. */
START_TEST(test_multirange_projections)
{
  sproj_scanner *sc = make("small", 2, 0, 0);
  struct sproj_sinogram_info in = info_of(sc);
  const int64_t n = in.num_lors;
  struct tu_geom g = {{64, 64, 16}, {2.0f, 2.0f, 2.0f}, {-63.0f, -63.0f, -15.0f}};
  const int64_t nvox = tu_nvox(&g);
  const int nb = 9;
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *img = tu_alloc(nvox);
  float *ref = tu_alloc(n * nb), *val = tu_alloc(n * nb), *ones = tu_alloc(n * nb);
  float *back_ref = tu_alloc(nvox), *back = tu_alloc(nvox);
  char *covered = malloc(n);
  tu_seed(33);
  tu_fill_uniform(img, nvox, 0.0f, 1.0f);
  for (int64_t i = 0; i < n * nb; i++)
    ones[i] = (float)tu_uniform(0.5, 1.5);
  REQUIRE_EQ(sproj_scanner_lors(sc, xs, xe, 2), SPROJ_OK);
  sproj_image *im, *bref, *bimg;
  sproj_lors *lors;
  sproj_chunks *views, *subsets, *lists;
  sproj_tof *tof;
  struct sproj_tof_params tp = {20.0f, nb, 3.0f, 15.0f, 0.0f};
  REQUIRE_EQ(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  REQUIRE_EQ(sproj_lors_register(&lors, xs, xe, n), SPROJ_OK);
  REQUIRE_EQ(sproj_tof_register(&tof, &tp, NULL, NULL, NULL), SPROJ_OK);
  REQUIRE_EQ(sproj_scanner_chunks_views(&views, sc, lors), SPROJ_OK);
  REQUIRE_EQ(sproj_scanner_chunks_subsets(&subsets, sc, lors, 5), SPROJ_OK);
  lists = random_lists(lors, n, 7, covered);

  for (int tofmode = 0; tofmode < 2; tofmode++) {
    int per = tofmode ? nb : 1;
    sproj_proj *p_ref, *p_val, *p_ones;
    if (tofmode) {
      REQUIRE_EQ(sproj_proj_register_tof(&p_ref, ref, lors, nb), SPROJ_OK);
      REQUIRE_EQ(sproj_proj_register_tof(&p_ones, ones, lors, nb), SPROJ_OK);
    } else {
      REQUIRE_EQ(sproj_proj_register(&p_ref, ref, lors), SPROJ_OK);
      REQUIRE_EQ(sproj_proj_register(&p_ones, ones, lors), SPROJ_OK);
    }
    memset(back_ref, 0, nvox * sizeof *back_ref);
    REQUIRE_EQ(sproj_image_register(&bref, back_ref, g.n, g.vs, g.origin), SPROJ_OK);
    for (int v = 0; v < in.num_views; v++) {
      REQUIRE_EQ(tofmode ? sproj_fwd_tof_sino(im, p_ref, views, v, tof) : sproj_fwd(im, p_ref, views, v),
                       SPROJ_OK);
      REQUIRE_EQ(tofmode ? sproj_back_tof_sino(bref, p_ones, views, v, tof) : sproj_back(bref, p_ones, views, v),
                       SPROJ_OK);
    }
    REQUIRE_EQ(sproj_proj_sync(p_ref, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);
    REQUIRE_EQ(sproj_image_unregister(bref), SPROJ_OK);
    double sum = 0.0;
    for (int64_t i = 0; i < n * per; i++)
      sum += ref[i];
    REQUIRE(sum > 0.0);

    const sproj_chunks *multi[2] = {subsets, lists};
    const int nchunks[2] = {5, 7};
    for (int m = 0; m < 2; m++) {
      for (int64_t i = 0; i < n * per; i++)
        val[i] = NAN;
      memset(back, 0, nvox * sizeof *back);
      REQUIRE_EQ(tofmode ? sproj_proj_register_tof(&p_val, val, lors, nb) : sproj_proj_register(&p_val, val, lors),
                       SPROJ_OK);
      REQUIRE_EQ(sproj_image_register(&bimg, back, g.n, g.vs, g.origin), SPROJ_OK);
      for (int c = 0; c < nchunks[m]; c++) {
        REQUIRE_EQ(tofmode ? sproj_fwd_tof_sino(im, p_val, multi[m], c, tof) : sproj_fwd(im, p_val, multi[m], c),
                         SPROJ_OK);
        REQUIRE_EQ(tofmode ? sproj_back_tof_sino(bimg, p_ones, multi[m], c, tof)
                                 : sproj_back(bimg, p_ones, multi[m], c), SPROJ_OK);
      }
      REQUIRE_EQ(sproj_proj_unregister(p_val), SPROJ_OK);
      REQUIRE_EQ(sproj_image_unregister(bimg), SPROJ_OK);
      int64_t differ = 0, poisoned = 0;
      for (int64_t i = 0; i < n; i++)
        for (int b = 0; b < per; b++) {
          int64_t e = i * per + b;
          if (m == 1 && !covered[i])
            poisoned += isnan(val[e]) != 0;
          else
            differ += memcmp(&val[e], &ref[e], sizeof(float)) != 0;
        }
      REQUIRE_MSG(differ == 0, "tof %d chunking %d: %lld values differ from per-view chunks", tofmode, m,
                    (long long)differ);
      if (m == 0) {
        check_back_close(tofmode ? "TOF-sinogram back projection over subsets" : "back projection over subsets", back,
                         back_ref, nvox);
      } else {
        int64_t uncovered = 0;
        for (int64_t i = 0; i < n; i++)
          uncovered += !covered[i];
        REQUIRE(uncovered > 0 && poisoned == uncovered * per);
      }
    }
    REQUIRE_EQ(sproj_proj_unregister(p_ref), SPROJ_OK);
    REQUIRE_EQ(sproj_proj_unregister(p_ones), SPROJ_OK);
  }
  REQUIRE_EQ(sproj_chunks_destroy(views), SPROJ_OK);
  REQUIRE_EQ(sproj_chunks_destroy(subsets), SPROJ_OK);
  REQUIRE_EQ(sproj_chunks_destroy(lists), SPROJ_OK);
  REQUIRE_EQ(sproj_tof_unregister(tof), SPROJ_OK);
  REQUIRE_EQ(sproj_lors_unregister(lors), SPROJ_OK);
  REQUIRE_EQ(sproj_image_unregister(im), SPROJ_OK);
  sproj_scanner_destroy(sc);
  free(xs);
  free(xe);
  free(img);
  free(ref);
  free(val);
  free(ones);
  free(back_ref);
  free(back);
  free(covered);
}
END_TEST

/* Listmode events (sinogram LORs drawn at random, made from detector pairs, random bins) projected over random
 * multi-range chunks equal the one-request projections: forward bit for bit, back as check_back_close says. */
/* n events on random LORs of the scanner with random bins 0 .. nb-1, from the test's random stream. */
static void random_events(const sproj_scanner *sc, int n, int nb, float *xs, float *xe, int16_t *bins)
{
  struct sproj_sinogram_info in = info_of(sc);
  int64_t *lor = malloc(n * sizeof *lor);
  struct sproj_det_pair *pairs = malloc(n * sizeof *pairs);
  for (int i = 0; i < n; i++) {
    lor[i] = (int64_t)tu_uniform(0, (double)in.num_lors);
    bins[i] = (int16_t)tu_randint(0, nb - 1);
  }
  REQUIRE_EQ(sproj_scanner_lor_pairs(sc, n, lor, pairs), SPROJ_OK);
  REQUIRE_EQ(sproj_scanner_pair_lors(sc, n, pairs, xs, xe), SPROJ_OK);
  free(lor);
  free(pairs);
}

START_TEST(test_multirange_listmode)
{
  sproj_scanner *sc = make("small", -1, 0, 0);
  enum { N = 60000, NB = 11 };
  struct tu_geom g = {{64, 64, 16}, {2.0f, 2.0f, 2.0f}, {-63.0f, -63.0f, -15.0f}};
  const int64_t nvox = tu_nvox(&g);
  int16_t *bins = malloc(N * sizeof *bins);
  float *xs = tu_alloc(3 * N), *xe = tu_alloc(3 * N), *img = tu_alloc(nvox), *ref = tu_alloc(N), *val = tu_alloc(N);
  float *back_ref = calloc(nvox, sizeof *back_ref), *back = calloc(nvox, sizeof *back);
  char *covered = malloc(N);
  tu_seed(44);
  tu_fill_uniform(img, nvox, 0.0f, 1.0f);
  random_events(sc, N, NB, xs, xe, bins);
  struct sproj_tof_params tp = {20.0f, NB, 3.0f, 15.0f, 0.0f};
  sproj_tof *tof;
  sproj_lors *ev;
  sproj_image *im, *b1, *b2;
  sproj_proj *p1, *p2;
  REQUIRE_EQ(sproj_tof_register(&tof, &tp, NULL, NULL, NULL), SPROJ_OK);
  REQUIRE_EQ(sproj_lors_register_events(&ev, xs, xe, bins, N), SPROJ_OK);
  REQUIRE_EQ(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  REQUIRE_EQ(sproj_image_register(&b1, back_ref, g.n, g.vs, g.origin), SPROJ_OK);
  REQUIRE_EQ(sproj_image_register(&b2, back, g.n, g.vs, g.origin), SPROJ_OK);
  REQUIRE_EQ(sproj_proj_register(&p1, ref, ev), SPROJ_OK);
  REQUIRE_EQ(sproj_proj_register(&p2, val, ev), SPROJ_OK);
  sproj_chunks *lists = random_lists(ev, N, 6, covered);
  for (int i = 0; i < N; i++)
    val[i] = NAN;
  REQUIRE_EQ(sproj_fwd_tof_lm(im, p1, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  REQUIRE_EQ(sproj_back_tof_lm(b1, p1, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  for (int c = 0; c < 6; c++)
    REQUIRE_EQ(sproj_fwd_tof_lm(im, p2, lists, c, tof), SPROJ_OK);
  int list[6] = {5, 3, 1, 0, 2, 4};
  REQUIRE_EQ(sproj_back_tof_lm_chunks(b2, p1, lists, list, 6, tof), SPROJ_OK);
  REQUIRE_EQ(sproj_chunks_destroy(lists), SPROJ_OK);
  REQUIRE_EQ(sproj_proj_unregister(p1), SPROJ_OK);
  REQUIRE_EQ(sproj_proj_unregister(p2), SPROJ_OK);
  REQUIRE_EQ(sproj_image_unregister(b1), SPROJ_OK);
  REQUIRE_EQ(sproj_image_unregister(b2), SPROJ_OK);
  REQUIRE_EQ(sproj_image_unregister(im), SPROJ_OK);
  REQUIRE_EQ(sproj_lors_unregister(ev), SPROJ_OK);
  REQUIRE_EQ(sproj_tof_unregister(tof), SPROJ_OK);
  int64_t nonzero = 0;
  for (int i = 0; i < N; i++) {
    if (covered[i])
      REQUIRE_MSG(!memcmp(&val[i], &ref[i], sizeof(float)), "event %d: %.9g vs %.9g", i, val[i], ref[i]);
    else
      REQUIRE(isnan(val[i]));
    nonzero += ref[i] != 0.0f;
  }
  REQUIRE(nonzero > N / 4);
  /* the back projection of the covered events only: subtract nothing, compare against the reference restricted */
  float *back_cov = calloc(nvox, sizeof *back_cov);
  sproj_image *b3;
  sproj_lors *ev2;
  sproj_proj *p3;
  float *ref_cov = tu_alloc(N);
  for (int i = 0; i < N; i++)
    ref_cov[i] = covered[i] ? ref[i] : 0.0f;
  REQUIRE_EQ(sproj_tof_register(&tof, &tp, NULL, NULL, NULL), SPROJ_OK);
  REQUIRE_EQ(sproj_lors_register_events(&ev2, xs, xe, bins, N), SPROJ_OK);
  REQUIRE_EQ(sproj_image_register(&b3, back_cov, g.n, g.vs, g.origin), SPROJ_OK);
  REQUIRE_EQ(sproj_proj_register(&p3, ref_cov, ev2), SPROJ_OK);
  REQUIRE_EQ(sproj_back_tof_lm(b3, p3, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  REQUIRE_EQ(sproj_proj_unregister(p3), SPROJ_OK);
  REQUIRE_EQ(sproj_image_unregister(b3), SPROJ_OK);
  REQUIRE_EQ(sproj_lors_unregister(ev2), SPROJ_OK);
  REQUIRE_EQ(sproj_tof_unregister(tof), SPROJ_OK);
  check_back_close("listmode back projection over random multi-range chunks", back, back_cov, nvox);
  free(back_cov);
  free(ref_cov);
  free(bins);
  free(xs);
  free(xe);
  free(img);
  free(ref);
  free(val);
  free(back_ref);
  free(back);
  free(covered);
  sproj_scanner_destroy(sc);
}
END_TEST

/* ---- an order of events for locality --------------------------------------------------------------------- */
/* Transaxial distance of two LORs, in mm: how far apart their chord midpoints lie plus how far their directions
 * turn apart at radius r (double precision, independent of the order's own key). */
static double lor_distance(const float *a0, const float *b0, const float *a1, const float *b1, double r)
{
  double phi[2], m[2][2];
  const float *a[2] = {a0, a1}, *b[2] = {b0, b1};
  for (int k = 0; k < 2; k++) {
    phi[k] = atan2((double)b[k][1] - a[k][1], (double)b[k][0] - a[k][0]);
    if (phi[k] < 0)
      phi[k] += PI;
    m[k][0] = 0.5 * ((double)a[k][0] + b[k][0]);
    m[k][1] = 0.5 * ((double)a[k][1] + b[k][1]);
  }
  double dphi = fabs(phi[0] - phi[1]);
  dphi = fmin(dphi, PI - dphi);
  return hypot(m[0][0] - m[1][0], m[0][1] - m[1][1]) + r * dphi;
}

static double mean_neighbour_distance(const float *xs, const float *xe, const int64_t *order, int n, double r)
{
  double sum = 0.0;
  for (int i = 1; i < n; i++) {
    int64_t p = order ? order[i - 1] : i - 1, q = order ? order[i] : i;
    sum += lor_distance(xs + 3 * p, xe + 3 * p, xs + 3 * q, xe + 3 * q, r);
  }
  return sum / (n - 1);
}

/* sproj_lors_order: a permutation whose neighbours lie close together (measured independently), LORs with NaN last;
 * events projected in that order (sproj_reorder on their arrays) get the same values bit for bit and the same back
 * projection; bad arguments change nothing. */
START_TEST(test_lors_order)
{
  sproj_scanner *sc = make("small", -1, 0, 0);
  enum { N = 60000, NB = 11, NAN_AT = 777 };
  struct tu_geom g = {{64, 64, 16}, {2.0f, 2.0f, 2.0f}, {-63.0f, -63.0f, -15.0f}};
  const int64_t nvox = tu_nvox(&g);
  int64_t *order = malloc(N * sizeof *order);
  int16_t *bins = malloc(N * sizeof *bins), *obins = malloc(N * sizeof *obins);
  float *xs = tu_alloc(3 * N), *xe = tu_alloc(3 * N), *oxs = tu_alloc(3 * N), *oxe = tu_alloc(3 * N);
  float *img = tu_alloc(nvox), *ref = tu_alloc(N), *val = tu_alloc(N);
  float *back_ref = calloc(nvox, sizeof *back_ref), *back = calloc(nvox, sizeof *back);
  tu_seed(45);
  tu_fill_uniform(img, nvox, 0.0f, 1.0f);
  random_events(sc, N, NB, xs, xe, bins);

  /* bad arguments first: order stays as it was */
  for (int i = 0; i < N; i++)
    order[i] = -5;
  REQUIRE_EQ(sproj_lors_order(xs, xe, -1, g.vs, order), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_lors_order(NULL, xe, N, g.vs, order), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_lors_order(xs, xe, N, NULL, order), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_lors_order(xs, xe, N, g.vs, NULL), SPROJ_ERR_NULL);
  float bad_vs[3] = {2.0f, 0.0f, 2.0f};
  REQUIRE_EQ(sproj_lors_order(xs, xe, N, bad_vs, order), SPROJ_ERR_VOXEL_SIZE);
  bad_vs[1] = NAN;
  REQUIRE_EQ(sproj_lors_order(xs, xe, N, bad_vs, order), SPROJ_ERR_VOXEL_SIZE);
  REQUIRE_EQ(sproj_lors_order(NULL, NULL, 0, g.vs, NULL), SPROJ_OK);
  for (int i = 0; i < N; i++)
    REQUIRE_EQ(order[i], -5);

  /* a permutation, neighbours close, the NaN LOR last */
  float keep = xs[3 * NAN_AT + 1];
  xs[3 * NAN_AT + 1] = NAN;
  REQUIRE_EQ(sproj_lors_order(xs, xe, N, g.vs, order), SPROJ_OK);
  REQUIRE_EQ(order[N - 1], NAN_AT);
  xs[3 * NAN_AT + 1] = keep;
  REQUIRE_EQ(sproj_lors_order(xs, xe, N, g.vs, order), SPROJ_OK);
  char *seen = calloc(N, 1);
  for (int i = 0; i < N; i++) {
    REQUIRE(order[i] >= 0 && order[i] < N && !seen[order[i]]);
    seen[order[i]] = 1;
  }
  free(seen);
  /* the same order and the same reordered array on 1 thread as on several (SPROJ_ORDER_THREADS: 7 parts of 60000) */
  int64_t *order1 = malloc(N * sizeof *order1);
  float *r1 = tu_alloc(3 * N), *r7 = tu_alloc(3 * N);
  memcpy(r1, xs, 3 * N * sizeof *xs);
  memcpy(r7, xs, 3 * N * sizeof *xs);
  setenv("SPROJ_ORDER_THREADS", "1", 1);
  REQUIRE_EQ(sproj_lors_order(xs, xe, N, g.vs, order1), SPROJ_OK);
  REQUIRE_EQ(sproj_reorder(r1, 3 * sizeof(float), N, order1), SPROJ_OK);
  setenv("SPROJ_ORDER_THREADS", "7", 1);
  REQUIRE_EQ(sproj_lors_order(xs, xe, N, g.vs, order), SPROJ_OK);
  REQUIRE_EQ(sproj_reorder(r7, 3 * sizeof(float), N, order), SPROJ_OK);
  REQUIRE(!memcmp(order, order1, N * sizeof *order));
  REQUIRE(!memcmp(r1, r7, 3 * N * sizeof *r1));
  /* several threads still name the first place that breaks a permutation */
  int64_t twice[6] = {0, 5, 3, 5, 3, 1};
  int16_t small[6] = {0, 1, 2, 3, 4, 5};
  REQUIRE_EQ(sproj_reorder(small, sizeof small[0], 6, twice), SPROJ_ERR_RANGE);
  REQUIRE_MSG(strstr(sproj_last_error(), "order[3] = 5") != NULL, "message: %s", sproj_last_error());
  REQUIRE(small[1] == 1 && small[5] == 5);
  unsetenv("SPROJ_ORDER_THREADS");
  free(order1);
  free(r1);
  free(r7);
  double radius = 0.0;
  for (int i = 0; i < 2 * N; i++) {
    const float *p = i < N ? xs + 3 * i : xe + 3 * (i - N);
    radius = fmax(radius, hypot(p[0], p[1]));
  }
  double before = mean_neighbour_distance(xs, xe, NULL, N, radius);
  double after = mean_neighbour_distance(xs, xe, order, N, radius);
  printf("events in order: neighbours %.2f mm apart (detection order: %.1f mm; voxels of %.1f mm)\n", after, before,
         g.vs[0]);
  REQUIRE_MSG(after < 2.0 * g.vs[0] && after < before / 20.0, "neighbours %.3g mm apart, %.3g before", after, before);

  /* the events projected in that order: each value as before, bit for bit; the back projection as before */
  memcpy(oxs, xs, 3 * N * sizeof *xs);
  memcpy(oxe, xe, 3 * N * sizeof *xe);
  memcpy(obins, bins, N * sizeof *bins);
  REQUIRE_EQ(sproj_reorder(oxs, 3 * sizeof(float), N, order), SPROJ_OK);
  REQUIRE_EQ(sproj_reorder(oxe, 3 * sizeof(float), N, order), SPROJ_OK);
  REQUIRE_EQ(sproj_reorder(obins, sizeof(int16_t), N, order), SPROJ_OK);
  struct sproj_tof_params tp = {20.0f, NB, 3.0f, 15.0f, 0.0f};
  float *values[2] = {ref, val}, *backs[2] = {back_ref, back};
  for (int k = 0; k < 2; k++) {
    sproj_tof *tof;
    sproj_lors *ev;
    sproj_image *im, *bk;
    sproj_proj *pr;
    REQUIRE_EQ(sproj_tof_register(&tof, &tp, NULL, NULL, NULL), SPROJ_OK);
    REQUIRE_EQ(sproj_lors_register_events(&ev, k ? oxs : xs, k ? oxe : xe, k ? obins : bins, N), SPROJ_OK);
    REQUIRE_EQ(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
    REQUIRE_EQ(sproj_image_register(&bk, backs[k], g.n, g.vs, g.origin), SPROJ_OK);
    REQUIRE_EQ(sproj_proj_register(&pr, values[k], ev), SPROJ_OK);
    REQUIRE_EQ(sproj_fwd_tof_lm(im, pr, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
    REQUIRE_EQ(sproj_back_tof_lm(bk, pr, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
    REQUIRE_EQ(sproj_proj_unregister(pr), SPROJ_OK);
    REQUIRE_EQ(sproj_image_unregister(bk), SPROJ_OK);
    REQUIRE_EQ(sproj_image_unregister(im), SPROJ_OK);
    REQUIRE_EQ(sproj_lors_unregister(ev), SPROJ_OK);
    REQUIRE_EQ(sproj_tof_unregister(tof), SPROJ_OK);
  }
  int64_t nonzero = 0;
  for (int i = 0; i < N; i++) {
    REQUIRE_MSG(!memcmp(&val[i], &ref[order[i]], sizeof(float)), "event %lld in place %d: %.9g vs %.9g",
                (long long)order[i], i, val[i], ref[order[i]]);
    nonzero += val[i] != 0.0f;
  }
  REQUIRE(nonzero > N / 4);
  check_back_close("listmode back projection of the events in order", back, back_ref, nvox);

  /* sproj_reorder refuses what is not a permutation and leaves the array as it was */
  int64_t bad[4] = {0, 2, 2, 1}, out_of_range[4] = {0, 1, 4, 2};
  int16_t arr[4] = {10, 11, 12, 13};
  REQUIRE_EQ(sproj_reorder(arr, sizeof arr[0], 4, bad), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_reorder(arr, sizeof arr[0], 4, out_of_range), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_reorder(arr, sizeof arr[0], -1, bad), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_reorder(NULL, sizeof arr[0], 4, bad), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_reorder(arr, sizeof arr[0], 4, NULL), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_reorder(arr, 0, 4, bad), SPROJ_ERR_DIMS);
  REQUIRE(arr[0] == 10 && arr[1] == 11 && arr[2] == 12 && arr[3] == 13);
  int64_t perm[4] = {3, 0, 2, 1};
  REQUIRE_EQ(sproj_reorder(arr, sizeof arr[0], 4, perm), SPROJ_OK);
  REQUIRE(arr[0] == 13 && arr[1] == 10 && arr[2] == 12 && arr[3] == 11);

  free(order);
  free(bins);
  free(obins);
  free(xs);
  free(xe);
  free(oxs);
  free(oxe);
  free(img);
  free(ref);
  free(val);
  free(back_ref);
  free(back);
  sproj_scanner_destroy(sc);
}
END_TEST

/* ---- TOF bin numberings ------------------------------------------------------------------------------- */
/* 29 bins: centred -14..14 <-> 0..28 (c = b - 14; reversed c = 14 - b); 4 bins: -2..1 <-> 0..3; every value round
 * trips; in place works; a value outside its numbering or a bad bin count changes nothing. */
START_TEST(test_tof_bins)
{
  const int counts[3] = {29, 4, 1};
  for (int t = 0; t < 3; t++) {
    int nb = counts[t], half = nb / 2;
    int16_t c[64], b[64], back[64];
    for (int i = 0; i < nb; i++)
      c[i] = (int16_t)(i - half);
    for (int rev = 0; rev < 2; rev++) {
      REQUIRE_EQ(sproj_tof_bins_from_centered(nb, c, b, nb, rev), SPROJ_OK);
      for (int i = 0; i < nb; i++)
        REQUIRE_EQ(b[i], rev ? nb - 1 - i : i);
      REQUIRE_EQ(sproj_tof_bins_to_centered(nb, b, back, nb, rev), SPROJ_OK);
      REQUIRE(!memcmp(back, c, nb * sizeof *c));
    }
  }
  int16_t v[3] = {-14, 0, 14}, out[3] = {7, 7, 7};
  REQUIRE_EQ(sproj_tof_bins_from_centered(3, v, v, 29, 0), SPROJ_OK); /* in place */
  REQUIRE(v[0] == 0 && v[1] == 14 && v[2] == 28);
  int16_t bad[3] = {0, 15, 1};
  REQUIRE_EQ(sproj_tof_bins_from_centered(3, bad, out, 29, 0), SPROJ_ERR_RANGE);
  REQUIRE(out[0] == 7 && out[1] == 7 && out[2] == 7);
  int16_t bad2[2] = {3, 29};
  REQUIRE_EQ(sproj_tof_bins_to_centered(2, bad2, out, 29, 1), SPROJ_ERR_RANGE);
  int16_t neg[1] = {-1};
  REQUIRE_EQ(sproj_tof_bins_to_centered(1, neg, out, 29, 0), SPROJ_ERR_RANGE);
  REQUIRE(out[0] == 7 && out[1] == 7);
  REQUIRE_EQ(sproj_tof_bins_to_centered(1, v, out, 0, 0), SPROJ_ERR_TOF);
  REQUIRE_EQ(sproj_tof_bins_to_centered(1, v, out, SPROJ_MAX_TOF_BINS + 1, 0), SPROJ_ERR_TOF);
  REQUIRE_EQ(sproj_tof_bins_to_centered(-1, v, out, 29, 0), SPROJ_ERR_DIMS);
  REQUIRE_EQ(sproj_tof_bins_to_centered(1, NULL, out, 29, 0), SPROJ_ERR_NULL);
  REQUIRE(out[0] == 7);
}
END_TEST

/* ---- detector pairs ----------------------------------------------------------------------------------- */
/* Every LOR of the small sinogram (in [segment][axial][view][radial], max ring difference 5), of a one-ring scanner
 * with an even number of radial bins, and 50000 random LORs of vision600: its detector pair gives back the LOR's endpoints bit for bit and, through sproj_scanner_pair_lor, its
 * index (swapped 0); the reversed pair gives the same index with swapped 1. Pairs outside the sinogram or the
 * scanner give RANGE and leave outputs untouched. */
static void check_pairs(const sproj_scanner *sc, int64_t n, const int64_t *lor)
{
  struct sproj_det_pair *pairs = malloc(n * sizeof *pairs);
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *ps = tu_alloc(3 * n), *pe = tu_alloc(3 * n);
  REQUIRE_EQ(sproj_scanner_lors_at(sc, n, lor, xs, xe), SPROJ_OK);
  REQUIRE_EQ(sproj_scanner_lor_pairs(sc, n, lor, pairs), SPROJ_OK);
  REQUIRE_EQ(sproj_scanner_pair_lors(sc, n, pairs, ps, pe), SPROJ_OK);
  REQUIRE(!memcmp(xs, ps, 3 * n * sizeof *xs) && !memcmp(xe, pe, 3 * n * sizeof *xe));
  for (int64_t i = 0; i < n; i++) {
    int64_t back = -1;
    int swapped = -1;
    REQUIRE_EQ(sproj_scanner_pair_lor(sc, &pairs[i], &back, &swapped), SPROJ_OK);
    REQUIRE_MSG(back == lor[i] && swapped == 0, "LOR %lld -> pair -> %lld (swapped %d)", (long long)lor[i],
                  (long long)back, swapped);
    struct sproj_det_pair r = {pairs[i].ring_b, pairs[i].det_b, pairs[i].ring_a, pairs[i].det_a};
    REQUIRE_EQ(sproj_scanner_pair_lor(sc, &r, &back, &swapped), SPROJ_OK);
    REQUIRE(back == lor[i] && swapped == 1);
  }
  free(pairs);
  free(xs);
  free(xe);
  free(ps);
  free(pe);
}

START_TEST(test_detector_pairs)
{
  sproj_scanner *sc = make("small", 5, SPROJ_ORDER_SEGMENT_AXIAL, SPROJ_SEGMENTS_ZERO_MINUS);
  struct sproj_sinogram_info in = info_of(sc);
  int64_t *lor = malloc(in.num_lors * sizeof *lor);
  for (int64_t i = 0; i < in.num_lors; i++)
    lor[i] = i;
  check_pairs(sc, in.num_lors, lor);

  int64_t idx = 77;
  int swapped = 5;
  float x[6] = {1, 2, 3, 4, 5, 6};
  struct sproj_det_pair same = {0, 3, 1, 3}, adjacent = {0, 0, 0, 1}, far_rings = {0, 10, 7, 74}, bad_ring = {8, 0, 0, 64},
                        bad_det = {0, 128, 0, 64}, neg = {0, -1, 0, 64};
  REQUIRE_EQ(sproj_scanner_pair_lor(sc, &same, &idx, &swapped), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_pair_lor(sc, &adjacent, &idx, &swapped), SPROJ_ERR_RANGE); /* radial bin 63 of 65 */
  REQUIRE_EQ(sproj_scanner_pair_lor(sc, &far_rings, &idx, &swapped), SPROJ_ERR_RANGE); /* ring difference 7 */
  REQUIRE_EQ(sproj_scanner_pair_lor(sc, &bad_ring, &idx, &swapped), SPROJ_ERR_RANGE);
  REQUIRE(idx == 77 && swapped == 5);
  struct sproj_det_pair two[2] = {{0, 10, 7, 74}, bad_det};
  REQUIRE_EQ(sproj_scanner_pair_lors(sc, 2, two, x, x + 3), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_pair_lors(sc, 1, &neg, x, x + 3), SPROJ_ERR_RANGE);
  REQUIRE(x[0] == 1 && x[3] == 4);
  /* a pair with any ring difference has endpoints, even where the sinogram leaves it out */
  REQUIRE_EQ(sproj_scanner_pair_lors(sc, 1, &far_rings, x, x + 3), SPROJ_OK);
  REQUIRE(x[2] < x[5]);
  int64_t bad_lor[2] = {0, in.num_lors};
  struct sproj_det_pair out = {9, 9, 9, 9};
  REQUIRE_EQ(sproj_scanner_lor_pairs(sc, 2, bad_lor, &out), SPROJ_ERR_RANGE);
  REQUIRE(out.ring_a == 9 && out.det_b == 9);
  free(lor);
  sproj_scanner_destroy(sc);

  /* an even number of radial bins (bins -32 .. 31 around the centre) and a single ring */
  struct sproj_scanner_params p;
  REQUIRE_EQ(sproj_scanner_preset("small", &p), SPROJ_OK);
  p.num_radial_bins = 64;
  p.num_rings = 1;
  p.max_ring_difference = -1;
  REQUIRE_EQ(sproj_scanner_create(&sc, &p), SPROJ_OK);
  in = info_of(sc);
  REQUIRE_EQ(in.num_segments, 1);
  REQUIRE_EQ(in.num_lors, 64 * 64);
  lor = malloc(in.num_lors * sizeof *lor);
  for (int64_t i = 0; i < in.num_lors; i++)
    lor[i] = i;
  check_pairs(sc, in.num_lors, lor);
  free(lor);
  sproj_scanner_destroy(sc);

  sc = make("vision600", -1, 0, 0);
  in = info_of(sc);
  enum { M = 50000 };
  lor = malloc(M * sizeof *lor);
  tu_seed(23);
  for (int i = 0; i < M; i++)
    lor[i] = (int64_t)tu_uniform(0, (double)in.num_lors);
  check_pairs(sc, M, lor);
  free(lor);
  sproj_scanner_destroy(sc);
}
END_TEST

/* ---- bad arguments ------------------------------------------------------------------------------------ */
START_TEST(test_bad_arguments)
{
  struct sproj_scanner_params good, p, copy;
  REQUIRE_EQ(sproj_scanner_preset("small", &good), SPROJ_OK);
  sproj_scanner *const sentinel = (sproj_scanner *)&good, *sc = sentinel;
  memcpy(&copy, &good, sizeof copy);
  REQUIRE_EQ(sproj_scanner_preset("nonesuch", &copy), SPROJ_ERR_INVALID);
  REQUIRE(!memcmp(&copy, &good, sizeof copy));
  REQUIRE_EQ(sproj_scanner_preset(NULL, &copy), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_scanner_create(&sc, NULL), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_scanner_create(NULL, &good), SPROJ_ERR_NULL);

  int nc = 0;
#define CASE(body, st)                                                                                          \
  do {                                                                                                          \
    p = good;                                                                                                   \
    body;                                                                                                       \
    sc = sentinel;                                                                                              \
    int rc_ = sproj_scanner_create(&sc, &p);                                                                    \
    REQUIRE_MSG(rc_ == (st), "%s: %d, expected %d (%s)", #body, rc_, (st), sproj_last_error());              \
    REQUIRE_MSG(sc == sentinel, "%s changed the out-pointer", #body);                                         \
    REQUIRE(strstr(sproj_last_error(), "sproj_scanner_create") != NULL);                                      \
    nc++;                                                                                                       \
  } while (0)
  CASE(p.num_modules = 0, SPROJ_ERR_DIMS);
  CASE(p.num_rings = -1, SPROJ_ERR_DIMS);
  CASE(p.num_radial_bins = 0, SPROJ_ERR_DIMS);
  CASE(p.num_modules = 2, SPROJ_ERR_RANGE);
  CASE((p.num_modules = 15, p.detectors_per_module = 3), SPROJ_ERR_RANGE); /* 45 detectors: odd */
  CASE(p.detector_pitch = NAN, SPROJ_ERR_NONFINITE);
  CASE(p.radius = -90.0, SPROJ_ERR_RANGE);
  CASE(p.detector_pitch = 5.0, SPROJ_ERR_RANGE); /* 8 x 5 mm > the 35.8 mm side */
  CASE(p.num_rings = SPROJ_MAX_RINGS + 1, SPROJ_ERR_RANGE);
  CASE(p.ring_z[3] = p.ring_z[2], SPROJ_ERR_RANGE);
  CASE(p.ring_z[5] = INFINITY, SPROJ_ERR_NONFINITE);
  CASE(p.num_radial_bins = 128, SPROJ_ERR_RANGE);
  CASE(p.max_ring_difference = 8, SPROJ_ERR_RANGE);
  CASE(p.max_ring_difference = -2, SPROJ_ERR_RANGE);
  CASE(p.order = 3, SPROJ_ERR_INVALID);
  CASE(p.segment_sequence = -1, SPROJ_ERR_INVALID);
  REQUIRE_EQ(nc, 16);
  p = good;
  p.num_radial_bins = 127; /* the most there can be */
  REQUIRE_EQ(sproj_scanner_create(&sc, &p), SPROJ_OK);
  sproj_scanner_destroy(sc);

  sc = make("small", 3, 0, 0);
  struct sproj_sinogram_info in = info_of(sc);
  int64_t lor = -7;
  int v = -7, s = -7, a = -7, k = -7, np = -7;
  REQUIRE_EQ(sproj_scanner_lor_index(sc, 64, 0, 0, 0, &lor), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_lor_index(sc, 0, 4, 0, 0, &lor), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_lor_index(sc, 0, -3, 5, 0, &lor), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_lor_index(sc, 0, 0, 0, 65, &lor), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_lor_index(sc, 0, 0, 0, 0, NULL), SPROJ_ERR_NULL);
  REQUIRE_EQ(sproj_scanner_lor_position(sc, in.num_lors, &v, &s, &a, &k), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_lor_position(sc, -1, &v, &s, &a, &k), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_segment_planes(sc, -4, &np), SPROJ_ERR_RANGE);
  REQUIRE(lor == -7 && v == -7 && s == -7 && a == -7 && k == -7 && np == -7);
  float xs[6], xe[6];
  int views[2] = {0, 64};
  REQUIRE_EQ(sproj_scanner_view_lors(sc, views, 2, xs, xe, 1), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_view_lors(sc, views, -1, xs, xe, 1), SPROJ_ERR_DIMS);
  REQUIRE_EQ(sproj_scanner_lors(sc, xs, xe, -1), SPROJ_ERR_DIMS);
  REQUIRE_EQ(sproj_scanner_lors(sc, NULL, xe, 1), SPROJ_ERR_NULL);
  int64_t idx[1] = {in.num_lors};
  REQUIRE_EQ(sproj_scanner_lors_at(sc, 1, idx, xs, xe), SPROJ_ERR_RANGE);
  int sv[64], nv = -7;
  REQUIRE_EQ(sproj_scanner_subset_views(sc, 65, 0, sv, &nv), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_subset_views(sc, 4, 4, sv, &nv), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_subset_views(sc, 0, 0, sv, &nv), SPROJ_ERR_DIMS);
  REQUIRE_EQ(nv, -7);
  REQUIRE_EQ(sproj_scanner_destroy(NULL), SPROJ_OK);

  /* chunkings: a set of another size, too many subsets, and malformed lists */
  float *lx = tu_alloc(3 * in.num_lors), *le = tu_alloc(3 * in.num_lors);
  REQUIRE_EQ(sproj_scanner_lors(sc, lx, le, 2), SPROJ_OK);
  sproj_lors *lors, *shorter;
  sproj_chunks *const csent = (sproj_chunks *)&good, *ch = csent;
  REQUIRE_EQ(sproj_lors_register(&lors, lx, le, in.num_lors), SPROJ_OK);
  REQUIRE_EQ(sproj_lors_register(&shorter, lx, le, in.num_lors - 1), SPROJ_OK);
  REQUIRE_EQ(sproj_scanner_chunks_views(&ch, sc, shorter), SPROJ_ERR_MISMATCH);
  REQUIRE_EQ(sproj_scanner_chunks_viewgrams(&ch, sc, shorter), SPROJ_ERR_MISMATCH);
  REQUIRE_EQ(sproj_scanner_chunks_subsets(&ch, sc, lors, 65), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_scanner_chunks_subsets(&ch, sc, lors, 0), SPROJ_ERR_DIMS);
  REQUIRE_EQ(sproj_scanner_chunks_views(&ch, NULL, lors), SPROJ_ERR_NULL);
  const int nr[2] = {2, 1}, nr0[2] = {2, 0}, nrneg[2] = {2, -1};
  const int64_t f_ok[3] = {0, 200, 100}, c_ok[3] = {50, 10, 50};
  const int64_t f_ovl[3] = {0, 200, 40}, f_out[3] = {0, 200, in.num_lors - 10}, c_neg[3] = {50, -1, 50},
                c_zero[3] = {50, 0, 50};
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 2, nr, f_ovl, c_ok), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 2, nr, f_out, c_ok), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 2, nr, f_ok, c_neg), SPROJ_ERR_DIMS);
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 2, nr, f_ok, c_zero), SPROJ_ERR_EMPTY);
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 2, nr0, f_ok, c_ok), SPROJ_ERR_EMPTY);
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 2, nrneg, f_ok, c_ok), SPROJ_ERR_DIMS);
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 0, nr, f_ok, c_ok), SPROJ_ERR_EMPTY);
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 2, NULL, f_ok, c_ok), SPROJ_ERR_NULL);
  const int64_t sf[1] = {0}, sc1[1] = {100}, sstride_ovl[1] = {50}, sstride_out[1] = {in.num_lors / 2};
  const int snr[1] = {3};
  REQUIRE_EQ(sproj_chunks_create_strided(&ch, lors, 1, sf, sc1, sstride_ovl, snr), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_chunks_create_strided(&ch, lors, 1, sf, sc1, sstride_out, snr), SPROJ_ERR_RANGE);
  REQUIRE(ch == csent);
  /* a good list chunking: chunk 0 is two ranges, chunk 1 one; the single-range query refuses chunk 0 */
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 2, nr, f_ok, c_ok), SPROJ_OK);
  int64_t first = -7, count = -7, size = -7;
  REQUIRE_EQ(sproj_chunks_range(ch, 0, &first, &count), SPROJ_ERR_INVALID);
  REQUIRE(first == -7 && count == -7);
  REQUIRE_EQ(sproj_chunks_range(ch, 1, &first, &count), SPROJ_OK);
  REQUIRE(first == 100 && count == 50);
  REQUIRE_EQ(sproj_chunks_size(ch, 0, &size), SPROJ_OK);
  REQUIRE(size == 60);
  REQUIRE_EQ(sproj_chunks_size(ch, 2, &size), SPROJ_ERR_RANGE);
  REQUIRE_EQ(sproj_chunks_destroy(ch), SPROJ_OK);
  /* ranges that continue each other within a chunk are joined */
  const int nr1[1] = {3};
  const int64_t fj[3] = {0, 10, 30}, cj[3] = {10, 20, 5};
  REQUIRE_EQ(sproj_chunks_create_lists(&ch, lors, 1, nr1, fj, cj), SPROJ_OK);
  REQUIRE_EQ(sproj_chunks_range(ch, 0, &first, &count), SPROJ_OK);
  REQUIRE(first == 0 && count == 35);
  REQUIRE_EQ(sproj_chunks_destroy(ch), SPROJ_OK);
  REQUIRE_EQ(sproj_lors_unregister(shorter), SPROJ_OK);
  REQUIRE_EQ(sproj_lors_unregister(lors), SPROJ_OK);
  free(lx);
  free(le);
  sproj_scanner_destroy(sc);
}
END_TEST

int main(void)
{
  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s = suite_create("geometry");
  /* one case per test, so that CK_RUN_CASE=<name> runs one */
  const struct {
    const char *name;
    const TTest *test;
  } tests[] = {
    {"counts", test_counts},
    {"index_round_trip", test_index_round_trip},
    {"lors_reference", test_lors_reference},
    {"lors_made_where_used", test_lors_made_where_used},
    {"ring_difference_limit", test_ring_difference_limit},
    {"scanner_chunks", test_scanner_chunks},
    {"multirange_projections", test_multirange_projections},
    {"multirange_listmode", test_multirange_listmode},
    {"lors_order", test_lors_order},
    {"tof_bins", test_tof_bins},
    {"detector_pairs", test_detector_pairs},
    {"bad_arguments", test_bad_arguments},
  };
  for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
    TCase *tc = tcase_create(tests[t].name);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, tests[t].test);
    suite_add_tcase(s, tc);
  }
  int ret = tu_run(s);
  sproj_shutdown();
  return ret;
}
