/* SPDX-License-Identifier: Apache-2.0 */
/* codelets.c: the CPU loop shared by every projection codelet. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "codelets.h"

void sproj_cpu_run(void *buffers[], void *cl_arg, sproj_lor_fn fn)
{
  const struct sproj_proj_arg *arg = cl_arg;
  /* for back projections this is the worker's private reduction buffer (or, under tight memory limits, the image
   * that tasks take one at a time): no other thread writes it */
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (int p = 0; p < arg->npieces; p++) {
    struct sproj_piece pc = sproj_piece_get(buffers, arg, p);
    for (uint32_t i = 0; i < pc.n; i++)
      fn(arg, img, &pc, i);
  }
}

static int cpu_lanes_detect(void)
{
  int lanes = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    lanes = 16;
  else if (__builtin_cpu_supports("avx2"))
    lanes = 8;
#endif
  const char *isa = getenv("SPROJ_CPU_ISA");
  int cap = !isa ? 16 : !strcmp(isa, "scalar") ? 0 : !strcmp(isa, "avx2") ? 8 : 16;
  return lanes < cap ? lanes : cap;
}

int sproj_cpu_lanes(void)
{
  /* -1: not decided yet; every thread that races here decides the same */
  static int lanes = -1;
  int l = __atomic_load_n(&lanes, __ATOMIC_RELAXED);
  if (l < 0) {
    l = cpu_lanes_detect();
    __atomic_store_n(&lanes, l, __ATOMIC_RELAXED);
  }
  return l;
}
