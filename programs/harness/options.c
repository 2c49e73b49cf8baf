/* SPDX-License-Identifier: Apache-2.0 */
/* options.c: starproj-bench's options, each checked whole before StarPU starts: a bad one gets one message
 * naming the option and its value, and exit status 2. */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <starpu.h>
#include "../common.h"
#include "harness.h"

/* --timeout's default per scale, in seconds: one configuration's process */
#define TIMEOUT_TINY_S 120
#define TIMEOUT_SMALL_S 600
#define TIMEOUT_FULL_S 1200
/* names a --workloads list may hold, repeats included (they are dropped) */
#define MAX_LISTED_WORKLOADS (NUM_WORKLOADS * 4)

static const char *usage_text =
  "usage: " PROG " [--list] [--workloads a,b] [--scheds x,y|all] [--workers set,...] [--scale tiny|small|full]\n"
  "                      [--repeats N] [--warmups N] [--calibration-runs N] [--threads N] [--timeout S]\n"
  "                      [--output DIR] [--trace] [--keep-homes] [--verbose] [--simulate PLATFORM] [--help]\n"
  "  Compares StarPU scheduling policies on starproj's projection workloads: every workload x policy x worker set\n"
  "  runs in a process of its own with a fresh STARPU_HOME (model-based policies calibrate there first), and one\n"
  "  line per configuration is printed as it ends, then a table of them. Results: DIR/results.csv and\n"
  "  results.jsonl (one record per configuration and repeat), summary.csv (min / median / max per configuration),\n"
  "  workers.csv, transfers.csv, and PNG charts when gnuplot is installed (at most 8 policies each).\n"
  "  --list              the workloads, the policies of this StarPU build and the worker sets of this machine\n"
  "  --workloads a,b     workloads to run (default: all that apply)\n"
  "  --scheds x,y|all    policies (default: one of each family: default (starproj's own choice), eager, random,\n"
  "                      lws, dmda; 'all': default and every policy of this StarPU build but graph_test, which\n"
  "                      needs explicit starpu_do_schedule() calls)\n"
  "  --workers s,...     worker sets: cpu, gpu (all GPUs, no CPU workers), all (CPUs + GPUs, the scheduler\n"
  "                      weighs both), gpuN (the first N GPUs), any of these with :wK (K CUDA workers per GPU),\n"
  "                      e.g. gpu2:w1 (default: cpu, and with GPUs gpu, all, gpu1..gpuN-1, gpu:w1, gpu:w2, gpu:w8)\n"
  "  --scale S           tiny (a 4-ring scanner, for tests), small (the 'small' scanner, 64x64x16 image of\n"
  "                      2 mm; default) or full (the 'vision600' scanner, 215x215x71 image of 2.78 mm)\n"
  "  --repeats N         timed runs per configuration (default 3); --warmups N untimed ones before (default 1)\n"
  "  --calibration-runs N  runs with STARPU_CALIBRATE=1 before a model-based policy is measured (default 3)\n"
  "  --threads N         host threads of the 'threads' workload (default 4 tiny, 8 small, 16 full)\n"
  "  --timeout S         seconds a configuration's process may take before it is stopped (default 120 tiny,\n"
  "                      600 small, 1200 full)\n"
  "  --output DIR        where the results go (default starproj-bench-results; created, files overwritten)\n"
  "  --trace             FxT traces per configuration (needs StarPU built with FxT) and starpu_fxt_tool's output\n"
  "  --keep-homes        keep each configuration's STARPU_HOME (its calibrated models) under DIR/homes\n"
  "  --verbose           StarPU's own messages\n"
  "  --simulate PLATFORM run on a simulated machine (starproj built against StarPU over SimGrid, configure\n"
  "                      --with-simgrid): PLATFORM is a folder of performance models and bus files recorded on a real\n"
  "                      machine (perfmodels/, scripts/calibrate-models.sh), or its bus/<host>.platform.v4.xml; no\n"
  "                      kernel runs, makespans are simulated times and results are not compared (doc/simulation.md)\n"
  "  Each configuration's makespan is shown as min / median / max over its repeats; two names of one policy (e.g.\n"
  "  'default' and the policy starproj picks) whose [min, max] ranges do not overlap are flagged: that gap is noise.\n"
  "  Exit status: 0 when every configuration ran and agreed with the others, 1 when one failed or disagreed,\n"
  "  2 for bad options, 130 when interrupted (the records and charts of what ran are kept).\n";

/* a message about the options and exit status 2 */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, PROG ": ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see --help)\n");
  va_end(ap);
  return 2;
}

/* "cpu", "gpu", "gpuN", "all", optionally followed by ":wK" */
int parse_set(const char *s, struct worker_set *ws)
{
  char base[32];
  const char *colon = strchr(s, ':');
  size_t n = colon ? (size_t)(colon - s) : strlen(s);
  if (n == 0 || n >= sizeof base || strlen(s) >= sizeof ws->name)
    return -1;
  memcpy(base, s, n);
  base[n] = 0;
  memset(ws, 0, sizeof *ws);
  snprintf(ws->name, sizeof ws->name, "%s", s);
  if (colon) {
    char *end;
    if (colon[1] != 'w')
      return -1;
    long k = strtol(colon + LIT_LEN(":w"), &end, 10);
    if (*end || end == colon + LIT_LEN(":w") || k < 1 || k > MAX_WORKERS_PER_GPU)
      return -1;
    ws->per_gpu = (int)k;
  }
  if (!strcmp(base, "cpu")) {
    ws->cpus = 1;
    return ws->per_gpu ? -1 : 0;
  }
  if (!strcmp(base, "all")) {
    ws->cpus = 1, ws->gpus = -1;
    return 0;
  }
  if (STARTS_WITH(base, "gpu")) {
    ws->gpus = -1;
    if (base[3]) {
      char *end;
      long g = strtol(base + LIT_LEN("gpu"), &end, 10);
      if (*end || g < 1 || g > MAX_SET_GPUS)
        return -1;
      ws->gpus = (int)g;
    }
    return 0;
  }
  return -1;
}

/* dm*, heft-based and heteroprio policies choose from performance models: they calibrate first */
int model_based(const char *policy)
{
  return strstr(policy, "dm") || strstr(policy, "heft") || strstr(policy, "heteroprio") ||
         !strcmp(policy, "modular-gemm");
}

/* The names of a comma-separated option value, split in a copy (*copy, freed by the caller): 0, or after a message
 * -1 when a name is empty or there are more than max. */
static int split_list(const char *option, const char *value, char **copy, char **names, int max, int *n)
{
  size_t len = strlen(value);
  *n = 0;
  if (!len || value[0] == ',' || value[len - 1] == ',' || strstr(value, ",,")) {
    usage_error("%s has an empty name in '%s'", option, value);
    return -1;
  }
  *copy = strdup(value);
  for (char *tok = strtok(*copy, ","); tok; tok = strtok(NULL, ",")) {
    if (*n == max) {
      usage_error("%s takes at most %d names, not '%s'", option, max, value);
      return -1;
    }
    names[(*n)++] = tok;
  }
  return 0;
}

/* --test-spread's value: four finite numbers, two [min, max] ranges; 0 when it reads so */
#define SPREAD_VALUES 4
static int parse_ranges(const char *arg, double v[4])
{
  const char *p = arg;
  for (int i = 0; i < SPREAD_VALUES; i++) {
    char *end;
    v[i] = strtod(p, &end);
    if (end == p || !isfinite(v[i]) || *end != (i < SPREAD_VALUES - 1 ? ',' : '\0'))
      return -1;
    p = end + 1;
  }
  return v[0] > v[1] || v[2] > v[3] ? -1 : 0;
}

enum { O_CHILD = UCHAR_MAX + 1, O_PROBE, O_PHASE, O_TEST_SPREAD }; /* long options only: above every char */
static const struct option longopts[] = {
  {"list", no_argument, 0, 'l'},          {"workloads", required_argument, 0, 'W'},
  {"scheds", required_argument, 0, 's'},  {"workers", required_argument, 0, 'k'},
  {"scale", required_argument, 0, 'S'},   {"repeats", required_argument, 0, 'r'},
  {"warmups", required_argument, 0, 'w'}, {"calibration-runs", required_argument, 0, 'c'},
  {"threads", required_argument, 0, 't'}, {"timeout", required_argument, 0, 'T'},
  {"output", required_argument, 0, 'o'},  {"trace", no_argument, 0, 'x'},
  {"keep-homes", no_argument, 0, 'K'},    {"verbose", no_argument, 0, 'v'},
  {"help", no_argument, 0, 'h'},          {"child", required_argument, 0, O_CHILD},
  {"probe", no_argument, 0, O_PROBE},     {"phase", required_argument, 0, O_PHASE},
  {"test-spread", required_argument, 0, O_TEST_SPREAD}, {"simulate", required_argument, 0, 'M'},
  {0, 0, 0, 0}};

/* the name of the long option whose code is val: getopt_long only gives the code of one that lacks its value (and
 * argv holds what was typed, perhaps an abbreviation) */
static const char *option_name(int val)
{
  for (const struct option *o = longopts; o->name; o++)
    if (o->val == val)
      return o->name;
  return "?";
}

/* One option into o: 0, or a message and exit status 2 (numbers out of range exit 2 in option_number). */
static int take_option(int c, struct options *o)
{
  switch (c) {
  case 'l': o->list = 1; break;
  case 'W': o->wl_arg = optarg; break;
  case 's': o->sched_arg = optarg; break;
  case 'k': o->set_arg = optarg; break;
  case 'S':
    if (strcmp(optarg, "tiny") && strcmp(optarg, "small") && strcmp(optarg, "full"))
      return usage_error("--scale needs tiny, small or full, not '%s'", optarg);
    o->scale = optarg;
    break;
  case 'r': o->repeats = (int)option_number(PROG, "--repeats", optarg, 1, MAX_REPEATS); break;
  case 'w': o->warmups = (int)option_number(PROG, "--warmups", optarg, 0, 100); break;
  case 'c': o->calib_runs = (int)option_number(PROG, "--calibration-runs", optarg, 1, 100); break;
  case 't': o->threads_arg = optarg; break; /* its range depends on --child, perhaps given later */
  case 'T': o->timeout = (int)option_number(PROG, "--timeout", optarg, 1, 86400); break;
  case 'o': o->outdir = optarg; break;
  case 'x': o->trace = 1; break;
  case 'K': o->keep_homes = 1; break;
  case 'v': o->verbose = 1; break;
  case 'M': o->simulate = optarg; break;
  case 'h': fputs(usage_text, stdout); exit(0);
  case O_CHILD: o->child = optarg; break;
  case O_PROBE: o->probe = 1; break;
  case O_PHASE: o->phase = optarg; break;
  case O_TEST_SPREAD: o->test_spread = optarg; break;
  }
  return 0;
}

/* Reads argv into o: 0, or a message naming the option and its value, and exit status 2. */
int parse_options(int argc, char **argv, struct options *o)
{
  *o = (struct options){.scale = "small", .outdir = "starproj-bench-results", .phase = "measure", .repeats = 3,
                        .warmups = 1, .calib_runs = 3};
  opterr = 0;
  for (int c, rc; (c = getopt_long(argc, argv, ":", longopts, NULL)) != -1;) {
    if (c == ':')
      return usage_error("--%s needs a value", option_name(optopt));
    if (c == '?' && optopt)
      return usage_error("unknown option '-%c'", optopt);
    if (c == '?')
      return usage_error("unknown option '%s'", argv[optind - 1]);
    /* '--output --trace' took the next option as its value: the value is what is missing */
    if (optarg && (!*optarg || STARTS_WITH(optarg, "--")))
      return usage_error("--%s needs a value, not '%s'", option_name(c), optarg);
    if ((rc = take_option(c, o)))
      return rc;
  }
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  /* 0 host threads only from the driver to a configuration's process: the scale's number */
  if (o->threads_arg)
    o->threads = (int)option_number(PROG, "--threads", o->threads_arg, o->child ? 0 : 1, 256);
  if (o->test_spread && parse_ranges(o->test_spread, o->test_ranges))
    return usage_error("--test-spread needs AMIN,AMAX,BMIN,BMAX (finite numbers, each min <= its max), not '%s'",
                       o->test_spread);
  if (strcmp(o->phase, "measure") && strcmp(o->phase, "calibrate"))
    return usage_error("--phase needs calibrate or measure, not '%s'", o->phase);
  if (!o->timeout)
    o->timeout = !strcmp(o->scale, "tiny")    ? TIMEOUT_TINY_S
                 : !strcmp(o->scale, "small") ? TIMEOUT_SMALL_S
                                              : TIMEOUT_FULL_S;
  return 0;
}

/* a policy of this StarPU build (the list is there before starpu_init), or starproj's 'default' */
static int known_policy(const char *name)
{
  if (!strcmp(name, "default"))
    return 1;
  for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); p && *p; p++)
    if (!strcmp((*p)->policy_name, name))
      return 1;
  return 0;
}

/* The policies run without --scheds: starproj's own choice and one of each family StarPU has, so that the defaults
 * at tiny scale end within two minutes on two loaded cores (every policy of StarPU 1.4 took over four minutes, eight
 * of them 2m20s, six 1m45s: each configuration is a process or two of about a second): a central queue (eager),
 * random placement (random), work stealing (lws, which steals from neighbours first and is starproj's choice on CPU
 * workers, so that 'default' and lws measure how far two names of one policy scatter) and performance models (dmda,
 * calibrated first). Left to --scheds: ws (lws without the locality), prio and dmdas (eager and dmda ordered by task
 * priorities, which starproj's tasks do not set), and the modular policies, built from the same pieces. */
static const char *const default_policies[] = {"default", "eager", "random", "lws", "dmda"};

static int check_policies(const char *arg, struct plan *pl)
{
  if (!arg) {
    /* a StarPU build without one of them runs the others */
    for (size_t i = 0; i < sizeof default_policies / sizeof *default_policies; i++)
      if (known_policy(default_policies[i]))
        pl->pol[pl->np++] = (char *)default_policies[i];
    return 0;
  }
  if (!strcmp(arg, "all")) {
    pl->pol[pl->np++] = "default";
    /* graph_test schedules only when the application calls starpu_do_schedule(): starproj's own waits (in
     * sproj_recon_create, image syncs) then wait forever. It runs when asked for by name. */
    for (struct starpu_sched_policy **p = starpu_sched_get_predefined_policies(); p && *p && pl->np < MAX_POLICIES;
         p++)
      if (strcmp((*p)->policy_name, "graph_test"))
        pl->pol[pl->np++] = (char *)(*p)->policy_name;
    return 0;
  }
  if (split_list("--scheds", arg, &pl->copies[0], pl->pol, MAX_POLICIES, &pl->np))
    return 2;
  for (int i = 0; i < pl->np; i++)
    if (!strcmp(pl->pol[i], "all"))
      return usage_error("--scheds: 'all' stands alone, not in a list ('%s')", arg);
    else if (!known_policy(pl->pol[i]))
      return usage_error("--scheds: unknown policy '%s' (--list shows this StarPU's policies)", pl->pol[i]);
  return 0;
}

static int check_workloads(const char *arg, struct plan *pl)
{
  char *names[MAX_LISTED_WORKLOADS];
  int n;
  if (!arg) {
    for (int j = 0; j < NUM_WORKLOADS; j++)
      if (!workloads[j].named_only)
        pl->wl[pl->nw++] = j;
    return 0;
  }
  if (split_list("--workloads", arg, &pl->copies[1], names, MAX_LISTED_WORKLOADS, &n))
    return 2;
  for (int i = 0; i < n; i++) {
    int k = -1, dup = 0;
    for (int j = 0; j < NUM_WORKLOADS; j++)
      if (!strcmp(workloads[j].name, names[i]))
        k = j;
    if (k < 0)
      return usage_error("--workloads: unknown workload '%s' (--list shows them)", names[i]);
    for (int j = 0; j < pl->nw; j++)
      dup |= pl->wl[j] == k;
    if (!dup)
      pl->wl[pl->nw++] = k;
  }
  return 0;
}

/* the worker sets named (without --workers the driver picks them once it knows the GPUs) */
static int check_sets(const char *arg, struct plan *pl)
{
  char *names[MAX_SETS];
  int n;
  if (!arg)
    return 0;
  if (split_list("--workers", arg, &pl->copies[2], names, MAX_SETS, &n))
    return 2;
  for (int i = 0; i < n; i++)
    if (parse_set(names[i], &pl->sets[pl->ns++]))
      return usage_error("--workers: unknown worker set '%s' (cpu, gpu, gpuN, all, optionally with :wK)", names[i]);
  return 0;
}

/* Every list checked before anything runs: 0, or a message and exit status 2. */
int check_lists(const struct options *o, struct plan *pl)
{
  memset(pl, 0, sizeof *pl);
#ifndef STARPU_USE_FXT
  if (o->trace) {
    fprintf(stderr, PROG ": --trace is unavailable: this StarPU was built without FxT (STARPU_USE_FXT is not set in\n"
            "starpu_config.h); rebuild StarPU with --with-fxt to record traces\n");
    return 2;
  }
#endif
  int rc = check_policies(o->sched_arg, pl);
  if (!rc)
    rc = check_workloads(o->wl_arg, pl);
  if (!rc)
    rc = check_sets(o->set_arg, pl);
  return rc;
}

void free_plan(struct plan *pl)
{
  for (int i = 0; i < 3; i++)
    free(pl->copies[i]), pl->copies[i] = NULL;
}

