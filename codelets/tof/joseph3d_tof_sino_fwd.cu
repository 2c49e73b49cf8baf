/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_fwd.cu: CUDA kernel of the TOF-sinogram forward projection (one thread per LOR).
 *
 * Every sample adds into the bins of its window, so a LOR's bins take hundreds of read-modify-writes. They go to
 * shared memory, one column per thread (bin b of thread x at acc[b * blockDim.x + x]: each thread keeps to its
 * own bank), and the block writes its LORs' bins out once, coalesced. Bin counts whose block does not fit in
 * shared memory accumulate in global memory instead; both orders of the additions are the same, so are the
 * values. */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_tof_sino_fwd.h"

__global__ static void tof_sino_fwd_kernel(const float *__restrict__ img,
                                           const __grid_constant__ struct sproj_proj_arg arg,
                                           const __grid_constant__ struct sproj_piece_table pieces, int in_shared)
{
  extern __shared__ float acc[];
  unsigned lor;
  int piece = sproj_piece_of_thread(&pieces, &lor);
  unsigned num_bins = (unsigned)arg.tof.num_bins;
  if (lor < pieces.n[piece]) {
    float sigma, offset;
    sproj_tof_lor_params(&arg.tof, pieces.sigma[piece], pieces.offset[piece], lor, &sigma, &offset);
    const float *xs = pieces.xs[piece] + 3 * (size_t)lor, *xe = pieces.xe[piece] + 3 * (size_t)lor;
    /* two calls rather than one on a chosen pointer: each knows its memory space, so the shared one compiles to
     * shared-memory loads and stores instead of generic ones */
    if (in_shared)
      joseph3d_tof_sino_fwd_lor(img, &arg.geom, xs, xe, &arg.tof, sigma, offset, acc + threadIdx.x, blockDim.x);
    else
      joseph3d_tof_sino_fwd_lor(img, &arg.geom, xs, xe, &arg.tof, sigma, offset,
                                pieces.values[piece] + (size_t)lor * num_bins, 1);
  }
  if (!in_shared)
    return;
  __syncthreads();
  /* the block's LORs are consecutive in its piece: their bins form one run of the output */
  unsigned first = lor - threadIdx.x;
  unsigned count = min(blockDim.x, pieces.n[piece] - first);
  float *dst = pieces.values[piece] + (size_t)first * num_bins;
  for (unsigned e = threadIdx.x; e < count * num_bins; e += blockDim.x) {
    unsigned slot = e / num_bins;
    dst[e] = acc[(e - slot * num_bins) * blockDim.x + slot];
  }
}

/* Dynamic shared memory a block may have without asking (every architecture we build for). */
#define SHARED_DEFAULT_BYTES (48 * 1024)

/* Shared memory for the bins of a block, or 0 when it cannot have that much. */
static size_t tof_sino_fwd_shared(int num_bins)
{
  size_t bytes = (size_t)num_bins * SPROJ_CUDA_BLOCK * sizeof(float);
  if (bytes <= SHARED_DEFAULT_BYTES)
    return bytes;
  /* more than the default needs the kernel's opt-in; the device refuses what it does not have */
  if (cudaFuncSetAttribute(tof_sino_fwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return bytes;
}

extern "C" void sproj_joseph3d_tof_sino_fwd_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table pieces;
  unsigned blocks = sproj_piece_table_fill(&pieces, buffers, arg, 1);
  if (blocks > 0) {
    size_t shared = tof_sino_fwd_shared(arg->tof.num_bins);
    tof_sino_fwd_kernel<<<blocks, SPROJ_CUDA_BLOCK, shared, starpu_cuda_get_local_stream()>>>(
      (const float *)STARPU_VECTOR_GET_PTR(buffers[0]), *arg, pieces, shared > 0);
    SPROJ_CUDA_CHECK_LAUNCH();
  }
}
