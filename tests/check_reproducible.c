/* SPDX-License-Identifier: Apache-2.0 */
/* check_reproducible.c: back projections in reproducible mode give the same bits for any task size, any order of
 * the chunks in a call and any number of workers, and stay within a fixed-point rounding of the default mode. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

#define NV 12
#define PER_VIEW 700
#define NL (NV * PER_VIEW)
#define NBINS 9

static struct tu_geom geo = {{20, 18, 14}, {2.0f, 2.2f, 2.6f}, {-19.0f, -18.7f, -16.9f}};
static float *xs, *xe, *values, *tof_values;
static int16_t *bins;

enum kind { NONTOF, TOF_SINO, TOF_LM };

/* Back projection of every chunk (listed in the given order; order NULL: NL / 50 chunks of 50 LORs, one call each,
 * which the library merges while its workers are busy) into a zeroed image; returns the image (caller frees). */
static float *back_all(enum kind kind, int reproducible, int64_t task_lors, const int *order)
{
  int64_t nvox = tu_nvox(&geo);
  float *image = tu_alloc(nvox);
  memset(image, 0, nvox * sizeof(float));
  int64_t first[NV], count[NV];
  for (int v = 0; v < NV; v++) {
    first[v] = (int64_t)v * PER_VIEW;
    count[v] = PER_VIEW;
  }
  sproj_image *img;
  sproj_lors *lors;
  sproj_chunks *chunks;
  sproj_proj *proj;
  sproj_tof *tof = NULL;
  struct sproj_tof_params par = {7.0f, NBINS, 3.0f, 6.0f, 0.0f};
  ck_assert_int_eq(sproj_set_task_lors(task_lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&img, image, geo.n, geo.vs, geo.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_set_reproducible(img, reproducible), SPROJ_OK);
  if (kind == TOF_LM)
    ck_assert_int_eq(sproj_lors_register_events(&lors, xs, xe, bins, NL), SPROJ_OK);
  else
    ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, NL), SPROJ_OK);
  if (order)
    ck_assert_int_eq(sproj_chunks_create_ranges(&chunks, lors, NV, first, count), SPROJ_OK);
  else
    ck_assert_int_eq(sproj_chunks_create_blocks(&chunks, lors, NL / 50), SPROJ_OK);
  if (kind != NONTOF)
    ck_assert_int_eq(sproj_tof_register(&tof, &par, NULL, NULL, NULL), SPROJ_OK);
  if (kind == TOF_SINO)
    ck_assert_int_eq(sproj_proj_register_tof(&proj, tof_values, lors, NBINS), SPROJ_OK);
  else
    ck_assert_int_eq(sproj_proj_register(&proj, values, lors), SPROJ_OK);
  for (int c = 0; c < (order ? 1 : NL / 50); c++) {
    const int *list = order ? order : &c;
    int num = order ? NV : 1;
    int rc = kind == NONTOF     ? sproj_back_chunks(img, proj, chunks, list, num)
             : kind == TOF_SINO ? sproj_back_tof_sino_chunks(img, proj, chunks, list, num, tof)
                                : sproj_back_tof_lm_chunks(img, proj, chunks, list, num, tof);
    ck_assert_int_eq(rc, SPROJ_OK);
  }
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(chunks), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  ck_assert_int_eq(sproj_set_task_lors(0), SPROJ_OK);
  return image;
}

static const int in_order[NV] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static const int shuffled[NV] = {7, 2, 11, 0, 5, 9, 1, 10, 3, 8, 6, 4};
/* the reference result of each kind, kept for the run with another number of workers */
static float *reference[3];

static void check_kind(enum kind kind)
{
  int64_t nvox = tu_nvox(&geo);
  float *ref = back_all(kind, 1, 0, in_order);
  ck_assert_msg(tu_max_abs(ref, nvox) > 0, "nothing was back projected");
  const int64_t task_sizes[3] = {4096, 1000, 333};
  for (int t = 0; t < 3; t++)
    for (int o = 0; o < 2; o++) {
      float *img = back_all(kind, 1, task_sizes[t], o ? shuffled : in_order);
      ck_assert_msg(memcmp(img, ref, nvox * sizeof(float)) == 0,
                    "kind %d: tasks of %lld LORs, %s order: bits differ from the first run", kind,
                    (long long)task_sizes[t], o ? "shuffled" : "listed");
      free(img);
    }
  /* One call per 50 LORs: each call's exact sum is added to the image in float, so the result depends on how the
   * LORs are split into calls (not on timing): the same bits with merged calls allowed and without, and on every
   * run; within float rounding of the one-call result. */
  float *separate = back_all(kind, 1, 0, NULL);
  ck_assert_int_eq(sproj_set_merge_calls(0), SPROJ_OK);
  float *unmerged = back_all(kind, 1, 0, NULL);
  ck_assert_int_eq(sproj_set_merge_calls(1), SPROJ_OK);
  ck_assert_msg(memcmp(separate, unmerged, nvox * sizeof(float)) == 0, "kind %d: separate calls: bits depend on "
                "merging", kind);
  double sdiff = 0.0, smax = tu_max_abs(ref, nvox);
  for (int64_t v = 0; v < nvox; v++)
    sdiff = fmax(sdiff, fabs((double)separate[v] - ref[v]));
  ck_assert_msg(sdiff <= 1e-5 * smax, "kind %d: separate calls differ from one call by %.3g", kind, sdiff);
  free(separate);
  free(unmerged);
  /* against the default float mode: each contribution is rounded to 2^-32, each voxel sums thousands */
  float *plain = back_all(kind, 0, 0, in_order);
  double diff = 0.0, max = tu_max_abs(plain, nvox);
  for (int64_t v = 0; v < nvox; v++)
    diff = fmax(diff, fabs((double)plain[v] - ref[v]));
  printf("kind %d: reproducible vs float mode: max difference %.3g of max %.3g\n", kind, diff, max);
  ck_assert_msg(diff <= 1e-5 * max, "kind %d: reproducible mode differs from float mode by %.3g (max %.3g)", kind,
                diff, max);
  free(plain);
  reference[kind] = ref;
}

START_TEST(test_nontof)
{
  check_kind(NONTOF);
}
END_TEST

START_TEST(test_tof_sino)
{
  check_kind(TOF_SINO);
}
END_TEST

START_TEST(test_tof_lm)
{
  check_kind(TOF_LM);
}
END_TEST

START_TEST(test_bad_switch)
{
  float image[8];
  int dims[3] = {2, 2, 2};
  float vs[3] = {1, 1, 1}, origin[3] = {0, 0, 0};
  sproj_image *img;
  ck_assert_int_eq(sproj_image_set_reproducible(NULL, 1), SPROJ_ERR_NULL);
  ck_assert_int_eq(sproj_image_register(&img, image, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_set_reproducible(img, 2), SPROJ_ERR_INVALID);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
}
END_TEST

/* after a restart with one CPU worker: the same bits as with every core */
START_TEST(test_one_worker)
{
  int64_t nvox = tu_nvox(&geo);
  for (int k = 0; k < 3; k++) {
    ck_assert_ptr_nonnull(reference[k]);
    float *img = back_all((enum kind)k, 1, 0, shuffled);
    ck_assert_msg(memcmp(img, reference[k], nvox * sizeof(float)) == 0,
                  "kind %d: one worker gives other bits than %d workers", k, 2);
    free(img);
  }
}
END_TEST

int main(void)
{
  tu_seed(21);
  xs = tu_alloc(3 * NL);
  xe = tu_alloc(3 * NL);
  values = tu_alloc(NL);
  tof_values = tu_alloc((int64_t)NL * NBINS);
  bins = malloc(NL * sizeof *bins);
  tu_random_lors(&geo, xs, xe, NL, NULL);
  tu_fill_uniform(values, NL, 0.1f, 2.0f);
  tu_fill_uniform(tof_values, (int64_t)NL * NBINS, 0.0f, 1.0f);
  for (int i = 0; i < NL; i++)
    bins[i] = (int16_t)tu_randint(0, NBINS - 1);

  if (tu_init(-1, 0) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  printf("%d CPU workers\n", sproj_num_cpu_workers());
  Suite *s = suite_create("reproducible back projection");
  TCase *tc = tcase_create("same bits");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_nontof);
  tcase_add_test(tc, test_tof_sino);
  tcase_add_test(tc, test_tof_lm);
  tcase_add_test(tc, test_bad_switch);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  if (sproj_shutdown() != SPROJ_OK)
    ret = 1;

  if (tu_init(1, 0) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s1 = suite_create("reproducible back projection, one worker");
  TCase *t1 = tcase_create("one worker");
  tcase_set_timeout(t1, 120);
  tcase_add_test(t1, test_one_worker);
  suite_add_tcase(s1, t1);
  ret |= tu_run(s1);
  if (sproj_shutdown() != SPROJ_OK)
    ret = 1;
  for (int k = 0; k < 3; k++)
    free(reference[k]);
  free(xs);
  free(xe);
  free(values);
  free(tof_values);
  free(bins);
  return ret;
}
