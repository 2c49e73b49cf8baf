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

/* Whether value k's numerator falls under the rule: smax NULL (no rule), or the largest numerators (at least 0) of
 * the value's group, one per TOF bin, times frac. */
SPROJ_HD int em_small_zero(int kind, float p, float y, const float *smax, float frac, int num_bins, size_t k)
{
  return smax && !(em_small_numerator(kind, p, y) > frac * smax[k % (size_t)num_bins]);
}

/* Value k of a piece (LOR k / num_bins, its TOF bin k % num_bins): p, px (the Hessian's image, NULL otherwise) and y
 * (NULL: 1 per value, listmode events) hold num_bins values per LOR, m (NULL: 1) one, a as em_background; smax and
 * frac as em_small_zero (a zero numerator gives 0). A CUDA thread takes one value, so that neighbouring threads touch
 * neighbouring floats of every array (a thread per LOR strides by num_bins floats). */
SPROJ_HD void em_term_at(float *p, const float *px, const float *y, const float *m, const float *a, int a_per_lor,
                         float a_flat, int num_bins, int kind, float cap, const float *smax, float frac, size_t k)
{
  size_t i = k / (size_t)num_bins;
  float yk = y ? y[k] : 1.0f, mi = m ? m[i] : 1.0f;
  if (em_small_zero(kind, p[k], yk, smax, frac, num_bins, k))
    p[k] = 0.0f;
  else if (kind == SPROJ_EM_TERM_APPROX_HESSIAN)
    p[k] = em_approx_hessian_value(p[k], yk, mi, cap);
  else if (kind == SPROJ_EM_TERM_HESSIAN)
    p[k] = em_hessian_value(p[k], px[k], yk, mi, em_background(a, a_per_lor, a_flat, num_bins, i, k), cap);
  else
    p[k] = em_ratio_capped(p[k], yk, mi, em_background(a, a_per_lor, a_flat, num_bins, i, k), cap);
}

/* LOR i of a piece: its num_bins values. */
SPROJ_HD void em_term_lor(float *p, const float *px, const float *y, const float *m, const float *a, int a_per_lor,
                          float a_flat, int num_bins, int kind, float cap, const float *smax, float frac, uint32_t i)
{
  for (int b = 0; b < num_bins; b++)
    em_term_at(p, px, y, m, a, a_per_lor, a_flat, num_bins, kind, cap, smax, frac,
               (size_t)i * (size_t)num_bins + (size_t)b);
}
#endif
