/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_files.h: what the file fuzz targets share: a private folder for the process (made at the first input,
 * removed at exit) and writing bytes to a file in it. Each input overwrites the same few files, so a run leaves
 * nothing behind and costs no more disk than its largest input. */
#ifndef FUZZ_FILES_H
#define FUZZ_FILES_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir[64];
static const char *fuzz_names[8];
static int fuzz_num_names;

static void fuzz_cleanup(void)
{
  char path[128];
  for (int i = 0; i < fuzz_num_names; i++) {
    snprintf(path, sizeof path, "%s/%s", fuzz_dir, fuzz_names[i]);
    unlink(path);
  }
  rmdir(fuzz_dir);
}

/* path of name in the folder (made on first use); name must be one of a few fixed names, as they are removed
 * at exit */
static const char *fuzz_path(const char *name)
{
  static char path[4][128];
  static int which;
  if (!fuzz_dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/sproj-fuzz.XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    if (!mkdtemp(fuzz_dir))
      abort();
    atexit(fuzz_cleanup);
  }
  int known = 0;
  for (int i = 0; i < fuzz_num_names; i++)
    known |= strcmp(fuzz_names[i], name) == 0;
  if (!known && fuzz_num_names < 8)
    fuzz_names[fuzz_num_names++] = name;
  which = (which + 1) % 4;
  snprintf(path[which], sizeof path[which], "%s/%s", fuzz_dir, name);
  return path[which];
}

/* Writes len bytes to name in the folder, replacing what was there. */
static void fuzz_write(const char *name, const void *data, size_t len)
{
  const char *path = fuzz_path(name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    abort();
  const char *p = data;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n <= 0)
      abort();
    p += n;
    len -= (size_t)n;
  }
  close(fd);
}

#endif
