/* SPDX-License-Identifier: Apache-2.0 */
/* bench_order.c: sproj_lors_order and sproj_reorder (the endpoints and the TOF bins) on listmode events of the
 * benchmark scanner (random LORs of its sinogram), timed before starproj starts and again while it runs with its
 * workers idle, as a reconstruction orders its events after sproj_init. Both calls run on one thread per core; the
 * table's last column says what the running runtime costs them. The order is checked to be the same both times.
 *
 * usage: bench_order [--events N] [--repeats N] [--small] */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

#define MAX_REPEATS 64
#define DEFAULT_EVENTS 20000000
#define SMALL_EVENTS_ORDER 2000000

struct timing {
  double order[MAX_REPEATS], reorder[MAX_REPEATS];
};

/* repeats x (order the events, then reorder copies of their endpoints and bins by it) */
static void time_calls(int repeats, int64_t n, const float *xs, const float *xe, const int16_t *bins, const float vs[3],
                       int64_t *order, float *cs, float *ce, int16_t *cb, struct timing *t)
{
  for (int r = 0; r < repeats; r++) {
    memcpy(cs, xs, 3 * n * sizeof *cs);
    memcpy(ce, xe, 3 * n * sizeof *ce);
    memcpy(cb, bins, n * sizeof *cb);
    double t0 = now();
    CHECK(sproj_lors_order(xs, xe, n, vs, order));
    double t1 = now();
    CHECK(sproj_reorder(cs, 3 * sizeof(float), n, order));
    CHECK(sproj_reorder(ce, 3 * sizeof(float), n, order));
    CHECK(sproj_reorder(cb, sizeof(int16_t), n, order));
    t->order[r] = t1 - t0;
    t->reorder[r] = now() - t1;
  }
}

int main(int argc, char **argv)
{
  int64_t nevents = DEFAULT_EVENTS;
  int repeats = 5, small = 0;
  static const struct option opts[] = {{"events", required_argument, 0, 'e'},
                                       {"repeats", required_argument, 0, 'r'},
                                       {"small", no_argument, 0, 's'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'e': nevents = option_number("bench_order", "--events", optarg, 1, (long long)UINT32_MAX); break;
    case 'r': repeats = (int)option_number("bench_order", "--repeats", optarg, 1, MAX_REPEATS); break;
    case 's': small = 1; break;
    case 'h': printf("usage: bench_order [--events N] [--repeats N (1-%d)] [--small]\n", MAX_REPEATS); return 0;
    default: return option_error("bench_order", "see --help");
    }
  }
  if (small && nevents > SMALL_EVENTS_ORDER)
    nevents = SMALL_EVENTS_ORDER;
  struct sproj_scanner_params sp;
  int n[3];
  float vs[3], origin[3];
  benchmark_geometry(small, &sp, n, vs, origin);
  sproj_scanner *scn;
  CHECK(sproj_scanner_create(&scn, &sp));
  size_t n3 = 3 * (size_t)nevents;
  float *xs = malloc(n3 * sizeof *xs), *xe = malloc(n3 * sizeof *xe), *cs = malloc(n3 * sizeof *cs),
        *ce = malloc(n3 * sizeof *ce);
  int16_t *bins = malloc(nevents * sizeof *bins), *cb = malloc(nevents * sizeof *cb);
  int64_t *order = malloc(nevents * sizeof *order), *order_before = malloc(nevents * sizeof *order_before);
  if (!xs || !xe || !cs || !ce || !bins || !cb || !order || !order_before) {
    fprintf(stderr, "bench_order: no memory for %lld events\n", (long long)nevents);
    return 1;
  }
  random_events(scn, nevents, BENCH_EVENTS_SEED, xs, xe);
  for (int64_t i = 0; i < nevents; i++)
    bins[i] = (int16_t)((uint64_t)i * KNUTH_HASH % 29u);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);

  struct timing before, running;
  time_calls(repeats, nevents, xs, xe, bins, vs, order_before, cs, ce, cb, &before);
  CHECK(sproj_init(NULL));
  printf("# starproj %d.%d.%d bench_order: %lld events of the %s scanner, %ld cores; the runtime: %d CPU workers, %d "
         "GPUs (%d workers)\n",
         SPROJ_VERSION_MAJOR, SPROJ_VERSION_MINOR, SPROJ_VERSION_PATCH, (long long)nevents,
         small ? "small benchmark" : "benchmark", cores, sproj_num_cpu_workers(), sproj_num_gpus(),
         sproj_num_workers());
  time_calls(repeats, nevents, xs, xe, bins, vs, order, cs, ce, cb, &running);
  int same = memcmp(order, order_before, nevents * sizeof *order) == 0;
  printf("# the order with the runtime running is the one without: %s\n", same ? "yes" : "NO");
  printf("\ncall (median of %d)                      before sproj_init s  runtime running s   ratio\n", repeats);
  double a = median(before.order, repeats), b = median(running.order, repeats);
  printf("sproj_lors_order                         %19.3f  %17.3f  %6.2f\n", a, b, b / a);
  a = median(before.reorder, repeats), b = median(running.reorder, repeats);
  printf("sproj_reorder (endpoints x 2, bins)      %19.3f  %17.3f  %6.2f\n", a, b, b / a);
  CHECK(sproj_shutdown());
  sproj_scanner_destroy(scn);
  free(xs), free(xe), free(cs), free(ce), free(bins), free(cb), free(order), free(order_before);
  return same ? 0 : 1;
}
