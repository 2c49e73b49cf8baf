/* SPDX-License-Identifier: Apache-2.0 */
/* inputs.c: the raw files given with --input, --input-listmode, --mult and --add: read, checked against the run's
 * scanner and layout before the output folder exists and StarPU starts, and handed to the run. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include "recon.h"

/* a file name's room (its base and .hdr); the values one thread checks at a time; how far two headers' TOF bin
 * widths may differ, relative, and still be the same scanner's */
#define PATH_LEN 4096
#define CHECK_BLOCK ((int64_t)1 << 22)
#define BIN_WIDTH_TOLERANCE 1e-4f

/* A folder (or device) given where a file is wanted reaches the reader as "a file of 4096 bytes"; say what it is.
 * A missing file is left to the reader, whose message names it. */
static int check_regular(const char *path)
{
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return fail_input("'%s' is %s, not a regular file", path, S_ISDIR(st.st_mode) ? "a folder" : "something else");
  return 0;
}

/* The header BASE.hdr and the data file it names (data_file = NAME, in the header's folder) are regular files
 * where they exist; a folder given as BASE itself is named as such. */
static int check_input_files(const char *option, const char *base)
{
  char hdr[PATH_LEN], data[PATH_LEN + 256], line[512], name[256];
  struct stat st;
  if (snprintf(hdr, sizeof hdr, "%s.hdr", base) >= (int)sizeof hdr)
    return fail_input("the file name '%s' is too long", base);
  if (stat(hdr, &st) != 0 && stat(base, &st) == 0 && S_ISDIR(st.st_mode))
    return fail_input("'%s' is a folder; %s takes BASE of the files BASE.hdr and BASE.raw", base, option);
  if (check_regular(hdr))
    return 1;
  FILE *f = fopen(hdr, "r");
  if (!f)
    return 0;
  int found = 0;
  while (!found && fgets(line, sizeof line, f))
    found = sscanf(line, " data_file = %255s", name) == 1;
  fclose(f);
  if (!found)
    return 0;
  const char *slash = strrchr(hdr, '/');
  snprintf(data, sizeof data, "%.*s%s", slash ? (int)(slash - hdr + 1) : 0, hdr, name);
  return check_regular(data);
}

/* Counts, factors and backgrounds must be finite and >= 0; found here, before StarPU starts, rather than by the
 * model or the reconstruction, whose message speaks of coordinates. */
/* Every value finite and >= 0, checked by blocks on every core (a TOF sinogram holds 4.2 G values): the first bad
 * one in each block, the first of those reported. */
struct values_job {
  const float *v;
  int64_t *first_bad; /* per block, or -1 */
};

static void values_block(void *ctx, int64_t first, int64_t end, int64_t block)
{
  struct values_job *j = ctx;
  j->first_bad[block] = -1;
  for (int64_t i = first; i < end; i++)
    if (!(j->v[i] >= 0.0f) || isinf(j->v[i])) {
      j->first_bad[block] = i;
      return;
    }
}

static int check_values(const char *base, const char *what, const float *v, int64_t n)
{
  const int64_t block = CHECK_BLOCK, nblocks = (n + block - 1) / block;
  struct values_job j = {v, malloc((size_t)(nblocks > 0 ? nblocks : 1) * sizeof(int64_t))};
  if (!j.first_bad)
    out_of_memory();
  parallel_blocks(NULL, n, block, values_block, &j);
  int64_t bad = -1;
  for (int64_t b = 0; b < nblocks && bad < 0; b++)
    bad = j.first_bad[b];
  free(j.first_bad);
  if (bad >= 0)
    return fail_input("%s holds %g at element %lld; %s must be finite and >= 0", base, (double)v[bad], (long long)bad,
                      what);
  return 0;
}

static int64_t values_of(const struct sproj_sino_info *info)
{
  uint64_t n = 1;
  for (int k = 0; k < info->num_dims; k++)
    n = mul_sat(n, (uint64_t)info->shape[k]);
  return n > INT64_MAX ? INT64_MAX : (int64_t)n; /* the reader held them all: never saturates */
}

/* A reader's failure: its message, and 1. */
static int read_failed(int rc)
{
  if (rc == SPROJ_OK)
    return 0;
  fprintf(stderr, "starproj-recon: %s (%s)\n", sproj_last_error(), sproj_strerror(rc));
  return 1;
}

/* The headers of every input (and that each names a data file of the size it describes), before the output folder
 * exists and StarPU starts, so that a bad file fails at once, and one that is not the run's data before its values
 * are read: 0, or 1 after a message. */
int read_headers(const struct options *o, struct inputs *in)
{
  memset(in, 0, sizeof *in);
  if ((o->input && check_input_files("--input", o->input)) ||
      (o->input_lm && check_input_files("--input-listmode", o->input_lm)) ||
      (o->mult_file && check_input_files("--mult", o->mult_file)) ||
      (o->add_file && check_input_files("--add", o->add_file)))
    return 1;
  if ((o->input && read_failed(sproj_raw_read_sino_info(o->input, &in->counts_info))) ||
      (o->input_lm && read_failed(sproj_raw_read_listmode_info(o->input_lm, &in->lm_info))) ||
      (o->mult_file && read_failed(sproj_raw_read_sino_info(o->mult_file, &in->mult_info))) ||
      (o->add_file && read_failed(sproj_raw_read_sino_info(o->add_file, &in->add_info))))
    return 1;
  return 0;
}

/* The values of every input, once their headers passed check_inputs: 0, or 1 after a message (what was read is
 * then in *in for free_inputs). The headers are read again with the data: check_inputs once more after this. */
int read_inputs(const struct options *o, struct inputs *in)
{
  double t0 = now();
  if ((o->input && read_failed(sproj_raw_read_sino(o->input, &in->counts_info, &in->counts))) ||
      (o->input_lm && read_failed(sproj_raw_read_listmode(o->input_lm, &in->lm_info, &in->lor, &in->bins))) ||
      (o->mult_file && read_failed(sproj_raw_read_sino(o->mult_file, &in->mult_info, &in->mult))) ||
      (o->add_file && read_failed(sproj_raw_read_sino(o->add_file, &in->add_info, &in->add))))
    return 1;
  if ((in->counts && check_values(o->input, "counts", in->counts, values_of(&in->counts_info))) ||
      (in->mult && check_values(o->mult_file, "factors", in->mult, values_of(&in->mult_info))) ||
      (in->add && check_values(o->add_file, "backgrounds", in->add, values_of(&in->add_info))))
    return 1;
  /* what reading cost, to set against the disk's rate */
  double bytes = (double)sizeof(float) * (double)(in->counts ? values_of(&in->counts_info) : 0) +
                 (double)sizeof(float) * (double)(in->mult ? values_of(&in->mult_info) : 0) +
                 (double)sizeof(float) * (double)(in->add ? values_of(&in->add_info) : 0) +
                 (double)(sizeof(int32_t) + sizeof(int16_t)) * (double)in->lm_info.num_events; /* LOR, TOF bin */
  double t = now() - t0;
  SAY("inputs: %.2f GB read and checked in %.2f s (%.2f GB/s)\n", bytes / 1e9, t, t > 0 ? bytes / 1e9 / t : 0.0);
  return 0;
}

void free_inputs(struct inputs *in)
{
  sproj_free(in->counts);
  sproj_free(in->mult);
  sproj_free(in->add);
  sproj_free(in->lor);
  sproj_free(in->bins);
  memset(in, 0, sizeof *in);
}

/* Without --scanner, the scanner preset the first input header names (say so); 0, or 1 for a name that is not
 * one of starproj-recon's presets. */
int pick_scanner(struct options *o, const struct inputs *in)
{
  const char *names[4] = {in->counts_info.scanner, in->lm_info.scanner, in->mult_info.scanner,
                          in->add_info.scanner};
  const char *files[4] = {o->input, o->input_lm, o->mult_file, o->add_file};
  for (int i = 0; i < 4 && !o->scanner_given; i++) {
    if (!files[i] || !names[i][0])
      continue;
    if (strcmp(names[i], "small") && strcmp(names[i], "vision600"))
      return fail_input("%s.hdr is data of the scanner '%s', which starproj-recon does not know (small or "
                        "vision600)", files[i], names[i]);
    o->scanner = names[i];
    SAY("starproj-recon: the %s scanner, as %s.hdr names it (no --scanner given)\n", o->scanner, files[i]);
    return 0;
  }
  return 0;
}

/* "view 64, plane 64, radial 65" */
static void describe_axes(const struct sproj_sino_info *info, char *buf, size_t len)
{
  size_t k = 0;
  buf[0] = '\0';
  for (int d = 0; d < info->num_dims && k < len; d++)
    k += (size_t)snprintf(buf + k, len - k, "%s%s %lld", d ? ", " : "", info->axes[d], (long long)info->shape[d]);
}

static int same_bin_width(float a, float b)
{
  return fabsf(a - b) <= BIN_WIDTH_TOLERANCE * fabsf(b);
}

/* A sinogram file must have the layout want (axes in that order, the scanner's sizes, its TOF bins) and, when its
 * header names a scanner, the run's: the element count alone would let a permuted or foreign sinogram through, to
 * be reconstructed as nonsense without a word. */
static int check_sino_header(const char *base, const struct sproj_sino_info *info, const struct sproj_sino_info *want)
{
  if (info->scanner[0] && strcmp(info->scanner, want->scanner))
    return fail_input("%s.hdr is data of the %s scanner, this run's is %s", base, info->scanner, want->scanner);
  if (info->num_tof_bins != want->num_tof_bins)
    return fail_input("%s has %d TOF bins, the reconstruction %d (--tof)", base, info->num_tof_bins,
                      want->num_tof_bins);
  int same = info->num_dims == want->num_dims;
  for (int k = 0; same && k < want->num_dims; k++)
    same = strcmp(info->axes[k], want->axes[k]) == 0 && info->shape[k] == want->shape[k];
  if (!same) {
    char got[256], need[256];
    describe_axes(info, got, sizeof got);
    describe_axes(want, need, sizeof need);
    return fail_input("%s.hdr has the axes %s; the %s scanner's sinogram has %s", base, got, want->scanner, need);
  }
  if (want->num_tof_bins && info->tof_bin_width > 0 && !same_bin_width(info->tof_bin_width, want->tof_bin_width))
    return fail_input("%s.hdr has TOF bins of %g mm, this run %g mm", base, (double)info->tof_bin_width,
                      (double)want->tof_bin_width);
  return 0;
}

/* Listmode events must number the LORs of the run's scanner (and come from it, when the header says), with its TOF
 * bins for a TOF run (a non-TOF run ignores bins), and be few enough for one LOR set and the subsets. */
static int check_lm_header(const char *base, const struct sproj_lm_info *info, const struct options *o,
                           const struct layout *l)
{
  if (info->scanner[0] && strcmp(info->scanner, o->scanner))
    return fail_input("%s.hdr is data of the %s scanner, this run's is %s", base, info->scanner, o->scanner);
  if (info->num_lors != l->si.num_lors)
    return fail_input("%s numbers %lld LORs, the %s scanner has %lld", base, (long long)info->num_lors, o->scanner,
                      (long long)l->si.num_lors);
  if (info->num_tof_bins != (o->tof ? l->nbins : 0) && !(info->num_tof_bins && !o->tof))
    return fail_input("%s has %d TOF bins, the reconstruction %d (--tof)", base, info->num_tof_bins,
                      o->tof ? l->nbins : 0);
  if (o->tof && info->tof_bin_width > 0 && !same_bin_width(info->tof_bin_width, l->tp.bin_width))
    return fail_input("%s.hdr has TOF bins of %g mm, this run %g mm", base, (double)info->tof_bin_width,
                      (double)l->tp.bin_width);
  if (info->num_events == 0)
    return fail_input("no listmode events to reconstruct");
  if ((uint64_t)info->num_events > MAX_ELEMENTS)
    return fail_input("%s holds %lld events, more than starproj's limit of %llu (2^32-1) in one set", base,
                      (long long)info->num_events, (unsigned long long)MAX_ELEMENTS);
  if (info->num_events < o->subsets)
    return fail_input("%d subsets but only %lld events", o->subsets, (long long)info->num_events);
  return 0;
}

/* Every input against the run's layout: 0, or 1 after a message. */
int check_inputs(const struct options *o, const struct inputs *in, const struct layout *l)
{
  struct sproj_sino_info sino, per_lor;
  sino_layout(o, l, o->tof, &sino);
  sino_layout(o, l, 0, &per_lor);
  if (o->input && check_sino_header(o->input, &in->counts_info, &sino))
    return 1;
  if (o->input_lm && check_lm_header(o->input_lm, &in->lm_info, o, l))
    return 1;
  if (o->mult_file && check_sino_header(o->mult_file, &in->mult_info, &per_lor))
    return 1;
  /* a background per LOR, or for TOF data per LOR and bin */
  if (o->add_file && check_sino_header(o->add_file, &in->add_info,
                                       o->tof && in->add_info.num_dims == sino.num_dims ? &sino : &per_lor))
    return 1;
  return 0;
}

/* Read data: the factors from files as read (no copy), else 1 and no background; the counts or events as read. */
void use_inputs(const struct options *o, struct inputs *in, struct run *r)
{
  const int64_t nlors = r->l.si.num_lors;
  if (in->mult) {
    r->mult = in->mult;
  } else {
    r->mult = alloc_or_die((size_t)nlors * sizeof(float));
    for (int64_t i = 0; i < nlors; i++)
      r->mult[i] = 1.0f;
  }
  r->add = in->add;
  r->add_per_bin = in->add && o->tof && values_of(&in->add_info) == nlors * r->l.nbins;
  if (!o->mult_file || !o->add_file)
    SAY("starproj-recon: no %s%s%s given: assuming %s%s%s\n", o->mult_file ? "" : "--mult",
        !o->mult_file && !o->add_file ? " and no " : "", o->add_file ? "" : "--add",
        o->mult_file ? "" : "m = 1 (no attenuation or normalisation)", !o->mult_file && !o->add_file ? " and " : "",
        o->add_file ? "" : "a = 0 (no randoms or scatter)");
  /* the arrays stay in *in, which frees them at the end */
  r->counts = in->counts;
  r->nevents = in->lm_info.num_events;
  r->ev_lor = in->lor;
  r->ev_bin = in->bins;
}
