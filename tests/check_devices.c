/* SPDX-License-Identifier: Apache-2.0 */
/* check_devices.c: work owned by several devices, computed on CPU workers grouped as stand-ins for GPUs
 * (SPROJ_DEVICES): projections of chunks homed on devices equal those of one device bit for bit and run where their
 * homes are; OS-EM over 2, 3, 4, 6 and 8 devices (each owning a share of every subset, the devices' back projections
 * summed slab by slab: by recursive halving and doubling on 2, 4 and 8, directly on 3 and 6) equals OS-EM on one
 * device within the rounding of those sums, and gives the same image bit for bit when run again; the direct exchange
 * forced on 4 and 8 (SPROJ_SLAB_EXCHANGE=direct) agrees with the halving; the shares stay on their devices under every
 * scheduling policy StarPU offers; bad input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <starpu.h>
#include "recon_scene.h"
#include "../src/core/shared.h"

static struct scene sc;
static float *ybar;      /* noise-free non-TOF data of the phantom */
static float *tof_ybar;  /* noise-free TOF sinogram data of the phantom */
static float *counts;    /* integer counts of it (listmode) */
static int ncpu;         /* CPU workers each test starts */

/* Starts starproj on ncpu CPU workers split into n devices (scheduler sched, NULL: starproj's choice). */
static void start(int n, const char *sched)
{
  char v[16];
  snprintf(v, sizeof v, "%d", n);
  setenv("SPROJ_DEVICES", v, 1);
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = ncpu;
  cfg.ncuda = 0;
  cfg.sched = sched;
  EXPECT(sproj_init(&cfg), SPROJ_OK);
  unsetenv("SPROJ_DEVICES");
}

static void stop(void)
{
  EXPECT(sproj_shutdown(), SPROJ_OK);
}

/* LORs each worker projected since the last reset. */
static void worker_lors(int64_t *lors)
{
  for (int w = 0; w < ncpu; w++) {
    struct sproj_worker_stats st;
    EXPECT(sproj_worker_stats(w, &st), SPROJ_OK);
    ck_assert_int_eq(st.is_gpu, 0);
    lors[w] = st.lors;
  }
}

/* The unit of workers a device of n runs on: with as many workers as devices or more, device d is the d-th group of
 * consecutive workers; with fewer, it shares worker d % ncpu with other devices. */
static int unit_of(int d, int n)
{
  return n <= ncpu ? d : d % ncpu;
}

/* Per-worker counts folded into per-unit counts (unit_of's units; units past the last hold 0). */
static void fold_units(int64_t *lors, int n)
{
  if (n > ncpu)
    return;
  int64_t u[64] = {0};
  for (int w = 0; w < ncpu; w++)
    u[w * n / ncpu] += lors[w];
  memcpy(lors, u, (size_t)ncpu * sizeof *lors);
}

/* ---- devices and homes ---- */
/* SPROJ_DEVICES sets the count (1..8; anything else means 1), a device is never without a worker, and homes are
 * checked. */
START_TEST(test_device_count)
{
  ck_assert_int_eq(sproj_num_devices(), 0);
  ck_assert_int_eq(sproj_chunks_set_device(NULL, 0, 0), SPROJ_ERR_NOT_INIT);
  const char *bad[] = {"0", "9", "-2", "two"};
  for (int i = 0; i < 4; i++) {
    setenv("SPROJ_DEVICES", bad[i], 1);
    EXPECT(tu_init(ncpu, 0), SPROJ_OK);
    ck_assert_msg(sproj_num_devices() == 1, "SPROJ_DEVICES=%s gave %d devices", bad[i], sproj_num_devices());
    stop();
  }
  unsetenv("SPROJ_DEVICES");
  for (int n = 1; n <= 8; n++) {
    start(n, NULL);
    ck_assert_int_eq(sproj_num_devices(), n);
    sproj_lors *lors;
    sproj_chunks *views;
    EXPECT(sproj_lors_register(&lors, sc.xs, sc.xe, sc.nlors), SPROJ_OK);
    EXPECT(scene_views(&sc, lors, &views), SPROJ_OK);
    EXPECT(sproj_chunks_set_device(views, SPROJ_ALL_CHUNKS, n - 1), SPROJ_OK);
    EXPECT(sproj_chunks_set_device(views, 0, -1), SPROJ_OK);
    EXPECT(sproj_chunks_set_device(views, 3, n), SPROJ_ERR_NO_DEVICE);
    EXPECT(sproj_chunks_set_device(views, 3, -2), SPROJ_ERR_NO_DEVICE);
    EXPECT(sproj_chunks_set_device(views, sc.nviews, 0), SPROJ_ERR_RANGE);
    EXPECT(sproj_chunks_set_device(views, -5, 0), SPROJ_ERR_RANGE);
    EXPECT(sproj_chunks_set_device(NULL, 0, 0), SPROJ_ERR_NULL);
    EXPECT(sproj_chunks_destroy(views), SPROJ_OK);
    EXPECT(sproj_lors_unregister(lors), SPROJ_OK);
    stop();
  }
}
END_TEST

/* Forward projections (non-TOF: _i = 0, TOF sinogram: 1) of views homed on n devices (view v on device v % n) equal
 * those of one device bit for bit, each device's LORs were projected by its worker alone, and back projections of the
 * same values (twice, into an image that already holds values: the workers' partials are zeroed at every call and
 * added to what the image holds) equal one device's within float rounding of sums in another order. */
START_TEST(test_homes_project)
{
  const int tof = _i, nb = tof ? sc.tof.num_bins : 1;
  const int64_t nval = sc.nlors * nb, nvox = tu_nvox(&sc.g);
  float *ref = tu_alloc(nval), *got = tu_alloc(nval), *bref = tu_alloc(nvox), *bgot = tu_alloc(nvox);
  float *img = scene_copy(sc.truth, nvox), *vals = tu_alloc(nval);
  for (int64_t i = 0; i < nval; i++)
    vals[i] = 0.5f + (float)(i % 17) / 16.0f;
  const int ns[] = {1, 2, 3, 8};
  for (int t = 0; t < 4; t++) {
    int n = ns[t];
    start(n, NULL);
    sproj_image *im, *bim;
    sproj_lors *lors;
    sproj_chunks *views;
    sproj_proj *p, *pv;
    sproj_tof *tp = NULL;
    float *out = n == 1 ? ref : got, *bout = n == 1 ? bref : bgot;
    for (int64_t v = 0; v < nvox; v++)
      bout[v] = 0.25f;
    EXPECT(sproj_image_register(&im, img, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    EXPECT(sproj_image_register(&bim, bout, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    EXPECT(sproj_lors_register(&lors, sc.xs, sc.xe, sc.nlors), SPROJ_OK);
    EXPECT(scene_views(&sc, lors, &views), SPROJ_OK);
    if (tof) {
      EXPECT(sproj_tof_register(&tp, &sc.tof, NULL, NULL, NULL), SPROJ_OK);
      EXPECT(sproj_proj_register_tof(&p, out, lors, nb), SPROJ_OK);
      EXPECT(sproj_proj_register_tof(&pv, vals, lors, nb), SPROJ_OK);
    } else {
      EXPECT(sproj_proj_register(&p, out, lors), SPROJ_OK);
      EXPECT(sproj_proj_register(&pv, vals, lors), SPROJ_OK);
    }
    for (int v = 0; v < sc.nviews; v++)
      EXPECT(sproj_chunks_set_device(views, v, v % n), SPROJ_OK);
    EXPECT(sproj_stats_reset(), SPROJ_OK);
    EXPECT(tof ? sproj_fwd_tof_sino(im, p, views, SPROJ_ALL_CHUNKS, tp) : sproj_fwd(im, p, views, SPROJ_ALL_CHUNKS),
           SPROJ_OK);
    EXPECT(sproj_wait_all(), SPROJ_OK);
    int64_t lors_on[64] = {0}, expect[64] = {0};
    worker_lors(lors_on);
    fold_units(lors_on, n);
    for (int v = 0; v < sc.nviews; v++)
      expect[unit_of(v % n, n)] += sc.per_view;
    for (int w = 0; w < ncpu; w++)
      ck_assert_msg(n == 1 || lors_on[w] == expect[w], "%d devices: unit %d of workers projected %lld LORs, its devices own %lld",
                    n, w, (long long)lors_on[w], (long long)expect[w]);
    for (int twice = 0; twice < 2; twice++)
      EXPECT(tof ? sproj_back_tof_sino(bim, pv, views, SPROJ_ALL_CHUNKS, tp)
                 : sproj_back(bim, pv, views, SPROJ_ALL_CHUNKS), SPROJ_OK);
    EXPECT(sproj_wait_all(), SPROJ_OK);
    worker_lors(lors_on);
    fold_units(lors_on, n);
    for (int w = 0; w < ncpu; w++)
      ck_assert_msg(n == 1 || lors_on[w] == 3 * expect[w], "%d devices: unit %d of workers projected %lld LORs forward "
                    "and back, its devices own %lld", n, w, (long long)lors_on[w], (long long)expect[w]);
    EXPECT(sproj_proj_unregister(p), SPROJ_OK);
    EXPECT(sproj_proj_unregister(pv), SPROJ_OK);
    EXPECT(sproj_image_unregister(im), SPROJ_OK);
    EXPECT(sproj_image_unregister(bim), SPROJ_OK);
    EXPECT(sproj_tof_unregister(tp), SPROJ_OK);
    EXPECT(sproj_chunks_destroy(views), SPROJ_OK);
    EXPECT(sproj_lors_unregister(lors), SPROJ_OK);
    stop();
    if (n == 1)
      continue;
    int64_t differ = 0;
    for (int64_t i = 0; i < nval; i++)
      differ += memcmp(&ref[i], &got[i], sizeof *ref) != 0;
    double db = tu_rel_l2_ff(bgot, bref, nvox);
    printf("%s, %d devices: %lld of %lld forward values differ from one device's; back projection %.2e (relative L2)\n",
           tof ? "TOF sinogram" : "non-TOF", n, (long long)differ, (long long)nval, db);
    ck_assert_msg(differ == 0, "%lld forward values differ", (long long)differ);
    ck_assert_msg(db <= 1e-6, "back projection differs by %.3g", db);
  }
  free(ref);
  free(got);
  free(bref);
  free(bgot);
  free(img);
  free(vals);
}
END_TEST

/* ---- OS-EM over several devices ---- */
/* LORs device d owns of a subset of total LORs over n devices (recon_devices.c: consecutive equal shares). */
static int64_t share(int64_t total, int d, int n)
{
  return total * (d + 1) / n - total * d / n;
}

/* The LORs each worker must have projected in an OS-EM of S interleaved subsets of views over n devices: every LOR
 * of its devices' shares twice per iteration (forward, back) and once for its subset's sensitivity. */
static void osem_expect(int S, int n, int iters, int64_t *expect)
{
  memset(expect, 0, (size_t)ncpu * sizeof *expect);
  for (int k = 0; k < S; k++) {
    int64_t total = (int64_t)((sc.nviews - k + S - 1) / S) * sc.per_view;
    for (int d = 0; d < n; d++)
      expect[unit_of(d, n)] += (2 * iters + 1) * share(total, d, n);
  }
}

struct osem_case {
  const char *name;
  int tof;          /* 0, 1 (TOF sinogram); listmode: lm */
  int lm;
  int blur;
  int S;
};
static const struct osem_case cases[] = {
  {"non-TOF, 4 subsets", 0, 0, 0, 4},
  {"non-TOF, resolution model, 4 subsets", 0, 0, 1, 4},
  {"TOF sinogram, 2 subsets", 1, 0, 0, 2},
  {"non-TOF MLEM", 0, 0, 0, 1},
  {"TOF listmode, 4 subsets", 1, 1, 0, 4},
};

static void run_case(const struct osem_case *c, int iters, float *x)
{
  const float fwhm[3] = {6.0f, 6.0f, 6.0f};
  if (c->lm) {
    scene_run_lm(&sc, c->tof, c->S, 1, counts, iters, x, NULL);
    return;
  }
  scene_run_sino(&sc, c->tof, c->blur ? fwhm : NULL, c->S, NULL, c->tof ? tof_ybar : ybar, iters, x, NULL, NULL);
}

/* The case run alone on one device: the reference the tests below set several devices against. */
static void run_on_one(const struct osem_case *c, int iters, float *x)
{
  start(1, NULL);
  run_case(c, iters, x);
  stop();
}

/* Each case on 1 device, then on 2, 3, 4, 6 and 8 (halving and doubling on 2, 4, 8; the direct exchange on 3, 6): the
 * images after 3 iterations agree within 1e-5 (relative L2; measured 0.4-1.6e-6: the devices' back projections are
 * added in another order than one device's tasks add theirs), and for the sinograms each worker projected exactly the
 * LORs its devices own (listmode's sensitivity runs over the scanner's LORs, which no device owns, so only the result
 * is compared there). */
START_TEST(test_osem_devices)
{
  const struct osem_case *c = &cases[_i];
  const int iters = 3, ns[] = {2, 3, 4, 6, 8};
  int64_t nvox = tu_nvox(&sc.g);
  float *one = tu_alloc(nvox), *x = tu_alloc(nvox);
  run_on_one(c, iters, one);
  for (int t = 0; t < (int)(sizeof ns / sizeof *ns); t++) {
    int n = ns[t];
    start(n, NULL);
    EXPECT(sproj_stats_reset(), SPROJ_OK);
    run_case(c, iters, x);
    int64_t lors_on[64], expect[64];
    worker_lors(lors_on);
    fold_units(lors_on, n);
    stop();
    double d = tu_rel_l2_ff(x, one, nvox), maxdiff = 0.0;
    for (int64_t v = 0; v < nvox; v++)
      maxdiff = fmax(maxdiff, fabs((double)x[v] - one[v]));
    printf("OSEM %s on %d devices against one: %.2e relative L2, largest voxel difference %.2e (max %.3g)\n", c->name,
           n, d, maxdiff, tu_max_abs(one, nvox));
    ck_assert_msg(d <= 1e-5, "%d devices: %.3g from one device", n, d);
    if (!c->lm) {
      osem_expect(c->S, n, iters, expect);
      for (int w = 0; w < ncpu; w++)
        ck_assert_msg(lors_on[w] == expect[w], "%d devices: unit %d of workers projected %lld LORs, its devices own %lld", n, w,
                      (long long)lors_on[w], (long long)expect[w]);
    }
  }
  free(one);
  free(x);
}
END_TEST

/* Sensitivity images the caller computed (sproj_recon_config.sensitivity_images) on 2 and 3 devices: the reconstruction
 * cuts them into its devices' slabs as it does its own, and after 3 iterations of 4 subsets its image is the one of a
 * reconstruction that computed them (within 1e-5 relative L2: sums in other orders). */
START_TEST(test_sensitivity_images_devices)
{
  const int S = 4, ns[] = {2, 3};
  int64_t nvox = tu_nvox(&sc.g);
  for (int t = 0; t < 2; t++) {
    start(ns[t], NULL);
    float *x = scene_ones(&sc), *x2 = scene_ones(&sc);
    struct scene_osem o;
    scene_osem_open(&o, &sc, 0, x, ybar, NULL, S);
    sproj_proj *m;
    sproj_image *sens[4], *img2;
    scene_sensitivity_images(&o, &sc, S, &m, sens);
    EXPECT(sproj_image_register(&img2, x2, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    struct sproj_recon_config cfg;
    scene_osem_config(&o, S, &cfg);
    cfg.sensitivity_images = sens;
    cfg.num_sensitivities = S;
    sproj_recon *r2;
    EXPECT(sproj_recon_create(&r2, img2, &cfg), SPROJ_OK);
    scene_sensitivity_images_free(m, sens, S);
    EXPECT(sproj_recon_iterate(o.r, 3, NULL, NULL), SPROJ_OK);
    EXPECT(sproj_recon_iterate(r2, 3, NULL, NULL), SPROJ_OK);
    EXPECT(sproj_image_sync(o.img, SPROJ_SYNC_READ), SPROJ_OK);
    EXPECT(sproj_image_sync(img2, SPROJ_SYNC_READ), SPROJ_OK);
    double d = tu_rel_l2_ff(x2, x, nvox);
    printf("OSEM on %d devices with the sensitivity images given against computed: %.2e (relative L2)\n", ns[t], d);
    ck_assert_msg(d <= 1e-5, "%d devices: the images differ by %.3g", ns[t], d);
    EXPECT(sproj_recon_destroy(r2), SPROJ_OK);
    EXPECT(sproj_image_unregister(img2), SPROJ_OK);
    scene_osem_close(&o);
    stop();
    free(x);
    free(x2);
  }
}
END_TEST

/* The devices' sums are added in an order the device count fixes, whichever device or worker runs first: OS-EM with
 * a resolution model (the blurred back projections are the summands) run twice on n devices gives the same image bit
 * for bit (0 voxels differ), for the halving and doubling (2, 4, 8) and the direct exchange (3, 6). */
START_TEST(test_osem_repeatable)
{
  const int ns[] = {2, 3, 4, 6, 8}, iters = 2;
  int64_t nvox = tu_nvox(&sc.g);
  float *a = tu_alloc(nvox), *b = tu_alloc(nvox);
  for (int t = 0; t < (int)(sizeof ns / sizeof *ns); t++) {
    for (int run = 0; run < 2; run++) {
      start(ns[t], NULL);
      run_case(&cases[1], iters, run ? b : a);
      stop();
    }
    int64_t differ = 0;
    for (int64_t v = 0; v < nvox; v++)
      differ += memcmp(&a[v], &b[v], sizeof *a) != 0;
    printf("OSEM %s on %d devices, run twice: %lld of %lld voxels differ\n", cases[1].name, ns[t], (long long)differ,
           (long long)nvox);
    ck_assert_msg(differ == 0, "%d devices: %lld voxels differ between two runs", ns[t], (long long)differ);
  }
  free(a);
  free(b);
}
END_TEST

/* ---- OS-EM over devices with a distributed reduction ---- */
/* A hook that stands for two processes holding the same LORs: it doubles every image and every device's part given
 * to it (the sum over two identical processes), and counts what it was given. Doubling is exact in float, and the
 * update divides the subset's back projection by its sensitivity, both doubled: the image must come out as without a
 * hook, within the rounding of the devices' sums. */
struct doubling {
  int images, calls, parts;
  int64_t part_voxels;
  const char *part_not_host; /* what went wrong, if anything */
};

static void double_handle(starpu_data_handle_t h, struct doubling *dbl)
{
  if (starpu_data_acquire(h, STARPU_RW) != 0) {
    dbl->part_not_host = "could not acquire a part on the host";
    return;
  }
  float *v = (float *)starpu_vector_get_local_ptr(h);
  uint32_t n = starpu_vector_get_nx(h);
  for (uint32_t i = 0; i < n; i++)
    v[i] *= 2.0f;
  starpu_data_release(h);
}

static struct doubling g_dbl;
static int double_image(void *user, sproj_image *img)
{
  struct doubling *dbl = user;
  dbl->images++;
  double_handle(sproj_image_handle(img), dbl);
  return SPROJ_OK;
}
static int double_parts(void *user, const sproj_starpu_handle *parts, int n)
{
  struct doubling *dbl = user;
  dbl->calls++;
  for (int i = 0; i < n; i++) {
    dbl->parts++;
    dbl->part_voxels += starpu_vector_get_nx(parts[i]);
    double_handle(parts[i], dbl);
  }
  return SPROJ_OK;
}

/* Non-TOF and TOF sinogram OS-EM with the doubling hook on 1, 2, 4 and 8 devices: on several devices the halving
 * runs one step further and the hook gets every device's slab in one call per subset (n parts, covering the image
 * once) instead of the image; the sensitivities still come to it whole. The images agree with one device's without a hook within
 * 1e-5 (relative L2; the rounding of the sums, as in test_osem_devices). 3 devices (no halving) keep the single
 * path, where the hook gets every subset's whole back projection. */
START_TEST(test_osem_hooked)
{
  const struct osem_case *c = &cases[_i ? 2 : 0];
  const int iters = 2, ns[] = {1, 2, 3, 4, 8};
  int64_t nvox = tu_nvox(&sc.g);
  float *one = tu_alloc(nvox), *x = tu_alloc(nvox);
  run_on_one(c, iters, one);
  struct sproj_recon_hook hook = {double_image, double_parts, &g_dbl};
  for (int t = 0; t < (int)(sizeof ns / sizeof *ns); t++) {
    int n = ns[t], halving = n == 2 || n == 4 || n == 8;
    memset(&g_dbl, 0, sizeof g_dbl);
    start(n, NULL);
    scene_hook = &hook;
    run_case(c, iters, x);
    scene_hook = NULL;
    stop();
    double d = tu_rel_l2_ff(x, one, nvox);
    printf("OSEM %s on %d devices with a distributed reduction (doubling): %.2e relative L2 from one device; the hook "
           "got %d images and %d parts (%lld voxels)\n", c->name, n, d, g_dbl.images, g_dbl.parts,
           (long long)g_dbl.part_voxels);
    ck_assert_msg(!g_dbl.part_not_host, "%s", g_dbl.part_not_host);
    ck_assert_msg(d <= 1e-5, "%d devices with a hook: %.3g from one device", n, d);
    int subsets = c->S * iters;
    ck_assert_int_eq(g_dbl.images, c->S + (halving ? 0 : subsets));
    ck_assert_int_eq(g_dbl.calls, halving ? subsets : 0);
    ck_assert_int_eq(g_dbl.parts, halving ? n * subsets : 0);
    ck_assert_int_eq(g_dbl.part_voxels, halving ? nvox * subsets : 0);
  }
  free(one);
  free(x);
}
END_TEST

/* SPROJ_SLAB_EXCHANGE=direct makes 4 and 8 devices sum directly instead of by halving and doubling: the images differ
 * in the rounding of the sums only (relative L2 within 1e-6 of each other; some voxels differ, so the exchange did
 * change). */
START_TEST(test_osem_exchanges)
{
  const int ns[] = {4, 8}, iters = 3;
  int64_t nvox = tu_nvox(&sc.g);
  float *tree = tu_alloc(nvox), *direct = tu_alloc(nvox);
  for (int t = 0; t < 2; t++) {
    start(ns[t], NULL);
    run_case(&cases[0], iters, tree);
    stop();
    setenv("SPROJ_SLAB_EXCHANGE", "direct", 1);
    start(ns[t], NULL);
    run_case(&cases[0], iters, direct);
    stop();
    unsetenv("SPROJ_SLAB_EXCHANGE");
    int64_t differ = 0;
    for (int64_t v = 0; v < nvox; v++)
      differ += memcmp(&tree[v], &direct[v], sizeof *tree) != 0;
    double d = tu_rel_l2_ff(direct, tree, nvox);
    printf("OSEM %s on %d devices, direct exchange against halving and doubling: %.2e relative L2, %lld of %lld voxels "
           "differ\n", cases[0].name, ns[t], d, (long long)differ, (long long)nvox);
    ck_assert_msg(d <= 1e-6, "%d devices: the exchanges differ by %.3g", ns[t], d);
    ck_assert_msg(differ > 0, "%d devices: SPROJ_SLAB_EXCHANGE=direct changed nothing", ns[t]);
  }
  free(tree);
  free(direct);
}
END_TEST

/* One OS-EM of S interleaved subsets of views over n devices, iters iterations, in x (set to 1 first), through plain
 * status checks (it runs in a child process, where Check's assertions cannot report): 0, or the line that failed. */
static int plain_osem(int S, int n, int iters, float *x, int64_t *lors_on)
{
  sproj_lors *lors = NULL;
  sproj_chunks *views = NULL;
  sproj_model *model = NULL;
  sproj_image *img = NULL;
  sproj_proj *y = NULL;
  sproj_recon *r = NULL;
  struct sproj_recon_config cfg;
  for (int64_t v = 0; v < tu_nvox(&sc.g); v++)
    x[v] = 1.0f;
#define TRY(call)                                                                                                    \
  if ((call) != SPROJ_OK)                                                                                            \
    return __LINE__;
  TRY(sproj_lors_register(&lors, sc.xs, sc.xe, sc.nlors));
  TRY(scene_views(&sc, lors, &views));
  TRY(sproj_model_create(&model, lors, sc.mult, sc.add, NULL, NULL));
  TRY(sproj_image_register(&img, x, sc.g.n, sc.g.vs, sc.g.origin));
  TRY(sproj_proj_register(&y, ybar, lors));
  sproj_recon_config_init(&cfg);
  cfg.model = model;
  cfg.data = y;
  cfg.chunks = views;
  cfg.num_subsets = S;
  TRY(sproj_stats_reset());
  TRY(sproj_recon_create(&r, img, &cfg));
  TRY(sproj_recon_iterate(r, iters, NULL, NULL));
  TRY(sproj_recon_destroy(r));
  TRY(sproj_image_unregister(img));
  TRY(sproj_proj_unregister(y));
  TRY(sproj_model_destroy(model));
  TRY(sproj_chunks_destroy(views));
  TRY(sproj_lors_unregister(lors));
  for (int w = 0; w < ncpu; w++) {
    struct sproj_worker_stats st;
    TRY(sproj_worker_stats(w, &st));
    lors_on[w] = st.lors;
  }
#undef TRY
  fold_units(lors_on, n);
  return 0;
}

/* What became of one policy's run (test_placement_policies). */
/* A back projection of views homed on n devices (view v on device v % n) into out (which holds 0.25 everywhere
 * first): 0, or the line of the call that failed. */
static int homed_back(int n, float *out)
{
  sproj_lors *lors = NULL;
  sproj_chunks *views = NULL;
  sproj_image *img = NULL;
  sproj_proj *p = NULL;
  float *vals = tu_alloc(sc.nlors);
  for (int64_t i = 0; i < sc.nlors; i++)
    vals[i] = 0.5f + (float)(i % 13) / 12.0f;
  for (int64_t v = 0; v < tu_nvox(&sc.g); v++)
    out[v] = 0.25f;
#define TRY(call)                                                                                                    \
  if ((call) != SPROJ_OK)                                                                                            \
    return __LINE__;
  TRY(sproj_lors_register(&lors, sc.xs, sc.xe, sc.nlors));
  TRY(scene_views(&sc, lors, &views));
  for (int v = 0; v < sc.nviews; v++)
    TRY(sproj_chunks_set_device(views, v, v % n));
  TRY(sproj_image_register(&img, out, sc.g.n, sc.g.vs, sc.g.origin));
  TRY(sproj_proj_register(&p, vals, lors));
  TRY(sproj_back(img, p, views, SPROJ_ALL_CHUNKS));
  TRY(sproj_image_unregister(img));
  TRY(sproj_proj_unregister(p));
  TRY(sproj_chunks_destroy(views));
  TRY(sproj_lors_unregister(lors));
#undef TRY
  free(vals);
  return 0;
}

enum placement { PLACED, MOVED, WRONG, FAILED, HUNG };
static const char *const placement_name[] = {"placed", "moved shares", "wrong image", "failed", "did not finish"};

/* The shares stay on their devices under every scheduling policy StarPU 1.4 offers (those starproj-bench runs:
 * every predefined one but graph_test, which schedules only on request): an OS-EM of 2 subsets over 2 devices, one
 * per CPU worker, each policy in a child process of its own (a policy that never runs a task would hang the test):
 * each worker projected exactly what its device owns and the image matches starproj's own scheduler's within
 * rounding; then a back projection of views homed on the 2 devices, whose partial images are summed on the devices'
 * workers, matches starproj's scheduler's within 1e-6. (Restricted with STARPU_TASK_WORKERIDS instead of given one worker, the tasks stalled 14 of these policies
 * or stopped them on an assertion.) */
START_TEST(test_placement_policies)
{
  if (ncpu < 2) {
    printf("placement under each policy: needs 2 CPU workers, this machine has %d\n", ncpu);
    return;
  }
  int64_t nvox = tu_nvox(&sc.g);
  const int S = 2, iters = 1, n = 2;
  float *ref = mmap(NULL, (size_t)nvox * sizeof(float), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  float *x = mmap(NULL, (size_t)nvox * sizeof(float), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  float *bref = tu_alloc(nvox);
  float *bx = mmap(NULL, (size_t)nvox * sizeof(float), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert(ref != MAP_FAILED && x != MAP_FAILED && bx != MAP_FAILED);
  int64_t lors_on[64], expect[64];
  start(n, NULL);
  ck_assert_int_eq(plain_osem(S, n, iters, ref, lors_on), 0);
  ck_assert_int_eq(homed_back(n, bref), 0);
  stop();
  osem_expect(S, n, iters, expect);
  char names[64][32];
  int np = 0, bad = 0;
  for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); p && *p && np < 64; p++)
    if (strcmp((*p)->policy_name, "graph_test"))
      snprintf(names[np++], sizeof names[0], "%s", (*p)->policy_name);
  for (int i = 0; i < np; i++) {
    fflush(stdout);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
      /* Check's handler of SIGALRM would end the whole process group */
      signal(SIGALRM, SIG_DFL);
      alarm(120);
      char v[16];
      snprintf(v, sizeof v, "%d", n);
      setenv("SPROJ_DEVICES", v, 1);
      struct sproj_config cfg;
      sproj_config_init(&cfg);
      cfg.ncpu = ncpu;
      cfg.ncuda = 0;
      cfg.sched = names[i];
      if (sproj_init(&cfg) != SPROJ_OK || plain_osem(S, n, iters, x, lors_on) || sproj_shutdown() != SPROJ_OK)
        _exit(FAILED);
      for (int w = 0; w < ncpu; w++)
        if (lors_on[w] != expect[w])
          _exit(MOVED);
      if (tu_rel_l2_ff(x, ref, nvox) > 1e-5)
        _exit(WRONG);
      /* the homed back projection's partial images summed on the devices' workers (submit.c) under this policy */
      if (sproj_init(&cfg) != SPROJ_OK || homed_back(n, bx) || sproj_shutdown() != SPROJ_OK)
        _exit(FAILED);
      _exit(tu_rel_l2_ff(bx, bref, nvox) <= 1e-6 ? PLACED : WRONG);
    }
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    enum placement got = WIFEXITED(status) && WEXITSTATUS(status) <= HUNG ? (enum placement)WEXITSTATUS(status)
                         : WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? HUNG : FAILED;
    if (got != PLACED) {
      bad++;
      printf("policy %s: %s\n", names[i], placement_name[got]);
    }
  }
  printf("placement: %d of %d policies kept every share on its device\n", np - bad, np);
  ck_assert_msg(bad == 0, "%d policies did not", bad);
  munmap(ref, (size_t)nvox * sizeof(float));
  munmap(x, (size_t)nvox * sizeof(float));
  munmap(bx, (size_t)nvox * sizeof(float));
  free(bref);
}
END_TEST

int main(void)
{
  setenv("STARPU_SILENT", "1", 0);
  if (tu_init(-1, 0) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  ncpu = sproj_num_cpu_workers();
  if (ncpu > 64)
    ncpu = 64;
  tu_seed(2024);
  scene_build(&sc);
  ybar = tu_alloc(sc.nlors);
  counts = tu_alloc(sc.nlors * sc.tof.num_bins);
  tof_ybar = tu_alloc(sc.nlors * sc.tof.num_bins);
  if (scene_expected(&sc, sc.truth, 0, ybar) != SPROJ_OK || scene_expected(&sc, sc.truth, 1, tof_ybar) != SPROJ_OK)
    return 99;
  scene_counts(tof_ybar, sc.nlors * sc.tof.num_bins, counts);
  if (sproj_shutdown() != SPROJ_OK)
    return 99;
  printf("scene: %d views x %d LORs, image %dx%dx%d, %d CPU workers\n", sc.nviews, (int)sc.per_view, sc.g.n[0],
         sc.g.n[1], sc.g.n[2], ncpu);
  Suite *s = suite_create("devices");
  TCase *tc = tcase_create("devices");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_device_count);
  tcase_add_loop_test(tc, test_homes_project, 0, 2);
  tcase_add_loop_test(tc, test_osem_devices, 0, (int)(sizeof cases / sizeof *cases));
  tcase_add_test(tc, test_osem_repeatable);
  tcase_add_test(tc, test_sensitivity_images_devices);
  tcase_add_test(tc, test_osem_exchanges);
  tcase_add_loop_test(tc, test_osem_hooked, 0, 2);
  tcase_add_test(tc, test_placement_policies);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  free(ybar);
  free(tof_ybar);
  free(counts);
  scene_free(&sc);
  return ret;
}
