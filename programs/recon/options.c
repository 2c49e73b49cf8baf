/* SPDX-License-Identifier: Apache-2.0 */
/* options.c: starproj-recon's options: the usage text, each option's value checked as it is read, the options that
 * go together or exclude each other, and the defaults that depend on the scanner. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include "recon.h"

/* --ncpu and --ngpu at most (as starproj's own limits), and the small scanner's default subsets */
#define MAX_CPU_WORKERS 4096
#define MAX_GPUS 64
#define SMALL_SUBSETS 8

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
  "                        (--counts, --background, --seed, --noise-free and --save-data are the simulation's:\n"
  "                        refused with --input or --input-listmode)\n"
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
  "  --verbose             StarPU's own messages, and every step of a phase with its time and the host memory\n"
  "                        held at its end; --quiet: only errors\n"
  "  --help                this text\n"
  "\n"
  "Exit status: 0 on success, 2 for bad options, 1 when reading, computing or writing fails.\n";

/* "starproj-recon: " and the message on stderr, then tail. */
static void say_failure(const char *tail, const char *fmt, va_list ap)
{
  fprintf(stderr, "starproj-recon: ");
  vfprintf(stderr, fmt, ap);
  fputs(tail, stderr);
}

int fail_usage(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  say_failure("\n(see starproj-recon --help)\n", fmt, ap);
  va_end(ap);
  return 2;
}

int fail_input(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  say_failure("\n", fmt, ap);
  va_end(ap);
  return 1;
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
    if (parse_triple(arg, 1, MAX_IMAGE_DIM, t) || t[0] != floor(t[0]) || t[1] != floor(t[1]) || t[2] != floor(t[2]))
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
    if (parse_long(arg, 0, c == O_NCPU ? MAX_CPU_WORKERS : MAX_GPUS, &l))
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

/* The options that shape a simulation: with data read from files they would be ignored, so they are refused (given:
 * given[c - O_SCANNER] for each option code c on the command line). 0, or 2 after a message naming them. */
static int check_simulation_only(const struct options *o, const unsigned char *given)
{
  static const int simulation_only[] = {O_COUNTS, O_BACKGROUND, O_SEED, O_NOISE_FREE, O_SAVE_DATA};
  if (!o->input && !o->input_lm)
    return 0;
  if (o->input && given[O_LM - O_SCANNER])
    return fail_usage("--listmode goes with a simulation or --input-listmode; --input is a sinogram");
  const char *names[sizeof simulation_only / sizeof *simulation_only];
  int found = 0;
  for (size_t i = 0; i < sizeof simulation_only / sizeof *simulation_only; i++)
    if (given[simulation_only[i] - O_SCANNER])
      names[found++] = option_name(simulation_only[i]);
  if (!found)
    return 0;
  char list[160] = "";
  for (int k = 0; k < found; k++) {
    size_t at = strlen(list);
    snprintf(list + at, sizeof list - at, "%s--%s", k == 0 ? "" : k == found - 1 ? " and " : ", ", names[k]);
  }
  return fail_usage("%s %s to the simulation only, not to the data of %s", list, found > 1 ? "apply" : "applies",
                    o->input ? "--input" : "--input-listmode");
}

/* Options that go together or exclude each other. */
static int check_combinations(struct options *o, const unsigned char *given)
{
  if (o->input && o->input_lm)
    return fail_usage("--input and --input-listmode exclude each other");
  if (check_simulation_only(o, given))
    return 2;
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

int parse_options(int argc, char **argv, struct options *o)
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
  unsigned char given[O_HELP - O_SCANNER + 1] = {0};
  /* the leading ':' makes getopt_long return ':' for a missing value, told apart from an unknown option */
  while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (c == ':')
      return fail_usage("--%s needs a value", option_name(optopt));
    if (c == '?')
      return fail_usage("unknown option '%s'", argv[optind - 1]);
    given[c - O_SCANNER] = 1;
    int rc = set_data_option(o, c, optarg);
    if (rc < 0)
      rc = set_run_option(o, c, optarg);
    if (rc)
      return rc < 0 ? fail_usage("unknown option '%s'", argv[optind - 1]) : rc;
  }
  if (optind < argc)
    return fail_usage("unexpected argument '%s'", argv[optind]);
  return check_combinations(o, given);
}

/* The defaults that depend on the scanner, once it is known (it may come from an input header). */
void resolve_defaults(struct options *o)
{
  int small = strcmp(o->scanner, "small") == 0;
  if (!o->dims[0]) {
    const int d_small[3] = {SMALL_IMAGE_XY, SMALL_IMAGE_XY, SMALL_IMAGE_Z},
              d_big[3] = {BENCH_IMAGE_XY, BENCH_IMAGE_XY, BENCH_IMAGE_Z};
    memcpy(o->dims, small ? d_small : d_big, sizeof o->dims);
  }
  if (o->voxel_size[0] < 0)
    for (int k = 0; k < 3; k++)
      o->voxel_size[k] = small ? SMALL_VOXEL_MM : BENCH_VOXEL_MM;
  if (o->counts < 0) /* listmode: one event per count, so fewer by default */
    o->counts = small ? (o->listmode ? 2e6 : 2e7) : (o->listmode ? 2e8 : 2e9);
  if (!o->subsets)
    o->subsets = small ? SMALL_SUBSETS : BENCH_SUBSETS;
}
