/* SPDX-License-Identifier: Apache-2.0 */
/* scanner_lors.c: CPU codelet, codelet struct and performance model writing the endpoints of a scanner's sinogram
 * LORs: a range of LOR indices, or the LORs of a list of indices (listmode events). */
#include "config.h"
#include "codelets.h"
#include "scanner_lors.h"

static void scanner_lors_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_scanner_lors_arg *arg = cl_arg;
  const struct sproj_scanner_table *scanner = (const struct sproj_scanner_table *)STARPU_VECTOR_GET_PTR(buffers[0]);
  float *xs = (float *)STARPU_VECTOR_GET_PTR(buffers[1]), *xe = (float *)STARPU_VECTOR_GET_PTR(buffers[2]);
  const int32_t *lor = arg->indexed ? (const int32_t *)STARPU_VECTOR_GET_PTR(buffers[3]) : NULL;
  uint32_t n = STARPU_VECTOR_GET_NX(buffers[1]);
  for (uint32_t i = 0; i < n; i++)
    scanner_lor_endpoints(scanner, lor ? lor[i] : arg->first + i, xs + 3 * (size_t)i, xe + 3 * (size_t)i);
}

static struct starpu_perfmodel scanner_lors_model = {
  .type = STARPU_HISTORY_BASED,
  .symbol = "starproj_scanner_lors",
};

struct starpu_codelet sproj_scanner_lors_cl = {
  .cpu_funcs = {scanner_lors_cpu},
  .cpu_funcs_name = {"scanner_lors_cpu"},
  SPROJ_CUDA_IMPL(sproj_scanner_lors_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .model = &scanner_lors_model,
  .name = "scanner_lors",
};
