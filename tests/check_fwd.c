/* SPDX-License-Identifier: Apache-2.0 */
/* check_fwd.c: forward and back projection against the independent double-precision reference and against
 * analytic chord lengths. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define NLORS 8000

/* Float sums of up to ~100 samples carry a relative error of a few 1e-7: 1e-5 of the value (plus 1e-6 of the
 * largest value, for tiny grazing projections) leaves room for rounding but not for any wrong sample. */
#define REL_TOL 1e-5
#define ABS_TOL_OF_MAX 1e-6

START_TEST(test_fwd_matches_reference)
{
  tu_seed(1000 + _i);
  struct tu_geom g;
  tu_random_geom(&g);
  int64_t nvox = tu_nvox(&g), kinds[8];
  float *img = tu_alloc(nvox), *xs = tu_alloc(3 * NLORS), *xe = tu_alloc(3 * NLORS), *out = tu_alloc(NLORS);
  double *ref = malloc(NLORS * sizeof *ref);
  tu_fill_uniform(img, nvox, 0.5f, 2.0f);
  tu_random_lors(&g, xs, xe, NLORS, kinds);
  for (int64_t i = 0; i < NLORS; i++)
    out[i] = NAN; /* every value must be written */
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, NLORS, out), SPROJ_OK);
  tu_ref_fwd(img, &g, xs, xe, NLORS, ref);

  double maxref = 0.0;
  for (int64_t i = 0; i < NLORS; i++)
    maxref = fmax(maxref, fabs(ref[i]));
  int64_t ambiguous = 0, bad = 0, nonzero = 0;
  for (int64_t i = 0; i < NLORS; i++) {
    ck_assert_msg(isfinite(out[i]), "LOR %lld not written", (long long)i);
    if (tu_ref_ambiguous(&g, xs + 3 * i, xe + 3 * i)) {
      ambiguous++;
      continue;
    }
    nonzero += ref[i] != 0.0;
    double err = fabs(out[i] - ref[i]);
    if (err > REL_TOL * fabs(ref[i]) + ABS_TOL_OF_MAX * maxref) {
      if (bad++ < 5)
        fprintf(stderr, "LOR %lld (kind %lld): starproj %.9g reference %.9g\n", (long long)i, (long long)(i % 8),
                out[i], ref[i]);
    }
  }
  ck_assert_msg(bad == 0, "%lld of %d LORs differ from the reference", (long long)bad, NLORS);
  /* the kinds that cross the image must mostly give non-zero values, or the test would test nothing */
  ck_assert_msg(nonzero > NLORS / 2, "only %lld non-zero projections", (long long)nonzero);
  ck_assert_msg(ambiguous < NLORS / 100, "%lld ambiguous LORs (> 1%%)", (long long)ambiguous);
  free(img);
  free(xs);
  free(xe);
  free(out);
  free(ref);
}
END_TEST

/* LORs that cannot see the image give exactly 0; an axis-parallel LOR through voxel centres gives exactly the
 * column sum times the voxel size (up to float summation). */
START_TEST(test_fwd_special_lors)
{
  tu_seed(77);
  struct tu_geom g = {{12, 10, 14}, {1.5f, 2.0f, 1.25f}, {-8.25f, -9.0f, -8.125f}};
  int64_t nvox = tu_nvox(&g);
  float *img = tu_alloc(nvox);
  tu_fill_uniform(img, nvox, 1.0f, 3.0f);
  enum { N = 6 + 3 };
  float xs[3 * N], xe[3 * N], out[N];
  /* 0: zero length inside, 1: zero length outside, 2: misses (beyond axis 0), 3: misses (parallel, outside),
   * 4: ends before the box, 5: beyond the axis 2 face */
  float lors[6][6] = {
    {0, 0, 0, 0, 0, 0},
    {100, 100, 100, 100, 100, 100},
    {20, -50, 0, 20, 50, 3},
    {-30, 30, 0, 30, 30, 0},
    {-100, 0, 0, -20, 0, 0},
    {0, 0, 9, 40, 3, 9.5f},
  };
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 3; k++) {
      xs[3 * i + k] = lors[i][k];
      xe[3 * i + k] = lors[i][3 + k];
    }
  /* 6..8: parallel to axis 0, 1, 2 through the centre of voxel (i0,i1,i2) = (3,4,5) */
  int centre[3] = {3, 4, 5};
  double expect[3];
  for (int a = 0; a < 3; a++) {
    float *s = xs + 3 * (6 + a), *e = xe + 3 * (6 + a);
    for (int k = 0; k < 3; k++)
      s[k] = e[k] = g.origin[k] + centre[k] * g.vs[k];
    s[a] = -100.0f;
    e[a] = 100.0f;
    double sum = 0.0;
    for (int j = 0; j < g.n[a]; j++) {
      int idx[3] = {centre[0], centre[1], centre[2]};
      idx[a] = j;
      sum += img[((int64_t)idx[0] * g.n[1] + idx[1]) * g.n[2] + idx[2]];
    }
    expect[a] = sum * g.vs[a];
  }
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, N, out), SPROJ_OK);
  for (int i = 0; i < 6; i++)
    ck_assert_msg(out[i] == 0.0f, "LOR %d should project to exactly 0, got %g", i, out[i]);
  for (int a = 0; a < 3; a++)
    ck_assert_msg(fabs(out[6 + a] - expect[a]) <= 1e-6 * expect[a], "axis %d: %.9g vs column sum %.9g", a,
                  out[6 + a], expect[a]);
  free(img);
}
END_TEST

/* A uniform ball (value 1, partial-volume voxels): each projection is the chord length 2*sqrt(R^2 - d^2) up to the
 * discretisation error of the voxelised surface, a fraction of a voxel at each of the two crossings. Chords nearer
 * than 0.8 R to the rim are left out: there the blur of the surface (partial volume, bilinear interpolation) meets
 * the chord's steep curvature and the analytic value stops being the right target. */
START_TEST(test_fwd_ball_chords)
{
  tu_seed(4242);
  struct tu_geom g = {{48, 48, 48}, {1.0f, 1.0f, 1.0f}, {-23.5f, -23.5f, -23.5f}};
  const double c[3] = {0.7, -1.3, 0.4}, R = 17.0;
  int64_t nvox = tu_nvox(&g);
  enum { N = 3000 };
  float *img = tu_alloc(nvox), *xs = tu_alloc(3 * N), *xe = tu_alloc(3 * N), *out = tu_alloc(N);
  double *chord = malloc(N * sizeof *chord);
  tu_ball_image(img, &g, c, R, 5);
  for (int i = 0; i < N; i++) {
    /* random direction u, random offset d from the centre perpendicular to u; last tenth miss the ball */
    double u[3], w[3], z = tu_uniform(-1, 1), phi = tu_uniform(0, 2 * M_PI), r = sqrt(1 - z * z);
    u[0] = r * cos(phi);
    u[1] = r * sin(phi);
    u[2] = z;
    double t[3] = {tu_uniform(-1, 1), tu_uniform(-1, 1), tu_uniform(-1, 1)}, dot = t[0] * u[0] + t[1] * u[1] + t[2] * u[2];
    for (int k = 0; k < 3; k++)
      w[k] = t[k] - dot * u[k];
    double wn = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    double d = i < 9 * N / 10 ? tu_uniform(0.0, 0.8) * R : R + 2.0 + tu_uniform(0.0, 3.0);
    for (int k = 0; k < 3; k++) {
      double p = c[k] + d * w[k] / wn;
      xs[3 * i + k] = (float)(p - 40.0 * u[k]);
      xe[3 * i + k] = (float)(p + 40.0 * u[k]);
    }
    chord[i] = d < R ? 2.0 * sqrt(R * R - d * d) : 0.0;
  }
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, N, out), SPROJ_OK);
  double maxerr = 0.0, sumerr = 0.0, sumsigned = 0.0;
  int n_in = 0;
  for (int i = 0; i < N; i++) {
    if (chord[i] == 0.0) {
      ck_assert_msg(out[i] == 0.0f, "LOR %d misses the ball by > 2 voxels but projects to %g", i, out[i]);
      continue;
    }
    double err = out[i] - chord[i];
    maxerr = fmax(maxerr, fabs(err));
    sumerr += fabs(err);
    sumsigned += err;
    n_in++;
  }
  printf("ball chords: %d LORs, max |error| %.4f voxel, mean |error| %.4f, mean error %+.4f\n", n_in,
         maxerr, sumerr / n_in, sumsigned / n_in);
  /* Measured on 20000 such chords: max 0.42, mean |error| 0.06-0.10, mean error -0.03 to -0.07 voxel. The bounds
   * leave room for that and would still catch a wrong length factor (up to 70% of a 34-voxel chord), a
   * half-voxel shift of the origin (mean |error| ~0.25) or a sample too many or too few on LORs ending inside. */
  ck_assert_msg(maxerr < 0.6, "max chord error %.3f voxel", maxerr);
  ck_assert_msg(sumerr / n_in < 0.12, "mean chord error %.3f voxel", sumerr / n_in);
  ck_assert_msg(fabs(sumsigned / n_in) < 0.08, "chord bias %.3f voxel", sumsigned / n_in);
  free(img);
  free(xs);
  free(xe);
  free(out);
  free(chord);
}
END_TEST

START_TEST(test_back_matches_reference)
{
  tu_seed(2000 + _i);
  struct tu_geom g;
  tu_random_geom(&g);
  /* each voxel sums contributions of many LORs in float, in an order that depends on the task split */
  tu_check_back_against_ref(&g, NLORS, 1e-5, 1e-6);
}
END_TEST

int main(void)
{
  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s = suite_create("forward and back projection");
  TCase *tc = tcase_create("reference");
  tcase_add_loop_test(tc, test_fwd_matches_reference, 0, 4);
  tcase_add_test(tc, test_fwd_special_lors);
  tcase_add_test(tc, test_fwd_ball_chords);
  tcase_add_loop_test(tc, test_back_matches_reference, 0, 3);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  sproj_shutdown();
  return ret;
}
