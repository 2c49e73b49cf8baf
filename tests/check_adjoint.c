/* SPDX-License-Identifier: Apache-2.0 */
/* check_adjoint.c: back projection is the adjoint of forward projection, adds to the image, and gives the same
 * image whether it runs as one task or as many concurrent tasks submitted from several threads. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/* <Ax, y> = <x, A^T y>: both sides are float computations of ~1e5 products summed in double; 1e-5 relative is
 * the bound and far above the ~1e-7 rounding of each projection. */
START_TEST(test_adjointness)
{
  tu_seed(300 + _i);
  struct tu_geom g;
  tu_random_geom(&g);
  const int64_t n = 12000, nvox = tu_nvox(&g);
  float *x = tu_alloc(nvox), *y = tu_alloc(n), *ax = tu_alloc(n), *aty = tu_alloc(nvox);
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n);
  tu_random_lors(&g, xs, xe, n, NULL);
  tu_fill_uniform(x, nvox, 0.0f, 1.0f);
  tu_fill_uniform(y, n, 0.0f, 1.0f);
  memset(aty, 0, nvox * sizeof *aty);
  ck_assert_int_eq(tu_fwd_whole(&g, x, xs, xe, n, ax), SPROJ_OK);
  ck_assert_int_eq(tu_back_whole(&g, aty, xs, xe, n, y), SPROJ_OK);
  double lhs = tu_dot_ff(ax, y, n), rhs = tu_dot_ff(x, aty, nvox);
  double rel = fabs(lhs - rhs) / fabs(lhs);
  printf("adjointness %d: <Ax,y> = %.10g, <x,A^T y> = %.10g, relative difference %.2e\n", _i, lhs, rhs, rel);
  ck_assert_msg(lhs > 0.0, "<Ax,y> is %g: nothing was projected", lhs);
  ck_assert_msg(rel <= 1e-5, "relative difference %.3g", rel);
  free(x);
  free(y);
  free(ax);
  free(aty);
  free(xs);
  free(xe);
}
END_TEST

/* Back projection adds to what the image holds: back(v0) - v0 equals back(0). */
START_TEST(test_back_adds)
{
  tu_seed(31);
  struct tu_geom g;
  tu_random_geom(&g);
  const int64_t n = 5000, nvox = tu_nvox(&g);
  float *v0 = tu_alloc(nvox), *img = tu_alloc(nvox), *zero = tu_alloc(nvox), *y = tu_alloc(n);
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n);
  tu_random_lors(&g, xs, xe, n, NULL);
  tu_fill_uniform(v0, nvox, 5.0f, 10.0f);
  tu_fill_uniform(y, n, 0.0f, 1.0f);
  memcpy(img, v0, nvox * sizeof *img);
  memset(zero, 0, nvox * sizeof *zero);
  ck_assert_int_eq(tu_back_whole(&g, img, xs, xe, n, y), SPROJ_OK);
  ck_assert_int_eq(tu_back_whole(&g, zero, xs, xe, n, y), SPROJ_OK);
  double maxdiff = 0.0, maxback = 0.0;
  for (int64_t v = 0; v < nvox; v++) {
    maxdiff = fmax(maxdiff, fabs(((double)img[v] - v0[v]) - zero[v]));
    maxback = fmax(maxback, fabs(zero[v]));
  }
  ck_assert_msg(maxback > 1.0, "back projection too small to test (%g)", maxback);
  /* float rounding of v0 + contribution: a few ulp of 10 */
  ck_assert_msg(maxdiff <= 1e-5 * (10.0 + maxback), "back(v0) - v0 differs from back(0) by %.3g", maxdiff);
  free(v0);
  free(img);
  free(zero);
  free(y);
  free(xs);
  free(xe);
}
END_TEST

struct back_job {
  sproj_image *img;
  sproj_proj *proj;
  sproj_chunks *chunks;
  int first, step, last;
  int status;
};

static void *back_thread(void *arg)
{
  struct back_job *job = arg;
  job->status = SPROJ_OK;
  for (int c = job->first; c <= job->last && job->status == SPROJ_OK; c += job->step)
    job->status = sproj_back(job->img, job->proj, job->chunks, c);
  return NULL;
}

/* 4000 LORs form a single piece: the whole-set request is exactly one task. The same LORs as 40 chunks, back
 * projected by 4 threads at once, must give the same image: summation order differs, so up to float rounding
 * (1e-5 relative, the bound). */
START_TEST(test_back_concurrent_equals_one_task)
{
  tu_seed(4711);
  struct tu_geom g;
  tu_random_geom(&g);
  const int64_t n = 4000, nvox = tu_nvox(&g);
  float *one = tu_alloc(nvox), *many = tu_alloc(nvox), *y = tu_alloc(n);
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n);
  tu_random_lors(&g, xs, xe, n, NULL);
  tu_fill_uniform(y, n, 0.0f, 1.0f);
  memset(one, 0, nvox * sizeof *one);
  memset(many, 0, nvox * sizeof *many);

  int64_t before = tu_total_tasks();
  ck_assert_int_eq(tu_back_whole(&g, one, xs, xe, n, y), SPROJ_OK);
  ck_assert_int_eq(tu_total_tasks() - before, 1);

  struct tu_set set;
  sproj_chunks *chunks;
  ck_assert_int_eq(tu_set_register(&set, &g, many, xs, xe, n, y), SPROJ_OK);
  sproj_image *img = set.img;
  sproj_lors *lors = set.lors;
  sproj_proj *proj = set.proj;
  ck_assert_int_eq(sproj_chunks_create_blocks(&chunks, lors, 40), SPROJ_OK);
  /* one task per call: merged calls would make fewer, larger tasks (check_threads tests those) */
  ck_assert_int_eq(sproj_set_merge_calls(0), SPROJ_OK);
  before = tu_total_tasks();
  pthread_t th[4];
  struct back_job jobs[4];
  for (int t = 0; t < 4; t++) {
    jobs[t] = (struct back_job){img, proj, chunks, t, 4, 39, -1};
    pthread_create(&th[t], NULL, back_thread, &jobs[t]);
  }
  for (int t = 0; t < 4; t++) {
    pthread_join(th[t], NULL);
    ck_assert_int_eq(jobs[t].status, SPROJ_OK);
  }
  ck_assert_int_eq(sproj_image_sync(img, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(tu_total_tasks() - before, 40);
  ck_assert_int_eq(sproj_set_merge_calls(1), SPROJ_OK);
  double rel = tu_rel_l2_ff(many, one, nvox);
  printf("back projection, 40 tasks from 4 threads vs 1 task: relative L2 difference %.2e\n", rel);
  ck_assert_msg(rel <= 1e-5, "relative difference %.3g", rel);
  ck_assert_int_eq(sproj_chunks_destroy(chunks), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  free(one);
  free(many);
  free(y);
  free(xs);
  free(xe);
}
END_TEST

int main(void)
{
  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s = suite_create("adjointness and reductions");
  TCase *tc = tcase_create("adjoint");
  tcase_add_loop_test(tc, test_adjointness, 0, 4);
  tcase_add_test(tc, test_back_adds);
  tcase_add_test(tc, test_back_concurrent_equals_one_task);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  sproj_shutdown();
  return ret;
}
