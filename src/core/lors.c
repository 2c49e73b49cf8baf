/* SPDX-License-Identifier: Apache-2.0 */
/* lors.c: LOR sets (plain and listmode events) and chunkings (pieces planned as StarPU partitions). */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "internal.h"
#include "starproj_parallelproj.h"

static uint64_t next_chunking_id = 1;

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

static int check_coordinates(const char *func, const float *xs, const float *xe, int64_t n)
{
  struct sproj_input_arg a = sproj_input_limits(0.0f, 0.0f);
  struct sproj_input_result r[2];
  sproj_input_scan(&a, SPROJ_INPUT_COORDS, xs, 3 * (uint64_t)n, &r[0]);
  if (r[0].first[0] == SPROJ_INPUT_NONE && r[0].first[1] == SPROJ_INPUT_NONE)
    sproj_input_scan(&a, SPROJ_INPUT_COORDS, xe, 3 * (uint64_t)n, &r[1]);
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

/* A LOR registration's failure, reported under the events' call's name (the same checks). */
static int renamed(const char *func, int ret)
{
  char why[512];
  snprintf(why, sizeof why, "%s", sproj_last_error());
  return sproj_fail(ret, func, "%s", why);
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
    return renamed(func, ret);
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
    return renamed(func, ret);
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
    return renamed(func, ret);
  if (!same)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "tof_bin holds %u bins for %lld events", starpu_vector_get_nx(tof_bin),
                      (long long)n);
  int min = 0, max = 0;
  if ((ret = bins_report(func, &r[2], &min, &max)))
    return ret;
  sproj_lors *lors = NULL;
  if ((ret = lors_new(lors_func, &lors, xstart, xend, n, 0)))
    return renamed(func, ret);
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
  if (lors->bins) {
    sproj_vec_fini(lors->bins, 1);
    free(lors->bins);
  }
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

/* ---- chunkings ---------------------------------------------------------------------------------------- */
void sproj_chunks_free(sproj_chunks *ch)
{
  /* gathered at the set's home (StarPU's partition_clean gathers in main memory, which for a set on a GPU would make
   * a host copy of its endpoints) */
  int home = starpu_data_get_home_node(ch->lors->xs);
  if (ch->xs_runs)
    starpu_data_partition_clean_node(ch->lors->xs, ch->nruns, ch->xs_runs, home >= 0 ? home : STARPU_MAIN_RAM);
  if (ch->xe_runs)
    starpu_data_partition_clean_node(ch->lors->xe, ch->nruns, ch->xe_runs, home >= 0 ? home : STARPU_MAIN_RAM);
  free(ch->xs_runs);
  free(ch->xe_runs);
  free(ch->piece_run);
  free(ch->piece_at);
  free(ch->run_first);
  free(ch->run_len);
  free(ch->piece_gpus);
  free(ch->piece_home);
  free(ch->count);
  free(ch->range_start);
  free(ch->range_first);
  free(ch->range_count);
  free(ch->piece_start);
  free(ch->piece_first);
  free(ch->piece_len);
  free(ch);
}

/* Pieces of one range of a chunk of total LORs cut into chunk_pieces: its share, rounded up, so that a chunk of one
 * range is cut as before and a range is never longer per piece than the chunk's pieces. */
static int64_t range_pieces(int64_t chunk_pieces, int64_t count, int64_t total)
{
  if (count == total)
    return chunk_pieces;
  return (chunk_pieces * count + total - 1) / total;
}

/* Groups the pieces into runs: a piece joins the run before it when its LORs follow that run's, the run stays
 * within SPROJ_RUN_LORS and (for chunks homed when built) both have one home. */
static int make_runs(sproj_chunks *ch)
{
  unsigned n = ch->npieces ? ch->npieces : 1;
  ch->piece_run = malloc(n * sizeof *ch->piece_run);
  ch->piece_at = malloc(n * sizeof *ch->piece_at);
  ch->run_first = malloc(n * sizeof *ch->run_first);
  ch->run_len = malloc(n * sizeof *ch->run_len);
  ch->piece_gpus = calloc(n, sizeof *ch->piece_gpus);
  if (!ch->piece_run || !ch->piece_at || !ch->run_first || !ch->run_len || !ch->piece_gpus)
    return SPROJ_ERR_NOMEM;
  unsigned nruns = 0;
  for (unsigned p = 0; p < ch->npieces; p++) {
    if (nruns > 0 && ch->piece_first[p] == ch->run_first[nruns - 1] + ch->run_len[nruns - 1] &&
        ch->run_len[nruns - 1] + (int64_t)ch->piece_len[p] <= SPROJ_RUN_LORS && ch->piece_home[p] == ch->piece_home[p - 1]) {
      ch->piece_at[p] = ch->run_len[nruns - 1];
      ch->run_len[nruns - 1] += ch->piece_len[p];
    } else {
      ch->run_first[nruns] = ch->piece_first[p];
      ch->run_len[nruns] = ch->piece_len[p];
      ch->piece_at[p] = 0;
      nruns++;
    }
    ch->piece_run[p] = (int)nruns - 1;
  }
  ch->nruns = nruns;
  return SPROJ_OK;
}

/* Builds a chunking from validated ranges (chunk c: ranges rs[c] .. rs[c+1]-1, ranges that continue the previous
 * one of their chunk already merged): cuts ranges into pieces, plans and activates them on the LORs. With home,
 * chunk c is homed on device home[c] and cut as for one device. */
static int chunks_build(const char *func, sproj_chunks **out, sproj_lors *lors, int num, const int *rs,
                        const int64_t *first, const int64_t *count, const int8_t *home)
{
  int spread = home ? 1 : 0;
  sproj_chunks *ch = calloc(1, sizeof *ch);
  if (!ch)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int nr = rs[num];
  ch->lors = lors;
  ch->num_chunks = num;
  ch->count = malloc(num * sizeof *ch->count);
  ch->range_start = malloc((num + 1) * sizeof *ch->range_start);
  ch->range_first = malloc(nr * sizeof *ch->range_first);
  ch->range_count = malloc(nr * sizeof *ch->range_count);
  ch->piece_start = malloc((num + 1) * sizeof *ch->piece_start);
  if (!ch->count || !ch->range_start || !ch->range_first || !ch->range_count || !ch->piece_start)
    goto nomem;
  int64_t npieces = 0;
  for (int c = 0; c < num; c++) {
    int64_t total = 0;
    for (int r = rs[c]; r < rs[c + 1]; r++)
      total += count[r];
    ch->count[c] = total;
    ch->range_start[c] = rs[c];
    ch->piece_start[c] = (int)npieces;
    int64_t chunk_pieces = sproj_pieces_for_spread(total, spread);
    if (chunk_pieces > INT32_MAX / 2)
      npieces = INT32_MAX; /* also keeps chunk_pieces * count in range_pieces below 2^62 */
    for (int r = rs[c]; r < rs[c + 1] && npieces <= INT32_MAX / 2; r++) {
      ch->range_first[r] = first[r];
      ch->range_count[r] = count[r];
      npieces += range_pieces(chunk_pieces, count[r], total);
    }
    if (npieces > INT32_MAX / 2) {
      sproj_chunks_free(ch);
      return sproj_fail(SPROJ_ERR_OVERFLOW, func, "too many pieces");
    }
  }
  ch->range_start[num] = nr;
  ch->piece_start[num] = (int)npieces;
  ch->npieces = (unsigned)npieces;
  ch->piece_first = malloc(npieces * sizeof *ch->piece_first);
  ch->piece_len = malloc(npieces * sizeof *ch->piece_len);
  ch->piece_home = malloc((npieces ? npieces : 1) * sizeof *ch->piece_home);
  if (!ch->piece_first || !ch->piece_len || !ch->piece_home)
    goto nomem;
  for (int c = 0; c < num; c++) {
    int64_t chunk_pieces = sproj_pieces_for_spread(ch->count[c], spread);
    int piece = ch->piece_start[c];
    for (int q = ch->piece_start[c]; q < ch->piece_start[c + 1]; q++)
      ch->piece_home[q] = home ? home[c] : -1;
    for (int r = rs[c]; r < rs[c + 1]; r++) {
      int64_t np = range_pieces(chunk_pieces, count[r], ch->count[c]);
      /* equal pieces, the first ones one LOR longer */
      int64_t base = count[r] / np, extra = count[r] % np;
      for (int64_t p = 0; p < np; p++, piece++) {
        ch->piece_first[piece] = first[r] + p * base + (p < extra ? p : extra);
        ch->piece_len[piece] = (uint32_t)(base + (p < extra ? 1 : 0));
      }
    }
  }
  if (make_runs(ch))
    goto nomem;
  if (sproj_plan_runs(lors->xs, ch, &ch->xs_runs) || sproj_plan_runs(lors->xe, ch, &ch->xe_runs))
    goto nomem;
  /* LORs are read-only: activate the partition now, once, so that concurrent submissions never race to do it */
  starpu_data_partition_readonly_submit(lors->xs, ch->nruns, ch->xs_runs);
  starpu_data_partition_readonly_submit(lors->xe, ch->nruns, ch->xe_runs);
  ch->id = __atomic_fetch_add(&next_chunking_id, 1, __ATOMIC_RELAXED);
  *out = ch;
  return SPROJ_OK;
nomem:
  sproj_chunks_free(ch);
  return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
}

struct range_ref {
  int64_t first;
  int range, chunk;
};

static int cmp_by_first(const void *a, const void *b)
{
  int64_t fa = ((const struct range_ref *)a)->first, fb = ((const struct range_ref *)b)->first;
  return fa < fb ? -1 : fa > fb;
}

/* Names range r of chunk c in messages: "chunk 3" when every chunk is one range, else "range 7 (chunk 3)". */
static const char *range_name(char *buf, size_t size, const int *rs, int r, int c)
{
  if (rs)
    snprintf(buf, size, "range %d (chunk %d)", r, c);
  else
    snprintf(buf, size, "chunk %d", c);
  return buf;
}

static int build_lists(const char *func, sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int *range_start,
                       const int64_t *first, const int64_t *count, const int8_t *home)
{
  char a[48], b[48];
  if (num_chunks == 0)
    return sproj_fail(SPROJ_ERR_EMPTY, func, "num_chunks is 0");
  if (num_chunks < 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num_chunks = %d is negative", num_chunks);
  const int *rs = range_start;
  int nr = rs ? rs[num_chunks] : num_chunks;
  for (int c = 0; c < num_chunks; c++) {
    int r0 = rs ? rs[c] : c, r1 = rs ? rs[c + 1] : c + 1;
    if (r1 == r0)
      return sproj_fail(SPROJ_ERR_EMPTY, func, "chunk %d has no range", c);
    for (int r = r0; r < r1; r++) {
      if (count[r] == 0)
        return sproj_fail(SPROJ_ERR_EMPTY, func, "%s is empty", range_name(a, sizeof a, rs, r, c));
      if (count[r] < 0)
        return sproj_fail(SPROJ_ERR_DIMS, func, "count[%d] = %lld is negative", r, (long long)count[r]);
      if (first[r] < 0 || first[r] > lors->num_lors || count[r] > lors->num_lors - first[r])
        return sproj_fail(SPROJ_ERR_RANGE, func, "%s (first %lld, count %lld) is outside the %lld LORs",
                          range_name(a, sizeof a, rs, r, c), (long long)first[r], (long long)count[r],
                          (long long)lors->num_lors);
    }
  }
  struct range_ref *order = malloc(nr * sizeof *order);
  int *merged_rs = malloc((num_chunks + 1) * sizeof *merged_rs);
  int64_t *mfirst = malloc(nr * sizeof *mfirst), *mcount = malloc(nr * sizeof *mcount);
  int ret = SPROJ_OK;
  if (!order || !merged_rs || !mfirst || !mcount) {
    ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    goto out;
  }
  for (int c = 0; c < num_chunks; c++)
    for (int r = rs ? rs[c] : c; r < (rs ? rs[c + 1] : c + 1); r++)
      order[r] = (struct range_ref){first[r], r, c};
  qsort(order, nr, sizeof *order, cmp_by_first);
  for (int i = 1; i < nr; i++) {
    int p = order[i - 1].range, q = order[i].range;
    if (first[q] < first[p] + count[p]) {
      ret = sproj_fail(SPROJ_ERR_RANGE, func, "%s and %s overlap", range_name(a, sizeof a, rs, p, order[i - 1].chunk),
                       range_name(b, sizeof b, rs, q, order[i].chunk));
      goto out;
    }
  }
  /* a range that continues the previous one of its chunk joins it: fewer, longer pieces */
  int m = 0;
  for (int c = 0; c < num_chunks; c++) {
    merged_rs[c] = m;
    for (int r = rs ? rs[c] : c; r < (rs ? rs[c + 1] : c + 1); r++) {
      if (m > merged_rs[c] && mfirst[m - 1] + mcount[m - 1] == first[r]) {
        mcount[m - 1] += count[r];
      } else {
        mfirst[m] = first[r];
        mcount[m++] = count[r];
      }
    }
  }
  merged_rs[num_chunks] = m;
  sproj_chunks *ch;
  if ((ret = chunks_build(func, &ch, lors, num_chunks, merged_rs, mfirst, mcount, home)))
    goto out;
  pthread_mutex_lock(&lors->lock);
  lors->nchunkings++;
  pthread_mutex_unlock(&lors->lock);
  *chunks = ch;
out:
  free(order);
  free(merged_rs);
  free(mfirst);
  free(mcount);
  return ret;
}

int sproj_chunks_build_lists(const char *func, sproj_chunks **chunks, sproj_lors *lors, int num_chunks,
                             const int *range_start, const int64_t *first, const int64_t *count)
{
  return build_lists(func, chunks, lors, num_chunks, range_start, first, count, NULL);
}

int sproj_chunks_build_owned(const char *func, sproj_chunks **chunks, sproj_lors *lors, int num_chunks,
                             const int *range_start, const int64_t *first, const int64_t *count, const int8_t *home)
{
  return build_lists(func, chunks, lors, num_chunks, range_start, first, count, home);
}

int sproj_chunks_create_ranges(sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int64_t *first,
                               const int64_t *count)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!chunks || !lors || !first || !count)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks, lors, first and count must not be NULL");
  return sproj_chunks_build_lists(__func__, chunks, lors, num_chunks, NULL, first, count);
}

/* Turns per-chunk range counts into the start of each chunk's ranges; returns the total or a negative status. */
static int64_t list_starts(const char *func, int num_chunks, const int *num_ranges, int **starts)
{
  if (num_chunks == 0)
    return sproj_fail(SPROJ_ERR_EMPTY, func, "num_chunks is 0");
  if (num_chunks < 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num_chunks = %d is negative", num_chunks);
  int64_t total = 0;
  for (int c = 0; c < num_chunks; c++) {
    if (num_ranges[c] == 0)
      return sproj_fail(SPROJ_ERR_EMPTY, func, "chunk %d has no range", c);
    if (num_ranges[c] < 0)
      return sproj_fail(SPROJ_ERR_DIMS, func, "num_ranges[%d] = %d is negative", c, num_ranges[c]);
    total += num_ranges[c];
    if (total > INT32_MAX / 2)
      return sproj_fail(SPROJ_ERR_OVERFLOW, func, "more than 2^30 ranges");
  }
  int *s = malloc((num_chunks + 1) * sizeof *s);
  if (!s)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  s[0] = 0;
  for (int c = 0; c < num_chunks; c++)
    s[c + 1] = s[c] + num_ranges[c];
  *starts = s;
  return total;
}

int sproj_chunks_create_lists(sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int *num_ranges,
                              const int64_t *first, const int64_t *count)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!chunks || !lors || !num_ranges || !first || !count)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks, lors, num_ranges, first and count must not be NULL");
  int *starts;
  int64_t total = list_starts(__func__, num_chunks, num_ranges, &starts);
  if (total < 0)
    return (int)total;
  ret = sproj_chunks_build_lists(__func__, chunks, lors, num_chunks, starts, first, count);
  free(starts);
  return ret;
}

int sproj_chunks_create_strided(sproj_chunks **chunks, sproj_lors *lors, int num_chunks, const int64_t *first,
                                const int64_t *count, const int64_t *stride, const int *num_ranges)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!chunks || !lors || !first || !count || !stride || !num_ranges)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks, lors, first, count, stride and num_ranges must not be NULL");
  int *starts;
  int64_t total = list_starts(__func__, num_chunks, num_ranges, &starts);
  if (total < 0)
    return (int)total;
  for (int c = 0; c < num_chunks; c++) {
    /* the last range must start inside the set: checked before first + (n-1)*stride can overflow */
    int64_t steps = num_ranges[c] - 1, s = stride[c] < 0 ? -stride[c] : stride[c];
    if (stride[c] == INT64_MIN || (steps > 0 && s > (INT64_MAX / 2) / steps) || first[c] < 0 ||
        first[c] > lors->num_lors || first[c] + steps * stride[c] < 0 || first[c] + steps * stride[c] > lors->num_lors) {
      free(starts);
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "chunk %d: %d ranges from %lld with stride %lld leave the %lld LORs", c,
                        num_ranges[c], (long long)first[c], (long long)stride[c], (long long)lors->num_lors);
    }
  }
  int64_t *f = malloc(total * sizeof *f), *n = malloc(total * sizeof *n);
  if (!f || !n) {
    free(starts);
    free(f);
    free(n);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  for (int c = 0; c < num_chunks; c++)
    for (int k = 0; k < num_ranges[c]; k++) {
      f[starts[c] + k] = first[c] + k * stride[c];
      n[starts[c] + k] = count[c];
    }
  ret = sproj_chunks_build_lists(__func__, chunks, lors, num_chunks, starts, f, n);
  free(starts);
  free(f);
  free(n);
  return ret;
}

int sproj_chunks_create_blocks(sproj_chunks **chunks, sproj_lors *lors, int num_chunks)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!chunks || !lors)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks and lors must not be NULL");
  if (num_chunks == 0)
    return SPROJ_FAIL(SPROJ_ERR_EMPTY, "num_chunks is 0");
  if (num_chunks < 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "num_chunks = %d is negative", num_chunks);
  if (num_chunks > lors->num_lors)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "%d chunks of %lld LORs would leave chunks empty", num_chunks,
                      (long long)lors->num_lors);
  int64_t *first = malloc(num_chunks * sizeof *first), *count = malloc(num_chunks * sizeof *count);
  if (!first || !count) {
    free(first);
    free(count);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  int64_t base = lors->num_lors / num_chunks, extra = lors->num_lors % num_chunks;
  for (int c = 0; c < num_chunks; c++) {
    first[c] = c * base + (c < extra ? c : extra);
    count[c] = base + (c < extra ? 1 : 0);
  }
  ret = sproj_chunks_create_ranges(chunks, lors, num_chunks, first, count);
  free(first);
  free(count);
  return ret;
}

int sproj_chunks_count(const sproj_chunks *chunks, int *num_chunks)
{
  if (!chunks || !num_chunks)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks and num_chunks must not be NULL");
  *num_chunks = chunks->num_chunks;
  return SPROJ_OK;
}

static int check_chunk(const char *func, const sproj_chunks *chunks, int chunk)
{
  if (chunk < 0 || chunk >= chunks->num_chunks)
    return sproj_fail(SPROJ_ERR_RANGE, func, "chunk %d outside 0..%d", chunk, chunks->num_chunks - 1);
  return SPROJ_OK;
}

int sproj_chunks_range(const sproj_chunks *chunks, int chunk, int64_t *first, int64_t *count)
{
  if (!chunks || !first || !count)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks, first and count must not be NULL");
  int ret = check_chunk(__func__, chunks, chunk);
  if (ret)
    return ret;
  int r = chunks->range_start[chunk], nr = chunks->range_start[chunk + 1] - r;
  if (nr != 1)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "chunk %d is %d ranges (sproj_chunks_ranges lists them)", chunk, nr);
  *first = chunks->range_first[r];
  *count = chunks->range_count[r];
  return SPROJ_OK;
}

int sproj_chunks_size(const sproj_chunks *chunks, int chunk, int64_t *num_lors)
{
  if (!chunks || !num_lors)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks and num_lors must not be NULL");
  int ret = check_chunk(__func__, chunks, chunk);
  if (ret)
    return ret;
  *num_lors = chunks->count[chunk];
  return SPROJ_OK;
}

int sproj_chunks_num_ranges(const sproj_chunks *chunks, int chunk, int *num_ranges)
{
  if (!chunks || !num_ranges)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks and num_ranges must not be NULL");
  int ret = check_chunk(__func__, chunks, chunk);
  if (ret)
    return ret;
  *num_ranges = chunks->range_start[chunk + 1] - chunks->range_start[chunk];
  return SPROJ_OK;
}

int sproj_chunks_ranges(const sproj_chunks *chunks, int chunk, int64_t *first, int64_t *count)
{
  if (!chunks || !first || !count)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks, first and count must not be NULL");
  int ret = check_chunk(__func__, chunks, chunk);
  if (ret)
    return ret;
  for (int r = chunks->range_start[chunk]; r < chunks->range_start[chunk + 1]; r++) {
    first[r - chunks->range_start[chunk]] = chunks->range_first[r];
    count[r - chunks->range_start[chunk]] = chunks->range_count[r];
  }
  return SPROJ_OK;
}

int sproj_chunks_destroy(sproj_chunks *chunks)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!chunks)
    return SPROJ_OK;
  if (chunks == chunks->lors->whole)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the whole-set chunking belongs to its LOR set");
  sproj_chunks_release(chunks);
  return SPROJ_OK;
}

void sproj_chunks_release(sproj_chunks *chunks)
{
  sproj_lors *lors = chunks->lors;
  pthread_mutex_lock(&lors->lock);
  for (int i = 0; i < lors->nvecs; i++)
    sproj_vec_forget(lors->vecs[i], chunks->id);
  if (lors->bins)
    sproj_vec_forget(lors->bins, chunks->id);
  lors->nchunkings--;
  pthread_mutex_unlock(&lors->lock);
  sproj_chunks_free(chunks);
}

int sproj_resolve_chunks(const char *func, sproj_lors *lors, const sproj_chunks *ch, const sproj_chunks **out)
{
  if (ch) {
    if (ch->lors != lors)
      return sproj_fail(SPROJ_ERR_MISMATCH, func, "the chunking belongs to another LOR set");
    *out = ch;
    return SPROJ_OK;
  }
  pthread_mutex_lock(&lors->lock);
  int ret = SPROJ_OK;
  if (!lors->whole) {
    int64_t first = 0;
    int starts[2] = {0, 1};
    ret = chunks_build(func, &lors->whole, lors, 1, starts, &first, &lors->num_lors, NULL);
  }
  pthread_mutex_unlock(&lors->lock);
  *out = lors->whole;
  return ret;
}

int sproj_chunk_list(const char *func, const sproj_chunks *ch, int chunk, int **list, int *num)
{
  if (chunk != SPROJ_ALL_CHUNKS && (chunk < 0 || chunk >= ch->num_chunks))
    return sproj_fail(SPROJ_ERR_RANGE, func, "chunk %d outside 0..%d", chunk, ch->num_chunks - 1);
  int n = chunk == SPROJ_ALL_CHUNKS ? ch->num_chunks : 1;
  int *l = malloc(n * sizeof *l);
  if (!l)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  for (int i = 0; i < n; i++)
    l[i] = chunk == SPROJ_ALL_CHUNKS ? i : chunk;
  *list = l;
  *num = n;
  return SPROJ_OK;
}

starpu_data_handle_t *sproj_piece_handles(const sproj_chunks *ch, const int *list, int num,
                                           starpu_data_handle_t *const *arrays, int narrays, int *count)
{
  int n = 0;
  for (int i = 0; i < num; i++)
    n += ch->piece_start[list[i] + 1] - ch->piece_start[list[i]];
  starpu_data_handle_t *h = malloc((size_t)n * narrays * sizeof *h);
  if (!h)
    return NULL;
  int k = 0;
  for (int a = 0; a < narrays; a++)
    for (int i = 0; i < num; i++)
      for (int p = ch->piece_start[list[i]]; p < ch->piece_start[list[i] + 1]; p++)
        h[k++] = arrays[a][p];
  *count = k;
  return h;
}

starpu_data_handle_t *sproj_run_handles(const sproj_chunks *ch, const int *list, int num, int *count)
{
  int n = 0;
  unsigned char *seen = calloc(ch->nruns ? ch->nruns : 1, 1);
  if (!seen)
    return NULL;
  for (int i = 0; i < num; i++)
    for (int p = ch->piece_start[list[i]]; p < ch->piece_start[list[i] + 1]; p++)
      if (!seen[ch->piece_run[p]]) {
        seen[ch->piece_run[p]] = 1;
        n++;
      }
  starpu_data_handle_t *h = malloc((size_t)(n ? n : 1) * 2 * sizeof *h);
  if (!h) {
    free(seen);
    return NULL;
  }
  int k = 0;
  for (unsigned r = 0; r < ch->nruns; r++)
    if (seen[r]) {
      h[k] = ch->xs_runs[r];
      h[n + k++] = ch->xe_runs[r];
    }
  free(seen);
  *count = 2 * n;
  return h;
}

/* Upload or release of the LORs of some chunks. */
static int lors_residency(const char *func, sproj_lors *lors, const sproj_chunks *chunks, int chunk, int gpu,
                          int upload)
{
  unsigned nodes[STARPU_MAXCUDADEVS];
  const sproj_chunks *ch;
  int *list, num, nh, ret;
  /* not initialised comes first, as in every other call: no object can exist then */
  int init = sproj_check_init(func);
  if (init)
    return init;
  if (!lors)
    return sproj_fail(SPROJ_ERR_NULL, func, "lors is NULL");
  int nnodes = sproj_gpu_nodes(func, gpu, nodes);
  if (nnodes < 0)
    return nnodes;
  if ((ret = sproj_resolve_chunks(func, lors, chunks, &ch)))
    return ret;
  if ((ret = sproj_chunk_list(func, ch, chunk, &list, &num)))
    return ret;
  starpu_data_handle_t *h = sproj_run_handles(ch, list, num, &nh);
  if (!h) {
    free(list);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  ret = upload ? sproj_upload_handles(h, nh, nodes, nnodes) : sproj_release_handles(h, nh, nodes, nnodes);
  free(h);
  /* the chunks' tasks now run on these GPUs (or no longer), whatever other chunks of their runs do */
  if (!ret && sproj_rt.ngpus <= SPROJ_MAX_STICKY_GPUS) {
    uint8_t mask = gpu == SPROJ_ALL_GPUS ? (uint8_t)((1u << sproj_rt.ngpus) - 1u) : (uint8_t)(1u << gpu);
    for (int i = 0; i < num; i++)
      for (int p = ch->piece_start[list[i]]; p < ch->piece_start[list[i] + 1]; p++) {
        if (upload)
          __atomic_fetch_or(&ch->piece_gpus[p], mask, __ATOMIC_RELAXED);
        else
          __atomic_fetch_and(&ch->piece_gpus[p], (uint8_t)~mask, __ATOMIC_RELAXED);
      }
  }
  free(list);
  return ret;
}

int sproj_lors_upload(sproj_lors *lors, const sproj_chunks *chunks, int chunk, int gpu)
{
  return lors_residency(__func__, lors, chunks, chunk, gpu, 1);
}

int sproj_lors_release(sproj_lors *lors, const sproj_chunks *chunks, int chunk, int gpu)
{
  return lors_residency(__func__, lors, chunks, chunk, gpu, 0);
}


int sproj_chunks_set_device(sproj_chunks *chunks, int chunk, int device)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!chunks)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "chunks is NULL");
  int n = sproj_device_count();
  if (device < -1 || device >= n)
    return SPROJ_FAIL(SPROJ_ERR_NO_DEVICE, "device %d: projections run on %d devices now (0..%d, or -1 for none)",
                      device, n, n - 1);
  int *list, num;
  if ((ret = sproj_chunk_list(__func__, chunks, chunk, &list, &num)))
    return ret;
  /* tasks submitted from now on read it; a task already queued keeps the workers it was given */
  for (int i = 0; i < num; i++)
    for (int p = chunks->piece_start[list[i]]; p < chunks->piece_start[list[i] + 1]; p++)
      __atomic_store_n(&chunks->piece_home[p], (int8_t)device, __ATOMIC_RELAXED);
  free(list);
  return SPROJ_OK;
}
