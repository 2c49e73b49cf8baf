/* SPDX-License-Identifier: Apache-2.0 */
/* em_update.h: the update of one voxel: EM's x * bp / sens, OSMAPOSL's x * clamp(num / den), or the separable
 * paraboloidal surrogates' clamp(x + step * num / den) (host + CUDA). */
#ifndef SPROJ_EM_UPDATE_H
#define SPROJ_EM_UPDATE_H
#include "host_device.h"

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

/* OSSPS's step (STIR's OSSPSReconstruction): x + ((num * num_scale) / den) * step, in that order of float operations,
 * then bounded to [lo, hi] (above hi gives hi, below lo gives lo). A voxel whose den is not positive keeps x (STIR
 * makes every denominator positive first), bounded alike. */
SPROJ_HD float sps_update_value(float x, float num, float den, float num_scale, float step, float lo, float hi)
{
  float v = den > 0.0f ? x + ((num * num_scale) / den) * step : x;
  if (v > hi)
    v = hi;
  else if (lo > v)
    v = lo;
  return v;
}

/* Voxel i's update of kind (enum sproj_update_kind, codelets.h), as its arguments say. */
SPROJ_HD float update_value(int kind, float x, float num, float den, float sens_factor, float num_scale, float step,
                            float lo, float hi)
{
  if (kind == 2)
    return sps_update_value(x, num, den, num_scale, step, lo, hi);
  if (kind == 1)
    return osl_update_value(x, num, den, sens_factor, lo, hi);
  return em_update_value(x, num, den, sens_factor);
}
#endif
