/* joseph3d_tof_sino_fwd.h: TOF-sinogram forward projection of one LOR into its num_bins values (host + CUDA). */
#ifndef SPROJ_JOSEPH3D_TOF_SINO_FWD_H
#define SPROJ_JOSEPH3D_TOF_SINO_FWD_H

#include "joseph3d_ray.h"
#include "tof.h"

/* out[b] (b < num_bins) = sum over the samples of cf * image sample * normalised weight of bin b. */
SPROJ_HD void joseph3d_tof_sino_fwd_lor(const float *img, const struct sproj_geom *g, const float *xs, const float *xe,
                                        const struct sproj_tof_arg *t, float sigma, float offset, float *out)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  for (int b = 0; b < t->num_bins; b++)
    out[b] = 0.0f;
  if (!sproj_ray_setup(xs, xe, g, &r))
    return;
  sproj_tof_line_setup(&r, g, xs, xe, t, sigma, offset, &l);
  for (int k = r.first; k <= r.last; k++) {
    float it_f = k * l.at + l.bt;
    int n, it_min = sproj_tof_window(it_f, l.max_diff, &n);
    int j0 = it_min < 0 ? -it_min : 0, j1 = it_min + n > t->num_bins ? t->num_bins - it_min : n;
    if (j0 >= j1)
      continue; /* the window lies beyond the bins */
    float v = r.cf * sproj_ray_sample(img, &r, k);
    v = v / sproj_tof_sum(sproj_tof_edge(it_f, it_min, 0, l.edge_scale), sproj_tof_edge(it_f, it_min, n, l.edge_scale));
    float e = sproj_tof_edge(it_f, it_min, j0, l.edge_scale);
    for (int j = j0; j < j1; j++) {
      float e_next = sproj_tof_edge(it_f, it_min, j + 1, l.edge_scale);
      out[it_min + j] += v * (0.5f * (e - e_next));
      e = e_next;
    }
  }
}

#endif
