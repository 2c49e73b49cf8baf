/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_fwd.h: the non-TOF Joseph forward projection of one LOR (host + CUDA). */
#ifndef SPROJ_JOSEPH3D_FWD_H
#define SPROJ_JOSEPH3D_FWD_H

#include "joseph3d_ray.h"

/* Line integral of the image along xs->xe: the sum of the plane samples times the sample length. */
SPROJ_HD float joseph3d_fwd_lor(const float *img, const struct sproj_geom *g, const float *xs, const float *xe)
{
  struct sproj_ray r;
  if (!sproj_ray_setup(xs, xe, g, &r))
    return 0.0f;
  float sum = 0.0f;
  for (int k = r.first; k <= r.last; k++)
    sum += sproj_ray_sample(img, &r, k);
  return sum * r.cf;
}

#endif
