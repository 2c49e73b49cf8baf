/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_fwd.cu: CUDA kernel of the non-TOF forward projection (one thread per LOR, reading the principal-axis
 * copies, or for small tasks several threads per LOR). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_fwd.h"

__global__ static void joseph3d_fwd_kernel(const float *__restrict__ img, const float *__restrict__ copies,
                                           const __grid_constant__ struct sproj_proj_arg arg,
                                           const __grid_constant__ struct sproj_piece_table pieces)
{
  SPROJ_CUDA_THIS_LOR_LANE(pieces, piece, lor, lane);
  const float *xs = pieces.xs[piece] + 3 * (size_t)lor, *xe = pieces.xe[piece] + 3 * (size_t)lor;
  if (pieces.lanes == 1u) {
    struct sproj_ray r;
    float v = 0.0f;
    if (sproj_ray_setup(xs, xe, &arg.geom, &r))
      v = joseph3d_fwd_ray(sproj_ray_image(&r, &arg.geom, img, copies), &r);
    pieces.values[piece][lor] = v;
    return;
  }
  float v = joseph3d_fwd_lor_lanes(img, &arg.geom, xs, xe, lane, pieces.lanes);
  if (lane == 0u)
    pieces.values[piece][lor] = v;
}

SPROJ_CUDA_LANES_LAUNCHER(sproj_joseph3d_fwd_cuda, joseph3d_fwd_kernel, const float *, 0)
