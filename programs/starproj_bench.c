/* SPDX-License-Identifier: Apache-2.0 */
/* starproj_bench.c: starproj-bench, the scheduler comparison harness: projection workloads x StarPU policies x worker
 * sets, each configuration in a fresh process with its own STARPU_HOME, measured through StarPU's profiling
 * interfaces and written as CSV, JSON lines and gnuplot charts (see doc/bench-format.md). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <starpu.h>
#include <starpu_profiling.h>
#include "common.h"

#define PROG "starproj-bench"

/* ================================ workloads (run inside a configuration's process) ================================ */

struct scale {
  const char *name;
  const char *scanner; /* preset */
  int rings;           /* 0: the preset's; else fewer rings (tiny) */
  int radial;          /* 0: the preset's */
  int dims[3];
  float voxel;
  int64_t events;      /* listmode events */
  int subsets;         /* OSEM and the TOF sinogram subset */
  int segvg_step;      /* segment-viewgram workloads use every step-th view */
  int threads;         /* host threads of the threads workload (--threads overrides) */
  struct sproj_tof_params tof;
};

static const struct scale scales[] = {
  {"tiny", "small", 4, 33, {32, 32, 8}, 4.0f, 20000, 4, 4, 4, {15.0f, 15, 3.0f, 12.0f, 0.0f}},
  {"small", "small", 0, 0, {64, 64, 16}, 2.0f, 200000, 8, 1, 8, {15.0f, 15, 3.0f, 12.0f, 0.0f}},
  {"full", "vision600", 0, 0, {215, 215, 71}, 2.78f, 40000000, 34, 8, 16, {25.4f, 29, 3.0f, 24.5f, 0.0f}},
};
#define NUM_SCALES (int)(sizeof scales / sizeof *scales)

struct workload {
  const char *name;
  const char *what;
  int needs_gpu; /* only run where the worker set has GPUs */
};

static const struct workload workloads[] = {
  {"fwd-whole", "forward projection of the whole sinogram, one call", 0},
  {"back-whole", "back projection of the whole sinogram, one call", 0},
  {"fwd-views", "forward projection, one call per view", 0},
  {"back-views", "back projection, one call per view", 0},
  {"fwd-segvg", "forward projection, one call per segment viewgram", 0},
  {"back-segvg", "back projection, one call per segment viewgram", 0},
  {"fwd-segvg-batch", "forward, one call per segment viewgram inside sproj_batch_begin/end", 0},
  {"back-segvg-batch", "back, one call per segment viewgram inside sproj_batch_begin/end", 0},
  {"tof-sino", "TOF sinogram forward + back projection of one OSEM subset's views", 0},
  {"tof-lm", "TOF listmode forward + back projection of random events", 0},
  {"osem", "one OSEM iteration (sproj_recon_*), non-TOF, with m and a", 0},
  {"cold", "forward + back of the whole sinogram with no data resident on the GPUs (transfers paid)", 0},
  {"memlimit", "forward + back of the whole sinogram, STARPU_LIMIT_CUDA_MEM below the data size", 1},
  {"threads", "many host threads submitting per-view forward + back calls at once", 0},
};
#define NUM_WORKLOADS (int)(sizeof workloads / sizeof *workloads)

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
} W;

/* The scale's scanner: a preset, for tiny with fewer rings (4 mm apart, centred on 0) and radial bins. */
static void make_scanner(const struct scale *sc, sproj_scanner **scanner)
{
  struct sproj_scanner_params sp;
  CHECK(sproj_scanner_preset(sc->scanner, &sp));
  if (sc->rings) {
    sp.num_rings = sc->rings;
    for (int r = 0; r < sp.num_rings; r++)
      sp.ring_z[r] = (r - 0.5 * (sp.num_rings - 1)) * 4.0;
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
  W.xs = pinned((size_t)W.nlors * 12);
  W.xe = pinned((size_t)W.nlors * 12);
  CHECK(sproj_scanner_lors(W.scanner, W.xs, W.xe, 0));
  CHECK(sproj_lors_register(&W.lors, W.xs, W.xe, W.nlors));
}

static void setup_images(void)
{
  W.phantom = pinned((size_t)W.nvox * 4);
  W.backbuf = pinned((size_t)W.nvox * 4);
  struct sproj_phantom ph;
  CHECK(sproj_phantom_default(&ph, W.sc->dims, W.vs, W.origin));
  CHECK(sproj_phantom_fill(&ph, W.phantom, W.sc->dims, W.vs, W.origin, 1));
  memset(W.backbuf, 0, (size_t)W.nvox * 4);
  CHECK(sproj_image_register(&W.img, W.phantom, W.sc->dims, W.vs, W.origin));
  CHECK(sproj_image_register(&W.back, W.backbuf, W.sc->dims, W.vs, W.origin));
}

/* one value per LOR (times bins), deterministic and positive, for back projections that do not follow a forward */
static void fill_values(float *v, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    v[i] = 0.25f + (float)((i * 2654435761u) % 1024) / 1024.0f;
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

static void setup(void)
{
  const char *name = workloads[W.workload].name;
  setup_images();
  if (!strcmp(name, "tof-sino")) {
    /* the views of subset 0 as their own LOR set, one chunk per view */
    int *views = malloc((size_t)W.si.num_views * sizeof *views), nv;
    CHECK(sproj_scanner_subset_views(W.scanner, W.sc->subsets, 0, views, &nv));
    W.nlors = (int64_t)nv * W.si.lors_per_view;
    W.xs = pinned((size_t)W.nlors * 12);
    W.xe = pinned((size_t)W.nlors * 12);
    CHECK(sproj_scanner_view_lors(W.scanner, views, nv, W.xs, W.xe, 0));
    CHECK(sproj_lors_register(&W.lors, W.xs, W.xe, W.nlors));
    CHECK(sproj_chunks_create_blocks(&W.chunks, W.lors, nv));
    W.nchunks = nv;
    free(views);
    CHECK(sproj_tof_register(&W.tof, &W.sc->tof, NULL, NULL, NULL));
    W.nvalues = W.nlors * W.sc->tof.num_bins;
    W.y = pinned((size_t)W.nvalues * 4);
    W.y2 = pinned((size_t)W.nvalues * 4);
    fill_values(W.y2, W.nvalues);
    CHECK(sproj_proj_register_tof(&W.proj, W.y, W.lors, W.sc->tof.num_bins));
    CHECK(sproj_proj_register_tof(&W.proj2, W.y2, W.lors, W.sc->tof.num_bins));
    return;
  }
  if (!strcmp(name, "tof-lm")) {
    W.nlors = W.sc->events;
    W.xs = pinned((size_t)W.nlors * 12);
    W.xe = pinned((size_t)W.nlors * 12);
    random_events(W.scanner, W.nlors, 12345, W.xs, W.xe);
    W.bins = malloc((size_t)W.nlors * sizeof *W.bins);
    for (int64_t i = 0; i < W.nlors; i++)
      W.bins[i] = (int16_t)((i * 40503u) % (unsigned)W.sc->tof.num_bins);
    CHECK(sproj_lors_register_events(&W.lors, W.xs, W.xe, W.bins, W.nlors));
    CHECK(sproj_tof_register(&W.tof, &W.sc->tof, NULL, NULL, NULL));
    W.nvalues = W.nlors;
    W.y = pinned((size_t)W.nvalues * 4);
    W.y2 = pinned((size_t)W.nvalues * 4);
    fill_values(W.y2, W.nvalues);
    CHECK(sproj_proj_register(&W.proj, W.y, W.lors));
    CHECK(sproj_proj_register(&W.proj2, W.y2, W.lors));
    return;
  }
  setup_sinogram();
  W.nvalues = W.nlors;
  W.y = pinned((size_t)W.nvalues * 4);
  W.y2 = pinned((size_t)W.nvalues * 4);
  fill_values(W.y2, W.nvalues);
  CHECK(sproj_proj_register(&W.proj, W.y, W.lors));
  CHECK(sproj_proj_register(&W.proj2, W.y2, W.lors));
  if (strstr(name, "segvg"))
    make_segvg_chunks();
  else if (strstr(name, "views") || !strcmp(name, "threads") || !strcmp(name, "osem")) {
    CHECK(sproj_scanner_chunks_views(&W.chunks, W.scanner, W.lors));
    W.nchunks = W.si.num_views;
  }
  if (!strcmp(name, "osem")) {
    /* data m * A x + a from the phantom (computed here, before anything is timed) */
    CHECK(sproj_fwd(W.img, W.proj2, NULL, SPROJ_ALL_CHUNKS));
    CHECK(sproj_proj_sync(W.proj2, NULL, 0, SPROJ_SYNC_WRITE));
    W.mult = pinned((size_t)W.nlors * 4);
    W.add = pinned((size_t)W.nlors * 4);
    for (int64_t i = 0; i < W.nlors; i++) {
      W.mult[i] = 0.5f + 0.5f * (float)((i * 2654435761u) % 1000) / 1000.0f;
      W.add[i] = 0.01f;
      W.y2[i] = W.mult[i] * W.y2[i] + W.add[i];
    }
    W.x = pinned((size_t)W.nvox * 4);
    for (int i = 0; i < W.nvox; i++)
      W.x[i] = 1.0f;
    CHECK(sproj_image_register(&W.ximg, W.x, W.sc->dims, W.vs, W.origin));
    CHECK(sproj_model_create(&W.model, W.lors, W.mult, W.add, NULL, NULL));
    struct sproj_recon_config cfg;
    sproj_recon_config_init(&cfg);
    cfg.model = W.model;
    cfg.data = W.proj2;
    cfg.chunks = W.chunks;
    cfg.num_subsets = W.sc->subsets;
    CHECK(sproj_recon_create(&W.recon, W.ximg, &cfg));
    CHECK(sproj_image_sync(W.ximg, SPROJ_SYNC_READ));
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
  int back = !strncmp(name, "back", 4);
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
  else if (!strcmp(name, "tof-sino")) {
    CHECK(sproj_fwd_tof_sino(W.img, W.proj, W.chunks, SPROJ_ALL_CHUNKS, W.tof));
    CHECK(sproj_back_tof_sino(W.back, W.proj2, W.chunks, SPROJ_ALL_CHUNKS, W.tof));
  }
  else if (!strcmp(name, "tof-lm")) {
    CHECK(sproj_fwd_tof_lm(W.img, W.proj, NULL, SPROJ_ALL_CHUNKS, W.tof));
    CHECK(sproj_back_tof_lm(W.back, W.proj2, NULL, SPROJ_ALL_CHUNKS, W.tof));
  }
  else if (!strcmp(name, "osem"))
    CHECK(sproj_recon_iterate(W.recon, 1, NULL, NULL));
  else if (!strcmp(name, "cold") || !strcmp(name, "memlimit")) {
    CHECK(sproj_fwd(W.img, W.proj, NULL, SPROJ_ALL_CHUNKS));
    CHECK(sproj_back(W.back, W.proj2, NULL, SPROJ_ALL_CHUNKS));
  }
  else if (!strcmp(name, "threads")) {
    pthread_t th[256];
    struct thread_arg arg[256];
    for (int t = 0; t < W.nthreads; t++) {
      arg[t] = (struct thread_arg){t, W.nthreads, 0};
      if (pthread_create(&th[t], NULL, submit_thread, &arg[t])) {
        fprintf(stderr, PROG ": cannot start a submitting thread\n");
        exit(1);
      }
    }
    for (int t = 0; t < W.nthreads; t++) {
      pthread_join(th[t], NULL);
      CHECK(arg[t].rc);
    }
  }
}

/* Waits for the run and brings its results to the host: the run ends when the caller could use them. */
static void finish(void)
{
  const char *name = workloads[W.workload].name;
  CHECK(sproj_wait_all());
  if (!strcmp(name, "osem")) {
    CHECK(sproj_image_sync(W.ximg, SPROJ_SYNC_READ));
    return;
  }
  if (strncmp(name, "back", 4))
    CHECK(sproj_proj_sync(W.proj, NULL, 0, SPROJ_SYNC_READ));
  if (strncmp(name, "fwd", 3))
    CHECK(sproj_image_sync(W.back, SPROJ_SYNC_READ));
}

/* Checksums of the first run's results, in double: a = forward values (or the OSEM image), b = back-projected image;
 * each also weighted by position so that values moved to the wrong place are seen. */
static void checksums(double *a, double *b, double *tol)
{
  const char *name = workloads[W.workload].name;
  double sa = 0.0, sb = 0.0;
  if (!strcmp(name, "osem")) {
    for (int i = 0; i < W.nvox; i++)
      sa += W.x[i] * (1.0 + (i % 7));
    *a = sa, *b = 0.0;
    /* float additions in scheduling order in the back projections, then the ratios: 1e-4 relative */
    *tol = 1e-4;
    return;
  }
  if (strncmp(name, "back", 4))
    for (int64_t i = 0; i < W.nvalues; i++)
      sa += W.y[i] * (1.0 + (double)(i % 7));
  if (strncmp(name, "fwd", 3))
    for (int i = 0; i < W.nvox; i++)
      sb += W.backbuf[i] * (1.0 + (i % 7));
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
    usleep(500);
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

static double ts(struct timespec t)
{
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* a value printed into the record stream: no tabs or line ends */
static void clean(char *s)
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
    if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
      char *v = strchr(line, ':') + 1;
      while (*v == ' ')
        v++;
      v[strcspn(v, "\n")] = 0;
      snprintf(out, n, "%s", v);
      break;
    }
  fclose(f);
  clean(out);
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
  clean(out);
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
    clean(name);
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
  clean(host);
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
  int sampling = num_cuda_nodes() > 0 && pthread_create(&sampler.thread, NULL, sample_memory, NULL) == 0;
  double t0 = now();
  submit();
  double t1 = now();
  CHECK(sproj_wait_all());
  double td = now();
  finish();
  double t2 = now();
  if (sampling) {
    sampler.stop = 1;
    pthread_join(sampler.thread, NULL);
  }
  *makespan = t2 - t0;
  *submit_s = t1 - t0;
  *done_s = td - t0;
}

/* One configuration: the environment (STARPU_SCHED, STARPU_NCPU, ...) was set by the driver. */
static int child_main(const char *workload, const char *scale, const char *set, const char *phase, int repeats,
                      int warmups, int nthreads)
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
  unsigned mask = !strcmp(set, "cpu") ? SPROJ_DEVICE_CPU : !strncmp(set, "all", 3) ? SPROJ_DEVICE_ANY : SPROJ_DEVICE_CUDA;
  CHECK(sproj_set_devices(mask));
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  sampler.nnodes = starpu_memory_nodes_get_count() < MAX_NODES ? starpu_memory_nodes_get_count() : MAX_NODES;
  setup();

  /* the check run: the results every policy must agree on, computed before any time counts */
  double mk, sub, done, ca, cb, tol;
  timed_run(&mk, &sub, &done);
  checksums(&ca, &cb, &tol);
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
  return 0;
}

/* Starts starproj with the defaults and prints what the driver needs to know of the machine. */
static int probe_main(void)
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

/* ============================== the driver: the matrix, one process per configuration ============================== */

#define MAX_POLICIES 64
#define MAX_SETS 24
#define MAX_REPEATS 1000

static const char *usage_text =
  "usage: " PROG " [--list] [--workloads a,b] [--scheds x,y] [--workers set,...] [--scale tiny|small|full]\n"
  "                      [--repeats N] [--warmups N] [--calibration-runs N] [--threads N] [--timeout S]\n"
  "                      [--output DIR] [--trace] [--keep-homes] [--verbose] [--help]\n"
  "  Compares StarPU scheduling policies on starproj's projection workloads: every workload x policy x worker set\n"
  "  runs in a process of its own with a fresh STARPU_HOME (model-based policies calibrate there first), and one\n"
  "  line per configuration is printed as it ends. Results: DIR/results.csv and results.jsonl (one record per\n"
  "  configuration and repeat), workers.csv, transfers.csv, and PNG charts when gnuplot is installed.\n"
  "  --list              the workloads, the policies of this StarPU build and the worker sets of this machine\n"
  "  --workloads a,b     workloads to run (default: all that apply)\n"
  "  --scheds x,y        policies (default: all of this StarPU build but graph_test, which needs explicit\n"
  "                      starpu_do_schedule() calls, and 'default' = starproj's own choice)\n"
  "  --workers s,...     worker sets: cpu, gpu (all GPUs, no CPU workers), all (CPUs + GPUs, the scheduler\n"
  "                      weighs both), gpuN (the first N GPUs), any of these with :wK (K CUDA workers per GPU),\n"
  "                      e.g. gpu2:w1 (default: cpu, and with GPUs gpu, all, gpu1..gpuN-1, gpu:w1, gpu:w2, gpu:w8)\n"
  "  --scale S           tiny (a 4-ring scanner, for tests), small (the 'small' scanner, 64x64x16 image of\n"
  "                      2 mm; default) or full (the 'vision600' scanner, 215x215x71 image of 2.78 mm)\n"
  "  --repeats N         timed runs per configuration (default 3); --warmups N untimed ones before (default 1)\n"
  "  --calibration-runs N  runs with STARPU_CALIBRATE=1 before a model-based policy is measured (default 3)\n"
  "  --threads N         host threads of the 'threads' workload (default 4 tiny, 8 small, 16 full)\n"
  "  --timeout S         seconds a configuration's process may take before it is stopped (default 120 tiny,\n"
  "                      600 small, 1200 full)\n"
  "  --output DIR        where the results go (default starproj-bench-results; created, files overwritten)\n"
  "  --trace             FxT traces per configuration (needs StarPU built with FxT) and starpu_fxt_tool's output\n"
  "  --keep-homes        keep each configuration's STARPU_HOME (its calibrated models) under DIR/homes\n"
  "  --verbose           StarPU's own messages\n"
  "  Exit status: 0 when every configuration ran and agreed with the others, 1 when one failed or disagreed,\n"
  "  2 for bad options, 130 when interrupted (the records and charts of what ran are kept).\n";

/* a message about the options and exit status 2 */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, PROG ": ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see --help)\n");
  va_end(ap);
  return 2;
}

struct worker_set {
  char name[32];
  int cpus;    /* CPU workers run projections too */
  int gpus;    /* -1: every GPU; 0: none; N: the first N */
  int per_gpu; /* CUDA workers per GPU; 0: starproj's default */
};

/* "cpu", "gpu", "gpuN", "all", optionally followed by ":wK" */
static int parse_set(const char *s, struct worker_set *ws)
{
  char base[32];
  const char *colon = strchr(s, ':');
  size_t n = colon ? (size_t)(colon - s) : strlen(s);
  if (n == 0 || n >= sizeof base || strlen(s) >= sizeof ws->name)
    return -1;
  memcpy(base, s, n);
  base[n] = 0;
  memset(ws, 0, sizeof *ws);
  snprintf(ws->name, sizeof ws->name, "%s", s);
  if (colon) {
    char *end;
    if (colon[1] != 'w')
      return -1;
    long k = strtol(colon + 2, &end, 10);
    if (*end || end == colon + 2 || k < 1 || k > 64)
      return -1;
    ws->per_gpu = (int)k;
  }
  if (!strcmp(base, "cpu")) {
    ws->cpus = 1;
    return ws->per_gpu ? -1 : 0;
  }
  if (!strcmp(base, "all")) {
    ws->cpus = 1, ws->gpus = -1;
    return 0;
  }
  if (!strncmp(base, "gpu", 3)) {
    ws->gpus = -1;
    if (base[3]) {
      char *end;
      long g = strtol(base + 3, &end, 10);
      if (*end || g < 1 || g > 64)
        return -1;
      ws->gpus = (int)g;
    }
    return 0;
  }
  return -1;
}

/* dm*, heft-based and heteroprio policies choose from performance models: they calibrate first */
static int model_based(const char *policy)
{
  return strstr(policy, "dm") || strstr(policy, "heft") || strstr(policy, "heteroprio") ||
         !strcmp(policy, "modular-gemm");
}

/* The names of a comma-separated option value, split in a copy (*copy, freed by the caller): 0, or after a message
 * -1 when a name is empty or there are more than max. */
static int split_list(const char *option, const char *value, char **copy, char **names, int max, int *n)
{
  size_t len = strlen(value);
  *n = 0;
  if (!len || value[0] == ',' || value[len - 1] == ',' || strstr(value, ",,")) {
    usage_error("%s has an empty name in '%s'", option, value);
    return -1;
  }
  *copy = strdup(value);
  for (char *tok = strtok(*copy, ","); tok; tok = strtok(NULL, ",")) {
    if (*n == max) {
      usage_error("%s takes at most %d names, not '%s'", option, max, value);
      return -1;
    }
    names[(*n)++] = tok;
  }
  return 0;
}

/* ---- records ---- */

static const char *csv_columns[] = {
  "host", "cpu_model", "gpu_model", "starpu_version", "scale", "workload", "policy", "policy_resolved", "worker_set",
  "phase", "repeat", "status", "ncpu_workers", "ncuda_workers", "ngpus", "makespan_s", "submit_s", "busy_cpu_s",
  "busy_gpu_s", "max_worker_busy_s", "mean_utilisation", "sleeping_s", "tasks_cpu", "tasks_gpu", "bytes_moved",
  "bytes_h2d", "bytes_d2h", "bytes_d2d", "peak_gpu_mem_bytes", "checksum_a", "checksum_b", "checksum_tol", "check",
  "done_s"};
#define NUM_COLUMNS (int)(sizeof csv_columns / sizeof *csv_columns)
/* columns written as strings in JSON; the others are numbers (or null when empty) */
static int string_column(int c)
{
  return c <= 9 || c == 11 || !strcmp(csv_columns[c], "check");
}

struct record {
  char *val[NUM_COLUMNS];
};

static int column(const char *key)
{
  for (int c = 0; c < NUM_COLUMNS; c++)
    if (!strcmp(csv_columns[c], key))
      return c;
  return -1;
}

static void set_val(struct record *r, const char *key, const char *value)
{
  int c = column(key);
  if (c < 0)
    return;
  free(r->val[c]);
  r->val[c] = strdup(value);
}

static const char *get_val(const struct record *r, const char *key)
{
  int c = column(key);
  return c >= 0 && r->val[c] ? r->val[c] : "";
}

static void free_record(struct record *r)
{
  for (int c = 0; c < NUM_COLUMNS; c++)
    free(r->val[c]), r->val[c] = NULL;
}

static struct {
  FILE *csv, *json, *workers, *transfers;
  char host[256], cpu[256], gpu[256], version[32];
  const char *scale;
  int gpus;
} out;

/* lines of one run (workers, transfers) held until its record line arrives */
struct pending {
  char **wrk, **bus;
  int nwrk, nbus;
};

static void add_line(char ***lines, int *n, const char *line)
{
  *lines = realloc(*lines, (size_t)(*n + 1) * sizeof **lines);
  (*lines)[(*n)++] = strdup(line);
}

static void clear_pending(struct pending *p)
{
  for (int i = 0; i < p->nwrk; i++)
    free(p->wrk[i]);
  for (int i = 0; i < p->nbus; i++)
    free(p->bus[i]);
  free(p->wrk), free(p->bus);
  memset(p, 0, sizeof *p);
}

static int is_number(const char *s)
{
  char *end;
  if (!*s)
    return 0;
  strtod(s, &end);
  return *end == 0;
}

/* Writes one record (and its worker and transfer lines) to every output file. */
static void write_record(const struct record *r, const struct pending *p)
{
  const char *key_cols[] = {"scale", "workload", "policy", "worker_set", "phase", "repeat"};
  char key[512] = "";
  for (int k = 0; k < 6; k++)
    snprintf(key + strlen(key), sizeof key - strlen(key), "%s%s", k ? "," : "", get_val(r, key_cols[k]));
  for (int c = 0; c < NUM_COLUMNS; c++)
    fprintf(out.csv, "%s%s", c ? "," : "", r->val[c] ? r->val[c] : "");
  fputc('\n', out.csv);
  fputc('{', out.json);
  for (int c = 0; c < NUM_COLUMNS; c++) {
    const char *v = r->val[c] ? r->val[c] : "";
    if (string_column(c))
      fprintf(out.json, "%s\"%s\":\"%s\"", c ? "," : "", csv_columns[c], v);
    else
      fprintf(out.json, "%s\"%s\":%s", c ? "," : "", csv_columns[c], is_number(v) ? v : "null");
  }
  fprintf(out.json, ",\"workers\":[");
  for (int i = 0; i < p->nwrk; i++) {
    char name[160], kind[8];
    unsigned w;
    double ex, sl, wa, tot;
    int tasks;
    if (sscanf(p->wrk[i], "WRK\t%u\t%159[^\t]\t%7[^\t]\t%lf\t%lf\t%lf\t%lf\t%d", &w, name, kind, &ex, &sl, &wa, &tot,
               &tasks) != 8)
      continue;
    double idle = tot > ex ? tot - ex : 0.0;
    fprintf(out.json, "%s{\"worker\":%u,\"name\":\"%s\",\"kind\":\"%s\",\"executing_s\":%.6f,\"idle_s\":%.6f,"
            "\"sleeping_s\":%.6f,\"waiting_s\":%.6f,\"total_s\":%.6f,\"tasks\":%d}", i ? "," : "", w, name, kind, ex,
            idle, sl, wa, tot, tasks);
    fprintf(out.workers, "%s,%u,%s,%s,%.6f,%.6f,%.6f,%.6f,%.6f,%d\n", key, w, name, kind, ex, idle, sl, wa, tot, tasks);
  }
  fprintf(out.json, "],\"transfers\":[");
  for (int i = 0; i < p->nbus; i++) {
    int src, dst, count;
    char sk[8], dk[8];
    long long bytes;
    if (sscanf(p->bus[i], "BUS\t%d\t%7[^\t]\t%d\t%7[^\t]\t%lld\t%d", &src, sk, &dst, dk, &bytes, &count) != 6)
      continue;
    fprintf(out.json, "%s{\"src_node\":%d,\"src_kind\":\"%s\",\"dst_node\":%d,\"dst_kind\":\"%s\",\"bytes\":%lld,"
            "\"transfers\":%d}", i ? "," : "", src, sk, dst, dk, bytes, count);
    fprintf(out.transfers, "%s,%d,%s,%d,%s,%lld,%d\n", key, src, sk, dst, dk, bytes, count);
  }
  fprintf(out.json, "]}\n");
  fflush(out.csv), fflush(out.json), fflush(out.workers), fflush(out.transfers);
}

/* the columns every record of a configuration shares */
static void base_record(struct record *r, const char *workload, const char *policy, const char *set, const char *phase)
{
  memset(r, 0, sizeof *r);
  set_val(r, "host", out.host);
  set_val(r, "cpu_model", out.cpu);
  set_val(r, "gpu_model", out.gpu);
  set_val(r, "starpu_version", out.version);
  set_val(r, "scale", out.scale);
  set_val(r, "workload", workload);
  set_val(r, "policy", policy);
  set_val(r, "worker_set", set);
  set_val(r, "phase", phase);
}

/* ---- running one configuration ---- */

/* Ctrl-C or SIGTERM: the driver stops after the running configuration, writing the charts of what ran and removing
 * its temporary folder; that configuration's process stops too (Ctrl-C reaches its process group; a signal sent to the
 * driver alone is passed on). */
static volatile sig_atomic_t interrupted;
static volatile sig_atomic_t running_child; /* the pid of the process the driver waits for; 0: none */

static void on_interrupt(int sig)
{
  interrupted = 1;
  if (running_child > 0)
    kill((pid_t)running_child, sig);
}

static void catch_interrupts(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* the interrupt signals held (old: the mask before), so that a child's pid is known to on_interrupt before either
 * comes in */
static void hold_interrupts(sigset_t *old)
{
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, old);
}

/* fork for a child of the driver; the child stops at the interrupt signals again, as the exec'd program would */
static pid_t fork_child(void)
{
  sigset_t old;
  fflush(NULL);
  hold_interrupts(&old);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
  }
  else if (pid > 0)
    running_child = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  return pid;
}

/* waits for the driver's child through signals; -1 when it cannot */
static int wait_child(pid_t pid, int *status)
{
  int rc;
  while ((rc = waitpid(pid, status, 0)) < 0 && errno == EINTR)
    ;
  running_child = 0;
  return rc;
}

struct run_opts {
  const char *self, *scale, *outdir;
  int repeats, warmups, calib_runs, threads, timeout, trace, verbose, keep_homes;
  long long memlimit_mb;
};

/* the checksums of the first configuration of each workload that ran, which all others must match */
static struct {
  int have;
  double a, b;
} reference[NUM_WORKLOADS];

struct outcome {
  int ok;           /* records arrived and the process exited 0 */
  int mismatch;     /* a checksum disagreed with the reference */
  int is_ref;       /* its checksums became the reference */
  double makespan[MAX_REPEATS], util[MAX_REPEATS], moved[MAX_REPEATS];
  int n;
  char why[256];
};

static void set_child_env(const struct run_opts *o, const struct worker_set *ws, const char *policy, int workload,
                          const char *home, int calibrate, const char *trace_dir)
{
  const char *controlled[] = {"STARPU_SCHED", "STARPU_NCPU", "STARPU_NCUDA", "STARPU_NWORKER_PER_CUDA",
                              "STARPU_CALIBRATE", "STARPU_LIMIT_CUDA_MEM", "STARPU_FXT_TRACE", "STARPU_FXT_PREFIX",
                              "STARPU_PROFILING"};
  for (size_t i = 0; i < sizeof controlled / sizeof *controlled; i++)
    unsetenv(controlled[i]);
  char buf[64];
  setenv("STARPU_HOME", home, 1);
  if (strcmp(policy, "default"))
    setenv("STARPU_SCHED", policy, 1);
  if (!ws->gpus)
    setenv("STARPU_NCUDA", "0", 1);
  else if (ws->gpus > 0) {
    snprintf(buf, sizeof buf, "%d", ws->gpus);
    setenv("STARPU_NCUDA", buf, 1);
  }
  if (!ws->cpus)
    setenv("STARPU_NCPU", "0", 1);
  if (ws->per_gpu) {
    snprintf(buf, sizeof buf, "%d", ws->per_gpu);
    setenv("STARPU_NWORKER_PER_CUDA", buf, 1);
  }
  setenv("STARPU_CALIBRATE", calibrate ? "1" : "0", 1);
  if (!strcmp(workloads[workload].name, "memlimit")) {
    snprintf(buf, sizeof buf, "%lld", o->memlimit_mb);
    setenv("STARPU_LIMIT_CUDA_MEM", buf, 1);
  }
  if (trace_dir) {
    setenv("STARPU_FXT_TRACE", "1", 1);
    setenv("STARPU_FXT_PREFIX", trace_dir, 1);
  }
  if (!o->verbose)
    setenv("STARPU_SILENT", "1", 1);
}

/* Runs one phase (calibrate or measure) of a configuration in a process of its own and writes its records. */
static void run_phase(const struct run_opts *o, int workload, const char *policy, const struct worker_set *ws,
                      const char *home, const char *phase, const char *trace_dir, struct outcome *res)
{
  int calibrate = !strcmp(phase, "calibrate");
  int fd[2];
  memset(res, 0, sizeof *res);
  /* the process's messages (StarPU's, a failure's) go to DIR/logs/<workload>_<set>_<policy>_<phase>.log */
  char logpath[PATH_MAX];
  snprintf(logpath, sizeof logpath, "%s/logs", o->outdir);
  mkdir(logpath, 0755);
  snprintf(logpath, sizeof logpath, "%s/logs/%s_%s_%s_%s.log", o->outdir, workloads[workload].name, ws->name, policy,
           phase);
  if (pipe(fd)) {
    snprintf(res->why, sizeof res->why, "pipe: %s", strerror(errno));
    return;
  }
  pid_t pid = fork_child();
  if (pid < 0) {
    snprintf(res->why, sizeof res->why, "fork: %s", strerror(errno));
    close(fd[0]), close(fd[1]);
    return;
  }
  if (pid == 0) {
    dup2(fd[1], STDOUT_FILENO);
    close(fd[0]), close(fd[1]);
    int log = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0)
      dup2(log, STDERR_FILENO), close(log);
    set_child_env(o, ws, policy, workload, home, calibrate, trace_dir);
    char reps[16], warm[16], thr[16], tmo[16];
    snprintf(reps, sizeof reps, "%d", calibrate ? o->calib_runs : o->repeats);
    snprintf(warm, sizeof warm, "%d", calibrate ? 0 : o->warmups);
    snprintf(thr, sizeof thr, "%d", o->threads);
    snprintf(tmo, sizeof tmo, "%d", o->timeout);
    execl(o->self, o->self, "--child", workloads[workload].name, "--scale", o->scale, "--workers", ws->name,
          "--phase", phase, "--repeats", reps, "--warmups", warm, "--threads", thr, "--timeout", tmo, (char *)NULL);
    fprintf(stderr, PROG ": cannot run %s: %s\n", o->self, strerror(errno));
    _exit(127);
  }
  close(fd[1]);
  FILE *in = fdopen(fd[0], "r");
  char *line = NULL;
  size_t cap = 0;
  struct pending p = {0};
  while (getline(&line, &cap, in) > 0) {
    line[strcspn(line, "\n")] = 0;
    if (!strncmp(line, "WRK\t", 4))
      add_line(&p.wrk, &p.nwrk, line);
    else if (!strncmp(line, "BUS\t", 4))
      add_line(&p.bus, &p.nbus, line);
    else if (!strncmp(line, "REC\t", 4)) {
      struct record r;
      base_record(&r, workloads[workload].name, policy, ws->name, phase);
      for (char *tok = strtok(line + 4, "\t"); tok; tok = strtok(NULL, "\t")) {
        char *eq = strchr(tok, '=');
        if (eq) {
          *eq = 0;
          set_val(&r, tok, eq + 1);
        }
      }
      set_val(&r, "status", "ok");
      double a = atof(get_val(&r, "checksum_a")), b = atof(get_val(&r, "checksum_b"));
      double tol = atof(get_val(&r, "checksum_tol"));
      const char *check = "ref";
      if (calibrate)
        check = "";
      else if (!reference[workload].have) {
        reference[workload].have = 1;
        res->is_ref = 1;
        reference[workload].a = a, reference[workload].b = b;
      }
      else {
        double ra = reference[workload].a, rb = reference[workload].b;
        int same = fabs(a - ra) <= tol * fmax(fabs(ra), 1e-30) && fabs(b - rb) <= tol * fmax(fabs(rb), 1e-30);
        check = same ? "ok" : "MISMATCH";
        res->mismatch |= !same;
      }
      set_val(&r, "check", check);
      if (res->n < MAX_REPEATS) {
        res->makespan[res->n] = atof(get_val(&r, "makespan_s"));
        res->util[res->n] = atof(get_val(&r, "mean_utilisation"));
        res->moved[res->n] = atof(get_val(&r, "bytes_moved"));
        res->n++;
      }
      write_record(&r, &p);
      free_record(&r);
      clear_pending(&p);
    }
  }
  free(line);
  clear_pending(&p);
  fclose(in);
  int status = 0;
  if (wait_child(pid, &status) < 0)
    snprintf(res->why, sizeof res->why, "waitpid: %s", strerror(errno));
  else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && res->n > 0)
    res->ok = 1;
  else if (interrupted)
    snprintf(res->why, sizeof res->why, "interrupted");
  else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    snprintf(res->why, sizeof res->why, "timeout after %d s", o->timeout);
  else if (WIFSIGNALED(status))
    snprintf(res->why, sizeof res->why, "killed by signal %d", WTERMSIG(status));
  else
    snprintf(res->why, sizeof res->why, "exit status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  struct stat lst;
  if (res->ok && !stat(logpath, &lst) && lst.st_size == 0)
    unlink(logpath);
  if (!res->ok) {
    /* the last line of the log says why */
    FILE *lf = fopen(logpath, "r");
    char l[256], last[256] = "";
    while (lf && fgets(l, sizeof l, lf))
      if (l[0] != '\n')
        snprintf(last, sizeof last, "%s", l);
    if (lf)
      fclose(lf);
    last[strcspn(last, "\n")] = 0;
    clean(last);
    if (last[0])
      snprintf(res->why + strlen(res->why), sizeof res->why - strlen(res->why), ": %.100s", last);
    struct record r;
    base_record(&r, workloads[workload].name, policy, ws->name, phase);
    set_val(&r, "status", res->why[0] ? res->why : "no records");
    struct pending none = {0};
    write_record(&r, &none);
    free_record(&r);
  }
}

static double median_of(double *v, int n)
{
  double tmp[MAX_REPEATS];
  memcpy(tmp, v, (size_t)n * sizeof *v);
  return n ? median(tmp, n) : NAN;
}

/* ---- files and programs: the user's text never goes through a shell ---- */

static int have_program(const char *name)
{
  const char *path = getenv("PATH");
  if (!path)
    return 0;
  char *copy = strdup(path), *save = NULL;
  int found = 0;
  for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", *d ? d : ".", name);
    found = access(p, X_OK) == 0;
  }
  free(copy);
  return found;
}

/* nftw's callback has no argument of its own: the copy in progress */
static struct {
  size_t from_len; /* length of the source root: the rest of a path is its place in the tree */
  const char *to;
  char failed[PATH_MAX + 64];
} copying;

/* Copies a regular file's bytes into a new file dst with the given mode. */
static int copy_file(const char *src, const char *dst, mode_t mode)
{
  int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0)
    return -1;
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
  if (out < 0) {
    int e = errno;
    close(in);
    errno = e;
    return -1;
  }
  char buf[1 << 16];
  ssize_t n;
  int rc = 0;
  while (!rc && (n = read(in, buf, sizeof buf)) != 0) {
    if (n < 0) {
      rc = errno == EINTR ? 0 : -1;
      continue;
    }
    for (ssize_t done = 0, w; done < n && !rc; done += w > 0 ? w : 0)
      if ((w = write(out, buf + done, (size_t)(n - done))) < 0 && errno != EINTR)
        rc = -1;
  }
  int e = errno;
  if (close(out) && !rc)
    rc = -1, e = errno;
  close(in);
  errno = e;
  return rc;
}

static int copy_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)ftw;
  char dst[PATH_MAX], target[PATH_MAX];
  int rc = -1;
  ssize_t n;
  if (snprintf(dst, sizeof dst, "%s%s", copying.to, path + copying.from_len) >= (int)sizeof dst)
    errno = ENAMETOOLONG;
  else if (flag == FTW_D) /* owner access kept: the files inside must be written */
    rc = mkdir(dst, (st->st_mode & 07777) | 0700);
  else if (flag == FTW_F && S_ISREG(st->st_mode))
    rc = copy_file(path, dst, st->st_mode);
  else if (flag == FTW_SL && (n = readlink(path, target, sizeof target - 1)) >= 0) {
    target[n] = 0;
    rc = symlink(target, dst);
  }
  else if (flag == FTW_F) /* a device, pipe or socket: nothing a STARPU_HOME holds, and reading a pipe would wait */
    errno = ENOTSUP;
  else if (flag != FTW_SL)
    errno = EACCES; /* FTW_DNR, FTW_NS: unreadable */
  if (rc)
    snprintf(copying.failed, sizeof copying.failed, "%s: %s", path, strerror(errno));
  return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* Removes a tree (symbolic links themselves, not what they point to). */
static void remove_tree(const char *path)
{
  nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The driver's temporary folder (the STARPU_HOMEs), and the output folder while this run made it and wrote nothing
 * there: removed on every way out of the driver (atexit: main's returns and CHECK's exit; SIGINT and SIGTERM end the
 * run through the interrupted flag). Children leave by exec or _exit and never remove them. */
static char temp_base[PATH_MAX];
static char made_outdir[PATH_MAX];

static void remove_leftovers(void)
{
  if (temp_base[0])
    remove_tree(temp_base);
  if (made_outdir[0])
    rmdir(made_outdir); /* only when empty */
  temp_base[0] = made_outdir[0] = 0;
}

/* $TMPDIR/starproj-bench-XXXXXX (or under /tmp); NULL with a message when it cannot be made */
static const char *make_temp_base(void)
{
  const char *tmpdir = getenv("TMPDIR");
  tmpdir = tmpdir && *tmpdir ? tmpdir : "/tmp";
  char tmpl[PATH_MAX];
  if (snprintf(tmpl, sizeof tmpl, "%s/starproj-bench-XXXXXX", tmpdir) >= (int)sizeof tmpl)
    errno = ENAMETOOLONG;
  else if (mkdtemp(tmpl)) {
    memcpy(temp_base, tmpl, sizeof temp_base);
    return temp_base;
  }
  fprintf(stderr, PROG ": cannot make a temporary folder in %s: %s\n", tmpdir, strerror(errno));
  return NULL;
}

/* The output place, before any work: created, or an existing folder in which a file can be made (a file made and
 * removed again: modes, read-only file systems and root all answer). 0, or a message naming it and exit status 2. */
static int check_output(const char *outdir)
{
  struct stat st;
  char probe[PATH_MAX];
  if (!mkdir(outdir, 0755))
    snprintf(made_outdir, sizeof made_outdir, "%s", outdir);
  else if (errno != EEXIST) {
    fprintf(stderr, PROG ": --output '%s': cannot create the folder: %s\n", outdir, strerror(errno));
    return 2;
  }
  else if (stat(outdir, &st) || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, PROG ": --output '%s': exists and is not a folder\n", outdir);
    return 2;
  }
  int fd = -1;
  if (snprintf(probe, sizeof probe, "%s/.starproj-bench-XXXXXX", outdir) >= (int)sizeof probe)
    errno = ENAMETOOLONG;
  else
    fd = mkstemp(probe);
  if (fd < 0) {
    fprintf(stderr, PROG ": --output '%s': cannot write in the folder: %s\n", outdir, strerror(errno));
    remove_leftovers();
    return 2;
  }
  close(fd);
  unlink(probe);
  return 0;
}

/* Makes to (which must not exist) a copy of the tree from: folders, regular files and symbolic links, as 'cp -R'
 * did, without a shell. 0, or -1 with the reason in why and nothing left at to. */
static int copy_tree(const char *from, const char *to, char *why, size_t n)
{
  copying.from_len = strlen(from);
  copying.to = to;
  copying.failed[0] = 0;
  struct stat st;
  if (!lstat(to, &st)) {
    snprintf(why, n, "%s exists", to);
    return -1;
  }
  if (!nftw(from, copy_entry, 16, FTW_PHYS))
    return 0;
  if (!copying.failed[0])
    snprintf(copying.failed, sizeof copying.failed, "%s: %s", from, strerror(errno));
  snprintf(why, n, "%s", copying.failed);
  remove_tree(to);
  return -1;
}

/* Runs a program found on PATH with the argument vector argv: no shell, so every argument reaches it as given. It
 * runs in folder dir (the caller's when NULL) with stdout and stderr into the file log, or stderr to /dev/null when
 * log is NULL (log is opened before the change of folder). 0 when it exited 0; else -1 with the reason in why. */
static int run_program(char *const argv[], const char *dir, const char *log, char *why, size_t n)
{
  extern char **environ;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  int rc;
  if (log) {
    rc = posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!rc)
      rc = posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  }
  else
    rc = posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  if (!rc && dir)
    rc = posix_spawn_file_actions_addchdir_np(&fa, dir);
  /* the child starts with the signal mask of before and the default actions: interrupted, it stops with us */
  posix_spawnattr_t attr;
  sigset_t old, dfl;
  posix_spawnattr_init(&attr);
  hold_interrupts(&old);
  sigemptyset(&dfl);
  sigaddset(&dfl, SIGINT);
  sigaddset(&dfl, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &old);
  posix_spawnattr_setsigdefault(&attr, &dfl);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  if (!rc)
    rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
  if (!rc)
    running_child = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc) {
    snprintf(why, n, "cannot run %s: %s", argv[0], strerror(rc));
    return -1;
  }
  int status;
  if (wait_child(pid, &status) < 0) {
    snprintf(why, n, "waiting for %s: %s", argv[0], strerror(errno));
    return -1;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  if (WIFEXITED(status))
    snprintf(why, n, "%s exited with status %d", argv[0], WEXITSTATUS(status));
  else
    snprintf(why, n, "%s was killed by signal %d", argv[0], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return -1;
}

/* copies the bus calibration (not the codelet models) of the probe's STARPU_HOME, so that each configuration skips
 * StarPU's bus benchmark without inheriting any performance model */
static void copy_bus_calibration(const char *from, const char *to)
{
  char src[PATH_MAX], dir[PATH_MAX], sampling[PATH_MAX], dst[PATH_MAX], why[PATH_MAX + 64];
  struct stat st;
  if (snprintf(src, sizeof src, "%s/.starpu/sampling/bus", from) >= (int)sizeof src || stat(src, &st) ||
      !S_ISDIR(st.st_mode))
    return;
  if (snprintf(dir, sizeof dir, "%s/.starpu", to) >= (int)sizeof dir ||
      snprintf(sampling, sizeof sampling, "%s/sampling", dir) >= (int)sizeof sampling ||
      snprintf(dst, sizeof dst, "%s/bus", sampling) >= (int)sizeof dst)
    snprintf(why, sizeof why, "%s: name too long", to);
  else {
    mkdir(dir, 0700);
    mkdir(sampling, 0700);
    if (!copy_tree(src, dst, why, sizeof why))
      return;
  }
  /* without it the configuration calibrates the bus itself: slower, no less right */
  fprintf(stderr, PROG ": bus calibration not copied (%s)\n", why);
}

/* keeps a configuration's STARPU_HOME as DIR/homes/<workload>_<set>_<policy> */
static void keep_home(const char *outdir, const char *home, const char *wname, const char *set, const char *policy)
{
  char kept[PATH_MAX], why[PATH_MAX + 64];
  snprintf(kept, sizeof kept, "%s/homes", outdir);
  mkdir(kept, 0755);
  /* a cut name would name another tree, which the removal below must not touch */
  if (snprintf(kept, sizeof kept, "%s/homes/%s_%s_%s", outdir, wname, set, policy) >= (int)sizeof kept) {
    printf("        could not keep %s: the name under %s/homes is too long\n", home, outdir);
    return;
  }
  remove_tree(kept);
  if (copy_tree(home, kept, why, sizeof why))
    printf("        could not keep %s: %s\n", home, why);
}

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Converts a configuration's FxT traces (tdir ends with '/') with starpu_fxt_tool run in that folder, where its
 * output files land, given the trace files by name. */
static void convert_traces(const char *tdir)
{
  if (!have_program("starpu_fxt_tool")) {
    printf("        trace in %s (starpu_fxt_tool not found: not converted)\n", tdir);
    return;
  }
  DIR *d = opendir(tdir);
  char **argv = NULL, log[PATH_MAX], why[PATH_MAX + 64];
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (!strncmp(e->d_name, "prof_file_", 10)) {
      argv = realloc(argv, (size_t)(n + 4) * sizeof *argv);
      argv[2 + n++] = strdup(e->d_name);
    }
  if (d)
    closedir(d);
  if (!n) {
    printf("        no trace file in %s: nothing to convert\n", tdir);
    return;
  }
  qsort(argv + 2, (size_t)n, sizeof *argv, by_name);
  argv[0] = "starpu_fxt_tool", argv[1] = "-i", argv[2 + n] = NULL;
  snprintf(log, sizeof log, "%sfxt_tool.log", tdir);
  if (run_program(argv, tdir, log, why, sizeof why))
    printf("        starpu_fxt_tool failed (%s): see %sfxt_tool.log\n", why, tdir);
  for (int i = 0; i < n; i++)
    free(argv[2 + i]);
  free(argv);
}

/* ---- charts ---- */

struct summary {
  double makespan, util, moved; /* medians over repeats; NaN when it did not run */
};

/* One data file and one clustered-bar chart per worker set and metric: a group of bars per workload, a bar per
 * policy. */
static void charts(const char *outdir, int nw, const int *wl, int np, char **pol, int ns, const struct worker_set *sets,
                   struct summary (*sum)[MAX_SETS][MAX_POLICIES])
{
  const char *metric[3] = {"makespan", "utilisation", "bytes"};
  const char *ylabel[3] = {"makespan (s, median)", "mean worker busy time / makespan", "MB moved between nodes"};
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/charts.gp", outdir);
  FILE *gp = fopen(path, "w");
  if (!gp)
    return;
  int plots = 0;
  fprintf(gp, "# gnuplot script written by " PROG "\nset terminal pngcairo size 1400,700 noenhanced\n"
          "set style data histograms\nset style histogram clustered gap 1\nset yrange [0:*]\nset style fill solid 0.8 border -1\n"
          "set datafile missing '?'\nset key outside right top\nset xtics rotate by -30\nset grid ytics\n");
  for (int s = 0; s < ns; s++)
    for (int m = 0; m < 3; m++) {
      snprintf(path, sizeof path, "%s/%s_%s.dat", outdir, metric[m], sets[s].name);
      for (char *c = strrchr(path, '/') + 1; *c; c++)
        if (*c == ':')
          *c = '_';
      FILE *d = fopen(path, "w");
      if (!d)
        continue;
      fprintf(d, "workload");
      for (int p = 0; p < np; p++)
        fprintf(d, " %s", pol[p]);
      fputc('\n', d);
      int values = 0;
      for (int w = 0; w < nw; w++) {
        fprintf(d, "%s", workloads[wl[w]].name);
        for (int p = 0; p < np; p++) {
          struct summary *x = &sum[w][s][p];
          double v = m == 0 ? x->makespan : m == 1 ? x->util : x->moved / 1e6;
          if (isnan(v))
            fprintf(d, " ?");
          else
            fprintf(d, " %.6g", v), values++;
        }
        fputc('\n', d);
      }
      fclose(d);
      if (!values) /* nothing ran on this set: gnuplot would stop at an empty plot */
        continue;
      plots++;
      const char *file = strrchr(path, '/') + 1;
      char png[PATH_MAX];
      snprintf(png, sizeof png, "%.*s.png", (int)(strlen(file) - 4), file);
      fprintf(gp, "set output '%s'\nset title '%s, worker set %s, scale %s'\nset ylabel '%s'\n", png, metric[m],
              sets[s].name, out.scale, ylabel[m]);
      fprintf(gp, "plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i)\n", np + 1, file);
    }
  fclose(gp);
  if (!plots) {
    printf("charts: no configuration ran, nothing to draw\n");
    return;
  }
  if (!have_program("gnuplot")) {
    printf("charts skipped: gnuplot is not installed (Debian: apt-get install gnuplot-nox); the data files and\n"
           "%s/charts.gp are written: run 'gnuplot charts.gp' in %s later\n", outdir, outdir);
    return;
  }
  char *argv[] = {"gnuplot", "charts.gp", NULL}, why[PATH_MAX + 64];
  if (!run_program(argv, outdir, NULL, why, sizeof why))
    printf("charts: %s/makespan_*.png, utilisation_*.png, bytes_*.png\n", outdir);
  else
    printf("charts: gnuplot failed on %s/charts.gp (%s; run it there to see why)\n", outdir, why);
}

/* Runs the program in probe mode in home: the GPUs and CPU workers starproj finds, the models of both. */
static int probe(const char *self, const char *home, int verbose, int *gpus)
{
  int fd[2];
  if (pipe(fd))
    return -1;
  pid_t pid = fork_child();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    dup2(fd[1], STDOUT_FILENO);
    close(fd[0]), close(fd[1]);
    setenv("STARPU_HOME", home, 1);
    if (!verbose)
      setenv("STARPU_SILENT", "1", 1);
    execl(self, self, "--probe", (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  FILE *in = fdopen(fd[0], "r");
  char line[1024];
  int found = 0;
  while (fgets(line, sizeof line, in)) {
    line[strcspn(line, "\n")] = 0;
    if (strncmp(line, "PROBE\t", 6))
      continue;
    for (char *tok = strtok(line + 6, "\t"); tok; tok = strtok(NULL, "\t")) {
      if (!strncmp(tok, "gpus=", 5))
        *gpus = atoi(tok + 5), found = 1;
      else if (!strncmp(tok, "gpu_model=", 10))
        snprintf(out.gpu, sizeof out.gpu, "%s", tok + 10);
      else if (!strncmp(tok, "cpu_model=", 10))
        snprintf(out.cpu, sizeof out.cpu, "%s", tok + 10);
    }
  }
  fclose(in);
  int status;
  if (wait_child(pid, &status) < 0)
    return -1;
  return found && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* bytes the whole-sinogram workloads keep on a GPU: LORs, two projection vectors, two images */
static long long data_bytes(const struct scale *sc)
{
  sproj_scanner *s;
  struct sproj_sinogram_info si;
  make_scanner(sc, &s);
  CHECK(sproj_scanner_info(s, &si));
  CHECK(sproj_scanner_destroy(s));
  return si.num_lors * 32 + 8LL * sc->dims[0] * sc->dims[1] * sc->dims[2];
}

static void list_all(int gpus)
{
  printf("workloads:\n");
  for (int i = 0; i < NUM_WORKLOADS; i++)
    printf("  %-17s %s%s\n", workloads[i].name, workloads[i].what, workloads[i].needs_gpu ? " (GPUs only)" : "");
  printf("policies of this StarPU build (plus 'default': starproj's own choice, no STARPU_SCHED):\n ");
  for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); p && *p; p++)
    printf(" %s%s", (*p)->policy_name, model_based((*p)->policy_name) ? "*" : "");
  printf("\n  (* model-based: calibrated with STARPU_CALIBRATE=1 before being measured)\n");
  printf("worker sets on this machine (%d GPUs):\n  cpu", gpus);
  if (gpus > 0) {
    printf(" gpu all");
    for (int g = 1; g < gpus; g++)
      printf(" gpu%d", g);
    printf(" gpu:w1 gpu:w2 gpu:w8 (and any set with :wK)");
  }
  printf("\nscales: tiny small full\n");
#ifdef STARPU_USE_FXT
  printf("--trace: available (StarPU built with FxT)\n");
#else
  printf("--trace: unavailable (this StarPU was built without FxT)\n");
#endif
}

/* ---- options ---- */

/* the options as given (lists unsplit) */
struct options {
  const char *child, *scale, *outdir, *phase, *wl_arg, *sched_arg, *set_arg, *threads_arg;
  int list, probe, repeats, warmups, calib_runs, threads, timeout, trace, verbose, keep_homes;
};

/* what the lists ask for */
struct plan {
  char *pol[MAX_POLICIES];
  int np;
  int wl[NUM_WORKLOADS], nw;
  struct worker_set sets[MAX_SETS];
  int ns;
  char *copies[3]; /* the lists split in place */
};

enum { O_CHILD = 256, O_PROBE, O_PHASE };
static const struct option longopts[] = {
  {"list", no_argument, 0, 'l'},          {"workloads", required_argument, 0, 'W'},
  {"scheds", required_argument, 0, 's'},  {"workers", required_argument, 0, 'k'},
  {"scale", required_argument, 0, 'S'},   {"repeats", required_argument, 0, 'r'},
  {"warmups", required_argument, 0, 'w'}, {"calibration-runs", required_argument, 0, 'c'},
  {"threads", required_argument, 0, 't'}, {"timeout", required_argument, 0, 'T'},
  {"output", required_argument, 0, 'o'},  {"trace", no_argument, 0, 'x'},
  {"keep-homes", no_argument, 0, 'K'},    {"verbose", no_argument, 0, 'v'},
  {"help", no_argument, 0, 'h'},          {"child", required_argument, 0, O_CHILD},
  {"probe", no_argument, 0, O_PROBE},     {"phase", required_argument, 0, O_PHASE},
  {0, 0, 0, 0}};

/* the name of the long option whose code is val: getopt_long only gives the code of one that lacks its value (and
 * argv holds what was typed, perhaps an abbreviation) */
static const char *option_name(int val)
{
  for (const struct option *o = longopts; o->name; o++)
    if (o->val == val)
      return o->name;
  return "?";
}

/* One option into o: 0, or a message and exit status 2 (numbers out of range exit 2 in option_number). */
static int take_option(int c, struct options *o)
{
  switch (c) {
  case 'l': o->list = 1; break;
  case 'W': o->wl_arg = optarg; break;
  case 's': o->sched_arg = optarg; break;
  case 'k': o->set_arg = optarg; break;
  case 'S':
    if (strcmp(optarg, "tiny") && strcmp(optarg, "small") && strcmp(optarg, "full"))
      return usage_error("--scale needs tiny, small or full, not '%s'", optarg);
    o->scale = optarg;
    break;
  case 'r': o->repeats = (int)option_number(PROG, "--repeats", optarg, 1, MAX_REPEATS); break;
  case 'w': o->warmups = (int)option_number(PROG, "--warmups", optarg, 0, 100); break;
  case 'c': o->calib_runs = (int)option_number(PROG, "--calibration-runs", optarg, 1, 100); break;
  case 't': o->threads_arg = optarg; break; /* its range depends on --child, perhaps given later */
  case 'T': o->timeout = (int)option_number(PROG, "--timeout", optarg, 1, 86400); break;
  case 'o': o->outdir = optarg; break;
  case 'x': o->trace = 1; break;
  case 'K': o->keep_homes = 1; break;
  case 'v': o->verbose = 1; break;
  case 'h': fputs(usage_text, stdout); exit(0);
  case O_CHILD: o->child = optarg; break;
  case O_PROBE: o->probe = 1; break;
  case O_PHASE: o->phase = optarg; break;
  }
  return 0;
}

/* Reads argv into o: 0, or a message naming the option and its value, and exit status 2. */
static int parse_options(int argc, char **argv, struct options *o)
{
  *o = (struct options){.scale = "small", .outdir = "starproj-bench-results", .phase = "measure", .repeats = 3,
                        .warmups = 1, .calib_runs = 3};
  opterr = 0;
  for (int c, rc; (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1;) {
    if (c == ':')
      return usage_error("--%s needs a value", option_name(optopt));
    if (c == '?' && optopt)
      return usage_error("unknown option '-%c'", optopt);
    if (c == '?')
      return usage_error("unknown option '%s'", argv[optind - 1]);
    /* '--output --trace' took the next option as its value: the value is what is missing */
    if (optarg && (!*optarg || !strncmp(optarg, "--", 2)))
      return usage_error("--%s needs a value, not '%s'", option_name(c), optarg);
    if ((rc = take_option(c, o)))
      return rc;
  }
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  /* 0 host threads only from the driver to a configuration's process: the scale's number */
  if (o->threads_arg)
    o->threads = (int)option_number(PROG, "--threads", o->threads_arg, o->child ? 0 : 1, 256);
  if (strcmp(o->phase, "measure") && strcmp(o->phase, "calibrate"))
    return usage_error("--phase needs calibrate or measure, not '%s'", o->phase);
  if (!o->timeout)
    o->timeout = !strcmp(o->scale, "tiny") ? 120 : !strcmp(o->scale, "small") ? 600 : 1200;
  return 0;
}

/* a policy of this StarPU build (the list is there before starpu_init), or starproj's 'default' */
static int known_policy(const char *name)
{
  if (!strcmp(name, "default"))
    return 1;
  for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); p && *p; p++)
    if (!strcmp((*p)->policy_name, name))
      return 1;
  return 0;
}

static int check_policies(const char *arg, struct plan *pl)
{
  if (!arg) {
    pl->pol[pl->np++] = "default";
    /* graph_test schedules only when the application calls starpu_do_schedule(): starproj's own waits (in
     * sproj_recon_create, image syncs) then wait forever. It runs when asked for by name. */
    for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); p && *p && pl->np < MAX_POLICIES;
         p++)
      if (strcmp((*p)->policy_name, "graph_test"))
        pl->pol[pl->np++] = (char *)(*p)->policy_name;
    return 0;
  }
  if (split_list("--scheds", arg, &pl->copies[0], pl->pol, MAX_POLICIES, &pl->np))
    return 2;
  for (int i = 0; i < pl->np; i++)
    if (!known_policy(pl->pol[i]))
      return usage_error("--scheds: unknown policy '%s' (--list shows this StarPU's policies)", pl->pol[i]);
  return 0;
}

static int check_workloads(const char *arg, struct plan *pl)
{
  char *names[NUM_WORKLOADS * 4];
  int n;
  if (!arg) {
    for (int j = 0; j < NUM_WORKLOADS; j++)
      pl->wl[pl->nw++] = j;
    return 0;
  }
  if (split_list("--workloads", arg, &pl->copies[1], names, NUM_WORKLOADS * 4, &n))
    return 2;
  for (int i = 0; i < n; i++) {
    int k = -1, dup = 0;
    for (int j = 0; j < NUM_WORKLOADS; j++)
      if (!strcmp(workloads[j].name, names[i]))
        k = j;
    if (k < 0)
      return usage_error("--workloads: unknown workload '%s' (--list shows them)", names[i]);
    for (int j = 0; j < pl->nw; j++)
      dup |= pl->wl[j] == k;
    if (!dup)
      pl->wl[pl->nw++] = k;
  }
  return 0;
}

/* the worker sets named (without --workers the driver picks them once it knows the GPUs) */
static int check_sets(const char *arg, struct plan *pl)
{
  char *names[MAX_SETS];
  int n;
  if (!arg)
    return 0;
  if (split_list("--workers", arg, &pl->copies[2], names, MAX_SETS, &n))
    return 2;
  for (int i = 0; i < n; i++)
    if (parse_set(names[i], &pl->sets[pl->ns++]))
      return usage_error("--workers: unknown worker set '%s' (cpu, gpu, gpuN, all, optionally with :wK)", names[i]);
  return 0;
}

/* Every list checked before anything runs: 0, or a message and exit status 2. */
static int check_lists(const struct options *o, struct plan *pl)
{
  memset(pl, 0, sizeof *pl);
#ifndef STARPU_USE_FXT
  if (o->trace) {
    fprintf(stderr, PROG ": --trace is unavailable: this StarPU was built without FxT (STARPU_USE_FXT is not set in\n"
            "starpu_config.h); rebuild StarPU with --with-fxt to record traces\n");
    return 2;
  }
#endif
  int rc = check_policies(o->sched_arg, pl);
  if (!rc)
    rc = check_workloads(o->wl_arg, pl);
  if (!rc)
    rc = check_sets(o->set_arg, pl);
  return rc;
}

static void free_plan(struct plan *pl)
{
  for (int i = 0; i < 3; i++)
    free(pl->copies[i]), pl->copies[i] = NULL;
}

int main(int argc, char **argv)
{
  struct options opt;
  struct plan plan;
  int rc = parse_options(argc, argv, &opt);
  if (rc)
    return rc;
  if (opt.probe)
    return probe_main();
  if (opt.child) {
    alarm((unsigned)opt.timeout); /* a policy that never finishes is stopped; the driver reports the timeout */
    return child_main(opt.child, opt.scale, opt.set_arg ? opt.set_arg : "cpu", opt.phase, opt.repeats, opt.warmups,
                      opt.threads);
  }
  if ((rc = check_lists(&opt, &plan))) {
    free_plan(&plan);
    return rc;
  }
  /* the names below as the driver used them before its options had a structure of their own */
  const char *scale = opt.scale, *outdir = opt.outdir, *set_arg = opt.set_arg;
  int list = opt.list, repeats = opt.repeats, warmups = opt.warmups, calib_runs = opt.calib_runs;
  int threads = opt.threads, timeout = opt.timeout, trace = opt.trace, verbose = opt.verbose;
  int keep_homes = opt.keep_homes, np = plan.np, nw = plan.nw, ns = plan.ns, *wl = plan.wl;
  char **pol = plan.pol;
  struct worker_set *sets = plan.sets;

  /* STARPU_LIMIT_CUDA_MEM of the memlimit workload: below the data size, above what an image and its per-worker
   * buffers need */
  const struct scale *sc = NULL;
  for (int i = 0; i < NUM_SCALES; i++)
    if (!strcmp(scales[i].name, scale))
      sc = &scales[i];
  rc = list ? 0 : check_output(outdir);
  if (rc)
    return rc;
  atexit(remove_leftovers);
  catch_interrupts();
  long long need = data_bytes(sc), img = 4LL * sc->dims[0] * sc->dims[1] * sc->dims[2];
  long long memlimit_mb = (need / 2 > 16 * img ? need / 2 : 16 * img) / (1 << 20) + 1;

  /* the machine: a probe process in a STARPU_HOME of its own */
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    fprintf(stderr, PROG ": cannot find its own executable\n");
    return 1;
  }
  self[len] = 0;
  const char *base = make_temp_base();
  if (!base)
    return 1;
  char probe_home[PATH_MAX + 16];
  snprintf(probe_home, sizeof probe_home, "%s/probe", base);
  mkdir(probe_home, 0700);
  int gpus = 0;
  snprintf(out.cpu, sizeof out.cpu, "unknown");
  snprintf(out.gpu, sizeof out.gpu, "none");
  if (probe(self, probe_home, verbose, &gpus) || interrupted) {
    if (interrupted)
      fprintf(stderr, PROG ": interrupted\n");
    else
      fprintf(stderr, PROG ": starproj could not start on this machine (run with --verbose to see StarPU's messages)\n");
    return interrupted ? 130 : 1;
  }
  if (list) {
    list_all(gpus);
    return 0;
  }
  if (!set_arg) {
    parse_set("cpu", &sets[ns++]);
    if (gpus > 0) {
      parse_set("gpu", &sets[ns++]);
      parse_set("all", &sets[ns++]);
      for (int g = 1; g < gpus && ns < MAX_SETS - 3; g++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", g);
        parse_set(name, &sets[ns++]);
      }
      parse_set("gpu:w1", &sets[ns++]);
      parse_set("gpu:w2", &sets[ns++]);
      parse_set("gpu:w8", &sets[ns++]);
    }
  }
  for (int s = 0; s < ns; s++)
    if (sets[s].gpus && (gpus == 0 || sets[s].gpus > gpus)) {
      fprintf(stderr, PROG ": --workers: worker set '%s' needs %s; this machine has %d\n", sets[s].name,
              sets[s].gpus > 0 ? "more GPUs" : "GPUs", gpus);
      return 2;
    }

  /* outputs (the folder was checked before any work) */
  char path[PATH_MAX];
  FILE **files[4] = {&out.csv, &out.json, &out.workers, &out.transfers};
  const char *names[4] = {"results.csv", "results.jsonl", "workers.csv", "transfers.csv"};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", outdir, names[i]);
    if (!(*files[i] = fopen(path, "w"))) {
      fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
      return 2;
    }
  }
  made_outdir[0] = 0; /* written into: kept whatever happens */
  for (int c = 0; c < NUM_COLUMNS; c++)
    fprintf(out.csv, "%s%s", c ? "," : "", csv_columns[c]);
  fputc('\n', out.csv);
  fprintf(out.workers, "scale,workload,policy,worker_set,phase,repeat,worker,name,kind,executing_s,idle_s,"
          "sleeping_s,waiting_s,total_s,tasks\n");
  fprintf(out.transfers, "scale,workload,policy,worker_set,phase,repeat,src_node,src_kind,dst_node,dst_kind,bytes,"
          "transfers\n");
  gethostname(out.host, sizeof out.host - 1);
  clean(out.host);
  int maj, min, rel;
  starpu_get_version(&maj, &min, &rel);
  snprintf(out.version, sizeof out.version, "%d.%d.%d", maj, min, rel);
  out.scale = scale;
  out.gpus = gpus;

  struct run_opts o = {self, scale, outdir, repeats, warmups, calib_runs, threads, timeout, trace, verbose, keep_homes,
                       0};
  o.memlimit_mb = memlimit_mb;

  int total = 0;
  for (int w = 0; w < nw; w++)
    for (int s = 0; s < ns; s++)
      total += np;
  struct summary (*sum)[MAX_SETS][MAX_POLICIES] = calloc((size_t)nw, sizeof *sum);
  printf(PROG ": %d configurations (%d workloads x %d worker sets x %d policies), scale %s, %d repeats after %d "
         "warm-ups; host %s, %d GPUs (%s), StarPU %s; results in %s\n", total, nw, ns, np, scale, repeats, warmups,
         out.host, gpus, out.gpu, out.version, outdir);
  int done = 0, failed = 0, mismatched = 0;
  double t_start = now();
  for (int w = 0; w < nw && !interrupted; w++)
    for (int s = 0; s < ns && !interrupted; s++)
      for (int p = 0; p < np && !interrupted; p++) {
        struct summary *x = &sum[w][s][p];
        x->makespan = x->util = x->moved = NAN;
        done++;
        const char *wname = workloads[wl[w]].name;
        int el = (int)(now() - t_start);
        printf("[%3d/%d %2d:%02d] %-16s %-12s %-26s ", done, total, el / 60, el % 60, wname, sets[s].name, pol[p]);
        fflush(stdout);
        if (workloads[wl[w]].needs_gpu && !sets[s].gpus) {
          printf("skipped (needs GPUs)\n");
          struct record r;
          struct pending none = {0};
          base_record(&r, wname, pol[p], sets[s].name, "measure");
          set_val(&r, "status", "skipped: needs GPUs");
          write_record(&r, &none);
          free_record(&r);
          continue;
        }
        char home[PATH_MAX + 16], trace_dir[PATH_MAX], *tdir = NULL;
        snprintf(home, sizeof home, "%s/home-%d", base, done);
        mkdir(home, 0700);
        copy_bus_calibration(probe_home, home);
        if (trace) {
          snprintf(trace_dir, sizeof trace_dir, "%s/traces", outdir);
          mkdir(trace_dir, 0755);
          snprintf(trace_dir, sizeof trace_dir, "%s/traces/%s_%s_%s", outdir, wname, sets[s].name, pol[p]);
          mkdir(trace_dir, 0755);
          strcat(trace_dir, "/");
          tdir = trace_dir;
        }
        struct outcome res;
        double t0 = now();
        /* starproj's default is dmda when projections may go to CPU cores and GPUs */
        if (model_based(pol[p]) || (!strcmp(pol[p], "default") && sets[s].cpus && sets[s].gpus)) {
          run_phase(&o, wl[w], pol[p], &sets[s], home, "calibrate", NULL, &res);
          if (!res.ok)
            printf("calibration %s; ", res.why);
          else
            printf("calibrated (%d runs, median %.4f s); ", res.n, median_of(res.makespan, res.n));
        }
        run_phase(&o, wl[w], pol[p], &sets[s], home, "measure", tdir, &res);
        if (!res.ok) {
          printf("%s%s\n", interrupted ? "" : "FAILED: ", res.why);
          failed += !interrupted;
        }
        else {
          x->makespan = median_of(res.makespan, res.n);
          x->util = median_of(res.util, res.n);
          x->moved = median_of(res.moved, res.n);
          printf("makespan %.4f s (median of %d), utilisation %.2f, %.1f MB moved, check %s (%.1f s)\n", x->makespan,
                 res.n, x->util, x->moved / 1e6, res.mismatch ? "MISMATCH" : res.is_ref ? "ref" : "ok", now() - t0);
          mismatched += res.mismatch;
        }
        fflush(stdout);
        if (tdir && res.ok)
          convert_traces(tdir);
        if (keep_homes)
          keep_home(outdir, home, wname, sets[s].name, pol[p]);
        remove_tree(home);
      }
  fclose(out.csv), fclose(out.json), fclose(out.workers), fclose(out.transfers);
  snprintf(path, sizeof path, "%s/logs", outdir);
  rmdir(path); /* only when no process left a message */
  remove_leftovers();
  charts(outdir, nw, wl, np, pol, ns, sets, sum);
  free(sum);
  if (interrupted)
    printf(PROG ": interrupted during configuration %d of %d\n", done, total);
  printf(PROG ": %d configurations, %d failed, %d disagreed with the first policy's results; records in "
         "%s/results.csv and results.jsonl\n", total, failed, mismatched, outdir);
  free_plan(&plan);
  return interrupted ? 130 : failed || mismatched ? 1 : 0;
}
