/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_back.cu: CUDA kernel of the TOF listmode back projection (one thread per event, atomic adds; with
 * the shifted image, two float4 atomics per sample: sproj_add_pair). Variant (tof_cuda.h): the edges from a table in
 * shared memory (TABLE). */
#include "config.h"
#include "tof_cuda.h"
#include "joseph3d_tof_lm_back.h"

template <bool TABLE>
__global__ static void tof_lm_back_kernel(float *img, float *shift, const __grid_constant__ struct sproj_proj_arg arg,
                                          const __grid_constant__ struct sproj_piece_table pieces,
                                          const __grid_constant__ struct sproj_tof_table_plan plan)
{
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = NULL;
  if (TABLE) {
    sproj_tof_table_build(&table, &plan, 0u);
    tab = &table;
  }
  SPROJ_CUDA_THIS_LOR(pieces, piece, event);
  float sigma, offset;
  sproj_tof_lor_params(&arg.tof, pieces.sigma[piece], pieces.offset[piece], event, &sigma, &offset);
  const float *xs = pieces.xs[piece] + 3 * (size_t)event, *xe = pieces.xe[piece] + 3 * (size_t)event;
  struct sproj_out out = sproj_out_of(img, &arg);
  out.shift = shift;
  joseph3d_tof_lm_back_lor(out, &arg.geom, xs, xe, &arg.tof, sigma, offset, tab, pieces.bins[piece][event],
                           pieces.values[piece][event]);
}

extern "C" void sproj_joseph3d_tof_lm_back_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table pieces;
  unsigned blocks = sproj_piece_table_fill(&pieces, buffers, arg, 1);
  if (blocks == 0)
    return;
  struct sproj_tof_launch L = sproj_tof_launch_of(arg, 1);
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]), *shift = sproj_cuda_shift(buffers, arg);
  cudaStream_t stream = starpu_cuda_get_local_stream();
  if (L.table)
    tof_lm_back_kernel<true><<<blocks, SPROJ_CUDA_BLOCK, L.table_bytes, stream>>>(img, shift, *arg, pieces, L.plan);
  else
    tof_lm_back_kernel<false><<<blocks, SPROJ_CUDA_BLOCK, 0, stream>>>(img, shift, *arg, pieces, L.plan);
  SPROJ_CUDA_CHECK_LAUNCH();
  if (shift)
    sproj_cuda_shift_add(img, shift, &arg->geom);
}
