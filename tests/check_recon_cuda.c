/* SPDX-License-Identifier: Apache-2.0 */
/* check_recon_cuda.c: reconstructions, their objective and the objective function's pieces on the GPU agree with the
 * CPU ones, and between subsets (or pieces) nothing crosses the bus.
 * Exits 77 (Automake: SKIP) when StarPU drives no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <starpu.h>
#include "em_ratio.h"
#include "recon_codelets.h"

static struct scene sc;

/* The blur codelet on the GPU against the CPU: the same float operations in the same order (no FMA contraction on
 * either side), so within 1e-6 of the largest value. */
START_TEST(test_blur_cpu_vs_cuda)
{
  const float fwhm[3] = {7.0f, 5.0f, 9.0f};
  int64_t n = tu_nvox(&sc.g);
  float *in = tu_alloc(n), *cpu = tu_alloc(n), *gpu = tu_alloc(n);
  tu_fill_uniform(in, n, 0.0f, 1.0f);
  scene_blur(&sc.g, fwhm, in, cpu, STARPU_CPU);
  scene_blur(&sc.g, fwhm, in, gpu, STARPU_CUDA);
  double maxdiff = 0.0, maxv = tu_max_abs(cpu, n);
  for (int64_t i = 0; i < n; i++)
    maxdiff = fmax(maxdiff, fabs((double)cpu[i] - gpu[i]));
  printf("blur CPU vs CUDA: max difference %.3g (max value %.3g)\n", maxdiff, maxv);
  ck_assert_msg(maxdiff <= 1e-6 * maxv, "blur differs by %.3g", maxdiff);
  free(in);
  free(cpu);
  free(gpu);
}
END_TEST

/* The objective codelet on the GPU against the CPU, over 300 000 LORs x 29 values in two pieces (more values than its
 * grid has threads): the same double terms (logarithms within an ulp), added in another order: 1e-12 relative; with
 * data and for listmode; +infinity where a value has counts but no expected counts. */
START_TEST(test_nll_cpu_vs_cuda)
{
  struct nll_input in;
  scene_nll_input(&in, 29, 250000, 50000, 3);
  double cpu = scene_nll(STARPU_CPU, &in, 0), gpu = scene_nll(STARPU_CUDA, &in, 0);
  double cpu_lm = scene_nll(STARPU_CPU, &in, 1), gpu_lm = scene_nll(STARPU_CUDA, &in, 1);
  printf("objective codelet CPU vs CUDA: %.15g / %.15g (%.2e), listmode %.15g / %.15g (%.2e)\n", cpu, gpu,
         fabs(cpu - gpu) / fabs(cpu), cpu_lm, gpu_lm, fabs(cpu_lm - gpu_lm) / fabs(cpu_lm));
  ck_assert_msg(fabs(cpu - gpu) <= 1e-12 * fabs(cpu), "CPU %.17g, GPU %.17g", cpu, gpu);
  ck_assert_msg(fabs(cpu_lm - gpu_lm) <= 1e-12 * fabs(cpu_lm), "listmode: CPU %.17g, GPU %.17g", cpu_lm, gpu_lm);
  in.p[1][7] = 0.0f, in.a[1][7] = 0.0f, in.y[1][7] = 2.0f;
  ck_assert(isinf(scene_nll(STARPU_CUDA, &in, 0)));
  scene_nll_input_free(&in);
}
END_TEST

/* The ratio codelet on the GPU against the CPU, bit for bit (the same float operations on the same operands; the GPU
 * thread takes several values a block apart and steps their LOR and bin without dividing): each kind, with the
 * background per value and per LOR, capped and not, with and without STIR's small-value rule, for 29 and 300 bins
 * (more bins than a block has threads), two pieces whose values are not a multiple of a block's, a few expected
 * counts negative. _i: 0 = 29 bins, 1 = 300. */
START_TEST(test_ratio_cpu_vs_cuda)
{
  static const int nbs[2] = {29, 300}, n0[2] = {250000, 20011}, n1[2] = {50001, 3333};
  const int nb = nbs[_i];
  struct nll_input in;
  scene_nll_input(&in, nb, n0[_i], n1[_i], 3);
  float *px[2], *cpu[2], *gpu[2], *smax = tu_alloc(2 * nb);
  for (int q = 0; q < 2; q++) {
    int64_t nv = (int64_t)in.n[q] * nb;
    for (int64_t k = 0; k < nv; k += 97)
      in.p[q][k] = -20.0f; /* expected counts below 0 */
    px[q] = tu_alloc(nv);
    cpu[q] = tu_alloc(nv);
    gpu[q] = tu_alloc(nv);
    tu_fill_uniform(px[q], nv, 0.0f, 10.0f);
  }
  tu_fill_uniform(smax, 2 * nb, 0.0f, 12.0f);
  static const struct {
    int kind, a_per_lor, small;
    float cap;
  } cfg[] = {{SPROJ_EM_TERM_RATIO, 0, 0, 0.0f},
             {SPROJ_EM_TERM_RATIO, 1, 0, 0.0f},
             {SPROJ_EM_TERM_RATIO, 0, 1, 10000.0f},
             {SPROJ_EM_TERM_RATIO, 1, 1, 2.0f},
             {SPROJ_EM_TERM_HESSIAN, 0, 0, 0.0f},
             {SPROJ_EM_TERM_HESSIAN, 1, 1, 5.0f},
             {SPROJ_EM_TERM_APPROX_HESSIAN, 0, 0, 0.0f},
             {SPROJ_EM_TERM_APPROX_HESSIAN, 0, 1, 3.0f}};
  int64_t total = 0, same = 0;
  for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
    const float *sm = cfg[c].small ? smax : NULL;
    scene_ratio(STARPU_CPU, &in, cfg[c].kind, cfg[c].a_per_lor, px, cfg[c].cap, sm, cpu);
    scene_ratio(STARPU_CUDA, &in, cfg[c].kind, cfg[c].a_per_lor, px, cfg[c].cap, sm, gpu);
    int64_t s = 0, nonzero = 0, t = 0;
    for (int q = 0; q < 2; q++)
      for (int64_t k = 0; k < (int64_t)in.n[q] * nb; k++, t++) {
        s += memcmp(&cpu[q][k], &gpu[q][k], sizeof(float)) == 0;
        nonzero += cpu[q][k] != 0.0f;
      }
    ck_assert_msg(s == t, "ratio codelet, case %zu (%d bins): %lld of %lld values differ", c, nb, (long long)(t - s),
                  (long long)t);
    ck_assert_msg(nonzero > t / 4 && nonzero < t, "case %zu: %lld of %lld terms non-zero", c, (long long)nonzero,
                  (long long)t);
    total += t;
    same += s;
  }
  printf("ratio codelet CPU vs CUDA, %d bins, 8 cases: %lld of %lld values the same bits\n", nb, (long long)same,
         (long long)total);
  for (int q = 0; q < 2; q++) {
    free(px[q]);
    free(cpu[q]);
    free(gpu[q]);
  }
  free(smax);
  scene_nll_input_free(&in);
}
END_TEST

/* Simulated data on the GPUs (_i = 0: non-TOF, 1: TOF): the Poisson counts drawn there are exactly sproj_poisson's of
 * the expected counts drawn there without noise (the same per-value streams, the same exp and log: a CUDA thread and
 * a CPU core round alike); the expected counts and trues agree with the CPU workers' to 1e-5 per value and 1e-9. */
static void simulate_on(unsigned devices, int tof, sproj_model *md, sproj_image *img, sproj_lors *lors,
                        sproj_chunks *views, float *e, float *c, double *trues)
{
  const int nb = tof ? sc.tof.num_bins : 1;
  sproj_proj *dp;
  ck_assert_int_eq(sproj_set_devices(devices), SPROJ_OK);
  ck_assert_int_eq(tof ? sproj_proj_register_tof(&dp, e, lors, nb) : sproj_proj_register(&dp, e, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_model_expected(md, img, dp, views, trues), SPROJ_OK);
  ck_assert_int_eq(sproj_model_draw(md, dp, views, 0.8f, 77, 0, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(dp), SPROJ_OK);
  ck_assert_int_eq(tof ? sproj_proj_register_tof(&dp, c, lors, nb) : sproj_proj_register(&dp, c, lors), SPROJ_OK);
  ck_assert_int_eq(sproj_model_expected(md, img, dp, views, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_model_draw(md, dp, views, 0.8f, 77, 1, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(dp), SPROJ_OK);
}

START_TEST(test_simulate_cpu_vs_cuda)
{
  const int tof = _i, nb = tof ? sc.tof.num_bins : 1;
  const int64_t nval = sc.nlors * nb, nvox = tu_nvox(&sc.g);
  float *img_v = tu_alloc(nvox), *e_gpu = tu_alloc(nval), *c_gpu = tu_alloc(nval), *ref = tu_alloc(nval);
  float *e_cpu = tu_alloc(nval), *c_cpu = tu_alloc(nval);
  memcpy(img_v, sc.truth, (size_t)nvox * sizeof(float));
  sproj_image *img;
  sproj_lors *lors;
  sproj_chunks *views;
  sproj_tof *t = NULL;
  sproj_model *md;
  ck_assert_int_eq(sproj_image_register(&img, img_v, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_register(&lors, sc.xs, sc.xe, sc.nlors), SPROJ_OK);
  ck_assert_int_eq(scene_views(&sc, lors, &views), SPROJ_OK);
  if (tof)
    ck_assert_int_eq(sproj_tof_register(&t, &sc.tof, NULL, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(tof ? sproj_model_create_tof_uniform_add(&md, lors, sc.mult, sc.add, t, NULL)
                       : sproj_model_create(&md, lors, sc.mult, sc.add, NULL, NULL), SPROJ_OK);
  double trues_gpu, trues_cpu;
  simulate_on(SPROJ_DEVICE_CUDA, tof, md, img, lors, views, e_gpu, c_gpu, &trues_gpu);
  simulate_on(SPROJ_DEVICE_CPU, tof, md, img, lors, views, e_cpu, c_cpu, &trues_cpu);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  ck_assert_int_eq(sproj_poisson(e_gpu, ref, nval, 77, 0), SPROJ_OK);
  int64_t same = 0, nonzero = 0;
  double maxrel = 0.0, emax = tu_max_abs(e_cpu, nval);
  for (int64_t k = 0; k < nval; k++) {
    ck_assert_msg(c_gpu[k] == ref[k], "value %lld: GPU count %g, sproj_poisson %g (mean %.9g)", (long long)k, c_gpu[k],
                  ref[k], e_gpu[k]);
    same += c_gpu[k] == c_cpu[k];
    nonzero += c_gpu[k] > 0.0f;
    maxrel = fmax(maxrel, fabs((double)e_gpu[k] - e_cpu[k]) / emax);
  }
  printf("simulated %s data on CUDA: %lld values (%lld non-zero) equal to sproj_poisson's of its expected counts; "
         "expected counts vs CPU: max difference %.2e of the largest, trues %.2e; counts equal to the CPU's: %.6f\n",
         tof ? "TOF" : "non-TOF", (long long)nval, (long long)nonzero, maxrel, fabs(trues_gpu - trues_cpu) / trues_cpu,
         (double)same / nval);
  ck_assert_msg(maxrel <= 1e-5, "expected counts differ by %.3g of the largest", maxrel);
  /* listmode events drawn on the GPU: sproj_sample_listmode_sorted's of its expected counts */
  {
    const int nb = tof ? sc.tof.num_bins : 1;
    float *v = tu_alloc(nval);
    sproj_proj *dp;
    int32_t *lor, *lor2;
    int16_t *bin = NULL, *bin2 = NULL;
    int64_t num, num2;
    ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
    ck_assert_int_eq(tof ? sproj_proj_register_tof(&dp, v, lors, nb) : sproj_proj_register(&dp, v, lors), SPROJ_OK);
    ck_assert_int_eq(sproj_model_expected(md, img, dp, views, NULL), SPROJ_OK);
    ck_assert_int_eq(sproj_model_draw_events(md, dp, views, 0.8f, 77, &lor, &bin, &num), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_discard(dp), SPROJ_OK);
    ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
    ck_assert_int_eq(sproj_sample_listmode_sorted(e_gpu, sc.nlors, tof ? nb : 0, 77, 0, &lor2, tof ? &bin2 : NULL,
                                                  &num2), SPROJ_OK);
    ck_assert_int_eq(num, num2);
    ck_assert_int_eq(memcmp(lor, lor2, (size_t)num * sizeof *lor), 0);
    if (tof)
      ck_assert_int_eq(memcmp(bin, bin2, (size_t)num * sizeof *bin), 0);
    printf("listmode events drawn on CUDA: %lld, equal to sproj_sample_listmode_sorted's\n", (long long)num);
    /* from values of the library's own (sproj_proj_create): the same events */
    sproj_proj *own;
    int32_t *lor3;
    int16_t *bin3 = NULL;
    int64_t num3;
    ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_create(&own, lors, nb), SPROJ_OK);
    ck_assert_int_eq(sproj_model_expected(md, img, own, views, NULL), SPROJ_OK);
    ck_assert_int_eq(sproj_model_draw_events(md, own, views, 0.8f, 77, &lor3, &bin3, &num3), SPROJ_OK);
    ck_assert_int_eq(sproj_proj_discard(own), SPROJ_OK);
    ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
    ck_assert_int_eq(num3, num);
    ck_assert_int_eq(memcmp(lor3, lor, (size_t)num * sizeof *lor), 0);
    if (tof)
      ck_assert_int_eq(memcmp(bin3, bin, (size_t)num * sizeof *bin), 0);
    sproj_free(lor3);
    sproj_free(bin3);
    sproj_free(lor);
    sproj_free(lor2);
    sproj_free(bin);
    sproj_free(bin2);
    free(v);
  }
  ck_assert_msg(fabs(trues_gpu - trues_cpu) <= 1e-6 * trues_cpu, "trues %.17g on CUDA, %.17g on CPU", trues_gpu,
                trues_cpu);
  ck_assert_int_eq(sproj_model_destroy(md), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(t), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(views), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  free(img_v);
  free(e_gpu);
  free(c_gpu);
  free(e_cpu);
  free(c_cpu);
  free(ref);
}
END_TEST

/* A TOF-sinogram OS-EM whose data were made on the GPUs (sproj_model_expected into values of the library's own,
 * never on the host) and one from the same expected counts brought to the host first agree to 1e-4 relative L2 (the
 * same data; back projections add in another order). Over two or more devices (SPROJ_DEVICES) sproj_recon_create
 * repartitions the data into the devices' shares and uploads them: the upload must wait for that partition, whose
 * pieces have no value before the gather of the GPU-made data ends (StarPU 1.4 aborted in the upload's fetch). */
START_TEST(test_recon_data_made_on_gpu)
{
  const int nb = sc.tof.num_bins, S = 4, iters = 2;
  const int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * nb;
  float *img_v = tu_alloc(nvox), *host = tu_alloc(nval), *x_own = tu_alloc(nvox), *x_host = tu_alloc(nvox);
  memcpy(img_v, sc.truth, (size_t)nvox * sizeof(float));
  sproj_image *img;
  sproj_lors *lors;
  sproj_chunks *views;
  sproj_tof *t;
  sproj_model *md;
  EXPECT(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
  EXPECT(sproj_image_register(&img, img_v, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  EXPECT(sproj_lors_register(&lors, sc.xs, sc.xe, sc.nlors), SPROJ_OK);
  EXPECT(scene_views(&sc, lors, &views), SPROJ_OK);
  EXPECT(sproj_tof_register(&t, &sc.tof, NULL, NULL, NULL), SPROJ_OK);
  EXPECT(sproj_model_create_tof_uniform_add(&md, lors, sc.mult, sc.add, t, NULL), SPROJ_OK);
  for (int k = 0; k < 2; k++) {
    float *x = k ? x_host : x_own;
    sproj_proj *data;
    if (k) {
      EXPECT(sproj_proj_register_tof(&data, host, lors, nb), SPROJ_OK);
      EXPECT(sproj_model_expected(md, img, data, views, NULL), SPROJ_OK);
      EXPECT(sproj_proj_sync(data, NULL, 0, SPROJ_SYNC_READ), SPROJ_OK);
    } else {
      EXPECT(sproj_proj_create(&data, lors, nb), SPROJ_OK);
      EXPECT(sproj_model_expected(md, img, data, views, NULL), SPROJ_OK);
    }
    for (int64_t i = 0; i < nvox; i++)
      x[i] = 1.0f;
    sproj_image *ximg;
    sproj_recon *r;
    struct sproj_recon_config cfg;
    sproj_recon_config_init(&cfg);
    cfg.model = md;
    cfg.data = data;
    cfg.chunks = views;
    cfg.num_subsets = S;
    EXPECT(sproj_image_register(&ximg, x, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    EXPECT(sproj_recon_create(&r, ximg, &cfg), SPROJ_OK);
    EXPECT(sproj_recon_iterate(r, iters, NULL, NULL), SPROJ_OK);
    EXPECT(sproj_image_sync(ximg, SPROJ_SYNC_READ), SPROJ_OK);
    EXPECT(sproj_recon_destroy(r), SPROJ_OK);
    EXPECT(sproj_image_unregister(ximg), SPROJ_OK);
    EXPECT(k ? sproj_proj_unregister(data) : sproj_proj_discard(data), SPROJ_OK);
  }
  EXPECT(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  double d = tu_rel_l2_ff(x_own, x_host, nvox);
  printf("TOF OS-EM from data made on the GPUs (%d devices), %d iterations: against data from the host, relative L2 "
         "%.2e\n", sproj_num_devices(), iters, d);
  ck_assert_msg(d <= 1e-4, "data made on the GPUs: the reconstruction differs by %.3g", d);
  EXPECT(sproj_model_destroy(md), SPROJ_OK);
  EXPECT(sproj_tof_unregister(t), SPROJ_OK);
  EXPECT(sproj_chunks_destroy(views), SPROJ_OK);
  EXPECT(sproj_lors_unregister(lors), SPROJ_OK);
  EXPECT(sproj_image_unregister(img), SPROJ_OK);
  free(img_v);
  free(host);
  free(x_own);
  free(x_host);
}
END_TEST

/* 5 iterations on CPU workers only and on the GPUs only agree to 1e-4 relative L2: non-TOF OSEM (4 subsets) with a
 * resolution model (_i = 0), TOF-sinogram MLEM (1), TOF LM-OSEM with per-subset sensitivities (2), TOF-sinogram MLEM
 * with the background per LOR (3, sproj_model_create_tof_uniform_add). The projections
 * agree to 1e-5 per value; back projections differ in the order atomics add up. */
START_TEST(test_recon_cpu_vs_cuda)
{
  const float fwhm[3] = {5.0f, 5.0f, 5.0f};
  static const char *const name[4] = {"non-TOF OSEM with resolution model", "TOF-sinogram MLEM", "TOF LM-OSEM",
                                      "TOF-sinogram MLEM, background per LOR"};
  int tof = _i > 0, nb = tof ? sc.tof.num_bins : 1;
  int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * nb;
  float *ybar = tu_alloc(nval), *counts = tu_alloc(nval), *cpu = tu_alloc(nvox), *gpu = tu_alloc(nvox);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CPU), SPROJ_OK);
  ck_assert_int_eq(_i == 0 ? scene_expected_blurred(&sc, sc.truth, fwhm, tof, ybar) : scene_expected(&sc, sc.truth, tof, ybar),
                   SPROJ_OK);
  tu_seed(31);
  scene_counts(ybar, nval, counts);
  for (int dev = 0; dev < 2; dev++) {
    float *x = dev ? gpu : cpu;
    ck_assert_int_eq(sproj_set_devices(dev ? SPROJ_DEVICE_CUDA : SPROJ_DEVICE_CPU), SPROJ_OK);
    if (_i == 0)
      scene_run_sino(&sc, 0, fwhm, 4, NULL, counts, 5, x, NULL, NULL);
    else if (_i == 1 || _i == 3)
      scene_run_sino(&sc, _i == 3 ? 2 : 1, NULL, 1, NULL, counts, 5, x, NULL, NULL);
    else
      scene_run_lm(&sc, 1, 4, 1, counts, 5, x, NULL);
  }
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  double d = tu_rel_l2_ff(gpu, cpu, nvox);
  printf("%s, 5 iterations: CPU vs CUDA relative L2 %.2e\n", name[_i], d);
  ck_assert_msg(d <= 1e-4, "%s: CPU and CUDA differ by %.3g", name[_i], d);
  free(ybar);
  free(counts);
  free(cpu);
  free(gpu);
}
END_TEST

/* The objective function's pieces on CPU workers only and on the GPUs only (sproj_recon_gradient, both Hessian
 * products, the subset objective) at an image that is not the phantom, subset 1 of 4: non-TOF with a resolution model
 * (_i = 0) and TOF with STIR's quotient rule (_i = 1); _i = 2, 3 the same with STIR's small-value rule too
 * (small_fraction 1e-6; the direction is the phantom plus 1e-9 and every fifth count 0, so that the rule zeroes
 * thousands of terms, check_objective's test_small_rule). Images agree to 1e-5 relative L2 (projections to 1e-5 per
 * value, back projections add in another order), the objective to 2e-8 (double sums of float terms whose expected
 * counts m p + a a GPU rounds once (contracted) and a CPU twice: measured 3e-9 on an H200). */
START_TEST(test_objective_cpu_vs_cuda)
{
  const float fwhm[3] = {5.0f, 5.0f, 5.0f};
  const int tof = _i & 1, nb = tof ? sc.tof.num_bins : 1, rule = _i >= 2;
  int64_t nvox = tu_nvox(&sc.g), nval = sc.nlors * nb;
  float *ybar = tu_alloc(nval), *counts = tu_alloc(nval), *v = tu_alloc(nvox), *out[2][3];
  double nll[2];
  ck_assert_int_eq(scene_expected(&sc, sc.truth, tof, ybar), SPROJ_OK);
  tu_seed(37);
  scene_counts(ybar, nval, counts);
  tu_fill_uniform(v, nvox, 0.0f, 1.0f);
  if (rule) {
    for (int64_t i = 0; i < nvox; i++)
      v[i] = sc.truth[i] + 1e-9f;
    for (int64_t j = 0; j < nval; j += 5)
      counts[j] = 0.0f;
  }
  for (int dev = 0; dev < 2; dev++) {
    ck_assert_int_eq(sproj_set_devices(dev ? SPROJ_DEVICE_CUDA : SPROJ_DEVICE_CPU), SPROJ_OK);
    float *x = tu_alloc(nvox);
    for (int64_t i = 0; i < nvox; i++)
      x[i] = 0.6f * sc.truth[i] + 0.1f;
    struct scene_osem o;
    scene_osem_open_rule(&o, &sc, tof, x, counts, tof ? NULL : fwhm, 4, tof || rule ? 10000.0f : 0.0f,
                         rule ? 1e-6f : 0.0f);
    sproj_image *vi, *oi[3];
    EXPECT(sproj_image_register(&vi, v, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    for (int k = 0; k < 3; k++) {
      out[dev][k] = tu_alloc(nvox);
      EXPECT(sproj_image_register(&oi[k], out[dev][k], sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    }
    EXPECT(sproj_recon_gradient(o.r, 1, o.img, oi[0], 0), SPROJ_OK);
    EXPECT(sproj_recon_hessian_times(o.r, 1, o.img, vi, oi[1], 0), SPROJ_OK);
    EXPECT(sproj_recon_hessian_times(o.r, 1, NULL, vi, oi[2], SPROJ_HESSIAN_APPROXIMATE), SPROJ_OK);
    EXPECT(sproj_recon_subset_objective(o.r, 1, o.img, &nll[dev]), SPROJ_OK);
    for (int k = 0; k < 3; k++)
      EXPECT(sproj_image_unregister(oi[k]), SPROJ_OK);
    EXPECT(sproj_image_unregister(vi), SPROJ_OK);
    scene_osem_close(&o);
    free(x);
  }
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  static const char *const what[3] = {"gradient", "Hessian product", "approximate Hessian product"};
  for (int k = 0; k < 3; k++) {
    double d = tu_rel_l2_ff(out[1][k], out[0][k], nvox);
    printf("%s%s %s: CPU vs CUDA relative L2 %.2e (max %g)\n", tof ? "TOF, STIR's rule," : "non-TOF, resolution model,",
           rule ? " small-value rule," : "", what[k], d, tu_max_abs(out[0][k], nvox));
    ck_assert_msg(tu_max_abs(out[0][k], nvox) > 0.0 && d <= 1e-5, "%s: CPU and CUDA differ by %.3g", what[k], d);
    free(out[0][k]);
    free(out[1][k]);
  }
  printf("subset objective: CPU %.12g, CUDA %.12g\n", nll[0], nll[1]);
  ck_assert_msg(fabs(nll[0] - nll[1]) <= 2e-8 * fabs(nll[0]), "objective CPU %.12g, CUDA %.12g", nll[0], nll[1]);
  free(ybar);
  free(counts);
  free(v);
}
END_TEST

/* The image updates on a GPU equal the CPU's: the multiplicative one (_i = 0, sproj_image_update_multiplicative: one
 * division, one product and two comparisons per voxel, at most one ulp of the product apart if contracted) and the
 * additive one (_i = 1, sproj_image_update_additive, OSSPS's step: a product, a division, a product and a sum, at
 * most one ulp of the larger term apart if the last product and the sum are contracted). */
START_TEST(test_update_cpu_vs_cuda)
{
  int64_t nvox = tu_nvox(&sc.g);
  float *x0 = tu_alloc(nvox), *num = tu_alloc(nvox), *den = tu_alloc(nvox), *out[2];
  tu_fill_uniform(x0, nvox, 0.0f, 2.0f);
  const int additive = _i;
  const float scale = 4.0f, step = 0.9f, lo = additive ? 0.0f : 0.7f, hi = additive ? 2.5f : 1.6f;
  tu_fill_uniform(num, nvox, additive ? -3.0f : 0.0f, 3.0f);
  tu_fill_uniform(den, nvox, 0.5f, 1.5f);
  for (int64_t v = 0; v < nvox; v += 7)
    den[v] = 0.0f;
  for (int dev = 0; dev < 2; dev++) {
    ck_assert_int_eq(sproj_set_devices(dev ? SPROJ_DEVICE_CUDA : SPROJ_DEVICE_CPU), SPROJ_OK);
    out[dev] = scene_copy(x0, nvox);
    sproj_image *xi, *ni, *di;
    EXPECT(sproj_image_register(&xi, out[dev], sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    EXPECT(sproj_image_register(&ni, num, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    EXPECT(sproj_image_register(&di, den, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
    if (additive)
      EXPECT(sproj_image_update_additive(xi, ni, di, scale, step, lo, hi), SPROJ_OK);
    else
      EXPECT(sproj_image_update_multiplicative(xi, ni, di, lo, hi), SPROJ_OK);
    for (sproj_image **i = (sproj_image *[]){xi, ni, di, NULL}; *i; i++)
      EXPECT(sproj_image_unregister(*i), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  double worst = 0.0;
  for (int64_t v = 0; v < nvox; v++) {
    /* the size the ulp is taken of: the result, or for the additive step the larger of x and the added term */
    double size = fabs((double)out[0][v]);
    if (additive && den[v] > 0.0f)
      size = fmax(fabs((double)x0[v]), fabs((double)num[v] * scale / den[v] * step));
    worst = fmax(worst, fabs((double)out[1][v] - out[0][v]) / fmax(size, 1e-30));
  }
  printf("%s update: CPU vs CUDA largest relative difference %.3g\n", additive ? "additive" : "multiplicative", worst);
  ck_assert_msg(worst <= 2.4e-7, "CPU and CUDA updates differ by %.3g", worst);
  free(x0);
  free(num);
  free(den);
  free(out[0]);
  free(out[1]);
}
END_TEST

/* bytes moved between main memory and every GPU, both ways, since the last call (reading resets the counters);
 * names each bus that moved any, after `what` */
static long long bus_bytes(const char *what)
{
  long long total = 0;
  for (unsigned node = 0; node < starpu_memory_nodes_get_count(); node++) {
    if (starpu_node_get_kind(node) != STARPU_CUDA_RAM)
      continue;
    int buses[2] = {starpu_bus_get_id(STARPU_MAIN_RAM, node), starpu_bus_get_id(node, STARPU_MAIN_RAM)};
    for (int b = 0; b < 2; b++) {
      struct starpu_profiling_bus_info info;
      if (buses[b] >= 0 && starpu_bus_get_profiling_info(buses[b], &info) == 0 && info.transferred_bytes > 0) {
        total += info.transferred_bytes;
        printf("residency, %s: %lld bytes %s node %u (%d transfers)\n", what, (long long)info.transferred_bytes,
               b ? "from GPU memory" : "to GPU memory", node, info.transfer_count);
      }
    }
  }
  return total;
}

/* After a first iteration (which brings the LORs, data, factors and image to the GPUs), three more OS-EM iterations
 * with a resolution model (4 subsets, 7 tasks and more each) move no byte between main memory and the GPUs; syncing
 * the image then moves at least its size: the counter counts. */
START_TEST(test_recon_residency)
{
  const float fwhm[3] = {5.0f, 5.0f, 5.0f};
  int64_t nvox = tu_nvox(&sc.g);
  float *x = scene_ones(&sc), *data = tu_alloc(sc.nlors);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_CUDA), SPROJ_OK);
  ck_assert_int_eq(scene_expected_blurred(&sc, sc.truth, fwhm, 0, data), SPROJ_OK);
  struct scene_osem o;
  scene_osem_open(&o, &sc, 0, x, data, fwhm, 4);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  EXPECT(sproj_recon_iterate(o.r, 1, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  long long first = bus_bytes("first iteration");
  EXPECT(sproj_recon_iterate(o.r, 3, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  long long resident = bus_bytes("3 iterations");
  ck_assert_int_eq(sproj_image_sync(o.img, SPROJ_SYNC_READ), SPROJ_OK);
  long long sync = bus_bytes("sync");
  starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
  printf("residency: first iteration moved %lld bytes, the next 3 iterations %lld, syncing the image %lld (image %lld "
         "bytes)\n", first, resident, sync, (long long)nvox * 4);
  ck_assert_msg(resident == 0, "%lld bytes crossed the bus during 3 iterations", resident);
  /* the objective function's pieces on the resident image, into images that live on the GPUs only (a framework's
   * gradient and Hessian work images): nothing crosses the bus either, once they exist there */
  float *g = tu_alloc(nvox), *h = tu_alloc(nvox);
  sproj_image *gi, *hi;
  EXPECT(sproj_image_register(&gi, g, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  EXPECT(sproj_image_register(&hi, h, sc.g.n, sc.g.vs, sc.g.origin), SPROJ_OK);
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  EXPECT(sproj_recon_gradient(o.r, 0, o.img, gi, 0), SPROJ_OK);
  EXPECT(sproj_recon_hessian_times(o.r, 0, o.img, gi, hi, 0), SPROJ_OK);
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  bus_bytes("the pieces' first calls");
  for (int k = 0; k < 4; k++) {
    EXPECT(sproj_recon_gradient(o.r, k, o.img, gi, 0), SPROJ_OK);
    EXPECT(sproj_recon_hessian_times(o.r, k, o.img, gi, hi, 0), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_wait_all(), SPROJ_OK);
  long long pieces = bus_bytes("4 gradients and Hessian products");
  starpu_profiling_status_set(STARPU_PROFILING_DISABLE);
  printf("residency: 4 gradients and Hessian products on resident images moved %lld bytes\n", pieces);
  ck_assert_msg(pieces == 0, "%lld bytes crossed the bus for the pieces", pieces);
  EXPECT(sproj_image_unregister(gi), SPROJ_OK);
  EXPECT(sproj_image_unregister(hi), SPROJ_OK);
  free(g);
  free(h);
  ck_assert_msg(sync >= nvox * 4, "the counter saw %lld bytes for a %lld-byte image", sync, (long long)nvox * 4);
  ck_assert_int_eq(sproj_set_devices(SPROJ_DEVICE_ANY), SPROJ_OK);
  scene_osem_close(&o);
  free(x);
  free(data);
}
END_TEST

int main(void)
{
  if (tu_init(-1, -1) != SPROJ_OK) {
    fprintf(stderr, "sproj_init: %s\n", sproj_last_error());
    return 99;
  }
  if (sproj_num_gpus() == 0) {
    printf("check_recon_cuda: SKIPPED: StarPU drives no CUDA worker on this machine (CPU workers: %d)\n",
           sproj_num_cpu_workers());
    sproj_shutdown();
    return 77;
  }
  if (sproj_num_cpu_workers() == 0) {
    printf("check_recon_cuda: SKIPPED: the CPU-vs-CUDA comparison needs a CPU worker\n");
    sproj_shutdown();
    return 77;
  }
  tu_seed(2024);
  scene_build(&sc);
  Suite *s = suite_create("reconstruction on CUDA");
  TCase *tc = tcase_create("recon cuda");
  tcase_add_test(tc, test_blur_cpu_vs_cuda);
  tcase_add_test(tc, test_nll_cpu_vs_cuda);
  tcase_add_loop_test(tc, test_ratio_cpu_vs_cuda, 0, 2);
  tcase_add_loop_test(tc, test_recon_cpu_vs_cuda, 0, 4);
  tcase_add_test(tc, test_recon_residency);
  tcase_add_loop_test(tc, test_objective_cpu_vs_cuda, 0, 4);
  tcase_add_loop_test(tc, test_update_cpu_vs_cuda, 0, 2);
  tcase_add_loop_test(tc, test_simulate_cpu_vs_cuda, 0, 2);
  tcase_add_test(tc, test_recon_data_made_on_gpu);
  suite_add_tcase(s, tc);
  int ret = tu_run(s);
  scene_free(&sc);
  sproj_shutdown();
  return ret;
}
