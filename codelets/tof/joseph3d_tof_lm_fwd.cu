/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_fwd.cu: CUDA kernel of the TOF listmode forward projection (one thread per event; a block first
 * sorts its events by the planes they walk, sproj_block_order, and each thread then takes the event at its place in
 * that order: what each event computes is unchanged). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_tof_lm_fwd.h"

__global__ static void tof_lm_fwd_kernel(const float *__restrict__ img, const __grid_constant__ struct sproj_proj_arg a,
                                         const __grid_constant__ struct sproj_piece_table t, int sorted)
{
  __shared__ struct sproj_block_order o;
  unsigned i;
  int p = sproj_piece_of_thread(&t, &i);
  float sigma, offset;
  if (sorted) {
    /* the whole block sorts, threads without an event too (they count no planes) */
    unsigned planes = 0;
    if (i < t.n[p]) {
      sproj_tof_lor_params(&a.tof, t.sigma[p], t.offset[p], i, &sigma, &offset);
      planes = sproj_tof_lm_count(t.xs[p] + 3 * (size_t)i, t.xe[p] + 3 * (size_t)i, &a.geom, &a.tof, sigma, offset,
                                  t.bins[p][i]);
    }
    sproj_block_order_sort(&o, planes);
    i = i - threadIdx.x + o.at[threadIdx.x];
  }
  if (i >= t.n[p])
    return;
  sproj_tof_lor_params(&a.tof, t.sigma[p], t.offset[p], i, &sigma, &offset);
  t.values[p][i] = joseph3d_tof_lm_fwd_lor(img, &a.geom, t.xs[p] + 3 * (size_t)i, t.xe[p] + 3 * (size_t)i, &a.tof,
                                           sigma, offset, t.bins[p][i]);
}

extern "C" void sproj_joseph3d_tof_lm_fwd_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table t;
  unsigned blocks = sproj_piece_table_fill(&t, buffers, arg, 1);
  if (blocks > 0) {
    tof_lm_fwd_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
      (const float *)STARPU_VECTOR_GET_PTR(buffers[0]), *arg, t, sproj_cuda_sort());
    SPROJ_CUDA_CHECK_LAUNCH();
  }
}
