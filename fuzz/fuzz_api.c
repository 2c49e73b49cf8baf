/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_api.c: libFuzzer target over registration, chunking, TOF parameters and submission: the input is read as a
 * sequence of calls with raw arguments (any float bits, any integers, objects of other sets, repeated chunks, orders
 * held for events). A call may fail with a status, never crash, hang or corrupt; every object registered is
 * unregistered at the end and must be (a refusal there is a bug), so one input cannot leak state into the next. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "starproj.h"

#define MAXOBJ 4

struct reader {
  const uint8_t *p;
  size_t n;
};

static uint8_t u8(struct reader *r)
{
  if (r->n == 0)
    return 0;
  r->n--;
  return *r->p++;
}

static void bytes(struct reader *r, void *dst, size_t len)
{
  size_t k = len < r->n ? len : r->n;
  memcpy(dst, r->p, k);
  memset((uint8_t *)dst + k, 0, len - k);
  r->p += k;
  r->n -= k;
}

/* a float of any bit pattern, or (more often) a modest value, so that both validation and projection get exercised */
static float any_float(struct reader *r)
{
  uint8_t kind = u8(r);
  if (kind < 64) {
    float f;
    bytes(r, &f, sizeof f);
    return f;
  }
  return (float)(int8_t)u8(r) * 0.75f;
}

static int64_t any_int64(struct reader *r)
{
  uint8_t kind = u8(r);
  if (kind < 48) {
    int64_t v;
    bytes(r, &v, sizeof v);
    return v;
  }
  return (int8_t)u8(r);
}

struct state {
  sproj_image *img[MAXOBJ];
  float *img_data[MAXOBJ];
  sproj_lors *lors[MAXOBJ];
  float *lor_data[MAXOBJ][2];
  int16_t *bins[MAXOBJ];
  float *tof_arrays[MAXOBJ][2];
  sproj_chunks *chunks[MAXOBJ];
  sproj_proj *proj[MAXOBJ];
  float *proj_data[MAXOBJ];
  sproj_tof *tof[MAXOBJ];
  int nimg, nlors, nchunks, nproj, ntof;
};

static void must(int ok)
{
  if (!ok)
    __builtin_trap();
}

static void op_image(struct state *s, struct reader *r)
{
  if (s->nimg == MAXOBJ)
    return;
  int dims[3];
  float vs[3], origin[3];
  int64_t nvox = 1;
  for (int k = 0; k < 3; k++) {
    dims[k] = (int)(u8(r) % 16) - 2;
    nvox *= dims[k] > 0 ? dims[k] : 1;
  }
  for (int k = 0; k < 3; k++)
    vs[k] = any_float(r);
  for (int k = 0; k < 3; k++)
    origin[k] = any_float(r);
  float *data = calloc(nvox, sizeof *data);
  for (int64_t i = 0; i < nvox; i++)
    data[i] = (float)((i * 7) % 11) / 11.0f;
  sproj_image *img = (sproj_image *)0x1;
  if (sproj_image_register(&img, data, dims, vs, origin) == SPROJ_OK) {
    s->img_data[s->nimg] = data;
    s->img[s->nimg++] = img;
  } else {
    must(img == (sproj_image *)0x1);
    free(data);
  }
}

static void op_lors(struct state *s, struct reader *r, int events)
{
  if (s->nlors == MAXOBJ)
    return;
  int64_t n = (int64_t)(u8(r) % 40) - 1;
  int64_t alloc = n > 0 ? n : 1;
  float *xs = malloc(3 * alloc * sizeof *xs), *xe = malloc(3 * alloc * sizeof *xe);
  int16_t *bins = events ? malloc(alloc * sizeof *bins) : NULL;
  for (int64_t i = 0; i < 3 * alloc; i++) {
    xs[i] = any_float(r);
    xe[i] = any_float(r);
  }
  for (int64_t i = 0; events && i < alloc; i++)
    bins[i] = (int16_t)((int8_t)u8(r) % 8);
  sproj_lors *lors = NULL;
  int ret = events ? sproj_lors_register_events(&lors, xs, xe, bins, n) : sproj_lors_register(&lors, xs, xe, n);
  if (ret == SPROJ_OK) {
    s->lor_data[s->nlors][0] = xs;
    s->lor_data[s->nlors][1] = xe;
    s->bins[s->nlors] = bins;
    s->lors[s->nlors++] = lors;
  } else {
    must(lors == NULL);
    free(xs);
    free(xe);
    free(bins);
  }
}

static sproj_lors *pick_lors(struct state *s, struct reader *r)
{
  return s->nlors ? s->lors[u8(r) % s->nlors] : NULL;
}

static void op_chunks(struct state *s, struct reader *r)
{
  if (s->nchunks == MAXOBJ)
    return;
  sproj_lors *lors = pick_lors(s, r);
  sproj_chunks *ch = NULL;
  int ret;
  if (u8(r) & 1) {
    int num = (int)(u8(r) % 8) - 1;
    int64_t first[8], count[8];
    for (int c = 0; c < 8; c++) {
      first[c] = any_int64(r);
      count[c] = any_int64(r);
    }
    ret = sproj_chunks_create_ranges(&ch, lors, num, first, count);
  } else {
    ret = sproj_chunks_create_blocks(&ch, lors, (int)(int8_t)u8(r));
  }
  if (ret == SPROJ_OK)
    s->chunks[s->nchunks++] = ch;
  else
    must(ch == NULL);
}

static void op_proj(struct state *s, struct reader *r)
{
  if (s->nproj == MAXOBJ)
    return;
  sproj_lors *lors = pick_lors(s, r);
  int64_t n = 0;
  int bins = (int)(u8(r) % 6) - 1;
  if (lors)
    must(sproj_lors_count(lors, &n) == SPROJ_OK);
  float *data = calloc((n > 0 ? n : 1) * (bins > 1 ? bins : 1), sizeof *data);
  for (int64_t i = 0; i < n; i++)
    data[i] = 0.5f;
  sproj_proj *proj = NULL;
  int ret = bins == 1 ? sproj_proj_register(&proj, data, lors) : sproj_proj_register_tof(&proj, data, lors, bins);
  if (ret == SPROJ_OK) {
    s->proj_data[s->nproj] = data;
    s->proj[s->nproj++] = proj;
  } else {
    must(proj == NULL);
    free(data);
  }
}

static void op_tof(struct state *s, struct reader *r)
{
  if (s->ntof == MAXOBJ)
    return;
  struct sproj_tof_params p = {any_float(r), (int)(u8(r) % 6) - 1, any_float(r), any_float(r), any_float(r)};
  sproj_lors *lors = NULL;
  float *arr[2] = {NULL, NULL};
  uint8_t which = u8(r);
  if (which & 3) {
    lors = pick_lors(s, r);
    int64_t n = 0;
    if (lors)
      must(sproj_lors_count(lors, &n) == SPROJ_OK);
    for (int k = 0; k < 2; k++)
      if (which & (1 << k)) {
        arr[k] = malloc((n > 0 ? n : 1) * sizeof(float));
        for (int64_t i = 0; i < n; i++)
          arr[k][i] = any_float(r);
      }
  }
  sproj_tof *tof = NULL;
  if (sproj_tof_register(&tof, &p, lors, arr[0], arr[1]) == SPROJ_OK) {
    s->tof_arrays[s->ntof][0] = arr[0];
    s->tof_arrays[s->ntof][1] = arr[1];
    s->tof[s->ntof++] = tof;
  } else {
    must(tof == NULL);
    free(arr[0]);
    free(arr[1]);
  }
}

static void op_project(struct state *s, struct reader *r)
{
  if (!s->nimg || !s->nproj)
    return;
  sproj_image *img = s->img[u8(r) % s->nimg];
  sproj_proj *proj = s->proj[u8(r) % s->nproj];
  uint8_t sel = u8(r);
  sproj_chunks *ch = s->nchunks && (sel & 8) ? s->chunks[u8(r) % s->nchunks] : NULL;
  sproj_tof *tof = s->ntof && (sel & 16) ? s->tof[u8(r) % s->ntof] : NULL;
  int list[6], num = (int)(u8(r) % 7) - 1;
  for (int i = 0; i < 6; i++)
    list[i] = (int)(int8_t)u8(r) % 5;
  int chunk = (int)(int8_t)u8(r) % 4;
  int back = sel & 1, kind = (sel >> 1) % 3, use_list = sel & 32;
  if (kind == 0)
    use_list ? (back ? sproj_back_chunks(img, proj, ch, list, num) : sproj_fwd_chunks(img, proj, ch, list, num))
             : (back ? sproj_back(img, proj, ch, chunk) : sproj_fwd(img, proj, ch, chunk));
  else if (kind == 1)
    use_list ? (back ? sproj_back_tof_sino_chunks(img, proj, ch, list, num, tof)
                     : sproj_fwd_tof_sino_chunks(img, proj, ch, list, num, tof))
             : (back ? sproj_back_tof_sino(img, proj, ch, chunk, tof) : sproj_fwd_tof_sino(img, proj, ch, chunk, tof));
  else
    use_list ? (back ? sproj_back_tof_lm_chunks(img, proj, ch, list, num, tof)
                     : sproj_fwd_tof_lm_chunks(img, proj, ch, list, num, tof))
             : (back ? sproj_back_tof_lm(img, proj, ch, chunk, tof) : sproj_fwd_tof_lm(img, proj, ch, chunk, tof));
}

static void op_misc(struct state *s, struct reader *r, int *batch_depth)
{
  uint8_t what = u8(r) % 10;
  if (what == 0 && *batch_depth < 3 && sproj_batch_begin() == SPROJ_OK)
    (*batch_depth)++;
  else if (what == 1 && *batch_depth > 0) {
    sproj_batch_end();
    (*batch_depth)--;
  } else if (what == 2 && s->nproj) {
    sproj_chunks *ch = s->nchunks ? s->chunks[u8(r) % s->nchunks] : NULL;
    sproj_proj_sync(s->proj[u8(r) % s->nproj], ch, (int)(int8_t)u8(r) % 4, (int)(u8(r) % 4));
  } else if (what == 3 && s->nimg) {
    sproj_image_sync(s->img[u8(r) % s->nimg], (int)(u8(r) % 4));
  } else if (what == 4 && s->nlors) {
    sproj_chunks *ch = s->nchunks ? s->chunks[u8(r) % s->nchunks] : NULL;
    sproj_lors_upload(pick_lors(s, r), ch, (int)(int8_t)u8(r) % 4, (int)(int8_t)u8(r) % 3);
  } else if (what == 5) {
    sproj_set_task_lors(any_int64(r));
  } else if (what == 6) {
    int v = (int)(int8_t)u8(r);
    if (v & 8)
      sproj_set_image_layouts(v % 3);
    else
      sproj_set_merge_calls(v % 3);
  } else if (what == 7) {
    sproj_flush();
  } else if (what == 8) {
    /* an order of up to 64 LORs of any coordinates and voxel size: a permutation when it succeeds; then a reorder by
     * it, or by a corrupted copy, which either succeeds or leaves the array as it was */
    int n = u8(r) % 65;
    float xs[3 * 64], xe[3 * 64], vs[3], copy[3 * 64];
    int64_t order[64];
    unsigned char seen[64] = {0};
    for (int i = 0; i < 3 * n; i++) {
      xs[i] = any_float(r);
      xe[i] = any_float(r);
    }
    for (int a = 0; a < 3; a++)
      vs[a] = any_float(r);
    if (sproj_lors_order(xs, xe, n, vs, order) != SPROJ_OK)
      return;
    for (int i = 0; i < n; i++) {
      must(order[i] >= 0 && order[i] < n && !seen[order[i]]);
      seen[order[i]] = 1;
    }
    if (n > 0 && (u8(r) & 1))
      order[u8(r) % n] = any_int64(r);
    memcpy(copy, xs, 3 * (size_t)n * sizeof *xs);
    int rc = sproj_reorder(xs, 3 * sizeof(float), n, order);
    must(rc == SPROJ_OK || (rc == SPROJ_ERR_RANGE && !memcmp(copy, xs, 3 * (size_t)n * sizeof *xs)));
  } else if (what == 9 && s->nlors) {
    /* the order the library holds for events, for any voxel size, or its drop: plain LOR sets are refused; the
     * whole-set projections that follow run on it */
    sproj_lors *lors = pick_lors(s, r);
    float vs[3];
    for (int a = 0; a < 3; a++)
      vs[a] = any_float(r);
    int rc = (u8(r) & 3) ? sproj_lors_hold_order(lors, vs) : sproj_lors_drop_order(lors);
    must(rc == SPROJ_OK || rc == SPROJ_ERR_INVALID || rc == SPROJ_ERR_VOXEL_SIZE);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static int initialised;
  if (!initialised) {
    struct sproj_config cfg;
    sproj_config_init(&cfg);
    cfg.ncpu = 1;
    setenv("STARPU_SILENT", "1", 0);
    if (sproj_init(&cfg) != SPROJ_OK)
      abort();
    initialised = 1;
  }
  struct reader r = {data, size};
  struct state s;
  memset(&s, 0, sizeof s);
  int batch_depth = 0;
  for (int steps = 0; r.n > 0 && steps < 64; steps++) {
    switch (u8(&r) % 8) {
    case 0: op_image(&s, &r); break;
    case 1: op_lors(&s, &r, 0); break;
    case 2: op_lors(&s, &r, 1); break;
    case 3: op_chunks(&s, &r); break;
    case 4: op_proj(&s, &r); break;
    case 5: op_tof(&s, &r); break;
    case 6: op_project(&s, &r); break;
    default: op_misc(&s, &r, &batch_depth); break;
    }
  }
  while (batch_depth-- > 0)
    sproj_batch_end();
  sproj_set_task_lors(0);
  must(sproj_set_merge_calls(1) == SPROJ_OK);
  must(sproj_set_image_layouts(1) == SPROJ_OK);
  /* everything registered comes back: dependants first */
  for (int i = 0; i < s.nproj; i++) {
    must(sproj_proj_unregister(s.proj[i]) == SPROJ_OK);
    free(s.proj_data[i]);
  }
  for (int i = 0; i < s.ntof; i++) {
    must(sproj_tof_unregister(s.tof[i]) == SPROJ_OK);
    free(s.tof_arrays[i][0]);
    free(s.tof_arrays[i][1]);
  }
  for (int i = 0; i < s.nchunks; i++)
    must(sproj_chunks_destroy(s.chunks[i]) == SPROJ_OK);
  for (int i = 0; i < s.nlors; i++) {
    must(sproj_lors_unregister(s.lors[i]) == SPROJ_OK);
    free(s.lor_data[i][0]);
    free(s.lor_data[i][1]);
    free(s.bins[i]);
  }
  for (int i = 0; i < s.nimg; i++) {
    must(sproj_image_unregister(s.img[i]) == SPROJ_OK);
    free(s.img_data[i]);
  }
  return 0;
}
