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
static_assert(sizeof(struct sim_table) + 64 <= 4096, "the simulation table no longer fits in the kernel parameters");

static unsigned sim_table_fill(struct sim_table *t, void *buffers[], const struct sproj_sim_arg *arg, unsigned per_block)
{
  unsigned blocks = 0;
  t->npieces = arg->npieces;
  for (int q = 0; q < arg->npieces; q++) {
    struct sproj_sim_piece pc = sproj_sim_piece_get(buffers, arg, q);
    t->block_start[q] = blocks;
    t->n[q] = pc.n;
    t->first[q] = (unsigned long long)arg->first_value[q];
    t->p[q] = pc.p;
    t->sums[q] = pc.sums;
    t->m[q] = pc.m;
    t->a[q] = pc.a;
    blocks += (pc.n + per_block - 1) / per_block;
  }
  t->block_start[arg->npieces] = blocks;
  return blocks;
}

__global__ static void sim_sum_kernel(const __grid_constant__ struct sim_table t, int num_bins, double *partial)
{
  double s = 0.0;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (int q = 0; q < t.npieces; q++) {
    unsigned long long n = (unsigned long long)t.n[q] * (unsigned long long)num_bins;
    for (unsigned long long k = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride)
      s += (t.m[q] ? (double)t.m[q][k / (unsigned long long)num_bins] : 1.0) * (double)t.p[q][k];
  }
  sproj_block_sum(s, partial);
}

extern "C" void sproj_sim_sum_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_sim_arg *arg = (const struct sproj_sim_arg *)cl_arg;
  double *out = (double *)STARPU_VECTOR_GET_PTR(buffers[sproj_sim_buffers_per_piece(arg) * arg->npieces]);
  struct sim_table t;
  sim_table_fill(&t, buffers, arg, 1);
  unsigned long long total = 0;
  for (int q = 0; q < arg->npieces; q++)
    total += (unsigned long long)t.n[q] * (unsigned long long)arg->num_bins;
  cudaStream_t stream = starpu_cuda_get_local_stream();
  unsigned blocks = sproj_partials_grid(out, SPROJ_NLL_PARTIALS, total, stream);
  if (blocks == 0)
    return;
  sim_sum_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, stream>>>(t, arg->num_bins, out);
  SPROJ_CUDA_CHECK_LAUNCH();
}

__global__ static void sim_draw_kernel(const __grid_constant__ struct sim_table t, int num_bins, int a_per_lor,
                                       float a_flat, float scale, int noise, unsigned long long seed)
{
  int lo = sproj_block_piece(t.block_start, t.npieces);
  unsigned i = (blockIdx.x - t.block_start[lo]) * blockDim.x + threadIdx.x;
  if (i >= t.n[lo])
    return;
  const size_t nb = (size_t)num_bins;
  double s = 0.0;
  for (size_t bin = 0; bin < nb; bin++) {
    size_t k = (size_t)i * nb + bin;
    float v = sim_value(t.p[lo][k], t.m[lo] ? t.m[lo][i] : 1.0f, em_background(t.a[lo], a_per_lor, a_flat, num_bins, i, k),
                        scale, noise, seed, t.first[lo] + k);
    t.p[lo][k] = v;
    s += v;
  }
  if (t.sums[lo])
    t.sums[lo][i] = (float)s;
}

extern "C" void sproj_sim_draw_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_sim_arg *arg = (const struct sproj_sim_arg *)cl_arg;
  struct sim_table t;
  unsigned blocks = sim_table_fill(&t, buffers, arg, SPROJ_CUDA_BLOCK);
  if (blocks == 0)
    return;
  sim_draw_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(
    t, arg->num_bins, arg->a_per_lor, arg->a_flat, arg->scale, arg->noise, (unsigned long long)arg->seed);
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
static_assert(sizeof(struct emit_table) + 64 <= 4096, "the emission table no longer fits in the kernel parameters");

__global__ static void sim_emit_kernel(const __grid_constant__ struct emit_table t, int num_bins)
{
  int lo = sproj_block_piece(t.block_start, t.npieces);
  unsigned i = (blockIdx.x - t.block_start[lo]) * blockDim.x + threadIdx.x;
  if (i < t.n[lo])
    sim_emit_lor(t.counts[lo], t.off[lo], t.out[lo], num_bins, i);
}

extern "C" void sproj_sim_emit_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_emit_arg *arg = (const struct sproj_emit_arg *)cl_arg;
  struct emit_table t;
  unsigned blocks = 0;
  t.npieces = arg->npieces;
  for (int q = 0; q < arg->npieces; q++) {
    t.block_start[q] = blocks;
    t.n[q] = STARPU_VECTOR_GET_NX(buffers[3 * q]);
    t.counts[q] = (const float *)STARPU_VECTOR_GET_PTR(buffers[3 * q]);
    t.off[q] = (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[3 * q + 1]);
    t.out[q] = (int16_t *)STARPU_VECTOR_GET_PTR(buffers[3 * q + 2]);
    blocks += (t.n[q] + SPROJ_CUDA_BLOCK - 1) / SPROJ_CUDA_BLOCK;
  }
  t.block_start[arg->npieces] = blocks;
  if (blocks == 0)
    return;
  sim_emit_kernel<<<blocks, SPROJ_CUDA_BLOCK, 0, starpu_cuda_get_local_stream()>>>(t, arg->num_bins);
  SPROJ_CUDA_CHECK_LAUNCH();
}
