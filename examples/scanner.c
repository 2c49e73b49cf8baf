/* scanner.c: detector positions of a polygonal ring scanner and its sinogram LORs. */
#include "scanner.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

void scanner_vision600(struct scanner *s)
{
  s->nsides = 34;
  s->per_side = 16;
  s->spacing = 4.03125;
  s->radius = 0.5 * (744.1 + 2 * 8.51);
  s->nrings = 36;
  s->nrad = 415;
  double mean = 0.0;
  for (int r = 0; r < s->nrings; r++) {
    s->ring_z[r] = 5.31556 * r + 2.8 * (r / 9);
    mean += s->ring_z[r] / s->nrings;
  }
  for (int r = 0; r < s->nrings; r++)
    s->ring_z[r] -= mean;
}

void scanner_small(struct scanner *s)
{
  s->nsides = 16;
  s->per_side = 8;
  s->spacing = 4.0;
  s->radius = 90.0;
  s->nrings = 8;
  s->nrad = 65;
  for (int r = 0; r < s->nrings; r++)
    s->ring_z[r] = 4.0 * (r - 0.5 * (s->nrings - 1));
}

int scanner_detectors_per_ring(const struct scanner *s)
{
  return s->nsides * s->per_side;
}

int scanner_views(const struct scanner *s)
{
  return scanner_detectors_per_ring(s) / 2;
}

int scanner_planes(const struct scanner *s)
{
  return s->nrings * s->nrings;
}

int scanner_segments(const struct scanner *s)
{
  return 2 * s->nrings - 1;
}

int scanner_segment_planes(const struct scanner *s, int seg)
{
  return s->nrings - abs(seg - (s->nrings - 1));
}

int64_t scanner_lors_per_view(const struct scanner *s)
{
  return (int64_t)scanner_planes(s) * s->nrad;
}

int64_t scanner_num_lors(const struct scanner *s)
{
  return scanner_lors_per_view(s) * scanner_views(s);
}

int64_t scanner_first_lor(const struct scanner *s, int view, int seg)
{
  int64_t planes = 0;
  for (int k = 0; k < seg; k++)
    planes += scanner_segment_planes(s, k);
  return view * scanner_lors_per_view(s) + planes * s->nrad;
}

/* transaxial position of detector d of a ring: module centre on the polygon plus the offset along the module */
static void detector_xy(const struct scanner *s, int d, double *x, double *y)
{
  int side = d / s->per_side, i = d % s->per_side;
  double phi = 2.0 * M_PI * side / s->nsides;
  double offset = (i - 0.5 * (s->per_side - 1)) * s->spacing;
  *x = s->radius * cos(phi) - offset * sin(phi);
  *y = s->radius * sin(phi) + offset * cos(phi);
}

/* LOR of view v, ring pair (r1, r2), radial bin j (-nrad/2 .. nrad/2) of the interleaved sinogram: the two
 * detectors move apart by one per radial bin. */
static void sino_lor(const struct scanner *s, const double *dx, const double *dy, int v, int r1, int r2, int j,
                     float *xs, float *xe)
{
  int ndet = scanner_detectors_per_ring(s);
  int j_lo = j >= 0 ? j / 2 : -((-j + 1) / 2);
  int d1 = ((v + j_lo) % ndet + ndet) % ndet;
  int d2 = ((v + ndet / 2 - (j - j_lo)) % ndet + ndet) % ndet;
  xs[0] = (float)dx[d1];
  xs[1] = (float)dy[d1];
  xs[2] = (float)s->ring_z[r1];
  xe[0] = (float)dx[d2];
  xe[1] = (float)dy[d2];
  xe[2] = (float)s->ring_z[r2];
}

struct fill_job {
  const struct scanner *s;
  float *xs, *xe;
  const double *dx, *dy;
  const int *views;
  int first, last; /* entries of views written by this job, at position first */
};

static void *fill_views(void *arg)
{
  const struct fill_job *job = arg;
  const struct scanner *s = job->s;
  int half = s->nrad / 2;
  for (int vi = job->first; vi < job->last; vi++) {
    int64_t i = vi * scanner_lors_per_view(s);
    for (int seg = 0; seg < scanner_segments(s); seg++) {
      int rd = seg - (s->nrings - 1);
      for (int r1 = rd < 0 ? -rd : 0; r1 + rd < s->nrings && r1 < s->nrings; r1++)
        for (int j = -half; j <= half; j++, i++)
          sino_lor(s, job->dx, job->dy, job->views[vi], r1, r1 + rd, j, job->xs + 3 * i, job->xe + 3 * i);
    }
  }
  return NULL;
}

static void detectors(const struct scanner *s, double **dx, double **dy)
{
  int ndet = scanner_detectors_per_ring(s);
  *dx = malloc(ndet * sizeof **dx);
  *dy = malloc(ndet * sizeof **dy);
  for (int d = 0; d < ndet; d++)
    detector_xy(s, d, &(*dx)[d], &(*dy)[d]);
}

void scanner_views_lors(const struct scanner *s, const int *views, int nviews, float *xstart, float *xend,
                        int nthreads)
{
  double *dx, *dy;
  detectors(s, &dx, &dy);
  if (nthreads < 1)
    nthreads = 1;
  pthread_t *th = malloc(nthreads * sizeof *th);
  struct fill_job *jobs = malloc(nthreads * sizeof *jobs);
  for (int t = 0; t < nthreads; t++) {
    jobs[t] = (struct fill_job){s, xstart, xend, dx, dy, views, nviews * t / nthreads, nviews * (t + 1) / nthreads};
    pthread_create(&th[t], NULL, fill_views, &jobs[t]);
  }
  for (int t = 0; t < nthreads; t++)
    pthread_join(th[t], NULL);
  free(th);
  free(jobs);
  free(dx);
  free(dy);
}

void scanner_sinogram_lors(const struct scanner *s, float *xstart, float *xend, int nthreads)
{
  int nviews = scanner_views(s);
  int *views = malloc(nviews * sizeof *views);
  for (int v = 0; v < nviews; v++)
    views[v] = v;
  scanner_views_lors(s, views, nviews, xstart, xend, nthreads);
  free(views);
}

void scanner_random_lors(const struct scanner *s, int64_t n, uint64_t seed, float *xstart, float *xend)
{
  double *dx, *dy;
  detectors(s, &dx, &dy);
  uint64_t x = seed ? seed : 1;
  for (int64_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    int v = (int)(x % (uint64_t)scanner_views(s));
    int r1 = (int)((x >> 20) % (uint64_t)s->nrings), r2 = (int)((x >> 30) % (uint64_t)s->nrings);
    int j = (int)((x >> 40) % (uint64_t)s->nrad) - s->nrad / 2;
    sino_lor(s, dx, dy, v, r1, r2, j, xstart + 3 * i, xend + 3 * i);
  }
  free(dx);
  free(dy);
}
