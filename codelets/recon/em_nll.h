/* SPDX-License-Identifier: Apache-2.0 */
/* em_nll.h: the Poisson negative log-likelihood term of one value, in double (host + CUDA). */
#ifndef SPROJ_EM_NLL_H
#define SPROJ_EM_NLL_H
#include <math.h>
#include "em_ratio.h"

/* Partial sums an objective task returns: a CPU task puts its sum in the first and zeros in the others, a CUDA task
 * one per block of a grid fixed by its number of values; the host adds them in order, so that the objective does
 * not depend on which worker ran what, or when. */
#define SPROJ_NLL_PARTIALS 1024

/* Value k of a piece (LOR k / num_bins, its TOF bin k % num_bins; arrays as em_term_load, a as em_background): with
 * the expected counts ybar = m p + a, sinogram data y give ybar - y log ybar (+infinity where y > 0 and ybar <= 0), a listmode event
 * (y NULL: one count) -log ybar (+infinity where ybar <= 0), its ybar being counted once for all by <s, x>. With
 * cap > 0 (em_ratio_capped) ybar is taken as at least y / cap, as STIR takes it, so that no term is infinite. A
 * count under the small-value rule (em_small_zero with smax and frac) adds ybar alone, as STIR's does. */
SPROJ_HD double em_nll_at(const float *p, const float *y, const float *m, const float *a, int a_per_lor, float a_flat,
                          int num_bins, float cap, const float *smax, float frac, size_t k)
{
  size_t i = k / (size_t)num_bins;
  double ybar = (m ? (double)m[i] : 1.0) * (double)p[k] + (double)em_background(a, a_per_lor, a_flat, num_bins, i, k);
  double c = y ? (double)y[k] : 1.0;
  if (cap > 0.0f && ybar < c / (double)cap)
    ybar = c / (double)cap;
  if (!y)
    return ybar > 0.0 ? -log(ybar) : INFINITY;
  if (c > 0.0 && !em_small_zero(SPROJ_EM_TERM_RATIO, 0.0f, y[k], smax, frac, num_bins, k))
    return ybar > 0.0 ? ybar - c * log(ybar) : INFINITY;
  return ybar;
}
#endif
