/* SPDX-License-Identifier: Apache-2.0 */
/* system.c: what starproj-bench asks of the system without a shell (the user's text reaches no shell: trees
 * copied with nftw and read/write, programs run with posix_spawnp and an argument vector), its temporary folder
 * removed on every way out, and SIGINT/SIGTERM passed on to the process it waits for. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

/* the bytes a file copy moves at a time, and the file descriptors a tree walk (nftw) may hold open */
#define COPY_BUFFER (1 << 16)
#define NFTW_FDS 16
/* the arguments of starpu_fxt_tool before its trace files: the program and -i */
#define FXT_ARGS 2

/* ---- signals and the driver's children ---- */

/* Ctrl-C or SIGTERM: the driver stops after the running configuration, writing the charts of what ran and removing
 * its temporary folder; that configuration's process stops too (Ctrl-C reaches its process group; a signal sent to the
 * driver alone is passed on). */
volatile sig_atomic_t interrupted;
static volatile sig_atomic_t running_child; /* the pid of the process the driver waits for; 0: none */

static void on_interrupt(int sig)
{
  int e = errno; /* kill may set it under the code it interrupts */
  interrupted = 1;
  if (running_child > 0)
    kill((pid_t)running_child, sig);
  errno = e;
}

void catch_interrupts(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* the interrupt signals held (old: the mask before), so that a child's pid is known to on_interrupt before either
 * comes in */
static void hold_interrupts(sigset_t *old)
{
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, old);
}

/* fork for a child of the driver; the child stops at the interrupt signals again, as the exec'd program would */
pid_t fork_child(void)
{
  sigset_t old;
  fflush(NULL);
  hold_interrupts(&old);
  pid_t pid = fork();
  if (pid == 0) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
  }
  else if (pid > 0)
    running_child = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  return pid;
}

/* waits for the driver's child through signals; -1 when it cannot */
int wait_child(pid_t pid, int *status)
{
  int rc;
  while ((rc = waitpid(pid, status, 0)) < 0 && errno == EINTR)
    ;
  running_child = 0;
  return rc;
}

/* ---- files and programs: the user's text never goes through a shell ---- */

int have_program(const char *name)
{
  const char *path = getenv("PATH");
  if (!path)
    return 0;
  char *copy = strdup(path), *save = NULL;
  int found = 0;
  for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", *d ? d : ".", name);
    found = access(p, X_OK) == 0;
  }
  free(copy);
  return found;
}

/* nftw's callback has no argument of its own: the copy in progress */
static struct {
  size_t from_len; /* length of the source root: the rest of a path is its place in the tree */
  const char *to;
  char failed[WHY_LEN];
} copying;

/* Copies a regular file's bytes into a new file dst with the given mode. */
static int copy_file(const char *src, const char *dst, mode_t mode)
{
  int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (in < 0)
    return -1;
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777);
  if (out < 0) {
    int e = errno;
    close(in);
    errno = e;
    return -1;
  }
  char buf[COPY_BUFFER];
  ssize_t n;
  int rc = 0;
  while (!rc && (n = read(in, buf, sizeof buf)) != 0) {
    if (n < 0) {
      rc = errno == EINTR ? 0 : -1;
      continue;
    }
    for (ssize_t done = 0, w; done < n && !rc; done += w > 0 ? w : 0)
      if ((w = write(out, buf + done, (size_t)(n - done))) < 0 && errno != EINTR)
        rc = -1;
  }
  int e = errno;
  if (close(out) && !rc)
    rc = -1, e = errno;
  close(in);
  errno = e;
  return rc;
}

static int copy_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)ftw;
  char dst[PATH_MAX], target[PATH_MAX];
  int rc = -1;
  ssize_t n;
  if (snprintf(dst, sizeof dst, "%s%s", copying.to, path + copying.from_len) >= (int)sizeof dst)
    errno = ENAMETOOLONG;
  else if (flag == FTW_D) /* owner access kept: the files inside must be written */
    rc = mkdir(dst, (st->st_mode & 07777) | 0700);
  else if (flag == FTW_F && S_ISREG(st->st_mode))
    rc = copy_file(path, dst, st->st_mode);
  else if (flag == FTW_SL && (n = readlink(path, target, sizeof target - 1)) >= 0) {
    target[n] = 0;
    rc = symlink(target, dst);
  }
  else if (flag == FTW_F) /* a device, pipe or socket: nothing a STARPU_HOME holds, and reading a pipe would wait */
    errno = ENOTSUP;
  else if (flag != FTW_SL)
    errno = EACCES; /* FTW_DNR, FTW_NS: unreadable */
  if (rc)
    snprintf(copying.failed, sizeof copying.failed, "%s: %s", path, strerror(errno));
  return rc;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* Removes a tree (symbolic links themselves, not what they point to). */
void remove_tree(const char *path)
{
  nftw(path, remove_entry, NFTW_FDS, FTW_DEPTH | FTW_PHYS);
}

/* The driver's temporary folder (the STARPU_HOMEs), and the output folder while this run made it and wrote nothing
 * there: removed on every way out of the driver (atexit: main's returns and CHECK's exit; SIGINT and SIGTERM end the
 * run through the interrupted flag). Children leave by exec or _exit and never remove them. */
static char temp_base[PATH_MAX];
static char made_outdir[PATH_MAX];

void remove_leftovers(void)
{
  if (temp_base[0])
    remove_tree(temp_base);
  if (made_outdir[0])
    rmdir(made_outdir); /* only when empty */
  temp_base[0] = made_outdir[0] = 0;
}

/* the output folder holds results now: kept whatever happens */
void keep_outdir(void)
{
  made_outdir[0] = 0;
}

/* $TMPDIR/starproj-bench-XXXXXX (or under /tmp); NULL with a message when it cannot be made */
const char *make_temp_base(void)
{
  const char *tmpdir = getenv("TMPDIR");
  tmpdir = tmpdir && *tmpdir ? tmpdir : "/tmp";
  char tmpl[PATH_MAX];
  if (snprintf(tmpl, sizeof tmpl, "%s/starproj-bench-XXXXXX", tmpdir) >= (int)sizeof tmpl)
    errno = ENAMETOOLONG;
  else if (mkdtemp(tmpl)) {
    memcpy(temp_base, tmpl, sizeof temp_base);
    return temp_base;
  }
  fprintf(stderr, PROG ": cannot make a temporary folder in %s: %s\n", tmpdir, strerror(errno));
  return NULL;
}

/* The output place, before any work: created, or an existing folder in which a file can be made (a file made and
 * removed again: modes, read-only file systems and root all answer). 0, or a message naming it and exit status 2. */
int check_output(const char *outdir)
{
  struct stat st;
  char probe[PATH_MAX];
  if (!mkdir(outdir, 0755))
    snprintf(made_outdir, sizeof made_outdir, "%s", outdir);
  else if (errno != EEXIST) {
    fprintf(stderr, PROG ": --output '%s': cannot create the folder: %s\n", outdir, strerror(errno));
    return 2;
  }
  else if (stat(outdir, &st) || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, PROG ": --output '%s': exists and is not a folder\n", outdir);
    return 2;
  }
  int fd = -1;
  if (snprintf(probe, sizeof probe, "%s/.starproj-bench-XXXXXX", outdir) >= (int)sizeof probe)
    errno = ENAMETOOLONG;
  else
    fd = mkstemp(probe);
  if (fd < 0) {
    fprintf(stderr, PROG ": --output '%s': cannot write in the folder: %s\n", outdir, strerror(errno));
    remove_leftovers();
    return 2;
  }
  close(fd);
  unlink(probe);
  return 0;
}

/* Makes to (which must not exist) a copy of the tree from: folders, regular files and symbolic links, as 'cp -R'
 * did, without a shell. 0, or -1 with the reason in why and nothing left at to. */
int copy_tree(const char *from, const char *to, char *why, size_t n)
{
  copying.from_len = strlen(from);
  copying.to = to;
  copying.failed[0] = 0;
  struct stat st;
  if (!lstat(to, &st)) {
    snprintf(why, n, "%s exists", to);
    return -1;
  }
  if (!nftw(from, copy_entry, NFTW_FDS, FTW_PHYS))
    return 0;
  if (!copying.failed[0])
    snprintf(copying.failed, sizeof copying.failed, "%s: %s", from, strerror(errno));
  snprintf(why, n, "%s", copying.failed);
  remove_tree(to);
  return -1;
}

/* Runs a program found on PATH with the argument vector argv: no shell, so every argument reaches it as given. It
 * runs in folder dir (the caller's when NULL) with stdout and stderr into the file log, or stderr to /dev/null when
 * log is NULL (log is opened before the change of folder). 0 when it exited 0; else -1 with the reason in why. */
int run_program(char *const argv[], const char *dir, const char *log, char *why, size_t n)
{
  extern char **environ;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  int rc;
  if (log) {
    rc = posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!rc)
      rc = posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  }
  else
    rc = posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  if (!rc && dir)
    rc = posix_spawn_file_actions_addchdir_np(&fa, dir);
  /* the child starts with the signal mask of before and the default actions: interrupted, it stops with us */
  posix_spawnattr_t attr;
  sigset_t old, dfl;
  posix_spawnattr_init(&attr);
  hold_interrupts(&old);
  sigemptyset(&dfl);
  sigaddset(&dfl, SIGINT);
  sigaddset(&dfl, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &old);
  posix_spawnattr_setsigdefault(&attr, &dfl);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  if (!rc)
    rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
  if (!rc)
    running_child = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc) {
    snprintf(why, n, "cannot run %s: %s", argv[0], strerror(rc));
    return -1;
  }
  int status;
  if (wait_child(pid, &status) < 0) {
    snprintf(why, n, "waiting for %s: %s", argv[0], strerror(errno));
    return -1;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return 0;
  if (WIFEXITED(status))
    snprintf(why, n, "%s exited with status %d", argv[0], WEXITSTATUS(status));
  else
    snprintf(why, n, "%s was killed by signal %d", argv[0], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return -1;
}

/* copies the bus calibration (not the codelet models) of the probe's STARPU_HOME, so that each configuration skips
 * StarPU's bus benchmark without inheriting any performance model */
void copy_bus_calibration(const char *from, const char *to)
{
  char src[PATH_MAX], dir[PATH_MAX], sampling[PATH_MAX], dst[PATH_MAX], why[WHY_LEN];
  struct stat st;
  if (snprintf(src, sizeof src, "%s/.starpu/sampling/bus", from) >= (int)sizeof src || stat(src, &st) ||
      !S_ISDIR(st.st_mode))
    return;
  if (snprintf(dir, sizeof dir, "%s/.starpu", to) >= (int)sizeof dir ||
      snprintf(sampling, sizeof sampling, "%s/sampling", dir) >= (int)sizeof sampling ||
      snprintf(dst, sizeof dst, "%s/bus", sampling) >= (int)sizeof dst)
    snprintf(why, sizeof why, "%s: name too long", to);
  else {
    mkdir(dir, 0700);
    mkdir(sampling, 0700);
    if (!copy_tree(src, dst, why, sizeof why))
      return;
  }
  /* without it the configuration calibrates the bus itself: slower, no less right */
  fprintf(stderr, PROG ": bus calibration not copied (%s)\n", why);
}

/* keeps a configuration's STARPU_HOME as DIR/homes/<workload>_<set>_<policy> */
void keep_home(const char *outdir, const char *home, const char *wname, const char *set, const char *policy)
{
  char kept[PATH_MAX], why[WHY_LEN];
  snprintf(kept, sizeof kept, "%s/homes", outdir);
  mkdir(kept, 0755);
  /* a cut name would name another tree, which the removal below must not touch */
  if (snprintf(kept, sizeof kept, "%s/homes/%s_%s_%s", outdir, wname, set, policy) >= (int)sizeof kept) {
    printf("        could not keep %s: the name under %s/homes is too long\n", home, outdir);
    return;
  }
  remove_tree(kept);
  if (copy_tree(home, kept, why, sizeof why))
    printf("        could not keep %s: %s\n", home, why);
}

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Converts a configuration's FxT traces (tdir ends with '/') with starpu_fxt_tool run in that folder, where its
 * output files land, given the trace files by name. */
void convert_traces(const char *tdir)
{
  if (!have_program("starpu_fxt_tool")) {
    printf("        trace in %s (starpu_fxt_tool not found: not converted)\n", tdir);
    return;
  }
  DIR *d = opendir(tdir);
  char **argv = NULL, log[PATH_MAX], why[WHY_LEN];
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (STARTS_WITH(e->d_name, "prof_file_")) {
      /* starpu_fxt_tool -i, the files so far and this one (from argv[FXT_ARGS] on), the NULL */
      argv = realloc(argv, (size_t)(FXT_ARGS + (n + 1) + 1) * sizeof *argv);
      argv[FXT_ARGS + n++] = strdup(e->d_name);
    }
  if (d)
    closedir(d);
  if (!n) {
    printf("        no trace file in %s: nothing to convert\n", tdir);
    return;
  }
  qsort(argv + FXT_ARGS, (size_t)n, sizeof *argv, by_name);
  argv[0] = "starpu_fxt_tool", argv[1] = "-i", argv[FXT_ARGS + n] = NULL;
  snprintf(log, sizeof log, "%sfxt_tool.log", tdir);
  if (run_program(argv, tdir, log, why, sizeof why))
    printf("        starpu_fxt_tool failed (%s): see %sfxt_tool.log\n", why, tdir);
  for (int i = 0; i < n; i++)
    free(argv[FXT_ARGS + i]);
  free(argv);
}

