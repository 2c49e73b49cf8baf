/* SPDX-License-Identifier: Apache-2.0 */
/* check_tof_kernels.c: the variants of the TOF projectors' math (codelets/tof), called directly as a CPU codelet
 * would: the edges' table (tof_table.h) against erf in double, the bins beside the samples (tof_slide.h) against the
 * ordinary loops bit for bit, the CPU lanes (tof_lanes.h) against the scalar code, and the listmode back projection by
 * image tiles (tof_tiles.h) replayed on the host against the per-event code bit for bit, and the listmode forward
 * projection from the image's pair layouts (joseph3d_ray.h) against the image's samples bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "tof.h"
#include "tof_table.h"
#include "tof_slide.h"
#include "joseph3d_tof_sino_fwd.h"
#include "joseph3d_tof_sino_back.h"
#include "joseph3d_tof_lm_fwd.h"
#include "joseph3d_tof_lm_back.h"
#include "tof_lanes.h"
#include "tof_tiles.h"

/* The bound on a tabulated weight's error against the double-precision reference. */
#define TABLE_WEIGHT_BOUND 2e-6
/* TOF coordinates each parameter set is tried at, and their range in bins. */
#define COORDS 200000
#define COORD_LO (-12.0)
#define COORD_HI 44.0
#define NLORS 3000

/* bin width, sigma and number of sigmas of each parameter set: the benchmark's (bench/), check_tof's (bins of two
 * voxels of 2.5, sigma 1.5 voxels), a narrow and a wide kernel, four sigmas */
static const float params[][3] = {
  {25.37f, 24.51f, 3.0f}, {5.0f, 3.75f, 3.0f}, {10.0f, 2.5f, 3.0f}, {5.0f, 12.0f, 3.0f}, {20.0f, 15.0f, 4.0f},
};

struct table_buf {
  float lo[2 * SPROJ_TOF_TABLE_MAX_PIECES], hi[2 * SPROJ_TOF_TABLE_MAX_PIECES];
  struct sproj_tof_table_plan plan;
  struct sproj_tof_table tab;
};

/* The table of tof (as a CPU worker builds it), or NULL when none serves it. */
static const struct sproj_tof_table *table_of(const struct sproj_tof_arg *tof, struct table_buf *t)
{
  if (!sproj_tof_table_plan_for(tof, &t->plan))
    return NULL;
  for (int p = 0; p < t->plan.nd * t->plan.steps; p++)
    sproj_tof_table_piece(&t->plan, p, t->lo + 2 * p, t->hi + 2 * p);
  sproj_tof_table_use(&t->tab, &t->plan, t->lo, t->hi, 0u);
  return &t->tab;
}

/* Worst |normalised weight - reference| over the window of the sample at it_f, with the line's edges (table or erff);
 * the reference integrates the Gaussian of sigma over each bin in double at the same it_f. Counts in *outside the
 * edges that would have read past the table. */
static double window_error(const struct sproj_tof_line *l, float it_f, double scale, int64_t *outside)
{
  struct sproj_tof_sample s;
  struct sproj_tof_line at = *l;
  at.at = 0.0f;
  at.bt = it_f;
  sproj_tof_sample_at(&at, 0, SPROJ_MAX_TOF_BINS, &s);
  if (l->tabbed)
    for (int j = 0; j <= s.n; j++) {
      long p = (long)s.at.row - (long)j * l->tab.steps;
      *outside += p < 0 || p > (long)l->tab.last;
    }
  float sum = sproj_tof_sample_sum(&s, &at);
  double ref[SPROJ_TOF_MAX_WINDOW], total = 0.0, worst = 0.0;
  for (int j = 0; j < s.n; j++) {
    double x = (double)it_f - (double)(s.it_min + j);
    ref[j] = 0.5 * (erf((x + 0.5) * scale) - erf((x - 0.5) * scale));
    total += ref[j];
  }
  for (int j = 0; j < s.n; j++) {
    float w = 0.5f * (sproj_tof_sample_edge(&s, &at, j) - sproj_tof_sample_edge(&s, &at, j + 1)) / sum;
    worst = fmax(worst, fabs((double)w - ref[j] / total));
  }
  return worst;
}

/* The table's weights against the reference, beside erff's, for each parameter set: within TABLE_WEIGHT_BOUND, and
 * no edge of a window outside the table. */
START_TEST(test_table_weights)
{
  const float *p = params[_i];
  struct sproj_tof_arg tof = {p[0], p[2], p[1], 0.0f, 29, 0, 0, SPROJ_TOF_ARG_STARPROJ};
  static struct table_buf t;
  const struct sproj_tof_table *tab = table_of(&tof, &t);
  ck_assert_msg(tab != NULL, "no table for bin width %g, sigma %g, %g sigmas", p[0], p[1], p[2]);
  struct sproj_tof_line l = {0.0f, 0.0f, sproj_tof_max_diff(&tof, tof.sigma), sproj_tof_edge_scale(&tof, tof.sigma),
                             0, sproj_tof_table_none()};
  struct sproj_tof_line lt = l;
  lt.tabbed = 1;
  lt.tab = *tab;
  double scale = (double)p[0] / (sqrt(2.0) * (double)p[1]), worst_table = 0.0, worst_erff = 0.0;
  int64_t outside = 0;
  tu_seed(4600 + (uint64_t)_i);
  for (int c = 0; c < COORDS; c++) {
    float it_f = (float)tu_uniform(COORD_LO, COORD_HI);
    /* a tenth of them at the ends of a piece and of the window's changes of length */
    if (c % 10 == 0)
      it_f = floorf(it_f) + (c % 20 == 0 ? 0.0f : nextafterf(1.0f, 0.0f));
    worst_table = fmax(worst_table, window_error(&lt, it_f, scale, &outside));
    worst_erff = fmax(worst_erff, window_error(&l, it_f, scale, &outside));
  }
  printf("TOF table (bin width %g, sigma %g, %g sigmas: %d x %d pieces): worst weight error %.3g (erff %.3g), %lld "
         "edges outside\n", p[0], p[1], p[2], t.plan.nd, t.plan.steps, worst_table, worst_erff, (long long)outside);
  ck_assert_msg(worst_table <= TABLE_WEIGHT_BOUND, "table weight error %.3g", worst_table);
  ck_assert_int_eq(outside, 0);
}
END_TEST

/* A small scene: geometry, image and random LORs. */
static struct tu_geom g;
static float *img, *xs, *xe;

static void scene(void)
{
  tu_seed(4601);
  tu_random_geom(&g);
  img = tu_alloc(tu_nvox(&g));
  xs = tu_alloc(3 * NLORS);
  xe = tu_alloc(3 * NLORS);
  tu_fill_uniform(img, tu_nvox(&g), 0.5f, 2.0f);
  tu_random_lors(&g, xs, xe, NLORS, NULL);
}

/* TOF parameters for the scene, sigma given in bins */
static struct sproj_tof_arg scene_tof(float sigma_bins, int num_bins)
{
  float vs = (g.vs[0] + g.vs[1] + g.vs[2]) / 3.0f, bw = 2.0f * vs;
  struct sproj_tof_arg tof = {bw, 3.0f, sigma_bins * bw, 0.3f * bw, num_bins, 0, 0, SPROJ_TOF_ARG_STARPROJ};
  return tof;
}

/* The sinogram projectors with the bins beside the samples against the ordinary loops, with erff and the table: the
 * same bits forward and back (width as the codelets choose it), and within float rounding when a narrower width
 * than the windows need sends samples the ordinary way. */
START_TEST(test_slide_bits)
{
  struct geom_conv {
    float sigma_bins;
    int width; /* 0: as sproj_tof_slide_width chooses */
  } cases[] = {{0.75f, 0}, {2.0f, 0}, {1.1f, SPROJ_TOF_SLIDE_NARROW}};
  struct geom_conv c = cases[_i];
  int num_bins = 2 * (int)ceilf(sqrtf((float)(g.n[0] * g.n[0] + g.n[1] * g.n[1] + g.n[2] * g.n[2])) * 0.5f) + 9;
  struct sproj_tof_arg tof = scene_tof(c.sigma_bins, num_bins);
  int width = c.width ? c.width : sproj_tof_slide_width(&tof);
  static struct table_buf t;
  const struct sproj_tof_table *tabs[2] = {NULL, table_of(&tof, &t)};
  ck_assert_ptr_nonnull(tabs[1]);
  struct sproj_geom geom = {{g.n[0], g.n[1], g.n[2]}, {g.vs[0], g.vs[1], g.vs[2]}, {g.origin[0], g.origin[1], g.origin[2]}};
  int64_t nvox = tu_nvox(&g);
  float *a = tu_alloc((int64_t)num_bins), *b = tu_alloc((int64_t)num_bins);
  float *ia = tu_alloc(nvox), *ib = tu_alloc(nvox);
  for (int ti = 0; ti < 2; ti++) {
    int64_t differ = 0, values = 0;
    double worst = 0.0;
    memset(ia, 0, nvox * sizeof(float));
    memset(ib, 0, nvox * sizeof(float));
    struct sproj_out oa = {ia, NULL, NULL}, ob = {ib, NULL, NULL};
    for (int i = 0; i < NLORS; i++) {
      const float *s = xs + 3 * i, *e = xe + 3 * i;
      joseph3d_tof_sino_fwd_lor(img, &geom, s, e, &tof, tof.sigma, tof.center_offset, tabs[ti], a, 1);
      joseph3d_tof_sino_fwd_slide(img, &geom, s, e, &tof, tof.sigma, tof.center_offset, tabs[ti], b, 1, width);
      for (int k = 0; k < num_bins; k++) {
        differ += memcmp(&a[k], &b[k], sizeof(float)) != 0;
        worst = fmax(worst, fabs((double)a[k] - b[k]) / fmax(1e-30, fabs((double)a[k])));
        values += a[k] != 0.0f;
      }
      joseph3d_tof_sino_back_lor(oa, &geom, s, e, &tof, tof.sigma, tof.center_offset, tabs[ti], a);
      joseph3d_tof_sino_back_slide(ob, &geom, s, e, &tof, tof.sigma, tof.center_offset, tabs[ti], a, width);
    }
    int64_t vdiffer = 0;
    for (int64_t v = 0; v < nvox; v++)
      vdiffer += memcmp(&ia[v], &ib[v], sizeof(float)) != 0;
    double back_l2 = tu_rel_l2_ff(ib, ia, nvox);
    printf("TOF sliding bins (sigma %.2f bins, width %d, %s): forward %lld of %lld non-zero values differ (worst "
           "relative %.3g); back %lld voxels differ (relative L2 %.3g)\n", c.sigma_bins, width,
           ti ? "table" : "erff", (long long)differ, (long long)values, worst, (long long)vdiffer, back_l2);
    ck_assert_int_gt(values, 0);
    if (c.width == 0) {
      ck_assert_int_eq(differ, 0);
      ck_assert_int_eq(vdiffer, 0);
    } else {
      ck_assert_msg(worst <= 1e-5, "worst relative difference %.3g", worst);
      ck_assert_msg(back_l2 <= 1e-6, "back relative L2 %.3g", back_l2);
    }
  }
  free(a);
  free(b);
  free(ia);
  free(ib);
}
END_TEST

/* The table's projections against the double-precision reference (tu_ref_tof_sino_lor), beside erff's: relative L2
 * <= 1e-5, and the worst value error over the LOR's largest bin. */
START_TEST(test_table_projection)
{
  int num_bins = 2 * (int)ceilf(sqrtf((float)(g.n[0] * g.n[0] + g.n[1] * g.n[1] + g.n[2] * g.n[2])) * 0.5f) + 9;
  struct sproj_tof_arg tof = scene_tof(0.75f, num_bins);
  static struct table_buf t;
  const struct sproj_tof_table *tabs[2] = {NULL, table_of(&tof, &t)};
  struct sproj_geom geom = {{g.n[0], g.n[1], g.n[2]}, {g.vs[0], g.vs[1], g.vs[2]}, {g.origin[0], g.origin[1], g.origin[2]}};
  float *out = tu_alloc((int64_t)NLORS * num_bins);
  double *ref = malloc((size_t)NLORS * num_bins * sizeof *ref);
  for (int i = 0; i < NLORS; i++)
    tu_ref_tof_sino_lor(img, &g, xs + 3 * i, xe + 3 * i, tof.bin_width, num_bins, tof.num_sigmas, tof.sigma,
                        tof.center_offset, ref + (size_t)i * num_bins);
  double l2[2];
  for (int ti = 0; ti < 2; ti++) {
    double worst = 0.0;
    for (int i = 0; i < NLORS; i++) {
      float *o = out + (size_t)i * num_bins;
      joseph3d_tof_sino_fwd_lor(img, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, tof.center_offset, tabs[ti], o, 1);
      /* a LOR whose planes float rounding may choose otherwise than the reference is left out of both */
      if (tu_ref_ambiguous(&g, xs + 3 * i, xe + 3 * i))
        for (int k = 0; k < num_bins; k++)
          o[k] = 0.0f, ref[(size_t)i * num_bins + k] = 0.0;
      double maxb = 0.0;
      for (int k = 0; k < num_bins; k++)
        maxb = fmax(maxb, fabs(ref[(size_t)i * num_bins + k]));
      if (maxb > 0.0)
        for (int k = 0; k < num_bins; k++)
          worst = fmax(worst, fabs(o[k] - ref[(size_t)i * num_bins + k]) / maxb);
    }
    l2[ti] = tu_rel_l2_fd(out, ref, (int64_t)NLORS * num_bins);
    printf("TOF sinogram forward with %s vs the double reference: relative L2 %.3g, worst value error %.3g of the "
           "LOR's largest bin\n", ti ? "the table" : "erff", l2[ti], worst);
  }
  ck_assert_msg(l2[1] <= 1e-5, "relative L2 %.3g", l2[1]);
  free(out);
  free(ref);
}
END_TEST

/* The listmode back projection by image tiles (tof_tiles.h), replayed on the host as the GPU kernels do it (an event's
 * segments found, each added into its tile, the tile added into the image) against joseph3d_tof_lm_back_lor: each
 * plane of a walk in exactly one tile, each sample's adds the same, so with the events in the same order the images
 * are the same bits. Three tile shapes (the default, and two smaller ones that tiles_plan chooses for deep images),
 * with erff and with the table, with the centre offset per LOR, on the scene's LORs (all three principal axes, so the
 * direct path too), two kernel widths. */
START_TEST(test_tiles_back)
{
  static const int shapes[] = {1 << 20, 9 * 8, 3 * 9 * 2};
  int num_bins = 2 * (int)ceilf(sqrtf((float)(g.n[0] * g.n[0] + g.n[1] * g.n[1] + g.n[2] * g.n[2])) * 0.5f) + 9;
  struct sproj_tof_arg tof = scene_tof(_i % 2 ? 0.4f : 1.2f, num_bins);
  tof.per_lor_offset = 1;
  static struct table_buf t;
  const struct sproj_tof_table *tab = _i / 2 ? table_of(&tof, &t) : NULL;
  ck_assert(!(_i / 2) || tab);
  struct sproj_geom geom = {{g.n[0], g.n[1], g.n[2]}, {g.vs[0], g.vs[1], g.vs[2]}, {g.origin[0], g.origin[1], g.origin[2]}};
  int64_t nvox = tu_nvox(&g);
  float *ia = tu_alloc(nvox), *ib = tu_alloc(nvox), *off = tu_alloc(NLORS), *val = tu_alloc(NLORS);
  int16_t *bins = malloc(NLORS * sizeof *bins);
  for (int i = 0; i < NLORS; i++) {
    off[i] = tof.bin_width * (float)tu_uniform(-1.5, 1.5);
    bins[i] = (int16_t)tu_randint(0, num_bins - 1);
    val[i] = i % 17 == 0 ? 0.0f : (float)tu_uniform(0.1, 2.0);
  }
  memset(ia, 0, nvox * sizeof(float));
  struct sproj_out oa = {ia, NULL, NULL}, ob = {ib, NULL, NULL};
  for (int i = 0; i < NLORS; i++)
    joseph3d_tof_lm_back_lor(oa, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, off[i], tab, bins[i], val[i]);
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    struct sproj_tof_tiles tiles;
    int max_floats = shapes[sh] * g.n[2];
    ck_assert(sproj_tof_tiles_plan(&geom, max_floats, &tiles));
    ck_assert_int_le(tiles.tile_floats, max_floats);
    float *tile = tu_alloc(tiles.tile_floats);
    memset(ib, 0, nvox * sizeof(float));
    int64_t segments = 0, direct = 0, tiled = 0;
    for (int i = 0; i < NLORS; i++) {
      struct sproj_ray r;
      struct sproj_tof_line l;
      int k0, k1, seg[SPROJ_TOF_TILES_MAX_SEGMENTS];
      if (val[i] == 0.0f ||
          !sproj_tof_lm_setup(xs + 3 * i, xe + 3 * i, &geom, &tof, tof.sigma, off[i], tab, bins[i], &r, &l, &k0, &k1))
        continue;
      int ns = sproj_tof_tiles_segments(&tiles, &r, k0, k1, seg);
      if (ns < 0) {
        joseph3d_tof_lm_back_lor(ob, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, off[i], tab, bins[i], val[i]);
        direct++;
        continue;
      }
      tiled += ns > 0;
      segments += ns;
      for (int j = 0; j < ns; j++) {
        ck_assert_int_ge(seg[j], 0);
        ck_assert_int_lt(seg[j], tiles.ntiles);
        memset(tile, 0, tiles.tile_floats * sizeof(float));
        sproj_tof_tiles_back_segment(&tiles, seg[j], &r, &l, k0, k1, bins[i], val[i], tile);
        for (int q = 0; q < tiles.tile_floats; q++) {
          int64_t e = sproj_tof_tiles_voxel(&tiles, seg[j], q);
          if (e >= 0)
            ib[e] += tile[q];
          else
            ck_assert_msg(tile[q] == 0.0f, "a tile float outside the image got %g", tile[q]);
        }
      }
    }
    int64_t differ = 0, nonzero = 0;
    for (int64_t v = 0; v < nvox; v++) {
      differ += memcmp(&ia[v], &ib[v], sizeof(float)) != 0;
      nonzero += ia[v] != 0.0f;
    }
    printf("TOF listmode back by tiles (%s, sigma %s, tiles of %d planes x %d + 1 voxels x %d): %lld events by %lld "
           "segments (%.2f each), %lld directly; %lld of %lld non-zero voxels differ\n", tab ? "table" : "erff",
           _i % 2 ? "narrow" : "wide", tiles.slab, tiles.band, g.n[2], (long long)tiled, (long long)segments,
           tiled ? (double)segments / (double)tiled : 0.0, (long long)direct, (long long)differ, (long long)nonzero);
    ck_assert_int_gt(tiled, NLORS / 10);
    ck_assert_int_gt(direct, 0);
    ck_assert_int_gt(nonzero, 0);
    ck_assert_int_eq(differ, 0);
    free(tile);
  }
  free(ia);
  free(ib);
  free(off);
  free(val);
  free(bins);
}
END_TEST

/* The listmode forward projection by image tiles, replayed on the host: each segment's partial sum from its tile's
 * floats, the event's value their sum in the order of its walk, against the per-event code (the same terms grouped
 * by segment: within float rounding) and against the double-precision reference (the event's bin of its LOR's TOF
 * sinogram): the tiles' worst error, of the LOR's largest bin, no more than the per-event code's plus 5e-7. */
START_TEST(test_tiles_fwd)
{
  int num_bins = 2 * (int)ceilf(sqrtf((float)(g.n[0] * g.n[0] + g.n[1] * g.n[1] + g.n[2] * g.n[2])) * 0.5f) + 9;
  struct sproj_tof_arg tof = scene_tof(_i % 2 ? 0.4f : 1.2f, num_bins);
  static struct table_buf t;
  const struct sproj_tof_table *tab = table_of(&tof, &t);
  ck_assert_ptr_nonnull(tab);
  struct sproj_geom geom = {{g.n[0], g.n[1], g.n[2]}, {g.vs[0], g.vs[1], g.vs[2]}, {g.origin[0], g.origin[1], g.origin[2]}};
  struct sproj_tof_tiles tiles;
  ck_assert(sproj_tof_tiles_plan(&geom, _i / 2 ? 3 * 9 * 2 * g.n[2] : 1 << 24, &tiles));
  float *tile = tu_alloc(tiles.tile_floats);
  double *ref = malloc((size_t)num_bins * sizeof *ref), worst_event = 0.0, worst_tiles = 0.0, worst_split = 0.0;
  int64_t tiled = 0, segments = 0;
  for (int i = 0; i < NLORS; i++) {
    int b = tu_randint(0, num_bins - 1);
    float event = joseph3d_tof_lm_fwd_lor(img, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, tof.center_offset, tab, b);
    float by_tiles = event;
    struct sproj_ray r;
    struct sproj_tof_line l;
    int k0, k1, seg[SPROJ_TOF_TILES_MAX_SEGMENTS], ns = 0;
    if (sproj_tof_lm_setup(xs + 3 * i, xe + 3 * i, &geom, &tof, tof.sigma, tof.center_offset, tab, b, &r, &l, &k0, &k1))
      ns = sproj_tof_tiles_segments(&tiles, &r, k0, k1, seg);
    if (ns > 0 && ns <= SPROJ_TOF_TILES_FWD_SLOTS) {
      by_tiles = 0.0f;
      for (int j = 0; j < ns; j++) {
        for (int q = 0; q < tiles.tile_floats; q++) {
          int64_t e = sproj_tof_tiles_voxel(&tiles, seg[j], q);
          tile[q] = e >= 0 ? img[e] : 0.0f;
        }
        by_tiles += sproj_tof_tiles_fwd_segment(&tiles, seg[j], &r, &l, k0, k1, b, tile);
      }
      tiled++;
      segments += ns;
    }
    if (tu_ref_ambiguous(&g, xs + 3 * i, xe + 3 * i))
      continue;
    tu_ref_tof_sino_lor(img, &g, xs + 3 * i, xe + 3 * i, tof.bin_width, num_bins, tof.num_sigmas, tof.sigma,
                        tof.center_offset, ref);
    double maxb = 0.0;
    for (int k = 0; k < num_bins; k++)
      maxb = fmax(maxb, fabs(ref[k]));
    if (maxb == 0.0)
      continue;
    worst_event = fmax(worst_event, fabs(event - ref[b]) / maxb);
    worst_tiles = fmax(worst_tiles, fabs(by_tiles - ref[b]) / maxb);
    worst_split = fmax(worst_split, fabs(by_tiles - event) / maxb);
  }
  printf("TOF listmode forward by tiles (table, sigma %s, tiles of %d planes x %d + 1 voxels): %lld events by %lld "
         "segments; worst error against the double reference, of the LOR's largest bin: per event %.3g, by tiles %.3g "
         "(tiles against per event %.3g)\n", _i % 2 ? "narrow" : "wide", tiles.slab, tiles.band, (long long)tiled,
         (long long)segments, worst_event, worst_tiles, worst_split);
  ck_assert_int_gt(tiled, NLORS / 10);
  /* the grouping's own change is a few float roundings of the value; the error against the reference is the float
   * coordinates' (~3e-6 of the largest bin with either order), which the tiles must not add to */
  ck_assert_msg(worst_split <= 1e-6, "by tiles against per event: worst %.3g of the LOR's largest bin", worst_split);
  ck_assert_msg(worst_tiles <= worst_event + 5e-7, "by tiles: worst error %.3g of the LOR's largest bin (per event %.3g)",
                worst_tiles, worst_event);
  free(tile);
  free(ref);
}
END_TEST

/* The pair layouts (joseph3d_ray.h) filled row by row as a GPU task fills them (NaN in the padding between them, which
 * no sample may read), read back element by element against the image indexed directly; then every sample of the scene's LORs, the listmode forward projection of events on them (the table or
 * erff; starproj's or libparallelproj's convention) and their sinogram forward projection (ordinary and with the
 * sliding bins), from the layouts against the image: the same bits. */
START_TEST(test_pairs)
{
  struct sproj_geom geom = {{g.n[0], g.n[1], g.n[2]}, {g.vs[0], g.vs[1], g.vs[2]}, {g.origin[0], g.origin[1], g.origin[2]}};
  size_t total = sproj_pairs_offset(&geom, 2);
  float *pairs = tu_alloc((int64_t)total);
  /* NaN where nothing is written (the padding between the layouts): a sample that read it would not match */
  for (size_t f = 0; f < total; f++)
    pairs[f] = NAN;
  for (int a = 0; a < 2; a++)
    for (unsigned row = 0; row < sproj_pairs_rows(&geom, a); row++)
      sproj_pairs_row(img, &geom, a, row, 0, 1, pairs + sproj_pairs_offset(&geom, a) + row * 2 * (size_t)(g.n[2] + 3));
  /* the layouts' contents, and zeros in the padding between them */
  int64_t wrong = 0, checked = 0;
  for (int a = 0; a < 2; a++) {
    int u = a == 0 ? 1 : 0, nu = g.n[u], nv = g.n[2];
    const float *lay = pairs + sproj_pairs_offset(&geom, a);
    ck_assert_uint_eq(sproj_pairs_axis_floats(&geom, a), 2 * (size_t)g.n[a] * (size_t)(nu + 2) * (size_t)(nv + 3));
    for (int k = 0; k < g.n[a]; k++)
      for (int iu = -1; iu <= nu; iu++)
        for (int iv = -1; iv <= nv + 1; iv++)
          for (int q = 0; q < 2; q++) {
            int uu = iu + q, idx[3];
            idx[a] = k;
            idx[u] = uu;
            idx[2] = iv;
            int inside = uu >= 0 && uu < nu && iv >= 0 && iv < nv;
            float want = inside ? img[((int64_t)idx[0] * g.n[1] + idx[1]) * g.n[2] + idx[2]] : 0.0f;
            size_t row = (size_t)k * (size_t)(nu + 2) + (size_t)(iu + 1);
            size_t at = 2 * (row * (size_t)(nv + 3) + (size_t)(iv + 1)) + q;
            wrong += memcmp(&want, &lay[at], sizeof want) != 0;
            checked++;
          }
  }
  ck_assert_msg(wrong == 0, "%lld of %lld layout floats differ from the image's", (long long)wrong, (long long)checked);

  /* every sample of every LOR */
  int64_t samples = 0, differ = 0, along2 = 0;
  for (int i = 0; i < NLORS; i++) {
    struct sproj_ray r;
    if (!sproj_ray_setup(xs + 3 * i, xe + 3 * i, &geom, &r))
      continue;
    const float *p = sproj_ray_pairs(pairs, &r, &geom);
    if (!p) {
      along2++;
      continue;
    }
    for (int k = r.first; k <= r.last; k++) {
      float a = sproj_ray_sample(img, &r, k), b = sproj_ray_sample_pairs(p, &r, k);
      differ += memcmp(&a, &b, sizeof a) != 0;
      samples++;
    }
  }
  ck_assert_msg(differ == 0, "%lld of %lld samples differ", (long long)differ, (long long)samples);
  ck_assert_int_gt(samples, 2 * NLORS);

  /* the listmode forward projection of events on the LORs */
  int num_bins = 2 * (int)ceilf(sqrtf((float)(g.n[0] * g.n[0] + g.n[1] * g.n[1] + g.n[2] * g.n[2])) * 0.5f) + 9;
  struct sproj_tof_arg tof = scene_tof(1.2f, num_bins);
  if (_i == 2)
    tof.convention = SPROJ_TOF_ARG_PARALLELPROJ;
  static struct table_buf t;
  const struct sproj_tof_table *tab = _i == 0 ? table_of(&tof, &t) : NULL;
  ck_assert(_i != 0 || tab);
  int64_t events = 0, nonzero = 0;
  differ = 0;
  for (int i = 0; i < NLORS; i++)
    for (int rep = 0; rep < 3; rep++) {
      int b = tu_randint(0, num_bins - 1);
      float a = joseph3d_tof_lm_fwd_lor(img, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, tof.center_offset, tab, b);
      float c = joseph3d_tof_lm_fwd_event(img, pairs, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, tof.center_offset,
                                          tab, b);
      differ += memcmp(&a, &c, sizeof a) != 0;
      nonzero += a != 0.0f;
      events++;
    }
  ck_assert_msg(differ == 0, "%lld of %lld events differ", (long long)differ, (long long)events);
  ck_assert_int_gt(nonzero, events / 4);

  /* the sinogram forward projection (starproj's convention), ordinary and with the sliding bins */
  int64_t bins_checked = 0, bins_differ = 0, bins_nonzero = 0;
  if (_i < 2) {
    float *a = tu_alloc(num_bins), *c = tu_alloc(num_bins);
    int width = sproj_tof_slide_width(&tof);
    for (int i = 0; i < NLORS; i++)
      for (int slide = 0; slide < 2; slide++) {
        const float *s0 = xs + 3 * i, *e0 = xe + 3 * i;
        if (slide) {
          joseph3d_tof_sino_fwd_slide(img, &geom, s0, e0, &tof, tof.sigma, tof.center_offset, tab, a, 1, width);
          joseph3d_tof_sino_fwd_from(img, pairs, &geom, s0, e0, &tof, tof.sigma, tof.center_offset, tab, c, 1, width);
        } else {
          joseph3d_tof_sino_fwd_lor(img, &geom, s0, e0, &tof, tof.sigma, tof.center_offset, tab, a, 1);
          joseph3d_tof_sino_fwd_from(img, pairs, &geom, s0, e0, &tof, tof.sigma, tof.center_offset, tab, c, 1, 0);
        }
        for (int b = 0; b < num_bins; b++) {
          bins_differ += memcmp(&a[b], &c[b], sizeof a[b]) != 0;
          bins_nonzero += a[b] != 0.0f;
          bins_checked++;
        }
      }
    free(a);
    free(c);
  }
  printf("pair layouts (%s): %lld layout floats as the image's, %lld samples, %lld events (%lld non-zero) and %lld "
         "sinogram bins (%lld non-zero) the image's bits, %lld LORs along axis 2\n",
         _i == 0 ? "table" : _i == 1 ? "erff" : "libparallelproj's convention", (long long)checked, (long long)samples,
         (long long)events, (long long)nonzero, (long long)bins_checked, (long long)bins_nonzero, (long long)along2);
  ck_assert_msg(bins_differ == 0, "%lld of %lld sinogram bins differ", (long long)bins_differ, (long long)bins_checked);
  ck_assert(_i == 2 || bins_nonzero > bins_checked / 20);
  free(pairs);
}
END_TEST

#ifdef SPROJ_HAVE_LANES
/* The AVX-512 lanes (tof_lanes.h) against the scalar code with the same table: forward values bit for bit (sinogram
 * and listmode), back projections within float rounding (only the order of the adds into a voxel differs), on the
 * scene's LORs and on events of them with random bins, with the centre offset per LOR. */
START_TEST(test_lanes)
{
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    printf("TOF lanes: this CPU has no AVX-512F, not compared\n");
    return;
  }
  int num_bins = 2 * (int)ceilf(sqrtf((float)(g.n[0] * g.n[0] + g.n[1] * g.n[1] + g.n[2] * g.n[2])) * 0.5f) + 9;
  struct sproj_tof_arg tof = scene_tof(0.75f, num_bins);
  tof.per_lor_offset = _i;
  static struct table_buf t;
  const struct sproj_tof_table *tab = table_of(&tof, &t);
  ck_assert_ptr_nonnull(tab);
  ck_assert(sproj_tof_lanes_fit(&(struct sproj_geom){{g.n[0], g.n[1], g.n[2]}, {0}, {0}}, &tof, 0));
  struct sproj_geom geom = {{g.n[0], g.n[1], g.n[2]}, {g.vs[0], g.vs[1], g.vs[2]}, {g.origin[0], g.origin[1], g.origin[2]}};
  struct sproj_tof_lanes_work *w = malloc(sizeof *w);
  int64_t nvox = tu_nvox(&g), nval = (int64_t)NLORS * num_bins;
  float *a = tu_alloc(nval), *b = tu_alloc(nval), *ia = tu_alloc(nvox), *ib = tu_alloc(nvox), *off = tu_alloc(NLORS);
  float *la = tu_alloc(NLORS), *lb = tu_alloc(NLORS);
  int16_t *bins = malloc(NLORS * sizeof *bins);
  for (int i = 0; i < NLORS; i++) {
    off[i] = _i ? tof.bin_width * (float)tu_uniform(-1.5, 1.5) : tof.center_offset;
    bins[i] = (int16_t)tu_randint(0, num_bins - 1);
  }
  const float *offset = _i ? off : NULL;
  /* sinogram */
  for (int i = 0; i < NLORS; i++)
    joseph3d_tof_sino_fwd_lor(img, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, off[i], tab, a + (size_t)i * num_bins, 1);
  sproj_tof_lanes_sino_fwd(w, img, &geom, &tof, tab, xs, xe, offset, NLORS, b);
  int64_t differ = 0, nonzero = 0;
  for (int64_t k = 0; k < nval; k++) {
    differ += memcmp(&a[k], &b[k], sizeof(float)) != 0;
    nonzero += a[k] != 0.0f;
  }
  memset(ia, 0, nvox * sizeof(float));
  memset(ib, 0, nvox * sizeof(float));
  struct sproj_out oa = {ia, NULL, NULL}, ob = {ib, NULL, NULL};
  for (int i = 0; i < NLORS; i++)
    joseph3d_tof_sino_back_lor(oa, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, off[i], tab, a + (size_t)i * num_bins);
  sproj_tof_lanes_sino_back(w, ob, &geom, &tof, tab, xs, xe, offset, NLORS, a);
  double sino_back = tu_rel_l2_ff(ib, ia, nvox);
  /* listmode */
  for (int i = 0; i < NLORS; i++)
    la[i] = joseph3d_tof_lm_fwd_lor(img, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, off[i], tab, bins[i]);
  sproj_tof_lanes_lm_fwd(w, img, &geom, &tof, tab, xs, xe, bins, offset, NLORS, lb);
  int64_t ldiffer = 0, lnonzero = 0;
  for (int i = 0; i < NLORS; i++) {
    ldiffer += memcmp(&la[i], &lb[i], sizeof(float)) != 0;
    lnonzero += la[i] != 0.0f;
  }
  memset(ia, 0, nvox * sizeof(float));
  memset(ib, 0, nvox * sizeof(float));
  for (int i = 0; i < NLORS; i++)
    joseph3d_tof_lm_back_lor(oa, &geom, xs + 3 * i, xe + 3 * i, &tof, tof.sigma, off[i], tab, bins[i], la[i] + 0.5f);
  for (int i = 0; i < NLORS; i++)
    lb[i] = la[i] + 0.5f;
  sproj_tof_lanes_lm_back(w, ob, &geom, &tof, tab, xs, xe, bins, offset, NLORS, lb);
  double lm_back = tu_rel_l2_ff(ib, ia, nvox);
  printf("TOF lanes vs scalar (table%s): sinogram forward %lld of %lld non-zero values differ, back relative L2 %.3g; "
         "listmode forward %lld of %lld non-zero differ, back relative L2 %.3g\n", _i ? ", offset per LOR" : "",
         (long long)differ, (long long)nonzero, sino_back, (long long)ldiffer, (long long)lnonzero, lm_back);
  ck_assert_int_gt(nonzero, 0);
  ck_assert_int_gt(lnonzero, 0);
  ck_assert_int_eq(differ, 0);
  ck_assert_int_eq(ldiffer, 0);
  ck_assert_msg(sino_back <= 1e-6 && lm_back <= 1e-6, "back relative L2 %.3g / %.3g", sino_back, lm_back);
  free(w);
  free(a);
  free(b);
  free(ia);
  free(ib);
  free(off);
  free(la);
  free(lb);
  free(bins);
}
END_TEST
#endif

int main(void)
{
  scene();
  Suite *s = suite_create("TOF kernels");
  TCase *tc = tcase_create("tof_kernels");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_table_weights, 0, (int)(sizeof params / sizeof params[0]));
  tcase_add_loop_test(tc, test_slide_bits, 0, 3);
  tcase_add_test(tc, test_table_projection);
  tcase_add_loop_test(tc, test_tiles_back, 0, 4);
  tcase_add_loop_test(tc, test_tiles_fwd, 0, 4);
  tcase_add_loop_test(tc, test_pairs, 0, 3);
#ifdef SPROJ_HAVE_LANES
  tcase_add_loop_test(tc, test_lanes, 0, 2);
#endif
  suite_add_tcase(s, tc);
  return tu_run(s);
}
