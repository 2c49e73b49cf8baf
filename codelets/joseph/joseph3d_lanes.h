/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_lanes.h: Joseph's method for several LORs at once, one LOR per SIMD lane (x86-64 CPUs only).
 *
 * Each lane steps through its own LOR's planes and does, for its sample, exactly the float operations of
 * sproj_ray_sample (joseph3d_ray.h), in the same order, and adds the samples of its LOR in plane order: a lane's
 * result has the bits of the scalar joseph3d_fwd_lor. Lanes whose LOR has no plane left are masked: they load
 * nothing and add nothing. Corners outside the image are masked out of the gathers, which gives the scalar code's
 * 0 for them. Compiled for AVX2 and AVX-512F with target attributes and chosen at run time, so the library itself
 * needs no ISA flags. */
#ifndef SPROJ_JOSEPH3D_LANES_H
#define SPROJ_JOSEPH3D_LANES_H

#include "joseph3d_ray.h"
#include "fixed_point.h"

/* Floats of one vector, the lanes of each ISA (sproj_cpu_lanes chooses). */
#define SPROJ_LANES_AVX2 8
#define SPROJ_LANES_AVX512 16

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDACC__)
#define SPROJ_HAVE_LANES 1
#include <immintrin.h>
#include <string.h>

/* Most lanes of any ISA. */
#define SPROJ_LANES_MAX SPROJ_LANES_AVX512
/* Bytes per unit of a gather's element offsets. */
#define SPROJ_GATHER_SCALE ((int)sizeof(float))

/* The prepared rays of a group of LORs, one per lane, as arrays (lane l of every field is LOR l). A lane with
 * count 0 samples nothing. */
struct sproj_lanes {
  int first[SPROJ_LANES_MAX], count[SPROJ_LANES_MAX];
  int stride_k[SPROJ_LANES_MAX], stride_u[SPROJ_LANES_MAX], stride_v[SPROJ_LANES_MAX];
  int nu[SPROJ_LANES_MAX], nv[SPROJ_LANES_MAX];
  float au[SPROJ_LANES_MAX], bu[SPROJ_LANES_MAX], av[SPROJ_LANES_MAX], bv[SPROJ_LANES_MAX];
  float cf[SPROJ_LANES_MAX];
  float val[SPROJ_LANES_MAX]; /* back projection: cf times the LOR's value */
  unsigned nvox; /* voxels in the image (set once per image, not per lane) */
};

/* Whether the lanes can run on this image: gathers take signed 32-bit element offsets (the scalar code runs
 * images of 2^31 voxels or more). */
static inline int sproj_lanes_fit(const struct sproj_geom *geom)
{
  return (unsigned long long)geom->n[0] * (unsigned long long)geom->n[1] * (unsigned long long)geom->n[2] <=
         (unsigned long long)INT32_MAX;
}

/* Lane l takes ray r (NULL: an empty lane). Returns its number of planes. */
static inline int sproj_lanes_set(struct sproj_lanes *L, int l, const struct sproj_ray *r)
{
  if (!r) {
    L->first[l] = L->count[l] = 0;
    L->stride_k[l] = L->stride_u[l] = L->stride_v[l] = 0;
    L->nu[l] = L->nv[l] = 0;
    L->au[l] = L->bu[l] = L->av[l] = L->bv[l] = L->cf[l] = L->val[l] = 0.0f;
    return 0;
  }
  L->first[l] = r->first;
  L->count[l] = r->last - r->first + 1;
  L->stride_k[l] = (int)r->stride_k;
  L->stride_u[l] = (int)r->stride_u;
  L->stride_v[l] = (int)r->stride_v;
  L->nu[l] = r->nu;
  L->nv[l] = r->nv;
  L->au[l] = r->au;
  L->bu[l] = r->bu;
  L->av[l] = r->av;
  L->bv[l] = r->bv;
  L->cf[l] = r->cf;
  L->val[l] = 0.0f;
  return L->count[l];
}

/* Planes ahead whose corners a lane asks the cache for. The gathers wait on cache misses (the image is larger than
 * a core's L2 and a sample seldom shares a line with the previous one); loading the (u0, v0) and (u1, v0) lines a
 * few samples early overlaps those misses. Measured best at 4-8. */
#ifndef SPROJ_LANES_PREFETCH
#define SPROJ_LANES_PREFETCH 6
#endif

/* One group of lanes stepping through its planes, 8 lanes (AVX2): the rays' fixed values, and per plane the
 * corners every projector needs. The forward and back projections differ only in what they do with a plane. */
struct sproj_lanes8 {
  __m256i count, sk, su, sv, nu, nv, nu1, nv1;
  __m256 au, bu, av, bv;
  __m256i last; /* the image's last element, for prefetch addresses */
};
struct sproj_plane8 {
  __m256i active;          /* lanes with a sample in this step */
  __m256i base, b10, u0, u1, v0, v1; /* corner (u0, v0)'s element and b10 = (u1, v0)'s; which corners are inside */
  __m256 wu, wv;           /* fractional parts along u and v */
};

__attribute__((target("avx2"))) static inline struct sproj_lanes8 sproj_lanes8_load(const struct sproj_lanes *L)
{
  struct sproj_lanes8 c;
  const __m256i i1 = _mm256_set1_epi32(1);
  c.count = _mm256_loadu_si256((const __m256i *)L->count);
  c.sk = _mm256_loadu_si256((const __m256i *)L->stride_k);
  c.su = _mm256_loadu_si256((const __m256i *)L->stride_u);
  c.sv = _mm256_loadu_si256((const __m256i *)L->stride_v);
  c.nu = _mm256_loadu_si256((const __m256i *)L->nu);
  c.nv = _mm256_loadu_si256((const __m256i *)L->nv);
  c.nu1 = _mm256_sub_epi32(c.nu, i1);
  c.nv1 = _mm256_sub_epi32(c.nv, i1);
  c.au = _mm256_loadu_ps(L->au);
  c.bu = _mm256_loadu_ps(L->bu);
  c.av = _mm256_loadu_ps(L->av);
  c.bv = _mm256_loadu_ps(L->bv);
  c.last = _mm256_set1_epi32((int)L->nvox - 1);
  return c;
}

/* Step s at planes k: the scalar sproj_ray_corners' values, lane by lane (the same float operations). With img,
 * asks the cache for both rows of the plane SPROJ_LANES_PREFETCH ahead (offsets clamped into the image: a prefetch
 * never faults, but the address must stay a pointer into the image). */
__attribute__((target("avx2"))) static inline struct sproj_plane8 sproj_lanes8_plane(const struct sproj_lanes8 *c,
                                                                                    __m256i k, int s,
                                                                                    const float *img)
{
  struct sproj_plane8 p;
  const __m256i m1 = _mm256_set1_epi32(-1), m2 = _mm256_set1_epi32(-2);
  p.active = _mm256_cmpgt_epi32(c->count, _mm256_set1_epi32(s));
  __m256 kf = _mm256_cvtepi32_ps(k);
  __m256 fu = _mm256_add_ps(_mm256_mul_ps(kf, c->au), c->bu);
  __m256 fv = _mm256_add_ps(_mm256_mul_ps(kf, c->av), c->bv);
  __m256i iu = _mm256_cvttps_epi32(_mm256_floor_ps(fu));
  __m256i iv = _mm256_cvttps_epi32(_mm256_floor_ps(fv));
  p.wu = _mm256_sub_ps(fu, _mm256_cvtepi32_ps(iu));
  p.wv = _mm256_sub_ps(fv, _mm256_cvtepi32_ps(iv));
  /* corner i inside 0..n-1: i > -1 and n > i; corner i + 1: i > -2 and n - 1 > i */
  p.u0 = _mm256_and_si256(_mm256_cmpgt_epi32(iu, m1), _mm256_cmpgt_epi32(c->nu, iu));
  p.u1 = _mm256_and_si256(_mm256_cmpgt_epi32(iu, m2), _mm256_cmpgt_epi32(c->nu1, iu));
  p.v0 = _mm256_and_si256(_mm256_cmpgt_epi32(iv, m1), _mm256_cmpgt_epi32(c->nv, iv));
  p.v1 = _mm256_and_si256(_mm256_cmpgt_epi32(iv, m2), _mm256_cmpgt_epi32(c->nv1, iv));
  p.base = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(k, c->sk), _mm256_mullo_epi32(iu, c->su)),
                            _mm256_mullo_epi32(iv, c->sv));
  p.b10 = _mm256_add_epi32(p.base, c->su);
  if (img) {
    __m256 kd = _mm256_add_ps(kf, _mm256_set1_ps((float)SPROJ_LANES_PREFETCH));
    __m256i ju = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(kd, c->au), c->bu));
    __m256i jv = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(kd, c->av), c->bv));
    __m256i kk = _mm256_add_epi32(k, _mm256_set1_epi32(SPROJ_LANES_PREFETCH));
    __m256i q = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(kk, c->sk), _mm256_mullo_epi32(ju, c->su)),
                                 _mm256_mullo_epi32(jv, c->sv));
    int a[SPROJ_LANES_AVX2], b[SPROJ_LANES_AVX2];
    _mm256_storeu_si256((__m256i *)a, _mm256_min_epu32(q, c->last));
    _mm256_storeu_si256((__m256i *)b, _mm256_min_epu32(_mm256_add_epi32(q, c->su), c->last));
    for (int l = 0; l < SPROJ_LANES_AVX2; l++) {
      __builtin_prefetch(img + a[l]);
      __builtin_prefetch(img + b[l]);
    }
  }
  return p;
}

/* The same for 16 lanes (AVX-512F): masks instead of lane-wide integers. */
struct sproj_lanes16 {
  __m512i count, sk, su, sv, nu, nv, nu1, nv1;
  __m512 au, bu, av, bv;
  __m512i last;
};
struct sproj_plane16 {
  __mmask16 active, u0, u1, v0, v1;
  __m512i base, b10;
  __m512 wu, wv;
};

__attribute__((target("avx512f"))) static inline struct sproj_lanes16 sproj_lanes16_load(const struct sproj_lanes *L)
{
  struct sproj_lanes16 c;
  const __m512i i1 = _mm512_set1_epi32(1);
  c.count = _mm512_loadu_si512(L->count);
  c.sk = _mm512_loadu_si512(L->stride_k);
  c.su = _mm512_loadu_si512(L->stride_u);
  c.sv = _mm512_loadu_si512(L->stride_v);
  c.nu = _mm512_loadu_si512(L->nu);
  c.nv = _mm512_loadu_si512(L->nv);
  c.nu1 = _mm512_sub_epi32(c.nu, i1);
  c.nv1 = _mm512_sub_epi32(c.nv, i1);
  c.au = _mm512_loadu_ps(L->au);
  c.bu = _mm512_loadu_ps(L->bu);
  c.av = _mm512_loadu_ps(L->av);
  c.bv = _mm512_loadu_ps(L->bv);
  c.last = _mm512_set1_epi32((int)L->nvox - 1);
  return c;
}

__attribute__((target("avx512f"))) static inline struct sproj_plane16 sproj_lanes16_plane(const struct sproj_lanes16 *c,
                                                                                        __m512i k, int s,
                                                                                        const float *img)
{
  struct sproj_plane16 p;
  const __m512i m1 = _mm512_set1_epi32(-1), m2 = _mm512_set1_epi32(-2);
  p.active = _mm512_cmpgt_epi32_mask(c->count, _mm512_set1_epi32(s));
  __m512 kf = _mm512_cvtepi32_ps(k);
  __m512 fu = _mm512_add_ps(_mm512_mul_ps(kf, c->au), c->bu);
  __m512 fv = _mm512_add_ps(_mm512_mul_ps(kf, c->av), c->bv);
  __m512i iu = _mm512_cvttps_epi32(_mm512_roundscale_ps(fu, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
  __m512i iv = _mm512_cvttps_epi32(_mm512_roundscale_ps(fv, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
  p.wu = _mm512_sub_ps(fu, _mm512_cvtepi32_ps(iu));
  p.wv = _mm512_sub_ps(fv, _mm512_cvtepi32_ps(iv));
  p.u0 = _mm512_cmpgt_epi32_mask(iu, m1) & _mm512_cmpgt_epi32_mask(c->nu, iu);
  p.u1 = _mm512_cmpgt_epi32_mask(iu, m2) & _mm512_cmpgt_epi32_mask(c->nu1, iu);
  p.v0 = _mm512_cmpgt_epi32_mask(iv, m1) & _mm512_cmpgt_epi32_mask(c->nv, iv);
  p.v1 = _mm512_cmpgt_epi32_mask(iv, m2) & _mm512_cmpgt_epi32_mask(c->nv1, iv);
  p.base = _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(k, c->sk), _mm512_mullo_epi32(iu, c->su)),
                            _mm512_mullo_epi32(iv, c->sv));
  p.b10 = _mm512_add_epi32(p.base, c->su);
  if (img) {
    __m512 kd = _mm512_add_ps(kf, _mm512_set1_ps((float)SPROJ_LANES_PREFETCH));
    __m512i ju = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(kd, c->au), c->bu));
    __m512i jv = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_mul_ps(kd, c->av), c->bv));
    __m512i kk = _mm512_add_epi32(k, _mm512_set1_epi32(SPROJ_LANES_PREFETCH));
    __m512i q = _mm512_add_epi32(_mm512_add_epi32(_mm512_mullo_epi32(kk, c->sk), _mm512_mullo_epi32(ju, c->su)),
                                 _mm512_mullo_epi32(jv, c->sv));
    int a[SPROJ_LANES_AVX512], b[SPROJ_LANES_AVX512];
    _mm512_storeu_si512(a, _mm512_min_epu32(q, c->last));
    _mm512_storeu_si512(b, _mm512_min_epu32(_mm512_add_epi32(q, c->su), c->last));
    for (int l = 0; l < SPROJ_LANES_AVX512; l++) {
      __builtin_prefetch(img + a[l]);
      __builtin_prefetch(img + b[l]);
    }
  }
  return p;
}

/* sums[l] = the sum of lane l's samples, for 8 lanes; steps is the largest count. */
__attribute__((target("avx2"))) static inline void sproj_lanes_fwd_avx2(const float *img, const struct sproj_lanes *L,
                                                                        int steps, float *sums)
{
  const struct sproj_lanes8 c = sproj_lanes8_load(L);
  const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
  __m256i k = _mm256_loadu_si256((const __m256i *)L->first);
  __m256 sum = zero;
  for (int s = 0; s < steps; s++) {
    struct sproj_plane8 p = sproj_lanes8_plane(&c, k, s, img);
    __m256i u0 = _mm256_and_si256(p.u0, p.active), u1 = _mm256_and_si256(p.u1, p.active);
    __m256i b01 = _mm256_add_epi32(p.base, c.sv), b11 = _mm256_add_epi32(p.b10, c.sv);
    __m256 v00 = _mm256_mask_i32gather_ps(zero, img, p.base, _mm256_castsi256_ps(_mm256_and_si256(u0, p.v0)),
                                          SPROJ_GATHER_SCALE);
    __m256 v10 = _mm256_mask_i32gather_ps(zero, img, p.b10, _mm256_castsi256_ps(_mm256_and_si256(u1, p.v0)),
                                          SPROJ_GATHER_SCALE);
    __m256 v01 = _mm256_mask_i32gather_ps(zero, img, b01, _mm256_castsi256_ps(_mm256_and_si256(u0, p.v1)),
                                          SPROJ_GATHER_SCALE);
    __m256 v11 = _mm256_mask_i32gather_ps(zero, img, b11, _mm256_castsi256_ps(_mm256_and_si256(u1, p.v1)),
                                          SPROJ_GATHER_SCALE);
    __m256 omu = _mm256_sub_ps(one, p.wu), omv = _mm256_sub_ps(one, p.wv);
    __m256 smp = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(v00, omu), omv), _mm256_mul_ps(_mm256_mul_ps(v10, p.wu), omv));
    smp = _mm256_add_ps(smp, _mm256_mul_ps(_mm256_mul_ps(v01, omu), p.wv));
    smp = _mm256_add_ps(smp, _mm256_mul_ps(_mm256_mul_ps(v11, p.wu), p.wv));
    sum = _mm256_blendv_ps(sum, _mm256_add_ps(sum, smp), _mm256_castsi256_ps(p.active));
    k = _mm256_add_epi32(k, _mm256_set1_epi32(1));
  }
  _mm256_storeu_ps(sums, sum);
}

/* The same for 16 lanes. */
__attribute__((target("avx512f"))) static inline void sproj_lanes_fwd_avx512(const float *img,
                                                                            const struct sproj_lanes *L, int steps,
                                                                            float *sums)
{
  const struct sproj_lanes16 c = sproj_lanes16_load(L);
  const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
  __m512i k = _mm512_loadu_si512(L->first);
  __m512 sum = zero;
  for (int s = 0; s < steps; s++) {
    struct sproj_plane16 p = sproj_lanes16_plane(&c, k, s, img);
    __mmask16 u0 = p.u0 & p.active, u1 = p.u1 & p.active;
    __m512i b01 = _mm512_add_epi32(p.base, c.sv), b11 = _mm512_add_epi32(p.b10, c.sv);
    __m512 v00 = _mm512_mask_i32gather_ps(zero, u0 & p.v0, p.base, img, SPROJ_GATHER_SCALE);
    __m512 v10 = _mm512_mask_i32gather_ps(zero, u1 & p.v0, p.b10, img, SPROJ_GATHER_SCALE);
    __m512 v01 = _mm512_mask_i32gather_ps(zero, u0 & p.v1, b01, img, SPROJ_GATHER_SCALE);
    __m512 v11 = _mm512_mask_i32gather_ps(zero, u1 & p.v1, b11, img, SPROJ_GATHER_SCALE);
    __m512 omu = _mm512_sub_ps(one, p.wu), omv = _mm512_sub_ps(one, p.wv);
    __m512 smp = _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(v00, omu), omv), _mm512_mul_ps(_mm512_mul_ps(v10, p.wu), omv));
    smp = _mm512_add_ps(smp, _mm512_mul_ps(_mm512_mul_ps(v01, omu), p.wv));
    smp = _mm512_add_ps(smp, _mm512_mul_ps(_mm512_mul_ps(v11, p.wu), p.wv));
    sum = _mm512_mask_add_ps(sum, p.active, sum, smp);
    k = _mm512_add_epi32(k, _mm512_set1_epi32(1));
  }
  _mm512_storeu_ps(sums, sum);
}

/* The back projection's adds of one plane, corner q of lane l where bit l of m[q] is set. Sorted lanes are
 * neighbours that often hit the same voxels, and an add into a voxel waits for the previous add's store: lanes
 * are visited 0, 4, 8, 12, 1, 5, ... (16 lanes; 0, 2, 4, 6, 1, ... for 8), which puts adds into unrelated voxels
 * between two into the same one (measured 15-30% faster than 0, 1, 2, ...). In fixed point the order is free. */
#define SPROJ_LANES_INTERLEAVE 4 /* runs the lanes are visited in: 0, 4, 8, 12 is the first of 16 lanes */
static inline void sproj_lanes_scatter(struct sproj_out out, int lanes, unsigned active, const unsigned m[4],
                                       const int idx[4][SPROJ_LANES_MAX], const float w[4][SPROJ_LANES_MAX])
{
  if (out.q) {
    for (unsigned b = active; b; b &= b - 1) {
      int l = __builtin_ctz(b);
      for (int q = 0; q < 4; q++)
        if (m[q] >> l & 1u)
          sproj_fixed_add(&out.q[(unsigned)idx[q][l]], w[q][l]);
    }
    return;
  }
  int stride = lanes / SPROJ_LANES_INTERLEAVE;
  for (int t = 0; t < lanes; t++) {
    int l = (t % SPROJ_LANES_INTERLEAVE) * stride + t / SPROJ_LANES_INTERLEAVE;
    if (!(active >> l & 1u))
      continue;
    for (int q = 0; q < 4; q++)
      if (m[q] >> l & 1u)
        out.f[(unsigned)idx[q][l]] += w[q][l];
  }
}

/* Adds lane l's val times the weights of each of its samples into the image, 8 lanes: the weights are the scalar
 * sproj_ray_scatter's bits; only the order of the adds into a voxel differs (float rounding, or nothing at all
 * in fixed point). */
__attribute__((target("avx2"))) static inline void sproj_lanes_back_avx2(struct sproj_out out,
                                                                         const struct sproj_lanes *L, int steps)
{
  const struct sproj_lanes8 c = sproj_lanes8_load(L);
  const __m256 val = _mm256_loadu_ps(L->val), one = _mm256_set1_ps(1.0f);
  int idx[4][SPROJ_LANES_MAX];
  float w[4][SPROJ_LANES_MAX];
  unsigned m[4];
  __m256i k = _mm256_loadu_si256((const __m256i *)L->first);
  for (int s = 0; s < steps; s++) {
    /* the float image is prefetched, the fixed-point accumulator is not */
    struct sproj_plane8 p = sproj_lanes8_plane(&c, k, s, out.f);
    _mm256_storeu_si256((__m256i *)idx[0], p.base);
    _mm256_storeu_si256((__m256i *)idx[1], p.b10);
    _mm256_storeu_si256((__m256i *)idx[2], _mm256_add_epi32(p.base, c.sv));
    _mm256_storeu_si256((__m256i *)idx[3], _mm256_add_epi32(p.b10, c.sv));
    __m256 omu = _mm256_sub_ps(one, p.wu), omv = _mm256_sub_ps(one, p.wv);
    _mm256_storeu_ps(w[0], _mm256_mul_ps(val, _mm256_mul_ps(omu, omv)));
    _mm256_storeu_ps(w[1], _mm256_mul_ps(val, _mm256_mul_ps(p.wu, omv)));
    _mm256_storeu_ps(w[2], _mm256_mul_ps(val, _mm256_mul_ps(omu, p.wv)));
    _mm256_storeu_ps(w[3], _mm256_mul_ps(val, _mm256_mul_ps(p.wu, p.wv)));
    m[0] = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(p.u0, p.v0)));
    m[1] = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(p.u1, p.v0)));
    m[2] = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(p.u0, p.v1)));
    m[3] = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_and_si256(p.u1, p.v1)));
    sproj_lanes_scatter(out, SPROJ_LANES_AVX2, (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(p.active)), m, idx, w);
    k = _mm256_add_epi32(k, _mm256_set1_epi32(1));
  }
}

/* The adds of one plane of 16 lanes: lane l's value v[l] times the bilinear weights of its four corners, for the
 * lanes set in active (the back projections with and without TOF). */
__attribute__((target("avx512f"))) static inline void sproj_lanes16_scatter_plane(struct sproj_out out, unsigned active,
                                                                                  const struct sproj_lanes16 *c,
                                                                                  const struct sproj_plane16 *p, __m512 v)
{
  int idx[4][SPROJ_LANES_MAX];
  float w[4][SPROJ_LANES_MAX];
  unsigned m[4];
  const __m512 one = _mm512_set1_ps(1.0f);
  _mm512_storeu_si512(idx[0], p->base);
  _mm512_storeu_si512(idx[1], p->b10);
  _mm512_storeu_si512(idx[2], _mm512_add_epi32(p->base, c->sv));
  _mm512_storeu_si512(idx[3], _mm512_add_epi32(p->b10, c->sv));
  __m512 omu = _mm512_sub_ps(one, p->wu), omv = _mm512_sub_ps(one, p->wv);
  _mm512_storeu_ps(w[0], _mm512_mul_ps(v, _mm512_mul_ps(omu, omv)));
  _mm512_storeu_ps(w[1], _mm512_mul_ps(v, _mm512_mul_ps(p->wu, omv)));
  _mm512_storeu_ps(w[2], _mm512_mul_ps(v, _mm512_mul_ps(omu, p->wv)));
  _mm512_storeu_ps(w[3], _mm512_mul_ps(v, _mm512_mul_ps(p->wu, p->wv)));
  m[0] = (unsigned)(p->u0 & p->v0);
  m[1] = (unsigned)(p->u1 & p->v0);
  m[2] = (unsigned)(p->u0 & p->v1);
  m[3] = (unsigned)(p->u1 & p->v1);
  sproj_lanes_scatter(out, SPROJ_LANES_AVX512, active, m, idx, w);
}

/* The same for 16 lanes. */
__attribute__((target("avx512f"))) static inline void sproj_lanes_back_avx512(struct sproj_out out,
                                                                             const struct sproj_lanes *L, int steps)
{
  const struct sproj_lanes16 c = sproj_lanes16_load(L);
  const __m512 val = _mm512_loadu_ps(L->val);
  __m512i k = _mm512_loadu_si512(L->first);
  for (int s = 0; s < steps; s++) {
    struct sproj_plane16 p = sproj_lanes16_plane(&c, k, s, out.f);
    sproj_lanes16_scatter_plane(out, (unsigned)p.active, &c, &p, val);
    k = _mm512_add_epi32(k, _mm512_set1_epi32(1));
  }
}

/* LORs ordered together: the drivers prepare a block of up to this many LORs and give the lanes neighbours in
 * space, not in input order (see sproj_lanes_sort). */
#define SPROJ_LANES_BLOCK 32768
/* Buckets of the order: principal axis x SPROJ_LANES_NU positions along u x SPROJ_LANES_NV along v. */
#ifndef SPROJ_LANES_NU
#define SPROJ_LANES_NU 256
#endif
#ifndef SPROJ_LANES_NV
#define SPROJ_LANES_NV 16
#endif
#define SPROJ_LANES_KEYS (3 * SPROJ_LANES_NU * SPROJ_LANES_NV)

/* Work space of one thread (about 2 MB: let each thread keep one). */
struct sproj_lanes_work {
  struct sproj_ray ray[SPROJ_LANES_BLOCK];
  uint32_t order[SPROJ_LANES_BLOCK];
  int32_t key[SPROJ_LANES_BLOCK];
  uint32_t start[SPROJ_LANES_KEYS + 1];
};

/* Prepares LORs i < n (n <= SPROJ_LANES_BLOCK) and orders those that sample something (with a non-zero value when
 * values is given) by where their line crosses the middle plane of the image along their principal axis: axis,
 * then u, then v, in buckets of 1/SPROJ_LANES_NU of u and 1/SPROJ_LANES_NV of v (a counting sort). In a sinogram
 * block the lanes then hold LORs that are neighbours in u and v (radial and axial neighbours alike), so the 16
 * lanes of a step read a few cache lines instead of 16 to 32, and the next group reads mostly the same ones. A
 * lane's result does not depend on its neighbours, so the order changes no forward bit. Returns how many LORs are
 * in work->order. */
static inline uint32_t sproj_lanes_sort(struct sproj_lanes_work *work, const struct sproj_geom *geom, const float *xs,
                                        const float *xe, uint32_t n, const float *values)
{
  uint32_t good = 0;
  memset(work->start, 0, sizeof work->start);
  for (uint32_t i = 0; i < n; i++) {
    struct sproj_ray *r = &work->ray[i];
    work->key[i] = -1;
    if ((values && values[i] == 0.0f) || !sproj_ray_setup(xs + 3 * (size_t)i, xe + 3 * (size_t)i, geom, r))
      continue;
    float km = 0.5f * (float)(geom->n[r->axis] - 1);
    float fu = km * r->au + r->bu, fv = km * r->av + r->bv;
    /* the crossing may lie outside the image (the LOR ends before the middle): clamp into the buckets */
    float bu = fminf(fmaxf(fu * ((float)SPROJ_LANES_NU / (float)r->nu), 0.0f), (float)(SPROJ_LANES_NU - 1));
    float bv = fminf(fmaxf(fv * ((float)SPROJ_LANES_NV / (float)r->nv), 0.0f), (float)(SPROJ_LANES_NV - 1));
    work->key[i] = (r->axis * SPROJ_LANES_NU + (int)bu) * SPROJ_LANES_NV + (int)bv;
    work->start[work->key[i] + 1]++;
    good++;
  }
  for (int q = 0; q < SPROJ_LANES_KEYS; q++)
    work->start[q + 1] += work->start[q];
  for (uint32_t i = 0; i < n; i++)
    if (work->key[i] >= 0)
      work->order[work->start[work->key[i]]++] = i;
  return good;
}

/* values[i] = joseph3d_fwd_lor(img, g, xs + 3 i, xe + 3 i) for i < n, bit for bit, lanes (8: AVX2, 16: AVX-512F)
 * LORs at a time. */
static inline void sproj_lanes_fwd(struct sproj_lanes_work *work, const float *img, const struct sproj_geom *geom,
                                   const float *xs, const float *xe, uint32_t n, float *values, int lanes)
{
  struct sproj_lanes L;
  float sums[SPROJ_LANES_MAX];
  L.nvox = (unsigned)geom->n[0] * (unsigned)geom->n[1] * (unsigned)geom->n[2];
  for (uint32_t b0 = 0; b0 < n; b0 += SPROJ_LANES_BLOCK) {
    uint32_t m = n - b0 < SPROJ_LANES_BLOCK ? n - b0 : SPROJ_LANES_BLOCK;
    float *v = values + b0;
    for (uint32_t i = 0; i < m; i++)
      v[i] = 0.0f; /* what a LOR that samples nothing projects to */
    uint32_t good = sproj_lanes_sort(work, geom, xs + 3 * (size_t)b0, xe + 3 * (size_t)b0, m, NULL);
    for (uint32_t s0 = 0; s0 < good; s0 += (uint32_t)lanes) {
      int steps = 0;
      for (int l = 0; l < lanes; l++) {
        int c = s0 + l < good ? sproj_lanes_set(&L, l, &work->ray[work->order[s0 + l]]) : sproj_lanes_set(&L, l, NULL);
        steps = c > steps ? c : steps;
      }
      if (lanes == SPROJ_LANES_AVX512)
        sproj_lanes_fwd_avx512(img, &L, steps, sums);
      else
        sproj_lanes_fwd_avx2(img, &L, steps, sums);
      for (int l = 0; l < lanes && s0 + l < good; l++)
        v[work->order[s0 + l]] = sums[l] * L.cf[l];
    }
  }
}

/* joseph3d_back_lor for LORs i < n with values[i], lanes LORs at a time (8: AVX2, 16: AVX-512F). */
static inline void sproj_lanes_back(struct sproj_lanes_work *work, struct sproj_out out, const struct sproj_geom *geom,
                                    const float *xs, const float *xe, uint32_t n, const float *values, int lanes)
{
  struct sproj_lanes L;
  L.nvox = (unsigned)geom->n[0] * (unsigned)geom->n[1] * (unsigned)geom->n[2];
  for (uint32_t b0 = 0; b0 < n; b0 += SPROJ_LANES_BLOCK) {
    uint32_t m = n - b0 < SPROJ_LANES_BLOCK ? n - b0 : SPROJ_LANES_BLOCK;
    const float *v = values + b0;
    uint32_t good = sproj_lanes_sort(work, geom, xs + 3 * (size_t)b0, xe + 3 * (size_t)b0, m, v);
    for (uint32_t s0 = 0; s0 < good; s0 += (uint32_t)lanes) {
      int steps = 0;
      for (int l = 0; l < lanes; l++) {
        int c = 0;
        if (s0 + l < good) {
          uint32_t i = work->order[s0 + l];
          c = sproj_lanes_set(&L, l, &work->ray[i]);
          L.val[l] = work->ray[i].cf * v[i];
        } else {
          sproj_lanes_set(&L, l, NULL);
        }
        steps = c > steps ? c : steps;
      }
      if (lanes == SPROJ_LANES_AVX512)
        sproj_lanes_back_avx512(out, &L, steps);
      else
        sproj_lanes_back_avx2(out, &L, steps);
    }
  }
}

#endif /* x86-64 */

#endif /* SPROJ_JOSEPH3D_LANES_H */
