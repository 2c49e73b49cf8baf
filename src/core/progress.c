/* SPDX-License-Identifier: Apache-2.0 */
/* progress.c: the hook through which long host-side calls say how far they are (sproj_set_progress), and the
 * threads those calls run their blocks of work on (sproj_run_blocks). */
#include "config.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "shared.h"

/* the most threads sproj_run_blocks starts by itself (one per online core otherwise) */
#define MAX_BLOCK_THREADS 1024

/* One hook per process; fn and user are read together under no lock, so they are set as one pair pointer. */
struct hook {
  sproj_progress_fn fn;
  void *user;
};
static struct hook hooks[2];
static _Atomic(struct hook *) current;
static atomic_int which;

void sproj_set_progress(sproj_progress_fn fn, void *user)
{
  /* the other slot is written, then published: a report running meanwhile sees one whole pair */
  int w = 1 - atomic_load(&which);
  hooks[w] = (struct hook){fn, user};
  atomic_store(&current, fn ? &hooks[w] : NULL);
  atomic_store(&which, w);
}

static double seconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* At most every 0.2 s per thread and step, and always at the step's end (fraction 1). */
void sproj_progress_report(const char *what, double fraction)
{
  static _Thread_local double last;
  static _Thread_local const char *last_what;
  struct hook *h = atomic_load(&current);
  if (!h)
    return;
  double t = seconds();
  if (what == last_what && fraction < 1.0 && t - last < 0.2)
    return;
  last = t;
  last_what = what;
  h->fn(what, fraction < 0.0 ? 0.0 : fraction > 1.0 ? 1.0 : fraction, h->user);
}

/* ---- work over fixed blocks, on threads ---- */
struct pool {
  sproj_block_fn fn;
  void *ctx;
  int64_t nblocks;
  atomic_llong next, done;
};

static void *pool_worker(void *arg)
{
  struct pool *p = arg;
  for (;;) {
    int64_t b = atomic_fetch_add(&p->next, 1);
    if (b >= p->nblocks)
      return NULL;
    p->fn(p->ctx, b);
    atomic_fetch_add(&p->done, 1);
  }
}

void sproj_run_blocks(const char *what, int num_threads, int64_t nblocks, sproj_block_fn fn, void *ctx)
{
  if (nblocks <= 0)
    return;
  if (num_threads <= 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    num_threads = cores > 0 ? (cores > MAX_BLOCK_THREADS ? MAX_BLOCK_THREADS : (int)cores) : 1;
  }
  if (num_threads > nblocks)
    num_threads = (int)nblocks;
  struct pool p = {fn, ctx, nblocks, 0, 0};
  /* several threads: StarPU's polling workers sleep meanwhile, or they would take the cores the blocks run on */
  int paused = num_threads > 1 ? sproj_host_work_begin() : 0;
  pthread_t *threads = num_threads > 1 ? malloc((size_t)(num_threads - 1) * sizeof *threads) : NULL;
  int started = 0;
  for (; threads && started < num_threads - 1; started++)
    if (pthread_create(&threads[started], NULL, pool_worker, &p) != 0)
      break; /* fewer threads only cost time: the blocks, and so the results, stay the same */
  /* the calling thread takes blocks too, and between two of them says how far the call is */
  for (;;) {
    int64_t b = atomic_fetch_add(&p.next, 1);
    if (b >= nblocks)
      break;
    fn(ctx, b);
    int64_t done = atomic_fetch_add(&p.done, 1) + 1;
    sproj_progress_report(what, (double)done / (double)nblocks);
  }
  for (int t = 0; t < started; t++)
    pthread_join(threads[t], NULL);
  sproj_host_work_end(paused);
  free(threads);
}
