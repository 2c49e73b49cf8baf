/* SPDX-License-Identifier: Apache-2.0 */
/* em_small.h: the largest numerators of STIR's small-value rule (em_small_zero, em_ratio.h) over the values of a
 * piece, one per TOF bin (host + CUDA). */
#ifndef SPROJ_EM_SMALL_H
#define SPROJ_EM_SMALL_H
#include "em_ratio.h"

/* Value k's numerator of kind (enum sproj_ratio_kind), at least 0: p and y hold num_bins values per LOR (NULL where
 * the kind does not read them). A negative or NaN numerator counts as 0, as STIR's max(largest * 1e-6, 0). */
SPROJ_HD float em_small_value(int kind, const float *p, const float *y, size_t k)
{
  float v = em_small_numerator(kind, p ? p[k] : 0.0f, y ? y[k] : 1.0f);
  return v > 0.0f ? v : 0.0f;
}

/* row[b] = the larger of row[b] and the numerators of TOF bin b over a piece's n LORs (host). */
static inline void em_small_piece(float *row, int kind, const float *p, const float *y, size_t n, int num_bins)
{
  size_t values = n * (size_t)num_bins;
  for (size_t k = 0; k < values; k++) {
    float v = em_small_value(kind, p, y, k);
    float *cell = row + k % (size_t)num_bins;
    if (v > *cell)
      *cell = v;
  }
}
#endif
