/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_fwd.h: TOF-sinogram forward projection of one LOR into its num_bins values (host + CUDA). */
#ifndef SPROJ_JOSEPH3D_TOF_SINO_FWD_H
#define SPROJ_JOSEPH3D_TOF_SINO_FWD_H

#include "joseph3d_ray.h"
#include "tof.h"

/* out[b * stride] (b < num_bins) = sum over the samples of cf * image sample * normalised weight of bin b. The
 * stride lets a CUDA thread accumulate in its column of a shared-memory block instead of in global memory. */
SPROJ_HD void joseph3d_tof_sino_fwd_lor(const float *img, const struct sproj_geom *geom, const float *xs,
                                        const float *xe, const struct sproj_tof_arg *tof, float sigma, float offset,
                                        float *out, unsigned stride)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  for (int b = 0; b < tof->num_bins; b++)
    out[b * stride] = 0.0f;
  if (!sproj_tof_ray_setup(xs, xe, geom, tof, sigma, offset, &r, &l))
    return;
  for (int k = r.first; k <= r.last; k++) {
    struct sproj_tof_sample s;
    sproj_tof_sample_at(&l, k, tof->num_bins, &s);
    if (s.j0 >= s.j1)
      continue; /* the window lies beyond the bins */
    /* the window's first and last edges give its total and, when the window lies inside the bins, are also the
     * loop's first and last (sproj_tof_step_edges) */
    float e_first = sproj_tof_sample_edge(&s, &l, 0), e_last = sproj_tof_sample_edge(&s, &l, s.n);
    float v = r.cf * sproj_ray_sample(img, &r, k);
    v = v / sproj_tof_sum(e_first, e_last);
    float ed[SPROJ_TOF_STEP + 1];
    ed[0] = s.j0 == 0 ? e_first : sproj_tof_sample_edge(&s, &l, s.j0);
    SPROJ_TOF_BIN_LOOP
    for (int j = s.j0; j < s.j1; j += SPROJ_TOF_STEP) {
      sproj_tof_step_edges(&s, &l, j, e_last, ed);
      SPROJ_TOF_UNROLL
      for (int q = 0; q < SPROJ_TOF_STEP; q++)
        if (q == 0 || j + q < s.j1) /* q == 0: the loop's own condition (no branch once unrolled) */
          out[(s.it_min + j + q) * stride] += v * (0.5f * (ed[q] - ed[q + 1]));
      ed[0] = ed[SPROJ_TOF_STEP];
    }
  }
}

#endif
