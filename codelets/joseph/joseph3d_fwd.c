/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_fwd.c: CPU codelet, codelet struct and performance model of the non-TOF forward projection. */
#include "config.h"
#include "codelets.h"
#include "joseph3d_fwd.h"
#include "joseph3d_lanes.h"

static void fwd_lor(const struct sproj_proj_arg *arg, float *img, const struct sproj_piece *pc, uint32_t i)
{
  pc->values[i] = joseph3d_fwd_lor(img, &arg->geom, pc->xs + 3 * (size_t)i, pc->xe + 3 * (size_t)i);
}

static void joseph3d_fwd_cpu(void *buffers[], void *cl_arg)
{
#ifdef SPROJ_HAVE_LANES
  const struct sproj_proj_arg *arg = cl_arg;
  int lanes = sproj_lanes_fit(&arg->geom) ? sproj_cpu_lanes() : 0;
  struct sproj_lanes_work *w = lanes ? sproj_cpu_scratch(sizeof *w) : NULL;
  if (w) {
    const float *img = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    for (int p = 0; p < arg->npieces; p++) {
      struct sproj_piece pc = sproj_piece_get(buffers, arg, p);
      sproj_lanes_fwd(w, img, &arg->geom, pc.xs, pc.xe, pc.n, pc.values, lanes);
    }
    return;
  }
#endif
  sproj_cpu_run(buffers, cl_arg, fwd_lor);
}

SPROJ_PROJ_MODEL(joseph3d_fwd_model, "starproj_joseph3d_fwd");
SPROJ_PROJ_CODELET(sproj_joseph3d_fwd_cl, joseph3d_fwd_cpu, sproj_joseph3d_fwd_cuda, joseph3d_fwd_model, "joseph3d_fwd");
