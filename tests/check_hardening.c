/* SPDX-License-Identifier: Apache-2.0 */
/* check_hardening.c: regression tests for inputs that once crashed, hung or slipped through: extreme TOF parameters
 * and coordinates (in the projector math itself and at registration), chunks listed several times in one request,
 * the smaller validation gaps of the hardening review, and an order of LORs near FLT_MAX. */
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <starpu.h>
#include "testutil.h"
#include "joseph3d_ray.h"
#include "tof.h"
#include "joseph3d_tof_sino_fwd.h"
#include "joseph3d_tof_sino_back.h"
#include "joseph3d_tof_lm_fwd.h"
#include "joseph3d_tof_lm_back.h"
#include "joseph3d_fwd.h"
#include "joseph3d_back.h"

#define SENTINEL ((void *)0x1234)

/* A request that never completes must fail the test, not hang CI. */
static void on_alarm(int sig)
{
  (void)sig;
  static const char msg[] = "check_hardening: a request did not complete within 120 s (hang)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(1);
}

/* ---- the projector math under extreme parameters, called directly as a kernel thread would -------------------- */
#define N16 16
#define GUARD 64
#define MAXB 64

struct extreme {
  float bin_width, num_sigmas, sigma, offset;
};

/* Every TOF projector on one LOR with the given parameters: writes stay inside the bins and the image (guards), and
 * the float -> int conversions stay defined (the sanitizer build checks that part). */
static void run_extreme(const struct extreme *e, const float *xs, const float *xe, int num_bins)
{
  static float img[GUARD + N16 * N16 * N16 + GUARD], out[GUARD + MAXB + GUARD];
  static unsigned long long acc[GUARD + N16 * N16 * N16 + GUARD];
  struct sproj_geom g = {{N16, N16, N16}, {2.0f, 2.0f, 2.0f}, {-15.0f, -15.0f, -15.0f}};
  struct sproj_tof_arg t = {e->bin_width, e->num_sigmas, e->sigma, e->offset, num_bins, 0, 0, 0};
  for (int i = 0; i < GUARD; i++) {
    img[i] = img[GUARD + N16 * N16 * N16 + i] = out[i] = out[GUARD + MAXB + i] = 12345.0f;
    acc[i] = acc[GUARD + N16 * N16 * N16 + i] = 12345u;
  }
  for (int i = 0; i < N16 * N16 * N16; i++)
    img[GUARD + i] = 1.0f;
  float *image = img + GUARD, *bins = out + GUARD;
  /* back projections add into the float image and into a fixed-point accumulator (reproducible mode) */
  const struct sproj_out targets[2] = {{image, NULL, NULL}, {NULL, acc + GUARD, NULL}};

  /* the edges' table (tof_table.h) when one serves these parameters */
  static float lo[2 * SPROJ_TOF_TABLE_MAX_PIECES], hi[2 * SPROJ_TOF_TABLE_MAX_PIECES];
  struct sproj_tof_table_plan plan;
  struct sproj_tof_table table;
  const struct sproj_tof_table *tabs[2] = {NULL, NULL};
  if (sproj_tof_table_plan_for(&t, &plan)) {
    for (int p = 0; p < plan.nd * plan.steps; p++)
      sproj_tof_table_piece(&plan, p, lo + 2 * p, hi + 2 * p);
    sproj_tof_table_use(&table, &plan, lo, hi, 0u);
    tabs[1] = &table;
  }
  /* in starproj's convention and in libparallelproj's (sproj_tof_set_convention), with erff and with the table, the
   * bins beside the samples or not (tof_slide.h, both widths) */
  for (t.convention = SPROJ_TOF_ARG_STARPROJ; t.convention <= SPROJ_TOF_ARG_PARALLELPROJ; t.convention++) {
    for (int ti = 0; ti < 2; ti++) {
      const struct sproj_tof_table *tab = tabs[ti];
      /* each round from the same image: the back projections below add into the image the next forward reads */
      for (int i = 0; i < N16 * N16 * N16; i++)
        image[i] = 1.0f;
      joseph3d_tof_sino_fwd_lor(image, &g, xs, xe, &t, e->sigma, e->offset, tab, bins, 1);
      joseph3d_tof_sino_fwd_slide(image, &g, xs, xe, &t, e->sigma, e->offset, tab, bins, 1, SPROJ_TOF_SLIDE_NARROW);
      joseph3d_tof_sino_fwd_slide(image, &g, xs, xe, &t, e->sigma, e->offset, tab, bins, 1, SPROJ_TOF_SLIDE_MAX);
      for (int o = 0; o < 2; o++) {
        joseph3d_tof_sino_back_lor(targets[o], &g, xs, xe, &t, e->sigma, e->offset, tab, bins);
        joseph3d_tof_sino_back_slide(targets[o], &g, xs, xe, &t, e->sigma, e->offset, tab, bins,
                                     SPROJ_TOF_SLIDE_NARROW);
        joseph3d_tof_sino_back_slide(targets[o], &g, xs, xe, &t, e->sigma, e->offset, tab, bins, SPROJ_TOF_SLIDE_MAX);
      }
      for (int b = 0; b < num_bins; b += num_bins > 1 ? num_bins - 1 : 1) {
        float v = joseph3d_tof_lm_fwd_lor(image, &g, xs, xe, &t, e->sigma, e->offset, tab, b);
        (void)v;
        for (int o = 0; o < 2; o++)
          joseph3d_tof_lm_back_lor(targets[o], &g, xs, xe, &t, e->sigma, e->offset, tab, b, 1.0f);
      }
    }
  }
  float v = joseph3d_fwd_lor(image, &g, xs, xe);
  ck_assert_msg(isfinite(v), "non-TOF forward gave %g", v);
  for (int o = 0; o < 2; o++)
    joseph3d_back_lor(targets[o], &g, xs, xe, 1.0f);
  for (int i = 0; i < GUARD; i++) {
    ck_assert_msg(out[i] == 12345.0f && out[GUARD + MAXB + i] == 12345.0f,
                  "a TOF bin outside the LOR's %d bins was written (bin_width %g, num_sigmas %g, sigma %g, offset %g)",
                  num_bins, e->bin_width, e->num_sigmas, e->sigma, e->offset);
    ck_assert_msg(img[i] == 12345.0f && img[GUARD + N16 * N16 * N16 + i] == 12345.0f,
                  "a voxel outside the image was written");
    ck_assert_msg(acc[i] == 12345u && acc[GUARD + N16 * N16 * N16 + i] == 12345u,
                  "a voxel outside the fixed-point accumulator was written");
  }
}

START_TEST(test_extreme_tof_math)
{
  /* the values the hardening review found crashing or overflowing, and their neighbours */
  const struct extreme cases[] = {
    {10, 1e10f, 9, 0},      {10, 2.5e9f, 9, 0},     {10, 1e30f, 9, 0},      {10, FLT_MAX, 9, 0},
    {10, 3, 1e10f, 0},      {10, 3, 9, 1e11f},      {10, 3, 9, -3e38f},     {1e-40f, 3, 9, 0},
    {10, 3, 1e12f, 0},      {FLT_MAX, 3, 9, 0},     {10, 3, 1e-40f, 0},     {25.4f, 3, 24.5f, 0},
    {1e-30f, 1e30f, 1e30f, 1e30f},
  };
  const float line[2][3] = {{-40.0f, 0.3f, 1.1f}, {40.0f, -0.7f, 0.4f}};
  const float far[2][3] = {{-3e38f, 0.3f, 1.1f}, {3e38f, -0.7f, 0.4f}};
  const float skew[2][3] = {{-3e38f, -3e38f, 3e38f}, {3e38f, 3e38f, -3e38f}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    run_extreme(&cases[c], line[0], line[1], 15);
    run_extreme(&cases[c], line[1], line[0], 1);
    run_extreme(&cases[c], far[0], far[1], MAXB);
    run_extreme(&cases[c], skew[0], skew[1], 15);
  }
}
END_TEST

START_TEST(test_extreme_tof_register)
{
  float lor_s[3] = {-40, 0.3f, 1.1f}, lor_e[3] = {40, -0.7f, 0.4f};
  sproj_lors *lors;
  ck_assert_int_eq(sproj_lors_register(&lors, lor_s, lor_e, 1), SPROJ_OK);
  const struct sproj_tof_params bad[] = {
    {10, 15, 1e10f, 9, 0}, {10, 15, 2.5e9f, 9, 0}, {10, 15, 1e30f, 9, 0}, {10, 15, FLT_MAX, 9, 0},
    {10, 15, 3, 1e10f, 0}, {10, 15, 3, 9, 1e11f},  {10, 15, 3, 9, -3e38f}, {1e-40f, 15, 3, 9, 0},
    {10, 15, 3, 1e-6f, 0},
  };
  for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
    sproj_tof *tof = SENTINEL;
    int rc = sproj_tof_register(&tof, &bad[c], NULL, NULL, NULL);
    ck_assert_msg(rc == SPROJ_ERR_TOF, "case %zu: status %d (%s), expected SPROJ_ERR_TOF", c, rc, sproj_last_error());
    ck_assert_ptr_eq(tof, SENTINEL);
  }
  /* one per-LOR sigma of 1e12 */
  const struct sproj_tof_params ok = {10, 15, 3, 9, 0};
  float sigma = 1e12f, offset = 0.0f;
  sproj_tof *tof = SENTINEL;
  ck_assert_int_eq(sproj_tof_register(&tof, &ok, lors, &sigma, NULL), SPROJ_ERR_TOF);
  ck_assert_ptr_eq(tof, SENTINEL);
  offset = 1e8f;
  ck_assert_int_eq(sproj_tof_register(&tof, &ok, lors, NULL, &offset), SPROJ_ERR_TOF);
  ck_assert_ptr_eq(tof, SENTINEL);
  /* the edges of the stated ranges are accepted and project */
  const struct sproj_tof_params edge = {10, 15, 1e6f / 1e5f, 1e5f * 10 * 0.999f, 1e6f * 10 * 0.999f};
  ck_assert_int_eq(sproj_tof_register(&tof, &edge, NULL, NULL, NULL), SPROJ_OK);
  int dims[3] = {N16, N16, N16};
  float vs[3] = {2, 2, 2}, origin[3] = {-15, -15, -15};
  float *image = tu_alloc(N16 * N16 * N16), values[15];
  for (int i = 0; i < N16 * N16 * N16; i++)
    image[i] = 1.0f;
  sproj_image *img;
  sproj_proj *proj;
  ck_assert_int_eq(sproj_image_register(&img, image, dims, vs, origin), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_tof(&proj, values, lors, 15), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_sino(img, proj, NULL, 0, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);
  for (int b = 0; b < 15; b++)
    ck_assert_msg(isfinite(values[b]), "bin %d = %g", b, values[b]);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  free(image);
}
END_TEST

START_TEST(test_far_coordinates)
{
  float s[6] = {0, 0, 0, 1e9f, 0, 0}, e[6] = {10, 1, 1, 0, 1, 1};
  sproj_lors *lors = SENTINEL;
  ck_assert_int_eq(sproj_lors_register(&lors, s, e, 2), SPROJ_ERR_RANGE);
  ck_assert_ptr_eq(lors, SENTINEL);
  ck_assert_msg(strstr(sproj_last_error(), "LOR 1") != NULL, "message '%s' does not name LOR 1", sproj_last_error());
  s[3] = -SPROJ_MAX_COORDINATE;
  ck_assert_int_eq(sproj_lors_register(&lors, s, e, 2), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
}
END_TEST

/* ---- chunks listed several times in one request ---------------------------------------------------------------- */
#define NV 6
#define PER_VIEW 300

static struct tu_geom geo = {{12, 10, 8}, {2.0f, 2.5f, 3.0f}, {-11.0f, -11.25f, -10.5f}};
static float *image, *xs, *xe;

/* fwd (back = 0) or back of chunk 3 listed `copies` times, as a list call or as a batch of single calls */
static void request_copies(int back, int tof_bins, int copies, int batched, float *values, float *out_img)
{
  int64_t first[NV], count[NV];
  for (int v = 0; v < NV; v++) {
    first[v] = (int64_t)v * PER_VIEW;
    count[v] = PER_VIEW;
  }
  int64_t nvox = tu_nvox(&geo);
  float *img_data = back ? out_img : image;
  if (back)
    memset(out_img, 0, nvox * sizeof(float));
  sproj_image *img;
  sproj_lors *lors;
  sproj_chunks *chunks;
  sproj_proj *proj;
  sproj_tof *tof = NULL;
  struct sproj_tof_params par = {6.0f, tof_bins, 3.0f, 5.0f, 0.0f};
  ck_assert_int_eq(sproj_image_register(&img, img_data, geo.n, geo.vs, geo.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, NV * PER_VIEW), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_ranges(&chunks, lors, NV, first, count), SPROJ_OK);
  if (tof_bins) {
    ck_assert_int_eq(sproj_tof_register(&tof, &par, NULL, NULL, NULL), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_register_tof(&proj, values, lors, tof_bins), SPROJ_OK);
  } else {
    ck_assert_int_eq(sproj_proj_register(&proj, values, lors), SPROJ_OK);
  }
  int list[8];
  for (int i = 0; i < copies; i++)
    list[i] = 3;
  if (batched) {
    ck_assert_int_eq(sproj_batch_begin(), SPROJ_OK);
    for (int i = 0; i < copies; i++)
      ck_assert_int_eq(tof ? (back ? sproj_back_tof_sino(img, proj, chunks, 3, tof) : sproj_fwd_tof_sino(img, proj, chunks, 3, tof))
                           : (back ? sproj_back(img, proj, chunks, 3) : sproj_fwd(img, proj, chunks, 3)),
                       SPROJ_OK);
    ck_assert_int_eq(sproj_batch_end(), SPROJ_OK);
  } else {
    ck_assert_int_eq(tof ? (back ? sproj_back_tof_sino_chunks(img, proj, chunks, list, copies, tof)
                                 : sproj_fwd_tof_sino_chunks(img, proj, chunks, list, copies, tof))
                         : (back ? sproj_back_chunks(img, proj, chunks, list, copies)
                                 : sproj_fwd_chunks(img, proj, chunks, list, copies)),
                     SPROJ_OK);
  }
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(chunks), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
}

START_TEST(test_repeated_chunks)
{
  const int bins_of[2] = {0, 7};
  int64_t nvox = tu_nvox(&geo);
  float *once_img = tu_alloc(nvox), *many_img = tu_alloc(nvox);
  for (int k = 0; k < 2; k++) {
    int nb = bins_of[k] ? bins_of[k] : 1;
    int64_t nval = (int64_t)NV * PER_VIEW * nb;
    float *once = tu_alloc(nval), *many = tu_alloc(nval);
    for (int batched = 0; batched < 2; batched++)
      for (int copies = 2; copies <= 6; copies += 2) {
        /* forward: the same values as one copy, and the other chunks untouched */
        for (int64_t i = 0; i < nval; i++)
          once[i] = many[i] = -1.0f;
        request_copies(0, bins_of[k], 1, 0, once, NULL);
        request_copies(0, bins_of[k], copies, batched, many, NULL);
        ck_assert_msg(memcmp(once, many, nval * sizeof(float)) == 0,
                      "forward of chunk 3 listed %d times (bins %d, batched %d) differs from one copy", copies, nb,
                      batched);
        /* back: each listed copy adds once (float sums of the same terms: 1e-5 relative) */
        for (int64_t i = 0; i < nval; i++)
          once[i] = 0.5f + (float)(i % 7);
        request_copies(1, bins_of[k], 1, 0, once, once_img);
        request_copies(1, bins_of[k], copies, batched, once, many_img);
        for (int64_t v = 0; v < nvox; v++)
          once_img[v] *= (float)copies;
        double err = tu_rel_l2_ff(many_img, once_img, nvox);
        ck_assert_msg(err < 1e-5, "back of chunk 3 listed %d times (bins %d, batched %d): rel. L2 %g from %d x one copy",
                      copies, nb, batched, err, copies);
        ck_assert_msg(tu_max_abs(once_img, nvox) > 0, "the back projection added nothing");
      }
    free(once);
    free(many);
  }
  free(once_img);
  free(many_img);
}
END_TEST

/* Found by the fuzz target: syncing the pieces of a chunking that no task has used yet made StarPU abort (the sync
 * asked for every piece's copy before StarPU had cut the vector into those pieces). The values come back as they
 * were, for every chunk and all chunks, in both modes, and after a forward projection through the chunking too. */
START_TEST(test_sync_unused_chunking)
{
  const int64_t n = 3000;
  float *xs = tu_alloc(3 * n), *xe = tu_alloc(3 * n), *values = tu_alloc(n), *img = tu_alloc(tu_nvox(&geo));
  tu_seed(4242);
  tu_random_lors(&geo, xs, xe, n, NULL);
  tu_fill_uniform(img, tu_nvox(&geo), 0.0f, 1.0f);
  for (int64_t i = 0; i < n; i++)
    values[i] = (float)i;
  struct tu_set set;
  ck_assert_int_eq(tu_set_register(&set, &geo, img, xs, xe, n, values), SPROJ_OK);
  sproj_chunks *ch, *other;
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, set.lors, 7), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&other, set.lors, 3), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(set.proj, ch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(set.proj, ch, 4, SPROJ_SYNC_WRITE), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(set.proj, other, SPROJ_ALL_CHUNKS, SPROJ_SYNC_WRITE), SPROJ_OK);
  for (int64_t i = 0; i < n; i++)
    ck_assert_msg(values[i] == (float)i, "value %lld changed to %g", (long long)i, values[i]);
  ck_assert_int_eq(sproj_fwd(set.img, set.proj, other, SPROJ_ALL_CHUNKS), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(set.proj, ch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  int64_t changed = 0;
  for (int64_t i = 0; i < n; i++)
    changed += values[i] != (float)i;
  ck_assert_msg(changed > n / 2, "the forward projection wrote only %lld values", (long long)changed);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(other), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  free(xs);
  free(xe);
  free(values);
  free(img);
}
END_TEST

/* ---- smaller gaps ----------------------------------------------------------------------------------------------- */
START_TEST(test_small_gaps)
{
  /* a failed allocation leaves the pointer alone */
  void *p = SENTINEL;
  ck_assert_int_eq(sproj_malloc_pinned(&p, SIZE_MAX), SPROJ_ERR_NOMEM);
  ck_assert_ptr_eq(p, SENTINEL);

  /* a caller's vector of the wrong length or element size: INVALID, as documented */
  float buf[64];
  int dims[3] = {4, 4, 4};
  float vs[3] = {1, 1, 1}, origin[3] = {0, 0, 0};
  starpu_data_handle_t h;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)buf, 63, sizeof(float));
  sproj_image *img = SENTINEL;
  ck_assert_int_eq(sproj_image_register_handle(&img, h, dims, vs, origin), SPROJ_ERR_INVALID);
  ck_assert_ptr_eq(img, SENTINEL);
  starpu_data_unregister(h);
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)buf, 32, 2 * sizeof(float));
  ck_assert_int_eq(sproj_image_register_handle(&img, h, dims, vs, origin), SPROJ_ERR_INVALID);
  ck_assert_ptr_eq(img, SENTINEL);
  starpu_data_unregister(h);

  /* a chunk range whose end overflows int64 is reported without a wrapped number */
  float s[3] = {0, 0, 0}, e[3] = {1, 1, 1};
  sproj_lors *lors;
  sproj_chunks *chunks = SENTINEL;
  ck_assert_int_eq(sproj_lors_register(&lors, s, e, 1), SPROJ_OK);
  int64_t first = INT64_MAX - 1, count = 10;
  ck_assert_int_eq(sproj_chunks_create_ranges(&chunks, lors, 1, &first, &count), SPROJ_ERR_RANGE);
  ck_assert_ptr_eq(chunks, SENTINEL);
  ck_assert_msg(strchr(sproj_last_error(), '-') == NULL, "message '%s' shows a wrapped value", sproj_last_error());
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
}
END_TEST

/* ---- bounded memory under many queued calls --------------------------------------------------------------------- */
static long status_kib(const char *key)
{
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0)
      v = atol(line + n);
  if (f)
    fclose(f);
  return v;
}

/* 10^5 small forward calls submitted as fast as possible: without a bound StarPU keeps every queued task (the
 * hardening review saw ~770 MiB RSS; this test grew by 141 MiB on 2 cores); with the default bound of 10000 queued
 * tasks (+16 MiB measured) the peak must stay within QUEUE_RSS_MIB of what the process held before. */
#define QUEUE_CALLS 100000
#define QUEUE_RSS_MIB 64
/* sproj_lors_order on LORs near FLT_MAX (found by the fuzzer: their keys' arithmetic overflowed to NaN, which was
 * converted to an integer) and at the origin, with NaN among them: a permutation, the NaN LOR last. */
START_TEST(test_order_extreme_lors)
{
  enum { N = 6 };
  const float big = FLT_MAX;
  float xs[3 * N] = {big, big, big, -big, 0.0f, big, 0.0f, 0.0f, 0.0f, 1.0f, -big, 3.0f, NAN, 0.0f, 0.0f, 5.0f, 5.0f, -big};
  float xe[3 * N] = {-big, -big, -big, big, big, -big, 0.0f, 0.0f, 0.0f, -big, 2.0f, 3.0f, 1.0f, 1.0f, 1.0f, big, -5.0f, big};
  const float vs[3] = {FLT_MIN, 2.0f, FLT_MAX};
  int64_t order[N];
  ck_assert_int_eq(sproj_lors_order(xs, xe, N, vs, order), SPROJ_OK);
  int seen[N] = {0};
  for (int i = 0; i < N; i++) {
    ck_assert(order[i] >= 0 && order[i] < N && !seen[order[i]]);
    seen[order[i]] = 1;
  }
  ck_assert_int_eq(order[N - 1], 4);
}
END_TEST

START_TEST(test_queued_calls_memory)
{
  /* tasks of 1000 LORs take longer than a call takes to submit, so that without a bound the queue grows */
  enum { nchunks = 100, per_chunk = 1000 };
  int64_t first[nchunks], count[nchunks];
  for (int c = 0; c < nchunks; c++) {
    first[c] = (int64_t)c * per_chunk;
    count[c] = per_chunk;
  }
  float *values = tu_alloc(nchunks * per_chunk);
  float *ls = tu_alloc(3 * nchunks * per_chunk), *le = tu_alloc(3 * nchunks * per_chunk);
  tu_random_lors(&geo, ls, le, nchunks * per_chunk, NULL);
  sproj_image *img;
  sproj_lors *lors;
  sproj_chunks *chunks;
  sproj_proj *proj;
  ck_assert_int_eq(sproj_image_register(&img, image, geo.n, geo.vs, geo.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, ls, le, nchunks * per_chunk), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_ranges(&chunks, lors, nchunks, first, count), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&proj, values, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd(img, proj, chunks, SPROJ_ALL_CHUNKS), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  long before = status_kib("VmRSS:");
  for (int i = 0; i < QUEUE_CALLS; i++)
    ck_assert_int_eq(sproj_fwd(img, proj, chunks, i % nchunks), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  long peak = status_kib("VmHWM:");
  printf("queued calls: %d forward calls, RSS before %.1f MiB, peak %.1f MiB (bound: +%d MiB)\n", QUEUE_CALLS,
         before / 1024.0, peak / 1024.0, QUEUE_RSS_MIB);
  ck_assert_msg(before > 0 && peak > 0, "could not read /proc/self/status");
#ifdef __SANITIZE_ADDRESS__
  /* AddressSanitizer keeps freed memory in quarantine (256 MiB): the RSS says nothing here */
  printf("queued calls: RSS not asserted under AddressSanitizer\n");
  peak = before;
#endif
  ck_assert_msg(peak - before < QUEUE_RSS_MIB * 1024L, "peak RSS grew by %.1f MiB under %d queued calls",
                (peak - before) / 1024.0, QUEUE_CALLS);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(chunks), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  free(values);
  free(ls);
  free(le);
}
END_TEST

/* runs with starproj stopped: sproj_init must refuse bad configurations before starting anything */
START_TEST(test_init_config)
{
  struct sproj_config cfg;
  const char *bad_sched[] = {"no-such", ""};
  for (int i = 0; i < 2; i++) {
    sproj_config_init(&cfg);
    cfg.sched = bad_sched[i];
    ck_assert_int_eq(sproj_init(&cfg), SPROJ_ERR_INVALID);
    ck_assert_msg(strstr(sproj_last_error(), "scheduler") != NULL, "message '%s'", sproj_last_error());
  }
  setenv("STARPU_SCHED", "no-such-either", 1);
  ck_assert_int_eq(sproj_init(NULL), SPROJ_ERR_INVALID);
  unsetenv("STARPU_SCHED");
  sproj_config_init(&cfg);
  cfg.ncpu = 100000;
  ck_assert_int_eq(sproj_init(&cfg), SPROJ_ERR_RANGE);
  sproj_config_init(&cfg);
  cfg.sched = "eager";
  cfg.ncpu = 1;
  ck_assert_int_eq(sproj_init(&cfg), SPROJ_OK);
  ck_assert_str_eq(sproj_scheduler_name(), "eager");
  ck_assert_int_eq(sproj_shutdown(), SPROJ_OK);

  /* the environment is left as it was: unset stays unset, a caller's value stays */
  unsetenv("STARPU_CUDA_PIPELINE");
  setenv("STARPU_NWORKER_PER_CUDA", "3", 1);
  cfg.workers_per_gpu = 2;
  ck_assert_int_eq(sproj_init(&cfg), SPROJ_OK);
  ck_assert_ptr_null(getenv("STARPU_CUDA_PIPELINE"));
  ck_assert_str_eq(getenv("STARPU_NWORKER_PER_CUDA"), "3");
  ck_assert_int_eq(sproj_shutdown(), SPROJ_OK);
  unsetenv("STARPU_NWORKER_PER_CUDA");

  /* under a small GPU memory limit StarPU's suballocator is turned off for its start (runtime.c), and the variable
   * is put back afterwards: unset stays unset, a caller's value stays */
  setenv("STARPU_LIMIT_CUDA_1_MEM", "100", 1);
  unsetenv("STARPU_SUBALLOCATOR");
  ck_assert_int_eq(sproj_init(&cfg), SPROJ_OK);
  ck_assert_ptr_null(getenv("STARPU_SUBALLOCATOR"));
  ck_assert_int_eq(sproj_shutdown(), SPROJ_OK);
  setenv("STARPU_SUBALLOCATOR", "1", 1);
  ck_assert_int_eq(sproj_init(&cfg), SPROJ_OK);
  ck_assert_str_eq(getenv("STARPU_SUBALLOCATOR"), "1");
  ck_assert_int_eq(sproj_shutdown(), SPROJ_OK);
  unsetenv("STARPU_SUBALLOCATOR");
  unsetenv("STARPU_LIMIT_CUDA_1_MEM");
}
END_TEST

int main(void)
{
  signal(SIGALRM, on_alarm);
  alarm(120);
  tu_seed(11);
  int64_t nvox = tu_nvox(&geo);
  image = tu_alloc(nvox);
  tu_fill_uniform(image, nvox, 0.0f, 1.0f);
  xs = tu_alloc(3 * NV * PER_VIEW);
  xe = tu_alloc(3 * NV * PER_VIEW);
  tu_random_lors(&geo, xs, xe, NV * PER_VIEW, NULL);

  Suite *s0 = suite_create("hardening: configuration");
  TCase *t0 = tcase_create("init");
  tcase_add_test(t0, test_init_config);
  suite_add_tcase(s0, t0);
  int ret = tu_run(s0);

  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s = suite_create("hardening");
  TCase *tc = tcase_create("regressions");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_extreme_tof_math);
  tcase_add_test(tc, test_extreme_tof_register);
  tcase_add_test(tc, test_far_coordinates);
  tcase_add_test(tc, test_repeated_chunks);
  tcase_add_test(tc, test_small_gaps);
  tcase_add_test(tc, test_sync_unused_chunking);
  tcase_add_test(tc, test_queued_calls_memory);
  tcase_add_test(tc, test_order_extreme_lors);
  suite_add_tcase(s, tc);
  ret |= tu_run(s);
  if (sproj_shutdown() != SPROJ_OK)
    ret = 1;
  free(image);
  free(xs);
  free(xe);
  return ret;
}
