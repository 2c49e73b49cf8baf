/* SPDX-License-Identifier: Apache-2.0 */
/* raw.h: what sinograms and listmode share of the raw data format (raw.c): names, the header's text, the writing of
 * a header and data pair, and the reading of a header and its data (not installed). */
#ifndef SPROJ_RAW_H
#define SPROJ_RAW_H

#include <stddef.h>
#include <stdint.h>

#define SPROJ_RAW_MAX_KEYS 64

/* ---- names ---- */
/* 1 if s, terminated within cap bytes, is a name of letters, digits and _-.+ (empty only if allow_empty). */
int sproj_raw_valid_name(const char *s, size_t cap, int allow_empty);
/* <base>.hdr and <base>.raw from a base given with or without ".hdr". */
int sproj_raw_paths(const char *func, const char *base, char **hdr, char **raw);

/* ---- writing ---- */
/* A growing text buffer for a header. */
struct sproj_raw_text {
  char *s;
  size_t len, cap;
  int failed;
};

void sproj_raw_text_add(struct sproj_raw_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Header lines common to both kinds; sproj_raw_write adds data_file once it has chosen the data file's name. */
void sproj_raw_header_start(struct sproj_raw_text *t, const char *content, const char *type, int ndims,
                            const int64_t *shape);
/* The header lines of the acquisition: scanner (if named), num_tof_bins and tof_bin_width. */
void sproj_raw_header_tof(struct sproj_raw_text *t, const char *scanner, int num_tof_bins, float tof_bin_width);
/* num_tof_bins and tof_bin_width as both kinds accept them (SPROJ_ERR_TOF if not). */
int sproj_raw_check_tof_fields(const char *func, int num_tof_bins, float tof_bin_width);

/* Puts count items, from item first on, into buf: how sproj_raw_write gets items not laid out in memory. */
typedef int (*sproj_raw_fill_fn)(const void *ctx, int64_t first, int64_t count, void *buf);
/* Writes num_items items of item_bytes (from ctx, or through fill piece by piece) and header (to which the line
 * data_file is added) as the pair hdr_path / raw_path, the way raw.c describes: new data in a file nothing names
 * yet, then one rename of the header's temporary over the old header. */
int sproj_raw_write(const char *func, const char *hdr_path, const char *raw_path, struct sproj_raw_text *header,
                    sproj_raw_fill_fn fill, const void *ctx, int64_t num_items, size_t item_bytes);

/* ---- reading ---- */
/* A header read and split into keys and values (which point into text). */
struct sproj_raw_header {
  char *text;
  int nkeys;
  char *key[SPROJ_RAW_MAX_KEYS], *value[SPROJ_RAW_MAX_KEYS];
  char *hdr_path, *raw_path;
};

void sproj_raw_header_free(struct sproj_raw_header *h);
/* Reads and splits a header, and checks the keys both kinds need. */
int sproj_raw_header_read(const char *func, const char *base, const char *content, const char *type,
                          struct sproj_raw_header *h, int *swap);
/* The value of key in *value; a header without it is SPROJ_ERR_FORMAT. */
int sproj_raw_header_need(const char *func, const struct sproj_raw_header *h, const char *key, const char **value);
/* The integer value of key, in lo .. hi; a missing key is left as *v if optional, else SPROJ_ERR_FORMAT. */
int sproj_raw_header_int(const char *func, const struct sproj_raw_header *h, const char *key, int optional,
                         int64_t lo, int64_t hi, int64_t *v);
/* The sizes of shape (1 .. SPROJ_RAW_MAX_DIMS of them, each >= min_size). */
int sproj_raw_header_shape(const char *func, const struct sproj_raw_header *h, int64_t min_size, int *ndims,
                           int64_t *shape);
/* The keys both kinds describe their acquisition with: scanner (an optional name), num_tof_bins, tof_bin_width. */
int sproj_raw_header_scanner_tof(const char *func, const struct sproj_raw_header *h, char *scanner, size_t size,
                                 int *num_tof_bins, float *tof_bin_width);
/* Splits a whitespace-separated list into at most max words (in place; max + 1 if there are more). */
int sproj_raw_split_words(char *s, char **words, int max);
/* Number of elements of a shape, or -1 if its bytes (elem bytes each) overflow 2^62. */
int64_t sproj_raw_shape_count(int ndims, const int64_t *shape, size_t elem);
/* Reverses the bytes of each of n 4-byte numbers. */
void sproj_raw_swap4(void *data, int64_t n);
/* The data file is a regular file of exactly bytes bytes, without reading it. */
int sproj_raw_check_data(const char *func, const struct sproj_raw_header *h, size_t bytes);
/* Reads the data file of exactly bytes bytes into a new buffer: the size is compared before anything is
 * allocated. */
int sproj_raw_read_data(const char *func, const struct sproj_raw_header *h, size_t bytes, void **out);

#endif
