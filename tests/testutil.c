/* SPDX-License-Identifier: Apache-2.0 */
/* testutil.c: random data, the independent double-precision reference projector, phantoms and comparisons. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

void tu_seed(uint64_t seed)
{
  rng_state = seed ? seed : 0x9e3779b97f4a7c15ull;
}

static uint64_t next_u64(void)
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

double tu_uniform(double lo, double hi)
{
  return lo + (hi - lo) * ((next_u64() >> 11) * (1.0 / 9007199254740992.0));
}

int tu_randint(int lo, int hi)
{
  return lo + (int)(next_u64() % (uint64_t)(hi - lo + 1));
}

int64_t tu_nvox(const struct tu_geom *g)
{
  return (int64_t)g->n[0] * g->n[1] * g->n[2];
}

float *tu_alloc(int64_t n)
{
  float *v = malloc((size_t)n * sizeof *v);
  if (!v) {
    fprintf(stderr, "out of memory\n");
    exit(99);
  }
  return v;
}

void tu_fill_uniform(float *v, int64_t n, float lo, float hi)
{
  for (int64_t i = 0; i < n; i++)
    v[i] = (float)tu_uniform(lo, hi);
}

void tu_random_geom(struct tu_geom *g)
{
  for (int k = 0; k < 3; k++) {
    g->n[k] = tu_randint(9, 33);
    g->vs[k] = (float)tu_uniform(0.7, 2.5);
    g->origin[k] = (float)(-0.5 * (g->n[k] - 1) * g->vs[k] + tu_uniform(-3.0, 3.0));
  }
}

double tu_box_lo(const struct tu_geom *g, int k)
{
  return (double)g->origin[k] - 0.5 * g->vs[k];
}

double tu_box_hi(const struct tu_geom *g, int k)
{
  return tu_box_lo(g, k) + (double)g->n[k] * g->vs[k];
}

static void random_point_in_box(const struct tu_geom *g, double margin, double p[3])
{
  for (int k = 0; k < 3; k++) {
    double lo = tu_box_lo(g, k), hi = tu_box_hi(g, k), w = hi - lo;
    p[k] = tu_uniform(lo - margin * w, hi + margin * w);
  }
}

static void random_direction(double d[3])
{
  double z = tu_uniform(-1.0, 1.0), phi = tu_uniform(0.0, 2.0 * M_PI), r = sqrt(1.0 - z * z);
  d[0] = r * cos(phi);
  d[1] = r * sin(phi);
  d[2] = z;
}

void tu_random_lors(const struct tu_geom *g, float *xs, float *xe, int64_t n, int64_t kinds[8])
{
  double centre[3], diag = 0.0;
  for (int k = 0; k < 3; k++) {
    centre[k] = 0.5 * (tu_box_lo(g, k) + tu_box_hi(g, k));
    diag += pow(tu_box_hi(g, k) - tu_box_lo(g, k), 2);
  }
  diag = sqrt(diag);
  if (kinds)
    memset(kinds, 0, 8 * sizeof *kinds);
  for (int64_t i = 0; i < n; i++) {
    double a[3], b[3], d[3];
    int kind = (int)(i % 8);
    switch (kind) {
    case 0: /* crossing: a chord through a point of the box between points on a large sphere */
      random_point_in_box(g, 0.0, a);
      random_direction(d);
      for (int k = 0; k < 3; k++) {
        b[k] = a[k] + diag * d[k];
        a[k] = a[k] - diag * d[k];
      }
      break;
    case 1: /* both endpoints inside the box */
      random_point_in_box(g, -0.05, a);
      random_point_in_box(g, -0.05, b);
      break;
    case 2: /* one endpoint inside */
      random_point_in_box(g, -0.05, a);
      random_direction(d);
      for (int k = 0; k < 3; k++)
        b[k] = a[k] + diag * d[k];
      break;
    case 3: /* missing the box: shifted beyond one face */
      random_point_in_box(g, 0.0, a);
      random_point_in_box(g, 0.0, b);
      {
        int k = tu_randint(0, 2);
        double shift = tu_box_hi(g, k) - tu_box_lo(g, k) + 0.5 * g->vs[k];
        a[k] += shift;
        b[k] = a[k] + tu_uniform(0.0, 2.0);
      }
      break;
    case 4: /* parallel to one axis, through the box or just at a voxel-centre line */
      random_point_in_box(g, 0.0, a);
      {
        int k = tu_randint(0, 2);
        if (tu_randint(0, 1))
          for (int j = 0; j < 3; j++)
            if (j != k)
              a[j] = g->origin[j] + tu_randint(0, g->n[j] - 1) * (double)g->vs[j];
        for (int j = 0; j < 3; j++)
          b[j] = a[j];
        a[k] = tu_box_lo(g, k) - tu_uniform(0.1, 10.0);
        b[k] = tu_box_hi(g, k) + tu_uniform(0.1, 10.0);
        if (tu_randint(0, 1)) {
          double t = a[k];
          a[k] = b[k];
          b[k] = t;
        }
      }
      break;
    case 5: /* in a plane perpendicular to an axis */
      random_point_in_box(g, 0.0, a);
      random_direction(d);
      {
        int k = tu_randint(0, 2);
        d[k] = 0.0;
        for (int j = 0; j < 3; j++) {
          b[j] = a[j] + diag * d[j];
          a[j] = a[j] - diag * d[j];
        }
      }
      break;
    case 6: /* zero length, inside or outside */
      random_point_in_box(g, 0.3, a);
      for (int j = 0; j < 3; j++)
        b[j] = a[j];
      break;
    default: /* exact ties of the principal axis: |d0| == |d1| (and sometimes == |d2|) */
      random_point_in_box(g, 0.0, a);
      {
        double s = tu_uniform(0.5, 1.0) * diag;
        d[0] = s * (tu_randint(0, 1) ? 1 : -1);
        d[1] = s * (tu_randint(0, 1) ? 1 : -1);
        d[2] = tu_randint(0, 1) ? s : 0.3 * s;
        for (int j = 0; j < 3; j++) {
          b[j] = a[j] + d[j];
          a[j] = a[j] - d[j];
        }
      }
      break;
    }
    for (int k = 0; k < 3; k++) {
      xs[3 * i + k] = (float)a[k];
      xe[3 * i + k] = (float)b[k];
    }
    if (kinds)
      kinds[kind]++;
  }
  (void)centre;
}

/* ---- reference projector ---- */
/* The LOR in double precision, clipped to the box; 0 if nothing is sampled. */
struct ref_ray {
  double xs[3], d[3];
  int axis;
  int kfirst, klast;
};

/* Sets *ambiguous when the first or last plane hangs on a clipped end lying within 1e-4 voxel of a plane: there
 * Joseph's method jumps, and float and double arithmetic may rightly disagree on including that plane. */
static int ref_setup(const struct tu_geom *g, const float *xs_f, const float *xe_f, struct ref_ray *r, int *ambiguous)
{
  double t0 = 0.0, t1 = 1.0;
  float df[3];
  *ambiguous = 0;
  for (int k = 0; k < 3; k++) {
    r->xs[k] = xs_f[k];
    /* the direction is the float difference of the endpoints, as the projector defines it */
    df[k] = xe_f[k] - xs_f[k];
    r->d[k] = df[k];
  }
  if (r->d[0] == 0.0 && r->d[1] == 0.0 && r->d[2] == 0.0)
    return 0;
  for (int k = 0; k < 3; k++) {
    double lo = tu_box_lo(g, k), hi = tu_box_hi(g, k);
    if (r->d[k] == 0.0) {
      if (r->xs[k] < lo || r->xs[k] > hi)
        return 0;
      continue;
    }
    double ta = (lo - r->xs[k]) / r->d[k], tb = (hi - r->xs[k]) / r->d[k];
    t0 = fmax(t0, fmin(ta, tb));
    t1 = fmin(t1, fmax(ta, tb));
  }
  if (t1 < t0)
    return 0;
  /* the principal axis is a convention decided in float (parallelproj's squared cosines and tie order) */
  float sq[3] = {df[0] * df[0], df[1] * df[1], df[2] * df[2]};
  float sum = sq[0] + sq[1] + sq[2];
  float c0 = sq[0] / sum, c1 = sq[1] / sum, c2 = sq[2] / sum;
  r->axis = (c1 >= c0 && c1 >= c2) ? 1 : (c2 >= c0 && c2 >= c1) ? 2 : 0;
  int a = r->axis;
  double fa = (r->xs[a] + t0 * r->d[a] - g->origin[a]) / g->vs[a];
  double fb = (r->xs[a] + t1 * r->d[a] - g->origin[a]) / g->vs[a];
  *ambiguous = fabs(fa - nearbyint(fa)) < 1e-4 || fabs(fb - nearbyint(fb)) < 1e-4;
  if (floor(fa) == floor(fb))
    return 0;
  r->kfirst = (int)floor(fmin(fa, fb)) + 1;
  r->klast = (int)floor(fmax(fa, fb));
  if (r->kfirst < 0)
    r->kfirst = 0;
  if (r->klast > g->n[a] - 1)
    r->klast = g->n[a] - 1;
  return r->kfirst <= r->klast;
}

/* Index coordinates (continuous, voxel centres at integers) where the ray crosses plane k of its axis. */
static void ref_point(const struct tu_geom *g, const struct ref_ray *r, int k, double idx[3])
{
  int a = r->axis;
  double t = ((double)g->origin[a] + k * (double)g->vs[a] - r->xs[a]) / r->d[a];
  for (int j = 0; j < 3; j++)
    idx[j] = j == a ? k : (r->xs[j] + t * r->d[j] - g->origin[j]) / g->vs[j];
}

static double ref_length(const struct tu_geom *g, const struct ref_ray *r)
{
  double len = sqrt(r->d[0] * r->d[0] + r->d[1] * r->d[1] + r->d[2] * r->d[2]);
  return g->vs[r->axis] * len / fabs(r->d[r->axis]);
}

/* the four (voxel index, weight) pairs of a plane sample; out-of-image corners get index -1 */
static void ref_corners(const struct tu_geom *g, const struct ref_ray *r, const double idx[3], int64_t vox[4],
                        double w[4])
{
  int a = r->axis, u = a == 0 ? 1 : 0, v = a == 2 ? 1 : 2;
  double fu = floor(idx[u]), fv = floor(idx[v]);
  double wu = idx[u] - fu, wv = idx[v] - fv;
  for (int c = 0; c < 4; c++) {
    int iu = (int)fu + (c & 1), iv = (int)fv + (c >> 1);
    int i[3];
    i[a] = (int)idx[a];
    i[u] = iu;
    i[v] = iv;
    w[c] = ((c & 1) ? wu : 1.0 - wu) * ((c >> 1) ? wv : 1.0 - wv);
    vox[c] = (iu < 0 || iu >= g->n[u] || iv < 0 || iv >= g->n[v]) ? -1
                                                                    : ((int64_t)i[0] * g->n[1] + i[1]) * g->n[2] + i[2];
  }
}

int tu_ref_ambiguous(const struct tu_geom *g, const float *xs, const float *xe)
{
  struct ref_ray r;
  int ambiguous;
  ref_setup(g, xs, xe, &r, &ambiguous);
  return ambiguous;
}

double tu_ref_fwd_lor(const float *img, const struct tu_geom *g, const float *xs, const float *xe)
{
  struct ref_ray r;
  int ambiguous;
  if (!ref_setup(g, xs, xe, &r, &ambiguous))
    return 0.0;
  double sum = 0.0;
  for (int k = r.kfirst; k <= r.klast; k++) {
    double idx[3], w[4];
    int64_t vox[4];
    ref_point(g, &r, k, idx);
    ref_corners(g, &r, idx, vox, w);
    for (int c = 0; c < 4; c++)
      if (vox[c] >= 0)
        sum += w[c] * img[vox[c]];
  }
  return sum * ref_length(g, &r);
}

void tu_ref_fwd(const float *img, const struct tu_geom *g, const float *xs, const float *xe, int64_t n, double *out)
{
  for (int64_t i = 0; i < n; i++)
    out[i] = tu_ref_fwd_lor(img, g, xs + 3 * i, xe + 3 * i);
}

void tu_ref_back(double *img, const struct tu_geom *g, const float *xs, const float *xe, const float *values,
                 int64_t n)
{
  for (int64_t i = 0; i < n; i++) {
    struct ref_ray r;
    int ambiguous;
    if (!ref_setup(g, xs + 3 * i, xe + 3 * i, &r, &ambiguous))
      continue;
    double val = values[i] * ref_length(g, &r);
    for (int k = r.kfirst; k <= r.klast; k++) {
      double idx[3], w[4];
      int64_t vox[4];
      ref_point(g, &r, k, idx);
      ref_corners(g, &r, idx, vox, w);
      for (int c = 0; c < 4; c++)
        if (vox[c] >= 0)
          img[vox[c]] += w[c] * val;
    }
  }
}

void tu_ball_image(float *img, const struct tu_geom *g, const double c[3], double r, int s)
{
  for (int i0 = 0; i0 < g->n[0]; i0++)
    for (int i1 = 0; i1 < g->n[1]; i1++)
      for (int i2 = 0; i2 < g->n[2]; i2++) {
        int inside = 0;
        for (int a = 0; a < s; a++)
          for (int b = 0; b < s; b++)
            for (int e = 0; e < s; e++) {
              double p0 = g->origin[0] + (i0 - 0.5 + (a + 0.5) / s) * g->vs[0] - c[0];
              double p1 = g->origin[1] + (i1 - 0.5 + (b + 0.5) / s) * g->vs[1] - c[1];
              double p2 = g->origin[2] + (i2 - 0.5 + (e + 0.5) / s) * g->vs[2] - c[2];
              inside += p0 * p0 + p1 * p1 + p2 * p2 <= r * r;
            }
        img[((int64_t)i0 * g->n[1] + i1) * g->n[2] + i2] = (float)inside / (s * s * s);
      }
}

/* ---- comparisons ---- */
double tu_max_abs(const float *v, int64_t n)
{
  double m = 0.0;
  for (int64_t i = 0; i < n; i++)
    m = fmax(m, fabs(v[i]));
  return m;
}

double tu_max_abs_diff_fd(const float *a, const double *b, int64_t n)
{
  double m = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    if (!(d <= m)) /* NaN propagates */
      m = isnan(d) ? INFINITY : d;
  }
  return m;
}

double tu_rel_l2_ff(const float *a, const float *b, int64_t n)
{
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; i++) {
    num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    den += (double)b[i] * b[i];
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

double tu_rel_l2_fd(const float *a, const double *b, int64_t n)
{
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; i++) {
    num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

double tu_dot_fd(const float *a, const double *b, int64_t n)
{
  double s = 0.0;
  for (int64_t i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

double tu_dot_ff(const float *a, const float *b, int64_t n)
{
  double s = 0.0;
  for (int64_t i = 0; i < n; i++)
    s += (double)a[i] * b[i];
  return s;
}

int tu_init(int ncpu, int ncuda)
{
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = ncpu;
  cfg.ncuda = ncuda;
  setenv("STARPU_SILENT", "1", 0);
  return sproj_init(&cfg);
}

int tu_run(Suite *s)
{
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}

/* ---- whole-set projections through the library ---- */
int tu_set_register(struct tu_set *s, const struct tu_geom *g, float *img, const float *xs, const float *xe,
                    int64_t n, float *values)
{
  int ret = sproj_image_register(&s->img, img, g->n, g->vs, g->origin);
  if (ret)
    return ret;
  if ((ret = sproj_lors_register(&s->lors, xs, xe, n)))
    return ret;
  return sproj_proj_register(&s->proj, values, s->lors);
}

int tu_set_unregister(struct tu_set *s)
{
  int r1 = sproj_proj_unregister(s->proj), r2 = sproj_lors_unregister(s->lors), r3 = sproj_image_unregister(s->img);
  return r1 ? r1 : r2 ? r2 : r3;
}

int tu_fwd_whole(const struct tu_geom *g, float *img, const float *xs, const float *xe, int64_t n, float *out)
{
  struct tu_set s;
  int ret = tu_set_register(&s, g, img, xs, xe, n, out);
  if (!ret)
    ret = sproj_fwd(s.img, s.proj, NULL, SPROJ_ALL_CHUNKS);
  int ret2 = tu_set_unregister(&s);
  return ret ? ret : ret2;
}

int tu_back_whole(const struct tu_geom *g, float *img, const float *xs, const float *xe, int64_t n, float *values)
{
  struct tu_set s;
  int ret = tu_set_register(&s, g, img, xs, xe, n, values);
  if (!ret)
    ret = sproj_back(s.img, s.proj, NULL, SPROJ_ALL_CHUNKS);
  int ret2 = tu_set_unregister(&s);
  return ret ? ret : ret2;
}

int64_t tu_total_tasks(void)
{
  int64_t total = 0;
  for (int w = 0; w < sproj_num_workers(); w++) {
    struct sproj_worker_stats st;
    if (sproj_worker_stats(w, &st) == 0)
      total += st.tasks;
  }
  return total;
}

/* ---- TOF reference ---- */
/* The principal axis a's correction factor, cosine and direction in float, as parallelproj computes them. */
static void ref_tof_frame(const struct tu_geom *g, const float *xs, const float *xe, int a, float *cf_f,
                          float *costheta, float *sign)
{
  float sq[3];
  for (int k = 0; k < 3; k++)
    sq[k] = (xe[k] - xs[k]) * (xe[k] - xs[k]);
  float sum = sq[0] + sq[1] + sq[2];
  *cf_f = g->vs[a] / sqrtf(sq[a] / sum);
  *costheta = g->vs[a] / *cf_f;
  *sign = xe[a] >= xs[a] ? 1.0f : -1.0f;
}

void tu_ref_tof_sino_lor(const float *img, const struct tu_geom *g, const float *xs, const float *xe, float bin_width,
                         int num_bins, float num_sigmas, float sigma, float offset, double *out)
{
  struct ref_ray r;
  int ambiguous;
  for (int b = 0; b < num_bins; b++)
    out[b] = 0.0;
  if (!ref_setup(g, xs, xe, &r, &ambiguous))
    return;
  int a = r.axis;
  /* Which bins a sample reaches is parallelproj's float convention: emulate it exactly (window only). */
  float cf_f, costheta, sign;
  ref_tof_frame(g, xs, xe, a, &cf_f, &costheta, &sign);
  float tof_origin = 0.5f * (xs[a] + xe[a]) - sign * (0.5f * num_bins - 0.5f) * (bin_width * costheta) +
                     sign * offset * costheta;
  float tof_slope = sign * bin_width * costheta;
  float at = sign * cf_f / bin_width, bt = (g->origin[a] - tof_origin) / tof_slope;
  float max_diff = num_sigmas * sigma / bin_width;
  /* everything else in double: positions along the LOR, the Gaussian integrals, their sum */
  double len = sqrt(r.d[0] * r.d[0] + r.d[1] * r.d[1] + r.d[2] * r.d[2]);
  double cf = ref_length(g, &r), s2 = sqrt(2.0) * sigma;
  for (int k = r.kfirst; k <= r.klast; k++) {
    float it_f = k * at + bt;
    int it_min = (int)floorf(it_f - max_diff), n = (int)ceilf(it_f + max_diff) + 1 - it_min;
    if (n > 64) {
      it_min = (int)lroundf(it_f) - 32;
      n = 64;
    }
    double idx[3], w[4];
    int64_t vox[4];
    ref_point(g, &r, k, idx);
    ref_corners(g, &r, idx, vox, w);
    double value = 0.0;
    for (int c = 0; c < 4; c++)
      if (vox[c] >= 0)
        value += w[c] * img[vox[c]];
    double t = ((double)g->origin[a] + k * (double)g->vs[a] - r.xs[a]) / r.d[a];
    double s = (t - 0.5) * len;                              /* from the midpoint towards xend */
    double it = (s - offset) / bin_width + 0.5 * (num_bins - 1); /* TOF coordinate in bins */
    double weight[64], total = 0.0;
    for (int j = 0; j < n; j++) {
      double x = (it - (it_min + j)) * bin_width;
      weight[j] = 0.5 * (erf((x + 0.5 * bin_width) / s2) - erf((x - 0.5 * bin_width) / s2));
      total += weight[j];
    }
    for (int j = 0; j < n; j++)
      if (it_min + j >= 0 && it_min + j < num_bins)
        out[it_min + j] += cf * value * weight[j] / total;
  }
}

double tu_ref_tof_lm_pp_lor(const float *img, const struct tu_geom *g, const float *xs, const float *xe, float bin_width,
                            int num_bins, float num_sigmas, float sigma, float offset, int bin)
{
  struct ref_ray r;
  int ambiguous;
  if (!ref_setup(g, xs, xe, &r, &ambiguous))
    return 0.0;
  int a = r.axis;
  /* the window's planes as libparallelproj rounds them (in float, its centre of bin 0 in double) */
  float cf_f, costheta, sign;
  ref_tof_frame(g, xs, xe, a, &cf_f, &costheta, &sign);
  float tof_origin = (float)(0.5 * (double)(xs[a] + xe[a]) -
                             (double)sign * (0.5 * num_bins - 0.5) * (double)(bin_width * costheta) +
                             (double)(offset * costheta));
  float tof_slope = sign * bin_width * costheta;
  float at = sign * cf_f / bin_width, bt = (g->origin[a] - tof_origin) / tof_slope;
  float reach = num_sigmas * sigma / bin_width;
  int k0 = (int)floorf((((float)bin - sign * reach) - bt) / at);
  int k1 = (int)ceilf((((float)bin + sign * reach) - bt) / at);
  /* the rest in double: bin b's centre on the principal axis, each plane's distance from it, the Gaussian
   * integrals and their sum (over every plane of the window, the image's only in the value) */
  double cos_d = (double)g->vs[a] / ref_length(g, &r), s2 = sqrt(2.0) * sigma;
  double origin_d = 0.5 * ((double)xs[a] + xe[a]) - sign * (0.5 * num_bins - 0.5) * bin_width * cos_d +
                    (double)offset * cos_d;
  double total = 0.0, value = 0.0;
  for (int k = k0; k <= k1; k++) {
    double x = (double)g->origin[a] + k * (double)g->vs[a];
    double dist = fabs((x - origin_d) / (sign * cos_d) - bin * (double)bin_width);
    double w = 0.5 * (erf((dist + 0.5 * bin_width) / s2) - erf((dist - 0.5 * bin_width) / s2));
    total += w;
    if (k < r.kfirst || k > r.klast)
      continue;
    double idx[3], cw[4];
    int64_t vox[4];
    ref_point(g, &r, k, idx);
    ref_corners(g, &r, idx, vox, cw);
    for (int c = 0; c < 4; c++)
      if (vox[c] >= 0)
        value += w * cw[c] * img[vox[c]];
  }
  return total > 0.0 ? value * bin_width / total : 0.0;
}

void tu_check_back_against_ref(const struct tu_geom *g, int64_t n, double max_tol, double rel_tol)
{
  int64_t nvox = tu_nvox(g);
  float *img = tu_alloc(nvox), *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *values = tu_alloc(n);
  double *ref = calloc(nvox, sizeof *ref);
  tu_random_lors(g, xs, xe, n, NULL);
  tu_fill_uniform(values, n, 0.1f, 1.0f);
  for (int64_t i = 0; i < n; i++)
    if (tu_ref_ambiguous(g, xs + 3 * i, xe + 3 * i))
      values[i] = 0.0f;
  memset(img, 0, nvox * sizeof *img);
  ck_assert_int_eq(tu_back_whole(g, img, xs, xe, n, values), SPROJ_OK);
  tu_ref_back(ref, g, xs, xe, values, n);
  double maxref = 0.0;
  for (int64_t v = 0; v < nvox; v++)
    maxref = fmax(maxref, fabs(ref[v]));
  ck_assert_msg(maxref > 0.0, "nothing was back projected");
  double maxdiff = tu_max_abs_diff_fd(img, ref, nvox), rel = tu_rel_l2_fd(img, ref, nvox);
  ck_assert_msg(maxdiff <= max_tol * maxref, "max voxel difference %.3g (max value %.3g, bound %.3g of it)", maxdiff,
                maxref, max_tol);
  ck_assert_msg(rel <= rel_tol, "relative L2 difference %.3g (bound %.3g)", rel, rel_tol);
  free(img);
  free(xs);
  free(xe);
  free(values);
  free(ref);
}
