/* common.h: what the example programs share: failing loudly on a status and a monotonic clock. */
#ifndef SPROJ_EXAMPLES_COMMON_H
#define SPROJ_EXAMPLES_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "starproj.h"

#define CHECK(call)                                                                                             \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    if (rc_ != SPROJ_OK) {                                                                                     \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, sproj_strerror(rc_), sproj_last_error());                \
      exit(1);                                                                                                 \
    }                                                                                                          \
  } while (0)

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

#endif
