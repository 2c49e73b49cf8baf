/* SPDX-License-Identifier: Apache-2.0 */
/* tof_tiles.h: the TOF listmode back projection by image tiles (GPU variant `tiles`, doc/benchmarks.md, version 25):
 * the planes an event walks cut into segments, each the planes of one tile, so that a tile's segments add into the
 * tile in shared memory and the tile goes into the image once. The tiles, the segments and a segment's samples are
 * defined here once, for the CUDA kernels and for the tests, which replay them on the host. */
#ifndef SPROJ_TOF_TILES_H
#define SPROJ_TOF_TILES_H

#include "joseph3d_tof_lm.h"

/* A tile of rays along axis a (0 or 1) holds S planes of that axis (a slab) times U + 1 voxels of the other
 * transaxial axis u (a band, with one voxel of the next band: a sample's corners are iu and iu + 1) times the whole
 * axis 2 (v: each ray of a cylindrical scanner crosses many slices, and axis 2 is the image's fastest, so a tile's
 * rows are contiguous in the image). A plane's band is decided by its sample's iu alone, so each plane of a walk
 * belongs to exactly one tile. Rays along axis 2 (principal axis along the scanner, rare in PET) add into the image
 * directly, as the per-event kernel does. */
#define SPROJ_TOF_TILES_SLAB 8
#define SPROJ_TOF_TILES_BAND 16
/* Tiles of one image at most (their counters live in shared memory during binning). */
#define SPROJ_TOF_TILES_MAX 8192
/* Segments of one event at most (a walk of up to ~72 planes in slabs of 8, some crossing a band): an event with more
 * adds directly. */
#define SPROJ_TOF_TILES_MAX_SEGMENTS 48

/* Records a task's scratch holds per event (segments: ~6.5 per event of the benchmark's 20 M); a task whose events
 * have more falls back to the per-event kernel. */
#define SPROJ_TOF_TILES_RECORDS_PER_EVENT 10
/* Partial sums a forward projection keeps per event, one per segment (an event of more segments goes directly). */
#define SPROJ_TOF_TILES_FWD_SLOTS 12
/* Threads of a task's grid beyond its events at most: each of its up to 64 pieces starts a block of 256. */
#define SPROJ_TOF_TILES_GRID_EXTRA (64 * 256)

/* 32-bit words of a scratch buffer's bookkeeping for ntiles tiles (joseph3d_tof_lm_back.cu: count, cursor, offset,
 * items and flags), before the records. */
SPROJ_HD size_t sproj_tof_tiles_header_words(int ntiles)
{
  return 4 * (size_t)ntiles + 9u;
}

/* 32-bit words of the scratch buffer of tasks of up to `events` events, for any image. */
SPROJ_HD size_t sproj_tof_tiles_scratch_words(int64_t events)
{
  size_t threads = (size_t)events + SPROJ_TOF_TILES_GRID_EXTRA;
  /* the records, and for forward projections each event's partial sums and its number of segments (a byte) */
  return sproj_tof_tiles_header_words(SPROJ_TOF_TILES_MAX) + (size_t)SPROJ_TOF_TILES_RECORDS_PER_EVENT * (size_t)events +
         threads * SPROJ_TOF_TILES_FWD_SLOTS + (threads + 3u) / 4u;
}

struct sproj_tof_tiles {
  int slab, band;     /* S and U */
  int n[3];           /* the image */
  int nslab[2];       /* slabs of axis 0 and of axis 1 */
  int nband[2];       /* bands of the u axis of each: 1 (axis 1) and 0 (axis 0) */
  int base[2];        /* first tile of each axis */
  int ntiles;         /* tiles of both axes; tile number ntiles is the list of events that add directly */
  int tile_floats;    /* S x (U + 1) x n[2] */
};

/* The tiles of an image whose tile holds at most max_floats floats: 1 with t filled, 0 when no shape fits (then the
 * per-event kernel runs). */
SPROJ_HD int sproj_tof_tiles_plan(const struct sproj_geom *geom, int max_floats, struct sproj_tof_tiles *t)
{
  int slab = SPROJ_TOF_TILES_SLAB, band = SPROJ_TOF_TILES_BAND;
  for (int k = 0; k < 3; k++)
    if (geom->n[k] <= 0)
      return 0;
  while ((int64_t)slab * (band + 1) * geom->n[2] > max_floats) {
    if (band > 8)
      band /= 2;
    else if (slab > 2)
      slab /= 2;
    else
      return 0;
  }
  int64_t tiles = 0;
  for (int a = 0; a < 2; a++) {
    int nu = geom->n[1 - a];
    t->nslab[a] = (geom->n[a] + slab - 1) / slab;
    t->nband[a] = nu / band + 1; /* iu + 1 in [0, nu] */
    t->base[a] = (int)tiles;
    tiles += (int64_t)t->nslab[a] * t->nband[a];
  }
  if (tiles + 1 > SPROJ_TOF_TILES_MAX)
    return 0;
  t->slab = slab;
  t->band = band;
  for (int k = 0; k < 3; k++)
    t->n[k] = geom->n[k];
  t->ntiles = (int)tiles;
  t->tile_floats = slab * (band + 1) * geom->n[2];
  return 1;
}

/* The band of a sample at iu on the u axis of size nu: corners outside the image add nothing, so iu is first
 * clamped into [-1, nu - 1], which leaves every sample that adds anything where it is. */
SPROJ_HD int sproj_tof_tiles_band_of(const struct sproj_tof_tiles *t, int iu, int nu)
{
  iu = iu < -1 ? -1 : iu > nu - 1 ? nu - 1 : iu;
  return (iu + 1) / t->band;
}

/* iu of the sample in plane k: the very expression of sproj_ray_corners. */
SPROJ_HD int sproj_tof_tiles_iu(const struct sproj_ray *r, int k)
{
  float fu = k * r->au + r->bu;
  return (int)floorf(fu);
}

/* The tiles an event's walk k0..k1 (sproj_tof_lm_setup's, within the ray's planes) crosses, in the order of its
 * planes, into tiles[]: their number, or -1 when the event adds directly (a ray along axis 2, or more than
 * SPROJ_TOF_TILES_MAX_SEGMENTS segments). */
SPROJ_HD int sproj_tof_tiles_segments(const struct sproj_tof_tiles *t, const struct sproj_ray *r, int k0, int k1,
                                      int *tiles)
{
  if (r->axis == 2)
    return -1;
  if (k0 < r->first)
    k0 = r->first;
  if (k1 > r->last)
    k1 = r->last;
  if (k0 > k1)
    return 0;
  int a = r->axis, nu = r->nu, count = 0;
  for (int s = k0 / t->slab; s * t->slab <= k1; s++) {
    int ka = s * t->slab > k0 ? s * t->slab : k0, kb = s * t->slab + t->slab - 1 < k1 ? s * t->slab + t->slab - 1 : k1;
    /* iu is monotonic in k (a linear function, floored): the bands between the ends' are the slab's */
    int ba = sproj_tof_tiles_band_of(t, sproj_tof_tiles_iu(r, ka), nu);
    int bb = sproj_tof_tiles_band_of(t, sproj_tof_tiles_iu(r, kb), nu);
    int lo = ba < bb ? ba : bb, hi = ba < bb ? bb : ba;
    for (int b = lo; b <= hi; b++) {
      if (count == SPROJ_TOF_TILES_MAX_SEGMENTS)
        return -1;
      tiles[count++] = t->base[a] + s * t->nband[a] + b;
    }
  }
  return count;
}

/* What tile `tile` (< ntiles) is: its axis, slab and band. */
SPROJ_HD void sproj_tof_tiles_where(const struct sproj_tof_tiles *t, int tile, int *a, int *s, int *b)
{
  *a = tile >= t->base[1] ? 1 : 0;
  int rel = tile - t->base[*a];
  *s = rel / t->nband[*a];
  *b = rel % t->nband[*a];
}

/* The image element of float i of tile `tile` (i < tile_floats), or -1 outside the image. The tile is
 * [plane of the slab][u from b * U - 1][v]. */
SPROJ_HD int64_t sproj_tof_tiles_voxel(const struct sproj_tof_tiles *t, int tile, int i)
{
  int a, s, b;
  sproj_tof_tiles_where(t, tile, &a, &s, &b);
  int nv = t->n[2], row = i / nv, v = i - row * nv;
  int ks = row / (t->band + 1), uu = row - ks * (t->band + 1);
  int p = s * t->slab + ks, u = b * t->band - 1 + uu;
  if (p >= t->n[a] || u < 0 || u >= t->n[1 - a])
    return -1;
  return a == 0 ? ((int64_t)p * t->n[1] + u) * nv + v : ((int64_t)u * t->n[1] + p) * nv + v;
}

/* A segment: the planes ka..kb of a walk that tile `tile` holds (those whose band is the tile's among them), and
 * where their samples fall in the tile: [plane - slab_first][u - u_first][v], rows of nv floats. */
struct sproj_tof_tiles_seg {
  int ka, kb, slab_first, band, u_first, nv, row;
};

SPROJ_HD void sproj_tof_tiles_seg_of(const struct sproj_tof_tiles *t, int tile, const struct sproj_ray *r, int k0,
                                     int k1, struct sproj_tof_tiles_seg *g)
{
  int a, s;
  sproj_tof_tiles_where(t, tile, &a, &s, &g->band);
  g->slab_first = s * t->slab;
  g->ka = g->slab_first > k0 ? g->slab_first : k0;
  g->ka = g->ka > r->first ? g->ka : r->first;
  g->kb = g->slab_first + t->slab - 1 < k1 ? g->slab_first + t->slab - 1 : k1;
  g->kb = g->kb < r->last ? g->kb : r->last;
  g->u_first = g->band * t->band - 1;
  g->nv = t->n[2];
  g->row = t->band + 1;
}

/* The sample of plane k of segment g of an event in bin b: 0 when the plane is another tile's or its weight is 0;
 * else its TOF weight w and window sum (sproj_tof_lm_weight), its bilinear fractions, which corners are inside the
 * image (sproj_ray_corners' order: (u0,v0), (u1,v0), (u0,v1), (u1,v1)) and the tile float of corner (u0,v0), the
 * others nv, 1 and nv + 1 after it. The expressions are sproj_ray_corners'. */
struct sproj_tof_tiles_sample {
  float w, sum, wu, wv;
  int ok[4];
  unsigned at;
};

SPROJ_HD int sproj_tof_tiles_sample_at(const struct sproj_tof_tiles *t, const struct sproj_tof_tiles_seg *g,
                                       const struct sproj_ray *r, const struct sproj_tof_line *l, int k, int b,
                                       struct sproj_tof_tiles_sample *p)
{
  float fu = k * r->au + r->bu, fv = k * r->av + r->bv;
  int iu = (int)floorf(fu), iv = (int)floorf(fv);
  if (sproj_tof_tiles_band_of(t, iu, r->nu) != g->band)
    return 0;
  p->w = sproj_tof_lm_weight(l, k, b, &p->sum);
  if (p->w == 0.0f)
    return 0;
  p->wu = fu - iu;
  p->wv = fv - iv;
  int u0 = (unsigned)iu < (unsigned)r->nu, u1 = (unsigned)(iu + 1) < (unsigned)r->nu;
  int v0 = (unsigned)iv < (unsigned)r->nv, v1 = (unsigned)(iv + 1) < (unsigned)r->nv;
  p->ok[0] = u0 && v0;
  p->ok[1] = u1 && v0;
  p->ok[2] = u0 && v1;
  p->ok[3] = u1 && v1;
  /* used only for corners inside the image, which are then inside the tile (wrapping arithmetic otherwise) */
  p->at = ((unsigned)(k - g->slab_first) * (unsigned)g->row + (unsigned)(iu - g->u_first)) * (unsigned)g->nv +
          (unsigned)iv;
  return 1;
}

/* The back projection of an event in bin b with value `value` over the planes of tile `tile`, into the tile's floats
 * (tile_mem, shared memory on GPUs): the samples, weights and products of joseph3d_tof_lm_back_lor (starproj's
 * convention), each added where the per-event kernel adds it in the image. r, l, k0, k1: sproj_tof_lm_setup's. */
SPROJ_HD void sproj_tof_tiles_back_segment(const struct sproj_tof_tiles *t, int tile, const struct sproj_ray *r,
                                           const struct sproj_tof_line *l, int k0, int k1, int b, float value,
                                           float *tile_mem)
{
  struct sproj_tof_tiles_seg g;
  struct sproj_tof_tiles_sample p;
  sproj_tof_tiles_seg_of(t, tile, r, k0, k1, &g);
  const unsigned next[4] = {0u, (unsigned)g.nv, 1u, (unsigned)g.nv + 1u};
  for (int k = g.ka; k <= g.kb; k++) {
    if (!sproj_tof_tiles_sample_at(t, &g, r, l, k, b, &p))
      continue;
    float val = r->cf * ((value / p.sum) * p.w);
    float w[4] = {val * ((1 - p.wu) * (1 - p.wv)), val * (p.wu * (1 - p.wv)), val * ((1 - p.wu) * p.wv),
                  val * (p.wu * p.wv)};
    for (int q = 0; q < 4; q++)
      if (p.ok[q])
        SPROJ_ADD(&tile_mem[p.at + next[q]], w[q]);
  }
}

/* The forward projection of an event in bin b over the planes of tile `tile`, from the tile's floats (tile_mem: the
 * image's values, 0 outside it): the samples, weights and terms of joseph3d_tof_lm_fwd_lor (starproj's convention),
 * summed in the order of the planes. The event's value is the sum of its segments' in the order of its walk: the same
 * terms as the per-event sum, grouped by segment. */
SPROJ_HD float sproj_tof_tiles_fwd_segment(const struct sproj_tof_tiles *t, int tile, const struct sproj_ray *r,
                                           const struct sproj_tof_line *l, int k0, int k1, int b,
                                           const float *tile_mem)
{
  struct sproj_tof_tiles_seg g;
  struct sproj_tof_tiles_sample p;
  sproj_tof_tiles_seg_of(t, tile, r, k0, k1, &g);
  const unsigned next[4] = {0u, (unsigned)g.nv, 1u, (unsigned)g.nv + 1u};
  float out = 0.0f;
  for (int k = g.ka; k <= g.kb; k++) {
    if (!sproj_tof_tiles_sample_at(t, &g, r, l, k, b, &p))
      continue;
    float c[4];
    for (int q = 0; q < 4; q++)
      c[q] = p.ok[q] ? tile_mem[p.at + next[q]] : 0.0f;
    /* sproj_ray_sample's expression */
    float sample = c[0] * (1 - p.wu) * (1 - p.wv) + c[1] * p.wu * (1 - p.wv) + c[2] * (1 - p.wu) * p.wv +
                   c[3] * p.wu * p.wv;
    float v = r->cf * sample;
    out += (v / p.sum) * p.w;
  }
  return out;
}

#endif
