/* SPDX-License-Identifier: Apache-2.0 */
/* image_reduce.cu: reduction methods of image handles and of fixed-point accumulators, and the flush of an
 * accumulator into its image, on the GPU, queued on StarPU's stream. */
#include "config.h"
#include "cuda_pieces.h"

__global__ static void image_add_kernel(float *__restrict__ dst, const float *__restrict__ src, uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] += src[i];
}

extern "C" void sproj_image_zero_cuda(void *buffers[], void *cl_arg)
{
  (void)cl_arg;
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  size_t bytes = (size_t)STARPU_VECTOR_GET_NX(buffers[0]) * sizeof(float);
  cudaError_t err = cudaMemsetAsync(img, 0, bytes, starpu_cuda_get_local_stream());
  if (err != cudaSuccess)
    STARPU_CUDA_REPORT_ERROR(err);
}

extern "C" void sproj_image_add_cuda(void *buffers[], void *cl_arg)
{
  (void)cl_arg;
  float *dst = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const float *src = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  unsigned blocks = sproj_stride_blocks(n);
  if (blocks == 0)
    return;
  image_add_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(dst, src, n);
  SPROJ_CUDA_CHECK_LAUNCH();
}

__global__ static void fixed_add_kernel(unsigned long long *__restrict__ dst, const unsigned long long *__restrict__ src,
                                        uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    dst[i] += src[i];
}

__global__ static void fixed_flush_kernel(float *__restrict__ img, unsigned long long *__restrict__ acc, uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    img[i] += sproj_from_fixed(acc[i]);
    acc[i] = 0;
  }
}

extern "C" void sproj_fixed_zero_cuda(void *buffers[], void *cl_arg)
{
  (void)cl_arg;
  cudaError_t err = cudaMemsetAsync((void *)STARPU_VECTOR_GET_PTR(buffers[0]), 0,
                                    (size_t)STARPU_VECTOR_GET_NX(buffers[0]) * sizeof(unsigned long long),
                                    starpu_cuda_get_local_stream());
  if (err != cudaSuccess)
    STARPU_CUDA_REPORT_ERROR(err);
}

extern "C" void sproj_fixed_add_cuda(void *buffers[], void *cl_arg)
{
  (void)cl_arg;
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  if (n == 0)
    return;
  fixed_add_kernel<<<sproj_stride_blocks(n), SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    (unsigned long long *)STARPU_VECTOR_GET_PTR(buffers[0]), (const unsigned long long *)STARPU_VECTOR_GET_PTR(buffers[1]),
    n);
  SPROJ_CUDA_CHECK_LAUNCH();
}

extern "C" void sproj_fixed_flush_cuda(void *buffers[], void *cl_arg)
{
  (void)cl_arg;
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  if (n == 0)
    return;
  fixed_flush_kernel<<<sproj_stride_blocks(n), SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    (float *)STARPU_VECTOR_GET_PTR(buffers[0]), (unsigned long long *)STARPU_VECTOR_GET_PTR(buffers[1]), n);
  SPROJ_CUDA_CHECK_LAUNCH();
}
