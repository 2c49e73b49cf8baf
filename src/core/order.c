/* SPDX-License-Identifier: Apache-2.0 */
/* order.c: an order of LORs (listmode events) in which neighbours run through the same image columns, and the
 * reordering of arrays by it. */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "shared.h"

/* Bits of the key: transaxial direction, transaxial offset, axial position of the midpoint (32 in all; sorted as the
 * high half of 64-bit elements whose low half is the LOR's index). */
#define DIR_BITS 11
#define OFFSET_BITS 11
#define AXIAL_BITS 10
#define NONFINITE_KEY UINT32_MAX

/* Steps of the key's three parts, from the LORs' extent and the voxel size. */
struct key_steps {
  float dir_scale;   /* pseudo-angle (0 .. 2) -> direction bin */
  float off_min, off_scale;     /* offset -> offset bin: (offset - off_min) * off_scale */
  float axial_min, axial_scale; /* the same for the axial midpoint */
};

static int finite3(const float *p)
{
  return isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
}

/* What the key's steps depend on: the largest squared transaxial radius of an endpoint and the range of the axial
 * midpoints, over the LORs with finite coordinates. */
struct extent {
  float r2, zmin, zmax;
};

static void extent_of(const float *xs, const float *xe, int64_t lo, int64_t hi, struct extent *e)
{
  float r2 = 0.0f, zmin = INFINITY, zmax = -INFINITY;
  for (int64_t i = lo; i < hi; i++) {
    const float *a = xs + 3 * i, *b = xe + 3 * i;
    if (!finite3(a) || !finite3(b))
      continue;
    r2 = fmaxf(r2, fmaxf(a[0] * a[0] + a[1] * a[1], b[0] * b[0] + b[1] * b[1]));
    float z = 0.5f * (a[2] + b[2]);
    zmin = fminf(zmin, z);
    zmax = fmaxf(zmax, z);
  }
  e->r2 = r2;
  e->zmin = zmin;
  e->zmax = zmax;
}

/* Steps that keep neighbours within about a voxel: a direction bin turns a LOR by about one voxel at the LORs'
 * largest transaxial radius R, an offset bin is a transaxial voxel, an axial bin half an axial voxel; each part is
 * coarsened where its range needs more bins than it has bits. */
static void key_steps(const struct extent *e, const float vs[3], struct key_steps *k)
{
  float zmin = e->zmin, zmax = e->zmax;
  float vt = fminf(vs[0], vs[1]), radius = sqrtf(e->r2);
  /* the pseudo-angle moves between 1/2 and 1 per radian: pi * R / vt bins over its range of 2 turn a LOR by 0.6 to
   * 1.3 voxels at R */
  float dir_bins = fminf(fmaxf(3.14159265f * radius / vt, 1.0f), (float)((1u << DIR_BITS) - 1));
  k->dir_scale = dir_bins / 2.0f;
  k->off_min = -radius;
  k->off_scale = 1.0f / fmaxf(vt, 2.0f * radius / (float)((1u << OFFSET_BITS) - 1));
  if (!(zmax >= zmin)) {
    zmin = 0.0f;
    zmax = 0.0f;
  }
  k->axial_min = zmin;
  k->axial_scale = 1.0f / fmaxf(0.5f * vs[2], (zmax - zmin) / (float)((1u << AXIAL_BITS) - 1));
}

/* v in bins, clamped to 0 .. 2^bits - 1 (NaN, which LORs near FLT_MAX can give, counts 0). */
static uint32_t part(float v, unsigned bits)
{
  float q = floorf(v);
  uint32_t top = (1u << bits) - 1u;
  if (!(q > 0.0f))
    return 0;
  return q >= (float)top ? top : (uint32_t)q;
}

/* The key of the LOR a -> b. Its transaxial direction, folded into angles [0, pi), is a pseudo-angle in [0, 2]
 * (monotone in the angle, no trigonometry; a LOR along the axis gets 0), its offset the signed distance of its
 * transaxial projection from the axis. */
static uint32_t lor_key(const float *a, const float *b, const struct key_steps *k)
{
  if (!finite3(a) || !finite3(b))
    return NONFINITE_KEY;
  float dx = b[0] - a[0], dy = b[1] - a[1];
  if (dy < 0.0f || (dy == 0.0f && dx < 0.0f)) {
    dx = -dx;
    dy = -dy;
  }
  float l1 = fabsf(dx) + dy, l2 = sqrtf(dx * dx + dy * dy);
  float mx = 0.5f * (a[0] + b[0]), my = 0.5f * (a[1] + b[1]), mz = 0.5f * (a[2] + b[2]);
  float p = 0.0f, off = hypotf(mx, my);
  if (l2 > 0.0f) {
    p = 1.0f - dx / l1;
    off = (mx * dy - my * dx) / l2;
  }
  uint32_t d = part(p * k->dir_scale, DIR_BITS);
  uint32_t o = part((off - k->off_min) * k->off_scale, OFFSET_BITS);
  uint32_t z = part((mz - k->axial_min) * k->axial_scale, AXIAL_BITS);
  uint32_t key = (d << (OFFSET_BITS + AXIAL_BITS)) | (o << AXIAL_BITS) | z;
  return key == NONFINITE_KEY ? NONFINITE_KEY - 1u : key;
}

/* The work of one call, shared by its threads: thread t of nthreads takes part t of the elements in every phase
 * (run_threads). Each element is 64 bits: the key in the high half, the LOR's index in the low half. */
#define DIGIT_BITS 11
#define DIGITS (1 << DIGIT_BITS)
#define MAX_ORDER_THREADS 64
#define LORS_PER_THREAD ((int64_t)1 << 15) /* ~0.3 ms of work: fewer are not worth starting a thread for */

struct order_work {
  const float *xs, *xe;
  int64_t n;
  int nthreads;
  struct extent ext[MAX_ORDER_THREADS];
  struct key_steps k;
  uint64_t *src, *dst;
  unsigned shift;               /* the digit of the current pass */
  int64_t (*count)[DIGITS];     /* per thread: the digits of its range, then where its elements of each go */
  int64_t *order;
};

/* Runs fn(work, t, lo, hi) for the parts t = 0 .. nthreads-1 of the elements 0 .. n-1 (part t: lo .. hi-1) on as many
 * threads, the calling thread taking t = 0 (and any t whose thread could not be started). */
typedef void (*part_fn)(void *work, int t, int64_t lo, int64_t hi);
struct part {
  void *work;
  int t;
  int64_t lo, hi;
  part_fn fn;
};

static void *part_main(void *p)
{
  struct part *a = p;
  a->fn(a->work, a->t, a->lo, a->hi);
  return NULL;
}

static void run_threads(int nthreads, int64_t n, void *work, part_fn fn)
{
  pthread_t tid[MAX_ORDER_THREADS];
  struct part arg[MAX_ORDER_THREADS];
  int started[MAX_ORDER_THREADS] = {0};
  for (int t = 0; t < nthreads; t++)
    arg[t] = (struct part){work, t, n * t / nthreads, n * (t + 1) / nthreads, fn};
  for (int t = 1; t < nthreads; t++)
    started[t] = pthread_create(&tid[t], NULL, part_main, &arg[t]) == 0;
  part_main(&arg[0]);
  for (int t = 1; t < nthreads; t++) {
    if (started[t])
      pthread_join(tid[t], NULL);
    else
      part_main(&arg[t]);
  }
}

static void phase_extent(void *work, int t, int64_t lo, int64_t hi)
{
  struct order_work *w = work;
  extent_of(w->xs, w->xe, lo, hi, &w->ext[t]);
}

static void phase_keys(void *work, int t, int64_t lo, int64_t hi)
{
  struct order_work *w = work;
  (void)t;
  for (int64_t i = lo; i < hi; i++)
    w->src[i] = (uint64_t)lor_key(w->xs + 3 * i, w->xe + 3 * i, &w->k) << 32 | (uint64_t)i;
}

static void phase_count(void *work, int t, int64_t lo, int64_t hi)
{
  struct order_work *w = work;
  int64_t *count = w->count[t];
  memset(count, 0, DIGITS * sizeof *count);
  for (int64_t i = lo; i < hi; i++)
    count[(w->src[i] >> w->shift) & (DIGITS - 1)]++;
}

/* A thread's elements of each digit go after those of the same digit in the threads before it: the pass is stable. */
static void phase_scatter(void *work, int t, int64_t lo, int64_t hi)
{
  struct order_work *w = work;
  int64_t *at = w->count[t];
  for (int64_t i = lo; i < hi; i++)
    w->dst[at[(w->src[i] >> w->shift) & (DIGITS - 1)]++] = w->src[i];
}

static void phase_indices(void *work, int t, int64_t lo, int64_t hi)
{
  struct order_work *w = work;
  (void)t;
  for (int64_t i = lo; i < hi; i++)
    w->order[i] = (int64_t)(w->src[i] & 0xffffffffu);
}

/* One stable counting pass over the digit at shift, from src into dst; a pass whose digit is the same everywhere
 * moves nothing and returns 0. */
static int radix_pass(struct order_work *w, unsigned shift)
{
  w->shift = shift;
  run_threads(w->nthreads, w->n, w, phase_count);
  int64_t at = 0;
  for (int d = 0; d < DIGITS; d++) {
    int64_t total = 0;
    for (int t = 0; t < w->nthreads; t++)
      total += w->count[t][d];
    if (total == w->n)
      return 0;
    for (int t = 0; t < w->nthreads; t++) {
      int64_t c = w->count[t][d];
      w->count[t][d] = at;
      at += c;
    }
  }
  run_threads(w->nthreads, w->n, w, phase_scatter);
  return 1;
}

/* Threads for a call on n >= 1 elements: one per online core, at most MAX_ORDER_THREADS and one per LORS_PER_THREAD
 * elements; SPROJ_ORDER_THREADS=N asks for N instead (for measurements and tests; the order is the same). */
static int order_threads(int64_t n)
{
  const char *e = getenv("SPROJ_ORDER_THREADS");
  long t = e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  int64_t by_size = n / LORS_PER_THREAD;
  if (!e && t > by_size)
    t = (long)by_size;
  if (t < 1)
    t = 1;
  if (t > MAX_ORDER_THREADS)
    t = MAX_ORDER_THREADS;
  if (t > n) /* n >= 1: both callers return before for n == 0 */
    t = (long)n;
  return (int)t;
}

static void order_work_free(struct order_work *w)
{
  if (!w)
    return;
  free(w->src);
  free(w->dst);
  free(w->count);
  free(w);
}

int sproj_lors_order(const float *xstart, const float *xend, int64_t num_lors, const float voxel_size[3],
                     int64_t *order)
{
  if (num_lors < 0)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "num_lors %lld is negative", (long long)num_lors);
  if (!voxel_size || (num_lors > 0 && (!xstart || !xend || !order)))
    return SPROJ_FAIL(SPROJ_ERR_NULL, "%s is NULL",
                      !voxel_size ? "voxel_size" : !xstart ? "xstart" : !xend ? "xend" : "order");
  int ret = sproj_check_voxel_size(__func__, voxel_size);
  if (ret)
    return ret;
  if (num_lors == 0)
    return SPROJ_OK;
  if (num_lors > (int64_t)UINT32_MAX)
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "%lld LORs are more than a LOR set holds (2^32-1)", (long long)num_lors);
  struct order_work *w = calloc(1, sizeof *w);
  if (w) {
    w->nthreads = order_threads(num_lors);
    w->src = malloc((size_t)num_lors * sizeof *w->src);
    w->dst = malloc((size_t)num_lors * sizeof *w->dst);
    w->count = malloc((size_t)w->nthreads * sizeof *w->count);
  }
  if (!w || !w->src || !w->dst || !w->count) {
    order_work_free(w);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "no memory to order %lld LORs", (long long)num_lors);
  }
  w->xs = xstart;
  w->xe = xend;
  w->n = num_lors;
  w->order = order;
  int paused = sproj_host_work_begin();
  /* the steps from the extent of all LORs (maxima and minima: the same whatever the threads) */
  run_threads(w->nthreads, w->n, w, phase_extent);
  struct extent all = w->ext[0];
  for (int t = 1; t < w->nthreads; t++) {
    all.r2 = fmaxf(all.r2, w->ext[t].r2);
    all.zmin = fminf(all.zmin, w->ext[t].zmin);
    all.zmax = fmaxf(all.zmax, w->ext[t].zmax);
  }
  key_steps(&all, voxel_size, &w->k);
  run_threads(w->nthreads, w->n, w, phase_keys);
  /* three stable passes over the key (bits 32-42, 43-53, 54-63): LORs with equal keys keep their order */
  for (unsigned shift = 32; shift < 64; shift += DIGIT_BITS)
    if (radix_pass(w, shift)) {
      uint64_t *t = w->src;
      w->src = w->dst;
      w->dst = t;
    }
  run_threads(w->nthreads, w->n, w, phase_indices);
  sproj_host_work_end(paused);
  order_work_free(w);
  return SPROJ_OK;
}

/* dst[i] = src[order[i]] for i in lo .. hi-1, for elements of one size: a typed loop for the sizes per-event arrays
 * have. */
#define REORDER_AS(type)                                                                                       \
  do {                                                                                                         \
    const type *s_ = (const type *)src;                                                                        \
    type *d_ = (type *)dst;                                                                                    \
    for (int64_t i = lo; i < hi; i++)                                                                          \
      d_[i] = s_[order[i]];                                                                                    \
  } while (0)

struct three_floats {
  float v[3];
};

static void reorder_copy(unsigned char *dst, const unsigned char *src, size_t elem_bytes, int64_t lo, int64_t hi,
                         const int64_t *order)
{
  switch (elem_bytes) {
  case 1: REORDER_AS(uint8_t); break;
  case 2: REORDER_AS(uint16_t); break;
  case 4: REORDER_AS(uint32_t); break;
  case 8: REORDER_AS(uint64_t); break;
  case 12: REORDER_AS(struct three_floats); break;
  default:
    for (int64_t i = lo; i < hi; i++)
      memcpy(dst + (size_t)i * elem_bytes, src + (size_t)order[i] * elem_bytes, elem_bytes);
  }
}

/* One sproj_reorder call, shared by its threads (part t of the elements each). */
struct reorder_work {
  unsigned char *array, *copy, *seen;
  size_t elem_bytes;
  int64_t n;
  const int64_t *order;
  int nthreads;
  int bad; /* some thread found an index outside 0 .. n-1 or twice (atomic) */
};

/* Marks each index of the part as seen (atomically: the parts' indices may meet) and notes any that is out of range
 * or was seen before. */
static void phase_mark(void *work, int t, int64_t lo, int64_t hi)
{
  struct reorder_work *w = work;
  (void)t;
  for (int64_t i = lo; i < hi; i++) {
    int64_t j = w->order[i];
    unsigned char bit = (unsigned char)(1u << (j & 7));
    if (j < 0 || j >= w->n || (__atomic_fetch_or(&w->seen[j >> 3], bit, __ATOMIC_RELAXED) & bit)) {
      __atomic_store_n(&w->bad, 1, __ATOMIC_RELAXED);
      return;
    }
  }
}

static void phase_save(void *work, int t, int64_t lo, int64_t hi)
{
  struct reorder_work *w = work;
  (void)t;
  memcpy(w->copy + (size_t)lo * w->elem_bytes, w->array + (size_t)lo * w->elem_bytes,
         (size_t)(hi - lo) * w->elem_bytes);
}

static void phase_gather(void *work, int t, int64_t lo, int64_t hi)
{
  struct reorder_work *w = work;
  (void)t;
  reorder_copy(w->array, w->copy, w->elem_bytes, lo, hi, w->order);
}

/* The first place where order is not a permutation, in the order a reader would find it (the parallel check only
 * says that there is one): -1 if none, or NOMEM's -2. */
static int64_t first_not_permutation(const int64_t *order, int64_t n)
{
  unsigned char *seen = calloc(((size_t)n + 7) / 8, 1);
  if (!seen)
    return -2;
  for (int64_t i = 0; i < n; i++) {
    int64_t j = order[i];
    if (j < 0 || j >= n || (seen[j >> 3] >> (j & 7) & 1)) {
      free(seen);
      return i;
    }
    seen[j >> 3] |= (unsigned char)(1u << (j & 7));
  }
  free(seen);
  return -1;
}

int sproj_reorder(void *array, size_t elem_bytes, int64_t n, const int64_t *order)
{
  if (n < 0)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "n %lld is negative", (long long)n);
  if (n > 0 && (!array || !order))
    return SPROJ_FAIL(SPROJ_ERR_NULL, "%s is NULL", !array ? "array" : "order");
  if (n > 0 && elem_bytes == 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "elem_bytes is 0");
  if (n == 0)
    return SPROJ_OK;
  if ((uint64_t)n > SIZE_MAX / elem_bytes)
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "%lld elements of %zu bytes overflow", (long long)n, elem_bytes);
  struct reorder_work w = {.array = array, .elem_bytes = elem_bytes, .n = n, .order = order};
  w.nthreads = order_threads(n);
  /* order must be a permutation of 0 .. n-1: checked before anything moves */
  w.seen = calloc(((size_t)n + 7) / 8, 1);
  if (!w.seen)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "no memory to check the order of %lld elements", (long long)n);
  w.copy = malloc((size_t)n * elem_bytes);
  if (!w.copy) {
    free(w.seen);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "no memory to reorder %lld elements of %zu bytes", (long long)n, elem_bytes);
  }
  int paused = sproj_host_work_begin();
  run_threads(w.nthreads, w.n, &w, phase_mark);
  if (!w.bad) {
    run_threads(w.nthreads, w.n, &w, phase_save);
    run_threads(w.nthreads, w.n, &w, phase_gather);
  }
  sproj_host_work_end(paused);
  free(w.seen);
  free(w.copy);
  int64_t i = w.bad ? first_not_permutation(order, n) : -1;
  if (i == -2)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "no memory to check the order of %lld elements", (long long)n);
  if (i >= 0) {
    int64_t j = order[i];
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "order[%lld] = %lld is %s", (long long)i, (long long)j,
                      j < 0 || j >= n ? "outside 0 .. n-1" : "there twice: not a permutation");
  }
  return SPROJ_OK;
}
