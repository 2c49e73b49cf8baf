/* SPDX-License-Identifier: Apache-2.0 */
/* fixed_point.h: 64-bit fixed-point accumulation of back projections for the reproducible mode (host + CUDA).
 *
 * Integer additions give the same sum in any order, so contributions converted one by one to fixed point and added
 * in whatever order tasks, threads and devices happen to run give the same bits every time. A contribution v
 * becomes round(v * 2^32) (round to nearest even on host and device alike: llrintf / __float2ll_rn of the same
 * float); sums are kept modulo 2^64 in unsigned arithmetic, so they are exact for voxel totals within +-2^31. */
#ifndef SPROJ_FIXED_POINT_H
#define SPROJ_FIXED_POINT_H

#include <math.h>
#include "host_device.h"

#define SPROJ_FIXED_ONE 4294967296.0f /* 2^32: the value of one unit is 2^-32 */
/* |contribution| at which conversion saturates, far inside the int64 range once scaled */
#define SPROJ_FIXED_MAX_TERM 1073741824.0f /* 2^30 */

SPROJ_HD unsigned long long sproj_to_fixed(float v)
{
  /* NaN clamps to -SPROJ_FIXED_MAX_TERM: defined, and as wrong as the NaN was */
  v = fminf(fmaxf(v, -SPROJ_FIXED_MAX_TERM), SPROJ_FIXED_MAX_TERM) * SPROJ_FIXED_ONE;
#ifdef __CUDA_ARCH__
  return (unsigned long long)__float2ll_rn(v);
#else
  return (unsigned long long)llrintf(v);
#endif
}

SPROJ_HD void sproj_fixed_add(unsigned long long *acc, float v)
{
#ifdef __CUDA_ARCH__
  atomicAdd(acc, sproj_to_fixed(v));
#else
  *acc += sproj_to_fixed(v);
#endif
}

/* The float a fixed-point sum stands for (the sum read as a signed 64-bit count of 2^-32). */
SPROJ_HD float sproj_from_fixed(unsigned long long q)
{
  return (float)((double)(long long)q * (1.0 / (double)SPROJ_FIXED_ONE));
}

#endif
