/* SPDX-License-Identifier: Apache-2.0 */
/* check_oneshot.c: the libparallelproj-style one-shot calls against the resident API on the same inputs, and their
 * answers to bad input. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include "starproj_parallelproj.h"

#define NL 3000     /* LORs (and listmode events) */
#define NBINS 17    /* TOF bins */
#define NCHUNKS 5   /* the resident side projects chunk by chunk */
/* Back projections accumulate task results in an order StarPU picks, so two runs may round differently: compared
 * as max |a - b| / max |b| over the image, a few float roundings of the largest voxel (2.5e-7 to 3.3e-7 measured on
 * 2 CPU cores); a wrong weight or a lost or doubled task would differ by far more. */
#define BACK_TOL 1e-6

static const struct tu_geom G = {{12, 10, 9}, {2.0f, 1.5f, 2.5f}, {-11.0f, -6.75f, -10.0f}};
static float image[12 * 10 * 9];
static float xs[3 * NL], xe[3 * NL], sigma[NL], offset[NL];
static short bins[NL];
static const float bin_width = 4.0f, num_sigmas = 3.0f;

static int64_t nvox(void)
{
  return tu_nvox(&G);
}

/* max |a - b| / max |b| */
static double rel_max_diff(const float *a, const float *b, int64_t n)
{
  double d = 0.0, m = 0.0;
  for (int64_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - (double)b[i]));
    m = fmax(m, fabs((double)b[i]));
  }
  return m > 0.0 ? d / m : d;
}

/* The resident API on the same inputs: register once, project chunk by chunk, sync. kind: 0 non-TOF, 1 TOF
 * sinogram, 2 TOF listmode; per_lor: sigma and offset per LOR. back: back-project values into img. */
static void resident(int kind, int per_lor, int back, float *img, float *values)
{
  sproj_image *im;
  sproj_lors *lors;
  sproj_chunks *ch;
  sproj_proj *proj;
  sproj_tof *tof = NULL;
  ck_assert_int_eq(sproj_image_register(&im, img, G.n, G.vs, G.origin), SPROJ_OK);
  if (kind == 2)
    ck_assert_int_eq(sproj_lors_register_events(&lors, xs, xe, bins, NL), SPROJ_OK);
  else
    ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, NL), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, NCHUNKS), SPROJ_OK);
  if (kind == 1)
    ck_assert_int_eq(sproj_proj_register_tof(&proj, values, lors, NBINS), SPROJ_OK);
  else
    ck_assert_int_eq(sproj_proj_register(&proj, values, lors), SPROJ_OK);
  if (kind) {
    struct sproj_tof_params par = {bin_width, NBINS, num_sigmas, sigma[0], offset[0]};
    ck_assert_int_eq(sproj_tof_register(&tof, &par, lors, per_lor ? sigma : NULL, per_lor ? offset : NULL), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_image_upload(im, SPROJ_ALL_GPUS), SPROJ_OK);
  for (int c = 0; c < NCHUNKS; c++) {
    int r;
    if (kind == 0)
      r = back ? sproj_back(im, proj, ch, c) : sproj_fwd(im, proj, ch, c);
    else if (kind == 1)
      r = back ? sproj_back_tof_sino(im, proj, ch, c, tof) : sproj_fwd_tof_sino(im, proj, ch, c, tof);
    else
      r = back ? sproj_back_tof_lm(im, proj, ch, c, tof) : sproj_fwd_tof_lm(im, proj, ch, c, tof);
    ck_assert_int_eq(r, SPROJ_OK);
  }
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
}

/* One one-shot call of a kind, as a libparallelproj caller would write it. */
static int oneshot(int kind, int per_lor, int back, float *img, float *values)
{
  unsigned char lor = (unsigned char)per_lor;
  switch (kind * 2 + back) {
  case 0: return sproj_pp_joseph3d_fwd(xs, xe, img, G.origin, G.vs, values, NL, G.n, 0, 64);
  case 1: return sproj_pp_joseph3d_back(xs, xe, img, G.origin, G.vs, values, NL, G.n, 0, 64);
  case 2:
    return sproj_pp_joseph3d_tof_sino_fwd(xs, xe, img, G.origin, G.vs, values, NL, G.n, bin_width, sigma, offset,
                                          num_sigmas, NBINS, lor, lor, 0, 64);
  case 3:
    return sproj_pp_joseph3d_tof_sino_back(xs, xe, img, G.origin, G.vs, values, NL, G.n, bin_width, sigma, offset,
                                           num_sigmas, NBINS, lor, lor, 0, 64);
  case 4:
    return sproj_pp_joseph3d_tof_lm_fwd(xs, xe, img, G.origin, G.vs, values, NL, G.n, bin_width, sigma, offset,
                                        num_sigmas, bins, NBINS, lor, lor, 0, 64);
  default:
    return sproj_pp_joseph3d_tof_lm_back(xs, xe, img, G.origin, G.vs, values, NL, G.n, bin_width, sigma, offset,
                                         num_sigmas, bins, NBINS, lor, lor, 0, 64);
  }
}

/* kind and per_lor from the loop index: non-TOF, TOF sinogram and listmode, each with scalar and per-LOR TOF */
static void compare(int kind, int per_lor)
{
  int64_t nval = (int64_t)NL * (kind == 1 ? NBINS : 1);
  float *a = tu_alloc(nval), *b = tu_alloc(nval);
  /* forward: the same per-LOR code on the same floats, however the LORs are split into tasks: bit-identical */
  for (int64_t i = 0; i < nval; i++)
    a[i] = b[i] = -7.0f; /* overwritten by both */
  ck_assert_int_eq(oneshot(kind, per_lor, 0, image, a), SPROJ_OK);
  resident(kind, per_lor, 0, image, b);
  ck_assert_msg(memcmp(a, b, (size_t)nval * sizeof *a) == 0, "kind %d per_lor %d: forward differs", kind, per_lor);
  ck_assert_msg(tu_max_abs(a, nval) > 0.0, "kind %d: forward projected nothing", kind);
  /* back: both add to the same starting image */
  float *ia = tu_alloc(nvox()), *ib = tu_alloc(nvox()), *start = tu_alloc(nvox());
  tu_fill_uniform(start, nvox(), 0.0f, 1.0f);
  memcpy(ia, start, (size_t)nvox() * sizeof *ia);
  memcpy(ib, start, (size_t)nvox() * sizeof *ib);
  ck_assert_int_eq(oneshot(kind, per_lor, 1, ia, a), SPROJ_OK);
  resident(kind, per_lor, 1, ib, a);
  double rel = rel_max_diff(ia, ib, nvox());
  ck_assert_msg(rel <= BACK_TOL, "kind %d per_lor %d: back differs by %g (relative)", kind, per_lor, rel);
  /* positive values back-project to non-negative additions, and some voxel gained more than rounding */
  double most = 0.0;
  for (int64_t v = 0; v < nvox(); v++) {
    ck_assert_msg(ia[v] >= start[v], "kind %d: back projection lowered voxel %lld", kind, (long long)v);
    most = fmax(most, (double)ia[v] - start[v]);
  }
  ck_assert_msg(most > 0.1, "kind %d: back projection added at most %g", kind, most);
  free(a);
  free(b);
  free(ia);
  free(ib);
  free(start);
}

START_TEST(test_same_as_resident)
{
  compare(_i / 2, _i % 2);
}
END_TEST

/* Every way of getting the call wrong: the status, a message under the call's name, and the output untouched. */
START_TEST(test_bad_input)
{
  float out[NL * NBINS], img[12 * 10 * 9];
  for (int i = 0; i < NL * NBINS; i++)
    out[i] = 42.0f;
  for (int i = 0; i < 12 * 10 * 9; i++)
    img[i] = 1.0f;
  const int bad_dims[3] = {12, 0, 9};
  const float bad_vs[3] = {2.0f, -1.5f, 2.5f};
  const float bad_sigma = -1.0f;
  short bad_bins[NL];
  memcpy(bad_bins, bins, sizeof bins);

  ck_assert_int_eq(sproj_pp_joseph3d_fwd(NULL, xe, image, G.origin, G.vs, out, NL, G.n, 0, 64), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_pp_joseph3d_back(xs, xe, img, G.origin, G.vs, NULL, NL, G.n, 0, 64), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_pp_joseph3d_fwd(xs, xe, image, G.origin, G.vs, out, NL, bad_dims, 0, 64), SPROJ_ERR_DIMS);
  ck_assert_msg(strncmp(sproj_last_error(), "sproj_pp_joseph3d_fwd: sproj_image_register: ", 45) == 0, "message: %s",
                sproj_last_error());
  ck_assert_int_eq(sproj_pp_joseph3d_back(xs, xe, img, G.origin, bad_vs, out, NL, G.n, 0, 64), SPROJ_ERR_VOXEL_SIZE);
  ck_assert_int_eq(sproj_pp_joseph3d_fwd(xs, xe, image, G.origin, G.vs, out, (size_t)UINT32_MAX + 1, G.n, 0, 64),
                   SPROJ_ERR_OVERFLOW);
  /* no LORs: nothing to do, as in libparallelproj */
  ck_assert_int_eq(sproj_pp_joseph3d_fwd(xs, xe, image, G.origin, G.vs, out, 0, G.n, 0, 64), SPROJ_OK);

  ck_assert_int_eq(sproj_pp_joseph3d_tof_sino_fwd(xs, xe, image, G.origin, G.vs, out, NL, G.n, bin_width, NULL,
                                                  offset, num_sigmas, NBINS, 0, 0, 0, 64), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_pp_joseph3d_tof_sino_fwd(xs, xe, image, G.origin, G.vs, out, NL, G.n, bin_width,
                                                  &bad_sigma, offset, num_sigmas, NBINS, 0, 0, 0, 64), SPROJ_ERR_TOF);
  ck_assert_msg(strncmp(sproj_last_error(), "sproj_pp_joseph3d_tof_sino_fwd: sproj_tof_register: ", 52) == 0,
                "message: %s", sproj_last_error());
  ck_assert_int_eq(sproj_pp_joseph3d_tof_sino_back(xs, xe, img, G.origin, G.vs, out, NL, G.n, bin_width, sigma,
                                                   offset, num_sigmas, 0, 0, 0, 0, 64), SPROJ_ERR_EMPTY);
  ck_assert_int_eq(sproj_pp_joseph3d_tof_lm_fwd(xs, xe, image, G.origin, G.vs, out, NL, G.n, bin_width, sigma,
                                                offset, num_sigmas, NULL, NBINS, 0, 0, 0, 64), SPROJ_ERR_NULL);
  bad_bins[NL - 1] = NBINS; /* one past the last bin: found at submission, after registration */
  ck_assert_int_eq(sproj_pp_joseph3d_tof_lm_fwd(xs, xe, image, G.origin, G.vs, out, NL, G.n, bin_width, sigma,
                                                offset, num_sigmas, bad_bins, NBINS, 0, 0, 0, 64), SPROJ_ERR_RANGE);
  bad_bins[NL - 1] = -1;
  ck_assert_int_eq(sproj_pp_joseph3d_tof_lm_back(xs, xe, img, G.origin, G.vs, out, NL, G.n, bin_width, sigma,
                                                 offset, num_sigmas, bad_bins, NBINS, 0, 0, 0, 64), SPROJ_ERR_RANGE);

  for (int i = 0; i < NL * NBINS; i++)
    ck_assert_msg(out[i] == 42.0f, "a failed call wrote output value %d", i);
  for (int i = 0; i < 12 * 10 * 9; i++)
    ck_assert_msg(img[i] == 1.0f, "a failed back projection changed voxel %d", i);
}
END_TEST

/* Several threads at once on the same inputs, each with its own output: every result equals the serial one. */
#define NTHREADS 4
static float thread_out[NTHREADS][NL];
static int thread_status[NTHREADS];

static void *thread_fwd(void *arg)
{
  int t = (int)(intptr_t)arg;
  for (int rep = 0; rep < 3 && !thread_status[t]; rep++)
    thread_status[t] = sproj_pp_joseph3d_fwd(xs, xe, image, G.origin, G.vs, thread_out[t], NL, G.n, 0, 64);
  return NULL;
}

START_TEST(test_threads)
{
  static float serial[NL];
  ck_assert_int_eq(sproj_pp_joseph3d_fwd(xs, xe, image, G.origin, G.vs, serial, NL, G.n, 0, 64), SPROJ_OK);
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++)
    ck_assert_int_eq(pthread_create(&th[t], NULL, thread_fwd, (void *)(intptr_t)t), 0);
  for (int t = 0; t < NTHREADS; t++)
    pthread_join(th[t], NULL);
  for (int t = 0; t < NTHREADS; t++) {
    ck_assert_int_eq(thread_status[t], SPROJ_OK);
    ck_assert_msg(memcmp(thread_out[t], serial, sizeof serial) == 0, "thread %d: forward differs from serial", t);
  }
}
END_TEST

START_TEST(test_not_initialised)
{
  float out[NL];
  ck_assert_int_eq(sproj_pp_joseph3d_fwd(xs, xe, image, G.origin, G.vs, out, NL, G.n, 0, 64), SPROJ_ERR_NOT_INIT);
}
END_TEST

int main(void)
{
  tu_seed(11);
  tu_fill_uniform(image, nvox(), 0.0f, 1.0f);
  tu_random_lors(&G, xs, xe, NL, NULL);
  for (int i = 0; i < NL; i++) {
    sigma[i] = (float)tu_uniform(2.0, 5.0);
    offset[i] = (float)tu_uniform(-3.0, 3.0);
    bins[i] = (short)tu_randint(0, NBINS - 1);
  }

  Suite *s0 = suite_create("one-shot calls before init");
  TCase *t0 = tcase_create("not initialised");
  tcase_add_test(t0, test_not_initialised);
  suite_add_tcase(s0, t0);
  int ret = tu_run(s0);

  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s = suite_create("one-shot calls");
  TCase *tc = tcase_create("against the resident API");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, test_same_as_resident, 0, 6);
  tcase_add_test(tc, test_bad_input);
  tcase_add_test(tc, test_threads);
  suite_add_tcase(s, tc);
  ret |= tu_run(s);
  /* every failed call unregistered what it had registered: shutdown finds nothing left */
  if (sproj_shutdown() != SPROJ_OK) {
    fprintf(stderr, "sproj_shutdown: %s\n", sproj_last_error());
    ret = 1;
  }
  return ret;
}
