/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_back.h: the non-TOF Joseph back projection of one LOR, the exact adjoint of joseph3d_fwd.h. */
#ifndef SPROJ_JOSEPH3D_BACK_H
#define SPROJ_JOSEPH3D_BACK_H

#include "joseph3d_ray.h"

/* Adds value times the forward weights of a prepared ray into img. */
SPROJ_HD void joseph3d_back_ray(struct sproj_out img, const struct sproj_ray *r, float value)
{
  float val = r->cf * value;
  for (int k = r->first; k <= r->last; k++)
    sproj_ray_scatter(img, r, k, val);
}

/* Adds value times the forward weights of the LOR xs->xe into the image. */
SPROJ_HD void joseph3d_back_lor(struct sproj_out img, const struct sproj_geom *geom, const float *xs, const float *xe,
                                float value)
{
  struct sproj_ray r;
  if (value == 0.0f || !sproj_ray_setup(xs, xe, geom, &r))
    return;
  joseph3d_back_ray(img, &r, value);
}

#ifdef __CUDACC__
/* The same adds shared by `lanes` threads (each calls it with its lane): lane j scatters planes first+j,
 * first+j+lanes, ... */
__device__ static inline void joseph3d_back_lor_lanes(struct sproj_out img, const struct sproj_geom *geom,
                                                      const float *xs, const float *xe, float value, unsigned lane,
                                                      unsigned lanes)
{
  struct sproj_ray r;
  if (value == 0.0f || !sproj_ray_setup(xs, xe, geom, &r))
    return;
  float val = r.cf * value;
  for (int k = r.first + (int)lane; k <= r.last; k += (int)lanes)
    sproj_ray_scatter(img, &r, k, val);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* One warp's back projection into the principal-axis copies (sproj_ray_scatter_warp): every lane calls it, have = 0
 * for a lane without a LOR. */
__device__ static inline void joseph3d_back_warp(float *img, float *copies, const struct sproj_geom *geom, int have,
                                                 const float *xs, const float *xe, float value, float *win)
{
  struct sproj_ray r;
  int act = have && value != 0.0f && sproj_ray_setup(xs, xe, geom, &r);
  float val = act ? r.cf * value : 0.0f;
  sproj_ray_scatter_warp(img, copies, geom, act, &r, [val](int) { return val; }, win);
}
#endif
#endif

#endif
