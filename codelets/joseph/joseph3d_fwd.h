/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_fwd.h: the non-TOF Joseph forward projection of one LOR (host + CUDA). */
#ifndef SPROJ_JOSEPH3D_FWD_H
#define SPROJ_JOSEPH3D_FWD_H

#include "joseph3d_ray.h"

/* Line integral of img along a prepared ray: the sum of the plane samples times the sample length. */
SPROJ_HD float joseph3d_fwd_ray(const float *img, const struct sproj_ray *r)
{
  float sum = 0.0f;
  for (int k = r->first; k <= r->last; k++)
    sum += sproj_ray_sample(img, r, k);
  return sum * r->cf;
}

/* Line integral of the image along xs->xe. */
SPROJ_HD float joseph3d_fwd_lor(const float *img, const struct sproj_geom *geom, const float *xs, const float *xe)
{
  struct sproj_ray r;
  if (!sproj_ray_setup(xs, xe, geom, &r))
    return 0.0f;
  return joseph3d_fwd_ray(img, &r);
}

#ifdef __CUDACC__
/* The same line integral computed by `lanes` neighbouring threads of a warp (a power of two <= 32; each calls it
 * with its lane): lane j samples planes first+j, first+j+lanes, ..., and the samples are added in plane order by
 * passing them round the group, so the sum takes the very same additions as joseph3d_fwd_lor and the same bits.
 * Every lane returns the value. */
__device__ static inline float joseph3d_fwd_lor_lanes(const float *img, const struct sproj_geom *geom, const float *xs,
                                                      const float *xe, unsigned lane, unsigned lanes)
{
  struct sproj_ray r;
  if (!sproj_ray_setup(xs, xe, geom, &r))
    return 0.0f;
  unsigned group = (threadIdx.x & (SPROJ_WARP - 1u)) & ~(lanes - 1u);
  unsigned mask = (lanes == SPROJ_WARP ? SPROJ_WARP_ALL : ((1u << lanes) - 1u)) << group;
  float sum = 0.0f;
  for (int k0 = r.first; k0 <= r.last; k0 += (int)lanes) {
    int k = k0 + (int)lane;
    float s = k <= r.last ? sproj_ray_sample(img, &r, k) : 0.0f;
    int count = r.last - k0 + 1 < (int)lanes ? r.last - k0 + 1 : (int)lanes;
    for (int j = 0; j < count; j++)
      sum += __shfl_sync(mask, s, j, lanes);
  }
  return sum * r.cf;
}
#endif

#endif
