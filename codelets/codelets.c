/* SPDX-License-Identifier: Apache-2.0 */
/* codelets.c: the CPU loop shared by every projection codelet, and the size of a projection task for their performance
 * models. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "codelets.h"
#include "joseph3d_lanes.h"

size_t sproj_proj_task_size(struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  const struct sproj_proj_arg *arg = task->cl_arg;
  int nmax = arg->geom.n[0], bpp = sproj_buffers_per_piece(arg);
  if (arg->geom.n[1] > nmax)
    nmax = arg->geom.n[1];
  if (arg->geom.n[2] > nmax)
    nmax = arg->geom.n[2];
  size_t lors = 0;
  for (int p = 0; p < arg->npieces; p++)
    lors += starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 1 + bpp * p));
  /* work grows with the LORs times the planes each crosses, at most the largest dimension */
  return lors * (size_t)nmax;
}

void sproj_cpu_run(void *buffers[], void *cl_arg, sproj_lor_fn fn)
{
  const struct sproj_proj_arg *arg = cl_arg;
  /* for back projections this is the worker's private reduction buffer (or, under tight memory limits, the image
   * that tasks take one at a time): no other thread writes it */
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (int p = 0; p < arg->npieces; p++) {
    struct sproj_piece piece = sproj_piece_get(buffers, arg, p);
    for (uint32_t lor = 0; lor < piece.n; lor++)
      fn(arg, img, &piece, lor);
  }
}

static int cpu_lanes_detect(void)
{
  int lanes = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    lanes = SPROJ_LANES_AVX512;
  else if (__builtin_cpu_supports("avx2"))
    lanes = SPROJ_LANES_AVX2;
#endif
  const char *isa = getenv("SPROJ_CPU_ISA");
  int cap = !isa ? SPROJ_LANES_AVX512
            : !strcmp(isa, "scalar") ? 0 : !strcmp(isa, "avx2") ? SPROJ_LANES_AVX2 : SPROJ_LANES_AVX512;
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

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

struct scratch {
  size_t bytes;
  void *data;
};

static void scratch_free(void *p)
{
  struct scratch *s = p;
  free(s->data);
  free(s);
}

static void scratch_init(void)
{
  (void)pthread_key_create(&scratch_key, scratch_free);
}

void *sproj_cpu_scratch(size_t bytes)
{
  pthread_once(&scratch_once, scratch_init);
  struct scratch *s = pthread_getspecific(scratch_key);
  if (!s) {
    if (!(s = calloc(1, sizeof *s)))
      return NULL;
    if (pthread_setspecific(scratch_key, s)) {
      free(s);
      return NULL;
    }
  }
  if (s->bytes < bytes) {
    void *d = malloc(bytes);
    if (!d)
      return NULL;
    free(s->data);
    s->data = d;
    s->bytes = bytes;
  }
  return s->data;
}

#if defined(STARPU_SIMGRID) && !defined(SPROJ_USE_CUDA)
void sproj_simulated_cuda(void *buffers[], void *cl_arg)
{
  /* StarPU runs no task's function on a simulated GPU, but still calls a reduction's initialisation (image_zero)
   * directly on a per-worker buffer: simulated GPU memory holds nothing to write, so there is nothing to do */
  (void)buffers, (void)cl_arg;
}
#endif
