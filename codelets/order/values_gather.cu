/* SPDX-License-Identifier: Apache-2.0 */
/* values_gather.cu: CUDA kernel of the gather of values into another order (a thread per value), queued on StarPU's
 * stream. */
#include "config.h"
#include "cuda_pieces.h"
#include "values_gather.h"

struct gather_table {
  const float *src[SPROJ_GATHER_MAX_SOURCES];
};
static_assert(sizeof(struct gather_table) + 3 * sizeof(uint64_t) + 2 * sizeof(void *) <= SPROJ_CUDA_PARAM_BYTES,
              "the gather's table no longer fits in the kernel parameters");

__global__ static void values_gather_kernel(float *__restrict__ out, const uint32_t *__restrict__ pos, uint32_t n,
                                            const __grid_constant__ struct gather_table table, uint64_t base,
                                            uint64_t extra)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = sproj_gather_value(table.src, base, extra, pos[i]);
}

extern "C" void sproj_values_gather_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_gather_arg *arg = (const struct sproj_gather_arg *)cl_arg;
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  unsigned blocks = sproj_stride_blocks(n);
  if (blocks == 0)
    return;
  struct gather_table table;
  for (int q = 0; q < arg->nsources; q++)
    table.src[q] = (const float *)STARPU_VECTOR_GET_PTR(buffers[2 + q]);
  values_gather_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    (float *)STARPU_VECTOR_GET_PTR(buffers[0]), (const uint32_t *)STARPU_VECTOR_GET_PTR(buffers[1]), n, table,
    arg->base, arg->extra);
  SPROJ_CUDA_CHECK_LAUNCH();
}
