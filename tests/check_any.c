/* SPDX-License-Identifier: Apache-2.0 */
/* check_any.c: the rule that gives small tasks to CPU cores under SPROJ_DEVICE_ANY (any.c), fed with tasks timed on
 * a clock the test advances itself (so the machine's speed and load cannot change an outcome): no core before the GPUs' rate is known, a core only for a task it finishes before the GPUs finish their
 * queue (back projection LORs weigh three), never more queued core tasks than cores, a shallow GPU queue keeps every
 * task, and the core's rate learnt from its tasks. */
#include <check.h>
#include <stdio.h>
#include "../src/core/internal.h"

/* one CUDA worker, four cores; enough queued tasks unless a test says otherwise */
#define NCUDA 1
#define NCORES 4
#define DEEP 10

/* the time any.c reads: a task "takes" exactly what sleep_ms says */
static double fake_seconds = 1000.0;
static double fake_clock(void)
{
  return fake_seconds;
}

static void sleep_ms(int ms)
{
  fake_seconds += 1e-3 * ms;
}

/* a GPU task of lors forward LORs that takes at least ms */
static void gpu_task(int64_t lors, int ms)
{
  int64_t l;
  int layout, cpu;
  struct sproj_any_note *n = sproj_any_queued(lors, 0, 0, 0);
  ck_assert_ptr_nonnull(n);
  sproj_any_taken(n, &l, &layout, &cpu);
  ck_assert_int_eq(l, lors);
  ck_assert_int_eq(cpu, 0);
  sleep_ms(ms);
  sproj_any_done(n);
}

/* GPUs measured at 1e6 units in 20 ms, so a queue of Q units lasts Q x 20 ns. */
static void measured_gpus(void)
{
  sproj_any_clock = fake_clock;
  sproj_any_reset();
  gpu_task(1000000, 20);
}

START_TEST(test_no_core_before_gpu_rate)
{
  sproj_any_clock = fake_clock;
  sproj_any_reset();
  struct sproj_any_note *q = sproj_any_queued(50000000, 0, 0, 0); /* a long GPU queue, but no rate yet */
  ck_assert_int_eq(sproj_any_core_takes(16, 0, NCORES, DEEP, NCUDA), 0);
  sproj_any_cancel(q);
}
END_TEST

/* at the initial 2 us per unit a core needs 8.2 ms for 4096 forward LORs */
START_TEST(test_core_only_before_gpus_finish)
{
  measured_gpus();
  struct sproj_any_note *q = sproj_any_queued(1000000, 0, 0, 0); /* 20 ms */
  ck_assert_int_eq(sproj_any_core_takes(4096, 0, NCORES, DEEP, NCUDA), 1);
  sproj_any_cancel(q);
  q = sproj_any_queued(100000, 0, 0, 0); /* 2 ms */
  ck_assert_int_eq(sproj_any_core_takes(4096, 0, NCORES, DEEP, NCUDA), 0);
  ck_assert_int_eq(sproj_any_core_takes(512, 0, NCORES, DEEP, NCUDA), 1); /* 1 ms */
  sproj_any_cancel(q);
  /* a shallow queue (fewer than two tasks per CUDA worker) keeps every task on the GPUs */
  q = sproj_any_queued(1000000, 0, 0, 0);
  ck_assert_int_eq(sproj_any_core_takes(16, 0, NCORES, 2 * NCUDA - 1, NCUDA), 0);
  ck_assert_int_eq(sproj_any_core_takes(16, 0, NCORES, 2 * NCUDA, NCUDA), 1);
  sproj_any_cancel(q);
}
END_TEST

/* 4096 back projection LORs are 12288 units: 24.6 ms on a core */
START_TEST(test_back_weighs_three)
{
  measured_gpus();
  struct sproj_any_note *q = sproj_any_queued(4000000, 0, 0, 0); /* 80 ms */
  ck_assert_int_eq(sproj_any_core_takes(4096, 1, NCORES, DEEP, NCUDA), 1);
  sproj_any_cancel(q);
  q = sproj_any_queued(600000, 0, 0, 0); /* 12 ms: the same LORs forward, but not back */
  ck_assert_int_eq(sproj_any_core_takes(4096, 1, NCORES, DEEP, NCUDA), 0);
  ck_assert_int_eq(sproj_any_core_takes(4096, 0, NCORES, DEEP, NCUDA), 1);
  sproj_any_cancel(q);
}
END_TEST

START_TEST(test_cores_busy)
{
  measured_gpus();
  struct sproj_any_note *q = sproj_any_queued(4000000, 0, 0, 0), *c[NCORES];
  for (int i = 0; i < NCORES; i++) {
    ck_assert_int_eq(sproj_any_core_takes(16, 0, NCORES, DEEP, NCUDA), 1);
    c[i] = sproj_any_queued(16, 0, 1, 0);
  }
  /* as many core tasks queued as cores: the next one stays on the GPUs; one taken by a core frees a place */
  ck_assert_int_eq(sproj_any_core_takes(16, 0, NCORES, DEEP, NCUDA), 0);
  int64_t l;
  int layout, cpu;
  sproj_any_taken(c[0], &l, &layout, &cpu);
  ck_assert_int_eq(cpu, 1);
  ck_assert_int_eq(sproj_any_core_takes(16, 0, NCORES, DEEP, NCUDA), 1);
  sproj_any_done(c[0]);
  for (int i = 1; i < NCORES; i++)
    sproj_any_cancel(c[i]);
  sproj_any_cancel(q);
}
END_TEST

START_TEST(test_core_rate_learnt)
{
  measured_gpus();
  struct sproj_any_note *q = sproj_any_queued(600000, 0, 0, 0); /* 12 ms: 4096 back LORs (24.6 ms) stay */
  ck_assert_int_eq(sproj_any_core_takes(4096, 1, NCORES, DEEP, NCUDA), 0);
  /* cores that take 1 ms for 4096 forward LORs (0.24 us per unit; after 16 tasks the running mean is within 1% of it
   * plus 1% of the initial 2 us: about 3 ms for the back task) */
  for (int i = 0; i < 16; i++) {
    int64_t l;
    int layout, cpu;
    struct sproj_any_note *c = sproj_any_queued(4096, 0, 1, 0);
    sproj_any_taken(c, &l, &layout, &cpu);
    sleep_ms(1);
    sproj_any_done(c);
  }
  ck_assert_int_eq(sproj_any_core_takes(4096, 1, NCORES, DEEP, NCUDA), 1);
  sproj_any_cancel(q);
}
END_TEST

int main(void)
{
  Suite *s = suite_create("any");
  TCase *tc = tcase_create("any");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_no_core_before_gpu_rate);
  tcase_add_test(tc, test_core_only_before_gpus_finish);
  tcase_add_test(tc, test_back_weighs_three);
  tcase_add_test(tc, test_cores_busy);
  tcase_add_test(tc, test_core_rate_learnt);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
