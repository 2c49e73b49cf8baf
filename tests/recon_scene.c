/* SPDX-License-Identifier: Apache-2.0 */
/* recon_scene.c: the ring scanner, phantom, forward model and data of the reconstruction tests. */
#include "recon_scene.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
/* the hook the distributed layer gives a reconstruction: libstarproj's, not public */
#include "../src/core/shared.h"

const struct sproj_recon_hook *scene_hook;

#define RING_RADIUS 80.0
#define NRINGS 4
#define RING_PITCH 6.0
#define RAD_STEP 3.5

float *scene_copy(const float *v, int64_t n)
{
  float *c = tu_alloc(n);
  memcpy(c, v, (size_t)n * sizeof *c);
  return c;
}

/* cylinder (1) with a hot ball (3) and a cold ball (0), values at voxel centres */
static void phantom(const struct tu_geom *g, float *img, float scale)
{
  for (int i = 0; i < g->n[0]; i++)
    for (int j = 0; j < g->n[1]; j++)
      for (int k = 0; k < g->n[2]; k++) {
        double x = g->origin[0] + i * g->vs[0], y = g->origin[1] + j * g->vs[1], z = g->origin[2] + k * g->vs[2];
        float v = x * x + y * y <= 30.0 * 30.0 && fabs(z) <= 8.0 ? 1.0f : 0.0f;
        if ((x - 12) * (x - 12) + (y - 6) * (y - 6) + z * z <= 8.0 * 8.0)
          v = 3.0f;
        if ((x + 14) * (x + 14) + (y + 4) * (y + 4) + z * z <= 7.0 * 7.0)
          v = 0.0f;
        img[((int64_t)i * g->n[1] + j) * g->n[2] + k] = v * scale;
      }
}

void scene_build(struct scene *s)
{
  memset(s, 0, sizeof *s);
  /* the two outer planes lie beyond the rings: no LOR reaches them */
  s->g = (struct tu_geom){{24, 24, 8}, {4.0f, 4.0f, 4.0f}, {-46.0f, -46.0f, -14.0f}};
  s->nviews = 64;
  s->nrad = 33;
  s->nplanes = NRINGS * NRINGS;
  s->per_view = (int64_t)s->nplanes * s->nrad;
  s->nlors = s->nviews * s->per_view;
  s->xs = tu_alloc(3 * s->nlors);
  s->xe = tu_alloc(3 * s->nlors);
  int64_t i = 0;
  for (int v = 0; v < s->nviews; v++) {
    double phi = M_PI * v / s->nviews, c = cos(phi), sn = sin(phi);
    for (int r1 = 0; r1 < NRINGS; r1++)
      for (int r2 = 0; r2 < NRINGS; r2++)
        for (int r = 0; r < s->nrad; r++, i++) {
          /* the chord at signed distance d from the centre, between two points of the detector ring */
          double d = (r - 0.5 * (s->nrad - 1)) * RAD_STEP, h = sqrt(RING_RADIUS * RING_RADIUS - d * d);
          double px = -d * sn, py = d * c;
          s->xs[3 * i] = (float)(px - h * c);
          s->xs[3 * i + 1] = (float)(py - h * sn);
          s->xs[3 * i + 2] = (float)((r1 - 0.5 * (NRINGS - 1)) * RING_PITCH);
          s->xe[3 * i] = (float)(px + h * c);
          s->xe[3 * i + 1] = (float)(py + h * sn);
          s->xe[3 * i + 2] = (float)((r2 - 0.5 * (NRINGS - 1)) * RING_PITCH);
        }
  }
  s->truth = tu_alloc(tu_nvox(&s->g));
  /* about 2 counts per LOR on average */
  phantom(&s->g, s->truth, 0.05f);
  s->mult = tu_alloc(s->nlors);
  tu_fill_uniform(s->mult, s->nlors, 0.5f, 1.0f);
  float *ax = tu_alloc(s->nlors);
  if (tu_fwd_whole(&s->g, s->truth, s->xs, s->xe, s->nlors, ax) != SPROJ_OK)
    exit(99);
  double mean = 0.0;
  for (int64_t l = 0; l < s->nlors; l++)
    mean += (double)s->mult[l] * ax[l];
  mean /= s->nlors;
  free(ax);
  s->add = tu_alloc(s->nlors);
  for (int64_t l = 0; l < s->nlors; l++)
    s->add[l] = (float)(0.2 * mean * tu_uniform(0.5, 1.5));
  /* 13 bins of 20 mm cover the +-70 mm of any LOR inside the image around its midpoint and the 3 sigma beyond:
   * every sample's TOF weights then add up to 1, and the non-TOF sensitivity is exact */
  s->tof = (struct sproj_tof_params){20.0f, 13, 3.0f, 15.0f, 0.0f};
  s->add_tof = tu_alloc(s->nlors * s->tof.num_bins);
  for (int64_t l = 0; l < s->nlors; l++)
    for (int b = 0; b < s->tof.num_bins; b++)
      s->add_tof[l * s->tof.num_bins + b] = s->add[l] / s->tof.num_bins;
}

void scene_free(struct scene *s)
{
  free(s->xs);
  free(s->xe);
  free(s->truth);
  free(s->mult);
  free(s->add);
  free(s->add_tof);
}

int scene_views(const struct scene *s, sproj_lors *lors, sproj_chunks **views)
{
  int64_t first[256], count[256];
  for (int v = 0; v < s->nviews; v++) {
    first[v] = v * s->per_view;
    count[v] = s->per_view;
  }
  return sproj_chunks_create_ranges(views, lors, s->nviews, first, count);
}

int scene_expected(const struct scene *s, const float *img, int tof, float *out)
{
  int64_t nvox = tu_nvox(&s->g);
  float *src = scene_copy(img, nvox);
  int nb = tof ? s->tof.num_bins : 1, ret;
  sproj_image *im;
  sproj_lors *lors;
  sproj_proj *proj;
  sproj_tof *t = NULL;
  if ((ret = sproj_image_register(&im, src, s->g.n, s->g.vs, s->g.origin)) ||
      (ret = sproj_lors_register(&lors, s->xs, s->xe, s->nlors)))
    return ret;
  ret = tof ? sproj_proj_register_tof(&proj, out, lors, nb) : sproj_proj_register(&proj, out, lors);
  if (!ret && tof)
    ret = sproj_tof_register(&t, &s->tof, NULL, NULL, NULL);
  if (!ret)
    ret = tof ? sproj_fwd_tof_sino(im, proj, NULL, SPROJ_ALL_CHUNKS, t) : sproj_fwd(im, proj, NULL, SPROJ_ALL_CHUNKS);
  sproj_proj_unregister(proj);
  sproj_tof_unregister(t);
  sproj_lors_unregister(lors);
  sproj_image_unregister(im);
  free(src);
  if (ret)
    return ret;
  for (int64_t l = 0; l < s->nlors; l++)
    for (int b = 0; b < nb; b++) {
      int64_t k = l * nb + b;
      out[k] = s->mult[l] * out[k] + (tof ? s->add_tof[k] : s->add[l]);
    }
  return SPROJ_OK;
}

void scene_counts(const float *ybar, int64_t n, float *counts)
{
  for (int64_t i = 0; i < n; i++)
    counts[i] = (float)floor(ybar[i] + tu_uniform(0.0, 1.0));
}

int64_t scene_events(const struct scene *s, const float *counts, int values_per_lor, float **xs, float **xe,
                     int16_t **bins, float **mult, float **add, int64_t *view_first, int64_t *view_count)
{
  int64_t n = 0;
  for (int64_t k = 0; k < s->nlors * values_per_lor; k++)
    n += (int64_t)counts[k];
  *xs = tu_alloc(3 * n);
  *xe = tu_alloc(3 * n);
  *mult = tu_alloc(n);
  *add = tu_alloc(n);
  *bins = malloc(n * sizeof **bins);
  int64_t e = 0;
  for (int v = 0; v < s->nviews; v++) {
    view_first[v] = e;
    for (int64_t l = v * s->per_view; l < (v + 1) * s->per_view; l++)
      for (int b = 0; b < values_per_lor; b++) {
        int64_t k = l * values_per_lor + b;
        for (int c = 0; c < (int)counts[k]; c++, e++) {
          memcpy(*xs + 3 * e, s->xs + 3 * l, 3 * sizeof(float));
          memcpy(*xe + 3 * e, s->xe + 3 * l, 3 * sizeof(float));
          (*mult)[e] = s->mult[l];
          (*add)[e] = values_per_lor > 1 ? s->add_tof[k] : s->add[l];
          (*bins)[e] = (int16_t)b;
        }
      }
    view_count[v] = e - view_first[v];
  }
  return n;
}

/* ---- reconstructions through the library ---- */
int scene_record(const struct sproj_recon_progress *pr, void *user)
{
  struct trace *t = user;
  ck_assert_int_eq(pr->iteration, t->n + 1);
  ck_assert_int_eq(pr->has_objective, 1);
  if (t->n < 64) {
    t->nll[t->n] = pr->objective;
    t->elapsed[t->n] = pr->elapsed;
  }
  t->n++;
  return 0;
}

float *scene_ones(const struct scene *s)
{
  float *x = tu_alloc(tu_nvox(&s->g));
  for (int64_t v = 0; v < tu_nvox(&s->g); v++)
    x[v] = 1.0f;
  return x;
}

void scene_run_sino(const struct scene *s, int tof, const float *fwhm, int S, const int *order, float *data, int iters,
                    float *x, struct trace *trace, float *sens)
{
  sproj_lors *lors;
  sproj_chunks *views;
  sproj_tof *t = NULL;
  sproj_model *model;
  sproj_image *img;
  sproj_proj *y;
  sproj_recon *r;
  for (int64_t v = 0; v < tu_nvox(&s->g); v++)
    x[v] = 1.0f;
  ck_assert_int_eq(sproj_lors_register(&lors, s->xs, s->xe, s->nlors), SPROJ_OK);
  ck_assert_int_eq(scene_views(s, lors, &views), SPROJ_OK);
  if (tof)
    ck_assert_int_eq(sproj_tof_register(&t, &s->tof, NULL, NULL, NULL), SPROJ_OK);
  if (tof == 2) /* the same background, one value per LOR spread over its bins by the library */
    EXPECT(sproj_model_create_tof_uniform_add(&model, lors, s->mult, s->add, t, fwhm), SPROJ_OK);
  else
    EXPECT(sproj_model_create(&model, lors, s->mult, tof ? s->add_tof : s->add, t, fwhm), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&img, x, s->g.n, s->g.vs, s->g.origin), SPROJ_OK);
  ck_assert_int_eq(tof ? sproj_proj_register_tof(&y, data, lors, s->tof.num_bins) : sproj_proj_register(&y, data, lors),
                   SPROJ_OK);
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = model;
  cfg.data = y;
  cfg.chunks = views;
  cfg.num_subsets = S;
  int size = s->nviews;
  if (order) {
    cfg.subset_chunks = order;
    cfg.subset_sizes = &size;
  }
  cfg.objective = trace != NULL;
  EXPECT(scene_hook ? sproj_recon_create_hooked("scene_run_sino", &r, img, &cfg, scene_hook)
                    : sproj_recon_create(&r, img, &cfg), SPROJ_OK);
  if (sens)
    EXPECT(sproj_recon_sensitivity(r, 0, sens), SPROJ_OK);
  if (trace)
    trace->n = 0;
  EXPECT(sproj_recon_iterate(r, iters, trace ? scene_record : NULL, trace), SPROJ_OK);
  EXPECT(sproj_recon_destroy(r), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(y), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(model), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(t), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(views), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
}

void scene_run_lm(const struct scene *s, int tof, int S, int per_subset, const float *counts, int iters, float *x,
                  struct trace *trace)
{
  int nb = tof ? s->tof.num_bins : 1;
  float *exs, *exe, *em, *ea;
  int16_t *eb;
  int64_t first[256], count[256];
  int64_t n = scene_events(s, counts, nb, &exs, &exe, &eb, &em, &ea, first, count);
  sproj_lors *lors, *events;
  sproj_chunks *views, *evchunks;
  sproj_tof *t = NULL;
  sproj_model *model, *sens_model;
  sproj_image *img;
  sproj_recon *r;
  for (int64_t v = 0; v < tu_nvox(&s->g); v++)
    x[v] = 1.0f;
  ck_assert_int_eq(sproj_lors_register(&lors, s->xs, s->xe, s->nlors), SPROJ_OK);
  ck_assert_int_eq(scene_views(s, lors, &views), SPROJ_OK);
  if (tof) {
    ck_assert_int_eq(sproj_tof_register(&t, &s->tof, NULL, NULL, NULL), SPROJ_OK);
    ck_assert_int_eq(sproj_lors_register_events(&events, exs, exe, eb, n), SPROJ_OK);
  } else {
    ck_assert_int_eq(sproj_lors_register(&events, exs, exe, n), SPROJ_OK);
  }
  ck_assert_int_eq(sproj_chunks_create_ranges(&evchunks, events, s->nviews, first, count), SPROJ_OK);
  EXPECT(sproj_model_create(&model, events, em, ea, t, NULL), SPROJ_OK);
  /* the sensitivity LORs carry the sinogram background summed over TOF bins: the objective is then the sinogram's */
  EXPECT(sproj_model_create(&sens_model, lors, s->mult, s->add, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&img, x, s->g.n, s->g.vs, s->g.origin), SPROJ_OK);
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = model;
  cfg.chunks = evchunks;
  cfg.num_subsets = S;
  cfg.sens_model = sens_model;
  if (per_subset)
    cfg.sens_chunks = views;
  cfg.objective = trace != NULL;
  EXPECT(sproj_recon_create(&r, img, &cfg), SPROJ_OK);
  if (trace)
    trace->n = 0;
  EXPECT(sproj_recon_iterate(r, iters, trace ? scene_record : NULL, trace), SPROJ_OK);
  EXPECT(sproj_recon_destroy(r), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(img), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(model), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(sens_model), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(t), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(views), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(evchunks), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(lors), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(events), SPROJ_OK);
  free(exs);
  free(exe);
  free(eb);
  free(em);
  free(ea);
}


void scene_osem_open(struct scene_osem *o, const struct scene *s, int tof, float *x, float *data,
                     const float *fwhm, int S)
{
  scene_osem_open_capped(o, s, tof, x, data, fwhm, S, 0.0f);
}

void scene_osem_open_capped(struct scene_osem *o, const struct scene *s, int tof, float *x, float *data,
                            const float *fwhm, int S, float max_ratio)
{
  scene_osem_open_rule(o, s, tof, x, data, fwhm, S, max_ratio, 0.0f);
}

void scene_osem_open_rule(struct scene_osem *o, const struct scene *s, int tof, float *x, float *data, const float *fwhm,
                          int S, float max_ratio, float small_fraction)
{
  o->tof = NULL;
  ck_assert_int_eq(sproj_lors_register(&o->lors, s->xs, s->xe, s->nlors), SPROJ_OK);
  ck_assert_int_eq(scene_views(s, o->lors, &o->views), SPROJ_OK);
  if (tof)
    ck_assert_int_eq(sproj_tof_register(&o->tof, &s->tof, NULL, NULL, NULL), SPROJ_OK);
  ck_assert_int_eq(sproj_model_create(&o->model, o->lors, s->mult, tof ? s->add_tof : s->add, o->tof, fwhm), SPROJ_OK);
  ck_assert_int_eq(sproj_image_register(&o->img, x, s->g.n, s->g.vs, s->g.origin), SPROJ_OK);
  ck_assert_int_eq(tof ? sproj_proj_register_tof(&o->y, data, o->lors, s->tof.num_bins)
                       : sproj_proj_register(&o->y, data, o->lors), SPROJ_OK);
  struct sproj_recon_config cfg;
  sproj_recon_config_init(&cfg);
  cfg.model = o->model;
  cfg.data = o->y;
  cfg.chunks = o->views;
  cfg.num_subsets = S;
  cfg.max_ratio = max_ratio;
  cfg.small_fraction = small_fraction;
  EXPECT(sproj_recon_create(&o->r, o->img, &cfg), SPROJ_OK);
}
void scene_osem_config(const struct scene_osem *o, int S, struct sproj_recon_config *cfg)
{
  sproj_recon_config_init(cfg);
  cfg->model = o->model;
  cfg->data = o->y;
  cfg->chunks = o->views;
  cfg->num_subsets = S;
}

void scene_sensitivity_images(const struct scene_osem *o, const struct scene *s, int S, sproj_proj **m, sproj_image **sens)
{
  ck_assert_int_eq(sproj_proj_register(m, s->mult, o->lors), SPROJ_OK);
  int *list = malloc((size_t)s->nviews * sizeof *list);
  ck_assert_ptr_nonnull(list);
  for (int k = 0; k < S; k++) {
    int num = 0;
    for (int v = k; v < s->nviews; v += S)
      list[num++] = v;
    ck_assert_int_eq(sproj_image_create(&sens[k], s->g.n, s->g.vs, s->g.origin), SPROJ_OK);
    ck_assert_int_eq(sproj_image_zero(sens[k]), SPROJ_OK);
    ck_assert_int_eq(sproj_back_chunks(sens[k], *m, o->views, list, num), SPROJ_OK);
  }
  free(list);
}

void scene_sensitivity_images_free(sproj_proj *m, sproj_image **sens, int S)
{
  for (int k = 0; k < S; k++)
    ck_assert_int_eq(sproj_image_unregister(sens[k]), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(m), SPROJ_OK);
}

void scene_osem_close(struct scene_osem *o)
{
  ck_assert_int_eq(sproj_recon_destroy(o->r), SPROJ_OK);
  ck_assert_int_eq(sproj_image_unregister(o->img), SPROJ_OK);
  ck_assert_int_eq(sproj_proj_unregister(o->y), SPROJ_OK);
  ck_assert_int_eq(sproj_model_destroy(o->model), SPROJ_OK);
  ck_assert_int_eq(sproj_tof_unregister(o->tof), SPROJ_OK);
  ck_assert_int_eq(sproj_chunks_destroy(o->views), SPROJ_OK);
  ck_assert_int_eq(sproj_lors_unregister(o->lors), SPROJ_OK);
}
