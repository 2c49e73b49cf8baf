/* SPDX-License-Identifier: Apache-2.0 */
/* image_slabs.cu: an image's slabs on the GPU, queued on StarPU's stream: copies between an image and its slabs, a step
 * of the recursive halving, and the OS-EM update of one slab from the devices' partial back projections of it. */
#include "config.h"
#include "cuda_pieces.h"
#include "image_slabs.h"

/* the partial back projections, by value: a kernel parameter */
struct slab_parts {
  const float *part[SPROJ_MAX_SLABS];
};

__global__ static void slab_update_kernel(float *__restrict__ x, const float *__restrict__ sens,
                                          struct slab_parts parts, int nparts, float sens_factor, uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = slab_update_value(x[i], parts.part, nparts, i, sens[i], sens_factor);
}

__global__ static void slab_pair_kernel(float *__restrict__ half, const float *__restrict__ own,
                                        const float *__restrict__ in, uint32_t n)
{
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    half[i] = slab_pair_sum(own, in, i);
}

/* One device-to-device copy per slab: the copy engine's own path, no kernel. */
static void slab_copies(void *buffers[], const struct sproj_slabs_arg *arg, int to_slabs)
{
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (int s = 0; s < arg->nslabs; s++) {
    float *slab = (float *)STARPU_VECTOR_GET_PTR(buffers[1 + s]);
    size_t bytes = (size_t)STARPU_VECTOR_GET_NX(buffers[1 + s]) * sizeof(float);
    cudaError_t err = cudaMemcpyAsync(to_slabs ? slab : img + arg->first[s], to_slabs ? img + arg->first[s] : slab,
                                      bytes, cudaMemcpyDeviceToDevice, starpu_cuda_get_local_stream());
    if (err != cudaSuccess)
      STARPU_CUDA_REPORT_ERROR(err);
  }
}

extern "C" void sproj_slab_split_cuda(void *buffers[], void *cl_arg)
{
  slab_copies(buffers, (const struct sproj_slabs_arg *)cl_arg, 1);
}

extern "C" void sproj_slab_gather_cuda(void *buffers[], void *cl_arg)
{
  slab_copies(buffers, (const struct sproj_slabs_arg *)cl_arg, 0);
}

extern "C" void sproj_slab_update_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_slab_update_arg *arg = (const struct sproj_slab_update_arg *)cl_arg;
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  unsigned blocks = sproj_stride_blocks(n);
  if (blocks == 0)
    return;
  struct slab_parts parts = {};
  for (int g = 0; g < arg->nparts; g++)
    parts.part[g] = (const float *)STARPU_VECTOR_GET_PTR(buffers[2 + g]);
  slab_update_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    (float *)STARPU_VECTOR_GET_PTR(buffers[0]), (const float *)STARPU_VECTOR_GET_PTR(buffers[1]), parts, arg->nparts,
    arg->sens_factor, n);
  SPROJ_CUDA_CHECK_LAUNCH();
}

extern "C" void sproj_slab_halve_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_slab_halve_arg *arg = (const struct sproj_slab_halve_arg *)cl_arg;
  const float *own = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]) + arg->own_at;
  const float *in = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  for (int h = 0; h < arg->nout; h++) {
    uint32_t at = h ? arg->keep_at : arg->out_at, n = STARPU_VECTOR_GET_NX(buffers[2 + h]);
    unsigned blocks = sproj_stride_blocks(n);
    if (blocks == 0)
      continue;
    slab_pair_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
      (float *)STARPU_VECTOR_GET_PTR(buffers[2 + h]), own + at, in + at, n);
    SPROJ_CUDA_CHECK_LAUNCH();
  }
}
