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
  printf("memory limit %s MiB, image %.1f MiB, %d CPU workers\n", LIMIT_MIB, tu_nvox(&g) * 4.0 / (1 << 20),
         sproj_num_cpu_workers());
  /* float sums of up to thousands of LORs per voxel against double: 1.1e-5 of the largest voxel and 5.8e-6 relative
   * L2 measured, the same with and without the limit (NO_LIMIT=1 runs it without) and with one or two workers */
  tu_check_back_against_ref(&g, NLORS, 5e-5, 2e-5);
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
