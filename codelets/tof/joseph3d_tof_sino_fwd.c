/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_fwd.c: CPU codelet, codelet struct and performance model of the TOF-sinogram forward projection. */
#include "config.h"
#include "codelets.h"
#include "joseph3d_tof_sino_fwd.h"

static void tof_sino_fwd_lor(const struct sproj_proj_arg *arg, float *img, const struct sproj_piece *piece,
                             uint32_t lor)
{
  float sigma, offset;
  sproj_tof_lor_params(&arg->tof, piece->sigma, piece->offset, lor, &sigma, &offset);
  const float *xs = piece->xs + 3 * (size_t)lor, *xe = piece->xe + 3 * (size_t)lor;
  joseph3d_tof_sino_fwd_lor(img, &arg->geom, xs, xe, &arg->tof, sigma, offset,
                            piece->values + (size_t)lor * arg->tof.num_bins, 1);
}

static void joseph3d_tof_sino_fwd_cpu(void *buffers[], void *cl_arg)
{
  sproj_cpu_run(buffers, cl_arg, tof_sino_fwd_lor);
}

SPROJ_PROJ_MODEL(tof_sino_fwd_model, "starproj_joseph3d_tof_sino_fwd");
SPROJ_PROJ_CODELET(sproj_joseph3d_tof_sino_fwd_cl, joseph3d_tof_sino_fwd_cpu, sproj_joseph3d_tof_sino_fwd_cuda,
                   tof_sino_fwd_model, "joseph3d_tof_sino_fwd");
