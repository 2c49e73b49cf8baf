/* SPDX-License-Identifier: Apache-2.0 */
/* input_check.h: the checks of per-LOR inputs one element at a time (host + CUDA): LOR coordinates, listmode TOF
 * bins, per-LOR TOF sigma and centre offset. The registrations check host arrays with sproj_input_scan
 * (input_check.c) in the calling thread, and vectors that live on a GPU with a check task there (input_check.cu),
 * which reads them where they are and sends back a few bytes per vector; both take each element's verdict from the
 * functions below, so that both name the same element. */
#ifndef SPROJ_INPUT_CHECK_H
#define SPROJ_INPUT_CHECK_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include "host_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a vector holds: 3 floats per LOR (an endpoint), an int16 TOF bin per event, a float sigma or centre offset
 * per LOR. TOF bins come in two kinds: starproj's (a negative bin is a fault) and libparallelproj's (any int16 bin
 * is fine: its listmode places bin b at b bin widths from bin 0, whatever b). */
enum sproj_input_kind {
  SPROJ_INPUT_COORDS = 0,
  SPROJ_INPUT_BINS = 1,
  SPROJ_INPUT_SIGMA = 2,
  SPROJ_INPUT_OFFSET = 3,
  SPROJ_INPUT_ANY_BINS = 4
};

/* Most vectors one check task scans. */
#define SPROJ_INPUT_MAX_VECTORS 4
/* No element has the fault. */
#define SPROJ_INPUT_NONE 0xffffffffffffffffull

/* cl_arg of a check task: the kind of each vector (its buffers 1 .. nvectors) and the limits the elements are held
 * to (starproj.h's, passed in so that the codelets need not know the public header). */
struct sproj_input_arg {
  int nvectors;
  int kind[SPROJ_INPUT_MAX_VECTORS];
  float max_coordinate;        /* coordinates: |v| beyond this is out of range */
  float bin_width, num_sigmas; /* sigma and offset: the TOF parameters they belong to */
  double max_ratio;            /* sigma and offset: the bound on sigma / bin_width and |offset| / bin_width */
};

/* What a scan found in one vector. A kind has no, one or two faults (below); first[f - 1] is the first element (a
 * float of a coordinate vector, else a LOR or event) with fault f, SPROJ_INPUT_NONE when none has it, and
 * value[f - 1] that element's value (a bin as a float). min_bin .. max_bin: a range that holds 0 and every bin of a
 * bin vector with no fault (the smallest bin when below 0, the largest when above), else meaningless. A scan may
 * stop at the first element with fault 1, which is reported before any fault 2: first[1] is exact only when first[0]
 * is SPROJ_INPUT_NONE. */
#define SPROJ_INPUT_FAULTS 2 /* faults a kind has at most */
struct sproj_input_result {
  unsigned long long first[SPROJ_INPUT_FAULTS];
  float value[SPROJ_INPUT_FAULTS];
  int32_t max_bin;
  int32_t min_bin;
};

/* A vector of TOF bins, of either kind. */
SPROJ_HD int sproj_input_is_bins(int kind)
{
  return kind == SPROJ_INPUT_BINS || kind == SPROJ_INPUT_ANY_BINS;
}

/* Finite, written so that no compiler option that assumes finite math can drop the test. */
SPROJ_HD int sproj_input_finite(float v)
{
  return fabsf(v) <= FLT_MAX;
}

/* A coordinate is fine when finite and at most max in magnitude: one comparison, which NaN and infinities fail. */
SPROJ_HD int sproj_coordinate_fine(float v, float max)
{
  return fabsf(v) <= max;
}

/* A coordinate: 1 not finite, 2 beyond max in magnitude, 0 fine. */
SPROJ_HD int sproj_coordinate_fault(float v, float max)
{
  if (sproj_coordinate_fine(v, max))
    return 0;
  return sproj_input_finite(v) ? 2 : 1;
}

/* A TOF sigma (one for all LORs or one LOR's) against the bin width and num_sigmas: 1 not finite or not > 0,
 * 2 sigma / bin_width outside [1 / max_ratio, max_ratio], 3 num_sigmas * sigma / bin_width above max_ratio, 0 fine.
 * In double: the quotients of extreme floats overflow float. */
SPROJ_HD int sproj_tof_sigma_fault(float sigma, float bin_width, float num_sigmas, double max_ratio)
{
  if (!sproj_input_finite(sigma) || !(sigma > 0.0f))
    return 1;
  double ratio = (double)sigma / (double)bin_width;
  if (ratio < 1.0 / max_ratio || ratio > max_ratio)
    return 2;
  if ((double)num_sigmas * ratio > max_ratio)
    return 3;
  return 0;
}

/* A TOF centre offset is fine when at most max_ratio bin widths in magnitude (NaN and infinities are not). */
SPROJ_HD int sproj_tof_offset_fine(float offset, float bin_width, double max_ratio)
{
  return fabs((double)offset) <= max_ratio * (double)bin_width;
}

/* A TOF centre offset: 1 not finite, 2 more than max_ratio bin widths in magnitude, 0 fine. */
SPROJ_HD int sproj_tof_offset_fault(float offset, float bin_width, double max_ratio)
{
  if (sproj_tof_offset_fine(offset, bin_width, max_ratio))
    return 0;
  return sproj_input_finite(offset) ? 2 : 1;
}

/* Element i of a vector of kind `kind`: its fault (0: none; a sigma's three are one fault here) and its value. */
SPROJ_HD int sproj_input_fault(const struct sproj_input_arg *arg, int kind, const void *data, uint64_t i, float *value)
{
  if (sproj_input_is_bins(kind)) {
    int16_t b = ((const int16_t *)data)[i];
    *value = (float)b;
    return kind == SPROJ_INPUT_BINS && b < 0;
  }
  float v = ((const float *)data)[i];
  *value = v;
  if (kind == SPROJ_INPUT_COORDS)
    return sproj_coordinate_fault(v, arg->max_coordinate);
  if (kind == SPROJ_INPUT_SIGMA)
    return sproj_tof_sigma_fault(v, arg->bin_width, arg->num_sigmas, arg->max_ratio) != 0;
  return sproj_tof_offset_fault(v, arg->bin_width, arg->max_ratio);
}

/* Whether element i is fine, as sproj_input_fault says, in comparisons without branches (a whole block of the host
 * scan is tested with it first). */
SPROJ_HD int sproj_input_fine(const struct sproj_input_arg *arg, int kind, const void *data, uint64_t i)
{
  if (kind == SPROJ_INPUT_BINS)
    return ((const int16_t *)data)[i] >= 0;
  if (kind == SPROJ_INPUT_ANY_BINS)
    return 1;
  float v = ((const float *)data)[i];
  if (kind == SPROJ_INPUT_COORDS)
    return sproj_coordinate_fine(v, arg->max_coordinate);
  if (kind == SPROJ_INPUT_SIGMA)
    return sproj_tof_sigma_fault(v, arg->bin_width, arg->num_sigmas, arg->max_ratio) == 0;
  return sproj_tof_offset_fine(v, arg->bin_width, arg->max_ratio);
}

/* Elements a scan walks in a vector of nx StarPU elements: 3 floats per LOR of a coordinate vector. */
SPROJ_HD uint64_t sproj_input_elements(int kind, uint64_t nx)
{
  return kind == SPROJ_INPUT_COORDS ? 3 * nx : nx;
}

/* The scan on the host: the first element of each fault of the n elements at data, stopping at the first fault 1
 * (the CPU codelet and the registrations' checks of host arrays). */
void sproj_input_scan(const struct sproj_input_arg *arg, int kind, const void *data, uint64_t n,
                      struct sproj_input_result *result);

#ifdef __cplusplus
}
#endif

#endif
