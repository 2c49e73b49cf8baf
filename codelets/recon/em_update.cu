/* SPDX-License-Identifier: Apache-2.0 */
/* em_update.cu: CUDA kernel of the image updates (EM, OSMAPOSL, OSSPS), queued on StarPU's stream. */
#include "config.h"
#include "cuda_pieces.h"
#include "em_update.h"

__global__ static void em_update_kernel(float *__restrict__ x, const float *__restrict__ bp,
                                        const float *__restrict__ sens, struct sproj_update_arg arg, uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = update_value(arg.kind, x[i], bp[i], sens[i], arg.sens_factor, arg.num_scale, arg.step, arg.lo, arg.hi);
}

extern "C" void sproj_em_update_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_update_arg *arg = (const struct sproj_update_arg *)cl_arg;
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  unsigned blocks = sproj_stride_blocks(n);
  if (blocks == 0)
    return;
  em_update_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    (float *)STARPU_VECTOR_GET_PTR(buffers[0]), (const float *)STARPU_VECTOR_GET_PTR(buffers[1]),
    (const float *)STARPU_VECTOR_GET_PTR(buffers[2]), *arg, n);
  SPROJ_CUDA_CHECK_LAUNCH();
}
