/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_fwd.cu: CUDA kernels of the TOF listmode forward projection. One thread per event (a block first
 * sorts its events by the planes they walk, sproj_block_order, and each thread then takes the event at its place in
 * that order: what each event computes is unchanged); or, with the variant `tiles` (tof_tiles.h), the events' walks
 * cut into the segments of image tiles, binned by tile (tof_tiles_cuda.h), each tile loaded into shared memory once
 * per work item and its segments' partial sums written to their events' slots, which a last pass adds in the order
 * of each walk. Variants (tof_cuda.h): the edges from a table in shared memory (TABLE); the samples from the image's
 * pair layouts (PAIRS, joseph3d_ray.h: one place and 1.25 L2 sectors a sample instead of two and ~2.25). */
#include "config.h"
#include "tof_tiles_cuda.h"
#include "joseph3d_tof_lm_fwd.h"

/* Event `event` of piece `piece` forward projected the per-event way, its value written; its samples from the pair
 * layouts when pairs is not NULL (the same bits). */
__device__ static inline void fwd_event(const float *img, const float *pairs, const struct sproj_proj_arg *arg,
                                        const struct sproj_piece_table *pieces, int piece, unsigned event,
                                        const struct sproj_tof_table *tab)
{
  float sigma, offset;
  const float *xs, *xe;
  sproj_tof_piece_lor(arg, pieces, piece, event, &xs, &xe, &sigma, &offset);
  pieces->values[piece][event] = joseph3d_tof_lm_fwd_event(img, pairs, &arg->geom, xs, xe, &arg->tof, sigma, offset,
                                                           tab, pieces->bins[piece][event]);
}

template <bool TABLE, bool PAIRS>
__global__ static void tof_lm_fwd_kernel(const float *__restrict__ img, const float *__restrict__ pairs,
                                         const __grid_constant__ struct sproj_proj_arg arg,
                                         const __grid_constant__ struct sproj_piece_table pieces, int sorted,
                                         const __grid_constant__ struct sproj_tof_table_plan plan,
                                         const unsigned *gate)
{
  __shared__ struct sproj_block_order order;
  /* with gate, only when *gate is not 0 (the tiles' fallback: their records did not fit the scratch) */
  if (gate && *gate == 0u)
    return;
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = sproj_tof_table_of<TABLE>(&table, &plan);
  unsigned event;
  int piece = sproj_piece_of_thread(&pieces, &event);
  if (sorted) {
    /* the whole block sorts, threads without an event too (they count no planes) */
    unsigned planes = 0;
    if (event < pieces.n[piece]) {
      float sigma, offset;
      const float *xs, *xe;
      sproj_tof_piece_lor(&arg, &pieces, piece, event, &xs, &xe, &sigma, &offset);
      planes = sproj_tof_lm_count(xs, xe, &arg.geom, &arg.tof, sigma, offset, pieces.bins[piece][event]);
    }
    sproj_block_order_sort(&order, planes);
    event = event - threadIdx.x + order.at[threadIdx.x];
  }
  if (event >= pieces.n[piece])
    return;
  fwd_event(img, PAIRS ? pairs : NULL, &arg, &pieces, piece, event, tab);
}

/* The tiles' work items, a block at a time: the tile loaded into shared memory, each segment's partial sum written
 * to its event's slot. */
template <bool TABLE>
__global__ static void tof_lm_fwd_tiles_kernel(const float *__restrict__ img,
                                               const __grid_constant__ struct sproj_proj_arg arg,
                                               const __grid_constant__ struct sproj_piece_table pieces,
                                               const __grid_constant__ struct sproj_tof_table_plan plan,
                                               const __grid_constant__ struct sproj_tof_tiles tiles,
                                               unsigned table_floats, const unsigned *offset, const unsigned *items,
                                               const unsigned *records, float *partial, const unsigned *flags)
{
  if (flags[0])
    return;
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = sproj_tof_table_of<TABLE>(&table, &plan);
  float *tile_mem = (float *)sproj_tof_shared + table_floats;
  sproj_tiles_items(
    &tiles, offset, items, records,
    [&](int t) {
      for (int i = threadIdx.x; i < tiles.tile_floats; i += blockDim.x) {
        int64_t e = sproj_tof_tiles_voxel(&tiles, t, i);
        tile_mem[i] = e >= 0 ? img[e] : 0.0f;
      }
    },
    [&](int t, unsigned gid, unsigned j) {
      unsigned event;
      int piece = sproj_tiles_piece_of(&pieces, gid, &event);
      struct sproj_ray r;
      struct sproj_tof_line l;
      int k0, k1, b;
      float value, v = 0.0f;
      if (sproj_tiles_event(&arg, &pieces, 0, piece, event, tab, &r, &l, &k0, &k1, &b, &value))
        v = sproj_tof_tiles_fwd_segment(&tiles, t, &r, &l, k0, k1, b, tile_mem);
      partial[(size_t)gid * SPROJ_TOF_TILES_FWD_SLOTS + j] = v;
    },
    [](int) {});
}

/* Each event's value: its segments' partial sums added in the order of its walk (0 segments: 0); the events that
 * went directly are projected here the per-event way. Nothing when the records did not fit. */
template <bool TABLE>
__global__ static void tof_lm_fwd_sum_kernel(const float *__restrict__ img,
                                             const __grid_constant__ struct sproj_proj_arg arg,
                                             const __grid_constant__ struct sproj_piece_table pieces,
                                             const __grid_constant__ struct sproj_tof_table_plan plan,
                                             const float *partial, const unsigned char *nseg, const unsigned *flags)
{
  if (flags[0])
    return;
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = sproj_tof_table_of<TABLE>(&table, &plan);
  SPROJ_CUDA_THIS_LOR(pieces, piece, event);
  unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  int ns = nseg[gid];
  if (ns == 255) {
    fwd_event(img, NULL, &arg, &pieces, piece, event, tab);
    return;
  }
  float out = 0.0f;
  for (int j = 0; j < ns; j++)
    out += partial[(size_t)gid * SPROJ_TOF_TILES_FWD_SLOTS + j];
  pieces.values[piece][event] = out;
}

/* Queues the forward projection by tiles for the task; 0 when the tiles do not serve it. */
template <bool TABLE>
static int tiles_launch(const float *img, const struct sproj_proj_arg *arg, const struct sproj_piece_table *pieces,
                        unsigned blocks, const struct sproj_tof_launch *L, unsigned *words, size_t nwords,
                        cudaStream_t stream)
{
  struct sproj_tiles_launch T;
  if (!sproj_tiles_bin(arg, pieces, blocks, TABLE ? L->table_bytes : 0, words, nwords, tof_lm_fwd_tiles_kernel<TABLE>,
                       SPROJ_TOF_TILES_FWD_SLOTS, SPROJ_TOF_TILES_FWD_SLOTS, stream, &T))
    return 0;
  tof_lm_fwd_tiles_kernel<TABLE><<<T.grid, SPROJ_CUDA_BLOCK, T.tile_bytes, stream>>>(
    img, *arg, *pieces, L->plan, T.tiles, (unsigned)T.table_floats, T.s.offset, T.s.items, T.s.records, T.s.partial,
    T.s.flags);
  SPROJ_CUDA_CHECK_LAUNCH();
  tof_lm_fwd_sum_kernel<TABLE><<<blocks, SPROJ_CUDA_BLOCK, L->table_bytes, stream>>>(img, *arg, *pieces, L->plan,
                                                                                    T.s.partial, T.s.nseg, T.s.flags);
  SPROJ_CUDA_CHECK_LAUNCH();
  /* the records did not fit: every event the per-event way */
  tof_lm_fwd_kernel<TABLE, false><<<blocks, SPROJ_CUDA_BLOCK, L->table_bytes, stream>>>(
    img, NULL, *arg, *pieces, sproj_cuda_sort(), L->plan, T.s.flags);
  SPROJ_CUDA_CHECK_LAUNCH();
  if (sproj_tiles_report())
    sproj_tiles_print("forward", &T, pieces, stream);
  return 1;
}

/* The per-event kernel, its events' samples from the image or (PAIRS) from the pair layouts. */
template <bool TABLE, bool PAIRS>
static void launch(const float *img, const float *pairs, const struct sproj_proj_arg *arg,
                   const struct sproj_piece_table *pieces, unsigned blocks, const struct sproj_tof_launch *L,
                   cudaStream_t stream)
{
  tof_lm_fwd_kernel<TABLE, PAIRS><<<blocks, SPROJ_CUDA_BLOCK, TABLE ? L->table_bytes : 0, stream>>>(
    img, pairs, *arg, *pieces, sproj_cuda_sort(), L->plan, NULL);
  SPROJ_CUDA_CHECK_LAUNCH();
}

extern "C" void sproj_joseph3d_tof_lm_fwd_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table pieces;
  unsigned blocks = sproj_piece_table_fill(&pieces, buffers, arg, 1);
  if (blocks == 0)
    return;
  struct sproj_tof_launch L = sproj_tof_launch_of(arg, 1);
  const float *img = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  cudaStream_t stream = starpu_cuda_get_local_stream();
  if (arg->tiles && arg->tof.convention != SPROJ_TOF_ARG_PARALLELPROJ) {
    size_t nwords;
    unsigned *words = sproj_tiles_scratch(buffers, arg, &nwords);
    if (L.table ? tiles_launch<true>(img, arg, &pieces, blocks, &L, words, nwords, stream)
                : tiles_launch<false>(img, arg, &pieces, blocks, &L, words, nwords, stream))
      return;
  }
  const float *pairs = sproj_cuda_pairs(buffers, arg);
  if (pairs)
    L.table ? launch<true, true>(img, pairs, arg, &pieces, blocks, &L, stream)
            : launch<false, true>(img, pairs, arg, &pieces, blocks, &L, stream);
  else
    L.table ? launch<true, false>(img, NULL, arg, &pieces, blocks, &L, stream)
            : launch<false, false>(img, NULL, arg, &pieces, blocks, &L, stream);
}
