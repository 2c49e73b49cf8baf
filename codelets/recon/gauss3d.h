/* SPDX-License-Identifier: Apache-2.0 */
/* gauss3d.h: separable Gaussian blur of an image along one axis at a time, zero outside the image (host + CUDA). */
#ifndef SPROJ_GAUSS3D_H
#define SPROJ_GAUSS3D_H
#include <stdint.h>
#include "host_device.h"

/* Largest kernel half-width, in voxels (the kernel has 2 * radius + 1 taps). */
#define SPROJ_GAUSS_MAX_RADIUS 64

/* cl_arg of a blur task: image size and, per axis, the half-width and the taps w[0..radius] of the normalised,
 * symmetric kernel (radius 0 with w[0] = 1 leaves that axis as it is). */
struct sproj_gauss_arg {
  int n[3];
  int radius[3];
  float w[3][SPROJ_GAUSS_MAX_RADIUS + 1];
};

/* Element stride of an axis in a C-order [n0][n1][n2] image. */
SPROJ_HD uint32_t gauss3d_stride(const struct sproj_gauss_arg *gauss, int axis)
{
  return axis == 2 ? 1u : axis == 1 ? (uint32_t)gauss->n[2] : (uint32_t)gauss->n[1] * (uint32_t)gauss->n[2];
}

/* The blurred value of voxel idx along one axis. Neighbours outside the image count as 0, so the operator is a
 * symmetric matrix: blurring is its own adjoint. The pair k, -k is added before weighting, in the same order on
 * CPU and GPU. */
SPROJ_HD float gauss3d_axis_voxel(const float *in, const struct sproj_gauss_arg *gauss, int axis, uint32_t idx)
{
  uint32_t stride = gauss3d_stride(gauss, axis);
  int c = (int)((idx / stride) % (uint32_t)gauss->n[axis]), n = gauss->n[axis];
  float s = gauss->w[axis][0] * in[idx];
  for (int k = 1; k <= gauss->radius[axis]; k++) {
    float lo = c - k >= 0 ? in[idx - (uint32_t)k * stride] : 0.0f;
    float hi = c + k < n ? in[idx + (uint32_t)k * stride] : 0.0f;
    s += gauss->w[axis][k] * (lo + hi);
  }
  return s;
}
#endif
