/* SPDX-License-Identifier: Apache-2.0 */
/* workloads.c: the side of starproj-bench that runs inside a configuration's process: the scales and
 * workloads, their setup, timed runs and checksums, and the lines of StarPU's profiling printed for the driver. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <starpu.h>
#include <starpu_profiling.h>
#include "../common.h"
#include "harness.h"

/* the checksums weigh value i by 1 + i % CHECKSUM_WEIGHTS, so that values swapped between places change them */
#define CHECKSUM_WEIGHTS 7
/* the 16-bit golden-ratio multiplier (2^16 / phi): listmode events' TOF bins spread from their index */
#define GOLDEN_HASH16 40503u
/* how often the memory sampler looks at the GPUs' memory, in microseconds */
#define SAMPLE_US 500

const struct scale scales[] = {
  {"tiny", "small", 4, 33, {32, 32, 8}, 4.0f, 20000, 4, 4, 4, {15.0f, 15, 3.0f, 12.0f, 0.0f}},
  {"small", "small", 0, 0, {SMALL_IMAGE_XY, SMALL_IMAGE_XY, SMALL_IMAGE_Z}, SMALL_VOXEL_MM, 200000, 8, 1, 8,
   {SMALL_TOF_BIN_MM, SMALL_TOF_BINS, BENCH_TOF_SIGMAS, SMALL_TOF_SIGMA_MM, 0.0f}},
  {"full", "vision600", 0, 0, {BENCH_IMAGE_XY, BENCH_IMAGE_XY, BENCH_IMAGE_Z}, BENCH_VOXEL_MM, 40000000, BENCH_SUBSETS,
   8, 16, {BENCH_TOF_BIN_MM, BENCH_TOF_BINS, BENCH_TOF_SIGMAS, BENCH_TOF_SIGMA_MM, 0.0f}},
};
const struct workload workloads[] = {
  {"fwd-whole", "forward projection of the whole sinogram, one call", 0, 0},
  {"back-whole", "back projection of the whole sinogram, one call", 0, 0},
  {"fwd-views", "forward projection, one call per view", 0, 0},
  {"back-views", "back projection, one call per view", 0, 0},
  {"fwd-segvg", "forward projection, one call per segment viewgram", 0, 0},
  {"back-segvg", "back projection, one call per segment viewgram", 0, 0},
  {"fwd-segvg-batch", "forward, one call per segment viewgram inside sproj_batch_begin/end", 0, 0},
  {"back-segvg-batch", "back, one call per segment viewgram inside sproj_batch_begin/end", 0, 0},
  {"tof-sino", "TOF sinogram forward + back projection of one OSEM subset's views", 0, 0},
  {"tof-lm", "TOF listmode forward + back projection of random events", 0, 0},
  {"osem", "one OSEM iteration (sproj_recon_*), non-TOF, with m and a", 0, 0},
  {"cold", "forward + back of the whole sinogram with no data resident on the GPUs (transfers paid)", 0, 0},
  {"memlimit", "forward + back of the whole sinogram, STARPU_LIMIT_CUDA_MEM below the data size", 1, 0},
  {"threads", "many host threads submitting per-view forward + back calls at once", 0, 0},
  {"fwd-owned", "forward projection of the whole sinogram, blocks homed on the devices; values left where made", 0, 1},
  {"tof-sino-owned", "tof-sino, views homed on the devices; values left where made, image summed on GPU 0", 0, 1},
  {"tof-lm-owned", "tof-lm, event blocks homed on the devices; values left where made, image summed on GPU 0", 0, 1},
  {"osem-tof", "one OSEM iteration (sproj_recon_*), TOF sinogram, with m and a", 0, 1},
};

/* everything one configuration's process holds */
static struct {
  const struct scale *sc;
  int workload; /* index into workloads */
  int nthreads;
  sproj_scanner *scanner;
  struct sproj_sinogram_info si;
  float origin[3], vs[3];
  int nvox;
  float *xs, *xe;             /* LOR endpoints (pinned) */
  int64_t nlors;              /* LORs of the set in use */
  sproj_lors *lors;
  sproj_chunks *chunks;       /* views, segment viewgrams, ... (NULL: whole set) */
  int nchunks;
  float *phantom, *backbuf, *y, *y2;
  sproj_image *img, *back;
  sproj_proj *proj, *proj2;
  sproj_tof *tof;
  int16_t *bins;
  /* osem */
  float *mult, *add, *x;
  sproj_model *model;
  sproj_recon *recon;
  sproj_image *ximg;
  int64_t nvalues;            /* values of proj */
  int owned;                  /* the chunks are homed on the devices (the *-owned workloads) */
} W;

/* The scale's scanner: a preset, for tiny with fewer rings (TINY_RING_MM apart, centred on 0) and radial bins. */
#define TINY_RING_MM 4.0
static void make_scanner(const struct scale *sc, sproj_scanner **scanner)
{
  struct sproj_scanner_params sp;
  CHECK(sproj_scanner_preset(sc->scanner, &sp));
  if (sc->rings) {
    sp.num_rings = sc->rings;
    for (int r = 0; r < sp.num_rings; r++)
      sp.ring_z[r] = (r - 0.5 * (sp.num_rings - 1)) * TINY_RING_MM;
    sp.max_ring_difference = -1;
  }
  if (sc->radial)
    sp.num_radial_bins = sc->radial;
  CHECK(sproj_scanner_create(scanner, &sp));
}

static void *pinned(size_t bytes)
{
  void *p = NULL;
  CHECK(sproj_malloc_pinned(&p, bytes));
  return p;
}

/* The LORs of the whole sinogram, registered, with a chunking by views. */
static void setup_sinogram(void)
{
  W.nlors = W.si.num_lors;
  W.xs = pinned((size_t)W.nlors * 3 * sizeof(float));
  W.xe = pinned((size_t)W.nlors * 3 * sizeof(float));
  CHECK(sproj_scanner_lors(W.scanner, W.xs, W.xe, 0));
  CHECK(sproj_lors_register(&W.lors, W.xs, W.xe, W.nlors));
}

static void setup_images(void)
{
  W.phantom = pinned((size_t)W.nvox * sizeof(float));
  W.backbuf = pinned((size_t)W.nvox * sizeof(float));
  struct sproj_phantom ph;
  CHECK(sproj_phantom_default(&ph, W.sc->dims, W.vs, W.origin));
  CHECK(sproj_phantom_fill(&ph, W.phantom, W.sc->dims, W.vs, W.origin, 1));
  memset(W.backbuf, 0, (size_t)W.nvox * sizeof(float));
  CHECK(sproj_image_register(&W.img, W.phantom, W.sc->dims, W.vs, W.origin));
  CHECK(sproj_image_register(&W.back, W.backbuf, W.sc->dims, W.vs, W.origin));
}

/* one value per LOR (times bins), deterministic and positive (0.25 to 1.25 in steps of 1/1024), for back projections
 * that do not follow a forward */
static void fill_values(float *v, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    v[i] = 0.25f + (float)((i * KNUTH_HASH) % 1024) / 1024.0f;
}

/* Segment viewgrams of every step-th view: one range each in the view / segment order. */
static void make_segvg_chunks(void)
{
  int step = W.sc->segvg_step, nv = (W.si.num_views + step - 1) / step;
  int n = nv * W.si.num_segments, c = 0;
  int64_t *first = malloc((size_t)n * sizeof *first), *count = malloc((size_t)n * sizeof *count);
  for (int v = 0; v < W.si.num_views; v += step)
    for (int s = -W.si.max_ring_difference; s <= W.si.max_ring_difference; s++) {
      int planes;
      CHECK(sproj_scanner_segment_planes(W.scanner, s, &planes));
      CHECK(sproj_scanner_lor_index(W.scanner, v, s, 0, 0, &first[c]));
      count[c++] = (int64_t)planes * W.si.num_radial_bins;
    }
  CHECK(sproj_chunks_create_ranges(&W.chunks, W.lors, n, first, count));
  W.nchunks = n;
  free(first);
  free(count);
}

/* the views of OSEM subset 0 as their own LOR set, one chunk per view, with TOF bins */
static void setup_tof_sino(void)
{
  int *views = malloc((size_t)W.si.num_views * sizeof *views), nv;
  CHECK(sproj_scanner_subset_views(W.scanner, W.sc->subsets, 0, views, &nv));
  W.nlors = (int64_t)nv * W.si.lors_per_view;
  W.xs = pinned((size_t)W.nlors * 3 * sizeof(float));
  W.xe = pinned((size_t)W.nlors * 3 * sizeof(float));
  CHECK(sproj_scanner_view_lors(W.scanner, views, nv, W.xs, W.xe, 0));
  CHECK(sproj_lors_register(&W.lors, W.xs, W.xe, W.nlors));
  CHECK(sproj_chunks_create_blocks(&W.chunks, W.lors, nv));
  W.nchunks = nv;
  free(views);
  CHECK(sproj_tof_register(&W.tof, &W.sc->tof, NULL, NULL, NULL));
  W.nvalues = W.nlors * W.sc->tof.num_bins;
  W.y = pinned((size_t)W.nvalues * sizeof(float));
  W.y2 = pinned((size_t)W.nvalues * sizeof(float));
  fill_values(W.y2, W.nvalues);
  CHECK(sproj_proj_register_tof(&W.proj, W.y, W.lors, W.sc->tof.num_bins));
  CHECK(sproj_proj_register_tof(&W.proj2, W.y2, W.lors, W.sc->tof.num_bins));
}

/* random listmode events, each with a TOF bin */
static void setup_tof_lm(void)
{
  W.nlors = W.sc->events;
  W.xs = pinned((size_t)W.nlors * 3 * sizeof(float));
  W.xe = pinned((size_t)W.nlors * 3 * sizeof(float));
  random_events(W.scanner, W.nlors, FIXED_SEED, W.xs, W.xe);
  W.bins = malloc((size_t)W.nlors * sizeof *W.bins);
  for (int64_t i = 0; i < W.nlors; i++)
    W.bins[i] = (int16_t)((i * GOLDEN_HASH16) % (unsigned)W.sc->tof.num_bins);
  CHECK(sproj_lors_register_events(&W.lors, W.xs, W.xe, W.bins, W.nlors));
  CHECK(sproj_tof_register(&W.tof, &W.sc->tof, NULL, NULL, NULL));
  W.nvalues = W.nlors;
  W.y = pinned((size_t)W.nvalues * sizeof(float));
  W.y2 = pinned((size_t)W.nvalues * sizeof(float));
  fill_values(W.y2, W.nvalues);
  CHECK(sproj_proj_register(&W.proj, W.y, W.lors));
  CHECK(sproj_proj_register(&W.proj2, W.y2, W.lors));
}

/* The OSEM workloads' reconstruction of W.proj2 with W.model over W.chunks, from an image of ones (W.ximg). */
static void create_recon(void)
{
  W.x = pinned((size_t)W.nvox * sizeof(float));
  for (int i = 0; i < W.nvox; i++)
    W.x[i] = 1.0f;
  CHECK(sproj_image_register(&W.ximg, W.x, W.sc->dims, W.vs, W.origin));
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = W.model;
  cfg.data = W.proj2;
  cfg.chunks = W.chunks;
  cfg.num_subsets = W.sc->subsets;
  CHECK(sproj_recon_create(&W.recon, W.ximg, &cfg));
  CHECK(sproj_image_sync(W.ximg, SPROJ_SYNC_READ));
}

/* OSEM's data m * A x + a from the phantom (computed here, before anything is timed), its model and reconstruction */
static void setup_osem(void)
{
  CHECK(sproj_fwd(W.img, W.proj2, NULL, SPROJ_ALL_CHUNKS));
  CHECK(sproj_proj_sync(W.proj2, NULL, 0, SPROJ_SYNC_WRITE));
  W.mult = pinned((size_t)W.nlors * sizeof(float));
  W.add = pinned((size_t)W.nlors * sizeof(float));
  for (int64_t i = 0; i < W.nlors; i++) {
    W.mult[i] = lor_factor((uint64_t)i);
    W.add[i] = 0.01f;
    W.y2[i] = W.mult[i] * W.y2[i] + W.add[i];
  }
  CHECK(sproj_model_create(&W.model, W.lors, W.mult, W.add, NULL, NULL));
  create_recon();
}

/* The GPU device d's work runs on: devices beyond the GPUs share them (SPROJ_DEVICES), as starproj assigns them. */
static int device_gpu(int d)
{
  return d % sproj_num_gpus();
}

/* Homes the chunks on the devices, chunk c on device c * n / nchunks (contiguous runs of chunks, as even as the count
 * allows), and puts on each device's GPU what its tasks read: its LORs, the back projection's input values, and the
 * image on every GPU. Untimed: the owned workloads time what happens once the data are where they are used. With both
 * kinds of worker selected there are no devices (sproj_num_devices 0): the chunks stay unhomed, as a sinogram's. */
static void home_chunks(int upload_values)
{
  int n = sproj_num_devices(), gpus = sproj_num_gpus() > 0 && (sproj_get_devices() & SPROJ_DEVICE_CUDA);
  W.owned = 1;
  if (n < 1)
    return;
  for (int c = 0; c < W.nchunks; c++) {
    int d = (int)((int64_t)c * n / W.nchunks);
    CHECK(sproj_chunks_set_device(W.chunks, c, d));
    if (gpus) {
      CHECK(sproj_lors_upload(W.lors, W.chunks, c, device_gpu(d)));
      if (upload_values)
        CHECK(sproj_proj_upload(W.proj2, W.chunks, c, device_gpu(d)));
    }
  }
  if (gpus)
    CHECK(sproj_image_upload(W.img, SPROJ_ALL_GPUS));
}

/* The LOR set cut into as many equal blocks as one device's tasks of it (the largest task, sproj_get_task_lors), at
 * least one per device: every device projects whole blocks, of the task size one GPU runs (the one the performance
 * models recorded on one GPU measured), and the blocks spread as evenly as their count allows (140 blocks of the
 * benchmark sinogram on 8 GPUs: 17 or 18 each; 39 blocks of its 40 M events: 4 or 5). */
static void make_owned_blocks(void)
{
  int64_t task = sproj_get_task_lors();
  int64_t nb = (W.nlors + task - 1) / task;
  if (nb < sproj_num_devices())
    nb = sproj_num_devices();
  CHECK(sproj_chunks_create_blocks(&W.chunks, W.lors, (int)nb));
  W.nchunks = (int)nb;
}

/* OSEM with TOF: the whole sinogram's LORs, one chunk per view, TOF data = the phantom's TOF projection (made where
 * the tasks run, sproj_model_expected: the library's own values, no host array of the 17 GB they take at full scale),
 * m as osem's and a uniform background per LOR spread over its bins. */
static void setup_osem_tof(void)
{
  setup_sinogram();
  CHECK(sproj_scanner_chunks_views(&W.chunks, W.scanner, W.lors));
  W.nchunks = W.si.num_views;
  CHECK(sproj_tof_register(&W.tof, &W.sc->tof, NULL, NULL, NULL));
  W.mult = pinned((size_t)W.nlors * sizeof(float));
  W.add = pinned((size_t)W.nlors * sizeof(float));
  for (int64_t i = 0; i < W.nlors; i++) {
    W.mult[i] = lor_factor((uint64_t)i);
    W.add[i] = 0.01f * (float)W.sc->tof.num_bins;
  }
  CHECK(sproj_model_create_tof_uniform_add(&W.model, W.lors, W.mult, W.add, W.tof, NULL));
  CHECK(sproj_proj_create(&W.proj2, W.lors, W.sc->tof.num_bins));
  CHECK(sproj_model_expected(W.model, W.img, W.proj2, W.chunks, NULL));
  create_recon();
}

static void setup(void)
{
  const char *name = workloads[W.workload].name;
  setup_images();
  if (STARTS_WITH(name, "tof-sino")) {
    setup_tof_sino();
    if (!strcmp(name, "tof-sino-owned"))
      home_chunks(1);
    return;
  }
  if (STARTS_WITH(name, "tof-lm")) {
    setup_tof_lm();
    if (!strcmp(name, "tof-lm-owned")) {
      make_owned_blocks();
      home_chunks(1);
    }
    return;
  }
  if (!strcmp(name, "osem-tof")) {
    setup_osem_tof();
    return;
  }
  setup_sinogram();
  W.nvalues = W.nlors;
  W.y = pinned((size_t)W.nvalues * sizeof(float));
  W.y2 = pinned((size_t)W.nvalues * sizeof(float));
  fill_values(W.y2, W.nvalues);
  CHECK(sproj_proj_register(&W.proj, W.y, W.lors));
  CHECK(sproj_proj_register(&W.proj2, W.y2, W.lors));
  if (strstr(name, "segvg"))
    make_segvg_chunks();
  else if (strstr(name, "views") || !strcmp(name, "threads") || !strcmp(name, "osem")) {
    CHECK(sproj_scanner_chunks_views(&W.chunks, W.scanner, W.lors));
    W.nchunks = W.si.num_views;
  }
  if (!strcmp(name, "osem"))
    setup_osem();
  if (!strcmp(name, "fwd-owned")) {
    make_owned_blocks();
    home_chunks(0);
  }
}

struct thread_arg {
  int first, step;
  int rc;
};

static void *submit_thread(void *p)
{
  struct thread_arg *a = p;
  a->rc = SPROJ_OK;
  for (int v = a->first; v < W.nchunks && a->rc == SPROJ_OK; v += a->step) {
    a->rc = sproj_fwd(W.img, W.proj, W.chunks, v);
    if (a->rc == SPROJ_OK)
      a->rc = sproj_back(W.back, W.proj, W.chunks, v);
  }
  return NULL;
}

/* Untimed preparation of a run: for the cold workload, no copy of anything left on the GPUs. */
static void prepare(void)
{
  if (!strcmp(workloads[W.workload].name, "cold") && sproj_num_gpus() > 0) {
    CHECK(sproj_image_release(W.img, SPROJ_ALL_GPUS));
    CHECK(sproj_image_release(W.back, SPROJ_ALL_GPUS));
    CHECK(sproj_lors_release(W.lors, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
    CHECK(sproj_proj_release(W.proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
    CHECK(sproj_proj_release(W.proj2, NULL, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));
  }
}

/* The timed submissions of one run (returns once they are submitted). */
static void submit(void)
{
  const char *name = workloads[W.workload].name;
  int back = STARTS_WITH(name, "back");
  if (!strcmp(name, "fwd-whole"))
    CHECK(sproj_fwd(W.img, W.proj, NULL, SPROJ_ALL_CHUNKS));
  else if (!strcmp(name, "back-whole"))
    CHECK(sproj_back(W.back, W.proj2, NULL, SPROJ_ALL_CHUNKS));
  else if (strstr(name, "views") || strstr(name, "segvg")) {
    int batch = strstr(name, "batch") != NULL;
    if (batch)
      CHECK(sproj_batch_begin());
    for (int c = 0; c < W.nchunks; c++)
      CHECK(back ? sproj_back(W.back, W.proj2, W.chunks, c) : sproj_fwd(W.img, W.proj, W.chunks, c));
    if (batch)
      CHECK(sproj_batch_end());
  }
  else if (!strcmp(name, "fwd-owned"))
    CHECK(sproj_fwd(W.img, W.proj, W.chunks, SPROJ_ALL_CHUNKS));
  else if (STARTS_WITH(name, "tof-sino")) {
    CHECK(sproj_fwd_tof_sino(W.img, W.proj, W.chunks, SPROJ_ALL_CHUNKS, W.tof));
    CHECK(sproj_back_tof_sino(W.back, W.proj2, W.chunks, SPROJ_ALL_CHUNKS, W.tof));
  }
  else if (STARTS_WITH(name, "tof-lm")) {
    /* the plain workload projects the whole set as one chunk, the owned one its homed blocks */
    CHECK(sproj_fwd_tof_lm(W.img, W.proj, W.chunks, SPROJ_ALL_CHUNKS, W.tof));
    CHECK(sproj_back_tof_lm(W.back, W.proj2, W.chunks, SPROJ_ALL_CHUNKS, W.tof));
  }
  else if (STARTS_WITH(name, "osem"))
    CHECK(sproj_recon_iterate(W.recon, 1, NULL, NULL));
  else if (!strcmp(name, "cold") || !strcmp(name, "memlimit")) {
    CHECK(sproj_fwd(W.img, W.proj, NULL, SPROJ_ALL_CHUNKS));
    CHECK(sproj_back(W.back, W.proj2, NULL, SPROJ_ALL_CHUNKS));
  }
  else if (!strcmp(name, "threads")) {
    starpu_pthread_t th[256];
    struct thread_arg arg[256];
    for (int t = 0; t < W.nthreads; t++) {
      arg[t] = (struct thread_arg){t, W.nthreads, 0};
      if (starpu_pthread_create(&th[t], NULL, submit_thread, &arg[t])) {
        fprintf(stderr, PROG ": cannot start a submitting thread\n");
        exit(1);
      }
    }
    for (int t = 0; t < W.nthreads; t++) {
      starpu_pthread_join(th[t], NULL);
      CHECK(arg[t].rc);
    }
  }
}

/* The memory node of GPU 0, or main memory without GPU workers. */
static unsigned gpu0_node(void)
{
  for (unsigned w = 0; w < starpu_worker_get_count(); w++)
    if (starpu_worker_get_type((int)w) == STARPU_CUDA_WORKER && starpu_worker_get_devid((int)w) == 0)
      return starpu_worker_get_memory_node(w);
  return STARPU_MAIN_RAM;
}

/* Waits for the run and brings its results to the host: the run ends when the caller could use them. The owned
 * workloads end when their results are complete where they are made: forward values on the devices that computed
 * them, the back-projected image (the sum of the devices' contributions) on GPU 0. */
static void finish(void)
{
  const char *name = workloads[W.workload].name;
  CHECK(sproj_wait_all());
  if (STARTS_WITH(name, "osem")) {
    CHECK(sproj_image_sync(W.ximg, SPROJ_SYNC_READ));
    return;
  }
  if (W.owned) {
    if (!STARTS_WITH(name, "fwd")) {
      /* the back projection's sum (StarPU's reduction of the workers' images) made on GPU 0, left there */
      starpu_data_handle_t h = sproj_image_handle(W.back);
      unsigned node = gpu0_node();
      if (starpu_data_acquire_on_node(h, (int)node, STARPU_R) != 0) {
        fprintf(stderr, PROG ": cannot acquire the back projection on memory node %u\n", node);
        exit(1);
      }
      starpu_data_release_on_node(h, (int)node);
    }
    return;
  }
  if (!STARTS_WITH(name, "back"))
    CHECK(sproj_proj_sync(W.proj, NULL, 0, SPROJ_SYNC_READ));
  if (!STARTS_WITH(name, "fwd"))
    CHECK(sproj_image_sync(W.back, SPROJ_SYNC_READ));
}

/* Checksums of the first run's results, in double: a = forward values (or the OSEM image), b = back-projected image;
 * each also weighted by position so that values moved to the wrong place are seen. */
static void checksums(double *a, double *b, double *tol)
{
  const char *name = workloads[W.workload].name;
  double sa = 0.0, sb = 0.0;
  if (W.owned && !SIMULATED) {
    /* untimed: the owned runs leave their results on the devices */
    if (!STARTS_WITH(name, "back"))
      CHECK(sproj_proj_sync(W.proj, NULL, 0, SPROJ_SYNC_READ));
    if (!STARTS_WITH(name, "fwd"))
      CHECK(sproj_image_sync(W.back, SPROJ_SYNC_READ));
  }
  if (STARTS_WITH(name, "osem")) {
    for (int i = 0; i < W.nvox; i++)
      sa += W.x[i] * (1.0 + (i % CHECKSUM_WEIGHTS));
    *a = sa, *b = 0.0;
    /* float additions in scheduling order in the back projections, then the ratios: 1e-4 relative */
    *tol = 1e-4;
    return;
  }
  if (!STARTS_WITH(name, "back"))
    for (int64_t i = 0; i < W.nvalues; i++)
      sa += W.y[i] * (1.0 + (double)(i % CHECKSUM_WEIGHTS));
  if (!STARTS_WITH(name, "fwd"))
    for (int i = 0; i < W.nvox; i++)
      sb += W.backbuf[i] * (1.0 + (i % CHECKSUM_WEIGHTS));
  *a = sa, *b = sb;
  /* forward values agree to a float rounding or so between CPU and GPU kernels; back projections add in float in
   * the order tasks run, which changes the last bits of each voxel: 1e-5 relative on sums of >= 10^4 terms */
  *tol = 1e-5;
}

/* ---- measurements ---- */

/* Peak memory StarPU has allocated on each GPU, sampled while a run goes on (StarPU keeps only the current value). */
#define MAX_NODES 64
static struct {
  pthread_t thread;
  volatile int stop;
  size_t peak[MAX_NODES];
  unsigned nnodes;
} sampler;

static void *sample_memory(void *unused)
{
  (void)unused;
  while (!sampler.stop) {
    for (unsigned n = 0; n < sampler.nnodes; n++)
      if (starpu_node_get_kind(n) == STARPU_CUDA_RAM) {
        size_t u = starpu_memory_get_used(n);
        if (u > sampler.peak[n])
          sampler.peak[n] = u;
      }
    usleep(SAMPLE_US);
  }
  return NULL;
}

static int num_cuda_nodes(void)
{
  int n = 0;
  for (unsigned i = 0; i < starpu_memory_nodes_get_count() && i < MAX_NODES; i++)
    n += starpu_node_get_kind(i) == STARPU_CUDA_RAM;
  return n;
}

/* Seconds on StarPU's clock: the monotonic clock, or in simulation the simulated time (the real time a simulated run
 * takes says nothing of the machine simulated). */
static double run_clock(void)
{
  return starpu_timing_now() * 1e-6;
}

static double ts(struct timespec t)
{
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* a value printed into the record stream: no tabs or line ends */
void clean_field(char *s)
{
  for (; *s; s++)
    if (*s == '\t' || *s == '\n' || *s == '\r' || *s == '"' || *s == '\\' || *s == ',')
      *s = *s == ',' ? ';' : ' ';
}

static void cpu_model(char *out, size_t n)
{
  snprintf(out, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof line, f))
    if (STARTS_WITH(line, "model name") && strchr(line, ':')) {
      char *v = strchr(line, ':') + 1;
      while (*v == ' ')
        v++;
      v[strcspn(v, "\n")] = 0;
      snprintf(out, n, "%s", v);
      break;
    }
  fclose(f);
  clean_field(out);
}

/* The model of GPU 0 from StarPU's CUDA worker name "CUDA 0.0 (NVIDIA H200 ...)". */
static void gpu_model(char *out, size_t n)
{
  snprintf(out, n, "none");
  for (unsigned w = 0; w < starpu_worker_get_count(); w++)
    if (starpu_worker_get_type(w) == STARPU_CUDA_WORKER) {
      char name[128];
      starpu_worker_get_name(w, name, sizeof name);
      char *p = strchr(name, '(');
      if (p) {
        snprintf(out, n, "%s", p + 1);
        out[strcspn(out, ")")] = 0;
        /* StarPU appends the memory size and PCI bus ("... 139.8 GiB 18:00.0"): keep the model */
        char *size = strstr(out, " GiB");
        if (!size)
          size = strstr(out, " GB");
        if (size) {
          *size = 0;
          char *sp = strrchr(out, ' ');
          if (sp && sp != out)
            *sp = 0;
        }
      }
      break;
    }
  clean_field(out);
}

/* Prints the worker and transfer lines, then the record line of one run, to stdout (read by the driver). */
static void emit(const char *phase, int repeat, double makespan, double submit_s, double done_s, double ca, double cb,
                 double tol)
{
  unsigned nw = starpu_worker_get_count();
  double busy_cpu = 0, busy_gpu = 0, max_busy = 0, util = 0, sleeping = 0;
  long long tasks_cpu = 0, tasks_gpu = 0;
  int ncpu = 0, ncuda = 0;
  for (unsigned w = 0; w < nw; w++) {
    struct starpu_profiling_worker_info info;
    if (starpu_profiling_worker_get_info((int)w, &info))
      continue;
    char name[128];
    starpu_worker_get_name((int)w, name, sizeof name);
    clean_field(name);
    int gpu = starpu_worker_get_type((int)w) == STARPU_CUDA_WORKER;
    double ex = ts(info.executing_time), sl = ts(info.sleeping_time), tot = ts(info.total_time);
    printf("WRK\t%u\t%s\t%s\t%.6f\t%.6f\t%.6f\t%.6f\t%d\n", w, name, gpu ? "cuda" : "cpu", ex, sl,
           ts(info.waiting_time), tot, info.executed_tasks);
    *(gpu ? &busy_gpu : &busy_cpu) += ex;
    *(gpu ? &tasks_gpu : &tasks_cpu) += info.executed_tasks;
    *(gpu ? &ncuda : &ncpu) += 1;
    if (ex > max_busy)
      max_busy = ex;
    sleeping += sl;
    util += makespan > 0 ? ex / makespan : 0;
  }
  long long moved = 0, h2d = 0, d2h = 0, d2d = 0;
  for (int b = 0; b < starpu_bus_get_count(); b++) {
    struct starpu_profiling_bus_info bi;
    if (starpu_bus_get_profiling_info(b, &bi))
      continue;
    int src = starpu_bus_get_src(b), dst = starpu_bus_get_dst(b);
    int sk = starpu_node_get_kind(src) == STARPU_CUDA_RAM, dk = starpu_node_get_kind(dst) == STARPU_CUDA_RAM;
    if (bi.transferred_bytes > 0)
      printf("BUS\t%d\t%s\t%d\t%s\t%lld\t%d\n", src, sk ? "cuda" : "ram", dst, dk ? "cuda" : "ram",
             (long long)bi.transferred_bytes, bi.transfer_count);
    moved += bi.transferred_bytes;
    if (sk && dk)
      d2d += bi.transferred_bytes;
    else if (sk)
      d2h += bi.transferred_bytes;
    else if (dk)
      h2d += bi.transferred_bytes;
  }
  size_t peak = 0;
  for (unsigned n = 0; n < sampler.nnodes; n++)
    if (sampler.peak[n] > peak)
      peak = sampler.peak[n];
  char host[256] = "unknown", cpu[256], gpu[256];
  gethostname(host, sizeof host - 1);
  if (SIMULATED && getenv("STARPU_HOSTNAME"))
    snprintf(host, sizeof host, "%s", getenv("STARPU_HOSTNAME")); /* the machine simulated, not this one */
  clean_field(host);
  cpu_model(cpu, sizeof cpu);
  gpu_model(gpu, sizeof gpu);
  int maj, min, rel;
  starpu_get_version(&maj, &min, &rel);
  printf("REC\thost=%s\tcpu_model=%s\tgpu_model=%s\tstarpu_version=%d.%d.%d\tpolicy_resolved=%s\tphase=%s\t"
         "repeat=%d\tncpu_workers=%d\tncuda_workers=%d\tngpus=%d\tmakespan_s=%.6f\tsubmit_s=%.6f\tbusy_cpu_s=%.6f\t"
         "busy_gpu_s=%.6f\tmax_worker_busy_s=%.6f\tmean_utilisation=%.4f\tsleeping_s=%.6f\ttasks_cpu=%lld\t"
         "tasks_gpu=%lld\tbytes_moved=%lld\tbytes_h2d=%lld\tbytes_d2h=%lld\tbytes_d2d=%lld\tpeak_gpu_mem_bytes=%zu\t"
         "checksum_a=%.17g\tchecksum_b=%.17g\tchecksum_tol=%g\tdone_s=%.6f\n",
         host, cpu, gpu, maj, min, rel, sproj_scheduler_name(), phase, repeat, ncpu, ncuda, sproj_num_gpus(),
         makespan, submit_s, busy_cpu, busy_gpu, max_busy, nw ? util / nw : 0.0, sleeping, tasks_cpu, tasks_gpu,
         moved, h2d, d2h, d2d, peak, ca, cb, tol, done_s);
  fflush(stdout);
}

/* resets every profiling counter StarPU keeps, so that the next read covers one run */
static void reset_counters(void)
{
  for (unsigned w = 0; w < starpu_worker_get_count(); w++)
    starpu_profiling_worker_get_info((int)w, NULL);
  struct starpu_profiling_bus_info bi;
  for (int b = 0; b < starpu_bus_get_count(); b++)
    starpu_bus_get_profiling_info(b, &bi);
  memset(sampler.peak, 0, sizeof sampler.peak);
}

static void timed_run(double *makespan, double *submit_s, double *done_s)
{
  prepare();
  CHECK(sproj_wait_all());
  reset_counters();
  sampler.stop = 0;
  /* simulated (SimGrid): a thread StarPU did not start would run outside the simulation, so no memory sampler */
  int sampling = !SIMULATED && num_cuda_nodes() > 0 &&
                 pthread_create(&sampler.thread, NULL, sample_memory, NULL) == 0;
  double t0 = run_clock();
  submit();
  double t1 = run_clock();
  CHECK(sproj_wait_all());
  double td = run_clock();
  finish();
  double t2 = run_clock();
  if (sampling) {
    sampler.stop = 1;
    pthread_join(sampler.thread, NULL);
  }
  *makespan = t2 - t0;
  *submit_s = t1 - t0;
  *done_s = td - t0;
}

static void teardown(void)
{
  CHECK(sproj_wait_all());
  if (W.recon)
    CHECK(sproj_recon_destroy(W.recon));
  if (W.model)
    CHECK(sproj_model_destroy(W.model));
  CHECK(sproj_image_unregister(W.ximg));
  CHECK(sproj_proj_unregister(W.proj));
  CHECK(sproj_proj_unregister(W.proj2));
  CHECK(sproj_chunks_destroy(W.chunks));
  CHECK(sproj_tof_unregister(W.tof));
  CHECK(sproj_image_unregister(W.img));
  CHECK(sproj_image_unregister(W.back));
  CHECK(sproj_lors_unregister(W.lors));
  CHECK(sproj_scanner_destroy(W.scanner));
  /* pinned buffers go with the process: freeing them needs the same GPUs up, and the process ends now */
  CHECK(sproj_shutdown());
}

/* One configuration: the environment (STARPU_SCHED, STARPU_NCPU, ...) was set by the driver. */
int child_main(const char *workload, const char *scale, const char *set, const char *phase, int repeats, int warmups,
               int nthreads)
{
  W.workload = -1;
  for (int i = 0; i < NUM_WORKLOADS; i++)
    if (!strcmp(workloads[i].name, workload))
      W.workload = i;
  for (int i = 0; i < NUM_SCALES; i++)
    if (!strcmp(scales[i].name, scale))
      W.sc = &scales[i];
  if (W.workload < 0 || !W.sc) {
    fprintf(stderr, PROG ": internal: bad workload or scale\n");
    return 2;
  }
  W.nthreads = nthreads > 0 ? nthreads : W.sc->threads;
  make_scanner(W.sc, &W.scanner);
  CHECK(sproj_scanner_info(W.scanner, &W.si));
  for (int k = 0; k < 3; k++) {
    W.vs[k] = W.sc->voxel;
    W.origin[k] = (-0.5f * W.sc->dims[k] + 0.5f) * W.vs[k];
  }
  W.nvox = W.sc->dims[0] * W.sc->dims[1] * W.sc->dims[2];

  CHECK(sproj_init(NULL));
  unsigned mask = !strcmp(set, "cpu")     ? SPROJ_DEVICE_CPU
                  : STARTS_WITH(set, "all") ? SPROJ_DEVICE_ANY
                                            : SPROJ_DEVICE_CUDA;
  CHECK(sproj_set_devices(mask));
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  sampler.nnodes = starpu_memory_nodes_get_count() < MAX_NODES ? starpu_memory_nodes_get_count() : MAX_NODES;
  setup();

  /* the check run: the results every policy must agree on, computed before any time counts */
  double mk, sub, done, ca, cb, tol;
  timed_run(&mk, &sub, &done);
  checksums(&ca, &cb, &tol);
  if (SIMULATED)
    ca = cb = tol = 0.0; /* no kernel ran: the buffers hold what they held before, nothing to compare */
  if (!isfinite(ca) || !isfinite(cb)) {
    fprintf(stderr, PROG ": %s gave non-finite results\n", workload);
    return 1;
  }
  for (int r = 0; r < warmups; r++)
    timed_run(&mk, &sub, &done);
  for (int r = 0; r < repeats; r++) {
    timed_run(&mk, &sub, &done);
    emit(phase, r, mk, sub, done, ca, cb, tol);
  }
  teardown();
  return 0;
}

/* Starts starproj with the defaults and prints what the driver needs to know of the machine. */
int probe_main(void)
{
  CHECK(sproj_init(NULL));
  char gpu[256], cpu[256];
  gpu_model(gpu, sizeof gpu);
  cpu_model(cpu, sizeof cpu);
  printf("PROBE\tgpus=%d\tcpus=%d\tgpu_model=%s\tcpu_model=%s\n", sproj_num_gpus(), sproj_num_cpu_workers(), gpu, cpu);
  fflush(stdout);
  CHECK(sproj_shutdown());
  return 0;
}

/* bytes the whole-sinogram workloads keep on a GPU: LORs, two projection vectors, two images */
long long data_bytes(const struct scale *sc)
{
  sproj_scanner *s;
  struct sproj_sinogram_info si;
  make_scanner(sc, &s);
  CHECK(sproj_scanner_info(s, &si));
  CHECK(sproj_scanner_destroy(s));
  long long per_lor = (long long)((2 * 3 + 2) * sizeof(float)), per_voxel = (long long)(2 * sizeof(float));
  return si.num_lors * per_lor + per_voxel * sc->dims[0] * sc->dims[1] * sc->dims[2];
}

