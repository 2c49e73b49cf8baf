/* SPDX-License-Identifier: Apache-2.0 */
/* starproj_recon.c: the starproj-recon program: simulates PET data of a phantom on a scanner preset (or reads raw
 * sinogram / listmode files) and reconstructs it with OSEM or LM-OSEM on whatever devices StarPU drives, writing
 * NIfTI images and PNG previews. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "common.h"

static const char *usage_text =
  "usage: starproj-recon [options]\n"
  "\n"
  "Simulates a phantom (a cylinder with hot and cold spheres) on a PET scanner, with attenuation, detector\n"
  "efficiencies, a flat background and Poisson noise, and reconstructs it with OSEM (sinogram) or LM-OSEM\n"
  "(listmode) on the GPUs and CPU cores StarPU finds. Writes NIfTI-1 images and PNG previews to the output folder.\n"
  "\n"
  "scanner and image:\n"
  "  --scanner NAME        scanner preset: small (default) or vision600\n"
  "  --image N0xN1xN2      image size in voxels (default: 64x64x16 for small, 215x215x71 for vision600)\n"
  "  --voxel-size MM       voxel size, all axes (default: 2 for small, 2.78 for vision600)\n"
  "data:\n"
  "  --tof                 time of flight (sinogram or listmode)\n"
  "  --listmode            listmode events and LM-OSEM instead of a sinogram\n"
  "  --counts N            expected true counts of the simulation (default 2e7 for small, 2e9 for vision600;\n"
  "                        a tenth of that for listmode)\n"
  "  --background F        background (randoms + scatter) as a fraction of the mean trues per LOR (default 0.2)\n"
  "  --seed N              seed of the noise (default 1)\n"
  "  --noise-free          no Poisson noise (sinograms only)\n"
  "  --input BASE          reconstruct the sinogram BASE.hdr/BASE.raw (counts, written by --save-data or by you)\n"
  "                        instead of simulating; --mult BASE and --add BASE give factors and background files\n"
  "  --input-listmode BASE reconstruct the listmode events BASE.hdr/BASE.raw (LOR index and TOF bin per event)\n"
  "  --mult BASE, --add BASE  multiplicative factors (one per LOR) and background (per LOR, or per LOR and TOF bin)\n"
  "reconstruction:\n"
  "  --iterations N        iterations (default 4)\n"
  "  --subsets N           subsets (default 8 for small, 34 for vision600)\n"
  "  --fwhm MM             resolution model: Gaussian FWHM in mm (one value, or three: MMxMMxMM; default none)\n"
  "  --no-objective        do not compute the Poisson log-likelihood after each iteration\n"
  "  --order-events        listmode: put each chunk's events in the order of sproj_lors_order first (faster GPU\n"
  "                        projections; the ordering takes longer than it saves unless there are many iterations)\n"
  "devices:\n"
  "  --devices KIND        where projections run: gpu, cpu or any (default: the GPUs if any, else the CPU cores)\n"
  "  --sched NAME          StarPU scheduler (default: starproj's choice)\n"
  "  --ncpu N, --ngpu N    CPU workers and GPUs StarPU drives (default: StarPU's / starproj's choice)\n"
  "output:\n"
  "  --output DIR          output folder (default starproj-recon-out), created if missing\n"
  "  --save-data           also write the simulated sinogram or listmode (raw + text header) and its factors\n"
  "  --save-iterations     write the image after every iteration (recon_iter<N>.nii)\n"
  "  --verbose             StarPU's own messages; --quiet: only errors\n"
  "  --help                this text\n"
  "\n"
  "Exit status: 0 on success, 2 for bad options, 1 when reading, computing or writing fails.\n";

struct options {
  const char *scanner;
  int dims[3];
  float voxel_size;
  int tof, listmode, noise_free;
  double counts, background;
  uint64_t seed;
  const char *input, *input_lm, *mult_file, *add_file;
  int iterations, subsets;
  float fwhm[3];
  int use_fwhm, objective, order_events;
  const char *devices, *sched;
  int ncpu, ngpu;
  const char *output;
  int save_data, save_iterations, verbose, quiet;
};

static int fail_usage(const char *fmt, const char *arg)
{
  fprintf(stderr, "starproj-recon: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see starproj-recon --help)\n");
  return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

/* "A", or "AxBxC" of positive numbers */
static int parse_triple(const char *s, double lo, double hi, double out[3])
{
  char buf[128];
  if (strlen(s) >= sizeof buf)
    return -1;
  strcpy(buf, s);
  char *parts[3];
  int n = 0;
  for (char *tok = strtok(buf, "x"); tok && n < 4; tok = strtok(NULL, "x"), n++)
    if (n < 3)
      parts[n] = tok;
  if (n != 1 && n != 3)
    return -1;
  for (int k = 0; k < n; k++)
    if (parse_double(parts[k], lo, hi, &out[k]))
      return -1;
  if (n == 1)
    out[1] = out[2] = out[0];
  return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
  enum { O_SCANNER = 256, O_IMAGE, O_VOXEL, O_TOF, O_LM, O_COUNTS, O_BACKGROUND, O_SEED, O_NOISE_FREE, O_INPUT,
         O_INPUT_LM, O_MULT, O_ADD, O_ITER, O_SUBSETS, O_FWHM, O_NO_OBJ, O_ORDER, O_DEVICES, O_SCHED, O_NCPU, O_NGPU, O_OUTPUT,
         O_SAVE_DATA, O_SAVE_ITER, O_VERBOSE, O_QUIET, O_HELP };
  static const struct option longopts[] = {
    {"scanner", required_argument, 0, O_SCANNER},     {"image", required_argument, 0, O_IMAGE},
    {"voxel-size", required_argument, 0, O_VOXEL},    {"tof", no_argument, 0, O_TOF},
    {"listmode", no_argument, 0, O_LM},               {"counts", required_argument, 0, O_COUNTS},
    {"background", required_argument, 0, O_BACKGROUND}, {"seed", required_argument, 0, O_SEED},
    {"noise-free", no_argument, 0, O_NOISE_FREE},     {"input", required_argument, 0, O_INPUT},
    {"input-listmode", required_argument, 0, O_INPUT_LM}, {"mult", required_argument, 0, O_MULT},
    {"add", required_argument, 0, O_ADD},             {"iterations", required_argument, 0, O_ITER},
    {"subsets", required_argument, 0, O_SUBSETS},     {"fwhm", required_argument, 0, O_FWHM},
    {"no-objective", no_argument, 0, O_NO_OBJ},       {"order-events", no_argument, 0, O_ORDER},
    {"devices", required_argument, 0, O_DEVICES},
    {"sched", required_argument, 0, O_SCHED},         {"ncpu", required_argument, 0, O_NCPU},
    {"ngpu", required_argument, 0, O_NGPU},           {"output", required_argument, 0, O_OUTPUT},
    {"save-data", no_argument, 0, O_SAVE_DATA},       {"save-iterations", no_argument, 0, O_SAVE_ITER},
    {"verbose", no_argument, 0, O_VERBOSE},           {"quiet", no_argument, 0, O_QUIET},
    {"help", no_argument, 0, O_HELP},                 {0, 0, 0, 0}};
  memset(o, 0, sizeof *o);
  o->scanner = "small";
  o->background = 0.2;
  o->seed = 1;
  o->iterations = 4;
  o->objective = 1;
  o->ncpu = -1;
  o->ngpu = -1;
  o->output = "starproj-recon-out";
  o->counts = -1;
  o->voxel_size = -1;
  opterr = 0;
  int c;
  long l;
  double d, t[3];
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case O_SCANNER:
      if (strcmp(optarg, "small") && strcmp(optarg, "vision600"))
        return fail_usage("unknown scanner '%s' (small or vision600)", optarg);
      o->scanner = optarg;
      break;
    case O_IMAGE:
      if (parse_triple(optarg, 1, 4096, t) || t[0] != floor(t[0]) || t[1] != floor(t[1]) || t[2] != floor(t[2]))
        return fail_usage("--image needs N0xN1xN2 whole numbers of voxels (1..4096), not '%s'", optarg);
      for (int k = 0; k < 3; k++)
        o->dims[k] = (int)t[k];
      break;
    case O_VOXEL:
      if (parse_double(optarg, 0.01, 100, &d))
        return fail_usage("--voxel-size needs a number of mm in 0.01..100, not '%s'", optarg);
      o->voxel_size = (float)d;
      break;
    case O_TOF: o->tof = 1; break;
    case O_LM: o->listmode = 1; break;
    case O_COUNTS:
      if (parse_double(optarg, 1, 1e12, &o->counts))
        return fail_usage("--counts needs a number in 1..1e12, not '%s'", optarg);
      break;
    case O_BACKGROUND:
      if (parse_double(optarg, 0, 100, &o->background))
        return fail_usage("--background needs a fraction in 0..100, not '%s'", optarg);
      break;
    case O_SEED:
      if (parse_long(optarg, 0, INT32_MAX, &l))
        return fail_usage("--seed needs a whole number in 0..2^31-1, not '%s'", optarg);
      o->seed = (uint64_t)l;
      break;
    case O_NOISE_FREE: o->noise_free = 1; break;
    case O_INPUT: o->input = optarg; break;
    case O_INPUT_LM: o->input_lm = optarg; break;
    case O_MULT: o->mult_file = optarg; break;
    case O_ADD: o->add_file = optarg; break;
    case O_ITER:
      if (parse_long(optarg, 1, 10000, &l))
        return fail_usage("--iterations needs a whole number in 1..10000, not '%s'", optarg);
      o->iterations = (int)l;
      break;
    case O_SUBSETS:
      if (parse_long(optarg, 1, 100000, &l))
        return fail_usage("--subsets needs a whole number >= 1, not '%s'", optarg);
      o->subsets = (int)l;
      break;
    case O_FWHM:
      if (parse_triple(optarg, 0, 100, t))
        return fail_usage("--fwhm needs MM or MMxMMxMM (0..100 mm), not '%s'", optarg);
      for (int k = 0; k < 3; k++)
        o->fwhm[k] = (float)t[k];
      o->use_fwhm = 1;
      break;
    case O_NO_OBJ: o->objective = 0; break;
    case O_ORDER: o->order_events = 1; break;
    case O_DEVICES:
      if (strcmp(optarg, "gpu") && strcmp(optarg, "cpu") && strcmp(optarg, "any"))
        return fail_usage("--devices needs gpu, cpu or any, not '%s'", optarg);
      o->devices = optarg;
      break;
    case O_SCHED: o->sched = optarg; break;
    case O_NCPU:
      if (parse_long(optarg, 0, 4096, &l))
        return fail_usage("--ncpu needs a whole number >= 0, not '%s'", optarg);
      o->ncpu = (int)l;
      break;
    case O_NGPU:
      if (parse_long(optarg, 0, 64, &l))
        return fail_usage("--ngpu needs a whole number >= 0, not '%s'", optarg);
      o->ngpu = (int)l;
      break;
    case O_OUTPUT:
      if (!*optarg)
        return fail_usage("--output needs a folder%s", "");
      o->output = optarg;
      break;
    case O_SAVE_DATA: o->save_data = 1; break;
    case O_SAVE_ITER: o->save_iterations = 1; break;
    case O_VERBOSE: o->verbose = 1; break;
    case O_QUIET: o->quiet = 1; break;
    case O_HELP: fputs(usage_text, stdout); exit(0);
    case ':': return fail_usage("option %s needs a value", argv[optind - 1]);
    default: return fail_usage("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return fail_usage("unexpected argument '%s'", argv[optind]);
  if (o->input && o->input_lm)
    return fail_usage("--input and --input-listmode exclude each other%s", "");
  if ((o->mult_file || o->add_file) && !o->input && !o->input_lm)
    return fail_usage("--mult and --add go with --input or --input-listmode%s", "");
  if (o->input_lm)
    o->listmode = 1;
  if (o->order_events && !o->listmode)
    return fail_usage("--order-events goes with --listmode or --input-listmode%s", "");
  if (o->listmode && o->noise_free)
    return fail_usage("--noise-free needs sinogram data (listmode events are counts)%s", "");
  int small = strcmp(o->scanner, "small") == 0;
  if (!o->dims[0]) {
    const int d_small[3] = {64, 64, 16}, d_big[3] = {215, 215, 71};
    memcpy(o->dims, small ? d_small : d_big, sizeof o->dims);
  }
  if (o->voxel_size < 0)
    o->voxel_size = small ? 2.0f : 2.78f;
  if (o->counts < 0) /* listmode: one event per count, so fewer by default */
    o->counts = small ? (o->listmode ? 2e6 : 2e7) : (o->listmode ? 2e8 : 2e9);
  if (!o->subsets)
    o->subsets = small ? 8 : 34;
  return 0;
}

/* ---- helpers ---------------------------------------------------------------------------------------------- */
static int quiet;
#define SAY(...)                                                                                                 \
  do {                                                                                                         \
    if (!quiet)                                                                                                \
      printf(__VA_ARGS__);                                                                                     \
  } while (0)

/* A failed library call: its message, then exit 1 (registered objects die with the process). */
#define TRY(call)                                                                                               \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    if (rc_ != SPROJ_OK) {                                                                                     \
      fprintf(stderr, "starproj-recon: %s (%s)\n", sproj_last_error(), sproj_strerror(rc_));                 \
      exit(1);                                                                                                 \
    }                                                                                                          \
  } while (0)

static void *alloc_or_die(size_t bytes)
{
  void *p = NULL;
  if (sproj_malloc_pinned(&p, bytes ? bytes : 1) != SPROJ_OK) {
    fprintf(stderr, "starproj-recon: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

static char *path_in(const char *dir, const char *name)
{
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (!p) {
    fprintf(stderr, "starproj-recon: out of memory\n");
    exit(1);
  }
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Number of values a raw sinogram file holds. */
static int64_t values_of(const struct sproj_sino_info *info)
{
  int64_t n = 1;
  for (int k = 0; k < info->num_dims; k++)
    n *= info->shape[k];
  return n;
}

/* A small seeded generator for the detector efficiencies (splitmix64). */
static uint64_t mix(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- what ran where ---------------------------------------------------------------------------------------- */
static void where_line(char *buf, size_t len)
{
  int64_t gpu_lors[64] = {0}, cpu_lors = 0, total = 0;
  int ngpu = 0;
  for (int w = 0; w < sproj_num_workers(); w++) {
    struct sproj_worker_stats st;
    if (sproj_worker_stats(w, &st) != SPROJ_OK)
      continue;
    total += st.lors;
    if (st.is_gpu) {
      int g = st.gpu;
      if (g >= 0 && g < 64) {
        gpu_lors[g] += st.lors;
        if (g + 1 > ngpu)
          ngpu = g + 1;
      }
    } else {
      cpu_lors += st.lors;
    }
  }
  size_t k = (size_t)snprintf(buf, len, "projections on");
  if (total == 0) {
    snprintf(buf + k, len - k, " (none yet)");
    return;
  }
  for (int g = 0; g < ngpu && k < len; g++)
    k += (size_t)snprintf(buf + k, len - k, " GPU %d %.0f%%,", g, 100.0 * gpu_lors[g] / total);
  if (k < len)
    snprintf(buf + k, len - k, " CPU cores %.0f%%", 100.0 * cpu_lors / total);
}

struct progress_ctx {
  const struct options *o;
  sproj_image *img;
  const float *x;
  const int *dims;
  float vs[3], origin[3];
  int failed;
};

static int on_iteration(const struct sproj_recon_progress *p, void *user)
{
  struct progress_ctx *ctx = user;
  char where[256];
  where_line(where, sizeof where);
  if (p->has_objective)
    SAY("iteration %d/%d (%d subsets): %.2f s, Poisson NLL %.10g, %s\n", p->iteration, ctx->o->iterations,
        p->num_subsets, p->elapsed, p->objective, where);
  else
    SAY("iteration %d/%d (%d subsets): %.2f s, %s\n", p->iteration, ctx->o->iterations, p->num_subsets, p->elapsed,
        where);
  fflush(stdout);
  if (ctx->o->save_iterations) {
    char name[64];
    snprintf(name, sizeof name, "recon_iter%d.nii", p->iteration);
    char *path = path_in(ctx->o->output, name);
    if (sproj_nifti_write(path, ctx->x, ctx->dims, ctx->vs, ctx->origin, "starproj-recon iteration") != SPROJ_OK) {
      fprintf(stderr, "starproj-recon: %s\n", sproj_last_error());
      ctx->failed = 1;
    }
    free(path);
    return ctx->failed;
  }
  return 0;
}

/* ---- main -------------------------------------------------------------------------------------------------- */
int main(int argc, char **argv)
{
  struct options o;
  int rc = parse_options(argc, argv, &o);
  if (rc)
    return rc;
  quiet = o.quiet;
  if (mkdir(o.output, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "starproj-recon: cannot create the output folder '%s': %s\n", o.output, strerror(errno));
    return 1;
  }
  struct stat st;
  if (stat(o.output, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "starproj-recon: '%s' is not a folder\n", o.output);
    return 1;
  }

  /* files are read before StarPU starts, so that a missing input fails at once */
  struct sproj_sino_info in_info;
  float *in_counts = NULL, *in_mult = NULL, *in_add = NULL;
  struct sproj_lm_info lm_info;
  int32_t *in_lor = NULL;
  int16_t *in_bins = NULL;
  if (o.input)
    TRY(sproj_raw_read_sino(o.input, &in_info, &in_counts));
  if (o.input_lm)
    TRY(sproj_raw_read_listmode(o.input_lm, &lm_info, &in_lor, &in_bins));
  struct sproj_sino_info mult_info, add_info;
  if (o.mult_file)
    TRY(sproj_raw_read_sino(o.mult_file, &mult_info, &in_mult));
  if (o.add_file)
    TRY(sproj_raw_read_sino(o.add_file, &add_info, &in_add));

  if (!o.verbose)
    setenv("STARPU_SILENT", "1", 0);
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = o.ncpu;
  cfg.ncuda = o.ngpu;
  cfg.sched = o.sched;
  TRY(sproj_init(&cfg));
  if (o.devices)
    TRY(sproj_set_devices(strcmp(o.devices, "gpu") == 0 ? SPROJ_DEVICE_CUDA
                          : strcmp(o.devices, "cpu") == 0 ? SPROJ_DEVICE_CPU
                                                          : SPROJ_DEVICE_ANY));

  /* ---- scanner, LORs, image ---- */
  struct sproj_scanner_params sp;
  sproj_scanner *scanner;
  struct sproj_sinogram_info si;
  TRY(sproj_scanner_preset(o.scanner, &sp));
  TRY(sproj_scanner_create(&scanner, &sp));
  TRY(sproj_scanner_info(scanner, &si));
  const int64_t nlors = si.num_lors;
  const int nvox = o.dims[0] * o.dims[1] * o.dims[2];
  const float vs[3] = {o.voxel_size, o.voxel_size, o.voxel_size};
  float origin[3];
  for (int k = 0; k < 3; k++)
    origin[k] = (-0.5f * o.dims[k] + 0.5f) * vs[k];
  /* TOF: the benchmark scanner's (25.4 mm bins, 385 ps FWHM), and for the small scanner bins covering its 180 mm */
  int small = strcmp(o.scanner, "small") == 0;
  struct sproj_tof_params tp = {small ? 15.0f : 25.4f, small ? 15 : 29, 3.0f, small ? 12.0f : 24.5f, 0.0f};
  const int nbins = o.tof ? tp.num_bins : 1;
  char where[256];
  SAY("starproj-recon: %s scanner (%d detectors x %d rings, %d views x %d radial bins x %d planes = %lld LORs), "
      "image %dx%dx%d of %.3g mm%s%s\n", o.scanner, si.num_detectors, si.num_rings, si.num_views, si.num_radial_bins,
      si.num_planes, (long long)nlors, o.dims[0], o.dims[1], o.dims[2], o.voxel_size,
      o.tof ? ", TOF" : "", o.listmode ? ", listmode" : "");
  SAY("devices: %d CPU workers, %d GPUs, scheduler %s\n", sproj_num_cpu_workers(), sproj_num_gpus(),
      sproj_scheduler_name());

  if (o.input && (in_info.num_tof_bins ? in_info.num_tof_bins : 1) != nbins)
    return fprintf(stderr, "starproj-recon: %s has %d TOF bins, the reconstruction %d (--tof)\n", o.input,
                   in_info.num_tof_bins, o.tof ? nbins : 0), 1;
  if (o.input_lm && lm_info.num_lors != nlors)
    return fprintf(stderr, "starproj-recon: %s numbers %lld LORs, the %s scanner has %lld\n", o.input_lm,
                   (long long)lm_info.num_lors, o.scanner, (long long)nlors), 1;
  if (o.input_lm && lm_info.num_tof_bins != (o.tof ? nbins : 0) && !(lm_info.num_tof_bins && !o.tof))
    return fprintf(stderr, "starproj-recon: %s has %d TOF bins, the reconstruction %d (--tof)\n", o.input_lm,
                   lm_info.num_tof_bins, o.tof ? nbins : 0), 1;

  double t0 = now();
  float *xs = alloc_or_die((size_t)nlors * 3 * sizeof(float)), *xe = alloc_or_die((size_t)nlors * 3 * sizeof(float));
  TRY(sproj_scanner_lors(scanner, xs, xe, 0));
  sproj_lors *lors;
  sproj_chunks *views;
  TRY(sproj_lors_register(&lors, xs, xe, nlors));
  TRY(sproj_scanner_chunks_views(&views, scanner, lors));
  sproj_tof *tof = NULL;
  if (o.tof)
    TRY(sproj_tof_register(&tof, &tp, NULL, NULL, NULL));

  /* ---- the data: simulated, or read ---- */
  float *phantom = NULL, *mult = alloc_or_die((size_t)nlors * sizeof(float));
  float *add = alloc_or_die((size_t)nlors * nbins * sizeof(float));
  float *counts = NULL;             /* sinogram counts [lor][bin] */
  int32_t *ev_lor = NULL;           /* listmode events */
  int16_t *ev_bin = NULL;
  int64_t nevents = 0;
  if (!o.input && !o.input_lm) {
    /* phantom, and a water cylinder (0.0096 / mm) as its attenuation map */
    struct sproj_phantom ph, mu_ph;
    phantom = alloc_or_die((size_t)nvox * sizeof(float));
    float *mu = alloc_or_die((size_t)nvox * sizeof(float));
    TRY(sproj_phantom_default(&ph, o.dims, vs, origin));
    TRY(sproj_phantom_fill(&ph, phantom, o.dims, vs, origin, 2));
    mu_ph = ph;
    mu_ph.value = 0.0096f;
    mu_ph.num_spheres = 0;
    TRY(sproj_phantom_fill(&mu_ph, mu, o.dims, vs, origin, 2));
    float *line = alloc_or_die((size_t)nlors * nbins * sizeof(float));
    sproj_image *img;
    sproj_proj *proj;
    /* attenuation factors from the line integrals of mu, times detector efficiencies of +-15% */
    TRY(sproj_image_register(&img, mu, o.dims, vs, origin));
    TRY(sproj_proj_register(&proj, line, lors));
    TRY(sproj_fwd(img, proj, views, SPROJ_ALL_CHUNKS));
    TRY(sproj_proj_unregister(proj));
    TRY(sproj_image_unregister(img));
    uint64_t s = o.seed * 7919 + 17;
    for (int64_t i = 0; i < nlors; i++)
      mult[i] = expf(-line[i]) * (0.85f + 0.3f * (float)((mix(&s) >> 11) * (1.0 / 9007199254740992.0)));
    /* trues m * A x, scaled to the counts asked for */
    TRY(sproj_image_register(&img, phantom, o.dims, vs, origin));
    if (o.tof) {
      TRY(sproj_proj_register_tof(&proj, line, lors, nbins));
      TRY(sproj_fwd_tof_sino(img, proj, views, SPROJ_ALL_CHUNKS, tof));
    } else {
      TRY(sproj_proj_register(&proj, line, lors));
      TRY(sproj_fwd(img, proj, views, SPROJ_ALL_CHUNKS));
    }
    TRY(sproj_proj_unregister(proj));
    TRY(sproj_image_unregister(img));
    double trues = 0.0;
    for (int64_t i = 0; i < nlors; i++)
      for (int b = 0; b < nbins; b++)
        trues += (double)mult[i] * line[i * nbins + b];
    if (!(trues > 0)) {
      fprintf(stderr, "starproj-recon: the phantom projects to nothing: is the image inside the scanner?\n");
      return 1;
    }
    float scale = (float)(o.counts / trues);
    for (int v = 0; v < nvox; v++)
      phantom[v] *= scale;
    float bg = (float)(o.background * o.counts / ((double)nlors * nbins));
    for (int64_t i = 0; i < (int64_t)nlors * nbins; i++) {
      add[i] = bg;
      line[i] = mult[i / nbins] * line[i] * scale + bg; /* expected counts */
    }
    if (o.listmode) {
      TRY(sproj_sample_listmode(line, nlors, o.tof ? nbins : 0, o.seed, 0, &ev_lor, &ev_bin, &nevents));
    } else {
      counts = alloc_or_die((size_t)nlors * nbins * sizeof(float));
      if (o.noise_free)
        memcpy(counts, line, (size_t)nlors * nbins * sizeof(float));
      else
        TRY(sproj_poisson(line, counts, (int64_t)nlors * nbins, o.seed, 0));
    }
    sproj_free_pinned(line, (size_t)nlors * nbins * sizeof(float));
    sproj_free_pinned(mu, (size_t)nvox * sizeof(float));
    SAY("simulated: %.4g expected trues, background %.3g per LOR%s, %s in %.2f s\n", o.counts, (double)bg,
        o.tof ? " and TOF bin" : "", o.listmode ? "listmode" : (o.noise_free ? "no noise" : "Poisson noise"),
        now() - t0);
  } else {
    /* read data: factors from files (checked against the sinogram's size), else 1 and 0 */
    for (int64_t i = 0; i < nlors; i++)
      mult[i] = 1.0f;
    memset(add, 0, (size_t)nlors * nbins * sizeof(float));
    if (o.input) {
      if (values_of(&in_info) != nlors * nbins)
        return fprintf(stderr, "starproj-recon: %s holds %lld values, the %s scanner's sinogram %lld\n", o.input,
                       (long long)values_of(&in_info), o.scanner, (long long)(nlors * nbins)), 1;
      counts = in_counts;
    } else {
      nevents = lm_info.num_events;
      ev_lor = in_lor;
      ev_bin = in_bins;
    }
  }
  /* a factor file holds one value per LOR, a background file one per LOR (and TOF bin) */
  if (in_mult) {
    if (values_of(&mult_info) != nlors)
      return fprintf(stderr, "starproj-recon: %s holds %lld values, one per LOR (%lld) needed\n", o.mult_file,
                     (long long)values_of(&mult_info), (long long)nlors), 1;
    memcpy(mult, in_mult, (size_t)nlors * sizeof(float));
  }
  if (in_add) {
    if (values_of(&add_info) != nlors * nbins)
      return fprintf(stderr, "starproj-recon: %s holds %lld values, %lld needed\n", o.add_file,
                     (long long)values_of(&add_info), (long long)(nlors * nbins)), 1;
    memcpy(add, in_add, (size_t)nlors * nbins * sizeof(float));
  }
  sproj_free(in_mult);
  sproj_free(in_add);

  /* what was simulated, kept when asked */
  struct sproj_sino_info sino_info;
  memset(&sino_info, 0, sizeof sino_info);
  sino_info.num_dims = o.tof ? 4 : 3;
  int64_t shape[4] = {si.num_views, si.num_planes, si.num_radial_bins, nbins};
  const char *axes[4] = {"view", "plane", "radial", "tof_bin"};
  for (int k = 0; k < sino_info.num_dims; k++) {
    sino_info.shape[k] = shape[k];
    snprintf(sino_info.axes[k], SPROJ_RAW_NAME_LEN, "%s", axes[k]);
  }
  snprintf(sino_info.scanner, sizeof sino_info.scanner, "%s", o.scanner);
  sino_info.num_tof_bins = o.tof ? nbins : 0;
  sino_info.tof_bin_width = o.tof ? tp.bin_width : 0.0f;
  if (o.save_data && !o.input && !o.input_lm) {
    char *p;
    struct sproj_sino_info mi = sino_info;
    mi.num_dims = 3;
    mi.num_tof_bins = 0;
    mi.tof_bin_width = 0;
    TRY(sproj_raw_write_sino(p = path_in(o.output, "mult"), &mi, mult));
    free(p);
    TRY(sproj_raw_write_sino(p = path_in(o.output, "add"), &sino_info, add));
    free(p);
    if (o.listmode) {
      struct sproj_lm_info li = {nevents, nlors, "", o.tof ? nbins : 0, o.tof ? tp.bin_width : 0.0f};
      snprintf(li.scanner, sizeof li.scanner, "%s", o.scanner);
      TRY(sproj_raw_write_listmode(p = path_in(o.output, "events"), &li, ev_lor, ev_bin));
    } else {
      TRY(sproj_raw_write_sino(p = path_in(o.output, "counts"), &sino_info, counts));
    }
    free(p);
    SAY("data written: %s/%s.hdr/.raw, %s/mult and %s/add\n", o.output, o.listmode ? "events" : "counts", o.output,
        o.output);
  }

  /* ---- reconstruction ---- */
  float *x = alloc_or_die((size_t)nvox * sizeof(float));
  for (int v = 0; v < nvox; v++)
    x[v] = 1.0f;
  sproj_image *ximg;
  TRY(sproj_image_register(&ximg, x, o.dims, vs, origin));
  const float *fwhm = o.use_fwhm ? o.fwhm : NULL;
  sproj_model *model = NULL, *sens_model = NULL;
  sproj_proj *data = NULL;
  sproj_lors *events = NULL;
  sproj_chunks *ev_chunks = NULL;
  float *ev_xs = NULL, *ev_xe = NULL, *ev_mult = NULL, *ev_add = NULL;
  struct sproj_recon_config rc_cfg;
  sproj_recon_config_init(&rc_cfg);
  rc_cfg.num_subsets = o.subsets;
  rc_cfg.objective = o.objective;
  if (!o.listmode) {
    TRY(sproj_model_create(&model, lors, mult, add, tof, fwhm));
    if (o.tof)
      TRY(sproj_proj_register_tof(&data, counts, lors, nbins));
    else
      TRY(sproj_proj_register(&data, counts, lors));
    rc_cfg.model = model;
    rc_cfg.data = data;
    rc_cfg.chunks = views;
  } else {
    if (nevents == 0) {
      fprintf(stderr, "starproj-recon: no listmode events to reconstruct\n");
      return 1;
    }
    int64_t *idx = malloc((size_t)nevents * sizeof *idx);
    ev_xs = alloc_or_die((size_t)nevents * 3 * sizeof(float));
    ev_xe = alloc_or_die((size_t)nevents * 3 * sizeof(float));
    ev_mult = alloc_or_die((size_t)nevents * sizeof(float));
    ev_add = alloc_or_die((size_t)nevents * sizeof(float));
    if (!idx) {
      fprintf(stderr, "starproj-recon: out of memory\n");
      return 1;
    }
    for (int64_t e = 0; e < nevents; e++) {
      if (ev_lor[e] < 0 || ev_lor[e] >= nlors || (o.tof && (ev_bin[e] < 0 || ev_bin[e] >= nbins))) {
        fprintf(stderr, "starproj-recon: event %lld has LOR %d / TOF bin %d outside the sinogram\n", (long long)e,
                ev_lor[e], ev_bin ? ev_bin[e] : 0);
        return 1;
      }
      idx[e] = ev_lor[e];
      ev_mult[e] = mult[ev_lor[e]];
      ev_add[e] = add[(int64_t)ev_lor[e] * nbins + (o.tof ? ev_bin[e] : 0)];
    }
    TRY(sproj_scanner_lors_at(scanner, nevents, idx, ev_xs, ev_xe));
    free(idx);
    /* event chunks of about equal size, a few per subset, dealt out to the subsets in turn */
    int nchunks = o.subsets * 4;
    if (nchunks > nevents)
      nchunks = (int)nevents;
    if (o.subsets > nchunks) {
      fprintf(stderr, "starproj-recon: %d subsets but only %lld events\n", o.subsets, (long long)nevents);
      return 1;
    }
    /* with --order-events, each chunk's events in the order of sproj_lors_order (neighbours run through the same
     * image columns: faster GPU projections); every chunk keeps its events, so the subsets stay what they were */
    int64_t *first = malloc(nchunks * sizeof *first), *count = malloc(nchunks * sizeof *count);
    int64_t *order = malloc(((size_t)nevents / nchunks + 1) * sizeof *order);
    if (!first || !count || !order) {
      fprintf(stderr, "starproj-recon: out of memory\n");
      return 1;
    }
    double t_order = now();
    const float vs3[3] = {o.voxel_size, o.voxel_size, o.voxel_size};
    for (int c = 0; c < nchunks; c++) {
      first[c] = c * (nevents / nchunks) + (c < nevents % nchunks ? c : nevents % nchunks);
      count[c] = nevents / nchunks + (c < nevents % nchunks);
      int64_t f = first[c], n = count[c];
      if (!o.order_events)
        continue;
      TRY(sproj_lors_order(ev_xs + 3 * f, ev_xe + 3 * f, n, vs3, order));
      TRY(sproj_reorder(ev_xs + 3 * f, 3 * sizeof(float), n, order));
      TRY(sproj_reorder(ev_xe + 3 * f, 3 * sizeof(float), n, order));
      TRY(sproj_reorder(ev_mult + f, sizeof(float), n, order));
      TRY(sproj_reorder(ev_add + f, sizeof(float), n, order));
      if (ev_bin)
        TRY(sproj_reorder(ev_bin + f, sizeof(int16_t), n, order));
    }
    free(order);
    t_order = now() - t_order;
    if (o.tof)
      TRY(sproj_lors_register_events(&events, ev_xs, ev_xe, ev_bin, nevents));
    else
      TRY(sproj_lors_register(&events, ev_xs, ev_xe, nevents));
    TRY(sproj_chunks_create_ranges(&ev_chunks, events, nchunks, first, count));
    free(first);
    free(count);
    TRY(sproj_model_create(&model, events, ev_mult, ev_add, tof, fwhm));
    TRY(sproj_model_create(&sens_model, lors, mult, NULL, NULL, fwhm));
    rc_cfg.model = model;
    rc_cfg.chunks = ev_chunks;
    rc_cfg.sens_model = sens_model;
    if (o.order_events)
      SAY("listmode: %lld events in %d chunks, each in the order of sproj_lors_order (%.2f s)\n", (long long)nevents,
          nchunks, t_order);
    else
      SAY("listmode: %lld events in %d chunks\n", (long long)nevents, nchunks);
  }
  double t1 = now();
  sproj_recon *recon;
  TRY(sproj_stats_reset());
  TRY(sproj_recon_create(&recon, ximg, &rc_cfg));
  where_line(where, sizeof where);
  SAY("sensitivities: %.2f s, %s\n", now() - t1, where);
  struct progress_ctx ctx = {&o, ximg, x, o.dims, {vs[0], vs[1], vs[2]}, {origin[0], origin[1], origin[2]}, 0};
  TRY(sproj_stats_reset());
  t1 = now();
  TRY(sproj_recon_iterate(recon, o.iterations, on_iteration, &ctx));
  if (ctx.failed)
    return 1;
  TRY(sproj_image_sync(ximg, SPROJ_SYNC_READ));
  SAY("reconstruction: %d iterations x %d subsets in %.2f s\n", o.iterations, o.subsets, now() - t1);

  /* ---- outputs ---- */
  char *p;
  TRY(sproj_nifti_write(p = path_in(o.output, "recon.nii"), x, o.dims, vs, origin, "starproj-recon OSEM"));
  SAY("wrote %s", p);
  free(p);
  TRY(sproj_png_write_image(p = path_in(o.output, "recon.png"), x, o.dims, vs, NULL));
  SAY(", %s", p);
  free(p);
  if (phantom) {
    TRY(sproj_nifti_write(p = path_in(o.output, "phantom.nii"), phantom, o.dims, vs, origin, "starproj-recon phantom"));
    SAY(", %s", p);
    free(p);
    TRY(sproj_png_write_image(p = path_in(o.output, "phantom.png"), phantom, o.dims, vs, NULL));
    SAY(", %s", p);
    free(p);
  }
  if (counts) {
    TRY(sproj_png_write_sino(p = path_in(o.output, "sinogram_view0.png"), counts, sino_info.num_dims,
                             sino_info.shape, 0, 2, 1, 0, NULL));
    SAY(", %s", p);
    free(p);
  }
  SAY("\n");
  if (phantom) {
    /* how close: relative L2 error inside the phantom's cylinder (where it is non-zero), and the total activity */
    double num = 0, den = 0, sx = 0, sp = 0;
    for (int v = 0; v < nvox; v++) {
      sx += x[v];
      sp += phantom[v];
      if (phantom[v] > 0) {
        num += (x[v] - phantom[v]) * (double)(x[v] - phantom[v]);
        den += (double)phantom[v] * phantom[v];
      }
    }
    SAY("relative L2 error to the phantom (inside it): %.3f; total activity %.4g (phantom %.4g)\n", sqrt(num / den),
        sx, sp);
  }

  /* ---- cleanup ---- */
  TRY(sproj_recon_destroy(recon));
  TRY(sproj_model_destroy(model));
  TRY(sproj_model_destroy(sens_model));
  if (data)
    TRY(sproj_proj_unregister(data));
  if (events) {
    TRY(sproj_chunks_destroy(ev_chunks));
    TRY(sproj_lors_unregister(events));
  }
  TRY(sproj_image_unregister(ximg));
  TRY(sproj_tof_unregister(tof));
  TRY(sproj_chunks_destroy(views));
  TRY(sproj_lors_unregister(lors));
  TRY(sproj_scanner_destroy(scanner));
  TRY(sproj_shutdown());
  /* what the file readers and the listmode sampler returned (the pinned buffers go with the process) */
  sproj_free(in_counts);
  sproj_free(ev_lor);
  sproj_free(ev_bin);
  return 0;
}
