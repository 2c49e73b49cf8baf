/* SPDX-License-Identifier: Apache-2.0 */
/* input_check.cu: the check codelet on a GPU: per vector, the first element of each fault (an atomic minimum over
 * the element indices), the largest and smallest bins, and the values of the elements found, queued on StarPU's
 * stream. */
#include "config.h"
#include "cuda_pieces.h"
#include "input_check.h"

/* The task's vectors, for the kernels. */
struct input_table {
  int nvectors;
  int kind[SPROJ_INPUT_MAX_VECTORS];
  const void *data[SPROJ_INPUT_MAX_VECTORS];
  unsigned long long n[SPROJ_INPUT_MAX_VECTORS]; /* elements (3 floats per LOR of a coordinate vector) */
};

/* Blocks per vector at most: enough threads to keep every multiprocessor of a large GPU reading. */
#define INPUT_MAX_BLOCKS 1024u

__global__ static void input_init_kernel(struct sproj_input_result *results, int nvectors)
{
  int vec = threadIdx.x;
  if (vec >= nvectors)
    return;
  results[vec].first[0] = results[vec].first[1] = SPROJ_INPUT_NONE;
  results[vec].value[0] = results[vec].value[1] = 0.0f;
  results[vec].max_bin = results[vec].min_bin = 0;
}

/* Vector blockIdx.y, its elements strided over the blocks along x. */
__global__ static void input_scan_kernel(const __grid_constant__ struct sproj_input_arg arg,
                                         const __grid_constant__ struct input_table table,
                                         struct sproj_input_result *results)
{
  const int vec = blockIdx.y, kind = table.kind[vec];
  const void *data = table.data[vec];
  const unsigned long long n = table.n[vec], stride = (unsigned long long)gridDim.x * blockDim.x;
  int max_bin = 0, min_bin = 0;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v;
    int fault = sproj_input_fault(&arg, kind, data, i, &v);
    if (fault) {
      atomicMin(&results[vec].first[fault - 1], i);
    } else if (sproj_input_is_bins(kind)) {
      max_bin = max(max_bin, (int)v);
      min_bin = min(min_bin, (int)v);
    }
  }
  if (sproj_input_is_bins(kind)) {
    /* every thread of the block is here (kind is the block's): the warp's largest and smallest, then one atomic
     * each per warp */
    for (int d = SPROJ_WARP / 2; d > 0; d >>= 1) {
      max_bin = max(max_bin, __shfl_down_sync(SPROJ_WARP_ALL, max_bin, d));
      min_bin = min(min_bin, __shfl_down_sync(SPROJ_WARP_ALL, min_bin, d));
    }
    if ((threadIdx.x & (SPROJ_WARP - 1u)) == 0 && max_bin > 0)
      atomicMax(&results[vec].max_bin, max_bin);
    if ((threadIdx.x & (SPROJ_WARP - 1u)) == 0 && min_bin < 0)
      atomicMin(&results[vec].min_bin, min_bin);
  }
}

/* The value of each element found, one thread per vector. */
__global__ static void input_values_kernel(const __grid_constant__ struct sproj_input_arg arg,
                                           const __grid_constant__ struct input_table table,
                                           struct sproj_input_result *results)
{
  int vec = threadIdx.x;
  if (vec >= table.nvectors)
    return;
  for (int fault = 0; fault < SPROJ_INPUT_FAULTS; fault++)
    if (results[vec].first[fault] != SPROJ_INPUT_NONE) {
      float v;
      sproj_input_fault(&arg, table.kind[vec], table.data[vec], results[vec].first[fault], &v);
      results[vec].value[fault] = v;
    }
}

extern "C" void sproj_input_check_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_input_arg *arg = (const struct sproj_input_arg *)cl_arg;
  struct sproj_input_result *results = (struct sproj_input_result *)STARPU_VECTOR_GET_PTR(buffers[0]);
  struct input_table table;
  unsigned long long most = 0;
  memset(&table, 0, sizeof table);
  table.nvectors = arg->nvectors;
  for (int k = 0; k < arg->nvectors; k++) {
    table.kind[k] = arg->kind[k];
    table.data[k] = (const void *)STARPU_VECTOR_GET_PTR(buffers[1 + k]);
    table.n[k] = sproj_input_elements(arg->kind[k], STARPU_VECTOR_GET_NX(buffers[1 + k]));
    if (table.n[k] > most)
      most = table.n[k];
  }
  cudaStream_t stream = starpu_cuda_get_local_stream();
  input_init_kernel<<<1, SPROJ_INPUT_MAX_VECTORS, 0, stream>>>(results, arg->nvectors);
  SPROJ_CUDA_CHECK_LAUNCH();
  unsigned long long blocks = (most + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK;
  if (blocks > 0) {
    dim3 grid((unsigned)(blocks < INPUT_MAX_BLOCKS ? blocks : INPUT_MAX_BLOCKS), (unsigned)arg->nvectors);
    input_scan_kernel<<<grid, SPROJ_CUDA_BLOCK, 0, stream>>>(*arg, table, results);
    SPROJ_CUDA_CHECK_LAUNCH();
    input_values_kernel<<<1, SPROJ_INPUT_MAX_VECTORS, 0, stream>>>(*arg, table, results);
    SPROJ_CUDA_CHECK_LAUNCH();
  }
}
