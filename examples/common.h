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

#endif
