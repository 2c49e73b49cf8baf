/* SPDX-License-Identifier: Apache-2.0 */
/* em_ratio.cu: CUDA kernel of the EM ratio or a Hessian's data term (one thread per value of every piece), queued on
 * StarPU's stream. */
#include "config.h"
#include "cuda_pieces.h"
#include "em_ratio.h"

/* The pieces of one ratio task: which blocks serve which piece, and each piece's buffers. */
struct ratio_table {
  int npieces;
  unsigned block_start[SPROJ_MAX_PIECES + 1];
  unsigned long long n[SPROJ_MAX_PIECES]; /* values (LORs x bins) */
  float *p[SPROJ_MAX_PIECES];
  const float *px[SPROJ_MAX_PIECES], *y[SPROJ_MAX_PIECES], *m[SPROJ_MAX_PIECES], *a[SPROJ_MAX_PIECES];
  const float *smax[SPROJ_MAX_PIECES]; /* the small-value rule's largest numerators of the piece's group (or NULL) */
};
static_assert(sizeof(struct ratio_table) + 4 * sizeof(int) + 3 * sizeof(float) <= SPROJ_CUDA_PARAM_BYTES,
              "the ratio table no longer fits in the kernel parameters");

__global__ static void em_ratio_kernel(const __grid_constant__ struct ratio_table table, int num_bins, int a_per_lor,
                                       float a_flat, int kind, float cap, float frac)
{
  /* piece of this block: the last one whose first block is not after it */
  int piece = sproj_block_piece(table.block_start, table.npieces);
  unsigned long long k = (unsigned long long)(blockIdx.x - table.block_start[piece]) * blockDim.x + threadIdx.x;
  if (k < table.n[piece])
    em_term_at(table.p[piece], table.px[piece], table.y[piece], table.m[piece], table.a[piece], a_per_lor, a_flat,
               num_bins, kind, cap, table.smax[piece], frac, (size_t)k);
}

extern "C" void sproj_em_ratio_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_ratio_arg *arg = (const struct sproj_ratio_arg *)cl_arg;
  struct ratio_table table;
  unsigned blocks = 0;
  int last = sproj_ratio_buffers_per_piece(arg) * arg->npieces;
  table.npieces = arg->npieces;
  for (int q = 0; q < arg->npieces; q++) {
    struct sproj_ratio_piece piece = sproj_ratio_piece_get(buffers, arg, q);
    table.block_start[q] = blocks;
    table.n[q] = (unsigned long long)piece.n * (unsigned long long)arg->num_bins;
    table.p[q] = piece.p;
    table.px[q] = piece.px;
    table.y[q] = piece.y;
    table.m[q] = piece.m;
    table.a[q] = piece.a;
    table.smax[q] = sproj_ratio_small(buffers, arg, last, q);
    blocks += (unsigned)((table.n[q] + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK);
  }
  table.block_start[arg->npieces] = blocks;
  if (blocks == 0)
    return;
  em_ratio_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(table, arg->num_bins, arg->a_per_lor,
                                                                                  arg->a_flat, arg->kind, arg->max_ratio,
                                                                                  arg->small_fraction);
  SPROJ_CUDA_CHECK_LAUNCH();
}
