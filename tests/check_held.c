/* SPDX-License-Identifier: Apache-2.0 */
/* check_held.c: listmode events whose order the library holds (sproj_lors_hold_order) against the same events
 * without it: forward values bit for bit, back projections within float rounding (reproducible mode: bit for bit),
 * in both TOF conventions, with pieces of several sizes and more than the gather serves, after chunked requests, from
 * several threads at once, with per-event TOF sigma and offset; the requests that go the ordinary way; bad input;
 * the memory given back; and the library's own values discarded while tasks still use them. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../src/core/internal.h"
#include "starproj_parallelproj.h"
#include "testutil.h"

#define N 60001

static struct tu_geom g;
static float *img, *xs, *xe;
static int16_t *bins, *any_bins; /* bins in 0 .. num_bins-1; and in libparallelproj's convention, of either sign */
static struct sproj_tof_params par;

static void setup(void)
{
  tu_seed(4242);
  tu_random_geom(&g);
  img = tu_alloc(tu_nvox(&g));
  xs = tu_alloc(3 * N);
  xe = tu_alloc(3 * N);
  tu_fill_uniform(img, tu_nvox(&g), 0.5f, 2.0f);
  tu_random_lors(&g, xs, xe, N, NULL);
  double vs = (g.vs[0] + g.vs[1] + g.vs[2]) / 3.0;
  par.bin_width = (float)(2.0 * vs);
  par.sigma = (float)(1.5 * vs);
  par.num_sigmas = 3.0f;
  par.center_offset = 0.0f;
  par.num_bins = 41;
  bins = malloc(N * sizeof *bins);
  any_bins = malloc(N * sizeof *any_bins);
  for (int i = 0; i < N; i++) {
    bins[i] = (int16_t)tu_randint(12, 28); /* near the middle: most events reach the image */
    any_bins[i] = (int16_t)(i % 50 == 0 ? -3 : tu_randint(12, 28)); /* some below bin 0 */
  }
}

/* One set of events (held or not) with its image, values and TOF parameters. */
struct lm {
  sproj_image *im;
  sproj_lors *ev;
  sproj_proj *p;
  sproj_tof *tof;
};

static void lm_open(struct lm *s, float *image, float *values, const int16_t *b, int convention, int hold,
                    const float *sigma)
{
  ck_assert_int_eq(sproj_image_register(&s->im, image, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_events_convention(&s->ev, xs, xe, b, N, convention), SPROJ_OK);
  if (hold)
    ck_assert_int_eq(sproj_lors_hold_order(s->ev, g.vs), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&s->p, values, s->ev), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&s->tof, &par, sigma ? s->ev : NULL, sigma, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_set_convention(s->tof, convention), SPROJ_OK);
}

static void lm_close(struct lm *s)
{
  ck_assert_int_eq(sproj_proj_unregister(s->p), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(s->tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(s->ev), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(s->im), SPROJ_OK);
}

/* Whole-set forward then back projection (of values scaled as given) with or without the held order. */
static void fwd_back(int hold, int convention, const float *sigma, float *fwd, float *back, const float *weights)
{
  const int16_t *b = convention == SPROJ_TOF_CONVENTION_PARALLELPROJ ? any_bins : bins;
  struct lm s;
  float *image = tu_alloc(tu_nvox(&g));
  memcpy(image, img, tu_nvox(&g) * sizeof *image);
  lm_open(&s, image, fwd, b, convention, hold, sigma);
  ck_assert_int_eq(sproj_fwd_tof_lm(s.im, s.p, NULL, SPROJ_ALL_CHUNKS, s.tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(s.p, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  lm_close(&s);
  float *values = tu_alloc(N);
  for (int i = 0; i < N; i++)
    values[i] = weights[i];
  lm_open(&s, back, values, b, convention, hold, sigma);
  ck_assert_int_eq(sproj_back_tof_lm(s.im, s.p, NULL, 0, s.tof), SPROJ_OK);
  lm_close(&s);
  free(values);
  free(image);
}

/* Loop 0: starproj's convention; 1: libparallelproj's; 2: starproj's with tasks of 997 events (61 pieces of unequal
 * sizes in the whole set); 3: tasks of 150 events (more pieces than one gather reads: the ordinary way). Forward
 * values bit for bit; back projections within float rounding, and <A x, y> = <x, A^T y> on the held path. */
START_TEST(test_held_equals_ordinary)
{
  int convention = _i == 1 ? SPROJ_TOF_CONVENTION_PARALLELPROJ : SPROJ_TOF_CONVENTION_STARPROJ;
  int64_t task_lors = sproj_get_task_lors();
  if (_i >= 2)
    ck_assert_int_eq(sproj_set_task_lors(_i == 2 ? 997 : 150), SPROJ_OK);
  int64_t nvox = tu_nvox(&g);
  float *f0 = tu_alloc(N), *f1 = tu_alloc(N), *b0 = tu_alloc(nvox), *b1 = tu_alloc(nvox), *w = tu_alloc(N);
  tu_fill_uniform(w, N, 0.1f, 3.0f);
  memset(b0, 0, nvox * sizeof *b0);
  memset(b1, 0, nvox * sizeof *b1);
  fwd_back(0, convention, NULL, f0, b0, w);
  long long served = sproj_held_served();
  fwd_back(1, convention, NULL, f1, b1, w);
  ck_assert_int_eq(sproj_set_task_lors(task_lors), SPROJ_OK);
  /* the forward and the back projection went the held way, except with more pieces than a gather reads */
  ck_assert_int_eq(sproj_held_served() - served, _i == 3 ? 0 : 2);
  int64_t nonzero = 0;
  for (int i = 0; i < N; i++) {
    ck_assert_msg(f1[i] == f0[i], "event %d: held %.9g, ordinary %.9g", i, f1[i], f0[i]);
    nonzero += f0[i] != 0.0f;
  }
  ck_assert_msg(nonzero > N / 4, "only %lld of %d events project to a value", (long long)nonzero, N);
  double rel = tu_rel_l2_ff(b1, b0, nvox);
  ck_assert_msg(rel < 1e-6, "back projection: relative L2 %.3g between held and ordinary", rel);
  ck_assert_msg(tu_max_abs(b0, nvox) > 0.0, "nothing back projected");
  /* adjointness of the held path: <A img, w> against <img, A^T w> */
  double fx = tu_dot_ff(f1, w, N), xb = tu_dot_ff(img, b1, nvox);
  ck_assert_msg(fabs(fx - xb) <= 1e-5 * fabs(fx), "<Ax, y> %.12g, <x, A^T y> %.12g", fx, xb);
  free(f0);
  free(f1);
  free(b0);
  free(b1);
  free(w);
}
END_TEST

/* Reproducible mode: the held path's back projection has the ordinary path's bits. */
START_TEST(test_held_reproducible)
{
  int64_t nvox = tu_nvox(&g);
  float *b[2], *w = tu_alloc(N);
  tu_fill_uniform(w, N, 0.1f, 3.0f);
  for (int hold = 0; hold < 2; hold++) {
    b[hold] = tu_alloc(nvox);
    memset(b[hold], 0, nvox * sizeof(float));
    struct lm s;
    lm_open(&s, b[hold], w, bins, SPROJ_TOF_CONVENTION_STARPROJ, hold, NULL);
    ck_assert_int_eq(sproj_image_set_reproducible(s.im, 1), SPROJ_OK);
    ck_assert_int_eq(sproj_back_tof_lm(s.im, s.p, NULL, SPROJ_ALL_CHUNKS, s.tof), SPROJ_OK);
    lm_close(&s);
  }
  for (int64_t v = 0; v < nvox; v++)
    ck_assert_msg(b[1][v] == b[0][v], "voxel %lld: held %.9g, ordinary %.9g", (long long)v, b[1][v], b[0][v]);
  free(b[0]);
  free(b[1]);
  free(w);
}
END_TEST

/* Chunked requests go the ordinary way, and mixing them with whole-set requests on one vector gives every event its
 * value. */
START_TEST(test_held_mixed_requests)
{
  float *f0 = tu_alloc(N), *f1 = tu_alloc(N), *b0 = tu_alloc(tu_nvox(&g)), *w = tu_alloc(N);
  tu_fill_uniform(w, N, 0.1f, 3.0f);
  memset(b0, 0, tu_nvox(&g) * sizeof *b0);
  long long served;

  /* chunks, then the whole set, then chunks again, into one vector: the image changes in between */
  fwd_back(0, SPROJ_TOF_CONVENTION_STARPROJ, NULL, f0, b0, w);
  struct lm s;
  float *image = tu_alloc(tu_nvox(&g));
  memcpy(image, img, tu_nvox(&g) * sizeof *image);
  lm_open(&s, image, f1, bins, SPROJ_TOF_CONVENTION_STARPROJ, 1, NULL);
  sproj_chunks *ch;
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, s.ev, 7), SPROJ_OK);
  for (int64_t v = 0; v < tu_nvox(&g); v++)
    image[v] *= 2.0f;
  ck_assert_int_eq(sproj_image_sync(s.im, SPROJ_SYNC_WRITE), SPROJ_OK);
  served = sproj_held_served();
  ck_assert_int_eq(sproj_fwd_tof_lm(s.im, s.p, ch, SPROJ_ALL_CHUNKS, s.tof), SPROJ_OK);
  ck_assert_int_eq(sproj_held_served(), served); /* chunks: the ordinary way */
  ck_assert_int_eq(sproj_proj_sync(s.p, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int i = 0; i < N; i++)
    ck_assert_msg(f1[i] == 2.0f * f0[i], "chunked, event %d: %.9g vs 2 x %.9g", i, f1[i], f0[i]);
  for (int64_t v = 0; v < tu_nvox(&g); v++)
    image[v] = img[v];
  ck_assert_int_eq(sproj_image_sync(s.im, SPROJ_SYNC_WRITE), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_lm(s.im, s.p, NULL, SPROJ_ALL_CHUNKS, s.tof), SPROJ_OK);
  ck_assert_int_eq(sproj_held_served(), served + 1);
  ck_assert_int_eq(sproj_proj_sync(s.p, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int i = 0; i < N; i++)
    ck_assert_msg(f1[i] == f0[i], "whole set after chunks, event %d: %.9g vs %.9g", i, f1[i], f0[i]);
  ck_assert_int_eq(sproj_fwd_tof_lm(s.im, s.p, ch, 3, s.tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(s.p, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int i = 0; i < N; i++)
    ck_assert_msg(f1[i] == f0[i], "one chunk after the whole set, event %d", i);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  lm_close(&s);
  free(image);
  free(f0);
  free(f1);
  free(b0);
  free(w);
}
END_TEST

/* Per-event sigma and offset (in the caller's order) go with the held order as copies in it: forward values bit for
 * bit, back projections to float rounding. Then a second parameter set with other arrays, registered after the first
 * is freed (it may take its address), gets its own copies, not the first one's. */
START_TEST(test_held_per_event_tof)
{
  int64_t nvox = tu_nvox(&g);
  float *sigma = tu_alloc(N), *offset = tu_alloc(N), *f0 = tu_alloc(N), *f1 = tu_alloc(N), *b0 = tu_alloc(nvox),
        *b1 = tu_alloc(nvox), *w = tu_alloc(N);
  tu_fill_uniform(w, N, 0.1f, 3.0f);
  sproj_image *im, *bi[2];
  sproj_lors *ev[2];
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  for (int hold = 0; hold < 2; hold++)
    ck_assert_int_eq(sproj_lors_register_events(&ev[hold], xs, xe, bins, N), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_hold_order(ev[1], g.vs), SPROJ_OK);
  for (int round = 0; round < 3; round++) {
    /* round 0: sigma per event; 1: both; 2: the offset alone */
    for (int i = 0; i < N; i++) {
      sigma[i] = par.sigma * (float)tu_uniform(0.7, 1.4);
      offset[i] = par.bin_width * (float)tu_uniform(-0.8, 0.8);
    }
    const float *sg = round < 2 ? sigma : NULL, *of = round > 0 ? offset : NULL;
    float *f[2] = {f0, f1}, *b[2] = {b0, b1};
    long long served = sproj_held_served();
    for (int hold = 0; hold < 2; hold++) {
      sproj_tof *tof;
      sproj_proj *p, *q;
      memset(b[hold], 0, nvox * sizeof(float));
      ck_assert_int_eq(sproj_image_register(&bi[hold], b[hold], g.n, g.vs, g.origin), SPROJ_OK);
      ck_assert_int_eq(sproj_tof_register(&tof, &par, ev[hold], sg, of), SPROJ_OK);
      ck_assert_int_eq(sproj_proj_register(&p, f[hold], ev[hold]), SPROJ_OK);
      ck_assert_int_eq(sproj_proj_register(&q, w, ev[hold]), SPROJ_OK);
      ck_assert_int_eq(sproj_fwd_tof_lm(im, p, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
      ck_assert_int_eq(sproj_back_tof_lm(bi[hold], q, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
      ck_assert_int_eq(sproj_proj_unregister(p), SPROJ_OK);
      ck_assert_int_eq(sproj_proj_unregister(q), SPROJ_OK);
      ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
      ck_assert_int_eq(sproj_image_unregister(bi[hold]), SPROJ_OK);
    }
    ck_assert_int_eq(sproj_held_served() - served, 2);
    int64_t nonzero = 0;
    for (int i = 0; i < N; i++) {
      ck_assert_msg(f1[i] == f0[i], "round %d, event %d: held %.9g, ordinary %.9g", round, i, f1[i], f0[i]);
      nonzero += f0[i] != 0.0f;
    }
    ck_assert_int_gt(nonzero, N / 4);
    double rel = tu_rel_l2_ff(b1, b0, nvox);
    ck_assert_msg(rel < 1e-6, "round %d: back projection relative L2 %.3g", round, rel);
  }
  for (int hold = 0; hold < 2; hold++)
    ck_assert_int_eq(sproj_lors_unregister(ev[hold]), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  free(sigma);
  free(offset);
  free(f0);
  free(f1);
  free(b0);
  free(b1);
  free(w);
}
END_TEST

/* Several threads project the same held events into vectors of their own at once, forward and back. */
struct thread_job {
  sproj_image *im, *back;
  float *back_data;
  sproj_lors *ev;
  sproj_tof *tof;
  float *values;
  int ok;
};

static void *thread_main(void *arg)
{
  struct thread_job *j = arg;
  sproj_proj *p;
  j->ok = sproj_proj_register(&p, j->values, j->ev) == SPROJ_OK;
  for (int r = 0; r < 3 && j->ok; r++)
    j->ok = sproj_fwd_tof_lm(j->im, p, NULL, SPROJ_ALL_CHUNKS, j->tof) == SPROJ_OK &&
            sproj_back_tof_lm(j->back, p, NULL, SPROJ_ALL_CHUNKS, j->tof) == SPROJ_OK;
  j->ok = j->ok && sproj_proj_unregister(p) == SPROJ_OK;
  return NULL;
}

START_TEST(test_held_threads)
{
  enum { T = 4 };
  int64_t nvox = tu_nvox(&g);
  float *f0 = tu_alloc(N), *b0 = tu_alloc(nvox), *ones = tu_alloc(N);
  memset(b0, 0, nvox * sizeof *b0);
  for (int i = 0; i < N; i++)
    ones[i] = 1.0f;
  fwd_back(0, SPROJ_TOF_CONVENTION_STARPROJ, NULL, f0, b0, ones);
  sproj_lors *ev;
  sproj_image *im;
  sproj_tof *tof;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_events(&ev, xs, xe, bins, N), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_hold_order(ev, g.vs), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&tof, &par, NULL, NULL, NULL), SPROJ_OK);
  struct thread_job job[T];
  pthread_t th[T];
  for (int t = 0; t < T; t++) {
    job[t] = (struct thread_job){.im = im, .ev = ev, .tof = tof, .values = tu_alloc(N), .back_data = tu_alloc(nvox)};
    memset(job[t].back_data, 0, nvox * sizeof(float));
    ck_assert_int_eq(sproj_image_register(&job[t].back, job[t].back_data, g.n, g.vs, g.origin), SPROJ_OK);
  }
  long long served = sproj_held_served();
  for (int t = 0; t < T; t++)
    ck_assert_int_eq(pthread_create(&th[t], NULL, thread_main, &job[t]), 0);
  for (int t = 0; t < T; t++)
    pthread_join(th[t], NULL);
  ck_assert_int_eq(sproj_held_served() - served, 6 * T);
  /* three back projections of the forward values each: 3 x A^T (A img) */
  float *fb = tu_alloc(nvox), *expect = tu_alloc(nvox);
  memset(fb, 0, nvox * sizeof *fb);
  struct lm s;
  lm_open(&s, fb, f0, bins, SPROJ_TOF_CONVENTION_STARPROJ, 0, NULL);
  ck_assert_int_eq(sproj_back_tof_lm(s.im, s.p, NULL, SPROJ_ALL_CHUNKS, s.tof), SPROJ_OK);
  lm_close(&s);
  for (int64_t v = 0; v < nvox; v++)
    expect[v] = 3.0f * fb[v];
  for (int t = 0; t < T; t++) {
    ck_assert_msg(job[t].ok, "thread %d: %s", t, sproj_last_error());
    for (int i = 0; i < N; i++)
      ck_assert_msg(job[t].values[i] == f0[i], "thread %d, event %d: %.9g vs %.9g", t, i, job[t].values[i], f0[i]);
    ck_assert_int_eq(sproj_image_sync(job[t].back, SPROJ_SYNC_READ), SPROJ_OK);
    double rel = tu_rel_l2_ff(job[t].back_data, expect, nvox);
    ck_assert_msg(rel < 1e-6, "thread %d: back projections relative L2 %.3g", t, rel);
    ck_assert_int_eq(sproj_image_unregister(job[t].back), SPROJ_OK);
    free(job[t].back_data);
    free(job[t].values);
  }
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(ev), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  free(f0);
  free(b0);
  free(ones);
  free(fb);
  free(expect);
}
END_TEST

START_TEST(test_held_bad_input)
{
  int live = sproj_live_objects();
  sproj_lors *lors, *ev;
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, N), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_events(&ev, xs, xe, bins, N), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_hold_order(NULL, g.vs), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_lors_hold_order(ev, NULL), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_lors_hold_order(lors, g.vs), SPROJ_ERR_INVALID);
  const float zero[3] = {g.vs[0], 0.0f, g.vs[2]}, bad[3] = {NAN, g.vs[1], g.vs[2]};
  ck_assert_int_eq(sproj_lors_hold_order(ev, zero), SPROJ_ERR_VOXEL_SIZE);
  ck_assert_int_eq(sproj_lors_hold_order(ev, bad), SPROJ_ERR_VOXEL_SIZE);
  ck_assert_int_eq(sproj_live_objects(), live + 2); /* the refused calls held nothing */
  ck_assert_int_eq(sproj_lors_drop_order(NULL), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_lors_drop_order(ev), SPROJ_OK); /* none held */
  ck_assert_int_eq(sproj_lors_hold_order(ev, g.vs), SPROJ_OK);
  int held = sproj_live_objects();
  ck_assert_int_gt(held, live + 2);
  ck_assert_int_eq(sproj_lors_hold_order(ev, g.vs), SPROJ_OK); /* a second call holds nothing more */
  ck_assert_int_eq(sproj_live_objects(), held);
  ck_assert_int_eq(sproj_lors_drop_order(ev), SPROJ_OK);
  ck_assert_int_eq(sproj_live_objects(), live + 2);
  ck_assert_int_eq(sproj_lors_hold_order(ev, g.vs), SPROJ_OK);
  /* a vector of the set keeps it, the order goes with it */
  sproj_proj *p;
  float *v = tu_alloc(N);
  ck_assert_int_eq(sproj_proj_register(&p, v, ev), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(ev), SPROJ_ERR_BUSY);
  ck_assert_int_eq(sproj_proj_unregister(p), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(ev), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_live_objects(), live);
  free(v);
}
END_TEST

/* Values of the library's own (sproj_proj_create) discarded while CPU tasks still write them: the discard waits for
 * the tasks before their memory goes (it once unmapped it under them). */
START_TEST(test_discard_waits_for_tasks)
{
  sproj_image *im;
  sproj_lors *ev;
  sproj_tof *tof;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_events(&ev, xs, xe, bins, N), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&tof, &par, NULL, NULL, NULL), SPROJ_OK);
  for (int r = 0; r < 4; r++) {
    sproj_proj *p;
    ck_assert_int_eq(sproj_proj_create(&p, ev, 1), SPROJ_OK);
    for (int k = 0; k < 8; k++) /* enough queued work that the tasks still run when the discard comes */
      ck_assert_int_eq(sproj_fwd_tof_lm(im, p, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
    if (r % 2)
      ck_assert_int_eq(sproj_back_tof_lm(im, p, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_discard(p), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(ev), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
}
END_TEST

int main(void)
{
  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  setup();
  Suite *s = suite_create("held order");
  TCase *tc = tcase_create("held");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_held_equals_ordinary, 0, 4);
  tcase_add_test(tc, test_held_reproducible);
  tcase_add_test(tc, test_held_mixed_requests);
  tcase_add_test(tc, test_held_per_event_tof);
  tcase_add_test(tc, test_held_threads);
  tcase_add_test(tc, test_held_bad_input);
  tcase_add_test(tc, test_discard_waits_for_tasks);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  sproj_shutdown();
  return ret;
}
