/* SPDX-License-Identifier: Apache-2.0 */
/* em_small.cu: CUDA kernels of STIR's small-value rule: the largest numerators of pieces of LORs (one thread per
 * value, an atomic maximum per group and TOF bin), and the reduction of two buffers of them; on StarPU's stream. */
#include "config.h"
#include "cuda_pieces.h"
#include "em_small.h"

struct small_table {
  int npieces;
  unsigned block_start[SPROJ_MAX_PIECES + 1];
  unsigned long long n[SPROJ_MAX_PIECES]; /* values (LORs x bins) */
  const float *p[SPROJ_MAX_PIECES], *y[SPROJ_MAX_PIECES];
  float *row[SPROJ_MAX_PIECES]; /* the piece's group: num_bins largest numerators */
};
static_assert(sizeof(struct small_table) + 2 * sizeof(int) <= SPROJ_CUDA_PARAM_BYTES,
              "the table no longer fits in the kernel parameters");

/* cell = max(cell, v) for v >= 0: non-negative floats order as their bits do as integers */
__device__ static inline void small_raise(float *cell, float v)
{
  if (v > *(volatile float *)cell)
    atomicMax((int *)cell, __float_as_int(v));
}

__global__ static void em_small_kernel(const __grid_constant__ struct small_table table, int num_bins, int kind)
{
  int piece = sproj_block_piece(table.block_start, table.npieces); /* a block never straddles two pieces */
  unsigned long long k = (unsigned long long)(blockIdx.x - table.block_start[piece]) * blockDim.x + threadIdx.x;
  float v = k < table.n[piece] ? em_small_value(kind, table.p[piece], table.y[piece], (size_t)k) : 0.0f;
  if (num_bins == 1) {
    /* one group per piece: the warp's largest first, one atomic per warp */
    for (int off = SPROJ_WARP / 2; off > 0; off >>= 1)
      v = fmaxf(v, __shfl_xor_sync(SPROJ_WARP_ALL, v, off));
    if ((threadIdx.x & (SPROJ_WARP - 1u)) == 0)
      small_raise(table.row[piece], v);
  } else if (k < table.n[piece]) {
    small_raise(table.row[piece] + k % (unsigned long long)num_bins, v);
  }
}

extern "C" void sproj_em_small_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_small_arg *arg = (const struct sproj_small_arg *)cl_arg;
  int per_piece = arg->has_p + arg->has_y;
  float *largest = (float *)STARPU_VECTOR_GET_PTR(buffers[per_piece * arg->npieces]);
  struct small_table table;
  unsigned blocks = 0;
  table.npieces = arg->npieces;
  for (int q = 0; q < arg->npieces; q++) {
    void **piece_buffers = buffers + per_piece * q;
    table.block_start[q] = blocks;
    table.n[q] = (unsigned long long)STARPU_VECTOR_GET_NX(piece_buffers[0]) * (unsigned long long)arg->num_bins;
    table.p[q] = arg->has_p ? (const float *)STARPU_VECTOR_GET_PTR(piece_buffers[0]) : NULL;
    table.y[q] = arg->has_y ? (const float *)STARPU_VECTOR_GET_PTR(piece_buffers[arg->has_p]) : NULL;
    table.row[q] = largest + (size_t)arg->slot[q] * (size_t)arg->num_bins;
    blocks += (unsigned)((table.n[q] + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK);
  }
  table.block_start[arg->npieces] = blocks;
  if (blocks == 0)
    return;
  em_small_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(table, arg->num_bins, arg->kind);
  SPROJ_CUDA_CHECK_LAUNCH();
}

__global__ static void vec_max_kernel(float *__restrict__ dst, const float *__restrict__ src, uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] = fmaxf(dst[i], src[i]);
}

extern "C" void sproj_vec_max_cuda(void *buffers[], void *cl_arg)
{
  (void)cl_arg;
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  if (n == 0)
    return;
  vec_max_kernel<<<sproj_stride_blocks(n), SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    (float *)STARPU_VECTOR_GET_PTR(buffers[0]), (const float *)STARPU_VECTOR_GET_PTR(buffers[1]), n);
  SPROJ_CUDA_CHECK_LAUNCH();
}
