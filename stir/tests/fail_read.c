/* SPDX-License-Identifier: Apache-2.0 */
/* fail_read.c: a test helper, preloaded (LD_PRELOAD) into a program that reads projection data: read() on a file
 * whose name ends with one of the names STARPROJ_TEST_FAIL_READ lists (separated by ':') fails with EIO where it
 * would read a byte of the bad region from offset STARPROJ_TEST_FAIL_READ_AFTER (default 0) to
 * STARPROJ_TEST_FAIL_READ_UNTIL (default: the end), as a disk with a bad sector would: the bytes before the region
 * come as a short read, reads after it succeed. Every other read goes to the C library's read unchanged. With it the
 * tests reach the paths where a file passes every check made before reading (it exists, it is long enough) and still
 * cannot be read: the objective function's set-up reads its data and additive term on threads of their own, and an
 * error there must come back as the program's error. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*read_fn)(int, void *, size_t);

/* Whether descriptor fd is one of the files named in the list: its path (from /proc/self/fd) ends with a name of the
 * list after a '/'. */
static int is_target(int fd, const char *list)
{
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0)
    return 0;
  path[n] = '\0';
  size_t lp = (size_t)n;
  for (const char *name = list; *name;) {
    const char *end = strchr(name, ':');
    size_t ls = end ? (size_t)(end - name) : strlen(name);
    if (ls > 0 && ls <= lp && strncmp(path + lp - ls, name, ls) == 0 && (ls == lp || path[lp - ls - 1] == '/'))
      return 1;
    if (!end)
      break;
    name = end + 1;
  }
  return 0;
}

ssize_t read(int fd, void *buf, size_t count)
{
  static read_fn real;
  if (!real)
    real = (read_fn)dlsym(RTLD_NEXT, "read");
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  const char *list = getenv("STARPROJ_TEST_FAIL_READ");
  if (list && *list && count > 0 && is_target(fd, list)) {
    const char *after = getenv("STARPROJ_TEST_FAIL_READ_AFTER"), *until = getenv("STARPROJ_TEST_FAIL_READ_UNTIL");
    long long from = after ? atoll(after) : 0, to = until ? atoll(until) : LLONG_MAX;
    off_t at = lseek(fd, 0, SEEK_CUR);
    if (at >= 0 && (long long)at < to && (long long)at + (long long)count > from) {
      if ((long long)at < from) /* the bytes before the region still come, as a short read */
        return real(fd, buf, (size_t)(from - (long long)at));
      errno = EIO;
      return -1;
    }
  }
  return real(fd, buf, count);
}
