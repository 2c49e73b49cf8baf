/* SPDX-License-Identifier: Apache-2.0 */
/* image_layout.cu: the principal-axis copies of the image that large GPU projection tasks work on (layouts in
 * joseph3d_ray.h): filled from the image before a forward projection (tiled transposes, coalesced on both sides),
 * zeroed before a back projection and added into the image after it, on StarPU's stream. Also the image shifted by
 * one float that listmode back projections add some of their pairs into (sproj_add_pair), zeroed before and added
 * into the image after; and the pair layouts that TOF forward projections sample with the variants pairs (listmode)
 * and sinopairs (sinogram). */
#include "config.h"
#include "cuda_pieces.h"

/* Both copies are transposes of the image seen as matrices: copy 0 ([n0][n2][n1]) transposes each [n1][n2] slab,
 * copy 1 ([n1][n2][n0]) the [n0][n1 * n2] whole. */
#define TILE 32
#define TILE_ROWS 8

/* The element of copy `copy` (0 or 1) that holds the image's element `voxel`. */
__device__ static inline unsigned copy_index(int copy, unsigned voxel, const struct sproj_geom *geom)
{
  unsigned n1 = (unsigned)geom->n[1], n2 = (unsigned)geom->n[2];
  return sproj_layout_index(copy, voxel / (n1 * n2), (voxel / n2) % n1, voxel % n2, geom);
}

/* After a back projection: img = (img + copy 0) + copy 1, one thread per voxel in the image's order. The copies were
 * just written by the task and are read from the L2; as two tiled transposes (one pass over the image per copy)
 * this was 1% slower (doc/benchmarks.md). */
__global__ static void copies_add_kernel(float *__restrict__ img, const float *__restrict__ copies,
                                         const __grid_constant__ struct sproj_geom geom, unsigned nvox, unsigned stride)
{
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < nvox; i += gridDim.x * blockDim.x)
    img[i] = (img[i] + copies[copy_index(0, i, &geom)]) + copies[stride + copy_index(1, i, &geom)];
}

/* dst[b][c][r] = src[b][r][c] for b < batches, r < rows, c < cols (row-major matrices, rows * cols apart),
 * through a shared-memory tile, so that a warp reads 32 neighbouring floats of src and writes 32 of dst. */
__global__ static void transpose_kernel(const float *__restrict__ src, float *__restrict__ dst, unsigned rows,
                                        unsigned cols, unsigned batches)
{
  __shared__ float tile[TILE][TILE + 1];
  unsigned c0 = blockIdx.x * TILE;
  for (unsigned b = blockIdx.z; b < batches; b += gridDim.z)
    for (unsigned r0 = blockIdx.y * TILE; r0 < rows; r0 += gridDim.y * TILE) {
      size_t base = (size_t)b * rows * cols;
      for (unsigned j = threadIdx.y; j < TILE; j += TILE_ROWS) {
        unsigned r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols)
          tile[j][threadIdx.x] = src[base + (size_t)r * cols + c];
      }
      __syncthreads();
      for (unsigned j = threadIdx.y; j < TILE; j += TILE_ROWS) {
        unsigned c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols)
          dst[base + (size_t)c * rows + r] = tile[threadIdx.x][j];
      }
      __syncthreads();
    }
}

static void transpose(const float *src, float *dst, unsigned rows, unsigned cols, unsigned batches,
                      cudaStream_t stream)
{
  /* columns on x (up to 2^31 - 1 blocks); rows and batches beyond SPROJ_CUDA_MAX_GRID_YZ blocks are looped over */
  unsigned row_tiles = (rows + TILE - 1) / TILE;
  dim3 grid((cols + TILE - 1) / TILE, row_tiles < SPROJ_CUDA_MAX_GRID_YZ ? row_tiles : SPROJ_CUDA_MAX_GRID_YZ,
            batches < SPROJ_CUDA_MAX_GRID_YZ ? batches : SPROJ_CUDA_MAX_GRID_YZ);
  transpose_kernel<<<grid, dim3(TILE, TILE_ROWS), 0, stream>>>(src, dst, rows, cols, batches);
  SPROJ_CUDA_CHECK_LAUNCH();
}

float *sproj_cuda_copies(void *buffers[], const struct sproj_proj_arg *arg, unsigned lanes, int back)
{
  if (!arg->layout || lanes != 1u)
    return NULL;
  float *copies = (float *)STARPU_VECTOR_GET_PTR(buffers[sproj_copies_buffer(arg)]);
  const int *n = arg->geom.n;
  size_t nvox = (size_t)n[0] * n[1] * n[2], stride = sproj_layout_copy_stride(nvox);
  cudaStream_t stream = starpu_cuda_get_local_stream();
  if (back) {
    cudaError_t err = cudaMemsetAsync(copies, 0, 2 * stride * sizeof(float), stream);
    if (err != cudaSuccess)
      STARPU_CUDA_REPORT_ERROR(err);
    return copies;
  }
  const float *img = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  unsigned n0 = (unsigned)n[0], n1 = (unsigned)n[1], n2 = (unsigned)n[2];
  transpose(img, copies, n1, n2, n0, stream);
  transpose(img, copies + stride, n0, n1 * n2, 1u, stream);
  return copies;
}

void sproj_cuda_copies_add(float *img, const float *copies, const struct sproj_geom *geom)
{
  size_t nvox = (size_t)geom->n[0] * geom->n[1] * geom->n[2];
  copies_add_kernel<<<sproj_stride_blocks(nvox), SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    img, copies, *geom, (unsigned)nvox, (unsigned)sproj_layout_copy_stride(nvox));
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
  cudaError_t err = cudaMemsetAsync(shift, 0, (nvox + SPROJ_SHIFT_EXTRA) * sizeof(float),
                                    starpu_cuda_get_local_stream());
  if (err != cudaSuccess)
    STARPU_CUDA_REPORT_ERROR(err);
  return shift;
}

void sproj_cuda_shift_add(float *img, const float *shift, const struct sproj_geom *geom)
{
  size_t nvox = (size_t)geom->n[0] * geom->n[1] * geom->n[2];
  shift_add_kernel<<<sproj_stride_blocks(nvox), SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(img, shift,
                                                                                                    (unsigned)nvox);
  SPROJ_CUDA_CHECK_LAUNCH();
}

/* The pair layouts of the image (joseph3d_ray.h), a block a row: a warp writes 32 neighbouring pairs and reads two
 * image rows (each image float is read twice a layout, from the L2). The padding between the layouts stays as it is:
 * no sample reads it. */
__global__ static void pairs_fill_kernel(const float *__restrict__ img, float *__restrict__ pairs,
                                         const __grid_constant__ struct sproj_geom geom, unsigned rows0, size_t at1)
{
  unsigned row = blockIdx.x;
  int axis = row >= rows0;
  if (axis)
    row -= rows0;
  size_t row_floats = 2 * (size_t)(geom.n[2] + 3);
  sproj_pairs_row(img, &geom, axis, row, threadIdx.x, blockDim.x, pairs + (axis ? at1 : 0) + row * row_floats);
}

const float *sproj_cuda_pairs(void *buffers[], const struct sproj_proj_arg *arg)
{
  if (!arg->pairs)
    return NULL;
  float *pairs = (float *)STARPU_VECTOR_GET_PTR(buffers[sproj_copies_buffer(arg)]);
  const float *img = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  unsigned rows0 = sproj_pairs_rows(&arg->geom, 0), rows = rows0 + sproj_pairs_rows(&arg->geom, 1);
  pairs_fill_kernel<<<rows, 128, 0, starpu_cuda_get_local_stream()>>>(img, pairs, arg->geom, rows0,
                                                                      sproj_pairs_offset(&arg->geom, 1));
  SPROJ_CUDA_CHECK_LAUNCH();
  return pairs;
}
