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

/* NIfTI-1's layout: a header of 348 bytes, a 4-byte extender whose first byte announces extensions, the extensions
 * (each a multiple of 16 bytes, at least 16), then in a single .nii file the data; sizes are 16-bit integers. */
#define NIFTI1_HEADER_BYTES 348
#define NIFTI1_EXTENDER_BYTES 4
#define NIFTI1_FIRST_EXTENSION (NIFTI1_HEADER_BYTES + NIFTI1_EXTENDER_BYTES)
#define NIFTI1_EXTENSION_ALIGN 16
#define NIFTI1_MAX_DIM INT16_MAX
/* voxels read and converted at a time */
#define CONVERT_VOXELS ((size_t)1 << 20)

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
    if (dims[k] > NIFTI1_MAX_DIM)
      return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "dims[%d] = %d exceeds NIfTI-1's %d", k, dims[k], NIFTI1_MAX_DIM);

  /* nifticlib builds the header (quaternion, srows, magic); starproj writes the bytes itself, because
   * nifti_image_write reports no failure and would write in place. NIfTI's (i, j, k) are starproj's axes
   * (0, 1, 2), so that a NIfTI reader's array [i, j, k] is the image [x, y, z] as starproj (and parallelproj)
   * hold it, with a diagonal affine */
  int ndim[8] = {3, dims[0], dims[1], dims[2], 1, 1, 1, 1};
  nifti_image *nim = nifti_make_new_nim(ndim, NIFTI_TYPE_FLOAT32, 0);
  if (!nim)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "nifticlib could not make a header");
  nim->nifti_type = NIFTI_FTYPE_NIFTI1_1;
  nim->dx = nim->pixdim[1] = voxel_size[0];
  nim->dy = nim->pixdim[2] = voxel_size[1];
  nim->dz = nim->pixdim[3] = voxel_size[2];
  nim->xyz_units = NIFTI_UNITS_MM;
  nim->time_units = NIFTI_UNITS_UNKNOWN;
  nim->scl_slope = 1.0f;
  nim->scl_inter = 0.0f;
  /* world (x, y, z) = origin + (i*vs0, j*vs1, k*vs2): starproj's coordinates (the LORs' frame) */
  mat44 m;
  memset(&m, 0, sizeof m);
  for (int a = 0; a < 3; a++) {
    m.m[a][a] = voxel_size[a];
    m.m[a][3] = origin[a];
  }
  m.m[3][3] = 1.0f;
  nim->sform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->sto_xyz = m;
  nim->qform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->qto_xyz = m;
  /* a diagonal with positive entries: the identity quaternion (b = c = d = 0), qfac +1, exact in floats */
  float dx, dy, dz;
  nifti_mat44_to_quatern(m, &nim->quatern_b, &nim->quatern_c, &nim->quatern_d, &nim->qoffset_x, &nim->qoffset_y,
                         &nim->qoffset_z, &dx, &dy, &dz, &nim->qfac);
  nim->iname_offset = NIFTI1_FIRST_EXTENSION; /* header, an extender of "no extensions", data 16-byte aligned */
  if (description) {
    strncpy(nim->descrip, description, sizeof nim->descrip - 1);
    nim->descrip[sizeof nim->descrip - 1] = '\0';
  }
  struct nifti_1_header hdr = nifti_convert_nim2nhdr(nim);
  nifti_image_free(nim);
  const char extender[4] = {0, 0, 0, 0};

  /* the file's order has i fastest: starproj's [i][j][k] (k fastest) is transposed one k-plane at a time, a
   * buffer of n0 x n1 floats rather than a second copy of the image */
  const size_t n0 = (size_t)dims[0], n1 = (size_t)dims[1], n2 = (size_t)dims[2];
  float *plane = malloc(n0 * n1 * sizeof *plane);
  if (!plane)
    return SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for a plane of %zu x %zu voxels", n0, n1);
  struct sproj_outfile out;
  if ((ret = sproj_out_open(__func__, path, &out))) {
    free(plane);
    return ret;
  }
  ret = sproj_out_write(__func__, &out, &hdr, sizeof hdr);
  if (!ret)
    ret = sproj_out_write(__func__, &out, extender, sizeof extender);
  for (size_t k = 0; !ret && k < n2; k++) {
    for (size_t j = 0; j < n1; j++)
      for (size_t i = 0; i < n0; i++)
        plane[j * n0 + i] = data[(i * n1 + j) * n2 + k];
    ret = sproj_out_write(__func__, &out, plane, n0 * n1 * sizeof *plane);
  }
  free(plane);
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
      size_t piece = bytes - *got < SPROJ_IO_PIECE_BYTES ? bytes - *got : SPROJ_IO_PIECE_BYTES;
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
    size_t piece = bytes - *got < SPROJ_IO_PIECE_BYTES ? bytes - *got : SPROJ_IO_PIECE_BYTES;
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
  int fn[3];               /* the file's sizes along i, j, k */
  int64_t base[3], step[3]; /* where file voxel (i, j, k) goes: sum over file axes of base + index * step */
};

static int all_finite(const float *v, int n)
{
  for (int i = 0; i < n; i++)
    if (!isfinite(v[i]))
      return 0;
  return 1;
}

/* The starproj axis of each file axis, from the linear part of the affine (rows: world x, y, z; columns: i, j, k)
 * when it is a permutation matrix times a diagonal, within float round-off (a qform's quaternion of a 90-degree
 * rotation gives entries of ~1e-8 where 0 is meant): axis[c] = the row of column c's one entry, flip[c] = that
 * entry < 0. Returns 0 for any other linear part (an oblique or sheared orientation). */
static int permutation_of(const double lin[3][3], int axis[3], int flip[3])
{
  double largest = 0.0;
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++)
      largest = fmax(largest, fabs(lin[r][c]));
  if (!(largest > 0.0))
    return 0;
  int used[3] = {0, 0, 0};
  for (int c = 0; c < 3; c++) {
    int row = -1;
    for (int r = 0; r < 3; r++) {
      if (fabs(lin[r][c]) <= 1e-6 * largest)
        continue;
      if (row >= 0)
        return 0; /* two non-zero entries in a column */
      row = r;
    }
    if (row < 0 || used[row])
      return 0;
    used[row] = 1;
    axis[c] = row;
    flip[c] = lin[row][c] < 0.0;
  }
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
  /* the file's axes i, j, k; one the file does not have is 1 voxel of 1 mm unless the file gives it a voxel size */
  float fvs[3];
  for (int c = 0; c < 3; c++) {
    int d = c + 1;
    float pd = h->pixdim[d];
    out->fn[c] = d <= nd ? h->dim[d] : 1;
    if (d <= nd && !(isfinite(pd) && pd > 0.0f))
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': pixdim[%d] = %g is not a voxel size (finite, > 0)", path, d,
                        (double)pd);
    fvs[c] = isfinite(pd) && pd > 0.0f ? pd : 1.0f;
  }
  /* the affine: the sform, else the qform (nifticlib would turn what is not finite into 0 and go on: a made-up
   * position), else none */
  float q[7] = {h->quatern_b, h->quatern_c, h->quatern_d, h->qoffset_x, h->qoffset_y, h->qoffset_z, h->pixdim[0]};
  if (h->qform_code > 0 && !all_finite(q, 7))
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': the qform (quaternion, offset or qfac) is not finite", path);
  if (h->sform_code > 0 && !(all_finite(h->srow_x, 4) && all_finite(h->srow_y, 4) && all_finite(h->srow_z, 4)))
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': the sform is not finite", path);
  double lin[3][3] = {{0}}, shift[3] = {0.0, 0.0, 0.0};
  int have_affine = 1;
  if (h->sform_code > 0) {
    const float *rows[3] = {h->srow_x, h->srow_y, h->srow_z};
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++)
        lin[r][c] = rows[r][c];
      shift[r] = rows[r][3];
    }
  } else if (h->qform_code > 0) {
    /* qfac 0 counts as 1, as NIfTI says; the voxel sizes are the checked ones */
    mat44 m = nifti_quatern_to_mat44(q[0], q[1], q[2], q[3], q[4], q[5], fvs[0], fvs[1], fvs[2],
                                     q[6] < 0.0f ? -1.0f : 1.0f);
    for (int r = 0; r < 3; r++) {
      for (int c = 0; c < 3; c++)
        lin[r][c] = m.m[r][c];
      shift[r] = q[3 + r];
    }
  } else {
    have_affine = 0;
  }
  /* file axis c becomes starproj axis axis[c], reversed where the affine runs against it; without an affine, or
   * with one that is no permutation, i, j, k are axes 0, 1, 2 as they stand */
  int axis[3] = {0, 1, 2}, flip[3] = {0, 0, 0};
  int permuted = have_affine && permutation_of(lin, axis, flip);
  for (int c = 0; !permuted && c < 3; c++) {
    /* permutation_of may have filled some columns before it found the one that is no permutation */
    axis[c] = c;
    flip[c] = 0;
  }
  for (int c = 0; c < 3; c++) {
    out->n[axis[c]] = out->fn[c];
    /* an sform's entry is the voxel size along its world axis; a qform's is pixdim times a rotation's entry that
     * float round-off may leave a hair under 1, so pixdim itself is taken */
    out->vs[axis[c]] = permuted && h->sform_code > 0 ? (float)fabs(lin[axis[c]][c]) : fvs[c];
  }
  /* the origin: the world position of the file voxel that becomes (0,0,0), i.e. index dim-1 along a reversed axis;
   * for an orientation starproj does not apply, the affine's translation (the position of file voxel (0,0,0)) */
  for (int r = 0; r < 3; r++) {
    double w = shift[r];
    for (int c = 0; permuted && c < 3; c++)
      w += lin[r][c] * (flip[c] ? out->fn[c] - 1 : 0);
    out->origin[r] = (float)w;
  }
  const int64_t stride[3] = {(int64_t)out->n[1] * out->n[2], out->n[2], 1};
  for (int c = 0; c < 3; c++) {
    int64_t st = stride[axis[c]];
    out->base[c] = flip[c] ? (int64_t)(out->fn[c] - 1) * st : 0;
    out->step[c] = flip[c] ? -st : st;
  }
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
  double lo = single ? (double)NIFTI1_FIRST_EXTENSION : 0.0;
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
  int ret = source_read(func, s, NIFTI1_HEADER_BYTES, extender, NIFTI1_EXTENDER_BYTES, &got);
  if (ret)
    return ret;
  if (got == 0 && !single)
    return SPROJ_OK; /* a .hdr of the header alone: no extender, no extensions */
  if (got < NIFTI1_EXTENDER_BYTES)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' ends in its extender (byte %d)", s->path, NIFTI1_HEADER_BYTES);
  if (extender[0] == 0)
    return SPROJ_OK;
  /* less room left than the smallest extension is padding, as nifticlib reads it */
  for (uint64_t pos = NIFTI1_FIRST_EXTENSION; pos + NIFTI1_EXTENSION_ALIGN <= limit;) {
    int32_t head[2];
    if ((ret = source_read(func, s, pos, head, 8, &got)))
      return ret;
    if (got == 0 && !single)
      return SPROJ_OK; /* the end of a .hdr whose size is not known (gzip) */
    if (got < 8)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' ends in an extension (byte %" PRIu64 ")", s->path, pos);
    if (swap)
      nifti_swap_4bytes(2, head);
    if (head[0] < NIFTI1_EXTENSION_ALIGN || head[0] % NIFTI1_EXTENSION_ALIGN != 0 || (uint64_t)head[0] > limit - pos)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': the extension at byte %" PRIu64 " has size %" PRId32
                        " (a multiple of %d, >= %d, ending by byte %" PRIu64 ")", s->path, pos, head[0],
                        NIFTI1_EXTENSION_ALIGN, NIFTI1_EXTENSION_ALIGN, limit);
    pos += (uint64_t)head[0];
  }
  return SPROJ_OK;
}

/* Reads the voxels into out, converting piece by piece and putting each voxel where the header's axis mapping
 * says (the file's type is never held in full beside the floats, nor the floats twice). */
static int read_voxels(const char *func, struct source *s, const struct nifti_1_header *h,
                       const struct image_header *ih, int swap, float *out)
{
  size_t total = ih->nvox * (size_t)ih->nbyper;
  size_t per_piece = ih->nvox < CONVERT_VOXELS ? ih->nvox : CONVERT_VOXELS;
  /* float32 unscaled is taken as it is: through x * 1 + 0, -0 would become +0 */
  int direct = h->datatype == NIFTI_TYPE_FLOAT32 && ih->slope == 1.0 && ih->inter == 0.0;
  float *vals = malloc(per_piece * sizeof *vals);
  void *buf = direct ? (void *)vals : malloc(per_piece * (size_t)ih->nbyper);
  if (!buf || !vals) {
    if (!direct)
      free(buf);
    free(vals);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  int ret = SPROJ_OK;
  int64_t i = 0, j = 0, k = 0; /* the file index of the next voxel, i fastest */
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
      to_float(h->datatype, buf, vals, count, ih->slope, ih->inter);
    for (size_t v = 0; v < count; v++) {
      out[ih->base[0] + i * ih->step[0] + ih->base[1] + j * ih->step[1] + ih->base[2] + k * ih->step[2]] = vals[v];
      if (++i == ih->fn[0]) {
        i = 0;
        if (++j == ih->fn[1]) {
          j = 0;
          k++;
        }
      }
    }
  }
  if (!direct)
    free(buf);
  free(vals);
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
    ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s' has %zu bytes, too few for a NIfTI-1 header (%d)", path, got,
                     NIFTI1_HEADER_BYTES);
  int swap = 0, single = 0;
  if (!ret && h.sizeof_hdr != NIFTI1_HEADER_BYTES) {
    int32_t size = h.sizeof_hdr;
    nifti_swap_4bytes(1, &size);
    if (size != NIFTI1_HEADER_BYTES)
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s' is not a NIfTI-1 file (sizeof_hdr is not %d)", path,
                       NIFTI1_HEADER_BYTES);
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
