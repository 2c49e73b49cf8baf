/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: an external program on the one-shot calls: forward and back projection of one LOR, values checked. */
#include <math.h>
#include <stdio.h>
#include <starproj.h>
#include <starproj_parallelproj.h>

int main(void)
{
  /* 4 x 4 x 4 voxels of 1 mm holding 1, centred on 0; a LOR along axis 2 crosses 4 mm of it */
  float image[64], back[64] = {0}, value = 0.0f;
  for (int i = 0; i < 64; i++)
    image[i] = 1.0f;
  const int dims[3] = {4, 4, 4};
  const float voxel_size[3] = {1.0f, 1.0f, 1.0f}, origin[3] = {-1.5f, -1.5f, -1.5f};
  const float xstart[3] = {0.4f, -0.1f, -10.0f}, xend[3] = {0.4f, -0.1f, 10.0f};

  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = 1;
  cfg.ncuda = 0;
  int status = sproj_init(&cfg);
  if (!status)
    status = sproj_pp_joseph3d_fwd(xstart, xend, image, origin, voxel_size, &value, 1, dims, 0, 64);
  const float one = 1.0f;
  if (!status)
    status = sproj_pp_joseph3d_back(xstart, xend, back, origin, voxel_size, &one, 1, dims, 0, 64);
  if (status) {
    fprintf(stderr, "%s (%s)\n", sproj_strerror(status), sproj_last_error());
    return 1;
  }
  sproj_shutdown();
  /* the adjoint spreads weight 1 mm per plane over 4 planes: the image sum equals the forward value, 4 */
  double sum = 0.0;
  for (int i = 0; i < 64; i++)
    sum += back[i];
  if (fabsf(value - 4.0f) > 1e-5f || fabs(sum - 4.0) > 1e-5) {
    fprintf(stderr, "forward projection %.9g, back-projected sum %.9g, expected 4 and 4\n", value, sum);
    return 1;
  }
  printf("pkg-config consumer: forward projection %.6f, back-projected sum %.6f (expected 4)\n", value, sum);
  return 0;
}
