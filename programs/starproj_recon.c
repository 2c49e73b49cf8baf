/* SPDX-License-Identifier: Apache-2.0 */
/* starproj_recon.c: the starproj-recon program: simulates PET data of a phantom on a scanner preset (or reads raw
 * sinogram / listmode files) and reconstructs it with OSEM or LM-OSEM on whatever devices StarPU drives, writing
 * NIfTI images and PNG previews.
 * The order of a run: options, inputs read and checked against the scanner, sizes bounded by the memory they need,
 * and only then the output folder and StarPU, so that every refusal comes at once and leaves nothing behind. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "common.h"
#include <sys/mman.h>
#include "progress.h"

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
  "  --voxel-size MM       voxel size in mm: one value for all axes, or MMxMMxMM (default: 2 for small, 2.78 for\n"
  "                        vision600)\n"
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
  int scanner_given; /* --scanner; else the scanner an input header names, else small */
  int dims[3];
  float voxel_size[3];  /* mm per axis; [0] < 0: the preset's */
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

static int quiet;
#define SAY(...)                                                                                                 \
  do {                                                                                                         \
    if (!quiet)                                                                                                \
      printf(__VA_ARGS__);                                                                                     \
  } while (0)

/* A bad option: the message, a pointer to --help, and the exit status 2. */
static int fail_usage(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "starproj-recon: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(see starproj-recon --help)\n");
  va_end(ap);
  return 2;
}

/* Input that cannot be used (unreadable, or not this run's data): the message and the exit status 1. */
static int fail_input(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "starproj-recon: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return 1;
}

/* ---- what the run wrote -------------------------------------------------------------------------------------- */
/* A failed run takes away the output folder it created, with the files it wrote there (and nothing else: rmdir
 * leaves a folder someone else has put files in meanwhile). A folder that was there before is left as it is. Done
 * at exit, so that every way out (TRY, alloc_or_die, a return from main) is covered. */
static struct {
  char *dir;      /* the output folder if this run created it, else NULL */
  char **files;   /* the files written in it */
  int num_files, room;
  int finished;   /* the run got to its end: keep everything */
} written;

static void remove_written(void)
{
  if (written.finished || !written.dir)
    return;
  for (int i = 0; i < written.num_files; i++)
    unlink(written.files[i]);
  rmdir(written.dir);
}

/* SIGINT, SIGTERM, SIGHUP: the files being written go (the library's temporaries), and with them what this run
 * wrote into a folder it made, as at any failed end; then the process ends by the signal, as a shell expects.
 * Everything here is async-signal-safe (unlink, rmdir, and sproj_io_remove_temporaries is made for it). */
static void on_signal(int sig)
{
  sproj_io_remove_temporaries();
  remove_written();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void out_of_memory(void)
{
  fprintf(stderr, "starproj-recon: out of memory\n");
  exit(1);
}

/* Notes a file that was written completely (only then: a writer that failed has removed its own temporary file,
 * and an older file of that name was not this run's). */
static void note_written(const char *path)
{
  if (written.num_files == written.room) {
    int room = written.room ? 2 * written.room : 16;
    char **files = realloc(written.files, (size_t)room * sizeof *files);
    if (!files)
      out_of_memory();
    written.files = files;
    written.room = room;
  }
  if (!(written.files[written.num_files] = strdup(path)))
    out_of_memory();
  written.num_files++;
}

static char *path_in(const char *dir, const char *name)
{
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (!p)
    out_of_memory();
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Made only once the options and inputs are known to be good; the folder's parent must exist. */
static int make_output_folder(const char *dir)
{
  if (mkdir(dir, 0777) == 0) {
    if (!(written.dir = strdup(dir)))
      out_of_memory();
  } else if (errno != EEXIST) {
    return fail_input("cannot create the output folder '%s': %s", dir, strerror(errno));
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return fail_input("'%s' is not a folder", dir);
  return 0;
}

/* ---- options -------------------------------------------------------------------------------------------------- */
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

/* A finite number in lo..hi (strtod also reads "nan" and "inf": refused here, like an overflow). */
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

/* "A", or "AxBxC", each a number in lo..hi. Split by hand, not with strtok: strtok skips empty fields, and
 * "64xx64x16" would pass for three numbers. */
static int parse_triple(const char *s, double lo, double hi, double out[3])
{
  char buf[128];
  if (strlen(s) >= sizeof buf)
    return -1;
  strcpy(buf, s);
  char *parts[3];
  int n = 0;
  for (char *p = buf;;) {
    if (n == 3)
      return -1;
    parts[n++] = p;
    char *x = strchr(p, 'x');
    if (!x)
      break;
    *x = '\0';
    p = x + 1;
  }
  if (n == 2)
    return -1;
  for (int k = 0; k < n; k++)
    if (parse_double(parts[k], lo, hi, &out[k])) /* an empty field fails here */
      return -1;
  if (n == 1)
    out[1] = out[2] = out[0];
  return 0;
}

/* A scheduler StarPU knows, checked here so that a typo is a usage error before StarPU starts instead of a failed
 * start. */
static int check_sched(const char *name)
{
  if (sproj_scheduler_check(name) == SPROJ_OK)
    return 0;
  fprintf(stderr, "starproj-recon: --sched: %s\n(see starproj-recon --help)\n", sproj_last_error());
  return 2;
}

enum { O_SCANNER = 256, O_IMAGE, O_VOXEL, O_TOF, O_LM, O_COUNTS, O_BACKGROUND, O_SEED, O_NOISE_FREE, O_INPUT,
       O_INPUT_LM, O_MULT, O_ADD, O_ITER, O_SUBSETS, O_FWHM, O_NO_OBJ, O_ORDER, O_DEVICES, O_SCHED, O_NCPU, O_NGPU,
       O_OUTPUT, O_SAVE_DATA, O_SAVE_ITER, O_VERBOSE, O_QUIET, O_HELP };
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

/* The scanner, image and data options: 0, or 2 after a message. */
static int set_data_option(struct options *o, int c, const char *arg)
{
  long l;
  double t[3];
  switch (c) {
  case O_SCANNER:
    if (strcmp(arg, "small") && strcmp(arg, "vision600"))
      return fail_usage("unknown scanner '%s' (small or vision600)", arg);
    o->scanner = arg;
    o->scanner_given = 1;
    return 0;
  case O_IMAGE:
    if (parse_triple(arg, 1, 4096, t) || t[0] != floor(t[0]) || t[1] != floor(t[1]) || t[2] != floor(t[2]))
      return fail_usage("--image needs N0xN1xN2 whole numbers of voxels (1..4096), not '%s'", arg);
    for (int k = 0; k < 3; k++)
      o->dims[k] = (int)t[k];
    return 0;
  case O_VOXEL:
    if (parse_triple(arg, 0.01, 100, t))
      return fail_usage("--voxel-size needs MM or MMxMMxMM, mm in 0.01..100 per axis, not '%s'", arg);
    for (int k = 0; k < 3; k++)
      o->voxel_size[k] = (float)t[k];
    return 0;
  case O_COUNTS:
    if (parse_double(arg, 1, 1e12, &o->counts))
      return fail_usage("--counts needs a number in 1..1e12, not '%s'", arg);
    return 0;
  case O_BACKGROUND:
    if (parse_double(arg, 0, 100, &o->background))
      return fail_usage("--background needs a fraction in 0..100, not '%s'", arg);
    return 0;
  case O_SEED:
    if (parse_long(arg, 0, INT32_MAX, &l))
      return fail_usage("--seed needs a whole number in 0..2^31-1, not '%s'", arg);
    o->seed = (uint64_t)l;
    return 0;
  case O_TOF: o->tof = 1; return 0;
  case O_LM: o->listmode = 1; return 0;
  case O_NOISE_FREE: o->noise_free = 1; return 0;
  case O_INPUT: o->input = arg; return 0;
  case O_INPUT_LM: o->input_lm = arg; return 0;
  case O_MULT: o->mult_file = arg; return 0;
  case O_ADD: o->add_file = arg; return 0;
  }
  return -1; /* not one of these */
}

/* The reconstruction, device and output options: 0, or 2 after a message. */
static int set_run_option(struct options *o, int c, const char *arg)
{
  long l;
  double t[3];
  switch (c) {
  case O_ITER:
    if (parse_long(arg, 1, 10000, &l))
      return fail_usage("--iterations needs a whole number in 1..10000, not '%s'", arg);
    o->iterations = (int)l;
    return 0;
  case O_SUBSETS:
    if (parse_long(arg, 1, 100000, &l))
      return fail_usage("--subsets needs a whole number >= 1, not '%s'", arg);
    o->subsets = (int)l;
    return 0;
  case O_FWHM:
    if (parse_triple(arg, 0, 100, t))
      return fail_usage("--fwhm needs MM or MMxMMxMM (0..100 mm), not '%s'", arg);
    for (int k = 0; k < 3; k++)
      o->fwhm[k] = (float)t[k];
    o->use_fwhm = 1;
    return 0;
  case O_DEVICES:
    if (strcmp(arg, "gpu") && strcmp(arg, "cpu") && strcmp(arg, "any"))
      return fail_usage("--devices needs gpu, cpu or any, not '%s'", arg);
    o->devices = arg;
    return 0;
  case O_SCHED:
    if (check_sched(arg))
      return 2;
    o->sched = arg;
    return 0;
  case O_NCPU:
  case O_NGPU:
    if (parse_long(arg, 0, c == O_NCPU ? 4096 : 64, &l))
      return fail_usage("--%s needs a whole number >= 0, not '%s'", c == O_NCPU ? "ncpu" : "ngpu", arg);
    *(c == O_NCPU ? &o->ncpu : &o->ngpu) = (int)l;
    return 0;
  case O_OUTPUT:
    if (!*arg)
      return fail_usage("--output needs a folder");
    o->output = arg;
    return 0;
  case O_NO_OBJ: o->objective = 0; return 0;
  case O_ORDER: o->order_events = 1; return 0;
  case O_SAVE_DATA: o->save_data = 1; return 0;
  case O_SAVE_ITER: o->save_iterations = 1; return 0;
  case O_VERBOSE: o->verbose = 1; return 0;
  case O_QUIET: o->quiet = 1; return 0;
  case O_HELP: fputs(usage_text, stdout); exit(0);
  }
  return -1;
}

/* The long name of the option whose code is c, for "--X needs a value". */
static const char *option_name(int c)
{
  for (const struct option *p = longopts; p->name; p++)
    if (p->val == c)
      return p->name;
  return "?";
}

/* Options that go together or exclude each other. */
static int check_combinations(struct options *o)
{
  if (o->input && o->input_lm)
    return fail_usage("--input and --input-listmode exclude each other");
  if ((o->mult_file || o->add_file) && !o->input && !o->input_lm)
    return fail_usage("--mult and --add go with --input or --input-listmode");
  if (o->input_lm)
    o->listmode = 1;
  if (o->order_events && !o->listmode)
    return fail_usage("--order-events goes with --listmode or --input-listmode");
  if (o->listmode && o->noise_free)
    return fail_usage("--noise-free needs sinogram data (listmode events are counts)");
  return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
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
  o->voxel_size[0] = -1;
  opterr = 0;
  int c;
  /* the leading ':' makes getopt_long return ':' for a missing value, told apart from an unknown option */
  while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (c == ':')
      return fail_usage("--%s needs a value", option_name(optopt));
    if (c == '?')
      return fail_usage("unknown option '%s'", argv[optind - 1]);
    int rc = set_data_option(o, c, optarg);
    if (rc < 0)
      rc = set_run_option(o, c, optarg);
    if (rc)
      return rc < 0 ? fail_usage("unknown option '%s'", argv[optind - 1]) : rc;
  }
  if (optind < argc)
    return fail_usage("unexpected argument '%s'", argv[optind]);
  return check_combinations(o);
}

/* The defaults that depend on the scanner, once it is known (it may come from an input header). */
static void resolve_defaults(struct options *o)
{
  int small = strcmp(o->scanner, "small") == 0;
  if (!o->dims[0]) {
    const int d_small[3] = {64, 64, 16}, d_big[3] = {215, 215, 71};
    memcpy(o->dims, small ? d_small : d_big, sizeof o->dims);
  }
  if (o->voxel_size[0] < 0)
    for (int k = 0; k < 3; k++)
      o->voxel_size[k] = small ? 2.0f : 2.78f;
  if (o->counts < 0) /* listmode: one event per count, so fewer by default */
    o->counts = small ? (o->listmode ? 2e6 : 2e7) : (o->listmode ? 2e8 : 2e9);
  if (!o->subsets)
    o->subsets = small ? 8 : 34;
}

/* ---- helpers -------------------------------------------------------------------------------------------------- */
/* A failed library call: its message, then exit 1 (registered objects die with the process). */
#define TRY(call)                                                                                               \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    if (rc_ != SPROJ_OK) {                                                                                     \
      fprintf(stderr, "starproj-recon: %s (%s)\n", sproj_last_error(), sproj_strerror(rc_));                 \
      exit(1);                                                                                                 \
    }                                                                                                          \
  } while (0)

/* Arrays the devices read or write: pinned (copies run asynchronously) up to PIN_MOST bytes, plain memory beyond. On
 * an H200 host pinning the benchmark's 17 GB TOF sinogram took about 10 s, far more than the single copy each way
 * that pinning speeds up (a few seconds from plain memory at the bus's pageable rate). release() frees either. */
#define PIN_MOST ((size_t)256 << 20)
static void touch_block(void *ctx, int64_t first, int64_t end, int64_t block)
{
  (void)block;
  memset((char *)ctx + first, 0, (size_t)(end - first));
}

static void *alloc_or_die(size_t bytes)
{
  void *p = NULL;
  if (bytes > PIN_MOST ? posix_memalign(&p, (size_t)2 << 20, bytes) != 0
                       : sproj_malloc_pinned(&p, bytes ? bytes : 1) != SPROJ_OK) {
    fprintf(stderr, "starproj-recon: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  if (bytes > PIN_MOST) {
    /* Huge pages, faulted in on every core now: the GPU's copy into fresh memory (the 17 GB TOF sinogram) otherwise
     * waits on millions of page faults taken one at a time, 11 s on an H200 host. */
    madvise(p, bytes, MADV_HUGEPAGE);
    int paused = sproj_is_initialized() && sproj_pause() == SPROJ_OK; /* StarPU's idle workers would take half */
    parallel_blocks("allocating", (int64_t)bytes, (int64_t)64 << 20, touch_block, p);
    if (paused)
      TRY(sproj_resume());
  }
  return p;
}

static void release(void *p, size_t bytes)
{
  if (bytes > PIN_MOST)
    free(p);
  else
    sproj_free_pinned(p, bytes ? bytes : 1);
}

/* Scratch that never goes to a device: plain malloc (alloc_or_die's may be pinned, and freed with the process). */
static void *host_alloc(size_t bytes)
{
  void *p = malloc(bytes ? bytes : 1);
  if (!p)
    out_of_memory();
  return p;
}

/* An array that tasks fill where they run: not faulted in here. With GPUs the simulated sinogram is made and used on
 * them and its host pages are never touched (no memory, no time); on CPU workers the tasks fault them in. */
static void *lazy_alloc(size_t bytes)
{
  void *p = NULL;
  if (posix_memalign(&p, (size_t)2 << 20, bytes ? bytes : 1) != 0)
    out_of_memory();
  if (bytes > PIN_MOST)
    madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

/* A small seeded generator for the detector efficiencies (splitmix64). */
static uint64_t mix(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- sizes ---------------------------------------------------------------------------------------------------- */
/* Sizes are products of counts the user chooses, so they are formed in 64 bits and saturate at UINT64_MAX instead
 * of wrapping: a size too large to represent stays above every limit it is compared with. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
  return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Bytes of physical memory, or UINT64_MAX when the system does not say. */
static uint64_t physical_memory(void)
{
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0)
    return UINT64_MAX;
  return mul_sat((uint64_t)pages, (uint64_t)page);
}

static double gib(uint64_t bytes)
{
  return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

/* The largest image and LOR set starproj registers: one StarPU vector, at most 2^32-1 elements. */
#define MAX_ELEMENTS UINT32_MAX
/* The resolution model's kernel reaches at most this many voxels each side at 3 sigma (SPROJ_GAUSS_MAX_RADIUS of
 * the codelets, which sproj_recon_create enforces once StarPU runs). */
#define MAX_BLUR_REACH 64
/* What one listmode event costs while the run holds it: LOR index and TOF bin (4 + 2), the LOR's index for the
 * endpoints (8, freed later), its endpoints (24), factor and background (8), and a projected value (4). */
#define EVENT_BYTES 50

/* ---- the run's layout ----------------------------------------------------------------------------------------- */
struct layout {
  sproj_scanner *scanner;
  struct sproj_sinogram_info si;
  struct sproj_tof_params tp;
  int nbins;            /* TOF bins per LOR, 1 without TOF */
  int64_t nvox;
  float vs[3], origin[3];
};

/* Needs no StarPU: a scanner object only describes the geometry. */
static void make_layout(const struct options *o, struct layout *l)
{
  struct sproj_scanner_params sp;
  TRY(sproj_scanner_preset(o->scanner, &sp));
  TRY(sproj_scanner_create(&l->scanner, &sp));
  TRY(sproj_scanner_info(l->scanner, &l->si));
  l->nvox = (int64_t)o->dims[0] * o->dims[1] * o->dims[2]; /* at most 4096^3: fits */
  for (int k = 0; k < 3; k++) {
    l->vs[k] = o->voxel_size[k];
    l->origin[k] = (-0.5f * o->dims[k] + 0.5f) * o->voxel_size[k];
  }
  /* TOF: the benchmark scanner's (25.4 mm bins, 385 ps FWHM), and for the small scanner bins covering its 180 mm */
  int small = strcmp(o->scanner, "small") == 0;
  struct sproj_tof_params tp = {small ? 15.0f : 25.4f, small ? 15 : 29, 3.0f, small ? 12.0f : 24.5f, 0.0f};
  l->tp = tp;
  l->nbins = o->tof ? tp.num_bins : 1;
}

/* The layout of the run's sinogram as a raw file describes it: view, plane, radial (and tof_bin) with the scanner's
 * sizes. tof: with the TOF axis. */
static void sino_layout(const struct options *o, const struct layout *l, int tof, struct sproj_sino_info *info)
{
  static const char *const axes[4] = {"view", "plane", "radial", "tof_bin"};
  const int64_t shape[4] = {l->si.num_views, l->si.num_planes, l->si.num_radial_bins, l->nbins};
  memset(info, 0, sizeof *info);
  info->num_dims = tof ? 4 : 3;
  for (int k = 0; k < info->num_dims; k++) {
    info->shape[k] = shape[k];
    snprintf(info->axes[k], SPROJ_RAW_NAME_LEN, "%s", axes[k]);
  }
  snprintf(info->scanner, sizeof info->scanner, "%s", o->scanner);
  info->num_tof_bins = tof ? l->nbins : 0;
  info->tof_bin_width = tof ? l->tp.bin_width : 0.0f;
}

/* Bytes of the run's large buffers, by kind; nevents: the listmode events expected or read. */
struct need {
  uint64_t images, sinogram, events;
};

/* gpus: the GPUs found (0 before StarPU starts: the most the run can take); a sinogram simulated on GPUs stays there */
static struct need memory_need(const struct options *o, const struct layout *l, uint64_t nevents, int gpus)
{
  struct need n;
  int simulate = !o->input && !o->input_lm;
  int blur = o->use_fwhm && (o->fwhm[0] > 0 || o->fwhm[1] > 0 || o->fwhm[2] > 0);
  /* the estimate and its back projection, the blur's two buffers, the sensitivities (one per subset for a
   * sinogram, one for listmode), and the phantom and its attenuation map when simulating */
  uint64_t images = 2 + (blur ? 2 : 0) + (o->listmode ? 1 : (uint64_t)o->subsets) + (simulate ? 2 : 0);
  n.images = mul_sat(mul_sat(images, (uint64_t)l->nvox), sizeof(float));
  /* per LOR: its endpoints, factor, background and the sensitivities' copy of the factor; per LOR and TOF bin: the
   * sinogram (the expected counts, then in place the counts), or when reading a TOF background per bin that too
   * (the reconstruction's own projection stays on the devices) */
  uint64_t lors = (uint64_t)l->si.num_lors, values = mul_sat(lors, (uint64_t)l->nbins);
  uint64_t per_value = (simulate || !o->listmode ? 1 : 0) + (o->add_file && o->tof ? 1 : 0);
  uint64_t per_lor = 9;
  if (simulate && gpus > 0) {
    per_value = 0;
    /* the counts' sums over TOF bins (the preview's; listmode's events per LOR) and listmode's places of events */
    per_lor += (o->tof ? 1 : 0) + (o->listmode ? 1 : 0);
  }
  n.sinogram = add_sat(mul_sat(lors, per_lor * sizeof(float)), mul_sat(values, per_value * sizeof(float)));
  n.events = o->listmode ? mul_sat(nevents, EVENT_BYTES) : 0;
  return n;
}

/* Listmode events a simulation draws: the expected trues plus the background, counts x (1 + background). */
static uint64_t expected_events(const struct options *o)
{
  double e = ceil(o->counts * (1.0 + o->background));
  return e >= 1.8e19 ? UINT64_MAX : (uint64_t)e;
}

/* What the options ask of starproj, the scanner and this machine, checked before anything is allocated or started
 * (each of these used to fail after StarPU had started, or to corrupt memory): 0, or 2 after a message.
 * nevents_in: the events of a listmode input (0 otherwise). */
static int validate_run(const struct options *o, const struct layout *l, int64_t nevents_in)
{
  if ((uint64_t)l->nvox > MAX_ELEMENTS)
    return fail_usage("--image %dx%dx%d is %lld voxels, more than starproj's limit of %llu (2^32-1) per image",
                      o->dims[0], o->dims[1], o->dims[2], (long long)l->nvox, (unsigned long long)MAX_ELEMENTS);
  if (!o->listmode && o->subsets > l->si.num_views)
    return fail_usage("--subsets %d: the %s scanner's sinogram has %d views, and each subset needs one", o->subsets,
                      o->scanner, l->si.num_views);
  for (int k = 0; k < 3 && o->use_fwhm; k++) {
    double reach = ceil(3.0 * o->fwhm[k] / (2.0 * sqrt(2.0 * log(2.0))) / o->voxel_size[k]);
    if (o->fwhm[k] > 0 && reach > MAX_BLUR_REACH)
      return fail_usage("--fwhm %g with --voxel-size %g (axis %d): the resolution model would reach %.0f voxels each "
                        "side (3 sigma), at most %d", (double)o->fwhm[k], (double)o->voxel_size[k], k, reach,
                        MAX_BLUR_REACH);
  }
  int simulate = !o->input && !o->input_lm;
  uint64_t nevents = !o->listmode ? 0 : simulate ? expected_events(o) : (uint64_t)nevents_in;
  struct need n = memory_need(o, l, nevents, 0);
  uint64_t total = add_sat(add_sat(n.images, n.sinogram), n.events), limit = physical_memory();
  if (total > limit)
    return fail_usage("this run needs about %.3g GiB of memory (images %.3g GiB, sinogram %.3g GiB, listmode "
                      "events %.3g GiB), more than the %.3g GiB of this machine", gib(total), gib(n.images),
                      gib(n.sinogram), gib(n.events), gib(limit));
  if (simulate && o->listmode && nevents > MAX_ELEMENTS)
    return fail_usage("--counts %g and --background %g make about %.4g listmode events, more than starproj's limit "
                      "of %llu (2^32-1) in one set", o->counts, o->background, (double)nevents,
                      (unsigned long long)MAX_ELEMENTS);
  return 0;
}

/* ---- inputs --------------------------------------------------------------------------------------------------- */
struct inputs {
  struct sproj_sino_info counts_info, mult_info, add_info;
  struct sproj_lm_info lm_info;
  float *counts, *mult, *add; /* from the readers: free with sproj_free */
  int32_t *lor;
  int16_t *bins;
};

/* A folder (or device) given where a file is wanted reaches the reader as "a file of 4096 bytes"; say what it is.
 * A missing file is left to the reader, whose message names it. */
static int check_regular(const char *path)
{
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return fail_input("'%s' is %s, not a regular file", path, S_ISDIR(st.st_mode) ? "a folder" : "something else");
  return 0;
}

/* The header BASE.hdr and the data file it names (data_file = NAME, in the header's folder) are regular files
 * where they exist; a folder given as BASE itself is named as such. */
static int check_input_files(const char *option, const char *base)
{
  char hdr[4096], data[4096 + 256], line[512], name[256];
  struct stat st;
  if (snprintf(hdr, sizeof hdr, "%s.hdr", base) >= (int)sizeof hdr)
    return fail_input("the file name '%s' is too long", base);
  if (stat(hdr, &st) != 0 && stat(base, &st) == 0 && S_ISDIR(st.st_mode))
    return fail_input("'%s' is a folder; %s takes BASE of the files BASE.hdr and BASE.raw", base, option);
  if (check_regular(hdr))
    return 1;
  FILE *f = fopen(hdr, "r");
  if (!f)
    return 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, f))
    found = sscanf(line, " data_file = %255s", name) == 1;
  fclose(f);
  if (!found)
    return 0;
  const char *slash = strrchr(hdr, '/');
  snprintf(data, sizeof data, "%.*s%s", slash ? (int)(slash - hdr + 1) : 0, hdr, name);
  return check_regular(data);
}

/* Counts, factors and backgrounds must be finite and >= 0; found here, before StarPU starts, rather than by the
 * model or the reconstruction, whose message speaks of coordinates. */
static int check_values(const char *base, const char *what, const float *v, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    if (!(v[i] >= 0.0f) || isinf(v[i]))
      return fail_input("%s holds %g at element %lld; %s must be finite and >= 0", base, (double)v[i], (long long)i,
                        what);
  return 0;
}

static int64_t values_of(const struct sproj_sino_info *info)
{
  uint64_t n = 1;
  for (int k = 0; k < info->num_dims; k++)
    n = mul_sat(n, (uint64_t)info->shape[k]);
  return n > INT64_MAX ? INT64_MAX : (int64_t)n; /* the reader held them all: never saturates */
}

/* A reader's failure: its message, and 1. */
static int read_failed(int rc)
{
  if (rc == SPROJ_OK)
    return 0;
  fprintf(stderr, "starproj-recon: %s (%s)\n", sproj_last_error(), sproj_strerror(rc));
  return 1;
}

/* Reads every input before the output folder exists and StarPU starts, so that a bad file fails at once: 0, or 1
 * after a message (what was read is then in *in for free_inputs). */
static int read_inputs(const struct options *o, struct inputs *in)
{
  memset(in, 0, sizeof *in);
  if ((o->input && check_input_files("--input", o->input)) ||
      (o->input_lm && check_input_files("--input-listmode", o->input_lm)) ||
      (o->mult_file && check_input_files("--mult", o->mult_file)) ||
      (o->add_file && check_input_files("--add", o->add_file)))
    return 1;
  if ((o->input && read_failed(sproj_raw_read_sino(o->input, &in->counts_info, &in->counts))) ||
      (o->input_lm && read_failed(sproj_raw_read_listmode(o->input_lm, &in->lm_info, &in->lor, &in->bins))) ||
      (o->mult_file && read_failed(sproj_raw_read_sino(o->mult_file, &in->mult_info, &in->mult))) ||
      (o->add_file && read_failed(sproj_raw_read_sino(o->add_file, &in->add_info, &in->add))))
    return 1;
  if ((in->counts && check_values(o->input, "counts", in->counts, values_of(&in->counts_info))) ||
      (in->mult && check_values(o->mult_file, "factors", in->mult, values_of(&in->mult_info))) ||
      (in->add && check_values(o->add_file, "backgrounds", in->add, values_of(&in->add_info))))
    return 1;
  return 0;
}

static void free_inputs(struct inputs *in)
{
  sproj_free(in->counts);
  sproj_free(in->mult);
  sproj_free(in->add);
  sproj_free(in->lor);
  sproj_free(in->bins);
  memset(in, 0, sizeof *in);
}

/* Without --scanner, the scanner preset the first input header names (say so); 0, or 1 for a name that is not
 * one of starproj-recon's presets. */
static int pick_scanner(struct options *o, const struct inputs *in)
{
  const char *names[4] = {in->counts_info.scanner, in->lm_info.scanner, in->mult_info.scanner,
                          in->add_info.scanner};
  const char *files[4] = {o->input, o->input_lm, o->mult_file, o->add_file};
  for (int i = 0; i < 4 && !o->scanner_given; i++) {
    if (!files[i] || !names[i][0])
      continue;
    if (strcmp(names[i], "small") && strcmp(names[i], "vision600"))
      return fail_input("%s.hdr is data of the scanner '%s', which starproj-recon does not know (small or "
                        "vision600)", files[i], names[i]);
    o->scanner = names[i];
    SAY("starproj-recon: the %s scanner, as %s.hdr names it (no --scanner given)\n", o->scanner, files[i]);
    return 0;
  }
  return 0;
}

/* "view 64, plane 64, radial 65" */
static void describe_axes(const struct sproj_sino_info *info, char *buf, size_t len)
{
  size_t k = 0;
  buf[0] = '\0';
  for (int d = 0; d < info->num_dims && k < len; d++)
    k += (size_t)snprintf(buf + k, len - k, "%s%s %lld", d ? ", " : "", info->axes[d], (long long)info->shape[d]);
}

static int same_bin_width(float a, float b)
{
  return fabsf(a - b) <= 1e-4f * fabsf(b);
}

/* A sinogram file must have the layout want (axes in that order, the scanner's sizes, its TOF bins) and, when its
 * header names a scanner, the run's: the element count alone would let a permuted or foreign sinogram through, to
 * be reconstructed as nonsense without a word. */
static int check_sino_header(const char *base, const struct sproj_sino_info *info, const struct sproj_sino_info *want)
{
  if (info->scanner[0] && strcmp(info->scanner, want->scanner))
    return fail_input("%s.hdr is data of the %s scanner, this run's is %s", base, info->scanner, want->scanner);
  if (info->num_tof_bins != want->num_tof_bins)
    return fail_input("%s has %d TOF bins, the reconstruction %d (--tof)", base, info->num_tof_bins,
                      want->num_tof_bins);
  int same = info->num_dims == want->num_dims;
  for (int k = 0; same && k < want->num_dims; k++)
    same = strcmp(info->axes[k], want->axes[k]) == 0 && info->shape[k] == want->shape[k];
  if (!same) {
    char got[256], need[256];
    describe_axes(info, got, sizeof got);
    describe_axes(want, need, sizeof need);
    return fail_input("%s.hdr has the axes %s; the %s scanner's sinogram has %s", base, got, want->scanner, need);
  }
  if (want->num_tof_bins && info->tof_bin_width > 0 && !same_bin_width(info->tof_bin_width, want->tof_bin_width))
    return fail_input("%s.hdr has TOF bins of %g mm, this run %g mm", base, (double)info->tof_bin_width,
                      (double)want->tof_bin_width);
  return 0;
}

/* Listmode events must number the LORs of the run's scanner (and come from it, when the header says), with its TOF
 * bins for a TOF run (a non-TOF run ignores bins), and be few enough for one LOR set and the subsets. */
static int check_lm_header(const char *base, const struct sproj_lm_info *info, const struct options *o,
                           const struct layout *l)
{
  if (info->scanner[0] && strcmp(info->scanner, o->scanner))
    return fail_input("%s.hdr is data of the %s scanner, this run's is %s", base, info->scanner, o->scanner);
  if (info->num_lors != l->si.num_lors)
    return fail_input("%s numbers %lld LORs, the %s scanner has %lld", base, (long long)info->num_lors, o->scanner,
                      (long long)l->si.num_lors);
  if (info->num_tof_bins != (o->tof ? l->nbins : 0) && !(info->num_tof_bins && !o->tof))
    return fail_input("%s has %d TOF bins, the reconstruction %d (--tof)", base, info->num_tof_bins,
                      o->tof ? l->nbins : 0);
  if (o->tof && info->tof_bin_width > 0 && !same_bin_width(info->tof_bin_width, l->tp.bin_width))
    return fail_input("%s.hdr has TOF bins of %g mm, this run %g mm", base, (double)info->tof_bin_width,
                      (double)l->tp.bin_width);
  if (info->num_events == 0)
    return fail_input("no listmode events to reconstruct");
  if ((uint64_t)info->num_events > MAX_ELEMENTS)
    return fail_input("%s holds %lld events, more than starproj's limit of %llu (2^32-1) in one set", base,
                      (long long)info->num_events, (unsigned long long)MAX_ELEMENTS);
  if (info->num_events < o->subsets)
    return fail_input("%d subsets but only %lld events", o->subsets, (long long)info->num_events);
  return 0;
}

/* Every input against the run's layout: 0, or 1 after a message. */
static int check_inputs(const struct options *o, const struct inputs *in, const struct layout *l)
{
  struct sproj_sino_info sino, per_lor;
  sino_layout(o, l, o->tof, &sino);
  sino_layout(o, l, 0, &per_lor);
  if (o->input && check_sino_header(o->input, &in->counts_info, &sino))
    return 1;
  if (o->input_lm && check_lm_header(o->input_lm, &in->lm_info, o, l))
    return 1;
  if (o->mult_file && check_sino_header(o->mult_file, &in->mult_info, &per_lor))
    return 1;
  /* a background per LOR, or for TOF data per LOR and bin */
  if (o->add_file && check_sino_header(o->add_file, &in->add_info,
                                       o->tof && in->add_info.num_dims == sino.num_dims ? &sino : &per_lor))
    return 1;
  return 0;
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

/* ---- the run -------------------------------------------------------------------------------------------------- */
struct run {
  struct layout l;
  sproj_lors *lors;                   /* the scanner's sinogram LORs */
  const float *xs, *xe;               /* their endpoints (registered in lors: read only) */
  sproj_chunks *views;                /* one chunk per view */
  sproj_tof *tof;
  float *phantom, *mult, *add;        /* the phantom only when simulating; add NULL: no background */
  int add_per_bin;                    /* add holds a value per LOR and TOF bin (a file of that shape); else one
                                       * per LOR, spread evenly over a TOF LOR's bins */
  float *counts;                      /* sinogram counts [lor][bin]: read, or the host array of simulated counts
                                       * (made where the data lives: on a GPU they never come home) */
  int counts_on_devices;              /* simulated: the counts are valid on the devices, not in counts */
  float *lor_sums;                    /* simulated TOF sinogram: each LOR's counts over its bins (lor_sums_proj) */
  sproj_proj *lor_sums_proj;
  int32_t *ev_lor;                    /* listmode events: sampled or read (sproj_free) */
  int16_t *ev_bin;
  int16_t *ev_bin_chunked;            /* their TOF bins in the order of the event chunks (events_block) */
  int64_t nevents;
  struct sproj_sino_info sino_info;   /* the layout of counts and add */
  float *x;                           /* the reconstruction */
  sproj_image *ximg;
  sproj_model *model, *sens_model;
  sproj_proj *data;
  sproj_lors *events;
  sproj_chunks *ev_chunks;
  float *ev_xs, *ev_xe, *ev_mult, *ev_add;
  int nchunks;
  sproj_recon *recon;
};

static void start_starpu(const struct options *o, const struct layout *l)
{
  if (!o->verbose)
    setenv("STARPU_SILENT", "1", 0);
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = o->ncpu;
  cfg.ncuda = o->ngpu;
  cfg.sched = o->sched;
  TRY(sproj_init(&cfg));
  if (o->devices)
    TRY(sproj_set_devices(strcmp(o->devices, "gpu") == 0 ? SPROJ_DEVICE_CUDA
                          : strcmp(o->devices, "cpu") == 0 ? SPROJ_DEVICE_CPU
                                                           : SPROJ_DEVICE_ANY));
  const struct sproj_sinogram_info *si = &l->si;
  SAY("starproj-recon: %s scanner (%d detectors x %d rings, %d views x %d radial bins x %d planes = %lld LORs), "
      "image %dx%dx%d of %.3gx%.3gx%.3g mm%s%s\n", o->scanner, si->num_detectors, si->num_rings, si->num_views,
      si->num_radial_bins, si->num_planes, (long long)si->num_lors, o->dims[0], o->dims[1], o->dims[2],
      o->voxel_size[0], o->voxel_size[1], o->voxel_size[2], o->tof ? ", TOF" : "", o->listmode ? ", listmode" : "");
  SAY("devices: %d CPU workers, %d GPUs, scheduler %s\n", sproj_num_cpu_workers(), sproj_num_gpus(),
      sproj_scheduler_name());
}

/* The sinogram's LORs, its views chunking, the TOF parameters, and room for the factors and backgrounds. */
static void setup_lors(const struct options *o, struct run *r)
{
  const struct layout *l = &r->l;
  const int64_t nlors = l->si.num_lors;
  float *xs = alloc_or_die((size_t)nlors * 3 * sizeof(float)), *xe = alloc_or_die((size_t)nlors * 3 * sizeof(float));
  progress_step("the scanner's LORs", -1.0);
  TRY(sproj_pause()); /* host work on every core: StarPU's idle workers would take half of it */
  TRY(sproj_scanner_lors(l->scanner, xs, xe, 0));
  TRY(sproj_resume());
  TRY(sproj_lors_register(&r->lors, xs, xe, nlors));
  r->xs = xs;
  r->xe = xe;
  TRY(sproj_scanner_chunks_views(&r->views, l->scanner, r->lors));
  if (o->tof)
    TRY(sproj_tof_register(&r->tof, &l->tp, NULL, NULL, NULL));
  sino_layout(o, l, o->tof, &r->sino_info);
}

/* What the run will take, said before its long phases: host memory as estimated from its arrays, and the time of an
 * iteration from a few views projected forward here (twice: the second, once their LORs are on the devices; on a GPU
 * one view is too little work to time), times the views, times 3 for the back projection; a warning when either is
 * far beyond this machine. */
static void estimate(const struct options *o, struct run *r, int64_t nevents_in)
{
  const struct layout *l = &r->l;
  int simulate = !o->input && !o->input_lm;
  uint64_t nevents = !o->listmode ? 0 : simulate ? expected_events(o) : (uint64_t)nevents_in;
  struct need n = memory_need(o, l, nevents, sproj_num_gpus());
  uint64_t total = add_sat(add_sat(n.images, n.sinogram), n.events), limit = physical_memory();
  int views[8], nv = l->si.num_views < 8 ? l->si.num_views : 8;
  for (int k = 0; k < nv; k++)
    views[k] = k * (l->si.num_views / nv);
  const int64_t per_view = l->si.lors_per_view * nv;
  float *xs = host_alloc((size_t)per_view * 3 * sizeof(float)), *xe = host_alloc((size_t)per_view * 3 * sizeof(float));
  float *img = host_alloc((size_t)l->nvox * sizeof(float)), *val = host_alloc((size_t)per_view * l->nbins * sizeof(float));
  memset(img, 0, (size_t)l->nvox * sizeof(float));
  sproj_lors *lors;
  sproj_image *x;
  sproj_proj *p;
  TRY(sproj_scanner_view_lors(l->scanner, views, nv, xs, xe, 0));
  TRY(sproj_lors_register(&lors, xs, xe, per_view));
  TRY(sproj_image_register(&x, img, o->dims, l->vs, l->origin));
  TRY(o->tof ? sproj_proj_register_tof(&p, val, lors, l->nbins) : sproj_proj_register(&p, val, lors));
  double best = 1e30;
  for (int k = 0; k < 2; k++) {
    double t = now();
    TRY(o->tof ? sproj_fwd_tof_sino(x, p, NULL, SPROJ_ALL_CHUNKS, r->tof) : sproj_fwd(x, p, NULL, SPROJ_ALL_CHUNKS));
    TRY(sproj_proj_sync(p, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
    best = fmin(best, now() - t);
  }
  TRY(sproj_proj_unregister(p));
  TRY(sproj_image_unregister(x));
  TRY(sproj_lors_unregister(lors));
  free(xs);
  free(xe);
  free(img);
  free(val);
  /* listmode: an event costs what a sinogram LOR does, but for TOF only its window of bins (2 x num_sigmas sigmas
   * wide) of the LOR's bins: a rough guess */
  double units = o->listmode ? (double)nevents / (double)per_view : (double)l->si.num_views / nv;
  if (o->listmode && o->tof) {
    double window = 2.0 * l->tp.num_sigmas * l->tp.sigma / l->tp.bin_width + 1.0;
    units *= fmin(1.0, window / l->nbins);
  }
  double iteration = 3.0 * best * units;
  SAY("estimate: host memory about %.1f GB (this machine has %.1f GB); an iteration about %.3g s (%d views, %lld LORs, "
      "projected in %.3g ms here)\n", total / 1e9, limit / 1e9, iteration, nv, (long long)per_view, 1e3 * best);
  if ((double)total > 0.8 * (double)limit)
    SAY("warning: this run needs most of the machine's memory: it may be slowed by swapping or stopped\n");
  if (iteration * o->iterations > 600.0)
    SAY("warning: the %s preset is far too large for the devices found (%d CPU workers, %d GPUs): about %.0f minutes "
        "for the iterations alone%s\n", o->scanner, sproj_num_cpu_workers(), sproj_num_gpus(),
        iteration * o->iterations / 60.0, sproj_num_gpus() ? "" : "; one GPU makes it seconds");
}

/* Efficiencies of +-15% and attenuation factors exp(-line integral), LOR by LOR: each LOR's random number depends on
 * the seed and its index only, so any number of threads gives the same factors. */
struct factors_job {
  float *mult;
  const float *line;
  uint64_t seed;
};

static void factors_block(void *ctx, int64_t first, int64_t end, int64_t block)
{
  (void)block;
  struct factors_job *j = ctx;
  for (int64_t i = first; i < end; i++) {
    uint64_t s = j->seed ^ ((uint64_t)i * 0xd1342543de82ef95ull);
    j->mult[i] = expf(-j->line[i]) * (0.85f + 0.3f * (float)((mix(&s) >> 11) * (1.0 / 9007199254740992.0)));
  }
}

/* The phantom, and the factor of each LOR: attenuation by a water cylinder (0.0096 / mm), from the line integrals
 * of its map, times detector efficiencies. line: room for the sinogram, used for the integrals. */
static void simulate_factors(const struct options *o, struct run *r)
{
  const struct layout *l = &r->l;
  size_t image_bytes = (size_t)l->nvox * sizeof(float), line_bytes = (size_t)l->si.num_lors * sizeof(float);
  float *line = alloc_or_die(line_bytes);
  struct sproj_phantom ph, mu_ph;
  progress_step("phantom and attenuation map", -1.0);
  r->phantom = alloc_or_die(image_bytes);
  float *mu = alloc_or_die(image_bytes);
  TRY(sproj_pause());
  TRY(sproj_phantom_default(&ph, o->dims, l->vs, l->origin));
  TRY(sproj_phantom_fill(&ph, r->phantom, o->dims, l->vs, l->origin, 2));
  mu_ph = ph;
  mu_ph.value = 0.0096f;
  mu_ph.num_spheres = 0;
  TRY(sproj_phantom_fill(&mu_ph, mu, o->dims, l->vs, l->origin, 2));
  TRY(sproj_resume());
  sproj_image *img;
  sproj_proj *proj;
  progress_step("attenuation line integrals", -1.0);
  TRY(sproj_image_register(&img, mu, o->dims, l->vs, l->origin));
  TRY(sproj_proj_register(&proj, line, r->lors));
  TRY(sproj_fwd(img, proj, r->views, SPROJ_ALL_CHUNKS));
  TRY(sproj_proj_unregister(proj));
  TRY(sproj_image_unregister(img));
  r->mult = alloc_or_die((size_t)l->si.num_lors * sizeof(float));
  struct factors_job j = {r->mult, line, o->seed * 7919 + 17};
  TRY(sproj_pause());
  parallel_blocks("attenuation and efficiency factors", l->si.num_lors, 1 << 16, factors_block, &j);
  TRY(sproj_resume());
  release(mu, image_bytes);
  release(line, line_bytes);
}

/* The model of the data: the factors, the background (one value per LOR, spread over a TOF LOR's bins) and the
 * resolution model. */
static void make_model(const struct options *o, struct run *r, sproj_model **model)
{
  const float *fwhm = o->use_fwhm ? o->fwhm : NULL;
  if (o->tof && !r->add_per_bin)
    TRY(sproj_model_create_tof_uniform_add(model, r->lors, r->mult, r->add, r->tof, fwhm));
  else
    TRY(sproj_model_create(model, r->lors, r->mult, r->add, r->tof, fwhm));
}

/* Simulated data, made where the data lives (the GPUs, or the CPU workers): the phantom projected through the model
 * of the data (its resolution too: the same G in the simulation and the reconstruction), scaled so that the trues
 * are the counts asked for, plus a flat background; then Poisson counts drawn in place, or listmode events drawn on
 * the host from the expected counts brought home. */
static void simulate(const struct options *o, struct run *r)
{
  const struct layout *l = &r->l;
  const int64_t nlors = l->si.num_lors, values = nlors * l->nbins;
  const size_t bytes = (size_t)values * sizeof(float);
  simulate_factors(o, r);
  float bg_lor = (float)(o->background * o->counts / (double)nlors);
  r->add = alloc_or_die((size_t)nlors * sizeof(float));
  for (int64_t i = 0; i < nlors; i++)
    r->add[i] = bg_lor;
  sproj_model *model;
  make_model(o, r, &model);
  /* The preview brings a non-TOF sinogram home: into memory faulted in beforehand on every core (a GPU's copy into
   * fresh pages waits on their faults one at a time). A TOF sinogram, and listmode's counts, stay where they are made. */
  r->counts = !o->tof && !o->listmode ? alloc_or_die(bytes) : lazy_alloc(bytes);
  TRY(o->tof ? sproj_proj_register_tof(&r->data, r->counts, r->lors, l->nbins)
             : sproj_proj_register(&r->data, r->counts, r->lors));
  sproj_image *img;
  TRY(sproj_image_register(&img, r->phantom, o->dims, l->vs, l->origin));
  progress_step("projecting the phantom", -1.0);
  double trues = 0.0;
  TRY(sproj_model_expected(model, img, r->data, r->views, &trues));
  TRY(sproj_image_unregister(img));
  if (!(trues > 0)) {
    fprintf(stderr, "starproj-recon: the phantom projects to nothing: is the image inside the scanner?\n");
    exit(1);
  }
  float scale = (float)(o->counts / trues);
  for (int64_t v = 0; v < l->nvox; v++)
    r->phantom[v] *= scale;
  if (o->tof && !o->listmode) {
    r->lor_sums = alloc_or_die((size_t)nlors * sizeof(float));
    TRY(sproj_proj_register(&r->lor_sums_proj, r->lor_sums, r->lors));
  }
  if (o->listmode) {
    /* the counts drawn where they are, and their events' TOF bins written there: only the events come home */
    progress_step("the Poisson counts and their events", -1.0);
    TRY(sproj_model_draw_events(model, r->data, r->views, scale, o->seed, &r->ev_lor, o->tof ? &r->ev_bin : NULL,
                                &r->nevents));
    TRY(sproj_model_destroy(model));
    TRY(sproj_proj_discard(r->data));
    r->data = NULL;
    free(r->counts);
    r->counts = NULL;
  } else {
    progress_step(o->noise_free ? "the expected counts" : "the expected and Poisson counts", -1.0);
    TRY(sproj_model_draw(model, r->data, r->views, scale, o->seed, !o->noise_free, r->lor_sums_proj));
    TRY(sproj_wait_all());
    r->model = model;
    r->counts_on_devices = 1;
  }
  SAY("simulated: %.4g expected trues, background %.3g per LOR%s, %s\n", o->counts, (double)(bg_lor / l->nbins),
      o->tof ? " and TOF bin" : "", o->listmode ? "listmode" : (o->noise_free ? "no noise" : "Poisson noise"));
  if (o->use_fwhm)
    SAY("simulated: the phantom blurred by the resolution model (FWHM %g x %g x %g mm), as the reconstruction "
        "models it\n", (double)o->fwhm[0], (double)o->fwhm[1], (double)o->fwhm[2]);
}

/* Read data: the factors from files as read (no copy), else 1 and no background; the counts or events as read. */
static void use_inputs(const struct options *o, struct inputs *in, struct run *r)
{
  const int64_t nlors = r->l.si.num_lors;
  if (in->mult) {
    r->mult = in->mult;
  } else {
    r->mult = alloc_or_die((size_t)nlors * sizeof(float));
    for (int64_t i = 0; i < nlors; i++)
      r->mult[i] = 1.0f;
  }
  r->add = in->add;
  r->add_per_bin = in->add && o->tof && values_of(&in->add_info) == nlors * r->l.nbins;
  if (!o->mult_file || !o->add_file)
    SAY("starproj-recon: no %s%s%s given: assuming %s%s%s\n", o->mult_file ? "" : "--mult",
        !o->mult_file && !o->add_file ? " and no " : "", o->add_file ? "" : "--add",
        o->mult_file ? "" : "m = 1 (no attenuation or normalisation)", !o->mult_file && !o->add_file ? " and " : "",
        o->add_file ? "" : "a = 0 (no randoms or scatter)");
  /* the arrays stay in *in, which frees them at the end */
  r->counts = in->counts;
  r->nevents = in->lm_info.num_events;
  r->ev_lor = in->lor;
  r->ev_bin = in->bins;
}

/* Notes BASE.hdr and BASE.raw in dir, written by a raw writer. */
static void note_raw(const char *dir, const char *base)
{
  char name[64];
  for (int k = 0; k < 2; k++) {
    snprintf(name, sizeof name, "%s.%s", base, k ? "raw" : "hdr");
    char *p = path_in(dir, name);
    note_written(p);
    free(p);
  }
}

/* --save-data: the simulated sinogram or events and their factors. */
static void save_data(const struct options *o, const struct run *r)
{
  char *p;
  struct sproj_sino_info per_lor;
  sino_layout(o, &r->l, 0, &per_lor);
  TRY(sproj_raw_write_sino(p = path_in(o->output, "mult"), &per_lor, r->mult));
  free(p);
  note_raw(o->output, "mult");
  /* the background as the model takes it: one value per LOR (spread over a TOF LOR's bins) */
  TRY(sproj_raw_write_sino(p = path_in(o->output, "add"), &per_lor, r->add));
  free(p);
  note_raw(o->output, "add");
  if (o->listmode) {
    struct sproj_lm_info li = {r->nevents, r->l.si.num_lors, "", o->tof ? r->l.nbins : 0,
                               o->tof ? r->l.tp.bin_width : 0.0f};
    snprintf(li.scanner, sizeof li.scanner, "%s", o->scanner);
    TRY(sproj_raw_write_listmode(p = path_in(o->output, "events"), &li, r->ev_lor, r->ev_bin));
  } else {
    if (r->counts_on_devices)
      TRY(sproj_proj_sync(r->data, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
    TRY(sproj_raw_write_sino(p = path_in(o->output, "counts"), &r->sino_info, r->counts));
  }
  free(p);
  note_raw(o->output, o->listmode ? "events" : "counts");
  SAY("data written: %s/%s.hdr/.raw, %s/mult and %s/add\n", o->output, o->listmode ? "events" : "counts", o->output,
      o->output);
}

/* ---- reconstruction ------------------------------------------------------------------------------------------- */
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
  progress_step(NULL, (double)p->iteration / ctx->o->iterations);
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
    } else {
      note_written(path);
    }
    free(path);
    return ctx->failed;
  }
  return 0;
}

/* Listmode: each event's LOR endpoints, factor and background, from its LOR (and TOF bin). */
struct events_job {
  const struct run *r;
  int tof;
  int64_t bad; /* an event outside the sinogram (the first one a thread met), or -1 */
};

/* Each event's endpoints (copied from its LOR's in the sinogram's LOR set), factor, background and TOF bin, in the
 * chunked order: chunk c of the C = r->nchunks (the first n % C hold one event more) holds events c, c + C, c + 2C, ...
 * of the events as drawn or read, at places first(c) + i. A block is a band of rows i: its events are a contiguous
 * range of the drawn ones (read once, from cache, by every chunk), and each chunk writes a contiguous stretch. */
enum { EVENT_ROWS = 512 };
static void events_block(void *ctx, int64_t first, int64_t end, int64_t block)
{
  (void)block;
  struct events_job *j = ctx;
  const struct run *r = j->r;
  const int64_t nlors = r->l.si.num_lors, nbins = r->l.nbins, C = r->nchunks, q = r->nevents / C;
  const int64_t rem = r->nevents % C;
  const int32_t *lor = r->ev_lor;
  const int16_t *bin = r->ev_bin;
  for (int64_t c = 0; c < C; c++) {
    const int64_t rows = q + (c < rem), base = c * q + (c < rem ? c : rem);
    for (int64_t i = first; i < end && i < rows; i++) {
      const int64_t e = i * C + c, d = base + i;
      if (lor[e] < 0 || lor[e] >= nlors || (j->tof && (bin[e] < 0 || bin[e] >= nbins))) {
        __atomic_store_n(&j->bad, e, __ATOMIC_RELAXED);
        return;
      }
      const int64_t l = lor[e];
      memcpy(r->ev_xs + 3 * d, r->xs + 3 * l, 3 * sizeof(float));
      memcpy(r->ev_xe + 3 * d, r->xe + 3 * l, 3 * sizeof(float));
      r->ev_mult[d] = r->mult[l];
      if (r->ev_bin_chunked)
        r->ev_bin_chunked[d] = bin[e];
      float a = 0.0f;
      if (r->add)
        a = r->add_per_bin ? r->add[l * nbins + bin[e]] : j->tof ? r->add[l] / (float)nbins : r->add[l];
      r->ev_add[d] = a;
    }
  }
}

static void event_arrays(const struct options *o, struct run *r)
{
  const int64_t n = r->nevents;
  if (n == 0) {
    fprintf(stderr, "starproj-recon: no listmode events to reconstruct\n");
    exit(1);
  }
  /* chunks of about equal size, a few per subset: each takes every C-th event, so that every subset holds a share of
   * every part of the data (events drawn in LOR order stay in LOR order within a chunk: neighbours share image
   * columns) */
  r->nchunks = o->subsets * 4 < n ? o->subsets * 4 : (int)n;
  if (o->subsets > r->nchunks) {
    fprintf(stderr, "starproj-recon: %d subsets but only %lld events\n", o->subsets, (long long)n);
    exit(1);
  }
  struct events_job j = {r, o->tof, -1};
  /* not faulted in beforehand: the copy below writes every element, on every core (a pass less over 8 GB at the
   * benchmark's scale) */
  if (r->ev_bin)
    r->ev_bin_chunked = lazy_alloc((size_t)n * sizeof(int16_t));
  r->ev_xs = lazy_alloc((size_t)n * 3 * sizeof(float));
  r->ev_xe = lazy_alloc((size_t)n * 3 * sizeof(float));
  r->ev_mult = lazy_alloc((size_t)n * sizeof(float));
  r->ev_add = lazy_alloc((size_t)n * sizeof(float));
  TRY(sproj_pause());
  /* rows of the chunked events: the first chunk's count */
  parallel_blocks("the events' endpoints and factors", n / r->nchunks + (n % r->nchunks != 0), EVENT_ROWS,
                  events_block, &j);
  TRY(sproj_resume());
  if (j.bad >= 0) {
    fprintf(stderr, "starproj-recon: event %lld has LOR %d / TOF bin %d outside the sinogram\n", (long long)j.bad,
            r->ev_lor[j.bad], r->ev_bin ? r->ev_bin[j.bad] : 0);
    exit(1);
  }
}

/* Event chunks of about equal size, a few per subset, dealt out to the subsets in turn. With --order-events, each
 * chunk's events in the order of sproj_lors_order (neighbours run through the same image columns: faster GPU
 * projections); every chunk keeps its events, so the subsets stay what they were. */
static void event_chunks(const struct options *o, struct run *r)
{
  const int64_t n = r->nevents;
  const int nchunks = r->nchunks;
  int64_t *first = malloc((size_t)nchunks * sizeof *first), *count = malloc((size_t)nchunks * sizeof *count);
  int64_t *order = malloc(((size_t)n / nchunks + 1) * sizeof *order);
  if (!first || !count || !order)
    out_of_memory();
  double t_order = now();
  for (int c = 0; c < nchunks; c++) {
    first[c] = c * (n / nchunks) + (c < n % nchunks ? c : n % nchunks);
    count[c] = n / nchunks + (c < n % nchunks);
    int64_t f = first[c], m = count[c];
    if (!o->order_events)
      continue;
    TRY(sproj_lors_order(r->ev_xs + 3 * f, r->ev_xe + 3 * f, m, r->l.vs, order));
    TRY(sproj_reorder(r->ev_xs + 3 * f, 3 * sizeof(float), m, order));
    TRY(sproj_reorder(r->ev_xe + 3 * f, 3 * sizeof(float), m, order));
    TRY(sproj_reorder(r->ev_mult + f, sizeof(float), m, order));
    TRY(sproj_reorder(r->ev_add + f, sizeof(float), m, order));
    if (r->ev_bin_chunked)
      TRY(sproj_reorder(r->ev_bin_chunked + f, sizeof(int16_t), m, order));
  }
  free(order);
  t_order = now() - t_order;
  if (o->tof)
    TRY(sproj_lors_register_events(&r->events, r->ev_xs, r->ev_xe, r->ev_bin_chunked, n));
  else
    TRY(sproj_lors_register(&r->events, r->ev_xs, r->ev_xe, n));
  TRY(sproj_chunks_create_ranges(&r->ev_chunks, r->events, nchunks, first, count));
  free(first);
  free(count);
  if (o->order_events)
    SAY("listmode: %lld events in %d chunks, each in the order of sproj_lors_order (%.2f s)\n", (long long)n,
        nchunks, t_order);
  else
    SAY("listmode: %lld events in %d chunks\n", (long long)n, nchunks);
}

/* With one GPU, the LORs and the data go there before the reconstruction starts (timed as a phase of their own); with
 * several, the reconstruction spreads each chunk to one GPU itself. */
static void upload(const struct options *o, struct run *r, const struct sproj_recon_config *cfg)
{
  if (sproj_num_gpus() != 1 || (o->devices && strcmp(o->devices, "cpu") == 0))
    return;
  progress_phase("upload");
  if (o->listmode) {
    TRY(sproj_lors_upload(r->events, r->ev_chunks, SPROJ_ALL_CHUNKS, 0));
  } else {
    TRY(sproj_lors_upload(r->lors, cfg->chunks, SPROJ_ALL_CHUNKS, 0));
    TRY(sproj_proj_upload(r->data, cfg->chunks, SPROJ_ALL_CHUNKS, 0));
  }
  progress_end();
}

/* The model of the data, the sensitivities, and the iterations. */
static void reconstruct(const struct options *o, struct run *r)
{
  const struct layout *l = &r->l;
  r->x = alloc_or_die((size_t)l->nvox * sizeof(float));
  for (int64_t v = 0; v < l->nvox; v++)
    r->x[v] = 1.0f;
  TRY(sproj_image_register(&r->ximg, r->x, o->dims, l->vs, l->origin));
  const float *fwhm = o->use_fwhm ? o->fwhm : NULL;
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.num_subsets = o->subsets;
  cfg.objective = o->objective;
  if (!o->listmode) {
    if (!r->model) { /* a simulation made it already */
      progress_phase("model");
      make_model(o, r, &r->model);
    }
    if (!r->data)
      TRY(o->tof ? sproj_proj_register_tof(&r->data, r->counts, r->lors, l->nbins)
                 : sproj_proj_register(&r->data, r->counts, r->lors));
    cfg.data = r->data;
    cfg.chunks = r->views;
  } else {
    progress_phase("events");
    event_arrays(o, r);
    event_chunks(o, r);
    TRY(sproj_model_create(&r->model, r->events, r->ev_mult, r->ev_add, r->tof, fwhm));
    TRY(sproj_model_create(&r->sens_model, r->lors, r->mult, NULL, NULL, fwhm));
    cfg.chunks = r->ev_chunks;
    cfg.sens_model = r->sens_model;
  }
  cfg.model = r->model;
  upload(o, r, &cfg);
  char where[256];
  progress_phase("sensitivities");
  TRY(sproj_stats_reset());
  TRY(sproj_recon_create(&r->recon, r->ximg, &cfg));
  where_line(where, sizeof where);
  SAY("sensitivities: %.2f s, %s\n", progress_end(), where);
  struct progress_ctx ctx = {o, r->ximg, r->x, o->dims, {l->vs[0], l->vs[1], l->vs[2]},
                             {l->origin[0], l->origin[1], l->origin[2]}, 0};
  TRY(sproj_stats_reset());
  progress_phase("iterations");
  progress_step(NULL, 0.0);
  TRY(sproj_recon_iterate(r->recon, o->iterations, on_iteration, &ctx));
  if (ctx.failed)
    exit(1);
  TRY(sproj_image_sync(r->ximg, SPROJ_SYNC_READ));
  SAY("reconstruction: %d iterations x %d subsets in %.2f s\n", o->iterations, o->subsets, progress_end());
}

/* ---- outputs -------------------------------------------------------------------------------------------------- */
/* ---- previews ------------------------------------------------------------------------------------------------- */
/* The previews are drawn by gnuplot, a separate program, so that they carry a title, axes in mm and a colour bar
 * without starproj holding a font: the data goes to it as binary files in a temporary folder, the commands as a
 * script file, and it runs through posix_spawnp with an argument vector (no shell reads a path). Without gnuplot
 * (or when it fails) the plain previews of libstarproj-io are written instead, on the same scale and slices. */

/* What the previews show: the slice each panel holds its fixed axis at, one window for every image panel (the
 * reconstruction and the phantom on the same scale), and the sinogram of one plane. */
struct preview {
  int slice[3];              /* slice[a]: the index of axis a in the panel that fixes axis a */
  float window[2];           /* lo, hi of the images' grey scale */
  float *sino;               /* [view][radial], TOF bins summed; NULL without a sinogram */
  int num_views, num_radial;
  int plane, axial, seg_planes; /* its index in the sinogram's plane axis; its axial position in segment 0 */
  float sino_window[2];
};

/* The slices through the first sphere of the default phantom (the largest hot one, in the central transaxial
 * plane on the ring) when the run simulated it; the image's centre otherwise (data read from files). */
static void preview_slices(const struct options *o, const struct run *r, int slice[3])
{
  const struct layout *l = &r->l;
  struct sproj_phantom ph;
  int have = r->phantom && sproj_phantom_default(&ph, o->dims, l->vs, l->origin) == SPROJ_OK && ph.num_spheres > 0;
  for (int a = 0; a < 3; a++) {
    long i = have ? lround((ph.spheres[0].centre[a] - l->origin[a]) / l->vs[a]) : o->dims[a] / 2;
    slice[a] = (int)(i < 0 ? 0 : i >= o->dims[a] ? o->dims[a] - 1 : i);
  }
}

static int cmp_float_asc(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* lo = 0 and hi = the 99.5th percentile of the finite values of v (reordered), as libstarproj-io's previews take
 * them: a few hot voxels of noise do not wash the rest out; the largest value, or 1, where that is not > 0. */
static void percentile_window(float *v, size_t n, float win[2])
{
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i]))
      v[m++] = v[i];
  win[0] = 0.0f;
  win[1] = 1.0f;
  if (m == 0)
    return;
  qsort(v, m, sizeof *v, cmp_float_asc);
  float hi = v[(size_t)floor(0.995 * (double)(m - 1))];
  if (!(hi > 0.0f))
    hi = v[m - 1];
  if (hi > 0.0f)
    win[1] = hi;
}

/* Copies the panel fixing axis `fixed` at index `at` of image x into out, the lower-numbered free axis fastest
 * (gnuplot's binary array: first index across, second up): transaxial x fastest then y, coronal x then z,
 * sagittal y then z. Returns the number of values. */
static size_t panel_values(const float *x, const int dims[3], int fixed, int at, float *out)
{
  const int u = fixed == 0 ? 1 : 0, w = fixed == 2 ? 1 : 2; /* across, up */
  const int64_t stride[3] = {(int64_t)dims[1] * dims[2], dims[2], 1};
  size_t n = 0;
  for (int b = 0; b < dims[w]; b++)
    for (int a = 0; a < dims[u]; a++)
      out[n++] = x[(int64_t)a * stride[u] + (int64_t)b * stride[w] + (int64_t)at * stride[fixed]];
  return n;
}

/* The window common to the reconstruction and the phantom, from the values of the panels shown: the
 * reconstruction's percentile window, widened to the phantom's largest value so that the truth is never
 * saturated (its hot spheres are a few voxels of the panels, below a percentile). */
static void preview_window(const struct options *o, const struct run *r, struct preview *pv)
{
  const int *d = o->dims;
  size_t per = (size_t)d[0] * d[1] + (size_t)d[0] * d[2] + (size_t)d[1] * d[2], n = 0;
  float *v = host_alloc(per * sizeof *v);
  for (int a = 0; a < 3; a++)
    n += panel_values(r->x, d, a, pv->slice[a], v + n);
  percentile_window(v, n, pv->window);
  for (int a = 0; r->phantom && a < 3; a++) {
    n = panel_values(r->phantom, d, a, pv->slice[a], v);
    for (size_t i = 0; i < n; i++)
      if (isfinite(v[i]) && v[i] > pv->window[1])
        pv->window[1] = v[i];
  }
  free(v);
}

/* The sinogram of the central plane of segment 0 (radial bin x view), its TOF bins summed, gathered through the
 * scanner's LOR numbering so that it does not depend on how the sinogram is ordered. */
static void preview_sinogram(const struct run *r, struct preview *pv)
{
  const struct layout *l = &r->l;
  int planes;
  pv->sino = NULL;
  if (!r->counts || sproj_scanner_segment_planes(l->scanner, 0, &planes) != SPROJ_OK)
    return;
  /* counts made on the devices: a TOF sinogram's sums over bins come home (one value per LOR), a non-TOF one itself */
  const float *counts = r->counts;
  int nbins = l->nbins;
  if (r->counts_on_devices && r->lor_sums) {
    TRY(sproj_proj_sync(r->lor_sums_proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
    counts = r->lor_sums;
    nbins = 1;
  } else if (r->counts_on_devices) {
    TRY(sproj_proj_sync(r->data, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
  }
  pv->num_views = l->si.num_views;
  pv->num_radial = l->si.num_radial_bins;
  pv->seg_planes = planes;
  pv->axial = planes / 2;
  pv->sino = host_alloc((size_t)pv->num_views * pv->num_radial * sizeof *pv->sino);
  for (int v = 0; v < pv->num_views; v++)
    for (int b = 0; b < pv->num_radial; b++) {
      int64_t lor;
      TRY(sproj_scanner_lor_index(l->scanner, v, 0, pv->axial, b, &lor));
      double s = 0.0;
      for (int t = 0; t < nbins; t++)
        s += counts[lor * nbins + t];
      pv->sino[(size_t)v * pv->num_radial + b] = (float)s;
    }
  /* the plane's index in the raw file's plane axis, where view 0's LORs come first ([plane][radial]); -1 (not
   * named) in an order where they do not */
  int64_t lor0;
  TRY(sproj_scanner_lor_index(l->scanner, 0, 0, pv->axial, 0, &lor0));
  pv->plane = lor0 < l->si.lors_per_view ? (int)(lor0 / l->si.num_radial_bins) : -1;
  size_t n = (size_t)pv->num_views * pv->num_radial;
  float *v = host_alloc(n * sizeof *v);
  memcpy(v, pv->sino, n * sizeof *v);
  percentile_window(v, n, pv->sino_window);
  free(v);
}

/* Writes n floats to dir/name; 0 on success, else errno's text on stderr and -1. */
static int write_floats(const char *dir, const char *name, const float *v, size_t n)
{
  char *p = path_in(dir, name);
  FILE *fp = fopen(p, "wb");
  int ok = fp && fwrite(v, sizeof *v, n, fp) == n;
  if (fp && fclose(fp) != 0)
    ok = 0;
  if (!ok)
    fprintf(stderr, "starproj-recon: cannot write %s: %s\n", p, strerror(errno));
  free(p);
  return ok ? 0 : -1;
}

/* Removes the temporary folder and what was written in it (only this run's files are there: mkdtemp made it). */
static void remove_folder(const char *dir)
{
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
        char *p = path_in(dir, e->d_name);
        unlink(p);
        free(p);
      }
    closedir(d);
  }
  rmdir(dir);
}

/* Runs gnuplot on the script, its output into dir/gnuplot.log. 0 when it ran and succeeded; otherwise a line on
 * why in why (not found, failed) and -1. */
static int run_gnuplot(const char *dir, const char *script, char *why, size_t len)
{
  char *log = path_in(dir, "gnuplot.log");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  char *argv[] = {"gnuplot", (char *)script, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    snprintf(why, len, rc == ENOENT ? "gnuplot is not installed" : "gnuplot could not start: %s", strerror(rc));
    free(log);
    return -1;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      snprintf(why, len, "waiting for gnuplot: %s", strerror(errno));
      free(log);
      return -1;
    }
  int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    /* its first message says what went wrong */
    char msg[200] = "";
    FILE *fp = fopen(log, "r");
    if (fp) {
      if (!fgets(msg, sizeof msg, fp))
        msg[0] = '\0';
      fclose(fp);
    }
    msg[strcspn(msg, "\n")] = '\0';
    if (WIFEXITED(status))
      snprintf(why, len, "gnuplot failed (exit status %d%s%s)", WEXITSTATUS(status), msg[0] ? ": " : "", msg);
    else
      snprintf(why, len, "gnuplot was ended by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  free(log);
  return ok ? 0 : -1;
}

/* The terminal: pngcairo (antialiased) where gnuplot has it, else png (libgd); both in Debian's gnuplot-nox. */
static void script_terminal(FILE *fp, int width, int height)
{
  fprintf(fp, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
              "  set terminal pngcairo size %d,%d font 'sans,10' noenhanced\n"
              "} else {\n"
              "  set terminal png size %d,%d noenhanced\n"
              "}\n", width, height, width, height);
}

/* One image's three panels in a row, mm on the axes, one grey scale and its colour bar; the PNG goes to out. */
static void script_image(FILE *fp, const char *dir, const char *name, const char *title, const char *out,
                         const struct options *o, const struct run *r, const struct preview *pv)
{
  static const char *const axis_name[3] = {"x", "y", "z"}, *const panel_name[3] = {"sagittal", "coronal",
                                                                                   "transaxial"};
  const struct layout *l = &r->l;
  fprintf(fp, "reset\n");
  /* high enough for the tallest panel (up / across, in mm) in a third of the width; the margins are fractions */
  double tallest = 0.0;
  for (int p = 0; p < 3; p++) {
    const int u = p == 0 ? 1 : 0, w = p == 2 ? 1 : 2;
    tallest = fmax(tallest, (double)(o->dims[w] * l->vs[w]) / (double)(o->dims[u] * l->vs[u]));
  }
  script_terminal(fp, 1500, (int)fmin(1600.0, fmax(400.0, 365.0 * tallest / 0.76 + 40.0)));
  fprintf(fp, "set output '%s/%s'\n", dir, out);
  fprintf(fp, "set palette grey\nset cbrange [%.9g:%.9g]\nset cblabel 'activity (a.u.)'\n", (double)pv->window[0],
          (double)pv->window[1]);
  fprintf(fp, "set size ratio -1\nset tics out\nset key off\n");
  /* one colour bar for the three panels, at the right edge */
  fprintf(fp, "set colorbox user origin screen 0.91, screen 0.15 size screen 0.015, screen 0.68\n");
  fprintf(fp, "set multiplot layout 1,3 margins screen 0.05, 0.88, 0.1, 0.86 spacing screen 0.05 "
              "title \"%s\" font ',13'\n", title);
  for (int p = 2; p >= 0; p--) { /* transaxial, coronal, sagittal */
    const int fixed = p, u = fixed == 0 ? 1 : 0, w = fixed == 2 ? 1 : 2;
    fprintf(fp, "set title '%s, %s = %.1f mm (index %d)'\n", panel_name[p], axis_name[fixed],
            (double)(l->origin[fixed] + pv->slice[fixed] * l->vs[fixed]), pv->slice[fixed]);
    fprintf(fp, "set xlabel '%s (mm)'\nset ylabel '%s (mm)'\n", axis_name[u], axis_name[w]);
    /* the plot's edges at the outer edges of the voxels */
    fprintf(fp, "set xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n",
            (double)(l->origin[u] - 0.5f * l->vs[u]), (double)(l->origin[u] + (o->dims[u] - 0.5f) * l->vs[u]),
            (double)(l->origin[w] - 0.5f * l->vs[w]), (double)(l->origin[w] + (o->dims[w] - 0.5f) * l->vs[w]));
    fprintf(fp, "plot '%s/%s%d.f32' binary array=(%d,%d) format='%%float32' dx=%.9g dy=%.9g origin=(%.9g,%.9g) "
                "with image\n", dir, name, p, o->dims[u], o->dims[w], (double)l->vs[u], (double)l->vs[w],
            (double)l->origin[u], (double)l->origin[w]);
  }
  fprintf(fp, "unset multiplot\nunset output\n");
}

/* The sinogram: radial bins across, views up. */
static void script_sinogram(FILE *fp, const char *dir, const struct options *o, const struct preview *pv)
{
  fprintf(fp, "reset\n");
  script_terminal(fp, 900, 760);
  fprintf(fp, "set output '%s/sinogram_view0.png'\n", dir);
  fprintf(fp, "set palette grey\nset cbrange [%.9g:%.9g]\nset cblabel 'counts per bin%s'\n",
          (double)pv->sino_window[0], (double)pv->sino_window[1], o->tof ? ", TOF bins summed" : "");
  fprintf(fp, "set tics out\nset key off\n");
  char plane[32] = "";
  if (pv->plane >= 0)
    snprintf(plane, sizeof plane, " %d", pv->plane);
  fprintf(fp, "set title \"starproj-recon: sinogram of plane%s (segment 0, axial position %d of 0 .. %d), %d views "
              "x %d radial bins\" font ',12'\n", plane, pv->axial, pv->seg_planes - 1, pv->num_views, pv->num_radial);
  fprintf(fp, "set xlabel 'radial bin'\nset ylabel 'view'\n");
  fprintf(fp, "set xrange [-0.5:%g]\nset yrange [-0.5:%g]\n", pv->num_radial - 0.5, pv->num_views - 0.5);
  fprintf(fp, "plot '%s/sino.f32' binary array=(%d,%d) format='%%float32' with image\n", dir, pv->num_radial,
          pv->num_views);
  fprintf(fp, "unset output\n");
}

/* Draws recon.png, phantom.png (when simulated) and the sinogram with gnuplot in a temporary folder inside the
 * output folder (so that the finished files are renamed into place, never seen half written), which it removes.
 * Returns 0, or -1 with the reason in why. */
static int draw_with_gnuplot(const struct options *o, const struct run *r, const struct preview *pv, char *why,
                             size_t len)
{
  /* the script names files in quotes: a name that could end them is not passed at all */
  if (strpbrk(o->output, "'\"\\\n")) {
    snprintf(why, len, "the output folder's name has a quote, backslash or newline, which a gnuplot script "
             "cannot name safely");
    return -1;
  }
  const int *d = o->dims;
  size_t most = (size_t)d[0] * d[1];
  most = (size_t)d[0] * d[2] > most ? (size_t)d[0] * d[2] : most;
  most = (size_t)d[1] * d[2] > most ? (size_t)d[1] * d[2] : most;
  float *v = host_alloc(most * sizeof *v);
  char *dir = path_in(o->output, ".starproj-recon-preview-XXXXXX");
  if (!mkdtemp(dir)) {
    snprintf(why, len, "cannot make a temporary folder in %s: %s", o->output, strerror(errno));
    free(dir);
    free(v);
    return -1;
  }
  static const char *const names[3] = {"recon", "phantom", "sinogram_view0"};
  int fail = 0;
  for (int img = 0; img < 2 && !fail; img++) {
    const float *x = img ? r->phantom : r->x;
    for (int a = 0; x && a < 3 && !fail; a++) {
      char name[32];
      snprintf(name, sizeof name, "%s%d.f32", names[img], a);
      fail = write_floats(dir, name, v, panel_values(x, d, a, pv->slice[a], v));
    }
  }
  free(v);
  if (!fail && pv->sino)
    fail = write_floats(dir, "sino.f32", pv->sino, (size_t)pv->num_views * pv->num_radial);
  char *script = path_in(dir, "previews.gp");
  FILE *fp = fail ? NULL : fopen(script, "w");
  if (fp) {
    char title[256];
    snprintf(title, sizeof title, "starproj-recon: %s reconstruction, %d iteration%s x %d subset%s, %s scanner",
             o->listmode || o->input_lm ? "LM-OSEM" : "OSEM", o->iterations, o->iterations == 1 ? "" : "s",
             o->subsets, o->subsets == 1 ? "" : "s", o->scanner);
    script_image(fp, dir, names[0], title, "recon.png", o, r, pv);
    if (r->phantom) {
      snprintf(title, sizeof title, "starproj-recon: the simulated phantom (on the grey scale of recon.png)");
      script_image(fp, dir, names[1], title, "phantom.png", o, r, pv);
    }
    if (pv->sino)
      script_sinogram(fp, dir, o, pv);
    fail = fclose(fp) != 0;
  }
  if (fail || !fp)
    snprintf(why, len, "cannot write the data for gnuplot in %s: %s", dir, strerror(errno));
  else
    fail = run_gnuplot(dir, script, why, len);
  /* the finished PNGs into place */
  for (int k = 0; k < 3 && !fail; k++) {
    if ((k == 1 && !r->phantom) || (k == 2 && !pv->sino))
      continue;
    char png[40];
    snprintf(png, sizeof png, "%s.png", names[k]);
    char *from = path_in(dir, png), *to = path_in(o->output, png);
    if (rename(from, to) != 0) {
      snprintf(why, len, "cannot rename %s to %s: %s", from, to, strerror(errno));
      fail = 1;
    }
    free(from);
    free(to);
  }
  remove_folder(dir);
  free(script);
  free(dir);
  return fail ? -1 : 0;
}

/* The image as NIfTI, the phantom likewise, and their previews with the sinogram's, named on one line. */
static void write_outputs(const struct options *o, const struct run *r)
{
  const struct layout *l = &r->l;
  char *p;
  TRY(sproj_nifti_write(p = path_in(o->output, "recon.nii"), r->x, o->dims, l->vs, l->origin, "starproj-recon OSEM"));
  note_written(p);
  SAY("wrote %s", p);
  free(p);
  if (r->phantom) {
    TRY(sproj_nifti_write(p = path_in(o->output, "phantom.nii"), r->phantom, o->dims, l->vs, l->origin,
                          "starproj-recon phantom"));
    note_written(p);
    SAY(", %s", p);
    free(p);
  }
  struct preview pv;
  preview_slices(o, r, pv.slice);
  preview_window(o, r, &pv);
  preview_sinogram(r, &pv);
  char why[400];
  int drawn = draw_with_gnuplot(o, r, &pv, why, sizeof why) == 0;
  if (!drawn) {
    /* the plain previews: the same slices, window and sinogram, without text */
    TRY(sproj_png_write_image_slices(p = path_in(o->output, "recon.png"), r->x, o->dims, l->vs, pv.slice,
                                     pv.window));
    free(p);
    if (r->phantom) {
      TRY(sproj_png_write_image_slices(p = path_in(o->output, "phantom.png"), r->phantom, o->dims, l->vs,
                                       pv.slice, pv.window));
      free(p);
    }
    if (pv.sino) {
      /* the plane's sinogram as a 3-D array of one plane: views down the rows, radial bins across */
      const int64_t shape[3] = {pv.num_views, 1, pv.num_radial};
      TRY(sproj_png_write_sino(p = path_in(o->output, "sinogram_view0.png"), pv.sino, 3, shape, 1, 2, 0, 0,
                               pv.sino_window));
      free(p);
    }
  }
  static const char *const pngs[3] = {"recon.png", "phantom.png", "sinogram_view0.png"};
  for (int k = 0; k < 3; k++) {
    if ((k == 1 && !r->phantom) || (k == 2 && !pv.sino))
      continue;
    note_written(p = path_in(o->output, pngs[k]));
    SAY(", %s", p);
    free(p);
  }
  SAY("\n");
  if (!drawn)
    SAY("previews: %s; written with libpng instead, without labels or scale (grey 0 .. %g)\n", why,
        (double)pv.window[1]);
  free(pv.sino);
}

/* How close: relative L2 error inside the phantom's cylinder (where it is non-zero), and the total activity. */
static void report_error(const struct run *r)
{
  double num = 0, den = 0, sx = 0, sp = 0;
  const float *x = r->x, *phantom = r->phantom;
  for (int64_t v = 0; v < r->l.nvox; v++) {
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

static void finish(struct run *r, struct inputs *in)
{
  TRY(sproj_recon_destroy(r->recon));
  TRY(sproj_model_destroy(r->model));
  TRY(sproj_model_destroy(r->sens_model));
  /* simulated counts stay where they were made: bringing a TOF sinogram home would cost seconds for nothing */
  if (r->data)
    TRY(r->counts_on_devices ? sproj_proj_discard(r->data) : sproj_proj_unregister(r->data));
  TRY(sproj_proj_unregister(r->lor_sums_proj));
  if (r->events) {
    TRY(sproj_chunks_destroy(r->ev_chunks));
    TRY(sproj_lors_unregister(r->events));
  }
  TRY(sproj_image_unregister(r->ximg));
  TRY(sproj_tof_unregister(r->tof));
  TRY(sproj_chunks_destroy(r->views));
  TRY(sproj_lors_unregister(r->lors));
  TRY(sproj_scanner_destroy(r->l.scanner));
  TRY(sproj_shutdown());
  /* what the listmode sampler and the file readers returned (the pinned buffers go with the process) */
  if (r->ev_lor != in->lor)
    sproj_free(r->ev_lor);
  if (r->ev_bin != in->bins)
    sproj_free(r->ev_bin);
  /* the events in chunk order (plain memory, NULL without listmode) */
  free(r->ev_xs);
  free(r->ev_xe);
  free(r->ev_mult);
  free(r->ev_add);
  free(r->ev_bin_chunked);
  free_inputs(in);
}

/* ---- main ----------------------------------------------------------------------------------------------------- */
int main(int argc, char **argv)
{
  /* whole lines as they happen, also into a pipe (tee, a batch system's log) */
  setvbuf(stdout, NULL, _IOLBF, 0);
  atexit(remove_written);
  struct options o;
  int rc = parse_options(argc, argv, &o);
  if (rc)
    return rc;
  quiet = o.quiet;
  struct inputs in;
  struct run r;
  memset(&r, 0, sizeof r);
  if (!(rc = read_inputs(&o, &in)) && !(rc = pick_scanner(&o, &in))) {
    resolve_defaults(&o);
    make_layout(&o, &r.l);
    if (!(rc = validate_run(&o, &r.l, in.lm_info.num_events)) && !(rc = check_inputs(&o, &in, &r.l)))
      rc = make_output_folder(o.output);
  }
  if (rc) {
    sproj_scanner_destroy(r.l.scanner);
    free_inputs(&in);
    return rc;
  }

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);
  progress_start("starproj-recon", o.quiet);
  progress_phase("starting StarPU");
  start_starpu(&o, &r.l);
  progress_phase("geometry");
  setup_lors(&o, &r);
  progress_phase("estimate");
  estimate(&o, &r, in.lm_info.num_events);
  if (!o.input && !o.input_lm) {
    progress_phase("simulation");
    simulate(&o, &r);
  } else {
    use_inputs(&o, &in, &r);
  }
  if (o.save_data && !o.input && !o.input_lm) {
    progress_phase("saving the data");
    save_data(&o, &r);
  }
  reconstruct(&o, &r); /* its phases: upload, sensitivities, iterations */
  progress_phase("writing");
  write_outputs(&o, &r);
  written.finished = 1; /* the results are complete and named: a failure from here on leaves them */
  progress_end();
  if (r.phantom)
    report_error(&r);
  progress_phase("shutdown");
  finish(&r, &in);
  progress_end();
  progress_summary();
  progress_stop();
  return 0;
}
