/* SPDX-License-Identifier: Apache-2.0 */
/* recon.c: a reconstruction's creation and destruction: its configuration, subsets, temporaries, chunks spread
 * over the GPUs, sensitivities and background sums (the steps they are made of: steps.c). */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "recon_internal.h"

void sproj_recon_config_init(struct sproj_recon_config *cfg)
{
  if (!cfg)
    return;
  memset(cfg, 0, sizeof *cfg);
  cfg->num_subsets = 1;
}

/* Validates and copies S lists of chunks of ch (idx NULL: interleaved, chunk c in list c % S). */
static int lists_make(const char *func, const char *what, const sproj_chunks *ch, int S, const int *idx,
                      const int *sizes, struct chunk_lists *out)
{
  int nch = ch->num_chunks;
  if (S < 1)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%d subsets: there must be at least 1", S);
  if (S > nch)
    return sproj_fail(SPROJ_ERR_RANGE, func, "%d subsets of %d chunks (%s): at most one subset per chunk", S, nch, what);
  if (idx && !sizes)
    return sproj_fail(SPROJ_ERR_NULL, func, "%s: subset sizes are NULL", what);
  int64_t total = 0;
  for (int k = 0; idx && k < S; k++) {
    if (sizes[k] == 0)
      return sproj_fail(SPROJ_ERR_EMPTY, func, "%s: subset %d has no chunk", what, k);
    if (sizes[k] < 0)
      return sproj_fail(SPROJ_ERR_DIMS, func, "%s: subset %d has %d chunks", what, k, sizes[k]);
    total += sizes[k];
    if (total > INT32_MAX / 2)
      return sproj_fail(SPROJ_ERR_OVERFLOW, func, "%s: too many chunks", what);
  }
  for (int64_t i = 0; idx && i < total; i++)
    if (idx[i] < 0 || idx[i] >= nch)
      return sproj_fail(SPROJ_ERR_RANGE, func, "%s: chunk %d outside 0..%d", what, idx[i], nch - 1);
  /* a chunk twice in one subset would get the ratio of its ratio */
  if (idx) {
    int *seen = calloc(nch, sizeof *seen), pos = 0;
    if (!seen)
      return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
    for (int k = 0; k < S; k++)
      for (int j = 0; j < sizes[k]; j++, pos++) {
        if (seen[idx[pos]] == k + 1) {
          free(seen);
          return sproj_fail(SPROJ_ERR_RANGE, func, "%s: chunk %d appears twice in subset %d", what, idx[pos], k);
        }
        seen[idx[pos]] = k + 1;
      }
    free(seen);
  }
  if (!idx)
    total = nch;
  out->num = S;
  out->start = malloc((S + 1) * sizeof *out->start);
  out->idx = malloc(total * sizeof *out->idx);
  if (!out->start || !out->idx) {
    recon_lists_free(out);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  int pos = 0;
  for (int k = 0; k < S; k++) {
    out->start[k] = pos;
    if (idx) {
      memcpy(out->idx + pos, idx + pos, sizes[k] * sizeof *idx);
      pos += sizes[k];
    } else {
      for (int c = k; c < nch; c += S)
        out->idx[pos++] = c;
    }
  }
  out->start[S] = pos;
  return SPROJ_OK;
}

/* With several GPUs and projections on GPUs alone, every chunk's LORs and per-LOR inputs (TOF bins, data,
 * multiplicative factors, additive terms) are uploaded to one GPU before the first task: the chunks of each subset
 * spread evenly over the GPUs (each to the one with the fewest of that subset's LORs, ties to the one with the
 * fewest in all), so that every subset keeps every GPU busy. The projection and ratio tasks then follow their LORs
 * (sproj_workers_holding) and the forward values, ratios and inputs never move again: between iterations only the
 * image crosses between the GPUs. Skipped when a GPU could not hold its share four times over; a chunk that does not
 * fit is simply not uploaded (its tasks go wherever the scheduler puts them). */
static int spread_chunks(const char *func, sproj_recon *r)
{
  const sproj_chunks *ch = r->chunks;
  int ngpus = sproj_rt.ngpus;
  /* tasks follow their LORs only with 2..SPROJ_MAX_STICKY_GPUS GPUs (sproj_workers_holding) */
  if (ngpus < 2 || !sproj_rt.gpu_set_workers || sproj_rt.where != STARPU_CUDA)
    return SPROJ_OK;
  int64_t total[SPROJ_MAX_STICKY_GPUS] = {0}, in_subset[SPROJ_MAX_STICKY_GPUS];
  int *gpu_of = malloc((size_t)ch->num_chunks * sizeof *gpu_of);
  int *run_gpu = malloc((size_t)(ch->nruns ? ch->nruns : 1) * sizeof *run_gpu);
  if (!gpu_of || !run_gpu) {
    free(gpu_of);
    free(run_gpu);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  for (int c = 0; c < ch->num_chunks; c++)
    gpu_of[c] = -1;
  for (unsigned q = 0; q < ch->nruns; q++)
    run_gpu[q] = -1;
  for (int k = 0; k < r->subsets.num; k++) {
    memset(in_subset, 0, sizeof in_subset);
    for (int j = r->subsets.start[k]; j < r->subsets.start[k + 1]; j++) {
      int c = r->subsets.idx[j], best = 0;
      for (int g = 1; g < ngpus; g++)
        if (in_subset[g] < in_subset[best] || (in_subset[g] == in_subset[best] && total[g] < total[best]))
          best = g;
      /* small chunks whose LORs share a run (one LOR handle) go where the run went first */
      int run = ch->piece_start[c] < ch->piece_start[c + 1] ? ch->piece_run[ch->piece_start[c]] : -1;
      if (run >= 0 && run_gpu[run] >= 0)
        best = run_gpu[run];
      for (int q = ch->piece_start[c]; q < ch->piece_start[c + 1]; q++)
        if (run_gpu[ch->piece_run[q]] < 0)
          run_gpu[ch->piece_run[q]] = best;
      gpu_of[c] = best;
      in_subset[best] += ch->count[c];
      total[best] += ch->count[c];
    }
  }
  int ret = recon_upload_inputs(func, r, ch, ngpus, gpu_of, sproj_rt.gpu_node);
  free(gpu_of);
  free(run_gpu);
  return ret;
}

/* Sensitivities G^T A^T m (non-TOF A) over lists of chunks of the sensitivity model (lists NULL: one of the whole
 * set), each into its own resident image. */
static int make_sensitivities(const char *func, sproj_recon *r, const sproj_chunks *ch, const struct chunk_lists *l)
{
  const sproj_model *sm = r->sens_model;
  int64_t n = sm->lors->num_lors;
  int num = l ? l->num : 1, ret = SPROJ_OK;
  r->sens = calloc(num, sizeof *r->sens);
  /* the model's factors themselves as the values back projected, through the model's own vector (the pieces the
   * reconstruction's tasks read, uploaded once: a second handle on the same array copied its 30 k viewgram pieces
   * to the GPU again, 1.4 GB for STIR's span-1 mMR data), or ones when it has none */
  float *m = sm->mult_proj ? NULL : malloc(n * sizeof *m);
  if (!r->sens || (!sm->mult_proj && !m)) {
    free(m);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  for (int64_t i = 0; m && i < n; i++)
    m[i] = 1.0f;
  sproj_proj *pm = sm->mult_proj;
  if (m && (ret = sproj_proj_register(&pm, m, sm->lors))) {
    free(m);
    return ret;
  }
  r->num_sens = num;
  for (int k = 0; k < num && !ret; k++) {
    if ((ret = recon_temp_image(func, &r->sens[k], r->x)))
      break;
    sproj_image *into = r->blur ? r->bp : r->sens[k];
    const int *list = l ? l->idx + l->start[k] : NULL;
    int len = l ? l->start[k + 1] - l->start[k] : 0;
    if ((ret = recon_submit_zero(into->handle)))
      break;
    ret = l ? sproj_back_chunks(into, pm, ch, list, len) : sproj_back(into, pm, NULL, SPROJ_ALL_CHUNKS);
    if (!ret)
      ret = sproj_flush_pending();
    if (!ret && r->hook.reduce)
      ret = r->hook.reduce(r->hook.user, into);
    if (!ret && r->blur)
      ret = recon_submit_gauss(r, r->bp->handle, r->sens[k]->handle);
  }
  if (m) {
    sproj_proj_unregister(pm); /* waits for the back projections reading it */
    free(m);
  }
  if (ret == SPROJ_ERR_STARPU || ret == SPROJ_ERR_NOMEM)
    return sproj_fail(ret, func, "could not submit the sensitivity computation");
  return ret;
}

/* The caller's sensitivities (cfg->sensitivities), each registered as a resident image over its host array and
 * checked there (finite, >= 0); nothing is computed. */
static int given_sensitivities(const char *func, sproj_recon *r, const struct sproj_recon_config *cfg)
{
  const struct sproj_geom *g = &r->x->geom;
  uint32_t nvox = (uint32_t)g->n[0] * (uint32_t)g->n[1] * (uint32_t)g->n[2];
  r->sens = calloc(cfg->num_sensitivities, sizeof *r->sens);
  if (!r->sens)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  r->num_sens = cfg->num_sensitivities;
  for (int k = 0; k < cfg->num_sensitivities; k++) {
    starpu_data_handle_t h;
    /* only ever read: StarPU never writes through the caller's pointer */
    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)cfg->sensitivities[k], nvox, sizeof(float));
    int ret = sproj_image_register_handle(&r->sens[k], h, g->n, g->voxel_size, g->origin);
    if (ret) {
      starpu_data_unregister_no_coherency(h);
      return sproj_fail(ret, func, "could not set up a sensitivity image: %s", sproj_last_error());
    }
    char what[64];
    snprintf(what, sizeof what, "given sensitivity %d", k);
    if ((ret = recon_check_handle_values(func, what, "voxel", h, nvox, 1)))
      return ret;
  }
  return SPROJ_OK;
}

/* The caller's sensitivity images (cfg->sensitivity_images), each copied into a resident image of the
 * reconstruction's own by tasks after those that write it: zero, then add. */
static int given_sensitivity_images(const char *func, sproj_recon *r, const struct sproj_recon_config *cfg)
{
  r->sens = calloc(cfg->num_sensitivities, sizeof *r->sens);
  if (!r->sens)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  r->num_sens = cfg->num_sensitivities;
  for (int k = 0; k < cfg->num_sensitivities; k++) {
    int ret = recon_temp_image(func, &r->sens[k], r->x);
    if (!ret)
      ret = recon_submit_zero(r->sens[k]->handle);
    if (!ret && starpu_task_insert(&sproj_image_add_ordered_cl, STARPU_RW, r->sens[k]->handle, STARPU_R,
                                   cfg->sensitivity_images[k]->handle, STARPU_EXECUTE_WHERE,
                                   (unsigned long long)sproj_rt.where, STARPU_SCHED_CTX, sproj_rt.ctx, 0) != 0)
      ret = SPROJ_ERR_STARPU;
    if (ret)
      return sproj_fail(ret, func, "could not copy sensitivity image %d", k);
  }
  return SPROJ_OK;
}

/* The listmode objective's background terms: the sum of the sensitivity model's background over all its LORs, and
 * each subset's share, the sum over its sensitivity chunks (lists given) or the whole divided by S (one sensitivity
 * for all subsets, as the gradient's sensitivity term). */
static int sens_backgrounds(const char *func, sproj_recon *r, const sproj_chunks *ch, const struct chunk_lists *l)
{
  int S = r->subsets.num;
  r->sens_subset_background = calloc(S, sizeof *r->sens_subset_background);
  if (!r->sens_subset_background)
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  const sproj_model *sm = r->sens_model;
  if (!sm->add_host && sm->add_flat == 0.0f)
    return SPROJ_OK;
  const float *a = sm->add_host;
  /* a flat background: the same value in every one of the model's values */
  int64_t per_lor = a && sm->add_per_lor ? 1 : sm->num_values, n = sm->lors->num_lors * per_lor;
  if (!a) {
    r->sens_background = (double)sm->add_flat * (double)n;
    for (int k = 0; k < S; k++) {
      int64_t m = 0;
      if (!l) {
        r->sens_subset_background[k] = r->sens_background / S;
        continue;
      }
      for (int j = l->start[k]; j < l->start[k + 1]; j++)
        for (int q = ch->range_start[l->idx[j]]; q < ch->range_start[l->idx[j] + 1]; q++)
          m += ch->range_count[q] * per_lor;
      r->sens_subset_background[k] = (double)sm->add_flat * (double)m;
    }
    return SPROJ_OK;
  }
  for (int64_t i = 0; i < n; i++)
    r->sens_background += a[i];
  for (int k = 0; k < S; k++) {
    if (!l) {
      r->sens_subset_background[k] = r->sens_background / S;
      continue;
    }
    double sum = 0.0;
    for (int j = l->start[k]; j < l->start[k + 1]; j++) {
      int c = l->idx[j];
      for (int q = ch->range_start[c]; q < ch->range_start[c + 1]; q++)
        for (int64_t i = ch->range_first[q] * per_lor; i < (ch->range_first[q] + ch->range_count[q]) * per_lor; i++)
          sum += a[i];
    }
    r->sens_subset_background[k] = sum;
  }
  return SPROJ_OK;
}

static void recon_free(sproj_recon *r)
{
  for (int k = 0; k < r->num_sens; k++)
    sproj_image_drop(r->sens[k]);
  free(r->sens);
  free(r->sens_subset_background);
  sproj_image_drop(r->xb);
  sproj_image_drop(r->bp);
  if (r->scratch)
    starpu_data_unregister_no_coherency(r->scratch);
  /* the devices' images go first: dropping an image waits for the tasks that write it, and the back projections
   * into them are the last tasks to read the forward values, which are discarded next (their tasks done) */
  recon_devices_drop_images(r);
  /* the forward values stay where they were computed: nothing reads them on the host */
  sproj_proj *temps[2] = {r->p, r->px};
  for (int t = 0; t < 2; t++) {
    if (!temps[t])
      continue;
    sproj_flush_held();
    sproj_vec_discard(&temps[t]->vec);
    free(temps[t]);
    sproj_count_object(-1);
  }
  free(r->p_host);
  free(r->px_host);
  recon_small_free(r);
  recon_devices_free(r);
  recon_lists_free(&r->subsets);
  if (r->model)
    __atomic_sub_fetch(&r->model->users, 1, __ATOMIC_RELAXED);
  if (r->sens_model)
    __atomic_sub_fetch(&r->sens_model->users, 1, __ATOMIC_RELAXED);
  free(r);
}

/* Checks everything that can be checked before anything is registered. */
static int check_config(const char *func, sproj_image *x, const struct sproj_recon_config *c)
{
  if (!x || !c)
    return sproj_fail(SPROJ_ERR_NULL, func, "recon, x and cfg must not be NULL");
  if (!c->model || !c->chunks)
    return sproj_fail(SPROJ_ERR_NULL, func, "cfg->model and cfg->chunks must not be NULL");
  const sproj_model *md = c->model;
  if (c->chunks->lors != md->lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the chunking belongs to another LOR set than the model");
  if (c->data) {
    if (c->data->vec.lors != md->lors)
      return sproj_fail(SPROJ_ERR_MISMATCH, func, "the data belong to another LOR set than the model");
    if (c->data->num_bins != md->num_values)
      return sproj_fail(SPROJ_ERR_MISMATCH, func, "the data hold %d values per LOR, the model %d", c->data->num_bins,
                        md->num_values);
  } else if (!c->sens_model) {
    return sproj_fail(SPROJ_ERR_NULL, func, "listmode (no data) needs cfg->sens_model for the sensitivity");
  }
  const sproj_model *sm = c->sens_model ? c->sens_model : md;
  if (c->sens_model && c->sens_model->lors->bins && c->sens_model->tof)
    return sproj_fail(SPROJ_ERR_INVALID, func, "the sensitivity model is a listmode model: it needs the scanner's LORs");
  if (c->sens_chunks && c->sens_chunks->lors != sm->lors)
    return sproj_fail(SPROJ_ERR_MISMATCH, func, "the sensitivity chunking belongs to another LOR set");
  if (!c->sens_chunks && (c->sens_subset_chunks || c->sens_subset_sizes))
    return sproj_fail(SPROJ_ERR_NULL, func, "sensitivity subsets need cfg->sens_chunks");
  if (c->sensitivities && c->sensitivity_images)
    return sproj_fail(SPROJ_ERR_INVALID, func, "cfg->sensitivities and cfg->sensitivity_images exclude each other");
  if ((c->sensitivities || c->sensitivity_images) && c->num_sensitivities != 1 &&
      c->num_sensitivities != c->num_subsets)
    return sproj_fail(SPROJ_ERR_RANGE, func, "cfg->num_sensitivities %d is neither 1 nor the %d subsets",
                      c->num_sensitivities, c->num_subsets);
  for (int k = 0; c->sensitivity_images && k < c->num_sensitivities; k++) {
    const sproj_image *s = c->sensitivity_images[k];
    if (!s)
      return sproj_fail(SPROJ_ERR_NULL, func, "cfg->sensitivity_images[%d] is NULL", k);
    if (!recon_same_geometry(&s->geom, &x->geom))
      return sproj_fail(SPROJ_ERR_MISMATCH, func, "cfg->sensitivity_images[%d] has another geometry than x", k);
  }
  if (c->sensitivities) {
    for (int k = 0; k < c->num_sensitivities; k++)
      if (!c->sensitivities[k])
        return sproj_fail(SPROJ_ERR_NULL, func, "cfg->sensitivities[%d] is NULL", k);
  }
  if (!isfinite(c->max_ratio))
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "cfg->max_ratio is not finite");
  if (c->max_ratio < 0.0f)
    return sproj_fail(SPROJ_ERR_RANGE, func, "cfg->max_ratio %g is negative (0: no cap)", c->max_ratio);
  if (!isfinite(c->small_fraction))
    return sproj_fail(SPROJ_ERR_NONFINITE, func, "cfg->small_fraction is not finite");
  if (c->small_fraction < 0.0f || c->small_fraction >= 1.0f)
    return sproj_fail(SPROJ_ERR_RANGE, func, "cfg->small_fraction %g is outside 0 .. 1 (0: no rule; STIR: 1e-6)",
                      c->small_fraction);
  return SPROJ_OK;
}

/* sproj_recon_create, reporting as func, with an optional hook (the distributed layer's reduction). */
int sproj_recon_create_hooked(const char *func, sproj_recon **recon, sproj_image *x, const struct sproj_recon_config *cfg,
                              const struct sproj_recon_hook *hook)
{
  int ret = sproj_check_init_flush(func);
  if (ret)
    return ret;
  if (!recon)
    return sproj_fail(SPROJ_ERR_NULL, func, "recon, x and cfg must not be NULL");
  if ((ret = check_config(func, x, cfg)))
    return ret;
  struct sproj_gauss_arg gauss;
  int bad_axis = sproj_gauss_arg_init(&gauss, x->geom.n, x->geom.voxel_size, cfg->model->fwhm);
  if (bad_axis >= 0)
    return sproj_fail(SPROJ_ERR_RANGE, func, "a FWHM of %g along axis %d spans more than %d voxels each side at 3 sigma",
                      cfg->model->fwhm[bad_axis], bad_axis, SPROJ_GAUSS_MAX_RADIUS);
  struct chunk_lists subsets = {0}, sens_lists = {0};
  const sproj_chunks *sens_chunks = cfg->sens_chunks;
  if ((ret = lists_make(func, "subsets", cfg->chunks, cfg->num_subsets, cfg->subset_chunks, cfg->subset_sizes,
                        &subsets)))
    return ret;
  if (sens_chunks && (ret = lists_make(func, "sensitivity subsets", sens_chunks, cfg->num_subsets,
                                       cfg->sens_subset_chunks, cfg->sens_subset_sizes, &sens_lists))) {
    recon_lists_free(&subsets);
    return ret;
  }
  /* the values, on the host, once */
  const struct sproj_geom *g = &x->geom;
  int64_t nvox = (int64_t)g->n[0] * g->n[1] * g->n[2];
  if ((ret = recon_check_handle_values(func, "the initial image", "voxel", x->handle, nvox, 1)) == SPROJ_OK &&
      cfg->data && !cfg->data->model_made) {
    pthread_mutex_lock(&cfg->data->vec.lock);
    ret = recon_check_handle_values(func, "the data", "LOR", cfg->data->vec.handle,
                                    cfg->data->vec.lors->num_lors * cfg->data->num_bins, cfg->data->num_bins);
    pthread_mutex_unlock(&cfg->data->vec.lock);
  }
  if (ret) {
    recon_lists_free(&subsets);
    recon_lists_free(&sens_lists);
    return ret;
  }

  sproj_recon *r = calloc(1, sizeof *r);
  if (!r) {
    recon_lists_free(&subsets);
    recon_lists_free(&sens_lists);
    return sproj_fail(SPROJ_ERR_NOMEM, func, "out of memory");
  }
  r->x = x;
  r->model = (sproj_model *)cfg->model;
  r->sens_model = (sproj_model *)(cfg->sens_model ? cfg->sens_model : cfg->model);
  __atomic_add_fetch(&r->model->users, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&r->sens_model->users, 1, __ATOMIC_RELAXED);
  r->data = cfg->data;
  r->chunks = cfg->chunks;
  r->subsets = subsets;
  r->gauss = gauss;
  r->blur = gauss.radius[0] > 0 || gauss.radius[1] > 0 || gauss.radius[2] > 0;
  r->objective = cfg->objective != 0;
  r->max_ratio = cfg->max_ratio;
  r->small_fraction = cfg->data ? cfg->small_fraction : 0.0f;
  r->sens_factor = 1.0f;
  if (hook)
    r->hook = *hook;
  if ((ret = recon_temp_proj(func, &r->p, &r->p_host, r->model)) || (ret = recon_temp_image(func, &r->bp, x)) ||
      (r->blur && (ret = recon_temp_image(func, &r->xb, x))))
    goto fail;
  if (r->blur)
    starpu_vector_data_register(&r->scratch, -1, 0, (uint32_t)nvox, sizeof(float));
  /* several devices: each owns its shares from now on; else the chunks are spread over the GPUs */
  if ((ret = recon_devices_create(func, r)) || (!r->dev && (ret = spread_chunks(func, r))) ||
      (ret = recon_small_create(func, r)))
    goto fail;

  if (cfg->sensitivities) {
    ret = given_sensitivities(func, r, cfg);
  } else if (cfg->sensitivity_images) {
    ret = given_sensitivity_images(func, r, cfg);
  } else if (sens_chunks) {
    ret = make_sensitivities(func, r, sens_chunks, &sens_lists);
  } else if (!cfg->sens_model && cfg->data) {
    ret = make_sensitivities(func, r, r->chunks, &r->subsets); /* sinogram: each subset's own */
  } else {
    ret = make_sensitivities(func, r, NULL, NULL);
    r->sens_factor = 1.0f / (float)cfg->num_subsets;
  }
  if (!ret && r->dev)
    ret = recon_devices_sensitivities(func, r);
  if (ret)
    goto fail;
  /* Only the listmode objective adds the background of the sensitivity LORs. Summed for every model, it cost a TOF
   * sinogram reconstruction 7 s (4.2 G values of the benchmark, added in one thread) before its first iteration. */
  if (!cfg->data && (ret = sens_backgrounds(func, r, sens_chunks, sens_chunks ? &sens_lists : NULL)))
    goto fail;
  recon_lists_free(&sens_lists);
  *recon = r;
  return SPROJ_OK;
fail:
  recon_lists_free(&sens_lists);
  recon_free(r);
  return ret;
}

int sproj_recon_create(sproj_recon **recon, sproj_image *x, const struct sproj_recon_config *cfg)
{
  return sproj_recon_create_hooked(__func__, recon, x, cfg, NULL);
}

int sproj_recon_destroy(sproj_recon *recon)
{
  int ret = sproj_check_init_flush(__func__);
  if (ret)
    return ret;
  if (!recon)
    return SPROJ_OK;
  recon_free(recon);
  return SPROJ_OK;
}
