/* SPDX-License-Identifier: Apache-2.0 */
/* check_objective.c: the objective function's pieces on a reconstruction (subset gradients, Hessian products, subset
 * objectives) against double-precision references on the host, against each other (finite differences, symmetry,
 * sums over subsets, one EM update), with STIR's quotient and small-value rules, on listmode events against the sinogram of the same
 * events, the multiplicative update, and their bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "recon_scene.h"

#define S 4 /* subsets of the scene's views: subset k = views k, k + S, ... */

static struct scene sc;

/* The scene's data: integer counts of the phantom's expected counts (non-TOF: one value per LOR; TOF: [lor][bin]). */
static float *make_data(int tof)
{
  int64_t nval = sc.nlors * (tof ? sc.tof.num_bins : 1);
  float *expect = tu_alloc(nval), *data = tu_alloc(nval);
  ck_assert_int_eq(scene_expected(&sc, sc.truth, tof, expect), SPROJ_OK);
  scene_counts(expect, nval, data);
  free(expect);
  return data;
}

/* An image that is not the phantom, positive everywhere. */
static float *estimate(void)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *x = tu_alloc(nvox);
  for (int64_t v = 0; v < nvox; v++)
    x[v] = 0.5f * sc.truth[v] + 0.2f + 0.01f * (float)(v % 7);
  return x;
}

static sproj_image *image(float *v)
{
  sproj_image *img;
  EXPECT(sproj_image_register(&img, v, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  return img;
}

static void sync_read(sproj_image *img)
{
  EXPECT(sproj_image_sync(img, SPROJ_SYNC_READ), SPROJ_OK);
}

/* The LORs of subset k, as a list of indices of the scene's LORs. */
static int64_t subset_lors(int k, int64_t *idx)
{
  int64_t n = 0;
  for (int v = k; v < sc.nviews; v += S)
    for (int64_t i = 0; i < sc.per_view; i++)
      idx[n++] = v * sc.per_view + i;
  return n;
}

/* Non-TOF, no resolution model, in double on the host with the independent reference projector: the subset's
 * gradient term G^T A^T (m y / ybar) - A^T m (kind 0), the Hessian product A^T (m^2 y / ybar^2 A v) (kind 1) or its
 * approximation A^T (m^2 / y A v) (kind 2), and the subset's negative log-likelihood. */
static double reference(int kind, int k, const float *x, const float *v, const float *y, double *out)
{
  int64_t *idx = malloc(sc.nlors * sizeof *idx), n = subset_lors(k, idx), nvox = tu_nvox(&sc.g);
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *term = tu_alloc(n), *mterm = tu_alloc(n);
  double *ax = malloc(n * sizeof *ax), *av = malloc(n * sizeof *av), nll = 0.0;
  for (int64_t i = 0; i < n; i++)
    for (int d = 0; d < 3; d++) {
      xs[3 * i + d] = sc.xs[3 * idx[i] + d];
      xe[3 * i + d] = sc.xe[3 * idx[i] + d];
    }
  tu_ref_fwd(x, &sc.g, xs, xe, n, ax);
  if (v)
    tu_ref_fwd(v, &sc.g, xs, xe, n, av);
  for (int64_t i = 0; i < n; i++) {
    double m = sc.mult[idx[i]], a = sc.add[idx[i]], c = y[idx[i]], ybar = m * ax[i] + a;
    nll += c > 0.0 ? ybar - c * log(ybar) : ybar;
    if (kind == 0)
      term[i] = (float)(m * c / ybar);
    else if (kind == 1)
      term[i] = (float)(m * m * c * av[i] / (ybar * ybar));
    else
      term[i] = c > 0.0 ? (float)(m * m * av[i] / c) : 0.0f;
    mterm[i] = -(float)m;
  }
  memset(out, 0, nvox * sizeof *out);
  tu_ref_back(out, &sc.g, xs, xe, term, n);
  if (kind == 0)
    tu_ref_back(out, &sc.g, xs, xe, mterm, n);
  free(idx);
  free(xs);
  free(xe);
  free(term);
  free(mterm);
  free(ax);
  free(av);
  return nll;
}

/* Gradient, both Hessian products and the subset objective of a non-TOF sinogram OSEM against the double-precision
 * references, subset 1 of 4. Tolerance 1e-5 relative L2 (float projections against double ones: the projection tests
 * find about 1e-7 per LOR; the sums of thousands of float terms stay below 1e-6) and 1e-7 for the objective (its
 * sum is in double; ybar is a float per value). */
START_TEST(test_against_reference)
{
  const int k = 1;
  int64_t nvox = tu_nvox(&sc.g);
  float *data = make_data(0), *x = estimate(), *x0 = scene_copy(x, nvox), *v = tu_alloc(nvox);
  float *grad = tu_alloc(nvox), *h = tu_alloc(nvox), *ha = tu_alloc(nvox);
  tu_fill_uniform(v, nvox, 0.0f, 1.0f);
  double *ref = malloc(nvox * sizeof *ref);
  struct scene_osem o;
  scene_osem_open(&o, &sc, 0, x, data, NULL, S);
  sproj_image *vi = image(v), *gi = image(grad), *hi = image(h), *hai = image(ha);

  EXPECT(sproj_recon_gradient(o.r, k, o.img, gi, 0), SPROJ_OK);
  EXPECT(sproj_recon_hessian_times(o.r, k, o.img, vi, hi, 0), SPROJ_OK);
  EXPECT(sproj_recon_hessian_times(o.r, k, NULL, vi, hai, SPROJ_HESSIAN_APPROXIMATE), SPROJ_OK);
  double nll = 0.0;
  EXPECT(sproj_recon_subset_objective(o.r, k, o.img, &nll), SPROJ_OK);
  sync_read(gi);
  sync_read(hi);
  sync_read(hai);
  sync_read(o.img);
  ck_assert_msg(memcmp(x, x0, nvox * sizeof *x) == 0, "the pieces changed the reconstruction's image");

  double ref_nll = reference(0, k, x, NULL, data, ref), e;
  printf("subset objective %.12g, reference %.12g\n", nll, ref_nll);
  ck_assert_msg(fabs(nll - ref_nll) <= 1e-7 * fabs(ref_nll), "objective %.12g, reference %.12g", nll, ref_nll);
  e = tu_rel_l2_fd(grad, ref, nvox);
  printf("gradient: relative L2 %.3g against the reference (max |grad| %g)\n", e, tu_max_abs(grad, nvox));
  ck_assert_msg(tu_max_abs(grad, nvox) > 1.0 && e <= 1e-5, "gradient: relative L2 %g", e);
  reference(1, k, x, v, data, ref);
  e = tu_rel_l2_fd(h, ref, nvox);
  printf("Hessian product: relative L2 %.3g\n", e);
  ck_assert_msg(tu_max_abs(h, nvox) > 0.0 && e <= 1e-5, "Hessian product: relative L2 %g", e);
  reference(2, k, x, v, data, ref);
  e = tu_rel_l2_fd(ha, ref, nvox);
  printf("approximate Hessian product: relative L2 %.3g\n", e);
  ck_assert_msg(tu_max_abs(ha, nvox) > 0.0 && e <= 1e-5, "approximate Hessian product: relative L2 %g", e);

  for (sproj_image **i = (sproj_image *[]){vi, gi, hi, hai, NULL}; *i; i++)
    EXPECT(sproj_image_unregister(*i), SPROJ_OK);
  scene_osem_close(&o);
  free(data);
  free(x);
  free(x0);
  free(v);
  free(grad);
  free(h);
  free(ha);
  free(ref);
}
END_TEST

/* The pieces agree with each other, non-TOF (_i = 0) and TOF (_i = 1), both with a resolution model:
 * - gradient with the sensitivity left in, minus the gradient, is the subset's sensitivity (1e-6: one float
 *   subtraction per voxel of values of that size);
 * - the directional derivative of the objective (central difference, h = 1e-3 of the image) equals <grad, d> (2e-3:
 *   the difference of two sums of float ybar terms);
 * - the Hessian product is the difference of gradients at x +- h d over 2h (2e-3 relative L2), and symmetric:
 *   <u, H v> = <v, H u> (1e-5);
 * - the subsets' objectives add up to the whole one (1e-12: the same partial sums in another grouping). */
START_TEST(test_consistency)
{
  const int tof = _i, k = 2;
  const float fwhm[3] = {6.0f, 6.0f, 5.0f};
  int64_t nvox = tu_nvox(&sc.g);
  float *data = make_data(tof), *x = estimate(), *d = tu_alloc(nvox), *u = tu_alloc(nvox);
  float *g = tu_alloc(nvox), *gs = tu_alloc(nvox), *sens = tu_alloc(nvox), *xp = tu_alloc(nvox), *xm = tu_alloc(nvox);
  float *gp = tu_alloc(nvox), *gm = tu_alloc(nvox), *hd = tu_alloc(nvox), *hu = tu_alloc(nvox);
  tu_fill_uniform(d, nvox, -0.5f, 1.0f);
  tu_fill_uniform(u, nvox, 0.0f, 1.0f);
  const float step = 1e-3f;
  for (int64_t v = 0; v < nvox; v++) {
    xp[v] = x[v] + step * d[v];
    xm[v] = x[v] - step * d[v];
  }
  struct scene_osem o;
  scene_osem_open(&o, &sc, tof, x, data, fwhm, S);
  sproj_image *gi = image(g), *gsi = image(gs), *xpi = image(xp), *xmi = image(xm), *gpi = image(gp), *gmi = image(gm);
  sproj_image *di = image(d), *ui = image(u), *hdi = image(hd), *hui = image(hu);

  EXPECT(sproj_recon_gradient(o.r, k, o.img, gi, 0), SPROJ_OK);
  EXPECT(sproj_recon_gradient(o.r, k, o.img, gsi, SPROJ_GRADIENT_ADD_SENSITIVITY), SPROJ_OK);
  EXPECT(sproj_recon_sensitivity(o.r, k, sens), SPROJ_OK);
  sync_read(gi);
  sync_read(gsi);
  double worst = 0.0, smax = tu_max_abs(sens, nvox);
  for (int64_t v = 0; v < nvox; v++)
    worst = fmax(worst, fabs((double)gs[v] - g[v] - sens[v]));
  printf("%s: gradient + sensitivity - gradient - sensitivity: %.3g of the largest sensitivity %g\n",
         tof ? "TOF" : "non-TOF", worst / smax, smax);
  ck_assert_msg(smax > 0.0 && worst <= 1e-6 * smax, "sensitivity term off by %g", worst);

  double lp, lm, l0;
  EXPECT(sproj_recon_subset_objective(o.r, k, xpi, &lp), SPROJ_OK);
  EXPECT(sproj_recon_subset_objective(o.r, k, xmi, &lm), SPROJ_OK);
  EXPECT(sproj_recon_subset_objective(o.r, k, o.img, &l0), SPROJ_OK);
  /* d/dh of -L at x along d is -<grad, d> */
  double fd = (lp - lm) / (2.0 * step), dir = -tu_dot_ff(g, d, nvox);
  printf("directional derivative: difference %.9g, -<grad, d> %.9g\n", fd, dir);
  ck_assert_msg(fabs(fd - dir) <= 2e-3 * fabs(dir), "finite difference %.9g, gradient %.9g", fd, dir);

  EXPECT(sproj_recon_gradient(o.r, k, xpi, gpi, 0), SPROJ_OK);
  EXPECT(sproj_recon_gradient(o.r, k, xmi, gmi, 0), SPROJ_OK);
  EXPECT(sproj_recon_hessian_times(o.r, k, o.img, di, hdi, 0), SPROJ_OK);
  EXPECT(sproj_recon_hessian_times(o.r, k, o.img, ui, hui, 0), SPROJ_OK);
  sync_read(gpi);
  sync_read(gmi);
  sync_read(hdi);
  sync_read(hui);
  float *fdh = tu_alloc(nvox);
  for (int64_t v = 0; v < nvox; v++)
    fdh[v] = (float)(-((double)gp[v] - gm[v]) / (2.0 * step));
  double e = tu_rel_l2_ff(hd, fdh, nvox), uhd = tu_dot_ff(u, hd, nvox), dhu = tu_dot_ff(d, hu, nvox);
  printf("Hessian product against the gradients' difference: relative L2 %.3g; <u, H d> %.9g, <d, H u> %.9g\n", e,
         uhd, dhu);
  ck_assert_msg(e <= 2e-3, "Hessian product against the gradients' difference: %g", e);
  ck_assert_msg(fabs(uhd - dhu) <= 1e-5 * fabs(uhd), "<u, H d> %.9g, <d, H u> %.9g", uhd, dhu);

  double sum = 0.0, all;
  for (int j = 0; j < S; j++) {
    double lj;
    EXPECT(sproj_recon_subset_objective(o.r, j, o.img, &lj), SPROJ_OK);
    sum += lj;
  }
  EXPECT(sproj_recon_subset_objective(o.r, -1, o.img, &all), SPROJ_OK);
  printf("subsets' objectives %.15g, whole %.15g\n", sum, all);
  ck_assert_msg(fabs(sum - all) <= 1e-12 * fabs(all), "subsets %.15g, whole %.15g", sum, all);

  for (sproj_image **i = (sproj_image *[]){gi, gsi, xpi, xmi, gpi, gmi, di, ui, hdi, hui, NULL}; *i; i++)
    EXPECT(sproj_image_unregister(*i), SPROJ_OK);
  scene_osem_close(&o);
  (void)l0;
  free(fdh);
  free(data);
  free(x);
  free(d);
  free(u);
  free(g);
  free(gs);
  free(sens);
  free(xp);
  free(xm);
  free(gp);
  free(gm);
  free(hd);
  free(hu);
}
END_TEST

/* An OSEM iteration made of the pieces, the update x (grad + s_k) / s_k done on the host after each subset's gradient,
 * equals sproj_recon_iterate's (with a resolution model; 1e-5 relative L2: the back projections add in float in
 * whatever order the workers run, and four updates compound it). */
START_TEST(test_em_from_pieces)
{
  const float fwhm[3] = {5.0f, 5.0f, 4.0f};
  int64_t nvox = tu_nvox(&sc.g);
  float *data = make_data(0), *x = estimate(), *mine = scene_copy(x, nvox), *gs = tu_alloc(nvox), *sens = tu_alloc(nvox);
  struct scene_osem o;
  scene_osem_open(&o, &sc, 0, x, data, fwhm, S);
  for (int k = 0; k < S; k++) {
    sproj_image *xi = image(mine), *gi = image(gs);
    EXPECT(sproj_recon_gradient(o.r, k, xi, gi, SPROJ_GRADIENT_ADD_SENSITIVITY), SPROJ_OK);
    EXPECT(sproj_image_unregister(gi), SPROJ_OK);
    EXPECT(sproj_image_unregister(xi), SPROJ_OK);
    EXPECT(sproj_recon_sensitivity(o.r, k, sens), SPROJ_OK);
    for (int64_t v = 0; v < nvox; v++) {
      float u = (mine[v] * gs[v]) / sens[v];
      mine[v] = sens[v] > 0.0f && u > 0.0f ? u : 0.0f;
    }
  }
  EXPECT(sproj_recon_iterate(o.r, 1, NULL, NULL), SPROJ_OK);
  sync_read(o.img);
  float *start = estimate();
  double e = tu_rel_l2_ff(mine, x, nvox), moved = tu_rel_l2_ff(start, x, nvox);
  free(start);
  printf("an iteration of %d subsets from the pieces against sproj_recon_iterate: relative L2 %.3g (the iteration "
         "moved the image by %.3g)\n", S, e, moved);
  ck_assert_msg(moved > 1e-2 && e <= 1e-5, "relative L2 %g, image moved by %g", e, moved);
  scene_osem_close(&o);
  free(data);
  free(x);
  free(mine);
  free(gs);
  free(sens);
}
END_TEST

/* sproj_recon_update with the bounds [0, +inf) over the subsets in order makes an OSEM iteration: the same as
 * sproj_recon_iterate's (1e-5 relative L2: x (bp / s) here, (x bp) / s there, and back projections that add in any
 * order); tight bounds change the result; bad bounds are refused. */
START_TEST(test_recon_update)
{
  const float fwhm[3] = {5.0f, 5.0f, 4.0f};
  int64_t nvox = tu_nvox(&sc.g);
  float *data = make_data(0), *x = estimate(), *mine = scene_copy(x, nvox), *tight = scene_copy(x, nvox);
  float *work = tu_alloc(nvox);
  struct scene_osem o;
  scene_osem_open(&o, &sc, 0, x, data, fwhm, S);
  sproj_image *mi = image(mine), *ti = image(tight), *wi = image(work);
  for (int k = 0; k < S; k++) {
    EXPECT(sproj_recon_update(o.r, k, mi, wi, 0.0f, INFINITY), SPROJ_OK);
    EXPECT(sproj_recon_update(o.r, k, ti, wi, 0.9f, 1.1f), SPROJ_OK);
  }
  EXPECT(sproj_recon_update(o.r, 0, mi, wi, 1.0f, 0.5f), SPROJ_ERR_RANGE);
  EXPECT(sproj_recon_update(o.r, 0, mi, wi, NAN, 1.0f), SPROJ_ERR_NONFINITE);
  EXPECT(sproj_recon_update(o.r, 0, mi, mi, 0.0f, 1.0f), SPROJ_ERR_INVALID);
  EXPECT(sproj_recon_update(o.r, S, mi, wi, 0.0f, 1.0f), SPROJ_ERR_RANGE);
  EXPECT(sproj_recon_iterate(o.r, 1, NULL, NULL), SPROJ_OK);
  sync_read(o.img);
  sync_read(mi);
  sync_read(ti);
  double e = tu_rel_l2_ff(mine, x, nvox), t = tu_rel_l2_ff(tight, x, nvox);
  printf("an iteration of sproj_recon_update against sproj_recon_iterate: relative L2 %.3g; with bounds [0.9, 1.1] "
         "%.3g away\n", e, t);
  ck_assert_msg(e <= 1e-5, "relative L2 %g", e);
  ck_assert_msg(t > 1e-3, "the bounds changed nothing (%g)", t);
  for (sproj_image **i = (sproj_image *[]){mi, ti, wi, NULL}; *i; i++)
    EXPECT(sproj_image_unregister(*i), SPROJ_OK);
  scene_osem_close(&o);
  free(data);
  free(x);
  free(mine);
  free(tight);
  free(work);
}
END_TEST

/* STIR's quotient rule (max_ratio 10000) at an image of zeros with no background in some LORs: where ybar = 0 and
 * y > 0 the gradient's quotient is the cap and the objective finite (ybar taken as y / cap); without the rule the
 * same LORs give a quotient of 0 and an infinite objective. Checked against the reference with those quotients. */
START_TEST(test_stir_rule)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *data = make_data(0), *x = tu_alloc(nvox), *grad = tu_alloc(nvox), *grad0 = tu_alloc(nvox);
  memset(x, 0, nvox * sizeof *x);
  float *add_saved = scene_copy(sc.add, sc.nlors);
  for (int64_t i = 0; i < sc.nlors; i += 3)
    sc.add[i] = 0.0f; /* ybar = 0 there */
  struct scene_osem o, o0;
  float *x0 = scene_copy(x, nvox);
  scene_osem_open_capped(&o, &sc, 0, x, data, NULL, S, 10000.0f);
  scene_osem_open(&o0, &sc, 0, x0, data, NULL, S);
  sproj_image *gi = image(grad), *g0i = image(grad0);
  double nll = 0.0, nll0 = 0.0;
  EXPECT(sproj_recon_gradient(o.r, 0, o.img, gi, SPROJ_GRADIENT_ADD_SENSITIVITY), SPROJ_OK);
  EXPECT(sproj_recon_gradient(o0.r, 0, o0.img, g0i, SPROJ_GRADIENT_ADD_SENSITIVITY), SPROJ_OK);
  EXPECT(sproj_recon_subset_objective(o.r, 0, o.img, &nll), SPROJ_OK);
  EXPECT(sproj_recon_subset_objective(o0.r, 0, o0.img, &nll0), SPROJ_OK);
  sync_read(gi);
  sync_read(g0i);
  /* references: the quotient of each LOR of subset 0 by the rule, back projected in double */
  int64_t *idx = malloc(sc.nlors * sizeof *idx), n = subset_lors(0, idx), capped = 0;
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *q = tu_alloc(n);
  double ref_nll = 0.0;
  for (int64_t i = 0; i < n; i++) {
    for (int dd = 0; dd < 3; dd++) {
      xs[3 * i + dd] = sc.xs[3 * idx[i] + dd];
      xe[3 * i + dd] = sc.xe[3 * idx[i] + dd];
    }
    double m = sc.mult[idx[i]], a = sc.add[idx[i]], c = data[idx[i]];
    double quotient = c > 0.0 ? (m * c > 10000.0 * a ? 10000.0 : m * c / a) : 0.0;
    capped += c > 0.0 && a == 0.0;
    q[i] = (float)quotient;
    double ybar = fmax(a, c / 10000.0);
    ref_nll += c > 0.0 ? ybar - c * log(ybar) : ybar;
  }
  double *ref = calloc(nvox, sizeof *ref);
  tu_ref_back(ref, &sc.g, xs, xe, q, n);
  double e = tu_rel_l2_fd(grad, ref, nvox);
  printf("capped quotients: %lld LORs; gradient relative L2 %.3g; objective %.12g (reference %.12g), without the rule "
         "%g\n", (long long)capped, e, nll, ref_nll, nll0);
  ck_assert_msg(capped > 100, "only %lld LORs with y > 0 and ybar = 0", (long long)capped);
  ck_assert_msg(e <= 1e-5, "capped gradient: relative L2 %g", e);
  ck_assert_msg(isfinite(nll) && fabs(nll - ref_nll) <= 1e-7 * fabs(ref_nll), "capped objective %.12g, reference %.12g",
                nll, ref_nll);
  ck_assert_msg(isinf(nll0), "without the rule the objective is %g", nll0);
  ck_assert_msg(tu_rel_l2_ff(grad0, grad, nvox) > 0.5, "the rule changed nothing");
  EXPECT(sproj_image_unregister(gi), SPROJ_OK);
  EXPECT(sproj_image_unregister(g0i), SPROJ_OK);
  scene_osem_close(&o);
  scene_osem_close(&o0);
  memcpy(sc.add, add_saved, sc.nlors * sizeof *sc.add);
  free(add_saved);
  free(idx);
  free(xs);
  free(xe);
  free(q);
  free(ref);
  free(data);
  free(x);
  free(x0);
  free(grad);
  free(grad0);
}
END_TEST

/* The library's projection along every LOR of o (TOF bins with tof): forward of img into values, or with back the
 * back projection of values into img (overwritten). */
static void project_all(const struct scene_osem *o, int tof, int back, float *img, float *values)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *buf = back ? img : scene_copy(img, nvox);
  if (back)
    memset(buf, 0, nvox * sizeof *buf);
  sproj_image *ii = image(buf);
  sproj_proj *p;
  EXPECT(tof ? sproj_proj_register_tof(&p, values, o->lors, sc.tof.num_bins) : sproj_proj_register(&p, values, o->lors),
         SPROJ_OK);
  if (back)
    EXPECT(tof ? sproj_back_tof_sino(ii, p, NULL, SPROJ_ALL_CHUNKS, o->tof) : sproj_back(ii, p, NULL, SPROJ_ALL_CHUNKS),
           SPROJ_OK);
  else
    EXPECT(tof ? sproj_fwd_tof_sino(ii, p, NULL, SPROJ_ALL_CHUNKS, o->tof) : sproj_fwd(ii, p, NULL, SPROJ_ALL_CHUNKS),
           SPROJ_OK);
  EXPECT(sproj_proj_unregister(p), SPROJ_OK);
  EXPECT(sproj_image_unregister(ii), SPROJ_OK);
  if (!back)
    free(buf);
}

/* STIR's small-value rule (cfg.small_fraction 1e-6, with the quotient cap 10000), non-TOF (_i = 0) and TOF (_i = 1),
 * subset 1 of 4: the gradient with the sensitivity left in, both Hessian products and the subset objective against
 * the rule applied on the host, view by view (a chunk) and TOF bin by TOF bin, to the library's own forward values of
 * the direction and the image (its projectors are checked elsewhere), the terms in double, back projected by the
 * library. The direction is the phantom plus 1e-9 everywhere, so that the LORs (and TOF bins) that miss the phantom
 * have forward values below 1e-6 of their view's largest, and every fifth count is 0, where the approximate Hessian's
 * quotient is either the cap or, under the rule, 0. Tolerances: 1e-5 relative L2 (float terms against double ones),
 * 1e-7 for the objective; the rule must zero more than 100 such terms and change the approximate Hessian by more than
 * 1e-3 (relative L2). _i = 2, 3: the same with tasks of at most 500 LORs, so that each view is cut into pieces whose
 * largest values different tasks gather. */
START_TEST(test_small_rule)
{
  const int k = 1, tof = _i & 1;
  if (_i >= 2)
    EXPECT(sproj_set_task_lors(500), SPROJ_OK);
  const float frac = 1e-6f, cap = 10000.0f;
  int nb = tof ? sc.tof.num_bins : 1;
  int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * nb, zeroed = 0;
  float *data = make_data(tof), *x = estimate(), *x0 = scene_copy(x, nvox), *v = tu_alloc(nvox);
  for (int64_t j = 0; j < nval; j += 5)
    data[j] = 0.0f;
  for (int64_t j = 0; j < nvox; j++)
    v[j] = sc.truth[j] + 1e-9f;
  float *out[3], *ref[3], *terms[3], *plain = tu_alloc(nvox), *px = tu_alloc(nval), *pv = tu_alloc(nval);
  sproj_image *oi[3];
  for (int q = 0; q < 3; q++) {
    out[q] = tu_alloc(nvox);
    ref[q] = tu_alloc(nvox);
    terms[q] = calloc(nval, sizeof(float));
    oi[q] = image(out[q]);
  }
  struct scene_osem o, o0;
  scene_osem_open_rule(&o, &sc, tof, x, data, NULL, S, cap, frac);
  scene_osem_open_capped(&o0, &sc, tof, x0, data, NULL, S, cap);
  sproj_image *vi = image(v), *pli = image(plain);
  double nll = 0.0;
  EXPECT(sproj_recon_gradient(o.r, k, o.img, oi[0], SPROJ_GRADIENT_ADD_SENSITIVITY), SPROJ_OK);
  EXPECT(sproj_recon_hessian_times(o.r, k, o.img, vi, oi[1], 0), SPROJ_OK);
  EXPECT(sproj_recon_hessian_times(o.r, k, NULL, vi, oi[2], SPROJ_HESSIAN_APPROXIMATE), SPROJ_OK);
  EXPECT(sproj_recon_hessian_times(o0.r, k, NULL, vi, pli, SPROJ_HESSIAN_APPROXIMATE), SPROJ_OK);
  EXPECT(sproj_recon_subset_objective(o.r, k, o.img, &nll), SPROJ_OK);
  for (int q = 0; q < 3; q++)
    EXPECT(sproj_image_unregister(oi[q]), SPROJ_OK);
  EXPECT(sproj_image_unregister(pli), SPROJ_OK);
  EXPECT(sproj_image_unregister(vi), SPROJ_OK);
  project_all(&o, tof, 0, x, px);
  project_all(&o, tof, 0, v, pv);

  /* the rule on the host: numerators y, y (A v), A v (floats, as STIR's), each view's and bin's largest */
  double ref_nll = 0.0;
  for (int w = k; w < sc.nviews; w += S)
    for (int b = 0; b < nb; b++) {
      float largest[3] = {0.0f, 0.0f, 0.0f};
      for (int64_t i = w * sc.per_view; i < (w + 1) * sc.per_view; i++) {
        int64_t j = i * nb + b;
        float num[3] = {data[j], data[j] * pv[j], pv[j]};
        for (int q = 0; q < 3; q++)
          largest[q] = num[q] > largest[q] ? num[q] : largest[q];
      }
      for (int64_t i = w * sc.per_view; i < (w + 1) * sc.per_view; i++) {
        int64_t j = i * nb + b;
        float num[3] = {data[j], data[j] * pv[j], pv[j]};
        int zero[3];
        for (int q = 0; q < 3; q++)
          zero[q] = !(num[q] > frac * largest[q]);
        double m = sc.mult[i], a = tof ? sc.add_tof[j] : sc.add[i], y = data[j], ybar = m * px[j] + a;
        double n1 = m * m * y * pv[j], d1 = ybar * ybar, n2 = m * m * pv[j];
        terms[0][j] = zero[0] ? 0.0f : (float)(m * y > cap * ybar ? cap : m * y / ybar);
        terms[1][j] = zero[1] || !(n1 > 0.0) ? 0.0f : (float)(n1 > cap * d1 ? cap : n1 / d1);
        terms[2][j] = zero[2] || !(n2 > 0.0) ? 0.0f : (float)(n2 > cap * y ? cap : n2 / y);
        zeroed += zero[2] && pv[j] > 0.0f && y == 0.0;
        double yb = fmax(ybar, y / cap);
        ref_nll += zero[0] ? yb : yb - y * log(yb);
      }
    }
  static const char *const what[3] = {"gradient plus sensitivity", "Hessian product", "approximate Hessian product"};
  for (int q = 0; q < 3; q++) {
    project_all(&o, tof, 1, ref[q], terms[q]);
    double e = tu_rel_l2_ff(out[q], ref[q], nvox);
    printf("%s%s, small-value rule, %s: relative L2 %.3g against the host's rule\n", tof ? "TOF" : "non-TOF",
           _i >= 2 ? " (pieces of 500 LORs)" : "", what[q], e);
    ck_assert_msg(tu_max_abs(ref[q], nvox) > 0.0 && e <= 1e-5, "%s: relative L2 %g", what[q], e);
  }
  double change = tu_rel_l2_ff(plain, out[2], nvox);
  printf("objective %.12g (host %.12g); %lld quotients of 0 counts zeroed, the approximate Hessian changed by %.3g\n",
         nll, ref_nll, (long long)zeroed, change);
  ck_assert_msg(fabs(nll - ref_nll) <= 1e-7 * fabs(ref_nll), "objective %.12g, host %.12g", nll, ref_nll);
  ck_assert_msg(zeroed > 100 && change > 1e-3, "the rule zeroed %lld quotients, changed the product by %g",
                (long long)zeroed, change);
  scene_osem_close(&o);
  scene_osem_close(&o0);
  EXPECT(sproj_set_task_lors(0), SPROJ_OK);
  for (int q = 0; q < 3; q++) {
    free(out[q]);
    free(ref[q]);
    free(terms[q]);
  }
  free(plain);
  free(px);
  free(pv);
  free(data);
  free(x);
  free(x0);
  free(v);
}
END_TEST

/* sproj_image_update_multiplicative against the same float operations on the host (equal: one division, one product,
 * the bounds as comparisons): bounded, unbounded (infinite bounds), den = 0 gives 0; and its refusals, which leave x
 * as it was. */
START_TEST(test_update_multiplicative)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *x = tu_alloc(nvox), *num = tu_alloc(nvox), *den = tu_alloc(nvox), *ref = tu_alloc(nvox), *other = tu_alloc(nvox);
  tu_fill_uniform(x, nvox, 0.0f, 2.0f);
  tu_fill_uniform(num, nvox, 0.0f, 3.0f);
  tu_fill_uniform(den, nvox, 0.5f, 1.5f);
  for (int64_t v = 0; v < nvox; v += 5)
    den[v] = 0.0f;
  const float lo = 0.7f, hi = 1.6f;
  for (int pass = 0; pass < 2; pass++) {
    float l = pass ? -INFINITY : lo, h = pass ? INFINITY : hi;
    for (int64_t v = 0; v < nvox; v++) {
      float u = den[v] == 0.0f ? 0.0f : num[v] / den[v];
      if (den[v] != 0.0f)
        u = u > h ? h : (l > u ? l : u);
      ref[v] = den[v] == 0.0f ? 0.0f : x[v] * u;
    }
    float *xc = scene_copy(x, nvox);
    sproj_image *xi = image(xc), *ni = image(num), *di = image(den);
    EXPECT(sproj_image_update_multiplicative(xi, ni, di, l, h), SPROJ_OK);
    sync_read(xi);
    int64_t bounded = 0;
    for (int64_t v = 0; v < nvox; v++) {
      ck_assert_msg(xc[v] == ref[v], "voxel %lld: %.9g, host %.9g", (long long)v, xc[v], ref[v]);
      bounded += den[v] != 0.0f && (num[v] / den[v] > hi || num[v] / den[v] < lo);
    }
    if (!pass) {
      printf("multiplicative update: %lld of %lld voxels bounded, equal to the host's\n", (long long)bounded,
             (long long)nvox);
      ck_assert(bounded > nvox / 10);
      memcpy(xc, x, nvox * sizeof *xc);
      EXPECT(sproj_image_sync(xi, SPROJ_SYNC_WRITE), SPROJ_OK);
      EXPECT(sproj_image_update_multiplicative(NULL, ni, di, lo, hi), SPROJ_ERR_NULL);
      EXPECT(sproj_image_update_multiplicative(xi, ni, ni, lo, hi), SPROJ_ERR_INVALID);
      EXPECT(sproj_image_update_multiplicative(xi, ni, di, hi, lo), SPROJ_ERR_RANGE);
      EXPECT(sproj_image_update_multiplicative(xi, ni, di, NAN, hi), SPROJ_ERR_NONFINITE);
      sproj_image *oi;
      int dims[3] = {sc.g.n[0], sc.g.n[1] - 1, sc.g.n[2]};
      EXPECT(sproj_image_register(&oi, other, dims, sc.g.vs, sc.g.origin), SPROJ_OK);
      EXPECT(sproj_image_update_multiplicative(xi, oi, di, lo, hi), SPROJ_ERR_MISMATCH);
      EXPECT(sproj_image_unregister(oi), SPROJ_OK);
      sync_read(xi);
      ck_assert_msg(memcmp(xc, x, nvox * sizeof *x) == 0, "a refused update changed x");
    }
    for (sproj_image **i = (sproj_image *[]){xi, ni, di, NULL}; *i; i++)
      EXPECT(sproj_image_unregister(*i), SPROJ_OK);
    free(xc);
  }
  free(x);
  free(num);
  free(den);
  free(ref);
  free(other);
}
END_TEST

/* sproj_image_update_additive against the same float operations on the host (equal: a product, a division, a
 * product, a sum and the bounds as comparisons): OSSPS's step with a negative and positive gradient, bounded to
 * [0, 2.5], a denominator of 0 keeps x; and its refusals, which leave x as it was. */
START_TEST(test_update_additive)
{
  int64_t nvox = tu_nvox(&sc.g), clamped = 0, kept = 0;
  float *x = tu_alloc(nvox), *num = tu_alloc(nvox), *den = tu_alloc(nvox), *ref = tu_alloc(nvox);
  tu_fill_uniform(x, nvox, 0.0f, 2.0f);
  tu_fill_uniform(num, nvox, -3.0f, 3.0f);
  tu_fill_uniform(den, nvox, 0.5f, 30.0f);
  for (int64_t v = 0; v < nvox; v += 7)
    den[v] = v % 2 ? 0.0f : -1.0f;
  const float scale = 4.0f, step = 0.9f, lo = 0.0f, hi = 2.5f;
  for (int64_t v = 0; v < nvox; v++) {
    float u = den[v] > 0.0f ? x[v] + ((num[v] * scale) / den[v]) * step : x[v];
    ref[v] = u > hi ? hi : (lo > u ? lo : u);
    clamped += ref[v] != u;
    kept += !(den[v] > 0.0f);
  }
  float *xc = scene_copy(x, nvox);
  sproj_image *xi = image(xc), *ni = image(num), *di = image(den);
  EXPECT(sproj_image_update_additive(xi, ni, di, scale, step, lo, hi), SPROJ_OK);
  sync_read(xi);
  for (int64_t v = 0; v < nvox; v++)
    ck_assert_msg(xc[v] == ref[v], "voxel %lld: %.9g, host %.9g", (long long)v, xc[v], ref[v]);
  printf("additive update: %lld of %lld voxels bounded, %lld kept (denominator not positive), equal to the host's\n",
         (long long)clamped, (long long)nvox, (long long)kept);
  ck_assert(clamped > nvox / 20 && kept > nvox / 10);
  memcpy(xc, x, nvox * sizeof *xc);
  EXPECT(sproj_image_sync(xi, SPROJ_SYNC_WRITE), SPROJ_OK);
  EXPECT(sproj_image_update_additive(xi, NULL, di, scale, step, lo, hi), SPROJ_ERR_NULL);
  EXPECT(sproj_image_update_additive(xi, xi, di, scale, step, lo, hi), SPROJ_ERR_INVALID);
  EXPECT(sproj_image_update_additive(xi, ni, di, scale, step, hi, lo), SPROJ_ERR_RANGE);
  EXPECT(sproj_image_update_additive(xi, ni, di, NAN, step, lo, hi), SPROJ_ERR_NONFINITE);
  EXPECT(sproj_image_update_additive(xi, ni, di, scale, INFINITY, lo, hi), SPROJ_ERR_NONFINITE);
  sync_read(xi);
  ck_assert_msg(memcmp(xc, x, nvox * sizeof *x) == 0, "a refused update changed x");
  for (sproj_image **i = (sproj_image *[]){xi, ni, di, NULL}; *i; i++)
    EXPECT(sproj_image_unregister(*i), SPROJ_OK);
  free(xc);
  free(x);
  free(num);
  free(den);
  free(ref);
}
END_TEST

/* A listmode reconstruction of one event per count of the sinogram data: the events in view order, one chunk per view
 * (so listmode subset k holds the events of the sinogram's subset k), each event with its LOR's m and a (TOF: its bin's
 * a), and the sinogram's LORs with m and their background summed over the TOF bins as sensitivity model; per-subset
 * sensitivities over the views (per_subset) or one for all. */
struct lm_recon {
  float *xs, *xe, *m, *a;
  int16_t *bins;
  sproj_lors *lors, *events;
  sproj_chunks *views, *evchunks;
  sproj_tof *tof;
  sproj_model *model, *sens_model;
  sproj_image *img;
  sproj_recon *r;
};

static void lm_open(struct lm_recon *l, int tof, float *x, const float *counts, int per_subset, float max_ratio)
{
  int64_t first[256], count[256];
  int64_t n = scene_events(&sc, counts, tof ? sc.tof.num_bins : 1, &l->xs, &l->xe, &l->bins, &l->m, &l->a, first, count);
  l->tof = NULL;
  EXPECT(sproj_lors_register(&l->lors, sc.xs, sc.xe, sc.nlors), SPROJ_OK);
  EXPECT(scene_views(&sc, l->lors, &l->views), SPROJ_OK);
  if (tof) {
    EXPECT(sproj_tof_register(&l->tof, &sc.tof, NULL, NULL, NULL), SPROJ_OK);
    EXPECT(sproj_lors_register_events(&l->events, l->xs, l->xe, l->bins, n), SPROJ_OK);
  } else {
    EXPECT(sproj_lors_register(&l->events, l->xs, l->xe, n), SPROJ_OK);
  }
  for (int v = 0; v < sc.nviews; v++)
    ck_assert_msg(count[v] > 0, "view %d has no events", v);
  EXPECT(sproj_chunks_create_ranges(&l->evchunks, l->events, sc.nviews, first, count), SPROJ_OK);
  EXPECT(sproj_model_create(&l->model, l->events, l->m, l->a, l->tof, NULL), SPROJ_OK);
  EXPECT(sproj_model_create(&l->sens_model, l->lors, sc.mult, sc.add, NULL, NULL), SPROJ_OK);
  EXPECT(sproj_image_register(&l->img, x, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = l->model;
  cfg.chunks = l->evchunks;
  cfg.num_subsets = S;
  cfg.sens_model = l->sens_model;
  cfg.sens_chunks = per_subset ? l->views : NULL;
  cfg.max_ratio = max_ratio;
  EXPECT(sproj_recon_create(&l->r, l->img, &cfg), SPROJ_OK);
}

static void lm_close(struct lm_recon *l)
{
  EXPECT(sproj_recon_destroy(l->r), SPROJ_OK);
  EXPECT(sproj_image_unregister(l->img), SPROJ_OK);
  EXPECT(sproj_model_destroy(l->model), SPROJ_OK);
  EXPECT(sproj_model_destroy(l->sens_model), SPROJ_OK);
  EXPECT(sproj_tof_unregister(l->tof), SPROJ_OK);
  EXPECT(sproj_chunks_destroy(l->views), SPROJ_OK);
  EXPECT(sproj_chunks_destroy(l->evchunks), SPROJ_OK);
  EXPECT(sproj_lors_unregister(l->lors), SPROJ_OK);
  EXPECT(sproj_lors_unregister(l->events), SPROJ_OK);
  free(l->xs);
  free(l->xe);
  free(l->m);
  free(l->a);
  free(l->bins);
}

/* The listmode pieces equal the sinogram's on the histogram of the same events, subset by subset, non-TOF (_i = 0)
 * and TOF (_i = 1), with per-subset sensitivities and STIR's quotient cap (10000, which the positive estimate never
 * reaches): gradients with and without the sensitivity and the Hessian product within 1e-5 relative L2 (each event
 * back projected on its own against each LOR's count times one quotient: float sums in another grouping, about
 * 1e-7), sensitivities within 1e-6 (the same back projections), subset objectives within 1e-6 relative (sum of
 * -log ybar over events plus <s_k, x> and the background of the subset's LORs, against sum of ybar - y log ybar
 * over the LORs: the same terms, <s_k, x> against sum m A x in float). The subsets' objectives add up to the whole
 * one (1e-12); the approximate Hessian is refused. With one sensitivity for all subsets, a subset's objective takes
 * 1/S of its inner product and background: the subsets again add up to the whole, which equals the per-subset
 * reconstruction's within 2e-8 (the same sums, but one sensitivity image back projected at once against four added:
 * float additions in another grouping; measured 4e-10 non-TOF, 2.6e-9 TOF). */
START_TEST(test_listmode_pieces)
{
  const int tof = _i;
  int64_t nvox = tu_nvox(&sc.g);
  float *data = make_data(tof), *x = estimate(), *xl = scene_copy(x, nvox), *x1 = scene_copy(x, nvox), *v = tu_alloc(nvox);
  float *gs = tu_alloc(nvox), *gl = tu_alloc(nvox), *ss = tu_alloc(nvox), *sl = tu_alloc(nvox);
  tu_fill_uniform(v, nvox, 0.0f, 1.0f);
  struct scene_osem o;
  struct lm_recon l, one;
  scene_osem_open_capped(&o, &sc, tof, x, data, NULL, S, 10000.0f);
  lm_open(&l, tof, xl, data, 1, 10000.0f);
  lm_open(&one, tof, x1, data, 0, 10000.0f);
  sproj_image *vi = image(v), *gsi = image(gs), *gli = image(gl);
  double worst = 0.0, worst_value = 0.0;
  for (int k = 0; k < S; k++) {
    EXPECT(sproj_recon_sensitivity(o.r, k, ss), SPROJ_OK);
    EXPECT(sproj_recon_sensitivity(l.r, k, sl), SPROJ_OK);
    double e = tu_rel_l2_ff(sl, ss, nvox);
    ck_assert_msg(tu_max_abs(ss, nvox) > 0.0 && e <= 1e-6, "subset %d sensitivity: relative L2 %g", k, e);
    for (int flags = 0; flags <= SPROJ_GRADIENT_ADD_SENSITIVITY; flags += SPROJ_GRADIENT_ADD_SENSITIVITY) {
      EXPECT(sproj_recon_gradient(o.r, k, o.img, gsi, flags), SPROJ_OK);
      EXPECT(sproj_recon_gradient(l.r, k, l.img, gli, flags), SPROJ_OK);
      sync_read(gsi);
      sync_read(gli);
      e = tu_rel_l2_ff(gl, gs, nvox);
      printf("%s subset %d gradient%s: relative L2 %.3g\n", tof ? "TOF" : "non-TOF", k, flags ? " plus sensitivity" : "", e);
      ck_assert_msg(tu_max_abs(gs, nvox) > 1.0 && e <= 1e-5, "subset %d gradient (flags %d): relative L2 %g", k, flags, e);
      worst = fmax(worst, e);
    }
    EXPECT(sproj_recon_hessian_times(o.r, k, o.img, vi, gsi, 0), SPROJ_OK);
    EXPECT(sproj_recon_hessian_times(l.r, k, l.img, vi, gli, 0), SPROJ_OK);
    sync_read(gsi);
    sync_read(gli);
    e = tu_rel_l2_ff(gl, gs, nvox);
    ck_assert_msg(tu_max_abs(gs, nvox) > 0.0 && e <= 1e-5, "subset %d Hessian product: relative L2 %g", k, e);
    worst = fmax(worst, e);
    double vs, vl;
    EXPECT(sproj_recon_subset_objective(o.r, k, o.img, &vs), SPROJ_OK);
    EXPECT(sproj_recon_subset_objective(l.r, k, l.img, &vl), SPROJ_OK);
    e = fabs(vl - vs) / fabs(vs);
    ck_assert_msg(e <= 1e-6, "subset %d objective: listmode %.12g, sinogram %.12g", k, vl, vs);
    worst_value = fmax(worst_value, e);
  }
  EXPECT(sproj_recon_hessian_times(l.r, 0, NULL, vi, gli, SPROJ_HESSIAN_APPROXIMATE), SPROJ_ERR_INVALID);
  double sum = 0.0, sum1 = 0.0, all, all1, all_sino;
  for (int k = 0; k < S; k++) {
    double vk;
    EXPECT(sproj_recon_subset_objective(l.r, k, l.img, &vk), SPROJ_OK);
    sum += vk;
    EXPECT(sproj_recon_subset_objective(one.r, k, one.img, &vk), SPROJ_OK);
    sum1 += vk;
  }
  EXPECT(sproj_recon_subset_objective(l.r, -1, l.img, &all), SPROJ_OK);
  EXPECT(sproj_recon_subset_objective(one.r, -1, one.img, &all1), SPROJ_OK);
  EXPECT(sproj_recon_subset_objective(o.r, -1, o.img, &all_sino), SPROJ_OK);
  printf("%s listmode pieces against the sinogram's: worst %.3g (images), %.3g (subset objectives); objective %.15g "
         "(sinogram %.15g), subsets %.15g; one sensitivity: %.15g, subsets %.15g\n", tof ? "TOF" : "non-TOF", worst,
         worst_value, all, all_sino, sum, all1, sum1);
  ck_assert_msg(fabs(sum - all) <= 1e-12 * fabs(all), "subsets %.15g, whole %.15g", sum, all);
  ck_assert_msg(fabs(sum1 - all1) <= 1e-12 * fabs(all1), "one sensitivity: subsets %.15g, whole %.15g", sum1, all1);
  ck_assert_msg(fabs(all1 - all) <= 2e-8 * fabs(all), "one sensitivity %.15g, per subset %.15g", all1, all);
  ck_assert_msg(fabs(all - all_sino) <= 1e-6 * fabs(all_sino), "listmode %.15g, sinogram %.15g", all, all_sino);
  for (sproj_image **i = (sproj_image *[]){vi, gsi, gli, NULL}; *i; i++)
    EXPECT(sproj_image_unregister(*i), SPROJ_OK);
  lm_close(&l);
  lm_close(&one);
  scene_osem_close(&o);
  free(data);
  free(x);
  free(xl);
  free(x1);
  free(v);
  free(gs);
  free(gl);
  free(ss);
  free(sl);
}
END_TEST

/* Bad input: every call refuses with its status and leaves its output as it was. */
/* Subset sensitivities copied by tasks into an image of the caller's (sproj_recon_sensitivity_image, what STIR's
 * objective function fetches its 21 subset sensitivities through): the very floats of sproj_recon_sensitivity's host
 * copy, bit for bit (0 + f * s against s * f: one rounding either way), for per-subset sensitivities (f = 1) and one
 * sensitivity for all S subsets (f = 1/S, listmode), with and without the copy home started at once; out's previous
 * values replaced; the one-for-all copy is 1/S of the whole (not s itself); refused calls write nothing. */
START_TEST(test_sensitivity_image)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *data = make_data(0), *x = estimate(), *x1 = scene_copy(x, nvox), *host = tu_alloc(nvox), *out = tu_alloc(nvox);
  struct scene_osem o;
  struct lm_recon one;
  scene_osem_open(&o, &sc, 0, x, data, NULL, S);
  lm_open(&one, 0, x1, data, 0, 10000.0f);
  sproj_image *oi = image(out), *wrong;
  int dims[3] = {sc.g.n[0], sc.g.n[1] + 1, sc.g.n[2]};
  EXPECT(sproj_image_create(&wrong, dims, sc.g.vs, sc.g.origin), SPROJ_OK);
  sproj_recon *recons[2] = {o.r, one.r};
  int compared = 0;
  for (int which = 0; which < 2; which++)
    for (int k = 0; k < S; k++)
      for (int flags = 0; flags <= SPROJ_SENSITIVITY_TO_HOST; flags += SPROJ_SENSITIVITY_TO_HOST) {
        EXPECT(sproj_image_sync(oi, SPROJ_SYNC_WRITE), SPROJ_OK);
        for (int64_t v = 0; v < nvox; v++)
          out[v] = -3.0f; /* replaced, not added to */
        EXPECT(sproj_recon_sensitivity_image(recons[which], k, oi, flags), SPROJ_OK);
        EXPECT(sproj_recon_sensitivity(recons[which], k, host), SPROJ_OK);
        sync_read(oi);
        ck_assert_msg(tu_max_abs(host, nvox) > 0.0, "%s: subset %d's sensitivity is 0", which ? "one for all" : "per subset", k);
        ck_assert_msg(memcmp(out, host, nvox * sizeof *out) == 0, "%s: subset %d (flags %d) differs from "
                      "sproj_recon_sensitivity's copy", which ? "one for all" : "per subset", k, flags);
        compared++;
      }
  /* one for all: the image subset k divides by is the whole sensitivity over S, so S of them add up to the whole
   * (the per-subset reconstruction's sum; float sums in another grouping) */
  double d;
  {
    float *sum = tu_alloc(nvox), *whole = tu_alloc(nvox);
    memset(sum, 0, nvox * sizeof *sum);
    memset(whole, 0, nvox * sizeof *whole);
    for (int k = 0; k < S; k++) {
      EXPECT(sproj_recon_sensitivity_image(o.r, k, oi, 0), SPROJ_OK);
      sync_read(oi);
      for (int64_t v = 0; v < nvox; v++)
        sum[v] += out[v];
      EXPECT(sproj_recon_sensitivity_image(one.r, k, oi, 0), SPROJ_OK);
      sync_read(oi);
      for (int64_t v = 0; v < nvox; v++)
        whole[v] += out[v];
    }
    d = tu_rel_l2_ff(whole, sum, nvox);
    free(sum);
    free(whole);
  }
  printf("sensitivity images: %d copies bit for bit those of sproj_recon_sensitivity; one for all, S copies against "
         "the subsets' sum: %.2e (relative L2)\n", compared, d);
  ck_assert_msg(d <= 1e-5, "S copies of the one-for-all sensitivity add up to %.3g off the subsets' sum", d);

  EXPECT(sproj_image_sync(oi, SPROJ_SYNC_WRITE), SPROJ_OK);
  for (int64_t v = 0; v < nvox; v++)
    out[v] = 7.0f;
  EXPECT(sproj_recon_sensitivity_image(NULL, 0, oi, 0), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_sensitivity_image(o.r, 0, NULL, 0), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_sensitivity_image(o.r, -1, oi, 0), SPROJ_ERR_RANGE);
  EXPECT(sproj_recon_sensitivity_image(o.r, S, oi, 0), SPROJ_ERR_RANGE);
  EXPECT(sproj_recon_sensitivity_image(o.r, 0, wrong, 0), SPROJ_ERR_MISMATCH);
  EXPECT(sproj_recon_sensitivity_image(o.r, 0, oi, 2), SPROJ_ERR_INVALID);
  EXPECT(sproj_recon_sensitivity_image(o.r, 0, oi, -1), SPROJ_ERR_INVALID);
  sync_read(oi);
  for (int64_t v = 0; v < nvox; v++)
    ck_assert_msg(out[v] == 7.0f, "a refused call wrote voxel %lld", (long long)v);
  EXPECT(sproj_image_unregister(wrong), SPROJ_OK);
  EXPECT(sproj_image_unregister(oi), SPROJ_OK);
  lm_close(&one);
  scene_osem_close(&o);
  free(data);
  free(x);
  free(x1);
  free(host);
  free(out);
}
END_TEST

START_TEST(test_bad_input)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *data = make_data(0), *x = estimate(), *g = tu_alloc(nvox), *other = tu_alloc(nvox);
  for (int64_t v = 0; v < nvox; v++)
    g[v] = 7.0f;
  struct scene_osem o;
  scene_osem_open(&o, &sc, 0, x, data, NULL, S);
  sproj_image *gi = image(g), *oi;
  int dims[3] = {sc.g.n[0], sc.g.n[1], sc.g.n[2] - 1};
  EXPECT(sproj_image_register(&oi, other, dims, sc.g.vs, sc.g.origin), SPROJ_OK);
  double nll = 42.0;
  EXPECT(sproj_recon_gradient(NULL, 0, o.img, gi, 0), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_gradient(o.r, 0, NULL, gi, 0), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_gradient(o.r, 0, o.img, NULL, 0), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_gradient(o.r, S, o.img, gi, 0), SPROJ_ERR_RANGE);
  EXPECT(sproj_recon_gradient(o.r, -1, o.img, gi, 0), SPROJ_ERR_RANGE);
  EXPECT(sproj_recon_gradient(o.r, 0, o.img, oi, 0), SPROJ_ERR_MISMATCH);
  EXPECT(sproj_recon_gradient(o.r, 0, o.img, o.img, 0), SPROJ_ERR_INVALID);
  EXPECT(sproj_recon_gradient(o.r, 0, o.img, gi, 4), SPROJ_ERR_INVALID);
  EXPECT(sproj_recon_hessian_times(o.r, 0, NULL, o.img, gi, 0), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_hessian_times(o.r, 0, o.img, gi, gi, 0), SPROJ_ERR_INVALID);
  EXPECT(sproj_recon_hessian_times(o.r, 0, o.img, oi, gi, 0), SPROJ_ERR_MISMATCH);
  EXPECT(sproj_recon_hessian_times(o.r, 0, o.img, o.img, gi, 2), SPROJ_ERR_INVALID);
  EXPECT(sproj_recon_subset_objective(o.r, -2, o.img, &nll), SPROJ_ERR_RANGE);
  EXPECT(sproj_recon_subset_objective(o.r, 0, oi, &nll), SPROJ_ERR_MISMATCH);
  EXPECT(sproj_recon_subset_objective(o.r, 0, o.img, NULL), SPROJ_ERR_NULL);
  ck_assert(nll == 42.0);
  sync_read(gi);
  for (int64_t v = 0; v < nvox; v++)
    ck_assert_msg(g[v] == 7.0f, "a refused call wrote voxel %lld", (long long)v);
  struct sproj_recon_config cfg;
  scene_osem_config(&o, S, &cfg);
  sproj_recon *r = NULL;
  float *x2 = scene_copy(x, nvox);
  sproj_image *xi = image(x2);
  cfg.max_ratio = -1.0f;
  EXPECT(sproj_recon_create(&r, xi, &cfg), SPROJ_ERR_RANGE);
  cfg.max_ratio = NAN;
  EXPECT(sproj_recon_create(&r, xi, &cfg), SPROJ_ERR_NONFINITE);
  cfg.max_ratio = 0.0f;
  float bad_fraction[] = {-1e-6f, 1.0f, 2.0f, NAN, INFINITY};
  for (int i = 0; i < 5; i++) {
    cfg.small_fraction = bad_fraction[i];
    EXPECT(sproj_recon_create(&r, xi, &cfg), isfinite(bad_fraction[i]) ? SPROJ_ERR_RANGE : SPROJ_ERR_NONFINITE);
  }
  ck_assert(r == NULL);
  EXPECT(sproj_image_unregister(xi), SPROJ_OK);
  EXPECT(sproj_image_unregister(gi), SPROJ_OK);
  EXPECT(sproj_image_unregister(oi), SPROJ_OK);
  scene_osem_close(&o);
  free(data);
  free(x);
  free(x2);
  free(g);
  free(other);
}
END_TEST

int main(void)
{
  if (tu_init(-1, 0) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  tu_seed(2026);
  scene_build(&sc);
  printf("scene: %d views x %d planes x %d radial bins = %lld LORs, image %dx%dx%d, %d subsets, %d CPU workers\n",
         sc.nviews, sc.nplanes, sc.nrad, (long long)sc.nlors, sc.g.n[0], sc.g.n[1], sc.g.n[2], S,
         sproj_num_cpu_workers());
  Suite *s = suite_create("objective");
  TCase *tc = tcase_create("objective");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_against_reference);
  tcase_add_loop_test(tc, test_consistency, 0, 2);
  tcase_add_test(tc, test_em_from_pieces);
  tcase_add_test(tc, test_recon_update);
  tcase_add_test(tc, test_stir_rule);
  tcase_add_loop_test(tc, test_small_rule, 0, 4);
  tcase_add_loop_test(tc, test_listmode_pieces, 0, 2);
  tcase_add_test(tc, test_update_multiplicative);
  tcase_add_test(tc, test_update_additive);
  tcase_add_test(tc, test_sensitivity_image);
  tcase_add_test(tc, test_bad_input);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  scene_free(&sc);
  if (sproj_shutdown() != SPROJ_OK)
    ret = 1;
  return ret;
}
