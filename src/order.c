/* SPDX-License-Identifier: Apache-2.0 */
/* order.c: an order of LORs (listmode events) in which neighbours run through the same image columns, and the
 * reordering of arrays by it. */
#include "config.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* Bits of the key: transaxial direction, transaxial offset, axial position of the midpoint (32 in all; sorted as the
 * high half of 64-bit elements whose low half is the LOR's index). */
#define DIR_BITS 11
#define OFFSET_BITS 11
#define AXIAL_BITS 10
#define NONFINITE_KEY UINT32_MAX

/* Steps of the key's three parts, from the LORs' extent and the voxel size. */
struct key_steps {
  float dir_scale;   /* pseudo-angle (0 .. 2) -> direction bin */
  float off_min, off_scale;     /* offset -> offset bin: (offset - off_min) * off_scale */
  float axial_min, axial_scale; /* the same for the axial midpoint */
};

static int finite3(const float *p)
{
  return isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]);
}

/* Steps that keep neighbours within about a voxel: a direction bin turns a LOR by about one voxel at the LORs'
 * largest transaxial radius R, an offset bin is a transaxial voxel, an axial bin half an axial voxel; each part is
 * coarsened where its range needs more bins than it has bits. */
static void key_steps(const float *xs, const float *xe, int64_t n, const float vs[3], struct key_steps *k)
{
  float r2 = 0.0f, zmin = INFINITY, zmax = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    const float *a = xs + 3 * i, *b = xe + 3 * i;
    if (!finite3(a) || !finite3(b))
      continue;
    r2 = fmaxf(r2, fmaxf(a[0] * a[0] + a[1] * a[1], b[0] * b[0] + b[1] * b[1]));
    float z = 0.5f * (a[2] + b[2]);
    zmin = fminf(zmin, z);
    zmax = fmaxf(zmax, z);
  }
  float vt = fminf(vs[0], vs[1]), radius = sqrtf(r2);
  /* the pseudo-angle moves between 1/2 and 1 per radian: pi * R / vt bins over its range of 2 turn a LOR by 0.6 to
   * 1.3 voxels at R */
  float dir_bins = fminf(fmaxf(3.14159265f * radius / vt, 1.0f), (float)((1u << DIR_BITS) - 1));
  k->dir_scale = dir_bins / 2.0f;
  k->off_min = -radius;
  k->off_scale = 1.0f / fmaxf(vt, 2.0f * radius / (float)((1u << OFFSET_BITS) - 1));
  if (!(zmax >= zmin)) {
    zmin = 0.0f;
    zmax = 0.0f;
  }
  k->axial_min = zmin;
  k->axial_scale = 1.0f / fmaxf(0.5f * vs[2], (zmax - zmin) / (float)((1u << AXIAL_BITS) - 1));
}

/* v in bins, clamped to 0 .. 2^bits - 1 (NaN, which LORs near FLT_MAX can give, counts 0). */
static uint32_t part(float v, unsigned bits)
{
  float q = floorf(v);
  uint32_t top = (1u << bits) - 1u;
  if (!(q > 0.0f))
    return 0;
  return q >= (float)top ? top : (uint32_t)q;
}

/* The key of the LOR a -> b. Its transaxial direction, folded into angles [0, pi), is a pseudo-angle in [0, 2]
 * (monotone in the angle, no trigonometry; a LOR along the axis gets 0), its offset the signed distance of its
 * transaxial projection from the axis. */
static uint32_t lor_key(const float *a, const float *b, const struct key_steps *k)
{
  if (!finite3(a) || !finite3(b))
    return NONFINITE_KEY;
  float dx = b[0] - a[0], dy = b[1] - a[1];
  if (dy < 0.0f || (dy == 0.0f && dx < 0.0f)) {
    dx = -dx;
    dy = -dy;
  }
  float l1 = fabsf(dx) + dy, l2 = sqrtf(dx * dx + dy * dy);
  float mx = 0.5f * (a[0] + b[0]), my = 0.5f * (a[1] + b[1]), mz = 0.5f * (a[2] + b[2]);
  float p = 0.0f, off = hypotf(mx, my);
  if (l2 > 0.0f) {
    p = 1.0f - dx / l1;
    off = (mx * dy - my * dx) / l2;
  }
  uint32_t d = part(p * k->dir_scale, DIR_BITS);
  uint32_t o = part((off - k->off_min) * k->off_scale, OFFSET_BITS);
  uint32_t z = part((mz - k->axial_min) * k->axial_scale, AXIAL_BITS);
  uint32_t key = (d << (OFFSET_BITS + AXIAL_BITS)) | (o << AXIAL_BITS) | z;
  return key == NONFINITE_KEY ? NONFINITE_KEY - 1u : key;
}

/* One stable counting pass over 11 bits of the keys (the high 32 bits of each element; the low 32 hold the LOR's
 * index), from src into dst; a pass whose digit is the same everywhere moves nothing and returns 0. */
static int radix_pass(const uint64_t *src, uint64_t *dst, int64_t n, unsigned shift, int64_t *count)
{
  enum { DIGITS = 1 << 11 };
  memset(count, 0, DIGITS * sizeof *count);
  for (int64_t i = 0; i < n; i++)
    count[(src[i] >> shift) & (DIGITS - 1)]++;
  int64_t sum = 0;
  for (int d = 0; d < DIGITS; d++) {
    if (count[d] == n)
      return 0;
    int64_t c = count[d];
    count[d] = sum;
    sum += c;
  }
  for (int64_t i = 0; i < n; i++)
    dst[count[(src[i] >> shift) & (DIGITS - 1)]++] = src[i];
  return 1;
}

int sproj_lors_order(const float *xstart, const float *xend, int64_t num_lors, const float voxel_size[3],
                     int64_t *order)
{
  if (num_lors < 0)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "num_lors %lld is negative", (long long)num_lors);
  if (!voxel_size || (num_lors > 0 && (!xstart || !xend || !order)))
    return SPROJ_FAIL(SPROJ_ERR_NULL, "%s is NULL",
                      !voxel_size ? "voxel_size" : !xstart ? "xstart" : !xend ? "xend" : "order");
  for (int a = 0; a < 3; a++)
    if (!isfinite(voxel_size[a]) || !(voxel_size[a] > 0.0f))
      return SPROJ_FAIL(SPROJ_ERR_VOXEL_SIZE, "voxel_size[%d] = %g must be finite and > 0", a, (double)voxel_size[a]);
  if (num_lors == 0)
    return SPROJ_OK;
  if (num_lors > (int64_t)UINT32_MAX)
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "%lld LORs are more than a LOR set holds (2^32-1)", (long long)num_lors);
  uint64_t *a = malloc((size_t)num_lors * sizeof *a), *b = malloc((size_t)num_lors * sizeof *b);
  int64_t *count = malloc((1 << 11) * sizeof *count);
  if (!a || !b || !count) {
    free(a);
    free(b);
    free(count);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "no memory to order %lld LORs", (long long)num_lors);
  }
  struct key_steps k;
  key_steps(xstart, xend, num_lors, voxel_size, &k);
  for (int64_t i = 0; i < num_lors; i++)
    a[i] = (uint64_t)lor_key(xstart + 3 * i, xend + 3 * i, &k) << 32 | (uint64_t)i;
  /* three stable passes over the key (bits 32-42, 43-53, 54-63): LORs with equal keys keep their order */
  for (unsigned shift = 32; shift < 64; shift += 11)
    if (radix_pass(a, b, num_lors, shift, count)) {
      uint64_t *t = a;
      a = b;
      b = t;
    }
  for (int64_t i = 0; i < num_lors; i++)
    order[i] = (int64_t)(a[i] & 0xffffffffu);
  free(a);
  free(b);
  free(count);
  return SPROJ_OK;
}

/* dst[i] = src[order[i]] for elements of one size: a typed loop for the sizes per-event arrays have. */
#define REORDER_AS(type)                                                                                       \
  do {                                                                                                         \
    const type *s_ = (const type *)src;                                                                        \
    type *d_ = (type *)dst;                                                                                    \
    for (int64_t i = 0; i < n; i++)                                                                            \
      d_[i] = s_[order[i]];                                                                                    \
  } while (0)

struct three_floats {
  float v[3];
};

static void reorder_copy(unsigned char *dst, const unsigned char *src, size_t elem_bytes, int64_t n,
                         const int64_t *order)
{
  switch (elem_bytes) {
  case 1: REORDER_AS(uint8_t); break;
  case 2: REORDER_AS(uint16_t); break;
  case 4: REORDER_AS(uint32_t); break;
  case 8: REORDER_AS(uint64_t); break;
  case 12: REORDER_AS(struct three_floats); break;
  default:
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + (size_t)i * elem_bytes, src + (size_t)order[i] * elem_bytes, elem_bytes);
  }
}

int sproj_reorder(void *array, size_t elem_bytes, int64_t n, const int64_t *order)
{
  if (n < 0)
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "n %lld is negative", (long long)n);
  if (n > 0 && (!array || !order))
    return SPROJ_FAIL(SPROJ_ERR_NULL, "%s is NULL", !array ? "array" : "order");
  if (n > 0 && elem_bytes == 0)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "elem_bytes is 0");
  if (n == 0)
    return SPROJ_OK;
  if ((uint64_t)n > SIZE_MAX / elem_bytes)
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "%lld elements of %zu bytes overflow", (long long)n, elem_bytes);
  /* order must be a permutation of 0 .. n-1: checked before anything moves */
  unsigned char *seen = calloc(((size_t)n + 7) / 8, 1);
  if (!seen)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "no memory to check the order of %lld elements", (long long)n);
  for (int64_t i = 0; i < n; i++) {
    int64_t j = order[i];
    if (j < 0 || j >= n || (seen[j >> 3] >> (j & 7) & 1)) {
      free(seen);
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "order[%lld] = %lld is %s", (long long)i, (long long)j,
                        j < 0 || j >= n ? "outside 0 .. n-1" : "there twice: not a permutation");
    }
    seen[j >> 3] |= (unsigned char)(1u << (j & 7));
  }
  free(seen);
  unsigned char *copy = malloc((size_t)n * elem_bytes), *dst = array;
  if (!copy)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "no memory to reorder %lld elements of %zu bytes", (long long)n, elem_bytes);
  memcpy(copy, array, (size_t)n * elem_bytes);
  reorder_copy(dst, copy, elem_bytes, n, order);
  free(copy);
  return SPROJ_OK;
}
