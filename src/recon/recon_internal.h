/* SPDX-License-Identifier: Apache-2.0 */
/* recon_internal.h: what the reconstruction's files share inside libstarproj: the model and reconstruction objects,
 * and each file's calls for the files above it, lowest first: model.c, steps.c, small_rule.c, terms.c, objective.c,
 * recon_devices.c; recon.c (creation) and iterate.c (iterations) on top. */
#ifndef SPROJ_RECON_INTERNAL_H
#define SPROJ_RECON_INTERNAL_H

#include "../core/internal.h"
#include "em_nll.h"
#include "gauss3d.h"

/* The scanner's table for the per-LOR math of tasks (scanner_lors.h) and its size in bytes (geometry.c). */
struct sproj_scanner_table;
const struct sproj_scanner_table *sproj_scanner_table_of(const sproj_scanner *scanner, size_t *bytes);

struct sproj_model {
  sproj_lors *lors;
  const sproj_tof *tof;
  int lm;                       /* TOF listmode: events with bins and a TOF parameter set */
  int num_values;               /* values per LOR of the data and the background: TOF bins of a TOF sinogram, else 1 */
  int add_per_lor;              /* the background holds one value per LOR, spread evenly over its num_values bins */
  const float *add_host;
  struct sproj_vec *mult, *add; /* read-only per-LOR vectors (NULL when absent) */
  sproj_proj *mult_proj;        /* mult as a projection vector (mult is its vec): what the sensitivities back project */
  float add_flat;               /* without add: the background of every value (sproj_model_set_flat_background) */
  float fwhm[3];
  int users;                    /* reconstructions using the model (atomic) */
};

/* Lists of chunks: list k is idx[start[k] .. start[k+1]). */
struct chunk_lists {
  int num;
  int *start, *idx;
};

struct sproj_recon {
  sproj_image *x;
  sproj_model *model, *sens_model;
  sproj_proj *data;              /* NULL: listmode (y = 1) */
  const sproj_chunks *chunks;
  struct chunk_lists subsets;
  sproj_proj *p;                 /* forward values, then ratios: stay where the tasks run */
  float *p_host;                 /* p's host buffer */
  sproj_image *xb, *bp;          /* blurred image (later the blurred back projection), back projection */
  starpu_data_handle_t scratch;  /* the blur's intermediate */
  int blur;
  struct sproj_gauss_arg gauss;
  int num_sens;
  sproj_image **sens;            /* one per subset, or one for all */
  float sens_factor;             /* 1, or 1/S when one sensitivity serves S subsets */
  double sens_background;        /* sum of the sensitivity model's background (listmode only: its objective) */
  double *sens_subset_background; /* listmode: each subset's share of it (its sensitivity LORs', or the sum / S) */
  float max_ratio;               /* > 0: the data terms' quotients capped there (em_ratio.h); 0: none */
  float small_fraction;          /* > 0: STIR's small-value rule (small_rule.c); 0: none */
  starpu_data_handle_t small_data, small_work; /* its largest numerators: the data's, a Hessian call's (NULL: none) */
  float *small_data_host, *small_work_host;
  sproj_proj *px;                /* the Hessian's forward projection of its image (made on first use) */
  float *px_host;                /* px's host buffer */
  int iterations;
  int objective;
  struct sproj_recon_hook hook;  /* distributed layer: reduction of each back projection (reduce NULL: none) */
  struct recon_devices *dev;     /* OS-EM over several devices (recon_devices.c), NULL on one */
};

/* The partial sums of objective tasks: one StarPU vector of SPROJ_NLL_PARTIALS doubles per task, on the host. */
struct nll_sums {
  int num, cap;
  starpu_data_handle_t *handle;
  double **part;
};

/* ---- model.c ---- */
/* Forward (back = 0) or back projection of a list of chunks with the model's projector. */
int recon_model_project(const sproj_model *md, int back, sproj_image *img, sproj_proj *p, const sproj_chunks *ch,
                        const int *list, int num);
/* SPROJ_OK, or the status and message for a NaN / infinite or negative value among the n values of a registered
 * vector (waits for it and gathers it on the host), per_elem values per element. */
int recon_check_handle_values(const char *func, const char *what, const char *elem, starpu_data_handle_t h,
                              int64_t n, int per_elem);

/* ---- steps.c: what the files below build on ---- */
/* StarPU's status of a submission as the library's. */
int recon_insert_status(int starpu_ret);
/* Tasks on images: zeros, the resolution model's blur (in -> out). */
int recon_submit_zero(starpu_data_handle_t h);
int recon_submit_gauss(sproj_recon *r, starpu_data_handle_t in, starpu_data_handle_t out);
/* The blurred image to project: x itself without a resolution model; else r->xb, written by a blur task. */
int recon_submit_blurred(sproj_recon *r, sproj_image *x, sproj_image **src);
/* <s, x> on the host (listmode objective), s the sum of the sensitivities (subset -1) or subset k's sensitivity term
 * (the image its gradient subtracts, times sens_factor). */
int recon_sens_dot(const char *func, sproj_recon *r, sproj_image *x, int subset, double *dot);
void recon_lists_free(struct chunk_lists *l);
/* An image like `like` that lives only where tasks put it (sproj_image_drop drops it), and a projection vector of the
 * model's shape with a host buffer (*values_out, freed after unregistering). */
int recon_temp_image(const char *func, sproj_image **out, const sproj_image *like);
int recon_temp_proj(const char *func, sproj_proj **out, float **values_out, const sproj_model *md);
/* The pieces of a list of chunks grouped into tasks as the projections group them (sproj_task_full; one home per
 * task): task t holds pieces piece[start[t] .. start[t+1]), piece[j] belonging to chunk chunk[j]. */
struct term_groups {
  int num;
  int *start, *piece, *chunk;
};
int recon_groups_make(const sproj_chunks *ch, const int *list, int num, struct term_groups *g);
void recon_groups_free(struct term_groups *g);
/* Copies the LORs and per-LOR inputs (TOF bins, data, multiplicative factors, background) of the chunks of ch to
 * the devices that will use them, ahead of the first task: chunk c to memory node node[dev[c]] (dev[c] < 0 or >=
 * ndev: it stays). Only when a GPU can hold an even share (1 / ndev) of ch's LORs with their inputs four times over
 * (the projections would move them anyway); else nothing is copied. The one place that counts a LOR's bytes. */
int recon_upload_inputs(const char *func, const sproj_recon *r, const sproj_chunks *ch, int ndev, const int *dev,
                        const unsigned *node);
/* Whether two images have the same dimensions, voxel size and origin. */
static inline int recon_same_geometry(const struct sproj_geom *a, const struct sproj_geom *b)
{
  for (int d = 0; d < 3; d++)
    if (a->n[d] != b->n[d] || a->voxel_size[d] != b->voxel_size[d] || a->origin[d] != b->origin[d])
      return 0;
  return 1;
}
/* The sensitivity image subset k divides by (the one of all subsets, times sens_factor, when there is one). */
static inline sproj_image *recon_subset_sens(const sproj_recon *r, int k)
{
  return r->sens[r->num_sens == 1 ? 0 : k];
}

/* ---- small_rule.c: STIR's small-value rule ----
 * create: with r->small_fraction > 0 and sinogram data, its vectors, and the data's largest numerators gathered by
 * tasks. submit: *small = the vector the data-term tasks of kind read (NULL without the rule), after the tasks that
 * gather a Hessian's (pc: the forward values of the pieces, yc: the data). free: unregisters the vectors. */
int recon_small_create(const char *func, sproj_recon *r);
int recon_small_submit(const sproj_recon *r, int kind, const struct term_groups *g, const starpu_data_handle_t *pc,
                       const starpu_data_handle_t *yc, starpu_data_handle_t *small);
void recon_small_free(sproj_recon *r);

/* ---- terms.c ---- */
/* Data-term tasks over r->p (kind: enum sproj_ratio_kind), or objective tasks adding to nll (kind SPROJ_RATIO_EM). */
int recon_submit_terms(sproj_recon *r, const int *list, int num, int kind, struct nll_sums *nll);
/* Registers one more task's vector of partial sums in s and gives its handle (*h), for the task to write. */
int recon_nll_sums_add(struct nll_sums *s, starpu_data_handle_t *h);
/* Waits for the objective tasks of s and returns the sum of their partial sums, added in order. */
double recon_nll_sums_finish(struct nll_sums *s);

/* ---- objective.c ---- */
/* The Poisson negative log-likelihood of x over subset k (k = -1: every subset). */
int recon_nll(const char *func, sproj_recon *r, sproj_image *x, int subset, double *nll);

/* ---- several devices (recon_devices.c) ----
 * create: when the projections run on several devices (sproj_num_devices) and the reconstruction allows it, sets
 * r->dev and replaces r->chunks and r->subsets by the owned chunking (subset k: chunks k * n .. k * n + n - 1, chunk
 * k * n + d homed on device d) before the sensitivities are made; else leaves r->dev NULL. sensitivities: cuts them
 * into the devices' slabs once made. begin: at the start of each sproj_recon_iterate. subset: OS-EM update k as tasks.
 * drop_images: drops the devices' images and slabs, waiting for the tasks that write them (before r->p and r->px are
 * discarded: the back projections into them read r->p). free: undoes the rest of create (after r->p and r->px are
 * gone, whose plans on the owned chunking it would otherwise gather). */
int recon_devices_create(const char *func, sproj_recon *r);
int recon_devices_sensitivities(const char *func, sproj_recon *r);
int recon_devices_begin(sproj_recon *r);
int recon_devices_subset(sproj_recon *r, int k);
void recon_devices_drop_images(sproj_recon *r);
void recon_devices_free(sproj_recon *r);

#endif
