/* SPDX-License-Identifier: Apache-2.0 */
/* em_ratio.c: CPU codelet, codelet struct and performance model of the EM ratio (or a Hessian's data term) over pieces
 * of LORs. */
#include "config.h"
#include "codelets.h"
#include "em_ratio.h"

static void em_ratio_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_ratio_arg *arg = cl_arg;
  int last = sproj_ratio_buffers_per_piece(arg) * arg->npieces;
  for (int q = 0; q < arg->npieces; q++) {
    struct sproj_ratio_piece piece = sproj_ratio_piece_get(buffers, arg, q);
    const float *smax = sproj_ratio_small(buffers, arg, last, q);
    for (uint32_t i = 0; i < piece.n; i++)
      em_term_lor(piece.p, piece.px, piece.y, piece.m, piece.a, arg->a_per_lor, arg->a_flat, arg->num_bins, arg->kind,
                  arg->max_ratio, smax, arg->small_fraction, i);
  }
}

static struct starpu_perfmodel em_ratio_model = {
  .type = STARPU_NL_REGRESSION_BASED,
  .symbol = "starproj_em_ratio",
  .size_base = sproj_ratio_task_values,
};

struct starpu_codelet sproj_em_ratio_cl = {
  .cpu_funcs = {em_ratio_cpu},
  .cpu_funcs_name = {"em_ratio_cpu"},
  SPROJ_CUDA_IMPL(sproj_em_ratio_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &em_ratio_model,
  .name = "em_ratio",
};
