/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_fwd.c: CPU codelet, codelet struct and performance model of the non-TOF forward projection. */
#include "config.h"
#include "codelets.h"
#include "joseph3d_fwd.h"
#include "joseph3d_lanes.h"

static void fwd_lor(const struct sproj_proj_arg *arg, float *img, const struct sproj_piece *piece, uint32_t lor)
{
  const float *xs = piece->xs + 3 * (size_t)lor, *xe = piece->xe + 3 * (size_t)lor;
  piece->values[lor] = joseph3d_fwd_lor(img, &arg->geom, xs, xe);
}

static void joseph3d_fwd_cpu(void *buffers[], void *cl_arg)
{
#ifdef SPROJ_HAVE_LANES
  const struct sproj_proj_arg *arg = cl_arg;
  int lanes = sproj_lanes_fit(&arg->geom) ? sproj_cpu_lanes() : 0;
  struct sproj_lanes_work *work = lanes ? sproj_cpu_scratch(sizeof *work) : NULL;
  if (work) {
    const float *img = (const float *)STARPU_VECTOR_GET_PTR(buffers[0]);
    for (int p = 0; p < arg->npieces; p++) {
      struct sproj_piece piece = sproj_piece_get(buffers, arg, p);
      sproj_lanes_fwd(work, img, &arg->geom, piece.xs, piece.xe, piece.n, piece.values, lanes);
    }
    return;
  }
#endif
  sproj_cpu_run(buffers, cl_arg, fwd_lor);
}

SPROJ_PROJ_MODEL(joseph3d_fwd_model, "starproj_joseph3d_fwd");
SPROJ_PROJ_CODELET(sproj_joseph3d_fwd_cl, joseph3d_fwd_cpu, sproj_joseph3d_fwd_cuda, joseph3d_fwd_model, "joseph3d_fwd");
