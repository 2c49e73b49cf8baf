/* SPDX-License-Identifier: Apache-2.0 */
/* scanner_lors.cu: CUDA kernel writing the endpoints of a scanner's sinogram LORs (a range of indices, or a list),
 * queued on StarPU's stream. */
#include "config.h"
#include "cuda_pieces.h"
#include "scanner_lors.h"

__global__ static void scanner_lors_kernel(const struct sproj_scanner_table *__restrict__ scanner,
                                           float *__restrict__ xs, float *__restrict__ xe,
                                           const int32_t *__restrict__ lor, int64_t first, uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    scanner_lor_endpoints(scanner, lor ? lor[i] : first + i, xs + 3 * (size_t)i, xe + 3 * (size_t)i);
}

extern "C" void sproj_scanner_lors_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_scanner_lors_arg *arg = (const struct sproj_scanner_lors_arg *)cl_arg;
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[1]);
  unsigned blocks = sproj_stride_blocks(n);
  if (blocks == 0)
    return;
  scanner_lors_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    (const struct sproj_scanner_table *)STARPU_VECTOR_GET_PTR(buffers[0]), (float *)STARPU_VECTOR_GET_PTR(buffers[1]),
    (float *)STARPU_VECTOR_GET_PTR(buffers[2]),
    arg->indexed ? (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[3]) : NULL, arg->first, n);
  SPROJ_CUDA_CHECK_LAUNCH();
}
