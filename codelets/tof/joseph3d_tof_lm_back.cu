/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_back.cu: CUDA kernel of the TOF listmode back projection (one thread per event, atomic adds; with
 * the shifted image, two float4 atomics per sample: sproj_add_pair). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_tof_lm_back.h"

__global__ static void tof_lm_back_kernel(float *img, float *shift, const __grid_constant__ struct sproj_proj_arg a,
                                          const __grid_constant__ struct sproj_piece_table t)
{
  SPROJ_CUDA_THIS_LOR(t, p, i);
  float sigma, offset;
  sproj_tof_lor_params(&a.tof, t.sigma[p], t.offset[p], i, &sigma, &offset);
  struct sproj_out out = sproj_out_of(img, &a);
  out.shift = shift;
  joseph3d_tof_lm_back_lor(out, &a.geom, t.xs[p] + 3 * (size_t)i, t.xe[p] + 3 * (size_t)i, &a.tof, sigma, offset,
                           t.bins[p][i], t.values[p][i]);
}

extern "C" void sproj_joseph3d_tof_lm_back_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table t;
  unsigned blocks = sproj_piece_table_fill(&t, buffers, arg, 1);
  if (blocks == 0)
    return;
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]), *shift = sproj_cuda_shift(buffers, arg);
  tof_lm_back_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(img, shift, *arg, t);
  SPROJ_CUDA_CHECK_LAUNCH();
  if (shift)
    sproj_cuda_shift_add(img, shift, &arg->geom);
}
