/* SPDX-License-Identifier: Apache-2.0 */
/* atomic.c: output written atomically through temporaries, their registry, and what dead processes left behind. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "starproj_io.h"
#include "../core/shared.h"
#include "files.h"

/* ---- the registry of temporaries ------------------------------------------------------------------------- */
/* Files being written, for sproj_io_remove_temporaries, which a signal handler may call at any moment, on any
 * thread, also while this thread is in the middle of changing an entry. So: a fixed array (no allocation), and
 * each entry owned through a lock-free atomic state. A writer claims a free entry (FREE -> FILLING), copies the
 * path and publishes it (READY); the handler takes a READY entry (-> REMOVING), unlinks it and puts it back; a
 * writer frees only a READY entry, waiting while a handler on another thread holds it. Neither side ever sees a
 * path being copied.
 * An entry may also carry the data file of a raw pair, whose header is the entry's temporary (has_data: 1 once
 * the file is this writer's; the name is copied before, while the handler does not read it). The handler removes
 * that file only when it has just removed the header's temporary itself: then the header can no longer be renamed
 * into place. Once it has been, the temporary's name is gone (it has the pid and a number no other write of this
 * process takes), the unlink fails, and the data of the pair in place stays. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the registry of temporaries needs lock-free atomic ints");
#define MAX_TEMPORARIES 64
#define TEMP_PATH_MAX 4096
enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_READY, SLOT_REMOVING };
static struct {
  atomic_int state;
  atomic_int has_data;
  char path[TEMP_PATH_MAX];
  char data[TEMP_PATH_MAX];
} temporaries[MAX_TEMPORARIES];

/* The entry now holding path, or -1 when the path is too long or every entry is taken (that file is then not
 * removed by a signal handler; the writes themselves go on). */
static int registry_add(const char *path)
{
  size_t len = strlen(path);
  if (len >= TEMP_PATH_MAX)
    return -1;
  for (int i = 0; i < MAX_TEMPORARIES; i++) {
    int expected = SLOT_FREE;
    if (atomic_compare_exchange_strong(&temporaries[i].state, &expected, SLOT_FILLING)) {
      memcpy(temporaries[i].path, path, len + 1);
      atomic_store(&temporaries[i].has_data, 0);
      atomic_store(&temporaries[i].state, SLOT_READY);
      return i;
    }
  }
  return -1;
}

static void registry_drop(int slot)
{
  if (slot < 0)
    return;
  for (;;) {
    int expected = SLOT_READY;
    if (atomic_compare_exchange_weak(&temporaries[slot].state, &expected, SLOT_FREE))
      return;
    if (expected == SLOT_REMOVING)
      sched_yield(); /* a handler on another thread is unlinking it: one system call */
    else if (expected != SLOT_READY)
      return; /* not ours (cannot happen) */
  }
}

void sproj_io_remove_temporaries(void)
{
  int saved = errno; /* a handler must leave errno as it found it */
  for (int i = 0; i < MAX_TEMPORARIES; i++) {
    int expected = SLOT_READY;
    if (atomic_compare_exchange_strong(&temporaries[i].state, &expected, SLOT_REMOVING)) {
      if (unlink(temporaries[i].path) == 0 && atomic_load(&temporaries[i].has_data))
        unlink(temporaries[i].data);
      atomic_store(&temporaries[i].state, SLOT_READY);
    }
  }
  errno = saved;
}

/* ---- leftovers of dead processes ----------------------------------------------------------------------------- */
int sproj_pid_suffix(const char *name, const char *prefix, long *pid)
{
  size_t len = strlen(prefix);
  if (strncmp(name, prefix, len) != 0)
    return 0;
  const char *s = name + len;
  long p = 0;
  int digits = 0;
  for (; *s >= '0' && *s <= '9'; s++, digits++) {
    if (digits == 10)
      return 0;
    p = 10 * p + (*s - '0');
  }
  if (digits == 0 || *s++ != '-')
    return 0;
  for (digits = 0; *s >= '0' && *s <= '9'; s++)
    if (++digits > 10)
      return 0;
  if (digits == 0 || *s)
    return 0;
  *pid = p;
  return 1;
}

int sproj_pid_dead(long pid)
{
  if (pid <= 0) /* kill(0, ...) or kill(-1, ...) would ask about groups: never call a name like that dead */
    return 0;
  if (pid > INT_MAX)
    return 1; /* no process can have it */
  return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

char *sproj_folder_of(const char *path, const char **name)
{
  const char *slash = strrchr(path, '/');
  *name = slash ? slash + 1 : path;
  if (!slash)
    return strdup(".");
  return slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
}

void sproj_remove_entry(int folder_fd, const char *name)
{
  struct stat st;
  if (fstatat(folder_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
    unlinkat(folder_fd, name, 0);
}

void sproj_remove_stale_temporaries(const char *path)
{
  const char *name;
  char *folder = sproj_folder_of(path, &name);
  char *prefix = sproj_str_printf(".%s.tmp-", name);
  DIR *d = folder && prefix ? opendir(folder) : NULL;
  struct dirent *e;
  long pid;
  while (d && (e = readdir(d)))
    if (sproj_pid_suffix(e->d_name, prefix, &pid) && pid != (long)getpid() && sproj_pid_dead(pid))
      sproj_remove_entry(dirfd(d), e->d_name);
  if (d)
    closedir(d);
  free(prefix);
  free(folder);
}

/* ---- atomic output ------------------------------------------------------------------------------------------- */
static atomic_uint tmp_counter;

unsigned sproj_out_number(void)
{
  return atomic_fetch_add(&tmp_counter, 1u);
}

/* Creates path, a name of this process's own (with its pid), exclusively. It is registered before it exists, so
 * that no moment has the file without its entry. (Any other name is registered only once the file is ours: a
 * handler must never remove the file that was there when the creation failed. See sproj_out_create.) */
static int out_create(const char *func, struct sproj_outfile *out, const char *path)
{
  out->slot = registry_add(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    int err = errno;
    sproj_out_unregister(out);
    if (err == EEXIST)
      return SPROJ_OUT_EXISTS;
    return sproj_fail(SPROJ_ERR_IO, func, "cannot create a file next to '%s': %s", out->final_path, strerror(err));
  }
  out->fp = fdopen(fd, "wb");
  if (!out->fp) {
    int err = errno;
    close(fd);
    sproj_out_unregister(out);
    unlink(path);
    return sproj_fail(SPROJ_ERR_IO, func, "cannot open '%s': %s", path, strerror(err));
  }
  return SPROJ_OK;
}

int sproj_out_open(const char *func, const char *path, struct sproj_outfile *out)
{
  memset(out, 0, sizeof *out);
  out->slot = -1;
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  int dirlen = slash ? (int)(slash - path) + 1 : 0;
  if (!*name)
    return sproj_fail(SPROJ_ERR_INVALID, func, "'%s' names a folder, not a file", path);
  out->final_path = strdup(path);
  if (!out->final_path)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  /* what writes of the same target killed before they could clean up left here */
  sproj_remove_stale_temporaries(path);
  /* a hidden name in the same folder, so that the rename stays on one file system and is atomic */
  for (int attempt = 0; attempt < SPROJ_OUT_ATTEMPTS; attempt++) {
    unsigned n = sproj_out_number();
    char *tmp = sproj_str_printf("%.*s.%s.tmp-%ld-%u", dirlen, path, name, (long)getpid(), n);
    if (!tmp) {
      sproj_out_discard(out);
      return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    }
    int ret = out_create(func, out, tmp);
    if (ret == SPROJ_OK) {
      out->tmp_path = tmp;
      return SPROJ_OK;
    }
    free(tmp);
    if (ret != SPROJ_OUT_EXISTS) {
      sproj_out_discard(out);
      return ret;
    }
  }
  sproj_out_discard(out);
  return sproj_fail(SPROJ_ERR_IO, func, "cannot find a free temporary name next to '%s'", path);
}

int sproj_out_create(const char *func, const char *path, struct sproj_outfile *head, struct sproj_outfile *out)
{
  memset(out, 0, sizeof *out);
  out->slot = -1;
  out->final_path = strdup(path);
  out->tmp_path = strdup(path);
  if (!out->final_path || !out->tmp_path) {
    sproj_out_discard(out);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  /* the name goes into head's entry before the file exists, and counts only once the file is ours: a handler
   * must never remove the file that was there when the creation failed */
  int slot = head->slot;
  size_t len = strlen(path);
  if (slot >= 0 && len < TEMP_PATH_MAX)
    memcpy(temporaries[slot].data, path, len + 1);
  /* a handler on this thread must find the file either not there yet or counted: signals wait for the two steps
   * (a handler that came between them left the new file, a name nothing refers to, which check_io's interrupted
   * writer caught under load). A process signal that another thread takes in that instant may still leave it: the
   * next write of the base removes it (raw_cleanup). */
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &saved);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  int err = errno;
  if (fd >= 0 && slot >= 0 && len < TEMP_PATH_MAX)
    atomic_store(&temporaries[slot].has_data, 1);
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  errno = err;
  out->fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!out->fp) {
    int err = errno;
    if (fd >= 0) {
      close(fd);
      unlink(path);
    }
    if (slot >= 0)
      atomic_store(&temporaries[slot].has_data, 0);
    free(out->tmp_path); /* removed above if it was ours; not ours to remove otherwise */
    out->tmp_path = NULL;
    sproj_out_discard(out);
    if (fd < 0 && err == EEXIST)
      return SPROJ_OUT_EXISTS;
    return sproj_fail(SPROJ_ERR_IO, func, "cannot create '%s': %s", path, strerror(err));
  }
  return SPROJ_OK;
}

int sproj_out_write(const char *func, struct sproj_outfile *out, const void *buf, size_t bytes)
{
  const char *p = buf;
  while (bytes > 0) {
    size_t piece = bytes < SPROJ_IO_PIECE_BYTES ? bytes : SPROJ_IO_PIECE_BYTES;
    if (fwrite(p, 1, piece, out->fp) != piece)
      return sproj_fail(SPROJ_ERR_IO, func, "cannot write '%s': %s", out->final_path, strerror(errno));
    p += piece;
    bytes -= piece;
  }
  return SPROJ_OK;
}

int sproj_out_close(const char *func, struct sproj_outfile *out)
{
  FILE *fp = out->fp;
  out->fp = NULL;
  int failed = fflush(fp) != 0;
  int err = errno;
  /* the data must be on disk before the rename makes the file visible under its name */
  if (!failed && fsync(fileno(fp)) != 0 && errno != EINVAL && errno != EROFS) {
    failed = 1;
    err = errno;
  }
  if (fclose(fp) != 0 && !failed) {
    failed = 1;
    err = errno;
  }
  if (failed)
    return sproj_fail(SPROJ_ERR_IO, func, "cannot write '%s': %s", out->final_path, strerror(err));
  return SPROJ_OK;
}

void sproj_out_unregister(struct sproj_outfile *out)
{
  registry_drop(out->slot);
  out->slot = -1;
}

int sproj_out_rename(const char *func, struct sproj_outfile *out)
{
  /* still in the registry during the rename: a handler just before it removes the temporary (and the rename
   * fails), one just after finds its name gone (no other file takes a name with this pid and number) */
  if (rename(out->tmp_path, out->final_path) != 0)
    return sproj_fail(SPROJ_ERR_IO, func, "cannot rename the written file to '%s': %s", out->final_path,
                      strerror(errno));
  sproj_out_unregister(out);
  free(out->tmp_path);
  out->tmp_path = NULL;
  return SPROJ_OK;
}

void sproj_out_keep(struct sproj_outfile *out)
{
  sproj_out_unregister(out);
  free(out->tmp_path);
  out->tmp_path = NULL;
}

void sproj_out_discard(struct sproj_outfile *out)
{
  if (out->fp)
    fclose(out->fp);
  out->fp = NULL;
  /* out of the registry before the unlink: once the name is free, a file another writer makes under it is not
   * ours for a handler to remove (a handler in between leaves this one, which the next write removes) */
  sproj_out_unregister(out);
  if (out->tmp_path) {
    unlink(out->tmp_path);
    free(out->tmp_path);
    out->tmp_path = NULL;
  }
  free(out->final_path);
  out->final_path = NULL;
}
