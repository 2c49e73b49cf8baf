/* SPDX-License-Identifier: Apache-2.0 */
/* image_axpy.c: CPU codelet, codelet struct and performance model of y <- y + alpha * x over two images. */
#include "config.h"
#include "codelets.h"
#include "image_axpy.h"

static void image_axpy_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_axpy_arg *arg = cl_arg;
  float *y = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const float *x = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (uint32_t i = 0; i < n; i++)
    y[i] = image_axpy_value(y[i], x[i], arg->alpha);
}

static struct starpu_perfmodel image_axpy_model = {
  .type = STARPU_HISTORY_BASED,
  .symbol = "starproj_image_axpy",
};

struct starpu_codelet sproj_image_axpy_cl = {
  .cpu_funcs = {image_axpy_cpu},
  .cpu_funcs_name = {"image_axpy_cpu"},
  SPROJ_CUDA_IMPL(sproj_image_axpy_cuda)
  .nbuffers = 2,
  .modes = {STARPU_RW, STARPU_R},
  .model = &image_axpy_model,
  .name = "image_axpy",
};
