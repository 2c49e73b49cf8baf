/* SPDX-License-Identifier: Apache-2.0 */
/* iterate.c: OS-EM iterations as tasks (blur, forward, ratio, back projection, update), and a reconstruction's
 * objective and sensitivities as its caller reads them. */
#include "config.h"
#include <stdlib.h>
#include <time.h>
#include "recon_internal.h"

static int submit_update(sproj_recon *r, starpu_data_handle_t corr, starpu_data_handle_t sens)
{
  struct sproj_update_arg *arg = calloc(1, sizeof *arg);
  if (!arg)
    return SPROJ_ERR_NOMEM;
  arg->sens_factor = r->sens_factor;
  return recon_insert_status(starpu_task_insert(&sproj_em_update_cl, STARPU_RW, r->x->handle, STARPU_R, corr, STARPU_R, sens,
                                          STARPU_CL_ARGS, arg, sizeof *arg, STARPU_EXECUTE_WHERE,
                                          (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx, 0));
}

/* One OS-EM update: blur, forward, ratio, zero, back, blur, update, all as tasks. */
static int submit_subset(sproj_recon *r, int k)
{
  const int *list = r->subsets.idx + r->subsets.start[k];
  int num = r->subsets.start[k + 1] - r->subsets.start[k], ret;
  sproj_image *src, *corr = r->bp;
  if ((ret = recon_submit_blurred(r, r->x, &src)) || (ret = recon_model_project(r->model, 0, src, r->p, r->chunks, list, num)) ||
      (ret = recon_submit_terms(r, list, num, SPROJ_RATIO_EM, NULL)) || (ret = recon_submit_zero(r->bp->handle)) ||
      (ret = recon_model_project(r->model, 1, r->bp, r->p, r->chunks, list, num)) ||
      (r->hook.reduce && (ret = r->hook.reduce(r->hook.user, r->bp))))
    return ret;
  if (r->blur) {
    corr = r->xb;
    if ((ret = recon_submit_gauss(r, r->bp->handle, r->xb->handle)))
      return ret;
  }
  return submit_update(r, corr->handle, recon_subset_sens(r, k)->handle);
}

static double seconds_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int sproj_recon_objective(sproj_recon *recon, double *nll)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!recon || !nll)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "recon and nll must not be NULL");
  return recon_nll(__func__, recon, recon->x, -1, nll);
}

int sproj_recon_iterate(sproj_recon *recon, int num_iterations, sproj_recon_callback callback, void *user)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!recon)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "recon is NULL");
  if (num_iterations < 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "num_iterations = %d is negative", num_iterations);
  double t0 = seconds_now();
  if (num_iterations > 0 && recon->dev && (ret = recon_devices_begin(recon)))
    return SPROJ_FAIL(ret, "could not submit the image's slabs");
  for (int it = 0; it < num_iterations; it++) {
    for (int k = 0; k < recon->subsets.num; k++)
      if ((ret = recon->dev ? recon_devices_subset(recon, k) : submit_subset(recon, k)))
        return ret == SPROJ_ERR_STARPU || ret == SPROJ_ERR_NOMEM ? SPROJ_FAIL(ret, "could not submit subset %d", k)
                                                                 : ret;
    recon->iterations++;
    if (!callback)
      continue;
    struct sproj_recon_progress pr = {recon->iterations, recon->subsets.num, 0.0, recon->objective, 0.0};
    if (recon->objective && (ret = recon_nll(__func__, recon, recon->x, -1, &pr.objective)))
      return ret;
    if ((ret = sproj_image_sync(recon->x, SPROJ_SYNC_READ)))
      return ret;
    pr.elapsed = seconds_now() - t0;
    if (callback(&pr, user))
      break;
  }
  return SPROJ_OK;
}

int sproj_recon_sensitivity(sproj_recon *recon, int subset, float *out)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!recon || !out)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "recon and out must not be NULL");
  if (subset < 0 || subset >= recon->subsets.num)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "subset %d outside 0..%d", subset, recon->subsets.num - 1);
  starpu_data_handle_t h = recon_subset_sens(recon, subset)->handle;
  if (starpu_data_acquire_on_node(h, STARPU_MAIN_RAM, STARPU_R) != 0)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "starpu_data_acquire failed");
  const float *s = (const float *)starpu_vector_get_local_ptr(h);
  uint32_t n = starpu_vector_get_nx(h);
  for (uint32_t v = 0; v < n; v++)
    out[v] = s[v] * recon->sens_factor;
  starpu_data_release_on_node(h, STARPU_MAIN_RAM);
  return SPROJ_OK;
}
