/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_fwd.cu: CUDA kernel of the TOF listmode forward projection (one thread per event; a block first
 * sorts its events by the planes they walk, sproj_block_order, and each thread then takes the event at its place in
 * that order: what each event computes is unchanged). Variant (tof_cuda.h): the edges from a table in shared memory
 * (TABLE). */
#include "config.h"
#include "tof_cuda.h"
#include "joseph3d_tof_lm_fwd.h"

template <bool TABLE>
__global__ static void tof_lm_fwd_kernel(const float *__restrict__ img,
                                         const __grid_constant__ struct sproj_proj_arg arg,
                                         const __grid_constant__ struct sproj_piece_table pieces, int sorted,
                                         const __grid_constant__ struct sproj_tof_table_plan plan)
{
  __shared__ struct sproj_block_order order;
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = NULL;
  if (TABLE) {
    sproj_tof_table_build(&table, &plan, 0u);
    tab = &table;
  }
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
    joseph3d_tof_lm_fwd_lor(img, &arg.geom, xs, xe, &arg.tof, sigma, offset, tab, pieces.bins[piece][event]);
}

extern "C" void sproj_joseph3d_tof_lm_fwd_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table pieces;
  unsigned blocks = sproj_piece_table_fill(&pieces, buffers, arg, 1);
  if (blocks == 0)
    return;
  struct sproj_tof_launch L = sproj_tof_launch_of(arg, 1);
  const float *img = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  cudaStream_t stream = starpu_cuda_get_local_stream();
  if (L.table)
    tof_lm_fwd_kernel<true><<<blocks, SPROJ_CUDA_BLOCK, L.table_bytes, stream>>>(img, *arg, pieces, sproj_cuda_sort(),
                                                                                 L.plan);
  else
    tof_lm_fwd_kernel<false><<<blocks, SPROJ_CUDA_BLOCK, 0, stream>>>(img, *arg, pieces, sproj_cuda_sort(), L.plan);
  SPROJ_CUDA_CHECK_LAUNCH();
}
