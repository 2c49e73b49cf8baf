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

/* LOR i of a piece: num_bins values of p, y (NULL: 1 per value, listmode events) and a (NULL: 0), one m (NULL: 1). */
SPROJ_HD void em_ratio_lor(float *p, const float *y, const float *m, const float *a, int num_bins, uint32_t i)
{
  float mi = m ? m[i] : 1.0f;
  for (int b = 0; b < num_bins; b++) {
    size_t k = (size_t)i * (size_t)num_bins + (size_t)b;
    p[k] = em_ratio_value(p[k], y ? y[k] : 1.0f, mi, a ? a[k] : 0.0f);
  }
}
#endif
