/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_fwd.h: TOF-sinogram forward projection of one LOR into its num_bins values (host + CUDA). */
#ifndef SPROJ_JOSEPH3D_TOF_SINO_FWD_H
#define SPROJ_JOSEPH3D_TOF_SINO_FWD_H

#include "joseph3d_ray.h"
#include "tof.h"
#include "tof_slide.h"

/* Adds the sample's v times the normalised weight of each bin of its window inside the bins into out (bin b at
 * out[b * stride]); e_first and e_last are the window's first and last edges. */
SPROJ_HD void sproj_tof_fwd_sample_bins(const struct sproj_tof_sample *s, const struct sproj_tof_line *l, float v,
                                        float e_first, float e_last, float *out, unsigned stride)
{
  float ed[SPROJ_TOF_STEP + 1];
  ed[0] = s->j0 == 0 ? e_first : sproj_tof_sample_edge(s, l, s->j0);
  SPROJ_TOF_BIN_LOOP
  for (int j = s->j0; j < s->j1; j += SPROJ_TOF_STEP) {
    sproj_tof_step_edges(s, l, j, e_last, ed);
    SPROJ_TOF_UNROLL
    for (int q = 0; q < SPROJ_TOF_STEP; q++)
      if (q == 0 || j + q < s->j1) /* q == 0: the loop's own condition (no branch once unrolled) */
        out[(s->it_min + j + q) * stride] += v * (0.5f * (ed[q] - ed[q + 1]));
    ed[0] = ed[SPROJ_TOF_STEP];
  }
}

/* A prepared ray's samples into out (zeroed): from src, the image (paired 0) or the ray's pair layout (paired 1,
 * sproj_ray_pairs; a constant after inlining, so that each kind compiles a loop of its own). */
SPROJ_HD void sproj_tof_sino_fwd_walk(const float *src, int paired, const struct sproj_ray *r,
                                      const struct sproj_tof_line *l, int num_bins, float *out, unsigned stride)
{
  for (int k = r->first; k <= r->last; k++) {
    struct sproj_tof_sample s;
    sproj_tof_sample_at(l, k, num_bins, &s);
    if (s.j0 >= s.j1)
      continue; /* the window lies beyond the bins */
    /* the window's first and last edges give its total and, when the window lies inside the bins, are also the
     * loop's first and last (sproj_tof_step_edges) */
    float e_first = sproj_tof_sample_edge(&s, l, 0), e_last = sproj_tof_sample_edge(&s, l, s.n);
    float v = r->cf * (paired ? sproj_ray_sample_pairs(src, r, k) : sproj_ray_sample(src, r, k));
    v = v / sproj_tof_sum(e_first, e_last);
    sproj_tof_fwd_sample_bins(&s, l, v, e_first, e_last, out, stride);
  }
}

/* sproj_tof_sino_fwd_walk with the window's bins in registers (tof_slide.h): `width` (a constant after inlining, at
 * most SPROJ_TOF_SLIDE_MAX) bins from the window's first, which slide along as the windows move and go into out once
 * each. A sample whose window is wider adds into out as sproj_tof_sino_fwd_walk does. Each bin gets the same
 * additions in the same order as there: the values are its bits. */
SPROJ_HD void sproj_tof_sino_fwd_walk_slide(const float *src, int paired, const struct sproj_ray *r,
                                            const struct sproj_tof_line *l, int num_bins, float *out, unsigned stride,
                                            int width)
{
  struct sproj_tof_slide w;
  sproj_tof_slide_start(&w, width);
  for (int k = r->first; k <= r->last; k++) {
    struct sproj_tof_sample s;
    sproj_tof_sample_at(l, k, num_bins, &s);
    if (s.j0 >= s.j1)
      continue; /* the window lies beyond the bins */
    float e[SPROJ_TOF_SLIDE_MAX + 1], e_last;
    if (s.n > width) {
      float e_first = sproj_tof_sample_edge(&s, l, 0);
      e_last = sproj_tof_sample_edge(&s, l, s.n);
      float v = r->cf * (paired ? sproj_ray_sample_pairs(src, r, k) : sproj_ray_sample(src, r, k));
      sproj_tof_fwd_sample_bins(&s, l, v / sproj_tof_sum(e_first, e_last), e_first, e_last, out, stride);
      continue;
    }
    sproj_tof_slide_flush_to(&w, s.it_min, width, num_bins, out, stride);
    e_last = sproj_tof_slide_edges(&s, l, width, e);
    float v = r->cf * (paired ? sproj_ray_sample_pairs(src, r, k) : sproj_ray_sample(src, r, k));
    v = v / sproj_tof_sum(e[0], e_last);
    SPROJ_TOF_SLIDE_UNROLL
    for (int q = 0; q < width; q++)
      if (q < s.n)
        w.bin[q] += v * (0.5f * (e[q] - e[q + 1]));
  }
  sproj_tof_slide_flush_all(&w, width, num_bins, out, stride);
}

/* out[b * stride] (b < num_bins) = sum over the samples of cf * image sample * normalised weight of bin b. The
 * stride lets a CUDA thread accumulate in its column of a shared-memory block instead of in global memory. tab: the
 * edges' table (tof_table.h) or NULL (erff). pairs: the image's pair layouts (joseph3d_ray.h), which the samples then
 * come from with the same bits, or NULL. width: 0, or the sliding bins' (sproj_tof_sino_fwd_walk_slide; the same
 * bits). */
SPROJ_HD void joseph3d_tof_sino_fwd_from(const float *img, const float *pairs, const struct sproj_geom *geom,
                                         const float *xs, const float *xe, const struct sproj_tof_arg *tof, float sigma,
                                         float offset, const struct sproj_tof_table *tab, float *out, unsigned stride,
                                         int width)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  for (int b = 0; b < tof->num_bins; b++)
    out[b * stride] = 0.0f;
  if (!sproj_tof_ray_setup(xs, xe, geom, tof, sigma, offset, tab, &r, &l))
    return;
  const float *p = sproj_ray_pairs(pairs, &r, geom);
  if (width == 0 && p)
    sproj_tof_sino_fwd_walk(p, 1, &r, &l, tof->num_bins, out, stride);
  else if (width == 0)
    sproj_tof_sino_fwd_walk(img, 0, &r, &l, tof->num_bins, out, stride);
  else if (p)
    sproj_tof_sino_fwd_walk_slide(p, 1, &r, &l, tof->num_bins, out, stride, width);
  else
    sproj_tof_sino_fwd_walk_slide(img, 0, &r, &l, tof->num_bins, out, stride, width);
}

/* The ordinary loop from the image (joseph3d_tof_sino_fwd_from). */
SPROJ_HD void joseph3d_tof_sino_fwd_lor(const float *img, const struct sproj_geom *geom, const float *xs,
                                        const float *xe, const struct sproj_tof_arg *tof, float sigma, float offset,
                                        const struct sproj_tof_table *tab, float *out, unsigned stride)
{
  joseph3d_tof_sino_fwd_from(img, NULL, geom, xs, xe, tof, sigma, offset, tab, out, stride, 0);
}

/* The sliding bins from the image (joseph3d_tof_sino_fwd_from); width at least 1. */
SPROJ_HD void joseph3d_tof_sino_fwd_slide(const float *img, const struct sproj_geom *geom, const float *xs,
                                          const float *xe, const struct sproj_tof_arg *tof, float sigma, float offset,
                                          const struct sproj_tof_table *tab, float *out, unsigned stride, int width)
{
  joseph3d_tof_sino_fwd_from(img, NULL, geom, xs, xe, tof, sigma, offset, tab, out, stride, width);
}

#endif
