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
static inline int scan_elements(const struct sproj_input_arg *a, int kind, const void *data, uint64_t first,
                                uint64_t end, struct sproj_input_result *r)
{
  for (uint64_t i = first; i < end; i++) {
    float v;
    int f = sproj_input_fault(a, kind, data, i, &v);
    if (!f) {
      if (sproj_input_is_bins(kind)) {
        r->max_bin = (int32_t)v > r->max_bin ? (int32_t)v : r->max_bin;
        r->min_bin = (int32_t)v < r->min_bin ? (int32_t)v : r->min_bin;
      }
      continue;
    }
    if (r->first[f - 1] == SPROJ_INPUT_NONE) {
      r->first[f - 1] = i;
      r->value[f - 1] = v;
    }
    if (f == 1)
      return 1;
  }
  return 0;
}

/* The scan, inlined once per kind (a constant there), so that the kind is not tested per element. */
static inline __attribute__((always_inline)) void scan_kind(const struct sproj_input_arg *a, int kind,
                                                            const void *data, uint64_t n,
                                                            struct sproj_input_result *r)
{
  uint64_t b = 0;
  for (; n - b >= SCAN_BLOCK; b += SCAN_BLOCK) {
    int all = 1;
    int16_t max = (int16_t)r->max_bin, min = (int16_t)r->min_bin;
    for (int j = 0; j < SCAN_BLOCK; j++) {
      all &= sproj_input_fine(a, kind, data, b + (uint64_t)j);
      if (sproj_input_is_bins(kind)) {
        int16_t x = ((const int16_t *)data)[b + (uint64_t)j];
        max = x > max ? x : max;
        min = x < min ? x : min;
      }
    }
    if (all) {
      r->max_bin = max;
      r->min_bin = min;
      continue;
    }
    if (scan_elements(a, kind, data, b, b + SCAN_BLOCK, r))
      return;
  }
  scan_elements(a, kind, data, b, n, r);
}

void sproj_input_scan(const struct sproj_input_arg *a, int kind, const void *data, uint64_t n,
                      struct sproj_input_result *r)
{
  r->first[0] = r->first[1] = SPROJ_INPUT_NONE;
  r->value[0] = r->value[1] = 0.0f;
  r->max_bin = r->min_bin = 0;
  switch (kind) {
  case SPROJ_INPUT_COORDS:
    scan_kind(a, SPROJ_INPUT_COORDS, data, n, r);
    break;
  case SPROJ_INPUT_BINS:
    scan_kind(a, SPROJ_INPUT_BINS, data, n, r);
    break;
  case SPROJ_INPUT_ANY_BINS:
    scan_kind(a, SPROJ_INPUT_ANY_BINS, data, n, r);
    break;
  case SPROJ_INPUT_SIGMA:
    scan_kind(a, SPROJ_INPUT_SIGMA, data, n, r);
    break;
  default:
    scan_kind(a, SPROJ_INPUT_OFFSET, data, n, r);
    break;
  }
}

/* Buffers: the results (one struct sproj_input_result per vector, W), then the vectors (R). */
static void input_check_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_input_arg *arg = cl_arg;
  struct sproj_input_result *res = (struct sproj_input_result *)STARPU_VECTOR_GET_PTR(buffers[0]);
  for (int k = 0; k < arg->nvectors; k++)
    sproj_input_scan(arg, arg->kind[k], (const void *)STARPU_VECTOR_GET_PTR(buffers[1 + k]),
                     sproj_input_elements(arg->kind[k], STARPU_VECTOR_GET_NX(buffers[1 + k])), &res[k]);
}

struct starpu_codelet sproj_input_check_cl = {
  .cpu_funcs = {input_check_cpu},
  .cpu_funcs_name = {"input_check_cpu"},
  SPROJ_CUDA_IMPL(sproj_input_check_cuda)
  .nbuffers = STARPU_VARIABLE_NBUFFERS,
  .name = "input_check",
};
