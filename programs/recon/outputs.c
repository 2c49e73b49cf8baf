/* SPDX-License-Identifier: Apache-2.0 */
/* outputs.c: what the run writes into its output folder (the images, --save-data's raw files) and how a failed or
 * interrupted run takes away what it wrote there. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "recon.h"

/* file names the list of written files holds before it first grows (it doubles) */
#define FIRST_ROOM 16

/* ---- what the run wrote -------------------------------------------------------------------------------------- */
/* A failed run takes away the output folder it created, with the files it wrote there (and nothing else: rmdir
 * leaves a folder someone else has put files in meanwhile). A folder that was there before is left as it is. Done
 * at exit, so that every way out (TRY, alloc_or_die, a return from main) is covered, and by a signal's handler,
 * which may come on any thread at any instant: so files and num_files are published with atomic stores, the
 * entries first, and an array that grew is not freed (a handler may be reading it). */
static struct {
  char *dir;      /* the output folder if this run created it, else NULL */
  char **files;   /* the files written in it, or being written */
  int num_files, room;
  int finished;   /* the run got to its end: keep everything */
} written;

static void remove_written(void)
{
  if (__atomic_load_n(&written.finished, __ATOMIC_ACQUIRE) || !written.dir)
    return;
  int n = __atomic_load_n(&written.num_files, __ATOMIC_ACQUIRE);
  char **files = __atomic_load_n(&written.files, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++)
    unlink(files[i]);
  rmdir(written.dir);
}

/* SIGINT, SIGTERM, SIGHUP: the files being written go (the library's temporaries), and with them what this run
 * wrote into a folder it made, as at any failed end; then the process ends by the signal, as a shell expects.
 * Everything here is async-signal-safe (unlink, rmdir, and sproj_io_remove_temporaries is made for it). */
static void on_signal(int sig)
{
  sproj_io_remove_temporaries();
  remove_written();
  signal(sig, SIG_DFL);
  raise(sig);
}

void remove_written_at_exit(void)
{
  atexit(remove_written);
}

void catch_signals(void)
{
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);
}

void keep_written(void)
{
  __atomic_store_n(&written.finished, 1, __ATOMIC_RELEASE);
}

void out_of_memory(void)
{
  fprintf(stderr, "starproj-recon: out of memory\n");
  exit(1);
}

/* Notes a file before it is written: a writer puts it in place by a rename, and from that instant on a signal must
 * find it noted. One that was not written after all is simply not there to remove, and an older file of that name
 * is never removed: only a folder this run made is emptied. */
static void note_file(const char *path)
{
  char *copy = strdup(path);
  if (!copy)
    out_of_memory();
  char **files = written.files;
  if (written.num_files == written.room) {
    int room = written.room ? 2 * written.room : FIRST_ROOM;
    if (!(files = malloc((size_t)room * sizeof *files)))
      out_of_memory();
    if (written.num_files)
      memcpy(files, written.files, (size_t)written.num_files * sizeof *files);
    written.room = room;
  }
  files[written.num_files] = copy;
  __atomic_store_n(&written.files, files, __ATOMIC_RELEASE);
  __atomic_store_n(&written.num_files, written.num_files + 1, __ATOMIC_RELEASE);
}

char *path_in(const char *dir, const char *name)
{
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (!p)
    out_of_memory();
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Made only once the options and inputs are known to be good; the folder's parent must exist. */
int make_output_folder(const char *dir)
{
  if (mkdir(dir, 0777) == 0) {
    if (!(written.dir = strdup(dir)))
      out_of_memory();
  } else if (errno != EEXIST) {
    return fail_input("cannot create the output folder '%s': %s", dir, strerror(errno));
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return fail_input("'%s' is not a folder", dir);
  return 0;
}

char *output_file(const char *dir, const char *name)
{
  char *p = path_in(dir, name);
  note_file(p);
  return p;
}

/* dir/base for a raw writer, with BASE.hdr and BASE.raw noted. */
static char *output_raw(const char *dir, const char *base)
{
  char name[64];
  for (int k = 0; k < 2; k++) {
    snprintf(name, sizeof name, "%s.%s", base, k ? "raw" : "hdr");
    free(output_file(dir, name));
  }
  return path_in(dir, base);
}

/* --save-data: the simulated sinogram or events and their factors. */
void save_data(const struct options *o, const struct run *r)
{
  char *p;
  struct sproj_sino_info per_lor;
  sino_layout(o, &r->l, 0, &per_lor);
  TRY(sproj_raw_write_sino(p = output_raw(o->output, "mult"), &per_lor, r->mult));
  free(p);
  /* the background as the model takes it: one value per LOR (spread over a TOF LOR's bins) */
  TRY(sproj_raw_write_sino(p = output_raw(o->output, "add"), &per_lor, r->add));
  free(p);
  if (o->listmode) {
    struct sproj_lm_info li = {r->nevents, r->l.si.num_lors, "", o->tof ? r->l.nbins : 0,
                               o->tof ? r->l.tp.bin_width : 0.0f};
    snprintf(li.scanner, sizeof li.scanner, "%s", o->scanner);
    TRY(sproj_raw_write_listmode(p = output_raw(o->output, "events"), &li, r->ev_lor, r->ev_bin));
  } else {
    if (r->counts_on_devices)
      TRY(sproj_proj_sync(r->data, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
    TRY(sproj_raw_write_sino(p = output_raw(o->output, "counts"), &r->sino_info, r->counts));
  }
  free(p);
  SAY("data written: %s/%s.hdr/.raw, %s/mult and %s/add\n", o->output, o->listmode ? "events" : "counts", o->output,
      o->output);
}

/* The image as NIfTI, the phantom likewise, and their previews with the sinogram's, named on one line. */
void write_outputs(const struct options *o, const struct run *r)
{
  const struct layout *l = &r->l;
  char *p;
  TRY(sproj_nifti_write(p = output_file(o->output, "recon.nii"), r->x, o->dims, l->vs, l->origin,
                        "starproj-recon OSEM"));
  SAY("wrote %s", p);
  free(p);
  if (r->phantom) {
    TRY(sproj_nifti_write(p = output_file(o->output, "phantom.nii"), r->phantom, o->dims, l->vs, l->origin,
                          "starproj-recon phantom"));
    SAY(", %s", p);
    free(p);
  }
  write_previews(o, r);
}

/* How close: relative L2 error inside the phantom's cylinder (where it is non-zero), and the total activity. */
void report_error(const struct run *r)
{
  double num = 0, den = 0, sx = 0, sp = 0;
  const float *x = r->x, *phantom = r->phantom;
  for (int64_t v = 0; v < r->l.nvox; v++) {
    sx += x[v];
    sp += phantom[v];
    if (phantom[v] > 0) {
      num += (x[v] - phantom[v]) * (double)(x[v] - phantom[v]);
      den += (double)phantom[v] * phantom[v];
    }
  }
  SAY("relative L2 error to the phantom (inside it): %.3f; total activity %.4g (phantom %.4g)\n", sqrt(num / den),
      sx, sp);
}

