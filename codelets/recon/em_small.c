/* SPDX-License-Identifier: Apache-2.0 */
/* em_small.c: CPU codelets of STIR's small-value rule: the largest numerators of pieces of LORs (into a reduction
 * buffer), and that buffer's reduction (the larger of two values). */
#include "config.h"
#include "codelets.h"
#include "em_small.h"

static void em_small_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_small_arg *arg = cl_arg;
  int per_piece = arg->has_p + arg->has_y;
  float *largest = (float *)STARPU_VECTOR_GET_PTR(buffers[per_piece * arg->npieces]);
  for (int q = 0; q < arg->npieces; q++) {
    void **piece_buffers = buffers + per_piece * q;
    const float *p = arg->has_p ? (const float *)STARPU_VECTOR_GET_PTR(piece_buffers[0]) : NULL;
    const float *y = arg->has_y ? (const float *)STARPU_VECTOR_GET_PTR(piece_buffers[arg->has_p]) : NULL;
    em_small_piece(largest + (size_t)arg->slot[q] * (size_t)arg->num_bins, arg->kind, p, y,
                   STARPU_VECTOR_GET_NX(piece_buffers[0]), arg->num_bins);
  }
}

static void vec_max_cpu(void *buffers[], void *cl_arg)
{
  (void)cl_arg;
  float *dst = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const float *src = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (uint32_t i = 0; i < n; i++)
    if (src[i] > dst[i])
      dst[i] = src[i];
}

/* Work of a task: the values of its pieces. */
static size_t em_small_values(struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  const struct sproj_small_arg *arg = (const struct sproj_small_arg *)task->cl_arg;
  int per_piece = arg->has_p + arg->has_y;
  size_t values = 0;
  for (int q = 0; q < arg->npieces; q++)
    values += starpu_vector_get_nx(STARPU_TASK_GET_HANDLE(task, per_piece * q));
  return values * (size_t)arg->num_bins;
}

static struct starpu_perfmodel em_small_model = {
  .type = STARPU_NL_REGRESSION_BASED,
  .symbol = "starproj_em_small",
  .size_base = em_small_values,
};

static struct starpu_perfmodel vec_max_model = {
  .type = STARPU_HISTORY_BASED,
  .symbol = "starproj_vec_max",
};

struct starpu_codelet sproj_em_small_cl = {
  .cpu_funcs = {em_small_cpu},
  .cpu_funcs_name = {"em_small_cpu"},
  SPROJ_CUDA_IMPL(sproj_em_small_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &em_small_model,
  .name = "em_small",
};

struct starpu_codelet sproj_vec_max_cl = {
  .cpu_funcs = {vec_max_cpu},
  .cpu_funcs_name = {"vec_max_cpu"},
  SPROJ_CUDA_IMPL(sproj_vec_max_cuda)
  .nbuffers = 2,
  .modes = {STARPU_RW | STARPU_COMMUTE, STARPU_R},
  .model = &vec_max_model,
  .name = "vec_max",
};
