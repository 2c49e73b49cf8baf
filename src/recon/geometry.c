/* SPDX-License-Identifier: Apache-2.0 */
/* geometry.c: cylindrical scanners as rings of regular polygons: presets, sinogram layout and LOR indices, LOR
 * endpoints, detector pairs of listmode events, and TOF bin numberings. */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "recon_internal.h"
#include "scanner_lors.h"

#define PI 3.14159265358979323846
_Static_assert(SPROJ_TABLE_MAX_RINGS == SPROJ_MAX_RINGS, "the table holds every ring a scanner may have");

struct sproj_scanner {
  struct sproj_scanner_params p;   /* max_ring_difference resolved */
  struct sproj_sinogram_info info;
  /* what the per-LOR math (scanner_lors.h) reads, on the host and in tasks: the segment sequence, the planes before
   * each segment, the rings' and detectors' positions */
  struct sproj_scanner_table *tab;
  size_t tab_bytes;
};

/* ---- presets ------------------------------------------------------------------------------------------ */
static void preset_small(struct sproj_scanner_params *p)
{
  p->num_modules = 16;
  p->detectors_per_module = 8;
  p->detector_pitch = 4.0;
  p->radius = 90.0;
  p->num_rings = 8;
  for (int r = 0; r < p->num_rings; r++)
    p->ring_z[r] = 4.0 * (r - 0.5 * (p->num_rings - 1));
  p->num_radial_bins = 65;
}

static void preset_vision600(struct sproj_scanner_params *p)
{
  p->num_modules = 34;
  p->detectors_per_module = 16;
  p->detector_pitch = 4.03125;
  p->radius = 0.5 * (744.1 + 2 * 8.51);
  p->num_rings = 36;
  /* a gap of 2.8 mm after every 9 rings (the scanner's blocks); centred on the rings' mean */
  double mean = 0.0;
  for (int r = 0; r < p->num_rings; r++) {
    p->ring_z[r] = 5.31556 * r + 2.8 * (r / 9);
    mean += p->ring_z[r] / p->num_rings;
  }
  for (int r = 0; r < p->num_rings; r++)
    p->ring_z[r] -= mean;
  p->num_radial_bins = 415;
}

int sproj_scanner_preset(const char *name, struct sproj_scanner_params *params)
{
  if (!name || !params)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "name and params must not be NULL");
  struct sproj_scanner_params p;
  memset(&p, 0, sizeof p);
  if (!strcmp(name, "small"))
    preset_small(&p);
  else if (!strcmp(name, "vision600"))
    preset_vision600(&p);
  else
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "unknown scanner \"%s\" (known: small, vision600)", name);
  p.max_ring_difference = p.num_rings - 1;
  p.order = SPROJ_ORDER_VIEW_SEGMENT;
  p.segment_sequence = SPROJ_SEGMENTS_ASCENDING;
  *params = p;
  return SPROJ_OK;
}

/* ---- scanner objects ---------------------------------------------------------------------------------- */
static int check_params(const char *func, const struct sproj_scanner_params *p)
{
  if (p->num_modules < 1 || p->detectors_per_module < 1 || p->num_rings < 1 || p->num_radial_bins < 1)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num_modules (%d), detectors_per_module (%d), num_rings (%d) and "
                      "num_radial_bins (%d) must be >= 1", p->num_modules, p->detectors_per_module, p->num_rings,
                      p->num_radial_bins);
  if (p->num_modules < 3)
    return sproj_fail(SPROJ_ERR_RANGE, func, "a polygon of %d modules: at least 3 are needed", p->num_modules);
  int64_t ndet = (int64_t)p->num_modules * p->detectors_per_module;
  if (ndet > SPROJ_MAX_DETECTORS_PER_RING)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%lld detectors per ring: at most %d", (long long)ndet,
                      SPROJ_MAX_DETECTORS_PER_RING);
  if (ndet % 2)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%lld detectors per ring: views need an even number", (long long)ndet);
  if (!isfinite(p->detector_pitch) || !isfinite(p->radius))
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "detector_pitch and radius must be finite");
  if (p->detector_pitch <= 0.0 || p->radius <= 0.0)
    return sproj_fail(SPROJ_ERR_RANGE, func, "detector_pitch (%g) and radius (%g) must be > 0", p->detector_pitch,
                      p->radius);
  double side = 2.0 * p->radius * tan(PI / p->num_modules);
  if (p->detectors_per_module * p->detector_pitch > side * (1.0 + 1e-12))
    return sproj_fail(SPROJ_ERR_RANGE, func, "%d detectors of pitch %g do not fit on a module side of %g",
                      p->detectors_per_module, p->detector_pitch, side);
  if (p->num_rings > SPROJ_MAX_RINGS)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%d rings: at most %d", p->num_rings, SPROJ_MAX_RINGS);
  for (int r = 0; r < p->num_rings; r++) {
    if (!isfinite(p->ring_z[r]))
      return sproj_fail(SPROJ_ERR_NONFINITE, func, "ring_z[%d] is not finite", r);
    if (r > 0 && !(p->ring_z[r] > p->ring_z[r - 1]))
      return sproj_fail(SPROJ_ERR_RANGE, func, "ring_z[%d] = %g does not exceed ring_z[%d] = %g", r, p->ring_z[r],
                        r - 1, p->ring_z[r - 1]);
  }
  if (p->num_radial_bins > ndet - 1)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%d radial bins: at most %lld (detectors per ring - 1)",
                      p->num_radial_bins, (long long)(ndet - 1));
  if (p->max_ring_difference < -1 || p->max_ring_difference > p->num_rings - 1)
    return sproj_fail(SPROJ_ERR_RANGE, func, "max_ring_difference %d outside -1 .. %d", p->max_ring_difference,
                      p->num_rings - 1);
  if (p->order != SPROJ_ORDER_VIEW_SEGMENT && p->order != SPROJ_ORDER_SEGMENT_VIEW &&
      p->order != SPROJ_ORDER_SEGMENT_AXIAL)
    return sproj_fail(SPROJ_ERR_INVALID, func, "order %d is no enum sproj_lor_order", p->order);
  if (p->segment_sequence != SPROJ_SEGMENTS_ASCENDING && p->segment_sequence != SPROJ_SEGMENTS_ZERO_PLUS &&
      p->segment_sequence != SPROJ_SEGMENTS_ZERO_MINUS)
    return sproj_fail(SPROJ_ERR_INVALID, func, "segment_sequence %d is no enum sproj_segment_sequence",
                      p->segment_sequence);
  return SPROJ_OK;
}

int sproj_scanner_create(sproj_scanner **scanner, const struct sproj_scanner_params *params)
{
  if (!scanner || !params)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner and params must not be NULL");
  int ret = check_params(__func__, params);
  if (ret)
    return ret;
  sproj_scanner *sc = calloc(1, sizeof *sc);
  if (!sc)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  struct sproj_scanner_params *p = &sc->p;
  *p = *params;
  if (p->max_ring_difference < 0)
    p->max_ring_difference = p->num_rings - 1;
  const int ndet = p->num_modules * p->detectors_per_module, max = p->max_ring_difference;
  sc->tab_bytes = sizeof *sc->tab + 2 * (size_t)ndet * sizeof(float);
  sc->tab = calloc(1, sc->tab_bytes);
  if (!sc->tab) {
    sproj_scanner_destroy(sc);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  struct sproj_scanner_table *t = sc->tab;
  float *det_x = (float *)(t + 1), *det_y = det_x + ndet;
  for (int d = 0; d < ndet; d++) {
    /* the module's centre on the polygon, then along the module (counter-clockwise) to the detector's centre; in
     * double, rounded to float once */
    int module = d / p->detectors_per_module, i = d % p->detectors_per_module;
    double phi = 2.0 * PI * module / p->num_modules;
    double along = (i - 0.5 * (p->detectors_per_module - 1)) * p->detector_pitch;
    det_x[d] = (float)(p->radius * cos(phi) - along * sin(phi));
    det_y[d] = (float)(p->radius * sin(phi) + along * cos(phi));
  }
  for (int r = 0; r < p->num_rings; r++)
    t->ring_z[r] = (float)p->ring_z[r];
  const int nseg = 2 * max + 1;
  for (int i = 0; i < nseg; i++) {
    int k = (i + 1) / 2; /* |segment| at position i of the zero-first sequences */
    if (p->segment_sequence == SPROJ_SEGMENTS_ASCENDING)
      t->seg_at[i] = i - max;
    else
      t->seg_at[i] = (i % 2 == 1) == (p->segment_sequence == SPROJ_SEGMENTS_ZERO_PLUS) ? k : -k;
    t->seg_pos[t->seg_at[i] + max] = i;
    t->plane_start[i + 1] = t->plane_start[i] + p->num_rings - abs(t->seg_at[i]);
  }
  struct sproj_sinogram_info *in = &sc->info;
  in->num_detectors = ndet;
  in->num_rings = p->num_rings;
  in->num_views = ndet / 2;
  in->num_radial_bins = p->num_radial_bins;
  in->max_ring_difference = max;
  in->num_segments = nseg;
  in->num_planes = t->plane_start[nseg];
  in->lors_per_view = (int64_t)in->num_planes * in->num_radial_bins;
  in->num_lors = in->lors_per_view * in->num_views;
  t->num_detectors = ndet;
  t->num_rings = p->num_rings;
  t->num_views = in->num_views;
  t->num_radial_bins = in->num_radial_bins;
  t->num_segments = nseg;
  t->num_planes = in->num_planes;
  t->max_ring_difference = max;
  t->order = p->order == SPROJ_ORDER_SEGMENT_VIEW    ? SPROJ_TABLE_SEGMENT_VIEW
             : p->order == SPROJ_ORDER_SEGMENT_AXIAL ? SPROJ_TABLE_SEGMENT_AXIAL
                                                     : SPROJ_TABLE_VIEW_SEGMENT;
  *scanner = sc;
  return SPROJ_OK;
}

int sproj_scanner_destroy(sproj_scanner *scanner)
{
  if (!scanner)
    return SPROJ_OK;
  free(scanner->tab);
  free(scanner);
  return SPROJ_OK;
}

int sproj_scanner_params(const sproj_scanner *scanner, struct sproj_scanner_params *params)
{
  if (!scanner || !params)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner and params must not be NULL");
  *params = scanner->p;
  return SPROJ_OK;
}

int sproj_scanner_info(const sproj_scanner *scanner, struct sproj_sinogram_info *info)
{
  if (!scanner || !info)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner and info must not be NULL");
  *info = scanner->info;
  return SPROJ_OK;
}

int sproj_scanner_segment_planes(const sproj_scanner *scanner, int segment, int *num_planes)
{
  if (!scanner || !num_planes)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner and num_planes must not be NULL");
  int max = scanner->info.max_ring_difference;
  if (segment < -max || segment > max)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "segment %d outside -%d .. %d", segment, max, max);
  *num_planes = scanner->info.num_rings - abs(segment);
  return SPROJ_OK;
}

/* ---- sinogram indices --------------------------------------------------------------------------------- */
/* Index of a valid (view, segment, axial, radial), and back (scanner_lors.h: the same math in tasks). */
static int64_t lor_index(const sproj_scanner *sc, int v, int s, int a, int k)
{
  return scanner_lor_index(sc->tab, v, s, a, k);
}

static void lor_position(const sproj_scanner *sc, int64_t lor, int *v, int *s, int *a, int *k)
{
  scanner_lor_position(sc->tab, lor, v, s, a, k);
}

int sproj_scanner_lor_index(const sproj_scanner *scanner, int view, int segment, int axial, int radial, int64_t *lor)
{
  if (!scanner || !lor)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner and lor must not be NULL");
  const struct sproj_sinogram_info *in = &scanner->info;
  int max = in->max_ring_difference;
  if (view < 0 || view >= in->num_views || segment < -max || segment > max || axial < 0 ||
      axial >= in->num_rings - abs(segment) || radial < 0 || radial >= in->num_radial_bins)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "(view %d, segment %d, axial %d, radial %d) is outside the sinogram (views "
                      "0..%d, segments -%d..%d, axial 0..num_rings-|segment|-1, radial 0..%d)", view, segment, axial,
                      radial, in->num_views - 1, max, max, in->num_radial_bins - 1);
  *lor = lor_index(scanner, view, segment, axial, radial);
  return SPROJ_OK;
}

int sproj_scanner_lor_position(const sproj_scanner *scanner, int64_t lor, int *view, int *segment, int *axial,
                               int *radial)
{
  if (!scanner || !view || !segment || !axial || !radial)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, view, segment, axial and radial must not be NULL");
  if (lor < 0 || lor >= scanner->info.num_lors)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "LOR %lld outside 0..%lld", (long long)lor,
                      (long long)scanner->info.num_lors - 1);
  lor_position(scanner, lor, view, segment, axial, radial);
  return SPROJ_OK;
}

/* ---- LOR endpoints ------------------------------------------------------------------------------------ */
/* The detector pair of a valid (view, segment, axial, radial): a at xstart, b at xend. */
static struct sproj_det_pair lor_pair(const sproj_scanner *sc, int v, int s, int a, int k)
{
  struct sproj_det_pair pr;
  scanner_lor_pair(sc->tab, v, s, a, k, &pr.ring_a, &pr.det_a, &pr.ring_b, &pr.det_b);
  return pr;
}

static void put_pair(const sproj_scanner *sc, struct sproj_det_pair pr, float *xs, float *xe)
{
  scanner_point(sc->tab, pr.ring_a, pr.det_a, xs);
  scanner_point(sc->tab, pr.ring_b, pr.det_b, xe);
}

/* Views list[first .. last-1] (NULL list: the views themselves), each written at its sinogram indices or, packed,
 * one after the other from list entry 0 on. */
struct fill_job {
  const sproj_scanner *sc;
  const int *list;
  int first, last, packed;
  float *xs, *xe;
};

static void *fill_views(void *arg)
{
  const struct fill_job *job = arg;
  const sproj_scanner *sc = job->sc;
  const struct sproj_sinogram_info *in = &sc->info;
  for (int e = job->first; e < job->last; e++) {
    int v = job->list ? job->list[e] : e;
    for (int pos = 0; pos < in->num_segments; pos++) {
      int s = sc->tab->seg_at[pos];
      for (int a = 0; a < in->num_rings - abs(s); a++) {
        int64_t i = job->packed ? e * in->lors_per_view + (int64_t)(sc->tab->plane_start[pos] + a) * in->num_radial_bins
                                : lor_index(sc, v, s, a, 0);
        for (int k = 0; k < in->num_radial_bins; k++, i++)
          put_pair(sc, lor_pair(sc, v, s, a, k), job->xs + 3 * i, job->xe + 3 * i);
      }
    }
  }
  return NULL;
}

static int fill(const char *func, const sproj_scanner *sc, const int *list, int nviews, int packed, float *xs,
                float *xe, int nthreads)
{
  if (nthreads == 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    nthreads = cores > 0 ? (int)cores : 1;
  }
  if (nthreads > nviews)
    nthreads = nviews;
  pthread_t *th = malloc(nthreads * sizeof *th);
  struct fill_job *jobs = malloc(nthreads * sizeof *jobs);
  char *started = calloc(nthreads, 1);
  if (!th || !jobs || !started) {
    free(th);
    free(jobs);
    free(started);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  for (int t = 0; t < nthreads; t++) {
    jobs[t] = (struct fill_job){sc, list, (int)((int64_t)nviews * t / nthreads),
                                (int)((int64_t)nviews * (t + 1) / nthreads), packed, xs, xe};
    /* a thread that cannot start does its share here, after the others */
    started[t] = t > 0 && pthread_create(&th[t], NULL, fill_views, &jobs[t]) == 0;
  }
  for (int t = 0; t < nthreads; t++)
    if (!started[t])
      fill_views(&jobs[t]);
  for (int t = 0; t < nthreads; t++)
    if (started[t])
      pthread_join(th[t], NULL);
  free(th);
  free(jobs);
  free(started);
  return SPROJ_OK;
}

int sproj_scanner_lors(const sproj_scanner *scanner, float *xstart, float *xend, int nthreads)
{
  if (!scanner || !xstart || !xend)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, xstart and xend must not be NULL");
  if (nthreads < 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "nthreads = %d is negative", nthreads);
  return fill(__func__, scanner, NULL, scanner->info.num_views, 0, xstart, xend, nthreads);
}

int sproj_scanner_view_lors(const sproj_scanner *scanner, const int *views, int num_views, float *xstart,
                            float *xend, int nthreads)
{
  if (!scanner || !views || !xstart || !xend)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, views, xstart and xend must not be NULL");
  if (num_views < 0 || nthreads < 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "num_views (%d) and nthreads (%d) must not be negative", num_views, nthreads);
  for (int e = 0; e < num_views; e++)
    if (views[e] < 0 || views[e] >= scanner->info.num_views)
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "views[%d] = %d outside 0..%d", e, views[e], scanner->info.num_views - 1);
  if (num_views == 0)
    return SPROJ_OK;
  return fill(__func__, scanner, views, num_views, 1, xstart, xend, nthreads);
}

/* Checks n LOR indices; returns the position of the first outside the sinogram, or -1. */
static int64_t first_bad_lor(const sproj_scanner *sc, int64_t n, const int64_t *lor)
{
  for (int64_t i = 0; i < n; i++)
    if (lor[i] < 0 || lor[i] >= sc->info.num_lors)
      return i;
  return -1;
}

/* Checks n LOR indices of the sinogram (n >= 0, each in range). */
static int check_lor_indices(const char *func, const sproj_scanner *scanner, int64_t n, const int64_t *lor)
{
  if (n < 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "n = %lld is negative", (long long)n);
  int64_t bad = first_bad_lor(scanner, n, lor);
  if (bad >= 0)
    return sproj_fail(SPROJ_ERR_RANGE, func, "lor[%lld] = %lld outside 0..%lld", (long long)bad, (long long)lor[bad],
                      (long long)scanner->info.num_lors - 1);
  return SPROJ_OK;
}

/* The detector pair of a valid LOR index. */
static struct sproj_det_pair index_pair(const sproj_scanner *scanner, int64_t lor)
{
  int v, s, a, k;
  lor_position(scanner, lor, &v, &s, &a, &k);
  return lor_pair(scanner, v, s, a, k);
}

int sproj_scanner_lors_at(const sproj_scanner *scanner, int64_t n, const int64_t *lor, float *xstart, float *xend)
{
  if (!scanner || !lor || !xstart || !xend)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, lor, xstart and xend must not be NULL");
  int ret = check_lor_indices(__func__, scanner, n, lor);
  if (ret)
    return ret;
  for (int64_t i = 0; i < n; i++)
    put_pair(scanner, index_pair(scanner, lor[i]), xstart + 3 * i, xend + 3 * i);
  return SPROJ_OK;
}

/* ---- detector pairs ----------------------------------------------------------------------------------- */
static int pair_valid(const sproj_scanner *sc, const struct sproj_det_pair *pr)
{
  int nr = sc->info.num_rings, nd = sc->info.num_detectors;
  return pr->ring_a >= 0 && pr->ring_a < nr && pr->ring_b >= 0 && pr->ring_b < nr && pr->det_a >= 0 &&
         pr->det_a < nd && pr->det_b >= 0 && pr->det_b < nd;
}

#define PAIR_RANGE_FMT "pair (ring %d, detector %d; ring %d, detector %d) is outside the scanner (%d rings of %d)"
#define PAIR_RANGE_ARGS(pr, sc) (pr).ring_a, (pr).det_a, (pr).ring_b, (pr).det_b, (sc)->info.num_rings, \
                                (sc)->info.num_detectors

int sproj_scanner_pair_lors(const sproj_scanner *scanner, int64_t n, const struct sproj_det_pair *pairs,
                            float *xstart, float *xend)
{
  if (!scanner || !pairs || !xstart || !xend)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, pairs, xstart and xend must not be NULL");
  if (n < 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "n = %lld is negative", (long long)n);
  for (int64_t i = 0; i < n; i++)
    if (!pair_valid(scanner, &pairs[i]))
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "event %lld: " PAIR_RANGE_FMT, (long long)i, PAIR_RANGE_ARGS(pairs[i], scanner));
  for (int64_t i = 0; i < n; i++)
    put_pair(scanner, pairs[i], xstart + 3 * i, xend + 3 * i);
  return SPROJ_OK;
}

int sproj_scanner_lor_pairs(const sproj_scanner *scanner, int64_t n, const int64_t *lor,
                            struct sproj_det_pair *pairs)
{
  if (!scanner || !lor || !pairs)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, lor and pairs must not be NULL");
  int ret = check_lor_indices(__func__, scanner, n, lor);
  if (ret)
    return ret;
  for (int64_t i = 0; i < n; i++)
    pairs[i] = index_pair(scanner, lor[i]);
  return SPROJ_OK;
}

int sproj_scanner_pair_lor(const sproj_scanner *scanner, const struct sproj_det_pair *pair, int64_t *lor,
                           int *swapped)
{
  if (!scanner || !pair || !lor || !swapped)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, pair, lor and swapped must not be NULL");
  const struct sproj_sinogram_info *in = &scanner->info;
  if (!pair_valid(scanner, pair))
    return SPROJ_FAIL(SPROJ_ERR_RANGE, PAIR_RANGE_FMT, PAIR_RANGE_ARGS(*pair, scanner));
  if (pair->det_a == pair->det_b)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "both ends of the pair are detector %d: no LOR", pair->det_a);
  const int nd = in->num_detectors;
  /* a sinogram LOR has det(xstart) - det(xend) = j - D/2 (mod D) and view det(xstart) - floor(j/2) < D/2; the
   * reversed pair has the view D/2 further on, so exactly one of the two orders is a view */
  for (int flip = 0; flip < 2; flip++) {
    int da = flip ? pair->det_b : pair->det_a, db = flip ? pair->det_a : pair->det_b;
    int ra = flip ? pair->ring_b : pair->ring_a, rb = flip ? pair->ring_a : pair->ring_b;
    int j = scanner_wrap(da - db + nd / 2, nd);
    if (j > nd / 2)
      j -= nd;
    int v = scanner_wrap(da - scanner_floor_half(j), nd);
    if (v >= in->num_views)
      continue;
    int k = j + in->num_radial_bins / 2, s = rb - ra;
    if (k < 0 || k >= in->num_radial_bins)
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "detectors %d and %d are %d radial bins from the centre: outside the %d bins",
                        pair->det_a, pair->det_b, j, in->num_radial_bins);
    if (abs(s) > in->max_ring_difference)
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "ring difference %d exceeds max_ring_difference %d", s,
                        in->max_ring_difference);
    *lor = lor_index(scanner, v, s, ra < rb ? ra : rb, k);
    *swapped = flip;
    return SPROJ_OK;
  }
  return SPROJ_FAIL(SPROJ_ERR_RANGE, "detectors %d and %d form no view", pair->det_a, pair->det_b);
}

/* ---- TOF bin numberings ------------------------------------------------------------------------------- */
static int convert_bins(const char *func, int64_t n, const int16_t *in, int16_t *out, int num_bins, int reverse,
                        int to_centered)
{
  if (!in || !out)
    return sproj_fail(SPROJ_ERR_NULL, func, "the bin arrays must not be NULL");
  if (n < 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "n = %lld is negative", (long long)n);
  if (num_bins < 1 || num_bins > SPROJ_MAX_TOF_BINS)
    return sproj_fail(SPROJ_ERR_TOF, func, "num_tof_bins %d outside 1..%d", num_bins, SPROJ_MAX_TOF_BINS);
  const int half = num_bins / 2;
  /* input range: 0..n-1 or -half..n-1-half */
  const int lo = to_centered ? 0 : -half, hi = lo + num_bins - 1;
  for (int64_t i = 0; i < n; i++)
    if (in[i] < lo || in[i] > hi)
      return sproj_fail(SPROJ_ERR_RANGE, func, "bin %d of element %lld outside %d..%d", in[i], (long long)i, lo, hi);
  for (int64_t i = 0; i < n; i++) {
    int b = to_centered ? in[i] : in[i] + half;
    if (reverse)
      b = num_bins - 1 - b;
    out[i] = (int16_t)(to_centered ? b - half : b);
  }
  return SPROJ_OK;
}

int sproj_tof_bins_from_centered(int64_t n, const int16_t *centered, int16_t *bins, int num_tof_bins, int reverse)
{
  return convert_bins(__func__, n, centered, bins, num_tof_bins, reverse, 0);
}

int sproj_tof_bins_to_centered(int64_t n, const int16_t *bins, int16_t *centered, int num_tof_bins, int reverse)
{
  return convert_bins(__func__, n, bins, centered, num_tof_bins, reverse, 1);
}

const struct sproj_scanner_table *sproj_scanner_table_of(const sproj_scanner *scanner, size_t *bytes)
{
  *bytes = scanner->tab_bytes;
  return scanner->tab;
}
