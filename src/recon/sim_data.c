/* SPDX-License-Identifier: Apache-2.0 */
/* sim_data.c: data simulated from a model as tasks: expected values, drawn counts, and listmode events placed from
 * drawn counts with their TOF bins. */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "recon_internal.h"

/* Simulation tasks over every piece of chunking ch, grouped by the rule of projection tasks and run where each group's
 * first LORs are (as the projections that wrote the values): with partials, sum tasks reading the data (each adding
 * its partial sums there), else draw tasks writing it (and the per-LOR sums into sums when given). */
static int submit_sim(const char *func, const sproj_model *md, sproj_proj *data, const sproj_chunks *ch,
                      const struct sproj_sim_arg *proto, sproj_proj *sums, struct nll_sums *partials)
{
  starpu_data_handle_t *dc, *mc = NULL, *ac = NULL, *sc = NULL;
  if ((md->mult && sproj_vec_children(md->mult, ch, &mc)) || (md->add && sproj_vec_children(md->add, ch, &ac)))
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  struct sproj_sim_arg arg = *proto;
  arg.npieces = 0;
  arg.has_m = mc != NULL;
  arg.has_a = ac != NULL;
  arg.has_sums = sums != NULL && !partials;
  int bpp = sproj_sim_buffers_per_piece(&arg), ret = SPROJ_OK, first = 0;
  struct starpu_data_descr *descr = malloc((size_t)(bpp * SPROJ_MAX_PIECES + 1) * sizeof *descr);
  if (!descr)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int64_t lors = 0, target = sproj_task_target_spread(ch->lors->num_lors, sproj_chunking_spread(ch, sproj_rt.where));
  pthread_mutex_lock(&data->vec.lock);
  if (arg.has_sums)
    pthread_mutex_lock(&sums->vec.lock);
  if (sproj_vec_children_locked(&data->vec, ch, &dc) || (arg.has_sums && sproj_vec_children_locked(&sums->vec, ch, &sc)))
    ret = SPROJ_ERR_NOMEM;
  for (unsigned q = 0; q <= ch->npieces && !ret; q++) {
    /* a task is submitted when full, and after the last piece */
    if (arg.npieces > 0 && (q == ch->npieces || sproj_task_full(arg.npieces, lors, ch->piece_len[q], target) ||
                            sproj_piece_home(ch, sproj_rt.where, (int)q) != sproj_piece_home(ch, sproj_rt.where, first))) {
      struct sproj_sim_arg *a = malloc(sizeof *a);
      if (!a) {
        ret = SPROJ_ERR_NOMEM;
        break;
      }
      *a = arg;
      int nbuf = bpp * arg.npieces;
      if (partials) {
        if ((ret = recon_nll_sums_add(partials, &descr[nbuf].handle))) {
          free(a);
          break;
        }
        descr[nbuf++].mode = STARPU_W;
      }
      unsigned nwords = 0;
      int worker;
      const uint32_t *workers = sproj_workers_holding(sproj_rt.where, ch, first, &nwords, &worker);
      ret = recon_insert_status(starpu_task_insert(partials ? &sproj_sim_sum_cl : &sproj_sim_draw_cl, STARPU_CL_ARGS, a,
                                             sizeof *a, STARPU_DATA_MODE_ARRAY, descr, nbuf, STARPU_EXECUTE_WHERE,
                                             (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx,
                                             STARPU_EXECUTE_ON_WORKER, worker, STARPU_TASK_WORKERIDS, nwords, workers,
                                             0));
      arg.npieces = 0;
    }
    if (q == ch->npieces || ret)
      break;
    if (arg.npieces == 0) {
      first = (int)q;
      lors = 0;
    }
    struct starpu_data_descr *d = descr + bpp * arg.npieces;
    int k = 0;
    d[k++] = (struct starpu_data_descr){.handle = dc[q], .mode = partials ? STARPU_R : STARPU_RW};
    if (mc)
      d[k++] = (struct starpu_data_descr){.handle = mc[q], .mode = STARPU_R};
    if (ac)
      d[k++] = (struct starpu_data_descr){.handle = ac[q], .mode = STARPU_R};
    if (arg.has_sums)
      d[k++] = (struct starpu_data_descr){.handle = sc[q], .mode = STARPU_W};
    arg.first_value[arg.npieces++] = ch->piece_first[q] * (int64_t)md->num_values;
    lors += ch->piece_len[q];
  }
  if (arg.has_sums)
    pthread_mutex_unlock(&sums->vec.lock);
  pthread_mutex_unlock(&data->vec.lock);
  free(descr);
  if (ret == SPROJ_ERR_NOMEM || ret == SPROJ_ERR_STARPU)
    return sproj_fail(ret, func, "could not submit the simulation tasks");
  return ret;
}

static int check_sim_data(const char *func, const sproj_model *md, const sproj_proj *data, const sproj_chunks *ch)
{
  if (md->lm)
    return sproj_fail(SPROJ_ERR_INVALID, func, "the model is a listmode model: data are simulated as sinograms");
  if (data->vec.lors != md->lors || ch->lors != md->lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the data and the chunking must belong to the model's LOR set");
  if (data->num_bins != md->num_values)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the data hold %d values per LOR, the model %d", data->num_bins,
                      md->num_values);
  return SPROJ_OK;
}

int sproj_model_expected(const sproj_model *model, sproj_image *img, sproj_proj *out, const sproj_chunks *chunks,
                         double *trues)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!model || !img || !out || !chunks)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "model, img, out and chunks must not be NULL");
  if ((ret = check_sim_data(__func__, model, out, chunks)))
    return ret;
  struct sproj_gauss_arg gauss;
  int bad_axis = sproj_gauss_arg_init(&gauss, img->geom.n, img->geom.voxel_size, model->fwhm);
  if (bad_axis >= 0)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "a FWHM of %g along axis %d spans more than %d voxels each side at 3 sigma",
                      model->fwhm[bad_axis], bad_axis, SPROJ_GAUSS_MAX_RADIUS);
  const struct sproj_geom *g = &img->geom;
  if ((ret = recon_check_handle_values(__func__, "the image", "voxel", img->handle,
                                       (int64_t)g->n[0] * g->n[1] * g->n[2], 1)))
    return ret;
  int blur = gauss.radius[0] > 0 || gauss.radius[1] > 0 || gauss.radius[2] > 0;
  sproj_image *src = img, *blurred = NULL;
  if (blur) {
    if ((ret = recon_temp_image(__func__, &blurred, img)))
      return ret;
    if ((ret = sproj_image_blur(blurred, img, model->fwhm))) {
      sproj_image_drop(blurred);
      return ret;
    }
    src = blurred;
  }
  int *list = malloc((size_t)chunks->num_chunks * sizeof *list);
  if (!list) {
    sproj_image_drop(blurred);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  for (int c = 0; c < chunks->num_chunks; c++)
    list[c] = c;
  ret = recon_model_project(model, 0, src, out, chunks, list, chunks->num_chunks);
  free(list);
  sproj_image_drop(blurred); /* after the projections, which it waits for */
  if (ret)
    return ret;
  out->model_made = 1;
  if (!trues)
    return SPROJ_OK;
  struct nll_sums partials = {0};
  struct sproj_sim_arg proto = {.num_bins = model->num_values, .a_per_lor = model->add_per_lor,
                                .a_flat = model->add_flat};
  ret = submit_sim(__func__, model, out, chunks, &proto, NULL, &partials);
  double sum = recon_nll_sums_finish(&partials); /* waits for the tasks submitted */
  if (ret)
    return ret;
  *trues = sum;
  return SPROJ_OK;
}

int sproj_model_draw(const sproj_model *model, sproj_proj *data, const sproj_chunks *chunks, float scale,
                     uint64_t seed, int noise, sproj_proj *lor_sums)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!model || !data || !chunks)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "model, data and chunks must not be NULL");
  if ((ret = check_sim_data(__func__, model, data, chunks)))
    return ret;
  if (!isfinite(scale))
    return SPROJ_FAIL(SPROJ_ERR_NONFINITE, "scale is not finite");
  if (scale < 0.0f)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "scale = %g must be >= 0", scale);
  if (lor_sums && (lor_sums->vec.lors != model->lors || lor_sums->num_bins != 1))
    return SPROJ_FAIL(SPROJ_ERR_MISMATCH, "lor_sums must hold one value per LOR of the model's LOR set");
  if (lor_sums == data)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "lor_sums must not be the data");
  struct sproj_sim_arg proto = {.num_bins = model->num_values, .a_per_lor = model->add_per_lor,
                                .a_flat = model->add_flat, .noise = noise != 0,
                                .scale = scale, .seed = seed};
  if ((ret = submit_sim(__func__, model, data, chunks, &proto, lor_sums, NULL)))
    return ret;
  if (lor_sums)
    lor_sums->model_made = data->model_made;
  return SPROJ_OK;
}

struct piece_at {
  int64_t first;
  unsigned q;
};

static int cmp_piece_first(const void *a, const void *b)
{
  int64_t x = ((const struct piece_at *)a)->first, y = ((const struct piece_at *)b)->first;
  return (x > y) - (x < y);
}

/* The TOF bins of the events of the drawn counts in data, emitted by tasks where the counts are: per piece with
 * events, its part of bins (places piece_event[q] .. piece_end[q]) as a vector of its own, with off (per LOR, its
 * first event's place in its piece) as a read-only per-LOR vector. Waits for them and brings the bins home. */
static int emit_bins(const char *func, const sproj_model *md, sproj_proj *data, const sproj_chunks *ch,
                     const int32_t *off, const int64_t *piece_event, const int64_t *piece_end, int16_t *bins)
{
  struct sproj_vec *ov;
  if (sproj_vec_register_ro(&ov, md->lors, off, sizeof(int32_t), 1))
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  starpu_data_handle_t *oc, *dc, *out = calloc(ch->npieces, sizeof *out);
  int ret = out ? SPROJ_OK : SPROJ_ERR_NOMEM;
  if (!ret && sproj_vec_children(ov, ch, &oc))
    ret = SPROJ_ERR_NOMEM;
  pthread_mutex_lock(&data->vec.lock);
  if (!ret && sproj_vec_children_locked(&data->vec, ch, &dc))
    ret = SPROJ_ERR_NOMEM;
  for (unsigned q = 0; q < ch->npieces && !ret; q++) {
    int64_t n = piece_end[q] - piece_event[q];
    if (n == 0)
      continue;
    starpu_vector_data_register(&out[q], STARPU_MAIN_RAM, (uintptr_t)(bins + piece_event[q]), (uint32_t)n,
                                sizeof(int16_t));
    struct sproj_emit_arg *a = malloc(sizeof *a);
    if (!a) {
      ret = SPROJ_ERR_NOMEM;
      break;
    }
    *a = (struct sproj_emit_arg){1, md->num_values};
    unsigned nwords = 0;
    int worker;
    const uint32_t *workers = sproj_workers_holding(sproj_rt.where, ch, (int)q, &nwords, &worker);
    ret = recon_insert_status(starpu_task_insert(&sproj_sim_emit_cl, STARPU_CL_ARGS, a, sizeof *a, STARPU_R, dc[q], STARPU_R,
                                           oc[q], STARPU_W, out[q], STARPU_EXECUTE_WHERE,
                                           (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx,
                                           STARPU_EXECUTE_ON_WORKER, worker, STARPU_TASK_WORKERIDS, nwords, workers, 0));
  }
  pthread_mutex_unlock(&data->vec.lock);
  for (unsigned q = 0; out && q < ch->npieces; q++)
    if (out[q])
      starpu_data_unregister(out[q]); /* waits for its task and brings the bins home */
  free(out);
  sproj_vec_free(ov, 1);
  if (ret == SPROJ_ERR_NOMEM || ret == SPROJ_ERR_STARPU)
    return sproj_fail(ret, func, "could not submit the event tasks");
  return ret;
}

/* Placing the events of drawn counts: blocks of up to PLACE_BLOCK LORs, none across two pieces, in LOR order. */
enum { PLACE_BLOCK = 1 << 18 };
struct place_block {
  unsigned q;            /* its piece */
  int bad;               /* a LOR whose count is not a number of events (negative, not finite, 2^31 or more) */
  int64_t first, end;    /* its LORs */
  int64_t count;         /* its events */
  int64_t start;         /* its first event's place in its piece */
};
struct placing {
  const sproj_chunks *ch;
  const float *sums;     /* per LOR, its events */
  int32_t *off;          /* per LOR, its first event's place in its piece: written over sums (the same memory, read
                          * and written with memcpy), LOR by LOR once its count has been read */
  struct place_block *blocks;
  int64_t nblocks;
  const int64_t *piece_event; /* per piece, its first event's place */
  int32_t *lor;          /* per event, its LOR */
  int16_t *bins;         /* per event, its TOF bin (faulted in here, written by tasks), or NULL */
};

/* Whether a drawn count is a number of events a piece can place (not negative, finite, below 2^31). */
static int placeable(float c)
{
  return c >= 0.0f && c < 0x1.0p31f;
}

static int placing_blocks(const char *func, struct placing *pl, const unsigned *order)
{
  const sproj_chunks *ch = pl->ch;
  int64_t n = 0;
  for (unsigned k = 0; k < ch->npieces; k++)
    n += ((int64_t)ch->piece_len[order[k]] + PLACE_BLOCK - 1) / PLACE_BLOCK;
  pl->blocks = malloc((size_t)(n > 0 ? n : 1) * sizeof *pl->blocks);
  if (!pl->blocks)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  pl->nblocks = 0;
  for (unsigned k = 0; k < ch->npieces; k++) {
    unsigned q = order[k];
    int64_t end = ch->piece_first[q] + (int64_t)ch->piece_len[q];
    for (int64_t i = ch->piece_first[q]; i < end; i += PLACE_BLOCK)
      pl->blocks[pl->nblocks++] = (struct place_block){q, 0, i, i + PLACE_BLOCK < end ? i + PLACE_BLOCK : end, 0, 0};
  }
  return SPROJ_OK;
}

static void place_count(void *ctx, int64_t b)
{
  struct placing *pl = ctx;
  struct place_block *k = &pl->blocks[b];
  int64_t n = 0;
  for (int64_t i = k->first; i < k->end; i++) {
    float c = pl->sums[i];
    if (!placeable(c)) {
      k->bad = 1;
      return;
    }
    n += (int64_t)c;
  }
  k->count = n;
}

static void place_write(void *ctx, int64_t b)
{
  struct placing *pl = ctx;
  const struct place_block *k = &pl->blocks[b];
  const int64_t base = pl->piece_event[k->q];
  int64_t n = k->start;
  for (int64_t i = k->first; i < k->end; i++) {
    float c;
    int32_t at = (int32_t)n;
    memcpy(&c, pl->sums + i, sizeof c);
    memcpy(pl->off + i, &at, sizeof at);
    for (int64_t e = base + n, end = e + (int64_t)c; e < end; e++)
      pl->lor[e] = (int32_t)i;
    n += (int64_t)c;
  }
  /* the bins' pages are faulted in here, on every core: the tasks' copies home would take them one at a time */
  if (pl->bins && k->count > 0)
    memset(pl->bins + base + k->start, 0, (size_t)k->count * sizeof *pl->bins);
}

/* The message for the first LOR, in LOR order, whose count cannot be placed (the rare way out: one thread). */
static int first_misplaced(const char *func, const sproj_chunks *ch, const unsigned *order, const float *sums)
{
  for (unsigned k = 0; k < ch->npieces; k++) {
    unsigned q = order[k];
    int64_t n = 0;
    for (int64_t i = ch->piece_first[q]; i < ch->piece_first[q] + (int64_t)ch->piece_len[q]; i++) {
      float c = sums[i];
      if (!placeable(c) || n + (int64_t)c > INT32_MAX)
        return sproj_fail(SPROJ_ERR_OVERFLOW, func, "LOR %lld: %g events (a piece holds at most 2^31-1)",
                          (long long)i, c);
      n += (int64_t)c;
    }
  }
  return sproj_fail(SPROJ_ERR_OVERFLOW, func, "more events than a piece holds (2^31-1)");
}

/* x86-64's huge page, and the size from which an array is aligned to them */
#define HUGE_PAGE_BYTES ((size_t)2 << 20)
#define HUGE_ALLOC_MIN_BYTES ((size_t)4 << 20)

/* Memory for many events: huge pages where the system gives them on request (fewer faults), freed by free(). */
static void *huge_alloc(size_t bytes)
{
  void *p = NULL;
  if (bytes < HUGE_ALLOC_MIN_BYTES)
    return malloc(bytes);
  if (posix_memalign(&p, HUGE_PAGE_BYTES, bytes) != 0)
    return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

int sproj_model_draw_events(const sproj_model *model, sproj_proj *data, const sproj_chunks *chunks, float scale,
                            uint64_t seed, int32_t **lor, int16_t **tof_bin, int64_t *num_events)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!model || !data || !chunks || !lor || !num_events)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "model, data, chunks, lor and num_events must not be NULL");
  if ((ret = check_sim_data(__func__, model, data, chunks)))
    return ret;
  const int64_t nl = model->lors->num_lors;
  if (nl > INT32_MAX)
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "%lld LORs: event LOR numbers are 32-bit", (long long)nl);
  const sproj_chunks *ch = chunks;
  /* the pieces in LOR order, without overlaps: the events come out in the order of their values */
  unsigned *order = malloc((size_t)ch->npieces * sizeof *order);
  /* one per-LOR array: the counts summed over TOF bins, then each LOR's first place (0.6 GB at the benchmark's scale) */
  _Static_assert(sizeof(float) == sizeof(int32_t), "a LOR's place takes its count's place");
  float *sums = malloc((size_t)nl * sizeof *sums);
  int32_t *off = (int32_t *)(void *)sums;
  int64_t *piece_event = malloc(((size_t)ch->npieces + 1) * sizeof *piece_event);
  int32_t *lors_out = NULL;
  int16_t *bins = NULL;
  sproj_proj *sp = NULL;
  struct placing pl = {.ch = chunks, .off = off};
  if (!order || !sums || !piece_event) {
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
    goto done;
  }
  struct piece_at *at = malloc((size_t)ch->npieces * sizeof *at);
  if (!at) {
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (unsigned q = 0; q < ch->npieces; q++)
    at[q] = (struct piece_at){ch->piece_first[q], q};
  qsort(at, ch->npieces, sizeof *at, cmp_piece_first);
  for (unsigned k = 0; k < ch->npieces; k++)
    order[k] = at[k].q;
  free(at);
  for (unsigned k = 1; k < ch->npieces; k++)
    if (ch->piece_first[order[k]] < ch->piece_first[order[k - 1]] + (int64_t)ch->piece_len[order[k - 1]]) {
      ret = SPROJ_FAIL(SPROJ_ERR_INVALID, "the chunking's chunks overlap: a LOR would be drawn twice");
      goto done;
    }
  sproj_progress_report("drawing the counts", 0.0);
  if ((ret = sproj_proj_register(&sp, sums, model->lors)) ||
      (ret = sproj_model_draw(model, data, chunks, scale, seed, 1, sp)) ||
      (ret = sproj_proj_sync(sp, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ)))
    goto done;
  /* every event's place: pieces in LOR order, LORs in order within them; counted and written by blocks of LORs on
   * every core (one thread took 4 s for the benchmark's 240 M events), the same places whatever the threads */
  pl.sums = sums;
  if ((ret = placing_blocks(__func__, &pl, order)))
    goto done;
  sproj_run_blocks("counting the events", 0, pl.nblocks, place_count, &pl);
  int64_t total = 0;
  int64_t b = 0;
  for (unsigned k = 0; k < ch->npieces; k++) {
    unsigned q = order[k];
    piece_event[q] = total;
    for (int64_t in_piece = 0; b < pl.nblocks && pl.blocks[b].q == q; b++) {
      if (pl.blocks[b].bad || in_piece + pl.blocks[b].count > INT32_MAX) {
        ret = first_misplaced(__func__, ch, order, sums);
        goto done;
      }
      pl.blocks[b].start = in_piece;
      in_piece += pl.blocks[b].count;
      total += pl.blocks[b].count;
    }
  }
  /* where each piece's events end */
  int64_t *ends = malloc((size_t)ch->npieces * sizeof *ends);
  if (!ends) {
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (unsigned k = 0; k < ch->npieces; k++) {
    unsigned q = order[k];
    ends[q] = k + 1 < ch->npieces ? piece_event[order[k + 1]] : total;
  }
  lors_out = huge_alloc((size_t)(total > 0 ? total : 1) * sizeof *lors_out);
  if (tof_bin && model->num_values > 1)
    bins = huge_alloc((size_t)(total > 0 ? total : 1) * sizeof *bins);
  if (!lors_out || (tof_bin && model->num_values > 1 && !bins)) {
    free(ends);
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for %lld events", (long long)total);
    goto done;
  }
  pl.piece_event = piece_event;
  pl.lor = lors_out;
  pl.bins = bins;
  /* the places are written over the counts: StarPU lets go of them first (its host copy is the valid one) */
  sproj_proj_unregister(sp);
  sp = NULL;
  sproj_run_blocks("placing the events", 0, pl.nblocks, place_write, &pl);
  if (bins) {
    sproj_progress_report("the events' TOF bins", 0.0);
    ret = emit_bins(__func__, model, data, ch, off, piece_event, ends, bins);
    sproj_progress_report("the events' TOF bins", 1.0);
  }
  free(ends);
  if (ret)
    goto done;
  *lor = lors_out;
  if (tof_bin)
    *tof_bin = bins;
  *num_events = total;
  lors_out = NULL;
  bins = NULL;
done:
  if (sp)
    sproj_proj_unregister(sp);
  free(pl.blocks);
  free(order);
  free(sums); /* and off, which it holds */
  free(piece_event);
  free(lors_out);
  free(bins);
  return ret;
}
