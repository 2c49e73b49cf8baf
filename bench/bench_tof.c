/* SPDX-License-Identifier: Apache-2.0 */
/* bench_tof.c: TOF projections on the benchmark geometry with image and LORs registered and uploaded once: one TOF
 * subset (every 34th view: 8 views, 4.3 M LORs x 29 bins) forward and back, and 20 M listmode events (random LORs
 * of the sinogram, random bins) forward and back as one request and as chunks of 1 M events, and the same events
 * put in the order of sproj_lors_order as one request, and the events in random order with their order held by the
 * library (sproj_lors_hold_order) as one request. Prints checksums of the values, then a table. With
 * --parallelproj LIB (a CUDA build), libparallelproj's CUDA build times the same jobs on the same GPU after starproj
 * shuts down, all its data on the GPU, and its sinogram values are compared with starproj's.
 *
 * usage: bench_tof [--repeats N] [--warmups N] [--events N] [--devices any|gpu|cpu] [--small] [--reproducible]
 *                  [--parallelproj LIB] [--verbose] */
#include "config.h"
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"
#include "parallelproj_lib.h"
#ifdef SPROJ_USE_CUDA
#include <cuda_runtime.h>
#endif

/* --small: every 8th view, at most 200000 events */
#define SMALL_VIEW_STEP 8
#define SMALL_EVENTS 200000
/* events of a chunk of the chunked listmode runs */
#define CHUNK_EVENTS 1000000
/* rand()'s seed for the events' TOF bins */
#define BINS_SEED 777
/* repeats and warm-ups at most */
#define MAX_REPEATS 64

struct job {
  const char *name;
  int back, lm, per_chunk;
  sproj_proj *proj;
  sproj_chunks *chunks;
  int nchunks;
  double t_done, t_sync, reference;
};

static sproj_image *g_img, *g_back;
static sproj_tof *g_tof;

static void run_once(const struct job *j, double *t_done, double *t_sync)
{
  sproj_image *img = j->back ? g_back : g_img;
  double t0 = now();
  for (int c = 0; c < (j->per_chunk ? j->nchunks : 1); c++) {
    const sproj_chunks *ch = j->per_chunk ? j->chunks : NULL;
    int chunk = j->per_chunk ? c : SPROJ_ALL_CHUNKS;
    if (j->lm)
      CHECK(j->back ? sproj_back_tof_lm(img, j->proj, ch, chunk, g_tof) : sproj_fwd_tof_lm(img, j->proj, ch, chunk, g_tof));
    else
      CHECK(j->back ? sproj_back_tof_sino(img, j->proj, ch, chunk, g_tof)
                    : sproj_fwd_tof_sino(img, j->proj, ch, chunk, g_tof));
  }
  CHECK(sproj_wait_all());
  *t_done = now() - t0;
  if (j->back)
    CHECK(sproj_image_sync(img, SPROJ_SYNC_READ));
  else
    CHECK(sproj_proj_sync(j->proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
  *t_sync = now() - t0;
}

/* FNV-1a over the bits of n floats */
static uint64_t bits_hash(const float *v, int64_t n)
{
  uint64_t h = FNV1A_OFFSET;
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &v[i], sizeof u);
    for (int b = 0; b < (int)sizeof u; b++) {
      h ^= (u >> (8 * b)) & 0xffu; /* byte b */
      h *= FNV1A_PRIME;
    }
  }
  return h;
}

/* ---- libparallelproj's CUDA build on the same data (--parallelproj) ---- */
/* What it projects: the subset, its forward values (starproj's) and their back projection by starproj, the events in
 * random order and in sproj_lors_order's, their values; what it measured. */
struct pp_data {
  const float *xs, *xe, *image, *sino, *sproj_back, *exs, *exe, *oxs, *oxe, *lmv;
  const int16_t *bins, *obins;
  int64_t nlors, nevents;
  const int *n;
  const float *vs, *origin;
  struct sproj_tof_params par;
};
enum { PP_SINO_FWD, PP_SINO_BACK, PP_LM_FWD, PP_LM_BACK, PP_LMO_FWD, PP_LMO_BACK, PP_CALLS };
struct pp_result {
  double t[PP_CALLS];
  double rel_fwd, rel_back; /* relative L2 of starproj's sinogram forward values and back projection against its */
};

#ifdef SPROJ_USE_CUDA
static void *dev_copy(const void *host, size_t bytes)
{
  void *d = NULL;
  if (cudaMalloc(&d, bytes) != cudaSuccess || (host && cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess)) {
    fprintf(stderr, "bench_tof: cannot place %zu bytes on the GPU for libparallelproj\n", bytes);
    exit(1);
  }
  return d;
}

static double rel_l2(const float *a, const float *ref, int64_t n)
{
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double e = (double)a[i] - ref[i];
    num += e * e;
    den += (double)ref[i] * ref[i];
  }
  return sqrt(num / (den + TINY));
}

/* The arrays libparallelproj's calls take, on the GPU: the subset's LORs, the events in random order and in
 * sproj_lors_order's, the values the back projections project, the image's origin, voxel size and dimensions. */
enum {
  DEV_XS, DEV_XE, DEV_EXS, DEV_EXE, DEV_OXS, DEV_OXE, DEV_SINO, DEV_LMV, DEV_ORIGIN, DEV_VS, DEV_DIMS, DEV_SIGMA,
  DEV_OFFSET, DEV_ARRAYS
};

/* One call of libparallelproj (device pointers) and the GPU's end; back projections add into a zeroed image. */
static double pp_call(const struct pp_lib *pp, int call, float *const *dv, const int16_t *dbins, const int16_t *dobins,
                      const struct pp_data *d, float *dimg, float *dout)
{
  const struct sproj_tof_params *p = &d->par;
  const float *sigma = dv[DEV_SIGMA], *offset = dv[DEV_OFFSET];
  const short nb = (short)p->num_bins;
  const float *o = dv[DEV_ORIGIN], *v = dv[DEV_VS];
  const int *dn = (const int *)dv[DEV_DIMS];
  const int ordered = call == PP_LMO_FWD || call == PP_LMO_BACK;
  const float *exs = dv[ordered ? DEV_OXS : DEV_EXS], *exe = dv[ordered ? DEV_OXE : DEV_EXE];
  const int16_t *eb = ordered ? dobins : dbins;
  size_t nl = (size_t)d->nlors, ne = (size_t)d->nevents;
  if (call == PP_SINO_BACK || call == PP_LM_BACK || call == PP_LMO_BACK)
    cudaMemset(dout, 0, (size_t)d->n[0] * d->n[1] * d->n[2] * sizeof(float));
  cudaDeviceSynchronize();
  double t0 = now();
  switch (call) {
  case PP_SINO_FWD:
    pp->tof_sino_fwd(dv[DEV_XS], dv[DEV_XE], dimg, o, v, dout, nl, dn, p->bin_width, sigma, offset, p->num_sigmas, nb,
                     0, 0, 0, PP_THREADS_PER_BLOCK);
    break;
  case PP_SINO_BACK:
    pp->tof_sino_back(dv[DEV_XS], dv[DEV_XE], dout, o, v, dv[DEV_SINO], nl, dn, p->bin_width, sigma, offset,
                      p->num_sigmas, nb, 0, 0, 0, PP_THREADS_PER_BLOCK);
    break;
  case PP_LM_FWD:
  case PP_LMO_FWD:
    pp->tof_lm_fwd(exs, exe, dimg, o, v, dout, ne, dn, p->bin_width, sigma, offset, p->num_sigmas, eb, nb, 0, 0, 0,
                   PP_THREADS_PER_BLOCK);
    break;
  default:
    pp->tof_lm_back(exs, exe, dout, o, v, dv[DEV_LMV], ne, dn, p->bin_width, sigma, offset, p->num_sigmas, eb, nb, 0,
                    0, 0, PP_THREADS_PER_BLOCK);
  }
  cudaDeviceSynchronize();
  return now() - t0;
}

/* Times libparallelproj's six calls (median of repeats after warmups) with all its data on the GPU, and compares its
 * sinogram values with starproj's; 0, or -1 after a message. */
static int pp_cuda(const struct pp_lib *pp, const struct pp_data *d, int warmups, int repeats, struct pp_result *res)
{
  if (!pp->cuda_enabled()) {
    fprintf(stderr, "bench_tof: --parallelproj needs libparallelproj's CUDA build\n");
    return -1;
  }
  size_t nvox = (size_t)d->n[0] * d->n[1] * d->n[2], nvals = (size_t)d->nlors * d->par.num_bins;
  size_t lb = 3 * (size_t)d->nlors * sizeof(float), eb = 3 * (size_t)d->nevents * sizeof(float);
  float *dv[DEV_ARRAYS] = {
    [DEV_XS] = dev_copy(d->xs, lb),          [DEV_XE] = dev_copy(d->xe, lb),
    [DEV_EXS] = dev_copy(d->exs, eb),        [DEV_EXE] = dev_copy(d->exe, eb),
    [DEV_OXS] = dev_copy(d->oxs, eb),        [DEV_OXE] = dev_copy(d->oxe, eb),
    [DEV_SINO] = dev_copy(d->sino, nvals * sizeof(float)),
    [DEV_LMV] = dev_copy(d->lmv, (size_t)d->nevents * sizeof(float)),
    [DEV_ORIGIN] = dev_copy(d->origin, 3 * sizeof(float)), [DEV_VS] = dev_copy(d->vs, 3 * sizeof(float)),
    [DEV_DIMS] = dev_copy(d->n, 3 * sizeof(int)),
    [DEV_SIGMA] = dev_copy(&d->par.sigma, sizeof(float)), [DEV_OFFSET] = dev_copy(&d->par.center_offset, sizeof(float))};
  int16_t *dbins = dev_copy(d->bins, (size_t)d->nevents * sizeof(int16_t));
  int16_t *dobins = dev_copy(d->obins, (size_t)d->nevents * sizeof(int16_t));
  float *dimg = dev_copy(d->image, nvox * sizeof(float));
  float *dout = dev_copy(NULL, (nvals > nvox ? nvals : nvox) * sizeof(float));
  float *host = malloc((nvals > nvox ? nvals : nvox) * sizeof(float));
  if (!host) {
    fprintf(stderr, "bench_tof: out of memory\n");
    return -1;
  }
  for (int c = 0; c < PP_CALLS; c++) {
    double t[MAX_REPEATS];
    for (int r = 0; r < warmups; r++)
      pp_call(pp, c, dv, dbins, dobins, d, dimg, dout);
    for (int r = 0; r < repeats; r++)
      t[r] = pp_call(pp, c, dv, dbins, dobins, d, dimg, dout);
    res->t[c] = median(t, repeats);
    if (c == PP_SINO_FWD || c == PP_SINO_BACK) {
      size_t n = c == PP_SINO_FWD ? nvals : nvox;
      cudaMemcpy(host, dout, n * sizeof(float), cudaMemcpyDeviceToHost);
      if (c == PP_SINO_FWD)
        res->rel_fwd = rel_l2(d->sino, host, (int64_t)n);
      else
        res->rel_back = rel_l2(d->sproj_back, host, (int64_t)n);
    }
  }
  cudaError_t err = cudaGetLastError();
  for (int k = 0; k < DEV_ARRAYS; k++)
    cudaFree(dv[k]);
  cudaFree(dbins);
  cudaFree(dobins);
  cudaFree(dimg);
  cudaFree(dout);
  free(host);
  if (err != cudaSuccess) {
    fprintf(stderr, "bench_tof: libparallelproj's calls failed: %s\n", cudaGetErrorString(err));
    return -1;
  }
  return 0;
}
#endif

int main(int argc, char **argv)
{
  int repeats = 5, warmups = 2, small = 0, reproducible = 0, verbose = 0, devices = -1;
  static const char *const device_names[] = {"any", "gpu", "cpu"};
  static const unsigned device_masks[] = {SPROJ_DEVICE_ANY, SPROJ_DEVICE_CUDA, SPROJ_DEVICE_CPU};
  int64_t nevents = BENCH_EVENTS;
  const char *pp_path = NULL;
  static const struct option longopts[] = {
    {"repeats", required_argument, 0, 'r'}, {"warmups", required_argument, 0, 'w'},
    {"events", required_argument, 0, 'e'},  {"small", no_argument, 0, 'S'},
    {"reproducible", no_argument, 0, 'R'},  {"verbose", no_argument, 0, 'v'},
    {"devices", required_argument, 0, 'd'}, {"parallelproj", required_argument, 0, 'p'},
    {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
    switch (c) {
    case 'r': repeats = (int)option_number("bench_tof", "--repeats", optarg, 1, MAX_REPEATS); break;
    case 'w': warmups = (int)option_number("bench_tof", "--warmups", optarg, 0, MAX_REPEATS); break;
    case 'e': nevents = option_number("bench_tof", "--events", optarg, 1, 2000000000); break;
    case 'S': small = 1; break;
    case 'R': reproducible = 1; break;
    case 'v': verbose = 1; break;
    case 'd': devices = option_choice("bench_tof", "--devices", optarg, device_names, 3); break;
    case 'p': pp_path = optarg; break;
    case 'h':
      printf("usage: bench_tof [--repeats N] [--warmups N] [--events N] [--devices any|gpu|cpu] [--small]\n"
             "                 [--reproducible] [--parallelproj LIB] [--verbose]\n"
             "  times TOF-sinogram projections of one subset and TOF listmode projections of N events (default\n"
             "  20000000) on the benchmark scanner (--small: the small one); --devices: where projections may run\n"
             "  (any: CPU cores and GPUs; default: the library's choice); --reproducible: back projections in\n"
             "  reproducible mode; --parallelproj LIB: libparallelproj's CUDA build (the shared library LIB) on\n"
             "  the same data and GPU after starproj, its times in the table; --verbose: StarPU's own messages\n");
      return 0;
    default: return option_error("bench_tof", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return option_error("bench_tof", argv[optind]);
  if (!verbose)
    setenv("STARPU_SILENT", "1", 0);
  struct pp_lib pp = {0};
#ifdef SPROJ_USE_CUDA
  if (pp_path && pp_lib_open(&pp, pp_path, "bench_tof"))
    return 1;
#else
  if (pp_path) {
    fprintf(stderr, "bench_tof: --parallelproj needs a build with CUDA\n");
    return 2;
  }
#endif
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.reproducible = reproducible;
  CHECK(sproj_init(&cfg));
  if (devices >= 0)
    CHECK(sproj_set_devices(device_masks[devices]));
  struct sproj_scanner_params sp;
  int n[3];
  float vs[3], origin[3];
  benchmark_geometry(small, &sp, n, vs, origin);
  struct sproj_tof_params par = benchmark_tof();
  int view_step = BENCH_SUBSETS;
  if (small) {
    view_step = SMALL_VIEW_STEP;
    if (nevents > SMALL_EVENTS)
      nevents = SMALL_EVENTS;
  }
  const size_t nvox = (size_t)n[0] * n[1] * n[2];
  sproj_scanner *scn;
  struct sproj_sinogram_info info;
  CHECK(sproj_scanner_create(&scn, &sp));
  CHECK(sproj_scanner_info(scn, &info));
  /* one TOF subset: the views 0, view_step, 2 * view_step, ... */
  int nviews;
  int *views = malloc(((info.num_views + view_step - 1) / view_step) * sizeof *views);
  CHECK(sproj_scanner_subset_views(scn, view_step, 0, views, &nviews));
  const int64_t per_view = info.lors_per_view, nlors = nviews * per_view;
  long ncores = sysconf(_SC_NPROCESSORS_ONLN);
  printf("# starproj %d.%d.%d bench_tof: %d CPU workers, %d GPUs (%d workers), scheduler %s, projections on %s\n",
         SPROJ_VERSION_MAJOR, SPROJ_VERSION_MINOR, SPROJ_VERSION_PATCH, sproj_num_cpu_workers(), sproj_num_gpus(),
         sproj_num_workers(), sproj_scheduler_name(), devices >= 0 ? device_names[devices] : "default devices");
  printf("# TOF: %d bins of %.2f mm, sigma %.2f mm, %.0f sigmas; subset %d views x %lld LORs = %lld LORs; %lld events\n",
         par.num_bins, par.bin_width, par.sigma, par.num_sigmas, nviews, (long long)per_view, (long long)nlors,
         (long long)nevents);

  double t0 = now();
  float *xs, *xe, *exs, *exe, *image, *back, *sino, *lmv, *lmv2;
  int16_t *bins;
  CHECK(sproj_malloc_pinned((void **)&xs, 3 * nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&xe, 3 * nlors * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&exs, 3 * nevents * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&exe, 3 * nevents * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&bins, nevents * sizeof(int16_t)));
  CHECK(sproj_malloc_pinned((void **)&image, nvox * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&back, nvox * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&sino, nlors * par.num_bins * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&lmv, nevents * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&lmv2, nevents * sizeof(float)));
  CHECK(sproj_scanner_view_lors(scn, views, nviews, xs, xe, (int)ncores));
  random_events(scn, nevents, BENCH_EVENTS_SEED, exs, exe);
  srand(BINS_SEED);
  for (int64_t i = 0; i < nevents; i++)
    bins[i] = (int16_t)(rand() % par.num_bins);
  for (size_t v = 0; v < nvox; v++) {
    image[v] = (float)rand() / RAND_MAX;
    back[v] = 0.0f;
  }
  printf("# host data: %.2f s\n", now() - t0);

  /* the same events in the order of sproj_lors_order; the times are the calls' alone (pinning the copies' memory and
   * copying into them, ~0.4 s on a 16-core host, are not the ordering's) */
  float *oxs, *oxe, *lmo;
  int16_t *obins;
  int64_t *order = malloc(nevents * sizeof *order);
  if (!order) {
    fprintf(stderr, "bench_tof: out of memory\n");
    return 1;
  }
  CHECK(sproj_malloc_pinned((void **)&oxs, 3 * nevents * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&oxe, 3 * nevents * sizeof(float)));
  CHECK(sproj_malloc_pinned((void **)&obins, nevents * sizeof(int16_t)));
  CHECK(sproj_malloc_pinned((void **)&lmo, nevents * sizeof(float)));
  t0 = now();
  CHECK(sproj_lors_order(exs, exe, nevents, vs, order));
  double t_order = now() - t0;
  memcpy(oxs, exs, 3 * nevents * sizeof(float));
  memcpy(oxe, exe, 3 * nevents * sizeof(float));
  memcpy(obins, bins, nevents * sizeof(int16_t));
  t0 = now();
  CHECK(sproj_reorder(oxs, 3 * sizeof(float), nevents, order));
  CHECK(sproj_reorder(oxe, 3 * sizeof(float), nevents, order));
  CHECK(sproj_reorder(obins, sizeof(int16_t), nevents, order));
  printf("# events ordered (sproj_lors_order): %.2f s, reordered (endpoints x 2, bins): %.2f s\n", t_order, now() - t0);

  sproj_lors *lors, *events, *oevents, *hevents;
  sproj_proj *p_sino, *p_lm, *p_lm2, *p_lmo, *p_lmh;
  sproj_chunks *mchunks;
  CHECK(sproj_image_register(&g_img, image, n, vs, origin));
  CHECK(sproj_image_register(&g_back, back, n, vs, origin));
  CHECK(sproj_lors_register(&lors, xs, xe, nlors));
  CHECK(sproj_lors_register_events(&events, exs, exe, bins, nevents));
  CHECK(sproj_proj_register_tof(&p_sino, sino, lors, par.num_bins));
  CHECK(sproj_proj_register(&p_lm, lmv, events));
  CHECK(sproj_proj_register(&p_lm2, lmv2, events));
  CHECK(sproj_lors_register_events(&oevents, oxs, oxe, obins, nevents));
  CHECK(sproj_proj_register(&p_lmo, lmo, oevents));
  /* the events in random order once more, their order held by the library (its ordered copy made in the call) */
  float *lmh;
  CHECK(sproj_malloc_pinned((void **)&lmh, nevents * sizeof(float)));
  CHECK(sproj_lors_register_events(&hevents, exs, exe, bins, nevents));
  t0 = now();
  CHECK(sproj_lors_hold_order(hevents, vs));
  printf("# order held by the library (sproj_lors_hold_order): %.2f s\n", now() - t0);
  CHECK(sproj_proj_register(&p_lmh, lmh, hevents));
  CHECK(sproj_tof_register(&g_tof, &par, NULL, NULL, NULL));
  int nmchunks = (int)((nevents + CHUNK_EVENTS - 1) / CHUNK_EVENTS);
  CHECK(sproj_chunks_create_blocks(&mchunks, events, nmchunks));
  t0 = now();
  CHECK(sproj_image_upload(g_img, SPROJ_ALL_GPUS));
  CHECK(sproj_image_upload(g_back, SPROJ_ALL_GPUS));
  CHECK(sproj_lors_upload(lors, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
  CHECK(sproj_lors_upload(events, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
  CHECK(sproj_lors_upload(events, mchunks, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
  CHECK(sproj_lors_upload(oevents, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
  printf("# upload: %.2f s\n", now() - t0);

  struct job jobs[] = {
    {"TOF sino fwd (subset)", 0, 0, 0, p_sino, NULL, 1, 0, 0, 0.0669},
    {"TOF sino back (subset)", 1, 0, 0, p_sino, NULL, 1, 0, 0, 0.0276},
    {"TOF LM fwd, 1 request", 0, 1, 0, p_lm, NULL, 1, 0, 0, 0.0126},
    {"TOF LM fwd, 1M-event calls", 0, 1, 1, p_lm2, mchunks, nmchunks, 0, 0, 0.0126},
    {"TOF LM back, 1 request", 1, 1, 0, p_lm, NULL, 1, 0, 0, 0.0239},
    {"TOF LM back, 1M-event calls", 1, 1, 1, p_lm2, mchunks, nmchunks, 0, 0, 0.0239},
    {"TOF LM fwd, events in order", 0, 1, 0, p_lmo, NULL, 1, 0, 0, 0.0126},
    {"TOF LM back, events in order", 1, 1, 0, p_lmo, NULL, 1, 0, 0, 0.0239},
    {"TOF LM fwd, order held", 0, 1, 0, p_lmh, NULL, 1, 0, 0, 0.0126},
    {"TOF LM back, order held", 1, 1, 0, p_lmh, NULL, 1, 0, 0, 0.0239},
  };
  const int njobs = sizeof jobs / sizeof jobs[0];

  /* correctness before timing: chunked listmode equals one request, bit for bit */
  double d0, d1;
  run_once(&jobs[2], &d0, &d1);
  run_once(&jobs[3], &d0, &d1);
  run_once(&jobs[6], &d0, &d1);
  run_once(&jobs[8], &d0, &d1);
  int64_t differ = 0, odiffer = 0, hdiffer = 0, nonzero = 0;
  for (int64_t i = 0; i < nevents; i++) {
    differ += lmv[i] != lmv2[i];
    odiffer += lmo[i] != lmv[order[i]];
    hdiffer += lmh[i] != lmv[i];
    nonzero += lmv[i] != 0.0f;
  }
  printf("# check: listmode in 1M chunks vs one request: %lld of %lld differ; events in order: %lld differ; order "
         "held: %lld differ; %lld events non-zero\n", (long long)differ, (long long)nevents, (long long)odiffer,
         (long long)hdiffer, (long long)nonzero);
  if (differ || odiffer || hdiffer || !nonzero) {
    fprintf(stderr, "chunked or ordered listmode differs from one request (or nothing projected): not timing\n");
    return 1;
  }

  /* checksums that runs of other builds and settings can be compared with: the forward values' bits (FNV-1a) and
   * sums, the back projection of the subset's values to float rounding */
  run_once(&jobs[0], &d0, &d1);
  run_once(&jobs[1], &d0, &d1);
  CHECK(sproj_image_sync(g_back, SPROJ_SYNC_WRITE));
  uint64_t h_sino = bits_hash(sino, nlors * par.num_bins), h_lm = bits_hash(lmv, nevents);
  double s_sino = 0.0, s_lm = 0.0, s_back = 0.0;
  for (int64_t i = 0; i < nlors * par.num_bins; i++)
    s_sino += sino[i];
  for (int64_t i = 0; i < nevents; i++)
    s_lm += lmv[i];
  /* starproj's back projection of its forward values, which libparallelproj's is compared with */
  float *sproj_back = pp.handle ? malloc(nvox * sizeof(float)) : NULL;
  if (pp.handle && !sproj_back) {
    fprintf(stderr, "bench_tof: out of memory\n");
    return 1;
  }
  for (size_t v = 0; v < nvox; v++) {
    s_back += back[v];
    if (sproj_back)
      sproj_back[v] = back[v];
    back[v] = 0.0f;
  }
  printf("# checksums: sinogram forward %016llx (sum %.12e), back projection of it %.9e; listmode forward %016llx "
         "(sum %.12e)\n", (unsigned long long)h_sino, s_sino, s_back, (unsigned long long)h_lm, s_lm);

  for (int i = 0; i < njobs; i++) {
    double done[MAX_REPEATS], sync[MAX_REPEATS];
    for (int r = 0; r < warmups; r++)
      run_once(&jobs[i], &done[0], &sync[0]);
    for (int r = 0; r < repeats; r++)
      run_once(&jobs[i], &done[r], &sync[r]);
    jobs[i].t_done = median(done, repeats);
    jobs[i].t_sync = median(sync, repeats);
    fprintf(stderr, "# %-30s %.4f s\n", jobs[i].name, jobs[i].t_done);
  }
  /* libparallelproj's CUDA build on the same data and GPU, starproj's workers idle (its data stay registered, so
   * that the host arrays stay as they are); its listmode calls on the events in random order are the reference of
   * every listmode job (it has no order of its own), those in sproj_lors_order's order are printed beside */
  int pp_ok = 0;
#ifdef SPROJ_USE_CUDA
  if (pp.handle) {
    struct pp_result ppr = {{0}, 0.0, 0.0};
    struct pp_data pd = {xs, xe, image, sino, sproj_back, exs, exe, oxs, oxe, lmv, bins, obins, nlors, nevents,
                         n, vs, origin, par};
    pp_ok = pp_cuda(&pp, &pd, warmups, repeats, &ppr) == 0;
    if (!pp_ok)
      return 1;
    printf("# libparallelproj %s (CUDA build) on the same GPU: sinogram forward values relative L2 %.3g, back "
           "projection %.3g against starproj's; events in sproj_lors_order's order: forward %.4f s, back %.4f s\n",
           pp.version(), ppr.rel_fwd, ppr.rel_back, ppr.t[PP_LMO_FWD], ppr.t[PP_LMO_BACK]);
    static const int pp_of_job[] = {PP_SINO_FWD, PP_SINO_BACK, PP_LM_FWD, PP_LM_FWD, PP_LM_BACK,
                                    PP_LM_BACK,  PP_LM_FWD,    PP_LM_BACK, PP_LM_FWD, PP_LM_BACK};
    for (int i = 0; i < njobs; i++)
      jobs[i].reference = ppr.t[pp_of_job[i]];
  }
#endif
  printf("\n%-30s %6s %9s %9s %12s %10s %9s\n", "job (median of repeats)", "calls", "done s", "+host s", "parallelproj",
         "ratio", "speed-up");
  for (int i = 0; i < njobs; i++)
    printf("%-30s %6d %9.4f %9.4f %12.4f %10.2f %8.2fx\n", jobs[i].name, jobs[i].per_chunk ? jobs[i].nchunks : 1,
           jobs[i].t_done, jobs[i].t_sync, jobs[i].reference, jobs[i].t_done / jobs[i].reference,
           jobs[i].reference / jobs[i].t_done);
  printf("# done: tasks finished, data on the GPU (back: before the reduction); +host: result on the host\n"
         "# parallelproj: %s; ratio = done / parallelproj, speed-up = parallelproj / done\n",
         pp_ok ? "libparallelproj's CUDA build measured above, events in random order"
               : "libparallelproj 2.0.8 on one H200, events in random order (doc/benchmarks.md)");

  CHECK(sproj_chunks_destroy(mchunks));
  CHECK(sproj_proj_unregister(p_sino));
  CHECK(sproj_proj_unregister(p_lm));
  CHECK(sproj_proj_unregister(p_lm2));
  CHECK(sproj_proj_unregister(p_lmo));
  CHECK(sproj_proj_unregister(p_lmh));
  CHECK(sproj_lors_unregister(hevents));
  CHECK(sproj_lors_unregister(oevents));
  CHECK(sproj_tof_unregister(g_tof));
  CHECK(sproj_lors_unregister(lors));
  CHECK(sproj_lors_unregister(events));
  CHECK(sproj_image_unregister(g_img));
  CHECK(sproj_image_unregister(g_back));
  CHECK(sproj_shutdown());
  CHECK(sproj_scanner_destroy(scn));
  free(views);
  free(order);
  free(sproj_back);
  /* libparallelproj stays loaded until the process ends (its CUDA runtime's state outlives the calls) */
  return 0;
}
