/* SPDX-License-Identifier: Apache-2.0 */
/* tof.c: time-of-flight parameters, scalar or per LOR (per-LOR arrays registered as read-only vectors of a set). */
#include "config.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "internal.h"
#include "starproj_parallelproj.h"

static int check_params(const char *func, const struct sproj_tof_params *p)
{
  if (!isfinite(p->bin_width) || !(p->bin_width > 0.0f))
    return sproj_fail(SPROJ_ERR_TOF, func, "bin_width = %g must be finite and > 0", p->bin_width);
  if (p->num_bins < 1 || p->num_bins > SPROJ_MAX_TOF_BINS)
    return sproj_fail(SPROJ_ERR_TOF, func, "num_bins = %d must be 1..%d", p->num_bins, SPROJ_MAX_TOF_BINS);
  if (!isfinite(p->num_sigmas) || !(p->num_sigmas > 0.0f))
    return sproj_fail(SPROJ_ERR_TOF, func, "num_sigmas = %g must be finite and > 0", p->num_sigmas);
  switch (sproj_tof_offset_fault(p->center_offset, p->bin_width, SPROJ_TOF_MAX_RATIO)) {
  case 1:
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "center_offset is not finite");
  case 2:
    return sproj_fail(SPROJ_ERR_TOF, func, "|center_offset| = %g exceeds %g bin widths", fabs(p->center_offset),
                      SPROJ_TOF_MAX_RATIO);
  }
  return SPROJ_OK;
}

/* A sigma (scalar or of one LOR) against the bin width and num_sigmas: the ranges the header states. */
static int check_sigma(const char *func, const struct sproj_tof_params *p, float sigma, int64_t lor)
{
  int fault = sproj_tof_sigma_fault(sigma, p->bin_width, p->num_sigmas, SPROJ_TOF_MAX_RATIO);
  if (!fault)
    return SPROJ_OK;
  char who[48] = "sigma";
  if (lor >= 0)
    snprintf(who, sizeof who, "sigma of LOR %lld", (long long)lor);
  /* in double: the quotients of extreme floats overflow float */
  double ratio = (double)sigma / (double)p->bin_width;
  if (fault == 1)
    return sproj_fail(SPROJ_ERR_TOF, func, "%s = %g must be finite and > 0", who, sigma);
  if (fault == 2)
    return sproj_fail(SPROJ_ERR_TOF, func, "%s / bin_width = %g must lie in [%g, %g]", who, ratio,
                      1.0 / SPROJ_TOF_MAX_RATIO, SPROJ_TOF_MAX_RATIO);
  return sproj_fail(SPROJ_ERR_TOF, func, "num_sigmas * %s / bin_width = %g exceeds %g", who,
                    (double)p->num_sigmas * ratio, SPROJ_TOF_MAX_RATIO);
}

/* The scans of the per-LOR sigma (r[0], when has_sigma) and offset (the next result, when has_offset) as the error
 * they found: any sigma out of range first, then a non-finite offset, then one too far. */
static int per_lor_report(const char *func, const struct sproj_tof_params *params, const struct sproj_input_result *r,
                          int has_sigma, int has_offset)
{
  int ret;
  if (has_sigma && r->first[0] != SPROJ_INPUT_NONE &&
      (ret = check_sigma(func, params, r->value[0], (int64_t)r->first[0])))
    return ret;
  r += has_sigma;
  if (has_offset && r->first[0] != SPROJ_INPUT_NONE)
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "center_offset of LOR %lld is not finite", (long long)r->first[0]);
  if (has_offset && r->first[1] != SPROJ_INPUT_NONE)
    return sproj_fail(SPROJ_ERR_TOF, func, "|center_offset| of LOR %lld = %g exceeds %g bin widths",
                      (long long)r->first[1], fabs(r->value[1]), SPROJ_TOF_MAX_RATIO);
  return SPROJ_OK;
}

/* The per-LOR values (either may be NULL) against the parameters, for n LORs. */
static int check_per_lor(const char *func, const struct sproj_tof_params *params, int64_t n, const float *sigma,
                         const float *center_offset)
{
  struct sproj_input_arg a = sproj_input_limits(params->bin_width, params->num_sigmas);
  struct sproj_input_result r[2];
  int k = 0;
  if (sigma)
    sproj_input_scan(&a, SPROJ_INPUT_SIGMA, sigma, (uint64_t)n, &r[k++]);
  /* an offset is looked at only when every sigma is fine, as the report takes sigma first */
  if (center_offset && !(sigma && r[0].first[0] != SPROJ_INPUT_NONE))
    sproj_input_scan(&a, SPROJ_INPUT_OFFSET, center_offset, (uint64_t)n, &r[k++]);
  return per_lor_report(func, params, r, sigma != NULL, k > (sigma != NULL));
}

/* The checks every registration starts with. */
static int check_register(const char *func, sproj_tof **tof, const struct sproj_tof_params *params, sproj_lors *lors,
                          int per_lor)
{
  int ret = sproj_check_init(func);
  if (ret)
    return ret;
  if (!tof || !params)
    return sproj_fail(SPROJ_ERR_NULL, func, "tof and params must not be NULL");
  if (per_lor && !lors)
    return sproj_fail(SPROJ_ERR_NULL, func, "per-LOR sigma or center_offset need the LOR set they belong to");
  if ((ret = check_params(func, params)))
    return ret;
  return check_sigma(func, params, params->sigma, -1);
}

/* The object, once everything is checked: sigma and center_offset are vectors of lors (NULL: none), registered by
 * the caller (owns: the object unregisters them) or by the registration above. */
static int tof_new(const char *func, sproj_tof **tof, const struct sproj_tof_params *params, sproj_lors *lors,
                   starpu_data_handle_t sigma, starpu_data_handle_t center_offset, int owns)
{
  sproj_tof *t = calloc(1, sizeof *t);
  starpu_data_handle_t h[2] = {sigma, center_offset}; /* those no vector has taken yet */
  int ok = t != NULL;
  if (t) {
    struct sproj_vec **v[2] = {&t->sigma, &t->center_offset};
    for (int i = 0; i < 2 && ok; i++) {
      if (!h[i])
        continue;
      if (!(*v[i] = malloc(sizeof **v[i])) || sproj_vec_init(*v[i], lors, h[i], owns, 1, 0)) {
        free(*v[i]);
        *v[i] = NULL;
        ok = 0;
      } else {
        h[i] = NULL;
      }
    }
  }
  if (!ok) {
    if (t) /* sigma, the only vector that can exist here, unregisters a handle it owns */
      sproj_vec_free(t->sigma, 0);
    for (int i = 0; i < 2 && owns; i++)
      if (h[i])
        starpu_data_unregister_no_coherency(h[i]);
    free(t);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  static uint64_t next_id = 1;
  t->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
  t->params = *params;
  t->lors = sigma || center_offset ? lors : NULL;
  sproj_count_object(1);
  *tof = t;
  return SPROJ_OK;
}

int sproj_tof_register(sproj_tof **tof, const struct sproj_tof_params *params, sproj_lors *lors, const float *sigma,
                       const float *center_offset)
{
  int ret = check_register(__func__, tof, params, lors, sigma || center_offset);
  if (ret)
    return ret;
  if ((ret = check_per_lor(__func__, params, lors ? lors->num_lors : 0, sigma, center_offset)))
    return ret;
  /* A per-LOR sigma whose values are all equal is that sigma for every LOR: registered as the scalar, so that the
   * edges' table (codelets/tof/tof_table.h), which serves tasks of one sigma, gives its LORs the scalar's weights
   * bit for bit (a LOR's weights depend on its sigma alone). The values are fixed once registered (checked here). */
  struct sproj_tof_params p = *params;
  if (sigma && lors->num_lors > 0) {
    int64_t i = 1;
    while (i < lors->num_lors && sigma[i] == sigma[0])
      i++;
    if (i == lors->num_lors) {
      p.sigma = sigma[0];
      sigma = NULL;
    }
  }
  params = &p;
  starpu_data_handle_t h[2] = {NULL, NULL};
  const float *data[2] = {sigma, center_offset};
  /* only ever read: StarPU never writes through these pointers */
  for (int i = 0; i < 2; i++)
    if (data[i])
      starpu_vector_data_register(&h[i], STARPU_MAIN_RAM, (uintptr_t)data[i], (uint32_t)lors->num_lors, sizeof(float));
  return tof_new(__func__, tof, params, lors, h[0], h[1], 1);
}

int sproj_tof_register_handles(sproj_tof **tof, const struct sproj_tof_params *params, sproj_lors *lors,
                               sproj_starpu_handle sigma, sproj_starpu_handle center_offset)
{
  int ret = check_register(__func__, tof, params, lors, sigma || center_offset);
  if (ret)
    return ret;
  starpu_data_handle_t h[2] = {sigma, center_offset};
  const char *names[2] = {"sigma", "center_offset"};
  for (int i = 0; i < 2; i++) {
    if (!h[i])
      continue;
    if (starpu_data_get_interface_id(h[i]) != STARPU_VECTOR_INTERFACE_ID ||
        starpu_vector_get_elemsize(h[i]) != sizeof(float))
      return SPROJ_FAIL(SPROJ_ERR_INVALID, "%s must be a StarPU vector of float", names[i]);
    if ((int64_t)starpu_vector_get_nx(h[i]) != lors->num_lors)
      return SPROJ_FAIL(SPROJ_ERR_MISMATCH, "%s holds %u values for %lld LORs", names[i], starpu_vector_get_nx(h[i]),
                        (long long)lors->num_lors);
  }
  /* the values are checked where they live: by a task on the GPU that holds a vector, else on the host */
  struct sproj_input_arg a = sproj_input_limits(params->bin_width, params->num_sigmas);
  starpu_data_handle_t v[2];
  struct sproj_input_result r[2];
  for (int i = 0; i < 2; i++)
    if (h[i]) {
      a.kind[a.nvectors] = i ? SPROJ_INPUT_OFFSET : SPROJ_INPUT_SIGMA;
      v[a.nvectors++] = h[i];
    }
  if (a.nvectors && ((ret = sproj_inputs_check(__func__, &a, v, r)) ||
                     (ret = per_lor_report(__func__, params, r, h[0] != NULL, h[1] != NULL))))
    return ret;
  return tof_new(__func__, tof, params, lors, h[0], h[1], 0);
}

int sproj_tof_set_convention(sproj_tof *tof, int convention)
{
  /* requests held back to merge take their parameters when their tasks are made: those go out now, with the
   * convention they were submitted with */
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!tof)
    return sproj_fail(SPROJ_ERR_NULL, __func__, "tof must not be NULL");
  switch (convention) {
  case SPROJ_TOF_CONVENTION_STARPROJ:
    tof->convention = SPROJ_TOF_ARG_STARPROJ;
    return SPROJ_OK;
  case SPROJ_TOF_CONVENTION_PARALLELPROJ:
    tof->convention = SPROJ_TOF_ARG_PARALLELPROJ;
    return SPROJ_OK;
  }
  return sproj_fail(SPROJ_ERR_INVALID, __func__, "convention = %d is neither SPROJ_TOF_CONVENTION_STARPROJ (%d) nor "
                    "SPROJ_TOF_CONVENTION_PARALLELPROJ (%d)", convention, SPROJ_TOF_CONVENTION_STARPROJ,
                    SPROJ_TOF_CONVENTION_PARALLELPROJ);
}

int sproj_tof_unregister(sproj_tof *tof)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!tof)
    return SPROJ_OK;
  sproj_vec_free(tof->sigma, 0);
  sproj_vec_free(tof->center_offset, 0);
  free(tof);
  sproj_count_object(-1);
  return SPROJ_OK;
}
