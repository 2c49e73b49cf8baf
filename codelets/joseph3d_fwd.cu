/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_fwd.cu: CUDA kernel of the non-TOF forward projection (one thread per LOR). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_fwd.h"

__global__ static void joseph3d_fwd_kernel(const float *__restrict__ img, const __grid_constant__ struct sproj_proj_arg a,
                                           const __grid_constant__ struct sproj_piece_table t)
{
  SPROJ_CUDA_THIS_LOR(t, p, i);
  t.values[p][i] = joseph3d_fwd_lor(img, &a.geom, t.xs[p] + 3 * (size_t)i, t.xe[p] + 3 * (size_t)i);
}

SPROJ_CUDA_LAUNCHER(sproj_joseph3d_fwd_cuda, joseph3d_fwd_kernel, const float *)
