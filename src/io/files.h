/* SPDX-License-Identifier: Apache-2.0 */
/* files.h: what starproj's file writers and readers share (not installed): inputs opened without blocking and two
 * small helpers (input.c), atomic output through temporary files and the registry of temporaries that
 * sproj_io_remove_temporaries empties (atomic.c). */
#ifndef SPROJ_FILES_H
#define SPROJ_FILES_H

#include <stdint.h>
#include <stdio.h>

/* The most bytes one read or write call is asked to move (64 MiB): Linux moves at most about 2 GiB per call, and
 * a short count is then the only sign of trouble. */
#define SPROJ_IO_PIECE_BYTES ((size_t)1 << 26)
/* Names a writer tries for a temporary or a data file of its own before it gives up (each a new number of
 * sproj_out_number, so that only files of other processes can be in the way). */
#define SPROJ_OUT_ATTEMPTS 100

/* ---- text ---- */
/* A new string printed like printf, or NULL when out of memory. */
char *sproj_str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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
  int slot;          /* its entry in the registry of temporaries, -1 if none */
};

/* The next of this process's numbers for names of its own: no two calls answer the same (until it wraps). */
unsigned sproj_out_number(void);
/* Creates the temporary file ".<name>.tmp-<pid>-<n>" for path (mode 0666 less the umask, like fopen), registered
 * for sproj_io_remove_temporaries, after removing the temporaries for the same target that dead processes left. */
int sproj_out_open(const char *func, const char *path, struct sproj_outfile *out);
/* sproj_out_create's answer when path exists already (no error recorded; SPROJ_ERR_* are negative). */
#define SPROJ_OUT_EXISTS 1
/* Creates path itself (it must not exist yet) as the data that goes with head (a temporary of sproj_out_open, not
 * renamed yet): a new file that nothing refers to until head is renamed into place. Registered with head's entry:
 * a handler removes it with head's temporary, and only while that temporary is there. An existing path is
 * SPROJ_OUT_EXISTS, so that the caller may try another name. */
int sproj_out_create(const char *func, const char *path, struct sproj_outfile *head, struct sproj_outfile *out);
/* Writes bytes, recording the failure with its errno text. */
int sproj_out_write(const char *func, struct sproj_outfile *out, const void *buf, size_t bytes);
/* Flushes, syncs and closes the temporary file; it stays under its temporary name. */
int sproj_out_close(const char *func, struct sproj_outfile *out);
/* Renames a closed temporary file to its target (leaving the registry once it is renamed). */
int sproj_out_rename(const char *func, struct sproj_outfile *out);
/* Takes the file out of the registry: what a signal handler removes no longer includes it. */
void sproj_out_unregister(struct sproj_outfile *out);
/* A closed file of sproj_out_create is kept from now on: sproj_out_discard spares it. */
void sproj_out_keep(struct sproj_outfile *out);
/* Closes (if open) and removes the temporary file, frees the names; safe to call after success too. */
void sproj_out_discard(struct sproj_outfile *out);

/* Removes, in the folder of path, what earlier writes of path by processes that no longer exist left behind:
 * ".<name>.tmp-<pid>-<n>" for pid not alive (kill(pid, 0) fails with ESRCH). Best effort, errors ignored. */
void sproj_remove_stale_temporaries(const char *path);
/* 1 if name is prefix followed by "<pid>-<n>" (decimal numbers, nothing after), with *pid set. */
int sproj_pid_suffix(const char *name, const char *prefix, long *pid);
/* 1 if no process pid exists (kill(pid, 0) fails with ESRCH); a process of another user counts as alive. */
int sproj_pid_dead(long pid);
/* The folder of path ("." when it has none) as a new string (NULL when out of memory), and its last component. */
char *sproj_folder_of(const char *path, const char **name);
/* Removes the regular file name in the open folder folder_fd, if it still is one. */
void sproj_remove_entry(int folder_fd, const char *name);

/* 1 on a little-endian host. */
int sproj_host_little_endian(void);

#endif
