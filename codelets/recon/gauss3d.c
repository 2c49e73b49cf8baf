/* SPDX-License-Identifier: Apache-2.0 */
/* gauss3d.c: CPU codelet, codelet struct and performance model of the separable Gaussian blur of an image. */
#include "config.h"
#include <math.h>
#include "codelets.h"
#include "gauss3d.h"

/* Where the sampled Gaussian is cut, in sigmas: its weights beyond are below 1.1% of the centre's. */
#define GAUSS_CUT_SIGMAS 3.0

int sproj_gauss_arg_init(struct sproj_gauss_arg *gauss, const int n[3], const float voxel_size[3], const float fwhm[3])
{
  for (int a = 0; a < 3; a++) {
    double sigma = fwhm[a] / (2.0 * sqrt(2.0 * log(2.0))) / voxel_size[a]; /* FWHM = 2 sqrt(2 ln 2) sigma */
    /* compared in double: a huge FWHM would overflow the conversion to int (and wrap to a negative radius) */
    double reach = fwhm[a] > 0.0f ? ceil(GAUSS_CUT_SIGMAS * sigma) : 0.0;
    if (!(reach <= SPROJ_GAUSS_MAX_RADIUS))
      return a;
    int radius = (int)reach;
    double w[SPROJ_GAUSS_MAX_RADIUS + 1], sum = 0.0;
    for (int k = 0; k <= radius; k++) {
      w[k] = radius > 0 ? exp(-0.5 * (k / sigma) * (k / sigma)) : 1.0;
      sum += k == 0 ? w[k] : 2.0 * w[k];
    }
    gauss->n[a] = n[a];
    gauss->radius[a] = radius;
    for (int k = 0; k <= SPROJ_GAUSS_MAX_RADIUS; k++)
      gauss->w[a][k] = k <= radius ? (float)(w[k] / sum) : 0.0f;
  }
  return -1;
}

static void gauss3d_pass(const float *in, float *out, const struct sproj_gauss_arg *gauss, int axis, uint32_t n)
{
  for (uint32_t i = 0; i < n; i++)
    out[i] = gauss3d_axis_voxel(in, gauss, axis, i);
}

/* in -> out along axis 0, out -> scratch along axis 1, scratch -> out along axis 2 */
static void gauss3d_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_gauss_arg *gauss = cl_arg;
  const float *in = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  float *out = (float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  float *tmp = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[1]);
  gauss3d_pass(in, out, gauss, 0, n);
  gauss3d_pass(out, tmp, gauss, 1, n);
  gauss3d_pass(tmp, out, gauss, 2, n);
}

static struct starpu_perfmodel gauss3d_model = {
  .type = STARPU_HISTORY_BASED,
  .symbol = "starproj_gauss3d",
};

struct starpu_codelet sproj_gauss3d_cl = {
  .cpu_funcs = {gauss3d_cpu},
  .cpu_funcs_name = {"gauss3d_cpu"},
  SPROJ_CUDA_IMPL(sproj_gauss3d_cuda)
  .nbuffers = 3,
  .modes = {STARPU_R, STARPU_W, STARPU_SCRATCH},
  .model = &gauss3d_model,
  .name = "gauss3d",
};
