/* SPDX-License-Identifier: Apache-2.0 */
/* bench_nontof.c: non-TOF forward and back projection on the benchmark geometry (Vision 600-like scanner, all
 * 146.3 M sinogram LORs, 215x215x71 image), with image and LORs registered and uploaded once: one request, 272
 * per-view chunks, and 2414 segment-viewgram chunks (every 8th view). Prints a table.
 *
 * usage: bench_nontof [--repeats N] [--warmups N] [--views-step S] [--only a,b,...] [--devices any|gpu|cpu] [--small]
 *                     [--reproducible] [--no-merge] [--no-layouts] [--task-lors N] [--upload all|one|none]
 *   --only: run only the jobs whose names contain one of the comma-separated words (the one-request jobs always
 *           run: they are the reference of the ratios) */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common.h"

/* The chunked requests' values against the one request's, relative (a zero value compared with TINY): the same
 * bits are expected, 1e-6 is a float rounding or two. */
#define CHUNKED_TOLERANCE 1e-6
#define TINY 1e-30

#define MAX_GPUS 8

enum mode { ONE_CALL, PER_CHUNK, BATCH, CHUNK_LIST };

struct scenario {
  const char *name;
  int back;
  enum mode mode;
  sproj_chunks *chunks; /* NULL: whole set */
  int nchunks;
  sproj_proj *proj;
  int64_t lors;
  double t_submit, t_done, t_sync; /* medians: submission returned, tasks done, result on the host */
  int64_t cpu_tasks, gpu_tasks;    /* tasks per repeat on CPU workers and on GPUs */
  int64_t gpu_lors[MAX_GPUS];      /* LORs per GPU (all repeats), to see how the GPUs shared the work */
};

static sproj_image *g_img, *g_back;
static int *g_list;

static void run_once(struct scenario *sc, double *t_submit, double *t_done, double *t_sync)
{
  sproj_image *img = sc->back ? g_back : g_img;
  double t0 = now();
  if (sc->mode == ONE_CALL)
    CHECK(sc->back ? sproj_back(img, sc->proj, NULL, SPROJ_ALL_CHUNKS) : sproj_fwd(img, sc->proj, NULL, SPROJ_ALL_CHUNKS));
  else if (sc->mode == PER_CHUNK || sc->mode == BATCH) {
    if (sc->mode == BATCH)
      CHECK(sproj_batch_begin());
    for (int c = 0; c < sc->nchunks; c++)
      CHECK(sc->back ? sproj_back(img, sc->proj, sc->chunks, c) : sproj_fwd(img, sc->proj, sc->chunks, c));
    if (sc->mode == BATCH)
      CHECK(sproj_batch_end());
  }
  else
    CHECK(sc->back ? sproj_back_chunks(img, sc->proj, sc->chunks, g_list, sc->nchunks)
                   : sproj_fwd_chunks(img, sc->proj, sc->chunks, g_list, sc->nchunks));
  *t_submit = now() - t0;
  CHECK(sproj_wait_all());
  *t_done = now() - t0;
  /* back: the reduction of the per-worker images and the copy home; fwd: the values of the chunks home */
  if (sc->back)
    CHECK(sproj_image_sync(img, SPROJ_SYNC_READ));
  else
    CHECK(sproj_proj_sync(sc->proj, sc->chunks, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
  *t_sync = now() - t0;
}

static void run(struct scenario *sc, int warmups, int repeats)
{
  double s[64], d[64], y[64];
  for (int r = 0; r < warmups; r++)
    run_once(sc, &s[0], &d[0], &y[0]);
  CHECK(sproj_stats_reset());
  for (int r = 0; r < repeats; r++)
    run_once(sc, &s[r], &d[r], &y[r]);
  sc->cpu_tasks = sc->gpu_tasks = 0;
  memset(sc->gpu_lors, 0, sizeof sc->gpu_lors);
  for (int w = 0; w < sproj_num_workers(); w++) {
    struct sproj_worker_stats st;
    int dev;
    CHECK(sproj_worker_stats(w, &st));
    *(st.is_gpu ? &sc->gpu_tasks : &sc->cpu_tasks) += st.tasks;
    dev = st.gpu;
    if (st.is_gpu && dev >= 0 && dev < MAX_GPUS)
      sc->gpu_lors[dev] += st.lors;
  }
  sc->cpu_tasks /= repeats;
  sc->gpu_tasks /= repeats;
  sc->t_submit = median(s, repeats);
  sc->t_done = median(d, repeats);
  sc->t_sync = median(y, repeats);
}

int main(int argc, char **argv)
{
  int repeats = 5, warmups = 2, view_step = 8, small = 0, reproducible = 0, verbose = 0, no_merge = 0, no_layouts = 0;
  long long task_lors = 0;
  /* --devices (-1: the default) and --upload (0: all three chunkings, 1: one, 2: none) */
  static const char *const device_names[] = {"any", "gpu", "cpu"}, *const upload_names[] = {"all", "one", "none"};
  static const unsigned device_masks[] = {SPROJ_DEVICE_ANY, SPROJ_DEVICE_CUDA, SPROJ_DEVICE_CPU};
  const char *only = NULL;
  int devices = -1, upload = 0;
  static const struct option longopts[] = {
    {"repeats", required_argument, 0, 'r'}, {"warmups", required_argument, 0, 'w'},
    {"only", required_argument, 0, 'o'},    {"devices", required_argument, 0, 'd'},
    {"views-step", required_argument, 0, 's'}, {"small", no_argument, 0, 'S'},
    {"reproducible", no_argument, 0, 'R'},  {"verbose", no_argument, 0, 'v'},
    {"no-merge", no_argument, 0, 'M'},    {"task-lors", required_argument, 0, 'T'},
    {"no-layouts", no_argument, 0, 'L'},   {"upload", required_argument, 0, 'U'},
    {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
    switch (c) {
    case 'r': repeats = (int)option_number("bench_nontof", "--repeats", optarg, 1, 64); break;
    case 'w': warmups = (int)option_number("bench_nontof", "--warmups", optarg, 0, 64); break;
    case 's': view_step = (int)option_number("bench_nontof", "--views-step", optarg, 1, BENCH_VIEWS); break;
    case 'o': only = optarg; break;
    case 'd': devices = option_choice("bench_nontof", "--devices", optarg, device_names, 3); break;
    case 'S': small = 1; break;
    case 'R': reproducible = 1; break;
    case 'M': no_merge = 1; break;
    case 'L': no_layouts = 1; break;
    case 'U': upload = option_choice("bench_nontof", "--upload", optarg, upload_names, 3); break;
    case 'T': task_lors = option_number("bench_nontof", "--task-lors", optarg, 1, UINT32_MAX); break;
    case 'v': verbose = 1; break;
    case 'h':
      printf("usage: bench_nontof [--repeats N] [--warmups N] [--views-step S] [--only a,b] [--devices any|gpu|cpu]\n"
             "                    [--small] [--reproducible] [--no-merge] [--no-layouts] [--task-lors N]\n"
             "                    [--upload all|one|none] [--verbose]\n"
             "  times whole-sinogram, per-view and segment-viewgram forward and back projections on the benchmark\n"
             "  scanner (--small: the small one); --reproducible: back projections in reproducible mode;\n"
             "  --no-merge: every call becomes tasks at once (sproj_config.merge_calls = 0);\n"
             "  --no-layouts: GPU tasks read the image as it is (sproj_config.image_layouts = 0);\n"
             "  --task-lors N: largest task in LORs (default: automatic);\n"
             "  --upload: copy the LORs to the GPUs before timing in all three chunkings (default), only in the\n"
             "            one-request one, or not at all (the first repeat then brings them);\n"
             "  --verbose: StarPU's own messages\n");
      return 0;
    default: return option_error("bench_nontof", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return option_error("bench_nontof", argv[optind]);
  if (!verbose)
    setenv("STARPU_SILENT", "1", 0);

  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.reproducible = reproducible;
  cfg.merge_calls = no_merge ? 0 : 1;
  cfg.image_layouts = no_layouts ? 0 : 1;
  cfg.task_lors = task_lors;
  CHECK(sproj_init(&cfg));
  if (devices >= 0)
    CHECK(sproj_set_devices(device_masks[devices]));
  struct sproj_scanner_params sp;
  int n[3];
  float vs[3], origin[3];
  benchmark_geometry(small, &sp, n, vs, origin);
  sproj_scanner *scn;
  struct sproj_sinogram_info sino;
  CHECK(sproj_scanner_create(&scn, &sp));
  CHECK(sproj_scanner_info(scn, &sino));
  const int nviews = sino.num_views, nseg = sino.num_segments, maxrd = sino.max_ring_difference;
  const int64_t nlors = sino.num_lors;
  const size_t nvox = (size_t)n[0] * n[1] * n[2];
  long ncores = sysconf(_SC_NPROCESSORS_ONLN);

  printf("# starproj %d.%d.%d bench_nontof: %d CPU workers, %d GPUs (%d workers in all), scheduler %s, projections "
         "on %s, task_lors %lld\n", SPROJ_VERSION_MAJOR, SPROJ_VERSION_MINOR, SPROJ_VERSION_PATCH,
         sproj_num_cpu_workers(), sproj_num_gpus(), sproj_num_workers(), sproj_scheduler_name(),
         devices >= 0 ? device_names[devices] : "default devices", (long long)sproj_get_task_lors());
  printf("# %d views x %d radial x %d planes = %lld LORs, image %dx%dx%d of %.2f mm\n", nviews, sino.num_radial_bins,
         sino.num_planes, (long long)nlors, n[0], n[1], n[2], vs[0]);

  double t0 = now();
  float *xs, *xe, *image, *back, *v_one, *v_view, *v_seg;
  CHECK(sproj_malloc_pinned((void **)&xs, 3 * nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&xe, 3 * nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&image, nvox * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&back, nvox * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&v_one, nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&v_view, nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&v_seg, nlors * sizeof(float)));
  CHECK(sproj_scanner_lors(scn, xs, xe, (int)ncores));
  srand(FIXED_SEED);
  for (size_t v = 0; v < nvox; v++)
    image[v] = (float)rand() / RAND_MAX;
  memset(back, 0, nvox * sizeof(float));
  for (int64_t i = 0; i < nlors; i++)
    v_one[i] = v_view[i] = v_seg[i] = NAN;
  printf("# host data: %.2f s\n", now() - t0);

  /* chunkings: views, and one view x one segment for every view_step-th view */
  int nsv = ((nviews + view_step - 1) / view_step) * nseg;
  int nmax = nsv > nviews ? nsv : nviews;
  int64_t *first = malloc(nmax * sizeof *first), *count = malloc(nmax * sizeof *count);
  g_list = malloc(nmax * sizeof *g_list);
  int64_t seg_lors = 0;
  int c = 0;
  for (int v = 0; v < nviews; v += view_step)
    for (int s = -maxrd; s <= maxrd; s++, c++) {
      int planes;
      CHECK(sproj_scanner_lor_index(scn, v, s, 0, 0, &first[c]));
      CHECK(sproj_scanner_segment_planes(scn, s, &planes));
      count[c] = (int64_t)planes * sino.num_radial_bins;
      seg_lors += count[c];
    }
  for (int i = 0; i < nsv; i++)
    g_list[i] = i;

  t0 = now();
  sproj_lors *lors;
  sproj_chunks *views, *segs;
  sproj_proj *p_one, *p_view, *p_seg;
  CHECK(sproj_image_register(&g_img, image, n, vs, origin));
  CHECK(sproj_image_register(&g_back, back, n, vs, origin));
  CHECK(sproj_lors_register(&lors, xs, xe, nlors));
  CHECK(sproj_chunks_create_ranges(&segs, lors, nsv, first, count));
  CHECK(sproj_scanner_chunks_views(&views, scn, lors));
  CHECK(sproj_proj_register(&p_one, v_one, lors));
  CHECK(sproj_proj_register(&p_view, v_view, lors));
  CHECK(sproj_proj_register(&p_seg, v_seg, lors));
  printf("# registration (with the finite-coordinate check): %.2f s\n", now() - t0);

  t0 = now();
  CHECK(sproj_image_upload(g_img, SPROJ_ALL_GPUS));
  CHECK(sproj_image_upload(g_back, SPROJ_ALL_GPUS));
  int uploads = upload == 0 ? 3 : upload == 1;
  if (uploads > 0)
    CHECK(sproj_lors_upload(lors, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
  if (uploads > 1) {
    CHECK(sproj_lors_upload(lors, views, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
    CHECK(sproj_lors_upload(lors, segs, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
  }
  printf("# upload of image and %d x %.2f GB of LORs: %.2f s\n", uploads, 2 * 12.0 * nlors / 1e9, now() - t0);

  struct scenario scen[] = {
    {"fwd 1 request", 0, ONE_CALL, NULL, 1, p_one, nlors, 0, 0, 0, 0, 0, {0}},
    {"fwd per view (calls)", 0, PER_CHUNK, views, nviews, p_view, nlors, 0, 0, 0, 0, 0, {0}},
    {"fwd seg-viewgram (calls)", 0, PER_CHUNK, segs, nsv, p_seg, seg_lors, 0, 0, 0, 0, 0, {0}},
    {"fwd seg-viewgram (batch)", 0, BATCH, segs, nsv, p_seg, seg_lors, 0, 0, 0, 0, 0, {0}},
    {"fwd seg-viewgram (1 list)", 0, CHUNK_LIST, segs, nsv, p_seg, seg_lors, 0, 0, 0, 0, 0, {0}},
    {"back 1 request", 1, ONE_CALL, NULL, 1, p_one, nlors, 0, 0, 0, 0, 0, {0}},
    {"back per view (calls)", 1, PER_CHUNK, views, nviews, p_view, nlors, 0, 0, 0, 0, 0, {0}},
    {"back seg-viewgram (calls)", 1, PER_CHUNK, segs, nsv, p_seg, seg_lors, 0, 0, 0, 0, 0, {0}},
    {"back seg-viewgram (batch)", 1, BATCH, segs, nsv, p_seg, seg_lors, 0, 0, 0, 0, 0, {0}},
    {"back seg-viewgram (1 list)", 1, CHUNK_LIST, segs, nsv, p_seg, seg_lors, 0, 0, 0, 0, 0, {0}},
  };
  const int nscen = sizeof scen / sizeof scen[0];

  /* correctness before timing: every chunking gives the one-request values */
  double tc = now();
  for (int i = 0; i < 3; i++) {
    double t1, t2, t3;
    run_once(&scen[i], &t1, &t2, &t3);
  }
  double maxrel_view = 0.0, maxrel_seg = 0.0;
  int64_t unwritten = 0;
  for (int64_t i = 0; i < nlors; i++) {
    if (isnan(v_one[i]) || isnan(v_view[i]))
      unwritten++;
    double d = fabs((double)v_view[i] - v_one[i]) / (fabs(v_one[i]) + TINY);
    if (d > maxrel_view)
      maxrel_view = d;
  }
  for (int v = 0; v < nviews; v += view_step)
    for (int s = -maxrd; s <= maxrd; s++) {
      int64_t f, cnt;
      int planes;
      CHECK(sproj_scanner_lor_index(scn, v, s, 0, 0, &f));
      CHECK(sproj_scanner_segment_planes(scn, s, &planes));
      cnt = (int64_t)planes * sino.num_radial_bins;
      for (int64_t i = f; i < f + cnt; i++) {
        if (isnan(v_seg[i]))
          unwritten++;
        double d = fabs((double)v_seg[i] - v_one[i]) / (fabs(v_one[i]) + TINY);
        if (d > maxrel_seg)
          maxrel_seg = d;
      }
    }
  printf("# check: per-view vs one request max relative difference %.3g, segment-viewgram %.3g, unwritten %lld "
         "(%.1f s)\n",
         maxrel_view, maxrel_seg, (long long)unwritten, now() - tc);
  if (unwritten || maxrel_view > CHUNKED_TOLERANCE || maxrel_seg > CHUNKED_TOLERANCE) {
    fprintf(stderr, "chunked results differ from the one-request result: not timing\n");
    return 1;
  }
  /* sums that runs under other settings (memory limits, schedulers, devices) can be compared with: the forward
   * values are the same bits everywhere, the back projection of them agrees to float rounding */
  double fwd_sum = 0.0, back_sum = 0.0;
  for (int64_t i = 0; i < nlors; i++)
    fwd_sum += v_one[i];
  CHECK(sproj_back(g_back, p_one, NULL, SPROJ_ALL_CHUNKS));
  CHECK(sproj_image_sync(g_back, SPROJ_SYNC_WRITE));
  for (size_t v = 0; v < nvox; v++) {
    back_sum += back[v];
    back[v] = 0.0f;
  }
  printf("# checksums: forward values %.12e, back projection of them %.12e\n", fwd_sum, back_sum);

  /* StarPU calibrates its performance models on the first runs (warm-ups), then the timed repeats */
  int selected[16];
  for (int i = 0; i < nscen; i++) {
    selected[i] = scen[i].mode == ONE_CALL || !only;
    for (const char *w = only; w && *w && !selected[i];) {
      size_t len = strcspn(w, ",");
      char word[64];
      snprintf(word, sizeof word, "%.*s", (int)len, w);
      selected[i] = len > 0 && strstr(scen[i].name, word) != NULL;
      w += len + (w[len] == ',');
    }
  }
  for (int i = 0; i < nscen; i++) {
    if (!selected[i])
      continue;
    run(&scen[i], warmups, repeats);
    fprintf(stderr, "# %-28s %.4f s\n", scen[i].name, scen[i].t_done);
  }

  printf("\n%-28s %6s %10s %9s %9s %9s %9s %9s %8s %6s\n", "job (median of repeats)", "calls", "LORs", "CPU tasks",
         "GPU tasks", "submit s", "done s", "+host s", "s/M LORs", "ratio");
  for (int i = 0; i < nscen; i++) {
    if (!selected[i])
      continue;
    const struct scenario *base = &scen[scen[i].back ? nscen / 2 : 0];
    double rate = scen[i].t_done / (scen[i].lors / 1e6), base_rate = base->t_done / (base->lors / 1e6);
    int calls = scen[i].mode == PER_CHUNK || scen[i].mode == BATCH ? scen[i].nchunks : 1;
    printf("%-28s %6d %10lld %9lld %9lld %9.4f %9.4f %9.4f %8.5f %6.2f\n", scen[i].name, calls,
           (long long)scen[i].lors, (long long)scen[i].cpu_tasks, (long long)scen[i].gpu_tasks, scen[i].t_submit,
           scen[i].t_done, scen[i].t_sync, rate, rate / base_rate);
  }
  printf("# done: all tasks finished (back: before the reduction); +host: result on the host (back: reduced)\n"
         "# ratio: seconds per LOR relative to the one-request run of the same direction\n");
  if (sproj_num_gpus() > 1) {
    printf("# share of the LORs each GPU projected (%%, GPU 0 first):\n");
    for (int i = 0; i < nscen; i++) {
      int64_t total = 0;
      if (!selected[i])
        continue;
      for (int d = 0; d < MAX_GPUS; d++)
        total += scen[i].gpu_lors[d];
      printf("#   %-28s", scen[i].name);
      for (int d = 0; d < sproj_num_gpus() && d < MAX_GPUS; d++)
        printf(" %5.1f", total ? 100.0 * scen[i].gpu_lors[d] / total : 0.0);
      printf("\n");
    }
  }

  CHECK(sproj_chunks_destroy(views));
  CHECK(sproj_chunks_destroy(segs));
  CHECK(sproj_proj_unregister(p_one));
  CHECK(sproj_proj_unregister(p_view));
  CHECK(sproj_proj_unregister(p_seg));
  CHECK(sproj_lors_unregister(lors));
  CHECK(sproj_image_unregister(g_img));
  CHECK(sproj_image_unregister(g_back));
  CHECK(sproj_shutdown());
  CHECK(sproj_scanner_destroy(scn));
  free(first);
  free(count);
  free(g_list);
  return 0;
}
