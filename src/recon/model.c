/* SPDX-License-Identifier: Apache-2.0 */
/* model.c: forward models (per-LOR factors, background, resolution blur), the checks of their counts and factors,
 * the image blur, and a model's projection of a list of chunks. */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include "recon_internal.h"

/* Index of the first value of v[first .. end) that is NaN / infinite (*bad_kind 0) or negative (*bad_kind 1), or -1. */
static int64_t first_bad_in(const float *v, int64_t first, int64_t end, int *bad_kind)
{
  for (int64_t i = first; i < end; i++) {
    if (!isfinite(v[i])) {
      *bad_kind = 0;
      return i;
    }
    if (v[i] < 0.0f) {
      *bad_kind = 1;
      return i;
    }
  }
  return -1;
}

struct bad_scan {
  const float *v;
  int64_t first, end, bad;
  int kind;
};

static void *bad_scan_part(void *arg)
{
  struct bad_scan *p = arg;
  p->bad = first_bad_in(p->v, p->first, p->end, &p->kind);
  return NULL;
}

/* The same over all of v, on up to one thread per core for large arrays (a TOF sinogram's 4.2 G values took one
 * thread 4-5 s): the first bad value of the lowest part that has one, so the answer never depends on the threads. */
static int64_t first_bad_value(const float *v, int64_t n, int *bad_kind)
{
  enum { MAX_PARTS = 64 };
  const int64_t part_values = (int64_t)1 << 24; /* values per part: fewer are scanned by one thread */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t parts = n / part_values + 1;
  if (parts > cores)
    parts = cores > 1 ? cores : 1;
  if (parts > MAX_PARTS)
    parts = MAX_PARTS;
  if (parts <= 1)
    return first_bad_in(v, 0, n, bad_kind);
  struct bad_scan part[MAX_PARTS];
  pthread_t th[MAX_PARTS];
  int started[MAX_PARTS] = {0};
  for (int64_t k = 0; k < parts; k++) {
    part[k] = (struct bad_scan){v, n * k / parts, n * (k + 1) / parts, -1, 0};
    started[k] = k > 0 && pthread_create(&th[k], NULL, bad_scan_part, &part[k]) == 0;
    if (k > 0 && !started[k])
      bad_scan_part(&part[k]); /* no thread: this one scans it */
  }
  bad_scan_part(&part[0]);
  for (int64_t k = 1; k < parts; k++)
    if (started[k])
      pthread_join(th[k], NULL);
  for (int64_t k = 0; k < parts; k++)
    if (part[k].bad >= 0) {
      *bad_kind = part[k].kind;
      return part[k].bad;
    }
  return -1;
}

/* SPROJ_OK, or the status and message for a NaN / infinite or negative value in an array of counts or factors with
 * per_elem values per element (a LOR or a voxel). */
static int check_values(const char *func, const char *what, const char *elem, const float *v, int64_t n, int per_elem)
{
  int kind;
  int64_t bad = first_bad_value(v, n, &kind);
  if (bad < 0)
    return SPROJ_OK;
  if (kind == 0)
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "%s of %s %lld is not finite", what, elem, (long long)(bad / per_elem));
  return sproj_fail(SPROJ_ERR_RANGE, func, "%s of %s %lld is %g: it must be >= 0", what, elem,
                    (long long)(bad / per_elem), v[bad]);
}

/* Checks a registered vector's values on the host (waits for it and gathers it there). */
int recon_check_handle_values(const char *func, const char *what, const char *elem, starpu_data_handle_t h,
                              int64_t n, int per_elem)
{
  if (starpu_data_acquire_on_node(h, STARPU_MAIN_RAM, STARPU_R) != 0)
    return sproj_fail(SPROJ_ERR_STARPU, func, "starpu_data_acquire failed");
  int ret = check_values(func, what, elem, (const float *)starpu_vector_get_local_ptr(h), n, per_elem);
  starpu_data_release_on_node(h, STARPU_MAIN_RAM);
  return ret;
}

static void model_free(sproj_model *md)
{
  sproj_proj_release_ro(md->mult_proj);
  sproj_vec_free(md->add, 0);
  free(md);
}

static int model_create(const char *func, sproj_model **model, sproj_lors *lors, const float *mult, const float *add,
                        int add_per_lor, const sproj_tof *tof, const float fwhm_mm[3])
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!model || !lors)
    return sproj_fail(SPROJ_ERR_NULL, func, "model and lors must not be NULL");
  int lm = tof && lors->bins;
  if (tof && tof->lors && tof->lors != lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the per-LOR TOF parameters belong to another LOR set");
  if (lm && (ret = sproj_events_check_bins(func, lors, tof)))
    return ret;
  int num_values = tof && !lm ? tof->params.num_bins : 1;
  if (fwhm_mm)
    for (int k = 0; k < 3; k++) {
      if (!isfinite(fwhm_mm[k]))
        return sproj_fail(SPROJ_ERR_NONFINITE, func, "fwhm_mm[%d] is not finite", k);
      if (fwhm_mm[k] < 0.0f)
        return sproj_fail(SPROJ_ERR_RANGE, func, "fwhm_mm[%d] = %g must be >= 0", k, fwhm_mm[k]);
    }
  if (mult && (ret = check_values(func, "the factor", "LOR", mult, lors->num_lors, 1)))
    return ret;
  int add_values = add_per_lor ? 1 : num_values;
  if (add && (ret = check_values(func, "the background", "LOR", add, lors->num_lors * add_values, add_values)))
    return ret;

  sproj_model *md = calloc(1, sizeof *md);
  if (!md)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  md->lors = lors;
  md->tof = tof;
  md->lm = lm;
  md->num_values = num_values;
  md->add_per_lor = add_per_lor && num_values > 1;
  md->add_host = add;
  for (int k = 0; k < 3; k++)
    md->fwhm[k] = fwhm_mm ? fwhm_mm[k] : 0.0f;
  if ((mult && sproj_proj_register_ro(&md->mult_proj, lors, mult)) ||
      (add && sproj_vec_register_ro(&md->add, lors, add, (size_t)add_values * sizeof(float), 0))) {
    model_free(md);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  md->mult = md->mult_proj ? &md->mult_proj->vec : NULL;
  sproj_count_object(1);
  *model = md;
  return SPROJ_OK;
}

int sproj_model_create(sproj_model **model, sproj_lors *lors, const float *mult, const float *add, const sproj_tof *tof,
                       const float fwhm_mm[3])
{
  return model_create(__func__, model, lors, mult, add, 0, tof, fwhm_mm);
}

int sproj_model_create_tof_uniform_add(sproj_model **model, sproj_lors *lors, const float *mult, const float *add,
                                       const sproj_tof *tof, const float fwhm_mm[3])
{
  return model_create(__func__, model, lors, mult, add, 1, tof, fwhm_mm);
}

int sproj_model_set_flat_background(sproj_model *model, float value)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!model)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "model must not be NULL");
  if (model->add)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "the model has a background array: a flat one would replace it");
  if (!isfinite(value))
    return SPROJ_FAIL(SPROJ_ERR_NONFINITE, "the background is not finite");
  if (value < 0.0f)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "the background %g must be >= 0", value);
  int users = __atomic_load_n(&model->users, __ATOMIC_RELAXED);
  if (users > 0)
    return SPROJ_FAIL(SPROJ_ERR_BUSY, "%d reconstructions use the model", users);
  model->add_flat = value;
  return SPROJ_OK;
}

int sproj_model_destroy(sproj_model *model)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!model)
    return SPROJ_OK;
  int users = __atomic_load_n(&model->users, __ATOMIC_RELAXED);
  if (users > 0)
    return SPROJ_FAIL(SPROJ_ERR_BUSY, "%d reconstructions still use the model", users);
  model_free(model);
  sproj_count_object(-1);
  return SPROJ_OK;
}

int sproj_image_blur(sproj_image *dst, sproj_image *src, const float fwhm_mm[3])
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!dst || !src || !fwhm_mm)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "dst, src and fwhm_mm must not be NULL");
  if (dst == src)
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "dst and src must be two images");
  for (int k = 0; k < 3; k++) {
    if (dst->geom.n[k] != src->geom.n[k] || dst->geom.voxel_size[k] != src->geom.voxel_size[k])
      return SPROJ_FAIL(SPROJ_ERR_MISMATCH, "dst and src differ in size or voxel size along axis %d", k);
    if (!isfinite(fwhm_mm[k]))
      return SPROJ_FAIL(SPROJ_ERR_NONFINITE, "fwhm_mm[%d] is not finite", k);
    if (fwhm_mm[k] < 0.0f)
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "fwhm_mm[%d] = %g must be >= 0", k, fwhm_mm[k]);
  }
  struct sproj_gauss_arg *arg = malloc(sizeof *arg);
  if (!arg)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  int bad_axis = sproj_gauss_arg_init(arg, src->geom.n, src->geom.voxel_size, fwhm_mm);
  if (bad_axis >= 0) {
    free(arg);
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "a FWHM of %g along axis %d spans more than %d voxels each side at 3 sigma",
                      fwhm_mm[bad_axis], bad_axis, SPROJ_GAUSS_MAX_RADIUS);
  }
  if ((ret = sproj_flush_held())) {
    free(arg);
    return ret;
  }
  uint32_t nvox = (uint32_t)src->geom.n[0] * (uint32_t)src->geom.n[1] * (uint32_t)src->geom.n[2];
  starpu_data_handle_t scratch;
  starpu_vector_data_register(&scratch, -1, 0, nvox, sizeof(float));
  ret = starpu_task_insert(&sproj_gauss3d_cl, STARPU_R, src->handle, STARPU_W, dst->handle, STARPU_SCRATCH, scratch,
                           STARPU_CL_ARGS, arg, sizeof *arg, STARPU_EXECUTE_WHERE, (unsigned long long)sproj_rt.where,
                           STARPU_SCHED_CTX, sproj_rt.ctx, 0);
  starpu_data_unregister_submit(scratch);
  return ret ? SPROJ_FAIL(SPROJ_ERR_STARPU, "StarPU refused the blur task (%d)", ret) : SPROJ_OK;
}

/* Forward (back = 0) or back projection of a list of chunks with the model's projector. */
int recon_model_project(const sproj_model *md, int back, sproj_image *img, sproj_proj *p, const sproj_chunks *ch,
                         const int *list, int num)
{
  int ret;
  if (!md->tof)
    ret = back ? sproj_back_chunks(img, p, ch, list, num) : sproj_fwd_chunks(img, p, ch, list, num);
  else if (md->lm)
    ret = back ? sproj_back_tof_lm_chunks(img, p, ch, list, num, md->tof)
               : sproj_fwd_tof_lm_chunks(img, p, ch, list, num, md->tof);
  else
    ret = back ? sproj_back_tof_sino_chunks(img, p, ch, list, num, md->tof)
               : sproj_fwd_tof_sino_chunks(img, p, ch, list, num, md->tof);
  /* inside a caller's batch the projection would only be collected: our own tasks must come after it */
  return ret ? ret : sproj_flush_pending();
}
