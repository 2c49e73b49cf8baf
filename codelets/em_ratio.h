/* SPDX-License-Identifier: Apache-2.0 */
/* em_ratio.h: the EM ratio of one LOR, m*y / (m*p + a) per TOF bin, overwriting the forward values p (host + CUDA). */
#ifndef SPROJ_EM_RATIO_H
#define SPROJ_EM_RATIO_H
#include "joseph3d_ray.h"

/* The ratio of measured to expected counts, times the multiplicative factor (the adjoint of y -> m*y comes with the
 * back projection). Expected counts of 0 or less give 0: for y = 0 this is the limit 0/0 = 0 of the EM update; for
 * y > 0 such a bin has an infinite likelihood term and no direction to move in, and 0 keeps the image finite. */
SPROJ_HD float em_ratio_value(float p, float y, float m, float a)
{
  float expected = m * p + a;
  return expected > 0.0f ? (m * y) / expected : 0.0f;
}

/* The background of value k (LOR i, one of its num_bins TOF bins): a holds num_bins values per LOR, or with
 * a_per_lor one per LOR, spread evenly over its bins (a NULL: 0). */
SPROJ_HD float em_background(const float *a, int a_per_lor, int num_bins, size_t i, size_t k)
{
  if (!a)
    return 0.0f;
  return a_per_lor ? a[i] / (float)num_bins : a[k];
}

/* Value k of a piece (LOR k / num_bins, its TOF bin k % num_bins): p and y (NULL: 1 per value, listmode events) hold
 * num_bins values per LOR, m (NULL: 1) one, a as em_background. A CUDA thread takes one value, so that neighbouring
 * threads touch neighbouring floats of every array (a thread per LOR strides by num_bins floats). */
SPROJ_HD void em_ratio_at(float *p, const float *y, const float *m, const float *a, int a_per_lor, int num_bins,
                          size_t k)
{
  size_t i = k / (size_t)num_bins;
  p[k] = em_ratio_value(p[k], y ? y[k] : 1.0f, m ? m[i] : 1.0f, em_background(a, a_per_lor, num_bins, i, k));
}

/* LOR i of a piece: its num_bins values. */
SPROJ_HD void em_ratio_lor(float *p, const float *y, const float *m, const float *a, int a_per_lor, int num_bins,
                           uint32_t i)
{
  for (int b = 0; b < num_bins; b++)
    em_ratio_at(p, y, m, a, a_per_lor, num_bins, (size_t)i * (size_t)num_bins + (size_t)b);
}
#endif
