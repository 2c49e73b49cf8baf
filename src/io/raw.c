/* SPDX-License-Identifier: Apache-2.0 */
/* raw.c: raw data with a "key = value" text header: names, headers, a pair written atomically, a pair read back. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "starproj_io.h"
#include "../core/shared.h"
#include "files.h"
#include "raw.h"

/* x86-64's huge page: the alignment that lets the kernel back a large array with them */
#define HUGE_PAGE_BYTES ((size_t)2 << 20)

/* ---- raw data: names and headers ----------------------------------------------------------------------- */
#define RAW_FORMAT "starproj-raw 1"
#define MAX_HEADER_BYTES 65536

int sproj_raw_valid_name(const char *s, size_t cap, int allow_empty)
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

int sproj_raw_paths(const char *func, const char *base, char **hdr, char **raw)
{
  size_t len = strlen(base);
  if (len >= 4 && strcmp(base + len - 4, ".hdr") == 0)
    len -= 4;
  if (len == 0 || base[len - 1] == '/')
    return sproj_fail(SPROJ_ERR_INVALID, func, "'%s' names no file", base);
  *hdr = sproj_str_printf("%.*s.hdr", (int)len, base);
  *raw = sproj_str_printf("%.*s.raw", (int)len, base);
  if (!*hdr || !*raw) {
    free(*hdr);
    free(*raw);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  return SPROJ_OK;
}

void sproj_raw_text_add(struct sproj_raw_text *t, const char *fmt, ...)
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

void sproj_raw_header_start(struct sproj_raw_text *t, const char *content, const char *type, int ndims,
                            const int64_t *shape)
{
  sproj_raw_text_add(t, "# starproj raw data header: key = value; the data file holds the numbers in C order (last "
                        "axis\n# fastest), without padding, in the byte order given here\n");
  sproj_raw_text_add(t, "format = %s\ncontent = %s\ndata_type = %s\nbyte_order = %s\nshape =", RAW_FORMAT, content,
                     type, sproj_host_little_endian() ? "little-endian" : "big-endian");
  for (int k = 0; k < ndims; k++)
    sproj_raw_text_add(t, " %" PRId64, shape[k]);
  sproj_raw_text_add(t, "\n");
}

void sproj_raw_header_tof(struct sproj_raw_text *t, const char *scanner, int num_tof_bins, float tof_bin_width)
{
  if (scanner[0])
    sproj_raw_text_add(t, "scanner = %s\n", scanner);
  sproj_raw_text_add(t, "num_tof_bins = %d\ntof_bin_width = %.9g\n", num_tof_bins, (double)tof_bin_width);
}

int sproj_raw_check_tof_fields(const char *func, int num_tof_bins, float tof_bin_width)
{
  if (num_tof_bins < 0 || num_tof_bins > SPROJ_MAX_TOF_BINS)
    return sproj_fail(SPROJ_ERR_TOF, func, "num_tof_bins = %d is not in 0 .. %d", num_tof_bins,
                      SPROJ_MAX_TOF_BINS);
  if (!isfinite(tof_bin_width) || tof_bin_width < 0.0f)
    return sproj_fail(SPROJ_ERR_TOF, func, "tof_bin_width = %g is not a finite number >= 0", tof_bin_width);
  return SPROJ_OK;
}

/* Writing a pair. The header names its data file (data_file), and a rewrite never touches the data of the pair it
 * replaces: the data goes to a new file, <base>.raw when that name is free, else <base>.raw.<pid>-<n>; the header
 * to ".<base>.hdr.tmp-<pid>-<n>"; both are synced; then one rename puts the new header in place of the old one.
 * Before that rename the folder holds the old pair (plus a file nothing names), after it the new pair (plus the
 * old data, which nothing names any more and which is removed then). */
static char *old_data_file(const char *hdr_path);

/* After a write of base (hdr_name and raw_name: "<base>.hdr" and "<base>.raw" without their folder) whose data is
 * new_data: removes what no header names any more: old_data (the replaced pair's), unless it is not a name this
 * writer gives; the data and temporaries of writes killed before they could clean up, i.e. those with the pid of a
 * process that no longer exists; and a <base>.raw the header does not name, once no other write of the base is
 * under way (its header's temporary would be there: it is made before the data file). Best effort. */
static void raw_cleanup(const char *hdr_path, const char *new_data, const char *old_data)
{
  const char *hdr_name, *new_name = strrchr(new_data, '/') ? strrchr(new_data, '/') + 1 : new_data;
  char *folder = sproj_folder_of(hdr_path, &hdr_name);
  size_t base_len = strlen(hdr_name) - 4;
  char *raw_name = sproj_str_printf("%.*s.raw", (int)base_len, hdr_name);
  char *raw_numbered = sproj_str_printf("%.*s.raw.", (int)base_len, hdr_name);
  char *hdr_tmp = sproj_str_printf(".%s.tmp-", hdr_name);
  char *raw_tmp = sproj_str_printf(".%.*s.raw.tmp-", (int)base_len, hdr_name); /* earlier versions wrote data so */
  DIR *d = folder && raw_name && raw_numbered && hdr_tmp && raw_tmp ? opendir(folder) : NULL;
  if (d) {
    int busy = 0;
    long pid;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (sproj_pid_suffix(e->d_name, hdr_tmp, &pid) || sproj_pid_suffix(e->d_name, raw_tmp, &pid)) {
        if (sproj_pid_dead(pid))
          sproj_remove_entry(dirfd(d), e->d_name);
        else
          busy = 1;
      } else if (sproj_pid_suffix(e->d_name, raw_numbered, &pid) && strcmp(e->d_name, new_name) != 0 &&
                 sproj_pid_dead(pid)) {
        sproj_remove_entry(dirfd(d), e->d_name);
      }
    }
    const char *old_name = old_data ? old_data : "";
    long ignored;
    if (strcmp(old_name, new_name) != 0 &&
        (strcmp(old_name, raw_name) == 0 || sproj_pid_suffix(old_name, raw_numbered, &ignored)))
      sproj_remove_entry(dirfd(d), old_name);
    if (!busy && strcmp(raw_name, new_name) != 0)
      sproj_remove_entry(dirfd(d), raw_name);
    closedir(d);
  }
  free(raw_name);
  free(raw_numbered);
  free(hdr_tmp);
  free(raw_tmp);
  free(folder);
}

int sproj_raw_write(const char *func, const char *hdr_path, const char *raw_path, struct sproj_raw_text *header,
                    sproj_raw_fill_fn fill, const void *ctx, int64_t num_items, size_t item_bytes)
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
  for (int attempt = 0; ret == SPROJ_OUT_EXISTS && attempt < SPROJ_OUT_ATTEMPTS; attempt++) {
    char *name = sproj_str_printf("%s.%ld-%u", raw_path, (long)getpid(), sproj_out_number());
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
  sproj_raw_text_add(header, "data_file = %s\n", data_name);
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
void sproj_raw_header_free(struct sproj_raw_header *h)
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

static const char *header_get(const struct sproj_raw_header *h, const char *key)
{
  for (int i = 0; i < h->nkeys; i++)
    if (strcmp(h->key[i], key) == 0)
      return h->value[i];
  return NULL;
}

int sproj_raw_header_need(const char *func, const struct sproj_raw_header *h, const char *key, const char **value)
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

int sproj_raw_header_int(const char *func, const struct sproj_raw_header *h, const char *key, int optional,
                         int64_t lo, int64_t hi, int64_t *v)
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

static int header_float(const char *func, const struct sproj_raw_header *h, const char *key, float *v)
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
static int header_load(const char *func, struct sproj_raw_header *h)
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
    if (h->nkeys == SPROJ_RAW_MAX_KEYS)
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' has more than %d keys", h->hdr_path, SPROJ_RAW_MAX_KEYS);
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
  struct sproj_raw_header h;
  memset(&h, 0, sizeof h);
  h.hdr_path = strdup(hdr_path);
  char *name = NULL;
  const char *v;
  if (h.hdr_path && access(hdr_path, F_OK) == 0 && header_load(__func__, &h) == SPROJ_OK &&
      (v = header_get(&h, "data_file")) && valid_data_name(v))
    name = strdup(v);
  sproj_raw_header_free(&h);
  return name;
}

int sproj_raw_header_read(const char *func, const char *base, const char *content, const char *type,
                          struct sproj_raw_header *h, int *swap)
{
  memset(h, 0, sizeof *h);
  int ret = sproj_raw_paths(func, base, &h->hdr_path, &h->raw_path);
  if (ret || (ret = header_load(func, h)))
    return ret;

  const char *v;
  if ((ret = sproj_raw_header_need(func, h, "format", &v)))
    return ret;
  if (strcmp(v, RAW_FORMAT) != 0)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': format '%s' is not '%s'", h->hdr_path, v, RAW_FORMAT);
  if ((ret = sproj_raw_header_need(func, h, "content", &v)))
    return ret;
  if (strcmp(v, content) != 0)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s' holds '%s', not %s", h->hdr_path, v, content);
  if ((ret = sproj_raw_header_need(func, h, "data_type", &v)))
    return ret;
  if (strcmp(v, type) != 0)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': data_type '%s' is not %s", h->hdr_path, v, type);
  if ((ret = sproj_raw_header_need(func, h, "byte_order", &v)))
    return ret;
  if (strcmp(v, "little-endian") == 0)
    *swap = !sproj_host_little_endian();
  else if (strcmp(v, "big-endian") == 0)
    *swap = sproj_host_little_endian();
  else
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': byte_order '%s' is neither little-endian nor big-endian",
                      h->hdr_path, v);
  /* the data file is named relative to the header's folder, and only within it */
  if ((ret = sproj_raw_header_need(func, h, "data_file", &v)))
    return ret;
  if (!valid_data_name(v))
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': data_file '%s' is not a file name in its folder", h->hdr_path,
                      v);
  const char *slash = strrchr(h->hdr_path, '/');
  int dirlen = slash ? (int)(slash - h->hdr_path) + 1 : 0;
  free(h->raw_path);
  h->raw_path = sproj_str_printf("%.*s%s", dirlen, h->hdr_path, v);
  if (!h->raw_path)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  return SPROJ_OK;
}

int sproj_raw_split_words(char *s, char **words, int max)
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

int sproj_raw_header_shape(const char *func, const struct sproj_raw_header *h, int64_t min_size, int *ndims,
                           int64_t *shape)
{
  const char *v;
  int ret = sproj_raw_header_need(func, h, "shape", &v);
  if (ret)
    return ret;
  char copy[1024];
  if (strlen(v) >= sizeof copy)
    return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': shape is too long", h->hdr_path);
  strcpy(copy, v);
  char *words[SPROJ_RAW_MAX_DIMS + 1];
  int n = sproj_raw_split_words(copy, words, SPROJ_RAW_MAX_DIMS);
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

int sproj_raw_header_scanner_tof(const char *func, const struct sproj_raw_header *h, char *scanner, size_t size,
                                 int *num_tof_bins, float *tof_bin_width)
{
  const char *name = header_get(h, "scanner");
  if (name) {
    if (strlen(name) >= size || !sproj_raw_valid_name(name, size, 1))
      return sproj_fail(SPROJ_ERR_FORMAT, func, "'%s': scanner '%s' is too long or has odd characters", h->hdr_path,
                        name);
    strcpy(scanner, name);
  }
  int64_t bins = 0;
  int ret = sproj_raw_header_int(func, h, "num_tof_bins", 1, 0, SPROJ_MAX_TOF_BINS, &bins);
  *num_tof_bins = (int)bins;
  if (!ret)
    ret = header_float(func, h, "tof_bin_width", tof_bin_width);
  return ret;
}

int64_t sproj_raw_shape_count(int ndims, const int64_t *shape, size_t elem)
{
  int64_t total = 1;
  for (int k = 0; k < ndims; k++) {
    if (shape[k] != 0 && total > ((INT64_C(1) << 62) / (int64_t)elem) / shape[k])
      return -1;
    total *= shape[k];
  }
  return total;
}

void sproj_raw_swap4(void *data, int64_t n)
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
static int open_data(const char *func, const struct sproj_raw_header *h, size_t bytes, int *fd)
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

int sproj_raw_check_data(const char *func, const struct sproj_raw_header *h, size_t bytes)
{
  int fd, ret = open_data(func, h, bytes, &fd);
  if (!ret)
    close(fd);
  return ret;
}

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

int sproj_raw_read_data(const char *func, const struct sproj_raw_header *h, size_t bytes, void **out)
{
  int fd, ret = open_data(func, h, bytes, &fd);
  if (ret)
    return ret;
  void *buf = NULL;
  /* large arrays on huge pages (fewer faults; what the devices then copy from) */
  if (posix_memalign(&buf, HUGE_PAGE_BYTES, bytes ? bytes : 1) != 0) {
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
