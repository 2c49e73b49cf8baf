/* SPDX-License-Identifier: Apache-2.0 */
/* cuda_pieces.h: the kernel-parameter table that maps CUDA blocks onto the LOR pieces of one projection task, and
 * the launcher every projection codelet shares. */
#ifndef SPROJ_CUDA_PIECES_H
#define SPROJ_CUDA_PIECES_H

#include <stdlib.h>
#include <string.h>
#include "codelets.h"

#define SPROJ_CUDA_BLOCK 256

/* Bytes of kernel parameters every architecture we build for accepts: tables of pieces go in by value. */
#define SPROJ_CUDA_PARAM_BYTES 4096
/* Blocks of a grid's y and z dimensions at most (x: 2^31 - 1). */
#define SPROJ_CUDA_MAX_GRID_YZ 65535u
/* Blocks of a grid-stride loop at most: enough to fill any GPU many times over; the loop covers the rest. */
#define SPROJ_CUDA_MAX_STRIDE_BLOCKS (65535u * 16u)

struct sproj_piece_table {
  int npieces;
  unsigned lanes;                             /* threads sharing one LOR: a power of two <= SPROJ_WARP */
  unsigned windows;                           /* back projection into copies: warps combine their adds (1) or not */
  unsigned block_start[SPROJ_MAX_PIECES + 1]; /* first block of each piece; the last entry is the grid size */
  unsigned n[SPROJ_MAX_PIECES];
  const float *xs[SPROJ_MAX_PIECES];
  const float *xe[SPROJ_MAX_PIECES];
  float *values[SPROJ_MAX_PIECES];
  const int16_t *bins[SPROJ_MAX_PIECES];
  const float *sigma[SPROJ_MAX_PIECES];
  const float *offset[SPROJ_MAX_PIECES];
};

static_assert(sizeof(struct sproj_piece_table) + sizeof(struct sproj_proj_arg) + sizeof(void *) <= SPROJ_CUDA_PARAM_BYTES,
              "the piece table no longer fits in the kernel parameters");

/* Whether back projections into the principal-axis copies combine a warp's adds in shared memory first
 * (joseph3d_back_warp): yes, unless SPROJ_CUDA_WINDOWS=0 asks for the lane-by-lane adds, for measurements. */
static inline unsigned sproj_cuda_windows(void)
{
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("SPROJ_CUDA_WINDOWS");
    on = !(e && strcmp(e, "0") == 0);
  }
  return (unsigned)on;
}

/* Fills the table from the task's buffers for `lanes` threads per LOR and blocks of `block` threads (a multiple of
 * lanes); returns the number of blocks to launch (0: nothing to do). */
static inline unsigned sproj_piece_table_fill_blocks(struct sproj_piece_table *pieces, void *buffers[],
                                                     const struct sproj_proj_arg *arg, unsigned lanes, unsigned block)
{
  unsigned blocks = 0;
  pieces->npieces = arg->npieces;
  pieces->lanes = lanes;
  pieces->windows = sproj_cuda_windows();
  for (int p = 0; p < arg->npieces; p++) {
    struct sproj_piece piece = sproj_piece_get(buffers, arg, p);
    pieces->block_start[p] = blocks;
    pieces->n[p] = piece.n;
    pieces->xs[p] = piece.xs;
    pieces->xe[p] = piece.xe;
    pieces->values[p] = piece.values;
    pieces->bins[p] = piece.bins;
    pieces->sigma[p] = piece.sigma;
    pieces->offset[p] = piece.offset;
    /* a block never straddles two pieces, nor a LOR two blocks (lanes divides the block size) */
    blocks += (unsigned)(((size_t)piece.n * lanes + block - 1) / block);
  }
  pieces->block_start[arg->npieces] = blocks;
  return blocks;
}

/* The same for blocks of SPROJ_CUDA_BLOCK threads. */
static inline unsigned sproj_piece_table_fill(struct sproj_piece_table *pieces, void *buffers[],
                                              const struct sproj_proj_arg *arg, unsigned lanes)
{
  return sproj_piece_table_fill_blocks(pieces, buffers, arg, lanes, SPROJ_CUDA_BLOCK);
}

/* The last of n entries of a non-decreasing table of starts whose start is not after x (binary search; 0 when none
 * is): the piece a block belongs to, in a table of first blocks. */
__device__ static inline int sproj_last_start_at_most(const unsigned *start, int n, unsigned x)
{
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) >> 1;
    if (start[mid] <= x)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* Piece of this block in any table of first blocks (every thread of a block agrees). */
__device__ static inline int sproj_block_piece(const unsigned *block_start, int npieces)
{
  return sproj_last_start_at_most(block_start, npieces, blockIdx.x);
}

__device__ static inline int sproj_piece_of_block(const struct sproj_piece_table *pieces)
{
  return sproj_block_piece(pieces->block_start, pieces->npieces);
}

/* Blocks of SPROJ_CUDA_BLOCK threads for a grid-stride loop over n elements (at most SPROJ_CUDA_MAX_STRIDE_BLOCKS; 0
 * for n = 0). */
static inline unsigned sproj_stride_blocks(size_t n)
{
  size_t blocks = (n + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK;
  return blocks > SPROJ_CUDA_MAX_STRIDE_BLOCKS ? SPROJ_CUDA_MAX_STRIDE_BLOCKS : (unsigned)blocks;
}

/* The grid of a partial-sums kernel over `values` values, at most `parts` blocks (one partial sum each), after the
 * parts partial sums are zeroed on the stream (the blocks the grid does not have count 0); 0: nothing to launch. */
static inline unsigned sproj_partials_grid(double *partial, unsigned parts, unsigned long long values,
                                           cudaStream_t stream)
{
  cudaError_t err = cudaMemsetAsync(partial, 0, parts * sizeof(double), stream);
  if (err != cudaSuccess)
    STARPU_CUDA_REPORT_ERROR(err);
  unsigned long long blocks = (values + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK;
  return (unsigned)(blocks < parts ? blocks : parts);
}

/* Adds the block's threads' values s in a fixed tree and writes the sum to partial[blockIdx.x] (the partial sums of
 * the objective and the simulation's trues: the same order on every run). */
__device__ static inline void sproj_block_sum(double s, double *partial)
{
  __shared__ double sum[SPROJ_CUDA_BLOCK];
  sum[threadIdx.x] = s;
  __syncthreads();
  for (unsigned half = SPROJ_CUDA_BLOCK / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half)
      sum[threadIdx.x] += sum[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    partial[blockIdx.x] = sum[0];
}

/* Piece of this block and the index of this thread in it (the LOR's index times the lanes per LOR, plus the lane). */
__device__ static inline int sproj_piece_of_thread(const struct sproj_piece_table *pieces, unsigned *lor)
{
  int piece = sproj_piece_of_block(pieces);
  *lor = (blockIdx.x - pieces->block_start[piece]) * blockDim.x + threadIdx.x;
  return piece;
}

/* A block's LORs ordered by how many planes each walks, for kernels whose LORs walk very different lengths (listmode
 * events: anything from 0 to ~70 planes of a window), since a warp lasts as long as its longest LOR: at[s] is the
 * block's s-th LOR (0 .. blockDim.x-1) in that order. A counting sort, 255 standing for 255 planes or more. */
struct sproj_block_order {
  unsigned short at[SPROJ_CUDA_BLOCK];
  unsigned count[2][SPROJ_CUDA_BLOCK]; /* bucket counts, then their prefix sums */
};
static_assert(SPROJ_CUDA_BLOCK == 256, "the counting sort has one bucket per thread, 0..255 planes");
/* The last bucket, which also takes the LORs of more planes. */
#define SPROJ_ORDER_LAST_BUCKET (SPROJ_CUDA_BLOCK - 1u)

/* Sorts the block: this thread's LOR walks `planes` planes (0 when it has no LOR). Every thread of the block calls
 * it; the order of LORs with equal counts is whichever their threads reach the bucket in. */
__device__ static inline void sproj_block_order_sort(struct sproj_block_order *order, unsigned planes)
{
  unsigned thread = threadIdx.x, bucket = min(planes, SPROJ_ORDER_LAST_BUCKET);
  order->count[0][thread] = 0;
  __syncthreads();
  unsigned slot = atomicAdd(&order->count[0][bucket], 1u);
  __syncthreads();
  /* inclusive prefix sums of the buckets, doubling the reach each step (two buffers) */
  unsigned src = 0;
  for (unsigned d = 1; d < SPROJ_CUDA_BLOCK; d <<= 1) {
    unsigned v = order->count[src][thread];
    if (thread >= d)
      v += order->count[src][thread - d];
    order->count[src ^ 1][thread] = v;
    src ^= 1;
    __syncthreads();
  }
  order->at[(bucket ? order->count[src][bucket - 1] : 0u) + slot] = (unsigned short)thread;
  __syncthreads();
}

/* Whether listmode forward kernels sort their blocks (sproj_block_order): yes, unless SPROJ_CUDA_SORT=0 asks for
 * one event per thread in stored order, for measurements. */
static inline int sproj_cuda_sort(void)
{
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("SPROJ_CUDA_SORT");
    on = !(e && strcmp(e, "0") == 0);
  }
  return on;
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
    struct sproj_piece_table pieces;                                                                    \
    unsigned blocks = sproj_piece_table_fill(&pieces, buffers, arg, 1);                                 \
    if (blocks > 0) {                                                                                   \
      kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(                          \
        (IMG)STARPU_VECTOR_GET_PTR(buffers[0]), *arg, pieces);                                          \
      SPROJ_CUDA_CHECK_LAUNCH();                                                                        \
    }                                                                                                   \
  }

/* Threads per LOR for a task of `lors` LORs. One thread walks a whole ray (a few hundred samples), so a small task
 * launches a few dozen blocks and lasts one ray's latency while most of the GPU idles: below about 2^17 LORs the
 * rays are shared by 2..32 threads, enough to give every multiprocessor work. SPROJ_CUDA_LANES=1..32 (a power of
 * two) fixes the number instead, for measurements. */
static inline unsigned sproj_cuda_lanes(size_t lors)
{
  static int forced = -1;
  if (forced < 0) {
    const char *e = getenv("SPROJ_CUDA_LANES");
    int v = e ? atoi(e) : 0;
    forced = (v >= 1 && v <= (int)SPROJ_WARP && (v & (v - 1)) == 0) ? v : 0;
  }
  if (forced > 0)
    return (unsigned)forced;
  unsigned lanes = 1;
  while (lanes < SPROJ_WARP && lors * lanes < SPROJ_CUDA_ONE_LANE_LORS)
    lanes *= 2;
  return lanes;
}

/* The principal-axis copies of a task (sproj_proj_arg.layout, image_layout.cu): with `lanes` threads per LOR, NULL
 * unless the task has copies and lanes is 1; else its scratch buffer, queued on StarPU's stream to be filled from
 * the image (forward) or zeroed (back). */
float *sproj_cuda_copies(void *buffers[], const struct sproj_proj_arg *arg, unsigned lanes, int back);
/* Queues img += the two copies, each read in its layout (after a back projection into them). */
void sproj_cuda_copies_add(float *img, const float *copies, const struct sproj_geom *g);

/* The shifted image of a task (sproj_proj_arg.shift, sproj_add_pair): NULL unless the task has one; else its scratch
 * buffer, queued on StarPU's stream to be zeroed. */
float *sproj_cuda_shift(void *buffers[], const struct sproj_proj_arg *arg);
/* Queues img += the shifted image (after a back projection into both). */
void sproj_cuda_shift_add(float *img, const float *shift, const struct sproj_geom *g);

/* The pair layouts of a task (sproj_proj_arg.pairs, joseph3d_ray.h): NULL unless the task has them; else its scratch
 * buffer, queued on StarPU's stream to be filled from the image. */
const float *sproj_cuda_pairs(void *buffers[], const struct sproj_proj_arg *arg);

/* Like SPROJ_CUDA_LAUNCHER, with sproj_cuda_lanes threads per LOR and the task's principal-axis copies:
 * kernel(image, copies, arg, table) finds its LOR and lane with SPROJ_CUDA_THIS_LOR_LANE; copies is NULL unless
 * the task has them and one thread walks each LOR. BACK (0 or 1): the kernel adds into the copies, which are then
 * added into the image. */
#define SPROJ_CUDA_LANES_LAUNCHER(fn_name, kernel, IMG, BACK)                                           \
  extern "C" void fn_name(void *buffers[], void *cl_arg)                                                \
  {                                                                                                     \
    const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;                           \
    struct sproj_piece_table pieces;                                                                    \
    size_t lors = 0;                                                                                    \
    for (int piece = 0; piece < arg->npieces; piece++)                                                  \
      lors += sproj_piece_get(buffers, arg, piece).n;                                                   \
    unsigned lanes = sproj_cuda_lanes(lors);                                                            \
    unsigned blocks = sproj_piece_table_fill(&pieces, buffers, arg, lanes);                             \
    if (blocks > 0) {                                                                                   \
      float *copies = sproj_cuda_copies(buffers, arg, lanes, BACK);                                     \
      kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(                          \
        (IMG)STARPU_VECTOR_GET_PTR(buffers[0]), copies, *arg, pieces);                                  \
      SPROJ_CUDA_CHECK_LAUNCH();                                                                        \
      if (BACK && copies)                                                                               \
        sproj_cuda_copies_add((float *)STARPU_VECTOR_GET_PTR(buffers[0]), copies, &arg->geom);          \
    }                                                                                                   \
  }

/* The LOR and lane of this thread: returns when the thread has no LOR (all lanes of a LOR together). */
#define SPROJ_CUDA_THIS_LOR_LANE(pieces, piece, lor, lane)                                              \
  unsigned lor;                                                                                         \
  int piece = sproj_piece_of_thread(&(pieces), &lor);                                                   \
  unsigned lane = lor & ((pieces).lanes - 1u);                                                          \
  lor /= (pieces).lanes;                                                                                \
  if (lor >= (pieces).n[piece])                                                                         \
    return

/* The LOR of this thread: returns 0 when the thread has none. */
#define SPROJ_CUDA_THIS_LOR(pieces, piece, lor)                                                         \
  unsigned lor;                                                                                         \
  int piece = sproj_piece_of_thread(&(pieces), &lor);                                                   \
  if (lor >= (pieces).n[piece])                                                                         \
    return

#endif
