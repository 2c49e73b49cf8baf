/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_back.cu: CUDA kernel of the TOF-sinogram back projection (one thread per LOR, atomic adds). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_tof_sino_back.h"

__global__ static void tof_sino_back_kernel(float *img, const __grid_constant__ struct sproj_proj_arg a,
                                            const __grid_constant__ struct sproj_piece_table t)
{
  SPROJ_CUDA_THIS_LOR(t, p, i);
  float sigma, offset;
  sproj_tof_lor_params(&a.tof, t.sigma[p], t.offset[p], i, &sigma, &offset);
  joseph3d_tof_sino_back_lor(sproj_out_of(img, &a), &a.geom, t.xs[p] + 3 * (size_t)i, t.xe[p] + 3 * (size_t)i, &a.tof, sigma, offset,
                             t.values[p] + (size_t)i * a.tof.num_bins);
}

SPROJ_CUDA_LAUNCHER(sproj_joseph3d_tof_sino_back_cuda, tof_sino_back_kernel, float *)
