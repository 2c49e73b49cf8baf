/* SPDX-License-Identifier: Apache-2.0 */
/* check_chunks.c: chunked requests equal one request; chunkings are reusable, may switch, leave uncovered LORs
 * untouched, accept submissions from several threads; sync semantics; task granularity. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define N 30000

static struct tu_geom g;
static float *img, *xs, *xe, *whole;

/* one image, one LOR set and the whole-set forward projection shared by the tests */
static void setup(void)
{
  tu_seed(99);
  tu_random_geom(&g);
  img = tu_alloc(tu_nvox(&g));
  xs = tu_alloc(3 * N);
  xe = tu_alloc(3 * N);
  whole = tu_alloc(N);
  tu_fill_uniform(img, tu_nvox(&g), 0.5f, 2.0f);
  tu_random_lors(&g, xs, xe, N, NULL);
  if (tu_fwd_whole(&g, img, xs, xe, N, whole) != SPROJ_OK) {
    fprintf(stderr, "whole-set projection failed: %s\n", sproj_last_error());
    exit(99);
  }
}

static void teardown(void)
{
  free(img);
  free(xs);
  free(xe);
  free(whole);
}

/* Uneven ranges in shuffled order with gaps: sizes 1, 2, 3, 1000, 4097, 9000, ... The LORs of the gaps keep their
 * poison; the others equal the one-request result to 1e-6 relative (the bound; each LOR is computed by
 * the same code whatever the chunking, so they are in fact identical). */
START_TEST(test_ranges_equal_one_call)
{
  const int64_t sizes[] = {1, 2, 3, 1000, 4097, 9000, 517, 33, 8000, 2047};
  enum { NC = sizeof sizes / sizeof sizes[0] };
  int64_t first[NC], count[NC];
  int64_t pos = 0;
  for (int c = 0; c < NC; c++) {
    pos += c % 3 == 0 ? 17 : 0; /* gaps before every third chunk */
    first[c] = pos;
    count[c] = sizes[c];
    pos += sizes[c];
  }
  ck_assert_int_le(pos, N);
  /* shuffle the chunk order */
  for (int c = NC - 1; c > 0; c--) {
    int j = tu_randint(0, c);
    int64_t f = first[c], n = count[c];
    first[c] = first[j];
    count[c] = count[j];
    first[j] = f;
    count[j] = n;
  }
  float *out = tu_alloc(N);
  for (int64_t i = 0; i < N; i++)
    out[i] = NAN;
  struct tu_set set;
  sproj_chunks *ch;
  ck_assert_int_eq(tu_set_register(&set, &g, img, xs, xe, N, out), SPROJ_OK);
  sproj_image *im = set.img;
  sproj_lors *lors = set.lors;
  sproj_proj *proj = set.proj;
  ck_assert_int_eq(sproj_chunks_create_ranges(&ch, lors, NC, first, count), SPROJ_OK);
  for (int c = 0; c < NC; c++)
    ck_assert_int_eq(sproj_fwd(im, proj, ch, c), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj, ch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  char *covered = calloc(N, 1);
  for (int c = 0; c < NC; c++)
    memset(covered + first[c], 1, count[c]);
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < N; i++) {
    if (!covered[i]) {
      ck_assert_msg(isnan(out[i]), "LOR %lld is in no chunk but was written", (long long)i);
      continue;
    }
    num += ((double)out[i] - whole[i]) * ((double)out[i] - whole[i]);
    den += (double)whole[i] * whole[i];
    ck_assert_msg(fabs(out[i] - whole[i]) <= 1e-6 * fabs(whole[i]), "LOR %lld: %.9g vs %.9g", (long long)i, out[i],
                  whole[i]);
  }
  ck_assert_msg(sqrt(num / den) <= 1e-6, "relative L2 difference %.3g", sqrt(num / den));
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  free(covered);
  free(out);
}
END_TEST

/* Equal blocks and a list request (all chunks, shuffled), then the same chunking reused for several iterations
 * with the image changing between them (sync WRITE, modify, project again). */
START_TEST(test_blocks_list_and_reuse)
{
  float *out = tu_alloc(N), *img2 = tu_alloc(tu_nvox(&g));
  memcpy(img2, img, tu_nvox(&g) * sizeof *img2);
  struct tu_set set;
  sproj_chunks *ch;
  ck_assert_int_eq(tu_set_register(&set, &g, img2, xs, xe, N, out), SPROJ_OK);
  sproj_image *im = set.img;
  sproj_lors *lors = set.lors;
  sproj_proj *proj = set.proj;
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, 37), SPROJ_OK);
  int list[37];
  for (int c = 0; c < 37; c++)
    list[c] = (c * 11) % 37; /* a permutation */
  for (int iter = 0; iter < 3; iter++) {
    float scale = (float)(iter + 1);
    ck_assert_int_eq(sproj_image_sync(im, SPROJ_SYNC_WRITE), SPROJ_OK);
    for (int64_t v = 0; v < tu_nvox(&g); v++)
      img2[v] = img[v] * scale; /* exact in float for scale 1, 2 (and 3: one rounding per voxel) */
    if (iter == 1) {
      ck_assert_int_eq(sproj_fwd_chunks(im, proj, ch, list, 37), SPROJ_OK);
    } else {
      for (int c = 0; c < 37; c++)
        ck_assert_int_eq(sproj_fwd(im, proj, ch, c), SPROJ_OK);
    }
    ck_assert_int_eq(sproj_proj_sync(proj, ch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
    for (int64_t i = 0; i < N; i++)
      ck_assert_msg(fabs(out[i] - scale * whole[i]) <= 2e-6 * fabs(scale * whole[i]), "iteration %d, LOR %lld: %.9g vs %.9g",
                    iter, (long long)i, out[i], scale * whole[i]);
  }
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  free(out);
  free(img2);
}
END_TEST

/* Two chunkings of one LOR set used alternately on one projection vector (StarPU switches the partition), and a
 * whole-set request in between. */
START_TEST(test_switching_chunkings)
{
  float *out = tu_alloc(N);
  struct tu_set set;
  sproj_chunks *a, *b;
  ck_assert_int_eq(tu_set_register(&set, &g, img, xs, xe, N, out), SPROJ_OK);
  sproj_image *im = set.img;
  sproj_lors *lors = set.lors;
  sproj_proj *proj = set.proj;
  ck_assert_int_eq(sproj_chunks_create_blocks(&a, lors, 5), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&b, lors, 13), SPROJ_OK);
  for (int round = 0; round < 3; round++) {
    /* host values changed behind StarPU's back would be wrong: announce it with a write sync first */
    ck_assert_int_eq(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_WRITE), SPROJ_OK);
    for (int64_t i = 0; i < N; i++)
      out[i] = NAN;
    ck_assert_int_eq(sproj_fwd(im, proj, a, 0), SPROJ_OK);
    ck_assert_int_eq(sproj_fwd(im, proj, b, SPROJ_ALL_CHUNKS), SPROJ_OK);
    ck_assert_int_eq(sproj_fwd(im, proj, a, 4), SPROJ_OK);
    if (round == 2)
      ck_assert_int_eq(sproj_fwd(im, proj, NULL, SPROJ_ALL_CHUNKS), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
    for (int64_t i = 0; i < N; i++)
      ck_assert_msg(out[i] == whole[i], "round %d, LOR %lld: %.9g vs %.9g", round, (long long)i, out[i], whole[i]);
  }
  ck_assert_int_eq(sproj_chunks_destroy(a), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(b), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  free(out);
}
END_TEST

struct fwd_job {
  sproj_image *img;
  sproj_proj *proj;
  sproj_chunks *chunks;
  int thread, nthreads, nchunks;
  int status;
};

static void *fwd_thread(void *arg)
{
  struct fwd_job *job = arg;
  job->status = SPROJ_OK;
  for (int c = job->thread; c < job->nchunks && job->status == SPROJ_OK; c += job->nthreads)
    job->status = sproj_fwd(job->img, job->proj, job->chunks, c);
  return NULL;
}

/* 8 host threads submit forward projections of 300 small chunks of one vector at once. */
START_TEST(test_threads_submit)
{
  float *out = tu_alloc(N);
  for (int64_t i = 0; i < N; i++)
    out[i] = NAN;
  struct tu_set set;
  sproj_chunks *ch;
  ck_assert_int_eq(tu_set_register(&set, &g, img, xs, xe, N, out), SPROJ_OK);
  sproj_image *im = set.img;
  sproj_lors *lors = set.lors;
  sproj_proj *proj = set.proj;
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, 300), SPROJ_OK);
  pthread_t th[8];
  struct fwd_job jobs[8];
  for (int t = 0; t < 8; t++) {
    jobs[t] = (struct fwd_job){im, proj, ch, t, 8, 300, -1};
    pthread_create(&th[t], NULL, fwd_thread, &jobs[t]);
  }
  for (int t = 0; t < 8; t++) {
    pthread_join(th[t], NULL);
    ck_assert_int_eq(jobs[t].status, SPROJ_OK);
  }
  ck_assert_int_eq(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int64_t i = 0; i < N; i++)
    ck_assert_msg(out[i] == whole[i], "LOR %lld: %.9g vs %.9g", (long long)i, out[i], whole[i]);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  free(out);
}
END_TEST

/* Values changed on the host after a write sync are the ones back projected. */
START_TEST(test_sync_write_then_back)
{
  const int64_t nvox = tu_nvox(&g);
  float *values = tu_alloc(N), *bimg = tu_alloc(nvox);
  double *ref = calloc(nvox, sizeof *ref);
  for (int64_t i = 0; i < N; i++)
    values[i] = 1.0f;
  memset(bimg, 0, nvox * sizeof *bimg);
  struct tu_set set;
  sproj_chunks *ch;
  ck_assert_int_eq(tu_set_register(&set, &g, bimg, xs, xe, N, values), SPROJ_OK);
  sproj_image *im = set.img;
  sproj_lors *lors = set.lors;
  sproj_proj *proj = set.proj;
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, 6), SPROJ_OK);
  /* bring chunk 2 to wherever it would be used, then change it on the host */
  ck_assert_int_eq(sproj_proj_upload(proj, ch, 2, SPROJ_ALL_GPUS), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj, ch, 2, SPROJ_SYNC_WRITE), SPROJ_OK);
  int64_t first, count;
  ck_assert_int_eq(sproj_chunks_range(ch, 2, &first, &count), SPROJ_OK);
  /* ambiguous LORs (see testutil.h) get 0 so that the reference comparison is exact in meaning */
  for (int64_t i = first; i < first + count; i++)
    values[i] = tu_ref_ambiguous(&g, xs + 3 * i, xe + 3 * i) ? 0.0f : (float)tu_uniform(0.0, 3.0);
  ck_assert_int_eq(sproj_back(im, proj, ch, 2), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(im, SPROJ_SYNC_READ), SPROJ_OK);
  tu_ref_back(ref, &g, xs + 3 * first, xe + 3 * first, values + first, count);
  double rel = tu_rel_l2_fd(bimg, ref, nvox);
  /* float accumulation of thousands of contributions per voxel: 1e-5, the bound for back projection */
  ck_assert_msg(rel <= 1e-5, "back projection of the modified values: relative L2 difference %.3g", rel);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  free(values);
  free(bimg);
  free(ref);
}
END_TEST

/* Many small chunks (3000 ranges of 10 LORs: the vectors are cut in two levels, groups of pieces and the pieces):
 * every chunk's forward values equal the one-request result, a chunk changed on the host is back projected as the
 * reference says, a whole-vector sync gathers every chunk, and switching to another chunking and back works. */
START_TEST(test_many_chunks_two_levels)
{
  enum { NC = 3000, LEN = 10 };
  const int64_t nvox = tu_nvox(&g);
  float *values = tu_alloc(N), *bimg = tu_alloc(nvox);
  double *ref = calloc(nvox, sizeof *ref);
  int64_t *first = malloc(NC * sizeof *first), *count = malloc(NC * sizeof *count);
  for (int64_t i = 0; i < N; i++)
    values[i] = NAN;
  for (int c = 0; c < NC; c++) {
    first[c] = (int64_t)c * LEN;
    count[c] = LEN;
  }
  memset(bimg, 0, nvox * sizeof *bimg);
  struct tu_set set, fset;
  float *fimg = tu_alloc(nvox);
  memcpy(fimg, img, nvox * sizeof *fimg);
  ck_assert_int_eq(tu_set_register(&fset, &g, fimg, xs, xe, N, values), SPROJ_OK);
  sproj_chunks *ch, *blocks;
  ck_assert_int_eq(sproj_chunks_create_ranges(&ch, fset.lors, NC, first, count), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&blocks, fset.lors, 3), SPROJ_OK);
  /* every chunk on its own, in an order that is not the LORs' */
  for (int k = 0; k < NC; k++) {
    int c = (int)((int64_t)k * 1237 % NC);
    ck_assert_int_eq(sproj_fwd(fset.img, fset.proj, ch, c), SPROJ_OK);
  }
  for (int c = 0; c < NC; c += 7) {
    ck_assert_int_eq(sproj_proj_sync(fset.proj, ch, c, SPROJ_SYNC_READ), SPROJ_OK);
    for (int64_t i = first[c]; i < first[c] + LEN; i++)
      ck_assert_msg(fabsf(values[i] - whole[i]) <= 1e-6f * fabsf(whole[i]), "chunk %d, LOR %lld: %g against %g", c,
                    (long long)i, (double)values[i], (double)whole[i]);
  }
  /* another chunking, then this one again */
  ck_assert_int_eq(sproj_fwd(fset.img, fset.proj, blocks, 1), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd(fset.img, fset.proj, ch, 5), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(fset.proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int64_t i = 0; i < (int64_t)NC * LEN; i++)
    ck_assert_msg(fabsf(values[i] - whole[i]) <= 1e-6f * fabsf(whole[i]), "LOR %lld after the whole-vector sync: %g "
                  "against %g", (long long)i, (double)values[i], (double)whole[i]);
  ck_assert_int_eq(sproj_chunks_destroy(blocks), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&fset), SPROJ_OK);

  /* back projection of one chunk changed on the host, through the two-level plan */
  for (int64_t i = 0; i < N; i++)
    values[i] = 1.0f;
  ck_assert_int_eq(tu_set_register(&set, &g, bimg, xs, xe, N, values), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_ranges(&ch, set.lors, NC, first, count), SPROJ_OK);
  const int c = 2345;
  ck_assert_int_eq(sproj_proj_upload(set.proj, ch, c, SPROJ_ALL_GPUS), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(set.proj, ch, c, SPROJ_SYNC_WRITE), SPROJ_OK);
  for (int64_t i = first[c]; i < first[c] + LEN; i++)
    values[i] = tu_ref_ambiguous(&g, xs + 3 * i, xe + 3 * i) ? 0.0f : (float)tu_uniform(0.5, 3.0);
  ck_assert_int_eq(sproj_back(set.img, set.proj, ch, c), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(set.img, SPROJ_SYNC_READ), SPROJ_OK);
  tu_ref_back(ref, &g, xs + 3 * first[c], xe + 3 * first[c], values + first[c], LEN);
  double rel = tu_rel_l2_fd(bimg, ref, nvox);
  ck_assert_msg(rel <= 1e-5, "back projection of chunk %d: relative L2 difference %.3g", c, rel);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  free(values);
  free(bimg);
  free(fimg);
  free(ref);
  free(first);
  free(count);
}
END_TEST

/* Calls inside a batch are merged into few tasks and give the same values; a sync inside the batch sees the work
 * collected so far; a call on another vector submits what was collected. */
START_TEST(test_batch)
{
  float *out = tu_alloc(N), *out2 = tu_alloc(N);
  for (int64_t i = 0; i < N; i++)
    out[i] = out2[i] = NAN;
  struct tu_set set;
  sproj_proj *proj2;
  sproj_chunks *ch;
  ck_assert_int_eq(tu_set_register(&set, &g, img, xs, xe, N, out), SPROJ_OK);
  sproj_image *im = set.img;
  sproj_lors *lors = set.lors;
  sproj_proj *proj = set.proj;
  ck_assert_int_eq(sproj_proj_register(&proj2, out2, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, 300), SPROJ_OK);
  int64_t before = tu_total_tasks();
  ck_assert_int_eq(sproj_batch_begin(), SPROJ_OK);
  ck_assert_int_eq(sproj_batch_begin(), SPROJ_OK); /* nested */
  for (int c = 0; c < 300; c++)
    ck_assert_int_eq(sproj_fwd(im, proj, ch, c), SPROJ_OK);
  ck_assert_int_eq(sproj_batch_end(), SPROJ_OK);
  ck_assert_int_eq(tu_total_tasks() - before, 0); /* still collected */
  ck_assert_int_eq(sproj_batch_end(), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  int64_t tasks = tu_total_tasks() - before;
  printf("batch of 300 calls: %lld tasks\n", (long long)tasks);
  ck_assert_msg(tasks >= 1 && tasks <= 30, "%lld tasks for a batch of 300 small chunks", (long long)tasks);
  for (int64_t i = 0; i < N; i++)
    ck_assert_msg(out[i] == whole[i], "LOR %lld: %.9g vs %.9g", (long long)i, out[i], whole[i]);

  ck_assert_int_eq(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_WRITE), SPROJ_OK);
  for (int64_t i = 0; i < N; i++)
    out[i] = NAN;
  int64_t first, count;
  ck_assert_int_eq(sproj_chunks_range(ch, 7, &first, &count), SPROJ_OK);
  ck_assert_int_eq(sproj_batch_begin(), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd(im, proj, ch, 7), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj, ch, 7, SPROJ_SYNC_READ), SPROJ_OK);
  for (int64_t i = first; i < first + count; i++)
    ck_assert_msg(out[i] == whole[i], "sync inside a batch: LOR %lld is %.9g", (long long)i, out[i]);
  for (int c = 0; c < 300; c++) {
    ck_assert_int_eq(sproj_fwd(im, proj, ch, c), SPROJ_OK);
    ck_assert_int_eq(sproj_fwd(im, proj2, ch, c), SPROJ_OK); /* alternating vectors: every call submits */
  }
  ck_assert_int_eq(sproj_batch_end(), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj2, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  for (int64_t i = 0; i < N; i++)
    ck_assert_msg(out[i] == whole[i] && out2[i] == whole[i], "LOR %lld: %.9g / %.9g vs %.9g", (long long)i, out[i],
                  out2[i], whole[i]);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj2), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  free(out);
  free(out2);
}
END_TEST

/* A single whole-set request is cut into enough tasks for every worker, and task_lors bounds task size. */
START_TEST(test_granularity)
{
  float *out = tu_alloc(N);
  int64_t before = tu_total_tasks();
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, N, out), SPROJ_OK);
  int64_t tasks = tu_total_tasks() - before;
  int workers = sproj_num_gpus() > 0 ? sproj_num_gpus() : sproj_num_cpu_workers();
  printf("whole-set request of %d LORs: %lld tasks for %d CPU workers and %d GPUs\n", N, (long long)tasks,
         sproj_num_cpu_workers(), sproj_num_gpus());
  ck_assert_msg(tasks >= workers, "%lld tasks for %d workers", (long long)tasks, workers);

  int64_t saved = sproj_get_task_lors();
  ck_assert_int_eq(sproj_set_task_lors(1000), SPROJ_OK);
  before = tu_total_tasks();
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, N, out), SPROJ_OK);
  tasks = tu_total_tasks() - before;
  ck_assert_msg(tasks >= N / 1000, "task_lors 1000: %lld tasks for %d LORs", (long long)tasks, N);
  for (int64_t i = 0; i < N; i++)
    ck_assert_msg(out[i] == whole[i], "LOR %lld differs with small tasks", (long long)i);
  ck_assert_int_eq(sproj_set_task_lors(saved), SPROJ_OK);
  free(out);
}
END_TEST

int main(void)
{
  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  setup();
  Suite *s = suite_create("chunks");
  TCase *tc = tcase_create("chunks");
  tcase_add_test(tc, test_ranges_equal_one_call);
  tcase_add_test(tc, test_blocks_list_and_reuse);
  tcase_add_test(tc, test_switching_chunkings);
  tcase_add_test(tc, test_threads_submit);
  tcase_add_test(tc, test_sync_write_then_back);
  tcase_add_test(tc, test_many_chunks_two_levels);
  tcase_add_test(tc, test_batch);
  tcase_add_test(tc, test_granularity);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  teardown();
  sproj_shutdown();
  return ret;
}
