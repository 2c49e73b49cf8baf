/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_fwd.cu: CUDA kernel of the TOF listmode forward projection (one thread per event; a block first
 * sorts its events by the planes they walk, sproj_block_order, and each thread then takes the event at its place in
 * that order: what each event computes is unchanged). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_tof_lm_fwd.h"

__global__ static void tof_lm_fwd_kernel(const float *__restrict__ img,
                                         const __grid_constant__ struct sproj_proj_arg arg,
                                         const __grid_constant__ struct sproj_piece_table pieces, int sorted)
{
  __shared__ struct sproj_block_order order;
  unsigned event;
  int piece = sproj_piece_of_thread(&pieces, &event);
  float sigma, offset;
  if (sorted) {
    /* the whole block sorts, threads without an event too (they count no planes) */
    unsigned planes = 0;
    if (event < pieces.n[piece]) {
      sproj_tof_lor_params(&arg.tof, pieces.sigma[piece], pieces.offset[piece], event, &sigma, &offset);
      const float *xs = pieces.xs[piece] + 3 * (size_t)event, *xe = pieces.xe[piece] + 3 * (size_t)event;
      planes = sproj_tof_lm_count(xs, xe, &arg.geom, &arg.tof, sigma, offset, pieces.bins[piece][event]);
    }
    sproj_block_order_sort(&order, planes);
    event = event - threadIdx.x + order.at[threadIdx.x];
  }
  if (event >= pieces.n[piece])
    return;
  sproj_tof_lor_params(&arg.tof, pieces.sigma[piece], pieces.offset[piece], event, &sigma, &offset);
  const float *xs = pieces.xs[piece] + 3 * (size_t)event, *xe = pieces.xe[piece] + 3 * (size_t)event;
  pieces.values[piece][event] =
    joseph3d_tof_lm_fwd_lor(img, &arg.geom, xs, xe, &arg.tof, sigma, offset, pieces.bins[piece][event]);
}

extern "C" void sproj_joseph3d_tof_lm_fwd_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table pieces;
  unsigned blocks = sproj_piece_table_fill(&pieces, buffers, arg, 1);
  if (blocks > 0) {
    tof_lm_fwd_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
      (const float *)STARPU_VECTOR_GET_PTR(buffers[0]), *arg, pieces, sproj_cuda_sort());
    SPROJ_CUDA_CHECK_LAUNCH();
  }
}
