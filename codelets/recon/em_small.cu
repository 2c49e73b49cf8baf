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
static_assert(sizeof(struct small_table) + 2 * sizeof(int) <= 4096, "the table no longer fits in the kernel parameters");

/* cell = max(cell, v) for v >= 0: non-negative floats order as their bits do as integers */
__device__ static inline void small_raise(float *cell, float v)
{
  if (v > *(volatile float *)cell)
    atomicMax((int *)cell, __float_as_int(v));
}

__global__ static void em_small_kernel(const __grid_constant__ struct small_table t, int num_bins, int kind)
{
  int q = sproj_block_piece(t.block_start, t.npieces); /* a block never straddles two pieces */
  unsigned long long k = (unsigned long long)(blockIdx.x - t.block_start[q]) * blockDim.x + threadIdx.x;
  float v = k < t.n[q] ? em_small_value(kind, t.p[q], t.y[q], (size_t)k) : 0.0f;
  if (num_bins == 1) {
    /* one group per piece: the warp's largest first, one atomic per warp */
    for (int off = 16; off > 0; off >>= 1)
      v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    if ((threadIdx.x & 31u) == 0)
      small_raise(t.row[q], v);
  } else if (k < t.n[q]) {
    small_raise(t.row[q] + k % (unsigned long long)num_bins, v);
  }
}

extern "C" void sproj_em_small_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_small_arg *arg = (const struct sproj_small_arg *)cl_arg;
  int bpp = arg->has_p + arg->has_y;
  float *largest = (float *)STARPU_VECTOR_GET_PTR(buffers[bpp * arg->npieces]);
  struct small_table t;
  unsigned blocks = 0;
  t.npieces = arg->npieces;
  for (int q = 0; q < arg->npieces; q++) {
    void **b = buffers + bpp * q;
    t.block_start[q] = blocks;
    t.n[q] = (unsigned long long)STARPU_VECTOR_GET_NX(b[0]) * (unsigned long long)arg->num_bins;
    t.p[q] = arg->has_p ? (const float *)STARPU_VECTOR_GET_PTR(b[0]) : NULL;
    t.y[q] = arg->has_y ? (const float *)STARPU_VECTOR_GET_PTR(b[arg->has_p]) : NULL;
    t.row[q] = largest + (size_t)arg->slot[q] * (size_t)arg->num_bins;
    blocks += (unsigned)((t.n[q] + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK);
  }
  t.block_start[arg->npieces] = blocks;
  if (blocks == 0)
    return;
  em_small_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(t, arg->num_bins, arg->kind);
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
