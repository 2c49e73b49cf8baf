/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_back.c: CPU codelet, codelet struct and performance model of the TOF listmode back projection. */
#include "config.h"
#include "codelets.h"
#include "joseph3d_tof_lm_back.h"
#include "tof_lanes.h"

static void joseph3d_tof_lm_back_cpu(void *buffers[], void *cl_arg)
{
  const struct sproj_proj_arg *arg = cl_arg;
  /* the worker's private reduction buffer (or the image, tasks taking it one at a time: sproj_cpu_run) */
  struct sproj_out out = sproj_out_of((void *)STARPU_VECTOR_GET_PTR(buffers[0]), arg);
  const struct sproj_tof_table *tab = sproj_cpu_tof_table(arg);
#ifdef SPROJ_HAVE_LANES
  struct sproj_tof_lanes_work *work = NULL;
  if (tab && (sproj_tof_variants(0) & SPROJ_TOF_VARIANT_LANES) && sproj_cpu_lanes() == SPROJ_TOF_LANES &&
      sproj_tof_lanes_fit(&arg->geom, &arg->tof, 1) && (work = sproj_cpu_scratch(sizeof *work))) {
    for (int p = 0; p < arg->npieces; p++) {
      struct sproj_piece piece = sproj_piece_get(buffers, arg, p);
      sproj_tof_lanes_lm_back(work, out, &arg->geom, &arg->tof, tab, piece.xs, piece.xe, piece.bins, piece.offset,
                              piece.n, piece.values);
    }
    return;
  }
#endif
  for (int p = 0; p < arg->npieces; p++) {
    struct sproj_piece piece = sproj_piece_get(buffers, arg, p);
    for (uint32_t event = 0; event < piece.n; event++) {
      float sigma, offset;
      sproj_tof_lor_params(&arg->tof, piece.sigma, piece.offset, event, &sigma, &offset);
      const float *xs = piece.xs + 3 * (size_t)event, *xe = piece.xe + 3 * (size_t)event;
      joseph3d_tof_lm_back_lor(out, &arg->geom, xs, xe, &arg->tof, sigma, offset, tab, piece.bins[event],
                               piece.values[event]);
    }
  }
}

SPROJ_PROJ_MODEL(tof_lm_back_model, "starproj_joseph3d_tof_lm_back");
SPROJ_PROJ_CODELET(sproj_joseph3d_tof_lm_back_cl, joseph3d_tof_lm_back_cpu, sproj_joseph3d_tof_lm_back_cuda,
                   tof_lm_back_model, "joseph3d_tof_lm_back");
