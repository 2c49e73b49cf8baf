/* SPDX-License-Identifier: Apache-2.0 */
/* any.c: with CPU cores and GPUs selected (SPROJ_DEVICE_ANY), whether a small projection task goes to a core or to
 * the GPUs, from the work queued for the GPUs and the rates measured on this run.
 *
 * A core helps only if it finishes its task before the GPUs would have: a core that is still busy when the GPUs
 * have run dry makes the whole job slower than the GPUs alone. So a task goes to a core only when, besides the
 * conditions of submit.c (a small task, a deep GPU queue, a free core), the time a core takes for it is at most the
 * time the GPUs need for the work already queued for them. Work is counted in LOR units (a back projection LOR
 * counts three: on both kinds of device it costs 2.4-3.1x a forward one). The GPUs' rate is their units done per
 * second while at least one GPU task is in flight (all GPUs together); a core's is the mean of its recent tasks,
 * starting from a deliberately slow guess, so that the first core task waits for a long GPU queue. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "internal.h"

/* seconds per unit of a core before it has finished a task (a core of the development machines: 0.5-1.3 us) */
#define CORE_GUESS_S_PER_UNIT 2e-6
/* weight of the newest core task in the running mean */
#define CORE_NEW_WEIGHT 0.25

struct sproj_any_note {
  int64_t lors;
  double units;
  double t0;
  int cpu, layout;
};

static struct {
  pthread_mutex_t lock;
  double core_s_per_unit;
  double gpu_units_done, gpu_busy_s, busy_since;
  int gpu_in_flight;
  double gpu_queued_units; /* units of GPU tasks submitted and not yet taken by a worker */
  int cpu_queued;          /* core tasks submitted and not yet taken */
} any = {.lock = PTHREAD_MUTEX_INITIALIZER, .core_s_per_unit = CORE_GUESS_S_PER_UNIT};

static double monotonic_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double (*sproj_any_clock)(void) = monotonic_now;

static double units_of(int64_t lors, int back)
{
  return (double)lors * (back ? 3.0 : 1.0);
}

void sproj_any_reset(void)
{
  pthread_mutex_lock(&any.lock);
  any.core_s_per_unit = CORE_GUESS_S_PER_UNIT;
  any.gpu_units_done = any.gpu_busy_s = any.busy_since = 0.0;
  any.gpu_in_flight = 0;
  any.gpu_queued_units = 0.0;
  any.cpu_queued = 0;
  pthread_mutex_unlock(&any.lock);
}

int sproj_any_core_takes(int64_t lors, int back, int ncores, int queued_tasks, int ncuda_workers)
{
  pthread_mutex_lock(&any.lock);
  int takes = 0;
  if (queued_tasks - any.cpu_queued >= 2 * ncuda_workers && any.cpu_queued < ncores && any.gpu_units_done > 0.0 &&
      any.gpu_busy_s > 0.0) {
    double gpu_s = any.gpu_queued_units * any.gpu_busy_s / any.gpu_units_done;
    takes = units_of(lors, back) * any.core_s_per_unit <= gpu_s;
  }
  pthread_mutex_unlock(&any.lock);
  return takes;
}

struct sproj_any_note *sproj_any_queued(int64_t lors, int back, int cpu, int layout)
{
  struct sproj_any_note *n = malloc(sizeof *n);
  if (!n)
    return NULL;
  *n = (struct sproj_any_note){lors, units_of(lors, back), 0.0, cpu, layout};
  pthread_mutex_lock(&any.lock);
  if (cpu)
    any.cpu_queued++;
  else
    any.gpu_queued_units += n->units;
  pthread_mutex_unlock(&any.lock);
  return n;
}

static void unqueue_locked(const struct sproj_any_note *n)
{
  if (n->cpu)
    any.cpu_queued--;
  else
    any.gpu_queued_units -= n->units;
}

void sproj_any_cancel(struct sproj_any_note *n)
{
  pthread_mutex_lock(&any.lock);
  unqueue_locked(n);
  pthread_mutex_unlock(&any.lock);
  free(n);
}

void sproj_any_taken(struct sproj_any_note *n, int64_t *lors, int *layout, int *cpu)
{
  n->t0 = sproj_any_clock();
  pthread_mutex_lock(&any.lock);
  unqueue_locked(n);
  if (!n->cpu && any.gpu_in_flight++ == 0)
    any.busy_since = n->t0;
  pthread_mutex_unlock(&any.lock);
  *lors = n->lors;
  *layout = n->layout;
  *cpu = n->cpu;
}

void sproj_any_done(void *note)
{
  struct sproj_any_note *n = note;
  double t1 = sproj_any_clock();
  pthread_mutex_lock(&any.lock);
  if (n->cpu) {
    if (n->units > 0.0)
      any.core_s_per_unit += CORE_NEW_WEIGHT * ((t1 - n->t0) / n->units - any.core_s_per_unit);
  } else {
    any.gpu_units_done += n->units;
    if (--any.gpu_in_flight == 0)
      any.gpu_busy_s += t1 - any.busy_since;
  }
  pthread_mutex_unlock(&any.lock);
  free(n);
}
