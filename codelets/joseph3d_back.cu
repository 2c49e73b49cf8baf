/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_back.cu: CUDA kernel of the non-TOF back projection (one or, for small tasks, several threads per LOR; atomic adds). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_back.h"

__global__ static void joseph3d_back_kernel(float *img, const __grid_constant__ struct sproj_proj_arg a,
                                            const __grid_constant__ struct sproj_piece_table t)
{
  SPROJ_CUDA_THIS_LOR_LANE(t, p, i, lane);
  const float *xs = t.xs[p] + 3 * (size_t)i, *xe = t.xe[p] + 3 * (size_t)i;
  if (t.lanes == 1u)
    joseph3d_back_lor(sproj_out_of(img, &a), &a.geom, xs, xe, t.values[p][i]);
  else
    joseph3d_back_lor_lanes(sproj_out_of(img, &a), &a.geom, xs, xe, t.values[p][i], lane, t.lanes);
}

SPROJ_CUDA_LANES_LAUNCHER(sproj_joseph3d_back_cuda, joseph3d_back_kernel, float *)
