/* SPDX-License-Identifier: Apache-2.0 */
/* tof_tiles_cuda.h: what the TOF listmode kernels by image tiles (tof_tiles.h) share on GPUs: the task's scratch,
 * and the binning of its events' segments by tile (counted, scanned, placed), which the forward and the back
 * projection's launchers queue before their tile kernels. CUDA only. */
#ifndef SPROJ_TOF_TILES_CUDA_H
#define SPROJ_TOF_TILES_CUDA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tof_cuda.h"
#include "tof_tiles.h"

/* Records of a tile's work item: enough that its segments' samples outnumber the tile's floats several times. */
#define SPROJ_TILES_PER_ITEM 4096u
/* Floats a tile may take in shared memory: room for several blocks per multiprocessor. */
#define SPROJ_TILES_MAX_FLOATS 24576
/* Threads of the scan: one block. */
#define SPROJ_TILES_SCAN_THREADS 1024
/* A record is the grid index of its event (below 2^SPROJ_TILES_GID_BITS) and the segment's place in the event's
 * walk above it. */
#define SPROJ_TILES_GID_BITS 26u
#define SPROJ_TILES_GID_MASK ((1u << SPROJ_TILES_GID_BITS) - 1u)

/* The task's scratch buffer (32-bit words): count, cursor [ntiles + 1] (the segments of each tile; the last entry,
 * the events that go directly), offset [ntiles + 2] (where each tile's records start; the last, their total), items
 * [ntiles + 1] (the first work item of each tile, then their number), flags [4] (0: the records did not fit); then,
 * for a forward projection, each event's partial sums (slots floats an event, by grid index) and its number of
 * segments (a byte, 255: it went directly); the records last: tile by tile, each segment's record. */
struct sproj_tiles_scratch {
  unsigned *count, *cursor, *offset, *items, *flags, *records;
  float *partial;
  unsigned char *nseg;
  unsigned long long capacity; /* records */
};

/* Cuts words into the scratch of ntiles tiles for a grid of `threads` threads, with `slots` partial sums per event
 * (0: a back projection); 0 when it is too small. */
static inline int sproj_tiles_scratch_of(unsigned *words, size_t nwords, int ntiles, size_t threads, unsigned slots,
                                         struct sproj_tiles_scratch *s)
{
  size_t header = sproj_tof_tiles_header_words(ntiles);
  size_t sums = slots ? threads * slots + (threads + 3u) / 4u : 0u;
  if (nwords <= header + sums + threads)
    return 0;
  s->count = words;
  s->cursor = s->count + ntiles + 1;
  s->offset = s->cursor + ntiles + 1;
  s->items = s->offset + ntiles + 2;
  s->flags = s->items + ntiles + 1;
  s->partial = slots ? (float *)(words + header) : NULL;
  s->nseg = slots ? (unsigned char *)(words + header + threads * slots) : NULL;
  s->records = words + header + sums;
  s->capacity = nwords - header - sums;
  return 1;
}

/* The event of grid index gid of a piece table's grid (one thread per event): its piece, and the event in it. */
__device__ static inline int sproj_tiles_piece_of(const struct sproj_piece_table *pieces, unsigned gid,
                                                  unsigned *event)
{
  int piece = sproj_last_start_at_most(pieces->block_start, pieces->npieces, gid / SPROJ_CUDA_BLOCK);
  *event = gid - pieces->block_start[piece] * SPROJ_CUDA_BLOCK;
  return piece;
}

/* Event `event` of piece `piece`: its bin, its value (back projections) and its ray, TOF line and walk k0..k1; 0
 * when it gives or adds nothing (a LOR that samples no plane; back: value 0), as the per-event code decides. */
__device__ static inline int sproj_tiles_event(const struct sproj_proj_arg *arg, const struct sproj_piece_table *pieces,
                                               int back, int piece, unsigned event, const struct sproj_tof_table *tab,
                                               struct sproj_ray *r, struct sproj_tof_line *l, int *k0, int *k1,
                                               int *b, float *value)
{
  *b = pieces->bins[piece][event];
  *value = back ? pieces->values[piece][event] : 0.0f;
  if (back && *value == 0.0f)
    return 0;
  float sigma, offset;
  const float *xs, *xe;
  sproj_tof_piece_lor(arg, pieces, piece, event, &xs, &xe, &sigma, &offset);
  return sproj_tof_lm_setup(xs, xe, &arg->geom, &arg->tof, sigma, offset, tab, *b, r, l, k0, k1);
}

/* The segments of this thread's event (tiles[], their number), or -1 when it goes directly (a ray along axis 2, more
 * than max_segs segments); 0 when it has none. */
__device__ static inline int sproj_tiles_of_thread(const struct sproj_proj_arg *arg,
                                                   const struct sproj_piece_table *pieces,
                                                   const struct sproj_tof_tiles *tiles, int back, int max_segs,
                                                   int *seg)
{
  unsigned event;
  int piece = sproj_piece_of_thread(pieces, &event);
  struct sproj_ray r;
  struct sproj_tof_line l;
  int k0, k1, b;
  float value;
  if (event >= pieces->n[piece] || !sproj_tiles_event(arg, pieces, back, piece, event, NULL, &r, &l, &k0, &k1, &b, &value))
    return 0;
  int ns = sproj_tof_tiles_segments(tiles, &r, k0, k1, seg);
  return ns > max_segs ? -1 : ns;
}

/* The segments of each tile, counted in shared memory per block ((ntiles + 1) words), then added into count. */
__global__ static void sproj_tiles_count_kernel(const __grid_constant__ struct sproj_proj_arg arg,
                                                const __grid_constant__ struct sproj_piece_table pieces,
                                                const __grid_constant__ struct sproj_tof_tiles tiles, int back,
                                                int max_segs, unsigned *count)
{
  unsigned *hist = (unsigned *)sproj_tof_shared;
  for (int i = threadIdx.x; i <= tiles.ntiles; i += blockDim.x)
    hist[i] = 0u;
  __syncthreads();
  int seg[SPROJ_TOF_TILES_MAX_SEGMENTS];
  int ns = sproj_tiles_of_thread(&arg, &pieces, &tiles, back, max_segs, seg);
  if (ns < 0)
    atomicAdd(&hist[tiles.ntiles], 1u);
  for (int j = 0; j < ns; j++)
    atomicAdd(&hist[seg[j]], 1u);
  __syncthreads();
  for (int i = threadIdx.x; i <= tiles.ntiles; i += blockDim.x)
    if (hist[i])
      atomicAdd(&count[i], hist[i]);
}

/* Where each tile's records start (exclusive sums of count; cursor a copy) and its work items of at most per_item
 * records; flags[0] = 1 when the records exceed the capacity. One block of SPROJ_TILES_SCAN_THREADS. */
__global__ static void sproj_tiles_scan_kernel(int ntiles, unsigned per_item, unsigned long long capacity,
                                               const unsigned *count, unsigned *cursor, unsigned *offset,
                                               unsigned *items, unsigned *flags)
{
  __shared__ unsigned long long rec[SPROJ_TILES_SCAN_THREADS], work[SPROJ_TILES_SCAN_THREADS];
  int n = ntiles + 1, per = (n + SPROJ_TILES_SCAN_THREADS - 1) / SPROJ_TILES_SCAN_THREADS, at = threadIdx.x * per;
  unsigned long long sr = 0, sw = 0;
  for (int i = at; i < at + per && i < n; i++) {
    sr += count[i];
    if (i < ntiles)
      sw += (count[i] + per_item - 1u) / per_item;
  }
  rec[threadIdx.x] = sr;
  work[threadIdx.x] = sw;
  __syncthreads();
  for (int d = 1; d < SPROJ_TILES_SCAN_THREADS; d *= 2) {
    unsigned long long ar = threadIdx.x >= (unsigned)d ? rec[threadIdx.x - d] : 0ull;
    unsigned long long aw = threadIdx.x >= (unsigned)d ? work[threadIdx.x - d] : 0ull;
    __syncthreads();
    rec[threadIdx.x] += ar;
    work[threadIdx.x] += aw;
    __syncthreads();
  }
  unsigned long long total = rec[SPROJ_TILES_SCAN_THREADS - 1];
  int over = total > capacity;
  sr = rec[threadIdx.x] - sr; /* exclusive: what the threads before hold */
  sw = work[threadIdx.x] - sw;
  for (int i = at; i < at + per && i < n; i++) {
    offset[i] = over ? 0u : (unsigned)sr;
    cursor[i] = offset[i];
    sr += count[i];
    if (i < ntiles) {
      items[i] = over ? 0u : (unsigned)sw;
      sw += (count[i] + per_item - 1u) / per_item;
    }
  }
  if (threadIdx.x == 0) {
    offset[n] = over ? 0u : (unsigned)total;
    items[ntiles] = over ? 0u : (unsigned)work[SPROJ_TILES_SCAN_THREADS - 1];
    flags[0] = (unsigned)over;
  }
}

/* Each segment's record written at its tile's place: a block counts its own segments per tile in shared memory (2 x
 * (ntiles + 1) words), takes a range of each tile's records with one atomic, and writes its segments there; with
 * nseg, each event's number of segments too (255: directly). */
__global__ static void sproj_tiles_fill_kernel(const __grid_constant__ struct sproj_proj_arg arg,
                                               const __grid_constant__ struct sproj_piece_table pieces,
                                               const __grid_constant__ struct sproj_tof_tiles tiles, int back,
                                               int max_segs, unsigned *cursor, unsigned *records,
                                               unsigned char *nseg, const unsigned *flags)
{
  if (flags[0])
    return;
  unsigned *local = (unsigned *)sproj_tof_shared, *base = local + tiles.ntiles + 1;
  for (int i = threadIdx.x; i <= tiles.ntiles; i += blockDim.x)
    local[i] = 0u;
  __syncthreads();
  int tile[SPROJ_TOF_TILES_MAX_SEGMENTS];
  int ns = sproj_tiles_of_thread(&arg, &pieces, &tiles, back, max_segs, tile);
  unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  if (nseg)
    nseg[gid] = ns < 0 ? 255u : (unsigned char)ns;
  if (ns < 0) {
    ns = 1;
    tile[0] = tiles.ntiles;
  }
  /* tile << 16 | the segment's place among the block's segments of that tile (< 256 x 48) */
  unsigned seg[SPROJ_TOF_TILES_MAX_SEGMENTS];
  for (int j = 0; j < ns; j++)
    seg[j] = (unsigned)tile[j] << 16 | atomicAdd(&local[tile[j]], 1u);
  __syncthreads();
  for (int i = threadIdx.x; i <= tiles.ntiles; i += blockDim.x)
    if (local[i])
      base[i] = atomicAdd(&cursor[i], local[i]);
  __syncthreads();
  for (int j = 0; j < ns; j++)
    records[base[seg[j] >> 16] + (seg[j] & 0xffffu)] = gid | (unsigned)j << SPROJ_TILES_GID_BITS;
}

/* The scratch buffer of a task by tiles (sproj_proj_arg.tiles), and its length in 32-bit words. */
static inline unsigned *sproj_tiles_scratch(void *buffers[], const struct sproj_proj_arg *arg, size_t *nwords)
{
  void *scratch = buffers[sproj_copies_buffer(arg)];
  *nwords = STARPU_VECTOR_GET_NX(scratch) * STARPU_VECTOR_GET_ELEMSIZE(scratch) / sizeof(unsigned);
  return (unsigned *)STARPU_VECTOR_GET_PTR(scratch);
}

/* Floats of dynamic shared memory before a tile: the table's, rounded up to 16 bytes. */
static inline size_t sproj_tiles_table_floats(size_t table_bytes)
{
  return ((table_bytes + 15u) & ~(size_t)15u) / sizeof(float);
}

/* The tile of work item w: the last tile whose first item is not after w (tiles without items share the next one's
 * first), and its records [first, end). */
__device__ static inline int sproj_tiles_item(const struct sproj_tof_tiles *tiles, const unsigned *offset,
                                              const unsigned *items, unsigned w, unsigned per_item, unsigned *first,
                                              unsigned *end)
{
  int t = sproj_last_start_at_most(items, tiles->ntiles, w);
  *first = offset[t] + (w - items[t]) * per_item;
  *end = offset[t + 1];
  if (*end - *first > per_item)
    *end = *first + per_item;
  return t;
}

/* The work items of a tile kernel, a block at a time: fill(t) prepares tile t in shared memory (every thread), then
 * each record of the item is one thread's segment(t, gid, j) (its event's grid index, the segment's place in the
 * walk), then done(t) (every thread); barriers between. */
template <class Fill, class Segment, class Done>
__device__ static inline void sproj_tiles_items(const struct sproj_tof_tiles *tiles, const unsigned *offset,
                                                const unsigned *items, const unsigned *records, Fill fill,
                                                Segment segment, Done done)
{
  unsigned total = items[tiles->ntiles];
  for (unsigned w = blockIdx.x; w < total; w += gridDim.x) {
    unsigned first, end;
    int t = sproj_tiles_item(tiles, offset, items, w, SPROJ_TILES_PER_ITEM, &first, &end);
    fill(t);
    __syncthreads();
    for (unsigned q = first + threadIdx.x; q < end; q += blockDim.x)
      segment(t, records[q] & SPROJ_TILES_GID_MASK, records[q] >> SPROJ_TILES_GID_BITS);
    __syncthreads();
    done(t);
    __syncthreads();
  }
}

/* What a task's binning decided, for its tile kernels. */
struct sproj_tiles_launch {
  struct sproj_tof_tiles tiles;
  struct sproj_tiles_scratch s;
  size_t table_floats, tile_bytes; /* the tile kernel's shared memory: the table's floats, then the tile */
  unsigned grid;                   /* the tile kernel's blocks: as many as the GPU holds at once */
};

/* SPROJ_TOF_TILES_REPORT=1: each task by tiles waits for its kernels and prints what they did on stderr (for
 * measurements: the segments per event, the work items, the direct events, whether the records fitted). */
static inline int sproj_tiles_report(void)
{
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("SPROJ_TOF_TILES_REPORT");
    on = e && strcmp(e, "1") == 0;
  }
  return on;
}

static inline void sproj_tiles_print(const char *what, const struct sproj_tiles_launch *T,
                                     const struct sproj_piece_table *pieces, cudaStream_t stream)
{
  unsigned offset[2], items = 0, flag = 0;
  unsigned long long events = 0;
  for (int p = 0; p < pieces->npieces; p++)
    events += pieces->n[p];
  if (cudaMemcpyAsync(offset, T->s.offset + T->tiles.ntiles, sizeof offset, cudaMemcpyDeviceToHost, stream) !=
        cudaSuccess ||
      cudaMemcpyAsync(&items, T->s.items + T->tiles.ntiles, sizeof items, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaMemcpyAsync(&flag, T->s.flags, sizeof flag, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  fprintf(stderr, "starproj tiles (%s): %llu events, %d tiles of %d x %d + 1 x %d, %u segments (%.2f an event), %u "
          "direct, %u work items%s\n", what, events, T->tiles.ntiles, T->tiles.slab, T->tiles.band, T->tiles.n[2],
          offset[0], events ? (double)offset[0] / (double)events : 0.0, offset[1] - offset[0], items,
          flag ? "; did not fit: per event" : "");
}

/* Plans the task's tiles and queues its binning (count, scan, place) on the stream: 1 with T filled, 0 when the tiles
 * do not serve it (the caller runs the per-event kernel). kernel: the task's tile kernel (its occupancy sizes the
 * grid); slots: partial sums per event (forward), 0 for a back projection; max_segs: segments an event may have. */
template <class Kernel>
static inline int sproj_tiles_bin(const struct sproj_proj_arg *arg, const struct sproj_piece_table *pieces,
                                  unsigned blocks, size_t table_bytes, unsigned *words, size_t nwords, Kernel kernel,
                                  unsigned slots, int max_segs, cudaStream_t stream, struct sproj_tiles_launch *T)
{
  size_t threads = (size_t)blocks * SPROJ_CUDA_BLOCK;
  if (threads > SPROJ_TILES_GID_MASK ||
      !sproj_tof_tiles_plan(&arg->geom, SPROJ_TILES_MAX_FLOATS, &T->tiles) ||
      !sproj_tiles_scratch_of(words, nwords, T->tiles.ntiles, threads, slots, &T->s))
    return 0;
  T->table_floats = table_bytes ? sproj_tiles_table_floats(table_bytes) : 0;
  T->tile_bytes = (T->table_floats + (size_t)T->tiles.tile_floats) * sizeof(float);
  size_t bin_bytes = 2 * ((size_t)T->tiles.ntiles + 1) * sizeof(unsigned);
  if (!sproj_cuda_shared_ok(kernel, T->tile_bytes) || !sproj_cuda_shared_ok(sproj_tiles_fill_kernel, bin_bytes) ||
      !sproj_cuda_shared_ok(sproj_tiles_count_kernel, bin_bytes / 2))
    return 0;
  int dev = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, SPROJ_CUDA_BLOCK, T->tile_bytes) != cudaSuccess ||
      per_sm < 1) {
    (void)cudaGetLastError();
    return 0;
  }
  T->grid = (unsigned)(sms * per_sm);
  cudaError_t err = cudaMemsetAsync(T->s.count, 0, ((size_t)T->tiles.ntiles + 1) * sizeof(unsigned), stream);
  if (err != cudaSuccess)
    STARPU_CUDA_REPORT_ERROR(err);
  int back = slots == 0;
  sproj_tiles_count_kernel<<<blocks, SPROJ_CUDA_BLOCK, bin_bytes / 2, stream>>>(*arg, *pieces, T->tiles, back, max_segs,
                                                                                 T->s.count);
  SPROJ_CUDA_CHECK_LAUNCH();
  sproj_tiles_scan_kernel<<<1, SPROJ_TILES_SCAN_THREADS, 0, stream>>>(
    T->tiles.ntiles, SPROJ_TILES_PER_ITEM, T->s.capacity, T->s.count, T->s.cursor, T->s.offset, T->s.items, T->s.flags);
  SPROJ_CUDA_CHECK_LAUNCH();
  sproj_tiles_fill_kernel<<<blocks, SPROJ_CUDA_BLOCK, bin_bytes, stream>>>(*arg, *pieces, T->tiles, back, max_segs,
                                                                           T->s.cursor, T->s.records, T->s.nseg,
                                                                           T->s.flags);
  SPROJ_CUDA_CHECK_LAUNCH();
  return 1;
}

#endif
