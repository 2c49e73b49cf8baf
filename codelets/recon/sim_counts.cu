/* SPDX-License-Identifier: Apache-2.0 */
/* sim_counts.cu: CUDA kernels of simulated data over pieces of LORs, queued on StarPU's stream: the sum of m p (a
 * fixed grid of at most SPROJ_NLL_PARTIALS blocks, each writing one partial sum) and the counts drawn in place (one
 * thread per LOR and its bins). */
#include "config.h"
#include "cuda_pieces.h"
#include "em_nll.h"
#include "sim_counts.h"

struct sim_table {
  int npieces;
  unsigned block_start[SPROJ_MAX_PIECES + 1];
  unsigned n[SPROJ_MAX_PIECES]; /* LORs */
  unsigned long long first[SPROJ_MAX_PIECES];
  float *p[SPROJ_MAX_PIECES], *sums[SPROJ_MAX_PIECES];
  const float *m[SPROJ_MAX_PIECES], *a[SPROJ_MAX_PIECES];
};
/* Bytes the simulation kernels' parameters other than their table may take (32 at most today). */
#define SIM_OTHER_PARAM_BYTES 64
static_assert(sizeof(struct sim_table) + SIM_OTHER_PARAM_BYTES <= SPROJ_CUDA_PARAM_BYTES,
              "the simulation table no longer fits in the kernel parameters");

static unsigned sim_table_fill(struct sim_table *table, void *buffers[], const struct sproj_sim_arg *arg,
                               unsigned per_block)
{
  unsigned blocks = 0;
  table->npieces = arg->npieces;
  for (int q = 0; q < arg->npieces; q++) {
    struct sproj_sim_piece piece = sproj_sim_piece_get(buffers, arg, q);
    table->block_start[q] = blocks;
    table->n[q] = piece.n;
    table->first[q] = (unsigned long long)arg->first_value[q];
    table->p[q] = piece.p;
    table->sums[q] = piece.sums;
    table->m[q] = piece.m;
    table->a[q] = piece.a;
    blocks += (piece.n + per_block - 1) / per_block;
  }
  table->block_start[arg->npieces] = blocks;
  return blocks;
}

__global__ static void sim_sum_kernel(const __grid_constant__ struct sim_table table, int num_bins, double *partial)
{
  double s = 0.0;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (int q = 0; q < table.npieces; q++) {
    unsigned long long n = (unsigned long long)table.n[q] * (unsigned long long)num_bins;
    for (unsigned long long k = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride)
      s += (table.m[q] ? (double)table.m[q][k / (unsigned long long)num_bins] : 1.0) * (double)table.p[q][k];
  }
  sproj_block_sum(s, partial);
}

extern "C" void sproj_sim_sum_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_sim_arg *arg = (const struct sproj_sim_arg *)cl_arg;
  double *out = (double *)STARPU_VECTOR_GET_PTR(buffers[sproj_sim_buffers_per_piece(arg) * arg->npieces]);
  struct sim_table table;
  sim_table_fill(&table, buffers, arg, 1);
  unsigned long long total = 0;
  for (int q = 0; q < arg->npieces; q++)
    total += (unsigned long long)table.n[q] * (unsigned long long)arg->num_bins;
  cudaStream_t stream = starpu_cuda_get_local_stream();
  unsigned blocks = sproj_partials_grid(out, SPROJ_NLL_PARTIALS, total, stream);
  if (blocks == 0)
    return;
  sim_sum_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, stream>>>(table, arg->num_bins, out);
  SPROJ_CUDA_CHECK_LAUNCH();
}

__global__ static void sim_draw_kernel(const __grid_constant__ struct sim_table table, int num_bins, int a_per_lor,
                                       float a_flat, float scale, int noise, unsigned long long seed)
{
  int piece = sproj_block_piece(table.block_start, table.npieces);
  unsigned i = (blockIdx.x - table.block_start[piece]) * blockDim.x + threadIdx.x;
  if (i >= table.n[piece])
    return;
  const size_t bins = (size_t)num_bins;
  double s = 0.0;
  for (size_t bin = 0; bin < bins; bin++) {
    size_t k = (size_t)i * bins + bin;
    float v = sim_value(table.p[piece][k], table.m[piece] ? table.m[piece][i] : 1.0f,
                        em_background(table.a[piece], a_per_lor, a_flat, num_bins, i, k), scale, noise, seed,
                        table.first[piece] + k);
    table.p[piece][k] = v;
    s += v;
  }
  if (table.sums[piece])
    table.sums[piece][i] = (float)s;
}

extern "C" void sproj_sim_draw_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_sim_arg *arg = (const struct sproj_sim_arg *)cl_arg;
  struct sim_table table;
  unsigned blocks = sim_table_fill(&table, buffers, arg, SPROJ_CUDA_BLOCK);
  if (blocks == 0)
    return;
  sim_draw_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    table, arg->num_bins, arg->a_per_lor, arg->a_flat, arg->scale, arg->noise, (unsigned long long)arg->seed);
  SPROJ_CUDA_CHECK_LAUNCH();
}

/* Event emission: one thread per LOR of every piece (the pieces' counts, places and outputs in a table). */
struct emit_table {
  int npieces;
  unsigned block_start[SPROJ_MAX_PIECES + 1];
  unsigned n[SPROJ_MAX_PIECES];
  const float *counts[SPROJ_MAX_PIECES];
  const int32_t *off[SPROJ_MAX_PIECES];
  int16_t *out[SPROJ_MAX_PIECES];
};
static_assert(sizeof(struct emit_table) + SIM_OTHER_PARAM_BYTES <= SPROJ_CUDA_PARAM_BYTES,
              "the emission table no longer fits in the kernel parameters");

__global__ static void sim_emit_kernel(const __grid_constant__ struct emit_table table, int num_bins)
{
  int piece = sproj_block_piece(table.block_start, table.npieces);
  unsigned i = (blockIdx.x - table.block_start[piece]) * blockDim.x + threadIdx.x;
  if (i < table.n[piece])
    sim_emit_lor(table.counts[piece], table.off[piece], table.out[piece], num_bins, i);
}

extern "C" void sproj_sim_emit_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_emit_arg *arg = (const struct sproj_emit_arg *)cl_arg;
  struct emit_table table;
  unsigned blocks = 0;
  table.npieces = arg->npieces;
  for (int q = 0; q < arg->npieces; q++) {
    table.block_start[q] = blocks;
    table.n[q] = STARPU_VECTOR_GET_NX(buffers[3 * q]);
    table.counts[q] = (const float *)STARPU_VECTOR_GET_PTR(buffers[3 * q]);
    table.off[q] = (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[3 * q + 1]);
    table.out[q] = (int16_t *)STARPU_VECTOR_GET_PTR(buffers[3 * q + 2]);
    blocks += (table.n[q] + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK;
  }
  table.block_start[arg->npieces] = blocks;
  if (blocks == 0)
    return;
  sim_emit_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(table, arg->num_bins);
  SPROJ_CUDA_CHECK_LAUNCH();
}
