/* SPDX-License-Identifier: Apache-2.0 */
/* em_nll.cu: CUDA kernel of the Poisson objective over pieces of LORs: a fixed grid of at most SPROJ_NLL_PARTIALS
 * blocks strides over every value, each block adds its threads' sums in a fixed tree and writes one partial sum. */
#include "config.h"
#include "cuda_pieces.h"
#include "em_nll.h"

struct nll_table {
  int npieces;
  unsigned long long n[SPROJ_MAX_PIECES]; /* values (LORs x bins) */
  const float *p[SPROJ_MAX_PIECES], *y[SPROJ_MAX_PIECES], *m[SPROJ_MAX_PIECES], *a[SPROJ_MAX_PIECES];
  const float *smax[SPROJ_MAX_PIECES]; /* the small-value rule's largest numerators of the piece's group (or NULL) */
};
static_assert(sizeof(struct nll_table) + 2 * sizeof(void *) + 2 * sizeof(int) + 3 * sizeof(float) <= SPROJ_CUDA_PARAM_BYTES,
              "the objective table no longer fits in the kernel parameters");

__global__ static void em_nll_kernel(const __grid_constant__ struct nll_table table, int num_bins, int a_per_lor,
                                     float a_flat, float cap, float frac, double *partial)
{
  double s = 0.0;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (int q = 0; q < table.npieces; q++)
    for (unsigned long long k = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; k < table.n[q]; k += stride)
      s += em_nll_at(table.p[q], table.y[q], table.m[q], table.a[q], a_per_lor, a_flat, num_bins, cap, table.smax[q],
                     frac, (size_t)k);
  sproj_block_sum(s, partial);
}

extern "C" void sproj_em_nll_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_ratio_arg *arg = (const struct sproj_ratio_arg *)cl_arg;
  int parts = sproj_ratio_buffers_per_piece(arg) * arg->npieces;
  double *out = (double *)STARPU_VECTOR_GET_PTR(buffers[parts]);
  struct nll_table table;
  unsigned long long total = 0;
  table.npieces = arg->npieces;
  for (int q = 0; q < arg->npieces; q++) {
    struct sproj_ratio_piece piece = sproj_ratio_piece_get(buffers, arg, q);
    table.n[q] = (unsigned long long)piece.n * (unsigned long long)arg->num_bins;
    table.p[q] = piece.p;
    table.y[q] = piece.y;
    table.m[q] = piece.m;
    table.a[q] = piece.a;
    table.smax[q] = sproj_ratio_small(buffers, arg, parts + 1, q);
    total += table.n[q];
  }
  cudaStream_t stream = starpu_cuda_get_local_stream();
  unsigned blocks = sproj_partials_grid(out, SPROJ_NLL_PARTIALS, total, stream);
  if (blocks == 0)
    return;
  em_nll_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, stream>>>(table, arg->num_bins, arg->a_per_lor, arg->a_flat,
                                                         arg->max_ratio, arg->small_fraction, out);
  SPROJ_CUDA_CHECK_LAUNCH();
}
