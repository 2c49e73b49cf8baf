/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_back.cu: CUDA kernel of the TOF-sinogram back projection (one thread per LOR, atomic adds).
 * Variants (tof_cuda.h): the edges from a table in shared memory (TABLE); the bins of the current window in registers,
 * each read once (SLIDE: the same values); and, for a task given the principal-axis copies (src/core, with the copies
 * variant), the adds of a warp's neighbouring rays combined in shared memory first (COPIES, sproj_ray_scatter_warp). */
#include "config.h"
#include "tof_cuda.h"
#include "joseph3d_tof_sino_back.h"

template <bool TABLE, bool SLIDE, bool COPIES>
__global__ static void SPROJ_TOF_SINO_BACK_BOUNDS
tof_sino_back_kernel(float *img, float *copies, const __grid_constant__ struct sproj_proj_arg arg,
                     const __grid_constant__ struct sproj_piece_table pieces,
                     const __grid_constant__ struct sproj_tof_table_plan plan)
{
  struct sproj_tof_table table;
  const struct sproj_tof_table *tab = NULL;
  if (TABLE) {
    sproj_tof_table_build(&table, &plan, 0u);
    tab = &table;
  }
  unsigned lor;
  int piece = sproj_piece_of_thread(&pieces, &lor);
  int num_bins = arg.tof.num_bins;
#if __CUDA_ARCH__ >= 900
  if (COPIES && copies && pieces.windows) {
    __shared__ float4 win[SPROJ_TOF_SINO_BLOCK / SPROJ_WARP][2 * SPROJ_BACK_WINDOW_GROUPS];
    int have = lor < pieces.n[piece];
    size_t at = have ? lor : 0; /* a thread without a LOR reads LOR 0's ends and adds nothing */
    float sigma, offset;
    sproj_tof_lor_params(&arg.tof, pieces.sigma[piece], pieces.offset[piece], (unsigned)at, &sigma, &offset);
    const float *p = pieces.values[piece] + at * (size_t)num_bins;
    struct sproj_ray r;
    struct sproj_tof_line l;
    int act = have && sproj_tof_ray_setup(pieces.xs[piece] + 3 * at, pieces.xe[piece] + 3 * at, &arg.geom, &arg.tof,
                                          sigma, offset, tab, &r, &l);
    float *w = (float *)win[threadIdx.x / SPROJ_WARP];
    if constexpr (SLIDE) {
      struct sproj_tof_slide bins;
      sproj_tof_slide_start(&bins, SPROJ_TOF_SLIDE_NARROW);
      sproj_ray_scatter_warp(img, copies, &arg.geom, act, &r, [&](int k) {
        return sproj_tof_back_slide_sample(&r, &l, k, num_bins, p, &bins, SPROJ_TOF_SLIDE_NARROW);
      }, w);
    } else {
      sproj_ray_scatter_warp(img, copies, &arg.geom, act, &r,
                             [&](int k) { return sproj_tof_back_sample(&r, &l, k, num_bins, p); }, w);
    }
    return;
  }
#endif
  if (lor >= pieces.n[piece])
    return;
  float sigma, offset;
  sproj_tof_lor_params(&arg.tof, pieces.sigma[piece], pieces.offset[piece], lor, &sigma, &offset);
  const float *xs = pieces.xs[piece] + 3 * (size_t)lor, *xe = pieces.xe[piece] + 3 * (size_t)lor;
  const float *p = pieces.values[piece] + (size_t)lor * num_bins;
  struct sproj_out out = sproj_out_of(img, &arg);
  if (COPIES && copies) {
    /* the copies without the warps' windows (SPROJ_CUDA_WINDOWS=0): each lane adds into its ray's copy */
    struct sproj_ray r;
    struct sproj_tof_line l;
    if (!sproj_tof_ray_setup(xs, xe, &arg.geom, &arg.tof, sigma, offset, tab, &r, &l))
      return;
    out = sproj_ray_out(&r, &arg.geom, out, copies);
    for (int k = r.first; k <= r.last; k++) {
      float v = sproj_tof_back_sample(&r, &l, k, num_bins, p);
      if (v != 0.0f)
        sproj_ray_scatter(out, &r, k, v);
    }
    return;
  }
  if (SLIDE)
    joseph3d_tof_sino_back_slide(out, &arg.geom, xs, xe, &arg.tof, sigma, offset, tab, p, SPROJ_TOF_SLIDE_NARROW);
  else
    joseph3d_tof_sino_back_lor(out, &arg.geom, xs, xe, &arg.tof, sigma, offset, tab, p);
}

template <bool TABLE, bool SLIDE, bool COPIES>
static void tof_sino_back_launch(float *img, float *copies, const struct sproj_proj_arg *arg,
                                 const struct sproj_tof_launch *L, const struct sproj_piece_table *pieces,
                                 unsigned blocks)
{
  tof_sino_back_kernel<TABLE, SLIDE, COPIES>
    <<<blocks, SPROJ_TOF_SINO_BLOCK, L->table_bytes, starpu_cuda_get_local_stream()>>>(img, copies, *arg, *pieces, L->plan);
  SPROJ_CUDA_CHECK_LAUNCH();
}

template <bool TABLE, bool SLIDE>
static void tof_sino_back_pick(float *img, float *copies, const struct sproj_proj_arg *arg,
                               const struct sproj_tof_launch *L, const struct sproj_piece_table *pieces, unsigned blocks)
{
  if (copies)
    tof_sino_back_launch<TABLE, SLIDE, true>(img, copies, arg, L, pieces, blocks);
  else
    tof_sino_back_launch<TABLE, SLIDE, false>(img, copies, arg, L, pieces, blocks);
}

extern "C" void sproj_joseph3d_tof_sino_back_cuda(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = (const struct sproj_proj_arg *)cl_arg;
  struct sproj_piece_table pieces;
  unsigned blocks = sproj_piece_table_fill_blocks(&pieces, buffers, arg, 1, SPROJ_TOF_SINO_BLOCK);
  if (blocks == 0)
    return;
  struct sproj_tof_launch L = sproj_tof_launch_of(arg, 0);
  float *img = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  /* the copies when src/core gave the task them (arg->layout: the copies variant), zeroed on the stream */
  float *copies = sproj_cuda_copies(buffers, arg, 1, 1);
  if (L.table)
    L.slide ? tof_sino_back_pick<true, true>(img, copies, arg, &L, &pieces, blocks)
            : tof_sino_back_pick<true, false>(img, copies, arg, &L, &pieces, blocks);
  else
    L.slide ? tof_sino_back_pick<false, true>(img, copies, arg, &L, &pieces, blocks)
            : tof_sino_back_pick<false, false>(img, copies, arg, &L, &pieces, blocks);
  if (copies)
    sproj_cuda_copies_add(img, copies, &arg->geom);
}
