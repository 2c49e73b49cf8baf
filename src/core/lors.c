/* SPDX-License-Identifier: Apache-2.0 */
/* lors.c: LOR sets (plain and listmode events): registration, the checks of their coordinates and event bins, the
 * sets the library makes for itself, copies and unregistration. Chunkings of a set are chunks.c's. */
#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "internal.h"
#include "starproj_parallelproj.h"

#define LOR_BYTES (3 * sizeof(float))

/* ---- LOR sets ---------------------------------------------------------------------------------------- */
static int lors_new(const char *func, sproj_lors **out, starpu_data_handle_t xs, starpu_data_handle_t xe, int64_t n,
                    int owns)
{
  sproj_lors *lors = calloc(1, sizeof *lors);
  if (!lors)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  lors->xs = xs;
  lors->xe = xe;
  lors->num_lors = n;
  lors->owns_handles = owns;
  pthread_mutex_init(&lors->lock, NULL);
  sproj_count_object(1);
  *out = lors;
  return SPROJ_OK;
}

/* What the checks of coordinates, bins, sigma and offset hold them to (codelets/input_check.h). */
struct sproj_input_arg sproj_input_limits(float bin_width, float num_sigmas)
{
  struct sproj_input_arg a;
  memset(&a, 0, sizeof a);
  a.max_coordinate = SPROJ_MAX_COORDINATE;
  a.bin_width = bin_width;
  a.num_sigmas = num_sigmas;
  a.max_ratio = SPROJ_TOF_MAX_RATIO;
  return a;
}

/* The first bad coordinate of the two endpoint vectors' scans, as the error it is: a non-finite one anywhere in
 * xstart, else one beyond SPROJ_MAX_COORDINATE there, then the same for xend. */
static int coordinates_report(const char *func, const struct sproj_input_result r[2])
{
  const char *names[2] = {"xstart", "xend"};
  for (int e = 0; e < 2; e++) {
    if (r[e].first[0] != SPROJ_INPUT_NONE)
      return sproj_fail(SPROJ_ERR_NONFINITE, func, "%s of LOR %lld is not finite", names[e],
                        (long long)(r[e].first[0] / 3));
    if (r[e].first[1] != SPROJ_INPUT_NONE)
      return sproj_fail(SPROJ_ERR_RANGE, func, "%s of LOR %lld has a coordinate %g beyond %g", names[e],
                        (long long)(r[e].first[1] / 3), r[e].value[1], SPROJ_MAX_COORDINATE);
  }
  return SPROJ_OK;
}

struct coords_part {
  const struct sproj_input_arg *arg;
  const float *v;
  uint64_t first, n;
  struct sproj_input_result r;
};

static void *coords_scan_part(void *p_)
{
  struct coords_part *p = p_;
  sproj_input_scan(p->arg, SPROJ_INPUT_COORDS, p->v + p->first, p->n, &p->r);
  return NULL;
}

/* The scan of one coordinate vector, on up to one thread per core for large ones (the 8.5 GB of endpoints of STIR's
 * mMR at span 1 took one thread about a second): the result of the lowest part with a non-finite coordinate, else of
 * the lowest part with one out of range, so the answer is the one-thread scan's whatever the threads. */
static void scan_coordinates(const struct sproj_input_arg *arg, const float *v, uint64_t n,
                             struct sproj_input_result *r)
{
  enum { MAX_PARTS = 64 };
  const uint64_t part_values = (uint64_t)1 << 24; /* values per part: fewer are scanned by one thread */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t parts = n / part_values + 1;
  if (parts > (uint64_t)(cores > 1 ? cores : 1))
    parts = (uint64_t)(cores > 1 ? cores : 1);
  if (parts > MAX_PARTS)
    parts = MAX_PARTS;
  if (parts <= 1) {
    sproj_input_scan(arg, SPROJ_INPUT_COORDS, v, n, r);
    return;
  }
  struct coords_part part[MAX_PARTS];
  pthread_t th[MAX_PARTS];
  int started[MAX_PARTS] = {0};
  for (uint64_t k = 0; k < parts; k++) {
    uint64_t first = n * k / parts, end = n * (k + 1) / parts;
    part[k] = (struct coords_part){arg, v, first, end - first, {{0}, {0}, 0, 0}};
    started[k] = k > 0 && pthread_create(&th[k], NULL, coords_scan_part, &part[k]) == 0;
    if (k > 0 && !started[k])
      coords_scan_part(&part[k]); /* no thread: this one scans it */
  }
  coords_scan_part(&part[0]);
  for (uint64_t k = 1; k < parts; k++)
    if (started[k])
      pthread_join(th[k], NULL);
  r->first[0] = r->first[1] = SPROJ_INPUT_NONE;
  r->value[0] = r->value[1] = 0.0f;
  r->max_bin = r->min_bin = 0;
  for (int fault = 0; fault < 2; fault++)
    for (uint64_t k = 0; k < parts && r->first[0] == SPROJ_INPUT_NONE && r->first[1] == SPROJ_INPUT_NONE; k++)
      if (part[k].r.first[fault] != SPROJ_INPUT_NONE) {
        r->first[fault] = part[k].r.first[fault] + part[k].first;
        r->value[fault] = part[k].r.value[fault];
      }
}

static int check_coordinates(const char *func, const float *xs, const float *xe, int64_t n)
{
  struct sproj_input_arg a = sproj_input_limits(0.0f, 0.0f);
  struct sproj_input_result r[2];
  scan_coordinates(&a, xs, 3 * (uint64_t)n, &r[0]);
  if (r[0].first[0] == SPROJ_INPUT_NONE && r[0].first[1] == SPROJ_INPUT_NONE)
    scan_coordinates(&a, xe, 3 * (uint64_t)n, &r[1]);
  return coordinates_report(func, r);
}

int sproj_lors_register(sproj_lors **lors, const float *xstart, const float *xend, int64_t num_lors)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!lors || !xstart || !xend)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "lors, xstart and xend must not be NULL");
  if (num_lors == 0)
    return SPROJ_FAIL(SPROJ_ERR_EMPTY, "num_lors is 0");
  if (num_lors < 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "num_lors = %lld is negative", (long long)num_lors);
  if (num_lors > UINT32_MAX)
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "num_lors = %lld exceeds 2^32-1 (register several sets)", (long long)num_lors);
  if ((ret = check_coordinates(__func__, xstart, xend, num_lors)))
    return ret;
  starpu_data_handle_t xs, xe;
  /* LORs are only ever read: StarPU never writes through these pointers */
  starpu_vector_data_register(&xs, STARPU_MAIN_RAM, (uintptr_t)xstart, (uint32_t)num_lors, LOR_BYTES);
  starpu_vector_data_register(&xe, STARPU_MAIN_RAM, (uintptr_t)xend, (uint32_t)num_lors, LOR_BYTES);
  ret = lors_new(__func__, lors, xs, xe, num_lors, 1);
  if (ret) {
    starpu_data_unregister_no_coherency(xs);
    starpu_data_unregister_no_coherency(xe);
  }
  return ret;
}

/* A scan of num_events bins as the error it found (a negative bin, in starproj's convention), else the range that
 * holds 0 and every bin in *min .. *max. */
static int bins_report(const char *func, const struct sproj_input_result *r, int *min, int *max)
{
  if (r->first[0] != SPROJ_INPUT_NONE)
    return sproj_fail(SPROJ_ERR_RANGE, func, "tof_bin of event %lld is %d: bins are numbered from 0",
                      (long long)r->first[0], (int)r->value[0]);
  *min = r->min_bin;
  *max = r->max_bin;
  return SPROJ_OK;
}

/* One pass over the bins of num_events events (kind SPROJ_INPUT_BINS or SPROJ_INPUT_ANY_BINS): a fault is an error,
 * the range *min .. *max is checked against each submission's TOF parameters. */
static int scan_bins(const char *func, const int16_t *tof_bin, int64_t num_events, int kind, int *min, int *max)
{
  *min = *max = 0;
  if (num_events <= 0 || num_events > UINT32_MAX)
    return SPROJ_OK; /* the LOR registration names what is wrong with the count */
  struct sproj_input_arg a = sproj_input_limits(0.0f, 0.0f);
  struct sproj_input_result r;
  sproj_input_scan(&a, kind, tof_bin, (uint64_t)num_events, &r);
  return bins_report(func, &r, min, max);
}

/* The kind of bin vector events registered in a convention (SPROJ_TOF_CONVENTION_*) hold. */
static int bins_kind(const char *func, int convention, int *kind)
{
  switch (convention) {
  case SPROJ_TOF_CONVENTION_STARPROJ:
    *kind = SPROJ_INPUT_BINS;
    return SPROJ_OK;
  case SPROJ_TOF_CONVENTION_PARALLELPROJ:
    *kind = SPROJ_INPUT_ANY_BINS;
    return SPROJ_OK;
  }
  return sproj_fail(SPROJ_ERR_INVALID, func, "convention = %d is neither SPROJ_TOF_CONVENTION_STARPROJ (%d) nor "
                    "SPROJ_TOF_CONVENTION_PARALLELPROJ (%d)", convention, SPROJ_TOF_CONVENTION_STARPROJ,
                    SPROJ_TOF_CONVENTION_PARALLELPROJ);
}

int sproj_events_check_bins(const char *func, const sproj_lors *events, const sproj_tof *tof)
{
  /* libparallelproj's listmode places bin b at b bin widths from bin 0, whatever b */
  if (tof->convention == SPROJ_TOF_ARG_PARALLELPROJ)
    return SPROJ_OK;
  if (events->min_bin < 0)
    return sproj_fail(SPROJ_ERR_RANGE, func, "an event has TOF bin %d: in starproj's TOF convention bins are numbered "
                      "from 0 (libparallelproj's, sproj_tof_set_convention, takes any)", events->min_bin);
  if (events->max_bin >= tof->params.num_bins)
    return sproj_fail(SPROJ_ERR_RANGE, func, "an event has TOF bin %d, the TOF parameters have %d bins",
                      events->max_bin, tof->params.num_bins);
  return SPROJ_OK;
}

/* Events from host pointers, their bins of kind `kind`. */
static int register_events(const char *func, sproj_lors **events, const float *xstart, const float *xend,
                           const int16_t *tof_bin, int64_t num_events, int kind)
{
  if (!events || !xstart || !xend || !tof_bin)
    return sproj_fail(SPROJ_ERR_NULL, func, "events, xstart, xend and tof_bin must not be NULL");
  int min, max, ret;
  if ((ret = scan_bins(func, tof_bin, num_events, kind, &min, &max)))
    return ret;
  sproj_lors *lors;
  if ((ret = sproj_lors_register(&lors, xstart, xend, num_events)))
    return sproj_fail_as(ret, func); /* a LOR registration's failure, as the events' call's */
  lors->min_bin = min;
  lors->max_bin = max;
  if (sproj_vec_register_ro(&lors->bins, lors, tof_bin, sizeof(int16_t), 1)) {
    sproj_lors_unregister(lors);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  *events = lors;
  return SPROJ_OK;
}

int sproj_lors_register_events(sproj_lors **events, const float *xstart, const float *xend, const int16_t *tof_bin,
                               int64_t num_events)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  return register_events(__func__, events, xstart, xend, tof_bin, num_events, SPROJ_INPUT_BINS);
}

int sproj_lors_register_events_convention(sproj_lors **events, const float *xstart, const float *xend,
                                          const int16_t *tof_bin, int64_t num_events, int convention)
{
  int kind = SPROJ_INPUT_BINS, ret = sproj_check_init(__func__);
  if (ret || (ret = bins_kind(__func__, convention, &kind)))
    return ret;
  return register_events(__func__, events, xstart, xend, tof_bin, num_events, kind);
}

/* The checks of two endpoint vectors before their values: vectors of 3 floats, as many of each, at least one.
 * *n: their LORs. */
static int check_lor_vectors(const char *func, starpu_data_handle_t xstart, starpu_data_handle_t xend, int64_t *n)
{
  if (starpu_data_get_interface_id(xstart) != STARPU_VECTOR_INTERFACE_ID ||
      starpu_data_get_interface_id(xend) != STARPU_VECTOR_INTERFACE_ID)
    return sproj_fail(SPROJ_ERR_INVALID, func, "xstart and xend must be StarPU vectors");
  if (starpu_vector_get_elemsize(xstart) != LOR_BYTES || starpu_vector_get_elemsize(xend) != LOR_BYTES)
    return sproj_fail(SPROJ_ERR_INVALID, func, "xstart and xend elements must be 3 floats (elemsize %zu)", LOR_BYTES);
  *n = starpu_vector_get_nx(xstart);
  if (*n != (int64_t)starpu_vector_get_nx(xend))
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "xstart has %lld LORs, xend %u", (long long)*n,
                      starpu_vector_get_nx(xend));
  if (*n == 0)
    return sproj_fail(SPROJ_ERR_EMPTY, func, "the vectors hold no LOR");
  return SPROJ_OK;
}

/* Events from a caller's vectors, their bins of kind `kind`. */
static int register_events_handles(const char *func, sproj_lors **events, starpu_data_handle_t xstart,
                                   starpu_data_handle_t xend, starpu_data_handle_t tof_bin, int kind)
{
  int ret;
  if (!events || !xstart || !xend || !tof_bin)
    return sproj_fail(SPROJ_ERR_NULL, func, "events, xstart, xend and tof_bin must not be NULL");
  if (starpu_data_get_interface_id(tof_bin) != STARPU_VECTOR_INTERFACE_ID ||
      starpu_vector_get_elemsize(tof_bin) != sizeof(int16_t))
    return sproj_fail(SPROJ_ERR_INVALID, func, "tof_bin must be a StarPU vector of int16_t");
  /* the endpoints' failures are sproj_lors_register_handles's, reported under this call's name */
  const char *lors_func = "sproj_lors_register_handles";
  int64_t n;
  if ((ret = check_lor_vectors(lors_func, xstart, xend, &n)))
    return sproj_fail_as(ret, func);
  int same = (int64_t)starpu_vector_get_nx(tof_bin) == n;
  /* endpoints and bins in one scan where they live (the bins only when there is one per event) */
  struct sproj_input_arg a = sproj_input_limits(0.0f, 0.0f);
  starpu_data_handle_t h[3] = {xstart, xend, tof_bin};
  struct sproj_input_result r[3];
  a.nvectors = same ? 3 : 2;
  a.kind[0] = a.kind[1] = SPROJ_INPUT_COORDS;
  a.kind[2] = kind;
  if ((ret = sproj_inputs_check(func, &a, h, r)))
    return ret;
  if ((ret = coordinates_report(lors_func, r)))
    return sproj_fail_as(ret, func);
  if (!same)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "tof_bin holds %u bins for %lld events", starpu_vector_get_nx(tof_bin),
                      (long long)n);
  int min = 0, max = 0;
  if ((ret = bins_report(func, &r[2], &min, &max)))
    return ret;
  sproj_lors *lors = NULL;
  if ((ret = lors_new(lors_func, &lors, xstart, xend, n, 0)))
    return sproj_fail_as(ret, func);
  struct sproj_vec *bins = malloc(sizeof *bins);
  if (!bins || sproj_vec_init(bins, lors, tof_bin, 0, 1, 1)) {
    free(bins);
    sproj_lors_unregister(lors);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  lors->bins = bins;
  lors->min_bin = min;
  lors->max_bin = max;
  *events = lors;
  return SPROJ_OK;
}

int sproj_lors_register_events_handles(sproj_lors **events, sproj_starpu_handle xstart, sproj_starpu_handle xend,
                                       sproj_starpu_handle tof_bin)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  return register_events_handles(__func__, events, xstart, xend, tof_bin, SPROJ_INPUT_BINS);
}

int sproj_lors_register_events_handles_convention(sproj_lors **events, sproj_starpu_handle xstart,
                                                  sproj_starpu_handle xend, sproj_starpu_handle tof_bin,
                                                  int convention)
{
  int kind = SPROJ_INPUT_BINS, ret = sproj_check_init(__func__);
  if (ret || (ret = bins_kind(__func__, convention, &kind)))
    return ret;
  return register_events_handles(__func__, events, xstart, xend, tof_bin, kind);
}

int sproj_lors_register_handles(sproj_lors **lors, sproj_starpu_handle xstart, sproj_starpu_handle xend)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!lors || !xstart || !xend)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "lors, xstart and xend must not be NULL");
  int64_t n;
  if ((ret = check_lor_vectors(__func__, xstart, xend, &n)))
    return ret;
  /* the coordinates are checked where the vectors live: by a task on the GPU that holds them, else on the host */
  struct sproj_input_arg a = sproj_input_limits(0.0f, 0.0f);
  starpu_data_handle_t h[2] = {xstart, xend};
  struct sproj_input_result r[2];
  a.nvectors = 2;
  a.kind[0] = a.kind[1] = SPROJ_INPUT_COORDS;
  if ((ret = sproj_inputs_check(__func__, &a, h, r)) || (ret = coordinates_report(__func__, r)))
    return ret;
  return lors_new(__func__, lors, xstart, xend, n, 0);
}

int sproj_lors_create_unfilled(const char *func, sproj_lors **lors, int64_t n, int gpu)
{
  if (n <= 0 || n > UINT32_MAX)
    return sproj_fail(SPROJ_ERR_DIMS, func, "%lld LORs: 1 .. 2^32-1 fit in one set", (long long)n);
  if (gpu >= sproj_rt.ngpus)
    return sproj_fail(SPROJ_ERR_INVALID, func, "GPU %d: StarPU drives %d", gpu, sproj_rt.ngpus);
  size_t bytes = (size_t)n * LOR_BYTES;
  uintptr_t xs, xe;
  unsigned node = STARPU_MAIN_RAM;
  if (gpu >= 0) {
    node = sproj_rt.gpu_node[gpu];
    xs = starpu_malloc_on_node(node, bytes);
    xe = xs ? starpu_malloc_on_node(node, bytes) : 0;
    if (!xs || !xe) {
      if (xs)
        starpu_free_on_node(node, xs, bytes);
      return sproj_fail(SPROJ_ERR_NOMEM, func, "out of GPU memory (%zu bytes of LOR endpoints)", 2 * bytes);
    }
  } else {
    /* anonymous mappings: untouched pages cost no memory */
    void *s = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *e = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED || e == MAP_FAILED) {
      if (s != MAP_FAILED)
        munmap(s, bytes);
      if (e != MAP_FAILED)
        munmap(e, bytes);
      return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory (%zu bytes of LOR endpoints)", 2 * bytes);
    }
    xs = (uintptr_t)s;
    xe = (uintptr_t)e;
  }
  starpu_data_handle_t hs, he;
  starpu_vector_data_register(&hs, (int)node, xs, (uint32_t)n, LOR_BYTES);
  starpu_vector_data_register(&he, (int)node, xe, (uint32_t)n, LOR_BYTES);
  int ret = lors_new(func, lors, hs, he, n, 1);
  if (ret) {
    starpu_data_unregister_no_coherency(hs);
    starpu_data_unregister_no_coherency(he);
    if (gpu >= 0) {
      starpu_free_on_node(node, xs, bytes);
      starpu_free_on_node(node, xe, bytes);
    } else {
      munmap((void *)xs, bytes);
      munmap((void *)xe, bytes);
    }
    return ret;
  }
  if (gpu >= 0) {
    (*lors)->gpu_xs = xs;
    (*lors)->gpu_xe = xe;
    (*lors)->gpu_node = node;
  } else {
    (*lors)->own_xs = (void *)xs;
    (*lors)->own_xe = (void *)xe;
  }
  (*lors)->own_bytes = bytes;
  return SPROJ_OK;
}

int sproj_lors_copy(const sproj_lors *lors, int64_t first, int64_t n, float *xstart, float *xend)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!lors || !xstart || !xend)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "lors, xstart and xend must not be NULL");
  if (first < 0 || n < 0 || first > lors->num_lors || n > lors->num_lors - first)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "LORs %lld .. %lld outside the set's 0 .. %lld", (long long)first,
                      (long long)(first + n - 1), (long long)lors->num_lors - 1);
  if (n == 0)
    return SPROJ_OK;
  starpu_data_handle_t h[2] = {lors->xs, lors->xe};
  float *out[2] = {xstart, xend};
  for (int e = 0; e < 2; e++) {
    /* the whole array comes home (StarPU moves handles, not ranges): the call is for checks and small sets */
    if (starpu_data_acquire_on_node(h[e], STARPU_MAIN_RAM, STARPU_R) != 0)
      return SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_data_acquire failed");
    memcpy(out[e], (const float *)starpu_vector_get_local_ptr(h[e]) + 3 * first, (size_t)n * LOR_BYTES);
    starpu_data_release_on_node(h[e], STARPU_MAIN_RAM);
  }
  return SPROJ_OK;
}

int sproj_lors_count(const sproj_lors *lors, int64_t *num_lors)
{
  if (!lors || !num_lors)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "lors and num_lors must not be NULL");
  *num_lors = lors->num_lors;
  return SPROJ_OK;
}

int sproj_lors_unregister(sproj_lors *lors)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!lors)
    return SPROJ_OK;
  pthread_mutex_lock(&lors->lock);
  int nchunkings = lors->nchunkings, nvecs = lors->nvecs;
  pthread_mutex_unlock(&lors->lock);
  if (nchunkings > 0 || nvecs > 0)
    return SPROJ_FAIL(SPROJ_ERR_BUSY, "%d chunkings and %d projection vectors or TOF parameter sets of this LOR set "
                      "still exist", nchunkings, nvecs);
  if (lors->held)
    lors->held_free(lors->held); /* the order the library held for these events (held.c) */
  sproj_vec_free(lors->bins, 1);
  if (lors->whole)
    sproj_chunks_free(lors->whole);
  if (lors->own_xs || lors->gpu_xs) {
    /* made where they were used: nothing to bring home into memory that goes now */
    starpu_data_unregister_no_coherency(lors->xs);
    starpu_data_unregister_no_coherency(lors->xe);
    if (lors->gpu_xs) {
      starpu_free_on_node(lors->gpu_node, lors->gpu_xs, lors->own_bytes);
      starpu_free_on_node(lors->gpu_node, lors->gpu_xe, lors->own_bytes);
    } else {
      munmap(lors->own_xs, lors->own_bytes);
      munmap(lors->own_xe, lors->own_bytes);
    }
  } else if (lors->owns_handles) {
    starpu_data_unregister(lors->xs);
    starpu_data_unregister(lors->xe);
  }
  pthread_mutex_destroy(&lors->lock);
  free(lors->vecs);
  free(lors);
  sproj_count_object(-1);
  return SPROJ_OK;
}
