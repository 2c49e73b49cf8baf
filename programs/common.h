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

/* ---- the benchmark geometry (doc/benchmarks.md): parallelproj's benchmark scanner, Vision 600-like ---- */
#define BENCH_IMAGE_XY 215 /* voxels across the field of view */
#define BENCH_IMAGE_Z 71   /* voxels along the axis */
#define BENCH_VOXEL_MM 2.78f
#define BENCH_VIEWS 272      /* views of its sinogram */
#define BENCH_SUBSETS 34     /* OSEM subsets of interleaved views; one TOF subset is every 34th view */
#define BENCH_EVENTS 20000000 /* listmode events of the TOF benchmark */
/* Its TOF: bins of 13 x 0.01302 ns of travel at c / 2, a 385 ps FWHM time resolution, windows of 3 sigmas. */
#define LIGHT_HALF_MM_PER_NS (299.792f / 2)
#define BENCH_TOF_BIN_NS (13 * 0.01302f)
#define BENCH_TOF_FWHM_NS 0.385f
#define FWHM_PER_SIGMA 2.355f
#define BENCH_TOF_BINS 29
#define BENCH_TOF_SIGMAS 3.0f
/* The bin width and sigma above rounded to 0.1 mm, as starproj-recon, bench_recon, bench_mpi and starproj-bench
 * take them (benchmark_tof computes 25.37 and 24.51 mm). */
#define BENCH_TOF_BIN_MM 25.4f
#define BENCH_TOF_SIGMA_MM 24.5f
/* The 'small' scanner's image and TOF in starproj-recon, bench_recon and starproj-bench: 64 x 64 x 16 voxels of
 * 2 mm, 15 bins of 15 mm, sigma 12 mm. */
#define SMALL_IMAGE_XY 64
#define SMALL_IMAGE_Z 16
#define SMALL_VOXEL_MM 2.0f
#define SMALL_TOF_BIN_MM 15.0f
#define SMALL_TOF_BINS 15
#define SMALL_TOF_SIGMA_MM 12.0f
/* The quick cut of the benchmark scanner for a development machine (benchmark_geometry's small). */
#define QUICK_MODULES 8
#define QUICK_RINGS 6
#define QUICK_RADIAL_BINS 101
#define QUICK_IMAGE_XY 64
#define QUICK_IMAGE_Z 24
#define QUICK_VOXEL_MM 8.0f

/* Added to a denominator that may be 0 in a relative difference. */
#define TINY 1e-30
/* Bytes of a mebibyte and a gibibyte. */
#define MIB (1 << 20)
#define GIB (1024.0 * 1024.0 * 1024.0)
/* Voxels along an axis the programs accept for an image. */
#define MAX_IMAGE_DIM 4096

/* Fixed seeds, so that every run draws the same data: listmode events (random_events), and rand() for images. */
#define BENCH_EVENTS_SEED 4242
#define FIXED_SEED 12345
/* Knuth's multiplicative hash (2^32 / golden ratio): spread-out factors from an index, with no state. */
#define KNUTH_HASH 2654435761u
/* The multiplicative factor of LOR i in the benchmarks' models: spread over [0.5, 1) in steps of 1/2000 by a hash
 * of i, the same for every run and every partition of the LORs. */
static inline float lor_factor(uint64_t i)
{
  return 0.5f + 0.5f * (float)((i * KNUTH_HASH) % 1000) / 1000.0f;
}
/* FNV-1a over bytes, the checksums two builds' outputs are compared by. */
#define FNV1A_OFFSET 1469598103934665603ull
#define FNV1A_PRIME 1099511628211ull

/* The benchmark geometry: the Vision 600-like scanner and a BENCH_IMAGE_XY^2 x BENCH_IMAGE_Z image of BENCH_VOXEL_MM
 * voxels centred on the scanner, or with small a quick one for a development machine (QUICK_MODULES modules,
 * QUICK_RINGS rings, QUICK_RADIAL_BINS radial bins, every ring difference; QUICK_IMAGE_XY^2 x QUICK_IMAGE_Z voxels of
 * QUICK_VOXEL_MM). Fails loudly like CHECK. */
static inline void benchmark_geometry(int small, struct sproj_scanner_params *sp, int n[3], float vs[3],
                                      float origin[3])
{
  CHECK(sproj_scanner_preset("vision600", sp));
  n[0] = n[1] = small ? QUICK_IMAGE_XY : BENCH_IMAGE_XY;
  n[2] = small ? QUICK_IMAGE_Z : BENCH_IMAGE_Z;
  vs[0] = vs[1] = vs[2] = small ? QUICK_VOXEL_MM : BENCH_VOXEL_MM;
  if (small) {
    sp->num_modules = QUICK_MODULES;
    sp->num_rings = QUICK_RINGS;
    sp->num_radial_bins = QUICK_RADIAL_BINS;
    sp->max_ring_difference = -1;
  }
  for (int k = 0; k < 3; k++)
    origin[k] = (-n[k] / 2.0f + 0.5f) * vs[k];
}

/* The benchmark's TOF parameters, computed: bin width and sigma in mm. */
static inline struct sproj_tof_params benchmark_tof(void)
{
  struct sproj_tof_params par = {BENCH_TOF_BIN_NS * LIGHT_HALF_MM_PER_NS, BENCH_TOF_BINS, BENCH_TOF_SIGMAS,
                                 LIGHT_HALF_MM_PER_NS * BENCH_TOF_FWHM_NS / FWHM_PER_SIGMA, 0.0f};
  return par;
}

/* The TOF parameters the reconstruction programs take: the benchmark's rounded to 0.1 mm, or the small scanner's. */
static inline struct sproj_tof_params program_tof(int small)
{
  struct sproj_tof_params par = {small ? SMALL_TOF_BIN_MM : BENCH_TOF_BIN_MM, small ? SMALL_TOF_BINS : BENCH_TOF_BINS,
                                 BENCH_TOF_SIGMAS, small ? SMALL_TOF_SIGMA_MM : BENCH_TOF_SIGMA_MM, 0.0f};
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
