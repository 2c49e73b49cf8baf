/* SPDX-License-Identifier: Apache-2.0 */
/* bench_mpi.c: the distributed layer's jobs timed per rank count: whole-sinogram forward + back projection, one OSEM
 * iteration, and the reduction of one image alone, with the bytes the ranks send each other. */
#include <getopt.h>
#include <math.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <starpu_config.h>
#ifdef STARPU_SIMGRID
/* StarPU-MPI over SimGrid's SMPI (doc/simulation.md): starpu.h renames main to starpu_main, which StarPU's own main
 * runs in an actor of its own once it has initialised MPI for the rank. That actor may call no MPI (SMPI counts only
 * the rank's first actor, StarPU-MPI's progression, as an MPI process): the ranks' barriers and totals go through
 * the layer (sproj_mpi_barrier, sproj_mpi_allreduce), StarPU-MPI finalises MPI, and times are simulated ones. */
#include <starpu.h>
#include <starpu_mpi.h>
#endif
#include "common.h"

/* The small scanner here: 4 subsets, 2.5 mm voxels (the benchmark's 34 and 2.78 mm otherwise). */
#define MPI_SMALL_SUBSETS 4
#define MPI_SMALL_VOXEL_MM 2.5f
/* The reduction checks: voxel v of rank r holds (r + 1) (v % VALUE_PATTERN + 1), and a sum of back projections
 * agrees with its expected multiple to REDUCE_TOLERANCE of the largest voxel (float sums in another order). */
#define VALUE_PATTERN 7
#define REDUCE_TOLERANCE 1e-6
#include "starproj_mpi.h"

static int rank, nranks;
static sproj_mpi_comm *comm;

/* Stops every rank: one alone would leave the others waiting in the next collective call. */
static void stop_all(int status)
{
#ifdef STARPU_SIMGRID
  /* the ranks are actors of one process, which _exit ends (smpicc makes exit() end the calling rank only) */
  fflush(NULL);
  _exit(status);
#else
  MPI_Abort(MPI_COMM_WORLD, status);
#endif
}

#define MCHECK(call)                                                                                           \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    if (rc_ != SPROJ_OK) {                                                                                     \
      fprintf(stderr, "bench_mpi rank %d: %s failed: %s (%s)\n", rank, #call, sproj_strerror(rc_),              \
              sproj_last_error());                                                                             \
      stop_all(1);                                                                                             \
    }                                                                                                          \
  } while (0)

/* seconds: simulated ones in a simulation */
static double clock_now(void)
{
#ifdef STARPU_SIMGRID
  return 1e-6 * starpu_timing_now();
#else
  return now();
#endif
}

static const char *usage_text =
  "usage: mpirun -np P bench_mpi [--scanner small|vision600] [--subsets N] [--devices cpu|gpu|any]\n"
  "                  [--reduce starpu|allreduce|both] [--jobs fwdback,osem,osem-tof,reduce] [--image N0xN1xN2]\n"
  "                  [--repeat N] [--help]\n"
  "  Times the distributed layer on P ranks, each owning a balanced block of the scanner's views:\n"
  "    fwdback  forward projection of the whole sinogram, then its back projection summed across ranks\n"
  "    osem     one OSEM iteration (non-TOF, N subsets of interleaved views, default 34; 4 for small)\n"
  "    osem-tof one TOF OSEM iteration of the same subsets (29 bins for vision600, 15 for small), its data the\n"
  "             phantom's TOF projection made where the tasks run, factors m and a uniform background as the\n"
  "             single-node harness's osem-tof (run only when named)\n"
  "    reduce   a back projection of one LOR per rank: the sum of one image across ranks alone\n"
  "  Each job runs once to warm up, then --repeat times (default 3); the time of a repetition is the slowest\n"
  "  rank's, the table shows the median and the bytes all ranks sent each other in one repetition (counted by the\n"
  "  library from what it reduces). Image: 215x215x71 voxels of 2.78 mm for vision600, 64x64x16 of 2.5 mm for small.\n"
  "  Devices: the workers projections run on (StarPU's STARPU_NCPU / STARPU_NCUDA choose how many).\n";

/* Whether the comma-separated list jobs names job. */
static int has_job(const char *jobs, const char *job)
{
  size_t n = strlen(job);
  for (const char *p = jobs; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && !strncmp(p, job, n))
      return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

static int bad(const char *what, const char *arg)
{
  if (rank == 0)
    fprintf(stderr, "bench_mpi: %s '%s' (see --help)\n", what, arg);
  return 2;
}

/* Slowest rank's time of a repetition that started at a common barrier. */
static double slowest(double t0)
{
  double t = clock_now() - t0;
  MCHECK(sproj_mpi_allreduce(comm, &t, 1, SPROJ_MPI_DOUBLE, SPROJ_MPI_MAX));
  return t;
}

static int64_t bytes_all(void)
{
  int64_t bytes;
  MCHECK(sproj_mpi_bytes_sent(comm, &bytes));
  MCHECK(sproj_mpi_allreduce(comm, &bytes, 1, SPROJ_MPI_INT64, SPROJ_MPI_SUM));
  return bytes;
}

static void row(const char *job, int method, double *t, int n, int64_t bytes)
{
  double lo = t[0], hi = t[0];
  for (int i = 1; i < n; i++) {
    lo = t[i] < lo ? t[i] : lo;
    hi = t[i] > hi ? t[i] : hi;
  }
  double med = median(t, n);
  if (rank == 0)
    printf("%-10s %-10s %5d %10.4f %10.4f %10.4f %14lld\n", job,
           method == SPROJ_MPI_REDUCE_STARPU ? "starpu" : method == SPROJ_MPI_REDUCE_ALLREDUCE ? "allreduce" : "-",
           nranks, med, lo, hi, (long long)bytes);
}

int main(int argc, char **argv)
{
#ifdef STARPU_SIMGRID
  rank = starpu_mpi_world_rank();
  nranks = starpu_mpi_world_size();
#else
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
#endif

  const char *scanner_name = "vision600", *jobs = "fwdback,osem,reduce";
  int subsets = -1, repeat = 3, dims[3] = {0, 0, 0}, methods[2] = {SPROJ_MPI_REDUCE_ALLREDUCE, 0};
  unsigned devices = SPROJ_DEVICE_ANY;
  int devices_given = 0;
  static const struct option longopts[] = {
    {"scanner", required_argument, 0, 's'}, {"subsets", required_argument, 0, 'n'},
    {"devices", required_argument, 0, 'd'}, {"reduce", required_argument, 0, 'r'},
    {"jobs", required_argument, 0, 'j'},    {"image", required_argument, 0, 'i'},
    {"repeat", required_argument, 0, 'R'},  {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};
  opterr = 0;
  int c, status = -1;
  while (status < 0 && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case 's':
      if (strcmp(optarg, "small") && strcmp(optarg, "vision600"))
        status = bad("unknown scanner", optarg);
      scanner_name = optarg;
      break;
    case 'n': subsets = (int)option_number("bench_mpi", "--subsets", optarg, 1, 1 << 20); break;
    case 'R': repeat = (int)option_number("bench_mpi", "--repeat", optarg, 1, 1000); break;
    case 'd':
      devices_given = 1;
      if (!strcmp(optarg, "cpu"))
        devices = SPROJ_DEVICE_CPU;
      else if (!strcmp(optarg, "gpu"))
        devices = SPROJ_DEVICE_CUDA;
      else if (!strcmp(optarg, "any"))
        devices = SPROJ_DEVICE_ANY;
      else
        status = bad("unknown devices", optarg);
      break;
    case 'r':
      if (!strcmp(optarg, "allreduce"))
        methods[0] = SPROJ_MPI_REDUCE_ALLREDUCE, methods[1] = 0;
      else if (!strcmp(optarg, "starpu"))
        methods[0] = SPROJ_MPI_REDUCE_STARPU, methods[1] = 0;
      else if (!strcmp(optarg, "both"))
        methods[0] = SPROJ_MPI_REDUCE_ALLREDUCE, methods[1] = SPROJ_MPI_REDUCE_STARPU;
      else
        status = bad("unknown reduction", optarg);
      break;
    case 'j':
      jobs = optarg;
      for (const char *p = optarg; *p;) {
        size_t len = strcspn(p, ",");
        if (!((len == 7 && !strncmp(p, "fwdback", 7)) || (len == 4 && !strncmp(p, "osem", 4)) ||
              (len == 8 && !strncmp(p, "osem-tof", 8)) || (len == 6 && !strncmp(p, "reduce", 6)))) {
          status = bad("unknown job in", optarg);
          break;
        }
        p += len + (p[len] == ',');
      }
      break;
    case 'i': {
      char extra;
      if (sscanf(optarg, "%dx%dx%d%c", &dims[0], &dims[1], &dims[2], &extra) != 3 || dims[0] < 1 || dims[1] < 1 ||
          dims[2] < 1 || dims[0] > MAX_IMAGE_DIM || dims[1] > MAX_IMAGE_DIM || dims[2] > MAX_IMAGE_DIM)
        status = bad("--image needs N0xN1xN2 (each 1..4096), not", optarg);
      break;
    }
    case 'h':
      if (rank == 0)
        fputs(usage_text, stdout);
      status = 0;
      break;
    default:
      status = bad("unknown option", argv[optind - 1]);
      break;
    }
  }
  if (status < 0 && optind < argc)
    status = bad("stray argument", argv[optind]);
  if (status >= 0) {
#ifdef STARPU_SIMGRID
    /* each rank's progression waits for StarPU to start: start and stop the layer, and the simulation ends; the
     * status of main is not the simulation's, a failure's is passed on by stop_all */
    if (sproj_mpi_comm_create(&comm, MPI_COMM_WORLD, NULL) == SPROJ_OK)
      sproj_mpi_comm_destroy(comm);
    if (status)
      stop_all(status);
#else
    MPI_Finalize();
#endif
    return status;
  }
  int small = !strcmp(scanner_name, "small");
  if (subsets < 0)
    subsets = small ? MPI_SMALL_SUBSETS : BENCH_SUBSETS;
  float vs[3] = {BENCH_VOXEL_MM, BENCH_VOXEL_MM, BENCH_VOXEL_MM}, origin[3];
  if (small)
    vs[0] = vs[1] = vs[2] = MPI_SMALL_VOXEL_MM;
  if (!dims[0]) {
    dims[0] = dims[1] = small ? SMALL_IMAGE_XY : BENCH_IMAGE_XY;
    dims[2] = small ? SMALL_IMAGE_Z : BENCH_IMAGE_Z;
  }
  for (int k = 0; k < 3; k++)
    origin[k] = (-0.5f * dims[k] + 0.5f) * vs[k];

  MCHECK(sproj_mpi_comm_create(&comm, MPI_COMM_WORLD, NULL));
  if (devices_given)
    MCHECK(sproj_set_devices(devices));
  struct sproj_scanner_params sp;
  sproj_scanner *scanner;
  struct sproj_sinogram_info info;
  MCHECK(sproj_scanner_preset(scanner_name, &sp));
  MCHECK(sproj_scanner_create(&scanner, &sp));
  MCHECK(sproj_scanner_info(scanner, &info));
  int64_t *per_view = malloc(info.num_views * sizeof *per_view);
  for (int v = 0; v < info.num_views; v++)
    per_view[v] = info.lors_per_view;
  sproj_mpi_dist *dist;
  MCHECK(sproj_mpi_dist_create(&dist, comm, info.num_views, per_view, SPROJ_MPI_BLOCKS, NULL));

  /* this rank's views, computed here: no rank ever holds the whole sinogram */
  int nlocal;
  int64_t nlors;
  MCHECK(sproj_mpi_dist_local(dist, &nlocal, &nlors));
  int *views = malloc(nlocal * sizeof *views);
  for (int j = 0; j < nlocal; j++)
    MCHECK(sproj_mpi_dist_local_chunk(dist, j, &views[j], NULL, NULL, NULL));
  float *xs, *xe, *values, *data;
  MCHECK(sproj_malloc_pinned((void **)&xs, (size_t)nlors * 3 * sizeof(float)));
  MCHECK(sproj_malloc_pinned((void **)&xe, (size_t)nlors * 3 * sizeof(float)));
  MCHECK(sproj_malloc_pinned((void **)&values, (size_t)nlors * sizeof(float)));
  MCHECK(sproj_malloc_pinned((void **)&data, (size_t)nlors * sizeof(float)));
  /* osem-tof's factors and background (one value per LOR each) */
  float *mult = NULL, *addv = NULL;
  if (has_job(jobs, "osem-tof")) {
    MCHECK(sproj_malloc_pinned((void **)&mult, (size_t)nlors * sizeof(float)));
    MCHECK(sproj_malloc_pinned((void **)&addv, (size_t)nlors * sizeof(float)));
  }
  MCHECK(sproj_scanner_view_lors(scanner, views, nlocal, xs, xe, 0));
  sproj_lors *lors;
  sproj_chunks *chunks;
  MCHECK(sproj_lors_register(&lors, xs, xe, nlors));
  MCHECK(sproj_mpi_dist_chunks(&chunks, dist, lors));

  int64_t nvox = (int64_t)dims[0] * dims[1] * dims[2];
  float *phantom = malloc(nvox * sizeof *phantom), *x = malloc(nvox * sizeof *x), *acc = calloc(nvox, sizeof *acc);
  struct sproj_phantom ph;
  MCHECK(sproj_phantom_default(&ph, dims, vs, origin));
  MCHECK(sproj_phantom_fill(&ph, phantom, dims, vs, origin, 1));
  sproj_image *img, *back;
  sproj_proj *p, *y;
  MCHECK(sproj_image_register(&img, phantom, dims, vs, origin));
  MCHECK(sproj_image_register(&back, acc, dims, vs, origin));
  MCHECK(sproj_proj_register(&p, values, lors));
  MCHECK(sproj_proj_register(&y, data, lors));
  MCHECK(sproj_image_upload(img, SPROJ_ALL_GPUS));
  MCHECK(sproj_image_upload(back, SPROJ_ALL_GPUS));
  MCHECK(sproj_lors_upload(lors, chunks, SPROJ_ALL_CHUNKS, SPROJ_ALL_GPUS));

  if (rank == 0) {
    printf("# bench_mpi: %d ranks, scanner %s (%lld LORs, %d views; rank 0 holds %lld), image %dx%dx%d, %d subsets,\n"
           "# per rank %d CPU workers and %d GPUs (%d devices), projections on %s, scheduler %s; %d repetitions\n",
           nranks, scanner_name, (long long)info.num_lors, info.num_views, (long long)nlors, dims[0], dims[1], dims[2],
           subsets, sproj_num_cpu_workers(), sproj_num_gpus(), sproj_num_devices(),
           !devices_given ? "the default" : devices == SPROJ_DEVICE_CPU ? "cpu" : devices == SPROJ_DEVICE_CUDA ? "gpu" : "any",
           sproj_scheduler_name(), repeat);
    printf("%-10s %-10s %5s %10s %10s %10s %14s\n", "job", "reduce", "ranks", "median_s", "min_s", "max_s",
           "bytes_sent");
  }
  /* per repetition: the job's time, and for fwdback its forward and back parts */
  double *t = malloc(3 * (size_t)repeat * sizeof *t), *tf = t + repeat, *tb = tf + repeat;
  if (!t) {
    fprintf(stderr, "bench_mpi: out of memory\n");
    stop_all(1);
  }

  /* data for the OSEM job: the phantom's forward projection, on each rank for its views */
  if (has_job(jobs, "osem")) {
    MCHECK(sproj_mpi_fwd(comm, img, y, chunks, NULL));
    MCHECK(sproj_proj_sync(y, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
  }

  for (int m = 0; m < 2 && methods[m]; m++) {
    MCHECK(sproj_mpi_set_reduce(comm, methods[m]));
    if (has_job(jobs, "fwdback")) {
      int64_t bytes = 0;
      for (int i = -1; i < repeat; i++) {
        MCHECK(sproj_mpi_barrier(comm));
        MCHECK(sproj_mpi_bytes_reset(comm));
        double t0 = clock_now();
        MCHECK(sproj_mpi_fwd(comm, img, p, chunks, NULL));
        MCHECK(sproj_wait_all());
        double t1 = clock_now(), fwd = slowest(t0);
        MCHECK(sproj_mpi_back(comm, back, p, chunks, NULL));
        MCHECK(sproj_image_sync(back, SPROJ_SYNC_READ));
        double bk = slowest(t1);
        if (i >= 0) {
          tf[i] = fwd;
          tb[i] = bk;
          t[i] = fwd + bk;
        }
        bytes = bytes_all();
      }
      row("fwd", 0, tf, repeat, 0);
      row("back", methods[m], tb, repeat, bytes);
      row("fwd+back", methods[m], t, repeat, bytes);
    }
    for (int tof = 0; tof < 2; tof++) {
      if (!has_job(jobs, tof ? "osem-tof" : "osem"))
        continue;
      for (int64_t v = 0; v < nvox; v++)
        x[v] = 1.0f;
      sproj_image *xi;
      sproj_model *model;
      sproj_mpi_recon *recon;
      sproj_tof *tofp = NULL;
      sproj_proj *ytof = NULL;
      MCHECK(sproj_image_register(&xi, x, dims, vs, origin));
      MCHECK(sproj_image_upload(xi, SPROJ_ALL_GPUS));
      if (tof) {
        /* the single-node harness's osem-tof: its TOF parameters, m and a uniform background per LOR; the data the
         * phantom's TOF projection by the model, made where the tasks run (no host array of nlors x bins) */
        struct sproj_tof_params tp = program_tof(small);
        MCHECK(sproj_tof_register(&tofp, &tp, NULL, NULL, NULL));
        /* m of each LOR from its global number, as one process would have it */
        for (int j = 0, i = 0; j < nlocal; j++) {
          int64_t g0, count;
          MCHECK(sproj_mpi_dist_local_chunk(dist, j, NULL, &g0, NULL, &count));
          for (int64_t k = 0; k < count; k++, i++) {
            mult[i] = lor_factor((uint64_t)(g0 + k));
            addv[i] = 0.01f * (float)tp.num_bins;
          }
        }
        MCHECK(sproj_model_create_tof_uniform_add(&model, lors, mult, addv, tofp, NULL));
        MCHECK(sproj_proj_create(&ytof, lors, tp.num_bins));
        MCHECK(sproj_model_expected(model, img, ytof, chunks, NULL));
      } else {
        MCHECK(sproj_model_create(&model, lors, NULL, NULL, NULL, NULL));
      }
      struct sproj_recon_config cfg;
      sproj_recon_config_init(&cfg);
      cfg.model = model;
      cfg.data = tof ? ytof : y;
      cfg.chunks = chunks;
      cfg.num_subsets = subsets;
      MCHECK(sproj_mpi_recon_create(&recon, comm, dist, xi, &cfg));
      int64_t bytes = 0;
      for (int i = -1; i < repeat; i++) {
        MCHECK(sproj_image_sync(xi, SPROJ_SYNC_READ));
        MCHECK(sproj_mpi_barrier(comm));
        MCHECK(sproj_mpi_bytes_reset(comm));
        double t0 = clock_now();
        MCHECK(sproj_mpi_recon_iterate(recon, 1, NULL, NULL));
        MCHECK(sproj_image_sync(xi, SPROJ_SYNC_READ));
        double it = slowest(t0);
        if (i >= 0)
          t[i] = it;
        bytes = bytes_all();
      }
      row(tof ? "osemtof_it" : "osem_iter", methods[m], t, repeat, bytes);
      MCHECK(sproj_mpi_recon_destroy(recon));
      MCHECK(sproj_model_destroy(model));
      MCHECK(sproj_image_unregister(xi));
      if (tof) {
        MCHECK(sproj_proj_unregister(ytof));
        MCHECK(sproj_tof_unregister(tofp));
      }
    }
    if (has_job(jobs, "reduce")) {
      /* one LOR across the image's centre per rank: the back projection is nothing, the sum across ranks is all */
      /* the checks: the layer's allreduce of an image's worth of floats, rank r contributing r + 1 times small
       * integers, must give P (P + 1) / 2 times them exactly (a range summed twice, lost or misplaced shows); and
       * on a machine (a simulation runs no kernels) rank r back-projects its LOR with the value r + 1, so that the
       * first sum must be P (P + 1) / 2 times one rank's back projection of the value 1 in every voxel */
      double k = (double)nranks * (nranks + 1) / 2;
      if (m == 0) {
        float *sum = malloc(nvox * sizeof *sum);
        for (int64_t v = 0; v < nvox; v++)
          sum[v] = (float)((rank + 1) * (v % VALUE_PATTERN + 1));
        MCHECK(sproj_mpi_allreduce(comm, sum, (int)nvox, SPROJ_MPI_FLOAT, SPROJ_MPI_SUM));
        int64_t wrong = 0;
        for (int64_t v = 0; v < nvox; v++)
          wrong += sum[v] != (float)(k * (double)(v % VALUE_PATTERN + 1));
        double all = (double)wrong;
        MCHECK(sproj_mpi_allreduce(comm, &all, 1, SPROJ_MPI_DOUBLE, SPROJ_MPI_SUM));
        if (rank == 0)
          printf("# allreduce of %lld floats over %d ranks: %.0f wrong on all ranks together%s\n", (long long)nvox,
                 nranks, all, all == 0.0 ? "" : ": WRONG");
        free(sum);
        if (all != 0.0)
          stop_all(1);
      }
      float s[3] = {origin[0] - vs[0], 0.0f, 0.0f}, e[3] = {-origin[0] + vs[0], 0.0f, 0.0f}, one = (float)(rank + 1);
      float unit = 1.0f, *base = calloc(nvox, sizeof *base);
      sproj_lors *l1;
      sproj_proj *p1, *pu;
      sproj_image *bimg;
      MCHECK(sproj_lors_register(&l1, s, e, 1));
      MCHECK(sproj_proj_register(&p1, &one, l1));
      MCHECK(sproj_proj_register(&pu, &unit, l1));
#ifndef STARPU_SIMGRID
      MCHECK(sproj_image_register(&bimg, base, dims, vs, origin));
      MCHECK(sproj_back(bimg, pu, NULL, 0));
      MCHECK(sproj_image_unregister(bimg));
#else
      (void)bimg;
#endif
      MCHECK(sproj_proj_unregister(pu));
      MCHECK(sproj_image_zero(back));
      int64_t bytes = 0;
      for (int i = -1; i < repeat; i++) {
        MCHECK(sproj_mpi_barrier(comm));
        MCHECK(sproj_mpi_bytes_reset(comm));
        double t0 = clock_now();
        MCHECK(sproj_mpi_back(comm, back, p1, NULL, NULL));
        MCHECK(sproj_image_sync(back, SPROJ_SYNC_READ));
        double r = slowest(t0);
        if (i >= 0)
          t[i] = r;
        bytes = bytes_all();
#ifndef STARPU_SIMGRID
        if (i == -1) {
          double err = 0.0, top = 0.0;
          for (int64_t v = 0; v < nvox; v++) {
            double want = k * base[v], d = fabs((double)acc[v] - want);
            err = d > err ? d : err;
            top = fabs(want) > top ? fabs(want) : top;
          }
          double worst[2] = {err, -top};
          MCHECK(sproj_mpi_allreduce(comm, worst, 2, SPROJ_MPI_DOUBLE, SPROJ_MPI_MAX));
          int good = top > 0.0 && worst[0] <= REDUCE_TOLERANCE * -worst[1];
          if (rank == 0)
            printf("# reduce (%s): the sum over %d ranks is %g x one rank's back projection within %.2e of its "
                   "largest voxel on every rank%s\n", methods[m] == SPROJ_MPI_REDUCE_STARPU ? "starpu" : "allreduce",
                   nranks, k, worst[0] / -worst[1], good ? "" : ": WRONG");
          if (!good)
            stop_all(1);
        }
#endif
      }
      free(base);
      row("reduce", methods[m], t, repeat, bytes);
      MCHECK(sproj_proj_unregister(p1));
      MCHECK(sproj_lors_unregister(l1));
    }
  }

  MCHECK(sproj_proj_unregister(p));
  MCHECK(sproj_proj_unregister(y));
  MCHECK(sproj_image_unregister(img));
  MCHECK(sproj_image_unregister(back));
  MCHECK(sproj_chunks_destroy(chunks));
  MCHECK(sproj_lors_unregister(lors));
  MCHECK(sproj_free_pinned(xs, (size_t)nlors * 3 * sizeof(float)));
  MCHECK(sproj_free_pinned(xe, (size_t)nlors * 3 * sizeof(float)));
  MCHECK(sproj_free_pinned(values, (size_t)nlors * sizeof(float)));
  MCHECK(sproj_free_pinned(data, (size_t)nlors * sizeof(float)));
  if (mult) {
    MCHECK(sproj_free_pinned(mult, (size_t)nlors * sizeof(float)));
    MCHECK(sproj_free_pinned(addv, (size_t)nlors * sizeof(float)));
  }
  MCHECK(sproj_mpi_dist_destroy(dist));
  MCHECK(sproj_scanner_destroy(scanner));
  MCHECK(sproj_mpi_comm_destroy(comm));
  free(per_view);
  free(views);
  free(phantom);
  free(x);
  free(acc);
  free(t);
#ifndef STARPU_SIMGRID
  MPI_Finalize();
#endif
  return 0;
}
