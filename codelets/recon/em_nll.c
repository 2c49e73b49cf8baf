/* SPDX-License-Identifier: Apache-2.0 */
/* em_nll.c: CPU codelet, codelet struct and performance model of the Poisson objective over pieces of LORs. */
#include "config.h"
#include "codelets.h"
#include "em_nll.h"

static void em_nll_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_ratio_arg *arg = cl_arg;
  int parts = sproj_ratio_buffers_per_piece(arg) * arg->npieces;
  double *out = (double *)STARPU_VECTOR_GET_PTR(buffers[parts]);
  double sum = 0.0;
  for (int q = 0; q < arg->npieces; q++) {
    struct sproj_ratio_piece piece = sproj_ratio_piece_get(buffers, arg, q);
    const float *smax = sproj_ratio_small(buffers, arg, parts + 1, q);
    size_t n = (size_t)piece.n * (size_t)arg->num_bins;
    for (size_t k = 0; k < n; k++)
      sum += em_nll_at(piece.p, piece.y, piece.m, piece.a, arg->a_per_lor, arg->a_flat, arg->num_bins, arg->max_ratio,
                       smax, arg->small_fraction, k);
  }
  out[0] = sum;
  for (int j = 1; j < SPROJ_NLL_PARTIALS; j++)
    out[j] = 0.0;
}

static struct starpu_perfmodel em_nll_model = {
  .type = STARPU_NL_REGRESSION_BASED,
  .symbol = "starproj_em_nll",
  .size_base = sproj_ratio_task_values,
};

struct starpu_codelet sproj_em_nll_cl = {
  .cpu_funcs = {em_nll_cpu},
  .cpu_funcs_name = {"em_nll_cpu"},
  SPROJ_CUDA_IMPL(sproj_em_nll_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &em_nll_model,
  .name = "em_nll",
};
