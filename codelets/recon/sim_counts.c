/* SPDX-License-Identifier: Apache-2.0 */
/* sim_counts.c: CPU codelets, codelet structs and performance models of simulated data over pieces of LORs: the sum
 * of m p (the trues of the projected image) and the counts drawn in place. */
#include "config.h"
#include "codelets.h"
#include "em_nll.h"
#include "sim_counts.h"

static void sim_sum_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_sim_arg *arg = cl_arg;
  double *out = (double *)STARPU_VECTOR_GET_PTR(buffers[sproj_sim_buffers_per_piece(arg) * arg->npieces]);
  double sum = 0.0;
  for (int q = 0; q < arg->npieces; q++) {
    struct sproj_sim_piece piece = sproj_sim_piece_get(buffers, arg, q);
    size_t n = (size_t)piece.n * (size_t)arg->num_bins;
    for (size_t k = 0; k < n; k++)
      sum += (piece.m ? (double)piece.m[k / (size_t)arg->num_bins] : 1.0) * (double)piece.p[k];
  }
  out[0] = sum;
  for (int j = 1; j < SPROJ_NLL_PARTIALS; j++)
    out[j] = 0.0;
}

static void sim_draw_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_sim_arg *arg = cl_arg;
  const size_t bins = (size_t)arg->num_bins;
  for (int q = 0; q < arg->npieces; q++) {
    struct sproj_sim_piece piece = sproj_sim_piece_get(buffers, arg, q);
    for (size_t i = 0; i < piece.n; i++) {
      double s = 0.0;
      for (size_t b = 0; b < bins; b++) {
        size_t k = i * bins + b;
        float v = sim_value(piece.p[k], piece.m ? piece.m[i] : 1.0f,
                            em_background(piece.a, arg->a_per_lor, arg->a_flat, arg->num_bins, i, k), arg->scale,
                            arg->noise, arg->seed, (uint64_t)arg->first_value[q] + k);
        piece.p[k] = v;
        s += v;
      }
      if (piece.sums)
        piece.sums[i] = (float)s;
    }
  }
}

static void sim_emit_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_emit_arg *arg = cl_arg;
  for (int q = 0; q < arg->npieces; q++) {
    const float *counts = (const float *)STARPU_VECTOR_GET_PTR(buffers[3 * q]);
    const int32_t *off = (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[3 * q + 1]);
    int16_t *out = (int16_t *)STARPU_VECTOR_GET_PTR(buffers[3 * q + 2]);
    uint32_t n = STARPU_VECTOR_GET_NX(buffers[3 * q]);
    for (uint32_t i = 0; i < n; i++)
      sim_emit_lor(counts, off, out, arg->num_bins, i);
  }
}

static size_t sim_emit_task_values(struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  const struct sproj_emit_arg *arg = (const struct sproj_emit_arg *)task->cl_arg;
  size_t values = 0;
  for (int q = 0; q < arg->npieces; q++)
    values += starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, 3 * q));
  return values * (size_t)arg->num_bins;
}

static struct starpu_perfmodel sim_emit_model = {
  .type = STARPU_NL_REGRESSION_BASED,
  .symbol = "starproj_sim_emit",
  .size_base = sim_emit_task_values,
};

struct starpu_codelet sproj_sim_emit_cl = {
  .cpu_funcs = {sim_emit_cpu},
  .cpu_funcs_name = {"sim_emit_cpu"},
  SPROJ_CUDA_IMPL(sproj_sim_emit_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &sim_emit_model,
  .name = "sim_emit",
};

static struct starpu_perfmodel sim_sum_model = {
  .type = STARPU_NL_REGRESSION_BASED,
  .symbol = "starproj_sim_sum",
  .size_base = sproj_sim_task_values,
};

static struct starpu_perfmodel sim_draw_model = {
  .type = STARPU_NL_REGRESSION_BASED,
  .symbol = "starproj_sim_draw",
  .size_base = sproj_sim_task_values,
};

struct starpu_codelet sproj_sim_sum_cl = {
  .cpu_funcs = {sim_sum_cpu},
  .cpu_funcs_name = {"sim_sum_cpu"},
  SPROJ_CUDA_IMPL(sproj_sim_sum_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &sim_sum_model,
  .name = "sim_sum",
};

struct starpu_codelet sproj_sim_draw_cl = {
  .cpu_funcs = {sim_draw_cpu},
  .cpu_funcs_name = {"sim_draw_cpu"},
  SPROJ_CUDA_IMPL(sproj_sim_draw_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &sim_draw_model,
  .name = "sim_draw",
};
