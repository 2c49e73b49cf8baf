/* cuda_pieces.h: the kernel-parameter table that maps CUDA blocks onto the LOR pieces of one projection task. */
#ifndef SPROJ_CUDA_PIECES_H
#define SPROJ_CUDA_PIECES_H

#include "codelets.h"

#define SPROJ_CUDA_BLOCK 256

struct sproj_piece_table {
  int npieces;
  unsigned block_start[SPROJ_MAX_PIECES + 1]; /* first block of each piece; the last entry is the grid size */
  unsigned n[SPROJ_MAX_PIECES];
  const float *xs[SPROJ_MAX_PIECES];
  const float *xe[SPROJ_MAX_PIECES];
  float *values[SPROJ_MAX_PIECES];
};

/* Fills the table from the task's buffers; returns the number of blocks to launch (0: nothing to do). */
static inline unsigned sproj_piece_table_fill(struct sproj_piece_table *t, void *buffers[], int npieces)
{
  unsigned blocks = 0;
  t->npieces = npieces;
  for (int p = 0; p < npieces; p++) {
    struct sproj_piece pc = sproj_piece_get(buffers, p);
    t->block_start[p] = blocks;
    t->n[p] = pc.n;
    t->xs[p] = pc.xs;
    t->xe[p] = pc.xe;
    t->values[p] = pc.values;
    blocks += (pc.n + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK;
  }
  t->block_start[npieces] = blocks;
  return blocks;
}

/* Piece of this block (binary search; every thread of a block agrees) and the LOR index of this thread in it. */
__device__ static inline int sproj_piece_of_thread(const struct sproj_piece_table *t, unsigned *i)
{
  unsigned b = blockIdx.x;
  int lo = 0, hi = t->npieces - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) >> 1;
    if (t->block_start[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  *i = (b - t->block_start[lo]) * blockDim.x + threadIdx.x;
  return lo;
}

/* Reports a failed launch the way StarPU does for its own CUDA calls. */
#define SPROJ_CUDA_CHECK_LAUNCH()                                                                      \
  do {                                                                                                 \
    cudaError_t sproj_err_ = cudaGetLastError();                                                       \
    if (sproj_err_ != cudaSuccess)                                                                     \
      STARPU_CUDA_REPORT_ERROR(sproj_err_);                                                            \
  } while (0)

#endif
