/* SPDX-License-Identifier: Apache-2.0 */
/* image_axpy.cu: CUDA kernel of y <- y + alpha * x over two images, queued on StarPU's stream. */
#include "config.h"
#include "cuda_pieces.h"
#include "image_axpy.h"

__global__ static void image_axpy_kernel(float *__restrict__ y, const float *__restrict__ x, float alpha, uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = image_axpy_value(y[i], x[i], alpha);
}

extern "C" void sproj_image_axpy_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_axpy_arg *arg = (const struct sproj_axpy_arg *)cl_arg;
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  unsigned blocks = sproj_stride_blocks(n);
  if (blocks == 0)
    return;
  image_axpy_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    (float *)STARPU_VECTOR_GET_PTR(buffers[0]), (const float *)STARPU_VECTOR_GET_PTR(buffers[1]), arg->alpha, n);
  SPROJ_CUDA_CHECK_LAUNCH();
}
