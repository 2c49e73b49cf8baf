/* joseph3d_tof_sino_back.h: TOF-sinogram back projection of one LOR, the adjoint of joseph3d_tof_sino_fwd.h. */
#ifndef SPROJ_JOSEPH3D_TOF_SINO_BACK_H
#define SPROJ_JOSEPH3D_TOF_SINO_BACK_H

#include "joseph3d_ray.h"
#include "tof.h"

/* Adds, for each sample, cf * (sum over its window of normalised weight * p[b]) times the bilinear weights. */
SPROJ_HD void joseph3d_tof_sino_back_lor(float *img, const struct sproj_geom *g, const float *xs, const float *xe,
                                         const struct sproj_tof_arg *t, float sigma, float offset, const float *p)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  if (!sproj_ray_setup(xs, xe, g, &r))
    return;
  sproj_tof_line_setup(&r, g, xs, xe, t, sigma, offset, &l);
  for (int k = r.first; k <= r.last; k++) {
    float it_f = k * l.at + l.bt;
    int n, it_min = sproj_tof_window(it_f, l.max_diff, &n);
    int j0 = it_min < 0 ? -it_min : 0, j1 = it_min + n > t->num_bins ? t->num_bins - it_min : n;
    float acc = 0.0f;
    float e = j0 < j1 ? sproj_tof_edge(it_f, it_min, j0, l.edge_scale) : 0.0f;
    for (int j = j0; j < j1; j++) {
      float e_next = sproj_tof_edge(it_f, it_min, j + 1, l.edge_scale);
      acc += p[it_min + j] * (0.5f * (e - e_next));
      e = e_next;
    }
    if (acc == 0.0f)
      continue; /* nothing to add: spare the atomics */
    acc = acc / sproj_tof_sum(sproj_tof_edge(it_f, it_min, 0, l.edge_scale),
                              sproj_tof_edge(it_f, it_min, n, l.edge_scale));
    sproj_ray_scatter(img, &r, k, r.cf * acc);
  }
}

#endif
