/* joseph3d_back.c: CPU codelet, codelet struct and performance model of the non-TOF back projection. */
#include "config.h"
#include "codelets.h"
#include "joseph3d_back.h"

static void joseph3d_back_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = cl_arg;
  /* the image buffer is this worker's private reduction buffer: no other thread writes it */
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  int64_t total = 0;

  for (int p = 0; p < arg->npieces; p++) {
    struct sproj_piece pc = sproj_piece_get(buffers, p);
    for (uint32_t i = 0; i < pc.n; i++)
      joseph3d_back_lor(img, &arg->geom, pc.xs + 3 * (size_t)i, pc.xe + 3 * (size_t)i, pc.values[i]);
    total += pc.n;
  }
  sproj_stats_count(total);
}

static struct starpu_perfmodel joseph3d_back_model = {
  .type = STARPU_NL_REGRESSION_BASED,
  .symbol = "starproj_joseph3d_back",
  .size_base = sproj_proj_task_size,
};

struct starpu_codelet sproj_joseph3d_back_cl = {
  .cpu_funcs = {joseph3d_back_cpu},
  .cpu_funcs_name = {"joseph3d_back_cpu"},
#ifdef SPROJ_USE_CUDA
  .cuda_funcs = {sproj_joseph3d_back_cuda},
  .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &joseph3d_back_model,
  .name = "joseph3d_back",
};
