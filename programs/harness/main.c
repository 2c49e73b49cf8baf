/* SPDX-License-Identifier: Apache-2.0 */
/* main.c: starproj-bench, the scheduler comparison harness: projection workloads x StarPU policies x worker
 * sets, each configuration in a fresh process with its own STARPU_HOME, measured through StarPU's profiling
 * interfaces and written as CSV, JSON lines and gnuplot charts (see doc/bench-format.md). This file is the driver:
 * the matrix, one process per configuration; workloads.c runs inside those processes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>
#include <starpu.h>
#include "../common.h"
#include "harness.h"

/* starpu.h renames main to starpu_main in a simulation build, so that libstarpu's main starts SimGrid on the platform
 * of $STARPU_HOSTNAME and runs the program as a simulated process, in SimGrid's own contexts. Only a configuration's
 * process (--child) and the probe (--probe) start StarPU. The driver starts none and must first read --simulate to
 * know the platform: in a simulation build it runs from a constructor, before libstarpu's main, and exits there. (A
 * process that attaches itself to SimGrid in starpu_init instead makes SimGrid switch between threads: an 8-GPU
 * OS-EM configuration then spent 85 of its 108 CPU seconds in the kernel.) */
static int bench_main(int argc, char **argv);
#ifdef STARPU_SIMGRID
__attribute__((constructor)) static void driver_first(int argc, char **argv)
{
  if (argc < 2 || (strcmp(argv[1], "--child") && strcmp(argv[1], "--probe")))
    exit(bench_main(argc, argv));
}
#endif

/* what every configuration's process is given */
struct run_opts {
  const char *self, *scale, *outdir, *probe_home;
  int repeats, warmups, calib_runs, threads, timeout, trace, verbose, keep_homes;
  long long memlimit_mb;
  const char *simulate; /* --simulate: the platform folder (STARPU_PERF_MODEL_DIR), NULL on a real machine */
  int sim_cores;        /* cores of the simulated machine (its bus/<host>.config), 0 when unknown */
  int gpus;             /* GPUs of the machine, real or simulated */
};

/* one configuration: a workload, a policy, a worker set, and the STARPU_HOME its phases share */
struct config {
  int workload;
  const char *policy;
  const struct worker_set *ws;
  const char *home;
};

/* the checksums of the first configuration of each workload that ran, which all others must match */
static struct {
  int have;
  double a, b;
} reference[NUM_WORKLOADS];

struct outcome {
  int ok;           /* records arrived and the process exited 0 */
  int mismatch;     /* a checksum disagreed with the reference */
  int is_ref;       /* its checksums became the reference */
  double makespan[MAX_REPEATS], util[MAX_REPEATS], moved[MAX_REPEATS];
  int n;
  char resolved[64]; /* policy_resolved of its records */
  char why[256];
};

/* ---- running one phase of a configuration ---- */

static void set_child_env(const struct run_opts *o, const struct worker_set *ws, const char *policy, int workload,
                          const char *home, int calibrate, const char *trace_dir)
{
  const char *controlled[] = {"STARPU_SCHED", "STARPU_NCPU", "STARPU_NCUDA", "STARPU_NWORKER_PER_CUDA",
                              "STARPU_CALIBRATE", "STARPU_LIMIT_CUDA_MEM", "STARPU_FXT_TRACE", "STARPU_FXT_PREFIX",
                              "STARPU_PROFILING"};
  for (size_t i = 0; i < sizeof controlled / sizeof *controlled; i++)
    unsetenv(controlled[i]);
  char buf[64];
  setenv("STARPU_HOME", home, 1);
  if (strcmp(policy, "default"))
    setenv("STARPU_SCHED", policy, 1);
  if (!ws->gpus)
    setenv("STARPU_NCUDA", "0", 1);
  else if (ws->gpus > 0) {
    snprintf(buf, sizeof buf, "%d", ws->gpus);
    setenv("STARPU_NCUDA", buf, 1);
  }
  if (!ws->cpus)
    setenv("STARPU_NCPU", "0", 1);
  if (ws->per_gpu) {
    snprintf(buf, sizeof buf, "%d", ws->per_gpu);
    setenv("STARPU_NWORKER_PER_CUDA", buf, 1);
  }
  setenv("STARPU_CALIBRATE", calibrate ? "1" : "0", 1);
  if (o->simulate) {
    /* starproj sizes its defaults from this machine's cores and GPUs (hwloc, CUDA): give those of the one simulated,
     * as starproj would choose them there (a CPU worker per core less the CUDA workers and the submitting thread) */
    int gpus = ws->gpus < 0 ? o->gpus : ws->gpus;
    if (ws->gpus < 0) {
      snprintf(buf, sizeof buf, "%d", gpus);
      setenv("STARPU_NCUDA", buf, 1);
    }
    if (ws->cpus && o->sim_cores > 0) {
      int ncpu = o->sim_cores - (gpus > 0 ? gpus * (ws->per_gpu ? ws->per_gpu : STARPROJ_WORKERS_PER_GPU) + 1 : 0);
      snprintf(buf, sizeof buf, "%d", ncpu > 0 ? ncpu : 0);
      setenv("STARPU_NCPU", buf, 1);
    }
  }
  if (!strcmp(workloads[workload].name, "memlimit")) {
    snprintf(buf, sizeof buf, "%lld", o->memlimit_mb);
    setenv("STARPU_LIMIT_CUDA_MEM", buf, 1);
  }
  if (trace_dir) {
    setenv("STARPU_FXT_TRACE", "1", 1);
    setenv("STARPU_FXT_PREFIX", trace_dir, 1);
  }
  if (!o->verbose)
    setenv("STARPU_SILENT", "1", 1);
}

/* Starts the process of one phase with its stdout on *rfd and its stderr into logpath; its pid, or -1 with the reason
 * in res. */
static pid_t start_phase(const struct run_opts *o, const struct config *cf, const char *phase, const char *trace_dir,
                         const char *logpath, int *rfd, struct outcome *res)
{
  int calibrate = !strcmp(phase, "calibrate"), fd[2];
  if (pipe(fd)) {
    snprintf(res->why, sizeof res->why, "pipe: %s", strerror(errno));
    return -1;
  }
  pid_t pid = fork_child();
  if (pid < 0) {
    snprintf(res->why, sizeof res->why, "fork: %s", strerror(errno));
    close(fd[0]), close(fd[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fd[1], STDOUT_FILENO);
    close(fd[0]), close(fd[1]);
    int log = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0)
      dup2(log, STDERR_FILENO), close(log);
    set_child_env(o, cf->ws, cf->policy, cf->workload, cf->home, calibrate, trace_dir);
    char reps[16], warm[16], thr[16], tmo[16];
    snprintf(reps, sizeof reps, "%d", calibrate ? o->calib_runs : o->repeats);
    snprintf(warm, sizeof warm, "%d", calibrate ? 0 : o->warmups);
    snprintf(thr, sizeof thr, "%d", o->threads);
    snprintf(tmo, sizeof tmo, "%d", o->timeout);
    execl(o->self, o->self, "--child", workloads[cf->workload].name, "--scale", o->scale, "--workers", cf->ws->name,
          "--phase", phase, "--repeats", reps, "--warmups", warm, "--threads", thr, "--timeout", tmo, (char *)NULL);
    fprintf(stderr, PROG ": cannot run %s: %s\n", o->self, strerror(errno));
    _exit(EXIT_CANNOT_EXEC);
  }
  close(fd[1]);
  *rfd = fd[0];
  return pid;
}

/* The 'check' column of a measured record: the first one of a workload sets the reference, the others are compared
 * with it within their own tolerance. */
static const char *check_record(const struct record *r, int workload, struct outcome *res)
{
  if (SIMULATED)
    return "simulated"; /* no kernel ran: nothing to compare */
  double a = atof(get_val(r, "checksum_a")), b = atof(get_val(r, "checksum_b"));
  double tol = atof(get_val(r, "checksum_tol"));
  if (!reference[workload].have) {
    reference[workload].have = 1;
    res->is_ref = 1;
    reference[workload].a = a, reference[workload].b = b;
    return "ref";
  }
  double ra = reference[workload].a, rb = reference[workload].b;
  int same = fabs(a - ra) <= tol * fmax(fabs(ra), TINY) && fabs(b - rb) <= tol * fmax(fabs(rb), TINY);
  res->mismatch |= !same;
  return same ? "ok" : "MISMATCH";
}

/* One REC line (key=value fields) with the worker and transfer lines before it: written as a record, counted in res */
static void take_record(char *line, const struct pending *p, const struct config *cf, const char *phase,
                        struct outcome *res)
{
  struct record r;
  base_record(&r, workloads[cf->workload].name, cf->policy, cf->ws->name, phase);
  for (char *tok = strtok(line + LIT_LEN("REC\t"), "\t"); tok; tok = strtok(NULL, "\t")) {
    char *eq = strchr(tok, '=');
    if (eq) {
      *eq = 0;
      set_val(&r, tok, eq + 1);
    }
  }
  set_val(&r, "status", "ok");
  set_val(&r, "check", strcmp(phase, "calibrate") ? check_record(&r, cf->workload, res) : "");
  if (res->n < MAX_REPEATS) {
    res->makespan[res->n] = atof(get_val(&r, "makespan_s"));
    res->util[res->n] = atof(get_val(&r, "mean_utilisation"));
    res->moved[res->n] = atof(get_val(&r, "bytes_moved"));
    res->n++;
  }
  snprintf(res->resolved, sizeof res->resolved, "%s", get_val(&r, "policy_resolved"));
  write_record(&r, p);
  free_record(&r);
}

/* the lines of a phase's process until it closes its stdout */
static void read_records(int fd, const struct config *cf, const char *phase, struct outcome *res)
{
  FILE *in = fdopen(fd, "r");
  char *line = NULL;
  size_t cap = 0;
  struct pending p = {0};
  while (in && getline(&line, &cap, in) > 0) {
    line[strcspn(line, "\n")] = 0;
    if (STARTS_WITH(line, "WRK\t"))
      add_line(&p.wrk, &p.nwrk, line);
    else if (STARTS_WITH(line, "BUS\t"))
      add_line(&p.bus, &p.nbus, line);
    else if (STARTS_WITH(line, "REC\t")) {
      take_record(line, &p, cf, phase, res);
      clear_pending(&p);
    }
  }
  free(line);
  clear_pending(&p);
  if (in)
    fclose(in);
  else
    close(fd);
}

/* why a phase's process failed (its status, then the last line of its log), written as the phase's record */
static void phase_failed(const struct run_opts *o, const struct config *cf, const char *phase, int waited, int status,
                         const char *logpath, struct outcome *res)
{
  if (waited < 0)
    snprintf(res->why, sizeof res->why, "waitpid: %s", strerror(errno));
  else if (interrupted)
    snprintf(res->why, sizeof res->why, "interrupted");
  else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    snprintf(res->why, sizeof res->why, "timeout after %d s", o->timeout);
  else if (WIFSIGNALED(status))
    snprintf(res->why, sizeof res->why, "killed by signal %d", WTERMSIG(status));
  else
    snprintf(res->why, sizeof res->why, "exit status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  FILE *lf = fopen(logpath, "r");
  char l[256], last[256] = "";
  while (lf && fgets(l, sizeof l, lf))
    if (l[0] != '\n')
      snprintf(last, sizeof last, "%s", l);
  if (lf)
    fclose(lf);
  last[strcspn(last, "\n")] = 0;
  clean_field(last);
  if (last[0])
    snprintf(res->why + strlen(res->why), sizeof res->why - strlen(res->why), ": %.100s", last);
  struct record r;
  struct pending none = {0};
  base_record(&r, workloads[cf->workload].name, cf->policy, cf->ws->name, phase);
  set_val(&r, "status", res->why[0] ? res->why : "no records");
  write_record(&r, &none);
  free_record(&r);
}

/* Runs one phase (calibrate or measure) of a configuration in a process of its own and writes its records. */
static void run_phase(const struct run_opts *o, const struct config *cf, const char *phase, const char *trace_dir,
                      struct outcome *res)
{
  memset(res, 0, sizeof *res);
  /* the process's messages (StarPU's, a failure's) go to DIR/logs/<workload>_<set>_<policy>_<phase>.log */
  char logpath[PATH_MAX];
  snprintf(logpath, sizeof logpath, "%s/logs", o->outdir);
  mkdir(logpath, 0755);
  snprintf(logpath, sizeof logpath, "%s/logs/%s_%s_%s_%s.log", o->outdir, workloads[cf->workload].name, cf->ws->name,
           cf->policy, phase);
  int fd, status = 0;
  pid_t pid = start_phase(o, cf, phase, trace_dir, logpath, &fd, res);
  if (pid < 0)
    return;
  read_records(fd, cf, phase, res);
  int waited = wait_child(pid, &status);
  res->ok = waited >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && res->n > 0;
  struct stat lst;
  if (res->ok && !stat(logpath, &lst) && lst.st_size == 0)
    unlink(logpath);
  if (!res->ok)
    phase_failed(o, cf, phase, waited, status, logpath, res);
}

static double median_of(double *v, int n)
{
  double tmp[MAX_REPEATS];
  memcpy(tmp, v, (size_t)n * sizeof *v);
  return n ? median(tmp, n) : NAN;
}

/* ---- the matrix ---- */

/* counts over the whole run */
struct tally {
  int done, total, failed, mismatched;
  double t_start;
};

/* the record of a configuration that cannot run on its worker set */
static void record_skipped(const char *wname, const char *policy, const char *set, const char *why)
{
  struct record r;
  struct pending none = {0};
  char status[64];
  printf("skipped (%s)\n", why);
  snprintf(status, sizeof status, "skipped: %s", why);
  base_record(&r, wname, policy, set, "measure");
  set_val(&r, "status", status);
  write_record(&r, &none);
  free_record(&r);
}

/* DIR/traces/<workload>_<set>_<policy>/ into buf (made), for STARPU_FXT_PREFIX; NULL when the name is too long */
static char *make_trace_dir(const char *outdir, const struct config *cf, char *buf, size_t n)
{
  snprintf(buf, n, "%s/traces", outdir);
  mkdir(buf, 0755);
  if (snprintf(buf, n, "%s/traces/%s_%s_%s/", outdir, workloads[cf->workload].name, cf->ws->name, cf->policy) >=
      (int)n) {
    printf("(trace folder name too long: no trace) ");
    return NULL;
  }
  mkdir(buf, 0755);
  return buf;
}

/* The calibration (model-based policies) and the measurement of one configuration, with its line of progress
 * finished; x gets the min / median / max of its repeats and the policy it ran under. */
static void measure_config(const struct run_opts *o, const struct config *cf, const char *tdir, struct summary *x,
                           struct tally *t)
{
  struct outcome res;
  double t0 = now();
  /* starproj's default is dmda when projections may go to CPU cores and GPUs */
  /* a simulation reads the models it was given and writes none */
  if (!o->simulate &&
      (model_based(cf->policy) || (!strcmp(cf->policy, "default") && cf->ws->cpus && cf->ws->gpus))) {
    run_phase(o, cf, "calibrate", NULL, &res);
    if (!res.ok)
      printf("calibration %s; ", res.why);
    else
      printf("calibrated (%d runs, median %.4f s); ", res.n, median_of(res.makespan, res.n));
  }
  run_phase(o, cf, "measure", tdir, &res);
  if (!res.ok) {
    printf("%s%s\n", interrupted ? "" : "FAILED: ", res.why);
    t->failed += !interrupted;
  }
  else {
    x->makespan = spread_of(res.makespan, res.n);
    x->util = spread_of(res.util, res.n);
    x->moved = spread_of(res.moved, res.n);
    x->n = res.n;
    snprintf(x->resolved, sizeof x->resolved, "%s", res.resolved);
    /* 4 significant digits: tiny-scale makespans are milliseconds, where fixed decimals would hide the spread */
    printf("makespan %.4g / %.4g / %.4g s (min / median / max of %d), utilisation %.2f, %.1f MB moved, check %s "
           "(%.1f s)\n", x->makespan.min, x->makespan.med, x->makespan.max, res.n, x->util.med, x->moved.med / 1e6,
           SIMULATED ? "simulated" : res.mismatch ? "MISMATCH" : res.is_ref ? "ref" : "ok", now() - t0);
    t->mismatched += res.mismatch;
  }
  fflush(stdout);
  if (tdir && res.ok)
    convert_traces(tdir);
}

/* One configuration in a fresh STARPU_HOME under base (with the probe's bus calibration), kept under DIR/homes when
 * asked. */
static void run_config(const struct run_opts *o, const struct config *cf, const char *base, struct summary *x,
                       struct tally *t)
{
  const char *wname = workloads[cf->workload].name;
  x->makespan = x->util = x->moved = (struct spread){NAN, NAN, NAN};
  x->n = 0;
  x->resolved[0] = 0;
  t->done++;
  int el = (int)(now() - t->t_start);
  printf("[%3d/%d %2d:%02d] %-16s %-12s %-26s ", t->done, t->total, el / 60, el % 60, wname, cf->ws->name, cf->policy);
  fflush(stdout);
  if (workloads[cf->workload].needs_gpu && !cf->ws->gpus) {
    record_skipped(wname, cf->policy, cf->ws->name, "needs GPUs");
    return;
  }
  /* StarPU 1.4.10 over SimGrid 3.32: the evictions of 'cold' failed an assertion in StarPU's allocator, and the
   * submitting threads of 'threads' never ended */
  if (o->simulate && (!strcmp(wname, "cold") || !strcmp(wname, "threads"))) {
    record_skipped(wname, cf->policy, cf->ws->name, "not simulated");
    return;
  }
  char home[PATH_MAX + 16], trace_dir[PATH_MAX];
  snprintf(home, sizeof home, "%s/home-%d", base, t->done);
  mkdir(home, 0700);
  copy_bus_calibration(o->probe_home, home);
  struct config c = *cf;
  c.home = home;
  measure_config(o, &c, o->trace ? make_trace_dir(o->outdir, &c, trace_dir, sizeof trace_dir) : NULL, x, t);
  if (o->keep_homes)
    keep_home(o->outdir, home, wname, cf->ws->name, cf->policy);
  remove_tree(home);
}

/* Every workload x worker set x policy, until all ran or an interrupt; then the charts and the summary. */
static int run_matrix(const struct run_opts *o, const struct plan *pl, const char *base, int gpus)
{
  struct tally t = {0, pl->nw * pl->ns * pl->np, 0, 0, now()};
  struct summary (*sum)[MAX_SETS][MAX_POLICIES] = calloc((size_t)pl->nw, sizeof *sum);
  printf(PROG ": %d configurations (%d workloads x %d worker sets x %d policies), scale %s, %d repeats after %d "
         "warm-ups; host %s%s, %d GPUs (%s), StarPU %s; results in %s\n", t.total, pl->nw, pl->ns, pl->np, o->scale,
         o->repeats, o->warmups, report.host, o->simulate ? " (simulated)" : "", gpus, report.gpu, report.version, o->outdir);
  for (int w = 0; w < pl->nw && !interrupted; w++)
    for (int s = 0; s < pl->ns && !interrupted; s++)
      for (int p = 0; p < pl->np && !interrupted; p++) {
        struct config cf = {pl->wl[w], pl->pol[p], &pl->sets[s], NULL};
        run_config(o, &cf, base, &sum[w][s][p], &t);
      }
  write_summary(pl, sum);
  close_outputs();
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/logs", o->outdir) < (int)sizeof path)
    rmdir(path); /* only when no process left a message */
  remove_leftovers();
  charts(o->outdir, pl, sum);
  free(sum);
  if (interrupted)
    printf(PROG ": interrupted during configuration %d of %d\n", t.done, t.total);
  printf(PROG ": %d configurations, %d failed, %d disagreed with the first policy's results; records in "
         "%s/results.csv and results.jsonl\n", t.total, t.failed, t.mismatched, o->outdir);
  return interrupted ? EXIT_INTERRUPTED : t.failed || t.mismatched ? 1 : 0;
}

/* ---- the machine ---- */

/* Runs the program in probe mode in home: the GPUs and CPU workers starproj finds, the models of both. */
static int probe(const char *self, const char *home, int verbose, int *gpus)
{
  int fd[2];
  if (pipe(fd))
    return -1;
  pid_t pid = fork_child();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    dup2(fd[1], STDOUT_FILENO);
    close(fd[0]), close(fd[1]);
    setenv("STARPU_HOME", home, 1);
    if (!verbose)
      setenv("STARPU_SILENT", "1", 1);
    if (SIMULATED && !verbose) {
      /* SimGrid's own notes on the platform file */
      int null = open("/dev/null", O_WRONLY);
      if (null >= 0)
        dup2(null, STDERR_FILENO), close(null);
    }
    execl(self, self, "--probe", (char *)NULL);
    _exit(EXIT_CANNOT_EXEC);
  }
  close(fd[1]);
  FILE *in = fdopen(fd[0], "r");
  char line[1024];
  int found = 0;
  while (fgets(line, sizeof line, in)) {
    line[strcspn(line, "\n")] = 0;
    if (!STARTS_WITH(line, "PROBE\t"))
      continue;
    for (char *tok = strtok(line + LIT_LEN("PROBE\t"), "\t"); tok; tok = strtok(NULL, "\t")) {
      if (STARTS_WITH(tok, "gpus="))
        *gpus = atoi(tok + LIT_LEN("gpus=")), found = 1;
      else if (STARTS_WITH(tok, "gpu_model="))
        snprintf(report.gpu, sizeof report.gpu, "%s", tok + LIT_LEN("gpu_model="));
      else if (STARTS_WITH(tok, "cpu_model="))
        snprintf(report.cpu, sizeof report.cpu, "%s", tok + LIT_LEN("cpu_model="));
    }
  }
  fclose(in);
  int status;
  if (wait_child(pid, &status) < 0)
    return -1;
  return found && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void list_all(int gpus)
{
  printf("workloads:\n");
  for (int i = 0; i < NUM_WORKLOADS; i++)
    printf("  %-17s %s%s%s\n", workloads[i].name, workloads[i].what, workloads[i].needs_gpu ? " (GPUs only)" : "",
           workloads[i].named_only ? " (only when named)" : "");
  printf("policies of this StarPU build (plus 'default': starproj's own choice, no STARPU_SCHED):\n ");
  for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); p && *p; p++)
    printf(" %s%s", (*p)->policy_name, model_based((*p)->policy_name) ? "*" : "");
  printf("\n  (* model-based: calibrated with STARPU_CALIBRATE=1 before being measured)\n");
  printf("worker sets on this machine (%d GPUs):\n  cpu", gpus);
  if (gpus > 0) {
    printf(" gpu all");
    for (int g = 1; g < gpus; g++)
      printf(" gpu%d", g);
    printf(" gpu:w1 gpu:w2 gpu:w8 (and any set with :wK)");
  }
  printf("\nscales: tiny small full\n");
#ifdef STARPU_USE_FXT
  printf("--trace: available (StarPU built with FxT)\n");
#else
  printf("--trace: unavailable (this StarPU was built without FxT)\n");
#endif
}

/* Without --workers: cpu, and with GPUs the GPU sets; then every set checked against the GPUs there are (exit
 * status 2 with a message naming --workers otherwise). */
static int choose_sets(const char *set_arg, struct plan *pl, int gpus)
{
  if (!set_arg) {
    parse_set("cpu", &pl->sets[pl->ns++]);
    if (gpus > 0) {
      parse_set("gpu", &pl->sets[pl->ns++]);
      parse_set("all", &pl->sets[pl->ns++]);
      for (int g = 1; g < gpus && pl->ns < MAX_SETS - 3; g++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", g);
        parse_set(name, &pl->sets[pl->ns++]);
      }
      parse_set("gpu:w1", &pl->sets[pl->ns++]);
      parse_set("gpu:w2", &pl->sets[pl->ns++]);
      parse_set("gpu:w8", &pl->sets[pl->ns++]);
    }
  }
  for (int s = 0; s < pl->ns; s++)
    if (pl->sets[s].gpus && (gpus == 0 || pl->sets[s].gpus > gpus)) {
      fprintf(stderr, PROG ": --workers: worker set '%s' needs %s; this machine has %d\n", pl->sets[s].name,
              pl->sets[s].gpus > 0 ? "more GPUs" : "GPUs", gpus);
      return 2;
    }
  return 0;
}

/* STARPU_LIMIT_CUDA_MEM of the memlimit workload: below the data size (half of it), above what an image and its
 * per-worker buffers need (MEMLIMIT_IMAGES images), in MiB */
#define MEMLIMIT_IMAGES 16
static long long memlimit_mb(const char *scale)
{
  const struct scale *sc = &scales[0];
  for (int i = 0; i < NUM_SCALES; i++)
    if (!strcmp(scales[i].name, scale))
      sc = &scales[i];
  long long need = data_bytes(sc), img = (long long)sizeof(float) * sc->dims[0] * sc->dims[1] * sc->dims[2];
  return (need / 2 > MEMLIMIT_IMAGES * img ? need / 2 : MEMLIMIT_IMAGES * img) / MIB + 1;
}

/* ---- the simulated machine (--simulate) ---- */

/* the name of a machine's platform file in bus/, "<host>.platform.v4.xml" (the one SimGrid 3.13 and later read) */
static const char platform_suffix[] = ".platform.v4.xml";

static int is_platform_file(const char *name)
{
  size_t n = strlen(name), k = sizeof platform_suffix - 1;
  return n > k && !strcmp(name + n - k, platform_suffix);
}

/* The cores of the simulated machine, from the first line of its bus/<host>.config ("16 # Number of CPUs"); 0 when
 * that is unreadable. */
static int simulated_cores(const char *dir, const char *host)
{
  char path[PATH_MAX + 256], line[256];
  int cores = 0;
  snprintf(path, sizeof path, "%s/bus/%s.config", dir, host);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "Number of CPUs")) {
      cores = atoi(line);
      break;
    }
  if (f)
    fclose(f);
  return cores > 0 && cores <= STARPU_MAXCPUS ? cores : 0;
}

/* --simulate PLATFORM: a folder of StarPU's sampling files (codelets/ and bus/, as scripts/calibrate-models.sh records
 * them), holding one machine's bus/<host>.platform.v4.xml, or the path of that file when it holds several. Sets what
 * StarPU reads in every process started from here: STARPU_PERF_MODEL_DIR, STARPU_HOSTNAME, and the CUDA models
 * shared by all GPUs (calibrated on one, used for all the simulated ones). 0, or a message and exit status 2. */
static int simulation_setup(const char *platform, int *cores)
{
  char path[PATH_MAX], dir[PATH_MAX], host[256] = "";
  struct stat st;
  if (!realpath(platform, path) || stat(path, &st)) {
    fprintf(stderr, PROG ": --simulate: %s: %s\n", platform, strerror(errno));
    return 2;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(dir, sizeof dir, "%s", path);
    char bus[PATH_MAX + 8];
    snprintf(bus, sizeof bus, "%s/bus", dir);
    DIR *d = opendir(bus);
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d));)
      if (is_platform_file(e->d_name)) {
        if (found++ == 0)
          snprintf(host, sizeof host, "%.*s", (int)(strlen(e->d_name) - (sizeof platform_suffix - 1)), e->d_name);
      }
    if (d)
      closedir(d);
    if (found == 0) {
      fprintf(stderr, PROG ": --simulate: %s holds no bus/<host>%s: not a platform folder (scripts/calibrate-models.sh "
              "records one on a real machine, scripts/simulated-platform.sh derives others)\n", platform,
              platform_suffix);
      return 2;
    }
    if (found > 1) {
      fprintf(stderr, PROG ": --simulate: %s holds %d machines' platforms: name one, e.g. --simulate %s/bus/%s%s\n",
              platform, found, platform, host, platform_suffix);
      return 2;
    }
  } else {
    /* DIR/bus/<host>.platform.v4.xml */
    char *slash = strrchr(path, '/');
    if (!S_ISREG(st.st_mode) || !slash || !is_platform_file(slash + 1) || slash - path < (long)LIT_LEN("/bus") ||
        !STARTS_WITH(slash - LIT_LEN("/bus"), "/bus")) {
      fprintf(stderr, PROG ": --simulate: %s is neither a platform folder nor its bus/<host>%s\n", platform,
              platform_suffix);
      return 2;
    }
    snprintf(host, sizeof host, "%.*s", (int)(strlen(slash + 1) - (sizeof platform_suffix - 1)), slash + 1);
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - LIT_LEN("/bus") - path), path);
  }
  char codelets[PATH_MAX + 16];
  snprintf(codelets, sizeof codelets, "%s/codelets", dir);
  if (stat(codelets, &st) || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, PROG ": --simulate: %s has no codelets/ folder (the calibrated performance models)\n", platform);
    return 2;
  }
  setenv("STARPU_PERF_MODEL_DIR", dir, 1);
  setenv("STARPU_HOSTNAME", host, 1);
  setenv("STARPU_PERF_MODEL_HOMOGENEOUS_CUDA", "1", 0);
  /* a task size measured fewer than 10 times (StarPU's default minimum) would stop a non-linear regression model's
   * simulation ("not calibrated enough"); StarPU uses such means anyway for history models in simulation */
  setenv("STARPU_CALIBRATE_MINIMUM", "1", 0);
  *cores = simulated_cores(dir, host);
  return 0;
}

/* The driver once its options are checked: the output place, the temporary folder, the probe of the machine, then
 * the list or the matrix. */
static int drive(const struct options *opt, struct plan *pl)
{
  int sim_cores = 0;
  int rc = opt->simulate ? simulation_setup(opt->simulate, &sim_cores) : 0;
  if (!rc && !opt->list)
    rc = check_output(opt->outdir);
  if (rc)
    return rc;
  atexit(remove_leftovers);
  catch_interrupts();
  char self[PATH_MAX], probe_home[PATH_MAX + 16];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    fprintf(stderr, PROG ": cannot find its own executable\n");
    return 1;
  }
  self[len] = 0;
  struct run_opts o = {self, opt->scale, opt->outdir, probe_home, opt->repeats, opt->warmups, opt->calib_runs,
                       opt->threads, opt->timeout, opt->trace, opt->verbose, opt->keep_homes, memlimit_mb(opt->scale),
                       opt->simulate, sim_cores, 0};
  /* the machine: a probe process in a STARPU_HOME of its own */
  const char *base = make_temp_base();
  if (!base)
    return 1;
  snprintf(probe_home, sizeof probe_home, "%s/probe", base);
  mkdir(probe_home, 0700);
  int gpus = 0;
  snprintf(report.cpu, sizeof report.cpu, "unknown");
  snprintf(report.gpu, sizeof report.gpu, "none");
  if (interrupted || probe(self, probe_home, opt->verbose, &gpus) || interrupted) {
    if (interrupted)
      fprintf(stderr, PROG ": interrupted\n");
    else if (opt->simulate)
      fprintf(stderr, PROG ": starproj could not start on the simulated machine %s (run with --verbose to see "
              "StarPU's messages)\n", getenv("STARPU_HOSTNAME"));
    else
      fprintf(stderr, PROG ": starproj could not start on this machine (run with --verbose to see StarPU's "
              "messages)\n");
    return interrupted ? EXIT_INTERRUPTED : 1;
  }
  o.gpus = gpus;
  if (opt->list) {
    list_all(gpus);
    return 0;
  }
  if ((rc = choose_sets(opt->set_arg, pl, gpus)) || (rc = open_outputs(opt->outdir, opt->scale, gpus)))
    return rc;
  return run_matrix(&o, pl, base, gpus);
}

static int bench_main(int argc, char **argv)
{
  struct options opt;
  struct plan plan;
  int rc = parse_options(argc, argv, &opt);
  if (rc)
    return rc;
  /* the same-policy comparison on made-up ranges, for the tests: a real run's spread is not deterministic */
  if (opt.test_spread)
    return test_spread(opt.test_ranges);
  if (opt.probe)
    return probe_main();
  if (opt.child) {
    alarm((unsigned)opt.timeout); /* a policy that never finishes is stopped; the driver reports the timeout */
    return child_main(opt.child, opt.scale, opt.set_arg ? opt.set_arg : "cpu", opt.phase, opt.repeats, opt.warmups,
                      opt.threads);
  }
  if (SIMULATED && !opt.simulate) {
    fprintf(stderr, PROG ": this starproj-bench is built against StarPU over SimGrid: it runs on a simulated machine, "
            "given with --simulate PLATFORM (doc/simulation.md)\n");
    return 2;
  }
  if (!SIMULATED && opt.simulate) {
    fprintf(stderr, PROG ": --simulate needs starproj built against StarPU over SimGrid (scripts/install-deps.sh "
            "--with-simgrid, then configure --with-simgrid; doc/simulation.md)\n");
    return 2;
  }
  rc = check_lists(&opt, &plan);
  if (!rc)
    rc = drive(&opt, &plan);
  free_plan(&plan);
  return rc;
}

/* starpu_main in a simulation build (above) */
int main(int argc, char **argv)
{
  return bench_main(argc, argv);
}
