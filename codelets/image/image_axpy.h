/* SPDX-License-Identifier: Apache-2.0 */
/* image_axpy.h: y + alpha * x for one voxel (host + CUDA), e.g. a gradient's sensitivity term taken off. */
#ifndef SPROJ_IMAGE_AXPY_H
#define SPROJ_IMAGE_AXPY_H
#include "host_device.h"

SPROJ_HD float image_axpy_value(float y, float x, float alpha)
{
  return y + alpha * x;
}
#endif
