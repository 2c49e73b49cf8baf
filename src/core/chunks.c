/* SPDX-License-Identifier: Apache-2.0 */
/* chunks.c: chunkings of a LOR set: chunks of ranges cut into pieces and runs, planned as StarPU partitions; the
 * public calls that make, query and destroy them, their home devices, and the upload or release of their LORs. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* keys the plans of per-LOR vectors (sproj_chunks.id) */
static uint64_t next_chunking_id = 1;

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
