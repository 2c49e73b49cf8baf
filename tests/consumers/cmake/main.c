/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: an external program on the resident API and the files library: projects a uniform image along one LOR,
 * checks the value, and writes and reads the image as NIfTI. */
#include <math.h>
#include <stdio.h>
#include <starproj.h>
#include <starproj_io.h>

#define CHECK(call)                                                                                                  \
  do {                                                                                                               \
    int status_ = (call);                                                                                            \
    if (status_ != SPROJ_OK) {                                                                                       \
      fprintf(stderr, "%s: %s (%s)\n", #call, sproj_strerror(status_), sproj_last_error());                          \
      return 1;                                                                                                      \
    }                                                                                                                \
  } while (0)

int main(void)
{
  /* 4 x 4 x 4 voxels of 1 mm holding 1, centred on 0; a LOR along axis 0 crosses 4 mm of it */
  float image[64], value = 0.0f;
  for (int i = 0; i < 64; i++)
    image[i] = 1.0f;
  const int dims[3] = {4, 4, 4};
  const float voxel_size[3] = {1.0f, 1.0f, 1.0f}, origin[3] = {-1.5f, -1.5f, -1.5f};
  const float xstart[3] = {-10.0f, 0.3f, -0.2f}, xend[3] = {10.0f, 0.3f, -0.2f};

  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = 1;
  cfg.ncuda = 0;
  CHECK(sproj_init(&cfg));
  sproj_image *img;
  sproj_lors *lors;
  sproj_proj *proj;
  CHECK(sproj_image_register(&img, image, dims, voxel_size, origin));
  CHECK(sproj_lors_register(&lors, xstart, xend, 1));
  CHECK(sproj_proj_register(&proj, &value, lors));
  CHECK(sproj_fwd(img, proj, NULL, SPROJ_ALL_CHUNKS));
  CHECK(sproj_proj_unregister(proj));
  CHECK(sproj_lors_unregister(lors));
  CHECK(sproj_image_unregister(img));
  CHECK(sproj_shutdown());
  /* 4 samples of 1 voxel, each weighted by 1 mm: 4 up to float rounding */
  if (fabsf(value - 4.0f) > 1e-5f) {
    fprintf(stderr, "forward projection gave %.9g, expected 4\n", value);
    return 1;
  }
  float *back = NULL, vs[3];
  int n[3];
  CHECK(sproj_nifti_write("consumer.nii", image, dims, voxel_size, origin, "consumer"));
  CHECK(sproj_nifti_read("consumer.nii", &back, n, vs, NULL));
  int same = n[0] == 4 && n[1] == 4 && n[2] == 4 && back[63] == 1.0f;
  sproj_free(back);
  if (!same) {
    fprintf(stderr, "the NIfTI file did not read back as written\n");
    return 1;
  }
  printf("cmake consumer: forward projection %.6f (expected 4), NIfTI written and read back\n", value);
  return 0;
}
