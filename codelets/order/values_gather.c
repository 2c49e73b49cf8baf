/* SPDX-License-Identifier: Apache-2.0 */
/* values_gather.c: CPU codelet, codelet struct and performance model of the gather of values into another order.
 * Buffers: out (float, W), the position of each of its values among the sources (uint32, R), then the sources
 * (float, R), arg->nsources of them. */
#include "config.h"
#include "codelets.h"
#include "values_gather.h"

static void values_gather_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_gather_arg *arg = cl_arg;
  float *out = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const uint32_t *pos = (const uint32_t *)STARPU_VECTOR_GET_PTR(buffers[1]);
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  const float *src[SPROJ_GATHER_MAX_SOURCES];
  for (int q = 0; q < arg->nsources; q++)
    src[q] = (const float *)STARPU_VECTOR_GET_PTR(buffers[2 + q]);
  for (uint32_t i = 0; i < n; i++)
    out[i] = sproj_gather_value(src, arg->base, arg->extra, pos[i]);
}

static struct starpu_perfmodel values_gather_model = {
  .type = STARPU_HISTORY_BASED,
  .symbol = "starproj_values_gather",
};

struct starpu_codelet sproj_values_gather_cl = {
  .cpu_funcs = {values_gather_cpu},
  .cpu_funcs_name = {"values_gather_cpu"},
  SPROJ_CUDA_IMPL(sproj_values_gather_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &values_gather_model,
  .name = "values_gather",
};
