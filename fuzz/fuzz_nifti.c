/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_nifti.c: libFuzzer target over the NIfTI-1 reader. The input is written as f.nii, or as f.nii.gz when it
 * starts with gzip's magic bytes; when its magic (bytes 344..347) says "ni1", also as the pair f.hdr / f.img (the
 * same bytes in both), and all of them are read. Any status is fine, a crash, a sanitizer report, a leak, a hang
 * or a large allocation (libFuzzer's -rss_limit_mb / -malloc_limit_mb) is not: a file of a few KB must never make
 * the reader reserve more than its size allows (1032 times it for .gz). A read that succeeds must give finite
 * voxel sizes > 0 and an array of dims' size. Seeds: fuzz/corpus_nifti. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "starproj_io.h"
#include "fuzz_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_one(const char *name)
{
  float *img = NULL, vs[3], origin[3];
  int dims[3];
  if (sproj_nifti_read(fuzz_path(name), &img, dims, vs, origin) != SPROJ_OK)
    return;
  for (int k = 0; k < 3; k++)
    if (dims[k] < 1 || !isfinite(vs[k]) || !(vs[k] > 0.0f) || !isfinite(origin[k]))
      __builtin_trap(); /* the reader promises a valid geometry */
  size_t n = (size_t)dims[0] * (size_t)dims[1] * (size_t)dims[2];
  img[n - 1] += 0.0f; /* the whole array is there (ASan checks the last element) */
  sproj_free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  int gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const char *name = gz ? "f.nii.gz" : "f.nii";
  fuzz_write(name, data, size);
  read_one(name);
  if (!gz && size >= 348 && memcmp(data + 344, "ni1", 4) == 0) {
    fuzz_write("f.hdr", data, size);
    fuzz_write("f.img", data, size);
    read_one("f.hdr");
  }
  return 0;
}
