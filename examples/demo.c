/* SPDX-License-Identifier: Apache-2.0 */
/* demo.c: a small ring scanner and a phantom registered once; forward and back projections view by view on every
 * worker StarPU finds, a few MLEM iterations on top, TOF sinogram and listmode projections, and what ran where. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common.h"

/* cylinder of radius 50 mm (value 1) with a hot ball (4) and a cold ball (0) */
static void phantom(float *img, const int n[3], const float vs[3], const float origin[3])
{
  for (int i = 0; i < n[0]; i++)
    for (int j = 0; j < n[1]; j++)
      for (int k = 0; k < n[2]; k++) {
        double x = origin[0] + i * vs[0], y = origin[1] + j * vs[1], z = origin[2] + k * vs[2];
        float v = x * x + y * y <= 50.0 * 50.0 ? 1.0f : 0.0f;
        if ((x - 20) * (x - 20) + (y - 10) * (y - 10) + z * z <= 12.0 * 12.0)
          v = 4.0f;
        if ((x + 25) * (x + 25) + (y + 5) * (y + 5) + z * z <= 10.0 * 10.0)
          v = 0.0f;
        img[((size_t)i * n[1] + j) * n[2] + k] = v;
      }
}

/* one projection of every view, a call per view (what a framework asking for viewgrams does) */
static void fwd_views(sproj_image *img, sproj_proj *proj, sproj_chunks *views, int nviews)
{
  for (int v = 0; v < nviews; v++)
    CHECK(sproj_fwd(img, proj, views, v));
}

static void back_views(sproj_image *img, sproj_proj *proj, sproj_chunks *views, int nviews)
{
  for (int v = 0; v < nviews; v++)
    CHECK(sproj_back(img, proj, views, v));
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {{"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  int verbose = 0;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
    if (c == 'v') {
      verbose = 1;
    } else if (c == 'h') {
      printf("usage: demo [--verbose]\n  a small ring scanner and a phantom: projections view by view, a few MLEM\n"
             "  iterations, TOF sinogram and listmode projections, and what ran where; --verbose: StarPU's messages\n");
      return 0;
    } else {
      return option_error("demo", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return option_error("demo", argv[optind]);
  if (!verbose)
    setenv("STARPU_SILENT", "1", 0);
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  CHECK(sproj_init(&cfg));
  printf("starproj demo: %d CPU workers, %d GPUs, scheduler %s\n", sproj_num_cpu_workers(), sproj_num_gpus(),
         sproj_scheduler_name());

  /* the library's small preset scanner and its sinogram, [view][segment][axial][radial] */
  struct sproj_scanner_params sp;
  sproj_scanner *scn;
  struct sproj_sinogram_info sino;
  CHECK(sproj_scanner_preset("small", &sp));
  CHECK(sproj_scanner_create(&scn, &sp));
  CHECK(sproj_scanner_info(scn, &sino));
  const int nviews = sino.num_views;
  const int64_t nlors = sino.num_lors;
  const int n[3] = {64, 64, 16};
  const float vs[3] = {2.0f, 2.0f, 2.0f};
  const float origin[3] = {-63.0f, -63.0f, -15.0f};
  const size_t nvox = (size_t)n[0] * n[1] * n[2];
  printf("scanner: %d detectors x %d rings, %d views x %d radial bins x %d planes = %lld LORs; image %dx%dx%d\n",
         sino.num_detectors, sino.num_rings, nviews, sino.num_radial_bins, sino.num_planes, (long long)nlors, n[0],
         n[1], n[2]);

  /* pinned host buffers: copies to and from GPUs run asynchronously */
  float *xs, *xe, *truth, *x, *sens, *corr, *data, *expect, *ratio, *ones;
  CHECK(sproj_malloc_pinned((void **)&xs, 3 * nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&xe, 3 * nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&truth, nvox * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&x, nvox * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&sens, nvox * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&corr, nvox * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&data, nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&expect, nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&ratio, nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&ones, nlors * sizeof(float)));
  CHECK(sproj_scanner_lors(scn, xs, xe, 4));
  phantom(truth, n, vs, origin);
  for (size_t v = 0; v < nvox; v++) {
    x[v] = 1.0f;
    sens[v] = 0.0f;
    corr[v] = 0.0f;
  }
  for (int64_t i = 0; i < nlors; i++)
    ones[i] = 1.0f;

  /* register once */
  sproj_image *img_truth, *img_x, *img_sens, *img_corr;
  sproj_lors *lors;
  sproj_proj *p_data, *p_expect, *p_ratio, *p_ones;
  sproj_chunks *views;
  CHECK(sproj_image_register(&img_truth, truth, n, vs, origin));
  CHECK(sproj_image_register(&img_x, x, n, vs, origin));
  CHECK(sproj_image_register(&img_sens, sens, n, vs, origin));
  CHECK(sproj_image_register(&img_corr, corr, n, vs, origin));
  CHECK(sproj_lors_register(&lors, xs, xe, nlors));
  CHECK(sproj_proj_register(&p_data, data, lors));
  CHECK(sproj_proj_register(&p_expect, expect, lors));
  CHECK(sproj_proj_register(&p_ratio, ratio, lors));
  CHECK(sproj_proj_register(&p_ones, ones, lors));
  CHECK(sproj_scanner_chunks_views(&views, scn, lors)); /* chunk v = view v */

  /* step 1: allocate + copy what stays on the GPUs (no-ops without GPUs) */
  double t0 = now();
  CHECK(sproj_lors_upload(lors, views, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
  CHECK(sproj_image_upload(img_truth, SPROJ_ALL_GPUS));
  printf("upload of LORs and phantom: %.3f s\n", now() - t0);

  /* step 2: compute, view by view */
  t0 = now();
  fwd_views(img_truth, p_data, views, nviews);
  CHECK(sproj_proj_sync(p_data, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
  double sum = 0.0;
  for (int64_t i = 0; i < nlors; i++)
    sum += data[i];
  printf("forward projection of the phantom, %d calls: %.3f s (sum of projections %.6g)\n", nviews, now() - t0, sum);
  t0 = now();
  back_views(img_sens, p_ones, views, nviews);
  CHECK(sproj_image_sync(img_sens, SPROJ_SYNC_READ));
  printf("back projection of ones (sensitivity), %d calls: %.3f s\n", nviews, now() - t0);

  /* MLEM: x <- x / sens * back(data / fwd(x)); only images that the host changed travel again */
  double err0 = 0.0, norm = 0.0;
  for (size_t v = 0; v < nvox; v++) {
    err0 += (x[v] - truth[v]) * (x[v] - truth[v]);
    norm += truth[v] * truth[v];
  }
  printf("MLEM iteration 0: relative error %.4f\n", sqrt(err0 / norm));
  for (int it = 1; it <= 5; it++) {
    t0 = now();
    fwd_views(img_x, p_expect, views, nviews);
    CHECK(sproj_proj_sync(p_expect, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
    CHECK(sproj_proj_sync(p_ratio, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_WRITE));
    for (int64_t i = 0; i < nlors; i++)
      ratio[i] = expect[i] > 0.0f ? data[i] / expect[i] : 0.0f;
    CHECK(sproj_image_sync(img_corr, SPROJ_SYNC_WRITE));
    memset(corr, 0, nvox * sizeof *corr);
    back_views(img_corr, p_ratio, views, nviews);
    CHECK(sproj_image_sync(img_corr, SPROJ_SYNC_READ));
    CHECK(sproj_image_sync(img_x, SPROJ_SYNC_WRITE));
    double err = 0.0;
    for (size_t v = 0; v < nvox; v++) {
      x[v] = sens[v] > 0.0f ? x[v] * corr[v] / sens[v] : 0.0f;
      err += (x[v] - truth[v]) * (x[v] - truth[v]);
    }
    printf("MLEM iteration %d: relative error %.4f (%.3f s)\n", it, sqrt(err / norm), now() - t0);
  }

  /* TOF: the phantom's TOF sinogram (13 bins of 20 mm, sigma 15 mm), whose bins add up to the non-TOF data, and
   * listmode events drawn on random LORs, projected forward and back */
  struct sproj_tof_params tpar = {20.0f, 13, 3.0f, 15.0f, 0.0f};
  sproj_tof *tof;
  sproj_proj *p_tof;
  float *tof_sino = malloc((size_t)nlors * tpar.num_bins * sizeof *tof_sino);
  CHECK(sproj_tof_register(&tof, &tpar, NULL, NULL, NULL));
  CHECK(sproj_proj_register_tof(&p_tof, tof_sino, lors, tpar.num_bins));
  t0 = now();
  for (int v = 0; v < nviews; v++)
    CHECK(sproj_fwd_tof_sino(img_truth, p_tof, views, v, tof));
  CHECK(sproj_proj_sync(p_tof, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
  double tof_sum = 0.0;
  for (int64_t i = 0; i < nlors * tpar.num_bins; i++)
    tof_sum += tof_sino[i];
  printf("TOF sinogram of the phantom (%d bins), %d calls: %.3f s (sum %.6g, non-TOF sum %.6g)\n", tpar.num_bins,
         nviews, now() - t0, tof_sum, sum);

  const int64_t nevents = 100000;
  float *exs = malloc(3 * nevents * sizeof *exs), *exe = malloc(3 * nevents * sizeof *exe);
  float *ev_values = malloc(nevents * sizeof *ev_values), *lm_back = calloc(nvox, sizeof *lm_back);
  int16_t *ev_bins = malloc(nevents * sizeof *ev_bins);
  random_events(scn, nevents, 99, exs, exe); /* detector pairs turned into LORs */
  for (int64_t i = 0; i < nevents; i++)
    ev_bins[i] = (int16_t)(i % tpar.num_bins);
  sproj_lors *events;
  sproj_proj *p_events;
  sproj_chunks *ev_chunks;
  sproj_image *img_lm;
  CHECK(sproj_lors_register_events(&events, exs, exe, ev_bins, nevents));
  CHECK(sproj_proj_register(&p_events, ev_values, events));
  CHECK(sproj_chunks_create_blocks(&ev_chunks, events, 10));
  CHECK(sproj_image_register(&img_lm, lm_back, n, vs, origin));
  t0 = now();
  for (int c = 0; c < 10; c++) /* events arrive in chunks */
    CHECK(sproj_fwd_tof_lm(img_truth, p_events, ev_chunks, c, tof));
  CHECK(sproj_back_tof_lm(img_lm, p_events, NULL, SPROJ_ALL_CHUNKS, tof));
  CHECK(sproj_image_sync(img_lm, SPROJ_SYNC_READ));
  double ev_sum = 0.0, back_sum = 0.0;
  for (int64_t i = 0; i < nevents; i++)
    ev_sum += ev_values[i];
  for (size_t v = 0; v < nvox; v++)
    back_sum += lm_back[v];
  printf("TOF listmode: %lld events forward (10 chunks) and back: %.3f s (sum of event values %.6g, of the back "
         "projection %.6g)\n", (long long)nevents, now() - t0, ev_sum, back_sum);
  CHECK(sproj_image_unregister(img_lm));
  CHECK(sproj_chunks_destroy(ev_chunks));
  CHECK(sproj_proj_unregister(p_events));
  CHECK(sproj_lors_unregister(events));
  CHECK(sproj_proj_unregister(p_tof));
  CHECK(sproj_tof_unregister(tof));
  free(tof_sino);
  free(exs);
  free(exe);
  free(ev_values);
  free(lm_back);
  free(ev_bins);

  /* what ran where */
  printf("\n%-40s %8s %12s\n", "worker", "tasks", "LORs");
  for (int w = 0; w < sproj_num_workers(); w++) {
    struct sproj_worker_stats st;
    CHECK(sproj_worker_stats(w, &st));
    printf("%-40s %8lld %12lld\n", st.name, (long long)st.tasks, (long long)st.lors);
  }

  /* step 3: release and unregister */
  CHECK(sproj_image_release(img_truth, SPROJ_ALL_GPUS));
  CHECK(sproj_lors_release(lors, views, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
  CHECK(sproj_chunks_destroy(views));
  CHECK(sproj_proj_unregister(p_data));
  CHECK(sproj_proj_unregister(p_expect));
  CHECK(sproj_proj_unregister(p_ratio));
  CHECK(sproj_proj_unregister(p_ones));
  CHECK(sproj_lors_unregister(lors));
  CHECK(sproj_image_unregister(img_truth));
  CHECK(sproj_image_unregister(img_x));
  CHECK(sproj_image_unregister(img_sens));
  CHECK(sproj_image_unregister(img_corr));
  float *bufs[] = {truth, x, sens, corr};
  for (int b = 0; b < 4; b++)
    CHECK(sproj_free_pinned(bufs[b], nvox * sizeof(float)));
  float *pbufs[] = {data, expect, ratio, ones};
  for (int b = 0; b < 4; b++)
    CHECK(sproj_free_pinned(pbufs[b], nlors * sizeof(float)));
  CHECK(sproj_free_pinned(xs, 3 * nlors * sizeof(float)));
  CHECK(sproj_free_pinned(xe, 3 * nlors * sizeof(float)));
  CHECK(sproj_scanner_destroy(scn));
  CHECK(sproj_shutdown());
  return 0;
}
