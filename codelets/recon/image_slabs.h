/* SPDX-License-Identifier: Apache-2.0 */
/* image_slabs.h: the sum of several devices' back projections slab by slab, directly or by recursive halving, and the
 * OS-EM update of one slab with it (host + CUDA). */
#ifndef SPROJ_IMAGE_SLABS_H
#define SPROJ_IMAGE_SLABS_H
#include "em_update.h"

/* The update of one voxel from the devices' partial back projections part[0 .. nparts-1] of it, added in that
 * order: the same rule as one device's update (em_update_value) on their sum. */
SPROJ_HD float slab_update_value(float x, const float *const *part, int nparts, uint32_t i, float sens,
                                 float sens_factor)
{
  float bp = part[0][i];
  for (int g = 1; g < nparts; g++)
    bp += part[g][i];
  return em_update_value(x, bp, sens, sens_factor);
}

/* One voxel of a step of the recursive halving: two devices' partial sums of it added. Float addition is
 * commutative, so either device of the pair would get the same value: the order of the additions is the halving's
 * tree, fixed by the device count whichever device runs first. */
SPROJ_HD float slab_pair_sum(const float *own, const float *in, uint32_t i)
{
  return own[i] + in[i];
}
#endif
