/* pp_calls.c: the C side of bench_pp_calls.py: each of starproj_parallelproj.h's one-shot calls on a small input,
 * many times over, from C.
 * usage: pp_calls [calls [reps [ncpu [nlors]]]]
 * Prints one line per call and timed pass: "name calls seconds thread_cpu_seconds". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <starproj.h>
#include <starproj_parallelproj.h>

/* The input bench_pp_calls.py gives the Python calls: an 8^3 image, nlors LORs across it along x. */
#define DIM 8
#define TOF_BINS 5

static double clock_s(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#define CHECK(call)                                                                                            \
  do {                                                                                                         \
    int st_ = (call);                                                                                          \
    if (st_) {                                                                                                 \
      fprintf(stderr, "%s: %s\n", #call, sproj_last_error());                                                  \
      exit(1);                                                                                                 \
    }                                                                                                          \
  } while (0)

int main(int argc, char **argv)
{
  static const char *const names[] = {"joseph3d_fwd", "joseph3d_back", "joseph3d_tof_sino_fwd",
                                      "joseph3d_tof_sino_back", "joseph3d_tof_lm_fwd", "joseph3d_tof_lm_back"};
  int calls = argc > 1 ? atoi(argv[1]) : 500;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = argc > 3 ? atoi(argv[3]) : -1;
  cfg.ncuda = 0;
  int n = argc > 4 ? atoi(argv[4]) : 4;
  CHECK(sproj_init(&cfg));

  static float image[DIM * DIM * DIM];
  float *xs = malloc(sizeof(float) * 3 * n), *xe = malloc(sizeof(float) * 3 * n), *vals = malloc(sizeof(float) * n);
  float *sino = malloc(sizeof(float) * n * TOF_BINS);
  short *bins = malloc(sizeof(short) * n);
  for (int i = 0; i < DIM * DIM * DIM; i++)
    image[i] = 1.0f + (float)(i % 7);
  for (int i = 0; i < n; i++) {
    float y = -3.0f + 6.0f * (float)(i % 4) / 3.0f, z = 1.0f - 0.5f * (float)(i % 5);
    xs[3 * i] = -20.0f, xs[3 * i + 1] = y, xs[3 * i + 2] = z;
    xe[3 * i] = 20.0f, xe[3 * i + 1] = -y, xe[3 * i + 2] = z;
    vals[i] = 1.0f;
    bins[i] = (short)(i % TOF_BINS);
  }
  for (int i = 0; i < n * TOF_BINS; i++)
    sino[i] = 1.0f;
  int dims[3] = {DIM, DIM, DIM};
  float vs[3] = {2.0f, 2.0f, 2.0f}, origin[3] = {-7.0f, -7.0f, -7.0f}, sigma = 8.0f, offset = 0.0f;

  for (int k = 0; k < 6; k++)
    for (int r = -1; r < reps; r++) { /* one warm-up pass */
      double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
      for (int c = 0; c < calls; c++) {
        switch (k) {
        case 0: CHECK(sproj_pp_joseph3d_fwd(xs, xe, image, origin, vs, vals, n, dims, 0, 64)); break;
        case 1: CHECK(sproj_pp_joseph3d_back(xs, xe, image, origin, vs, vals, n, dims, 0, 64)); break;
        case 2:
          CHECK(sproj_pp_joseph3d_tof_sino_fwd(xs, xe, image, origin, vs, sino, n, dims, 10.0f, &sigma, &offset, 3.0f,
                                               TOF_BINS, 0, 0, 0, 64));
          break;
        case 3:
          CHECK(sproj_pp_joseph3d_tof_sino_back(xs, xe, image, origin, vs, sino, n, dims, 10.0f, &sigma, &offset, 3.0f,
                                                TOF_BINS, 0, 0, 0, 64));
          break;
        case 4:
          CHECK(sproj_pp_joseph3d_tof_lm_fwd(xs, xe, image, origin, vs, vals, n, dims, 10.0f, &sigma, &offset, 3.0f,
                                             bins, TOF_BINS, 0, 0, 0, 64));
          break;
        default:
          CHECK(sproj_pp_joseph3d_tof_lm_back(xs, xe, image, origin, vs, vals, n, dims, 10.0f, &sigma, &offset, 3.0f,
                                              bins, TOF_BINS, 0, 0, 0, 64));
          break;
        }
        /* back projections add into the image: keep its values bounded */
        if (k % 2)
          image[0] = 1.0f;
      }
      double t1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
      if (r >= 0)
        printf("%s %d %.9f %.9f\n", names[k], calls, t1 - t0, c1 - c0);
    }
  CHECK(sproj_shutdown());
  free(xs);
  free(xe);
  free(vals);
  free(sino);
  free(bins);
  return 0;
}
