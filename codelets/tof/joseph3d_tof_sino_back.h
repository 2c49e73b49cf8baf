/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_back.h: TOF-sinogram back projection of one LOR, the adjoint of joseph3d_tof_sino_fwd.h. */
#ifndef SPROJ_JOSEPH3D_TOF_SINO_BACK_H
#define SPROJ_JOSEPH3D_TOF_SINO_BACK_H

#include "joseph3d_ray.h"
#include "tof.h"

/* Adds, for each sample, cf * (sum over its window of normalised weight * p[b]) times the bilinear weights. */
SPROJ_HD void joseph3d_tof_sino_back_lor(struct sproj_out img, const struct sproj_geom *geom, const float *xs,
                                         const float *xe, const struct sproj_tof_arg *tof, float sigma, float offset,
                                         const float *p)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  if (!sproj_tof_ray_setup(xs, xe, geom, tof, sigma, offset, &r, &l))
    return;
  for (int k = r.first; k <= r.last; k++) {
    struct sproj_tof_sample s;
    sproj_tof_sample_at(&l, k, tof->num_bins, &s);
    if (s.j0 >= s.j1)
      continue; /* the window lies beyond the bins */
    /* the window's first and last edges: the loop's too when the window lies inside the bins (sproj_tof_step_edges) */
    float e_first = sproj_tof_sample_edge(&s, &l, 0), e_last = sproj_tof_sample_edge(&s, &l, s.n);
    float acc = 0.0f;
    float ed[SPROJ_TOF_STEP + 1];
    ed[0] = s.j0 == 0 ? e_first : sproj_tof_sample_edge(&s, &l, s.j0);
    SPROJ_TOF_BIN_LOOP
    for (int j = s.j0; j < s.j1; j += SPROJ_TOF_STEP) {
      sproj_tof_step_edges(&s, &l, j, e_last, ed);
      SPROJ_TOF_UNROLL
      for (int q = 0; q < SPROJ_TOF_STEP; q++)
        if (q == 0 || j + q < s.j1) /* q == 0: the loop's own condition (no branch once unrolled) */
          acc += p[s.it_min + j + q] * (0.5f * (ed[q] - ed[q + 1]));
      ed[0] = ed[SPROJ_TOF_STEP];
    }
    if (acc == 0.0f)
      continue; /* nothing to add: spare the atomics */
    acc = acc / sproj_tof_sum(e_first, e_last);
    sproj_ray_scatter(img, &r, k, r.cf * acc);
  }
}

#endif
