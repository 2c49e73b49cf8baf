/* SPDX-License-Identifier: Apache-2.0 */
/* recon_scene.h: the small PET scene the reconstruction tests share: a ring scanner generated here, a phantom, the
 * forward model's factors and background, and data (noise-free, or integer counts with one listmode event each). */
#ifndef SPROJ_RECON_SCENE_H
#define SPROJ_RECON_SCENE_H

#include <stdint.h>
#include "testutil.h"

struct sproj_recon_hook;

struct scene {
  struct tu_geom g;          /* image */
  int nviews, nrad, nplanes;
  int64_t nlors, per_view;   /* LORs are [view][plane][radial bin]: a view is one contiguous range */
  float *xs, *xe;
  float *truth;              /* phantom, scaled so that a LOR holds a few counts */
  float *mult, *add;         /* per LOR: m in [0.5, 1], a ~ 20% of the mean of m * A x */
  struct sproj_tof_params tof;
  float *add_tof;            /* [lor][bin]: a / num_bins */
};

/* Builds the scanner, phantom and factors (every buffer malloc'd). */
void scene_build(struct scene *s);
void scene_free(struct scene *s);

/* Chunking with one chunk per view. */
int scene_views(const struct scene *s, sproj_lors *lors, sproj_chunks **views);

/* Expected data m * A x + a through the library (blurred: scene_expected_blurred); tof 0: one value
 * per LOR, else [lor][bin]. */
int scene_expected(const struct scene *s, const float *img, int tof, float *out);

/* Integer counts floor(ybar + u), u uniform in [0, 1) (unbiased, deterministic for a seed). */
void scene_counts(const float *ybar, int64_t n, float *counts);

/* Listmode events of integer counts (values_per_lor 1: non-TOF; else TOF bins [lor][bin]): one event per count, in
 * the order of the LORs, with the LOR's endpoints, m, a (per bin for TOF) and TOF bin. Returns the number of
 * events; the per-view ranges of events go to view_first / view_count (nviews each). */
int64_t scene_events(const struct scene *s, const float *counts, int values_per_lor, float **xs, float **xe,
                     int16_t **bins, float **mult, float **add, int64_t *view_first, int64_t *view_count);

/* Copies of a float array; an image of ones. */
float *scene_copy(const float *v, int64_t n);
float *scene_ones(const struct scene *s);

/* Asserts a status, printing the library's message when it differs. */
#define EXPECT(call, status)                                                                                   \
  do {                                                                                                         \
    int rc_ = (call);                                                                                          \
    ck_assert_msg(rc_ == (status), "%s returned %d (%s: %s), expected %d", #call, rc_, sproj_strerror(rc_),      \
                  sproj_last_error(), (status));                                                               \
  } while (0)

/* Objectives and times of the iterations of a run (scene_record is its callback). */
struct trace {
  int n;
  double nll[64];
  double elapsed[64];
};
int scene_record(const struct sproj_recon_progress *pr, void *user);

/* A sinogram OSEM of the scene set up through the public API (registered LORs, views, TOF parameters when tof, model
 * with the scene's m and a and the resolution model fwhm, image x, data, S interleaved subsets), and its teardown;
 * both assert every status. */
struct scene_osem {
  sproj_lors *lors;
  sproj_chunks *views;
  sproj_tof *tof;
  sproj_model *model;
  sproj_image *img;
  sproj_proj *y;
  sproj_recon *r;
};
void scene_osem_open(struct scene_osem *o, const struct scene *s, int tof, float *x, float *data, const float *fwhm,
                     int S);
/* A configuration of o's model, data and views in S interleaved subsets, the rest at its defaults: a second
 * reconstruction beside o's. */
void scene_osem_config(const struct scene_osem *o, int S, struct sproj_recon_config *cfg);
/* The S interleaved subsets' sensitivities of o computed by the caller: images of sproj_image_create, zeroed, each the
 * back projection of the scene's factors (registered as *m) over its views, submitted without waiting; the images go
 * into sens[0 .. S-1]. scene_sensitivity_images_free unregisters both. */
void scene_sensitivity_images(const struct scene_osem *o, const struct scene *s, int S, sproj_proj **m, sproj_image **sens);
void scene_sensitivity_images_free(sproj_proj *m, sproj_image **sens, int S);
/* The same with the configuration's max_ratio (sproj_recon_config). */
void scene_osem_open_capped(struct scene_osem *o, const struct scene *s, int tof, float *x, float *data,
                            const float *fwhm, int S, float max_ratio);
/* The same with STIR's small-value rule as well (sproj_recon_config.small_fraction). */
void scene_osem_open_rule(struct scene_osem *o, const struct scene *s, int tof, float *x, float *data, const float *fwhm,
                          int S, float max_ratio, float small_fraction);
void scene_osem_close(struct scene_osem *o);

/* Sinogram reconstruction of data (non-TOF; TOF with tof = 1; tof = 2: TOF with the background given per LOR,
 * sproj_model_create_tof_uniform_add) with S interleaved subsets of views (order: NULL, or an explicit list of the
 * one subset's chunks), fwhm the resolution model (NULL: none), iters iterations; x (set to 1 here) holds the
 * result; trace (not NULL) gets the objective of each iteration; sens (not NULL) subset 0's sensitivity. */
void scene_run_sino(const struct scene *s, int tof, const float *fwhm, int S, const int *order, float *data, int iters,
                    float *x, struct trace *trace, float *sens);
/* Not NULL: scene_run_sino creates its reconstruction with this hook, as the distributed layer would
 * (sproj_recon_create_hooked). */
extern const struct sproj_recon_hook *scene_hook;
/* Listmode reconstruction of one event per count with the sinogram's LORs and m as sensitivity model: S subsets of
 * interleaved per-view event chunks, per-subset sensitivities over the same views when per_subset. */
void scene_run_lm(const struct scene *s, int tof, int S, int per_subset, const float *counts, int iters, float *x,
                  struct trace *trace);

#endif
