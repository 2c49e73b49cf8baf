/* SPDX-License-Identifier: Apache-2.0 */
/* recon.h: what the phases of starproj-recon share (private to the program): the options, the run's layout and
 * arrays, the inputs read, and the helpers every phase fails, allocates and speaks through. */
#ifndef SPROJ_PROGRAMS_RECON_H
#define SPROJ_PROGRAMS_RECON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "../common.h"
#include "../progress.h"

struct options {
  const char *scanner;
  int scanner_given; /* --scanner; else the scanner an input header names, else small */
  int dims[3];
  float voxel_size[3];  /* mm per axis; [0] < 0: the preset's */
  int tof, listmode, noise_free;
  double counts, background;
  uint64_t seed;
  const char *input, *input_lm, *mult_file, *add_file;
  int iterations, subsets;
  float fwhm[3];
  int use_fwhm, objective, order_events;
  const char *devices, *sched;
  int ncpu, ngpu;
  const char *output;
  int save_data, save_iterations, verbose, quiet;
};

/* --quiet: only errors (set once the options are parsed) */
extern int quiet;
#define SAY(...)                                                                                                 \
  do {                                                                                                         \
    if (!quiet)                                                                                                \
      printf(__VA_ARGS__);                                                                                     \
  } while (0)

/* A bad option: the message, a pointer to --help, and the exit status 2. */
int fail_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Input that cannot be used (unreadable, or not this run's data): the message and the exit status 1. */
int fail_input(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A failed library call: its message, then exit 1 (registered objects die with the process). */
#define TRY(call)                                                                                               \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    if (rc_ != SPROJ_OK) {                                                                                     \
      fprintf(stderr, "starproj-recon: %s (%s)\n", sproj_last_error(), sproj_strerror(rc_));                 \
      exit(1);                                                                                                 \
    }                                                                                                          \
  } while (0)

/* ---- options (options.c) ---- */
/* The options, checked one by one and together: 0, or 2 after a message (--help: the text, and exit 0). */
int parse_options(int argc, char **argv, struct options *o);
/* The defaults that depend on the scanner, once it is known (it may come from an input header). */
void resolve_defaults(struct options *o);

/* ---- sizes, layout and memory (plan.c) ---- */
/* The largest image and LOR set starproj registers: one StarPU vector, at most 2^32-1 elements. */
#define MAX_ELEMENTS UINT32_MAX
struct layout {
  sproj_scanner *scanner;
  struct sproj_sinogram_info si;
  struct sproj_tof_params tp;
  int nbins;            /* TOF bins per LOR, 1 without TOF */
  int64_t nvox;
  float vs[3], origin[3];
};

/* Bytes of the run's large buffers, by kind. */
struct need {
  uint64_t images, sinogram, events;
};
uint64_t mul_sat(uint64_t a, uint64_t b);
uint64_t add_sat(uint64_t a, uint64_t b);
/* Bytes of physical memory, or UINT64_MAX when the system does not say. */
uint64_t physical_memory(void);
/* Needs no StarPU: a scanner object only describes the geometry. */
void make_layout(const struct options *o, struct layout *l);
/* The layout of the run's sinogram as a raw file describes it (tof: with the TOF axis). */
void sino_layout(const struct options *o, const struct layout *l, int tof, struct sproj_sino_info *info);
/* nevents: the listmode events expected or read; gpus: the GPUs found (0 before StarPU starts) */
struct need memory_need(const struct options *o, const struct layout *l, uint64_t nevents, int gpus);
/* Listmode events a simulation draws: counts x (1 + background). */
uint64_t expected_events(const struct options *o);
/* What the options ask of starproj, the scanner and this machine: 0, or 2 after a message. */
int validate_run(const struct options *o, const struct layout *l, int64_t nevents_in);
/* Arrays the devices read or write (pinned up to a size, plain beyond; release() frees either), scratch that never
 * goes to a device, and arrays that tasks fill where they run (not faulted in here). Out of memory: exit 1. */
void *alloc_or_die(size_t bytes);
void release(void *p, size_t bytes);
void *host_alloc(size_t bytes);
void *lazy_alloc(size_t bytes);

/* ---- inputs (inputs.c) ---- */
struct inputs {
  struct sproj_sino_info counts_info, mult_info, add_info;
  struct sproj_lm_info lm_info;
  float *counts, *mult, *add; /* from the readers: free with sproj_free */
  int32_t *lor;
  int16_t *bins;
};
/* The inputs' headers first, checked by pick_scanner and check_inputs before read_inputs reads their values: each
 * 0, or 1 after a message. */
int read_headers(const struct options *o, struct inputs *in);
int read_inputs(const struct options *o, struct inputs *in);
void free_inputs(struct inputs *in);
/* Without --scanner, the scanner preset the first input header names: 0, or 1 after a message. */
int pick_scanner(struct options *o, const struct inputs *in);
/* Every input against the run's layout: 0, or 1 after a message. */
int check_inputs(const struct options *o, const struct inputs *in, const struct layout *l);

/* ---- the run (run.c, events.c, simulate.c) ---- */
struct run {
  struct layout l;
  sproj_lors *lors;                   /* the scanner's sinogram LORs (made where they are used) */
  sproj_chunks *views;                /* one chunk per view */
  sproj_tof *tof;
  float *phantom, *mult, *add;        /* the phantom only when simulating; add NULL: no background */
  int add_flat;                       /* simulated: add holds flat_add for every LOR (listmode events need no array) */
  float flat_add;
  int add_per_bin;                    /* add holds a value per LOR and TOF bin (a file of that shape); else one
                                       * per LOR, spread evenly over a TOF LOR's bins */
  float *counts;                      /* sinogram counts [lor][bin]: read, or the host array of simulated counts
                                       * (made where the data lives: on a GPU they never come home) */
  int counts_on_devices;              /* simulated: the counts are valid on the devices, not in counts */
  float *lor_sums;                    /* simulated TOF sinogram: each LOR's counts over its bins (lor_sums_proj) */
  sproj_proj *lor_sums_proj;
  int32_t *ev_lor;                    /* listmode events: sampled or read (sproj_free) */
  int16_t *ev_bin;
  int16_t *ev_bin_chunked;            /* their TOF bins in the order of the event chunks (events_block) */
  int64_t nevents;
  struct sproj_sino_info sino_info;   /* the layout of counts and add */
  float *x;                           /* the reconstruction */
  sproj_image *ximg;
  sproj_model *model, *sens_model;
  sproj_proj *data;
  sproj_lors *events;
  sproj_chunks *ev_chunks;
  int32_t *ev_lor_chunked;            /* the events' LORs in the order of the chunks (their endpoints are made from
                                       * these where the events are projected; then ev_mult takes their place) */
  float *ev_mult, *ev_add;
  int nchunks;
  sproj_recon *recon;
};
/* Read data into the run: the factors from files (else 1) and no background unless --add; counts or events. */
void use_inputs(const struct options *o, struct inputs *in, struct run *r);
void start_starpu(const struct options *o, const struct layout *l);
/* The sinogram's LORs, its views chunking, the TOF parameters. */
void setup_lors(const struct options *o, struct run *r);
/* What the run will take (memory, time of an iteration), said before its long phases. */
void estimate(const struct options *o, struct run *r, int64_t nevents_in);
/* The model of the data: the factors, the background and the resolution model. */
void make_model(const struct options *o, struct run *r, sproj_model **model);
/* The simulated phantom, its factors and its counts or events, made where the data lives. */
void simulate(const struct options *o, struct run *r);
/* Listmode: each event's endpoints, factor and background in chunk order, then the chunks. */
void event_arrays(const struct options *o, struct run *r);
void event_chunks(const struct options *o, struct run *r);
/* The model of the data, the sensitivities, and the iterations. */
void reconstruct(const struct options *o, struct run *r);
/* Everything registered goes, StarPU stops, and the arrays are freed. */
void finish(struct run *r, struct inputs *in);

/* ---- outputs (outputs.c, preview.c) ---- */
/* The output folder, made only once the options and inputs are known to be good: 0, or 1 after a message. */
int make_output_folder(const char *dir);
/* A failed run removes what it wrote into a folder it made: at any exit from now on, and from catch_signals on at
 * SIGINT, SIGTERM and SIGHUP too. */
void remove_written_at_exit(void);
void catch_signals(void);
/* The results are complete and named: a failure from here on leaves them. */
void keep_written(void);
void out_of_memory(void);
/* dir/name in new memory (out of memory: exit 1). */
char *path_in(const char *dir, const char *name);
/* dir/name in new memory, noted as a file this run writes (before it is written: see outputs.c). */
char *output_file(const char *dir, const char *name);
/* --save-data: the simulated sinogram or events and their factors. */
void save_data(const struct options *o, const struct run *r);
/* The image as NIfTI, the phantom likewise, and their previews, named on one line. */
void write_outputs(const struct options *o, const struct run *r);
/* The previews (gnuplot's, or libstarproj-io's plain ones), added to the line write_outputs began. */
void write_previews(const struct options *o, const struct run *r);
/* How close the reconstruction is to the phantom. */
void report_error(const struct run *r);

#endif
