/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_back.cu: CUDA kernel of the non-TOF back projection (one thread per LOR, adding into the principal-axis
 * copies, a warp's neighbouring rays combining their adds first, or for small tasks several threads per LOR; atomic
 * adds). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_back.h"

__global__ static void joseph3d_back_kernel(float *img, float *copies,
                                            const __grid_constant__ struct sproj_proj_arg arg,
                                            const __grid_constant__ struct sproj_piece_table pieces)
{
#if __CUDA_ARCH__ >= 900
  if (copies && pieces.windows) {
    __shared__ float4 win[SPROJ_CUDA_BLOCK / SPROJ_WARP][2 * SPROJ_BACK_WINDOW_GROUPS];
    unsigned lor;
    int piece = sproj_piece_of_thread(&pieces, &lor);
    int have = lor < pieces.n[piece];
    size_t at = have ? lor : 0; /* a thread without a LOR reads LOR 0's ends and adds nothing */
    joseph3d_back_warp(img, copies, &arg.geom, have, pieces.xs[piece] + 3 * at, pieces.xe[piece] + 3 * at,
                       have ? pieces.values[piece][at] : 0.0f, (float *)win[threadIdx.x / SPROJ_WARP]);
    return;
  }
#endif
  SPROJ_CUDA_THIS_LOR_LANE(pieces, piece, lor, lane);
  const float *xs = pieces.xs[piece] + 3 * (size_t)lor, *xe = pieces.xe[piece] + 3 * (size_t)lor;
  float value = pieces.values[piece][lor];
  struct sproj_ray r;
  if (pieces.lanes > 1u)
    joseph3d_back_lor_lanes(sproj_out_of(img, &arg), &arg.geom, xs, xe, value, lane, pieces.lanes);
  else if (value != 0.0f && sproj_ray_setup(xs, xe, &arg.geom, &r))
    joseph3d_back_ray(sproj_ray_out(&r, &arg.geom, sproj_out_of(img, &arg), copies), &r, value);
}

SPROJ_CUDA_LANES_LAUNCHER(sproj_joseph3d_back_cuda, joseph3d_back_kernel, float *, 1)
