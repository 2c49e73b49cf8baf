/* SPDX-License-Identifier: Apache-2.0 */
/* common.h: what the example programs share: option parsing, failing loudly on a status, a monotonic clock and the
 * benchmark geometry. */
#ifndef SPROJ_EXAMPLES_COMMON_H
#define SPROJ_EXAMPLES_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "starproj.h"
#include "starproj_recon.h"
#include "starproj_io.h"

/* A whole-number option value in lo..hi, or a message naming the option and exit 2 (programs reject malformed
 * numbers instead of reading "1e6" as 1). */
static inline long long option_number(const char *prog, const char *option, const char *arg, long long lo,
                                      long long hi)
{
  char *end;
  errno = 0;
  long long v = strtoll(arg, &end, 10);
  if (errno || end == arg || *end || v < lo || v > hi) {
    fprintf(stderr, "%s: %s needs a whole number in %lld..%lld, not '%s' (see --help)\n", prog, option, lo, hi, arg);
    exit(2);
  }
  return v;
}

/* The index of arg among the n choices, or a message naming the option and its choices and exit 2. */
static inline int option_choice(const char *prog, const char *option, const char *arg, const char *const *choices,
                                int n)
{
  for (int i = 0; i < n; i++)
    if (!strcmp(arg, choices[i]))
      return i;
  fprintf(stderr, "%s: %s needs ", prog, option);
  for (int i = 0; i < n; i++)
    fprintf(stderr, "%s%s", choices[i], i + 2 < n ? ", " : i + 1 < n ? " or " : "");
  fprintf(stderr, ", not '%s'\n", arg);
  exit(2);
}

/* Unknown option or stray argument: a message and exit 2. */
static inline int option_error(const char *prog, const char *what)
{
  fprintf(stderr, "%s: unknown option or argument '%s' (see --help)\n", prog, what);
  return 2;
}

#define CHECK(call)                                                                                             \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    if (rc_ != SPROJ_OK) {                                                                                     \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, sproj_strerror(rc_), sproj_last_error());                \
      exit(1);                                                                                                 \
    }                                                                                                          \
  } while (0)

/* The benchmark geometry: the Vision 600-like scanner and a 215 x 215 x 71 image of 2.78 mm voxels centred on the
 * scanner, or with small a quick one for a development machine (8 modules, 6 rings, 101 radial bins, every ring
 * difference; 64 x 64 x 24 voxels of 8 mm). Fails loudly like CHECK. */
static inline void benchmark_geometry(int small, struct sproj_scanner_params *sp, int n[3], float vs[3],
                                      float origin[3])
{
  CHECK(sproj_scanner_preset("vision600", sp));
  n[0] = n[1] = small ? 64 : 215;
  n[2] = small ? 24 : 71;
  vs[0] = vs[1] = vs[2] = small ? 8.0f : 2.78f;
  if (small) {
    sp->num_modules = 8;
    sp->num_rings = 6;
    sp->num_radial_bins = 101;
    sp->max_ring_difference = -1;
  }
  for (int k = 0; k < 3; k++)
    origin[k] = (-n[k] / 2.0f + 0.5f) * vs[k];
}

/* The benchmark's TOF parameters: 29 bins of 13 x 0.01302 ns x c/2, the sigma of a 385 ps FWHM time resolution,
 * 3 sigmas. */
static inline struct sproj_tof_params benchmark_tof(void)
{
  struct sproj_tof_params par = {13 * 0.01302f * 299.792f / 2, 29, 3.0f, 299.792f / 2 * 0.385f / 2.355f, 0.0f};
  return par;
}

static inline double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static inline int sproj_example_cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* median of n values (sorts them) */
static inline double median(double *v, int n)
{
  qsort(v, n, sizeof *v, sproj_example_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* n listmode events on LORs of the scanner's sinogram (which must hold every ring pair) drawn at random (view,
 * ring pair, radial bin; xorshift64 from seed), recorded as detector pairs the way a scanner reports them and turned
 * into LOR endpoints */
static inline void random_events(const sproj_scanner *scanner, int64_t n, uint64_t seed, float *xstart, float *xend)
{
  enum { BLOCK = 1 << 16 };
  static int64_t lor[BLOCK];
  static struct sproj_det_pair pairs[BLOCK];
  struct sproj_sinogram_info in;
  CHECK(sproj_scanner_info(scanner, &in));
  uint64_t x = seed ? seed : 1;
  for (int64_t done = 0; done < n; done += BLOCK) {
    int64_t m = n - done < BLOCK ? n - done : BLOCK;
    for (int64_t i = 0; i < m; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      int v = (int)(x % (uint64_t)in.num_views);
      int r1 = (int)((x >> 20) % (uint64_t)in.num_rings), r2 = (int)((x >> 30) % (uint64_t)in.num_rings);
      int k = (int)((x >> 40) % (uint64_t)in.num_radial_bins);
      CHECK(sproj_scanner_lor_index(scanner, v, r2 - r1, r1 < r2 ? r1 : r2, k, &lor[i]));
    }
    CHECK(sproj_scanner_lor_pairs(scanner, m, lor, pairs));
    CHECK(sproj_scanner_pair_lors(scanner, m, pairs, xstart + 3 * done, xend + 3 * done));
  }
}

#endif
