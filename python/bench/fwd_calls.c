/* fwd_calls.c: the C side of the binding's overhead benchmark: separate sproj_fwd calls, one per 7.6k-LOR chunk.
 * usage: fwd_calls [reps [ncpu [ngpu]]]   (ngpu 0, the default: CPU workers; otherwise the GPUs project) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <starproj.h>
#include <starproj_recon.h>

/* The same setup as bench_calls.py builds through the binding, so that the two loops differ only in who calls. */
#define CHUNK_LORS 7600
#define DIM0 64
#define DIM1 64
#define DIM2 16

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#define CHECK(call)                                                                                            \
  do {                                                                                                         \
    int st_ = (call);                                                                                          \
    if (st_) {                                                                                                 \
      fprintf(stderr, "%s: %s\n", #call, sproj_last_error());                                                  \
      return 1;                                                                                                \
    }                                                                                                          \
  } while (0)

int main(int argc, char **argv)
{
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  int ncpu = argc > 2 ? atoi(argv[2]) : -1;
  int ngpu = argc > 3 ? atoi(argv[3]) : 0; /* 0: CPU workers only; else CUDA workers (-1: every GPU) do the work */
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = ncpu;
  cfg.ncuda = ngpu;
  CHECK(sproj_init(&cfg));
  CHECK(sproj_set_devices(ngpu ? SPROJ_DEVICE_CUDA : SPROJ_DEVICE_CPU));

  struct sproj_scanner_params sp;
  sproj_scanner *sc;
  struct sproj_sinogram_info si;
  CHECK(sproj_scanner_preset("small", &sp));
  CHECK(sproj_scanner_create(&sc, &sp));
  CHECK(sproj_scanner_info(sc, &si));
  float *xs = malloc(sizeof(float) * 3 * si.num_lors), *xe = malloc(sizeof(float) * 3 * si.num_lors);
  float *vals = calloc(si.num_lors, sizeof(float)), *image = malloc(sizeof(float) * DIM0 * DIM1 * DIM2);
  CHECK(sproj_scanner_lors(sc, xs, xe, 0));
  for (int i = 0; i < DIM0 * DIM1 * DIM2; i++)
    image[i] = 1.0f + (float)(i % 7);
  int dims[3] = {DIM0, DIM1, DIM2};
  float vs[3] = {2.5f, 2.5f, 2.0f};
  float origin[3] = {-(DIM0 - 1) * 1.25f, -(DIM1 - 1) * 1.25f, -(DIM2 - 1) * 1.0f};

  int nchunks = (int)(si.num_lors / CHUNK_LORS);
  int64_t *first = malloc(sizeof(int64_t) * nchunks), *count = malloc(sizeof(int64_t) * nchunks);
  for (int c = 0; c < nchunks; c++) {
    first[c] = (int64_t)c * CHUNK_LORS;
    count[c] = CHUNK_LORS;
  }
  sproj_image *img;
  sproj_lors *lors;
  sproj_chunks *chunks;
  sproj_proj *proj;
  CHECK(sproj_image_register(&img, image, dims, vs, origin));
  CHECK(sproj_lors_register(&lors, xs, xe, si.num_lors));
  CHECK(sproj_chunks_create_ranges(&chunks, lors, nchunks, first, count));
  CHECK(sproj_proj_register(&proj, vals, lors));

  /* one warm-up pass, then timed passes: every chunk forward, then the values on the host */
  for (int r = -1; r < reps; r++) {
    double t0 = now();
    for (int c = 0; c < nchunks; c++)
      CHECK(sproj_fwd(img, proj, chunks, c));
    double t1 = now();
    CHECK(sproj_proj_sync(proj, NULL, 0, SPROJ_SYNC_READ));
    double t2 = now();
    if (r >= 0)
      printf("%d %d %.9f %.9f\n", nchunks, CHUNK_LORS, t2 - t0, t1 - t0);
  }
  double sum = 0;
  for (int64_t i = 0; i < (int64_t)nchunks * CHUNK_LORS; i++)
    sum += vals[i];
  fprintf(stderr, "checksum %.6e\n", sum);

  CHECK(sproj_proj_unregister(proj));
  CHECK(sproj_chunks_destroy(chunks));
  CHECK(sproj_lors_unregister(lors));
  CHECK(sproj_image_unregister(img));
  CHECK(sproj_shutdown());
  sproj_scanner_destroy(sc);
  free(xs);
  free(xe);
  free(vals);
  free(image);
  free(first);
  free(count);
  return 0;
}
