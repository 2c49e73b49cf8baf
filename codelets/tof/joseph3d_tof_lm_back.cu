/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_back.cu: CUDA kernel of the TOF listmode back projection (one thread per event, atomic adds; with
 * the shifted image, two float4 atomics per sample: sproj_add_pair). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_tof_lm_back.h"

__global__ static void tof_lm_back_kernel(float *img, float *shift, const __grid_constant__ struct sproj_proj_arg arg,
                                          const __grid_constant__ struct sproj_piece_table pieces)
{
  SPROJ_CUDA_THIS_LOR(pieces, piece, event);
  float sigma, offset;
  sproj_tof_lor_params(&arg.tof, pieces.sigma[piece], pieces.offset[piece], event, &sigma, &offset);
  const float *xs = pieces.xs[piece] + 3 * (size_t)event, *xe = pieces.xe[piece] + 3 * (size_t)event;
  struct sproj_out out = sproj_out_of(img, &arg);
  out.shift = shift;
  joseph3d_tof_lm_back_lor(out, &arg.geom, xs, xe, &arg.tof, sigma, offset, pieces.bins[piece][event],
                           pieces.values[piece][event]);
}

extern "C" void sproj_joseph3d_tof_lm_back_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table pieces;
  unsigned blocks = sproj_piece_table_fill(&pieces, buffers, arg, 1);
  if (blocks == 0)
    return;
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]), *shift = sproj_cuda_shift(buffers, arg);
  tof_lm_back_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(img, shift, *arg, pieces);
  SPROJ_CUDA_CHECK_LAUNCH();
  if (shift)
    sproj_cuda_shift_add(img, shift, &arg->geom);
}
