/* image_reduce.c: reduction methods of image handles (zero a buffer, add one buffer into another), CPU side. */
#include "config.h"
#include <string.h>
#include "codelets.h"

static void image_zero_cpu(void *buffers[], void *cl_arg)
{
  (void)cl_arg;
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  memset(img, 0, (size_t)STARPU_VECTOR_GET_NX(buffers[0]) * sizeof(float));
}

static void image_add_cpu(void *buffers[], void *cl_arg)
{
  (void)cl_arg;
  float *dst = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const float *src = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (uint32_t i = 0; i < n; i++)
    dst[i] += src[i];
}

static struct starpu_perfmodel image_zero_model = {
  .type = STARPU_HISTORY_BASED,
  .symbol = "starproj_image_zero",
};

static struct starpu_perfmodel image_add_model = {
  .type = STARPU_HISTORY_BASED,
  .symbol = "starproj_image_add",
};

struct starpu_codelet sproj_image_zero_cl = {
  .cpu_funcs = {image_zero_cpu},
  .cpu_funcs_name = {"image_zero_cpu"},
#ifdef SPROJ_USE_CUDA
  .cuda_funcs = {sproj_image_zero_cuda},
  .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
  .nbuffers = 1,
  .modes = {STARPU_W},
  .model = &image_zero_model,
  .name = "image_zero",
};

struct starpu_codelet sproj_image_add_cl = {
  .cpu_funcs = {image_add_cpu},
  .cpu_funcs_name = {"image_add_cpu"},
#ifdef SPROJ_USE_CUDA
  .cuda_funcs = {sproj_image_add_cuda},
  .cuda_flags = {STARPU_CUDA_ASYNC},
#endif
  .nbuffers = 2,
  .modes = {STARPU_RW | STARPU_COMMUTE, STARPU_R},
  .model = &image_add_model,
  .name = "image_add",
};
