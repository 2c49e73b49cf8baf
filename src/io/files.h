/* SPDX-License-Identifier: Apache-2.0 */
/* files.h: what starproj's file writers and readers share: atomic output through temporary files (not installed). */
#ifndef SPROJ_FILES_H
#define SPROJ_FILES_H

#include <stdint.h>
#include <stdio.h>

/* An output file being written under a temporary name in its target's folder. */
struct sproj_outfile {
  FILE *fp;
  char *tmp_path;    /* NULL once renamed or removed */
  char *final_path;
};

/* Creates the temporary file for path (mode 0666 less the umask, like fopen). */
int sproj_out_open(const char *func, const char *path, struct sproj_outfile *out);
/* Writes bytes, recording the failure with its errno text. */
int sproj_out_write(const char *func, struct sproj_outfile *out, const void *buf, size_t bytes);
/* Flushes, syncs and closes the temporary file; it stays under its temporary name. */
int sproj_out_close(const char *func, struct sproj_outfile *out);
/* Renames a closed temporary file to its target. */
int sproj_out_rename(const char *func, struct sproj_outfile *out);
/* Closes (if open) and removes the temporary file, frees the names; safe to call after success too. */
void sproj_out_discard(struct sproj_outfile *out);

/* 1 on a little-endian host. */
int sproj_host_little_endian(void);

#endif
