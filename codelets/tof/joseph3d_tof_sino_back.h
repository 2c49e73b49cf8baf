/* SPDX-License-Identifier: Apache-2.0 */
/* joseph3d_tof_sino_back.h: TOF-sinogram back projection of one LOR, the adjoint of joseph3d_tof_sino_fwd.h. */
#ifndef SPROJ_JOSEPH3D_TOF_SINO_BACK_H
#define SPROJ_JOSEPH3D_TOF_SINO_BACK_H

#include "joseph3d_ray.h"
#include "tof.h"
#include "tof_slide.h"

/* The sum over the sample's window inside the bins of p[b] times the bin's weight (not yet normalised); e_first and
 * e_last are the window's first and last edges. */
SPROJ_HD float sproj_tof_back_sample_bins(const struct sproj_tof_sample *s, const struct sproj_tof_line *l,
                                          const float *p, float e_first, float e_last)
{
  float acc = 0.0f;
  float ed[SPROJ_TOF_STEP + 1];
  ed[0] = s->j0 == 0 ? e_first : sproj_tof_sample_edge(s, l, s->j0);
  SPROJ_TOF_BIN_LOOP
  for (int j = s->j0; j < s->j1; j += SPROJ_TOF_STEP) {
    sproj_tof_step_edges(s, l, j, e_last, ed);
    SPROJ_TOF_UNROLL
    for (int q = 0; q < SPROJ_TOF_STEP; q++)
      if (q == 0 || j + q < s->j1) /* q == 0: the loop's own condition (no branch once unrolled) */
        acc += p[s->it_min + j + q] * (0.5f * (ed[q] - ed[q + 1]));
    ed[0] = ed[SPROJ_TOF_STEP];
  }
  return acc;
}

/* The value the sample in plane k adds (times its bilinear weights): cf * (sum over its window of normalised weight
 * * p[b]); 0 when its window lies beyond the bins. */
SPROJ_HD float sproj_tof_back_sample(const struct sproj_ray *r, const struct sproj_tof_line *l, int k, int num_bins,
                                     const float *p)
{
  struct sproj_tof_sample s;
  sproj_tof_sample_at(l, k, num_bins, &s);
  if (s.j0 >= s.j1)
    return 0.0f; /* the window lies beyond the bins */
  /* the window's first and last edges: the loop's too when the window lies inside the bins (sproj_tof_step_edges) */
  float e_first = sproj_tof_sample_edge(&s, l, 0), e_last = sproj_tof_sample_edge(&s, l, s.n);
  float acc = sproj_tof_back_sample_bins(&s, l, p, e_first, e_last);
  if (acc == 0.0f)
    return 0.0f; /* nothing to add: spare the atomics */
  return r->cf * (acc / sproj_tof_sum(e_first, e_last));
}

/* Adds, for each sample, cf * (sum over its window of normalised weight * p[b]) times the bilinear weights. tab: the
 * edges' table (tof_table.h) or NULL (erff). */
SPROJ_HD void joseph3d_tof_sino_back_lor(struct sproj_out img, const struct sproj_geom *geom, const float *xs,
                                         const float *xe, const struct sproj_tof_arg *tof, float sigma, float offset,
                                         const struct sproj_tof_table *tab, const float *p)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  if (!sproj_tof_ray_setup(xs, xe, geom, tof, sigma, offset, tab, &r, &l))
    return;
  for (int k = r.first; k <= r.last; k++) {
    float v = sproj_tof_back_sample(&r, &l, k, tof->num_bins, p);
    if (v != 0.0f)
      sproj_ray_scatter(img, &r, k, v);
  }
}

/* The value of the sample in plane k with the LOR's bins in registers (tof_slide.h; w as sproj_tof_slide_start left it
 * before the first call, then called for increasing k): the bits of sproj_tof_back_sample, whose sum has the same
 * terms in the same order (bins beyond num_bins add 0 * weight = +0). */
SPROJ_HD float sproj_tof_back_slide_sample(const struct sproj_ray *r, const struct sproj_tof_line *l, int k,
                                           int num_bins, const float *p, struct sproj_tof_slide *w, int width)
{
  struct sproj_tof_sample s;
  sproj_tof_sample_at(l, k, num_bins, &s);
  if (s.j0 >= s.j1)
    return 0.0f;
  float acc = 0.0f, e_last, e[SPROJ_TOF_SLIDE_MAX + 1];
  if (s.n > width) {
    e[0] = sproj_tof_sample_edge(&s, l, 0);
    e_last = sproj_tof_sample_edge(&s, l, s.n);
    acc = sproj_tof_back_sample_bins(&s, l, p, e[0], e_last);
  } else {
    sproj_tof_slide_load_to(w, s.it_min, width, num_bins, p);
    e_last = sproj_tof_slide_edges(&s, l, width, e);
    SPROJ_TOF_SLIDE_UNROLL
    for (int q = 0; q < width; q++)
      if (q < s.n)
        acc += w->bin[q] * (0.5f * (e[q] - e[q + 1]));
  }
  if (acc == 0.0f)
    return 0.0f;
  return r->cf * (acc / sproj_tof_sum(e[0], e_last));
}

/* joseph3d_tof_sino_back_lor with the bins in registers: `width` (a constant after inlining, at most
 * SPROJ_TOF_SLIDE_MAX) bins. */
SPROJ_HD void joseph3d_tof_sino_back_slide(struct sproj_out img, const struct sproj_geom *geom, const float *xs,
                                           const float *xe, const struct sproj_tof_arg *tof, float sigma, float offset,
                                           const struct sproj_tof_table *tab, const float *p, int width)
{
  struct sproj_ray r;
  struct sproj_tof_line l;
  if (!sproj_tof_ray_setup(xs, xe, geom, tof, sigma, offset, tab, &r, &l))
    return;
  struct sproj_tof_slide w;
  sproj_tof_slide_start(&w, width);
  for (int k = r.first; k <= r.last; k++) {
    float v = sproj_tof_back_slide_sample(&r, &l, k, tof->num_bins, p, &w, width);
    if (v != 0.0f)
      sproj_ray_scatter(img, &r, k, v);
  }
}

#endif
