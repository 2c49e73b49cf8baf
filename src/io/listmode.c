/* SPDX-License-Identifier: Apache-2.0 */
/* listmode.c: listmode events as raw data (int32 pairs: LOR and TOF bin) with a "key = value" text header. */
#include "config.h"
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "starproj_io.h"
#include "../core/shared.h"
#include "raw.h"

struct lm_src {
  const int32_t *lor;
  const int16_t *tof_bin;
};

static int lm_fill(const void *ctx, int64_t first, int64_t count, void *buf)
{
  const struct lm_src *src = ctx;
  int32_t *out = buf;
  for (int64_t e = 0; e < count; e++) {
    out[2 * e] = src->lor[first + e];
    out[2 * e + 1] = src->tof_bin ? src->tof_bin[first + e] : 0;
  }
  return 0;
}

static int check_lm_info(const char *func, const struct sproj_lm_info *info)
{
  if (info->num_events < 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num_events = %" PRId64 " is negative", info->num_events);
  if (info->num_lors < 1 || info->num_lors > INT32_MAX)
    return sproj_fail(SPROJ_ERR_RANGE, func, "num_lors = %" PRId64 " is not in 1 .. 2^31-1", info->num_lors);
  if (!sproj_raw_valid_name(info->scanner, sizeof info->scanner, 1))
    return sproj_fail(SPROJ_ERR_INVALID, func, "scanner is unterminated or has characters other than letters, "
                      "digits and _-.+");
  return sproj_raw_check_tof_fields(func, info->num_tof_bins, info->tof_bin_width);
}

int sproj_raw_write_listmode(const char *base, const struct sproj_lm_info *info, const int32_t *lor,
                             const int16_t *tof_bin)
{
  if (!base || !info)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base and info must not be NULL");
  int ret = check_lm_info(__func__, info);
  if (ret)
    return ret;
  if (!lor && info->num_events > 0)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "lor must not be NULL");
  if (info->num_events > (INT64_C(1) << 59))
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "%" PRId64 " events are too many", info->num_events);
  int nbins = info->num_tof_bins > 1 ? info->num_tof_bins : 1;
  for (int64_t e = 0; e < info->num_events; e++) {
    if (lor[e] < 0 || lor[e] >= info->num_lors)
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "event %" PRId64 ": LOR %" PRId32 " is not in 0 .. %" PRId64, e, lor[e],
                        info->num_lors - 1);
    if (tof_bin && (tof_bin[e] < 0 || tof_bin[e] >= nbins))
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "event %" PRId64 ": TOF bin %d is not in 0 .. %d", e, tof_bin[e],
                        nbins - 1);
  }

  char *hdr, *raw;
  if ((ret = sproj_raw_paths(__func__, base, &hdr, &raw)))
    return ret;
  int64_t shape[2] = {info->num_events, 2};
  struct sproj_raw_text t = {0};
  sproj_raw_header_start(&t, "listmode", "int32", 2, shape);
  sproj_raw_text_add(&t, "axes = event field\nfields = lor tof_bin\nnum_lors = %" PRId64 "\n", info->num_lors);
  sproj_raw_header_tof(&t, info->scanner, info->num_tof_bins, info->tof_bin_width);
  struct lm_src src = {lor, tof_bin};
  if (t.failed)
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  else
    ret = sproj_raw_write(__func__, hdr, raw, &t, lm_fill, &src, info->num_events, 2 * sizeof(int32_t));
  free(t.s);
  free(hdr);
  free(raw);
  return ret;
}

/* A listmode header, read and checked: its description in *info (the caller frees h, also after a failure). */
static int lm_header(const char *func, const char *base, struct sproj_raw_header *h, struct sproj_lm_info *info,
                     int *swap)
{
  struct sproj_lm_info in;
  memset(&in, 0, sizeof in);
  int ndims = 0;
  int64_t shape[SPROJ_RAW_MAX_DIMS];
  int ret = sproj_raw_header_read(func, base, "listmode", "int32", h, swap);
  if (!ret)
    ret = sproj_raw_header_shape(func, h, 0, &ndims, shape);
  if (!ret && (ndims != 2 || shape[1] != 2))
    ret = sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': listmode shape must be '<events> 2'", h->hdr_path);
  const char *v = NULL;
  if (!ret && (ret = sproj_raw_header_need(func, h, "fields", &v)) == 0 && strcmp(v, "lor tof_bin") != 0)
    ret = sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': fields '%s' are not 'lor tof_bin'", h->hdr_path, v);
  if (!ret)
    ret = sproj_raw_header_int(func, h, "num_lors", 0, 1, INT32_MAX, &in.num_lors);
  if (!ret)
    ret = sproj_raw_header_scanner_tof(func, h, in.scanner, sizeof in.scanner, &in.num_tof_bins, &in.tof_bin_width);
  if (!ret && (shape[0] > (INT64_C(1) << 59) || (uint64_t)shape[0] > SIZE_MAX / 8))
    ret = sproj_fail(SPROJ_ERR_OVERFLOW, func, "'%s': %" PRId64 " events are too many", h->hdr_path, shape[0]);
  if (!ret) {
    in.num_events = shape[0];
    *info = in;
  }
  return ret;
}

int sproj_raw_read_listmode_info(const char *base, struct sproj_lm_info *info)
{
  if (!base || !info)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base and info must not be NULL");
  struct sproj_raw_header h;
  struct sproj_lm_info in;
  int swap = 0, ret = lm_header(__func__, base, &h, &in, &swap);
  if (!ret)
    ret = sproj_raw_check_data(__func__, &h, (size_t)in.num_events * 2 * sizeof(int32_t));
  sproj_raw_header_free(&h);
  if (!ret)
    *info = in;
  return ret;
}

int sproj_raw_read_listmode(const char *base, struct sproj_lm_info *info, int32_t **lor, int16_t **tof_bin)
{
  if (!base || !info || !lor)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base, info and lor must not be NULL");
  struct sproj_raw_header h;
  struct sproj_lm_info in;
  memset(&in, 0, sizeof in);
  int swap = 0, ret = lm_header(__func__, base, &h, &in, &swap);
  int32_t *buf = NULL;
  if (!ret)
    ret = sproj_raw_read_data(__func__, &h, (size_t)in.num_events * 2 * sizeof(int32_t), (void **)&buf);
  int32_t *lors = NULL;
  int16_t *bins_out = NULL;
  if (!ret && in.num_events > 0) {
    if (swap)
      sproj_raw_swap4(buf, 2 * in.num_events);
    lors = malloc((size_t)in.num_events * sizeof *lors);
    bins_out = tof_bin ? malloc((size_t)in.num_events * sizeof *bins_out) : NULL;
    if (!lors || (tof_bin && !bins_out))
      ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for %" PRId64 " events", in.num_events);
  }
  int nbins = in.num_tof_bins > 1 ? in.num_tof_bins : 1;
  for (int64_t e = 0; !ret && e < in.num_events; e++) {
    int32_t l = buf[2 * e], b = buf[2 * e + 1];
    if (l < 0 || l >= in.num_lors || b < 0 || b >= nbins)
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': event %" PRId64 " (LOR %" PRId32 ", TOF bin %" PRId32
                       ") is outside 0 .. %" PRId64 " / 0 .. %d", h.raw_path, e, l, b, in.num_lors - 1, nbins - 1);
    lors[e] = l;
    if (bins_out)
      bins_out[e] = (int16_t)b;
  }
  sproj_raw_header_free(&h);
  free(buf);
  if (ret) {
    free(lors);
    free(bins_out);
    return ret;
  }
  *info = in;
  *lor = lors;
  if (tof_bin)
    *tof_bin = bins_out;
  return SPROJ_OK;
}
