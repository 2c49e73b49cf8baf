/* SPDX-License-Identifier: Apache-2.0 */
/* io.c: inputs opened without blocking, atomic output files and the registry of their temporaries, and sinograms
 * and listmode as raw data with a "key = value" text header. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "starproj_io.h"
#include "../core/shared.h"
#include "files.h"

int sproj_host_little_endian(void)
{
  const uint16_t one = 1;
  unsigned char first;
  memcpy(&first, &one, 1);
  return first == 1;
}

/* ---- text ------------------------------------------------------------------------------------------------ */
static char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_printf(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (len < 0)
    return NULL;
  char *s = malloc((size_t)len + 1);
  if (!s)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(s, (size_t)len + 1, fmt, ap);
  va_end(ap);
  return s;
}

/* ---- input ------------------------------------------------------------------------------------------------ */
static const char *file_kind(mode_t mode)
{
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a file";
}

int sproj_in_open(const char *func, const char *path, int *fd, uint64_t *size)
{
  /* stat first, so that a device is refused without being opened (opening some has effects); then open without
   * blocking (a FIFO's open() would wait for a writer) and look again at what was opened, which is what counts */
  struct stat st;
  if (stat(path, &st) != 0)
    return sproj_fail(SPROJ_ERR_IO, func, "cannot open '%s': %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return sproj_fail(SPROJ_ERR_IO, func, "'%s' is %s, not a regular file", path, file_kind(st.st_mode));
  int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (f < 0)
    return sproj_fail(SPROJ_ERR_IO, func, "cannot open '%s': %s", path, strerror(errno));
  if (fstat(f, &st) != 0) {
    int err = errno;
    close(f);
    return sproj_fail(SPROJ_ERR_IO, func, "cannot read '%s': %s", path, strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(f);
    return sproj_fail(SPROJ_ERR_IO, func, "'%s' is %s, not a regular file", path, file_kind(st.st_mode));
  }
  /* O_NONBLOCK was for open() only; reads of a regular file should wait for the disk as usual */
  int flags = fcntl(f, F_GETFL);
  if (flags >= 0)
    fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
  *fd = f;
  *size = (uint64_t)st.st_size;
  return SPROJ_OK;
}

int sproj_in_read(const char *func, const char *path, int fd, uint64_t offset, void *buf, size_t bytes)
{
  char *p = buf;
  size_t done = 0;
  while (done < bytes) {
    size_t piece = bytes - done < ((size_t)1 << 26) ? bytes - done : ((size_t)1 << 26);
    ssize_t got = pread(fd, p + done, piece, (off_t)(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return sproj_fail(SPROJ_ERR_IO, func, "cannot read '%s': %s", path, strerror(errno));
    if (got == 0)
      return sproj_fail(SPROJ_ERR_IO, func, "cannot read '%s': it ended after %" PRIu64 " bytes (shorter than it "
                        "was when opened)", path, offset + done);
    done += (size_t)got;
  }
  return SPROJ_OK;
}

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

/* The folder of path ("." when it has none) and its last component. */
static char *folder_of(const char *path, const char **name)
{
  const char *slash = strrchr(path, '/');
  *name = slash ? slash + 1 : path;
  if (!slash)
    return strdup(".");
  return slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
}

/* Removes the regular file name in the folder d, if it still is one. */
static void remove_entry(DIR *d, const char *name)
{
  struct stat st;
  if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
    unlinkat(dirfd(d), name, 0);
}

void sproj_remove_stale_temporaries(const char *path)
{
  const char *name;
  char *folder = folder_of(path, &name);
  char *prefix = str_printf(".%s.tmp-", name);
  DIR *d = folder && prefix ? opendir(folder) : NULL;
  struct dirent *e;
  long pid;
  while (d && (e = readdir(d)))
    if (sproj_pid_suffix(e->d_name, prefix, &pid) && pid != (long)getpid() && sproj_pid_dead(pid))
      remove_entry(d, e->d_name);
  if (d)
    closedir(d);
  free(prefix);
  free(folder);
}

/* ---- atomic output ------------------------------------------------------------------------------------------- */
static atomic_uint tmp_counter;

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
  for (int attempt = 0; attempt < 100; attempt++) {
    unsigned n = atomic_fetch_add(&tmp_counter, 1u);
    char *tmp = str_printf("%.*s.%s.tmp-%ld-%u", dirlen, path, name, (long)getpid(), n);
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
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0 && slot >= 0 && len < TEMP_PATH_MAX)
    atomic_store(&temporaries[slot].has_data, 1);
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
    size_t piece = bytes < ((size_t)1 << 26) ? bytes : ((size_t)1 << 26);
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

/* ---- raw data: names and headers ----------------------------------------------------------------------- */
#define RAW_FORMAT "starproj-raw 1"
#define MAX_HEADER_BYTES 65536
#define MAX_KEYS 64

static int valid_name(const char *s, size_t cap, int allow_empty)
{
  size_t len = strnlen(s, cap);
  if (len == cap || (len == 0 && !allow_empty))
    return 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.' || c == '+'))
      return 0;
  }
  return 1;
}

/* <base>.hdr and <base>.raw from a base given with or without ".hdr". */
static int raw_paths(const char *func, const char *base, char **hdr, char **raw)
{
  size_t len = strlen(base);
  if (len >= 4 && strcmp(base + len - 4, ".hdr") == 0)
    len -= 4;
  if (len == 0 || base[len - 1] == '/')
    return sproj_fail(SPROJ_ERR_INVALID, func, "'%s' names no file", base);
  *hdr = str_printf("%.*s.hdr", (int)len, base);
  *raw = str_printf("%.*s.raw", (int)len, base);
  if (!*hdr || !*raw) {
    free(*hdr);
    free(*raw);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  return SPROJ_OK;
}

/* A growing text buffer for a header. */
struct text {
  char *s;
  size_t len, cap;
  int failed;
};

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(struct text *t, const char *fmt, ...)
{
  if (t->failed)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    t->failed = 1;
    return;
  }
  if (t->len + (size_t)n + 1 > t->cap) {
    size_t cap = 2 * (t->len + (size_t)n + 1);
    char *s = realloc(t->s, cap);
    if (!s) {
      t->failed = 1;
      return;
    }
    t->s = s;
    t->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

/* Header lines common to both kinds; raw_write adds data_file once it has chosen the data file's name. */
static void header_start(struct text *t, const char *content, const char *type, int ndims, const int64_t *shape)
{
  text_add(t, "# starproj raw data header: key = value; the data file holds the numbers in C order (last axis\n"
              "# fastest), without padding, in the byte order given here\n");
  text_add(t, "format = %s\ncontent = %s\ndata_type = %s\nbyte_order = %s\nshape =", RAW_FORMAT, content, type,
           sproj_host_little_endian() ? "little-endian" : "big-endian");
  for (int k = 0; k < ndims; k++)
    text_add(t, " %" PRId64, shape[k]);
  text_add(t, "\n");
}

static void header_tof(struct text *t, const char *scanner, int num_tof_bins, float tof_bin_width)
{
  if (scanner[0])
    text_add(t, "scanner = %s\n", scanner);
  text_add(t, "num_tof_bins = %d\ntof_bin_width = %.9g\n", num_tof_bins, (double)tof_bin_width);
}

/* Writing a pair. The header names its data file (data_file), and a rewrite never touches the data of the pair it
 * replaces: the data goes to a new file, <base>.raw when that name is free, else <base>.raw.<pid>-<n>; the header
 * to ".<base>.hdr.tmp-<pid>-<n>"; both are synced; then one rename puts the new header in place of the old one.
 * Before that rename the folder holds the old pair (plus a file nothing names), after it the new pair (plus the
 * old data, which nothing names any more and which is removed then). */
typedef int (*fill_fn)(const void *ctx, int64_t first, int64_t count, void *buf);

static char *old_data_file(const char *hdr_path);

/* After a write of base (hdr_name and raw_name: "<base>.hdr" and "<base>.raw" without their folder) whose data is
 * new_data: removes what no header names any more: old_data (the replaced pair's), unless it is not a name this
 * writer gives; the data and temporaries of writes killed before they could clean up, i.e. those with the pid of a
 * process that no longer exists; and a <base>.raw the header does not name, once no other write of the base is
 * under way (its header's temporary would be there: it is made before the data file). Best effort. */
static void raw_cleanup(const char *hdr_path, const char *new_data, const char *old_data)
{
  const char *hdr_name, *new_name = strrchr(new_data, '/') ? strrchr(new_data, '/') + 1 : new_data;
  char *folder = folder_of(hdr_path, &hdr_name);
  size_t base_len = strlen(hdr_name) - 4;
  char *raw_name = str_printf("%.*s.raw", (int)base_len, hdr_name);
  char *raw_numbered = str_printf("%.*s.raw.", (int)base_len, hdr_name);
  char *hdr_tmp = str_printf(".%s.tmp-", hdr_name);
  char *raw_tmp = str_printf(".%.*s.raw.tmp-", (int)base_len, hdr_name); /* earlier versions wrote data so */
  DIR *d = folder && raw_name && raw_numbered && hdr_tmp && raw_tmp ? opendir(folder) : NULL;
  if (d) {
    int busy = 0;
    long pid;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (sproj_pid_suffix(e->d_name, hdr_tmp, &pid) || sproj_pid_suffix(e->d_name, raw_tmp, &pid)) {
        if (sproj_pid_dead(pid))
          remove_entry(d, e->d_name);
        else
          busy = 1;
      } else if (sproj_pid_suffix(e->d_name, raw_numbered, &pid) && strcmp(e->d_name, new_name) != 0 &&
                 sproj_pid_dead(pid)) {
        remove_entry(d, e->d_name);
      }
    }
    const char *old_name = old_data ? old_data : "";
    long ignored;
    if (strcmp(old_name, new_name) != 0 &&
        (strcmp(old_name, raw_name) == 0 || sproj_pid_suffix(old_name, raw_numbered, &ignored)))
      remove_entry(d, old_name);
    if (!busy && strcmp(raw_name, new_name) != 0)
      remove_entry(d, raw_name);
    closedir(d);
  }
  free(raw_name);
  free(raw_numbered);
  free(hdr_tmp);
  free(raw_tmp);
  free(folder);
}

/* Writes num_items items of item_bytes (from ctx, or through fill piece by piece) and header (to which the line
 * data_file is added) as the pair hdr_path / raw_path, as described above. */
static int raw_write(const char *func, const char *hdr_path, const char *raw_path, struct text *header,
                     fill_fn fill, const void *ctx, int64_t num_items, size_t item_bytes)
{
  char *old_data = old_data_file(hdr_path);
  struct sproj_outfile data, head;
  /* the header's temporary first: while it exists, other writes of the base know that this one is under way */
  int ret = sproj_out_open(func, hdr_path, &head);
  if (ret) {
    free(old_data);
    return ret;
  }
  ret = sproj_out_create(func, raw_path, &head, &data);
  for (int attempt = 0; ret == SPROJ_OUT_EXISTS && attempt < 100; attempt++) {
    char *name = str_printf("%s.%ld-%u", raw_path, (long)getpid(), atomic_fetch_add(&tmp_counter, 1u));
    ret = name ? sproj_out_create(func, name, &head, &data) : sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    free(name);
  }
  if (ret == SPROJ_OUT_EXISTS)
    ret = sproj_fail(SPROJ_ERR_IO, func, "cannot find a free name for the data next to '%s'", raw_path);
  if (ret) {
    sproj_out_discard(&head);
    free(old_data);
    return ret;
  }
  /* which file is ours: sproj_io_remove_temporaries may remove it, and another could take its name */
  struct stat created;
  if (fstat(fileno(data.fp), &created) != 0) {
    ret = sproj_fail(SPROJ_ERR_IO, func, "cannot write '%s': %s", data.final_path, strerror(errno));
    sproj_out_keep(&data); /* which file it is cannot be told: not removed */
  }
  const char *data_name = strrchr(data.final_path, '/') ? strrchr(data.final_path, '/') + 1 : data.final_path;
  text_add(header, "data_file = %s\n", data_name);
  if (header->failed)
    ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  const int64_t per_piece = 1 << 16;
  void *buf = ret ? NULL : malloc((size_t)per_piece * item_bytes);
  if (!ret && !buf)
    ret = sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  for (int64_t first = 0; !ret && first < num_items; first += per_piece) {
    int64_t count = num_items - first < per_piece ? num_items - first : per_piece;
    const void *src = buf;
    if (fill)
      fill(ctx, first, count, buf);
    else
      src = (const char *)ctx + (size_t)first * item_bytes;
    ret = sproj_out_write(func, &data, src, (size_t)count * item_bytes);
  }
  free(buf);
  if (!ret)
    ret = sproj_out_write(func, &head, header->s, header->len);
  if (!ret)
    ret = sproj_out_close(func, &data);
  if (!ret)
    ret = sproj_out_close(func, &head);
  /* the one step that replaces the pair. The data is registered with the header's temporary: a handler before
   * the rename removes both (and the rename fails), one after it finds the temporary gone and leaves the pair */
  if (!ret)
    ret = sproj_out_rename(func, &head);
  if (!ret) {
    sproj_out_keep(&data);
    raw_cleanup(hdr_path, data.final_path, old_data);
  }
  /* on failure the new data goes, the old pair stays as it was; unless a handler removed the data already and
   * another file has its name now, which is not ours to remove */
  struct stat now;
  if (data.tmp_path &&
      (stat(data.tmp_path, &now) != 0 || now.st_dev != created.st_dev || now.st_ino != created.st_ino))
    sproj_out_keep(&data);
  sproj_out_discard(&data);
  sproj_out_discard(&head);
  free(old_data);
  return ret;
}

/* ---- raw data: reading ----------------------------------------------------------------------------------- */
struct header {
  char *text;
  int nkeys;
  char *key[MAX_KEYS], *value[MAX_KEYS];
  char *hdr_path, *raw_path;
};

static void header_free(struct header *h)
{
  free(h->text);
  free(h->hdr_path);
  free(h->raw_path);
}

static char *trim(char *s)
{
  while (*s == ' ' || *s == '\t' || *s == '\r')
    s++;
  size_t len = strlen(s);
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
    s[--len] = '\0';
  return s;
}

static const char *header_get(const struct header *h, const char *key)
{
  for (int i = 0; i < h->nkeys; i++)
    if (strcmp(h->key[i], key) == 0)
      return h->value[i];
  return NULL;
}

static int header_need(const char *func, const struct header *h, const char *key, const char **value)
{
  *value = header_get(h, key);
  if (!*value)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' has no key '%s'", h->hdr_path, key);
  return SPROJ_OK;
}

static int parse_i64(const char *s, int64_t *v, char **end)
{
  errno = 0;
  char *e;
  long long x = strtoll(s, &e, 10);
  if (e == s || errno)
    return 0;
  *v = x;
  if (end)
    *end = e;
  return 1;
}

static int header_int(const char *func, const struct header *h, const char *key, int optional, int64_t lo,
                      int64_t hi, int64_t *v)
{
  const char *s = header_get(h, key);
  if (!s) {
    if (optional)
      return SPROJ_OK;
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' has no key '%s'", h->hdr_path, key);
  }
  char *end;
  if (!parse_i64(s, v, &end) || *end || *v < lo || *v > hi)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': %s = '%s' is not an integer in %" PRId64 " .. %" PRId64,
                      h->hdr_path, key, s, lo, hi);
  return SPROJ_OK;
}

static int header_float(const char *func, const struct header *h, const char *key, float *v)
{
  const char *s = header_get(h, key);
  if (!s)
    return SPROJ_OK;
  char *end;
  errno = 0;
  float x = strtof(s, &end);
  if (end == s || *end || errno || !isfinite(x) || x < 0.0f)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': %s = '%s' is not a finite number >= 0", h->hdr_path, key, s);
  *v = x;
  return SPROJ_OK;
}

/* Reads and splits the header h->hdr_path: its size is checked before anything is allocated for it. */
static int header_load(const char *func, struct header *h)
{
  int fd;
  uint64_t size;
  int ret = sproj_in_open(func, h->hdr_path, &fd, &size);
  if (ret)
    return ret;
  if (size > MAX_HEADER_BYTES) {
    close(fd);
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' has %" PRIu64 " bytes, more than a header can have (%d)",
                      h->hdr_path, size, MAX_HEADER_BYTES);
  }
  size_t len = (size_t)size;
  h->text = malloc(len + 1);
  if (!h->text) {
    close(fd);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  ret = sproj_in_read(func, h->hdr_path, fd, 0, h->text, len);
  close(fd);
  if (ret)
    return ret;
  h->text[len] = '\0';
  if (strlen(h->text) != len)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' is not text (it holds a NUL byte)", h->hdr_path);

  char *line = h->text;
  int lineno = 0;
  while (line && *line) {
    char *next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    lineno++;
    char *s = trim(line);
    line = next;
    if (!*s || *s == '#')
      continue;
    char *eq = strchr(s, '=');
    if (!eq)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' line %d is not 'key = value'", h->hdr_path, lineno);
    *eq = '\0';
    char *key = trim(s), *value = trim(eq + 1);
    if (!*key)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' line %d has no key", h->hdr_path, lineno);
    if (header_get(h, key))
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' line %d repeats key '%s'", h->hdr_path, lineno, key);
    if (h->nkeys == MAX_KEYS)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' has more than %d keys", h->hdr_path, MAX_KEYS);
    h->key[h->nkeys] = key;
    h->value[h->nkeys++] = value;
  }
  return SPROJ_OK;
}

/* data_file names a file in the header's folder: a plain name, neither "." nor ".." nor with a '/'. */
static int valid_data_name(const char *v)
{
  return *v && !strchr(v, '/') && strcmp(v, ".") != 0 && strcmp(v, "..") != 0;
}

/* The data file the header at hdr_path names (a new string), or NULL if there is no such header or it names
 * none: what a rewrite removes once its own header has replaced that one. */
static char *old_data_file(const char *hdr_path)
{
  struct header h;
  memset(&h, 0, sizeof h);
  h.hdr_path = strdup(hdr_path);
  char *name = NULL;
  const char *v;
  if (h.hdr_path && access(hdr_path, F_OK) == 0 && header_load(__func__, &h) == SPROJ_OK &&
      (v = header_get(&h, "data_file")) && valid_data_name(v))
    name = strdup(v);
  header_free(&h);
  return name;
}

/* Reads and splits a header, and checks the keys both kinds need. */
static int header_read(const char *func, const char *base, const char *content, const char *type,
                       struct header *h, int *swap)
{
  memset(h, 0, sizeof *h);
  int ret = raw_paths(func, base, &h->hdr_path, &h->raw_path);
  if (ret || (ret = header_load(func, h)))
    return ret;

  const char *v;
  if ((ret = header_need(func, h, "format", &v)))
    return ret;
  if (strcmp(v, RAW_FORMAT) != 0)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': format '%s' is not '%s'", h->hdr_path, v, RAW_FORMAT);
  if ((ret = header_need(func, h, "content", &v)))
    return ret;
  if (strcmp(v, content) != 0)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' holds '%s', not %s", h->hdr_path, v, content);
  if ((ret = header_need(func, h, "data_type", &v)))
    return ret;
  if (strcmp(v, type) != 0)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': data_type '%s' is not %s", h->hdr_path, v, type);
  if ((ret = header_need(func, h, "byte_order", &v)))
    return ret;
  if (strcmp(v, "little-endian") == 0)
    *swap = !sproj_host_little_endian();
  else if (strcmp(v, "big-endian") == 0)
    *swap = sproj_host_little_endian();
  else
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': byte_order '%s' is neither little-endian nor big-endian",
                      h->hdr_path, v);
  /* the data file is named relative to the header's folder, and only within it */
  if ((ret = header_need(func, h, "data_file", &v)))
    return ret;
  if (!valid_data_name(v))
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': data_file '%s' is not a file name in its folder", h->hdr_path,
                      v);
  const char *slash = strrchr(h->hdr_path, '/');
  int dirlen = slash ? (int)(slash - h->hdr_path) + 1 : 0;
  free(h->raw_path);
  h->raw_path = str_printf("%.*s%s", dirlen, h->hdr_path, v);
  if (!h->raw_path)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  return SPROJ_OK;
}

/* Splits a whitespace-separated list into at most max words (in place; max + 1 if there are more). */
static int split_words(char *s, char **words, int max)
{
  int n = 0;
  for (;;) {
    while (*s == ' ' || *s == '\t')
      *s++ = '\0';
    if (!*s)
      return n;
    if (n == max)
      return max + 1;
    words[n++] = s;
    while (*s && *s != ' ' && *s != '\t')
      s++;
  }
}

static int header_shape(const char *func, const struct header *h, int64_t min_size, int *ndims, int64_t *shape)
{
  const char *v;
  int ret = header_need(func, h, "shape", &v);
  if (ret)
    return ret;
  char copy[1024];
  if (strlen(v) >= sizeof copy)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': shape is too long", h->hdr_path);
  strcpy(copy, v);
  char *words[SPROJ_RAW_MAX_DIMS + 1];
  int n = split_words(copy, words, SPROJ_RAW_MAX_DIMS);
  if (n < 1 || n > SPROJ_RAW_MAX_DIMS)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': shape has %d sizes, not 1 .. %d", h->hdr_path, n,
                      SPROJ_RAW_MAX_DIMS);
  for (int k = 0; k < n; k++) {
    char *end;
    if (!parse_i64(words[k], &shape[k], &end) || *end || shape[k] < min_size)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': shape size '%s' is not an integer >= %" PRId64, h->hdr_path,
                        words[k], min_size);
  }
  *ndims = n;
  return SPROJ_OK;
}

/* Number of elements of a shape, or -1 if its bytes (elem bytes each) overflow 2^62. */
static int64_t shape_count(int ndims, const int64_t *shape, size_t elem)
{
  int64_t total = 1;
  for (int k = 0; k < ndims; k++) {
    if (shape[k] != 0 && total > ((INT64_C(1) << 62) / (int64_t)elem) / shape[k])
      return -1;
    total *= shape[k];
  }
  return total;
}

static void swap4(void *data, int64_t n)
{
  unsigned char *p = data;
  for (int64_t i = 0; i < n; i++, p += 4) {
    unsigned char a = p[0], b = p[1];
    p[0] = p[3];
    p[1] = p[2];
    p[2] = b;
    p[3] = a;
  }
}

/* Opens the data file, which must be a regular file of exactly bytes bytes. */
static int open_data(const char *func, const struct header *h, size_t bytes, int *fd)
{
  uint64_t size;
  int ret = sproj_in_open(func, h->raw_path, fd, &size);
  if (ret)
    return ret;
  if (size != (uint64_t)bytes) {
    close(*fd);
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' has %" PRIu64 " bytes, its header '%s' describes %zu",
                      h->raw_path, size, h->hdr_path, bytes);
  }
  return SPROJ_OK;
}

/* The data file is as open_data wants it, without reading it. */
static int check_data(const char *func, const struct header *h, size_t bytes)
{
  int fd, ret = open_data(func, h, bytes, &fd);
  if (!ret)
    close(fd);
  return ret;
}

/* Reads the data file of exactly bytes bytes into a new buffer: the size is compared before anything is
 * allocated. */
/* A raw file's data read by blocks of 64 MB on every core: from the page cache one thread copies a few GB/s into
 * fresh memory (faulting it in page by page), far below a disk array's rate or the cache's; many keep up with
 * either. Each block records its outcome; the caller reports the first failure. */
#define READ_BLOCK ((size_t)64 << 20)
struct read_job {
  int fd;
  char *buf;
  size_t bytes;
  int *err; /* per block: 0, an errno, or -1 (the file ended early) */
};

static void read_block(void *ctx, int64_t block)
{
  struct read_job *j = ctx;
  size_t first = (size_t)block * READ_BLOCK, end = first + READ_BLOCK < j->bytes ? first + READ_BLOCK : j->bytes;
  j->err[block] = 0;
  for (size_t done = first; done < end;) {
    ssize_t got = pread(j->fd, j->buf + done, end - done, (off_t)done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      j->err[block] = got < 0 ? errno : -1;
      return;
    }
    done += (size_t)got;
  }
}

static int read_data(const char *func, const struct header *h, size_t bytes, void **out)
{
  int fd, ret = open_data(func, h, bytes, &fd);
  if (ret)
    return ret;
  void *buf = NULL;
  /* large arrays on huge pages (fewer faults; what the devices then copy from) */
  if (posix_memalign(&buf, (size_t)2 << 20, bytes ? bytes : 1) != 0) {
    close(fd);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory for %zu bytes", bytes);
  }
  if (bytes >= READ_BLOCK)
    madvise(buf, bytes, MADV_HUGEPAGE);
  int64_t nblocks = (int64_t)((bytes + READ_BLOCK - 1) / READ_BLOCK);
  struct read_job j = {fd, buf, bytes, calloc(nblocks > 0 ? (size_t)nblocks : 1, sizeof(int))};
  if (!j.err) {
    close(fd);
    free(buf);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  sproj_run_blocks("reading", 0, nblocks, read_block, &j);
  close(fd);
  for (int64_t b = 0; b < nblocks && !ret; b++) {
    if (j.err[b] > 0)
      ret = sproj_fail(SPROJ_ERR_IO, func, "cannot read '%s': %s", h->raw_path, strerror(j.err[b]));
    else if (j.err[b] < 0)
      ret = sproj_fail(SPROJ_ERR_IO, func, "cannot read '%s': it ended before %zu bytes (shorter than it was when "
                       "opened)", h->raw_path, bytes);
  }
  free(j.err);
  if (ret) {
    free(buf);
    return ret;
  }
  *out = buf;
  return SPROJ_OK;
}

/* ---- sinograms ------------------------------------------------------------------------------------------- */
static int check_tof_fields(const char *func, int num_tof_bins, float tof_bin_width)
{
  if (num_tof_bins < 0 || num_tof_bins > SPROJ_MAX_TOF_BINS)
    return sproj_fail(SPROJ_ERR_TOF, func, "num_tof_bins = %d is not in 0 .. %d", num_tof_bins,
                      SPROJ_MAX_TOF_BINS);
  if (!isfinite(tof_bin_width) || tof_bin_width < 0.0f)
    return sproj_fail(SPROJ_ERR_TOF, func, "tof_bin_width = %g is not a finite number >= 0", tof_bin_width);
  return SPROJ_OK;
}

int sproj_raw_write_sino(const char *base, const struct sproj_sino_info *info, const float *data)
{
  if (!base || !info || !data)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base, info and data must not be NULL");
  if (info->num_dims < 1 || info->num_dims > SPROJ_RAW_MAX_DIMS)
    return SPROJ_FAIL(SPROJ_ERR_DIMS, "num_dims = %d is not in 1 .. %d", info->num_dims, SPROJ_RAW_MAX_DIMS);
  for (int k = 0; k < info->num_dims; k++) {
    if (info->shape[k] <= 0)
      return SPROJ_FAIL(SPROJ_ERR_DIMS, "shape[%d] = %" PRId64 " must be > 0", k, info->shape[k]);
    if (!valid_name(info->axes[k], SPROJ_RAW_NAME_LEN, 0))
      return SPROJ_FAIL(SPROJ_ERR_INVALID, "axes[%d] is empty, unterminated or has characters other than "
                        "letters, digits and _-.+", k);
  }
  if (!valid_name(info->scanner, sizeof info->scanner, 1))
    return SPROJ_FAIL(SPROJ_ERR_INVALID, "scanner is unterminated or has characters other than letters, digits "
                      "and _-.+");
  int ret = check_tof_fields(__func__, info->num_tof_bins, info->tof_bin_width);
  if (ret)
    return ret;
  int64_t count = shape_count(info->num_dims, info->shape, sizeof(float));
  if (count < 0)
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "the shape has more than 2^62 bytes");

  char *hdr, *raw;
  if ((ret = raw_paths(__func__, base, &hdr, &raw)))
    return ret;
  struct text t = {0};
  header_start(&t, "sinogram", "float32", info->num_dims, info->shape);
  text_add(&t, "axes =");
  for (int k = 0; k < info->num_dims; k++)
    text_add(&t, " %s", info->axes[k]);
  text_add(&t, "\n");
  header_tof(&t, info->scanner, info->num_tof_bins, info->tof_bin_width);
  if (t.failed)
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  else
    ret = raw_write(__func__, hdr, raw, &t, NULL, data, count, sizeof(float));
  free(t.s);
  free(hdr);
  free(raw);
  return ret;
}

/* The keys both kinds describe their acquisition with: scanner (an optional name), num_tof_bins, tof_bin_width. */
static int header_scanner_tof(const char *func, const struct header *h, char *scanner, size_t size,
                              int *num_tof_bins, float *tof_bin_width)
{
  const char *name = header_get(h, "scanner");
  if (name) {
    if (strlen(name) >= size || !valid_name(name, size, 1))
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': scanner '%s' is too long or has odd characters", h->hdr_path,
                        name);
    strcpy(scanner, name);
  }
  int64_t bins = 0;
  int ret = header_int(func, h, "num_tof_bins", 1, 0, SPROJ_MAX_TOF_BINS, &bins);
  *num_tof_bins = (int)bins;
  if (!ret)
    ret = header_float(func, h, "tof_bin_width", tof_bin_width);
  return ret;
}

/* A sinogram's header, read and checked: its description in *info and the bytes of its data in *bytes (the
 * caller frees h, also after a failure). */
static int sino_header(const char *func, const char *base, struct header *h, struct sproj_sino_info *info,
                       size_t *bytes, int *swap)
{
  struct sproj_sino_info in;
  memset(&in, 0, sizeof in);
  int ret = header_read(func, base, "sinogram", "float32", h, swap);
  if (!ret)
    ret = header_shape(func, h, 1, &in.num_dims, in.shape);
  const char *axes = NULL;
  if (!ret)
    ret = header_need(func, h, "axes", &axes);
  if (!ret) {
    char copy[SPROJ_RAW_MAX_DIMS * (SPROJ_RAW_NAME_LEN + 1) + 64];
    char *words[SPROJ_RAW_MAX_DIMS + 1];
    int n = -1;
    if (strlen(axes) < sizeof copy) {
      strcpy(copy, axes);
      n = split_words(copy, words, SPROJ_RAW_MAX_DIMS);
    }
    if (n != in.num_dims)
      ret = sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': axes '%s' do not name the %d axes of the shape", h->hdr_path,
                       axes, in.num_dims);
    for (int k = 0; !ret && k < n; k++) {
      if (strlen(words[k]) >= SPROJ_RAW_NAME_LEN || !valid_name(words[k], SPROJ_RAW_NAME_LEN, 0))
        ret = sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': axis name '%s' is too long or has odd characters",
                         h->hdr_path, words[k]);
      else
        strcpy(in.axes[k], words[k]);
    }
  }
  if (!ret)
    ret = header_scanner_tof(func, h, in.scanner, sizeof in.scanner, &in.num_tof_bins, &in.tof_bin_width);
  int64_t count = 0;
  if (!ret && ((count = shape_count(in.num_dims, in.shape, sizeof(float))) < 0 ||
               (uint64_t)count > SIZE_MAX / sizeof(float)))
    ret = sproj_fail(SPROJ_ERR_OVERFLOW, func, "'%s': the shape is too large", h->hdr_path);
  if (!ret) {
    *info = in;
    *bytes = (size_t)count * sizeof(float);
  }
  return ret;
}

int sproj_raw_read_sino_info(const char *base, struct sproj_sino_info *info)
{
  if (!base || !info)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base and info must not be NULL");
  struct header h;
  struct sproj_sino_info in;
  size_t bytes = 0;
  int swap = 0, ret = sino_header(__func__, base, &h, &in, &bytes, &swap);
  if (!ret)
    ret = check_data(__func__, &h, bytes);
  header_free(&h);
  if (!ret)
    *info = in;
  return ret;
}

int sproj_raw_read_sino(const char *base, struct sproj_sino_info *info, float **data)
{
  if (!base || !info || !data)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base, info and data must not be NULL");
  struct header h;
  struct sproj_sino_info in;
  size_t bytes = 0;
  int swap = 0, ret = sino_header(__func__, base, &h, &in, &bytes, &swap);
  int64_t count = (int64_t)(bytes / sizeof(float));
  void *buf = NULL;
  if (!ret)
    ret = read_data(__func__, &h, bytes, &buf);
  header_free(&h);
  if (ret)
    return ret;
  if (swap)
    swap4(buf, count);
  *info = in;
  *data = buf;
  return SPROJ_OK;
}

/* ---- listmode -------------------------------------------------------------------------------------------- */
struct lm_src {
  const int32_t *lor;
  const int16_t *tof_bin;
};

static int lm_fill(const void *ctx, int64_t first, int64_t count, void *buf)
{
  const struct lm_src *src = ctx;
  int32_t *out = buf;
  for (int64_t e = 0; e < count; e++) {
    out[2 * e] = src->lor[first + e];
    out[2 * e + 1] = src->tof_bin ? src->tof_bin[first + e] : 0;
  }
  return 0;
}

static int check_lm_info(const char *func, const struct sproj_lm_info *info)
{
  if (info->num_events < 0)
    return sproj_fail(SPROJ_ERR_DIMS, func, "num_events = %" PRId64 " is negative", info->num_events);
  if (info->num_lors < 1 || info->num_lors > INT32_MAX)
    return sproj_fail(SPROJ_ERR_RANGE, func, "num_lors = %" PRId64 " is not in 1 .. 2^31-1", info->num_lors);
  if (!valid_name(info->scanner, sizeof info->scanner, 1))
    return sproj_fail(SPROJ_ERR_INVALID, func, "scanner is unterminated or has characters other than letters, "
                      "digits and _-.+");
  return check_tof_fields(func, info->num_tof_bins, info->tof_bin_width);
}

int sproj_raw_write_listmode(const char *base, const struct sproj_lm_info *info, const int32_t *lor,
                             const int16_t *tof_bin)
{
  if (!base || !info)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base and info must not be NULL");
  int ret = check_lm_info(__func__, info);
  if (ret)
    return ret;
  if (!lor && info->num_events > 0)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "lor must not be NULL");
  if (info->num_events > (INT64_C(1) << 59))
    return SPROJ_FAIL(SPROJ_ERR_OVERFLOW, "%" PRId64 " events are too many", info->num_events);
  int nbins = info->num_tof_bins > 1 ? info->num_tof_bins : 1;
  for (int64_t e = 0; e < info->num_events; e++) {
    if (lor[e] < 0 || lor[e] >= info->num_lors)
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "event %" PRId64 ": LOR %" PRId32 " is not in 0 .. %" PRId64, e, lor[e],
                        info->num_lors - 1);
    if (tof_bin && (tof_bin[e] < 0 || tof_bin[e] >= nbins))
      return SPROJ_FAIL(SPROJ_ERR_RANGE, "event %" PRId64 ": TOF bin %d is not in 0 .. %d", e, tof_bin[e],
                        nbins - 1);
  }

  char *hdr, *raw;
  if ((ret = raw_paths(__func__, base, &hdr, &raw)))
    return ret;
  int64_t shape[2] = {info->num_events, 2};
  struct text t = {0};
  header_start(&t, "listmode", "int32", 2, shape);
  text_add(&t, "axes = event field\nfields = lor tof_bin\nnum_lors = %" PRId64 "\n", info->num_lors);
  header_tof(&t, info->scanner, info->num_tof_bins, info->tof_bin_width);
  struct lm_src src = {lor, tof_bin};
  if (t.failed)
    ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory");
  else
    ret = raw_write(__func__, hdr, raw, &t, lm_fill, &src, info->num_events, 2 * sizeof(int32_t));
  free(t.s);
  free(hdr);
  free(raw);
  return ret;
}

/* A listmode header, read and checked: its description in *info (the caller frees h, also after a failure). */
static int lm_header(const char *func, const char *base, struct header *h, struct sproj_lm_info *info, int *swap)
{
  struct sproj_lm_info in;
  memset(&in, 0, sizeof in);
  int ndims = 0;
  int64_t shape[SPROJ_RAW_MAX_DIMS];
  int ret = header_read(func, base, "listmode", "int32", h, swap);
  if (!ret)
    ret = header_shape(func, h, 0, &ndims, shape);
  if (!ret && (ndims != 2 || shape[1] != 2))
    ret = sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': listmode shape must be '<events> 2'", h->hdr_path);
  const char *v = NULL;
  if (!ret && (ret = header_need(func, h, "fields", &v)) == 0 && strcmp(v, "lor tof_bin") != 0)
    ret = sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': fields '%s' are not 'lor tof_bin'", h->hdr_path, v);
  if (!ret)
    ret = header_int(func, h, "num_lors", 0, 1, INT32_MAX, &in.num_lors);
  if (!ret)
    ret = header_scanner_tof(func, h, in.scanner, sizeof in.scanner, &in.num_tof_bins, &in.tof_bin_width);
  if (!ret && (shape[0] > (INT64_C(1) << 59) || (uint64_t)shape[0] > SIZE_MAX / 8))
    ret = sproj_fail(SPROJ_ERR_OVERFLOW, func, "'%s': %" PRId64 " events are too many", h->hdr_path, shape[0]);
  if (!ret) {
    in.num_events = shape[0];
    *info = in;
  }
  return ret;
}

int sproj_raw_read_listmode_info(const char *base, struct sproj_lm_info *info)
{
  if (!base || !info)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base and info must not be NULL");
  struct header h;
  struct sproj_lm_info in;
  int swap = 0, ret = lm_header(__func__, base, &h, &in, &swap);
  if (!ret)
    ret = check_data(__func__, &h, (size_t)in.num_events * 2 * sizeof(int32_t));
  header_free(&h);
  if (!ret)
    *info = in;
  return ret;
}

int sproj_raw_read_listmode(const char *base, struct sproj_lm_info *info, int32_t **lor, int16_t **tof_bin)
{
  if (!base || !info || !lor)
    return SPROJ_FAIL(SPROJ_ERR_NULL, "base, info and lor must not be NULL");
  struct header h;
  struct sproj_lm_info in;
  memset(&in, 0, sizeof in);
  int swap = 0, ret = lm_header(__func__, base, &h, &in, &swap);
  int32_t *buf = NULL;
  if (!ret)
    ret = read_data(__func__, &h, (size_t)in.num_events * 2 * sizeof(int32_t), (void **)&buf);
  int32_t *lors = NULL;
  int16_t *bins_out = NULL;
  if (!ret && in.num_events > 0) {
    if (swap)
      swap4(buf, 2 * in.num_events);
    lors = malloc((size_t)in.num_events * sizeof *lors);
    bins_out = tof_bin ? malloc((size_t)in.num_events * sizeof *bins_out) : NULL;
    if (!lors || (tof_bin && !bins_out))
      ret = SPROJ_FAIL(SPROJ_ERR_NOMEM, "out of memory for %" PRId64 " events", in.num_events);
  }
  int nbins = in.num_tof_bins > 1 ? in.num_tof_bins : 1;
  for (int64_t e = 0; !ret && e < in.num_events; e++) {
    int32_t l = buf[2 * e], b = buf[2 * e + 1];
    if (l < 0 || l >= in.num_lors || b < 0 || b >= nbins)
      ret = SPROJ_FAIL(SPROJ_ERR_FORMAT, "'%s': event %" PRId64 " (LOR %" PRId32 ", TOF bin %" PRId32
                       ") is outside 0 .. %" PRId64 " / 0 .. %d", h.raw_path, e, l, b, in.num_lors - 1, nbins - 1);
    lors[e] = l;
    if (bins_out)
      bins_out[e] = (int16_t)b;
  }
  header_free(&h);
  free(buf);
  if (ret) {
    free(lors);
    free(bins_out);
    return ret;
  }
  *info = in;
  *lor = lors;
  if (tof_bin)
    *tof_bin = bins_out;
  return SPROJ_OK;
}
