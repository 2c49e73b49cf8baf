/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_fwd.cu: CUDA kernel of the TOF listmode forward projection (one thread per event). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_tof_lm_fwd.h"

__global__ static void tof_lm_fwd_kernel(const float *__restrict__ img, const __grid_constant__ struct sproj_proj_arg a,
                                         const __grid_constant__ struct sproj_piece_table t)
{
  SPROJ_CUDA_THIS_LOR(t, p, i);
  float sigma, offset;
  sproj_tof_lor_params(&a.tof, t.sigma[p], t.offset[p], i, &sigma, &offset);
  t.values[p][i] = joseph3d_tof_lm_fwd_lor(img, &a.geom, t.xs[p] + 3 * (size_t)i, t.xe[p] + 3 * (size_t)i, &a.tof,
                                           sigma, offset, t.bins[p][i]);
}

SPROJ_CUDA_LAUNCHER(sproj_joseph3d_tof_lm_fwd_cuda, tof_lm_fwd_kernel, const float *)
