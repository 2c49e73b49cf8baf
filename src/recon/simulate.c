/* SPDX-License-Identifier: Apache-2.0 */
/* simulate.c: a cylinder-and-spheres phantom, seeded Poisson noise and listmode events drawn from expected counts. */
#include "config.h"
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../core/shared.h"
#include "sim_counts.h"

/* The image a host-side call fills: the one geometry rule, bounded by what a host array can hold. */
static int check_geometry(const char *func, const int dims[3], const float voxel_size[3], const float origin[3],
                          size_t *nvox)
{
  if (!origin)
    return sproj_fail(SPROJ_ERR_NULL, func, "dims, voxel_size and origin must not be NULL");
  uint64_t n;
  int ret = sproj_check_geometry(func, dims, voxel_size, origin, SPROJ_HOST_MAX_VOXELS, &n);
  if (ret == SPROJ_OK)
    *nvox = (size_t)n;
  return ret;
}

/* ---- phantom ----------------------------------------------------------------------------------------------- */
int sproj_phantom_default(struct sproj_phantom *phantom, const int dims[3], const float voxel_size[3],
                          const float origin[3])
{
  size_t nvox;
  if (!phantom)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "phantom must not be NULL");
  int ret = check_geometry(__func__, dims, voxel_size, origin, &nvox);
  if (ret)
    return ret;
  struct sproj_phantom p;
  memset(&p, 0, sizeof p);
  double extent[3];
  for (int k = 0; k < 3; k++) {
    extent[k] = (double)dims[k] * voxel_size[k];
    p.centre[k] = (float)(origin[k] + 0.5 * (dims[k] - 1) * (double)voxel_size[k]);
  }
  p.radius = (float)(0.8 * 0.5 * fmin(extent[0], extent[1]));
  p.length = (float)(0.8 * extent[2]);
  p.value = 1.0f;
  static const float radius_frac[6] = {0.18f, 0.15f, 0.12f, 0.09f, 0.18f, 0.12f};
  static const float value[6] = {4.0f, 4.0f, 4.0f, 4.0f, 0.0f, 0.0f};
  const double pi = 3.14159265358979323846;
  p.num_spheres = 6;
  for (int s = 0; s < 6; s++) {
    double angle = s * pi / 3.0, ring = 0.55 * p.radius;
    p.spheres[s].centre[0] = (float)(p.centre[0] + ring * cos(angle));
    p.spheres[s].centre[1] = (float)(p.centre[1] + ring * sin(angle));
    p.spheres[s].centre[2] = p.centre[2];
    p.spheres[s].radius = radius_frac[s] * p.radius;
    p.spheres[s].value = value[s];
  }
  *phantom = p;
  return SPROJ_OK;
}

static int check_phantom(const char *func, const struct sproj_phantom *p)
{
  if (!(isfinite(p->radius) && p->radius > 0.0f) || !(isfinite(p->length) && p->length > 0.0f))
    return sproj_fail(SPROJ_ERR_INVALID, func, "cylinder radius %g and length %g must be finite and > 0", p->radius,
                      p->length);
  if (!isfinite(p->centre[0]) || !isfinite(p->centre[1]) || !isfinite(p->centre[2]) || !isfinite(p->value))
    return sproj_fail(SPROJ_ERR_INVALID, func, "cylinder centre and value must be finite");
  if (p->num_spheres < 0 || p->num_spheres > SPROJ_PHANTOM_MAX_SPHERES)
    return sproj_fail(SPROJ_ERR_INVALID, func, "num_spheres = %d is not in 0 .. %d", p->num_spheres,
                      SPROJ_PHANTOM_MAX_SPHERES);
  for (int s = 0; s < p->num_spheres; s++) {
    const struct sproj_phantom_sphere *q = &p->spheres[s];
    if (!(isfinite(q->radius) && q->radius > 0.0f) || !isfinite(q->value) || !isfinite(q->centre[0]) ||
        !isfinite(q->centre[1]) || !isfinite(q->centre[2]))
      return sproj_fail(SPROJ_ERR_INVALID, func, "sphere %d: radius must be finite and > 0, centre and value finite",
                        s);
  }
  return SPROJ_OK;
}

static double phantom_value(const struct sproj_phantom *p, const double x[3])
{
  for (int s = p->num_spheres - 1; s >= 0; s--) {
    const struct sproj_phantom_sphere *q = &p->spheres[s];
    double d0 = x[0] - q->centre[0], d1 = x[1] - q->centre[1], d2 = x[2] - q->centre[2];
    if (d0 * d0 + d1 * d1 + d2 * d2 <= (double)q->radius * q->radius)
      return q->value;
  }
  double d0 = x[0] - p->centre[0], d1 = x[1] - p->centre[1];
  if (d0 * d0 + d1 * d1 <= (double)p->radius * p->radius && fabs(x[2] - p->centre[2]) <= 0.5 * p->length)
    return p->value;
  return 0.0;
}

int sproj_phantom_fill(const struct sproj_phantom *phantom, float *image, const int dims[3],
                       const float voxel_size[3], const float origin[3], int supersample)
{
  size_t nvox;
  if (!phantom || !image)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "phantom and image must not be NULL");
  int ret = check_geometry(__func__, dims, voxel_size, origin, &nvox);
  if (ret)
    return ret;
  if ((ret = check_phantom(__func__, phantom)))
    return ret;
  if (supersample < 1 || supersample > 16)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "supersample = %d is not in 1 .. 16", supersample);
  const int s = supersample;
  const double weight = 1.0 / ((double)s * s * s);
  /* sub-sample offsets from a voxel's centre, in voxels: the centres of an s x s x s grid */
  double offset[16];
  for (int a = 0; a < s; a++)
    offset[a] = (a + 0.5) / s - 0.5;
  size_t at = 0;
  for (int i0 = 0; i0 < dims[0]; i0++)
    for (int i1 = 0; i1 < dims[1]; i1++)
      for (int i2 = 0; i2 < dims[2]; i2++, at++) {
        double sum = 0.0, x[3];
        for (int a = 0; a < s; a++) {
          x[0] = origin[0] + (i0 + offset[a]) * (double)voxel_size[0];
          for (int b = 0; b < s; b++) {
            x[1] = origin[1] + (i1 + offset[b]) * (double)voxel_size[1];
            for (int c = 0; c < s; c++) {
              x[2] = origin[2] + (i2 + offset[c]) * (double)voxel_size[2];
              sum += phantom_value(phantom, x);
            }
          }
        }
        image[at] = (float)(sum * weight);
      }
  return SPROJ_OK;
}

/* ---- random numbers ---------------------------------------------------------------------------------------- */
struct rng {
  uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

/* xoshiro256** */
static uint64_t rng_next(struct rng *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

/* The stream of one block for one purpose (2: a chunk of the shuffle's events, 3: a bucket; the Poisson counts draw
 * from sim_counts.h's streams, one per value). The seed and the block index go through splitmix64 separately, so that
 * neighbouring seeds and blocks start far apart. */
static void rng_stream(struct rng *r, uint64_t seed, uint64_t block, uint64_t purpose)
{
  uint64_t a = seed, b = block ^ (purpose << 56);
  uint64_t x = splitmix64(&a) ^ rotl(splitmix64(&b), 17);
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&x);
}

static int check_threads(const char *func, int num_threads)
{
  if (num_threads < 0 || num_threads > 1024)
    return sproj_fail(SPROJ_ERR_INVALID, func, "num_threads = %d is not in 0 .. 1024", num_threads);
  return SPROJ_OK;
}

/* ---- Poisson noise ----------------------------------------------------------------------------------------- */
struct means {
  const float *expected;
  int64_t n;
  int64_t *first_bad; /* per block: first index that is not a valid mean, or -1 */
  uint64_t seed;
  float *counts;
  int64_t *block_events;
  int64_t *block_first_event;
  int32_t *lor;
  int16_t *tof_bin;
  int nbins;
};

static int64_t block_end(const struct means *m, int64_t block)
{
  int64_t end = (block + 1) * SPROJ_RNG_BLOCK;
  return end < m->n ? end : m->n;
}

static void check_block(void *ctx, int64_t block)
{
  struct means *m = ctx;
  m->first_bad[block] = -1;
  for (int64_t i = block * SPROJ_RNG_BLOCK; i < block_end(m, block); i++)
    if (!isfinite(m->expected[i]) || m->expected[i] < 0.0f) {
      m->first_bad[block] = i;
      return;
    }
}

/* Every mean must be valid before anything is written (counts may be the expected array itself). */
static int check_means(const char *func, struct means *m, int64_t nblocks, int num_threads)
{
  m->first_bad = malloc((size_t)nblocks * sizeof *m->first_bad);
  if (!m->first_bad)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  sproj_run_blocks("checking the expected counts", num_threads, nblocks, check_block, m);
  int ret = SPROJ_OK;
  for (int64_t b = 0; !ret && b < nblocks; b++) {
    int64_t i = m->first_bad[b];
    if (i >= 0) {
      float v = m->expected[i];
      ret = isfinite(v) ? sproj_fail(SPROJ_ERR_RANGE, func, "expected[%" PRId64 "] = %g is negative", i, v)
                        : sproj_fail(SPROJ_ERR_NONFINITE, func, "expected[%" PRId64 "] is not finite", i);
    }
  }
  free(m->first_bad);
  m->first_bad = NULL;
  return ret;
}

static void poisson_block(void *ctx, int64_t block)
{
  struct means *m = ctx;
  for (int64_t i = block * SPROJ_RNG_BLOCK; i < block_end(m, block); i++) {
    uint64_t state = sim_stream(m->seed, (uint64_t)i);
    m->counts[i] = (float)sim_poisson(&state, m->expected[i]);
  }
}

int sproj_poisson(const float *expected, float *counts, int64_t n, uint64_t seed, int num_threads)
{
  if (!expected || !counts)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "expected and counts must not be NULL");
  if (n < 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "n = %" PRId64 " is negative", n);
  int ret = check_threads(__func__, num_threads);
  if (ret || n == 0)
    return ret;
  int64_t nblocks = (n + SPROJ_RNG_BLOCK - 1) / SPROJ_RNG_BLOCK;
  struct means m = {.expected = expected, .n = n, .seed = seed, .counts = counts};
  if ((ret = check_means(__func__, &m, nblocks, num_threads)))
    return ret;
  sproj_run_blocks("Poisson counts", num_threads, nblocks, poisson_block, &m);
  return SPROJ_OK;
}

/* ---- listmode events --------------------------------------------------------------------------------------- */
static void count_block(void *ctx, int64_t block)
{
  struct means *m = ctx;
  double total = 0.0;
  for (int64_t i = block * SPROJ_RNG_BLOCK; i < block_end(m, block); i++) {
    uint64_t state = sim_stream(m->seed, (uint64_t)i);
    total += sim_poisson(&state, m->expected[i]);
  }
  m->block_events[block] = total < 0x1.0p62 ? (int64_t)total : INT64_MAX;
}

/* The same draws again, now written out as events from the block's place on. */
static void emit_block(void *ctx, int64_t block)
{
  struct means *m = ctx;
  int64_t at = m->block_first_event[block];
  for (int64_t i = block * SPROJ_RNG_BLOCK; i < block_end(m, block); i++) {
    uint64_t state = sim_stream(m->seed, (uint64_t)i);
    int64_t c = (int64_t)sim_poisson(&state, m->expected[i]);
    int32_t lor = (int32_t)(i / m->nbins);
    int16_t bin = (int16_t)(i % m->nbins);
    for (int64_t e = 0; e < c; e++, at++) {
      m->lor[at] = lor;
      if (m->tof_bin)
        m->tof_bin[at] = bin;
    }
  }
}

/* uniform integer in 0 .. bound-1 without bias (Lemire's multiply and reject) */
static uint64_t rng_below(struct rng *r, uint64_t bound)
{
  unsigned __int128 prod = (unsigned __int128)rng_next(r) * bound;
  uint64_t low = (uint64_t)prod;
  if (low < bound) {
    uint64_t threshold = -bound % bound;
    while (low < threshold) {
      prod = (unsigned __int128)rng_next(r) * bound;
      low = (uint64_t)prod;
    }
  }
  return (uint64_t)(prod >> 64);
}

/* ---- a random order of the events, the same for any number of threads ----------------------------------------
 * Each event goes to one of nb buckets, drawn uniformly from a stream of its source chunk (SHUFFLE_CHUNK events);
 * the buckets are laid out one after the other, each source chunk's events in their order within a bucket, and each
 * bucket is then shuffled (Fisher-Yates) with a stream of its own. Given the buckets' sizes every assignment of the
 * events to them is equally likely, and every order within a bucket: the result is a uniformly random permutation,
 * and every random number depends on the seed and a chunk or bucket index only. Buckets of about SHUFFLE_CHUNK events
 * (1.5 MB) keep the shuffle's random accesses in a core's cache; one thread's shuffle of 2e8 events in one array
 * missed the cache at nearly every swap. */
#define SHUFFLE_CHUNK ((int64_t)1 << 18)

struct shuffle {
  const struct means *m;
  int32_t *lor_out;
  int16_t *bin_out;
  int64_t total, nchunks, nb;
  uint64_t seed;
  int64_t *cursor; /* [chunk][bucket]: counts, then where the chunk's next event of the bucket goes */
  int64_t *bucket_start;
};

static void chunk_stream(struct rng *r, const struct shuffle *sh, int64_t chunk)
{
  rng_stream(r, sh->seed, (uint64_t)chunk, 2);
}

static void shuffle_count(void *ctx, int64_t chunk)
{
  struct shuffle *sh = ctx;
  struct rng r;
  chunk_stream(&r, sh, chunk);
  int64_t *count = sh->cursor + chunk * sh->nb, end = (chunk + 1) * SHUFFLE_CHUNK;
  if (end > sh->total)
    end = sh->total;
  for (int64_t e = chunk * SHUFFLE_CHUNK; e < end; e++)
    count[rng_below(&r, (uint64_t)sh->nb)]++;
}

static void shuffle_scatter(void *ctx, int64_t chunk)
{
  struct shuffle *sh = ctx;
  struct rng r;
  chunk_stream(&r, sh, chunk); /* the same draws as shuffle_count */
  int64_t *at = sh->cursor + chunk * sh->nb, end = (chunk + 1) * SHUFFLE_CHUNK;
  if (end > sh->total)
    end = sh->total;
  for (int64_t e = chunk * SHUFFLE_CHUNK; e < end; e++) {
    int64_t k = at[rng_below(&r, (uint64_t)sh->nb)]++;
    sh->lor_out[k] = sh->m->lor[e];
    if (sh->bin_out)
      sh->bin_out[k] = sh->m->tof_bin[e];
  }
}

static void shuffle_bucket(void *ctx, int64_t bucket)
{
  struct shuffle *sh = ctx;
  struct rng r;
  rng_stream(&r, sh->seed, (uint64_t)bucket, 3);
  int64_t first = sh->bucket_start[bucket], n = sh->bucket_start[bucket + 1] - first;
  int32_t *lor = sh->lor_out + first;
  int16_t *bin = sh->bin_out ? sh->bin_out + first : NULL;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
    int32_t tl = lor[i];
    lor[i] = lor[j];
    lor[j] = tl;
    if (bin) {
      int16_t tb = bin[i];
      bin[i] = bin[j];
      bin[j] = tb;
    }
  }
}

/* Puts m's total events into a random order that depends on seed only; m->lor and m->tof_bin become new arrays. */
static int shuffle_events(struct means *m, int64_t total, uint64_t seed, int num_threads)
{
  struct shuffle sh = {.m = m, .total = total, .seed = seed};
  sh.nchunks = (total + SHUFFLE_CHUNK - 1) / SHUFFLE_CHUNK;
  sh.nb = sh.nchunks < 2048 ? sh.nchunks : 2048; /* the count matrix stays below 134 MB for 2^31 events */
  sh.cursor = calloc((size_t)(sh.nchunks * sh.nb), sizeof *sh.cursor);
  sh.bucket_start = malloc((size_t)(sh.nb + 1) * sizeof *sh.bucket_start);
  sh.lor_out = malloc((size_t)total * sizeof *sh.lor_out);
  sh.bin_out = m->tof_bin ? malloc((size_t)total * sizeof *sh.bin_out) : NULL;
  if (!sh.cursor || !sh.bucket_start || !sh.lor_out || (m->tof_bin && !sh.bin_out)) {
    free(sh.cursor);
    free(sh.bucket_start);
    free(sh.lor_out);
    free(sh.bin_out);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for shuffling %" PRId64 " events", total);
  }
  sproj_run_blocks("drawing the events' buckets", num_threads, sh.nchunks, shuffle_count, &sh);
  /* buckets one after the other; within a bucket, the source chunks in order */
  int64_t at = 0;
  for (int64_t b = 0; b < sh.nb; b++) {
    sh.bucket_start[b] = at;
    for (int64_t c = 0; c < sh.nchunks; c++) {
      int64_t n = sh.cursor[c * sh.nb + b];
      sh.cursor[c * sh.nb + b] = at;
      at += n;
    }
  }
  sh.bucket_start[sh.nb] = at;
  sproj_run_blocks("putting the events into buckets", num_threads, sh.nchunks, shuffle_scatter, &sh);
  sproj_run_blocks("shuffling the events", num_threads, sh.nb, shuffle_bucket, &sh);
  free(sh.cursor);
  free(sh.bucket_start);
  free(m->lor);
  free(m->tof_bin);
  m->lor = sh.lor_out;
  m->tof_bin = sh.bin_out;
  return SPROJ_OK;
}

static int sample_listmode(const char *func, const float *expected, int64_t num_lors, int num_tof_bins, uint64_t seed,
                           int num_threads, int32_t **lor, int16_t **tof_bin, int64_t *num_events, int shuffle)
{
  if (!expected || !lor || !num_events)
    return sproj_fail(SPROJ_ERR_NULL, func, "expected, lor and num_events must not be NULL");
  if (num_lors <= 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num_lors = %" PRId64 " must be > 0", num_lors);
  if (num_lors > INT32_MAX)
    return sproj_fail(SPROJ_ERR_OVERFLOW, func, "num_lors = %" PRId64 " exceeds 2^31-1", num_lors);
  if (num_tof_bins < 0 || num_tof_bins > SPROJ_MAX_TOF_BINS)
    return sproj_fail(SPROJ_ERR_TOF, func, "num_tof_bins = %d is not in 0 .. %d", num_tof_bins, SPROJ_MAX_TOF_BINS);
  int ret = check_threads(func, num_threads);
  if (ret)
    return ret;
  int nbins = num_tof_bins > 1 ? num_tof_bins : 1;
  int64_t n = num_lors * nbins;
  int64_t nblocks = (n + SPROJ_RNG_BLOCK - 1) / SPROJ_RNG_BLOCK;
  struct means m = {.expected = expected, .n = n, .seed = seed, .nbins = nbins};
  if ((ret = check_means(func, &m, nblocks, num_threads)))
    return ret;

  m.block_events = malloc((size_t)nblocks * sizeof *m.block_events);
  m.block_first_event = malloc((size_t)nblocks * sizeof *m.block_first_event);
  if (!m.block_events || !m.block_first_event) {
    free(m.block_events);
    free(m.block_first_event);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  sproj_run_blocks("counting the events", num_threads, nblocks, count_block, &m);
  int64_t total = 0;
  const int64_t max_events = (int64_t)(SIZE_MAX / (sizeof(int32_t) + sizeof(int16_t)) / 2);
  for (int64_t b = 0; b < nblocks && total >= 0; b++) {
    m.block_first_event[b] = total;
    total = m.block_events[b] > max_events - total ? -1 : total + m.block_events[b];
  }
  free(m.block_events);
  if (total < 0) {
    free(m.block_first_event);
    return sproj_fail(SPROJ_ERR_OVERFLOW, func, "the expected counts give more events than memory can hold");
  }
  if (total > 0) {
    m.lor = malloc((size_t)total * sizeof *m.lor);
    m.tof_bin = tof_bin ? malloc((size_t)total * sizeof *m.tof_bin) : NULL;
    if (!m.lor || (tof_bin && !m.tof_bin)) {
      free(m.lor);
      free(m.tof_bin);
      free(m.block_first_event);
      return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory for %" PRId64 " events", total);
    }
    sproj_run_blocks("drawing the events", num_threads, nblocks, emit_block, &m);
    int ret = shuffle ? shuffle_events(&m, total, seed, num_threads) : SPROJ_OK;
    if (ret) {
      free(m.lor);
      free(m.tof_bin);
      free(m.block_first_event);
      return ret;
    }
  }
  free(m.block_first_event);
  *lor = m.lor;
  if (tof_bin)
    *tof_bin = m.tof_bin;
  *num_events = total;
  return SPROJ_OK;
}

int sproj_sample_listmode(const float *expected, int64_t num_lors, int num_tof_bins, uint64_t seed, int num_threads,
                          int32_t **lor, int16_t **tof_bin, int64_t *num_events)
{
  return sample_listmode(__func__, expected, num_lors, num_tof_bins, seed, num_threads, lor, tof_bin, num_events, 1);
}

int sproj_sample_listmode_sorted(const float *expected, int64_t num_lors, int num_tof_bins, uint64_t seed,
                                 int num_threads, int32_t **lor, int16_t **tof_bin, int64_t *num_events)
{
  return sample_listmode(__func__, expected, num_lors, num_tof_bins, seed, num_threads, lor, tof_bin, num_events, 0);
}
