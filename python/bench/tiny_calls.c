/* tiny_calls.c: the C side of bench_tiny.py: every projection call on 4 LORs of an 8^3 image, many times over.
 * usage: tiny_calls [calls [reps [ncpu [merge]]]]   (merge: merge_calls of sproj_config, default 0: a task a call)
 * Prints one line per call kind and timed pass: "name calls submit_seconds total_seconds submit_cpu_seconds" (the
 * last: CPU time of the submitting thread, which the load of a shared machine hardly changes). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <starproj.h>

/* The same tiny set-up as bench_tiny.py builds through the binding: the work of a call is next to nothing, so what
 * is timed is what a call costs on its own (argument checks, task submission, StarPU's scheduling). */
#define NLORS 4
#define DIM 8
#define TOF_BINS 5

static double clock_s(clockid_t id)
{
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#define CHECK(call)                                                                                            \
  do {                                                                                                         \
    int st_ = (call);                                                                                          \
    if (st_) {                                                                                                 \
      fprintf(stderr, "%s: %s\n", #call, sproj_last_error());                                                  \
      exit(1);                                                                                                 \
    }                                                                                                          \
  } while (0)

struct objs {
  sproj_image *img;
  sproj_proj *proj, *sino, *lm;
  sproj_chunks *chunks, *lm_chunks;
  sproj_tof *tof;
};

/* One call of kind k, in the order of bench_tiny.py's KINDS; each on chunk 0 of a chunking with one chunk. */
static int call(const struct objs *o, int k)
{
  switch (k) {
  case 0: return sproj_fwd(o->img, o->proj, o->chunks, 0);
  case 1: return sproj_back(o->img, o->proj, o->chunks, 0);
  case 2: return sproj_fwd_tof_sino(o->img, o->sino, o->chunks, 0, o->tof);
  case 3: return sproj_back_tof_sino(o->img, o->sino, o->chunks, 0, o->tof);
  case 4: return sproj_fwd_tof_lm(o->img, o->lm, o->lm_chunks, 0, o->tof);
  default: return sproj_back_tof_lm(o->img, o->lm, o->lm_chunks, 0, o->tof);
  }
}

int main(int argc, char **argv)
{
  static const char *const names[] = {"fwd", "back", "fwd_tof_sino", "back_tof_sino", "fwd_tof_lm", "back_tof_lm"};
  int calls = argc > 1 ? atoi(argv[1]) : 2000;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  struct sproj_config cfg;
  sproj_config_init(&cfg);
  cfg.ncpu = argc > 3 ? atoi(argv[3]) : -1;
  cfg.ncuda = 0;
  cfg.merge_calls = argc > 4 ? atoi(argv[4]) : 0;
  CHECK(sproj_init(&cfg));
  CHECK(sproj_set_devices(SPROJ_DEVICE_CPU));

  static float image[DIM * DIM * DIM], xs[3 * NLORS], xe[3 * NLORS], vals[NLORS], sino[NLORS * TOF_BINS], lmv[NLORS];
  static int16_t bins[NLORS];
  for (int i = 0; i < DIM * DIM * DIM; i++)
    image[i] = 1.0f + (float)(i % 7);
  /* LORs across the image along x, at different heights; event i in TOF bin i */
  for (int i = 0; i < NLORS; i++) {
    float y = -3.0f + 2.0f * (float)i, z = 1.0f - 0.5f * (float)i;
    xs[3 * i] = -20.0f, xs[3 * i + 1] = y, xs[3 * i + 2] = z;
    xe[3 * i] = 20.0f, xe[3 * i + 1] = -y, xe[3 * i + 2] = z;
    bins[i] = (int16_t)(i % TOF_BINS);
  }
  int dims[3] = {DIM, DIM, DIM};
  float vs[3] = {2.0f, 2.0f, 2.0f}, origin[3] = {-7.0f, -7.0f, -7.0f};
  int64_t first = 0, count = NLORS;
  struct sproj_tof_params tp = {10.0f, TOF_BINS, 3.0f, 8.0f, 0.0f};
  struct objs o;
  sproj_lors *lors, *events;
  CHECK(sproj_image_register(&o.img, image, dims, vs, origin));
  CHECK(sproj_lors_register(&lors, xs, xe, NLORS));
  CHECK(sproj_lors_register_events(&events, xs, xe, bins, NLORS));
  CHECK(sproj_chunks_create_ranges(&o.chunks, lors, 1, &first, &count));
  CHECK(sproj_chunks_create_ranges(&o.lm_chunks, events, 1, &first, &count));
  CHECK(sproj_proj_register(&o.proj, vals, lors));
  CHECK(sproj_proj_register_tof(&o.sino, sino, lors, TOF_BINS));
  CHECK(sproj_proj_register(&o.lm, lmv, events));
  CHECK(sproj_tof_register(&o.tof, &tp, NULL, NULL, NULL));

  for (int k = 0; k < 6; k++)
    for (int r = -1; r < reps; r++) { /* one warm-up pass */
      double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
      for (int c = 0; c < calls; c++)
        CHECK(call(&o, k));
      double t1 = clock_s(CLOCK_MONOTONIC), c1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
      CHECK(sproj_wait_all());
      double t2 = clock_s(CLOCK_MONOTONIC);
      if (r >= 0)
        printf("%s %d %.9f %.9f %.9f\n", names[k], calls, t1 - t0, t2 - t0, c1 - c0);
    }

  CHECK(sproj_tof_unregister(o.tof));
  CHECK(sproj_proj_unregister(o.lm));
  CHECK(sproj_proj_unregister(o.sino));
  CHECK(sproj_proj_unregister(o.proj));
  CHECK(sproj_chunks_destroy(o.lm_chunks));
  CHECK(sproj_chunks_destroy(o.chunks));
  CHECK(sproj_lors_unregister(events));
  CHECK(sproj_lors_unregister(lors));
  CHECK(sproj_image_unregister(o.img));
  CHECK(sproj_shutdown());
  return 0;
}
