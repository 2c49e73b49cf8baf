/* SPDX-License-Identifier: Apache-2.0 */
/* em_update.c: CPU codelet, codelet struct and performance model of the image updates (EM, OSMAPOSL, OSSPS). */
#include "config.h"
#include "codelets.h"
#include "em_update.h"

static void em_update_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_update_arg *arg = cl_arg;
  float *x = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const float *bp = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  const float *sens = (const float *)STARPU_VECTOR_GET_PTR(buffers[2]);
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (uint32_t i = 0; i < n; i++)
    x[i] = update_value(arg->kind, x[i], bp[i], sens[i], arg->sens_factor, arg->num_scale, arg->step, arg->lo, arg->hi);
}

static struct starpu_perfmodel em_update_model = {
  .type = STARPU_HISTORY_BASED,
  .symbol = "starproj_em_update",
};

struct starpu_codelet sproj_em_update_cl = {
  .cpu_funcs = {em_update_cpu},
  .cpu_funcs_name = {"em_update_cpu"},
  SPROJ_CUDA_IMPL(sproj_em_update_cuda)
  .nbuffers = 3,
  .modes = {STARPU_RW, STARPU_R, STARPU_R},
  .model = &em_update_model,
  .name = "em_update",
};
