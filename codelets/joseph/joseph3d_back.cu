/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_back.cu: CUDA kernel of the non-TOF back projection (one thread per LOR, adding into the principal-axis
 * copies, a warp's neighbouring rays combining their adds first, or for small tasks several threads per LOR; atomic
 * adds). */
#include "config.h"
#include "cuda_pieces.h"
#include "joseph3d_back.h"

__global__ static void joseph3d_back_kernel(float *img, float *copies, const __grid_constant__ struct sproj_proj_arg a,
                                            const __grid_constant__ struct sproj_piece_table t)
{
#if __CUDA_ARCH__ >= 900
  if (copies && t.windows) {
    __shared__ float4 win[SPROJ_CUDA_BLOCK / 32][2 * SPROJ_BACK_WINDOW / 4];
    unsigned i;
    int p = sproj_piece_of_thread(&t, &i);
    int have = i < t.n[p];
    size_t j = have ? i : 0;
    joseph3d_back_warp(img, copies, &a.geom, have, t.xs[p] + 3 * j, t.xe[p] + 3 * j, have ? t.values[p][j] : 0.0f,
                       (float *)win[threadIdx.x / 32]);
    return;
  }
#endif
  SPROJ_CUDA_THIS_LOR_LANE(t, p, i, lane);
  const float *xs = t.xs[p] + 3 * (size_t)i, *xe = t.xe[p] + 3 * (size_t)i;
  float value = t.values[p][i];
  struct sproj_ray r;
  if (t.lanes > 1u)
    joseph3d_back_lor_lanes(sproj_out_of(img, &a), &a.geom, xs, xe, value, lane, t.lanes);
  else if (value != 0.0f && sproj_ray_setup(xs, xe, &a.geom, &r))
    joseph3d_back_ray(sproj_ray_out(&r, &a.geom, sproj_out_of(img, &a), copies), &r, value);
}

SPROJ_CUDA_LANES_LAUNCHER(sproj_joseph3d_back_cuda, joseph3d_back_kernel, float *, 1)
