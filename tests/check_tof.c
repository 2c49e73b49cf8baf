/* SPDX-License-Identifier: Apache-2.0 */
/* check_tof.c: TOF-sinogram and TOF-listmode projectors against the double-precision reference, against the
 * non-TOF projector and each other; adjointness, chunking, per-LOR parameters, the centre offset's direction,
 * libparallelproj's convention (sproj_tof_set_convention), and bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "starproj_parallelproj.h"
#include "testutil.h"

#define N 6000

static struct tu_geom g;
static float *img, *xs, *xe;
static struct sproj_tof_params par;
static unsigned char *ambiguous;
/* the convention the helpers below register their TOF parameters with */
static int convention = SPROJ_TOF_CONVENTION_STARPROJ;

static void setup(void)
{
  tu_seed(777);
  tu_random_geom(&g);
  img = tu_alloc(tu_nvox(&g));
  xs = tu_alloc(3 * N);
  xe = tu_alloc(3 * N);
  ambiguous = malloc(N);
  tu_fill_uniform(img, tu_nvox(&g), 0.5f, 2.0f);
  tu_random_lors(&g, xs, xe, N, NULL);
  for (int i = 0; i < N; i++)
    ambiguous[i] = (unsigned char)tu_ref_ambiguous(&g, xs + 3 * i, xe + 3 * i);
  /* bins of ~2 voxels, sigma ~1.5 voxels, enough bins to cover every clipped LOR with 3 sigma to spare */
  double diag = 0.0, vs = (g.vs[0] + g.vs[1] + g.vs[2]) / 3.0;
  for (int k = 0; k < 3; k++)
    diag += pow(tu_box_hi(&g, k) - tu_box_lo(&g, k), 2);
  diag = sqrt(diag);
  par.bin_width = (float)(2.0 * vs);
  par.sigma = (float)(1.5 * vs);
  par.num_sigmas = 3.0f;
  par.center_offset = 0.0f;
  par.num_bins = 2 * (int)ceil((diag + 4.0 * par.sigma) / par.bin_width) + 1;
}

/* TOF-sinogram forward projection of all LORs, whole set, with optional per-LOR arrays; values [N][num_bins]. */
static void tof_sino_fwd(const struct sproj_tof_params *p, const float *sigma, const float *offset, float *out)
{
  sproj_image *im;
  sproj_lors *lors;
  sproj_proj *proj;
  sproj_tof *tof;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, N), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_tof(&proj, out, lors, p->num_bins), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&tof, p, lors, sigma, offset), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_set_convention(tof, convention), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_sino(im, proj, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
}

/* Listmode forward projection of events (LOR i, bin bins[i], registered in the convention) into one value each. */
static void tof_lm_fwd(const struct sproj_tof_params *p, const int16_t *bins, const float *sigma, const float *offset,
                       float *out)
{
  sproj_image *im;
  sproj_lors *ev;
  sproj_proj *proj;
  sproj_tof *tof;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_events_convention(&ev, xs, xe, bins, N, convention), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&proj, out, ev), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&tof, p, ev, sigma, offset), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_set_convention(tof, convention), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_lm(im, proj, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(ev), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
}

static void random_per_lor(float *sigma, float *offset)
{
  for (int i = 0; i < N; i++) {
    sigma[i] = par.sigma * (float)tu_uniform(0.6, 1.6);
    offset[i] = par.bin_width * (float)tu_uniform(-1.5, 1.5);
  }
}

/* Per bin: the float kernel against the double reference. Window choice is shared (see the reference); the
 * weights' erf in float and the float TOF coordinate (~1e-6 bins off) leave ~1e-6 relative on the values and
 * somewhat more on the smallest tail bins: 1e-4 of the value plus 1e-5 of the LOR's largest bin. */
START_TEST(test_sino_matches_reference)
{
  const int nb = par.num_bins;
  float *out = tu_alloc((int64_t)N * nb), *sigma = NULL, *offset = NULL;
  double *ref = malloc(nb * sizeof *ref);
  if (_i == 1) {
    sigma = tu_alloc(N);
    offset = tu_alloc(N);
    random_per_lor(sigma, offset);
  }
  struct sproj_tof_params p = par;
  if (_i == 2)
    p.center_offset = 0.7f * par.bin_width;
  tof_sino_fwd(&p, sigma, offset, out);
  int64_t bad = 0, compared = 0, nonzero = 0;
  for (int i = 0; i < N; i++) {
    if (ambiguous[i])
      continue;
    tu_ref_tof_sino_lor(img, &g, xs + 3 * i, xe + 3 * i, p.bin_width, nb, p.num_sigmas, sigma ? sigma[i] : p.sigma,
                        offset ? offset[i] : p.center_offset, ref);
    double maxb = 0.0;
    for (int b = 0; b < nb; b++)
      maxb = fmax(maxb, fabs(ref[b]));
    nonzero += maxb > 0.0;
    for (int b = 0; b < nb; b++) {
      double err = fabs(out[(size_t)i * nb + b] - ref[b]);
      compared++;
      if (err > 1e-4 * fabs(ref[b]) + 1e-5 * maxb && bad++ < 5)
        fprintf(stderr, "LOR %d bin %d: starproj %.9g reference %.9g\n", i, b, out[(size_t)i * nb + b], ref[b]);
    }
  }
  printf("TOF sinogram vs reference (%s): %lld bins of %lld LORs with counts, %lld differ\n",
         _i == 0 ? "scalar" : _i == 1 ? "per-LOR sigma and offset" : "offset 0.7 bin", (long long)compared,
         (long long)nonzero, (long long)bad);
  ck_assert_msg(nonzero > N / 2, "only %lld LORs have counts", (long long)nonzero);
  ck_assert_msg(bad == 0, "%lld bins differ from the reference", (long long)bad);
  free(out);
  free(ref);
  free(sigma);
  free(offset);
}
END_TEST

/* Bins covering the whole LOR: the sum over the bins is the non-TOF projection (1e-4 relative, the bound;
 * the two differ by the float rounding of the normalisation). */
START_TEST(test_sum_over_bins_is_nontof)
{
  const int nb = par.num_bins;
  float *tof = tu_alloc((int64_t)N * nb), *nontof = tu_alloc(N);
  tof_sino_fwd(&par, NULL, NULL, tof);
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, N, nontof), SPROJ_OK);
  double maxv = tu_max_abs(nontof, N), worst = 0.0;
  for (int i = 0; i < N; i++) {
    double sum = 0.0;
    for (int b = 0; b < nb; b++)
      sum += tof[(size_t)i * nb + b];
    double err = fabs(sum - nontof[i]);
    worst = fmax(worst, err / (fabs(nontof[i]) + 1e-6 * maxv));
    ck_assert_msg(err <= 1e-4 * fabs(nontof[i]) + 1e-6 * maxv, "LOR %d: sum over bins %.9g, non-TOF %.9g", i, sum,
                  nontof[i]);
  }
  printf("sum over TOF bins vs non-TOF: worst relative difference %.2e\n", worst);
  free(tof);
  free(nontof);
}
END_TEST

/* An event in bin b projects to TOF-sinogram bin b of its LOR: the same float operations, so bit-identical. */
START_TEST(test_lm_equals_sino_bin)
{
  const int nb = par.num_bins;
  float *sino = tu_alloc((int64_t)N * nb), *lm = tu_alloc(N), *sigma = NULL, *offset = NULL;
  int16_t *bins = malloc(N * sizeof *bins);
  if (_i == 1) {
    sigma = tu_alloc(N);
    offset = tu_alloc(N);
    random_per_lor(sigma, offset);
  }
  for (int i = 0; i < N; i++)
    bins[i] = (int16_t)tu_randint(0, nb - 1);
  tof_sino_fwd(&par, sigma, offset, sino);
  tof_lm_fwd(&par, bins, sigma, offset, lm);
  int64_t identical = 0, nonzero = 0;
  for (int i = 0; i < N; i++) {
    float s = sino[(size_t)i * nb + bins[i]];
    identical += lm[i] == s;
    nonzero += s != 0.0f;
    ck_assert_msg(fabsf(lm[i] - s) <= 1e-6f * fabsf(s), "event %d (bin %d): listmode %.9g, sinogram %.9g", i, bins[i],
                  lm[i], s);
  }
  printf("listmode vs sinogram bin: %lld of %d identical, %lld non-zero\n", (long long)identical, N,
         (long long)nonzero);
  ck_assert_msg(nonzero > N / 10, "only %lld events have counts", (long long)nonzero);
  free(sino);
  free(lm);
  free(bins);
  free(sigma);
  free(offset);
}
END_TEST

/* <Ax, y> = <x, A^T y> for the TOF-sinogram (even i) and listmode (odd i) pairs, in starproj's convention (i < 2)
 * and libparallelproj's, 1e-5 relative; i = 5: listmode in libparallelproj's convention with bins outside
 * 0 .. num_bins-1 (7 bins of the usual width around the LORs' midpoints, the events' bins -10 .. 16). */
START_TEST(test_adjointness)
{
  const int lm = _i % 2 == 1, pp = _i >= 2, outside = _i == 5, nb = outside ? 7 : par.num_bins;
  const int64_t nvox = tu_nvox(&g), nval = lm ? N : (int64_t)N * nb;
  float *ax = tu_alloc(nval), *y = tu_alloc(nval), *aty = tu_alloc(nvox);
  int16_t *bins = malloc(N * sizeof *bins);
  for (int i = 0; i < N; i++)
    bins[i] = (int16_t)(outside ? tu_randint(-10, nb + 9) : tu_randint(0, nb - 1));
  tu_fill_uniform(y, nval, 0.0f, 1.0f);
  memset(aty, 0, nvox * sizeof *aty);
  sproj_image *im, *bim;
  sproj_lors *lors;
  sproj_proj *pax, *py;
  sproj_tof *tof;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&bim, aty, g.n, g.vs, g.origin), SPROJ_OK);
  if (lm) {
    ck_assert_int_eq(sproj_lors_register_events_convention(&lors, xs, xe, bins, N,
                                                           outside ? SPROJ_TOF_CONVENTION_PARALLELPROJ
                                                                   : SPROJ_TOF_CONVENTION_STARPROJ), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_register(&pax, ax, lors), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_register(&py, y, lors), SPROJ_OK);
  } else {
    ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, N), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_register_tof(&pax, ax, lors, nb), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_register_tof(&py, y, lors, nb), SPROJ_OK);
  }
  struct sproj_tof_params p = par;
  p.center_offset = 0.6f * par.bin_width;
  p.num_bins = nb;
  ck_assert_int_eq(sproj_tof_register(&tof, &p, NULL, NULL, NULL), SPROJ_OK);
  if (pp)
    ck_assert_int_eq(sproj_tof_set_convention(tof, SPROJ_TOF_CONVENTION_PARALLELPROJ), SPROJ_OK);
  if (lm) {
    ck_assert_int_eq(sproj_fwd_tof_lm(im, pax, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
    ck_assert_int_eq(sproj_back_tof_lm(bim, py, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  } else {
    ck_assert_int_eq(sproj_fwd_tof_sino(im, pax, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
    ck_assert_int_eq(sproj_back_tof_sino(bim, py, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_proj_unregister(pax), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(py), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(bim), SPROJ_OK);
  double lhs = tu_dot_ff(ax, y, nval), rhs = tu_dot_ff(img, aty, nvox), rel = fabs(lhs - rhs) / fabs(lhs);
  printf("TOF %s adjointness (%s%s): <Ax,y> %.10g, <x,A^T y> %.10g, relative difference %.2e\n",
         lm ? "listmode" : "sinogram", pp ? "libparallelproj's convention" : "starproj's",
         outside ? ", bins outside 0 .. num_bins-1" : "", lhs, rhs, rel);
  ck_assert_msg(lhs > 0.0, "nothing projected");
  ck_assert_msg(rel <= 1e-5, "relative difference %.3g", rel);
  free(ax);
  free(y);
  free(aty);
  free(bins);
}
END_TEST

/* Chunked requests (uneven ranges, a list, a batch) give the values of one request, for both projectors. */
START_TEST(test_chunked_equals_one_call)
{
  const int nb = par.num_bins;
  float *one = tu_alloc((int64_t)N * nb), *chunked = tu_alloc((int64_t)N * nb), *lm1 = tu_alloc(N), *lm2 = tu_alloc(N);
  int16_t *bins = malloc(N * sizeof *bins);
  for (int i = 0; i < N; i++)
    bins[i] = (int16_t)tu_randint(0, nb - 1);
  tof_sino_fwd(&par, NULL, NULL, one);
  tof_lm_fwd(&par, bins, NULL, NULL, lm1);
  sproj_image *im;
  sproj_lors *lors, *ev;
  sproj_proj *ps, *pl;
  sproj_chunks *cs, *cl;
  sproj_tof *tof;
  const int64_t first[4] = {0, 1, 1001, 1500}, count[4] = {1, 1000, 499, N - 1500};
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, N), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_events(&ev, xs, xe, bins, N), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_tof(&ps, chunked, lors, nb), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&pl, lm2, ev), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&tof, &par, NULL, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_ranges(&cs, lors, 4, first, count), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&cl, ev, 13), SPROJ_OK);
  for (int c = 3; c >= 0; c--)
    ck_assert_int_eq(sproj_fwd_tof_sino(im, ps, cs, c, tof), SPROJ_OK);
  int list[13];
  for (int c = 0; c < 13; c++)
    list[c] = 12 - c;
  ck_assert_int_eq(sproj_fwd_tof_lm_chunks(im, pl, cl, list, 7, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_batch_begin(), SPROJ_OK);
  for (int c = 0; c < 6; c++)
    ck_assert_int_eq(sproj_fwd_tof_lm(im, pl, cl, c, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_batch_end(), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(ps, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(pl, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int64_t i = 0; i < (int64_t)N * nb; i++)
    ck_assert_msg(chunked[i] == one[i], "sinogram value %lld: %.9g vs %.9g", (long long)i, chunked[i], one[i]);
  for (int i = 0; i < N; i++)
    ck_assert_msg(lm2[i] == lm1[i], "event %d: %.9g vs %.9g", i, lm2[i], lm1[i]);
  ck_assert_int_eq(sproj_chunks_destroy(cs), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(cl), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(ps), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(pl), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(ev), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  free(one);
  free(chunked);
  free(lm1);
  free(lm2);
  free(bins);
}
END_TEST

/* Per-LOR arrays holding the scalar give exactly the scalar case. */
START_TEST(test_per_lor_arrays_equal_scalar)
{
  const int nb = par.num_bins;
  struct sproj_tof_params p = par;
  p.center_offset = 0.3f * par.bin_width;
  float *a = tu_alloc((int64_t)N * nb), *b = tu_alloc((int64_t)N * nb), *sigma = tu_alloc(N), *offset = tu_alloc(N);
  for (int i = 0; i < N; i++) {
    sigma[i] = p.sigma;
    offset[i] = p.center_offset;
  }
  tof_sino_fwd(&p, NULL, NULL, a);
  tof_sino_fwd(&p, sigma, offset, b);
  for (int64_t i = 0; i < (int64_t)N * nb; i++)
    ck_assert_msg(a[i] == b[i], "value %lld: scalar %.9g, per-LOR %.9g", (long long)i, a[i], b[i]);
  free(a);
  free(b);
  free(sigma);
  free(offset);
}
END_TEST

/* The centre offset runs along the LOR towards xend. For a LOR A->B and its twin B->A with an offset of exactly one
 * bin width, bin b of A->B sits where bin num_bins - 3 - b of B->A sits: their values agree (1e-5 of the largest
 * bin: the two sample the same planes, in the other order). With parallelproj's principal-axis offset they would
 * not for LORs whose principal coordinate decreases. */
START_TEST(test_offset_direction)
{
  enum { M = 400 };
  float txs[3 * M], txe[3 * M];
  tu_random_lors(&g, txs, txe, M, NULL);
  for (int i = 0; i < M / 2; i++) /* second half: the twins */
    for (int k = 0; k < 3; k++) {
      txs[3 * (M / 2 + i) + k] = txe[3 * i + k];
      txe[3 * (M / 2 + i) + k] = txs[3 * i + k];
    }
  struct sproj_tof_params p = par;
  p.bin_width = 4.0f; /* exact in float, as is the offset */
  p.sigma = 3.0f;
  p.center_offset = 4.0f;
  const int nb = p.num_bins;
  float *v = tu_alloc((int64_t)M * nb);
  sproj_image *im;
  sproj_lors *lors;
  sproj_proj *proj;
  sproj_tof *tof;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, txs, txe, M), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_tof(&proj, v, lors, nb), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&tof, &p, NULL, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_sino(im, proj, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  int compared = 0;
  for (int i = 0; i < M / 2; i++) {
    const float *ab = v + (size_t)i * nb, *ba = v + (size_t)(M / 2 + i) * nb;
    double maxb = tu_max_abs(ab, nb);
    for (int b = 0; b + 2 < nb; b++) {
      ck_assert_msg(fabs(ab[b] - ba[nb - 3 - b]) <= 1e-5 * maxb + 1e-7, "LOR %d: bin %d of A->B %.9g, bin %d of B->A %.9g",
                    i, b, ab[b], nb - 3 - b, ba[nb - 3 - b]);
      compared += maxb > 0.0;
    }
    /* and not the other way round: the bins are not simply mirrored */
    if (maxb > 0.0) {
      double mirrored = 0.0;
      for (int b = 0; b < nb; b++)
        mirrored = fmax(mirrored, fabs(ab[b] - ba[nb - 1 - b]));
      ck_assert_msg(mirrored > 1e-3 * maxb, "LOR %d: the offset had no effect", i);
    }
  }
  ck_assert_msg(compared > 1000, "only %d bins compared", compared);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  free(v);
}
END_TEST

/* libparallelproj's convention moves the bins by the offset along the principal axis: a LOR whose principal
 * coordinate decreases gets, with +offset, starproj's values with -offset. Per LOR within 1e-5 of its largest bin,
 * except where the two sum the centre of bin 0 in different precision (float, double) and a sample's window then
 * ends one bin apart (a bin at the window's edge, ~1e-3 of the LOR's largest): at most 1 LOR in 1000. */
START_TEST(test_pp_offset_along_axis)
{
  const int nb = par.num_bins;
  float *a = tu_alloc((int64_t)N * nb), *b = tu_alloc((int64_t)N * nb), *c = tu_alloc((int64_t)N * nb);
  float *offset = tu_alloc(N);
  struct sproj_tof_params p = par;
  p.center_offset = 0.7f * par.bin_width;
  int decreasing = 0;
  for (int i = 0; i < N; i++) {
    const float *s = xs + 3 * i, *e = xe + 3 * i;
    float d[3] = {e[0] - s[0], e[1] - s[1], e[2] - s[2]}, q[3] = {d[0] * d[0], d[1] * d[1], d[2] * d[2]};
    int ax = q[1] >= q[0] && q[1] >= q[2] ? 1 : q[2] >= q[0] && q[2] >= q[1] ? 2 : 0; /* starproj.h's tie order */
    offset[i] = d[ax] >= 0.0f ? p.center_offset : -p.center_offset;
    decreasing += d[ax] < 0.0f;
  }
  convention = SPROJ_TOF_CONVENTION_PARALLELPROJ;
  tof_sino_fwd(&p, NULL, NULL, a);
  convention = SPROJ_TOF_CONVENTION_STARPROJ;
  tof_sino_fwd(&p, NULL, offset, b); /* starproj's convention with the offset's sign of libparallelproj's */
  tof_sino_fwd(&p, NULL, NULL, c);   /* and with the offset as given */
  int off_lors = 0, differs = 0, compared = 0;
  double worst = 0.0;
  for (int i = 0; i < N; i++) {
    const float *va = a + (size_t)i * nb, *vb = b + (size_t)i * nb, *vc = c + (size_t)i * nb;
    double maxb = tu_max_abs(vb, nb), d = 0.0, dc = 0.0;
    for (int k = 0; k < nb; k++) {
      d = fmax(d, fabs((double)va[k] - vb[k]));
      dc = fmax(dc, fabs((double)va[k] - vc[k]));
    }
    if (maxb == 0.0)
      continue;
    compared++;
    if (d > 1e-5 * maxb) {
      off_lors++;
      ck_assert_msg(d <= 1e-2 * maxb, "LOR %d: libparallelproj's convention %.3g of the largest bin away", i,
                    d / maxb);
    }
    worst = fmax(worst, d / maxb);
    differs += offset[i] < 0.0f && dc > 1e-3 * maxb;
  }
  printf("libparallelproj's offset: %d LORs compared (%d decreasing), %d beyond 1e-5 (worst %.2e); with the "
         "offset as given %d decreasing LORs differ by > 1e-3\n", compared, decreasing, off_lors, worst, differs);
  ck_assert_msg(compared > N / 2 && decreasing > N / 4, "%d LORs compared, %d decreasing", compared, decreasing);
  ck_assert_msg(off_lors <= N / 1000, "%d LORs beyond 1e-5", off_lors);
  ck_assert_msg(differs > decreasing / 2, "only %d of %d decreasing LORs differ", differs, decreasing);
  free(a);
  free(b);
  free(c);
  free(offset);
}
END_TEST

/* libparallelproj's listmode projection against the double-precision reference of its definition, with scalar
 * (i = 0) and per-LOR (i = 1, 2) sigma and offset: 1e-4 of each value plus 1e-5 of the largest (float erf and TOF
 * coordinates, as in test_sino_matches_reference); and it is not the LOR's sinogram bin, which starproj's own
 * convention gives. i = 2: 7 bins around the LORs' midpoints and events in bins -10 .. 16, most of them outside
 * 0 .. 6, which libparallelproj places beyond the ends (its own package projects bins -2 .. 2 with 27 bins); the
 * events of a fifth of them past either end must reach the image. */
START_TEST(test_pp_listmode_reference)
{
  const int outside = _i == 2, nb = outside ? 7 : par.num_bins;
  float *lm = tu_alloc(N), *own = tu_alloc(N), *sigma = NULL, *offset = NULL;
  int16_t *bins = malloc(N * sizeof *bins);
  struct sproj_tof_params p = par;
  p.center_offset = -0.4f * par.bin_width;
  p.num_bins = nb;
  if (_i >= 1) {
    sigma = tu_alloc(N);
    offset = tu_alloc(N);
    random_per_lor(sigma, offset);
  }
  for (int i = 0; i < N; i++)
    bins[i] = (int16_t)(outside ? tu_randint(-10, nb + 9) : tu_randint(0, nb - 1));
  convention = SPROJ_TOF_CONVENTION_PARALLELPROJ;
  tof_lm_fwd(&p, bins, sigma, offset, lm);
  convention = SPROJ_TOF_CONVENTION_STARPROJ;
  if (outside) { /* starproj's convention has no value for them */
    for (int i = 0; i < N; i++)
      own[i] = NAN;
  } else {
    tof_lm_fwd(&p, bins, sigma, offset, own);
  }
  double *ref = malloc(N * sizeof *ref), maxref = 0.0, worst = 0.0, maxdiff_own = 0.0;
  for (int i = 0; i < N; i++) {
    ref[i] = tu_ref_tof_lm_pp_lor(img, &g, xs + 3 * i, xe + 3 * i, p.bin_width, nb, p.num_sigmas,
                                  sigma ? sigma[i] : p.sigma, offset ? offset[i] : p.center_offset, bins[i]);
    maxref = fmax(maxref, fabs(ref[i]));
  }
  int compared = 0, beyond = 0, beyond_counts = 0;
  for (int i = 0; i < N; i++) {
    if (ambiguous[i])
      continue;
    double d = fabs(lm[i] - ref[i]);
    ck_assert_msg(d <= 1e-4 * fabs(ref[i]) + 1e-5 * maxref, "event %d (bin %d): %.9g, reference %.9g", i, bins[i],
                  lm[i], ref[i]);
    worst = fmax(worst, d / maxref);
    if (!outside)
      maxdiff_own = fmax(maxdiff_own, fabs((double)own[i] - ref[i]));
    compared += ref[i] != 0.0;
    beyond += bins[i] < 0 || bins[i] >= nb;
    beyond_counts += (bins[i] < 0 || bins[i] >= nb) && ref[i] != 0.0;
  }
  printf("libparallelproj's listmode: %d events with counts (%d of %d beyond the bins' ends), worst %.2e of the "
         "largest", compared, beyond_counts, beyond, worst);
  if (!outside)
    printf("; starproj's own %.2e away", maxdiff_own / maxref);
  printf("\n");
  ck_assert_msg(compared > N / 10, "only %d events have counts", compared);
  if (outside)
    ck_assert_msg(beyond_counts > beyond / 5, "only %d of %d events beyond the bins' ends have counts", beyond_counts,
                  beyond);
  else
    ck_assert_msg(maxdiff_own > 1e-4 * maxref, "the conventions gave the same listmode values");
  free(lm);
  free(own);
  free(ref);
  free(bins);
  free(sigma);
  free(offset);
}
END_TEST

#define EXPECT(call, status)                                                                                    \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    ck_assert_msg(rc_ == (status), "%s returned %d (%s), expected %d", #call, rc_, sproj_strerror(rc_), (status)); \
  } while (0)

START_TEST(test_bad_input)
{
  sproj_tof *tof = (sproj_tof *)0x1234;
  struct sproj_tof_params p = par;
  EXPECT(sproj_tof_register(NULL, &par, NULL, NULL, NULL), SPROJ_ERR_NULL);
  EXPECT(sproj_tof_register(&tof, NULL, NULL, NULL, NULL), SPROJ_ERR_NULL);
  p.bin_width = 0.0f;
  EXPECT(sproj_tof_register(&tof, &p, NULL, NULL, NULL), SPROJ_ERR_TOF);
  p = par;
  p.bin_width = NAN;
  EXPECT(sproj_tof_register(&tof, &p, NULL, NULL, NULL), SPROJ_ERR_TOF);
  p = par;
  p.num_bins = 0;
  EXPECT(sproj_tof_register(&tof, &p, NULL, NULL, NULL), SPROJ_ERR_TOF);
  p.num_bins = SPROJ_MAX_TOF_BINS + 1;
  EXPECT(sproj_tof_register(&tof, &p, NULL, NULL, NULL), SPROJ_ERR_TOF);
  p = par;
  p.num_sigmas = 0.0f;
  EXPECT(sproj_tof_register(&tof, &p, NULL, NULL, NULL), SPROJ_ERR_TOF);
  p = par;
  p.sigma = -1.0f;
  EXPECT(sproj_tof_register(&tof, &p, NULL, NULL, NULL), SPROJ_ERR_TOF);
  p = par;
  p.center_offset = INFINITY;
  EXPECT(sproj_tof_register(&tof, &p, NULL, NULL, NULL), SPROJ_ERR_NONFINITE);
  float sigma[N], offset[N];
  for (int i = 0; i < N; i++) {
    sigma[i] = par.sigma;
    offset[i] = 0.0f;
  }
  EXPECT(sproj_tof_register(&tof, &par, NULL, sigma, NULL), SPROJ_ERR_NULL);
  ck_assert_ptr_eq(tof, (sproj_tof *)0x1234);
  EXPECT(sproj_tof_set_convention(NULL, SPROJ_TOF_CONVENTION_PARALLELPROJ), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_tof_register(&tof, &par, NULL, NULL, NULL), SPROJ_OK);
  EXPECT(sproj_tof_set_convention(tof, 2), SPROJ_ERR_INVALID);
  EXPECT(sproj_tof_set_convention(tof, -1), SPROJ_ERR_INVALID);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  tof = (sproj_tof *)0x1234;

  sproj_image *im;
  sproj_lors *lors, *other, *ev;
  sproj_proj *plain, *tproj, *lmproj;
  int16_t bins[N];
  for (int i = 0; i < N; i++)
    bins[i] = (int16_t)(i % par.num_bins);
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, N), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&other, xs, xe, N), SPROJ_OK);
  sigma[17] = 0.0f;
  EXPECT(sproj_tof_register(&tof, &par, lors, sigma, NULL), SPROJ_ERR_TOF);
  sigma[17] = par.sigma;
  offset[5] = NAN;
  EXPECT(sproj_tof_register(&tof, &par, lors, NULL, offset), SPROJ_ERR_NONFINITE);
  offset[5] = 0.0f;
  bins[9] = -1;
  EXPECT(sproj_lors_register_events(&ev, xs, xe, bins, N), SPROJ_ERR_RANGE);
  EXPECT(sproj_lors_register_events(&ev, xs, xe, NULL, N), SPROJ_ERR_NULL);
  EXPECT(sproj_lors_register_events(&ev, xs, xe, bins, 0), SPROJ_ERR_EMPTY);
  EXPECT(sproj_lors_register_events_convention(&ev, xs, xe, bins, N, SPROJ_TOF_CONVENTION_STARPROJ), SPROJ_ERR_RANGE);
  EXPECT(sproj_lors_register_events_convention(&ev, xs, xe, bins, N, 7), SPROJ_ERR_INVALID);
  EXPECT(sproj_lors_register_events_convention(&ev, xs, xe, NULL, N, SPROJ_TOF_CONVENTION_PARALLELPROJ),
         SPROJ_ERR_NULL);
  sproj_lors *ppev; /* bin -1 is libparallelproj's */
  ck_assert_int_eq(sproj_lors_register_events_convention(&ppev, xs, xe, bins, N, SPROJ_TOF_CONVENTION_PARALLELPROJ),
                   SPROJ_OK);
  bins[9] = (int16_t)par.num_bins; /* valid at registration, out of range for par at submission */
  ck_assert_int_eq(sproj_lors_register_events(&ev, xs, xe, bins, N), SPROJ_OK);

  float *values = tu_alloc((int64_t)N * par.num_bins), *lmv = tu_alloc(N);
  for (int64_t i = 0; i < (int64_t)N * par.num_bins; i++)
    values[i] = NAN;
  for (int i = 0; i < N; i++)
    lmv[i] = NAN;
  EXPECT(sproj_proj_register_tof(&tproj, values, lors, 0), SPROJ_ERR_EMPTY);
  EXPECT(sproj_proj_register_tof(&tproj, values, lors, -2), SPROJ_ERR_DIMS);
  EXPECT(sproj_proj_register_tof(&tproj, values, lors, SPROJ_MAX_TOF_BINS + 1), SPROJ_ERR_TOF);
  ck_assert_int_eq(sproj_proj_register_tof(&tproj, values, lors, par.num_bins), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&plain, lmv, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&lmproj, lmv, ev), SPROJ_OK);
  sproj_proj *ppproj;
  float *ppv = tu_alloc(N);
  for (int i = 0; i < N; i++)
    ppv[i] = NAN;
  ck_assert_int_eq(sproj_proj_register(&ppproj, ppv, ppev), SPROJ_OK);
  sproj_tof *good, *fewer, *foreign;
  p = par;
  p.num_bins = par.num_bins - 1;
  ck_assert_int_eq(sproj_tof_register(&good, &par, NULL, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&fewer, &p, NULL, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&foreign, &par, other, sigma, offset), SPROJ_OK);
  EXPECT(sproj_lors_unregister(other), SPROJ_ERR_BUSY);

  EXPECT(sproj_fwd_tof_sino(im, tproj, NULL, SPROJ_ALL_CHUNKS, NULL), SPROJ_ERR_NULL);
  EXPECT(sproj_fwd_tof_sino(im, tproj, NULL, SPROJ_ALL_CHUNKS, fewer), SPROJ_ERR_MISMATCH);
  EXPECT(sproj_fwd_tof_sino(im, plain, NULL, SPROJ_ALL_CHUNKS, good), SPROJ_ERR_MISMATCH);
  EXPECT(sproj_fwd_tof_sino(im, tproj, NULL, SPROJ_ALL_CHUNKS, foreign), SPROJ_ERR_MISMATCH);
  EXPECT(sproj_back_tof_sino(im, tproj, NULL, 3, good), SPROJ_ERR_RANGE);
  EXPECT(sproj_fwd(im, tproj, NULL, SPROJ_ALL_CHUNKS), SPROJ_ERR_MISMATCH);
  EXPECT(sproj_fwd_tof_lm(im, plain, NULL, SPROJ_ALL_CHUNKS, good), SPROJ_ERR_INVALID);
  EXPECT(sproj_fwd_tof_lm(im, lmproj, NULL, SPROJ_ALL_CHUNKS, good), SPROJ_ERR_RANGE); /* bin num_bins */
  EXPECT(sproj_back_tof_lm(im, lmproj, NULL, SPROJ_ALL_CHUNKS, good), SPROJ_ERR_RANGE);
  EXPECT(sproj_fwd_tof_lm(im, ppproj, NULL, SPROJ_ALL_CHUNKS, good), SPROJ_ERR_RANGE); /* bin -1, starproj's tof */
  ck_assert_str_eq(sproj_last_error(), "sproj_fwd_tof_lm: an event has TOF bin -1: in starproj's TOF convention bins "
                   "are numbered from 0 (libparallelproj's, sproj_tof_set_convention, takes any)");
  EXPECT(sproj_back_tof_lm(im, ppproj, NULL, SPROJ_ALL_CHUNKS, good), SPROJ_ERR_RANGE);
  int list[1] = {0};
  EXPECT(sproj_fwd_tof_lm_chunks(im, lmproj, NULL, list, 1, NULL), SPROJ_ERR_NULL);
  EXPECT(sproj_fwd_tof_sino_chunks(im, tproj, NULL, list, 0, good), SPROJ_ERR_EMPTY);
  ck_assert_int_eq(sproj_proj_sync(tproj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(lmproj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int64_t i = 0; i < (int64_t)N * par.num_bins; i++)
    ck_assert_msg(isnan(values[i]), "value %lld written by a failing call", (long long)i);
  for (int i = 0; i < N; i++)
    ck_assert_msg(isnan(lmv[i]) && isnan(ppv[i]), "event %d written by a failing call", i);
  /* in libparallelproj's convention both sets project, bins -1 and num_bins included */
  ck_assert_int_eq(sproj_tof_set_convention(good, SPROJ_TOF_CONVENTION_PARALLELPROJ), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_lm(im, ppproj, NULL, SPROJ_ALL_CHUNKS, good), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_lm(im, lmproj, NULL, SPROJ_ALL_CHUNKS, good), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(ppproj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(lmproj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int i = 0; i < N; i++)
    ck_assert_msg(isfinite(ppv[i]) && isfinite(lmv[i]), "event %d: %g, %g", i, ppv[i], lmv[i]);

  ck_assert_int_eq(sproj_tof_unregister(good), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(fewer), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(foreign), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(tproj), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(plain), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(lmproj), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(ppproj), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(ppev), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(other), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(ev), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  free(values);
  free(lmv);
  free(ppv);
}
END_TEST

/* The handle registrations (a caller's StarPU vectors, here in main memory) project exactly what the pointer ones
 * do: a TOF sinogram with per-LOR sigma and offset, and listmode events with their bins; and they refuse what the
 * pointer ones refuse, plus vectors of the wrong kind or length. */
START_TEST(test_handles_equal_pointers)
{
  const int nb = par.num_bins;
  float *a = tu_alloc((int64_t)N * nb), *b = tu_alloc((int64_t)N * nb), *sigma = tu_alloc(N), *offset = tu_alloc(N);
  float *la = tu_alloc(N), *lb = tu_alloc(N);
  int16_t *bins = malloc(N * sizeof *bins);
  random_per_lor(sigma, offset);
  for (int i = 0; i < N; i++)
    bins[i] = (int16_t)tu_randint(0, nb - 1);
  tof_sino_fwd(&par, sigma, offset, a);
  tof_lm_fwd(&par, bins, sigma, offset, la);

  starpu_data_handle_t hxs, hxe, hv, hs, ho, hb, hl;
  starpu_vector_data_register(&hxs, STARPU_MAIN_RAM, (uintptr_t)xs, N, 3 * sizeof(float));
  starpu_vector_data_register(&hxe, STARPU_MAIN_RAM, (uintptr_t)xe, N, 3 * sizeof(float));
  starpu_vector_data_register(&hv, STARPU_MAIN_RAM, (uintptr_t)b, N, (size_t)nb * sizeof(float));
  starpu_vector_data_register(&hs, STARPU_MAIN_RAM, (uintptr_t)sigma, N, sizeof(float));
  starpu_vector_data_register(&ho, STARPU_MAIN_RAM, (uintptr_t)offset, N, sizeof(float));
  starpu_vector_data_register(&hb, STARPU_MAIN_RAM, (uintptr_t)bins, N, sizeof(int16_t));
  starpu_vector_data_register(&hl, STARPU_MAIN_RAM, (uintptr_t)lb, N, sizeof(float));
  sproj_image *im;
  sproj_lors *lors, *ev;
  sproj_proj *proj = (sproj_proj *)0x1234, *lproj;
  sproj_tof *tof = (sproj_tof *)0x1234, *ltof;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_handles(&lors, hxs, hxe), SPROJ_OK);
  /* wrong element size (bins), wrong bin counts, a vector of another kind */
  EXPECT(sproj_proj_register_tof_handle(&proj, hv, lors, nb - 1), SPROJ_ERR_MISMATCH);
  EXPECT(sproj_proj_register_tof_handle(&proj, hv, lors, 0), SPROJ_ERR_EMPTY);
  EXPECT(sproj_proj_register_tof_handle(&proj, hv, lors, -2), SPROJ_ERR_DIMS);
  EXPECT(sproj_proj_register_tof_handle(&proj, NULL, lors, nb), SPROJ_ERR_NULL);
  EXPECT(sproj_tof_register_handles(&tof, &par, lors, hb, NULL), SPROJ_ERR_INVALID);
  EXPECT(sproj_tof_register_handles(&tof, &par, NULL, hs, NULL), SPROJ_ERR_NULL);
  ck_assert_ptr_eq(proj, (sproj_proj *)0x1234);
  ck_assert_ptr_eq(tof, (sproj_tof *)0x1234);
  ck_assert_int_eq(sproj_proj_register_tof_handle(&proj, hv, lors, nb), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register_handles(&tof, &par, lors, hs, ho), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_sino(im, proj, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);

  EXPECT(sproj_lors_register_events_handles(&ev, hxs, hxe, hs), SPROJ_ERR_INVALID);
  EXPECT(sproj_lors_register_events_handles(&ev, hxs, hxe, NULL), SPROJ_ERR_NULL);
  int16_t first = bins[0];
  bins[0] = -1;
  EXPECT(sproj_lors_register_events_handles(&ev, hxs, hxe, hb), SPROJ_ERR_RANGE);
  ck_assert_msg(strstr(sproj_last_error(), "sproj_lors_register_events_handles") != NULL, "%s", sproj_last_error());
  bins[0] = first;
  ck_assert_int_eq(sproj_lors_register_events_handles(&ev, hxs, hxe, hb), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_handle(&lproj, hl, ev), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register_handles(&ltof, &par, ev, hs, ho), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_lm(im, lproj, NULL, SPROJ_ALL_CHUNKS, ltof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(lproj), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(ltof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(ev), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  starpu_data_handle_t all[7] = {hxs, hxe, hv, hs, ho, hb, hl};
  for (int i = 0; i < 7; i++)
    starpu_data_unregister(all[i]);
  for (int64_t i = 0; i < (int64_t)N * nb; i++)
    ck_assert_msg(a[i] == b[i], "sinogram value %lld: pointers %.9g, handles %.9g", (long long)i, a[i], b[i]);
  for (int i = 0; i < N; i++)
    ck_assert_msg(la[i] == lb[i], "event %d: pointers %.9g, handles %.9g", i, la[i], lb[i]);
  free(a);
  free(b);
  free(sigma);
  free(offset);
  free(la);
  free(lb);
  free(bins);
}
END_TEST

int main(void)
{
  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  setup();
  Suite *s = suite_create("time of flight");
  TCase *tc = tcase_create("tof");
  tcase_add_loop_test(tc, test_sino_matches_reference, 0, 3);
  tcase_add_test(tc, test_sum_over_bins_is_nontof);
  tcase_add_loop_test(tc, test_lm_equals_sino_bin, 0, 2);
  tcase_add_loop_test(tc, test_adjointness, 0, 4);
  tcase_add_loop_test(tc, test_adjointness, 5, 6);
  tcase_add_test(tc, test_chunked_equals_one_call);
  tcase_add_test(tc, test_per_lor_arrays_equal_scalar);
  tcase_add_test(tc, test_offset_direction);
  tcase_add_test(tc, test_pp_offset_along_axis);
  tcase_add_loop_test(tc, test_pp_listmode_reference, 0, 3);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_handles_equal_pointers);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  sproj_shutdown();
  return ret;
}
