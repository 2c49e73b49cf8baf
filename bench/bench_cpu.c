/* SPDX-License-Identifier: Apache-2.0 */
/* bench_cpu.c: the projectors on CPU workers only, on the first views of the benchmark sinogram (Vision 600-like
 * scanner, 215x215x71 image): non-TOF forward and back, optionally TOF sinogram and TOF listmode. Prints a table
 * with checksums (and can write the forward values) so that two builds can be compared bit for bit.
 *
 * usage: bench_cpu [--views N] [--repeats N] [--warmups N] [--tof] [--events N] [--dump PREFIX] [--small] */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

enum kind { NONTOF, TOF_SINO, TOF_LM };

struct job {
  const char *name;
  enum kind kind;
  int back;
  sproj_proj *proj;
  float *values;
  int64_t nvalues;
  int64_t lors;
};

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

/* FNV-1a over the bits of the values: equal hashes mean (almost surely) bit-identical results */
static uint64_t hash_bits(const float *v, int64_t n)
{
  uint64_t h = FNV1A_OFFSET;
  const unsigned char *b = (const unsigned char *)v;
  for (int64_t i = 0; i < n * (int64_t)sizeof(float); i++)
    h = (h ^ b[i]) * FNV1A_PRIME;
  return h;
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

int main(int argc, char **argv)
{
  int nviews = 8, repeats = 3, warmups = 1, tof = 0, small = 0;
  int64_t nevents = 0;
  const char *dump = NULL;
  static const struct option longopts[] = {
    {"views", required_argument, 0, 'V'},   {"repeats", required_argument, 0, 'r'},
    {"warmups", required_argument, 0, 'w'}, {"tof", no_argument, 0, 't'},
    {"events", required_argument, 0, 'e'},  {"dump", required_argument, 0, 'd'},
    {"small", no_argument, 0, 'S'},         {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "", longopts, NULL)) != -1;) {
    switch (c) {
    case 'V': nviews = (int)option_number("bench_cpu", "--views", optarg, 1, BENCH_VIEWS); break;
    case 'r': repeats = (int)option_number("bench_cpu", "--repeats", optarg, 1, 64); break;
    case 'w': warmups = (int)option_number("bench_cpu", "--warmups", optarg, 0, 64); break;
    case 't': tof = 1; break;
    case 'e': nevents = option_number("bench_cpu", "--events", optarg, 0, 200000000); break;
    case 'd': dump = optarg; break;
    case 'S': small = 1; break;
    case 'h':
      printf("usage: bench_cpu [--views N] [--repeats N] [--warmups N] [--tof] [--events N] [--dump PREFIX] [--small]\n"
             "  times the projectors on CPU workers only (STARPU_NCPU sets their number) on views 0..N-1 (default\n"
             "  8) of the benchmark sinogram: non-TOF forward and back; --tof: also TOF-sinogram forward and back\n"
             "  (29 bins); --events N: also TOF listmode of N random events. --dump PREFIX: writes the forward\n"
             "  values to PREFIX.<job>.f32 for bit comparisons; --small: the small scanner\n");
      return 0;
    default: return option_error("bench_cpu", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return option_error("bench_cpu", argv[optind]);
  setenv("STARPU_SILENT", "1", 0);

  struct sproj_config cfg;
  sproj_config_init(&cfg);
  CHECK(sproj_init(&cfg));
  CHECK(sproj_set_devices(SPROJ_DEVICE_CPU));
  struct sproj_scanner_params sp;
  int n[3];
  float vs[3], origin[3];
  benchmark_geometry(small, &sp, n, vs, origin);
  struct sproj_tof_params par = benchmark_tof();
  g_nvox = (size_t)n[0] * n[1] * n[2];
  sproj_scanner *scn;
  struct sproj_sinogram_info info;
  CHECK(sproj_scanner_create(&scn, &sp));
  CHECK(sproj_scanner_info(scn, &info));
  if (nviews > info.num_views)
    nviews = info.num_views;
  const int64_t nlors = nviews * info.lors_per_view;
  printf("# starproj %d.%d.%d bench_cpu: %d CPU workers, projections on CPU workers only, task_lors %lld\n",
         SPROJ_VERSION_MAJOR, SPROJ_VERSION_MINOR, SPROJ_VERSION_PATCH, sproj_num_cpu_workers(),
         (long long)sproj_get_task_lors());
  printf("# views 0-%d: %lld LORs; image %dx%dx%d of %.2f mm; %lld listmode events\n", nviews - 1, (long long)nlors,
         n[0], n[1], n[2], vs[0], (long long)nevents);

  int *views = malloc(nviews * sizeof *views);
  float *xs = malloc(3 * nlors * sizeof(float)), *xe = malloc(3 * nlors * sizeof(float));
  float *image = malloc(g_nvox * sizeof(float)), *fwd = malloc(nlors * sizeof(float));
  float *sino = tof ? malloc(nlors * par.num_bins * sizeof(float)) : NULL;
  float *exs = malloc((3 * nevents + 1) * sizeof(float)), *exe = malloc((3 * nevents + 1) * sizeof(float));
  float *lmv = malloc((nevents + 1) * sizeof(float));
  int16_t *bins = malloc((nevents + 1) * sizeof(int16_t));
  g_backdata = malloc(g_nvox * sizeof(float));
  if (!views || !xs || !xe || !image || !fwd || (tof && !sino) || !exs || !exe || !lmv || !bins || !g_backdata) {
    fprintf(stderr, "bench_cpu: out of memory\n");
    return 1;
  }
  for (int v = 0; v < nviews; v++)
    views[v] = v;
  CHECK(sproj_scanner_view_lors(scn, views, nviews, xs, xe, 0));
  if (nevents)
    random_events(scn, nevents, BENCH_EVENTS_SEED, exs, exe);
  srand(FIXED_SEED);
  for (size_t v = 0; v < g_nvox; v++) {
    image[v] = (float)rand() / RAND_MAX;
    g_backdata[v] = 0.0f;
  }
  for (int64_t i = 0; i < nevents; i++)
    bins[i] = (int16_t)(rand() % par.num_bins);

  sproj_lors *lors, *events = NULL;
  sproj_proj *p_fwd, *p_sino = NULL, *p_lm = NULL;
  CHECK(sproj_image_register(&g_img, image, n, vs, origin));
  CHECK(sproj_image_register(&g_back, g_backdata, n, vs, origin));
  CHECK(sproj_lors_register(&lors, xs, xe, nlors));
  CHECK(sproj_proj_register(&p_fwd, fwd, lors));
  CHECK(sproj_tof_register(&g_tof, &par, NULL, NULL, NULL));
  if (tof)
    CHECK(sproj_proj_register_tof(&p_sino, sino, lors, par.num_bins));
  if (nevents) {
    CHECK(sproj_lors_register_events(&events, exs, exe, bins, nevents));
    CHECK(sproj_proj_register(&p_lm, lmv, events));
  }

  struct job jobs[6];
  int njobs = 0;
  jobs[njobs++] = (struct job){"fwd", NONTOF, 0, p_fwd, fwd, nlors, nlors};
  jobs[njobs++] = (struct job){"back", NONTOF, 1, p_fwd, fwd, nlors, nlors};
  if (tof) {
    jobs[njobs++] = (struct job){"tof_sino_fwd", TOF_SINO, 0, p_sino, sino, nlors * par.num_bins, nlors};
    jobs[njobs++] = (struct job){"tof_sino_back", TOF_SINO, 1, p_sino, sino, nlors * par.num_bins, nlors};
  }
  if (nevents) {
    jobs[njobs++] = (struct job){"tof_lm_fwd", TOF_LM, 0, p_lm, lmv, nevents, nevents};
    jobs[njobs++] = (struct job){"tof_lm_back", TOF_LM, 1, p_lm, lmv, nevents, nevents};
  }

  printf("| job | LORs | median s | min s | ns per LOR x worker | checksum (sum) | bits (FNV-1a) |\n");
  printf("| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
  for (int i = 0; i < njobs; i++) {
    const struct job *j = &jobs[i];
    double sum = 0.0, t[64];
    uint64_t hash;
    /* a back job projects the values its forward job left (the job before it) */
    if (j->back) {
      back_checksum(j, &sum, &hash);
    } else {
      run_once(j);
      for (int64_t k = 0; k < j->nvalues; k++)
        sum += j->values[k];
      hash = hash_bits(j->values, j->nvalues);
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
    double med = median(t, repeats);
    printf("| %s | %lld | %.4f | %.4f | %.1f | %.9e | %016llx |\n", j->name, (long long)j->lors, med, best,
           1e9 * med * sproj_num_cpu_workers() / j->lors, sum, (unsigned long long)hash);
    fflush(stdout);
  }

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
  CHECK(sproj_scanner_destroy(scn));
  CHECK(sproj_shutdown());
  free(views);
  free(xs);
  free(xe);
  free(image);
  free(fwd);
  free(sino);
  free(exs);
  free(exe);
  free(lmv);
  free(bins);
  free(g_backdata);
  return 0;
}
