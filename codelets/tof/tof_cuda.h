/* SPDX-License-Identifier: Apache-2.0 */
/* tof_cuda.h: what the TOF kernels' launchers share: the variants a launch runs (codelets.h's sproj_tof_variants) and
 * the edges' table (tof_table.h), which each block builds in its shared memory. CUDA only. */
#ifndef SPROJ_TOF_CUDA_H
#define SPROJ_TOF_CUDA_H

#include "cuda_pieces.h"
#include "tof.h"
#include "tof_slide.h"

/* Floats per piece of a table: lo (c0, c1) and hi (c2, c3). */
#define SPROJ_TOF_TABLE_PIECE_FLOATS 4

/* Threads of a block of the TOF sinogram kernels (whole warps, at most SPROJ_CUDA_BLOCK), and the threads they keep on a
 * multiprocessor (__launch_bounds__: 1024 holds them to 64 registers a thread). Left alone, nvcc gives the back
 * projection 72 registers and the forward one with the float4 table 68: 24 warps a multiprocessor instead of 32. Held
 * to 64 they spill a few registers outside their sample loops. Blocks of 64 rather than 256: a block's LORs walk
 * different lengths, and a multiprocessor starts a new block only when the last warp of one ends (a finished warp's
 * slot stays idle until then; the forward kernel's warps each write their bins out and end on their own), so small
 * blocks keep more of the 32 warps working; each block builds the
 * table, four times as often, which costs less than it gains. On an H100 (doc/benchmarks.md), forward / back: 0.0090 /
 * 0.0113 s with 68 / 72 registers and blocks of 256, 0.0082 - 0.0083 / 0.0103 s held to 64, 0.0080 / 0.0100 - 0.0101 s
 * with blocks of 64. More registers with blocks of 64 lose: allowed 896 threads a multiprocessor (71 / 72 registers,
 * the spills nearly gone) 0.0082 / 0.0102 s, 768 (74 / 80, none) 0.0085 / 0.0107 s. Each direction's bound can be set
 * on the compiler's command line (-DSPROJ_TOF_SINO_FWD_THREADS_PER_SM=N) to measure another. */
#define SPROJ_TOF_SINO_BLOCK 64
#ifndef SPROJ_TOF_SINO_FWD_THREADS_PER_SM
#define SPROJ_TOF_SINO_FWD_THREADS_PER_SM 1024
#endif
#ifndef SPROJ_TOF_SINO_BACK_THREADS_PER_SM
#define SPROJ_TOF_SINO_BACK_THREADS_PER_SM 1024
#endif
#define SPROJ_TOF_SINO_FWD_BOUNDS \
  __launch_bounds__(SPROJ_TOF_SINO_BLOCK, SPROJ_TOF_SINO_FWD_THREADS_PER_SM / SPROJ_TOF_SINO_BLOCK)
#define SPROJ_TOF_SINO_BACK_BOUNDS \
  __launch_bounds__(SPROJ_TOF_SINO_BLOCK, SPROJ_TOF_SINO_BACK_THREADS_PER_SM / SPROJ_TOF_SINO_BLOCK)
static_assert(SPROJ_TOF_SINO_BLOCK % 32 == 0 && SPROJ_TOF_SINO_BLOCK <= SPROJ_CUDA_BLOCK, "a block is whole warps");

/* What one launch of a TOF kernel runs. */
struct sproj_tof_launch {
  struct sproj_tof_table_plan plan; /* the table's shape, when table */
  int table;                        /* the edges from the table */
  int slide;                        /* sinogram: the bins beside the samples, SPROJ_TOF_SLIDE_NARROW of them */
  int copies;                       /* sinogram back projection: into the copies with the warps' windows */
  size_t table_bytes;               /* the table's shared memory */
};

/* The variants of CUDA workers for a task with argument arg (lm: a listmode task, which has no sliding bins): the
 * table where tof_table.h serves the task (one sigma for all its LORs: sproj_tof_table_plan_for; starproj's listmode
 * convention or a sinogram), the sliding bins where the task's windows fit SPROJ_TOF_SLIDE_NARROW bins. */
static inline struct sproj_tof_launch sproj_tof_launch_of(const struct sproj_proj_arg *arg, int lm)
{
  struct sproj_tof_launch L = {};
  unsigned v = sproj_tof_variants(1);
  L.table = ((v & SPROJ_TOF_VARIANT_TABLE) || (!lm && (v & SPROJ_TOF_VARIANT_SINO_TABLE))) &&
            !(lm && arg->tof.convention == SPROJ_TOF_ARG_PARALLELPROJ) &&
            sproj_tof_table_plan_for(&arg->tof, &L.plan);
  L.table_bytes = L.table ? (size_t)L.plan.nd * L.plan.steps * SPROJ_TOF_TABLE_PIECE_FLOATS * sizeof(float) : 0;
  L.slide = !lm && (v & SPROJ_TOF_VARIANT_SLIDE) && sproj_tof_slide_width(&arg->tof) == SPROJ_TOF_SLIDE_NARROW;
  L.copies = !lm && (v & SPROJ_TOF_VARIANT_COPIES);
  return L;
}

/* The block builds the table of `plan` in its dynamic shared memory from float `at` on (a multiple of four: 16-byte
 * aligned; a piece is one float4 of SPROJ_TOF_TABLE_PIECE_FLOATS floats) and describes it in tab; every thread of the
 * block calls it, before any returns. */
__device__ static inline void sproj_tof_table_build(struct sproj_tof_table *tab, const struct sproj_tof_table_plan *plan,
                                                    unsigned at)
{
  unsigned pieces = (unsigned)(plan->nd * plan->steps), at4 = at / 4u;
  for (unsigned p = threadIdx.x; p < pieces; p += blockDim.x) {
    float lo[2], hi[2];
    sproj_tof_table_piece(plan, (int)p, lo, hi);
    sproj_tof_shared[at4 + p] = make_float4(lo[0], lo[1], hi[0], hi[1]);
  }
  __syncthreads();
  sproj_tof_table_use(tab, plan, NULL, NULL, at4);
}

/* The task's table in the block's shared memory with TABLE (every thread of the block calling it, before any
 * returns), else NULL: the kernel compiles one kind of edge. */
template <bool TABLE>
__device__ static inline const struct sproj_tof_table *sproj_tof_table_of(struct sproj_tof_table *table,
                                                                          const struct sproj_tof_table_plan *plan)
{
  if (!TABLE)
    return NULL;
  sproj_tof_table_build(table, plan, 0u);
  return table;
}

/* LOR `lor` of piece `piece` of a TOF task: its endpoints, sigma and centre offset. */
__device__ static inline void sproj_tof_piece_lor(const struct sproj_proj_arg *arg,
                                                  const struct sproj_piece_table *pieces, int piece, unsigned lor,
                                                  const float **xs, const float **xe, float *sigma, float *offset)
{
  sproj_tof_lor_params(&arg->tof, pieces->sigma[piece], pieces->offset[piece], lor, sigma, offset);
  *xs = pieces->xs[piece] + 3 * (size_t)lor;
  *xe = pieces->xe[piece] + 3 * (size_t)lor;
}

/* Dynamic shared memory a block may have without asking (every architecture we build for). */
#define SPROJ_SHARED_DEFAULT_BYTES (48 * 1024)

/* Asks for `bytes` of dynamic shared memory per block of kernel; 0 when the device refuses (the caller then does
 * without). */
template <class Kernel>
static inline int sproj_cuda_shared_ok(Kernel kernel, size_t bytes)
{
  if (bytes <= SPROJ_SHARED_DEFAULT_BYTES)
    return 1;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return 1;
}

#endif
