/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_back.cu: CUDA kernel of the TOF-sinogram back projection (one thread per LOR, atomic adds). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_tof_sino_back.h"

__global__ static void tof_sino_back_kernel(float *img, const __grid_constant__ struct sproj_proj_arg arg,
                                            const __grid_constant__ struct sproj_piece_table pieces)
{
  SPROJ_CUDA_THIS_LOR(pieces, piece, lor);
  float sigma, offset;
  sproj_tof_lor_params(&arg.tof, pieces.sigma[piece], pieces.offset[piece], lor, &sigma, &offset);
  const float *xs = pieces.xs[piece] + 3 * (size_t)lor, *xe = pieces.xe[piece] + 3 * (size_t)lor;
  joseph3d_tof_sino_back_lor(sproj_out_of(img, &arg), &arg.geom, xs, xe, &arg.tof, sigma, offset,
                             pieces.values[piece] + (size_t)lor * arg.tof.num_bins);
}

SPROJ_CUDA_LAUNCHER(sproj_joseph3d_tof_sino_back_cuda, tof_sino_back_kernel, float *)
