/* SPDX-License-Identifier: Apache-2.0 */
/* terms.c: the data terms' tasks (ratios, Hessian products, objective sums) over the pieces of a list of chunks,
 * grouped as the projections' tasks, and the partial sums of the objective tasks. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "recon_internal.h"

#define RATIO_MAX_BUFFERS 5

int recon_nll_sums_add(struct nll_sums *s, starpu_data_handle_t *h)
{
  if (s->num == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    starpu_data_handle_t *handle = realloc(s->handle, cap * sizeof *handle);
    if (!handle)
      return SPROJ_ERR_NOMEM;
    s->handle = handle;
    double **part = realloc(s->part, cap * sizeof *part);
    if (!part)
      return SPROJ_ERR_NOMEM;
    s->part = part;
    s->cap = cap;
  }
  double *part = malloc(SPROJ_NLL_PARTIALS * sizeof *part);
  if (!part)
    return SPROJ_ERR_NOMEM;
  starpu_vector_data_register(&s->handle[s->num], STARPU_MAIN_RAM, (uintptr_t)part, SPROJ_NLL_PARTIALS, sizeof *part);
  s->part[s->num] = part;
  *h = s->handle[s->num++];
  return SPROJ_OK;
}

/* Waits for the objective tasks and returns the sum of their partial sums, added in order; frees them. */
double recon_nll_sums_finish(struct nll_sums *s)
{
  double sum = 0.0;
  for (int t = 0; t < s->num; t++) {
    starpu_data_unregister(s->handle[t]);
    for (int j = 0; j < SPROJ_NLL_PARTIALS; j++)
      sum += s->part[t][j];
    free(s->part[t]);
  }
  free(s->handle);
  free(s->part);
  memset(s, 0, sizeof *s);
  return sum;
}

/* Submits the ratio (or objective) task of the arg->npieces pieces collected in descr, the first of them piece
 * first, with the small-value rule's maxima (or NULL) last, and empties arg. */
static int ratio_task(const sproj_chunks *ch, struct starpu_data_descr *descr, struct sproj_ratio_arg *arg, int bpp,
                      int first, struct nll_sums *nll, starpu_data_handle_t small)
{
  struct sproj_ratio_arg *a = malloc(sizeof *a);
  if (!a)
    return SPROJ_ERR_NOMEM;
  *a = *arg;
  arg->npieces = 0;
  int nbuf = bpp * a->npieces, ret;
  if (nll) {
    if ((ret = recon_nll_sums_add(nll, &descr[nbuf].handle))) {
      free(a);
      return ret;
    }
    descr[nbuf++].mode = STARPU_W;
  }
  if (small)
    descr[nbuf++] = (struct starpu_data_descr){.handle = small, .mode = STARPU_R};
  /* where the task's first LORs are (as the projections: sproj_workers_holding) */
  unsigned nwords = 0;
  int worker;
  const uint32_t *workers = sproj_workers_holding(sproj_rt.where, ch, first, &nwords, &worker);
  return recon_insert_status(starpu_task_insert(nll ? &sproj_em_nll_cl : &sproj_em_ratio_cl, STARPU_CL_ARGS, a, sizeof *a,
                                          STARPU_DATA_MODE_ARRAY, descr, nbuf, STARPU_EXECUTE_WHERE,
                                          (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx,
                                          STARPU_EXECUTE_ON_WORKER, worker, STARPU_TASK_WORKERIDS, nwords, workers, 0));
}

/* Ratio tasks (kind, enum sproj_ratio_kind) over the pieces of one list of chunks, grouped by the rule of projection
 * tasks (sproj_task_full), so that each covers the pieces of one forward task and runs where it ran; or, with nll,
 * objective tasks over the same buffers (read only), each adding its partial sums to nll. The Hessian reads r->px
 * beside r->p; its approximation needs no background. With the small-value rule every task also reads the largest
 * numerators of the chunks (small_rule.c). */
int recon_submit_terms(sproj_recon *r, const int *list, int num, int kind, struct nll_sums *nll)
{
  const sproj_chunks *ch = r->chunks;
  const sproj_model *md = r->model;
  int with_a = md->add != NULL && kind != SPROJ_RATIO_APPROX_HESSIAN;
  starpu_data_handle_t *pc, *xc = NULL, *yc = NULL, *mc = NULL, *ac = NULL, small = NULL;
  if ((md->mult && sproj_vec_children(md->mult, ch, &mc)) || (with_a && sproj_vec_children(md->add, ch, &ac)))
    return SPROJ_ERR_NOMEM;
  struct term_groups g;
  if (recon_groups_make(ch, list, num, &g))
    return SPROJ_ERR_NOMEM;
  struct starpu_data_descr *descr = malloc((RATIO_MAX_BUFFERS * SPROJ_MAX_PIECES + 2) * sizeof *descr);
  if (!descr) {
    recon_groups_free(&g);
    return SPROJ_ERR_NOMEM;
  }
  struct sproj_ratio_arg arg = {.num_bins = md->num_values, .has_y = r->data != NULL, .has_m = md->mult != NULL,
                                .has_a = with_a, .a_per_lor = md->add_per_lor, .kind = kind, .max_ratio = r->max_ratio,
                                .a_flat = kind == SPROJ_RATIO_APPROX_HESSIAN ? 0.0f : md->add_flat};
  int bpp = sproj_ratio_buffers_per_piece(&arg), ret = SPROJ_OK;
  sproj_proj *px = kind == SPROJ_RATIO_HESSIAN ? r->px : NULL;

  /* the partitions of written vectors change with the chunking in use: hold their locks (p, px, then the data) */
  pthread_mutex_lock(&r->p->vec.lock);
  if (px)
    pthread_mutex_lock(&px->vec.lock);
  if (r->data)
    pthread_mutex_lock(&r->data->vec.lock);
  if (sproj_vec_children_locked(&r->p->vec, ch, &pc) || (px && sproj_vec_children_locked(&px->vec, ch, &xc)) ||
      (r->data && sproj_vec_children_locked(&r->data->vec, ch, &yc)))
    ret = SPROJ_ERR_NOMEM;
  if (!ret)
    ret = recon_small_submit(r, kind, &g, pc, yc, &small);
  arg.has_small = small != NULL;
  arg.small_fraction = r->small_fraction;
  for (int t = 0; t < g.num && !ret; t++) {
    for (int j = g.start[t]; j < g.start[t + 1]; j++) {
      int q = g.piece[j];
      struct starpu_data_descr *d = descr + bpp * arg.npieces;
      int k = 0;
      d[k++] = (struct starpu_data_descr){.handle = pc[q], .mode = nll ? STARPU_R : STARPU_RW};
      if (xc)
        d[k++] = (struct starpu_data_descr){.handle = xc[q], .mode = STARPU_R};
      if (yc)
        d[k++] = (struct starpu_data_descr){.handle = yc[q], .mode = STARPU_R};
      if (mc)
        d[k++] = (struct starpu_data_descr){.handle = mc[q], .mode = STARPU_R};
      if (ac)
        d[k++] = (struct starpu_data_descr){.handle = ac[q], .mode = STARPU_R};
      arg.slot[arg.npieces++] = g.chunk[j];
    }
    ret = ratio_task(ch, descr, &arg, bpp, g.piece[g.start[t]], nll, small);
  }
  if (r->data)
    pthread_mutex_unlock(&r->data->vec.lock);
  if (px)
    pthread_mutex_unlock(&px->vec.lock);
  pthread_mutex_unlock(&r->p->vec.lock);
  free(descr);
  recon_groups_free(&g);
  return ret;
}
