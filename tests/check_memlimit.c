/* SPDX-License-Identifier: Apache-2.0 */
/* check_memlimit.c: back projection under a host memory limit too small for a reduction buffer per worker
 * (STARPU_LIMIT_CPU_MEM, set here before StarPU starts) completes, with the values of the double-precision
 * reference, instead of spinning in StarPU's allocator. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

#define NLORS 20000
/* 128 x 128 x 64 floats: 4 MiB; two CPU workers would need 8 MiB of reduction buffers */
#define LIMIT_MIB "6"

static void on_alarm(int sig)
{
  (void)sig;
  static const char msg[] = "check_memlimit: back projection did not complete within 120 s (livelock)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

START_TEST(test_back_under_limit)
{
  struct tu_geom g = {{128, 128, 64}, {1.0f, 1.0f, 1.5f}, {-63.5f, -63.5f, -47.25f}};
  int64_t nvox = tu_nvox(&g);
  float *img = tu_alloc(nvox), *xs = tu_alloc(3 * NLORS), *xe = tu_alloc(3 * NLORS), *values = tu_alloc(NLORS);
  double *ref = calloc(nvox, sizeof *ref);
  tu_random_lors(&g, xs, xe, NLORS, NULL);
  tu_fill_uniform(values, NLORS, 0.1f, 1.0f);
  for (int64_t i = 0; i < NLORS; i++)
    if (tu_ref_ambiguous(&g, xs + 3 * i, xe + 3 * i))
      values[i] = 0.0f; /* see tu_ref_ambiguous */
  memset(img, 0, nvox * sizeof *img);
  printf("memory limit %s MiB, image %.1f MiB, %d CPU workers\n", LIMIT_MIB, nvox * 4.0 / (1 << 20),
         sproj_num_cpu_workers());
  ck_assert_int_eq(tu_back_whole(&g, img, xs, xe, NLORS, values), SPROJ_OK);
  tu_ref_back(ref, &g, xs, xe, values, NLORS);
  double maxref = 0.0;
  for (int64_t v = 0; v < nvox; v++)
    maxref = fmax(maxref, fabs(ref[v]));
  ck_assert_msg(maxref > 0.0, "nothing was back projected");
  /* float sums of up to thousands of LORs per voxel against double: 1.1e-5 of the largest voxel and 5.8e-6 relative
   * L2 measured, the same with and without the limit (NO_LIMIT=1 runs it without) and with one or two workers */
  double maxdiff = tu_max_abs_diff_fd(img, ref, nvox), rel = tu_rel_l2_fd(img, ref, nvox);
  ck_assert_msg(maxdiff <= 5e-5 * maxref, "max voxel difference %.3g (max value %.3g)", maxdiff, maxref);
  ck_assert_msg(rel <= 2e-5, "relative L2 difference %.3g", rel);
  free(img);
  free(xs);
  free(xe);
  free(values);
  free(ref);
}
END_TEST

int main(void)
{
  signal(SIGALRM, on_alarm);
  alarm(120);
  if (!getenv("NO_LIMIT"))
    setenv("STARPU_LIMIT_CPU_MEM", LIMIT_MIB, 1);
  tu_seed(3);
  if (tu_init(-1, 0) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s = suite_create("memory limits");
  TCase *tc = tcase_create("host limit");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_back_under_limit);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  if (sproj_shutdown() != SPROJ_OK)
    ret = 1;
  return ret;
}
