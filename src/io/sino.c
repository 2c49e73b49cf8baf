/* SPDX-License-Identifier: Apache-2.0 */
/* sino.c: sinograms as raw data (float32, named axes) with a "key = value" text header. */
#include "config.h"
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "starproj_io.h"
#include "../core/shared.h"
#include "raw.h"

int sproj_raw_write_sino(const char *base, const struct sproj_sino_info *info, const float *data)
{
  if (!base || !info || !data)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base, info and data must not be NULL");
  if (info->num_dims < 1 || info->num_dims > SPROJ_RAW_MAX_DIMS)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "num_dims = %d is not in 1 .. %d", info->num_dims, SPROJ_RAW_MAX_DIMS);
  for (int k = 0; k < info->num_dims; k++) {
    if (info->shape[k] <= 0)
      return SPROJ_FAIL(SPROJ_ERR_DIMS, "shape[%d] = %" PRId64 " must be > 0", k, info->shape[k]);
    if (!sproj_raw_valid_name(info->axes[k], SPROJ_RAW_NAME_LEN, 0))
      return SPROJ_FAIL(SPROJ_ERR_INVALID, "axes[%d] is empty, unterminated or has characters other than "
                        "letters, digits and _-.+", k);
  }
  if (!sproj_raw_valid_name(info->scanner, sizeof info->scanner, 1))
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "scanner is unterminated or has characters other than letters, digits "
                      "and _-.+");
  int ret = sproj_raw_check_tof_fields(__func__, info->num_tof_bins, info->tof_bin_width);
  if (ret)
    return ret;
  int64_t count = sproj_raw_shape_count(info->num_dims, info->shape, sizeof(float));
  if (count < 0)
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "the shape has more than 2^62 bytes");

  char *hdr, *raw;
  if ((ret = sproj_raw_paths(__func__, base, &hdr, &raw)))
    return ret;
  struct sproj_raw_text t = {0};
  sproj_raw_header_start(&t, "sinogram", "float32", info->num_dims, info->shape);
  sproj_raw_text_add(&t, "axes =");
  for (int k = 0; k < info->num_dims; k++)
    sproj_raw_text_add(&t, " %s", info->axes[k]);
  sproj_raw_text_add(&t, "\n");
  sproj_raw_header_tof(&t, info->scanner, info->num_tof_bins, info->tof_bin_width);
  if (t.failed)
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  else
    ret = sproj_raw_write(__func__, hdr, raw, &t, NULL, data, count, sizeof(float));
  free(t.s);
  free(hdr);
  free(raw);
  return ret;
}

/* A sinogram's header, read and checked: its description in *info and the bytes of its data in *bytes (the
 * caller frees h, also after a failure). */
static int sino_header(const char *func, const char *base, struct sproj_raw_header *h, struct sproj_sino_info *info,
                       size_t *bytes, int *swap)
{
  struct sproj_sino_info in;
  memset(&in, 0, sizeof in);
  int ret = sproj_raw_header_read(func, base, "sinogram", "float32", h, swap);
  if (!ret)
    ret = sproj_raw_header_shape(func, h, 1, &in.num_dims, in.shape);
  const char *axes = NULL;
  if (!ret)
    ret = sproj_raw_header_need(func, h, "axes", &axes);
  if (!ret) {
    char copy[SPROJ_RAW_MAX_DIMS * (SPROJ_RAW_NAME_LEN + 1) + 64];
    char *words[SPROJ_RAW_MAX_DIMS + 1];
    int n = -1;
    if (strlen(axes) < sizeof copy) {
      strcpy(copy, axes);
      n = sproj_raw_split_words(copy, words, SPROJ_RAW_MAX_DIMS);
    }
    if (n != in.num_dims)
      ret = sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': axes '%s' do not name the %d axes of the shape", h->hdr_path,
                       axes, in.num_dims);
    for (int k = 0; !ret && k < n; k++) {
      if (strlen(words[k]) >= SPROJ_RAW_NAME_LEN || !sproj_raw_valid_name(words[k], SPROJ_RAW_NAME_LEN, 0))
        ret = sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': axis name '%s' is too long or has odd characters",
                         h->hdr_path, words[k]);
      else
        strcpy(in.axes[k], words[k]);
    }
  }
  if (!ret)
    ret = sproj_raw_header_scanner_tof(func, h, in.scanner, sizeof in.scanner, &in.num_tof_bins, &in.tof_bin_width);
  int64_t count = 0;
  if (!ret && ((count = sproj_raw_shape_count(in.num_dims, in.shape, sizeof(float))) < 0 ||
               (uint64_t)count > SIZE_MAX / sizeof(float)))
    ret = sproj_fail(SPROJ_ERR_OVERFLOW, func, "'%s': the shape is too large", h->hdr_path);
  if (!ret) {
    *info = in;
    *bytes = (size_t)count * sizeof(float);
  }
  return ret;
}

int sproj_raw_read_sino_info(const char *base, struct sproj_sino_info *info)
{
  if (!base || !info)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base and info must not be NULL");
  struct sproj_raw_header h;
  struct sproj_sino_info in;
  size_t bytes = 0;
  int swap = 0, ret = sino_header(__func__, base, &h, &in, &bytes, &swap);
  if (!ret)
    ret = sproj_raw_check_data(__func__, &h, bytes);
  sproj_raw_header_free(&h);
  if (!ret)
    *info = in;
  return ret;
}

int sproj_raw_read_sino(const char *base, struct sproj_sino_info *info, float **data)
{
  if (!base || !info || !data)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base, info and data must not be NULL");
  struct sproj_raw_header h;
  struct sproj_sino_info in;
  size_t bytes = 0;
  int swap = 0, ret = sino_header(__func__, base, &h, &in, &bytes, &swap);
  int64_t count = (int64_t)(bytes / sizeof(float));
  void *buf = NULL;
  if (!ret)
    ret = sproj_raw_read_data(__func__, &h, bytes, &buf);
  sproj_raw_header_free(&h);
  if (ret)
    return ret;
  if (swap)
    sproj_raw_swap4(buf, count);
  *info = in;
  *data = buf;
  return SPROJ_OK;
}
