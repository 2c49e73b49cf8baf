/* SPDX-License-Identifier: Apache-2.0 */
/* nifti.c: images as NIfTI-1 files through nifticlib, with starproj's axes and origin in the affine. */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
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

/* ---- reading ------------------------------------------------------------------------------------------------ */
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

static int real_type(int datatype)
{
  float f;
  return to_float(datatype, "\0\0\0\0\0\0\0\0", &f, 1, 1.0, 0.0);
}

/* Deflate never compresses more than 1032:1: the most bytes a .gz file of a given size can expand to, a bound
 * for what its header may claim, checked before any memory is reserved. */
#define GZ_MAX_RATIO 1032

/* Where a NIfTI file's bytes come from: a plain file read at offsets, or a gzip stream read forward. The file
 * is opened by sproj_in_open (never blocks, regular files only); nifticlib never opens it. */
struct source {
  const char *path;
  int fd;
  znzFile gz;    /* NULL for a plain file */
  uint64_t pos;  /* gz: bytes of the stream read so far */
  uint64_t size; /* of the file on disk (compressed for gz) */
};

static int source_open(const char *func, const char *path, struct source *s)
{
  memset(s, 0, sizeof *s);
  s->path = path;
  s->fd = -1;
  s->gz = NULL;
  int ret = sproj_in_open(func, path, &s->fd, &s->size);
  if (ret || !nifti_is_gzfile(path))
    return ret;
  /* nifticlib's znzlib opens gzip streams by name only (its znzdopen is not built). Through /proc, the name
   * reaches the very file just checked, whatever has become of path since; without /proc, path itself, which
   * was a regular file a moment ago */
  char self[64];
  snprintf(self, sizeof self, "/proc/self/fd/%d", s->fd);
  struct stat st;
  s->gz = znzopen(stat(self, &st) == 0 ? self : path, "rb", 1);
  if (znz_isnull(s->gz)) {
    close(s->fd);
    s->fd = -1;
    return sproj_fail(SPROJ_ERR_IO, func, "cannot read '%s' as gzip", path);
  }
  return SPROJ_OK;
}

static void source_close(struct source *s)
{
  if (!znz_isnull(s->gz))
    znzclose(s->gz);
  s->gz = NULL;
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
}

/* The most bytes the file can deliver: its size, or for gzip what that size can expand to. */
static uint64_t source_bound(const struct source *s)
{
  if (znz_isnull(s->gz))
    return s->size;
  return s->size > UINT64_MAX / GZ_MAX_RATIO ? UINT64_MAX : s->size * GZ_MAX_RATIO;
}

/* Reads bytes at offset (gzip: not before what was read already) into buf; *got = the bytes read, fewer when the
 * file ends first. Errors of the system or of the stream are recorded (IO). */
static int source_read(const char *func, struct source *s, uint64_t offset, void *buf, size_t bytes, size_t *got)
{
  char *p = buf;
  *got = 0;
  if (znz_isnull(s->gz)) {
    while (*got < bytes) {
      size_t piece = bytes - *got < ((size_t)1 << 26) ? bytes - *got : ((size_t)1 << 26);
      ssize_t n = pread(s->fd, p + *got, piece, (off_t)(offset + *got));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return sproj_fail(SPROJ_ERR_IO, func, "cannot read '%s': %s", s->path, strerror(errno));
      if (n == 0)
        break;
      *got += (size_t)n;
    }
    return SPROJ_OK;
  }
  if (offset < s->pos)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': the data offset points back into the header", s->path);
  char skip[16384];
  while (s->pos < offset) { /* a gzip stream is read forward only */
    size_t piece = offset - s->pos < sizeof skip ? (size_t)(offset - s->pos) : sizeof skip;
    size_t n = znzread(skip, 1, piece, s->gz);
    s->pos += n;
    if (n < piece)
      return SPROJ_OK; /* ends before offset: nothing read */
  }
  while (*got < bytes) {
    size_t piece = bytes - *got < ((size_t)1 << 26) ? bytes - *got : ((size_t)1 << 26);
    size_t n = znzread(p + *got, 1, piece, s->gz);
    *got += n;
    s->pos += n;
    if (n < piece)
      break;
  }
  return SPROJ_OK;
}

/* The image file of a .hdr/.img pair: .hdr -> .img (.HDR -> .IMG), with or without .gz, whichever exists. */
static char *image_path(const char *path)
{
  size_t len = strlen(path);
  int gz = len >= 3 && strcmp(path + len - 3, ".gz") == 0;
  size_t stem = gz ? len - 3 : len;
  if (stem < 4 || (strncmp(path + stem - 4, ".hdr", 4) != 0 && strncmp(path + stem - 4, ".HDR", 4) != 0))
    return NULL;
  char *img = malloc(len + 4);
  if (!img)
    return NULL;
  int upper = path[stem - 3] == 'H';
  const char *ext = upper ? "IMG" : "img", *z = upper ? ".GZ" : ".gz";
  for (int attempt = 0; attempt < 2; attempt++) {
    int with_gz = attempt == 0 ? gz : !gz; /* the header's own form first */
    snprintf(img, len + 4, "%.*s%s%s", (int)(stem - 3), path, ext, with_gz ? z : "");
    struct stat st;
    if (stat(img, &st) == 0)
      return img;
  }
  snprintf(img, len + 4, "%.*s%s%s", (int)(stem - 3), path, ext, gz ? z : "");
  return img; /* none exists: opening it says so */
}

/* What starproj takes from a NIfTI-1 header, checked as the header in starproj_io.h describes. */
struct image_header {
  int n[3];
  float vs[3], origin[3];
  size_t nvox;
  int nbyper, swapsize;
  double slope, inter;
  uint64_t offset;
};

static int all_finite(const float *v, int n)
{
  for (int i = 0; i < n; i++)
    if (!isfinite(v[i]))
      return 0;
  return 1;
}

static int check_header(const char *func, const char *path, const struct nifti_1_header *h, int single,
                        struct image_header *out)
{
  int nd = h->dim[0];
  if (nd < 1 || nd > 7)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': dim[0] = %d is not a number of dimensions 1 .. 7", path, nd);
  for (int d = 1; d <= nd; d++)
    if (h->dim[d] < 1)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': dimension %d has size %d", path, d, h->dim[d]);
  for (int d = 4; d <= nd; d++)
    if (h->dim[d] > 1)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' has %d dimensions; only 3-D images are read", path, nd);
  if (!real_type(h->datatype))
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': data type %s is not a real number type", path,
                      nifti_datatype_string(h->datatype));
  nifti_datatype_sizes(h->datatype, &out->nbyper, &out->swapsize);
  /* NIfTI's i is starproj's axis 2, j axis 1, k axis 0; an axis the file does not have is 1 voxel of 1 mm unless
   * the file gives it a voxel size */
  for (int k = 0; k < 3; k++) {
    int d = 3 - k;
    float pd = h->pixdim[d];
    out->n[k] = d <= nd ? h->dim[d] : 1;
    if (d <= nd && !(isfinite(pd) && pd > 0.0f))
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': pixdim[%d] = %g is not a voxel size (finite, > 0)", path, d,
                        (double)pd);
    out->vs[k] = isfinite(pd) && pd > 0.0f ? pd : 1.0f;
  }
  /* the world position of voxel (0,0,0): the sform's translation, else the qform's (nifticlib would turn what is
   * not finite into 0 and go on: a made-up position) */
  float q[7] = {h->quatern_b, h->quatern_c, h->quatern_d, h->qoffset_x, h->qoffset_y, h->qoffset_z, h->pixdim[0]};
  if (h->qform_code > 0 && !all_finite(q, 7))
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': the qform (quaternion, offset or qfac) is not finite", path);
  if (h->sform_code > 0 && !(all_finite(h->srow_x, 4) && all_finite(h->srow_y, 4) && all_finite(h->srow_z, 4)))
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': the sform is not finite", path);
  for (int k = 0; k < 3; k++)
    out->origin[k] = h->sform_code > 0 ? (k == 0 ? h->srow_x : k == 1 ? h->srow_y : h->srow_z)[3]
                     : h->qform_code > 0 ? q[3 + k] : 0.0f;
  uint64_t nvox;
  int ret = sproj_check_geometry(func, out->n, out->vs, out->origin, SPROJ_HOST_MAX_VOXELS, &nvox);
  if (ret)
    return ret;
  out->nvox = (size_t)nvox;
  out->slope = 1.0;
  out->inter = 0.0;
  if (h->scl_slope != 0.0f) { /* 0: no scaling, as NIfTI says */
    if (!isfinite(h->scl_slope) || !isfinite(h->scl_inter))
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': scl_slope = %g, scl_inter = %g are not finite", path,
                        (double)h->scl_slope, (double)h->scl_inter);
    out->slope = h->scl_slope;
    out->inter = h->scl_inter;
  }
  /* the data offset: a whole number of bytes, past the header and its extender in a single file */
  float vo = h->vox_offset;
  double lo = single ? 352.0 : 0.0;
  if (!isfinite(vo) || vo < lo || vo != floorf(vo) || vo > 0x1p62f)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': vox_offset = %g is not a byte offset >= %g", path, (double)vo,
                      lo);
  out->offset = (uint64_t)vo;
  if (out->nvox > (UINT64_MAX - out->offset) / (uint64_t)out->nbyper)
    return sproj_fail(SPROJ_ERR_OVERFLOW, func, "'%s': the data size overflows", path);
  return SPROJ_OK;
}

/* NIfTI-1 extensions, announced by a non-zero first byte of the 4-byte extender at 348, between it and the data
 * (single file) or the end of the header file: each esize >= 16 and a multiple of 16 bytes, the last one ending
 * in time. starproj does not use them, but
 * a file whose extensions run into its data is not what it says it is. */
static int check_extensions(const char *func, struct source *s, int single, uint64_t limit, int swap)
{
  unsigned char extender[4];
  size_t got;
  int ret = source_read(func, s, 348, extender, 4, &got);
  if (ret)
    return ret;
  if (got == 0 && !single)
    return SPROJ_OK; /* a .hdr of 348 bytes: no extender, no extensions */
  if (got < 4)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' ends in its extender (byte 348)", s->path);
  if (extender[0] == 0)
    return SPROJ_OK;
  /* less room left than the smallest extension (16 bytes) is padding, as nifticlib reads it */
  for (uint64_t pos = 352; pos + 16 <= limit;) {
    int32_t head[2];
    if ((ret = source_read(func, s, pos, head, 8, &got)))
      return ret;
    if (got == 0 && !single)
      return SPROJ_OK; /* the end of a .hdr whose size is not known (gzip) */
    if (got < 8)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' ends in an extension (byte %" PRIu64 ")", s->path, pos);
    if (swap)
      nifti_swap_4bytes(2, head);
    if (head[0] < 16 || head[0] % 16 != 0 || (uint64_t)head[0] > limit - pos)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': the extension at byte %" PRIu64 " has size %" PRId32
                        " (a multiple of 16, >= 16, ending by byte %" PRIu64 ")", s->path, pos, head[0], limit);
    pos += (uint64_t)head[0];
  }
  return SPROJ_OK;
}

/* Reads the voxels into out, converting piece by piece (the file's type is never held in full beside the floats). */
static int read_voxels(const char *func, struct source *s, const struct nifti_1_header *h,
                       const struct image_header *ih, int swap, float *out)
{
  size_t total = ih->nvox * (size_t)ih->nbyper;
  int direct = h->datatype == NIFTI_TYPE_FLOAT32 && ih->slope == 1.0 && ih->inter == 0.0;
  size_t per_piece = direct ? ih->nvox : ih->nvox < ((size_t)1 << 20) ? ih->nvox : ((size_t)1 << 20);
  void *buf = direct ? (void *)out : malloc(per_piece * (size_t)ih->nbyper);
  if (!buf)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  int ret = SPROJ_OK;
  for (size_t first = 0; !ret && first < ih->nvox; first += per_piece) {
    size_t count = ih->nvox - first < per_piece ? ih->nvox - first : per_piece, got;
    size_t bytes = count * (size_t)ih->nbyper;
    ret = source_read(func, s, ih->offset + first * (size_t)ih->nbyper, buf, bytes, &got);
    if (!ret && got < bytes)
      ret = sproj_fail(SPROJ_ERR_IO, func, "'%s' is truncated: %zu of %zu data bytes", s->path,
                       first * (size_t)ih->nbyper + got, total);
    if (ret)
      break;
    if (swap && ih->swapsize > 1)
      nifti_swap_Nbytes(bytes / (size_t)ih->swapsize, ih->swapsize, buf);
    if (!direct)
      to_float(h->datatype, buf, out + first, count, ih->slope, ih->inter);
  }
  if (!direct)
    free(buf);
  return ret;
}

int sproj_nifti_read(const char *path, float **data, int dims[3], float voxel_size[3], float origin[3])
{
  if (!path || !data || !dims || !voxel_size)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "path, data, dims and voxel_size must not be NULL");
  struct source src, img;
  int ret = source_open(__func__, path, &src);
  if (ret)
    return ret;
  img.fd = -1;
  img.gz = NULL;
  struct nifti_1_header h;
  size_t got;
  ret = source_read(__func__, &src, 0, &h, sizeof h, &got);
  if (!ret && got < sizeof h)
    ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s' has %zu bytes, too few for a NIfTI-1 header (348)", path, got);
  int swap = 0, single = 0;
  if (!ret && h.sizeof_hdr != 348) {
    int32_t size = h.sizeof_hdr;
    nifti_swap_4bytes(1, &size);
    if (size != 348)
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s' is not a NIfTI-1 file (sizeof_hdr is not 348)", path);
    swap = 1;
  }
  if (!ret && swap)
    swap_nifti_header(&h, 1);
  if (!ret) {
    single = memcmp(h.magic, "n+1", 4) == 0;
    if (!single && memcmp(h.magic, "ni1", 4) != 0)
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s' has no NIfTI-1 magic ('n+1' or 'ni1'; ANALYZE 7.5 files are not "
                       "read)", path);
  }
  struct image_header ih;
  if (!ret)
    ret = check_header(__func__, path, &h, single, &ih);
  /* a single file's extensions end where its data begins; a .hdr's where the file ends */
  if (!ret)
    ret = check_extensions(__func__, &src, single, single ? ih.offset : source_bound(&src), swap);
  struct source *ds = &src;
  if (!ret && !single) {
    char *img_path = image_path(path);
    if (!img_path)
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s' has the magic of a .hdr/.img pair but is not named .hdr", path);
    else if (!(ret = source_open(__func__, img_path, &img)))
      ds = &img;
    else
      img.path = NULL;
    if (ret)
      free(img_path);
  }
  /* every size against the file before the array is reserved: a small file cannot hold a large image */
  uint64_t need = ret ? 0 : ih.offset + (uint64_t)ih.nvox * (uint64_t)ih.nbyper;
  if (!ret && ih.offset > source_bound(ds))
    ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': vox_offset = %" PRIu64 " is beyond the end of '%s' (%" PRIu64
                     " bytes%s)", path, ih.offset, ds->path, source_bound(ds), znz_isnull(ds->gz) ? "" :
                     " uncompressed at most");
  if (!ret && need > source_bound(ds))
    ret = SPROJ_FAIL(SPROJ_ERR_IO, "'%s' is truncated: its header describes %" PRIu64 " bytes of data from byte %"
                     PRIu64 ", '%s' has %" PRIu64 "%s", path, need - ih.offset, ih.offset, ds->path,
                     source_bound(ds), znz_isnull(ds->gz) ? " bytes" : " bytes uncompressed at most");
  float *out = NULL;
  if (!ret && !(out = malloc(ih.nvox * sizeof *out)))
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for %zu voxels", ih.nvox);
  if (!ret)
    ret = read_voxels(__func__, ds, &h, &ih, swap, out);
  if (ds == &img) {
    source_close(&img);
    free((char *)img.path);
  }
  source_close(&src);
  if (ret) {
    free(out);
    return ret;
  }
  *data = out;
  memcpy(dims, ih.n, sizeof ih.n);
  memcpy(voxel_size, ih.vs, sizeof ih.vs);
  if (origin)
    memcpy(origin, ih.origin, sizeof ih.origin);
  return SPROJ_OK;
}
