/* SPDX-License-Identifier: Apache-2.0 */
/* check_cuda.c: CUDA codelets agree with the CPU ones, and uploaded data stays resident (no image transfers on
 * repeated computes). Exits 77 (Automake: SKIP) when StarPU drives no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "testutil.h"

static struct tu_geom g = {{64, 60, 48}, {2.0f, 2.0f, 2.5f}, {-63.0f, -59.0f, -58.75f}};
#define N 200000
#define SPROJ_MAX_GPUS_TESTED 64

static float *img, *xs, *xe;

static void setup(void)
{
  tu_seed(8080);
  img = tu_alloc(tu_nvox(&g));
  xs = tu_alloc(3 * N);
  xe = tu_alloc(3 * N);
  tu_fill_uniform(img, tu_nvox(&g), 0.0f, 1.0f);
  tu_random_lors(&g, xs, xe, N, NULL);
}

/* Tasks the GPU workers have run since the last sproj_stats_reset; with layouts, only those that worked on an image
 * layout (the principal-axis copies, or the shifted image of listmode back projections). */
static int64_t gpu_tasks_of(int layouts)
{
  int64_t t = 0;
  for (int w = 0; w < sproj_num_workers(); w++) {
    struct sproj_worker_stats st;
    if (sproj_worker_stats(w, &st) == 0 && st.is_gpu)
      t += layouts ? st.layout_tasks : st.tasks;
  }
  return t;
}

static int64_t gpu_tasks(void)
{
  return gpu_tasks_of(0);
}

/* Asserts that every forward value of the GPU is within 1e-5 relative (plus 1e-6 of the largest value) of the CPU's;
 * returns how many are bit-identical, with the largest value and the largest difference. */
static int64_t compare_forward(const float *cpu, const float *gpu, int64_t n, double *maxv, double *maxdiff)
{
  int64_t identical = 0;
  *maxv = tu_max_abs(cpu, n);
  *maxdiff = 0.0;
  for (int64_t i = 0; i < n; i++) {
    *maxdiff = fmax(*maxdiff, fabs((double)cpu[i] - gpu[i]));
    identical += cpu[i] == gpu[i];
    ck_assert_msg(fabs((double)cpu[i] - gpu[i]) <= 1e-5 * fabs(cpu[i]) + 1e-6 * *maxv, "value %lld: CPU %.9g GPU %.9g",
                  (long long)i, cpu[i], gpu[i]);
  }
  return identical;
}

/* CPU and GPU run the same float operations (no FMA contraction on either side): forward projections agree to
 * 1e-5 relative (the bound); back projections differ only in the order atomics add up. */
START_TEST(test_cpu_vs_cuda)
{
  const int64_t nvox = tu_nvox(&g);
  float *cpu = tu_alloc(N), *gpu = tu_alloc(N), *bcpu = tu_alloc(nvox), *bgpu = tu_alloc(nvox);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CPU), SPROJ_OK);
  int64_t before = gpu_tasks();
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, N, cpu), SPROJ_OK);
  memset(bcpu, 0, nvox * sizeof *bcpu);
  ck_assert_int_eq(tu_back_whole(&g, bcpu, xs, xe, N, cpu), SPROJ_OK);
  ck_assert_int_eq(gpu_tasks(), before);

  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, N, gpu), SPROJ_OK);
  memset(bgpu, 0, nvox * sizeof *bgpu);
  ck_assert_int_eq(tu_back_whole(&g, bgpu, xs, xe, N, cpu), SPROJ_OK);
  ck_assert_msg(gpu_tasks() > before, "no task ran on a GPU");
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);

  double maxv, maxdiff;
  int64_t identical = compare_forward(cpu, gpu, N, &maxv, &maxdiff);
  double brel = tu_rel_l2_ff(bgpu, bcpu, nvox), bmax = tu_max_abs(bcpu, nvox), bmaxdiff = 0.0;
  for (int64_t v = 0; v < nvox; v++)
    bmaxdiff = fmax(bmaxdiff, fabs((double)bgpu[v] - bcpu[v]));
  printf("CPU vs CUDA: forward %lld of %d identical, max difference %.3g (max value %.3g); back relative L2 %.3g, "
         "max difference %.3g (max value %.3g)\n",
         (long long)identical, N, maxdiff, maxv, brel, bmaxdiff, bmax);
  ck_assert_msg(brel <= 1e-5, "back projection CPU vs CUDA relative L2 %.3g", brel);
  ck_assert_msg(bmaxdiff <= 1e-5 * bmax, "back projection CPU vs CUDA max difference %.3g", bmaxdiff);
  free(cpu);
  free(gpu);
  free(bcpu);
  free(bgpu);
}
END_TEST

/* Small tasks share each ray among 2..32 threads (codelets/cuda_pieces.h), which pass their samples round so that
 * the sum takes the same additions in the same order: forward values are the same bits whatever the task size. The
 * same LORs in chunks of 500 (32 threads per LOR), 5000 (32), 20000 (8) and whole. Back projection: the same adds
 * in another order, within the atomics' rounding of the one-thread result. */
START_TEST(test_lanes_same_bits)
{
  const int64_t nvox = tu_nvox(&g);
  const int sizes[4] = {500, 5000, 20000, 0};
  float *fwd[4], *back[4];
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
  for (int s = 0; s < 4; s++) {
    struct tu_set set;
    fwd[s] = tu_alloc(N);
    back[s] = tu_alloc(nvox);
    memset(back[s], 0, nvox * sizeof(float));
    ck_assert_int_eq(tu_set_register(&set, &g, img, xs, xe, N, fwd[s]), SPROJ_OK);
    sproj_chunks *ch = NULL;
    if (sizes[s])
      ck_assert_int_eq(sproj_chunks_create_blocks(&ch, set.lors, (N + sizes[s] - 1) / sizes[s]), SPROJ_OK);
    int nch = 1;
    if (ch)
      ck_assert_int_eq(sproj_chunks_count(ch, &nch), SPROJ_OK);
    for (int c = 0; c < nch; c++)
      ck_assert_int_eq(sproj_fwd(set.img, set.proj, ch, c), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_sync(set.proj, ch, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
    sproj_image *bim;
    ck_assert_int_eq(sproj_image_register(&bim, back[s], g.n, g.vs, g.origin), SPROJ_OK);
    for (int c = 0; c < nch; c++)
      ck_assert_int_eq(sproj_back(bim, set.proj, ch, c), SPROJ_OK);
    ck_assert_int_eq(sproj_image_unregister(bim), SPROJ_OK);
    if (ch)
      ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
    ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  for (int s = 0; s < 3; s++) {
    int64_t differ = 0;
    for (int64_t i = 0; i < N; i++)
      differ += memcmp(&fwd[s][i], &fwd[3][i], sizeof(float)) != 0;
    double brel = tu_rel_l2_ff(back[s], back[3], nvox);
    printf("lanes: chunks of %d LORs, forward %lld of %d values differ from one request; back relative L2 %.3g\n",
           sizes[s], (long long)differ, N, brel);
    ck_assert_msg(differ == 0, "chunks of %d: %lld forward values differ", sizes[s], (long long)differ);
    ck_assert_msg(brel <= 1e-6, "chunks of %d: back projection relative L2 %.3g", sizes[s], brel);
  }
  ck_assert_msg(tu_max_abs(fwd[3], N) > 0.0, "nothing projected");
  for (int s = 0; s < 4; s++) {
    free(fwd[s]);
    free(back[s]);
  }
}
END_TEST

START_TEST(test_cuda_adjoint_and_reference)
{
  const int64_t nvox = tu_nvox(&g), n = 50000;
  float *y = tu_alloc(n), *ax = tu_alloc(n), *aty = tu_alloc(nvox);
  double *ref = malloc(n * sizeof *ref);
  tu_fill_uniform(y, n, 0.0f, 1.0f);
  memset(aty, 0, nvox * sizeof *aty);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, n, ax), SPROJ_OK);
  ck_assert_int_eq(tu_back_whole(&g, aty, xs, xe, n, y), SPROJ_OK);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  double lhs = tu_dot_ff(ax, y, n), rhs = tu_dot_ff(img, aty, nvox), rel = fabs(lhs - rhs) / fabs(lhs);
  printf("CUDA adjointness: relative difference %.2e\n", rel);
  ck_assert_msg(rel <= 1e-5, "CUDA adjointness %.3g", rel);
  tu_ref_fwd(img, &g, xs, xe, n, ref);
  double maxref = 0.0;
  for (int64_t i = 0; i < n; i++)
    maxref = fmax(maxref, fabs(ref[i]));
  for (int64_t i = 0; i < n; i++)
    if (!tu_ref_ambiguous(&g, xs + 3 * i, xe + 3 * i))
      ck_assert_msg(fabs(ax[i] - ref[i]) <= 1e-5 * fabs(ref[i]) + 1e-6 * maxref, "LOR %lld: CUDA %.9g reference %.9g",
                    (long long)i, ax[i], ref[i]);
  free(y);
  free(ax);
  free(aty);
  free(ref);
}
END_TEST

/* The four TOF projectors on CPU workers and on the GPU: forward values agree to 1e-5 relative (the same float
 * operations on both sides), back projections to 1e-5 relative L2 (atomic order). The sinogram forward kernel
 * accumulates a block's bins in shared memory: 29 bins fit the default 48 KiB, 61 need the kernel's opt-in, 300
 * fit no GPU and accumulate in global memory; each path is compared. */
static void tof_run(int devices, int lm, int back, const struct sproj_tof_params *par, const int16_t *bins,
                    float *values, float *image, int64_t n)
{
  sproj_image *im;
  sproj_lors *lors;
  sproj_proj *proj;
  sproj_tof *tof;
  ck_assert_int_eq(sproj_set_devices(devices), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&im, image, g.n, g.vs, g.origin), SPROJ_OK);
  if (lm) {
    ck_assert_int_eq(sproj_lors_register_events(&lors, xs, xe, bins, n), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_register(&proj, values, lors), SPROJ_OK);
  } else {
    ck_assert_int_eq(sproj_lors_register(&lors, xs, xe, n), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_register_tof(&proj, values, lors, par->num_bins), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_tof_register(&tof, par, NULL, NULL, NULL), SPROJ_OK);
  if (lm)
    ck_assert_int_eq(back ? sproj_back_tof_lm(im, proj, NULL, SPROJ_ALL_CHUNKS, tof)
                          : sproj_fwd_tof_lm(im, proj, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  else
    ck_assert_int_eq(back ? sproj_back_tof_sino(im, proj, NULL, SPROJ_ALL_CHUNKS, tof)
                          : sproj_fwd_tof_sino(im, proj, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
}

/* Whether SPROJ_TOF_GPU names the variant `name` (one of its comma-separated entries). */
static int gpu_variant(const char *name)
{
  const char *v = getenv("SPROJ_TOF_GPU");
  size_t len = strlen(name);
  for (const char *p = v; p && *p;) {
    size_t n = strcspn(p, ",");
    if (n == len && !strncmp(p, name, len))
      return 1;
    p += n + (p[n] == ',');
  }
  return 0;
}

START_TEST(test_tof_cpu_vs_cuda)
{
  const int64_t n = 50000, nvox = tu_nvox(&g);
  static const int num_bins[] = {29, 61, 300, 61};
  const int lm = _i == 3;
  struct sproj_tof_params par = {5.0f, num_bins[_i], 3.0f, 4.0f, 1.5f};
  const int64_t nval = lm ? n : n * par.num_bins;
  float *cpu = tu_alloc(nval), *gpu = tu_alloc(nval), *bcpu = tu_alloc(nvox), *bgpu = tu_alloc(nvox);
  int16_t *bins = malloc(n * sizeof *bins);
  for (int64_t i = 0; i < n; i++)
    bins[i] = (int16_t)tu_randint(0, par.num_bins - 1);
  tof_run(SPROJ_DEVICE_CPU, lm, 0, &par, bins, cpu, img, n);
  ck_assert_int_eq(sproj_stats_reset(), SPROJ_OK);
  tof_run(SPROJ_DEVICE_CUDA, lm, 0, &par, bins, gpu, img, n);
  int64_t fwd_scratch = gpu_tasks_of(1);
  memset(bcpu, 0, nvox * sizeof *bcpu);
  memset(bgpu, 0, nvox * sizeof *bgpu);
  tof_run(SPROJ_DEVICE_CPU, lm, 1, &par, bins, cpu, bcpu, n);
  ck_assert_int_eq(sproj_stats_reset(), SPROJ_OK);
  tof_run(SPROJ_DEVICE_CUDA, lm, 1, &par, bins, cpu, bgpu, n);
  if (lm) {
    /* the listmode back projection with its scratch (50000 events, at least an eighth of the voxels: the shifted
     * image, or the tiles with the variant tiles) and without it: the same sums up to the atomics' order, and the
     * tasks used it only when on */
    int64_t on = gpu_tasks_of(1);
    float *boff = tu_alloc(nvox);
    memset(boff, 0, nvox * sizeof *boff);
    ck_assert_int_eq(sproj_set_image_layouts(0), SPROJ_OK);
    ck_assert_int_eq(sproj_stats_reset(), SPROJ_OK);
    tof_run(SPROJ_DEVICE_CUDA, lm, 1, &par, bins, cpu, boff, n);
    int64_t off = gpu_tasks_of(1);
    ck_assert_int_eq(sproj_set_image_layouts(1), SPROJ_OK);
    double srel = tu_rel_l2_ff(bgpu, boff, nvox);
    printf("TOF listmode back projection, scratch (shifted image or tiles) on / off: %lld / %lld tasks used it, "
           "relative L2 %.3g\n",
           (long long)on, (long long)off, srel);
    ck_assert_msg(on >= 1 && off == 0, "%lld / %lld tasks used the scratch", (long long)on, (long long)off);
    ck_assert_msg(srel <= 1e-6, "scratch on vs off: relative L2 %.3g", srel);
    free(boff);
  }
  /* the forward projection from the pair layouts (the variants pairs and sinopairs) and from the image: the same bits,
   * and the tasks sampled the layouts only when asked to (listmode by tiles, which groups the sums otherwise, is
   * tested above) */
  if (!(lm && gpu_variant("tiles"))) {
    int pairs = gpu_variant(lm ? "pairs" : "sinopairs");
    float *foff = tu_alloc(nval);
    ck_assert_int_eq(sproj_set_image_layouts(0), SPROJ_OK);
    tof_run(SPROJ_DEVICE_CUDA, lm, 0, &par, bins, foff, img, n);
    ck_assert_int_eq(sproj_set_image_layouts(1), SPROJ_OK);
    int64_t same = 0;
    for (int64_t i = 0; i < nval; i++)
      same += memcmp(&gpu[i], &foff[i], sizeof gpu[i]) == 0;
    printf("TOF %s forward projection from the pair layouts: %lld tasks used them (asked: %s); %lld of %lld values the "
           "bits of the image's samples\n", lm ? "listmode" : "sinogram", (long long)fwd_scratch, pairs ? "yes" : "no",
           (long long)same, (long long)nval);
    ck_assert_msg(pairs ? fwd_scratch >= 1 : fwd_scratch == 0, "%lld forward tasks used a scratch",
                  (long long)fwd_scratch);
    ck_assert_msg(same == nval, "%lld of %lld forward values differ from the image's", (long long)(nval - same),
                  (long long)nval);
    free(foff);
  }
  double maxv, maxdiff;
  int64_t identical = compare_forward(cpu, gpu, nval, &maxv, &maxdiff);
  double brel = tu_rel_l2_ff(bgpu, bcpu, nvox);
  printf("TOF %s (%d bins) CPU vs CUDA (variants: GPU %s, CPU %s): forward %lld of %lld identical, max difference "
         "%.3g (max %.3g); back relative L2 %.3g\n", lm ? "listmode" : "sinogram", par.num_bins,
         getenv("SPROJ_TOF_GPU") ? getenv("SPROJ_TOF_GPU") : "default", getenv("SPROJ_TOF_CPU") ? getenv("SPROJ_TOF_CPU")
         : "default", (long long)identical, (long long)nval, maxdiff, maxv, brel);
  ck_assert_msg(maxv > 0.0, "nothing projected");
  ck_assert_msg(brel <= 1e-5, "back projection CPU vs CUDA relative L2 %.3g", brel);
  free(cpu);
  free(gpu);
  free(bcpu);
  free(bgpu);
  free(bins);
}
END_TEST

/* Forward (into fwd) and back projection (of the values in val, into back) of n LORs on the GPUs with the
 * principal-axis copies on or off; returns how many tasks used them. */
static int64_t layout_run(int on, const float *lxs, const float *lxe, int64_t n, float *fwd, float *val, float *back)
{
  sproj_image *im, *bim;
  sproj_lors *lors;
  sproj_proj *pf, *pb;
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
  ck_assert_int_eq(sproj_set_image_layouts(on), SPROJ_OK);
  ck_assert_int_eq(sproj_stats_reset(), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&bim, back, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, lxs, lxe, n), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&pf, fwd, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&pb, val, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd(im, pf, NULL, SPROJ_ALL_CHUNKS), SPROJ_OK);
  ck_assert_int_eq(sproj_back(bim, pb, NULL, SPROJ_ALL_CHUNKS), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(pf), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(pb), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(bim), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  int64_t used = gpu_tasks_of(1);
  ck_assert_int_eq(sproj_set_image_layouts(1), SPROJ_OK);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  return used;
}

/* Projects n LORs (with values uniform in [0, 1) to back-project) with the principal-axis copies off and on, and
 * asserts: every GPU ran tasks on the copies when on, none when off; the forward values keep their bits; the back
 * projections agree within two atomic orders' rounding (relative L2 <= 1e-6). what names the LOR set. */
static void layout_compare(const char *what, const float *lxs, const float *lxe, int64_t n)
{
  const int64_t nvox = tu_nvox(&g);
  float *val = tu_alloc(n), *f[2], *b[2];
  tu_fill_uniform(val, n, 0.0f, 1.0f);
  int64_t used[2];
  for (int on = 0; on < 2; on++) {
    f[on] = tu_alloc(n);
    b[on] = tu_alloc(nvox);
    memset(b[on], 0, nvox * sizeof(float));
    used[on] = layout_run(on, lxs, lxe, n, f[on], val, b[on]);
  }
  int64_t differ = 0;
  for (int64_t i = 0; i < n; i++)
    differ += memcmp(&f[0][i], &f[1][i], sizeof(float)) != 0;
  double brel = tu_rel_l2_ff(b[1], b[0], nvox);
  printf("layouts, %s: %lld tasks on the copies (0 with them off: %lld); forward %lld of %lld values differ; back "
         "relative L2 %.3g\n", what, (long long)used[1], (long long)used[0], (long long)differ, (long long)n, brel);
  ck_assert_msg(used[1] >= sproj_num_gpus(), "only %lld tasks used the copies", (long long)used[1]);
  ck_assert_int_eq(used[0], 0);
  ck_assert_msg(tu_max_abs(f[1], n) > 0.0, "nothing projected");
  ck_assert_msg(tu_max_abs(b[0], nvox) > 0.0, "nothing back projected");
  ck_assert_msg(differ == 0, "%lld forward values differ with the copies", (long long)differ);
  ck_assert_msg(brel <= 1e-6, "back projection with the copies: relative L2 %.3g", brel);
  for (int on = 0; on < 2; on++) {
    free(f[on]);
    free(b[on]);
  }
  free(val);
}

/* Large GPU tasks project from principal-axis copies of the image (codelets/joseph/joseph3d_ray.h): the same samples,
 * weights and additions, so the forward values keep their bits with the copies on and off; back projections add the
 * same terms in another order (atomics, then the copies into the image). 160000 random LORs (every direction, so
 * rays along each axis) per GPU, so that every GPU's task is large enough for the copies. */
START_TEST(test_layouts_same_bits)
{
  const int64_t n = 160000 * (int64_t)sproj_num_gpus();
  float *lxs = tu_alloc(3 * n), *lxe = tu_alloc(3 * n);
  tu_random_lors(&g, lxs, lxe, n, NULL);
  layout_compare("random LORs", lxs, lxe, n);
  free(lxs);
  free(lxe);
}
END_TEST

/* The same in a sinogram's LOR order (radial bins fastest), where the back projection's warps combine the adds of
 * neighbouring rays in shared memory before the atomics (codelets/joseph/joseph3d_ray.h, sproj_ray_scatter_warp): a
 * view at 0 degrees and one at 45 per GPU (rays along x and along y, some warps mixing both), every ring pair, on
 * the test image (radial steps of ~2 mm against 2 mm voxels). */
START_TEST(test_layouts_sinogram)
{
  struct sproj_scanner_params sp;
  sproj_scanner *sc;
  struct sproj_sinogram_info info;
  ck_assert_int_eq(sproj_scanner_preset("vision600", &sp), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_create(&sc, &sp), SPROJ_OK);
  ck_assert_int_eq(sproj_scanner_info(sc, &info), SPROJ_OK);
  const int nviews = 2 * sproj_num_gpus();
  int views[2 * SPROJ_MAX_GPUS_TESTED];
  ck_assert_int_le(sproj_num_gpus(), SPROJ_MAX_GPUS_TESTED);
  for (int v = 0; v < nviews; v++)
    views[v] = (v % 2 ? info.num_views / 4 : 0) + v / 2;
  const int64_t n = (int64_t)nviews * info.lors_per_view;
  float *lxs = tu_alloc(3 * n), *lxe = tu_alloc(3 * n);
  ck_assert_int_eq(sproj_scanner_view_lors(sc, views, nviews, lxs, lxe, 0), SPROJ_OK);
  layout_compare("sinogram order", lxs, lxe, n);
  free(lxs);
  free(lxe);
  ck_assert_int_eq(sproj_scanner_destroy(sc), SPROJ_OK);
}
END_TEST

static unsigned gpu0_node(void)
{
  for (unsigned w = 0; w < starpu_worker_get_count(); w++)
    if (starpu_worker_get_type(w) == STARPU_CUDA_WORKER && starpu_worker_get_devid(w) == 0)
      return starpu_worker_get_memory_node(w);
  return 0;
}

/* bytes moved from main memory to GPU 0 since the last call (reading the counters resets them) */
static long long bytes_to_gpu0(void)
{
  int bus = starpu_bus_get_id(STARPU_MAIN_RAM, gpu0_node());
  struct starpu_profiling_bus_info info;
  if (bus < 0 || starpu_bus_get_profiling_info(bus, &info) != 0)
    return -1;
  return info.transferred_bytes;
}

/* bytes moved from main memory to any other memory node since the last call (reading resets the counters) */
static long long bytes_from_host(void)
{
  long long sum = 0;
  for (unsigned node = 0; node < starpu_memory_nodes_get_count(); node++) {
    struct starpu_profiling_bus_info info;
    int bus = starpu_bus_get_id(STARPU_MAIN_RAM, node);
    if (bus >= 0 && starpu_bus_get_profiling_info(bus, &info) == 0)
      sum += info.transferred_bytes;
  }
  return sum;
}

/* After upload, repeated forward projections move no image bytes. A second image that was not uploaded moves
 * at least its size on first use: the counter really counts. */
START_TEST(test_residency)
{
  const int64_t nvox = tu_nvox(&g);
  const long long img_bytes = nvox * (long long)sizeof(float);
  float *img2 = tu_alloc(nvox), *out = tu_alloc(N);
  memcpy(img2, img, nvox * sizeof *img2);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
  struct tu_set set;
  sproj_image *im2;
  sproj_chunks *ch;
  ck_assert_int_eq(tu_set_register(&set, &g, img, xs, xe, N, out), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&im2, img2, g.n, g.vs, g.origin), SPROJ_OK);
  sproj_image *im = set.img;
  sproj_lors *lors = set.lors;
  sproj_proj *proj = set.proj;
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, lors, 16), SPROJ_OK);

  ck_assert_int_eq(sproj_image_upload(im, 0), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_upload(lors, ch, SPROJ_ALL_CHUNKS, 0), SPROJ_OK);
  ck_assert_int_eq(starpu_data_is_on_node(sproj_image_handle(im), gpu0_node()), 1);
  /* StarPU counts the uploaded image (and the LORs) among what it holds on the GPU */
  int64_t used = 0, total = 0;
  ck_assert_int_eq(sproj_gpu_memory(0, &used, &total), SPROJ_OK);
  ck_assert_msg(used >= img_bytes && (total == -1 || used <= total), "GPU 0: %lld bytes used of %lld, image %lld",
                (long long)used, (long long)total, img_bytes);
  bytes_to_gpu0();
  for (int rep = 0; rep < 5; rep++)
    for (int c = 0; c < 16; c++)
      ck_assert_int_eq(sproj_fwd(im, proj, ch, c), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  long long resident = bytes_to_gpu0();
  for (int c = 0; c < 16; c++)
    ck_assert_int_eq(sproj_fwd(im2, proj, ch, c), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  long long fresh = bytes_to_gpu0();
  printf("residency: 80 computes after upload moved %lld bytes to GPU 0; 16 computes on a new image moved %lld "
         "(image %lld bytes)\n",
         resident, fresh, img_bytes);
  ck_assert_msg(resident == 0, "%lld bytes moved to the GPU after upload", resident);
  ck_assert_msg(fresh >= img_bytes, "the counter saw only %lld bytes for a %lld-byte image", fresh, img_bytes);

  ck_assert_int_eq(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ), SPROJ_OK);
  ck_assert_int_eq(sproj_image_release(im, 0), SPROJ_OK);
  ck_assert_int_eq(starpu_data_is_on_node(sproj_image_handle(im), gpu0_node()), 0);
  if (sproj_num_gpus() > 1) {
    ck_assert_int_eq(sproj_image_upload(im, SPROJ_ALL_GPUS), SPROJ_OK);
    for (unsigned w = 0; w < starpu_worker_get_count(); w++)
      if (starpu_worker_get_type(w) == STARPU_CUDA_WORKER)
        ck_assert_int_eq(starpu_data_is_on_node(sproj_image_handle(im), starpu_worker_get_memory_node(w)), 1);
  }
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im2), SPROJ_OK);
  free(img2);
  free(out);
}
END_TEST

/* LORs per GPU of every GPU worker since the last sproj_stats_reset, into lors[gpu]. */
static void lors_per_gpu(int64_t *lors)
{
  for (int k = 0; k < sproj_num_gpus(); k++)
    lors[k] = 0;
  for (int w = 0; w < sproj_num_workers(); w++) {
    struct sproj_worker_stats st;
    if (sproj_worker_stats(w, &st) == 0 && st.is_gpu)
      lors[st.gpu] += st.lors;
  }
}

/* Arrays that live on a GPU (StarPU handles whose home is its memory, as the Python binding registers CuPy arrays):
 * the LOR checks, a forward projection and the values read back on the host agree with host-registered arrays to
 * 1e-5. */
static starpu_data_handle_t on_gpu(unsigned node, const float *host, uint32_t n, size_t elem, uintptr_t *ptr)
{
  starpu_data_handle_t src, dst;
  uintptr_t p = *ptr = starpu_malloc_on_node(node, n * elem);
  ck_assert(p != 0);
  starpu_vector_data_register(&dst, (int)node, p, n, elem);
  starpu_vector_data_register(&src, STARPU_MAIN_RAM, (uintptr_t)host, n, elem);
  ck_assert_int_eq(starpu_data_cpy(dst, src, 0, NULL, NULL), 0);
  starpu_data_unregister(src);
  /* StarPU's copy task may have run on a CPU worker: written back home, then registered afresh, the array is valid
   * on the GPU only, as a GPU array a caller registers */
  starpu_data_unregister(dst);
  starpu_vector_data_register(&dst, (int)node, p, n, elem);
  return dst;
}

START_TEST(test_gpu_homed_arrays)
{
  int wid[STARPU_NMAXWORKERS];
  ck_assert_int_ge(starpu_worker_get_ids_by_type(STARPU_CUDA_WORKER, wid, STARPU_NMAXWORKERS), 1);
  unsigned node = starpu_worker_get_memory_node(wid[0]);
  const int64_t n = 20000;
  float *vals = tu_alloc(n), *ref = tu_alloc(n);
  ck_assert_int_eq(tu_fwd_whole(&g, img, xs, xe, n, ref), SPROJ_OK);
  uintptr_t ptr[4];
  starpu_data_handle_t hx = on_gpu(node, img, (uint32_t)tu_nvox(&g), sizeof(float), &ptr[0]);
  starpu_data_handle_t hs = on_gpu(node, xs, (uint32_t)n, 3 * sizeof(float), &ptr[1]);
  starpu_data_handle_t he = on_gpu(node, xe, (uint32_t)n, 3 * sizeof(float), &ptr[2]);
  uintptr_t pv = starpu_malloc_on_node(node, n * sizeof(float));
  starpu_data_handle_t hv;
  starpu_vector_data_register(&hv, (int)node, pv, (uint32_t)n, sizeof(float));
  sproj_image *im;
  sproj_lors *lors;
  sproj_proj *proj;
  ck_assert_int_eq(sproj_image_register_handle(&im, hx, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_handles(&lors, hs, he), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_handle(&proj, hv, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd(im, proj, NULL, SPROJ_ALL_CHUNKS), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  starpu_data_handle_t back;
  starpu_vector_data_register(&back, STARPU_MAIN_RAM, (uintptr_t)vals, (uint32_t)n, sizeof(float));
  ck_assert_int_eq(starpu_data_cpy(back, hv, 0, NULL, NULL), 0);
  starpu_data_unregister(back);
  double maxv, maxdiff;
  compare_forward(ref, vals, n, &maxv, &maxdiff);
  printf("arrays homed on the GPU: forward of %lld LORs against host arrays, max difference %.3g (max %.3g)\n",
         (long long)n, maxdiff, maxv);
  starpu_data_handle_t hh[4] = {hx, hs, he, hv};
  ptr[3] = pv;
  for (int k = 0; k < 4; k++) {
    size_t bytes = starpu_vector_get_nx(hh[k]) * starpu_vector_get_elemsize(hh[k]);
    starpu_data_unregister(hh[k]);
    starpu_free_on_node(node, ptr[k], bytes);
  }
  free(vals);
  free(ref);
}
END_TEST

/* bytes moved between main memory and the GPUs, both ways, since the last call (reading resets the counters) */
static long long bytes_host_gpus(void)
{
  long long sum = 0;
  for (unsigned node = 0; node < starpu_memory_nodes_get_count(); node++) {
    if (node == STARPU_MAIN_RAM)
      continue;
    int bus[2] = {starpu_bus_get_id(STARPU_MAIN_RAM, node), starpu_bus_get_id(node, STARPU_MAIN_RAM)};
    for (int k = 0; k < 2; k++) {
      struct starpu_profiling_bus_info info;
      if (bus[k] >= 0 && starpu_bus_get_profiling_info(bus[k], &info) == 0)
        sum += info.transferred_bytes;
    }
  }
  return sum;
}

/* The TOF sinogram back projection of a task large enough for the principal-axis copies (all N LORs on one GPU):
 * with the copies variant of SPROJ_TOF_GPU its tasks use them (image layouts on) and give the sums of the direct adds
 * (layouts off) to 1e-6 relative L2; every variant agrees with the CPU workers to 1e-5. */
START_TEST(test_tof_sino_copies)
{
  const int64_t nvox = tu_nvox(&g);
  struct sproj_tof_params par = {5.0f, 29, 3.0f, 4.0f, 1.5f};
  const int64_t nval = (int64_t)N * par.num_bins;
  float *values = tu_alloc(nval), *bcpu = tu_alloc(nvox), *b[2];
  tu_fill_uniform(values, nval, 0.0f, 1.0f);
  memset(bcpu, 0, nvox * sizeof *bcpu);
  tof_run(SPROJ_DEVICE_CPU, 0, 1, &par, NULL, values, bcpu, N);
  int64_t used[2];
  for (int on = 0; on < 2; on++) {
    b[on] = tu_alloc(nvox);
    memset(b[on], 0, nvox * sizeof(float));
    ck_assert_int_eq(sproj_set_image_layouts(on), SPROJ_OK);
    ck_assert_int_eq(sproj_stats_reset(), SPROJ_OK);
    tof_run(SPROJ_DEVICE_CUDA, 0, 1, &par, NULL, values, b[on], N);
    used[on] = gpu_tasks_of(1);
  }
  ck_assert_int_eq(sproj_set_image_layouts(1), SPROJ_OK);
  const char *v = getenv("SPROJ_TOF_GPU");
  int copies = v && strstr(v, "copies") && sproj_num_gpus() == 1;
  double rel = tu_rel_l2_ff(b[1], b[0], nvox), crel = tu_rel_l2_ff(b[1], bcpu, nvox);
  printf("TOF sinogram back projection (variants: GPU %s), copies on / off: %lld / %lld tasks used them, relative L2 "
         "%.3g; GPU vs CPU %.3g\n", v ? v : "default", (long long)used[1], (long long)used[0], rel, crel);
  ck_assert_msg(tu_max_abs(bcpu, nvox) > 0.0, "nothing back projected");
  ck_assert_int_eq(used[0], 0);
  if (copies)
    ck_assert_msg(used[1] >= 1, "no task used the copies");
  ck_assert_msg(rel <= 1e-6, "copies on vs off: relative L2 %.3g", rel);
  ck_assert_msg(crel <= 1e-5, "GPU vs CPU: relative L2 %.3g", crel);
  free(values);
  free(bcpu);
  free(b[0]);
  free(b[1]);
}
END_TEST

/* A one-shot TOF listmode projection on arrays homed on a GPU (events, bins, per-LOR sigma, values, image), as
 * starproj.parallelproj_core makes one for CuPy arrays: registering (the inputs checked by a task on the GPU),
 * projecting forward and back and unregistering moves no per-LOR array between host and GPU (only the checks'
 * results, a few bytes each), and the values and the image are right where they live. */
START_TEST(test_gpu_homed_oneshot_stays)
{
  int wid[STARPU_NMAXWORKERS];
  ck_assert_int_ge(starpu_worker_get_ids_by_type(STARPU_CUDA_WORKER, wid, STARPU_NMAXWORKERS), 1);
  unsigned node = starpu_worker_get_memory_node(wid[0]);
  const int64_t n = 20000, nvox = tu_nvox(&g);
  struct sproj_tof_params par = {5.0f, 29, 3.0f, 4.0f, 1.5f};
  int16_t *bins = malloc(n * sizeof *bins);
  float *sigma = tu_alloc(n), *ref = tu_alloc(n), *vals = tu_alloc(n), *ones = tu_alloc(n);
  float *bref = tu_alloc(nvox), *bgot = tu_alloc(nvox), *zero = tu_alloc(nvox);
  for (int64_t i = 0; i < n; i++) {
    bins[i] = (int16_t)tu_randint(0, par.num_bins - 1);
    ones[i] = 1.0f;
  }
  tu_fill_uniform(sigma, n, 3.0f, 5.0f);
  memset(bref, 0, nvox * sizeof *bref);
  memset(zero, 0, nvox * sizeof *zero);
  /* the reference: host arrays */
  sproj_image *im, *bim;
  sproj_lors *lors;
  sproj_proj *proj, *pones;
  sproj_tof *tof;
  ck_assert_int_eq(sproj_image_register(&im, img, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&bim, bref, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_events(&lors, xs, xe, bins, n), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&proj, ref, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register(&pones, ones, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register(&tof, &par, lors, sigma, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_lm(im, proj, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_back_tof_lm(bim, pones, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(pones), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(bim), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  /* the same on the GPU's own memory */
  uintptr_t ptr[8];
  const void *host[8] = {img, zero, xs, xe, bins, sigma, zero, ones};
  const uint32_t count[8] = {(uint32_t)nvox, (uint32_t)nvox, (uint32_t)n, (uint32_t)n, (uint32_t)n, (uint32_t)n,
                             (uint32_t)n, (uint32_t)n};
  const size_t elem[8] = {sizeof(float), sizeof(float), 3 * sizeof(float), 3 * sizeof(float), sizeof(int16_t),
                          sizeof(float), sizeof(float), sizeof(float)};
  starpu_data_handle_t h[8];
  for (int k = 0; k < 8; k++)
    h[k] = on_gpu(node, host[k], count[k], elem[k], &ptr[k]);
  ck_assert_int_eq(starpu_task_wait_for_all(), 0);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  (void)bytes_host_gpus(); /* resets the counters */
  ck_assert_int_eq(sproj_image_register_handle(&im, h[0], g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register_handle(&bim, h[1], g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register_events_handles(&lors, h[2], h[3], h[4]), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_handle(&proj, h[6], lors), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_register_handle(&pones, h[7], lors), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_register_handles(&tof, &par, lors, h[5], NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
  ck_assert_int_eq(sproj_fwd_tof_lm(im, proj, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_back_tof_lm(bim, pones, NULL, SPROJ_ALL_CHUNKS, tof), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(tof), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(pones), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(proj), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(bim), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(im), SPROJ_OK);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  long long moved = bytes_host_gpus();
  starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
  printf("arrays homed on the GPU, TOF listmode one-shot: %lld bytes between host and GPUs (one per-LOR array: %lld)\n",
         moved, (long long)n * (long long)sizeof(float));
  ck_assert_msg(moved < 4096, "%lld bytes crossed between host and GPUs", moved);
  /* the results, where they are, against the host's */
  starpu_data_handle_t back;
  starpu_vector_data_register(&back, STARPU_MAIN_RAM, (uintptr_t)vals, (uint32_t)n, sizeof(float));
  ck_assert_int_eq(starpu_data_cpy(back, h[6], 0, NULL, NULL), 0);
  starpu_data_unregister(back);
  starpu_vector_data_register(&back, STARPU_MAIN_RAM, (uintptr_t)bgot, (uint32_t)nvox, sizeof(float));
  ck_assert_int_eq(starpu_data_cpy(back, h[1], 0, NULL, NULL), 0);
  starpu_data_unregister(back);
  double maxv, maxdiff;
  compare_forward(ref, vals, n, &maxv, &maxdiff);
  double l2 = tu_rel_l2_ff(bgot, bref, nvox);
  printf("  forward max difference %.3g (max %.3g), back relative L2 %.3g\n", maxdiff, maxv, l2);
  ck_assert_msg(l2 < 1e-5, "back projection relative L2 %g", l2);
  for (int k = 0; k < 8; k++) {
    size_t bytes = starpu_vector_get_nx(h[k]) * starpu_vector_get_elemsize(h[k]);
    starpu_data_unregister(h[k]);
    starpu_free_on_node(node, ptr[k], bytes);
  }
  free(bins);
  free(sigma);
  free(ref);
  free(vals);
  free(ones);
  free(bref);
  free(bgot);
  free(zero);
}
END_TEST

/* With several GPUs, tasks follow their LORs (sproj_lors_upload): chunk c of 16 is uploaded to GPU c % G, and 5
 * rounds of forward and back projections of each chunk then run every chunk on its own GPU, so that each GPU
 * projects exactly the LORs uploaded to it, and no LOR is copied again. The chunks (12500 LORs) follow each other,
 * so they share one StarPU child of the LORs (a run), which every upload copies whole: the tasks follow the chunks'
 * uploads, not where the run is. Skipped with one GPU. */
START_TEST(test_tasks_follow_lors)
{
  const int ngpu = sproj_num_gpus(), nchunks = 16;
  if (ngpu < 2) {
    printf("tasks follow their LORs: skipped, one GPU\n");
    return;
  }
  const int64_t nvox = tu_nvox(&g);
  float *out = tu_alloc(N), *back = tu_alloc(nvox);
  memset(back, 0, nvox * sizeof(float));
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
  struct tu_set set;
  sproj_image *bim;
  sproj_chunks *ch;
  ck_assert_int_eq(tu_set_register(&set, &g, img, xs, xe, N, out), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&bim, back, g.n, g.vs, g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_create_blocks(&ch, set.lors, nchunks), SPROJ_OK);
  int64_t expect[64] = {0}, got[64];
  ck_assert_int_le(ngpu, 64);
  for (int c = 0; c < nchunks; c++) {
    int64_t first, count;
    ck_assert_int_eq(sproj_chunks_range(ch, c, &first, &count), SPROJ_OK);
    ck_assert_int_eq(sproj_lors_upload(set.lors, ch, c, c % ngpu), SPROJ_OK);
    expect[c % ngpu] += 10 * count;
  }
  ck_assert_int_eq(sproj_stats_reset(), SPROJ_OK);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  (void)bytes_from_host(); /* resets the counters */
  for (int rep = 0; rep < 5; rep++)
    for (int c = 0; c < nchunks; c++) {
      ck_assert_int_eq(sproj_fwd(set.img, set.proj, ch, c), SPROJ_OK);
      ck_assert_int_eq(sproj_back(bim, set.proj, ch, c), SPROJ_OK);
    }
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  long long moved = bytes_from_host();
  starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
  lors_per_gpu(got);
  printf("tasks follow their LORs:");
  for (int k = 0; k < ngpu; k++)
    printf(" GPU %d projected %lld LORs (uploaded chunks: %lld)", k, (long long)got[k], (long long)expect[k]);
  /* what may cross: each GPU's first copy of the image and of the back projection's image, and the values once;
   * the LORs (24 bytes each) may not */
  long long allowed = (long long)ngpu * 2 * nvox * (long long)sizeof(float) + (long long)N * (long long)sizeof(float);
  printf("; %lld bytes to the GPUs (LORs: %lld bytes, allowance without them %lld)\n", moved,
         6LL * N * (long long)sizeof(float), allowed);
  for (int k = 0; k < ngpu; k++)
    ck_assert_msg(got[k] == expect[k], "GPU %d projected %lld LORs, %lld were uploaded to it", k, (long long)got[k],
                  (long long)expect[k]);
  ck_assert_msg(moved <= allowed, "%lld bytes crossed to the GPUs: LORs were copied again", moved);
  ck_assert_int_eq(sproj_chunks_destroy(ch), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(bim), SPROJ_OK);
  ck_assert_int_eq(tu_set_unregister(&set), SPROJ_OK);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  free(out);
  free(back);
}
END_TEST

int main(void)
{
  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  if (sproj_num_gpus() == 0) {
    printf("check_cuda: SKIPPED: StarPU drives no CUDA worker on this machine (CPU workers: %d)\n",
           sproj_num_cpu_workers());
    sproj_shutdown();
    return 77;
  }
  setup();
  Suite *s = suite_create("CUDA");
  TCase *tc = tcase_create("cuda");
  tcase_add_test(tc, test_cpu_vs_cuda);
  tcase_add_test(tc, test_cuda_adjoint_and_reference);
  tcase_add_test(tc, test_lanes_same_bits);
  tcase_add_test(tc, test_residency);
  tcase_add_test(tc, test_tasks_follow_lors);
  tcase_add_test(tc, test_layouts_same_bits);
  tcase_add_test(tc, test_layouts_sinogram);
  tcase_add_test(tc, test_gpu_homed_arrays);
  tcase_add_test(tc, test_gpu_homed_oneshot_stays);
  suite_add_tcase(s, tc);
  /* the TOF projectors in a case of their own, which CK_RUN_CASE=tof runs alone (scripts/bench-tof-variants.sh, once
   * per variant of SPROJ_TOF_GPU) */
  TCase *tof = tcase_create("tof");
  tcase_add_loop_test(tof, test_tof_cpu_vs_cuda, 0, 4);
  tcase_add_test(tof, test_tof_sino_copies);
  suite_add_tcase(s, tof);
  int ret = tu_run(s);
  sproj_shutdown();
  return ret;
}
