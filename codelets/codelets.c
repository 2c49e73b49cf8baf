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

/* The variants each kind runs unless the environment says otherwise (codelets.h; "old" selects none): GPUs the table,
 * the sliding bins and the copies, CPU workers the table and the lanes, each of which passed every test and measured
 * faster (doc/benchmarks.md, versions 23 and 24: on one H200 the TOF sinogram subset 0.0116 -> 0.0084 s forward,
 * 0.0153 -> 0.0108 s back, a TOF OS-EM iteration 0.974 -> 0.717 s). */
#define SPROJ_TOF_GPU_DEFAULT (SPROJ_TOF_VARIANT_TABLE | SPROJ_TOF_VARIANT_SLIDE | SPROJ_TOF_VARIANT_COPIES)
#define SPROJ_TOF_CPU_DEFAULT (SPROJ_TOF_VARIANT_TABLE | SPROJ_TOF_VARIANT_LANES)

static unsigned tof_variants_parse(const char *list)
{
  static const struct {
    const char *name;
    unsigned bit;
  } names[] = {{"table", SPROJ_TOF_VARIANT_TABLE},
               {"slide", SPROJ_TOF_VARIANT_SLIDE},
               {"copies", SPROJ_TOF_VARIANT_COPIES},
               {"lanes", SPROJ_TOF_VARIANT_LANES},
               {"sinotable", SPROJ_TOF_VARIANT_SINO_TABLE},
               {"tiles", SPROJ_TOF_VARIANT_TILES},
               {"pairs", SPROJ_TOF_VARIANT_PAIRS},
               {"sinopairs", SPROJ_TOF_VARIANT_SINO_PAIRS}};
  unsigned bits = 0;
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (len == strlen(names[i].name) && !strncmp(p, names[i].name, len))
        bits |= names[i].bit;
    p += len + (p[len] == ',');
  }
  return bits;
}

unsigned sproj_tof_variants(int gpu)
{
  /* -1: not decided yet; every thread that races here decides the same */
  static int decided[2] = {-1, -1};
  int k = gpu ? 1 : 0, v = __atomic_load_n(&decided[k], __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv(gpu ? "SPROJ_TOF_GPU" : "SPROJ_TOF_CPU");
    v = (int)(e ? tof_variants_parse(e) : gpu ? SPROJ_TOF_GPU_DEFAULT : SPROJ_TOF_CPU_DEFAULT);
    __atomic_store_n(&decided[k], v, __ATOMIC_RELAXED);
  }
  return (unsigned)v;
}

/* A thread's table and what it was made for. */
struct tof_table_kept {
  int valid;
  float bin_width, num_sigmas, sigma;
  struct sproj_tof_table_plan plan;
  struct sproj_tof_table tab;
  float lo[2 * SPROJ_TOF_TABLE_MAX_PIECES], hi[2 * SPROJ_TOF_TABLE_MAX_PIECES];
};

static pthread_key_t table_key;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
  (void)pthread_key_create(&table_key, free);
}

const struct sproj_tof_table *sproj_cpu_tof_table(const struct sproj_proj_arg *arg)
{
  struct sproj_tof_table_plan plan;
  unsigned v = sproj_tof_variants(0);
  if (!((v & SPROJ_TOF_VARIANT_TABLE) || (!arg->lm && (v & SPROJ_TOF_VARIANT_SINO_TABLE))) ||
      !sproj_tof_table_plan_for(&arg->tof, &plan))
    return NULL;
  pthread_once(&table_once, table_init);
  struct tof_table_kept *t = pthread_getspecific(table_key);
  if (!t) {
    if (!(t = calloc(1, sizeof *t)))
      return NULL;
    if (pthread_setspecific(table_key, t)) {
      free(t);
      return NULL;
    }
  }
  if (!t->valid || t->bin_width != arg->tof.bin_width || t->num_sigmas != arg->tof.num_sigmas ||
      t->sigma != arg->tof.sigma) {
    int pieces = plan.nd * plan.steps;
    for (int p = 0; p < pieces; p++)
      sproj_tof_table_piece(&plan, p, t->lo + 2 * p, t->hi + 2 * p);
    t->plan = plan;
    sproj_tof_table_use(&t->tab, &t->plan, t->lo, t->hi, 0u);
    t->bin_width = arg->tof.bin_width;
    t->num_sigmas = arg->tof.num_sigmas;
    t->sigma = arg->tof.sigma;
    t->valid = 1;
  }
  return &t->tab;
}

#if defined(STARPU_SIMGRID) && !defined(SPROJ_USE_CUDA)
void sproj_simulated_cuda(void *buffers[], void *cl_arg)
{
  /* StarPU runs no task's function on a simulated GPU, but still calls a reduction's initialisation (image_zero)
   * directly on a per-worker buffer: simulated GPU memory holds nothing to write, so there is nothing to do */
  (void)buffers, (void)cl_arg;
}
#endif
