/* SPDX-License-Identifier: Apache-2.0 */
/* tof_table.h: the TOF bin edges' erf as a table of cubic pieces (host + CUDA), for tasks whose LORs share one sigma.
 *
 * Edge j of the window of a sample at TOF coordinate it_f (tof.h) is erf(((it_f - it_min) - j + 0.5) * edge_scale).
 * Writing it_f = F + f (F = floor(it_f), 0 <= f < 1), that is E_d(f) = erf((f + d + 0.5) * edge_scale) with the
 * whole number d = F - it_min - j: every edge of a sample is one of a few smooth functions of the same fraction f.
 * The table holds, for each d of a range that covers every window, `steps` cubic pieces in f (Hermite's, from the
 * values and slopes of E_d at f = i / steps and (i + 1) / steps, in double, rounded to float once). A sample finds
 * its piece i and its place t in it once; each edge is then two loads and a polynomial of degree three in t, where
 * erff costs a polynomial of degree ~10 with its branches (CUDA) or a library call (CPU).
 *
 * Error: Hermite's cubic is within h^4 / 384 * max|E''''| of E on a piece of width h = 1 / steps, and E_d'''' =
 * edge_scale^4 * erf''''; with max|erf''''| = 4.405, steps is the smallest power of two (at least
 * SPROJ_TOF_TABLE_MIN_STEPS) that keeps this at most SPROJ_TOF_TABLE_TOLERANCE. The float coefficients and their
 * evaluation add a few roundings of values of magnitude 1 (~2e-7), about what erff's own error is. The weights, which
 * are differences of edges, are not the bits of erff's: tests/check_tof.c measures the worst error of the tabulated
 * weights against the double-precision reference. */
#ifndef SPROJ_TOF_TABLE_H
#define SPROJ_TOF_TABLE_H

#include <math.h>
#include "host_device.h"

/* The bound on the interpolation error of one edge the number of pieces is chosen for. */
#define SPROJ_TOF_TABLE_TOLERANCE 1e-7
/* max |d^4/dx^4 erf(x)| (at x ~ 0.5), and the 384 of Hermite's error bound h^4 / 384 * max|f''''|. */
#define SPROJ_ERF_D4_MAX 4.405
#define SPROJ_HERMITE_ERROR_DIVISOR 384.0
/* Pieces per unit of f: at least this many, at most SPROJ_TOF_TABLE_MAX_STEPS (a power of two each). */
#define SPROJ_TOF_TABLE_MIN_STEPS 8
#define SPROJ_TOF_TABLE_MAX_STEPS 256
/* Pieces of a table at most (16 bytes each, in a CUDA block's shared memory). */
#define SPROJ_TOF_TABLE_MAX_PIECES 1024
/* Whole numbers d below and above the window's reach the table covers: the window starts ceil(max_diff) - 1 or
 * ceil(max_diff) bins below F (one more either way for the rounding of it_f -+ max_diff) and holds at most
 * ceil(2 max_diff) + 3 edges, so d = F - it_min - j lies in [-ceil(max_diff) - 5, ceil(max_diff) + 1]. */
#define SPROJ_TOF_TABLE_D_BELOW 5
#define SPROJ_TOF_TABLE_D_ABOVE 1
/* 2 / sqrt(pi): erf'(x) = 2 / sqrt(pi) exp(-x^2). */
#define SPROJ_TWO_OVER_SQRTPI 1.12837916709551257390

/* A table's shape: d runs from dmin over nd values, f over steps pieces; piece (d, i) is element (d - dmin) * steps
 * + i. */
struct sproj_tof_table_plan {
  float scale; /* the edge_scale it is made for */
  int dmin, nd, steps;
};

/* The shape of the table of a task whose LORs share edge_scale and max_diff (tof.h's sproj_tof_line), or 0 when no
 * table of at most SPROJ_TOF_TABLE_MAX_PIECES pieces serves it (the projectors then call erff). */
SPROJ_HD int sproj_tof_table_plan(float edge_scale, float max_diff, struct sproj_tof_table_plan *plan)
{
  if (!(edge_scale > 0.0f) || !(max_diff >= 0.0f) || max_diff > (float)SPROJ_TOF_TABLE_MAX_PIECES)
    return 0;
  int reach = (int)ceilf(max_diff);
  double h4_bound = SPROJ_TOF_TABLE_TOLERANCE * SPROJ_HERMITE_ERROR_DIVISOR / SPROJ_ERF_D4_MAX;
  int steps = SPROJ_TOF_TABLE_MIN_STEPS;
  double s4 = (double)edge_scale * edge_scale * edge_scale * edge_scale;
  while (steps < SPROJ_TOF_TABLE_MAX_STEPS && s4 / ((double)steps * steps * steps * steps) > h4_bound)
    steps *= 2;
  if (s4 / ((double)steps * steps * steps * steps) > h4_bound)
    return 0;
  plan->scale = edge_scale;
  plan->dmin = -reach - SPROJ_TOF_TABLE_D_BELOW;
  plan->nd = 2 * reach + SPROJ_TOF_TABLE_D_BELOW + SPROJ_TOF_TABLE_D_ABOVE + 1;
  plan->steps = steps;
  return plan->nd * steps <= SPROJ_TOF_TABLE_MAX_PIECES;
}

/* Piece `at` of the plan's table: the coefficients of c0 + c1 t + c2 t^2 + c3 t^3 (t in [0, 1) across the piece) into
 * lo = (c0, c1) and hi = (c2, c3). In double from erf and exp, on the host and on a GPU alike. */
SPROJ_HD void sproj_tof_table_piece(const struct sproj_tof_table_plan *plan, int at, float lo[2], float hi[2])
{
  int d = plan->dmin + at / plan->steps, i = at % plan->steps;
  double s = plan->scale, h = 1.0 / plan->steps;
  double x0 = (i * h + d + 0.5) * s, x1 = ((i + 1) * h + d + 0.5) * s;
  double v0 = erf(x0), v1 = erf(x1);
  /* slopes per unit of t: dE/df * h */
  double m0 = SPROJ_TWO_OVER_SQRTPI * s * h * exp(-x0 * x0), m1 = SPROJ_TWO_OVER_SQRTPI * s * h * exp(-x1 * x1);
  lo[0] = (float)v0;
  lo[1] = (float)m0;
  hi[0] = (float)(3.0 * (v1 - v0) - 2.0 * m0 - m1);
  hi[1] = (float)(2.0 * (v0 - v1) + m0 + m1);
}

/* A table where the projectors use it: its pieces (on the host lo and hi of piece p at lo[2p], lo[2p + 1] and hi[2p],
 * hi[2p + 1]) and its shape; steps 0: no table. On a GPU the pieces are in the block's dynamic shared memory, piece p
 * whole in float4 at + p (c0, c1, c2, c3: one 16-byte load an edge instead of two of 8 bytes, and one address), which
 * the loads then address as shared memory (a pointer to them would compile to generic loads). */
struct sproj_tof_table {
  const float *lo, *hi;
  unsigned at;
  int dmin, steps;
  unsigned last; /* the last piece */
  float steps_f;
};

/* lo and hi in memory the caller owns (host), at float4 offset `at` of dynamic shared memory (device). */
SPROJ_HD void sproj_tof_table_use(struct sproj_tof_table *tab, const struct sproj_tof_table_plan *plan,
                                  const float *lo, const float *hi, unsigned at)
{
  tab->lo = lo;
  tab->hi = hi;
  tab->at = at;
  tab->dmin = plan->dmin;
  tab->steps = plan->steps;
  tab->last = (unsigned)(plan->nd * plan->steps - 1);
  tab->steps_f = (float)plan->steps;
}

/* No table: the projectors call erff. */
SPROJ_HD struct sproj_tof_table sproj_tof_table_none(void)
{
  struct sproj_tof_table tab = {NULL, NULL, 0u, 0, 0, 0u, 0.0f};
  return tab;
}

#ifdef __CUDACC__
/* A block's dynamic shared memory (every extern __shared__ array names its start), where its table is. */
extern __shared__ float4 sproj_tof_shared[];
#endif

/* A sample's place in the table: edge j of its window is piece row - j * steps, at t. */
struct sproj_tof_table_at {
  int row;
  float t;
};

/* The place of the sample at it_f whose window starts at it_min. f, f * steps and t are exact in float. */
SPROJ_HD struct sproj_tof_table_at sproj_tof_table_find(const struct sproj_tof_table *tab, float it_f, int it_min)
{
  struct sproj_tof_table_at at;
  float fl = floorf(it_f);
  float g = (it_f - fl) * tab->steps_f;
  float i = floorf(g);
  at.t = g - i;
  at.row = ((int)fl - it_min - tab->dmin) * tab->steps + (int)i;
  return at;
}

/* Edge j of the sample at `at`. A piece outside the table (an edge no window holds, which the GPU loops compute and
 * leave unused) reads the last piece: the index wraps below 0 and is clamped, so no load leaves the table. */
SPROJ_HD float sproj_tof_table_edge(const struct sproj_tof_table *tab, struct sproj_tof_table_at at, int j)
{
  unsigned p = (unsigned)(at.row - j * tab->steps);
  p = p < tab->last ? p : tab->last;
#ifdef __CUDA_ARCH__
  float4 c = sproj_tof_shared[tab->at + p];
  return ((c.w * at.t + c.z) * at.t + c.y) * at.t + c.x;
#else
  const float *lo = tab->lo + 2 * p, *hi = tab->hi + 2 * p;
  return ((hi[1] * at.t + hi[0]) * at.t + lo[1]) * at.t + lo[0];
#endif
}

#endif
