/* SPDX-License-Identifier: Apache-2.0 */
/* tof.c: time-of-flight parameters, scalar or per LOR (per-LOR arrays registered as read-only vectors of a set). */
#include "config.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"

static int check_params(const char *func, const struct sproj_tof_params *p)
{
  if (!isfinite(p->bin_width) || !(p->bin_width > 0.0f))
    return sproj_fail(SPROJ_ERR_TOF, func, "bin_width = %g must be finite and > 0", p->bin_width);
  if (p->num_bins < 1 || p->num_bins > SPROJ_MAX_TOF_BINS)
    return sproj_fail(SPROJ_ERR_TOF, func, "num_bins = %d must be 1..%d", p->num_bins, SPROJ_MAX_TOF_BINS);
  if (!isfinite(p->num_sigmas) || !(p->num_sigmas > 0.0f))
    return sproj_fail(SPROJ_ERR_TOF, func, "num_sigmas = %g must be finite and > 0", p->num_sigmas);
  if (!isfinite(p->center_offset))
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "center_offset is not finite");
  if (fabs((double)p->center_offset) > SPROJ_TOF_MAX_RATIO * (double)p->bin_width)
    return sproj_fail(SPROJ_ERR_TOF, func, "|center_offset| = %g exceeds %g bin widths", fabs(p->center_offset),
                      SPROJ_TOF_MAX_RATIO);
  return SPROJ_OK;
}

/* A sigma (scalar or of one LOR) against the bin width and num_sigmas: the ranges the header states. */
static int check_sigma(const char *func, const struct sproj_tof_params *p, float sigma, int64_t lor)
{
  char who[48] = "sigma";
  if (lor >= 0)
    snprintf(who, sizeof who, "sigma of LOR %lld", (long long)lor);
  if (!isfinite(sigma) || !(sigma > 0.0f))
    return sproj_fail(SPROJ_ERR_TOF, func, "%s = %g must be finite and > 0", who, sigma);
  /* in double: the quotients of extreme floats overflow float */
  double ratio = (double)sigma / (double)p->bin_width;
  if (ratio < 1.0 / SPROJ_TOF_MAX_RATIO || ratio > SPROJ_TOF_MAX_RATIO)
    return sproj_fail(SPROJ_ERR_TOF, func, "%s / bin_width = %g must lie in [%g, %g]", who, ratio,
                      1.0 / SPROJ_TOF_MAX_RATIO, SPROJ_TOF_MAX_RATIO);
  if ((double)p->num_sigmas * ratio > SPROJ_TOF_MAX_RATIO)
    return sproj_fail(SPROJ_ERR_TOF, func, "num_sigmas * %s / bin_width = %g exceeds %g", who,
                      (double)p->num_sigmas * ratio, SPROJ_TOF_MAX_RATIO);
  return SPROJ_OK;
}

int sproj_tof_register(sproj_tof **tof, const struct sproj_tof_params *params, sproj_lors *lors, const float *sigma,
                       const float *center_offset)
{
  int ret = sproj_check_init(__func__);
  if (ret)
    return ret;
  if (!tof || !params)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "tof and params must not be NULL");
  if ((sigma || center_offset) && !lors)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "per-LOR sigma or center_offset need the LOR set they belong to");
  if ((ret = check_params(__func__, params)))
    return ret;
  if ((ret = check_sigma(__func__, params, params->sigma, -1)))
    return ret;
  int64_t n = lors ? lors->num_lors : 0;
  if (sigma)
    for (int64_t i = 0; i < n; i++)
      if ((ret = check_sigma(__func__, params, sigma[i], i)))
        return ret;
  if (center_offset) {
    int64_t bad = sproj_first_nonfinite(center_offset, n);
    if (bad >= 0)
      return SPROJ_FAIL(SPROJ_ERR_NONFINITE, "center_offset of LOR %lld is not finite", (long long)bad);
    for (int64_t i = 0; i < n; i++)
      if (fabs((double)center_offset[i]) > SPROJ_TOF_MAX_RATIO * (double)params->bin_width)
        return SPROJ_FAIL(SPROJ_ERR_TOF, "|center_offset| of LOR %lld = %g exceeds %g bin widths", (long long)i,
                          fabs(center_offset[i]), SPROJ_TOF_MAX_RATIO);
  }
  sproj_tof *t = calloc(1, sizeof *t);
  if (!t)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  t->params = *params;
  t->lors = sigma || center_offset ? lors : NULL;
  if ((sigma && sproj_vec_register_ro(&t->sigma, lors, sigma, sizeof(float), 0)) ||
      (center_offset && sproj_vec_register_ro(&t->center_offset, lors, center_offset, sizeof(float), 0))) {
    if (t->sigma) {
      sproj_vec_fini(t->sigma, 0);
      free(t->sigma);
    }
    free(t);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  sproj_count_object(1);
  *tof = t;
  return SPROJ_OK;
}

int sproj_tof_unregister(sproj_tof *tof)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!tof)
    return SPROJ_OK;
  struct sproj_vec *vecs[2] = {tof->sigma, tof->center_offset};
  for (int i = 0; i < 2; i++)
    if (vecs[i]) {
      sproj_vec_fini(vecs[i], 0);
      free(vecs[i]);
    }
  free(tof);
  sproj_count_object(-1);
  return SPROJ_OK;
}
