/* SPDX-License-Identifier: Apache-2.0 */
/* progress.c: the hook through which long host-side calls say how far they are (sproj_set_progress). */
#include "config.h"
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include "shared.h"

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
