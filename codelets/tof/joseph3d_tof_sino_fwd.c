/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_fwd.c: CPU codelet, codelet struct and performance model of the TOF-sinogram forward projection. */
#include "config.h"
#include "codelets.h"
#include "joseph3d_tof_sino_fwd.h"
#include "tof_lanes.h"

static void joseph3d_tof_sino_fwd_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = cl_arg;
  const float *img = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  /* the variants (codelets.h): the table when it serves the task, the bins beside the samples when asked for */
  const struct sproj_tof_table *tab = sproj_cpu_tof_table(arg);
  int width = (sproj_tof_variants(0) & SPROJ_TOF_VARIANT_SLIDE) ? sproj_tof_slide_width(&arg->tof) : 0;
#ifdef SPROJ_HAVE_LANES
  /* one LOR per AVX-512 lane, with the table, where the lanes fit the task (tof_lanes.h) */
  struct sproj_tof_lanes_work *work = NULL;
  if (tab && (sproj_tof_variants(0) & SPROJ_TOF_VARIANT_LANES) && sproj_cpu_lanes() == SPROJ_TOF_LANES &&
      sproj_tof_lanes_fit(&arg->geom, &arg->tof, 0) && (work = sproj_cpu_scratch(sizeof *work))) {
    for (int p = 0; p < arg->npieces; p++) {
      struct sproj_piece piece = sproj_piece_get(buffers, arg, p);
      sproj_tof_lanes_sino_fwd(work, img, &arg->geom, &arg->tof, tab, piece.xs, piece.xe, piece.offset, piece.n,
                               piece.values);
    }
    return;
  }
#endif
  for (int p = 0; p < arg->npieces; p++) {
    struct sproj_piece piece = sproj_piece_get(buffers, arg, p);
    for (uint32_t lor = 0; lor < piece.n; lor++) {
      float sigma, offset;
      sproj_tof_lor_params(&arg->tof, piece.sigma, piece.offset, lor, &sigma, &offset);
      const float *xs = piece.xs + 3 * (size_t)lor, *xe = piece.xe + 3 * (size_t)lor;
      float *out = piece.values + (size_t)lor * arg->tof.num_bins;
      if (width)
        joseph3d_tof_sino_fwd_slide(img, &arg->geom, xs, xe, &arg->tof, sigma, offset, tab, out, 1, width);
      else
        joseph3d_tof_sino_fwd_lor(img, &arg->geom, xs, xe, &arg->tof, sigma, offset, tab, out, 1);
    }
  }
}

SPROJ_PROJ_MODEL(tof_sino_fwd_model, "starproj_joseph3d_tof_sino_fwd");
SPROJ_PROJ_CODELET(sproj_joseph3d_tof_sino_fwd_cl, joseph3d_tof_sino_fwd_cpu, sproj_joseph3d_tof_sino_fwd_cuda,
                   tof_sino_fwd_model, "joseph3d_tof_sino_fwd");
