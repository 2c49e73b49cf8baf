/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_fwd.cu: CUDA kernel of the non-TOF forward projection (one thread per LOR, reading the principal-axis
 * copies, or for small tasks several threads per LOR). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_fwd.h"

__global__ static void joseph3d_fwd_kernel(const float *__restrict__ img, const float *__restrict__ copies,
                                           const __grid_constant__ struct sproj_proj_arg a,
                                           const __grid_constant__ struct sproj_piece_table t)
{
  SPROJ_CUDA_THIS_LOR_LANE(t, p, i, lane);
  const float *xs = t.xs[p] + 3 * (size_t)i, *xe = t.xe[p] + 3 * (size_t)i;
  if (t.lanes == 1u) {
    struct sproj_ray r;
    float v = 0.0f;
    if (sproj_ray_setup(xs, xe, &a.geom, &r))
      v = joseph3d_fwd_ray(sproj_ray_image(&r, &a.geom, img, copies), &r);
    t.values[p][i] = v;
    return;
  }
  float v = joseph3d_fwd_lor_lanes(img, &a.geom, xs, xe, lane, t.lanes);
  if (lane == 0u)
    t.values[p][i] = v;
}

SPROJ_CUDA_LANES_LAUNCHER(sproj_joseph3d_fwd_cuda, joseph3d_fwd_kernel, const float *, 0)
