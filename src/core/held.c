/* SPDX-License-Identifier: Apache-2.0 */
/* held.c: an order of listmode events held by the library (sproj_lors_hold_order). The events are copied in
 * sproj_lors_order's order into a LOR set of the library's; a whole-set listmode projection of the caller's set runs
 * on that copy, and gather tasks bring its values into the caller's order (forward) or the caller's values into its
 * order (back), so that the caller's arrays, values and chunkings stay as they are. Per-event TOF sigma and offset
 * are copied in the order at the first request with their parameter set. */
#include "config.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "starproj_parallelproj.h"
#include "submit.h"
#include "values_gather.h"

/* The per-event TOF arrays of one TOF parameter set (sproj_tof's id), copied in the order. */
struct held_tof {
  uint64_t id;
  float *data[2];              /* sigma, centre offset (NULL: the parameter set's scalar) */
  struct sproj_vec *vec[2];    /* the same as vectors of the ordered set */
};

struct sproj_held {
  pthread_mutex_t lock;        /* one request at a time: each one's tasks, submitted together, use `values` */
  struct held_tof *tofs;       /* the per-event TOF arrays requests came with, in the order */
  int ntofs;
  sproj_lors *set;             /* the events in the order */
  sproj_proj *values;          /* the projections of `set`, in the order (the library's, never brought home) */
  float *xs, *xe;              /* the arrays of `set` */
  int16_t *bins;
  uint32_t *order, *place;     /* order[j]: the caller's event at place j; place[i]: the place of the caller's event i */
  struct sproj_vec *order_vec; /* order, a vector of `set` */
  struct sproj_vec *place_vec; /* place, a vector of the caller's set */
};

/* Requests served in the held order since the library was loaded (for the tests). */
static atomic_llong served_count;

long long sproj_held_served(void)
{
  return atomic_load(&served_count);
}

static void held_tof_free(struct held_tof *t)
{
  for (int k = 0; k < 2; k++) {
    sproj_vec_free(t->vec[k], 1);
    free(t->data[k]);
  }
}

static void held_free(struct sproj_held *h)
{
  for (int t = 0; t < h->ntofs; t++)
    held_tof_free(&h->tofs[t]);
  free(h->tofs);
  if (h->values)
    sproj_proj_discard(h->values);
  sproj_vec_free(h->order_vec, 1);
  if (h->set)
    sproj_lors_unregister(h->set);
  sproj_vec_free(h->place_vec, 1);
  free(h->xs);
  free(h->xe);
  free(h->bins);
  free(h->order);
  free(h->place);
  pthread_mutex_destroy(&h->lock);
  free(h);
}

/* The ordered copies, made on every core: place j of the copies takes the caller's event order[j]. */
struct copy_work {
  const float *xs, *xe;
  const int16_t *bins;
  const int64_t *order;
  struct sproj_held *h;
  int64_t n;
};
#define COPY_BLOCK ((int64_t)1 << 20)

static void copy_block(void *ctx, int64_t block)
{
  const struct copy_work *w = ctx;
  struct sproj_held *h = w->h;
  int64_t end = (block + 1) * COPY_BLOCK < w->n ? (block + 1) * COPY_BLOCK : w->n;
  for (int64_t j = block * COPY_BLOCK; j < end; j++) {
    int64_t i = w->order[j];
    memcpy(h->xs + 3 * j, w->xs + 3 * i, 3 * sizeof(float));
    memcpy(h->xe + 3 * j, w->xe + 3 * i, 3 * sizeof(float));
    h->bins[j] = w->bins[i];
    h->order[j] = (uint32_t)i;
    h->place[i] = (uint32_t)j;
  }
}

/* Orders the events and makes the copies from the caller's arrays in main memory. */
static int held_fill(const char *func, struct sproj_held *h, const float *xs, const float *xe, const int16_t *bins,
                     int64_t n, const float voxel_size[3])
{
  int64_t *order = malloc((size_t)n * sizeof *order);
  if (!order)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory (%lld events)", (long long)n);
  int ret = sproj_lors_order(xs, xe, n, voxel_size, order);
  if (ret) {
    free(order);
    return sproj_fail_as(ret, func);
  }
  struct copy_work w = {xs, xe, bins, order, h, n};
  sproj_run_blocks("ordered copy of events", 0, (n + COPY_BLOCK - 1) / COPY_BLOCK, copy_block, &w);
  free(order);
  return SPROJ_OK;
}

int sproj_lors_hold_order(sproj_lors *events, const float voxel_size[3])
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!events || !voxel_size)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "events and voxel_size must not be NULL");
  if (!events->bins)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the LOR set has no TOF bins (sproj_lors_register_events)");
  if ((ret = sproj_check_voxel_size(__func__, voxel_size)))
    return ret; /* before anything is allocated */
  pthread_mutex_lock(&events->lock);
  int held = events->held != NULL;
  pthread_mutex_unlock(&events->lock);
  if (held)
    return SPROJ_OK;

  int64_t n = events->num_lors;
  struct sproj_held *h = calloc(1, sizeof *h);
  if (!h)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  pthread_mutex_init(&h->lock, NULL);
  h->xs = malloc((size_t)n * 3 * sizeof(float));
  h->xe = malloc((size_t)n * 3 * sizeof(float));
  h->bins = malloc((size_t)n * sizeof(int16_t));
  h->order = malloc((size_t)n * sizeof(uint32_t));
  h->place = malloc((size_t)n * sizeof(uint32_t));
  if (!h->xs || !h->xe || !h->bins || !h->order || !h->place) {
    held_free(h);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory (%lld events)", (long long)n);
  }
  /* the caller's events where the host reads them (a GPU's are copied home) */
  starpu_data_handle_t in[3] = {events->xs, events->xe, events->bins->handle};
  int acquired = 0;
  for (; acquired < 3; acquired++)
    if (starpu_data_acquire_on_node(in[acquired], STARPU_MAIN_RAM, STARPU_R) != 0)
      break;
  if (acquired < 3)
    ret = SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_data_acquire failed");
  else
    ret = held_fill(__func__, h, (const float *)starpu_vector_get_local_ptr(in[0]),
                    (const float *)starpu_vector_get_local_ptr(in[1]),
                    (const int16_t *)starpu_vector_get_local_ptr(in[2]), n, voxel_size);
  while (acquired > 0)
    starpu_data_release_on_node(in[--acquired], STARPU_MAIN_RAM);
  if (ret) {
    held_free(h);
    return ret;
  }
  /* the copy's bins are the caller's, checked already: in either convention they pass again */
  int convention = events->min_bin < 0 ? SPROJ_TOF_CONVENTION_PARALLELPROJ : SPROJ_TOF_CONVENTION_STARPROJ;
  if ((ret = sproj_lors_register_events_convention(&h->set, h->xs, h->xe, h->bins, n, convention)) ||
      (ret = sproj_proj_create(&h->values, h->set, 1)) ||
      (ret = sproj_vec_register_ro(&h->order_vec, h->set, h->order, sizeof(uint32_t), 1)) ||
      (ret = sproj_vec_register_ro(&h->place_vec, events, h->place, sizeof(uint32_t), 1))) {
    char why[512]; /* the message before freeing, which may record another */
    snprintf(why, sizeof why, "%s", sproj_last_error());
    held_free(h);
    return ret == SPROJ_ERR_NOMEM ? SPROJ_FAIL(ret, "out of memory") : SPROJ_FAIL(ret, "%s", why);
  }
  pthread_mutex_lock(&events->lock);
  if (events->held) {
    /* another thread held an order meanwhile */
    pthread_mutex_unlock(&events->lock);
    held_free(h);
    return SPROJ_OK;
  }
  events->held = h;
  events->held_free = held_free;
  pthread_mutex_unlock(&events->lock);
  return SPROJ_OK;
}

/* Frees the order held for events, if any, after the tasks that use it. */
static void held_drop(sproj_lors *events)
{
  pthread_mutex_lock(&events->lock);
  struct sproj_held *h = events->held;
  events->held = NULL;
  pthread_mutex_unlock(&events->lock);
  if (h)
    held_free(h);
}

int sproj_lors_drop_order(sproj_lors *events)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!events)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "events must not be NULL");
  held_drop(events);
  return SPROJ_OK;
}

/* Whether the whole-set chunking ch cuts its set into equal pieces in order, the first *extra of them one LOR
 * longer (*base LORs each otherwise), as the gather reads them. */
static int equal_pieces(const sproj_chunks *ch, uint64_t *base, uint64_t *extra)
{
  uint64_t n = (uint64_t)ch->lors->num_lors, np = ch->npieces;
  if (np == 0)
    return 0;
  *base = n / np;
  *extra = n % np;
  for (uint64_t q = 0; q < np; q++)
    if ((uint64_t)ch->piece_first[q] != q * *base + (q < *extra ? q : *extra) ||
        ch->piece_len[q] != *base + (q < *extra ? 1u : 0u))
      return 0;
  return 1;
}

/* Gather tasks, one per piece of `out_ch`: out's piece takes, for each of its values, the value at its position
 * (pos, a vector of out's set) among the pieces of `src` (src_ch: equal pieces base, extra). */
static int submit_gathers(const char *func, const sproj_chunks *out_ch, starpu_data_handle_t *out,
                          struct sproj_vec *pos, const sproj_chunks *src_ch, starpu_data_handle_t *src,
                          uint64_t base, uint64_t extra)
{
  starpu_data_handle_t *pc;
  if (sproj_vec_children(pos, out_ch, &pc))
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int nsrc = (int)src_ch->npieces;
  struct starpu_data_descr *d = malloc((size_t)(2 + nsrc) * sizeof *d);
  if (!d)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  for (int q = 0; q < nsrc; q++)
    d[2 + q] = (struct starpu_data_descr){.handle = src[q], .mode = STARPU_R};
  int ret = SPROJ_OK;
  for (unsigned p = 0; p < out_ch->npieces && !ret; p++) {
    struct sproj_gather_arg *arg = malloc(sizeof *arg);
    if (!arg) {
      ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
      break;
    }
    *arg = (struct sproj_gather_arg){.base = base, .extra = extra, .nsources = nsrc};
    d[0] = (struct starpu_data_descr){.handle = out[p], .mode = STARPU_W};
    d[1] = (struct starpu_data_descr){.handle = pc[p], .mode = STARPU_R};
    if (starpu_task_insert(&sproj_values_gather_cl, STARPU_CL_ARGS, arg, sizeof *arg, STARPU_DATA_MODE_ARRAY, d,
                           2 + nsrc, STARPU_EXECUTE_WHERE, (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX,
                           sproj_rt.ctx, 0) != 0)
      ret = sproj_fail(SPROJ_ERR_STARPU, func, "StarPU refused a task");
  }
  free(d);
  return ret;
}

/* The ordered copies of the per-event arrays of tof (sigma and / or offset of the caller's events) in *out, made at
 * the first request with that parameter set (h->lock held). The set's id, not its address, names it: a parameter set
 * registered after another was freed may take its address. */
static int held_tof_of(const char *func, struct sproj_held *h, const sproj_tof *tof, struct held_tof **out)
{
  for (int t = 0; t < h->ntofs; t++)
    if (h->tofs[t].id == tof->id) {
      *out = &h->tofs[t];
      return SPROJ_OK;
    }
  struct held_tof *grown = realloc(h->tofs, ((size_t)h->ntofs + 1) * sizeof *grown);
  if (!grown)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  h->tofs = grown;
  struct held_tof *t = &h->tofs[h->ntofs];
  *t = (struct held_tof){.id = tof->id};
  const struct sproj_vec *src[2] = {tof->sigma, tof->center_offset};
  int64_t n = h->set->num_lors;
  int ret = SPROJ_OK;
  for (int k = 0; k < 2 && !ret; k++) {
    if (!src[k])
      continue;
    if (!(t->data[k] = malloc((size_t)n * sizeof(float)))) {
      ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
      break;
    }
    /* the caller's array where the host reads it (a GPU's is copied home), read in the order */
    if (starpu_data_acquire_on_node(src[k]->handle, STARPU_MAIN_RAM, STARPU_R) != 0) {
      ret = sproj_fail(SPROJ_ERR_STARPU, func, "starpu_data_acquire failed");
      break;
    }
    const float *v = (const float *)starpu_vector_get_local_ptr(src[k]->handle);
    for (int64_t j = 0; j < n; j++)
      t->data[k][j] = v[h->order[j]];
    starpu_data_release_on_node(src[k]->handle, STARPU_MAIN_RAM);
    if (sproj_vec_register_ro(&t->vec[k], h->set, t->data[k], sizeof(float), 1))
      ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  if (ret) {
    held_tof_free(t);
    return ret;
  }
  h->ntofs++;
  *out = t;
  return SPROJ_OK;
}

int sproj_held_request(const char *func, const struct sproj_request *rq, sproj_image *img, sproj_proj *proj,
                       int *served)
{
  sproj_lors *events = proj->vec.lors;
  *served = 0;
  pthread_mutex_lock(&events->lock);
  struct sproj_held *h = events->held;
  pthread_mutex_unlock(&events->lock);
  if (!h || rq->kind != SPROJ_KIND_TOF_LM || !rq->tof)
    return SPROJ_OK;
  const sproj_chunks *ce, *co;
  int ret;
  if ((ret = sproj_resolve_chunks(func, events, NULL, &ce)) || (ret = sproj_resolve_chunks(func, h->set, NULL, &co)))
    return ret;
  uint64_t base_e, extra_e, base_o, extra_o;
  const sproj_chunks *src_ch = rq->back ? ce : co;
  if (!equal_pieces(ce, &base_e, &extra_e) || !equal_pieces(co, &base_o, &extra_o) ||
      src_ch->npieces > SPROJ_GATHER_MAX_SOURCES)
    return SPROJ_OK;
  /* calls held back in a batch or merged come first */
  if ((ret = sproj_flush_pending()))
    return ret;
  int zero = 0;
  pthread_mutex_lock(&h->lock);
  /* per-event TOF parameters (in the caller's order) go with the ordered set as copies in its order: the request's
   * parameter set, its arrays swapped for those, for the submission alone */
  struct sproj_request orq = *rq;
  struct sproj_tof otof;
  if (rq->tof->lors) {
    struct held_tof *t = NULL;
    if ((ret = held_tof_of(func, h, rq->tof, &t))) {
      pthread_mutex_unlock(&h->lock);
      return ret;
    }
    otof = *rq->tof;
    otof.lors = h->set;
    otof.sigma = t->vec[0];
    otof.center_offset = t->vec[1];
    orq.tof = &otof;
  }
  rq = &orq;
  *served = 1;
  atomic_fetch_add(&served_count, 1);
  starpu_data_handle_t *caller, *ordered;
  if (!rq->back) {
    /* the ordered events projected, then each piece of the caller's values gathered from them */
    ret = sproj_submit_tasks(func, rq, img, h->values, NULL, &zero, 1);
    if (!ret && sproj_vec_children(&h->values->vec, co, &ordered))
      ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    if (!ret) {
      pthread_mutex_lock(&proj->vec.lock);
      if (sproj_vec_children_locked(&proj->vec, ce, &caller))
        ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
      else
        ret = submit_gathers(func, ce, caller, h->place_vec, co, ordered, base_o, extra_o);
      pthread_mutex_unlock(&proj->vec.lock);
    }
  } else {
    /* the caller's values gathered into the order, then the ordered events back projected */
    pthread_mutex_lock(&proj->vec.lock);
    if (sproj_vec_children_locked(&proj->vec, ce, &caller))
      ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    if (!ret) {
      pthread_mutex_lock(&h->values->vec.lock);
      if (sproj_vec_children_locked(&h->values->vec, co, &ordered))
        ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
      else
        ret = submit_gathers(func, co, ordered, h->order_vec, ce, caller, base_e, extra_e);
      pthread_mutex_unlock(&h->values->vec.lock);
    }
    pthread_mutex_unlock(&proj->vec.lock);
    if (!ret)
      ret = sproj_submit_tasks(func, rq, img, h->values, NULL, &zero, 1);
  }
  pthread_mutex_unlock(&h->lock);
  return ret;
}
