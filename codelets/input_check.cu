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

__global__ static void input_init_kernel(struct sproj_input_result *r, int nvectors)
{
  int k = threadIdx.x;
  if (k >= nvectors)
    return;
  r[k].first[0] = r[k].first[1] = SPROJ_INPUT_NONE;
  r[k].value[0] = r[k].value[1] = 0.0f;
  r[k].max_bin = r[k].min_bin = 0;
}

/* Vector blockIdx.y, its elements strided over the blocks along x. */
__global__ static void input_scan_kernel(const __grid_constant__ struct sproj_input_arg a,
                                         const __grid_constant__ struct input_table t, struct sproj_input_result *r)
{
  const int k = blockIdx.y, kind = t.kind[k];
  const void *data = t.data[k];
  const unsigned long long n = t.n[k], stride = (unsigned long long)gridDim.x * blockDim.x;
  int max_bin = 0, min_bin = 0;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v;
    int f = sproj_input_fault(&a, kind, data, i, &v);
    if (f) {
      atomicMin(&r[k].first[f - 1], i);
    } else if (sproj_input_is_bins(kind)) {
      max_bin = max(max_bin, (int)v);
      min_bin = min(min_bin, (int)v);
    }
  }
  if (sproj_input_is_bins(kind)) {
    /* every thread of the block is here (kind is the block's): the warp's largest and smallest, then one atomic
     * each per warp */
    for (int d = 16; d > 0; d >>= 1) {
      max_bin = max(max_bin, __shfl_down_sync(0xffffffffu, max_bin, d));
      min_bin = min(min_bin, __shfl_down_sync(0xffffffffu, min_bin, d));
    }
    if ((threadIdx.x & 31u) == 0 && max_bin > 0)
      atomicMax(&r[k].max_bin, max_bin);
    if ((threadIdx.x & 31u) == 0 && min_bin < 0)
      atomicMin(&r[k].min_bin, min_bin);
  }
}

/* The value of each element found, one thread per vector. */
__global__ static void input_values_kernel(const __grid_constant__ struct sproj_input_arg a,
                                           const __grid_constant__ struct input_table t, struct sproj_input_result *r)
{
  int k = threadIdx.x;
  if (k >= t.nvectors)
    return;
  for (int f = 0; f < 2; f++)
    if (r[k].first[f] != SPROJ_INPUT_NONE) {
      float v;
      sproj_input_fault(&a, t.kind[k], t.data[k], r[k].first[f], &v);
      r[k].value[f] = v;
    }
}

extern "C" void sproj_input_check_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_input_arg *arg = (const struct sproj_input_arg *)cl_arg;
  struct sproj_input_result *res = (struct sproj_input_result *)STARPU_VECTOR_GET_PTR(buffers[0]);
  struct input_table t;
  unsigned long long most = 0;
  memset(&t, 0, sizeof t);
  t.nvectors = arg->nvectors;
  for (int k = 0; k < arg->nvectors; k++) {
    t.kind[k] = arg->kind[k];
    t.data[k] = (const void *)STARPU_VECTOR_GET_PTR(buffers[1 + k]);
    t.n[k] = sproj_input_elements(arg->kind[k], STARPU_VECTOR_GET_NX(buffers[1 + k]));
    if (t.n[k] > most)
      most = t.n[k];
  }
  cudaStream_t stream = starpu_cuda_get_local_stream();
  input_init_kernel<<<1, SPROJ_INPUT_MAX_VECTORS, 0, stream>>>(res, arg->nvectors);
  SPROJ_CUDA_CHECK_LAUNCH();
  unsigned long long blocks = (most + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK;
  if (blocks > 0) {
    dim3 grid((unsigned)(blocks < INPUT_MAX_BLOCKS ? blocks : INPUT_MAX_BLOCKS), (unsigned)arg->nvectors);
    input_scan_kernel<<<grid, SPROJ_CUDA_BLOCK, 0, stream>>>(*arg, t, res);
    SPROJ_CUDA_CHECK_LAUNCH();
    input_values_kernel<<<1, SPROJ_INPUT_MAX_VECTORS, 0, stream>>>(*arg, t, res);
    SPROJ_CUDA_CHECK_LAUNCH();
  }
}
