/* SPDX-License-Identifier: Apache-2.0 */
/* em_update.h: the multiplicative update of one voxel: EM's x * bp / sens, or OSMAPOSL's x * clamp(num / den) (host +
 * CUDA). */
#ifndef SPROJ_EM_UPDATE_H
#define SPROJ_EM_UPDATE_H
#include "joseph3d_ray.h"

/* New value of a voxel from its back-projected ratio bp and its sensitivity sens (scaled by sens_factor, e.g. 1/S
 * when one full sensitivity serves S subsets). Voxels no LOR of the subset sees (sens 0) are set to 0, and the
 * result is never negative (nor NaN). */
SPROJ_HD float em_update_value(float x, float bp, float sens, float sens_factor)
{
  float s = sens * sens_factor;
  if (!(s > 0.0f))
    return 0.0f;
  float v = (x * bp) / s;
  return v > 0.0f ? v : 0.0f;
}

/* x times the relative change num / (den * den_factor) bounded to [lo, hi] (as STIR's OSMAPOSL bounds it: above hi
 * gives hi, below lo gives lo, NaN stays). A voxel whose den is 0 gets 0: no LOR of the subset reaches it (num is 0
 * too), or it lies outside the reconstructed cylinder. */
SPROJ_HD float osl_update_value(float x, float num, float den, float den_factor, float lo, float hi)
{
  float d = den * den_factor;
  if (d == 0.0f)
    return 0.0f;
  float u = num / d;
  if (u > hi)
    u = hi;
  else if (lo > u)
    u = lo;
  return x * u;
}
#endif
