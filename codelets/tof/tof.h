/* SPDX-License-Identifier: Apache-2.0 */
/* tof.h: time-of-flight weights of Joseph samples (host + CUDA), shared by the TOF sinogram and listmode projectors.
 *
 * Bin b of a LOR is centred (b - (num_bins-1)/2) * bin_width from its midpoint, shifted by center_offset towards
 * xend. A sample at TOF coordinate t (in bins) contributes to the bins of its window [it_min, it_min + n) with the
 * Gaussian integrated over each bin, normalised over the window. The weights are differences of erf at the bin
 * edges, so a window of n bins costs n + 1 erf and its normalisation is the first minus the last edge value: the
 * sinogram and the listmode projectors compute bit-identical weights. */
#ifndef SPROJ_TOF_H
#define SPROJ_TOF_H

#include "joseph3d_ray.h"
#include "tof_table.h"

/* Longest window of bins one sample contributes to (parallelproj's MAX_NUM_TOF_WEIGHTS). */
#define SPROJ_TOF_MAX_WINDOW 64

/* The loops over a sample's window in the sinogram projectors take SPROJ_TOF_STEP bins per iteration: one on a CPU;
 * on a GPU SPROJ_TOF_GPU_STEP, whose edges' erf are independent of each other (those past the window's end are
 * computed and left unused), so that a warp keeps its lanes together and has several erf chains in flight. Left to
 * itself the compiler unrolled the loop by four with the window's length modulo four peeled off first, and since
 * neighbouring LORs' windows differ by a bin, a warp ran the peeled bins with a quarter of its lanes
 * (doc/benchmarks.md, version 17). SPROJ_TOF_BIN_LOOP goes before the loop, SPROJ_TOF_UNROLL before a loop over a
 * step's bins. */
#ifdef __CUDA_ARCH__
#ifndef SPROJ_TOF_GPU_STEP
#define SPROJ_TOF_GPU_STEP 4
#endif
#define SPROJ_TOF_STEP SPROJ_TOF_GPU_STEP
#define SPROJ_TOF_BIN_LOOP _Pragma("unroll 1")
#define SPROJ_TOF_UNROLL _Pragma("unroll")
#else
#define SPROJ_TOF_STEP 1
#define SPROJ_TOF_BIN_LOOP
#define SPROJ_TOF_UNROLL
#endif

/* Largest |TOF coordinate| of a sample, in bins, before the window is computed (see sproj_tof_sample_at). */
#define SPROJ_TOF_MAX_COORD 8388608.0f

/* sqrt(2), of the Gaussian's integral erf(x / (sqrt(2) sigma)), as a float. */
#define SPROJ_SQRT2 1.41421356237309505f

/* Conventions of sproj_tof_arg.convention: starproj's (starproj.h), or libparallelproj 2.x's as its code computes
 * them (sproj_tof_set_convention): the centre offset along the principal axis, and its own listmode projection
 * (joseph3d_tof_lm.h). Tasks of one request share one convention, so the branches on it never split a warp. */
#define SPROJ_TOF_ARG_STARPROJ 0
#define SPROJ_TOF_ARG_PARALLELPROJ 1

/* TOF parameters of a projection task (scalars; per-LOR sigma / offset come as buffers). */
struct sproj_tof_arg {
  float bin_width;
  float num_sigmas;
  float sigma;          /* used when per_lor_sigma is 0 */
  float center_offset;  /* used when per_lor_offset is 0 */
  int num_bins;
  int per_lor_sigma, per_lor_offset;
  int convention;       /* SPROJ_TOF_ARG_* */
};

/* A window's half-width in bins, and the factor that turns a distance in bins into an erf argument, for one sigma:
 * the values every sample of the LOR uses (and the table is made for: sproj_tof_table_plan_for). A window wider than
 * SPROJ_TOF_MAX_WINDOW is cut to that many bins around the sample whatever its width, so clamping the half-width
 * there changes no weight and keeps the window's float -> int conversions defined. */
SPROJ_HD float sproj_tof_max_diff(const struct sproj_tof_arg *tof, float sigma)
{
  return fminf(tof->num_sigmas * sigma / tof->bin_width, (float)SPROJ_TOF_MAX_WINDOW);
}

SPROJ_HD float sproj_tof_edge_scale(const struct sproj_tof_arg *tof, float sigma)
{
  return tof->bin_width / (SPROJ_SQRT2 * sigma);
}

/* The edges' table of a task whose LORs share the sigma tof->sigma, or 0 when it has none: per-LOR sigma (a host
 * array whose values are all equal is registered as the scalar, src/core/tof.c), a sigma that is not positive, or
 * windows that may be cut to SPROJ_TOF_MAX_WINDOW bins (whose edges are not those tof_table.h counts). A LOR's
 * weights so depend on its sigma alone, on CPUs and GPUs alike: every LOR of one sigma gets the table's. */
SPROJ_HD int sproj_tof_table_plan_for(const struct sproj_tof_arg *tof, struct sproj_tof_table_plan *plan)
{
  if (tof->per_lor_sigma || tof->num_bins <= 0 || !(tof->sigma > 0.0f) || !(tof->bin_width > 0.0f))
    return 0;
  float max_diff = sproj_tof_max_diff(tof, tof->sigma);
  /* at most ceil(2 max_diff) + 3 bins (one for the rounding of it_f -+ max_diff) */
  if (!(max_diff <= 0.5f * (float)(SPROJ_TOF_MAX_WINDOW - 4)))
    return 0;
  return sproj_tof_table_plan(sproj_tof_edge_scale(tof, tof->sigma), max_diff, plan);
}

/* The TOF coordinate (in bins) of the sample in plane k: k * at + bt. */
struct sproj_tof_line {
  float at, bt;
  float max_diff;       /* window half-width in bins: num_sigmas * sigma / bin_width */
  float edge_scale;     /* bin_width / (sqrt(2) sigma): turns a distance in bins into an erf argument */
  int tabbed;                 /* the edges come from tab (tof_table.h), else from erff */
  struct sproj_tof_table tab; /* a copy the compiler keeps in registers */
};

SPROJ_HD void sproj_tof_line_setup(const struct sproj_ray *r, const struct sproj_geom *geom, const float *xs,
                                   const float *xe, const struct sproj_tof_arg *tof, float sigma, float offset,
                                   const struct sproj_tof_table *tab, struct sproj_tof_line *l)
{
  int a = r->axis;
  float costheta = geom->voxel_size[a] / r->cf;
  float sign = xe[a] >= xs[a] ? 1.0f : -1.0f;
  /* centre of bin 0 projected on the principal axis; the offset runs along the LOR towards xend */
  float tof_origin;
  if (tof->convention == SPROJ_TOF_ARG_PARALLELPROJ)
    /* libparallelproj's: the offset runs along the principal axis (towards xend only where xend's coordinate is the
     * larger), and the centre is summed in double as its workers sum it, so that its listmode windows
     * (sproj_tof_pp_planes) end at the very planes its own end at */
    tof_origin = (float)(0.5 * (double)(xs[a] + xe[a]) -
                         (double)sign * (0.5 * tof->num_bins - 0.5) * (double)(tof->bin_width * costheta) +
                         (double)(offset * costheta));
  else
    tof_origin = 0.5f * (xs[a] + xe[a]) - sign * (0.5f * tof->num_bins - 0.5f) * (tof->bin_width * costheta) +
                 sign * offset * costheta;
  float tof_slope = sign * tof->bin_width * costheta;
  l->at = sign * r->cf / tof->bin_width;
  l->bt = (geom->origin[a] - tof_origin) / tof_slope;
  l->max_diff = sproj_tof_max_diff(tof, sigma);
  l->edge_scale = sproj_tof_edge_scale(tof, sigma);
  /* the caller passes a table only for tasks of its sigma (sproj_tof_table_plan_for); a kernel that passes the
   * constant NULL (or a table) compiles one kind of edge without a branch */
  l->tabbed = tab != NULL;
  l->tab = tab ? *tab : sproj_tof_table_none();
}

/* The ray and its TOF line: 0 when the LOR samples no plane (as sproj_ray_setup). */
SPROJ_HD int sproj_tof_ray_setup(const float *xs, const float *xe, const struct sproj_geom *geom,
                                 const struct sproj_tof_arg *tof, float sigma, float offset,
                                 const struct sproj_tof_table *tab, struct sproj_ray *r, struct sproj_tof_line *l)
{
  if (!sproj_ray_setup(xs, xe, geom, r))
    return 0;
  sproj_tof_line_setup(r, geom, xs, xe, tof, sigma, offset, tab, l);
  return 1;
}

/* Window of the sample at TOF coordinate it_f: first bin and number of bins (as parallelproj chooses them). */
SPROJ_HD int sproj_tof_window(float it_f, float max_diff, int *n)
{
  int it_min = (int)floorf(it_f - max_diff);
  int it_max = (int)ceilf(it_f + max_diff);
  *n = it_max + 1 - it_min;
  if (*n > SPROJ_TOF_MAX_WINDOW) {
    it_min = (int)lroundf(it_f) - SPROJ_TOF_MAX_WINDOW / 2;
    *n = SPROJ_TOF_MAX_WINDOW;
  }
  return it_min;
}

/* erf at edge j (0..n) of the window: the upper edge of bin it_min + j - 1, i.e. the lower edge of bin it_min + j */
SPROJ_HD float sproj_tof_edge(float it_f, int it_min, int j, float edge_scale)
{
  return erff(((it_f - (float)it_min) - (float)j + 0.5f) * edge_scale);
}

/* Total weight of a window (what its bins' weights are divided by). Bin it_min + k weighs 0.5 * (edge(k) -
 * edge(k+1)), so the total is 0.5 * (edge(0) - edge(n)); an empty total (sigma far below the bin width) counts 1. */
SPROJ_HD float sproj_tof_sum(float e_first, float e_last)
{
  float sum = 0.5f * (e_first - e_last);
  return sum > 0.0f ? sum : 1.0f;
}

/* The sample in plane k: its TOF coordinate, its window [it_min, it_min + n) and the part of the window inside the
 * bins 0 .. num_bins-1, which is it_min + j0 .. it_min + j1 - 1 (empty when j0 >= j1). */
struct sproj_tof_sample {
  float it_f;
  int it_min, n, j0, j1;
  struct sproj_tof_table_at at; /* its place in the line's table, when it has one */
};

SPROJ_HD void sproj_tof_sample_at(const struct sproj_tof_line *l, int k, int num_bins, struct sproj_tof_sample *s)
{
  /* beyond SPROJ_TOF_MAX_COORD bins a window cannot reach bins 0 .. SPROJ_MAX_TOF_BINS-1: clamping there (NaN
   * included) changes no weight and keeps the window's float -> int conversions and negations defined */
  s->it_f = fminf(fmaxf(k * l->at + l->bt, -SPROJ_TOF_MAX_COORD), SPROJ_TOF_MAX_COORD);
  s->it_min = sproj_tof_window(s->it_f, l->max_diff, &s->n);
  s->j0 = s->it_min < 0 ? -s->it_min : 0;
  s->j1 = s->it_min + s->n > num_bins ? num_bins - s->it_min : s->n;
  if (l->tabbed) {
    s->at = sproj_tof_table_find(&l->tab, s->it_f, s->it_min);
  } else {
    s->at.row = 0;
    s->at.t = 0.0f;
  }
}

/* erf at edge j of the sample's window (from the line's table when it has one), and the window's total weight */
SPROJ_HD float sproj_tof_sample_edge(const struct sproj_tof_sample *s, const struct sproj_tof_line *l, int j)
{
  if (l->tabbed)
    return sproj_tof_table_edge(&l->tab, s->at, j);
  return sproj_tof_edge(s->it_f, s->it_min, j, l->edge_scale);
}

/* erf at edges j + 1 .. j + SPROJ_TOF_STEP of the window into ed[1 ..] (ed[0] holds edge j's); e_last is edge n's
 * value. A CPU reuses e_last for edge n; a GPU computes that erf again (the same value), since a branch around it
 * costs a warp more than the erf. */
SPROJ_HD void sproj_tof_step_edges(const struct sproj_tof_sample *s, const struct sproj_tof_line *l, int j, float e_last,
                                   float ed[SPROJ_TOF_STEP + 1])
{
  SPROJ_TOF_UNROLL
  for (int q = 1; q <= SPROJ_TOF_STEP; q++) {
#ifdef __CUDA_ARCH__
    (void)e_last;
    ed[q] = sproj_tof_sample_edge(s, l, j + q);
#else
    ed[q] = j + q == s->n ? e_last : sproj_tof_sample_edge(s, l, j + q);
#endif
  }
}

SPROJ_HD float sproj_tof_sample_sum(const struct sproj_tof_sample *s, const struct sproj_tof_line *l)
{
  return sproj_tof_sum(sproj_tof_sample_edge(s, l, 0), sproj_tof_sample_edge(s, l, s->n));
}

/* Per-LOR sigma and offset, from the per-LOR buffers when given. */
SPROJ_HD void sproj_tof_lor_params(const struct sproj_tof_arg *tof, const float *sigma, const float *offset,
                                   unsigned i, float *s, float *o)
{
  *s = tof->per_lor_sigma ? sigma[i] : tof->sigma;
  *o = tof->per_lor_offset ? offset[i] : tof->center_offset;
}

#endif
