/* SPDX-License-Identifier: Apache-2.0 */
/* check_api.c: every public call rejects bad input with its documented status, a message, and no effect. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <starpu.h>
#include "testutil.h"

/* asserts the status and that the thread's message names the failing function */
#define EXPECT(call, status, func)                                                                              \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    ck_assert_msg(rc_ == (status), "%s returned %d (%s), expected %d", #call, rc_, sproj_strerror(rc_), (status)); \
    ck_assert_msg(strstr(sproj_last_error(), func) != NULL, "message '%s' does not name %s", sproj_last_error(),   \
                  func);                                                                                       \
  } while (0)

static const int dims[3] = {6, 5, 4};
static const float vs[3] = {1.0f, 2.0f, 3.0f}, origin[3] = {-2.5f, -4.0f, -4.5f};
static float image[6 * 5 * 4];
#define NL 64
static float xs[3 * NL], xe[3 * NL], values[NL];
#define SENTINEL ((void *)0x1234)

START_TEST(test_not_initialised)
{
  /* this runs before sproj_init */
  sproj_image *img = SENTINEL;
  sproj_lors *lors = SENTINEL;
  void *p = SENTINEL;
  EXPECT(sproj_image_register(&img, image, dims, vs, origin), SPROJ_ERR_NOT_INIT, "sproj_image_register");
  EXPECT(sproj_image_create(&img, dims, vs, origin), SPROJ_ERR_NOT_INIT, "sproj_image_create");
  EXPECT(sproj_lors_register(&lors, xs, xe, NL), SPROJ_ERR_NOT_INIT, "sproj_lors_register");
  EXPECT(sproj_wait_all(), SPROJ_ERR_NOT_INIT, "sproj_wait_all");
  EXPECT(sproj_malloc_pinned(&p, 16), SPROJ_ERR_NOT_INIT, "sproj_malloc_pinned");
  EXPECT(sproj_set_devices(SPROJ_DEVICE_CPU), SPROJ_ERR_NOT_INIT, "sproj_set_devices");
  ck_assert_uint_eq(sproj_get_devices(), 0);
  EXPECT(sproj_shutdown(), SPROJ_ERR_NOT_INIT, "sproj_shutdown");
  EXPECT(sproj_batch_begin(), SPROJ_ERR_NOT_INIT, "sproj_batch_begin");
  EXPECT(sproj_pause(), SPROJ_ERR_NOT_INIT, "sproj_pause");
  EXPECT(sproj_resume(), SPROJ_ERR_NOT_INIT, "sproj_resume");
  int64_t used = -7;
  EXPECT(sproj_gpu_memory(0, &used, NULL), SPROJ_ERR_NOT_INIT, "sproj_gpu_memory");
  ck_assert_int_eq(used, -7);
  ck_assert_ptr_eq(img, SENTINEL);
  ck_assert_ptr_eq(lors, SENTINEL);
  ck_assert_ptr_eq(p, SENTINEL);
  ck_assert_ptr_null(sproj_scheduler_name());
  ck_assert_int_eq(sproj_is_initialized(), 0);
  /* scheduler names are checked without StarPU running */
  ck_assert_int_eq(sproj_scheduler_check("lws"), SPROJ_OK);
  ck_assert_int_eq(sproj_scheduler_check("dmda"), SPROJ_OK);
  EXPECT(sproj_scheduler_check("no-such-policy"), SPROJ_ERR_INVALID, "sproj_scheduler_check");
  ck_assert_msg(strstr(sproj_last_error(), "StarPU knows:") && strstr(sproj_last_error(), "lws"), "%s",
                sproj_last_error());
  EXPECT(sproj_scheduler_check(""), SPROJ_ERR_INVALID, "sproj_scheduler_check");
  EXPECT(sproj_scheduler_check(NULL), SPROJ_ERR_NULL, "sproj_scheduler_check");

  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = -2;
  EXPECT(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
  sproj_config_init(&cfg);
  cfg.task_lors = -5;
  EXPECT(sproj_init(&cfg), SPROJ_ERR_RANGE, "sproj_init");
  sproj_config_init(&cfg);
  cfg.ncpu = 0;
  cfg.ncuda = 0;
  EXPECT(sproj_init(&cfg), SPROJ_ERR_NO_DEVICE, "sproj_init");
  sproj_config_init(&cfg);
  cfg.workers_per_gpu = 0;
  EXPECT(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
}
END_TEST

START_TEST(test_strerror)
{
  for (int code = 0; code >= SPROJ_ERR_TOF; code--) {
    const char *s = sproj_strerror(code);
    ck_assert_ptr_nonnull(s);
    ck_assert_msg(strlen(s) > 5, "code %d", code);
    ck_assert_msg(strcmp(s, "unknown status code") != 0, "code %d has no description", code);
    for (int other = code - 1; other >= SPROJ_ERR_TOF; other--)
      ck_assert_msg(strcmp(s, sproj_strerror(other)) != 0, "codes %d and %d share a description", code, other);
  }
  ck_assert_str_eq(sproj_strerror(-999), "unknown status code");
  ck_assert_str_eq(sproj_strerror(7), "unknown status code");
}
END_TEST

START_TEST(test_runtime_calls)
{
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  EXPECT(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init"); /* already initialised */
  EXPECT(sproj_set_task_lors(-1), SPROJ_ERR_RANGE, "sproj_set_task_lors");
  EXPECT(sproj_set_task_lors((int64_t)1 << 40), SPROJ_ERR_RANGE, "sproj_set_task_lors");
  int64_t task_lors = sproj_get_task_lors();
  ck_assert_int_gt(task_lors, 0);
  EXPECT(sproj_batch_end(), SPROJ_ERR_INVALID, "sproj_batch_end");
  EXPECT(sproj_set_devices(0), SPROJ_ERR_INVALID, "sproj_set_devices");
  EXPECT(sproj_set_devices(8), SPROJ_ERR_INVALID, "sproj_set_devices");
  if (sproj_num_gpus() == 0)
    EXPECT(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_ERR_NO_DEVICE, "sproj_set_devices");
  /* a refused setting changes nothing; a kind without workers is left out of what is read back */
  unsigned devices = sproj_get_devices();
  ck_assert_uint_eq(devices, sproj_num_gpus() > 0 ? SPROJ_DEVICE_CUDA : SPROJ_DEVICE_CPU);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  ck_assert_uint_eq(sproj_get_devices(), (sproj_num_cpu_workers() > 0 ? SPROJ_DEVICE_CPU : 0u) |
                                             (sproj_num_gpus() > 0 ? SPROJ_DEVICE_CUDA : 0u));
  ck_assert_int_eq(sproj_set_devices(devices), SPROJ_OK);
  ck_assert_uint_eq(sproj_get_devices(), devices);
  struct sproj_worker_stats st;
  EXPECT(sproj_worker_stats(-1, &st), SPROJ_ERR_RANGE, "sproj_worker_stats");
  EXPECT(sproj_worker_stats(sproj_num_workers(), &st), SPROJ_ERR_RANGE, "sproj_worker_stats");
  EXPECT(sproj_worker_stats(0, NULL), SPROJ_ERR_NULL, "sproj_worker_stats");
  ck_assert_int_eq(sproj_worker_stats(0, &st), SPROJ_OK);
  ck_assert_msg(strlen(st.name) > 0, "worker 0 has no name");
  int64_t used = -7, total = -7;
  EXPECT(sproj_gpu_memory(0, NULL, &total), SPROJ_ERR_NULL, "sproj_gpu_memory");
  EXPECT(sproj_gpu_memory(-1, &used, &total), SPROJ_ERR_NO_DEVICE, "sproj_gpu_memory");
  EXPECT(sproj_gpu_memory(sproj_num_gpus(), &used, &total), SPROJ_ERR_NO_DEVICE, "sproj_gpu_memory");
  ck_assert_int_eq(used, -7);
  ck_assert_int_eq(total, -7);
  for (int g = 0; g < sproj_num_gpus(); g++) {
    ck_assert_int_eq(sproj_gpu_memory(g, &used, &total), SPROJ_OK);
    ck_assert_int_ge(used, 0);
    ck_assert_msg(total == -1 || used <= total, "GPU %d: %lld bytes used of %lld", g, (long long)used, (long long)total);
  }
  void *p = SENTINEL;
  EXPECT(sproj_malloc_pinned(NULL, 16), SPROJ_ERR_NULL, "sproj_malloc_pinned");
  EXPECT(sproj_malloc_pinned(&p, 0), SPROJ_ERR_EMPTY, "sproj_malloc_pinned");
  ck_assert_ptr_eq(p, SENTINEL);
  EXPECT(sproj_pin(NULL, 16), SPROJ_ERR_NULL, "sproj_pin");
  EXPECT(sproj_pin(image, 0), SPROJ_ERR_EMPTY, "sproj_pin");
  EXPECT(sproj_unpin(NULL, 16), SPROJ_ERR_NULL, "sproj_unpin");
  ck_assert_int_eq(sproj_malloc_pinned(&p, 1000), SPROJ_OK);
  ck_assert_ptr_nonnull(p);
  memset(p, 1, 1000);
  ck_assert_int_eq(sproj_free_pinned(p, 1000), SPROJ_OK);
  ck_assert_int_eq(sproj_free_pinned(NULL, 0), SPROJ_OK);
  ck_assert_ptr_nonnull(sproj_scheduler_name());
}
END_TEST

/* Pauses nest; while paused, calls that register, submit or wait fail with BUSY and change nothing (none waits for
 * sleeping workers); a resume without a pause is INVALID; after the last resume the runtime works again. */
START_TEST(test_pause)
{
  float img_v[8] = {0};
  const int dims[3] = {2, 2, 2};
  const float vs[3] = {1, 1, 1}, origin[3] = {0, 0, 0};
  sproj_image *img = SENTINEL;
  ck_assert_int_eq(sproj_resume(), SPROJ_ERR_INVALID);
  ck_assert_int_eq(sproj_pause(), SPROJ_OK);
  ck_assert_int_eq(sproj_pause(), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_ERR_BUSY);
  ck_assert_int_eq(sproj_image_register(&img, img_v, dims, vs, origin), SPROJ_ERR_BUSY);
  ck_assert_ptr_eq(img, SENTINEL);
  ck_assert_int_eq(sproj_resume(), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_ERR_BUSY);
  ck_assert_int_eq(sproj_resume(), SPROJ_OK);
  ck_assert_int_eq(sproj_resume(), SPROJ_ERR_INVALID);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&img, img_v, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(img, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
}
END_TEST

/* sproj_lors_order and sproj_reorder put StarPU's workers to sleep while they run on every core, and wake them after:
 * a task submitted just before runs once they return; inside sproj_pause the workers stay asleep after them (the
 * pauses nest) until sproj_resume. */
static int ran;
static void note_ran(void *buffers[], void *arg)
{
  (void)buffers;
  (void)arg;
  __atomic_store_n(&ran, 1, __ATOMIC_RELEASE);
}
static struct starpu_codelet note_ran_cl = {.cpu_funcs = {note_ran}, .nbuffers = 0, .name = "note_ran"};

/* Inside sproj_pause (the caller's): a task submitted now does not run within 0.1 s; it runs after sproj_resume. */
static void expect_paused_then_resumed(const char *when)
{
  __atomic_store_n(&ran, 0, __ATOMIC_RELEASE);
  ck_assert_int_eq(starpu_task_insert(&note_ran_cl, STARPU_EXECUTE_WHERE, (unsigned long long)STARPU_CPU, 0), 0);
  usleep(100000);
  ck_assert_msg(__atomic_load_n(&ran, __ATOMIC_ACQUIRE) == 0, "a task ran inside sproj_pause %s", when);
  ck_assert_int_eq(sproj_resume(), SPROJ_OK);
  ck_assert_int_eq(starpu_task_wait_for_all(), 0);
  ck_assert_int_eq(__atomic_load_n(&ran, __ATOMIC_ACQUIRE), 1);
}

/* One thread's share of test_order_sleeps_workers: its LORs ordered and reordered many times. */
struct order_job {
  const float *xs, *xe;
  int64_t n;
  const float *vs;
  int64_t *order;
  int status;
};
static void *order_many(void *p)
{
  struct order_job *j = p;
  j->status = SPROJ_OK;
  for (int k = 0; k < 20 && j->status == SPROJ_OK; k++)
    j->status = sproj_lors_order(j->xs, j->xe, j->n, j->vs, j->order);
  return NULL;
}

START_TEST(test_order_sleeps_workers)
{
  enum { N = 100000 };
  float *xs = malloc(3 * N * sizeof *xs), *xe = malloc(3 * N * sizeof *xe);
  int64_t *order = malloc(N * sizeof *order);
  ck_assert(xs && xe && order);
  for (int i = 0; i < N; i++) {
    double a = 0.37 * i, b = 1.9 + 0.61 * i;
    xs[3 * i] = (float)(50 * cos(a)), xs[3 * i + 1] = (float)(50 * sin(a)), xs[3 * i + 2] = (float)(i % 17);
    xe[3 * i] = (float)(50 * cos(b)), xe[3 * i + 1] = (float)(50 * sin(b)), xe[3 * i + 2] = (float)(i % 13);
  }
  const float vs[3] = {2, 2, 2};
  __atomic_store_n(&ran, 0, __ATOMIC_RELEASE);
  ck_assert_int_eq(starpu_task_insert(&note_ran_cl, STARPU_EXECUTE_WHERE, (unsigned long long)STARPU_CPU, 0), 0);
  ck_assert_int_eq(sproj_lors_order(xs, xe, N, vs, order), SPROJ_OK);
  ck_assert_int_eq(sproj_reorder(xs, 3 * sizeof(float), N, order), SPROJ_OK);
  ck_assert_int_eq(starpu_task_wait_for_all(), 0);
  ck_assert_int_eq(__atomic_load_n(&ran, __ATOMIC_ACQUIRE), 1);

  ck_assert_int_eq(sproj_pause(), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_order(xs, xe, N, vs, order), SPROJ_OK);
  ck_assert_int_eq(sproj_reorder(xe, 3 * sizeof(float), N, order), SPROJ_OK);
  expect_paused_then_resumed("after ordering inside sproj_pause");

  /* many threads ordering at once: StarPU's pause count stays exact (a count left above 0 would keep the workers
   * asleep, one below 0 would let sproj_pause no longer pause them) */
  enum { THREADS = 8 };
  struct order_job jobs[THREADS];
  pthread_t tid[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t] = (struct order_job){xs, xe, N / THREADS, vs, malloc(N / THREADS * sizeof(int64_t)), -1};
    ck_assert(jobs[t].order);
    ck_assert_int_eq(pthread_create(&tid[t], NULL, order_many, &jobs[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) {
    ck_assert_int_eq(pthread_join(tid[t], NULL), 0);
    ck_assert_int_eq(jobs[t].status, SPROJ_OK);
    free(jobs[t].order);
  }
  ck_assert_int_eq(sproj_pause(), SPROJ_OK);
  expect_paused_then_resumed("after the threads' ordering");
  free(xs);
  free(xe);
  free(order);
}
END_TEST

START_TEST(test_image_register)
{
  sproj_image *img = SENTINEL;
  const int zero[3] = {6, 0, 4}, neg[3] = {-1, 5, 4}, huge[3] = {70000, 70000, 2};
  const float vzero[3] = {1, 0, 1}, vneg[3] = {1, 1, -2}, vnan[3] = {NAN, 1, 1}, vinf[3] = {1, INFINITY, 1};
  const float onan[3] = {0, NAN, 0}, oinf[3] = {0, 0, -INFINITY}, vbig[3] = {1e38f, 1, 1};
  EXPECT(sproj_image_register(NULL, image, dims, vs, origin), SPROJ_ERR_NULL, "sproj_image_register");
  EXPECT(sproj_image_register(&img, NULL, dims, vs, origin), SPROJ_ERR_NULL, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, NULL, vs, origin), SPROJ_ERR_NULL, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, dims, NULL, origin), SPROJ_ERR_NULL, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, dims, vs, NULL), SPROJ_ERR_NULL, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, zero, vs, origin), SPROJ_ERR_DIMS, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, neg, vs, origin), SPROJ_ERR_DIMS, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, huge, vs, origin), SPROJ_ERR_OVERFLOW, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, dims, vzero, origin), SPROJ_ERR_VOXEL_SIZE, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, dims, vneg, origin), SPROJ_ERR_VOXEL_SIZE, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, dims, vnan, origin), SPROJ_ERR_VOXEL_SIZE, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, dims, vinf, origin), SPROJ_ERR_VOXEL_SIZE, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, dims, vs, onan), SPROJ_ERR_NONFINITE, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, dims, vs, oinf), SPROJ_ERR_NONFINITE, "sproj_image_register");
  EXPECT(sproj_image_register(&img, image, dims, vbig, origin), SPROJ_ERR_OVERFLOW, "sproj_image_register");
  ck_assert_ptr_eq(img, SENTINEL);

  /* an image of the library's own: the same checks, nothing made when one fails; made, it zeroes, syncs (a host copy
   * appears) and unregisters */
  EXPECT(sproj_image_create(NULL, dims, vs, origin), SPROJ_ERR_NULL, "sproj_image_create");
  EXPECT(sproj_image_create(&img, zero, vs, origin), SPROJ_ERR_DIMS, "sproj_image_create");
  EXPECT(sproj_image_create(&img, dims, vneg, origin), SPROJ_ERR_VOXEL_SIZE, "sproj_image_create");
  EXPECT(sproj_image_create(&img, dims, vs, oinf), SPROJ_ERR_NONFINITE, "sproj_image_create");
  EXPECT(sproj_image_create(&img, dims, vbig, origin), SPROJ_ERR_OVERFLOW, "sproj_image_create");
  ck_assert_ptr_eq(img, SENTINEL);
  sproj_image *own;
  ck_assert_int_eq(sproj_image_create(&own, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_zero(own), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(own, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(own), SPROJ_OK);

  /* a caller's handle with no home (StarPU allocates it where used): unregistering the image leaves it registered */
  starpu_data_handle_t nohome;
  starpu_vector_data_register(&nohome, -1, 0, (uint32_t)(dims[0] * dims[1] * dims[2]), sizeof(float));
  ck_assert_int_eq(sproj_image_register_handle(&own, nohome, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_zero(own), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(own), SPROJ_OK);
  ck_assert_int_eq(starpu_data_acquire(nohome, STARPU_R), 0); /* still the caller's, and holds the zeros */
  ck_assert_float_eq(((const float *)starpu_vector_get_local_ptr(nohome))[0], 0.0f);
  starpu_data_release(nohome);
  starpu_data_unregister(nohome);

  /* a caller's handle of the wrong kind or size */
  starpu_data_handle_t var, small;
  float one = 0.0f;
  starpu_variable_data_register(&var, STARPU_MAIN_RAM, (uintptr_t)&one, sizeof one);
  starpu_vector_data_register(&small, STARPU_MAIN_RAM, (uintptr_t)image, 10, sizeof(float));
  EXPECT(sproj_image_register_handle(&img, NULL, dims, vs, origin), SPROJ_ERR_NULL, "sproj_image_register_handle");
  EXPECT(sproj_image_register_handle(&img, var, dims, vs, origin), SPROJ_ERR_INVALID, "sproj_image_register_handle");
  /* a vector of the wrong size is a handle of the wrong size: INVALID, as the header says */
  EXPECT(sproj_image_register_handle(&img, small, dims, vs, origin), SPROJ_ERR_INVALID,
         "sproj_image_register_handle");
  EXPECT(sproj_image_register_handle(&img, small, zero, vs, origin), SPROJ_ERR_DIMS, "sproj_image_register_handle");
  ck_assert_ptr_eq(img, SENTINEL);
  starpu_data_unregister(var);
  starpu_data_unregister(small);

  /* calls on an image */
  ck_assert_int_eq(sproj_image_register(&img, image, dims, vs, origin), SPROJ_OK);
  EXPECT(sproj_shutdown(), SPROJ_ERR_BUSY, "sproj_shutdown"); /* the image is still registered */
  EXPECT(sproj_image_upload(NULL, 0), SPROJ_ERR_NULL, "sproj_image_upload");
  EXPECT(sproj_image_upload(img, sproj_num_gpus()), SPROJ_ERR_NO_DEVICE, "sproj_image_upload");
  EXPECT(sproj_image_upload(img, -2), SPROJ_ERR_NO_DEVICE, "sproj_image_upload");
  EXPECT(sproj_image_release(NULL, 0), SPROJ_ERR_NULL, "sproj_image_release");
  EXPECT(sproj_image_release(img, 99), SPROJ_ERR_NO_DEVICE, "sproj_image_release");
  EXPECT(sproj_image_sync(NULL, SPROJ_SYNC_READ), SPROJ_ERR_NULL, "sproj_image_sync");
  EXPECT(sproj_image_sync(img, 0), SPROJ_ERR_INVALID, "sproj_image_sync");
  EXPECT(sproj_image_sync(img, 3), SPROJ_ERR_INVALID, "sproj_image_sync");
  EXPECT(sproj_image_zero(NULL), SPROJ_ERR_NULL, "sproj_image_zero");
  ck_assert_int_eq(sproj_image_upload(img, SPROJ_ALL_GPUS), SPROJ_OK);
  ck_assert_int_eq(sproj_image_release(img, SPROJ_ALL_GPUS), SPROJ_OK);
  ck_assert_ptr_nonnull(sproj_image_handle(img));
  ck_assert_ptr_null(sproj_image_handle(NULL));
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(NULL), SPROJ_OK);
}
END_TEST

START_TEST(test_lors_register)
{
  sproj_lors *lors = SENTINEL;
  float bad[3 * NL];
  EXPECT(sproj_lors_register(NULL, xs, xe, NL), SPROJ_ERR_NULL, "sproj_lors_register");
  EXPECT(sproj_lors_register(&lors, NULL, xe, NL), SPROJ_ERR_NULL, "sproj_lors_register");
  EXPECT(sproj_lors_register(&lors, xs, NULL, NL), SPROJ_ERR_NULL, "sproj_lors_register");
  EXPECT(sproj_lors_register(&lors, xs, xe, 0), SPROJ_ERR_EMPTY, "sproj_lors_register");
  EXPECT(sproj_lors_register(&lors, xs, xe, -3), SPROJ_ERR_DIMS, "sproj_lors_register");
  EXPECT(sproj_lors_register(&lors, xs, xe, (int64_t)1 << 32), SPROJ_ERR_OVERFLOW, "sproj_lors_register");
  EXPECT(sproj_lors_register(&lors, xs, xe, INT64_MAX), SPROJ_ERR_OVERFLOW, "sproj_lors_register");
  memcpy(bad, xs, sizeof bad);
  bad[3 * 17 + 2] = NAN;
  EXPECT(sproj_lors_register(&lors, bad, xe, NL), SPROJ_ERR_NONFINITE, "sproj_lors_register");
  ck_assert_msg(strstr(sproj_last_error(), "17") != NULL, "message does not name LOR 17: %s", sproj_last_error());
  bad[3 * 17 + 2] = -INFINITY;
  EXPECT(sproj_lors_register(&lors, xs, bad, NL), SPROJ_ERR_NONFINITE, "sproj_lors_register");
  ck_assert_ptr_eq(lors, SENTINEL);

  starpu_data_handle_t a, b, c;
  starpu_vector_data_register(&a, STARPU_MAIN_RAM, (uintptr_t)xs, NL, 3 * sizeof(float));
  starpu_vector_data_register(&b, STARPU_MAIN_RAM, (uintptr_t)xe, NL - 1, 3 * sizeof(float));
  starpu_vector_data_register(&c, STARPU_MAIN_RAM, (uintptr_t)xe, 3 * NL, sizeof(float));
  EXPECT(sproj_lors_register_handles(&lors, a, NULL), SPROJ_ERR_NULL, "sproj_lors_register_handles");
  EXPECT(sproj_lors_register_handles(&lors, a, b), SPROJ_ERR_MISMATCH, "sproj_lors_register_handles");
  EXPECT(sproj_lors_register_handles(&lors, a, c), SPROJ_ERR_INVALID, "sproj_lors_register_handles");
  ck_assert_ptr_eq(lors, SENTINEL);
  starpu_data_unregister(a);
  starpu_data_unregister(b);
  starpu_data_unregister(c);

  int64_t n = -1;
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, NL), SPROJ_OK);
  EXPECT(sproj_lors_count(NULL, &n), SPROJ_ERR_NULL, "sproj_lors_count");
  EXPECT(sproj_lors_count(lors, NULL), SPROJ_ERR_NULL, "sproj_lors_count");
  ck_assert_int_eq(sproj_lors_count(lors, &n), SPROJ_OK);
  ck_assert_int_eq(n, NL);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
}
END_TEST

START_TEST(test_chunks)
{
  sproj_lors *lors, *other;
  sproj_chunks *ch = SENTINEL;
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, NL), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&other, xs, xe, NL), SPROJ_OK);
  int64_t first[3] = {0, 10, 30}, count[3] = {10, 20, 34};
  int64_t f_neg[3] = {-1, 10, 30}, f_out[3] = {0, 10, 64}, f_ovl[3] = {0, 9, 30}, f_huge[3] = {INT64_MAX, 10, 30};
  int64_t c_zero[3] = {10, 0, 34}, c_neg[3] = {10, -20, 34}, c_out[3] = {10, 20, 35};
  EXPECT(sproj_chunks_create_ranges(NULL, lors, 3, first, count), SPROJ_ERR_NULL, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, NULL, 3, first, count), SPROJ_ERR_NULL, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 3, NULL, count), SPROJ_ERR_NULL, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 3, first, NULL), SPROJ_ERR_NULL, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 0, first, count), SPROJ_ERR_EMPTY, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, -2, first, count), SPROJ_ERR_DIMS, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 3, f_neg, count), SPROJ_ERR_RANGE, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 3, f_out, count), SPROJ_ERR_RANGE, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 3, f_ovl, count), SPROJ_ERR_RANGE, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 3, f_huge, count), SPROJ_ERR_RANGE, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 3, first, c_zero), SPROJ_ERR_EMPTY, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 3, first, c_neg), SPROJ_ERR_DIMS, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_ranges(&ch, lors, 3, first, c_out), SPROJ_ERR_RANGE, "sproj_chunks_create_ranges");
  EXPECT(sproj_chunks_create_blocks(&ch, lors, 0), SPROJ_ERR_EMPTY, "sproj_chunks_create_blocks");
  EXPECT(sproj_chunks_create_blocks(&ch, lors, -1), SPROJ_ERR_DIMS, "sproj_chunks_create_blocks");
  EXPECT(sproj_chunks_create_blocks(&ch, lors, NL + 1), SPROJ_ERR_RANGE, "sproj_chunks_create_blocks");
  EXPECT(sproj_chunks_create_blocks(NULL, lors, 2), SPROJ_ERR_NULL, "sproj_chunks_create_blocks");
  ck_assert_ptr_eq(ch, SENTINEL);

  /* a LOR set with a chunking cannot go */
  ck_assert_int_eq(sproj_chunks_create_ranges(&ch, lors, 3, first, count), SPROJ_OK);
  EXPECT(sproj_lors_unregister(lors), SPROJ_ERR_BUSY, "sproj_lors_unregister");
  int num = -1;
  int64_t f = -1, c = -1;
  EXPECT(sproj_chunks_count(NULL, &num), SPROJ_ERR_NULL, "sproj_chunks_count");
  EXPECT(sproj_chunks_count(ch, NULL), SPROJ_ERR_NULL, "sproj_chunks_count");
  ck_assert_int_eq(sproj_chunks_count(ch, &num), SPROJ_OK);
  ck_assert_int_eq(num, 3);
  EXPECT(sproj_chunks_range(ch, 3, &f, &c), SPROJ_ERR_RANGE, "sproj_chunks_range");
  EXPECT(sproj_chunks_range(ch, -1, &f, &c), SPROJ_ERR_RANGE, "sproj_chunks_range");
  EXPECT(sproj_chunks_range(ch, 0, NULL, &c), SPROJ_ERR_NULL, "sproj_chunks_range");
  ck_assert_int_eq(f, -1);
  ck_assert_int_eq(sproj_chunks_range(ch, 1, &f, &c), SPROJ_OK);
  ck_assert_int_eq(f, 10);
  ck_assert_int_eq(c, 20);

  /* residency calls on LOR chunks */
  EXPECT(sproj_lors_upload(NULL, ch, 0, SPROJ_ALL_GPUS), SPROJ_ERR_NULL, "sproj_lors_upload");
  EXPECT(sproj_lors_upload(other, ch, 0, SPROJ_ALL_GPUS), SPROJ_ERR_MISMATCH, "sproj_lors_upload");
  EXPECT(sproj_lors_upload(lors, ch, 3, SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, "sproj_lors_upload");
  EXPECT(sproj_lors_upload(lors, ch, 0, 77), SPROJ_ERR_NO_DEVICE, "sproj_lors_upload");
  EXPECT(sproj_lors_release(lors, ch, -7, SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, "sproj_lors_release");
  ck_assert_int_eq(sproj_lors_upload(lors, ch, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_release(lors, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS), SPROJ_OK);

  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(other), SPROJ_OK);
}
END_TEST

/* Failing submissions leave the projection values untouched (poisoned values stay poisoned). */
START_TEST(test_submit)
{
  sproj_image *img;
  sproj_lors *lors, *other;
  sproj_proj *proj = SENTINEL;
  sproj_chunks *ch, *och;
  ck_assert_int_eq(sproj_image_register(&img, image, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, NL), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&other, xs, xe, NL), SPROJ_OK);
  EXPECT(sproj_proj_register(NULL, values, lors), SPROJ_ERR_NULL, "sproj_proj_register");
  EXPECT(sproj_proj_register(&proj, NULL, lors), SPROJ_ERR_NULL, "sproj_proj_register");
  EXPECT(sproj_proj_register(&proj, values, NULL), SPROJ_ERR_NULL, "sproj_proj_register");
  starpu_data_handle_t wrong;
  starpu_vector_data_register(&wrong, STARPU_MAIN_RAM, (uintptr_t)values, NL - 1, sizeof(float));
  EXPECT(sproj_proj_register_handle(&proj, wrong, lors), SPROJ_ERR_MISMATCH, "sproj_proj_register_handle");
  starpu_data_unregister(wrong);
  ck_assert_ptr_eq(proj, SENTINEL);

  for (int i = 0; i < NL; i++)
    values[i] = NAN;
  ck_assert_int_eq(sproj_proj_register(&proj, values, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, 4), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&och, other, 4), SPROJ_OK);
  EXPECT(sproj_lors_unregister(lors), SPROJ_ERR_BUSY, "sproj_lors_unregister");

  EXPECT(sproj_fwd(NULL, proj, ch, 0), SPROJ_ERR_NULL, "sproj_fwd");
  EXPECT(sproj_fwd(img, NULL, ch, 0), SPROJ_ERR_NULL, "sproj_fwd");
  EXPECT(sproj_fwd(img, proj, ch, 4), SPROJ_ERR_RANGE, "sproj_fwd");
  EXPECT(sproj_fwd(img, proj, ch, -2), SPROJ_ERR_RANGE, "sproj_fwd");
  EXPECT(sproj_fwd(img, proj, NULL, 1), SPROJ_ERR_RANGE, "sproj_fwd");
  EXPECT(sproj_fwd(img, proj, och, 0), SPROJ_ERR_MISMATCH, "sproj_fwd");
  EXPECT(sproj_back(img, proj, och, 0), SPROJ_ERR_MISMATCH, "sproj_back");
  EXPECT(sproj_back(img, proj, ch, 9), SPROJ_ERR_RANGE, "sproj_back");
  EXPECT(sproj_back(NULL, proj, ch, 0), SPROJ_ERR_NULL, "sproj_back");
  int list[3] = {0, 2, 4}, good[2] = {1, 3};
  EXPECT(sproj_fwd_chunks(img, proj, ch, NULL, 2), SPROJ_ERR_NULL, "sproj_fwd_chunks");
  EXPECT(sproj_fwd_chunks(img, proj, ch, good, 0), SPROJ_ERR_EMPTY, "sproj_fwd_chunks");
  EXPECT(sproj_fwd_chunks(img, proj, ch, good, -1), SPROJ_ERR_DIMS, "sproj_fwd_chunks");
  EXPECT(sproj_fwd_chunks(img, proj, ch, list, 3), SPROJ_ERR_RANGE, "sproj_fwd_chunks"); /* 4 is out: nothing runs */
  EXPECT(sproj_fwd_chunks(img, proj, och, good, 2), SPROJ_ERR_MISMATCH, "sproj_fwd_chunks");
  EXPECT(sproj_back_chunks(img, proj, ch, list, 3), SPROJ_ERR_RANGE, "sproj_back_chunks");
  EXPECT(sproj_proj_sync(NULL, ch, 0, SPROJ_SYNC_READ), SPROJ_ERR_NULL, "sproj_proj_sync");
  EXPECT(sproj_proj_sync(proj, ch, 0, 5), SPROJ_ERR_INVALID, "sproj_proj_sync");
  EXPECT(sproj_proj_sync(proj, ch, 4, SPROJ_SYNC_READ), SPROJ_ERR_RANGE, "sproj_proj_sync");
  EXPECT(sproj_proj_sync(proj, och, 0, SPROJ_SYNC_READ), SPROJ_ERR_MISMATCH, "sproj_proj_sync");
  EXPECT(sproj_proj_upload(proj, ch, 4, SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, "sproj_proj_upload");
  EXPECT(sproj_proj_upload(proj, NULL, 2, SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, "sproj_proj_upload");
  EXPECT(sproj_proj_release(NULL, ch, 0, SPROJ_ALL_GPUS), SPROJ_ERR_NULL, "sproj_proj_release");
  ck_assert_int_eq(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int i = 0; i < NL; i++)
    ck_assert_msg(isnan(values[i]), "value %d was written by a call that failed", i);

  /* and a good call writes them all */
  ck_assert_int_eq(sproj_fwd_chunks(img, proj, ch, good, 2), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd(img, proj, ch, 0), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd(img, proj, ch, 2), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj, ch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int i = 0; i < NL; i++)
    ck_assert_msg(isfinite(values[i]), "value %d not written", i);

  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(och), SPROJ_OK);
  EXPECT(sproj_lors_unregister(lors), SPROJ_ERR_BUSY, "sproj_lors_unregister"); /* proj still registered */
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(other), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
}
END_TEST

/* sproj_image_zero: a back projection target starts again at 0 without its host buffer: back projecting into it
 * after zeroing gives what a fresh image of zeros gets, and the host buffer (poisoned meanwhile) is overwritten. */
START_TEST(test_image_zero)
{
  float acc[6 * 5 * 4], fresh[6 * 5 * 4] = {0};
  for (int v = 0; v < 6 * 5 * 4; v++)
    acc[v] = 7.0f;
  sproj_image *a, *f;
  sproj_lors *lors;
  sproj_proj *proj;
  sproj_chunks *ch;
  for (int i = 0; i < NL; i++)
    values[i] = (float)(i % 5) + 0.5f;
  ck_assert_int_eq(sproj_image_register(&a, acc, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&f, fresh, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, NL), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&proj, values, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, 4), SPROJ_OK);
  ck_assert_int_eq(sproj_image_upload(a, SPROJ_ALL_GPUS), SPROJ_OK);
  /* twice: the second round zeroes an image that holds a back projection (pending or reduced) */
  for (int round = 0; round < 2; round++) {
    ck_assert_int_eq(sproj_image_zero(a), SPROJ_OK);
    for (int c = 0; c < 4; c++)
      ck_assert_int_eq(sproj_back(a, proj, ch, c), SPROJ_OK);
  }
  for (int c = 0; c < 4; c++)
    ck_assert_int_eq(sproj_back(f, proj, ch, c), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(a, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(f, SPROJ_SYNC_READ), SPROJ_OK);
  double sum = 0.0;
  for (int v = 0; v < 6 * 5 * 4; v++) {
    ck_assert_msg(fabsf(acc[v] - fresh[v]) <= 1e-5f * (1.0f + fabsf(fresh[v])), "voxel %d: %g after zeroing, %g fresh",
                  v, (double)acc[v], (double)fresh[v]);
    sum += fresh[v];
  }
  ck_assert_msg(sum > 0.0, "the back projection is empty: the test would prove nothing");
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(a), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(f), SPROJ_OK);
}
END_TEST

int main(void)
{
  struct tu_geom g = {{6, 5, 4}, {1.0f, 2.0f, 3.0f}, {-2.5f, -4.0f, -4.5f}};
  tu_seed(5);
  tu_fill_uniform(image, 6 * 5 * 4, 0.0f, 1.0f);
  tu_random_lors(&g, xs, xe, NL, NULL);

  /* the first case runs before sproj_init */
  Suite *s0 = suite_create("api before init");
  TCase *t0 = tcase_create("before init");
  tcase_add_test(t0, test_not_initialised);
  tcase_add_test(t0, test_strerror);
  suite_add_tcase(s0, t0);
  int ret = tu_run(s0);

  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s = suite_create("api argument checks");
  TCase *tc = tcase_create("bad input");
  tcase_add_test(tc, test_runtime_calls);
  tcase_add_test(tc, test_pause);
  tcase_add_test(tc, test_order_sleeps_workers);
  tcase_add_test(tc, test_image_register);
  tcase_add_test(tc, test_lors_register);
  tcase_add_test(tc, test_chunks);
  tcase_add_test(tc, test_submit);
  tcase_add_test(tc, test_image_zero);
  suite_add_tcase(s, tc);
  ret |= tu_run(s);
  if (sproj_shutdown() != SPROJ_OK)
    ret = 1;
  return ret;
}
