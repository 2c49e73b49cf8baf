/* SPDX-License-Identifier: Apache-2.0 */
/* objective.c: the Poisson log-likelihood of a reconstruction's subsets at any image, its gradient and its Hessian
 * products, as task graphs on the reconstruction's resident data, and the multiplicative update of an image (for
 * frameworks that run their own algorithms). */
#include "config.h"
#include <math.h>
#include <stdlib.h>
#include "recon_internal.h"

/* Checks the common arguments: the images (NULL entries skipped) have the reconstruction's geometry and are
 * distinct, and the subset is one of the reconstruction's (or -1 where allowed). */
static int check_call(const char *func, sproj_recon *r, int subset, int allow_all, sproj_image *const *img,
                      const char *const *name, int num)
{
  int ret = sproj_check_init_flush(func);
  if (ret)
    return ret;
  if (!r)
    return sproj_fail(SPROJ_ERR_NULL, func, "recon must not be NULL");
  if (subset < (allow_all ? -1 : 0) || subset >= r->subsets.num)
    return sproj_fail(SPROJ_ERR_RANGE, func, "subset %d: the reconstruction has subsets 0 .. %d%s", subset,
                      r->subsets.num - 1, allow_all ? " (or -1: all)" : "");
  for (int i = 0; i < num; i++) {
    if (!img[i])
      continue;
    if (!recon_same_geometry(&img[i]->geom, &r->x->geom))
      return sproj_fail(SPROJ_ERR_MISMATCH, func, "%s has another geometry than the reconstruction's image", name[i]);
    for (int j = 0; j < i; j++)
      if (img[j] == img[i])
        return sproj_fail(SPROJ_ERR_INVALID, func, "%s and %s are the same image", name[j], name[i]);
  }
  return SPROJ_OK;
}

/* Subset k's chunks (k = -1: every subset's). */
static void subset_list(const sproj_recon *r, int k, const int **list, int *num)
{
  int first = k < 0 ? 0 : r->subsets.start[k], end = k < 0 ? r->subsets.start[r->subsets.num] : r->subsets.start[k + 1];
  *list = r->subsets.idx + first;
  *num = end - first;
}

static int submit_status(const char *func, int ret)
{
  if (ret == SPROJ_ERR_STARPU || ret == SPROJ_ERR_NOMEM)
    return sproj_fail(ret, func, "could not submit");
  return ret;
}

/* out = G^T A^T (the values r->p now hold), over subset k's chunks: back projected into a zeroed image, summed over the
 * ranks of a distributed reconstruction, then blurred. */
static int submit_back_terms(sproj_recon *r, const int *list, int num, sproj_image *out)
{
  sproj_image *into = r->blur ? r->bp : out;
  int ret;
  if ((ret = recon_submit_zero(into->handle)) || (ret = recon_model_project(r->model, 1, into, r->p, r->chunks, list, num)) ||
      (r->hook.reduce && (ret = r->hook.reduce(r->hook.user, into))))
    return ret;
  return r->blur ? recon_submit_gauss(r, r->bp->handle, out->handle) : SPROJ_OK;
}

/* The forward projection of G img over subset k into p. */
static int submit_forward(sproj_recon *r, sproj_image *img, sproj_proj *p, const int *list, int num)
{
  sproj_image *src;
  int ret = recon_submit_blurred(r, img, &src);
  return ret ? ret : recon_model_project(r->model, 0, src, p, r->chunks, list, num);
}

/* grad = G^T A^T (m y / ybar(x)) over subset k, less its sensitivity unless add_sensitivity: tasks only. */
static int submit_gradient(sproj_recon *r, int k, sproj_image *x, sproj_image *grad, int add_sensitivity)
{
  const int *list;
  int num, ret;
  subset_list(r, k, &list, &num);
  if ((ret = submit_forward(r, x, r->p, list, num)) || (ret = recon_submit_terms(r, list, num, SPROJ_RATIO_EM, NULL)) ||
      (ret = submit_back_terms(r, list, num, grad)) || add_sensitivity)
    return ret;
  struct sproj_axpy_arg *arg = malloc(sizeof *arg);
  if (!arg)
    return SPROJ_ERR_NOMEM;
  arg->alpha = -r->sens_factor;
  return recon_insert_status(starpu_task_insert(&sproj_image_axpy_cl, STARPU_RW, grad->handle, STARPU_R,
                                                recon_subset_sens(r, k)->handle, STARPU_CL_ARGS, arg, sizeof *arg,
                                                STARPU_EXECUTE_WHERE, (unsigned long long)sproj_rt.where,
                                                STARPU_SCHED_CTX, sproj_rt.ctx, 0));
}

int sproj_recon_gradient(sproj_recon *recon, int subset, sproj_image *x, sproj_image *grad, int flags)
{
  sproj_image *img[2] = {x, grad};
  static const char *const name[2] = {"x", "grad"};
  int ret = check_call(__func__, recon, subset, 0, img, name, 2);
  if (ret)
    return ret;
  if (!x || !grad)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "x and grad must not be NULL");
  if (flags & ~SPROJ_GRADIENT_ADD_SENSITIVITY)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "unknown flags 0x%x", (unsigned)flags);
  return submit_status(__func__, submit_gradient(recon, subset, x, grad, flags & SPROJ_GRADIENT_ADD_SENSITIVITY));
}

static void release_on_host(void *handle)
{
  starpu_data_release_on_node((starpu_data_handle_t)handle, STARPU_MAIN_RAM);
}

int sproj_recon_sensitivity_image(sproj_recon *recon, int subset, sproj_image *out, int flags)
{
  sproj_image *img[1] = {out};
  static const char *const name[1] = {"out"};
  int ret = check_call(__func__, recon, subset, 0, img, name, 1);
  if (ret)
    return ret;
  if (!out)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "out must not be NULL");
  if (flags & ~SPROJ_SENSITIVITY_TO_HOST)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "unknown flags 0x%x", (unsigned)flags);
  /* 0 + f * s: the floats of sproj_recon_sensitivity's host loop (s * f, one rounding; s is never -0) on any worker */
  struct sproj_axpy_arg *arg = malloc(sizeof *arg);
  if (!arg)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  arg->alpha = recon->sens_factor;
  if ((ret = recon_submit_zero(out->handle))) {
    free(arg);
    return submit_status(__func__, ret);
  }
  ret = recon_insert_status(starpu_task_insert(&sproj_image_axpy_cl, STARPU_RW, out->handle, STARPU_R,
                                               recon_subset_sens(recon, subset)->handle, STARPU_CL_ARGS, arg,
                                               sizeof *arg, STARPU_EXECUTE_WHERE, (unsigned long long)sproj_rt.where,
                                               STARPU_SCHED_CTX, sproj_rt.ctx, 0));
  if (ret)
    return submit_status(__func__, ret);
  /* out's copy home, once the tasks above are done: an acquire (which, unlike a prefetch, waits for the tasks
   * submitted before it) released as soon as it holds the host copy */
  if ((flags & SPROJ_SENSITIVITY_TO_HOST) &&
      starpu_data_acquire_on_node_cb(out->handle, STARPU_MAIN_RAM, STARPU_R, release_on_host, out->handle) != 0)
    return SPROJ_FAIL(SPROJ_ERR_STARPU, "could not start the copy to the host");
  return SPROJ_OK;
}

int sproj_recon_hessian_times(sproj_recon *recon, int subset, sproj_image *x, sproj_image *v, sproj_image *out, int flags)
{
  int approximate = (flags & SPROJ_HESSIAN_APPROXIMATE) != 0;
  sproj_image *img[3] = {approximate ? NULL : x, v, out};
  static const char *const name[3] = {"x", "v", "out"};
  int ret = check_call(__func__, recon, subset, 0, img, name, 3);
  if (ret)
    return ret;
  if ((!approximate && !x) || !v || !out)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "v, out and (unless approximate) x must not be NULL");
  if (flags & ~SPROJ_HESSIAN_APPROXIMATE)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "unknown flags 0x%x", (unsigned)flags);
  if (approximate && !recon->data)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the approximate Hessian takes ybar as the counts of each LOR: a listmode "
                                         "reconstruction has events, not counts");
  if (!approximate && !recon->px && (ret = recon_temp_proj(__func__, &recon->px, &recon->px_host, recon->model)))
    return ret;
  const int *list;
  int num;
  subset_list(recon, subset, &list, &num);
  if ((!approximate && (ret = submit_forward(recon, x, recon->px, list, num))) ||
      (ret = submit_forward(recon, v, recon->p, list, num)) ||
      (ret = recon_submit_terms(recon, list, num, approximate ? SPROJ_RATIO_APPROX_HESSIAN : SPROJ_RATIO_HESSIAN,
                                NULL)) ||
      (ret = submit_back_terms(recon, list, num, out)))
    return submit_status(__func__, ret);
  return SPROJ_OK;
}

/* The Poisson objective at x: objective tasks where the expected values are (em_nll.h), their partial sums added on
 * the host; listmode adds <s, x> and the sensitivity model's background. */
int recon_nll(const char *func, sproj_recon *r, sproj_image *x, int subset, double *nll)
{
  const int *list;
  int num, ret;
  struct nll_sums sums = {0};
  subset_list(r, subset, &list, &num);
  if ((ret = submit_forward(r, x, r->p, list, num)))
    return submit_status(func, ret);
  ret = recon_submit_terms(r, list, num, SPROJ_RATIO_EM, &sums);
  double sum = recon_nll_sums_finish(&sums);
  if (ret)
    return submit_status(func, ret);
  if (!r->data) {
    double dot = 0.0;
    if ((ret = recon_sens_dot(func, r, x, subset, &dot)))
      return ret;
    sum += dot + (subset < 0 ? r->sens_background : r->sens_subset_background[subset]);
  }
  *nll = sum;
  return SPROJ_OK;
}

int sproj_recon_subset_objective(sproj_recon *recon, int subset, sproj_image *x, double *nll)
{
  sproj_image *img[1] = {x};
  static const char *const name[1] = {"x"};
  int ret = check_call(__func__, recon, subset, 1, img, name, 1);
  if (ret)
    return ret;
  if (!x || !nll)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "x and nll must not be NULL");
  return recon_nll(__func__, recon, x, subset, nll);
}

/* An update task of arg's kind where the images are (x RW, num and den R); arg is handed to the task. */
static int submit_image_update(sproj_image *x, sproj_image *num, sproj_image *den, struct sproj_update_arg *arg)
{
  return recon_insert_status(starpu_task_insert(&sproj_em_update_cl, STARPU_RW, x->handle, STARPU_R, num->handle, STARPU_R,
                                                den->handle, STARPU_CL_ARGS, arg, sizeof *arg, STARPU_EXECUTE_WHERE,
                                                (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx, 0));
}

/* x <- x * bound(num / (den * den_factor)) by a task where the images are. */
static int submit_bounded_update(sproj_image *x, sproj_image *num, sproj_image *den, float den_factor, float lo, float hi)
{
  struct sproj_update_arg *arg = calloc(1, sizeof *arg);
  if (!arg)
    return SPROJ_ERR_NOMEM;
  *arg = (struct sproj_update_arg){.sens_factor = den_factor, .kind = SPROJ_UPDATE_OSL, .lo = lo, .hi = hi};
  return submit_image_update(x, num, den, arg);
}

static int check_bounds(const char *func, float lo, float hi)
{
  if (isnan(lo) || isnan(hi))
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "the bounds must not be NaN");
  if (lo > hi)
    return sproj_fail(SPROJ_ERR_RANGE, func, "lower bound %g above upper bound %g", lo, hi);
  return SPROJ_OK;
}

int sproj_recon_update(sproj_recon *recon, int subset, sproj_image *x, sproj_image *work, float lo, float hi)
{
  sproj_image *img[2] = {x, work};
  static const char *const name[2] = {"x", "work"};
  int ret = check_call(__func__, recon, subset, 0, img, name, 2);
  if (ret)
    return ret;
  if (!x || !work)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "x and work must not be NULL");
  if ((ret = check_bounds(__func__, lo, hi)))
    return ret;
  if (!(ret = submit_gradient(recon, subset, x, work, 1)))
    ret = submit_bounded_update(x, work, recon_subset_sens(recon, subset), recon->sens_factor, lo, hi);
  return submit_status(__func__, ret);
}

/* The checks both image updates make on their images and bounds. */
static int check_update(const char *func, sproj_image *x, sproj_image *num, sproj_image *den, float lo, float hi)
{
  int ret = sproj_check_init_flush(func);
  if (ret)
    return ret;
  if (!x || !num || !den)
    return sproj_fail(SPROJ_ERR_NULL, func, "x, num and den must not be NULL");
  if (!recon_same_geometry(&x->geom, &num->geom) || !recon_same_geometry(&x->geom, &den->geom))
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "x, num and den must have one geometry");
  if (x == num || x == den || num == den)
    return sproj_fail(SPROJ_ERR_INVALID, func, "x, num and den must be three images");
  return check_bounds(func, lo, hi);
}

int sproj_image_update_multiplicative(sproj_image *x, sproj_image *num, sproj_image *den, float lo, float hi)
{
  int ret = check_update(__func__, x, num, den, lo, hi);
  if (ret)
    return ret;
  return submit_status(__func__, submit_bounded_update(x, num, den, 1.0f, lo, hi));
}

int sproj_image_update_additive(sproj_image *x, sproj_image *num, sproj_image *den, float num_scale, float step, float lo,
                                float hi)
{
  int ret = check_update(__func__, x, num, den, lo, hi);
  if (ret)
    return ret;
  if (!isfinite(num_scale) || !isfinite(step))
    return SPROJ_FAIL(SPROJ_ERR_NONFINITE, "num_scale %g and step %g must be finite", num_scale, step);
  struct sproj_update_arg *arg = calloc(1, sizeof *arg);
  if (!arg)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  *arg = (struct sproj_update_arg){.kind = SPROJ_UPDATE_SPS, .lo = lo, .hi = hi, .num_scale = num_scale, .step = step};
  return submit_status(__func__, submit_image_update(x, num, den, arg));
}
