/* SPDX-License-Identifier: Apache-2.0 */
/* check_threads.c: 16 host threads submitting per-viewgram forward and back projections of one registered image
 * (the small preset scanner) give the single-threaded results; calls merged while the workers are busy give the
 * results of one call each, in the order they were made; a thread waiting in a sync holds up no other thread's
 * submissions. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <starpu.h>
#include "testutil.h"

#define NTHREADS 16

struct job {
  sproj_image *img, *back;
  sproj_proj *fwd_out, *back_in;
  const sproj_chunks *viewgrams;
  int num_chunks, first;
  int status;
};

/* viewgrams first, first + NTHREADS, ...: each forward projected, then its given values back projected */
static void *submit(void *arg)
{
  struct job *j = arg;
  for (int c = j->first; c < j->num_chunks && j->status == SPROJ_OK; c += NTHREADS) {
    j->status = sproj_fwd(j->img, j->fwd_out, j->viewgrams, c);
    if (j->status == SPROJ_OK)
      j->status = sproj_back(j->back, j->back_in, j->viewgrams, c);
  }
  return NULL;
}

/* Forward values bit for bit (each LOR is computed by the same code whatever thread submits it); back projection to
 * 1e-5 of the image's maximum (the reduction adds the per-worker images in whatever order the tasks ran; observed
 * differences are up to ~2e-6). */
START_TEST(test_threads_equal_single)
{
  struct sproj_scanner_params sp;
  sproj_scanner *sc;
  struct sproj_sinogram_info in;
  ck_assert_int_eq(sproj_scanner_preset("small", &sp), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_create(&sc, &sp), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_info(sc, &in), SPROJ_OK);
  const int64_t n = in.num_lors;
  struct tu_geom g = {{64, 64, 16}, {2.0f, 2.0f, 2.0f}, {-63.0f, -63.0f, -15.0f}};
  const int64_t nvox = tu_nvox(&g);
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *img = tu_alloc(nvox), *given = tu_alloc(n);
  float *fwd1 = tu_alloc(n), *fwd16 = tu_alloc(n), *back1 = calloc(nvox, sizeof *back1),
        *back16 = calloc(nvox, sizeof *back16);
  tu_seed(61);
  tu_fill_uniform(img, nvox, 0.0f, 1.0f);
  tu_fill_uniform(given, n, 0.5f, 1.5f);
  for (int64_t i = 0; i < n; i++)
    fwd1[i] = fwd16[i] = NAN;
  ck_assert_int_eq(sproj_scanner_lors(sc, xs, xe, 2), SPROJ_OK);

  sproj_image *im, *b1, *b16;
  sproj_lors *lors;
  sproj_proj *p_given, *p1, *p16;
  sproj_chunks *vg;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&b1, back1, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&b16, back16, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, n), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&p_given, given, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&p1, fwd1, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&p16, fwd16, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_chunks_viewgrams(&vg, sc, lors), SPROJ_OK);
  int nc;
  ck_assert_int_eq(sproj_chunks_count(vg, &nc), SPROJ_OK);
  ck_assert_int_eq(nc, in.num_views * in.num_segments);
  ck_assert_int_eq(sproj_image_upload(im, SPROJ_ALL_GPUS), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_upload(lors, vg, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS), SPROJ_OK);

  /* the reference: one thread, one call per viewgram */
  for (int c = 0; c < nc; c++) {
    ck_assert_int_eq(sproj_fwd(im, p1, vg, c), SPROJ_OK);
    ck_assert_int_eq(sproj_back(b1, p_given, vg, c), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_proj_sync(p1, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(b1, SPROJ_SYNC_READ), SPROJ_OK);

  pthread_t th[NTHREADS];
  struct job jobs[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    jobs[t] = (struct job){im, b16, p16, p_given, vg, nc, t, SPROJ_OK};
    ck_assert_int_eq(pthread_create(&th[t], NULL, submit, &jobs[t]), 0);
  }
  for (int t = 0; t < NTHREADS; t++) {
    pthread_join(th[t], NULL);
    ck_assert_msg(jobs[t].status == SPROJ_OK, "thread %d: %s", t, sproj_strerror(jobs[t].status));
  }
  ck_assert_int_eq(sproj_proj_sync(p16, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(b16, SPROJ_SYNC_READ), SPROJ_OK);

  int64_t differ = 0, nonzero = 0;
  for (int64_t i = 0; i < n; i++) {
    differ += memcmp(&fwd1[i], &fwd16[i], sizeof(float)) != 0;
    nonzero += fwd1[i] > 0.0f;
  }
  ck_assert_msg(differ == 0, "%lld of %lld forward values differ", (long long)differ, (long long)n);
  ck_assert_msg(nonzero > n / 4, "only %lld LORs see the image", (long long)nonzero);
  double d = 0.0, m = 0.0;
  for (int64_t v = 0; v < nvox; v++) {
    d = fmax(d, fabs((double)back16[v] - back1[v]));
    m = fmax(m, fabs((double)back1[v]));
  }
  printf("16 threads, %d viewgrams: back projection differs by %.3g of its maximum %.6g\n", nc, d / m, m);
  ck_assert(m > 0.0);
  ck_assert_msg(d <= 1e-5 * m, "back projections differ by %.3g of the maximum", d / m);

  ck_assert_int_eq(sproj_chunks_destroy(vg), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(p_given), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(p1), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(p16), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(b1), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(b16), SPROJ_OK);
  sproj_scanner_destroy(sc);
  free(xs);
  free(xe);
  free(img);
  free(given);
  free(fwd1);
  free(fwd16);
  free(back1);
  free(back16);
}
END_TEST

/* LORs projected so far, over all workers (counted when a task starts; reading them submits nothing) */
static int64_t lors_started(void)
{
  int64_t total = 0;
  for (int w = 0; w < sproj_num_workers(); w++) {
    struct sproj_worker_stats st;
    if (sproj_worker_stats(w, &st) == SPROJ_OK)
      total += st.lors;
  }
  return total;
}

/* 2000 calls of 60 LORs each arrive much faster than the workers finish them, so with merging on most of them join
 * pending lists: fewer tasks than calls (asserted: at most half), the forward values bit-identical to one request,
 * and forward calls into a vector alternating with back projections of that same vector (which must wait for each
 * forward before them) give the back projection of the finished forward values. Off: one task per call. */
START_TEST(test_merged_calls)
{
  struct tu_geom g = {{40, 40, 24}, {2.0f, 2.0f, 2.0f}, {-39.0f, -39.0f, -23.0f}};
  const int64_t nvox = tu_nvox(&g), n = 120000;
  const int nchunks = 2000;
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *img = tu_alloc(nvox);
  float *ref = tu_alloc(n), *fwd = tu_alloc(n), *fwd_off = tu_alloc(n);
  float *back_ref = calloc(nvox, sizeof(float)), *back = calloc(nvox, sizeof(float));
  tu_seed(2000);
  tu_fill_uniform(img, nvox, 0.0f, 1.0f);
  tu_random_lors(&g, xs, xe, n, NULL);
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, n, ref), SPROJ_OK);
  ck_assert_int_eq(tu_back_whole(&g, back_ref, xs, xe, n, ref), SPROJ_OK);

  sproj_image *im, *bim;
  sproj_lors *lors;
  sproj_proj *p, *p_off;
  sproj_chunks *ch;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&bim, back, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, n), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&p, fwd, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&p_off, fwd_off, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, nchunks), SPROJ_OK);

  int64_t before = tu_total_tasks();
  for (int c = 0; c < nchunks; c++)
    ck_assert_int_eq(sproj_fwd(im, p, ch, c), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(p, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);
  int64_t merged_tasks = tu_total_tasks() - before;

  /* with no call that waits afterwards, the held-back calls still run: the helper thread submits them as the
   * queue runs low (polled for up to 30 s; it takes well under a second) */
  int64_t started = lors_started();
  for (int c = 0; c < nchunks; c++)
    ck_assert_int_eq(sproj_fwd(im, p, ch, c), SPROJ_OK);
  double waited = 0.0;
  while (lors_started() - started < n && waited < 30.0) {
    usleep(10000);
    waited += 0.01;
  }
  printf("merged calls without a sync: all %lld LORs started after %.2f s\n", (long long)n, waited);
  ck_assert_msg(lors_started() - started == n, "only %lld of %lld LORs ran without a sync",
                (long long)(lors_started() - started), (long long)n);
  ck_assert_int_eq(sproj_proj_sync(p, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);

  /* forward c, then back projection of c from the same vector: each back call must see its forward's values */
  for (int c = 0; c < nchunks; c++) {
    ck_assert_int_eq(sproj_fwd(im, p, ch, c), SPROJ_OK);
    ck_assert_int_eq(sproj_back(bim, p, ch, c), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_image_sync(bim, SPROJ_SYNC_READ), SPROJ_OK);

  ck_assert_int_eq(sproj_set_merge_calls(0), SPROJ_OK);
  before = tu_total_tasks();
  for (int c = 0; c < nchunks; c++)
    ck_assert_int_eq(sproj_fwd(im, p_off, ch, c), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(p_off, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);
  int64_t plain_tasks = tu_total_tasks() - before;
  ck_assert_int_eq(sproj_set_merge_calls(1), SPROJ_OK);
  ck_assert_int_eq(sproj_set_merge_calls(2), SPROJ_ERR_INVALID);

  int64_t differ = 0, differ_off = 0;
  for (int64_t i = 0; i < n; i++) {
    differ += memcmp(&fwd[i], &ref[i], sizeof(float)) != 0;
    differ_off += memcmp(&fwd_off[i], &ref[i], sizeof(float)) != 0;
  }
  double rel = tu_rel_l2_ff(back, back_ref, nvox);
  printf("merged calls: %d forward calls made %lld tasks (%lld without merging); forward values differing from one "
         "request: %lld; interleaved forward/back: back projection relative L2 %.3g\n",
         nchunks, (long long)merged_tasks, (long long)plain_tasks, (long long)differ, rel);
  ck_assert_msg(differ == 0 && differ_off == 0, "%lld / %lld forward values differ", (long long)differ,
                (long long)differ_off);
  ck_assert_int_eq(plain_tasks, nchunks);
  ck_assert_msg(merged_tasks >= 1 && merged_tasks <= nchunks / 2, "%lld tasks for %d merged calls",
                (long long)merged_tasks, nchunks);
  ck_assert_msg(tu_max_abs(back_ref, nvox) > 0.0 && rel <= 1e-5, "interleaved back projection relative L2 %.3g", rel);

  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(p), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(p_off), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(bim), SPROJ_OK);
  free(xs);
  free(xe);
  free(img);
  free(ref);
  free(fwd);
  free(fwd_off);
  free(back_ref);
  free(back);
}
END_TEST

/* One thread's forward projection of a chunk, then (sync = 1) its wait for the values. */
struct sync_job {
  sproj_image *img;
  sproj_proj *proj;
  const sproj_chunks *chunks;
  int chunk, sync, status;
  int submitted, done; /* read by the main thread (atomics) */
};

static void *fwd_then_sync(void *arg)
{
  struct sync_job *j = arg;
  j->status = sproj_fwd(j->img, j->proj, j->chunks, j->chunk);
  __atomic_store_n(&j->submitted, 1, __ATOMIC_SEQ_CST);
  if (j->status == SPROJ_OK && j->sync)
    j->status = sproj_proj_sync(j->proj, j->chunks, j->chunk, SPROJ_SYNC_READ);
  __atomic_store_n(&j->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

/* A thread waiting in sproj_proj_sync for its projections used to hold the vector's lock all the while, so that
 * every other thread's submission on that vector waited for it (STIR's 16 threads, one viewgram each, spent most of
 * their time so). Here the image is held on the host, so thread A's projection cannot run and A waits in its sync;
 * thread B's call on another chunk of the same vector must return meanwhile (within 20 s: it takes milliseconds).
 * Then both projections run and give the reference values. */
START_TEST(test_sync_leaves_submissions_free)
{
  struct tu_geom g = {{20, 20, 10}, {2.0f, 2.0f, 2.0f}, {-19.0f, -19.0f, -9.0f}};
  const int64_t nvox = tu_nvox(&g), n = 4000;
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *img = tu_alloc(nvox), *ref = tu_alloc(n), *fwd = tu_alloc(n);
  tu_seed(77);
  tu_fill_uniform(img, nvox, 0.0f, 1.0f);
  tu_random_lors(&g, xs, xe, n, NULL);
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, n, ref), SPROJ_OK);

  sproj_image *im;
  sproj_lors *lors;
  sproj_proj *p;
  sproj_chunks *ch;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, n), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&p, fwd, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, 2), SPROJ_OK);
  /* the chunking in use on the vector before the test proper */
  ck_assert_int_eq(sproj_fwd(im, p, ch, 0), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(p, ch, 0, SPROJ_SYNC_READ), SPROJ_OK);
  memset(fwd, 0, (size_t)n * sizeof(float));
  ck_assert_int_eq(sproj_proj_sync(p, ch, 0, SPROJ_SYNC_WRITE), SPROJ_OK);

  starpu_data_handle_t h = sproj_image_handle(im);
  ck_assert_int_eq(starpu_data_acquire(h, STARPU_W), 0);
  struct sync_job a = {im, p, ch, 0, 1, SPROJ_OK, 0, 0}, b = {im, p, ch, 1, 0, SPROJ_OK, 0, 0};
  pthread_t ta, tb;
  ck_assert_int_eq(pthread_create(&ta, NULL, fwd_then_sync, &a), 0);
  while (!__atomic_load_n(&a.submitted, __ATOMIC_SEQ_CST))
    usleep(1000);
  usleep(200000); /* A is in its sync now (had it not got there yet, B would pass without testing anything) */
  int a_waiting = !__atomic_load_n(&a.done, __ATOMIC_SEQ_CST);
  ck_assert_int_eq(pthread_create(&tb, NULL, fwd_then_sync, &b), 0);
  double waited = 0.0;
  while (!__atomic_load_n(&b.done, __ATOMIC_SEQ_CST) && waited < 20.0) {
    usleep(1000);
    waited += 0.001;
  }
  int b_returned = __atomic_load_n(&b.done, __ATOMIC_SEQ_CST);
  starpu_data_release(h);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  ck_assert_int_eq(sproj_proj_sync(p, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);
  printf("sync and submission: thread A waiting in its sync: %s; thread B's call %s %.3f s\n", a_waiting ? "yes" : "no",
         b_returned ? "returned after" : "had not returned after", waited);
  ck_assert_msg(a_waiting, "thread A's sync returned while the image was held: its projection ran without it");
  ck_assert_msg(b_returned, "thread B's call did not return while thread A waited in its sync");
  ck_assert_int_eq(a.status, SPROJ_OK);
  ck_assert_int_eq(b.status, SPROJ_OK);
  int64_t differ = 0;
  for (int64_t i = 0; i < n; i++)
    differ += memcmp(&fwd[i], &ref[i], sizeof(float)) != 0;
  ck_assert_msg(differ == 0, "%lld forward values differ from the reference", (long long)differ);

  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(p), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  free(xs);
  free(xe);
  free(img);
  free(ref);
  free(fwd);
}
END_TEST

int main(void)
{
  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s = suite_create("threads");
  TCase *tc = tcase_create("threads");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_merged_calls);
  tcase_add_test(tc, test_threads_equal_single);
  tcase_add_test(tc, test_sync_leaves_submissions_free);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  sproj_shutdown();
  return ret;
}
