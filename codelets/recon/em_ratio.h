/* SPDX-License-Identifier: Apache-2.0 */
/* em_ratio.h: the per-value data terms of the Poisson log-likelihood's derivatives, overwriting forward values p: the
 * EM ratio m*y / (m*p + a) of the gradient, and the curvature terms of its Hessian (host + CUDA). */
#ifndef SPROJ_EM_RATIO_H
#define SPROJ_EM_RATIO_H
#include <stddef.h>
#include <stdint.h>
#include "host_device.h"

/* Kinds of term (enum sproj_ratio_kind in codelets.h, repeated here for the device code that cannot include it). */
#define SPROJ_EM_TERM_RATIO 0
#define SPROJ_EM_TERM_HESSIAN 1
#define SPROJ_EM_TERM_APPROX_HESSIAN 2

/* The ratio of measured to expected counts, times the multiplicative factor (the adjoint of y -> m*y comes with the
 * back projection). Expected counts of 0 or less give 0: for y = 0 this is the limit 0/0 = 0 of the EM update; for
 * y > 0 such a bin has an infinite likelihood term and no direction to move in, and 0 keeps the image finite.
 * With cap > 0 (frameworks that bound the quotient, as STIR does at 10000): y = 0 gives 0 and the ratio is at most
 * cap, which is also what a bin with y > 0 and no expected counts gets. */
SPROJ_HD float em_ratio_value(float p, float y, float m, float a)
{
  float expected = m * p + a;
  return expected > 0.0f ? (m * y) / expected : 0.0f;
}
SPROJ_HD float em_ratio_capped(float p, float y, float m, float a, float cap)
{
  if (!(cap > 0.0f))
    return em_ratio_value(p, y, m, a);
  float expected = m * p + a;
  if (!(y > 0.0f))
    return 0.0f;
  return m * y > cap * expected ? cap : (m * y) / expected;
}

/* The Hessian of the negative log-likelihood at an image with forward projection px, applied to a direction with
 * forward projection p: per value m^2 y p / ybar^2, ybar = m px + a (0 where ybar <= 0). Its approximation from the
 * data (ybar ~ y): m^2 p / y (0 where y = 0). With cap > 0 both follow STIR's quotient rule: a numerator of 0 or
 * less gives 0, and the quotient is at most cap (so a bin with y = 0 adds cap to the approximation). */
SPROJ_HD float em_hessian_value(float p, float px, float y, float m, float a, float cap)
{
  float ybar = m * px + a, num = m * m * y * p, den = ybar * ybar;
  if (cap > 0.0f) {
    if (!(num > 0.0f))
      return 0.0f;
    return num > cap * den ? cap : num / den;
  }
  return ybar > 0.0f ? num / den : 0.0f;
}
SPROJ_HD float em_approx_hessian_value(float p, float y, float m, float cap)
{
  float num = m * m * p;
  if (cap > 0.0f) {
    if (!(num > 0.0f))
      return 0.0f;
    return num > cap * y ? cap : num / y;
  }
  return y > 0.0f ? num / y : 0.0f;
}

/* The background of value k (LOR i, one of its num_bins TOF bins): a holds num_bins values per LOR, or with
 * a_per_lor one per LOR, spread evenly over its bins (a NULL: a_flat for every value). */
SPROJ_HD float em_background(const float *a, int a_per_lor, float a_flat, int num_bins, size_t i, size_t k)
{
  if (!a)
    return a_flat;
  return a_per_lor ? a[i] / (float)num_bins : a[k];
}

/* STIR's small-value rule (divide_and_truncate, accumulate_loglikelihood): a quotient whose numerator, as STIR
 * writes it (before the multiplicative factor: the count y for the EM ratio and the objective, y times the
 * direction's forward value p for the Hessian, p for its approximation), is at or below a fraction of the largest
 * numerator of its group of values (STIR: 1e-6 of its viewgram's) counts as a zero numerator. */
SPROJ_HD float em_small_numerator(int kind, float p, float y)
{
  return kind == SPROJ_EM_TERM_APPROX_HESSIAN ? p : kind == SPROJ_EM_TERM_HESSIAN ? y * p : y;
}

/* Whether a numerator falls under the rule, smax_bin being the largest numerator (at least 0) of its group and TOF
 * bin. */
SPROJ_HD int em_small_under(int kind, float p, float y, float smax_bin, float frac)
{
  return !(em_small_numerator(kind, p, y) > frac * smax_bin);
}

/* Whether value k's numerator falls under the rule: smax NULL (no rule), or the largest numerators (at least 0) of
 * the value's group, one per TOF bin, times frac. */
SPROJ_HD int em_small_zero(int kind, float p, float y, const float *smax, float frac, int num_bins, size_t k)
{
  return smax && em_small_under(kind, p, y, smax[k % (size_t)num_bins], frac);
}

/* The operands of one value: p, px, y, the LOR's m and the value's background a, and the small-value rule's largest
 * numerator of its bin (smax; no rule: has_smax 0). */
struct em_operands {
  float p, px, y, m, a, smax;
  int has_smax;
};

/* Value k = i * num_bins + b of a piece (LOR i, its TOF bin b): p, px (the Hessian's image, NULL otherwise) and y
 * (NULL: 1 per value, listmode events) hold num_bins values per LOR, m (NULL: 1) one, a as em_background; smax and
 * frac as em_small_zero (a zero numerator gives 0). Loads them all, so that a CUDA thread can load several values'
 * operands before it stores any result (em_ratio.cu). */
SPROJ_HD struct em_operands em_term_load(const float *p, const float *px, const float *y, const float *m,
                                         const float *a, int a_per_lor, float a_flat, int num_bins, int kind,
                                         const float *smax, size_t i, int b, size_t k)
{
  struct em_operands o;
  o.p = p[k];
  o.px = kind == SPROJ_EM_TERM_HESSIAN ? px[k] : 0.0f;
  o.y = y ? y[k] : 1.0f;
  o.m = m ? m[i] : 1.0f;
  o.a = kind == SPROJ_EM_TERM_APPROX_HESSIAN ? 0.0f : em_background(a, a_per_lor, a_flat, num_bins, i, k);
  o.has_smax = smax != NULL;
  o.smax = smax ? smax[b] : 0.0f;
  return o;
}

/* The term of one value from its operands: what overwrites p[k]. */
SPROJ_HD float em_term_of(const struct em_operands *o, int kind, float cap, float frac)
{
  if (o->has_smax && em_small_under(kind, o->p, o->y, o->smax, frac))
    return 0.0f;
  if (kind == SPROJ_EM_TERM_APPROX_HESSIAN)
    return em_approx_hessian_value(o->p, o->y, o->m, cap);
  if (kind == SPROJ_EM_TERM_HESSIAN)
    return em_hessian_value(o->p, o->px, o->y, o->m, o->a, cap);
  return em_ratio_capped(o->p, o->y, o->m, o->a, cap);
}

/* LOR i of a piece: its num_bins values, overwritten by their terms. */
SPROJ_HD void em_term_lor(float *p, const float *px, const float *y, const float *m, const float *a, int a_per_lor,
                          float a_flat, int num_bins, int kind, float cap, const float *smax, float frac, uint32_t i)
{
  for (int b = 0; b < num_bins; b++) {
    size_t k = (size_t)i * (size_t)num_bins + (size_t)b;
    struct em_operands o = em_term_load(p, px, y, m, a, a_per_lor, a_flat, num_bins, kind, smax, i, b, k);
    p[k] = em_term_of(&o, kind, cap, frac);
  }
}
#endif
