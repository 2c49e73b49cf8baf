/* SPDX-License-Identifier: Apache-2.0 */
/* bench_recon.c: time of one OSEM iteration on resident data (the library's task graphs), the share of it that is not
 * projection, and the same iteration done the way frameworks call projectors today (host arrays per subset, the image
 * sent with every call, ratio and update on the host). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common.h"

/* threads_per_block of the parallelproj-style calls, which starproj accepts and ignores (starproj_parallelproj.h) */
#define PP_THREADS_PER_BLOCK 64
#include "starproj_parallelproj.h"

static void *pinned(size_t bytes)
{
  void *p = NULL;
  CHECK(sproj_malloc_pinned(&p, bytes));
  return p;
}

static const char *usage_text =
  "usage: bench_recon [--scanner small|vision600] [--tof] [--subsets N] [--iterations N] [--no-host] [--verbose]\n"
  "                   [--help]\n"
  "  One OSEM iteration (default 34 subsets on the vision600 scanner, image 215x215x71 of 2.78 mm) on resident\n"
  "  data, timed after one warm-up iteration (median of --iterations, default 3); the projections of the same\n"
  "  subsets alone; and, unless --no-host, the iteration through one-shot calls with host arrays.\n";

static int bad(const char *what, const char *arg)
{
  fprintf(stderr, "bench_recon: %s '%s'\n%s", what, arg, usage_text);
  return 2;
}

int main(int argc, char **argv)
{
  const char *scanner_name = "vision600";
  int tof_on = 0, subsets = BENCH_SUBSETS, iterations = 3, host = 1, verbose = 0;
  static const struct option longopts[] = {{"scanner", required_argument, 0, 's'}, {"tof", no_argument, 0, 't'},
                                           {"subsets", required_argument, 0, 'n'},
                                           {"iterations", required_argument, 0, 'i'},
                                           {"no-host", no_argument, 0, 'H'}, {"help", no_argument, 0, 'h'},
                                           {"verbose", no_argument, 0, 'v'},
                                           {0, 0, 0, 0}};
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    char *end;
    long v;
    switch (c) {
    case 's':
      if (strcmp(optarg, "small") && strcmp(optarg, "vision600"))
        return bad("unknown scanner", optarg);
      scanner_name = optarg;
      break;
    case 't': tof_on = 1; break;
    case 'n':
    case 'i':
      errno = 0;
      v = strtol(optarg, &end, 10);
      if (errno || *end || end == optarg || v < 1 || v > 1000)
        return bad("needs a whole number in 1..1000:", optarg);
      *(c == 'n' ? &subsets : &iterations) = (int)v;
      break;
    case 'H': host = 0; break;
    case 'v': verbose = 1; break;
    case 'h': fputs(usage_text, stdout); return 0;
    default: return bad("unknown option", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return bad("unexpected argument", argv[optind]);

  if (!verbose)
    setenv("STARPU_SILENT", "1", 0);
  CHECK(sproj_init(NULL));
  struct sproj_scanner_params sp;
  sproj_scanner *scanner;
  struct sproj_sinogram_info si;
  CHECK(sproj_scanner_preset(scanner_name, &sp));
  CHECK(sproj_scanner_create(&scanner, &sp));
  CHECK(sproj_scanner_info(scanner, &si));
  int small = strcmp(scanner_name, "small") == 0;
  const int xy = small ? SMALL_IMAGE_XY : BENCH_IMAGE_XY, dims[3] = {xy, xy, small ? SMALL_IMAGE_Z : BENCH_IMAGE_Z};
  const float v = small ? SMALL_VOXEL_MM : BENCH_VOXEL_MM, vs[3] = {v, v, v};
  float origin[3];
  for (int k = 0; k < 3; k++)
    origin[k] = (-0.5f * dims[k] + 0.5f) * vs[k];
  const int nvox = dims[0] * dims[1] * dims[2];
  const int64_t nlors = si.num_lors;
  struct sproj_tof_params tp = program_tof(small);
  const int nbins = tof_on ? tp.num_bins : 1;
  if (subsets > si.num_views)
    return bad("more subsets than views:", argv[0]);
  printf("bench_recon: %s scanner, %lld LORs%s, image %dx%dx%d, %d subsets; %d GPUs, %d CPU workers, scheduler %s\n",
         scanner_name, (long long)nlors, tof_on ? " x 29 TOF bins" : "", dims[0], dims[1], dims[2], subsets,
         sproj_num_gpus(), sproj_num_cpu_workers(), sproj_scheduler_name());

  /* LORs, phantom, data = m * A x + a without noise (computed on the devices), m and a as a scanner would have */
  double t = now();
  float *xs = pinned((size_t)nlors * 3 * sizeof(float)), *xe = pinned((size_t)nlors * 3 * sizeof(float));
  CHECK(sproj_scanner_lors(scanner, xs, xe, 0));
  float *phantom = pinned((size_t)nvox * sizeof(float)), *x = pinned((size_t)nvox * sizeof(float));
  struct sproj_phantom ph;
  CHECK(sproj_phantom_default(&ph, dims, vs, origin));
  CHECK(sproj_phantom_fill(&ph, phantom, dims, vs, origin, 1));
  float *mult = pinned((size_t)nlors * sizeof(float)), *add = pinned((size_t)nlors * nbins * sizeof(float));
  float *y = pinned((size_t)nlors * nbins * sizeof(float));
  for (int64_t i = 0; i < nlors; i++)
    mult[i] = lor_factor((uint64_t)i);
  for (int64_t i = 0; i < nlors * nbins; i++)
    add[i] = 0.01f;
  sproj_lors *lors;
  sproj_chunks *views;
  sproj_tof *tof = NULL;
  sproj_image *ph_img, *ximg;
  sproj_proj *data;
  CHECK(sproj_lors_register(&lors, xs, xe, nlors));
  CHECK(sproj_scanner_chunks_views(&views, scanner, lors));
  if (tof_on)
    CHECK(sproj_tof_register(&tof, &tp, NULL, NULL, NULL));
  CHECK(sproj_image_register(&ph_img, phantom, dims, vs, origin));
  if (tof_on) {
    CHECK(sproj_proj_register_tof(&data, y, lors, nbins));
    CHECK(sproj_fwd_tof_sino(ph_img, data, views, SPROJ_ALL_CHUNKS, tof));
  } else {
    CHECK(sproj_proj_register(&data, y, lors));
    CHECK(sproj_fwd(ph_img, data, views, SPROJ_ALL_CHUNKS));
  }
  CHECK(sproj_proj_sync(data, NULL, 0, SPROJ_SYNC_WRITE));
  for (int64_t i = 0; i < nlors * nbins; i++)
    y[i] = mult[i / nbins] * y[i] + add[i];
  for (int i = 0; i < nvox; i++)
    x[i] = 1.0f;
  CHECK(sproj_image_register(&ximg, x, dims, vs, origin));
  printf("setup (LORs, data): %.2f s\n", now() - t);

  /* ---- OSEM on resident data ---- */
  sproj_model *model;
  CHECK(sproj_model_create(&model, lors, mult, add, tof, NULL));
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = model;
  cfg.data = data;
  cfg.chunks = views;
  cfg.num_subsets = subsets;
  sproj_recon *recon;
  t = now();
  CHECK(sproj_recon_create(&recon, ximg, &cfg));
  CHECK(sproj_image_sync(ximg, SPROJ_SYNC_READ));
  double t_create = now() - t;
  t = now();
  CHECK(sproj_recon_iterate(recon, 1, NULL, NULL));
  CHECK(sproj_image_sync(ximg, SPROJ_SYNC_READ));
  double t_first = now() - t;
  double *t_iter = calloc(iterations, sizeof *t_iter);
  for (int i = 0; i < iterations; i++) {
    t = now();
    CHECK(sproj_recon_iterate(recon, 1, NULL, NULL));
    CHECK(sproj_wait_all());
    t_iter[i] = now() - t;
  }
  double iter = median(t_iter, iterations);

  /* ---- the projections of the same subsets alone: forward into a scratch vector, back into a scratch image ---- */
  float *scratch_img = pinned((size_t)nvox * sizeof(float));
  float *scratch_y = pinned((size_t)nlors * nbins * sizeof(float));
  memset(scratch_img, 0, (size_t)nvox * sizeof(float));
  sproj_image *simg;
  sproj_proj *sproj_;
  CHECK(sproj_image_register(&simg, scratch_img, dims, vs, origin));
  if (tof_on)
    CHECK(sproj_proj_register_tof(&sproj_, scratch_y, lors, nbins));
  else
    CHECK(sproj_proj_register(&sproj_, scratch_y, lors));
  int *list = malloc(((si.num_views + subsets - 1) / subsets) * sizeof *list), nl;
  /* pipelined (chained 0: StarPU runs them as their data allow), then in the OS-EM's order (chained 1: each subset's
   * forward projection waits for the back projection before it, as the update between them makes it wait; here
   * through the host, and the back projection reads what the forward one wrote, so it follows it as in the OS-EM) */
  double *t_proj = calloc(iterations + 1, sizeof *t_proj), pass[2];
  for (int chained = 0; chained < 2; chained++) {
    for (int r = 0; r <= iterations; r++) {
      CHECK(sproj_wait_all());
      t = now();
      for (int s = 0; s < subsets; s++) {
        CHECK(sproj_scanner_subset_views(scanner, subsets, s, list, &nl));
        if (tof_on) {
          CHECK(sproj_fwd_tof_sino_chunks(ximg, sproj_, views, list, nl, tof));
          CHECK(sproj_back_tof_sino_chunks(simg, sproj_, views, list, nl, tof));
        } else {
          CHECK(sproj_fwd_chunks(ximg, sproj_, views, list, nl));
          CHECK(sproj_back_chunks(simg, sproj_, views, list, nl));
        }
        if (chained)
          CHECK(sproj_wait_all());
      }
      CHECK(sproj_wait_all());
      t_proj[r] = now() - t; /* r = 0 is a warm-up */
    }
    pass[chained] = median(t_proj + 1, iterations);
  }
  double proj = pass[0], chain = pass[1];
  CHECK(sproj_image_sync(simg, SPROJ_SYNC_READ));

  /* ---- the host-array pattern: per subset, one-shot forward and back calls, ratio and update on the host ---- */
  double t_host = 0.0;
  if (host) {
    int64_t per_view = si.lors_per_view, max_sub = (int64_t)((si.num_views + subsets - 1) / subsets) * per_view;
    float *hxs = malloc((size_t)max_sub * 3 * sizeof(float)), *hxe = malloc((size_t)max_sub * 3 * sizeof(float));
    float *hp = malloc((size_t)max_sub * nbins * sizeof(float)), *hy = malloc((size_t)max_sub * nbins * sizeof(float));
    float *hm = malloc((size_t)max_sub * sizeof(float)), *ha = malloc((size_t)max_sub * nbins * sizeof(float));
    float *hx = malloc((size_t)nvox * sizeof(float)), *hbp = malloc((size_t)nvox * sizeof(float));
    float *hs = malloc((size_t)nvox * sizeof(float));
    for (int i = 0; i < nvox; i++)
      hx[i] = 1.0f;
    double t_h = 0.0;
    for (int s = 0; s < subsets; s++) {
      CHECK(sproj_scanner_subset_views(scanner, subsets, s, list, &nl));
      /* the subset's LORs and data as host arrays, as a framework holds them (not timed) */
      CHECK(sproj_scanner_view_lors(scanner, list, nl, hxs, hxe, 0));
      int64_t n = (int64_t)nl * per_view;
      for (int k = 0; k < nl; k++) {
        int64_t first;
        int64_t cnt;
        CHECK(sproj_chunks_range(views, list[k], &first, &cnt));
        memcpy(hy + (size_t)k * per_view * nbins, y + (size_t)first * nbins, (size_t)per_view * nbins * sizeof(float));
        memcpy(hm + (size_t)k * per_view, mult + first, (size_t)per_view * sizeof(float));
        memcpy(ha + (size_t)k * per_view * nbins, add + (size_t)first * nbins,
               (size_t)per_view * nbins * sizeof(float));
      }
      /* the subset's sensitivity (non-TOF back projection of m, as ours) would be computed once: not timed */
      memset(hs, 0, (size_t)nvox * sizeof(float));
      CHECK(sproj_pp_joseph3d_back(hxs, hxe, hs, origin, vs, hm, (size_t)n, dims, 0, PP_THREADS_PER_BLOCK));
      t = now();
      if (tof_on)
        CHECK(sproj_pp_joseph3d_tof_sino_fwd(hxs, hxe, hx, origin, vs, hp, (size_t)n, dims, tp.bin_width, &tp.sigma,
                                           &tp.center_offset, tp.num_sigmas, (short)nbins, 0, 0, 0,
                                           PP_THREADS_PER_BLOCK));
      else
        CHECK(sproj_pp_joseph3d_fwd(hxs, hxe, hx, origin, vs, hp, (size_t)n, dims, 0, PP_THREADS_PER_BLOCK));
      for (int64_t i = 0; i < n * nbins; i++) {
        float ybar = hm[i / nbins] * hp[i] + ha[i];
        hp[i] = ybar > 0.0f ? hm[i / nbins] * hy[i] / ybar : 0.0f;
      }
      memset(hbp, 0, (size_t)nvox * sizeof(float));
      if (tof_on)
        CHECK(sproj_pp_joseph3d_tof_sino_back(hxs, hxe, hbp, origin, vs, hp, (size_t)n, dims, tp.bin_width, &tp.sigma,
                                            &tp.center_offset, tp.num_sigmas, (short)nbins, 0, 0, 0,
                                            PP_THREADS_PER_BLOCK));
      else
        CHECK(sproj_pp_joseph3d_back(hxs, hxe, hbp, origin, vs, hp, (size_t)n, dims, 0, PP_THREADS_PER_BLOCK));
      for (int i = 0; i < nvox; i++)
        hx[i] = hs[i] > 0.0f ? hx[i] * hbp[i] / hs[i] : 0.0f;
      t_h += now() - t;
    }
    t_host = t_h;
    free(hxs), free(hxe), free(hp), free(hy), free(hm), free(ha), free(hx), free(hbp), free(hs);
  }

  printf("\n| step (%s%s, %d subsets) | seconds |\n| --- | ---: |\n", scanner_name, tof_on ? ", TOF" : "", subsets);
  printf("| sensitivities (once, at create) | %.3f |\n", t_create);
  printf("| first iteration (data and images reach the devices) | %.3f |\n", t_first);
  printf("| one OSEM iteration, resident (median of %d) | %.3f |\n", iterations, iter);
  printf("| its projections alone (fwd + back of every subset) | %.3f |\n", proj);
  printf("| share of the iteration that is not projection | %.1f%% |\n", 100.0 * (iter - proj) / iter);
  printf("| its projections subset after subset (a wait after each back projection) | %.3f |\n", chain);
  if (host)
    printf("| the iteration through one-shot calls with host arrays | %.3f (%.1fx the resident one) |\n", t_host,
           t_host / iter);

  CHECK(sproj_recon_destroy(recon));
  CHECK(sproj_model_destroy(model));
  CHECK(sproj_proj_unregister(sproj_));
  CHECK(sproj_image_unregister(simg));
  CHECK(sproj_proj_unregister(data));
  CHECK(sproj_image_unregister(ximg));
  CHECK(sproj_image_unregister(ph_img));
  CHECK(sproj_tof_unregister(tof));
  CHECK(sproj_chunks_destroy(views));
  CHECK(sproj_lors_unregister(lors));
  CHECK(sproj_scanner_destroy(scanner));
  CHECK(sproj_shutdown());
  free(list);
  free(t_iter);
  free(t_proj);
  return 0;
}
