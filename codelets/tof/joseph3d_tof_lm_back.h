/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_back.h: TOF listmode back projection of one event, the adjoint of joseph3d_tof_lm_fwd.h. */
#ifndef SPROJ_JOSEPH3D_TOF_LM_BACK_H
#define SPROJ_JOSEPH3D_TOF_LM_BACK_H

#include "joseph3d_tof_lm.h"

SPROJ_HD void joseph3d_tof_lm_back_lor(struct sproj_out img, const struct sproj_geom *geom, const float *xs,
                                       const float *xe, const struct sproj_tof_arg *tof, float sigma, float offset,
                                       const struct sproj_tof_table *tab, int b, float value)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  int k0, k1;
  if (value == 0.0f || !sproj_tof_lm_setup(xs, xe, geom, tof, sigma, offset, tab, b, &r, &l, &k0, &k1))
    return;
  if (tof->convention == SPROJ_TOF_ARG_PARALLELPROJ) {
    /* the window's sum first, then the planes inside the image (joseph3d_tof_lm_fwd.h) */
    float denom = sproj_tof_pp_denom(sigma), sum = 0.0f;
    for (int k = k0; k <= k1; k++)
      sum += sproj_tof_pp_weight(&l, k, b, tof->bin_width, denom);
    if (!(sum > 0.0f))
      return;
    float v = value * tof->bin_width / sum;
    for (int k = k0 > r.first ? k0 : r.first; k <= k1 && k <= r.last; k++)
      sproj_ray_scatter(img, &r, k, v * sproj_tof_pp_weight(&l, k, b, tof->bin_width, denom));
    return;
  }
  for (int k = k0; k <= k1; k++) {
    float sum, w = sproj_tof_lm_weight(&l, k, b, &sum);
    if (w == 0.0f)
      continue;
    sproj_ray_scatter(img, &r, k, r.cf * ((value / sum) * w));
  }
}

#endif
