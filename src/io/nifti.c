/* SPDX-License-Identifier: Apache-2.0 */
/* nifti.c: images as NIfTI-1 files through nifticlib, with starproj's axes and origin in the affine. */
#include "config.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <nifti1_io.h>
#include "starproj_io.h"
#include "../core/shared.h"
#include "files.h"

static int check_image_geometry(const char *func, const int dims[3], const float voxel_size[3],
                                const float origin[3], size_t *nvox)
{
  uint64_t n;
  int ret = sproj_check_geometry(func, dims, voxel_size, origin, SPROJ_HOST_MAX_VOXELS, &n);
  if (ret == SPROJ_OK)
    *nvox = (size_t)n;
  return ret;
}

int sproj_nifti_write(const char *path, const float *data, const int dims[3], const float voxel_size[3],
                      const float origin[3], const char *description)
{
  if (!path || !data || !dims || !voxel_size || !origin)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "path, data, dims, voxel_size and origin must not be NULL");
  size_t len = strlen(path), nvox;
  if (len < 5 || strcmp(path + len - 4, ".nii") != 0 || path[len - 5] == '/')
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "'%s' does not name a .nii file", path);
  int ret = check_image_geometry(__func__, dims, voxel_size, origin, &nvox);
  if (ret)
    return ret;
  for (int k = 0; k < 3; k++)
    if (dims[k] > 32767) /* NIfTI-1 keeps sizes in 16-bit integers */
      return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "dims[%d] = %d exceeds NIfTI-1's 32767", k, dims[k]);

  /* nifticlib builds the header (quaternion, srows, magic); starproj writes the bytes itself, because
   * nifti_image_write reports no failure and would write in place */
  int ndim[8] = {3, dims[2], dims[1], dims[0], 1, 1, 1, 1};
  nifti_image *nim = nifti_make_new_nim(ndim, NIFTI_TYPE_FLOAT32, 0);
  if (!nim)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "nifticlib could not make a header");
  nim->nifti_type = NIFTI_FTYPE_NIFTI1_1;
  nim->dx = nim->pixdim[1] = voxel_size[2];
  nim->dy = nim->pixdim[2] = voxel_size[1];
  nim->dz = nim->pixdim[3] = voxel_size[0];
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->time_units = NIFTI_UNITS_UNKNOWN;
  nim->scl_slope = 1.0f;
  nim->scl_inter = 0.0f;
  /* (i, j, k) = (axis 2, axis 1, axis 0) indices; world (x, y, z) = starproj's coordinates (axis 0, 1, 2) */
  mat44 m;
  memset(&m, 0, sizeof m);
  m.m[0][2] = voxel_size[0];
  m.m[1][1] = voxel_size[1];
  m.m[2][0] = voxel_size[2];
  m.m[0][3] = origin[0];
  m.m[1][3] = origin[1];
  m.m[2][3] = origin[2];
  m.m[3][3] = 1.0f;
  nim->sform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->sto_xyz = m;
  nim->qform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->qto_xyz = m;
  float dx, dy, dz;
  nifti_mat44_to_quatern(m, &nim->quatern_b, &nim->quatern_c, &nim->quatern_d, &nim->qoffset_x, &nim->qoffset_y,
                         &nim->qoffset_z, &dx, &dy, &dz, &nim->qfac);
  nim->iname_offset = 352; /* 348-byte header, 4 bytes of "no extensions", data 16-byte aligned */
  if (description) {
    strncpy(nim->descrip, description, sizeof nim->descrip - 1);
    nim->descrip[sizeof nim->descrip - 1] = '\0';
  }
  struct nifti_1_header hdr = nifti_convert_nim2nhdr(nim);
  nifti_image_free(nim);
  const char extender[4] = {0, 0, 0, 0};

  struct sproj_outfile out;
  if ((ret = sproj_out_open(__func__, path, &out)))
    return ret;
  ret = sproj_out_write(__func__, &out, &hdr, sizeof hdr);
  if (!ret)
    ret = sproj_out_write(__func__, &out, extender, sizeof extender);
  if (!ret)
    ret = sproj_out_write(__func__, &out, data, nvox * sizeof(float));
  if (!ret)
    ret = sproj_out_close(__func__, &out);
  if (!ret)
    ret = sproj_out_rename(__func__, &out);
  sproj_out_discard(&out);
  return ret;
}

/* Converts n values of a NIfTI datatype to float, applying slope and intercept. */
static int to_float(int datatype, const void *src, float *dst, size_t n, double slope, double inter)
{
  for (size_t i = 0; i < n; i++) {
    double v;
    switch (datatype) {
    case NIFTI_TYPE_UINT8: v = ((const uint8_t *)src)[i]; break;
    case NIFTI_TYPE_INT8: v = ((const int8_t *)src)[i]; break;
    case NIFTI_TYPE_INT16: v = ((const int16_t *)src)[i]; break;
    case NIFTI_TYPE_UINT16: v = ((const uint16_t *)src)[i]; break;
    case NIFTI_TYPE_INT32: v = ((const int32_t *)src)[i]; break;
    case NIFTI_TYPE_UINT32: v = ((const uint32_t *)src)[i]; break;
    case NIFTI_TYPE_INT64: v = (double)((const int64_t *)src)[i]; break;
    case NIFTI_TYPE_UINT64: v = (double)((const uint64_t *)src)[i]; break;
    case NIFTI_TYPE_FLOAT32: v = ((const float *)src)[i]; break;
    case NIFTI_TYPE_FLOAT64: v = ((const double *)src)[i]; break;
    default: return 0;
    }
    dst[i] = (float)(v * slope + inter);
  }
  return 1;
}

/* Reads the voxel bytes from the image file (compressed or not) at the header's offset. */
static int read_voxels(const char *func, const nifti_image *nim, void *buf, size_t bytes)
{
  znzFile fp = znzopen(nim->iname, "rb", nifti_is_gzfile(nim->iname));
  if (znz_isnull(fp))
    return sproj_fail(SPROJ_ERR_IO, func, "cannot open '%s': %s", nim->iname, strerror(errno));
  int ret = SPROJ_OK;
  if (znzseek(fp, (znz_off_t)nim->iname_offset, SEEK_SET) < 0) /* gzseek returns the offset, fseek 0 */
    ret = sproj_fail(SPROJ_ERR_IO, func, "'%s' ends before its data", nim->iname);
  char *p = buf;
  for (size_t done = 0; !ret && done < bytes;) {
    size_t piece = bytes - done < ((size_t)1 << 26) ? bytes - done : ((size_t)1 << 26);
    size_t got = znzread(p + done, 1, piece, fp);
    if (got != piece)
      ret = sproj_fail(SPROJ_ERR_IO, func, "'%s' is truncated: %zu of %zu data bytes", nim->iname, done + got,
                       bytes);
    done += got;
  }
  znzclose(fp);
  return ret;
}

int sproj_nifti_read(const char *path, float **data, int dims[3], float voxel_size[3], float origin[3])
{
  if (!path || !data || !dims || !voxel_size)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "path, data, dims and voxel_size must not be NULL");
  /* our own check first: nifticlib says only "NULL" for a missing file */
  FILE *probe = fopen(path, "rb");
  if (!probe)
    return SPROJ_FAIL(SPROJ_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  fclose(probe);
  int swapped = 0;
  nifti_1_header *hdr = nifti_read_header(path, &swapped, 1);
  if (!hdr)
    return SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s' is not a valid NIfTI-1 or ANALYZE file", path);
  free(hdr);
  /* the header only: nifticlib's data loader zeroes NaN and infinity and pads a short file with zeros */
  nifti_image *nim = nifti_image_read(path, 0);
  if (!nim)
    return SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': nifticlib could not make sense of the header", path);

  int ret = SPROJ_OK;
  int n[3] = {nim->nz, nim->ny, nim->nx};
  float vs[3] = {nim->dz, nim->dy, nim->dx};
  float org[3] = {0.0f, 0.0f, 0.0f};
  size_t nvox = 0;
  for (int d = 4; d <= nim->ndim && d <= 7; d++)
    if (nim->dim[d] > 1)
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s' has %d dimensions; only 3-D images are read", path, nim->ndim);
  if (!ret && nim->ndim < 1)
    ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s' has no dimensions", path);
  for (int k = 0; !ret && k < 3; k++) {
    if (n[k] < 1)
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': dimension %d has size %d", path, 3 - k, n[k]);
    else if (!isfinite(vs[k]) || !(fabsf(vs[k]) > 0.0f))
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': pixdim[%d] = %g is not a voxel size", path, 3 - k, vs[k]);
    vs[k] = fabsf(vs[k]);
  }
  if (!ret && !(ret = check_image_geometry(__func__, n, vs, NULL, &nvox)) && nim->nvox != nvox)
    ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': %zu voxels in the header, %zu from its dimensions", path, nim->nvox,
                     nvox);
  if (!ret) {
    /* the world position of voxel (0,0,0): sform's or qform's translation (nifticlib fills both matrices) */
    const mat44 *m = nim->sform_code > 0 ? &nim->sto_xyz : nim->qform_code > 0 ? &nim->qto_xyz : NULL;
    for (int k = 0; m && k < 3; k++)
      org[k] = m->m[k][3];
    for (int k = 0; k < 3; k++)
      if (!isfinite(org[k]))
        ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': the affine's offset is not finite", path);
  }
  double slope = 1.0, inter = 0.0;
  if (!ret && nim->scl_slope != 0.0f && isfinite(nim->scl_slope) && isfinite(nim->scl_inter)) {
    slope = nim->scl_slope;
    inter = nim->scl_inter;
  }
  float *out = NULL;
  void *raw = NULL;
  if (!ret && !(out = malloc(nvox * sizeof *out)))
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for %zu voxels", nvox);
  if (!ret && (nim->nbyper <= 0 || nim->nbyper > 8 || nim->iname_offset < 0 || !nim->iname))
    ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': data type %s or data offset not supported", path,
                     nifti_datatype_string(nim->datatype));
  if (!ret && !(raw = malloc(nvox * (size_t)nim->nbyper)))
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for %zu voxels", nvox);
  if (!ret)
    ret = read_voxels(__func__, nim, raw, nvox * (size_t)nim->nbyper);
  if (!ret) {
    if (nim->swapsize > 1 && nim->byteorder != nifti_short_order())
      nifti_swap_Nbytes(nvox * (size_t)nim->nbyper / (size_t)nim->swapsize, nim->swapsize, raw);
    if (nim->datatype == NIFTI_TYPE_FLOAT32 && slope == 1.0 && inter == 0.0)
      memcpy(out, raw, nvox * sizeof *out); /* bit for bit, NaN payloads included */
    else if (!to_float(nim->datatype, raw, out, nvox, slope, inter))
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': data type %s is not a real number type", path,
                       nifti_datatype_string(nim->datatype));
  }
  free(raw);
  nifti_image_free(nim);
  if (ret) {
    free(out);
    return ret;
  }
  *data = out;
  memcpy(dims, n, sizeof n);
  memcpy(voxel_size, vs, sizeof vs);
  if (origin)
    memcpy(origin, org, sizeof org);
  return SPROJ_OK;
}
