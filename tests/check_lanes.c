/* SPDX-License-Identifier: Apache-2.0 */
/* check_lanes.c: the SIMD-lane CPU projectors (joseph3d_lanes.h) against the scalar per-LOR code they replace:
 * forward values bit for bit, back projections within the rounding of a different order of adds (float) and bit
 * for bit (fixed point), over random LORs and edge cases, for every lane width this CPU runs. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "joseph3d_back.h"
#include "joseph3d_fwd.h"
#include "joseph3d_lanes.h"

#ifdef SPROJ_HAVE_LANES

/* an anisotropic image whose box does not start at a round number */
static const struct sproj_geom geom = {{13, 11, 7}, {2.0f, 1.5f, 3.0f}, {-11.3f, -6.9f, -8.2f}};
#define NVOX (13 * 11 * 7)

static uint64_t rng = 88172645463325252ull;
static float uni(float lo, float hi)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return lo + (hi - lo) * (float)((rng >> 11) * (1.0 / 9007199254740992.0));
}

/* LORs: edge cases first (along the axes through voxel centres, voxel boundaries and the box faces; on a face;
 * corner to corner; zero length; outside; ties of the principal axis; endpoints inside; far endpoints), then random
 * ones in a box twice the image's. Returns how many (at most max). */
static int make_lors(float *xs, float *xe, int max)
{
  float lo[3], hi[3];
  for (int k = 0; k < 3; k++) {
    lo[k] = geom.origin[k] - 0.5f * geom.voxel_size[k];
    hi[k] = lo[k] + geom.n[k] * geom.voxel_size[k];
  }
  int n = 0;
#define ADD(a0, a1, a2, b0, b1, b2)                                                                              \
  do {                                                                                                         \
    if (n < max) {                                                                                             \
      xs[3 * n] = (a0), xs[3 * n + 1] = (a1), xs[3 * n + 2] = (a2);                                            \
      xe[3 * n] = (b0), xe[3 * n + 1] = (b1), xe[3 * n + 2] = (b2);                                            \
      n++;                                                                                                     \
    }                                                                                                          \
  } while (0)
  for (int a = 0; a < 3; a++) {
    int u = (a + 1) % 3, v = (a + 2) % 3;
    for (int j = -1; j <= 2 * geom.n[u] + 1; j++)
      for (int i = -1; i <= 2 * geom.n[v] + 1; i += 3) {
        /* half-voxel steps: centres, boundaries, the faces, and just outside */
        float p[3];
        p[u] = lo[u] + 0.5f * j * geom.voxel_size[u];
        p[v] = lo[v] + 0.5f * i * geom.voxel_size[v];
        float s[3] = {p[0], p[1], p[2]}, e[3] = {p[0], p[1], p[2]};
        s[a] = lo[a] - 5.0f;
        e[a] = hi[a] + 5.0f;
        ADD(s[0], s[1], s[2], e[0], e[1], e[2]);
        ADD(e[0], e[1], e[2], s[0], s[1], s[2]);
      }
  }
  ADD(lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
  ADD(hi[0], lo[1], lo[2], lo[0], hi[1], hi[2]);
  ADD(lo[0], hi[1], hi[2], hi[0], lo[1], lo[2]);
  ADD(lo[0], lo[1], lo[2], hi[0], lo[1], lo[2]); /* along an edge of the box */
  ADD(0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f);      /* zero length */
  ADD(1.0f, 2.0f, 3.0f, 1.0f, 2.0f, 3.0f);
  ADD(hi[0] + 1.0f, lo[1], lo[2], hi[0] + 9.0f, hi[1], hi[2]); /* beside the box */
  ADD(-50.0f, -50.0f, -50.0f, 50.0f, 50.0f, 50.0f); /* ties of the principal axis */
  ADD(-50.0f, 50.0f, -50.0f, 50.0f, -50.0f, 50.0f);
  ADD(-30.0f, -30.0f, 0.0f, 30.0f, 30.0f, 0.0f);
  ADD(-1e20f, 0.5f, 0.1f, 1e20f, 0.7f, -0.1f); /* far endpoints */
  ADD(-1e20f, -1e20f, 3.0f, 1e20f, 1e20f, 3.0f);
  ADD(0.3f, 0.2f, 0.1f, 0.35f, 0.2f, 0.1f); /* inside one voxel */
  while (n < max) {
    float s[3], e[3];
    for (int k = 0; k < 3; k++) {
      float w = hi[k] - lo[k];
      s[k] = uni(lo[k] - w, hi[k] + w);
      e[k] = uni(lo[k] - w, hi[k] + w);
    }
    /* some with endpoints inside the image, some axis-parallel in one coordinate */
    if (n % 7 == 0)
      for (int k = 0; k < 3; k++)
        e[k] = uni(lo[k], hi[k]);
    if (n % 11 == 0)
      e[n % 3] = s[n % 3];
    ADD(s[0], s[1], s[2], e[0], e[1], e[2]);
  }
#undef ADD
  return n;
}

/* more than one block of the drivers */
#define MAXLORS (SPROJ_LANES_BLOCK + 7000)

static struct sproj_lanes_work *work;

static int widths(int *w)
{
  int n = 0;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2"))
    w[n++] = 8;
  if (__builtin_cpu_supports("avx512f"))
    w[n++] = 16;
  return n;
}

static float *image(void)
{
  float *img = malloc(NVOX * sizeof(float));
  for (int i = 0; i < NVOX; i++)
    img[i] = uni(-1.0f, 2.0f);
  return img;
}

/* Every lane width gives the scalar code's bits for every LOR, and lanes with no LOR change nothing (counts that
 * are not a multiple of the width). Tolerance: none. */
START_TEST(test_fwd_bits)
{
  static float xs[3 * MAXLORS], xe[3 * MAXLORS], ref[MAXLORS + 1], out[MAXLORS + 1];
  int n = make_lors(xs, xe, MAXLORS), w[2], nw = widths(w);
  float *img = image();
  int nonzero = 0;
  for (int i = 0; i < n; i++) {
    ref[i] = joseph3d_fwd_lor(img, &geom, xs + 3 * i, xe + 3 * i);
    nonzero += ref[i] != 0.0f;
  }
  ck_assert_int_gt(nonzero, n / 4); /* the cases do cross the image */
  for (int a = 0; a < nw; a++)
    for (int len = n - 3; len <= n; len++) {
      out[len] = 12345.0f; /* past the end: untouched */
      sproj_lanes_fwd(work, img, &geom, xs, xe, (uint32_t)len, out, w[a]);
      ck_assert_float_eq(out[len], 12345.0f);
      int differ = 0, first = -1;
      for (int i = 0; i < len; i++)
        if (memcmp(&out[i], &ref[i], sizeof(float))) {
          differ++;
          first = first < 0 ? i : first;
        }
      ck_assert_msg(differ == 0, "%d lanes, %d LORs: %d values differ from the scalar code (first: LOR %d, %.9g vs "
                    "%.9g)", w[a], len, differ, first, first < 0 ? 0.0 : out[first], first < 0 ? 0.0 : ref[first]);
    }
  free(img);
}
END_TEST

/* Float back projection: the lanes add the scalar code's weights in another order, so each voxel may differ by
 * the rounding of two sums of the same m terms, at most 2 (m - 1) 2^-24 sum|term| (plus one float of the larger
 * result for the final rounding); m and sum|term| come from an independent double-precision scatter. The fixed-point
 * accumulator adds integers, so there the order changes nothing: bit for bit. */
START_TEST(test_back)
{
  static float xs[3 * MAXLORS], xe[3 * MAXLORS], val[MAXLORS];
  int n = make_lors(xs, xe, MAXLORS), w[2], nw = widths(w);
  for (int i = 0; i < n; i++)
    val[i] = i % 13 == 0 ? 0.0f : uni(-1.0f, 3.0f);
  float *ref = calloc(NVOX, sizeof(float)), *out = calloc(NVOX, sizeof(float));
  double *abs_sum = calloc(NVOX, sizeof(double));
  int *terms = calloc(NVOX, sizeof(int));
  unsigned long long *qref = calloc(NVOX, 8), *qout = calloc(NVOX, 8);
  struct sproj_out fo = {ref, NULL, NULL}, qo = {NULL, qref, NULL};
  for (int i = 0; i < n; i++) {
    joseph3d_back_lor(fo, &geom, xs + 3 * i, xe + 3 * i, val[i]);
    joseph3d_back_lor(qo, &geom, xs + 3 * i, xe + 3 * i, val[i]);
    struct sproj_ray r;
    if (val[i] == 0.0f || !sproj_ray_setup(xs + 3 * i, xe + 3 * i, &geom, &r))
      continue;
    for (int k = r.first; k <= r.last; k++) {
      struct sproj_corners c;
      sproj_ray_corners(&r, k, &c);
      double wq[4] = {(1 - c.wu) * (1 - c.wv), c.wu * (1 - c.wv), (1 - c.wu) * c.wv, c.wu * c.wv};
      for (int q = 0; q < 4; q++)
        if (c.ok[q]) {
          abs_sum[c.idx[q]] += fabs((double)r.cf * val[i] * wq[q]);
          terms[c.idx[q]]++;
        }
    }
  }
  for (int a = 0; a < nw; a++) {
    memset(out, 0, NVOX * sizeof(float));
    memset(qout, 0, NVOX * 8);
    sproj_lanes_back(work, (struct sproj_out){out, NULL, NULL}, &geom, xs, xe, (uint32_t)n, val, w[a]);
    sproj_lanes_back(work, (struct sproj_out){NULL, qout, NULL}, &geom, xs, xe, (uint32_t)n, val, w[a]);
    int touched = 0;
    for (int v = 0; v < NVOX; v++) {
      touched += terms[v] > 0;
      double bound = 2.0 * (terms[v] > 1 ? terms[v] - 1 : 0) * ldexp(abs_sum[v], -24) +
                     ldexp(fabs(ref[v]) > fabs(out[v]) ? fabs(ref[v]) : fabs(out[v]), -23);
      double d = fabs((double)out[v] - ref[v]);
      ck_assert_msg(d <= bound, "%d lanes: voxel %d: %.9g vs scalar %.9g (bound %.3g)", w[a], v, out[v], ref[v],
                    bound);
      if (terms[v] == 0)
        ck_assert_msg(out[v] == 0.0f, "%d lanes: voxel %d no LOR reaches holds %g", w[a], v, out[v]);
    }
    ck_assert_int_gt(touched, NVOX / 2);
    ck_assert_msg(memcmp(qout, qref, NVOX * 8) == 0, "%d lanes: fixed-point accumulators differ", w[a]);
  }
  free(ref);
  free(out);
  free(abs_sum);
  free(terms);
  free(qref);
  free(qout);
}
END_TEST

int main(void)
{
  int w[2];
  if (!widths(w)) {
    printf("check_lanes: this CPU has neither AVX2 nor AVX-512F: the scalar code runs, nothing to compare\n");
    return 77;
  }
  work = malloc(sizeof *work);
  Suite *s = suite_create("lanes");
  TCase *tc = tcase_create("lanes");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_fwd_bits);
  tcase_add_test(tc, test_back);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  free(work);
  return failed ? 1 : 0;
}

#else

int main(void)
{
  printf("check_lanes: no SIMD-lane projectors on this architecture\n");
  return 77;
}

#endif
