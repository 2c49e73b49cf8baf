/* SPDX-License-Identifier: Apache-2.0 */
/* scanner_chunks.c: chunkings of a scanner's sinogram LOR set: views, viewgrams and subsets of interleaved views. */
#include "config.h"
#include <stdlib.h>
#include "../core/internal.h"

/* Ranges of the chunks being built: chunk c holds ranges start[c] .. start[c+1]-1. */
struct range_list {
  int num_chunks, n, cap;
  int *start;
  int64_t *first, *count;
};

static int list_add(struct range_list *l, int64_t first, int64_t count)
{
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 256;
    int64_t *f = realloc(l->first, cap * sizeof *f);
    if (!f)
      return SPROJ_ERR_NOMEM;
    l->first = f;
    int64_t *c = realloc(l->count, cap * sizeof *c);
    if (!c)
      return SPROJ_ERR_NOMEM;
    l->count = c;
    l->cap = cap;
  }
  l->first[l->n] = first;
  l->count[l->n++] = count;
  return SPROJ_OK;
}

static void list_free(struct range_list *l)
{
  free(l->start);
  free(l->first);
  free(l->count);
}

/* Adds the ranges of viewgram (view, segment): one range, or one per axial position in [segment][axial][view]. */
static int add_viewgram(struct range_list *l, const sproj_scanner *sc, const struct sproj_scanner_params *p,
                        const struct sproj_sinogram_info *in, int view, int segment)
{
  int planes;
  int64_t lor;
  sproj_scanner_segment_planes(sc, segment, &planes);
  if (p->order != SPROJ_ORDER_SEGMENT_AXIAL) {
    sproj_scanner_lor_index(sc, view, segment, 0, 0, &lor);
    return list_add(l, lor, (int64_t)planes * in->num_radial_bins);
  }
  for (int a = 0; a < planes; a++) {
    sproj_scanner_lor_index(sc, view, segment, a, 0, &lor);
    int ret = list_add(l, lor, in->num_radial_bins);
    if (ret)
      return ret;
  }
  return SPROJ_OK;
}

struct range {
  int64_t first, count;
};

static int cmp_range(const void *a, const void *b)
{
  int64_t fa = ((const struct range *)a)->first, fb = ((const struct range *)b)->first;
  return fa < fb ? -1 : fa > fb;
}

/* Sorts the ranges of chunk c by their first LOR, so that neighbours in the set are joined into one range. */
static int sort_chunk(struct range_list *l, int c)
{
  int n = l->n - l->start[c];
  struct range *r = malloc(n * sizeof *r);
  if (!r)
    return SPROJ_ERR_NOMEM;
  for (int i = 0; i < n; i++)
    r[i] = (struct range){l->first[l->start[c] + i], l->count[l->start[c] + i]};
  qsort(r, n, sizeof *r, cmp_range);
  for (int i = 0; i < n; i++) {
    l->first[l->start[c] + i] = r[i].first;
    l->count[l->start[c] + i] = r[i].count;
  }
  free(r);
  return SPROJ_OK;
}

enum kind { VIEWS, VIEWGRAMS, SUBSETS };

static int make_chunks(const char *func, sproj_chunks **chunks, const sproj_scanner *sc, sproj_lors *lors,
                       enum kind kind, int num_subsets)
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!chunks || !sc || !lors)
    return sproj_fail(SPROJ_ERR_NULL, func, "chunks, scanner and lors must not be NULL");
  struct sproj_scanner_params p;
  struct sproj_sinogram_info in;
  sproj_scanner_params(sc, &p);
  sproj_scanner_info(sc, &in);
  if (lors->num_lors != in.num_lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the LOR set holds %lld LORs, the scanner's sinogram %lld",
                      (long long)lors->num_lors, (long long)in.num_lors);
  if (kind == SUBSETS && num_subsets < 1)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num_subsets = %d must be >= 1", num_subsets);
  if (kind == SUBSETS && num_subsets > in.num_views)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%d subsets of %d views would leave subsets empty", num_subsets,
                      in.num_views);
  const int max = in.max_ring_difference;
  struct range_list l = {0};
  l.num_chunks = kind == VIEWS ? in.num_views : kind == VIEWGRAMS ? in.num_views * in.num_segments : num_subsets;
  l.start = malloc((l.num_chunks + 1) * sizeof *l.start);
  if (!l.start)
    ret = SPROJ_ERR_NOMEM;
  for (int c = 0; c < l.num_chunks && !ret; c++) {
    l.start[c] = l.n;
    if (kind == VIEWGRAMS) {
      ret = add_viewgram(&l, sc, &p, &in, c / in.num_segments, c % in.num_segments - max);
      continue;
    }
    /* a view, or the views c, c + num_subsets, ... */
    int step = kind == VIEWS ? in.num_views : num_subsets;
    for (int v = c; v < in.num_views && !ret; v += step)
      for (int s = -max; s <= max && !ret; s++)
        ret = add_viewgram(&l, sc, &p, &in, v, s);
    if (!ret)
      ret = sort_chunk(&l, c);
  }
  if (ret) {
    list_free(&l);
    return sproj_fail(ret, func, "out of memory");
  }
  l.start[l.num_chunks] = l.n;
  ret = sproj_chunks_build_lists(func, chunks, lors, l.num_chunks, l.start, l.first, l.count);
  list_free(&l);
  return ret;
}

int sproj_scanner_chunks_views(sproj_chunks **chunks, const sproj_scanner *scanner, sproj_lors *lors)
{
  return make_chunks(__func__, chunks, scanner, lors, VIEWS, 0);
}

int sproj_scanner_chunks_viewgrams(sproj_chunks **chunks, const sproj_scanner *scanner, sproj_lors *lors)
{
  return make_chunks(__func__, chunks, scanner, lors, VIEWGRAMS, 0);
}

int sproj_scanner_chunks_subsets(sproj_chunks **chunks, const sproj_scanner *scanner, sproj_lors *lors,
                                 int num_subsets)
{
  return make_chunks(__func__, chunks, scanner, lors, SUBSETS, num_subsets);
}

int sproj_scanner_subset_views(const sproj_scanner *scanner, int num_subsets, int subset, int *views, int *num_views)
{
  if (!scanner || !views || !num_views)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "scanner, views and num_views must not be NULL");
  struct sproj_sinogram_info in;
  sproj_scanner_info(scanner, &in);
  if (num_subsets < 1)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "num_subsets = %d must be >= 1", num_subsets);
  if (num_subsets > in.num_views)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "%d subsets of %d views would leave subsets empty", num_subsets, in.num_views);
  if (subset < 0 || subset >= num_subsets)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "subset %d outside 0..%d", subset, num_subsets - 1);
  int n = 0;
  for (int v = subset; v < in.num_views; v += num_subsets)
    views[n++] = v;
  *num_views = n;
  return SPROJ_OK;
}
