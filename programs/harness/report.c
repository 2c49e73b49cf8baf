/* SPDX-License-Identifier: Apache-2.0 */
/* report.c: starproj-bench's records (results.csv, results.jsonl, workers.csv, transfers.csv, in the columns of
 * doc/bench-format.md) and its gnuplot charts. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <starpu.h>
#include "../common.h"
#include "harness.h"

/* fields of a WRK line (a worker's times) and of a BUS line (a transfer), as the child process writes them */
#define WRK_FIELDS 8
#define BUS_FIELDS 6

static const char *csv_columns[] = {
  "host", "cpu_model", "gpu_model", "starpu_version", "scale", "workload", "policy", "policy_resolved", "worker_set",
  "phase", "repeat", "status", "ncpu_workers", "ncuda_workers", "ngpus", "makespan_s", "submit_s", "busy_cpu_s",
  "busy_gpu_s", "max_worker_busy_s", "mean_utilisation", "sleeping_s", "tasks_cpu", "tasks_gpu", "bytes_moved",
  "bytes_h2d", "bytes_d2h", "bytes_d2d", "peak_gpu_mem_bytes", "checksum_a", "checksum_b", "checksum_tol", "check",
  "done_s"};
_Static_assert(sizeof csv_columns / sizeof *csv_columns == NUM_COLUMNS, "harness.h counts the columns");

static int column(const char *key);

/* columns written as strings in JSON (host .. phase, status and check); the others are numbers (or null when empty) */
static int string_column(int c)
{
  return c < column("repeat") || c == column("status") || c == column("check");
}

static int column(const char *key)
{
  for (int c = 0; c < NUM_COLUMNS; c++)
    if (!strcmp(csv_columns[c], key))
      return c;
  return -1;
}

void set_val(struct record *r, const char *key, const char *value)
{
  int c = column(key);
  if (c < 0)
    return;
  free(r->val[c]);
  r->val[c] = strdup(value);
}

const char *get_val(const struct record *r, const char *key)
{
  int c = column(key);
  return c >= 0 && r->val[c] ? r->val[c] : "";
}

void free_record(struct record *r)
{
  for (int c = 0; c < NUM_COLUMNS; c++)
    free(r->val[c]), r->val[c] = NULL;
}

struct report report;

void add_line(char ***lines, int *n, const char *line)
{
  *lines = realloc(*lines, (size_t)(*n + 1) * sizeof **lines);
  (*lines)[(*n)++] = strdup(line);
}

void clear_pending(struct pending *p)
{
  for (int i = 0; i < p->nwrk; i++)
    free(p->wrk[i]);
  for (int i = 0; i < p->nbus; i++)
    free(p->bus[i]);
  free(p->wrk), free(p->bus);
  memset(p, 0, sizeof *p);
}

static int is_number(const char *s)
{
  char *end;
  if (!*s)
    return 0;
  strtod(s, &end);
  return *end == 0;
}

/* Writes one record (and its worker and transfer lines) to every output file. */
void write_record(const struct record *r, const struct pending *p)
{
  const char *key_cols[] = {"scale", "workload", "policy", "worker_set", "phase", "repeat"};
  char key[512] = "";
  for (int k = 0; k < (int)(sizeof key_cols / sizeof *key_cols); k++)
    snprintf(key + strlen(key), sizeof key - strlen(key), "%s%s", k ? "," : "", get_val(r, key_cols[k]));
  for (int c = 0; c < NUM_COLUMNS; c++)
    fprintf(report.csv, "%s%s", c ? "," : "", r->val[c] ? r->val[c] : "");
  fputc('\n', report.csv);
  fputc('{', report.json);
  for (int c = 0; c < NUM_COLUMNS; c++) {
    const char *v = r->val[c] ? r->val[c] : "";
    if (string_column(c))
      fprintf(report.json, "%s\"%s\":\"%s\"", c ? "," : "", csv_columns[c], v);
    else
      fprintf(report.json, "%s\"%s\":%s", c ? "," : "", csv_columns[c], is_number(v) ? v : "null");
  }
  fprintf(report.json, ",\"workers\":[");
  for (int i = 0; i < p->nwrk; i++) {
    char name[160], kind[8];
    unsigned w;
    double ex, sl, wa, tot;
    int tasks;
    if (sscanf(p->wrk[i], "WRK\t%u\t%159[^\t]\t%7[^\t]\t%lf\t%lf\t%lf\t%lf\t%d", &w, name, kind, &ex, &sl, &wa, &tot,
               &tasks) != WRK_FIELDS)
      continue;
    double idle = tot > ex ? tot - ex : 0.0;
    fprintf(report.json, "%s{\"worker\":%u,\"name\":\"%s\",\"kind\":\"%s\",\"executing_s\":%.6f,\"idle_s\":%.6f,"
            "\"sleeping_s\":%.6f,\"waiting_s\":%.6f,\"total_s\":%.6f,\"tasks\":%d}", i ? "," : "", w, name, kind, ex,
            idle, sl, wa, tot, tasks);
    fprintf(report.workers, "%s,%u,%s,%s,%.6f,%.6f,%.6f,%.6f,%.6f,%d\n", key, w, name, kind, ex, idle, sl, wa, tot,
            tasks);
  }
  fprintf(report.json, "],\"transfers\":[");
  for (int i = 0; i < p->nbus; i++) {
    int src, dst, count;
    char sk[8], dk[8];
    long long bytes;
    if (sscanf(p->bus[i], "BUS\t%d\t%7[^\t]\t%d\t%7[^\t]\t%lld\t%d", &src, sk, &dst, dk, &bytes, &count) != BUS_FIELDS)
      continue;
    fprintf(report.json, "%s{\"src_node\":%d,\"src_kind\":\"%s\",\"dst_node\":%d,\"dst_kind\":\"%s\",\"bytes\":%lld,"
            "\"transfers\":%d}", i ? "," : "", src, sk, dst, dk, bytes, count);
    fprintf(report.transfers, "%s,%d,%s,%d,%s,%lld,%d\n", key, src, sk, dst, dk, bytes, count);
  }
  fprintf(report.json, "]}\n");
  fflush(report.csv), fflush(report.json), fflush(report.workers), fflush(report.transfers);
}

/* the columns every record of a configuration shares */
void base_record(struct record *r, const char *workload, const char *policy, const char *set, const char *phase)
{
  memset(r, 0, sizeof *r);
  set_val(r, "host", report.host);
  set_val(r, "cpu_model", report.cpu);
  set_val(r, "gpu_model", report.gpu);
  set_val(r, "starpu_version", report.version);
  set_val(r, "scale", report.scale);
  set_val(r, "workload", workload);
  set_val(r, "policy", policy);
  set_val(r, "worker_set", set);
  set_val(r, "phase", phase);
}

/* Opens the output files in outdir (checked before any work) and writes their header lines: 0, or a message and exit
 * status 2. */
int open_outputs(const char *outdir, const char *scale, int gpus)
{
  char path[PATH_MAX];
  FILE **files[] = {&report.csv, &report.json, &report.workers, &report.transfers, &report.summary};
  const char *names[] = {"results.csv", "results.jsonl", "workers.csv", "transfers.csv", "summary.csv"};
  _Static_assert(sizeof files / sizeof *files == sizeof names / sizeof *names, "a name per output file");
  for (int i = 0; i < (int)(sizeof files / sizeof *files); i++) {
    if (snprintf(path, sizeof path, "%s/%s", outdir, names[i]) >= (int)sizeof path)
      errno = ENAMETOOLONG;
    else if ((*files[i] = fopen(path, "w")))
      continue;
    fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(errno));
    return 2;
  }
  keep_outdir();
  for (int c = 0; c < NUM_COLUMNS; c++)
    fprintf(report.csv, "%s%s", c ? "," : "", csv_columns[c]);
  fputc('\n', report.csv);
  fprintf(report.workers, "scale,workload,policy,worker_set,phase,repeat,worker,name,kind,executing_s,idle_s,"
          "sleeping_s,waiting_s,total_s,tasks\n");
  fprintf(report.transfers, "scale,workload,policy,worker_set,phase,repeat,src_node,src_kind,dst_node,dst_kind,"
          "bytes,transfers\n");
  fprintf(report.summary, "scale,workload,worker_set,policy,policy_resolved,repeats,makespan_min_s,makespan_median_s,"
          "makespan_max_s,utilisation_min,utilisation_median,utilisation_max,bytes_moved_min,bytes_moved_median,"
          "bytes_moved_max,apart_from\n");
  gethostname(report.host, sizeof report.host - 1);
  if (SIMULATED && getenv("STARPU_HOSTNAME")) /* the machine simulated (--simulate) */
    snprintf(report.host, sizeof report.host, "%s", getenv("STARPU_HOSTNAME"));
  clean_field(report.host);
  int maj, min, rel;
  starpu_get_version(&maj, &min, &rel);
  snprintf(report.version, sizeof report.version, "%d.%d.%d", maj, min, rel);
  report.scale = scale;
  report.gpus = gpus;
  return 0;
}

void close_outputs(void)
{
  fclose(report.csv), fclose(report.json), fclose(report.workers), fclose(report.transfers), fclose(report.summary);
}

/* ---- spread over the repeats, and two names of one policy ---- */

struct spread spread_of(const double *v, int n)
{
  double tmp[MAX_REPEATS];
  if (n <= 0)
    return (struct spread){NAN, NAN, NAN};
  memcpy(tmp, v, (size_t)n * sizeof *v);
  double med = median(tmp, n); /* sorts tmp */
  return (struct spread){tmp[0], med, tmp[n - 1]};
}

/* Two runs of one policy whose [min, max] ranges do not overlap: the gap between them is larger than either's
 * scatter, so a gap of that size between two different policies may be no policy effect either. */
int ranges_apart(const struct spread *a, const struct spread *b)
{
  return a->max < b->min || b->max < a->min;
}

/* the line that says two names of one policy came out apart */
static void print_apart(const char *workload, const char *set, const char *pa, const char *pb, const char *resolved,
                        const struct spread *a, const struct spread *b)
{
  printf("same policy apart: %s on %s: '%s' and '%s' both ran %s, yet their makespans [%.4g, %.4g] s and "
         "[%.4g, %.4g] s do not overlap: a gap this size is noise between runs (load, order), not a policy effect\n",
         workload, set, pa, pb, resolved, a->min, a->max, b->min, b->max);
}

/* --test-spread: the comparison and its line on two made-up ranges */
int test_spread(const double ranges[4])
{
  struct spread a = {ranges[0], 0.5 * (ranges[0] + ranges[1]), ranges[1]};
  struct spread b = {ranges[2], 0.5 * (ranges[2] + ranges[3]), ranges[3]};
  if (ranges_apart(&a, &b))
    print_apart("test", "test", "a", "b", "test", &a, &b);
  else
    printf("same policy within spread: [%.4g, %.4g] and [%.4g, %.4g] overlap\n", a.min, a.max, b.min, b.max);
  return 0;
}

/* the other names of configuration p's policy on workload w and set s whose makespan range is apart from p's,
 * ';'-separated into buf; the number of them */
static int apart_names(const struct plan *pl, struct summary (*sum)[MAX_SETS][MAX_POLICIES], int w, int s, int p,
                       char *buf, size_t n)
{
  const struct summary *x = &sum[w][s][p];
  int count = 0;
  buf[0] = 0;
  for (int q = 0; q < pl->np; q++) {
    const struct summary *y = &sum[w][s][q];
    if (q == p || !y->n || !x->n || !x->resolved[0] || strcmp(x->resolved, y->resolved))
      continue;
    if (ranges_apart(&x->makespan, &y->makespan)) {
      size_t len = strlen(buf);
      snprintf(buf + len, n - len, "%s%s", count ? ";" : "", pl->pol[q]);
      count++;
    }
  }
  return count;
}

/* The stdout table and summary.csv: per configuration that ran, min / median / max over its repeats (rows of
 * summary.csv in the order the configurations ran) */
static void summary_rows(const struct plan *pl, struct summary (*sum)[MAX_SETS][MAX_POLICIES])
{
  printf("\nmakespan over the timed repeats (spread: (max - min) / median; '!': apart from another name of its "
         "policy)\n%-16s %-10s %-26s %-14s %3s %10s %10s %10s %7s %5s %9s\n", "workload", "set", "policy", "resolved",
         "n", "min_s", "median_s", "max_s", "spread", "util", "MB_moved");
  for (int w = 0; w < pl->nw; w++)
    for (int s = 0; s < pl->ns; s++)
      for (int p = 0; p < pl->np; p++) {
        const struct summary *x = &sum[w][s][p];
        if (!x->n)
          continue;
        char apart[512];
        int flagged = apart_names(pl, sum, w, s, p, apart, sizeof apart);
        const char *wname = workloads[pl->wl[w]].name;
        printf("%-16s %-10s %-26s %-14s %3d %10.4g %10.4g %10.4g %6.1f%% %5.2f %9.3f%s\n", wname, pl->sets[s].name,
               pl->pol[p], x->resolved, x->n, x->makespan.min, x->makespan.med, x->makespan.max,
               x->makespan.med > 0 ? 100 * (x->makespan.max - x->makespan.min) / x->makespan.med : 0.0, x->util.med,
               x->moved.med / 1e6, flagged ? " !" : "");
        fprintf(report.summary, "%s,%s,%s,%s,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%s\n", report.scale,
                wname, pl->sets[s].name, pl->pol[p], x->resolved, x->n, x->makespan.min, x->makespan.med,
                x->makespan.max, x->util.min, x->util.med, x->util.max, x->moved.min, x->moved.med, x->moved.max,
                apart);
      }
  fflush(report.summary);
}

/* Every pair of names that ran one policy on the same workload and set: a line for each pair whose ranges do not
 * overlap, then how many pairs were compared, so that a reader knows whether the run could tell noise at all. */
static void same_policy_pairs(const struct plan *pl, struct summary (*sum)[MAX_SETS][MAX_POLICIES])
{
  int compared = 0, apart = 0;
  char names[256] = "";
  for (int w = 0; w < pl->nw; w++)
    for (int s = 0; s < pl->ns; s++)
      for (int p = 0; p < pl->np; p++)
        for (int q = p + 1; q < pl->np; q++) {
          const struct summary *x = &sum[w][s][p], *y = &sum[w][s][q];
          if (!x->n || !y->n || !x->resolved[0] || strcmp(x->resolved, y->resolved))
            continue;
          compared++;
          /* the pairs' names once each, kept as ", a = b," so that one pair's text is never part of another's */
          char pair[160];
          snprintf(pair, sizeof pair, ", %s = %s,", pl->pol[p], pl->pol[q]);
          size_t len = strlen(names);
          if (!strstr(names, pair) && len + strlen(pair) < sizeof names)
            snprintf(names + (len ? len - 1 : 0), sizeof names - (len ? len - 1 : 0), "%s", pair);
          if (ranges_apart(&x->makespan, &y->makespan)) {
            apart++;
            print_apart(workloads[pl->wl[w]].name, pl->sets[s].name, pl->pol[p], pl->pol[q], x->resolved,
                        &x->makespan, &y->makespan);
          }
        }
  if (!compared) {
    printf("same policy under two names: none in this run, so its noise is unmeasured\n");
    return;
  }
  names[strlen(names) - 1] = 0; /* the last pair's closing ',' */
  printf("same policy under two names (%s): %d workload pairs compared, %d apart beyond their spread%s\n", names + 2,
         compared, apart, apart ? ": policy gaps of that size are noise" : "");
}

/* after the matrix: the table, summary.csv, and the same-policy comparison */
void write_summary(const struct plan *pl, struct summary (*sum)[MAX_SETS][MAX_POLICIES])
{
  summary_rows(pl, sum);
  same_policy_pairs(pl, sum);
}

/* ---- charts ---- */

/* a metric of a configuration in the unit charted (bytes as MB) */
static struct spread metric_of(const struct summary *x, int m)
{
  struct spread v = m == 0 ? x->makespan : m == 1 ? x->util : x->moved;
  if (m == 2)
    v.min /= 1e6, v.med /= 1e6, v.max /= 1e6;
  return v;
}

/* what one set and metric's values span, for axes shared by its charts */
struct extent {
  double lo_med, hi_med; /* smallest and largest median */
  double lo_pos, hi;     /* smallest positive value (a log axis's floor), largest value (error bars included) */
  int nonpositive;       /* a median <= 0: no log axis */
  int ran[MAX_POLICIES]; /* values per policy: a chart of policies that never ran is not drawn */
};

/* The data file of one worker set and metric (path: DIR/<metric>_<set>.dat, ':' as '_'): a row per workload, three
 * columns per policy (median, min, max; '?' where it did not run), their extent into e. The number of
 * configurations written, or -1 when it cannot be written. */
static int chart_data(const char *path, const struct plan *pl, int s, int m,
                      struct summary (*sum)[MAX_SETS][MAX_POLICIES], struct extent *e)
{
  FILE *d = fopen(path, "w");
  if (!d)
    return -1;
  *e = (struct extent){INFINITY, -INFINITY, INFINITY, 0, 0, {0}};
  fprintf(d, "workload");
  for (int p = 0; p < pl->np; p++)
    fprintf(d, " %s %s_min %s_max", pl->pol[p], pl->pol[p], pl->pol[p]);
  fputc('\n', d);
  int values = 0;
  for (int w = 0; w < pl->nw; w++) {
    fprintf(d, "%s", workloads[pl->wl[w]].name);
    for (int p = 0; p < pl->np; p++) {
      const struct summary *x = &sum[w][s][p];
      struct spread v = metric_of(x, m);
      if (!x->n || isnan(v.med)) {
        fprintf(d, " ? ? ?");
        continue;
      }
      fprintf(d, " %.6g %.6g %.6g", v.med, v.min, v.max);
      values++, e->ran[p]++;
      e->lo_med = fmin(e->lo_med, v.med), e->hi_med = fmax(e->hi_med, v.med), e->hi = fmax(e->hi, v.max);
      e->nonpositive |= v.med <= 0;
      if (v.min > 0)
        e->lo_pos = fmin(e->lo_pos, v.min);
      if (v.med > 0)
        e->lo_pos = fmin(e->lo_pos, v.med);
    }
    fputc('\n', d);
  }
  fclose(d);
  return values;
}

/* gnuplot on DIR/charts.gp, run in DIR, or the message that says why not */
static void run_gnuplot(const char *outdir)
{
  if (!have_program("gnuplot")) {
    printf("charts skipped: gnuplot is not installed (Debian: apt-get install gnuplot-nox); the data files and\n"
           "%s/charts.gp are written: run 'gnuplot charts.gp' in %s later\n", outdir, outdir);
    return;
  }
  char *argv[] = {"gnuplot", "charts.gp", NULL}, why[WHY_LEN];
  if (!run_program(argv, outdir, NULL, why, sizeof why))
    printf("charts: %s/makespan_*.png, utilisation_*.png, bytes_*.png\n", outdir);
  else
    printf("charts: gnuplot failed on %s/charts.gp (%s; run it there to see why)\n", outdir, why);
}

/* The axis of one set and metric, shared by its charts so that bars on two of them compare: logarithmic when the
 * medians span more than a factor LOG_AXIS_SPAN (the fast workloads' bars would be flat lines otherwise), linear from
 * 0 else. */
#define LOG_AXIS_SPAN 30
static void chart_axis(FILE *gp, const struct extent *e, const char *ylabel)
{
  if (!e->nonpositive && e->hi_med > LOG_AXIS_SPAN * e->lo_med) {
    fprintf(gp, "set logscale y\nset yrange [%.6g:%.6g]\nset ylabel '%s, log scale'\n", e->lo_pos / 1.5, e->hi * 1.5,
            ylabel);
    return;
  }
  fprintf(gp, "unset logscale y\n");
  if (e->hi > 0)
    fprintf(gp, "set yrange [0:%.6g]\n", e->hi * 1.08);
  else /* nothing above 0 (no bytes moved on CPU workers): gnuplot cannot scale an empty range */
    fprintf(gp, "set yrange [0:1]\n");
  fprintf(gp, "set ylabel '%s'\n", ylabel);
}

/* One chart of policies [first, last) of a set and metric: a group of bars per workload, a bar per policy (its
 * median) with an error bar from its min to its max. name: the PNG's name without '.png'. */
static void chart_plot(FILE *gp, const char *name, const char *file, const struct plan *pl, int s, const char *metric,
                       int first, int last)
{
  fprintf(gp, "set output '%s.png'\nset title '%s, worker set %s, scale %s", name, metric, pl->sets[s].name,
          report.scale);
  if (first > 0 || last < pl->np)
    fprintf(gp, ", policies %d-%d of %d", first + 1, last, pl->np);
  fprintf(gp, " (bar: median; error bar: min..max over the repeats)'\nplot ");
  /* data columns of policy p: 2 + 3p (median), then its min and max; xtic(1) once, on the first */
  for (int p = first; p < last; p++)
    fprintf(gp, "%s'%s' using %d:%d:%d%s title columnheader(%d)", p > first ? ", \\\n  " : "", p > first ? "" : file,
            2 + 3 * p, 3 + 3 * p, 4 + 3 * p, p > first ? "" : ":xtic(1)", 2 + 3 * p);
  fputc('\n', gp);
}

/* One data file per worker set and metric, and its charts: at most MAX_PER_CHART policies each, the policies split
 * evenly over as few charts as that allows (named <metric>_<set>_pKofN.png when there are several). The script
 * holds only names checked against fixed lists (sets, policies, scale) and relative file names. */
void charts(const char *outdir, const struct plan *pl, struct summary (*sum)[MAX_SETS][MAX_POLICIES])
{
  const char *metric[3] = {"makespan", "utilisation", "bytes"};
  const char *ylabel[3] = {"makespan (s)", "mean worker busy time / makespan", "MB moved between nodes"};
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/charts.gp", outdir);
  FILE *gp = fopen(path, "w");
  if (!gp)
    return;
  int plots = 0, nchart = (pl->np + MAX_PER_CHART - 1) / MAX_PER_CHART;
  int per = nchart ? (pl->np + nchart - 1) / nchart : 0;
  /* bars of one colour each (gnuplot's 8 line types, hence MAX_PER_CHART; the 8th, black, made brown so that its
   * error bar shows), outlined in grey rather than black: a black outline on narrow bars is what turned the old
   * 38-policy charts black; the legend outside the plot */
  fprintf(gp, "# gnuplot script written by " PROG "\nset terminal pngcairo size 1600,800 noenhanced\n"
          "set linetype 8 lc rgb '#a0522d'\n"
          "set style data histograms\nset style histogram errorbars gap 1 lw 1\n"
          "set style fill solid 0.85 border rgb 'gray40'\nset datafile missing '?'\nset key outside right top\n"
          "set xtics rotate by -30\nset grid ytics\nset bmargin 6\n");
  for (int s = 0; s < pl->ns; s++)
    for (int m = 0; m < 3; m++) {
      if (snprintf(path, sizeof path, "%s/%s_%s.dat", outdir, metric[m], pl->sets[s].name) >= (int)sizeof path)
        continue;
      char *file = strrchr(path, '/') + 1;
      for (char *c = file; *c; c++)
        if (*c == ':')
          *c = '_';
      struct extent e;
      if (chart_data(path, pl, s, m, sum, &e) <= 0) /* nothing ran on this set: gnuplot would stop at an empty plot */
        continue;
      chart_axis(gp, &e, ylabel[m]);
      for (int k = 0; k < nchart; k++) {
        int first = k * per, last = first + per < pl->np ? first + per : pl->np, any = 0;
        for (int p = first; p < last; p++)
          any |= e.ran[p] > 0;
        if (!any) /* gnuplot stops at a plot without a single point */
          continue;
        char name[PATH_MAX];
        int base = (int)(strlen(file) - LIT_LEN(".dat"));
        if (nchart == 1)
          snprintf(name, sizeof name, "%.*s", base, file);
        else
          snprintf(name, sizeof name, "%.*s_p%dof%d", base, file, k + 1, nchart);
        chart_plot(gp, name, file, pl, s, metric[m], first, last);
        plots++;
      }
    }
  fclose(gp);
  if (!plots)
    printf("charts: no configuration ran, nothing to draw\n");
  else
    run_gnuplot(outdir);
}
