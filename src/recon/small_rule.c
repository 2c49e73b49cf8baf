/* SPDX-License-Identifier: Apache-2.0 */
/* small_rule.c: STIR's small-value rule in a reconstruction's data terms (sproj_recon_config.small_fraction,
 * em_small_zero): the largest numerators of each chunk and TOF bin, gathered by tasks into a vector that StarPU
 * reduces by keeping the larger value, and read by the ratio and objective tasks. The data's maxima are gathered once,
 * at create; the Hessians' (whose numerators hold the forward projection of the direction) at every call. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "recon_internal.h"

/* A vector of num_chunks x num_values floats with its host buffer, whose reduction keeps the larger value. */
static int small_vector(const char *func, const sproj_recon *r, starpu_data_handle_t *h, float **host)
{
  size_t n = (size_t)r->chunks->num_chunks * (size_t)r->model->num_values;
  if (n > UINT32_MAX)
    return sproj_fail(SPROJ_ERR_OVERFLOW, func, "%zu chunks and TOF bins: too many for the small-value rule", n);
  if (!(*host = calloc(n, sizeof **host)))
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  starpu_vector_data_register(h, STARPU_MAIN_RAM, (uintptr_t)*host, (uint32_t)n, sizeof(float));
  starpu_data_set_reduction_methods(*h, &sproj_vec_max_cl, &sproj_image_zero_cl);
  return SPROJ_OK;
}

/* Zeroes h, then submits one task of kind's maxima per group of g, where that group's ratio task will run: pc holds
 * the forward values of every piece, yc the data. */
static int submit_maxima(const sproj_recon *r, starpu_data_handle_t h, int kind, const struct term_groups *g,
                         const starpu_data_handle_t *pc, const starpu_data_handle_t *yc)
{
  int has_p = kind != SPROJ_RATIO_EM, has_y = kind != SPROJ_RATIO_APPROX_HESSIAN;
  struct starpu_data_descr descr[2 * SPROJ_MAX_PIECES + 1];
  int ret = recon_submit_zero(h);
  for (int t = 0; t < g->num && !ret; t++) {
    struct sproj_small_arg *a = calloc(1, sizeof *a);
    if (!a)
      return SPROJ_ERR_NOMEM;
    *a = (struct sproj_small_arg){g->start[t + 1] - g->start[t], r->model->num_values, kind, has_p, has_y, {0}};
    int nbuf = 0;
    for (int j = g->start[t]; j < g->start[t + 1]; j++) {
      if (has_p)
        descr[nbuf++] = (struct starpu_data_descr){.handle = pc[g->piece[j]], .mode = STARPU_R};
      if (has_y)
        descr[nbuf++] = (struct starpu_data_descr){.handle = yc[g->piece[j]], .mode = STARPU_R};
      a->slot[j - g->start[t]] = g->chunk[j];
    }
    descr[nbuf++] = (struct starpu_data_descr){.handle = h, .mode = STARPU_REDUX};
    unsigned nwords = 0;
    int worker;
    const uint32_t *workers = sproj_workers_holding(sproj_rt.where, r->chunks, g->piece[g->start[t]], &nwords, &worker);
    ret = recon_insert_status(starpu_task_insert(&sproj_em_small_cl, STARPU_CL_ARGS, a, sizeof *a, STARPU_DATA_MODE_ARRAY,
                                                 descr, nbuf, STARPU_EXECUTE_WHERE, (unsigned long long)sproj_rt.where,
                                                 STARPU_SCHED_CTX, sproj_rt.ctx, STARPU_EXECUTE_ON_WORKER, worker,
                                                 STARPU_TASK_WORKERIDS, nwords, workers, 0));
  }
  return ret;
}

int recon_small_create(const char *func, sproj_recon *r)
{
  if (!(r->small_fraction > 0.0f) || !r->data)
    return SPROJ_OK;
  int ret;
  if ((ret = small_vector(func, r, &r->small_data, &r->small_data_host)) ||
      (ret = small_vector(func, r, &r->small_work, &r->small_work_host)))
    return ret;
  const sproj_chunks *ch = r->chunks;
  int *all = malloc((size_t)ch->num_chunks * sizeof *all);
  if (!all)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  for (int c = 0; c < ch->num_chunks; c++)
    all[c] = c;
  struct term_groups g;
  starpu_data_handle_t *yc;
  pthread_mutex_lock(&r->data->vec.lock);
  if (recon_groups_make(ch, all, ch->num_chunks, &g)) {
    ret = SPROJ_ERR_NOMEM;
  } else {
    ret = sproj_vec_children_locked(&r->data->vec, ch, &yc) ? SPROJ_ERR_NOMEM
                                                            : submit_maxima(r, r->small_data, SPROJ_RATIO_EM, &g, NULL, yc);
    recon_groups_free(&g);
  }
  pthread_mutex_unlock(&r->data->vec.lock);
  free(all);
  if (ret == SPROJ_ERR_NOMEM)
    return sproj_fail(ret, func, "out of memory");
  return ret ? sproj_fail(ret, func, "could not submit the small-value rule's tasks") : SPROJ_OK;
}

int recon_small_submit(const sproj_recon *r, int kind, const struct term_groups *g, const starpu_data_handle_t *pc,
                       const starpu_data_handle_t *yc, starpu_data_handle_t *small)
{
  *small = NULL;
  if (!r->small_data)
    return SPROJ_OK;
  if (kind == SPROJ_RATIO_EM) {
    *small = r->small_data;
    return SPROJ_OK;
  }
  *small = r->small_work;
  return submit_maxima(r, r->small_work, kind, g, pc, yc);
}

void recon_small_free(sproj_recon *r)
{
  starpu_data_handle_t h[2] = {r->small_data, r->small_work};
  for (int i = 0; i < 2; i++)
    if (h[i])
      starpu_data_unregister(h[i]);
  free(r->small_data_host);
  free(r->small_work_host);
  r->small_data = r->small_work = NULL;
  r->small_data_host = r->small_work_host = NULL;
}
