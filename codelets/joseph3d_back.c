/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_back.c: CPU codelet, codelet struct and performance model of the non-TOF back projection. */
#include "config.h"
#include "codelets.h"
#include "joseph3d_back.h"

static void back_lor(const struct sproj_proj_arg *arg, float *img, const struct sproj_piece *pc, uint32_t i)
{
  joseph3d_back_lor(sproj_out_of(img, arg), &arg->geom, pc->xs + 3 * (size_t)i, pc->xe + 3 * (size_t)i, pc->values[i]);
}

static void joseph3d_back_cpu(void *buffers[], void *cl_arg)
{
  sproj_cpu_run(buffers, cl_arg, back_lor);
}

SPROJ_PROJ_MODEL(joseph3d_back_model, "starproj_joseph3d_back");
SPROJ_PROJ_CODELET(sproj_joseph3d_back_cl, joseph3d_back_cpu, sproj_joseph3d_back_cuda, joseph3d_back_model,
                   "joseph3d_back");
