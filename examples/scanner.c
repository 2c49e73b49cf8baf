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

struct fill_job {
  const struct scanner *s;
  float *xs, *xe;
  const double *dx, *dy;
  int view0, view1;
};

static int floor_div2(int j)
{
  return j >= 0 ? j / 2 : -((-j + 1) / 2);
}

static void *fill_views(void *arg)
{
  const struct fill_job *job = arg;
  const struct scanner *s = job->s;
  int ndet = scanner_detectors_per_ring(s), half = s->nrad / 2;
  for (int v = job->view0; v < job->view1; v++) {
    int64_t i = scanner_first_lor(s, v, 0);
    for (int seg = 0; seg < scanner_segments(s); seg++) {
      int rd = seg - (s->nrings - 1);
      for (int r1 = rd < 0 ? -rd : 0; r1 + rd < s->nrings && r1 < s->nrings; r1++) {
        int r2 = r1 + rd;
        for (int j = -half; j <= half; j++, i++) {
          /* interleaved sinogram: the two detectors move apart by one per radial bin */
          int d1 = ((v + floor_div2(j)) % ndet + ndet) % ndet;
          int d2 = ((v + ndet / 2 - (j - floor_div2(j))) % ndet + ndet) % ndet;
          job->xs[3 * i + 0] = (float)job->dx[d1];
          job->xs[3 * i + 1] = (float)job->dy[d1];
          job->xs[3 * i + 2] = (float)s->ring_z[r1];
          job->xe[3 * i + 0] = (float)job->dx[d2];
          job->xe[3 * i + 1] = (float)job->dy[d2];
          job->xe[3 * i + 2] = (float)s->ring_z[r2];
        }
      }
    }
  }
  return NULL;
}

void scanner_sinogram_lors(const struct scanner *s, float *xstart, float *xend, int nthreads)
{
  int ndet = scanner_detectors_per_ring(s), nviews = scanner_views(s);
  double *dx = malloc(ndet * sizeof *dx), *dy = malloc(ndet * sizeof *dy);
  for (int d = 0; d < ndet; d++)
    detector_xy(s, d, &dx[d], &dy[d]);
  if (nthreads < 1)
    nthreads = 1;
  pthread_t *th = malloc(nthreads * sizeof *th);
  struct fill_job *jobs = malloc(nthreads * sizeof *jobs);
  for (int t = 0; t < nthreads; t++) {
    jobs[t] = (struct fill_job){s, xstart, xend, dx, dy, nviews * t / nthreads, nviews * (t + 1) / nthreads};
    pthread_create(&th[t], NULL, fill_views, &jobs[t]);
  }
  for (int t = 0; t < nthreads; t++)
    pthread_join(th[t], NULL);
  free(th);
  free(jobs);
  free(dx);
  free(dy);
}
