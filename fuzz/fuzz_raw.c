/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_raw.c: libFuzzer target over the raw header parser and the sinogram and listmode readers. The input up to
 * its first NUL byte is the header f.hdr (a header cannot hold a NUL: the readers refuse one), the rest, if any,
 * the data file d.raw, which a header names with "data_file = d.raw". Both readers read the pair; any status is
 * fine, a crash, a sanitizer report, a leak or a hang is not; a read that succeeds must describe data of the size
 * it returns. Seeds: fuzz/corpus_raw. */
#include <stdint.h>
#include <string.h>
#include "starproj_io.h"
#include "fuzz_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const uint8_t *nul = memchr(data, 0, size);
  size_t hdr_len = nul ? (size_t)(nul - data) : size;
  fuzz_write("f.hdr", data, hdr_len);
  if (nul)
    fuzz_write("d.raw", nul + 1, size - hdr_len - 1);
  else
    unlink(fuzz_path("d.raw"));

  struct sproj_sino_info info;
  float *sino = NULL;
  if (sproj_raw_read_sino(fuzz_path("f"), &info, &sino) == SPROJ_OK) {
    int64_t n = 1;
    for (int k = 0; k < info.num_dims; k++)
      n *= info.shape[k];
    if (n > 0)
      sino[n - 1] += 0.0f; /* the whole array is there (ASan checks the last element) */
    sproj_free(sino);
  }
  struct sproj_lm_info lm;
  int32_t *lor = NULL;
  int16_t *bins = NULL;
  if (sproj_raw_read_listmode(fuzz_path("f"), &lm, &lor, &bins) == SPROJ_OK) {
    for (int64_t e = 0; e < lm.num_events; e++)
      if (lor[e] < 0 || lor[e] >= lm.num_lors || bins[e] < 0 || bins[e] >= (lm.num_tof_bins > 1 ? lm.num_tof_bins : 1))
        __builtin_trap(); /* the reader promises events in range */
    sproj_free(lor);
    sproj_free(bins);
  }
  return 0;
}
