/* SPDX-License-Identifier: Apache-2.0 */
/* bench_cpu.c: the projectors on CPU workers only, on the first views of the benchmark sinogram (Vision 600-like
 * scanner, 215x215x71 image): non-TOF forward and back, optionally TOF sinogram and TOF listmode. Prints a table
 * with checksums (and can write the forward values) so that two builds can be compared bit for bit. With
 * --parallelproj LIB, libparallelproj's OpenMP build (loaded from LIB) projects the same data in the same process,
 * timed before starproj starts and again after it shuts down, and each job's values are compared with its.
 *
 * usage: bench_cpu [--views N] [--repeats N] [--warmups N] [--tof] [--events N] [--dump PREFIX] [--small]
 *                  [--parallelproj LIB] */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"
#include "parallelproj_lib.h"
#include "starproj_parallelproj.h"

enum kind { NONTOF, TOF_SINO, TOF_LM };
#define MAX_JOBS 6
#define MAX_REPEATS 64

struct job {
  const char *name;
  enum kind kind;
  int back;
  sproj_proj *proj;
  float *values;
  int64_t nvalues;
  int64_t lors;
  double t_sproj;
  double t_pp[2];   /* libparallelproj before starproj started and after it shut down */
  float *pp_out;    /* libparallelproj's values (forward) or image (back) */
  double pp_rel;    /* relative L2 of starproj's against them */
};

/* the data both libraries project */
static struct {
  int n[3];
  float vs[3], origin[3];
  float *xs, *xe, *exs, *exe, *image, *sino, *fwd, *lmv;
  int16_t *bins;
  int64_t nlors, nevents;
  struct sproj_tof_params par;
} d;

static sproj_image *g_img, *g_back;
static float *g_backdata;
static size_t g_nvox;
static sproj_tof *g_tof;

static double run_once(const struct job *j)
{
  sproj_image *img = j->back ? g_back : g_img;
  double t0 = now();
  if (j->kind == NONTOF)
    CHECK(j->back ? sproj_back(img, j->proj, NULL, SPROJ_ALL_CHUNKS) : sproj_fwd(img, j->proj, NULL, SPROJ_ALL_CHUNKS));
  else if (j->kind == TOF_SINO)
    CHECK(j->back ? sproj_back_tof_sino(img, j->proj, NULL, SPROJ_ALL_CHUNKS, g_tof)
                  : sproj_fwd_tof_sino(img, j->proj, NULL, SPROJ_ALL_CHUNKS, g_tof));
  else
    CHECK(j->back ? sproj_back_tof_lm(img, j->proj, NULL, SPROJ_ALL_CHUNKS, g_tof)
                  : sproj_fwd_tof_lm(img, j->proj, NULL, SPROJ_ALL_CHUNKS, g_tof));
  CHECK(sproj_wait_all());
  if (j->back)
    CHECK(sproj_image_sync(img, SPROJ_SYNC_READ));
  else
    CHECK(sproj_proj_sync(j->proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
  return now() - t0;
}

/* One libparallelproj call of job j into out (back: out is zeroed first, it adds); returns its time. */
static double pp_once(const struct pp_lib *pp, const struct job *j, float *out)
{
  const float sigma = d.par.sigma, offset = d.par.center_offset;
  const short nb = (short)d.par.num_bins;
  if (j->back)
    memset(out, 0, g_nvox * sizeof(float));
  double t0 = now();
  if (j->kind == NONTOF && !j->back)
    pp->fwd(d.xs, d.xe, d.image, d.origin, d.vs, out, (size_t)d.nlors, d.n, 0, PP_THREADS_PER_BLOCK);
  else if (j->kind == NONTOF)
    pp->back(d.xs, d.xe, out, d.origin, d.vs, d.fwd, (size_t)d.nlors, d.n, 0, PP_THREADS_PER_BLOCK);
  else if (j->kind == TOF_SINO && !j->back)
    pp->tof_sino_fwd(d.xs, d.xe, d.image, d.origin, d.vs, out, (size_t)d.nlors, d.n, d.par.bin_width, &sigma, &offset,
                     d.par.num_sigmas, nb, 0, 0, 0, PP_THREADS_PER_BLOCK);
  else if (j->kind == TOF_SINO)
    pp->tof_sino_back(d.xs, d.xe, out, d.origin, d.vs, d.sino, (size_t)d.nlors, d.n, d.par.bin_width, &sigma, &offset,
                      d.par.num_sigmas, nb, 0, 0, 0, PP_THREADS_PER_BLOCK);
  else if (!j->back)
    pp->tof_lm_fwd(d.exs, d.exe, d.image, d.origin, d.vs, out, (size_t)d.nevents, d.n, d.par.bin_width, &sigma,
                   &offset, d.par.num_sigmas, d.bins, nb, 0, 0, 0, PP_THREADS_PER_BLOCK);
  else
    pp->tof_lm_back(d.exs, d.exe, out, d.origin, d.vs, d.lmv, (size_t)d.nevents, d.n, d.par.bin_width, &sigma, &offset,
                    d.par.num_sigmas, d.bins, nb, 0, 0, 0, PP_THREADS_PER_BLOCK);
  return now() - t0;
}

/* Times every job with libparallelproj (median of repeats after warmups) into t_pp[which]; keeps its last values.
 * A back job projects what starproj's forward job computed (the values its checksum row reports), or, before
 * starproj ran, libparallelproj's own forward values: the back projections are compared after the second round. */
static void pp_round(const struct pp_lib *pp, struct job *jobs, int njobs, int warmups, int repeats, int which)
{
  for (int i = 0; i < njobs; i++) {
    struct job *j = &jobs[i];
    double t[MAX_REPEATS];
    for (int r = 0; r < warmups; r++)
      pp_once(pp, j, j->pp_out);
    for (int r = 0; r < repeats; r++)
      t[r] = pp_once(pp, j, j->pp_out);
    j->t_pp[which] = median(t, repeats);
    /* the forward values libparallelproj computed are what its back job projects in this round */
    if (!j->back && which == 0)
      memcpy(j->values, j->pp_out, j->nvalues * sizeof(float));
    fprintf(stderr, "# parallelproj %s %s: %.4f s\n", which ? "after" : "before", j->name, j->t_pp[which]);
  }
}

/* FNV-1a over the bits of the values: equal hashes mean (almost surely) bit-identical results */
static uint64_t hash_bits(const float *v, int64_t n)
{
  uint64_t h = FNV1A_OFFSET;
  const unsigned char *b = (const unsigned char *)v;
  for (int64_t i = 0; i < n * (int64_t)sizeof(float); i++)
    h = (h ^ b[i]) * FNV1A_PRIME;
  return h;
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

/* One back projection into a zeroed image, for the checksums (timed repeats just keep adding). */
static void back_checksum(const struct job *j, double *sum, uint64_t *hash)
{
  CHECK(sproj_image_sync(g_back, SPROJ_SYNC_WRITE));
  memset(g_backdata, 0, g_nvox * sizeof(float));
  run_once(j);
  CHECK(sproj_image_sync(g_back, SPROJ_SYNC_READ));
  double s = 0.0;
  for (size_t v = 0; v < g_nvox; v++)
    s += g_backdata[v];
  *sum = s;
  *hash = hash_bits(g_backdata, (int64_t)g_nvox);
}

/* starproj's listmode forward values (back: the back projection of values, into g_back) in libparallelproj's
 * convention (sproj_tof_set_convention), to compare with its own: starproj's listmode convention differs from it
 * (starproj_parallelproj.h). */
static void lm_pp_convention(float *values, int back)
{
  sproj_lors *ev;
  sproj_proj *proj;
  sproj_tof *tof;
  CHECK(sproj_lors_register_events_convention(&ev, d.exs, d.exe, d.bins, d.nevents, SPROJ_TOF_CONVENTION_PARALLELPROJ));
  CHECK(sproj_proj_register(&proj, values, ev));
  CHECK(sproj_tof_register(&tof, &d.par, NULL, NULL, NULL));
  CHECK(sproj_tof_set_convention(tof, SPROJ_TOF_CONVENTION_PARALLELPROJ));
  if (back) {
    CHECK(sproj_image_sync(g_back, SPROJ_SYNC_WRITE));
    memset(g_backdata, 0, g_nvox * sizeof(float));
    CHECK(sproj_back_tof_lm(g_back, proj, NULL, SPROJ_ALL_CHUNKS, tof));
    CHECK(sproj_image_sync(g_back, SPROJ_SYNC_READ));
  } else {
    CHECK(sproj_fwd_tof_lm(g_img, proj, NULL, SPROJ_ALL_CHUNKS, tof));
    CHECK(sproj_proj_sync(proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
  }
  CHECK(sproj_proj_unregister(proj));
  CHECK(sproj_tof_unregister(tof));
  CHECK(sproj_lors_unregister(ev));
}

int main(int argc, char **argv)
{
  int nviews = 8, repeats = 3, warmups = 1, tof = 0, small = 0;
  int64_t nevents = 0;
  const char *dump = NULL, *pp_path = NULL;
  static const struct option longopts[] = {
    {"views", required_argument, 0, 'V'},   {"repeats", required_argument, 0, 'r'},
    {"warmups", required_argument, 0, 'w'}, {"tof", no_argument, 0, 't'},
    {"events", required_argument, 0, 'e'},  {"dump", required_argument, 0, 'd'},
    {"small", no_argument, 0, 'S'},         {"parallelproj", required_argument, 0, 'p'},
    {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
    switch (c) {
    case 'V': nviews = (int)option_number("bench_cpu", "--views", optarg, 1, BENCH_VIEWS); break;
    case 'r': repeats = (int)option_number("bench_cpu", "--repeats", optarg, 1, MAX_REPEATS); break;
    case 'w': warmups = (int)option_number("bench_cpu", "--warmups", optarg, 0, MAX_REPEATS); break;
    case 't': tof = 1; break;
    case 'e': nevents = option_number("bench_cpu", "--events", optarg, 0, 200000000); break;
    case 'd': dump = optarg; break;
    case 'S': small = 1; break;
    case 'p': pp_path = optarg; break;
    case 'h':
      printf("usage: bench_cpu [--views N] [--repeats N] [--warmups N] [--tof] [--events N] [--dump PREFIX] [--small]\n"
             "                 [--parallelproj LIB]\n"
             "  times the projectors on CPU workers only (STARPU_NCPU sets their number) on views 0..N-1 (default\n"
             "  8) of the benchmark sinogram: non-TOF forward and back; --tof: also TOF-sinogram forward and back\n"
             "  (29 bins); --events N: also TOF listmode of N random events. --dump PREFIX: writes the forward\n"
             "  values to PREFIX.<job>.f32 for bit comparisons; --small: the small scanner; --parallelproj LIB:\n"
             "  libparallelproj's OpenMP build (the shared library LIB, OMP_NUM_THREADS threads) on the same data in\n"
             "  the same process, before starproj starts and after it shuts down, and its values compared\n");
      return 0;
    default: return option_error("bench_cpu", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return option_error("bench_cpu", argv[optind]);
  setenv("STARPU_SILENT", "1", 0);
  struct pp_lib pp = {0};
  if (pp_path && pp_lib_open(&pp, pp_path, "bench_cpu"))
    return 1;
  if (pp.handle && pp.cuda_enabled()) {
    fprintf(stderr, "bench_cpu: %s is libparallelproj's CUDA build; --parallelproj needs its OpenMP build\n", pp_path);
    return 1;
  }

  /* the data, made before starproj starts (the scanner's LORs need no runtime) */
  struct sproj_scanner_params sp;
  benchmark_geometry(small, &sp, d.n, d.vs, d.origin);
  d.par = benchmark_tof();
  g_nvox = (size_t)d.n[0] * d.n[1] * d.n[2];
  sproj_scanner *scn;
  struct sproj_sinogram_info info;
  CHECK(sproj_scanner_create(&scn, &sp));
  CHECK(sproj_scanner_info(scn, &info));
  if (nviews > info.num_views)
    nviews = info.num_views;
  d.nlors = nviews * info.lors_per_view;
  d.nevents = nevents;
  int *views = malloc(nviews * sizeof *views);
  d.xs = malloc(3 * d.nlors * sizeof(float));
  d.xe = malloc(3 * d.nlors * sizeof(float));
  d.image = malloc(g_nvox * sizeof(float));
  d.fwd = malloc(d.nlors * sizeof(float));
  d.sino = tof ? malloc(d.nlors * d.par.num_bins * sizeof(float)) : NULL;
  d.exs = malloc((3 * nevents + 1) * sizeof(float));
  d.exe = malloc((3 * nevents + 1) * sizeof(float));
  d.lmv = malloc((nevents + 1) * sizeof(float));
  d.bins = malloc((nevents + 1) * sizeof(int16_t));
  g_backdata = malloc(g_nvox * sizeof(float));
  if (!views || !d.xs || !d.xe || !d.image || !d.fwd || (tof && !d.sino) || !d.exs || !d.exe || !d.lmv || !d.bins ||
      !g_backdata) {
    fprintf(stderr, "bench_cpu: out of memory\n");
    return 1;
  }
  for (int v = 0; v < nviews; v++)
    views[v] = v;
  CHECK(sproj_scanner_view_lors(scn, views, nviews, d.xs, d.xe, 0));
  if (nevents)
    random_events(scn, nevents, BENCH_EVENTS_SEED, d.exs, d.exe);
  srand(FIXED_SEED);
  for (size_t v = 0; v < g_nvox; v++) {
    d.image[v] = (float)rand() / RAND_MAX;
    g_backdata[v] = 0.0f;
  }
  for (int64_t i = 0; i < nevents; i++)
    d.bins[i] = (int16_t)(rand() % d.par.num_bins);

  struct job jobs[MAX_JOBS];
  int njobs = 0;
  jobs[njobs++] = (struct job){.name = "fwd", .kind = NONTOF, .values = d.fwd, .nvalues = d.nlors, .lors = d.nlors};
  jobs[njobs++] =
    (struct job){.name = "back", .kind = NONTOF, .back = 1, .values = d.fwd, .nvalues = d.nlors, .lors = d.nlors};
  if (tof) {
    int64_t nv = d.nlors * d.par.num_bins;
    jobs[njobs++] =
      (struct job){.name = "tof_sino_fwd", .kind = TOF_SINO, .values = d.sino, .nvalues = nv, .lors = d.nlors};
    jobs[njobs++] = (struct job){.name = "tof_sino_back", .kind = TOF_SINO, .back = 1, .values = d.sino,
                                 .nvalues = nv, .lors = d.nlors};
  }
  if (nevents) {
    jobs[njobs++] =
      (struct job){.name = "tof_lm_fwd", .kind = TOF_LM, .values = d.lmv, .nvalues = nevents, .lors = nevents};
    jobs[njobs++] = (struct job){.name = "tof_lm_back", .kind = TOF_LM, .back = 1, .values = d.lmv,
                                 .nvalues = nevents, .lors = nevents};
  }
  if (pp.handle) {
    printf("# libparallelproj %s (OpenMP build, OMP_NUM_THREADS=%s): the same jobs before and after starproj\n",
           pp.version(), getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS") : "its default");
    for (int i = 0; i < njobs; i++)
      if (!(jobs[i].pp_out = malloc((jobs[i].back ? (int64_t)g_nvox : jobs[i].nvalues) * sizeof(float)))) {
        fprintf(stderr, "bench_cpu: out of memory\n");
        return 1;
      }
    pp_round(&pp, jobs, njobs, warmups, repeats, 0);
  }

  struct sproj_config cfg;
  sproj_config_init(&cfg);
  CHECK(sproj_init(&cfg));
  CHECK(sproj_set_devices(SPROJ_DEVICE_CPU));
  printf("# starproj %d.%d.%d bench_cpu: %d CPU workers, projections on CPU workers only, task_lors %lld\n",
         SPROJ_VERSION_MAJOR, SPROJ_VERSION_MINOR, SPROJ_VERSION_PATCH, sproj_num_cpu_workers(),
         (long long)sproj_get_task_lors());
  printf("# views 0-%d: %lld LORs; image %dx%dx%d of %.2f mm; %lld listmode events\n", nviews - 1,
         (long long)d.nlors, d.n[0], d.n[1], d.n[2], d.vs[0], (long long)nevents);

  sproj_lors *lors, *events = NULL;
  sproj_proj *p_fwd, *p_sino = NULL, *p_lm = NULL;
  CHECK(sproj_image_register(&g_img, d.image, d.n, d.vs, d.origin));
  CHECK(sproj_image_register(&g_back, g_backdata, d.n, d.vs, d.origin));
  CHECK(sproj_lors_register(&lors, d.xs, d.xe, d.nlors));
  CHECK(sproj_proj_register(&p_fwd, d.fwd, lors));
  CHECK(sproj_tof_register(&g_tof, &d.par, NULL, NULL, NULL));
  if (tof)
    CHECK(sproj_proj_register_tof(&p_sino, d.sino, lors, d.par.num_bins));
  if (nevents) {
    CHECK(sproj_lors_register_events(&events, d.exs, d.exe, d.bins, nevents));
    CHECK(sproj_proj_register(&p_lm, d.lmv, events));
  }
  for (int i = 0; i < njobs; i++)
    jobs[i].proj = jobs[i].kind == NONTOF ? p_fwd : jobs[i].kind == TOF_SINO ? p_sino : p_lm;

  printf("| job | LORs | median s | min s | ns per LOR x worker | checksum (sum) | bits (FNV-1a) |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
  for (int i = 0; i < njobs; i++) {
    struct job *j = &jobs[i];
    double sum = 0.0, t[MAX_REPEATS];
    uint64_t hash;
    /* a back job projects the values its forward job left (the job before it) */
    if (j->back) {
      back_checksum(j, &sum, &hash);
    } else {
      run_once(j);
      for (int64_t k = 0; k < j->nvalues; k++)
        sum += j->values[k];
      hash = hash_bits(j->values, j->nvalues);
      if (pp.handle && j->kind != TOF_LM)
        j->pp_rel = rel_l2(j->values, j->pp_out, j->nvalues);
      if (dump) {
        char path[4096];
        snprintf(path, sizeof path, "%s.%s.f32", dump, j->name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(j->values, sizeof(float), j->nvalues, f) != (size_t)j->nvalues || fclose(f)) {
          fprintf(stderr, "bench_cpu: cannot write %s\n", path);
          return 1;
        }
      }
    }
    for (int r = 0; r < warmups; r++)
      run_once(j);
    for (int r = 0; r < repeats; r++)
      t[r] = run_once(j);
    double best = t[0];
    for (int r = 1; r < repeats; r++)
      best = t[r] < best ? t[r] : best;
    j->t_sproj = median(t, repeats);
    printf("| %s | %lld | %.4f | %.4f | %.1f | %.9e | %016llx |\n", j->name, (long long)j->lors, j->t_sproj, best,
           1e9 * j->t_sproj * sproj_num_cpu_workers() / j->lors, sum, (unsigned long long)hash);
    fflush(stdout);
  }
  /* starproj's back projections of the values starproj's forward jobs left, for libparallelproj's second round, and
   * the listmode values in libparallelproj's convention, which its own are compared with */
  float *sproj_back_images[MAX_JOBS] = {0}, *lm_pp = NULL;
  if (pp.handle)
    for (int i = 0; i < njobs; i++)
      if (jobs[i].back && (sproj_back_images[i] = malloc(g_nvox * sizeof(float)))) {
        double s;
        uint64_t h;
        if (jobs[i].kind == TOF_LM)
          lm_pp_convention(d.lmv, 1);
        else
          back_checksum(&jobs[i], &s, &h);
        memcpy(sproj_back_images[i], g_backdata, g_nvox * sizeof(float));
      }
  if (pp.handle && nevents && (lm_pp = malloc(nevents * sizeof(float))))
    lm_pp_convention(lm_pp, 0);

  if (p_lm)
    CHECK(sproj_proj_unregister(p_lm));
  if (events)
    CHECK(sproj_lors_unregister(events));
  if (p_sino)
    CHECK(sproj_proj_unregister(p_sino));
  CHECK(sproj_tof_unregister(g_tof));
  CHECK(sproj_proj_unregister(p_fwd));
  CHECK(sproj_lors_unregister(lors));
  CHECK(sproj_image_unregister(g_back));
  CHECK(sproj_image_unregister(g_img));
  CHECK(sproj_shutdown());

  if (pp.handle) {
    /* the forward values starproj left are what both back projections now project */
    pp_round(&pp, jobs, njobs, warmups, repeats, 1);
    for (int i = 0; i < njobs; i++) {
      struct job *j = &jobs[i];
      if (j->back && sproj_back_images[i])
        j->pp_rel = rel_l2(sproj_back_images[i], j->pp_out, (int64_t)g_nvox);
      else if (j->kind == TOF_LM && lm_pp)
        j->pp_rel = rel_l2(lm_pp, j->pp_out, j->nvalues);
    }
    printf("\n| job | LORs | starproj s | libparallelproj s, before / after | ratio | values vs libparallelproj "
           "(relative L2) |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < njobs; i++) {
      const struct job *j = &jobs[i];
      double ref = j->t_pp[0] < j->t_pp[1] ? j->t_pp[0] : j->t_pp[1];
      printf("| %s | %lld | %.4f | %.4f / %.4f | %.2fx | %.3g |\n", j->name, (long long)j->lors, j->t_sproj,
             j->t_pp[0], j->t_pp[1], ref / j->t_sproj, j->pp_rel);
    }
    printf("# ratio: libparallelproj's faster round over starproj's median; listmode values compared in its "
           "convention (sproj_tof_set_convention), starproj timed in its own\n");
    for (int i = 0; i < njobs; i++) {
      free(jobs[i].pp_out);
      free(sproj_back_images[i]);
    }
    free(lm_pp);
    /* the library stays loaded: its OpenMP runtime's threads outlive the calls, and unloading it under them crashes */
    fflush(stdout);
  }
  CHECK(sproj_scanner_destroy(scn));
  free(views);
  free(d.xs);
  free(d.xe);
  free(d.image);
  free(d.fwd);
  free(d.sino);
  free(d.exs);
  free(d.exe);
  free(d.lmv);
  free(d.bins);
  free(g_backdata);
  return 0;
}
