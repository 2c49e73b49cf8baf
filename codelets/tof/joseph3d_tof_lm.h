/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm.h: the planes of a LOR that can reach TOF bin b, shared by the listmode projectors. */
#ifndef SPROJ_JOSEPH3D_TOF_LM_H
#define SPROJ_JOSEPH3D_TOF_LM_H

#include "joseph3d_ray.h"
#include "tof.h"

/* Planes k0..k1 (within the ray's planes) whose window may hold bin b: |k*at + bt - b| <= max_diff + 1. Every
 * plane whose window does hold b lies in this range; each plane is still checked exactly. */
SPROJ_HD void sproj_tof_lm_planes(const struct sproj_ray *r, const struct sproj_tof_line *l, int b, int *k0, int *k1)
{
  float reach = l->max_diff + 1.0f;
  float lo = (b - reach - l->bt) / l->at, hi = (b + reach - l->bt) / l->at;
  if (lo > hi) {
    float tmp = lo;
    lo = hi;
    hi = tmp;
  }
  /* both bounds into [first - 1, last + 1], infinities and NaN (at == 0) included, before converting to int */
  lo = fminf(fmaxf(lo, (float)r->first - 1.0f), (float)r->last + 1.0f);
  hi = fmaxf(fminf(hi, (float)r->last + 1.0f), (float)r->first - 1.0f);
  *k0 = (int)floorf(lo);
  *k1 = (int)ceilf(hi);
  if (*k0 < r->first)
    *k0 = r->first;
  if (*k1 > r->last)
    *k1 = r->last;
}

/* ---- libparallelproj's listmode projection (convention SPROJ_TOF_ARG_PARALLELPROJ) ----------------------------
 * An event in bin b weighs its LOR's sample in plane k by the Gaussian integrated over one bin at the sample's
 * distance from the centre of bin b, and is normalised by the sum of these weights over every plane within
 * num_sigmas sigma of that centre, planes outside the image included (they count in the sum, not in the value),
 * times the bin width. This is what libparallelproj 2.x's listmode projectors compute, in the same float operations
 * and order, so that its windows end at the same planes; its TOF sinogram's normalisation is per sample over bins,
 * so there an event is not its LOR's sinogram bin. */

/* Planes beyond the image's that the sum counts on either side, at most: a window that reaches further (num_sigmas
 * sigma across thousands of voxel planes) describes no scanner, and the bound keeps an event's work finite. */
#define SPROJ_TOF_PP_MAX_OUTSIDE 16384

/* Planes k0..k1 within num_sigmas sigma of bin b's centre, as libparallelproj rounds them (then bounded). */
SPROJ_HD void sproj_tof_pp_planes(const struct sproj_ray *r, const struct sproj_tof_line *l, const float *xs,
                                  const float *xe, const struct sproj_tof_arg *tof, float sigma, int b, int *k0,
                                  int *k1)
{
  float sign = xe[r->axis] >= xs[r->axis] ? 1.0f : -1.0f;
  float reach = tof->num_sigmas * sigma / tof->bin_width;
  float lo = (((float)b - sign * reach) - l->bt) / l->at, hi = (((float)b + sign * reach) - l->bt) / l->at;
  /* into the bound before converting to int (NaN included) */
  float kmin = (float)(r->first - SPROJ_TOF_PP_MAX_OUTSIDE), kmax = (float)(r->last + SPROJ_TOF_PP_MAX_OUTSIDE);
  lo = fminf(fmaxf(lo, kmin), kmax);
  hi = fmaxf(fminf(hi, kmax), kmin);
  *k0 = (int)floorf(lo);
  *k1 = (int)ceilf(hi);
}

/* Weight of the sample in plane k for bin b; denom = sqrt(2) sigma. */
SPROJ_HD float sproj_tof_pp_weight(const struct sproj_tof_line *l, int k, int b, float bin_width, float denom)
{
  /* the clamp keeps far samples (weight 0) and NaN finite, as sproj_tof_sample_at does */
  float it_f = fminf(fmaxf(k * l->at + l->bt, -SPROJ_TOF_MAX_COORD), SPROJ_TOF_MAX_COORD);
  float dist = fabsf(it_f - (float)b) * bin_width;
  return 0.5f * (erff((dist + 0.5f * bin_width) / denom) - erff((dist - 0.5f * bin_width) / denom));
}

SPROJ_HD float sproj_tof_pp_denom(float sigma)
{
  return SPROJ_SQRT2 * sigma;
}

/* The ray and TOF line of an event in bin b and the planes k0..k1 the projectors walk for it: 0 when its LOR
 * samples no plane (as sproj_ray_setup). */
SPROJ_HD int sproj_tof_lm_setup(const float *xs, const float *xe, const struct sproj_geom *geom,
                                const struct sproj_tof_arg *tof, float sigma, float offset,
                                const struct sproj_tof_table *tab, int b, struct sproj_ray *r, struct sproj_tof_line *l,
                                int *k0, int *k1)
{
  if (!sproj_tof_ray_setup(xs, xe, geom, tof, sigma, offset, tab, r, l))
    return 0;
  if (tof->convention == SPROJ_TOF_ARG_PARALLELPROJ)
    sproj_tof_pp_planes(r, l, xs, xe, tof, sigma, b, k0, k1);
  else
    sproj_tof_lm_planes(r, l, b, k0, k1);
  return 1;
}

/* How many planes the projectors walk for an event in bin b (0 when its LOR samples nothing). */
SPROJ_HD unsigned sproj_tof_lm_count(const float *xs, const float *xe, const struct sproj_geom *geom,
                                     const struct sproj_tof_arg *tof, float sigma, float offset, int b)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  int k0, k1;
  if (!sproj_tof_lm_setup(xs, xe, geom, tof, sigma, offset, NULL, b, &r, &l, &k0, &k1))
    return 0;
  return k1 >= k0 ? (unsigned)(k1 - k0 + 1) : 0u;
}

/* Normalised weight of bin b for the sample at it_f (0 if b is outside its window): the same float operations as
 * the sinogram projectors, so that an event and sinogram bin b of its LOR get bit-identical values. */
SPROJ_HD float sproj_tof_lm_weight(const struct sproj_tof_line *l, int k, int b, float *sum)
{
  struct sproj_tof_sample s;
  sproj_tof_sample_at(l, k, b + 1, &s);
  int j = b - s.it_min;
  if (j < 0 || j >= s.n)
    return 0.0f;
  *sum = sproj_tof_sample_sum(&s, l);
  return 0.5f * (sproj_tof_sample_edge(&s, l, j) - sproj_tof_sample_edge(&s, l, j + 1));
}

#endif
