/* SPDX-License-Identifier: Apache-2.0 */
/* png.c: greyscale PNG previews of images (three central slices) and of sinogram views, through libpng. */
#include "config.h"
#include <inttypes.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include "starproj_io.h"
#include "../core/shared.h"
#include "files.h"

#define PANEL_TARGET 256 /* pixels over the largest extent of an image */
#define PANEL_GAP 4
#define SINO_MAX_SIDE 2048
#define SINO_MAX_SCALE 8

/* ---- windowing ------------------------------------------------------------------------------------------- */
static int cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The display window of the finite values in v, as the header describes for sproj_png_auto_window: v is the
 * caller's scratch, reordered here (the writers' samples of what they show). */
static void auto_window(float *v, size_t n, float win[2])
{
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i]))
      v[m++] = v[i];
  win[0] = 0.0f;
  win[1] = 1.0f;
  if (m == 0)
    return;
  qsort(v, m, sizeof *v, cmp_float);
  float hi = v[(size_t)floor(0.995 * (double)(m - 1))];
  if (!(hi > 0.0f))
    hi = v[m - 1];
  if (hi > 0.0f) {
    win[1] = hi;
  } else if (v[m - 1] > v[0]) {
    win[0] = v[0];
    win[1] = v[m - 1];
  } else {
    win[0] = v[0] - 1.0f; /* one value everywhere: mid-grey would say nothing either; show it white */
    win[1] = v[0];
  }
}

int sproj_png_auto_window(const float *v, size_t n, float window[2])
{
  if (!window || (!v && n > 0))
    return SPROJ_FAIL(SPROJ_ERR_NULL, "window must not be NULL, nor v when n > 0");
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    m += isfinite(v[i]) != 0;
  /* the finite values only: the copy is at most as large as v, so its size cannot overflow */
  float *finite = malloc(m ? m * sizeof *finite : 1);
  if (!finite)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for %zu values", m);
  for (size_t i = 0, k = 0; i < n; i++)
    if (isfinite(v[i]))
      finite[k++] = v[i];
  auto_window(finite, m, window);
  free(finite);
  return SPROJ_OK;
}

static int check_window(const char *func, const float window[2])
{
  if (window && (!isfinite(window[0]) || !isfinite(window[1]) || !(window[0] < window[1])))
    return sproj_fail(SPROJ_ERR_INVALID, func, "window {%g, %g} is not lo < hi, both finite", window[0], window[1]);
  return SPROJ_OK;
}

static unsigned char grey(float v, const float win[2])
{
  if (!(v > win[0])) /* NaN too */
    return 0;
  if (v >= win[1])
    return 255;
  double g = 255.0 * ((double)v - win[0]) / ((double)win[1] - win[0]);
  return (unsigned char)lround(g);
}

/* ---- writing --------------------------------------------------------------------------------------------- */
struct png_err {
  jmp_buf jmp;
  char msg[200];
};

static void on_png_error(png_structp png, png_const_charp msg)
{
  struct png_err *e = png_get_error_ptr(png);
  snprintf(e->msg, sizeof e->msg, "%s", msg);
  longjmp(e->jmp, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
  (void)png;
  (void)msg;
}

/* Writes 8-bit greyscale rows (width bytes each, one block) atomically. */
static int write_grey_png(const char *func, const char *path, const unsigned char *pixels, uint32_t width,
                          uint32_t height)
{
  png_bytep *rows = malloc(height * sizeof *rows);
  if (!rows)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  for (uint32_t r = 0; r < height; r++)
    rows[r] = (png_bytep)pixels + (size_t)r * width;
  struct sproj_outfile out;
  int ret = sproj_out_open(func, path, &out);
  if (ret) {
    free(rows);
    return ret;
  }
  struct png_err err;
  err.msg[0] = '\0';
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!png || !info) {
    png_destroy_write_struct(&png, &info);
    sproj_out_discard(&out);
    free(rows);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "libpng could not start");
  }
  if (setjmp(err.jmp)) {
    png_destroy_write_struct(&png, &info);
    sproj_out_discard(&out);
    free(rows);
    return sproj_fail(SPROJ_ERR_IO, func, "libpng: %s (writing '%s')", err.msg, path);
  }
  png_init_io(png, out.fp);
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_rows(png, info, rows);
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
  png_destroy_write_struct(&png, &info);
  free(rows);
  ret = sproj_out_close(func, &out);
  if (!ret)
    ret = sproj_out_rename(func, &out);
  sproj_out_discard(&out);
  return ret;
}

/* Nearest-neighbour source index of output pixel c of size out_n over n source samples. */
static int64_t nearest(int64_t c, int64_t out_n, int64_t n)
{
  int64_t i = (int64_t)(((double)c + 0.5) * (double)n / (double)out_n);
  return i < n ? i : n - 1;
}

/* ---- image slices ---------------------------------------------------------------------------------------- */
struct panel {
  int row_axis, col_axis, fixed_axis;
  uint32_t width, height, x0;
};

static int write_image_slices(const char *func, const char *path, const float *data, const int dims[3],
                              const float voxel_size[3], const int slices[3], const float window[2])
{
  if (!path || !data || !dims || !voxel_size)
    return sproj_fail(SPROJ_ERR_NULL, func, "path, data, dims and voxel_size must not be NULL");
  /* the image must be addressable: the voxel indices below would overflow otherwise */
  int ret = sproj_check_geometry(func, dims, voxel_size, NULL, SPROJ_HOST_MAX_VOXELS, NULL);
  if (ret)
    return ret;
  ret = check_window(func, window);
  if (ret)
    return ret;
  for (int a = 0; slices && a < 3; a++)
    if (slices[a] < 0 || slices[a] >= dims[a])
      return sproj_fail(SPROJ_ERR_RANGE, func, "slices[%d] = %d is not in 0 .. %d", a, slices[a], dims[a] - 1);
  double extent[3], largest = 0.0;
  for (int k = 0; k < 3; k++) {
    extent[k] = (double)dims[k] * voxel_size[k]; /* finite: sproj_check_geometry checked it */
    largest = extent[k] > largest ? extent[k] : largest;
  }
  double pitch = largest / PANEL_TARGET;
  /* transaxial, coronal, sagittal */
  struct panel panels[3] = {{1, 0, 2, 0, 0, 0}, {2, 0, 1, 0, 0, 0}, {2, 1, 0, 0, 0, 0}};
  uint32_t width = 0, height = 0;
  for (int p = 0; p < 3; p++) {
    struct panel *q = &panels[p];
    q->width = (uint32_t)fmax(1.0, round(extent[q->col_axis] / pitch));
    q->height = (uint32_t)fmax(1.0, round(extent[q->row_axis] / pitch));
    q->x0 = width + (p ? PANEL_GAP : 0);
    width = q->x0 + q->width;
    height = q->height > height ? q->height : height;
  }
  const int64_t stride[3] = {(int64_t)dims[1] * dims[2], dims[2], 1};
  /* the index each panel holds its fixed axis at */
  const int64_t centre[3] = {slices ? slices[0] : dims[0] / 2, slices ? slices[1] : dims[1] / 2,
                             slices ? slices[2] : dims[2] / 2};
  size_t npix = (size_t)width * height;
  unsigned char *pixels = calloc(npix, 1);
  float *values = malloc(npix * sizeof *values);
  unsigned char *shown = calloc(npix, 1);
  if (!pixels || !values || !shown) {
    free(pixels);
    free(values);
    free(shown);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  size_t nshown = 0;
  float *samples = malloc(npix * sizeof *samples);
  for (int p = 0; samples && p < 3; p++) {
    const struct panel *q = &panels[p];
    for (uint32_t r = 0; r < q->height; r++) {
      int64_t ir = nearest(r, q->height, dims[q->row_axis]);
      for (uint32_t c = 0; c < q->width; c++) {
        int64_t ic = nearest(c, q->width, dims[q->col_axis]);
        int64_t idx =
          ir * stride[q->row_axis] + ic * stride[q->col_axis] + centre[q->fixed_axis] * stride[q->fixed_axis];
        size_t at = (size_t)r * width + q->x0 + c;
        values[at] = data[idx];
        shown[at] = 1;
        samples[nshown++] = data[idx];
      }
    }
  }
  if (!samples) {
    free(pixels);
    free(values);
    free(shown);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  float win[2];
  if (window) {
    win[0] = window[0];
    win[1] = window[1];
  } else {
    auto_window(samples, nshown, win);
  }
  free(samples);
  for (size_t i = 0; i < npix; i++)
    pixels[i] = shown[i] ? grey(values[i], win) : 0;
  free(values);
  free(shown);
  ret = write_grey_png(func, path, pixels, width, height);
  free(pixels);
  return ret;
}

int sproj_png_write_image(const char *path, const float *data, const int dims[3], const float voxel_size[3],
                          const float window[2])
{
  return write_image_slices(__func__, path, data, dims, voxel_size, NULL, window);
}

int sproj_png_write_image_slices(const char *path, const float *data, const int dims[3], const float voxel_size[3],
                                 const int slices[3], const float window[2])
{
  return write_image_slices(__func__, path, data, dims, voxel_size, slices, window);
}

/* ---- sinogram views -------------------------------------------------------------------------------------- */
int sproj_png_write_sino(const char *path, const float *sino, int num_dims, const int64_t *shape, int view_axis,
                         int radial_axis, int plane_axis, int64_t view, const float window[2])
{
  if (!path || !sino || !shape)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "path, sino and shape must not be NULL");
  if (num_dims != 3 && num_dims != 4)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "num_dims = %d is neither 3 nor 4", num_dims);
  int64_t total = 1;
  for (int k = 0; k < num_dims; k++) {
    if (shape[k] <= 0)
      return SPROJ_FAIL(SPROJ_ERR_DIMS, "shape[%d] = %" PRId64 " must be > 0", k, shape[k]);
    if (total > (INT64_MAX / 8) / shape[k])
      return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "the sinogram has too many bins");
    total *= shape[k];
  }
  int axes[3] = {view_axis, radial_axis, plane_axis};
  for (int a = 0; a < 3; a++) {
    if (axes[a] < 0 || axes[a] >= num_dims)
      return SPROJ_FAIL(SPROJ_ERR_INVALID, "axis argument %d is not in 0 .. %d", axes[a], num_dims - 1);
    for (int b = 0; b < a; b++)
      if (axes[a] == axes[b])
        return SPROJ_FAIL(SPROJ_ERR_INVALID, "view, radial and plane axes must differ (%d given twice)", axes[a]);
  }
  if (view < 0 || view >= shape[view_axis])
    return SPROJ_FAIL(SPROJ_ERR_RANGE, "view %" PRId64 " is not in 0 .. %" PRId64, view, shape[view_axis] - 1);
  int ret = check_window(__func__, window);
  if (ret)
    return ret;
  int sum_axis = -1;
  for (int k = 0; k < num_dims; k++)
    if (k != view_axis && k != radial_axis && k != plane_axis)
      sum_axis = k;
  int64_t stride[4];
  stride[num_dims - 1] = 1;
  for (int k = num_dims - 2; k >= 0; k--)
    stride[k] = stride[k + 1] * shape[k + 1];
  int64_t nr = shape[radial_axis], np = shape[plane_axis];
  int64_t nsum = sum_axis >= 0 ? shape[sum_axis] : 1, ssum = sum_axis >= 0 ? stride[sum_axis] : 0;

  int64_t scale = SINO_MAX_SCALE;
  while (scale > 1 && (nr * scale > SINO_MAX_SIDE || np * scale > SINO_MAX_SIDE))
    scale--;
  uint32_t width = (uint32_t)(nr * scale < SINO_MAX_SIDE ? nr * scale : SINO_MAX_SIDE);
  uint32_t height = (uint32_t)(np * scale < SINO_MAX_SIDE ? np * scale : SINO_MAX_SIDE);
  size_t npix = (size_t)width * height;
  float *values = malloc(npix * sizeof *values), *samples = malloc(npix * sizeof *samples);
  unsigned char *pixels = malloc(npix);
  if (!values || !samples || !pixels) {
    free(values);
    free(samples);
    free(pixels);
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  }
  const float *v0 = sino + view * stride[view_axis];
  for (uint32_t r = 0; r < height; r++) {
    int64_t ip = nearest(r, height, np);
    for (uint32_t c = 0; c < width; c++) {
      int64_t ir = nearest(c, width, nr);
      const float *bin = v0 + ip * stride[plane_axis] + ir * stride[radial_axis];
      double s = 0.0;
      for (int64_t t = 0; t < nsum; t++)
        s += bin[t * ssum];
      values[(size_t)r * width + c] = (float)s;
    }
  }
  float win[2];
  if (window) {
    win[0] = window[0];
    win[1] = window[1];
  } else {
    memcpy(samples, values, npix * sizeof *values);
    auto_window(samples, npix, win);
  }
  for (size_t i = 0; i < npix; i++)
    pixels[i] = grey(values[i], win);
  free(values);
  free(samples);
  ret = write_grey_png(__func__, path, pixels, width, height);
  free(pixels);
  return ret;
}
