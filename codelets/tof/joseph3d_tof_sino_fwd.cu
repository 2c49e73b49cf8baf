/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_fwd.cu: CUDA kernel of the TOF-sinogram forward projection (one thread per LOR).
 *
 * Every sample adds into the bins of its window, so a LOR's bins take hundreds of read-modify-writes. They go to
 * shared memory, one column per thread (bin b of thread x at acc[b * blockDim.x + x]: each thread keeps to its
 * own bank), and each warp writes its LORs' bins out once, coalesced, when its own lanes are done (not waiting at a
 * barrier for the block's other warps). Bin counts whose block does not fit in
 * shared memory accumulate in global memory instead; both orders of the additions are the same, so are the
 * values. Variants (tof_cuda.h): the edges from a table in shared memory after the bins (TABLE), the bins of the
 * current window in registers, written into the column once each (SLIDE: the same values), and the samples from the
 * image's pair layouts (PAIRS, joseph3d_ray.h: the same values). */
#include "config.h"
#include "tof_cuda.h"
#include "joseph3d_tof_sino_fwd.h"

template <bool TABLE, bool SLIDE, bool PAIRS>
__global__ static void SPROJ_TOF_SINO_FWD_BOUNDS
tof_sino_fwd_kernel(const float *__restrict__ img, const float *__restrict__ pairs,
                    const __grid_constant__ struct sproj_proj_arg arg,
                    const __grid_constant__ struct sproj_piece_table pieces, int in_shared,
                    const __grid_constant__ struct sproj_tof_table_plan plan)
{
  extern __shared__ float acc[];
  unsigned lor;
  int piece = sproj_piece_of_thread(&pieces, &lor);
  unsigned num_bins = (unsigned)arg.tof.num_bins;
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = NULL;
  if (TABLE) {
    sproj_tof_table_build(&table, &plan, in_shared ? num_bins * blockDim.x : 0u);
    tab = &table;
  }
  if (lor < pieces.n[piece]) {
    float sigma, offset;
    sproj_tof_lor_params(&arg.tof, pieces.sigma[piece], pieces.offset[piece], lor, &sigma, &offset);
    const float *xs = pieces.xs[piece] + 3 * (size_t)lor, *xe = pieces.xe[piece] + 3 * (size_t)lor;
    /* two calls rather than one on a chosen pointer: each knows its memory space, so the shared one compiles to
     * shared-memory loads and stores instead of generic ones */
    float *global = pieces.values[piece] + (size_t)lor * num_bins;
    const float *pr = PAIRS ? pairs : NULL;
    int width = SLIDE ? SPROJ_TOF_SLIDE_NARROW : 0;
    if (in_shared)
      joseph3d_tof_sino_fwd_from(img, pr, &arg.geom, xs, xe, &arg.tof, sigma, offset, tab, acc + threadIdx.x,
                                 blockDim.x, width);
    else
      joseph3d_tof_sino_fwd_from(img, pr, &arg.geom, xs, xe, &arg.tof, sigma, offset, tab, global, 1, width);
  }
  if (!in_shared)
    return;
  /* each warp writes its own LORs' bins once its lanes are done, without waiting for the block's other warps: a
   * warp's LORs are consecutive in the block's piece, so their bins form one run of the output */
  __syncwarp();
  unsigned lane = threadIdx.x & (SPROJ_WARP - 1u), base = threadIdx.x - lane, first = lor - lane;
  if (first >= pieces.n[piece])
    return;
  unsigned count = min((unsigned)SPROJ_WARP, pieces.n[piece] - first);
  float *dst = pieces.values[piece] + (size_t)first * num_bins;
  for (unsigned e = lane; e < count * num_bins; e += SPROJ_WARP) {
    unsigned slot = e / num_bins;
    dst[e] = acc[(e - slot * num_bins) * blockDim.x + base + slot];
  }
}

/* Launches one instance: the bins in shared memory when the block's bins and table fit there, else the bins in
 * global memory (and the table, when the device refuses even that, off: erff gives the values within its rounding). */
template <bool TABLE, bool SLIDE, bool PAIRS>
static void tof_sino_fwd_launch(void *buffers[], const float *pairs, const struct sproj_proj_arg *arg,
                                const struct sproj_tof_launch *L, const struct sproj_piece_table *pieces,
                                unsigned blocks)
{
  size_t bins = (size_t)arg->tof.num_bins * SPROJ_TOF_SINO_BLOCK * sizeof(float);
  int in_shared = sproj_cuda_shared_ok(tof_sino_fwd_kernel<TABLE, SLIDE, PAIRS>, bins + L->table_bytes);
  size_t shared = (in_shared ? bins : 0) + L->table_bytes;
  if constexpr (TABLE) {
    if (!in_shared && !sproj_cuda_shared_ok(tof_sino_fwd_kernel<TABLE, SLIDE, PAIRS>, shared)) {
      struct sproj_tof_launch erff = *L;
      erff.table = 0;
      erff.table_bytes = 0;
      tof_sino_fwd_launch<false, SLIDE, PAIRS>(buffers, pairs, arg, &erff, pieces, blocks);
      return;
    }
  }
  tof_sino_fwd_kernel<TABLE, SLIDE, PAIRS><<<blocks, SPROJ_TOF_SINO_BLOCK, shared, starpu_cuda_get_local_stream()>>>(
    (const float *)STARPU_VECTOR_GET_PTR(buffers[0]), pairs, *arg, *pieces, in_shared, L->plan);
  SPROJ_CUDA_CHECK_LAUNCH();
}

template <bool PAIRS>
static void pick(void *buffers[], const float *pairs, const struct sproj_proj_arg *arg, const struct sproj_tof_launch *L,
                 const struct sproj_piece_table *pieces, unsigned blocks)
{
  if (L->table)
    L->slide ? tof_sino_fwd_launch<true, true, PAIRS>(buffers, pairs, arg, L, pieces, blocks)
             : tof_sino_fwd_launch<true, false, PAIRS>(buffers, pairs, arg, L, pieces, blocks);
  else
    L->slide ? tof_sino_fwd_launch<false, true, PAIRS>(buffers, pairs, arg, L, pieces, blocks)
             : tof_sino_fwd_launch<false, false, PAIRS>(buffers, pairs, arg, L, pieces, blocks);
}

extern "C" void sproj_joseph3d_tof_sino_fwd_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table pieces;
  unsigned blocks = sproj_piece_table_fill_blocks(&pieces, buffers, arg, 1, SPROJ_TOF_SINO_BLOCK);
  if (blocks == 0)
    return;
  struct sproj_tof_launch L = sproj_tof_launch_of(arg, 0);
  const float *pairs = sproj_cuda_pairs(buffers, arg);
  if (pairs)
    pick<true>(buffers, pairs, arg, &L, &pieces, blocks);
  else
    pick<false>(buffers, NULL, arg, &L, &pieces, blocks);
}
