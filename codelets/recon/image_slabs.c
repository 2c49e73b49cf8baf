/* SPDX-License-Identifier: Apache-2.0 */
/* image_slabs.c: CPU codelets, codelet structs and performance models of an image's slabs: cut an image into slabs,
 * put slabs together into an image, add two devices' partial sums in a step of the recursive halving, and update one
 * slab of the OS-EM image from the devices' partial back projections of it. */
#include "config.h"
#include <string.h>
#include "codelets.h"
#include "image_slabs.h"

/* Buffers: the image (R), then arg->nslabs slabs (W), slab s from voxel arg->first[s]. */
static void slab_split_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_slabs_arg *arg = cl_arg;
  const float *img = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (int s = 0; s < arg->nslabs; s++)
    memcpy((void *)STARPU_VECTOR_GET_PTR(buffers[1 + s]), img + arg->first[s],
           (size_t)STARPU_VECTOR_GET_NX(buffers[1 + s]) * sizeof(float));
}

/* Buffers: the image (W), then arg->nslabs slabs (R) that cover it. */
static void slab_gather_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_slabs_arg *arg = cl_arg;
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (int s = 0; s < arg->nslabs; s++)
    memcpy(img + arg->first[s], (const void *)STARPU_VECTOR_GET_PTR(buffers[1 + s]),
           (size_t)STARPU_VECTOR_GET_NX(buffers[1 + s]) * sizeof(float));
}

/* Buffers: the image's slab (RW), the sensitivity's slab (R), then arg->nparts partial back projections of it (R). */
static void slab_update_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_slab_update_arg *arg = cl_arg;
  float *x = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const float *sens = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  const float *part[SPROJ_MAX_SLABS];
  for (int g = 0; g < arg->nparts; g++)
    part[g] = (const float *)STARPU_VECTOR_GET_PTR(buffers[2 + g]);
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (uint32_t i = 0; i < n; i++)
    x[i] = slab_update_value(x[i], part, arg->nparts, i, sens[i], arg->sens_factor);
}

/* Buffers: this device's partial sums (R), the partner's of the step's voxels (R), then arg->nout sums (W): the half
 * sent on and the half kept, or the whole step. */
static void slab_halve_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_slab_halve_arg *arg = cl_arg;
  const float *own = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]) + arg->own_at;
  const float *in = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  for (int h = 0; h < arg->nout; h++) {
    float *half = (float *)STARPU_VECTOR_GET_PTR(buffers[2 + h]);
    uint32_t at = h ? arg->keep_at : arg->out_at, n = STARPU_VECTOR_GET_NX(buffers[2 + h]);
    for (uint32_t i = 0; i < n; i++)
      half[i] = slab_pair_sum(own + at, in + at, i);
  }
}

/* The bytes a cut or a gather moves: each piece read and written once (a cut may read only part of its image). */
static size_t slab_copy_traffic(struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  size_t bytes = 0;
  for (unsigned b = 1; b < STARPU_TASK_GET_NBUFFERS(task); b++)
    bytes += 2 * starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, b));
  return bytes;
}

/* The bytes an update moves: its slab read and written, the sensitivity's slab and each part. */
static size_t slab_update_traffic(struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  return starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, 0)) * (STARPU_TASK_GET_NBUFFERS(task) + 1);
}

/* The bytes a halving step moves: the step's voxels read twice (this device's sums, which may be part of a whole
 * image, and the partner's) and written once (the two halves, or the whole). */
static size_t slab_halve_traffic(struct starpu_task *task, unsigned nimpl)
{
  (void)nimpl;
  return 3 * starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, 1));
}

/* Memory-bound copies and sums: a regression on the bytes they move (the traffic functions above), which also covers
 * slab sizes never measured where a history model would stop a simulation. */
#define SLAB_MODEL(var, sym, traffic)                                                                                  \
  static struct starpu_perfmodel var = {                                                                             \
    .type = STARPU_NL_REGRESSION_BASED,                                                                              \
    .symbol = sym,                                                                                                   \
    .size_base = traffic,                                                                                            \
  }
SLAB_MODEL(slab_split_model, "starproj_slab_split", slab_copy_traffic);
SLAB_MODEL(slab_gather_model, "starproj_slab_gather", slab_copy_traffic);
SLAB_MODEL(slab_update_model, "starproj_slab_update", slab_update_traffic);
SLAB_MODEL(slab_halve_model, "starproj_slab_halve", slab_halve_traffic);

struct starpu_codelet sproj_slab_split_cl = {
  .cpu_funcs = {slab_split_cpu},
  .cpu_funcs_name = {"slab_split_cpu"},
  SPROJ_CUDA_IMPL(sproj_slab_split_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &slab_split_model,
  .name = "slab_split",
};

struct starpu_codelet sproj_slab_gather_cl = {
  .cpu_funcs = {slab_gather_cpu},
  .cpu_funcs_name = {"slab_gather_cpu"},
  SPROJ_CUDA_IMPL(sproj_slab_gather_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &slab_gather_model,
  .name = "slab_gather",
};

struct starpu_codelet sproj_slab_update_cl = {
  .cpu_funcs = {slab_update_cpu},
  .cpu_funcs_name = {"slab_update_cpu"},
  SPROJ_CUDA_IMPL(sproj_slab_update_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &slab_update_model,
  .name = "slab_update",
};

struct starpu_codelet sproj_slab_halve_cl = {
  .cpu_funcs = {slab_halve_cpu},
  .cpu_funcs_name = {"slab_halve_cpu"},
  SPROJ_CUDA_IMPL(sproj_slab_halve_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &slab_halve_model,
  .name = "slab_halve",
};
