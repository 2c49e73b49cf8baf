/* SPDX-License-Identifier: Apache-2.0 */
/* check_badinput.c: every public call of starproj.h and starproj_parallelproj.h fed adversarial arguments (NULLs,
 * extreme counts and floats, foreign objects, calls outside sproj_init .. sproj_shutdown): each returns its documented
 * status with a message naming it, leaves out-pointers alone, and leaves registered objects projecting as before. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <starpu.h>
#include "testutil.h"
#include "starproj_parallelproj.h"

#define SENTINEL ((void *)0x5a5a)
#define SENT64 ((int64_t)0x5a5a5a5a5a5a)
#define SENTF 12345.5f

/* ---- the checked call: status, a message that starts with the function's name, and a tally ------------------- */
static int num_calls;
static char funcs_seen[160][48];
static int num_funcs;

static void seen(const char *func)
{
  for (int i = 0; i < num_funcs; i++)
    if (strcmp(funcs_seen[i], func) == 0)
      return;
  ck_assert_int_lt(num_funcs, 160);
  snprintf(funcs_seen[num_funcs++], sizeof funcs_seen[0], "%s", func);
}

/* Leaves a message naming another function, so that a call which fails without setting its own is caught. */
static void prime_message(const char *func)
{
  int64_t n;
  if (strcmp(func, "sproj_lors_count") != 0)
    sproj_lors_count(NULL, &n);
  else
    sproj_chunks_count(NULL, NULL);
}

/* Every mismatch is printed and counted (so that one run lists them all); the program fails if there was any. */
static int num_wrong;

static void check_status(int rc, int want, const char *func, const char *text, int line)
{
  num_calls++;
  seen(func);
  const char *msg = sproj_last_error();
  size_t n = strlen(func);
  if (rc != want) {
    num_wrong++;
    printf("line %d: %s returned %d (%s), expected %d (%s); message '%s'\n", line, text, rc, sproj_strerror(rc), want,
           sproj_strerror(want), msg);
  } else if (want < 0 && (strncmp(msg, func, n) != 0 || msg[n] != ':' || strlen(msg) < n + 4)) {
    num_wrong++;
    printf("line %d: %s: message '%s' does not name %s\n", line, text, msg, func);
  }
}

#define BAD(call, want, func)                                                                                       \
  do {                                                                                                              \
    prime_message(func);                                                                                            \
    int rc_ = (call);                                                                                               \
    check_status(rc_, (want), (func), #call, __LINE__);                                                             \
  } while (0)

/* ---- the registered objects the barrage runs against ---------------------------------------------------------- */
static struct tu_geom G = {{8, 7, 6}, {2.0f, 2.5f, 3.0f}, {-7.0f, -7.5f, -7.5f}};
#define NL 256
#define NB 5
static float *image, *bimage, *xs, *xe, *values, *tvalues, *evalues, *ovalues;
static int16_t ebins[NL];
static sproj_image *img, *bimg;
static sproj_lors *lors, *other, *events;
static sproj_chunks *ch, *och, *evch, *lch; /* lch: a chunking with chunks of several ranges */
static sproj_proj *proj, *tproj, *eproj, *oproj;
static sproj_tof *tof, *otof;                /* otof: per-LOR sigma of `other` */
static const struct sproj_tof_params TOFP = {6.0f, NB, 3.0f, 5.0f, 0.0f};
static float osigma[NL];

static void setup_objects(void)
{
  ck_assert_int_eq(sproj_image_register(&img, image, G.n, G.vs, G.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&bimg, bimage, G.n, G.vs, G.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, NL), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&other, xs, xe, NL), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_events(&events, xs, xe, ebins, NL), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, 4), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&och, other, 4), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&evch, events, 3), SPROJ_OK);
  const int nr[2] = {2, 1};
  const int64_t first[3] = {0, 100, 50}, count[3] = {10, 20, 30};
  ck_assert_int_eq(sproj_chunks_create_lists(&lch, lors, 2, nr, first, count), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&proj, values, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&oproj, ovalues, other), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_tof(&tproj, tvalues, lors, NB), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&eproj, evalues, events), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&tof, &TOFP, NULL, NULL, NULL), SPROJ_OK);
  for (int i = 0; i < NL; i++)
    osigma[i] = 4.0f + (float)(i % 3);
  ck_assert_int_eq(sproj_tof_register(&otof, &TOFP, other, osigma, NULL), SPROJ_OK);
}

static void teardown_objects(void)
{
  ck_assert_int_eq(sproj_tof_unregister(otof), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(oproj), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(tproj), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(eproj), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(och), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(evch), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(lch), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(other), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(events), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(bimg), SPROJ_OK);
}

/* What the objects give: non-TOF, TOF-sinogram and listmode forward projections, non-TOF and TOF back projections. */
struct results {
  float fwd[NL], tfwd[NL * NB], lmfwd[NL];
  float back[8 * 7 * 6], tback[8 * 7 * 6];
};

static void back_into(float *out, int tof_sino)
{
  int64_t nvox = tu_nvox(&G);
  ck_assert_int_eq(sproj_image_sync(bimg, SPROJ_SYNC_WRITE), SPROJ_OK);
  memset(bimage, 0, nvox * sizeof(float));
  if (tof_sino)
    ck_assert_int_eq(sproj_back_tof_sino(bimg, tproj, ch, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  else
    ck_assert_int_eq(sproj_back(bimg, proj, ch, SPROJ_ALL_CHUNKS), SPROJ_OK);
  ck_assert_int_eq(sproj_image_sync(bimg, SPROJ_SYNC_READ), SPROJ_OK);
  memcpy(out, bimage, nvox * sizeof(float));
}

static void compute(struct results *r)
{
  /* poison the outputs first, so that a projection which no longer writes them shows */
  ck_assert_int_eq(sproj_proj_sync(proj, NULL, 0, SPROJ_SYNC_WRITE), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(tproj, NULL, 0, SPROJ_SYNC_WRITE), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(eproj, NULL, 0, SPROJ_SYNC_WRITE), SPROJ_OK);
  for (int i = 0; i < NL; i++)
    values[i] = evalues[i] = NAN;
  for (int i = 0; i < NL * NB; i++)
    tvalues[i] = NAN;
  ck_assert_int_eq(sproj_fwd(img, proj, ch, SPROJ_ALL_CHUNKS), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_sino(img, tproj, ch, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_lm(img, eproj, evch, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(proj, ch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(tproj, ch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_sync(eproj, evch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  memcpy(r->fwd, values, sizeof r->fwd);
  memcpy(r->tfwd, tvalues, sizeof r->tfwd);
  memcpy(r->lmfwd, evalues, sizeof r->lmfwd);
  back_into(r->back, 0);
  back_into(r->tback, 1);
}

static struct results ref;

/* The objects still give the reference: forward bit for bit, back within 1e-6 relative (L2; reductions may add in
 * another order, float rounding of ~100 terms per voxel stays far below that). */
static void check_unchanged(const char *after)
{
  static struct results now;
  compute(&now);
  ck_assert_msg(memcmp(now.fwd, ref.fwd, sizeof ref.fwd) == 0, "non-TOF forward changed after %s", after);
  ck_assert_msg(memcmp(now.tfwd, ref.tfwd, sizeof ref.tfwd) == 0, "TOF-sinogram forward changed after %s", after);
  ck_assert_msg(memcmp(now.lmfwd, ref.lmfwd, sizeof ref.lmfwd) == 0, "listmode forward changed after %s", after);
  int64_t nvox = tu_nvox(&G);
  double e1 = tu_rel_l2_ff(now.back, ref.back, nvox), e2 = tu_rel_l2_ff(now.tback, ref.tback, nvox);
  ck_assert_msg(e1 < 1e-6 && e2 < 1e-6, "back projections changed after %s: rel. L2 %g (non-TOF), %g (TOF)", after,
                e1, e2);
}

/* ---- calls outside sproj_init .. sproj_shutdown ----------------------------------------------------------------- */
/* Every call that needs starproj running, with arguments that would otherwise be valid wherever they can be
 * (objects cannot exist then: those are NULL, and NOT_INIT must still come first). */
static void not_init_barrage(void)
{
  const int NI = SPROJ_ERR_NOT_INIT;
  void *p = SENTINEL;
  sproj_image *im = SENTINEL;
  sproj_lors *lo = SENTINEL;
  sproj_chunks *c = SENTINEL;
  sproj_proj *pr = SENTINEL;
  sproj_tof *to = SENTINEL;
  sproj_model *mo = SENTINEL;
  sproj_recon *re = SENTINEL;
  struct sproj_worker_stats st;
  memset(&st, 0x5a, sizeof st);
  struct sproj_worker_stats st0 = st;
  int64_t first[2] = {0, 10}, count[2] = {10, 10}, stride[1] = {20};
  int nr[1] = {2}, list[2] = {0, 1};
  float buf[16] = {0};

  BAD(sproj_shutdown(), NI, "sproj_shutdown");
  BAD(sproj_set_task_lors(1000), NI, "sproj_set_task_lors");
  BAD(sproj_set_devices(SPROJ_DEVICE_ANY), NI, "sproj_set_devices");
  BAD(sproj_worker_stats(0, &st), NI, "sproj_worker_stats");
  BAD(sproj_stats_reset(), NI, "sproj_stats_reset");
  BAD(sproj_wait_all(), NI, "sproj_wait_all");
  BAD(sproj_flush(), NI, "sproj_flush");
  BAD(sproj_set_merge_calls(1), NI, "sproj_set_merge_calls");
  BAD(sproj_set_image_layouts(1), NI, "sproj_set_image_layouts");
  BAD(sproj_batch_begin(), NI, "sproj_batch_begin");
  BAD(sproj_batch_end(), NI, "sproj_batch_end");
  BAD(sproj_malloc_pinned(&p, 64), NI, "sproj_malloc_pinned");
  BAD(sproj_free_pinned(buf, sizeof buf), NI, "sproj_free_pinned");
  BAD(sproj_pin(buf, sizeof buf), NI, "sproj_pin");
  BAD(sproj_unpin(buf, sizeof buf), NI, "sproj_unpin");
  BAD(sproj_image_register(&im, image, G.n, G.vs, G.origin), NI, "sproj_image_register");
  BAD(sproj_image_register_handle(&im, NULL, G.n, G.vs, G.origin), NI, "sproj_image_register_handle");
  BAD(sproj_image_upload(NULL, SPROJ_ALL_GPUS), NI, "sproj_image_upload");
  BAD(sproj_image_release(NULL, SPROJ_ALL_GPUS), NI, "sproj_image_release");
  BAD(sproj_image_sync(NULL, SPROJ_SYNC_READ), NI, "sproj_image_sync");
  BAD(sproj_image_zero(NULL), NI, "sproj_image_zero");
  BAD(sproj_image_unregister(NULL), NI, "sproj_image_unregister");
  BAD(sproj_image_set_reproducible(NULL, 1), NI, "sproj_image_set_reproducible");
  BAD(sproj_lors_register(&lo, xs, xe, NL), NI, "sproj_lors_register");
  BAD(sproj_lors_register_events(&lo, xs, xe, ebins, NL), NI, "sproj_lors_register_events");
  BAD(sproj_lors_register_handles(&lo, NULL, NULL), NI, "sproj_lors_register_handles");
  BAD(sproj_lors_unregister(NULL), NI, "sproj_lors_unregister");
  BAD(sproj_chunks_create_ranges(&c, NULL, 2, first, count), NI, "sproj_chunks_create_ranges");
  BAD(sproj_chunks_create_blocks(&c, NULL, 2), NI, "sproj_chunks_create_blocks");
  BAD(sproj_chunks_create_lists(&c, NULL, 1, nr, first, count), NI, "sproj_chunks_create_lists");
  BAD(sproj_chunks_create_strided(&c, NULL, 1, first, count, stride, nr), NI, "sproj_chunks_create_strided");
  BAD(sproj_chunks_destroy(NULL), NI, "sproj_chunks_destroy");
  BAD(sproj_lors_upload(NULL, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS), NI, "sproj_lors_upload");
  BAD(sproj_lors_release(NULL, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS), NI, "sproj_lors_release");
  BAD(sproj_proj_register(&pr, values, NULL), NI, "sproj_proj_register");
  BAD(sproj_proj_register_tof(&pr, tvalues, NULL, NB), NI, "sproj_proj_register_tof");
  BAD(sproj_proj_register_handle(&pr, NULL, NULL), NI, "sproj_proj_register_handle");
  BAD(sproj_proj_upload(NULL, NULL, 0, SPROJ_ALL_GPUS), NI, "sproj_proj_upload");
  BAD(sproj_proj_release(NULL, NULL, 0, SPROJ_ALL_GPUS), NI, "sproj_proj_release");
  BAD(sproj_proj_sync(NULL, NULL, 0, SPROJ_SYNC_READ), NI, "sproj_proj_sync");
  BAD(sproj_proj_unregister(NULL), NI, "sproj_proj_unregister");
  BAD(sproj_fwd(NULL, NULL, NULL, 0), NI, "sproj_fwd");
  BAD(sproj_back(NULL, NULL, NULL, 0), NI, "sproj_back");
  BAD(sproj_fwd_chunks(NULL, NULL, NULL, list, 2), NI, "sproj_fwd_chunks");
  BAD(sproj_back_chunks(NULL, NULL, NULL, list, 2), NI, "sproj_back_chunks");
  BAD(sproj_fwd_tof_sino(NULL, NULL, NULL, 0, NULL), NI, "sproj_fwd_tof_sino");
  BAD(sproj_back_tof_sino(NULL, NULL, NULL, 0, NULL), NI, "sproj_back_tof_sino");
  BAD(sproj_fwd_tof_sino_chunks(NULL, NULL, NULL, list, 2, NULL), NI, "sproj_fwd_tof_sino_chunks");
  BAD(sproj_back_tof_sino_chunks(NULL, NULL, NULL, list, 2, NULL), NI, "sproj_back_tof_sino_chunks");
  BAD(sproj_fwd_tof_lm(NULL, NULL, NULL, 0, NULL), NI, "sproj_fwd_tof_lm");
  BAD(sproj_back_tof_lm(NULL, NULL, NULL, 0, NULL), NI, "sproj_back_tof_lm");
  BAD(sproj_fwd_tof_lm_chunks(NULL, NULL, NULL, list, 2, NULL), NI, "sproj_fwd_tof_lm_chunks");
  BAD(sproj_back_tof_lm_chunks(NULL, NULL, NULL, list, 2, NULL), NI, "sproj_back_tof_lm_chunks");
  BAD(sproj_tof_register(&to, &TOFP, NULL, NULL, NULL), NI, "sproj_tof_register");
  BAD(sproj_tof_unregister(NULL), NI, "sproj_tof_unregister");
  BAD(sproj_model_create(&mo, NULL, NULL, NULL, NULL, NULL), NI, "sproj_model_create");
  BAD(sproj_model_destroy(NULL), NI, "sproj_model_destroy");
  struct sproj_recon_config rc;
  sproj_recon_config_init(&rc);
  BAD(sproj_recon_create(&re, NULL, &rc), NI, "sproj_recon_create");
  BAD(sproj_recon_iterate(NULL, 1, NULL, NULL), NI, "sproj_recon_iterate");
  double nll = -1.0;
  BAD(sproj_recon_objective(NULL, &nll), NI, "sproj_recon_objective");
  BAD(sproj_recon_sensitivity(NULL, 0, buf), NI, "sproj_recon_sensitivity");
  BAD(sproj_recon_sensitivity_image(NULL, 0, NULL, 0), NI, "sproj_recon_sensitivity_image");
  BAD(sproj_recon_destroy(NULL), NI, "sproj_recon_destroy");

  /* the scanner chunkings need starproj running; the scanner itself does not */
  struct sproj_scanner_params sp;
  sproj_scanner *sc = NULL;
  ck_assert_int_eq(sproj_scanner_preset("small", &sp), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_create(&sc, &sp), SPROJ_OK);
  BAD(sproj_scanner_chunks_views(&c, sc, NULL), NI, "sproj_scanner_chunks_views");
  BAD(sproj_scanner_chunks_viewgrams(&c, sc, NULL), NI, "sproj_scanner_chunks_viewgrams");
  BAD(sproj_scanner_chunks_subsets(&c, sc, NULL, 2), NI, "sproj_scanner_chunks_subsets");
  ck_assert_int_eq(sproj_scanner_destroy(sc), SPROJ_OK);

  /* the one-shot calls */
  float out[NL], back_img[8 * 7 * 6];
  for (int i = 0; i < NL; i++)
    out[i] = SENTF;
  for (int i = 0; i < 8 * 7 * 6; i++)
    back_img[i] = SENTF;
  float sigma = 5.0f, offset = 0.0f;
  BAD(sproj_pp_joseph3d_fwd(xs, xe, image, G.origin, G.vs, out, NL, G.n, 0, 64), NI, "sproj_pp_joseph3d_fwd");
  BAD(sproj_pp_joseph3d_back(xs, xe, back_img, G.origin, G.vs, out, NL, G.n, 0, 64), NI, "sproj_pp_joseph3d_back");
  BAD(sproj_pp_joseph3d_tof_sino_fwd(xs, xe, image, G.origin, G.vs, tvalues, NL, G.n, 6.0f, &sigma, &offset, 3.0f, NB,
                                     0, 0, 0, 64),
      NI, "sproj_pp_joseph3d_tof_sino_fwd");
  BAD(sproj_pp_joseph3d_tof_sino_back(xs, xe, back_img, G.origin, G.vs, out, NL, G.n, 6.0f, &sigma, &offset, 3.0f,
                                      NB, 0, 0, 0, 64),
      NI, "sproj_pp_joseph3d_tof_sino_back");
  BAD(sproj_pp_joseph3d_tof_lm_fwd(xs, xe, image, G.origin, G.vs, out, NL, G.n, 6.0f, &sigma, &offset, 3.0f, ebins,
                                   NB, 0, 0, 0, 64),
      NI, "sproj_pp_joseph3d_tof_lm_fwd");
  BAD(sproj_pp_joseph3d_tof_lm_back(xs, xe, back_img, G.origin, G.vs, out, NL, G.n, 6.0f, &sigma, &offset, 3.0f,
                                    ebins, NB, 0, 0, 0, 64),
      NI, "sproj_pp_joseph3d_tof_lm_back");
  for (int i = 0; i < NL; i++)
    ck_assert_msg(out[i] == SENTF, "a one-shot call wrote value %d while not initialised", i);
  for (int i = 0; i < 8 * 7 * 6; i++)
    ck_assert_msg(back_img[i] == SENTF, "a one-shot call wrote voxel %d while not initialised", i);

  /* nothing was created or written */
  ck_assert_ptr_eq(p, SENTINEL);
  ck_assert_ptr_eq(im, SENTINEL);
  ck_assert_ptr_eq(lo, SENTINEL);
  ck_assert_ptr_eq(c, SENTINEL);
  ck_assert_ptr_eq(pr, SENTINEL);
  ck_assert_ptr_eq(to, SENTINEL);
  ck_assert_ptr_eq(mo, SENTINEL);
  ck_assert_ptr_eq(re, SENTINEL);
  ck_assert_msg(nll == -1.0, "sproj_recon_objective wrote its output");
  ck_assert_msg(memcmp(&st, &st0, sizeof st) == 0, "sproj_worker_stats wrote its output");

  /* the getters answer "nothing" */
  ck_assert_ptr_null(sproj_scheduler_name());
  ck_assert_int_eq(sproj_num_cpu_workers(), 0);
  ck_assert_int_eq(sproj_num_gpus(), 0);
  ck_assert_int_eq(sproj_num_workers(), 0);
  ck_assert_int_eq(sproj_get_task_lors(), 0);
  ck_assert_ptr_null(sproj_image_handle(NULL));
}

START_TEST(test_before_init)
{
  not_init_barrage();

  /* bad configurations are refused before anything starts */
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = INT_MAX;
  BAD(sproj_init(&cfg), SPROJ_ERR_RANGE, "sproj_init");
  sproj_config_init(&cfg);
  cfg.ncpu = INT_MIN;
  BAD(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
  sproj_config_init(&cfg);
  cfg.task_lors = INT64_MAX;
  BAD(sproj_init(&cfg), SPROJ_ERR_RANGE, "sproj_init");
  sproj_config_init(&cfg);
  cfg.task_lors = INT64_MIN;
  BAD(sproj_init(&cfg), SPROJ_ERR_RANGE, "sproj_init");
  sproj_config_init(&cfg);
  cfg.ncuda = INT_MIN;
  BAD(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
  sproj_config_init(&cfg);
  cfg.workers_per_gpu = INT_MIN;
  BAD(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
  sproj_config_init(&cfg);
  cfg.max_queued_tasks = INT_MIN;
  BAD(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
  sproj_config_init(&cfg);
  cfg.reproducible = 7;
  BAD(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
  sproj_config_init(&cfg);
  cfg.merge_calls = 2;
  BAD(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
  sproj_config_init(&cfg);
  cfg.image_layouts = -2;
  BAD(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
  ck_assert_ptr_null(sproj_scheduler_name());
}
END_TEST

START_TEST(test_after_shutdown)
{
  not_init_barrage();
}
END_TEST

/* Registers the objects and computes the reference every later test compares with. */
START_TEST(test_setup)
{
  setup_objects();
  compute(&ref);
  int64_t nvox = tu_nvox(&G);
  for (int i = 0; i < NL; i++)
    ck_assert_msg(isfinite(ref.fwd[i]) && isfinite(ref.lmfwd[i]), "reference value %d not written", i);
  /* a reference of zeros would prove nothing */
  ck_assert_msg(tu_max_abs(ref.fwd, NL) > 0 && tu_max_abs(ref.tfwd, NL * NB) > 0 && tu_max_abs(ref.lmfwd, NL) > 0,
                "the reference forward projections are zero");
  ck_assert_msg(tu_max_abs(ref.back, nvox) > 0 && tu_max_abs(ref.tback, nvox) > 0,
                "the reference back projections are zero");
  /* and the comparison itself is deterministic here */
  check_unchanged("nothing");
}
END_TEST

START_TEST(test_teardown)
{
  teardown_objects();
}
END_TEST

/* ---- runtime ---------------------------------------------------------------------------------------------------- */
START_TEST(test_runtime)
{
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  BAD(sproj_init(NULL), SPROJ_ERR_INVALID, "sproj_init"); /* already running */
  cfg.ncpu = INT_MAX;
  BAD(sproj_init(&cfg), SPROJ_ERR_INVALID, "sproj_init");
  int64_t task_lors = sproj_get_task_lors();
  const int64_t bad_lors[] = {INT64_MIN, -2, (int64_t)UINT32_MAX + 1, INT64_MAX};
  for (size_t i = 0; i < sizeof bad_lors / sizeof bad_lors[0]; i++)
    BAD(sproj_set_task_lors(bad_lors[i]), SPROJ_ERR_RANGE, "sproj_set_task_lors");
  ck_assert_int_eq(sproj_get_task_lors(), task_lors);
  const int bad_merge[] = {INT_MIN, -1, 2, INT_MAX};
  for (size_t i = 0; i < sizeof bad_merge / sizeof bad_merge[0]; i++)
    BAD(sproj_set_merge_calls(bad_merge[i]), SPROJ_ERR_INVALID, "sproj_set_merge_calls");
  for (size_t i = 0; i < sizeof bad_merge / sizeof bad_merge[0]; i++)
    BAD(sproj_set_image_layouts(bad_merge[i]), SPROJ_ERR_INVALID, "sproj_set_image_layouts");
  ck_assert_int_eq(sproj_flush(), SPROJ_OK);
  const unsigned bad_masks[] = {0, 4, 5, 7, 0x80000000u, UINT_MAX};
  for (size_t i = 0; i < sizeof bad_masks / sizeof bad_masks[0]; i++)
    BAD(sproj_set_devices(bad_masks[i]), SPROJ_ERR_INVALID, "sproj_set_devices");
  if (sproj_num_gpus() == 0)
    BAD(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_ERR_NO_DEVICE, "sproj_set_devices");

  struct sproj_worker_stats st, st0;
  memset(&st, 0x5a, sizeof st);
  st0 = st;
  const int bad_workers[] = {INT_MIN, -1, sproj_num_workers(), INT_MAX};
  for (size_t i = 0; i < sizeof bad_workers / sizeof bad_workers[0]; i++)
    BAD(sproj_worker_stats(bad_workers[i], &st), SPROJ_ERR_RANGE, "sproj_worker_stats");
  BAD(sproj_worker_stats(INT_MAX, NULL), SPROJ_ERR_NULL, "sproj_worker_stats");
  ck_assert_msg(memcmp(&st, &st0, sizeof st) == 0, "sproj_worker_stats wrote its output on failure");

  BAD(sproj_batch_end(), SPROJ_ERR_INVALID, "sproj_batch_end");
  /* bad calls inside a batch collect nothing and leave the batch usable */
  ck_assert_int_eq(sproj_batch_begin(), SPROJ_OK);
  BAD(sproj_fwd(img, proj, ch, INT_MAX), SPROJ_ERR_RANGE, "sproj_fwd");
  BAD(sproj_fwd(img, proj, och, 0), SPROJ_ERR_MISMATCH, "sproj_fwd");
  BAD(sproj_back(img, NULL, ch, 0), SPROJ_ERR_NULL, "sproj_back");
  ck_assert_int_eq(sproj_batch_end(), SPROJ_OK);
  BAD(sproj_batch_end(), SPROJ_ERR_INVALID, "sproj_batch_end");

  void *p = SENTINEL;
  BAD(sproj_malloc_pinned(NULL, 0), SPROJ_ERR_NULL, "sproj_malloc_pinned");
  BAD(sproj_malloc_pinned(NULL, SIZE_MAX), SPROJ_ERR_NULL, "sproj_malloc_pinned");
  BAD(sproj_malloc_pinned(&p, SIZE_MAX / 2), SPROJ_ERR_NOMEM, "sproj_malloc_pinned");
  ck_assert_ptr_eq(p, SENTINEL);
  float buf[16];
  BAD(sproj_pin(NULL, 0), SPROJ_ERR_NULL, "sproj_pin");
  BAD(sproj_pin(NULL, SIZE_MAX), SPROJ_ERR_NULL, "sproj_pin");
  BAD(sproj_unpin(buf, 0), SPROJ_ERR_EMPTY, "sproj_unpin");
  BAD(sproj_unpin(NULL, 0), SPROJ_ERR_NULL, "sproj_unpin");
  BAD(sproj_shutdown(), SPROJ_ERR_BUSY, "sproj_shutdown");
  ck_assert_int_eq(sproj_stats_reset(), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
}
END_TEST

/* ---- images ----------------------------------------------------------------------------------------------------- */
START_TEST(test_images)
{
  sproj_image *im = SENTINEL;
  const int bad_dims[][3] = {{0, 7, 6}, {8, 0, 6}, {8, 7, 0}, {-1, 7, 6}, {8, INT_MIN, 6}, {8, 7, -6}, {0, 0, 0}};
  for (size_t i = 0; i < sizeof bad_dims / sizeof bad_dims[0]; i++) {
    BAD(sproj_image_register(&im, image, bad_dims[i], G.vs, G.origin), SPROJ_ERR_DIMS, "sproj_image_register");
    BAD(sproj_image_register_handle(&im, sproj_image_handle(img), bad_dims[i], G.vs, G.origin), SPROJ_ERR_DIMS,
        "sproj_image_register_handle");
  }
  const int big_dims[][3] = {{INT_MAX, INT_MAX, INT_MAX}, {INT_MAX, 3, 1}, {65536, 65536, 1}, {1 << 11, 1 << 11, 1 << 10}};
  for (size_t i = 0; i < sizeof big_dims / sizeof big_dims[0]; i++)
    BAD(sproj_image_register(&im, image, big_dims[i], G.vs, G.origin), SPROJ_ERR_OVERFLOW, "sproj_image_register");
  const float bad_vs[][3] = {{0, 1, 1},  {1, -0.0f, 1}, {1, 1, -1e-30f}, {NAN, 1, 1}, {1, -NAN, 1},
                             {1, 1, INFINITY}, {-INFINITY, 1, 1}, {-FLT_MAX, 1, 1}, {-FLT_TRUE_MIN, 1, 1}};
  for (size_t i = 0; i < sizeof bad_vs / sizeof bad_vs[0]; i++) {
    BAD(sproj_image_register(&im, image, G.n, bad_vs[i], G.origin), SPROJ_ERR_VOXEL_SIZE, "sproj_image_register");
    BAD(sproj_image_register_handle(&im, sproj_image_handle(img), G.n, bad_vs[i], G.origin), SPROJ_ERR_VOXEL_SIZE,
        "sproj_image_register_handle");
  }
  const float bad_origin[][3] = {{NAN, 0, 0}, {0, INFINITY, 0}, {0, 0, -INFINITY}, {-NAN, NAN, NAN}};
  for (size_t i = 0; i < sizeof bad_origin / sizeof bad_origin[0]; i++) {
    BAD(sproj_image_register(&im, image, G.n, G.vs, bad_origin[i]), SPROJ_ERR_NONFINITE, "sproj_image_register");
    BAD(sproj_image_register_handle(&im, sproj_image_handle(img), G.n, G.vs, bad_origin[i]), SPROJ_ERR_NONFINITE,
        "sproj_image_register_handle");
  }
  /* huge voxels: the image's extent overflows float */
  const float huge_vs[3] = {FLT_MAX, 1, 1};
  BAD(sproj_image_register(&im, image, G.n, huge_vs, G.origin), SPROJ_ERR_OVERFLOW, "sproj_image_register");
  BAD(sproj_image_register(NULL, NULL, NULL, NULL, NULL), SPROJ_ERR_NULL, "sproj_image_register");
  BAD(sproj_image_register_handle(NULL, sproj_image_handle(img), G.n, G.vs, G.origin), SPROJ_ERR_NULL,
      "sproj_image_register_handle");
  BAD(sproj_image_register_handle(&im, sproj_image_handle(img), NULL, G.vs, G.origin), SPROJ_ERR_NULL,
      "sproj_image_register_handle");
  BAD(sproj_image_register_handle(&im, sproj_image_handle(img), G.n, NULL, G.origin), SPROJ_ERR_NULL,
      "sproj_image_register_handle");
  BAD(sproj_image_register_handle(&im, sproj_image_handle(img), G.n, G.vs, NULL), SPROJ_ERR_NULL,
      "sproj_image_register_handle");
  /* another image's size */
  const int wrong_dims[3] = {8, 7, 5};
  BAD(sproj_image_register_handle(&im, sproj_image_handle(img), wrong_dims, G.vs, G.origin), SPROJ_ERR_INVALID,
      "sproj_image_register_handle");
  ck_assert_ptr_eq(im, SENTINEL);

  const int bad_gpus[] = {INT_MIN, -2, sproj_num_gpus(), 1000, INT_MAX};
  for (size_t i = 0; i < sizeof bad_gpus / sizeof bad_gpus[0]; i++) {
    BAD(sproj_image_upload(img, bad_gpus[i]), SPROJ_ERR_NO_DEVICE, "sproj_image_upload");
    BAD(sproj_image_release(img, bad_gpus[i]), SPROJ_ERR_NO_DEVICE, "sproj_image_release");
  }
  BAD(sproj_image_upload(NULL, INT_MAX), SPROJ_ERR_NULL, "sproj_image_upload");
  BAD(sproj_image_release(NULL, SPROJ_ALL_GPUS), SPROJ_ERR_NULL, "sproj_image_release");
  const int bad_modes[] = {INT_MIN, -1, 0, 3, 4, INT_MAX};
  for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++)
    BAD(sproj_image_sync(img, bad_modes[i]), SPROJ_ERR_INVALID, "sproj_image_sync");
  BAD(sproj_image_sync(NULL, 0), SPROJ_ERR_NULL, "sproj_image_sync");
  const int bad_on[] = {INT_MIN, -1, 2, INT_MAX};
  for (size_t i = 0; i < sizeof bad_on / sizeof bad_on[0]; i++)
    BAD(sproj_image_set_reproducible(img, bad_on[i]), SPROJ_ERR_INVALID, "sproj_image_set_reproducible");
  BAD(sproj_image_set_reproducible(NULL, 0), SPROJ_ERR_NULL, "sproj_image_set_reproducible");
  check_unchanged("the image calls");
}
END_TEST

/* ---- LOR sets and chunkings ------------------------------------------------------------------------------------- */
START_TEST(test_lors)
{
  sproj_lors *lo = SENTINEL;
  float bad[3 * NL];
  int16_t bins[NL];
  memcpy(bins, ebins, sizeof bins);
  const int64_t bad_n[] = {INT64_MIN, -1};
  for (size_t i = 0; i < 2; i++) {
    BAD(sproj_lors_register(&lo, xs, xe, bad_n[i]), SPROJ_ERR_DIMS, "sproj_lors_register");
    BAD(sproj_lors_register_events(&lo, xs, xe, bins, bad_n[i]), SPROJ_ERR_DIMS, "sproj_lors_register_events");
  }
  const int64_t over_n[] = {(int64_t)UINT32_MAX + 1, INT64_MAX};
  for (size_t i = 0; i < 2; i++) {
    BAD(sproj_lors_register(&lo, xs, xe, over_n[i]), SPROJ_ERR_OVERFLOW, "sproj_lors_register");
    BAD(sproj_lors_register_events(&lo, xs, xe, bins, over_n[i]), SPROJ_ERR_OVERFLOW, "sproj_lors_register_events");
  }
  BAD(sproj_lors_register_events(&lo, xs, xe, bins, 0), SPROJ_ERR_EMPTY, "sproj_lors_register_events");
  BAD(sproj_lors_register_events(NULL, xs, xe, bins, NL), SPROJ_ERR_NULL, "sproj_lors_register_events");
  BAD(sproj_lors_register_events(&lo, NULL, xe, bins, NL), SPROJ_ERR_NULL, "sproj_lors_register_events");
  BAD(sproj_lors_register_events(&lo, xs, NULL, bins, NL), SPROJ_ERR_NULL, "sproj_lors_register_events");
  BAD(sproj_lors_register_events(&lo, xs, xe, NULL, NL), SPROJ_ERR_NULL, "sproj_lors_register_events");
  BAD(sproj_lors_register(NULL, NULL, NULL, -1), SPROJ_ERR_NULL, "sproj_lors_register");
  /* coordinates: not finite (NONFINITE) or beyond SPROJ_MAX_COORDINATE (RANGE), in either array, in the last LOR */
  const float nonfinite[] = {NAN, -NAN, INFINITY, -INFINITY};
  const float far[] = {SPROJ_MAX_COORDINATE * 1.0001f, -SPROJ_MAX_COORDINATE * 1.0001f, FLT_MAX, -FLT_MAX};
  for (int k = 0; k < 4; k++)
    for (int which = 0; which < 2; which++) {
      memcpy(bad, which ? xe : xs, sizeof bad);
      bad[3 * NL - 1 - k % 3] = nonfinite[k];
      BAD(sproj_lors_register(&lo, which ? xs : bad, which ? bad : xe, NL), SPROJ_ERR_NONFINITE,
          "sproj_lors_register");
      BAD(sproj_lors_register_events(&lo, which ? xs : bad, which ? bad : xe, bins, NL), SPROJ_ERR_NONFINITE,
          "sproj_lors_register_events");
      bad[3 * NL - 1 - k % 3] = far[k];
      BAD(sproj_lors_register(&lo, which ? xs : bad, which ? bad : xe, NL), SPROJ_ERR_RANGE, "sproj_lors_register");
      BAD(sproj_lors_register_events(&lo, which ? xs : bad, which ? bad : xe, bins, NL), SPROJ_ERR_RANGE,
          "sproj_lors_register_events");
    }
  const int16_t bad_bins[] = {-1, INT16_MIN};
  for (int k = 0; k < 2; k++) {
    bins[NL - 1] = bad_bins[k];
    BAD(sproj_lors_register_events(&lo, xs, xe, bins, NL), SPROJ_ERR_RANGE, "sproj_lors_register_events");
  }
  ck_assert_ptr_eq(lo, SENTINEL);

  /* handles: NULLs, the wrong kind */
  BAD(sproj_lors_register_handles(NULL, NULL, NULL), SPROJ_ERR_NULL, "sproj_lors_register_handles");
  BAD(sproj_lors_register_handles(&lo, NULL, sproj_image_handle(img)), SPROJ_ERR_NULL,
      "sproj_lors_register_handles");
  BAD(sproj_lors_register_handles(&lo, sproj_image_handle(img), sproj_image_handle(img)), SPROJ_ERR_INVALID,
      "sproj_lors_register_handles");
  ck_assert_ptr_eq(lo, SENTINEL);

  int64_t n = SENT64;
  BAD(sproj_lors_count(NULL, &n), SPROJ_ERR_NULL, "sproj_lors_count");
  BAD(sproj_lors_count(lors, NULL), SPROJ_ERR_NULL, "sproj_lors_count");
  ck_assert_int_eq(n, SENT64);
  /* an order of LORs: bad counts, NULLs, voxel sizes, too many; nothing written into the order */
  int64_t ord[NL], perm[NL];
  for (int i = 0; i < NL; i++)
    ord[i] = SENT64;
  const char *LO = "sproj_lors_order", *RO = "sproj_reorder";
  BAD(sproj_lors_order(xs, xe, INT64_MIN, G.vs, ord), SPROJ_ERR_RANGE, LO);
  BAD(sproj_lors_order(xs, xe, -1, G.vs, ord), SPROJ_ERR_RANGE, LO);
  BAD(sproj_lors_order(NULL, xe, NL, G.vs, ord), SPROJ_ERR_NULL, LO);
  BAD(sproj_lors_order(xs, NULL, NL, G.vs, ord), SPROJ_ERR_NULL, LO);
  BAD(sproj_lors_order(xs, xe, NL, NULL, ord), SPROJ_ERR_NULL, LO);
  BAD(sproj_lors_order(xs, xe, NL, G.vs, NULL), SPROJ_ERR_NULL, LO);
  const float bad_vs[][3] = {{0.0f, 1.0f, 1.0f}, {1.0f, -1.0f, 1.0f}, {1.0f, 1.0f, NAN}, {INFINITY, 1.0f, 1.0f},
                             {-0.0f, 1.0f, 1.0f}, {1.0f, 1.0f, -INFINITY}};
  for (size_t k = 0; k < sizeof bad_vs / sizeof bad_vs[0]; k++)
    BAD(sproj_lors_order(xs, xe, NL, bad_vs[k], ord), SPROJ_ERR_VOXEL_SIZE, LO);
  BAD(sproj_lors_order(xs, xe, INT64_MAX, G.vs, ord), SPROJ_ERR_OVERFLOW, LO);
  for (int i = 0; i < NL; i++)
    ck_assert_int_eq(ord[i], SENT64);
  /* a reorder by what is not a permutation of 0 .. n-1, and other bad arguments: the array stays as it was */
  float arr[NL], before[NL];
  for (int i = 0; i < NL; i++)
    arr[i] = before[i] = (float)i + 0.5f;
  const int64_t bad_index[] = {-1, NL, INT64_MIN, INT64_MAX, 0 /* twice: 0 is already at place 0 */};
  for (size_t k = 0; k < sizeof bad_index / sizeof bad_index[0]; k++) {
    for (int i = 0; i < NL; i++)
      perm[i] = NL - 1 - i;
    perm[NL - 1] = bad_index[k] == 0 ? perm[0] : bad_index[k];
    BAD(sproj_reorder(arr, sizeof arr[0], NL, perm), SPROJ_ERR_RANGE, RO);
  }
  for (int i = 0; i < NL; i++)
    perm[i] = NL - 1 - i;
  BAD(sproj_reorder(arr, sizeof arr[0], INT64_MIN, perm), SPROJ_ERR_RANGE, RO);
  BAD(sproj_reorder(arr, sizeof arr[0], -1, perm), SPROJ_ERR_RANGE, RO);
  BAD(sproj_reorder(NULL, sizeof arr[0], NL, perm), SPROJ_ERR_NULL, RO);
  BAD(sproj_reorder(arr, sizeof arr[0], NL, NULL), SPROJ_ERR_NULL, RO);
  BAD(sproj_reorder(arr, 0, NL, perm), SPROJ_ERR_DIMS, RO);
  BAD(sproj_reorder(arr, SIZE_MAX, NL, perm), SPROJ_ERR_OVERFLOW, RO);
  ck_assert_int_eq(memcmp(arr, before, sizeof arr), 0);

  /* in use: by chunkings, projection vectors, per-LOR TOF parameters */
  BAD(sproj_lors_unregister(lors), SPROJ_ERR_BUSY, "sproj_lors_unregister");
  BAD(sproj_lors_unregister(other), SPROJ_ERR_BUSY, "sproj_lors_unregister");
  BAD(sproj_lors_unregister(events), SPROJ_ERR_BUSY, "sproj_lors_unregister");
  check_unchanged("the LOR set calls");
}
END_TEST

START_TEST(test_chunkings)
{
  sproj_chunks *c = SENTINEL;
  /* ranges */
  const int64_t f1[1] = {0}, c1[1] = {NL};
  const int64_t big_first[] = {NL, INT64_MAX, INT64_MIN, -1}, big_count[] = {NL + 1, INT64_MAX};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_chunks_create_ranges(&c, lors, 1, &big_first[i], c1), SPROJ_ERR_RANGE, "sproj_chunks_create_ranges");
  for (size_t i = 0; i < 2; i++)
    BAD(sproj_chunks_create_ranges(&c, lors, 1, f1, &big_count[i]), SPROJ_ERR_RANGE, "sproj_chunks_create_ranges");
  const int64_t neg_count[1] = {INT64_MIN};
  BAD(sproj_chunks_create_ranges(&c, lors, 1, f1, neg_count), SPROJ_ERR_DIMS, "sproj_chunks_create_ranges");
  BAD(sproj_chunks_create_ranges(&c, lors, INT_MIN, f1, c1), SPROJ_ERR_DIMS, "sproj_chunks_create_ranges");
  const int64_t dup_first[2] = {10, 10}, dup_count[2] = {5, 5};
  BAD(sproj_chunks_create_ranges(&c, lors, 2, dup_first, dup_count), SPROJ_ERR_RANGE, "sproj_chunks_create_ranges");
  /* blocks */
  const int bad_blocks[] = {NL + 1, INT_MAX};
  for (size_t i = 0; i < 2; i++)
    BAD(sproj_chunks_create_blocks(&c, lors, bad_blocks[i]), SPROJ_ERR_RANGE, "sproj_chunks_create_blocks");
  BAD(sproj_chunks_create_blocks(&c, lors, INT_MIN), SPROJ_ERR_DIMS, "sproj_chunks_create_blocks");
  BAD(sproj_chunks_create_blocks(&c, NULL, 2), SPROJ_ERR_NULL, "sproj_chunks_create_blocks");
  /* lists */
  const int nr1[1] = {1}, nr2[2] = {1, 1}, nr0[2] = {1, 0}, nrneg[1] = {-1}, nrmin[1] = {INT_MIN};
  const int64_t lf[2] = {0, 50}, lc[2] = {40, 20};
  const char *L = "sproj_chunks_create_lists";
  BAD(sproj_chunks_create_lists(NULL, lors, 2, nr2, lf, lc), SPROJ_ERR_NULL, L);
  BAD(sproj_chunks_create_lists(&c, NULL, 2, nr2, lf, lc), SPROJ_ERR_NULL, L);
  BAD(sproj_chunks_create_lists(&c, lors, 2, NULL, lf, lc), SPROJ_ERR_NULL, L);
  BAD(sproj_chunks_create_lists(&c, lors, 2, nr2, NULL, lc), SPROJ_ERR_NULL, L);
  BAD(sproj_chunks_create_lists(&c, lors, 2, nr2, lf, NULL), SPROJ_ERR_NULL, L);
  BAD(sproj_chunks_create_lists(&c, lors, 0, nr2, lf, lc), SPROJ_ERR_EMPTY, L);
  BAD(sproj_chunks_create_lists(&c, lors, -1, nr2, lf, lc), SPROJ_ERR_DIMS, L);
  BAD(sproj_chunks_create_lists(&c, lors, INT_MIN, nr2, lf, lc), SPROJ_ERR_DIMS, L);
  BAD(sproj_chunks_create_lists(&c, lors, 2, nr0, lf, lc), SPROJ_ERR_EMPTY, L);
  BAD(sproj_chunks_create_lists(&c, lors, 1, nrneg, lf, lc), SPROJ_ERR_DIMS, L);
  BAD(sproj_chunks_create_lists(&c, lors, 1, nrmin, lf, lc), SPROJ_ERR_DIMS, L);
  const int64_t lc0[2] = {40, 0}, lcneg[2] = {40, -3}, lovl[2] = {0, 39}, lout[2] = {0, NL - 10};
  BAD(sproj_chunks_create_lists(&c, lors, 2, nr2, lf, lc0), SPROJ_ERR_EMPTY, L);
  BAD(sproj_chunks_create_lists(&c, lors, 2, nr2, lf, lcneg), SPROJ_ERR_DIMS, L);
  BAD(sproj_chunks_create_lists(&c, lors, 2, nr2, lovl, lc), SPROJ_ERR_RANGE, L);
  BAD(sproj_chunks_create_lists(&c, lors, 2, nr2, lout, lc), SPROJ_ERR_RANGE, L);
  const int64_t lmax[1] = {INT64_MAX}, lone[1] = {1};
  BAD(sproj_chunks_create_lists(&c, lors, 1, nr1, lmax, lone), SPROJ_ERR_RANGE, L);
  BAD(sproj_chunks_create_lists(&c, lors, 1, nr1, lone, lmax), SPROJ_ERR_RANGE, L);
  /* the same range in two chunks */
  const int64_t same_f[2] = {5, 5}, same_c[2] = {5, 5};
  BAD(sproj_chunks_create_lists(&c, lors, 2, nr2, same_f, same_c), SPROJ_ERR_RANGE, L);
  /* strided */
  const char *S = "sproj_chunks_create_strided";
  const int64_t sf[1] = {0}, sc[1] = {10}, ss[1] = {20};
  const int snr[1] = {4};
  BAD(sproj_chunks_create_strided(NULL, lors, 1, sf, sc, ss, snr), SPROJ_ERR_NULL, S);
  BAD(sproj_chunks_create_strided(&c, NULL, 1, sf, sc, ss, snr), SPROJ_ERR_NULL, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, NULL, sc, ss, snr), SPROJ_ERR_NULL, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, NULL, ss, snr), SPROJ_ERR_NULL, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, sc, NULL, snr), SPROJ_ERR_NULL, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, sc, ss, NULL), SPROJ_ERR_NULL, S);
  BAD(sproj_chunks_create_strided(&c, lors, 0, sf, sc, ss, snr), SPROJ_ERR_EMPTY, S);
  BAD(sproj_chunks_create_strided(&c, lors, INT_MIN, sf, sc, ss, snr), SPROJ_ERR_DIMS, S);
  const int snr0[1] = {0}, snrneg[1] = {INT_MIN};
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, sc, ss, snr0), SPROJ_ERR_EMPTY, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, sc, ss, snrneg), SPROJ_ERR_DIMS, S);
  const int64_t sc0[1] = {0}, scneg[1] = {-10}, sstride0[1] = {0}, sstride5[1] = {5}, sbig[1] = {INT64_MAX};
  const int64_t sfneg[1] = {-1}, sfout[1] = {NL};
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, sc0, ss, snr), SPROJ_ERR_EMPTY, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, scneg, ss, snr), SPROJ_ERR_DIMS, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, sc, sstride0, snr), SPROJ_ERR_RANGE, S); /* the same range 4x */
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, sc, sstride5, snr), SPROJ_ERR_RANGE, S); /* overlapping */
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, sc, sbig, snr), SPROJ_ERR_RANGE, S);     /* past the end */
  BAD(sproj_chunks_create_strided(&c, lors, 1, sfneg, sc, ss, snr), SPROJ_ERR_RANGE, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, sfout, sc, ss, snr), SPROJ_ERR_RANGE, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, sbig, sc, ss, snr), SPROJ_ERR_RANGE, S);
  BAD(sproj_chunks_create_strided(&c, lors, 1, sf, sbig, ss, snr), SPROJ_ERR_RANGE, S);
  ck_assert_ptr_eq(c, SENTINEL);

  /* queries: NULLs, chunk indices out of range, outputs untouched */
  int num = INT_MIN;
  int64_t f = SENT64, cnt = SENT64, rf[4] = {SENT64, SENT64, SENT64, SENT64}, rc[4] = {SENT64, SENT64, SENT64, SENT64};
  BAD(sproj_chunks_count(NULL, NULL), SPROJ_ERR_NULL, "sproj_chunks_count");
  const int bad_chunk[] = {INT_MIN, -1, 4, INT_MAX};
  for (size_t i = 0; i < 4; i++) {
    BAD(sproj_chunks_range(ch, bad_chunk[i], &f, &cnt), SPROJ_ERR_RANGE, "sproj_chunks_range");
    BAD(sproj_chunks_size(ch, bad_chunk[i], &cnt), SPROJ_ERR_RANGE, "sproj_chunks_size");
    BAD(sproj_chunks_num_ranges(ch, bad_chunk[i], &num), SPROJ_ERR_RANGE, "sproj_chunks_num_ranges");
    BAD(sproj_chunks_ranges(ch, bad_chunk[i], rf, rc), SPROJ_ERR_RANGE, "sproj_chunks_ranges");
  }
  BAD(sproj_chunks_range(lch, 0, &f, &cnt), SPROJ_ERR_INVALID, "sproj_chunks_range"); /* two ranges */
  BAD(sproj_chunks_range(NULL, 0, &f, &cnt), SPROJ_ERR_NULL, "sproj_chunks_range");
  BAD(sproj_chunks_range(ch, 0, &f, NULL), SPROJ_ERR_NULL, "sproj_chunks_range");
  BAD(sproj_chunks_size(NULL, 0, &cnt), SPROJ_ERR_NULL, "sproj_chunks_size");
  BAD(sproj_chunks_size(ch, 0, NULL), SPROJ_ERR_NULL, "sproj_chunks_size");
  BAD(sproj_chunks_num_ranges(NULL, 0, &num), SPROJ_ERR_NULL, "sproj_chunks_num_ranges");
  BAD(sproj_chunks_num_ranges(ch, 0, NULL), SPROJ_ERR_NULL, "sproj_chunks_num_ranges");
  BAD(sproj_chunks_ranges(NULL, 0, rf, rc), SPROJ_ERR_NULL, "sproj_chunks_ranges");
  BAD(sproj_chunks_ranges(lch, 0, NULL, rc), SPROJ_ERR_NULL, "sproj_chunks_ranges");
  BAD(sproj_chunks_ranges(lch, 0, rf, NULL), SPROJ_ERR_NULL, "sproj_chunks_ranges");
  ck_assert_int_eq(num, INT_MIN);
  ck_assert_int_eq(f, SENT64);
  ck_assert_int_eq(cnt, SENT64);
  for (int i = 0; i < 4; i++)
    ck_assert_msg(rf[i] == SENT64 && rc[i] == SENT64, "sproj_chunks_ranges wrote on failure");

  /* residency of LOR chunks: foreign chunkings, chunk and GPU out of range (-1 is SPROJ_ALL_CHUNKS) */
  const int bad_res_chunk[] = {INT_MIN, -2, 4, INT_MAX};
  const char *U = "sproj_lors_upload", *R = "sproj_lors_release";
  BAD(sproj_lors_upload(lors, och, 0, SPROJ_ALL_GPUS), SPROJ_ERR_MISMATCH, U);
  BAD(sproj_lors_release(lors, och, 0, SPROJ_ALL_GPUS), SPROJ_ERR_MISMATCH, R);
  BAD(sproj_lors_upload(events, ch, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS), SPROJ_ERR_MISMATCH, U);
  for (size_t i = 0; i < 4; i++) {
    BAD(sproj_lors_upload(lors, ch, bad_res_chunk[i], SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, U);
    BAD(sproj_lors_release(lors, ch, bad_res_chunk[i], SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, R);
  }
  BAD(sproj_lors_upload(lors, NULL, 1, SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, U); /* the whole set is one chunk */
  BAD(sproj_lors_release(lors, NULL, INT_MAX, SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, R);
  const int bad_gpus[] = {INT_MIN, -2, sproj_num_gpus(), INT_MAX};
  for (size_t i = 0; i < 4; i++) {
    BAD(sproj_lors_upload(lors, ch, 0, bad_gpus[i]), SPROJ_ERR_NO_DEVICE, U);
    BAD(sproj_lors_release(lors, ch, 0, bad_gpus[i]), SPROJ_ERR_NO_DEVICE, R);
  }
  BAD(sproj_lors_release(NULL, ch, 0, SPROJ_ALL_GPUS), SPROJ_ERR_NULL, R);
  check_unchanged("the chunking calls");
}
END_TEST

/* ---- projection vectors ------------------------------------------------------------------------------------------ */
START_TEST(test_proj_vectors)
{
  sproj_proj *pr = SENTINEL;
  float buf[NL];
  const int bad_bins[] = {INT_MIN, -1};
  for (size_t i = 0; i < 2; i++)
    BAD(sproj_proj_register_tof(&pr, buf, lors, bad_bins[i]), SPROJ_ERR_DIMS, "sproj_proj_register_tof");
  BAD(sproj_proj_register_tof(&pr, buf, lors, 0), SPROJ_ERR_EMPTY, "sproj_proj_register_tof");
  const int over_bins[] = {SPROJ_MAX_TOF_BINS + 1, INT_MAX};
  for (size_t i = 0; i < 2; i++)
    BAD(sproj_proj_register_tof(&pr, buf, lors, over_bins[i]), SPROJ_ERR_TOF, "sproj_proj_register_tof");
  BAD(sproj_proj_register_tof(NULL, buf, lors, NB), SPROJ_ERR_NULL, "sproj_proj_register_tof");
  BAD(sproj_proj_register_tof(&pr, NULL, lors, NB), SPROJ_ERR_NULL, "sproj_proj_register_tof");
  BAD(sproj_proj_register_tof(&pr, buf, NULL, NB), SPROJ_ERR_NULL, "sproj_proj_register_tof");
  BAD(sproj_proj_register(NULL, NULL, NULL), SPROJ_ERR_NULL, "sproj_proj_register");
  BAD(sproj_proj_register_handle(NULL, sproj_image_handle(img), lors), SPROJ_ERR_NULL, "sproj_proj_register_handle");
  BAD(sproj_proj_register_handle(&pr, NULL, lors), SPROJ_ERR_NULL, "sproj_proj_register_handle");
  BAD(sproj_proj_register_handle(&pr, sproj_image_handle(img), NULL), SPROJ_ERR_NULL, "sproj_proj_register_handle");
  /* a float vector of the image's length is another size than the LOR set's */
  BAD(sproj_proj_register_handle(&pr, sproj_image_handle(img), lors), SPROJ_ERR_MISMATCH,
      "sproj_proj_register_handle");
  ck_assert_ptr_eq(pr, SENTINEL);

  const int bad_chunk[] = {INT_MIN, -2, 4, INT_MAX};
  const char *U = "sproj_proj_upload", *R = "sproj_proj_release", *Y = "sproj_proj_sync";
  for (size_t i = 0; i < 4; i++) {
    BAD(sproj_proj_upload(proj, ch, bad_chunk[i], SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, U);
    BAD(sproj_proj_release(proj, ch, bad_chunk[i], SPROJ_ALL_GPUS), SPROJ_ERR_RANGE, R);
    BAD(sproj_proj_sync(proj, ch, bad_chunk[i], SPROJ_SYNC_READ), SPROJ_ERR_RANGE, Y);
    BAD(sproj_proj_sync(tproj, NULL, bad_chunk[i] == -2 ? 1 : bad_chunk[i], SPROJ_SYNC_READ), SPROJ_ERR_RANGE, Y);
  }
  BAD(sproj_proj_upload(proj, och, 0, SPROJ_ALL_GPUS), SPROJ_ERR_MISMATCH, U);
  BAD(sproj_proj_release(tproj, evch, 0, SPROJ_ALL_GPUS), SPROJ_ERR_MISMATCH, R);
  BAD(sproj_proj_sync(eproj, ch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_WRITE), SPROJ_ERR_MISMATCH, Y);
  const int bad_gpus[] = {INT_MIN, -2, sproj_num_gpus(), INT_MAX};
  for (size_t i = 0; i < 4; i++) {
    BAD(sproj_proj_upload(proj, ch, 0, bad_gpus[i]), SPROJ_ERR_NO_DEVICE, U);
    BAD(sproj_proj_release(proj, NULL, 0, bad_gpus[i]), SPROJ_ERR_NO_DEVICE, R);
  }
  BAD(sproj_proj_upload(NULL, ch, 0, SPROJ_ALL_GPUS), SPROJ_ERR_NULL, U);
  const int bad_modes[] = {INT_MIN, 0, 3, INT_MAX};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_proj_sync(proj, ch, 0, bad_modes[i]), SPROJ_ERR_INVALID, Y);
  check_unchanged("the projection vector calls");
}
END_TEST

/* ---- projections: one table for the twelve submission calls -------------------------------------------------------- */
enum kind { NONTOF, SINO, LM };
struct projector {
  const char *name;
  enum kind kind;
  int list; /* 1: the _chunks variant */
  int (*one)(sproj_image *, sproj_proj *, const sproj_chunks *, int, const sproj_tof *);
  int (*many)(sproj_image *, sproj_proj *, const sproj_chunks *, const int *, int, const sproj_tof *);
};

static int fwd1(sproj_image *i, sproj_proj *p, const sproj_chunks *c, int k, const sproj_tof *t)
{
  (void)t;
  return sproj_fwd(i, p, c, k);
}
static int back1(sproj_image *i, sproj_proj *p, const sproj_chunks *c, int k, const sproj_tof *t)
{
  (void)t;
  return sproj_back(i, p, c, k);
}
static int fwdn(sproj_image *i, sproj_proj *p, const sproj_chunks *c, const int *l, int n, const sproj_tof *t)
{
  (void)t;
  return sproj_fwd_chunks(i, p, c, l, n);
}
static int backn(sproj_image *i, sproj_proj *p, const sproj_chunks *c, const int *l, int n, const sproj_tof *t)
{
  (void)t;
  return sproj_back_chunks(i, p, c, l, n);
}

static const struct projector projectors[] = {
  {"sproj_fwd", NONTOF, 0, fwd1, NULL},
  {"sproj_back", NONTOF, 0, back1, NULL},
  {"sproj_fwd_chunks", NONTOF, 1, NULL, fwdn},
  {"sproj_back_chunks", NONTOF, 1, NULL, backn},
  {"sproj_fwd_tof_sino", SINO, 0, sproj_fwd_tof_sino, NULL},
  {"sproj_back_tof_sino", SINO, 0, sproj_back_tof_sino, NULL},
  {"sproj_fwd_tof_sino_chunks", SINO, 1, NULL, sproj_fwd_tof_sino_chunks},
  {"sproj_back_tof_sino_chunks", SINO, 1, NULL, sproj_back_tof_sino_chunks},
  {"sproj_fwd_tof_lm", LM, 0, sproj_fwd_tof_lm, NULL},
  {"sproj_back_tof_lm", LM, 0, sproj_back_tof_lm, NULL},
  {"sproj_fwd_tof_lm_chunks", LM, 1, NULL, sproj_fwd_tof_lm_chunks},
  {"sproj_back_tof_lm_chunks", LM, 1, NULL, sproj_back_tof_lm_chunks},
};

/* One request of projector p with one chunk index k (a list of one for the _chunks variants). */
static int submit1(const struct projector *p, sproj_image *i, sproj_proj *pr, const sproj_chunks *c, int k,
                   const sproj_tof *t)
{
  return p->list ? p->many(i, pr, c, &k, 1, t) : p->one(i, pr, c, k, t);
}

START_TEST(test_projections)
{
  /* events registered with bins up to 6: beyond the 5 bins of tof */
  int16_t high[NL];
  memcpy(high, ebins, sizeof high);
  high[NL / 2] = 6;
  sproj_lors *hev;
  sproj_proj *hproj, *t3proj;
  float hvalues[NL], *t3values = tu_alloc(NL * 3);
  ck_assert_int_eq(sproj_lors_register_events(&hev, xs, xe, high, NL), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&hproj, hvalues, hev), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_tof(&t3proj, t3values, lors, 3), SPROJ_OK);
  /* a TOF of another number of bins */
  sproj_tof *tof7;
  struct sproj_tof_params p7 = TOFP;
  p7.num_bins = 7;
  ck_assert_int_eq(sproj_tof_register(&tof7, &p7, NULL, NULL, NULL), SPROJ_OK);

  for (size_t j = 0; j < sizeof projectors / sizeof projectors[0]; j++) {
    const struct projector *p = &projectors[j];
    const char *F = p->name;
    sproj_proj *good = p->kind == NONTOF ? proj : p->kind == SINO ? tproj : eproj;
    const sproj_chunks *gch = p->kind == LM ? evch : ch;
    int nch = p->kind == LM ? 3 : 4;
    const sproj_tof *t = p->kind == NONTOF ? NULL : tof;
    /* NULLs */
    BAD(submit1(p, NULL, good, gch, 0, t), SPROJ_ERR_NULL, F);
    BAD(submit1(p, img, NULL, gch, 0, t), SPROJ_ERR_NULL, F);
    if (p->kind != NONTOF)
      BAD(submit1(p, img, good, gch, 0, NULL), SPROJ_ERR_NULL, F);
    /* chunk indices outside the chunking, or nonzero without one */
    const int bad_chunk[] = {INT_MIN, -2, nch, INT_MAX};
    for (size_t i = 0; i < 4; i++) {
      BAD(submit1(p, img, good, gch, bad_chunk[i], t), SPROJ_ERR_RANGE, F);
      if (!p->list)
        BAD(submit1(p, img, good, NULL, bad_chunk[i] == -2 ? 1 : bad_chunk[i], t), SPROJ_ERR_RANGE, F);
    }
    /* a chunking of another LOR set */
    BAD(submit1(p, img, good, p->kind == LM ? ch : och, 0, t), SPROJ_ERR_MISMATCH, F);
    if (p->list) {
      /* list arguments: NULL, no chunks, a negative count, a bad index after good and repeated ones */
      int list[6] = {0, 1, 1, 0, 1, 0};
      BAD(p->many(img, good, gch, NULL, 2, t), SPROJ_ERR_NULL, F);
      BAD(p->many(img, good, gch, list, 0, t), SPROJ_ERR_EMPTY, F);
      BAD(p->many(img, good, gch, list, -1, t), SPROJ_ERR_DIMS, F);
      BAD(p->many(img, good, gch, list, INT_MIN, t), SPROJ_ERR_DIMS, F);
      for (size_t i = 0; i < 4; i++) {
        list[5] = bad_chunk[i];
        BAD(p->many(img, good, gch, list, 6, t), SPROJ_ERR_RANGE, F);
      }
    }
    /* vectors of the wrong shape for the projector */
    switch (p->kind) {
    case NONTOF:
      BAD(submit1(p, img, tproj, ch, 0, NULL), SPROJ_ERR_MISMATCH, F);
      break;
    case SINO:
      BAD(submit1(p, img, proj, ch, 0, tof), SPROJ_ERR_MISMATCH, F);  /* one value per LOR */
      BAD(submit1(p, img, t3proj, ch, 0, tof), SPROJ_ERR_MISMATCH, F); /* 3 bins, tof has 5 */
      BAD(submit1(p, img, tproj, ch, 0, tof7), SPROJ_ERR_MISMATCH, F);
      BAD(submit1(p, img, oproj, och, 0, tof), SPROJ_ERR_MISMATCH, F); /* oproj: one value per LOR */
      break;
    case LM:
      BAD(submit1(p, img, proj, ch, 0, tof), SPROJ_ERR_INVALID, F);   /* a LOR set without bins */
      BAD(submit1(p, img, hproj, NULL, 0, tof), SPROJ_ERR_RANGE, F);  /* a bin beyond tof's */
      BAD(submit1(p, img, eproj, evch, 0, otof), SPROJ_ERR_MISMATCH, F); /* per-LOR sigma of another set */
      break;
    }
    if (p->kind == SINO) {
      /* per-LOR parameters of another set */
      sproj_proj *o5;
      float *o5v = tu_alloc(NL * NB);
      ck_assert_int_eq(sproj_proj_register_tof(&o5, o5v, lors, NB), SPROJ_OK);
      BAD(submit1(p, img, o5, ch, 0, otof), SPROJ_ERR_MISMATCH, F);
      ck_assert_int_eq(sproj_proj_unregister(o5), SPROJ_OK);
      free(o5v);
    }
  }
  ck_assert_int_eq(sproj_tof_unregister(tof7), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(t3proj), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(hproj), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(hev), SPROJ_OK);
  free(t3values);
  check_unchanged("the projection calls");
}
END_TEST

/* ---- TOF parameters ---------------------------------------------------------------------------------------------- */
struct tof_case {
  float bin_width;
  int num_bins;
  float num_sigmas, sigma, offset;
  int want;
};

START_TEST(test_tof_params)
{
  const float DEN = FLT_TRUE_MIN;
  const struct tof_case cases[] = {
    {NAN, NB, 3, 5, 0, SPROJ_ERR_TOF},       {INFINITY, NB, 3, 5, 0, SPROJ_ERR_TOF},
    {0, NB, 3, 5, 0, SPROJ_ERR_TOF},         {-6, NB, 3, 5, 0, SPROJ_ERR_TOF},
    {DEN, NB, 3, 5, 0, SPROJ_ERR_TOF},       {FLT_MAX, NB, 3, 5, 0, SPROJ_ERR_TOF},
    {6, 0, 3, 5, 0, SPROJ_ERR_TOF},          {6, -1, 3, 5, 0, SPROJ_ERR_TOF},
    {6, INT_MIN, 3, 5, 0, SPROJ_ERR_TOF},    {6, SPROJ_MAX_TOF_BINS + 1, 3, 5, 0, SPROJ_ERR_TOF},
    {6, INT_MAX, 3, 5, 0, SPROJ_ERR_TOF},    {6, NB, NAN, 5, 0, SPROJ_ERR_TOF},
    {6, NB, -INFINITY, 5, 0, SPROJ_ERR_TOF}, {6, NB, 0, 5, 0, SPROJ_ERR_TOF},
    {6, NB, -3, 5, 0, SPROJ_ERR_TOF},        {6, NB, INFINITY, 5, 0, SPROJ_ERR_TOF},
    {6, NB, 3, NAN, 0, SPROJ_ERR_TOF},       {6, NB, 3, INFINITY, 0, SPROJ_ERR_TOF},
    {6, NB, 3, 0, 0, SPROJ_ERR_TOF},         {6, NB, 3, -5, 0, SPROJ_ERR_TOF},
    {6, NB, 3, DEN, 0, SPROJ_ERR_TOF},       {6, NB, 3, FLT_MAX, 0, SPROJ_ERR_TOF},
    {6, NB, 3, 5, NAN, SPROJ_ERR_NONFINITE}, {6, NB, 3, 5, -INFINITY, SPROJ_ERR_NONFINITE},
    {6, NB, 3, 5, FLT_MAX, SPROJ_ERR_TOF},   {6, NB, 3, 5, -6.1e6f, SPROJ_ERR_TOF},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct tof_case *c = &cases[i];
    struct sproj_tof_params par = {c->bin_width, c->num_bins, c->num_sigmas, c->sigma, c->offset};
    sproj_tof *t = SENTINEL;
    BAD(sproj_tof_register(&t, &par, NULL, NULL, NULL), c->want, "sproj_tof_register");
    ck_assert_msg(t == SENTINEL, "case %zu: tof written", i);
  }
  sproj_tof *t = SENTINEL;
  float sig[NL], off[NL];
  for (int i = 0; i < NL; i++) {
    sig[i] = 5.0f;
    off[i] = 0.0f;
  }
  BAD(sproj_tof_register(NULL, &TOFP, NULL, NULL, NULL), SPROJ_ERR_NULL, "sproj_tof_register");
  BAD(sproj_tof_register(&t, NULL, NULL, NULL, NULL), SPROJ_ERR_NULL, "sproj_tof_register");
  BAD(sproj_tof_register(&t, &TOFP, NULL, sig, NULL), SPROJ_ERR_NULL, "sproj_tof_register");
  BAD(sproj_tof_register(&t, &TOFP, NULL, NULL, off), SPROJ_ERR_NULL, "sproj_tof_register");
  /* one bad per-LOR value, the last one */
  const float bad_sig[] = {NAN, INFINITY, 0, -5, DEN, FLT_MAX};
  for (size_t i = 0; i < sizeof bad_sig / sizeof bad_sig[0]; i++) {
    sig[NL - 1] = bad_sig[i];
    BAD(sproj_tof_register(&t, &TOFP, lors, sig, NULL), SPROJ_ERR_TOF, "sproj_tof_register");
  }
  sig[NL - 1] = 5.0f;
  const float bad_off[] = {NAN, -INFINITY};
  for (size_t i = 0; i < 2; i++) {
    off[NL - 1] = bad_off[i];
    BAD(sproj_tof_register(&t, &TOFP, lors, sig, off), SPROJ_ERR_NONFINITE, "sproj_tof_register");
  }
  off[NL - 1] = FLT_MAX;
  BAD(sproj_tof_register(&t, &TOFP, lors, NULL, off), SPROJ_ERR_TOF, "sproj_tof_register");
  ck_assert_ptr_eq(t, SENTINEL);
  check_unchanged("the TOF calls");
}
END_TEST

/* ---- forward models and reconstructions ---------------------------------------------------------------------------- */
START_TEST(test_models)
{
  sproj_model *m = SENTINEL;
  float mult[NL], add[NL];
  for (int i = 0; i < NL; i++) {
    mult[i] = 1.0f;
    add[i] = 0.1f;
  }
  const char *M = "sproj_model_create";
  const float nonfinite[] = {NAN, INFINITY, -INFINITY};
  for (int k = 0; k < 3; k++) {
    mult[NL - 1] = nonfinite[k];
    BAD(sproj_model_create(&m, lors, mult, NULL, NULL, NULL), SPROJ_ERR_NONFINITE, M);
    mult[NL - 1] = 1.0f;
    add[0] = nonfinite[k];
    BAD(sproj_model_create(&m, lors, NULL, add, NULL, NULL), SPROJ_ERR_NONFINITE, M);
    add[0] = 0.1f;
    const float fwhm[3] = {0, 0, nonfinite[k]};
    BAD(sproj_model_create(&m, lors, NULL, NULL, NULL, fwhm), SPROJ_ERR_NONFINITE, M);
  }
  const float negative[] = {-FLT_TRUE_MIN, -1e-30f, -FLT_MAX};
  for (int k = 0; k < 3; k++) {
    mult[NL / 2] = negative[k];
    BAD(sproj_model_create(&m, lors, mult, NULL, NULL, NULL), SPROJ_ERR_RANGE, M);
    mult[NL / 2] = 1.0f;
    add[NL / 2] = negative[k];
    BAD(sproj_model_create(&m, lors, NULL, add, NULL, NULL), SPROJ_ERR_RANGE, M);
    add[NL / 2] = 0.1f;
    const float fwhm[3] = {negative[k], 1, 1};
    BAD(sproj_model_create(&m, lors, NULL, NULL, NULL, fwhm), SPROJ_ERR_RANGE, M);
  }
  BAD(sproj_model_create(NULL, NULL, NULL, NULL, NULL, NULL), SPROJ_ERR_NULL, M);
  BAD(sproj_model_create(&m, NULL, mult, add, tof, NULL), SPROJ_ERR_NULL, M);
  BAD(sproj_model_create(&m, lors, NULL, NULL, otof, NULL), SPROJ_ERR_MISMATCH, M);   /* per-LOR sigma of other */
  BAD(sproj_model_create(&m, events, NULL, NULL, otof, NULL), SPROJ_ERR_MISMATCH, M);
  ck_assert_ptr_eq(m, SENTINEL);

  /* a model and a reconstruction to misuse */
  float data[NL], *x = tu_alloc(tu_nvox(&G)), *sens = tu_alloc(tu_nvox(&G));
  for (int i = 0; i < NL; i++)
    data[i] = (float)(i % 4);
  for (int64_t v = 0; v < tu_nvox(&G); v++)
    x[v] = sens[v] = 1.0f;
  sproj_image *xi;
  sproj_proj *dp;
  sproj_recon *r = SENTINEL;
  ck_assert_int_eq(sproj_model_create(&m, lors, NULL, NULL, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&xi, x, G.n, G.vs, G.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&dp, data, lors), SPROJ_OK);
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = m;
  cfg.data = dp;
  cfg.chunks = ch;
  cfg.num_subsets = 2;
  const char *C = "sproj_recon_create";
  struct sproj_recon_config c = cfg;
  const int bad_subsets[] = {INT_MIN, -1, 0, 5, INT_MAX};
  for (size_t i = 0; i < 5; i++) {
    c.num_subsets = bad_subsets[i];
    BAD(sproj_recon_create(&r, xi, &c), SPROJ_ERR_RANGE, C);
  }
  c = cfg;
  const int sizes[2] = {2, 2};
  const int bad_lists[][4] = {{0, 1, 2, INT_MAX}, {0, 1, 2, INT_MIN}, {0, 1, 2, -1}, {0, 1, 3, 3}};
  c.subset_sizes = sizes;
  for (size_t i = 0; i < 4; i++) {
    c.subset_chunks = bad_lists[i];
    BAD(sproj_recon_create(&r, xi, &c), SPROJ_ERR_RANGE, C);
  }
  c = cfg;
  c.chunks = NULL;
  BAD(sproj_recon_create(&r, xi, &c), SPROJ_ERR_NULL, C);
  c = cfg;
  c.model = NULL;
  BAD(sproj_recon_create(&r, xi, &c), SPROJ_ERR_NULL, C);
  c = cfg;
  c.chunks = och;
  BAD(sproj_recon_create(&r, xi, &c), SPROJ_ERR_MISMATCH, C);
  c = cfg;
  c.data = oproj;
  BAD(sproj_recon_create(&r, xi, &c), SPROJ_ERR_MISMATCH, C);
  c = cfg;
  c.sens_chunks = och;
  BAD(sproj_recon_create(&r, xi, &c), SPROJ_ERR_MISMATCH, C);
  /* non-finite and negative data and initial images, in the last element */
  for (int k = 0; k < 3; k++) {
    data[NL - 1] = nonfinite[k];
    BAD(sproj_recon_create(&r, xi, &cfg), SPROJ_ERR_NONFINITE, C);
    data[NL - 1] = negative[k];
    BAD(sproj_recon_create(&r, xi, &cfg), SPROJ_ERR_RANGE, C);
    data[NL - 1] = 1.0f;
    x[tu_nvox(&G) - 1] = nonfinite[k];
    BAD(sproj_recon_create(&r, xi, &cfg), SPROJ_ERR_NONFINITE, C);
    x[tu_nvox(&G) - 1] = negative[k];
    BAD(sproj_recon_create(&r, xi, &cfg), SPROJ_ERR_RANGE, C);
    x[tu_nvox(&G) - 1] = 1.0f;
  }
  /* a resolution model far wider than the image */
  sproj_model *wide;
  const float huge_fwhm[3] = {1e30f, 0, 0};
  ck_assert_int_eq(sproj_model_create(&wide, lors, NULL, NULL, NULL, huge_fwhm), SPROJ_OK);
  c = cfg;
  c.model = wide;
  BAD(sproj_recon_create(&r, xi, &c), SPROJ_ERR_RANGE, C);
  ck_assert_int_eq(sproj_model_destroy(wide), SPROJ_OK);
  ck_assert_ptr_eq(r, SENTINEL);

  ck_assert_int_eq(sproj_recon_create(&r, xi, &cfg), SPROJ_OK);
  BAD(sproj_model_destroy(m), SPROJ_ERR_BUSY, "sproj_model_destroy");
  const int bad_iter[] = {INT_MIN, -1};
  for (size_t i = 0; i < 2; i++)
    BAD(sproj_recon_iterate(r, bad_iter[i], NULL, NULL), SPROJ_ERR_DIMS, "sproj_recon_iterate");
  BAD(sproj_recon_objective(NULL, NULL), SPROJ_ERR_NULL, "sproj_recon_objective");
  const int bad_k[] = {INT_MIN, -1, 2, INT_MAX};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_recon_sensitivity(r, bad_k[i], sens), SPROJ_ERR_RANGE, "sproj_recon_sensitivity");
  BAD(sproj_recon_sensitivity(r, 0, NULL), SPROJ_ERR_NULL, "sproj_recon_sensitivity");
  BAD(sproj_recon_sensitivity(NULL, 0, sens), SPROJ_ERR_NULL, "sproj_recon_sensitivity");
  for (int64_t v = 0; v < tu_nvox(&G); v++)
    ck_assert_msg(sens[v] == 1.0f, "sproj_recon_sensitivity wrote voxel %lld on failure", (long long)v);
  BAD(sproj_lors_unregister(lors), SPROJ_ERR_BUSY, "sproj_lors_unregister");
  ck_assert_int_eq(sproj_recon_destroy(r), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(m), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(dp), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(xi), SPROJ_OK);
  free(x);
  free(sens);
  check_unchanged("the model and reconstruction calls");
}
END_TEST

/* ---- scanner geometry ---------------------------------------------------------------------------------------------- */
struct scanner_case {
  const char *what;
  void (*change)(struct sproj_scanner_params *);
  int want;
};
#define CHANGE(name, stmt)                                                                                           \
  static void name(struct sproj_scanner_params *p)                                                                 \
  {                                                                                                                \
    stmt;                                                                                                          \
  }
CHANGE(modules0, p->num_modules = 0)
CHANGE(modules_neg, p->num_modules = INT_MIN)
CHANGE(modules_max, p->num_modules = INT_MAX)
CHANGE(dets0, p->detectors_per_module = 0)
CHANGE(dets_neg, p->detectors_per_module = -8)
CHANGE(dets_max, p->detectors_per_module = INT_MAX)
CHANGE(dets_odd, (p->num_modules = 15, p->detectors_per_module = 7))
CHANGE(pitch_nan, p->detector_pitch = NAN)
CHANGE(pitch_inf, p->detector_pitch = INFINITY)
CHANGE(pitch_wide, p->detector_pitch = 1e300)
CHANGE(radius_nan, p->radius = -NAN)
CHANGE(radius_inf, p->radius = INFINITY)
CHANGE(rings0, p->num_rings = 0)
CHANGE(rings_neg, p->num_rings = INT_MIN)
CHANGE(rings_max, p->num_rings = INT_MAX)
CHANGE(rings_over, p->num_rings = SPROJ_MAX_RINGS + 1)
CHANGE(ringz_nan, p->ring_z[3] = NAN)
CHANGE(ringz_inf, p->ring_z[7] = INFINITY)
CHANGE(ringz_dup, p->ring_z[4] = p->ring_z[3])
CHANGE(ringz_down, p->ring_z[1] = p->ring_z[0] - 1)
CHANGE(radial0, p->num_radial_bins = 0)
CHANGE(radial_neg, p->num_radial_bins = INT_MIN)
CHANGE(radial_d, p->num_radial_bins = 128)
CHANGE(radial_max, p->num_radial_bins = INT_MAX)
CHANGE(mrd_rings, p->max_ring_difference = 8)
CHANGE(mrd_neg, p->max_ring_difference = -2)
CHANGE(mrd_min, p->max_ring_difference = INT_MIN)
CHANGE(order_neg, p->order = -1)
CHANGE(order_big, p->order = 3)
CHANGE(seq_neg, p->segment_sequence = INT_MIN)
CHANGE(seq_big, p->segment_sequence = 3)

static const struct scanner_case scanner_cases[] = {
  {"0 modules", modules0, SPROJ_ERR_DIMS},           {"INT_MIN modules", modules_neg, SPROJ_ERR_DIMS},
  {"INT_MAX modules", modules_max, SPROJ_ERR_RANGE}, {"0 detectors", dets0, SPROJ_ERR_DIMS},
  {"-8 detectors", dets_neg, SPROJ_ERR_DIMS},        {"INT_MAX detectors", dets_max, SPROJ_ERR_RANGE},
  {"odd ring", dets_odd, SPROJ_ERR_RANGE},           {"NaN pitch", pitch_nan, SPROJ_ERR_NONFINITE},
  {"inf pitch", pitch_inf, SPROJ_ERR_NONFINITE},     {"1e300 pitch", pitch_wide, SPROJ_ERR_RANGE},
  {"NaN radius", radius_nan, SPROJ_ERR_NONFINITE},   {"inf radius", radius_inf, SPROJ_ERR_NONFINITE},
  {"0 rings", rings0, SPROJ_ERR_DIMS},               {"INT_MIN rings", rings_neg, SPROJ_ERR_DIMS},
  {"INT_MAX rings", rings_max, SPROJ_ERR_RANGE},     {"257 rings", rings_over, SPROJ_ERR_RANGE},
  {"NaN ring_z", ringz_nan, SPROJ_ERR_NONFINITE},    {"inf ring_z", ringz_inf, SPROJ_ERR_NONFINITE},
  {"equal ring_z", ringz_dup, SPROJ_ERR_RANGE},      {"decreasing ring_z", ringz_down, SPROJ_ERR_RANGE},
  {"0 radial bins", radial0, SPROJ_ERR_DIMS},        {"INT_MIN radial bins", radial_neg, SPROJ_ERR_DIMS},
  {"D radial bins", radial_d, SPROJ_ERR_RANGE},      {"INT_MAX radial bins", radial_max, SPROJ_ERR_RANGE},
  {"mrd = rings", mrd_rings, SPROJ_ERR_RANGE},       {"mrd -2", mrd_neg, SPROJ_ERR_RANGE},
  {"mrd INT_MIN", mrd_min, SPROJ_ERR_RANGE},         {"order -1", order_neg, SPROJ_ERR_INVALID},
  {"order 3", order_big, SPROJ_ERR_INVALID},         {"sequence INT_MIN", seq_neg, SPROJ_ERR_INVALID},
  {"sequence 3", seq_big, SPROJ_ERR_INVALID},
};

START_TEST(test_scanner)
{
  struct sproj_scanner_params good, p, p0;
  memset(&p, 0x5a, sizeof p);
  p0 = p;
  BAD(sproj_scanner_preset(NULL, &p), SPROJ_ERR_NULL, "sproj_scanner_preset");
  BAD(sproj_scanner_preset("small", NULL), SPROJ_ERR_NULL, "sproj_scanner_preset");
  const char *bad_names[] = {"", "SMALL", "small ", "vision600x", "no-such-scanner"};
  for (size_t i = 0; i < 5; i++)
    BAD(sproj_scanner_preset(bad_names[i], &p), SPROJ_ERR_INVALID, "sproj_scanner_preset");
  ck_assert_msg(memcmp(&p, &p0, sizeof p) == 0, "sproj_scanner_preset wrote params on failure");

  ck_assert_int_eq(sproj_scanner_preset("small", &good), SPROJ_OK);
  sproj_scanner *sc = SENTINEL;
  for (size_t i = 0; i < sizeof scanner_cases / sizeof scanner_cases[0]; i++) {
    p = good;
    scanner_cases[i].change(&p);
    prime_message("sproj_scanner_create");
    int rc = sproj_scanner_create(&sc, &p);
    check_status(rc, scanner_cases[i].want, "sproj_scanner_create", scanner_cases[i].what, __LINE__);
  }
  BAD(sproj_scanner_create(NULL, &good), SPROJ_ERR_NULL, "sproj_scanner_create");
  BAD(sproj_scanner_create(&sc, NULL), SPROJ_ERR_NULL, "sproj_scanner_create");
  ck_assert_ptr_eq(sc, SENTINEL);

  ck_assert_int_eq(sproj_scanner_create(&sc, &good), SPROJ_OK);
  struct sproj_sinogram_info info;
  ck_assert_int_eq(sproj_scanner_info(sc, &info), SPROJ_OK);
  BAD(sproj_scanner_params(NULL, &p), SPROJ_ERR_NULL, "sproj_scanner_params");
  BAD(sproj_scanner_params(sc, NULL), SPROJ_ERR_NULL, "sproj_scanner_params");
  BAD(sproj_scanner_info(NULL, &info), SPROJ_ERR_NULL, "sproj_scanner_info");
  BAD(sproj_scanner_info(sc, NULL), SPROJ_ERR_NULL, "sproj_scanner_info");
  int np = INT_MIN;
  const int bad_seg[] = {INT_MIN, -8, 8, INT_MAX};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_scanner_segment_planes(sc, bad_seg[i], &np), SPROJ_ERR_RANGE, "sproj_scanner_segment_planes");
  BAD(sproj_scanner_segment_planes(sc, 0, NULL), SPROJ_ERR_NULL, "sproj_scanner_segment_planes");
  BAD(sproj_scanner_segment_planes(NULL, 0, &np), SPROJ_ERR_NULL, "sproj_scanner_segment_planes");
  ck_assert_int_eq(np, INT_MIN);

  /* (view, segment, axial, radial) with one index out of its range at a time */
  int64_t lor = SENT64;
  const int idx[][4] = {{-1, 0, 0, 0},  {64, 0, 0, 0},       {INT_MAX, 0, 0, 0}, {0, -8, 0, 0}, {0, 8, 0, 0},
                        {0, INT_MIN, 0, 0}, {0, 0, -1, 0},   {0, 0, 8, 0},       {0, 7, 1, 0},  {0, 0, INT_MAX, 0},
                        {0, 0, 0, -1},  {0, 0, 0, 65},       {0, 0, 0, INT_MIN}};
  for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++)
    BAD(sproj_scanner_lor_index(sc, idx[i][0], idx[i][1], idx[i][2], idx[i][3], &lor), SPROJ_ERR_RANGE,
        "sproj_scanner_lor_index");
  BAD(sproj_scanner_lor_index(sc, 0, 0, 0, 0, NULL), SPROJ_ERR_NULL, "sproj_scanner_lor_index");
  BAD(sproj_scanner_lor_index(NULL, 0, 0, 0, 0, &lor), SPROJ_ERR_NULL, "sproj_scanner_lor_index");
  ck_assert_int_eq(lor, SENT64);
  int v = INT_MIN, s = INT_MIN, a = INT_MIN, rb = INT_MIN;
  const int64_t bad_lor[] = {INT64_MIN, -1, info.num_lors, INT64_MAX};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_scanner_lor_position(sc, bad_lor[i], &v, &s, &a, &rb), SPROJ_ERR_RANGE, "sproj_scanner_lor_position");
  BAD(sproj_scanner_lor_position(sc, 0, &v, &s, &a, NULL), SPROJ_ERR_NULL, "sproj_scanner_lor_position");
  BAD(sproj_scanner_lor_position(NULL, 0, &v, &s, &a, &rb), SPROJ_ERR_NULL, "sproj_scanner_lor_position");
  ck_assert_msg(v == INT_MIN && s == INT_MIN && a == INT_MIN && rb == INT_MIN, "lor_position wrote on failure");

  /* LOR endpoints */
  float ls[12], le[12];
  for (int i = 0; i < 12; i++)
    ls[i] = le[i] = SENTF;
  BAD(sproj_scanner_lors(sc, NULL, le, 1), SPROJ_ERR_NULL, "sproj_scanner_lors");
  BAD(sproj_scanner_lors(sc, ls, NULL, 1), SPROJ_ERR_NULL, "sproj_scanner_lors");
  BAD(sproj_scanner_lors(NULL, ls, le, 1), SPROJ_ERR_NULL, "sproj_scanner_lors");
  BAD(sproj_scanner_lors(sc, ls, le, -1), SPROJ_ERR_DIMS, "sproj_scanner_lors");
  BAD(sproj_scanner_lors(sc, ls, le, INT_MIN), SPROJ_ERR_DIMS, "sproj_scanner_lors");
  const int bad_views[][1] = {{-1}, {64}, {INT_MAX}, {INT_MIN}};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_scanner_view_lors(sc, bad_views[i], 1, ls, le, 1), SPROJ_ERR_RANGE, "sproj_scanner_view_lors");
  const int one_view[1] = {0};
  BAD(sproj_scanner_view_lors(sc, one_view, -1, ls, le, 1), SPROJ_ERR_DIMS, "sproj_scanner_view_lors");
  BAD(sproj_scanner_view_lors(sc, one_view, 1, ls, le, -3), SPROJ_ERR_DIMS, "sproj_scanner_view_lors");
  BAD(sproj_scanner_view_lors(sc, NULL, 1, ls, le, 1), SPROJ_ERR_NULL, "sproj_scanner_view_lors");
  BAD(sproj_scanner_view_lors(sc, one_view, 1, NULL, le, 1), SPROJ_ERR_NULL, "sproj_scanner_view_lors");
  for (size_t i = 0; i < 4; i++) {
    const int64_t at[2] = {0, bad_lor[i]};
    BAD(sproj_scanner_lors_at(sc, 2, at, ls, le), SPROJ_ERR_RANGE, "sproj_scanner_lors_at");
  }
  const int64_t at0[1] = {0};
  BAD(sproj_scanner_lors_at(sc, -1, at0, ls, le), SPROJ_ERR_DIMS, "sproj_scanner_lors_at");
  BAD(sproj_scanner_lors_at(sc, INT64_MIN, at0, ls, le), SPROJ_ERR_DIMS, "sproj_scanner_lors_at");
  BAD(sproj_scanner_lors_at(sc, 1, NULL, ls, le), SPROJ_ERR_NULL, "sproj_scanner_lors_at");
  BAD(sproj_scanner_lors_at(sc, 1, at0, ls, NULL), SPROJ_ERR_NULL, "sproj_scanner_lors_at");
  for (int i = 0; i < 12; i++)
    ck_assert_msg(ls[i] == SENTF && le[i] == SENTF, "a failing LOR call wrote endpoint %d", i);

  /* chunkings of a LOR set of another size; subsets */
  sproj_chunks *c = SENTINEL;
  BAD(sproj_scanner_chunks_views(&c, sc, lors), SPROJ_ERR_MISMATCH, "sproj_scanner_chunks_views");
  BAD(sproj_scanner_chunks_viewgrams(&c, sc, lors), SPROJ_ERR_MISMATCH, "sproj_scanner_chunks_viewgrams");
  BAD(sproj_scanner_chunks_subsets(&c, sc, lors, 4), SPROJ_ERR_MISMATCH, "sproj_scanner_chunks_subsets");
  BAD(sproj_scanner_chunks_views(NULL, sc, lors), SPROJ_ERR_NULL, "sproj_scanner_chunks_views");
  BAD(sproj_scanner_chunks_viewgrams(&c, NULL, lors), SPROJ_ERR_NULL, "sproj_scanner_chunks_viewgrams");
  BAD(sproj_scanner_chunks_subsets(&c, sc, NULL, 4), SPROJ_ERR_NULL, "sproj_scanner_chunks_subsets");
  ck_assert_ptr_eq(c, SENTINEL);
  int views[64], nv = INT_MIN;
  for (int i = 0; i < 64; i++)
    views[i] = INT_MIN;
  const int bad_ns[] = {INT_MIN, -1, 0, 65, INT_MAX};
  /* fewer than one subset is a bad count (DIMS), more subsets than views a bad range (RANGE) */
  for (size_t i = 0; i < 5; i++)
    BAD(sproj_scanner_subset_views(sc, bad_ns[i], 0, views, &nv), bad_ns[i] < 1 ? SPROJ_ERR_DIMS : SPROJ_ERR_RANGE,
        "sproj_scanner_subset_views");
  const int bad_sub[] = {INT_MIN, -1, 4, INT_MAX};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_scanner_subset_views(sc, 4, bad_sub[i], views, &nv), SPROJ_ERR_RANGE, "sproj_scanner_subset_views");
  BAD(sproj_scanner_subset_views(sc, 4, 0, NULL, &nv), SPROJ_ERR_NULL, "sproj_scanner_subset_views");
  BAD(sproj_scanner_subset_views(sc, 4, 0, views, NULL), SPROJ_ERR_NULL, "sproj_scanner_subset_views");
  ck_assert_int_eq(nv, INT_MIN);
  for (int i = 0; i < 64; i++)
    ck_assert_int_eq(views[i], INT_MIN);

  /* detector pairs */
  const struct sproj_det_pair bad_pairs[] = {
    {-1, 0, 0, 64},      {8, 0, 0, 64},      {INT32_MIN, 0, 0, 64}, {0, -1, 0, 64}, {0, 128, 0, 64},
    {0, 0, INT32_MAX, 64}, {0, 0, 0, INT32_MAX}, {0, INT32_MIN, 0, 64},
  };
  for (size_t i = 0; i < sizeof bad_pairs / sizeof bad_pairs[0]; i++) {
    BAD(sproj_scanner_pair_lors(sc, 1, &bad_pairs[i], ls, le), SPROJ_ERR_RANGE, "sproj_scanner_pair_lors");
    int sw = INT_MIN;
    lor = SENT64;
    BAD(sproj_scanner_pair_lor(sc, &bad_pairs[i], &lor, &sw), SPROJ_ERR_RANGE, "sproj_scanner_pair_lor");
    ck_assert_msg(lor == SENT64 && sw == INT_MIN, "pair_lor wrote on failure");
  }
  const struct sproj_det_pair same = {0, 5, 0, 5}, neighbours = {0, 5, 0, 6};
  int sw = INT_MIN;
  BAD(sproj_scanner_pair_lor(sc, &same, &lor, &sw), SPROJ_ERR_RANGE, "sproj_scanner_pair_lor");
  BAD(sproj_scanner_pair_lor(sc, &neighbours, &lor, &sw), SPROJ_ERR_RANGE, "sproj_scanner_pair_lor"); /* no bin */
  BAD(sproj_scanner_pair_lor(sc, NULL, &lor, &sw), SPROJ_ERR_NULL, "sproj_scanner_pair_lor");
  BAD(sproj_scanner_pair_lor(sc, &bad_pairs[0], NULL, &sw), SPROJ_ERR_NULL, "sproj_scanner_pair_lor");
  BAD(sproj_scanner_pair_lors(sc, -1, bad_pairs, ls, le), SPROJ_ERR_DIMS, "sproj_scanner_pair_lors");
  BAD(sproj_scanner_pair_lors(sc, 1, NULL, ls, le), SPROJ_ERR_NULL, "sproj_scanner_pair_lors");
  struct sproj_det_pair out[2];
  memset(out, 0x5a, sizeof out);
  struct sproj_det_pair out0[2];
  memcpy(out0, out, sizeof out);
  for (size_t i = 0; i < 4; i++) {
    const int64_t at[2] = {0, bad_lor[i]};
    BAD(sproj_scanner_lor_pairs(sc, 2, at, out), SPROJ_ERR_RANGE, "sproj_scanner_lor_pairs");
  }
  BAD(sproj_scanner_lor_pairs(sc, INT64_MIN, at0, out), SPROJ_ERR_DIMS, "sproj_scanner_lor_pairs");
  BAD(sproj_scanner_lor_pairs(sc, 1, at0, NULL), SPROJ_ERR_NULL, "sproj_scanner_lor_pairs");
  ck_assert_msg(memcmp(out, out0, sizeof out) == 0, "lor_pairs wrote on failure");
  for (int i = 0; i < 12; i++)
    ck_assert_msg(ls[i] == SENTF && le[i] == SENTF, "a failing pair call wrote endpoint %d", i);

  /* subsets of a scanner's own LOR set: a tiny scanner (16 detectors per ring, 2 rings) keeps it small */
  struct sproj_scanner_params tiny = good;
  tiny.num_modules = 8;
  tiny.detectors_per_module = 2;
  tiny.radius = 30;
  tiny.num_rings = 2;
  tiny.ring_z[0] = 0;
  tiny.ring_z[1] = 4;
  tiny.num_radial_bins = 5;
  tiny.max_ring_difference = -1;
  sproj_scanner *ts;
  struct sproj_sinogram_info tinfo;
  ck_assert_int_eq(sproj_scanner_create(&ts, &tiny), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_info(ts, &tinfo), SPROJ_OK);
  float *txs = tu_alloc(3 * tinfo.num_lors), *txe = tu_alloc(3 * tinfo.num_lors);
  ck_assert_int_eq(sproj_scanner_lors(ts, txs, txe, 1), SPROJ_OK);
  sproj_lors *tl;
  ck_assert_int_eq(sproj_lors_register(&tl, txs, txe, tinfo.num_lors), SPROJ_OK);
  const int bad_tns[] = {INT_MIN, -1, 0, tinfo.num_views + 1, INT_MAX};
  for (size_t i = 0; i < 5; i++)
    BAD(sproj_scanner_chunks_subsets(&c, ts, tl, bad_tns[i]), bad_tns[i] < 1 ? SPROJ_ERR_DIMS : SPROJ_ERR_RANGE,
        "sproj_scanner_chunks_subsets");
  BAD(sproj_scanner_chunks_views(&c, sc, tl), SPROJ_ERR_MISMATCH, "sproj_scanner_chunks_views"); /* other scanner */
  ck_assert_ptr_eq(c, SENTINEL);
  ck_assert_int_eq(sproj_lors_unregister(tl), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_destroy(ts), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_destroy(sc), SPROJ_OK);
  free(txs);
  free(txe);

  /* TOF bin numberings */
  int16_t in[3] = {0, 1, 2}, res[3] = {-7, -7, -7};
  const char *FC = "sproj_tof_bins_from_centered", *TC = "sproj_tof_bins_to_centered";
  const int bad_nb[] = {INT_MIN, -1, 0, SPROJ_MAX_TOF_BINS + 1, INT_MAX};
  for (size_t i = 0; i < 5; i++) {
    BAD(sproj_tof_bins_from_centered(3, in, res, bad_nb[i], 0), SPROJ_ERR_TOF, FC);
    BAD(sproj_tof_bins_to_centered(3, in, res, bad_nb[i], 1), SPROJ_ERR_TOF, TC);
  }
  BAD(sproj_tof_bins_from_centered(-1, in, res, 5, 0), SPROJ_ERR_DIMS, FC);
  BAD(sproj_tof_bins_to_centered(INT64_MIN, in, res, 5, 0), SPROJ_ERR_DIMS, TC);
  BAD(sproj_tof_bins_from_centered(3, NULL, res, 5, 0), SPROJ_ERR_NULL, FC);
  BAD(sproj_tof_bins_to_centered(3, in, NULL, 5, 0), SPROJ_ERR_NULL, TC);
  const int16_t bad_centred[3] = {0, 1, 3}, bad_plain[3] = {0, 1, 5}, neg_plain[3] = {0, INT16_MIN, 1};
  BAD(sproj_tof_bins_from_centered(3, bad_centred, res, 5, 0), SPROJ_ERR_RANGE, FC);
  BAD(sproj_tof_bins_from_centered(3, neg_plain, res, 5, 1), SPROJ_ERR_RANGE, FC);
  BAD(sproj_tof_bins_to_centered(3, bad_plain, res, 5, 0), SPROJ_ERR_RANGE, TC);
  BAD(sproj_tof_bins_to_centered(3, neg_plain, res, 5, 1), SPROJ_ERR_RANGE, TC);
  ck_assert_msg(res[0] == -7 && res[1] == -7 && res[2] == -7, "a failing bin conversion wrote");
}
END_TEST

/* ---- simulation and files ------------------------------------------------------------------------------------------ */
static char dir[64]; /* a fresh folder in the build tree */

static void path_in(char *out, size_t n, const char *name)
{
  snprintf(out, n, "%s/%s", dir, name);
}

START_TEST(test_files)
{
  char path[256], missing[256], garbage[256], nodir[256];
  path_in(path, sizeof path, "img.nii");
  path_in(missing, sizeof missing, "no-such-file.nii");
  path_in(garbage, sizeof garbage, "garbage.nii");
  path_in(nodir, sizeof nodir, "no-such-dir/img.nii");
  FILE *f = fopen(garbage, "w");
  ck_assert_ptr_nonnull(f);
  fputs("this is not an image\n", f);
  fclose(f);
  const float vs[3] = {1, 2, 3}, origin[3] = {0, 0, 0};
  const int dims[3] = {8, 7, 6};
  const char *W = "sproj_nifti_write", *R = "sproj_nifti_read";
  BAD(sproj_nifti_write(NULL, image, dims, vs, origin, NULL), SPROJ_ERR_NULL, W);
  BAD(sproj_nifti_write(path, NULL, dims, vs, origin, NULL), SPROJ_ERR_NULL, W);
  BAD(sproj_nifti_write(path, image, NULL, vs, origin, NULL), SPROJ_ERR_NULL, W);
  BAD(sproj_nifti_write(path, image, dims, NULL, origin, NULL), SPROJ_ERR_NULL, W);
  BAD(sproj_nifti_write(path, image, dims, vs, NULL, NULL), SPROJ_ERR_NULL, W);
  BAD(sproj_nifti_write("", image, dims, vs, origin, NULL), SPROJ_ERR_INVALID, W);
  BAD(sproj_nifti_write("img.nii.gz", image, dims, vs, origin, NULL), SPROJ_ERR_INVALID, W);
  BAD(sproj_nifti_write("img.hdr", image, dims, vs, origin, NULL), SPROJ_ERR_INVALID, W);
  const int zero[3] = {8, 0, 6}, neg[3] = {INT_MIN, 7, 6}, huge[3] = {INT_MAX, INT_MAX, INT_MAX};
  BAD(sproj_nifti_write(path, image, zero, vs, origin, NULL), SPROJ_ERR_DIMS, W);
  BAD(sproj_nifti_write(path, image, neg, vs, origin, NULL), SPROJ_ERR_DIMS, W);
  BAD(sproj_nifti_write(path, image, huge, vs, origin, NULL), SPROJ_ERR_OVERFLOW, W);
  const float vnan[3] = {1, NAN, 1}, vneg[3] = {1, 1, -1}, vinf[3] = {INFINITY, 1, 1}, onan[3] = {0, 0, NAN};
  BAD(sproj_nifti_write(path, image, dims, vnan, origin, NULL), SPROJ_ERR_VOXEL_SIZE, W);
  BAD(sproj_nifti_write(path, image, dims, vneg, origin, NULL), SPROJ_ERR_VOXEL_SIZE, W);
  BAD(sproj_nifti_write(path, image, dims, vinf, origin, NULL), SPROJ_ERR_VOXEL_SIZE, W);
  BAD(sproj_nifti_write(path, image, dims, vs, onan, NULL), SPROJ_ERR_NONFINITE, W);
  BAD(sproj_nifti_write(nodir, image, dims, vs, origin, NULL), SPROJ_ERR_IO, W);
  ck_assert_int_ne(access(path, F_OK), 0); /* no failing write left a file */

  float *data = SENTINEL;
  int d[3] = {-7, -7, -7};
  float v[3] = {SENTF, SENTF, SENTF}, o[3] = {SENTF, SENTF, SENTF};
  BAD(sproj_nifti_read(missing, &data, d, v, o), SPROJ_ERR_IO, R);
  BAD(sproj_nifti_read(nodir, &data, d, v, NULL), SPROJ_ERR_IO, R);
  BAD(sproj_nifti_read(garbage, &data, d, v, o), SPROJ_ERR_FORMAT, R);
  BAD(sproj_nifti_read(NULL, &data, d, v, o), SPROJ_ERR_NULL, R);
  BAD(sproj_nifti_read(missing, NULL, d, v, o), SPROJ_ERR_NULL, R);
  BAD(sproj_nifti_read(missing, &data, NULL, v, o), SPROJ_ERR_NULL, R);
  BAD(sproj_nifti_read(missing, &data, d, NULL, o), SPROJ_ERR_NULL, R);
  ck_assert_ptr_eq(data, SENTINEL);
  ck_assert_msg(d[0] == -7 && d[1] == -7 && d[2] == -7 && v[0] == SENTF && o[0] == SENTF, "nifti_read wrote");

  /* raw sinograms */
  char base[256], mbase[256], nbase[256];
  path_in(base, sizeof base, "sino");
  path_in(mbase, sizeof mbase, "no-such-sino");
  path_in(nbase, sizeof nbase, "no-such-dir/sino");
  struct sproj_sino_info good = {3, {4, 2, 3}, {"view", "plane", "radial"}, "small", 0, 0.0f}, si;
  const char *WS = "sproj_raw_write_sino", *RS = "sproj_raw_read_sino";
  float sino[24] = {0};
  BAD(sproj_raw_write_sino(NULL, &good, sino), SPROJ_ERR_NULL, WS);
  BAD(sproj_raw_write_sino(base, NULL, sino), SPROJ_ERR_NULL, WS);
  BAD(sproj_raw_write_sino(base, &good, NULL), SPROJ_ERR_NULL, WS);
  BAD(sproj_raw_write_sino("", &good, sino), SPROJ_ERR_INVALID, WS);
  const int bad_nd[] = {INT_MIN, 0, SPROJ_RAW_MAX_DIMS + 1, INT_MAX};
  for (size_t i = 0; i < 4; i++) {
    si = good;
    si.num_dims = bad_nd[i];
    BAD(sproj_raw_write_sino(base, &si, sino), SPROJ_ERR_DIMS, WS);
  }
  const int64_t bad_shape[] = {0, -1, INT64_MIN};
  for (size_t i = 0; i < 3; i++) {
    si = good;
    si.shape[2] = bad_shape[i];
    BAD(sproj_raw_write_sino(base, &si, sino), SPROJ_ERR_DIMS, WS);
  }
  si = good;
  si.shape[0] = si.shape[1] = INT64_MAX;
  BAD(sproj_raw_write_sino(base, &si, sino), SPROJ_ERR_OVERFLOW, WS);
  const char *bad_axes[] = {"", "view plane", "a/b", "tof\nbin"};
  for (size_t i = 0; i < 4; i++) {
    si = good;
    snprintf(si.axes[1], sizeof si.axes[1], "%s", bad_axes[i]);
    BAD(sproj_raw_write_sino(base, &si, sino), SPROJ_ERR_INVALID, WS);
  }
  si = good;
  snprintf(si.scanner, sizeof si.scanner, "bad name");
  BAD(sproj_raw_write_sino(base, &si, sino), SPROJ_ERR_INVALID, WS);
  si = good;
  si.num_tof_bins = INT_MIN;
  BAD(sproj_raw_write_sino(base, &si, sino), SPROJ_ERR_TOF, WS);
  const float bad_width[] = {NAN, INFINITY, -1.0f, -FLT_TRUE_MIN};
  for (size_t i = 0; i < 4; i++) {
    si = good;
    si.tof_bin_width = bad_width[i];
    BAD(sproj_raw_write_sino(base, &si, sino), SPROJ_ERR_TOF, WS);
  }
  BAD(sproj_raw_write_sino(nbase, &good, sino), SPROJ_ERR_IO, WS);
  memset(&si, 0x5a, sizeof si);
  struct sproj_sino_info si0 = si;
  float *sdata = SENTINEL;
  BAD(sproj_raw_read_sino(mbase, &si, &sdata), SPROJ_ERR_IO, RS);
  BAD(sproj_raw_read_sino(nbase, &si, &sdata), SPROJ_ERR_IO, RS);
  BAD(sproj_raw_read_sino(NULL, &si, &sdata), SPROJ_ERR_NULL, RS);
  BAD(sproj_raw_read_sino(mbase, NULL, &sdata), SPROJ_ERR_NULL, RS);
  BAD(sproj_raw_read_sino(mbase, &si, NULL), SPROJ_ERR_NULL, RS);
  ck_assert_msg(memcmp(&si, &si0, sizeof si) == 0 && sdata == SENTINEL, "raw_read_sino wrote on failure");

  /* raw listmode */
  const char *WL = "sproj_raw_write_listmode", *RL = "sproj_raw_read_listmode";
  struct sproj_lm_info lg = {3, 100, "", 5, 6.0f}, li;
  int32_t lor[3] = {0, 50, 99};
  int16_t bin[3] = {0, 4, 2};
  BAD(sproj_raw_write_listmode(NULL, &lg, lor, bin), SPROJ_ERR_NULL, WL);
  BAD(sproj_raw_write_listmode(base, NULL, lor, bin), SPROJ_ERR_NULL, WL);
  BAD(sproj_raw_write_listmode(base, &lg, NULL, bin), SPROJ_ERR_NULL, WL);
  BAD(sproj_raw_write_listmode("", &lg, lor, bin), SPROJ_ERR_INVALID, WL);
  li = lg;
  li.num_events = -1;
  BAD(sproj_raw_write_listmode(base, &li, lor, bin), SPROJ_ERR_DIMS, WL);
  li.num_events = INT64_MIN;
  BAD(sproj_raw_write_listmode(base, &li, lor, bin), SPROJ_ERR_DIMS, WL);
  li.num_events = INT64_MAX;
  BAD(sproj_raw_write_listmode(base, &li, lor, bin), SPROJ_ERR_OVERFLOW, WL);
  const int64_t bad_nl[] = {INT64_MIN, 0, (int64_t)INT32_MAX + 1, INT64_MAX};
  for (size_t i = 0; i < 4; i++) {
    li = lg;
    li.num_lors = bad_nl[i];
    BAD(sproj_raw_write_listmode(base, &li, lor, bin), SPROJ_ERR_RANGE, WL);
  }
  const int32_t bad_lor_ev[] = {-1, 100, INT32_MAX, INT32_MIN};
  for (size_t i = 0; i < 4; i++) {
    int32_t l2[3] = {0, bad_lor_ev[i], 1};
    BAD(sproj_raw_write_listmode(base, &lg, l2, bin), SPROJ_ERR_RANGE, WL);
  }
  const int16_t bad_bin_ev[] = {-1, 5, INT16_MAX, INT16_MIN};
  for (size_t i = 0; i < 4; i++) {
    int16_t b2[3] = {0, 1, bad_bin_ev[i]};
    BAD(sproj_raw_write_listmode(base, &lg, lor, b2), SPROJ_ERR_RANGE, WL);
  }
  li = lg;
  li.num_tof_bins = -1;
  BAD(sproj_raw_write_listmode(base, &li, lor, NULL), SPROJ_ERR_TOF, WL);
  li = lg;
  li.tof_bin_width = NAN;
  BAD(sproj_raw_write_listmode(base, &li, lor, bin), SPROJ_ERR_TOF, WL);
  BAD(sproj_raw_write_listmode(nbase, &lg, lor, bin), SPROJ_ERR_IO, WL);
  memset(&li, 0x5a, sizeof li);
  struct sproj_lm_info li0 = li;
  int32_t *rl = SENTINEL;
  int16_t *rb = SENTINEL;
  BAD(sproj_raw_read_listmode(mbase, &li, &rl, &rb), SPROJ_ERR_IO, RL);
  BAD(sproj_raw_read_listmode(NULL, &li, &rl, &rb), SPROJ_ERR_NULL, RL);
  BAD(sproj_raw_read_listmode(mbase, NULL, &rl, &rb), SPROJ_ERR_NULL, RL);
  BAD(sproj_raw_read_listmode(mbase, &li, NULL, &rb), SPROJ_ERR_NULL, RL);
  ck_assert_msg(memcmp(&li, &li0, sizeof li) == 0 && rl == SENTINEL && rb == SENTINEL, "raw_read_listmode wrote");
  /* reading a sinogram as listmode is a format error */
  ck_assert_int_eq(sproj_raw_write_sino(base, &good, sino), SPROJ_OK);
  BAD(sproj_raw_read_listmode(base, &li, &rl, &rb), SPROJ_ERR_FORMAT, RL);
  ck_assert_msg(memcmp(&li, &li0, sizeof li) == 0 && rl == SENTINEL && rb == SENTINEL, "raw_read_listmode wrote");

  /* PNG previews */
  char png[256], npng[256];
  path_in(png, sizeof png, "x.png");
  path_in(npng, sizeof npng, "no-such-dir/x.png");
  const char *PI = "sproj_png_write_image", *PS = "sproj_png_write_sino";
  const float bad_window[][2] = {{1, 1}, {2, 1}, {NAN, 1}, {0, INFINITY}, {-INFINITY, 0}};
  for (size_t i = 0; i < 5; i++) {
    BAD(sproj_png_write_image(png, image, dims, vs, bad_window[i]), SPROJ_ERR_INVALID, PI);
    const int64_t shape[3] = {4, 2, 3};
    BAD(sproj_png_write_sino(png, sino, 3, shape, 0, 2, 1, 0, bad_window[i]), SPROJ_ERR_INVALID, PS);
  }
  BAD(sproj_png_write_image(NULL, image, dims, vs, NULL), SPROJ_ERR_NULL, PI);
  BAD(sproj_png_write_image(png, NULL, dims, vs, NULL), SPROJ_ERR_NULL, PI);
  BAD(sproj_png_write_image(png, image, NULL, vs, NULL), SPROJ_ERR_NULL, PI);
  BAD(sproj_png_write_image(png, image, dims, NULL, NULL), SPROJ_ERR_NULL, PI);
  BAD(sproj_png_write_image(png, image, zero, vs, NULL), SPROJ_ERR_DIMS, PI);
  BAD(sproj_png_write_image(png, image, neg, vs, NULL), SPROJ_ERR_DIMS, PI);
  BAD(sproj_png_write_image(png, image, huge, vs, NULL), SPROJ_ERR_OVERFLOW, PI);
  BAD(sproj_png_write_image(png, image, dims, vnan, NULL), SPROJ_ERR_VOXEL_SIZE, PI);
  BAD(sproj_png_write_image(png, image, dims, vneg, NULL), SPROJ_ERR_VOXEL_SIZE, PI);
  BAD(sproj_png_write_image(npng, image, dims, vs, NULL), SPROJ_ERR_IO, PI);
  const int64_t shape3[3] = {4, 2, 3}, shape4[4] = {4, 2, 3, 5}, shape0[3] = {4, 0, 3}, shapen[3] = {4, -2, 3};
  const int64_t shapeh[3] = {4, INT64_MAX, INT64_MAX};
  BAD(sproj_png_write_sino(NULL, sino, 3, shape3, 0, 2, 1, 0, NULL), SPROJ_ERR_NULL, PS);
  BAD(sproj_png_write_sino(png, NULL, 3, shape3, 0, 2, 1, 0, NULL), SPROJ_ERR_NULL, PS);
  BAD(sproj_png_write_sino(png, sino, 3, NULL, 0, 2, 1, 0, NULL), SPROJ_ERR_NULL, PS);
  const int bad_ndims[] = {INT_MIN, 0, 2, 5, INT_MAX};
  for (size_t i = 0; i < 5; i++)
    BAD(sproj_png_write_sino(png, sino, bad_ndims[i], shape4, 0, 2, 1, 0, NULL), SPROJ_ERR_DIMS, PS);
  BAD(sproj_png_write_sino(png, sino, 3, shape0, 0, 2, 1, 0, NULL), SPROJ_ERR_DIMS, PS);
  BAD(sproj_png_write_sino(png, sino, 3, shapen, 0, 2, 1, 0, NULL), SPROJ_ERR_DIMS, PS);
  BAD(sproj_png_write_sino(png, sino, 3, shapeh, 0, 2, 1, 0, NULL), SPROJ_ERR_OVERFLOW, PS);
  const int bad_axes3[][3] = {{0, 0, 1}, {0, 2, 2}, {1, 2, 1}, {3, 2, 1}, {0, -1, 1}, {0, 2, INT_MAX}, {INT_MIN, 1, 2}};
  for (size_t i = 0; i < sizeof bad_axes3 / sizeof bad_axes3[0]; i++)
    BAD(sproj_png_write_sino(png, sino, 3, shape3, bad_axes3[i][0], bad_axes3[i][1], bad_axes3[i][2], 0, NULL),
        SPROJ_ERR_INVALID, PS);
  const int64_t bad_view[] = {INT64_MIN, -1, 4, INT64_MAX};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_png_write_sino(png, sino, 3, shape3, 0, 2, 1, bad_view[i], NULL), SPROJ_ERR_RANGE, PS);
  BAD(sproj_png_write_sino(npng, sino, 3, shape3, 0, 2, 1, 0, NULL), SPROJ_ERR_IO, PS);
  ck_assert_int_ne(access(png, F_OK), 0);
}
END_TEST

START_TEST(test_simulation)
{
  struct sproj_phantom ph, ph0;
  memset(&ph, 0x5a, sizeof ph);
  ph0 = ph;
  const char *PD = "sproj_phantom_default", *PF = "sproj_phantom_fill";
  const int zero[3] = {8, 0, 6}, neg[3] = {8, 7, INT_MIN}, huge[3] = {INT_MAX, INT_MAX, 2};
  const float vnan[3] = {NAN, 1, 1}, vzero[3] = {1, 0, 1}, onan[3] = {0, INFINITY, 0};
  BAD(sproj_phantom_default(NULL, G.n, G.vs, G.origin), SPROJ_ERR_NULL, PD);
  BAD(sproj_phantom_default(&ph, NULL, G.vs, G.origin), SPROJ_ERR_NULL, PD);
  BAD(sproj_phantom_default(&ph, G.n, NULL, G.origin), SPROJ_ERR_NULL, PD);
  BAD(sproj_phantom_default(&ph, G.n, G.vs, NULL), SPROJ_ERR_NULL, PD);
  BAD(sproj_phantom_default(&ph, zero, G.vs, G.origin), SPROJ_ERR_DIMS, PD);
  BAD(sproj_phantom_default(&ph, neg, G.vs, G.origin), SPROJ_ERR_DIMS, PD);
  BAD(sproj_phantom_default(&ph, huge, G.vs, G.origin), SPROJ_ERR_OVERFLOW, PD);
  BAD(sproj_phantom_default(&ph, G.n, vnan, G.origin), SPROJ_ERR_VOXEL_SIZE, PD);
  BAD(sproj_phantom_default(&ph, G.n, vzero, G.origin), SPROJ_ERR_VOXEL_SIZE, PD);
  BAD(sproj_phantom_default(&ph, G.n, G.vs, onan), SPROJ_ERR_NONFINITE, PD);
  ck_assert_msg(memcmp(&ph, &ph0, sizeof ph) == 0, "phantom_default wrote on failure");

  struct sproj_phantom good;
  ck_assert_int_eq(sproj_phantom_default(&good, G.n, G.vs, G.origin), SPROJ_OK);
  int64_t nvox = tu_nvox(&G);
  float *out = tu_alloc(nvox);
  for (int64_t i = 0; i < nvox; i++)
    out[i] = SENTF;
  const int bad_ss[] = {INT_MIN, -1, 0, 17, INT_MAX};
  for (size_t i = 0; i < 5; i++)
    BAD(sproj_phantom_fill(&good, out, G.n, G.vs, G.origin, bad_ss[i]), SPROJ_ERR_INVALID, PF);
  BAD(sproj_phantom_fill(NULL, out, G.n, G.vs, G.origin, 1), SPROJ_ERR_NULL, PF);
  BAD(sproj_phantom_fill(&good, NULL, G.n, G.vs, G.origin, 1), SPROJ_ERR_NULL, PF);
  BAD(sproj_phantom_fill(&good, out, zero, G.vs, G.origin, 1), SPROJ_ERR_DIMS, PF);
  BAD(sproj_phantom_fill(&good, out, huge, G.vs, G.origin, 1), SPROJ_ERR_OVERFLOW, PF);
  BAD(sproj_phantom_fill(&good, out, G.n, vnan, G.origin, 1), SPROJ_ERR_VOXEL_SIZE, PF);
  BAD(sproj_phantom_fill(&good, out, G.n, G.vs, onan, 1), SPROJ_ERR_NONFINITE, PF);
  const float bad_len[] = {0, -1, NAN, INFINITY};
  for (size_t i = 0; i < 4; i++) {
    ph = good;
    ph.radius = bad_len[i];
    BAD(sproj_phantom_fill(&ph, out, G.n, G.vs, G.origin, 1), SPROJ_ERR_INVALID, PF);
    ph = good;
    ph.length = bad_len[i];
    BAD(sproj_phantom_fill(&ph, out, G.n, G.vs, G.origin, 1), SPROJ_ERR_INVALID, PF);
    ph = good;
    ph.spheres[ph.num_spheres - 1].radius = bad_len[i];
    BAD(sproj_phantom_fill(&ph, out, G.n, G.vs, G.origin, 1), SPROJ_ERR_INVALID, PF);
  }
  const int bad_ns[] = {INT_MIN, -1, SPROJ_PHANTOM_MAX_SPHERES + 1, INT_MAX};
  for (size_t i = 0; i < 4; i++) {
    ph = good;
    ph.num_spheres = bad_ns[i];
    BAD(sproj_phantom_fill(&ph, out, G.n, G.vs, G.origin, 1), SPROJ_ERR_INVALID, PF);
  }
  const float nonfinite[] = {NAN, INFINITY, -INFINITY};
  for (size_t i = 0; i < 3; i++) {
    ph = good;
    ph.value = nonfinite[i];
    BAD(sproj_phantom_fill(&ph, out, G.n, G.vs, G.origin, 1), SPROJ_ERR_INVALID, PF);
    ph = good;
    ph.centre[1] = nonfinite[i];
    BAD(sproj_phantom_fill(&ph, out, G.n, G.vs, G.origin, 1), SPROJ_ERR_INVALID, PF);
    ph = good;
    ph.spheres[0].centre[2] = nonfinite[i];
    BAD(sproj_phantom_fill(&ph, out, G.n, G.vs, G.origin, 1), SPROJ_ERR_INVALID, PF);
    ph = good;
    ph.spheres[1].value = nonfinite[i];
    BAD(sproj_phantom_fill(&ph, out, G.n, G.vs, G.origin, 1), SPROJ_ERR_INVALID, PF);
  }
  for (int64_t i = 0; i < nvox; i++)
    ck_assert_msg(out[i] == SENTF, "a failing phantom_fill wrote voxel %lld", (long long)i);

  /* Poisson: every bad mean anywhere is found before a count is written */
  const char *P = "sproj_poisson", *SL = "sproj_sample_listmode";
  float mean[16], counts[16];
  for (int i = 0; i < 16; i++) {
    mean[i] = 2.0f;
    counts[i] = SENTF;
  }
  BAD(sproj_poisson(NULL, counts, 16, 1, 1), SPROJ_ERR_NULL, P);
  BAD(sproj_poisson(mean, NULL, 16, 1, 1), SPROJ_ERR_NULL, P);
  BAD(sproj_poisson(mean, counts, -1, 1, 1), SPROJ_ERR_DIMS, P);
  BAD(sproj_poisson(mean, counts, INT64_MIN, 1, 1), SPROJ_ERR_DIMS, P);
  const int bad_threads[] = {INT_MIN, -1, 1025, INT_MAX};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_poisson(mean, counts, 16, 1, bad_threads[i]), SPROJ_ERR_INVALID, P);
  for (size_t i = 0; i < 3; i++) {
    mean[15] = nonfinite[i];
    BAD(sproj_poisson(mean, counts, 16, UINT64_MAX, 1), SPROJ_ERR_NONFINITE, P);
  }
  const float negative[] = {-FLT_TRUE_MIN, -1, -FLT_MAX};
  for (size_t i = 0; i < 3; i++) {
    mean[15] = negative[i];
    BAD(sproj_poisson(mean, counts, 16, 0, 0), SPROJ_ERR_RANGE, P);
  }
  for (int i = 0; i < 16; i++)
    ck_assert_msg(counts[i] == SENTF, "a failing sproj_poisson wrote count %d", i);
  mean[15] = 2.0f;

  int32_t *lo = SENTINEL;
  int16_t *bi = SENTINEL;
  int64_t ne = SENT64;
  BAD(sproj_sample_listmode(NULL, 16, 0, 1, 1, &lo, &bi, &ne), SPROJ_ERR_NULL, SL);
  BAD(sproj_sample_listmode_sorted(NULL, 16, 0, 1, 1, &lo, &bi, &ne), SPROJ_ERR_NULL, "sproj_sample_listmode_sorted");
  BAD(sproj_sample_listmode_sorted(mean, 16, -2, 1, 1, &lo, &bi, &ne), SPROJ_ERR_TOF, "sproj_sample_listmode_sorted");
  BAD(sproj_sample_listmode(mean, 16, 0, 1, 1, NULL, &bi, &ne), SPROJ_ERR_NULL, SL);
  BAD(sproj_sample_listmode(mean, 16, 0, 1, 1, &lo, &bi, NULL), SPROJ_ERR_NULL, SL);
  BAD(sproj_sample_listmode(mean, -1, 0, 1, 1, &lo, &bi, &ne), SPROJ_ERR_DIMS, SL);
  BAD(sproj_sample_listmode(mean, INT64_MIN, 0, 1, 1, &lo, &bi, &ne), SPROJ_ERR_DIMS, SL);
  BAD(sproj_sample_listmode(mean, (int64_t)INT32_MAX + 1, 0, 1, 1, &lo, &bi, &ne), SPROJ_ERR_OVERFLOW, SL);
  BAD(sproj_sample_listmode(mean, INT64_MAX, 0, 1, 1, &lo, &bi, &ne), SPROJ_ERR_OVERFLOW, SL);
  const int bad_tb[] = {INT_MIN, -1, SPROJ_MAX_TOF_BINS + 1, INT_MAX};
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_sample_listmode(mean, 4, bad_tb[i], 1, 1, &lo, &bi, &ne), SPROJ_ERR_TOF, SL);
  for (size_t i = 0; i < 4; i++)
    BAD(sproj_sample_listmode(mean, 16, 0, 1, bad_threads[i], &lo, &bi, &ne), SPROJ_ERR_INVALID, SL);
  for (size_t i = 0; i < 3; i++) {
    mean[7] = nonfinite[i];
    BAD(sproj_sample_listmode(mean, 4, 4, 1, 1, &lo, &bi, &ne), SPROJ_ERR_NONFINITE, SL);
    mean[7] = negative[i];
    BAD(sproj_sample_listmode(mean, 4, 4, 1, 1, &lo, &bi, &ne), SPROJ_ERR_RANGE, SL);
  }
  /* huge means: more events than fit */
  for (int i = 0; i < 16; i++)
    mean[i] = FLT_MAX;
  BAD(sproj_sample_listmode(mean, 16, 0, 1, 1, &lo, &bi, &ne), SPROJ_ERR_OVERFLOW, SL);
  ck_assert_msg(lo == SENTINEL && bi == SENTINEL && ne == SENT64, "a failing sample_listmode wrote");
  free(out);
}
END_TEST

/* ---- one-shot calls (starproj_parallelproj.h) ---------------------------------------------------------------------- */
/* One call of each of the six, with the arguments of struct pp_args. */
struct pp_args {
  const float *xs, *xe;
  float *img;
  const float *origin, *vs;
  float *values;
  size_t n;
  const int *dims;
  float bin_width;
  const float *sigma, *offset;
  float num_sigmas;
  const short *bins;
  short num_bins;
  unsigned char lor_sigma, lor_offset;
};

static const char *pp_name[6] = {"sproj_pp_joseph3d_fwd",         "sproj_pp_joseph3d_back",
                                 "sproj_pp_joseph3d_tof_sino_fwd", "sproj_pp_joseph3d_tof_sino_back",
                                 "sproj_pp_joseph3d_tof_lm_fwd",   "sproj_pp_joseph3d_tof_lm_back"};

static int pp_call(int which, const struct pp_args *a)
{
  switch (which) {
  case 0: return sproj_pp_joseph3d_fwd(a->xs, a->xe, a->img, a->origin, a->vs, a->values, a->n, a->dims, 0, 64);
  case 1: return sproj_pp_joseph3d_back(a->xs, a->xe, a->img, a->origin, a->vs, a->values, a->n, a->dims, 0, 64);
  case 2:
    return sproj_pp_joseph3d_tof_sino_fwd(a->xs, a->xe, a->img, a->origin, a->vs, a->values, a->n, a->dims,
                                          a->bin_width, a->sigma, a->offset, a->num_sigmas, a->num_bins, a->lor_sigma,
                                          a->lor_offset, 0, 64);
  case 3:
    return sproj_pp_joseph3d_tof_sino_back(a->xs, a->xe, a->img, a->origin, a->vs, a->values, a->n, a->dims,
                                           a->bin_width, a->sigma, a->offset, a->num_sigmas, a->num_bins,
                                           a->lor_sigma, a->lor_offset, 0, 64);
  case 4:
    return sproj_pp_joseph3d_tof_lm_fwd(a->xs, a->xe, a->img, a->origin, a->vs, a->values, a->n, a->dims,
                                        a->bin_width, a->sigma, a->offset, a->num_sigmas, a->bins, a->num_bins,
                                        a->lor_sigma, a->lor_offset, 0, 64);
  default:
    return sproj_pp_joseph3d_tof_lm_back(a->xs, a->xe, a->img, a->origin, a->vs, a->values, a->n, a->dims,
                                         a->bin_width, a->sigma, a->offset, a->num_sigmas, a->bins, a->num_bins,
                                         a->lor_sigma, a->lor_offset, 0, 64);
  }
}

START_TEST(test_oneshot)
{
  int64_t nvox = tu_nvox(&G);
  float *pimg = tu_alloc(nvox), *pval = tu_alloc(NL * NB), *bad = tu_alloc(3 * NL);
  float sigma = 5.0f, offset = 0.0f, sig_lor[NL], off_lor[NL];
  short bins[NL];
  for (int i = 0; i < NL; i++) {
    bins[i] = (short)ebins[i];
    sig_lor[i] = 5.0f;
    off_lor[i] = 0.0f;
  }
  const struct pp_args good = {xs, xe, pimg, G.origin, G.vs, pval, NL, G.n, 6.0f, &sigma, &offset, 3.0f, bins, NB,
                               0, 0};
  const int zero[3] = {8, 0, 6}, neg[3] = {INT_MIN, 7, 6}, huge[3] = {INT_MAX, INT_MAX, INT_MAX};
  const float vnan[3] = {1, NAN, 1}, vneg[3] = {-1, 1, 1}, vinf[3] = {1, 1, INFINITY};
  const float onan[3] = {NAN, 0, 0}, oinf[3] = {0, -INFINITY, 0};
  for (int w = 0; w < 6; w++) {
    const char *F = pp_name[w];
    int tofc = w >= 2, lm = w >= 4;
    /* poison the output the call would write: a failing call leaves it as it was */
    float *target = w % 2 ? pimg : pval;
    int64_t ntarget = w % 2 ? nvox : NL * NB;
    for (int64_t i = 0; i < ntarget; i++)
      target[i] = SENTF;
    struct pp_args a;
#define PP(field, val, want)                                                                                          \
  do {                                                                                                                \
    a = good;                                                                                                         \
    a.field = (val);                                                                                                  \
    BAD(pp_call(w, &a), (want), F);                                                                                   \
  } while (0)
    PP(xs, NULL, SPROJ_ERR_NULL);
    PP(xe, NULL, SPROJ_ERR_NULL);
    PP(img, NULL, SPROJ_ERR_NULL);
    PP(origin, NULL, SPROJ_ERR_NULL);
    PP(vs, NULL, SPROJ_ERR_NULL);
    PP(values, NULL, SPROJ_ERR_NULL);
    PP(dims, NULL, SPROJ_ERR_NULL);
    PP(n, (size_t)UINT32_MAX + 1, SPROJ_ERR_OVERFLOW);
    PP(n, SIZE_MAX, SPROJ_ERR_OVERFLOW);
    PP(dims, zero, SPROJ_ERR_DIMS);
    PP(dims, neg, SPROJ_ERR_DIMS);
    PP(dims, huge, SPROJ_ERR_OVERFLOW);
    PP(vs, vnan, SPROJ_ERR_VOXEL_SIZE);
    PP(vs, vneg, SPROJ_ERR_VOXEL_SIZE);
    PP(vs, vinf, SPROJ_ERR_VOXEL_SIZE);
    PP(origin, onan, SPROJ_ERR_NONFINITE);
    PP(origin, oinf, SPROJ_ERR_NONFINITE);
    memcpy(bad, xs, 3 * NL * sizeof(float));
    bad[3 * NL - 2] = NAN;
    PP(xs, bad, SPROJ_ERR_NONFINITE);
    bad[3 * NL - 2] = -INFINITY;
    PP(xe, bad, SPROJ_ERR_NONFINITE);
    bad[3 * NL - 2] = FLT_MAX;
    PP(xe, bad, SPROJ_ERR_RANGE);
    if (tofc) {
      PP(sigma, NULL, SPROJ_ERR_NULL);
      PP(offset, NULL, SPROJ_ERR_NULL);
      PP(bin_width, NAN, SPROJ_ERR_TOF);
      PP(bin_width, -INFINITY, SPROJ_ERR_TOF);
      PP(bin_width, 0.0f, SPROJ_ERR_TOF);
      PP(bin_width, FLT_TRUE_MIN, SPROJ_ERR_TOF);
      PP(num_sigmas, NAN, SPROJ_ERR_TOF);
      PP(num_sigmas, -3.0f, SPROJ_ERR_TOF);
      PP(num_sigmas, FLT_MAX, SPROJ_ERR_TOF);
      /* negative bins: the sinogram calls refuse them in sproj_proj_register_tof (DIMS), the listmode calls in
       * sproj_tof_register (TOF); the header allows the errors of either registration call */
      PP(num_bins, -1, lm ? SPROJ_ERR_TOF : SPROJ_ERR_DIMS);
      PP(num_bins, SHRT_MIN, lm ? SPROJ_ERR_TOF : SPROJ_ERR_DIMS);
      float s_bad = NAN, o_bad = INFINITY;
      PP(sigma, &s_bad, SPROJ_ERR_TOF);
      PP(offset, &o_bad, SPROJ_ERR_NONFINITE);
      /* per-LOR arrays with one bad value, the last */
      a = good;
      a.lor_sigma = 1;
      a.sigma = sig_lor;
      sig_lor[NL - 1] = -5.0f;
      BAD(pp_call(w, &a), SPROJ_ERR_TOF, F);
      sig_lor[NL - 1] = 5.0f;
      a = good;
      a.lor_offset = 255;
      a.offset = off_lor;
      off_lor[NL - 1] = NAN;
      BAD(pp_call(w, &a), SPROJ_ERR_NONFINITE, F);
      off_lor[NL - 1] = 0.0f;
    }
    if (lm) {
      PP(bins, NULL, SPROJ_ERR_NULL);
      short bb[NL];
      memcpy(bb, bins, sizeof bb);
      const short bad_b[] = {-1, NB, SHRT_MAX, SHRT_MIN};
      for (int k = 0; k < 4; k++) {
        bb[NL - 1] = bad_b[k];
        PP(bins, bb, SPROJ_ERR_RANGE);
      }
    }
#undef PP
    for (int64_t i = 0; i < ntarget; i++)
      ck_assert_msg(target[i] == SENTF, "%s: a failing call wrote element %lld", F, (long long)i);
  }
  free(pimg);
  free(pval);
  free(bad);
  check_unchanged("the one-shot calls");
}
END_TEST

/* ---- extreme but valid geometries: accepted, and projecting to finite values ------------------------------------ */
START_TEST(test_extreme_geometries)
{
  /* denormal and huge voxel sizes are finite and > 0, so valid; so are origins far out (the box stays finite) */
  const float den = FLT_TRUE_MIN;
  const struct tu_geom cases[] = {
    {{8, 7, 6}, {den, den, den}, {0, 0, 0}},
    {{8, 7, 6}, {1e30f, 1e30f, 1e30f}, {-3.5e30f, -3e30f, -2.5e30f}},
    {{8, 7, 6}, {2, 2.5f, 3}, {1e30f, -1e30f, 0}},
    {{8, 7, 6}, {2, 2.5f, 3}, {den, -den, den}},
    {{1, 1, 1}, {FLT_MAX / 4, 1, 1}, {0, 0, 0}},
  };
  int64_t nvox = tu_nvox(&G);
  float *im = tu_alloc(nvox), *vals = tu_alloc(NL);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const struct tu_geom *g = &cases[c];
    int64_t n = tu_nvox(g);
    for (int64_t v = 0; v < n; v++)
      im[v] = 1.0f;
    sproj_image *gi;
    sproj_proj *gp;
    ck_assert_msg(sproj_image_register(&gi, im, g->n, g->vs, g->origin) == SPROJ_OK, "case %zu: %s", c,
                  sproj_last_error());
    ck_assert_int_eq(sproj_proj_register(&gp, vals, lors), SPROJ_OK);
    ck_assert_int_eq(sproj_fwd(gi, gp, NULL, 0), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_sync(gp, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);
    for (int i = 0; i < NL; i++)
      ck_assert_msg(isfinite(vals[i]) && vals[i] >= 0, "case %zu: forward value %d = %g", c, i, vals[i]);
    ck_assert_int_eq(sproj_back(gi, gp, NULL, SPROJ_ALL_CHUNKS), SPROJ_OK);
    ck_assert_int_eq(sproj_image_sync(gi, SPROJ_SYNC_READ), SPROJ_OK);
    for (int64_t v = 0; v < n; v++)
      ck_assert_msg(isfinite(im[v]) && im[v] >= 1.0f, "case %zu: voxel %lld = %g after back projection", c,
                    (long long)v, im[v]);
    ck_assert_int_eq(sproj_proj_unregister(gp), SPROJ_OK);
    ck_assert_int_eq(sproj_image_unregister(gi), SPROJ_OK);
  }
  free(im);
  free(vals);
  check_unchanged("the extreme geometries");
}
END_TEST

/* ---- the library's other calls: no arguments to get wrong, or none that fail ---------------------------------------- */
START_TEST(test_getters)
{
  /* strerror, last_error, the config initialisers, the frees and the NULL no-ops cannot fail */
  ck_assert_str_eq(sproj_strerror(INT_MIN), "unknown status code");
  ck_assert_str_eq(sproj_strerror(INT_MAX), "unknown status code");
  ck_assert_ptr_nonnull(sproj_last_error());
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  ck_assert_int_eq(cfg.ncpu, -1);
  struct sproj_recon_config rc;
  sproj_recon_config_init(&rc);
  ck_assert_int_eq(rc.num_subsets, 1);
  sproj_free(NULL);
  ck_assert_int_eq(sproj_free_pinned(NULL, 0), SPROJ_OK);
  ck_assert_int_eq(sproj_free_pinned(NULL, SIZE_MAX), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_destroy(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_recon_destroy(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(NULL), SPROJ_OK);
  ck_assert_ptr_null(sproj_image_handle(NULL));
  ck_assert_ptr_nonnull(sproj_scheduler_name());
  ck_assert_int_gt(sproj_num_workers(), 0);
  ck_assert_int_ge(sproj_num_workers(), sproj_num_cpu_workers());
  ck_assert_int_gt(sproj_get_task_lors(), 0);
  check_unchanged("the getters");
}
END_TEST

static void remove_dir(void)
{
  const char *names[] = {"garbage.nii", "sino.hdr", "sino.raw", "img.nii", "x.png"};
  char p[256];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    path_in(p, sizeof p, names[i]);
    unlink(p);
  }
  rmdir(dir);
}

int main(void)
{
  tu_seed(23);
  int64_t nvox = tu_nvox(&G);
  image = tu_alloc(nvox);
  bimage = tu_alloc(nvox);
  tu_fill_uniform(image, nvox, 0.0f, 1.0f);
  xs = tu_alloc(3 * NL);
  xe = tu_alloc(3 * NL);
  tu_random_lors(&G, xs, xe, NL, NULL);
  values = tu_alloc(NL);
  ovalues = tu_alloc(NL);
  evalues = tu_alloc(NL);
  tvalues = tu_alloc(NL * NB);
  for (int i = 0; i < NL; i++)
    ebins[i] = (int16_t)(i % NB);
  snprintf(dir, sizeof dir, "check_badinput.XXXXXX");
  if (!mkdtemp(dir)) {
    perror("check_badinput: mkdtemp");
    return 99;
  }

  Suite *s0 = suite_create("bad input before sproj_init");
  TCase *t0 = tcase_create("not initialised");
  tcase_add_test(t0, test_before_init);
  suite_add_tcase(s0, t0);
  int ret = tu_run(s0);

  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  Suite *s = suite_create("bad input");
  TCase *tc = tcase_create("every public call");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_setup);
  tcase_add_test(tc, test_runtime);
  tcase_add_test(tc, test_images);
  tcase_add_test(tc, test_lors);
  tcase_add_test(tc, test_chunkings);
  tcase_add_test(tc, test_proj_vectors);
  tcase_add_test(tc, test_projections);
  tcase_add_test(tc, test_tof_params);
  tcase_add_test(tc, test_models);
  tcase_add_test(tc, test_scanner);
  tcase_add_test(tc, test_files);
  tcase_add_test(tc, test_simulation);
  tcase_add_test(tc, test_oneshot);
  tcase_add_test(tc, test_extreme_geometries);
  tcase_add_test(tc, test_getters);
  tcase_add_test(tc, test_teardown);
  suite_add_tcase(s, tc);
  ret |= tu_run(s);
  if (sproj_shutdown() != SPROJ_OK)
    ret = 1;

  Suite *s2 = suite_create("bad input after sproj_shutdown");
  TCase *t2 = tcase_create("shut down");
  tcase_add_test(t2, test_after_shutdown);
  suite_add_tcase(s2, t2);
  ret |= tu_run(s2);

  printf("check_badinput: %d failing calls checked over %d public functions, %d wrong\n", num_calls, num_funcs,
         num_wrong);
  if (num_wrong)
    ret = 1;
  if (getenv("CHECK_BADINPUT_LIST"))
    for (int i = 0; i < num_funcs; i++)
      printf("  %s\n", funcs_seen[i]);
  remove_dir();
  free(image);
  free(bimage);
  free(xs);
  free(xe);
  free(values);
  free(ovalues);
  free(evalues);
  free(tvalues);
  return ret;
}
