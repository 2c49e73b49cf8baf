/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_fwd.h: TOF listmode forward projection of one event (host + CUDA). */
#ifndef SPROJ_JOSEPH3D_TOF_LM_FWD_H
#define SPROJ_JOSEPH3D_TOF_LM_FWD_H

#include "joseph3d_tof_lm.h"

/* A prepared event's value from its planes k0 .. k1: its samples from src, the image (paired 0) or the ray's pair
 * layout (paired 1, sproj_ray_pairs; a constant after inlining, so that each kind compiles loops of its own). */
SPROJ_HD float sproj_tof_lm_fwd_walk(const float *src, int paired, const struct sproj_ray *r,
                                     const struct sproj_tof_line *l, const struct sproj_tof_arg *tof, float sigma,
                                     int k0, int k1, int b)
{
  float out = 0.0f;
  if (tof->convention == SPROJ_TOF_ARG_PARALLELPROJ) {
    /* one pass: every plane of the window into the sum, those inside the image into the value */
    float denom = sproj_tof_pp_denom(sigma), sum = 0.0f;
    for (int k = k0; k <= k1; k++) {
      float w = sproj_tof_pp_weight(l, k, b, tof->bin_width, denom);
      sum += w;
      if (k >= r->first && k <= r->last)
        out += w * (paired ? sproj_ray_sample_pairs(src, r, k) : sproj_ray_sample(src, r, k));
    }
    return sum > 0.0f ? out * tof->bin_width / sum : 0.0f;
  }
  for (int k = k0; k <= k1; k++) {
    float sum, w = sproj_tof_lm_weight(l, k, b, &sum);
    if (w == 0.0f)
      continue;
    float v = r->cf * (paired ? sproj_ray_sample_pairs(src, r, k) : sproj_ray_sample(src, r, k));
    out += (v / sum) * w;
  }
  return out;
}

/* The value TOF-sinogram bin b of the event's LOR would get (libparallelproj's convention: its listmode value), its
 * samples from the image, or with pairs (not NULL: both pair layouts of the image, joseph3d_ray.h) from the layout of
 * its principal axis: the same bits. */
SPROJ_HD float joseph3d_tof_lm_fwd_event(const float *img, const float *pairs, const struct sproj_geom *geom,
                                         const float *xs, const float *xe, const struct sproj_tof_arg *tof, float sigma,
                                         float offset, const struct sproj_tof_table *tab, int b)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  int k0, k1;
  if (!sproj_tof_lm_setup(xs, xe, geom, tof, sigma, offset, tab, b, &r, &l, &k0, &k1))
    return 0.0f;
  const float *p = sproj_ray_pairs(pairs, &r, geom);
  return p ? sproj_tof_lm_fwd_walk(p, 1, &r, &l, tof, sigma, k0, k1, b)
           : sproj_tof_lm_fwd_walk(img, 0, &r, &l, tof, sigma, k0, k1, b);
}

/* The same from the image. */
SPROJ_HD float joseph3d_tof_lm_fwd_lor(const float *img, const struct sproj_geom *geom, const float *xs,
                                       const float *xe, const struct sproj_tof_arg *tof, float sigma, float offset,
                                       const struct sproj_tof_table *tab, int b)
{
  return joseph3d_tof_lm_fwd_event(img, NULL, geom, xs, xe, tof, sigma, offset, tab, b);
}

#endif
