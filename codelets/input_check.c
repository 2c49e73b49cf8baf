/* SPDX-License-Identifier: Apache-2.0 */
/* input_check.c: the scan of one per-LOR vector on the host, and the check codelet's CPU function and struct. */
#include "config.h"
#include "codelets.h"
#include "input_check.h"

/* Elements a block of the host scan holds: a whole block is first tested with comparisons alone over a fixed count
 * (which the compiler turns into vector instructions), and walked element by element only when some element in it
 * is not fine, or when it is the last, shorter one. */
#define SCAN_BLOCK 256

/* Elements first .. end-1 one by one; returns 1 at a fault 1 (nothing after it matters: it is reported first). */
static inline int scan_elements(const struct sproj_input_arg *arg, int kind, const void *data, uint64_t first,
                                uint64_t end, struct sproj_input_result *result)
{
  for (uint64_t i = first; i < end; i++) {
    float v;
    int fault = sproj_input_fault(arg, kind, data, i, &v);
    if (!fault) {
      if (sproj_input_is_bins(kind)) {
        result->max_bin = (int32_t)v > result->max_bin ? (int32_t)v : result->max_bin;
        result->min_bin = (int32_t)v < result->min_bin ? (int32_t)v : result->min_bin;
      }
      continue;
    }
    if (result->first[fault - 1] == SPROJ_INPUT_NONE) {
      result->first[fault - 1] = i;
      result->value[fault - 1] = v;
    }
    if (fault == 1)
      return 1;
  }
  return 0;
}

/* The scan, inlined once per kind (a constant there), so that the kind is not tested per element. */
static inline __attribute__((always_inline)) void scan_kind(const struct sproj_input_arg *arg, int kind,
                                                            const void *data, uint64_t n,
                                                            struct sproj_input_result *result)
{
  uint64_t b = 0;
  for (; n - b >= SCAN_BLOCK; b += SCAN_BLOCK) {
    int all = 1;
    int16_t max = (int16_t)result->max_bin, min = (int16_t)result->min_bin;
    for (int j = 0; j < SCAN_BLOCK; j++) {
      all &= sproj_input_fine(arg, kind, data, b + (uint64_t)j);
      if (sproj_input_is_bins(kind)) {
        int16_t x = ((const int16_t *)data)[b + (uint64_t)j];
        max = x > max ? x : max;
        min = x < min ? x : min;
      }
    }
    if (all) {
      result->max_bin = max;
      result->min_bin = min;
      continue;
    }
    if (scan_elements(arg, kind, data, b, b + SCAN_BLOCK, result))
      return;
  }
  scan_elements(arg, kind, data, b, n, result);
}

void sproj_input_scan(const struct sproj_input_arg *arg, int kind, const void *data, uint64_t n,
                      struct sproj_input_result *result)
{
  result->first[0] = result->first[1] = SPROJ_INPUT_NONE;
  result->value[0] = result->value[1] = 0.0f;
  result->max_bin = result->min_bin = 0;
  switch (kind) {
  case SPROJ_INPUT_COORDS:
    scan_kind(arg, SPROJ_INPUT_COORDS, data, n, result);
    break;
  case SPROJ_INPUT_BINS:
    scan_kind(arg, SPROJ_INPUT_BINS, data, n, result);
    break;
  case SPROJ_INPUT_ANY_BINS:
    scan_kind(arg, SPROJ_INPUT_ANY_BINS, data, n, result);
    break;
  case SPROJ_INPUT_SIGMA:
    scan_kind(arg, SPROJ_INPUT_SIGMA, data, n, result);
    break;
  default:
    scan_kind(arg, SPROJ_INPUT_OFFSET, data, n, result);
    break;
  }
}

/* Buffers: the results (one struct sproj_input_result per vector, W), then the vectors (R). */
static void input_check_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_input_arg *arg = cl_arg;
  struct sproj_input_result *results = (struct sproj_input_result *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (int k = 0; k < arg->nvectors; k++)
    sproj_input_scan(arg, arg->kind[k], (const void *)STARPU_VECTOR_GET_PTR(buffers[1 + k]),
                     sproj_input_elements(arg->kind[k], STARPU_VECTOR_GET_NX(buffers[1 + k])), &results[k]);
}

struct starpu_codelet sproj_input_check_cl = {
  .cpu_funcs = {input_check_cpu},
  .cpu_funcs_name = {"input_check_cpu"},
  SPROJ_CUDA_IMPL(sproj_input_check_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .name = "input_check",
};
