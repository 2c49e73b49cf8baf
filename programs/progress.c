/* SPDX-License-Identifier: Apache-2.0 */
/* progress.c: phases, progress lines and block-parallel loops of the programs (progress.h). */
#include <pthread.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "progress.h"
#include "starproj.h"

#define MAX_PHASES 24

static struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  pthread_t thread;
  int running, quiet, tty, detail;
  const char *prog;
  const char *phase;         /* current phase (NULL: none) */
  double t0;                 /* its start */
  const char *what;          /* its current step */
  double fraction;           /* of that step; < 0: unknown */
  double step_t0;            /* when the step began (for the estimate) */
  double last_line;          /* when a log line was last printed */
  int drawn;                 /* a bar is on the terminal's last line */
  int nphases;
  const char *names[MAX_PHASES];
  double seconds[MAX_PHASES];
  double peak_gb[MAX_PHASES]; /* the process' peak host memory when each phase ended */
} pr = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The progress of the phase as text: "<phase>: <step> 45%, 3.2 s, about 4 s left" (lock held). */
static void describe(char *buf, size_t len, double t)
{
  int n = snprintf(buf, len, "%s", pr.phase);
  if (pr.what && pr.what != pr.phase)
    n += snprintf(buf + n, len - (size_t)n, ": %s", pr.what);
  if (pr.fraction >= 0.0)
    n += snprintf(buf + n, len - (size_t)n, " %3.0f%%", 100.0 * pr.fraction);
  n += snprintf(buf + n, len - (size_t)n, ", %.1f s", t - pr.t0);
  /* what remains of the step, at the rate it has gone so far */
  double spent = t - pr.step_t0;
  if (pr.fraction > 0.02 && pr.fraction < 1.0 && spent > 0.5)
    snprintf(buf + n, len - (size_t)n, ", about %.0f s left", spent * (1.0 - pr.fraction) / pr.fraction);
}

/* Clears the bar from the terminal's last line (lock held). */
static void clear_bar(void)
{
  if (pr.drawn) {
    fputs("\r\033[K", stdout);
    fflush(stdout);
    pr.drawn = 0;
  }
}

/* Redraws the bar on a terminal, or prints a line every 5 s into a log, once the phase has run a second. */
static void *reporter(void *unused)
{
  (void)unused;
  pthread_mutex_lock(&pr.lock);
  while (pr.running) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 250000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&pr.wake, &pr.lock, &until);
    if (!pr.running || !pr.phase || pr.quiet)
      continue;
    double t = now_s();
    if (t - pr.t0 < 1.0)
      continue;
    char text[256];
    describe(text, sizeof text, t);
    if (pr.tty) {
      char bar[23] = "[                    ]";
      int fill = pr.fraction >= 0.0 ? (int)(20.0 * pr.fraction + 0.5) : 0;
      for (int i = 0; i < fill && i < 20; i++)
        bar[1 + i] = '#';
      printf("\r\033[K%s %s", pr.fraction >= 0.0 ? bar : "", text);
      fflush(stdout);
      pr.drawn = 1;
    } else if (t - pr.last_line >= 5.0) {
      printf("  ... %s\n", text);
      pr.last_line = t;
    }
  }
  pthread_mutex_unlock(&pr.lock);
  return NULL;
}

static void library_progress(const char *what, double fraction, void *user)
{
  (void)user;
  progress_step(what, fraction);
}

void progress_start(const char *prog, int quiet)
{
  pr.prog = prog;
  pr.quiet = quiet;
  pr.tty = isatty(STDOUT_FILENO);
  pr.running = 1;
  if (pthread_create(&pr.thread, NULL, reporter, NULL) != 0)
    pr.running = 0; /* no progress lines: the phases' times still print */
  sproj_set_progress(library_progress, NULL);
}

void progress_phase(const char *name)
{
  if (pr.phase)
    progress_end();
  pthread_mutex_lock(&pr.lock);
  pr.phase = name;
  pr.what = NULL;
  pr.fraction = -1.0;
  pr.t0 = pr.step_t0 = pr.last_line = now_s();
  pthread_mutex_unlock(&pr.lock);
}

/* A step of a second or more gets a line of its own when it ends (lock held). */
static void step_done(double t)
{
  if (!pr.what || !pr.phase || pr.quiet || (!pr.detail && t - pr.step_t0 < 1.0))
    return;
  clear_bar();
  if (!pr.detail) {
    printf("  %s: %s %.2f s\n", pr.phase, pr.what, t - pr.step_t0);
    return;
  }
  /* resident pages now (statm's second field) and the peak so far */
  long size = -1, pages = -1;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &pages) != 2)
      pages = -1;
    fclose(f);
  }
  struct rusage ru;
  double now_gb = pages >= 0 ? (double)pages * (double)sysconf(_SC_PAGESIZE) / 1e9 : -1.0;
  double peak_gb = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 / 1e9 : -1.0;
  printf("  %s: %s %.2f s; host memory %.2f GB, peak %.2f GB\n", pr.phase, pr.what, t - pr.step_t0, now_gb, peak_gb);
}

void progress_detail(int on)
{
  pthread_mutex_lock(&pr.lock);
  pr.detail = on;
  pthread_mutex_unlock(&pr.lock);
}

void progress_step(const char *what, double fraction)
{
  pthread_mutex_lock(&pr.lock);
  if (what != pr.what) {
    double t = now_s();
    step_done(t);
    pr.what = what;
    pr.step_t0 = t;
  }
  pr.fraction = fraction;
  pthread_mutex_unlock(&pr.lock);
}

double progress_end(void)
{
  pthread_mutex_lock(&pr.lock);
  double t = now_s(), s = pr.phase ? t - pr.t0 : 0.0;
  step_done(t);
  clear_bar();
  if (pr.phase && pr.nphases < MAX_PHASES) {
    struct rusage ru;
    pr.names[pr.nphases] = pr.phase;
    pr.peak_gb[pr.nphases] = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 / 1e9 : -1.0;
    pr.seconds[pr.nphases++] = s;
  }
  pr.phase = NULL;
  pthread_mutex_unlock(&pr.lock);
  return s;
}

void progress_summary(void)
{
  if (pr.quiet)
    return;
  double total = 0.0;
  printf("%s: times:", pr.prog);
  for (int i = 0; i < pr.nphases; i++) {
    printf(" %s %.2f s%s", pr.names[i], pr.seconds[i], i + 1 < pr.nphases ? "," : "");
    total += pr.seconds[i];
  }
  /* the most memory the process held at once (Linux counts ru_maxrss in KiB) */
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0)
    printf("; %.2f s in all; peak host memory %.2f GB\n", total, (double)ru.ru_maxrss * 1024.0 / 1e9);
  else
    printf("; %.2f s in all\n", total);
  /* which phase raised the peak: the peak as each phase ended (the first phase whose value jumps holds the memory) */
  printf("%s: peak host memory after each phase (GB):", pr.prog);
  for (int i = 0; i < pr.nphases; i++)
    if (pr.peak_gb[i] >= 0.0)
      printf(" %s %.2f%s", pr.names[i], pr.peak_gb[i], i + 1 < pr.nphases ? "," : "");
  printf("\n");
}

void progress_stop(void)
{
  sproj_set_progress(NULL, NULL);
  pthread_mutex_lock(&pr.lock);
  int running = pr.running;
  pr.running = 0;
  clear_bar();
  pthread_cond_signal(&pr.wake);
  pthread_mutex_unlock(&pr.lock);
  if (running)
    pthread_join(pr.thread, NULL);
}

/* ---- block-parallel loops ---- */
struct blocks {
  void (*fn)(void *ctx, int64_t first, int64_t end, int64_t block);
  void *ctx;
  int64_t n, size, nblocks;
  atomic_llong next, done;
  const char *what;
};

static void *block_worker(void *arg)
{
  struct blocks *b = arg;
  for (;;) {
    int64_t k = atomic_fetch_add(&b->next, 1);
    if (k >= b->nblocks)
      return NULL;
    int64_t first = k * b->size, end = first + b->size < b->n ? first + b->size : b->n;
    b->fn(b->ctx, first, end, k);
    int64_t done = atomic_fetch_add(&b->done, 1) + 1;
    if (b->what && (done & 15) == 0)
      progress_step(b->what, (double)done / (double)b->nblocks);
  }
}

void parallel_blocks(const char *what, int64_t n, int64_t block_size,
                     void (*fn)(void *ctx, int64_t first, int64_t end, int64_t block), void *ctx)
{
  if (n <= 0)
    return;
  struct blocks b = {fn, ctx, n, block_size, (n + block_size - 1) / block_size, 0, 0, what};
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int nthreads = cores > 1 ? (cores > 256 ? 256 : (int)cores) : 1;
  if (nthreads > b.nblocks)
    nthreads = (int)b.nblocks;
  pthread_t threads[256];
  int started = 0;
  for (; started < nthreads - 1; started++)
    if (pthread_create(&threads[started], NULL, block_worker, &b) != 0)
      break; /* fewer threads only take longer: the blocks stay the same */
  block_worker(&b);
  for (int t = 0; t < started; t++)
    pthread_join(threads[t], NULL);
  if (what)
    progress_step(what, 1.0);
}
