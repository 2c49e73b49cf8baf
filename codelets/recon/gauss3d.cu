/* SPDX-License-Identifier: Apache-2.0 */
/* gauss3d.cu: CUDA kernels of the separable Gaussian blur (one launch per axis), queued on StarPU's stream. */
#include "config.h"
#include "cuda_pieces.h"
#include "gauss3d.h"

__global__ static void gauss3d_kernel(const float *__restrict__ in, float *__restrict__ out,
                                      const __grid_constant__ struct sproj_gauss_arg gauss, int axis, uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = gauss3d_axis_voxel(in, &gauss, axis, i);
}

/* in -> out along axis 0, out -> scratch along axis 1, scratch -> out along axis 2, in stream order */
extern "C" void sproj_gauss3d_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_gauss_arg *gauss = (const struct sproj_gauss_arg *)cl_arg;
  const float *in = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  float *out = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  float *tmp = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[1]);
  unsigned blocks = sproj_stride_blocks(n);
  if (blocks == 0)
    return;
  cudaStream_t stream = starpu_cuda_get_local_stream();
  gauss3d_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, stream>>>(in, out, *gauss, 0, n);
  gauss3d_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, stream>>>(out, tmp, *gauss, 1, n);
  gauss3d_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, stream>>>(tmp, out, *gauss, 2, n);
  SPROJ_CUDA_CHECK_LAUNCH();
}
