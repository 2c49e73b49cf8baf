/* SPDX-License-Identifier: Apache-2.0 */
/* files.h: what starproj's file writers and readers share: inputs opened without blocking, atomic output through
 * temporary files (not installed). */
#ifndef SPROJ_FILES_H
#define SPROJ_FILES_H

#include <stdint.h>
#include <stdio.h>

/* ---- input ---- */
/* Opens path for reading without ever blocking and only if it is a regular file: a FIFO would block open() until
 * some writer came, a device or a folder is no data. Refusals and failures are SPROJ_ERR_IO with the path and the
 * reason. On success *fd (close it) and *size, the file's size when it was opened. */
int sproj_in_open(const char *func, const char *path, int *fd, uint64_t *size);
/* Reads exactly bytes bytes at offset; a file that ends first (it shrank since it was opened) is SPROJ_ERR_IO. */
int sproj_in_read(const char *func, const char *path, int fd, uint64_t offset, void *buf, size_t bytes);

/* ---- output ---- */
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
