/* SPDX-License-Identifier: Apache-2.0 */
/* preview.c: the PNG previews of the reconstruction, the phantom and the sinogram: drawn by gnuplot with titles,
 * axes and a colour bar, or by libstarproj-io without them where gnuplot is missing or fails. */
#define _GNU_SOURCE /* environ */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "recon.h"

/* The previews are drawn by gnuplot, a separate program, so that they carry a title, axes in mm and a colour bar
 * without starproj holding a font: the data goes to it as binary files in a temporary folder, the commands as a
 * script file, and it runs through posix_spawnp with an argument vector (no shell reads a path). Without gnuplot
 * (or when it fails) the plain previews of libstarproj-io are written instead, on the same scale and slices. */

/* What the previews show: the slice each panel holds its fixed axis at, one window for every image panel (the
 * reconstruction and the phantom on the same scale), and the sinogram of one plane. */
struct preview {
  int slice[3];              /* slice[a]: the index of axis a in the panel that fixes axis a */
  float window[2];           /* lo, hi of the images' grey scale */
  float *sino;               /* [view][radial], TOF bins summed; NULL without a sinogram */
  int num_views, num_radial;
  int plane, axial, seg_planes; /* its index in the sinogram's plane axis; its axial position in segment 0 */
  float sino_window[2];
};

/* The slices through the first sphere of the default phantom (the largest hot one, in the central transaxial
 * plane on the ring) when the run simulated it; the image's centre otherwise (data read from files). */
static void preview_slices(const struct options *o, const struct run *r, int slice[3])
{
  const struct layout *l = &r->l;
  struct sproj_phantom ph;
  int have = r->phantom && sproj_phantom_default(&ph, o->dims, l->vs, l->origin) == SPROJ_OK && ph.num_spheres > 0;
  for (int a = 0; a < 3; a++) {
    long i = have ? lround((ph.spheres[0].centre[a] - l->origin[a]) / l->vs[a]) : o->dims[a] / 2;
    slice[a] = (int)(i < 0 ? 0 : i >= o->dims[a] ? o->dims[a] - 1 : i);
  }
}

/* Copies the panel fixing axis `fixed` at index `at` of image x into out, the lower-numbered free axis fastest
 * (gnuplot's binary array: first index across, second up): transaxial x fastest then y, coronal x then z,
 * sagittal y then z. Returns the number of values. */
static size_t panel_values(const float *x, const int dims[3], int fixed, int at, float *out)
{
  const int u = fixed == 0 ? 1 : 0, w = fixed == 2 ? 1 : 2; /* across, up */
  const int64_t stride[3] = {(int64_t)dims[1] * dims[2], dims[2], 1};
  size_t n = 0;
  for (int b = 0; b < dims[w]; b++)
    for (int a = 0; a < dims[u]; a++)
      out[n++] = x[(int64_t)a * stride[u] + (int64_t)b * stride[w] + (int64_t)at * stride[fixed]];
  return n;
}

/* The window common to the reconstruction and the phantom, from the values of the panels shown: the
 * reconstruction's (sproj_png_auto_window: up to its 99.5th percentile), widened to the phantom's largest value so
 * that the truth is never saturated (its hot spheres are a few voxels of the panels, below a percentile). */
static void preview_window(const struct options *o, const struct run *r, struct preview *pv)
{
  const int *d = o->dims;
  size_t per = (size_t)d[0] * d[1] + (size_t)d[0] * d[2] + (size_t)d[1] * d[2], n = 0;
  float *v = host_alloc(per * sizeof *v);
  for (int a = 0; a < 3; a++)
    n += panel_values(r->x, d, a, pv->slice[a], v + n);
  TRY(sproj_png_auto_window(v, n, pv->window));
  for (int a = 0; r->phantom && a < 3; a++) {
    n = panel_values(r->phantom, d, a, pv->slice[a], v);
    for (size_t i = 0; i < n; i++)
      if (isfinite(v[i]) && v[i] > pv->window[1])
        pv->window[1] = v[i];
  }
  free(v);
}

/* The sinogram of the central plane of segment 0 (radial bin x view), its TOF bins summed, gathered through the
 * scanner's LOR numbering so that it does not depend on how the sinogram is ordered. */
static void preview_sinogram(const struct run *r, struct preview *pv)
{
  const struct layout *l = &r->l;
  int planes;
  pv->sino = NULL;
  if (!r->counts || sproj_scanner_segment_planes(l->scanner, 0, &planes) != SPROJ_OK)
    return;
  /* counts made on the devices: a TOF sinogram's sums over bins come home (one value per LOR), a non-TOF one itself */
  const float *counts = r->counts;
  int nbins = l->nbins;
  if (r->counts_on_devices && r->lor_sums) {
    TRY(sproj_proj_sync(r->lor_sums_proj, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
    counts = r->lor_sums;
    nbins = 1;
  } else if (r->counts_on_devices) {
    TRY(sproj_proj_sync(r->data, NULL, SPROJ_ALL_CHUNKS, SPROJ_SYNC_READ));
  }
  pv->num_views = l->si.num_views;
  pv->num_radial = l->si.num_radial_bins;
  pv->seg_planes = planes;
  pv->axial = planes / 2;
  pv->sino = host_alloc((size_t)pv->num_views * pv->num_radial * sizeof *pv->sino);
  for (int v = 0; v < pv->num_views; v++)
    for (int b = 0; b < pv->num_radial; b++) {
      int64_t lor;
      TRY(sproj_scanner_lor_index(l->scanner, v, 0, pv->axial, b, &lor));
      double s = 0.0;
      for (int t = 0; t < nbins; t++)
        s += counts[lor * nbins + t];
      pv->sino[(size_t)v * pv->num_radial + b] = (float)s;
    }
  /* the plane's index in the raw file's plane axis, where view 0's LORs come first ([plane][radial]); -1 (not
   * named) in an order where they do not */
  int64_t lor0;
  TRY(sproj_scanner_lor_index(l->scanner, 0, 0, pv->axial, 0, &lor0));
  pv->plane = lor0 < l->si.lors_per_view ? (int)(lor0 / l->si.num_radial_bins) : -1;
  TRY(sproj_png_auto_window(pv->sino, (size_t)pv->num_views * pv->num_radial, pv->sino_window));
}

/* Writes n floats to dir/name; 0 on success, else errno's text on stderr and -1. */
static int write_floats(const char *dir, const char *name, const float *v, size_t n)
{
  char *p = path_in(dir, name);
  FILE *fp = fopen(p, "wb");
  int ok = fp && fwrite(v, sizeof *v, n, fp) == n;
  if (fp && fclose(fp) != 0)
    ok = 0;
  if (!ok)
    fprintf(stderr, "starproj-recon: cannot write %s: %s\n", p, strerror(errno));
  free(p);
  return ok ? 0 : -1;
}

/* Removes the temporary folder and what was written in it (only this run's files are there: mkdtemp made it). */
static void remove_folder(const char *dir)
{
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
        char *p = path_in(dir, e->d_name);
        unlink(p);
        free(p);
      }
    closedir(d);
  }
  rmdir(dir);
}

/* Runs gnuplot on the script, its output into dir/gnuplot.log. 0 when it ran and succeeded; otherwise a line on
 * why in why (not found, failed) and -1. */
static int run_gnuplot(const char *dir, const char *script, char *why, size_t len)
{
  char *log = path_in(dir, "gnuplot.log");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  char *argv[] = {"gnuplot", (char *)script, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    snprintf(why, len, rc == ENOENT ? "gnuplot is not installed" : "gnuplot could not start: %s", strerror(rc));
    free(log);
    return -1;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      snprintf(why, len, "waiting for gnuplot: %s", strerror(errno));
      free(log);
      return -1;
    }
  int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    /* its first message says what went wrong */
    char msg[200] = "";
    FILE *fp = fopen(log, "r");
    if (fp) {
      if (!fgets(msg, sizeof msg, fp))
        msg[0] = '\0';
      fclose(fp);
    }
    msg[strcspn(msg, "\n")] = '\0';
    if (WIFEXITED(status))
      snprintf(why, len, "gnuplot failed (exit status %d%s%s)", WEXITSTATUS(status), msg[0] ? ": " : "", msg);
    else
      snprintf(why, len, "gnuplot was ended by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  free(log);
  return ok ? 0 : -1;
}

/* The terminal: pngcairo (antialiased) where gnuplot has it, else png (libgd); both in Debian's gnuplot-nox. */
/* The pictures' sizes in pixels: the three slices side by side (SLICES_PANEL_PX per unit of a panel's height over
 * its width, SLICES_PLOT_FRACTION of the picture's height being plots, SLICES_MARGIN_PX of title), and the
 * sinogram. */
#define SLICES_WIDTH_PX 1500
#define SLICES_PANEL_PX 365.0
#define SLICES_PLOT_FRACTION 0.76
#define SLICES_MARGIN_PX 40.0
#define SLICES_MIN_HEIGHT_PX 400.0
#define SLICES_MAX_HEIGHT_PX 1600.0
#define SINOGRAM_WIDTH_PX 900
#define SINOGRAM_HEIGHT_PX 760

static void script_terminal(FILE *fp, int width, int height)
{
  fprintf(fp, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
              "  set terminal pngcairo size %d,%d font 'sans,10' noenhanced\n"
              "} else {\n"
              "  set terminal png size %d,%d noenhanced\n"
              "}\n", width, height, width, height);
}

/* One image's three panels in a row, mm on the axes, one grey scale and its colour bar; the PNG goes to out. */
static void script_image(FILE *fp, const char *dir, const char *name, const char *title, const char *out,
                         const struct options *o, const struct run *r, const struct preview *pv)
{
  static const char *const axis_name[3] = {"x", "y", "z"}, *const panel_name[3] = {"sagittal", "coronal",
                                                                                   "transaxial"};
  const struct layout *l = &r->l;
  fprintf(fp, "reset\n");
  /* high enough for the tallest panel (up / across, in mm) in a third of the width; the margins are fractions */
  double tallest = 0.0;
  for (int p = 0; p < 3; p++) {
    const int u = p == 0 ? 1 : 0, w = p == 2 ? 1 : 2;
    tallest = fmax(tallest, (double)(o->dims[w] * l->vs[w]) / (double)(o->dims[u] * l->vs[u]));
  }
  double height = SLICES_PANEL_PX * tallest / SLICES_PLOT_FRACTION + SLICES_MARGIN_PX;
  script_terminal(fp, SLICES_WIDTH_PX, (int)fmin(SLICES_MAX_HEIGHT_PX, fmax(SLICES_MIN_HEIGHT_PX, height)));
  fprintf(fp, "set output '%s/%s'\n", dir, out);
  fprintf(fp, "set palette grey\nset cbrange [%.9g:%.9g]\nset cblabel 'activity (a.u.)'\n", (double)pv->window[0],
          (double)pv->window[1]);
  fprintf(fp, "set size ratio -1\nset tics out\nset key off\n");
  /* one colour bar for the three panels, at the right edge */
  fprintf(fp, "set colorbox user origin screen 0.91, screen 0.15 size screen 0.015, screen 0.68\n");
  fprintf(fp, "set multiplot layout 1,3 margins screen 0.05, 0.88, 0.1, 0.86 spacing screen 0.05 "
              "title \"%s\" font ',13'\n", title);
  for (int p = 2; p >= 0; p--) { /* transaxial, coronal, sagittal */
    const int fixed = p, u = fixed == 0 ? 1 : 0, w = fixed == 2 ? 1 : 2;
    fprintf(fp, "set title '%s, %s = %.1f mm (index %d)'\n", panel_name[p], axis_name[fixed],
            (double)(l->origin[fixed] + pv->slice[fixed] * l->vs[fixed]), pv->slice[fixed]);
    fprintf(fp, "set xlabel '%s (mm)'\nset ylabel '%s (mm)'\n", axis_name[u], axis_name[w]);
    /* the plot's edges at the outer edges of the voxels */
    fprintf(fp, "set xrange [%.9g:%.9g]\nset yrange [%.9g:%.9g]\n",
            (double)(l->origin[u] - 0.5f * l->vs[u]), (double)(l->origin[u] + (o->dims[u] - 0.5f) * l->vs[u]),
            (double)(l->origin[w] - 0.5f * l->vs[w]), (double)(l->origin[w] + (o->dims[w] - 0.5f) * l->vs[w]));
    fprintf(fp, "plot '%s/%s%d.f32' binary array=(%d,%d) format='%%float32' dx=%.9g dy=%.9g origin=(%.9g,%.9g) "
                "with image\n", dir, name, p, o->dims[u], o->dims[w], (double)l->vs[u], (double)l->vs[w],
            (double)l->origin[u], (double)l->origin[w]);
  }
  fprintf(fp, "unset multiplot\nunset output\n");
}

/* The sinogram: radial bins across, views up. */
static void script_sinogram(FILE *fp, const char *dir, const struct options *o, const struct preview *pv)
{
  fprintf(fp, "reset\n");
  script_terminal(fp, SINOGRAM_WIDTH_PX, SINOGRAM_HEIGHT_PX);
  fprintf(fp, "set output '%s/sinogram_view0.png'\n", dir);
  fprintf(fp, "set palette grey\nset cbrange [%.9g:%.9g]\nset cblabel 'counts per bin%s'\n",
          (double)pv->sino_window[0], (double)pv->sino_window[1], o->tof ? ", TOF bins summed" : "");
  fprintf(fp, "set tics out\nset key off\n");
  char plane[32] = "";
  if (pv->plane >= 0)
    snprintf(plane, sizeof plane, " %d", pv->plane);
  fprintf(fp, "set title \"starproj-recon: sinogram of plane%s (segment 0, axial position %d of 0 .. %d), %d views "
              "x %d radial bins\" font ',12'\n", plane, pv->axial, pv->seg_planes - 1, pv->num_views, pv->num_radial);
  fprintf(fp, "set xlabel 'radial bin'\nset ylabel 'view'\n");
  fprintf(fp, "set xrange [-0.5:%g]\nset yrange [-0.5:%g]\n", pv->num_radial - 0.5, pv->num_views - 0.5);
  fprintf(fp, "plot '%s/sino.f32' binary array=(%d,%d) format='%%float32' with image\n", dir, pv->num_radial,
          pv->num_views);
  fprintf(fp, "unset output\n");
}

/* Draws recon.png, phantom.png (when simulated) and the sinogram with gnuplot in a temporary folder inside the
 * output folder (so that the finished files are renamed into place, never seen half written), which it removes.
 * Returns 0, or -1 with the reason in why. */
static int draw_with_gnuplot(const struct options *o, const struct run *r, const struct preview *pv, char *why,
                             size_t len)
{
  /* the script names files in quotes: a name that could end them is not passed at all */
  if (strpbrk(o->output, "'\"\\\n")) {
    snprintf(why, len, "the output folder's name has a quote, backslash or newline, which a gnuplot script "
             "cannot name safely");
    return -1;
  }
  const int *d = o->dims;
  size_t most = (size_t)d[0] * d[1];
  most = (size_t)d[0] * d[2] > most ? (size_t)d[0] * d[2] : most;
  most = (size_t)d[1] * d[2] > most ? (size_t)d[1] * d[2] : most;
  float *v = host_alloc(most * sizeof *v);
  char *dir = path_in(o->output, ".starproj-recon-preview-XXXXXX");
  if (!mkdtemp(dir)) {
    snprintf(why, len, "cannot make a temporary folder in %s: %s", o->output, strerror(errno));
    free(dir);
    free(v);
    return -1;
  }
  static const char *const names[3] = {"recon", "phantom", "sinogram_view0"};
  int fail = 0;
  for (int img = 0; img < 2 && !fail; img++) {
    const float *x = img ? r->phantom : r->x;
    for (int a = 0; x && a < 3 && !fail; a++) {
      char name[32];
      snprintf(name, sizeof name, "%s%d.f32", names[img], a);
      fail = write_floats(dir, name, v, panel_values(x, d, a, pv->slice[a], v));
    }
  }
  free(v);
  if (!fail && pv->sino)
    fail = write_floats(dir, "sino.f32", pv->sino, (size_t)pv->num_views * pv->num_radial);
  char *script = path_in(dir, "previews.gp");
  FILE *fp = fail ? NULL : fopen(script, "w");
  if (fp) {
    char title[256];
    snprintf(title, sizeof title, "starproj-recon: %s reconstruction, %d iteration%s x %d subset%s, %s scanner",
             o->listmode || o->input_lm ? "LM-OSEM" : "OSEM", o->iterations, o->iterations == 1 ? "" : "s",
             o->subsets, o->subsets == 1 ? "" : "s", o->scanner);
    script_image(fp, dir, names[0], title, "recon.png", o, r, pv);
    if (r->phantom) {
      snprintf(title, sizeof title, "starproj-recon: the simulated phantom (on the grey scale of recon.png)");
      script_image(fp, dir, names[1], title, "phantom.png", o, r, pv);
    }
    if (pv->sino)
      script_sinogram(fp, dir, o, pv);
    fail = fclose(fp) != 0;
  }
  if (fail || !fp)
    snprintf(why, len, "cannot write the data for gnuplot in %s: %s", dir, strerror(errno));
  else
    fail = run_gnuplot(dir, script, why, len);
  /* the finished PNGs into place */
  for (int k = 0; k < 3 && !fail; k++) {
    if ((k == 1 && !r->phantom) || (k == 2 && !pv->sino))
      continue;
    char png[40];
    snprintf(png, sizeof png, "%s.png", names[k]);
    char *from = path_in(dir, png), *to = path_in(o->output, png);
    if (rename(from, to) != 0) {
      snprintf(why, len, "cannot rename %s to %s: %s", from, to, strerror(errno));
      fail = 1;
    }
    free(from);
    free(to);
  }
  remove_folder(dir);
  free(script);
  free(dir);
  return fail ? -1 : 0;
}

/* The previews, named on the line that write_outputs began; why gnuplot did not draw them, when it did not. */
void write_previews(const struct options *o, const struct run *r)
{
  const struct layout *l = &r->l;
  char *p;
  struct preview pv;
  preview_slices(o, r, pv.slice);
  preview_window(o, r, &pv);
  preview_sinogram(r, &pv);
  static const char *const pngs[3] = {"recon.png", "phantom.png", "sinogram_view0.png"};
  const int shown[3] = {1, r->phantom != NULL, pv.sino != NULL};
  for (int k = 0; k < 3; k++)
    if (shown[k])
      free(output_file(o->output, pngs[k]));
  char why[400];
  int drawn = draw_with_gnuplot(o, r, &pv, why, sizeof why) == 0;
  if (!drawn) {
    /* the plain previews: the same slices, window and sinogram, without text */
    TRY(sproj_png_write_image_slices(p = path_in(o->output, "recon.png"), r->x, o->dims, l->vs, pv.slice,
                                     pv.window));
    free(p);
    if (r->phantom) {
      TRY(sproj_png_write_image_slices(p = path_in(o->output, "phantom.png"), r->phantom, o->dims, l->vs,
                                       pv.slice, pv.window));
      free(p);
    }
    if (pv.sino) {
      /* the plane's sinogram as a 3-D array of one plane: views down the rows, radial bins across */
      const int64_t shape[3] = {pv.num_views, 1, pv.num_radial};
      TRY(sproj_png_write_sino(p = path_in(o->output, "sinogram_view0.png"), pv.sino, 3, shape, 1, 2, 0, 0,
                               pv.sino_window));
      free(p);
    }
  }
  for (int k = 0; k < 3; k++) {
    if (!shown[k])
      continue;
    p = path_in(o->output, pngs[k]);
    SAY(", %s", p);
    free(p);
  }
  SAY("\n");
  if (!drawn)
    SAY("previews: %s; written with libpng instead, without labels or scale (grey %g .. %g)\n", why,
        (double)pv.window[0], (double)pv.window[1]);
  free(pv.sino);
}
