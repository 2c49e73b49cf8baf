/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_back.cu: CUDA kernels of the TOF listmode back projection. One thread per event, atomic adds (with
 * the shifted image, two float4 atomics per sample: sproj_add_pair); or, with the variant `tiles` (tof_tiles.h), the
 * events' walks cut into the segments of image tiles: counted per tile, placed in the tiles' order, and each tile's
 * segments added into the tile in shared memory, which then goes into the image with one atomic per non-zero float.
 * Variant (tof_cuda.h): the edges from a table in shared memory (TABLE). */
#include "config.h"
#include "tof_tiles_cuda.h"
#include "joseph3d_tof_lm_back.h"

/* Event `event` of piece `piece` back projected the per-event way into out. */
__device__ static inline void back_event(struct sproj_out out, const struct sproj_proj_arg *arg,
                                         const struct sproj_piece_table *pieces, int piece, unsigned event,
                                         const struct sproj_tof_table *tab)
{
  float sigma, offset;
  const float *xs, *xe;
  sproj_tof_piece_lor(arg, pieces, piece, event, &xs, &xe, &sigma, &offset);
  joseph3d_tof_lm_back_lor(out, &arg->geom, xs, xe, &arg->tof, sigma, offset, tab, pieces->bins[piece][event],
                           pieces->values[piece][event]);
}

/* The per-event kernel; with gate, only when *gate is not 0 (the tiles' fallback: they did not fit the scratch). */
template <bool TABLE>
__global__ static void tof_lm_back_kernel(float *img, float *shift, const __grid_constant__ struct sproj_proj_arg arg,
                                          const __grid_constant__ struct sproj_piece_table pieces,
                                          const __grid_constant__ struct sproj_tof_table_plan plan,
                                          const unsigned *gate)
{
  if (gate && *gate == 0u)
    return;
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = sproj_tof_table_of<TABLE>(&table, &plan);
  SPROJ_CUDA_THIS_LOR(pieces, piece, event);
  struct sproj_out out = sproj_out_of(img, &arg);
  out.shift = shift;
  back_event(out, &arg, &pieces, piece, event, tab);
}

/* The tiles' work items, a block at a time: the tile zeroed in shared memory, the item's segments added into it, the
 * tile's non-zero floats added into the image. */
template <bool TABLE>
__global__ static void tof_lm_back_tiles_kernel(float *img, const __grid_constant__ struct sproj_proj_arg arg,
                                                const __grid_constant__ struct sproj_piece_table pieces,
                                                const __grid_constant__ struct sproj_tof_table_plan plan,
                                                const __grid_constant__ struct sproj_tof_tiles tiles,
                                                unsigned table_floats, const unsigned *offset, const unsigned *items,
                                                const unsigned *records, const unsigned *flags)
{
  if (flags[0])
    return;
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = sproj_tof_table_of<TABLE>(&table, &plan);
  float *tile_mem = (float *)sproj_tof_shared + table_floats;
  sproj_tiles_items(
    &tiles, offset, items, records,
    [&](int) {
      for (int i = threadIdx.x; i < tiles.tile_floats; i += blockDim.x)
        tile_mem[i] = 0.0f;
    },
    [&](int t, unsigned gid, unsigned) {
      unsigned event;
      int piece = sproj_tiles_piece_of(&pieces, gid, &event);
      struct sproj_ray r;
      struct sproj_tof_line l;
      int k0, k1, b;
      float value;
      if (sproj_tiles_event(&arg, &pieces, 1, piece, event, tab, &r, &l, &k0, &k1, &b, &value))
        sproj_tof_tiles_back_segment(&tiles, t, &r, &l, k0, k1, b, value, tile_mem);
    },
    [&](int t) {
      for (int i = threadIdx.x; i < tiles.tile_floats; i += blockDim.x) {
        float v = tile_mem[i];
        if (v != 0.0f) {
          int64_t e = sproj_tof_tiles_voxel(&tiles, t, i);
          if (e >= 0)
            atomicAdd(&img[e], v);
        }
      }
    });
}

/* The events that go directly (rays along axis 2, walks of too many segments): the per-event code, one thread per
 * record. When the records did not fit (flags[0]) the tile kernels did nothing and the per-event kernel runs. */
template <bool TABLE>
__global__ static void tof_lm_back_direct_kernel(float *img, const __grid_constant__ struct sproj_proj_arg arg,
                                                 const __grid_constant__ struct sproj_piece_table pieces,
                                                 const __grid_constant__ struct sproj_tof_table_plan plan,
                                                 const __grid_constant__ struct sproj_tof_tiles tiles,
                                                 const unsigned *offset, const unsigned *records, const unsigned *flags)
{
  if (flags[0])
    return;
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = sproj_tof_table_of<TABLE>(&table, &plan);
  struct sproj_out out = sproj_out_of(img, &arg);
  for (unsigned q = offset[tiles.ntiles] + blockIdx.x * blockDim.x + threadIdx.x; q < offset[tiles.ntiles + 1];
       q += gridDim.x * blockDim.x) {
    unsigned event;
    int piece = sproj_tiles_piece_of(&pieces, records[q] & SPROJ_TILES_GID_MASK, &event);
    back_event(out, &arg, &pieces, piece, event, tab);
  }
}

/* Queues the back projection by tiles for the task; 0 when the tiles do not serve it. */
template <bool TABLE>
static int tiles_launch(float *img, const struct sproj_proj_arg *arg, const struct sproj_piece_table *pieces,
                        unsigned blocks, const struct sproj_tof_launch *L, unsigned *words, size_t nwords,
                        cudaStream_t stream)
{
  struct sproj_tiles_launch T;
  if (!sproj_tiles_bin(arg, pieces, blocks, TABLE ? L->table_bytes : 0, words, nwords,
                       tof_lm_back_tiles_kernel<TABLE>, 0u, SPROJ_TOF_TILES_MAX_SEGMENTS, stream, &T))
    return 0;
  tof_lm_back_tiles_kernel<TABLE><<<T.grid, SPROJ_CUDA_BLOCK, T.tile_bytes, stream>>>(
    img, *arg, *pieces, L->plan, T.tiles, (unsigned)T.table_floats, T.s.offset, T.s.items, T.s.records, T.s.flags);
  SPROJ_CUDA_CHECK_LAUNCH();
  tof_lm_back_direct_kernel<TABLE><<<T.grid, SPROJ_CUDA_BLOCK, L->table_bytes, stream>>>(
    img, *arg, *pieces, L->plan, T.tiles, T.s.offset, T.s.records, T.s.flags);
  SPROJ_CUDA_CHECK_LAUNCH();
  /* the records did not fit: every event the per-event way */
  tof_lm_back_kernel<TABLE><<<blocks, SPROJ_CUDA_BLOCK, L->table_bytes, stream>>>(img, NULL, *arg, *pieces, L->plan,
                                                                                 T.s.flags);
  SPROJ_CUDA_CHECK_LAUNCH();
  if (sproj_tiles_report())
    sproj_tiles_print("back", &T, pieces, stream);
  return 1;
}

extern "C" void sproj_joseph3d_tof_lm_back_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table pieces;
  unsigned blocks = sproj_piece_table_fill(&pieces, buffers, arg, 1);
  if (blocks == 0)
    return;
  struct sproj_tof_launch L = sproj_tof_launch_of(arg, 1);
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  cudaStream_t stream = starpu_cuda_get_local_stream();
  if (arg->tiles && arg->tof.convention != SPROJ_TOF_ARG_PARALLELPROJ && !arg->fixed_point) {
    size_t nwords;
    unsigned *words = sproj_tiles_scratch(buffers, arg, &nwords);
    if (L.table ? tiles_launch<true>(img, arg, &pieces, blocks, &L, words, nwords, stream)
                : tiles_launch<false>(img, arg, &pieces, blocks, &L, words, nwords, stream))
      return;
  }
  float *shift = sproj_cuda_shift(buffers, arg);
  if (L.table)
    tof_lm_back_kernel<true><<<blocks, SPROJ_CUDA_BLOCK, L.table_bytes, stream>>>(img, shift, *arg, pieces, L.plan,
                                                                                 NULL);
  else
    tof_lm_back_kernel<false><<<blocks, SPROJ_CUDA_BLOCK, 0, stream>>>(img, shift, *arg, pieces, L.plan, NULL);
  SPROJ_CUDA_CHECK_LAUNCH();
  if (shift)
    sproj_cuda_shift_add(img, shift, &arg->geom);
}
