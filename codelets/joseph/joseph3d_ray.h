/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_ray.h: ray setup and bilinear sampling of Joseph's method, shared by every projector (host + CUDA). */
#ifndef SPROJ_JOSEPH3D_RAY_H
#define SPROJ_JOSEPH3D_RAY_H

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "host_device.h"
#include "fixed_point.h"

/* Where a back projection adds: the float image (f), or in reproducible mode a 64-bit fixed-point accumulator of
 * the same size (q, see fixed_point.h); exactly one is set. */
struct sproj_out {
  float *f;
  unsigned long long *q;
  float *shift; /* CUDA, f only: the image shifted by one float (sproj_add_pair), or NULL */
};
/* Floats of the shifted image beyond the image's: the float4 group that holds its last voxel. */
#define SPROJ_SHIFT_EXTRA 4u

/* Adds into the image: an atomic on the GPU (many threads share one buffer); a plain add on a CPU, where every
 * StarPU worker accumulates into its own reduction buffer with one thread. */
#ifdef __CUDA_ARCH__
#define SPROJ_ADD(ptr, val) atomicAdd((ptr), (val))
#else
#define SPROJ_ADD(ptr, val) (*(ptr) += (val))
#endif

/* Image geometry: n[3] voxels (C order, axis 2 fastest), voxel size and centre of voxel (0,0,0). */
struct sproj_geom {
  int n[3];
  float voxel_size[3];
  float origin[3];
};

/* Largest |index coordinate| a sample may have before the float -> int conversion (far beyond any image). */
#define SPROJ_RAY_MAX_INDEX 16777216.0f

/* One LOR prepared for stepping through the voxel planes of its principal axis. */
struct sproj_ray {
  int axis;                 /* principal axis */
  int first, last;          /* planes first..last of the principal axis are sampled */
  int nu, nv;               /* image size along the two other axes u < v */
  unsigned stride_k, stride_u, stride_v; /* element strides of the principal axis, u and v */
  unsigned nvox;            /* voxels in the image */
  float au, bu, av, bv;     /* in plane k the ray is at index coordinates (k*au + bu, k*av + bv) */
  float cf;                 /* voxel_size[axis] / |cos(axis)|: the length each sample stands for */
};

/* Clips the LOR xs->xe to the image box and prepares it. Returns 0 when nothing is to be sampled: zero length,
 * LOR missing the box, or a clipped segment crossing no voxel plane. Numerics follow parallelproj exactly. */
SPROJ_HD int sproj_ray_setup(const float *xs, const float *xe, const struct sproj_geom *geom, struct sproj_ray *r)
{
  float d[3], tmin = 0.0f, tmax = 1.0f;
  int k;

  for (k = 0; k < 3; k++)
    d[k] = xe[k] - xs[k];
  if (d[0] == 0.0f && d[1] == 0.0f && d[2] == 0.0f)
    return 0;

  /* slab method on t in [0, 1]: only the part between the endpoints and inside the box counts */
  for (k = 0; k < 3; k++) {
    float lo = geom->origin[k] - 0.5f * geom->voxel_size[k];
    float hi = lo + geom->n[k] * geom->voxel_size[k];
    if (d[k] != 0.0f) {
      float inv = 1.0f / d[k];
      float t1 = (lo - xs[k]) * inv;
      float t2 = (hi - xs[k]) * inv;
      tmin = fmaxf(tmin, fminf(t1, t2));
      tmax = fminf(tmax, fmaxf(t1, t2));
    } else if (xs[k] < lo || xs[k] > hi) {
      return 0;
    }
  }
  if (tmax < tmin)
    return 0;

  /* principal axis: largest squared cosine, ties resolved as parallelproj does (1, then 2, then 0) */
  float sq0 = d[0] * d[0], sq1 = d[1] * d[1], sq2 = d[2] * d[2];
  float sum = sq0 + sq1 + sq2;
  float c0 = sq0 / sum, c1 = sq1 / sum, c2 = sq2 / sum;
  int a, u, v;
  float ca;
  if (c1 >= c0 && c1 >= c2) {
    a = 1; u = 0; v = 2; ca = c1;
  } else if (c2 >= c0 && c2 >= c1) {
    a = 2; u = 0; v = 1; ca = c2;
  } else {
    a = 0; u = 1; v = 2; ca = c0;
  }

  /* The clipped ends lie inside the box, so f1, f2 lie in [-0.5, n - 0.5] up to rounding; clamping them to
   * [-1, n] changes no such value but keeps the float -> int conversions defined for degenerate input
   * (overflowing differences, NaN), which then samples nothing or stays inside the image. */
  float f1 = (xs[a] + tmin * d[a] - geom->origin[a]) / geom->voxel_size[a];
  float f2 = (xs[a] + tmax * d[a] - geom->origin[a]) / geom->voxel_size[a];
  f1 = fminf(fmaxf(f1, -1.0f), (float)geom->n[a]);
  f2 = fminf(fmaxf(f2, -1.0f), (float)geom->n[a]);
  if ((int)floorf(f1) == (int)floorf(f2))
    return 0;
  if (f1 > f2) {
    float t = f1;
    f1 = f2;
    f2 = t;
  }
  r->first = (int)floorf(f1) + 1;
  r->last = (int)floorf(f2);
  /* rounding can never move the planes outside the image, but memory safety must not depend on it */
  if (r->first < 0)
    r->first = 0;
  if (r->last > geom->n[a] - 1)
    r->last = geom->n[a] - 1;
  if (r->first > r->last)
    return 0;

  r->axis = a;
  r->cf = geom->voxel_size[a] / sqrtf(ca);
  r->au = (d[u] * geom->voxel_size[a]) / (geom->voxel_size[u] * d[a]);
  r->bu = (xs[u] - geom->origin[u] + d[u] * (geom->origin[a] - xs[a]) / d[a]) / geom->voxel_size[u];
  r->av = (d[v] * geom->voxel_size[a]) / (geom->voxel_size[v] * d[a]);
  r->bv = (xs[v] - geom->origin[v] + d[v] * (geom->origin[a] - xs[a]) / d[a]) / geom->voxel_size[v];

  /* The in-plane index coordinates are linear in k: checking them at the first and last planes bounds every
   * sample's, so sproj_ray_corners converts only values far inside the int range. A ray through the box is
   * within [-1, n] there; beyond SPROJ_RAY_MAX_INDEX (or NaN) only overflowed arithmetic can be, and such a
   * ray samples nothing. */
  float ends[4] = {r->first * r->au + r->bu, r->last * r->au + r->bu, r->first * r->av + r->bv,
                   r->last * r->av + r->bv};
  for (k = 0; k < 4; k++)
    if (!(fabsf(ends[k]) <= SPROJ_RAY_MAX_INDEX))
      return 0;

  unsigned stride[3];
  stride[2] = 1u;
  stride[1] = (unsigned)geom->n[2];
  stride[0] = (unsigned)geom->n[1] * (unsigned)geom->n[2];
  r->stride_k = stride[a];
  r->stride_u = stride[u];
  r->stride_v = stride[v];
  r->nu = geom->n[u];
  r->nv = geom->n[v];
  r->nvox = stride[0] * (unsigned)geom->n[0];
  return 1;
}

/* Principal-axis copies (GPU tasks, see sproj_proj_arg.layout). In the image (axis 2 fastest) the neighbouring LORs
 * of a view, which a warp's threads walk side by side, cross a plane of axis 0 or 1 at neighbouring u, a whole row
 * of n2 floats apart, so every corner load of a warp touches ~32 sectors. Two copies of the image put u fastest:
 * copy 0, for rays along axis 0, is [n0][n2][n1]; copy 1, for rays along axis 1, is [n1][n2][n0], starting
 * sproj_layout_copy_stride(nvox) floats after copy 0 (a multiple of SPROJ_LAYOUT_ALIGN, so both are 128-byte
 * aligned). Rays along axis 2 (none in a cylindrical scanner's sinogram) keep the image. The values sampled, their
 * weights and the order of the additions are the same in every layout, so forward projections keep their bits. */
#define SPROJ_LAYOUT_ALIGN 32u /* floats: 128 bytes */
SPROJ_HD size_t sproj_layout_copy_stride(size_t nvox)
{
  return (nvox + (SPROJ_LAYOUT_ALIGN - 1u)) & ~(size_t)(SPROJ_LAYOUT_ALIGN - 1u);
}

/* Element of copy c (0 or 1) holding voxel (i0, i1, i2). */
SPROJ_HD unsigned sproj_layout_index(int c, unsigned i0, unsigned i1, unsigned i2, const struct sproj_geom *geom)
{
  if (c == 0)
    return (i0 * (unsigned)geom->n[2] + i2) * (unsigned)geom->n[1] + i1;
  return (i1 * (unsigned)geom->n[2] + i2) * (unsigned)geom->n[0] + i0;
}

/* Points a prepared ray at its copy: changes its strides and returns 1 with the copy's offset in floats, or returns
 * 0 (axis 2: the ray keeps the image). */
SPROJ_HD int sproj_ray_to_copy(struct sproj_ray *r, const struct sproj_geom *geom, size_t *offset)
{
  unsigned n0 = (unsigned)geom->n[0], n1 = (unsigned)geom->n[1], n2 = (unsigned)geom->n[2];
  if (r->axis == 2)
    return 0;
  r->stride_u = 1u;
  if (r->axis == 0) {
    r->stride_k = n2 * n1;
    r->stride_v = n1;
    *offset = 0;
  } else {
    r->stride_k = n2 * n0;
    r->stride_v = n0;
    *offset = sproj_layout_copy_stride(r->nvox);
  }
  return 1;
}

/* What a prepared ray samples: its copy when the task has copies (not NULL), else the image. */
SPROJ_HD const float *sproj_ray_image(struct sproj_ray *r, const struct sproj_geom *geom, const float *img,
                                      const float *copies)
{
  size_t off;
  return copies && sproj_ray_to_copy(r, geom, &off) ? copies + off : img;
}

/* Bilinear weights and corner indices of the sample in plane k; a corner outside the image gets ok = 0. */
struct sproj_corners {
  unsigned idx[4]; /* (u0,v0), (u1,v0), (u0,v1), (u1,v1) */
  int ok[4];
  float wu, wv;    /* fractional parts along u and v */
};

SPROJ_HD void sproj_ray_corners(const struct sproj_ray *r, int k, struct sproj_corners *c)
{
  float fu = k * r->au + r->bu;
  float fv = k * r->av + r->bv;
  int iu = (int)floorf(fu);
  int iv = (int)floorf(fv);
  c->wu = fu - iu;
  c->wv = fv - iv;
  int u0 = (unsigned)iu < (unsigned)r->nu, u1 = (unsigned)(iu + 1) < (unsigned)r->nu;
  int v0 = (unsigned)iv < (unsigned)r->nv, v1 = (unsigned)(iv + 1) < (unsigned)r->nv;
  unsigned base = (unsigned)k * r->stride_k + (unsigned)iu * r->stride_u + (unsigned)iv * r->stride_v;
  c->idx[0] = base;
  c->idx[1] = base + r->stride_u;
  c->idx[2] = base + r->stride_v;
  c->idx[3] = base + r->stride_u + r->stride_v;
  c->ok[0] = u0 && v0;
  c->ok[1] = u1 && v0;
  c->ok[2] = u0 && v1;
  c->ok[3] = u1 && v1;
}

/* Interpolated image value where the ray crosses plane k (neighbours outside the image count as 0). */
SPROJ_HD float sproj_ray_sample(const float *img, const struct sproj_ray *r, int k)
{
  struct sproj_corners c;
  sproj_ray_corners(r, k, &c);
  float v00 = c.ok[0] ? img[c.idx[0]] : 0.0f;
  float v10 = c.ok[1] ? img[c.idx[1]] : 0.0f;
  float v01 = c.ok[2] ? img[c.idx[2]] : 0.0f;
  float v11 = c.ok[3] ? img[c.idx[3]] : 0.0f;
  return v00 * (1 - c.wu) * (1 - c.wv) + v10 * c.wu * (1 - c.wv) + v01 * (1 - c.wu) * c.wv + v11 * c.wu * c.wv;
}

/* Pair layouts (GPU listmode forward projections with the variant pairs, codelets.h). A sample's four corners lie in
 * two rows of the image (u0 and u0 + 1, v0 and v0 + 1 beside each other along the fastest axis): ~2.25 L2 sectors and
 * four loads a sample when the threads of a warp walk unrelated rays. For rays along axis a (0 or 1; v is axis 2
 * both times, sproj_ray_setup), the layout of axis a holds for each plane k, iu = -1 .. nu and iv = -1 .. nv + 1 the
 * pair (image(u = iu, v = iv), image(u = iu + 1, v = iv)) of plane k, voxels outside the image 0: a sample's corners
 * are then the two neighbouring pairs at (iu, iv) and (iu, iv + 1), 16 bytes at one place (1.25 sectors, two 8-byte
 * loads). Pair (k, iu, iv) starts at float 2 ((k (nu + 2) + iu + 1) (nv + 3) + iv + 1) of its layout; the layout of
 * axis 1 starts sproj_pairs_offset(geom, 1) floats after that of axis 0 (both 128-byte aligned). The corners, their
 * weights and the order of the products are sproj_ray_sample's: the values are its bits. Rays along axis 2 keep the
 * image. */
SPROJ_HD size_t sproj_pairs_axis_floats(const struct sproj_geom *geom, int axis)
{
  int u = axis == 0 ? 1 : 0;
  return 2 * (size_t)geom->n[axis] * (size_t)(geom->n[u] + 2) * (size_t)(geom->n[2] + 3);
}

/* Float offset of axis a's layout (0 or 1); a = 2: the floats of both. */
SPROJ_HD size_t sproj_pairs_offset(const struct sproj_geom *geom, int axis)
{
  if (axis == 0)
    return 0;
  size_t at = sproj_layout_copy_stride(sproj_pairs_axis_floats(geom, 0));
  return axis == 1 ? at : at + sproj_pairs_axis_floats(geom, 1);
}

/* Row `row` (0 .. n_a (nu + 2) - 1: plane k = row / (nu + 2), iu = row % (nu + 2) - 1) of axis a's layout: its
 * (nv + 3) pairs into out, as a GPU task fills them (a block a row, no division per float). */
SPROJ_HD void sproj_pairs_row(const float *img, const struct sproj_geom *geom, int axis, unsigned row, unsigned first,
                              unsigned step, float *out)
{
  int u = axis == 0 ? 1 : 0, nu = geom->n[u], nv = geom->n[2];
  unsigned k = row / (unsigned)(nu + 2);
  int iu = (int)(row % (unsigned)(nu + 2)) - 1;
  size_t stride_u = axis == 0 ? (size_t)nv : (size_t)geom->n[1] * (size_t)nv;
  size_t stride_k = axis == 0 ? (size_t)geom->n[1] * (size_t)nv : (size_t)nv;
  const float *plane = img + (size_t)k * stride_k;
  for (unsigned col = first; col < (unsigned)nv + 3u; col += step) {
    int iv = (int)col - 1;
    int in_v = iv >= 0 && iv < nv;
    out[2 * col] = in_v && iu >= 0 && iu < nu ? plane[(size_t)iu * stride_u + (size_t)iv] : 0.0f;
    out[2 * col + 1] = in_v && iu + 1 >= 0 && iu + 1 < nu ? plane[(size_t)(iu + 1) * stride_u + (size_t)iv] : 0.0f;
  }
}

/* Rows of axis a's layout. */
SPROJ_HD unsigned sproj_pairs_rows(const struct sproj_geom *geom, int axis)
{
  return (unsigned)geom->n[axis] * (unsigned)(geom->n[axis == 0 ? 1 : 0] + 2);
}

/* The image value where a prepared ray (along axis 0 or 1) crosses plane k, from its axis' pair layout `pairs` (the
 * start of that axis' layout): sproj_ray_sample's value, bit for bit. */
SPROJ_HD float sproj_ray_sample_pairs(const float *pairs, const struct sproj_ray *r, int k)
{
  float fu = k * r->au + r->bu;
  float fv = k * r->av + r->bv;
  int iu = (int)floorf(fu);
  int iv = (int)floorf(fv);
  float wu = fu - iu;
  float wv = fv - iv;
  /* beyond the layout every corner is outside the image: sproj_ray_sample's sum of four zeros */
  if ((unsigned)(iu + 1) > (unsigned)(r->nu + 1) || (unsigned)(iv + 1) > (unsigned)(r->nv + 1))
    return 0.0f;
  size_t at = 2 * (((size_t)k * (size_t)(r->nu + 2) + (size_t)(iu + 1)) * (size_t)(r->nv + 3) + (size_t)(iv + 1));
#ifdef __CUDA_ARCH__
  float2 p0 = __ldg((const float2 *)(pairs + at)), p1 = __ldg((const float2 *)(pairs + at + 2));
  float v00 = p0.x, v10 = p0.y, v01 = p1.x, v11 = p1.y;
#else
  float v00 = pairs[at], v10 = pairs[at + 1], v01 = pairs[at + 2], v11 = pairs[at + 3];
#endif
  return v00 * (1 - wu) * (1 - wv) + v10 * wu * (1 - wv) + v01 * (1 - wu) * wv + v11 * wu * wv;
}

/* Axis' pair layout of a prepared ray within `pairs` (both layouts), or NULL: no layouts, or a ray along axis 2. */
SPROJ_HD const float *sproj_ray_pairs(const float *pairs, const struct sproj_ray *r, const struct sproj_geom *geom)
{
  return pairs && r->axis != 2 ? pairs + sproj_pairs_offset(geom, r->axis) : NULL;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* Adds a to img[i] and b to img[i + 1]. Back projection is bound by the number of global atomics, and from sm_90 on
 * one vector atomic adds a whole aligned float4: when both voxels share one (i % 4 != 3) and it lies inside the
 * image, one atomic adds (a, b) with zeros in the other two lanes, which leaves those voxels as they are. A pair
 * that straddles two groups (i % 4 == 3) goes, when the task has one, to the shifted image (shift[j] stands for
 * voxel j - 1, 16-byte aligned, nvox + SPROJ_SHIFT_EXTRA floats, added into the image after the task), where it
 * starts a group; else it takes two scalar atomics. */
__device__ static inline void sproj_add_pair(float *img, unsigned i, float a, float b, unsigned nvox, float *shift)
{
  unsigned lane = i & 3u, base = i - lane;
  if (lane == 3u && shift) {
    atomicAdd((float4 *)(shift + i + 1u), make_float4(a, b, 0.0f, 0.0f));
    return;
  }
  if (lane == 3u || base + 3u >= nvox || ((uintptr_t)img & 15u) != 0) {
    atomicAdd(&img[i], a);
    atomicAdd(&img[i + 1], b);
    return;
  }
  float4 q;
  q.x = lane == 0u ? a : 0.0f;
  q.y = lane == 0u ? b : (lane == 1u ? a : 0.0f);
  q.z = lane == 1u ? b : (lane == 2u ? a : 0.0f);
  q.w = lane == 2u ? b : 0.0f;
  atomicAdd((float4 *)(img + base), q);
}
#endif

/* Where a prepared ray adds: its copy when the task has copies (not NULL; float images only), else out. */
SPROJ_HD struct sproj_out sproj_ray_out(struct sproj_ray *r, const struct sproj_geom *geom, struct sproj_out out,
                                        float *copies)
{
  size_t off;
  if (copies && out.f && sproj_ray_to_copy(r, geom, &off))
    out.f = copies + off;
  return out;
}

/* The adjoint of sproj_ray_sample: adds val times the four bilinear weights of plane k into the image. */
SPROJ_HD void sproj_ray_scatter(struct sproj_out out, const struct sproj_ray *r, int k, float val)
{
  struct sproj_corners c;
  sproj_ray_corners(r, k, &c);
  float w[4] = {val * ((1 - c.wu) * (1 - c.wv)), val * (c.wu * (1 - c.wv)), val * ((1 - c.wu) * c.wv),
                val * (c.wu * c.wv)};
  if (out.q) {
    for (int q = 0; q < 4; q++)
      if (c.ok[q])
        sproj_fixed_add(&out.q[c.idx[q]], w[q]);
    return;
  }
  float *img = out.f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  /* v along the fastest axis (the image): corners 0 and 2, and 1 and 3, are neighbours in memory */
  if (r->stride_v == 1u && c.ok[0] == c.ok[2] && c.ok[1] == c.ok[3]) {
    if (c.ok[0])
      sproj_add_pair(img, c.idx[0], w[0], w[2], r->nvox, out.shift);
    if (c.ok[1])
      sproj_add_pair(img, c.idx[1], w[1], w[3], r->nvox, out.shift);
    return;
  }
  /* u along the fastest axis (a principal-axis copy): corners 0 and 1, and 2 and 3 */
  if (r->stride_u == 1u && c.ok[0] == c.ok[1] && c.ok[2] == c.ok[3]) {
    if (c.ok[0])
      sproj_add_pair(img, c.idx[0], w[0], w[1], r->nvox, out.shift);
    if (c.ok[2])
      sproj_add_pair(img, c.idx[2], w[2], w[3], r->nvox, out.shift);
    return;
  }
#endif
  for (int q = 0; q < 4; q++)
    if (c.ok[q])
      SPROJ_ADD(&img[c.idx[q]], w[q]);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* Floats per row of a warp's window (sproj_ray_scatter_warp): one float4 group per lane of half a warp. */
#define SPROJ_BACK_WINDOW 64
#define SPROJ_BACK_WINDOW_GROUPS (SPROJ_BACK_WINDOW / 4u)
static_assert(2 * SPROJ_BACK_WINDOW_GROUPS == SPROJ_WARP, "a warp's lanes flush the window's two rows, a group each");
/* The widest spread of the lanes' first corners (u0) a window row holds: the row starts up to 3 floats below the
 * lowest (float4 alignment) and the highest lane's second corner (u1) is one float further. */
#define SPROJ_BACK_WINDOW_SPAN (SPROJ_BACK_WINDOW - 5u)

/* A warp's back projection into the principal-axis copies (u fastest: sproj_ray_to_copy), every lane of the warp
 * calling it: act says whether the lane has a prepared ray r, value_at(k) is what its sample in plane k adds (times
 * the bilinear weights; 0: nothing). In the LOR order of a sinogram (radial bins fastest) a warp's rays are
 * neighbours of one view, whose corners in a plane lie in the same two rows of a copy, about a voxel apart: two
 * neighbouring rays hit the same voxel. So the warp walks the planes together, and in a plane where every active
 * lane's corners fall within SPROJ_BACK_WINDOW floats of the same rows, the lanes add their weights into win
 * (2 x SPROJ_BACK_WINDOW floats of shared memory, 16-byte aligned, this warp's own), which then goes into the copy
 * as one float4 atomic per non-zero aligned group of four: about a third of the global atomics of one pair per lane
 * and row. Other planes add lane by lane, as sproj_ray_scatter does. The values added are the same; their order into
 * a voxel is another. Rays along axis 2 add into img on their own. */
template <class ValueAt>
__device__ static inline void sproj_ray_scatter_warp(float *img, float *copies, const struct sproj_geom *geom, int act,
                                                     struct sproj_ray *r, ValueAt value_at, float *win)
{
  const unsigned full = SPROJ_WARP_ALL, lane = threadIdx.x & (SPROJ_WARP - 1u);
  size_t off = 0;
  if (act && !sproj_ray_to_copy(r, geom, &off)) {
    struct sproj_out o = {img, 0, 0};
    for (int k = r->first; k <= r->last; k++) {
      float v = value_at(k);
      if (v != 0.0f)
        sproj_ray_scatter(o, r, k, v);
    }
    act = 0;
  }
  float *out = copies + off;
  int kmin = __reduce_min_sync(full, act ? r->first : INT_MAX);
  int kmax = __reduce_max_sync(full, act ? r->last : INT_MIN);
  /* the two copies' rows are stride_v apart; a warp mixing the axes never uses its window */
  unsigned sv_min = __reduce_min_sync(full, act ? r->stride_v : UINT_MAX);
  unsigned sv_max = __reduce_max_sync(full, act ? r->stride_v : 0u);
  float4 *win4 = (float4 *)win;
  for (int k = kmin; k <= kmax; k++) {
    int on = act && k >= r->first && k <= r->last;
    struct sproj_corners c;
    float w[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    unsigned e = 0;
    if (on) {
      float v = value_at(k);
      on = v != 0.0f;
      sproj_ray_corners(r, k, &c);
      w[0] = v * ((1 - c.wu) * (1 - c.wv));
      w[1] = v * (c.wu * (1 - c.wv));
      w[2] = v * ((1 - c.wu) * c.wv);
      w[3] = v * (c.wu * c.wv);
      e = (unsigned)off + c.idx[0]; /* element of corner (u0, v0) in the copies */
    }
    if (!__any_sync(full, on))
      continue;
    /* indices wrap as in sproj_ray_corners (a corner at u or v = -1), so only their differences count */
    unsigned emin = __reduce_min_sync(full, on ? e : UINT_MAX);
    unsigned emax = __reduce_max_sync(full, on ? e : 0u);
    if (sv_min != sv_max || emax - emin > SPROJ_BACK_WINDOW_SPAN) {
      /* scalar atomics from the corners at hand: calling sproj_ray_scatter here (paired atomics) made the whole
       * kernel 1.34x slower on an H200 (0.279 s against 0.209 s for the benchmark), the common path included */
      if (on)
        for (int q = 0; q < 4; q++)
          if (c.ok[q])
            atomicAdd(&out[c.idx[q]], w[q]);
      continue;
    }
    /* rows v0 and v1 of the window start at the aligned groups holding the lowest corner of each */
    unsigned b0 = emin & ~3u, b1 = (emin + sv_min) & ~3u;
    win4[lane] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncwarp();
    if (on) {
      unsigned p0 = e - b0, p1 = SPROJ_BACK_WINDOW + e + sv_min - b1;
      if (c.ok[0])
        atomicAdd(&win[p0], w[0]);
      if (c.ok[1])
        atomicAdd(&win[p0 + 1u], w[1]);
      if (c.ok[2])
        atomicAdd(&win[p1], w[2]);
      if (c.ok[3])
        atomicAdd(&win[p1 + 1u], w[3]);
    }
    __syncwarp();
    /* lane l flushes group l % SPROJ_BACK_WINDOW_GROUPS of row l / SPROJ_BACK_WINDOW_GROUPS; a non-zero group holds
     * a corner inside the image, so it lies inside the copies' buffer (a multiple of SPROJ_LAYOUT_ALIGN floats,
     * 16-byte aligned) */
    float4 s = win4[lane];
    if (s.x != 0.0f || s.y != 0.0f || s.z != 0.0f || s.w != 0.0f)
      atomicAdd((float4 *)(copies + (unsigned)((lane < SPROJ_BACK_WINDOW_GROUPS ? b0 : b1) +
                                                4u * (lane % SPROJ_BACK_WINDOW_GROUPS))), s);
    __syncwarp();
  }
}
#endif

#endif /* SPROJ_JOSEPH3D_RAY_H */
