/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_back.h: the non-TOF Joseph back projection of one LOR, the exact adjoint of joseph3d_fwd.h. */
#ifndef SPROJ_JOSEPH3D_BACK_H
#define SPROJ_JOSEPH3D_BACK_H

#include <limits.h>
#include "joseph3d_ray.h"

/* Adds value times the forward weights of a prepared ray into img. */
SPROJ_HD void joseph3d_back_ray(struct sproj_out img, const struct sproj_ray *r, float value)
{
  float val = r->cf * value;
  for (int k = r->first; k <= r->last; k++)
    sproj_ray_scatter(img, r, k, val);
}

/* Adds value times the forward weights of the LOR xs->xe into the image. */
SPROJ_HD void joseph3d_back_lor(struct sproj_out img, const struct sproj_geom *g, const float *xs, const float *xe, float value)
{
  struct sproj_ray r;
  if (value == 0.0f || !sproj_ray_setup(xs, xe, g, &r))
    return;
  joseph3d_back_ray(img, &r, value);
}

#ifdef __CUDACC__
/* The same adds shared by `lanes` threads (each calls it with its lane): lane j scatters planes first+j,
 * first+j+lanes, ... */
__device__ static inline void joseph3d_back_lor_lanes(struct sproj_out img, const struct sproj_geom *g, const float *xs,
                                                      const float *xe, float value, unsigned lane, unsigned lanes)
{
  struct sproj_ray r;
  if (value == 0.0f || !sproj_ray_setup(xs, xe, g, &r))
    return;
  float val = r.cf * value;
  for (int k = r.first + (int)lane; k <= r.last; k += (int)lanes)
    sproj_ray_scatter(img, &r, k, val);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* Floats per row of a warp's window (joseph3d_back_warp). */
#define SPROJ_BACK_WINDOW 64

/* Back projection of a warp's LORs into the principal-axis copies (u fastest: sproj_ray_to_copy), every lane of the
 * warp calling it (have = 0 for a lane without a LOR). In the LOR order of a sinogram (radial bins fastest) a warp's
 * rays are neighbours of one view, whose corners in a plane lie in the same two rows of a copy, about a voxel
 * apart: two neighbouring rays hit the same voxel. So the warp walks the planes together, and in a plane where every
 * active lane's corners fall within SPROJ_BACK_WINDOW floats of the same rows, the lanes add their weights into
 * win (2 x SPROJ_BACK_WINDOW floats of shared memory, 16-byte aligned, this warp's own), which then goes into the
 * copy as one float4 atomic per non-zero aligned group of four: about a third of the global atomics of one pair
 * per lane and row. Other planes add lane by lane as joseph3d_back_ray does. The values added are the same; their
 * order into a voxel is another. Rays along axis 2 add into img on their own. */
__device__ static inline void joseph3d_back_warp(float *img, float *copies, const struct sproj_geom *g, int have,
                                                 const float *xs, const float *xe, float value, float *win)
{
  const unsigned full = 0xffffffffu, lane = threadIdx.x & 31u;
  struct sproj_ray r;
  size_t off = 0;
  int act = have && value != 0.0f && sproj_ray_setup(xs, xe, g, &r);
  if (act && !sproj_ray_to_copy(&r, g, &off)) {
    struct sproj_out o = {img, 0};
    joseph3d_back_ray(o, &r, value);
    act = 0;
  }
  float val = act ? r.cf * value : 0.0f;
  float *out = copies + off;
  int kmin = __reduce_min_sync(full, act ? r.first : INT_MAX);
  int kmax = __reduce_max_sync(full, act ? r.last : INT_MIN);
  /* the two copies' rows are stride_v apart; a warp mixing the axes never uses its window */
  unsigned sv_min = __reduce_min_sync(full, act ? r.stride_v : UINT_MAX);
  unsigned sv_max = __reduce_max_sync(full, act ? r.stride_v : 0u);
  float4 *win4 = (float4 *)win;
  for (int k = kmin; k <= kmax; k++) {
    int on = act && k >= r.first && k <= r.last;
    struct sproj_corners c;
    float w[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    unsigned e = 0;
    if (on) {
      sproj_ray_corners(&r, k, &c);
      w[0] = val * ((1 - c.wu) * (1 - c.wv));
      w[1] = val * (c.wu * (1 - c.wv));
      w[2] = val * ((1 - c.wu) * c.wv);
      w[3] = val * (c.wu * c.wv);
      e = (unsigned)off + c.idx[0]; /* element of corner (u0, v0) in the copies */
    }
    /* indices wrap as in sproj_ray_corners (a corner at u or v = -1), so only their differences count */
    unsigned emin = __reduce_min_sync(full, on ? e : UINT_MAX);
    unsigned emax = __reduce_max_sync(full, on ? e : 0u);
    if (!__any_sync(full, on))
      continue;
    if (sv_min != sv_max || emax - emin > SPROJ_BACK_WINDOW - 5u) {
      if (on)
        for (int q = 0; q < 4; q++)
          if (c.ok[q])
            atomicAdd(&out[c.idx[q]], w[q]);
      continue;
    }
    /* rows v0 and v1 of the window start at the aligned groups holding the lowest corner of each */
    unsigned b0 = emin & ~3u, b1 = (emin + sv_min) & ~3u;
    win4[lane] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncwarp();
    if (on) {
      unsigned p0 = e - b0, p1 = SPROJ_BACK_WINDOW + e + sv_min - b1;
      if (c.ok[0])
        atomicAdd(&win[p0], w[0]);
      if (c.ok[1])
        atomicAdd(&win[p0 + 1u], w[1]);
      if (c.ok[2])
        atomicAdd(&win[p1], w[2]);
      if (c.ok[3])
        atomicAdd(&win[p1 + 1u], w[3]);
    }
    __syncwarp();
    /* lane l flushes group l % 16 of row l / 16; a non-zero group holds a corner inside the image, so it lies inside
     * the copies' buffer (a multiple of 32 floats, 16-byte aligned) */
    float4 s = win4[lane];
    if (s.x != 0.0f || s.y != 0.0f || s.z != 0.0f || s.w != 0.0f)
      atomicAdd((float4 *)(copies + (unsigned)((lane < 16u ? b0 : b1) + 4u * (lane & 15u))), s);
    __syncwarp();
  }
}
#endif
#endif

#endif
