/* SPDX-License-Identifier: Apache-2.0 */
/* check_io.c: NIfTI, raw sinogram and listmode files, PNG previews, phantom, Poisson noise and listmode sampling. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <check.h>
#include <nifti1_io.h>
#include <png.h>
#include "starproj.h"
#include "starproj_recon.h"
#include "starproj_io.h"

/* Every test works in its own folder below this one (made in main, in the current directory). */
static char top[64];
static char dir[256];

/* Check runs each test in a child process of its own (unless CK_FORK=no): process id and count name its folder */
static void new_dir(void)
{
  static int count;
  snprintf(dir, sizeof dir, "%s/t%ld-%d", top, (long)getpid(), count++);
  ck_assert_int_eq(mkdir(dir, 0777), 0);
}

static const char *in_dir(const char *name)
{
  static char buf[4][512];
  static int which;
  which = (which + 1) % 4;
  snprintf(buf[which], sizeof buf[which], "%s/%s", dir, name);
  return buf[which];
}

/* number of entries in a folder, "." and ".." not counted; -1 if it cannot be opened */
static int count_entries(const char *path)
{
  DIR *d = opendir(path);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

static int exists(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0;
}

static long file_size(const char *path)
{
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void write_text(const char *path, const char *text)
{
  FILE *fp = fopen(path, "wb");
  ck_assert_ptr_nonnull(fp);
  fputs(text, fp);
  fclose(fp);
}

static char *read_text(const char *path)
{
  FILE *fp = fopen(path, "rb");
  ck_assert_ptr_nonnull(fp);
  char *s = calloc(1, 70000);
  size_t n = fread(s, 1, 69999, fp);
  s[n] = '\0';
  fclose(fp);
  return s;
}

/* the value of a key in a raw header ("" if none), in a static buffer */
static const char *header_value(const char *hdr, const char *key)
{
  static char value[256];
  char *text = read_text(hdr), want[64];
  snprintf(want, sizeof want, "\n%s = ", key);
  char *at = strstr(text, want);
  value[0] = '\0';
  if (at) {
    at += strlen(want);
    size_t n = strcspn(at, "\n");
    snprintf(value, sizeof value, "%.*s", (int)n, at);
  }
  free(text);
  return value;
}

/* replaces the first occurrence of old in a text file by new */
static void edit_text(const char *path, const char *old, const char *new)
{
  char *s = read_text(path);
  char *at = strstr(s, old);
  ck_assert_msg(at != NULL, "'%s' not in %s", old, path);
  char *out = calloc(1, strlen(s) + strlen(new) + 1);
  memcpy(out, s, (size_t)(at - s));
  strcat(out, new);
  strcat(out, at + strlen(old));
  write_text(path, out);
  free(s);
  free(out);
}

static void copy_file(const char *from, const char *to)
{
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, a)) > 0)
    fwrite(buf, 1, n, b);
  fclose(a);
  fclose(b);
}

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (rng >> 11) * (1.0 / 9007199254740992.0);
}

#define EXPECT(call, status)                                                                                     \
  do {                                                                                                           \
    int rc_ = (call);                                                                                            \
    ck_assert_msg(rc_ == (status), "%s returned %d (%s: %s), expected %d", #call, rc_, sproj_strerror(rc_),       \
                  sproj_last_error(), (status));                                                                 \
  } while (0)

/* ---- NIfTI -------------------------------------------------------------------------------------------------- */
static const int ndims[3] = {7, 5, 9};
static const float nvs[3] = {1.5f, 2.25f, 3.0f}, norigin[3] = {-4.5f, 3.25f, -12.0f};

START_TEST(test_nifti_roundtrip)
{
  new_dir();
  int n = ndims[0] * ndims[1] * ndims[2];
  float *img = malloc(n * sizeof *img);
  for (int i = 0; i < n; i++)
    img[i] = (float)(uniform() * 100.0 - 20.0);
  img[3] = NAN;
  img[4] = -0.0f;
  img[5] = INFINITY;
  const char *path = in_dir("img.nii");
  EXPECT(sproj_nifti_write(path, img, ndims, nvs, norigin, "starproj test"), SPROJ_OK);
  /* 348-byte header, 4 bytes of extension flag, then the floats */
  ck_assert_int_eq(file_size(path), 352 + 4 * n);
  ck_assert_int_eq(count_entries(dir), 1);

  float *back = NULL, vs[3], origin[3];
  int dims[3];
  EXPECT(sproj_nifti_read(path, &back, dims, vs, origin), SPROJ_OK);
  for (int k = 0; k < 3; k++) {
    ck_assert_int_eq(dims[k], ndims[k]);
    ck_assert_msg(vs[k] == nvs[k], "voxel size %d: %g, wrote %g", k, vs[k], nvs[k]);
    ck_assert_msg(origin[k] == norigin[k], "origin %d: %g, wrote %g", k, origin[k], norigin[k]);
  }
  /* bit for bit, NaN, -0 and infinity included */
  ck_assert_int_eq(memcmp(back, img, n * sizeof *img), 0);
  sproj_free(back);

  /* overwriting an existing file works and leaves one file */
  img[0] = 42.0f;
  EXPECT(sproj_nifti_write(path, img, ndims, nvs, norigin, NULL), SPROJ_OK);
  EXPECT(sproj_nifti_read(path, &back, dims, vs, NULL), SPROJ_OK);
  ck_assert_float_eq(back[0], 42.0f);
  sproj_free(back);
  ck_assert_int_eq(count_entries(dir), 1);
  free(img);
}
END_TEST

START_TEST(test_nifti_header)
{
  new_dir();
  int n = ndims[0] * ndims[1] * ndims[2];
  float *img = calloc(n, sizeof *img);
  const char *path = in_dir("hdr.nii");
  EXPECT(sproj_nifti_write(path, img, ndims, nvs, norigin, "hello"), SPROJ_OK);
  nifti_image *nim = nifti_image_read(path, 0);
  ck_assert_ptr_nonnull(nim);
  /* NIfTI's i, j, k are starproj's axes 0, 1, 2 */
  ck_assert_int_eq(nim->ndim, 3);
  ck_assert_int_eq(nim->nx, ndims[0]);
  ck_assert_int_eq(nim->ny, ndims[1]);
  ck_assert_int_eq(nim->nz, ndims[2]);
  ck_assert_msg(nim->dx == nvs[0] && nim->dy == nvs[1] && nim->dz == nvs[2], "pixdim %g %g %g", nim->dx, nim->dy,
                nim->dz);
  ck_assert_int_eq(nim->datatype, NIFTI_TYPE_FLOAT32);
  ck_assert_int_eq(nim->nifti_type, NIFTI_FTYPE_NIFTI1_1);
  ck_assert_int_eq(nim->xyz_units, NIFTI_UNITS_MM);
  ck_assert_int_eq(nim->qform_code, NIFTI_XFORM_SCANNER_ANAT);
  ck_assert_int_eq(nim->sform_code, NIFTI_XFORM_SCANNER_ANAT);
  ck_assert_msg(nim->qfac == 1.0f, "qfac %g: a diagonal affine has determinant > 0", nim->qfac);
  ck_assert_msg(nim->quatern_b == 0.0f && nim->quatern_c == 0.0f && nim->quatern_d == 0.0f, "quaternion %g %g %g",
                nim->quatern_b, nim->quatern_c, nim->quatern_d);
  ck_assert_str_eq(nim->descrip, "hello");
  ck_assert_int_eq((int)nim->iname_offset, 352);
  /* world position of every voxel centre: origin + index * voxel size, starproj's axes. Both transforms hold
   * exact floats (the qform's quaternion is the identity); tolerance: float rounding of origin + index*vs */
  double worst_s = 0.0, worst_q = 0.0;
  for (int i0 = 0; i0 < ndims[0]; i0++)
    for (int i1 = 0; i1 < ndims[1]; i1++)
      for (int i2 = 0; i2 < ndims[2]; i2++) {
        double ijk[3] = {i0, i1, i2}, want[3];
        int idx[3] = {i0, i1, i2};
        for (int a = 0; a < 3; a++)
          want[a] = norigin[a] + idx[a] * (double)nvs[a];
        for (int r = 0; r < 3; r++) {
          double s = nim->sto_xyz.m[r][3], q = nim->qto_xyz.m[r][3];
          for (int c = 0; c < 3; c++) {
            s += nim->sto_xyz.m[r][c] * ijk[c];
            q += nim->qto_xyz.m[r][c] * ijk[c];
          }
          worst_s = fmax(worst_s, fabs(s - want[r]));
          worst_q = fmax(worst_q, fabs(q - want[r]));
        }
      }
  ck_assert_msg(worst_s < 1e-5, "sform misplaces a voxel by %g mm", worst_s);
  ck_assert_msg(worst_q < 1e-5, "qform misplaces a voxel by %g mm", worst_q);
  nifti_image_free(nim);
  free(img);
}
END_TEST

/* a file from another writer: int16 with slope and intercept, 4-D with one volume, no sform */
START_TEST(test_nifti_foreign)
{
  new_dir();
  int dims8[8] = {4, 4, 3, 2, 1, 1, 1, 1};
  nifti_image *nim = nifti_make_new_nim(dims8, NIFTI_TYPE_INT16, 1);
  ck_assert_ptr_nonnull(nim);
  int16_t *v = nim->data;
  for (int i = 0; i < 24; i++)
    v[i] = (int16_t)(i - 5);
  nim->scl_slope = 2.0f;
  nim->scl_inter = 1.0f;
  nim->dx = nim->pixdim[1] = 0.5f;
  nim->dy = nim->pixdim[2] = 0.75f;
  nim->dz = nim->pixdim[3] = 1.25f;
  nim->qform_code = 1;
  nim->qoffset_x = 10.0f;
  nim->qoffset_y = 20.0f;
  nim->qoffset_z = 30.0f;
  nim->quatern_b = nim->quatern_c = nim->quatern_d = 0.0f;
  nim->qfac = 1.0f;
  nim->qto_xyz = nifti_quatern_to_mat44(0, 0, 0, 10, 20, 30, 0.5f, 0.75f, 1.25f, 1.0f);
  ck_assert_int_eq(nifti_set_filenames(nim, in_dir("foreign.nii"), 0, 1), 0);
  nifti_image_write(nim);
  nifti_image_free(nim);

  float *back = NULL, vs[3], origin[3];
  int dims[3];
  EXPECT(sproj_nifti_read(in_dir("foreign.nii"), &back, dims, vs, origin), SPROJ_OK);
  /* a diagonal qform: i, j, k are axes 0, 1, 2 */
  ck_assert_int_eq(dims[0], 4);
  ck_assert_int_eq(dims[1], 3);
  ck_assert_int_eq(dims[2], 2);
  ck_assert_float_eq(vs[0], 0.5f);
  ck_assert_float_eq(vs[2], 1.25f);
  ck_assert_float_eq(origin[0], 10.0f);
  ck_assert_float_eq(origin[2], 30.0f);
  for (int i = 0; i < 4; i++) /* exact: small integers; file voxel (i, j, k) at i + 4 (j + 3 k) */
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 2; k++)
        ck_assert_msg(back[(i * 3 + j) * 2 + k] == 2.0f * (i + 4 * (j + 3 * k) - 5) + 1.0f, "voxel %d %d %d: %g", i,
                      j, k, back[(i * 3 + j) * 2 + k]);
  sproj_free(back);

  /* two volumes: not an image starproj reads */
  dims8[4] = 2;
  nim = nifti_make_new_nim(dims8, NIFTI_TYPE_FLOAT32, 1);
  ck_assert_int_eq(nifti_set_filenames(nim, in_dir("4d.nii"), 0, 1), 0);
  nifti_image_write(nim);
  nifti_image_free(nim);
  back = (float *)0x1;
  EXPECT(sproj_nifti_read(in_dir("4d.nii"), &back, dims, vs, origin), SPROJ_ERR_FORMAT);
  ck_assert_ptr_eq(back, (float *)0x1);
}
END_TEST

START_TEST(test_nifti_errors)
{
  new_dir();
  float img[7 * 5 * 9] = {0};
  int bad_dims[3] = {7, 0, 9};
  float bad_vs[3] = {1.0f, 0.0f, 1.0f}, bad_origin[3] = {0.0f, NAN, 0.0f};
  EXPECT(sproj_nifti_write(NULL, img, ndims, nvs, norigin, NULL), SPROJ_ERR_NULL);
  EXPECT(sproj_nifti_write(in_dir("a.nii"), NULL, ndims, nvs, norigin, NULL), SPROJ_ERR_NULL);
  EXPECT(sproj_nifti_write(in_dir("a.img"), img, ndims, nvs, norigin, NULL), SPROJ_ERR_INVALID);
  EXPECT(sproj_nifti_write(in_dir("a.nii.gz"), img, ndims, nvs, norigin, NULL), SPROJ_ERR_INVALID);
  EXPECT(sproj_nifti_write(in_dir("a.nii"), img, bad_dims, nvs, norigin, NULL), SPROJ_ERR_DIMS);
  EXPECT(sproj_nifti_write(in_dir("a.nii"), img, ndims, bad_vs, norigin, NULL), SPROJ_ERR_VOXEL_SIZE);
  EXPECT(sproj_nifti_write(in_dir("a.nii"), img, ndims, nvs, bad_origin, NULL), SPROJ_ERR_NONFINITE);
  ck_assert_int_eq(count_entries(dir), 0);

  float *data = (float *)0x1, vs[3] = {-1, -1, -1};
  int dims[3] = {-1, -1, -1};
  EXPECT(sproj_nifti_read(in_dir("missing.nii"), &data, dims, vs, NULL), SPROJ_ERR_IO);
  ck_assert(strstr(sproj_last_error(), "missing.nii") != NULL);
  write_text(in_dir("text.nii"), "this is not an image, but it is long enough to be read as a header? no: it is "
                                 "a sentence of text that goes on for more than three hundred and fifty bytes, "
                                 "so that the reader finds a header's worth of bytes and must look at what they "
                                 "say rather than at how many there are; sizeof_hdr will not be 348 here, nor "
                                 "its byte-swapped twin, and the magic will not be n+1 either........ end.");
  EXPECT(sproj_nifti_read(in_dir("text.nii"), &data, dims, vs, NULL), SPROJ_ERR_FORMAT);
  write_text(in_dir("short.nii"), "tiny");
  EXPECT(sproj_nifti_read(in_dir("short.nii"), &data, dims, vs, NULL), SPROJ_ERR_FORMAT);
  /* a good header with data cut short */
  EXPECT(sproj_nifti_write(in_dir("good.nii"), img, ndims, nvs, norigin, NULL), SPROJ_OK);
  ck_assert_int_eq(truncate(in_dir("good.nii"), 352 + 100), 0);
  EXPECT(sproj_nifti_read(in_dir("good.nii"), &data, dims, vs, NULL), SPROJ_ERR_IO);
  ck_assert_ptr_eq(data, (float *)0x1);
  ck_assert_int_eq(dims[0], -1);
  ck_assert_float_eq(vs[0], -1.0f);
}
END_TEST

/* a write that fails after its temporary file exists leaves nothing behind */
START_TEST(test_failed_writes_leave_nothing)
{
  new_dir();
  float img[7 * 5 * 9] = {0};
  EXPECT(sproj_nifti_write(in_dir("nowhere/a.nii"), img, ndims, nvs, norigin, NULL), SPROJ_ERR_IO);
  ck_assert_int_eq(count_entries(dir), 0);
  /* the target is a folder: the temporary file is written, the rename fails, the temporary goes */
  ck_assert_int_eq(mkdir(in_dir("taken.nii"), 0777), 0);
  EXPECT(sproj_nifti_write(in_dir("taken.nii"), img, ndims, nvs, norigin, NULL), SPROJ_ERR_IO);
  ck_assert_int_eq(count_entries(dir), 1);
  ck_assert_int_eq(count_entries(in_dir("taken.nii")), 0);
  EXPECT(sproj_png_write_image(in_dir("taken.nii"), img, ndims, nvs, NULL), SPROJ_ERR_IO);
  ck_assert_int_eq(count_entries(dir), 1);
  /* raw: "<base>.raw" taken by a folder does not block a write: its data goes to a new name, which the header
   * names (a data file is never written in place) */
  ck_assert_int_eq(mkdir(in_dir("sino.raw"), 0777), 0);
  struct sproj_sino_info info = {.num_dims = 1, .shape = {315}, .axes = {"bin"}};
  EXPECT(sproj_raw_write_sino(in_dir("sino"), &info, img), SPROJ_OK);
  ck_assert_int_eq(count_entries(dir), 4);
  ck_assert_int_ne(strcmp(header_value(in_dir("sino.hdr"), "data_file"), "sino.raw"), 0);
  ck_assert_int_eq(unlink(in_dir(header_value(in_dir("sino.hdr"), "data_file"))), 0);
  ck_assert_int_eq(unlink(in_dir("sino.hdr")), 0);
  /* a good pair, then a rewrite that cannot replace its header (the header's name is a non-empty folder now):
   * both temporary files go, the old data stays */
  EXPECT(sproj_raw_write_sino(in_dir("pair"), &info, img), SPROJ_OK);
  ck_assert_int_eq(count_entries(dir), 4);
  ck_assert_int_eq(unlink(in_dir("pair.hdr")), 0);
  ck_assert_int_eq(mkdir(in_dir("pair.hdr"), 0777), 0);
  ck_assert_int_eq(mkdir(in_dir("pair.hdr/x"), 0777), 0);
  EXPECT(sproj_raw_write_sino(in_dir("pair"), &info, img), SPROJ_ERR_IO);
  ck_assert_int_eq(count_entries(dir), 4);
  /* a read-only folder (only meaningful when not root: root writes anyway) */
  if (geteuid() != 0) {
    ck_assert_int_eq(mkdir(in_dir("ro"), 0555), 0);
    EXPECT(sproj_nifti_write(in_dir("ro/a.nii"), img, ndims, nvs, norigin, NULL), SPROJ_ERR_IO);
    ck_assert_int_eq(count_entries(in_dir("ro")), 0);
    chmod(in_dir("ro"), 0755);
  }
}
END_TEST

/* ---- raw sinograms ----------------------------------------------------------------------------------------- */
static struct sproj_sino_info sino_info(void)
{
  struct sproj_sino_info info;
  memset(&info, 0, sizeof info);
  info.num_dims = 4;
  int64_t shape[4] = {3, 4, 5, 6};
  const char *names[4] = {"plane", "view", "radial", "tof_bin"};
  for (int k = 0; k < 4; k++) {
    info.shape[k] = shape[k];
    strcpy(info.axes[k], names[k]);
  }
  strcpy(info.scanner, "test-ring_2");
  info.num_tof_bins = 6;
  info.tof_bin_width = 25.4f;
  return info;
}

/* back, as read, describes the sinogram info wrote. */
static void expect_sino_info(const struct sproj_sino_info *back, const struct sproj_sino_info *info)
{
  ck_assert_int_eq(back->num_dims, info->num_dims);
  for (int k = 0; k < info->num_dims; k++) {
    ck_assert_int_eq(back->shape[k], info->shape[k]);
    ck_assert_str_eq(back->axes[k], info->axes[k]);
  }
  ck_assert_str_eq(back->scanner, info->scanner);
  ck_assert_int_eq(back->num_tof_bins, info->num_tof_bins);
  ck_assert_msg(back->tof_bin_width == info->tof_bin_width, "bin width %.9g", back->tof_bin_width);
}

START_TEST(test_raw_sino_roundtrip)
{
  new_dir();
  struct sproj_sino_info info = sino_info(), back;
  float data[360], *read = NULL;
  for (int i = 0; i < 360; i++)
    data[i] = (float)(uniform() * 7.0 - 1.0);
  data[7] = NAN;
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, data), SPROJ_OK);
  ck_assert_int_eq(count_entries(dir), 2);
  ck_assert_int_eq(file_size(in_dir("s.raw")), 360 * 4);
  char *text = read_text(in_dir("s.hdr"));
  ck_assert(strstr(text, "format = starproj-raw 1\n"));
  ck_assert(strstr(text, "content = sinogram\n"));
  ck_assert(strstr(text, "shape = 3 4 5 6\n"));
  ck_assert(strstr(text, "axes = plane view radial tof_bin\n"));
  ck_assert(strstr(text, "data_type = float32\n"));
  ck_assert(strstr(text, "data_file = s.raw\n"));
  free(text);
  EXPECT(sproj_raw_read_sino(in_dir("s.hdr"), &back, &read), SPROJ_OK);
  expect_sino_info(&back, &info);
  ck_assert_int_eq(memcmp(read, data, sizeof data), 0);
  sproj_free(read);

  /* the other byte order: a header saying so and swapped bytes read back as the same numbers */
  int little = 1;
  unsigned char probe;
  memcpy(&probe, &little, 1);
  edit_text(in_dir("s.hdr"), probe ? "little-endian" : "big-endian", probe ? "big-endian" : "little-endian");
  FILE *fp = fopen(in_dir("s.raw"), "wb");
  for (int i = 0; i < 360; i++) {
    unsigned char b[4];
    memcpy(b, &data[i], 4);
    unsigned char r[4] = {b[3], b[2], b[1], b[0]};
    fwrite(r, 1, 4, fp);
  }
  fclose(fp);
  EXPECT(sproj_raw_read_sino(in_dir("s"), &back, &read), SPROJ_OK);
  ck_assert_int_eq(memcmp(read, data, sizeof data), 0);
  sproj_free(read);

  /* argument errors write nothing */
  struct sproj_sino_info bad = info;
  bad.shape[2] = 0;
  EXPECT(sproj_raw_write_sino(in_dir("b"), &bad, data), SPROJ_ERR_DIMS);
  bad = info;
  strcpy(bad.axes[1], "two words");
  EXPECT(sproj_raw_write_sino(in_dir("b"), &bad, data), SPROJ_ERR_INVALID);
  bad = info;
  bad.num_dims = 9;
  EXPECT(sproj_raw_write_sino(in_dir("b"), &bad, data), SPROJ_ERR_DIMS);
  bad = info;
  bad.tof_bin_width = -1.0f;
  EXPECT(sproj_raw_write_sino(in_dir("b"), &bad, data), SPROJ_ERR_TOF);
  EXPECT(sproj_raw_write_sino(in_dir("b"), &info, NULL), SPROJ_ERR_NULL);
  EXPECT(sproj_raw_write_sino("", &info, data), SPROJ_ERR_INVALID);
  ck_assert_int_eq(count_entries(dir), 2);
}
END_TEST

/* The header-only readers: the description the full readers give, without the data's memory; a data file of
 * another size, a missing one, or a folder in its place refused as by the full readers. */
START_TEST(test_raw_info)
{
  new_dir();
  struct sproj_sino_info info = sino_info(), back;
  float data[360] = {0};
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, data), SPROJ_OK);
  memset(&back, 0xff, sizeof back);
  EXPECT(sproj_raw_read_sino_info(in_dir("s"), &back), SPROJ_OK);
  expect_sino_info(&back, &info);
  /* one value short: the size is compared; a failed call leaves *info as it was */
  ck_assert_int_eq(truncate(in_dir("s.raw"), 359 * 4), 0);
  struct sproj_sino_info kept = back;
  EXPECT(sproj_raw_read_sino_info(in_dir("s"), &back), SPROJ_ERR_FORMAT);
  ck_assert_int_eq(memcmp(&back, &kept, sizeof back), 0);
  ck_assert_int_eq(unlink(in_dir("s.raw")), 0);
  EXPECT(sproj_raw_read_sino_info(in_dir("s"), &back), SPROJ_ERR_IO);
  ck_assert_int_eq(mkdir(in_dir("s.raw"), 0700), 0);
  EXPECT(sproj_raw_read_sino_info(in_dir("s"), &back), SPROJ_ERR_IO);
  EXPECT(sproj_raw_read_sino_info(NULL, &back), SPROJ_ERR_NULL);
  EXPECT(sproj_raw_read_sino_info(in_dir("s"), NULL), SPROJ_ERR_NULL);

  const int32_t lor[3] = {0, 5, 9};
  struct sproj_lm_info lm = {.num_events = 3, .num_lors = 10, .scanner = "small"}, lback;
  EXPECT(sproj_raw_write_listmode(in_dir("lm"), &lm, lor, NULL), SPROJ_OK);
  EXPECT(sproj_raw_read_listmode_info(in_dir("lm"), &lback), SPROJ_OK);
  ck_assert_int_eq(lback.num_events, 3);
  ck_assert_int_eq(lback.num_lors, 10);
  ck_assert_str_eq(lback.scanner, "small");
  ck_assert_int_eq(truncate(in_dir("lm.raw"), 2 * 8), 0);
  EXPECT(sproj_raw_read_listmode_info(in_dir("lm"), &lback), SPROJ_ERR_FORMAT);
  EXPECT(sproj_raw_read_listmode_info(in_dir("lm"), NULL), SPROJ_ERR_NULL);
}
END_TEST

/* Each corruption of a good pair gives the documented status and changes neither output. */
START_TEST(test_raw_corrupt)
{
  new_dir();
  struct sproj_sino_info info = sino_info();
  float data[360] = {0};
  EXPECT(sproj_raw_write_sino(in_dir("good"), &info, data), SPROJ_OK);
  struct {
    const char *old, *new;
    int status;
  } cases[] = {
    {"shape = 3 4 5 6\n", "", SPROJ_ERR_FORMAT},                      /* missing key */
    {"data_type = float32", "data_type = int16", SPROJ_ERR_FORMAT},   /* wrong type */
    {"shape = 3 4 5 6", "shape = 3 4 5 7", SPROJ_ERR_FORMAT},         /* size differs from the file's */
    {"shape = 3 4 5 6", "shape = 3 4 -5 6", SPROJ_ERR_FORMAT},        /* negative size */
    {"shape = 3 4 5 6", "shape = 3 4 5x 6", SPROJ_ERR_FORMAT},        /* not a number */
    {"shape = 3 4 5 6", "shape = 9223372036854775807 4 5 6", SPROJ_ERR_OVERFLOW},
    {"axes = plane view radial tof_bin", "axes = plane view", SPROJ_ERR_FORMAT},
    {"content = sinogram", "content = listmode", SPROJ_ERR_FORMAT},
    {"format = starproj-raw 1", "format = starproj-raw 2", SPROJ_ERR_FORMAT},
    {"byte_order = ", "byte_order = middle-", SPROJ_ERR_FORMAT},
    {"data_file = good.raw", "data_file = ../good.raw", SPROJ_ERR_FORMAT},
    {"data_file = good.raw", "data_file = gone.raw", SPROJ_ERR_IO},  /* missing data file */
    {"num_tof_bins = 6", "num_tof_bins = many", SPROJ_ERR_FORMAT},
    {"content = sinogram\n", "content = sinogram\ncontent = sinogram\n", SPROJ_ERR_FORMAT}, /* repeated */
    {"content = sinogram\n", "content sinogram\n", SPROJ_ERR_FORMAT}, /* not key = value */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    copy_file(in_dir("good.hdr"), in_dir("bad.hdr"));
    edit_text(in_dir("bad.hdr"), "data_file = good.raw", "data_file = good.raw"); /* still points at good.raw */
    edit_text(in_dir("bad.hdr"), cases[c].old, cases[c].new);
    struct sproj_sino_info out;
    memset(&out, 0x5a, sizeof out);
    float *read = (float *)0x1;
    int rc = sproj_raw_read_sino(in_dir("bad"), &out, &read);
    ck_assert_msg(rc == cases[c].status, "case %zu ('%s'): %d (%s), expected %d", c, cases[c].new, rc,
                  sproj_last_error(), cases[c].status);
    ck_assert_ptr_eq(read, (float *)0x1);
    ck_assert_int_eq(out.num_dims, 0x5a5a5a5a);
  }
  /* data file cut short or too long, missing header, binary garbage header */
  float *read = (float *)0x1;
  struct sproj_sino_info out;
  ck_assert_int_eq(truncate(in_dir("good.raw"), 360 * 4 - 4), 0);
  EXPECT(sproj_raw_read_sino(in_dir("good"), &out, &read), SPROJ_ERR_FORMAT);
  ck_assert_int_eq(truncate(in_dir("good.raw"), 360 * 4 + 1), 0);
  EXPECT(sproj_raw_read_sino(in_dir("good"), &out, &read), SPROJ_ERR_FORMAT);
  EXPECT(sproj_raw_read_sino(in_dir("none"), &out, &read), SPROJ_ERR_IO);
  FILE *fp = fopen(in_dir("bin.hdr"), "wb");
  for (int i = 0; i < 1000; i++)
    fputc((int)(uniform() * 256), fp);
  fclose(fp);
  EXPECT(sproj_raw_read_sino(in_dir("bin"), &out, &read), SPROJ_ERR_FORMAT);
  EXPECT(sproj_raw_read_sino(NULL, &out, &read), SPROJ_ERR_NULL);
  ck_assert_ptr_eq(read, (float *)0x1);
}
END_TEST

/* ---- raw listmode ------------------------------------------------------------------------------------------ */
START_TEST(test_raw_listmode)
{
  new_dir();
  enum { N = 1000 };
  int32_t lor[N];
  int16_t bin[N];
  for (int e = 0; e < N; e++) {
    lor[e] = (int32_t)(uniform() * 70000);
    bin[e] = (int16_t)(uniform() * 29);
  }
  struct sproj_lm_info info = {.num_events = N, .num_lors = 70000, .scanner = "vision600", .num_tof_bins = 29,
                               .tof_bin_width = 25.4f};
  EXPECT(sproj_raw_write_listmode(in_dir("lm"), &info, lor, bin), SPROJ_OK);
  ck_assert_int_eq(file_size(in_dir("lm.raw")), N * 8);
  char *text = read_text(in_dir("lm.hdr"));
  ck_assert(strstr(text, "fields = lor tof_bin\n"));
  ck_assert(strstr(text, "shape = 1000 2\n"));
  ck_assert(strstr(text, "data_type = int32\n"));
  free(text);
  struct sproj_lm_info back;
  int32_t *rl = NULL;
  int16_t *rb = NULL;
  EXPECT(sproj_raw_read_listmode(in_dir("lm"), &back, &rl, &rb), SPROJ_OK);
  ck_assert_int_eq(back.num_events, N);
  ck_assert_int_eq(back.num_lors, 70000);
  ck_assert_int_eq(back.num_tof_bins, 29);
  ck_assert_str_eq(back.scanner, "vision600");
  ck_assert_int_eq(memcmp(rl, lor, sizeof lor), 0);
  ck_assert_int_eq(memcmp(rb, bin, sizeof bin), 0);
  sproj_free(rl);
  sproj_free(rb);

  /* non-TOF without bins: every bin reads back as 0; bins not wanted: NULL is fine */
  struct sproj_lm_info plain = {.num_events = N, .num_lors = 70000};
  EXPECT(sproj_raw_write_listmode(in_dir("plain"), &plain, lor, NULL), SPROJ_OK);
  EXPECT(sproj_raw_read_listmode(in_dir("plain"), &back, &rl, &rb), SPROJ_OK);
  for (int e = 0; e < N; e++)
    ck_assert_int_eq(rb[e], 0);
  sproj_free(rl);
  sproj_free(rb);
  EXPECT(sproj_raw_read_listmode(in_dir("plain"), &back, &rl, NULL), SPROJ_OK);
  sproj_free(rl);

  /* an empty list */
  struct sproj_lm_info empty = {.num_events = 0, .num_lors = 10};
  EXPECT(sproj_raw_write_listmode(in_dir("empty"), &empty, NULL, NULL), SPROJ_OK);
  rl = (int32_t *)0x1;
  EXPECT(sproj_raw_read_listmode(in_dir("empty"), &back, &rl, &rb), SPROJ_OK);
  ck_assert_int_eq(back.num_events, 0);
  ck_assert_ptr_null(rl);
  ck_assert_ptr_null(rb);

  /* out-of-range events are refused when written, and reported when a file holds them */
  int32_t saved = lor[10];
  lor[10] = 70000;
  EXPECT(sproj_raw_write_listmode(in_dir("bad"), &info, lor, bin), SPROJ_ERR_RANGE);
  lor[10] = saved;
  bin[3] = 29;
  EXPECT(sproj_raw_write_listmode(in_dir("bad"), &info, lor, bin), SPROJ_ERR_RANGE);
  bin[3] = 0;
  ck_assert(!exists(in_dir("bad.hdr")) && !exists(in_dir("bad.raw")));
  edit_text(in_dir("lm.hdr"), "num_lors = 70000", "num_lors = 100");
  rl = (int32_t *)0x1;
  EXPECT(sproj_raw_read_listmode(in_dir("lm"), &back, &rl, &rb), SPROJ_ERR_FORMAT);
  ck_assert_ptr_eq(rl, (int32_t *)0x1);
  edit_text(in_dir("lm.hdr"), "num_lors = 100", "num_lors = 70000");
  edit_text(in_dir("lm.hdr"), "fields = lor tof_bin", "fields = ring_a det_a");
  EXPECT(sproj_raw_read_listmode(in_dir("lm"), &back, &rl, &rb), SPROJ_ERR_FORMAT);
  /* a sinogram header is not a listmode header */
  struct sproj_sino_info s = sino_info();
  float data[360] = {0};
  EXPECT(sproj_raw_write_sino(in_dir("sino"), &s, data), SPROJ_OK);
  EXPECT(sproj_raw_read_listmode(in_dir("sino"), &back, &rl, &rb), SPROJ_ERR_FORMAT);
  ck_assert_ptr_eq(rl, (int32_t *)0x1);
}
END_TEST

/* ---- inputs that are not regular files, sizes, atomic pairs, temporaries ------------------------------------ */
/* entries of the test folder whose names start with prefix */
static int count_prefixed(const char *prefix)
{
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  closedir(d);
  return n;
}

/* the id of a process that has just ended (a child, reaped) */
static pid_t dead_pid(void)
{
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0)
    _exit(0);
  ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
  return pid;
}

/* a call fails with status, and its message says words */
#define EXPECT_ERROR(call, status, words)                                                                        \
  do {                                                                                                           \
    int rc_ = (call);                                                                                            \
    ck_assert_msg(rc_ == (status), "%s returned %d (%s), expected %d", #call, rc_, sproj_last_error(), (status)); \
    ck_assert_msg(strstr(sproj_last_error(), (words)) != NULL, "%s: '%s' does not say '%s'", #call,              \
                  sproj_last_error(), (words));                                                                  \
  } while (0)

/* Every reader refuses at once what is not a regular file: the FIFO would block open() for ever, were it opened
 * the usual way (this test would then run into its timeout). */
START_TEST(test_inputs_not_files)
{
  new_dir();
  struct sproj_sino_info info = sino_info(), out;
  struct sproj_lm_info lm = {.num_events = 4, .num_lors = 10}, lm_out;
  float data[360] = {0}, *read = (float *)0x1, vs[3];
  int32_t lor[4] = {1, 2, 3, 4}, *rl = (int32_t *)0x1;
  int16_t *rb = NULL;
  int dims[3];
  ck_assert_int_eq(mkfifo(in_dir("fifo.hdr"), 0600), 0);
  ck_assert_int_eq(mkfifo(in_dir("fifo.raw"), 0600), 0);
  ck_assert_int_eq(mkfifo(in_dir("fifo.nii"), 0600), 0);
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("fifo"), &out, &read), SPROJ_ERR_IO, "is a FIFO, not a regular file");
  EXPECT_ERROR(sproj_raw_read_listmode(in_dir("fifo"), &lm_out, &rl, &rb), SPROJ_ERR_IO, "is a FIFO");
  EXPECT_ERROR(sproj_nifti_read(in_dir("fifo.nii"), &read, dims, vs, NULL), SPROJ_ERR_IO, "is a FIFO");
  /* a good header whose data file is a FIFO */
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, data), SPROJ_OK);
  edit_text(in_dir("s.hdr"), "data_file = s.raw", "data_file = fifo.raw");
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("s"), &out, &read), SPROJ_ERR_IO, "fifo.raw' is a FIFO");
  EXPECT(sproj_raw_write_listmode(in_dir("lm"), &lm, lor, NULL), SPROJ_OK);
  edit_text(in_dir("lm.hdr"), "data_file = lm.raw", "data_file = fifo.raw");
  EXPECT_ERROR(sproj_raw_read_listmode(in_dir("lm"), &lm_out, &rl, &rb), SPROJ_ERR_IO, "fifo.raw' is a FIFO");
  /* folders */
  ck_assert_int_eq(mkdir(in_dir("folder.hdr"), 0777), 0);
  ck_assert_int_eq(mkdir(in_dir("folder.nii"), 0777), 0);
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("folder"), &out, &read), SPROJ_ERR_IO, "is a folder");
  EXPECT_ERROR(sproj_nifti_read(in_dir("folder.nii"), &read, dims, vs, NULL), SPROJ_ERR_IO, "is a folder");
  edit_text(in_dir("s.hdr"), "data_file = fifo.raw", "data_file = folder.hdr");
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("s"), &out, &read), SPROJ_ERR_IO, "is a folder");
  /* a device, directly and through a link */
  EXPECT_ERROR(sproj_nifti_read("/dev/null", &read, dims, vs, NULL), SPROJ_ERR_IO, "is a character device");
  ck_assert_int_eq(symlink("/dev/null", in_dir("null.hdr")), 0);
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("null"), &out, &read), SPROJ_ERR_IO, "is a character device");
  /* a symbolic link loop, as header, as data file and as image */
  ck_assert_int_eq(symlink("loop.hdr", in_dir("loop.hdr")), 0);
  ck_assert_int_eq(symlink("loop.nii", in_dir("loop.nii")), 0);
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("loop"), &out, &read), SPROJ_ERR_IO, strerror(ELOOP));
  edit_text(in_dir("s.hdr"), "data_file = folder.hdr", "data_file = loop.hdr");
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("s"), &out, &read), SPROJ_ERR_IO, strerror(ELOOP));
  EXPECT_ERROR(sproj_nifti_read(in_dir("loop.nii"), &read, dims, vs, NULL), SPROJ_ERR_IO, strerror(ELOOP));
  /* data_file may not leave the header's folder */
  edit_text(in_dir("s.hdr"), "data_file = loop.hdr", "data_file = ..");
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("s"), &out, &read), SPROJ_ERR_FORMAT, "not a file name in its folder");
  ck_assert_ptr_eq(read, (float *)0x1);
  ck_assert_ptr_eq(rl, (int32_t *)0x1);
}
END_TEST

/* the peak resident memory of this process, in MiB */
static long peak_mib(void)
{
  struct rusage ru;
  ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
  return ru.ru_maxrss / 1024;
}

/* Sizes are compared before memory is reserved: a huge sparse file, a small file claiming a huge shape, a header
 * too large to be one. */
START_TEST(test_raw_sizes)
{
  new_dir();
  long before = peak_mib();
  struct sproj_sino_info info = {.num_dims = 1, .shape = {16}, .axes = {"bin"}}, out;
  float data[16] = {0}, *read = (float *)0x1;
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, data), SPROJ_OK);
  /* 2 GiB of sparse data behind a 64-byte shape */
  ck_assert_int_eq(truncate(in_dir("s.raw"), (off_t)1 << 31), 0);
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("s"), &out, &read), SPROJ_ERR_FORMAT, "has 2147483648 bytes");
  /* 64 bytes behind a shape of 2^40 floats */
  ck_assert_int_eq(truncate(in_dir("s.raw"), 64), 0);
  edit_text(in_dir("s.hdr"), "shape = 16", "shape = 1099511627776");
  EXPECT_ERROR(sproj_raw_read_sino(in_dir("s"), &out, &read), SPROJ_ERR_FORMAT, "has 64 bytes");
  /* listmode: 2^40 events claimed, 8 bytes there */
  struct sproj_lm_info lm = {.num_events = 1, .num_lors = 10}, lm_out;
  int32_t lor[1] = {3}, *rl = (int32_t *)0x1;
  EXPECT(sproj_raw_write_listmode(in_dir("lm"), &lm, lor, NULL), SPROJ_OK);
  edit_text(in_dir("lm.hdr"), "shape = 1 2", "shape = 1099511627776 2");
  EXPECT_ERROR(sproj_raw_read_listmode(in_dir("lm"), &lm_out, &rl, NULL), SPROJ_ERR_FORMAT, "has 8 bytes");
  edit_text(in_dir("lm.hdr"), "shape = 1099511627776 2", "shape = 2 2"); /* and one event short */
  EXPECT_ERROR(sproj_raw_read_listmode(in_dir("lm"), &lm_out, &rl, NULL), SPROJ_ERR_FORMAT, "has 8 bytes");
  /* a header of 1 GiB (sparse) is refused by its size alone */
  ck_assert_int_eq(truncate(in_dir("lm.hdr"), (off_t)1 << 30), 0);
  EXPECT_ERROR(sproj_raw_read_listmode(in_dir("lm"), &lm_out, &rl, NULL), SPROJ_ERR_FORMAT,
               "more than a header can have");
  ck_assert_ptr_eq(read, (float *)0x1);
  ck_assert_ptr_eq(rl, (int32_t *)0x1);
  long grown = peak_mib() - before;
  ck_assert_msg(grown < 64, "the peak resident memory grew by %ld MiB", grown);
}
END_TEST

/* A rewrite replaces the pair in one rename: the header names a new data file, the old one is gone. */
/* A full output place (the file size limit of the writing process, as a full disk answers: EFBIG / ENOSPC on write):
 * every writer fails with IO, the pair or image already there stays as it was and reads back, and no temporary is
 * left. Hostile names: a name longer than the system allows is IO, not a crash; a name that is no UTF-8 (bytes
 * 0xff 0xfe) is a name like any other. */
START_TEST(test_full_disk_and_names)
{
  new_dir();
  struct sproj_sino_info info = {.num_dims = 1, .shape = {4096}, .axes = {"bin"}}, out;
  float *v = malloc(4096 * sizeof *v), *read = NULL;
  for (int i = 0; i < 4096; i++)
    v[i] = (float)i;
  const int dims[3] = {16, 16, 16};
  const float vs[3] = {1, 1, 1}, origin[3] = {0, 0, 0};
  float *img = calloc(4096, sizeof *img);
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, v), SPROJ_OK);
  EXPECT(sproj_nifti_write(in_dir("x.nii"), img, dims, vs, origin, NULL), SPROJ_OK);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    /* the child's files may not grow past 2 KiB: its writes then fail as on a full disk */
    struct rlimit lim = {2048, 2048};
    signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
      _exit(3);
    for (int i = 0; i < 4096; i++)
      v[i] = -1.0f;
    int a = sproj_raw_write_sino(in_dir("s"), &info, v), b = sproj_nifti_write(in_dir("x.nii"), v, dims, vs, origin,
                                                                               NULL);
    _exit(a == SPROJ_ERR_IO && b == SPROJ_ERR_IO ? 0 : 1);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a write to a full place did not fail with IO (%d)",
                status);
  EXPECT(sproj_raw_read_sino(in_dir("s"), &out, &read), SPROJ_OK);
  ck_assert_float_eq(read[4095], 4095.0f);
  sproj_free(read);
  int n[3];
  float vs_back[3];
  EXPECT(sproj_nifti_read(in_dir("x.nii"), &read, n, vs_back, NULL), SPROJ_OK);
  ck_assert_float_eq(read[0], 0.0f);
  sproj_free(read);
  ck_assert_int_eq(count_entries(dir), 3); /* s.hdr, s.raw, x.nii: no temporary left */
  /* names */
  char longname[400];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  EXPECT(sproj_raw_write_sino(in_dir(longname), &info, v), SPROJ_ERR_IO);
  EXPECT(sproj_raw_read_sino(in_dir(longname), &out, &read), SPROJ_ERR_IO);
  const char odd[] = {'o', (char)0xff, (char)0xfe, 'k', '\0'};
  EXPECT(sproj_raw_write_sino(in_dir(odd), &info, v), SPROJ_OK);
  EXPECT(sproj_raw_read_sino(in_dir(odd), &out, &read), SPROJ_OK);
  ck_assert_float_eq(read[7], 7.0f);
  sproj_free(read);
  free(v);
  free(img);
}
END_TEST

/* An sform whose first column is an axis but whose second is empty is no permutation: the image is read in index
 * order (as the header documents), never with a half-made axis mapping (the NIfTI fuzz target found a header of that
 * kind that made the reader write past its array). */
START_TEST(test_nifti_partial_permutation)
{
  new_dir();
  const int dims[3] = {4, 3, 2};
  const float vs[3] = {1, 1, 1}, origin[3] = {0, 0, 0};
  float img[24], *back = NULL, vs_back[3];
  for (int i = 0; i < 24; i++)
    img[i] = (float)i;
  EXPECT(sproj_nifti_write(in_dir("p.nii"), img, dims, vs, origin, NULL), SPROJ_OK);
  FILE *fp = fopen(in_dir("p.nii"), "r+b");
  ck_assert_ptr_nonnull(fp);
  const int16_t codes[2] = {0, 1}; /* qform_code 0, sform_code 1 */
  const float srow[12] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
  ck_assert_int_eq(fseek(fp, 252, SEEK_SET), 0);
  ck_assert_int_eq(fwrite(codes, sizeof codes, 1, fp), 1);
  ck_assert_int_eq(fseek(fp, 280, SEEK_SET), 0);
  ck_assert_int_eq(fwrite(srow, sizeof srow, 1, fp), 1);
  ck_assert_int_eq(fclose(fp), 0);
  int n[3];
  EXPECT(sproj_nifti_read(in_dir("p.nii"), &back, n, vs_back, NULL), SPROJ_OK);
  ck_assert_msg(n[0] == 4 && n[1] == 3 && n[2] == 2, "dims %d %d %d", n[0], n[1], n[2]);
  ck_assert_int_eq(memcmp(back, img, sizeof img), 0);
  sproj_free(back);
}
END_TEST

START_TEST(test_pair_atomic)
{
  new_dir();
  struct sproj_sino_info info = {.num_dims = 1, .shape = {16}, .axes = {"bin"}}, out;
  float a[16], b[16], *read = NULL;
  for (int i = 0; i < 16; i++) {
    a[i] = (float)i;
    b[i] = (float)(100 - i);
  }
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, a), SPROJ_OK);
  ck_assert_str_eq(header_value(in_dir("s.hdr"), "data_file"), "s.raw");
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, b), SPROJ_OK);
  char second[256], want[64];
  snprintf(second, sizeof second, "%s", header_value(in_dir("s.hdr"), "data_file"));
  snprintf(want, sizeof want, "s.raw.%ld-", (long)getpid());
  ck_assert_msg(strncmp(second, want, strlen(want)) == 0, "data_file = %s", second);
  ck_assert(!exists(in_dir("s.raw")));
  ck_assert(exists(in_dir(second)));
  ck_assert_int_eq(count_entries(dir), 2);
  EXPECT(sproj_raw_read_sino(in_dir("s"), &out, &read), SPROJ_OK);
  ck_assert_int_eq(memcmp(read, b, sizeof b), 0);
  sproj_free(read);
  /* the third write finds s.raw free again; the second's data goes */
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, a), SPROJ_OK);
  ck_assert_str_eq(header_value(in_dir("s.hdr"), "data_file"), "s.raw");
  ck_assert(!exists(in_dir(second)));
  ck_assert_int_eq(count_entries(dir), 2);
  EXPECT(sproj_raw_read_sino(in_dir("s"), &out, &read), SPROJ_OK);
  ck_assert_int_eq(memcmp(read, a, sizeof a), 0);
  sproj_free(read);
  /* a failed rewrite (the header cannot be replaced: its name is a non-empty folder now) keeps what was there */
  ck_assert_int_eq(unlink(in_dir("s.hdr")), 0);
  ck_assert_int_eq(mkdir(in_dir("s.hdr"), 0777), 0);
  ck_assert_int_eq(mkdir(in_dir("s.hdr/x"), 0777), 0);
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, b), SPROJ_ERR_IO);
  ck_assert_int_eq(count_entries(dir), 2);
  ck_assert(exists(in_dir("s.raw")));
  /* a data file the old header names but this writer would not have named is not removed */
  rmdir(in_dir("s.hdr/x"));
  rmdir(in_dir("s.hdr"));
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, a), SPROJ_OK);
  char third[256], line[300];
  snprintf(third, sizeof third, "%s", header_value(in_dir("s.hdr"), "data_file"));
  ck_assert_int_eq(rename(in_dir(third), in_dir("shared.dat")), 0);
  snprintf(line, sizeof line, "data_file = %s", third);
  edit_text(in_dir("s.hdr"), line, "data_file = shared.dat");
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, b), SPROJ_OK);
  ck_assert(exists(in_dir("shared.dat")));
  ck_assert_str_eq(header_value(in_dir("s.hdr"), "data_file"), "s.raw");
}
END_TEST

/* What writes killed before they could clean up left is removed by the next write of the same target, if its
 * process no longer exists; a live process's files stay. */
START_TEST(test_stale_temporaries)
{
  new_dir();
  long dead = (long)dead_pid(), alive = (long)getppid();
  char name[128];
  struct sproj_sino_info info = {.num_dims = 1, .shape = {16}, .axes = {"bin"}};
  float a[16] = {0};
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, a), SPROJ_OK);
  snprintf(name, sizeof name, ".s.hdr.tmp-%ld-3", dead);
  write_text(in_dir(name), "half a header");
  snprintf(name, sizeof name, "s.raw.%ld-4", dead); /* data of a write killed before its header's rename */
  write_text(in_dir(name), "data nothing names");
  snprintf(name, sizeof name, ".x.nii.tmp-%ld-0", dead);
  write_text(in_dir(name), "half an image");
  snprintf(name, sizeof name, ".x.nii.tmp-%ld-1", alive);
  write_text(in_dir(name), "an image under way");
  snprintf(name, sizeof name, ".other.nii.tmp-%ld-2", dead); /* another target's: not this write's business */
  write_text(in_dir(name), "half another image");
  ck_assert_int_eq(count_entries(dir), 7);
  EXPECT(sproj_raw_write_sino(in_dir("s"), &info, a), SPROJ_OK);
  ck_assert_int_eq(count_prefixed(".s.hdr.tmp-"), 0);
  ck_assert_int_eq(count_prefixed("s.raw"), 1);
  ck_assert_int_eq(count_entries(dir), 5);
  float img[7 * 5 * 9] = {0};
  EXPECT(sproj_nifti_write(in_dir("x.nii"), img, ndims, nvs, norigin, NULL), SPROJ_OK);
  ck_assert_int_eq(count_prefixed(".x.nii.tmp-"), 1); /* the live process's */
  ck_assert_int_eq(count_prefixed(".other.nii.tmp-"), 1);
  ck_assert_int_eq(count_entries(dir), 5);
}
END_TEST

/* A child writes a large sinogram again and again; it is stopped while a write is under way (its header's
 * temporary exists), then interrupted: by SIGUSR1, whose handler calls sproj_io_remove_temporaries and exits, or
 * by SIGKILL. Afterwards the folder holds a pair that reads back (or nothing, if the first write was cut); after
 * SIGUSR1 nothing else (neither the temporary nor the new data: the header is not renamed yet), after SIGKILL at
 * most one temporary and one data file nobody names, which the next write removes. (Handlers used to leave the
 * new data when they came in the instant between its leaving the registry and the header's rename; the child is
 * stopped at random, so this test would find that only rarely: check_programs.sh signals at that instant.) */
enum { BIG = 1 << 22 };
static void on_usr1(int sig)
{
  (void)sig;
  sproj_io_remove_temporaries();
  _exit(0);
}

static void interrupted_writer(int sig)
{
  new_dir();
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    alarm(60); /* should this test fail before it ends the child, the child ends anyway */
    signal(SIGUSR1, on_usr1);
    struct sproj_sino_info info = {.num_dims = 2, .shape = {BIG / 1024, 1024}, .axes = {"view", "bin"}};
    float *v = calloc(BIG, sizeof *v);
    for (int round = 0;; round++) {
      v[0] = (float)round;
      if (sproj_raw_write_sino(in_dir("big"), &info, v) != SPROJ_OK)
        _exit(3);
    }
  }
  int caught = 0;
  for (int tries = 0; !caught && tries < 20000; tries++) {
    if (count_prefixed(".big.hdr.tmp-") == 0) {
      usleep(500);
      continue;
    }
    kill(child, SIGSTOP);
    int status;
    ck_assert_int_eq(waitpid(child, &status, WUNTRACED), child);
    caught = count_prefixed(".big.hdr.tmp-") == 1;
    if (caught)
      kill(child, sig);
    kill(child, SIGCONT);
  }
  ck_assert_msg(caught, "the writer was never caught in a write");
  int status;
  ck_assert_int_eq(waitpid(child, &status, 0), child);
  if (sig == SIGUSR1)
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer ended with status %#x", status);
  else
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  int pairs = exists(in_dir("big.hdr"));
  if (pairs) {
    struct sproj_sino_info out;
    float *read = NULL;
    EXPECT(sproj_raw_read_sino(in_dir("big"), &out, &read), SPROJ_OK);
    ck_assert_int_eq(out.shape[1], 1024);
    sproj_free(read);
  }
  int temporaries = count_prefixed(".big."), others = count_entries(dir) - 2 * pairs - temporaries;
  if (sig == SIGUSR1)
    ck_assert_msg(temporaries == 0 && others == 0, "%d temporaries and %d other files left", temporaries, others);
  ck_assert_msg(temporaries <= 1 && others <= 1, "%d temporaries and %d other files left", temporaries, others);
  /* the next write cleans up: the writer's pid is dead now */
  struct sproj_sino_info small = {.num_dims = 1, .shape = {4}, .axes = {"bin"}};
  float four[4] = {1, 2, 3, 4};
  EXPECT(sproj_raw_write_sino(in_dir("big"), &small, four), SPROJ_OK);
  ck_assert_int_eq(count_entries(dir), 2);
}

START_TEST(test_remove_temporaries_on_signal)
{
  interrupted_writer(SIGUSR1);
}
END_TEST

START_TEST(test_killed_writer)
{
  interrupted_writer(SIGKILL);
}
END_TEST

/* sproj_io_remove_temporaries called again and again from one thread while three others rewrite their pairs (a
 * handler on another thread, without the exit): each write succeeds or fails with IO, and whatever happens, every
 * header left names data that reads back, and no temporary or data file that no header names stays. */
enum { WRITERS = 3, ROUNDS = 40 };
static atomic_int writers_left;

static void *rewrite_pair(void *arg)
{
  long id = (long)arg;
  char base[300];
  snprintf(base, sizeof base, "%s/w%ld", dir, id);
  struct sproj_sino_info info = {.num_dims = 1, .shape = {1 << 14}, .axes = {"bin"}};
  float *v = calloc(1 << 14, sizeof *v);
  long failures = 0;
  for (int round = 0; round < ROUNDS; round++) {
    v[0] = (float)round;
    int rc = sproj_raw_write_sino(base, &info, v);
    if (rc != SPROJ_OK && rc != SPROJ_ERR_IO)
      failures += 1000; /* another status would be a bug */
    failures += rc == SPROJ_ERR_IO;
  }
  free(v);
  atomic_fetch_sub(&writers_left, 1);
  return (void *)failures;
}

START_TEST(test_remove_temporaries_concurrent)
{
  new_dir();
  atomic_store(&writers_left, WRITERS);
  pthread_t t[WRITERS];
  for (long i = 0; i < WRITERS; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, rewrite_pair, (void *)i), 0);
  long removals = 0;
  while (atomic_load(&writers_left) > 0) {
    sproj_io_remove_temporaries();
    removals++;
    usleep(3000); /* some writes complete between two calls, some do not */
  }
  long failed = 0;
  for (int i = 0; i < WRITERS; i++) {
    void *r;
    ck_assert_int_eq(pthread_join(t[i], &r), 0);
    ck_assert_msg((long)r < 1000, "a write failed with a status other than IO");
    failed += (long)r;
  }
  int pairs = 0;
  for (int i = 0; i < WRITERS; i++) {
    char base[32], hdr[40];
    snprintf(base, sizeof base, "w%d", i);
    snprintf(hdr, sizeof hdr, "w%d.hdr", i);
    if (!exists(in_dir(hdr)))
      continue;
    struct sproj_sino_info out;
    float *read = NULL;
    EXPECT(sproj_raw_read_sino(in_dir(base), &out, &read), SPROJ_OK);
    sproj_free(read);
    pairs++;
  }
  ck_assert_int_eq(count_entries(dir), 2 * pairs);
  ck_assert_msg(pairs > 0 || failed == WRITERS * ROUNDS, "%d pairs", pairs);
  printf("test_remove_temporaries_concurrent: %ld of %d writes failed (IO) over %ld removals\n", failed,
         WRITERS * ROUNDS, removals);
}
END_TEST

/* ---- NIfTI headers that say what cannot be ------------------------------------------------------------------ */
/* writes a float at byte offset of a file */
static void poke(const char *path, size_t offset, const void *value, size_t bytes)
{
  int fd = open(path, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pwrite(fd, value, bytes, (off_t)offset), (ssize_t)bytes);
  close(fd);
}

static void poke_float(const char *path, size_t offset, float v)
{
  poke(path, offset, &v, sizeof v);
}

/* The file as nibabel reads it, from its bytes alone: shape = dim[1..3], zooms = pixdim[1..3], affine = the sform
 * rows (sform_code > 0), get_fdata()[i, j, k] = the float at vox_offset + 4 (i + n0 (j + n1 k)). A starproj
 * user's image[i][j][k] must be that value, under a diagonal affine: the array is the one parallelproj holds. */
START_TEST(test_nifti_as_nibabel)
{
  new_dir();
  const int n0 = ndims[0], n1 = ndims[1], n2 = ndims[2], n = n0 * n1 * n2;
  float *img = malloc(n * sizeof *img);
  for (int v = 0; v < n; v++)
    img[v] = (float)v; /* each voxel its own value: any transposition shows */
  EXPECT(sproj_nifti_write(in_dir("nib.nii"), img, ndims, nvs, norigin, NULL), SPROJ_OK);
  long size = file_size(in_dir("nib.nii"));
  unsigned char *bytes = malloc((size_t)size);
  FILE *fp = fopen(in_dir("nib.nii"), "rb");
  ck_assert_int_eq(fread(bytes, 1, (size_t)size, fp), (size_t)size);
  fclose(fp);
  struct nifti_1_header h;
  memcpy(&h, bytes, sizeof h);
  ck_assert_int_eq(h.sizeof_hdr, 348);
  ck_assert_int_eq(memcmp(h.magic, "n+1", 4), 0);
  ck_assert_int_eq(h.dim[0], 3);
  ck_assert_int_eq(h.datatype, NIFTI_TYPE_FLOAT32);
  for (int a = 0; a < 3; a++) {
    ck_assert_int_eq(h.dim[a + 1], ndims[a]);
    ck_assert_float_eq(h.pixdim[a + 1], nvs[a]);
  }
  /* sform: diag(vs) with the origin as offset, exactly */
  const float *rows[3] = {h.srow_x, h.srow_y, h.srow_z};
  ck_assert_int_gt(h.sform_code, 0);
  for (int r = 0; r < 3; r++) {
    for (int c = 0; c < 3; c++)
      ck_assert_msg(rows[r][c] == (r == c ? nvs[r] : 0.0f), "srow %d [%d] = %g", r, c, rows[r][c]);
    ck_assert_float_eq(rows[r][3], norigin[r]);
  }
  /* qform: no rotation, qfac +1, the same offset */
  ck_assert_int_gt(h.qform_code, 0);
  ck_assert_msg(h.quatern_b == 0.0f && h.quatern_c == 0.0f && h.quatern_d == 0.0f, "quaternion %g %g %g",
                h.quatern_b, h.quatern_c, h.quatern_d);
  ck_assert_float_eq(h.pixdim[0], 1.0f);
  ck_assert_float_eq(h.qoffset_x, norigin[0]);
  ck_assert_float_eq(h.qoffset_y, norigin[1]);
  ck_assert_float_eq(h.qoffset_z, norigin[2]);
  ck_assert_int_eq((long)h.vox_offset + 4L * n, size);
  for (int i = 0; i < n0; i++)
    for (int j = 0; j < n1; j++)
      for (int k = 0; k < n2; k++) {
        float v;
        memcpy(&v, bytes + (size_t)h.vox_offset + 4 * ((size_t)i + (size_t)n0 * (j + (size_t)n1 * k)), 4);
        ck_assert_msg(v == img[(i * n1 + j) * n2 + k], "file (%d, %d, %d) = %g, image %g", i, j, k, v,
                      img[(i * n1 + j) * n2 + k]);
      }
  float *back = NULL, vs[3], origin[3];
  int dims[3];
  EXPECT(sproj_nifti_read(in_dir("nib.nii"), &back, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(memcmp(back, img, n * sizeof *img), 0);
  sproj_free(back);
  free(bytes);
  free(img);
}
END_TEST

/* Writes a file as starproj wrote them before (i = axis 2, k = axis 0, the affine a permutation, qfac -1, the
 * data in C order), with nifticlib's header as that writer made it. */
static void write_old_layout(const char *path, const float *img)
{
  int ndim[8] = {3, ndims[2], ndims[1], ndims[0], 1, 1, 1, 1};
  nifti_image *nim = nifti_make_new_nim(ndim, NIFTI_TYPE_FLOAT32, 0);
  ck_assert_ptr_nonnull(nim);
  nim->nifti_type = NIFTI_FTYPE_NIFTI1_1;
  nim->dx = nim->pixdim[1] = nvs[2];
  nim->dy = nim->pixdim[2] = nvs[1];
  nim->dz = nim->pixdim[3] = nvs[0];
  nim->xyz_units = NIFTI_UNITS_MM;
  mat44 m;
  memset(&m, 0, sizeof m);
  m.m[0][2] = nvs[0];
  m.m[1][1] = nvs[1];
  m.m[2][0] = nvs[2];
  for (int a = 0; a < 3; a++)
    m.m[a][3] = norigin[a];
  m.m[3][3] = 1.0f;
  nim->sform_code = nim->qform_code = NIFTI_XFORM_SCANNER_ANAT;
  nim->sto_xyz = nim->qto_xyz = m;
  float dx, dy, dz;
  nifti_mat44_to_quatern(m, &nim->quatern_b, &nim->quatern_c, &nim->quatern_d, &nim->qoffset_x, &nim->qoffset_y,
                         &nim->qoffset_z, &dx, &dy, &dz, &nim->qfac);
  nim->iname_offset = 352;
  struct nifti_1_header h = nifti_convert_nim2nhdr(nim);
  nifti_image_free(nim);
  FILE *fp = fopen(path, "wb");
  ck_assert_ptr_nonnull(fp);
  const char extender[4] = {0};
  fwrite(&h, sizeof h, 1, fp);
  fwrite(extender, 1, 4, fp);
  fwrite(img, sizeof *img, (size_t)ndims[0] * ndims[1] * ndims[2], fp);
  ck_assert_int_eq(fclose(fp), 0);
}

/* Files of earlier starproj versions (a permuted affine) read back to the image they were written from, through
 * the sform and, with the sform off, through the qform's quaternion. */
START_TEST(test_nifti_old_layout)
{
  new_dir();
  const int n = ndims[0] * ndims[1] * ndims[2];
  float *img = malloc(n * sizeof *img), *back = NULL, vs[3], origin[3];
  for (int v = 0; v < n; v++)
    img[v] = (float)(v * 3 % 101);
  write_old_layout(in_dir("old.nii"), img);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) {
      short code = 0;
      FILE *fp = fopen(in_dir("old.nii"), "r+b");
      fseek(fp, (long)offsetof(struct nifti_1_header, sform_code), SEEK_SET);
      fwrite(&code, sizeof code, 1, fp);
      fclose(fp);
    }
    int dims[3];
    EXPECT(sproj_nifti_read(in_dir("old.nii"), &back, dims, vs, origin), SPROJ_OK);
    for (int a = 0; a < 3; a++) {
      ck_assert_int_eq(dims[a], ndims[a]);
      ck_assert_msg(vs[a] == nvs[a], "pass %d: voxel size %d: %g, wrote %g", pass, a, vs[a], nvs[a]);
      ck_assert_msg(fabsf(origin[a] - norigin[a]) < 1e-5f, "pass %d: origin %d: %g, wrote %g", pass, a, origin[a],
                    norigin[a]);
    }
    ck_assert_msg(memcmp(back, img, n * sizeof *img) == 0, "pass %d: the image differs", pass);
    sproj_free(back);
  }
  free(img);
}
END_TEST

/* An axis the affine runs against is reversed, the origin then the world position of the file's last voxel along
 * it; an oblique affine leaves the index order and takes the translation as the origin. */
START_TEST(test_nifti_orientations)
{
  new_dir();
  const int n0 = ndims[0], n1 = ndims[1], n2 = ndims[2], n = n0 * n1 * n2;
  float *img = malloc(n * sizeof *img), *back = NULL, vs[3], origin[3];
  for (int v = 0; v < n; v++)
    img[v] = (float)v;
  EXPECT(sproj_nifti_write(in_dir("o.nii"), img, ndims, nvs, norigin, NULL), SPROJ_OK);
  /* x runs against i: srow_x = (-vs0, 0, 0, x of the last voxel), the same world points */
  float flipped[4] = {-nvs[0], 0.0f, 0.0f, norigin[0] + (n0 - 1) * nvs[0]};
  poke(in_dir("o.nii"), offsetof(struct nifti_1_header, srow_x), flipped, sizeof flipped);
  int dims[3];
  EXPECT(sproj_nifti_read(in_dir("o.nii"), &back, dims, vs, origin), SPROJ_OK);
  ck_assert_float_eq(vs[0], nvs[0]);
  ck_assert_float_eq(origin[0], norigin[0]); /* exact here: 1.5 mm steps from -4.5 */
  for (int i = 0; i < n0; i++)
    for (int r = 0; r < n1 * n2; r++)
      ck_assert_float_eq(back[i * n1 * n2 + r], img[(n0 - 1 - i) * n1 * n2 + r]);
  sproj_free(back);
  /* rotated by 30 degrees about z: not applied; the index order, pixdim and the translation */
  float c = cosf(0.5235988f), s = sinf(0.5235988f);
  float rx[4] = {c * nvs[0], -s * nvs[1], 0.0f, 7.0f}, ry[4] = {s * nvs[0], c * nvs[1], 0.0f, 8.0f};
  poke(in_dir("o.nii"), offsetof(struct nifti_1_header, srow_x), rx, sizeof rx);
  poke(in_dir("o.nii"), offsetof(struct nifti_1_header, srow_y), ry, sizeof ry);
  EXPECT(sproj_nifti_read(in_dir("o.nii"), &back, dims, vs, origin), SPROJ_OK);
  for (int a = 0; a < 3; a++) {
    ck_assert_int_eq(dims[a], ndims[a]);
    ck_assert_float_eq(vs[a], nvs[a]);
  }
  ck_assert_float_eq(origin[0], 7.0f);
  ck_assert_float_eq(origin[1], 8.0f);
  ck_assert_float_eq(origin[2], norigin[2]);
  ck_assert_int_eq(memcmp(back, img, n * sizeof *img), 0);
  sproj_free(back);
  free(img);
}
END_TEST

/* Each field a reader needs is checked, and a file that breaks one is FORMAT with the field named, never
 * repaired (nifticlib would make a NaN or 0 voxel size 1 mm and a NaN offset 0). */
START_TEST(test_nifti_bad_fields)
{
  new_dir();
  float img[7 * 5 * 9] = {0};
  EXPECT(sproj_nifti_write(in_dir("good.nii"), img, ndims, nvs, norigin, NULL), SPROJ_OK);
  const size_t pixdim = offsetof(struct nifti_1_header, pixdim), srow_y = offsetof(struct nifti_1_header, srow_y);
  struct {
    size_t offset;
    float value;
    const char *words;
  } cases[] = {
    {pixdim + 4, NAN, "pixdim[1] = nan"},
    {pixdim + 8, 0.0f, "pixdim[2] = 0"},
    {pixdim + 12, INFINITY, "pixdim[3] = inf"},
    {pixdim + 4, -2.0f, "pixdim[1] = -2"},
    {offsetof(struct nifti_1_header, qoffset_x), NAN, "qform"},
    {offsetof(struct nifti_1_header, quatern_c), INFINITY, "qform"},
    {srow_y + 12, NAN, "sform"},
    {offsetof(struct nifti_1_header, vox_offset), 3.0e9f, "beyond the end"},
    {offsetof(struct nifti_1_header, vox_offset), 1.0e30f, "vox_offset"},
    {offsetof(struct nifti_1_header, vox_offset), 348.0f, "vox_offset = 348"},
    {offsetof(struct nifti_1_header, vox_offset), 360.5f, "vox_offset = 360.5"},
    {offsetof(struct nifti_1_header, vox_offset), NAN, "vox_offset = nan"},
    {offsetof(struct nifti_1_header, scl_slope), NAN, "scl_slope"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    copy_file(in_dir("good.nii"), in_dir("bad.nii"));
    poke_float(in_dir("bad.nii"), cases[c].offset, cases[c].value);
    float *data = (float *)0x1, vs[3] = {-1, -1, -1}, origin[3];
    int dims[3] = {-1, -1, -1};
    int rc = sproj_nifti_read(in_dir("bad.nii"), &data, dims, vs, origin);
    ck_assert_msg(rc == SPROJ_ERR_FORMAT && strstr(sproj_last_error(), cases[c].words), "case %zu: %d (%s)", c, rc,
                  sproj_last_error());
    ck_assert_ptr_eq(data, (float *)0x1);
    ck_assert_int_eq(dims[0], -1);
  }
  /* with the sform off, the qform's offset counts: NaN there is FORMAT too; a qform off is not looked at */
  copy_file(in_dir("good.nii"), in_dir("bad.nii"));
  short code = 0;
  poke(in_dir("bad.nii"), offsetof(struct nifti_1_header, sform_code), &code, sizeof code);
  poke_float(in_dir("bad.nii"), offsetof(struct nifti_1_header, qoffset_y), NAN);
  float *data = NULL, vs[3], origin[3];
  int dims[3];
  EXPECT_ERROR(sproj_nifti_read(in_dir("bad.nii"), &data, dims, vs, origin), SPROJ_ERR_FORMAT, "qform");
  poke(in_dir("bad.nii"), offsetof(struct nifti_1_header, qform_code), &code, sizeof code);
  EXPECT(sproj_nifti_read(in_dir("bad.nii"), &data, dims, vs, origin), SPROJ_OK);
  ck_assert_float_eq(origin[0], 0.0f); /* no transform at all: the origin is 0 */
  sproj_free(data);
  /* an extension whose size is no multiple of 16, or runs into the data */
  copy_file(in_dir("good.nii"), in_dir("bad.nii"));
  unsigned char extender[4] = {1, 0, 0, 0};
  poke(in_dir("bad.nii"), 348, extender, 4); /* no room for one (16 bytes) before the data: none, as nifticlib says */
  EXPECT(sproj_nifti_read(in_dir("bad.nii"), &data, dims, vs, origin), SPROJ_OK);
  sproj_free(data);
  poke_float(in_dir("bad.nii"), offsetof(struct nifti_1_header, vox_offset), 400.0f);
  int32_t ext[2] = {24, 0};
  poke(in_dir("bad.nii"), 352, ext, sizeof ext);
  EXPECT_ERROR(sproj_nifti_read(in_dir("bad.nii"), &data, dims, vs, origin), SPROJ_ERR_FORMAT, "has size 24");
  ext[0] = 64;
  poke(in_dir("bad.nii"), 352, ext, sizeof ext);
  EXPECT_ERROR(sproj_nifti_read(in_dir("bad.nii"), &data, dims, vs, origin), SPROJ_ERR_FORMAT, "has size 64");
  ext[0] = 48; /* 352 + 48 = 400: fits; the data is then 48 bytes short of the file's end */
  poke(in_dir("bad.nii"), 352, ext, sizeof ext);
  EXPECT_ERROR(sproj_nifti_read(in_dir("bad.nii"), &data, dims, vs, origin), SPROJ_ERR_IO, "truncated");
  /* no NIfTI magic (ANALYZE 7.5) */
  copy_file(in_dir("good.nii"), in_dir("bad.nii"));
  poke(in_dir("bad.nii"), offsetof(struct nifti_1_header, magic), "\0\0\0\0", 4);
  EXPECT_ERROR(sproj_nifti_read(in_dir("bad.nii"), &data, dims, vs, origin), SPROJ_ERR_FORMAT, "magic");
}
END_TEST

/* A 6 KB file claiming an image of 32 GiB is refused by its size, before any of that is reserved; so is a .gz
 * file, whose data cannot be more than 1032 times its size. */
START_TEST(test_nifti_huge_claim)
{
  new_dir();
  long before = peak_mib();
  float img[7 * 5 * 9] = {0};
  EXPECT(sproj_nifti_write(in_dir("good.nii"), img, ndims, nvs, norigin, NULL), SPROJ_OK);
  ck_assert_int_eq(truncate(in_dir("good.nii"), 6144), 0);
  short dim[8] = {3, 32767, 32767, 8, 1, 1, 1, 1};
  poke(in_dir("good.nii"), offsetof(struct nifti_1_header, dim), dim, sizeof dim);
  float *data = (float *)0x1, vs[3], origin[3];
  int dims[3];
  EXPECT_ERROR(sproj_nifti_read(in_dir("good.nii"), &data, dims, vs, origin), SPROJ_ERR_IO, "is truncated");
  /* the same bytes gzipped */
  char *bytes = malloc(6144);
  FILE *fp = fopen(in_dir("good.nii"), "rb");
  ck_assert_int_eq(fread(bytes, 1, 6144, fp), 6144);
  fclose(fp);
  znzFile z = znzopen(in_dir("huge.nii.gz"), "wb", 1);
  ck_assert(!znz_isnull(z));
  ck_assert_int_eq(znzwrite(bytes, 1, 6144, z), 6144);
  znzclose(z);
  EXPECT_ERROR(sproj_nifti_read(in_dir("huge.nii.gz"), &data, dims, vs, origin), SPROJ_ERR_IO, "uncompressed");
  free(bytes);
  ck_assert_ptr_eq(data, (float *)0x1);
  long grown = peak_mib() - before;
  ck_assert_msg(grown < 64, "the peak resident memory grew by %ld MiB", grown);
}
END_TEST

/* gzip and .hdr/.img pairs read back as the .nii they were made from */
START_TEST(test_nifti_gz_and_pair)
{
  new_dir();
  int n = ndims[0] * ndims[1] * ndims[2];
  float *img = malloc(n * sizeof *img), *back = NULL, vs[3], origin[3];
  for (int i = 0; i < n; i++)
    img[i] = (float)(uniform() * 10.0);
  EXPECT(sproj_nifti_write(in_dir("a.nii"), img, ndims, nvs, norigin, NULL), SPROJ_OK);
  long size = file_size(in_dir("a.nii"));
  char *bytes = malloc((size_t)size);
  FILE *fp = fopen(in_dir("a.nii"), "rb");
  ck_assert_int_eq(fread(bytes, 1, (size_t)size, fp), (size_t)size);
  fclose(fp);
  znzFile z = znzopen(in_dir("a.nii.gz"), "wb", 1);
  ck_assert_int_eq(znzwrite(bytes, 1, (size_t)size, z), (size_t)size);
  znzclose(z);
  int dims[3];
  EXPECT(sproj_nifti_read(in_dir("a.nii.gz"), &back, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(memcmp(back, img, n * sizeof *img), 0);
  ck_assert_float_eq(origin[2], norigin[2]);
  sproj_free(back);
  /* cut short: the stream ends in the data */
  z = znzopen(in_dir("cut.nii.gz"), "wb", 1);
  ck_assert_int_eq(znzwrite(bytes, 1, (size_t)size - 8, z), (size_t)size - 8);
  znzclose(z);
  EXPECT_ERROR(sproj_nifti_read(in_dir("cut.nii.gz"), &back, dims, vs, origin), SPROJ_ERR_IO, "truncated");
  /* a pair: the 348-byte header with magic ni1 and vox_offset 0, the voxels in the .img */
  struct nifti_1_header h;
  memcpy(&h, bytes, sizeof h);
  memcpy(h.magic, "ni1", 4);
  h.vox_offset = 0.0f;
  fp = fopen(in_dir("p.hdr"), "wb");
  fwrite(&h, sizeof h, 1, fp);
  fclose(fp);
  fp = fopen(in_dir("p.img"), "wb");
  fwrite(bytes + 352, 1, (size_t)size - 352, fp);
  fclose(fp);
  EXPECT(sproj_nifti_read(in_dir("p.hdr"), &back, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(memcmp(back, img, n * sizeof *img), 0);
  sproj_free(back);
  /* the same pair gzipped: q.hdr.gz finds q.img.gz */
  z = znzopen(in_dir("q.hdr.gz"), "wb", 1);
  ck_assert_int_eq(znzwrite(&h, 1, sizeof h, z), sizeof h);
  znzclose(z);
  z = znzopen(in_dir("q.img.gz"), "wb", 1);
  ck_assert_int_eq(znzwrite(bytes + 352, 1, (size_t)size - 352, z), (size_t)size - 352);
  znzclose(z);
  EXPECT(sproj_nifti_read(in_dir("q.hdr.gz"), &back, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(memcmp(back, img, n * sizeof *img), 0);
  sproj_free(back);
  /* a pair without its image file */
  EXPECT_ERROR(sproj_nifti_read(in_dir("r.hdr"), &back, dims, vs, origin), SPROJ_ERR_IO, "r.hdr");
  copy_file(in_dir("p.hdr"), in_dir("r.hdr"));
  EXPECT_ERROR(sproj_nifti_read(in_dir("r.hdr"), &back, dims, vs, origin), SPROJ_ERR_IO, "r.img");
  ck_assert_int_eq(unlink(in_dir("p.img")), 0);
  ck_assert_int_eq(mkfifo(in_dir("p.img"), 0600), 0);
  EXPECT_ERROR(sproj_nifti_read(in_dir("p.hdr"), &back, dims, vs, origin), SPROJ_ERR_IO, "is a FIFO");
  free(bytes);
  free(img);
}
END_TEST

/* ---- PNG --------------------------------------------------------------------------------------------------- */
static unsigned char *read_png(const char *path, uint32_t *width, uint32_t *height)
{
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  ck_assert_msg(png_image_begin_read_from_file(&im, path), "libpng: %s", im.message);
  im.format = PNG_FORMAT_GRAY;
  unsigned char *buf = malloc(PNG_IMAGE_SIZE(im));
  ck_assert_msg(png_image_finish_read(&im, NULL, buf, 0, NULL), "libpng: %s", im.message);
  *width = im.width;
  *height = im.height;
  return buf;
}

START_TEST(test_png)
{
  new_dir();
  /* extents 40, 30, 30 mm: the pitch is 40/256 mm, so the transaxial panel is 256 x 192 (columns x rows),
   * coronal 256 x 192, sagittal 192 x 192; with two gaps of 4: 712 x 192 */
  int dims[3] = {20, 30, 10};
  float vs[3] = {2.0f, 1.0f, 3.0f};
  float *img = malloc(6000 * sizeof *img);
  for (int i0 = 0; i0 < 20; i0++)
    for (int j = 0; j < 300; j++)
      img[i0 * 300 + j] = (float)i0; /* a ramp along axis 0 */
  img[0] = NAN;
  EXPECT(sproj_png_write_image(in_dir("img.png"), img, dims, vs, NULL), SPROJ_OK);
  uint32_t w, h;
  unsigned char *px = read_png(in_dir("img.png"), &w, &h);
  ck_assert_int_eq(w, 712);
  ck_assert_int_eq(h, 192);
  /* window 0 .. 99.5th percentile (19 of a 0..19 ramp): transaxial column c shows voxel floor(c*20/256), grey
   * round(255*i0/19) (i0 < 19) or white; the gap is black */
  for (uint32_t c = 0; c < 256; c++) {
    int i0 = (int)((c + 0.5) * 20.0 / 256.0);
    int want = (int)lround(255.0 * i0 / 19.0);
    ck_assert_msg(px[100 * w + c] == want, "column %u: grey %d, expected %d", c, px[100 * w + c], want);
  }
  ck_assert_int_eq(px[100 * w + 257], 0);
  ck_assert_int_eq(px[100 * w + 256 + 4 + 255], 255);
  free(px);
  /* an explicit window */
  float window[2] = {5.0f, 10.0f};
  EXPECT(sproj_png_write_image(in_dir("win.png"), img, dims, vs, window), SPROJ_OK);
  px = read_png(in_dir("win.png"), &w, &h);
  ck_assert_int_eq(px[100 * w + 0], 0);     /* voxel 0 (< 5) */
  ck_assert_int_eq(px[100 * w + 255], 255); /* voxel 19 (> 10) */
  free(px);
  /* chosen slices: the sagittal panel (columns 520 ..) holds axis 0 at 5, all of it the ramp's value 5; the
   * central call holds it at 10 */
  const int slices[3] = {5, 2, 7};
  float ramp[2] = {0.0f, 19.0f};
  EXPECT(sproj_png_write_image_slices(in_dir("sl.png"), img, dims, vs, slices, ramp), SPROJ_OK);
  px = read_png(in_dir("sl.png"), &w, &h);
  ck_assert_int_eq(w, 712);
  ck_assert_int_eq(px[100 * w + 520 + 50], (int)lround(255.0 * 5 / 19.0));
  free(px);
  EXPECT(sproj_png_write_image_slices(in_dir("sl.png"), img, dims, vs, NULL, ramp), SPROJ_OK);
  px = read_png(in_dir("sl.png"), &w, &h);
  ck_assert_int_eq(px[100 * w + 520 + 50], (int)lround(255.0 * 10 / 19.0));
  free(px);
  const int outside[3] = {5, 30, 7};
  EXPECT(sproj_png_write_image_slices(in_dir("bad.png"), img, dims, vs, outside, ramp), SPROJ_ERR_RANGE);
  ck_assert(!exists(in_dir("bad.png")));
  free(img);

  /* a sinogram view: 6 views x 20 radial x 12 planes x 3 TOF bins, axes (view, radial, plane, tof):
   * 8 x 8 blocks: 160 x 96 */
  int64_t shape[4] = {6, 20, 12, 3};
  float *sino = malloc(6000 * sizeof *sino); /* enough for the wide sinogram below too */
  for (int i = 0; i < 6000; i++)
    sino[i] = 1.0f;
  EXPECT(sproj_png_write_sino(in_dir("sino.png"), sino, 4, shape, 0, 1, 2, 5, NULL), SPROJ_OK);
  px = read_png(in_dir("sino.png"), &w, &h);
  ck_assert_int_eq(w, 160);
  ck_assert_int_eq(h, 96);
  ck_assert_int_eq(px[0], 255); /* sums of 3 with window 0 .. 3 */
  free(px);
  /* axes in another order, 3-D: (plane, view, radial) */
  int64_t shape3[3] = {12, 6, 20};
  EXPECT(sproj_png_write_sino(in_dir("sino3.png"), sino, 3, shape3, 1, 2, 0, 0, NULL), SPROJ_OK);
  px = read_png(in_dir("sino3.png"), &w, &h);
  ck_assert_int_eq(w, 160);
  ck_assert_int_eq(h, 96);
  free(px);
  /* more than 2048 radial bins: sampled down to 2048 columns, planes at scale 1 */
  int64_t wide[3] = {1, 3000, 2};
  EXPECT(sproj_png_write_sino(in_dir("wide.png"), sino, 3, wide, 0, 1, 2, 0, NULL), SPROJ_OK);
  px = read_png(in_dir("wide.png"), &w, &h);
  ck_assert_int_eq(w, 2048);
  ck_assert_int_eq(h, 2);
  free(px);
  EXPECT(sproj_png_write_sino(in_dir("x.png"), sino, 4, shape, 0, 1, 2, 6, NULL), SPROJ_ERR_RANGE);
  EXPECT(sproj_png_write_sino(in_dir("x.png"), sino, 4, shape, 0, 1, 1, 0, NULL), SPROJ_ERR_INVALID);
  EXPECT(sproj_png_write_sino(in_dir("x.png"), sino, 5, shape, 0, 1, 2, 0, NULL), SPROJ_ERR_DIMS);
  float inverted[2] = {2.0f, 1.0f};
  EXPECT(sproj_png_write_sino(in_dir("x.png"), sino, 4, shape, 0, 1, 2, 0, inverted), SPROJ_ERR_INVALID);
  ck_assert(!exists(in_dir("x.png")));
  free(sino);
}
END_TEST

/* ---- phantom ----------------------------------------------------------------------------------------------- */
/* sproj_png_auto_window: the 99.5th percentile of the finite values (not the largest), NaN and infinities left
 * out, the fallbacks for data without positive values, and the caller's array untouched. */
START_TEST(test_png_auto_window)
{
  /* 0 .. 1100 in a scrambled order (7 is prime to 1101), with NaN and infinities among them: 1101 finite values,
   * the one at index floor(0.995 * 1100) = 1094 sorted is 1094 (the largest, 1100, would be wrong) */
  enum { N = 1101 + 3 };
  float v[N], copy[N], win[2];
  for (int i = 0; i < 1101; i++)
    v[i] = (float)((i * 7) % 1101);
  v[1101] = NAN;
  v[1102] = INFINITY;
  v[1103] = -INFINITY;
  memcpy(copy, v, sizeof v);
  EXPECT(sproj_png_auto_window(v, N, win), SPROJ_OK);
  ck_assert_float_eq(win[0], 0.0f);
  ck_assert_float_eq(win[1], 1094.0f);
  ck_assert_msg(memcmp(v, copy, sizeof v) == 0, "sproj_png_auto_window changed its input");
  /* one huge value among 0 .. 299 is above the percentile (index floor(298.5) of 301): it does not wash the rest
   * out */
  float hot[301];
  for (int i = 0; i < 300; i++)
    hot[i] = (float)i;
  hot[300] = 1e30f;
  EXPECT(sproj_png_auto_window(hot, 301, win), SPROJ_OK);
  ck_assert_float_eq(win[1], 298.0f);
  /* a percentile of 0 with a few positive values: up to the largest */
  float sparse[1001] = {0};
  sparse[500] = 7.0f;
  EXPECT(sproj_png_auto_window(sparse, 1001, win), SPROJ_OK);
  ck_assert_float_eq(win[0], 0.0f);
  ck_assert_float_eq(win[1], 7.0f);
  /* nothing positive: smallest .. largest; one value everywhere: shown white */
  const float neg[3] = {-1.0f, -5.0f, -3.0f}, same[2] = {-2.0f, -2.0f};
  EXPECT(sproj_png_auto_window(neg, 3, win), SPROJ_OK);
  ck_assert_float_eq(win[0], -5.0f);
  ck_assert_float_eq(win[1], -1.0f);
  EXPECT(sproj_png_auto_window(same, 2, win), SPROJ_OK);
  ck_assert_float_eq(win[0], -3.0f);
  ck_assert_float_eq(win[1], -2.0f);
  /* no finite value, or none at all (v may then be NULL): {0, 1} */
  EXPECT(sproj_png_auto_window(v + 1101, 3, win), SPROJ_OK);
  ck_assert_float_eq(win[0], 0.0f);
  ck_assert_float_eq(win[1], 1.0f);
  win[0] = win[1] = 42.0f;
  EXPECT(sproj_png_auto_window(NULL, 0, win), SPROJ_OK);
  ck_assert_float_eq(win[0], 0.0f);
  ck_assert_float_eq(win[1], 1.0f);
  /* NULL arguments: refused, the window left as it was */
  win[0] = win[1] = 42.0f;
  EXPECT(sproj_png_auto_window(NULL, 3, win), SPROJ_ERR_NULL);
  EXPECT(sproj_png_auto_window(v, N, NULL), SPROJ_ERR_NULL);
  ck_assert_float_eq(win[0], 42.0f);
  ck_assert_float_eq(win[1], 42.0f);
}
END_TEST

START_TEST(test_phantom_cylinder)
{
  /* a cylinder alone, radius 20, length 30, value 1.5, off-centre, on anisotropic voxels: the sum times the
   * voxel volume is within 2% of pi r^2 L x value (2x2x2 supersampling leaves ~0.1% here) */
  int dims[3] = {40, 56, 24};
  float vs[3] = {1.25f, 1.0f, 2.0f}, origin[3] = {-24.375f, -27.5f, -23.0f};
  struct sproj_phantom p;
  memset(&p, 0, sizeof p);
  p.centre[0] = 1.3f;
  p.centre[1] = -2.1f;
  p.centre[2] = 0.7f;
  p.radius = 20.0f;
  p.length = 30.0f;
  p.value = 1.5f;
  size_t n = 40 * 56 * 24;
  float *img = malloc(n * sizeof *img);
  EXPECT(sproj_phantom_fill(&p, img, dims, vs, origin, 2), SPROJ_OK);
  double sum = 0.0;
  size_t outside = 0; /* counted, asserted once: a passing ck_assert per voxel costs Check a message each */
  for (size_t i = 0; i < n; i++) {
    outside += !(img[i] >= 0.0f && img[i] <= 1.5f);
    sum += img[i];
  }
  ck_assert_msg(outside == 0, "%zu voxels outside 0 .. 1.5", outside);
  double volume = sum * vs[0] * vs[1] * vs[2], analytic = 3.14159265358979 * 400.0 * 30.0 * 1.5;
  ck_assert_msg(fabs(volume / analytic - 1.0) < 0.02, "integral %g, analytic %g", volume, analytic);
  /* the voxel nearest the centre is fully inside, a corner fully outside */
  int c0 = (int)lround((1.3 - origin[0]) / vs[0]), c1 = (int)lround((-2.1 - origin[1]) / vs[1]),
      c2 = (int)lround((0.7 - origin[2]) / vs[2]);
  ck_assert_float_eq(img[((size_t)c0 * 56 + c1) * 24 + c2], 1.5f);
  ck_assert_float_eq(img[0], 0.0f);
  /* supersampling 4 is closer still (0.5%) */
  EXPECT(sproj_phantom_fill(&p, img, dims, vs, origin, 4), SPROJ_OK);
  sum = 0.0;
  for (size_t i = 0; i < n; i++)
    sum += img[i];
  ck_assert_msg(fabs(sum * vs[0] * vs[1] * vs[2] / analytic - 1.0) < 0.005, "integral %g", sum * 5.0);

  float *keep = malloc(n * sizeof *keep);
  memcpy(keep, img, n * sizeof *img);
  EXPECT(sproj_phantom_fill(&p, img, dims, vs, origin, 0), SPROJ_ERR_INVALID);
  EXPECT(sproj_phantom_fill(&p, img, dims, vs, origin, 17), SPROJ_ERR_INVALID);
  p.radius = 0.0f;
  EXPECT(sproj_phantom_fill(&p, img, dims, vs, origin, 2), SPROJ_ERR_INVALID);
  p.radius = 20.0f;
  p.num_spheres = 17;
  EXPECT(sproj_phantom_fill(&p, img, dims, vs, origin, 2), SPROJ_ERR_INVALID);
  EXPECT(sproj_phantom_fill(NULL, img, dims, vs, origin, 2), SPROJ_ERR_NULL);
  ck_assert_int_eq(memcmp(keep, img, n * sizeof *img), 0);
  free(keep);
  free(img);
}
END_TEST

START_TEST(test_phantom_default)
{
  int dims[3] = {64, 64, 32};
  float vs[3] = {2.0f, 2.0f, 2.0f}, origin[3] = {-63.0f, -63.0f, -31.0f};
  struct sproj_phantom p;
  EXPECT(sproj_phantom_default(&p, dims, vs, origin), SPROJ_OK);
  /* centred box: radius 0.8 * 64, length 0.8 * 64, six spheres inside the cylinder */
  ck_assert_float_eq_tol(p.radius, 51.2f, 1e-4f);
  ck_assert_float_eq_tol(p.length, 51.2f, 1e-4f);
  for (int k = 0; k < 3; k++)
    ck_assert_float_eq_tol(p.centre[k], 0.0f, 1e-5f);
  ck_assert_int_eq(p.num_spheres, 6);
  size_t n = 64 * 64 * 32;
  float *img = malloc(n * sizeof *img);
  EXPECT(sproj_phantom_fill(&p, img, dims, vs, origin, 2), SPROJ_OK);
  /* the integral: cylinder plus each sphere's (value - 1) x volume, within 2% */
  const double pi = 3.14159265358979;
  double analytic = pi * p.radius * p.radius * p.length * p.value, sum = 0.0;
  for (int s = 0; s < p.num_spheres; s++) {
    double r = p.spheres[s].radius;
    analytic += 4.0 / 3.0 * pi * r * r * r * (p.spheres[s].value - p.value);
    ck_assert(hypot(p.spheres[s].centre[0], p.spheres[s].centre[1]) + r < p.radius);
  }
  for (size_t i = 0; i < n; i++)
    sum += img[i];
  ck_assert_msg(fabs(sum * 8.0 / analytic - 1.0) < 0.02, "integral %g, analytic %g", sum * 8.0, analytic);
  /* every voxel whose whole cube lies inside a sphere holds exactly its value: the hot spheres' cores mean 4,
   * the cold ones' 0 */
  for (int s = 0; s < p.num_spheres; s++) {
    const struct sproj_phantom_sphere *q = &p.spheres[s];
    double inner = q->radius - sqrt(3.0) * 1.0; /* half-diagonal of a 2 mm voxel */
    double mean = 0.0;
    int count = 0;
    for (size_t i = 0; i < n; i++) {
      int i0 = (int)(i / (64 * 32)), i1 = (int)(i / 32 % 64), i2 = (int)(i % 32);
      double d0 = origin[0] + 2.0 * i0 - q->centre[0], d1 = origin[1] + 2.0 * i1 - q->centre[1],
             d2 = origin[2] + 2.0 * i2 - q->centre[2];
      if (sqrt(d0 * d0 + d1 * d1 + d2 * d2) <= inner) {
        mean += img[i];
        count++;
      }
    }
    ck_assert_msg(count > 0, "sphere %d has no voxel inside", s);
    mean /= count;
    ck_assert_msg(fabs(mean - q->value) < 1e-6, "sphere %d: core mean %g, value %g", s, mean, q->value);
  }
  /* the centre is background */
  ck_assert_float_eq(img[(32 * 64 + 32) * 32 + 16], 1.0f);
  int bad[3] = {64, -1, 32};
  EXPECT(sproj_phantom_default(&p, bad, vs, origin), SPROJ_ERR_DIMS);
  free(img);
}
END_TEST

/* ---- Poisson ----------------------------------------------------------------------------------------------- */
static double poisson_pmf(double mu, int k)
{
  return exp(-mu + k * log(mu) - lgamma(k + 1.0));
}

/* Sample mean and variance against 5 standard errors: se(mean) = sqrt(mu/N); se(variance) = sqrt((mu4 -
 * sigma^4)/N) with Poisson's central mu4 = mu + 3 mu^2, i.e. sqrt((mu + 2 mu^2)/N). Where N p >= 50, the
 * frequency of each k is within 5 binomial standard deviations of N p. A false failure at 5 sigma has
 * probability ~6e-7 per check; the seeds are fixed, so a pass is reproducible anyway. */
START_TEST(test_poisson_moments)
{
  const double means[] = {0.1, 3.0, 9.99, 10.0, 30.0, 1000.0, 1.0e6};
  const int64_t N = 200000;
  float *expected = malloc(N * sizeof *expected), *counts = malloc(N * sizeof *counts);
  for (size_t m = 0; m < sizeof means / sizeof means[0]; m++) {
    double mu = means[m];
    for (int64_t i = 0; i < N; i++)
      expected[i] = (float)mu;
    mu = (float)mu;
    EXPECT(sproj_poisson(expected, counts, N, 12345 + m, 2), SPROJ_OK);
    double s1 = 0.0, s2 = 0.0;
    int kmax = (int)(mu + 10.0 * sqrt(mu) + 10.0);
    int64_t *hist = calloc((size_t)kmax + 1, sizeof *hist);
    /* each passing ck_assert costs Check a message to its parent process: one per sample made this test take
     * 23 s under ASan, so the samples are checked first and the result asserted once */
    int64_t bad = -1;
    for (int64_t i = 0; i < N; i++) {
      double k = counts[i];
      if (!(k >= 0.0 && k == floor(k)) && bad < 0)
        bad = i;
      s1 += k;
      if (k >= 0.0 && k <= kmax)
        hist[(int)k]++;
    }
    ck_assert_msg(bad < 0, "mu %g: sample %ld is %g", mu, (long)bad, bad < 0 ? 0.0 : counts[bad]);
    double mean = s1 / N;
    for (int64_t i = 0; i < N; i++)
      s2 += (counts[i] - mean) * (counts[i] - mean);
    double var = s2 / (N - 1);
    double se_mean = sqrt(mu / N), se_var = sqrt((mu + 2.0 * mu * mu) / N);
    ck_assert_msg(fabs(mean - mu) < 5.0 * se_mean, "mu %g: mean %g (se %g)", mu, mean, se_mean);
    ck_assert_msg(fabs(var - mu) < 5.0 * se_var, "mu %g: variance %g (se %g)", mu, var, se_var);
    if (mu <= 1000.0)
      for (int k = 0; k <= kmax; k++) {
        double p = poisson_pmf(mu, k), np = N * p;
        if (np < 50.0)
          continue;
        double sd = sqrt(np * (1.0 - p));
        ck_assert_msg(fabs(hist[k] - np) < 5.0 * sd, "mu %g: %ld samples of %d, expected %g (sd %g)", mu,
                      (long)hist[k], k, np, sd);
      }
    free(hist);
  }
  /* a mean of 0 gives 0 */
  for (int64_t i = 0; i < N; i++)
    expected[i] = 0.0f;
  EXPECT(sproj_poisson(expected, counts, N, 7, 0), SPROJ_OK);
  int64_t nonzero = 0;
  for (int64_t i = 0; i < N; i++)
    nonzero += counts[i] != 0.0f;
  ck_assert_int_eq(nonzero, 0);
  free(expected);
  free(counts);
}
END_TEST

START_TEST(test_poisson_reproducible)
{
  /* 3.5 blocks of mixed means, so that threads share the work differently */
  const int64_t N = 3 * SPROJ_RNG_BLOCK + SPROJ_RNG_BLOCK / 2;
  float *expected = malloc(N * sizeof *expected), *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  for (int64_t i = 0; i < N; i++)
    expected[i] = (float)(uniform() * uniform() * 60.0);
  EXPECT(sproj_poisson(expected, a, N, 2024, 1), SPROJ_OK);
  EXPECT(sproj_poisson(expected, b, N, 2024, 3), SPROJ_OK);
  ck_assert_int_eq(memcmp(a, b, N * sizeof *a), 0);
  EXPECT(sproj_poisson(expected, b, N, 2024, 0), SPROJ_OK);
  ck_assert_int_eq(memcmp(a, b, N * sizeof *a), 0);
  /* another seed: other numbers (equal only where both draws agree, which for these means is far from all) */
  EXPECT(sproj_poisson(expected, b, N, 2025, 2), SPROJ_OK);
  int64_t same = 0;
  for (int64_t i = 0; i < N; i++)
    same += a[i] == b[i];
  ck_assert_msg(same < N / 2, "%ld of %ld equal", (long)same, (long)N);
  /* in place */
  memcpy(b, expected, N * sizeof *b);
  EXPECT(sproj_poisson(b, b, N, 2024, 2), SPROJ_OK);
  ck_assert_int_eq(memcmp(a, b, N * sizeof *a), 0);
  /* errors change nothing */
  memcpy(b, a, N * sizeof *b);
  expected[N - 1] = -1.0f;
  EXPECT(sproj_poisson(expected, b, N, 1, 2), SPROJ_ERR_RANGE);
  expected[N - 1] = NAN;
  EXPECT(sproj_poisson(expected, b, N, 1, 2), SPROJ_ERR_NONFINITE);
  ck_assert_int_eq(memcmp(a, b, N * sizeof *a), 0);
  EXPECT(sproj_poisson(expected, b, -1, 1, 2), SPROJ_ERR_DIMS);
  EXPECT(sproj_poisson(expected, b, N, 1, -1), SPROJ_ERR_INVALID);
  EXPECT(sproj_poisson(NULL, b, N, 1, 1), SPROJ_ERR_NULL);
  EXPECT(sproj_poisson(expected, b, 0, 1, 1), SPROJ_OK);
  free(expected);
  free(a);
  free(b);
}
END_TEST

/* ---- listmode sampling ------------------------------------------------------------------------------------- */
/* Enough events (1.5 M) for several chunks and buckets of the parallel shuffle (2^18 events each): the same list on 1,
 * 2 and 4 threads; the same histogram as sproj_poisson; and events of the first tenth of the LORs spread evenly over
 * the whole list: their mean place is 0.5 (sd 0.0007: bound 0.01) and each sixth of the list holds a sixth of them
 * (sd 0.001 each: bound 0.01). Before the shuffle they all stood in the first tenth. */
START_TEST(test_listmode_shuffle_buckets)
{
  const int64_t num_lors = 300000;
  float *expected = malloc(num_lors * sizeof *expected), *counts = malloc(num_lors * sizeof *counts);
  for (int64_t i = 0; i < num_lors; i++)
    expected[i] = 5.0f;
  int32_t *lor[3];
  int64_t num[3];
  const int threads[3] = {1, 2, 4};
  for (int t = 0; t < 3; t++)
    EXPECT(sproj_sample_listmode(expected, num_lors, 0, 31, threads[t], &lor[t], NULL, &num[t]), SPROJ_OK);
  ck_assert_msg(num[0] > 4 * ((int64_t)1 << 18), "%ld events: too few for several buckets", (long)num[0]);
  for (int t = 1; t < 3; t++) {
    ck_assert_int_eq(num[t], num[0]);
    ck_assert_msg(memcmp(lor[t], lor[0], (size_t)num[0] * sizeof *lor[0]) == 0, "%d threads: another order",
                  threads[t]);
  }
  EXPECT(sproj_poisson(expected, counts, num_lors, 31, 1), SPROJ_OK);
  int64_t *hist = calloc(num_lors, sizeof *hist), first = 0, sixth[6] = {0};
  double place = 0.0;
  for (int64_t e = 0; e < num[0]; e++) {
    hist[lor[0][e]]++;
    if (lor[0][e] < num_lors / 10) {
      first++;
      place += (double)e / (double)num[0];
      sixth[e * 6 / num[0]]++;
    }
  }
  int64_t bad = -1;
  for (int64_t i = 0; i < num_lors && bad < 0; i++)
    if (hist[i] != (int64_t)counts[i])
      bad = i;
  ck_assert_msg(bad < 0, "LOR %ld: %ld events, %g drawn", (long)bad, bad < 0 ? 0L : (long)hist[bad],
                bad < 0 ? 0.0 : counts[bad]);
  ck_assert_msg(fabs(place / (double)first - 0.5) < 0.01, "mean place %g", place / (double)first);
  for (int k = 0; k < 6; k++)
    ck_assert_msg(fabs((double)sixth[k] / (double)first - 1.0 / 6.0) < 0.01, "sixth %d holds %g of them", k,
                  (double)sixth[k] / (double)first);
  for (int t = 0; t < 3; t++)
    sproj_free(lor[t]);
  free(hist);
  free(expected);
  free(counts);
}
END_TEST

START_TEST(test_listmode_sampling)
{
  const int64_t num_lors = 20000;
  const int T = 7;
  const int64_t n = num_lors * T; /* 140000 elements: three blocks */
  float *expected = malloc(n * sizeof *expected), *counts = malloc(n * sizeof *counts);
  double total_expected = 0.0;
  for (int64_t i = 0; i < n; i++) {
    expected[i] = (float)(uniform() * 0.6);
    total_expected += expected[i];
  }
  int32_t *lor = NULL;
  int16_t *bin = NULL;
  int64_t num = -1;
  EXPECT(sproj_sample_listmode(expected, num_lors, T, 99, 3, &lor, &bin, &num), SPROJ_OK);
  /* the total is Poisson(sum of means): within 5 sigma */
  ck_assert_msg(fabs(num - total_expected) < 5.0 * sqrt(total_expected), "%ld events, expected %g", (long)num,
                total_expected);
  /* the histogram of (LOR, bin) equals sproj_poisson's draws with the same seed */
  EXPECT(sproj_poisson(expected, counts, n, 99, 1), SPROJ_OK);
  int64_t *hist = calloc(n, sizeof *hist);
  int64_t descents = 0;
  /* per-element conditions are gathered and asserted once: each passing ck_assert costs Check a message to its
   * parent process, which over millions of elements made this test take seconds (and more under load) */
  int64_t bad = -1;
  for (int64_t e = 0; e < num; e++) {
    if (lor[e] < 0 || lor[e] >= num_lors || bin[e] < 0 || bin[e] >= T) {
      bad = e;
      break;
    }
    hist[(int64_t)lor[e] * T + bin[e]]++;
    if (e > 0 && lor[e] < lor[e - 1])
      descents++;
  }
  ck_assert_msg(bad < 0, "event %ld: LOR %d, bin %d", (long)bad, bad < 0 ? 0 : lor[bad], bad < 0 ? 0 : bin[bad]);
  for (int64_t i = 0; bad < 0 && i < n; i++)
    if (hist[i] != (int64_t)counts[i])
      bad = i;
  ck_assert_msg(bad < 0, "element %ld: %ld events, %g drawn", (long)bad, bad < 0 ? 0L : (long)hist[bad],
                bad < 0 ? 0.0 : counts[bad]);
  /* shuffled: in a random order about half the neighbours descend (sd 0.5/sqrt(num); 0.4 .. 0.6 is > 20 sd) */
  double frac = (double)descents / (double)(num - 1);
  ck_assert_msg(frac > 0.4 && frac < 0.6, "fraction of descents %g", frac);
  /* the same seed gives the same list on any number of threads */
  int32_t *lor2;
  int16_t *bin2;
  int64_t num2;
  EXPECT(sproj_sample_listmode(expected, num_lors, T, 99, 1, &lor2, &bin2, &num2), SPROJ_OK);
  ck_assert_int_eq(num2, num);
  ck_assert_int_eq(memcmp(lor, lor2, num * sizeof *lor), 0);
  ck_assert_int_eq(memcmp(bin, bin2, num * sizeof *bin), 0);
  sproj_free(lor2);
  sproj_free(bin2);
  /* without bins wanted: the same LORs in the same order */
  EXPECT(sproj_sample_listmode(expected, num_lors, T, 99, 2, &lor2, NULL, &num2), SPROJ_OK);
  ck_assert_int_eq(memcmp(lor, lor2, num * sizeof *lor), 0);
  sproj_free(lor2);
  /* unshuffled: the same events, element by element in order (each element's count of (LOR, bin) in a run) */
  EXPECT(sproj_sample_listmode_sorted(expected, num_lors, T, 99, 3, &lor2, &bin2, &num2), SPROJ_OK);
  ck_assert_int_eq(num2, num);
  int64_t e2 = 0;
  for (int64_t i = 0; bad < 0 && i < n; i++)
    for (int64_t c = 0; c < (int64_t)counts[i]; c++, e2++)
      if (e2 >= num2 || lor2[e2] != i / T || bin2[e2] != i % T)
        bad = i;
  ck_assert_msg(bad < 0 && e2 == num2, "sorted events differ from the draws at element %ld", (long)bad);
  sproj_free(lor2);
  sproj_free(bin2);

  /* written and read back as a listmode file */
  new_dir();
  struct sproj_lm_info info = {.num_events = num, .num_lors = num_lors, .num_tof_bins = T, .tof_bin_width = 20.0f};
  EXPECT(sproj_raw_write_listmode(in_dir("sim"), &info, lor, bin), SPROJ_OK);
  struct sproj_lm_info back;
  EXPECT(sproj_raw_read_listmode(in_dir("sim.hdr"), &back, &lor2, &bin2), SPROJ_OK);
  ck_assert_int_eq(back.num_events, num);
  ck_assert_int_eq(memcmp(lor, lor2, num * sizeof *lor), 0);
  ck_assert_int_eq(memcmp(bin, bin2, num * sizeof *bin), 0);
  sproj_free(lor2);
  sproj_free(bin2);
  sproj_free(lor);
  sproj_free(bin);

  /* non-TOF: bins all 0; nothing expected: no events and NULL arrays */
  EXPECT(sproj_sample_listmode(expected, n, 0, 5, 2, &lor, &bin, &num), SPROJ_OK);
  int64_t nonzero = 0;
  for (int64_t e = 0; e < num; e++)
    nonzero += bin[e] != 0;
  ck_assert_int_eq(nonzero, 0);
  sproj_free(lor);
  sproj_free(bin);
  for (int64_t i = 0; i < n; i++)
    expected[i] = 0.0f;
  EXPECT(sproj_sample_listmode(expected, num_lors, T, 5, 2, &lor, &bin, &num), SPROJ_OK);
  ck_assert_int_eq(num, 0);
  ck_assert_ptr_null(lor);
  ck_assert_ptr_null(bin);
  /* errors */
  lor = (int32_t *)0x1;
  expected[3] = -2.0f;
  EXPECT(sproj_sample_listmode(expected, num_lors, T, 5, 2, &lor, &bin, &num), SPROJ_ERR_RANGE);
  EXPECT(sproj_sample_listmode(expected, 0, T, 5, 2, &lor, &bin, &num), SPROJ_ERR_DIMS);
  EXPECT(sproj_sample_listmode(expected, num_lors, -1, 5, 2, &lor, &bin, &num), SPROJ_ERR_TOF);
  EXPECT(sproj_sample_listmode(expected, (int64_t)1 << 31, 1, 5, 2, &lor, &bin, &num), SPROJ_ERR_OVERFLOW);
  EXPECT(sproj_sample_listmode(expected, num_lors, T, 5, 2, NULL, &bin, &num), SPROJ_ERR_NULL);
  ck_assert_ptr_eq(lor, (int32_t *)0x1);
  ck_assert_int_eq(num, 0);
  free(hist);
  free(expected);
  free(counts);
}
END_TEST

START_TEST(test_status_texts)
{
  ck_assert_str_eq(sproj_strerror(SPROJ_ERR_IO), "a file could not be read or written");
  ck_assert_str_eq(sproj_strerror(SPROJ_ERR_FORMAT), "a file is not in the expected format");
}
END_TEST

static void remove_tree(const char *path)
{
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
        continue;
      char sub[1024];
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

int main(void)
{
  strcpy(top, "check_io.XXXXXX");
  if (!mkdtemp(top)) {
    perror("check_io: mkdtemp");
    return 99;
  }
  Suite *s = suite_create("io");
  /* Timeouts bound hangs (a reader blocked on a FIFO, a writer never caught), they do not measure speed: no test
   * takes 0.4 s even under ASan on a loaded 2-core machine (per-element checks are asserted once per array, not
   * once per element), so 60 s leaves room for far more than 5x slowdown */
  TCase *tc = tcase_create("files");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_nifti_roundtrip);
  tcase_add_test(tc, test_nifti_header);
  tcase_add_test(tc, test_nifti_foreign);
  tcase_add_test(tc, test_nifti_errors);
  tcase_add_test(tc, test_failed_writes_leave_nothing);
  tcase_add_test(tc, test_raw_sino_roundtrip);
  tcase_add_test(tc, test_raw_info);
  tcase_add_test(tc, test_raw_corrupt);
  tcase_add_test(tc, test_raw_listmode);
  tcase_add_test(tc, test_inputs_not_files);
  tcase_add_test(tc, test_raw_sizes);
  tcase_add_test(tc, test_pair_atomic);
  tcase_add_test(tc, test_nifti_partial_permutation);
  tcase_add_test(tc, test_full_disk_and_names);
  tcase_add_test(tc, test_stale_temporaries);
  tcase_add_test(tc, test_remove_temporaries_on_signal);
  tcase_add_test(tc, test_killed_writer);
  tcase_add_test(tc, test_remove_temporaries_concurrent);
  tcase_add_test(tc, test_nifti_bad_fields);
  tcase_add_test(tc, test_nifti_huge_claim);
  tcase_add_test(tc, test_nifti_gz_and_pair);
  tcase_add_test(tc, test_nifti_as_nibabel);
  tcase_add_test(tc, test_nifti_old_layout);
  tcase_add_test(tc, test_nifti_orientations);
  tcase_add_test(tc, test_png);
  tcase_add_test(tc, test_png_auto_window);
  tcase_add_test(tc, test_status_texts);
  suite_add_tcase(s, tc);
  TCase *sim = tcase_create("simulation");
  tcase_set_timeout(sim, 60);
  tcase_add_test(sim, test_phantom_cylinder);
  tcase_add_test(sim, test_phantom_default);
  tcase_add_test(sim, test_poisson_moments);
  tcase_add_test(sim, test_poisson_reproducible);
  tcase_add_test(sim, test_listmode_sampling);
  tcase_add_test(sim, test_listmode_shuffle_buckets);
  suite_add_tcase(s, sim);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  remove_tree(top);
  return failed == 0 ? 0 : 1;
}
