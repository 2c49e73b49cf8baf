/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_lm_fwd.c: CPU codelet, codelet struct and performance model of the TOF listmode forward projection. */
#include "config.h"
#include "codelets.h"
#include "joseph3d_tof_lm_fwd.h"

static void tof_lm_fwd_lor(const struct sproj_proj_arg *arg, float *img, const struct sproj_piece *piece,
                           uint32_t event)
{
  float sigma, offset;
  sproj_tof_lor_params(&arg->tof, piece->sigma, piece->offset, event, &sigma, &offset);
  const float *xs = piece->xs + 3 * (size_t)event, *xe = piece->xe + 3 * (size_t)event;
  piece->values[event] = joseph3d_tof_lm_fwd_lor(img, &arg->geom, xs, xe, &arg->tof, sigma, offset, piece->bins[event]);
}

static void joseph3d_tof_lm_fwd_cpu(void *buffers[], void *cl_arg)
{
  sproj_cpu_run(buffers, cl_arg, tof_lm_fwd_lor);
}

SPROJ_PROJ_MODEL(tof_lm_fwd_model, "starproj_joseph3d_tof_lm_fwd");
SPROJ_PROJ_CODELET(sproj_joseph3d_tof_lm_fwd_cl, joseph3d_tof_lm_fwd_cpu, sproj_joseph3d_tof_lm_fwd_cuda,
                   tof_lm_fwd_model, "joseph3d_tof_lm_fwd");
