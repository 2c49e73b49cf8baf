/* SPDX-License-Identifier: Apache-2.0 */
/* em_update.h: the multiplicative EM update of one voxel, x * bp / sens (host + CUDA). */
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
#endif
