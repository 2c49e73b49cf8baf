/* SPDX-License-Identifier: Apache-2.0 */
/* check_recon.c: the forward model and ML-EM / OS-EM reconstruction: codelets against double-precision references,
 * the objective against a host reference, the resolution model, convergence, equivalences (OSEM 1 subset = MLEM,
 * listmode = sinogram), asynchrony and bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "codelets.h"
#include "em_ratio.h"
#include "gauss3d.h"
#include "sim_counts.h"
#include "recon_codelets.h"

#define SENTINEL ((void *)0x1234)

static struct scene sc;
static float *ybar;      /* noise-free non-TOF data of the unblurred phantom */

/* ---- codelets ---- */
static double ref_ratio(double p, double y, double m, double a)
{
  double expected = m * p + a;
  return expected > 0.0 ? m * y / expected : 0.0;
}

/* Ratio over two pieces of a TOF-like vector (3 values per LOR) on a CPU worker, against double precision: each value
 * is m*y/(m*p+a) with three float roundings, so within 4 float ulps (5e-7 relative). Zero expected counts give 0,
 * for y = 0 (0/0) and for y > 0 alike; m = 0 gives 0. */
START_TEST(test_ratio_codelet)
{
  enum { NB = 3, N1 = 1000, N2 = 37 };
  const int n[2] = {N1, N2};
  float *p[2], *y[2], *m[2], *a[2], *p0[2];
  starpu_data_handle_t h[2][4];
  struct starpu_data_descr d[8];
  for (int q = 0; q < 2; q++) {
    p[q] = tu_alloc(n[q] * NB);
    y[q] = tu_alloc(n[q] * NB);
    a[q] = tu_alloc(n[q] * NB);
    m[q] = tu_alloc(n[q]);
    tu_fill_uniform(p[q], n[q] * NB, 0.0f, 10.0f);
    tu_fill_uniform(y[q], n[q] * NB, 0.0f, 5.0f);
    tu_fill_uniform(a[q], n[q] * NB, 0.0f, 1.0f);
    tu_fill_uniform(m[q], n[q], 0.1f, 1.0f);
  }
  /* the edge cases, in piece 0: 0/0, y > 0 over 0, m = 0, y = 0 over something */
  p[0][0] = 0.0f, a[0][0] = 0.0f, y[0][0] = 0.0f;
  p[0][1] = 0.0f, a[0][1] = 0.0f, y[0][1] = 2.0f;
  m[0][1] = 0.0f, a[0][3] = 0.0f; /* LOR 1: m = 0, its bins 3..5 */
  y[0][6] = 0.0f;
  for (int q = 0; q < 2; q++) {
    p0[q] = scene_copy(p[q], n[q] * NB);
    starpu_vector_data_register(&h[q][0], STARPU_MAIN_RAM, (uintptr_t)p[q], n[q], NB * sizeof(float));
    starpu_vector_data_register(&h[q][1], STARPU_MAIN_RAM, (uintptr_t)y[q], n[q], NB * sizeof(float));
    starpu_vector_data_register(&h[q][2], STARPU_MAIN_RAM, (uintptr_t)m[q], n[q], sizeof(float));
    starpu_vector_data_register(&h[q][3], STARPU_MAIN_RAM, (uintptr_t)a[q], n[q], NB * sizeof(float));
    for (int k = 0; k < 4; k++)
      d[4 * q + k] = (struct starpu_data_descr){.handle = h[q][k], .mode = k == 0 ? STARPU_RW : STARPU_R};
  }
  struct sproj_ratio_arg *arg = malloc(sizeof *arg);
  *arg = (struct sproj_ratio_arg){.npieces = 2, .num_bins = NB, .has_y = 1, .has_m = 1, .has_a = 1,
                                  .kind = SPROJ_RATIO_EM};
  ck_assert_int_eq(starpu_task_insert(&sproj_em_ratio_cl, STARPU_CL_ARGS, arg, sizeof *arg, STARPU_DATA_MODE_ARRAY, d,
                                      8, STARPU_EXECUTE_WHERE, (unsigned long long)STARPU_CPU, 0), 0);
  for (int q = 0; q < 2; q++)
    for (int k = 0; k < 4; k++)
      starpu_data_unregister(h[q][k]);
  double worst = 0.0;
  for (int q = 0; q < 2; q++)
    for (int i = 0; i < n[q]; i++)
      for (int b = 0; b < NB; b++) {
        int k = i * NB + b;
        double ref = ref_ratio(p0[q][k], y[q][k], m[q][i], a[q][k]);
        ck_assert_msg(p[q][k] >= 0.0f, "negative ratio");
        ck_assert_msg(fabs(p[q][k] - ref) <= 5e-7 * ref, "piece %d value %d: %.9g, reference %.9g", q, k, p[q][k], ref);
        if (ref > 0.0)
          worst = fmax(worst, fabs(p[q][k] - ref) / ref);
      }
  ck_assert_msg(p[0][0] == 0.0f && p[0][1] == 0.0f, "0/0 -> %g, 2/0 -> %g (both must be 0)", p[0][0], p[0][1]);
  for (int b = 3; b < 6; b++)
    ck_assert_msg(p[0][b] == 0.0f, "m = 0 gave %g", p[0][b]);
  ck_assert_msg(p[0][6] == 0.0f, "y = 0 gave %g", p[0][6]);
  printf("ratio codelet: worst relative difference to double %.2e\n", worst);
  ck_assert_float_eq(em_ratio_value(1.0f, 1.0f, 1.0f, -2.0f), 0.0f); /* negative expected counts: 0 */
  for (int q = 0; q < 2; q++) {
    free(p[q]);
    free(y[q]);
    free(m[q]);
    free(a[q]);
    free(p0[q]);
  }
}
END_TEST

/* The objective codelet over two pieces of a TOF-like vector (3 values per LOR) on a CPU worker, against sums in
 * double on the host (the same terms: 1e-12 relative); listmode pieces (no data: -log ybar per value); a value with
 * counts but no expected counts makes it +infinity. */
START_TEST(test_nll_codelet)
{
  struct nll_input in;
  scene_nll_input(&in, 3, 1000, 37, 4); /* counts 0 .. 4: a fifth of them 0 */
  double ref = 0.0, ref_lm = 0.0;
  for (int q = 0; q < 2; q++)
    for (int k = 0; k < in.n[q] * in.nb; k++) {
      double ybar = (double)in.m[q][k / in.nb] * in.p[q][k] + in.a[q][k];
      ref += in.y[q][k] > 0.0f ? ybar - in.y[q][k] * log(ybar) : ybar;
      ref_lm -= log(ybar);
    }
  double got = scene_nll(STARPU_CPU, &in, 0), got_lm = scene_nll(STARPU_CPU, &in, 1);
  printf("objective codelet: %.15g (reference %.15g), listmode %.15g (%.15g)\n", got, ref, got_lm, ref_lm);
  ck_assert_msg(fabs(got - ref) <= 1e-12 * fabs(ref), "objective %.17g, reference %.17g", got, ref);
  ck_assert_msg(fabs(got_lm - ref_lm) <= 1e-12 * fabs(ref_lm), "listmode %.17g, reference %.17g", got_lm, ref_lm);
  /* no expected counts: with counts +infinity, without them the term is 0 */
  in.p[1][5] = 0.0f, in.a[1][5] = 0.0f, in.y[1][5] = 0.0f;
  double zero_ok = scene_nll(STARPU_CPU, &in, 0);
  ck_assert_msg(isfinite(zero_ok), "a value without counts or expected counts made the objective %g", zero_ok);
  in.y[1][5] = 1.0f;
  ck_assert(isinf(scene_nll(STARPU_CPU, &in, 0)));
  ck_assert(isinf(scene_nll(STARPU_CPU, &in, 1)));
  scene_nll_input_free(&in);
}
END_TEST

/* sproj_recon_objective of a sinogram OSEM (non-TOF: _i = 0, TOF: 1) at an image that is not the phantom, against the
 * sum in double on the host of ybar - y log ybar (y > 0) or ybar (y = 0) over every value, with ybar = m A x + a from
 * the library's forward model (scene_expected): the same terms up to float rounding of ybar (1e-6 relative). */
START_TEST(test_objective_reference)
{
  const int tof = _i;
  const int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * (tof ? sc.tof.num_bins : 1);
  float *x = tu_alloc(nvox), *expect = tu_alloc(nval), *data = tu_alloc(nval), *at = tu_alloc(nval);
  ck_assert_int_eq(scene_expected(&sc, sc.truth, tof, expect), SPROJ_OK);
  scene_counts(expect, nval, data);
  for (int64_t v = 0; v < nvox; v++)
    x[v] = 0.5f * sc.truth[v] + 0.2f;
  ck_assert_int_eq(scene_expected(&sc, x, tof, at), SPROJ_OK);
  double ref = 0.0;
  int64_t zeros = 0;
  for (int64_t k = 0; k < nval; k++) {
    ref += data[k] > 0.0f ? at[k] - data[k] * log((double)at[k]) : at[k];
    zeros += data[k] == 0.0f;
  }
  struct scene_osem o;
  scene_osem_open(&o, &sc, tof, x, data, NULL, 4);
  double nll = 0.0;
  EXPECT(sproj_recon_objective(o.r, &nll), SPROJ_OK);
  printf("%s objective: %.12g, host reference %.12g (%lld of %lld values without counts)\n", tof ? "TOF" : "non-TOF",
         nll, ref, (long long)zeros, (long long)nval);
  ck_assert_msg(zeros > 0 && zeros < nval, "%lld of %lld values without counts", (long long)zeros, (long long)nval);
  ck_assert_msg(fabs(nll - ref) <= 1e-6 * fabs(ref), "objective %.12g, reference %.12g", nll, ref);
  scene_osem_close(&o);
  free(x);
  free(expect);
  free(data);
  free(at);
}
END_TEST

/* Update x * bp / (sens * f) against double (two float roundings: 3e-7 relative); sens = 0 gives exactly 0, the
 * result is never negative. */
START_TEST(test_update_codelet)
{
  enum { N = 5000 };
  float *x = tu_alloc(N), *bp = tu_alloc(N), *sens = tu_alloc(N);
  tu_fill_uniform(x, N, 0.0f, 3.0f);
  tu_fill_uniform(bp, N, 0.0f, 2.0f);
  tu_fill_uniform(sens, N, 0.01f, 4.0f);
  for (int i = 0; i < N; i += 7)
    sens[i] = 0.0f;
  for (int i = 3; i < N; i += 11)
    bp[i] = 0.0f;
  float *x0 = scene_copy(x, N);
  starpu_data_handle_t hx, hb, hs;
  starpu_vector_data_register(&hx, STARPU_MAIN_RAM, (uintptr_t)x, N, sizeof(float));
  starpu_vector_data_register(&hb, STARPU_MAIN_RAM, (uintptr_t)bp, N, sizeof(float));
  starpu_vector_data_register(&hs, STARPU_MAIN_RAM, (uintptr_t)sens, N, sizeof(float));
  struct sproj_update_arg *arg = calloc(1, sizeof *arg);
  arg->sens_factor = 0.25f;
  ck_assert_int_eq(starpu_task_insert(&sproj_em_update_cl, STARPU_RW, hx, STARPU_R, hb, STARPU_R, hs, STARPU_CL_ARGS,
                                      arg, sizeof *arg, STARPU_EXECUTE_WHERE, (unsigned long long)STARPU_CPU, 0), 0);
  starpu_data_unregister(hx);
  starpu_data_unregister(hb);
  starpu_data_unregister(hs);
  int zeros = 0;
  for (int i = 0; i < N; i++) {
    ck_assert_msg(x[i] >= 0.0f, "voxel %d negative", i);
    if (sens[i] == 0.0f) {
      ck_assert_msg(x[i] == 0.0f, "voxel %d with sens 0 is %g", i, x[i]);
      zeros++;
      continue;
    }
    double ref = (double)x0[i] * bp[i] / (sens[i] * 0.25);
    ck_assert_msg(fabs(x[i] - ref) <= 3e-7 * ref, "voxel %d: %.9g, reference %.9g", i, x[i], ref);
  }
  ck_assert_int_eq(zeros, (N + 6) / 7);
  free(x);
  free(bp);
  free(sens);
  free(x0);
}
END_TEST

/* ---- resolution model ---- */
/* Independent blur in double: taps exp(-k^2 / 2 sigma^2) for |k| <= ceil(3 sigma), normalised, zero outside. */
static void ref_blur(const struct tu_geom *g, const float fwhm[3], const double *in, double *out)
{
  int64_t n = tu_nvox(g);
  double *cur = malloc(n * sizeof *cur), *next = malloc(n * sizeof *next);
  memcpy(cur, in, n * sizeof *cur);
  for (int a = 0; a < 3; a++) {
    double sigma = fwhm[a] / (2.0 * sqrt(2.0 * log(2.0))) / g->vs[a];
    int r = fwhm[a] > 0.0f ? (int)ceil(3.0 * sigma) : 0;
    double w[200], sum = 0.0;
    for (int k = -r; k <= r; k++)
      sum += w[k + r] = r > 0 ? exp(-0.5 * k * k / (sigma * sigma)) : 1.0;
    int64_t stride = a == 2 ? 1 : a == 1 ? g->n[2] : (int64_t)g->n[1] * g->n[2];
    for (int64_t i = 0; i < n; i++) {
      int c = (int)((i / stride) % g->n[a]);
      double s = 0.0;
      for (int k = -r; k <= r; k++)
        if (c + k >= 0 && c + k < g->n[a])
          s += w[k + r] / sum * cur[i + k * stride];
      next[i] = s;
    }
    double *t = cur;
    cur = next;
    next = t;
  }
  memcpy(out, cur, n * sizeof *out);
  free(cur);
  free(next);
}

/* <G u, v> = <u, G v> to 1e-6 relative (float sums of ~40 terms, compared in double), and G u against the double
 * blur to 1e-6 of the largest value. */
START_TEST(test_gauss_adjoint)
{
  struct tu_geom g = {{10, 12, 9}, {2.0f, 1.5f, 3.0f}, {0, 0, 0}};
  const float fwhm[3] = {7.0f, 4.0f, 9.5f};
  int64_t n = tu_nvox(&g);
  float *u = tu_alloc(n), *v = tu_alloc(n), *gu = tu_alloc(n), *gv = tu_alloc(n);
  double *ud = malloc(n * sizeof *ud), *ref = malloc(n * sizeof *ref);
  tu_fill_uniform(u, n, 0.0f, 1.0f);
  tu_fill_uniform(v, n, -1.0f, 1.0f);
  scene_blur(&g, fwhm, u, gu, STARPU_CPU);
  scene_blur(&g, fwhm, v, gv, STARPU_CPU);
  double lhs = tu_dot_ff(gu, v, n), rhs = tu_dot_ff(u, gv, n), rel = fabs(lhs - rhs) / fabs(lhs);
  for (int64_t i = 0; i < n; i++)
    ud[i] = u[i];
  ref_blur(&g, fwhm, ud, ref);
  double maxref = 0.0, maxdiff = tu_max_abs_diff_fd(gu, ref, n);
  for (int64_t i = 0; i < n; i++)
    maxref = fmax(maxref, fabs(ref[i]));
  printf("blur: <Gu,v> = %.9g, <u,Gv> = %.9g, relative difference %.2e; max difference to double %.2e (max %.3g)\n",
         lhs, rhs, rel, maxdiff, maxref);
  ck_assert_msg(rel <= 1e-6, "blur is not self-adjoint: %.3g", rel);
  ck_assert_msg(maxdiff <= 1e-6 * maxref, "blur differs from the double reference by %.3g", maxdiff);
  free(u);
  free(v);
  free(gu);
  free(gv);
  free(ud);
  free(ref);
}
END_TEST

/* A delta blurs to the requested FWHM on each axis: measured from the profile's second moment, 2.3548 * sqrt(var),
 * within 3% (cutting the Gaussian at 3 sigma narrows it by 1.3%). Its sum stays 1 (the kernel is normalised and fits
 * in the image) to 1e-5. */
START_TEST(test_gauss_fwhm)
{
  struct tu_geom g = {{17, 33, 25}, {2.0f, 1.0f, 1.5f}, {0, 0, 0}};
  const float fwhm[3] = {7.0f, 5.0f, 6.0f};
  const int c[3] = {8, 16, 12};
  int64_t n = tu_nvox(&g);
  float *d = tu_alloc(n), *out = tu_alloc(n);
  memset(d, 0, n * sizeof *d);
  d[((int64_t)c[0] * g.n[1] + c[1]) * g.n[2] + c[2]] = 1.0f;
  scene_blur(&g, fwhm, d, out, STARPU_CPU);
  double total = 0.0;
  for (int64_t i = 0; i < n; i++)
    total += out[i];
  ck_assert_msg(fabs(total - 1.0) <= 1e-5, "sum of the blurred delta %.9g", total);
  for (int a = 0; a < 3; a++) {
    double s0 = 0.0, s2 = 0.0;
    for (int k = 0; k < g.n[a]; k++) {
      int i[3] = {c[0], c[1], c[2]};
      i[a] = k;
      double w = out[((int64_t)i[0] * g.n[1] + i[1]) * g.n[2] + i[2]], x = (k - c[a]) * g.vs[a];
      s0 += w;
      s2 += w * x * x;
    }
    double measured = 2.0 * sqrt(2.0 * log(2.0)) * sqrt(s2 / s0);
    printf("blur axis %d: FWHM %.3f mm measured, %.3f requested (%.2f%%)\n", a, measured, fwhm[a],
           100.0 * (measured / fwhm[a] - 1.0));
    ck_assert_msg(fabs(measured / fwhm[a] - 1.0) <= 0.03, "axis %d: FWHM %.3f, requested %.3f", a, measured, fwhm[a]);
  }
  free(d);
  free(out);
}
END_TEST

/* ---- reconstructions ---- */
/* MLEM on noise-free data (m != 1, a > 0): the negative log-likelihood falls at every one of 40 iterations, and the
 * image approaches the phantom. Without a resolution model the relative L2 error after 40 iterations was 0.107
 * (bound 0.12); with a 6 mm resolution model (data made with it) 0.251 (bound 0.27): deconvolution converges
 * slowly. Without blur, the voxels no LOR reaches (the two outer planes) have sensitivity 0 and end at 0. */
START_TEST(test_mlem_converges)
{
  const float fwhm[3] = {6.0f, 6.0f, 6.0f};
  const int blur = _i == 1;
  const double bound = blur ? 0.27 : 0.12;
  int64_t nvox = tu_nvox(&sc.g);
  float *data = tu_alloc(sc.nlors), *x = tu_alloc(nvox), *sens = tu_alloc(nvox);
  ck_assert_int_eq(blur ? scene_expected_blurred(&sc, sc.truth, fwhm, 0, data) : scene_expected(&sc, sc.truth, 0, data),
                   SPROJ_OK);
  struct trace t;
  scene_run_sino(&sc, 0, blur ? fwhm : NULL, 1, NULL, data, 40, x, &t, sens);
  ck_assert_int_eq(t.n, 40);
  for (int i = 1; i < t.n; i++)
    ck_assert_msg(t.nll[i] < t.nll[i - 1], "iteration %d: NLL %.12g after %.12g", i + 1, t.nll[i], t.nll[i - 1]);
  double err = tu_rel_l2_ff(x, sc.truth, nvox);
  int unseen = 0;
  for (int64_t v = 0; v < nvox; v++) {
    ck_assert_msg(x[v] >= 0.0f && isfinite(x[v]), "voxel %lld = %g", (long long)v, x[v]);
    if (sens[v] == 0.0f) {
      unseen++;
      ck_assert_msg(x[v] == 0.0f, "voxel %lld has sensitivity 0 and value %g", (long long)v, x[v]);
    }
  }
  printf("MLEM%s: NLL %.9g -> %.9g over %d iterations (%.3f s), relative L2 error %.4f (bound %.2f), %d voxels unseen\n",
         blur ? " with resolution model" : "", t.nll[0], t.nll[t.n - 1], t.n, t.elapsed[t.n - 1], err, bound, unseen);
  ck_assert_msg(err < bound, "relative L2 error %.4f", err);
  if (!blur)
    ck_assert_msg(unseen == nvox / 4, "%d voxels unseen, not the 2 outer planes: the test geometry changed", unseen);
  free(data);
  free(x);
  free(sens);
}
END_TEST

/* A host-driven MLEM through the public projectors (ratio and update in double on the host): the reference. */
static void host_mlem(const float *data, int iters, float *x)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *p = tu_alloc(sc.nlors), *ones = tu_alloc(sc.nlors), *sens = tu_alloc(nvox), *bp = tu_alloc(nvox);
  for (int64_t v = 0; v < nvox; v++)
    x[v] = 1.0f;
  for (int64_t l = 0; l < sc.nlors; l++)
    ones[l] = sc.mult[l];
  memset(sens, 0, nvox * sizeof *sens);
  ck_assert_int_eq(tu_back_whole(&sc.g, sens, sc.xs, sc.xe, sc.nlors, ones), SPROJ_OK);
  for (int it = 0; it < iters; it++) {
    ck_assert_int_eq(tu_fwd_whole(&sc.g, x, sc.xs, sc.xe, sc.nlors, p), SPROJ_OK);
    for (int64_t l = 0; l < sc.nlors; l++)
      p[l] = (float)ref_ratio(p[l], data[l], sc.mult[l], sc.add[l]);
    memset(bp, 0, nvox * sizeof *bp);
    ck_assert_int_eq(tu_back_whole(&sc.g, bp, sc.xs, sc.xe, sc.nlors, p), SPROJ_OK);
    for (int64_t v = 0; v < nvox; v++)
      x[v] = sens[v] > 0.0f ? (float)((double)x[v] * bp[v] / sens[v]) : 0.0f;
  }
  free(p);
  free(ones);
  free(sens);
  free(bp);
}

/* OSEM with one subset listing every view in reverse order equals MLEM (interleaved default) to 1e-5 relative L2
 * after 5 iterations (measured 1.4e-6: only the order of the float sums of the back projection differs, which also
 * varies from run to run with the worker that takes each task), and MLEM equals a host-driven MLEM through the
 * public projectors (ratio and update in double on the host) to 1e-5 (measured 1.9e-6). */
START_TEST(test_osem1_equals_mlem)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *mlem = tu_alloc(nvox), *osem = tu_alloc(nvox), *host = tu_alloc(nvox);
  int order[256];
  for (int v = 0; v < sc.nviews; v++)
    order[v] = sc.nviews - 1 - v;
  scene_run_sino(&sc, 0, NULL, 1, NULL, ybar, 5, mlem, NULL, NULL);
  scene_run_sino(&sc, 0, NULL, 1, order, ybar, 5, osem, NULL, NULL);
  host_mlem(ybar, 5, host);
  double d1 = tu_rel_l2_ff(osem, mlem, nvox), d2 = tu_rel_l2_ff(mlem, host, nvox);
  printf("OSEM(1 subset) vs MLEM: %.2e; MLEM vs host-driven MLEM: %.2e (relative L2, 5 iterations)\n", d1, d2);
  ck_assert_msg(d1 <= 1e-5, "OSEM with one subset differs from MLEM by %.3g", d1);
  ck_assert_msg(d2 <= 1e-5, "MLEM differs from the host-driven reference by %.3g", d2);
  free(mlem);
  free(osem);
  free(host);
}
END_TEST

/* OSEM with 8 subsets: after 2 iterations its NLL is below MLEM's after 2 (16 updates against 2), and the subset
 * sensitivities add up to the full one (1e-5 relative L2: float sums in other orders). */
START_TEST(test_osem_subsets)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *x = tu_alloc(nvox), *full = tu_alloc(nvox), *sum = tu_alloc(nvox), *s = tu_alloc(nvox);
  struct trace tm, to;
  scene_run_sino(&sc, 0, NULL, 1, NULL, ybar, 2, x, &tm, full);
  scene_run_sino(&sc, 0, NULL, 8, NULL, ybar, 2, x, &to, NULL);
  printf("NLL after 2 iterations: MLEM %.9g, OSEM (8 subsets) %.9g\n", tm.nll[1], to.nll[1]);
  ck_assert_msg(to.nll[1] < tm.nll[1], "OSEM %.9g is not below MLEM %.9g", to.nll[1], tm.nll[1]);

  struct scene_osem o;
  scene_osem_open(&o, &sc, 0, x, ybar, NULL, 8);
  memset(sum, 0, nvox * sizeof *sum);
  for (int k = 0; k < 8; k++) {
    ck_assert_int_eq(sproj_recon_sensitivity(o.r, k, s), SPROJ_OK);
    for (int64_t v = 0; v < nvox; v++)
      sum[v] += s[v];
  }
  double d = tu_rel_l2_ff(sum, full, nvox);
  printf("sum of 8 subset sensitivities vs the full one: %.2e\n", d);
  ck_assert_msg(d <= 1e-5, "subset sensitivities add up to %.3g off", d);
  scene_osem_close(&o);
  free(x);
  free(full);
  free(sum);
  free(s);
}
END_TEST

/* A second reconstruction's inputs beside o's: its image over x2 (registered) and a configuration of o's model,
 * data and views in 8 interleaved subsets, sensitivities left for the caller to say. */
static void second_recon_inputs(const struct scene_osem *o, float *x2, sproj_image **img2, struct sproj_recon_config *cfg)
{
  ck_assert_int_eq(sproj_image_register(img2, x2, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  scene_osem_config(o, 8, cfg);
}

/* Two iterations of o's reconstruction and of r2 (whose image img2 is over x2), then the images compared (within
 * 1e-6 relative L2: the order of StarPU's reductions aside, they are the same). */
static void iterate_both_and_compare(const struct scene_osem *o, sproj_recon *r2, sproj_image *img2, const float *x,
                                     const float *x2, const char *what)
{
  EXPECT(sproj_recon_iterate(o->r, 2, NULL, NULL), SPROJ_OK);
  EXPECT(sproj_recon_iterate(r2, 2, NULL, NULL), SPROJ_OK);
  EXPECT(sproj_image_sync(o->img, SPROJ_SYNC_READ), SPROJ_OK);
  EXPECT(sproj_image_sync(img2, SPROJ_SYNC_READ), SPROJ_OK);
  double d = tu_rel_l2_ff(x2, x, tu_nvox(&sc.g));
  printf("OSEM (8 subsets, 2 iterations) with the %s given against computed: %.2e\n", what, d);
  ck_assert_msg(d <= 1e-6, "the images differ by %.3g", d);
}

/* Sensitivities the caller gives (cfg.sensitivities, as an objective function that read them from files): a
 * reconstruction given the 8 subset sensitivities another one computed gives its sensitivities back as they are, and
 * its iterations the same image (the order of StarPU's reductions aside: within 1e-6); one sensitivity for every
 * subset is used as given; bad ones are refused and create nothing. */
START_TEST(test_given_sensitivities)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *x = scene_ones(&sc), *x2 = scene_ones(&sc), *s = tu_alloc(nvox), *back = tu_alloc(nvox);
  float *given[8];
  struct scene_osem o;
  scene_osem_open(&o, &sc, 0, x, ybar, NULL, 8);
  for (int k = 0; k < 8; k++) {
    given[k] = tu_alloc(nvox);
    ck_assert_int_eq(sproj_recon_sensitivity(o.r, k, given[k]), SPROJ_OK);
  }
  sproj_image *img2;
  struct sproj_recon_config cfg;
  second_recon_inputs(&o, x2, &img2, &cfg);
  cfg.sensitivities = (const float *const *)given;
  cfg.num_sensitivities = 8;
  sproj_recon *r2;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_OK);
  for (int k = 0; k < 8; k++) {
    ck_assert_int_eq(sproj_recon_sensitivity(r2, k, back), SPROJ_OK);
    ck_assert_msg(memcmp(back, given[k], nvox * sizeof *back) == 0, "sensitivity %d is not the one given", k);
  }
  iterate_both_and_compare(&o, r2, img2, x, x2, "sensitivities");
  ck_assert_int_eq(sproj_recon_destroy(r2), SPROJ_OK);

  /* one for every subset: subset k divides by it as given */
  cfg.num_sensitivities = 1;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_OK);
  ck_assert_int_eq(sproj_recon_sensitivity(r2, 5, back), SPROJ_OK);
  ck_assert_msg(memcmp(back, given[0], nvox * sizeof *back) == 0, "subset 5 does not use the one sensitivity given");
  ck_assert_int_eq(sproj_recon_destroy(r2), SPROJ_OK);

  /* refused: a count that is neither 1 nor S, a NULL array, a NaN, a negative value */
  r2 = NULL;
  cfg.num_sensitivities = 3;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_ERR_RANGE);
  cfg.num_sensitivities = 8;
  float *keep = given[3];
  given[3] = NULL;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_ERR_NULL);
  given[3] = keep;
  float was = given[3][17];
  given[3][17] = NAN;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_ERR_NONFINITE);
  given[3][17] = -1.0f;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_ERR_RANGE);
  given[3][17] = was;
  ck_assert_ptr_null(r2);

  ck_assert_int_eq(sproj_image_unregister(img2), SPROJ_OK);
  scene_osem_close(&o);
  for (int k = 0; k < 8; k++)
    free(given[k]);
  free(x);
  free(x2);
  free(s);
  free(back);
}
END_TEST

/* Sensitivity images the caller computed itself (cfg.sensitivity_images, as STIR's objective function submits them
 * before it reads its data): images of sproj_image_create, zeroed, each the back projection of the model's factors
 * over its subset's views, unregistered as soon as create has returned. The reconstruction's sensitivities are then
 * those it computes itself, and so are its iterations (float sums in other orders: 1e-6); bad ones are refused and
 * create nothing. */
START_TEST(test_given_sensitivity_images)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *x = scene_ones(&sc), *x2 = scene_ones(&sc), *computed = tu_alloc(nvox), *back = tu_alloc(nvox);
  struct scene_osem o;
  scene_osem_open(&o, &sc, 0, x, ybar, NULL, 8);
  sproj_proj *m;
  sproj_image *sens[8];
  scene_sensitivity_images(&o, &sc, 8, &m, sens);
  sproj_image *img2;
  struct sproj_recon_config cfg;
  second_recon_inputs(&o, x2, &img2, &cfg);
  cfg.sensitivity_images = sens;
  cfg.num_sensitivities = 8;

  /* refused first, creating nothing: a count that is neither 1 nor S, a NULL image, another geometry, both kinds */
  sproj_recon *r2 = NULL;
  cfg.num_sensitivities = 3;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_ERR_RANGE);
  cfg.num_sensitivities = 8;
  sproj_image *keep = sens[3], *other;
  sens[3] = NULL;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_ERR_NULL);
  int dims[3] = {sc.g.n[0], sc.g.n[1], sc.g.n[2] + 1};
  ck_assert_int_eq(sproj_image_create(&other, dims, sc.g.vs, sc.g.origin), SPROJ_OK);
  sens[3] = other;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_ERR_MISMATCH);
  sens[3] = keep;
  ck_assert_int_eq(sproj_image_unregister(other), SPROJ_OK);
  float *given[1] = {computed};
  cfg.sensitivities = (const float *const *)given;
  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_ERR_INVALID);
  cfg.sensitivities = NULL;
  ck_assert_ptr_null(r2);

  EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_OK);
  scene_sensitivity_images_free(m, sens, 8);
  double worst = 0.0;
  for (int k = 0; k < 8; k++) {
    ck_assert_int_eq(sproj_recon_sensitivity(o.r, k, computed), SPROJ_OK);
    ck_assert_int_eq(sproj_recon_sensitivity(r2, k, back), SPROJ_OK);
    double d = tu_rel_l2_ff(back, computed, nvox);
    worst = d > worst ? d : worst;
  }
  printf("sensitivity images given against computed: %.2e (worst of 8 subsets, relative L2)\n", worst);
  ck_assert_msg(worst <= 1e-6, "a given sensitivity image differs from the computed one by %.3g", worst);
  iterate_both_and_compare(&o, r2, img2, x, x2, "sensitivity images");
  ck_assert_int_eq(sproj_recon_destroy(r2), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img2), SPROJ_OK);
  scene_osem_close(&o);
  free(x);
  free(x2);
  free(computed);
  free(back);
}
END_TEST

/* sproj_image_blur is the models' blur: the same values as the gauss3d codelet run alone (bit for bit, on CPU workers
 * both), and its bad arguments change nothing. */
START_TEST(test_image_blur)
{
  const float fwhm[3] = {7.0f, 5.0f, 6.0f};
  struct tu_geom g = sc.g;
  int64_t nvox = tu_nvox(&g);
  float *u = tu_alloc(nvox), *out = tu_alloc(nvox), *ref = tu_alloc(nvox);
  tu_fill_uniform(u, nvox, -1.0f, 1.0f);
  for (int64_t v = 0; v < nvox; v++)
    out[v] = 5.0f;
  scene_blur(&g, fwhm, u, ref, STARPU_CPU);
  sproj_image *src, *dst;
  ck_assert_int_eq(sproj_image_register(&src, u, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&dst, out, g.n, g.vs, g.origin), SPROJ_OK);
  const float bad_fwhm[3] = {-1.0f, 0.0f, 0.0f}, huge[3] = {1e4f, 0.0f, 0.0f}, nan_fwhm[3] = {NAN, 0.0f, 0.0f};
  EXPECT(sproj_image_blur(dst, src, bad_fwhm), SPROJ_ERR_RANGE);
  EXPECT(sproj_image_blur(dst, src, huge), SPROJ_ERR_RANGE);
  EXPECT(sproj_image_blur(dst, src, nan_fwhm), SPROJ_ERR_NONFINITE);
  EXPECT(sproj_image_blur(dst, dst, fwhm), SPROJ_ERR_INVALID);
  EXPECT(sproj_image_blur(NULL, src, fwhm), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_image_sync(dst, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_float_eq(out[0], 5.0f); /* the refused calls left dst as it was */
  EXPECT(sproj_image_blur(dst, src, fwhm), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(dst, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_msg(memcmp(out, ref, (size_t)nvox * sizeof *out) == 0, "sproj_image_blur differs from the codelet");
  ck_assert_int_eq(sproj_image_unregister(dst), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(src), SPROJ_OK);
  free(u);
  free(out);
  free(ref);
}
END_TEST

/* TOF-sinogram MLEM on noise-free TOF data: NLL falls at every one of 8 iterations; relative L2 error to the
 * phantom 0.212 measured (bound 0.23), below non-TOF MLEM's after as many iterations (0.261). The same background
 * given as one value per LOR (sproj_model_create_tof_uniform_add) gives the same bins (a / num_bins, the very float
 * the scene stores per bin): the same image up to the order of float additions in the back projections (1e-5
 * relative L2) and the same objective at every iteration (1e-7 relative: the images differ by float additions, 1e-9 measured). */
START_TEST(test_tof_mlem)
{
  int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * sc.tof.num_bins;
  float *data = tu_alloc(nval), *x = tu_alloc(nvox), *xn = tu_alloc(nvox);
  ck_assert_int_eq(scene_expected(&sc, sc.truth, 1, data), SPROJ_OK);
  struct trace t;
  scene_run_sino(&sc, 1, NULL, 1, NULL, data, 8, x, &t, NULL);
  for (int i = 1; i < t.n; i++)
    ck_assert_msg(t.nll[i] < t.nll[i - 1], "iteration %d: NLL %.12g after %.12g", i + 1, t.nll[i], t.nll[i - 1]);
  float *xu = tu_alloc(nvox);
  struct trace tu;
  scene_run_sino(&sc, 2, NULL, 1, NULL, data, 8, xu, &tu, NULL);
  ck_assert_int_eq(tu.n, t.n);
  for (int i = 0; i < t.n; i++)
    ck_assert_msg(fabs(tu.nll[i] - t.nll[i]) <= 1e-7 * fabs(t.nll[i]), "iteration %d: NLL %.12g with the background "
                  "per LOR, %.12g per bin", i + 1, tu.nll[i], t.nll[i]);
  double du = tu_rel_l2_ff(xu, x, nvox);
  printf("TOF MLEM, background per LOR against per bin: relative L2 difference %.2e\n", du);
  ck_assert_msg(du <= 1e-5, "background per LOR: relative L2 difference %.3g", du);
  free(xu);
  scene_run_sino(&sc, 0, NULL, 1, NULL, ybar, 8, xn, NULL, NULL);
  double err = tu_rel_l2_ff(x, sc.truth, nvox), errn = tu_rel_l2_ff(xn, sc.truth, nvox);
  printf("TOF MLEM: NLL %.9g -> %.9g, relative L2 error %.4f after 8 iterations (non-TOF %.4f)\n", t.nll[0],
         t.nll[t.n - 1], err, errn);
  ck_assert_msg(err < 0.23, "TOF MLEM relative L2 error %.4f", err);
  ck_assert_msg(err < errn, "TOF (%.4f) no better than non-TOF (%.4f)", err, errn);
  free(data);
  free(x);
  free(xn);
}
END_TEST

/* One listmode event per count of an integer sinogram: listmode MLEM equals sinogram MLEM to 1e-4 relative L2 after
 * 5 iterations (non-TOF: _i = 0, TOF: 1; measured 1.5e-6), and so do their objectives (1e-6: the same sum,
 * regrouped; measured 3e-9); LM-OSEM with event subsets holding the events of sinogram subsets (4, interleaved
 * views) and those subsets' sensitivities equals sinogram OSEM to 1e-4 (measured 1.5e-6). */
START_TEST(test_lm_equals_sino)
{
  const int tof = _i;
  int nb = tof ? sc.tof.num_bins : 1;
  int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * nb;
  float *ybar_t = tu_alloc(nval), *counts = tu_alloc(nval), *xs = tu_alloc(nvox), *xl = tu_alloc(nvox);
  ck_assert_int_eq(scene_expected(&sc, sc.truth, tof, ybar_t), SPROJ_OK);
  tu_seed(77);
  scene_counts(ybar_t, nval, counts);
  double events = 0.0;
  for (int64_t k = 0; k < nval; k++)
    events += counts[k];
  struct trace ts, tl;
  scene_run_sino(&sc, tof, NULL, 1, NULL, counts, 5, xs, &ts, NULL);
  scene_run_lm(&sc, tof, 1, 0, counts, 5, xl, &tl);
  double d = tu_rel_l2_ff(xl, xs, nvox), dn = fabs(tl.nll[4] - ts.nll[4]) / fabs(ts.nll[4]);
  printf("%s, %.0f events: listmode vs sinogram MLEM %.2e, objectives %.12g / %.12g (%.2e)\n", tof ? "TOF" : "non-TOF",
         events, d, tl.nll[4], ts.nll[4], dn);
  ck_assert_msg(d <= 1e-4, "listmode MLEM differs from sinogram MLEM by %.3g", d);
  ck_assert_msg(dn <= 1e-6, "listmode objective differs from the sinogram's by %.3g", dn);
  scene_run_sino(&sc, tof, NULL, 4, NULL, counts, 3, xs, NULL, NULL);
  scene_run_lm(&sc, tof, 4, 1, counts, 3, xl, NULL);
  d = tu_rel_l2_ff(xl, xs, nvox);
  printf("%s: LM-OSEM vs sinogram OSEM (4 subsets, 3 iterations) %.2e\n", tof ? "TOF" : "non-TOF", d);
  ck_assert_msg(d <= 1e-4, "LM-OSEM differs from sinogram OSEM by %.3g", d);
  free(ybar_t);
  free(counts);
  free(xs);
  free(xl);
}
END_TEST

/* A flat background (sproj_model_set_flat_background) is the same model as a background array holding that value
 * everywhere: OS-EM images and objectives bit for bit equal, non-TOF and TOF sinograms (the value per bin) and TOF
 * listmode (per event); the simulated expected counts too; bad values and a model in use refused. */
static void flat_recon(int kind, const float *data, int64_t nev, float *ex, float *exe, int16_t *eb, float *em,
                       float *ea, int64_t *first, int64_t *count, float c, int flat, float *x, double *nll)
{
  const int tof = kind > 0, lm = kind == 2;
  sproj_lors *lors, *events = NULL;
  sproj_chunks *views, *evchunks = NULL;
  sproj_tof *t = NULL;
  sproj_model *md, *sens = NULL;
  sproj_image *img;
  sproj_proj *y = NULL;
  sproj_recon *r;
  int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * (tof && !lm ? sc.tof.num_bins : 1);
  for (int64_t v = 0; v < nvox; v++)
    x[v] = 1.0f;
  float *arr = NULL;
  ck_assert_int_eq(sproj_lors_register(&lors, sc.xs, sc.xe, sc.nlors), SPROJ_OK);
  ck_assert_int_eq(scene_views(&sc, lors, &views), SPROJ_OK);
  if (tof)
    ck_assert_int_eq(sproj_tof_register(&t, &sc.tof, NULL, NULL, NULL), SPROJ_OK);
  if (lm) {
    ck_assert_int_eq(sproj_lors_register_events(&events, ex, exe, eb, nev), SPROJ_OK);
    ck_assert_int_eq(sproj_chunks_create_ranges(&evchunks, events, sc.nviews, first, count), SPROJ_OK);
    for (int64_t e = 0; e < nev; e++)
      ea[e] = c;
    EXPECT(sproj_model_create(&md, events, em, flat ? NULL : ea, t, NULL), SPROJ_OK);
    EXPECT(sproj_model_create(&sens, lors, sc.mult, NULL, NULL, NULL), SPROJ_OK);
  } else {
    arr = tu_alloc(nval);
    for (int64_t k = 0; k < nval; k++)
      arr[k] = c;
    EXPECT(sproj_model_create(&md, lors, sc.mult, flat ? NULL : arr, t, NULL), SPROJ_OK);
    ck_assert_int_eq(tof ? sproj_proj_register_tof(&y, (float *)data, lors, sc.tof.num_bins)
                         : sproj_proj_register(&y, (float *)data, lors), SPROJ_OK);
  }
  if (flat)
    EXPECT(sproj_model_set_flat_background(md, c), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&img, x, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = md;
  cfg.data = y;
  cfg.chunks = lm ? evchunks : views;
  cfg.sens_model = sens;
  cfg.num_subsets = 2;
  cfg.objective = 1;
  struct trace tr = {0};
  EXPECT(sproj_recon_create(&r, img, &cfg), SPROJ_OK);
  if (flat) /* in use now */
    EXPECT(sproj_model_set_flat_background(md, c), SPROJ_ERR_BUSY);
  EXPECT(sproj_recon_iterate(r, 2, scene_record, &tr), SPROJ_OK);
  *nll = tr.nll[1];
  EXPECT(sproj_recon_destroy(r), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  if (y)
    ck_assert_int_eq(sproj_proj_unregister(y), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(md), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(sens), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(t), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(views), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(evchunks), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(events), SPROJ_OK);
  free(arr);
}

START_TEST(test_flat_background)
{
  const int kind = _i, tof = kind > 0;
  const int nb = tof ? sc.tof.num_bins : 1;
  int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * nb;
  float *ybar = tu_alloc(nval), *counts = tu_alloc(nval), *xa = tu_alloc(nvox), *xf = tu_alloc(nvox);
  ck_assert_int_eq(scene_expected(&sc, sc.truth, tof, ybar), SPROJ_OK);
  tu_seed(91);
  scene_counts(ybar, nval, counts);
  float *ex = NULL, *exe = NULL, *em = NULL, *ea = NULL;
  int16_t *eb = NULL;
  int64_t first[256], count[256], nev = 0;
  if (kind == 2)
    nev = scene_events(&sc, counts, nb, &ex, &exe, &eb, &em, &ea, first, count);
  const float c = 0.0371f;
  double na, nf;
  flat_recon(kind, counts, nev, ex, exe, eb, em, ea, first, count, c, 0, xa, &na);
  flat_recon(kind, counts, nev, ex, exe, eb, em, ea, first, count, c, 1, xf, &nf);
  /* a background of 0 instead: what a flat value that did not reach the tasks would give */
  double n0;
  float *x0 = tu_alloc(nvox);
  flat_recon(kind, counts, nev, ex, exe, eb, em, ea, first, count, 0.0f, 1, x0, &n0);
  double d = tu_rel_l2_ff(xf, xa, nvox), d0 = tu_rel_l2_ff(x0, xa, nvox);
  printf("flat background (%s): OS-EM image %.2e from the array's (%.2e without background), objectives %.12g / "
         "%.12g (%.12g)\n", kind == 0 ? "non-TOF" : kind == 1 ? "TOF sinogram" : "TOF listmode", d, d0, na, nf, n0);
  /* the two differ only in the order of the back projections' sums (CPU workers), which moves the images by up to
   * ~2e-6 and the objectives by up to 1.2e-8 relative (seen once: TOF listmode, 2 CPU workers): 1e-7,
   * an order below what a background that did not reach the tasks changes (more than 1e-6, asserted below) */
  ck_assert_msg(d <= 1e-5, "flat background: %.3g from the array's image", d);
  ck_assert_msg(fabs(nf - na) <= 1e-7 * fabs(na), "objectives %.17g (array) and %.17g (flat)", na, nf);
  ck_assert_msg(d0 > 100 * d && fabs(n0 - na) > 1e-6 * fabs(na), "the background changes nothing: %.3g", d0);
  free(x0);
  if (kind < 2) {
    /* the simulated expected counts of the phantom: the same */
    sproj_lors *lors;
    sproj_chunks *views;
    sproj_tof *t = NULL;
    sproj_model *ma, *mf;
    sproj_image *img;
    sproj_proj *pa, *pf;
    float *arr = tu_alloc(nval), *va = tu_alloc(nval), *vf = tu_alloc(nval);
    for (int64_t k = 0; k < nval; k++)
      arr[k] = c;
    ck_assert_int_eq(sproj_lors_register(&lors, sc.xs, sc.xe, sc.nlors), SPROJ_OK);
    ck_assert_int_eq(scene_views(&sc, lors, &views), SPROJ_OK);
    if (tof)
      ck_assert_int_eq(sproj_tof_register(&t, &sc.tof, NULL, NULL, NULL), SPROJ_OK);
    EXPECT(sproj_model_create(&ma, lors, sc.mult, arr, t, NULL), SPROJ_OK);
    EXPECT(sproj_model_create(&mf, lors, sc.mult, NULL, t, NULL), SPROJ_OK);
    EXPECT(sproj_model_set_flat_background(mf, c), SPROJ_OK);
    EXPECT(sproj_model_set_flat_background(ma, c), SPROJ_ERR_INVALID);
    EXPECT(sproj_model_set_flat_background(mf, NAN), SPROJ_ERR_NONFINITE);
    EXPECT(sproj_model_set_flat_background(mf, -1.0f), SPROJ_ERR_RANGE);
    EXPECT(sproj_model_set_flat_background(NULL, c), SPROJ_ERR_NULL);
    ck_assert_int_eq(sproj_image_register(&img, sc.truth, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    ck_assert_int_eq(tof ? sproj_proj_register_tof(&pa, va, lors, nb) : sproj_proj_register(&pa, va, lors), SPROJ_OK);
    ck_assert_int_eq(tof ? sproj_proj_register_tof(&pf, vf, lors, nb) : sproj_proj_register(&pf, vf, lors), SPROJ_OK);
    EXPECT(sproj_model_expected(ma, img, pa, views, NULL), SPROJ_OK);
    EXPECT(sproj_model_expected(mf, img, pf, views, NULL), SPROJ_OK);
    EXPECT(sproj_model_draw(ma, pa, views, 1.0f, 5, 0, NULL), SPROJ_OK);
    EXPECT(sproj_model_draw(mf, pf, views, 1.0f, 5, 0, NULL), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_unregister(pa), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_unregister(pf), SPROJ_OK);
    ck_assert_int_eq(memcmp(va, vf, (size_t)nval * sizeof *va), 0);
    int64_t above = 0;
    for (int64_t k = 0; k < nval; k++)
      above += va[k] >= c;
    ck_assert_int_eq(above, nval); /* the background is in them */
    ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
    ck_assert_int_eq(sproj_model_destroy(ma), SPROJ_OK);
    ck_assert_int_eq(sproj_model_destroy(mf), SPROJ_OK);
    ck_assert_int_eq(sproj_tof_unregister(t), SPROJ_OK);
    ck_assert_int_eq(sproj_chunks_destroy(views), SPROJ_OK);
    ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
    free(arr);
    free(va);
    free(vf);
  }
  free(ybar);
  free(counts);
  free(xa);
  free(xf);
  free(ex);
  free(exe);
  free(eb);
  free(em);
  free(ea);
}
END_TEST

/* Between subsets nothing waits on the host: with every worker paused, sproj_recon_iterate still submits 3
 * iterations of 4 subsets and returns (a host sync inside would never return), leaving at least 7 tasks per subset
 * queued (blur, forward, ratio, zero, back, blur, update, with the projections cut into several tasks). Once the
 * workers resume, the result equals that of a run with a callback, which syncs after each iteration, to 1e-6. On
 * GPUs, check_recon_cuda counts the bytes that cross the bus. */
START_TEST(test_asynchronous)
{
  const float fwhm[3] = {5.0f, 5.0f, 5.0f};
  int64_t nvox = tu_nvox(&sc.g);
  float *x = scene_ones(&sc), *xref = tu_alloc(nvox);
  struct trace t;
  scene_run_sino(&sc, 0, fwhm, 4, NULL, ybar, 3, xref, &t, NULL);

  struct scene_osem o;
  scene_osem_open(&o, &sc, 0, x, ybar, fwhm, 4);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  starpu_pause();
  int before = starpu_task_nsubmitted();
  EXPECT(sproj_recon_iterate(o.r, 3, NULL, NULL), SPROJ_OK);
  int queued = starpu_task_nsubmitted() - before;
  starpu_resume();
  printf("with workers paused, 3 iterations x 4 subsets queued %d tasks and returned\n", queued);
  ck_assert_msg(queued >= 3 * 4 * 7, "only %d tasks queued", queued);
  ck_assert_int_eq(sproj_image_sync(o.img, SPROJ_SYNC_READ), SPROJ_OK);
  double d = tu_rel_l2_ff(x, xref, nvox);
  ck_assert_msg(d <= 1e-6, "asynchronous run differs by %.3g", d);
  scene_osem_close(&o);
  free(x);
  free(xref);
}
END_TEST

/* Bad input: the documented status, a message naming the call, the out-pointer untouched, images and data as they
 * were, and nothing registered left behind (shutdown would refuse). */
START_TEST(test_bad_inputs)
{
  int64_t nvox = tu_nvox(&sc.g), n = sc.nlors;
  float *x = scene_ones(&sc), *data = scene_copy(ybar, n), *bad = scene_copy(sc.mult, n);
  float *tofdata = tu_alloc(n * sc.tof.num_bins);
  memset(tofdata, 0, n * sc.tof.num_bins * sizeof *tofdata);
  const float neg_fwhm[3] = {1, -1, 1}, nan_fwhm[3] = {NAN, 1, 1}, wide[3] = {1000.0f, 0, 0};
  sproj_lors *lors, *other;
  sproj_chunks *views, *oviews;
  sproj_tof *t;
  sproj_model *model = SENTINEL, *tmodel, *wmodel;
  sproj_image *img;
  sproj_proj *y, *yo, *yt;
  sproj_recon *r = SENTINEL;
  ck_assert_int_eq(sproj_lors_register(&lors, sc.xs, sc.xe, n), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&other, sc.xs, sc.xe, n), SPROJ_OK);
  ck_assert_int_eq(scene_views(&sc, lors, &views), SPROJ_OK);
  ck_assert_int_eq(scene_views(&sc, other, &oviews), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&t, &sc.tof, NULL, NULL, NULL), SPROJ_OK);

  EXPECT(sproj_model_create(NULL, lors, NULL, NULL, NULL, NULL), SPROJ_ERR_NULL);
  EXPECT(sproj_model_create(&model, NULL, NULL, NULL, NULL, NULL), SPROJ_ERR_NULL);
  bad[17] = NAN;
  EXPECT(sproj_model_create(&model, lors, bad, NULL, NULL, NULL), SPROJ_ERR_NONFINITE);
  ck_assert_msg(strstr(sproj_last_error(), "sproj_model_create") && strstr(sproj_last_error(), "17"), "message '%s'",
                sproj_last_error());
  bad[17] = -0.5f;
  EXPECT(sproj_model_create(&model, lors, bad, NULL, NULL, NULL), SPROJ_ERR_RANGE);
  EXPECT(sproj_model_create(&model, lors, NULL, bad, NULL, NULL), SPROJ_ERR_RANGE);
  bad[17] = INFINITY;
  EXPECT(sproj_model_create(&model, lors, NULL, bad, NULL, NULL), SPROJ_ERR_NONFINITE);
  EXPECT(sproj_model_create(&model, lors, NULL, NULL, NULL, neg_fwhm), SPROJ_ERR_RANGE);
  EXPECT(sproj_model_create(&model, lors, NULL, NULL, NULL, nan_fwhm), SPROJ_ERR_NONFINITE);
  ck_assert_ptr_eq(model, SENTINEL);

  ck_assert_int_eq(sproj_model_create(&model, lors, sc.mult, sc.add, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_model_create(&tmodel, lors, sc.mult, sc.add_tof, t, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_model_create(&wmodel, lors, NULL, NULL, NULL, wide), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&img, x, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&y, data, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&yo, data, other), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_tof(&yt, tofdata, lors, sc.tof.num_bins), SPROJ_OK);
  struct sproj_recon_config cfg, c;
  sproj_recon_config_init(&cfg);
  cfg.model = model;
  cfg.data = y;
  cfg.chunks = views;
  cfg.num_subsets = 4;
  int list[3] = {0, 5, 64}, sizes[2] = {2, 1}, zero_sizes[2] = {3, 0};

  EXPECT(sproj_recon_create(NULL, img, &cfg), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_create(&r, NULL, &cfg), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_create(&r, img, NULL), SPROJ_ERR_NULL);
  c = cfg, c.num_subsets = sc.nviews + 1;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_RANGE);
  c = cfg, c.num_subsets = 0;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_RANGE);
  c = cfg, c.num_subsets = 2, c.subset_chunks = list, c.subset_sizes = sizes;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_RANGE); /* chunk 64 of 64 */
  list[1] = 0, list[2] = 3;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_RANGE); /* chunk 0 twice in subset 0 */
  ck_assert_msg(strstr(sproj_last_error(), "twice") != NULL, "message '%s'", sproj_last_error());
  list[1] = 5;
  c.subset_sizes = zero_sizes;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_EMPTY);
  c = cfg, c.data = yo;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_MISMATCH); /* data of another LOR set */
  c = cfg, c.chunks = oviews;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_MISMATCH);
  c = cfg, c.data = yt;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_MISMATCH); /* TOF data, non-TOF model */
  c = cfg, c.model = tmodel;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_MISMATCH); /* TOF model, non-TOF data */
  c = cfg, c.data = NULL;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_NULL);     /* listmode without a sensitivity model */
  c = cfg, c.model = wmodel;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_RANGE);    /* blur kernel too wide */
  c = cfg, c.sens_chunks = oviews, c.sens_model = model;
  EXPECT(sproj_recon_create(&r, img, &c), SPROJ_ERR_MISMATCH);
  data[123] = -1.0f;
  EXPECT(sproj_recon_create(&r, img, &cfg), SPROJ_ERR_RANGE);
  ck_assert_msg(strstr(sproj_last_error(), "123"), "message '%s' does not name LOR 123", sproj_last_error());
  data[123] = NAN;
  EXPECT(sproj_recon_create(&r, img, &cfg), SPROJ_ERR_NONFINITE);
  data[123] = ybar[123];
  x[55] = -2.0f;
  EXPECT(sproj_recon_create(&r, img, &cfg), SPROJ_ERR_RANGE);
  x[55] = 1.0f;
  ck_assert_ptr_eq(r, SENTINEL);
  for (int64_t v = 0; v < nvox; v++)
    ck_assert_msg(x[v] == 1.0f, "voxel %lld changed to %g", (long long)v, x[v]);
  for (int64_t l = 0; l < n; l++)
    ck_assert_msg(data[l] == ybar[l], "data %lld changed", (long long)l);

  /* a good one; its model cannot go while it lives; iterate and objective reject bad arguments */
  ck_assert_int_eq(sproj_recon_create(&r, img, &cfg), SPROJ_OK);
  EXPECT(sproj_model_destroy(model), SPROJ_ERR_BUSY);
  EXPECT(sproj_recon_iterate(NULL, 1, NULL, NULL), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_iterate(r, -1, NULL, NULL), SPROJ_ERR_DIMS);
  EXPECT(sproj_recon_objective(r, NULL), SPROJ_ERR_NULL);
  EXPECT(sproj_recon_sensitivity(r, 4, x), SPROJ_ERR_RANGE);
  EXPECT(sproj_shutdown(), SPROJ_ERR_BUSY);
  double nll = -1.0;
  ck_assert_int_eq(sproj_recon_objective(r, &nll), SPROJ_OK);
  ck_assert_msg(isfinite(nll), "objective %g", nll);
  ck_assert_int_eq(sproj_recon_destroy(r), SPROJ_OK);
  ck_assert_int_eq(sproj_recon_destroy(NULL), SPROJ_OK);

  ck_assert_int_eq(sproj_proj_unregister(y), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(yo), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(yt), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  EXPECT(sproj_lors_unregister(lors), SPROJ_ERR_BUSY); /* the models hold it */
  ck_assert_int_eq(sproj_model_destroy(model), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(tmodel), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(wmodel), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(t), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(views), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(oviews), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(other), SPROJ_OK);
  free(x);
  free(data);
  free(bad);
  free(tofdata);
}
END_TEST

/* The samplers' own exp(-x) and log(x) against libm's over their ranges: within 4 ulps (measured 1-2). */
START_TEST(test_sim_exp_log)
{
  double worst_exp = 0.0, worst_log = 0.0;
  for (int i = 0; i <= 200000; i++) {
    double x = 745.0 * i / 200000.0, r = exp(-x);
    if (r > 0x1.0p-1000) {
      double err = fabs(sim_exp_neg(x) - r) / r;
      worst_exp = err > worst_exp ? err : worst_exp;
    }
  }
  for (int i = -200000; i <= 200000; i++) {
    double x = pow(10.0, i / 10000.0), l = log(x);
    double err = fabs(sim_log(x) - l) / (fabs(l) > 1.0 ? fabs(l) : 1.0);
    worst_log = err > worst_log ? err : worst_log;
  }
  printf("sampler exp(-x), x in [0, 745]: worst relative error %.2e; log(x), x in [1e-20, 1e20]: %.2e\n", worst_exp,
         worst_log);
  ck_assert_msg(worst_exp <= 4 * 0x1.0p-52, "exp(-x): relative error %.3g", worst_exp);
  ck_assert_msg(worst_log <= 4 * 0x1.0p-52, "log(x): error %.3g", worst_log);
  ck_assert(sim_exp_neg(800.0) == 0.0 && sim_exp_neg(0.0) == 1.0 && sim_log(1.0) == 0.0);
}
END_TEST

/* Simulated data through a model (_i = 0: non-TOF, 1: TOF with the background per LOR): the trues are sum(m A x) of
 * the library's own projection (1e-12 relative: the same values summed in another order); noise-free draws are
 * scale * m * p + a to the bit (the same float operations); Poisson draws are exactly sproj_poisson's of those
 * expected counts (the same per-value streams: whatever the workers and their order), their total within 5 sigma of
 * the expected total; the per-LOR sums are the data's; bad arguments change nothing. */
START_TEST(test_model_simulate)
{
  const int tof = _i, nb = tof ? sc.tof.num_bins : 1;
  const int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * nb;
  const float scale = 0.7f;
  const uint64_t seed = 99;
  float *img_v = tu_alloc(nvox), *p = tu_alloc(nval), *d = tu_alloc(nval), *e = tu_alloc(nval), *c = tu_alloc(nval);
  float *sums = tu_alloc(sc.nlors);
  memcpy(img_v, sc.truth, (size_t)nvox * sizeof(float));
  sproj_image *img;
  sproj_lors *lors;
  sproj_chunks *views;
  sproj_tof *t = NULL;
  sproj_model *md, *lm_md;
  sproj_proj *pp, *dp, *sp;
  ck_assert_int_eq(sproj_image_register(&img, img_v, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, sc.xs, sc.xe, sc.nlors), SPROJ_OK);
  ck_assert_int_eq(scene_views(&sc, lors, &views), SPROJ_OK);
  if (tof)
    ck_assert_int_eq(sproj_tof_register(&t, &sc.tof, NULL, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(tof ? sproj_model_create_tof_uniform_add(&md, lors, sc.mult, sc.add, t, NULL)
                       : sproj_model_create(&md, lors, sc.mult, sc.add, NULL, NULL), SPROJ_OK);
  /* the reference projection */
  ck_assert_int_eq(tof ? sproj_proj_register_tof(&pp, p, lors, nb) : sproj_proj_register(&pp, p, lors), SPROJ_OK);
  ck_assert_int_eq(tof ? sproj_fwd_tof_sino(img, pp, views, SPROJ_ALL_CHUNKS, t)
                       : sproj_fwd(img, pp, views, SPROJ_ALL_CHUNKS), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(pp), SPROJ_OK);
  double ref = 0.0;
  for (int64_t k = 0; k < nval; k++)
    ref += (double)sc.mult[k / nb] * p[k];
  ck_assert_int_eq(tof ? sproj_proj_register_tof(&dp, d, lors, nb) : sproj_proj_register(&dp, d, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&sp, sums, lors), SPROJ_OK);
  double trues = -1.0;
  /* noise-free */
  ck_assert_int_eq(sproj_model_expected(md, img, dp, views, &trues), SPROJ_OK);
  ck_assert_msg(fabs(trues - ref) <= 1e-12 * ref, "trues %.17g, reference %.17g", trues, ref);
  ck_assert_int_eq(sproj_model_draw(md, dp, views, scale, seed, 0, sp), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(dp, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(sp, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  double etotal = 0.0;
  for (int64_t k = 0; k < nval; k++) {
    float a = tof ? sc.add[k / nb] / (float)nb : sc.add[k];
    e[k] = sc.mult[k / nb] * p[k] * scale + a;
    ck_assert_msg(d[k] == e[k], "value %lld: expected counts %.9g, reference %.9g", (long long)k, d[k], e[k]);
    etotal += e[k];
  }
  for (int64_t i = 0; i < sc.nlors; i++) {
    double s = 0.0;
    for (int b = 0; b < nb; b++)
      s += d[i * nb + b];
    ck_assert_msg(sums[i] == (float)s, "LOR %lld: sum %.9g, reference %.9g", (long long)i, sums[i], s);
  }
  /* Poisson */
  ck_assert_int_eq(sproj_model_expected(md, img, dp, views, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_model_draw(md, dp, views, scale, seed, 1, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(dp, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_poisson(e, c, nval, seed, 3), SPROJ_OK);
  double ctotal = 0.0;
  int64_t nonzero = 0;
  for (int64_t k = 0; k < nval; k++) {
    ck_assert_msg(d[k] == c[k], "value %lld: count %g, sproj_poisson %g (mean %g)", (long long)k, d[k], c[k], e[k]);
    ctotal += d[k];
    nonzero += d[k] > 0.0f;
  }
  printf("simulated %s data: %lld values, expected total %.1f, drawn %.0f (%lld non-zero), trues %.6g\n",
         tof ? "TOF" : "non-TOF", (long long)nval, etotal, ctotal, (long long)nonzero, trues);
  ck_assert_msg(fabs(ctotal - etotal) <= 5.0 * sqrt(etotal), "drawn %.0f, expected %.1f", ctotal, etotal);
  /* listmode events drawn where the data are: those of sproj_sample_listmode_sorted from the same expected counts */
  int32_t *lor = NULL, *lor2 = NULL;
  int16_t *bin = NULL, *bin2 = NULL;
  int64_t num = -1, num2 = -2;
  ck_assert_int_eq(sproj_model_expected(md, img, dp, views, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_model_draw_events(md, dp, views, scale, seed, &lor, &bin, &num), SPROJ_OK);
  ck_assert_int_eq(sproj_sample_listmode_sorted(e, sc.nlors, tof ? nb : 0, seed, 2, &lor2, tof ? &bin2 : NULL, &num2),
                   SPROJ_OK);
  ck_assert_int_eq(num, num2);
  ck_assert_int_eq(num, (int64_t)ctotal);
  ck_assert_int_eq(memcmp(lor, lor2, (size_t)num * sizeof *lor), 0);
  if (tof)
    ck_assert_int_eq(memcmp(bin, bin2, (size_t)num * sizeof *bin), 0);
  else
    ck_assert_ptr_null(bin);
  printf("listmode events drawn by tasks: %lld, equal to sproj_sample_listmode_sorted's\n", (long long)num);
  /* the same from values of the library's own (sproj_proj_create): no host array, refused by sync, the same events */
  {
    sproj_proj *own = NULL;
    int32_t *lor3 = NULL;
    int16_t *bin3 = NULL;
    int64_t num3 = -3;
    ck_assert_int_eq(sproj_proj_create(&own, lors, nb), SPROJ_OK);
    ck_assert_int_eq(sproj_model_expected(md, img, own, views, NULL), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_sync(own, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_ERR_INVALID);
    ck_assert_int_eq(sproj_model_draw_events(md, own, views, scale, seed, &lor3, &bin3, &num3), SPROJ_OK);
    ck_assert_int_eq(num3, num);
    ck_assert_int_eq(memcmp(lor3, lor, (size_t)num * sizeof *lor), 0);
    if (tof)
      ck_assert_int_eq(memcmp(bin3, bin, (size_t)num * sizeof *bin), 0);
    ck_assert_int_eq(sproj_proj_discard(own), SPROJ_OK);
    sproj_free(lor3);
    sproj_free(bin3);
    ck_assert_int_eq(sproj_proj_create(&own, lors, nb), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_unregister(own), SPROJ_OK);
    own = NULL;
    ck_assert_int_eq(sproj_proj_create(NULL, lors, nb), SPROJ_ERR_NULL);
    ck_assert_int_eq(sproj_proj_create(&own, NULL, nb), SPROJ_ERR_NULL);
    ck_assert_int_eq(sproj_proj_create(&own, lors, 0), SPROJ_ERR_EMPTY);
    ck_assert_int_eq(sproj_proj_create(&own, lors, -2), SPROJ_ERR_DIMS);
    ck_assert_int_eq(sproj_proj_create(&own, lors, SPROJ_MAX_TOF_BINS + 1), SPROJ_ERR_TOF);
    ck_assert_ptr_null(own);
  }
  sproj_free(lor);
  sproj_free(bin);
  sproj_free(lor2);
  sproj_free(bin2);
  ck_assert_int_eq(sproj_model_draw_events(md, dp, views, scale, seed, NULL, &bin, &num), SPROJ_ERR_NULL);
  /* bad arguments */
  ck_assert_int_eq(sproj_model_draw(md, dp, views, NAN, seed, 1, NULL), SPROJ_ERR_NONFINITE);
  ck_assert_int_eq(sproj_model_draw(md, dp, views, -1.0f, seed, 1, NULL), SPROJ_ERR_RANGE);
  ck_assert_int_eq(sproj_model_draw(md, dp, views, scale, seed, 1, dp), tof ? SPROJ_ERR_MISMATCH : SPROJ_ERR_INVALID);
  ck_assert_int_eq(sproj_model_draw(NULL, dp, views, scale, seed, 1, NULL), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_model_expected(md, img, dp, NULL, NULL), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_model_expected(md, img, tof ? sp : dp, views, NULL), tof ? SPROJ_ERR_MISMATCH : SPROJ_OK);
  ck_assert_int_eq(sproj_model_create(&lm_md, lors, NULL, NULL, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_model_expected(lm_md, img, tof ? dp : sp, views, NULL), tof ? SPROJ_ERR_MISMATCH : SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(lm_md), SPROJ_OK);
  img_v[nvox / 2] = -1.0f;
  ck_assert_int_eq(sproj_image_sync(img, SPROJ_SYNC_WRITE), SPROJ_OK);
  ck_assert_int_eq(sproj_model_expected(md, img, dp, views, &trues), SPROJ_ERR_RANGE);
  ck_assert_int_eq(sproj_proj_discard(dp), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(sp), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(md), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(t), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(views), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  free(img_v);
  free(p);
  free(d);
  free(e);
  free(c);
  free(sums);
}
END_TEST

int main(void)
{
  if (tu_init(-1, 0) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  tu_seed(2024);
  scene_build(&sc);
  ybar = tu_alloc(sc.nlors);
  if (scene_expected(&sc, sc.truth, 0, ybar) != SPROJ_OK)
    return 99;
  printf("scene: %d views x %d planes x %d radial bins = %lld LORs, image %dx%dx%d, %d CPU workers\n", sc.nviews,
         sc.nplanes, sc.nrad, (long long)sc.nlors, sc.g.n[0], sc.g.n[1], sc.g.n[2], sproj_num_cpu_workers());
  Suite *s = suite_create("reconstruction");
  TCase *tc = tcase_create("recon");
  tcase_add_test(tc, test_ratio_codelet);
  tcase_add_test(tc, test_update_codelet);
  tcase_add_test(tc, test_nll_codelet);
  tcase_add_loop_test(tc, test_objective_reference, 0, 2);
  tcase_add_test(tc, test_gauss_adjoint);
  tcase_add_test(tc, test_gauss_fwhm);
  tcase_add_loop_test(tc, test_mlem_converges, 0, 2);
  tcase_add_test(tc, test_osem1_equals_mlem);
  tcase_add_test(tc, test_osem_subsets);
  tcase_add_test(tc, test_given_sensitivities);
  tcase_add_test(tc, test_given_sensitivity_images);
  tcase_add_test(tc, test_tof_mlem);
  tcase_add_test(tc, test_image_blur);
  tcase_add_loop_test(tc, test_lm_equals_sino, 0, 2);
  tcase_add_loop_test(tc, test_flat_background, 0, 3);
  tcase_add_test(tc, test_sim_exp_log);
  tcase_add_loop_test(tc, test_model_simulate, 0, 2);
  tcase_add_test(tc, test_asynchronous);
  tcase_add_test(tc, test_bad_inputs);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  free(ybar);
  scene_free(&sc);
  if (sproj_shutdown() != SPROJ_OK)
    ret = 1;
  return ret;
}
