/* SPDX-License-Identifier: Apache-2.0 */
/* input.c: inputs opened without blocking, and the helpers every file here uses (formatted strings, byte order). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
char *sproj_str_printf(const char *fmt, ...)
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
    size_t piece = bytes - done < SPROJ_IO_PIECE_BYTES ? bytes - done : SPROJ_IO_PIECE_BYTES;
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
