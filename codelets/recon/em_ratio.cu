/* SPDX-License-Identifier: Apache-2.0 */
/* em_ratio.cu: CUDA kernel of the EM ratio or a Hessian's data term (a thread per EM_RATIO_VALUES values of a piece),
 * queued on StarPU's stream. */
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

/* Values a thread takes, SPROJ_CUDA_BLOCK apart (neighbouring threads still touch neighbouring floats): it loads the
 * operands of all of them before it stores a term, so that their loads are in flight together, and finds the piece,
 * its pointers and the first value's LOR once. One value a thread ran at a third of the memory's bandwidth, held up
 * by those lookups and the division for the LOR (the constant and special-function pipes, not the memory). */
#define EM_RATIO_VALUES 4

__global__ static void em_ratio_kernel(const __grid_constant__ struct ratio_table table, int num_bins, int a_per_lor,
                                       float a_flat, int kind, float cap, float frac)
{
  /* piece of this block: the last one whose first block is not after it */
  int piece = sproj_block_piece(table.block_start, table.npieces);
  const unsigned long long n = table.n[piece];
  float *p = table.p[piece];
  const float *px = table.px[piece], *y = table.y[piece], *m = table.m[piece], *a = table.a[piece];
  const float *smax = table.smax[piece];
  unsigned long long k0 =
    (unsigned long long)(blockIdx.x - table.block_start[piece]) * (SPROJ_CUDA_BLOCK * EM_RATIO_VALUES) + threadIdx.x;
  /* the first value's LOR and bin, then stepped by SPROJ_CUDA_BLOCK values without dividing */
  unsigned long long i = k0 / (unsigned)num_bins;
  int b = (int)(k0 - i * (unsigned)num_bins);
  const int step_i = SPROJ_CUDA_BLOCK / num_bins, step_b = SPROJ_CUDA_BLOCK % num_bins;
  struct em_operands o[EM_RATIO_VALUES];
#pragma unroll
  for (int j = 0; j < EM_RATIO_VALUES; j++) {
    unsigned long long k = k0 + (unsigned long long)j * SPROJ_CUDA_BLOCK;
    if (k < n)
      o[j] = em_term_load(p, px, y, m, a, a_per_lor, a_flat, num_bins, kind, smax, (size_t)i, b, (size_t)k);
    i += step_i;
    b += step_b;
    if (b >= num_bins) {
      b -= num_bins;
      i++;
    }
  }
#pragma unroll
  for (int j = 0; j < EM_RATIO_VALUES; j++) {
    unsigned long long k = k0 + (unsigned long long)j * SPROJ_CUDA_BLOCK;
    if (k < n)
      p[k] = em_term_of(&o[j], kind, cap, frac);
  }
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
    const unsigned long long per_block = SPROJ_CUDA_BLOCK * EM_RATIO_VALUES;
    blocks += (unsigned)((table.n[q] + per_block - 1) / per_block);
  }
  table.block_start[arg->npieces] = blocks;
  if (blocks == 0)
    return;
  em_ratio_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(table, arg->num_bins, arg->a_per_lor,
                                                                                  arg->a_flat, arg->kind, arg->max_ratio,
                                                                                  arg->small_fraction);
  SPROJ_CUDA_CHECK_LAUNCH();
}
