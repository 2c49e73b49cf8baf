/* SPDX-License-Identifier: Apache-2.0 */
/* image_layout.cu: the principal-axis copies of the image that large GPU projection tasks work on (layouts in
 * joseph3d_ray.h): filled from the image before a forward projection, zeroed before a back projection and added
 * into the image after it, on StarPU's stream: one thread per voxel, reading and writing the image in its order,
 * the copies' scattered elements through the L2 cache. Also the image shifted by one float that listmode back
 * projections add some of their pairs into (sproj_add_pair), zeroed before and added into the image after. */
#include "config.h"
#include "cuda_pieces.h"

/* Voxel i of the image and its element in copy c. */
__device__ static inline unsigned copy_index(int c, unsigned i, const struct sproj_geom *g)
{
  unsigned n1 = (unsigned)g->n[1], n2 = (unsigned)g->n[2];
  return sproj_layout_index(c, i / (n1 * n2), (i / n2) % n1, i % n2, g);
}

__global__ static void copies_fill_kernel(const float *__restrict__ img, float *__restrict__ copies,
                                          const __grid_constant__ struct sproj_geom g, unsigned nvox, unsigned stride)
{
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < nvox; i += gridDim.x * blockDim.x) {
    float v = img[i];
    copies[copy_index(0, i, &g)] = v;
    copies[stride + copy_index(1, i, &g)] = v;
  }
}

__global__ static void copies_add_kernel(float *__restrict__ img, const float *__restrict__ copies,
                                         const __grid_constant__ struct sproj_geom g, unsigned nvox, unsigned stride)
{
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < nvox; i += gridDim.x * blockDim.x)
    img[i] = (img[i] + copies[copy_index(0, i, &g)]) + copies[stride + copy_index(1, i, &g)];
}

static unsigned grid_for(size_t n)
{
  size_t blocks = (n + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK;
  return blocks > 65535u * 16u ? 65535u * 16u : (unsigned)blocks;
}

float *sproj_cuda_copies(void *buffers[], const struct sproj_proj_arg *arg, unsigned lanes, int back)
{
  if (!arg->layout || lanes != 1u)
    return NULL;
  float *copies = (float *)STARPU_VECTOR_GET_PTR(buffers[sproj_copies_buffer(arg)]);
  const int *n = arg->geom.n;
  size_t nvox = (size_t)n[0] * n[1] * n[2], stride = sproj_layout_copy_stride(nvox);
  cudaStream_t s = starpu_cuda_get_local_stream();
  if (back) {
    cudaError_t err = cudaMemsetAsync(copies, 0, 2 * stride * sizeof(float), s);
    if (err != cudaSuccess)
      STARPU_CUDA_REPORT_ERROR(err);
    return copies;
  }
  copies_fill_kernel<<<grid_for(nvox), SPROJ_CUDA_BLOCK, 0, s>>>((const float *)STARPU_VECTOR_GET_PTR(buffers[0]), copies,
                                                                arg->geom, (unsigned)nvox, (unsigned)stride);
  SPROJ_CUDA_CHECK_LAUNCH();
  return copies;
}

void sproj_cuda_copies_add(float *img, const float *copies, const struct sproj_geom *g)
{
  size_t nvox = (size_t)g->n[0] * g->n[1] * g->n[2];
  copies_add_kernel<<<grid_for(nvox), SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    img, copies, *g, (unsigned)nvox, (unsigned)sproj_layout_copy_stride(nvox));
  SPROJ_CUDA_CHECK_LAUNCH();
}

__global__ static void shift_add_kernel(float *__restrict__ img, const float *__restrict__ shift, unsigned nvox)
{
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < nvox; i += gridDim.x * blockDim.x)
    img[i] += shift[i + 1u];
}

float *sproj_cuda_shift(void *buffers[], const struct sproj_proj_arg *arg)
{
  if (!arg->shift)
    return NULL;
  float *shift = (float *)STARPU_VECTOR_GET_PTR(buffers[sproj_copies_buffer(arg)]);
  size_t nvox = (size_t)arg->geom.n[0] * arg->geom.n[1] * arg->geom.n[2];
  cudaError_t err = cudaMemsetAsync(shift, 0, (nvox + 4) * sizeof(float), starpu_cuda_get_local_stream());
  if (err != cudaSuccess)
    STARPU_CUDA_REPORT_ERROR(err);
  return shift;
}

void sproj_cuda_shift_add(float *img, const float *shift, const struct sproj_geom *g)
{
  size_t nvox = (size_t)g->n[0] * g->n[1] * g->n[2];
  shift_add_kernel<<<grid_for(nvox), SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(img, shift, (unsigned)nvox);
  SPROJ_CUDA_CHECK_LAUNCH();
}
