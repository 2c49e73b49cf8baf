/* SPDX-License-Identifier: Apache-2.0 */
/* harness.h: what the parts of starproj-bench share: its tables, options, records, and the file, program and signal
 * helpers that keep the user's text away from any shell. */
#ifndef STARPROJ_HARNESS_H
#define STARPROJ_HARNESS_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <starpu_config.h>
#include "starproj.h"

#define PROG "starproj-bench"
/* built against a StarPU over SimGrid: every run is a simulation (--simulate), no kernel runs */
#ifdef STARPU_SIMGRID
#define SIMULATED 1
#else
#define SIMULATED 0
#endif
#define MAX_POLICIES 64
#define MAX_SETS 24
#define MAX_REPEATS 1000
/* policies drawn on one chart: more bars per workload than this are too thin to tell apart and run out of the
 * distinct colours of gnuplot's default line types; more policies are split over several charts */
#define MAX_PER_CHART 8
/* starproj's CUDA workers per GPU when a worker set names none (src/core/runtime.c) */
#define STARPROJ_WORKERS_PER_GPU 4
/* most GPUs a worker set may name, and most CUDA workers per GPU (as starproj accepts: 1..64) */
#define MAX_SET_GPUS 64
#define MAX_WORKERS_PER_GPU 64
/* exit statuses: a child that could not exec its program (as a shell's 127), a run stopped by SIGINT */
#define EXIT_CANNOT_EXEC 127
#define EXIT_INTERRUPTED (128 + SIGINT)
/* a message about a file: its path and a few words */
#define WHY_LEN (PATH_MAX + 64)
/* s starts with the string literal lit; the length of such a literal */
#define LIT_LEN(lit) (sizeof(lit) - 1)
#define STARTS_WITH(s, lit) (!strncmp((s), (lit), LIT_LEN(lit)))

/* ---- the matrix's axes (workloads.c) ---- */

struct scale {
  const char *name;
  const char *scanner; /* preset */
  int rings;           /* 0: the preset's; else fewer rings (tiny) */
  int radial;          /* 0: the preset's */
  int dims[3];
  float voxel;
  int64_t events;      /* listmode events */
  int subsets;         /* OSEM and the TOF sinogram subset */
  int segvg_step;      /* segment-viewgram workloads use every step-th view */
  int threads;         /* host threads of the threads workload (--threads overrides) */
  struct sproj_tof_params tof;
};

struct workload {
  const char *name;
  const char *what;
  int needs_gpu; /* only run where the worker set has GPUs */
  int named_only; /* only run when --workloads names it (not in the default list, so that default runs stay those
                   * measured before it existed) */
};

/* fixed sizes, so that the driver's arrays can be declared from them (workloads.c checks them) */
#define NUM_SCALES 3
#define NUM_WORKLOADS 18
extern const struct scale scales[NUM_SCALES];
extern const struct workload workloads[NUM_WORKLOADS];

/* the process of one configuration, and the probe of the machine; both print lines for the driver */
int child_main(const char *workload, const char *scale, const char *set, const char *phase, int repeats, int warmups,
               int nthreads);
int probe_main(void);
/* bytes the whole-sinogram workloads keep on a GPU */
long long data_bytes(const struct scale *sc);
/* a value printed into the record stream: no separators or quotes */
void clean_field(char *s);

/* ---- options (options.c) ---- */

struct worker_set {
  char name[32];
  int cpus;    /* CPU workers run projections too */
  int gpus;    /* -1: every GPU; 0: none; N: the first N */
  int per_gpu; /* CUDA workers per GPU; 0: starproj's default */
};

/* the options as given (lists unsplit) */
struct options {
  const char *child, *scale, *outdir, *phase, *wl_arg, *sched_arg, *set_arg, *threads_arg, *test_spread, *simulate;
  int list, probe, repeats, warmups, calib_runs, threads, timeout, trace, verbose, keep_homes;
  double test_ranges[4]; /* --test-spread: two made-up [min, max] ranges for the same-policy comparison */
};

/* what the lists ask for */
struct plan {
  char *pol[MAX_POLICIES];
  int np;
  int wl[NUM_WORKLOADS], nw;
  struct worker_set sets[MAX_SETS];
  int ns;
  char *copies[3]; /* the lists split in place */
};

int parse_options(int argc, char **argv, struct options *o);
int check_lists(const struct options *o, struct plan *pl);
void free_plan(struct plan *pl);
int parse_set(const char *s, struct worker_set *ws);
int model_based(const char *policy);

/* ---- records and charts (report.c) ---- */

#define NUM_COLUMNS 34
struct record {
  char *val[NUM_COLUMNS];
};

/* lines of one run (workers, transfers) held until its record line arrives */
struct pending {
  char **wrk, **bus;
  int nwrk, nbus;
};

/* the output files and the columns every record shares */
extern struct report {
  FILE *csv, *json, *workers, *transfers, *summary;
  char host[256], cpu[256], gpu[256], version[32];
  const char *scale;
  int gpus;
} report;

/* one metric of a configuration over its timed repeats: the median alone hides how far runs scatter */
struct spread {
  double min, med, max; /* NaN when it did not run */
};

struct summary {
  struct spread makespan, util, moved;
  int n;             /* timed repeats it has */
  char resolved[64]; /* the policy it ran under (policy_resolved): two names of one policy share it */
};

int open_outputs(const char *outdir, const char *scale, int gpus);
void close_outputs(void);
void set_val(struct record *r, const char *key, const char *value);
const char *get_val(const struct record *r, const char *key);
void free_record(struct record *r);
void base_record(struct record *r, const char *workload, const char *policy, const char *set, const char *phase);
void write_record(const struct record *r, const struct pending *p);
void add_line(char ***lines, int *n, const char *line);
void clear_pending(struct pending *p);
struct spread spread_of(const double *v, int n);
int ranges_apart(const struct spread *a, const struct spread *b);
int test_spread(const double ranges[4]);
void write_summary(const struct plan *pl, struct summary (*sum)[MAX_SETS][MAX_POLICIES]);
void charts(const char *outdir, const struct plan *pl, struct summary (*sum)[MAX_SETS][MAX_POLICIES]);

/* ---- files, programs, signals (system.c) ---- */

extern volatile sig_atomic_t interrupted; /* SIGINT or SIGTERM came */
void catch_interrupts(void);
pid_t fork_child(void);
int wait_child(pid_t pid, int *status);
int have_program(const char *name);
int run_program(char *const argv[], const char *dir, const char *log, char *why, size_t n);
void remove_tree(const char *path);
int copy_tree(const char *from, const char *to, char *why, size_t n);
int check_output(const char *outdir);
const char *make_temp_base(void);
void keep_outdir(void);
void remove_leftovers(void);
void copy_bus_calibration(const char *from, const char *to);
void keep_home(const char *outdir, const char *home, const char *wname, const char *set, const char *policy);
void convert_traces(const char *tdir);

#endif
