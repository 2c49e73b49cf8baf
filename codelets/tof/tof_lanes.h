/* SPDX-License-Identifier: Apache-2.0 */
/* tof_lanes.h: the TOF projectors for 16 LORs or events at once, one per AVX-512 lane (x86-64 CPUs only).
 *
 * Built on joseph3d_lanes.h (the rays' planes, corners and bilinear gathers, the block order that puts neighbouring
 * LORs side by side), with the edges from the task's table (tof_table.h), fetched for 16 lanes by 64-bit gathers
 * (a piece's two float pairs): each lane does the float operations of the scalar code with the table, in the same
 * order, so that forward values are the scalar table path's bits (the sinogram's bins kept beside the samples as in
 * tof_slide.h, each bin's additions in plane order) and back projections differ from it only in the order of the adds
 * into a voxel. The lanes serve tasks whose LORs share the table's sigma, sinogram windows of at most
 * SPROJ_TOF_SLIDE_NARROW bins and listmode events in starproj's convention; the codelets run the scalar code for the
 * rest. */
#ifndef SPROJ_TOF_LANES_H
#define SPROJ_TOF_LANES_H

#include "joseph3d_lanes.h"
#include "tof.h"
#include "tof_table.h"
#include "tof_slide.h"
#include "joseph3d_tof_lm.h"
#include "joseph3d_tof_sino_fwd.h"
#include "joseph3d_tof_sino_back.h"

#ifdef SPROJ_HAVE_LANES

/* Lanes of the TOF projectors: AVX-512's 16. */
#define SPROJ_TOF_LANES SPROJ_LANES_AVX512
/* Every lane of a group. */
#define SPROJ_TOF_LANES_ALL 0xffffu
/* Bytes per unit of the table gathers' offsets: one piece's float pair. */
#define SPROJ_TOF_PAIR_SCALE ((int)(2 * sizeof(float)))

/* A block of LORs or events prepared for the lanes: the rays and their order (sproj_lanes_sort), and per LOR its TOF
 * line (at, bt) and the planes it walks (listmode: those sproj_tof_lm_planes gives; sinogram: the ray's). */
struct sproj_tof_lanes_work {
  struct sproj_lanes_work rays;
  float at[SPROJ_LANES_BLOCK], bt[SPROJ_LANES_BLOCK];
  int first[SPROJ_LANES_BLOCK], count[SPROJ_LANES_BLOCK];
};

/* What every step of a group of 16 lanes needs besides the rays: the lanes' TOF lines and the table's shape. */
struct sproj_tof16 {
  __m512 at, bt, max_diff, steps_f;
  __m512i steps, dmin, last;
  const struct sproj_tof_table *tab;
};

/* One sample of each lane: its TOF coordinate's window and its place in the table (the scalar sproj_tof_sample_at and
 * sproj_tof_table_find, the same float operations). */
struct sproj_tof16_sample {
  __m512i it_min, n, row;
  __m512 t;
};

__attribute__((target("avx512f"))) static inline struct sproj_tof16_sample sproj_tof16_sample_at(
  const struct sproj_tof16 *c, __m512i k)
{
  struct sproj_tof16_sample s;
  const __m512 lim = _mm512_set1_ps(SPROJ_TOF_MAX_COORD);
  __m512 it_f = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(k), c->at), c->bt);
  it_f = _mm512_min_ps(_mm512_max_ps(it_f, _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim);
  s.it_min = _mm512_cvttps_epi32(
    _mm512_roundscale_ps(_mm512_sub_ps(it_f, c->max_diff), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
  __m512i it_max = _mm512_cvttps_epi32(
    _mm512_roundscale_ps(_mm512_add_ps(it_f, c->max_diff), _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC));
  s.n = _mm512_sub_epi32(_mm512_add_epi32(it_max, _mm512_set1_epi32(1)), s.it_min);
  __m512 fl = _mm512_roundscale_ps(it_f, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 g = _mm512_mul_ps(_mm512_sub_ps(it_f, fl), c->steps_f);
  __m512 i = _mm512_roundscale_ps(g, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  s.t = _mm512_sub_ps(g, i);
  __m512i d = _mm512_sub_epi32(_mm512_sub_epi32(_mm512_cvttps_epi32(fl), s.it_min), c->dmin);
  s.row = _mm512_add_epi32(_mm512_mullo_epi32(d, c->steps), _mm512_cvttps_epi32(i));
  return s;
}

/* Edge j (per lane) of the samples s: the scalar sproj_tof_table_edge's operations. */
__attribute__((target("avx512f"))) static inline __m512 sproj_tof16_edge(const struct sproj_tof16 *c,
                                                                        const struct sproj_tof16_sample *s, __m512i j)
{
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  __m512i p = _mm512_min_epu32(_mm512_sub_epi32(s->row, _mm512_mullo_epi32(j, c->steps)), c->last);
  __m256i p0 = _mm512_castsi512_si256(p), p1 = _mm512_extracti64x4_epi64(p, 1);
  const double *lo = (const double *)(const void *)c->tab->lo, *hi = (const double *)(const void *)c->tab->hi;
  __m512 lo0 = _mm512_castpd_ps(_mm512_i32gather_pd(p0, lo, SPROJ_TOF_PAIR_SCALE));
  __m512 lo1 = _mm512_castpd_ps(_mm512_i32gather_pd(p1, lo, SPROJ_TOF_PAIR_SCALE));
  __m512 hi0 = _mm512_castpd_ps(_mm512_i32gather_pd(p0, hi, SPROJ_TOF_PAIR_SCALE));
  __m512 hi1 = _mm512_castpd_ps(_mm512_i32gather_pd(p1, hi, SPROJ_TOF_PAIR_SCALE));
  __m512 c0 = _mm512_permutex2var_ps(lo0, even, lo1), c1 = _mm512_permutex2var_ps(lo0, odd, lo1);
  __m512 c2 = _mm512_permutex2var_ps(hi0, even, hi1), c3 = _mm512_permutex2var_ps(hi0, odd, hi1);
  __m512 e = _mm512_add_ps(_mm512_mul_ps(c3, s->t), c2);
  e = _mm512_add_ps(_mm512_mul_ps(e, s->t), c1);
  return _mm512_add_ps(_mm512_mul_ps(e, s->t), c0);
}

/* The window's total (sproj_tof_sum): 0.5 (e_first - e_last), 1 where that is not positive. */
__attribute__((target("avx512f"))) static inline __m512 sproj_tof16_sum(__m512 e_first, __m512 e_last)
{
  __m512 sum = _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_sub_ps(e_first, e_last));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(sum, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_set1_ps(1.0f), sum);
}

/* Lane l's sample (sproj_ray_sample's operations) where bit l of `on` is set, else 0. */
__attribute__((target("avx512f"))) static inline __m512 sproj_tof16_bilinear(const float *img,
                                                                            const struct sproj_lanes16 *c,
                                                                            const struct sproj_plane16 *p, __mmask16 on)
{
  const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
  __mmask16 u0 = p->u0 & on, u1 = p->u1 & on;
  __m512i b01 = _mm512_add_epi32(p->base, c->sv), b11 = _mm512_add_epi32(p->b10, c->sv);
  __m512 v00 = _mm512_mask_i32gather_ps(zero, u0 & p->v0, p->base, img, SPROJ_GATHER_SCALE);
  __m512 v10 = _mm512_mask_i32gather_ps(zero, u1 & p->v0, p->b10, img, SPROJ_GATHER_SCALE);
  __m512 v01 = _mm512_mask_i32gather_ps(zero, u0 & p->v1, b01, img, SPROJ_GATHER_SCALE);
  __m512 v11 = _mm512_mask_i32gather_ps(zero, u1 & p->v1, b11, img, SPROJ_GATHER_SCALE);
  __m512 omu = _mm512_sub_ps(one, p->wu), omv = _mm512_sub_ps(one, p->wv);
  __m512 smp =
    _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(v00, omu), omv), _mm512_mul_ps(_mm512_mul_ps(v10, p->wu), omv));
  smp = _mm512_add_ps(smp, _mm512_mul_ps(_mm512_mul_ps(v01, omu), p->wv));
  return _mm512_add_ps(smp, _mm512_mul_ps(_mm512_mul_ps(v11, p->wu), p->wv));
}

/* The lanes' constant parts for lanes whose TOF lines are at[], bt[] (a group's). */
__attribute__((target("avx512f"))) static inline struct sproj_tof16 sproj_tof16_load(const float *at, const float *bt,
                                                                                    float max_diff,
                                                                                    const struct sproj_tof_table *tab)
{
  struct sproj_tof16 c;
  c.at = _mm512_loadu_ps(at);
  c.bt = _mm512_loadu_ps(bt);
  c.max_diff = _mm512_set1_ps(max_diff);
  c.steps_f = _mm512_set1_ps(tab->steps_f);
  c.steps = _mm512_set1_epi32(tab->steps);
  c.dmin = _mm512_set1_epi32(tab->dmin);
  c.last = _mm512_set1_epi32((int)tab->last);
  c.tab = tab;
  return c;
}

/* Listmode events of one run of this many in sproj_lanes_sort's order (neighbours in space) are put in the order of
 * the planes they walk (0 to ~70, by their bins), so that a group of lanes walks about as many planes as each of its
 * events needs: a group lasts as long as its longest walk. */
#define SPROJ_TOF_LANES_RUN 256

/* Orders order[0 .. n) by count[] (stable: a counting sort over the walks' lengths, capped at the last bucket). */
#define SPROJ_TOF_LANES_BUCKETS 256
static inline void sproj_tof_lanes_by_count(uint32_t *order, uint32_t n, const int *count)
{
  uint32_t start[SPROJ_TOF_LANES_BUCKETS + 1] = {0}, tmp[SPROJ_TOF_LANES_RUN];
  for (uint32_t o = 0; o < n; o++) {
    int c = count[order[o]];
    start[(c < SPROJ_TOF_LANES_BUCKETS - 1 ? c : SPROJ_TOF_LANES_BUCKETS - 1) + 1]++;
  }
  for (int b = 0; b < SPROJ_TOF_LANES_BUCKETS; b++)
    start[b + 1] += start[b];
  for (uint32_t o = 0; o < n; o++) {
    int c = count[order[o]];
    tmp[start[c < SPROJ_TOF_LANES_BUCKETS - 1 ? c : SPROJ_TOF_LANES_BUCKETS - 1]++] = order[o];
  }
  memcpy(order, tmp, n * sizeof *order);
}

/* Prepares LORs i < n of a block (sproj_lanes_sort's order, their TOF lines); with bins (listmode), each event's walk
 * (sproj_tof_lm_planes; those that walk nothing are left out of the order), and the events of each run of
 * SPROJ_TOF_LANES_RUN in the order of their walks' lengths. Returns how many are in the order. */
static inline uint32_t sproj_tof_lanes_prepare(struct sproj_tof_lanes_work *w, const struct sproj_geom *geom,
                                               const float *xs, const float *xe, uint32_t n,
                                               const struct sproj_tof_arg *tof, const float *offset,
                                               const int16_t *bins)
{
  uint32_t good = sproj_lanes_sort(&w->rays, geom, xs, xe, n, NULL), kept = 0;
  for (uint32_t o = 0; o < good; o++) {
    uint32_t i = w->rays.order[o];
    const struct sproj_ray *r = &w->rays.ray[i];
    struct sproj_tof_line l;
    sproj_tof_line_setup(r, geom, xs + 3 * (size_t)i, xe + 3 * (size_t)i, tof, tof->sigma,
                         offset ? offset[i] : tof->center_offset, NULL, &l);
    w->at[i] = l.at;
    w->bt[i] = l.bt;
    w->first[i] = r->first;
    w->count[i] = r->last - r->first + 1;
    if (bins) {
      int k0, k1;
      sproj_tof_lm_planes(r, &l, bins[i], &k0, &k1);
      if (k1 < k0)
        continue;
      w->first[i] = k0;
      w->count[i] = k1 - k0 + 1;
    }
    w->rays.order[kept++] = i;
  }
  if (bins)
    for (uint32_t o = 0; o < kept; o += SPROJ_TOF_LANES_RUN)
      sproj_tof_lanes_by_count(w->rays.order + o, kept - o < SPROJ_TOF_LANES_RUN ? kept - o : SPROJ_TOF_LANES_RUN,
                               w->count);
  return kept;
}

/* Lane l of a group takes LOR i of the block (or none: i < 0): its ray with the planes it walks, its TOF line.
 * Returns its number of planes. */
static inline int sproj_tof_lanes_set(struct sproj_lanes *L, float *at, float *bt, int l,
                                      const struct sproj_tof_lanes_work *w, long i)
{
  if (i < 0) {
    at[l] = bt[l] = 0.0f;
    return sproj_lanes_set(L, l, NULL);
  }
  sproj_lanes_set(L, l, &w->rays.ray[i]);
  L->first[l] = w->first[i];
  L->count[l] = w->count[i];
  at[l] = w->at[i];
  bt[l] = w->bt[i];
  return L->count[l];
}

/* ---- listmode ---- */

/* values[i] = joseph3d_tof_lm_fwd_lor with the table for events i < n (their bins), bit for bit. */
__attribute__((target("avx512f"))) static inline void sproj_tof_lanes_lm_fwd(struct sproj_tof_lanes_work *w,
                                                                            const float *img,
                                                                            const struct sproj_geom *geom,
                                                                            const struct sproj_tof_arg *tof,
                                                                            const struct sproj_tof_table *tab,
                                                                            const float *xs, const float *xe,
                                                                            const int16_t *bins, const float *offset,
                                                                            uint32_t n, float *values)
{
  struct sproj_lanes L;
  float at[SPROJ_TOF_LANES], bt[SPROJ_TOF_LANES], out[SPROJ_TOF_LANES];
  int bin[SPROJ_TOF_LANES];
  float max_diff = sproj_tof_max_diff(tof, tof->sigma);
  L.nvox = (unsigned)geom->n[0] * (unsigned)geom->n[1] * (unsigned)geom->n[2];
  for (uint32_t b0 = 0; b0 < n; b0 += SPROJ_LANES_BLOCK) {
    uint32_t m = n - b0 < SPROJ_LANES_BLOCK ? n - b0 : SPROJ_LANES_BLOCK;
    for (uint32_t i = 0; i < m; i++)
      values[b0 + i] = 0.0f; /* what an event that walks nothing projects to */
    uint32_t good = sproj_tof_lanes_prepare(w, geom, xs + 3 * (size_t)b0, xe + 3 * (size_t)b0, m, tof,
                                            offset ? offset + b0 : NULL, bins + b0);
    for (uint32_t s0 = 0; s0 < good; s0 += SPROJ_TOF_LANES) {
      int steps = 0;
      for (int l = 0; l < SPROJ_TOF_LANES; l++) {
        long i = s0 + l < good ? (long)w->rays.order[s0 + l] : -1;
        int c = sproj_tof_lanes_set(&L, at, bt, l, w, i);
        bin[l] = i >= 0 ? bins[b0 + i] : 0;
        steps = c > steps ? c : steps;
      }
      const struct sproj_lanes16 c = sproj_lanes16_load(&L);
      const struct sproj_tof16 t = sproj_tof16_load(at, bt, max_diff, tab);
      const __m512i one = _mm512_set1_epi32(1), b = _mm512_loadu_si512(bin);
      const __m512 half = _mm512_set1_ps(0.5f), cf = _mm512_loadu_ps(L.cf);
      __m512i k = _mm512_loadu_si512(L.first);
      __m512 acc = _mm512_setzero_ps();
      for (int st = 0; st < steps; st++) {
        struct sproj_plane16 p = sproj_lanes16_plane(&c, k, st, img);
        struct sproj_tof16_sample s = sproj_tof16_sample_at(&t, k);
        __m512i j = _mm512_sub_epi32(b, s.it_min);
        __mmask16 on = p.active & _mm512_cmpge_epi32_mask(j, _mm512_setzero_si512()) & _mm512_cmplt_epi32_mask(j, s.n);
        __m512 sum = sproj_tof16_sum(sproj_tof16_edge(&t, &s, _mm512_setzero_si512()), sproj_tof16_edge(&t, &s, s.n));
        __m512 wt = _mm512_mul_ps(half, _mm512_sub_ps(sproj_tof16_edge(&t, &s, j),
                                                      sproj_tof16_edge(&t, &s, _mm512_add_epi32(j, one))));
        on &= _mm512_cmp_ps_mask(wt, _mm512_setzero_ps(), _CMP_NEQ_UQ);
        __m512 v = _mm512_mul_ps(cf, sproj_tof16_bilinear(img, &c, &p, on));
        acc = _mm512_mask_add_ps(acc, on, acc, _mm512_mul_ps(_mm512_div_ps(v, sum), wt));
        k = _mm512_add_epi32(k, one);
      }
      _mm512_storeu_ps(out, acc);
      for (int l = 0; l < SPROJ_TOF_LANES && s0 + l < good; l++)
        values[b0 + w->rays.order[s0 + l]] = out[l];
    }
  }
}

/* joseph3d_tof_lm_back_lor with the table for events i < n of values[i]. */
__attribute__((target("avx512f"))) static inline void sproj_tof_lanes_lm_back(struct sproj_tof_lanes_work *w,
                                                                             struct sproj_out img,
                                                                             const struct sproj_geom *geom,
                                                                             const struct sproj_tof_arg *tof,
                                                                             const struct sproj_tof_table *tab,
                                                                             const float *xs, const float *xe,
                                                                             const int16_t *bins, const float *offset,
                                                                             uint32_t n, const float *values)
{
  struct sproj_lanes L;
  float at[SPROJ_TOF_LANES], bt[SPROJ_TOF_LANES], value[SPROJ_TOF_LANES];
  int bin[SPROJ_TOF_LANES];
  float max_diff = sproj_tof_max_diff(tof, tof->sigma);
  L.nvox = (unsigned)geom->n[0] * (unsigned)geom->n[1] * (unsigned)geom->n[2];
  for (uint32_t b0 = 0; b0 < n; b0 += SPROJ_LANES_BLOCK) {
    uint32_t m = n - b0 < SPROJ_LANES_BLOCK ? n - b0 : SPROJ_LANES_BLOCK;
    uint32_t good = sproj_tof_lanes_prepare(w, geom, xs + 3 * (size_t)b0, xe + 3 * (size_t)b0, m, tof,
                                            offset ? offset + b0 : NULL, bins + b0);
    for (uint32_t s0 = 0; s0 < good; s0 += SPROJ_TOF_LANES) {
      int steps = 0;
      for (int l = 0; l < SPROJ_TOF_LANES; l++) {
        long i = s0 + l < good ? (long)w->rays.order[s0 + l] : -1;
        /* an event of value 0 adds nothing: an empty lane */
        if (i >= 0 && values[b0 + i] == 0.0f)
          i = -1;
        int c = sproj_tof_lanes_set(&L, at, bt, l, w, i);
        bin[l] = i >= 0 ? bins[b0 + i] : 0;
        value[l] = i >= 0 ? values[b0 + i] : 0.0f;
        steps = c > steps ? c : steps;
      }
      const struct sproj_lanes16 c = sproj_lanes16_load(&L);
      const struct sproj_tof16 t = sproj_tof16_load(at, bt, max_diff, tab);
      const __m512i one = _mm512_set1_epi32(1), b = _mm512_loadu_si512(bin);
      const __m512 half = _mm512_set1_ps(0.5f), cf = _mm512_loadu_ps(L.cf), val = _mm512_loadu_ps(value);
      __m512i k = _mm512_loadu_si512(L.first);
      for (int st = 0; st < steps; st++) {
        struct sproj_plane16 p = sproj_lanes16_plane(&c, k, st, img.f);
        struct sproj_tof16_sample s = sproj_tof16_sample_at(&t, k);
        __m512i j = _mm512_sub_epi32(b, s.it_min);
        __mmask16 on = p.active & _mm512_cmpge_epi32_mask(j, _mm512_setzero_si512()) & _mm512_cmplt_epi32_mask(j, s.n);
        __m512 sum = sproj_tof16_sum(sproj_tof16_edge(&t, &s, _mm512_setzero_si512()), sproj_tof16_edge(&t, &s, s.n));
        __m512 wt = _mm512_mul_ps(half, _mm512_sub_ps(sproj_tof16_edge(&t, &s, j),
                                                      sproj_tof16_edge(&t, &s, _mm512_add_epi32(j, one))));
        on &= _mm512_cmp_ps_mask(wt, _mm512_setzero_ps(), _CMP_NEQ_UQ);
        /* r.cf * ((value / sum) * w), times the bilinear weights as sproj_ray_scatter forms them */
        __m512 v = _mm512_mul_ps(cf, _mm512_mul_ps(_mm512_div_ps(val, sum), wt));
        sproj_lanes16_scatter_plane(img, (unsigned)on, &c, &p, v);
        k = _mm512_add_epi32(k, one);
      }
    }
  }
}

/* ---- sinogram ---- */

/* The 16 lanes' sliding bins (tof_slide.h): bin[q] lane l is bin first[l] + q of lane l's LOR, whose values start
 * at element row[l] of the task's values. */
struct sproj_tof16_slide {
  __m512 bin[SPROJ_TOF_SLIDE_NARROW];
  __m512i first;
};

/* Adds v (lane l's float) into bin b of lane l's LOR where 0 <= b < num_bins, for the lanes of m. */
static inline void sproj_tof16_put(float *values, const long *row, int num_bins, unsigned m, const int *b,
                                   const float *v)
{
  for (; m; m &= m - 1) {
    int l = __builtin_ctz(m);
    if (b[l] >= 0 && b[l] < num_bins)
      values[row[l] + b[l]] += v[l];
  }
}

/* Forward: moves the bins of the lanes of `on` to start at `first`, adding those that leave into the values (the
 * scalar sproj_tof_slide_flush_to, lane by lane). */
__attribute__((target("avx512f"))) static inline void sproj_tof16_flush_to(struct sproj_tof16_slide *w, __mmask16 on,
                                                                          __m512i first, int num_bins, float *values,
                                                                          const long *row)
{
  const int width = SPROJ_TOF_SLIDE_NARROW;
  const __m512i one = _mm512_set1_epi32(1), wv = _mm512_set1_epi32(width);
  __mmask16 move = on & _mm512_cmpneq_epi32_mask(w->first, first);
  if (!move)
    return;
  int b[SPROJ_TOF_LANES];
  float v[SPROJ_TOF_LANES];
  /* lanes whose windows jumped a whole width or more (and the first sample): every bin leaves */
  __m512i d = _mm512_sub_epi32(first, w->first);
  __m512i minus_w = _mm512_sub_epi32(_mm512_setzero_si512(), wv);
  __mmask16 far = move & (_mm512_cmpge_epi32_mask(d, wv) | _mm512_cmple_epi32_mask(d, minus_w));
  if (far) {
    for (int q = 0; q < width; q++) {
      _mm512_storeu_si512(b, _mm512_add_epi32(w->first, _mm512_set1_epi32(q)));
      _mm512_storeu_ps(v, w->bin[q]);
      sproj_tof16_put(values, row, num_bins, far, b, v);
      w->bin[q] = _mm512_mask_mov_ps(w->bin[q], far, _mm512_setzero_ps());
    }
    w->first = _mm512_mask_mov_epi32(w->first, far, first);
    move &= ~far;
  }
  for (__mmask16 up; (up = move & _mm512_cmplt_epi32_mask(w->first, first));) {
    _mm512_storeu_si512(b, w->first);
    _mm512_storeu_ps(v, w->bin[0]);
    sproj_tof16_put(values, row, num_bins, up, b, v);
    for (int q = 0; q + 1 < width; q++)
      w->bin[q] = _mm512_mask_mov_ps(w->bin[q], up, w->bin[q + 1]);
    w->bin[width - 1] = _mm512_mask_mov_ps(w->bin[width - 1], up, _mm512_setzero_ps());
    w->first = _mm512_mask_add_epi32(w->first, up, w->first, one);
  }
  for (__mmask16 down; (down = move & _mm512_cmpgt_epi32_mask(w->first, first));) {
    _mm512_storeu_si512(b, _mm512_add_epi32(w->first, _mm512_set1_epi32(width - 1)));
    _mm512_storeu_ps(v, w->bin[width - 1]);
    sproj_tof16_put(values, row, num_bins, down, b, v);
    for (int q = width - 1; q > 0; q--)
      w->bin[q] = _mm512_mask_mov_ps(w->bin[q], down, w->bin[q - 1]);
    w->bin[0] = _mm512_mask_mov_ps(w->bin[0], down, _mm512_setzero_ps());
    w->first = _mm512_mask_sub_epi32(w->first, down, w->first, one);
  }
}

/* Edges 0 .. SPROJ_TOF_SLIDE_NARROW of the samples s into e; returns each lane's edge n. */
__attribute__((target("avx512f"))) static inline __m512 sproj_tof16_slide_edges(const struct sproj_tof16 *t,
                                                                               const struct sproj_tof16_sample *s,
                                                                               __m512 e[SPROJ_TOF_SLIDE_NARROW + 1])
{
  __m512 last = _mm512_setzero_ps();
  for (int q = 0; q <= SPROJ_TOF_SLIDE_NARROW; q++) {
    e[q] = sproj_tof16_edge(t, s, _mm512_set1_epi32(q));
    last = _mm512_mask_mov_ps(last, _mm512_cmpeq_epi32_mask(s->n, _mm512_set1_epi32(q)), e[q]);
  }
  return last;
}

/* Whether the lanes can run a task: gathers of the image (sproj_lanes_fit) and of the values (element offsets of
 * 32 bits), one sigma for every LOR (the table's), sinogram windows of at most SPROJ_TOF_SLIDE_NARROW bins, listmode
 * in starproj's convention. */
static inline int sproj_tof_lanes_fit(const struct sproj_geom *geom, const struct sproj_tof_arg *tof, int lm)
{
  return sproj_lanes_fit(geom) && !tof->per_lor_sigma &&
         (lm ? tof->convention == SPROJ_TOF_ARG_STARPROJ : sproj_tof_slide_width(tof) == SPROJ_TOF_SLIDE_NARROW);
}

/* values[i * num_bins + b] = joseph3d_tof_sino_fwd_lor with the table for LORs i < n, bit for bit. */
__attribute__((target("avx512f"))) static inline void sproj_tof_lanes_sino_fwd(struct sproj_tof_lanes_work *w,
                                                                              const float *img,
                                                                              const struct sproj_geom *geom,
                                                                              const struct sproj_tof_arg *tof,
                                                                              const struct sproj_tof_table *tab,
                                                                              const float *xs, const float *xe,
                                                                              const float *offset, uint32_t n,
                                                                              float *values)
{
  struct sproj_lanes L;
  float at[SPROJ_TOF_LANES], bt[SPROJ_TOF_LANES], v[SPROJ_TOF_LANES];
  long row[SPROJ_TOF_LANES];
  int b[SPROJ_TOF_LANES];
  const int nb = tof->num_bins;
  float max_diff = sproj_tof_max_diff(tof, tof->sigma);
  L.nvox = (unsigned)geom->n[0] * (unsigned)geom->n[1] * (unsigned)geom->n[2];
  for (uint32_t b0 = 0; b0 < n; b0 += SPROJ_LANES_BLOCK) {
    uint32_t m = n - b0 < SPROJ_LANES_BLOCK ? n - b0 : SPROJ_LANES_BLOCK;
    float *vals = values + (size_t)b0 * nb;
    for (size_t i = 0; i < (size_t)m * nb; i++)
      vals[i] = 0.0f;
    uint32_t good = sproj_tof_lanes_prepare(w, geom, xs + 3 * (size_t)b0, xe + 3 * (size_t)b0, m, tof,
                                            offset ? offset + b0 : NULL, NULL);
    for (uint32_t s0 = 0; s0 < good; s0 += SPROJ_TOF_LANES) {
      int steps = 0;
      for (int l = 0; l < SPROJ_TOF_LANES; l++) {
        long i = s0 + l < good ? (long)w->rays.order[s0 + l] : -1;
        int c = sproj_tof_lanes_set(&L, at, bt, l, w, i);
        row[l] = i >= 0 ? i * nb : 0;
        steps = c > steps ? c : steps;
      }
      const struct sproj_lanes16 c = sproj_lanes16_load(&L);
      const struct sproj_tof16 t = sproj_tof16_load(at, bt, max_diff, tab);
      const __m512i one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512(), nbv = _mm512_set1_epi32(nb);
      const __m512 half = _mm512_set1_ps(0.5f), cf = _mm512_loadu_ps(L.cf);
      struct sproj_tof16_slide sl;
      for (int q = 0; q < SPROJ_TOF_SLIDE_NARROW; q++)
        sl.bin[q] = _mm512_setzero_ps();
      sl.first = _mm512_set1_epi32(SPROJ_TOF_SLIDE_NOWHERE);
      __m512i k = _mm512_loadu_si512(L.first);
      for (int st = 0; st < steps; st++) {
        struct sproj_plane16 p = sproj_lanes16_plane(&c, k, st, img);
        struct sproj_tof16_sample s = sproj_tof16_sample_at(&t, k);
        /* a window that lies beyond the bins adds nothing; one wider than the bins kept (rounding) is projected by
         * the scalar code for that lane */
        __mmask16 on = p.active & _mm512_cmpgt_epi32_mask(_mm512_add_epi32(s.it_min, s.n), zero) &
                       _mm512_cmplt_epi32_mask(s.it_min, nbv);
        __mmask16 wide = on & _mm512_cmpgt_epi32_mask(s.n, _mm512_set1_epi32(SPROJ_TOF_SLIDE_NARROW));
        on &= ~wide;
        sproj_tof16_flush_to(&sl, on, s.it_min, nb, vals, row);
        __m512 e[SPROJ_TOF_SLIDE_NARROW + 1];
        __m512 e_last = sproj_tof16_slide_edges(&t, &s, e);
        __m512 val = _mm512_mul_ps(cf, sproj_tof16_bilinear(img, &c, &p, on));
        val = _mm512_div_ps(val, sproj_tof16_sum(e[0], e_last));
        for (int q = 0; q < SPROJ_TOF_SLIDE_NARROW; q++) {
          __mmask16 in = on & _mm512_cmpgt_epi32_mask(s.n, _mm512_set1_epi32(q));
          __m512 wq = _mm512_mul_ps(half, _mm512_sub_ps(e[q], e[q + 1]));
          sl.bin[q] = _mm512_mask_add_ps(sl.bin[q], in, sl.bin[q], _mm512_mul_ps(val, wq));
        }
        for (unsigned wm = wide; wm; wm &= wm - 1) {
          int l = __builtin_ctz(wm);
          long i = (long)w->rays.order[s0 + l];
          struct sproj_tof_line line;
          struct sproj_tof_sample smp;
          const struct sproj_ray *r = &w->rays.ray[i];
          sproj_tof_line_setup(r, geom, xs + 3 * (size_t)(b0 + i), xe + 3 * (size_t)(b0 + i), tof, tof->sigma,
                               offset ? offset[b0 + i] : tof->center_offset, tab, &line);
          int kl = L.first[l] + st;
          sproj_tof_sample_at(&line, kl, nb, &smp);
          float e_first = sproj_tof_sample_edge(&smp, &line, 0), e_n = sproj_tof_sample_edge(&smp, &line, smp.n);
          float vl = r->cf * sproj_ray_sample(img, r, kl);
          sproj_tof_fwd_sample_bins(&smp, &line, vl / sproj_tof_sum(e_first, e_n), e_first, e_n, vals + row[l], 1);
        }
        k = _mm512_add_epi32(k, one);
      }
      for (int q = 0; q < SPROJ_TOF_SLIDE_NARROW; q++) {
        _mm512_storeu_si512(b, _mm512_add_epi32(sl.first, _mm512_set1_epi32(q)));
        _mm512_storeu_ps(v, sl.bin[q]);
        sproj_tof16_put(vals, row, nb, SPROJ_TOF_LANES_ALL, b, v);
      }
    }
  }
}

/* joseph3d_tof_sino_back_lor with the table for LORs i < n of values[i * num_bins ..]. */
__attribute__((target("avx512f"))) static inline void sproj_tof_lanes_sino_back(struct sproj_tof_lanes_work *w,
                                                                               struct sproj_out img,
                                                                               const struct sproj_geom *geom,
                                                                               const struct sproj_tof_arg *tof,
                                                                               const struct sproj_tof_table *tab,
                                                                               const float *xs, const float *xe,
                                                                               const float *offset, uint32_t n,
                                                                               const float *values)
{
  struct sproj_lanes L;
  float at[SPROJ_TOF_LANES], bt[SPROJ_TOF_LANES];
  long row[SPROJ_TOF_LANES];
  int first[SPROJ_TOF_LANES], target[SPROJ_TOF_LANES];
  const int nb = tof->num_bins, width = SPROJ_TOF_SLIDE_NARROW;
  float max_diff = sproj_tof_max_diff(tof, tof->sigma);
  L.nvox = (unsigned)geom->n[0] * (unsigned)geom->n[1] * (unsigned)geom->n[2];
  for (uint32_t b0 = 0; b0 < n; b0 += SPROJ_LANES_BLOCK) {
    uint32_t m = n - b0 < SPROJ_LANES_BLOCK ? n - b0 : SPROJ_LANES_BLOCK;
    const float *vals = values + (size_t)b0 * nb;
    uint32_t good = sproj_tof_lanes_prepare(w, geom, xs + 3 * (size_t)b0, xe + 3 * (size_t)b0, m, tof,
                                            offset ? offset + b0 : NULL, NULL);
    for (uint32_t s0 = 0; s0 < good; s0 += SPROJ_TOF_LANES) {
      int steps = 0;
      for (int l = 0; l < SPROJ_TOF_LANES; l++) {
        long i = s0 + l < good ? (long)w->rays.order[s0 + l] : -1;
        int c = sproj_tof_lanes_set(&L, at, bt, l, w, i);
        row[l] = i >= 0 ? i * nb : 0;
        first[l] = SPROJ_TOF_SLIDE_NOWHERE;
        steps = c > steps ? c : steps;
      }
      const struct sproj_lanes16 c = sproj_lanes16_load(&L);
      const struct sproj_tof16 t = sproj_tof16_load(at, bt, max_diff, tab);
      const __m512i one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512(), nbv = _mm512_set1_epi32(nb);
      const __m512 half = _mm512_set1_ps(0.5f), cf = _mm512_loadu_ps(L.cf);
      /* the lanes' bins, kept lane-major so that a lane slides its own row with scalar moves (a lane's window
       * moves every ~8 planes) */
      float bins[SPROJ_TOF_SLIDE_NARROW][SPROJ_TOF_LANES] = {{0}};
      __m512i k = _mm512_loadu_si512(L.first);
      for (int st = 0; st < steps; st++) {
        struct sproj_plane16 p = sproj_lanes16_plane(&c, k, st, img.f);
        struct sproj_tof16_sample s = sproj_tof16_sample_at(&t, k);
        __mmask16 on = p.active & _mm512_cmpgt_epi32_mask(_mm512_add_epi32(s.it_min, s.n), zero) &
                       _mm512_cmplt_epi32_mask(s.it_min, nbv);
        __mmask16 wide = on & _mm512_cmpgt_epi32_mask(s.n, _mm512_set1_epi32(width));
        on &= ~wide;
        /* the lanes whose windows moved read the bins that come in (sproj_tof_slide_load_to, lane by lane) */
        _mm512_storeu_si512(target, s.it_min);
        for (unsigned mv = on & _mm512_cmpneq_epi32_mask(_mm512_loadu_si512(first), s.it_min); mv; mv &= mv - 1) {
          int l = __builtin_ctz(mv), f = first[l], to = target[l];
          const float *pl = vals + row[l];
          if (to - f >= width || f - to >= width) {
            for (int q = 0; q < width; q++)
              bins[q][l] = sproj_tof_slide_get(pl, nb, to + q);
          } else {
            for (; f < to; f++) {
              for (int q = 0; q + 1 < width; q++)
                bins[q][l] = bins[q + 1][l];
              bins[width - 1][l] = sproj_tof_slide_get(pl, nb, f + width);
            }
            for (; f > to; f--) {
              for (int q = width - 1; q > 0; q--)
                bins[q][l] = bins[q - 1][l];
              bins[0][l] = sproj_tof_slide_get(pl, nb, f - 1);
            }
          }
          first[l] = to;
        }
        __m512 e[SPROJ_TOF_SLIDE_NARROW + 1];
        __m512 e_last = sproj_tof16_slide_edges(&t, &s, e);
        __m512 acc = _mm512_setzero_ps();
        for (int q = 0; q < width; q++) {
          __mmask16 in = on & _mm512_cmpgt_epi32_mask(s.n, _mm512_set1_epi32(q));
          __m512 wqv = _mm512_mul_ps(half, _mm512_sub_ps(e[q], e[q + 1]));
          acc = _mm512_mask_add_ps(acc, in, acc, _mm512_mul_ps(_mm512_loadu_ps(bins[q]), wqv));
        }
        /* the scalar code's value cf * (acc / sum), added where it is not 0 */
        __m512 v = _mm512_mul_ps(cf, _mm512_div_ps(acc, sproj_tof16_sum(e[0], e_last)));
        on &= _mm512_cmp_ps_mask(acc, _mm512_setzero_ps(), _CMP_NEQ_UQ) &
              _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_UQ);
        sproj_lanes16_scatter_plane(img, (unsigned)on, &c, &p, v);
        for (unsigned wm = wide; wm; wm &= wm - 1) {
          int l = __builtin_ctz(wm);
          long i = (long)w->rays.order[s0 + l];
          struct sproj_tof_line line;
          const struct sproj_ray *r = &w->rays.ray[i];
          sproj_tof_line_setup(r, geom, xs + 3 * (size_t)(b0 + i), xe + 3 * (size_t)(b0 + i), tof, tof->sigma,
                               offset ? offset[b0 + i] : tof->center_offset, tab, &line);
          int kl = L.first[l] + st;
          float vl = sproj_tof_back_sample(r, &line, kl, nb, vals + row[l]);
          if (vl != 0.0f)
            sproj_ray_scatter(img, r, kl, vl);
        }
        k = _mm512_add_epi32(k, one);
      }
    }
  }
}

#endif /* SPROJ_HAVE_LANES */

#endif /* SPROJ_TOF_LANES_H */
