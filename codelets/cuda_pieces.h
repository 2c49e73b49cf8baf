/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_pieces.h: the kernel-parameter table that maps CUDA blocks onto the LOR pieces of one projection task, and
 * the launcher every projection codelet shares. */
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
  const int16_t *bins[SPROJ_MAX_PIECES];
  const float *sigma[SPROJ_MAX_PIECES];
  const float *offset[SPROJ_MAX_PIECES];
};

/* kernel parameters are limited to 4 KiB on every architecture we build for */
static_assert(sizeof(struct sproj_piece_table) + sizeof(struct sproj_proj_arg) + sizeof(void *) <= 4096,
              "the piece table no longer fits in the kernel parameters");

/* Fills the table from the task's buffers; returns the number of blocks to launch (0: nothing to do). */
static inline unsigned sproj_piece_table_fill(struct sproj_piece_table *t, void *buffers[],
                                              const struct sproj_proj_arg *arg)
{
  unsigned blocks = 0;
  t->npieces = arg->npieces;
  for (int p = 0; p < arg->npieces; p++) {
    struct sproj_piece pc = sproj_piece_get(buffers, arg, p);
    t->block_start[p] = blocks;
    t->n[p] = pc.n;
    t->xs[p] = pc.xs;
    t->xe[p] = pc.xe;
    t->values[p] = pc.values;
    t->bins[p] = pc.bins;
    t->sigma[p] = pc.sigma;
    t->offset[p] = pc.offset;
    blocks += (pc.n + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK;
  }
  t->block_start[arg->npieces] = blocks;
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

/* The CUDA function of a projection codelet: one thread per LOR of every piece, on StarPU's stream, returning
 * at once (STARPU_CUDA_ASYNC). kernel(image, arg, table) must exist; IMG is float* or const float*. */
#define SPROJ_CUDA_LAUNCHER(fn_name, kernel, IMG)                                                       \
  extern "C" void fn_name(void *buffers[], void *cl_arg)                                                \
  {                                                                                                     \
    const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;                           \
    struct sproj_piece_table t;                                                                         \
    unsigned blocks = sproj_piece_table_fill(&t, buffers, arg);                                         \
    if (blocks > 0) {                                                                                   \
      kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(                          \
        (IMG)STARPU_VECTOR_GET_PTR(buffers[0]), *arg, t);                                               \
      SPROJ_CUDA_CHECK_LAUNCH();                                                                        \
    }                                                                                                   \
  }

/* The LOR of this thread: returns 0 when the thread has none. */
#define SPROJ_CUDA_THIS_LOR(t, p, i)                                                                    \
  unsigned i;                                                                                           \
  int p = sproj_piece_of_thread(&(t), &i);                                                              \
  if (i >= (t).n[p])                                                                                    \
    return

#endif
